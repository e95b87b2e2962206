//! Runtime wiring shared by the frontends: provider selection, the session
//! that records effects, and starting the agent over it.
//!
//! Effects never run without a durable destination: every runtime started
//! here records into a session of a [`Store`] through a [`StoreJournal`]
//! (a new named session, or an existing one resumed with its history, model
//! and effect numbering).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::agent::{
    self, AgentConfig, AgentHandle, Answerer, Hooks, Services, SessionGate, default_policies,
};
use smith_engine::journal::EffectState;
use smith_engine::journal::store::{StoreJournal, resume};
use smith_engine::provider::scripted::MOCK_MODEL;
use smith_engine::provider::{Provider, ProviderInfo, Transport};
use smith_engine::tools::{ToolContext, ToolSet};
use smith_store::Store;

/// A runtime could not be set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupError {
    /// What happened, why, and what to do next.
    pub message: String,
}

impl SetupError {
    /// A setup failure described by `message` (what happened and what to do
    /// next).
    pub fn new(message: impl Into<String>) -> Self {
        SetupError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SetupError {}

/// A provider built for one runtime by [`LiveProviders`], with the
/// transport that carries its requests.
pub struct Live {
    /// The provider.
    pub provider: Box<dyn Provider>,
    /// The transport its requests go through.
    pub transport: Arc<dyn Transport>,
    /// The model it resolved (default: the session's, else the provider's
    /// first).
    pub model: Option<String>,
}

/// Builds a fresh provider for each runtime. Providers (the smith/mock
/// plugin, the vendor plugins with the HTTP engine, catalog and
/// credentials) are wired by the binary, so the binary hands the server
/// this factory; a library user passes its own.
#[derive(Clone)]
pub struct LiveProviders(pub Arc<dyn Fn() -> Result<Live, SetupError> + Send + Sync>);

impl std::fmt::Debug for LiveProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveProviders(..)")
    }
}

/// Which session records the runtime's effects and conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session with this name (or unnamed).
    New(Option<String>),
    /// An existing session by name, id or unique id prefix.
    Open(String),
}

/// A session opened for recording.
#[derive(Debug)]
pub struct Destination {
    /// The journal over the session.
    pub journal: Arc<StoreJournal>,
    /// The session's name, or its id when unnamed.
    pub name: String,
    /// The resumed conversation.
    pub history: Vec<smith_engine::provider::Message>,
    /// The last effect number used (new effects continue after it).
    pub last_effect_seq: u64,
    /// The recorded model, when resuming.
    pub model: Option<String>,
    /// Effects with an intent but no completion (never retried).
    pub unknown_effects: Vec<String>,
}

