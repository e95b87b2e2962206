//! smith/todo: the model's todo list, through the plugin contract.
//!
//! The `todo_write` tool takes the whole list (each item's `content`,
//! `status` — `pending`, `in_progress` or `completed` — and an optional
//! `id`; at most one item in progress) and answers with a short summary.
//! The list is kept in the session with `set-session-state` (one
//! `plugin_state` entry per change), so a resumed, compacted or branched
//! session has the list its own history last wrote; `session-state`
//! reads it back when a session starts and when a run starts.
//!
//! While an item is open the model is told the list in a prompt fragment
//! (`smith/todo/list`), so it still knows it after a compaction dropped
//! the calls that wrote it. The interface shows it as a panel above the
//! editor (a `set-widget` intent named `todo`; frontends that have no
//! panels drop it), and `/todo` shows it in the transcript.

use std::cell::RefCell;

use serde_json::{Value, json};
use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Todo;

/// The tool that writes the list.
const TOOL: &str = "todo_write";

/// The session state key the list is kept under.
const KEY: &str = "list";

/// The widget (panel) the interface shows the list in.
const WIDGET: &str = "todo";

/// Where the list sits in the prompt: after the skills catalog (300).
const ORDER: i32 = 400;

/// The most items a list may have.
const MAX_ITEMS: usize = 100;

/// The longest item, in characters.
const MAX_CONTENT: usize = 500;

/// The longest id, in characters.
const MAX_ID: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "in_progress" => Some(Self::InProgress),
            "completed" => Some(Self::Completed),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
        }
    }

    /// The item's box in the panel and in `/todo`.
    fn mark(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[>]",
            Self::Completed => "[x]",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Item {
    id: String,
    content: String,
    status: Status,
}

#[derive(Default)]
struct State {
    /// The list as last read from or written to the session.
    items: Vec<Item>,
    /// The panel text last sent; `None` before any was.
    shown: Option<String>,
    /// The panel must be sent at the next event that can carry actions.
    panel_due: bool,
    /// The fragment text last given to the host (empty for none).
    told: String,
    /// Notices not yet handed to the host.
    notices: Vec<String>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// The list as stored: `{"items": [{id, content, status}]}`.
fn encode(items: &[Item]) -> String {
    let items: Vec<Value> = items
        .iter()
        .map(|i| json!({"id": i.id, "content": i.content, "status": i.status.as_str()}))
        .collect();
    json!({ "items": items }).to_string()
}

fn decode(text: &str) -> Option<Vec<Item>> {
    let value: Value = serde_json::from_str(text).ok()?;
    value
        .get("items")?
        .as_array()?
        .iter()
        .map(|item| {
            Some(Item {
                id: item.get("id")?.as_str()?.to_owned(),
                content: item.get("content")?.as_str()?.to_owned(),
                status: Status::parse(item.get("status")?.as_str()?)?,
            })
        })
        .collect()
}

/// Reads the list the session holds now; marks the panel due when it is
/// not what the plugin had.
fn reload() {
    let stored = host::session_state(KEY);
    let items = match stored.as_deref().map(decode) {
        Some(Some(items)) => items,
        Some(None) => {
            STATE.with(|state| {
                state.borrow_mut().notices.push(
                    "the todo list kept in this session could not be read (it is not the list this version of smith/todo writes); it starts empty, and the agent's next todo_write replaces it".to_owned(),
                );
            });
            Vec::new()
        }
        None => Vec::new(),
    };
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        if state.items != items || state.shown.is_none() {
            state.items = items;
            state.panel_due = true;
        }
    });
}

fn counts(items: &[Item]) -> (usize, usize, usize) {
    let of = |s: Status| items.iter().filter(|i| i.status == s).count();
    (
        of(Status::Completed),
        of(Status::InProgress),
        of(Status::Pending),
    )
}

fn open(items: &[Item]) -> bool {
    items.iter().any(|i| i.status != Status::Completed)
}

/// The panel: one line per item.
fn panel(items: &[Item]) -> String {
    let (done, _, _) = counts(items);
    let mut lines = vec![format!("{done}/{} done", items.len())];
    lines.extend(
        items
            .iter()
            .map(|i| format!("{} {}", i.status.mark(), i.content)),
    );
    lines.join("\n")
}

/// The prompt fragment: the list while an item is open, else nothing.
fn fragment(items: &[Item]) -> String {
    if !open(items) {
        return String::new();
    }
    let mut text = "Your todo list, as you last wrote it with todo_write (it is kept across compaction and resumed sessions). Keep it current with todo_write: mark an item in_progress before you start on it and completed as soon as it is done, one item in_progress at a time.".to_owned();
    for item in items {
        text.push_str(&format!(
            "\n- [{}] {} (id {})",
            item.status.as_str(),
            item.content,
            item.id
        ));
    }
    text
}

