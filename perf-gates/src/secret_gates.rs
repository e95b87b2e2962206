//! Gates on the secret proxy (smith-secrets).
//!
//! - `secrets.redact_100`: redacting 4 MiB of tool output (source, build
//!   and test logs, JSON lines, `env` listings, hex dumps, some non-ASCII;
//!   `smith_secrets::bench_support::tool_output`) with 100 registered
//!   secrets of 20–60 bytes in common vendor shapes, one of them planted
//!   about every 64 KiB, through the live redactor the runtime holds. At
//!   least 1 GB/s: at most 4,194,304 ns for the 4 MiB (1 byte per
//!   nanosecond). The throughput (`bytes_per_second`), the size and the
//!   values replaced per pass are reported beside it; no floor (the
//!   limit is absolute). The CPU model is in the report's machine line.

use std::hint::black_box;

use smith_secrets::bench_support;

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::measure;
use crate::table::Context;

/// Bytes of tool output in the workload: 4 MiB.
pub const REDACT_BYTES: usize = 4 << 20;
/// Secrets registered in the workload.
pub const REDACT_SECRETS: usize = 100;
/// The goal: at least 1 GB/s, so at most one nanosecond per byte.
pub const REDACT_BUDGET_NS: f64 = REDACT_BYTES as f64;

/// Gates on the secret proxy.
pub const SECRETS: &[Gate] = &[Gate {
    name: "secrets.redact_100",
    metric: "redact 4 MiB of tool output with 100 registered secrets, one every 64 KiB (median)",
    unit: Unit::Nanoseconds,
    limits: &[Limit::AtMost(REDACT_BUDGET_NS)],
    floor: None,
    run: redact_100,
    cores: 1,
}];

fn redact_100(cx: &mut Context) -> Result<Measurement, GateError> {
    let plan = cx.plan;
    let registry = bench_support::registry(REDACT_SECRETS);
    if registry.len() != REDACT_SECRETS {
        return Err(GateError::new(format!(
            "the workload registered {} of {REDACT_SECRETS} secrets, so the gate would measure another workload; run `cargo test -p smith-secrets`",
            registry.len()
        )));
    }
    let tokens = bench_support::tokens(REDACT_SECRETS);
    let text = bench_support::tool_output(REDACT_BYTES, &tokens, true);
    let redactor = registry.redactor();
    let mut out = Vec::with_capacity(text.len());
    let replaced = redactor.redact_into(text.as_bytes(), &mut out);
    if replaced == 0 || out.windows(7).all(|w| w != b"{secret") {
        return Err(GateError::new(
            "redacting the workload replaced nothing although secrets are planted in it, so its timing means nothing; run `cargo test -p smith-secrets`",
        ));
    }
    let subject = measure::single(&plan, || {
        black_box(bench_support::redact_once(&redactor, black_box(&text)));
    });
    let mut m = Measurement {
        median: subject.median_ns,
        floor: None,
        samples: subject.samples,
        notes: Vec::new(),
    };
    m.notes.push(Note {
        name: "bytes",
        value: text.len() as f64,
        unit: Unit::Bytes,
    });
    m.notes.push(Note {
        name: "bytes_per_second",
        value: (text.len() as f64 / (subject.median_ns / 1e9)).round(),
        unit: Unit::Bytes,
    });
    m.notes.push(Note {
        name: "replaced",
        value: replaced as f64,
        unit: Unit::Count,
    });
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_gate_holds_redaction_to_one_gigabyte_per_second() {
        assert_eq!(
            crate::table::limits_of("secrets.redact_100"),
            Some(vec![Limit::AtMost(4_194_304.0)])
        );
    }
}
