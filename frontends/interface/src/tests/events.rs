use super::*;

#[test]
fn a_resumed_history_is_shown_as_it_was_recorded() {
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let history = vec![
        Message::User {
            text: "read it".into(),
            media: Vec::new(),
        },
        Message::Assistant {
            content: vec![
                ContentBlock::Thinking {
                    text: "plan".into(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: "Reading.".into(),
                },
                ContentBlock::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "a.txt"}),
                }),
            ],
            stop: StopReason::ToolUse,
        },
        Message::ToolResult {
            call_id: "c1".into(),
            name: "read".into(),
            content: "hello".into(),
            is_error: false,
            media: Vec::new(),
        },
    ];
    // Recorded by the journal exactly as a run records it, then loaded
    // from the file and resumed.
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let session = store.create(Some("resumed")).unwrap();
    let journal = StoreJournal::new(store, session);
    for message in history {
        use smith_engine::journal::SessionSink;
        journal
            .record(&smith_engine::journal::SessionEvent::Message {
                message,
                meta: smith_engine::journal::MessageMeta::default(),
            })
            .unwrap();
    }
    drop(journal);
    let resumed = smith_host::session::open(
        tmp.path(),
        &smith_host::SessionChoice::Open("resumed".into()),
    )
    .unwrap();
    let session = resumed.journal.with_session(smith_store::Session::clone);
    show_history(&mut app, &session, resumed.compaction_summary.as_deref());
    let t = &app.transcript;
    let entries: Vec<(EntryKind, String, bool)> = (0..t.len())
        .map(|i| {
            (
                t.record(i).unwrap().kind,
                t.text(i).into_owned(),
                t.is_session_backed(i),
            )
        })
        .collect();
    let expected = [
        (EntryKind::User, "read it", true),
        (EntryKind::Thinking, "plan", true),
        (EntryKind::Assistant, "Reading.", true),
        (EntryKind::Tool, "read a.txt", false),
        (EntryKind::ToolOutput, "hello", true),
    ];
    assert_eq!(
        entries,
        expected.map(|(k, t, b)| (k, t.to_owned(), b)).to_vec()
    );
    assert_eq!(t.record(3).unwrap().tool, ToolState::Ok);
    // Only the tool call's line was copied into the transcript.
    assert_eq!(t.local_text_len(), "read a.txt".len());
}

#[test]
fn agent_events_become_transcript_entries_and_status() {
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let mut summaries = crate::events::Calls::default();
    let events = [
        Event::AgentStart,
        Event::MessageDelta {
            text: "Looking ".into(),
        },
        Event::MessageDelta {
            text: "around.".into(),
        },
        Event::ToolCall {
            call: ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
            },
        },
        Event::ToolExecutionStart {
            call_id: "c1".into(),
            name: "bash".into(),
            effect_id: "fx-1".into(),
        },
        Event::ToolExecutionEnd {
            call_id: "c1".into(),
            name: "bash".into(),
            status: ToolStatus::Error,
            content: "boom".into(),
            details: serde_json::json!({}),
            mutation: None,
            effect_id: None,
        },
        Event::Error(ErrorInfo {
            kind: "rate_limit".into(),
            message: "slow down".into(),
            mutation: None,
            effect_id: None,
            retry_after_ms: None,
        }),
    ];
    for event in events {
        apply(&mut app, event, &mut summaries, Some(1000));
    }
    assert!(app.status.busy);
    let t = &app.transcript;
    let kinds: Vec<EntryKind> = (0..t.len()).map(|i| t.record(i).unwrap().kind).collect();
    assert_eq!(
        kinds,
        [
            EntryKind::Assistant,
            EntryKind::Tool,
            EntryKind::ToolOutput,
            EntryKind::Error
        ]
    );
    assert_eq!(t.text(0), "Looking around.");
    assert_eq!(t.text(1), "bash ls");
    assert_eq!(t.record(1).unwrap().tool, ToolState::Failed);
    assert_eq!(t.text(3), "rate_limit: slow down");
    apply(
        &mut app,
        Event::AgentEnd {
            stop: StopCause::Aborted,
            usage: Usage::default(),
            cost: Some(0.5),
            text: String::new(),
        },
        &mut summaries,
        Some(1000),
    );
    assert!(!app.status.busy);
    assert_eq!(app.status.cost, Some(0.5));
    assert_eq!(app.transcript.text(4), "interrupted");
}

/// A provider retry starts the status line's countdown at the wait the
/// provider asked for; the retried exchange's first event ends it.
#[test]
fn a_provider_retry_counts_down_until_the_next_event() {
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let mut summaries = crate::events::Calls::default();
    let asked = std::time::Instant::now();
    apply(
        &mut app,
        Event::ProviderRetry {
            wait_ms: 30_000,
            error: ErrorInfo {
                kind: "rate_limit".into(),
                message: "slow down".into(),
                mutation: None,
                effect_id: None,
                retry_after_ms: Some(30_000),
            },
        },
        &mut summaries,
        None,
    );
    let at = app.status.retry_at.expect("a countdown");
    let wait = at - asked;
    assert!(
        wait >= std::time::Duration::from_secs(30) && wait < std::time::Duration::from_secs(31),
        "{wait:?}"
    );
    assert!(app.transcript.text(0).contains("sending again in 30 s"));
    apply(
        &mut app,
        Event::MessageStart {
            role: smith_engine::protocol::Role::Assistant,
        },
        &mut summaries,
        None,
    );
    assert_eq!(app.status.retry_at, None);
}

