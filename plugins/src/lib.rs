//! The smith plugin host.
//!
//! Plugins are WebAssembly components implementing one world of the WIT
//! package `smith:plugin@1` (plugins/wit): `provider-plugin` (vendor
//! adapters) or `extension-plugin` (product and user behavior). This crate
//! runs them on wasmtime's component model:
//!
//! - [`Runtime`]: one engine per process with epoch interruption driven by a
//!   ticker thread ([`runtime::TICK`]) for hard deadlines, the linkers built
//!   once, and the compiled-component cache in smith's cache directory keyed
//!   on wasmtime's compatibility hash plus the component's sha256. The
//!   built-in plugins are compiled by the build and embedded precompiled
//!   ([`builtin::PRECOMPILED`]), their components compressed beside them
//!   with the digests the build computed ([`Embedded`]); precompiled
//!   artifacts from anywhere else are refused.
//! - The sandbox: WASI imports are satisfied with no ambient authority (no
//!   preopens, environment, arguments, sockets or stdio; clocks and
//!   randomness only); a `ResourceLimiter` caps linear memory ([`Limits`]);
//!   every call runs inside the plugin's accounting scope.
//! - [`ProviderComponent`] / [`WasmProvider`]: a provider plugin behind the
//!   engine's `Provider` trait; [`ExtensionComponent`] / [`WasmExtension`]:
//!   contributions, commands and lifecycle handlers, with decision folding
//!   ([`extension::decide`]) and batch conflict checks
//!   ([`extension::check_batch`]).
//! - [`context`]: the [`context::Assembler`] lays plugins' static and
//!   per-turn prompt fragments out into the system prompt, rebuilding it
//!   only when a fragment changed.
//! - [`manifest`]: `plugin.kdl` validation and installation into owned
//!   roots; [`help`]: `smith help plugins` generated from the WIT doc
//!   comments; [`builtin`]: the embedded built-in plugins.
//!
//! A plugin past its deadline, over its memory limit, or trapping is
//! destroyed and the error ([`PluginError`]) names the plugin and the phase;
//! the host keeps serving. [`PluginError::to_diagnostic`] turns an error into
//! a `smith_diag::Diagnostic` (`plugin.<kind>`). See docs/plugins.md.
#![deny(missing_docs)]

mod bindings;
pub mod builtin;
mod capped;
pub mod component;
pub mod context;
mod diag;
pub mod dispatch;
pub mod effects;
mod engine_config;
mod error;
pub mod extension;
pub mod help;
pub mod hooks;
pub mod manifest;
mod precompiled;
mod provider;
pub mod rate;
pub mod runtime;
mod scope;
pub mod search;
pub mod tools;
pub mod vcs;
mod wasm;

pub use bindings::provider::smith::plugin::host::LogLevel;
pub use component::{PluginComponent, World};
pub use diag::DIAGNOSABLE;
pub use error::{ErrorKind, Phase, PluginError};
pub use extension::{ExtensionComponent, ExtensionWorld, WasmExtension};
pub use precompiled::flush_cache_writes;
pub use provider::{
    AbortHandle, InstantiateError, ListedModel, ListedPricing, ModelPage, ProviderComponent,
    ProviderWorld, WasmProvider,
};
pub use runtime::{
    Limits, PageAligned, Precompiled, PrecompiledBlob, Runtime, Stored, compile_count,
    compile_count_on_this_thread, precompiled_load_count, precompiled_load_count_on_this_thread,
};
pub use search::{
    SearchComponent, SearchEntry, SearchLoader, SearchProviders, SearchWorld, WasmSearch,
};
pub use wasm::{
    ComponentFrame, Embedded, OwnedWasm, Wasm, component_hash_count_on_this_thread,
    embedded_read_count_on_this_thread,
};

/// The WIT source of `smith:plugin@1`, file name and text, as embedded.
pub const WIT: &[(&str, &str)] = &[
    ("host.wit", include_str!("../wit/host.wit")),
    ("provider.wit", include_str!("../wit/provider.wit")),
    ("extension.wit", include_str!("../wit/extension.wit")),
    ("provide.wit", include_str!("../wit/provide.wit")),
    ("worlds.wit", include_str!("../wit/worlds.wit")),
    ("search.wit", include_str!("../wit/search.wit")),
];

/// The directory build.rs built the guest components into (the built-ins,
/// the example and the test guests), inside this build's target directory.
/// The binary embeds the built-ins and never reads it; tests load their
/// test guests (`smith_plugin_hostile.wasm`, `smith_plugin_probe.wasm`,
/// `smith_plugin_stuck.wasm`) from it.
pub const GUEST_DIR: &str = env!("SMITH_PLUGIN_GUESTS");

/// The API generation this host implements (`smith:plugin@1`).
pub const API_GENERATION: u32 = 1;
