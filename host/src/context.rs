//! The request context: what the model is told before the conversation.
//!
//! The host writes no prompt text of its own. Every paragraph of the system
//! prompt is a fragment an extension plugin contributes (smith/product's
//! `base` among them), laid out by [`smith_plugins::context::Assembler`]:
//! [`assembler`] seeds one with every loaded plugin's static fragments in
//! load order, and [`refresh`] feeds it the per-turn fragments plugins
//! compute through `provide.context`. [`tool_shares`] measures the other
//! fixed part of every request, the tool definitions, and [`Report`] is
//! what `smith context` shows.

use std::path::Path;

use smith_engine::tools::ToolSet;
use smith_plugins::WasmExtension;
pub use smith_plugins::context::{Assembler, PieceReport, estimate_tokens};

/// An assembler for a runtime working in `cwd`, holding the static prompt
/// fragments of `plugins` (in their load order).
pub fn assembler(cwd: &Path, plugins: &[WasmExtension]) -> Assembler {
    let mut assembler = Assembler::new(cwd);
    for plugin in plugins {
        let fragments = plugin
            .contributions()
            .map_or(&[][..], |c| &c.prompt_fragments[..]);
        assembler.add_static(plugin.name(), fragments);
    }
    assembler
}

/// Asks every plugin of `plugins` that provides context for its fragments
/// of the turn about to be sent (`messages`: the number of messages in
/// it) and feeds them to `assembler`. A plugin that fails keeps its
/// previous fragments; the returned warnings name it and say why.
pub fn refresh(
    assembler: &mut Assembler,
    plugins: &mut [WasmExtension],
    messages: u32,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for plugin in plugins.iter_mut().filter(|p| p.provided().is_some()) {
        match plugin.context(messages) {
            Ok(fragments) => assembler.update(plugin.name(), fragments),
            Err(err) => warnings.push(format!(
                "{err}; the context keeps the fragments plugin {} gave before",
                plugin.name()
            )),
        }
    }
    warnings
}

/// One tool definition's share of every request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolShare {
    /// Where the tool comes from: `built-in`, or the plugin's name.
    pub source: String,
    /// The tool's name.
    pub name: String,
    /// Bytes of its name, description and parameter schema (compact JSON).
    pub bytes: usize,
    /// The estimated tokens of those bytes ([`estimate_tokens`]).
    pub tokens: usize,
}

impl ToolShare {
    fn new(source: &str, name: &str, description: &str, parameters: &str) -> Self {
        let bytes = name.len() + description.len() + parameters.len();
        ToolShare {
            source: source.to_owned(),
            name: name.to_owned(),
            bytes,
            tokens: estimate_tokens(bytes),
        }
    }
}

/// The share of the built-in tools ([`ToolSet::builtin`]) and then of
/// each plugin's tools, in load order.
pub fn tool_shares(plugins: &[WasmExtension]) -> Vec<ToolShare> {
    let mut shares: Vec<ToolShare> = ToolSet::builtin()
        .definitions()
        .map(|d| {
            ToolShare::new(
                "built-in",
                &d.name,
                &d.description,
                &d.parameters.to_string(),
            )
        })
        .collect();
    for plugin in plugins {
        let Some(provided) = plugin.provided() else {
            continue;
        };
        for tool in &provided.tools {
            // Measured as sent: the schema as compact JSON.
            let parameters = serde_json::from_str::<serde_json::Value>(&tool.parameters)
                .map_or_else(|_| tool.parameters.clone(), |v| v.to_string());
            shares.push(ToolShare::new(
                plugin.name(),
                &tool.name,
                &tool.description,
                &parameters,
            ));
        }
    }
    shares
}

/// What `smith context` shows: the context of a first turn in a folder,
/// measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The working directory.
    pub cwd: std::path::PathBuf,
    /// Every fragment, in prompt order.
    pub pieces: Vec<PieceReport>,
    /// The assembled system prompt's size in bytes (separators included).
    pub prompt_bytes: usize,
    /// Every tool definition's share.
    pub tools: Vec<ToolShare>,
    /// Plugins whose context could not be computed.
    pub warnings: Vec<String>,
}

