//! smith/agents: custom agents, as Claude Code writes them, through the
//! plugin contract.
//!
//! An agent is a Markdown file `NAME.md`: YAML frontmatter (`name`,
//! `description`, optional `tools`, `model`, `provider`) and a body, the
//! agent's system prompt (the format: `smith_skill_format::agent`). Where
//! agents come from, first found wins for a name (docs/plugins.md,
//! "Agents"): the project — the working folder, then each parent up to the
//! repository root (never the home folder) — with, in each folder,
//! `.smith/agents` then `.claude/agents`; then the user's: `agents` in
//! smith's configuration folder, then `~/.claude/agents`; then the
//! `agents` folder of each plugin installed from a marketplace
//! (`marketplace-plugins/PLUGIN@MARKETPLACE` in smith's configuration
//! folder), whose agents are named `PLUGIN:NAME`. Project agents are read
//! only in a trusted project.
//!
//! `/agents` (and `smith agents list`) lists every agent with its source,
//! tools and model, what shadows what, and the files that could not be
//! read with the reason. The host resolves the agent the `agent` option
//! names (`--agent NAME`, `SMITH_AGENT`) through the same command
//! (`/agents --resolve NAME`, one JSON document) and applies its tools,
//! model and provider; the plugin adds its body to the system prompt, after
//! every other fragment.

use std::cell::RefCell;

use serde_json::json;
use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;
use smith_skill_format::agent::{self as format, AgentDeclared};
use smith_skill_format::{Found, Level, resolve};

struct Agents;

/// The plugin's name, as messages name it.
const NAME: &str = "smith/agents";

/// The option naming the agent the main thread runs as.
const AGENT: &str = "agent";

/// The folders read in each project folder, in precedence order.
const PROJECT_FOLDERS: [&str; 2] = [".smith/agents", ".claude/agents"];

/// The folder read in the home folder, after smith's own.
const HOME_FOLDER: &str = ".claude/agents";

/// The most of an agent's body sent as its system prompt.
const BODY_MAX_BYTES: usize = 64 * 1024;

/// Where the agent's prompt sits: after every built-in fragment (the
/// base, instructions, skills, todo, plan).
const ORDER: i32 = 900;

/// One agent file found, with what its frontmatter said.
#[derive(Clone, Debug)]
struct Entry {
    path: String,
    level: Level,
    read: Result<AgentDeclared, String>,
    /// The agent file of the same name that wins over this one.
    shadowed_by: Option<String>,
}

impl Entry {
    fn declared(&self) -> Option<&AgentDeclared> {
        self.read.as_ref().ok()
    }

    fn active(&self) -> Option<&AgentDeclared> {
        self.declared().filter(|_| self.shadowed_by.is_none())
    }
}

#[derive(Default)]
struct Scan {
    roots: Vec<(String, Level)>,
    entries: Vec<Entry>,
    /// Project agent files not read: the project is not trusted.
    untrusted: Vec<String>,
    /// What trusts the project.
    trust: String,
    signature: Vec<(String, u64, u64)>,
    trusted: bool,
}

#[derive(Default)]
struct State {
    scan: Option<Scan>,
    pending: Vec<String>,
    /// The prompt fragment last given (`None` before the first context).
    told: Option<String>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn parent(dir: &str) -> Option<String> {
    let trimmed = dir.trim_end_matches('/');
    let cut = trimmed.rfind('/')?;
    Some(if cut == 0 {
        "/".to_owned()
    } else {
        trimmed[..cut].to_owned()
    })
}

fn exists(path: &str) -> bool {
    matches!(host::stat_file(path), Ok(Some(_)))
}

fn error_text(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(text)
        | host::EffectError::Invalid(text)
        | host::EffectError::Failed(text) => text.clone(),
    }
}

/// The project folders, nearest first, up to the repository root (never
/// the home folder); and the command that trusts the project.
fn project_dirs(home: Option<&str>) -> (Vec<String>, String) {
    let Ok(cwd) = host::resolve_path(".") else {
        return (Vec::new(), String::new());
    };
    let home = home.map(|h| h.trim_end_matches('/').to_owned());
    let mut dirs = Vec::new();
    let mut current = cwd.absolute;
    loop {
        if home.as_deref() == Some(current.trim_end_matches('/')) {
            break;
        }
        dirs.push(current.clone());
        if exists(&join(&current, ".git")) {
            break;
        }
        match parent(&current) {
            Some(up) if up != current => current = up,
            _ => break,
        }
    }
    let trust = match dirs.iter().find(|d| exists(&join(d, ".smith"))) {
        Some(project) => format!("run `smith trust {project}`"),
        None => {
            let root = dirs.last().cloned().unwrap_or_default();
            format!(
                "create the project's folder `{}` and run `smith trust {root}`",
                join(&root, ".smith")
            )
        }
    };
    (dirs, trust)
}

