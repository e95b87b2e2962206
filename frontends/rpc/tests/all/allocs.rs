//! Exact allocation counts for the record reader's hot path: it hands out
//! borrowed views into one reused buffer.

use smith_rpc::jsonrpc::{Reader, Record};

#[test]
fn reading_records_allocates_nothing_once_the_buffer_fits_the_longest() {
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"prompt\",\"params\":{{\"text\":\"{}\"}}}}\n",
        "x".repeat(300)
    );
    let mut input = long.clone().into_bytes();
    for i in 1..200 {
        input.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"state\"}}\n").as_bytes(),
        );
        if i % 7 == 0 {
            input.extend_from_slice("\n \r\n{\"a\":\"\u{2028}\"}\n".as_bytes());
        }
    }
    let mut reader = Reader::new(std::io::BufReader::with_capacity(64, &input[..]));
    // The first record is the longest: reading it sizes the buffer.
    let Some(Record::Line(first)) = reader.next_record().unwrap() else {
        panic!("a first record")
    };
    assert_eq!(first.len(), long.len() - 1);
    let (counted, stats) = smith_alloc::count(|| {
        let mut n = 0usize;
        let mut bytes = 0usize;
        while let Some(Record::Line(line)) = reader.next_record().unwrap() {
            n += 1;
            bytes += line.len();
        }
        (n, bytes)
    });
    assert_eq!(counted.0, 199 + 28, "every record, blank ones skipped");
    assert!(counted.1 > 0);
    assert_eq!(stats.allocations, 0);
}
