//! The agent runtime: protocol, loop, queues, built-in tools, effect journal.
//!
//! One runtime serves every mode. Frontends speak [`protocol`] (commands in,
//! lifecycle events out) to a runtime started by [`agent::spawn`], which runs
//! the loop on its own threads: it sends normalized requests through the
//! vendor-neutral [`provider`] contract, validates each response stream,
//! validates tool calls before any effect, runs [`tools`] (read-only calls in
//! parallel, mutating calls one at a time) and records every effect's intent
//! and completion, and every conversation message, through the [`journal`]
//! contracts — durably, before and after the effect; with [`checkpoint`]s
//! it snapshots the project around every mutating effect. [`replay`] plays a
//! recorded session back as the same protocol events, with no provider;
//! `bench_support` (with the `bench` feature) holds the deterministic
//! workloads the benchmarks and performance gates measure.
#![deny(missing_docs)]

pub mod agent;
pub mod approval;
#[cfg(feature = "bench")]
pub mod bench_support;
pub mod checkpoint;
pub mod checkpoint_store;
mod diag;
pub mod journal;
pub mod protocol;
pub mod provider;
pub mod replay;
pub mod tools;

pub use diag::ContractDiagnostic;
pub use diag::DIAGNOSABLE;
