//! Automatic checkpoints of the project around mutating effects, and undo,
//! redo and restore over them.
//!
//! A [`Checkpoints`] wraps the project's `smith-vcs` store (one per
//! project, under smith's data directory: [`store_dir`]). When a tool
//! context carries one, the agent loop snapshots the project right before
//! and right after every mutating tool effect (`write`, `edit`, `bash` and
//! whatever a bash command's descendants changed before it returned) and
//! records a [`VcsRecord`] of kind [`VcsOp::Checkpoint`] naming the effect,
//! its tool, both snapshot ids and the paths that changed, as a
//! `vcs_operation` entry of the session (see [`crate::journal::store`]).
//! The stat cache of the store keeps a snapshot of an unchanged tree cheap:
//! nothing is read again.
//!
//! [`undo`], [`redo`] and [`restore`] change the project from those records
//! and record what they did as further `vcs_operation` entries ([`VcsOp::Undo`],
//! [`VcsOp::Redo`], [`VcsOp::Restore`]), so the session history says which
//! call changed a file and which command changed it back. Each refuses,
//! changing nothing, when the files it would touch changed outside smith
//! since the last snapshot smith took, unless forced; a dry run only lists
//! the changes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use smith_vcs::{
    ChangeKind, FileChange, ObjectId, ObjectKind, Options, RestoreOptions, RestoreReport,
    SnapshotId, Vcs, VcsError,
};

use crate::journal::{EffectJournal, JournalError, lock};

/// How to undo or redo (re-exported from `smith-vcs`).
pub use smith_vcs::UndoOptions;

/// The folder, under `checkpoints_root` (smith uses `<data dir>/checkpoints`),
/// that holds the store of the project rooted at `project`: named by the
/// first 32 hexadecimal digits of the SHA-256 of the project's canonical
/// path.
pub fn store_dir(checkpoints_root: &Path, project: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let id = ObjectId::of(ObjectKind::Blob, canonical.as_os_str().as_encoded_bytes()).to_string();
    checkpoints_root.join(&id[..32])
}

/// What a VCS entry of the session records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VcsOp {
    /// The snapshots before and after one mutating effect.
    Checkpoint,
    /// An effect undone: `before`/`after` are the project around the undo.
    Undo,
    /// An undone effect redone.
    Redo,
    /// The project restored to `target`.
    Restore,
}

impl VcsOp {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            VcsOp::Checkpoint => "checkpoint",
            VcsOp::Undo => "undo",
            VcsOp::Redo => "redo",
            VcsOp::Restore => "restore",
        }
    }
}

/// One VCS operation, as recorded in a `vcs_operation` session entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcsRecord {
    /// What was done.
    pub op: VcsOp,
    /// The project root (canonical).
    pub root: String,
    /// The effect that was checkpointed, undone or redone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_id: Option<String>,
    /// The tool of a checkpointed effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The snapshot of the project before (64 hex digits).
    pub before: String,
    /// The snapshot of the project after.
    pub after: String,
    /// The snapshot a restore went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The paths that changed from `before` to `after`, relative to the
    /// root.
    #[serde(default)]
    pub changed: Vec<String>,
    /// Whether an outside change was overridden.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
    /// Why a checkpoint could not be taken (then `before` or `after` may be
    /// empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The project's snapshot store, shared by the effects of a runtime.
