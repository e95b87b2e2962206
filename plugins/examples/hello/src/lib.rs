//! example/hello: the walkthrough plugin of docs/plugins.md, with one
//! example of each thing an extension contributes:
//!
//! - a command, `/hello [NAME]`, which greets NAME (or the world);
//! - a handler that blocks any `bash` tool call whose command contains
//!   `rm -rf /`, and asks before one that runs `git push` (a question that
//!   waits; `ui` grant): the call runs only if the user answers yes;
//! - a read-only tool for the model, `hello` (`{"name": "..."}`), through
//!   `provide`;
//! - a prompt fragment telling the model about the tool;
//! - an option of its own, `hello.greeting` (default `"Hello"`), which the
//!   command and the tool use;
//! - a queue policy, `batch`: input queued under it never interrupts tool
//!   work and is delivered whole after each tool batch.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Hello;

/// The configured greeting (`hello.greeting`), or `Hello`.
fn greeting() -> String {
    host::config_get("hello.greeting")
        .and_then(|json| {
            json.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "Hello".to_owned())
}

/// The string field `name` of the tool's arguments (already validated
/// against the schema by the host).
fn name_argument(arguments: &str) -> String {
    arguments
        .split_once("\"name\":")
        .and_then(|(_, rest)| rest.trim_start().strip_prefix('"'))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("world")
        .to_owned()
}

impl ext::Guest for Hello {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![ext::Command {
                name: "hello".to_owned(),
                description: "Greet someone".to_owned(),
                usage: "[NAME]".to_owned(),
                complete: "none".to_owned(),
            }],
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: vec![ext::PromptFragment {
                id: "tool".to_owned(),
                text: "To greet someone, call the hello tool with their name.".to_owned(),
                order: 100,
            }],
            tools: Vec::new(),
            tool_presentations: vec![ext::ToolPresentation {
                tool: "hello".to_owned(),
                title: "hello {name}".to_owned(),
                subject_argument: Some("name".to_owned()),
                result_style: "text".to_owned(),
                preview_lines: 1,
            }],
            config: vec![ext::ConfigValue {
                key: "hello.greeting".to_owned(),
                description: "The word example/hello greets with.".to_owned(),
                schema: r#"{"type":"string","minLength":1}"#.to_owned(),
                default_value: r#""Hello""#.to_owned(),
            }],
        }
    }

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        if name != "hello" {
            return Err(format!("example/hello has no command /{name}"));
        }
        let whom = match argument.trim() {
            "" => "world",
            name => name,
        };
        host::info(&format!("greeting {whom}"));
        Ok(vec![ext::Action::Ui(ext::UiIntent {
            id: String::new(),
            kind: ext::IntentKind::Notify(format!("{}, {whom}!", greeting())),
            policy: ext::IntentPolicy::Drop,
        })])
    }

    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        match event {
            ext::LifecycleEvent::ToolCall(call)
                if call.name == "bash" && call.arguments.contains("rm -rf /") =>
            {
                ext::HandlerResult::Decision(ext::Decision::Block(
                    "example/hello refuses to run rm -rf /".to_owned(),
                ))
            }
            ext::LifecycleEvent::ToolCall(call)
                if call.name == "bash" && call.arguments.contains("git push") =>
            {
                // Waits for the user; the default (after a minute, or where
                // no one can answer and defaults are taken) is no.
                match host::ask(
                    "Let the agent run git push?",
                    host::QuestionKind::Confirm,
                    60_000,
                    "no",
                ) {
                    Ok(answer) if answer.text == "yes" => {
                        ext::HandlerResult::Decision(ext::Decision::Allow)
                    }
                    Ok(_) => ext::HandlerResult::Decision(ext::Decision::Block(
                        "the user did not allow git push".to_owned(),
                    )),
                    Err(err) => ext::HandlerResult::Decision(ext::Decision::Block(format!(
                        "example/hello could not ask before git push: {err:?}"
                    ))),
                }
            }
            _ => ext::HandlerResult::None,
        }
    }
}

impl pro::Guest for Hello {
    fn tools() -> Vec<pro::ToolSpec> {
        vec![pro::ToolSpec {
            name: "hello".to_owned(),
            description: "Greet someone by name.".to_owned(),
            parameters: r#"{"type":"object","properties":{"name":{"type":"string","description":"Whom to greet."}},"required":["name"],"additionalProperties":false}"#.to_owned(),
            read_only: true,
        }]
    }

    fn call_tool(name: String, arguments: String) -> pro::ToolOutput {
        if name != "hello" {
            return pro::ToolOutput {
                text: format!("example/hello has no tool {name}"),
                structured: None,
                is_error: true,
            };
        }
        pro::ToolOutput {
            text: format!("{}, {}!", greeting(), name_argument(&arguments)),
            structured: None,
            is_error: false,
        }
    }

    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        None
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        vec![pro::QueuePolicy {
            mode: "batch".to_owned(),
            description: "Never interrupts; delivered whole after each tool batch".to_owned(),
            interrupts_tools: false,
            after_tool_batch: pro::Delivery::All,
            before_stop: pro::Delivery::All,
        }]
    }
}

smith_plugin_sdk::extension::export_extension!(Hello);
