//! Hand-made vectors: every strict rule, every malformed form, the limits,
//! and the typed reader API.

use smith_codec::{
    DecodeError, Decoder, Encoder, ErrorKind, Limits, MAX_DEPTH, Mode, Token, Value, validate,
};

use crate::unhex;

fn strict_err(hex: &str) -> DecodeError {
    validate(&unhex(hex), Mode::Strict, Limits::default()).unwrap_err()
}

fn lenient(hex: &str) -> Result<(), DecodeError> {
    validate(&unhex(hex), Mode::Lenient, Limits::default())
}

#[test]
fn non_shortest_heads_are_rejected_strictly_and_accepted_leniently() {
    let cases: &[(&str, usize, u8, u64)] = &[
        ("1817", 0, 0, 23),
        ("190017", 0, 0, 23),
        ("1900ff", 0, 0, 255),
        ("1a0000ffff", 0, 0, 65535),
        ("1b00000000ffffffff", 0, 0, 0xffff_ffff),
        ("3817", 0, 1, 23),
        ("5800", 0, 2, 0),
        ("780161", 0, 3, 1),
        ("98020102", 0, 4, 2),
        ("b90001 0102", 0, 5, 1),
        ("d80100", 0, 6, 1),
        ("82 01 190017", 2, 0, 23),
    ];
    for &(h, offset, major, value) in cases {
        let h = h.replace(' ', "");
        let err = strict_err(&h);
        assert_eq!(
            err,
            DecodeError::new(offset, ErrorKind::NonShortestHead { major, value }),
            "{h}"
        );
        lenient(&h).unwrap_or_else(|e| panic!("{h}: {e}"));
    }
}

#[test]
fn map_keys_must_be_sorted_bytewise_by_encoding_and_unique() {
    // {2: 0, 1: 0}: second key sorts before the first.
    assert_eq!(
        strict_err("a202000100"),
        DecodeError::new(3, ErrorKind::UnsortedKey { previous: 1 })
    );
    // {1: 0, 1: 0}
    assert_eq!(
        strict_err("a201000100"),
        DecodeError::new(3, ErrorKind::DuplicateKey { previous: 1 })
    );
    // Bytewise order of encodings, not numeric or length-first order:
    // 10 (0a) < -1 (20) < "b" (6162) < "aa" (626161).
    validate(
        &unhex("a40a00200061620062616100"),
        Mode::Strict,
        Limits::default(),
    )
    .unwrap();
    assert_eq!(
        strict_err("a2626161006162 00".replace(' ', "").as_str()),
        DecodeError::new(5, ErrorKind::UnsortedKey { previous: 1 })
    );
    // Structured keys compare by their whole encoding: [1] (8101) < [1, 2] (820102).
    validate(
        &unhex("a28101008201020 0".replace(' ', "").as_str()),
        Mode::Strict,
        Limits::default(),
    )
    .unwrap();
    assert_eq!(
        strict_err("a2820102008101 00".replace(' ', "").as_str()),
        DecodeError::new(5, ErrorKind::UnsortedKey { previous: 1 })
    );
    // Each nesting level keeps its own previous key: the inner map's keys
    // restart, and the outer order resumes after it.
    validate(
        &unhex("a201a2010002000 2a1010 0".replace(' ', "").as_str()),
        Mode::Strict,
        Limits::default(),
    )
    .unwrap();
    // Duplicates are well-formed: lenient accepts both maps.
    lenient("a202000100").unwrap();
    lenient("a201000100").unwrap();
}

