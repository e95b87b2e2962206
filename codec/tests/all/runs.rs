//! Runs of items (`Encoder::items`): the same bytes as the methods, one
//! capacity check per run, never a store past the capacity.

use smith_codec::{Decoder, Encoder, Item, Limits, Mode, Token, validate};

use crate::{guard_intact, hex};

/// Arguments on both sides of every head width boundary.
const ARGS: [u64; 12] = [
    0,
    23,
    24,
    255,
    256,
    65_535,
    65_536,
    0xffff_ffff,
    0x1_0000_0000,
    u64::MAX - 1,
    u64::MAX,
    1_767_225_600_000,
];

/// Strings of every copy path: empty, one to three bytes, 4..8, 8..16,
/// 16..=32, 33..64, 64 and more, and both sides of 23/24 and 255/256.
fn texts() -> Vec<String> {
    [
        0usize, 1, 2, 3, 4, 7, 8, 15, 16, 23, 24, 31, 32, 33, 63, 64, 65, 255, 256, 300, 1000,
    ]
    .iter()
    .map(|&n| (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect())
    .collect()
}

/// Writes `item` with the encoder's method of the same kind.
fn by_method(e: &mut Encoder<'_>, item: &Written) {
    match item {
        Written::U64(v) => e.u64(*v),
        Written::I64(v) => e.i64(*v),
        Written::Negative(n) => e.negative(*n),
        Written::Bytes(b) => e.bytes(b),
        Written::Str(s) => e.str(s),
        Written::Array(n) => e.array(*n),
        Written::Map(n) => e.map(*n),
        Written::Tag(t) => e.tag(*t),
        Written::Bool(b) => e.bool(*b),
        Written::Null => e.null(),
        Written::Undefined => e.undefined(),
    };
}

/// An item as data, to write both ways.
#[derive(Clone, Debug)]
enum Written {
    U64(u64),
    I64(i64),
    Negative(u64),
    Bytes(Vec<u8>),
    Str(String),
    Array(u64),
    Map(u64),
    Tag(u64),
    Bool(bool),
    Null,
    Undefined,
}

impl Written {
    fn item(&self) -> Item<'_> {
        match self {
            Written::U64(v) => Item::u64(*v),
            Written::I64(v) => Item::i64(*v),
            Written::Negative(n) => Item::negative(*n),
            Written::Bytes(b) => Item::bytes(b),
            Written::Str(s) => Item::str(s),
            Written::Array(n) => Item::array(*n),
            Written::Map(n) => Item::map(*n),
            Written::Tag(t) => Item::tag(*t),
            Written::Bool(b) => Item::bool(*b),
            Written::Null => Item::null(),
            Written::Undefined => Item::undefined(),
        }
    }
}

/// Every kind of item at every width boundary, every string size.
fn every_item() -> Vec<Written> {
    let mut all = Vec::new();
    for &a in &ARGS {
        all.extend([
            Written::U64(a),
            Written::Negative(a),
            Written::Array(a),
            Written::Map(a),
            Written::Tag(a),
        ]);
        all.push(Written::I64(a as i64));
        all.push(Written::I64(-1 - (a >> 1) as i64));
    }
    all.extend([
        Written::I64(i64::MIN),
        Written::I64(i64::MAX),
        Written::I64(-1),
        Written::I64(-24),
        Written::I64(-25),
        Written::Bool(false),
        Written::Bool(true),
        Written::Null,
        Written::Undefined,
    ]);
    for t in texts() {
        all.push(Written::Bytes(t.as_bytes().to_vec()));
        all.push(Written::Str(t));
    }
    all
}

