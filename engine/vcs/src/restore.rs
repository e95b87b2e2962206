//! Restore, undo and redo: all-or-nothing rewrites of the project to a
//! snapshot's content.
//!
//! A restore first snapshots the project as it is (the id it returns as
//! `before`, so restoring that id undoes the restore), checks for changes
//! made outside smith since the expected snapshot, and plans the changes
//! from the current tree to the target. It then writes every new file and
//! symlink into a staging folder (the store's spare folder when it is on
//! the project's file system, else `.smith-restore-…` at the root, never
//! recorded), swaps each file that replaces a file into place, moves every
//! other file it replaces or removes into that folder, removes the folders
//! that go, creates the folders that come and renames the other staged
//! files into place. Each step is journaled; when one fails, the journal is
//! undone in reverse and the project is as it was.

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::diff::{self, RawChange};
use crate::error::{ErrorKind, VcsError};
use crate::id::{ObjectKind, SnapshotId};
use crate::scan::STAGING_PREFIX;
use crate::tree::EntryKind;
use crate::{FileChange, Vcs};

/// How to restore.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreOptions {
    /// The snapshot the project is expected to match (the last one smith
    /// took). When files differ from it, the restore is refused unless
    /// `force`.
    pub expected: Option<SnapshotId>,
    /// Restore even when files changed outside smith since `expected`.
    pub force: bool,
    /// Change nothing; list what would change.
    pub dry_run: bool,
    /// Restore only these paths (relative to the root, or absolute inside
    /// it) and everything under them; `None` restores the whole tree. The
    /// expected-snapshot check is limited to them as well.
    pub paths: Option<Vec<PathBuf>>,
}

/// How to undo or redo an effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UndoOptions {
    /// Go ahead even when the effect's paths changed outside smith since.
    pub force: bool,
    /// Change nothing; list what would change.
    pub dry_run: bool,
}

/// What a restore did (or, for a dry run, would do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreReport {
    /// The snapshot of the project just before the restore: restoring it
    /// undoes the restore.
    pub before: SnapshotId,
    /// The snapshot of the project after the restore (`before` for a dry
    /// run).
    pub after: SnapshotId,
    /// The changes, from the project as it was to the target, in path
    /// order (without text diffs).
    pub changes: Vec<FileChange>,
    /// Paths left as they are because one side records them by size only
    /// (over a size cap, or not a file).
    pub kept: Vec<PathBuf>,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

/// One journaled step, undone in reverse on failure.
enum Step {
    /// A file was renamed from `path` to `backup`.
    Moved { path: PathBuf, backup: PathBuf },
    /// A folder was removed (with these permission bits).
    RemovedDir { path: PathBuf, mode: u32 },
    /// A folder was created.
    MadeDir { path: PathBuf },
    /// A staged file was renamed from `from` to `path`.
    Placed { path: PathBuf, from: PathBuf },
    /// The entries at `path` and `other` were swapped.
    Swapped { path: PathBuf, other: PathBuf },
}

/// The path filter: exact paths and everything under them; ancestors only
/// for folders that must appear.
struct Filter(Option<std::collections::HashSet<Vec<u8>>>);

impl Filter {
    fn covers(&self, c: &RawChange) -> bool {
        let Some(set) = &self.0 else { return true };
        let mut p: &[u8] = &c.path;
        loop {
            if set.contains(p) {
                return true;
            }
            match p.iter().rposition(|b| *b == b'/') {
                Some(i) => p = &p[..i],
                None => break,
            }
        }
        // An ancestor folder of a filtered path that must appear.
        if c.new.is_some_and(|n| n.kind == EntryKind::Dir) {
            let mut prefix = c.path.clone();
            prefix.push(b'/');
            return set.iter().any(|s| s.starts_with(&prefix));
        }
        false
    }
}

impl Vcs {
    /// Makes the project match snapshot `target` (or, with
    /// [`RestoreOptions::paths`], those paths of it).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownSnapshot`] for an unknown id,
    /// [`ErrorKind::PathEscapes`] / [`ErrorKind::SymlinkEscape`] for a path
    /// outside the root or through a symlink, [`ErrorKind::Conflict`] (with
    /// [`VcsError::conflicts`]) when files changed since
    /// [`RestoreOptions::expected`], I/O errors. The project is unchanged
    /// whenever an error is returned.
    pub fn restore(
        &mut self,
        target: SnapshotId,
        options: &RestoreOptions,
    ) -> Result<RestoreReport, VcsError> {
        let filter = match &options.paths {
            None => Filter(None),
            Some(paths) => {
                let mut set = std::collections::HashSet::new();
                for p in paths {
                    set.insert(self.relative(p)?);
                }
                Filter(Some(set))
            }
        };
        self.restore_filtered(target, options, &filter)
    }

