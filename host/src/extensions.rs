//! Extension plugins for a runtime: the enabled built-in extensions
//! (smith/product, smith/plan, smith/permissions, smith/instructions, smith/skills, smith/agents, smith/mcp, smith/mentions, smith/todo, smith/hooks), then the enabled user plugins, then — in a trusted
//! project — the project's plugins, each compiled once into the cache and
//! instantiated with the grants its manifest lists (built-ins with theirs).
//! Their host effects are recorded in the runtime's session journal.
//!
//! A plugin that cannot be loaded is left out with a warning naming it and
//! why; it never stops the runtime from starting.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_config::Paths;
use smith_engine::agent::{DeclaredPolicy, Delivery, QueuePolicy};
use smith_engine::approval::{Approval, ApprovalCell};
use smith_engine::journal::EffectJournal;
use smith_engine::journal::store::{
    LimitDrops, PluginIntent, PluginLimits, PluginState, StoreJournal, plugin_intents, resume,
};
use smith_engine::provider::Message;
use smith_engine::tools::{Access, ToolSet};
use smith_plugins::builtin::BUILTINS;
use smith_plugins::dispatch::{Surface, is_question};
use smith_plugins::effects::{
    Effects, Grants, PermissionAccess, SecretSource, SessionSource, SharedState, StateAccess,
    TrustedProject,
};
use smith_plugins::extension::{IntentKind, UiIntent};
use smith_plugins::hooks::{Frontend, PluginHooks};
use smith_plugins::{
    API_GENERATION, ExtensionComponent, Limits, OwnedWasm, SearchComponent, SearchEntry,
    SearchProviders, Wasm, WasmExtension,
};

use crate::plugin_config::PluginConfig;
use crate::questions::Asking;

/// The enabled extensions, in load order, with their host effects recorded
/// in the runtime's session `journal` under effect numbers drawn from `ids`
/// (the counter the runtime shares: `AgentConfig::effect_ids`); plugins
/// granted `session-read` page through that session. Problems loading one
/// are returned as warnings (the plugin is left out).
pub fn load(
    journal: &Arc<StoreJournal>,
    ids: &Arc<AtomicU64>,
) -> (Vec<WasmExtension>, Vec<String>) {
    let (loaded, _, warnings) = load_for_session(journal, ids, None);
    (loaded, warnings)
}

/// Resolves the secret handles plugins are granted (`PROVIDER.SLOT`) as
/// provider credentials are resolved: configuration, the environment
/// variables a built-in provider names for the slot, then smith's auth
/// store (`smith auth set PROVIDER --slot SLOT`). Expired renewable
/// credentials are renewed first.
fn secret_source(paths: &Paths) -> SecretSource {
    let resolver = smith_auth::Resolver::new(smith_provider_host::builtin_slots())
        .store(smith_auth::AuthStore::in_data_dir(&paths.data_dir));
    Arc::new(move |handle: &str| {
        let Some((provider, slot)) = handle.split_once('.') else {
            return Ok(None);
        };
        match resolver.resolve(provider, slot) {
            Ok(resolved) => Ok(Some(resolved.credential.secret().expose().to_owned())),
            Err(d) if d.code() == "auth.missing" => Ok(None),
            Err(d) => Err(d.what().to_owned()),
        }
    })
}

/// [`load`] with any effect journal; `session` answers `session-entries`.
pub fn load_into(
    journal: &Arc<dyn EffectJournal>,
    ids: &Arc<AtomicU64>,
    session: Option<SessionSource>,
) -> (Vec<WasmExtension>, Vec<String>) {
    let (loaded, _, warnings) = load_configured(journal, ids, session, None);
    (loaded, warnings)
}

