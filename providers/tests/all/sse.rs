//! The SSE parser against recorded provider streams: whole, split at every
//! byte offset, byte by byte, with every line ending, and cut short; and
//! against arbitrary streams built from every rule's pieces.

use proptest::prelude::*;
use smith_providers::sse::{SseEvent, SseParser};

use crate::support::root;

/// The recordings split at every offset (one per vendor dialect).
const RECORDINGS: [&str; 5] = [
    "anthropic/basic_response.txt",
    "anthropic/thinking_stream.sse",
    "google/text_stream.sse",
    "openai-chat/7e5ea4d12e7cc064399b6631415e65923f182256b6e6b752950a3aaa2ad2320a.bin",
    "openai-responses/function_call_stream.sse",
];

fn recording(name: &str) -> Vec<u8> {
    let path = root().join("fixtures").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The events the pieces complete, and what `finish` hands back.
fn parse_pieces<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<SseEvent>, Option<SseEvent>) {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for piece in pieces {
        out.extend(parser.feed(piece));
    }
    (out, parser.finish())
}

/// `bytes` cut at `cuts` (taken modulo its length plus one) into pieces.
fn split(bytes: &[u8], cuts: Vec<usize>) -> Vec<&[u8]> {
    let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
}

#[test]
fn recorded_streams_parse_into_their_events() {
    // This recording ends right after its last `data:` line, with no line
    // ending and no blank line: its final `message_stop` event is not
    // dispatched, and `finish` hands it back unterminated.
    let (events, rest) = parse_pieces([&recording("anthropic/basic_response.txt")[..]]);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta"
        ]
    );
    assert!(events[0].data.starts_with("{\"type\":\"message_start\""));
    let rest = rest.unwrap();
    assert_eq!(
        (rest.event.as_str(), rest.data.as_str()),
        ("message_stop", r#"{"type":"message_stop"}"#)
    );
    // With the stream's final blank line, it is dispatched.
    let mut whole = recording("anthropic/basic_response.txt");
    whole.extend_from_slice(b"\n\n");
    let (events, rest) = parse_pieces([&whole[..]]);
    assert_eq!(rest, None);
    assert_eq!(
        events.last().map(|e| (e.event.as_str(), e.data.as_str())),
        Some(("message_stop", r#"{"type":"message_stop"}"#))
    );

    // Events without an `event` field carry an empty type (`message`).
    let (events, rest) = parse_pieces([&recording("google/text_stream.sse")[..]]);
    assert_eq!(rest, None);
    assert!(!events.is_empty());
    assert!(
        events
            .iter()
            .all(|e| e.event.is_empty() && e.data.starts_with("{\"candidates\""))
    );
    assert!(
        events.iter().all(|e| !e.data.contains('\r')),
        "CRLF endings must not leak into data"
    );

    let (events, rest) = parse_pieces([&recording(RECORDINGS[3])[..]]);
    assert_eq!(rest, None);
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    assert!(
        events[..events.len() - 1]
            .iter()
            .all(|e| e.data.contains("chat.completion.chunk"))
    );

    let (events, rest) =
        parse_pieces([&recording("openai-responses/function_call_stream.sse")[..]]);
    assert_eq!(rest, None);
    assert!(
        events
            .iter()
            .any(|e| e.event == "response.function_call_arguments.delta")
    );
    for event in &events {
        assert!(
            event
                .data
                .contains(&format!("\"type\":\"{}\"", event.event)),
            "{event:?}"
        );
    }
}

#[test]
fn every_two_piece_split_of_every_recording_gives_the_same_events() {
    for name in RECORDINGS {
        let bytes = recording(name);
        let whole = parse_pieces([&bytes[..]]);
        assert!(!whole.0.is_empty(), "{name}");
        for cut in 0..=bytes.len() {
            let split = parse_pieces([&bytes[..cut], &bytes[cut..]]);
            assert_eq!(split, whole, "{name} cut at {cut}");
        }
        assert_eq!(parse_pieces(bytes.chunks(1)), whole, "{name} byte by byte");
    }
}

#[test]
fn every_line_ending_variant_of_the_recordings_gives_the_same_events() {
    for name in RECORDINGS {
        let bytes = recording(name);
        let whole = parse_pieces([&bytes[..]]);
        let lf = String::from_utf8(bytes).unwrap().replace("\r\n", "\n");
        for ending in ["\n", "\r", "\r\n"] {
            let text = lf.replace('\n', ending);
            let variant = text.as_bytes();
            assert_eq!(parse_pieces([variant]), whole, "{name} with {ending:?}");
            assert_eq!(
                parse_pieces(variant.chunks(7)),
                whole,
                "{name} with {ending:?} in 7-byte pieces"
            );
        }
    }
}

#[test]
fn a_recording_cut_short_hands_back_a_prefix_of_its_events() {
    let bytes = recording("anthropic/basic_response.txt");
    let (mut all, rest) = parse_pieces([&bytes[..]]);
    all.extend(rest);
    for cut in 0..bytes.len() {
        let (events, rest) = parse_pieces([&bytes[..cut]]);
        assert!(events.len() < all.len(), "cut at {cut}");
        assert_eq!(events[..], all[..events.len()], "cut at {cut}");
        // A cut exactly after a blank line leaves nothing behind; otherwise
        // the event being assembled comes back with the data read so far.
        if cut == 0 || bytes[..cut].ends_with(b"\n\n") {
            assert_eq!(rest, None, "cut at {cut}");
        }
        if let Some(rest) = rest {
            let next = &all[events.len()];
            assert_eq!(rest.event, next.event, "cut at {cut}");
            assert!(next.data.starts_with(&rest.data), "cut at {cut}: {rest:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn arbitrary_splits_of_the_recordings_give_the_same_events(
        file in 0..RECORDINGS.len(),
        cuts in proptest::collection::vec(0usize..20_000, 0..40),
    ) {
        let bytes = recording(RECORDINGS[file]);
        let whole = parse_pieces([&bytes[..]]);
        prop_assert_eq!(parse_pieces(split(&bytes, cuts)), whole);
    }
}

/// Pieces that exercise every rule: fields, comments, byte order marks,
/// NULs in ids, invalid UTF-8, every line ending, and text without endings.
fn token() -> impl Strategy<Value = &'static [u8]> {
    prop::sample::select(vec![
        &b"data"[..],
        b"data:",
        b"data: ",
        b"event:",
        b"event: x",
        b"id:",
        b"id: 7",
        b"id: a\0b",
        b"retry: 10",
        b"retry: x",
        b":",
        b": c",
        b" ",
        b"x",
        b"\xEF\xBB\xBF",
        b"\xC3\xA9",
        b"\xFF",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"\r\r",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn any_stream_split_anywhere_gives_the_same_events_and_tail(
        tokens in proptest::collection::vec(token(), 0..60),
        cuts in proptest::collection::vec(0usize..1000, 0..10),
    ) {
        let bytes: Vec<u8> = tokens.concat();
        let whole = parse_pieces([&bytes[..]]);
        prop_assert_eq!(parse_pieces(split(&bytes, cuts)), whole.clone());
        for event in whole.0.iter().chain(&whole.1) {
            prop_assert!(!event.id.contains('\0'));
            prop_assert!(!event.event.contains(['\r', '\n']) && !event.data.contains('\r'));
        }
    }
}
