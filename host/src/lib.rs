//! The host: what every smith frontend shares.
//!
//! smith has several frontends over one agent runtime — `smith eval` (and
//! `smith "prompt"`), the fullscreen TUI, the JSON-RPC and MCP servers and
//! `smith replay`. Each of them needs the same things before its first
//! event, and this crate is where each of those things is decided once:
//!
//! - [`settings`] — the process's configuration, loaded once, and each
//!   option a runtime needs turned into a ready value (the session
//!   directory, the HTTP timeouts, the log, the plugin limits).
//! - [`provider`] — provider selection: `--provider`, `SMITH_PROVIDER` or
//!   `provider` in `config.kdl`, the first provider with a credential, else
//!   the offline scripted provider ([`mock`]); the model, its catalog
//!   ([`catalog`]) and the HTTP engine.
//! - [`session`] — the session destination that records every effect
//!   before it runs: new, resumed or temporary.
//! - [`context`] — the request context: the system prompt, assembled from
//!   the loaded plugins' fragments, and the tool definitions' share.
//! - [`secrets`] — every credential smith can see, registered so the
//!   runtime replaces it with a placeholder before anything is sent to a
//!   provider, recorded or shown.
//! - [`plugins`] and [`extensions`] — plugin discovery and the extension
//!   plugins a runtime loads, wired to the frontend's surface.
//! - [`plugin_config`] — the plugins' configuration contributions and the
//!   `config-get` / `config-set` view a runtime gives them.
//! - [`runtime`] — starting the agent: [`RuntimeOptions::start`] takes a
//!   provider and a session choice to a running [`Runtime`]; every
//!   frontend starts its runtimes this way.
//! - [`sandbox`] — the sandbox a runtime's tools and plugin processes run
//!   in while the approval mode is sandboxed: write roots, read-denied
//!   paths and the network from the configuration.
//! - [`questions`] — where plugins' questions that wait go: a broker of
//!   pending questions for frontends with a user, a policy for those
//!   without.
//! - [`checkpoints`] — garbage collection of the projects' checkpoint
//!   stores when sessions are deleted or pruned.
//! - [`output`] — how the headless frontends print events, usage, results
//!   and exit codes.
//! - [`stream_json`] — Claude Code's headless output shapes
//!   (`--output-format stream-json` / `json`), mapped from runtime events,
//!   and its `--input-format stream-json` user messages.
//!
//! The binary parses the command line and calls in here; the protocol
//! servers (`smith-rpc`) start their runtimes through [`runtime`].

#![deny(missing_docs)]

pub mod agents;
pub mod catalog;
pub mod checkpoints;
pub mod context;
pub mod extensions;
pub mod marketplace;
pub mod mock;
pub mod output;
pub mod plugin_config;
pub mod plugins;
pub mod provider;
pub mod questions;
pub mod runtime;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod stream_json;

pub use provider::{Chosen, LiveChoice, choose_live, choose_provider};
/// The thinking level of a live provider, shared with its frontend.
pub mod thinking {
    pub use smith_catalog::ThinkingLevel;
    pub use smith_provider_host::thinking::{
        LEVEL_NAMES, Offered, ThinkingDial, level_name, parse_level,
    };
}
pub use runtime::{
    Extensions, Live, LiveProviders, Runtime, RuntimeOptions, StartError, SurfaceFn,
};
pub use session::{Destination, SessionChoice, SessionError};
