//! The fast strict validator behind [`crate::validate`] and
//! [`crate::validate_sequence`] in [`Mode::Strict`](crate::Mode::Strict).
//!
//! [`Decoder`](crate::Decoder) builds a [`Token`](crate::Token) per head and
//! then dispatches on it and on the kind of the open frame. Validation needs
//! no tokens, so this module checks the same rules in one loop over the
//! bytes: read the head, decode its argument, check it, skip string payloads
//! (validating text as UTF-8), and keep an explicit stack of open containers.
//!
//! Rules checked, all as the strict decoder checks them: shortest heads,
//! definite lengths only, declared lengths within the remaining input (maps:
//! within half of it), [`Limits`] (depth clamped to [`MAX_DEPTH`], every
//! head counted against `max_items`, a container's children counted when its
//! head is read), UTF-8 text, two-byte simple values of at least 32,
//! canonical NaN and shortest floats, preferred bignums (tags 2 and 3 hold a
//! byte string longer than 8 bytes with no leading zero), and map keys in
//! strictly increasing bytewise order of their encodings.
//!
//! The walker answers only "valid" or "not known valid". On anything it does
//! not accept, the caller re-runs the token decoder, which produces the
//! error (offset and rule): errors are therefore exactly the decoder's, and
//! the walker only has to be fast on valid input and never accept what the
//! decoder rejects. The differential tests in `tests/all/walk.rs` hold it to
//! that.
//!
//! What keeps the loop fast (each measured on the `codec.walk_1000` gate):
//!
//! * **A map's key and value read together.** With a key due in a map,
//!   a leaf key (an integer, a simple value or a string) and a leaf value are
//!   read one after the other, the key's order checked between them, and the
//!   pair counted at once (one subtraction of 2): no bookkeeping between the
//!   two and no decision on which of them just ended. Most items of a session
//!   are such pairs (9,317 keys among the 19,903 items of the gate's corpus,
//!   almost all with leaf values). The pairs of one map run in a loop of
//!   their own, so the next pair does not first re-decide whether a key is
//!   due, and the start of the next key is recorded only when the general
//!   head must read it (a key that is not a leaf). A map of 1 to 23 pairs
//!   as a value (an entry's content, a tool call's arguments) is opened by
//!   the same loop, its pairs read next without a pass through the general
//!   head; so is a map that follows an item of an array or of the top level
//!   (every entry of a session), where the closing loop ends that item.
//!   Other containers, tags, floats and anything not valid go through the
//!   general head below, from the item the pair could not take.
//! * **No bounds checks on a leaf far from the end.** A leaf's reads (the
//!   initial byte, the eight bytes after it, the 32-byte block of a short
//!   text) all lie within 41 bytes of its head, so a head at least that far
//!   from the end of the input (nearly every one) is read by [`leaf_fast`]
//!   behind one comparison with that limit instead of a check per read;
//!   only a string's declared length is still checked against the input.
//!   The least argument of each width is a constant of its arm, not a load.
//! * **Leaf kinds from a table, widths from predicted branches.** One load
//!   from a 256-entry table by initial byte tells whether an item is a leaf
//!   and which kind (no jump through a table by major type); the argument's
//!   width is a branch per width whose arms shift the argument down from one
//!   big-endian load of the eight bytes after the initial byte. The next
//!   head's position therefore waits for the initial byte only, never for a
//!   width loaded from the table by it (that second dependent load on every
//!   head's path cost about 8 % of the gate's time on the AMD EPYC, Zen 5).
//! * **One-byte integer keys by their byte.** The usual key, an unsigned
//!   integer below 24, is one byte whose order word is the byte itself above
//!   a length of 1: no load and no mask.
//! * **The innermost container in registers.** Its count of children still
//!   to come (a map's flagged in the top bit, keys and values counted, so
//!   the parity tells a key from a value), the start of its pending key and
//!   the order word of its previous key are locals; only outer containers
//!   live in the stack array. The top level is the container at depth 0
//!   (count 1, or effectively unbounded for a sequence), so closing an item
//!   is the same loop everywhere.
//! * **No item counter when it cannot matter.** Every head takes at least one
//!   byte and every declared count is checked against the remaining bytes,
//!   so an input no longer than `max_items` bytes can never exceed the item
//!   limit; such inputs (the usual case) run a copy of the loop without the
//!   counter (and with the pair path), longer ones count every head exactly.
//! * **Key order by word.** A key's first seven encoded bytes (big-endian,
//!   zero-padded) with its length in the low byte compare as one integer in
//!   exactly bytewise order; only keys of eight bytes or more that agree on
//!   the first seven are compared byte by byte. The word is one load, one
//!   mask taken from a table by length, and one `or`.
//! * **ASCII short text without a call.** Text of at most 32 bytes is checked
//!   for a set high bit in one 32-byte block (two SSE2 movemasks on x86_64,
//!   four masked word loads elsewhere); anything else, or a short string
//!   near the end of the input, goes to the full UTF-8 validator:
//!   [`crate::utf8::valid`] (32-byte SSE2 blocks, multi-byte sequences
//!   checked at the block's high bits) for text up to 512 bytes, `simdutf8`
//!   for longer text.
//!
//! The workspace builds every function 64-byte aligned on x86_64
//! (`.cargo/config.toml`), so the walker's timing does not move with
//! unrelated code linked before it; the walker itself carries no padding or
//! other placement of its own (docs/benchmarks.md, "Function alignment",
//! "The walk by pairs" and "The codec gates on the AMD EPYC (Zen 5): where
//! the time goes").

