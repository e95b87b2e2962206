//! test/kit: a `full-extension-plugin` guest that uses every contribution
//! an extension can make, for the tests of plugin tools, context, options,
//! queue policies, questions and project access:
//!
//! - tools: `kit_read` (read-only; `path`: returns a project file's text
//!   through `project-read-file`, with `{"bytes": N}` as structured
//!   content), `kit_note` (mutating; `text`: writes `notes/last.txt` in its
//!   data folder and reads it back, two host effects), `kit_spin`
//!   (read-only; spins until cancelled, then says so) and `kit_fail`
//!   (read-only; returns an error result);
//! - prompt fragments: the static `kit.rules` (order 50) and, from
//!   `context`, `kit.turns` (order 60) whose text changes only when the
//!   number of messages crosses a multiple of 4 (none otherwise);
//! - an option `kit.greeting` (a string, default `"hello"`), which the
//!   command `kit-greet` reads and `kit-greet NEW` sets for the runtime;
//! - a queue policy `kit-batch`: never interrupts tools, delivers all
//!   items after a tool batch and before stopping;
//! - questions that wait: a call of `kit_guarded` (mutating; `target`) is
//!   confirmed first at the `tool-call` decision point ("Run kit_guarded
//!   on TARGET?", default `no`, 30 s): `no` blocks it; so is a call of any
//!   tool (built-in ones included) whose arguments contain `confirm-me`
//!   ("Run TOOL on confirm-me?"); the command
//!   `kit-ask` asks a selection and returns the answer as a notice
//!   (`answer TEXT from SOURCE`).

use std::sync::atomic::{AtomicU32, Ordering};

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Kit;

/// The last message-count bucket `context` answered for (u32::MAX: none).
static LAST_BUCKET: AtomicU32 = AtomicU32::new(u32::MAX);

fn notice(text: String) -> ext::Action {
    ext::Action::Ui(ext::UiIntent {
        id: String::new(),
        kind: ext::IntentKind::Notify(text),
        policy: ext::IntentPolicy::Text,
    })
}

fn source(source: host::AnswerSource) -> &'static str {
    match source {
        host::AnswerSource::User => "user",
        host::AnswerSource::Timeout => "timeout",
        host::AnswerSource::Policy => "policy",
    }
}

fn error_text(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(m) => format!("denied: {m}"),
        host::EffectError::Invalid(m) => format!("invalid: {m}"),
        host::EffectError::Failed(m) => format!("failed: {m}"),
    }
}

/// The string field `name` of a JSON object's text (the arguments are
/// validated by the host, so a plain scan is enough for this guest).
fn field(arguments: &str, name: &str) -> String {
    let key = format!("\"{name}\":");
    let Some(start) = arguments.find(&key) else {
        return String::new();
    };
    let rest = arguments[start + key.len()..].trim_start();
    let Some(rest) = rest.strip_prefix('"') else {
        return String::new();
    };
    rest.split('"').next().unwrap_or_default().to_owned()
}

fn output(text: String, structured: Option<String>, is_error: bool) -> pro::ToolOutput {
    pro::ToolOutput {
        text,
        structured,
        is_error,
    }
}

impl ext::Guest for Kit {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![
                ext::Command {
                    name: "kit-greet".into(),
                    description: "Show or set the kit greeting".into(),
                    usage: "[GREETING]".into(),
                    complete: "none".into(),
                },
                ext::Command {
                    name: "kit-ask".into(),
                    description: "Ask which color".into(),
                    usage: String::new(),
                    complete: "none".into(),
                },
            ],
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: vec![ext::PromptFragment {
                id: "kit.rules".into(),
                text: "Kit rules: answer in one line.".into(),
                order: 50,
            }],
            tools: Vec::new(),
            tool_presentations: vec![ext::ToolPresentation {
                tool: "kit_read".into(),
                title: "kit read {path}".into(),
                subject_argument: Some("path".into()),
                result_style: "code".into(),
                preview_lines: 4,
            }],
            config: vec![ext::ConfigValue {
                key: "kit.greeting".into(),
                description: "The greeting the kit-greet command shows.".into(),
                schema: r#"{"type":"string","minLength":1}"#.into(),
                default_value: r#""hello""#.into(),
            }],
        }
    }

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        match name.as_str() {
            "kit-greet" if argument.is_empty() => {
                let value = host::config_get("kit.greeting").unwrap_or_else(|| "unset".into());
                Ok(vec![notice(format!("greeting {value}"))])
            }
            "kit-greet" => {
                let json = format!("\"{argument}\"");
                match host::config_set("kit.greeting", &json) {
                    Ok(()) => Ok(vec![notice(format!("greeting set to {argument}"))]),
                    Err(err) => Err(error_text(&err)),
                }
            }
            "kit-ask" => {
                let asked = host::ask(
                    "Which color?",
                    host::QuestionKind::Select(vec!["red".into(), "blue".into()]),
                    30_000,
                    "blue",
                );
                match asked {
                    Ok(answer) => Ok(vec![notice(format!(
                        "answer {} from {}",
                        answer.text,
                        source(answer.source)
                    ))]),
                    Err(err) => Ok(vec![notice(format!("ask {}", error_text(&err)))]),
                }
            }
            other => Err(format!("kit has no command {other}")),
        }
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        let ext::LifecycleEvent::ToolCall(call) = event else {
            return ext::HandlerResult::None;
        };
        let prompt = if call.name == "kit_guarded" {
            format!("Run kit_guarded on {}?", field(&call.arguments, "target"))
        } else if call.arguments.contains("confirm-me") {
            format!("Run {} on confirm-me?", call.name)
        } else {
            return ext::HandlerResult::None;
        };
        let asked = host::ask(
            &prompt,
            host::QuestionKind::Confirm,
            30_000,
            "no",
        );
        match asked {
            Ok(answer) if answer.text == "yes" => {
                ext::HandlerResult::Decision(ext::Decision::Allow)
            }
            Ok(answer) => ext::HandlerResult::Decision(ext::Decision::Block(format!(
                "the user answered {} ({})",
                answer.text,
                source(answer.source)
            ))),
            Err(err) => ext::HandlerResult::Decision(ext::Decision::Block(format!(
                "could not ask: {}",
                error_text(&err)
            ))),
        }
    }
}