    /// [`Vcs::restore`] with the paths already checked.
    fn restore_filtered(
        &mut self,
        target: SnapshotId,
        options: &RestoreOptions,
        filter: &Filter,
    ) -> Result<RestoreReport, VcsError> {
        let target_tree = self.record(target)?.tree;
        let expected_tree = match options.expected {
            Some(e) => Some(self.record(e)?.tree),
            None => None,
        };
        let before = self.snapshot()?;
        if let (Some(expected), Some(expected_tree)) = (options.expected, expected_tree) {
            let mut raw = Vec::new();
            diff::tree_changes(
                &mut self.objects,
                Some(expected_tree),
                Some(before.tree),
                &mut Vec::new(),
                &mut raw,
            )?;
            raw.retain(|c| filter.covers(c));
            if !raw.is_empty() && !options.force {
                let paths: Vec<PathBuf> = raw
                    .iter()
                    .map(|c| PathBuf::from(OsStr::from_bytes(&c.path)))
                    .collect();
                let shown: Vec<String> = paths
                    .iter()
                    .take(5)
                    .map(|p| p.display().to_string())
                    .collect();
                let more = if paths.len() > 5 {
                    format!(" and {} more", paths.len() - 5)
                } else {
                    String::new()
                };
                return Err(VcsError::new(
                    ErrorKind::Conflict,
                    format!(
                        "{} path(s) changed outside smith since snapshot {expected}: {}{more}",
                        paths.len(),
                        shown.join(", ")
                    ),
                    "restoring now would overwrite those changes, and nothing records them",
                    "review the changes (diff the expected snapshot against a new one), then restore with force to overwrite them",
                )
                .with_value(shown.join(", "))
                .with_conflicts(paths));
            }
        }
        let mut raw = Vec::new();
        diff::tree_changes(
            &mut self.objects,
            Some(before.tree),
            Some(target_tree),
            &mut Vec::new(),
            &mut raw,
        )?;
        raw.retain(|c| filter.covers(c));
        let mut kept = Vec::new();
        raw.retain(|c| {
            let skipped = c.old.is_some_and(|s| s.kind.is_skipped())
                || c.new.is_some_and(|s| s.kind.is_skipped());
            if skipped {
                kept.push(PathBuf::from(OsStr::from_bytes(&c.path)));
            }
            !skipped
        });
        let in_the_way = self.untracked_in_the_way(&raw)?;
        if !in_the_way.is_empty() && !options.force {
            let shown: Vec<String> = in_the_way
                .iter()
                .take(5)
                .map(|p| p.display().to_string())
                .collect();
            return Err(VcsError::new(
                ErrorKind::Conflict,
                format!(
                    "{} path(s) the snapshot would write hold files no snapshot records (ignored ones): {}",
                    in_the_way.len(),
                    shown.join(", ")
                ),
                "restoring would overwrite them, and nothing records their content",
                "move those files away (or restore with force to overwrite them), then restore again",
            )
            .with_value(shown.join(", "))
            .with_conflicts(in_the_way));
        }
        let changes =
            diff::build(&mut self.objects, before.id, target, raw.clone(), false)?.changes;
        if options.dry_run || raw.is_empty() {
            return Ok(RestoreReport {
                before: before.id,
                after: before.id,
                changes,
                kept,
                dry_run: options.dry_run,
            });
        }
        self.apply(&raw)?;
        let after = self.snapshot()?;
        Ok(RestoreReport {
            before: before.id,
            after: after.id,
            changes,
            kept,
            dry_run: false,
        })
    }

