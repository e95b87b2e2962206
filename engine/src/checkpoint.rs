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
    SnapshotId, VcsError,
};

use crate::journal::store::{StoreJournal, timeline};
use crate::journal::{EffectJournal, JournalError, lock};

/// How to undo or redo (re-exported from `smith-vcs`).
pub use smith_vcs::UndoOptions;
/// The project's snapshot store (re-exported from `smith-vcs`).
pub use smith_vcs::Vcs;

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
    /// Files and transcript rewound to the project as it was at `entry`
    /// (a user prompt): `target` is that snapshot, and the record is the
    /// first entry of the new branch.
    Rewind,
}

impl VcsOp {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            VcsOp::Checkpoint => "checkpoint",
            VcsOp::Undo => "undo",
            VcsOp::Redo => "redo",
            VcsOp::Restore => "restore",
            VcsOp::Rewind => "rewind",
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
    /// The turn an undo or redo of a whole turn covered: the entry id of
    /// its user prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The effects an undo or redo of a turn covered (each counts as undone
    /// or redone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<String>,
    /// The entry (a user prompt) a rewind went back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<u64>,
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
    ///
    /// # Errors
    ///
    /// When the store cannot be opened or the snapshot fails (the effect
    /// runs anyway; [`Checkpoints::after`] records why).
    pub fn before(&self) -> Result<SnapshotId, VcsError> {
        self.with_vcs(|vcs| vcs.snapshot().map(|s| s.id))?
    }

    /// Snapshots the project after the effect whose `before` snapshot was
    /// taken (or failed), and builds its record.
    pub fn after(
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
            turn: None,
            effects: Vec::new(),
            entry: None,
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
                for effect in covered(r) {
                    if let Some(c) = out
                        .iter_mut()
                        .find(|c| c.record.effect_id.as_deref() == Some(effect))
                    {
                        c.undone = r.op == VcsOp::Undo;
                    }
                }
            }
            VcsOp::Restore | VcsOp::Rewind => {}
        }
    }
    out
}

/// The effects an undo or redo covers: its turn's effects, else its
/// effect.
fn covered(r: &VcsRecord) -> impl Iterator<Item = &str> {
    let one = if r.effects.is_empty() {
        r.effect_id.as_deref()
    } else {
        None
    };
    r.effects.iter().map(String::as_str).chain(one)
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
        turn: None,
        effects: Vec::new(),
        entry: None,
        before: report.before.to_string(),
        after: report.after.to_string(),
        target,
        changed: paths(&report.changes),
        forced,
        error: None,
    };
    finish(journal, record, report)
}

/// Writes `record` (unless the report is a dry run's).
fn finish(
    journal: &dyn EffectJournal,
    record: VcsRecord,
    report: RestoreReport,
) -> Result<Applied, CheckpointError> {
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
            .flat_map(|r| covered(r).collect::<Vec<_>>().into_iter().rev())
            .find(|id| {
                states
                    .iter()
                    .any(|c| c.undone && c.record.effect_id.as_deref() == Some(*id))
            })
            .map(str::to_owned)
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

/// One item of the selected branch that turns and rewinds are built from
/// (read from a session by [`crate::journal::store::timeline`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A user prompt: the start of an agent turn.
    Prompt {
        /// The prompt's entry id.
        entry: u64,
        /// Its parent's entry id (0 for a root).
        parent: u64,
        /// What the user wrote.
        text: String,
    },
    /// A VCS operation.
    Vcs {
        /// The entry id.
        entry: u64,
        /// What it recorded.
        record: Box<VcsRecord>,
    },
}

/// One agent turn of the selected branch: a user prompt and what follows
/// it up to the next one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The turn's number along the branch, from 1.
    pub number: usize,
    /// The entry id of its user prompt.
    pub entry: u64,
    /// The prompt's parent entry (where a rewind continues the session).
    pub parent: u64,
    /// What the user wrote.
    pub prompt: String,
    /// The checkpoints of the project taken during the turn, oldest first.
    pub checkpoints: Vec<VcsRecord>,
    /// The paths its effects changed, in path order, each once.
    pub changed: Vec<String>,
    /// Whether every effect of the turn that changed something is undone.
    pub undone: bool,
    /// Whether some (not necessarily all) of them are undone.
    pub partly_undone: bool,
}

