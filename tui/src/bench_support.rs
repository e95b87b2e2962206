//! Deterministic frame workloads for the benchmarks (`benches/frame.rs`)
//! and the performance gates behind `smith bench`.
//!
//! A [`Screen`] is an [`App`] filled with `n` representative entries (a
//! user message, an assistant answer, a tool call and its output,
//! repeated) drawn on a [`WIDTH`] × [`HEIGHT`] screen the way the terminal
//! loop draws it. [`Screen::new`] fills it the way resuming a session
//! does: from an in-memory session of those messages, recorded as the
//! journal records them ([`session`]), so the transcript's entries are
//! session-backed and every drawn entry's text is decoded from the
//! session's arena; [`Screen::local`] fills it with local entries (the
//! text copied into the transcript, as streamed output is). Each frame: reset the frame's bump arena, [`App::prepare`], [`App::render`],
//! then the changed-cell [`diff`] against the previous frame into a warm
//! output buffer. The first frames size every buffer and cache, so every
//! later steady frame does identical work.

use std::sync::Arc;

use bumpalo::Bump;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use smith_store::{EntryKind as StoreKind, ExternalEntry, Session, SessionId};

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

/// The command the workload's tool calls run.
const COMMAND: &str = "cargo test -p smith-store";

/// The canonical CBOR of the workload's messages, as the journal records
/// them (`role`, `text`; `content` blocks; tool results).
fn user_content(out: &mut Vec<u8>) {
    smith_codec::Encoder::new(out)
        .map(2)
        .str("role")
        .str("user")
        .str("text")
        .str(USER);
}

fn assistant_content(out: &mut Vec<u8>, call: Option<&str>) {
    let mut e = smith_codec::Encoder::new(out);
    e.map(3)
        .str("role")
        .str("assistant")
        .str("stop")
        .str(if call.is_some() {
            "tool_use"
        } else {
            "end_turn"
        })
        .str("content")
        .array(1 + u64::from(call.is_some()))
        .map(2)
        .str("text")
        .str(ASSISTANT)
        .str("type")
        .str("text");
    if let Some(id) = call {
        e.map(4)
            .str("id")
            .str(id)
            .str("name")
            .str("bash")
            .str("type")
            .str("tool_call")
            .str("arguments")
            .map(1)
            .str("command")
            .str(COMMAND);
    }
}

fn result_content(out: &mut Vec<u8>, call: &str) {
    smith_codec::Encoder::new(out)
        .map(5)
        .str("name")
        .str("bash")
        .str("role")
        .str("tool_result")
        .str("call_id")
        .str(call)
        .str("content")
        .str("done")
        .str("is_error")
        .bool(false);
}

/// An in-memory session whose messages show as `n` entries of the
/// workload's pattern: per four entries a user message, an assistant
/// message with the answer and a `bash` call, and the call's result
/// (`done`), one linear branch.
pub fn session(n: usize) -> Session {
    let mut contents: Vec<(StoreKind, Vec<u8>)> = Vec::with_capacity(n);
    let mut shown = 0;
    let mut call = 0u64;
    while shown < n {
        let left = n - shown;
        let mut c = Vec::with_capacity(160);
        user_content(&mut c);
        contents.push((StoreKind::UserMessage, c));
        if left == 1 {
            break;
        }
        call += 1;
        let id = format!("call-{call}");
        let mut c = Vec::with_capacity(256);
        assistant_content(&mut c, (left > 2).then_some(id.as_str()));
        contents.push((StoreKind::AssistantMessage, c));
        if left > 3 {
            let mut c = Vec::with_capacity(96);
            result_content(&mut c, &id);
            contents.push((StoreKind::ToolResult, c));
        }
        shown += 4;
    }
    let entries: Vec<ExternalEntry<'_>> = contents
        .iter()
        .enumerate()
        .map(|(i, (kind, content))| ExternalEntry {
            id: i as u64 + 1,
            parent: i as u64,
            timestamp_ms: 1_700_000_000_000 + i as u64,
            kind: *kind,
            pairing: 0,
            content,
        })
        .collect();
    // The entries are well formed by construction (ids from 1, each
    // parent the entry before), so building cannot fail; an empty session
    // would show as an empty transcript.
    Session::from_external(SessionId([0x71; 16]), 1_700_000_000_000, &entries)
        .unwrap_or_else(|_| Session::in_memory(SessionId([0x71; 16]), 1_700_000_000_000))
}

/// An app showing [`session`]`(n)` as session-backed entries (not yet
/// drawn), filled the way resuming a session fills it.
pub fn filled_from_session(n: usize) -> App {
    let mut a = App::new(crate::fixture::product(), Options::default());
    let entries = Arc::new(crate::session::SessionEntries::new(session(n)));
    a.transcript.reserve(n, n / 4 * 32);
    // The workload's records are well formed; a failure would show as
    // fewer entries, which the workload's tests catch.
    let _ = a.show_session(entries, 0, None);
    a
}

/// An app with `n` representative local entries (not yet drawn).
pub fn filled(n: usize) -> App {
    let mut a = App::new(crate::fixture::product(), Options::default());
    a.transcript.reserve(n, n * 60);
    for i in 0..n {
        match i % 4 {
            0 => a.user_message(USER),
            1 => a.assistant_delta(ASSISTANT),
            2 => a.tool_start("c", "bash", COMMAND),
            _ => a.tool_end("c", true, "done"),
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
    /// A screen over [`filled_from_session`]`(n)` (session-backed
    /// entries), warmed by three frames.
    pub fn new(n: usize) -> Self {
        Self::over(filled_from_session(n))
    }

    /// A screen over [`filled`]`(n)` (local entries), warmed by three
    /// frames.
    pub fn local(n: usize) -> Self {
        Self::over(filled(n))
    }

    /// A screen over `app`, warmed by three frames.
    pub fn over(app: App) -> Self {
        let mut s = Screen {
            app,
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
