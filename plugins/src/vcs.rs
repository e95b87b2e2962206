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

use std::path::Path;

use smith_vcs::{Options, RestoreOptions, SnapshotId, Vcs};

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
    vcs: Vcs,
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
        Ok(Repo { vcs })
    }

    /// The project folder (canonical).
    pub fn root(&self) -> &Path {
        self.vcs.root()
    }

    /// Records the project as a snapshot; returns its id (64 hexadecimal
    /// digits). The label is the effect's, kept in its journal record.
    ///
    /// # Errors
    ///
    /// When a file cannot be read or the store cannot be written.
    pub fn snapshot(&mut self) -> Result<String, String> {
        self.vcs
            .snapshot()
            .map(|s| s.id.to_string())
            .map_err(|e| e.to_string())
    }

    fn snapshot_id(&mut self, id: &str) -> Result<SnapshotId, String> {
        self.vcs.resolve(id).map_err(|e| e.to_string())
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
        let from = self.snapshot_id(from)?;
        let to = if to.is_empty() {
            self.vcs.snapshot().map_err(|e| e.to_string())?.id
        } else {
            self.snapshot_id(to)?
        };
        let mut text = self
            .vcs
            .diff(from, to)
            .map_err(|e| e.to_string())?
            .unified();
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
        let target = self.snapshot_id(id)?;
        self.vcs
            .restore(target, &RestoreOptions::default())
            .map(|report| report.before.to_string())
            .map_err(|e| e.to_string())
    }
}