/// [`load`] with the runtime's session `journal`, returning as well the
/// configuration the plugins read and change (`config-get`,
/// `config-set`), resolved with their contributions; the plugins'
/// questions (`ask`) go to `asking` (the frontend's
/// [`crate::questions::Broker`] or [`crate::questions::Policy`]), and
/// without it every question fails saying no frontend answers questions.
pub fn load_for_session(
    journal: &Arc<StoreJournal>,
    ids: &Arc<AtomicU64>,
    asking: Option<&Asking>,
) -> (Vec<WasmExtension>, Arc<PluginConfig>, Vec<String>) {
    let session = session_source(Arc::clone(journal));
    let state = session_state(journal);
    let journal: Arc<dyn EffectJournal> = journal.clone();
    load_with(
        &journal,
        ids,
        Some(session),
        asking,
        default_permissions(),
        None,
        (None, Some(state)),
    )
}

/// The permission policy's view of a runtime working in the process's
/// folder in the `workspace` mode, for loads that do not say.
fn default_permissions() -> PermissionAccess {
    PermissionAccess::new(
        ApprovalCell::new(Approval::Workspace),
        std::env::current_dir().unwrap_or_default(),
    )
}

/// Completes `access` with the configuration's permission rules, where
/// rules are saved, and the trusted project; the warning when the
/// configuration cannot be read (then no rule applies).
fn configure_permissions(access: &mut PermissionAccess, paths: &Paths) -> Option<String> {
    access.user_config = Some(paths.user_config_file());
    let loaded = smith_config::Loader::new(paths.clone())
        .start_dir(&access.root)
        .load();
    match loaded {
        Ok(config) => {
            access.rules = config.permission_rules().to_vec();
            access.mcp_servers = config.mcp_servers().to_vec();
            access.trusted = config.trusted_project().map(|project| TrustedProject {
                project: project.clone(),
                trust_file: paths.trust_file(),
            });
            None
        }
        Err(err) => Some(format!(
            "smith/permissions applies no permission rule: the configuration could not be read: {}",
            err.diagnostic().what()
        )),
    }
}

/// Whether each tool of a runtime with `plugins` only observes: the
/// built-in tools, then the plugins' own.
fn tool_access(plugins: &[WasmExtension]) -> HashMap<String, bool> {
    let mut tools: HashMap<String, bool> = ToolSet::builtin()
        .definitions()
        .map(|d| (d.name.clone(), d.access == Access::ReadOnly))
        .collect();
    for tool in smith_engine::tools::jobs::job_tools() {
        let d = tool.definition();
        tools.insert(d.name.clone(), d.access == Access::ReadOnly);
    }
    for plugin in plugins {
        for spec in plugin.provided().map_or(&[][..], |p| &p.tools[..]) {
            tools.entry(spec.name.clone()).or_insert(spec.read_only);
        }
        // smith/agents brings the runtime's `agent` tool, which changes
        // nothing itself: each of the subagent's calls is decided.
        if plugin.name() == crate::agents::PLUGIN {
            tools
                .entry(smith_engine::agent::delegate::TOOL.to_owned())
                .or_insert(true);
        }
    }
    tools
}

/// [`load_into`], returning as well the configuration the plugins read and
/// change, resolved with their contributions
/// ([`crate::plugin_config`]), with questions going to `asking`.
pub fn load_configured(
    journal: &Arc<dyn EffectJournal>,
    ids: &Arc<AtomicU64>,
    session: Option<SessionSource>,
    asking: Option<&Asking>,
) -> (Vec<WasmExtension>, Arc<PluginConfig>, Vec<String>) {
    load_with(
        journal,
        ids,
        session,
        asking,
        default_permissions(),
        None,
        (None, None),
    )
}

/// The runtime's sandbox and approval mode, which the plugins' processes
/// run under and smith/permissions reads and changes.
pub type RuntimeSandbox = (
    Arc<smith_engine::tools::Sandbox>,
    smith_engine::approval::ApprovalCell,
);

