//! Starting a runtime: one path every frontend takes from a chosen provider
//! and a session choice to a running agent.
//!
//! [`RuntimeOptions::start`] (or [`RuntimeOptions::start_with`] when the
//! frontend chose the provider itself) opens the session destination
//! ([`crate::session`]), resolves the model, assembles the request context
//! ([`crate::context`]), registers the secrets the runtime redacts
//! ([`crate::secrets`]), loads the extension plugins with the frontend's
//! surface ([`crate::extensions`]) and spawns the agent over the session
//! journal.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::agent::compact::{BYTES_PER_TOKEN, MAX_SUMMARIZED_WINDOWS};
use smith_engine::agent::{
    self, AgentConfig, AgentError, AgentHandle, Answerer, Budget, Services, SessionGate,
    default_policies,
};
use smith_engine::approval::Approval;
use smith_engine::checkpoint::Checkpoints;
use smith_engine::journal::store::StoreJournal;
use smith_engine::provider::scripted::MOCK_MODEL;
use smith_engine::provider::{Provider, ProviderInfo, Transport};
use smith_engine::tools::{ToolContext, ToolError, ToolSet};
use smith_plugins::hooks::{Commands, Frontend};

use crate::session::{self, Destination, SessionChoice, SessionError};

/// A provider built for one runtime, with the transport that carries its
/// requests.
pub struct Live {
    /// The provider.
    pub provider: Box<dyn Provider>,
    /// The transport its requests go through.
    pub transport: Arc<dyn Transport>,
    /// The model name requests carry, for live providers (resolved from the
    /// model option or the provider's default); `None` for the scripted
    /// provider.
    pub model: Option<String>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// Builds a fresh provider for each runtime (so a scripted provider plays
/// its script from the start each time).
#[derive(Clone)]
pub struct LiveProviders(pub Arc<dyn Fn() -> anyhow::Result<Live> + Send + Sync>);

impl LiveProviders {
    /// A factory that hands out `live` to the first runtime; a frontend
    /// that chose its provider itself (and reported the choice) starts its
    /// one runtime with it.
    pub fn once(live: Live) -> Self {
        let ready = std::sync::Mutex::new(Some(live));
        LiveProviders(Arc::new(move || {
            ready.lock().ok().and_then(|mut r| r.take()).ok_or_else(|| {
                anyhow::anyhow!(
                    "the provider chosen for this command was already used by its runtime; start the command again"
                )
            })
        }))
    }
}

impl std::fmt::Debug for LiveProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveProviders(..)")
    }
}

/// Builds the surface through which a runtime's extension plugins reach
/// the frontend (notices, questions, kept intents, warnings), given the
/// runtime's session journal.
#[derive(Clone)]
pub struct Extensions(pub Arc<SurfaceFn>);

/// What [`Extensions`] calls.
pub type SurfaceFn = dyn Fn(&Arc<StoreJournal>) -> Box<dyn Frontend> + Send + Sync;

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Extensions(..)")
    }
}

/// Everything needed to start runtimes.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Builds the provider of each runtime started with
    /// [`RuntimeOptions::start`].
    pub live: LiveProviders,
    /// The model the user asked for (default: the one the provider
    /// resolves, else the session's, else the provider's first).
    pub model: Option<String>,
    /// The working directory of the tools.
    pub cwd: PathBuf,
    /// The session store root.
    pub store_root: PathBuf,
    /// Stop a run after this many turns.
    pub max_turns: Option<u32>,
    /// Stop a run past these tokens or this cost.
    pub budget: Budget,
    /// The frontend's surface for extension plugins; without it runs have
    /// no plugins.
    pub extensions: Option<Extensions>,
    /// Whether standard error carries the runtime's notices (effects of a
    /// resumed session whose outcome is unknown); a fullscreen frontend
    /// shows what it needs itself.
    pub notices_on_stderr: bool,
    /// Where the projects' checkpoint stores live (`<data dir>/checkpoints`);
    /// with it, the project is snapshotted before and after every mutating
    /// effect (see `smith_engine::checkpoint`). `None` turns checkpoints off.
    pub checkpoints: Option<PathBuf>,
    /// Where the extension plugins' questions that wait (`ask`) go: the
    /// frontend's question broker or its policy. `None`: every question
    /// fails saying no frontend answers questions.
    pub questions: Option<crate::questions::Asking>,
    /// The approval mode the runtime's tools and permission policy share
    /// (`--approval`, configuration, `/approval`).
    pub approval: smith_engine::approval::ApprovalCell,
    /// Who reads and writes the file tools' files and runs `bash`'s
    /// unsandboxed commands instead of the tools (an editor, through
    /// `smith acp`); the default: the tools themselves.
    pub backends: smith_engine::tools::ToolBackends,
}

