//! Allocation accounting: a global allocator that charges every allocation
//! to the innermost lifetime scope on its thread.
//!
//! # Model
//!
//! A [`Scope`] stands for a lifetime: the process, a session, a turn, a
//! kernel call, a frame or an I/O request ([`ScopeKind`]). A thread makes a
//! scope current by holding a guard ([`enter`] / [`Scope::enter`]); guards
//! nest, and a thread without one is in the process scope. Every
//! allocation made through [`AccountingAllocator`], by smith or by any
//! dependency, is counted in the thread's current scope, and the block's
//! bytes stay charged to that scope for the block's whole life: freeing,
//! growing or shrinking it on another thread or in another scope changes
//! the owning scope's live bytes, never the caller's. Per scope this gives
//! allocation count, allocated bytes, live bytes and peak live bytes
//! ([`ScopeStats`]); [`report`] lists every scope that still holds a slot.
//! A scope may carry a ceiling on its live bytes: crossing it is counted
//! and described, never refused.
//!
//! # Guarantees
//!
//! The allocator never allocates, never takes a lock and never aborts. The
//! accounting lives in a fixed static table of [`SLOT_COUNT`] slots; the
//! thread state is a `const`-initialised thread-local without destructor.
//! The thread that holds a scope's lease (the first to enter it) updates its
//! counters with plain loads and stores; other threads use atomic
//! read-modify-writes on a second set of counters that readers add in.
//! Counts are exact; for a deterministic single-threaded path they are
//! identical across runs, which is what [`count`] tests rely on.
//!
//! # Testing allocation counts
//!
//! ```
//! #[global_allocator]
//! static A: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();
//!
//! fn main() {
//!     let mut buf: Vec<u8> = Vec::with_capacity(64);
//!     let ((), stats) = smith_alloc::count(|| buf.extend_from_slice(b"fits the capacity"));
//!     assert_eq!(stats.allocations, 0);
//!
//!     let (v, stats) = smith_alloc::count(|| vec![1u32, 2, 3]);
//!     assert_eq!((stats.allocations, stats.live_bytes), (1, 12));
//!     drop(v);
//! }
//! ```
//!
//! See docs/alloc-accounting.md for the block header, the limits and the
//! measured overhead.
#![deny(missing_docs)]

mod allocator;
mod count;
mod kind;
mod scope;
mod stats;
mod table;
mod thread;

pub use allocator::AccountingAllocator;
pub use count::{count, count_in, is_global_allocator};
pub use kind::{ScopeId, ScopeKind};
pub use scope::{Scope, ScopeGuard, current, enter};
pub use stats::{CeilingCrossing, Counts, Report, ScopeStats};
pub use table::SLOT_COUNT;

/// A snapshot of every scope that holds a slot (open scopes, and closed
/// ones with blocks still live), process scope first, with the table's
/// overflow counters. The report's own vector is charged to the caller's
/// scope like any allocation.
pub fn report() -> Report {
    let mut scopes = Vec::new();
    table::for_each(|s| scopes.push(*s));
    Report {
        scopes,
        overflowed_scopes: table::overflows(),
        leaked_slots: table::leaked(),
    }
}

/// Calls `f` with a snapshot of every scope that holds a slot, as
/// [`report`] lists them, without allocating.
pub fn for_each_scope(f: impl FnMut(&ScopeStats)) {
    table::for_each(f);
}

#[cfg(test)]
#[global_allocator]
static UNIT_TEST_ALLOCATOR: AccountingAllocator = AccountingAllocator::new();
