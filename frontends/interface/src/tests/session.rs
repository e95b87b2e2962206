use smith_engine::journal::{MessageMeta, SessionEvent, SessionSink};
use smith_engine::provider::{ContentBlock, StopReason};
use smith_tui::transcript::EntryKind as Shown;

use super::*;

fn user(text: &str) -> SessionEvent {
    SessionEvent::Message {
        message: Message::user(text),
        meta: MessageMeta::default(),
    }
}

fn answer(text: &str) -> SessionEvent {
    SessionEvent::Message {
        message: Message::Assistant {
            content: vec![ContentBlock::Text { text: text.into() }],
            stop: StopReason::End,
        },
        meta: MessageMeta::default(),
    }
}

/// A stored session: "first question", "answer one", "second
/// question"; then the leaf moved back to "answer one" and "another
/// way" asked there. Returns the store root, the session id and the
/// ids of the five entries in append order.
fn forked_session() -> (tempfile::TempDir, String, Vec<u64>) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let session = store.create(Some("forked")).unwrap();
    let id = session.id().to_hex();
    let journal = StoreJournal::new(store, session);
    for event in [
        user("first question"),
        answer("answer one"),
        user("second question"),
    ] {
        journal.record(&event).unwrap();
    }
    let ids: Vec<u64> = journal.with_session(|s| s.records().iter().map(|r| r.id).collect());
    drop(journal);
    select_leaf(tmp.path(), &id, ids[1]).unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let session = store.load(&id).unwrap();
    let journal = StoreJournal::new(store, session);
    journal.record(&user("another way")).unwrap();
    let ids = journal.with_session(|s| s.records().iter().map(|r| r.id).collect());
    (tmp, id, ids)
}

/// The ids the transcript shows for live messages: the first user or
/// assistant message after the last one given, on the selected branch only.
#[test]
fn the_next_recorded_message_is_found_on_the_selected_branch() {
    let (tmp, id, ids) = forked_session();
    let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
    let next = |after, user| crate::session::next_message_id(&session, after, user);
    assert_eq!(next(None, true), Some(ids[0]));
    assert_eq!(next(None, false), Some(ids[1]));
    // "second question" (ids[2]) is off the selected branch.
    assert_eq!(next(Some(ids[0]), true), Some(ids[4]));
    assert_eq!(next(Some(ids[1]), true), Some(ids[4]));
    assert_eq!(next(Some(ids[1]), false), None);
    assert_eq!(next(Some(ids[4]), true), None);
    // A start not on the branch counts from the branch's start.
    assert_eq!(next(Some(999_999), true), Some(ids[0]));
}

#[test]
fn selecting_a_leaf_switches_the_stored_branch() {
    let (tmp, id, ids) = forked_session();
    assert_eq!(ids.len(), 5, "three messages, a leaf switch, one message");
    let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
    let resumed = resume(&session).unwrap();
    let texts: Vec<String> = resumed
        .history
        .iter()
        .map(|m| match m {
            Message::User { text, .. } => text.clone(),
            other => other.text(),
        })
        .collect();
    assert_eq!(texts, ["first question", "answer one", "another way"]);
    // An id that is not in the session is refused, naming it.
    let err = select_leaf(tmp.path(), &id, 999_999).unwrap_err();
    assert!(format!("{err:#}").contains("999999"), "{err:#}");
}

#[test]
fn the_branch_tree_folds_chains_and_nests_branches_under_their_fork() {
    let (tmp, id, ids) = forked_session();
    let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
    let rows = branch_rows(&session);
    let shown: Vec<(u16, &str, &str, bool)> = rows
        .iter()
        .map(|r| (r.depth, r.label.as_str(), r.arg.as_str(), r.current))
        .collect();
    let fork = format!(
        "entry {} · fork, 2 branches · “first question” · on the selected branch",
        ids[1]
    );
    let old = format!("entry {} · 3 entries · “second question”", ids[2]);
    let new = format!("entry {} · 4 entries · “another way”", ids[4]);
    let (a1, a2, a4) = (ids[1].to_string(), ids[2].to_string(), ids[4].to_string());
    assert_eq!(
        shown,
        [
            (0, fork.as_str(), a1.as_str(), false),
            (1, old.as_str(), a2.as_str(), false),
            (1, new.as_str(), a4.as_str(), true),
        ]
    );
    let Overlay::Tree(tree) = branch_overlay(&session) else {
        panic!("/branch opens a tree");
    };
    assert_eq!(tree.selected, 2, "the current leaf is highlighted");
    assert_eq!(tree.command, "branch");
}

#[test]
fn a_long_single_branch_is_one_row() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let session = store.create(None).unwrap();
    let journal = StoreJournal::new(store, session);
    for i in 0..200 {
        journal.record(&user(&format!("question {i}"))).unwrap();
    }
    let rows = journal.with_session(branch_rows);
    assert_eq!(rows.len(), 1);
    assert!(rows[0].current);
    assert!(
        rows[0].label.ends_with("· 200 entries · “question 199”"),
        "{}",
        rows[0].label
    );
}