    /// Paths where the plan writes something but the project already has
    /// an unrecorded (ignored) entry that differs from what would be
    /// written.
    fn untracked_in_the_way(&mut self, plan: &[RawChange]) -> Result<Vec<PathBuf>, VcsError> {
        let mut out = Vec::new();
        for c in plan {
            let (None, Some(new)) = (c.old, c.new) else {
                continue;
            };
            let path = self.scanner.root.join(OsStr::from_bytes(&c.path));
            let Ok(m) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let same = match new.kind {
                EntryKind::Dir => m.is_dir(),
                EntryKind::Symlink => {
                    m.file_type().is_symlink()
                        && std::fs::read_link(&path)
                            .ok()
                            .map(|t| t.into_os_string().into_vec())
                            == Some(self.objects.get(ObjectKind::Blob, &new.id)?)
                }
                EntryKind::File | EntryKind::Executable => {
                    m.is_file()
                        && m.len() == new.size
                        && std::fs::read(&path).ok()
                            == Some(self.objects.get(ObjectKind::Blob, &new.id)?)
                }
                _ => true,
            };
            if !same {
                out.push(PathBuf::from(OsStr::from_bytes(&c.path)));
            }
        }
        Ok(out)
    }

    /// Undoes an effect: restores, at the paths the effect changed, their
    /// content in `before`, refusing when they changed since `after`
    /// (unless forced).
    ///
    /// # Errors
    ///
    /// As [`Vcs::restore`].
    pub fn undo(
        &mut self,
        before: SnapshotId,
        after: SnapshotId,
        options: UndoOptions,
    ) -> Result<RestoreReport, VcsError> {
        self.between(after, before, options)
    }

    /// Redoes an undone effect: restores, at the paths the effect changed,
    /// their content in `after`, refusing when they changed since `before`
    /// (unless forced).
    ///
    /// # Errors
    ///
    /// As [`Vcs::restore`].
    pub fn redo(
        &mut self,
        before: SnapshotId,
        after: SnapshotId,
        options: UndoOptions,
    ) -> Result<RestoreReport, VcsError> {
        self.between(before, after, options)
    }

    fn between(
        &mut self,
        from: SnapshotId,
        to: SnapshotId,
        options: UndoOptions,
    ) -> Result<RestoreReport, VcsError> {
        let raw = self.raw_changes(from, to)?;
        // Paths from stored trees are valid names under the root; folders
        // on the way are checked again when the restore writes.
        let paths = raw.into_iter().map(|c| c.path).collect();
        self.restore_filtered(
            to,
            &RestoreOptions {
                expected: Some(from),
                force: options.force,
                dry_run: options.dry_run,
                paths: None,
            },
            &Filter(Some(paths)),
        )
    }

    /// Applies `plan` all-or-nothing.
    ///
    /// Files are staged in the store's spare folder when it is on the
    /// project's file system (reusing the inodes earlier restores replaced,
    /// so no inode is allocated or freed on the path), else in a staging
    /// folder at the root. A file replaced by a file is swapped with its
    /// staged successor in one `renameat2(RENAME_EXCHANGE)` where the
    /// kernel offers it. What is left over is tidied by a background
    /// thread, joined before the next restore and when the `Vcs` drops.
    fn apply(&mut self, plan: &[RawChange]) -> Result<(), VcsError> {
        self.finish_cleanup();
        let root = self.scanner.root.clone();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let tag = format!("{}-{nanos}", std::process::id());
        if !self.spares_off {
            match self.claim_spares(&root, &tag) {
                Some(stage) => {
                    let mut exdev = false;
                    let result = self.apply_in(&root, &stage, &tag, plan, &mut exdev);
                    self.release_spares(stage);
                    if !exdev {
                        return result;
                    }
                    // Same device, another mount: stage at the root instead.
                    self.spares_off = true;
                }
                None => self.spares_off = true,
            }
            // The spare folder is being handed back.
            self.finish_cleanup();
        }
        let mut stage_name = STAGING_PREFIX.to_vec();
        stage_name.extend_from_slice(tag.as_bytes());
        let stage = root.join(OsStr::from_bytes(&stage_name));
        std::fs::create_dir(&stage)
            .map_err(|e| VcsError::io("creating the staging folder", &stage, &e))?;
        let result = self.apply_in(&root, &stage, &tag, plan, &mut false);
        // Only replaced files are left in it: removed off the path.
        self.cleanup = std::thread::Builder::new()
            .name("smith-vcs-cleanup".into())
            .spawn(move || {
                let _ = std::fs::remove_dir_all(&stage);
            })
            .ok();
        result
    }

