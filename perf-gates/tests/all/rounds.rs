//! The round logic of `smith bench`, with injected measurements (nothing is
//! timed): a failing gate is measured again, up to `ROUNDS` rounds in all;
//! it passes if any round passes, and every round's figure is reported.

use smith_perf::{Context, Gate, GateError, Limit, Load, Measurement, Plan, ROUNDS, Report, Unit};

fn never_run(_: &mut Context) -> Result<Measurement, GateError> {
    Err(GateError::new("injected rounds are judged, not run"))
}

const LOAD: Gate = Gate {
    name: "test.load",
    metric: "a two-thread load over a one-thread read",
    unit: Unit::Nanoseconds,
    limits: &[Limit::RatioAtMost(1.0 / 0.9)],
    floor: Some("a plain read"),
    run: never_run,
    cores: 2,
};

const COUNT: Gate = Gate {
    name: "test.count",
    metric: "allocations",
    unit: Unit::Count,
    limits: &[Limit::AtMost(0.0)],
    floor: None,
    run: never_run,
    cores: 1,
};

fn ratio(r: f64) -> Result<Measurement, GateError> {
    Ok(Measurement {
        // A whole number of 0.1 ms, so the ratio is exactly `r` as written.
        median: (r * 100.0).round() * 100_000.0,
        floor: Some(10_000_000.0),
        samples: 21,
        notes: Vec::new(),
    })
}

fn busy(others: f64) -> Option<Load> {
    Some(Load {
        others_busy_cores: others,
        cpus: 2,
        loadavg_1m: others * 2.0,
        seconds: 1.5,
        core_speed: None,
    })
}

