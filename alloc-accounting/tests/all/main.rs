//! Integration tests for smith-alloc, run with the accounting allocator as
//! this binary's global allocator.
//!
//! Every test takes the `serial` lock: one test exhausts the slot table,
//! and exact counts are easiest to read when no other test creates scopes
//! at the same time. (Counts of a scope do not depend on other threads;
//! the lock only protects the table-wide tests.)

#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, MutexGuard};

use smith_alloc::{
    AccountingAllocator, CeilingCrossing, Counts, Scope, ScopeId, ScopeKind, count, count_in,
    current, enter, is_global_allocator, report,
};

#[global_allocator]
static GLOBAL: AccountingAllocator = AccountingAllocator::new();

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Allocates `size` bytes through the global allocator.
fn raw_alloc(size: usize, align: usize) -> (*mut u8, Layout) {
    let layout = Layout::from_size_align(size, align).unwrap();
    // SAFETY: tests pass non-zero sizes here.
    let p = unsafe { std::alloc::alloc(layout) };
    assert!(!p.is_null());
    (black_box(p), layout)
}

fn raw_free(p: *mut u8, layout: Layout) {
    // SAFETY: `p` came from `raw_alloc`/`raw_realloc` with `layout`.
    unsafe { std::alloc::dealloc(p, layout) }
}

fn raw_realloc(p: *mut u8, layout: Layout, new_size: usize) -> (*mut u8, Layout) {
    // SAFETY: `p` came from the global allocator with `layout`; sizes are
    // non-zero.
    let q = unsafe { std::alloc::realloc(p, layout, new_size) };
    assert!(!q.is_null());
    (
        black_box(q),
        Layout::from_size_align(new_size, layout.align()).unwrap(),
    )
}

fn counts(
    allocations: u64,
    reallocs: u64,
    allocated: u64,
    frees: u64,
    live: u64,
    peak: u64,
) -> Counts {
    Counts {
        allocations,
        reallocs,
        allocated_bytes: allocated,
        frees,
        live_bytes: live,
        peak_live_bytes: peak,
    }
}

#[test]
fn the_accounting_allocator_is_this_binary_s_global_allocator() {
    let _s = serial();
    assert!(is_global_allocator());
}

/// Whether `got` holds `"x"`, compared with a string built here: the
/// expected string's block is allocated and freed inside this function, so
/// an optimized build sees the `__rust_alloc` call that made it next to the
/// `__rust_dealloc` that frees it.
#[inline(never)]
fn holds_a_fresh_x(got: &Option<String>) -> bool {
    got.as_ref() == Some(&"x".to_owned())
}

#[test]
fn a_block_allocated_and_freed_in_one_function_is_freed_on_every_path() {
    let _s = serial();
    // Inlining `dealloc` into this crate once made the optimizer read the
    // block's header as uninitialized memory of the block `__rust_alloc`
    // returned, and delete the path that frees it: the comparison came out
    // false (or the binary died on a trap) for equal strings.
    assert!(holds_a_fresh_x(&black_box(Some(String::from("x")))));
    assert!(!holds_a_fresh_x(&black_box(Some(String::from("y")))));
    assert!(!holds_a_fresh_x(&black_box(None)));
}

#[test]
fn a_thread_without_a_guard_is_in_the_process_scope() {
    let _s = serial();
    let seen = std::thread::spawn(|| {
        let id = current();
        let process = Scope::process().stats();
        (id, process.kind, process.name, process.open)
    })
    .join()
    .unwrap();
    assert_eq!(
        seen,
        (ScopeId::PROCESS, ScopeKind::Process, "process", true)
    );
    let first = report().scopes[0];
    assert_eq!(
        (first.id, first.kind),
        (ScopeId::PROCESS, ScopeKind::Process)
    );
}

