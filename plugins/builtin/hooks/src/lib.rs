//! smith/hooks: shell commands run at the agent's lifecycle events, in the
//! configuration shape Claude Code uses, so existing hook scripts work
//! unchanged.
//!
//! Hooks are read from `<config dir>/hooks.json` (the user's), from the
//! marketplace plugins whose hooks the user enabled (`smith plugin enable
//! PLUGIN@MARKETPLACE --hooks`: their `hooks/hooks.json` and plugin.json
//! `hooks`, with `${CLAUDE_PLUGIN_ROOT}` the plugin's folder) and, only in
//! a trusted project, from the project's `.claude/settings.json`,
//! `.claude/settings.local.json` and `.smith/hooks.json`:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
//!   "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}
//! ```
//!
//! Events, by smith's name or Claude Code's: `session_start`
//! (`SessionStart`), `user_prompt_submit` (`UserPromptSubmit`),
//! `pre_tool_use` (`PreToolUse`), `post_tool_use` (`PostToolUse`), `stop`
//! (`Stop`). Each command runs with `sh -c` in the project through the
//! host's `project-run-process` (the runtime's sandbox, its timeout, bounded
//! output, recorded in the session's effect journal), with the event as
//! JSON on its standard input. Exit status 2 blocks with standard error as
//! the reason; status 0 with JSON on standard output can block, allow,
//! rewrite a tool call's arguments (`updatedInput`), add context
//! (`additionalContext`) or, for `Stop`, keep the agent going; any other
//! status is a non-blocking error shown as a notice.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Hooks;

/// A hook's timeout when its entry gives none, in seconds.
const DEFAULT_TIMEOUT_S: u64 = 60;

/// The longest a hook may run, in seconds (the host's process limit).
const MAX_TIMEOUT_S: u64 = 600;

/// The longest all the hooks of one event may run together; the host
/// gives this plugin's calls a deadline above it.
const EVENT_BUDGET: Duration = Duration::from_secs(600);

/// The most text taken from a hook's reason or context.
const TEXT_LIMIT: usize = 16 * 1024;

/// How many times in a row Stop hooks may keep the agent going before
/// smith/hooks lets it stop.
const MAX_CONTINUATIONS: u32 = 25;

/// Where the hooks' context goes in the system prompt (after the todo
/// list).
const ORDER: i32 = 450;

/// The user's hooks file, in smith's configuration folder.
const GLOBAL_FILE: &str = "hooks.json";

/// The project's hooks files, relative to the project root.
const PROJECT_FILES: [&str; 3] = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".smith/hooks.json",
];

/// The events smith runs hooks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
}

const EVENTS: [Event; 5] = [
    Event::SessionStart,
    Event::UserPromptSubmit,
    Event::PreToolUse,
    Event::PostToolUse,
    Event::Stop,
];

impl Event {
    /// Claude Code's name, which hook scripts see as `hook_event_name`.
    fn claude(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::Stop => "Stop",
        }
    }

    fn smith(self) -> &'static str {
        match self {
            Event::SessionStart => "session_start",
            Event::UserPromptSubmit => "user_prompt_submit",
            Event::PreToolUse => "pre_tool_use",
            Event::PostToolUse => "post_tool_use",
            Event::Stop => "stop",
        }
    }

    fn parse(name: &str) -> Option<Event> {
        EVENTS
            .into_iter()
            .find(|e| e.claude() == name || e.smith() == name)
    }

    /// Whether the event's hooks are chosen by a matcher on the tool name.
    fn matches_tools(self) -> bool {
        matches!(self, Event::PreToolUse | Event::PostToolUse)
    }
}

/// One configured command.
#[derive(Clone, Debug)]
struct Hook {
    event: Event,
    matcher: String,
    command: String,
    timeout_s: u64,
    /// The file it comes from, as shown.
    source: String,
    /// The install folder of the marketplace plugin that declares it:
    /// `${CLAUDE_PLUGIN_ROOT}` in its command, and the variable
    /// `CLAUDE_PLUGIN_ROOT` it runs with.
    plugin_root: Option<String>,
}

/// What the hooks files hold.
#[derive(Clone, Debug, Default)]
struct Config {
    /// The hooks that run.
    hooks: Vec<Hook>,
    /// Hooks of an untrusted project: listed, never run.
    untrusted: Vec<Hook>,
    /// Entries smith does not run (an event or hook type it lacks), each
    /// with the file and why.
    unsupported: Vec<String>,
    /// Files that could not be read or parsed, with why.
    problems: Vec<String>,
    /// How to trust the project, for the notices.
    trust: String,
}