    /// Takes the store's spare folder for this restore (an empty one when
    /// there is none), or `None` when it is not on the project's device.
    fn claim_spares(&mut self, root: &Path, tag: &str) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt as _;
        let store = self.objects.root();
        let stage = store.join("tmp").join(format!("restore-{tag}"));
        match std::fs::rename(store.join(SPARES), &stage) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&stage).ok()?;
            }
            Err(_) => return None,
        }
        let same_device = std::fs::metadata(&stage)
            .ok()
            .zip(std::fs::metadata(root).ok())
            .is_some_and(|(a, b)| a.dev() == b.dev());
        if !same_device {
            self.release_spares(stage);
            return None;
        }
        Some(stage)
    }

    /// Hands `stage` back as the store's spare folder, in a background
    /// thread: every regular file only it links is emptied and kept (up to
    /// [`MAX_SPARES`]), everything else removed.
    fn release_spares(&mut self, stage: PathBuf) {
        let spares = self.objects.root().join(SPARES);
        let tidy = move || {
            use std::os::unix::fs::MetadataExt as _;
            // SAFETY: `geteuid` has no preconditions.
            let me = unsafe { libc::geteuid() };
            let mut kept = 0usize;
            if let Ok(list) = std::fs::read_dir(&stage) {
                for item in list.flatten() {
                    let path = item.path();
                    let keep = kept < MAX_SPARES
                        && std::fs::symlink_metadata(&path).is_ok_and(|m| {
                            m.file_type().is_file()
                                && m.nlink() == 1
                                && m.uid() == me
                                && (m.len() == 0 || empty_file(&path, m.mode()))
                        });
                    if keep {
                        kept += 1;
                    } else if std::fs::remove_file(&path).is_err() {
                        let _ = std::fs::remove_dir_all(&path);
                    }
                }
            }
            if std::fs::rename(&stage, &spares).is_err() {
                let _ = std::fs::remove_dir_all(&stage);
            }
        };
        self.cleanup = std::thread::Builder::new()
            .name("smith-vcs-cleanup".into())
            .spawn(tidy)
            .ok();
    }

    /// Waits for the last restore's tidying to end.
    pub(crate) fn finish_cleanup(&mut self) {
        if let Some(t) = self.cleanup.take() {
            let _ = t.join();
        }
    }

    fn apply_in(
        &mut self,
        root: &Path,
        stage: &Path,
        tag: &str,
        plan: &[RawChange],
        exdev: &mut bool,
    ) -> Result<(), VcsError> {
        let mut journal = Vec::new();
        let result = self.apply_staged(root, stage, tag, plan, &mut journal, exdev);
        if result.is_err() {
            rollback(journal);
        }
        result.map_err(|e| {
            VcsError::new(
                e.kind(),
                format!(
                    "{}; the restore was rolled back and nothing changed",
                    e.diagnostic().what()
                ),
                e.diagnostic().why(),
                e.diagnostic().next(),
            )
        })
    }

    fn apply_staged(
        &mut self,
        root: &Path,
        stage: &Path,
        tag: &str,
        plan: &[RawChange],
        journal: &mut Vec<Step>,
        exdev: &mut bool,
    ) -> Result<(), VcsError> {
        let path_of = |c: &RawChange| root.join(OsStr::from_bytes(&c.path));
        let mut moved = |e: std::io::Error, what: &str, path: &Path| {
            if e.raw_os_error() == Some(libc::EXDEV) {
                *exdev = true;
            }
            VcsError::io(what, path, &e)
        };
        let mut spares: Vec<PathBuf> = std::fs::read_dir(stage)
            .map(|list| list.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        // 1. Stage every new file and symlink; note the files that replace
        //    a file, to be swapped in one step.
        let mut staged = vec![None; plan.len()];
        let mut swap = vec![false; plan.len()];
        for (i, c) in plan.iter().enumerate() {
            let Some(new) = c.new.filter(|n| n.kind.is_leaf()) else {
                continue;
            };
            let content = self.objects.get(ObjectKind::Blob, &new.id)?;
            if new.kind == EntryKind::Symlink {
                let tmp = stage.join(format!("{tag}-n{i}"));
                std::os::unix::fs::symlink(OsStr::from_bytes(&content), &tmp)
                    .map_err(|e| VcsError::io("staging the symlink", &tmp, &e))?;
                staged[i] = Some(tmp);
                continue;
            }
            let exec = new.kind == EntryKind::Executable;
            // The permissions of the file it replaces, with the target's
            // executable bit.
            let replaced = std::fs::symlink_metadata(path_of(c))
                .ok()
                .filter(|m| m.file_type().is_file())
                .map(|m| {
                    let mut perm = m.permissions().mode() & 0o7777;
                    if exec {
                        perm |= (perm & 0o444) >> 2;
                    } else {
                        perm &= !0o111;
                    }
                    perm
                });
            let mut file = None;
            if replaced.is_some() {
                // A spare inode, written again. Spares are emptied when
                // they are put back (truncating here would make ext4 flush
                // the file on close, as for a file rewritten in place).
                while let Some(spare) = spares.pop() {
                    let opened = std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(&spare)
                        .and_then(|f| {
                            let m = f.metadata()?;
                            if !m.is_file() {
                                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
                            }
                            if m.len() != 0 {
                                f.set_len(0)?;
                            }
                            Ok(f)
                        });
                    match opened {
                        Ok(f) => {
                            file = Some((f, spare));
                            break;
                        }
                        Err(_) => {
                            let _ = std::fs::remove_file(&spare);
                        }
                    }
                }
            }
            let (mut f, tmp) = match file {
                Some(f) => f,
                None => {
                    let tmp = stage.join(format!("{tag}-n{i}"));
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(if exec { 0o777 } else { 0o666 })
                        .open(&tmp)
                        .map_err(|e| VcsError::io("staging the file", &tmp, &e))?;
                    (f, tmp)
                }
            };
            let mut write = || -> std::io::Result<()> {
                f.write_all(&content)?;
                if let Some(perm) = replaced {
                    f.set_permissions(std::fs::Permissions::from_mode(perm))?;
                }
                Ok(())
            };
            write().map_err(|e| VcsError::io("staging the file", &tmp, &e))?;
            swap[i] = replaced.is_some() && c.old.is_some_and(|o| o.kind.is_leaf());
            staged[i] = Some(tmp);
        }
        let mut seen = std::collections::HashSet::new();
        let mut exchange = cfg!(target_os = "linux");
        // 2. Swap in every file that replaces a file; move aside
        //    everything else replaced or removed that is not a folder, and
        //    unrecorded entries in the way of what comes.
        for (i, c) in plan.iter().enumerate() {
            if swap[i] && exchange {
                let path = path_of(c);
                check_parents(root, &c.path, &mut seen)?;
                if let Some(tmp) = staged[i].take() {
                    match exchange_paths(&tmp, &path) {
                        Ok(()) => {
                            journal.push(Step::Swapped { path, other: tmp });
                            continue;
                        }
                        Err(e)
                            if matches!(
                                e.raw_os_error(),
                                Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
                            ) =>
                        {
                            // No exchange here: move aside, place later.
                            exchange = false;
                            staged[i] = Some(tmp);
                        }
                        Err(e) => return Err(moved(e, "replacing", &path)),
                    }
                }
            }
            let in_the_way = c.old.is_none()
                && std::fs::symlink_metadata(path_of(c)).is_ok_and(|m| {
                    !(m.is_dir() && c.new.is_some_and(|n| n.kind == EntryKind::Dir))
                });
            if in_the_way || c.old.is_some_and(|o| o.kind != EntryKind::Dir) {
                let path = path_of(c);
                check_parents(root, &c.path, &mut seen)?;
                let backup = stage.join(format!("{tag}-o{i}"));
                std::fs::rename(&path, &backup).map_err(|e| moved(e, "moving aside", &path))?;
                journal.push(Step::Moved { path, backup });
            }
        }
        // 3. Remove the folders that go, deepest first.
        for c in plan.iter().rev() {
            if c.old.is_some_and(|o| o.kind == EntryKind::Dir)
                && c.new.is_none_or(|n| n.kind != EntryKind::Dir)
            {
                let path = path_of(c);
                let mode = std::fs::symlink_metadata(&path)
                    .map(|m| m.permissions().mode() & 0o7777)
                    .unwrap_or(0o755);
                std::fs::remove_dir(&path).map_err(|e| {
                    if e.raw_os_error() == Some(libc::ENOTEMPTY) {
                        VcsError::new(
                            ErrorKind::Conflict,
                            format!("the folder {} still holds files no snapshot records (ignored ones)", path.display()),
                            "the snapshot has no folder there, and ignored files are never removed",
                            "move or delete the ignored files in that folder, then restore again",
                        )
                    } else {
                        VcsError::io("removing the folder", &path, &e)
                    }
                })?;
                journal.push(Step::RemovedDir { path, mode });
            }
        }
        seen.clear();
        // 4. Create the folders that come and place the staged files,
        //    parents first.
        for (i, c) in plan.iter().enumerate() {
            let path = path_of(c);
            match c.new {
                Some(n) if n.kind == EntryKind::Dir => {
                    if c.old.is_some_and(|o| o.kind == EntryKind::Dir) {
                        continue;
                    }
                    check_parents(root, &c.path, &mut seen)?;
                    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                        // An unrecorded folder is already there.
                        continue;
                    }
                    std::fs::create_dir(&path)
                        .map_err(|e| VcsError::io("creating the folder", &path, &e))?;
                    journal.push(Step::MadeDir { path });
                }
                Some(_) => {
                    let Some(tmp) = staged[i].take() else {
                        continue;
                    };
                    check_parents(root, &c.path, &mut seen)?;
                    if std::fs::symlink_metadata(&path).is_ok() {
                        return Err(VcsError::new(
                            ErrorKind::Conflict,
                            format!("{} appeared while the restore ran", path.display()),
                            "a restore never overwrites a file it did not move aside first",
                            "restore again once nothing else writes to the project",
                        ));
                    }
                    std::fs::rename(&tmp, &path).map_err(|e| moved(e, "placing", &path))?;
                    journal.push(Step::Placed { path, from: tmp });
                }
                None => {}
            }
        }
        Ok(())
    }
}

