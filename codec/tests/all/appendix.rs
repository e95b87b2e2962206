//! RFC 8949 Appendix A vectors (tests/fixtures/appendix_a.json).

use serde_json::Value as Json;
use smith_codec::{DecodeError, ErrorKind, Limits, Mode, Value, validate};

use crate::{hex, transcode, unhex};

struct Vector {
    hex: String,
    roundtrip: bool,
    decoded: Option<Json>,
    diagnostic: Option<String>,
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../fixtures/appendix_a.json");
    let all: Vec<Json> = serde_json::from_str(text).unwrap();
    let vs: Vec<Vector> = all
        .into_iter()
        .map(|v| Vector {
            hex: v["hex"].as_str().unwrap().to_owned(),
            roundtrip: v["roundtrip"].as_bool().unwrap(),
            decoded: v.get("decoded").cloned(),
            diagnostic: v.get("diagnostic").map(|d| d.as_str().unwrap().to_owned()),
        })
        .collect();
    assert_eq!(vs.len(), 82, "fixture changed: review these tests");
    vs
}

/// RFC 8949 §3.3: `f818` is not well-formed (RFC 7049 listed it).
const NOT_WELL_FORMED: &str = "f818";

/// RFC 8949 diagnostic notation for a decoded value.
fn diag(v: &Value) -> String {
    match v {
        Value::Unsigned(n) => n.to_string(),
        Value::Negative(n) => format!("-{}", u128::from(*n) + 1),
        Value::Float(x) if x.is_nan() => "NaN".into(),
        Value::Float(x) if x.is_infinite() => {
            if *x > 0.0 { "Infinity" } else { "-Infinity" }.into()
        }
        Value::Float(x) => format!("{x:?}"),
        Value::Bytes(b) => format!("h'{}'", hex(b)),
        Value::Text(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(diag).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(pairs) => format!(
            "{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", diag(k), diag(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tag(t, c) => format!("{t}({})", diag(c)),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Undefined => "undefined".into(),
        Value::Simple(n) => format!("simple({n})"),
    }
}

/// Does `v` equal the fixture's JSON `decoded` value?
fn same(v: &Value, j: &Json) -> bool {
    match (v, j) {
        (Value::Unsigned(n), Json::Number(x)) => match x.as_u64() {
            Some(m) => *n == m,
            None => x.as_f64() == Some(*n as f64),
        },
        (Value::Negative(n), Json::Number(x)) => match x.as_i64() {
            Some(m) => i128::from(m) == -1 - i128::from(*n),
            None => x.as_f64() == Some((-1 - i128::from(*n)) as f64),
        },
        // serde_json's default float parser is not correctly rounded (it can
        // be one ulp off), so allow that here; the hex comparison elsewhere
        // proves the exact bits.
        (Value::Float(f), Json::Number(x)) => x.as_f64().is_some_and(|x| {
            x == *f || (x.to_bits().abs_diff(f.to_bits()) <= 1 && x.signum() == f.signum())
        }),
        // Bignums: the fixture holds them as (rounded) JSON numbers.
        (Value::Tag(t @ (2 | 3), c), Json::Number(x)) => {
            let Value::Bytes(b) = &**c else { return false };
            let mag = b.iter().fold(0u128, |a, &d| a * 256 + u128::from(d));
            let val = if *t == 2 {
                mag as f64
            } else {
                -1.0 - mag as f64
            };
            x.as_f64() == Some(val)
        }
        (Value::Text(s), Json::String(t)) => s == t,
        (Value::Bool(b), Json::Bool(c)) => b == c,
        (Value::Null, Json::Null) => true,
        (Value::Array(items), Json::Array(js)) => {
            items.len() == js.len() && items.iter().zip(js).all(|(a, b)| same(a, b))
        }
        (Value::Map(pairs), Json::Object(obj)) => {
            pairs.len() == obj.len()
                && pairs.iter().all(|(k, v)| match k {
                    Value::Text(k) => obj.get(k).is_some_and(|j| same(v, j)),
                    _ => false,
                })
        }
        _ => false,
    }
}

fn expected_value(vector: &Vector, v: &Value) {
    match (&vector.decoded, &vector.diagnostic) {
        (Some(j), _) => assert!(
            same(v, j),
            "{}: decoded {v:?}, fixture says {j}",
            vector.hex
        ),
        (None, Some(d)) => {
            // The one indefinite byte string decodes to its joined chunks.
            let want = if d == "(_ h'0102', h'030405')" {
                "h'0102030405'"
            } else {
                d.as_str()
            };
            assert_eq!(diag(v), want, "{}", vector.hex);
        }
        (None, None) => panic!("{}: vector has neither decoded nor diagnostic", vector.hex),
    }
}

#[test]
fn canonical_vectors_round_trip_to_the_same_hex() {
    let mut checked = 0;
    for v in vectors()
        .iter()
        .filter(|v| v.roundtrip && v.hex != NOT_WELL_FORMED)
    {
        let bytes = unhex(&v.hex);
        validate(&bytes, Mode::Strict, Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", v.hex));
        // Token path: decoder -> encoder.
        assert_eq!(
            hex(&transcode(&bytes, Mode::Strict).unwrap()),
            v.hex,
            "token path"
        );
        // Owned path: Value::decode -> Value::encode.
        let value = Value::decode(&bytes, Mode::Strict, Limits::default()).unwrap();
        assert_eq!(hex(&value.to_cbor().unwrap()), v.hex, "value path");
        expected_value(v, &value);
        checked += 1;
    }
    assert_eq!(checked, 64);
}

/// The rule each non-canonical vector breaks, with its offset.
fn expected_rule(hex: &str) -> (usize, ErrorKind) {
    let f = |width, shortest| ErrorKind::NonShortestFloat { width, shortest };
    let indef = |offset, initial| (offset, ErrorKind::IndefiniteLength { initial });
    match hex {
        "fa7f800000" | "faff800000" => (0, f(4, 2)),
        "fb7ff0000000000000" | "fbfff0000000000000" => (0, f(8, 2)),
        "fa7fc00000" | "fb7ff8000000000000" => (0, ErrorKind::NonCanonicalNan),
        "5f42010243030405ff" => indef(0, 0x5f),
        "7f657374726561646d696e67ff" => indef(0, 0x7f),
        "9fff"
        | "9f018202039f0405ffff"
        | "9f01820203820405ff"
        | "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff" => indef(0, 0x9f),
        "83018202039f0405ff" => indef(5, 0x9f),
        "83019f0203ff820405" => indef(2, 0x9f),
        "bf61610161629f0203ffff" | "bf6346756ef563416d7421ff" => indef(0, 0xbf),
        "826161bf61626163ff" => indef(3, 0xbf),
        other => panic!("no expected rule for non-canonical vector {other}"),
    }
}

#[test]
fn non_canonical_vectors_are_rejected_strictly_with_the_rule_and_decoded_leniently() {
    let mut checked = 0;
    for v in vectors().iter().filter(|v| !v.roundtrip) {
        let bytes = unhex(&v.hex);
        let (offset, kind) = expected_rule(&v.hex);
        let err = validate(&bytes, Mode::Strict, Limits::default()).unwrap_err();
        assert_eq!(err, DecodeError::new(offset, kind), "{}", v.hex);
        assert!(err.kind().is_non_canonical());
        assert!(
            err.to_string().contains(&format!("at byte {offset}")),
            "{err}"
        );

        validate(&bytes, Mode::Lenient, Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", v.hex));
        let value = Value::decode(&bytes, Mode::Lenient, Limits::default()).unwrap();
        expected_value(v, &value);
        // Canonicalising gives bytes strict mode accepts, and is idempotent.
        let canon = value.to_cbor().unwrap();
        validate(&canon, Mode::Strict, Limits::default()).unwrap();
        let again = Value::decode(&canon, Mode::Strict, Limits::default())
            .unwrap()
            .to_cbor()
            .unwrap();
        assert_eq!(again, canon);
        checked += 1;
    }
    assert_eq!(checked, 17);
}

#[test]
fn non_canonical_floats_canonicalise_to_their_half_forms() {
    for (wide, half) in [
        ("fa7f800000", "f97c00"),
        ("fa7fc00000", "f97e00"),
        ("faff800000", "f9fc00"),
        ("fb7ff0000000000000", "f97c00"),
        ("fb7ff8000000000000", "f97e00"),
        ("fbfff0000000000000", "f9fc00"),
    ] {
        let v = Value::decode(&unhex(wide), Mode::Lenient, Limits::default()).unwrap();
        assert_eq!(hex(&v.to_cbor().unwrap()), half);
    }
}

#[test]
fn two_byte_simple_24_is_not_well_formed_in_either_mode() {
    let bytes = unhex(NOT_WELL_FORMED);
    assert!(
        vectors().iter().any(|v| v.hex == NOT_WELL_FORMED),
        "fixture still lists f818"
    );
    for mode in [Mode::Strict, Mode::Lenient] {
        let err = validate(&bytes, mode, Limits::default()).unwrap_err();
        assert_eq!(
            err,
            DecodeError::new(0, ErrorKind::InvalidTwoByteSimple { value: 24 })
        );
        assert!(err.kind().is_malformed());
    }
}