use crate::decode::{Limits, MAX_DEPTH, key_order};
use crate::float::{CANONICAL_NAN_F16, Shortest, f16_to_f64, shortest};

/// The least argument a head may carry, by initial byte: a head wider than
/// needed is not canonical. Major type 7 uses its low bits for simple values
/// and float widths, checked separately, so it has no minimum here.
static LEAST: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        if b >> 5 != 7 {
            t[b] = match b & 0x1f {
                24 => 24,
                25 => 1 << 8,
                26 => 1 << 16,
                27 => 1 << 32,
                _ => 0,
            };
        }
        b += 1;
    }
    t
};

/// `MASK[k]` keeps the low `k` bytes of a little-endian word.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
const MASK: [u64; 9] = {
    let mut t = [0u64; 9];
    let mut k = 0;
    while k < 8 {
        t[k] = (1u64 << (8 * k)) - 1;
        k += 1;
    }
    t[8] = u64::MAX;
    t
};

/// The high bit of every byte of a word.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Set in a container's count for a map (whose count is keys plus values).
const MAP: u64 = 1 << 63;

/// The top level's count in sequence mode: more items than any input holds.
const SEQUENCE: u64 = 1 << 62;

/// An open container that is not the innermost one.
#[derive(Clone, Copy)]
struct Saved {
    remaining: u64,
    mark: usize,
    prev_word: u64,
}

const EMPTY: Saved = Saved {
    remaining: 0,
    mark: 0,
    prev_word: 0,
};

/// The little-endian word at `at` of a 32-byte block.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn le(block: &[u8; 32], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&block[at..at + 8]);
    u64::from_le_bytes(w)
}

/// True when the `n` bytes at `at` are at most 32 bytes of ASCII that are
/// followed by enough input to read them as one 32-byte block; false means
/// "use the full validator", not "invalid".
#[inline(always)]
fn short_ascii(input: &[u8], at: usize, n: usize) -> bool {
    if n > 32 {
        return false;
    }
    let Some(block) = input.get(at..at + 32).and_then(|b| b.first_chunk::<32>()) else {
        return false;
    };
    block_ascii(block, n)
}

/// True when the first `n` (at most 32) bytes of `block` are ASCII.
///
/// On x86_64 the block's high bits are gathered with two SSE2 movemasks
/// (SSE2 is part of the x86_64 baseline) and the low `n` bits tested: a
/// handful of instructions, where masking four words by length took some
/// thirty.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn block_ascii(block: &[u8; 32], n: usize) -> bool {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8};
    let p = block.as_ptr();
    // SAFETY: `block` is 32 readable bytes, so the 16 at `p` and the 16 at
    // `p + 16` are in bounds; `_mm_loadu_si128` takes unaligned pointers,
    // and SSE2 (both intrinsics) is enabled on every x86_64 target.
    let high = unsafe {
        let lo = _mm_movemask_epi8(_mm_loadu_si128(p.cast::<__m128i>())) as u32;
        let hi = _mm_movemask_epi8(_mm_loadu_si128(p.add(16).cast::<__m128i>())) as u32;
        lo | hi << 16
    };
    (u64::from(high) << (32 - n)) as u32 == 0
}

