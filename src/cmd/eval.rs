//! `smith eval "prompt"` (alias `smith run`): the agent runtime without the
//! TUI.
//!
//! The run is recorded in a session before any effect happens: a new named
//! session by default, an existing one with `--session REF`, or a temporary
//! store with `--no-session` (removed when the command ends normally, kept
//! and its path printed after an interrupt). Output is human-readable
//! (streamed text on stdout; one line per tool and a usage line on stderr),
//! `--json` (the protocol's JSON Lines, then a `result` record), or Claude
//! Code's headless shapes for tools built around `claude -p`:
//! `--output-format stream-json` (an init object, assistant and user
//! messages, a `result` object) or `--output-format json` (the `result`
//! object alone), mapped by [`smith_host::stream_json`]. With
//! `--input-format stream-json` the prompts are Claude Code user messages on
//! standard input, one a line, run one after another on the same session.
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
//! exceeded (tokens, cost or turns) or formats that do not go together,
//! 130 interrupted (Ctrl+C); SIGTERM, SIGHUP and SIGQUIT end the run the
//! same way, with 143, 129 and 131. Of several runs (`--input-format
//! stream-json`) the first that did not succeed gives the code; a line of
//! input that is not a user message stops the reading with 1.

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
use smith_host::stream_json::{self, RunEnd, StreamJson};
use smith_host::{
    Extensions, LiveProviders, Runtime, RuntimeOptions, SessionChoice, choose_provider, mock,
};
use smith_plugins::hooks::Frontend;
use smith_tui::signals;

mod stream_input;
use stream_input::{Next, StreamInput};

/// Run one prompt through the agent without the TUI.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The prompt (`-` reads it from standard input); left out with `--input-format stream-json`.
    #[arg(required_unless_present = "input_format")]
    pub prompt: Option<String>,
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
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// Print Claude Code's headless shapes instead of smith's own (for tools built around `claude -p`; see docs/cli.md): stream-json (one object a line: system init, assistant and user messages, result) or json (the result object alone); text is the default human output.
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub output_format: Option<OutputFormat>,
    /// Where the prompts come from: text (the PROMPT argument; the default) or stream-json (Claude Code user messages on standard input, one a line, run one after another on the same session until standard input ends; needs --output-format stream-json and no PROMPT).
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub input_format: Option<InputFormat>,
    /// Continue this session (a name, an id or a unique id prefix).
    #[arg(long, value_name = "REF", conflicts_with_all = ["no_session", "name"])]
    pub session: Option<String>,
    /// Name the new session (default: the prompt's first words, `fix-the-login-bug`, numbered -2, -3… when taken; eval-<time> when it has none).
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
            prompt: Some(prompt),
            choice: ProviderChoice::default(),
            mock_script: None,
            mock_record: None,
            json: false,
            output_format: None,
            input_format: None,
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

/// What `smith eval` prints (`--output-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Human-readable: streamed text on standard output, tools and usage on standard error.
    #[default]
    Text,
    /// Claude Code's single `result` object, at the end.
    Json,
    /// Claude Code's events, one JSON object a line.
    StreamJson,
}

/// Where `smith eval`'s prompts come from (`--input-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// The PROMPT argument.
    #[default]
    Text,
    /// Claude Code user messages on standard input, one a line.
    StreamJson,
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
    /// How much the model thinks: off or a catalog level (minimal, low, medium, high, max); sent only as far as the model's catalog entry lists the level, else the nearest it lists or none, with a warning (default: the thinking option, SMITH_THINKING, else off).
    #[arg(long, value_name = "LEVEL", value_parser = thinking_level)]
    pub thinking: Option<String>,
    /// Start in plan mode (the built-in plugin smith/plan): the agent researches and proposes a plan, and every tool that can change something is blocked until you approve the plan; kept in the session until then (default: the plan option, SMITH_PLAN, else off).
    #[arg(long)]
    pub plan: bool,
    /// Run the main thread as the custom agent NAME (the built-in plugin smith/agents: NAME.md in the project's .smith/agents or .claude/agents, or the user's): its body joins the system prompt, its `tools` are the only tools offered, its `model` and `provider` apply unless --model or --provider is given; `smith agents list` lists them (default: the agent option, SMITH_AGENT, else none).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

