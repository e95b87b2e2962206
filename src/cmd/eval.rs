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
//! Nobody answers a plugin's question that waits (`ask`) here: `--answer
//! 'PROMPT=ANSWER'` answers the question with that prompt, `--yes` takes
//! every other question's default, and without either the question is
//! refused (the plugin gets an error saying how to allow it, and a line on
//! standard error names it).
//!
//! A prompt an extension blocks at the input decision point is never sent:
//! the run ends at once as a failed one (an `error` event of kind `blocked`
//! names the plugin and its reason).
//!
//! Exit codes: 0 success, 1 failed turn (or a blocked prompt), 2 budget
//! exceeded (tokens, cost or turns), 130 interrupted (Ctrl+C); SIGTERM,
//! SIGHUP and SIGQUIT end the run the same way, with 143, 129 and 131.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use smith_engine::agent::Budget;
use smith_engine::journal::store::StoreJournal;
use smith_engine::protocol::{Command, Event, JsonLines, StopCause};
use smith_engine::provider::Usage;
use smith_host::extensions::Headless;
use smith_host::output::{HumanPrinter, exit_code, finish_session, format_usage, result_record};
use smith_host::questions::Policy;
use smith_host::{
    Extensions, LiveProviders, Runtime, RuntimeOptions, SessionChoice, choose_provider, mock,
};
use smith_plugins::hooks::Frontend;
use smith_tui::signals;

/// Run one prompt through the agent without the TUI.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The prompt (`-` reads it from standard input).
    pub prompt: String,
    /// The provider, model and base URL.
    #[command(flatten)]
    pub choice: ProviderChoice,
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
    #[arg(long, value_name = "N", value_parser = turn_count)]
    pub max_turns: Option<u32>,
    /// Stop when input + output tokens exceed N (exit code 2).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop when the cost in US dollars exceeds X (exit code 2; needs a known price).
    #[arg(long, value_name = "X")]
    pub max_cost: Option<f64>,
    /// Work in this directory instead of the current one (as if smith were started there: its project's configuration, trust and plugins apply).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run without extension plugins (built-in, user and project).
    #[arg(long)]
    pub no_plugins: bool,
    /// Answer every question a plugin asks and waits for with its default (without it, unanswered questions are refused).
    #[arg(long)]
    pub yes: bool,
    /// Answer the plugin question whose prompt is PROMPT with ANSWER (repeatable; split at the last `=`; wins over --yes).
    #[arg(long, value_name = "PROMPT=ANSWER")]
    pub answer: Vec<String>,
    /// How much tools may do without asking: read-only, ask, workspace or full (default: workspace, full with --yes; see docs/security.md).
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "workspace", "full"])]
    pub approval: Option<String>,
}

// The composition root calls these for `smith "prompt"` (no subcommand).
#[allow(dead_code)]
impl Args {
    /// Defaults for `prompt`: the selected provider, new named session,
    /// human output.
    pub fn for_prompt(prompt: String) -> Self {
        Self {
            prompt,
            choice: ProviderChoice::default(),
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
            no_plugins: false,
            yes: false,
            approval: None,
            answer: Vec::new(),
        }
    }
}

/// Runs `prompt` with default options (what `smith "prompt"` does), with
/// the provider options given before it, on `session` (a reference) when
/// one is given.
///
/// # Errors
///
/// As [`run`].
pub fn run_prompt(
    prompt: String,
    choice: ProviderChoice,
    session: Option<String>,
) -> anyhow::Result<u8> {
    let mut args = Args::for_prompt(prompt);
    args.choice = choice;
    args.session = session;
    run(args)
}

/// A prompt on standard input is read whole, at most this much.
const STDIN_PROMPT: smith_diag::input::Bound<'static> = smith_diag::input::Bound {
    what: "prompt",
    max_bytes: 16 * 1024 * 1024,
    named: true,
};

/// The prompt given as `-`: standard input, read to its end (bounded, and
/// given up after 30 s of silence), without its final line break.
fn prompt_from_stdin() -> anyhow::Result<String> {
    let text = read_stdin(
        "given as `-`",
        "pipe UTF-8 text (`echo 'fix the tests' | smith eval -`), or give the prompt as an argument",
    )?;
    if text.trim().is_empty() {
        return Err(smith_diag::Diagnostic::error(
            "input.empty",
            "the prompt on standard input (given as `-`) is empty",
            "standard input ended before any text, and an empty prompt would send nothing to answer",
            "pipe the prompt in (`echo 'fix the tests' | smith eval -`), or give it as an argument",
        )
        .into());
    }
    Ok(text)
}

