//! A quick side-by-side measurement of one alloc+free pair through the
//! accounting allocator and through `System`, in the cases that take
//! different paths. The gate that enforces the 2x limit is the divan
//! benchmark in perf-gates; this only prints rough numbers.
//!
//! Run: `cargo run --release -p smith-alloc --example pair_cost`

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Instant;

use smith_alloc::{AccountingAllocator, Scope, ScopeKind};

#[global_allocator]
static GLOBAL: AccountingAllocator = AccountingAllocator::new();

static ACCOUNTING: AccountingAllocator = AccountingAllocator::new();

const PAIRS: u32 = 20_000;
const ROUNDS: usize = 301;

#[inline(never)]
fn pair<A: GlobalAlloc>(a: &A, layout: Layout) {
    // SAFETY: non-zero size; freed with the same allocator and layout.
    unsafe {
        let p = a.alloc(layout);
        if !p.is_null() {
            p.write(1);
            black_box(p);
            a.dealloc(p, layout);
        }
    }
}

/// Median ns per pair over `ROUNDS` short rounds (short, so that most are
/// not preempted on a busy machine), alternating the two
/// allocators round by round so both see the same machine noise.
fn side_by_side(layout: Layout) -> (f64, f64) {
    let mut acc = Vec::with_capacity(ROUNDS);
    let mut sys = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..PAIRS {
            pair(black_box(&ACCOUNTING), layout);
        }
        acc.push(t.elapsed().as_nanos() as f64 / f64::from(PAIRS));
        let t = Instant::now();
        for _ in 0..PAIRS {
            pair(black_box(&System), layout);
        }
        sys.push(t.elapsed().as_nanos() as f64 / f64::from(PAIRS));
    }
    acc.sort_by(f64::total_cmp);
    sys.sort_by(f64::total_cmp);
    (acc[ROUNDS / 2], sys[ROUNDS / 2])
}

fn print(case: &str, layout: Layout) {
    let (acc, sys) = side_by_side(layout);
    println!(
        "{case:<44} {:>5} B  system {sys:6.2} ns  accounting {acc:6.2} ns  overhead {:5.2} ns  ratio {:.2}",
        layout.size(),
        acc - sys,
        acc / sys
    );
}

fn main() {
    for size in [16, 64, 512] {
        let layout = Layout::from_size_align(size, 8).unwrap_or(Layout::new::<u8>());
        print("main thread, process scope (lease holder)", layout);
        let scope = Scope::new(ScopeKind::Frame, "bench");
        {
            let _g = scope.enter();
            print("inside a guard (lease holder)", layout);
        }
        std::thread::scope(|t| {
            t.spawn(|| print("other thread, process scope (atomic path)", layout));
        });
        std::thread::scope(|t| {
            t.spawn(|| {
                let _g = scope.enter();
                print("other thread, own guard (lease holder)", layout);
            });
        });
    }
}
