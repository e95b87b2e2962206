//! The built-in plugins, compiled from plugins/builtin/* for wasm32-wasip2
//! by build.rs and embedded in the binary, each both as its component
//! (zstd-compressed, with the sha256 the build computed: an
//! [`Embedded`](crate::Embedded)) and precompiled for this target
//! ([`PRECOMPILED`]).

// The generated statics: `TABLE` (below, [`PRECOMPILED`]), the embedded
// components (`SMITH_PLUGIN_MOCK` ..., below by their names) and what
// they lie in.
include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// Every built-in plugin of [`BUILTINS`] compiled ahead of time by
/// plugins/build.rs with the runtime's engine configuration, keyed on the
/// sha256 of its component: the ones a start loads before its first frame
/// uncompressed and page-aligned, used where they lie on every start; the
/// others in zstd frames with those as their prefix, decompressed on first
/// use and cached. [`crate::Runtime::load_component`] loads these instead
/// of compiling, so a first start on a fresh `SMITH_HOME` compiles nothing
/// and loads what a later start loads, the same way. Empty in a build for
/// an architecture other than the build machine's (docs/plugins.md,
/// "Precompiled built-ins"). A `static`, not a `const`: a constant's bytes
/// would be copied into every crate using it.
pub static PRECOMPILED: &[crate::Precompiled] = &TABLE;

// The components below are statics for the same reason: as constants,
// each crate that names one kept its own copy of the bytes (every built-in
// stood about seven times in the smith binary). Each is its digest, its
// size and where its compressed bytes lie (docs/plugins.md, "Embedded
// components"): loading a built-in hashes and decompresses nothing.

/// The smith/mock provider component (the scripted provider).
pub static MOCK: &crate::Embedded = &SMITH_PLUGIN_MOCK;

/// The smith/product extension component (layout, theme, keys, commands,
/// tool presentation).
pub static PRODUCT: &crate::Embedded = &SMITH_PLUGIN_PRODUCT;

/// The smith/permissions extension component (approval modes and
/// permission rules at the `tool-call` decision point, `/approval`).
pub static PERMISSIONS: &crate::Embedded = &SMITH_PLUGIN_PERMISSIONS;

/// The smith/instructions extension component (SMITH.md, AGENTS.md and
/// CLAUDE.md as prompt fragments).
pub static INSTRUCTIONS: &crate::Embedded = &SMITH_PLUGIN_INSTRUCTIONS;

/// The smith/skills extension component (SKILL.md folders: the catalog
/// in the system prompt, the `skill` tool, `/name` and `$name`).
pub static SKILLS: &crate::Embedded = &SMITH_PLUGIN_SKILLS;

/// The smith/todo extension component (the `todo_write` tool, the list
/// kept in the session, its prompt fragment and panel, `/todo`).
pub static TODO: &crate::Embedded = &SMITH_PLUGIN_TODO;

/// The smith/plan extension component (plan mode: tools that change
/// anything blocked until the user approves the plan `exit_plan_mode`
/// puts to them, the plan-mode prompt fragment and panel, `/plan`,
/// `/normal`).
pub static PLAN: &crate::Embedded = &SMITH_PLUGIN_PLAN;

/// The smith/agents extension component (custom agents: `.smith/agents`
/// and `.claude/agents` files, `/agents`, the prompt of the agent the
/// main thread runs as).
pub static AGENTS: &crate::Embedded = &SMITH_PLUGIN_AGENTS;

/// The smith/mcp extension component (the Model Context Protocol client).
pub static MCP: &crate::Embedded = &SMITH_PLUGIN_MCP;

/// The smith/mentions extension component (`@path` in a prompt attaches
/// the file's text or the folder's listing).
pub static MENTIONS: &crate::Embedded = &SMITH_PLUGIN_MENTIONS;

/// The smith/hooks extension component (shell commands run at lifecycle
/// events, in Claude Code's hooks format).
pub static HOOKS: &crate::Embedded = &SMITH_PLUGIN_HOOKS;

