//! smith/skills: SKILL.md folders, as other agents read them, through the
//! plugin contract.
//!
//! Where skills come from, first found wins for a name (docs/plugins.md,
//! "Skills"): the project — the working folder, then each parent up to the
//! repository root (never the home folder) — with, in each folder,
//! `.smith/skills`, `.claude/skills`, `.agents/skills`, `.gemini/skills`;
//! then the user's: `skills` in smith's configuration folder, then
//! `~/.claude/skills`, `~/.agents/skills`, `~/.gemini/skills`; then the
//! `skills` folder of each plugin installed from a marketplace
//! (`marketplace-plugins/PLUGIN@MARKETPLACE` in smith's configuration
//! folder), whose skills are named `PLUGIN:NAME`. A skill is
//! a folder `NAME/SKILL.md` in one of these. Project skills are read only
//! in a trusted project.
//!
//! It also offers the commands (Claude Code's `commands/NAME.md`) of the
//! marketplace plugins whose commands the user enabled (`smith plugin
//! enable PLUGIN@MARKETPLACE --commands`) as `/PLUGIN:NAME`: the file's
//! body, `$ARGUMENTS` and `$1`..`$9` filled, is sent as the prompt. A
//! skill of the same name wins.
//!
//! The model sees the catalog (names and descriptions) as a prompt
//! fragment and loads a skill with the `skill` tool; the user invokes one
//! with `/name ARGS` or `$name ARGS` (the input decision point replaces
//! the prompt with the skill attached). `/skills` (and `smith skills
//! list`) lists every skill with its source, what shadows what, and the
//! files that could not be read with the reason. Before each turn the
//! skill folders are listed and each SKILL.md stat'ed (size and
//! modification time); only a change reads them again.

use std::cell::RefCell;

use serde_json::json;
use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;
use smith_skill_format as format;

struct Skills;

/// The tool the model loads a skill with.
const TOOL: &str = "skill";

/// The folders read in each project folder, in precedence order.
const PROJECT_FOLDERS: [&str; 4] = [
    ".smith/skills",
    ".claude/skills",
    ".agents/skills",
    ".gemini/skills",
];

/// The folders read in the home folder, after smith's own, in order.
const HOME_FOLDERS: [&str; 3] = [".claude/skills", ".agents/skills", ".gemini/skills"];

/// The most the catalog takes in the system prompt.
const CATALOG_MAX_BYTES: usize = 16 * 1024;

/// The most of a skill's body sent when it is loaded.
const BODY_MAX_BYTES: usize = 64 * 1024;

/// How many of a skill folder's other files are listed, and how deep.
const MAX_FILES: usize = 100;
const MAX_DEPTH: usize = 4;

/// Where the catalog sits in the prompt: after smith/instructions (100+).
const ORDER: i32 = 300;

/// Command names smith and its built-ins carry: a skill of one of these
/// names is invoked as `$name` (the command stays smith's).
const RESERVED: [&str; 22] = [
    "help",
    "model",
    "new",
    "resume",
    "continue",
    "branch",
    "compact",
    "replay",
    "undo",
    "redo",
    "rewind",
    "plugins",
    "context",
    "search",
    "copy",
    "thinking",
    "quit",
    "exit",
    "approval",
    "skills",
    "permissions",
    "todo",
];

/// One SKILL.md found, with what its frontmatter said.
#[derive(Clone, Debug)]
struct Entry {
    /// The SKILL.md file.
    path: String,
    /// The skill's folder.
    dir: String,
    /// The skills folder it was found in.
    root: String,
    level: format::Level,
    /// The checked frontmatter, or why it could not be read.
    read: Result<format::Declared, String>,
    /// The SKILL.md of the same name that wins over this one.
    shadowed_by: Option<String>,
}

impl Entry {
    fn declared(&self) -> Option<&format::Declared> {
        self.read.as_ref().ok()
    }

    fn active(&self) -> Option<&format::Declared> {
        self.declared().filter(|_| self.shadowed_by.is_none())
    }
}

/// What one scan found.
#[derive(Default)]
struct Scan {
    /// The skills folders looked at, in precedence order.
    roots: Vec<(String, format::Level)>,
    entries: Vec<Entry>,
    /// Project SKILL.md files not read: the project is not trusted.
    untrusted: Vec<String>,
    /// What trusts the project.
    trust: String,
    /// Each candidate's path, size and modification time, and trust: what
    /// decides whether anything changed.
    signature: Vec<(String, u64, u64)>,
    trusted: bool,
}

