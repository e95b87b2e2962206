//! `.tar.gz` / `.tgz` and `.zip` archives of a marketplace or plugin,
//! expanded into a [`Tree`] (which refuses escaping paths and applies the
//! caps). Tar links, devices and FIFOs and zip symlinks are refused; a
//! zip's CRC is checked; encrypted and ZIP64 zips are refused.

use std::io::Read;

use smith_diag::{Diagnostic, Surface};

use super::tree::{MAX_COMPRESSED, Tree, oversize, refused};

/// The archive kinds, told by the source's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `.tar.gz` or `.tgz`.
    TarGz,
    /// `.zip`.
    Zip,
}

impl Kind {
    /// The kind `name` (a URL or file name, its query ignored) ends in.
    pub fn of(name: &str) -> Option<Kind> {
        let name = name
            .split(['?', '#'])
            .next()
            .unwrap_or(name)
            .to_ascii_lowercase();
        if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(Kind::TarGz)
        } else if name.ends_with(".zip") {
            Some(Kind::Zip)
        } else {
            None
        }
    }
}

fn corrupt(origin: &str, why: String) -> Diagnostic {
    Diagnostic::error(
        "marketplace.corrupt",
        format!("{origin} cannot be read as an archive"),
        why,
        "check that the address serves the archive itself (a .tar.gz, .tgz or .zip file), complete; the previous install, if any, is unchanged",
    )
    .with_surface(Surface::other(origin.to_owned()))
}

/// Expands `bytes` (an archive of `kind`) into `tree`.
///
/// # Errors
///
/// An oversize, damaged or unsafe archive (naming the entry).
pub fn expand(kind: Kind, bytes: &[u8], tree: &mut Tree) -> Result<(), Diagnostic> {
    if bytes.len() as u64 > MAX_COMPRESSED {
        return Err(oversize(
            tree.origin(),
            &format!("it weighs {} bytes", bytes.len()),
        ));
    }
    match kind {
        Kind::TarGz => tar_gz(bytes, tree),
        Kind::Zip => zip(bytes, tree),
    }
}

fn tar_gz(bytes: &[u8], tree: &mut Tree) -> Result<(), Diagnostic> {
    let origin = tree.origin().to_owned();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let entries = archive
        .entries()
        .map_err(|e| corrupt(&origin, format!("its tar stream is damaged: {e}")))?;
    for entry in entries {
        let mut entry =
            entry.map_err(|e| corrupt(&origin, format!("its tar stream is damaged: {e}")))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            tree.dir(&name)?;
        } else if kind.is_file() {
            let executable = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
            tree.file(&name, &mut entry, executable)?;
        } else if kind.is_pax_global_extensions() {
            continue;
        } else {
            let what = if kind.is_symlink() {
                "it is a symbolic link"
            } else if kind.is_hard_link() {
                "it is a hard link"
            } else {
                "it is a device, FIFO or other special entry, not a file"
            };
            return Err(refused(&name, &origin, what));
        }
    }
    Ok(())
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A zip's central directory, then each entry's data through its local
/// header.
fn zip(bytes: &[u8], tree: &mut Tree) -> Result<(), Diagnostic> {
    let origin = tree.origin().to_owned();
    let bad = |why: &str| corrupt(&origin, why.to_owned());
    // The end of central directory record: 22 bytes plus a comment of at
    // most 65535, at the end.
    let low = bytes.len().saturating_sub(22 + 65_535);
    let end = (low..=bytes.len().saturating_sub(22))
        .rev()
        .find(|&at| u32_at(bytes, at) == Some(0x0605_4b50))
        .ok_or_else(|| bad("it has no end of central directory record (not a zip file)"))?;
    let count = u16_at(bytes, end + 10).ok_or_else(|| bad("its directory is cut short"))?;
    let offset = u32_at(bytes, end + 16).ok_or_else(|| bad("its directory is cut short"))?;
    if count == 0xffff || offset == 0xffff_ffff {
        return Err(bad(
            "it is a ZIP64 archive, which smith does not read; pack it as a .tar.gz, or as a plain zip",
        ));
    }
    let mut at = offset as usize;
    for _ in 0..count {
        if u32_at(bytes, at) != Some(0x0201_4b50) {
            return Err(bad("its central directory is damaged"));
        }
        let field =
            |off: usize| u16_at(bytes, at + off).ok_or_else(|| bad("its directory is cut short"));
        let made_by = field(4)?;
        let flags = field(8)?;
        let method = field(10)?;
        let crc = u32_at(bytes, at + 16).ok_or_else(|| bad("its directory is cut short"))?;
        let compressed = u32_at(bytes, at + 20).ok_or_else(|| bad("its directory is cut short"))?;
        let size = u32_at(bytes, at + 24).ok_or_else(|| bad("its directory is cut short"))?;
        let name_len = field(28)? as usize;
        let extra_len = field(30)? as usize;
        let comment_len = field(32)? as usize;
        let external = u32_at(bytes, at + 38).ok_or_else(|| bad("its directory is cut short"))?;
        let local =
            u32_at(bytes, at + 42).ok_or_else(|| bad("its directory is cut short"))? as usize;
        let name_bytes = bytes
            .get(at + 46..at + 46 + name_len)
            .ok_or_else(|| bad("its directory is cut short"))?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        at += 46 + name_len + extra_len + comment_len;

        let unix_mode = if made_by >> 8 == 3 { external >> 16 } else { 0 };
        match unix_mode & 0o170_000 {
            0 | 0o100_000 | 0o040_000 => {}
            0o120_000 => return Err(refused(&name, &origin, "it is a symbolic link")),
            _ => {
                return Err(refused(
                    &name,
                    &origin,
                    "it is a device, FIFO or other special entry, not a file",
                ));
            }
        }
        if name.ends_with('/') || unix_mode & 0o170_000 == 0o040_000 {
            tree.dir(&name)?;
            continue;
        }
        if flags & 1 != 0 {
            return Err(bad(&format!(
                "its entry {name:?} is encrypted, which smith does not read"
            )));
        }
        if u32_at(bytes, local) != Some(0x0403_4b50) {
            return Err(bad(&format!("the local header of {name:?} is damaged")));
        }
        let local_name = u16_at(bytes, local + 26).ok_or_else(|| bad("it is cut short"))? as usize;
        let local_extra = u16_at(bytes, local + 28).ok_or_else(|| bad("it is cut short"))? as usize;
        let start = local + 30 + local_name + local_extra;
        let data = bytes
            .get(start..start + compressed as usize)
            .ok_or_else(|| bad(&format!("the data of {name:?} is cut short")))?;
        let mut checked = Crc32Reader::new(match method {
            0 => Box::new(data) as Box<dyn Read>,
            8 => Box::new(flate2::read::DeflateDecoder::new(data)),
            other => {
                return Err(bad(&format!(
                    "its entry {name:?} uses compression method {other}; smith reads stored (0) and deflated (8) entries"
                )));
            }
        });
        tree.file(&name, &mut checked, unix_mode & 0o111 != 0)?;
        if checked.crc.sum() != crc || checked.crc.amount() != size {
            return Err(bad(&format!(
                "the entry {name:?} does not match its checksum or size"
            )));
        }
    }
    Ok(())
}