impl ProviderChoice {
    /// Checks the flags that need a built-in plugin before anything else
    /// happens; [`ProviderChoice::settle`], once the command works in its
    /// folder, puts them in effect for every runtime this process starts.
    /// `no_plugins` is whether the command runs without extension plugins.
    ///
    /// When `--plan` is given but smith/plan, which provides plan mode, will
    /// not run (`--no-plugins`, or the user disabled it), it reports why and
    /// returns the exit code (2): running anyway would let the agent change
    /// what plan mode was asked to protect.
    pub fn apply(&mut self, no_plugins: bool) -> Option<u8> {
        self.apply_plan(no_plugins)
    }

    /// The second half of [`ProviderChoice::apply`], once the command works
    /// in its folder (after `--cwd`): resolves the agent `--agent` (or the
    /// `agent` option) names, where the project's agents and
    /// configuration are the folder's, and puts the options these flags
    /// set for the runtime's plugins in effect. Returns the exit code (2)
    /// when the agent cannot be used.
    pub fn settle(&mut self, no_plugins: bool) -> Option<u8> {
        let mut flags = Vec::new();
        if let Some(code) = self.apply_agent(no_plugins, &mut flags) {
            return Some(code);
        }
        if self.plan {
            flags.push(("--plan".to_owned(), "true".to_owned()));
        }
        if !flags.is_empty() {
            smith_host::settings::set_command_line(flags);
        }
        None
    }

    /// Resolves the agent `--agent` (or the `agent` option) names through
    /// smith/agents: its model and provider fill in what `--model` and
    /// `--provider` left open, its tools restrict every runtime's, and the
    /// plugin learns its name (for the prompt) through `flags`. An unknown
    /// agent, or agents unavailable, refuses the command (exit code 2).
    fn apply_agent(&mut self, no_plugins: bool, flags: &mut Vec<(String, String)>) -> Option<u8> {
        let (name, source) = match &self.agent {
            Some(name) => (name.clone(), "--agent".to_owned()),
            None => {
                let config = crate::settings::config().ok()?;
                let name = config.str(&smith_config::options::AGENT)?.trim().to_owned();
                if name.is_empty() {
                    return None;
                }
                let source = config.source(&smith_config::options::AGENT).map_or_else(
                    || "the agent option".to_owned(),
                    |s| format!("the agent option ({s})"),
                );
                (name, source)
            }
        };
        let refused = |why: String, next: &str| {
            crate::report::diagnostic(
                &smith_diag::Diagnostic::error(
                    "cli.agent",
                    format!("{source} asked for the agent `{name}`, so nothing ran"),
                    why,
                    next,
                )
                .with_surface(smith_diag::Surface::flag("--agent")),
            );
            Some(2)
        };
        if no_plugins {
            return refused(
                format!(
                    "agents come from the built-in plugin {}, and --no-plugins runs without extension plugins",
                    smith_host::agents::PLUGIN
                ),
                "leave out --no-plugins or --agent",
            );
        }
        let agent = match smith_host::agents::resolve(&name) {
            Ok(agent) => agent,
            Err(why) => {
                return refused(
                    why,
                    "give the name of an agent `smith agents list` shows, or leave out --agent",
                );
            }
        };
        if self.model.is_none() {
            self.model.clone_from(&agent.model);
        }
        if self.provider.is_none() {
            self.provider.clone_from(&agent.provider);
        }
        flags.push(("--agent".to_owned(), agent.name.clone()));
        smith_host::agents::set_active(agent);
        None
    }

    fn apply_plan(&self, no_plugins: bool) -> Option<u8> {
        if !self.plan {
            return None;
        }
        let refused = |why: &str, next: &str| {
            crate::report::diagnostic(
                &smith_diag::Diagnostic::error(
                    "cli.plan",
                    "--plan was refused and nothing ran",
                    why,
                    next,
                )
                .with_surface(smith_diag::Surface::flag("--plan")),
            );
            Some(2)
        };
        if no_plugins {
            return refused(
                "plan mode is the built-in plugin smith/plan, and --no-plugins runs without extension plugins, so nothing would be blocked",
                "leave out --no-plugins or --plan",
            );
        }
        let disabled = smith_config::Paths::from_process()
            .map(|paths| smith_host::plugins::disabled(&paths))
            .unwrap_or_default();
        if disabled.iter().any(|name| name == "smith/plan") {
            return refused(
                "plan mode is the built-in plugin smith/plan, which is disabled, so nothing would be blocked",
                "enable it with `smith plugin enable smith/plan`, or leave out --plan",
            );
        }
        None
    }
}

