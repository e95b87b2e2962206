//! Live providers in the native host.
//!
//! [`LiveProvider`] implements the engine's provider contract for the
//! built-in vendors (Anthropic, OpenAI, Google, OpenAI-compatible): it
//! resolves the model through the catalog's routes, gates each request on
//! the model's advertised capabilities, checks credentials before dispatch,
//! and encodes and decodes through the built-in vendor provider plugins
//! (`smith_plugins::builtin`), which wrap the adapters of `smith-providers`.
//! [`NetTransport`] carries the exchanges over the HTTP engine
//! (`smith-net`), substituting credentials at the last moment.
//! [`refresh`] asks the providers which models they serve, for the
//! catalog. [`select`] picks the provider for a run: an explicit choice, else the
//! first provider whose credential is available, else the offline
//! scripted provider.
//!
//! The host never calls an adapter itself and never hands a plugin a
//! secret: a plugin's settings carry the credential handle, and the
//! transport substitutes the value on the outgoing request.

#![deny(missing_docs)]

pub mod learned;
pub mod live;
pub mod refresh;
pub mod retry_hint;
pub mod select;
pub mod transport;
pub mod vendor;

pub use live::{LiveProvider, Setup, diagnostic_message, failure_of, provider_plugin_limits};
pub use select::{Selection, select};
pub use transport::{NetTransport, Timeouts};
pub use vendor::{Vendor, builtin_slots};
