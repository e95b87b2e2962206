//! Exact allocation counts: a steady-state frame (prepare, render, diff)
//! allocates nothing, at 10 entries and at a million.

use bumpalo::Bump;
use smith_tui::diff::{DiffOptions, diff};
use smith_tui::{App, Buffer};

use crate::app;

fn filled(n: usize) -> App {
    let mut a = app();
    a.transcript.reserve(n, n * 48);
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

fn steady_frames(a: &mut App) {
    let (w, h) = (100u16, 40u16);
    let mut bump = Bump::with_capacity(64 * 1024);
    let mut prev = Buffer::new(w, h);
    let mut next = Buffer::new(w, h);
    let mut out = Vec::with_capacity(256 * 1024);
    let opts = DiffOptions::default();
    // Warm up: the first frames size the caches and buffers.
    for _ in 0..3 {
        bump.reset();
        a.prepare(w, h);
        a.render(&mut next, &bump);
        out.clear();
        diff(Some(&prev), &next, &opts, &mut out);
        std::mem::swap(&mut prev, &mut next);
    }
    let ((), stats) = smith_alloc::count(|| {
        for _ in 0..10 {
            bump.reset();
            a.prepare(w, h);
            a.render(&mut next, &bump);
            out.clear();
            diff(Some(&prev), &next, &opts, &mut out);
            std::mem::swap(&mut prev, &mut next);
        }
    });
    assert!(smith_alloc::is_global_allocator());
    assert_eq!(stats.allocations, 0);
}

#[test]
fn a_steady_state_frame_allocates_nothing_at_10_entries() {
    steady_frames(&mut filled(10));
}

#[test]
fn a_steady_state_frame_allocates_nothing_at_a_million_entries() {
    steady_frames(&mut filled(1_000_000));
}

#[test]
fn a_steady_state_frame_over_a_resumed_session_allocates_nothing_at_10_entries() {
    let mut a = smith_tui::bench_support::filled_from_session(10);
    assert!(a.transcript.is_session_backed(0));
    steady_frames(&mut a);
}

#[test]
fn a_steady_state_frame_over_a_resumed_session_allocates_nothing_at_a_million_entries() {
    let mut a = smith_tui::bench_support::filled_from_session(1_000_000);
    assert_eq!(a.transcript.len(), 1_000_000);
    assert!(a.transcript.is_session_backed(999_999));
    steady_frames(&mut a);
    // The frames counted draw the messages' entry ids.
    let text = crate::screen(a, 100, 40).text();
    let ids = text
        .lines()
        .filter(|row| {
            row.trim_end()
                .rsplit(' ')
                .next()
                .and_then(|w| w.strip_prefix('#'))
                .is_some_and(|id| id.parse::<u64>().is_ok())
        })
        .count();
    assert!(ids >= 2, "no entry ids drawn:\n{text}");
}

#[test]
fn a_scrolled_frame_over_a_resumed_session_allocates_nothing() {
    let mut a = smith_tui::bench_support::filled_from_session(1000);
    a.prepare(100, 40);
    a.transcript.scroll_up(500);
    steady_frames(&mut a);
}

#[test]
fn a_scrolled_frame_allocates_nothing() {
    let mut a = filled(1000);
    a.prepare(100, 40);
    a.transcript.scroll_up(500);
    steady_frames(&mut a);
}

/// Bytes the frame after one typed character writes on the 160 × 50
/// benchmark screen (`smith_tui::bench_support`): exact and deterministic.
/// Kept equal to `KEYSTROKE_FRAME_BYTES` in smith-perf's `tui_gates.rs`.
pub const TYPED_CHAR_FRAME_BYTES: usize = 23;

#[test]
fn a_typed_character_writes_the_same_bytes_at_10_and_a_million_entries() {
    use smith_tui::bench_support::Screen;
    let mut small = Screen::new(10);
    assert_eq!(small.typed_char_frame_bytes(), TYPED_CHAR_FRAME_BYTES);
    let mut large = Screen::new(1_000_000);
    assert_eq!(large.typed_char_frame_bytes(), TYPED_CHAR_FRAME_BYTES);
}

#[test]
fn a_keystroke_frame_allocates_nothing_at_a_million_entries() {
    use smith_tui::bench_support::Screen;
    let mut s = Screen::new(1_000_000);
    let (bytes, stats) =
        smith_alloc::count(|| (0..100).map(|_| s.keystroke_frame()).sum::<usize>());
    assert!(bytes > 0);
    assert_eq!(stats.allocations, 0);
}

#[test]
fn a_steady_state_frame_of_rendered_markdown_and_diffs_allocates_nothing() {
    let mut a = app();
    for k in 0..30 {
        a.user_message("change it");
        a.assistant_delta(&format!(
            "## Step {k}\n\nI will **edit** `src/lib.rs`, see [docs](https://example.org).\n\n```rust\nfn main() {{ let x = {k}; }}\n```"
        ));
        a.tool_start(&format!("c{k}"), "edit", "src/lib.rs");
        a.tool_end(
            &format!("c{k}"),
            true,
            "Edited src/lib.rs: replaced 1 occurrence (line 2).\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n one\n-old\n+new\n three",
        );
    }
    steady_frames(&mut a);
}