pub struct Checkpoints {
    project: PathBuf,
    store: PathBuf,
    /// Opened on first use.
    vcs: Mutex<Option<Vcs>>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("project", &self.project)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Checkpoints {
    /// The store of `project` under `checkpoints_root` ([`store_dir`]),
    /// opened (and created when missing) on first use, so a runtime whose
    /// effects change nothing leaves nothing behind.
    pub fn lazy(project: &Path, checkpoints_root: &Path) -> Checkpoints {
        let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        Checkpoints {
            store: store_dir(checkpoints_root, &project),
            project,
            vcs: Mutex::new(None),
        }
    }

    /// Opens (creating when missing) the store of `project` under
    /// `checkpoints_root` now.
    ///
    /// # Errors
    ///
    /// When the project is not a folder or the store cannot be created.
    pub fn open(project: &Path, checkpoints_root: &Path) -> Result<Checkpoints, VcsError> {
        let c = Checkpoints::lazy(project, checkpoints_root);
        c.with_vcs(|_| ())?;
        Ok(c)
    }

    /// Runs `f` on the store, opening it first if needed.
    ///
    /// # Errors
    ///
    /// When the store cannot be opened.
    pub fn with_vcs<R>(&self, f: impl FnOnce(&mut Vcs) -> R) -> Result<R, VcsError> {
        let mut slot = lock(&self.vcs);
        let vcs = match &mut *slot {
            Some(vcs) => vcs,
            empty => empty.insert(Vcs::open(&self.project, &self.store, Options::default())?),
        };
        Ok(f(vcs))
    }

    /// The project root (canonical), as records name it.
    pub fn root(&self) -> String {
        self.project.display().to_string()
    }

    /// Snapshots the project before an effect.
    pub(crate) fn before(&self) -> Result<SnapshotId, VcsError> {
        self.with_vcs(|vcs| vcs.snapshot().map(|s| s.id))?
    }

    /// Snapshots the project after the effect whose `before` snapshot was
    /// taken (or failed), and builds its record.
    pub(crate) fn after(
        &self,
        effect_id: &str,
        tool: &str,
        before: Result<SnapshotId, VcsError>,
    ) -> VcsRecord {
        let mut record = VcsRecord {
            op: VcsOp::Checkpoint,
            root: self.root(),
            effect_id: Some(effect_id.to_owned()),
            tool: Some(tool.to_owned()),
            before: String::new(),
            after: String::new(),
            target: None,
            changed: Vec::new(),
            forced: false,
            error: None,
        };
        let done = self.with_vcs(|vcs| {
            let after = vcs.snapshot().map(|s| s.id);
            if let Ok(id) = &before {
                record.before = id.to_string();
            }
            if let Ok(id) = &after {
                record.after = id.to_string();
            }
            match (before, after) {
                (Ok(b), Ok(a)) => match vcs.changes(b, a) {
                    Ok(changes) => record.changed = paths(&changes),
                    Err(e) => record.error = Some(e.to_string()),
                },
                (Err(e), _) | (_, Err(e)) => record.error = Some(e.to_string()),
            }
        });
        if let Err(e) = done {
            record.error = Some(e.to_string());
        }
        record
    }
}

fn paths(changes: &[FileChange]) -> Vec<String> {
    changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect()
}

/// A checkpoint and whether its effect is undone now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointState<'a> {
    /// The checkpoint.
    pub record: &'a VcsRecord,
    /// Whether the last undo or redo of its effect was an undo.
    pub undone: bool,
}

/// The checkpoints among `records` (oldest first) of the project rooted at
/// `root`, each with whether it is undone now.
pub fn checkpoints<'a>(records: &'a [VcsRecord], root: &str) -> Vec<CheckpointState<'a>> {
    let mut out: Vec<CheckpointState<'a>> = Vec::new();
    for r in records.iter().filter(|r| r.root == root) {
        match r.op {
            VcsOp::Checkpoint => out.push(CheckpointState {
                record: r,
                undone: false,
            }),
            VcsOp::Undo | VcsOp::Redo => {
                if let Some(c) = out.iter_mut().find(|c| c.record.effect_id == r.effect_id) {
                    c.undone = r.op == VcsOp::Undo;
                }
            }
            VcsOp::Restore => {}
        }
    }
    out
}

/// The snapshot the project should match now: the `after` of the newest
/// record of `root` that has one.
pub fn expected(records: &[VcsRecord], root: &str) -> Option<String> {
    records
        .iter()
        .rev()
        .filter(|r| r.root == root && !r.after.is_empty())
        .map(|r| r.after.clone())
        .next()
}