/// The built-in plugin that asks before tools run and applies the
/// permission rules.
const PERMISSION_POLICY: &str = "smith/permissions";

/// `<data dir>/checkpoints`, when the data directory is known.
pub fn checkpoints_root() -> Option<PathBuf> {
    smith_config::paths::Paths::from_process()
        .ok()
        .map(|p| p.data_dir.join("checkpoints"))
}

/// The checkpoint store of the project in `cwd` (opened on the first
/// mutating effect): none for the file-system root or the home directory,
/// too large to snapshot around every effect.
fn checkpoints_for(root: &Path, cwd: &Path) -> Option<Arc<Checkpoints>> {
    let canonical = std::fs::canonicalize(cwd).ok()?;
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    if canonical.parent().is_none() || home.as_deref() == Some(canonical.as_path()) {
        return None;
    }
    Some(Arc::new(Checkpoints::lazy(&canonical, root)))
}

impl RuntimeOptions {
    /// Options for runtimes of `live`'s providers working in `cwd` and
    /// recording under `store_root`: no model asked for, no limits, no
    /// plugins, notices on standard error.
    pub fn new(live: LiveProviders, cwd: PathBuf, store_root: PathBuf) -> Self {
        RuntimeOptions {
            live,
            model: None,
            cwd,
            store_root,
            max_turns: None,
            budget: Budget::default(),
            extensions: None,
            notices_on_stderr: true,
            checkpoints: checkpoints_root(),
            questions: None,
            approval: smith_engine::approval::ApprovalCell::new(
                smith_engine::approval::Approval::Workspace,
            ),
            backends: smith_engine::tools::ToolBackends::default(),
        }
    }
}

/// A running agent over a session.
#[derive(Debug)]
pub struct Runtime {
    /// The agent.
    pub handle: AgentHandle,
    /// The session journal.
    pub journal: Arc<StoreJournal>,
    /// The session name (or id).
    pub name: String,
    /// The model the runtime started with.
    pub model: String,
    /// The provider's self-description (models).
    pub provider: ProviderInfo,
    /// The names of the tools offered to the model (built-ins, then the
    /// extensions'), in offer order.
    pub tools: Vec<String>,
    /// What the runtime's extensions say before a session switch or fork
    /// (none without extensions).
    pub gate: Option<SessionGate>,
    /// Where the answers to the extensions' questions go (none without
    /// extensions).
    pub answerer: Option<Answerer>,
    /// The commands the runtime's extensions provide (none without
    /// extensions).
    pub commands: Option<Commands>,
    /// The mode names input can be queued under (the runtime's queue
    /// policies, in order: `steer`, `follow_up` and the plugins' own).
    pub queue_modes: Vec<String>,
    /// The approval mode shared by the runtime's tools and permission
    /// policy; setting it changes both at once.
    pub approval: smith_engine::approval::ApprovalCell,
    /// The runtime's background jobs (`bash` with `background: true`);
    /// they end when the runtime's last holder drops it.
    pub jobs: Arc<smith_engine::tools::jobs::Jobs>,
    /// Whether an existing session was resumed.
    pub resumed: bool,
    /// When the resumed conversation starts at a compaction: its summary.
    pub compaction_summary: Option<String>,
    /// The temporary store of [`SessionChoice::Temporary`] (removed when
    /// dropped).
    pub temp: Option<tempfile::TempDir>,
    /// When the resumed session's branch had lost its beginning to damage:
    /// what was skipped and where the conversation continues (already on
    /// standard error when the runtime's notices go there).
    pub damage: Option<smith_diag::Diagnostic>,
}