/// The folder of a store that keeps the inodes restores replaced, emptied,
/// for the next restore to write into.
pub(crate) const SPARES: &str = "spare";

/// The most spare inodes a store keeps.
const MAX_SPARES: usize = 16_384;

/// Empties the regular file at `path` (mode `mode`), making it writable by
/// its owner; whether that worked.
fn empty_file(path: &Path, mode: u32) -> bool {
    if mode & 0o200 == 0
        && std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).is_err()
    {
        return false;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .is_ok()
}

/// Swaps the entries at `a` and `b` in one step.
#[cfg(target_os = "linux")]
fn exchange_paths(a: &Path, b: &Path) -> std::io::Result<()> {
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Swaps the entries at `a` and `b` in one step (not offered here).
#[cfg(not(target_os = "linux"))]
fn exchange_paths(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Checks that every folder above `rel` is a real folder (no symlink was
/// put on the way since the plan was made). `seen` holds the folders
/// already checked by this restore.
fn check_parents(
    root: &Path,
    rel: &[u8],
    seen: &mut std::collections::HashSet<Vec<u8>>,
) -> Result<(), VcsError> {
    let Some(parent) = rel.iter().rposition(|b| *b == b'/').map(|i| &rel[..i]) else {
        return Ok(());
    };
    if seen.contains(parent) {
        return Ok(());
    }
    let mut at = root.to_path_buf();
    let parts: Vec<&[u8]> = rel.split(|b| *b == b'/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(OsStr::from_bytes(part));
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(VcsError::new(
                    ErrorKind::SymlinkEscape,
                    format!("{} is no longer a folder", at.display()),
                    "a restore writes only inside real folders of the project, never through a symlink",
                    "restore again once nothing else changes the project",
                ));
            }
            Err(e) => return Err(VcsError::io("checking the folder", &at, &e)),
        }
    }
    seen.insert(parent.to_vec());
    Ok(())
}

/// Undoes `journal` in reverse, as far as it can.
fn rollback(journal: Vec<Step>) {
    for step in journal.into_iter().rev() {
        match step {
            Step::Placed { path, from } => {
                let _ = std::fs::rename(&path, &from);
            }
            Step::Swapped { path, other } => {
                let _ = exchange_paths(&other, &path);
            }
            Step::MadeDir { path } => {
                let _ = std::fs::remove_dir(&path);
            }
            Step::RemovedDir { path, mode } => {
                let _ = std::fs::create_dir(&path);
                let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode));
            }
            Step::Moved { path, backup } => {
                let _ = std::fs::rename(&backup, &path);
            }
        }
    }
}
