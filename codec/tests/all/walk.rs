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
