//! Live providers in the native host.
//!
//! [`LiveProvider`] implements the engine's provider contract for the
//! built-in vendors (Anthropic, OpenAI, Google, OpenAI-compatible): it
//! resolves the model through the catalog's routes, gates each request on
//! the model's advertised capabilities, checks credentials before dispatch,
//! and encodes and decodes with the vendor adapters of `smith-providers`.
//! [`NetTransport`] carries the exchanges over the HTTP engine
//! (`smith-net`), substituting credentials at the last moment.
//! [`select`] picks the provider for a run: an explicit choice, else the
//! first provider whose credential is available, else the offline
//! scripted provider.
//!
//! The adapters' contract types mirror the engine's; the conversions live
//! in one place (`convert`).

#![deny(missing_docs)]

mod convert;
pub mod live;
pub mod select;
pub mod transport;
pub mod vendor;

pub use live::{LiveProvider, Setup, diagnostic_message, failure_of};
pub use select::{Selection, select};
pub use transport::{NetTransport, Timeouts};
pub use vendor::{Vendor, builtin_slots};