#[test]
fn replay_plays_the_session_into_the_transcript_and_ends() {
    let (tmp, id, _) = forked_session();
    let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
    let recording = Recording::from_session(&session).unwrap();
    let (tx, rx) = sync_channel::<AgentMsg>(CHANNEL_CAPACITY);
    let tag = REPLAY_TAG | 1;
    spawn_replay(
        recording,
        Pace::Instant,
        tag,
        Arc::new(AtomicBool::new(false)),
        tx,
    )
    .unwrap();
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let mut summaries = crate::events::Calls::default();
    let mut ended = false;
    while let Ok(msg) = rx.recv() {
        let Msg::Agent((t, event)) = msg else {
            panic!("a replay sends agent events only");
        };
        assert_eq!(t, tag);
        match event {
            Some(Feed::Event(event)) => {
                apply_replayed(&mut app, event, &mut summaries, None);
            }
            Some(other) => panic!("a replay sends events only, not {other:?}"),
            None => ended = true,
        }
    }
    assert!(ended, "the replay says when it is done");
    let t = &app.transcript;
    let owned: Vec<(Shown, String)> = (0..t.len())
        .map(|i| (t.record(i).unwrap().kind, t.text(i).into_owned()))
        .collect();
    let entries: Vec<(Shown, &str)> = owned.iter().map(|(k, s)| (*k, s.as_str())).collect();
    // The fixture records messages without run records, so replay
    // reports the run as interrupted, as it would for a process
    // that stopped mid-run.
    assert_eq!(entries.len(), 5, "{entries:?}");
    assert_eq!(
        entries[..3],
        [
            (Shown::User, "first question"),
            (Shown::Assistant, "answer one"),
            (Shown::User, "another way"),
        ]
    );
    assert_eq!(entries[3].0, Shown::Error);
    assert!(
        entries[3]
            .1
            .starts_with("interrupted: the recording of this run ends")
    );
    assert_eq!(entries[4], (Shown::Notice, "interrupted"));
}

#[test]
fn a_stopped_replay_still_ends() {
    let (tmp, id, _) = forked_session();
    let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
    let recording = Recording::from_session(&session).unwrap();
    let (tx, rx) = sync_channel::<AgentMsg>(CHANNEL_CAPACITY);
    spawn_replay(
        recording,
        Pace::Instant,
        7,
        Arc::new(AtomicBool::new(true)),
        tx,
    )
    .unwrap();
    let got: Vec<bool> = rx
        .iter()
        .map(|m| matches!(m, Msg::Agent((7, Some(_)))))
        .collect();
    assert_eq!(got, [false], "no event after the stop, then the end");
}

#[test]
fn compaction_shows_in_the_status_line_and_the_transcript() {
    use smith_engine::protocol::{CompactionOutcome, CompactionReason};
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    let mut summaries = crate::events::Calls::default();
    apply(
        &mut app,
        Event::CompactionStart {
            reason: CompactionReason::Manual,
            tokens_before: 9000,
        },
        &mut summaries,
        None,
    );
    assert_eq!(app.status.activity, "compacting");
    assert!(app.status.busy, "Esc interrupts a running compaction");
    let end = |outcome, error: Option<smith_engine::protocol::ErrorInfo>| Event::CompactionEnd {
        reason: CompactionReason::Manual,
        outcome,
        tokens_before: 9000,
        tokens_after: (outcome == CompactionOutcome::Compacted).then_some(1200),
        summary: None,
        summarized_messages: (outcome == CompactionOutcome::Compacted).then_some(8),
        kept_messages: (outcome == CompactionOutcome::Compacted).then_some(2),
        usage: None,
        error,
        detail: None,
    };
    apply(
        &mut app,
        end(CompactionOutcome::Compacted, None),
        &mut summaries,
        None,
    );
    assert_eq!(app.status.activity, "");
    assert!(!app.status.busy);
    let failed = smith_engine::protocol::ErrorInfo {
        kind: "summary_empty".into(),
        message: "the model returned an empty summary".into(),
        mutation: None,
        effect_id: None,
        retry_after_ms: None,
    };
    apply(
        &mut app,
        end(CompactionOutcome::Failed, Some(failed)),
        &mut summaries,
        None,
    );
    let t = &app.transcript;
    let owned: Vec<(Shown, String)> = (0..t.len())
        .map(|i| (t.record(i).unwrap().kind, t.text(i).into_owned()))
        .collect();
    let texts: Vec<(Shown, &str)> = owned.iter().map(|(k, s)| (*k, s.as_str())).collect();
    assert_eq!(
        texts,
        [
            (
                Shown::Notice,
                "compacting (asked for) · context about 9000 tokens"
            ),
            (
                Shown::Notice,
                "compacted: 8 messages summarized, 2 kept · context about 9000 → 1200 tokens"
            ),
            (
                Shown::Error,
                "compaction failed, the context is unchanged: the model returned an empty summary"
            ),
        ]
    );
}

#[test]
fn replay_speed_arguments() {
    assert!(matches!(replay_pace(""), Ok(Pace::Scaled(f)) if f == 10.0));
    assert!(matches!(replay_pace("4"), Ok(Pace::Scaled(f)) if f == 4.0));
    assert!(matches!(replay_pace("2.5x"), Ok(Pace::Scaled(f)) if f == 2.5));
    assert!(matches!(replay_pace("instant"), Ok(Pace::Instant)));
    assert!(matches!(replay_pace("0"), Ok(Pace::Instant)));
    let err = replay_pace("fast").unwrap_err();
    assert!(
        err.contains("\"fast\"") && err.contains("/replay 4"),
        "{err}"
    );
    assert!(replay_pace("-1").is_err());
}

#[test]
fn the_plugin_list_shows_every_built_in_plugin() {
    let Overlay::Info { lines, .. } = plugins_overlay() else {
        panic!("/plugins opens an information overlay");
    };
    for name in [
        "smith/mock",
        "smith/product",
        "smith/anthropic",
        "smith/openai",
        "smith/google",
        "smith/openai-compatible",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{name} ("))),
            "{name} missing: {lines:#?}"
        );
    }
    assert!(lines[0].starts_with("smith/mock (provider, built in)"));
    assert!(lines.last().unwrap().starts_with(
        "The layout, theme, keys, commands and tool presentation come from smith/product"
    ));
}
