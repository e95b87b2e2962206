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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use smith_engine::agent::{self, AgentConfig, Budget, Services, default_policies};
use smith_engine::journal::EffectState;
use smith_engine::journal::store::{StoreJournal, resume};
use smith_engine::protocol::{Command, Event, JsonLines, MutationState, StopCause, ToolStatus};
use smith_engine::provider::scripted::MOCK_MODEL;
use smith_engine::provider::{HostTransport, Provider, Transport, Usage};
use smith_engine::tools::{ToolContext, ToolSet};
use smith_provider_host::{LiveProvider, NetTransport, Selection, Setup, Vendor};
use smith_store::Store;

/// Run one prompt through the agent without the TUI.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The prompt.
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
    /// Run without extension plugins (built-in, user and project).
    #[arg(long)]
    pub no_plugins: bool,
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
        }
    }
}

/// Runs `prompt` with default options (what `smith "prompt"` does), with
/// the provider options given before it.
///
/// # Errors
///
/// As [`run`].
pub fn run_prompt(prompt: String, choice: ProviderChoice) -> anyhow::Result<u8> {
    let mut args = Args::for_prompt(prompt);
    args.choice = choice;
    run(args)
}

/// The provider options every command that runs the agent takes
/// (`smith "prompt"`, `eval`, `tui`, `rpc`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProviderChoice {
    /// The provider: anthropic, openai, google, openai-compatible or mock (default: SMITH_PROVIDER, else the first of anthropic, openai, google with a credential, else mock, the offline demo).
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// The model: an id of the provider, provider/model, or an alias or group from models.kdl (default: the provider's default model, or the session's).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The provider's API base URL (required for openai-compatible, e.g. http://localhost:11434/v1).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

/// The provider and transport a run uses, chosen in the order of
/// [`smith_provider_host::select`]: `--provider`, `SMITH_PROVIDER`, the
/// first provider with a credential, the offline scripted provider.
pub(crate) struct Chosen {
    /// The provider.
    pub provider: Box<dyn Provider>,
    /// The transport (the HTTP engine for live providers).
    pub transport: Arc<dyn Transport>,
    /// The model name requests carry, for live providers.
    pub model: Option<String>,
    /// A line for standard error saying what was chosen and why.
    pub note: Option<String>,
}

