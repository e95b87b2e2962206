//! Deterministic frame workloads for the benchmarks (`benches/frame.rs`)
//! and the performance gates behind `smith bench`.
//!
//! A [`Screen`] is an [`App`] filled with `n` representative entries (a
//! user message, an assistant answer, a tool call and a notice, repeated)
//! drawn on a [`WIDTH`] × [`HEIGHT`] screen the way the terminal loop draws
//! it: reset the frame's bump arena, [`App::prepare`], [`App::render`],
//! then the changed-cell [`diff`] against the previous frame into a warm
//! output buffer. The first frames size every buffer and cache, so every
//! later steady frame does identical work.

use bumpalo::Bump;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Options};
use crate::buffer::Buffer;
use crate::diff::{DiffOptions, diff};

/// Screen width of the workload, in cells.
pub const WIDTH: u16 = 160;
/// Screen height of the workload, in rows.
pub const HEIGHT: u16 = 50;

/// The entry texts the workload repeats.
const USER: &str = "please look at the failing test in the store crate";
const ASSISTANT: &str =
    "I will run the tests and read the failure output before changing anything.";

/// An app with `n` representative entries (not yet drawn).
pub fn filled(n: usize) -> App {
    let mut a = App::new(crate::fixture::product(), Options::default());
    a.transcript.reserve(n, n * 60);
    for i in 0..n {
        match i % 4 {
            0 => a.user_message(USER),
            1 => a.assistant_delta(ASSISTANT),
            2 => a.tool_start("c", "bash", "cargo test -p smith-store"),
            _ => a.notice("done"),
        }
    }
    a
}

/// An app drawn frame after frame as the terminal loop draws it.
#[derive(Debug)]
pub struct Screen {
    /// The model.
    pub app: App,
    prev: Buffer,
    next: Buffer,
    bump: Bump,
    out: Vec<u8>,
    keys: [Event; 2],
    typed: usize,
}

impl Screen {
    /// A screen over [`filled`]`(n)`, warmed by three frames.
    pub fn new(n: usize) -> Self {
        let mut s = Screen {
            app: filled(n),
            prev: Buffer::new(WIDTH, HEIGHT),
            next: Buffer::new(WIDTH, HEIGHT),
            bump: Bump::with_capacity(1 << 16),
            out: Vec::with_capacity(1 << 18),
            keys: [
                Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)),
                Event::Key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)),
            ],
            typed: 0,
        };
        for _ in 0..3 {
            s.frame();
        }
        // Size the editor's buffer once, outside any measurement.
        s.keystroke_frame();
        s.keystroke_frame();
        s
    }

    /// Draws one frame; returns the bytes it wrote to the terminal.
    #[inline(never)]
    pub fn frame(&mut self) -> usize {
        self.bump.reset();
        self.app.prepare(WIDTH, HEIGHT);
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

    /// Handles one keystroke in the input editor and draws the frame that
    /// shows it; returns the bytes written. Keystrokes alternate between
    /// typing `x` and deleting it, so the input never grows.
    #[inline(never)]
    pub fn keystroke_frame(&mut self) -> usize {
        let key = &self.keys[self.typed % 2];
        self.typed += 1;
        // A keystroke in the editor produces no output for the host.
        let _ = self.app.handle(key);
        self.frame()
    }

    /// The bytes written by the frame after typing one character into an
    /// empty input (the deterministic size of an incremental frame).
    pub fn typed_char_frame_bytes(&mut self) -> usize {
        if self.typed % 2 == 1 {
            self.keystroke_frame();
        }
        let bytes = self.keystroke_frame();
        // Delete it again so the input is empty as before.
        self.keystroke_frame();
        bytes
    }

    /// The last frame's terminal output.
    pub fn last_output(&self) -> &[u8] {
        &self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_character_redraws_only_the_input_line() {
        let mut s = Screen::new(100);
        assert_eq!(s.frame(), 0, "a steady frame writes nothing");
        let bytes = s.typed_char_frame_bytes();
        assert!(bytes > 0);
        assert_eq!(s.frame(), 0);
        // Deterministic: the same keystroke writes the same bytes.
        assert_eq!(s.typed_char_frame_bytes(), bytes);
    }
}