impl Turn {
    /// The prompt's first line, cut to 60 characters.
    pub fn preview(&self) -> String {
        let line = self.prompt.lines().next().unwrap_or("");
        let mut out: String = line.chars().take(60).collect();
        if line.chars().count() > 60 || self.prompt.lines().nth(1).is_some() {
            out.push('…');
        }
        out
    }

    /// The checkpoints that changed something and recorded both snapshots.
    fn changing(&self) -> impl Iterator<Item = &VcsRecord> {
        self.checkpoints
            .iter()
            .filter(|r| !r.changed.is_empty() && r.error.is_none())
    }

    /// The project right before the turn's first change and right after
    /// its last one (snapshot ids); `None` when it changed nothing.
    pub fn span(&self) -> Option<(&str, &str)> {
        let first = self.changing().next()?;
        let last = self.changing().last()?;
        Some((&first.before, &last.after))
    }

    /// The effects of the turn that changed something.
    pub fn effects(&self) -> Vec<String> {
        self.changing()
            .filter_map(|r| r.effect_id.clone())
            .collect()
    }
}

/// The VCS records of `timeline`, oldest first.
pub fn records_of(timeline: &[Step]) -> Vec<VcsRecord> {
    timeline
        .iter()
        .filter_map(|s| match s {
            Step::Vcs { record, .. } => Some(VcsRecord::clone(record)),
            Step::Prompt { .. } => None,
        })
        .collect()
}

/// The agent turns of `timeline` (the selected branch), oldest first,
/// each with the checkpoints of the project rooted at `root` taken
/// during it. Checkpoints before the first prompt belong to no turn.
pub fn turns(timeline: &[Step], root: &str) -> Vec<Turn> {
    let records = records_of(timeline);
    let states = checkpoints(&records, root);
    let undone = |r: &VcsRecord| {
        states
            .iter()
            .any(|s| s.undone && s.record.effect_id == r.effect_id)
    };
    let mut out: Vec<Turn> = Vec::new();
    for step in timeline {
        match step {
            Step::Prompt {
                entry,
                parent,
                text,
            } => out.push(Turn {
                number: out.len() + 1,
                entry: *entry,
                parent: *parent,
                prompt: text.clone(),
                checkpoints: Vec::new(),
                changed: Vec::new(),
                undone: false,
                partly_undone: false,
            }),
            Step::Vcs { record, .. } => {
                if let Some(turn) = out.last_mut()
                    && record.op == VcsOp::Checkpoint
                    && record.root == root
                {
                    turn.checkpoints.push(VcsRecord::clone(record));
                }
            }
        }
    }
    for turn in &mut out {
        let mut changed: Vec<String> = turn
            .changing()
            .flat_map(|r| r.changed.iter().cloned())
            .collect();
        changed.sort();
        changed.dedup();
        turn.changed = changed;
        let flags: Vec<bool> = turn.changing().map(undone).collect();
        turn.undone = !flags.is_empty() && flags.iter().all(|u| *u);
        turn.partly_undone = flags.iter().any(|u| *u);
    }
    out
}

/// Which turn an undo or redo of a turn is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnRef {
    /// The default: the newest turn that changed files and is not undone
    /// (undo), or the turn most recently undone (redo).
    Latest,
    /// The turn of this number (as [`turns`] numbers them).
    Number(usize),
    /// The turn whose user prompt is this entry.
    Entry(u64),
}

fn pick(list: &[Turn], which: TurnRef) -> Result<&Turn, CheckpointError> {
    let found = match which {
        TurnRef::Number(n) => list.iter().find(|t| t.number == n),
        TurnRef::Entry(e) => list.iter().find(|t| t.entry == e),
        TurnRef::Latest => None,
    };
    found.ok_or_else(|| {
        let what = match which {
            TurnRef::Number(n) => format!("turn {n}"),
            TurnRef::Entry(e) => format!("entry {e}"),
            TurnRef::Latest => "the latest turn".to_owned(),
        };
        CheckpointError::Nothing(format!(
            "{what} is not a turn of the session's selected branch (it has {} turn{}); `smith checkpoint turns` lists them",
            list.len(),
            if list.len() == 1 { "" } else { "s" }
        ))
    })
}

