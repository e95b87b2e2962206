//! An inlinable UTF-8 check for text that is mostly ASCII.
//!
//! [`valid`] accepts exactly what [`core::str::from_utf8`] accepts. It skips
//! ASCII in blocks (on x86_64 with SSE2, which every x86_64 processor has, so
//! no run-time feature detection: 32 bytes per step and one overlapping
//! 16-byte load for the tail; elsewhere eight bytes per step as a word), and
//! at the first byte with its high bit set checks the multi-byte sequences
//! that start there one by one, resuming the block scan at the next ASCII
//! byte. Session text is ASCII with a multi-byte character every hundred
//! bytes or so; for it this costs little more than reading the bytes, and it
//! has no dispatch through a function pointer and no set-up, which is what
//! makes a general SIMD validator expensive for strings of a few hundred
//! bytes inside the walk. Each multi-byte character costs a few
//! mispredicted branches, so for long text `simdutf8` is still faster; the
//! walker uses this validator for text of at most 512 bytes.

/// True when `bytes` is valid UTF-8 (exactly as [`core::str::from_utf8`]
/// decides).
#[inline(always)]
pub(crate) fn valid(bytes: &[u8]) -> bool {
    let len = bytes.len();
    let mut i = blocks(bytes);
    if i == usize::MAX {
        return false;
    }
    loop {
        i = skip_ascii(bytes, i);
        // Multi-byte sequences, one after another, up to the next ASCII byte.
        loop {
            let Some(&b0) = bytes.get(i) else {
                return true;
            };
            if b0 < 0x80 {
                break;
            }
            match sequence(bytes, i, b0) {
                Some(n) => i += n,
                None => return false,
            }
        }
        if i >= len {
            return true;
        }
    }
}

/// Validates `bytes` in 32-byte blocks while a whole block remains: an
/// ASCII block costs two loads and a test; in a block with high bits, the
/// sequences are checked one by one at the set bits of the block's mask,
/// without rescanning the block. Returns where the rest starts (every byte
/// before it checked), or `usize::MAX` when the input is not UTF-8.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn blocks(bytes: &[u8]) -> usize {
    let len = bytes.len();
    let p = bytes.as_ptr();
    let mut i = 0;
    while i + 32 <= len {
        // SAFETY: `i + 32 <= len`, so the 16 bytes at `i` and the 16 at
        // `i + 16` are all inside `bytes`.
        let m = unsafe { high16(p.add(i)) | (high16(p.add(i + 16)) << 16) };
        if m == 0 {
            i += 32;
            continue;
        }
        // Bytes whose bit is clear are ASCII; each set bit not consumed by
        // the sequence before it must start a sequence.
        let mut j = i + m.trailing_zeros() as usize;
        loop {
            let Some(n) = sequence(bytes, j, bytes[j]) else {
                return usize::MAX;
            };
            j += n;
            let rel = j - i;
            if rel >= 32 {
                break;
            }
            let rest = m >> rel;
            if rest == 0 {
                j = i + 32;
                break;
            }
            j += rest.trailing_zeros() as usize;
        }
        i = j;
    }
    i
}

/// Without SSE2 every byte is left to the word-at-a-time loop.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn blocks(_: &[u8]) -> usize {
    0
}

/// Whether `b` is a continuation byte (`10xxxxxx`).
#[inline(always)]
fn cont(b: u8) -> bool {
    (b as i8) < -64
}

/// The length of the valid multi-byte sequence that starts with `b0` at
/// `bytes[i]` (`b0 >= 0x80`), or `None` when it is not one (a stray
/// continuation byte, an overlong form, a surrogate, a code point above
/// U+10FFFF, a lead byte that cannot start a sequence, or a sequence cut
/// short by the end of the input).
#[inline(always)]
fn sequence(bytes: &[u8], i: usize, b0: u8) -> Option<usize> {
    // The second byte's allowed range depends on the lead byte (RFC 3629,
    // section 4); every later byte is a plain continuation byte.
    let (lo, hi, n) = match b0 {
        0xC2..=0xDF => (0x80, 0xBF, 2),
        0xE0 => (0xA0, 0xBF, 3),
        0xE1..=0xEC | 0xEE..=0xEF => (0x80, 0xBF, 3),
        0xED => (0x80, 0x9F, 3),
        0xF0 => (0x90, 0xBF, 4),
        0xF1..=0xF3 => (0x80, 0xBF, 4),
        0xF4 => (0x80, 0x8F, 4),
        _ => return None,
    };
    let b1 = *bytes.get(i + 1)?;
    if b1 < lo || b1 > hi {
        return None;
    }
    if n >= 3 && !cont(*bytes.get(i + 2)?) {
        return None;
    }
    if n == 4 && !cont(*bytes.get(i + 3)?) {
        return None;
    }
    Some(n)
}

