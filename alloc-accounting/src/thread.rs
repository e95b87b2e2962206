//! Per-thread state: the current scope, the thread's id, and the stack of
//! active guards.
//!
//! One `const`-initialised `thread_local!` of `Cell`s: no lazy
//! initialisation, no destructor, nothing to allocate, so the allocator can
//! read it on any path, during thread start-up and tear-down included.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::table::{self, NO_THREAD, PROCESS_SLOT};

/// Nested guards tracked per thread; deeper guards still work but are
/// restored in drop order without out-of-order detection.
pub(crate) const GUARD_STACK: usize = 64;

/// A guard stack index meaning "not tracked".
pub(crate) const UNTRACKED: u32 = u32::MAX;

struct ThreadState {
    /// Slot index the thread's allocations are charged to.
    current: Cell<u32>,
    /// This thread's id (0 until first use).
    id: Cell<u64>,
    /// Active tracked guards.
    depth: Cell<u32>,
    /// Last guard token handed out on this thread.
    token: Cell<u64>,
    /// Token of the guard at each depth.
    stack: [Cell<u64>; GUARD_STACK],
}

thread_local! {
    static STATE: ThreadState = const {
        ThreadState {
            current: Cell::new(PROCESS_SLOT),
            id: Cell::new(0),
            depth: Cell::new(0),
            token: Cell::new(0),
            stack: [const { Cell::new(0) }; GUARD_STACK],
        }
    };
}

/// Thread ids; 0 means "none" in a slot's owner field.
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

#[cold]
fn assign_id(state: &ThreadState) -> u64 {
    let id = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    state.id.set(id);
    // The first thread that allocates (normally `main`) gets the process
    // scope's fast path.
    table::offer_process_lease(id);
    id
}

#[inline(always)]
fn id_of(state: &ThreadState) -> u64 {
    let id = state.id.get();
    if id == 0 { assign_id(state) } else { id }
}

/// The current slot and this thread's id.
#[inline(always)]
pub(crate) fn current_and_id() -> (u32, u64) {
    STATE
        .try_with(|s| (s.current.get(), id_of(s)))
        .unwrap_or((PROCESS_SLOT, NO_THREAD))
}

/// This thread's id.
#[inline(always)]
pub(crate) fn id() -> u64 {
    STATE.try_with(id_of).unwrap_or(NO_THREAD)
}

/// The slot index the thread is charging now.
pub(crate) fn current() -> u32 {
    STATE.try_with(|s| s.current.get()).unwrap_or(PROCESS_SLOT)
}

/// What a guard needs to restore on drop.
#[derive(Debug)]
pub(crate) struct Entered {
    pub(crate) saved: u32,
    pub(crate) token: u64,
    pub(crate) index: u32,
}

/// Makes `slot` current and pushes a guard record.
pub(crate) fn push(slot: u32) -> Entered {
    STATE
        .try_with(|s| {
            let saved = s.current.get();
            let token = s.token.get().wrapping_add(1);
            s.token.set(token);
            let depth = s.depth.get();
            let index = match s.stack.get(depth as usize) {
                Some(cell) => {
                    cell.set(token);
                    s.depth.set(depth + 1);
                    depth
                }
                None => UNTRACKED,
            };
            s.current.set(slot);
            Entered {
                saved,
                token,
                index,
            }
        })
        .unwrap_or(Entered {
            saved: PROCESS_SLOT,
            token: 0,
            index: UNTRACKED,
        })
}

/// Ends the guard recorded by `entered`.
///
/// If it is still on the thread's stack, the thread goes back to the scope
/// that was current when it was entered, and it and every guard entered
/// inside it end (their later drops change nothing). If an outer guard
/// already ended it, nothing changes.
pub(crate) fn pop(entered: &Entered) {
    let _ = STATE.try_with(|s| {
        if entered.index == UNTRACKED {
            // Deeper than the stack: restored in drop order.
            s.current.set(entered.saved);
            return;
        }
        let depth = s.depth.get();
        let active = entered.index < depth
            && s.stack
                .get(entered.index as usize)
                .is_some_and(|cell| cell.get() == entered.token);
        if active {
            s.current.set(entered.saved);
            s.depth.set(entered.index);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::ScopeKind;

    /// Claims `n` real slots, so that anything this thread allocates while
    /// they are pushed is charged to a slot that holds a scope.
    fn slots<const N: usize>() -> [u32; N] {
        std::array::from_fn(|_| {
            table::claim(ScopeKind::Frame, "thread-test")
                .0
                .expect("a free slot")
        })
    }

    fn close_all(slots: &[u32]) {
        for &s in slots {
            table::close(s);
        }
    }

    #[test]
    fn guards_popped_in_order_restore_each_outer_slot() {
        let [x, y] = slots();
        let base = current();
        let a = push(x);
        let b = push(y);
        assert_eq!(current(), y);
        pop(&b);
        assert_eq!(current(), x);
        pop(&a);
        assert_eq!(current(), base);
        close_all(&[x, y]);
    }

    #[test]
    fn popping_an_outer_guard_ends_the_inner_ones_and_their_late_pops_do_nothing() {
        let [x, y, z, w] = slots();
        let base = current();
        let a = push(x);
        let b = push(y);
        pop(&a);
        assert_eq!(current(), base);
        // New guards reuse the stack indexes with new tokens.
        let c = push(z);
        assert_eq!(c.index, a.index);
        let d = push(w);
        assert_eq!(d.index, b.index);
        pop(&b);
        assert_eq!(current(), w);
        pop(&d);
        pop(&c);
        assert_eq!(current(), base);
        close_all(&[x, y, z, w]);
    }
}
