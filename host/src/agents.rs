//! The agent the main thread runs as (`--agent NAME`, the `agent` option):
//! resolved through the built-in plugin smith/agents, which owns agent
//! files, and applied to every runtime the process starts.
//!
//! smith/agents adds the agent's body to the system prompt itself (after
//! every other fragment); the host applies what a plugin cannot: the
//! agent's tool allow-list ([`restrict`]) and, through the command line's
//! provider choice, its model and provider.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_engine::tools::ToolSet;
use smith_plugins::extension::{Action, IntentKind};

/// The built-in plugin that owns agent files.
pub const PLUGIN: &str = "smith/agents";

/// One tool an agent file lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedTool {
    /// As the file writes it (`Read`, `Bash(git log:*)`, `read`).
    pub written: String,
    /// smith's tool it means (`read`, `bash`).
    pub tool: String,
}

/// An agent as smith/agents resolved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentDef {
    /// Its name.
    pub name: String,
    /// The file it comes from.
    pub path: String,
    /// The tools it may use; `None`: every tool.
    pub tools: Option<Vec<ListedTool>>,
    /// Its model; `None`: the caller's.
    pub model: Option<String>,
    /// Its provider; `None`: the caller's.
    pub provider: Option<String>,
    /// Its system prompt (the file's body, bounded).
    pub prompt: String,
}

impl AgentDef {
    /// Reads the JSON document `/agents --resolve NAME` answers.
    fn from_json(value: &serde_json::Value) -> Option<Self> {
        let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let tools = match value.get("tools") {
            Some(serde_json::Value::Array(items)) => Some(
                items
                    .iter()
                    .filter_map(|item| {
                        Some(ListedTool {
                            written: item.get("written")?.as_str()?.to_owned(),
                            tool: item.get("tool")?.as_str()?.to_owned(),
                        })
                    })
                    .collect(),
            ),
            _ => None,
        };
        Some(AgentDef {
            name: text("name")?,
            path: text("path")?,
            tools,
            model: text("model"),
            provider: text("provider"),
            prompt: text("prompt").unwrap_or_default(),
        })
    }
}

/// Resolves the agent `name` through smith/agents, loaded as a run loads
/// it (its host effects stay in memory).
///
/// # Errors
///
/// When smith/agents is not loaded (disabled, or it failed to load) or no
/// usable agent has the name; the text says why and what to do, and for
/// an unknown name lists the agents there are with the nearest one.
pub fn resolve(name: &str) -> Result<AgentDef, String> {
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (mut plugins, warnings) = crate::extensions::load_into(&journal, &ids, None);
    let Some(plugin) = plugins.iter_mut().find(|p| p.name() == PLUGIN) else {
        let why = if crate::plugins::disabled(&smith_config::Paths::from_process().map_err(
            |err| {
                format!("the configuration folders are unknown ({err}), so agents cannot be found")
            },
        )?)
        .iter()
        .any(|d| d == PLUGIN)
        {
            format!(
                "agents come from the built-in plugin {PLUGIN}, which is disabled; `smith plugin enable {PLUGIN}` turns it back on"
            )
        } else {
            format!(
                "agents come from the built-in plugin {PLUGIN}, which did not load ({}); `smith doctor` says more",
                warnings.join("; ")
            )
        };
        return Err(why);
    };
    let actions = plugin
        .run_command("agents", &format!("--resolve {name}"))
        .map_err(|err| match err.kind {
            smith_plugins::ErrorKind::Guest => err.message,
            _ => err.to_string(),
        })?;
    let text = actions
        .into_iter()
        .find_map(|action| match action {
            Action::Ui(intent) => match intent.kind {
                IntentKind::Notify(text) => Some(text),
                _ => None,
            },
            _ => None,
        })
        .ok_or_else(|| format!("{PLUGIN} did not answer for the agent {name}"))?;
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .as_ref()
        .and_then(AgentDef::from_json)
        .ok_or_else(|| {
            format!(
                "{PLUGIN} answered for the agent {name} with a document smith cannot read: {text}"
            )
        })
}

