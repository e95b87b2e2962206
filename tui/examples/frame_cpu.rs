//! Frame CPU time percentiles at 10 and 1,000,000 entries, measured on the
//! thread CPU clock (so time the scheduler gives to other processes does
//! not count), for steady-state frames and keystroke-to-frame, over a
//! transcript filled from a session (session-backed entries, as after a
//! resume) and over local entries.
//!
//! `cargo run --release -p smith-tui --example frame_cpu`

use bumpalo::Bump;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use smith_tui::Buffer;
use smith_tui::bench_support::{filled, filled_from_session};
use smith_tui::diff::{DiffOptions, diff};

const W: u16 = 160;
const H: u16 = 50;
const FRAMES: usize = 2000;

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for a supported clock.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn measure(n: usize, key: bool, session: bool) -> (u64, u64, u64, usize) {
    let mut app = if session {
        filled_from_session(n)
    } else {
        filled(n)
    };
    let mut prev = Buffer::new(W, H);
    let mut next = Buffer::new(W, H);
    let mut bump = Bump::with_capacity(1 << 16);
    let mut out = Vec::with_capacity(1 << 18);
    let keys = [
        Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)),
        Event::Key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)),
    ];
    let mut samples = Vec::with_capacity(FRAMES);
    let mut bytes = 0;
    for i in 0..FRAMES + 20 {
        let start = cpu_ns();
        if key {
            app.handle(&keys[i % 2]);
        }
        bump.reset();
        app.prepare(W, H);
        app.render(&mut next, &bump);
        out.clear();
        diff(Some(&prev), &next, &DiffOptions::default(), &mut out);
        std::mem::swap(&mut prev, &mut next);
        let took = cpu_ns() - start;
        if i >= 20 {
            samples.push(took);
            bytes = bytes.max(out.len());
        }
    }
    samples.sort_unstable();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (p(0.5), p(0.99), p(1.0), bytes)
}

fn main() {
    println!("{W}x{H} screen, {FRAMES} frames each, thread CPU time");
    for session in [true, false] {
        for key in [false, true] {
            for n in [10, 1_000_000] {
                let (p50, p99, max, bytes) = measure(n, key, session);
                println!(
                    "{:<8} {:<20} {n:>9} entries: p50 {:>7.1} µs  p99 {:>7.1} µs  max {:>7.1} µs  largest frame {bytes} bytes",
                    if session { "session" } else { "local" },
                    if key {
                        "keystroke-to-frame"
                    } else {
                        "steady frame"
                    },
                    p50 as f64 / 1000.0,
                    p99 as f64 / 1000.0,
                    max as f64 / 1000.0,
                );
            }
        }
    }
}