#[test]
fn nested_guards_charge_the_innermost_scope_and_restore_the_outer_one() {
    let _s = serial();
    let outer_id = current();
    let session = Scope::new(ScopeKind::Session, "session");
    let turn = Scope::new(ScopeKind::Turn, "turn");
    let (a, b, c);
    {
        let _g1 = enter(&session);
        assert_eq!(current(), session.id());
        a = raw_alloc(100, 8);
        {
            let _g2 = turn.enter();
            assert_eq!(current(), turn.id());
            b = raw_alloc(30, 8);
        }
        assert_eq!(current(), session.id());
        c = raw_alloc(7, 1);
    }
    assert_eq!(current(), outer_id);
    assert_eq!(session.stats().counts(), counts(2, 0, 107, 0, 107, 107));
    assert_eq!(turn.stats().counts(), counts(1, 0, 30, 0, 30, 30));
    for (p, l) in [a, b, c] {
        raw_free(p, l);
    }
    assert_eq!(session.stats().counts(), counts(2, 0, 107, 2, 0, 107));
    assert_eq!(turn.stats().counts(), counts(1, 0, 30, 1, 0, 30));
    assert_eq!(
        (turn.stats().kind, turn.stats().name),
        (ScopeKind::Turn, "turn")
    );
    // Closed with nothing live: the slots are released at once.
    let ids = [session.id(), turn.id()];
    assert!(report().get(ids[0]).is_some());
    drop((session, turn));
    let r = report();
    assert!(r.get(ids[0]).is_none() && r.get(ids[1]).is_none(), "{r}");
}

#[test]
fn dropping_an_outer_guard_first_ends_the_inner_guards_too() {
    let _s = serial();
    let before = current();
    let a = Scope::new(ScopeKind::Session, "a");
    let b = Scope::new(ScopeKind::Turn, "b");
    let c = Scope::new(ScopeKind::Frame, "c");
    let ga = a.enter();
    let gb = b.enter();
    drop(ga);
    // A and the B inside it have ended: back to the scope before A.
    assert_eq!(current(), before);
    let gc = c.enter();
    assert_eq!(current(), c.id());
    // B's late drop changes nothing: C stays current.
    drop(gb);
    assert_eq!(current(), c.id());
    drop(gc);
    assert_eq!(current(), before);
    // Nothing allocated while the ended guards were dropped was charged
    // to them.
    let p = raw_alloc(64, 8);
    raw_free(p.0, p.1);
    assert_eq!(a.stats().allocations, 0);
    assert_eq!(b.stats().allocations, 0);
}

#[test]
fn guards_nested_deeper_than_the_tracked_stack_restore_in_order() {
    let _s = serial();
    let before = current();
    let scopes: Vec<Scope> = (0..80)
        .map(|_| Scope::new(ScopeKind::Frame, "deep"))
        .collect();
    let mut guards = Vec::with_capacity(scopes.len());
    for s in &scopes {
        guards.push(s.enter());
        assert_eq!(current(), s.id());
    }
    while let Some(g) = guards.pop() {
        let id = g.scope().id();
        assert_eq!(current(), id);
        drop(g);
    }
    assert_eq!(current(), before);
}

#[test]
fn a_block_freed_on_another_thread_leaves_that_thread_s_scope_unchanged() {
    let _s = serial();
    let a = Scope::new(ScopeKind::Turn, "a");
    let b = Scope::new(ScopeKind::IoRequest, "b");
    let block: Vec<u8> = {
        let _g = a.enter();
        Vec::with_capacity(1000)
    };
    assert_eq!(a.stats().counts(), counts(1, 0, 1000, 0, 1000, 1000));
    std::thread::scope(|t| {
        t.spawn(|| {
            let _g = b.enter();
            drop(black_box(block));
        });
    });
    assert_eq!(a.stats().counts(), counts(1, 0, 1000, 1, 0, 1000));
    assert_eq!(b.stats().counts(), Counts::default());
}

