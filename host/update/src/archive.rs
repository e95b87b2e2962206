//! Taking the binary out of a release archive (`.tar.gz`).
//!
//! Only one entry is read: the regular file `STEM/smith`. Nothing else in
//! the archive is written anywhere, so no entry name can escape a folder.

use std::io::Read as _;

use smith_diag::{Diagnostic, Surface};

/// The largest binary taken from an archive (the release budget is 40 MB;
/// this bound only stops a decompression bomb).
pub const MAX_BINARY: u64 = 256 * 1024 * 1024;

/// The bytes of `STEM/smith` in the gzip-compressed tar `archive` (from
/// `origin`, for messages).
///
/// # Errors
///
/// `update.bad-archive` when the archive cannot be read, has no such
/// regular file, or the file is larger than [`MAX_BINARY`].
pub fn binary(archive: &[u8], stem: &str, origin: &str) -> Result<Vec<u8>, Diagnostic> {
    let wanted = format!("{stem}/smith");
    let bad = |why: String| {
        Diagnostic::error(
            "update.bad-archive",
            format!("the archive {origin} holds no usable {wanted}"),
            why,
            "nothing was changed; report the archive to whoever publishes the releases",
        )
        .with_surface(Surface::other(origin.to_owned()))
    };
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    let entries = tar
        .entries()
        .map_err(|e| bad(format!("it is not a gzip-compressed tar archive: {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| bad(format!("it is damaged: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| bad(format!("an entry name cannot be read: {e}")))?;
        if path.to_str() != Some(wanted.as_str()) {
            continue;
        }
        if !entry.header().entry_type().is_file() {
            return Err(bad(format!("{wanted} is not a regular file")));
        }
        let size = entry
            .header()
            .size()
            .map_err(|e| bad(format!("its size cannot be read: {e}")))?;
        if size > MAX_BINARY {
            return Err(bad(format!(
                "{wanted} is {size} bytes, more than the {MAX_BINARY} smith accepts"
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        entry
            .take(MAX_BINARY)
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("it is damaged: {e}")))?;
        if bytes.len() as u64 != size {
            return Err(bad(format!(
                "{wanted} ends after {} of its {size} bytes",
                bytes.len()
            )));
        }
        return Ok(bytes);
    }
    Err(bad(format!("it has no entry {wanted}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o755);
            header.set_cksum();
            tar.append_data(&mut header, name, *data).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn takes_only_the_binary_entry() {
        let archive = tar_gz(&[("s/README", b"hi"), ("s/smith", b"\x7fELF...")]);
        assert_eq!(super::binary(&archive, "s", "a").unwrap(), b"\x7fELF...");
        let err = super::binary(&archive, "other", "a").unwrap_err();
        assert_eq!(err.code(), "update.bad-archive");
        let err = super::binary(b"not gzip", "s", "a").unwrap_err();
        assert_eq!(err.code(), "update.bad-archive");
    }
}
