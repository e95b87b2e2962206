//! The interface's product: the layout, themes, key bindings, commands and
//! tool presentation the loaded extension plugins contribute (smith/product
//! first, then enabled user plugins, then a trusted project's), converted
//! into the interface's plain-data description ([`ProductSpec`]) and merged
//! by [`Product::build`].
//!
//! The product is built once when the interface starts and then cached in
//! the interface: the render path never calls into a plugin. Items the
//! interface cannot use are left out with a warning naming the plugin, the
//! item and the accepted values; the rest of the product still applies.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_plugins::WasmExtension;
use smith_plugins::extension::{Contributions, LayoutKind};
use smith_tui::Product;
use smith_tui::product::{
    CommandSpec, KeySpec, NodeKind, NodeSpec, ProductError, ProductSpec, StyleSpec, ThemeSpec,
    ToolSpec,
};

/// The interface's description of what `plugin` contributes.
pub fn spec(plugin: &str, c: &Contributions) -> ProductSpec {
    ProductSpec {
        plugin: plugin.to_owned(),
        commands: c
            .commands
            .iter()
            .map(|c| CommandSpec {
                name: c.name.clone(),
                description: c.description.clone(),
                usage: c.usage.clone(),
                complete: c.complete.clone(),
            })
            .collect(),
        keys: c
            .keybindings
            .iter()
            .map(|k| KeySpec {
                keys: k.keys.clone(),
                action: k.action.clone(),
                context: k.context.clone(),
            })
            .collect(),
        themes: c
            .themes
            .iter()
            .map(|t| ThemeSpec {
                name: t.name.clone(),
                styles: t
                    .styles
                    .iter()
                    .map(|s| StyleSpec {
                        name: s.name.clone(),
                        fg: s.fg.clone(),
                        bg: s.bg.clone(),
                        bold: s.bold,
                        dim: s.dim,
                        italic: s.italic,
                        underline: s.underline,
                        reverse: s.reverse,
                    })
                    .collect(),
            })
            .collect(),
        layout: c
            .layout
            .iter()
            .map(|n| NodeSpec {
                kind: match n.kind {
                    LayoutKind::Column => NodeKind::Column,
                    LayoutKind::Row => NodeKind::Row,
                    LayoutKind::Region => NodeKind::Region,
                },
                name: n.name.clone(),
                size: n.size,
                weight: n.weight,
                children: n.children.clone(),
            })
            .collect(),
        tools: c
            .tool_presentations
            .iter()
            .map(|t| ToolSpec {
                tool: t.tool.clone(),
                title: t.title.clone(),
                subject_argument: t.subject_argument.clone(),
                result_style: t.result_style.clone(),
                preview_lines: t.preview_lines,
            })
            .collect(),
    }
}

/// The product `plugins` contribute, in their load order, with the items
/// left out.
pub fn build(plugins: &[WasmExtension]) -> (Product, Vec<ProductError>) {
    let specs: Vec<ProductSpec> = plugins
        .iter()
        .filter_map(|p| p.contributions().map(|c| spec(p.name(), c)))
        .collect();
    Product::build(&specs)
}

/// Loads the enabled extension plugins (`crate::cmd::extensions::load`)
/// and builds the product from their contributions, once, at the
/// interface's start. The instances are dropped afterwards: the
/// contributions are data, and the interface keeps only the built
/// product. The instances here belong to no session, so host effects a
/// plugin makes while contributing are kept in memory only (the runtime's
/// own load of the same plugins records its effects in the session).
/// Returns the product and warnings: plugins that could not be loaded and
/// contribution items that were left out.
pub fn load() -> (Product, Vec<String>) {
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (plugins, mut warnings) = super::extensions::load_into(&journal, &ids, None);
    let (product, errors) = build(&plugins);
    warnings.extend(errors.iter().map(ToString::to_string));
    (product, warnings)
}

#[cfg(test)]
mod tests;
