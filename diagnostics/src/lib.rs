//! Diagnostics: what happened, why, and what to do next, rendered for
//! terminals, JSON surfaces and plugins.
//!
//! Every user-facing error and warning in smith is a [`Diagnostic`]. A
//! diagnostic cannot be built without its three parts — *what happened*,
//! *why*, and *the next action* — because the only constructors,
//! [`Diagnostic::error`] and [`Diagnostic::warning`], take all three. On top of
//! those it may carry the offending value ([`Diagnostic::with_value`]), the
//! [`Surface`] that supplied it (a file position, an environment variable, a
//! flag, a plugin, an RPC field), the field path, and a concrete example of a
//! fix.
//!
//! # Secrets
//!
//! Secret values (API keys, tokens) are registered once with
//! [`secrets::register`]. Every rendering replaces each registered value with
//! `[redacted]`, wherever it appears: in prose, in the offending value, in a
//! file path. A value known to be secret can be attached without its content
//! at all with [`Diagnostic::with_withheld_value`].
//!
//! # Renderings
//!
//! - [`Diagnostic::render_terminal`] for people, with color only when asked
//!   ([`Style::for_stderr`] decides: stderr is a terminal and `NO_COLOR` is
//!   unset or empty);
//! - [`Diagnostic::to_json`] for JSON surfaces (RPC, `--json`);
//! - [`Diagnostic::to_plugin`] for plugins: a flat record of strings that maps
//!   one to one onto the plugin ABI, and [`Diagnostic::from_plugin`] to accept
//!   one back, refusing records that lack any of the three parts.
//!
//! # Errors that have a diagnostic
//!
//! Every error type of the smith crates implements [`Diagnose`]
//! (`to_diagnostic()`). A program finds such an error behind a
//! `dyn std::error::Error` (a cause in an `anyhow` chain) with a
//! [`Registry`], built from the [`Finder`] lists the crates export, so the
//! diagnostic reaches the reporter as a value.
//!
//! # Auditing
//!
//! When the environment variable named by [`audit::LOG_ENV`]
//! (`SMITH_DIAG_LOG`) holds a path, every diagnostic the process builds is
//! appended to that file as one JSON line when it is dropped, already
//! redacted. [`audit::audit_test_suite`] re-runs a test binary with the log
//! switched on and checks every recorded diagnostic has all three parts and
//! contains no secret the suite used; each crate's integration tests call it
//! once.
//!
//! # The product log
//!
//! [`log`] appends every diagnostic the program reports (and its notes) at or
//! above a level to a log file, one redacted line each; the file is opened on
//! the first line written.
#![deny(missing_docs)]

pub mod audit;
mod diagnose;
mod diagnostic;
#[cfg(unix)]
pub mod input;
pub mod log;
mod message;
mod render;
pub mod secrets;
pub mod suggest;
mod surface;

pub use diagnose::{Diagnose, Finder, Registry, finder};
pub use diagnostic::{Diagnostic, Severity, Value};
pub use render::{PluginDiagnostic, Style};
pub use surface::{LineCol, Surface};
