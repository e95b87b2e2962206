//! The installed binary: whether it is smith's to replace, replacing it with
//! an atomic rename, and rolling back to the one it replaced.
//!
//! A replacement never leaves the binary's path missing or half written:
//! the new binary is written and synced under a temporary name in the same
//! folder (`.smith.update-new`), the running one is kept as
//! `smith.previous` (a hard link, or a copy where links are refused), and
//! one `rename` puts the new one in place. A run killed at any point leaves
//! either the old binary or the new one at the path; the next run removes
//! the temporary files a killed run left behind. A rollback is the same
//! two renames the other way round, so a second rollback undoes the first.

use std::ffi::CString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use smith_diag::{Diagnostic, Surface};

/// Folders that belong to a package manager, with what to run instead.
const MANAGED: &[(&str, &str)] = &[
    (
        "/nix/store/",
        "run `nix profile upgrade smith`, or rebuild the NixOS or home-manager configuration that installed it",
    ),
    ("/opt/homebrew/", "run `brew upgrade smith`"),
    ("/usr/local/Cellar/", "run `brew upgrade smith`"),
    ("/home/linuxbrew/.linuxbrew/", "run `brew upgrade smith`"),
    ("/snap/", "run `sudo snap refresh smith`"),
    ("/var/lib/flatpak/", "run `flatpak update`"),
    ("/usr/bin/", DISTRIBUTION),
    ("/usr/sbin/", DISTRIBUTION),
    ("/usr/lib/", DISTRIBUTION),
    ("/usr/libexec/", DISTRIBUTION),
    ("/bin/", DISTRIBUTION),
    ("/sbin/", DISTRIBUTION),
];

const DISTRIBUTION: &str = "update it with the package manager that installed it (`sudo apt upgrade smith`, `sudo dnf upgrade smith`, `sudo pacman -Syu`)";

/// The installed smith binary: its path and folder.
#[derive(Debug, Clone)]
pub struct Install {
    exe: PathBuf,
    dir: PathBuf,
    name: String,
}

