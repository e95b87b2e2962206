//! smith/plan: plan mode, through the plugin contract.
//!
//! While plan mode is on the agent researches and proposes a plan, and
//! changes nothing: at the `tool-call` decision point every call of a tool
//! that is not read-only (`host.tool-read-only`; a tool the host does not
//! know counts as one that changes things) is blocked with a reason that
//! tells the model what to do instead, and a prompt fragment
//! (`smith/plan/mode`) tells it it is in plan mode. The rule holds for
//! every tool call the hook is asked about, whichever run makes it.
//!
//! The model leaves plan mode with the `exit_plan_mode` tool: it puts the
//! plan to the user as a question that waits (`host.ask`). Approved, plan
//! mode ends and the model is told to carry the plan out; otherwise it
//! stays on and the model is told to revise the plan. `/plan [TEXT]` turns
//! plan mode on (and sends TEXT as a prompt), `/normal` turns it off; the
//! option `plan` (`--plan`, `SMITH_PLAN`) turns it on when a session
//! starts.
//!
//! The mode is kept in the session with `set-session-state` (key `mode`),
//! so a resumed or branched session is in the mode its history last set.
//! The interface shows a panel (a `set-widget` intent named `plan`) while
//! plan mode is on; frontends without panels drop it.

use std::cell::RefCell;

use serde_json::{Value, json};
use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Plan;

/// The plugin's name, as messages name it.
const NAME: &str = "smith/plan";

/// The tool that puts the plan to the user.
const TOOL: &str = "exit_plan_mode";

/// The session state key the mode is kept under.
const KEY: &str = "mode";

/// The stored value while plan mode is on.
const ON: &str = "plan";

/// The stored value once plan mode was left.
const OFF: &str = "normal";

/// The option that starts a session in plan mode (`--plan`,
/// `SMITH_PLAN`).
const PLAN: &str = "plan";

/// The widget (panel) the interface shows while plan mode is on.
const WIDGET: &str = "plan";

/// Where the fragment sits in the prompt: after the todo list (400).
const ORDER: i32 = 500;

/// The longest plan, in characters.
const MAX_PLAN: usize = 20_000;

/// The answers to the approval question.
const APPROVE: &str = "approve";
const APPROVE_CHANGES: &str = "approve, and allow changes in the project without asking";
const KEEP: &str = "keep planning";
const KEEP_NOTE: &str = "keep planning, with a note";

/// What the model is told while plan mode is on.
const FRAGMENT: &str = "Plan mode is on: the user wants a plan before anything changes. Research only: use read-only tools (reading, listing and searching files) to understand the task and the code. Do not try to change files or run commands: every tool that can change something is blocked until the user approves your plan. When you know enough, call exit_plan_mode with your plan in Markdown: the steps, the files you will change and how, and how you will check the result. The user approves it, which ends plan mode so you carry it out, or keeps you planning, often with a note on what to change.";

/// The panel's text while plan mode is on.
const PANEL: &str = "research only: tools that change anything are blocked until you approve the agent's plan\n/normal leaves plan mode";

#[derive(Default)]
struct State {
    /// Whether plan mode is on, as last read from or written to the
    /// session.
    on: bool,
    /// Whether the panel shows (`None` before anything was sent).
    shown: Option<bool>,
    /// Whether the fragment was last given (`None` before the first
    /// context).
    told: Option<bool>,
    /// What each tool asked about so far is: read-only or not. A tool's
    /// kind does not change.
    tools: Vec<(String, bool)>,
    /// Notices not yet handed to the host.
    notices: Vec<String>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn text_of(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(t)
        | host::EffectError::Invalid(t)
        | host::EffectError::Failed(t) => t.clone(),
    }
}

fn on() -> bool {
    STATE.with(|state| state.borrow().on)
}

/// Reads the mode the session holds now.
fn reload() {
    let stored = host::session_state(KEY);
    let on = match stored.as_deref() {
        Some(ON) => true,
        None | Some(OFF) => false,
        Some(other) => {
            STATE.with(|state| {
                state.borrow_mut().notices.push(format!(
                    "the plan mode kept in this session reads {other:?}, which this version of {NAME} does not write (it writes {ON:?} or {OFF:?}); plan mode is off. /plan turns it on"
                ));
            });
            false
        }
    };
    STATE.with(|state| state.borrow_mut().on = on);
}

