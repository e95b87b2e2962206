//! Host effects a plugin asks for: capability checks, execution and the
//! effect journal.
//!
//! Every effect is checked against the plugin's [`Grants`] **before**
//! anything runs. A denied effect returns `effect-error.denied` to the guest
//! and leaves a [`Denial`] naming the plugin, the capability and the missing
//! grant. A granted effect is recorded like a built-in tool's: an
//! [`EffectIntent`](smith_engine::journal::EffectIntent) before it runs (a
//! failed intent record prevents it) and an
//! [`EffectCompletion`](smith_engine::journal::EffectCompletion) after, with
//! its three-state mutation evidence.
//!
//! [`Effects`] is one type; its methods live in one module per capability:
//! `fs` (`read-file`, `list-dir`, `write-file`, `edit-file`), `process`
//! (`run-process`), `http` (`http-request`), `secrets`, `session`
//! (`session-entries`), `state` (`session-state`, `set-session-state`), `vcs`, `ui`, `permissions`, `spawn` (`server-process`) and `web` (`web-get`). The grant check and the journal
//! records every capability shares are in `journal`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::EffectJournal;

use crate::manifest::{self, Manifest};

mod ask;
mod config;
mod fs;
mod http;
mod journal;
mod mcp_net;
mod permissions;
mod process;
mod project;
mod secrets;
mod session;
mod spawn;
mod state;
mod ui;
mod vcs;
mod web;
mod web_search;

pub use ask::{Answer, AnswerSource, Asker, MAX_QUESTION_TIMEOUT_MS, Question, QuestionKind};
pub use config::{ConfigAccess, SharedConfig};

pub use fs::{DirListing, EntryKind, MAX_DIR_ENTRIES};
pub use http::HttpResponse;
pub use permissions::{
    MAX_PEEK_BYTES, PermissionAccess, ResolvedPath, ToolAccess, TrustedProject, resolve,
};
pub use process::{
    MAX_PROCESS_OUTPUT, MAX_PROCESS_TIMEOUT, ProcessEnd, ProcessOutput, ProcessRequest,
};
pub use secrets::{
    MAX_REGISTERED_SECRET, MIN_REGISTERED_SECRET, SecretRegistration, SecretSink, SecretSource,
};
pub use session::{MAX_SESSION_PAGE, SessionSource};
pub use smith_config::permissions::PermissionRule;
pub use spawn::{
    INHERITED_ENV, MAX_LIVE, MAX_READ_WAIT, ServerProcess, SpawnRequest, kill_all as kill_spawned,
    live_groups as spawned_groups,
};
pub use state::{MAX_STATE_KEY, MAX_STATE_VALUE, SharedState, StateAccess};
pub use web::{MAX_WEB_TIMEOUT, WEB_ALLOW_HOSTS};

/// The largest file `read-file` returns and the largest HTTP body
/// `http-request` sends or returns.
pub const MAX_EFFECT_BYTES: usize = 16 << 20;

/// What a plugin may do beyond logging: the capabilities its manifest asks
/// for and the user granted (installing a plugin grants what its manifest
/// lists; built-ins get theirs from [`crate::builtin`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// The plugin's data folder; `fs-read` folders are relative to it.
    pub data_dir: PathBuf,
    /// Folders (relative to `data_dir`) the plugin may read and list.
    pub fs_read: Vec<String>,
    /// Folders (relative to `data_dir`) the plugin may write and edit in.
    pub fs_write: Vec<String>,
    /// Whether the plugin may run processes.
    pub process: bool,
    /// Whether the plugin may read the current session's messages.
    pub session_read: bool,
    /// Hosts the plugin may send HTTP requests to.
    pub net: Vec<String>,
    /// Whether the plugin may show UI intents.
    pub ui: bool,
    /// Secret handles (`provider.slot`) the plugin may have the host use.
    pub secrets: Vec<String>,
    /// Whether the plugin may snapshot, compare and restore the project's
    /// working tree.
    pub vcs: bool,
    /// Whether the plugin may list and read the project's files.
    pub project_read: bool,
    /// Whether the plugin may write the project's files (and, with
    /// `process`, run programs in the project).
    pub project_write: bool,
    /// Whether the plugin may read and change the approval mode, read the
    /// permission rules and save new ones (`permissions`: built-in
    /// plugins only; a manifest cannot ask for it).
    pub permissions: bool,
    /// Whether the plugin may observe local files outside the project
    /// read-only (`local-read`: resolve paths, read files' text, stat
    /// files, list folders, smith's configuration folder, the home folder,
    /// whether the project is trusted). Built-in plugins only; a manifest
    /// cannot ask for it. `permissions` includes it.
    pub local_read: bool,
    /// Whether the plugin may start long-lived programs it talks to over
    /// pipes (`server-process`; `spawn`: built-in plugins only, since the
    /// program runs outside the tool sandbox for the whole runtime; a
    /// manifest cannot ask for it).
    pub spawn: bool,
    /// Whether the plugin may send `http-request` to the endpoints of the
    /// configured MCP servers that speak Streamable HTTP, and to those
    /// only (`mcp-net`: built-in plugins only; see the `mcp_net` module).
    pub mcp_net: bool,
    /// Whether the plugin may fetch any http or https URL under the
    /// public-only address policy (`web-get`; `web`: built-in plugins
    /// only, since the URLs come from the model; a manifest cannot ask for
    /// it — a user plugin names its hosts with `net`).
    pub web: bool,
}