/// The agents folders in precedence order.
fn roots() -> (Vec<(String, Level)>, String) {
    let home = host::home_dir().ok().flatten();
    let (dirs, trust) = project_dirs(home.as_deref());
    let mut roots: Vec<(String, Level)> = Vec::new();
    for dir in &dirs {
        for folder in PROJECT_FOLDERS {
            roots.push((join(dir, folder), Level::Project));
        }
    }
    if let Ok(Some(config)) = host::config_dir() {
        roots.push((join(&config, "agents"), Level::Global));
    }
    if let Some(home) = &home {
        roots.push((join(home, HOME_FOLDER), Level::Global));
    }
    if let Ok(Some(config)) = host::config_dir() {
        roots.extend(
            marketplace_plugins(&config)
                .into_iter()
                .map(|plugin| (join(&plugin, "agents"), Level::Plugin)),
        );
    }
    let mut seen = Vec::new();
    roots.retain(|(root, _)| {
        let fresh = !seen.contains(root);
        seen.push(root.clone());
        fresh
    });
    (roots, trust)
}

/// The folders of the plugins installed from marketplaces
/// (`marketplace-plugins/PLUGIN@MARKETPLACE` in smith's configuration
/// folder), sorted by name.
fn marketplace_plugins(config: &str) -> Vec<String> {
    let folder = join(config, smith_skill_format::MARKETPLACE_PLUGINS);
    let Ok(Some(listing)) = host::peek_dir(&folder) else {
        return Vec::new();
    };
    listing
        .entries
        .iter()
        // Staging and set-aside folders start with a dot.
        .filter(|e| {
            matches!(e.kind, host::EntryKind::Dir)
                && e.name.contains('@')
                && !e.name.starts_with('.')
        })
        .map(|e| join(&folder, &e.name))
        .collect()
}

/// Every `NAME.md` file in `root`, with size and modification time.
fn candidates(root: &str) -> Vec<(String, u64, u64)> {
    let Ok(Some(listing)) = host::peek_dir(root) else {
        return Vec::new();
    };
    listing
        .entries
        .iter()
        .filter(|e| matches!(e.kind, host::EntryKind::File | host::EntryKind::Symlink))
        .filter(|e| e.name.ends_with(".md") && e.name.len() > 3)
        .filter_map(|e| {
            let path = join(root, &e.name);
            match host::stat_file(&path) {
                Ok(Some(stat)) if !stat.is_dir => Some((path, stat.size, stat.modified_ns)),
                _ => None,
            }
        })
        .collect()
}

fn stem(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.strip_suffix(".md").unwrap_or(file)
}

/// Reads and checks one agent file, with its text.
fn read_agent(path: &str, level: Level) -> Result<(AgentDeclared, String), String> {
    match host::peek_file(path) {
        Ok(Some(text)) => format::check_agent(&text, stem(path)).map(|mut d| {
            let root = parent(path).unwrap_or_default();
            d.name = smith_skill_format::qualified(level, &root, &d.name);
            (d, text)
        }),
        Ok(None) => {
            Err("the file went away while it was read; it is read again next turn".to_owned())
        }
        Err(err) => Err(format!(
            "it cannot be read ({}); check that it is a readable file",
            error_text(&err)
        )),
    }
}

/// Lists and stats the agents folders; reads the files when anything
/// changed.
fn refresh() {
    let (roots, trust) = roots();
    let trusted = host::project_trusted().unwrap_or(false);
    let mut found = Vec::new();
    let mut signature = Vec::new();
    for (root, level) in &roots {
        for (path, size, modified) in candidates(root) {
            signature.push((path.clone(), size, modified));
            found.push((path, *level));
        }
    }
    let unchanged = STATE.with(|state| {
        state.borrow().scan.as_ref().is_some_and(|scan| {
            scan.signature == signature && scan.trusted == trusted && scan.roots == roots
        })
    });
    if unchanged {
        return;
    }
    let mut scan = Scan {
        roots,
        trust,
        signature,
        trusted,
        ..Scan::default()
    };
    for (path, level) in found {
        if level == Level::Project && !trusted {
            scan.untrusted.push(path);
            continue;
        }
        let read = read_agent(&path, level).map(|(declared, _)| declared);
        scan.entries.push(Entry {
            path,
            level,
            read,
            shadowed_by: None,
        });
    }
    let valid: Vec<(usize, Found)> = scan
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            e.declared().map(|d| {
                (
                    i,
                    Found {
                        name: d.name.clone(),
                        path: e.path.clone(),
                    },
                )
            })
        })
        .collect();
    let found: Vec<Found> = valid.iter().map(|(_, f)| f.clone()).collect();
    for (position, winner) in resolve(&found).into_iter().enumerate() {
        if let Some(winner) = winner {
            scan.entries[valid[position].0].shadowed_by = Some(found[winner].path.clone());
        }
    }
    let notices = notices(&scan);
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        state.scan = Some(scan);
        state.pending.extend(notices);
    });
}