/// [`load_for_session`] for a runtime working in `cwd`: the plugins'
/// processes run confined by `sandbox` while its approval mode is
/// sandboxed, and smith/permissions reads and changes that mode (the cell
/// the tools share) and judges paths against `cwd`.
pub fn load_for_runtime(
    journal: &Arc<StoreJournal>,
    ids: &Arc<AtomicU64>,
    asking: Option<&Asking>,
    sandbox: &RuntimeSandbox,
    cwd: &Path,
) -> (Vec<WasmExtension>, Arc<PluginConfig>, Vec<String>) {
    load_for_checkpointed_runtime(journal, ids, asking, sandbox, cwd, None)
}

/// [`load_for_runtime`] for a runtime that checkpoints its project in
/// `checkpoints` (the store its tool context carries): the plugins' `vcs`
/// effects share that store, and their effects that may change the
/// project outside a tool call are checkpointed in it.
pub fn load_for_checkpointed_runtime(
    journal: &Arc<StoreJournal>,
    ids: &Arc<AtomicU64>,
    asking: Option<&Asking>,
    sandbox: &RuntimeSandbox,
    cwd: &Path,
    checkpoints: Option<Arc<smith_engine::checkpoint::Checkpoints>>,
) -> (Vec<WasmExtension>, Arc<PluginConfig>, Vec<String>) {
    let session = session_source(Arc::clone(journal));
    let state = session_state(journal);
    let journal: Arc<dyn EffectJournal> = journal.clone();
    let permissions = PermissionAccess::new(sandbox.1.clone(), cwd.to_path_buf());
    load_with(
        &journal,
        ids,
        Some(session),
        asking,
        permissions,
        Some(sandbox),
        (checkpoints, Some(state)),
    )
}

