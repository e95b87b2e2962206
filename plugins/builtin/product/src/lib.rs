//! smith/product: the product's presentation as an extension plugin, using
//! exactly the contracts a user plugin uses: the layout tree, the `default`
//! theme (a style per interface role), the keybindings, the slash commands
//! and the presentation of the seven built-in tools. The interface draws
//! only what plugins contribute; the names used here are its vocabulary
//! (docs/tui.md, "Presentation source").

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;

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

/// A style: `fg` color and the attributes named in `attrs` (`bold`,
/// `dim`, `italic`, `underline`, `reverse`).
fn style(name: &str, fg: Option<&str>, attrs: &[&str]) -> ext::Style {
    ext::Style {
        name: name.to_owned(),
        fg: fg.map(str::to_owned),
        bg: None,
        bold: attrs.contains(&"bold"),
        dim: attrs.contains(&"dim"),
        italic: attrs.contains(&"italic"),
        underline: attrs.contains(&"underline"),
        reverse: attrs.contains(&"reverse"),
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

/// A built-in tool's presentation: its name and the subject argument as
/// the title, the result as text, six lines before folding.
fn presentation(tool: &str, subject: &str) -> ext::ToolPresentation {
    ext::ToolPresentation {
        tool: tool.to_owned(),
        title: format!("{tool} {{{subject}}}"),
        subject_argument: Some(subject.to_owned()),
        result_style: "text".to_owned(),
        preview_lines: 6,
    }
}

/// The commands, in the order help lists them.
fn commands() -> Vec<ext::Command> {
    vec![
        command("help", "show keys and commands", "", "none"),
        command("model", "choose the model", "[ID]", "models"),
        command("new", "start a new session", "", "none"),
        command("resume", "open a stored session", "[REF]", "sessions"),
        command("continue", "continue the latest session", "", "none"),
        command(
            "branch",
            "choose a branch of the session",
            "[ENTRY]",
            "entries",
        ),
        command("compact", "compact the context", "[INSTRUCTIONS]", "none"),
        command(
            "replay",
            "replay the session's transcript",
            "[SPEED]",
            "none",
        ),
        command(
            "undo",
            "undo the last change to the files",
            "[fx-N]",
            "none",
        ),
        command("redo", "redo the last undone change", "[fx-N]", "none"),
        command(
            "rewind",
            "rewind files and conversation (Esc Esc)",
            "[ENTRY]",
            "none",
        ),
        command("plugins", "list plugins", "", "none"),
        command("jobs", "list background jobs", "", "none"),
        command("context", "show what every request carries", "", "none"),
        command("search", "search the transcript", "[TEXT]", "none"),
        command("search-all", "search every stored session", "TEXT", "none"),
        command("copy", "copy the last answer", "", "none"),
        command(
            "thinking",
            "show or set the thinking level",
            "[LEVEL]",
            "none",
        ),
        command("quit", "exit smith", "", "none"),
    ]
}

/// The key bindings: chord, action, context.
const KEYS: &[(&str, &str, &str)] = &[
    ("enter", "submit", "editor"),
    ("alt+enter", "queue-follow-up", "editor"),
    ("shift+enter", "newline", "editor"),
    ("ctrl+j", "newline", "editor"),
    ("esc", "interrupt", "global"),
    ("ctrl+c", "clear-or-exit", "global"),
    ("shift+up", "scroll-up", "transcript"),
    ("shift+down", "scroll-down", "transcript"),
    ("pageup", "page-up", "transcript"),
    ("pagedown", "page-down", "transcript"),
    ("ctrl+home", "top", "transcript"),
    ("ctrl+end", "latest", "transcript"),
    ("ctrl+g", "latest", "transcript"),
    ("ctrl+f", "search", "global"),
    ("f1", "help", "global"),
    ("ctrl+t", "toggle-details", "transcript"),
    ("ctrl+o", "toggle-entry", "transcript"),
    ("ctrl+y", "copy", "transcript"),
    ("alt+up", "select-prev", "transcript"),
    ("alt+down", "select-next", "transcript"),
    ("ctrl+p", "model-picker", "global"),
    ("ctrl+r", "session-picker", "global"),
];

impl ext::Guest for Product {
    fn contribute() -> ext::Contributions {
        use ext::LayoutKind::{Column, Region};
        ext::Contributions {
            commands: commands(),
            keybindings: KEYS
                .iter()
                .map(|(keys, action, context)| key(keys, action, context))
                .collect(),
            themes: vec![ext::Theme {
                name: "default".to_owned(),
                styles: vec![
                    style("user", Some("cyan"), &["bold"]),
                    style("assistant", None, &[]),
                    style("thinking", Some("bright-black"), &["italic"]),
                    style("tool", Some("yellow"), &[]),
                    style("tool-output", Some("bright-black"), &[]),
                    style("tool-error", Some("red"), &[]),
                    style("error", Some("red"), &["bold"]),
                    style("notice", Some("bright-black"), &[]),
                    style("status", None, &["reverse"]),
                    style("prompt", Some("cyan"), &["bold"]),
                    style("popup", None, &[]),
                    style("selected", None, &["reverse"]),
                    style("match", None, &["underline"]),
                    style("current-match", None, &["reverse"]),
                    style("border", Some("bright-black"), &[]),
                ],
            }],
            layout: vec![
                node(Column, "root", None, vec![1, 2, 3]),
                node(Region, "transcript", None, Vec::new()),
                node(Region, "status", Some(1), Vec::new()),
                node(Region, "editor", Some(9), Vec::new()),
            ],
            prompt_fragments: vec![ext::PromptFragment {
                id: "base".to_owned(),
                text: BASE_PROMPT.to_owned(),
                order: 0,
            }],
            tools: Vec::new(),
            tool_presentations: vec![
                presentation("read", "path"),
                presentation("write", "path"),
                presentation("edit", "path"),
                presentation("bash", "command"),
                presentation("find", "pattern"),
                presentation("grep", "pattern"),
                presentation("ls", "path"),
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
                    let name = if c.usage.is_empty() {
                        c.name
                    } else {
                        format!("{} {}", c.name, c.usage)
                    };
                    text.push_str(&format!("\n  /{name} - {}", c.description));
                }
                Ok(vec![ext::Action::Ui(ext::UiIntent {
                    id: String::new(),
                    kind: ext::IntentKind::Notify(text),
                    policy: ext::IntentPolicy::Drop,
                })])
            }
            "model" if !argument.is_empty() => Ok(vec![ext::Action::SetModel(argument.to_owned())]),
            "new" | "resume" | "continue" | "branch" | "compact" | "replay" | "undo" | "redo"
            | "rewind" | "plugins" | "jobs" | "context" | "search" | "search-all" | "copy" | "thinking" | "quit" | "model" => Err(format!(
                "/{name} is carried out by the host, not by smith/product; the host runs it directly"
            )),
            other => Err(format!(
                "smith/product has no command /{other}; run /help for the list"
            )),
        }
    }

    fn handle(_event: ext::LifecycleEvent) -> ext::HandlerResult {
        ext::HandlerResult::None
    }
}

/// The product's framing of the work, first in every request's context.
/// The host puts the project folder in place of `{cwd}`.
const BASE_PROMPT: &str =
    "You are smith, a coding agent. Work in {cwd} using the tools you are given.";

impl pro::Guest for Product {
    fn tools() -> Vec<pro::ToolSpec> {
        Vec::new()
    }

    fn call_tool(name: String, _arguments: String) -> pro::ToolOutput {
        pro::ToolOutput {
            text: format!("smith/product has no tool {name}"),
            structured: None,
            is_error: true,
        }
    }

    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        None
    }

    /// The two ways input queued while the agent works reaches it.
    fn queue_policies() -> Vec<pro::QueuePolicy> {
        vec![
            pro::QueuePolicy {
                mode: "steer".to_owned(),
                description: "Interrupts tool work; delivered at the next chance".to_owned(),
                interrupts_tools: true,
                after_tool_batch: pro::Delivery::All,
                before_stop: pro::Delivery::All,
            },
            pro::QueuePolicy {
                mode: "follow_up".to_owned(),
                description: "Waits until the agent would stop, then starts the next round"
                    .to_owned(),
                interrupts_tools: false,
                after_tool_batch: pro::Delivery::None,
                before_stop: pro::Delivery::One,
            },
        ]
    }
}

smith_plugin_sdk::extension::export_extension!(Product);
