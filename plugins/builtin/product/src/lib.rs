//! smith/product: the product's defaults as an extension plugin, using
//! exactly the contracts a user plugin uses: the default layout tree, the
//! default theme, the keybindings, the slash commands and the presentation
//! of the seven built-in tools.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;

struct Product;

fn command(name: &str, description: &str, usage: &str, complete: &str) -> ext::Command {
    ext::Command {
        name: name.to_owned(),
        description: description.to_owned(),
        usage: usage.to_owned(),
        complete: complete.to_owned(),
    }
}

fn key(keys: &str, action: &str, context: &str) -> ext::Keybinding {
    ext::Keybinding {
        keys: keys.to_owned(),
        action: action.to_owned(),
        context: context.to_owned(),
    }
}

fn style(name: &str, fg: Option<&str>, bold: bool, dim: bool) -> ext::Style {
    ext::Style {
        name: name.to_owned(),
        fg: fg.map(str::to_owned),
        bg: None,
        bold,
        dim,
        italic: false,
    }
}

fn node(
    kind: ext::LayoutKind,
    name: &str,
    size: Option<u32>,
    children: Vec<u32>,
) -> ext::LayoutNode {
    ext::LayoutNode {
        kind,
        name: name.to_owned(),
        size,
        weight: 1,
        children,
    }
}

fn presentation(
    tool: &str,
    title: &str,
    subject: Option<&str>,
    style: &str,
    lines: u32,
) -> ext::ToolPresentation {
    ext::ToolPresentation {
        tool: tool.to_owned(),
        title: title.to_owned(),
        subject_argument: subject.map(str::to_owned),
        result_style: style.to_owned(),
        preview_lines: lines,
    }
}

/// The commands, in the order help lists them.
fn commands() -> Vec<ext::Command> {
    vec![
        command(
            "help",
            "Show the commands and keys",
            "[COMMAND]",
            "commands",
        ),
        command("model", "Show or switch the model", "[MODEL]", "models"),
        command("new", "Start a new session", "", "none"),
        command(
            "resume",
            "Resume an earlier session",
            "[SESSION]",
            "sessions",
        ),
        command(
            "branch",
            "Continue from an earlier entry on a new branch",
            "[ENTRY]",
            "entries",
        ),
        command(
            "compact",
            "Summarize the conversation to free context",
            "[INSTRUCTIONS]",
            "none",
        ),
        command(
            "replay",
            "Replay a session's events",
            "[SESSION]",
            "sessions",
        ),
        command("plugins", "List plugins and their state", "", "plugins"),
        command("quit", "Leave smith", "", "none"),
    ]
}

impl ext::Guest for Product {
    fn contribute() -> ext::Contributions {
        use ext::LayoutKind::{Column, Region};
        ext::Contributions {
            commands: commands(),
            keybindings: vec![
                key("enter", "submit", "editor"),
                key("shift+enter", "newline", "editor"),
                key("esc", "abort", "global"),
                key("ctrl+c", "abort-or-clear", "global"),
                key("ctrl+d", "command:quit", "editor"),
                key("ctrl+l", "command:model", "global"),
                key("ctrl+o", "toggle-tool-output", "transcript"),
                key("ctrl+t", "toggle-thinking", "transcript"),
                key("pageup", "scroll-up", "transcript"),
                key("pagedown", "scroll-down", "transcript"),
            ],
            themes: vec![ext::Theme {
                name: "default".to_owned(),
                styles: vec![
                    style("accent", Some("cyan"), true, false),
                    style("text", None, false, false),
                    style("muted", Some("bright-black"), false, true),
                    style("thinking", Some("bright-black"), false, true),
                    style("error", Some("red"), true, false),
                    style("warning", Some("yellow"), false, false),
                    style("success", Some("green"), false, false),
                    style("tool.title", Some("blue"), true, false),
                    style("diff.added", Some("green"), false, false),
                    style("diff.removed", Some("red"), false, false),
                    style("status", Some("bright-black"), false, false),
                ],
            }],
            layout: vec![
                node(Column, "root", None, vec![1, 2, 3, 4]),
                node(Region, "transcript", None, Vec::new()),
                node(Region, "status", Some(1), Vec::new()),
                node(Region, "editor", Some(3), Vec::new()),
                node(Region, "footer", Some(1), Vec::new()),
            ],
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: vec![
                presentation("read", "Read {path}", Some("path"), "code", 10),
                presentation("write", "Write {path}", Some("path"), "diff", 20),
                presentation("edit", "Edit {path}", Some("path"), "diff", 20),
                presentation("bash", "$ {command}", Some("command"), "text", 10),
                presentation("find", "Find {pattern}", Some("pattern"), "listing", 10),
                presentation("grep", "Grep {pattern}", Some("pattern"), "listing", 10),
                presentation("ls", "List {path}", Some("path"), "listing", 20),
            ],
            config: Vec::new(),
        }
    }

    fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> {
        let argument = argument.trim();
        match name.as_str() {
            "help" => {
                let mut text = String::from("Commands:");
                for c in commands() {
                    text.push_str(&format!("\n  /{} {} - {}", c.name, c.usage, c.description));
                }
                Ok(vec![ext::Action::Ui(ext::UiIntent {
                    id: String::new(),
                    kind: ext::IntentKind::Notify(text),
                    policy: ext::IntentPolicy::Drop,
                })])
            }
            "model" if !argument.is_empty() => Ok(vec![ext::Action::SetModel(argument.to_owned())]),
            "new" | "resume" | "branch" | "compact" | "replay" | "plugins" | "quit" | "model" => {
                Err(format!(
                    "/{name} is carried out by the host, not by smith/product; the host runs it directly"
                ))
            }
            other => Err(format!(
                "smith/product has no command /{other}; run /help for the list"
            )),
        }
    }

    fn handle(_event: ext::LifecycleEvent) -> ext::HandlerResult {
        ext::HandlerResult::None
    }
}

smith_plugin_sdk::extension::export_extension!(Product);
