//! Integration tests for smith-codec (one binary: see STYLE.md).
//!
//! The binary installs a counting global allocator so `allocs.rs` can assert
//! exact allocation counts. Counts are per thread, so tests running in
//! parallel do not disturb each other.

// This whole binary is test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod allocs;
mod appendix;
mod json_bridge;
mod props;
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

// SAFETY: forwards to the system allocator; the counter is a const-initialised
// thread-local Cell without a destructor, so touching it never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
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
