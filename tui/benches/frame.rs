//! Frame benchmarks: a steady-state frame and a keystroke-to-frame at 10
//! entries and at a million (the costs must match: work is proportional
//! to what is on screen), and the bytes an incremental frame writes.

use std::sync::OnceLock;

use bumpalo::Bump;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use smith_tui::diff::{DiffOptions, diff};
use smith_tui::{App, Buffer, Options, Product};

fn main() {
    divan::main();
}

const W: u16 = 160;
const H: u16 = 50;

fn filled(n: usize) -> App {
    let mut a = App::new(Product::builtin(), Options::default());
    a.transcript.reserve(n, n * 60);
    for i in 0..n {
        match i % 4 {
            0 => a.user_message("please look at the failing test in the store crate"),
            1 => a.assistant_delta(
                "I will run the tests and read the failure output before changing anything.",
            ),
            2 => a.tool_start("c", "bash", "cargo test -p smith-store"),
            _ => a.notice("done"),
        }
    }
    a
}

struct Screen {
    app: App,
    prev: Buffer,
    next: Buffer,
    bump: Bump,
    out: Vec<u8>,
}

impl Screen {
    fn new(n: usize) -> Self {
        let mut s = Screen {
            app: filled(n),
            prev: Buffer::new(W, H),
            next: Buffer::new(W, H),
            bump: Bump::with_capacity(1 << 16),
            out: Vec::with_capacity(1 << 18),
        };
        for _ in 0..3 {
            s.frame();
        }
        s
    }

    fn frame(&mut self) -> usize {
        self.bump.reset();
        self.app.prepare(W, H);
        self.app.render(&mut self.next, &self.bump);
        self.out.clear();
        diff(
            Some(&self.prev),
            &self.next,
            &DiffOptions::default(),
            &mut self.out,
        );
        std::mem::swap(&mut self.prev, &mut self.next);
        self.out.len()
    }
}

#[divan::bench(args = [10, 1_000_000], sample_count = 200)]
fn steady_frame(bencher: divan::Bencher<'_, '_>, n: usize) {
    let mut s = Screen::new(n);
    bencher.bench_local(|| s.frame());
}

#[divan::bench(args = [10, 1_000_000], sample_count = 200)]
fn keystroke_to_frame(bencher: divan::Bencher<'_, '_>, n: usize) {
    let mut s = Screen::new(n);
    let keys = [
        Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)),
        Event::Key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)),
    ];
    let mut k = 0;
    bencher.bench_local(|| {
        s.app.handle(&keys[k % 2]);
        k += 1;
        s.frame()
    });
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
    let key = Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    s.app.handle(&key);
    let bytes = s.frame();
    BYTES.get_or_init(|| {
        eprintln!("incremental frame after one keystroke: {bytes} bytes");
        bytes
    });
    bencher
        .counter(divan::counter::BytesCount::new(bytes))
        .bench_local(|| {
            s.app.handle(&key);
            s.frame()
        });
}