#[derive(Default)]
struct State {
    session: String,
    cwd: String,
    home: Option<String>,
    config: Config,
    /// Notices waiting for an event that can carry actions.
    notices: Vec<String>,
    /// What was already told once (untrusted project, file problems).
    told: Vec<String>,
    /// Tool calls seen at the decision point, for post_tool_use (id, name,
    /// arguments); the latest 256.
    calls: Vec<(String, String, Value)>,
    /// Context from session_start hooks, for every request.
    session_context: Vec<String>,
    /// Context from tool hooks, for the next request only.
    turn_context: Vec<String>,
    /// The prompt fragments last given to the host.
    given: Option<Vec<(String, String)>>,
    /// The message a Stop hook asked for, sent as the next input.
    continuing: Option<String>,
    /// Whether the current run continues because a Stop hook asked.
    stop_hook_active: bool,
    /// Stop hook continuations in a row.
    continuations: u32,
    /// Whether the current run reported an error (Stop hooks do not run
    /// then).
    run_failed: bool,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn error_text(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(text)
        | host::EffectError::Invalid(text)
        | host::EffectError::Failed(text) => text.clone(),
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Cuts `text` to [`TEXT_LIMIT`] bytes at a character boundary, saying so.
fn bounded(text: &str) -> String {
    let text = text.trim();
    if text.len() <= TEXT_LIMIT {
        return text.to_owned();
    }
    let mut end = TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: the hook wrote {} bytes; the first {end} are shown]",
        &text[..end],
        text.len()
    )
}

/// Reads one hooks file into `config`: `hooks` go to `config.hooks` when
/// `run` is true, else to `config.untrusted`.
fn read_file(config: &mut Config, path: &str, shown: &str, run: bool) {
    if let Some(value) = parse_file(config, path, shown) {
        read_value(config, &value, shown, run, None);
    }
}

/// The JSON of the file at `path`, none when it is absent or unusable (a
/// problem is noted then).
fn parse_file(config: &mut Config, path: &str, shown: &str) -> Option<Value> {
    let text = match host::peek_file(path) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(err) => {
            config.problems.push(format!(
                "{shown} was not read: {}; fix the file or remove it",
                error_text(&err)
            ));
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(value) => Some(value),
        Err(err) => {
            config.problems.push(format!(
                "{shown} is not valid JSON ({err}), so none of its hooks run; fix it (the format is Claude Code's settings: {{\"hooks\": {{\"PreToolUse\": [{{\"matcher\": \"Bash\", \"hooks\": [{{\"type\": \"command\", \"command\": \"...\"}}]}}]}}}})"
            ));
            None
        }
    }
}

