//! The gate table's types: what a gate is, how a measurement is judged, and
//! the report `smith bench` prints.
//!
//! A [`Gate`] is plain data plus a runner function: its name, the metric it
//! measures, the unit, its limits, the floor it is compared with, and
//! `run`, which measures and returns a [`Measurement`]. Judging is separate
//! from measuring ([`evaluate`]), so the pass/fail logic is tested with
//! injected measurements instead of by timing anything.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::load::{CONTENDED_BELOW, Load};

use crate::measure::{Plan, Timing};
use crate::table::Context;

/// How many times a gate is measured at most: a gate that fails is
/// measured again, up to this many rounds in all, and passes if any round
/// passes. Every round's figure is reported. A noisy neighbour can slow
/// one measurement; it rarely slows three in a row, while a regression
/// fails all three.
pub const ROUNDS: usize = 3;

/// How long `smith bench` waits before measuring the gates that failed
/// again (see [`Report::measured`]): long enough for a burst of work
/// elsewhere on the machine to end, short next to a whole run.
pub const ROUND_PAUSE: Duration = Duration::from_secs(20);

/// The unit of a gate's metric (and of its floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Wall time in nanoseconds.
    Nanoseconds,
    /// A count of events (allocations, for instance).
    Count,
    /// A size in bytes.
    Bytes,
    /// A dimensionless ratio (a time over its floor).
    Ratio,
}

impl Unit {
    /// The unit's short name in JSON (`"ns"`, `"count"`).
    pub const fn json_name(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::Count => "count",
            Unit::Bytes => "bytes",
            Unit::Ratio => "ratio",
        }
    }

    /// Formats `value` for people: `312.4 µs`, `4.12 ms`, `0`.
    pub fn human(self, value: f64) -> String {
        match self {
            Unit::Count => format!("{value}"),
            Unit::Bytes => format!("{value} B"),
            Unit::Ratio => format!("{value:.2}x"),
            Unit::Nanoseconds => {
                if !value.is_finite() {
                    format!("{value}")
                } else if value >= 1e6 {
                    format!("{:.3} ms", value / 1e6)
                } else if value >= 1e3 {
                    format!("{:.1} µs", value / 1e3)
                } else {
                    format!("{value:.1} ns")
                }
            }
        }
    }
}

/// One bound a gate's measurement must respect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// The median must be at most this many units.
    AtMost(f64),
    /// The median divided by the floor's median must be at most this.
    RatioAtMost(f64),
}

impl Limit {
    /// Formats the limit for people, in `unit`.
    pub fn human(self, unit: Unit) -> String {
        match self {
            Limit::AtMost(v) => format!("<= {}", unit.human(v)),
            Limit::RatioAtMost(r) => format!("<= {r:.2}x floor"),
        }
    }

    fn json(self) -> Value {
        match self {
            Limit::AtMost(v) => json!({ "kind": "at_most", "value": v }),
            Limit::RatioAtMost(r) => json!({ "kind": "ratio_at_most", "value": r }),
        }
    }
}

/// Why a gate could not produce a measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateError {
    /// What happened, why, and what to do next, in one message.
    pub message: String,
}

impl GateError {
    /// Builds an error from a complete message (what, why, next action).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for GateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GateError {}

/// An extra number a gate reports beside its median (not judged).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// Short machine name, `snake_case`.
    pub name: &'static str,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
}

/// What a gate's runner measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The median of the metric, in the gate's unit.
    pub median: f64,
    /// The floor's median measured in the same run (same unit), if the gate
    /// has a floor.
    pub floor: Option<f64>,
    /// Samples behind the median (1 for exact counts).
    pub samples: usize,
    /// Extra reported numbers (overheads, sizes).
    pub notes: Vec<Note>,
}

impl Measurement {
    /// A timing gate's measurement: the subject's median against the
    /// floor's median, both in nanoseconds.
    pub fn timed(subject: &Timing, floor: &Timing) -> Measurement {
        Measurement {
            median: subject.median_ns,
            floor: Some(floor.median_ns),
            samples: subject.samples,
            notes: Vec::new(),
        }
    }