/// The call deadline of smith/hooks: a hook command may run for up to 10
/// minutes (its `timeout`, and all the hooks of one event together), and
/// the host's process call runs under the calling plugin's deadline, so
/// smith/hooks gets this one instead of the default.
pub const HOOKS_CALL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(11 * 60);

/// The smith/web extension component (`web_fetch` and `web_search`).
pub static WEB: &crate::Embedded = &SMITH_PLUGIN_WEB;

/// The call deadline of smith/web: converting a page of several MiB of
/// HTML to Markdown takes longer than the default deadline allows (the
/// wait for the network does not count: `web-get` pauses the deadline).
pub const WEB_CALL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// The memory limit of smith/web: a page of up to 16 MiB and its parsed
/// document tree.
pub const WEB_MEMORY_BYTES: usize = 512 << 20;

/// The smith/searxng search provider component (a SearXNG instance's
/// JSON API).
pub static SEARXNG: &crate::Embedded = &SMITH_PLUGIN_SEARXNG;

/// The smith/brave search provider component (the Brave Search API).
pub static BRAVE: &crate::Embedded = &SMITH_PLUGIN_BRAVE;

/// The SDK walkthrough's example extension (example/hello: a command, a
/// handler, a tool, a prompt fragment, an option and a queue policy). Not
/// a built-in: `smith bench` measures a plugin tool call with it.
pub static EXAMPLE_HELLO: &crate::Embedded = &SMITH_PLUGIN_HELLO;

/// test/lifecycle, the test guest that reports lifecycle events and floods
/// the host when asked. Not a built-in: `smith bench` measures what a
/// flooding plugin costs a run with it.
pub static TEST_LIFECYCLE: &crate::Embedded = &SMITH_PLUGIN_LIFECYCLE;

/// The smith/anthropic provider component (the Anthropic Messages API).
pub static ANTHROPIC: &crate::Embedded = &SMITH_PLUGIN_ANTHROPIC;

/// The smith/openai provider component (the Responses API and Chat
/// Completions).
pub static OPENAI: &crate::Embedded = &SMITH_PLUGIN_OPENAI;

/// The smith/google provider component (Gemini).
pub static GOOGLE: &crate::Embedded = &SMITH_PLUGIN_GOOGLE;

/// The smith/openai-compatible provider component (Chat Completions at any
/// base URL).
pub static OPENAI_COMPATIBLE: &crate::Embedded = &SMITH_PLUGIN_OPENAI_COMPATIBLE;

/// A built-in plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// Its name.
    pub name: &'static str,
    /// Its world (`provider`, `extension` or `search-provider`).
    pub world: &'static str,
    /// One line about it.
    pub description: &'static str,
    /// The component: its digest, its size, its bytes on demand.
    pub component: &'static crate::Embedded,
    /// The capabilities it is granted, as a manifest would list them.
    pub capabilities: &'static [(&'static str, &'static str)],
}

