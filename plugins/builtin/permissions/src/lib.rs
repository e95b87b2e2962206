//! smith/permissions: the permission policy as a built-in extension
//! plugin. At the `tool-call` decision point it decides every call of
//! every tool under the runtime's approval mode and the permission rules
//! of the configuration (`smith-permission-policy` holds the logic): deny
//! rules block in every mode, allow rules allow, ask rules and the `ask`
//! mode ask the user, read-only tools run, and the mode decides the rest.
//!
//! A question offers "yes", "no", "no, with a note" (the note goes into
//! the reason the model reads), "always in this session" (kept here for
//! the runtime) and, in a trusted project, "always in this project" (saved
//! as an allow rule to the project's configuration). Its prompt shows the
//! exact command of a `bash` call and a diff for `write` and `edit`.
//!
//! `/approval [MODE]` shows the mode or sets it.

use std::borrow::Cow;
use std::cell::RefCell;

use smith_permission_policy::{
    Call, Decision, Mode, ResolvedPath, Rule, decide, diff, exact_rules, rules_from_json,
};
use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::host;

struct Permissions;

/// The plugin's name, as reasons and rules name it.
const NAME: &str = "smith/permissions";

/// The diff lines a prompt shows when `permissions.prompt-lines` is unset.
const PROMPT_LINES: usize = 40;

/// The longest command or argument text a prompt shows.
const PROMPT_CHARS: usize = 4000;

const YES: &str = "yes";
const NO: &str = "no";
const NO_NOTE: &str = "no, with a note";
const SESSION: &str = "always in this session";
const PROJECT: &str = "always in this project";

thread_local! {
    /// The configuration's rules (read on the first call) followed by the
    /// rules the user chose to keep for this runtime.
    static RULES: RefCell<Option<Vec<Rule>>> = const { RefCell::new(None) };
    /// Whether each tool asked about so far only observes (a handful of
    /// tools: a list searched in order beats hashing the name).
    static TOOLS: RefCell<Vec<(String, bool)>> = const { RefCell::new(Vec::new()) };
    /// The approval mode, read from the host on the first call of each
    /// turn and kept in step by `/approval` (another plugin with
    /// `permissions`, such as smith/plan approving a plan, may change it
    /// between turns).
    static MODE: std::cell::Cell<Option<Mode>> = const { std::cell::Cell::new(None) };
}

fn with_rules<T>(f: impl FnOnce(&mut Vec<Rule>) -> T) -> Result<T, String> {
    RULES.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let text = host::permission_rules().map_err(|err| {
                format!("{NAME} cannot read the permission rules: {}", text_of(&err))
            })?;
            *cell = Some(rules_from_json(&text)?);
        }
        Ok(f(cell.get_or_insert_with(Vec::new)))
    })
}

fn text_of(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(t)
        | host::EffectError::Invalid(t)
        | host::EffectError::Failed(t) => t.clone(),
    }
}

fn block(reason: String) -> ext::HandlerResult {
    ext::HandlerResult::Decision(ext::Decision::Block(reason))
}

fn allow() -> ext::HandlerResult {
    ext::HandlerResult::Decision(ext::Decision::Allow)
}

/// The string argument `key` of a call.
fn argument<'a>(arguments: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(serde_json::Value::as_str)
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… {} more bytes not shown",
        &text[..end],
        text.len() - end
    )
}

fn prompt_lines() -> usize {
    host::config_get("permissions.prompt-lines")
        .and_then(|json| json.parse::<usize>().ok())
        .unwrap_or(PROMPT_LINES)
}

/// The question's prompt: what the call would do, in plain text.
fn prompt(tool: &str, arguments: &serde_json::Value, path: Option<&ResolvedPath>) -> String {
    let shown = |p: &ResolvedPath| p.relative.clone().unwrap_or_else(|| p.absolute.clone());
    match (tool, path) {
        ("bash", _) => format!(
            "Allow bash to run this command?\n$ {}",
            cut(
                argument(arguments, "command").unwrap_or_default(),
                PROMPT_CHARS
            )
        ),
        ("write", Some(path)) => {
            let name = shown(path);
            let current = host::peek_file(&path.absolute).ok().flatten();
            let content = argument(arguments, "content").unwrap_or_default();
            format!(
                "Allow write to {name}?\n{}",
                diff::unified(&name, current.as_deref(), content, prompt_lines())
            )
        }
        ("edit", Some(path)) => {
            let name = shown(path);
            let old = argument(arguments, "old_text").unwrap_or_default();
            let new = argument(arguments, "new_text").unwrap_or_default();
            format!(
                "Allow edit of {name}?\n{}",
                diff::unified(&name, Some(old), new, prompt_lines())
            )
        }
        (tool, _) => format!(
            "Allow {tool} with these arguments?\n{}",
            cut(&arguments.to_string(), PROMPT_CHARS)
        ),
    }
}

