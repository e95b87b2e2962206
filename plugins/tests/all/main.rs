//! Integration tests of the plugin host: the mock plugin against the native
//! scripted provider, the cache, the hostile guests, the product and
//! example extensions, manifests and installation.
#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

mod checkpoints;
mod effects;
mod embedded;
mod extension;
mod hooks;
mod hostile;
mod manifest;
mod mcp_net;
mod mock;
mod permissions;
mod precompiled;
mod provide;
mod reload;
mod tools;
mod web;

use std::path::PathBuf;

#[global_allocator]
static ALLOC: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

/// A guest component built by build.rs.
pub fn guest(file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("SMITH_PLUGIN_GUESTS")).join(file);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("cannot read the test guest {}: {e}", path.display()))
}

/// The test/lifecycle guest, granted `ui`, recording its effects into
/// `journal`.
pub fn lifecycle_guest(
    journal: std::sync::Arc<dyn smith_engine::journal::EffectJournal>,
) -> smith_plugins::WasmExtension {
    let effects = smith_plugins::effects::Effects::new(
        "test/lifecycle",
        smith_plugins::effects::Grants {
            ui: true,
            ..smith_plugins::effects::Grants::default()
        },
        journal,
        std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
        1,
    );
    smith_plugins::ExtensionComponent::load(
        "test/lifecycle",
        &guest("smith_plugin_lifecycle.wasm"),
        None,
        smith_plugins::Limits::default(),
    )
    .unwrap()
    .instantiate_with(Some(effects))
    .unwrap()
}