/// Every built-in plugin, in load order.
pub static BUILTINS: &[Builtin] = &[
    Builtin {
        name: "smith/mock",
        world: "provider",
        description: "The scripted provider: plays a JSON script or the offline demo",
        component: MOCK,
        capabilities: &[],
    },
    Builtin {
        name: "smith/anthropic",
        world: "provider",
        description: "Anthropic: the Messages API, streaming",
        component: ANTHROPIC,
        capabilities: &[],
    },
    Builtin {
        name: "smith/openai",
        world: "provider",
        description: "OpenAI: the Responses API and Chat Completions, streaming",
        component: OPENAI,
        capabilities: &[],
    },
    Builtin {
        name: "smith/google",
        world: "provider",
        description: "Google Gemini: streamGenerateContent over SSE",
        component: GOOGLE,
        capabilities: &[],
    },
    Builtin {
        name: "smith/openai-compatible",
        world: "provider",
        description: "Chat Completions at any base URL: OpenRouter, Ollama, llama.cpp, vLLM, LM Studio",
        component: OPENAI_COMPATIBLE,
        capabilities: &[],
    },
    Builtin {
        name: "smith/product",
        world: "extension",
        description: "The default layout, theme, keybindings, commands and tool presentation",
        component: PRODUCT,
        capabilities: &[("ui", "")],
    },
    Builtin {
        name: "smith/plan",
        world: "extension",
        description: "Plan mode (/plan, --plan): research only, every tool that can change something blocked until the user approves the plan the `exit_plan_mode` tool puts to them; /normal leaves it",
        component: PLAN,
        capabilities: &[("ui", ""), ("permissions", "")],
    },
    Builtin {
        name: "smith/permissions",
        world: "extension",
        description: "Approval modes and permission rules: decides every tool call, asks when the mode says so, /approval",
        component: PERMISSIONS,
        capabilities: &[("ui", ""), ("permissions", "")],
    },
    Builtin {
        name: "smith/instructions",
        world: "extension",
        description: "Project instructions: SMITH.md, AGENTS.md and CLAUDE.md from the config folder and the repository down to the working folder, in the system prompt",
        component: INSTRUCTIONS,
        capabilities: &[("ui", ""), ("local-read", "")],
    },
    Builtin {
        name: "smith/skills",
        world: "extension",
        description: "Skills: SKILL.md folders of the project and the user, their names and descriptions in the system prompt, the `skill` tool that loads one, `/name` and `$name` to invoke one, `/skills` to list them",
        component: SKILLS,
        capabilities: &[("ui", ""), ("local-read", "")],
    },
    Builtin {
        name: "smith/agents",
        world: "extension",
        description: "Custom agents: NAME.md files (Claude Code's format) in the project's .smith/agents and .claude/agents and the user's, `--agent NAME` to run the main thread as one, /agents to list them",
        component: AGENTS,
        capabilities: &[("ui", ""), ("local-read", "")],
    },
    Builtin {
        name: "smith/mcp",
        world: "extension",
        description: "Model Context Protocol client: the tools of the MCP servers configured in smith's `mcp` block or a trusted project's .mcp.json, as mcp__SERVER__TOOL",
        component: MCP,
        capabilities: &[
            ("ui", ""),
            ("permissions", ""),
            ("spawn", ""),
            ("mcp-net", ""),
        ],
    },
    Builtin {
        name: "smith/mentions",
        world: "extension",
        description: "Mentions: `@path` in a prompt attaches the project file's text (or the folder's listing) within per-file and total budgets; paths outside the project are refused",
        component: MENTIONS,
        capabilities: &[("local-read", "")],
    },
    Builtin {
        name: "smith/todo",
        world: "extension",
        description: "Todo list: the `todo_write` tool, the list kept in the session across compaction and resume, told to the model while an item is open, shown as a panel and by /todo",
        component: TODO,
        capabilities: &[("ui", "")],
    },
    Builtin {
        name: "smith/hooks",
        world: "extension",
        description: "Hook commands: shell commands at session start, prompt submit, before and after tool calls and at stop, configured as Claude Code's hooks (hooks.json in the config folder, a trusted project's .claude/settings.json or .smith/hooks.json, and the marketplace plugins whose hooks the user enabled); they can block, rewrite a call's arguments, add context or keep the agent going; /hooks lists them",
        component: HOOKS,
        capabilities: &[
            ("ui", ""),
            ("local-read", ""),
            ("process", ""),
            ("project-write", ""),
        ],
    },
    Builtin {
        name: "smith/web",
        world: "extension",
        description: "Web tools: `web_fetch` (a page as Markdown, public addresses only unless `web.allow-hosts` names the host) and `web_search` (through a search provider plugin: smith/searxng, smith/brave or an installed one), their output marked untrusted",
        component: WEB,
        capabilities: &[("web", ""), ("web-search", "")],
    },
    Builtin {
        name: "smith/searxng",
        world: "search-provider",
        description: "Search provider for `web_search`: a SearXNG instance's JSON API at `web.searxng-url` (one on this machine or the private network must be in `web.allow-hosts`)",
        component: SEARXNG,
        capabilities: &[("web", "")],
    },
    Builtin {
        name: "smith/brave",
        world: "search-provider",
        description: "Search provider for `web_search`: the Brave Search API, with the key stored by `smith auth set brave` (put in by smith, never seen by the plugin)",
        component: BRAVE,
        capabilities: &[("web", ""), ("secrets", "brave.api_key")],
    },
];

