//! Decoding throughput over the recorded streams: the longest recording of
//! each dialect, fed in 512-byte chunks (a typical network read).

#![allow(clippy::unwrap_used)] // a benchmark binary: a failed unwrap is a failed run

use divan::{Bencher, black_box, counter::BytesCount};
use smith_providers::types::Decoder;
use smith_providers::{anthropic, google, openai};

fn main() {
    divan::main();
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn bench(bencher: Bencher<'_, '_>, bytes: &[u8], mut make: impl FnMut() -> Box<dyn Decoder>) {
    bencher
        .counter(BytesCount::new(bytes.len()))
        .bench_local(|| {
            let mut decoder = make();
            let mut events = 0usize;
            for chunk in bytes.chunks(512) {
                events += decoder.decode(black_box(chunk)).len();
            }
            events += decoder.finish().len();
            black_box(events)
        });
}

#[divan::bench]
fn anthropic_thinking(bencher: Bencher<'_, '_>) {
    let bytes = fixture("anthropic/thinking_stream.sse");
    bench(
        bencher,
        &bytes,
        || Box::new(anthropic::StreamDecoder::new()),
    );
}

#[divan::bench]
fn openai_chat_long_text(bencher: Bencher<'_, '_>) {
    let bytes =
        fixture("openai-chat/d615580118391ee13492193e3a8bb74642d23ac1ca13fe37cb6e889b66f759f6.bin");
    bench(bencher, &bytes, || {
        Box::new(openai::ChatStreamDecoder::new())
    });
}

#[divan::bench]
fn openai_responses_reasoning(bencher: Bencher<'_, '_>) {
    let bytes = fixture("openai-responses/reasoning_usage_stream.sse");
    bench(bencher, &bytes, || Box::new(openai::StreamDecoder::new()));
}

#[divan::bench]
fn google_text(bencher: Bencher<'_, '_>) {
    let bytes = fixture("google/text_stream.sse");
    bench(bencher, &bytes, || Box::new(google::StreamDecoder::new()));
}