    /// `median / floor`, when there is a positive floor.
    pub fn ratio(&self) -> Option<f64> {
        match self.floor {
            Some(floor) if floor > 0.0 => Some(self.median / floor),
            _ => None,
        }
    }
}

/// The signature of a gate's runner.
pub type Runner = fn(&mut Context) -> Result<Measurement, GateError>;

/// One row of the gate table.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    /// Stable name, `area.what` (for `--json` consumers and filters).
    pub name: &'static str,
    /// What is measured, in a phrase.
    pub metric: &'static str,
    /// The metric's unit.
    pub unit: Unit,
    /// Every limit must hold for the gate to pass.
    pub limits: &'static [Limit],
    /// What the floor is (e.g. "memcpy of the same bytes"), if any. A gate
    /// with a [`Limit::RatioAtMost`] must name one.
    pub floor: Option<&'static str>,
    /// Measures the metric (and the floor, side by side).
    pub run: Runner,
    /// Cores the measurement keeps busy at once (its threads and the
    /// processes it starts). A gate timed on each thread's CPU clock needs
    /// 1; a gate with 2 is timed on the wall clock while two threads or
    /// processes of its own run, so it measures the program only where a
    /// second core is free, and its report carries the machine's load
    /// ([`Load`]) beside its figure.
    pub cores: u32,
}

/// The judgement of one gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// True when every limit held.
    pub passed: bool,
    /// One line per broken limit or error, saying what and by how much.
    pub failures: Vec<String>,
}

/// Judges `outcome` against `gate`'s limits.
///
/// A runner error fails the gate; so does a missing or non-positive floor
/// under a ratio limit, and a non-finite median.
pub fn evaluate(gate: &Gate, outcome: &Result<Measurement, GateError>) -> Verdict {
    let m = match outcome {
        Ok(m) => m,
        Err(e) => {
            return Verdict {
                passed: false,
                failures: vec![format!("{}: could not measure: {e}", gate.name)],
            };
        }
    };
    let mut failures = Vec::new();
    if !m.median.is_finite() {
        failures.push(format!(
            "{}: the median is {} (no usable samples); rerun `smith bench` and report the gate if it persists",
            gate.name, m.median
        ));
    }
    for limit in gate.limits {
        match *limit {
            Limit::AtMost(max) => {
                if m.median.is_nan() || m.median > max {
                    failures.push(format!(
                        "{}: median {} exceeds the limit {} ({:.2}x over)",
                        gate.name,
                        gate.unit.human(m.median),
                        gate.unit.human(max),
                        if max > 0.0 { m.median / max } else { f64::INFINITY },
                    ));
                }
            }
            Limit::RatioAtMost(max) => match m.ratio() {
                Some(ratio) if ratio <= max => {}
                Some(ratio) => failures.push(format!(
                    "{}: {:.2}x the floor ({} vs {} for {}) exceeds the limit of {max:.2}x",
                    gate.name,
                    ratio,
                    gate.unit.human(m.median),
                    gate.unit.human(m.floor.unwrap_or(f64::NAN)),
                    gate.floor.unwrap_or("the floor"),
                )),
                None => failures.push(format!(
                    "{}: no positive floor was measured (got {:?}), so the ratio limit {max:.2}x cannot be checked; the gate's runner must return the floor it measured",
                    gate.name, m.floor
                )),
            },
        }
    }
    Verdict {
        passed: failures.is_empty(),
        failures,
    }
}

/// One measurement of a gate and its judgement.
#[derive(Debug, Clone)]
pub struct Round {
    /// What the runner returned.
    pub outcome: Result<Measurement, GateError>,
    /// The judgement of this round alone.
    pub verdict: Verdict,
    /// The machine's load while this round measured, where it could be
    /// read.
    pub load: Option<Load>,
}

