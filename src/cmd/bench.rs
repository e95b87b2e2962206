//! `smith bench`: runs the performance gate table in-process and judges it.
//!
//! The gates, their limits and the measuring discipline live in
//! `smith-perf` (including the rounds: a gate that fails is measured again,
//! up to three rounds, and passes if any round passes); this command picks
//! the plan, prints the report and turns the verdict into the exit status
//! (0 when every gate passed, 1 when any failed). It must run inside this binary: the allocation gate counts
//! through the accounting allocator installed as the global allocator here.

use std::io::Write as _;

use anyhow::Context as _;
use smith_diag::{Diagnostic, Surface};

/// Run the performance gates and report medians, limits and floor ratios.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Fewer, shorter samples (for CI); still a real measurement. Takes
    /// the quick plan's own sample count whatever `bench.samples` says.
    #[arg(long, conflicts_with = "smoke")]
    pub quick: bool,
    /// Runs every gate once over small fixtures (session files divided by
    /// 1,024, trees by 100) with three short samples: checks in seconds
    /// that every gate runs and reports. Its figures measure nothing about
    /// smith's speed; use the default plan or `--quick` for that.
    #[arg(long)]
    pub smoke: bool,
    /// Print the report as JSON (one object) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run only the gates whose name contains this text (e.g. `codec.`).
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// A gate known to fail (an open problem): it is still measured and
    /// reported as FAIL, but does not set the exit status. Repeatable; the
    /// name must be an exact gate name. When such a gate passes, the report
    /// says so, so the flag can be dropped.
    #[arg(long, value_name = "GATE")]
    pub expect_fail: Vec<String>,
}

/// Runs the gates; returns 0 when all passed, 1 when any failed.
///
/// # Errors
///
/// When `--only` matches no gate, or the report cannot be written to
/// standard output.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let plan = if args.smoke {
        smith_perf::Plan::SMOKE
    } else {
        crate::settings::bench_plan(crate::settings::config()?, args.quick)
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
        let only = args.only.unwrap_or_default();
        return Err(Diagnostic::error(
            "bench.unknown-gate",
            format!("--only {only:?} matches no gate"),
            "`--only` runs the gates whose names contain its text",
            format!("pass part of one of these names: {}", names.join(", ")),
        )
        .with_value(format!("{only:?}"))
        .with_surface(Surface::flag("--only"))
        .into());
    }
    if let Some(unknown) = args
        .expect_fail
        .iter()
        .find(|name| !all.iter().any(|g| g.name == name.as_str()))
    {
        let names: Vec<&str> = all.iter().map(|g| g.name).collect();
        return Err(Diagnostic::error(
            "bench.unknown-gate",
            format!("--expect-fail {unknown:?} names no gate"),
            "`--expect-fail` takes a gate's exact name, so this one would excuse nothing",
            format!("pass one of these exact names: {}", names.join(", ")),
        )
        .with_value(format!("{unknown:?}"))
        .with_surface(Surface::flag("--expect-fail"))
        .into());
    }
    let report = smith_perf::run(&gates, plan);
    let verdict = judge(&report, &args.expect_fail);
    let mut text = if args.json {
        let mut json = report.to_json();
        if let Some(object) = json.as_object_mut() {
            object.insert(
                "expect_fail".to_owned(),
                serde_json::Value::from(args.expect_fail.clone()),
            );
            object.insert(
                "exit_code".to_owned(),
                serde_json::Value::from(verdict.exit_code),
            );
        }
        let mut s = serde_json::to_string_pretty(&json)
            .context("could not serialize the bench report as JSON")?;
        s.push('\n');
        s
    } else {
        report.to_text()
    };
    if !args.json {
        text.push_str(&verdict.summary);
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("could not write the bench report to standard output")?;
    Ok(verdict.exit_code)
}

/// The exit status once known failures are set aside, and what to say
/// about them.
struct Verdict {
    exit_code: u8,
    summary: String,
}

/// Judges a report: any failing gate not named in `expected` fails the run;
/// a named gate that fails is reported as a known failure; a named gate that
/// passes is reported so its name can be removed.
fn judge(report: &smith_perf::Report, expected: &[String]) -> Verdict {
    let mut unexpected = 0usize;
    let mut summary = String::new();
    for row in &report.rows {
        let named = expected.iter().any(|n| n.as_str() == row.gate.name);
        match (row.verdict.passed, named) {
            (false, false) => unexpected += 1,
            (false, true) => summary.push_str(&format!(
                "\nknown failure: {} still fails; it is an open problem, measured and \
                 reported here but not counted in the exit status (--expect-fail)\n",
                row.gate.name
            )),
            (true, true) => summary.push_str(&format!(
                "\n{} now passes: drop `--expect-fail {}` so it counts again\n",
                row.gate.name, row.gate.name
            )),
            (true, false) => {}
        }
    }
    Verdict {
        exit_code: u8::from(unexpected > 0),
        summary,
    }
}

#[cfg(test)]
mod tests {
    use smith_perf::{Gate, GateError, Limit, Measurement, Plan, Report, Unit};

    use super::judge;

    fn never_run(_: &mut smith_perf::Context) -> Result<Measurement, GateError> {
        unreachable!("judging tests inject their measurements")
    }

    const fn gate(name: &'static str) -> Gate {
        Gate {
            name,
            metric: "allocations",
            unit: Unit::Count,
            limits: &[Limit::AtMost(0.0)],
            floor: None,
            run: never_run,
            cores: 1,
        }
    }

    fn counted(n: f64) -> Result<Measurement, GateError> {
        Ok(Measurement {
            median: n,
            floor: None,
            samples: 1,
            notes: Vec::new(),
        })
    }

    fn report(a: f64, b: f64) -> Report {
        Report::from_outcomes(
            Plan::QUICK,
            [(gate("t.a"), counted(a)), (gate("t.b"), counted(b))],
        )
    }

    #[test]
    fn an_unexpected_failure_sets_the_exit_status() {
        assert_eq!(judge(&report(0.0, 1.0), &[]).exit_code, 1);
        assert_eq!(judge(&report(1.0, 1.0), &["t.b".to_owned()]).exit_code, 1);
        assert_eq!(judge(&report(0.0, 0.0), &[]).exit_code, 0);
    }

    #[test]
    fn an_expected_failure_is_reported_but_not_counted() {
        let v = judge(&report(0.0, 1.0), &["t.b".to_owned()]);
        assert_eq!(v.exit_code, 0);
        assert!(
            v.summary.contains("known failure: t.b still fails"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn an_expected_failure_that_passes_says_to_drop_the_flag() {
        let v = judge(&report(0.0, 0.0), &["t.b".to_owned()]);
        assert_eq!(v.exit_code, 0);
        assert!(v.summary.contains("t.b now passes"), "{}", v.summary);
    }
}