/// Writes `items` as runs of three (the last run shorter) after `prefix`
/// bytes into a buffer of exactly `capacity` bytes; returns the buffer and
/// whether it kept its allocation.
fn write_runs(prefix: usize, capacity: usize, items: &[Written]) -> (Vec<u8>, bool) {
    let mut buf = Vec::with_capacity(capacity);
    buf.extend(std::iter::repeat_n(0xaa, prefix));
    let (ptr, cap) = (buf.as_ptr(), buf.capacity());
    {
        let mut e = Encoder::new(&mut buf);
        for chunk in items.chunks(3) {
            match chunk {
                [a, b, c] => e.items((a.item(), b.item(), c.item())),
                [a, b] => e.items((a.item(), b.item())),
                [a] => e.item(a.item()),
                _ => unreachable!("chunks of at most three"),
            };
        }
    }
    let kept = buf.as_ptr() == ptr && buf.capacity() == cap;
    if kept {
        assert!(
            guard_intact(&buf),
            "a run stored past the capacity of {cap} bytes ({} items after {prefix} bytes: {items:?})",
            items.len()
        );
    }
    (buf, kept)
}

fn by_methods(items: &[Written]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = Encoder::new(&mut out);
    for item in items {
        by_method(&mut e, item);
    }
    drop(e);
    out
}

#[test]
fn a_run_writes_what_the_methods_write_for_every_item() {
    // Each item alone, and after each other item (so that every kind and
    // width follows every other in a run of two), with plenty of room.
    let all = every_item();
    for a in &all {
        let want = by_methods(std::slice::from_ref(a));
        let mut got = Vec::with_capacity(4096);
        Encoder::new(&mut got).item(a.item());
        assert_eq!(hex(&got), hex(&want), "{a:?}");
        for b in &all {
            let want = by_methods(&[a.clone(), b.clone()]);
            let mut got = Vec::with_capacity(4096);
            Encoder::new(&mut got).items((a.item(), b.item()));
            assert_eq!(hex(&got), hex(&want), "{a:?} then {b:?}");
        }
    }
}

#[test]
fn runs_never_store_past_the_capacity_and_never_grow_an_exact_buffer() {
    // Short sequences of items written as runs into buffers of exactly the
    // size they need, of one byte less, and of exactly the room the
    // unchecked path asks for (9 bytes per head and the payloads), after
    // 0 to 20 bytes already there: the bytes always match the methods', an
    // exact buffer never grows, and no store reaches the allocator's guard
    // after the buffer. A run whose room check were one head short would
    // store up to 8 bytes past an exact buffer's end.
    let all = every_item();
    let mut sequences: Vec<Vec<Written>> = Vec::new();
    for (i, a) in all.iter().enumerate() {
        sequences.push(vec![a.clone()]);
        let b = &all[(i * 7 + 3) % all.len()];
        let c = &all[(i * 13 + 5) % all.len()];
        sequences.push(vec![a.clone(), b.clone()]);
        sequences.push(vec![a.clone(), b.clone(), c.clone()]);
        sequences.push(vec![Written::U64(0), a.clone(), Written::Null, b.clone()]);
        // After a nine-byte head and before a one-byte one: the run's room
        // is tightest where every earlier head takes its full nine bytes.
        sequences.push(vec![Written::U64(u64::MAX), a.clone()]);
        sequences.push(vec![a.clone(), Written::U64(0)]);
        sequences.push(vec![Written::Negative(u64::MAX), a.clone(), Written::Null]);
    }
    for items in &sequences {
        let want = by_methods(items);
        let room: usize = items
            .iter()
            .map(|w| 9 + w.item_payload_len())
            .sum::<usize>();
        for prefix in 0..=20usize {
            for capacity in [
                prefix + want.len(),
                prefix + want.len() - 1,
                prefix + room,
                prefix + room - 1,
            ] {
                let (buf, kept) = write_runs(prefix, capacity, items);
                assert!(buf[..prefix].iter().all(|&b| b == 0xaa), "{items:?}");
                assert_eq!(
                    hex(&buf[prefix..]),
                    hex(&want),
                    "{items:?} after {prefix} bytes, capacity {capacity}"
                );
                if capacity >= prefix + want.len() {
                    assert!(
                        kept,
                        "{items:?} after {prefix} bytes grew a buffer of capacity {capacity}, \
                         which had room for its {} bytes",
                        want.len()
                    );
                }
            }
        }
    }
}