impl Round {
    /// A failed round measured on a core the canary found contended (see
    /// [`crate::load`]): it is reported, and measured again without
    /// counting against [`ROUNDS`].
    pub fn contended(&self) -> bool {
        !self.verdict.passed && self.load.is_some_and(|l| l.contended())
    }
}

/// One gate's result in a report.
#[derive(Debug, Clone)]
pub struct Row {
    /// The gate.
    pub gate: Gate,
    /// The deciding round's outcome: the first round that passed, or the
    /// last one when none did.
    pub outcome: Result<Measurement, GateError>,
    /// The gate's judgement: passed when any round passed; when none did,
    /// every round's failures, each prefixed with its round.
    pub verdict: Verdict,
    /// Every round, in order (at most [`ROUNDS`] that count, and as many
    /// again measured on a contended core); the last is the deciding
    /// one.
    pub rounds: Vec<Round>,
}

impl Row {
    /// Builds a row from its rounds in the order they were measured; a row
    /// without rounds is a failure that says so.
    pub fn from_rounds(gate: Gate, rounds: Vec<Round>) -> Row {
        let Some(last) = rounds.last() else {
            let verdict = Verdict {
                passed: false,
                failures: vec![format!("{}: was never measured", gate.name)],
            };
            return Row {
                gate,
                outcome: Err(GateError::new("the gate was never measured")),
                verdict,
                rounds,
            };
        };
        let outcome = last.outcome.clone();
        let verdict = if last.verdict.passed || rounds.len() == 1 {
            last.verdict.clone()
        } else {
            let n = rounds.len();
            Verdict {
                passed: false,
                failures: rounds
                    .iter()
                    .enumerate()
                    .flat_map(|(i, r)| {
                        r.verdict
                            .failures
                            .iter()
                            .map(move |f| format!("round {} of {n}: {f}", i + 1))
                    })
                    .collect(),
            }
        };
        Row {
            gate,
            outcome,
            verdict,
            rounds,
        }
    }

    /// The decisive round's load, where it was read.
    pub fn load(&self) -> Option<Load> {
        self.rounds.last().and_then(|r| r.load)
    }
}

/// The result of running a gate table.
#[derive(Debug, Clone)]
pub struct Report {
    /// The plan the gates ran with.
    pub plan: Plan,
    /// The machine the gates ran on, when they were measured here (not for
    /// figures injected by tests).
    pub machine: Option<crate::machine::Machine>,
    /// One row per gate, in table order.
    pub rows: Vec<Row>,
}

impl Report {
    /// Builds a report from measurements already taken (or injected).
    pub fn from_outcomes(
        plan: Plan,
        outcomes: impl IntoIterator<Item = (Gate, Result<Measurement, GateError>)>,
    ) -> Report {
        let rows = outcomes
            .into_iter()
            .map(|(gate, outcome)| {
                let verdict = evaluate(&gate, &outcome);
                Row::from_rounds(
                    gate,
                    vec![Round {
                        outcome,
                        verdict,
                        load: None,
                    }],
                )
            })
            .collect();
        Report {
            plan,
            machine: None,
            rows,
        }
    }

    /// Measures every gate in `gates` with up to `max_rounds` rounds each
    /// through `measure`, which gets the gate and the round's number.
    /// `smith bench` measures with the gates' runners and a
    /// [`crate::load::Probe`] ([`crate::run`]); tests inject figures.
    ///
    /// The rounds are passes over the table: every gate is measured once in
    /// table order, then every gate that has not passed yet is measured
    /// again, in table order, and so on. A gate's rounds are therefore as
    /// far apart as the rest of the table allows (the whole quick table
    /// takes some twenty seconds), so that one slow moment of the machine
    /// cannot fall on all three; before each pass after the first,
    /// `pause` is waited.
    pub fn measured(
        plan: Plan,
        gates: &[Gate],
        max_rounds: usize,
        measure: impl FnMut(&Gate, usize) -> (Result<Measurement, GateError>, Option<Load>),
    ) -> Report {
        Report::measured_with_pause(plan, gates, max_rounds, Duration::ZERO, measure)
    }