static ACTIVE: OnceLock<AgentDef> = OnceLock::new();

/// Makes `agent` the one every runtime this process starts runs as.
pub fn set_active(agent: AgentDef) {
    let _ = ACTIVE.set(agent);
}

/// The agent runtimes run as, if any.
pub fn active() -> Option<&'static AgentDef> {
    ACTIVE.get()
}

/// Keeps in `tools` only what `agent` lists (all when it lists none).
/// Returns a warning for each listed tool the runtime does not have,
/// naming the agent's file.
pub fn restrict(tools: &mut ToolSet, agent: &AgentDef) -> Vec<smith_diag::Diagnostic> {
    let Some(listed) = &agent.tools else {
        return Vec::new();
    };
    let have: Vec<String> = tools.names().map(str::to_owned).collect();
    let mut warnings = Vec::new();
    for entry in listed {
        if !have.contains(&entry.tool) {
            let meant = if entry.written == entry.tool {
                String::new()
            } else {
                format!(" (smith's `{}`)", entry.tool)
            };
            warnings.push(smith_diag::Diagnostic::warning(
                "agent.unknown-tool",
                format!(
                    "the agent {} lists the tool `{}`{meant}, which this runtime does not have",
                    agent.name, entry.written
                ),
                format!(
                    "{} names it under `tools`; the tools here are {}",
                    agent.path,
                    have.join(", ")
                ),
                "the agent runs without it; remove it from the file's `tools`, or enable the plugin that provides it",
            ));
        }
    }
    for name in have {
        if !listed.iter().any(|entry| entry.tool == name) {
            tools.remove(&name);
        }
    }
    warnings
}

/// The custom agents `plugin` (smith/agents) lists, as `(name,
/// description)`, shadowed ones left out; none when it cannot list them.
pub fn listed(plugin: &mut smith_plugins::WasmExtension) -> Vec<(String, String)> {
    let Ok(actions) = plugin.run_command("agents", "--json") else {
        return Vec::new();
    };
    let Some(text) = actions.into_iter().find_map(|action| match action {
        Action::Ui(intent) => match intent.kind {
            IntentKind::Notify(text) => Some(text),
            _ => None,
        },
        _ => None,
    }) else {
        return Vec::new();
    };
    let listing: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    listing["agents"]
        .as_array()
        .map(|agents| {
            agents
                .iter()
                .filter(|a| a["shadowed_by"].is_null())
                .filter_map(|a| {
                    Some((
                        a["name"].as_str()?.to_owned(),
                        a["description"].as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What lets a runtime recording the session `parent` under `store_root`
/// start subagents: each child records into a new session of the store,
/// named after the parent and the task, and a custom agent is resolved
/// through smith/agents.
pub fn delegation(
    store_root: &std::path::Path,
    parent: &str,
) -> smith_engine::agent::delegate::Delegation {
    use smith_engine::agent::delegate::{
        ChildAgent, ChildSession, Delegation, MAX_DEPTH, MAX_SPAWNS,
    };
    let root = store_root.to_owned();
    let parent = parent.to_owned();
    Delegation {
        max_depth: MAX_DEPTH,
        max_spawns: MAX_SPAWNS,
        open: Arc::new(move |description: &str| {
            let choice = crate::session::SessionChoice::Titled(
                format!("{parent} agent {description}"),
                "agent".to_owned(),
            );
            let destination =
                crate::session::open(&root, &choice).map_err(|err| err.to_string())?;
            Ok(ChildSession {
                journal: destination.journal.clone(),
                sink: destination.journal,
                name: destination.name,
            })
        }),
        resolve: Arc::new(|name: &str| {
            resolve(name).map(|agent| ChildAgent {
                name: agent.name,
                path: agent.path,
                prompt: agent.prompt,
                tools: agent
                    .tools
                    .map(|tools| tools.into_iter().map(|t| t.tool).collect()),
                model: agent.model,
            })
        }),
    }
}
