//! Property tests: round trips, canonicalisation, key order, hostile bytes.

use proptest::collection::vec;
use proptest::prelude::*;
use smith_codec::{Decoder, EncodeError, Encoder, Limits, Mode, Token, Value, json, validate};

use crate::transcode;

// ----- generators -----

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        any::<f32>().prop_map(f64::from),
        (-4096i32..4096).prop_map(|i| f64::from(i) / 8.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(5.960464477539063e-8),
        Just(65504.0),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::Unsigned),
        (0u64..30).prop_map(Value::Unsigned),
        any::<u64>().prop_map(Value::Negative),
        vec(any::<u8>(), 0..24).prop_map(Value::Bytes),
        "\\PC{0,12}".prop_map(Value::Text),
        "[a-c]{0,3}".prop_map(Value::Text),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        Just(Value::Undefined),
        prop_oneof![0u8..20, 32u8..=255].prop_map(Value::Simple),
        float().prop_map(Value::Float),
        // A bignum in preferred form.
        (any::<bool>(), 1u8..=255, vec(any::<u8>(), 8..12)).prop_map(|(neg, first, mut rest)| {
            rest.insert(0, first);
            Value::Tag(if neg { 3 } else { 2 }, Box::new(Value::Bytes(rest)))
        }),
    ]
}

/// Keeps the first of any pairs whose keys encode equally.
fn dedupe(pairs: Vec<(Value, Value)>) -> Vec<(Value, Value)> {
    let mut seen = Vec::new();
    pairs
        .into_iter()
        .filter(|(k, _)| {
            let kb = k.to_cbor().unwrap();
            if seen.contains(&kb) {
                false
            } else {
                seen.push(kb);
                true
            }
        })
        .collect()
}

pub(crate) fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            vec((inner.clone(), inner.clone()), 0..6).prop_map(|p| Value::Map(dedupe(p))),
            (prop_oneof![0u64..2, 4u64..30, any::<u64>()], inner)
                .prop_map(|(t, v)| Value::Tag(t, Box::new(v))),
        ]
    })
}

/// Values in the JSON data model: finite floats, text-keyed maps.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<u64>().prop_map(Value::Unsigned),
        any::<u64>().prop_map(Value::Negative),
        "\\PC{0,12}".prop_map(Value::Text),
        "[\"\\\\\\n\\t\\u{1}a]{0,4}".prop_map(Value::Text),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        float()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::Float),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            vec(("\\PC{0,6}".prop_map(Value::Text), inner), 0..6)
                .prop_map(|p| Value::Map(dedupe(p))),
        ]
    })
}

// ----- helpers -----

/// `v` with every map's pairs in canonical order (what decoding returns).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        Value::Map(pairs) => {
            let mut p: Vec<(Value, Value)> =
                pairs.iter().map(|(k, v)| (sorted(k), sorted(v))).collect();
            p.sort_by_key(|(k, _)| k.to_cbor().unwrap());
            Value::Map(p)
        }
        Value::Tag(t, c) => Value::Tag(*t, Box::new(sorted(c))),
        other => other.clone(),
    }
}

/// Structural equality where every NaN equals every NaN.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| same(ka, kb) && same(va, vb))
        }
        (Value::Tag(s, x), Value::Tag(t, y)) => s == t && same(x, y),
        _ => a == b,
    }
}

/// A tiny deterministic generator for the sloppy encoder's choices.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, in_four: u64) -> bool {
        self.next() % 4 < in_four
    }
}