impl Install {
    /// The running binary, if `smith update` may replace it.
    ///
    /// # Errors
    ///
    /// As [`Install::at`], and `update.no-binary` when the running binary's
    /// path cannot be found.
    pub fn current() -> Result<Install, Diagnostic> {
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| {
                Diagnostic::error(
                    "update.no-binary",
                    "the path of the running smith binary cannot be found",
                    format!("the operating system did not say where it is: {e}"),
                    "download the release archive by hand and replace the binary (docs/release.md)",
                )
            })?;
        Install::at(&exe)
    }

    /// The binary at `exe` (absolute, symbolic links resolved), if
    /// `smith update` may replace it.
    ///
    /// # Errors
    ///
    /// A refusal with the command to run instead:
    /// `update.dev-build` for a binary in a cargo target folder,
    /// `update.package-manager` for one a package manager installed,
    /// `update.unwritable` when its folder cannot be written.
    pub fn at(exe: &Path) -> Result<Install, Diagnostic> {
        let dir = exe.parent().unwrap_or(Path::new("/")).to_path_buf();
        let name = exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "smith".to_owned());
        let refuse = |code: &str, what: String, why: String, next: String| {
            Diagnostic::error(code, what, why, next).with_surface(Surface::file(exe))
        };
        if let Some(checkout) = cargo_checkout(exe) {
            return Err(refuse(
                "update.dev-build",
                format!(
                    "{} is a development build, so `smith update` does not replace it",
                    exe.display()
                ),
                "it is in a cargo target folder; cargo would overwrite an update at the next build, and an update would replace the build of the code in front of you".to_owned(),
                format!(
                    "update the source and rebuild instead: `cd {} && git pull && cargo build --release`; or install a release archive (docs/release.md) and run its `smith update`",
                    checkout.display()
                ),
            ));
        }
        let text = exe.to_string_lossy();
        if let Some((prefix, next)) = MANAGED.iter().find(|(p, _)| text.starts_with(p)) {
            return Err(refuse(
                "update.package-manager",
                format!(
                    "{} was installed by a package manager, so `smith update` does not replace it",
                    exe.display()
                ),
                format!(
                    "files under {prefix} belong to the package manager, which would not know about the change and could overwrite it or fail to verify it"
                ),
                (*next).to_owned(),
            ));
        }
        if !writable(&dir) {
            return Err(refuse(
                "update.unwritable",
                format!(
                    "`smith update` cannot replace {}: its folder {} is not writable",
                    exe.display(),
                    dir.display()
                ),
                "the new binary is written beside the old one and renamed over it, which needs write permission on the folder".to_owned(),
                format!(
                    "run it as the folder's owner (`sudo {} update`), or install smith into a folder you own, such as ~/.local/bin, and run `smith update` there",
                    exe.display()
                ),
            ));
        }
        Ok(Install {
            exe: exe.to_path_buf(),
            dir,
            name,
        })
    }

    /// The binary's path.
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// Where the binary an update replaced is kept: `NAME.previous`.
    pub fn previous(&self) -> PathBuf {
        self.dir.join(format!("{}.previous", self.name))
    }

    fn new_tmp(&self) -> PathBuf {
        self.dir.join(format!(".{}.update-new", self.name))
    }

    fn keep_tmp(&self) -> PathBuf {
        self.dir.join(format!(".{}.update-keep", self.name))
    }

    /// Removes the temporary files a killed update left; returns their paths.
    ///
    /// # Errors
    ///
    /// `update.io` when one exists and cannot be removed.
    pub fn clean_stale(&self) -> Result<Vec<PathBuf>, Diagnostic> {
        let mut removed = Vec::new();
        for path in [self.new_tmp(), self.keep_tmp()] {
            match std::fs::remove_file(&path) {
                Ok(()) => removed.push(path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(io_error(
                        &path,
                        "a temporary file an interrupted update left could not be removed",
                        &e,
                    ));
                }
            }
        }
        Ok(removed)
    }

    /// Puts `binary` in place of the installed one, keeping the installed
    /// one as [`Install::previous`].
    ///
    /// # Errors
    ///
    /// `update.io` naming the file when a step fails; the installed binary
    /// is then unchanged (or, if only the final folder sync failed, already
    /// the new one).
    pub fn replace(&self, binary: &[u8]) -> Result<(), Diagnostic> {
        self.clean_stale()?;
        let new = self.new_tmp();
        let written = write_synced(&new, binary);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&new);
            return Err(io_error(&new, "the new binary could not be written", &e));
        }
        if let Err(d) = self.keep_current() {
            let _ = std::fs::remove_file(&new);
            return Err(d);
        }
        if let Err(e) = std::fs::rename(&new, &self.exe) {
            let _ = std::fs::remove_file(&new);
            return Err(io_error(
                &self.exe,
                "the new binary could not be renamed into place",
                &e,
            ));
        }
        sync_dir(&self.dir)
    }

    /// Puts [`Install::previous`] back in place; the binary it replaces
    /// becomes the previous one, so a second rollback undoes the first.
    ///
    /// # Errors
    ///
    /// `update.no-previous` when there is nothing to roll back to;
    /// `update.io` when a step fails (the installed binary is then
    /// unchanged).
    pub fn rollback(&self) -> Result<(), Diagnostic> {
        let previous = self.previous();
        if !previous.is_file() {
            return Err(Diagnostic::error(
                "update.no-previous",
                format!("there is no previous binary to roll back to: {} does not exist", previous.display()),
                "`smith update` keeps the binary it replaces there, and no update has replaced this one",
                "nothing to undo; to install a specific release, download its archive (docs/release.md)",
            )
            .with_surface(Surface::file(&previous)));
        }
        self.clean_stale()?;
        let keep = self.keep_tmp();
        if let Err(e) = link_or_copy(&self.exe, &keep) {
            let _ = std::fs::remove_file(&keep);
            return Err(io_error(&keep, "the current binary could not be kept", &e));
        }
        if let Err(e) = std::fs::rename(&previous, &self.exe) {
            let _ = std::fs::remove_file(&keep);
            return Err(io_error(
                &self.exe,
                "the previous binary could not be renamed into place",
                &e,
            ));
        }
        std::fs::rename(&keep, &previous).map_err(|e| {
            io_error(
                &previous,
                "the rollback is done, but the binary it replaced could not be kept",
                &e,
            )
        })?;
        sync_dir(&self.dir)
    }

    /// Keeps the installed binary as [`Install::previous`], atomically.
    fn keep_current(&self) -> Result<(), Diagnostic> {
        let keep = self.keep_tmp();
        if let Err(e) = link_or_copy(&self.exe, &keep) {
            let _ = std::fs::remove_file(&keep);
            return Err(io_error(
                &keep,
                "the installed binary could not be kept",
                &e,
            ));
        }
        std::fs::rename(&keep, self.previous()).map_err(|e| {
            let _ = std::fs::remove_file(&keep);
            io_error(
                &self.previous(),
                "the installed binary could not be kept for a rollback",
                &e,
            )
        })
    }
}

