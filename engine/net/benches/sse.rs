//! Throughput of the SSE parser on recorded provider streams, whole and in
//! small pieces.

use smith_net::sse::SseParser;

fn main() {
    divan::main();
}

const FIXTURES: [&str; 3] = [
    "anthropic_thinking_stream.sse",
    "google_text_stream.sse",
    "openai_chat_7e5ea4d1.bin",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[divan::bench(args = FIXTURES)]
fn whole(bencher: divan::Bencher<'_, '_>, name: &str) {
    let bytes = fixture(name);
    let mut parser = SseParser::new();
    bencher
        .counter(divan::counter::BytesCount::new(bytes.len()))
        .bench_local(|| {
            let mut n = 0usize;
            parser.feed_with(divan::black_box(&bytes), |_| n += 1).ok();
            let _ = parser.finish();
            n
        });
}

#[divan::bench(args = FIXTURES)]
fn pieces_of_64_bytes(bencher: divan::Bencher<'_, '_>, name: &str) {
    let bytes = fixture(name);
    let mut parser = SseParser::new();
    bencher
        .counter(divan::counter::BytesCount::new(bytes.len()))
        .bench_local(|| {
            let mut n = 0usize;
            for piece in divan::black_box(&bytes).chunks(64) {
                parser.feed_with(piece, |_| n += 1).ok();
            }
            let _ = parser.finish();
            n
        });
}
