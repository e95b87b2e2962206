//! The SSE reader against recorded provider streams.

use std::time::Duration;

use proptest::prelude::*;
use smith_net::sse::{SseBody, SseEnd, SseEvent, SseItem, SseLimits, SseParser};
use smith_net::{CancelToken, Limits, Outcome, Request};

use crate::server::{BOTH, Server, client};

pub const FIXTURES: [&str; 5] = [
    "anthropic_basic_response.txt",
    "anthropic_thinking_stream.sse",
    "google_text_stream.sse",
    "openai_chat_7e5ea4d1.bin",
    "openai_responses_function_call_stream.sse",
];

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn parse_pieces<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> (Vec<SseEvent>, SseEnd) {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for piece in pieces {
        p.feed(piece, &mut out).unwrap();
    }
    (out, p.finish())
}

#[test]
fn recorded_streams_parse_into_their_events() {
    // This recording ends right after its last `data:` line, with no line
    // ending and no blank line, so by the specification its final
    // `message_stop` event is incomplete: not dispatched, and reported.
    let (e, end) = parse_pieces([&fixture("anthropic_basic_response.txt")[..]]);
    assert_eq!(
        end,
        SseEnd::Incomplete {
            partial_line_bytes: r#"data: {"type":"message_stop"}"#.len(),
            pending_fields: true
        }
    );
    let names: Vec<&str> = e.iter().map(|e| e.event.as_str()).collect();
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
    // With the stream's final blank line, it is dispatched.
    let mut whole = fixture("anthropic_basic_response.txt");
    whole.extend_from_slice(b"\n\n");
    let (e, end) = parse_pieces([&whole[..]]);
    assert_eq!(end, SseEnd::Clean);
    assert_eq!(
        e.last().map(|e| (e.event.as_str(), e.data.as_str())),
        Some(("message_stop", r#"{"type":"message_stop"}"#))
    );
    assert!(e[0].data.starts_with("{\"type\":\"message_start\""));

    let (e, end) = parse_pieces([&fixture("google_text_stream.sse")[..]]);
    assert_eq!(end, SseEnd::Clean);
    assert!(!e.is_empty());
    assert!(
        e.iter()
            .all(|e| e.event == "message" && e.data.starts_with("{\"candidates\""))
    );
    assert!(
        e.iter().all(|e| !e.data.contains('\r')),
        "CRLF endings must not leak into data"
    );

    let (e, end) = parse_pieces([&fixture("openai_chat_7e5ea4d1.bin")[..]]);
    assert_eq!(end, SseEnd::Clean);
    assert_eq!(e.last().map(|e| e.data.as_str()), Some("[DONE]"));
    assert!(
        e[..e.len() - 1]
            .iter()
            .all(|e| e.data.contains("chat.completion.chunk"))
    );

    let (e, end) = parse_pieces([&fixture("openai_responses_function_call_stream.sse")[..]]);
    assert_eq!(end, SseEnd::Clean);
    assert!(
        e.iter()
            .any(|e| e.event == "response.function_call_arguments.delta")
    );
    for ev in &e {
        assert!(
            ev.data.contains(&format!("\"type\":\"{}\"", ev.event)),
            "{ev:?}"
        );
    }
}

#[test]
fn every_two_piece_split_of_every_recording_gives_the_same_events() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let whole = parse_pieces([&bytes[..]]);
        assert!(!whole.0.is_empty(), "{name}");
        for cut in 0..=bytes.len() {
            let split = parse_pieces([&bytes[..cut], &bytes[cut..]]);
            assert_eq!(split, whole, "{name} cut at {cut}");
        }
        // And one byte at a time.
        assert_eq!(parse_pieces(bytes.chunks(1)), whole, "{name} byte by byte");
    }
}