impl Grants {
    /// No grants at all: every effect is denied.
    pub fn none() -> Self {
        Self::default()
    }

    /// The grants a manifest lists, with the plugin's data folder under the
    /// user plugin root `root`.
    pub fn from_manifest(manifest: &Manifest, root: &Path) -> Self {
        let mut grants = Grants {
            data_dir: manifest::data_dir(root, &manifest.name),
            ..Grants::default()
        };
        for (kind, value) in &manifest.capabilities {
            match kind.as_str() {
                "fs-read" => grants.fs_read.push(value.clone()),
                "fs-write" => grants.fs_write.push(value.clone()),
                "process" => grants.process = true,
                "session-read" => grants.session_read = true,
                "net" => grants.net.push(value.to_ascii_lowercase()),
                "ui" => grants.ui = true,
                "secrets" => grants.secrets.push(value.clone()),
                "vcs" => grants.vcs = true,
                "project-read" => grants.project_read = true,
                "project-write" => grants.project_write = true,
                _ => {}
            }
        }
        grants
    }
}

/// An effect the host refused because a grant was missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The plugin that asked.
    pub plugin: String,
    /// The capability it needed (`fs-read`, `fs-write`, `process`, `net`,
    /// `session-read`, `ui`).
    pub capability: &'static str,
    /// The manifest line that would grant it.
    pub missing_grant: String,
    /// What it asked for.
    pub request: String,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plugin {} was denied {}: it needs the capability {} and its grants lack `{}`; nothing ran. Add `{}` to the capabilities block of its plugin.kdl and reinstall it if the plugin should be allowed this",
            self.plugin, self.request, self.capability, self.missing_grant, self.missing_grant
        )
    }
}

/// Why an effect did not happen or failed (the guest receives the same as
/// `effect-error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EffectError {
    /// No grant; nothing ran.
    Denied(Denial),
    /// A malformed request; nothing ran.
    Invalid(String),
    /// The effect ran and failed.
    Failed(String),
    /// The plugin's journal entries for this run reached their cap
    /// ([`crate::rate`]); nothing ran and nothing was recorded.
    Limited,
}

impl std::fmt::Display for EffectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EffectError::Denied(denial) => denial.fmt(f),
            EffectError::Invalid(message) | EffectError::Failed(message) => f.write_str(message),
            EffectError::Limited => f.write_str(
                "the plugin reached its cap of session journal entries for this run (`plugins.max-journal-entries`); the effect was not run and nothing was recorded",
            ),
        }
    }
}