/// Why a checkpoint command did nothing.
#[derive(Debug)]
pub enum CheckpointError {
    /// There is nothing to undo, redo or restore, or the effect named has
    /// no checkpoint; the message says what and what to do.
    Nothing(String),
    /// The store refused or failed (conflicts, unknown ids, I/O); the
    /// project is unchanged.
    Vcs(VcsError),
    /// The project changed but the session could not record it.
    Journal(JournalError),
}

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckpointError::Nothing(m) => f.write_str(m),
            CheckpointError::Vcs(e) => e.fmt(f),
            CheckpointError::Journal(e) => write!(
                f,
                "the files were changed but the session could not record it: {e}"
            ),
        }
    }
}

impl std::error::Error for CheckpointError {}

impl From<VcsError> for CheckpointError {
    fn from(e: VcsError) -> Self {
        CheckpointError::Vcs(e)
    }
}

fn snapshot_id(vcs: &mut Vcs, text: &str, what: &str) -> Result<SnapshotId, CheckpointError> {
    if text.is_empty() {
        return Err(CheckpointError::Nothing(format!(
            "the {what} snapshot of this checkpoint was never taken (the checkpoint recorded an error); choose another checkpoint"
        )));
    }
    Ok(vcs.resolve(text)?)
}

fn find<'a>(
    states: &'a [CheckpointState<'a>],
    effect: &str,
) -> Result<&'a CheckpointState<'a>, CheckpointError> {
    states
        .iter()
        .find(|c| c.record.effect_id.as_deref() == Some(effect))
        .ok_or_else(|| {
            CheckpointError::Nothing(format!(
                "effect {effect} has no checkpoint in this session for this project; `smith checkpoint list` shows the effects that have one"
            ))
        })
}

/// What an undo, redo or restore did (or would do, for a dry run).
#[derive(Debug)]
pub struct Applied {
    /// The record written to the session (not written for a dry run).
    pub record: VcsRecord,
    /// The store's report.
    pub report: RestoreReport,
}

fn apply(
    journal: &dyn EffectJournal,
    op: VcsOp,
    vcs: &Vcs,
    effect_id: Option<String>,
    target: Option<String>,
    forced: bool,
    report: RestoreReport,
) -> Result<Applied, CheckpointError> {
    let record = VcsRecord {
        op,
        root: vcs.root().display().to_string(),
        effect_id,
        tool: None,
        before: report.before.to_string(),
        after: report.after.to_string(),
        target,
        changed: paths(&report.changes),
        forced,
        error: None,
    };
    if !report.dry_run {
        journal
            .record_vcs(&record)
            .map_err(CheckpointError::Journal)?;
    }
    Ok(Applied { record, report })
}

/// Undoes effect `effect` (or, with `None`, the newest effect that changed
/// something and is not undone) of the project `vcs` records, from the
/// session's `records`; records the undo through `journal`.
///
/// # Errors
///
/// [`CheckpointError::Nothing`] when there is nothing to undo; the store's
/// conflict when the effect's paths changed since (unless `options.force`);
/// the journal's error when the undo could not be recorded.
pub fn undo(
    vcs: &mut Vcs,
    journal: &dyn EffectJournal,
    records: &[VcsRecord],
    effect: Option<&str>,
    options: UndoOptions,
) -> Result<Applied, CheckpointError> {
    let root = vcs.root().display().to_string();
    let states = checkpoints(records, &root);
    let state = match effect {
        Some(e) => find(&states, e)?,
        None => states
            .iter()
            .rev()
            .find(|c| !c.undone && !c.record.changed.is_empty() && c.record.error.is_none())
            .ok_or_else(|| {
                CheckpointError::Nothing(
                    "nothing to undo: no effect of this session changed the project, or every one is undone already; `smith checkpoint list` shows them".to_owned(),
                )
            })?,
    };
    let r = state.record;
    let before = snapshot_id(vcs, &r.before, "before")?;
    let after = snapshot_id(vcs, &r.after, "after")?;
    let report = vcs.undo(before, after, options)?;
    apply(
        journal,
        VcsOp::Undo,
        vcs,
        r.effect_id.clone(),
        None,
        options.force,
        report,
    )
}