#[test]
fn a_resumed_image_shows_as_its_summary_line_never_its_bytes() {
    let png = include_bytes!("../../../../tests/data/media-4x2.png");
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let session = store.create(Some("pics")).unwrap();
    let journal = StoreJournal::new(store, session);
    {
        use smith_engine::journal::SessionSink;
        let media = smith_engine::provider::Media::new(
            smith_engine::provider::MediaType::Png,
            png.to_vec(),
        )
        .named("shot.png");
        journal
            .record(&smith_engine::journal::SessionEvent::Message {
                message: Message::User {
                    text: "what is this?".into(),
                    media: vec![media],
                },
                meta: smith_engine::journal::MessageMeta::default(),
            })
            .unwrap();
    }
    drop(journal);
    let resumed =
        smith_host::session::open(tmp.path(), &smith_host::SessionChoice::Open("pics".into()))
            .unwrap();
    let session = resumed.journal.with_session(smith_store::Session::clone);
    show_history(&mut app, &session, resumed.compaction_summary.as_deref());
    let t = &app.transcript;
    assert_eq!(t.record(0).unwrap().kind, EntryKind::User);
    assert_eq!(
        t.text(0).into_owned(),
        "what is this?\n[image shot.png · PNG 4×2 · 74 B]"
    );
}

/// A batch's calls are titled in the order the model made them; each
/// output (streamed, then the result) lands under its own title, a call
/// rejected before it ran included; a write's result carries the diff of
/// what it wrote against the file as it was when announced.
#[test]
fn calls_show_their_output_under_their_own_title_and_a_write_its_diff() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f.txt"), "one\ntwo\nthree\n").unwrap();
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let mut calls = crate::events::Calls::new(tmp.path());
    let call = |id: &str, name: &str, arguments: serde_json::Value| Event::ToolCall {
        call: ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        },
    };
    let start = |id: &str, name: &str| Event::ToolExecutionStart {
        call_id: id.into(),
        name: name.into(),
        effect_id: format!("fx-{id}"),
    };
    let end = |id: &str, name: &str, status: ToolStatus, content: &str| Event::ToolExecutionEnd {
        call_id: id.into(),
        name: name.into(),
        status,
        content: content.into(),
        details: serde_json::json!({}),
        mutation: None,
        effect_id: None,
    };
    for event in [
        Event::AgentStart,
        call("a", "bash", serde_json::json!({"command": "make"})),
        call("x", "no_such_tool", serde_json::json!({"path": "y"})),
        call(
            "w",
            "write",
            serde_json::json!({"path": "f.txt", "content": "one\nTWO\nthree\n"}),
        ),
        start("a", "bash"),
        start("w", "write"),
        Event::ToolExecutionUpdate {
            call_id: "a".into(),
            output: "compiling\n".into(),
        },
    ] {
        apply(&mut app, event, &mut calls, None);
    }
    assert_eq!(app.transcript.text(1), "compiling\n");
    assert!(app.transcript.is_live(1));
    // The file changes as the write runs; the diff is against what it was.
    std::fs::write(tmp.path().join("f.txt"), "one\nTWO\nthree\n").unwrap();
    for event in [
        end(
            "x",
            "no_such_tool",
            ToolStatus::Invalid,
            "unknown tool no_such_tool",
        ),
        end(
            "w",
            "write",
            ToolStatus::Ok,
            "Replaced f.txt (14 bytes, 3 lines).",
        ),
        end("a", "bash", ToolStatus::Ok, "compiling\nbuilt\n"),
    ] {
        apply(&mut app, event, &mut calls, None);
    }
    let t = &app.transcript;
    let entries: Vec<(EntryKind, String)> = (0..t.len())
        .map(|i| (t.record(i).unwrap().kind, t.text(i).into_owned()))
        .collect();
    assert_eq!(
        entries,
        [
            (EntryKind::Tool, "bash make".to_owned()),
            (EntryKind::ToolOutput, "compiling\nbuilt\n".to_owned()),
            (EntryKind::Tool, "no_such_tool y".to_owned()),
            (EntryKind::ToolOutput, "unknown tool no_such_tool".to_owned()),
            (EntryKind::Tool, "write f.txt".to_owned()),
            (
                EntryKind::ToolOutput,
                "Replaced f.txt (14 bytes, 3 lines).\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n".to_owned()
            ),
        ]
    );
    assert_eq!(t.record(2).unwrap().tool, ToolState::Failed);
    assert_eq!(t.record(4).unwrap().tool, ToolState::Ok);
    assert!(!t.is_live(1));
}