/// The tool's answer: the counts and what is in progress and next.
fn summary(items: &[Item]) -> String {
    if items.is_empty() {
        return "Todo list cleared: it has no items now.".to_owned();
    }
    let (done, doing, pending) = counts(items);
    let mut text = format!(
        "Todo list updated: {} items ({done} completed, {doing} in progress, {pending} pending).",
        items.len()
    );
    if let Some(current) = items.iter().find(|i| i.status == Status::InProgress) {
        text.push_str(&format!(
            " In progress: {} (id {}).",
            current.content, current.id
        ));
    }
    if let Some(next) = items.iter().find(|i| i.status == Status::Pending) {
        text.push_str(&format!(" Next: {} (id {}).", next.content, next.id));
    }
    if done == items.len() {
        text.push_str(" Every item is completed.");
    }
    text
}

/// The arguments as a list, or what is wrong with them and how to fix it.
fn parse(arguments: &str) -> Result<Vec<Item>, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("the arguments are not JSON ({e}); send {{\"todos\": [...]}}"))?;
    let Some(todos) = value.get("todos").and_then(Value::as_array) else {
        return Err("the arguments lack `todos`, the whole list as an array of {content, status, id?}; send an empty array to clear the list".to_owned());
    };
    if todos.len() > MAX_ITEMS {
        return Err(format!(
            "the list has {} items, more than the {MAX_ITEMS} it may hold; merge small steps into larger ones and send at most {MAX_ITEMS}",
            todos.len()
        ));
    }
    let mut items = Vec::with_capacity(todos.len());
    for (n, todo) in todos.iter().enumerate() {
        let at = format!("todos[{n}]");
        let content = todo
            .get("content")
            .and_then(Value::as_str)
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        if content.is_empty() {
            return Err(format!(
                "{at}.content is empty; give every item a short description of the step"
            ));
        }
        if content.chars().count() > MAX_CONTENT {
            return Err(format!(
                "{at}.content is {} characters, over {MAX_CONTENT}; describe the step in one short line",
                content.chars().count()
            ));
        }
        let status = todo.get("status").and_then(Value::as_str).unwrap_or("");
        let Some(status) = Status::parse(status) else {
            return Err(format!(
                "{at}.status is {status:?}; it must be pending, in_progress or completed"
            ));
        };
        let id = match todo.get("id").and_then(Value::as_str).map(str::trim) {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => (n + 1).to_string(),
        };
        if id.chars().count() > MAX_ID {
            return Err(format!(
                "{at}.id is over {MAX_ID} characters; use a short id, or leave it out to number the items"
            ));
        }
        if let Some(same) = items.iter().position(|i: &Item| i.id == id) {
            return Err(format!(
                "todos[{same}] and {at} both have the id {id:?}; give each item its own id, or leave ids out to number the items by position"
            ));
        }
        items.push(Item {
            id,
            content,
            status,
        });
    }
    let doing: Vec<String> = items
        .iter()
        .filter(|i| i.status == Status::InProgress)
        .map(|i| format!("{:?} (id {})", i.content, i.id))
        .collect();
    if doing.len() > 1 {
        return Err(format!(
            "{} items are in_progress: {}; at most one item may be in_progress at a time. Keep in_progress only the one you are working on now, mark the others pending (or completed if they are done), and call todo_write again with the whole list; the list was not changed",
            doing.len(),
            doing.join(", ")
        ));
    }
    Ok(items)
}

fn notify(text: String) -> ext::Action {
    ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Text,
    })
}

/// The panel's `set-widget` intent, when it is due and differs from what
/// was shown: the list, or empty text (no panel) when there is none. A
/// frontend without panels drops it.
fn panel_action() -> Option<ext::Action> {
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        if !state.panel_due {
            return None;
        }
        state.panel_due = false;
        let text = if state.items.is_empty() {
            String::new()
        } else {
            panel(&state.items)
        };
        if state.shown.as_deref() == Some(text.as_str())
            || (state.shown.is_none() && text.is_empty())
        {
            state.shown = Some(text);
            return None;
        }
        state.shown = Some(text.clone());
        Some(ext::Action::Ui(ext::UiIntent {
            id: WIDGET.to_owned(),
            kind: ext::IntentKind::SetWidget((WIDGET.to_owned(), text)),
            policy: ext::IntentPolicy::Drop,
        }))
    })
}

