//! `smith checkpoint ...`: the snapshots smith took of the project in the
//! current folder around every mutating effect (`write`, `edit`, `bash`):
//! list them and the agent turns they belong to, show what an effect
//! changed, undo and redo whole turns or single effects, restore the
//! project to a checkpoint, and rewind files and transcript together to a
//! past prompt.
//!
//! The snapshots live in the project's store under
//! `<data dir>/checkpoints`; which effect took them is recorded in the
//! session (its `vcs_operation` entries), and so is every undo, redo,
//! restore and rewind done here. Without `--session` the newest session that has
//! checkpoints of this project is used. No external VCS executable runs.

use std::io::Write as _;

use anyhow::Context as _;
use smith_engine::checkpoint::{
    self, Applied, CheckpointError, RewindOptions, Rewound, Turn, TurnRef, VcsOp, VcsRecord,
    change_code, store_dir,
};
use smith_engine::journal::store::{StoreJournal, timeline, vcs_records};
use smith_store::{Session, Store};
use smith_vcs::{Options, UndoOptions, Vcs};

/// Checkpoints of the project in the current folder.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
    /// The session whose checkpoints to use (name or id); default: the newest
    /// session with checkpoints of this project.
    #[arg(long, value_name = "REF", global = true)]
    session: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// List the checkpoints, oldest first: effect, tool, snapshots, changed paths, whether undone.
    List {
        /// Print one JSON object per VCS operation (checkpoints, undos, redos, restores).
        #[arg(long)]
        json: bool,
    },
    /// Show a diff: of the newest effect, of effect fx-N, from a snapshot to the project now, or between two.
    Diff {
        /// An effect id (its changes) or a snapshot id (from it).
        from: Option<String>,
        /// A snapshot or effect id (the project after it) to compare with.
        to: Option<String>,
    },
    /// List the agent turns, oldest first: number, prompt entry, state, the files each changed.
    Turns {
        /// Print one JSON object per turn.
        #[arg(long)]
        json: bool,
    },
    /// Undo the newest turn that changed files and is not undone (or `--turn N`, or one effect fx-N).
    Undo {
        /// One effect to undo instead of a turn.
        #[arg(value_name = "EFFECT", conflicts_with = "turn")]
        effect: Option<String>,
        /// The turn to undo (its number in `smith checkpoint turns`).
        #[arg(long, value_name = "N")]
        turn: Option<usize>,
        /// Undo even when those paths changed outside smith since.
        #[arg(long)]
        force: bool,
        /// Change nothing; list what would change.
        #[arg(long)]
        dry_run: bool,
    },
    /// Redo the most recently undone turn (or `--turn N`, or one effect fx-N).
    Redo {
        /// One effect to redo instead of a turn.
        #[arg(value_name = "EFFECT", conflicts_with = "turn")]
        effect: Option<String>,
        /// The turn to redo (its number in `smith checkpoint turns`).
        #[arg(long, value_name = "N")]
        turn: Option<usize>,
        /// Redo even when those paths changed outside smith since.
        #[arg(long)]
        force: bool,
        /// Change nothing; list what would change.
        #[arg(long)]
        dry_run: bool,
    },
    /// Rewind files and transcript to just before a turn's prompt; the session continues on a new branch (the old one stays).
    Rewind {
        /// A turn number (as `smith checkpoint turns` lists them) or `@ENTRY`, the entry id of a user prompt.
        #[arg(value_name = "TURN|@ENTRY")]
        target: String,
        /// Rewind even when files changed outside smith since its last snapshot.
        #[arg(long)]
        force: bool,
        /// Change nothing; list what would change.
        #[arg(long)]
        dry_run: bool,
    },
    /// Make the whole project match a snapshot, or the project right after (or `--before`) effect fx-N.
    Restore {
        /// A snapshot id (or a unique prefix of 8 or more digits) or an effect id.
        target: String,
        /// With an effect id: the project right before the effect.
        #[arg(long)]
        before: bool,
        /// Restore even when files changed outside smith since its last snapshot.
        #[arg(long)]
        force: bool,
        /// Change nothing; list what would change.
        #[arg(long)]
        dry_run: bool,
    },
}

