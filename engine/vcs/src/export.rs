//! Export: a snapshot's tree written into a folder of its own, outside the
//! project (a scratch copy to re-run a session in, an archive to inspect).
//!
//! The destination must be empty or missing. Every folder is created by
//! the export itself and every file with `O_CREAT | O_EXCL | O_NOFOLLOW`,
//! so nothing is written through a link or outside the destination; tree
//! entry names are validated when the tree is decoded (no `/`, no `..`).

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use crate::Vcs;
use crate::diff;
use crate::error::{ErrorKind, VcsError};
use crate::id::{ObjectId, ObjectKind, SnapshotId};
use crate::tree::EntryKind;

/// What [`Vcs::export`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// The destination folder (canonical).
    pub dest: PathBuf,
    /// Regular files written (executable ones included).
    pub files: u64,
    /// Symlinks written.
    pub symlinks: u64,
    /// Folders created below the destination.
    pub folders: u64,
    /// Bytes of file content and link targets written.
    pub bytes: u64,
    /// Entries the snapshot records by size only (over a size cap, or not
    /// a file, folder or symlink): not written.
    pub not_written: Vec<NotWritten>,
}

/// An entry an export did not write because the snapshot has no content
/// for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotWritten {
    /// The path relative to the snapshot's root.
    pub path: PathBuf,
    /// Its kind in the snapshot ([`EntryKind::SkippedFileCap`],
    /// [`EntryKind::SkippedSnapshotCap`] or [`EntryKind::SkippedSpecial`]).
    pub kind: EntryKind,
    /// Its size in bytes when the snapshot was taken.
    pub size: u64,
}

impl Vcs {
    /// Writes the tree of snapshot `id` into `dest`, an empty or missing
    /// folder (created with its parents when missing): files with their
    /// executable bit, symlinks as links, folders. Entries recorded by
    /// size only are listed in [`ExportReport::not_written`], not written.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownSnapshot`] for an unknown id (before anything is
    /// written); [`ErrorKind::InvalidOptions`] when `dest` is not a folder
    /// or not empty; [`ErrorKind::Corrupt`] for a damaged object; I/O
    /// errors. On an error after writing began, what was written stays in
    /// `dest`.
    pub fn export(&mut self, id: SnapshotId, dest: &Path) -> Result<ExportReport, VcsError> {
        let root_tree = self.record(id)?.tree;
        let dest = prepare(dest)?;
        let mut report = ExportReport {
            dest: dest.clone(),
            ..ExportReport::default()
        };
        // (tree, folder on disk, path relative to the snapshot's root)
        let mut stack: Vec<(ObjectId, PathBuf, PathBuf)> =
            vec![(root_tree, dest.clone(), PathBuf::new())];
        while let Some((tree, dir, rel)) = stack.pop() {
            for e in diff::load_tree(&mut self.objects, Some(tree))? {
                let name = OsStr::from_bytes(&e.name);
                let path = dir.join(name);
                let rel = rel.join(name);
                match e.kind {
                    EntryKind::Dir => {
                        std::fs::create_dir(&path)
                            .map_err(|err| VcsError::io("creating the folder", &path, &err))?;
                        report.folders += 1;
                        stack.push((e.id, path, rel));
                    }
                    EntryKind::Symlink => {
                        let target = self.objects.get(ObjectKind::Blob, &e.id)?;
                        std::os::unix::fs::symlink(OsStr::from_bytes(&target), &path)
                            .map_err(|err| VcsError::io("creating the symlink", &path, &err))?;
                        report.symlinks += 1;
                        report.bytes += target.len() as u64;
                    }
                    EntryKind::File | EntryKind::Executable => {
                        let content = self.objects.get(ObjectKind::Blob, &e.id)?;
                        let mut f = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .custom_flags(libc::O_NOFOLLOW)
                            .mode(if e.kind == EntryKind::Executable {
                                0o777
                            } else {
                                0o666
                            })
                            .open(&path)
                            .map_err(|err| VcsError::io("creating the file", &path, &err))?;
                        f.write_all(&content)
                            .map_err(|err| VcsError::io("writing the file", &path, &err))?;
                        report.files += 1;
                        report.bytes += content.len() as u64;
                    }
                    EntryKind::SkippedFileCap
                    | EntryKind::SkippedSnapshotCap
                    | EntryKind::SkippedSpecial => report.not_written.push(NotWritten {
                        path: rel,
                        kind: e.kind,
                        size: e.size,
                    }),
                }
            }
        }
        report.not_written.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(report)
    }
}

/// Creates `dest` when missing and checks that it is an empty folder;
/// returns it canonical.
fn prepare(dest: &Path) -> Result<PathBuf, VcsError> {
    let refuse = |why: &str| {
        VcsError::new(
            ErrorKind::InvalidOptions,
            format!("cannot export into {}: {why}", dest.display()),
            "an export writes a whole tree and never overwrites or merges into existing files",
            "give a missing or empty folder",
        )
        .with_value(dest.display())
    };
    match std::fs::symlink_metadata(dest) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest)
                .map_err(|e| VcsError::io("creating the export folder", dest, &e))?;
        }
        Err(e) => return Err(VcsError::io("reading the export folder", dest, &e)),
        Ok(m) if !m.is_dir() => return Err(refuse("it is not a folder")),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dest)
                .map_err(|e| VcsError::io("listing the export folder", dest, &e))?;
            if entries.next().is_some() {
                return Err(refuse("it is not empty"));
            }
        }
    }
    std::fs::canonicalize(dest).map_err(|e| VcsError::io("opening the export folder", dest, &e))
}
