//! Streaming redaction: secrets split across chunk boundaries.

use std::sync::Arc;

use smith_secrets::{Redactor, StreamRedactor};

use crate::{ALL_SECRETS, API_KEY, GITHUB, LONG, QUOTED, SHORT, UNICODE, registry};

fn streamed(redactor: &Arc<Redactor>, text: &[u8], sizes: &[usize]) -> (Vec<u8>, usize) {
    let mut stream = StreamRedactor::new(Arc::clone(redactor));
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    let mut max_held = 0;
    while at < text.len() {
        let n = sizes[i % sizes.len()].min(text.len() - at);
        stream.push(&text[at..at + n], &mut out);
        max_held = max_held.max(stream.held());
        at += n;
        i += 1;
    }
    stream.finish(&mut out);
    assert_eq!(stream.held(), 0);
    (out, max_held)
}

fn sample() -> String {
    format!(
        "start {API_KEY} mid {GITHUB}{SHORT} {LONG} é {UNICODE} json:{} {SHORT}_ext end {LONG}",
        serde_json::to_string(QUOTED).expect("json")
    )
}

#[test]
fn every_split_gives_the_one_shot_result() {
    let redactor = registry().redactor();
    let text = sample();
    let expected = redactor.redact_bytes(text.as_bytes()).into_owned();
    for size in 1..=70 {
        let (out, held) = streamed(&redactor, text.as_bytes(), &[size]);
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&expected),
            "chunks of {size}"
        );
        assert!(
            held < redactor.max_len(),
            "held {held} with chunks of {size}"
        );
    }
    for sizes in [&[1, 7, 3][..], &[13, 2, 40, 1], &[64, 5]] {
        let (out, _) = streamed(&redactor, text.as_bytes(), sizes);
        assert_eq!(out, expected, "chunks {sizes:?}");
    }
}

#[test]
fn a_secret_split_at_every_byte_is_replaced() {
    let redactor = registry().redactor();
    for secret in ALL_SECRETS {
        let text = format!("a{secret}b");
        for cut in 0..=text.len() {
            let mut stream = StreamRedactor::new(Arc::clone(&redactor));
            let mut out = Vec::new();
            stream.push(&text.as_bytes()[..cut], &mut out);
            stream.push(&text.as_bytes()[cut..], &mut out);
            stream.finish(&mut out);
            let out = String::from_utf8(out).expect("utf8");
            assert!(!out.contains(secret), "{out}");
            assert!(out.starts_with("a{secret:") && out.ends_with("}b"), "{out}");
            assert_eq!(stream.replaced(), 1);
        }
    }
}

#[test]
fn the_longer_of_overlapping_secrets_wins_across_chunks() {
    let redactor = registry().redactor();
    let mut stream = StreamRedactor::new(Arc::clone(&redactor));
    let mut out = Vec::new();
    // SHORT arrives complete; only the next chunk shows it begins LONG.
    stream.push(format!("x {SHORT}").as_bytes(), &mut out);
    assert!(!String::from_utf8_lossy(&out).contains("{secret:short}"));
    stream.push(&LONG.as_bytes()[SHORT.len()..], &mut out);
    stream.finish(&mut out);
    assert_eq!(out, b"x {secret:long}");
}

#[test]
fn settled_text_is_emitted_at_once() {
    let redactor = registry().redactor();
    let mut stream = StreamRedactor::new(Arc::clone(&redactor));
    let mut out = Vec::new();
    let chunk = "x".repeat(1000);
    stream.push(chunk.as_bytes(), &mut out);
    assert_eq!(out.len() + stream.held(), 1000);
    assert_eq!(stream.held(), redactor.max_len() - 1);
}