/// Measures `gates` with the figures of `script` in order, one per round,
/// and records which gate and round each call was for.
fn scripted(
    gates: &[Gate],
    script: Vec<(Result<Measurement, GateError>, Option<Load>)>,
) -> (Report, Vec<(&'static str, usize)>) {
    let mut script = script.into_iter();
    let mut calls = Vec::new();
    let report = Report::measured(Plan::QUICK, gates, ROUNDS, |gate, round| {
        calls.push((gate.name, round));
        script
            .next()
            .expect("the script has a figure for every round")
    });
    assert!(script.next().is_none(), "every scripted round was measured");
    (report, calls)
}

#[test]
fn three_rounds_at_most() {
    assert_eq!(ROUNDS, 3);
}

#[test]
fn a_gate_that_passes_at_once_is_measured_once() {
    let (report, calls) = scripted(&[LOAD], vec![(ratio(0.85), busy(0.1))]);
    assert_eq!(calls, [("test.load", 1)]);
    assert!(report.passed());
    assert_eq!(report.rows[0].rounds.len(), 1);
    let text = report.to_text();
    assert!(text.contains("0.85x"), "{text}");
    assert!(!text.contains("round 1:"), "{text}");
}

#[test]
fn a_gate_whose_first_rounds_fail_and_last_passes_passes() {
    let (report, calls) = scripted(
        &[LOAD, COUNT],
        vec![
            (ratio(1.38), busy(1.7)),
            (
                Ok(Measurement {
                    median: 0.0,
                    floor: None,
                    samples: 1,
                    notes: vec![],
                }),
                None,
            ),
            (ratio(1.25), busy(1.2)),
            (ratio(0.91), busy(0.05)),
        ],
    );
    // Rounds are passes over the table: the count's only round comes
    // between the load gate's first and second.
    assert_eq!(
        calls,
        [
            ("test.load", 1),
            ("test.count", 1),
            ("test.load", 2),
            ("test.load", 3)
        ]
    );
    assert!(report.passed());
    assert_eq!(report.exit_code(), 0);
    let row = &report.rows[0];
    assert!(row.verdict.passed && row.verdict.failures.is_empty());
    assert_eq!(row.rounds.len(), 3);
    assert_eq!(
        row.rounds
            .iter()
            .map(|r| r.verdict.passed)
            .collect::<Vec<_>>(),
        [false, false, true]
    );
    // The deciding round is the one that passed.
    assert_eq!(
        row.outcome.as_ref().ok().and_then(Measurement::ratio),
        Some(0.91)
    );

    let text = report.to_text();
    assert!(
        text.contains("up to 3 rounds in all, and passes if any round passes"),
        "{text}"
    );
    assert!(text.contains("pass in round 3"), "{text}");
    assert!(
        text.contains("round 1: 13.800 ms (1.38x the floor), FAIL (others busy 1.70 of 2 cores"),
        "{text}"
    );
    assert!(
        text.contains("round 2: 12.500 ms (1.25x the floor), FAIL"),
        "{text}"
    );
    assert!(
        text.contains("round 3: 9.100 ms (0.91x the floor), pass"),
        "{text}"
    );
    assert!(
        text.contains("needs 2 free cores; load: others busy 0.05 of 2 cores, load average 0.10"),
        "{text}"
    );
    assert!(text.contains("all 2 gates passed"), "{text}");

    let json = report.to_json();
    assert_eq!(json["plan"]["max_rounds"], 3);
    let g = &json["gates"][0];
    assert_eq!(g["passed"], true);
    assert_eq!(g["cores"], 2);
    assert_eq!(g["ratio"], 0.91);
    assert_eq!(g["load"]["others_busy_cores"], 0.05);
    let free = g["load"]["free_cores"].as_f64().unwrap();
    assert!((free - 1.95).abs() < 1e-9, "{free}");
    let rounds = g["rounds"].as_array().unwrap();
    let ratios: Vec<f64> = rounds
        .iter()
        .map(|r| r["ratio"].as_f64().unwrap())
        .collect();
    assert_eq!(ratios, [1.38, 1.25, 0.91]);
    assert_eq!(rounds[0]["passed"], false);
    assert_eq!(rounds[0]["load"]["others_busy_cores"], 1.7);
    assert_eq!(rounds[2]["passed"], true);
    let count = &json["gates"][1];
    assert_eq!(count["rounds"].as_array().unwrap().len(), 1);
    assert!(count["load"].is_null());
}

#[test]
fn a_gate_that_fails_all_three_rounds_fails_and_reports_three_figures() {
    let (report, calls) = scripted(
        &[LOAD],
        vec![
            (ratio(1.38), busy(1.9)),
            (ratio(1.39), busy(1.8)),
            (ratio(1.52), busy(0.0)),
        ],
    );
    assert_eq!(calls.len(), 3);
    assert!(!report.passed());
    assert_eq!(report.exit_code(), 1);
    let row = &report.rows[0];
    assert_eq!(row.rounds.len(), 3);
    let f = &row.verdict.failures;
    assert_eq!(f.len(), 3, "{f:?}");
    for (i, r) in ["1.38x", "1.39x", "1.52x"].iter().enumerate() {
        assert!(
            f[i].starts_with(&format!("round {} of 3: test.load: {r} the floor", i + 1)),
            "{f:?}"
        );
    }
    let text = report.to_text();
    assert!(text.contains("FAIL (3 rounds)"), "{text}");
    for figure in ["13.800 ms (1.38x", "13.900 ms (1.39x", "15.200 ms (1.52x"] {
        assert!(text.contains(figure), "{figure}: {text}");
    }
    assert!(text.contains("1 of 1 gates failed"), "{text}");
    assert!(
        text.contains("round 3 of 3: test.load: 1.52x the floor"),
        "{text}"
    );
    let json = report.to_json();
    let g = &json["gates"][0];
    assert_eq!(g["passed"], false);
    assert_eq!(g["failures"].as_array().unwrap().len(), 3);
    let medians: Vec<f64> = g["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["median"].as_f64().unwrap())
        .collect();
    assert_eq!(medians, [13_800_000.0, 13_900_000.0, 15_200_000.0]);
}

#[test]
fn an_error_is_a_failing_round_and_is_measured_again() {
    let (report, calls) = scripted(
        &[COUNT],
        vec![
            (
                Err(GateError::new("the fixture could not be written")),
                None,
            ),
            (
                Ok(Measurement {
                    median: 0.0,
                    floor: None,
                    samples: 1,
                    notes: vec![],
                }),
                None,
            ),
        ],
    );
    assert_eq!(calls, [("test.count", 1), ("test.count", 2)]);
    assert!(report.passed());
    let text = report.to_text();
    assert!(
        text.contains("round 1: could not measure (the fixture could not be written), FAIL"),
        "{text}"
    );
    assert!(text.contains("round 2: 0, pass"), "{text}");
}

#[test]
fn rounds_are_passes_over_the_table_so_a_gates_rounds_are_apart() {
    // Round 1: the first load gate fails, the count passes, the second
    // load gate fails. Round 2 measures only the two that failed, in table
    // order: the first passes, the second fails again. Round 3 measures
    // the second alone, which fails its last round.
    let passing_count = Ok(Measurement {
        median: 0.0,
        floor: None,
        samples: 1,
        notes: Vec::new(),
    });
    let (report, calls) = scripted(
        &[LOAD, COUNT, LOAD],
        vec![
            (ratio(1.5), busy(0.0)),
            (passing_count, None),
            (ratio(1.4), busy(0.0)),
            (ratio(0.9), busy(0.0)),
            (ratio(1.3), busy(0.0)),
            (ratio(1.2), busy(0.0)),
        ],
    );
    assert_eq!(
        calls,
        [
            ("test.load", 1),
            ("test.count", 1),
            ("test.load", 1),
            ("test.load", 2),
            ("test.load", 2),
            ("test.load", 3),
        ]
    );
    let rounds: Vec<(usize, bool)> = report
        .rows
        .iter()
        .map(|r| (r.rounds.len(), r.verdict.passed))
        .collect();
    assert_eq!(rounds, [(2, true), (1, true), (3, false)]);
    assert!(!report.passed());
}

fn contended(speed: f64) -> Option<Load> {
    Some(Load {
        others_busy_cores: 0.0,
        cpus: 2,
        loadavg_1m: 0.5,
        seconds: 1.5,
        core_speed: Some(speed),
    })
}

#[test]
fn a_failed_round_on_a_contended_core_is_measured_again_without_counting() {
    let (report, calls) = scripted(
        &[LOAD],
        vec![
            (ratio(1.45), contended(0.55)),
            (ratio(1.30), contended(0.95)),
            (ratio(1.25), contended(0.97)),
            (ratio(0.90), contended(0.99)),
        ],
    );
    // The first round's core ran at 0.55 of its best: it does not count,
    // so the gate gets three more rounds and passes in the fourth.
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert!(report.passed());
    let row = &report.rows[0];
    assert_eq!(row.rounds.len(), 4);
    assert!(row.rounds[0].contended());
    assert!(!row.rounds[1].contended() && !row.rounds[3].contended());
    let text = report.to_text();
    assert!(
        text.contains(
            "round 1: 14.500 ms (1.45x the floor), FAIL (others busy 0.00 of 2 cores, load average \
             0.50, core at 0.55 of its best speed); contended core, measured again"
        ),
        "{text}"
    );
    assert!(text.contains("pass in round 4"), "{text}");
    let json = report.to_json();
    let rounds = json["gates"][0]["rounds"].as_array().unwrap();
    assert_eq!(rounds[0]["load"]["core_speed"], 0.55);
    assert_eq!(rounds[0]["load"]["contended"], true);
    assert_eq!(rounds[1]["load"]["contended"], false);
}

#[test]
fn a_gate_that_fails_on_a_free_core_fails_after_three_rounds_however_many_were_contended() {
    let (report, calls) = scripted(
        &[LOAD],
        vec![
            (ratio(1.50), contended(0.60)),
            (ratio(1.40), contended(0.90)),
            (ratio(1.45), contended(0.70)),
            (ratio(1.40), contended(0.92)),
            (ratio(1.41), contended(0.93)),
        ],
    );
    // Two contended rounds do not count; the three on a free core fail.
    assert_eq!(calls.len(), 5, "{calls:?}");
    assert!(!report.passed());
    assert_eq!(report.rows[0].verdict.failures.len(), 5);
    // A passing round on a contended core still passes: the canary never
    // turns a failure into a pass, it only asks for another measurement.
    let (report, _) = scripted(&[LOAD], vec![(ratio(0.95), contended(0.40))]);
    assert!(report.passed());
}

#[test]
fn contended_rounds_are_measured_again_at_most_as_many_times_as_rounds_count() {
    let script = (0..2 * ROUNDS)
        .map(|_| (ratio(1.60), contended(0.50)))
        .collect();
    let (report, calls) = scripted(&[LOAD], script);
    assert_eq!(calls.len(), 2 * ROUNDS);
    assert!(!report.passed());
    let text = report.to_text();
    assert!(
        text.contains(&format!("FAIL ({} rounds)", 2 * ROUNDS)),
        "{text}"
    );
}
