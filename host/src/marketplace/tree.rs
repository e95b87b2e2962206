//! Writing a fetched tree (an archive's entries, a git commit's files, a
//! local folder's copy) into a staging folder, refusing every entry that
//! would escape it: an absolute path, a `..` component, a link or device,
//! and stopping — never truncating — at the size and count caps.

use std::io::Read;
use std::path::{Path, PathBuf};

use smith_diag::{Diagnostic, Surface};

/// The most a source may weigh before it is expanded (an archive, a git
/// packfile).
pub const MAX_COMPRESSED: u64 = 64 * 1024 * 1024;
/// The most its files may add up to once expanded.
pub const MAX_EXPANDED: u64 = 256 * 1024 * 1024;
/// The most files and folders it may hold.
pub const MAX_ENTRIES: usize = 20_000;

/// A refusal of one entry of a source: names the entry and the source.
pub fn refused(entry: &str, origin: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        "marketplace.unsafe-entry",
        format!("{origin} holds the entry {entry:?}, which is refused; nothing was installed"),
        format!("{why}: every file of a marketplace or plugin must stay inside its install folder, and links, devices, absolute paths and `..` could reach outside it"),
        "ask the source's maintainer to remove the entry, or use another source; the previous install, if any, is unchanged",
    )
    .with_value(format!("{entry:?}"))
    .with_surface(Surface::other(origin.to_owned()))
}

/// A source over one of the caps.
pub fn oversize(origin: &str, what: &str) -> Diagnostic {
    Diagnostic::error(
        "marketplace.oversize",
        format!("{origin} is refused: {what}"),
        format!(
            "a marketplace or plugin source may weigh at most {} MiB compressed, expand to at most {} MiB and hold at most {MAX_ENTRIES} entries; it is refused whole rather than installed in part",
            MAX_COMPRESSED >> 20,
            MAX_EXPANDED >> 20
        ),
        "use a smaller source (a marketplace holding only the plugins, without build output or media); the previous install, if any, is unchanged",
    )
    .with_surface(Surface::other(origin.to_owned()))
}

fn io_failed(path: &Path, what: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        "marketplace.io",
        format!("{what} {} failed: {e}", path.display()),
        "smith could not write the install folder".to_owned(),
        "check that smith's configuration folder is writable and has free space, then run the command again",
    )
    .with_surface(Surface::file(path.to_owned()))
}

/// `entry` (as the source wrote it, `/`-separated) as a relative path of
/// plain components: `.` and empty components dropped, and refused when
/// absolute, with `..`, a backslash, a drive or a NUL.
///
/// # Errors
///
/// `marketplace.unsafe-entry` naming the entry and `origin`.
pub fn relative(entry: &str, origin: &str) -> Result<PathBuf, Diagnostic> {
    if entry.starts_with('/') {
        return Err(refused(entry, origin, "it is an absolute path"));
    }
    if entry.contains('\\') || entry.contains('\0') {
        return Err(refused(
            entry,
            origin,
            "it has a backslash or NUL, which a path on some systems reads as a separator",
        ));
    }
    let mut path = PathBuf::new();
    for (index, part) in entry.split('/').enumerate() {
        match part {
            "" | "." => {}
            ".." => return Err(refused(entry, origin, "it has a `..` component")),
            _ if index == 0 && part.len() == 2 && part.ends_with(':') => {
                return Err(refused(entry, origin, "it starts with a drive letter"));
            }
            _ => path.push(part),
        }
    }
    Ok(path)
}

/// A staging folder being filled, with the running totals the caps apply
/// to.
pub struct Tree {
    root: PathBuf,
    origin: String,
    bytes: u64,
    entries: usize,
}

impl Tree {
    /// Starts filling `root` (an empty folder) with `origin`'s entries.
    pub fn new(root: &Path, origin: &str) -> Tree {
        Tree {
            root: root.to_owned(),
            origin: origin.to_owned(),
            bytes: 0,
            entries: 0,
        }
    }

