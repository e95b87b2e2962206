//! `smith checkpoint ...`: the snapshots smith took of the project in the
//! current folder around every mutating effect (`write`, `edit`, `bash`):
//! list them, show what an effect changed, undo and redo effects, restore
//! the project to a checkpoint.
//!
//! The snapshots live in the project's store under
//! `<data dir>/checkpoints`; which effect took them is recorded in the
//! session (its `vcs_operation` entries), and so is every undo, redo and
//! restore done here. Without `--session` the newest session that has
//! checkpoints of this project is used. No external VCS executable runs.

use std::io::Write as _;

use anyhow::Context as _;
use smith_engine::checkpoint::{
    self, Applied, CheckpointError, VcsOp, VcsRecord, change_code, store_dir,
};
use smith_engine::journal::store::{StoreJournal, vcs_records};
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
    /// Undo the newest effect not undone yet (or fx-N) at the paths it changed.
    Undo {
        /// The effect to undo.
        #[arg(value_name = "EFFECT")]
        effect: Option<String>,
        /// Undo even when those paths changed outside smith since.
        #[arg(long)]
        force: bool,
        /// Change nothing; list what would change.
        #[arg(long)]
        dry_run: bool,
    },
    /// Redo the most recently undone effect (or fx-N).
    Redo {
        /// The effect to redo.
        #[arg(value_name = "EFFECT")]
        effect: Option<String>,
        /// Redo even when those paths changed outside smith since.
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
    let mut p = open_project(args.session.as_deref())?;
    let mut out = std::io::stdout().lock();
    match args.command {
        Sub::List { json } => list(&p, json, &mut out)?,
        Sub::Diff { from, to } => {
            let text = diff(&mut p, from.as_deref(), to.as_deref())?;
            out.write_all(text.as_bytes())?;
        }
        Sub::Undo {
            effect,
            force,
            dry_run,
        } => {
            let done = checkpoint::undo(
                &mut p.vcs,
                &p.journal,
                &p.records,
                effect.as_deref(),
                UndoOptions { force, dry_run },
            )?;
            report(&done, &mut out)?;
        }
        Sub::Redo {
            effect,
            force,
            dry_run,
        } => {
            let done = checkpoint::redo(
                &mut p.vcs,
                &p.journal,
                &p.records,
                effect.as_deref(),
                UndoOptions { force, dry_run },
            )?;
            report(&done, &mut out)?;
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
            report(&done, &mut out)?;
        }
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

fn report(done: &Applied, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let r = &done.record;
    let verb = match (r.op, done.report.dry_run) {
        (VcsOp::Undo, false) => "undid",
        (VcsOp::Undo, true) => "would undo",
        (VcsOp::Redo, false) => "redid",
        (VcsOp::Redo, true) => "would redo",
        (_, false) => "restored",
        (_, true) => "would restore",
    };
    let what = match (&r.effect_id, &r.target) {
        (Some(e), _) => e.clone(),
        (None, Some(t)) => format!("snapshot {}", short(t)),
        (None, None) => "the project".to_owned(),
    };
    writeln!(
        out,
        "{verb} {what}: {} path{}",
        done.report.changes.len(),
        if done.report.changes.len() == 1 {
            ""
        } else {
            "s"
        }
    )?;
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
