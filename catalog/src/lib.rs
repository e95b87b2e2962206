//! Model vocabulary, the reviewed model catalog, capability gating, routing
//! and failover.
//!
//! This crate holds the vendor-agnostic knowledge smith keeps about models:
//!
//! - [`model`]: what a model supports ([`ModelInfo`]). Every capability is
//!   an `Option`, so unknown stays unknown and is never read as "no" or 0.
//! - [`parse`]: the human-readable catalog format (KDL) and its validation.
//!   The reviewed catalog, `data/models.kdl`, is embedded with
//!   `include_str!` and returned by [`bundled`]; a test fails on any invalid
//!   entry.
//! - [`catalog`]: the live [`Catalog`]. It merges user entries, the bundled
//!   catalog and provider refreshes (or their cache) into immutable,
//!   generation-numbered [`Snapshot`]s with per-field provenance and a list
//!   of conflicts. Refreshes run on their own threads, can be cancelled,
//!   publish whole snapshots or nothing, and are rejected when stale.
//! - [`cache`]: provider data from earlier refreshes, saved and loaded
//!   atomically, one JSON file per provider.
//! - [`gate`]: checks what a request needs ([`RequestNeeds`]) against what
//!   its model advertises, degrading optional behavior with a warning or
//!   failing before dispatch.
//! - [`route`]: aliases, groups and account buckets, resolved to an
//!   ordered target list without network access.
//! - [`failover`]: the retry and failover decision for each kind of failure.
#![deny(missing_docs)]

pub mod cache;
pub mod catalog;
pub mod failover;
pub mod gate;
pub mod model;
pub mod parse;
pub mod route;

pub use catalog::{
    CancelToken, Catalog, Conflict, Entry, RefreshHandle, RefreshOutcome, RefreshTicket,
    RuntimeData, Snapshot, Source, unix_now,
};
pub use gate::{Gated, RequestNeeds, gate};
pub use model::{CacheBehavior, Field, ModelInfo, Pricing, ThinkingLevel};
pub use parse::{parse_catalog, parse_user_file, render_catalog};
pub use route::{Bucket, Routes, Target};

use smith_diag::Diagnostic;

/// The reviewed catalog's text, as checked in.
pub const BUNDLED_TEXT: &str = include_str!("../data/models.kdl");

/// The path the bundled catalog is reported under in diagnostics.
pub const BUNDLED_ORIGIN: &str = "catalog/data/models.kdl (bundled)";

/// The reviewed catalog, parsed.
///
/// # Errors
///
/// Only if the checked-in file is invalid, which the crate's tests rule out.
pub fn bundled() -> Result<Vec<ModelInfo>, Diagnostic> {
    parse_catalog(BUNDLED_TEXT, std::path::Path::new(BUNDLED_ORIGIN))
}
