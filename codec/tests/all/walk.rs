//! Differential tests: the fast strict walker behind `validate` and
//! `validate_sequence` against the token decoder (`validate_tokenwise`,
//! `validate_sequence_tokenwise`).
//!
//! The walker may only say "valid" when the decoder says so; these tests
//! also hold it to the converse (it refuses exactly what the decoder
//! refuses), so that errors never take the slow path on valid input. Errors
//! themselves come from the decoder, and `validate` must return them
//! unchanged.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::Value as Json;
use smith_codec::{
    Limits, Mode, strict_walk, validate, validate_sequence, validate_sequence_tokenwise,
    validate_tokenwise,
};

use crate::props::{Rng, sloppy, value};
use crate::unhex;

fn limit_sets() -> [Limits; 5] {
    [
        Limits::default(),
        Limits {
            max_depth: 0,
            max_items: 1,
        },
        Limits {
            max_depth: 2,
            max_items: 6,
        },
        Limits {
            max_depth: 3,
            max_items: 10,
        },
        Limits {
            max_depth: 1000,
            max_items: u64::MAX,
        },
    ]
}

/// Asserts the walker and the decoder agree on `bytes` as one item and as a
/// sequence, under every limit set, and that the public entry points return
/// the decoder's exact result.
fn agree(bytes: &[u8]) {
    for limits in limit_sets() {
        let slow = validate_tokenwise(bytes, Mode::Strict, limits);
        let fast = strict_walk(bytes, limits, false);
        assert_eq!(
            fast.is_some(),
            slow.is_ok(),
            "walker {fast:?} vs decoder {slow:?} on {bytes:02x?} with {limits:?}"
        );
        assert_eq!(validate(bytes, Mode::Strict, limits), slow);
        assert_eq!(
            validate(bytes, Mode::Lenient, limits),
            validate_tokenwise(bytes, Mode::Lenient, limits)
        );

        let slow_seq = validate_sequence_tokenwise(bytes, Mode::Strict, limits);
        let fast_seq = strict_walk(bytes, limits, true);
        assert_eq!(
            fast_seq,
            slow_seq.ok(),
            "sequence walker vs decoder {slow_seq:?} on {bytes:02x?} with {limits:?}"
        );
        assert_eq!(validate_sequence(bytes, Mode::Strict, limits), slow_seq);
        assert_eq!(
            validate_sequence(bytes, Mode::Lenient, limits),
            validate_sequence_tokenwise(bytes, Mode::Lenient, limits)
        );
    }
}

