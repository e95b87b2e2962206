//! `smith eval "prompt"` (alias `smith run`): the agent runtime without the
//! TUI.
//!
//! The run is recorded in a session before any effect happens: a new named
//! session by default, an existing one with `--session REF`, or a temporary
//! store with `--no-session` (removed when the command ends normally, kept
//! and its path printed after an interrupt). Output is human-readable
//! (streamed text on stdout; one line per tool and a usage line on stderr) or
//! `--json` (the protocol's JSON Lines, then a `result` record).
//!
//! Exit codes: 0 success, 1 failed turn, 2 budget exceeded (tokens, cost or
//! turns), 130 interrupted.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use smith_engine::agent::{self, AgentConfig, Budget, Services, default_policies};
use smith_engine::journal::EffectState;
use smith_engine::journal::store::{StoreJournal, resume};
use smith_engine::protocol::{Command, Event, JsonLines, MutationState, StopCause, ToolStatus};
use smith_engine::provider::scripted::{MOCK_MODEL, ScriptedProvider, load_script};
use smith_engine::provider::{HostTransport, Provider, Usage};
use smith_engine::tools::{ToolContext, ToolSet};
use smith_store::Store;

/// Run one prompt through the agent without the TUI.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The prompt.
    pub prompt: String,
    /// The provider: only `mock` (the scripted provider) is available in this build.
    #[arg(long, default_value = "mock")]
    pub provider: String,
    /// The model id (default: the provider's first model, or the session's).
    #[arg(long)]
    pub model: Option<String>,
    /// Play this script with the mock provider (see docs/mock-provider.md); without it the built-in demo runs.
    #[arg(long, value_name = "FILE")]
    pub mock_script: Option<PathBuf>,
    /// Write every request the mock provider receives to FILE as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub mock_record: Option<PathBuf>,
    /// Print protocol events as JSON Lines, then a final result record.
    #[arg(long)]
    pub json: bool,
    /// Continue this session (a name, an id or a unique id prefix).
    #[arg(long, value_name = "REF", conflicts_with_all = ["no_session", "name"])]
    pub session: Option<String>,
    /// Name the new session (default: eval-<time>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Record into a temporary session store, removed on a normal exit and kept after an interrupt.
    #[arg(long)]
    pub no_session: bool,
    /// Stop after this many turns (exit code 2).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Stop when input + output tokens exceed N (exit code 2).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop when the cost in US dollars exceeds X (exit code 2; needs a known price).
    #[arg(long, value_name = "X")]
    pub max_cost: Option<f64>,
    /// Work in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

// The composition root calls these for `smith "prompt"` (no subcommand).
#[allow(dead_code)]
impl Args {
    /// Defaults for `prompt`: mock provider, new named session, human output.
    pub fn for_prompt(prompt: String) -> Self {
        Self {
            prompt,
            provider: "mock".to_owned(),
            model: None,
            mock_script: None,
            mock_record: None,
            json: false,
            session: None,
            name: None,
            no_session: false,
            max_turns: None,
            max_tokens: None,
            max_cost: None,
            cwd: None,
        }
    }
}