#[test]
fn two_threads_in_one_scope_keep_live_and_peak_exact() {
    let _s = serial();
    let a = Scope::new(ScopeKind::Session, "shared");
    let barrier = Barrier::new(2);
    let mine_addr = AtomicUsize::new(0);
    let layout = Layout::from_size_align(200, 8).unwrap();
    // This thread holds A's lease; the worker allocates in A through the
    // atomic path and frees this thread's block. The worker is spawned
    // (which allocates) before A is entered.
    std::thread::scope(|t| {
        let worker = t.spawn(|| {
            barrier.wait();
            let g = a.enter();
            let theirs = raw_alloc(300, 8);
            barrier.wait();
            raw_free(mine_addr.load(Ordering::Relaxed) as *mut u8, layout);
            barrier.wait();
            barrier.wait();
            drop(g);
            (theirs.0 as usize, theirs.1)
        });
        let g = a.enter();
        barrier.wait();
        let mine = raw_alloc(200, 8);
        mine_addr.store(mine.0 as usize, Ordering::Relaxed);
        barrier.wait();
        barrier.wait();
        assert_eq!(a.stats().counts(), counts(2, 0, 500, 1, 300, 500));
        let again = raw_alloc(50, 8);
        assert_eq!(a.stats().counts(), counts(3, 0, 550, 1, 350, 500));
        barrier.wait();
        let (theirs, theirs_layout) = worker.join().unwrap();
        drop(g);
        raw_free(theirs as *mut u8, theirs_layout);
        raw_free(again.0, again.1);
    });
    assert_eq!(a.stats().counts(), counts(3, 0, 550, 3, 0, 500));
}

#[test]
fn a_block_freed_in_another_scope_is_charged_to_its_own_scope() {
    let _s = serial();
    let a = Scope::new(ScopeKind::Turn, "a");
    let b = Scope::new(ScopeKind::Frame, "b");
    let block = {
        let _g = a.enter();
        raw_alloc(256, 16)
    };
    {
        let _g = b.enter();
        raw_free(block.0, block.1);
    }
    assert_eq!(a.stats().counts(), counts(1, 0, 256, 1, 0, 256));
    assert_eq!(b.stats().counts(), Counts::default());
}

#[test]
fn realloc_moves_bytes_of_the_block_s_scope_and_counts_the_call_in_the_caller_s() {
    let _s = serial();
    let a = Scope::new(ScopeKind::Session, "owner");
    let b = Scope::new(ScopeKind::Turn, "caller");
    let p = {
        let _g = a.enter();
        raw_alloc(16, 8)
    };
    let (p, grown) = {
        let _g = b.enter();
        // Small growth (may stay in place), then a large one (moves).
        let (p, l) = raw_realloc(p.0, p.1, 100);
        // SAFETY: `p` is valid for 100 bytes.
        unsafe { p.write_bytes(0xAB, 100) };
        let (p, l) = raw_realloc(p, l, 1 << 20);
        // SAFETY: the first 100 bytes were copied by realloc.
        assert_eq!(unsafe { *p.add(99) }, 0xAB);
        (p, l)
    };
    assert_eq!(b.stats().counts(), counts(2, 2, 0, 0, 0, 0));
    assert_eq!(
        a.stats().counts(),
        counts(1, 0, 1 << 20, 0, 1 << 20, 1 << 20)
    );
    // Shrink in A itself, then free on another thread: the block's header
    // survived both moves.
    let (p, shrunk) = {
        let _g = a.enter();
        raw_realloc(p, grown, 10)
    };
    assert_eq!(a.stats().counts(), counts(2, 1, 1 << 20, 0, 10, 1 << 20));
    let addr = p as usize;
    std::thread::spawn(move || raw_free(addr as *mut u8, shrunk))
        .join()
        .unwrap();
    assert_eq!(a.stats().counts(), counts(2, 1, 1 << 20, 1, 0, 1 << 20));
    assert_eq!(b.stats().counts(), counts(2, 2, 0, 0, 0, 0));
}

