//! divan benchmarks for redaction: tool output of a few megabytes against
//! 100 registered realistic tokens, without secrets and with rare ones,
//! in one piece and streamed in 4 KiB chunks.

use std::sync::Arc;

use divan::counter::BytesCount;
use divan::{Bencher, black_box};
use smith_secrets::{StreamRedactor, bench_support};

fn main() {
    divan::main();
}

const BYTES: usize = 4 << 20;

/// 4 MiB of tool output with no secret in it.
#[divan::bench]
fn redact_4mib_no_match_100_secrets(b: Bencher<'_, '_>) {
    let registry = bench_support::registry(100);
    let redactor = registry.redactor();
    let text = bench_support::tool_output(BYTES, &bench_support::tokens(100), false);
    b.counter(BytesCount::new(text.len()))
        .bench_local(|| bench_support::redact_once(&redactor, black_box(&text)));
}

/// 4 MiB of tool output with a secret every 64 KiB.
#[divan::bench]
fn redact_4mib_rare_match_100_secrets(b: Bencher<'_, '_>) {
    let registry = bench_support::registry(100);
    let redactor = registry.redactor();
    let text = bench_support::tool_output(BYTES, &bench_support::tokens(100), true);
    b.counter(BytesCount::new(text.len()))
        .bench_local(|| bench_support::redact_once(&redactor, black_box(&text)));
}

/// The same 4 MiB with rare secrets, streamed in 4 KiB chunks.
#[divan::bench]
fn stream_4mib_rare_match_100_secrets_4kib_chunks(b: Bencher<'_, '_>) {
    let registry = bench_support::registry(100);
    let redactor = registry.redactor();
    let text = bench_support::tool_output(BYTES, &bench_support::tokens(100), true);
    let mut out = Vec::with_capacity(text.len() + 4096);
    b.counter(BytesCount::new(text.len())).bench_local(|| {
        out.clear();
        let mut stream = StreamRedactor::new(Arc::clone(&redactor));
        for chunk in black_box(text.as_bytes()).chunks(4096) {
            stream.push(chunk, &mut out);
        }
        stream.finish(&mut out);
        out.len()
    });
}