/// Chooses the provider; `mock` builds the scripted provider when that is
/// the choice.
pub(crate) fn choose_provider(
    provider: Option<&str>,
    model: Option<&str>,
    base_url: Option<&str>,
    mock: impl FnOnce() -> anyhow::Result<Box<dyn Provider>>,
) -> anyhow::Result<Chosen> {
    super::models::start_background_refresh();
    let failed = <anyhow::Error as From<smith_diag::Diagnostic>>::from;
    let paths = smith_config::Paths::from_process().map_err(|e| failed(e.into_diagnostic()))?;
    let resolver = Arc::new(
        smith_auth::Resolver::new(smith_provider_host::builtin_slots())
            .store(smith_auth::AuthStore::in_data_dir(&paths.data_dir)),
    );
    // The `provider` and `model` options (SMITH_PROVIDER / SMITH_MODEL,
    // config.kdl) apply when a source other than their defaults sets them.
    let config = match crate::settings::config() {
        Ok(config) => Some(config),
        Err(e) => {
            let d = e.into_diagnostic();
            eprintln!(
                "smith: warning: configuration not applied to provider selection: {}",
                smith_provider_host::diagnostic_message(&d)
            );
            smith_diag::log::report(&d.with_severity(smith_diag::Severity::Warning));
            None
        }
    };
    let configured = |decl: &smith_config::options::OptionDecl| -> Option<(String, String)> {
        let config = config.as_ref()?;
        let source = config.source(decl)?;
        if source.level() == smith_config::Level::Default {
            return None;
        }
        Some((config.str(decl)?.to_owned(), source.to_string()))
    };
    let configured_provider = configured(&smith_config::options::PROVIDER);
    let configured_model = configured(&smith_config::options::MODEL).map(|(m, _)| m);
    let model = model.or(configured_model.as_deref());
    let (selection, why) = smith_provider_host::select(
        provider,
        configured_provider
            .as_ref()
            .map(|(v, s)| (v.as_str(), s.as_str())),
        &|name| std::env::var(name).ok(),
        &resolver,
    )
    .map_err(failed)?;
    let vendor = match selection {
        Selection::Mock => {
            if base_url.is_some() {
                bail!(
                    "--base-url was given but the provider is mock (the offline scripted provider), which sends nothing; choose a provider with --provider, e.g. --provider openai-compatible --base-url URL"
                );
            }
            return Ok(Chosen {
                provider: mock()?,
                transport: Arc::new(HostTransport),
                model: None,
                note: None,
            });
        }
        Selection::Live(vendor) => vendor,
    };
    let (catalog, routes) = super::models::load().map_err(failed)?;
    let mut base_urls = std::collections::BTreeMap::new();
    for v in Vendor::ALL {
        if let Some(url) = std::env::var(v.base_url_env())
            .ok()
            .filter(|u| !u.is_empty())
        {
            base_urls.insert(v.id().to_owned(), url);
        }
    }
    if let Some(url) = base_url {
        base_urls.insert(vendor.id().to_owned(), url.to_owned());
    }
    let setup = Setup {
        snapshot: catalog.snapshot(),
        routes,
        resolver: resolver.clone(),
        base_urls,
        policy: smith_catalog::failover::Policy::default(),
        thinking: None,
    };
    let live = LiveProvider::new(setup, Some(vendor), model)
        .map_err(failed)?
        .with_plugins(
            Some(paths.cache_dir.clone()),
            config.map_or_else(
                smith_plugins::Limits::default,
                crate::settings::plugin_limits,
            ),
        );
    // Each target runs in its vendor's built-in provider plugin: a plugin
    // the user disabled is not used behind their back.
    let disabled = super::plugin::disabled(&paths);
    for target in live.targets() {
        let vendor_id = target.split('/').next().unwrap_or(&target);
        let plugin = format!("smith/{vendor_id}");
        if disabled.contains(&plugin) {
            bail!(
                "the provider plugin {plugin} is disabled, and the request would go through it (target {target}); run `smith plugin enable {plugin}` or choose another provider with --provider"
            );
        }
    }
    // The net.* timeouts; their defaults when the configuration did not load
    // (that was reported above).
    let timeouts = config
        .map(crate::settings::net_timeouts)
        .unwrap_or_default();
    let transport = NetTransport::from_env(resolver, timeouts)
        .map_err(|e| anyhow::anyhow!("could not set up the HTTP engine: {e}"))?;
    let credential = live
        .credential_origin()
        .map_or_else(String::new, |origin| format!("; credential from {origin}"));
    let note = format!(
        "smith: provider {} ({why}), model {}{credential}",
        vendor.id(),
        live.targets().join(" -> "),
    );
    Ok(Chosen {
        model: Some(live.model_name().to_owned()),
        provider: Box::new(live),
        transport: Arc::new(transport),
        note: Some(note),
    })
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

fn mock_provider(args: &Args) -> anyhow::Result<Box<dyn Provider>> {
    super::mock::provider(args.mock_script.as_deref(), args.mock_record.as_deref())
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
    let root = crate::settings::session_root()?;
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
        if args.choice.model.is_none()
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
                    ToolStatus::Blocked => "blocked",
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
                let style = smith_diag::Style::for_stderr();
                eprint!("{}", info.to_diagnostic().render_terminal(style));
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
        || mock_provider(&args),
    )?;
    if let Some(note) = &chosen.note {
        eprintln!("{note}");
        smith_diag::log::note(smith_diag::log::Level::Info, "provider.chosen", note);
    }
    let provider = chosen.provider;
    let info = provider.describe();
    let mut config = AgentConfig::new(match (&chosen.model, &args.choice.model) {
        (Some(name), _) => name.clone(),
        (None, Some(model)) => model.clone(),
        (None, None) => info
            .models
            .first()
            .map_or_else(|| MOCK_MODEL.to_owned(), |m| m.id.clone()),
    });
    if chosen.model.is_some() {
        config.pricing = info.models.first().and_then(|m| m.pricing);
    }
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
    // Tool effects and plugin host effects draw their numbers from one
    // counter, so every fx-N in the session is unique.
    let effect_ids = Arc::new(AtomicU64::new(config.first_effect_seq));
    config.effect_ids = Some(Arc::clone(&effect_ids));
    let hooks = if args.no_plugins {
        None
    } else {
        let (plugins, warnings) = super::extensions::load(&destination.journal, &effect_ids);
        for warning in &warnings {
            super::extensions::warn(warning);
        }
        super::extensions::session_hooks(
            plugins,
            Box::new(super::extensions::Headless {
                name: "eval",
                journal: Some(Arc::clone(&destination.journal)),
                asker: None,
            }),
            &destination.journal.session_id().to_hex(),
        )
    };
    let services = Services {
        provider,
        transport: chosen.transport,
        tools: ToolSet::builtin(),
        tool_context,
        journal: destination.journal.clone(),
        sink: destination.journal.clone(),
        policies: default_policies(),
    };
    let handle = match hooks {
        Some(hooks) => agent::spawn_with_hooks(config, services, Box::new(hooks))?,
        None => agent::spawn(config, services)?,
    };
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
        if let Event::Error(info) = &event {
            smith_diag::log::report(&info.to_diagnostic());
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
