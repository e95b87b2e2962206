//! The request context: what the model is told before the conversation.
//!
//! The host writes no prompt text of its own. Every paragraph of the system
//! prompt is a fragment an extension plugin contributes (smith/product's
//! `base` among them), laid out by [`smith_plugins::context::Assembler`]:
//! [`assembler`] seeds one with every loaded plugin's static fragments in
//! load order, and [`refresh`] feeds it the per-turn fragments plugins
//! compute through `provide.context`. [`tool_shares`] measures the other
//! fixed part of every request, the tool definitions, for `smith context`.

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

/// The system prompt of a runtime working in `cwd` from the built-in
/// smith/product plugin's static fragments alone (an empty prompt when it
/// cannot be loaded). For runtimes that assemble their context before
/// their plugins are loaded; a runtime with plugins uses [`assembler`].
pub fn system_prompt(cwd: &Path) -> String {
    let cache = smith_config::Paths::from_process()
        .ok()
        .map(|paths| paths.cache_dir);
    product_prompt(cwd, cache.as_deref())
}

/// [`system_prompt`] with the compiled-component cache in `cache`.
fn product_prompt(cwd: &Path, cache: Option<&Path>) -> String {
    let mut assembler = Assembler::new(cwd);
    let product = smith_plugins::ExtensionComponent::load(
        "smith/product",
        smith_plugins::builtin::PRODUCT,
        cache,
        crate::settings::process_plugin_limits(),
    )
    .and_then(|component| component.instantiate());
    if let Ok(product) = product {
        let fragments = product
            .contributions()
            .map_or(&[][..], |c| &c.prompt_fragments[..]);
        assembler.add_static(product.name(), fragments);
    }
    assembler.prompt().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_prompt_names_the_working_directory() {
        assert_eq!(
            product_prompt(Path::new("/work/p"), None),
            "You are smith, a coding agent. Work in /work/p using the tools you are given."
        );
    }

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
            ("built-in", bytes, bytes.div_ceil(4))
        );
    }
}
