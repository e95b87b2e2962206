//! `smith bench`: runs the performance gate table in-process and judges it.
//!
//! The gates, their limits and the measuring discipline live in
//! `smith-perf`; this command picks the plan, prints the report and turns
//! the verdict into the exit status (0 when every gate passed, 1 when any
//! failed). It must run inside this binary: the allocation gate counts
//! through the accounting allocator installed as the global allocator here.

use std::io::Write as _;

use anyhow::Context as _;

/// Run the performance gates and report medians, limits and floor ratios.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Fewer, shorter samples (for CI); still a real measurement.
    #[arg(long)]
    pub quick: bool,
    /// Print the report as JSON (one object) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run only the gates whose name contains this text (e.g. `codec.`).
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
}

/// Runs the gates; returns 0 when all passed, 1 when any failed.
///
/// # Errors
///
/// When `--only` matches no gate, or the report cannot be written to
/// standard output.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let plan = if args.quick {
        smith_perf::Plan::QUICK
    } else {
        smith_perf::Plan::FULL
    };
    let all = smith_perf::all_gates();
    let gates: Vec<smith_perf::Gate> = match &args.only {
        Some(text) => all
            .iter()
            .filter(|g| g.name.contains(text.as_str()))
            .copied()
            .collect(),
        None => all.clone(),
    };
    if gates.is_empty() {
        let names: Vec<&str> = all.iter().map(|g| g.name).collect();
        anyhow::bail!(
            "--only {:?} matches no gate; pass part of one of these names: {}",
            args.only.unwrap_or_default(),
            names.join(", ")
        );
    }
    let report = smith_perf::run(&gates, plan);
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report.to_json())
            .context("could not serialize the bench report as JSON")?;
        s.push('\n');
        s
    } else {
        report.to_text()
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("could not write the bench report to standard output")?;
    Ok(report.exit_code())
}