/// Undoes a whole agent turn: one restore, at the paths that differ
/// between the turn's first `before` and last `after`, of their content
/// before the turn; refused when those paths changed since (unless
/// `options.force`). Recorded as an `undo` naming the turn and its effects.
///
/// # Errors
///
/// [`CheckpointError::Nothing`] when there is no such turn or it changed
/// nothing; otherwise as [`undo`].
pub fn undo_turn(
    vcs: &mut Vcs,
    journal: &dyn EffectJournal,
    timeline: &[Step],
    which: TurnRef,
    options: UndoOptions,
) -> Result<Applied, CheckpointError> {
    turn_op(vcs, journal, timeline, which, options, true)
}

/// Redoes a whole agent turn undone before (see [`undo_turn`]).
///
/// # Errors
///
/// As [`undo_turn`].
pub fn redo_turn(
    vcs: &mut Vcs,
    journal: &dyn EffectJournal,
    timeline: &[Step],
    which: TurnRef,
    options: UndoOptions,
) -> Result<Applied, CheckpointError> {
    turn_op(vcs, journal, timeline, which, options, false)
}

fn turn_op(
    vcs: &mut Vcs,
    journal: &dyn EffectJournal,
    timeline: &[Step],
    which: TurnRef,
    options: UndoOptions,
    undo: bool,
) -> Result<Applied, CheckpointError> {
    let root = vcs.root().display().to_string();
    let list = turns(timeline, &root);
    let turn = match (which, undo) {
        (TurnRef::Latest, true) => list
            .iter()
            .rev()
            .find(|t| t.span().is_some() && !t.undone)
            .ok_or_else(|| {
                CheckpointError::Nothing(
                    "nothing to undo: no turn of this session changed the project, or every one is undone already; `smith checkpoint turns` shows them".to_owned(),
                )
            })?,
        (TurnRef::Latest, false) => records_of(timeline)
            .iter()
            .rev()
            .filter(|r| r.root == root && r.op == VcsOp::Undo)
            .find_map(|r| {
                list.iter().find(|t| {
                    t.partly_undone
                        && (r.turn == Some(t.entry)
                            || t.checkpoints.iter().any(|c| {
                                c.effect_id.is_some() && c.effect_id == r.effect_id
                            }))
                })
            })
            .ok_or_else(|| {
                CheckpointError::Nothing(
                    "nothing to redo: no turn of this session is undone; `smith checkpoint turns` shows them".to_owned(),
                )
            })?,
        (which, _) => pick(&list, which)?,
    };
    let Some((before, after)) = turn.span() else {
        return Err(CheckpointError::Nothing(format!(
            "turn {} ({}) changed no file, so there is nothing to {}; `smith checkpoint turns` shows what each turn changed",
            turn.number,
            turn.preview(),
            if undo { "undo" } else { "redo" }
        )));
    };
    let before = snapshot_id(vcs, before, "before")?;
    let after = snapshot_id(vcs, after, "after")?;
    let report = if undo {
        vcs.undo(before, after, options)?
    } else {
        vcs.redo(before, after, options)?
    };
    let record = VcsRecord {
        op: if undo { VcsOp::Undo } else { VcsOp::Redo },
        root,
        effect_id: None,
        tool: None,
        turn: Some(turn.entry),
        effects: turn.effects(),
        entry: None,
        before: report.before.to_string(),
        after: report.after.to_string(),
        target: None,
        changed: paths(&report.changes),
        forced: options.force,
        error: None,
    };
    finish(journal, record, report)
}

