//! Garbage collection of the checkpoint stores when sessions go.
//!
//! A project's checkpoint store (`<data dir>/checkpoints/…`, see
//! `smith_engine::checkpoint::store_dir`) is shared by every session that
//! checkpointed that project. When sessions are deleted or pruned, the
//! stores of the projects they checkpointed are collected: the live
//! snapshots are every id (`before`, `after`, `target`) named by the VCS
//! entries of every remaining session — on all of its branches — for that
//! project root; every other snapshot, and every object no live snapshot
//! (nor the store's stat cache) reaches, is removed. Every surface that
//! removes sessions calls [`roots_of`] before and [`collect`] after.

use std::collections::BTreeSet;
use std::path::Path;

use smith_diag::Diagnostic;
use smith_engine::checkpoint_store::{
    Collected, all_vcs_records, collect as collect_store, live_snapshots,
};
use smith_store::{Session, Store};

/// The project roots `session`'s VCS entries name (all branches). A
/// session whose entries cannot be decoded names none.
pub fn roots_of(session: &Session) -> BTreeSet<String> {
    all_vcs_records(session)
        .map(|records| records.into_iter().map(|r| r.root).collect())
        .unwrap_or_default()
}

/// Collects the checkpoint stores (under `checkpoints_root`) of `roots`,
/// keeping every snapshot the sessions remaining in `store` name for each.
///
/// # Errors
///
/// A warning (the sessions asked for are gone either way) when a remaining
/// session cannot be read (nothing is collected then: its snapshots could
/// not be kept), or a store cannot be collected.
pub fn collect(
    store: &Store,
    checkpoints_root: &Path,
    roots: &BTreeSet<String>,
) -> Result<Vec<Collected>, Diagnostic> {
    if roots.is_empty() {
        return Ok(Vec::new());
    }
    let sessions = store.list().map_err(|e| {
        Diagnostic::warning(
            "checkpoint.gc-failed",
            format!("could not list the remaining sessions to collect the checkpoint stores: {e}"),
            "a snapshot is kept as long as a session names it, so every session must be read first",
            "fix the session store (`smith session repair`); the unused snapshots stay until a later delete or prune collects this project's store",
        )
    })?;
    let mut live: Vec<BTreeSet<String>> = vec![BTreeSet::new(); roots.len()];
    for info in sessions {
        let session = store.load(&info.id.to_hex()).map_err(|e| {
            Diagnostic::warning(
                "checkpoint.gc-failed",
                format!(
                    "could not read session {} to collect the checkpoint stores: {e}",
                    info.id
                ),
                "a snapshot is kept as long as a session names it, so nothing was collected (the sessions asked for are removed all the same)",
                "repair the session (`smith session repair ID`) or delete it; the unused snapshots stay until a later delete or prune collects this project's store",
            )
            .with_value(info.id)
        })?;
        let records = all_vcs_records(&session).map_err(|e| {
            Diagnostic::warning(
                "checkpoint.gc-failed",
                format!("could not read the checkpoints of session {}: {e}", info.id),
                "a snapshot is kept as long as a session names it, so nothing was collected (the sessions asked for are removed all the same)",
                "repair the session (`smith session repair ID`) or delete it; the unused snapshots stay until a later delete or prune collects this project's store",
            )
            .with_value(info.id)
        })?;
        for (root, live) in roots.iter().zip(live.iter_mut()) {
            live_snapshots(&records, root, live);
        }
    }
    let mut out = Vec::new();
    for (root, live) in roots.iter().zip(&live) {
        out.push(
            collect_store(checkpoints_root, root, live)
                .map_err(|e| Diagnostic::from(e).with_severity(smith_diag::Severity::Warning))?,
        );
    }
    Ok(out)
}

/// One line per collected store, for the commands' output.
pub fn lines(collected: &[Collected]) -> Vec<String> {
    collected
        .iter()
        .map(|c| match &c.report {
            None => format!("checkpoints of {}: no store", c.root),
            Some(r) => format!(
                "checkpoints of {}: removed {} snapshot(s) and {} object(s), freed {} byte(s); kept {} object(s)",
                c.root, r.snapshots_removed, r.objects_removed, r.bytes_freed, r.objects_kept
            ),
        })
        .collect()
}