fn load_with(
    journal: &Arc<dyn EffectJournal>,
    ids: &Arc<AtomicU64>,
    session: Option<SessionSource>,
    asking: Option<&Asking>,
    mut permissions: PermissionAccess,
    sandbox: Option<&RuntimeSandbox>,
    (checkpoints, state): (
        Option<Arc<smith_engine::checkpoint::Checkpoints>>,
        Option<SharedState>,
    ),
) -> (Vec<WasmExtension>, Arc<PluginConfig>, Vec<String>) {
    let mut loaded = Vec::new();
    let mut warnings = Vec::new();
    let config = PluginConfig::new();
    let Ok(paths) = Paths::from_process() else {
        warnings.push(
            "extension plugins were not loaded: smith's directories could not be determined (set SMITH_HOME or HOME)".to_owned(),
        );
        return (loaded, config, warnings);
    };
    let limits = crate::settings::process_plugin_limits();
    let disabled = crate::plugins::disabled(&paths);
    // One HTTP engine for every plugin granted `net`, made on first need.
    let mut client: Option<Option<Arc<smith_net::Client>>> = None;
    let mut net_warnings = Vec::new();
    let mut effects = |name: &str, grants: Grants| {
        let needs_net = !grants.net.is_empty() || grants.mcp_net || grants.web;
        let reads_session = grants.session_read;
        // An MCP server's configured headers may name secrets.
        let uses_secrets = !grants.secrets.is_empty() || grants.mcp_net;
        let uses_project = grants.vcs || grants.project_read || grants.project_write;
        let mut effects = Effects::new(
            name,
            grants,
            Arc::clone(journal),
            Arc::clone(ids),
            API_GENERATION,
        )
        .with_config(config.clone());
        if let Some(state) = &state {
            effects = effects.with_state(Arc::clone(state));
        }
        if reads_session && let Some(source) = &session {
            effects = effects.with_session(Arc::clone(source));
        }
        if let Some(Asking(asker)) = asking {
            effects = effects.with_asker(Arc::clone(asker));
        }
        if let Some((sandbox, approval)) = sandbox {
            effects = effects.with_sandbox(Arc::clone(sandbox), approval.clone());
        }
        if let Some(checkpoints) = &checkpoints {
            effects = effects.with_checkpoints(Arc::clone(checkpoints));
        }
        if uses_secrets {
            effects = effects
                .with_secrets(secret_source(&paths))
                .with_secret_sink(crate::secrets::plugin_sink());
        }
        // The project is the folder the runtime works in.
        if uses_project && let Ok(folder) = std::env::current_dir() {
            effects = effects.with_project(folder);
        }
        if !needs_net {
            return effects;
        }
        let made = client.get_or_insert_with(|| {
            plugin_client()
                .map_err(|message| net_warnings.push(message))
                .ok()
        });
        match made {
            Some(client) => effects.with_net(Arc::clone(client)),
            None => effects,
        }
    };
    let (found, note) = crate::plugins::discover(&paths);
    if let Some(note) = note {
        warnings.push(note);
    }
    // The search provider plugins smith/web's `web-search` routes to: the
    // enabled built-ins, then the installed ones, in that order.
    let mut searchers = Vec::new();
    for builtin in BUILTINS.iter().filter(|b| b.world == "search-provider") {
        if disabled.iter().any(|d| d == builtin.name) {
            continue;
        }
        let grants = builtin_grants(builtin);
        searchers.push(search_entry(
            builtin.name,
            OwnedWasm::Embedded(builtin.component),
            &paths,
            limits,
            effects(builtin.name, grants),
        ));
    }
    for plugin in &found {
        let Some(manifest) = &plugin.manifest else {
            continue;
        };
        if manifest.world != "search-provider"
            || plugin.problem.is_some()
            || disabled.contains(&manifest.name)
        {
            continue;
        }
        let path = plugin.dir.join(&manifest.component);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) => {
                warnings.push(format!(
                    "plugin {} was not loaded: cannot read its component {}: {err}; reinstall it with `smith plugin install`",
                    manifest.name,
                    path.display()
                ));
                continue;
            }
        };
        let limits = Limits {
            memory_bytes: (manifest.memory_limit_mib as usize) << 20,
            ..limits
        };
        let grants = Grants::from_manifest(manifest, &crate::plugins::user_root(&paths));
        searchers.push(search_entry(
            &manifest.name,
            OwnedWasm::Bytes(bytes),
            &paths,
            limits,
            effects(&manifest.name, grants),
        ));
    }
    let searchers = Arc::new(SearchProviders::new(searchers));
    let mut permissions_configured = false;
    for builtin in BUILTINS.iter().filter(|b| b.world == "extension") {
        if disabled.iter().any(|d| d == builtin.name) {
            continue;
        }
        let granted = |capability: &str| {
            builtin
                .capabilities
                .iter()
                .any(|(kind, _)| *kind == capability)
        };
        let grants = builtin_grants(builtin);
        let mut builtin_effects = effects(builtin.name, grants);
        if granted("web-search") {
            builtin_effects = builtin_effects.with_search(Arc::clone(&searchers));
        }
        if granted("permissions") || granted("local-read") {
            // Configured once: smith/permissions, smith/instructions and
            // smith/skills share the same view (and a broken file warns
            // once).
            if !permissions_configured {
                permissions_configured = true;
                if let Some(warning) = configure_permissions(&mut permissions, &paths) {
                    warnings.push(warning);
                }
            }
            builtin_effects = builtin_effects.with_permissions(permissions.clone());
        }
        // smith/hooks waits for hook commands of up to 10 minutes inside
        // its calls; the process is bounded by the hook's own timeout.
        let limits = if builtin.name == "smith/hooks" {
            Limits {
                call_deadline: smith_plugins::builtin::HOOKS_CALL_DEADLINE,
                ..limits
            }
        } else if builtin.name == "smith/web" {
            // smith/web converts pages of several MiB of HTML.
            Limits {
                call_deadline: smith_plugins::builtin::WEB_CALL_DEADLINE,
                memory_bytes: limits
                    .memory_bytes
                    .max(smith_plugins::builtin::WEB_MEMORY_BYTES),
                ..limits
            }
        } else {
            limits
        };
        match instantiate(
            builtin.name,
            Wasm::Embedded(builtin.component),
            &paths,
            limits,
            builtin_effects,
        ) {
            Ok(plugin) => loaded.push(plugin),
            Err(message) => warnings.push(message),
        }
    }
    for plugin in found {
        let Some(manifest) = &plugin.manifest else {
            continue;
        };
        if manifest.world != "extension"
            || plugin.problem.is_some()
            || disabled.contains(&manifest.name)
        {
            continue;
        }
        let path = plugin.dir.join(&manifest.component);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) => {
                warnings.push(format!(
                    "plugin {} was not loaded: cannot read its component {}: {err}; reinstall it with `smith plugin install`",
                    manifest.name,
                    path.display()
                ));
                continue;
            }
        };
        let limits = Limits {
            memory_bytes: (manifest.memory_limit_mib as usize) << 20,
            ..limits
        };
        let grants = Grants::from_manifest(manifest, &crate::plugins::user_root(&paths));
        match instantiate(
            &manifest.name,
            Wasm::Bytes(&bytes),
            &paths,
            limits,
            effects(&manifest.name, grants),
        ) {
            Ok(plugin) => loaded.push(plugin),
            Err(message) => warnings.push(message),
        }
    }
    warnings.extend(net_warnings);
    // Every tool is known now: the permission policy learns which only
    // observe.
    *permissions
        .tools
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = tool_access(&loaded);
    match crate::plugin_config::resolve(&loaded) {
        Ok((resolved, notes)) => {
            // Credentials in the configuration are redacted; secret routes
            // join the substitution policy.
            crate::secrets::apply_config(&resolved, &|plugin| {
                loaded
                    .iter()
                    .find(|p| p.name() == plugin)
                    .and_then(|p| p.effects().map(|e| e.grants().secrets.clone()))
                    .unwrap_or_default()
            });
            if resolved.bool(&smith_config::options::PLAN) == Some(true)
                && !loaded.iter().any(|p| p.name() == PLAN_MODE)
            {
                warnings.push(format!(
                    "plan mode is asked for (the `plan` option, from {}) but the built-in plugin {PLAN_MODE}, which provides it, is not loaded, so nothing is blocked; enable it with `smith plugin enable {PLAN_MODE}`, or unset the option",
                    resolved
                        .source(&smith_config::options::PLAN)
                        .map_or_else(|| "the configuration".to_owned(), ToString::to_string)
                ));
            }
            config.install(resolved);
            warnings.extend(notes);
        }
        Err(err) => warnings.push(format!(
            "plugins get no configuration (config-get answers nothing, config-set fails): {}",
            err.diagnostic().what()
        )),
    }
    (loaded, config, warnings)
}