/// Redoes effect `effect` (or, with `None`, the most recently undone one).
///
/// # Errors
///
/// As [`undo`].
pub fn redo(
    vcs: &mut Vcs,
    journal: &dyn EffectJournal,
    records: &[VcsRecord],
    effect: Option<&str>,
    options: UndoOptions,
) -> Result<Applied, CheckpointError> {
    let root = vcs.root().display().to_string();
    let states = checkpoints(records, &root);
    let effect_id = match effect {
        Some(e) => e.to_owned(),
        None => records
            .iter()
            .rev()
            .filter(|r| r.root == root && r.op == VcsOp::Undo)
            .filter_map(|r| r.effect_id.clone())
            .find(|id| {
                states
                    .iter()
                    .any(|c| c.undone && c.record.effect_id.as_deref() == Some(id))
            })
            .ok_or_else(|| {
                CheckpointError::Nothing(
                    "nothing to redo: no effect of this session is undone; `smith checkpoint list` shows them".to_owned(),
                )
            })?,
    };
    let r = find(&states, &effect_id)?.record;
    let before = snapshot_id(vcs, &r.before, "before")?;
    let after = snapshot_id(vcs, &r.after, "after")?;
    let report = vcs.redo(before, after, options)?;
    apply(
        journal,
        VcsOp::Redo,
        vcs,
        r.effect_id.clone(),
        None,
        options.force,
        report,
    )
}

/// Restores the project to the snapshot `target` names: a snapshot id (or
/// unique prefix), or an effect id (`fx-N`) for the project right after
/// that effect (right before it with `before_effect`). Refuses when files
/// changed since the last snapshot smith recorded in `records`, unless
/// `force`.
///
/// # Errors
///
/// As [`undo`].
pub fn restore(
    vcs: &mut Vcs,
    journal: &dyn EffectJournal,
    records: &[VcsRecord],
    target: &str,
    before_effect: bool,
    force: bool,
    dry_run: bool,
) -> Result<Applied, CheckpointError> {
    let root = vcs.root().display().to_string();
    let id = resolve_target(vcs, records, target, before_effect)?;
    let expected = match expected(records, &root) {
        Some(text) => Some(vcs.resolve(&text)?),
        None => None,
    };
    let report = vcs.restore(
        id,
        &RestoreOptions {
            expected,
            force,
            dry_run,
            paths: None,
        },
    )?;
    apply(
        journal,
        VcsOp::Restore,
        vcs,
        None,
        Some(id.to_string()),
        force,
        report,
    )
}

/// The snapshot `target` names: an effect id (`fx-N`: after it, or before
/// it with `before_effect`) or a snapshot id or unique prefix.
///
/// # Errors
///
/// When the effect has no checkpoint or the id is unknown.
pub fn resolve_target(
    vcs: &mut Vcs,
    records: &[VcsRecord],
    target: &str,
    before_effect: bool,
) -> Result<SnapshotId, CheckpointError> {
    if target.starts_with("fx-") {
        let root = vcs.root().display().to_string();
        let states = checkpoints(records, &root);
        let r = find(&states, target)?.record;
        return if before_effect {
            snapshot_id(vcs, &r.before, "before")
        } else {
            snapshot_id(vcs, &r.after, "after")
        };
    }
    Ok(vcs.resolve(target)?)
}