#[derive(Default)]
struct State {
    scan: Option<Scan>,
    /// Notices not yet handed to the host.
    pending: Vec<String>,
    /// The catalog changed since `context` last answered.
    fresh: bool,
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

/// The project folders, nearest first: the working folder, then each
/// parent up to the repository root (the nearest folder holding `.git`),
/// never the home folder itself; and the command that trusts the project.
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

/// The skills folders in precedence order.
fn roots() -> (Vec<(String, format::Level)>, String) {
    let home = host::home_dir().ok().flatten();
    let (dirs, trust) = project_dirs(home.as_deref());
    let mut roots: Vec<(String, format::Level)> = Vec::new();
    for dir in &dirs {
        for folder in PROJECT_FOLDERS {
            roots.push((join(dir, folder), format::Level::Project));
        }
    }
    if let Ok(Some(config)) = host::config_dir() {
        roots.push((join(&config, "skills"), format::Level::Global));
    }
    if let Some(home) = &home {
        for folder in HOME_FOLDERS {
            roots.push((join(home, folder), format::Level::Global));
        }
    }
    if let Ok(Some(config)) = host::config_dir() {
        roots.extend(
            marketplace_plugins(&config)
                .into_iter()
                .map(|plugin| (join(&plugin, "skills"), format::Level::Plugin)),
        );
    }
    // A folder reached twice (smith's configuration folder inside the
    // project) is read once, at its first place.
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
    let folder = join(config, format::MARKETPLACE_PLUGINS);
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

/// A command of a marketplace plugin whose commands the user enabled
/// (`smith plugin enable PLUGIN@MARKETPLACE --commands`): Claude Code's
/// `commands/NAME.md`, offered as `/PLUGIN:NAME`.
#[derive(Clone, Debug)]
struct PluginCommand {
    /// `PLUGIN:NAME`.
    name: String,
    /// The file.
    path: String,
    /// The frontmatter's `description`.
    description: String,
    /// The frontmatter's `argument-hint`.
    hint: String,
}

/// The frontmatter fields of a command file (`key: value` lines between
/// `---` lines) and where its body starts.
fn command_parts(text: &str) -> (Vec<(String, String)>, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (Vec::new(), text);
    };
    let Some(end) = rest.find("\n---") else {
        return (Vec::new(), text);
    };
    let fields = rest[..end]
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            Some((key.trim().to_owned(), value.to_owned()))
        })
        .collect();
    let body = &rest[end + 4..];
    let body = body.split_once('\n').map_or("", |(_, b)| b);
    (fields, body)
}