/// The mock provider as a plugin: `script` is `(json text, origin)`, or
/// `None` for the built-in demo. `cache_dir` is where compiled components
/// are cached (the first run compiles, later runs load); `limits` are the
/// plugin's deadlines and memory cap.
///
/// # Errors
///
/// [`InstantiateError::Rejected`] with the script parser's message (naming
/// the origin) when the script is invalid; [`InstantiateError::Failed`]
/// when the runtime is unavailable or the plugin fails.
pub fn mock_provider(
    script: Option<(&str, &str)>,
    cache_dir: Option<&std::path::Path>,
    limits: crate::Limits,
) -> Result<crate::WasmProvider, crate::InstantiateError> {
    let component = crate::ProviderComponent::load("smith/mock", MOCK, cache_dir, limits)?;
    let settings: Vec<(String, String)> = match script {
        Some((text, origin)) => vec![
            ("script".to_owned(), text.to_owned()),
            ("origin".to_owned(), origin.to_owned()),
        ],
        None => Vec::new(),
    };
    component.instantiate_checked(&settings)
}

/// The built-in vendor provider plugin `name` (`smith/anthropic`,
/// `smith/openai`, `smith/google`, `smith/openai-compatible`), compiled (or
/// loaded from `cache_dir`) and pre-instantiated with `limits`.
///
/// The compiled component is kept for the rest of the process, keyed on the
/// plugin and the cache directory: later calls with the same pair neither
/// compile nor read the cache again. Instantiate the result once per
/// configuration ([`ProviderComponent::instantiate`](crate::ProviderComponent::instantiate)).
///
/// # Errors
///
/// When `name` is not a built-in vendor plugin, or the component does not
/// compile or load (the error names the plugin and the phase).
pub fn vendor_component(
    name: &str,
    cache_dir: Option<&std::path::Path>,
    limits: crate::Limits,
) -> Result<crate::ProviderComponent, crate::PluginError> {
    type Compiled = std::collections::HashMap<
        (&'static str, Option<std::path::PathBuf>),
        wasmtime::component::Component,
    >;
    static COMPILED: std::sync::OnceLock<std::sync::Mutex<Compiled>> = std::sync::OnceLock::new();
    let Some(builtin) = BUILTINS
        .iter()
        .find(|b| b.name == name && b.world == "provider" && b.name != "smith/mock")
    else {
        return Err(crate::PluginError::new(
            name,
            crate::Phase::Compile,
            crate::ErrorKind::Invalid,
            format!(
                "{name:?} is not a built-in vendor provider plugin; the built-in vendors are {}",
                VENDORS.join(", ")
            ),
        ));
    };
    let key = (builtin.name, cache_dir.map(std::path::Path::to_path_buf));
    let compiled = COMPILED.get_or_init(Default::default);
    let known = compiled.lock().ok().and_then(|map| map.get(&key).cloned());
    let component = match known {
        Some(component) => component,
        None => {
            let component = crate::Runtime::global()?.load_component(
                builtin.name,
                builtin.component,
                cache_dir,
            )?;
            if let Ok(mut map) = compiled.lock() {
                map.insert(key, component.clone());
            }
            component
        }
    };
    crate::ProviderComponent::from_component(builtin.name, &component, limits)
}

/// The built-in vendor provider plugins, by name.
pub const VENDORS: [&str; 4] = [
    "smith/anthropic",
    "smith/openai",
    "smith/google",
    "smith/openai-compatible",
];

/// Where the build put every guest component it built: the built-ins, the
/// SDK example (`smith_plugin_hello.wasm`) and the hostile test guests.
/// Tests of other crates install the example from here.
pub const GUESTS_DIR: &str = env!("SMITH_PLUGIN_GUESTS");