/// The checkout whose cargo target folder holds `exe`, if it is in one: a
/// folder with cargo's `deps` and `.fingerprint` beside the binary, or an
/// ancestor `target` next to a `Cargo.toml`.
fn cargo_checkout(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    let mut ancestors = dir.ancestors();
    let found = ancestors.find(|a| {
        a.file_name().is_some_and(|n| n == "target")
            && a.parent().is_some_and(|p| p.join("Cargo.toml").is_file())
    });
    if let Some(target) = found {
        return target.parent().map(Path::to_path_buf);
    }
    (dir.join("deps").is_dir() && dir.join(".fingerprint").is_dir()).then(|| dir.to_path_buf())
}

/// Whether this process may create and rename files in `dir`.
fn writable(dir: &Path) -> bool {
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A hard link of `from` at `to`, or a synced copy where the file system
/// refuses links.
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(_) => {
            std::fs::copy(from, to)?;
            std::fs::File::open(to)?.sync_all()
        }
    }
}

fn sync_dir(dir: &Path) -> Result<(), Diagnostic> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, "the folder could not be synced after the rename", &e))
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        "update.io",
        format!("{what}: {}", path.display()),
        format!("the file system refused: {e}"),
        "free disk space or fix the folder's permissions, then run the command again; the installed binary is unchanged unless the message says otherwise",
    )
    .with_surface(Surface::file(path))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn refuses_cargo_builds_and_package_manager_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        let exe = dir.path().join("target/release/smith");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        assert_eq!(Install::at(&exe).unwrap_err().code(), "update.dev-build");
        for path in [
            "/usr/bin/smith",
            "/nix/store/abc-smith/bin/smith",
            "/opt/homebrew/Cellar/smith/1/bin/smith",
        ] {
            let err = Install::at(Path::new(path)).unwrap_err();
            assert_eq!(err.code(), "update.package-manager", "{path}");
            assert!(err.next().contains("smith"), "{path}: {}", err.next());
        }
        let plain = tempfile::tempdir().unwrap();
        assert!(Install::at(&plain.path().join("smith")).is_ok());
    }

    #[test]
    fn replace_keeps_the_previous_binary_and_rollback_toggles() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("smith");
        std::fs::write(&exe, b"old").unwrap();
        let install = Install::at(&exe).unwrap();
        assert_eq!(install.rollback().unwrap_err().code(), "update.no-previous");
        std::fs::write(install.new_tmp(), b"stale").unwrap();
        install.replace(b"new").unwrap();
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");
        assert_eq!(std::fs::read(install.previous()).unwrap(), b"old");
        assert!(!install.new_tmp().exists() && !install.keep_tmp().exists());
        install.rollback().unwrap();
        assert_eq!(std::fs::read(&exe).unwrap(), b"old");
        assert_eq!(std::fs::read(install.previous()).unwrap(), b"new");
        install.rollback().unwrap();
        assert_eq!(std::fs::read(&exe).unwrap(), b"new");
    }
}
