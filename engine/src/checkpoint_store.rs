//! The checkpoint stores across sessions: every snapshot a session's VCS
//! entries name (on all of its branches), and garbage collection of a
//! project's store down to the snapshots the remaining sessions name.

use std::collections::BTreeSet;
use std::path::Path;

use smith_store::{EntryKind, Session};
use smith_vcs::{GcReport, Options, SnapshotId, Vcs, VcsError};

use crate::checkpoint::{VcsRecord, store_dir};
use crate::journal::JournalError;
use crate::journal::store::decode_json;

/// Every VCS entry of `session`, on all of its branches (not only the
/// selected one), in entry order.
///
/// # Errors
///
/// When an entry's content cannot be decoded; the error names the entry.
pub fn all_vcs_records(session: &Session) -> Result<Vec<VcsRecord>, JournalError> {
    session
        .records()
        .iter()
        .filter(|r| r.entry_kind() == EntryKind::VcsOperation)
        .map(|record| {
            let value = decode_json(session, record)?;
            serde_json::from_value(value).map_err(|err| {
                JournalError::new(format!(
                    "session entry {} is not a VCS operation this build understands: {err}",
                    record.id
                ))
            })
        })
        .collect()
}

/// The snapshot ids (`before`, `after`, `target`) `records` name for the
/// project rooted at `root`, added to `live`.
pub fn live_snapshots(records: &[VcsRecord], root: &str, live: &mut BTreeSet<String>) {
    for r in records.iter().filter(|r| r.root == root) {
        for id in [Some(&r.before), Some(&r.after), r.target.as_ref()]
            .into_iter()
            .flatten()
        {
            if !id.is_empty() {
                live.insert(id.clone());
            }
        }
    }
}

/// What [`collect`] did for one project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collected {
    /// The project root.
    pub root: String,
    /// The store's report; `None` when the project has no store.
    pub report: Option<GcReport>,
}

/// Collects the checkpoint store of the project rooted at `root` (under
/// `checkpoints_root`, smith's `<data dir>/checkpoints`): removes every
/// snapshot not in `live` and every object no live snapshot (nor the stat
/// cache) reaches. Live ids no longer stored are left out (a snapshot an
/// earlier collection or a lost write removed cannot be kept).
///
/// # Errors
///
/// When the store cannot be opened or an object cannot be removed.
pub fn collect(
    checkpoints_root: &Path,
    root: &str,
    live: &BTreeSet<String>,
) -> Result<Collected, VcsError> {
    let store = store_dir(checkpoints_root, Path::new(root));
    if !store.is_dir() {
        return Ok(Collected {
            root: root.to_owned(),
            report: None,
        });
    }
    // The project folder may be gone; the store is then opened over the
    // folder that holds it (no snapshot is taken, so nothing is scanned
    // and the stat cache stays as it is).
    let project = if Path::new(root).is_dir() {
        Path::new(root)
    } else {
        checkpoints_root
    };
    let mut vcs = Vcs::open(project, &store, Options::default())?;
    let mut ids: Vec<SnapshotId> = Vec::new();
    for text in live {
        if let Ok(id) = vcs.resolve(text) {
            ids.push(id);
        }
    }
    let report = vcs.gc(&ids)?;
    Ok(Collected {
        root: root.to_owned(),
        report: Some(report),
    })
}
