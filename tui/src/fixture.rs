//! The description smith/product contributes, as a [`ProductSpec`], for
//! tests and benchmarks that draw the product without the plugin host.
//!
//! The running interface never uses it: the binary builds its
//! [`Product`](crate::Product) from the loaded plugins' contributions. A
//! test in the interface (`frontends/interface/src/product.rs`) converts what the compiled
//! smith/product plugin contributes and requires it to equal
//! [`product_spec`], so this copy cannot drift from the plugin.

use crate::product::{
    CommandSpec, KeySpec, NodeKind, NodeSpec, ProductSpec, StyleSpec, ThemeSpec, ToolSpec,
};

fn command(name: &str, description: &str, usage: &str, complete: &str) -> CommandSpec {
    CommandSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        usage: usage.to_owned(),
        complete: complete.to_owned(),
    }
}

fn key(keys: &str, action: &str, context: &str) -> KeySpec {
    KeySpec {
        keys: keys.to_owned(),
        action: action.to_owned(),
        context: context.to_owned(),
    }
}

/// A style: `fg` color and the attributes named in `attrs` (`bold`,
/// `dim`, `italic`, `underline`, `reverse`).
fn style(name: &str, fg: Option<&str>, attrs: &[&str]) -> StyleSpec {
    StyleSpec {
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

fn node(kind: NodeKind, name: &str, size: Option<u32>, children: Vec<u32>) -> NodeSpec {
    NodeSpec {
        kind,
        name: name.to_owned(),
        size,
        weight: 1,
        children,
    }
}

fn tool(name: &str, subject: &str) -> ToolSpec {
    ToolSpec {
        tool: name.to_owned(),
        title: format!("{name} {{{subject}}}"),
        subject_argument: Some(subject.to_owned()),
        result_style: "text".to_owned(),
        preview_lines: 6,
    }
}

/// What smith/product contributes.
pub fn product_spec() -> ProductSpec {
    ProductSpec {
        plugin: "smith/product".to_owned(),
        commands: vec![
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
        ],
        keys: vec![
            key("enter", "submit", "editor"),
            key("alt+enter", "queue-follow-up", "editor"),
            key("shift+enter", "newline", "editor"),
            key("ctrl+j", "newline", "editor"),
            key("esc", "interrupt", "global"),
            key("ctrl+c", "clear-or-exit", "global"),
            key("shift+up", "scroll-up", "transcript"),
            key("shift+down", "scroll-down", "transcript"),
            key("pageup", "page-up", "transcript"),
            key("pagedown", "page-down", "transcript"),
            key("ctrl+home", "top", "transcript"),
            key("ctrl+end", "latest", "transcript"),
            key("ctrl+g", "latest", "transcript"),
            key("ctrl+f", "search", "global"),
            key("f1", "help", "global"),
            key("ctrl+t", "toggle-details", "transcript"),
            key("ctrl+o", "toggle-entry", "transcript"),
            key("ctrl+y", "copy", "transcript"),
            key("alt+up", "select-prev", "transcript"),
            key("alt+down", "select-next", "transcript"),
            key("ctrl+p", "model-picker", "global"),
            key("ctrl+r", "session-picker", "global"),
        ],
        themes: vec![ThemeSpec {
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
            node(NodeKind::Column, "root", None, vec![1, 2, 3]),
            node(NodeKind::Region, "transcript", None, Vec::new()),
            node(NodeKind::Region, "status", Some(1), Vec::new()),
            node(NodeKind::Region, "editor", Some(9), Vec::new()),
        ],
        tools: vec![
            tool("read", "path"),
            tool("write", "path"),
            tool("edit", "path"),
            tool("bash", "command"),
            tool("find", "pattern"),
            tool("grep", "pattern"),
            tool("ls", "path"),
        ],
    }
}

/// The product built from [`product_spec`] alone.
///
/// # Panics
///
/// Never for the fixture (its own tests build it); only if it were edited
/// into an invalid description.
#[allow(clippy::expect_used)]
pub fn product() -> crate::Product {
    crate::Product::from_spec(&product_spec()).expect("the smith/product fixture is valid")
}
