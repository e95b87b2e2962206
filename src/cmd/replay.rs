//! `smith replay REF`: a recorded session played back through the same
//! frontends as a live run, with no provider and no credentials.
//!
//! The events come from `smith_engine::replay` (a pure function of the
//! session's records); they are printed by eval's printers — human or
//! `--json` — so the only difference a frontend sees is the `replay` marker
//! in the header (and a "replay of session" line on stderr for people).
//! `--realtime` (the default for human output) waits the recorded gaps,
//! `--speed N` divides them by N, `--instant` (the default for `--json`)
//! does not wait. `--turns A..B` selects session-wide turns (1-based,
//! inclusive). `--compare` re-executes the recorded effects in a scratch
//! workspace — the snapshot the session's first checkpoint took before them
//! (or, without checkpoints or with `--workspace DIR`, a copy of the current
//! files) — and reports each divergence; it exits 1 when any effect
//! diverged. See docs/replay.md.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use smith_diag::{Diagnostic, Surface};
use smith_engine::journal::store::vcs_records;
use smith_engine::protocol::{Event, Header, JsonLines, ReplayMarker, StopCause};
use smith_engine::provider::Usage;
use smith_engine::replay::{
    Comparison, Pace, Recording, TurnRange, Verdict, compare, copy_tree, export_start, start_point,
    stream, stream_file,
};
use smith_engine::tools::ToolSet;
use smith_store::Store;

use smith_host::output::{HumanPrinter, format_usage, print_comparisons, result_record};

/// Play a recorded session back without a provider.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The session: a name, an id or a unique id prefix.
    #[arg(value_name = "REF")]
    pub session: String,
    /// Play N times faster than recorded.
    #[arg(long, value_name = "N", conflicts_with_all = ["realtime", "instant"])]
    pub speed: Option<f64>,
    /// Wait the recorded gaps between events (the default for human output).
    #[arg(long, conflicts_with = "instant")]
    pub realtime: bool,
    /// Do not wait between events (the default for --json).
    #[arg(long)]
    pub instant: bool,
    /// Only these turns: A..B (1-based, inclusive, counted over the whole session), A.., ..B or N.
    #[arg(long, value_name = "A..B")]
    pub turns: Option<String>,
    /// Re-execute the recorded tool effects in a scratch workspace (the session's first checkpoint, else a copy of the working directory) and report divergences (exit 1 when any).
    #[arg(long)]
    pub compare: bool,
    /// With --compare: start from a copy of DIR instead of the session's checkpoint or working directory.
    #[arg(long, value_name = "DIR", requires = "compare")]
    pub workspace: Option<PathBuf>,
    /// Print protocol events as JSON Lines, then a final result record.
    #[arg(long)]
    pub json: bool,
}

fn pace(args: &Args) -> anyhow::Result<Pace> {
    if let Some(speed) = args.speed {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(Diagnostic::error(
                "replay.invalid-speed",
                format!("--speed {speed} is not a positive number"),
                "the speed multiplies the recorded pace, so it must be a finite number above zero",
                "use e.g. --speed 4 for four times faster, or --instant",
            )
            .with_value(speed)
            .with_surface(Surface::flag("--speed"))
            .with_example("smith replay SESSION --speed 4")
            .into());
        }
        return Ok(Pace::Scaled(speed));
    }
    if args.instant || (args.json && !args.realtime) {
        return Ok(Pace::Instant);
    }
    Ok(Pace::Scaled(1.0))
}