/// What a rewind did (or, for a dry run, would do).
#[derive(Debug)]
pub struct Rewound {
    /// The user prompt rewound to.
    pub entry: u64,
    /// Its text (to be written again, or changed).
    pub prompt: String,
    /// The entry the session now continues from: the prompt's parent.
    pub leaf: u64,
    /// The leaf-switch entry that started the new branch (`None` for a dry
    /// run).
    pub switch_entry: Option<u64>,
    /// What happened to the files: `None` when the session has no
    /// checkpoints of the project, so only the transcript was rewound.
    pub files: Option<Applied>,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
}

/// How to rewind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewindOptions {
    /// Go ahead even when files changed outside smith since the last
    /// snapshot smith took.
    pub force: bool,
    /// Change nothing; list what would change.
    pub dry_run: bool,
}

/// Rewinds files and transcript together to user prompt `entry` of the
/// session's selected branch: the files smith changed after it go back to
/// how they were right before it (files smith never touched are left
/// alone), then the session continues on a new branch from the prompt's
/// parent (the old branch stays), whose first entry is a `rewind` VCS
/// record. `vcs` is the project's store, `None` when it has none (then
/// only the transcript is rewound).
///
/// The target snapshot is the `after` of the newest VCS record before the
/// prompt, else the `before` of the first one after it. Refused, changing
/// nothing, when files changed outside smith since the last snapshot
/// smith took, unless `options.force`; a dry run writes nothing.
///
/// # Errors
///
/// [`CheckpointError::Nothing`] when `entry` is not a user prompt of the
/// selected branch or is its first entry; the store's conflict; the
/// journal's error when the session could not be written.
pub fn rewind(
    vcs: Option<&mut Vcs>,
    journal: &StoreJournal,
    entry: u64,
    options: RewindOptions,
) -> Result<Rewound, CheckpointError> {
    let timeline = journal
        .with_session(timeline)
        .map_err(CheckpointError::Journal)?;
    let found = timeline.iter().enumerate().find_map(|(i, s)| match s {
        Step::Prompt {
            entry: e,
            parent,
            text,
        } if *e == entry => Some((i, *parent, text.clone())),
        _ => None,
    });
    let Some((at, parent, text)) = found else {
        return Err(CheckpointError::Nothing(format!(
            "entry {entry} is not a user prompt on the session's selected branch; rewind goes back to a prompt: `smith checkpoint turns` lists them with their entry ids"
        )));
    };
    if parent == 0 {
        return Err(CheckpointError::Nothing(format!(
            "entry {entry} is the session's first entry, so there is no earlier point to continue from; start a new session instead"
        )));
    }
    let files = match vcs {
        Some(vcs) => rewind_files(vcs, &timeline, at, entry, options)?,
        None => None,
    };
    let mut done = Rewound {
        entry,
        prompt: text,
        leaf: parent,
        switch_entry: None,
        files: None,
        dry_run: options.dry_run,
    };
    if options.dry_run {
        done.files = files.map(|(record, report)| Applied { record, report });
        return Ok(done);
    }
    done.switch_entry = Some(
        journal
            .select_leaf(parent)
            .map_err(CheckpointError::Journal)?,
    );
    done.files = match files {
        Some((record, report)) => Some(finish(journal, record, report)?),
        None => None,
    };
    Ok(done)
}

/// [`rewind`] of the project rooted at `project`, whose store lies under
/// `checkpoints_root` ([`store_dir`]); when it has no store (or smith has
/// no data directory), the transcript alone.
///
/// # Errors
///
/// As [`rewind`]; also when the store cannot be opened.
pub fn rewind_project(
    project: &Path,
    checkpoints_root: Option<&Path>,
    journal: &StoreJournal,
    entry: u64,
    options: RewindOptions,
) -> Result<Rewound, CheckpointError> {
    match checkpoints_root.filter(|r| store_dir(r, project).is_dir()) {
        Some(root) => Checkpoints::lazy(project, root)
            .with_vcs(|vcs| rewind(Some(vcs), journal, entry, options))?,
        None => rewind(None, journal, entry, options),
    }
}

/// The project root as VCS records name it: `project`'s canonical path.
pub fn project_root(project: &Path) -> String {
    std::fs::canonicalize(project)
        .unwrap_or_else(|_| project.to_path_buf())
        .display()
        .to_string()
}