/// True when the first `n` (at most 32) bytes of `block` are ASCII: four
/// words, each masked to the bytes of the text it holds.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn block_ascii(block: &[u8; 32], n: usize) -> bool {
    let w = (le(block, 0) & MASK[n.min(8)])
        | (le(block, 8) & MASK[n.saturating_sub(8).min(8)])
        | (le(block, 16) & MASK[n.saturating_sub(16).min(8)])
        | (le(block, 24) & MASK[n.saturating_sub(24).min(8)]);
    w & HIGH == 0
}

/// True when the `n` bytes at `at` are valid UTF-8.
#[inline(always)]
fn text_ok(input: &[u8], at: usize, n: usize) -> bool {
    short_ascii(input, at, n) || utf8_ok(&input[at..at + n])
}

/// Text up to this many bytes is checked by [`crate::utf8::valid`], longer
/// text by `simdutf8`. On the `codec.walk_1000` corpus (ASCII with a
/// multi-byte character about every 155 bytes) this split measured about
/// 10 % faster than `simdutf8` for all text, and faster than splitting at
/// 1,024 bytes: `simdutf8` costs more per call (run-time dispatch, block
/// set-up), the block scan more per multi-byte character.
const INLINE_UTF8_MAX: usize = 512;

/// The full UTF-8 check: only its answer matters here (the decoder finds
/// the offset of a bad byte when it re-reads the input).
#[inline(never)]
fn utf8_ok(bytes: &[u8]) -> bool {
    if bytes.len() <= INLINE_UTF8_MAX {
        crate::utf8::valid(bytes)
    } else {
        simdutf8::basic::from_utf8(bytes).is_ok()
    }
}

/// The order word of the encoded key `input[start..end]` (`end > start`):
/// its first seven bytes big-endian in the high bytes, zero-padded, and its
/// length saturated at 8 in the low byte. Two keys' words compare exactly as
/// their encodings do bytewise, except that equal words with a length byte
/// of 8 (both keys at least eight bytes, same first seven) decide nothing.
#[inline(always)]
fn key_word(input: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    let w = match input
        .get(start..start + 8)
        .and_then(|b| b.first_chunk::<8>())
    {
        Some(b) => u64::from_be_bytes(*b),
        None => tail_word(input, start),
    };
    let k = len.min(8);
    (w & KEY_MASK[k]) | k as u64
}

/// `KEY_MASK[k]` keeps the first `k` bytes (at most seven) of a big-endian
/// word: the part of a `k`-byte key (`k` saturated at 8) [`key_word`] keeps.
/// `KEY_MASK[0]` is never used: every key has at least one byte.
const KEY_MASK: [u64; 9] = {
    let mut t = [0u64; 9];
    let mut k = 1;
    while k <= 8 {
        let keep = if k > 7 { 7 } else { k };
        t[k] = u64::MAX << (64 - 8 * keep);
        k += 1;
    }
    t
};