/// Keeps `on` in the session and in the plugin.
fn set(on: bool) -> Result<(), String> {
    host::set_session_state(KEY, if on { ON } else { OFF }).map_err(|err| {
        format!(
            "{NAME} could not keep plan mode {} in the session: {}; the mode did not change",
            if on { "on" } else { "off" },
            text_of(&err)
        )
    })?;
    STATE.with(|state| state.borrow_mut().on = on);
    Ok(())
}

/// Whether the option `plan` asks every session to start in plan mode.
fn start_in_plan_mode() -> bool {
    host::config_get(PLAN).is_some_and(|json| json.trim() == "true")
}

/// Whether the tool `name` only observes; a tool the host does not know
/// can change things.
fn read_only(name: &str) -> Result<bool, String> {
    let kept = STATE.with(|state| {
        state
            .borrow()
            .tools
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, known)| *known)
    });
    if let Some(known) = kept {
        return Ok(known);
    }
    let known = host::tool_read_only(name)
        .map_err(|err| text_of(&err))?
        .unwrap_or(false);
    STATE.with(|state| state.borrow_mut().tools.push((name.to_owned(), known)));
    Ok(known)
}

fn block(reason: String) -> ext::HandlerResult {
    ext::HandlerResult::Decision(ext::Decision::Block(reason))
}

/// Decides one tool call: while plan mode is on, only read-only tools and
/// `exit_plan_mode` run.
fn tool_call(call: &ext::ToolCallEvent) -> ext::HandlerResult {
    if !on() || call.name == TOOL {
        return ext::HandlerResult::None;
    }
    match read_only(&call.name) {
        Ok(true) => ext::HandlerResult::None,
        Ok(false) => block(format!(
            "plan mode is on and `{}` can change files or run commands, so it did not run. In plan mode you only research: read, list and search with read-only tools, then call exit_plan_mode with your plan. Once the user approves it, plan mode ends and you make the changes",
            call.name
        )),
        Err(why) => block(format!(
            "plan mode is on and {NAME} cannot tell whether `{}` only reads ({why}), so it did not run. Research with the read-only tools, then call exit_plan_mode with your plan",
            call.name
        )),
    }
}

fn notify(text: String) -> ext::Action {
    ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Text,
    })
}

