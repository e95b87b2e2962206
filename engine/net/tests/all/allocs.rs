//! Exact allocation counts for the SSE parser's hot path.

use smith_net::sse::{SseEnd, SseParser};

use crate::sse::{FIXTURES, fixture};

#[test]
fn feed_with_allocates_nothing_once_its_buffers_are_warm() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let mut parser = SseParser::new();
        let mut warm = 0usize;
        parser.feed_with(&bytes, |_| warm += 1).unwrap();
        let _ = parser.finish();
        let mut events = 0usize;
        let mut data_bytes = 0usize;
        let ((), stats) = smith_alloc::count(|| {
            parser
                .feed_with(&bytes, |e| {
                    events += 1;
                    data_bytes += e.data.len();
                })
                .unwrap();
        });
        assert_eq!(stats.allocations, 0, "{name}");
        assert_eq!(events, warm);
        assert!(data_bytes > 0);
        // Byte by byte, every line goes through the parser's line buffer,
        // which a whole feed never touches: warm it once, then count.
        let _ = parser.finish();
        for b in bytes.chunks(1) {
            parser.feed_with(b, |_| {}).unwrap();
        }
        let _ = parser.finish();
        let ((), stats) = smith_alloc::count(|| {
            for b in bytes.chunks(1) {
                parser.feed_with(b, |_| {}).unwrap();
            }
        });
        assert_eq!(stats.allocations, 0, "{name} byte by byte");
    }
}

#[test]
fn feed_allocates_exactly_the_owned_event_strings() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let mut parser = SseParser::new();
        let mut first = Vec::new();
        parser.feed(&bytes, &mut first).unwrap();
        let _ = parser.finish();
        // These recordings carry no ids and every event has data, so each
        // owned event is two strings: its type and its data.
        assert!(
            first
                .iter()
                .all(|e| e.last_event_id.is_empty() && !e.data.is_empty())
        );
        let mut out = Vec::with_capacity(first.len());
        let (end, stats) = smith_alloc::count(|| {
            parser.feed(&bytes, &mut out).unwrap();
            parser.finish()
        });
        assert_eq!(out, first);
        assert_eq!(stats.allocations, 2 * first.len() as u64, "{name}");
        assert!(matches!(end, SseEnd::Clean | SseEnd::Incomplete { .. }));
    }
}
