//! Host bindings generated from plugins/wit by wasmtime's `bindgen!`.
#![allow(missing_docs, clippy::all)]

/// The `provider-plugin` world.
pub mod provider {
    wasmtime::component::bindgen!({
        world: "provider-plugin",
        path: "wit",
    });
}

/// The `extension-plugin` world; it shares the `host` interface with the
/// provider world.
pub mod extension {
    wasmtime::component::bindgen!({
        world: "extension-plugin",
        path: "wit",
        additional_derives: [PartialEq],
        with: {
            "smith:plugin/host": crate::bindings::provider::smith::plugin::host,
        },
    });
}