/// The project, its store, and the session that records its checkpoints.
struct Project {
    vcs: Vcs,
    root: String,
    journal: StoreJournal,
    records: Vec<VcsRecord>,
}

impl Project {
    /// The prompts and VCS operations of the session's selected branch.
    fn timeline(&self) -> anyhow::Result<Vec<checkpoint::Step>> {
        timeline_of(&self.journal)
    }
}

fn timeline_of(journal: &StoreJournal) -> anyhow::Result<Vec<checkpoint::Step>> {
    Ok(journal.with_session(timeline)?)
}

fn turn_ref(turn: Option<usize>) -> TurnRef {
    turn.map_or(TurnRef::Latest, TurnRef::Number)
}

fn open_project(session: Option<&str>) -> anyhow::Result<Project> {
    let cwd = std::env::current_dir().context("reading the current folder")?;
    let data = smith_host::runtime::checkpoints_root().ok_or_else(|| {
        anyhow::anyhow!(
            "smith cannot tell where its data directory is, so it has no checkpoints; set SMITH_HOME (or HOME) to the directory smith used"
        )
    })?;
    let store = store_dir(&data, &cwd);
    if !store.is_dir() {
        anyhow::bail!(
            "smith has no checkpoints of the project {}: its store {} does not exist; checkpoints are taken around the write, edit and bash calls of sessions run in this folder (`smith eval`, `smith tui`), so run smith here first",
            cwd.display(),
            store.display()
        );
    }
    let vcs = Vcs::open(&cwd, &store, Options::default())?;
    let root = vcs.root().display().to_string();
    let sessions = crate::settings::session_root()?;
    let store = Store::open(&sessions)
        .with_context(|| format!("opening the session store at {}", sessions.display()))?;
    let (session, records) = match session {
        Some(reference) => {
            let session = store.load(reference)?;
            let records = vcs_records(&session)?;
            (session, records)
        }
        None => newest_with_checkpoints(&store, &root)?.ok_or_else(|| {
            anyhow::anyhow!(
                "no session in {} has checkpoints of the project {root}; checkpoints are taken around the write, edit and bash calls of sessions run in this folder (`smith eval`, `smith tui`); run smith here first, or pass --session REF",
                sessions.display()
            )
        })?,
    };
    Ok(Project {
        vcs,
        root,
        journal: StoreJournal::new(store, session),
        records,
    })
}

/// The newest session (by modification) with a VCS operation on `root`.
fn newest_with_checkpoints(
    store: &Store,
    root: &str,
) -> anyhow::Result<Option<(Session, Vec<VcsRecord>)>> {
    for info in store.list()? {
        let Ok(session) = store.load(&info.id.to_hex()) else {
            continue;
        };
        let Ok(records) = vcs_records(&session) else {
            continue;
        };
        if records.iter().any(|r| r.root == root) {
            return Ok(Some((session, records)));
        }
    }
    Ok(None)
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(if id.is_empty() { "-" } else { id })
}