#[test]
fn floats_must_be_shortest_and_nan_canonical() {
    let f = |width, shortest| ErrorKind::NonShortestFloat { width, shortest };
    assert_eq!(strict_err("fa3f800000"), DecodeError::new(0, f(4, 2))); // 1.0
    assert_eq!(
        strict_err("fb3ff0000000000000"),
        DecodeError::new(0, f(8, 2))
    ); // 1.0
    assert_eq!(
        strict_err("fb40f86a0000000000"),
        DecodeError::new(0, f(8, 4))
    ); // 100000.0
    assert_eq!(
        strict_err("f97e01"),
        DecodeError::new(0, ErrorKind::NonCanonicalNan)
    );
    assert_eq!(
        strict_err("f9fe00"),
        DecodeError::new(0, ErrorKind::NonCanonicalNan)
    );
    for ok in [
        "f97e00",
        "f93c00",
        "fa47c35000",
        "fb3ff199999999999a",
        "f90001",
        "fa33000000",
    ] {
        validate(&unhex(ok), Mode::Strict, Limits::default())
            .unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    lenient("fb3ff0000000000000").unwrap();
    lenient("f97e01").unwrap();
}

#[test]
fn bignums_must_be_in_preferred_form() {
    validate(
        &unhex("c249010000000000000000"),
        Mode::Strict,
        Limits::default(),
    )
    .unwrap();
    for bad in [
        "c2480100000000000000",
        "c24a00010000000000000000",
        "c201",
        "c340",
    ] {
        assert_eq!(
            strict_err(bad),
            DecodeError::new(1, ErrorKind::NonCanonicalBignum),
            "{bad}"
        );
        lenient(bad).unwrap();
    }
}

#[test]
fn malformed_input_is_rejected_in_both_modes() {
    let cases: &[(&str, usize, ErrorKind)] = &[
        ("1c", 0, ErrorKind::ReservedAdditionalInfo { initial: 0x1c }),
        ("5d", 0, ErrorKind::ReservedAdditionalInfo { initial: 0x5d }),
        ("fe", 0, ErrorKind::ReservedAdditionalInfo { initial: 0xfe }),
        (
            "1f",
            0,
            ErrorKind::IndefiniteNotAllowedHere { initial: 0x1f },
        ),
        (
            "3f",
            0,
            ErrorKind::IndefiniteNotAllowedHere { initial: 0x3f },
        ),
        (
            "df",
            0,
            ErrorKind::IndefiniteNotAllowedHere { initial: 0xdf },
        ),
        ("f800", 0, ErrorKind::InvalidTwoByteSimple { value: 0 }),
        ("f81f", 0, ErrorKind::InvalidTwoByteSimple { value: 31 }),
        ("ff", 0, ErrorKind::UnexpectedBreak),
        ("81ff", 1, ErrorKind::UnexpectedBreak),
        ("c0ff", 1, ErrorKind::UnexpectedBreak),
        ("62c328", 1, ErrorKind::InvalidUtf8),
        (
            "6461c3",
            0,
            ErrorKind::LengthExceedsInput {
                declared: 4,
                available: 2,
            },
        ),
        (
            "1901",
            0,
            ErrorKind::Truncated {
                needed: 1,
                available: 1,
            },
        ),
        (
            "1b",
            0,
            ErrorKind::Truncated {
                needed: 8,
                available: 0,
            },
        ),
        (
            "8201",
            0,
            ErrorKind::LengthExceedsInput {
                declared: 2,
                available: 1,
            },
        ),
        (
            "811901",
            1,
            ErrorKind::Truncated {
                needed: 1,
                available: 1,
            },
        ),
        (
            "828100",
            3,
            ErrorKind::Truncated {
                needed: 1,
                available: 0,
            },
        ),
        ("", 0, ErrorKind::EndOfInput),
        ("0000", 1, ErrorKind::TrailingBytes { count: 1 }),
    ];
    for (h, offset, kind) in cases {
        for mode in [Mode::Strict, Mode::Lenient] {
            let err = validate(&unhex(h), mode, Limits::default()).unwrap_err();
            assert_eq!(err, DecodeError::new(*offset, *kind), "{h} in {mode:?}");
        }
    }
    // Malformed inside indefinite items (lenient only; strict stops at the
    // indefinite head).
    let lenient_cases: &[(&str, usize, ErrorKind)] = &[
        ("bf01ff", 2, ErrorKind::MapMissingValue),
        ("5f6161ff", 1, ErrorKind::InvalidChunk { initial: 0x61 }),
        ("7f4161ff", 1, ErrorKind::InvalidChunk { initial: 0x41 }),
        ("5f5fffff", 1, ErrorKind::InvalidChunk { initial: 0x5f }),
        ("7f62c328ff", 2, ErrorKind::InvalidUtf8),
        (
            "9f01",
            2,
            ErrorKind::Truncated {
                needed: 1,
                available: 0,
            },
        ),
        ("8101ff", 2, ErrorKind::TrailingBytes { count: 1 }),
    ];
    for (h, offset, kind) in lenient_cases {
        assert_eq!(
            lenient(h).unwrap_err(),
            DecodeError::new(*offset, *kind),
            "{h}"
        );
    }
}

#[test]
fn declared_lengths_are_checked_before_reading() {
    // A 2^60-element array in 10 bytes fails at its head.
    let mut input = unhex("9b1000000000000000");
    input.push(0);
    let mut d = Decoder::strict(&input);
    let err = d.next().unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(
            0,
            ErrorKind::LengthExceedsInput {
                declared: 1 << 60,
                available: 1
            }
        )
    );
    // Maps need two bytes per pair; strings need their whole length.
    assert_eq!(
        strict_err("a2 0000 00".replace(' ', "").as_str()),
        DecodeError::new(
            0,
            ErrorKind::LengthExceedsInput {
                declared: 2,
                available: 3
            }
        )
    );
    assert_eq!(
        strict_err("5b ffffffffffffffff 00".replace(' ', "").as_str()),
        DecodeError::new(
            0,
            ErrorKind::LengthExceedsInput {
                declared: u64::MAX,
                available: 1
            }
        )
    );
}