#[test]
fn vec_growth_counts_exactly() {
    let _s = serial();
    let (v, stats) = count(|| {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..100 {
            v.push(i);
        }
        v
    });
    // Capacity 4, 8, 16, 32, 64, 128 elements of 8 bytes.
    assert_eq!(stats.counts(), counts(6, 5, 1024, 0, 1024, 1024));
    assert_eq!(v.capacity(), 128);
    assert_eq!((stats.kind, stats.name), (ScopeKind::KernelCall, "count"));
}

#[test]
fn ceilings_are_recorded_and_reported_never_refused() {
    let _s = serial();
    let s = Scope::new(ScopeKind::Frame, "budgeted");
    s.set_ceiling(Some(1000));
    let g = s.enter();
    let a = raw_alloc(600, 8);
    assert_eq!(s.stats().ceiling_crossings, 0);
    let b = raw_alloc(600, 8); // 1200 > 1000: first crossing
    let c = raw_alloc(600, 8); // already above: not a crossing
    raw_free(b.0, b.1);
    raw_free(c.0, c.1); // back to 600
    let d = raw_alloc(500, 8); // 1100: second crossing
    drop(g);
    // Every block is usable: the allocations succeeded.
    for (p, l) in [a, d] {
        // SAFETY: each block is valid for `l.size()` bytes.
        unsafe { p.write_bytes(1, l.size()) };
    }
    let stats = s.stats();
    assert_eq!(stats.ceiling, Some(1000));
    assert_eq!(stats.ceiling_crossings, 2);
    assert_eq!(
        stats.first_crossing,
        Some(CeilingCrossing {
            live_bytes: 1200,
            request_bytes: 600,
            allocation: 2,
        })
    );
    let r = report();
    let crossed: Vec<ScopeId> = r.crossed().map(|x| x.id).collect();
    assert!(crossed.contains(&s.id()), "{r}");
    let text = r.to_string();
    assert!(
        text.contains(&format!(
            "ceiling crossed: {} frame \"budgeted\" went over 1000 bytes 2 time(s); first at \
             allocation 2 (600 bytes requested, 1200 live)",
            s.id()
        )),
        "{text}"
    );
    raw_free(a.0, a.1);
    raw_free(d.0, d.1);
    s.set_ceiling(None);
    assert_eq!(s.stats().ceiling, None);
}

fn workload() -> usize {
    let mut map: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for i in 0..200u32 {
        let key = format!("key-{:04}", (i * 7919) % 200);
        map.entry(key).or_default().extend(0..(i % 13));
    }
    let mut joined = String::new();
    for (k, v) in &map {
        joined.push_str(k);
        joined.push_str(&v.len().to_string());
    }
    let mut words: Vec<&str> = joined.split('-').collect();
    words.sort_unstable();
    words.len() + map.len()
}

#[test]
fn counts_are_identical_across_repeated_runs() {
    let _s = serial();
    let runs: Vec<Counts> = (0..5)
        .map(|_| count(|| black_box(workload())).1.counts())
        .collect();
    assert!(runs[0].allocations > 200, "{:?}", runs[0]);
    assert_eq!(runs[0].live_bytes, 0);
    assert_eq!(runs[0].frees + runs[0].reallocs, runs[0].allocations);
    for run in &runs[1..] {
        assert_eq!(run, &runs[0]);
    }
}

#[test]
fn count_ignores_allocations_of_other_threads() {
    let _s = serial();
    let barrier = Barrier::new(2);
    let worker_scope = Scope::new(ScopeKind::IoRequest, "worker");
    std::thread::scope(|t| {
        t.spawn(|| {
            barrier.wait();
            {
                let _g = worker_scope.enter();
                let boxes: Vec<Box<u64>> = (0..50).map(Box::new).collect();
                black_box(&boxes);
            }
            barrier.wait();
        });
        let ((), stats) = count(|| {
            barrier.wait();
            barrier.wait();
        });
        assert_eq!(stats.allocations, 0);
    });
    assert_eq!(
        worker_scope.stats().counts(),
        counts(51, 0, 400 + 50 * 8, 51, 0, 800)
    );
}