/// One bit per byte of the 16 bytes at `p`: its high bit.
///
/// # Safety
///
/// `p` must be valid for reads of 16 bytes (no alignment needed).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
unsafe fn high16(p: *const u8) -> u32 {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8};
    // SAFETY: the caller guarantees 16 readable bytes at `p`, and the load is
    // unaligned; SSE2 is enabled at compile time (it is part of every x86_64
    // target), so both intrinsics are available without a run-time check.
    unsafe { _mm_movemask_epi8(_mm_loadu_si128(p.cast::<__m128i>())) as u32 }
}

/// The index of the first byte at or after `i` with its high bit set, or
/// `bytes.len()` when there is none (`i <= bytes.len()`).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn skip_ascii(bytes: &[u8], mut i: usize) -> usize {
    let len = bytes.len();
    let p = bytes.as_ptr();
    while i + 32 <= len {
        // SAFETY: `i + 32 <= len`, so the 16 bytes at `i` and the 16 at
        // `i + 16` are all inside `bytes`.
        let (a, b) = unsafe { (high16(p.add(i)), high16(p.add(i + 16))) };
        let m = a | (b << 16);
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 32;
    }
    if i + 16 <= len {
        // SAFETY: `i + 16 <= len`: the 16 bytes at `i` are inside `bytes`.
        let m = unsafe { high16(p.add(i)) };
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    if i >= len {
        return len;
    }
    if len >= 16 {
        // The last 16 bytes, overlapping what was already scanned; the bits
        // of the bytes before `i` are shifted out (`len - 16 < i < len`).
        let start = len - 16;
        // SAFETY: `start + 16 == len`: the 16 bytes at `start` are inside
        // `bytes`.
        let m = unsafe { high16(p.add(start)) } >> (i - start);
        return if m != 0 {
            i + m.trailing_zeros() as usize
        } else {
            len
        };
    }
    skip_ascii_bytes(bytes, i)
}