/// Whether handlers may answer `event` with actions (decision points
/// answer with decisions).
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

impl ext::Guest for Todo {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![ext::Command {
                name: "todo".to_owned(),
                description: "show the agent's todo list (todo_write keeps it in the session)"
                    .to_owned(),
                usage: String::new(),
                complete: "none".to_owned(),
            }],
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: vec![ext::ToolPresentation {
                tool: TOOL.to_owned(),
                title: "todo_write".to_owned(),
                subject_argument: None,
                result_style: "text".to_owned(),
                preview_lines: 2,
            }],
            config: Vec::new(),
        }
    }

    /// `/todo`: the list as notices (one line each), also to a frontend
    /// without panels.
    fn run_command(name: String, _argument: String) -> Result<Vec<ext::Action>, String> {
        if name != "todo" {
            return Err(format!(
                "smith/todo has no command /{name}; its command is /todo"
            ));
        }
        reload();
        let items = STATE.with(|state| state.borrow().items.clone());
        if items.is_empty() {
            return Ok(vec![notify(
                "the todo list is empty: the agent has not written one in this session (it does with the todo_write tool)".to_owned(),
            )]);
        }
        let mut actions: Vec<ext::Action> = panel(&items)
            .lines()
            .map(|line| notify(line.to_owned()))
            .collect();
        actions.extend(panel_action());
        Ok(actions)
    }

    /// A session or a run starting reads the list the session holds (a
    /// branch may hold another); every event that can carry actions sends
    /// the panel when it changed.
    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        if matches!(
            event,
            ext::LifecycleEvent::SessionStart(_) | ext::LifecycleEvent::AgentStart
        ) {
            reload();
        }
        if !carries_actions(&event) {
            return ext::HandlerResult::None;
        }
        let mut actions: Vec<ext::Action> = STATE
            .with(|state| std::mem::take(&mut state.borrow_mut().notices))
            .into_iter()
            .map(notify)
            .collect();
        actions.extend(panel_action());
        if actions.is_empty() {
            ext::HandlerResult::None
        } else {
            ext::HandlerResult::Actions(actions)
        }
    }
}

impl pro::Guest for Todo {
    fn tools() -> Vec<pro::ToolSpec> {
        let item = json!({
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The step, as one short imperative line (\"Run the parser tests\")."},
                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                "id": {"type": "string", "description": "A short stable id; left out, items are numbered 1, 2, ... by position."}
            },
            "required": ["content", "status"],
            "additionalProperties": false
        });
        vec![pro::ToolSpec {
            name: TOOL.to_owned(),
            description: "Writes your todo list for the current task: send the whole list each time (it replaces the previous one; an empty list clears it). Use it for work of three or more steps or when the user gives several tasks: write the steps as pending, mark one in_progress before you start on it (only one at a time), and mark it completed as soon as it is done. The user sees the list; it is kept in the session and given back to you after compaction.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {"type": "array", "description": "The whole list, in order.", "items": item}
                },
                "required": ["todos"],
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
                "smith/todo has no tool {name}; its tool is `{TOOL}`"
            ));
        }
        let items = match parse(&arguments) {
            Ok(items) => items,
            Err(reason) => return error(format!("todo_write refused the list: {reason}")),
        };
        if let Err(err) = host::set_session_state(KEY, &encode(&items)) {
            let why = match err {
                host::EffectError::Denied(t)
                | host::EffectError::Invalid(t)
                | host::EffectError::Failed(t) => t,
            };
            return error(format!(
                "todo_write could not keep the list in the session: {why}; the list was not changed. Try again; if it keeps failing, go on without the todo list"
            ));
        }
        let text = summary(&items);
        let structured = json!({
            "todos": items.iter().map(|i| json!({"id": i.id, "content": i.content, "status": i.status.as_str()})).collect::<Vec<_>>()
        });
        STATE.with(|state| {
            let mut state = state.borrow_mut();
            state.items = items;
            state.panel_due = true;
        });
        pro::ToolOutput {
            text,
            structured: Some(structured.to_string()),
            is_error: false,
        }
    }

    /// The list while an item is open; no fragment once every item is
    /// completed or the list is empty; none when that did not change.
    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        STATE.with(|state| {
            let mut state = state.borrow_mut();
            let text = fragment(&state.items);
            if text == state.told {
                return None;
            }
            state.told.clone_from(&text);
            Some(if text.is_empty() {
                Vec::new()
            } else {
                vec![pro::Fragment {
                    id: "list".to_owned(),
                    text,
                    order: ORDER,
                }]
            })
        })
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Todo);
