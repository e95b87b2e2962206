//! The runtime's own cost per scripted tool-using turn: prompt delivery,
//! request building, a streamed response validated through the provider
//! contract, tool-call validation, the durable intent and completion (an
//! in-memory journal), a `read` of a 40-line file, the recorded result and
//! every protocol event — on the calling thread, so the timing is the
//! runtime's CPU work (`smith_engine::bench_support`). Run with
//! `cargo bench -p smith-engine --bench turn`; the allocation columns are
//! allocations per turn.

// Benchmark code: setup failures should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use smith_engine::bench_support::scripted_turn;

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
}

#[divan::bench]
fn scripted_tool_using_turn(bencher: divan::Bencher<'_, '_>) {
    let dir = tempfile::tempdir().unwrap();
    let mut turn = scripted_turn(dir.path()).unwrap();
    // The first turn sizes every reused buffer.
    turn.turn().unwrap();
    bencher.bench_local(|| turn.turn().unwrap());
}