/// The file half of a rewind to the prompt at `timeline[at]`: the restore
/// done (or planned) and its record, `None` when the branch has no
/// checkpoints of the project.
fn rewind_files(
    vcs: &mut Vcs,
    timeline: &[Step],
    at: usize,
    entry: u64,
    options: RewindOptions,
) -> Result<Option<(VcsRecord, RestoreReport)>, CheckpointError> {
    let root = vcs.root().display().to_string();
    let mine = |s: &Step| match s {
        Step::Vcs { record, .. } if record.root == root => Some(VcsRecord::clone(record)),
        _ => None,
    };
    let earlier: Vec<VcsRecord> = timeline[..at].iter().filter_map(mine).collect();
    let later: Vec<VcsRecord> = timeline[at..].iter().filter_map(mine).collect();
    let target = earlier
        .iter()
        .rev()
        .map(|r| &r.after)
        .chain(later.iter().map(|r| &r.before))
        .find(|id| !id.is_empty());
    let Some(target) = target else {
        return Ok(None);
    };
    let target = vcs.resolve(target)?;
    let mut changed: Vec<PathBuf> = later
        .iter()
        .flat_map(|r| r.changed.iter().map(PathBuf::from))
        .collect();
    changed.sort();
    changed.dedup();
    let all = records_of(timeline);
    let expected = match expected(&all, &root) {
        Some(text) => Some(vcs.resolve(&text)?),
        None => None,
    };
    if let Some(now) = expected {
        changed.extend(vanished_folders(vcs, target, now, &changed)?);
    }
    let report = if changed.is_empty() {
        // Nothing changed since: the project stays as it is.
        let now = match expected {
            Some(id) => id,
            None => target,
        };
        RestoreReport {
            before: now,
            after: now,
            changes: Vec::new(),
            kept: Vec::new(),
            dry_run: options.dry_run,
        }
    } else {
        vcs.restore(
            target,
            &RestoreOptions {
                expected,
                force: options.force,
                dry_run: options.dry_run,
                paths: Some(changed),
            },
        )?
    };
    let record = VcsRecord {
        op: VcsOp::Rewind,
        root,
        effect_id: None,
        tool: None,
        turn: None,
        effects: Vec::new(),
        entry: Some(entry),
        before: report.before.to_string(),
        after: report.after.to_string(),
        target: Some(target.to_string()),
        changed: paths(&report.changes),
        forced: options.force,
        error: None,
    };
    Ok(Some((record, report)))
}

/// The folders above `changed` paths that the project as recorded in
/// `now` holds and `target` does not: every file under such a folder on
/// disk was added since `target`. A restore of `changed` alone would empty
/// them but leave them standing; naming them removes them with their
/// content (what else lies there now differs from `now` and is refused as
/// an outside change). The top-most such folder of each path is listed.
fn vanished_folders(
    vcs: &mut Vcs,
    target: SnapshotId,
    now: SnapshotId,
    changed: &[PathBuf],
) -> Result<Vec<PathBuf>, CheckpointError> {
    let added: std::collections::HashSet<PathBuf> = vcs
        .changes(target, now)?
        .into_iter()
        .filter(|c| c.old.is_none())
        .map(|c| c.path)
        .collect();
    let root = vcs.root().to_path_buf();
    let mut out: Vec<PathBuf> = Vec::new();
    for path in changed {
        let mut folder = PathBuf::new();
        let Some(parent) = path.parent() else {
            continue;
        };
        for part in parent.components() {
            folder.push(part);
            if out.contains(&folder) {
                break;
            }
            let on_disk = root.join(&folder);
            let is_dir = std::fs::symlink_metadata(&on_disk).is_ok_and(|m| m.is_dir());
            if is_dir && all_added(&root, &on_disk, &added) {
                out.push(folder.clone());
                break;
            }
        }
    }
    Ok(out)
}