/// Standard input's text, read to its end with the bound and the idle
/// deadline of a prompt given as `-`, without its final line breaks;
/// `how` says how the prompt came to be read from it and `next` what to
/// do when it cannot be, for the diagnostics.
///
/// # Errors
///
/// When standard input cannot be read, stays silent past the deadline,
/// exceeds the bound or is not UTF-8 text.
pub fn read_stdin(how: &str, next: &str) -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    smith_diag::input::stream(None, &STDIN_PROMPT)?
        .read_to_end(&mut bytes)
        .map_err(|e| {
            smith_diag::Diagnostic::error(
                "input.io",
                format!("the prompt could not be read from standard input ({how})"),
                e.to_string(),
                next,
            )
        })?;
    let mut text = String::from_utf8(bytes).map_err(|e| {
        smith_diag::Diagnostic::error(
            "input.not-utf8",
            format!("the prompt on standard input ({how}) is not UTF-8 text"),
            format!(
                "byte {} starts a sequence that is not UTF-8",
                e.utf8_error().valid_up_to()
            ),
            next,
        )
    })?;
    while text.ends_with(['\n', '\r']) {
        text.pop();
    }
    Ok(text)
}

/// Parses a `--max-turns` value: a whole number of at least 1 (a run with
/// no turn would record the prompt and never send it).
///
/// # Errors
///
/// When `given` is not a number, or is 0.
pub fn turn_count(given: &str) -> Result<u32, String> {
    match given.parse::<u32>() {
        Ok(0) => Err(
            "a run of 0 turns would send nothing and run no tool; give 1 or more, or leave --max-turns out for no limit"
                .to_owned(),
        ),
        Ok(n) => Ok(n),
        Err(err) => Err(format!(
            "{err}; give a whole number of turns from 1 to {}",
            u32::MAX
        )),
    }
}

/// The provider options every command that runs the agent takes
/// (`smith "prompt"`, `eval`, `tui`, `rpc`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProviderChoice {
    /// The provider: anthropic, openai, google, openai-compatible, a local server (ollama, llama.cpp, lmstudio, vllm) or mock (default: SMITH_PROVIDER, else the first of anthropic, openai, google with a credential, else mock, the offline demo).
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// The model: an id of the provider, provider/model, or an alias or group from models.kdl (default: the provider's default model, or the session's).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The provider's API base URL (required for openai-compatible, e.g. http://localhost:11434/v1; replaces a local server's preset address).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

/// The exit code of a run that ended with `stop`: 128 plus the signal's
/// number when a signal other than SIGINT interrupted it.
fn signal_exit_code(stop: StopCause, interrupted: bool) -> u8 {
    match signals::received() {
        Some(signal) if interrupted && signal != libc::SIGINT => signals::exit_code(signal),
        _ => exit_code(stop),
    }
}

/// How long an interrupted run may take to end before the command stops
/// waiting for it (a second interrupt stops waiting at once).
const INTERRUPT_GRACE: Duration = signals::GRACE;

/// The end of a run that was interrupted and did not report its own end:
/// aborted, usage unknown.
fn aborted_unfinished() -> (StopCause, Usage, Option<f64>, String) {
    (StopCause::Aborted, Usage::default(), None, String::new())
}

/// Shuts the runtime down, waiting at most `limit` for its threads; a
/// thread still busy after that ends with the process.
fn shutdown_within(handle: smith_engine::agent::AgentHandle, limit: Duration) {
    let (done, finished) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("eval-shutdown".to_owned())
        .spawn(move || {
            handle.shutdown();
            // The receiver may have stopped waiting.
            let _ = done.send(());
        });
    if spawned.is_ok() {
        let _ = finished.recv_timeout(limit);
    }
}