    /// [`Report::measured`] with `pause` before each pass after the first.
    pub fn measured_with_pause(
        plan: Plan,
        gates: &[Gate],
        max_rounds: usize,
        pause: Duration,
        mut measure: impl FnMut(&Gate, usize) -> (Result<Measurement, GateError>, Option<Load>),
    ) -> Report {
        let max_rounds = max_rounds.max(1);
        let mut rounds: Vec<Vec<Round>> = gates.iter().map(|_| Vec::new()).collect();
        // A failed round measured on a contended core (the canary says the
        // core ran below `CONTENDED_BELOW` of its best speed) is measured
        // again without counting against `max_rounds`, up to `max_rounds`
        // such rounds: every round is still reported, and the gate passes
        // only if a round passes.
        let counted = |rs: &[Round]| rs.iter().filter(|r| !r.contended()).count();
        for pass in 1..=2 * max_rounds {
            let due: Vec<usize> = (0..gates.len())
                .filter(|&i| !rounds[i].last().is_some_and(|r| r.verdict.passed))
                .filter(|&i| rounds[i].len() + 1 == pass && counted(&rounds[i]) < max_rounds)
                .collect();
            if due.is_empty() {
                break;
            }
            if pass > 1 && !pause.is_zero() {
                std::thread::sleep(pause);
            }
            for i in due {
                let gate = &gates[i];
                let (outcome, load) = measure(gate, pass);
                let verdict = evaluate(gate, &outcome);
                rounds[i].push(Round {
                    outcome,
                    verdict,
                    load,
                });
            }
        }
        let rows = gates
            .iter()
            .zip(rounds)
            .map(|(gate, rounds)| Row::from_rounds(*gate, rounds))
            .collect();
        Report {
            plan,
            machine: None,
            rows,
        }
    }

