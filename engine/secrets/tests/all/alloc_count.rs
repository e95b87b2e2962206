//! Exact allocation counts: the accounting allocator is this test
//! binary's global allocator.

use std::sync::Arc;

use smith_secrets::{NeverAuthorize, StreamRedactor, bench_support};

#[global_allocator]
static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

/// Allocation calls made by `f`.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let (r, stats) = smith_alloc::count(f);
    (r, stats.allocations)
}

#[test]
fn redaction_without_a_match_allocates_nothing() {
    let registry = bench_support::registry(100);
    let redactor = registry.redactor();
    let text = bench_support::tool_output(256 << 10, &bench_support::tokens(100), false);
    let (len, n) = allocations(|| redactor.redact_str(&text).len());
    assert_eq!(len, text.len());
    assert_eq!(n, 0);
    let (found, n) = allocations(|| redactor.contains_secret(text.as_bytes()));
    assert!(!found);
    assert_eq!(n, 0);
    let mut value = serde_json::json!({"a": text.clone(), "b": [text.clone()]});
    let (count, n) = allocations(|| redactor.redact_json(&mut value));
    assert_eq!((count, n), (0, 0));
}

#[test]
fn redaction_with_matches_allocates_once() {
    let registry = bench_support::registry(100);
    let redactor = registry.redactor();
    let tokens = bench_support::tokens(100);
    let text = format!("a {} b {} c", tokens[3], tokens[70]);
    let (out, n) = allocations(|| redactor.redact_str(&text).into_owned());
    assert_eq!(out, "a {secret:bench.3} b {secret:bench.70} c");
    assert_eq!(n, 1);
}

#[test]
fn streaming_allocates_only_its_hold_back_buffer() {
    let registry = bench_support::registry(100);
    let redactor = registry.redactor();
    let text = bench_support::tool_output(256 << 10, &bench_support::tokens(100), false);
    let mut out = Vec::with_capacity(text.len());
    let mut stream = StreamRedactor::new(Arc::clone(&redactor));
    // The first two chunks size the hold-back buffer; after that, nothing.
    stream.push(&text.as_bytes()[..4096], &mut out);
    stream.push(&text.as_bytes()[4096..8192], &mut out);
    let ((), n) = allocations(|| {
        for chunk in text.as_bytes()[8192..].chunks(4096) {
            stream.push(chunk, &mut out);
        }
        stream.finish(&mut out);
    });
    assert_eq!(out, text.as_bytes());
    assert_eq!(n, 0);
}

#[test]
fn substitution_without_placeholders_allocates_nothing() {
    let registry = bench_support::registry(10);
    let text = "plain command with {braces} and {secret: no name}";
    let (s, n) = allocations(|| registry.substitute_str(text, "bash", &NeverAuthorize));
    assert!(s.used().is_empty() && s.refused().is_empty());
    assert_eq!(n, 0);
}