/// Runs the command.
///
/// # Errors
///
/// When the provider, script, working directory or session store cannot be
/// set up; nothing has run then.
pub fn run(mut args: Args) -> anyhow::Result<u8> {
    if args.prompt == "-" {
        args.prompt = prompt_from_stdin()?;
    }
    let cwd = match args.cwd.clone() {
        Some(dir) => super::enter_cwd(&dir, [&mut args.mock_script, &mut args.mock_record])?,
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    // A script or a request record only makes sense for the scripted
    // provider, so either one chooses it.
    let explicit = match &args.choice.provider {
        None if args.mock_script.is_some() || args.mock_record.is_some() => Some("mock"),
        other => other.as_deref(),
    };
    let chosen = choose_provider(
        explicit,
        args.choice.model.as_deref(),
        args.choice.base_url.as_deref(),
        || mock::provider(args.mock_script.as_deref(), args.mock_record.as_deref()),
    )?;
    if let Some(note) = &chosen.note {
        eprintln!("{note}");
        smith_diag::log::note(smith_diag::log::Level::Info, "provider.chosen", note);
    }
    let choice = if args.no_session {
        SessionChoice::Temporary
    } else if let Some(reference) = &args.session {
        SessionChoice::Open(reference.clone())
    } else {
        SessionChoice::New(Some(match &args.name {
            Some(name) => name.clone(),
            None => format!("eval-{}", smith_store::now_ms()),
        }))
    };
    // Nobody can answer a plugin's question here: the policy given on the
    // command line does.
    let policy = Policy {
        surface: "smith eval".to_owned(),
        yes: args.yes,
        answers: args
            .answer
            .iter()
            .map(|given| Policy::parse_answer(given))
            .collect::<Result<_, _>>()
            .map_err(|message| anyhow::anyhow!("--answer: {message}"))?,
    };
    // The configuration's warnings (unknown keys, an untrusted project's
    // ignored configuration), as `smith config show` prints them: on
    // standard error, so `--json` output stays records only.
    let config = smith_host::settings::config()?;
    let style = smith_host::output::style(Some(config));
    for warning in config.warnings() {
        eprint!("{}", warning.render_terminal(style));
        smith_diag::log::report(warning);
    }
    // Nobody is asked here: changes inside the project run confined,
    // anything else is refused; `--yes` runs everything.
    let approval = smith_host::settings::approval_mode(
        config,
        args.approval.as_deref(),
        if args.yes {
            smith_engine::approval::Approval::Full
        } else {
            smith_engine::approval::Approval::Workspace
        },
    );
    let options = RuntimeOptions {
        model: args.choice.model.clone(),
        questions: (!args.no_plugins).then(|| policy.asking()),
        approval: smith_engine::approval::ApprovalCell::new(approval),
        max_turns: args.max_turns,
        budget: Budget {
            max_tokens: args.max_tokens,
            max_cost: args.max_cost,
        },
        extensions: (!args.no_plugins).then(|| {
            Extensions(Arc::new(|journal: &Arc<StoreJournal>| {
                Box::new(Headless {
                    name: "eval",
                    journal: Some(Arc::clone(journal)),
                    asker: None,
                }) as Box<dyn Frontend>
            }))
        }),
        ..RuntimeOptions::new(
            LiveProviders::once(chosen.live),
            cwd,
            // A temporary store needs no configured session directory.
            if args.no_session {
                PathBuf::new()
            } else {
                smith_host::settings::session_root()?
            },
        )
    };
    let Runtime {
        handle,
        journal,
        name,
        temp,
        ..
    } = options
        .start(&choice)
        .map_err(|e| e.into_cli(" given with --session"))?;
    // The ending signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) abort the run
    // below; a second one stops waiting for it.
    signals::install();
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
    let mut started = false;
    let mut interrupted: Option<Instant> = None;
    loop {
        if let Some(signal) = signals::take() {
            if interrupted.is_some() {
                // A second interrupt: stop waiting now.
                end = Some(aborted_unfinished());
                break;
            }
            interrupted = Some(Instant::now());
            handle.abort();
            signals::detach_after_hangup(signal);
        }
        let event = match handle.recv_timeout(Duration::from_millis(50)) {
            Ok(event) => event,
            Err(true) => {
                // An aborted run ends within its plugins' abort deadline;
                // whatever still holds it after the grace does not hold
                // the command.
                if interrupted.is_some_and(|at| at.elapsed() > INTERRUPT_GRACE) {
                    end = Some(aborted_unfinished());
                    break;
                }
                continue;
            }
            Err(false) => break,
        };
        let shown = match &mut json {
            Some(lines) => lines.write(&crate::report::event_record(&event)?),
            None => printer.event(&mut out, &event),
        };
        // Once a signal ended the run, the output may be gone (a hung-up
        // terminal, a closed pipe): the run still ends and is recorded.
        if interrupted.is_none() {
            shown?;
        }
        if let Event::Error(info) = &event {
            smith_diag::log::report(&info.to_diagnostic());
        }
        match event {
            Event::AgentStart => started = true,
            Event::AgentEnd {
                stop,
                usage,
                cost,
                text,
            } => end = Some((stop, usage, cost, text)),
            Event::Settled if end.is_some() => break,
            // Idle without a run: the prompt never started one (an
            // extension blocked it; the error event above says which and
            // why). Nothing else will come, so this is the end.
            Event::Settled if !started => {
                // No request was made: nothing was used.
                let none = Usage {
                    input: Some(0),
                    output: Some(0),
                    cache_read: Some(0),
                    cache_write: Some(0),
                };
                end = Some((StopCause::Error, none, None, String::new()));
                break;
            }
            _ => {}
        }
    }
    if interrupted.is_some() {
        shutdown_within(handle, INTERRUPT_GRACE);
    } else {
        handle.shutdown();
    }
    let Some((stop, usage, cost, text)) = end else {
        bail!(
            "the agent runtime stopped without finishing the run; the session holds what was recorded"
        );
    };
    let code = signal_exit_code(stop, interrupted.is_some());
    let session_id = journal.with_session(|s| s.id().to_hex());
    match &mut json {
        Some(lines) => {
            let session = match &temp {
                None => serde_json::json!({"name": name, "id": session_id}),
                Some(_) => serde_json::Value::Null,
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
    finish_session(&name, journal, temp, stop, args.json);
    Ok(code)
}
