//! The `vcs` host effects: snapshots of the project folder, diffs between
//! them, and restoring one, kept in smith's own snapshot store
//! (`smith-vcs`); no external VCS executable runs.
//!
//! The store is the project's checkpoint store (see
//! `smith_engine::checkpoint::store_dir`): the snapshots a plugin takes and
//! the checkpoints smith takes around the agent's effects are one history,
//! and their ids work with `smith checkpoint diff` and `restore` alike. A
//! snapshot records every file under the project folder that the ignore
//! rules keep (`.gitignore` files; `.git` is never recorded), with its
//! executable bit, and symlinks as links. Restoring writes the snapshot's
//! files over the project and removes the files it does not have, all or
//! nothing; it first snapshots the project as it is, and returns that id,
//! so restoring that id undoes the restore and restoring the first id again
//! redoes it.
//!
//! In a runtime the store is the very instance the runtime's checkpoints
//! use ([`Repo::shared`]): one writer of the store's stat cache.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use smith_engine::checkpoint::Checkpoints;
use smith_vcs::{Options, RestoreOptions, RestoreReport, SnapshotId, Vcs};

/// The most bytes of diff text `vcs-diff` returns.
pub const MAX_DIFF_BYTES: usize = 1 << 20;

/// A diff, cut at [`MAX_DIFF_BYTES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffText {
    /// The unified diff (see `smith_vcs::Diff::unified`).
    pub text: String,
    /// Whether it was cut.
    pub truncated: bool,
}

/// The snapshot store of the project folder.
#[derive(Debug)]
pub struct Repo {
    store: Store,
}

/// Where a [`Repo`]'s store is.
#[derive(Debug)]
enum Store {
    /// Opened by the repo itself.
    Own(Box<Vcs>),
    /// The runtime's checkpoint store, shared.
    Shared(Arc<Checkpoints>),
}

impl Repo {
    /// The store of the project in `project`, under `checkpoints_root`
    /// (smith uses `<data dir>/checkpoints`).
    ///
    /// # Errors
    ///
    /// When `project` is not a folder or the store cannot be created.
    pub fn open(project: &Path, checkpoints_root: &Path) -> Result<Repo, String> {
        let store = smith_engine::checkpoint::store_dir(checkpoints_root, project);
        let vcs = Vcs::open(project, &store, Options::default()).map_err(|e| e.to_string())?;
        Ok(Repo {
            store: Store::Own(Box::new(vcs)),
        })
    }

    /// The runtime's checkpoint store `checkpoints`, shared with its
    /// checkpoints (opened on first use).
    pub fn shared(checkpoints: Arc<Checkpoints>) -> Repo {
        Repo {
            store: Store::Shared(checkpoints),
        }
    }

    /// The project folder (canonical).
    pub fn root(&self) -> PathBuf {
        match &self.store {
            Store::Own(vcs) => vcs.root().to_path_buf(),
            Store::Shared(c) => PathBuf::from(c.root()),
        }
    }

    /// Runs `f` on the store.
    fn with<R>(&mut self, f: impl FnOnce(&mut Vcs) -> Result<R, String>) -> Result<R, String> {
        match &mut self.store {
            Store::Own(vcs) => f(vcs),
            Store::Shared(c) => c.with_vcs(f).map_err(|e| e.to_string())?,
        }
    }

    /// Records the project as a snapshot; returns its id (64 hexadecimal
    /// digits). The label is the effect's, kept in its journal record.
    ///
    /// # Errors
    ///
    /// When a file cannot be read or the store cannot be written.
    pub fn snapshot(&mut self) -> Result<String, String> {
        self.with(|vcs| {
            vcs.snapshot()
                .map(|s| s.id.to_string())
                .map_err(|e| e.to_string())
        })
    }

    fn snapshot_id(&mut self, id: &str) -> Result<SnapshotId, String> {
        self.with(|vcs| vcs.resolve(id).map_err(|e| e.to_string()))
    }

    /// The full id (64 hexadecimal digits) of snapshot `id` (or a unique
    /// prefix of it).
    ///
    /// # Errors
    ///
    /// When `id` is not one of the store's snapshots.
    pub fn full_id(&mut self, id: &str) -> Result<String, String> {
        self.snapshot_id(id).map(|s| s.to_string())
    }

    /// Checks the ids that are not empty before anything runs.
    ///
    /// # Errors
    ///
    /// When an id is not one of the store's snapshots.
    pub fn check_ids(&mut self, ids: &[&str]) -> Result<(), String> {
        for id in ids.iter().filter(|id| !id.is_empty()) {
            self.snapshot_id(id)?;
        }
        Ok(())
    }

    /// The diff from snapshot `from` to snapshot `to`, or to the project as
    /// it is now when `to` is empty (which takes a snapshot).
    ///
    /// # Errors
    ///
    /// When an id is not a snapshot or the store fails.
    pub fn diff(&mut self, from: &str, to: &str) -> Result<DiffText, String> {
        let mut text = self.with(|vcs| {
            let from = vcs.resolve(from).map_err(|e| e.to_string())?;
            let to = if to.is_empty() {
                vcs.snapshot().map_err(|e| e.to_string())?.id
            } else {
                vcs.resolve(to).map_err(|e| e.to_string())?
            };
            Ok(vcs.diff(from, to).map_err(|e| e.to_string())?.unified())
        })?;
        let truncated = text.len() > MAX_DIFF_BYTES;
        if truncated {
            // Cut at a character boundary at most MAX_DIFF_BYTES long.
            let mut cut = MAX_DIFF_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        Ok(DiffText { text, truncated })
    }

    /// Makes the project match snapshot `id`; returns the id of the
    /// snapshot of the project taken just before (restore it to undo).
    ///
    /// # Errors
    ///
    /// When `id` is not a snapshot, an ignored file is in the way, or a
    /// step fails; the project is then unchanged (every step is rolled
    /// back).
    pub fn restore(&mut self, id: &str) -> Result<String, String> {
        self.restore_report(id).map(|r| r.before.to_string())
    }

    /// [`Repo::restore`], returning the store's whole report (the
    /// snapshots before and after, the changes).
    ///
    /// # Errors
    ///
    /// As [`Repo::restore`].
    pub fn restore_report(&mut self, id: &str) -> Result<RestoreReport, String> {
        self.with(|vcs| {
            let target = vcs.resolve(id).map_err(|e| e.to_string())?;
            vcs.restore(target, &RestoreOptions::default())
                .map_err(|e| e.to_string())
        })
    }
}
