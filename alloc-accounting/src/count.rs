//! Exact allocation counts over a closure, for tests of every crate.

use std::alloc::Layout;
use std::hint::black_box;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::kind::ScopeKind;
use crate::scope::Scope;
use crate::stats::ScopeStats;

const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

static INSTALLED: AtomicU8 = AtomicU8::new(UNKNOWN);

/// True when [`crate::AccountingAllocator`] is this binary's
/// `#[global_allocator]`, proved by charging one probe allocation to a
/// fresh scope (done once, then remembered). Before the first successful
/// probe it also answers false while the slot table is full.
pub fn is_global_allocator() -> bool {
    probe() == Some(true)
}

/// `None` when it cannot tell (the slot table is full and it never probed).
fn probe() -> Option<bool> {
    match INSTALLED.load(Ordering::Relaxed) {
        YES => return Some(true),
        NO => return Some(false),
        _ => {}
    }
    let scope = Scope::new(ScopeKind::KernelCall, "smith_alloc::probe");
    if scope.is_fallback() {
        return None;
    }
    let layout = Layout::new::<u64>();
    {
        let _guard = scope.enter();
        // SAFETY: the layout has a non-zero size; the block is freed with
        // the global allocator and the same layout, only if allocated.
        unsafe {
            let p = black_box(std::alloc::alloc(black_box(layout)));
            if !p.is_null() {
                std::alloc::dealloc(p, layout);
            }
        }
    }
    let stats = scope.stats();
    let yes = stats.allocations == 1 && stats.allocated_bytes == layout.size() as u64;
    INSTALLED.store(if yes { YES } else { NO }, Ordering::Relaxed);
    Some(yes)
}

/// Runs `f` in a fresh scope on the current thread and returns its result
/// with that scope's stats: exactly the allocation calls `f` made on this
/// thread, and the bytes of the blocks they created (still live ones
/// included, such as those in the returned value).
///
/// Allocations made by other threads while `f` runs are charged to those
/// threads' scopes, not to this one. A `realloc` of a block created before
/// `f` counts in `allocations` (and `reallocs`) but its bytes stay with the
/// block's own scope (see [`ScopeStats`]).
///
/// The scope is a [`ScopeKind::KernelCall`] named `"count"`; use
/// [`count_in`] to choose.
///
/// This works only in a binary whose `#[global_allocator]` is
/// [`crate::AccountingAllocator`]; a test binary declares
///
/// ```
/// #[global_allocator]
/// static A: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();
///
/// fn main() {
///     let (text, stats) = smith_alloc::count(|| format!("{}-{}", 1, 2));
///     assert_eq!(text, "1-2");
///     assert_eq!((stats.allocations, stats.live_bytes), (1, 3));
/// }
/// ```
///
/// # Panics
///
/// If the accounting allocator is not the global allocator (every count
/// would be a meaningless 0), or if the slot table is full (the count would
/// include other code's allocations).
pub fn count<R>(f: impl FnOnce() -> R) -> (R, ScopeStats) {
    count_in(ScopeKind::KernelCall, "count", f)
}

/// [`count`] with the fresh scope's kind and name chosen by the caller.
///
/// # Panics
///
/// As [`count`].
pub fn count_in<R>(kind: ScopeKind, name: &'static str, f: impl FnOnce() -> R) -> (R, ScopeStats) {
    fn full(name: &str) -> ! {
        panic!(
            "smith_alloc::count: all {} scope slots are taken, so the count for {name:?} would \
             be charged to the process scope together with other code's allocations; drop \
             scopes (and the blocks they still own) that are no longer needed",
            crate::SLOT_COUNT
        )
    }
    let Some(installed) = probe() else { full(name) };
    assert!(
        installed,
        "smith_alloc::count: this binary's #[global_allocator] is not \
         smith_alloc::AccountingAllocator, so allocations are not counted and every count \
         would read 0; add `#[global_allocator] static A: smith_alloc::AccountingAllocator = \
         smith_alloc::AccountingAllocator::new();` to the test binary (tests/all/main.rs)"
    );
    let scope = Scope::new(kind, name);
    if scope.is_fallback() {
        full(name);
    }
    let result = {
        let _guard = scope.enter();
        f()
    };
    let stats = scope.stats();
    (result, stats)
}