#[test]
fn every_line_ending_variant_of_the_recordings_gives_the_same_events() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let whole = parse_pieces([&bytes[..]]);
        let lf: Vec<u8> = String::from_utf8(bytes.clone())
            .unwrap()
            .replace("\r\n", "\n")
            .into_bytes();
        for ending in ["\n", "\r", "\r\n"] {
            let text = String::from_utf8(lf.clone()).unwrap().replace('\n', ending);
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
fn a_recording_cut_short_reports_an_incomplete_event() {
    let bytes = fixture("anthropic_basic_response.txt");
    let (all, _) = parse_pieces([&bytes[..]]);
    for cut in 0..bytes.len() {
        let (events, end) = parse_pieces([&bytes[..cut]]);
        assert!(events.len() <= all.len());
        assert_eq!(events[..], all[..events.len()], "cut at {cut}");
        // A cut exactly after a blank line is clean; otherwise incomplete.
        let clean = cut == 0 || bytes[..cut].ends_with(b"\n\n");
        assert_eq!(end == SseEnd::Clean, clean, "cut at {cut}: {end:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn arbitrary_splits_give_the_same_events(
        file in 0..FIXTURES.len(),
        cuts in proptest::collection::vec(0usize..20_000, 0..40),
    ) {
        let bytes = fixture(FIXTURES[file]);
        let whole = parse_pieces([&bytes[..]]);
        let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        points.push(0);
        points.push(bytes.len());
        points.sort_unstable();
        let pieces: Vec<&[u8]> = points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect();
        prop_assert_eq!(parse_pieces(pieces), whole);
    }
}

#[test]
fn sse_over_http_reports_the_body_and_stream_outcomes() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                c.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
                let stream: &[u8] = if req.target == "/cut" {
                    b"data: one\n\ndata: tw"
                } else {
                    b"event: a\ndata: one\n\ndata: two\n\n"
                };
                for piece in stream.chunks(3) {
                    c.send(format!("{:x}\r\n", piece.len()).as_bytes());
                    c.send(piece);
                    c.send(b"\r\n");
                    std::thread::sleep(Duration::from_millis(1));
                }
                c.send(b"0\r\n\r\n");
            }
        });
        let cl = client(Limits::default());
        let body = cl
            .send(
                Request::get(&server.url("/full")).unwrap(),
                CancelToken::new(),
            )
            .unwrap()
            .into_parts()
            .2;
        let mut sse = SseBody::new(body, SseLimits::default());
        let mut events = Vec::new();
        let end = loop {
            match sse.next_item() {
                SseItem::Event(e) => events.push((e.event, e.data)),
                SseItem::End(end) => break end,
            }
        };
        assert_eq!(
            events,
            [
                ("a".to_string(), "one".to_string()),
                ("message".to_string(), "two".to_string())
            ]
        );
        assert!(end.is_complete(), "{mode:?}: {end:?}");

        let body = cl
            .send(
                Request::get(&server.url("/cut")).unwrap(),
                CancelToken::new(),
            )
            .unwrap()
            .into_parts()
            .2;
        let mut sse = SseBody::new(body, SseLimits::default());
        assert!(matches!(sse.next_item(), SseItem::Event(e) if e.data == "one"));
        let SseItem::End(end) = sse.next_item() else {
            panic!("expected the end")
        };
        assert_eq!(end.body, Some(Outcome::Complete { bytes: 19 }));
        assert_eq!(
            end.stream,
            Ok(SseEnd::Incomplete {
                partial_line_bytes: "data: tw".len(),
                pending_fields: false
            })
        );
        assert!(!end.is_complete());
    }
}

#[test]
fn an_overlong_line_over_http_stops_the_stream_with_the_limit() {
    let server = Server::start(crate::server::Mode::Plain, |c| {
        if c.read_request().is_some() {
            c.respond(200, &[b"data: ".as_slice(), &[b'x'; 100], b"\n\n"].concat());
        }
    });
    let body = client(Limits::default())
        .send(Request::get(&server.url("/")).unwrap(), CancelToken::new())
        .unwrap()
        .into_parts()
        .2;
    let mut sse = SseBody::new(
        body,
        SseLimits {
            max_line_bytes: 50,
            max_event_bytes: 1000,
        },
    );
    let SseItem::End(end) = sse.next_item() else {
        panic!("expected the end")
    };
    assert_eq!(end.body, None);
    assert_eq!(end.stream.unwrap_err().limit(), 50);
}

/// Pieces that exercise every rule: fields, comments, BOMs, NULs, every
/// line ending, and text without endings.
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
    fn any_stream_split_anywhere_gives_the_same_events_and_end(
        tokens in proptest::collection::vec(token(), 0..60),
        cuts in proptest::collection::vec(0usize..1000, 0..10),
    ) {
        let bytes: Vec<u8> = tokens.concat();
        let mut p = SseParser::new();
        let mut whole = Vec::new();
        p.feed(&bytes, &mut whole).unwrap();
        let whole_end = p.finish();
        let retry = p.retry_ms();
        let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        points.push(0);
        points.push(bytes.len());
        points.sort_unstable();
        let mut p = SseParser::new();
        let mut split = Vec::new();
        for w in points.windows(2) {
            p.feed(&bytes[w[0]..w[1]], &mut split).unwrap();
        }
        prop_assert_eq!(&split, &whole);
        prop_assert_eq!(p.finish(), whole_end);
        prop_assert_eq!(p.retry_ms(), retry);
        for e in &whole {
            prop_assert!(!e.last_event_id.contains('\0'));
            prop_assert!(!e.event.contains(['\r', '\n']) && !e.data.contains('\r'));
        }
    }
}