/// Standard output for a replay. An instant replay writes into a large
/// buffer handed on in blocks, and the per-line flush the JSON Lines writer
/// makes for a live stream does nothing (the end flushes): a replay of
/// millions of events makes a few thousand writes, not one per line. A
/// paced replay writes through, so every event shows when it plays.
enum Out {
    Held(std::io::BufWriter<std::io::StdoutLock<'static>>),
    Live(std::io::StdoutLock<'static>),
}

impl Out {
    fn new(instant: bool) -> Self {
        let lock = std::io::stdout().lock();
        if instant {
            Out::Held(std::io::BufWriter::with_capacity(256 * 1024, lock))
        } else {
            Out::Live(lock)
        }
    }

    /// Writes out everything held.
    fn finish(&mut self) -> std::io::Result<()> {
        match self {
            Out::Held(w) => w.flush(),
            Out::Live(w) => w.flush(),
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Held(w) => w.write(buf),
            Out::Live(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Out::Held(w) => w.write_all(buf),
            Out::Live(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Held(_) => Ok(()),
            Out::Live(w) => w.flush(),
        }
    }
}

/// Why a streamed replay stopped: a record could not be read, or the
/// output could not be written.
enum Failure {
    Read(smith_engine::replay::ReplayError),
    Write(anyhow::Error),
}

impl From<smith_engine::replay::ReplayError> for Failure {
    fn from(err: smith_engine::replay::ReplayError) -> Self {
        Failure::Read(err)
    }
}

/// Runs the command.
///
/// # Errors
///
/// When the session cannot be found or read, the turn range is invalid, or
/// the workspace cannot be copied for `--compare`.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let pace = pace(&args)?;
    let root = crate::settings::session_root()?;
    let store = Store::open(&root)?;
    let open = || {
        format!(
            "could not open session {:?} to replay; run `smith session list` to see the sessions",
            args.session
        )
    };
    // The whole recording is built first only when turns are selected (the
    // selection needs the turn count) or effects compared; otherwise the
    // events stream as the entries are read, from the file itself when it
    // holds one linear history (nothing is loaded), else from a load.
    let (file, session, recording, session_id) = if args.turns.is_some() || args.compare {
        let session = store.load(&args.session).with_context(open)?;
        let recording = Recording::from_session(&session)
            .with_context(|| format!("could not read session {:?} for replay", args.session))?;
        let id = session.id();
        (None, Some(session), Some(recording), id)
    } else {
        let file = store.open_file(&args.session).with_context(open)?;
        let id = file.header().id;
        (Some(file), None, None, id)
    };
    let turns = match (&args.turns, &recording) {
        (Some(text), Some(recording)) => {
            let range = TurnRange::parse(text)?;
            recording.check(range)?;
            Some(range)
        }
        _ => None,
    };
    let id = session_id.to_hex();
    let name = store.name_of(session_id);
    let marker = ReplayMarker {
        session: id.clone(),
        name: name.clone(),
    };

    let instant = pace == Pace::Instant;
    let mut out = Out::new(instant);
    let mut json = if args.json {
        Some(JsonLines::start_with(
            Out::new(instant),
            &Header::replay(marker),
        )?)
    } else {
        eprintln!(
            "replay of session {} ({id}); no provider is called and no effect is re-run",
            name.as_deref().unwrap_or("(unnamed)")
        );
        None
    };
    let mut printer = HumanPrinter::default();
    let mut end: Option<(StopCause, Usage, Option<f64>, String)> = None;
    let each = |event: &Event| -> anyhow::Result<()> {
        match &mut json {
            Some(lines) => lines.write_event(event)?,
            None => {
                printer.event(&mut out, event)?;
                if let Event::AgentEnd { .. } = event {
                    printer.end_line(&mut out)?;
                }
            }
        }
        if let Event::AgentEnd {
            stop,
            usage,
            cost,
            text,
        } = event
        {
            end = Some((*stop, *usage, *cost, text.clone()));
        }
        Ok(())
    };
    match &recording {
        Some(recording) => recording.play(turns, pace, each)?,
        None => {
            let mut each = each;
            let read = |failure| match failure {
                Failure::Read(err) => anyhow::Error::new(err).context(format!(
                    "could not read session {:?} for replay",
                    args.session
                )),
                Failure::Write(err) => err,
            };
            let streamed = match &file {
                Some(file) => stream_file(file, store.limits(), pace, |event| {
                    each(event).map_err(Failure::Write)
                })
                .map_err(read)?,
                None => false,
            };
            if !streamed {
                let session = store.load(&args.session).with_context(open)?;
                stream(&session, pace, |event| each(event).map_err(Failure::Write))
                    .map_err(read)?;
            }
        }
    }
    printer.end_line(&mut out)?;

    let mut code = 0;
    if let (true, Some(recording), Some(session)) = (args.compare, &recording, &session) {
        let records = vcs_records(session).with_context(|| {
            format!(
                "could not read the checkpoints of session {:?} for --compare",
                args.session
            )
        })?;
        let (start, comparisons) = run_compare(&args, recording, &records, turns)?;
        let diverged = comparisons
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Diverged { .. }))
            .count();
        let count = |f: fn(&Verdict) -> bool| comparisons.iter().filter(|c| f(&c.verdict)).count();
        let summary = serde_json::json!({
            "type": "compare_summary",
            "matched": count(|v| *v == Verdict::Match),
            "diverged": diverged,
            "skipped_unknown": count(|v| *v == Verdict::SkippedUnknown),
            "skipped_unavailable": count(|v| *v == Verdict::SkippedUnavailable),
        });
        match &mut json {
            Some(lines) => {
                lines.write(&start.record())?;
                for comparison in &comparisons {
                    let mut record = serde_json::to_value(comparison)?;
                    if let Some(map) = record.as_object_mut() {
                        map.insert("type".into(), "compare".into());
                    }
                    lines.write(&record)?;
                }
                lines.write(&summary)?;
            }
            None => {
                writeln!(out, "{}", start.line())?;
                print_comparisons(&mut out, &comparisons, &summary)?;
            }
        }
        if diverged > 0 {
            code = 1;
        }
    }
    if let Some((stop, usage, cost, text)) = end {
        match &mut json {
            Some(lines) => {
                let session = serde_json::json!({"name": name, "id": id});
                lines.write(&result_record(stop, &text, &usage, cost, session))?;
            }
            None => eprintln!("{}", format_usage(&usage, cost)),
        }
    }
    if let Some(lines) = json {
        lines.into_inner().finish()?;
    }
    out.finish()?;
    Ok(code)
}

/// What `--compare`'s scratch workspace started from.
enum Start {
    /// A snapshot of the session's checkpoints.
    Snapshot(smith_engine::replay::StartPoint),
    /// A copy of a folder's current files: `--workspace DIR`, or the
    /// session has no usable checkpoint.
    Copy { path: PathBuf, given: bool },
}

impl Start {
    /// The `compare_start` JSON record.
    fn record(&self) -> serde_json::Value {
        match self {
            Start::Snapshot(p) => serde_json::json!({
                "type": "compare_start",
                "source": "checkpoint",
                "snapshot": p.snapshot,
                "side": p.side,
                "effect_id": p.effect_id,
                "root": p.root,
            }),
            Start::Copy { path, given } => serde_json::json!({
                "type": "compare_start",
                "source": if *given { "workspace" } else { "copy" },
                "path": path.display().to_string(),
                "reason": if *given {
                    "--workspace was given"
                } else {
                    "the session has no checkpoint of the compared effects"
                },
            }),
        }
    }