impl pro::Guest for Kit {
    fn tools() -> Vec<pro::ToolSpec> {
        let spec = |name: &str, description: &str, parameters: &str, read_only: bool| {
            pro::ToolSpec {
                name: name.into(),
                description: description.into(),
                parameters: parameters.into(),
                read_only,
            }
        };
        vec![
            spec(
                "kit_read",
                "Read a project file through the kit plugin.",
                r#"{"type":"object","properties":{"path":{"type":"string","description":"A path relative to the project root."}},"required":["path"],"additionalProperties":false}"#,
                true,
            ),
            spec(
                "kit_note",
                "Keep a note in the kit plugin's data folder.",
                r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}"#,
                false,
            ),
            spec(
                "kit_spin",
                "Work until cancelled.",
                r#"{"type":"object","properties":{},"additionalProperties":false}"#,
                true,
            ),
            spec(
                "kit_fail",
                "Always fails.",
                r#"{"type":"object","properties":{},"additionalProperties":false}"#,
                true,
            ),
            spec(
                "kit_guarded",
                "Does something the user confirms first.",
                r#"{"type":"object","properties":{"target":{"type":"string"}},"required":["target"],"additionalProperties":false}"#,
                false,
            ),
        ]
    }

    fn call_tool(name: String, arguments: String) -> pro::ToolOutput {
        match name.as_str() {
            "kit_read" => {
                let path = field(&arguments, "path");
                match host::project_read_file(&path) {
                    Ok(bytes) => output(
                        String::from_utf8_lossy(&bytes).into_owned(),
                        Some(format!("{{\"bytes\":{}}}", bytes.len())),
                        false,
                    ),
                    Err(err) => output(error_text(&err), None, true),
                }
            }
            "kit_note" => {
                let text = field(&arguments, "text");
                if let Err(err) = host::write_file("notes/last.txt", text.as_bytes()) {
                    return output(error_text(&err), None, true);
                }
                match host::read_file("notes/last.txt") {
                    Ok(bytes) => output(
                        format!("noted {} bytes", bytes.len()),
                        None,
                        false,
                    ),
                    Err(err) => output(error_text(&err), None, true),
                }
            }
            "kit_spin" => {
                let mut turns: u64 = 0;
                while !host::cancelled() {
                    turns = turns.wrapping_add(1);
                }
                output(format!("cancelled after {turns} polls"), None, true)
            }
            "kit_fail" => output("kit_fail always fails; nothing was done".into(), None, true),
            "kit_guarded" => output(
                format!("guarded run on {}", field(&arguments, "target")),
                None,
                false,
            ),
            other => output(format!("kit has no tool {other}"), None, true),
        }
    }

    fn context(messages: u32) -> Option<Vec<pro::Fragment>> {
        let bucket = messages / 4;
        if LAST_BUCKET.swap(bucket, Ordering::SeqCst) == bucket {
            return None;
        }
        Some(vec![pro::Fragment {
            id: "kit.turns".into(),
            text: format!("Kit context: at least {} messages so far.", bucket * 4),
            order: 60,
        }])
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        vec![pro::QueuePolicy {
            mode: "kit-batch".into(),
            description: "Delivered whole after each tool batch".into(),
            interrupts_tools: false,
            after_tool_batch: pro::Delivery::All,
            before_stop: pro::Delivery::All,
        }]
    }
}

smith_plugin_sdk::extension::export_extension!(Kit);