#[test]
fn zero_size_and_large_alignment_layouts() {
    let _s = serial();
    let a = AccountingAllocator::new();
    let ((), stats) = count(|| {
        let zero = Layout::from_size_align(0, 1).unwrap();
        let big = Layout::from_size_align(100, 4096).unwrap();
        // SAFETY: the allocator accepts zero-size layouts (it serves them
        // from a header-sized block); each block is freed with its layout.
        unsafe {
            let z = a.alloc(zero);
            assert!(!z.is_null());
            a.dealloc(z, zero);
            let p = a.alloc(big);
            assert!(!p.is_null());
            assert_eq!(p as usize % 4096, 0);
            p.write_bytes(7, 100);
            let q = a.realloc(p, big, 5000);
            assert!(!q.is_null());
            assert_eq!(q as usize % 4096, 0);
            assert_eq!(*q.add(99), 7);
            a.dealloc(q, Layout::from_size_align(5000, 4096).unwrap());
        }
        #[repr(align(64))]
        struct Line([u8; 64]);
        // Through `black_box`: an optimized build may otherwise keep a box
        // that never escapes on the stack, and the count must see it.
        let line = std::hint::black_box(Box::new(Line([3; 64])));
        assert_eq!(&*line as *const Line as usize % 64, 0);
        assert_eq!(line.0[63], 3);
    });
    // zero-size: 1 call, no bytes; aligned: alloc + realloc, 100 -> 5000;
    // Box<Line>: 64 bytes.
    assert_eq!(stats.counts(), counts(4, 1, 5000 + 64, 2, 0, 5000));
}

#[test]
fn a_zero_size_block_that_grows_is_charged_to_the_scope_that_grew_it() {
    let _s = serial();
    let a = AccountingAllocator::new();
    let zero = Layout::from_size_align(0, 8).unwrap();
    // SAFETY: zero-size blocks are supported; freed with its final layout.
    let z = unsafe { a.alloc(zero) };
    let ((), stats) = count(|| {
        // SAFETY: `z` came from `a` with `zero`.
        let p = unsafe { a.realloc(z, zero, 48) };
        assert!(!p.is_null());
        // SAFETY: `p` is valid for 48 bytes.
        unsafe { a.dealloc(p, Layout::from_size_align(48, 8).unwrap()) };
    });
    assert_eq!(stats.counts(), counts(1, 1, 48, 1, 0, 48));
}

#[test]
fn alloc_zeroed_returns_zeroed_memory_and_is_counted() {
    let _s = serial();
    let (v, stats) = count(|| vec![0u8; 10_000]);
    assert!(v.iter().all(|&b| b == 0));
    assert_eq!(stats.counts(), counts(1, 0, 10_000, 0, 10_000, 10_000));
    let a = AccountingAllocator::new();
    let ((), stats) = count(|| {
        let l = Layout::from_size_align(333, 32).unwrap();
        // SAFETY: non-zero size; freed with the same layout.
        unsafe {
            let p = a.alloc_zeroed(l);
            assert!(!p.is_null());
            assert_eq!(p as usize % 32, 0);
            assert!(std::slice::from_raw_parts(p, 333).iter().all(|&b| b == 0));
            a.dealloc(p, l);
        }
    });
    assert_eq!(stats.counts(), counts(1, 0, 333, 1, 0, 333));
}