/// Up to eight bytes of `input` from `from`, zero-padded, as a big-endian
/// word (the end of the input is near).
#[cold]
#[inline(never)]
fn tail_word(input: &[u8], from: usize) -> u64 {
    let mut w = [0u8; 8];
    let rest = input.get(from..).unwrap_or_default();
    let n = rest.len().min(8);
    w[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(w)
}

/// The full comparison behind [`key_word`]: `prev` sorts strictly before
/// `key`.
#[cold]
#[inline(never)]
fn keys_ordered(input: &[u8], prev: (usize, usize), key: (usize, usize)) -> bool {
    key_order(&input[prev.0..prev.1], &input[key.0..key.1]) == std::cmp::Ordering::Less
}

/// The argument of a head with 1, 2, 4 or 8 argument bytes (`info` 24 to
/// 27) at `pos`, and the head's length; `None` when truncated or when
/// `info` is 28 to 31 (reserved, indefinite length or break: never strict).
#[inline(always)]
fn head_arg(input: &[u8], pos: usize, info: u8) -> Option<(u64, usize)> {
    match info {
        24 => Some((u64::from(*input.get(pos + 1)?), 2)),
        25 => {
            let w = input.get(pos + 1..pos + 3)?.first_chunk::<2>()?;
            Some((u64::from(u16::from_be_bytes(*w)), 3))
        }
        26 => {
            let w = input.get(pos + 1..pos + 5)?.first_chunk::<4>()?;
            Some((u64::from(u32::from_be_bytes(*w)), 5))
        }
        27 => {
            let w = input.get(pos + 1..pos + 9)?.first_chunk::<8>()?;
            Some((u64::from_be_bytes(*w), 9))
        }
        _ => None,
    }
}

/// What the walker does with an item, by initial byte: the high four bits of
/// [`HEAD`]. The leaves (items complete after their head and payload) come
/// first, so one comparison tells a leaf from the rest.
mod act {
    /// An integer, or a simple value of major type 7 without argument bytes.
    pub const PLAIN: u8 = 0;
    /// A byte string: its payload is skipped.
    pub const BYTES: u8 = 1;
    /// A text string: its payload is checked as UTF-8 and skipped.
    pub const TEXT: u8 = 2;
    /// Anything above is not a leaf: arrays, maps, tags, major type 7 with
    /// argument bytes (floats and two-byte simple values), and the initial
    /// bytes never valid in strict mode (argument widths 28 to 31).
    pub const LAST_LEAF: u8 = TEXT;
    /// Not a leaf.
    pub const OTHER: u8 = 3;
}

/// Per initial byte: its [`act`]. One load tells a leaf from the rest and
/// which kind of leaf it is.
static HEAD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let info = b & 0x1f;
        t[b] = match b >> 5 {
            _ if info >= 28 => act::OTHER,
            0 | 1 => act::PLAIN,
            2 => act::BYTES,
            3 => act::TEXT,
            7 if info < 24 => act::PLAIN,
            _ => act::OTHER,
        };
        b += 1;
    }
    t
};

/// The end of the leaf item (an integer, a simple value without argument
/// bytes, or a byte or text string) whose head is at `pos`, checked as the
/// general loop checks it; `None` when the item there is anything else, or
/// is not valid, and the general loop must read it.
#[inline(always)]
fn leaf(input: &[u8], pos: usize) -> Option<usize> {
    let b = *input.get(pos)?;
    let kind = HEAD[usize::from(b)];
    if kind > act::LAST_LEAF {
        return None;
    }
    let (arg, after) = match b & 0x1f {
        info @ 0..24 => (u64::from(info), pos + 1),
        24 => leaf_arg::<1>(input, pos, b)?,
        25 => leaf_arg::<2>(input, pos, b)?,
        26 => leaf_arg::<4>(input, pos, b)?,
        // 27: widths 28 to 31 are never leaves (`act::OTHER` above).
        _ => leaf_arg::<8>(input, pos, b)?,
    };
    if kind == act::PLAIN {
        return Some(after);
    }
    if arg > (input.len() - after) as u64
        || (kind == act::TEXT && !text_ok(input, after, arg as usize))
    {
        return None;
    }
    Some(after + arg as usize)
}

/// Bytes a leaf read by [`leaf_fast`] may touch from its initial byte: the
/// head (one initial byte and up to eight argument bytes) and the 32-byte
/// block after it that the short-text check reads.
const FAST_SPAN: usize = 1 + 8 + 32;

/// [`leaf`] for a head at least [`FAST_SPAN`] bytes before the end of the
/// input: the same checks and the same answer, without a bounds check on
/// any read (the head's argument, the short-text block). Only the declared
/// length of a string is still checked against the remaining input.
///
/// # Safety
///
/// `pos + FAST_SPAN <= input.len()`.
#[inline(always)]
unsafe fn leaf_fast(input: &[u8], pos: usize) -> Option<usize> {
    debug_assert!(pos + FAST_SPAN <= input.len());
    // SAFETY: the caller guarantees `FAST_SPAN` readable bytes at `pos`.
    let b = unsafe { *input.get_unchecked(pos) };
    let kind = HEAD[usize::from(b)];
    if kind > act::LAST_LEAF {
        return None;
    }
    // SAFETY (each arm): `pos + 1 + 8 <= pos + FAST_SPAN <= input.len()`.
    let (arg, after) = match b & 0x1f {
        info @ 0..24 => (u64::from(info), pos + 1),
        24 => (unsafe { fast_arg::<1>(input, pos) }?, pos + 2),
        25 => (unsafe { fast_arg::<2>(input, pos) }?, pos + 3),
        26 => (unsafe { fast_arg::<4>(input, pos) }?, pos + 5),
        // 27: widths 28 to 31 are never leaves (`act::OTHER` above).
        _ => (unsafe { fast_arg::<8>(input, pos) }?, pos + 9),
    };
    if kind == act::PLAIN {
        return Some(after);
    }
    if arg > (input.len() - after) as u64 {
        return None;
    }
    if kind == act::TEXT {
        let n = arg as usize;
        let ascii = n <= 32 && {
            // SAFETY: `after <= pos + 9`, so the 32 bytes at `after` end at
            // most at `pos + FAST_SPAN <= input.len()`.
            let block = unsafe { &*input.as_ptr().add(after).cast::<[u8; 32]>() };
            block_ascii(block, n)
        };
        if !ascii && !utf8_ok(&input[after..after + n]) {
            return None;
        }
    }
    Some(after + arg as usize)
}