/// Runs `prompt` with default options (what `smith "prompt"` does).
///
/// # Errors
///
/// As [`run`].
pub fn run_prompt(prompt: String) -> anyhow::Result<u8> {
    run(Args::for_prompt(prompt))
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Routes SIGINT to a flag the event loop watches (abort, then exit 130).
fn install_interrupt_handler() {
    let handler: extern "C" fn(libc::c_int) = on_sigint;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

fn provider(args: &Args) -> anyhow::Result<Box<dyn Provider>> {
    if args.provider != "mock" {
        bail!(
            "provider {:?} is not available: this build has only the scripted provider; run with --provider mock (optionally --mock-script FILE)",
            args.provider
        );
    }
    let mut provider = match &args.mock_script {
        Some(path) => ScriptedProvider::new(load_script(path)?),
        None => ScriptedProvider::demo(),
    };
    if let Some(path) = &args.mock_record {
        provider = provider.record_to(path)?;
    }
    Ok(Box::new(provider))
}

struct Destination {
    journal: Arc<StoreJournal>,
    name: Option<String>,
    temp: Option<tempfile::TempDir>,
}

fn open_destination(args: &Args, config: &mut AgentConfig) -> anyhow::Result<Destination> {
    if args.no_session {
        let dir = tempfile::Builder::new()
            .prefix("smith-eval-")
            .tempdir()
            .context("could not create a temporary session store for --no-session; check that the temporary directory is writable")?;
        let store = Store::open(dir.path())?;
        let session = store.create(None)?;
        return Ok(Destination {
            journal: Arc::new(StoreJournal::new(store, session)),
            name: None,
            temp: Some(dir),
        });
    }
    let root = Store::default_root()?;
    let store = Store::open(&root)?;
    if let Some(reference) = &args.session {
        let session = store.load(reference).with_context(|| {
            format!("could not open session {reference:?} given with --session; run `smith session list` to see the sessions")
        })?;
        let resumed = resume(&session)?;
        for (effect, state) in &resumed.effects {
            if *state == EffectState::Unknown {
                eprintln!(
                    "smith: effect {effect} in session {reference} has a recorded intent but no completion: its outcome is unknown and it will not be retried"
                );
            }
        }
        if args.model.is_none()
            && let Some((_, model)) = &resumed.model
        {
            config.model.clone_from(model);
        }
        config.history = resumed.history;
        config.first_effect_seq = resumed.last_effect_seq;
        let name = store
            .name_of(session.id())
            .unwrap_or_else(|| session.id().to_hex());
        return Ok(Destination {
            journal: Arc::new(StoreJournal::new(store, session)),
            name: Some(name),
            temp: None,
        });
    }
    let name = match &args.name {
        Some(name) => name.clone(),
        None => format!("eval-{}", smith_store::now_ms()),
    };
    let session = store
        .create(Some(&name))
        .with_context(|| format!("could not create session {name:?} in {}", root.display()))?;
    Ok(Destination {
        journal: Arc::new(StoreJournal::new(store, session)),
        name: Some(name),
        temp: None,
    })
}

pub(crate) fn format_usage(usage: &Usage, cost: Option<f64>) -> String {
    let n = |v: Option<u64>| v.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
    let cost = cost.map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"));
    format!(
        "usage: {} input, {} output, {} cache read, {} cache write tokens; cost {cost}",
        n(usage.input),
        n(usage.output),
        n(usage.cache_read),
        n(usage.cache_write)
    )
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

pub(crate) fn exit_code(stop: StopCause) -> u8 {
    match stop {
        StopCause::Done => 0,
        StopCause::Error => 1,
        StopCause::Budget | StopCause::TurnLimit => 2,
        StopCause::Aborted => 130,
    }
}

/// The human frontend shared by eval and replay: streamed assistant text on
/// `out`, one line per tool and every error on stderr.
#[derive(Debug, Default)]
pub(crate) struct HumanPrinter {
    mid_line: bool,
}

impl HumanPrinter {
    /// Prints one event.
    pub(crate) fn event(&mut self, out: &mut impl Write, event: &Event) -> std::io::Result<()> {
        match event {
            Event::MessageDelta { text } => {
                out.write_all(text.as_bytes())?;
                out.flush()?;
                self.mid_line = !text.ends_with('\n');
            }
            Event::ToolExecutionEnd {
                name,
                status,
                content,
                mutation,
                effect_id,
                ..
            } => {
                self.end_line(out)?;
                let status = match status {
                    ToolStatus::Ok => "ok",
                    ToolStatus::Error => "error",
                    ToolStatus::Invalid => "invalid",
                    ToolStatus::Skipped => "skipped",
                    ToolStatus::Aborted => "aborted",
                    ToolStatus::NotRecorded => "not recorded",
                };
                let unknown = match (mutation, effect_id) {
                    (Some(MutationState::Unknown), Some(id)) => {
                        format!(" (effect {id}: whether it changed anything is unknown)")
                    }
                    _ => String::new(),
                };
                eprintln!("  [{name}] {status}: {}{unknown}", one_line(content, 100));
            }
            Event::Error(info) => {
                self.end_line(out)?;
                eprint!("{}", info.to_diagnostic().render_terminal(smith_diag::Style::for_stderr()));
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends a line of streamed text, if one is open.
    pub(crate) fn end_line(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.mid_line {
            writeln!(out)?;
            self.mid_line = false;
        }
        Ok(())
    }
}

/// The final `result` record of a JSON stream.
pub(crate) fn result_record(
    stop: StopCause,
    text: &str,
    usage: &Usage,
    cost: Option<f64>,
    session: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "type": "result",
        "stop": stop,
        "exit_code": exit_code(stop),
        "text": text,
        "usage": usage,
        "cost": cost,
        "session": session,
    })
}

/// Runs the command.
///
/// # Errors
///
/// When the provider, script, working directory or session store cannot be
/// set up; nothing has run then.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    let provider = provider(&args)?;
    let info = provider.describe();
    let mut config = AgentConfig::new(args.model.clone().unwrap_or_else(|| {
        info.models
            .first()
            .map_or_else(|| MOCK_MODEL.to_owned(), |m| m.id.clone())
    }));
    config.max_turns = args.max_turns;
    config.budget = Budget {
        max_tokens: args.max_tokens,
        max_cost: args.max_cost,
    };
    config.system = Some(format!(
        "You are smith, a coding agent. Work in {} using the tools you are given.",
        cwd.display()
    ));
    let tool_context = ToolContext::new(&cwd)
        .map_err(|err| anyhow::anyhow!("{err}"))
        .with_context(|| format!("cannot work in {}", cwd.display()))?;
    let destination = open_destination(&args, &mut config)?;
    let services = Services {
        provider,
        transport: Arc::new(HostTransport),
        tools: ToolSet::builtin(),
        tool_context,
        journal: destination.journal.clone(),
        sink: destination.journal.clone(),
        policies: default_policies(),
    };
    let handle = agent::spawn(config, services)?;
    install_interrupt_handler();
    handle.send(Command::Prompt {
        text: args.prompt.clone(),
    })?;

    let stdout = std::io::stdout();
    let mut json = if args.json {
        Some(JsonLines::start(stdout.lock())?)
    } else {
        None
    };
    let mut out = stdout.lock();
    let mut printer = HumanPrinter::default();
    let mut end: Option<(StopCause, Usage, Option<f64>, String)> = None;
    loop {
        if INTERRUPTED.swap(false, Ordering::SeqCst) {
            handle.abort();
        }
        let event = match handle.recv_timeout(Duration::from_millis(50)) {
            Ok(event) => event,
            Err(true) => continue,
            Err(false) => break,
        };
        if let Some(lines) = &mut json {
            lines.write(&crate::report::event_record(&event)?)?;
        } else {
            printer.event(&mut out, &event)?;
        }
        match event {
            Event::AgentEnd {
                stop,
                usage,
                cost,
                text,
            } => end = Some((stop, usage, cost, text)),
            Event::Settled if end.is_some() => break,
            _ => {}
        }
    }
    handle.shutdown();
    let Some((stop, usage, cost, text)) = end else {
        bail!(
            "the agent runtime stopped without finishing the run; the session holds what was recorded"
        );
    };
    let code = exit_code(stop);
    let session_id = destination.journal.with_session(|s| s.id().to_hex());
    match &mut json {
        Some(lines) => {
            let session = match &destination.name {
                Some(name) => serde_json::json!({"name": name, "id": session_id}),
                None => serde_json::Value::Null,
            };
            lines.write(&result_record(stop, &text, &usage, cost, session))?;
        }
        None => {
            printer.end_line(&mut out)?;
            out.flush()?;
            eprintln!("{}", format_usage(&usage, cost));
        }
    }
    drop(out);
    finish(destination, stop, &args);
    Ok(code)
}

/// Prints where the session is, and removes or keeps a temporary store.
fn finish(destination: Destination, stop: StopCause, args: &Args) {
    let interrupted = stop == StopCause::Aborted;
    if let Some(name) = &destination.name {
        if interrupted {
            eprintln!(
                "smith: interrupted; session {name} is saved — continue it with: smith eval --session {name} \"<prompt>\""
            );
        } else if !args.json {
            eprintln!("session: {name}");
        }
    }
    drop(destination.journal);
    // Without an interrupt, dropping the temporary directory removes it.
    if let Some(dir) = destination.temp
        && interrupted
    {
        let kept = dir.keep();
        eprintln!(
            "smith: interrupted; the temporary session store is kept at {} for inspection",
            kept.display()
        );
    }
}