/// The built-in plugin that provides plan mode (the `plan` option).
const PLAN_MODE: &str = "smith/plan";

/// The queue policies the loaded `plugins` contribute, in load order (in
/// each plugin, in the order it declares them), for the runtime's
/// `Services::policies`. A mode a later plugin declares again is refused:
/// the first plugin keeps it, and the returned warning names the mode and
/// both plugins.
pub fn queue_policies(plugins: &[WasmExtension]) -> (Vec<Arc<dyn QueuePolicy>>, Vec<String>) {
    let mut policies: Vec<Arc<dyn QueuePolicy>> = Vec::new();
    let mut owners: Vec<(&str, &str)> = Vec::new();
    let mut warnings = Vec::new();
    for plugin in plugins {
        let Some(provided) = plugin.provided() else {
            continue;
        };
        for spec in &provided.queue_policies {
            if let Some((_, owner)) = owners.iter().find(|(mode, _)| *mode == spec.mode) {
                warnings.push(format!(
                    "plugin {} declares the queue mode {:?}, which plugin {owner} already declares; {owner}'s policy is kept (disable one of the two plugins with `smith plugin disable NAME` to choose)",
                    plugin.name(),
                    spec.mode,
                ));
                continue;
            }
            owners.push((&spec.mode, plugin.name()));
            policies.push(Arc::new(DeclaredPolicy {
                mode: spec.mode.clone(),
                description: spec.description.clone(),
                interrupts_tools: spec.interrupts_tools,
                after_tool_batch: delivery(spec.after_tool_batch),
                before_stop: delivery(spec.before_stop),
            }));
        }
    }
    (policies, warnings)
}