/// The argument of the `W`-byte leaf head at `pos` (`Some` only when in its
/// shortest form: at least 24 for one byte, else above the next narrower
/// width's range).
///
/// # Safety
///
/// `pos + 9 <= input.len()`.
#[inline(always)]
unsafe fn fast_arg<const W: usize>(input: &[u8], pos: usize) -> Option<u64> {
    // SAFETY: the caller guarantees the eight bytes after `pos`.
    let w = unsafe {
        input
            .as_ptr()
            .add(pos + 1)
            .cast::<[u8; 8]>()
            .read_unaligned()
    };
    let a = u64::from_be_bytes(w) >> (64 - 8 * W);
    let least = match W {
        1 => 24,
        2 => 1 << 8,
        4 => 1 << 16,
        _ => 1 << 32,
    };
    if a < least {
        return None;
    }
    Some(a)
}

/// [`leaf`] at `pos`, through [`leaf_fast`] when `pos < fast_end` (that is,
/// `pos + FAST_SPAN <= input.len()`).
#[inline(always)]
fn leaf_at(input: &[u8], pos: usize, fast_end: usize) -> Option<usize> {
    if pos < fast_end {
        debug_assert!(fast_end + FAST_SPAN - 1 <= input.len());
        // SAFETY: `pos < fast_end <= input.len() - (FAST_SPAN - 1)`.
        unsafe { leaf_fast(input, pos) }
    } else {
        leaf(input, pos)
    }
}

/// The argument of `W` bytes of the leaf head at `pos` with initial byte
/// `b`, and the position after the head; `None` when truncated or not in
/// its shortest form.
#[inline(always)]
fn leaf_arg<const W: usize>(input: &[u8], pos: usize, b: u8) -> Option<(u64, usize)> {
    let after = pos + 1 + W;
    let a = after_head(input, pos) >> (64 - 8 * W);
    if after > input.len() || a < LEAST[usize::from(b)] {
        return None;
    }
    Some((a, after))
}

/// The eight bytes after the initial byte at `pos`, big-endian, zero-padded
/// past the end of the input (the caller checks that the argument bytes it
/// uses are within the input).
#[inline(always)]
fn after_head(input: &[u8], pos: usize) -> u64 {
    match input
        .get(pos + 1..pos + 9)
        .and_then(|b| b.first_chunk::<8>())
    {
        Some(b) => u64::from_be_bytes(*b),
        None => tail_word(input, pos + 1),
    }
}

/// Walks `input` in strict mode. With `sequence` false it accepts exactly
/// one item filling the input; with `sequence` true, zero or more items one
/// after another, with the limits applying to the whole input (as a single
/// [`crate::Decoder`] over it applies them). Returns the number of top-level
/// items, or `None` when the input is not known to be valid.
pub fn strict(input: &[u8], limits: Limits, sequence: bool) -> Option<u64> {
    if input.len() as u64 <= limits.max_items {
        walk::<false>(input, limits, sequence)
    } else {
        walk::<true>(input, limits, sequence)
    }
}