    /// True when every gate passed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict.passed)
    }

    /// The process exit status: 0 when every gate passed, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.passed() { 0 } else { 1 }
    }

    /// The report for machines (`smith bench --json`).
    pub fn to_json(&self) -> Value {
        let gates: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let g = &row.gate;
                let limits: Vec<Value> = g.limits.iter().map(|l| l.json()).collect();
                let rounds: Vec<Value> = row
                    .rounds
                    .iter()
                    .map(|r| {
                        let mut v = outcome_json(&r.outcome);
                        v.insert("passed".into(), json!(r.verdict.passed));
                        v.insert("failures".into(), json!(r.verdict.failures));
                        v.insert("load".into(), load_json(r.load));
                        Value::Object(v)
                    })
                    .collect();
                let mut v = serde_json::Map::new();
                v.insert("name".into(), json!(g.name));
                v.insert("metric".into(), json!(g.metric));
                v.insert("unit".into(), json!(g.unit.json_name()));
                let outcome = outcome_json(&row.outcome);
                v.insert("median".into(), outcome["median"].clone());
                v.insert("limits".into(), Value::Array(limits));
                v.insert("floor_metric".into(), json!(g.floor));
                for key in ["floor_median", "ratio", "samples", "notes"] {
                    v.insert(key.into(), outcome[key].clone());
                }
                v.insert("passed".into(), json!(row.verdict.passed));
                v.insert("failures".into(), json!(row.verdict.failures));
                v.insert("error".into(), outcome["error"].clone());
                v.insert("cores".into(), json!(g.cores));
                v.insert("load".into(), load_json(row.load()));
                v.insert("rounds".into(), Value::Array(rounds));
                Value::Object(v)
            })
            .collect();
        json!({
            "schema_version": 1,
            "plan": {
                "name": self.plan.name,
                "samples": self.plan.samples,
                "sample_target_ns": self.plan.sample_target.as_nanos() as u64,
                "warmup_ns": self.plan.warmup.as_nanos() as u64,
                "clock": crate::measure::CLOCK,
                "max_rounds": ROUNDS,
            },
            "machine": self.machine.as_ref().map(|m| json!({
                "model_name": m.model_name,
                "family": m.family,
                "model": m.model,
                "flags": m.flags,
                "cpus": m.cpus,
            })),
            "passed": self.passed(),
            "gates": gates,
        })
    }

    /// The report for people.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "smith bench ({} plan: medians of {} interleaved samples of >= {} ms each, {} clock unless a gate's metric names another)\n\
             A gate that fails is measured again, up to {ROUNDS} rounds in all, and passes if any round passes; every round is reported.\n\
             A failed round whose core ran below {CONTENDED_BELOW} of its best speed (a canary timed between samples) is measured again without counting.\n",
            self.plan.name,
            self.plan.samples,
            self.plan.sample_target.as_millis(),
            crate::measure::CLOCK
        );
        if let Some(machine) = &self.machine {
            let _ = writeln!(out, "machine: {machine}\n");
        }
        let header = ["gate", "median", "limit", "floor median", "ratio", "result"];
        let mut table: Vec<[String; 6]> = vec![header.map(str::to_owned)];
        for row in &self.rows {
            let g = &row.gate;
            let limits = g
                .limits
                .iter()
                .map(|l| l.human(g.unit))
                .collect::<Vec<_>>()
                .join(", ");
            let (median, floor, ratio) = match &row.outcome {
                Ok(m) => (
                    g.unit.human(m.median),
                    m.floor
                        .map(|f| g.unit.human(f))
                        .unwrap_or_else(|| "-".into()),
                    m.ratio()
                        .map(|r| format!("{r:.2}x"))
                        .unwrap_or_else(|| "-".into()),
                ),
                Err(_) => ("error".into(), "-".into(), "-".into()),
            };
            let result = match (row.verdict.passed, row.rounds.len()) {
                (true, 0 | 1) => "pass".to_owned(),
                (true, n) => format!("pass in round {n}"),
                (false, 0 | 1) => "FAIL".to_owned(),
                (false, n) => format!("FAIL ({n} rounds)"),
            };
            table.push([g.name.to_owned(), median, limits, floor, ratio, result]);
        }
        let mut widths = [0usize; 6];
        for line in &table {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for line in &table {
            let mut text = String::new();
            for (i, (cell, w)) in line.iter().zip(widths).enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                let pad = w - cell.chars().count();
                text.push_str(cell);
                text.extend(std::iter::repeat_n(' ', pad));
            }
            let _ = writeln!(out, "{}", text.trim_end());
        }
        out.push('\n');
        for row in &self.rows {
            let g = &row.gate;
            let _ = write!(out, "{}: {}", g.name, g.metric);
            if let Some(floor) = g.floor {
                let _ = write!(out, "; floor: {floor}");
            }
            if let Ok(m) = &row.outcome {
                for n in &m.notes {
                    let _ = write!(out, "; {} = {}", n.name, n.unit.human(n.value));
                }
            }
            if g.cores > 1 {
                let load = row
                    .load()
                    .map_or_else(|| "not readable here".to_owned(), |l| l.human());
                let _ = write!(out, "; needs {} free cores; load: {load}", g.cores);
            }
            out.push('\n');
            if row.rounds.len() > 1 {
                for (i, r) in row.rounds.iter().enumerate() {
                    let _ = write!(
                        out,
                        "  round {}: {}, {}",
                        i + 1,
                        figure(g, &r.outcome),
                        if r.verdict.passed { "pass" } else { "FAIL" }
                    );
                    if let Some(l) = r.load {
                        let _ = write!(out, " ({})", l.human());
                    }
                    if r.contended() {
                        out.push_str("; contended core, measured again");
                    }
                    out.push('\n');
                }
            }
        }
        let failures: Vec<&String> = self.rows.iter().flat_map(|r| &r.verdict.failures).collect();
        if failures.is_empty() {
            let _ = writeln!(out, "\nall {} gates passed", self.rows.len());
        } else {
            let _ = writeln!(
                out,
                "\n{} of {} gates failed:",
                self.rows.iter().filter(|r| !r.verdict.passed).count(),
                self.rows.len()
            );
            for f in failures {
                let _ = writeln!(out, "  {f}");
            }
            if let Some(machine) = &self.machine {
                let _ = writeln!(out, "measured on: {machine}");
            }
        }
        out
    }
}