/// The engine's form of a declared delivery.
fn delivery(delivery: smith_plugins::extension::Delivery) -> Delivery {
    match delivery {
        smith_plugins::extension::Delivery::None => Delivery::None,
        smith_plugins::extension::Delivery::One => Delivery::One,
        smith_plugins::extension::Delivery::All => Delivery::All,
    }
}

/// The runtime's session as `session-entries` pages: its conversation as it
/// would resume (after the latest compaction), each message as its role
/// (`user`, `assistant`, `tool`) and text.
fn session_source(journal: Arc<StoreJournal>) -> SessionSource {
    Arc::new(move |offset, limit| {
        let history = journal
            .with_session(|session| resume(session).map(|r| r.history))
            .unwrap_or_default();
        history
            .into_iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(limit as usize)
            .map(|message| {
                let role = match &message {
                    Message::User { .. } => "user",
                    Message::Assistant { .. } => "assistant",
                    Message::ToolResult { .. } => "tool",
                };
                (role.to_owned(), message.text())
            })
            .collect()
    })
}

/// The runtime's session as the plugins' state store: `session-state`
/// reads the newest `plugin_state` entry of the plugin and key on the
/// selected branch, `set-session-state` appends one.
fn session_state(journal: &Arc<StoreJournal>) -> SharedState {
    Arc::new(JournalState(Arc::clone(journal)))
}

struct JournalState(Arc<StoreJournal>);

impl StateAccess for JournalState {
    fn get(&self, plugin: &str, key: &str) -> Option<String> {
        self.0.plugin_state(plugin, key)
    }

    fn set(&self, plugin: &str, key: &str, value: &str) -> Result<(), String> {
        self.0
            .record_plugin_state(&PluginState {
                plugin: plugin.to_owned(),
                key: key.to_owned(),
                value: value.to_owned(),
            })
            .map_err(|err| {
                format!("the entry could not be written to the session: {err}; nothing was stored")
            })
    }
}

/// The HTTP engine plugins' granted requests go through, under the
/// configured `net.*` timeouts; the warning when it cannot be set up (then
/// granted requests fail saying there is no HTTP engine).
fn plugin_client() -> Result<Arc<smith_net::Client>, String> {
    let timeouts = crate::settings::config()
        .map(crate::settings::net_timeouts)
        .unwrap_or_default();
    smith_net::Client::builder()
        .limits(timeouts.limits())
        .build()
        .map(Arc::new)
        .map_err(|err| {
            format!(
                "plugins granted `net` get no HTTP engine: {err}; their requests fail until this is fixed"
            )
        })
}

fn instantiate(
    name: &str,
    wasm: Wasm<'_>,
    paths: &Paths,
    limits: Limits,
    effects: Effects,
) -> Result<WasmExtension, String> {
    ExtensionComponent::load(name, wasm, Some(&paths.cache_dir), limits)
        .and_then(|component| component.instantiate_with(Some(effects)))
        .map_err(|err| {
            format!(
                "{err}; the runtime starts without it (`smith plugin disable {name}` stops this warning)"
            )
        })
}

/// The grants of the built-in plugin `builtin`, from its capability list.
fn builtin_grants(builtin: &smith_plugins::builtin::Builtin) -> Grants {
    let granted = |capability: &str| {
        builtin
            .capabilities
            .iter()
            .any(|(kind, _)| *kind == capability)
    };
    Grants {
        ui: granted("ui"),
        permissions: granted("permissions"),
        local_read: granted("local-read"),
        spawn: granted("spawn"),
        mcp_net: granted("mcp-net"),
        process: granted("process"),
        project_read: granted("project-read"),
        project_write: granted("project-write"),
        web: granted("web"),
        secrets: builtin
            .capabilities
            .iter()
            .filter(|(kind, _)| *kind == "secrets")
            .map(|(_, handle)| (*handle).to_owned())
            .collect(),
        ..Grants::default()
    }
}

