//! The one wasmtime engine configuration smith compiles plugins with.
//!
//! Shared by the runtime (`runtime.rs`, as a module of this crate) and by
//! the build script (`build.rs`, through `#[path]`), which compiles the
//! built-in plugins ahead of time: a precompiled artifact loads only into an
//! engine whose settings match the ones it was compiled with, so both sides
//! must build their `Config` here and nowhere else. Change a setting here
//! and the build recompiles the built-ins with it (docs/plugins.md,
//! "Precompiled built-ins").

/// The engine configuration of every plugin: component model on, epoch
/// interruption for the hard call deadlines.
///
/// `target` is `None` for the runtime's engine, which Cranelift sets up for
/// the host's own processor (every feature it detects). The build script
/// passes the target triple it builds for: naming the triple turns that
/// detection off, so the built-ins are compiled for the architecture's
/// baseline and load on every processor of it; the runtime checks each
/// artifact's processor features against the machine it runs on when it
/// loads it (`Component::deserialize`) and compiles the component itself
/// when they do not fit.
///
/// # Errors
///
/// When `target` is not a triple wasmtime understands.
pub fn engine_config(target: Option<&str>) -> wasmtime::Result<wasmtime::Config> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    if let Some(target) = target {
        config.target(target)?;
    }
    Ok(config)
}
