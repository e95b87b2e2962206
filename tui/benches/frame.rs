//! Frame benchmarks: a steady-state frame and a keystroke-to-frame at 10
//! entries and at a million (the costs must match: work is proportional
//! to what is on screen), and the bytes an incremental frame writes.
//!
//! The workload is [`smith_tui::bench_support::Screen`], the same one the
//! `tui.*` gates of `smith bench` measure.

use std::sync::OnceLock;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use smith_tui::bench_support::Screen;

fn main() {
    divan::main();
}

#[divan::bench(args = [10, 1_000_000], sample_count = 200)]
fn steady_frame(bencher: divan::Bencher<'_, '_>, n: usize) {
    let mut s = Screen::new(n);
    bencher.bench_local(|| s.frame());
}

#[divan::bench(args = [10, 1_000_000], sample_count = 200)]
fn keystroke_to_frame(bencher: divan::Bencher<'_, '_>, n: usize) {
    let mut s = Screen::new(n);
    bencher.bench_local(|| s.keystroke_frame());
}

#[divan::bench(args = [10, 1_000_000], sample_count = 200)]
fn streamed_delta_frame(bencher: divan::Bencher<'_, '_>, n: usize) {
    let mut s = Screen::new(n);
    bencher.bench_local(|| {
        s.app.assistant_delta("word ");
        s.frame()
    });
}

#[divan::bench(sample_count = 200)]
fn incremental_frame_bytes(bencher: divan::Bencher<'_, '_>) {
    // Bytes written for one typed character, reported once.
    static BYTES: OnceLock<usize> = OnceLock::new();
    let mut s = Screen::new(1000);
    let bytes = s.typed_char_frame_bytes();
    BYTES.get_or_init(|| {
        eprintln!("incremental frame after one keystroke: {bytes} bytes");
        bytes
    });
    let key = Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    bencher
        .counter(divan::counter::BytesCount::new(bytes))
        .bench_local(|| {
            let _ = s.app.handle(&key);
            s.frame()
        });
}
