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
    let mut summaries = Vec::new();
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
    let mut summaries = Vec::new();
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