/// Where a plugin's granted effects run and are recorded.
#[derive(Clone)]
pub struct Effects {
    plugin: String,
    grants: Grants,
    journal: Arc<dyn EffectJournal>,
    ids: Arc<AtomicU64>,
    net: Option<Arc<smith_net::Client>>,
    session: Option<SessionSource>,
    secrets: Option<SecretSource>,
    secret_sink: Option<SecretSink>,
    project: Option<PathBuf>,
    checkpoints_root: Option<PathBuf>,
    /// The runtime's checkpoint store: the `vcs` effects use it, and
    /// effects that may change the project outside a tool call are
    /// checkpointed in it.
    checkpoints: Option<Arc<smith_engine::checkpoint::Checkpoints>>,
    /// The checkpointed effects running now, by effect id: the tool and
    /// the `before` snapshot.
    pending: Arc<std::sync::Mutex<std::collections::HashMap<String, PendingCheckpoint>>>,
    asker: Option<Asker>,
    config: Option<SharedConfig>,
    /// Where the plugin's session state is kept (`session-state`).
    state: Option<SharedState>,
    permissions: Option<Arc<PermissionAccess>>,
    /// The media `attach-media` attached to the input being decided.
    attached: Arc<std::sync::Mutex<Vec<smith_engine::provider::Media>>>,
    generation: u32,
    call: Arc<std::sync::Mutex<ToolCallScope>>,
    /// The instance's caps per run: each recorded effect counts two
    /// journal entries (none when the effects run uncapped).
    budget: Option<Arc<crate::rate::Budget>>,
    /// The runtime's sandbox and approval mode: processes run confined
    /// while the mode is sandboxed.
    sandbox: Option<(
        Arc<smith_engine::tools::Sandbox>,
        smith_engine::approval::ApprovalCell,
    )>,
    /// The search provider plugins `web-search` routes to (built-in
    /// plugins granted `web-search` only).
    search: Option<Arc<crate::search::SearchProviders>>,
}

/// A checkpointed effect's tool and `before` snapshot (or why it failed).
type PendingCheckpoint = (String, Result<smith_vcs::SnapshotId, smith_vcs::VcsError>);

/// A handle on the scope of a plugin's tool calls, which outlives the
/// instance (a call that destroys its instance still reports what its
/// host effects did).
#[derive(Clone, Debug)]
pub struct CallScope(Arc<std::sync::Mutex<ToolCallScope>>);

impl CallScope {
    /// The plugin is about to run its tool `tool` as the effect
    /// `effect_id`: until [`CallScope::end`], its host effects are
    /// children of that effect, and when the tool is `read_only` every
    /// effect that could change something is refused.
    pub fn begin(&self, effect_id: Option<&str>, tool: &str, read_only: bool) {
        let mut call = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        call.parent = effect_id.map(str::to_owned);
        call.tool.clear();
        call.tool.push_str(tool);
        call.read_only = read_only;
        call.mutations.clear();
    }

    /// The tool call ended; returns the mutation state of each host effect
    /// it made, in order.
    pub fn end(&self) -> Vec<smith_engine::tools::Mutation> {
        let mut call = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        call.parent = None;
        call.tool.clear();
        call.read_only = false;
        std::mem::take(&mut call.mutations)
    }
}