/// Asks the user about `call`; the handler's answer.
fn ask(tool: &str, arguments: &serde_json::Value, call: &Call<'_>) -> ext::HandlerResult {
    let trusted = host::project_trusted().unwrap_or(false);
    let mut options = vec![YES, NO, NO_NOTE, SESSION];
    if trusted {
        options.push(PROJECT);
    }
    let question = prompt(tool, arguments, call.path);
    let answer = host::ask(
        &question,
        host::QuestionKind::Select(options.iter().map(|o| (*o).to_owned()).collect()),
        0,
        NO,
    );
    let answer = match answer {
        Ok(answer) if answer.source == host::AnswerSource::Timeout => {
            return block(
                "nobody answered the approval question in time, so the call did not run; ask again when someone can answer, or use a rule or `--approval` that allows it"
                    .to_owned(),
            );
        }
        Ok(answer) => answer.text,
        Err(err) => {
            return block(format!(
                "the call needs the user's approval and nobody could give it ({}); use `--approval workspace` or `--approval full`, or a rule that allows it",
                text_of(&err)
            ));
        }
    };
    match answer.as_str() {
        YES => allow(),
        SESSION => {
            let kept = exact_rules(call, "kept for this session");
            let _ = with_rules(|rules| rules.extend(kept));
            allow()
        }
        PROJECT => {
            let kept = exact_rules(call, "kept for this project");
            for rule in &kept {
                let saved = host::save_permission_rule(
                    "allow",
                    &rule.tool,
                    rule.path.as_ref().map(|g| g.pattern()),
                    rule.command.as_ref().map(|g| g.pattern()),
                    true,
                );
                if let Err(err) = saved {
                    host::warn(&format!(
                        "the rule `{}` could not be saved to the project, so it holds for this session only: {}",
                        rule.describe(),
                        text_of(&err)
                    ));
                }
            }
            let _ = with_rules(|rules| rules.extend(kept));
            allow()
        }
        NO_NOTE => {
            let note = host::ask(
                "Your note for the agent (why not, or what to do instead):",
                host::QuestionKind::Input,
                0,
                "",
            )
            .map(|a| a.text)
            .unwrap_or_default();
            let note = note.trim();
            if note.is_empty() {
                block("the user declined it".to_owned())
            } else {
                block(format!("the user declined it and says: {note}"))
            }
        }
        _ => block("the user declined it".to_owned()),
    }
}

/// Whether the tool `name` only observes (unknown tools can change
/// things). Known answers are kept: a tool's kind does not change.
fn read_only(name: &str) -> bool {
    let kept = TOOLS.with(|tools| {
        tools
            .borrow()
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, known)| *known)
    });
    if let Some(known) = kept {
        return known;
    }
    match host::tool_read_only(name) {
        Ok(Some(known)) => {
            TOOLS.with(|tools| tools.borrow_mut().push((name.to_owned(), known)));
            known
        }
        _ => false,
    }
}

/// The two arguments a decision reads, borrowed from the call's JSON
/// where they hold no escapes; every other argument is skipped unread
/// (a `write`'s content is never copied).
#[derive(serde::Deserialize)]
struct Targets<'a> {
    #[serde(borrow, default)]
    path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    command: Option<Cow<'a, str>>,
}

