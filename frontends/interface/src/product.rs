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

/// Loads the enabled extension plugins (`smith_host::extensions::load_into`)
/// and builds the product from their contributions, once, at the
/// interface's start; with `no_plugins` (`--no-plugins`) only the enabled
/// built-in extensions (smith/product) contribute. The instances are
/// dropped afterwards: the contributions are data, and the interface keeps
/// only the built product. The instances here belong to no session, so
/// host effects a plugin makes while contributing are kept in memory only
/// (the runtime's own load of the same plugins records its effects in the
/// session). Returns the product and warnings: plugins that could not be
/// loaded and contribution items that were left out.
pub fn load(no_plugins: bool) -> (Product, Vec<String>) {
    let (plugins, mut warnings) = if no_plugins {
        builtins()
    } else {
        let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
        let ids = Arc::new(AtomicU64::new(1));
        smith_host::extensions::load_into(&journal, &ids, None)
    };
    let (product, errors) = build(&plugins);
    warnings.extend(errors.iter().map(ToString::to_string));
    (product, warnings)
}

/// The enabled built-in extensions, without host effects.
fn builtins() -> (Vec<WasmExtension>, Vec<String>) {
    let Ok(paths) = smith_config::Paths::from_process() else {
        return (
            Vec::new(),
            vec![
                "the built-in extension plugins were not loaded: smith's directories could not be determined (set SMITH_HOME or HOME)".to_owned(),
            ],
        );
    };
    let disabled = smith_host::plugins::disabled(&paths);
    let limits = smith_host::settings::process_plugin_limits();
    let mut loaded = Vec::new();
    let mut warnings = Vec::new();
    for builtin in smith_plugins::builtin::BUILTINS
        .iter()
        .filter(|b| b.world == "extension" && !disabled.iter().any(|d| d == b.name))
    {
        match smith_plugins::ExtensionComponent::load(
            builtin.name,
            builtin.component,
            Some(&paths.cache_dir),
            limits,
        )
        .and_then(|c| c.instantiate())
        {
            Ok(plugin) => loaded.push(plugin),
            Err(err) => warnings.push(format!(
                "{err}; the interface starts without it (`smith plugin disable {}` stops this warning)",
                builtin.name
            )),
        }
    }
    (loaded, warnings)
}

#[cfg(test)]
mod tests;