/// Opens (or creates) the session that will record effects.
///
/// # Errors
///
/// When the session cannot be created, found or resumed.
pub fn open_destination(
    root: &std::path::Path,
    choice: &SessionChoice,
) -> Result<Destination, SetupError> {
    let store = Store::open(root).map_err(|e| {
        SetupError::new(format!(
            "could not open the session store at {}: {e}",
            root.display()
        ))
    })?;
    match choice {
        SessionChoice::New(name) => {
            let session = store.create(name.as_deref()).map_err(|e| {
                SetupError::new(format!(
                    "could not create session {} in {}: {e}",
                    name.as_deref().unwrap_or("(unnamed)"),
                    root.display()
                ))
            })?;
            let name = name.clone().unwrap_or_else(|| session.id().to_hex());
            Ok(Destination {
                journal: Arc::new(StoreJournal::new(store, session)),
                name,
                history: Vec::new(),
                last_effect_seq: 0,
                model: None,
                unknown_effects: Vec::new(),
            })
        }
        SessionChoice::Open(reference) => {
            let session = store.load(reference).map_err(|e| {
                SetupError::new(format!(
                    "could not open session {reference:?}: {e}; list the sessions with `smith session list`"
                ))
            })?;
            let resumed = resume(&session).map_err(|e| {
                SetupError::new(format!("could not resume session {reference:?}: {e}"))
            })?;
            let unknown_effects = resumed
                .effects
                .iter()
                .filter(|(_, s)| *s == EffectState::Unknown)
                .map(|(id, _)| id.clone())
                .collect();
            let name = store
                .name_of(session.id())
                .unwrap_or_else(|| session.id().to_hex());
            Ok(Destination {
                journal: Arc::new(StoreJournal::new(store, session)),
                name,
                history: resumed.history,
                last_effect_seq: resumed.last_effect_seq,
                model: resumed.model.map(|(_, m)| m),
                unknown_effects,
            })
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
    /// The provider's self-description (models).
    pub provider: ProviderInfo,
    /// What the runtime's extensions say before a session switch or fork
    /// (none without extensions).
    pub gate: Option<SessionGate>,
    /// Where the answers to the extensions' questions go (none without
    /// extensions).
    pub answerer: Option<Answerer>,
}

/// Everything needed to start runtimes.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Builds the provider of each runtime (a fresh one each time, so a
    /// scripted provider plays its script from the start).
    pub live: LiveProviders,
    /// The model (default: the one the factory resolves, else the
    /// session's, else the provider's first).
    pub model: Option<String>,
    /// The working directory of the tools.
    pub cwd: PathBuf,
    /// The session store root.
    pub store_root: PathBuf,
    /// Stop a run after this many turns.
    pub max_turns: Option<u32>,
    /// Builds the extensions that take part in each runtime (plugins wired
    /// by the binary); without it runs have no hooks.
    pub hooks: Option<HooksFactory>,
}

/// Builds a runtime's hooks from its session journal and the effect-number
/// counter the runtime shares with them (see `AgentConfig::effect_ids`);
/// `None` when there is nothing to hook in.
#[derive(Clone)]
pub struct HooksFactory(pub Arc<HooksFn>);

/// What a [`HooksFactory`] calls.
pub type HooksFn =
    dyn Fn(&Arc<StoreJournal>, &Arc<AtomicU64>) -> Option<Box<dyn Hooks>> + Send + Sync;

impl std::fmt::Debug for HooksFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HooksFactory(..)")
    }
}

impl RuntimeOptions {
    /// Starts an agent recording into `choice`.
    ///
    /// # Errors
    ///
    /// Provider, working directory, session or thread setup failures.
    pub fn start(&self, choice: &SessionChoice) -> Result<Runtime, SetupError> {
        let Live {
            provider,
            transport,
            model: live_model,
        } = (self.live.0)()?;
        let info = provider.describe();
        let tool_context = ToolContext::new(&self.cwd)
            .map_err(|e| SetupError::new(format!("cannot work in {}: {e}", self.cwd.display())))?;
        let destination = open_destination(&self.store_root, choice)?;
        for effect in &destination.unknown_effects {
            eprintln!(
                "smith: effect {effect} in session {} has a recorded intent but no completion: its outcome is unknown and it will not be retried",
                destination.name
            );
        }
        let model = self
            .model
            .clone()
            .or(live_model)
            .or(destination.model)
            .unwrap_or_else(|| {
                info.models
                    .first()
                    .map_or_else(|| MOCK_MODEL.to_owned(), |m| m.id.clone())
            });
        let mut config = AgentConfig::new(model);
        config.max_turns = self.max_turns;
        config.history = destination.history;
        config.first_effect_seq = destination.last_effect_seq;
        config.system = Some(format!(
            "You are smith, a coding agent. Work in {} using the tools you are given.",
            self.cwd.display()
        ));
        let services = Services {
            provider,
            transport,
            tools: ToolSet::builtin(),
            tool_context,
            journal: destination.journal.clone(),
            sink: destination.journal.clone(),
            policies: default_policies(),
        };
        let hooks = self.hooks.as_ref().and_then(|factory| {
            let ids = Arc::new(AtomicU64::new(config.first_effect_seq));
            config.effect_ids = Some(Arc::clone(&ids));
            (factory.0)(&destination.journal, &ids)
        });
        let gate = hooks.as_ref().and_then(|h| h.session_gate());
        let answerer = hooks.as_ref().and_then(|h| h.answerer());
        let handle = match hooks {
            Some(hooks) => agent::spawn_with_hooks(config, services, hooks),
            None => agent::spawn(config, services),
        }
        .map_err(|e| SetupError::new(e.message))?;
        Ok(Runtime {
            handle,
            journal: destination.journal,
            name: destination.name,
            provider: info,
            gate,
            answerer,
        })
    }
}