/// Runs a checkpoint subcommand; returns the exit code.
///
/// # Errors
/// A missing project store or session, unknown ids, refused restores
/// (conflicts, with the paths), and output failures.
pub fn run(args: Args) -> anyhow::Result<u8> {
    if let Sub::Rewind {
        target,
        force,
        dry_run,
    } = &args.command
    {
        let options = RewindOptions {
            force: *force,
            dry_run: *dry_run,
        };
        return rewind(args.session.as_deref(), target, options);
    }
    let mut p = open_project(args.session.as_deref())?;
    let mut out = std::io::stdout().lock();
    match args.command {
        Sub::List { json } => list(&p, json, &mut out)?,
        Sub::Diff { from, to } => {
            let text = diff(&mut p, from.as_deref(), to.as_deref())?;
            out.write_all(text.as_bytes())?;
        }
        Sub::Turns { json } => turns(&mut p, json, &mut out)?,
        Sub::Undo {
            effect,
            turn,
            force,
            dry_run,
        } => {
            let options = UndoOptions { force, dry_run };
            let done = match effect {
                Some(effect) => {
                    checkpoint::undo(&mut p.vcs, &p.journal, &p.records, Some(&effect), options)?
                }
                None => checkpoint::undo_turn(
                    &mut p.vcs,
                    &p.journal,
                    &timeline_of(&p.journal)?,
                    turn_ref(turn),
                    options,
                )?,
            };
            report(&p, &done, &mut out)?;
        }
        Sub::Redo {
            effect,
            turn,
            force,
            dry_run,
        } => {
            let options = UndoOptions { force, dry_run };
            let done = match effect {
                Some(effect) => {
                    checkpoint::redo(&mut p.vcs, &p.journal, &p.records, Some(&effect), options)?
                }
                None => checkpoint::redo_turn(
                    &mut p.vcs,
                    &p.journal,
                    &timeline_of(&p.journal)?,
                    turn_ref(turn),
                    options,
                )?,
            };
            report(&p, &done, &mut out)?;
        }
        Sub::Restore {
            target,
            before,
            force,
            dry_run,
        } => {
            let done = checkpoint::restore(
                &mut p.vcs, &p.journal, &p.records, &target, before, force, dry_run,
            )?;
            report(&p, &done, &mut out)?;
        }
        Sub::Rewind { .. } => unreachable!("handled before the project is opened"),
    }
    Ok(0)
}

fn list(p: &Project, json: bool, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let states = checkpoint::checkpoints(&p.records, &p.root);
    if json {
        for r in p.records.iter().filter(|r| r.root == p.root) {
            let mut v = serde_json::to_value(r)?;
            if r.op == VcsOp::Checkpoint
                && let Some(s) = states.iter().find(|s| std::ptr::eq(s.record, r))
            {
                v["undone"] = serde_json::Value::Bool(s.undone);
            }
            writeln!(out, "{v}")?;
        }
        return Ok(());
    }
    if states.is_empty() {
        writeln!(out, "no checkpoints of {} in this session", p.root)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<8}  {:<6}  {:<12}  {:<12}  {:<6}  CHANGED",
        "EFFECT", "TOOL", "BEFORE", "AFTER", "STATE"
    )?;
    for s in &states {
        let r = s.record;
        let state = if r.error.is_some() {
            "failed"
        } else if s.undone {
            "undone"
        } else if r.changed.is_empty() {
            "-"
        } else {
            "done"
        };
        writeln!(
            out,
            "{:<8}  {:<6}  {:<12}  {:<12}  {:<6}  {}",
            r.effect_id.as_deref().unwrap_or("-"),
            r.tool.as_deref().unwrap_or("-"),
            short(&r.before),
            short(&r.after),
            state,
            if r.changed.is_empty() {
                "(nothing)".to_owned()
            } else {
                r.changed.join(", ")
            }
        )?;
    }
    Ok(())
}

fn diff(p: &mut Project, from: Option<&str>, to: Option<&str>) -> anyhow::Result<String> {
    let vcs = &mut p.vcs;
    let (a, b) = match (from, to) {
        (Some(f), Some(t)) => (
            checkpoint::resolve_target(vcs, &p.records, f, false)?,
            checkpoint::resolve_target(vcs, &p.records, t, false)?,
        ),
        // clap gives TO only after FROM.
        (from, _) => {
            let effect = match from {
                Some(f) => f.to_owned(),
                None => checkpoint::checkpoints(&p.records, &p.root)
                    .iter()
                    .rev()
                    .find(|s| !s.record.changed.is_empty())
                    .and_then(|s| s.record.effect_id.clone())
                    .ok_or_else(|| {
                        CheckpointError::Nothing(
                            "no effect of this session changed the project; `smith checkpoint list` shows the checkpoints".to_owned(),
                        )
                    })?,
            };
            if effect.starts_with("fx-") {
                (
                    checkpoint::resolve_target(vcs, &p.records, &effect, true)?,
                    checkpoint::resolve_target(vcs, &p.records, &effect, false)?,
                )
            } else {
                let a = vcs.resolve(&effect)?;
                (a, vcs.snapshot()?.id)
            }
        }
    };
    Ok(vcs.diff(a, b)?.unified())
}

