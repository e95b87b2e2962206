//! The JSON bridge against the mapping in docs/codec.md.

use smith_codec::json::{self, JsonErrorKind};
use smith_codec::{Limits, Mode, validate};

use crate::{hex, unhex};

fn cbor(j: &str) -> String {
    let mut out = Vec::new();
    json::to_cbor(j, &mut out).unwrap_or_else(|e| panic!("{j}: {e}"));
    validate(&out, Mode::Strict, Limits::default()).unwrap();
    hex(&out)
}

fn text(c: &str) -> String {
    let mut s = String::new();
    json::from_cbor(&unhex(c), &mut s).unwrap();
    s
}

#[test]
fn a_provider_message_becomes_canonical_cbor() {
    let j = r#" {
        "type": "tool_use",
        "input": {"path": "a.rs", "limit": 20, "offset": -1},
        "id": "t1"
    } "#;
    // Keys sorted by encoding: "id" < "type" < "input" (length first, since
    // the head encodes the length).
    assert_eq!(
        cbor(j),
        [
            "a3", // map(3)
            "626964",
            "627431", // "id": "t1"
            "6474797065",
            "68746f6f6c5f757365", // "type": "tool_use"
            "65696e707574",
            "a3", // "input": map(3)
            "6470617468",
            "64612e7273", // "path": "a.rs"
            "656c696d6974",
            "14", // "limit": 20
            "666f6666736574",
            "20", // "offset": -1
        ]
        .concat()
    );
    // And back: key order is the canonical one.
    let back = text(&cbor(j));
    assert_eq!(
        back,
        r#"{"id":"t1","type":"tool_use","input":{"path":"a.rs","limit":20,"offset":-1}}"#
    );
}

#[test]
fn json_text_is_normalised_but_values_round_trip() {
    for (input, normal) in [
        ("1.50", "1.5"),
        ("1E2", "100.0"),
        ("-0", "0"),
        ("-0.0", "-0.0"),
        ("1e300", "1e300"),
        ("18446744073709551615", "18446744073709551615"),
        ("-18446744073709551616", "-18446744073709551616"),
        ("18446744073709551616", "1.8446744073709552e19"),
        (r#""\u00e9\/""#, r#""é/""#),
        (" [ ] ", "[]"),
        (r#"{"b":[],"a":{}}"#, r#"{"a":{},"b":[]}"#),
    ] {
        let c = cbor(input);
        let t = text(&c);
        assert_eq!(t, normal, "{input}");
        assert_eq!(cbor(&t), c, "{input} is stable");
    }
}

#[test]
fn non_json_cbor_uses_marked_objects_that_read_back_as_plain_maps() {
    // Byte strings, tags, undefined, simple values, non-finite floats and
    // non-text keys have no JSON form: they come out as marked objects and do
    // not round-trip (to_cbor reads them as ordinary maps).
    for (c, j) in [
        ("4401020304", r#"{"$bytes":"AQIDBA"}"#),
        (
            "c074323031332d30332d32315432303a30343a30305a",
            r#"{"$tag":0,"$value":"2013-03-21T20:04:00Z"}"#,
        ),
        ("f7", r#"{"$undefined":true}"#),
        ("f8ff", r#"{"$simple":255}"#),
        ("f97c00", r#"{"$float":"Infinity"}"#),
        ("a201020304", r#"{"$map":[[1,2],[3,4]]}"#),
    ] {
        assert_eq!(text(c), j);
        assert_ne!(cbor(j), c, "{c} must not silently round-trip");
    }
}

#[test]
fn lenient_cbor_converts_and_trailing_bytes_do_not() {
    assert_eq!(text("bf6346756ef563416d7421ff"), r#"{"Fun":true,"Amt":-2}"#);
    let mut s = String::new();
    assert!(json::from_cbor(&unhex("0000"), &mut s).is_err());
    let err =
        json::from_cbor_with(&unhex("1817"), Mode::Strict, Limits::default(), &mut s).unwrap_err();
    assert!(err.kind().is_non_canonical());
}

#[test]
fn json_errors_name_offset_and_cause() {
    let cases: &[(&str, usize, JsonErrorKind)] = &[
        ("", 0, JsonErrorKind::UnexpectedEnd),
        ("[1,", 3, JsonErrorKind::UnexpectedEnd),
        (
            "nul",
            0,
            JsonErrorKind::UnexpectedChar {
                found: 'n',
                expected: "true, false or null",
            },
        ),
        (
            "{1:2}",
            1,
            JsonErrorKind::UnexpectedChar {
                found: '1',
                expected: "a string key",
            },
        ),
        ("\"\\x\"", 1, JsonErrorKind::InvalidEscape),
        ("\"\\udc00\"", 1, JsonErrorKind::LoneSurrogate),
        ("-", 1, JsonErrorKind::InvalidNumber),
        ("1e", 2, JsonErrorKind::InvalidNumber),
        ("-1e400", 0, JsonErrorKind::NumberOutOfRange),
        (
            r#"{"k":1,"k":2}"#,
            12,
            JsonErrorKind::DuplicateKey { key: "k".into() },
        ),
        ("1 2", 2, JsonErrorKind::TrailingCharacters),
    ];
    for (j, offset, kind) in cases {
        let mut out = Vec::new();
        let err = json::to_cbor(j, &mut out).unwrap_err();
        assert_eq!((err.offset(), err.kind()), (*offset, kind), "{j:?}");
        assert!(out.is_empty());
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("at byte {offset}")) && msg.contains("fix the JSON"),
            "{msg}"
        );
    }
    let deep = "[".repeat(65) + &"]".repeat(65);
    let err = json::to_cbor(&deep, &mut Vec::new()).unwrap_err();
    assert_eq!((err.offset(), err.kind()), (64, &JsonErrorKind::TooDeep));
    let ok = "[".repeat(64) + &"]".repeat(64);
    json::to_cbor(&ok, &mut Vec::new()).unwrap();
}
