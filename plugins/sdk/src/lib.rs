//! The smith plugin SDK: everything a plugin author needs to write a
//! `smith:plugin@1` component in Rust.
//!
//! A plugin is a `cdylib` crate built for `wasm32-wasip2`. It implements one
//! world's export trait and names its implementation with the world's
//! export macro:
//!
//! ```ignore
//! use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
//!
//! struct Hello;
//!
//! impl ext::Guest for Hello {
//!     fn contributions() -> ext::Contributions { /* ... */ }
//!     fn run_command(name: String, argument: String) -> Result<Vec<ext::Action>, String> { /* ... */ }
//!     fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult { ext::HandlerResult::None }
//! }
//!
//! smith_plugin_sdk::extension::export_extension!(Hello);
//! ```
//!
//! Enable exactly one of the cargo features `provider` or `extension`: each
//! embeds its world's type information into the component, and a component
//! implements one world.
//!
//! The host services (`log`, `cancelled`, and the capability-checked
//! effects `read_file` and `http_request`) are in [`host`]. See
//! docs/plugins.md for the walkthrough: write, build, install, test.
#![deny(missing_docs)]

#[cfg(all(feature = "provider", feature = "extension"))]
compile_error!(
    "enable exactly one of the features `provider` and `extension`: a plugin implements one world"
);

/// Bindings of the `provider-plugin` world (cargo feature `provider`): implement
/// `provider::exports::smith::plugin::provider::Guest` and call
/// `provider::export_provider!`.
#[cfg(feature = "provider")]
#[allow(missing_docs)]
pub mod provider {
    wit_bindgen::generate!({
        world: "provider-plugin",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::provider",
        pub_export_macro: true,
        export_macro_name: "export_provider",
    });
}

/// Bindings of the `extension-plugin` world (cargo feature `extension`): implement
/// `extension::exports::smith::plugin::extension::Guest` and call
/// `extension::export_extension!`.
#[cfg(feature = "extension")]
#[allow(missing_docs)]
pub mod extension {
    wit_bindgen::generate!({
        world: "extension-plugin",
        path: "../wit",
        default_bindings_module: "smith_plugin_sdk::extension",
        pub_export_macro: true,
        export_macro_name: "export_extension",
    });
}

/// Host services every plugin may call.
pub mod host {
    #[cfg(feature = "extension")]
    use crate::extension::smith::plugin::host as raw;
    #[cfg(all(feature = "provider", not(feature = "extension")))]
    use crate::provider::smith::plugin::host as raw;

    pub use raw::{EffectError, HttpResponse, LogLevel};

    /// Reads a file inside a folder the manifest grants with `fs-read`
    /// (`path` is relative to the plugin's data folder). Denied without the
    /// grant: the error names the missing manifest line.
    pub fn read_file(path: &str) -> Result<Vec<u8>, EffectError> {
        raw::read_file(path)
    }

    /// Sends one HTTP request through smith's HTTP engine; needs `net HOST`
    /// for the URL's host. Returns the complete response.
    pub fn http_request(
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<HttpResponse, EffectError> {
        raw::http_request(method, url, headers, body)
    }

    /// Writes a debug line to smith's log.
    pub fn debug(message: &str) {
        raw::log(LogLevel::Debug, message);
    }

    /// Writes an info line to smith's log.
    pub fn info(message: &str) {
        raw::log(LogLevel::Info, message);
    }

    /// Writes a warning line to smith's log.
    pub fn warn(message: &str) {
        raw::log(LogLevel::Warn, message);
    }

    /// Writes an error line to smith's log.
    pub fn error(message: &str) {
        raw::log(LogLevel::Error, message);
    }

    /// Whether the host asked the current call to stop; long work polls
    /// this and returns early.
    pub fn cancelled() -> bool {
        raw::cancelled()
    }
}