fn report(p: &Project, done: &Applied, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let r = &done.record;
    let turn = match r.turn {
        Some(entry) => p
            .timeline()
            .map(|t| checkpoint::turns(&t, &p.root))?
            .into_iter()
            .find(|t| t.entry == entry),
        None => None,
    };
    let verb = match (r.op, done.report.dry_run) {
        (VcsOp::Undo, false) => "undid",
        (VcsOp::Undo, true) => "would undo",
        (VcsOp::Redo, false) => "redid",
        (VcsOp::Redo, true) => "would redo",
        (_, false) => "restored",
        (_, true) => "would restore",
    };
    let what = match (&turn, &r.effect_id, &r.target) {
        (Some(t), _, _) => format!(
            "turn {} {:?} ({})",
            t.number,
            t.preview(),
            r.effects.join(", ")
        ),
        (None, Some(e), _) => e.clone(),
        (None, None, Some(t)) => format!("snapshot {}", short(t)),
        (None, None, None) => "the project".to_owned(),
    };
    writeln!(out, "{verb} {what}: {}", count(done.report.changes.len()))?;
    changes(done, out)
}

fn count(n: usize) -> String {
    format!("{n} path{}", if n == 1 { "" } else { "s" })
}

/// The changes of a restore, then the snapshots around it.
fn changes(done: &Applied, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let r = &done.record;
    for c in &done.report.changes {
        writeln!(out, "  {} {}", change_code(c.kind), c.path.display())?;
    }
    for k in &done.report.kept {
        writeln!(out, "  kept {} (recorded by size only)", k.display())?;
    }
    if !done.report.dry_run {
        writeln!(
            out,
            "before {}  after {}",
            short(&r.before),
            short(&r.after)
        )?;
    }
    Ok(())
}

fn turns(p: &mut Project, json: bool, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let list = checkpoint::turns(&p.timeline()?, &p.root);
    if list.is_empty() && !json {
        writeln!(out, "no turns on the selected branch of this session")?;
        return Ok(());
    }
    if !json {
        writeln!(
            out,
            "{:<4}  {:<6}  {:<6}  {:<5}  PROMPT",
            "TURN", "ENTRY", "STATE", "FILES"
        )?;
    }
    for t in &list {
        let coded = coded_changes(&mut p.vcs, t);
        if json {
            let v = serde_json::json!({
                "turn": t.number,
                "entry": t.entry,
                "prompt": t.prompt,
                "state": state(t),
                "effects": t.effects(),
                "changed": t.changed,
                "changes": coded.iter().map(|(c, path)| serde_json::json!({"code": c.to_string(), "path": path})).collect::<Vec<_>>(),
            });
            writeln!(out, "{v}")?;
            continue;
        }
        writeln!(
            out,
            "{:<4}  {:<6}  {:<6}  {:<5}  {}",
            t.number,
            t.entry,
            state(t),
            t.changed.len(),
            t.preview()
        )?;
        for (code, path) in &coded {
            writeln!(out, "      {code} {path}")?;
        }
    }
    Ok(())
}

/// A turn's state: `done`, `undone`, `partly` undone, or `-` (it changed
/// no file).
fn state(t: &Turn) -> &'static str {
    if t.changed.is_empty() {
        "-"
    } else if t.undone {
        "undone"
    } else if t.partly_undone {
        "partly"
    } else {
        "done"
    }
}

