//! Credential mechanics: sources, the locked auth store, resolution before
//! dispatch, renewal.
//!
//! smith knows no vendor here. Provider descriptions supply [`Slot`]s — a
//! provider, a slot name, the environment variables that may hold it and
//! whether it is an API key or an OAuth token — and this crate finds the
//! value:
//!
//! - [`Resolver`] looks in explicit configuration, then the slot's
//!   environment variables, then smith's [`AuthStore`], then provider
//!   plugins ([`PluginSource`]). It runs before dispatch and needs no model
//!   request, so `smith auth check` can use it alone. Expired OAuth tokens
//!   with a refresh token are renewed through the provider's [`Refresher`]
//!   first, against an injectable [`Clock`].
//! - [`AuthStore`] is a private JSON file (mode 0600) replaced atomically
//!   and changed only by locked read-modify-write of one entry, so
//!   concurrent changes to different providers never lose each other.
//! - Values are held as [`Secret`]s: registered with
//!   [`smith_diag::secrets`] the moment they are read, so no diagnostic
//!   rendering can show them, and printed as `[redacted]` by `Debug` and
//!   `Display`. Status reports carry origins, kinds and expiry, never values.
#![deny(missing_docs)]

mod resolve;
mod secret;
pub mod store;

pub use resolve::{
    Clock, Origin, PluginSource, Refresher, Resolved, Resolver, SlotStatus, SystemClock,
};
pub use secret::{Credential, CredentialKind, OAuthToken, Secret, Slot};
pub use store::AuthStore;
