//! The fast strict validator behind [`crate::validate`] and
//! [`crate::validate_sequence`] in [`Mode::Strict`](crate::Mode::Strict).
//!
//! [`Decoder`](crate::Decoder) builds a [`Token`](crate::Token) per head and
//! then dispatches on it and on the kind of the open frame; on a long input
//! that costs two hard-to-predict indirect jumps per item. Validation needs
//! no tokens, so this module checks the same rules in one loop over the
//! bytes: read the head, decode its argument, check it, skip string payloads
//! (validating text as UTF-8), and keep an explicit stack of "items still to
//! come" counters with the byte range of each map's previous key.
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

use crate::decode::{Limits, MAX_DEPTH, key_order, utf8};
use crate::float::{CANONICAL_NAN_F16, Shortest, f16_to_f64, shortest};

/// One open container (array, map or tag).
#[derive(Clone, Copy)]
struct Frame {
    /// Children still to come (a map counts keys and values).
    remaining: u64,
    /// True for a map.
    map: bool,
    /// Map: where the pending key starts.
    mark: usize,
    /// Map: byte range of the previous key; `prev_end == 0` when none yet.
    prev_start: usize,
    prev_end: usize,
}

const EMPTY: Frame = Frame {
    remaining: 0,
    map: false,
    mark: 0,
    prev_start: 0,
    prev_end: 0,
};

/// True when `bytes` is valid UTF-8. Short text (keys, names, ids) is
/// checked for ASCII with a few word loads (overlapping, so no byte loop);
/// anything else goes to the decoder's validator.
#[inline(always)]
fn text_ok(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    let word = |at: usize| -> u64 {
        bytes
            .get(at..at + 8)
            .and_then(|w| w.first_chunk::<8>())
            .map_or(HIGH, |w| u64::from_ne_bytes(*w))
    };
    let ascii = if (8..=32).contains(&n) {
        let last = n - 8;
        (word(0) | word(8.min(last)) | word(16.min(last)) | word(last)) & HIGH == 0
    } else if n < 8 {
        bytes.iter().fold(0u8, |acc, &b| acc | b) < 0x80
    } else {
        false
    };
    ascii || utf8(bytes).is_ok()
}

/// Walks `input` in strict mode. With `sequence` false it accepts exactly
/// one item filling the input; with `sequence` true, zero or more items one
/// after another, with the limits applying to the whole input (as a single
/// [`crate::Decoder`] over it applies them). Returns the number of top-level
/// items, or `None` when the input is not known to be valid.
#[inline(never)]
pub fn strict(input: &[u8], limits: Limits, sequence: bool) -> Option<u64> {
    let len = input.len();
    if len == 0 {
        return if sequence { Some(0) } else { None };
    }
    let max_depth = limits.max_depth.min(MAX_DEPTH) as usize;
    let max_items = limits.max_items;
    let mut stack = [EMPTY; MAX_DEPTH as usize];
    let mut depth = 0usize;
    let mut items = 0u64;
    let mut top_level = 0u64;
    let mut pos = 0usize;
    // The previous head was tag 2 or 3: this head must be a preferred
    // bignum's byte string.
    let mut bignum = false;

    loop {
        let b = *input.get(pos)?;
        let major = b >> 5;
        let info = b & 0x1f;
        let arg: u64;
        if info < 24 {
            arg = u64::from(info);
            pos += 1;
        } else if info <= 27 {
            // 1, 2, 4 or 8 argument bytes, read as one big-endian word.
            let shift = u32::from(info - 24);
            let n = 1usize << shift;
            arg = if let Some(w) = input.get(pos + 1..pos + 9) {
                let w = u64::from_be_bytes(*w.first_chunk::<8>()?);
                w >> (64 - 8 * n as u32)
            } else {
                let bytes = input.get(pos + 1..pos + 1 + n)?;
                bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
            };
            // Shortest form: 24 needs at least 24, wider heads need a value
            // that does not fit the next narrower one.
            let least = if n == 1 { 24 } else { 1u64 << (4 * n as u32) };
            if major != 7 && arg < least {
                return None;
            }
            pos += 1 + n;
        } else {
            // Reserved (28..=30) or indefinite/break (31): never strict.
            return None;
        }
        items += 1;
        if items > max_items {
            return None;
        }
        if bignum && major != 2 {
            return None;
        }
        let available = (len - pos) as u64;
        match major {
            0 | 1 => {}
            2 | 3 => {
                if arg > available {
                    return None;
                }
                let stop = pos + arg as usize;
                let payload = &input[pos..stop];
                if major == 3 && !text_ok(payload) {
                    return None;
                }
                if bignum {
                    if payload.len() <= 8 || payload[0] == 0 {
                        return None;
                    }
                    bignum = false;
                }
                pos = stop;
            }
            4..=6 => {
                let children = match major {
                    4 => {
                        if arg > available {
                            return None;
                        }
                        arg
                    }
                    5 => {
                        if arg > available / 2 {
                            return None;
                        }
                        arg * 2
                    }
                    _ => {
                        bignum = arg == 2 || arg == 3;
                        1
                    }
                };
                if depth >= max_depth || items.saturating_add(children) > max_items {
                    return None;
                }
                if children != 0 {
                    stack[depth] = Frame {
                        remaining: children,
                        map: major == 5,
                        mark: pos,
                        prev_start: 0,
                        prev_end: 0,
                    };
                    depth += 1;
                    continue;
                }
            }
            _ => {
                // Major 7: simple values and floats.
                match info {
                    24 if arg < 32 => return None,
                    25 => {
                        let h = arg as u16;
                        if f16_to_f64(h).is_nan() && h != CANONICAL_NAN_F16 {
                            return None;
                        }
                    }
                    26 => {
                        let v = f64::from(f32::from_bits(arg as u32));
                        if v.is_nan() || matches!(shortest(v), Shortest::Half(_)) {
                            return None;
                        }
                    }
                    27 => {
                        let v = f64::from_bits(arg);
                        if v.is_nan() || !matches!(shortest(v), Shortest::Double(_)) {
                            return None;
                        }
                    }
                    _ => {}
                }
            }
        }

        // The item ending at `pos` is complete: close what it completes.
        loop {
            if depth == 0 {
                top_level += 1;
                if !sequence || pos == len {
                    return if pos == len { Some(top_level) } else { None };
                }
                break;
            }
            let f = &mut stack[depth - 1];
            if f.map {
                let was_key = f.remaining.is_multiple_of(2);
                f.remaining -= 1;
                if was_key {
                    if f.prev_end != 0 {
                        let prev = &input[f.prev_start..f.prev_end];
                        let key = &input[f.mark..pos];
                        if key_order(prev, key) != std::cmp::Ordering::Less {
                            return None;
                        }
                    }
                    f.prev_start = f.mark;
                    f.prev_end = pos;
                    break;
                }
                f.mark = pos;
            } else {
                f.remaining -= 1;
            }
            if f.remaining != 0 {
                break;
            }
            depth -= 1;
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
        for len in 0..=40usize {
            let ascii = vec![b'a'; len];
            assert!(text_ok(&ascii), "len {len}");
            for at in 0..len {
                let mut bad = ascii.clone();
                bad[at] = 0xff;
                assert!(!text_ok(&bad), "len {len} at {at}");
                if at + 1 < len {
                    let mut two = ascii.clone();
                    two[at] = 0xc3;
                    two[at + 1] = 0xa9;
                    assert!(text_ok(&two), "len {len} at {at}");
                }
            }
        }
    }
}