fn notices(scan: &Scan) -> Vec<String> {
    let mut notices = Vec::new();
    if !scan.untrusted.is_empty() {
        notices.push(format!(
            "the project's agents {} were not loaded: this project is not trusted, and a project's agents are read only once you trust it; {} to use them",
            scan.untrusted.join(", "),
            scan.trust
        ));
    }
    for entry in &scan.entries {
        if let Err(reason) = &entry.read {
            notices.push(format!(
                "the agent file {} was not loaded: {reason}. `smith agents list` lists every agent and problem",
                entry.path
            ));
        }
        if let (Some(by), Some(declared)) = (&entry.shadowed_by, entry.declared()) {
            notices.push(format!(
                "the agent {} in {} is not used: {by} has the same name and comes first (project before global; .smith before .claude); rename one of them to use both",
                declared.name, entry.path
            ));
        }
    }
    notices
}

/// The agent the `agent` option names, if any.
fn selected() -> Option<String> {
    let json = host::config_get(AGENT)?;
    let value: serde_json::Value = serde_json::from_str(&json).ok()?;
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// What looking `name` up came to.
enum Lookup {
    Found(Entry),
    /// A file of that name could not be read or is not trusted: why.
    Broken(String),
    /// No agent has the name; the names there are.
    Missing(Vec<String>),
}

fn lookup(name: &str) -> Lookup {
    refresh();
    STATE.with(|state| {
        let state = state.borrow();
        let Some(scan) = &state.scan else {
            return Lookup::Missing(Vec::new());
        };
        if let Some(entry) = scan
            .entries
            .iter()
            .find(|e| e.active().is_some_and(|d| d.name == name))
        {
            return Lookup::Found(entry.clone());
        }
        if let Some(entry) = scan
            .entries
            .iter()
            .find(|e| e.read.is_err() && stem(&e.path) == name)
        {
            let reason = entry.read.as_ref().err().cloned().unwrap_or_default();
            return Lookup::Broken(format!(
                "the agent {name} ({}) could not be loaded: {reason}",
                entry.path
            ));
        }
        if let Some(path) = scan.untrusted.iter().find(|p| stem(p) == name) {
            return Lookup::Broken(format!(
                "the agent {name} ({path}) belongs to a project that is not trusted, so it is not read; {} to use it",
                scan.trust
            ));
        }
        Lookup::Missing(
            scan.entries
                .iter()
                .filter_map(Entry::active)
                .map(|d| d.name.clone())
                .collect(),
        )
    })
}

/// Why `name` names no agent, with the agents there are and the nearest.
fn missing(name: &str, names: &[String]) -> String {
    if names.is_empty() {
        return format!(
            "no agent is named `{name}`, and no agent is defined; put one in .smith/agents/{name}.md (project) or in the agents folder of smith's configuration folder (yours)"
        );
    }
    let known: Vec<&str> = names.iter().map(String::as_str).collect();
    let near = format::near_names(name, &known);
    let hint = match near.first() {
        Some(best) => format!(" Did you mean `{best}`?"),
        None => String::new(),
    };
    format!(
        "no agent is named `{name}`; the agents are: {}.{hint} `smith agents list` shows where each comes from",
        names.join(", ")
    )
}

/// The body of `entry`'s file: its system prompt, bounded.
fn body(entry: &Entry) -> Result<(AgentDeclared, String), String> {
    let (declared, text) = read_agent(&entry.path, entry.level)
        .map_err(|reason| format!("the agent file {} could not be read: {reason}", entry.path))?;
    let body = text[declared.body_start..].trim();
    let cut = smith_skill_format::prefix(body, BODY_MAX_BYTES);
    let mut prompt = cut.to_owned();
    if cut.len() < body.len() {
        prompt.push_str(&format!(
            "\n\n[cut: the agent's prompt is {} bytes, more than the {BODY_MAX_BYTES} sent; the rest is in {}]",
            body.len(),
            entry.path
        ));
    }
    Ok((declared, prompt))
}

/// `/agents --resolve NAME`: the agent as one JSON document the host
/// applies.
fn resolved(name: &str) -> Result<String, String> {
    match lookup(name) {
        Lookup::Found(entry) => {
            let (declared, prompt) = body(&entry)?;
            let tools: Option<Vec<serde_json::Value>> = declared.tools.as_ref().map(|tools| {
                tools
                    .iter()
                    .map(|t| json!({"written": t, "tool": format::tool_name(t)}))
                    .collect()
            });
            Ok(json!({
                "name": declared.name,
                "description": declared.description,
                "path": entry.path,
                "level": entry.level.as_str(),
                "tools": tools,
                "model": declared.model,
                "provider": declared.provider,
                "prompt": prompt,
            })
            .to_string())
        }
        Lookup::Broken(reason) => Err(reason),
        Lookup::Missing(names) => Err(missing(name, &names)),
    }
}

fn tools_text(declared: &AgentDeclared) -> String {
    match &declared.tools {
        None => "every tool".to_owned(),
        Some(tools) if tools.is_empty() => "none".to_owned(),
        Some(tools) => tools
            .iter()
            .map(|t| {
                let tool = format::tool_name(t);
                if tool == *t {
                    tool
                } else {
                    format!("{t} ({tool})")
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn listing_lines(scan: &Scan) -> Vec<String> {
    let mut lines = vec![
        "Agents, first of a name wins: the project (the working folder up to the repository root) before the user's; in each, .smith/agents then .claude/agents (smith's own `agents` folder first among the user's); then those of plugins installed from marketplaces, named PLUGIN:NAME. `smith --agent NAME` runs the main thread as one.".to_owned(),
    ];
    let valid: Vec<&Entry> = scan.entries.iter().filter(|e| e.read.is_ok()).collect();
    if valid.is_empty() {
        lines.push(String::new());
        lines.push("No agent found. Put one in .smith/agents/NAME.md (project) or in the agents folder of smith's configuration folder (yours): frontmatter with name and description (optional tools, model, provider), then the agent's system prompt.".to_owned());
    }
    for entry in valid {
        let Some(declared) = entry.declared() else {
            continue;
        };
        lines.push(String::new());
        lines.push(format!(
            "{}  {}  {}",
            declared.name,
            entry.level.as_str(),
            entry.path
        ));
        if let Some(by) = &entry.shadowed_by {
            lines.push(format!("    shadowed by {by} (not used)"));
            continue;
        }
        let description: Vec<&str> = declared.description.split_whitespace().collect();
        lines.push(format!("    {}", description.join(" ")));
        lines.push(format!("    tools: {}", tools_text(declared)));
        lines.push(format!(
            "    model: {}{}",
            declared.model.as_deref().unwrap_or("inherit"),
            declared
                .provider
                .as_deref()
                .map(|p| format!("  provider: {p}"))
                .unwrap_or_default()
        ));
    }
    let broken: Vec<&Entry> = scan.entries.iter().filter(|e| e.read.is_err()).collect();
    if !broken.is_empty() {
        lines.push(String::new());
        lines.push("Not loaded (the frontmatter could not be read):".to_owned());
        for entry in broken {
            lines.push(entry.path.clone());
            lines.push(format!(
                "    {}",
                entry.read.as_ref().err().cloned().unwrap_or_default()
            ));
        }
    }
    if !scan.untrusted.is_empty() {
        lines.push(String::new());
        lines.push(format!(
            "Not read (the project is not trusted; {} to use them):",
            scan.trust
        ));
        lines.extend(scan.untrusted.iter().cloned());
    }
    lines
}

fn listing_json(scan: &Scan) -> serde_json::Value {
    let agents: Vec<serde_json::Value> = scan
        .entries
        .iter()
        .filter_map(|e| {
            e.declared().map(|d| {
                json!({
                    "name": d.name,
                    "description": d.description,
                    "tools": d.tools,
                    "model": d.model,
                    "provider": d.provider,
                    "level": e.level.as_str(),
                    "path": e.path,
                    "shadowed_by": e.shadowed_by,
                })
            })
        })
        .collect();
    let unreadable: Vec<serde_json::Value> =
        scan.entries
            .iter()
            .filter_map(|e| {
                e.read.as_ref().err().map(
                    |reason| json!({"path": e.path, "level": e.level.as_str(), "reason": reason}),
                )
            })
            .collect();
    let skipped: Vec<serde_json::Value> = scan
        .untrusted
        .iter()
        .map(|p| {
            json!({"path": p, "reason": format!("the project is not trusted; {} to use it", scan.trust)})
        })
        .collect();
    let folders: Vec<serde_json::Value> = scan
        .roots
        .iter()
        .map(|(root, level)| json!({"path": root, "level": level.as_str()}))
        .collect();
    json!({
        "folders": folders,
        "agents": agents,
        "unreadable": unreadable,
        "skipped": skipped,
    })
}

fn notify(text: String) -> ext::Action {
    ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Text,
    })
}

/// The main thread's agent prompt, when the `agent` option names one.
fn agent_fragment() -> Vec<pro::Fragment> {
    let Some(name) = selected() else {
        return Vec::new();
    };
    let text = match lookup(&name) {
        Lookup::Found(entry) => match body(&entry) {
            Ok((declared, prompt)) => format!(
                "# Agent: {}\n\nYou are running as the agent `{}` ({}). Its instructions follow and take precedence over the general guidance above where they differ.\n\n{prompt}",
                declared.name, declared.name, entry.path
            ),
            Err(reason) => {
                STATE.with(|state| state.borrow_mut().pending.push(reason));
                return Vec::new();
            }
        },
        Lookup::Broken(reason) => {
            STATE.with(|state| state.borrow_mut().pending.push(reason));
            return Vec::new();
        }
        Lookup::Missing(names) => {
            let reason = format!(
                "the `agent` option names `{name}`, so the main thread should run as it, but {}",
                missing(&name, &names)
            );
            STATE.with(|state| state.borrow_mut().pending.push(reason));
            return Vec::new();
        }
    };
    vec![pro::Fragment {
        id: "agent".to_owned(),
        text,
        order: ORDER,
    }]
}

impl ext::Guest for Agents {
    fn contribute() -> ext::Contributions {
        refresh();
        ext::Contributions {
            commands: vec![ext::Command {
                name: "agents".to_owned(),
                description:
                    "list the agents: source, tools, model, shadowing, files that could not be read"
                        .to_owned(),
                usage: String::new(),
                complete: "none".to_owned(),
            }],
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: Vec::new(),
            config: Vec::new(),
        }
    }

    /// `/agents [--json]` lists the agents; `/agents --resolve NAME`
    /// answers one agent as JSON (what the host applies for `--agent`).
    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        if name != "agents" {
            return Err(format!(
                "{NAME} has no command /{name}; its command is /agents"
            ));
        }
        let argument = argument.trim();
        if let Some(agent) = argument.strip_prefix("--resolve") {
            return resolved(agent.trim()).map(|json| vec![notify(json)]);
        }
        refresh();
        STATE.with(|state| {
            let state = state.borrow();
            let Some(scan) = &state.scan else {
                return Ok(Vec::new());
            };
            if argument == "--json" {
                return Ok(vec![notify(listing_json(scan).to_string())]);
            }
            Ok(listing_lines(scan).into_iter().map(notify).collect())
        })
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        if matches!(
            event,
            ext::LifecycleEvent::Input(_)
                | ext::LifecycleEvent::ToolCall(_)
                | ext::LifecycleEvent::Context(_)
                | ext::LifecycleEvent::SessionCompact
                | ext::LifecycleEvent::SessionSwitch(_)
                | ext::LifecycleEvent::SessionFork(_)
        ) {
            return ext::HandlerResult::None;
        }
        if matches!(event, ext::LifecycleEvent::AgentStart) {
            refresh();
        }
        let notices = STATE.with(|state| std::mem::take(&mut state.borrow_mut().pending));
        if notices.is_empty() {
            return ext::HandlerResult::None;
        }
        ext::HandlerResult::Actions(notices.into_iter().map(notify).collect())
    }
}

impl pro::Guest for Agents {
    fn tools() -> Vec<pro::ToolSpec> {
        Vec::new()
    }

    fn call_tool(name: String, _arguments: String) -> pro::ToolOutput {
        pro::ToolOutput {
            text: format!("{NAME} has no tool {name}"),
            structured: None,
            is_error: true,
        }
    }

    /// The agent's prompt when the `agent` option names one; none when it
    /// is the same as last time.
    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        let fragments = agent_fragment();
        let text = fragments.first().map(|f| f.text.clone()).unwrap_or_default();
        let changed = STATE.with(|state| {
            let mut state = state.borrow_mut();
            let changed = state.told.as_deref() != Some(text.as_str());
            state.told = Some(text);
            changed
        });
        changed.then_some(fragments)
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Agents);
