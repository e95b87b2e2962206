//! divan benchmarks of the operations the gate table holds to account.
//!
//! `cargo bench -p smith-perf` explores; `smith bench` judges. Both use the
//! same corpus ([`smith_perf::Corpus::standard`]) and the same operations,
//! so their numbers are comparable.

use std::alloc::{GlobalAlloc, Layout, System};

use divan::counter::BytesCount;
use divan::{Bencher, black_box};
use smith_alloc::AccountingAllocator;
use smith_perf::{Corpus, entries};

/// As in the `smith` binary: every allocation goes through accounting.
#[global_allocator]
static GLOBAL: AccountingAllocator = AccountingAllocator::new();

fn main() {
    divan::main();
}

/// Encode 1,000 representative entries into a warm buffer.
#[divan::bench]
fn encode_1000(bencher: Bencher<'_, '_>) {
    let corpus = Corpus::standard();
    let mut buf = Vec::with_capacity(corpus.encoded.len());
    bencher
        .counter(BytesCount::new(corpus.encoded.len()))
        .bench_local(|| {
            buf.clear();
            entries::encode_entries(black_box(&corpus.entries), &mut buf);
            black_box(&buf);
        });
}

/// Strict structure walk over every item of the same bytes.
#[divan::bench]
fn walk_1000(bencher: Bencher<'_, '_>) {
    let corpus = Corpus::standard();
    bencher
        .counter(BytesCount::new(corpus.encoded.len()))
        .bench_local(|| entries::walk(black_box(&corpus.encoded)));
}

/// The floor: memcpy of the same bytes into a warm buffer.
#[divan::bench]
fn memcpy_1000(bencher: Bencher<'_, '_>) {
    let corpus = Corpus::standard();
    let mut dst = Vec::with_capacity(corpus.encoded.len());
    bencher
        .counter(BytesCount::new(corpus.encoded.len()))
        .bench_local(|| {
            dst.clear();
            dst.extend_from_slice(black_box(&corpus.encoded));
            black_box(&dst);
        });
}

/// One alloc+free pair of a 64-byte block, side by side.
mod alloc_pair {
    use super::*;

    static ACCOUNTING: AccountingAllocator = AccountingAllocator::new();

    fn pair<A: GlobalAlloc>(a: &A) {
        let layout = Layout::new::<[u64; 8]>();
        // SAFETY: non-zero size; freed with the same allocator and layout,
        // only when the allocation succeeded.
        unsafe {
            let p = a.alloc(layout);
            if !p.is_null() {
                p.write(1);
                black_box(p);
                a.dealloc(p, layout);
            }
        }
    }

    #[divan::bench]
    fn accounting() {
        pair(black_box(&ACCOUNTING));
    }

    #[divan::bench]
    fn system() {
        pair(black_box(&System));
    }
}