/// Reads the hooks of one parsed file (`{"hooks": {EVENT: [...]}}`) into
/// `config`, as [`read_file`] does; `plugin_root` is the install folder of
/// the marketplace plugin they come from.
fn read_value(config: &mut Config, value: &Value, shown: &str, run: bool, plugin_root: Option<&str>) {
    let Some(hooks) = value.get("hooks") else {
        return;
    };
    let Some(events) = hooks.as_object() else {
        config.problems.push(format!(
            "{shown}: `hooks` is not an object of event names, so none of its hooks run; write {{\"hooks\": {{\"PreToolUse\": [...]}}}}"
        ));
        return;
    };
    for (name, groups) in events {
        let Some(event) = Event::parse(name) else {
            config.unsupported.push(format!(
                "{shown}: event {name:?} is not one smith runs hooks at (it runs SessionStart, UserPromptSubmit, PreToolUse, PostToolUse and Stop, or session_start, user_prompt_submit, pre_tool_use, post_tool_use and stop)"
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            config.problems.push(format!(
                "{shown}: {name} is not a list of matcher groups, so its hooks do not run; write \"{name}\": [{{\"matcher\": \"...\", \"hooks\": [...]}}]"
            ));
            continue;
        };
        for group in groups {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let Some(commands) = group.get("hooks").and_then(Value::as_array) else {
                config.problems.push(format!(
                    "{shown}: a {name} group has no `hooks` list, so it does not run; give it \"hooks\": [{{\"type\": \"command\", \"command\": \"...\"}}]"
                ));
                continue;
            };
            for entry in commands {
                let kind = entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                if kind != "command" {
                    config.unsupported.push(format!(
                        "{shown}: a {name} hook of type {kind:?} (smith runs hooks of type \"command\" only)"
                    ));
                    continue;
                }
                let Some(command) = entry
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|c| !c.trim().is_empty())
                else {
                    config.problems.push(format!(
                        "{shown}: a {name} hook has no `command`, so it does not run; give it the shell command to run"
                    ));
                    continue;
                };
                let timeout_s = match entry.get("timeout") {
                    None => DEFAULT_TIMEOUT_S,
                    Some(value) => match value.as_f64() {
                        Some(seconds) if seconds > 0.0 => {
                            // Whole seconds, rounded up, within the host's
                            // limit.
                            let whole = seconds.ceil();
                            if whole >= MAX_TIMEOUT_S as f64 {
                                MAX_TIMEOUT_S
                            } else {
                                whole as u64
                            }
                        }
                        _ => {
                            config.problems.push(format!(
                                "{shown}: the {name} hook `{command}` has timeout {value}, which is not a positive number of seconds; it runs with the default of {DEFAULT_TIMEOUT_S} s"
                            ));
                            DEFAULT_TIMEOUT_S
                        }
                    },
                };
                let hook = Hook {
                    event,
                    matcher: matcher.clone(),
                    command: command.to_owned(),
                    timeout_s,
                    source: shown.to_owned(),
                    plugin_root: plugin_root.map(str::to_owned),
                };
                if run {
                    config.hooks.push(hook);
                } else {
                    config.untrusted.push(hook);
                }
            }
        }
    }
}

/// How to trust the project: `run `smith trust ROOT``, or what to create
/// first when it has no `.smith` folder.
fn trust_hint(cwd: &str) -> String {
    if matches!(host::stat_file(".smith"), Ok(Some(stat)) if stat.is_dir) {
        format!("run `smith trust {cwd}`")
    } else {
        format!(
            "create the project's folder `{}` and run `smith trust {cwd}`",
            join(cwd, ".smith")
        )
    }
}

/// Where smith keeps the plugins installed from marketplaces, in its
/// configuration folder: `PLUGIN@MARKETPLACE/` and its record
/// `PLUGIN@MARKETPLACE.json`.
const MARKETPLACE_PLUGINS: &str = "marketplace-plugins";

/// Reads the hooks of the marketplace plugins whose hooks the user enabled
/// (`smith plugin enable PLUGIN@MARKETPLACE --hooks`, which sets
/// `enabled.hooks` in the install record): the plugin's
/// `hooks/hooks.json` and plugin.json's `hooks` (an object in the same
/// shape, or paths of such files in the plugin).
fn read_marketplace(config: &mut Config, dir: &str) {
    let folder = join(dir, MARKETPLACE_PLUGINS);
    let Ok(Some(listing)) = host::peek_dir(&folder) else {
        return;
    };
    for entry in &listing.entries {
        let Some(id) = entry.name.strip_suffix(".json") else {
            continue;
        };
        if !id.contains('@') || id.starts_with('.') {
            continue;
        }
        let record = join(&folder, &entry.name);
        let Ok(Some(text)) = host::peek_file(&record) else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let enabled = record
            .get("enabled")
            .and_then(|e| e.get("hooks"))
            .is_some_and(Value::is_string);
        if !enabled {
            continue;
        }
        let root = join(&folder, id);
        let file = join(&root, "hooks/hooks.json");
        if let Some(value) = parse_file(config, &file, &file) {
            read_value(config, &value, &format!("{id} ({file})"), true, Some(&root));
        }
        let manifest = join(&root, ".claude-plugin/plugin.json");
        let Ok(Some(text)) = host::peek_file(&manifest) else {
            continue;
        };
        let Ok(manifest_value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let shown = format!("{id} ({manifest}, `hooks`)");
        match manifest_value.get("hooks") {
            Some(inline @ Value::Object(o)) => {
                let value = if o.contains_key("hooks") {
                    inline.clone()
                } else {
                    json!({ "hooks": inline })
                };
                read_value(config, &value, &shown, true, Some(&root));
            }
            Some(Value::String(path)) => {
                let path = join(&root, path.trim_start_matches("./"));
                if let Some(value) = parse_file(config, &path, &path) {
                    read_value(config, &value, &format!("{id} ({path})"), true, Some(&root));
                }
            }
            Some(Value::Array(paths)) => {
                for path in paths.iter().filter_map(Value::as_str) {
                    let path = join(&root, path.trim_start_matches("./"));
                    if let Some(value) = parse_file(config, &path, &path) {
                        read_value(config, &value, &format!("{id} ({path})"), true, Some(&root));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Reads every hooks file.
fn load(cwd: &str) -> Config {
    let mut config = Config::default();
    match host::config_dir() {
        Ok(Some(dir)) => {
            let path = join(&dir, GLOBAL_FILE);
            read_file(&mut config, &path, &path, true);
            read_marketplace(&mut config, &dir);
        }
        Ok(None) => {}
        Err(err) => config.problems.push(format!(
            "the user's hooks were not read: smith's configuration folder is unknown ({})",
            error_text(&err)
        )),
    }
    let trusted = host::project_trusted().unwrap_or(false);
    for file in PROJECT_FILES {
        read_file(&mut config, file, &join(cwd, file), trusted);
    }
    if !config.untrusted.is_empty() {
        config.trust = trust_hint(cwd);
    }
    config
}

/// Reloads the configuration and queues the notices not yet given.
fn reload(state: &mut State) {
    state.config = load(&state.cwd);
    let mut once: Vec<String> = state.config.problems.clone();
    if !state.config.untrusted.is_empty() {
        let mut files: Vec<&str> = state
            .config
            .untrusted
            .iter()
            .map(|h| h.source.as_str())
            .collect();
        files.dedup();
        once.push(format!(
            "the project's hooks in {} do not run: this project is not trusted, and a project's hook commands run only once you trust it; {} to run them",
            files.join(", "),
            state.config.trust
        ));
    }
    for notice in once {
        if !state.told.contains(&notice) {
            state.told.push(notice.clone());
            state.notices.push(notice);
        }
    }
}

/// Claude Code's name for a smith tool, which matchers and scripts use.
fn claude_tool(name: &str) -> &str {
    match name {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "grep" => "Grep",
        "find" => "Glob",
        "ls" => "LS",
        other => other,
    }
}

/// Argument names that differ between smith's tools and Claude Code's
/// (smith's, Claude Code's), for tools of both.
fn renames(tool: &str) -> &'static [(&'static str, &'static str)] {
    match tool {
        "read" | "write" => &[("path", "file_path")],
        "edit" => &[
            ("path", "file_path"),
            ("old_text", "old_string"),
            ("new_text", "new_string"),
        ],
        _ => &[],
    }
}

/// The arguments in Claude Code's shape (`file_path`, `old_string`...).
fn claude_input(tool: &str, arguments: &Value) -> Value {
    let Some(object) = arguments.as_object() else {
        return arguments.clone();
    };
    let pairs = renames(tool);
    let out: Map<String, Value> = object
        .iter()
        .map(|(key, value)| {
            let key = pairs
                .iter()
                .find(|(ours, _)| ours == key)
                .map_or(key.as_str(), |(_, theirs)| theirs);
            (key.to_owned(), value.clone())
        })
        .collect();
    Value::Object(out)
}

/// Arguments a hook wrote in Claude Code's shape, back in smith's.
fn smith_input(tool: &str, input: &Value) -> Value {
    let Some(object) = input.as_object() else {
        return input.clone();
    };
    let pairs = renames(tool);
    let out: Map<String, Value> = object
        .iter()
        .map(|(key, value)| {
            let key = pairs
                .iter()
                .find(|(_, theirs)| theirs == key)
                .map_or(key.as_str(), |(ours, _)| ours);
            (key.to_owned(), value.clone())
        })
        .collect();
    Value::Object(out)
}

/// Whether `pattern` (a regular expression of the common kind matchers
/// use: alternatives with `|`, `.` and `.*`, `\` escapes, `^`/`$` anchors,
/// a group `(...)` of alternatives) matches all of `name`.
fn pattern_matches(pattern: &str, name: &str) -> bool {
    let pattern = pattern.strip_prefix('^').unwrap_or(pattern);
    let pattern = pattern.strip_suffix('$').unwrap_or(pattern);
    let pattern = match (pattern.strip_prefix('('), pattern.strip_suffix(')')) {
        (Some(_), Some(_)) if !pattern[1..pattern.len() - 1].contains(['(', ')']) => {
            &pattern[1..pattern.len() - 1]
        }
        _ => pattern,
    };
    pattern
        .split('|')
        .any(|alternative| glob(alternative.as_bytes(), name.as_bytes()))
}

/// Matches one alternative: `.*` any run, `.` any character, `\x` `x`.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern {
        [] => name.is_empty(),
        [b'.', b'*', rest @ ..] => (0..=name.len()).any(|skip| glob(rest, &name[skip..])),
        [b'.', b'+', rest @ ..] => (1..=name.len()).any(|skip| glob(rest, &name[skip..])),
        [b'.', rest @ ..] => !name.is_empty() && glob(rest, &name[1..]),
        [b'\\', c, rest @ ..] => name.first() == Some(c) && glob(rest, &name[1..]),
        [c, rest @ ..] => name.first() == Some(c) && glob(rest, &name[1..]),
    }
}

/// Whether hook `hook` runs for the tool `tool` (smith's name): an empty
/// matcher or `*` matches every tool; otherwise the matcher is matched
/// against Claude Code's name and smith's.
fn matches(hook: &Hook, tool: &str) -> bool {
    let matcher = hook.matcher.trim();
    if !hook.event.matches_tools() || matcher.is_empty() || matcher == "*" {
        return true;
    }
    pattern_matches(matcher, claude_tool(tool)) || pattern_matches(matcher, tool)
}

/// What the hooks of one event decided together.
#[derive(Default)]
struct Outcome {
    /// A block and its reason (the first hook's that blocked).
    block: Option<String>,
    /// A hook asked to ask the user, with its reason.
    ask: Option<String>,
    /// Rewritten tool arguments (Claude Code's shape).
    updated_input: Option<Value>,
    /// Context for the model.
    context: Vec<String>,
}

/// The hook's name in notices: its command, the event and the file.
fn described(hook: &Hook) -> String {
    format!(
        "the {} hook `{}` ({})",
        hook.event.claude(),
        hook.command,
        hook.source
    )
}

/// Runs `hook` with `input` on its standard input, within `left` of the
/// event's budget, and folds what it says into `outcome`; problems become
/// notices.
fn run_hook(state: &mut State, hook: &Hook, input: &Value, left: Duration, outcome: &mut Outcome) {
    let timeout = Duration::from_secs(hook.timeout_s).min(left);
    if timeout.is_zero() {
        state.notices.push(format!(
            "{} did not run: the hooks of this {} event already ran for {} s together, the most smith allows",
            described(hook),
            hook.event.claude(),
            EVENT_BUDGET.as_secs()
        ));
        return;
    }
    let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
    let mut args = vec![
        format!("CLAUDE_PROJECT_DIR={}", state.cwd),
        format!("SMITH_PROJECT_DIR={}", state.cwd),
        format!("SMITH_HOOK_EVENT={}", hook.event.smith()),
    ];
    if let Some(home) = &state.home {
        args.push(format!("HOME={home}"));
    }
    let command = match &hook.plugin_root {
        Some(root) => {
            args.push(format!("CLAUDE_PLUGIN_ROOT={root}"));
            hook.command.replace("${CLAUDE_PLUGIN_ROOT}", root)
        }
        None => hook.command.clone(),
    };
    args.extend(["sh".to_owned(), "-c".to_owned(), command]);
    let stdin = input.to_string();
    let output = match host::project_run_process("env", &args, "", timeout_ms, stdin.as_bytes()) {
        Ok(output) => output,
        Err(err) => {
            state.notices.push(format!(
                "{} could not run: {}",
                described(hook),
                error_text(&err)
            ));
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    match output.end {
        host::ProcessEnd::Exited(0) => read_output(state, hook, &stdout, outcome),
        host::ProcessEnd::Exited(2) => {
            let reason = bounded(&stderr);
            let reason = if reason.is_empty() {
                format!(
                    "{} exited with status 2 (block) without giving a reason on standard error",
                    described(hook)
                )
            } else {
                reason
            };
            outcome.block.get_or_insert(reason);
        }
        host::ProcessEnd::Exited(code) => state.notices.push(format!(
            "{} failed with exit status {code}; it decided nothing and the agent went on{}",
            described(hook),
            first_lines(&stderr)
        )),
        host::ProcessEnd::Signalled(signal) => state.notices.push(format!(
            "{} was ended by signal {signal}; it decided nothing and the agent went on{}",
            described(hook),
            first_lines(&stderr)
        )),
        host::ProcessEnd::TimedOut => state.notices.push(format!(
            "{} ran past its timeout of {} s and was killed; it decided nothing and the agent went on. Make the command faster, or raise its \"timeout\" (seconds) in {}",
            described(hook),
            timeout.as_secs(),
            hook.source
        )),
        host::ProcessEnd::Cancelled => state.notices.push(format!(
            "{} was stopped because the run was cancelled; it decided nothing",
            described(hook)
        )),
    }
}

/// `: ` and the first lines of a hook's standard error, for a notice.
fn first_lines(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(": {}", lines.join(" / "))
    }
}

/// What a hook that exited 0 wrote: JSON (Claude Code's output fields) or
/// plain text (context, for the events that take it).
fn read_output(state: &mut State, hook: &Hook, stdout: &str, outcome: &mut Outcome) {
    let trimmed = stdout.trim();
    let parsed = if trimmed.starts_with('{') {
        serde_json::from_str::<Value>(trimmed).ok()
    } else {
        None
    };
    let Some(out) = parsed else {
        if !trimmed.is_empty()
            && matches!(hook.event, Event::SessionStart | Event::UserPromptSubmit)
        {
            outcome.context.push(bounded(trimmed));
        }
        return;
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(bounded);
    if let Some(message) = text(out.get("systemMessage")) {
        state.notices.push(format!("{}: {message}", described(hook)));
    }
    let specific = out.get("hookSpecificOutput").unwrap_or(&Value::Null);
    if let Some(context) = text(specific.get("additionalContext")) {
        outcome.context.push(context);
    }
    if out.get("continue").and_then(Value::as_bool) == Some(false) {
        let reason = text(out.get("stopReason"))
            .unwrap_or_else(|| format!("{} answered continue: false", described(hook)));
        match hook.event {
            // Stopping is what happens anyway.
            Event::Stop => {}
            Event::UserPromptSubmit | Event::PreToolUse => {
                outcome.block.get_or_insert(reason);
            }
            Event::SessionStart | Event::PostToolUse => state.notices.push(format!(
                "{} answered continue: false ({reason}); smith does not stop a session or a run from {} hooks, so the agent went on",
                described(hook),
                hook.event.claude()
            )),
        }
        return;
    }
    let reason = text(out.get("reason"));
    match out.get("decision").and_then(Value::as_str) {
        Some("block") => {
            let reason = reason.clone().unwrap_or_else(|| {
                format!("{} answered decision: block without a reason", described(hook))
            });
            outcome.block.get_or_insert(reason);
        }
        Some("approve") | None => {}
        Some(other) => state.notices.push(format!(
            "{} answered decision {other:?}, which is not \"block\" or \"approve\"; it was ignored",
            described(hook)
        )),
    }
    if hook.event == Event::PreToolUse {
        let reason = text(specific.get("permissionDecisionReason")).or(reason);
        match specific.get("permissionDecision").and_then(Value::as_str) {
            Some("deny") => {
                outcome.block.get_or_insert(reason.unwrap_or_else(|| {
                    format!("{} denied the call", described(hook))
                }));
            }
            Some("ask") => {
                outcome.ask.get_or_insert(reason.unwrap_or_else(|| {
                    format!("{} asks whether this call may run", described(hook))
                }));
            }
            Some("allow" | "defer") | None => {}
            Some(other) => state.notices.push(format!(
                "{} answered permissionDecision {other:?}, which is not allow, deny, ask or defer; it was ignored",
                described(hook)
            )),
        }
        if let Some(input) = specific.get("updatedInput") {
            if input.is_object() {
                outcome.updated_input = Some(input.clone());
            } else {
                state.notices.push(format!(
                    "{} answered an updatedInput that is not a JSON object; the call's arguments were kept",
                    described(hook)
                ));
            }
        }
    }
}

/// Runs the hooks of `event` that match `tool` with `input` (the fields
/// every event shares are added here).
fn run_event(state: &mut State, event: Event, tool: Option<&str>, input: Value) -> Outcome {
    let hooks: Vec<Hook> = state
        .config
        .hooks
        .iter()
        .filter(|h| h.event == event && tool.is_none_or(|t| matches(h, t)))
        .cloned()
        .collect();
    let mut outcome = Outcome::default();
    if hooks.is_empty() {
        return outcome;
    }
    let mut input = input;
    if let Some(object) = input.as_object_mut() {
        let mut common = Map::new();
        common.insert("session_id".to_owned(), json!(state.session));
        common.insert("transcript_path".to_owned(), json!(""));
        common.insert("cwd".to_owned(), json!(state.cwd));
        common.insert("hook_event_name".to_owned(), json!(event.claude()));
        for (key, value) in std::mem::take(object) {
            common.insert(key, value);
        }
        *object = common;
    }
    let started = Instant::now();
    for hook in &hooks {
        // An aborted run starts no more hooks.
        if host::cancelled() {
            break;
        }
        let left = EVENT_BUDGET.saturating_sub(started.elapsed());
        run_hook(state, hook, &input, left, &mut outcome);
    }
    outcome
}

/// Notices as `notify` intents.
fn notices(state: &mut State) -> Vec<ext::Action> {
    std::mem::take(&mut state.notices)
        .into_iter()
        .map(|text| {
            ext::Action::Ui(ext::UiIntent {
                id: String::new(),
                kind: ext::IntentKind::Notify(text),
                policy: ext::IntentPolicy::Text,
            })
        })
        .collect()
}

fn actions(mut list: Vec<ext::Action>) -> ext::HandlerResult {
    if list.is_empty() {
        ext::HandlerResult::None
    } else {
        list.shrink_to_fit();
        ext::HandlerResult::Actions(list)
    }
}

fn session_start(state: &mut State, id: String) -> ext::HandlerResult {
    state.session = id;
    state.cwd = host::resolve_path(".")
        .map(|r| r.absolute)
        .unwrap_or_default();
    state.home = host::home_dir().ok().flatten();
    reload(state);
    let outcome = run_event(
        state,
        Event::SessionStart,
        None,
        json!({"source": "startup"}),
    );
    state.session_context = outcome.context;
    if let Some(reason) = outcome.block {
        state.notices.push(format!(
            "a SessionStart hook asked to block, which a session's start cannot be; the session went on: {reason}"
        ));
    }
    actions(notices(state))
}

/// `user_prompt_submit`: a block stops the prompt; context is added to it.
fn input(state: &mut State, prompt: String) -> ext::HandlerResult {
    // The message a Stop hook asked for (plugins before this one may have
    // added to it, as smith/mentions adds attachments): not the user's
    // prompt.
    if state
        .continuing
        .as_deref()
        .is_some_and(|reason| prompt.starts_with(reason))
    {
        state.continuing = None;
        state.stop_hook_active = true;
        return ext::HandlerResult::None;
    }
    state.stop_hook_active = false;
    state.continuations = 0;
    let outcome = run_event(
        state,
        Event::UserPromptSubmit,
        None,
        json!({"prompt": prompt}),
    );
    if let Some(reason) = outcome.block {
        return ext::HandlerResult::Decision(ext::Decision::Block(reason));
    }
    if outcome.context.is_empty() {
        return ext::HandlerResult::None;
    }
    ext::HandlerResult::Decision(ext::Decision::Replace(format!(
        "{prompt}\n\n<hook-context event=\"UserPromptSubmit\">\n{}\n</hook-context>",
        outcome.context.join("\n\n")
    )))
}

/// `pre_tool_use`: block, ask, rewrite the arguments or add context.
fn tool_call(state: &mut State, call: ext::ToolCallEvent) -> ext::HandlerResult {
    let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    if state.calls.len() >= 256 {
        state.calls.remove(0);
    }
    state
        .calls
        .push((call.id.clone(), call.name.clone(), arguments.clone()));
    let outcome = run_event(
        state,
        Event::PreToolUse,
        Some(&call.name),
        json!({
            "tool_name": claude_tool(&call.name),
            "tool_input": claude_input(&call.name, &arguments),
            "tool_use_id": call.id,
        }),
    );
    state.turn_context.extend(outcome.context);
    if let Some(reason) = outcome.block {
        return ext::HandlerResult::Decision(ext::Decision::Block(reason));
    }
    if let Some(reason) = outcome.ask {
        let prompt = format!(
            "A hook asks before this {} call runs: {reason}\nAllow it?",
            call.name
        );
        match host::ask(&prompt, host::QuestionKind::Confirm, 0, "no") {
            Ok(answer) if answer.text == "yes" => {}
            Ok(_) => {
                return ext::HandlerResult::Decision(ext::Decision::Block(format!(
                    "the user did not allow it (a hook asked: {reason})"
                )));
            }
            Err(err) => {
                return ext::HandlerResult::Decision(ext::Decision::Block(format!(
                    "a hook asked the user first ({reason}), and no one could answer: {}",
                    error_text(&err)
                )));
            }
        }
    }
    match outcome.updated_input {
        Some(input) => ext::HandlerResult::Decision(ext::Decision::Replace(
            smith_input(&call.name, &input).to_string(),
        )),
        None => ext::HandlerResult::None,
    }
}

/// What a finished call gave, as PostToolUse's `tool_response`: the
/// host's `details` of the call (its output, status and facts) when it has
/// them, with `success`.
fn tool_response(details: &Value, failed: bool) -> Value {
    let mut response = json!({"success": !failed});
    for (key, field) in [("output", "content"), ("status", "status"), ("details", "details")] {
        if let Some(value) = details.get(field) {
            response[key] = value.clone();
        }
    }
    response
}

/// `post_tool_use`, after a call that succeeded (as Claude Code runs it):
/// feedback (a block's reason, context) goes to the model with its next
/// request.
fn tool_end(state: &mut State, id: &str, failed: bool) {
    let Some((_, name, arguments)) = state.calls.iter().find(|(call, ..)| call == id).cloned()
    else {
        return;
    };
    let details = host::event_details()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null);
    let succeeded = match details.get("status").and_then(Value::as_str) {
        Some(status) => status == "ok",
        None => !failed,
    };
    if !succeeded {
        return;
    }
    let outcome = run_event(
        state,
        Event::PostToolUse,
        Some(&name),
        json!({
            "tool_name": claude_tool(&name),
            "tool_input": claude_input(&name, &arguments),
            "tool_response": tool_response(&details, failed),
            "tool_use_id": id,
        }),
    );
    if let Some(reason) = outcome.block {
        state.turn_context.push(format!(
            "A PostToolUse hook reported on the {name} call {id}: {reason}"
        ));
    }
    state.turn_context.extend(outcome.context);
}

/// `stop`: a block keeps the agent going with the hook's reason. Stop
/// hooks run only after a run that ended by itself (not aborted, failed or
/// stopped at a limit).
fn agent_end(state: &mut State) -> Vec<ext::Action> {
    let stop = host::event_details()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|details| details.get("stop").and_then(Value::as_str).map(str::to_owned));
    if state.run_failed || stop.is_some_and(|stop| stop != "done") {
        state.continuing = None;
        return Vec::new();
    }
    let outcome = run_event(
        state,
        Event::Stop,
        None,
        json!({"stop_hook_active": state.stop_hook_active}),
    );
    let Some(reason) = outcome.block else {
        state.continuations = 0;
        return Vec::new();
    };
    if state.continuations >= MAX_CONTINUATIONS {
        state.notices.push(format!(
            "a Stop hook asked the agent to go on again ({reason}), but it already did {MAX_CONTINUATIONS} times in a row; the agent stopped. A Stop hook should check stop_hook_active on its input"
        ));
        state.continuations = 0;
        return Vec::new();
    }
    state.continuations += 1;
    state.continuing = Some(reason.clone());
    vec![ext::Action::SendMessage(reason)]
}

/// `/hooks`: every configured hook, its source and whether it runs.
fn listing(state: &mut State) -> Vec<String> {
    if state.cwd.is_empty() {
        state.cwd = host::resolve_path(".")
            .map(|r| r.absolute)
            .unwrap_or_default();
    }
    let config = load(&state.cwd);
    let mut lines = Vec::new();
    let count = config.hooks.len() + config.untrusted.len();
    lines.push(if count == 0 {
        format!(
            "No hooks are configured. smith/hooks reads {} and, in a trusted project, {} (Claude Code's settings format)",
            host::config_dir()
                .ok()
                .flatten()
                .map_or_else(|| GLOBAL_FILE.to_owned(), |d| join(&d, GLOBAL_FILE)),
            PROJECT_FILES.join(", ")
        )
    } else {
        format!(
            "{count} hook{} configured:",
            if count == 1 { "" } else { "s" }
        )
    });
    let line = |hook: &Hook, status: &str| {
        let matcher = if hook.event.matches_tools() && !hook.matcher.is_empty() {
            format!(" [{}]", hook.matcher)
        } else {
            String::new()
        };
        format!(
            "{}{matcher}: `{}` (timeout {} s) from {}: {status}",
            hook.event.claude(),
            hook.command,
            hook.timeout_s,
            hook.source
        )
    };
    for hook in &config.hooks {
        lines.push(line(hook, "active"));
    }
    let not_run = format!(
        "not run (the project is not trusted; {})",
        config.trust
    );
    for hook in &config.untrusted {
        lines.push(line(hook, &not_run));
    }
    for entry in &config.unsupported {
        lines.push(format!("not run: {entry}"));
    }
    for problem in &config.problems {
        lines.push(format!("problem: {problem}"));
    }
    lines
}

/// Whether handlers may answer `event` with actions (not a decision point).
fn carries_actions(event: &ext::LifecycleEvent) -> bool {
    !matches!(
        event,
        ext::LifecycleEvent::Input(_)
            | ext::LifecycleEvent::ToolCall(_)
            | ext::LifecycleEvent::Context(_)
            | ext::LifecycleEvent::SessionCompact
            | ext::LifecycleEvent::SessionSwitch(_)
            | ext::LifecycleEvent::SessionFork(_)
    )
}

impl ext::Guest for Hooks {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![ext::Command {
                name: "hooks".to_owned(),
                description: "list the hook commands: event, matcher, command, source file and whether they run".to_owned(),
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

    fn run_command(name: String, _argument: String) -> Result<Vec<ext::Action>, String> {
        if name != "hooks" {
            return Err(format!(
                "smith/hooks has no command /{name}; its command is /hooks"
            ));
        }
        STATE.with(|state| {
            let mut state = state.borrow_mut();
            let lines = listing(&mut state);
            state.notices.extend(lines);
            Ok(notices(&mut state))
        })
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        STATE.with(|state| {
            let mut state = state.borrow_mut();
            let state = &mut *state;
            let carries = carries_actions(&event);
            let mut list = Vec::new();
            match event {
                ext::LifecycleEvent::SessionStart(id) => return session_start(state, id),
                ext::LifecycleEvent::AgentStart => {
                    state.run_failed = false;
                    reload(state);
                }
                ext::LifecycleEvent::Input(prompt) => return input(state, prompt),
                ext::LifecycleEvent::ToolCall(call) => return tool_call(state, call),
                ext::LifecycleEvent::ToolExecutionEnd((id, failed)) => {
                    tool_end(state, &id, failed);
                }
                ext::LifecycleEvent::Error(_) => state.run_failed = true,
                ext::LifecycleEvent::AgentEnd => list = agent_end(state),
                _ => {}
            }
            if !carries {
                return ext::HandlerResult::None;
            }
            list.extend(notices(state));
            actions(list)
        })
    }
}

impl pro::Guest for Hooks {
    fn tools() -> Vec<pro::ToolSpec> {
        Vec::new()
    }

    fn call_tool(name: String, _arguments: String) -> pro::ToolOutput {
        pro::ToolOutput {
            text: format!("smith/hooks has no tool {name}"),
            structured: None,
            is_error: true,
        }
    }

    /// The session_start hooks' context for every request, and the tool
    /// hooks' feedback for the next one.
    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        STATE.with(|state| {
            let mut state = state.borrow_mut();
            let mut fragments = Vec::new();
            if !state.session_context.is_empty() {
                fragments.push((
                    "session-context".to_owned(),
                    format!(
                        "Context from the session's SessionStart hooks:\n\n{}",
                        state.session_context.join("\n\n")
                    ),
                ));
            }
            let feedback = std::mem::take(&mut state.turn_context);
            if !feedback.is_empty() {
                fragments.push((
                    "tool-feedback".to_owned(),
                    format!(
                        "Feedback from the hooks on your latest tool calls:\n\n{}",
                        feedback.join("\n\n")
                    ),
                ));
            }
            if state.given.as_ref() == Some(&fragments) {
                return None;
            }
            state.given = Some(fragments.clone());
            Some(
                fragments
                    .into_iter()
                    .map(|(id, text)| pro::Fragment {
                        id,
                        text,
                        order: ORDER,
                    })
                    .collect(),
            )
        })
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Hooks);
