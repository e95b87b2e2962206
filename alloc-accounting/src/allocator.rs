//! The global allocator: a header per block naming its scope, and calls to
//! the allocator underneath (`Backend`).
//!
//! # What it sits on
//!
//! On glibc the blocks come from [`System`](std::alloc::System) (glibc's
//! malloc). On musl they come from mimalloc: musl's own malloc takes a
//! process-wide lock once a second thread exists and is slower for the many
//! small, short-lived blocks smith makes (docs/release.md, "The allocator
//! on musl", has the measurement). The accounting is the same on both: it
//! counts the calls smith makes, and whatever the allocator underneath does
//! inside a call is not counted.
//!
//! # Block layout
//!
//! Each block is over-allocated by a prefix of `max(align, 8)` bytes; the
//! four bytes just before the pointer handed out hold the index of the slot
//! the block is charged to ([`NO_SLOT`] for a zero-size block). The prefix
//! is a multiple of the alignment, so the pointer handed out keeps the
//! requested alignment; `realloc` copies the prefix with the data, so a
//! block keeps its scope when it moves. Freeing reads the index back, which
//! is what charges a free to the block's own scope whatever the freeing
//! thread's current scope is.
//!
//! # Never inlined
//!
//! The methods of [`GlobalAlloc`] are `#[inline(never)]`, and must stay so.
//! The compiler treats `__rust_alloc` as an allocation function: the block
//! it returns is a new object of exactly `layout.size()` bytes whose
//! contents are uninitialized. The header lies outside that object. The
//! allocator shims (`__rust_alloc`, `__rust_dealloc`, ...) are generated in
//! the crate that declares the `#[global_allocator]`, so with inlinable
//! methods an optimized build inlined `dealloc` into the very functions
//! that called `__rust_alloc`; the header read then became a read of
//! uninitialized memory of the new object, and the optimizer deleted every
//! path that freed a block allocated in the same function. In the `smith`
//! binary's release tests that turned `assert_eq!` of equal strings into an
//! unconditional failure (the path where the expected value is dropped
//! after an equal comparison was gone); elsewhere it compiled to a trap.
//! Behind a call the optimizer cannot look through, the header is read and
//! written only by code that sees the block the system allocator returned.

#[cfg(not(target_env = "musl"))]
use std::alloc::System;
use std::alloc::{GlobalAlloc, Layout};
use std::ptr;

use crate::table::{self, NO_SLOT};
use crate::thread;

/// The allocator the blocks come from: the system allocator, except on
/// musl, whose malloc is slow for many small blocks (module documentation,
/// "What it sits on").
#[cfg(not(target_env = "musl"))]
type Backend = System;
#[cfg(not(target_env = "musl"))]
const BACKEND: Backend = System;
/// The allocator the blocks come from: mimalloc on musl (module
/// documentation, "What it sits on").
#[cfg(target_env = "musl")]
type Backend = mimalloc::MiMalloc;
#[cfg(target_env = "musl")]
const BACKEND: Backend = mimalloc::MiMalloc;

/// The accounting allocator: every allocation is charged to the innermost
/// active scope of the calling thread, then served by the allocator
/// underneath ([`System`](std::alloc::System) on glibc, mimalloc on musl).
///
/// Install it once per binary:
///
/// ```
/// #[global_allocator]
/// static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();
///
/// fn main() {
///     assert!(smith_alloc::is_global_allocator());
/// }
/// ```
///
/// All instances share one process-wide table, so a non-global instance
/// (as a benchmark uses to call `alloc`/`dealloc` side by side with
/// `System`) charges the same scopes as the global one. A block must be
/// freed by an `AccountingAllocator` (any instance), never by another
/// allocator: it carries a header the others do not know.
///
/// It never allocates, never takes a lock and never aborts: a failed system
/// allocation is returned as null, as [`GlobalAlloc`] requires.
#[derive(Debug, Default, Clone, Copy)]
pub struct AccountingAllocator;

impl AccountingAllocator {
    /// Creates the allocator; usable in a `static`.
    pub const fn new() -> Self {
        Self
    }
}

/// Bytes in front of each block: a multiple of `align` and at least the
/// 4-byte slot index (8 keeps it a multiple of every alignment up to 8).
#[inline(always)]
const fn header_size(align: usize) -> usize {
    if align > 8 { align } else { 8 }
}

/// Reads the slot index stored in front of `user`.
///
/// # Safety
///
/// `user` is a pointer this allocator handed out with header `h`.
#[inline(always)]
unsafe fn read_slot(user: *mut u8) -> u32 {
    // SAFETY: the four bytes before `user` lie inside the block's header.
    unsafe { user.sub(4).cast::<u32>().read_unaligned() }
}

/// Writes the slot index in front of `user`.
///
/// # Safety
///
/// As for [`read_slot`].
#[inline(always)]
unsafe fn write_slot(user: *mut u8, slot: u32) {
    // SAFETY: the four bytes before `user` lie inside the block's header.
    unsafe { user.sub(4).cast::<u32>().write_unaligned(slot) }
}