/// Writes `v` as valid but (randomly) non-canonical CBOR: wider heads,
/// indefinite lengths, chunked strings, shuffled map pairs, wider floats.
pub(crate) fn sloppy(v: &Value, rng: &mut Rng, out: &mut Vec<u8>) {
    fn head(major: u8, arg: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        let min = if arg < 24 {
            0
        } else if arg <= 0xff {
            1
        } else if arg <= 0xffff {
            2
        } else if arg <= 0xffff_ffff {
            3
        } else {
            4
        };
        let width = min + (rng.next() % (5 - min));
        let m = major << 5;
        match width {
            0 => out.push(m | arg as u8),
            1 => out.extend_from_slice(&[m | 24, arg as u8]),
            2 => {
                out.push(m | 25);
                out.extend_from_slice(&(arg as u16).to_be_bytes());
            }
            3 => {
                out.push(m | 26);
                out.extend_from_slice(&(arg as u32).to_be_bytes());
            }
            _ => {
                out.push(m | 27);
                out.extend_from_slice(&arg.to_be_bytes());
            }
        }
    }
    fn chunks(major: u8, data: &[u8], rng: &mut Rng, out: &mut Vec<u8>, utf8: bool) {
        if !rng.chance(1) {
            head(major, data.len() as u64, rng, out);
            out.extend_from_slice(data);
            return;
        }
        out.push((major << 5) | 31);
        let mut rest = data;
        while !rest.is_empty() {
            let mut n = 1 + (rng.next() as usize % rest.len());
            while utf8 && std::str::from_utf8(&rest[..n]).is_err() {
                n += 1;
            }
            head(major, n as u64, rng, out);
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        if rng.chance(1) {
            head(major, 0, rng, out); // an empty chunk is allowed
        }
        out.push(0xff);
    }
    match v {
        Value::Unsigned(n) => head(0, *n, rng, out),
        Value::Negative(n) => head(1, *n, rng, out),
        Value::Bytes(b) => chunks(2, b, rng, out, false),
        Value::Text(s) => chunks(3, s.as_bytes(), rng, out, true),
        Value::Array(items) => {
            let indefinite = rng.chance(1);
            if indefinite {
                out.push(0x9f);
            } else {
                head(4, items.len() as u64, rng, out);
            }
            for item in items {
                sloppy(item, rng, out);
            }
            if indefinite {
                out.push(0xff);
            }
        }
        Value::Map(pairs) => {
            let indefinite = rng.chance(1);
            if indefinite {
                out.push(0xbf);
            } else {
                head(5, pairs.len() as u64, rng, out);
            }
            let mut order: Vec<usize> = (0..pairs.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.next() as usize % (i + 1));
            }
            for i in order {
                sloppy(&pairs[i].0, rng, out);
                sloppy(&pairs[i].1, rng, out);
            }
            if indefinite {
                out.push(0xff);
            }
        }
        Value::Tag(t, c) => {
            head(6, *t, rng, out);
            sloppy(c, rng, out);
        }
        Value::Float(x) => {
            let fits32 = x.is_nan() || f64::from(*x as f32) == *x;
            match rng.next() % 3 {
                0 if fits32 => {
                    out.push(0xfa);
                    let bits = if x.is_nan() {
                        0x7fc0_0001
                    } else {
                        (*x as f32).to_bits()
                    };
                    out.extend_from_slice(&bits.to_be_bytes());
                }
                1 => {
                    out.push(0xfb);
                    out.extend_from_slice(&x.to_bits().to_be_bytes());
                }
                _ => {
                    Encoder::new(out).f64(*x);
                }
            }
        }
        other => other.encode(out).unwrap(),
    }
}

/// Walks every token, asserting the limits hold at every step.
fn walk_within(input: &[u8], mode: Mode, limits: Limits) -> bool {
    let mut d = Decoder::new(input, mode, limits);
    loop {
        match d.next() {
            Ok(_) => {
                assert!(
                    d.depth() <= limits.max_depth,
                    "depth {} over {}",
                    d.depth(),
                    limits.max_depth
                );
                assert!(
                    d.items_read() <= limits.max_items,
                    "items {} over {}",
                    d.items_read(),
                    limits.max_items
                );
                if d.is_at_end() {
                    return d.depth() == 0;
                }
            }
            Err(_) => return false,
        }
    }
}

