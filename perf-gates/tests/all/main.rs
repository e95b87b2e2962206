//! Integration tests of smith-perf: the generator's determinism and size
//! distributions, the encoded corpus under the strict decoder, the exact
//! allocation count of encoding, and a run of the whole gate table.
//!
//! The accounting allocator is installed here as in the `smith` binary, so
//! the allocation gate measures for real.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use smith_alloc::AccountingAllocator;
use smith_perf::entries::{self, Content, Kind, MESSAGE_TEXT_BYTES, TOOL_OUTPUT_BYTES};
use smith_perf::{Plan, all_gates};

mod rounds;
mod store_gates;

#[global_allocator]
static GLOBAL: AccountingAllocator = AccountingAllocator::new();

fn encoded(seed: u64, count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    entries::encode_entries(&entries::generate(seed, count), &mut out);
    out
}

#[test]
fn same_seed_gives_identical_bytes() {
    for seed in [0, 1, entries::DEFAULT_SEED] {
        assert_eq!(encoded(seed, 1000), encoded(seed, 1000), "seed {seed}");
    }
}

#[test]
fn different_seeds_give_different_bytes() {
    assert_ne!(encoded(1, 100), encoded(2, 100));
}

#[test]
fn a_shorter_run_is_a_prefix_of_a_longer_one() {
    assert_eq!(
        entries::generate(9, 200)[..],
        entries::generate(9, 1000)[..200]
    );
}

/// FNV-1a 64: a stable digest for the golden file (no hashing crate needed).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The standard corpus is pinned: a change to the generator or to the
/// encoding of these entries changes every benchmark's input, so it must be
/// deliberate (rewrite with `SMITH_BLESS=1`).
#[test]
fn standard_corpus_bytes_are_pinned() {
    let bytes = encoded(entries::DEFAULT_SEED, 1000);
    let actual = format!("len {}\nfnv1a64 {:016x}\n", bytes.len(), fnv1a(&bytes));
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/standard_corpus.digest");
    if std::env::var_os("SMITH_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; create it with SMITH_BLESS=1",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "standard corpus changed; if deliberate, rerun with SMITH_BLESS=1"
    );
}

#[test]
fn every_text_is_inside_its_stated_size_range() {
    for seed in 0..20 {
        for e in entries::generate(seed, 1000) {
            let (len, (lo, hi)) = match &e.content {
                Content::User { text } | Content::Assistant { text, .. } => {
                    (text.len(), MESSAGE_TEXT_BYTES)
                }
                Content::ToolResult { output, .. } => (output.len(), TOOL_OUTPUT_BYTES),
                Content::ToolCall { .. } => continue,
            };
            assert!(
                (lo..=hi).contains(&len),
                "seed {seed} entry {}: {len} bytes outside {lo}..={hi}",
                e.id
            );
        }
    }
}

#[test]
fn sizes_cover_their_ranges() {
    let all = entries::generate(3, 5000);
    let texts: Vec<usize> = all
        .iter()
        .filter_map(|e| match &e.content {
            Content::User { text } | Content::Assistant { text, .. } => Some(text.len()),
            _ => None,
        })
        .collect();
    let outputs: Vec<usize> = all
        .iter()
        .filter_map(|e| match &e.content {
            Content::ToolResult { output, .. } => Some(output.len()),
            _ => None,
        })
        .collect();
    let span = |v: &[usize]| (*v.iter().min().unwrap(), *v.iter().max().unwrap());
    let (lo, hi) = span(&texts);
    assert!(
        lo < 420 && hi > 580,
        "message sizes {lo}..{hi} do not spread over 400..600"
    );
    let (lo, hi) = span(&outputs);
    assert!(
        lo < 1600 && hi > 2400,
        "output sizes {lo}..{hi} do not spread over 1500..2500"
    );
    assert!(texts.iter().any(|_| true));
    // Some prose carries multi-byte characters, so byte and char lengths differ.
    assert!(all.iter().any(|e| match &e.content {
        Content::User { text } | Content::Assistant { text, .. } =>
            text.chars().count() < text.len(),
        _ => false,
    }));
}