    /// The source, as diagnostics name it.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn count(&mut self) -> Result<(), Diagnostic> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(oversize(
                &self.origin,
                &format!("it holds more than {MAX_ENTRIES} entries"),
            ));
        }
        Ok(())
    }

    /// Creates the folder `entry`.
    ///
    /// # Errors
    ///
    /// An unsafe path, the entry cap, or a write failure.
    pub fn dir(&mut self, entry: &str) -> Result<(), Diagnostic> {
        let relative = relative(entry, &self.origin)?;
        self.count()?;
        let path = self.root.join(relative);
        std::fs::create_dir_all(&path).map_err(|e| io_failed(&path, "creating the folder", &e))
    }

    /// Writes the file `entry` from `data`, executable or not.
    ///
    /// # Errors
    ///
    /// An unsafe or empty path, a cap, or a write failure.
    pub fn file(
        &mut self,
        entry: &str,
        data: &mut dyn Read,
        executable: bool,
    ) -> Result<(), Diagnostic> {
        let relative = relative(entry, &self.origin)?;
        if relative.as_os_str().is_empty() {
            return Err(refused(entry, &self.origin, "it names no file"));
        }
        self.count()?;
        let path = self.root.join(&relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| io_failed(parent, "creating the folder", &e))?;
        }
        // A link planted by an earlier entry is never written through.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            return Err(refused(
                entry,
                &self.origin,
                "a folder or link of that name came first",
            ));
        }
        let mut file =
            std::fs::File::create(&path).map_err(|e| io_failed(&path, "creating", &e))?;
        let room = MAX_EXPANDED - self.bytes;
        let written = std::io::copy(&mut data.take(room + 1), &mut file).map_err(|e| {
            Diagnostic::error(
                "marketplace.corrupt",
                format!(
                    "the entry {entry:?} of {} could not be read: {e}",
                    self.origin
                ),
                "the source is damaged or not what its name says",
                "check the source (download it again, or ask its maintainer); the previous install, if any, is unchanged",
            )
            .with_surface(Surface::other(self.origin.clone()))
        })?;
        if written > room {
            return Err(oversize(
                &self.origin,
                &format!("its files expand past {} MiB", MAX_EXPANDED >> 20),
            ));
        }
        self.bytes += written;
        #[cfg(unix)]
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| io_failed(&path, "making executable", &e))?;
        }
        #[cfg(not(unix))]
        let _ = executable;
        Ok(())
    }
}

/// Copies the local folder `from` into `tree` (under `prefix`), refusing
/// links and special files.
///
/// # Errors
///
/// A link or special file inside, a cap, or a read or write failure.
pub fn copy_folder(from: &Path, prefix: &str, tree: &mut Tree) -> Result<(), Diagnostic> {
    let listing = std::fs::read_dir(from).map_err(|e| io_failed(from, "listing", &e))?;
    let mut names: Vec<_> = listing.filter_map(Result::ok).collect();
    names.sort_by_key(std::fs::DirEntry::file_name);
    for item in names {
        let name = item.file_name().to_string_lossy().into_owned();
        let entry = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let path = item.path();
        let meta =
            std::fs::symlink_metadata(&path).map_err(|e| io_failed(&path, "examining", &e))?;
        if meta.file_type().is_symlink() {
            return Err(refused(&entry, tree.origin(), "it is a symbolic link"));
        }
        if meta.is_dir() {
            if name == ".git" {
                continue;
            }
            tree.dir(&entry)?;
            copy_folder(&path, &entry, tree)?;
        } else if meta.is_file() {
            let mut file =
                std::fs::File::open(&path).map_err(|e| io_failed(&path, "opening", &e))?;
            #[cfg(unix)]
            let executable = {
                use std::os::unix::fs::PermissionsExt;
                meta.permissions().mode() & 0o111 != 0
            };
            #[cfg(not(unix))]
            let executable = false;
            tree.file(&entry, &mut file, executable)?;
        } else {
            return Err(refused(
                &entry,
                tree.origin(),
                "it is a device, pipe or socket, not a file",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn relative_paths_drop_dots_and_refuse_escapes() {
        assert_eq!(relative("./a//b/./c", "t").unwrap(), PathBuf::from("a/b/c"));
        for bad in ["/etc/passwd", "a/../../b", "..", "a\\b", "C:/x"] {
            let e = relative(bad, "the test").unwrap_err();
            assert_eq!(e.code(), "marketplace.unsafe-entry", "{bad}");
            assert!(e.what().contains(&format!("{bad:?}")), "{}", e.what());
            assert!(e.what().contains("the test"), "{}", e.what());
        }
    }

    #[test]
    fn entries_past_the_count_cap_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut tree = Tree::new(dir.path(), "many");
        tree.entries = MAX_ENTRIES;
        let e = tree.dir("one-more").unwrap_err();
        assert_eq!(e.code(), "marketplace.oversize");
        assert!(e.what().contains("more than 20000 entries"), "{}", e.what());
    }

    #[test]
    fn a_file_over_the_expanded_cap_is_refused_not_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let mut tree = Tree::new(dir.path(), "bomb");
        tree.bytes = MAX_EXPANDED - 3;
        let e = tree
            .file("x", &mut std::io::repeat(0).take(10), false)
            .unwrap_err();
        assert_eq!(e.code(), "marketplace.oversize");
    }
}
