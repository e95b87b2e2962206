//! Times the accounting allocator on the allocation pattern of an agent's
//! turn: many small, short-lived blocks (formatted strings, split words,
//! growing vectors, map entries made and dropped), on one thread and then
//! on two at once, and bare blocks of scattered sizes replaced in a
//! scattered order. docs/release.md ("The allocator on musl") compares it
//! built for glibc (on `System`) and for musl (on mimalloc, and on musl's
//! own malloc).
//!
//! Run: `cargo run --release -p smith-alloc --example small_blocks`
//! (add `--target x86_64-unknown-linux-musl` for the musl build).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use smith_alloc::AccountingAllocator;

#[global_allocator]
static GLOBAL: AccountingAllocator = AccountingAllocator::new();

const MESSAGES: usize = 40_000;
const RUNS: usize = 7;

/// One "session": messages are formatted, split into words, indexed in a
/// map, and the oldest entries dropped as new ones arrive.
fn session(seed: usize) -> usize {
    let mut index: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut total = 0;
    for i in 0..MESSAGES {
        let text = format!(
            "message {i} of session {seed}: read the file src/lib_{}.rs and report line {} of {}",
            i % 97,
            i % 13,
            i * 7 % 1000
        );
        let words: Vec<String> = text.split(' ').map(str::to_owned).collect();
        let joined = words.join("_");
        total += joined.len();
        index.insert(format!("{seed}-{i:08}"), words);
        if index.len() > 256 {
            index.pop_first();
        }
        black_box(&joined);
    }
    total + index.len()
}

/// Bare blocks: 512 live blocks of 8 to 512 bytes, each replaced in a
/// scattered order, so frees and allocations interleave as in a parser's
/// or a renderer's churn.
fn blocks(seed: usize) -> usize {
    let mut live: Vec<Vec<u8>> = (0..512).map(|i| vec![0u8; 8 + i % 64]).collect();
    let mut x = seed as u32 | 1;
    let mut total = 0;
    for _ in 0..MESSAGES * 20 {
        // xorshift: a fixed, cheap sequence of slots and sizes.
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let slot = x as usize % live.len();
        let size = 8 + (x >> 9) as usize % 505;
        live[slot] = vec![x as u8; size];
        total += live[slot].len();
    }
    black_box(&live);
    total
}

/// The fastest of the runs: on a machine shared with other work, the run
/// least disturbed by it.
fn fastest(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Milliseconds for `work` on one thread, then on two threads at once
/// (each doing the same work), fastest of `RUNS`.
fn time(work: fn(usize) -> usize) -> (f64, f64) {
    let mut one = Vec::new();
    let mut two = Vec::new();
    for run in 0..RUNS {
        let t = Instant::now();
        black_box(work(run));
        one.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        std::thread::scope(|s| {
            for thread in 0..2 {
                s.spawn(move || black_box(work(run * 2 + thread)));
            }
        });
        two.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (fastest(&one), fastest(&two))
}

fn main() {
    for (name, work) in [
        ("sessions", session as fn(usize) -> usize),
        ("blocks", blocks),
    ] {
        let ((), counted) = smith_alloc::count(|| {
            black_box(work(0));
        });
        let (one, two) = time(work);
        println!(
            "{name:>8}: {:>9} allocations a run; fastest of {RUNS}: one thread {one:6.1} ms, two threads at once {two:6.1} ms",
            counted.allocations
        );
    }
}
