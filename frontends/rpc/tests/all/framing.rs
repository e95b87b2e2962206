//! Property: records survive any split of the input into reads, and only
//! LF ends a record, whatever else the strings hold (CR, U+2028, U+2029,
//! escaped newlines).

use proptest::prelude::*;
use serde_json::{Value, json};
use smith_rpc::jsonrpc::{Incoming, Reader, Record, parse};

/// Yields the input in reads of the given sizes (cycled).
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    next: usize,
}

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = self.sizes[self.next % self.sizes.len()].max(1);
        self.next += 1;
        let n = size.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('\u{2028}'),
            Just('\u{2029}'),
            Just('\r'),
            Just('\n'),
            Just('"'),
            Just('\\'),
            any::<char>(),
        ],
        0..40,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #[test]
    fn every_record_comes_back_whole(
        texts in proptest::collection::vec(text(), 1..8),
        sizes in proptest::collection::vec(1usize..20, 1..6),
        capacity in 1usize..32,
    ) {
        let mut input = Vec::new();
        let mut sent = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let message = json!({"jsonrpc": "2.0", "id": i, "method": "prompt", "params": {"text": t}});
            let mut line = serde_json::to_vec(&message).unwrap();
            // Raw U+2028/U+2029 stay unescaped in the record, as smith writes them.
            prop_assert!(!line.contains(&b'\n'));
            line.push(b'\n');
            input.extend_from_slice(&line);
            sent.push(message);
        }
        let chunked = Chunked { data: &input, sizes, next: 0 };
        let mut reader = Reader::new(std::io::BufReader::with_capacity(capacity, chunked));
        let mut got = Vec::new();
        while let Some(record) = reader.next_record().unwrap() {
            let Record::Line(line) = record else { panic!("no record is too long here") };
            match parse(line).unwrap() {
                Incoming::Request { id, method, params } => {
                    got.push(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
                }
                other => panic!("a request was sent, got {other:?}"),
            }
        }
        prop_assert_eq!(got, sent);
    }

    #[test]
    fn garbage_never_stops_the_reader(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..30), 1..8)) {
        let mut input = Vec::new();
        for l in &lines {
            input.extend(l.iter().copied().filter(|&b| b != b'\n'));
            input.push(b'\n');
        }
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"x\"}\n");
        let mut reader = Reader::new(&input[..]);
        let mut last = None;
        while let Some(record) = reader.next_record().unwrap() {
            let Record::Line(line) = record else { panic!("no record is too long here") };
            last = Some(parse(line).map_err(|r| r.id));
        }
        let Some(Ok(Incoming::Request { id, .. })) = last else { panic!("the final request was read: {last:?}") };
        prop_assert_eq!(id, Value::from("last"));
    }
}
