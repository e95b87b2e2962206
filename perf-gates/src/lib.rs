//! Performance gates: the representative-entry generator, divan benchmarks
//! and the gate table behind `smith bench`.
//!
//! smith states its speed promises as numbers (the spec: "encoding 1,000
//! representative session entries completes within 5 ms"), and this crate
//! turns each into a *gate*: a measurement with limits that either holds or
//! fails the build.
//!
//! - [`entries`] fixes what "representative" means: a seeded, deterministic
//!   generator of coding-agent session entries (user and assistant text,
//!   tool calls with nested arguments, tool results) and their canonical
//!   CBOR encoding through `smith-codec`.
//! - [`measure`] takes timings that survive a noisy machine: batched
//!   samples, the subject interleaved with its floor, medians.
//! - [`gate`] defines a gate (name, metric, unit, limits, floor, runner),
//!   judges measurements against limits, and renders the report as text or
//!   JSON.
//! - [`table`] is the gate table itself and the runners behind it; a gate
//!   that fails is measured again, up to [`gate::ROUNDS`] rounds in all,
//!   and passes if any round does.
//! - [`load`] reads what else the machine ran during a measurement, which
//!   the report prints beside the gates that need more than one core.
//!
//! Every timing gate is compared with a *floor* measured in the same run
//! (for byte work, a memcpy of the same bytes), so a ratio says how far the
//! code is from the cheapest thing the machine can do with that data, on
//! this machine, right now. The divan benchmarks in `benches/` measure the
//! same operations for exploration (`cargo bench -p smith-perf`).
#![deny(missing_docs)]

pub mod conversation;
pub mod entries;
pub mod flood_gates;
pub mod gate;
pub mod load;
pub mod machine;
pub mod measure;
pub mod permission_gates;
pub mod plugin_gates;
pub mod resume_gates;
pub mod rng;
pub mod sandbox_gates;
pub mod secret_gates;
pub mod session_gates;
pub mod store_gates;
pub mod table;
pub mod tui_gates;
pub mod vcs_gates;

pub use gate::{
    Gate, GateError, Limit, Measurement, Note, ROUNDS, Report, Round, Row, Unit, Verdict, evaluate,
};
pub use load::Load;
pub use machine::Machine;
pub use measure::Plan;
pub use table::{Context, Corpus, all_gates, run};

/// The running executable, which gates that launch smith as a child
/// process (`what` they do with it, for the error) need to be `smith`.
///
/// # Errors
/// When the executable cannot be found or is not `smith` (the gates run
/// from another binary than `smith bench`).
pub(crate) fn smith_exe(what: &str) -> Result<std::path::PathBuf, GateError> {
    let exe = std::env::current_exe().map_err(|e| {
        GateError::new(format!(
            "could not find the running executable to launch: {e}"
        ))
    })?;
    if exe.file_stem().and_then(|s| s.to_str()) != Some("smith") {
        return Err(GateError::new(format!(
            "{what} the running executable, but it is {}, not smith; run them from the `smith` binary (`smith bench`)",
            exe.display()
        )));
    }
    Ok(exe)
}
