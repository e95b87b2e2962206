//! Exact allocation counts (the counting allocator lives in main.rs).

use smith_codec::{Decoder, Encoder, Limits, Mode, Token, json, validate};

use crate::count_allocs;

/// A representative session entry: an assistant message with a tool call
/// whose arguments are a nested map, keys in canonical order.
fn entry(e: &mut Encoder<'_>, i: u64, text: &str) {
    e.map(5)
        .str("id")
        .u64(i)
        .str("ts")
        .u64(1_764_000_000_000 + i)
        .str("kind")
        .str("assistant")
        .str("text")
        .str(text)
        .str("calls")
        .array(1)
        .map(3)
        .str("id")
        .str("call_01")
        .str("args")
        .map(3)
        .str("path")
        .str("src/main.rs")
        .str("limit")
        .u64(200)
        .str("offset")
        .i64(-1)
        .str("name")
        .str("read");
}

fn text() -> String {
    "The quick brown fox jumps over the lazy dog. ".repeat(11)
}

#[test]
fn the_counter_counts() {
    let ((), n) = count_allocs(|| {
        let v: Vec<u8> = Vec::with_capacity(10);
        drop(v);
    });
    assert_eq!(n, 1);
    // Encoding into an empty Vec must grow it: exactly one allocation for
    // one small item.
    let (_, n) = count_allocs(|| {
        let mut v = Vec::new();
        Encoder::new(&mut v).u64(1);
        v
    });
    assert_eq!(n, 1);
}

#[test]
fn encoding_into_a_buffer_with_capacity_allocates_nothing() {
    let t = text();
    let mut buf = Vec::with_capacity(1 << 20);
    let ((), n) = count_allocs(|| {
        for i in 0..1000 {
            let mut e = Encoder::new(&mut buf);
            entry(&mut e, i, &t);
            e.f64(0.1)
                .f64(1.5)
                .f64(f64::NAN)
                .bytes(&[1, 2, 3])
                .tag(1)
                .null()
                .bool(true)
                .raw(&[0xf6]);
        }
    });
    assert_eq!(n, 0);
    assert!(buf.len() > 500_000);
}

#[test]
fn decoding_allocates_nothing() {
    let t = text();
    let mut buf = Vec::new();
    for i in 0..100 {
        entry(&mut Encoder::new(&mut buf), i, &t);
    }
    let lenient_input = [
        0xbf, 0x61, 0x61, 0x5f, 0x41, 0x01, 0xff, 0x9f, 0xff, 0x01, 0xff,
    ];
    let (tokens, n) = count_allocs(|| {
        let mut tokens = 0u64;
        // Token by token, strict.
        let mut d = Decoder::strict(&buf);
        while !d.is_at_end() {
            d.next().unwrap();
            tokens += 1;
        }
        // Item by item with skip, and a full validation of one entry.
        let mut d = Decoder::strict(&buf);
        let first = d.skip().unwrap();
        validate(first, Mode::Strict, Limits::default()).unwrap();
        // Typed reads.
        let mut d = Decoder::strict(first);
        d.map().unwrap();
        assert_eq!(d.str().unwrap(), "id");
        assert_eq!(d.u64().unwrap(), 0);
        // Errors are plain values.
        assert!(d.bool().is_err());
        // Lenient mode with indefinite lengths.
        let mut d = Decoder::new(&lenient_input, Mode::Lenient, Limits::default());
        while !d.is_at_end() {
            if let Token::Break = d.next().unwrap() {
                tokens += 1;
            }
        }
        tokens
    });
    assert_eq!(n, 0);
    assert_eq!(tokens, 100 * 24 + 3);
}

#[test]
fn json_to_cbor_allocation_counts_are_exact() {
    let mut out = Vec::with_capacity(4096);
    // Arrays, scalars and escape-free strings: nothing.
    let (r, n) =
        count_allocs(|| json::to_cbor(r#"[1, -2, 3.5, "plain", true, null, [[]]]"#, &mut out));
    r.unwrap();
    assert_eq!(n, 0);
    // An object already in canonical key order: the member index only.
    let (r, n) = count_allocs(|| json::to_cbor(r#"{"a": 1, "b": {"c": 2}}"#, &mut out));
    r.unwrap();
    assert_eq!(n, 1);
    // Out of order: the member index and the reorder scratch.
    let (r, n) = count_allocs(|| json::to_cbor(r#"{"b": 1, "a": 2}"#, &mut out));
    r.unwrap();
    assert_eq!(n, 2);
}
