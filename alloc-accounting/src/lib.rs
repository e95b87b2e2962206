//! Allocation accounting: a global allocator that charges every allocation to
//! the innermost lifetime scope on its thread.
#![deny(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};

/// The process-wide accounting allocator (placeholder until the real one lands).
#[derive(Debug, Default)]
pub struct AccountingAllocator;

impl AccountingAllocator {
    /// Creates the allocator; usable in a `static`.
    pub const fn new() -> Self {
        Self
    }
}

// SAFETY: forwards every call unchanged to the system allocator.
unsafe impl GlobalAlloc for AccountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}
