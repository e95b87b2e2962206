//! Integration tests for smith-codec (one binary: see STYLE.md).
//!
//! The binary installs a counting global allocator so `allocs.rs` can assert
//! exact allocation counts. Counts are per thread, so tests running in
//! parallel do not disturb each other. The allocator also places a guard of
//! [`GUARD`] known bytes after every block, so that `runs.rs` can prove the
//! encoder never stores past a vector's capacity ([`guard_intact`]).

// This whole binary is test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod allocs;
mod appendix;
mod json_bridge;
mod props;
mod runs;
mod strictness;
mod walk;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use smith_codec::{Decoder, Encoder, Limits, Mode, Token};

struct CountingAlloc;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    // `try_with` so allocations during thread teardown are simply not counted.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

/// Bytes of known value after every block: a store past a vector's
/// capacity changes them.
pub const GUARD: usize = 16;

/// The value of every guard byte.
const GUARD_BYTE: u8 = 0x5a;

/// `layout` with room for the guard after the block (`None` when that
/// size overflows, which the allocator reports as a failed allocation).
fn guarded(layout: Layout) -> Option<Layout> {
    Layout::from_size_align(layout.size().checked_add(GUARD)?, layout.align()).ok()
}

/// Writes the guard after a block of `size` bytes at `ptr` (a null `ptr`,
/// a failed allocation, is left alone).
///
/// # Safety
///
/// `ptr` is null or a block of `size + GUARD` bytes.
unsafe fn write_guard(ptr: *mut u8, size: usize) -> *mut u8 {
    if !ptr.is_null() {
        // SAFETY: the block holds `size + GUARD` bytes.
        unsafe { ptr.add(size).write_bytes(GUARD_BYTE, GUARD) };
    }
    ptr
}

/// Whether the guard after `buf`'s buffer (allocated by this binary's
/// allocator, whose block is exactly `buf.capacity()` bytes for a
/// `Vec<u8>`) still holds its known bytes. A vector that has not
/// allocated has no guard: `true`.
pub fn guard_intact(buf: &Vec<u8>) -> bool {
    if buf.capacity() == 0 {
        return true;
    }
    // SAFETY: the block was allocated here with `GUARD` bytes after its
    // `capacity` bytes, all initialized by `write_guard`.
    let guard = unsafe { std::slice::from_raw_parts(buf.as_ptr().add(buf.capacity()), GUARD) };
    guard.iter().all(|&b| b == GUARD_BYTE)
}

// A head's unchecked store writes up to 8 bytes past the head's last one:
// the guard covers the farthest a store one head short of room could reach.
const _: () = assert!(GUARD >= 8);

// SAFETY: forwards to the system allocator with `GUARD` more bytes per
// block (same alignment), which the caller never sees; the counter is a
// const-initialised thread-local Cell without a destructor, so touching it
// never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        let Some(full) = guarded(layout) else {
            return std::ptr::null_mut();
        };
        // SAFETY: same contract as ours, for the larger block.
        unsafe { write_guard(System.alloc(full), layout.size()) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        let Some(full) = guarded(layout) else {
            return std::ptr::null_mut();
        };
        // SAFETY: same contract as ours, for the larger block.
        unsafe { write_guard(System.alloc_zeroed(full), layout.size()) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        let (Some(full), Some(new_full)) = (guarded(layout), new_size.checked_add(GUARD)) else {
            return std::ptr::null_mut();
        };
        // SAFETY: same contract as ours; `ptr` was allocated with `full`,
        // and the new block gets its own guard.
        unsafe { write_guard(System.realloc(ptr, full, new_full), new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // `ptr` was allocated, so its guarded layout exists.
        if let Some(full) = guarded(layout) {
            // SAFETY: same contract as ours; allocated with `full`.
            unsafe { System.dealloc(ptr, full) }
        }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Runs `f` and returns its result with the number of allocations (including
/// reallocations) it made on this thread.
pub fn count_allocs<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCS.with(Cell::get);
    let r = f();
    let after = ALLOCS.with(Cell::get);
    (r, after - before)
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes every token of `input` and writes each one back through the
/// encoder: the decoder -> encoder path. Indefinite tokens (lenient mode)
/// cannot be re-encoded this way and panic.
pub fn transcode(input: &[u8], mode: Mode) -> Result<Vec<u8>, smith_codec::DecodeError> {
    let mut d = Decoder::new(input, mode, Limits::default());
    let mut out = Vec::new();
    let mut e = Encoder::new(&mut out);
    while !d.is_at_end() {
        match d.next()? {
            Token::Unsigned(v) => e.u64(v),
            Token::Negative(n) => e.negative(n),
            Token::Bytes(b) => e.bytes(b),
            Token::Text(s) => e.str(s),
            Token::Array(n) => e.array(n),
            Token::Map(n) => e.map(n),
            Token::Tag(t) => e.tag(t),
            Token::Bool(b) => e.bool(b),
            Token::Null => e.null(),
            Token::Undefined => e.undefined(),
            Token::Simple(v) => e.simple(v),
            Token::Float(v) => e.f64(v),
            t => panic!("transcode cannot re-encode {t:?}"),
        };
    }
    drop(e);
    Ok(out)
}