/// A search provider plugin (the `search-provider-plugin` world) that is
/// compiled (or loaded from the cache) and instantiated with `effects`
/// when `web-search` first needs it; a failure is told to the search.
fn search_entry(
    name: &str,
    wasm: OwnedWasm,
    paths: &Paths,
    limits: Limits,
    effects: Effects,
) -> SearchEntry {
    let plugin = name.to_owned();
    let cache_dir = paths.cache_dir.clone();
    SearchEntry::new(
        name,
        Box::new(move || {
            SearchComponent::load(&plugin, &wasm, Some(&cache_dir), limits)
                .and_then(|component| component.instantiate_with(Some(effects)))
                .map_err(|err| {
                    format!(
                        "{err}; `smith plugin disable {plugin}` leaves it out of web_search's choice"
                    )
                })
        }),
    )
}

/// Reports a plugin warning on stderr and in the product log.
pub fn warn(message: &str) {
    eprintln!("smith: warning: {message}");
    smith_diag::log::note(smith_diag::log::Level::Warn, "plugin.warning", message);
}

/// Hooks over `plugins` reporting to `frontend`, bound to the runtime's
/// session `session` (its id), or `None` without plugins.
pub fn session_hooks(
    plugins: Vec<WasmExtension>,
    frontend: Box<dyn Frontend>,
    session: &str,
) -> Option<PluginHooks> {
    (!plugins.is_empty()).then(|| PluginHooks::new(plugins, frontend).in_session(session))
}

/// Keeps a UI intent whose policy is `persist` in the runtime's session as
/// a `plugin_intent` entry, for the next frontend that opens it; a
/// diagnostic (naming the plugin and the intent) when it cannot be written.
pub fn keep_intent(
    journal: &StoreJournal,
    surface: &str,
    plugin: &str,
    intent: &UiIntent,
) -> Result<(), String> {
    let kept = PluginIntent {
        plugin: plugin.to_owned(),
        id: intent.id.clone(),
        kind: smith_plugins::dispatch::kind_name(&intent.kind).to_owned(),
        text: smith_plugins::dispatch::text_fallback(&intent.kind),
        surface: surface.to_owned(),
    };
    journal.record_plugin_intent(&kept).map_err(|err| {
        format!(
            "plugin {plugin} asked to keep its {} intent {:?} for a frontend that can show it, but it could not be written to the session: {err}; it is lost",
            kept.kind, kept.id
        )
    })
}

/// The intents kept in `session` as notice lines, oldest first: what a
/// frontend that opens the session shows.
pub fn kept_intents(session: &smith_store::Session) -> Result<Vec<String>, String> {
    plugin_intents(session)
        .map(|intents| {
            intents
                .iter()
                .map(|i| format!("[{}] {} (kept from {})", i.plugin, i.text, i.surface))
                .collect()
        })
        .map_err(|err| format!("the plugin intents kept in this session could not be read: {err}"))
}

/// The frontend of a headless runtime (`smith eval`, `smith rpc`): notices
/// and plain-text intents become lines on stderr, prefixed with the plugin;
/// it has no screen, so layout and theme changes do not apply. Questions
/// (`select`, `confirm`, `input`) go to its [`Asker`] when it has one (rpc
/// sends them to its client); otherwise they, like the other interactive
/// intents, degrade by their policy — those whose policy is `persist` are
/// kept in the runtime's session (`journal`).
#[derive(Debug, Default)]
pub struct Headless {
    /// The surface name given to plugins (`eval`, `rpc`).
    pub name: &'static str,
    /// The runtime's session, where persisted intents are kept.
    pub journal: Option<Arc<StoreJournal>>,
    /// Who asks the user a plugin's question, if anyone.
    pub asker: Option<Asker>,
}

/// Asks the user a plugin's question (the plugin and the intent, its text
/// already plain); the answer comes back through the runtime's
/// [`smith_engine::agent::Answerer`].
#[derive(Clone)]
pub struct Asker(pub Arc<Ask>);