    /// The human line.
    fn line(&self) -> String {
        match self {
            Start::Snapshot(p) => format!(
                "compare: starting from snapshot {} ({} {}, checkpoint of {})",
                &p.snapshot[..p.snapshot.len().min(12)],
                p.side,
                p.effect_id,
                p.root
            ),
            Start::Copy { path, given: true } => format!(
                "compare: starting from a copy of the current files of {} (--workspace)",
                path.display()
            ),
            Start::Copy { path, given: false } => format!(
                "compare: the session has no checkpoint of the compared effects; starting from a copy of the current files of {}",
                path.display()
            ),
        }
    }
}

fn run_compare(
    args: &Args,
    recording: &Recording,
    records: &[smith_engine::checkpoint::VcsRecord],
    turns: Option<TurnRange>,
) -> anyhow::Result<(Start, Vec<Comparison>)> {
    let effects = recording.selected_effects(turns);
    let scratch = tempfile::Builder::new()
        .prefix("smith-replay-")
        .tempdir()
        .context("could not create a scratch directory for --compare; check that the temporary directory is writable")?;
    let outputs = tempfile::Builder::new()
        .prefix("smith-replay-output-")
        .tempdir()
        .context("could not create a directory for tool outputs for --compare")?;
    let point = match &args.workspace {
        Some(_) => None,
        None => start_point(records, &recording.effects, &effects),
    };
    let start = match (point, smith_host::runtime::checkpoints_root()) {
        (Some(point), Some(root)) => {
            export_start(&root, &point, scratch.path())?;
            Start::Snapshot(point)
        }
        _ => {
            let path = copy_workspace(args, &effects)?;
            copy_tree(&path, scratch.path())?;
            Start::Copy {
                path,
                given: args.workspace.is_some(),
            }
        }
    };
    let comparisons = compare(
        &effects,
        &ToolSet::builtin(),
        scratch.path(),
        outputs.path(),
    )?;
    Ok((start, comparisons))
}

/// The folder whose current files `--compare` copies: `--workspace DIR`,
/// else the one working directory the selected effects ran in.
fn copy_workspace(
    args: &Args,
    effects: &[&smith_engine::replay::RecordedEffect],
) -> anyhow::Result<PathBuf> {
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => {
            let mut cwds: Vec<&str> = effects.iter().filter_map(|e| e.cwd.as_deref()).collect();
            cwds.sort_unstable();
            cwds.dedup();
            match cwds.as_slice() {
                [] if effects.is_empty() => std::env::current_dir()
                    .context("could not read the current directory; pass --workspace DIR")?,
                [] => {
                    return Err(Diagnostic::error(
                        "replay.no-workspace",
                        "the session does not record the working directory its effects ran in",
                        "it predates run records, and --compare re-runs the effects in a copy of that directory",
                        "pass --workspace DIR to compare against a copy of DIR",
                    )
                    .with_value(&args.session)
                    .with_surface(Surface::other("the recorded session"))
                    .into());
                }
                [one] => PathBuf::from(one),
                several => {
                    return Err(Diagnostic::error(
                        "replay.several-workspaces",
                        format!(
                            "the selected effects ran in {} different working directories",
                            several.len()
                        ),
                        "--compare re-runs the effects in a copy of one directory",
                        "select turns from one with --turns, or pass --workspace DIR",
                    )
                    .with_value(several.join(", "))
                    .with_surface(Surface::other("the recorded session"))
                    .into());
                }
            }
        }
    };
    if !workspace.is_dir() {
        return Err(Diagnostic::error(
            "replay.no-workspace",
            format!(
                "the workspace {} does not exist (or is not a directory)",
                workspace.display()
            ),
            "--compare re-runs the effects in a copy of the workspace, so there is nothing to copy",
            "pass --workspace DIR naming an existing directory",
        )
        .with_value(workspace.display())
        .with_surface(Surface::flag("--workspace"))
        .into());
    }
    Ok(workspace)
}