/// A runtime could not start; nothing has run.
#[derive(Debug)]
pub enum StartError {
    /// The provider could not be built.
    Provider(anyhow::Error),
    /// The working directory cannot be used.
    Cwd {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: ToolError,
    },
    /// The session destination could not be opened.
    Session(SessionError),
    /// The agent's threads could not start.
    Spawn(AgentError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Provider(e) => write!(f, "{e:#}"),
            StartError::Cwd { dir, source } => {
                write!(f, "cannot work in {}: {source}", dir.display())
            }
            StartError::Session(e) => e.fmt(f),
            StartError::Spawn(e) => f.write_str(&e.message),
        }
    }
}

impl std::error::Error for StartError {}

impl StartError {
    /// This error as the command line reports it (see
    /// [`SessionError::into_cli`] for `given`).
    pub fn into_cli(self, given: &str) -> anyhow::Error {
        match self {
            StartError::Provider(e) => e,
            StartError::Cwd { dir, source } => {
                anyhow::anyhow!("{source}").context(format!("cannot work in {}", dir.display()))
            }
            StartError::Session(e) => e.into_cli(given),
            StartError::Spawn(e) => e.into(),
        }
    }
}

impl RuntimeOptions {
    /// Starts an agent recording into `choice`, with a provider from
    /// [`RuntimeOptions::live`].
    ///
    /// # Errors
    ///
    /// Provider, working directory, session or thread setup failures.
    pub fn start(&self, choice: &SessionChoice) -> Result<Runtime, StartError> {
        let live = (self.live.0)().map_err(StartError::Provider)?;
        self.start_with(live, choice)
    }