/// Computes the CRC-32 of what it reads.
struct Crc32Reader<R> {
    inner: R,
    crc: flate2::Crc,
}

impl<R: Read> Crc32Reader<R> {
    fn new(inner: R) -> Self {
        Crc32Reader {
            inner,
            crc: flate2::Crc::new(),
        }
    }
}

impl<R: Read> Read for Crc32Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tar_gz_of(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    fn file(builder: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // Written raw so that unsafe names reach the archive.
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }

    #[test]
    fn kinds_follow_the_name() {
        assert_eq!(Kind::of("https://x/a.tar.gz?x=1"), Some(Kind::TarGz));
        assert_eq!(Kind::of("a.TGZ"), Some(Kind::TarGz));
        assert_eq!(Kind::of("a.zip"), Some(Kind::Zip));
        assert_eq!(Kind::of("https://x/owner/repo.git"), None);
    }

    #[test]
    fn a_tar_gz_expands_and_a_symlink_or_dotdot_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = tar_gz_of(|b| file(b, "m/a/b.txt", b"hello"));
        expand(Kind::TarGz, &good, &mut Tree::new(dir.path(), "good")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("m/a/b.txt")).unwrap(),
            "hello"
        );
        let dotdot = tar_gz_of(|b| file(b, "m/../../evil", b"x"));
        let e = expand(Kind::TarGz, &dotdot, &mut Tree::new(dir.path(), "bad")).unwrap_err();
        assert_eq!(e.code(), "marketplace.unsafe-entry");
        let link = tar_gz_of(|b| {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            b.append_link(&mut header, "m/link", "/etc").unwrap();
        });
        let e = expand(Kind::TarGz, &link, &mut Tree::new(dir.path(), "link")).unwrap_err();
        assert!(e.why().contains("symbolic link"), "{}", e.why());
        assert!(!dir.path().join("m/link").exists());
    }

    /// A stored zip of `(name, unix mode, bytes)` entries.
    fn zip_of(entries: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        for (name, mode, bytes) in entries {
            let mut crc = flate2::Crc::new();
            crc.update(bytes);
            let offset = out.len() as u32;
            let fields = |v: &mut Vec<u8>| {
                v.extend_from_slice(&crc.sum().to_le_bytes());
                v.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                v.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                v.extend_from_slice(&(name.len() as u16).to_le_bytes());
                v.extend_from_slice(&0u16.to_le_bytes());
            };
            out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            fields(&mut out);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(bytes);
            central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            central.extend_from_slice(&[20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            fields(&mut central);
            central.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
            central.extend_from_slice(&(mode << 16).to_le_bytes());
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name.as_bytes());
        }
        let start = out.len() as u32;
        out.extend_from_slice(&central);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        out.extend_from_slice(&(central.len() as u32).to_le_bytes());
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    #[test]
    fn a_zip_expands_and_a_symlink_dotdot_or_bad_checksum_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = zip_of(&[("m/a.txt", 0o100_644, b"hi"), ("m/run", 0o100_755, b"x")]);
        expand(Kind::Zip, &good, &mut Tree::new(dir.path(), "good")).unwrap();
        assert_eq!(std::fs::read(dir.path().join("m/a.txt")).unwrap(), b"hi");
        let link = zip_of(&[("m/link", 0o120_777, b"/etc")]);
        let e = expand(Kind::Zip, &link, &mut Tree::new(dir.path(), "z")).unwrap_err();
        assert!(e.why().contains("symbolic link"), "{}", e.why());
        let dotdot = zip_of(&[("../up", 0o100_644, b"x")]);
        let e = expand(Kind::Zip, &dotdot, &mut Tree::new(dir.path(), "z")).unwrap_err();
        assert_eq!(e.code(), "marketplace.unsafe-entry");
        let mut damaged = good.clone();
        damaged[30 + "m/a.txt".len()] ^= 1;
        let e = expand(Kind::Zip, &damaged, &mut Tree::new(dir.path(), "z")).unwrap_err();
        assert!(e.why().contains("checksum"), "{}", e.why());
        let e = expand(
            Kind::Zip,
            b"not a zip at all, not at all",
            &mut Tree::new(dir.path(), "z"),
        )
        .unwrap_err();
        assert_eq!(e.code(), "marketplace.corrupt");
    }
}