impl<'a> Targets<'a> {
    /// The call's `path` and `command` strings, each absent when it is
    /// missing or not a string, as a full parse would read them (a
    /// repeated key: the last one).
    fn of(arguments: &'a str) -> Targets<'a> {
        // Only an object is read field by field (a struct would also read
        // an array, by position).
        if arguments.trim_start().starts_with('{')
            && let Ok(targets) = serde_json::from_str::<Targets<'a>>(arguments)
        {
            return targets;
        }
        // Not an object of strings (or a key given twice): read it whole.
        let value: serde_json::Value =
            serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
        let owned = |key: &str| argument(&value, key).map(|text| Cow::Owned(text.to_owned()));
        Targets {
            path: owned("path"),
            command: owned("command"),
        }
    }
}

/// Decides one tool call.
fn tool_call(call: &ext::ToolCallEvent) -> ext::HandlerResult {
    let targets = Targets::of(&call.arguments);
    let mode = match MODE.get() {
        Some(mode) => mode,
        None => match host::approval_mode() {
            Ok(mode) => {
                let mode = Mode::parse(&mode).unwrap_or(Mode::Ask);
                MODE.set(Some(mode));
                mode
            }
            Err(err) => {
                return block(format!(
                    "{NAME} cannot read the approval mode, so nothing runs: {}",
                    text_of(&err)
                ));
            }
        },
    };
    let read_only = read_only(&call.name);
    let path = targets
        .path
        .as_deref()
        .map(|raw| match host::resolve_path(raw) {
            Ok(resolved) => ResolvedPath {
                absolute: resolved.absolute,
                relative: resolved.project_relative,
            },
            Err(_) => ResolvedPath {
                absolute: raw.to_owned(),
                relative: None,
            },
        });
    let command = if call.name == "bash" {
        targets.command.as_deref()
    } else {
        None
    };
    let policy_call = Call {
        tool: &call.name,
        read_only,
        command,
        path: path.as_ref(),
    };
    let decision = match with_rules(|rules| decide(rules, &policy_call, mode)) {
        Ok(decision) => decision,
        Err(why) => return block(format!("{why}; fix the configuration's permissions block")),
    };
    match decision {
        Decision::Allow => allow(),
        Decision::Block(reason) => block(reason),
        Decision::Ask => {
            // The question shows every argument: only now is the call read whole.
            let arguments: serde_json::Value =
                serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
            ask(&call.name, &arguments, &policy_call)
        }
    }
}

fn notify(text: String) -> ext::Action {
    ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Text,
    })
}

const MODES: &[(&str, &str)] = &[
    ("read-only", "no tool changes anything"),
    ("ask", "every change a rule does not allow asks first"),
    (
        "workspace",
        "changes inside the project and sandboxed commands run; anything else is refused",
    ),
    (
        "full",
        "everything runs without asking; deny rules still hold",
    ),
];

impl ext::Guest for Permissions {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![ext::Command {
                name: "approval".to_owned(),
                description: "show or set the approval mode".to_owned(),
                usage: "[MODE]".to_owned(),
                complete: "none".to_owned(),
            }],
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: Vec::new(),
            config: vec![ext::ConfigValue {
                key: "permissions.prompt-lines".to_owned(),
                description: "how many diff lines an approval question shows before cutting"
                    .to_owned(),
                schema: r#"{"type": "integer", "minimum": 1, "maximum": 1000}"#.to_owned(),
                default_value: PROMPT_LINES.to_string(),
            }],
        }
    }

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        if name != "approval" {
            return Err(format!("{NAME} has no command /{name}; it has /approval"));
        }
        let wanted = argument.trim();
        if wanted.is_empty() {
            let current = host::approval_mode().map_err(|err| text_of(&err))?;
            let mut text = format!("Approval mode: {current}\nModes:");
            for (mode, what) in MODES {
                let mark = if *mode == current { "*" } else { " " };
                text.push_str(&format!("\n {mark} {mode} - {what}"));
            }
            text.push_str("\nSet one with /approval MODE.");
            return Ok(vec![notify(text)]);
        }
        host::set_approval_mode(wanted).map_err(|err| text_of(&err))?;
        MODE.set(Mode::parse(wanted));
        Ok(vec![notify(format!("Approval mode: {wanted}"))])
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        match event {
            ext::LifecycleEvent::ToolCall(call) => tool_call(&call),
            ext::LifecycleEvent::TurnStart(_) => {
                // Read again at the turn's first call.
                MODE.set(None);
                ext::HandlerResult::None
            }
            _ => ext::HandlerResult::None,
        }
    }
}

smith_plugin_sdk::extension::export_extension!(Permissions);