/// Parses a `--thinking` value: `off` or a catalog level, as written.
///
/// # Errors
///
/// When `given` is not one of them; the message names it and the levels.
pub fn thinking_level(given: &str) -> Result<String, String> {
    smith_provider_host::parse_level(given)
        .map(|level| smith_provider_host::level_name(level).to_owned())
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

/// Where the events of a run go: the human rendering, smith's JSON Lines,
/// or Claude Code's shapes.
enum Sink<'a> {
    Human(HumanPrinter),
    Smith(JsonLines<std::io::StdoutLock<'a>>),
    Claude {
        map: Box<StreamJson>,
        /// `stream-json` (every object) rather than `json` (the result).
        stream: bool,
        /// Renders what Claude Code's shapes have no place for (errors,
        /// retries, compactions) on standard error.
        notices: HumanPrinter,
    },
}

/// Writes `value` as one line and flushes it, so that a reader sees each
/// object as it is made.
fn write_object(out: &mut impl Write, value: &serde_json::Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Sink<'_> {
    /// A run starts.
    fn start_run(&mut self) {
        if let Sink::Claude { map, .. } = self {
            map.start_run(Instant::now());
        }
    }

    /// Shows one event.
    fn event(&mut self, out: &mut impl Write, event: &Event) -> anyhow::Result<()> {
        match self {
            Sink::Human(printer) => printer.event(out, event)?,
            Sink::Smith(lines) => lines.write(&crate::report::event_record(event)?)?,
            Sink::Claude {
                map,
                stream,
                notices,
            } => {
                if let Some(object) = map.event(event, Instant::now())
                    && *stream
                {
                    write_object(out, &object)?;
                }
                if matches!(
                    event,
                    Event::Error(_)
                        | Event::ProviderRetry { .. }
                        | Event::CompactionStart { .. }
                        | Event::CompactionEnd { .. }
                ) {
                    notices.event(&mut std::io::sink(), event)?;
                }
            }
        }
        Ok(())
    }

    /// Shows how a run ended; `session` is the session for smith's own
    /// result record.
    fn end_run(
        &mut self,
        out: &mut impl Write,
        end: RunEnd<'_>,
        session: &serde_json::Value,
    ) -> anyhow::Result<()> {
        match self {
            Sink::Human(printer) => {
                printer.end_line(out)?;
                out.flush()?;
                eprintln!("{}", format_usage(end.usage, end.cost));
            }
            Sink::Smith(lines) => lines.write(&result_record(
                end.stop,
                end.text,
                end.usage,
                end.cost,
                session.clone(),
            ))?,
            Sink::Claude { map, .. } => write_object(out, &map.result(end, Instant::now()))?,
        }
        Ok(())
    }
}

/// How one run ended: `agent_end`'s stop, usage, cost and text (`None`
/// when the runtime stopped without finishing it), and whether a signal
/// interrupted it.
struct Ended {
    end: Option<(StopCause, Usage, Option<f64>, String)>,
    interrupted: bool,
}

/// Shows the events of the run just started until it settles (or an
/// interrupt gives up on it).
fn drive(
    handle: &smith_engine::agent::AgentHandle,
    sink: &mut Sink<'_>,
    out: &mut impl Write,
) -> anyhow::Result<Ended> {
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
        let shown = sink.event(out, &event);
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
    Ok(Ended {
        end,
        interrupted: interrupted.is_some(),
    })
}

/// A diagnostic for formats that do not go together (status 2, as for
/// any command line smith cannot run).
fn formats_refused(what: &str, why: &str, next: &str, flag: &str) -> u8 {
    crate::report::diagnostic(
        &smith_diag::Diagnostic::error("cli.format", what, why, next)
            .with_surface(smith_diag::Surface::flag(flag)),
    );
    2
}

/// Runs the command.
///
/// # Errors
///
/// When the provider, script, working directory or session store cannot be
/// set up; nothing has run then.
pub fn run(mut args: Args) -> anyhow::Result<u8> {
    if let Some(code) = args.choice.apply(args.no_plugins) {
        return Ok(code);
    }
    let output = args.output_format.unwrap_or_default();
    let streamed = args.input_format == Some(InputFormat::StreamJson);
    if streamed && output != OutputFormat::StreamJson {
        return Ok(formats_refused(
            "--input-format stream-json needs --output-format stream-json",
            "each user message read is answered by its own result object, which only the stream-json output has room for",
            "add --output-format stream-json",
            "--input-format",
        ));
    }
    if streamed && args.prompt.is_some() {
        return Ok(formats_refused(
            "a PROMPT was given with --input-format stream-json",
            "with --input-format stream-json the prompts are the user messages on standard input, and the argument would be a second source",
            "send the prompt as the first user message on standard input, or leave --input-format stream-json out",
            "--input-format",
        ));
    }
    let input = if streamed {
        Some(StreamInput::spawn()?)
    } else {
        None
    };
    let first = match (&input, args.prompt.take()) {
        (Some(input), _) => input.first()?,
        (None, Some(prompt)) if prompt == "-" => prompt_from_stdin()?,
        (None, Some(prompt)) => prompt,
        (None, None) => {
            return Ok(formats_refused(
                "smith eval was given no PROMPT",
                "with --input-format text (the default) the prompt is the argument",
                "give the prompt as an argument (`smith eval \"fix the tests\"`, `-` to read it from standard input), or read user messages with --input-format stream-json --output-format stream-json",
                "--input-format",
            ));
        }
    };
    let cwd = match args.cwd.clone() {
        Some(dir) => super::enter_cwd(&dir, [&mut args.mock_script, &mut args.mock_record])?,
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    if let Some(code) = args.choice.settle(args.no_plugins) {
        return Ok(code);
    }
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
        args.choice.thinking.as_deref(),
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
        match &args.name {
            Some(name) => SessionChoice::New(Some(name.clone())),
            // Named after the prompt's first words (eval-<time> when it
            // has none).
            None => SessionChoice::Titled(first.to_string(), "eval".to_owned()),
        }
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
            cwd.clone(),
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
        model,
        tools,
        ..
    } = options
        .start(&choice)
        .map_err(|e| e.into_cli(" given with --session"))?;
    // The ending signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) abort the run
    // below; a second one stops waiting for it.
    signals::install();
    let session_id = journal.session_id().to_hex();
    let session_record = match &temp {
        None => serde_json::json!({"name": name, "id": session_id}),
        Some(_) => serde_json::Value::Null,
    };

    let stdout = std::io::stdout();
    let mut sink = if args.json {
        Sink::Smith(JsonLines::start(stdout.lock())?)
    } else if output == OutputFormat::Text {
        Sink::Human(HumanPrinter::default())
    } else {
        let mut map = StreamJson::new(
            stream_json::Session {
                id: session_id,
                cwd: cwd.display().to_string(),
                model,
                tools,
            },
            args.max_cost,
        );
        let stream = output == OutputFormat::StreamJson;
        if stream {
            write_object(&mut stdout.lock(), &map.init())?;
        }
        Sink::Claude {
            map: Box::new(map),
            stream,
            notices: HumanPrinter::default(),
        }
    };
    let mut out = stdout.lock();
    let mut prompt = Some(first);
    let mut code: Option<u8> = None;
    let mut last_stop = StopCause::Done;
    let mut interrupted = false;
    while let Some(text) = prompt.take() {
        handle.send(Command::Prompt { text })?;
        sink.start_run();
        let ended = drive(&handle, &mut sink, &mut out)?;
        interrupted = ended.interrupted;
        let Some((stop, usage, cost, text)) = ended.end else {
            handle.shutdown();
            bail!(
                "the agent runtime stopped without finishing the run; the session holds what was recorded"
            );
        };
        last_stop = stop;
        let run_code = signal_exit_code(stop, interrupted);
        let end = RunEnd {
            stop,
            usage: &usage,
            cost,
            text: &text,
        };
        let shown = sink.end_run(&mut out, end, &session_record);
        if interrupted {
            // The interrupt's status wins, and nothing more is read.
            code = Some(run_code);
            break;
        }
        shown?;
        if run_code != 0 {
            code.get_or_insert(run_code);
        }
        match input.as_ref().map(StreamInput::next) {
            None | Some(Next::End) => {}
            Some(Next::Prompt(next)) => prompt = Some(next),
            Some(Next::Refused(d)) => {
                crate::report::diagnostic(&d);
                code.get_or_insert(1);
            }
            Some(Next::Signal(signal)) => {
                // Between runs nothing is running: the command ends as
                // an interrupted one.
                signals::detach_after_hangup(signal);
                interrupted = true;
                last_stop = StopCause::Aborted;
                code = Some(signals::exit_code(signal));
            }
        }
    }
    if interrupted {
        shutdown_within(handle, INTERRUPT_GRACE);
    } else {
        handle.shutdown();
    }
    drop(out);
    let quiet = args.json || output != OutputFormat::Text;
    finish_session(&name, journal, temp, last_stop, quiet);
    Ok(code.unwrap_or(0))
}