impl Report {
    /// Assembles the context of a first turn for `cwd` from `plugins`
    /// (static fragments, then the per-turn ones for zero messages) and
    /// measures it.
    pub fn new(cwd: &Path, plugins: &mut [WasmExtension]) -> Self {
        let mut assembler = assembler(cwd, plugins);
        let warnings = refresh(&mut assembler, plugins, 0);
        Report {
            cwd: cwd.to_owned(),
            prompt_bytes: assembler.prompt().len(),
            pieces: assembler.pieces(),
            tools: tool_shares(plugins),
            warnings,
        }
    }

    /// Bytes of every tool definition.
    pub fn tool_bytes(&self) -> usize {
        self.tools.iter().map(|t| t.bytes).sum()
    }

    /// Bytes of the prompt and the tool definitions together.
    pub fn total_bytes(&self) -> usize {
        self.prompt_bytes + self.tool_bytes()
    }

    /// The text `smith context` prints (the warnings are not in it).
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Context for {} (tokens estimated as bytes / 3)\n",
            self.cwd.display()
        );
        out.push_str("Prompt fragments, in prompt order:\n");
        if self.pieces.is_empty() {
            out.push_str("  (none: no plugin contributes prompt fragments)\n");
        }
        let ids: Vec<String> = self
            .pieces
            .iter()
            .map(|p| format!("{}/{}", p.plugin, p.id))
            .collect();
        let width = ids.iter().map(String::len).max().unwrap_or(0);
        for (piece, id) in self.pieces.iter().zip(&ids) {
            let _ = writeln!(
                out,
                "  {id:<width$}  order {:>4}  {:<7}  {:>6} bytes  {:>5} tokens",
                piece.order,
                kind(piece),
                piece.bytes,
                piece.tokens
            );
        }
        let _ = writeln!(
            out,
            "  system prompt: {} bytes, {} tokens\n",
            self.prompt_bytes,
            estimate_tokens(self.prompt_bytes)
        );
        out.push_str("Tool definitions (name, description, parameters):\n");
        let names: Vec<String> = self
            .tools
            .iter()
            .map(|t| format!("{} ({})", t.name, t.source))
            .collect();
        let width = names.iter().map(String::len).max().unwrap_or(0);
        for (tool, name) in self.tools.iter().zip(&names) {
            let _ = writeln!(
                out,
                "  {name:<width$}  {:>6} bytes  {:>5} tokens",
                tool.bytes, tool.tokens
            );
        }
        let _ = writeln!(
            out,
            "  tool definitions: {} bytes, {} tokens\n",
            self.tool_bytes(),
            estimate_tokens(self.tool_bytes())
        );
        let _ = writeln!(
            out,
            "Total: {} bytes, {} tokens",
            self.total_bytes(),
            estimate_tokens(self.total_bytes())
        );
        out
    }

    /// The JSON form of `smith context --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let size =
            |bytes: usize| serde_json::json!({"bytes": bytes, "tokens": estimate_tokens(bytes)});
        serde_json::json!({
            "cwd": self.cwd.display().to_string(),
            "fragments": self.pieces.iter().map(|p| serde_json::json!({
                "plugin": p.plugin,
                "id": p.id,
                "stable_id": format!("{}/{}", p.plugin, p.id),
                "order": p.order,
                "bytes": p.bytes,
                "tokens": p.tokens,
                "kind": kind(p),
            })).collect::<Vec<_>>(),
            "prompt": size(self.prompt_bytes),
            "tools": self.tools.iter().map(|t| serde_json::json!({
                "source": t.source,
                "name": t.name,
                "bytes": t.bytes,
                "tokens": t.tokens,
            })).collect::<Vec<_>>(),
            "tools_total": size(self.tool_bytes()),
            "total": size(self.total_bytes()),
            "warnings": self.warnings,
        })
    }
}

/// `static` or `dynamic`.
fn kind(piece: &PieceReport) -> &'static str {
    if piece.dynamic { "dynamic" } else { "static" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_tools_are_measured_by_name_description_and_schema() {
        let shares = tool_shares(&[]);
        let builtin = ToolSet::builtin();
        assert_eq!(shares.len(), builtin.definitions().count());
        let read = builtin.definitions().find(|d| d.name == "read").unwrap();
        let share = shares.iter().find(|s| s.name == "read").unwrap();
        let bytes = read.name.len() + read.description.len() + read.parameters.to_string().len();
        assert_eq!(
            (share.source.as_str(), share.bytes, share.tokens),
            ("built-in", bytes, bytes.div_ceil(3))
        );
    }
}
