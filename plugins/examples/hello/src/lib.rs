//! example/hello: the walkthrough plugin of docs/plugins.md. It contributes
//! one command, `/hello NAME`, and blocks any `bash` tool call whose
//! command contains `rm -rf /`.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::host;

struct Hello;

impl ext::Guest for Hello {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: vec![ext::Command {
                name: "hello".to_owned(),
                description: "Greet someone".to_owned(),
                usage: "NAME".to_owned(),
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

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        if name != "hello" {
            return Err(format!("example/hello has no command /{name}"));
        }
        host::info(&format!("greeting {argument}"));
        Ok(vec![ext::Action::Ui(ext::UiIntent {
            id: String::new(),
            kind: ext::IntentKind::Notify(format!("Hello, {}!", argument.trim())),
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
            _ => ext::HandlerResult::None,
        }
    }
}

smith_plugin_sdk::extension::export_extension!(Hello);