/// The paths a turn changed with their codes (`A`, `D`, `M`, `T`) from
/// before its first change to after its last; a path changed and changed
/// back within the turn is `~`.
fn coded_changes(vcs: &mut Vcs, t: &Turn) -> Vec<(char, String)> {
    let span = t.span().and_then(|(b, a)| {
        let b = vcs.resolve(b).ok()?;
        let a = vcs.resolve(a).ok()?;
        vcs.changes(b, a).ok()
    });
    let span = span.unwrap_or_default();
    t.changed
        .iter()
        .map(|path| {
            let code = span
                .iter()
                .find(|c| c.path.display().to_string() == *path)
                .map_or('~', |c| change_code(c.kind));
            (code, path.clone())
        })
        .collect()
}

/// `rewind TURN|@ENTRY`: the session named (or the newest with
/// checkpoints of this project); without a store of the project and with
/// `--session`, the transcript alone.
fn rewind(session: Option<&str>, target: &str, options: RewindOptions) -> anyhow::Result<u8> {
    let (vcs, journal, root) = match open_project(session) {
        Ok(p) => (Some(p.vcs), p.journal, p.root),
        Err(err) => {
            let Some(reference) = session else {
                return Err(err);
            };
            let cwd = std::env::current_dir().context("reading the current folder")?;
            let sessions = crate::settings::session_root()?;
            let store = Store::open(&sessions)
                .with_context(|| format!("opening the session store at {}", sessions.display()))?;
            let session = store.load(reference)?;
            (
                None,
                StoreJournal::new(store, session),
                std::fs::canonicalize(&cwd)
                    .unwrap_or(cwd)
                    .display()
                    .to_string(),
            )
        }
    };
    let list = checkpoint::turns(&journal.with_session(timeline)?, &root);
    let (entry, number) = match target.strip_prefix('@') {
        Some(entry) => {
            let entry: u64 = entry.parse().map_err(|_| {
                anyhow::anyhow!(
                    "{target:?} is not an entry id: write @ and the number, e.g. @12; `smith checkpoint turns` lists the prompts' entries"
                )
            })?;
            (
                entry,
                list.iter().find(|t| t.entry == entry).map(|t| t.number),
            )
        }
        None => {
            let n: usize = target.parse().map_err(|_| {
                anyhow::anyhow!(
                    "{target:?} is neither a turn number nor @ENTRY; `smith checkpoint turns` lists the turns with their numbers and entries"
                )
            })?;
            let t = list.iter().find(|t| t.number == n).ok_or_else(|| {
                CheckpointError::Nothing(format!(
                    "turn {n} is not a turn of the session's selected branch (it has {}); `smith checkpoint turns` lists them",
                    list.len()
                ))
            })?;
            (t.entry, Some(n))
        }
    };
    let mut vcs = vcs;
    let done = checkpoint::rewind(vcs.as_mut(), &journal, entry, options)?;
    let mut out = std::io::stdout().lock();
    rewound(&done, number, &journal, &mut out)?;
    Ok(0)
}

fn rewound(
    done: &Rewound,
    number: Option<usize>,
    journal: &StoreJournal,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let verb = if done.dry_run {
        "would rewind"
    } else {
        "rewound"
    };
    let turn = number.map_or_else(String::new, |n| format!("turn {n} "));
    let preview = done.prompt.lines().next().unwrap_or("");
    match &done.files {
        Some(files) => {
            writeln!(
                out,
                "{verb} to before {turn}(entry {}) {preview:?}: {}",
                done.entry,
                count(files.report.changes.len())
            )?;
            changes(files, out)?;
        }
        None => writeln!(
            out,
            "{verb} to before {turn}(entry {}) {preview:?}: the transcript only; the session has no checkpoints of this project, so no file changes",
            done.entry
        )?,
    }
    let session = journal.session_id().to_hex();
    match done.switch_entry {
        Some(switch) => writeln!(
            out,
            "session {session} continues from entry {} on a new branch (leaf switch entry {switch}); the old branch stays",
            done.leaf
        )?,
        None => writeln!(
            out,
            "session {session} would continue from entry {} on a new branch",
            done.leaf
        )?,
    }
    Ok(())
}