/// The index of the first byte at or after `i` with its high bit set, or
/// `bytes.len()` when there is none (`i <= bytes.len()`).
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn skip_ascii(bytes: &[u8], mut i: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(w) = bytes.get(i..i + 8).and_then(|w| w.first_chunk::<8>()) {
        let m = u64::from_le_bytes(*w) & HIGH;
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    skip_ascii_bytes(bytes, i)
}

/// [`skip_ascii`] one byte at a time, for a tail shorter than a block.
#[inline(always)]
fn skip_ascii_bytes(bytes: &[u8], mut i: usize) -> usize {
    while let Some(&b) = bytes.get(i) {
        if b >= 0x80 {
            return i;
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::valid;
    use proptest::prelude::*;

    fn agrees(b: &[u8]) {
        assert_eq!(
            valid(b),
            core::str::from_utf8(b).is_ok(),
            "disagreement on {b:02x?}"
        );
    }

    #[test]
    fn all_one_and_two_byte_inputs() {
        for a in 0..=255u8 {
            agrees(&[a]);
            for b in 0..=255u8 {
                agrees(&[a, b]);
            }
        }
    }

    #[test]
    fn all_three_byte_inputs() {
        let mut buf = [0u8; 3];
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                for c in 0..=255u8 {
                    buf = [a, b, c];
                    agrees(&buf);
                }
            }
        }
        assert_eq!(buf, [255, 255, 255]);
    }

    /// Every four-byte input whose first byte is 0xF0 or above: 2^28 inputs,
    /// about a second in a release build and far longer in a debug one, so it
    /// runs with `cargo test --release -p smith-codec -- --ignored`. The
    /// dense sample below runs in every build.
    #[test]
    #[ignore = "exhaustive: run with --release -- --ignored"]
    fn all_four_byte_inputs_from_f0() {
        for a in 0xF0..=0xFFu8 {
            for b in 0..=255u8 {
                for c in 0..=255u8 {
                    for d in 0..=255u8 {
                        agrees(&[a, b, c, d]);
                    }
                }
            }
        }
    }

    /// Four-byte inputs from 0xF0 up with every byte drawn from the values
    /// around each range boundary the rules care about.
    #[test]
    fn four_byte_inputs_around_every_boundary() {
        const EDGES: [u8; 22] = [
            0x00, 0x41, 0x7F, 0x80, 0x81, 0x8E, 0x8F, 0x90, 0x91, 0x9F, 0xA0, 0xA1, 0xBE, 0xBF,
            0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xF0, 0xFF,
        ];
        for a in 0xF0..=0xFFu8 {
            for &b in &EDGES {
                for &c in &EDGES {
                    for &d in &EDGES {
                        agrees(&[a, b, c, d]);
                    }
                }
            }
        }
    }

    /// Valid and invalid non-ASCII sequences of every length.
    fn samples() -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = [
            "é",
            "ß",
            "\u{7FF}",
            "\u{800}",
            "€",
            "\u{D7FF}",
            "\u{E000}",
            "\u{FFFD}",
            "\u{FFFF}",
            "\u{10000}",
            "😀",
            "\u{10FFFF}",
            "é€😀",
            "aé",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let invalid: [&[u8]; 20] = [
            &[0x80],
            &[0xBF],
            &[0xC0, 0x80],
            &[0xC1, 0xBF],
            &[0xC2],
            &[0xC2, 0x41],
            &[0xE0, 0x80, 0x80],
            &[0xE0, 0x9F, 0xBF],
            &[0xED, 0xA0, 0x80],
            &[0xED, 0xBF, 0xBF],
            &[0xE2, 0x82],
            &[0xE2, 0x82, 0x41],
            &[0xF0, 0x80, 0x80, 0x80],
            &[0xF0, 0x8F, 0xBF, 0xBF],
            &[0xF4, 0x90, 0x80, 0x80],
            &[0xF5, 0x80, 0x80, 0x80],
            &[0xF0, 0x9F, 0x98],
            &[0xF0, 0x9F, 0x98, 0x41],
            &[0xF8, 0x88, 0x80, 0x80, 0x80],
            &[0xFF],
        ];
        v.extend(invalid.iter().map(|b| b.to_vec()));
        v
    }

    #[test]
    fn sequences_at_every_offset_inside_ascii() {
        for s in samples() {
            for before in 0..=40 {
                for after in [0, 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 40] {
                    let mut b = vec![b'x'; before];
                    b.extend_from_slice(&s);
                    b.extend(std::iter::repeat_n(b'y', after));
                    agrees(&b);
                    // And a second sequence later in the same string.
                    b.extend_from_slice(&s);
                    agrees(&b);
                }
            }
        }
    }

    #[test]
    fn truncated_sequences_at_the_end() {
        for s in ["é", "€", "😀", "\u{10FFFF}", "\u{800}"] {
            let s = s.as_bytes();
            for before in 0..=40 {
                for cut in 1..s.len() {
                    let mut b = vec![b'a'; before];
                    b.extend_from_slice(&s[..cut]);
                    assert!(!valid(&b), "accepted truncated {b:02x?}");
                    agrees(&b);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn agrees_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(valid(&b), core::str::from_utf8(&b).is_ok());
        }

        #[test]
        fn accepts_valid_strings(s in any::<String>()) {
            prop_assert!(valid(s.as_bytes()));
        }

        #[test]
        fn agrees_on_mostly_ascii_with_one_byte_changed(
            s in "[a-z ]{0,80}[é€😀]?[a-z ]{0,80}",
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            prop_assert!(valid(s.as_bytes()));
            let mut b = s.into_bytes();
            if !b.is_empty() {
                let i = at.index(b.len());
                b[i] = byte;
            }
            prop_assert_eq!(valid(&b), core::str::from_utf8(&b).is_ok());
        }
    }
}