fn check_hostile(bytes: &[u8]) {
    for mode in [Mode::Strict, Mode::Lenient] {
        let ok = validate(bytes, mode, Limits::default()).is_ok();
        let value = Value::decode(bytes, mode, Limits::default());
        assert_eq!(
            ok,
            value.is_ok(),
            "validate and Value::decode disagree on {bytes:02x?}"
        );
        if let Ok(v) = value {
            // Lenient input may hold what no canonical encoding can: repeated
            // map keys, or a bignum tag around something other than bytes.
            let canon = match v.to_cbor() {
                Ok(c) => c,
                Err(e) => {
                    assert_eq!(
                        mode,
                        Mode::Lenient,
                        "strict-valid input failed to re-encode: {e}"
                    );
                    assert!(
                        matches!(
                            e,
                            EncodeError::DuplicateKey { .. }
                                | EncodeError::NonCanonicalBignum { .. }
                        ),
                        "{e}"
                    );
                    continue;
                }
            };
            validate(&canon, Mode::Strict, Limits::default()).unwrap();
            if mode == Mode::Strict {
                // Strict accepts only fixed points of decode -> encode.
                assert_eq!(canon, bytes);
                assert_eq!(transcode(bytes, Mode::Strict).unwrap(), bytes);
            }
        }
        let mut s = String::new();
        let _ = json::from_cbor(bytes, &mut s);
        let small = Limits {
            max_depth: 3,
            max_items: 10,
        };
        walk_within(bytes, mode, small);
        // Skipping agrees with validation.
        let mut d = Decoder::new(bytes, mode, Limits::default());
        if ok {
            assert_eq!(d.skip().unwrap(), bytes);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn encode_then_strict_decode_round_trips(v in value()) {
        let bytes = v.to_cbor().unwrap();
        validate(&bytes, Mode::Strict, Limits::default()).unwrap();
        let back = Value::decode(&bytes, Mode::Strict, Limits::default()).unwrap();
        prop_assert!(same(&back, &sorted(&v)), "{back:?} != {v:?}");
        prop_assert_eq!(back.to_cbor().unwrap(), bytes.clone());
        prop_assert_eq!(transcode(&bytes, Mode::Strict).unwrap(), bytes);
    }

    #[test]
    fn canonicalisation_is_idempotent(v in value(), seed in 1u64..u64::MAX) {
        let canonical = v.to_cbor().unwrap();
        let mut messy = Vec::new();
        sloppy(&v, &mut Rng(seed), &mut messy);
        let once = Value::decode(&messy, Mode::Lenient, Limits::default()).unwrap().to_cbor().unwrap();
        prop_assert_eq!(&once, &canonical);
        let twice = Value::decode(&once, Mode::Strict, Limits::default()).unwrap().to_cbor().unwrap();
        prop_assert_eq!(&twice, &canonical);
        // Strict accepts the messy bytes exactly when they are canonical.
        let strict_ok = validate(&messy, Mode::Strict, Limits::default()).is_ok();
        prop_assert_eq!(strict_ok, messy == canonical);
    }

    #[test]
    fn map_insertion_order_does_not_change_the_bytes(
        pairs in vec((value(), value()), 0..10).prop_map(dedupe).prop_shuffle(),
    ) {
        let shuffled = Value::Map(pairs.clone());
        let reference = Value::Map({
            let mut p = pairs;
            p.sort_by_key(|(k, _)| k.to_cbor().unwrap());
            p
        });
        prop_assert_eq!(shuffled.to_cbor().unwrap(), reference.to_cbor().unwrap());
    }

    #[test]
    fn random_bytes_never_panic_or_break_limits(bytes in vec(any::<u8>(), 0..96)) {
        check_hostile(&bytes);
    }

    #[test]
    fn mutated_encodings_never_panic_or_break_limits(
        v in value(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = v.to_cbor().unwrap();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        check_hostile(&bytes);
        bytes.truncate(cut.index(bytes.len() + 1));
        check_hostile(&bytes);
    }

    #[test]
    fn json_model_values_round_trip_through_json(v in json_value()) {
        let cbor = v.to_cbor().unwrap();
        let mut text = String::new();
        json::from_cbor(&cbor, &mut text).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
        let mut back = Vec::new();
        json::to_cbor(&text, &mut back).unwrap();
        prop_assert_eq!(back, cbor, "via {}", text);
    }
}

#[test]
fn limits_hold_token_by_token_on_deep_valid_input() {
    let mut deep = vec![0x81; 40];
    deep.push(0x00);
    assert!(walk_within(&deep, Mode::Strict, Limits::default()));
    let small = Limits {
        max_depth: 3,
        max_items: 10,
    };
    assert!(!walk_within(&deep, Mode::Strict, small));
    let mut d = Decoder::new(&deep, Mode::Strict, small);
    for _ in 0..3 {
        assert!(matches!(d.next().unwrap(), Token::Array(1)));
    }
    assert!(d.next().is_err());
}