#[test]
fn a_non_global_instance_charges_the_same_scopes() {
    let _s = serial();
    let private = AccountingAllocator::new();
    let l = Layout::from_size_align(64, 8).unwrap();
    let ((), stats) = count(|| {
        for _ in 0..10 {
            // SAFETY: non-zero size; freed by the same allocator type.
            unsafe {
                let p = private.alloc(l);
                assert!(!p.is_null());
                // A block from one instance may be freed by another.
                GLOBAL.dealloc(black_box(p), l);
            }
        }
    });
    assert_eq!(stats.counts(), counts(10, 0, 640, 10, 0, 64));
}

#[test]
fn a_closed_scope_stays_reported_until_its_last_block_is_freed() {
    let _s = serial();
    let s = Scope::new(ScopeKind::Turn, "outlived");
    let id = s.id();
    let block = {
        let _g = s.enter();
        raw_alloc(77, 8)
    };
    drop(s);
    let r = report();
    let closed = r.get(id).copied().unwrap();
    assert!(!closed.open);
    assert_eq!(closed.counts(), counts(1, 0, 77, 0, 77, 77));
    // Freed on another thread: the last free releases the slot.
    let addr = block.0 as usize;
    let layout = block.1;
    std::thread::spawn(move || raw_free(addr as *mut u8, layout))
        .join()
        .unwrap();
    assert!(report().get(id).is_none());
    // A scope that reuses slots starts from zero.
    let fresh: Vec<Scope> = (0..8)
        .map(|_| Scope::new(ScopeKind::Turn, "fresh"))
        .collect();
    for f in &fresh {
        assert_eq!(f.stats().counts(), Counts::default());
        assert!(f.stats().open);
    }
}

#[test]
fn a_full_slot_table_falls_back_to_the_process_scope_and_counts_the_overflow() {
    let _s = serial();
    let before = report().overflowed_scopes;
    let mut scopes = Vec::new();
    loop {
        let s = Scope::new(ScopeKind::Frame, "filler");
        let fallback = s.is_fallback();
        scopes.push(s);
        if fallback {
            break;
        }
        assert!(scopes.len() <= smith_alloc::SLOT_COUNT, "never fell back");
    }
    let last = scopes.last().unwrap();
    assert_eq!(last.stats().id, ScopeId::PROCESS);
    {
        let _g = last.enter();
        assert_eq!(current(), ScopeId::PROCESS);
    }
    let r = report();
    assert_eq!(r.overflowed_scopes, before + 1);
    assert!(r.to_string().contains("charged the process scope instead"));
    drop(scopes);
    // The slots are free again.
    let (b, stats) = count_in(ScopeKind::Frame, "after", || Box::new(1u8));
    assert_eq!(stats.counts(), counts(1, 0, 1, 0, 1, 1));
    assert_eq!((*b, stats.name), (1, "after"));
}