/// The panel's `set-widget` intent when it differs from what shows: the
/// panel while plan mode is on, empty text (no panel) once it is off. A
/// frontend without panels drops it.
fn panel_action() -> Option<ext::Action> {
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        let on = state.on;
        let shown = state.shown.replace(on);
        if shown == Some(on) || (shown.is_none() && !on) {
            return None;
        }
        let text = if on { PANEL.to_owned() } else { String::new() };
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

/// `/plan [TEXT]`: plan mode on, TEXT sent as a prompt.
fn plan_command(argument: &str) -> Result<Vec<ext::Action>, String> {
    let mut actions = Vec::new();
    reload();
    if on() {
        actions.push(notify(
            "plan mode is on already: the agent researches and proposes a plan; /normal leaves plan mode".to_owned(),
        ));
    } else {
        set(true)?;
        actions.push(notify(
            "plan mode on: the agent researches and proposes a plan, and tools that change anything are blocked until you approve it; /normal leaves plan mode".to_owned(),
        ));
    }
    actions.extend(panel_action());
    let text = argument.trim();
    if !text.is_empty() {
        actions.push(ext::Action::SendMessage(text.to_owned()));
    }
    Ok(actions)
}

/// `/normal`: plan mode off.
fn normal_command() -> Result<Vec<ext::Action>, String> {
    let mut actions = Vec::new();
    reload();
    if on() {
        set(false)?;
        actions.push(notify(
            "plan mode off: tools that change files and run commands work again, as the approval mode allows".to_owned(),
        ));
    } else {
        actions.push(notify(
            "plan mode is off already; /plan turns it on".to_owned(),
        ));
    }
    actions.extend(panel_action());
    Ok(actions)
}

impl ext::Guest for Plan {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![
                ext::Command {
                    name: "plan".to_owned(),
                    description: "plan mode: the agent researches and proposes a plan; nothing changes until you approve it".to_owned(),
                    usage: "[PROMPT]".to_owned(),
                    complete: "none".to_owned(),
                },
                ext::Command {
                    name: "normal".to_owned(),
                    description: "leave plan mode: the agent may change files and run commands again".to_owned(),
                    usage: String::new(),
                    complete: "none".to_owned(),
                },
            ],
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: vec![ext::ToolPresentation {
                tool: TOOL.to_owned(),
                title: "exit plan mode".to_owned(),
                subject_argument: None,
                result_style: "text".to_owned(),
                preview_lines: 3,
            }],
            config: Vec::new(),
        }
    }

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        match name.as_str() {
            "plan" => plan_command(&argument),
            "normal" => normal_command(),
            _ => Err(format!(
                "{NAME} has no command /{name}; its commands are /plan and /normal"
            )),
        }
    }

    /// A session starting reads the mode it holds and, when the option
    /// `plan` is set, turns plan mode on; a run starting reads the mode
    /// again (a branch may hold another). `tool-call` is decided; every
    /// event that can carry actions sends the panel when it changed.
    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        match &event {
            ext::LifecycleEvent::ToolCall(call) => return tool_call(call),
            ext::LifecycleEvent::SessionStart(_) => {
                reload();
                if start_in_plan_mode()
                    && !on()
                    && let Err(why) = set(true)
                {
                    STATE.with(|state| state.borrow_mut().notices.push(why));
                }
            }
            ext::LifecycleEvent::AgentStart => reload(),
            _ => {}
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

/// A tool answer.
fn output(text: String, approved: Option<bool>, plan: &str, is_error: bool) -> pro::ToolOutput {
    pro::ToolOutput {
        text,
        structured: approved.map(|approved| json!({"plan": plan, "approved": approved}).to_string()),
        is_error,
    }
}

/// The question's prompt: the plan and what approving does.
fn question(plan: &str) -> String {
    format!(
        "The agent's plan:\n\n{plan}\n\nApprove it? Plan mode ends and the agent carries the plan out, as the approval mode allows. Keep planning to have it revise the plan."
    )
}

/// `exit_plan_mode`: puts the plan to the user; approved, plan mode ends.
fn exit_plan_mode(arguments: &str) -> pro::ToolOutput {
    let value: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let plan = value
        .get("plan")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    if plan.is_empty() {
        return output(
            "exit_plan_mode needs the plan: call it with {\"plan\": \"...\"}, the steps you will take in Markdown".to_owned(),
            None,
            plan,
            true,
        );
    }
    if plan.chars().count() > MAX_PLAN {
        return output(
            format!(
                "the plan is {} characters, over the {MAX_PLAN} exit_plan_mode takes; shorten it to the steps, the files and the checks, and call exit_plan_mode again",
                plan.chars().count()
            ),
            None,
            plan,
            true,
        );
    }
    reload();
    if !on() {
        return output(
            "Plan mode is not on, so there is nothing to leave: go ahead with the work.".to_owned(),
            None,
            plan,
            false,
        );
    }
    // In the `ask` mode every change would ask again: offer to approve
    // the changes in the project with the plan (the `workspace` mode).
    let asks = host::approval_mode().is_ok_and(|mode| mode == "ask");
    let options: &[&str] = if asks {
        &[APPROVE, APPROVE_CHANGES, KEEP, KEEP_NOTE]
    } else {
        &[APPROVE, KEEP, KEEP_NOTE]
    };
    let answer = host::ask(
        &question(plan),
        host::QuestionKind::Select(options.iter().map(|o| (*o).to_owned()).collect()),
        0,
        KEEP,
    );
    let answer = match answer {
        Ok(answer) if answer.source == host::AnswerSource::Timeout => {
            return output(
                "Nobody answered the question about your plan in time, so plan mode stays on. Give the plan in your answer and end your turn; the user leaves plan mode with /normal or asks you to call exit_plan_mode again.".to_owned(),
                Some(false),
                plan,
                false,
            );
        }
        Ok(answer) => answer.text,
        Err(err) => {
            return output(
                format!(
                    "The plan could not be put to the user for approval ({}), so plan mode stays on. Give the plan in your answer and end your turn; the user approves it by answering the question or leaves plan mode with /normal.",
                    text_of(&err)
                ),
                Some(false),
                plan,
                true,
            );
        }
    };
    match answer.as_str() {
        APPROVE_CHANGES => match set(false) {
            Ok(()) => match host::set_approval_mode("workspace") {
                Ok(()) => output(
                    "The user approved your plan and lets changes inside the project run without asking (the approval mode is workspace now). Plan mode is off: carry the plan out now, step by step.".to_owned(),
                    Some(true),
                    plan,
                    false,
                ),
                Err(err) => output(
                    format!(
                        "The user approved your plan. Plan mode is off: carry the plan out now, step by step. The approval mode could not be changed to workspace ({}), so changes still ask the user first.",
                        text_of(&err)
                    ),
                    Some(true),
                    plan,
                    false,
                ),
            },
            Err(why) => output(
                format!(
                    "The user approved your plan, but {why}. Plan mode is still on; tell the user, who can leave it with /normal."
                ),
                Some(true),
                plan,
                true,
            ),
        },
        APPROVE => match set(false) {
            Ok(()) => output(
                "The user approved your plan. Plan mode is off: carry the plan out now, step by step. Tools that change files and run commands work again, as the approval mode allows.".to_owned(),
                Some(true),
                plan,
                false,
            ),
            Err(why) => output(
                format!(
                    "The user approved your plan, but {why}. Plan mode is still on; tell the user, who can leave it with /normal."
                ),
                Some(true),
                plan,
                true,
            ),
        },
        KEEP_NOTE => {
            let note = host::ask(
                "Your note for the agent (what to change in the plan):",
                host::QuestionKind::Input,
                0,
                "",
            )
            .map(|a| a.text)
            .unwrap_or_default();
            let note = note.trim();
            let said = if note.is_empty() {
                "The user did not approve your plan.".to_owned()
            } else {
                format!("The user did not approve your plan and says: {note}")
            };
            output(
                format!(
                    "{said}\nPlan mode stays on: revise the plan (research more with read-only tools where needed) and call exit_plan_mode again with the revised plan."
                ),
                Some(false),
                plan,
                false,
            )
        }
        _ => output(
            "The user did not approve your plan yet, so plan mode stays on. End your turn and wait for the user's feedback; call exit_plan_mode again only with a revised plan.".to_owned(),
            Some(false),
            plan,
            false,
        ),
    }
}

impl pro::Guest for Plan {
    fn tools() -> Vec<pro::ToolSpec> {
        vec![pro::ToolSpec {
            name: TOOL.to_owned(),
            description: "Presents your plan to the user for approval and, once approved, leaves plan mode. Use it only in plan mode, when your research is done: give the whole plan in Markdown (the steps, the files you will change and how, and how you will check the result). The user approves it, which ends plan mode so you can carry it out, or keeps you planning, often with a note on what to change.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "plan": {"type": "string", "description": "The plan, in Markdown."}
                },
                "required": ["plan"],
                "additionalProperties": false
            })
            .to_string(),
            read_only: true,
        }]
    }

    fn call_tool(name: String, arguments: String) -> pro::ToolOutput {
        if name != TOOL {
            return output(
                format!("{NAME} has no tool {name}; its tool is `{TOOL}`"),
                None,
                "",
                true,
            );
        }
        exit_plan_mode(&arguments)
    }

    /// The plan-mode fragment while plan mode is on; none when that did
    /// not change since the last answer.
    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        STATE.with(|state| {
            let mut state = state.borrow_mut();
            let on = state.on;
            if state.told.replace(on) == Some(on) {
                return None;
            }
            Some(if on {
                vec![pro::Fragment {
                    id: "mode".to_owned(),
                    text: FRAGMENT.to_owned(),
                    order: ORDER,
                }]
            } else {
                Vec::new()
            })
        })
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Plan);