/// [`strict`], counting heads against `max_items` when `COUNT` (see the
/// module docs for why an input of at most `max_items` bytes need not).
#[inline(never)]
fn walk<const COUNT: bool>(input: &[u8], limits: Limits, sequence: bool) -> Option<u64> {
    let len = input.len();
    if len == 0 {
        return if sequence { Some(0) } else { None };
    }
    let max_depth = limits.max_depth.min(MAX_DEPTH) as usize;
    let mut saved = [EMPTY; MAX_DEPTH as usize];
    // Byte range of each open map's previous key, for the comparisons the
    // order word cannot decide.
    let mut prev_keys = [(0usize, 0usize); MAX_DEPTH as usize + 1];
    let first = if sequence { SEQUENCE } else { 1 };
    // The innermost open container; depth 0 is the top level.
    let mut depth = 0usize;
    let mut remaining = first;
    let mut mark = 0usize;
    let mut prev_word = 0u64;
    // Heads still allowed by `max_items` (only kept when `COUNT`).
    let mut budget = limits.max_items;
    // A leaf whose head starts before this has `FAST_SPAN` bytes of input
    // from its head on, and is read without bounds checks.
    let fast_end = len.saturating_sub(FAST_SPAN - 1);
    let mut pos = 0usize;
    'next: loop {
        'item: {
            // ---- a map's key and value together, when both are leaves ----
            // With a key due in a map, a leaf key and a leaf value are read
            // one after the other, with no bookkeeping between them and no
            // decision on which of the two just ended. Anything else (a
            // container or tag as key or value, a float, an item that is
            // not valid) is left to the general head below, from the item
            // the pair could not take.
            'pair: {
                if !COUNT && remaining & (MAP | 1) == MAP {
                    // One pair after another while the map's keys and values are leaves.
                    loop {
                        let end = match input.get(pos) {
                            // The usual key: an unsigned integer below 24, one
                            // byte, whose order word is the byte itself above a
                            // length of 1 (no load, no mask). A one-byte key
                            // never leaves the order undecided, so its range is
                            // not kept.
                            Some(&k) if k < 24 => {
                                let w = u64::from(k) << 56 | 1;
                                if w <= prev_word {
                                    return None;
                                }
                                prev_word = w;
                                pos + 1
                            }
                            _ => {
                                let Some(end) = leaf_at(input, pos, fast_end) else {
                                    // The general head reads this key; the
                                    // closing loop finds it from `mark`.
                                    mark = pos;
                                    break 'pair;
                                };
                                let w = key_word(input, pos, end);
                                if w <= prev_word
                                    && (w != prev_word
                                        || w & 0xff != 8
                                        || !keys_ordered(input, prev_keys[depth], (pos, end)))
                                {
                                    return None;
                                }
                                prev_word = w;
                                prev_keys[depth] = (pos, end);
                                end
                            }
                        };
                        pos = end;
                        if let Some(end) = leaf_at(input, pos, fast_end) {
                            pos = end;
                            if remaining != MAP | 2 {
                                // Key and value counted at once. The next key's
                                // start is not kept here: a key the pair cannot
                                // take keeps it below, before the general head
                                // reads it.
                                remaining -= 2;
                                continue;
                            }
                            // The value completes the map: the closing loop counts
                            // it and ends the map.
                            remaining -= 1;
                            break 'item;
                        }
                        // A map of 1 to 23 pairs as the value: opened here, and
                        // its pairs read by this loop, as the general head would
                        // open it (counted children within the remaining input,
                        // depth within the limit).
                        let b = input.get(pos).copied().unwrap_or(0);
                        if b.wrapping_sub(0xa1) < 23 {
                            let count = u64::from(b & 0x1f) * 2;
                            if count > (len - pos - 1) as u64 || depth >= max_depth {
                                return None;
                            }
                            saved[depth] = Saved {
                                remaining: remaining - 1,
                                mark,
                                prev_word,
                            };
                            depth += 1;
                            remaining = count | MAP;
                            prev_word = 0;
                            pos += 1;
                            continue;
                        }
                        // The key is counted; the general head reads the value.
                        remaining -= 1;
                        break 'pair;
                    }
                }
            }
            // ---- one head -------------------------------------------------
            let Some(&b) = input.get(pos) else {
                // Only a sequence reaches the end of the input between items.
                return if depth == 0 && sequence {
                    Some(first - remaining)
                } else {
                    None
                };
            };
            let info = b & 0x1f;
            let arg: u64;
            if info < 24 {
                arg = u64::from(info);
                pos += 1;
            } else {
                let (a, width) = head_arg(input, pos, info)?;
                if a < LEAST[usize::from(b)] {
                    return None;
                }
                arg = a;
                pos += width;
            }
            if COUNT {
                budget = budget.checked_sub(1)?;
            }
            let available = (len - pos) as u64;
            match b >> 5 {
                0 | 1 => {}
                2 => {
                    if arg > available {
                        return None;
                    }
                    pos += arg as usize;
                }
                3 => {
                    if arg > available || !text_ok(input, pos, arg as usize) {
                        return None;
                    }
                    pos += arg as usize;
                }
                major @ (4 | 5) => {
                    let count = if major == 5 {
                        if arg > available / 2 {
                            return None;
                        }
                        arg * 2
                    } else {
                        if arg > available {
                            return None;
                        }
                        arg
                    };
                    if depth >= max_depth || (COUNT && count > budget) {
                        return None;
                    }
                    if count != 0 {
                        saved[depth] = Saved {
                            remaining,
                            mark,
                            prev_word,
                        };
                        depth += 1;
                        remaining = if major == 5 { count | MAP } else { count };
                        mark = pos;
                        prev_word = 0;
                        continue 'next;
                    }
                }
                6 => {
                    if depth >= max_depth || (COUNT && budget == 0) {
                        return None;
                    }
                    if arg == 2 || arg == 3 {
                        // A preferred bignum, read here as the tag's only child.
                        pos = bignum(input, pos, COUNT.then_some(&mut budget))?;
                    } else {
                        saved[depth] = Saved {
                            remaining,
                            mark,
                            prev_word,
                        };
                        depth += 1;
                        remaining = 1;
                        continue 'next;
                    }
                }
                _ => {
                    // Major 7: simple values and floats.
                    if info >= 24 && !simple_or_float_ok(info, arg) {
                        return None;
                    }
                }
            }
        }

        // ---- the item ending at `pos` is complete: close what it completes
        loop {
            remaining -= 1;
            if remaining & MAP != 0 {
                if remaining & 1 == 1 {
                    // A key just ended: it must sort after the previous one
                    // (`prev_word` is 0 before the first key, and every
                    // key's word is at least 1).
                    let w = key_word(input, mark, pos);
                    if w <= prev_word
                        && (w != prev_word
                            || w & 0xff != 8
                            || !keys_ordered(input, prev_keys[depth], (mark, pos)))
                    {
                        return None;
                    }
                    prev_word = w;
                    prev_keys[depth] = (mark, pos);
                    break;
                }
                // A value ended: the next key (if any) starts here.
                mark = pos;
                if remaining != MAP {
                    break;
                }
            } else if remaining != 0 {
                // An array or the top level with items to come: a map of 1 to
                // 23 pairs next (every entry of a session) is opened here.
                if !COUNT {
                    let b = input.get(pos).copied().unwrap_or(0);
                    if b.wrapping_sub(0xa1) < 23 {
                        let count = u64::from(b & 0x1f) * 2;
                        if count > (len - pos - 1) as u64 || depth >= max_depth {
                            return None;
                        }
                        saved[depth] = Saved {
                            remaining,
                            mark,
                            prev_word,
                        };
                        depth += 1;
                        remaining = count | MAP;
                        prev_word = 0;
                        pos += 1;
                    }
                }
                break;
            }
            // The innermost container is complete.
            if depth == 0 {
                // Only a single top-level item (not a sequence) gets here.
                return if pos == len { Some(1) } else { None };
            }
            depth -= 1;
            Saved {
                remaining,
                mark,
                prev_word,
            } = saved[depth];
        }
    }
}

