//! smith's fullscreen terminal interface.
//!
//! An immediate-mode renderer: the [`App`] model is updated by terminal and
//! agent events; each frame [`App::prepare`] lays the screen out (measuring
//! only what is visible) and [`App::render`] draws it into a [`Buffer`] of
//! cells, using a per-frame [`bumpalo::Bump`] for scratch text. The
//! [`diff`] of the previous and the new buffer is what reaches the
//! terminal: only changed cells are written.
//!
//! * [`sanitize`] — every drawn string loses ESC sequences and C0/C1
//!   controls, so model text, tool output and render descriptions can never
//!   drive the terminal.
//! * [`buffer`], [`diff`], [`layout`], [`wrap`], [`style`] — the
//!   deterministic core: cells, the changed-cell writer, rectangles and the
//!   vertical split, line wrapping shared by measuring and drawing.
//! * [`transcript`] — the entry table with its width-keyed height cache,
//!   scroll anchoring and search; entries hold their text (local) or refer
//!   to a session's records ([`session`]), decoded only when drawn.
//! * [`render`] — Markdown for assistant text, unified diffs with line
//!   numbers for tool output, code fences highlighted: computed once per
//!   entry and cached by the transcript.
//! * [`editor`] — the multi-line input with history and paste.
//! * [`app`] — keys, overlays (help, search, pickers, project trust, confirm and input
//!   intents), the command popup, `@` path completion and the status line.
//! * [`product`] — the layout, themes, key bindings, commands and tool
//!   presentation, validated and merged from the plugins' contributions
//!   ([`product::ProductSpec`]), built once and cached.
//! * [`fixture`] — smith/product's contribution as a description, for
//!   tests and benchmarks without the plugin host (proved equal to the
//!   plugin's by a test in the binary).
//! * [`headless`] — renders to a buffer for golden snapshots.
//! * [`term`] — the crossterm terminal: raw mode, alternate screen,
//!   bracketed paste, focus events, synchronized output, a bounded
//!   capability probe, and restoring the terminal on every exit path.
//! * [`run`] — the event loop with input on its own thread.
//! * `bench_support` (with the `bench` feature) — the frame workloads
//!   behind the benchmarks and `smith bench`'s TUI gates.
#![deny(missing_docs)]

pub mod app;
#[cfg(feature = "bench")]
pub mod bench_support;
pub mod buffer;
mod diag;
pub mod diff;
pub mod editor;
pub mod fixture;
pub mod headless;
pub mod layout;
pub mod product;
pub mod render;
pub mod run;
pub mod sanitize;
pub mod session;
pub mod signals;
pub mod style;
pub mod term;
pub mod transcript;
pub mod wrap;

pub use app::{App, Options, Output, Overlay, Picker, Status, Tree, TreeRow, Widget};
pub use buffer::{Buffer, Cell};
/// The terminal library whose events [`App::handle`] takes, so hosts can
/// build them without depending on it themselves.
pub use crossterm;
pub use diag::DIAGNOSABLE;
pub use product::{Product, ProductError, ProductSpec};
pub use transcript::Transcript;