fn nested(open: u8, n: usize) -> Vec<u8> {
    let mut v = vec![open; n];
    v.push(0);
    v
}

#[test]
fn depth_is_limited_and_clamped_to_the_compile_time_bound() {
    let limits = Limits {
        max_depth: 3,
        max_items: 1 << 20,
    };
    validate(&nested(0x81, 3), Mode::Strict, limits).unwrap();
    let err = validate(&nested(0x81, 4), Mode::Strict, limits).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(3, ErrorKind::DepthExceeded { limit: 3 })
    );
    // Tags count as nesting too, so a tag chain cannot recurse unboundedly.
    let err = validate(&nested(0xc0, 4), Mode::Strict, limits).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(3, ErrorKind::DepthExceeded { limit: 3 })
    );
    // Clamping: asking for more than MAX_DEPTH gives MAX_DEPTH.
    let huge = Limits {
        max_depth: u32::MAX,
        max_items: 1 << 20,
    };
    validate(&nested(0x81, MAX_DEPTH as usize), Mode::Strict, huge).unwrap();
    let err = validate(&nested(0x81, MAX_DEPTH as usize + 1), Mode::Strict, huge).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(
            MAX_DEPTH as usize,
            ErrorKind::DepthExceeded { limit: MAX_DEPTH }
        )
    );
    // Indefinite containers count the same way.
    let err = validate(&nested(0x9f, 4), Mode::Lenient, limits).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(3, ErrorKind::DepthExceeded { limit: 3 })
    );
}

#[test]
fn item_count_is_limited_when_the_head_declares_it() {
    let limits = Limits {
        max_depth: 8,
        max_items: 4,
    };
    validate(&unhex("83010203"), Mode::Strict, limits).unwrap();
    // [1, 2, 3, 4] is five items: refused at the array head, before reading.
    let err = validate(&unhex("8401020304"), Mode::Strict, limits).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(0, ErrorKind::TooManyItems { limit: 4 })
    );
    // A map's pairs count as two items each.
    let err = validate(&unhex("a201020304"), Mode::Strict, limits).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(0, ErrorKind::TooManyItems { limit: 4 })
    );
    // Indefinite arrays are counted item by item.
    let err = validate(&unhex("9f01020304ff"), Mode::Lenient, limits).unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(4, ErrorKind::TooManyItems { limit: 4 })
    );
}

#[test]
fn typed_reads_name_expected_and_found_and_consume_nothing_on_mismatch() {
    let input = unhex("6161");
    let mut d = Decoder::strict(&input);
    let err = d.u64().unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(
            0,
            ErrorKind::TypeMismatch {
                expected: "unsigned integer",
                found: "text string"
            }
        )
    );
    let msg = err.to_string();
    assert!(
        msg.contains("at byte 0") && msg.contains("expected unsigned integer, found text string"),
        "{msg}"
    );
    assert!(msg.contains("next:"), "{msg}");
    assert_eq!(d.position(), 0);
    assert_eq!(d.str().unwrap(), "a");
    assert!(d.is_at_end());

    let big = unhex("1bffffffffffffffff");
    let err = Decoder::strict(&big).i64().unwrap_err();
    assert_eq!(
        err,
        DecodeError::new(0, ErrorKind::IntegerOutOfRange { expected: "i64" })
    );
    assert_eq!(
        Decoder::strict(&unhex("3b7fffffffffffffff")).i64().unwrap(),
        i64::MIN
    );
}

#[test]
fn typed_reader_walks_a_record() {
    let mut buf = Vec::new();
    Encoder::new(&mut buf)
        .map(6)
        .str("id")
        .u64(42)
        .str("ok")
        .bool(true)
        .str("raw")
        .bytes(b"\x00\x01")
        .str("tags")
        .array(2)
        .str("x")
        .null()
        .str("delta")
        .i64(-7)
        .str("score")
        .f64(0.5);
    let mut d = Decoder::strict(&buf);
    assert_eq!(d.map().unwrap(), 6);
    assert_eq!(d.str().unwrap(), "id");
    assert_eq!(d.u64().unwrap(), 42);
    assert_eq!(d.str().unwrap(), "ok");
    assert!(d.bool().unwrap());
    assert_eq!(d.str().unwrap(), "raw");
    assert_eq!(d.bytes().unwrap(), b"\x00\x01");
    assert_eq!(d.str().unwrap(), "tags");
    assert_eq!(d.array().unwrap(), 2);
    assert_eq!(d.depth(), 2);
    assert_eq!(d.str().unwrap(), "x");
    d.null().unwrap();
    assert_eq!(d.depth(), 1);
    assert_eq!(d.str().unwrap(), "delta");
    assert_eq!(d.i64().unwrap(), -7);
    assert_eq!(d.str().unwrap(), "score");
    assert_eq!(d.f64().unwrap(), 0.5);
    assert_eq!(d.depth(), 0);
    assert!(d.is_at_end());
    assert_eq!(d.next().unwrap_err().kind(), ErrorKind::EndOfInput);
}