/// Reads the byte string that must follow tag 2 or 3 at `pos` (a preferred
/// bignum: longer than eight bytes, no leading zero); returns the position
/// after it. Counts its head against `budget` when given.
#[inline(never)]
fn bignum(input: &[u8], pos: usize, budget: Option<&mut u64>) -> Option<usize> {
    let b = *input.get(pos)?;
    if b >> 5 != 2 {
        return None;
    }
    let info = b & 0x1f;
    let (arg, width) = if info < 24 {
        (u64::from(info), 1)
    } else {
        head_arg(input, pos, info)?
    };
    if arg < LEAST[usize::from(b)] {
        return None;
    }
    if let Some(budget) = budget {
        *budget = budget.checked_sub(1)?;
    }
    let start = pos + width;
    if arg > (input.len() - start) as u64 {
        return None;
    }
    let payload = &input[start..start + arg as usize];
    if payload.len() <= 8 || payload[0] == 0 {
        return None;
    }
    Some(start + payload.len())
}

/// Major type 7 with argument bytes (`info` 24 to 27): a two-byte simple
/// value (at least 32), or a float in its shortest width with NaN only as
/// the canonical half-precision NaN.
#[inline(never)]
fn simple_or_float_ok(info: u8, arg: u64) -> bool {
    match info {
        24 => arg >= 32,
        25 => {
            let h = arg as u16;
            !f16_to_f64(h).is_nan() || h == CANONICAL_NAN_F16
        }
        26 => {
            let v = f64::from(f32::from_bits(arg as u32));
            !v.is_nan() && !matches!(shortest(v), Shortest::Half(_))
        }
        _ => {
            let v = f64::from_bits(arg);
            !v.is_nan() && matches!(shortest(v), Shortest::Double(_))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_canonical_and_refuses_what_strict_refuses() {
        let l = Limits::default();
        assert_eq!(strict(&[0x00], l, false), Some(1));
        assert_eq!(
            strict(&[0xa2, 0x61, 0x61, 0x01, 0x61, 0x62, 0x02], l, false),
            Some(1)
        );
        // Unsorted and duplicate keys.
        assert_eq!(
            strict(&[0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02], l, false),
            None
        );
        assert_eq!(
            strict(&[0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02], l, false),
            None
        );
        // Non-shortest head, indefinite array, trailing bytes, empty.
        assert_eq!(strict(&[0x18, 0x17], l, false), None);
        assert_eq!(strict(&[0x9f, 0xff], l, false), None);
        assert_eq!(strict(&[0x00, 0x00], l, false), None);
        assert_eq!(strict(&[], l, false), None);
        // Sequences.
        assert_eq!(strict(&[], l, true), Some(0));
        assert_eq!(strict(&[0x00, 0x80, 0xa0], l, true), Some(3));
        // Bignum: tag 2 with a short byte string is not preferred.
        assert_eq!(strict(&[0xc2, 0x41, 0x01], l, false), None);
        // Depth limit applies to empty containers too.
        let shallow = Limits {
            max_depth: 0,
            max_items: 10,
        };
        assert_eq!(strict(&[0x80], shallow, false), None);
    }

    #[test]
    fn text_ok_agrees_with_std_for_every_short_length_and_position() {
        // Each string is checked where a 32-byte block fits after it
        // (word path, with high bytes just past its end that must not
        // count) and at the very end of the input (validator path).
        for len in 0..=40usize {
            for tail in [true, false] {
                let check = |text: &[u8]| {
                    let mut input = text.to_vec();
                    if tail {
                        input.extend_from_slice(&[0xff; 32]);
                    }
                    let got = text_ok(&input, 0, text.len());
                    assert_eq!(
                        got,
                        std::str::from_utf8(text).is_ok(),
                        "{text:02x?} (tail {tail})"
                    );
                };
                let ascii = vec![b'a'; len];
                check(&ascii);
                for at in 0..len {
                    let mut bad = ascii.clone();
                    bad[at] = 0xff;
                    check(&bad);
                    let mut high = ascii.clone();
                    high[at] = 0x80;
                    check(&high);
                    if at + 1 < len {
                        let mut two = ascii.clone();
                        two[at] = 0xc3;
                        two[at + 1] = 0xa9;
                        check(&two);
                    }
                }
            }
        }
    }

    #[test]
    fn key_words_order_exactly_as_bytes_or_defer() {
        // Every key of one to ten bytes over a small alphabet that includes
        // 0x00 (the padding byte) and 0xff, against every other.
        let alphabet = [0x00u8, 0x01, 0x61, 0xff];
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for len in 1..=10usize {
            // Enough keys per length to cover shared prefixes of every size.
            for seed in 0..64usize {
                let key: Vec<u8> = (0..len)
                    .map(|i| alphabet[(seed >> (2 * (i % 3))) % alphabet.len()])
                    .collect();
                keys.push(key);
            }
        }
        for tail in [true, false] {
            for a in &keys {
                for b in &keys {
                    let mut input = a.clone();
                    input.extend_from_slice(b);
                    if tail {
                        input.extend_from_slice(&[0xee; 8]);
                    }
                    let wa = key_word(&input, 0, a.len());
                    let wb = key_word(&input, a.len(), a.len() + b.len());
                    let want = a.cmp(b);
                    if wa == wb && wa & 0xff == 8 {
                        // Undecided: both at least eight bytes, same first seven.
                        assert!(a.len() >= 8 && b.len() >= 8 && a[..7] == b[..7]);
                    } else {
                        assert_eq!(wa.cmp(&wb), want, "{a:02x?} vs {b:02x?} (tail {tail})");
                    }
                }
            }
        }
    }
}