#[test]
fn kinds_mix_in_realistic_proportions_and_results_follow_their_calls() {
    let all = entries::generate(entries::DEFAULT_SEED, 1000);
    let mut counts: HashMap<Kind, usize> = HashMap::new();
    for e in &all {
        *counts.entry(e.kind()).or_default() += 1;
    }
    let share = |k| counts.get(&k).copied().unwrap_or(0) as f64 / all.len() as f64;
    assert!((0.08..=0.22).contains(&share(Kind::User)), "{counts:?}");
    assert!(
        (0.12..=0.28).contains(&share(Kind::Assistant)),
        "{counts:?}"
    );
    assert!((0.25..=0.42).contains(&share(Kind::ToolCall)), "{counts:?}");
    assert!(
        (0.25..=0.42).contains(&share(Kind::ToolResult)),
        "{counts:?}"
    );
    for pair in all.windows(2) {
        if let Content::ToolResult { call_id, .. } = &pair[1].content {
            match &pair[0].content {
                Content::ToolCall { call_id: asked, .. } => assert_eq!(asked, call_id),
                other => panic!("entry {} is a result after {other:?}", pair[1].id),
            }
        }
        assert_eq!(pair[1].parent, Some(pair[0].id));
        assert!(pair[1].timestamp > pair[0].timestamp);
    }
    // Tool calls carry nested argument maps.
    assert!(all.iter().any(|e| matches!(&e.content,
        Content::ToolCall { arguments: entries::Arg::Map(pairs), .. }
            if pairs.iter().any(|(_, v)| matches!(v, entries::Arg::Map(_) | entries::Arg::List(_))))));
}

#[test]
fn the_corpus_is_canonical_under_the_strict_decoder() {
    for seed in 0..5 {
        let bytes = encoded(seed, 1000);
        let items = entries::walk(&bytes).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(items > 1000 * 10, "seed {seed}: only {items} items");
    }
}

#[test]
fn encoding_into_a_warm_buffer_allocates_nothing() {
    let all = entries::generate(entries::DEFAULT_SEED, 1000);
    let mut buf = Vec::new();
    entries::encode_entries(&all, &mut buf);
    let len = buf.len();
    for _ in 0..3 {
        buf.clear();
        let ((), stats) = smith_alloc::count(|| entries::encode_entries(&all, &mut buf));
        assert_eq!(stats.allocations, 0);
        assert_eq!(buf.len(), len);
    }
    // The counter is live: a cold buffer does allocate.
    let mut cold = Vec::new();
    let ((), stats) = smith_alloc::count(|| entries::encode_entries(&all[..1], &mut cold));
    assert!(stats.allocations >= 1);
}

/// Runs every gate with a tiny plan: checks the report's shape, not speed
/// (unit-test builds are unoptimized, so timing limits may fail here).
#[test]
fn the_gate_table_runs_and_reports_every_gate() {
    let plan = Plan {
        name: "test",
        warmup: Duration::from_millis(5),
        samples: 3,
        sample_target: Duration::from_millis(1),
    };
    let gates = all_gates();
    let report = smith_perf::run(&gates, plan);
    let json = report.to_json();
    let rows = json["gates"].as_array().unwrap();
    assert_eq!(rows.len(), gates.len());
    for (row, gate) in rows.iter().zip(&gates) {
        assert_eq!(row["name"], gate.name);
        if gate.name.starts_with("tui.first_frame") {
            // It launches the running executable as the interface, so it
            // runs only from the `smith` binary (tests/bench_cli.rs runs
            // it there); from this test binary it refuses, saying so.
            let error = row["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("not smith; run them from the `smith` binary"),
                "{error}"
            );
            continue;
        }
        if gate.name.starts_with("resume.answer_") {
            // They run `smith eval --session` as the running executable:
            // only from the `smith` binary (tests/bench_cli.rs runs them
            // there).
            let error = row["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("not smith; run them from the `smith` binary"),
                "{error}"
            );
            continue;
        }
        if gate.name.starts_with("plugins.flood_") {
            // They run `smith eval` as the running executable: only from
            // the `smith` binary (tests/bench_cli.rs runs them there).
            let error = row["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("not smith; run them from the `smith` binary"),
                "{error}"
            );
            continue;
        }
        assert!(row["error"].is_null(), "{}: {}", gate.name, row["error"]);
        assert!(row["median"].is_number(), "{}", gate.name);
        assert_eq!(
            row["ratio"].is_number(),
            gate.floor.is_some(),
            "{}",
            gate.name
        );
    }
    let alloc = rows
        .iter()
        .find(|r| r["name"] == "codec.encode_1000_allocations")
        .unwrap();
    assert_eq!(alloc["median"], 0.0);
    assert_eq!(alloc["passed"], true);
    assert_eq!(json["passed"], report.passed());
    assert_eq!(u8::from(!report.passed()), report.exit_code());
}