/// Whether every file and symlink under `dir` (on disk) is in `added`.
fn all_added(root: &Path, dir: &Path, added: &std::collections::HashSet<PathBuf>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.into_iter().all(|e| {
        let Ok(e) = e else { return false };
        let path = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => all_added(root, &path, added),
            Ok(_) => path.strip_prefix(root).is_ok_and(|rel| added.contains(rel)),
            Err(_) => false,
        }
    })
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

    /// A session in a store, and a project with checkpoints.
    struct Fixture {
        dir: tempfile::TempDir,
        _data: tempfile::TempDir,
        _sessions: tempfile::TempDir,
        c: Checkpoints,
        journal: StoreJournal,
    }

    fn fixture() -> Fixture {
        use crate::journal::{SessionEvent, SessionSink};
        let (dir, data, c) = project();
        let sessions = tempfile::tempdir().unwrap();
        let store = smith_store::Store::open(sessions.path()).unwrap();
        let session = store.create(None).unwrap();
        let journal = StoreJournal::new(store, session);
        journal
            .record(&SessionEvent::ModelChange {
                provider: "p".into(),
                model: "m".into(),
            })
            .unwrap();
        Fixture {
            dir,
            _data: data,
            _sessions: sessions,
            c,
            journal,
        }
    }

    impl Fixture {
        fn prompt(&self, text: &str) -> u64 {
            use crate::journal::{SessionEvent, SessionSink};
            self.journal
                .record(&SessionEvent::Message {
                    message: crate::provider::Message::user(text),
                    meta: Default::default(),
                })
                .unwrap();
            self.journal.with_session(|s| s.leaf().unwrap().id)
        }

        fn effect(&self, id: &str, change: impl FnOnce(&Path)) {
            let before = self.c.before();
            change(self.dir.path());
            self.journal
                .record_vcs(&self.c.after(id, "bash", before))
                .unwrap();
        }

        fn read(&self, name: &str) -> Option<String> {
            std::fs::read_to_string(self.dir.path().join(name)).ok()
        }

        fn timeline(&self) -> Vec<Step> {
            self.journal.with_session(timeline).unwrap()
        }

        fn entries(&self) -> usize {
            self.journal.with_session(|s| s.records().len())
        }

        /// Three turns: f1 and a new file, nothing, then f2 and f1 again
        /// plus the removal of f3.
        fn three_turns(&self) -> [u64; 3] {
            let one = self.prompt("first\nwith a second line");
            self.effect("fx-1", |d| {
                std::fs::write(d.join("f1.txt"), "one\n").unwrap()
            });
            self.effect("fx-2", |d| {
                std::fs::write(d.join("new.txt"), "new\n").unwrap();
                std::fs::create_dir_all(d.join("sub/deep")).unwrap();
                std::fs::write(d.join("sub/deep/x.txt"), "x\n").unwrap();
            });
            let two = self.prompt("second");
            self.effect("fx-3", |_| ());
            let three = self.prompt("third");
            self.effect("fx-4", |d| {
                std::fs::write(d.join("f2.txt"), "two\n").unwrap();
                std::fs::write(d.join("f1.txt"), "uno\n").unwrap();
            });
            self.effect("fx-5", |d| std::fs::remove_file(d.join("f3.txt")).unwrap());
            [one, two, three]
        }
    }

    /// Every file (with its bytes) and folder (empty) under `dir`.
    fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let path = e.unwrap().path();
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                if path.is_dir() {
                    out.push((rel, Vec::new()));
                    walk(root, &path, out);
                } else {
                    out.push((rel, std::fs::read(&path).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out.sort();
        out
    }

    #[test]
    fn turns_group_the_checkpoints_of_each_prompt() {
        let f = fixture();
        let [one, two, three] = f.three_turns();
        let root = f.c.root();
        let list = turns(&f.timeline(), &root);
        assert_eq!(list.len(), 3);
        assert_eq!(
            list.iter().map(|t| t.entry).collect::<Vec<_>>(),
            [one, two, three]
        );
        assert_eq!(list[0].number, 1);
        assert_eq!(list[0].preview(), "first…");
        assert_eq!(list[0].changed, ["f1.txt", "new.txt", "sub/deep/x.txt"]);
        assert_eq!(list[0].effects(), ["fx-1", "fx-2"]);
        assert_eq!(list[1].checkpoints.len(), 1);
        assert!(list[1].changed.is_empty() && list[1].span().is_none());
        assert_eq!(list[2].changed, ["f1.txt", "f2.txt", "f3.txt"]);
        let (before, after) = list[2].span().unwrap();
        assert_eq!(before, list[2].checkpoints[0].before);
        assert_eq!(after, list[2].checkpoints[1].after);
    }

    #[test]
    fn a_turn_undoes_and_redoes_byte_for_byte_and_marks_its_effects() {
        let f = fixture();
        let [one, _, three] = f.three_turns();
        let root = f.c.root();
        let done = tree(f.dir.path());
        let mut guard = lock(&f.c.vcs);
        let vcs = guard.as_mut().unwrap();

        let dry = undo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Latest,
            UndoOptions {
                force: false,
                dry_run: true,
            },
        )
        .unwrap();
        assert_eq!(dry.record.turn, Some(three));
        assert_eq!(tree(f.dir.path()), done, "a dry run writes nothing");
        let entries = f.entries();

        let undone = undo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Latest,
            UndoOptions::default(),
        )
        .unwrap();
        assert_eq!(f.entries(), entries + 1);
        assert_eq!(undone.record.op, VcsOp::Undo);
        assert_eq!(undone.record.effects, ["fx-4", "fx-5"]);
        assert_eq!(undone.record.changed, ["f1.txt", "f2.txt", "f3.txt"]);
        assert_eq!(f.read("f1.txt").as_deref(), Some("one\n"));
        assert_eq!(f.read("f2.txt").as_deref(), Some("2\n"));
        assert_eq!(f.read("f3.txt").as_deref(), Some("3\n"));
        let records = records_of(&f.timeline());
        let states = checkpoints(&records, &root);
        let undone_effects: Vec<_> = states
            .iter()
            .filter(|s| s.undone)
            .filter_map(|s| s.record.effect_id.as_deref())
            .collect();
        assert_eq!(undone_effects, ["fx-4", "fx-5"]);
        let list = turns(&f.timeline(), &root);
        assert!(list[2].undone && !list[0].undone);

        // The next undo by turn takes the turn before (turn 2 changed
        // nothing); then turn 1 is undone too.
        let again = undo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Latest,
            UndoOptions::default(),
        )
        .unwrap();
        assert_eq!(again.record.turn, Some(one));
        assert_eq!(f.read("new.txt"), None);
        let nothing = undo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Latest,
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(nothing.to_string().contains("nothing to undo"), "{nothing}");

        // Redo goes back in the reverse order, to the very same bytes.
        for expect in [one, three] {
            let redone = redo_turn(
                vcs,
                &f.journal,
                &f.timeline(),
                TurnRef::Latest,
                UndoOptions::default(),
            )
            .unwrap();
            assert_eq!(redone.record.turn, Some(expect));
        }
        assert_eq!(tree(f.dir.path()), done);
        let nothing = redo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Latest,
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(nothing.to_string().contains("nothing to redo"), "{nothing}");
        let empty = undo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Number(2),
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(empty.to_string().contains("changed no file"), "{empty}");
        let missing = undo_turn(
            vcs,
            &f.journal,
            &f.timeline(),
            TurnRef::Number(9),
            UndoOptions::default(),
        )
        .unwrap_err();
        assert!(
            missing.to_string().contains("turn 9 is not a turn"),
            "{missing}"
        );
    }

    #[test]
    fn rewind_restores_the_files_of_a_prompt_and_branches_the_transcript() {
        let f = fixture();
        let [one, two, three] = f.three_turns();
        let root = f.c.root();
        let list = turns(&f.timeline(), &root);
        let done = tree(f.dir.path());
        let old_branch: Vec<u64> = f
            .journal
            .with_session(|s| s.branch().iter().map(|r| r.id).collect());
        let mut guard = lock(&f.c.vcs);
        let vcs = guard.as_mut().unwrap();

        // Not a prompt: refused.
        let not = rewind(
            Some(vcs),
            &f.journal,
            list[0].parent,
            RewindOptions::default(),
        )
        .unwrap_err();
        assert!(not.to_string().contains("is not a user prompt"), "{not}");

        // The target of turn 3 is the after of the newest record before
        // it (fx-3's, which changed nothing); of turn 1, the before of
        // the first checkpoint after it.
        let entries = f.entries();
        let dry = rewind(
            Some(vcs),
            &f.journal,
            three,
            RewindOptions {
                force: false,
                dry_run: true,
            },
        )
        .unwrap();
        let files = dry.files.unwrap();
        assert_eq!(
            files.record.target.as_deref(),
            Some(list[1].checkpoints[0].after.as_str())
        );
        assert_eq!(files.record.changed, ["f1.txt", "f2.txt", "f3.txt"]);
        assert_eq!(dry.switch_entry, None);
        assert_eq!(f.entries(), entries, "a dry run writes no entry");
        assert_eq!(tree(f.dir.path()), done, "a dry run writes no file");

        // An outside change to a file smith changed: refused, nothing changes.
        std::fs::write(f.dir.path().join("f2.txt"), "outside\n").unwrap();
        let outside = tree(f.dir.path());
        let refused = rewind(Some(vcs), &f.journal, one, RewindOptions::default()).unwrap_err();
        assert!(
            matches!(refused, CheckpointError::Vcs(ref e) if e.kind() == smith_vcs::ErrorKind::Conflict),
            "{refused}"
        );
        assert!(refused.to_string().contains("f2.txt"), "{refused}");
        assert_eq!(tree(f.dir.path()), outside);
        assert_eq!(f.entries(), entries);
        std::fs::write(f.dir.path().join("f2.txt"), "two\n").unwrap();

        // An untouched file changed outside smith is left alone.
        std::fs::write(f.dir.path().join("f9.txt"), "mine\n").unwrap();
        let back = rewind(Some(vcs), &f.journal, one, RewindOptions::default()).unwrap();
        assert_eq!(back.prompt, "first\nwith a second line");
        assert_eq!(back.leaf, list[0].parent);
        let files = back.files.unwrap();
        assert_eq!(files.record.op, VcsOp::Rewind);
        assert_eq!(files.record.entry, Some(one));
        assert_eq!(
            files.record.target.as_deref(),
            Some(list[0].checkpoints[0].before.as_str())
        );
        assert_eq!(f.read("f1.txt").as_deref(), Some("1\n"));
        assert_eq!(f.read("f2.txt").as_deref(), Some("2\n"));
        assert_eq!(f.read("f3.txt").as_deref(), Some("3\n"));
        assert_eq!(f.read("new.txt"), None);
        assert!(
            !f.dir.path().join("sub").exists(),
            "a folder made since goes too"
        );
        assert_eq!(f.read("f9.txt").as_deref(), Some("mine\n"));

        // The selected branch ends before the prompt, then the switch and
        // the rewind record; the old branch's entries are all still there.
        let (branch, all): (Vec<u64>, Vec<u64>) = f.journal.with_session(|s| {
            (
                s.branch().iter().map(|r| r.id).collect(),
                s.records().iter().map(|r| r.id).collect(),
            )
        });
        assert_eq!(branch[branch.len() - 3], back.leaf);
        assert_eq!(branch[branch.len() - 2], back.switch_entry.unwrap());
        assert!(!branch.contains(&one) && !branch.contains(&two));
        assert!(old_branch.iter().all(|id| all.contains(id)));
        let timeline = f.timeline();
        assert!(turns(&timeline, &root).is_empty());
        assert_eq!(
            expected(&records_of(&timeline), &root).as_deref(),
            Some(files.record.after.as_str())
        );
    }

    #[test]
    fn rewind_without_checkpoints_rewinds_the_transcript_only() {
        let f = fixture();
        let _ = f.prompt("first");
        let two = f.prompt("second");
        let parent = turns(&f.timeline(), &f.c.root())[1].parent;
        let back = rewind(None, &f.journal, two, RewindOptions::default()).unwrap();
        assert!(back.files.is_none());
        assert_eq!(back.leaf, parent);
        let leaf = f.journal.with_session(|s| s.leaf().unwrap().parent);
        assert_eq!(leaf, parent);
    }
}