/// The enabled commands of the marketplace plugins: each plugin's
/// `commands/*.md` and the `.md` files plugin.json's `commands` names,
/// for the plugins whose install record has `enabled.commands`.
fn plugin_commands() -> Vec<PluginCommand> {
    let Ok(Some(config)) = host::config_dir() else {
        return Vec::new();
    };
    let folder = join(&config, format::MARKETPLACE_PLUGINS);
    let Ok(Some(listing)) = host::peek_dir(&folder) else {
        return Vec::new();
    };
    let read = |path: &str| -> Option<serde_json::Value> {
        serde_json::from_str(&host::peek_file(path).ok()??).ok()
    };
    let mut out = Vec::new();
    for item in &listing.entries {
        let Some(id) = item.name.strip_suffix(".json") else {
            continue;
        };
        let Some((plugin, _)) = id.split_once('@') else {
            continue;
        };
        if id.starts_with('.') || format::name_problem(plugin).is_some() {
            continue;
        }
        let Some(record) = read(&join(&folder, &item.name)) else {
            continue;
        };
        let enabled = record
            .get("enabled")
            .and_then(|e| e.get("commands"))
            .is_some_and(serde_json::Value::is_string);
        if !enabled {
            continue;
        }
        let root = join(&folder, id);
        let mut files: Vec<String> = Vec::new();
        if let Ok(Some(listing)) = host::peek_dir(&join(&root, "commands")) {
            files.extend(
                listing
                    .entries
                    .iter()
                    .filter(|e| matches!(e.kind, host::EntryKind::File) && e.name.ends_with(".md"))
                    .map(|e| join(&join(&root, "commands"), &e.name)),
            );
        }
        let manifest = read(&join(&root, ".claude-plugin/plugin.json"));
        let named: Vec<String> = match manifest.as_ref().and_then(|m| m.get("commands")) {
            Some(serde_json::Value::String(p)) => vec![p.clone()],
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        for path in named {
            let path = join(&root, path.trim_start_matches("./"));
            if path.ends_with(".md") && !path.contains("/../") && !files.contains(&path) {
                files.push(path);
            }
        }
        for path in files {
            let stem = path
                .rsplit('/')
                .next()
                .and_then(|f| f.strip_suffix(".md"))
                .unwrap_or_default();
            if format::name_problem(stem).is_some() {
                continue;
            }
            let Ok(Some(text)) = host::peek_file(&path) else {
                continue;
            };
            let (fields, _) = command_parts(&text);
            let field = |key: &str| {
                fields
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            out.push(PluginCommand {
                name: format!("{plugin}:{stem}"),
                path: path.clone(),
                description: field("description"),
                hint: field("argument-hint"),
            });
        }
    }
    out
}

/// The prompt `/PLUGIN:NAME ARGS` sends: the command file's body with
/// `$ARGUMENTS` replaced by the arguments as typed and `$1`..`$9` by their
/// words (as Claude Code's commands number them); when the body has no
/// placeholder, the arguments follow it as `ARGUMENTS: ...`, as Claude
/// Code does.
fn command_prompt(command: &PluginCommand, args: &str) -> Result<String, String> {
    let text = match host::peek_file(&command.path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Err(format!(
                "the command {} ({}) is gone; reinstall its plugin (`smith plugin list` shows it)",
                command.name, command.path
            ));
        }
        Err(err) => {
            return Err(format!(
                "the command {} ({}) could not be read: {}",
                command.name,
                command.path,
                error_text(&err)
            ));
        }
    };
    let (_, body) = command_parts(&text);
    let words = format::split_arguments(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut replaced = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        if let Some(after) = tail.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            replaced = true;
            rest = after;
            continue;
        }
        let digit = tail.as_bytes().first().copied().filter(u8::is_ascii_digit);
        let next = tail.as_bytes().get(1).copied();
        let alone = !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
        match digit {
            Some(d) if d != b'0' && alone => {
                let index = usize::from(d - b'1');
                if let Some(word) = words.get(index) {
                    out.push_str(word);
                    replaced = true;
                } else {
                    out.push_str(&rest[at..at + 2]);
                }
                rest = &tail[1..];
            }
            _ => {
                out.push('$');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    let mut prompt = out.trim().to_owned();
    if !replaced && !args.is_empty() {
        prompt.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    Ok(prompt)
}

/// Every `NAME/SKILL.md` in `root`, with size and modification time.
fn candidates(root: &str) -> Vec<(String, String, u64, u64)> {
    let Ok(Some(listing)) = host::peek_dir(root) else {
        return Vec::new();
    };
    listing
        .entries
        .iter()
        .filter(|e| matches!(e.kind, host::EntryKind::Dir | host::EntryKind::Symlink))
        .filter_map(|e| {
            let dir = join(root, &e.name);
            let path = join(&dir, "SKILL.md");
            match host::stat_file(&path) {
                Ok(Some(stat)) if !stat.is_dir => Some((dir, path, stat.size, stat.modified_ns)),
                _ => None,
            }
        })
        .collect()
}

fn folder_name(dir: &str) -> &str {
    dir.trim_end_matches('/').rsplit('/').next().unwrap_or(dir)
}

/// Reads and checks one SKILL.md (found at `level` in `root`: a
/// marketplace plugin's skill is named `PLUGIN:NAME`).
fn read_skill(
    path: &str,
    dir: &str,
    level: format::Level,
    root: &str,
) -> Result<(format::Declared, String), String> {
    match host::peek_file(path) {
        Ok(Some(text)) => match level {
            format::Level::Plugin => format::check_plugin_skill(&text, folder_name(dir)),
            _ => format::check(&text, folder_name(dir)),
        }
        .map(|mut d| {
            d.name = format::qualified(level, root, &d.name);
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

/// Lists and stats the skill folders; reads the SKILL.md files when
/// anything changed. Returns whether it did.
fn refresh() -> bool {
    let (roots, trust) = roots();
    let trusted = host::project_trusted().unwrap_or(false);
    let mut found = Vec::new();
    let mut signature = Vec::new();
    for (root, level) in &roots {
        for (dir, path, size, modified) in candidates(root) {
            signature.push((path.clone(), size, modified));
            found.push((dir, path, root.clone(), *level));
        }
    }
    let unchanged = STATE.with(|state| {
        state.borrow().scan.as_ref().is_some_and(|scan| {
            scan.signature == signature && scan.trusted == trusted && scan.roots == roots
        })
    });
    if unchanged {
        return false;
    }
    let mut scan = Scan {
        roots,
        trust,
        signature,
        trusted,
        ..Scan::default()
    };
    for (dir, path, root, level) in found {
        if level == format::Level::Project && !trusted {
            scan.untrusted.push(path);
            continue;
        }
        let read = read_skill(&path, &dir, level, &root).map(|(declared, _)| declared);
        scan.entries.push(Entry {
            path,
            dir,
            root,
            level,
            read,
            shadowed_by: None,
        });
    }
    // The first valid skill of a name wins; the others name it.
    let valid: Vec<(usize, format::Found)> = scan
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            e.declared().map(|d| {
                (
                    i,
                    format::Found {
                        name: d.name.clone(),
                        path: e.path.clone(),
                    },
                )
            })
        })
        .collect();
    let found: Vec<format::Found> = valid.iter().map(|(_, f)| f.clone()).collect();
    for (position, winner) in format::resolve(&found).into_iter().enumerate() {
        if let Some(winner) = winner {
            scan.entries[valid[position].0].shadowed_by = Some(found[winner].path.clone());
        }
    }
    let notices = notices(&scan);
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        state.scan = Some(scan);
        state.pending.extend(notices);
        state.fresh = true;
    });
    true
}

/// What a scan tells the user: skipped project skills, unreadable files,
/// shadowed skills, a cut catalog.
fn notices(scan: &Scan) -> Vec<String> {
    let mut notices = Vec::new();
    if !scan.untrusted.is_empty() {
        notices.push(format!(
            "the project's skills {} were not loaded: this project is not trusted, and a project's skills are read only once you trust it; {} to use them",
            scan.untrusted.join(", "),
            scan.trust
        ));
    }
    for entry in &scan.entries {
        if let Err(reason) = &entry.read {
            notices.push(format!(
                "the skill file {} was not loaded: {reason}. `smith skills list` lists every skill and problem",
                entry.path
            ));
        }
        if let (Some(by), Some(declared)) = (&entry.shadowed_by, entry.declared()) {
            notices.push(format!(
                "the skill {} in {} is not used: {by} has the same name and comes first (project before global; .smith, .claude, .agents, .gemini within a folder); rename one of them to use both",
                declared.name, entry.path
            ));
        }
    }
    let (_, left_out) = catalog(scan);
    if !left_out.is_empty() {
        notices.push(format!(
            "the skills catalog is over its {CATALOG_MAX_BYTES} bytes, so the model sees only the names of {}, not their descriptions; invoke them as /NAME or shorten the descriptions",
            left_out.join(", ")
        ));
    }
    notices
}

fn catalog(scan: &Scan) -> (String, Vec<String>) {
    let active: Vec<(&str, &str)> = scan
        .entries
        .iter()
        .filter_map(Entry::active)
        .map(|d| (d.name.as_str(), d.description.as_str()))
        .collect();
    format::catalog(&active, TOOL, CATALOG_MAX_BYTES)
}

/// The catalog as the plugin's fragments (none when there is no skill).
fn fragments() -> Vec<pro::Fragment> {
    STATE.with(|state| {
        let state = state.borrow();
        let Some(scan) = &state.scan else {
            return Vec::new();
        };
        if !scan.entries.iter().any(|e| e.active().is_some()) {
            return Vec::new();
        }
        vec![pro::Fragment {
            id: "catalog".to_owned(),
            text: catalog(scan).0,
            order: ORDER,
        }]
    })
}

/// What the lookup of `name` came to.
enum Lookup {
    /// The skill: its folder, SKILL.md and frontmatter.
    Found(Entry),
    /// A SKILL.md of that name (by folder) could not be read, or lies in
    /// an untrusted project: the reason.
    Broken(String),
    /// No skill has the name; the names there are.
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
            .find(|e| e.read.is_err() && folder_name(&e.dir) == name)
        {
            let reason = entry.read.as_ref().err().cloned().unwrap_or_default();
            return Lookup::Broken(format!(
                "the skill {name} ({}) could not be loaded: {reason}",
                entry.path
            ));
        }
        if let Some(path) = scan
            .untrusted
            .iter()
            .find(|p| parent(p).is_some_and(|dir| folder_name(&dir) == name))
        {
            return Lookup::Broken(format!(
                "the skill {name} ({path}) belongs to a project that is not trusted, so it is not read; {} to use it",
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

/// The other files of a skill folder, relative to it, sorted; bounded.
fn files(dir: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![(String::new(), 0usize)];
    while let Some((relative, depth)) = pending.pop() {
        let folder = if relative.is_empty() {
            dir.to_owned()
        } else {
            join(dir, &relative)
        };
        let Ok(Some(listing)) = host::peek_dir(&folder) else {
            continue;
        };
        for entry in listing.entries {
            let path = if relative.is_empty() {
                entry.name.clone()
            } else {
                join(&relative, &entry.name)
            };
            match entry.kind {
                host::EntryKind::Dir if depth + 1 < MAX_DEPTH && !entry.name.starts_with('.') => {
                    pending.push((path, depth + 1));
                }
                host::EntryKind::File | host::EntryKind::Symlink if path != "SKILL.md" => {
                    files.push(path);
                }
                _ => {}
            }
        }
    }
    files.sort();
    if files.len() > MAX_FILES {
        let more = files.len() - MAX_FILES;
        files.truncate(MAX_FILES);
        files.push(format!("... and {more} more files"));
    }
    files
}

/// The text that loads `entry`: its instructions, folder and files; with
/// `args`, the invocation's words put in the instructions' placeholders
/// (`$ARGUMENTS`, `$ARGUMENTS[N]`, `$N`). The flag says whether any was
/// filled.
fn load(
    entry: &Entry,
    args: Option<&str>,
) -> Result<(String, serde_json::Value, bool), String> {
    let (declared, text) = read_skill(&entry.path, &entry.dir, entry.level, &entry.root).map_err(|reason| {
        format!(
            "the skill file {} could not be loaded: {reason}",
            entry.path
        )
    })?;
    let body = &text[declared.body_start..];
    let filled = args.and_then(|args| format::substitute_arguments(body, args));
    let substituted = filled.is_some();
    let body = filled.as_deref().unwrap_or(body);
    let listed = files(&entry.dir);
    if body.trim().len() > BODY_MAX_BYTES {
        STATE.with(|state| {
            state.borrow_mut().pending.push(format!(
                "the skill {} ({}) has {} bytes of instructions; only the first {BODY_MAX_BYTES} were sent, and the model was told to read the rest from the file. Split it into files the instructions refer to",
                declared.name,
                entry.path,
                body.trim().len()
            ));
        });
    }
    let loaded = format::loaded(
        &declared.name,
        &entry.dir,
        &declared.allowed_tools,
        body,
        &listed,
        BODY_MAX_BYTES,
    );
    let details = json!({
        "name": declared.name,
        "path": entry.path,
        "folder": entry.dir,
        "level": entry.level.as_str(),
        "allowed_tools": declared.allowed_tools,
        "files": listed,
    });
    Ok((loaded, details, substituted))
}

/// `/name ARGS` or `$name ARGS` as the prompt the model receives.
fn invoked(sigil: char, name: &str, args: &str, entry: &Entry) -> Result<String, String> {
    let (loaded, _, substituted) = load(entry, Some(args))?;
    let request = if substituted {
        format!(
            "The user invoked the skill {name} (`{sigil}{name} {args}`); its instructions above hold the words given."
        )
    } else if args.is_empty() {
        format!(
            "The user invoked the skill {name} (`{sigil}{name}`) without further words: follow its instructions."
        )
    } else {
        format!("The user invoked the skill {name} (`{sigil}{name}`) with this request:\n\n{args}")
    };
    Ok(format!("{loaded}\n\n{request}"))
}

/// The listing of `/skills` and `smith skills list`: lines of text.
fn listing_lines(scan: &Scan) -> Vec<String> {
    let mut lines = vec![
        "Skills, first of a name wins: the project (the working folder up to the repository root) before the user's; in each, .smith, .claude, .agents, .gemini (smith's own `skills` folder first among the user's); then those of plugins installed from marketplaces, named PLUGIN:NAME.".to_owned(),
    ];
    let valid: Vec<&Entry> = scan.entries.iter().filter(|e| e.read.is_ok()).collect();
    if valid.is_empty() {
        lines.push(String::new());
        lines.push("No skill found. Put one in .smith/skills/NAME/SKILL.md (project) or in the skills folder of smith's configuration folder (yours).".to_owned());
    }
    for entry in valid {
        let Some(declared) = entry.declared() else {
            continue;
        };
        lines.push(String::new());
        let invoke = if RESERVED.contains(&declared.name.as_str()) {
            format!("${} (/{} is smith's command)", declared.name, declared.name)
        } else {
            format!("/{} or ${}", declared.name, declared.name)
        };
        lines.push(format!(
            "{}  {}  {}",
            declared.name,
            entry.level.as_str(),
            entry.path
        ));
        match &entry.shadowed_by {
            Some(by) => lines.push(format!("    shadowed by {by} (not used)")),
            None => {
                lines.push(format!(
                    "    {}",
                    format::catalog_line("", &declared.description).trim_start_matches("- : ")
                ));
                if !declared.allowed_tools.is_empty() {
                    lines.push(format!(
                        "    allowed-tools (advisory): {}",
                        declared.allowed_tools.join(", ")
                    ));
                }
                lines.push(format!("    invoke: {invoke}"));
            }
        }
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
    let skills: Vec<serde_json::Value> = scan
        .entries
        .iter()
        .filter_map(|e| {
            e.declared().map(|d| {
                json!({
                    "name": d.name,
                    "description": d.description,
                    "allowed_tools": d.allowed_tools,
                    "level": e.level.as_str(),
                    "folder": e.root,
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
        "skills": skills,
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

fn one_line(text: &str, max: usize) -> String {
    let line: Vec<&str> = text.split_whitespace().collect();
    let line = line.join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

impl ext::Guest for Skills {
    /// `/skills`, and `/NAME` for each skill found at load (a skill
    /// added later is invoked as `$NAME`, or as `/NAME` after a restart).
    fn contribute() -> ext::Contributions {
        refresh();
        let mut commands = vec![ext::Command {
            name: "skills".to_owned(),
            description: "list the skills: source, shadowing, files that could not be read"
                .to_owned(),
            usage: String::new(),
            complete: "none".to_owned(),
        }];
        STATE.with(|state| {
            if let Some(scan) = &state.borrow().scan {
                for declared in scan.entries.iter().filter_map(Entry::active) {
                    if RESERVED.contains(&declared.name.as_str()) {
                        continue;
                    }
                    commands.push(ext::Command {
                        name: declared.name.clone(),
                        description: format!("skill: {}", one_line(&declared.description, 80)),
                        usage: "[REQUEST]".to_owned(),
                        complete: "none".to_owned(),
                    });
                }
            }
        });
        for command in plugin_commands() {
            if commands.iter().any(|c| c.name == command.name) {
                continue;
            }
            commands.push(ext::Command {
                name: command.name.clone(),
                description: format!("command: {}", one_line(&command.description, 80)),
                usage: command.hint.clone(),
                complete: "none".to_owned(),
            });
        }
        ext::Contributions {
            commands,
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: vec![ext::ToolPresentation {
                tool: TOOL.to_owned(),
                title: "skill {name}".to_owned(),
                subject_argument: Some("name".to_owned()),
                result_style: "text".to_owned(),
                preview_lines: 3,
            }],
            config: Vec::new(),
        }
    }

    /// `/skills [--json]` lists the skills (one notice per line, or one
    /// JSON document); `/NAME REQUEST` sends REQUEST with the skill
    /// attached.
    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        if name == "skills" {
            refresh();
            return STATE.with(|state| {
                let state = state.borrow();
                let Some(scan) = &state.scan else {
                    return Ok(Vec::new());
                };
                if argument.trim() == "--json" {
                    return Ok(vec![notify(listing_json(scan).to_string())]);
                }
                Ok(listing_lines(scan).into_iter().map(notify).collect())
            });
        }
        match lookup(&name) {
            Lookup::Found(entry) => invoked('/', &name, argument.trim(), &entry)
                .map(|text| vec![ext::Action::SendMessage(text)]),
            Lookup::Broken(reason) => Err(reason),
            Lookup::Missing(_) if name.contains(':') => {
                match plugin_commands().into_iter().find(|c| c.name == name) {
                    Some(command) => command_prompt(&command, argument.trim())
                        .map(|text| vec![ext::Action::SendMessage(text)]),
                    None => Err(format!(
                        "no skill or enabled command is named {name} any more; `/skills` lists the skills, `smith plugin list` the plugins' commands"
                    )),
                }
            }
            Lookup::Missing(_) => Err(format!(
                "no skill is named {name} any more (its SKILL.md was moved or renamed); `/skills` lists the skills there are"
            )),
        }
    }

    /// `input`: `/name ARGS` or `$name ARGS` naming a skill is replaced by
    /// the prompt with the skill attached; one naming a skill that cannot
    /// be loaded is blocked with the reason. Other events hand over the
    /// notices the last scan left.
    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        if let ext::LifecycleEvent::Input(text) = &event {
            if let Some((sigil, name, args)) = format::invocation(text) {
                match lookup(name) {
                    Lookup::Found(entry) => {
                        return match invoked(sigil, name, args, &entry) {
                            Ok(prompt) => {
                                ext::HandlerResult::Decision(ext::Decision::Replace(prompt))
                            }
                            Err(reason) => {
                                ext::HandlerResult::Decision(ext::Decision::Block(reason))
                            }
                        };
                    }
                    Lookup::Broken(reason) => {
                        return ext::HandlerResult::Decision(ext::Decision::Block(format!(
                            "{reason}; fix it (`smith skills list` shows every problem), or start the line with a space to send it as written"
                        )));
                    }
                    Lookup::Missing(_) if sigil == '/' && name.contains(':') => {
                        if let Some(command) =
                            plugin_commands().into_iter().find(|c| c.name == name)
                        {
                            return match command_prompt(&command, args) {
                                Ok(prompt) => {
                                    ext::HandlerResult::Decision(ext::Decision::Replace(prompt))
                                }
                                Err(reason) => {
                                    ext::HandlerResult::Decision(ext::Decision::Block(reason))
                                }
                            };
                        }
                    }
                    Lookup::Missing(_) => {}
                }
            }
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

impl pro::Guest for Skills {
    fn tools() -> Vec<pro::ToolSpec> {
        vec![pro::ToolSpec {
            name: TOOL.to_owned(),
            description: "Loads a skill by name (the skills section of the system prompt lists them): returns its instructions, its folder and its other files, which you read with the read tool when the instructions refer to them.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed."},
                    "arguments": {"type": "string", "description": "Words for a skill whose instructions take them ($ARGUMENTS, $0, $1...), as a user would type them after /name; omit for none."}
                },
                "required": ["name"],
                "additionalProperties": false
            })
            .to_string(),
            read_only: true,
        }]
    }

    fn call_tool(name: String, arguments: String) -> pro::ToolOutput {
        let error = |text: String| pro::ToolOutput {
            text,
            structured: None,
            is_error: true,
        };
        if name != TOOL {
            return error(format!(
                "smith/skills has no tool {name}; its tool is `{TOOL}`"
            ));
        }
        let input = serde_json::from_str::<serde_json::Value>(&arguments).ok();
        let field = |key: &str| {
            input
                .as_ref()
                .and_then(|v| v.get(key).and_then(|n| n.as_str()).map(str::to_owned))
        };
        let skill = field("name").unwrap_or_default();
        let words = field("arguments");
        let skill = skill.trim().trim_start_matches(['/', '$']);
        match lookup(skill) {
            Lookup::Found(entry) => match load(&entry, words.as_deref().map(str::trim)) {
                Ok((text, details, _)) => pro::ToolOutput {
                    text,
                    structured: Some(details.to_string()),
                    is_error: false,
                },
                Err(reason) => error(reason),
            },
            Lookup::Broken(reason) => error(reason),
            Lookup::Missing(names) if names.is_empty() => error(format!(
                "no skill is named `{skill}`, and no skill is installed"
            )),
            Lookup::Missing(names) => error(format!(
                "no skill is named `{skill}`; the skills are: {}. Call the tool with one of these names",
                names.join(", ")
            )),
        }
    }

    /// The catalog when a skill appeared, changed or went away, or trust
    /// changed; none otherwise (checked by listing the folders and the
    /// size and modification time of each SKILL.md, without reading).
    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        refresh();
        let fresh = STATE.with(|state| std::mem::take(&mut state.borrow_mut().fresh));
        fresh.then(fragments)
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Skills);