    /// Starts an agent over `live` recording into `choice`.
    ///
    /// # Errors
    ///
    /// Working directory, session or thread setup failures.
    pub fn start_with(&self, live: Live, choice: &SessionChoice) -> Result<Runtime, StartError> {
        let Live {
            provider,
            transport,
            model: live_model,
        } = live;
        let info = provider.describe();
        let mut tool_context = ToolContext::new(&self.cwd).map_err(|source| StartError::Cwd {
            dir: self.cwd.clone(),
            source,
        })?;
        if let Some(root) = &self.checkpoints
            && let Some(c) = checkpoints_for(root, &self.cwd)
        {
            tool_context = tool_context.with_checkpoints(c);
        }
        tool_context = tool_context
            .with_approval(self.approval.clone())
            .with_backends(self.backends.clone());
        // `bash.on-timeout` and `bash.max-jobs`.
        if let Ok(config) = crate::settings::config() {
            let limits = crate::settings::bash_limits(config, tool_context.limits().clone());
            tool_context = tool_context.with_limits(limits);
        }
        // What earlier runs left in the output folder (killed runs' files,
        // full outputs past their day) and killed runs' sandbox temporary
        // directories are removed off the start's path.
        let outputs = tool_context.output_dir().to_owned();
        let _ = std::thread::Builder::new()
            .name("smith-sweep".to_owned())
            .spawn(move || {
                smith_engine::tools::bash::sweep_outputs(
                    &outputs,
                    smith_engine::tools::bash::KEEP_OUTPUTS,
                );
                smith_engine::tools::sandbox::sweep_temp_dirs(&std::env::temp_dir());
            });
        // The sandbox the tools and the plugins' processes run in while the
        // approval mode is sandboxed (every mode but `full`).
        let sandbox = (
            crate::sandbox::for_runtime(&self.cwd),
            self.approval.clone(),
        );
        tool_context = tool_context.with_sandbox(Arc::clone(&sandbox.0));
        // The model this runtime will use: the resolved model of a live
        // provider, else the one asked for, else the provider's first; a
        // resumed session's model when none was asked for.
        let choose_model = |recorded: Option<&str>| -> String {
            if self.model.is_none()
                && let Some(recorded) = recorded
            {
                return recorded.to_owned();
            }
            match (&live_model, &self.model) {
                (Some(name), _) => name.clone(),
                (None, Some(model)) => model.clone(),
                (None, None) => info
                    .models
                    .first()
                    .map_or_else(|| MOCK_MODEL.to_owned(), |m| m.id.clone()),
            }
        };
        // A resumed session's messages are decoded only as far as that
        // model's context window can use them: what one compaction can
        // summarize ([`MAX_SUMMARIZED_WINDOWS`] summary requests) plus a
        // window for what it keeps, and one more for the estimate's error.
        let resume_budget = |recorded: Option<&str>| -> Option<u64> {
            let model = choose_model(recorded);
            let window = info
                .models
                .iter()
                .find(|m| m.id == model)
                .and_then(|m| m.context_window)?;
            Some(
                window
                    .saturating_mul(BYTES_PER_TOKEN)
                    .saturating_mul(MAX_SUMMARIZED_WINDOWS + 2),
            )
        };
        let destination = session::open_within(&self.store_root, choice, &resume_budget)
            .map_err(StartError::Session)?;
        if self.notices_on_stderr {
            session::warn_unknown_effects(&destination);
        }
        let Destination {
            journal,
            name,
            history,
            history_omitted,
            last_effect_seq,
            model: session_model,
            resumed,
            compaction_summary,
            temp,
            damage,
            ..
        } = destination;
        if let Some(damage) = &damage {
            smith_diag::log::report(damage);
        }
        let model = choose_model(session_model.as_deref());
        let mut config = AgentConfig::new(model.clone());
        if live_model.is_some() {
            config.pricing = info.models.first().and_then(|m| m.pricing);
        }
        config.max_turns = self.max_turns;
        config.budget = self.budget;
        config.history = history;
        config.history_omitted = history_omitted;
        config.first_effect_seq = last_effect_seq;
        // Every credential smith can see is redacted before anything is
        // sent to the provider, recorded or shown.
        let (secrets, recordable) = crate::secrets::process_registry();
        config.redactor = secrets.redactor();
        if recordable
            && let Err(err) = journal.record_secret_registrations(&secrets.registrations())
        {
            smith_diag::log::report(&smith_diag::Diagnostic::warning(
                "secrets.not-recorded",
                "the secrets this runtime redacts were not recorded in the session",
                format!("the session store refused the entries: {err}"),
                "nothing else changes: they are redacted all the same; check the session store (`smith session repair`)",
            ));
        }
        if recordable {
            secrets.record_later(Arc::clone(&journal));
        }
        // Tool effects and plugin host effects draw their numbers from one
        // counter, so every fx-N in the session is unique.
        let ids = Arc::new(AtomicU64::new(config.first_effect_seq));
        config.effect_ids = Some(Arc::clone(&ids));
        // A background job's end is an effect of its own, numbered with
        // the rest.
        tool_context
            .jobs()
            .record_ends(journal.clone(), Arc::clone(&ids));
        // The plugins' queue policies (smith/product's steer and
        // follow_up among them); the engine's own two only when no plugin
        // declares any.
        let mut policies = default_policies();
        let mut permission_policy = false;
        // The custom agents there are, when smith/agents is loaded (it
        // brings the `agent` tool).
        let mut agents: Option<Vec<(String, String)>> = None;
        let hooks = self.extensions.as_ref().and_then(|surface| {
            let (mut plugins, plugin_config, mut warnings) =
                crate::extensions::load_for_checkpointed_runtime(
                    &journal,
                    &ids,
                    self.questions.as_ref(),
                    &sandbox,
                    &self.cwd,
                    tool_context.checkpoints().cloned(),
                );
            permission_policy = plugins.iter().any(|p| p.name() == PERMISSION_POLICY);
            agents = plugins
                .iter_mut()
                .find(|p| p.name() == crate::agents::PLUGIN)
                .map(crate::agents::listed);
            let (declared, refused) = crate::extensions::queue_policies(&plugins);
            warnings.extend(refused);
            if !declared.is_empty() {
                policies = declared;
            }
            // Every paragraph of the system prompt comes from the plugins'
            // prompt fragments (smith/product's base first).
            let assembler = crate::context::assembler(&self.cwd, &plugins);
            let mut frontend = (surface.0)(&journal);
            for warning in &warnings {
                frontend.diagnostic(warning);
            }
            crate::extensions::session_hooks(plugins, frontend, &journal.session_id().to_hex()).map(
                |hooks| {
                    hooks
                        .with_context(assembler)
                        .with_config_changes(Box::new(move || plugin_config.take_changed()))
                        .with_drop_records(crate::extensions::drop_recorder(Arc::clone(&journal)))
                },
            )
        });
        if !permission_policy && self.approval.get() == Approval::Ask {
            // Nothing can ask without the permission policy; the sandbox
            // still bounds what runs. `read-only` holds without it (the
            // engine refuses mutating calls itself).
            self.approval.set(Approval::Workspace);
            smith_diag::log::report(&smith_diag::Diagnostic::warning(
                "approval.no-policy",
                "the approval mode ask runs as workspace: nothing can ask before a tool runs",
                format!(
                    "the permission policy {PERMISSION_POLICY} is not loaded (extension plugins are off with --no-plugins, or it is disabled), and it is what asks"
                ),
                format!(
                    "changes inside the project still run confined by the sandbox and anything else is refused; load it (drop --no-plugins, or `smith plugin enable {PERMISSION_POLICY}`) to be asked"
                ),
            ));
        }
        let commands = hooks
            .as_ref()
            .map(smith_plugins::hooks::PluginHooks::commands);
        let gate = hooks.as_ref().and_then(agent::Hooks::session_gate);
        let answerer = hooks.as_ref().and_then(agent::Hooks::answerer);
        // The plugins' tools join the built-ins; a clashing name is
        // refused (the frontend hears which plugin and why).
        let mut tools = ToolSet::builtin();
        // The tools that follow `bash`'s background jobs.
        for tool in smith_engine::tools::jobs::job_tools() {
            tools.insert(tool);
        }
        if let Some(hooks) = &hooks {
            let mut taken: Vec<(String, String)> = tools
                .names()
                .map(|name| (name.to_owned(), "smith".to_owned()))
                .collect();
            for tool in hooks.tools(&mut taken) {
                tools.insert(tool);
            }
        }
        if let Some(agents) = &agents {
            tools.insert(Arc::new(agent::delegate::AgentTool::new(agents)));
            // Children record where their parent does: a session kept in
            // memory only (`--no-session`) keeps its children with it, in
            // its temporary store.
            let root = temp
                .as_ref()
                .map_or_else(|| self.store_root.clone(), |t| t.path().to_owned());
            config.delegation = Some(crate::agents::delegation(&root, &name));
        }
        // The agent the main thread runs as keeps only the tools it lists.
        if let Some(agent) = crate::agents::active() {
            for warning in crate::agents::restrict(&mut tools, agent) {
                if self.notices_on_stderr {
                    eprintln!("{}", warning.render_plain());
                }
                smith_diag::log::report(&warning);
            }
        }
        let queue_modes = policies.iter().map(|p| p.mode().to_owned()).collect();
        let tool_names = tools.names().map(str::to_owned).collect();
        let jobs = Arc::clone(tool_context.jobs());
        let services = Services {
            provider,
            transport,
            tools,
            tool_context,
            journal: journal.clone(),
            sink: journal.clone(),
            policies,
        };
        let handle = match hooks {
            Some(hooks) => agent::spawn_with_hooks(config, services, Box::new(hooks)),
            None => agent::spawn(config, services),
        }
        .map_err(StartError::Spawn)?;
        Ok(Runtime {
            handle,
            journal,
            name,
            model,
            provider: info,
            tools: tool_names,
            gate,
            answerer,
            commands,
            queue_modes,
            approval: self.approval.clone(),
            jobs,
            resumed,
            compaction_summary,
            temp,
            damage,
        })
    }
}