/// One round's figure for people: the median, and the ratio to the floor
/// for a gate that has one.
fn figure(gate: &Gate, outcome: &Result<Measurement, GateError>) -> String {
    match outcome {
        Ok(m) => match m.ratio() {
            Some(r) if gate.floor.is_some() => {
                format!("{} ({r:.2}x the floor)", gate.unit.human(m.median))
            }
            _ => gate.unit.human(m.median),
        },
        Err(e) => format!("could not measure ({e})"),
    }
}

/// An outcome's numbers as JSON fields: `median`, `floor_median`, `ratio`,
/// `samples`, `notes` and `error`.
fn outcome_json(outcome: &Result<Measurement, GateError>) -> serde_json::Map<String, Value> {
    let mut v = serde_json::Map::new();
    match outcome {
        Ok(m) => {
            v.insert("median".into(), json_number(m.median));
            v.insert(
                "floor_median".into(),
                m.floor.map(json_number).unwrap_or(Value::Null),
            );
            v.insert(
                "ratio".into(),
                m.ratio().map(json_number).unwrap_or(Value::Null),
            );
            v.insert("samples".into(), json!(m.samples));
            v.insert(
                "notes".into(),
                Value::Object(
                    m.notes
                        .iter()
                        .map(|n| {
                            (
                                n.name.to_owned(),
                                json!({ "value": json_number(n.value), "unit": n.unit.json_name() }),
                            )
                        })
                        .collect(),
                ),
            );
            v.insert("error".into(), Value::Null);
        }
        Err(e) => {
            for key in ["median", "floor_median", "ratio", "samples"] {
                v.insert(key.into(), Value::Null);
            }
            v.insert("notes".into(), json!({}));
            v.insert("error".into(), json!(e.message));
        }
    }
    v
}

/// A load as JSON (`null` where it was not read).
fn load_json(load: Option<Load>) -> Value {
    match load {
        Some(l) => json!({
            "others_busy_cores": json_number(l.others_busy_cores),
            "free_cores": json_number(l.free_cores()),
            "cpus": l.cpus,
            "loadavg_1m": json_number(l.loadavg_1m),
            "seconds": json_number(l.seconds),
            "core_speed": l.core_speed.map_or(Value::Null, json_number),
            "contended": l.contended(),
        }),
        None => Value::Null,
    }
}