#[test]
fn skip_returns_the_raw_item_and_checks_it() {
    let input = unhex(
        "a2 6161 82 01 a1 00 00 6162 c1 00"
            .replace(' ', "")
            .as_str(),
    );
    let mut d = Decoder::strict(&input);
    d.map().unwrap();
    assert_eq!(d.str().unwrap(), "a");
    assert_eq!(d.skip().unwrap(), &unhex("8201a10000")[..]);
    assert_eq!(d.str().unwrap(), "b");
    assert_eq!(d.skip().unwrap(), &unhex("c100")[..]);
    assert!(d.is_at_end());
    assert_eq!(d.depth(), 0);

    // Skipping still enforces strict rules inside the item.
    let bad = unhex("82 01 a2 02 00 01 00".replace(' ', "").as_str());
    assert_eq!(
        Decoder::strict(&bad).skip().unwrap_err().kind(),
        ErrorKind::UnsortedKey { previous: 3 }
    );

    // A skipped item can be copied verbatim with `raw`.
    let mut out = Vec::new();
    Encoder::new(&mut out).array(1).raw(&unhex("8201a10000"));
    validate(&out, Mode::Strict, Limits::default()).unwrap();

    // Skipping a break is refused: it is not an item.
    let mut d = Decoder::lenient(&[0x9f, 0xff]);
    d.next().unwrap();
    assert_eq!(
        d.skip().unwrap_err().kind(),
        ErrorKind::TypeMismatch {
            expected: "an item",
            found: "break"
        }
    );
}

#[test]
fn lenient_tokens_show_indefinite_structure() {
    let input = unhex(
        "bf 61 61 5f 41 01 40 ff 62 6262 9f f5 ff ff"
            .replace(' ', "")
            .as_str(),
    );
    let mut d = Decoder::lenient(&input);
    let mut toks = Vec::new();
    while !d.is_at_end() {
        toks.push(d.next().unwrap());
    }
    assert_eq!(
        toks,
        vec![
            Token::IndefiniteMap,
            Token::Text("a"),
            Token::IndefiniteBytes,
            Token::Bytes(&[1]),
            Token::Bytes(&[]),
            Token::Break,
            Token::Text("bb"),
            Token::IndefiniteArray,
            Token::Bool(true),
            Token::Break,
            Token::Break,
        ]
    );
    assert_eq!(d.depth(), 0);
}

#[test]
fn peek_does_not_consume() {
    let input = unhex("820102");
    let mut d = Decoder::strict(&input);
    assert_eq!(d.peek().unwrap(), Token::Array(2));
    assert_eq!(d.position(), 0);
    assert_eq!(d.next().unwrap(), Token::Array(2));
    assert_eq!(d.peek().unwrap(), Token::Unsigned(1));
    assert_eq!(d.remaining(), &[1, 2]);
}

#[test]
fn error_messages_say_what_why_and_next() {
    let err = strict_err("a202000100");
    let msg = err.to_string();
    assert_eq!(
        msg,
        "CBOR decode error at byte 3: map key sorts before the previous key at byte 1; \
         rule: map keys must be sorted by the bytewise order of their encodings (RFC 8949 §4.2.1); \
         next: re-encode the value with smith-codec's encoder, or decode it in lenient mode"
    );
    let err = validate(
        &unhex("9b1000000000000000"),
        Mode::Lenient,
        Limits::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("declared length 1152921504606846976 cannot fit in the 0 bytes left")
    );
}

#[test]
fn lenient_values_canonicalise_to_what_strict_accepts() {
    // Wide heads, unsorted keys, indefinite everything.
    let sloppy = unhex(
        "bf 7f 61 62 ff 1800 61 61 9f 1b0000000000000001 ff ff"
            .replace(' ', "")
            .as_str(),
    );
    let v = Value::decode(&sloppy, Mode::Lenient, Limits::default()).unwrap();
    let canon = v.to_cbor().unwrap();
    assert_eq!(canon, unhex("a2616181016162 00".replace(' ', "").as_str()));
    validate(&canon, Mode::Strict, Limits::default()).unwrap();
}