/// A small deterministic generator (no dependency, same sequence each run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// Threads create and drop scopes, share one long-lived scope (one lease
/// holder, the others on the atomic path), and pass blocks to each other
/// through a pool, so blocks are grown, shrunk and freed on other threads
/// and in other scopes, often after their scope closed. A single lost or
/// misdirected update would leave some scope with live bytes after
/// everything is freed, and so still in the report.
#[test]
fn concurrent_cross_thread_traffic_leaves_every_scope_exactly_empty() {
    let _s = serial();
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 300;
    let shared = Scope::new(ScopeKind::Session, "shared-session");
    let pool: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::with_capacity(4096));
    let ids: Mutex<Vec<ScopeId>> = Mutex::new(Vec::with_capacity((THREADS * ROUNDS) as usize));
    std::thread::scope(|t| {
        for seed in 0..THREADS {
            let (shared, pool, ids) = (&shared, &pool, &ids);
            t.spawn(move || {
                let mut rng = Lcg(seed + 1);
                let _in_session = shared.enter();
                let mut mine: Vec<Vec<u8>> = Vec::with_capacity(64);
                for _ in 0..ROUNDS {
                    let turn = Scope::new(ScopeKind::Turn, "turn");
                    ids.lock().unwrap().push(turn.id());
                    {
                        let _g = turn.enter();
                        for _ in 0..rng.next(8) {
                            let mut v = Vec::with_capacity(1 + rng.next(300) as usize);
                            v.push(1u8);
                            mine.push(v);
                        }
                        // Grow or shrink blocks allocated in other scopes.
                        if let Some(v) = mine.first_mut() {
                            v.reserve(rng.next(2000) as usize);
                        }
                        if let Some(v) = mine.last_mut() {
                            v.shrink_to_fit();
                        }
                    }
                    // Hand blocks over and free blocks of other threads.
                    let mut p = pool.lock().unwrap();
                    while mine.len() > 8 {
                        if let Some(v) = mine.pop() {
                            p.push(v);
                        }
                    }
                    for _ in 0..rng.next(6) {
                        drop(p.pop());
                    }
                    drop(p);
                    if rng.next(3) == 0 {
                        // Allocate straight into the shared session.
                        mine.push(vec![0u8; 1 + rng.next(100) as usize]);
                    }
                    drop(turn);
                }
                mine.clear();
            });
        }
    });
    pool.lock().unwrap().clear();
    drop(pool);
    let stats = shared.stats();
    assert_eq!(stats.live_bytes, 0, "{stats:?}");
    assert!(stats.allocations > 0 && stats.frees > 0, "{stats:?}");
    let r = report();
    let ids = ids.into_inner().unwrap();
    assert_eq!(ids.len() as u64, THREADS * ROUNDS);
    let left: Vec<&smith_alloc::ScopeStats> = ids.iter().filter_map(|id| r.get(*id)).collect();
    assert!(left.is_empty(), "scopes still holding bytes: {left:?}");
}

/// The lease holder allocates and frees in its scope at full speed while
/// another thread frees the holder's blocks at the same time: the remote
/// frees must go through the atomic counters, never the holder's plain
/// ones, or updates are lost and live bytes end above zero.
#[test]
fn remote_frees_racing_the_lease_holder_lose_no_update() {
    let _s = serial();
    const BLOCKS: usize = 100_000;
    let scope = Scope::new(ScopeKind::Session, "raced");
    // A spinning start (not a barrier, whose wake-up takes long enough for
    // one side to finish alone) so that both loops really overlap.
    let go = AtomicUsize::new(0);
    let handed: Vec<Box<u64>> = {
        let _g = scope.enter();
        (0..BLOCKS as u64).map(Box::new).collect()
    };
    std::thread::scope(|t| {
        // Spawned outside the scope: spawning allocates.
        t.spawn(|| {
            let mut handed = handed;
            go.fetch_add(1, Ordering::AcqRel);
            while go.load(Ordering::Acquire) != 2 {
                std::hint::spin_loop();
            }
            while let Some(b) = handed.pop() {
                drop(black_box(b));
            }
        });
        let _g = scope.enter();
        while go.load(Ordering::Acquire) != 1 {
            std::hint::spin_loop();
        }
        go.store(2, Ordering::Release);
        for i in 0..BLOCKS as u64 {
            drop(black_box(Box::new(i)));
        }
    });
    let stats = scope.stats();
    // The vector and every handed block were live before the race; the
    // first racing allocation may or may not land before the first free.
    let before_race = 8 * BLOCKS as u64 + 8 * BLOCKS as u64;
    assert!(
        [before_race, before_race + 8].contains(&stats.peak_live_bytes),
        "{stats:?}"
    );
    assert_eq!(
        stats.counts(),
        Counts {
            allocations: 1 + 2 * BLOCKS as u64,
            reallocs: 0,
            allocated_bytes: 2 * 8 * BLOCKS as u64 + 8 * BLOCKS as u64,
            frees: 1 + 2 * BLOCKS as u64,
            live_bytes: 0,
            peak_live_bytes: stats.peak_live_bytes,
        }
    );
}