/// A tag 2 or 3 around a byte string of `len` bytes starting with `first`
/// (preferred only when longer than 8 bytes without a leading zero), or
/// around something else.
fn bignum(tag: u8, len: usize, first: u8, other: bool) -> Vec<u8> {
    let mut out = vec![0xc0 | tag];
    if other {
        out.push(0x01);
        return out;
    }
    out.push(0x40 | len as u8);
    if len > 0 {
        out.push(first);
        out.extend(std::iter::repeat_n(0x11, len - 1));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn walker_accepts_every_canonical_encoding(v in value()) {
        let bytes = v.to_cbor().unwrap();
        prop_assert_eq!(strict_walk(&bytes, Limits::default(), false), Some(1));
        agree(&bytes);
    }

    #[test]
    fn walker_agrees_on_sloppy_encodings(v in value(), seed in 1u64..u64::MAX) {
        let mut messy = Vec::new();
        sloppy(&v, &mut Rng(seed), &mut messy);
        agree(&messy);
    }

    #[test]
    fn walker_agrees_on_random_bytes(bytes in vec(any::<u8>(), 0..96)) {
        agree(&bytes);
    }

    #[test]
    fn walker_agrees_on_mutated_encodings(
        v in value(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = v.to_cbor().unwrap();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        agree(&bytes);
        bytes.truncate(cut.index(bytes.len() + 1));
        agree(&bytes);
    }

    #[test]
    fn walker_agrees_on_sequences(vs in vec(value(), 0..6), seed in 1u64..u64::MAX) {
        let mut canonical = Vec::new();
        let mut messy = Vec::new();
        let mut rng = Rng(seed);
        for v in &vs {
            canonical.extend(v.to_cbor().unwrap());
            if rng.next().is_multiple_of(4) {
                sloppy(v, &mut rng, &mut messy);
            } else {
                messy.extend(v.to_cbor().unwrap());
            }
        }
        prop_assert_eq!(
            strict_walk(&canonical, Limits::default(), true),
            Some(vs.len() as u64)
        );
        agree(&canonical);
        agree(&messy);
    }

    #[test]
    fn walker_agrees_on_mutated_encodings_far_from_the_end(
        v in value(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        filler in 0usize..64,
    ) {
        // The walker reads a leaf whose head is at least 41 bytes before the
        // end of the input without bounds checks: followed by one-byte items,
        // every item of the value (mutated or not) is read that way, and its
        // last ones on either side of that distance.
        let mut bytes = v.to_cbor().unwrap();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        bytes.extend(std::iter::repeat_n(0x00, filler));
        agree(&bytes);
        // As the value of a one-byte key and of a text key, so that the
        // pair loop reads it (and opens it when it is a map).
        let mut m = vec![0xa2, 0x00];
        m.extend(&bytes[..bytes.len() - filler]);
        m.extend([0x61, b'k']);
        m.extend(&bytes[..bytes.len() - filler]);
        m.extend(std::iter::repeat_n(0x00, filler));
        agree(&m);
    }

    #[test]
    fn walker_agrees_on_bignums_in_maps(
        tag in 2u8..4,
        len in 0usize..12,
        first in prop_oneof![Just(0u8), any::<u8>()],
        other in any::<bool>(),
        nested in any::<bool>(),
    ) {
        let big = bignum(tag, len, first, other);
        agree(&big);
        // As a map value and as a map key, next to another key.
        let mut m = vec![0xa2, 0x01];
        m.extend(&big);
        m.extend([0x02, 0x00]);
        agree(&m);
        let mut k = vec![0xa2, 0x00, 0x00];
        k.extend(&big);
        k.push(0x00);
        agree(&k);
        if nested {
            // A tag around the bignum, and a bignum tag around a tag.
            let mut t = vec![0xc1];
            t.extend(&big);
            agree(&t);
            let mut u = vec![0xc0 | tag, 0xc1];
            u.extend(&big[1..]);
            agree(&u);
        }
    }
}

#[test]
fn walker_agrees_on_every_appendix_a_vector() {
    let text = include_str!("../fixtures/appendix_a.json");
    let all: Vec<Json> = serde_json::from_str(text).unwrap();
    assert_eq!(all.len(), 82, "fixture changed: review these tests");
    let mut accepted = 0;
    for v in &all {
        let bytes = unhex(v["hex"].as_str().unwrap());
        agree(&bytes);
        if strict_walk(&bytes, Limits::default(), false).is_some() {
            accepted += 1;
        }
    }
    // Every vector the decoder accepts in strict mode is accepted by the
    // walker too (checked in `agree`); make sure that is most of them.
    assert!(accepted > 60, "only {accepted} of 82 vectors accepted");
}

#[test]
fn walker_agrees_on_hand_picked_edges() {
    let cases: &[&[u8]] = &[
        &[],
        &[0xf8, 0x18],       // two-byte simple below 32
        &[0xf8, 0x20],       // two-byte simple 32
        &[0xf9, 0x7e, 0x00], // canonical NaN
        &[0xf9, 0x7e, 0x01], // other NaN payload
        &[0xfa, 0x7f, 0xc0, 0x00, 0x00],
        &[0xfa, 0x3f, 0x80, 0x00, 0x00], // 1.0 as f32: not shortest
        &[0xfa, 0x47, 0xc3, 0x50, 0x00], // 100000.0: shortest is f32
        &[0xfb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0],
        &[0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a],
        &[0x1c],
        &[0x5f, 0xff],
        &[0xff],
        &[0xa1, 0x00],                   // map missing its value
        &[0xa2, 0x00, 0x00, 0x00, 0x00], // duplicate key
        &[0xa2, 0x61, 0x61, 0x00, 0x20, 0x00],
        &[0xa2, 0x20, 0x00, 0x61, 0x61, 0x00],
        &[0xa2, 0x81, 0x00, 0x00, 0x82, 0x00, 0x00, 0x00], // array keys by bytes
        &[0x62, 0xc3, 0x28],                               // invalid UTF-8
        &[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        &[0xbb, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        &[0x81, 0x81, 0x81, 0x80],
        &[0xc1, 0xc1, 0xc1, 0x00],
    ];
    for c in cases {
        agree(c);
    }
    // Depth exactly at the bound, and one past it.
    let mut deep = vec![0x81; MAX - 1];
    deep.push(0x80);
    agree(&deep);
    let mut deeper = vec![0x81; MAX];
    deeper.push(0x80);
    agree(&deeper);
    // Long text with multi-byte characters, valid and broken.
    let long = "é€😀 smith ".repeat(20);
    let mut t = vec![0x79];
    t.extend((long.len() as u16).to_be_bytes());
    t.extend(long.as_bytes());
    agree(&t);
    let last = t.len() - 1;
    t[last] = 0xff;
    agree(&t);
}

const MAX: usize = smith_codec::MAX_DEPTH as usize;

/// The head of a text string of `len` bytes (shortest form).
fn text_head(len: usize) -> Vec<u8> {
    match len {
        0..=23 => vec![0x60 | len as u8],
        24..=0xff => vec![0x78, len as u8],
        _ => {
            let mut h = vec![0x79];
            h.extend((len as u16).to_be_bytes());
            h
        }
    }
}

/// A map of text keys (in the order given) to 0.
fn text_map(keys: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0xa0 | keys.len() as u8];
    for k in keys {
        out.extend(text_head(k.len()));
        out.extend_from_slice(k);
        out.push(0x00);
    }
    out
}

#[test]
fn walker_agrees_on_text_keys_of_every_length_up_to_24() {
    // Pairs of keys of lengths 0..=24 (encoded lengths 1..=26, across the
    // seven-byte order word and the one-byte length head), equal, sharing a
    // prefix of every size and differing at every position, in both orders;
    // each map alone, after a byte of padding, and with input following it.
    let mut cases = 0;
    for la in 0..=24usize {
        for lb in 0..=24usize {
            let a: Vec<u8> = (0..la).map(|i| b'a' + (i % 26) as u8).collect();
            let mut bs = vec![(0..lb).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>()];
            for at in 0..lb.min(la) {
                for (lo, hi) in [(b'a', b'b'), (b'b', b'a'), (0x00, 0x01)] {
                    let mut b = bs[0].clone();
                    let mut a2 = a.clone();
                    a2[at] = lo;
                    b[at] = hi;
                    for keys in [[&a2[..], &b[..]], [&b[..], &a2[..]]] {
                        let m = text_map(&keys);
                        agree(&m);
                        cases += 1;
                    }
                }
            }
            bs.push(vec![0x00; lb]);
            for b in &bs {
                for keys in [[&a[..], &b[..]], [&b[..], &a[..]]] {
                    let m = text_map(&keys);
                    agree(&m);
                    let mut padded = vec![0x00];
                    padded.extend(&m);
                    agree(&padded);
                    let mut followed = m.clone();
                    followed.extend([0x82, 0x00, 0x00]);
                    agree(&followed);
                    cases += 3;
                }
            }
        }
    }
    assert!(cases > 10_000, "{cases}");
}

#[test]
fn walker_agrees_on_keys_of_mixed_types_and_lengths() {
    // Integer keys of every head width, byte-string keys and text keys
    // around the order word's seven bytes, each pair in both orders.
    let keys: Vec<Vec<u8>> = vec![
        vec![0x00],
        vec![0x17],
        vec![0x18, 0x18],
        vec![0x18, 0xff],
        vec![0x19, 0x01, 0x00],
        vec![0x1a, 0x00, 0x01, 0x00, 0x00],
        vec![0x1b, 0, 0, 0, 1, 0, 0, 0, 0],
        vec![0x1b, 0, 0, 0, 1, 0, 0, 0, 1],
        vec![0x20],
        vec![0x46, 1, 2, 3, 4, 5, 6],
        vec![0x47, 1, 2, 3, 4, 5, 6, 7],
        vec![0x47, 1, 2, 3, 4, 5, 6, 8],
        vec![0x48, 1, 2, 3, 4, 5, 6, 7, 0],
        vec![0x66, b'a', b'b', b'c', b'd', b'e', b'f'],
        vec![0x67, b'a', b'b', b'c', b'd', b'e', b'f', b'g'],
        vec![0x68, b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'h'],
        vec![0x68, b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'i'],
        vec![0x80],
        vec![0x81, 0x00],
        vec![0xa0],
        vec![0xf4],
        vec![0xf5],
    ];
    for a in &keys {
        for b in &keys {
            let mut m = vec![0xa2];
            m.extend(a);
            m.push(0x00);
            m.extend(b);
            m.push(0x00);
            agree(&m);
            // The same pair as the last two keys of a bigger map, at the
            // very end of the input.
            let mut tail = vec![0xa3, 0x60, 0x00];
            tail.extend(a);
            tail.push(0x00);
            tail.extend(b);
            tail.push(0xf6);
            agree(&tail);
        }
    }
}

#[test]
fn walker_agrees_on_non_ascii_at_every_position_of_short_text() {
    // Text of 0..=40 bytes with one bad or one good multi-byte sequence at
    // every position, alone (no bytes after it), followed by more input,
    // and as a map key.
    for len in 0..=40usize {
        let base = vec![b'x'; len];
        let mut variants = vec![base.clone()];
        for at in 0..len {
            for byte in [0x80u8, 0xc3, 0xff, 0x7f] {
                let mut v = base.clone();
                v[at] = byte;
                variants.push(v);
            }
            if at + 1 < len {
                let mut v = base.clone();
                v[at..at + 2].copy_from_slice(&[0xc3, 0xa9]);
                variants.push(v);
            }
            if at + 3 < len {
                let mut v = base.clone();
                v[at..at + 4].copy_from_slice("😀".as_bytes());
                variants.push(v);
                let mut cut = base.clone();
                cut[at..at + 3].copy_from_slice(&"😀".as_bytes()[..3]);
                variants.push(cut);
            }
        }
        for v in variants {
            let mut alone = text_head(v.len());
            alone.extend(&v);
            agree(&alone);
            let mut followed = vec![0x82];
            followed.extend(&alone);
            followed.extend([0x78, 40]);
            followed.extend([b'y'; 40]);
            agree(&followed);
            let mut key = vec![0xa1];
            key.extend(&alone);
            key.push(0x00);
            agree(&key);
        }
    }
}

/// A representative entry: a map with integer keys, a nested content map
/// with text, a tool-argument map with text keys, an 8-byte timestamp and a
/// float.
fn sample_entry() -> Vec<u8> {
    let mut e = vec![
        0xa5, 0x00, 0x19, 0x01, 0x2c, 0x01, 0x19, 0x01, 0x2b, 0x02, 0x1b,
    ];
    e.extend(1_764_470_000_000u64.to_be_bytes());
    // Key 3 holds 1.1, which needs binary64.
    e.extend([0x03, 0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]);
    e.extend([0x04, 0xa3, 0x00]);
    e.extend(text_head(9));
    e.extend(b"call_0042");
    e.extend([0x01, 0x64]);
    e.extend(b"edit");
    e.push(0x02);
    e.extend(text_map(&[b"path", b"lines", b"content"]));
    e
}

#[test]
fn walker_agrees_on_every_truncation_of_a_sample() {
    let one = sample_entry();
    assert_eq!(strict_walk(&one, Limits::default(), false), Some(1));
    let mut seq = one.clone();
    seq.extend(&one);
    assert_eq!(strict_walk(&seq, Limits::default(), true), Some(2));
    let mut long = text_head(300);
    long.extend("déjà vu → ".repeat(30).as_bytes().iter().take(300));
    // The text may have been cut inside a character; agree() decides.
    seq.extend(&long);
    for cut in 0..=seq.len() {
        agree(&seq[..cut]);
    }
}

#[test]
fn walker_agrees_on_item_limits_around_the_input_length() {
    // The walker skips counting heads when the input has no more bytes
    // than `max_items`; check both sides of that boundary against the
    // decoder for inputs whose item count is close to their length.
    let inputs: Vec<Vec<u8>> = vec![
        vec![0x83, 0x00, 0x00, 0x00],
        vec![0x00, 0x00, 0x00, 0x00],
        vec![0xa2, 0x00, 0x00, 0x01, 0x00],
        vec![0x81, 0x81, 0x81, 0x00],
        vec![0xc1, 0xc1, 0x00],
        vec![0xc2, 0x49, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        vec![0x82, 0x60, 0x40],
        sample_entry(),
    ];
    for bytes in &inputs {
        for max_items in 0..=bytes.len() as u64 + 2 {
            let limits = Limits {
                max_depth: smith_codec::MAX_DEPTH,
                max_items,
            };
            for sequence in [false, true] {
                let fast = strict_walk(bytes, limits, sequence);
                let slow = if sequence {
                    validate_sequence_tokenwise(bytes, Mode::Strict, limits).ok()
                } else {
                    validate_tokenwise(bytes, Mode::Strict, limits)
                        .ok()
                        .map(|()| 1)
                };
                assert_eq!(
                    fast, slow,
                    "{bytes:02x?} max_items {max_items} sequence {sequence}"
                );
            }
        }
    }
}

/// The head of major type `major` with argument `arg` in the given width
/// (0 for the initial byte, else 1, 2, 4 or 8 argument bytes), shortest or
/// not; `None` when `arg` does not fit that width.
fn head_in_width(major: u8, arg: u64, width: usize) -> Option<Vec<u8>> {
    let info: u8 = match width {
        0 if arg < 24 => arg as u8,
        1 if arg <= 0xff => 24,
        2 if arg <= 0xffff => 25,
        4 if arg <= 0xffff_ffff => 26,
        8 => 27,
        _ => return None,
    };
    let mut h = vec![major << 5 | info];
    h.extend_from_slice(&arg.to_be_bytes()[8 - width..]);
    Some(h)
}

#[test]
fn walker_agrees_on_leaf_heads_of_every_width_at_every_boundary() {
    // Each argument at both sides of every width boundary, written in every
    // width it fits (the shortest is canonical, the wider ones are not),
    // as a map value after an integer key and after a text key (the pair
    // path), as an array element and as a top-level item (the general
    // head), for integers of both signs, byte strings and text (whose
    // declared lengths past the input must be refused), complete and cut
    // short inside the head.
    let args = [
        0u64,
        1,
        23,
        24,
        255,
        256,
        65_535,
        65_536,
        u64::from(u32::MAX),
        u64::from(u32::MAX) + 1,
        u64::MAX,
    ];
    for major in 0u8..=3 {
        for &arg in &args {
            for width in [0usize, 1, 2, 4, 8] {
                let Some(head) = head_in_width(major, arg, width) else {
                    continue;
                };
                let mut item = head.clone();
                if major >= 2 && arg <= 300 {
                    item.extend(std::iter::repeat_n(b'a', arg as usize));
                }
                let wraps: [(&[u8], &[u8]); 4] = [
                    (&[0xa1, 0x00], &[]),
                    (&[0xa2, 0x61, 0x6b], &[0x61, 0x6c, 0x00]),
                    (&[0x82], &[0x00]),
                    (&[], &[]),
                ];
                for (before, after) in wraps {
                    let mut bytes = before.to_vec();
                    bytes.extend_from_slice(&item);
                    bytes.extend_from_slice(after);
                    agree(&bytes);
                    // Cut inside the head: the argument bytes run past the
                    // end of the input.
                    for cut in 1..head.len() {
                        let mut short = before.to_vec();
                        short.extend_from_slice(&head[..cut]);
                        agree(&short);
                    }
                }
            }
        }
    }
}

/// Keys in canonical order (bytewise by encoding): one-byte integers, a
/// wide integer, short texts, then containers (never taken as a pair's key).
const PAIR_KEYS: &[&[u8]] = &[
    &[0x00],
    &[0x05],
    &[0x17],
    &[0x18, 0x20],
    &[0x61, b'a'],
    &[0x62, b'a', b'b'],
    &[
        0x78, 0x18, b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k',
        b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k', b'k',
    ],
    &[0x80],
    &[0x81, 0x00],
    &[0xa0],
    &[0xa1, 0x00, 0x00],
];

/// Values of every kind the pair loop meets: leaves (one-byte and wide
/// integers, a simple value, short and one-byte-head texts, a byte string)
/// and what it leaves to the general head (containers, a tag, a float).
const PAIR_VALUES: &[&[u8]] = &[
    &[0x00],
    &[0x19, 0x01, 0x00],
    &[0xf5],
    &[0x63, b'x', b'y', b'z'],
    &[
        0x78, 0x19, b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v',
        b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v', b'v',
    ],
    &[0x42, 0x01, 0x02],
    &[0x80],
    &[0x82, 0x01, 0x02],
    &[0xa1, 0x00, 0xf6],
    &[0xc1, 0x00],
    &[0xf9, 0x3e, 0x00],
];

/// A map of the given keys and values (whatever their order).
fn pair_map(keys: &[usize], values: &[usize]) -> Vec<u8> {
    let mut out = vec![0xa0 | keys.len() as u8];
    for (&k, &v) in keys.iter().zip(values) {
        out.extend_from_slice(PAIR_KEYS[k]);
        out.extend_from_slice(PAIR_VALUES[v]);
    }
    out
}

#[test]
fn walker_agrees_on_maps_mixing_leaf_and_container_pairs() {
    // Maps of one to six pairs whose keys and values switch between leaves
    // (read pair by pair) and containers, tags and floats (read by the
    // general head), so that a run of leaf pairs is left at every position
    // and resumed after it: in canonical order, with two keys swapped, with
    // a key repeated; alone, nested as a value before and after more pairs,
    // and in a sequence. Each one's every truncation too.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut valid, mut invalid) = (0, 0);
    for case in 0..3000 {
        let n = 1 + (rng.next() % 6) as usize;
        // Distinct keys in canonical order: a sorted sample of the pool.
        let mut keys: Vec<usize> = (0..PAIR_KEYS.len()).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
        keys.truncate(n);
        keys.sort_unstable();
        let values: Vec<usize> = (0..n)
            .map(|_| (rng.next() % PAIR_VALUES.len() as u64) as usize)
            .collect();
        match case % 3 {
            1 if n >= 2 => {
                let i = (rng.next() % (n as u64 - 1)) as usize;
                keys.swap(i, i + 1);
            }
            2 if n >= 2 => {
                let i = (rng.next() % (n as u64 - 1)) as usize;
                keys[i + 1] = keys[i];
            }
            _ => {}
        }
        let map = pair_map(&keys, &values);
        agree(&map);
        if strict_walk(&map, Limits::default(), false).is_some() {
            valid += 1;
        } else {
            invalid += 1;
        }
        // As the value of an outer map's first and of its last pair.
        let mut first = vec![0xa2, 0x00];
        first.extend_from_slice(&map);
        first.extend_from_slice(&[0x01, 0x63, b'a', b'b', b'c']);
        agree(&first);
        let mut last = vec![0xa2, 0x00, 0x00, 0x01];
        last.extend_from_slice(&map);
        agree(&last);
        // In a sequence, after a map that ends on a leaf pair.
        let mut seq = vec![0xa1, 0x00, 0x00];
        seq.extend_from_slice(&map);
        seq.extend_from_slice(&map);
        agree(&seq);
        if case % 10 == 0 {
            for cut in 0..first.len() {
                agree(&first[..cut]);
            }
        }
    }
    // Both verdicts are well represented (two thirds of the maps of two
    // pairs or more are built with keys swapped or repeated).
    assert!(
        valid > 1000 && invalid > 1000,
        "{valid} valid, {invalid} invalid"
    );
}

/// Leaves of every kind and head width, valid and not: integers of both
/// signs, byte and text strings (ASCII, multi-byte, broken UTF-8, short and
/// over 32 bytes, declared longer than what follows), one-byte simple
/// values, and heads wider than needed.
fn leaf_samples() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for major in 0u8..=1 {
        for arg in [0u64, 23, 24, 255, 256, 65_535, 65_536, 1 << 32, u64::MAX] {
            for width in [0usize, 1, 2, 4, 8] {
                if let Some(h) = head_in_width(major, arg, width) {
                    out.push(h);
                }
            }
        }
    }
    for major in 2u8..=3 {
        for len in [0usize, 1, 5, 23, 24, 31, 32, 33, 40, 255, 256] {
            for width in [0usize, 1, 2] {
                let Some(mut h) = head_in_width(major, len as u64, width) else {
                    continue;
                };
                h.extend(std::iter::repeat_n(b'a', len));
                out.push(h.clone());
                if len >= 2 {
                    let mut accent = h.clone();
                    let at = h.len() - len / 2 - 1;
                    accent[at..at + 2].copy_from_slice("é".as_bytes());
                    out.push(accent);
                    let mut broken = h.clone();
                    broken[at] = 0xff;
                    out.push(broken);
                }
            }
        }
        // Declared longer than the input that follows it (20 one-byte
        // items of filler at most follow a sample).
        let mut h = head_in_width(major, 200, 1).unwrap();
        h.extend([b'a'; 10]);
        out.push(h);
    }
    out.extend([
        vec![0xf4],
        vec![0xf6],
        vec![0xf7],
        vec![0xe0],
        vec![0xf8, 0x20],
    ]);
    out
}

#[test]
fn walker_agrees_on_leaves_at_every_distance_from_the_end() {
    // Each leaf as a map value after a one-byte key and after a text key,
    // as an array element and alone, followed by 0 to 48 one-byte items:
    // its head falls on both sides of the 41 bytes before the end of the
    // input from which the walker reads leaves without bounds checks.
    let wraps: [(&[u8], &[u8]); 4] = [
        (&[0xa2, 0x00], &[0x01, 0x00]),
        (&[0xa2, 0x61, 0x6b], &[0x61, 0x6c, 0x00]),
        (&[0x82, 0x00], &[]),
        (&[], &[]),
    ];
    let mut cases = 0;
    for leaf in leaf_samples() {
        for (before, after) in wraps {
            for filler in 0..=48usize {
                let mut bytes = before.to_vec();
                bytes.extend_from_slice(&leaf);
                bytes.extend_from_slice(after);
                bytes.extend(std::iter::repeat_n(0x00, filler));
                agree(&bytes);
                cases += 1;
            }
        }
    }
    assert!(cases > 20_000, "{cases}");
}

/// `{0: {0: ... {0: 0} ...}}`, `levels` maps deep, each of `width` pairs
/// whose first value is the next map and whose other values are `1`.
fn nested_maps(levels: usize, width: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..levels {
        out.extend([0xa0 | width, 0x00]);
    }
    out.push(0x00);
    for _ in 0..levels {
        for k in 1..width {
            out.extend([k, 0x01]);
        }
    }
    out
}

#[test]
fn walker_agrees_on_maps_opened_by_the_pair_loop() {
    // A map of 1 to 23 pairs as a map's value is opened by the pair loop:
    // nested to every depth around the limit, with each count of pairs,
    // with counts larger than the input holds, and with input after it.
    for width in [1u8, 2, 3, 23] {
        for levels in [1usize, 2, 3, 4, MAX - 1, MAX, MAX + 1] {
            let m = nested_maps(levels, width);
            agree(&m);
            let mut followed = m.clone();
            followed.extend([0x00; 48]);
            agree(&followed);
            // Cut: the innermost maps declare more pairs than follow.
            for cut in [m.len() - 1, m.len() / 2, 3] {
                let mut short = m[..cut].to_vec();
                agree(&short);
                short.extend([0x00; 48]);
                agree(&short);
            }
        }
    }
    // Maps that follow an item in an array or at the top level of a
    // sequence are opened where that item closes: arrays of maps nested to
    // depths around the limit, and sequences of maps, whole, cut short, and
    // with a map declaring more pairs than the input holds.
    for width in [1u8, 2, 23] {
        let map = nested_maps(1, width);
        for levels in [0usize, 1, 2, 3, MAX - 2, MAX - 1, MAX] {
            let mut bytes = vec![0x81; levels];
            bytes.pop();
            if levels > 0 {
                bytes.push(0x83);
            }
            bytes.extend([0x00]);
            bytes.extend(&map);
            bytes.extend(&map);
            agree(&bytes);
            for cut in [bytes.len() - 1, bytes.len() - map.len() + 1] {
                agree(&bytes[..cut]);
            }
        }
        let mut seq = Vec::new();
        for _ in 0..4 {
            seq.extend([0x00]);
            seq.extend(&map);
            seq.extend(&map);
        }
        agree(&seq);
        for cut in 0..seq.len() {
            agree(&seq[..cut]);
        }
        let mut over = seq.clone();
        over.extend([0xa0 | width.max(2), 0x00, 0x00]);
        agree(&over);
        over.extend([0x00; 48]);
        agree(&over);
    }
    // Every count of pairs, declared in the initial byte (the pair loop) and
    // in a one-byte argument (the general head), against the input that
    // follows (complete, one pair short, one byte short).
    for n in 0u8..=25 {
        for wide in [false, true] {
            let mut inner = if wide || n >= 24 {
                vec![0xb8, n]
            } else {
                vec![0xa0 | n]
            };
            for k in 0..n {
                inner.extend([k.min(23), 0x00]);
                if k >= 24 {
                    // Keys past 23 need a one-byte argument.
                    let at = inner.len() - 2;
                    inner.splice(at..at + 1, [0x18, k]);
                }
            }
            for drop in [0usize, 1, 2] {
                let body = &inner[..inner.len() - drop.min(inner.len() - 1)];
                let mut bytes = vec![0xa2, 0x00];
                bytes.extend_from_slice(body);
                bytes.extend([0x01, 0x00]);
                agree(&bytes);
                bytes.extend([0x00; 48]);
                agree(&bytes);
            }
        }
    }
}