impl Written {
    fn item_payload_len(&self) -> usize {
        match self {
            Written::Bytes(b) => b.len(),
            Written::Str(s) => s.len(),
            _ => 0,
        }
    }
}

#[test]
fn nested_maps_written_as_runs_decode_strictly() {
    // A record with fixed keys whose values hold a nested map and an array
    // of maps, each container's head and its leaves written as runs: the
    // result is canonical (strict validation) and decodes to the values
    // written.
    let long = "x".repeat(300);
    let mut buf = Vec::new();
    {
        let mut e = Encoder::new(&mut buf);
        e.items((
            Item::map(3),
            Item::u64(0),
            Item::u64(1_767_225_600_000),
            Item::u64(1),
            Item::map(2),
            Item::str("a"),
            Item::i64(-500),
            Item::str("bb"),
            Item::map(1),
            Item::str("c"),
            Item::str(&long),
            Item::u64(2),
            Item::array(2),
        ));
        for i in 0..2u64 {
            e.items((
                Item::map(2),
                Item::str("k"),
                Item::u64(i * 70_000),
                Item::str("v"),
                Item::bool(i == 1),
            ));
        }
    }
    validate(&buf, Mode::Strict, Limits::default()).unwrap();
    let mut d = Decoder::strict(&buf);
    let mut tokens = Vec::new();
    while !d.is_at_end() {
        tokens.push(format!("{:?}", d.next().unwrap()));
    }
    let want: Vec<String> = [
        Token::Map(3),
        Token::Unsigned(0),
        Token::Unsigned(1_767_225_600_000),
        Token::Unsigned(1),
        Token::Map(2),
        Token::Text("a"),
        Token::Negative(499),
        Token::Text("bb"),
        Token::Map(1),
        Token::Text("c"),
        Token::Text(&long),
        Token::Unsigned(2),
        Token::Array(2),
        Token::Map(2),
        Token::Text("k"),
        Token::Unsigned(0),
        Token::Text("v"),
        Token::Bool(false),
        Token::Map(2),
        Token::Text("k"),
        Token::Unsigned(70_000),
        Token::Text("v"),
        Token::Bool(true),
    ]
    .iter()
    .map(|t| format!("{t:?}"))
    .collect();
    assert_eq!(tokens, want);
}

#[test]
fn a_run_of_every_length_up_to_24_writes_what_the_methods_write() {
    // The longest tuples too: 24 items of alternating widths and strings.
    let pool: Vec<Written> = (0..24u64)
        .map(|i| match i % 4 {
            0 => Written::U64(ARGS[i as usize % ARGS.len()]),
            1 => Written::Str("y".repeat(i as usize * 3)),
            2 => Written::I64(-(i as i64) * 1000),
            _ => Written::Null,
        })
        .collect();
    let it: Vec<Item<'_>> = pool.iter().map(Written::item).collect();
    let mut buf = Vec::with_capacity(4096);
    Encoder::new(&mut buf).items((
        it[0], it[1], it[2], it[3], it[4], it[5], it[6], it[7], it[8], it[9], it[10], it[11],
        it[12], it[13], it[14], it[15], it[16], it[17], it[18], it[19], it[20], it[21], it[22],
        it[23],
    ));
    assert_eq!(hex(&buf), hex(&by_methods(&pool)));
    // And in an exact buffer (the item-by-item path for the last bytes).
    let want = by_methods(&pool);
    let mut exact = Vec::with_capacity(want.len());
    let cap = exact.capacity();
    Encoder::new(&mut exact).items((
        it[0], it[1], it[2], it[3], it[4], it[5], it[6], it[7], it[8], it[9], it[10], it[11],
        it[12], it[13], it[14], it[15], it[16], it[17], it[18], it[19], it[20], it[21], it[22],
        it[23],
    ));
    assert_eq!(hex(&exact), hex(&want));
    assert_eq!(exact.capacity(), cap, "an exact buffer grew");
    assert!(guard_intact(&exact));
}
