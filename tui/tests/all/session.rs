//! Session-backed transcripts: entries that refer to a session's records
//! draw, measure, scroll, search and copy exactly like entries holding the
//! same text, and the transcript holds none of the messages' text.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyModifiers};
use smith_codec::Encoder;
use smith_store::{EntryKind as StoreKind, ExternalEntry, NewEntry, Session, SessionId, Store};
use smith_tui::session::SessionEntries;
use smith_tui::transcript::{EntryKind, Match, Pos, ToolState};
use smith_tui::{App, Output};

use crate::{app, conversation, screen};

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

fn user(text: &str) -> Vec<u8> {
    let mut c = Vec::new();
    Encoder::new(&mut c)
        .map(2)
        .str("role")
        .str("user")
        .str("text")
        .str(text);
    c
}

enum Block<'a> {
    Text(&'a str),
    Thinking(&'a str),
    Call(&'a str, &'a str, &'a str, &'a str),
}

fn assistant(blocks: &[Block<'_>]) -> Vec<u8> {
    let mut c = Vec::new();
    let mut e = Encoder::new(&mut c);
    e.map(3)
        .str("role")
        .str("assistant")
        .str("stop")
        .str("end_turn")
        .str("content")
        .array(blocks.len() as u64);
    for b in blocks {
        match b {
            Block::Text(t) => {
                e.map(2).str("text").str(t).str("type").str("text");
            }
            Block::Thinking(t) => {
                e.map(2).str("text").str(t).str("type").str("thinking");
            }
            Block::Call(id, name, key, value) => {
                e.map(4)
                    .str("id")
                    .str(id)
                    .str("name")
                    .str(name)
                    .str("type")
                    .str("tool_call")
                    .str("arguments")
                    .map(1)
                    .str(key)
                    .str(value);
            }
        }
    }
    drop(e);
    c
}

fn result(call: &str, name: &str, content: &str, is_error: bool) -> Vec<u8> {
    let mut c = Vec::new();
    Encoder::new(&mut c)
        .map(5)
        .str("name")
        .str(name)
        .str("role")
        .str("tool_result")
        .str("call_id")
        .str(call)
        .str("content")
        .str(content)
        .str("is_error")
        .bool(is_error);
    c
}

fn session_of(contents: &[(StoreKind, Vec<u8>)]) -> Session {
    let entries: Vec<ExternalEntry<'_>> = contents
        .iter()
        .enumerate()
        .map(|(i, (kind, content))| ExternalEntry {
            id: i as u64 + 1,
            parent: i as u64,
            timestamp_ms: 1_700_000_000_000,
            kind: *kind,
            pairing: 0,
            content,
        })
        .collect();
    Session::from_external(SessionId([7; 16]), 1_700_000_000_000, &entries).unwrap()
}

/// `crate::conversation` as the journal records it, up to (not
/// including) the error, which the interface shows itself.
fn conversation_session() -> Session {
    session_of(&[
        (
            StoreKind::UserMessage,
            user("list the files and read the readme"),
        ),
        (
            StoreKind::AssistantMessage,
            assistant(&[
                Block::Thinking("The user wants a listing.\nI will run ls first."),
                Block::Text("I'll look at the directory first."),
                Block::Call("c1", "bash", "command", "ls -la"),
            ]),
        ),
        // The journal records each call again as its own entry; it shows
        // through the assistant message.
        (StoreKind::ToolCall, user("not shown")),
        (
            StoreKind::ToolResult,
            result(
                "c1",
                "bash",
                "total 3\nREADME.md\nsrc\nCargo.toml\ntarget\ntests\ndocs\nscripts\n",
                false,
            ),
        ),
        (
            StoreKind::AssistantMessage,
            assistant(&[Block::Call("c2", "read", "path", "README.md")]),
        ),
        (
            StoreKind::ToolResult,
            result("c2", "read", "error: permission denied\n", true),
        ),
        (
            StoreKind::AssistantMessage,
            assistant(&[Block::Text(
                "The readme could not be read: \u{1b}[31mpermission denied\u{1b}[0m.",
            )]),
        ),
    ])
}

fn resumed(session: Session) -> App {
    let mut a = app();
    let n = a
        .show_session(Arc::new(SessionEntries::new(session)), 0, None)
        .unwrap();
    assert!(n > 0);
    a
}

fn local_conversation() -> App {
    let mut a = app();
    conversation(&mut a);
    a
}

/// `crate::conversation` as the live interface shows it: the prompt sent
/// from the editor, each message given the entry id the journal recorded
/// it under (those of [`conversation_session`]) once recorded.
fn live_conversation() -> App {
    let session = conversation_session();
    let id = |record: usize| session.records()[record].id;
    let mut a = app();
    let prompt = "list the files and read the readme";
    a.sent_message(prompt);
    a.message_recorded(true, prompt, id(0));
    a.assistant_start();
    a.thinking_delta("The user wants a listing.\nI will run ls first.");
    a.assistant_delta("I'll look at the directory first.");
    a.message_recorded(false, "", id(1));
    a.tool_start("c1", "bash", "ls -la");
    a.tool_end(
        "c1",
        true,
        "total 3\nREADME.md\nsrc\nCargo.toml\ntarget\ntests\ndocs\nscripts\n",
    );
    // A message of calls alone has no text to show its id beside.
    a.assistant_start();
    a.message_recorded(false, "", id(4));
    a.tool_start("c2", "read", "README.md");
    a.tool_end("c2", false, "error: permission denied\n");
    a.assistant_start();
    a.assistant_delta("The readme could not be read: \u{1b}[31mpermission denied\u{1b}[0m.");
    a.message_recorded(false, "", id(6));
    a.error("provider error: rate limited (retry in 2 s)");
    a
}

fn session_conversation() -> App {
    let mut a = resumed(conversation_session());
    a.error("provider error: rate limited (retry in 2 s)");
    a
}

#[test]
fn a_resumed_conversation_draws_exactly_like_the_streamed_one() {
    // Entry ids included: each message shows the id the session recorded
    // it under, resumed or streamed.
    let text = screen(session_conversation(), 80, 40).text();
    let session = conversation_session();
    for record in [0, 1, 6] {
        let id = format!("#{}", session.records()[record].id);
        assert_eq!(text.matches(&id).count(), 1, "{id} once:\n{text}");
    }
    assert!(
        !text.contains(&format!("#{}", session.records()[4].id)),
        "{text}"
    );
    for (w, h) in [(80, 24), (40, 30), (120, 12)] {
        let mut local = screen(live_conversation(), w, h);
        let mut backed = screen(session_conversation(), w, h);
        assert_eq!(backed.text(), local.text(), "at {w}x{h}");
        // Expanded details measure and draw the same too.
        local.key(KeyCode::Char('t'), CTRL);
        backed.key(KeyCode::Char('t'), CTRL);
        assert_eq!(backed.text(), local.text(), "expanded at {w}x{h}");
    }
}

#[test]
fn entries_refer_to_the_session_and_hold_no_message_text() {
    let a = session_conversation();
    let t = &a.transcript;
    let kinds: Vec<(EntryKind, bool)> = (0..t.len())
        .map(|i| (t.record(i).unwrap().kind, t.is_session_backed(i)))
        .collect();
    assert_eq!(
        kinds,
        [
            (EntryKind::User, true),
            (EntryKind::Thinking, true),
            (EntryKind::Assistant, true),
            (EntryKind::Tool, false),
            (EntryKind::ToolOutput, true),
            (EntryKind::Tool, false),
            (EntryKind::ToolOutput, true),
            (EntryKind::Assistant, true),
            (EntryKind::Error, false),
        ]
    );
    assert_eq!(t.record(3).unwrap().tool, ToolState::Ok);
    assert_eq!(t.record(5).unwrap().tool, ToolState::Failed);
    // Only the tool-call lines and the live error are the transcript's own.
    let local: usize = [3, 5, 8].iter().map(|&i| t.text(i).len()).sum();
    assert_eq!(t.local_text_len(), local);
    assert_eq!(t.text(0), "list the files and read the readme");
    assert_eq!(t.text(3), "bash ls -la");
    assert_eq!(t.text(5), "read README.md");
    assert_eq!(t.text(6), "error: permission denied\n");
}

#[test]
fn heights_are_cached_per_width_for_session_entries() {
    let mut local = local_conversation();
    let mut backed = session_conversation();
    for w in [80u16, 20, 7, 80] {
        local.transcript.prepare(w, 200);
        backed.transcript.prepare(w, 200);
        for i in 0..local.transcript.len() {
            let h = backed.transcript.cached_height(i);
            assert!(h > 0, "entry {i} was not measured at width {w}");
            assert_eq!(
                h,
                local.transcript.cached_height(i),
                "entry {i} at width {w}"
            );
        }
    }
}

/// A session of `n` user messages `message i`, each answered.
fn long_session(n: usize) -> Session {
    let mut contents = Vec::new();
    for i in 0..n {
        contents.push((StoreKind::UserMessage, user(&format!("message {i}"))));
        contents.push((
            StoreKind::AssistantMessage,
            assistant(&[Block::Text(&format!("answer {i}"))]),
        ));
    }
    session_of(&contents)
}

#[test]
fn live_output_after_a_resumed_session_never_moves_a_scrolled_view() {
    let mut s = screen(resumed(long_session(50)), 60, 10);
    s.frame();
    assert!(s.app.transcript.is_following());
    assert!(s.app.transcript.top().entry > 90);
    s.key(KeyCode::PageUp, NONE);
    s.frame();
    let top = s.app.transcript.top();
    assert!(!s.app.transcript.is_following());
    // Streamed output appends local entries after the session's.
    s.app.user_message("new prompt");
    s.app.assistant_delta("streamed ");
    s.app.assistant_delta("answer");
    let screen_before = s.text();
    assert_eq!(s.app.transcript.top(), top);
    assert!(screen_before.contains("scrolled"));
    assert!(!s.app.transcript.is_session_backed(101));
    assert_eq!(s.app.transcript.text(101), "streamed answer");
    s.key(KeyCode::Char('g'), CTRL);
    let text = s.text();
    assert!(text.contains("streamed answer"), "{text}");
    assert!(s.app.transcript.is_following());
    assert!(s.app.transcript.top().entry > top.entry);
}

#[test]
fn search_covers_session_and_local_entries_and_copy_reads_the_session() {
    let mut a = resumed(long_session(200));
    a.user_message("message local");
    let t = &a.transcript;
    // Backward from the newest end: the local entry first, then the
    // session's newest, wrapping around to the oldest.
    let m = t.find("message", None, true).unwrap();
    assert_eq!(
        m,
        Match {
            entry: 400,
            offset: 0
        }
    );
    let m = t.find("message", Some(m), true).unwrap();
    assert_eq!(m.entry, 398);
    let m = t.find("MESSAGE 0", None, false).unwrap();
    assert_eq!(
        m,
        Match {
            entry: 0,
            offset: 0
        }
    );
    let m = t.find("answer 17", Some(m), false).unwrap();
    assert_eq!(
        m,
        Match {
            entry: 35,
            offset: 0
        }
    );
    assert_eq!(t.find("absent", None, true), None);
    // The search bar jumps to and reveals a session entry, and copies it.
    let mut s = screen(a, 60, 10);
    s.frame();
    s.key(KeyCode::Char('f'), CTRL);
    s.type_text("answer 3\n");
    let text = s.text();
    assert!(text.contains("answer 39"), "{text}");
    let top = s.app.transcript.top();
    assert!(
        top >= Pos { entry: 76, line: 0 } && top <= Pos { entry: 79, line: 0 },
        "{top:?}"
    );
    assert_eq!(
        s.key(KeyCode::Char('y'), CTRL),
        Some(Output::Copy("answer 39".into())),
        "the newest match (searching backward) is copied"
    );
    s.key(KeyCode::Esc, NONE);
    // Selecting an entry and copying reads it from the session.
    s.key(KeyCode::Up, KeyModifiers::ALT);
    s.key(KeyCode::Up, KeyModifiers::ALT);
    let out = s.key(KeyCode::Char('y'), CTRL);
    let Some(Output::Copy(copied)) = out else {
        panic!("no copy: {out:?}");
    };
    assert!(
        copied.starts_with("answer ") || copied.starts_with("message "),
        "{copied}"
    );
}

#[test]
fn compressed_records_are_decoded_into_the_frame_arena() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut session = store.create(Some("big")).unwrap();
    let long: String = (0..900)
        .map(|i| format!("line {i} of the output\n"))
        .collect();
    let (u, r) = (user("show me"), result("c1", "bash", &long, false));
    let a = assistant(&[Block::Call("c1", "bash", "command", "seq 900")]);
    store
        .append(
            &mut session,
            &[
                NewEntry::new(StoreKind::UserMessage, &u),
                NewEntry::new(StoreKind::AssistantMessage, &a),
                NewEntry::new(StoreKind::ToolResult, &r),
            ],
        )
        .unwrap();
    let session = store.load("big").unwrap();
    assert!(
        session.records()[2].is_compressed(),
        "the fixture must exercise a compressed record"
    );
    let mut s = screen(resumed(session), 60, 20);
    let text = s.text();
    assert!(text.contains("line 0 of the output"), "{text}");
    assert!(text.contains("894 more lines"), "{text}");
    assert_eq!(s.app.transcript.text(2), long);
    s.key(KeyCode::Char('t'), CTRL);
    let text = s.text();
    assert!(text.contains("line 899 of the output"), "{text}");
}

#[test]
fn an_undecodable_record_shows_why_instead_of_text() {
    // A record whose content is not a message map.
    let mut bad = Vec::new();
    Encoder::new(&mut bad).array(1).u64(3);
    let broken = session_of(&[(StoreKind::AssistantMessage, bad)]);
    let err = app()
        .show_session(Arc::new(SessionEntries::new(broken)), 0, None)
        .unwrap_err();
    assert!(err.contains("session entry 1"), "{err}");
    assert!(err.contains("smith session dump"), "{err}");
}