/// A one-letter code for a change, as `git status --short` writes them
/// (`A`, `D`, `M`, `T`; a mode change is `M`).
pub fn change_code(kind: ChangeKind) -> char {
    match kind {
        ChangeKind::Added => 'A',
        ChangeKind::Removed => 'D',
        ChangeKind::Modified | ChangeKind::ModeChanged => 'M',
        ChangeKind::TypeChanged => 'T',
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::journal::MemoryJournal;

    fn project() -> (tempfile::TempDir, tempfile::TempDir, Checkpoints) {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
        }
        let data = tempfile::tempdir().unwrap();
        let c = Checkpoints::open(dir.path(), data.path()).unwrap();
        (dir, data, c)
    }

    #[test]
    fn a_checkpoint_names_its_effect_and_what_changed_and_keeps_the_stat_cache() {
        let (dir, data, c) = project();
        assert!(store_dir(data.path(), dir.path()).join("objects").is_dir());
        std::thread::sleep(std::time::Duration::from_nanos(
            3 * smith_vcs::RACY_MARGIN_NS as u64,
        ));
        let before = c.before();
        std::fs::write(dir.path().join("f7.txt"), "seven\n").unwrap();
        std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
        // Past the window in which the file-system clock is too coarse for
        // the stat cache to trust a timestamp.
        std::thread::sleep(std::time::Duration::from_nanos(
            3 * smith_vcs::RACY_MARGIN_NS as u64,
        ));
        let record = c.after("fx-3", "bash", before);
        assert_eq!(record.op, VcsOp::Checkpoint);
        assert_eq!(record.effect_id.as_deref(), Some("fx-3"));
        assert_eq!(record.tool.as_deref(), Some("bash"));
        assert_eq!(record.changed, ["f7.txt", "new.txt"]);
        assert_eq!(record.error, None);
        assert_ne!(record.before, record.after);
        // The next checkpoint of the unchanged tree reads no file again.
        let again = c.with_vcs(Vcs::snapshot).unwrap().unwrap();
        assert_eq!(again.files_read, 0);
        assert_eq!(again.id.to_string(), record.after);
        let idle = c.after("fx-4", "bash", c.before());
        assert!(idle.changed.is_empty());
        assert_eq!(idle.before, idle.after);
    }

    #[test]
    fn undo_and_redo_follow_the_records_and_record_themselves() {
        let (dir, _data, c) = project();
        let journal = MemoryJournal::new();
        let before = c.before();
        std::fs::write(dir.path().join("f1.txt"), "one\n").unwrap();
        journal
            .record_vcs(&c.after("fx-1", "edit", before))
            .unwrap();
        let idle = c.before();
        journal.record_vcs(&c.after("fx-2", "bash", idle)).unwrap();

        let mut guard = lock(&c.vcs);
        let vcs = guard.as_mut().unwrap();
        let dry = undo(
            vcs,
            &journal,
            &journal.vcs_records(),
            None,
            UndoOptions {
                force: false,
                dry_run: true,
            },
        )
        .unwrap();
        assert_eq!(
            dry.record.effect_id.as_deref(),
            Some("fx-1"),
            "fx-2 changed nothing"
        );
        assert_eq!(journal.vcs_records().len(), 2, "a dry run records nothing");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f1.txt")).unwrap(),
            "one\n"
        );

        let done = undo(
            vcs,
            &journal,
            &journal.vcs_records(),
            None,
            UndoOptions::default(),
        )
        .unwrap();
        assert_eq!(done.record.op, VcsOp::Undo);
        assert_eq!(done.record.changed, ["f1.txt"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f1.txt")).unwrap(),
            "1\n"
        );
        let nothing = undo(
            vcs,
            &journal,
            &journal.vcs_records(),
            None,
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(nothing.to_string().contains("nothing to undo"), "{nothing}");

        let root = vcs.root().display().to_string();
        let records = journal.vcs_records();
        let states = checkpoints(&records, &root);
        assert!(states[0].undone && !states[1].undone);

        let done = redo(
            vcs,
            &journal,
            &journal.vcs_records(),
            None,
            UndoOptions::default(),
        )
        .unwrap();
        assert_eq!(done.record.op, VcsOp::Redo);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f1.txt")).unwrap(),
            "one\n"
        );
        let nothing = redo(
            vcs,
            &journal,
            &journal.vcs_records(),
            None,
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(nothing.to_string().contains("nothing to redo"), "{nothing}");
        let unknown = undo(
            vcs,
            &journal,
            &journal.vcs_records(),
            Some("fx-9"),
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(
            unknown.to_string().contains("fx-9 has no checkpoint"),
            "{unknown}"
        );

        // An outside change: undo is refused and changes nothing.
        std::fs::write(dir.path().join("f1.txt"), "outside\n").unwrap();
        let refused = undo(
            vcs,
            &journal,
            &journal.vcs_records(),
            None,
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(
            matches!(refused, CheckpointError::Vcs(ref e) if e.kind() == smith_vcs::ErrorKind::Conflict),
            "{refused}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f1.txt")).unwrap(),
            "outside\n"
        );
        assert_eq!(journal.vcs_records().len(), 4);
    }
}
