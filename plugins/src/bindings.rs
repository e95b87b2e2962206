//! Host bindings generated from plugins/wit by wasmtime's `bindgen!`.
#![allow(missing_docs, clippy::all)]

/// The `provider-plugin` world.
pub mod provider {
    wasmtime::component::bindgen!({
        world: "provider-plugin",
        path: "wit",
        with: {
            "smith:plugin/host.server-process": crate::effects::ServerProcess,
        },
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

/// The optional `media` export of a `media-provider-plugin` component,
/// looked up on an instantiated provider component.
pub mod media {
    wasmtime::component::bindgen!({
        world: "media-exports",
        path: "wit",
    });
}

/// The optional `provide` exports of a `full-extension-plugin` component,
/// looked up on an instantiated extension component.
pub mod provide {
    wasmtime::component::bindgen!({
        world: "provide-exports",
        path: "wit",
        additional_derives: [PartialEq],
    });
}

/// The `search-provider-plugin` world; it shares the `host` interface (and
/// its `search-hit` record) with the provider world.
pub mod search {
    wasmtime::component::bindgen!({
        world: "search-provider-plugin",
        path: "wit",
        with: {
            "smith:plugin/host": crate::bindings::provider::smith::plugin::host,
        },
    });
}