impl AccountingAllocator {
    #[inline(always)]
    unsafe fn allocate(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let size = layout.size();
        let align = layout.align();
        let h = header_size(align);
        let Some(full_size) = size.checked_add(h) else {
            return ptr::null_mut();
        };
        let Ok(full) = Layout::from_size_align(full_size, align) else {
            return ptr::null_mut();
        };
        // SAFETY: `full` has a non-zero size (at least `h`).
        let base = unsafe {
            if zeroed {
                BACKEND.alloc_zeroed(full)
            } else {
                BACKEND.alloc(full)
            }
        };
        if base.is_null() {
            return base;
        }
        // SAFETY: `h <= full_size`, so `user` is inside the block, and
        // `h` is a multiple of `align`, so `user` is aligned.
        let user = unsafe { base.add(h) };
        let (current, me) = thread::current_and_id();
        if size == 0 {
            // A zero-size block holds no bytes: it is counted as an
            // allocation but charged to no scope.
            // SAFETY: `user` came from this allocator with header `h`.
            unsafe { write_slot(user, NO_SLOT) };
            table::charge_event(current, me, false);
        } else {
            // SAFETY: as above.
            unsafe { write_slot(user, current) };
            table::charge_new(current, me, size as u64);
        }
        user
    }
}

// SAFETY: every block is a `Backend` block of `size + h` bytes with the
// caller's alignment, offset by `h` (a multiple of the alignment), so the
// pointer handed out is valid for `size` bytes at the requested alignment;
// `dealloc`/`realloc` undo the offset with the same `h` (a function of the
// alignment alone) and pass `Backend` the same layout it allocated with.
unsafe impl GlobalAlloc for AccountingAllocator {
    #[inline(never)] // see the module documentation, "Never inlined"
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        unsafe { self.allocate(layout, false) }
    }

    #[inline(never)] // see the module documentation, "Never inlined"
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        unsafe { self.allocate(layout, true) }
    }

    #[inline(never)] // see the module documentation, "Never inlined"
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let h = header_size(layout.align());
        // SAFETY: `ptr` came from this allocator with `layout`, so a header
        // of `h` bytes precedes it.
        let slot = unsafe { read_slot(ptr) };
        if slot != NO_SLOT {
            table::release(slot, thread::id(), layout.size() as u64, true);
        }
        // SAFETY: `ptr - h` is the `Backend` block, allocated with this
        // layout (valid: it was checked when the block was allocated).
        unsafe {
            let full = Layout::from_size_align_unchecked(layout.size() + h, layout.align());
            BACKEND.dealloc(ptr.sub(h), full);
        }
    }

    #[inline(never)] // see the module documentation, "Never inlined"
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_size = layout.size();
        let align = layout.align();
        let h = header_size(align);
        let Some(new_full) = new_size.checked_add(h) else {
            return ptr::null_mut();
        };
        if Layout::from_size_align(new_full, align).is_err() {
            return ptr::null_mut();
        }
        // SAFETY: `ptr` came from this allocator with `layout`.
        let owner = unsafe { read_slot(ptr) };
        // SAFETY: the `Backend` block starts `h` bytes before `ptr` and was
        // allocated with `old_size + h` at `align`; `new_full` is non-zero
        // and forms a valid layout with `align` (checked above).
        let base = unsafe {
            let old_full = Layout::from_size_align_unchecked(old_size + h, align);
            BACKEND.realloc(ptr.sub(h), old_full, new_full)
        };
        if base.is_null() {
            return base;
        }
        // SAFETY: as in `allocate`; the header was copied with the block.
        let user = unsafe { base.add(h) };
        let (current, me) = thread::current_and_id();
        table::charge_event(current, me, true);
        if owner == NO_SLOT {
            if new_size != 0 {
                // A zero-size block that now holds bytes is charged to the
                // scope that gave it them.
                // SAFETY: `user` came from this allocator with header `h`.
                unsafe { write_slot(user, current) };
                table::charge_growth(current, me, new_size as u64);
            }
        } else if new_size > old_size {
            table::charge_growth(owner, me, (new_size - old_size) as u64);
        } else if new_size == 0 {
            // The block no longer holds bytes: its scope sees it freed.
            // SAFETY: as above.
            unsafe { write_slot(user, NO_SLOT) };
            table::release(owner, me, old_size as u64, true);
        } else if new_size < old_size {
            table::release(owner, me, (old_size - new_size) as u64, false);
        }
        user
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_a_multiple_of_the_alignment_and_holds_the_slot_index() {
        for (align, header) in [
            (1, 8),
            (2, 8),
            (4, 8),
            (8, 8),
            (16, 16),
            (64, 64),
            (4096, 4096),
        ] {
            assert_eq!(header_size(align), header, "align {align}");
            assert_eq!(header_size(align) % align, 0);
            assert!(header_size(align) >= 4);
        }
    }

    #[test]
    fn a_block_s_header_names_the_scope_that_allocated_it() {
        let a = AccountingAllocator::new();
        let scope = crate::Scope::new(crate::ScopeKind::Turn, "header");
        let layout = Layout::from_size_align(40, 8).expect("valid layout");
        let zero = Layout::from_size_align(0, 8).expect("valid layout");
        let (p, z) = {
            let _g = scope.enter();
            // SAFETY: valid layouts; both blocks are freed below.
            unsafe { (a.alloc(layout), a.alloc(zero)) }
        };
        assert!(!p.is_null() && !z.is_null());
        // SAFETY: both came from `a`.
        let (slot, zero_slot) = unsafe { (read_slot(p), read_slot(z)) };
        assert_eq!(zero_slot, NO_SLOT);
        assert_eq!(crate::table::snapshot(slot).map(|s| s.id), Some(scope.id()));
        // SAFETY: freed with the layouts they were allocated with.
        unsafe {
            a.dealloc(p, layout);
            a.dealloc(z, zero);
        }
        assert_eq!(scope.stats().live_bytes, 0);
    }
}