/// A finite number as JSON; NaN and infinities (which JSON cannot hold)
/// become null.
fn json_number(v: f64) -> Value {
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never_run(_: &mut Context) -> Result<Measurement, GateError> {
        Err(GateError::new("test gates are judged, not run"))
    }

    const TIME: Gate = Gate {
        name: "test.time",
        metric: "time of a thing",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(5_000_000.0), Limit::RatioAtMost(3.0)],
        floor: Some("memcpy of the same bytes"),
        run: never_run,
        cores: 1,
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

    fn timed(median: f64, floor: f64) -> Result<Measurement, GateError> {
        Ok(Measurement {
            median,
            floor: Some(floor),
            samples: 51,
            notes: Vec::new(),
        })
    }

    fn counted(n: f64) -> Result<Measurement, GateError> {
        Ok(Measurement {
            median: n,
            floor: None,
            samples: 1,
            notes: Vec::new(),
        })
    }

    #[test]
    fn within_every_limit_passes() {
        let v = evaluate(&TIME, &timed(300_000.0, 100_000.0));
        assert_eq!(
            v,
            Verdict {
                passed: true,
                failures: vec![]
            }
        );
        assert!(evaluate(&COUNT, &counted(0.0)).passed);
    }

    #[test]
    fn a_ratio_exactly_at_the_limit_passes() {
        assert!(evaluate(&TIME, &timed(300_000.0, 100_000.0)).passed);
        assert!(!evaluate(&TIME, &timed(300_001.0, 100_000.0)).passed);
    }

    #[test]
    fn absolute_limit_fails_alone() {
        let v = evaluate(&TIME, &timed(6_000_000.0, 4_000_000.0));
        assert!(!v.passed);
        assert_eq!(v.failures.len(), 1);
        assert!(
            v.failures[0].contains("exceeds the limit 5.000 ms"),
            "{:?}",
            v.failures
        );
    }

    #[test]
    fn ratio_limit_fails_alone() {
        let v = evaluate(&TIME, &timed(400_000.0, 100_000.0));
        assert_eq!(v.failures.len(), 1);
        assert!(
            v.failures[0].contains("4.00x the floor"),
            "{:?}",
            v.failures
        );
    }

    #[test]
    fn both_limits_fail_together() {
        let v = evaluate(&TIME, &timed(9_000_000.0, 1_000_000.0));
        assert_eq!(v.failures.len(), 2);
    }

    #[test]
    fn one_allocation_fails_a_zero_allocation_gate() {
        let v = evaluate(&COUNT, &counted(1.0));
        assert!(!v.passed);
        assert!(
            v.failures[0].contains("median 1 exceeds the limit 0"),
            "{:?}",
            v.failures
        );
    }

    #[test]
    fn missing_floor_fails_a_ratio_gate() {
        let m = Ok(Measurement {
            median: 1.0,
            floor: None,
            samples: 3,
            notes: vec![],
        });
        let v = evaluate(&TIME, &m);
        assert!(!v.passed);
        assert!(
            v.failures[0].contains("no positive floor"),
            "{:?}",
            v.failures
        );
        let zero = timed(1.0, 0.0);
        assert!(!evaluate(&TIME, &zero).passed);
    }

    #[test]
    fn nan_median_fails() {
        assert!(!evaluate(&COUNT, &counted(f64::NAN)).passed);
    }

    #[test]
    fn runner_error_fails_and_is_reported() {
        let v = evaluate(&COUNT, &Err(GateError::new("accounting is off")));
        assert!(!v.passed);
        assert!(v.failures[0].contains("accounting is off"));
    }

    #[test]
    fn one_failing_gate_makes_exit_code_1() {
        let pass = Report::from_outcomes(
            Plan::QUICK,
            [(TIME, timed(2.0, 1.0)), (COUNT, counted(0.0))],
        );
        assert_eq!(pass.exit_code(), 0);
        let fail = Report::from_outcomes(
            Plan::QUICK,
            [(TIME, timed(2.0, 1.0)), (COUNT, counted(3.0))],
        );
        assert_eq!(fail.exit_code(), 1);
        assert!(!fail.passed());
        let json = fail.to_json();
        assert_eq!(json["passed"], false);
        assert_eq!(json["gates"][0]["passed"], true);
        assert_eq!(json["gates"][0]["ratio"], 2.0);
        assert_eq!(json["gates"][1]["passed"], false);
        assert_eq!(json["gates"][1]["median"], 3.0);
        let text = fail.to_text();
        assert!(text.contains("1 of 2 gates failed"), "{text}");
        assert!(text.contains("FAIL"), "{text}");
    }

    #[test]
    fn human_units() {
        assert_eq!(Unit::Nanoseconds.human(12.34), "12.3 ns");
        assert_eq!(Unit::Nanoseconds.human(312_400.0), "312.4 µs");
        assert_eq!(Unit::Nanoseconds.human(5_000_000.0), "5.000 ms");
        assert_eq!(Unit::Count.human(0.0), "0");
        assert_eq!(Unit::Ratio.human(5.914), "5.91x");
        assert_eq!(
            Limit::RatioAtMost(3.0).human(Unit::Nanoseconds),
            "<= 3.00x floor"
        );
    }
}