/// What an [`Asker`] calls: the plugin and its question.
pub type Ask = dyn Fn(&str, &UiIntent) + Send + Sync;

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker(..)")
    }
}

impl Surface for Headless {
    fn name(&self) -> &str {
        self.name
    }
    fn can_show(&self, kind: &IntentKind) -> bool {
        matches!(kind, IntentKind::Notify(_)) || (self.asker.is_some() && is_question(kind))
    }
    fn show(&mut self, plugin: &str, intent: &UiIntent) {
        match (&intent.kind, &self.asker) {
            (IntentKind::Notify(text), _) => eprintln!("[{plugin}] {text}"),
            (kind, Some(asker)) if is_question(kind) => (asker.0)(plugin, intent),
            _ => {}
        }
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        eprintln!("[{plugin}] {text}");
    }
}

impl Frontend for Headless {
    fn persist(&mut self, plugin: &str, intent: &UiIntent) {
        let kept = match &self.journal {
            Some(journal) => keep_intent(journal, self.name, plugin, intent),
            None => Err(format!(
                "plugin {plugin} asked to keep its {} intent {:?} for a frontend that can show it; {} has no session to keep it in, so it is lost",
                smith_plugins::dispatch::kind_name(&intent.kind),
                intent.id,
                self.name
            )),
        };
        match kept {
            Ok(()) => eprintln!(
                "smith: plugin {plugin}'s {} intent {:?} is kept in the session for a frontend that can show it",
                smith_plugins::dispatch::kind_name(&intent.kind),
                intent.id
            ),
            Err(message) => warn(&message),
        }
    }
    fn diagnostic(&mut self, message: &str) {
        warn(message);
    }
    fn report(&mut self, diagnostic: &smith_diag::Diagnostic) {
        crate::output::report(diagnostic, false, crate::output::style(None));
    }
}

/// Records what a plugin's caps per run dropped in the runtime's session
/// `journal`: a `metadata` entry of type `plugin_limits` (see
/// [`smith_engine::journal::store::PluginLimits`]).
pub fn drop_recorder(journal: Arc<StoreJournal>) -> smith_plugins::hooks::DropRecorder {
    Box::new(move |plugin, dropped| {
        let record = PluginLimits {
            plugin: plugin.to_owned(),
            dropped: dropped
                .iter()
                .map(|d| LimitDrops {
                    kind: d.kind.name().to_owned(),
                    limit: d.limit,
                    dropped: d.dropped,
                })
                .collect(),
        };
        journal.record_plugin_limits(&record).map_err(|err| {
            format!(
                "what plugin {plugin}'s caps dropped in this run could not be recorded in the session: {err}"
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use smith_engine::journal::{MessageMeta, SessionEvent, SessionSink};
    use smith_engine::provider::{ContentBlock, StopReason};
    use smith_store::Store;

    use super::*;

    #[test]
    fn session_pages_are_the_conversation_as_it_would_resume() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("paged")).unwrap();
        let journal = Arc::new(StoreJournal::new(store, session));
        let messages = [
            Message::User {
                text: "fix the parser".into(),
                media: Vec::new(),
            },
            Message::Assistant {
                content: vec![ContentBlock::Text {
                    text: "Looking.".into(),
                }],
                stop: StopReason::End,
            },
            Message::User {
                text: "thanks".into(),
                media: Vec::new(),
            },
        ];
        for message in messages {
            journal
                .record(&SessionEvent::Message {
                    message,
                    meta: MessageMeta::default(),
                })
                .unwrap();
        }
        let source = session_source(Arc::clone(&journal));
        assert_eq!(
            source(0, 2),
            [
                ("user".to_owned(), "fix the parser".to_owned()),
                ("assistant".to_owned(), "Looking.".to_owned())
            ]
        );
        assert_eq!(source(2, 10), [("user".to_owned(), "thanks".to_owned())]);
        assert!(source(3, 10).is_empty());
        assert!(source(u64::MAX, 10).is_empty());
    }
}