/// The tool call a plugin is running for the model, while it runs: its
/// host effects are recorded as children of the call's effect, a
/// read-only tool may not change anything, and what the children did
/// decides the call's own mutation evidence.
#[derive(Debug, Default)]
struct ToolCallScope {
    /// The call's effect id (`fx-N`).
    parent: Option<String>,
    /// The tool's name, for messages.
    tool: String,
    /// Whether the tool is declared read-only.
    read_only: bool,
    /// The mutation state of each child effect completed so far.
    mutations: Vec<smith_engine::tools::Mutation>,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Effects")
            .field("plugin", &self.plugin)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl Effects {
    /// Effects of `plugin` under `grants`, recorded in `journal` with effect
    /// ids `fx-N` drawn from `ids` (share the session's sequence so ids stay
    /// unique), carrying `generation` as the plugin generation.
    pub fn new(
        plugin: &str,
        grants: Grants,
        journal: Arc<dyn EffectJournal>,
        ids: Arc<AtomicU64>,
        generation: u32,
    ) -> Self {
        Self {
            plugin: plugin.to_owned(),
            grants,
            journal,
            ids,
            net: None,
            session: None,
            secrets: None,
            secret_sink: None,
            project: None,
            checkpoints_root: None,
            checkpoints: None,
            pending: Arc::default(),
            asker: None,
            config: None,
            state: None,
            permissions: None,
            attached: Arc::default(),
            generation,
            call: Arc::default(),
            sandbox: None,
            budget: None,
            search: None,
        }
    }

    /// Takes the media `attach-media` attached since the last call.
    pub fn take_attached(&self) -> Vec<smith_engine::provider::Media> {
        std::mem::take(&mut *self.attached.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub(crate) fn push_attached(&self, media: smith_engine::provider::Media) {
        self.attached
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(media);
    }

    /// Counts the journal entries of these effects against `budget` (the
    /// instance's: set when the instance is created).
    #[must_use]
    pub fn with_budget(mut self, budget: Arc<crate::rate::Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The caps and counters these effects' journal entries count against.
    pub fn budget(&self) -> Option<&Arc<crate::rate::Budget>> {
        self.budget.as_ref()
    }

    /// Runs the plugin's processes (`run-process`, `project-run-process`)
    /// confined by `sandbox` while `approval` is sandboxed (every mode but
    /// `full`), as the runtime's `bash` is.
    #[must_use]
    pub fn with_sandbox(
        mut self,
        sandbox: Arc<smith_engine::tools::Sandbox>,
        approval: smith_engine::approval::ApprovalCell,
    ) -> Self {
        self.sandbox = Some((sandbox, approval));
        self
    }

    /// The scope of the plugin's tool calls (see [`CallScope`]).
    pub fn call_scope(&self) -> CallScope {
        CallScope(Arc::clone(&self.call))
    }

    /// [`CallScope::begin`] on this plugin's scope.
    pub fn begin_tool_call(&self, effect_id: Option<&str>, tool: &str, read_only: bool) {
        self.call_scope().begin(effect_id, tool, read_only);
    }

    /// [`CallScope::end`] on this plugin's scope.
    pub fn end_tool_call(&self) -> Vec<smith_engine::tools::Mutation> {
        self.call_scope().end()
    }

    /// Refuses `request` when the plugin is running a read-only tool (the
    /// effect could change something).
    pub(crate) fn writable(&self, request: &str) -> Result<(), EffectError> {
        let call = self
            .call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if call.read_only {
            return Err(EffectError::Invalid(format!(
                "{request}: the plugin's tool {} is declared read-only, so it may not change anything; nothing ran. Declare the tool with read-only false to let it make changes",
                call.tool
            )));
        }
        Ok(())
    }

    /// Sends the plugin's questions (`ask`) to `asker` (the frontend);
    /// without one, questions fail saying no frontend can answer.
    #[must_use]
    pub fn with_asker(mut self, asker: Asker) -> Self {
        self.asker = Some(asker);
        self
    }

    /// Answers `config-get` and `config-set` from `config` (the runtime's
    /// configuration); without one, reads find nothing and changes fail.
    #[must_use]
    pub fn with_config(mut self, config: SharedConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Uses `client` (smith's HTTP engine) for `http-request`; without one,
    /// granted requests fail saying so.
    #[must_use]
    pub fn with_net(mut self, client: Arc<smith_net::Client>) -> Self {
        self.net = Some(client);
        self
    }

    /// Answers `session-entries` from `source` (the embedding's view of
    /// the current session); without one, granted calls fail saying so.
    #[must_use]
    pub fn with_session(mut self, source: SessionSource) -> Self {
        self.session = Some(source);
        self
    }

    /// Resolves the secret handles the plugin is granted through `source`
    /// (smith's credential resolver); without one, granted handles resolve
    /// to nothing.
    #[must_use]
    pub fn with_secrets(mut self, source: SecretSource) -> Self {
        self.secrets = Some(source);
        self
    }

    /// Hands the values the plugin registers (`register-secret`) and the
    /// secrets resolved for its headers to `sink` (the running runtime's
    /// registry), so the runtime redacts them from then on.
    #[must_use]
    pub fn with_secret_sink(mut self, sink: SecretSink) -> Self {
        self.secret_sink = Some(sink);
        self
    }

    /// The project folder the `vcs` and `project-*` effects work on (the
    /// runtime's working folder); without one, granted calls fail saying
    /// so.
    #[must_use]
    pub fn with_project(mut self, folder: PathBuf) -> Self {
        self.project = Some(folder);
        self
    }

    /// Where the projects' snapshot stores live (default:
    /// `<data dir>/checkpoints`, shared with smith's checkpoints).
    #[must_use]
    pub fn with_checkpoints_root(mut self, root: PathBuf) -> Self {
        self.checkpoints_root = Some(root);
        self
    }

    /// Uses the runtime's checkpoint store `checkpoints` (the one its tool
    /// context carries): the `vcs` effects work on that instance rather
    /// than opening the store a second time, and every effect that may
    /// change the project while the plugin runs no tool call (a hook, a
    /// command, an event handler) is checkpointed in it — the project
    /// snapshotted right before and right after, recorded as a VCS entry
    /// naming the effect. Inside a tool call the call's own checkpoint
    /// covers its host effects.
    #[must_use]
    pub fn with_checkpoints(
        mut self,
        checkpoints: Arc<smith_engine::checkpoint::Checkpoints>,
    ) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// The plugin generation its effects are recorded with.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The plugin's grants.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }
}
