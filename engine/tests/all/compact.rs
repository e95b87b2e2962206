//! Compaction through the real runtime and session store: the boundary
//! entry, the next request's context, resume and replay of a compacted
//! session, abort, failures, and the automatic triggers.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use smith_engine::agent::compact::{
    BYTES_PER_TOKEN, MAX_SUMMARIZED_WINDOWS, MIN_SUMMARY_BYTES, PRUNED_RESULT_BYTES,
    SUMMARY_PREFIX, estimate_all, estimate_tokens, is_summary_request, message_bytes,
    summary_message,
};
use smith_engine::agent::{self, AgentConfig, AgentHandle, CompactionRecord, Services};
use smith_engine::journal::store::{StoreJournal, resume};
use smith_engine::journal::{MessageMeta, SessionEvent, SessionSink};
use smith_engine::protocol::{Command, CompactionOutcome, CompactionReason, Event, StopCause};
use smith_engine::provider::record::RecordingProvider;
use smith_engine::provider::scripted::{MOCK_MODEL, parse_script};
use smith_engine::provider::{ContentBlock, HostTransport, Message, Request, StopReason};
use smith_engine::replay::{Pace, Recording};
use smith_engine::tools::{ToolContext, ToolSet};
use smith_store::{EntryKind, Store};
use smith_testkit::ScriptedProvider;

struct Rig {
    handle: AgentHandle,
    journal: Arc<StoreJournal>,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    record: PathBuf,
}

fn rig_with(script: &str, config: AgentConfig) -> Rig {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "hello world\n").unwrap();
    let record = home.path().join("requests.jsonl");
    let store = Store::open(home.path().join("store")).unwrap();
    let session = store.create(Some("c")).unwrap();
    let journal = Arc::new(StoreJournal::new(store, session));
    // A resumed history is in the session as well.
    for message in &config.history {
        journal
            .record(&SessionEvent::Message {
                message: message.clone(),
                meta: MessageMeta::default(),
            })
            .unwrap();
    }
    let provider = RecordingProvider::new(
        Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap())),
        &record,
    )
    .unwrap();
    let services = Services {
        provider: Box::new(provider),
        transport: Arc::new(HostTransport),
        tools: ToolSet::builtin(),
        tool_context: ToolContext::new(work.path())
            .unwrap()
            .with_output_dir(home.path().join("out")),
        journal: journal.clone(),
        sink: journal.clone(),
        policies: agent::default_policies(),
    };
    let handle = agent::spawn(config, services).unwrap();
    Rig {
        handle,
        journal,
        home,
        work,
        record,
    }
}

fn rig(script: &str) -> Rig {
    rig_with(script, AgentConfig::new(MOCK_MODEL))
}

fn until_settled(rig: &Rig, mut react: impl FnMut(&Event)) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let event = rig
            .handle
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|t| panic!("no event (timeout {t}); so far {events:#?}"));
        react(&event);
        let settled = event == Event::Settled;
        events.push(event);
        if settled {
            return events;
        }
    }
}

fn prompt(rig: &Rig, text: &str) -> Vec<Event> {
    rig.handle
        .send(Command::Prompt { text: text.into() })
        .unwrap();
    until_settled(rig, |_| {})
}

fn requests(path: &Path) -> Vec<Request> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn messages(rig: &Rig) -> Vec<Message> {
    rig.handle.send(Command::GetMessages).unwrap();
    loop {
        match rig.handle.recv_timeout(Duration::from_secs(10)).unwrap() {
            Event::Messages { messages } => return messages,
            _ => continue,
        }
    }
}

fn compaction_events(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::CompactionStart { .. } | Event::CompactionEnd { .. }
            )
        })
        .collect()
}

fn user(text: &str) -> Message {
    Message::user(text)
}

fn answer(text: &str) -> Message {
    Message::Assistant {
        content: vec![ContentBlock::Text { text: text.into() }],
        stop: StopReason::End,
    }
}

/// A long prompt: `head` followed by about 1,400 bytes of detail, so that
/// a summary of it is far shorter than it (a summary no shorter than what
/// it replaces is never used).
fn long(head: &str) -> String {
    format!(
        "{head} {}",
        "Keep the parser's error messages as they are and explain each change. ".repeat(20)
    )
}

const TWO_TURNS_THEN_ONE: &str = r#"{
  "responses": [
    [{"text": "first answer"}, {"stop": {"reason": "end"}}],
    [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"stop": {"reason": "tool_use"}}],
    [{"text": "second answer"}, {"stop": {"reason": "end"}}],
    [{"text": "third answer"}, {"stop": {"reason": "end"}}]
  ],
  "summaries": [
    [{"text": "The user asked twice; notes.txt says hello world."}, {"usage": {"input": 40, "output": 12}}, {"stop": {"reason": "end"}}]
  ]
}"#;

#[test]
fn manual_compaction_records_the_boundary_and_the_next_request_sends_summary_and_kept_messages() {
    let rig = rig(TWO_TURNS_THEN_ONE);
    prompt(&rig, &long("first"));
    prompt(&rig, "second");
    let before = messages(&rig);
    assert_eq!(before.len(), 6, "{before:#?}");

    rig.handle.compact(Some("mention the file")).unwrap();
    let events = until_settled(&rig, |_| {});
    // Exactly start, end, settled: no run, no messages.
    assert_eq!(events.len(), 3, "{events:#?}");
    let Event::CompactionStart {
        reason: CompactionReason::Manual,
        tokens_before,
    } = events[0]
    else {
        panic!("{events:#?}")
    };
    let Event::CompactionEnd {
        reason: CompactionReason::Manual,
        outcome: CompactionOutcome::Compacted,
        tokens_before: before_again,
        tokens_after: Some(tokens_after),
        summary: Some(summary),
        summarized_messages: Some(2),
        kept_messages: Some(4),
        usage: Some(usage),
        error: None,
        detail: Some(detail),
    } = &events[1]
    else {
        panic!("{events:#?}")
    };
    assert_eq!(*before_again, tokens_before);
    // The estimate after: the summary replaces the summarized messages.
    assert_eq!(
        *tokens_after,
        tokens_before - estimate_all(&before[..2]) + estimate_tokens(&summary_message(summary))
    );
    assert_eq!(summary, "The user asked twice; notes.txt says hello world.");
    assert_eq!(usage.input, Some(40));
    assert_eq!(events[2], Event::Settled);

    // The context is now the summary, then the latest turn as it was.
    let after = messages(&rig);
    let mut expected = vec![summary_message(summary)];
    expected.extend_from_slice(&before[2..]);
    assert_eq!(after, expected);
    // The sizes in bytes before and after; nothing here was worth pruning.
    let bytes = |m: &[Message]| m.iter().map(message_bytes).sum::<u64>();
    assert_eq!(
        (detail.bytes_before, detail.bytes_after),
        (bytes(&before), bytes(&after))
    );
    assert_eq!(
        (
            detail.thinking_dropped,
            detail.results_clipped,
            detail.reads_superseded
        ),
        (0, 0, 0)
    );

    // The summary request: tool-free, over the first turn, with the
    // instructions.
    let sent = requests(&rig.record);
    assert_eq!(sent.len(), 4);
    assert!(is_summary_request(&sent[3]));
    let Message::User { text, .. } = &sent[3].messages[0] else {
        panic!()
    };
    assert!(text.contains("[user]: first"), "{text}");
    assert!(text.contains("[assistant]: first answer"), "{text}");
    assert!(!text.contains("second"), "{text}");
    assert!(text.contains("mention the file"), "{text}");

    // The session: one compaction entry naming the latest user message.
    rig.journal.with_session(|session| {
        let branch = session.branch();
        let compaction = branch
            .iter()
            .rposition(|r| r.entry_kind() == EntryKind::Compaction)
            .expect("a compaction entry");
        let boundary = session.compaction_boundary();
        assert!(boundary < compaction);
        assert_eq!(branch[boundary].entry_kind(), EntryKind::UserMessage);
        assert_eq!(branch[compaction].pairing, branch[boundary].id);
        // Nothing before the boundary is a message of the kept turn.
        let users_before = branch[..boundary]
            .iter()
            .filter(|r| r.entry_kind() == EntryKind::UserMessage)
            .count();
        assert_eq!(users_before, 1);
    });

    // The next turn's request: the summary and only the kept messages.
    let events = prompt(&rig, "third");
    assert!(compaction_events(&events).is_empty());
    let sent = requests(&rig.record);
    assert_eq!(sent.len(), 5);
    let mut context = expected.clone();
    context.push(user("third"));
    assert_eq!(sent[4].messages, context);
    assert!(!is_summary_request(&sent[4]));

    // Resume from disk: the same context, the compaction record.
    let store = Store::open(rig.home.path().join("store")).unwrap();
    let session = store.load("c").unwrap();
    let resumed = resume(&session).unwrap();
    context.push(answer("third answer"));
    assert_eq!(resumed.history, context);
    assert_eq!(resumed.meta.len(), resumed.history.len());
    let record: &CompactionRecord = resumed.compaction.as_ref().unwrap();
    assert_eq!(record.reason, "manual");
    assert_eq!(record.instructions.as_deref(), Some("mention the file"));
    assert_eq!((record.summarized_messages, record.kept_messages), (2, 4));
    assert_eq!(record.kept_heads, 3);
    assert_eq!(record.tokens_after, *tokens_after);

    // Replay of the compacted session: the compaction between the runs,
    // followed by settled, and the runs around it intact.
    let recording = Recording::from_session(&session).unwrap();
    let mut replayed = Vec::new();
    recording
        .play(None, Pace::Instant, |e| -> Result<(), ()> {
            replayed.push(e.clone());
            Ok(())
        })
        .unwrap();
    let kinds: Vec<&str> = replayed
        .iter()
        .filter_map(|e| match e {
            Event::AgentStart => Some("agent_start"),
            Event::CompactionStart { .. } => Some("compaction_start"),
            Event::CompactionEnd { .. } => Some("compaction_end"),
            Event::Settled => Some("settled"),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "agent_start",
            "settled",
            "agent_start",
            "settled",
            "compaction_start",
            "compaction_end",
            "settled",
            "agent_start",
            "settled"
        ]
    );
    let replayed_end = replayed
        .iter()
        .find(|e| matches!(e, Event::CompactionEnd { .. }))
        .unwrap();
    assert_eq!(
        replayed_end,
        &events_end(&events_of_compaction(&rig, summary))
    );
    rig.handle.shutdown();
}

/// The compaction end the live runtime announced, rebuilt from the record
/// (the replay must match it field for field).
fn events_of_compaction(rig: &Rig, summary: &str) -> CompactionRecord {
    let store = Store::open(rig.home.path().join("store")).unwrap();
    let record = resume(&store.load("c").unwrap())
        .unwrap()
        .compaction
        .unwrap();
    assert_eq!(record.summary, summary);
    record
}

fn events_end(record: &CompactionRecord) -> Event {
    Event::CompactionEnd {
        reason: CompactionReason::Manual,
        outcome: CompactionOutcome::Compacted,
        tokens_before: record.tokens_before,
        tokens_after: Some(record.tokens_after),
        summary: Some(record.summary.clone()),
        summarized_messages: Some(record.summarized_messages),
        kept_messages: Some(record.kept_messages),
        usage: Some(record.usage),
        error: None,
        detail: None,
    }
}

#[test]
fn an_aborted_compaction_leaves_context_and_session_unchanged() {
    let rig = rig(r#"{
      "responses": [
        [{"text": "one"}, {"stop": {"reason": "end"}}],
        [{"text": "two"}, {"stop": {"reason": "end"}}]
      ],
      "summaries": [
        [{"text": "partial "}, {"delay_ms": 10000}, {"text": "never"}, {"stop": {"reason": "end"}}]
      ]
    }"#);
    prompt(&rig, &long("a"));
    prompt(&rig, "b");
    let before = messages(&rig);
    let entries_before = rig.journal.with_session(|s| s.records().len());

    rig.handle.compact(None).unwrap();
    // A prompt while compacting is refused: the runtime is busy.
    let mut refused = false;
    let events = until_settled(&rig, |e| match e {
        Event::CompactionStart { .. } => {
            rig.handle
                .send(Command::Prompt { text: "c".into() })
                .unwrap();
        }
        Event::Error(info) if info.kind == "busy" => {
            refused = true;
            rig.handle.abort();
        }
        _ => {}
    });
    assert!(refused, "{events:#?}");
    let ends: Vec<CompactionOutcome> = events
        .iter()
        .filter_map(|e| match e {
            Event::CompactionEnd { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![CompactionOutcome::Aborted]);
    assert_eq!(events.last(), Some(&Event::Settled));
    assert_eq!(messages(&rig), before);
    let entries_after = rig.journal.with_session(|s| s.records().len());
    assert_eq!(entries_after, entries_before, "nothing was recorded");
    rig.journal.with_session(|s| {
        assert!(
            !s.records()
                .iter()
                .any(|r| r.entry_kind() == EntryKind::Compaction)
        );
    });
    rig.handle.shutdown();
}

#[test]
fn a_truncated_or_failed_summary_is_never_recorded() {
    let rig = rig(r#"{
      "responses": [
        [{"text": "one"}, {"stop": {"reason": "end"}}],
        [{"text": "two"}, {"stop": {"reason": "end"}}]
      ],
      "summaries": [
        [{"text": "cut off mid"}, {"stop": {"reason": "limit"}}],
        [{"error": {"kind": "overloaded", "message": "try later"}}],
        [{"stop": {"reason": "end"}}]
      ]
    }"#);
    prompt(&rig, &long("a"));
    prompt(&rig, "b");
    let before = messages(&rig);
    for expected in ["summary_truncated", "overloaded", "summary_empty"] {
        rig.handle.compact(None).unwrap();
        let events = until_settled(&rig, |_| {});
        let Some(Event::CompactionEnd {
            outcome: CompactionOutcome::Failed,
            error: Some(error),
            summary: None,
            ..
        }) = events
            .iter()
            .find(|e| matches!(e, Event::CompactionEnd { .. }))
        else {
            panic!("{events:#?}")
        };
        assert_eq!(error.kind, expected);
        assert_eq!(messages(&rig), before);
    }
    rig.journal.with_session(|s| {
        assert!(
            !s.records()
                .iter()
                .any(|r| r.entry_kind() == EntryKind::Compaction)
        );
    });
    // Too little to summarize is skipped without a request.
    let rig = rig_with(
        r#"[[{"text": "one"}, {"stop": {"reason": "end"}}]]"#,
        AgentConfig::new(MOCK_MODEL),
    );
    rig.handle.compact(None).unwrap();
    let events = until_settled(&rig, |_| {});
    assert!(
        matches!(&events[1], Event::CompactionEnd { outcome: CompactionOutcome::Skipped, error: Some(e), .. } if e.kind == "nothing_to_compact"),
        "{events:#?}"
    );
    assert!(requests(&rig.record).is_empty());
}

#[test]
fn crossing_the_threshold_compacts_before_the_next_request_of_the_run() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.context_window = Some(10_000);
    config.compaction.reserve_tokens = 2_000;
    config.compaction.keep_recent_tokens = 5;
    // The first response reports 8,900 tokens of context: over 8,000. Its
    // answer is long, so that a summary of the first turn is far shorter.
    let one = long("one");
    let rig = rig_with(
        &(r#"[
          [{"text": ""#
            .to_owned()
            + &one
            + r#""}, {"usage": {"input": 8880, "output": 20}}, {"stop": {"reason": "end"}}],
          [{"text": "reading"}, {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"usage": {"input": 100, "output": 5}}, {"stop": {"reason": "tool_use"}}],
          [{"text": "done"}, {"usage": {"input": 120, "output": 5}}, {"stop": {"reason": "end"}}]
        ]"#),
        config,
    );
    let first = prompt(&rig, "a");
    assert!(compaction_events(&first).is_empty());
    let events = prompt(&rig, "b");
    assert_eq!(stop_of(&events), StopCause::Done);
    let compaction = compaction_events(&events);
    assert_eq!(compaction.len(), 2, "{events:#?}");
    assert!(matches!(
        compaction[0],
        Event::CompactionStart { reason: CompactionReason::Threshold, tokens_before } if *tokens_before > 8_000
    ));
    let Event::CompactionEnd {
        outcome: CompactionOutcome::Compacted,
        summary: Some(summary),
        ..
    } = compaction[1]
    else {
        panic!("{events:#?}")
    };
    // No summaries in the script: the generated deterministic summary.
    assert_eq!(
        summary,
        "Mock summary of 2 message(s). The user asked: \"a\"."
    );
    // The compaction happens after the input is delivered, before the
    // turn's request; the request carries summary + the new input.
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::MessageEnd {
                message: Message::User { .. },
                ..
            } => Some("user"),
            Event::CompactionEnd { .. } => Some("compacted"),
            Event::TurnStart { .. } => Some("turn"),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec!["user", "compacted", "turn", "turn"]);
    let sent = requests(&rig.record);
    assert_eq!(sent.len(), 4);
    assert!(is_summary_request(&sent[1]));
    assert_eq!(sent[2].messages, vec![summary_message(summary), user("b")]);
    // Later requests of the run build on the compacted context.
    assert_eq!(sent[3].messages.len(), 4);
    assert!(
        matches!(&sent[3].messages[0], Message::User { text, .. } if text.starts_with(SUMMARY_PREFIX))
    );
    rig.handle.shutdown();
}

#[test]
fn a_context_overflow_compacts_once_and_retries_the_request() {
    // Each summary is far shorter than what it replaces: the long first
    // prompt, then the first summary.
    let first_summary = "The user sent a long prompt about the parser. ".repeat(8);
    let rig = rig(&format!(
        r#"{{
      "responses": [
        [{{"text": "one"}}, {{"stop": {{"reason": "end"}}}}],
        [{{"error": {{"kind": "context_overflow", "message": "prompt is too long"}}}}],
        [{{"text": "fits now"}}, {{"stop": {{"reason": "end"}}}}],
        [{{"error": {{"kind": "context_overflow", "message": "prompt is too long"}}}}],
        [{{"error": {{"kind": "context_overflow", "message": "still too long"}}}}]
      ],
      "summaries": [
        [{{"text": "{first_summary}"}}, {{"stop": {{"reason": "end"}}}}],
        [{{"text": "Shorter."}}, {{"stop": {{"reason": "end"}}}}]
      ]
    }}"#
    ));
    prompt(&rig, &long("a"));
    let events = prompt(&rig, "b");
    assert_eq!(stop_of(&events), StopCause::Done, "{events:#?}");
    assert!(
        !events.iter().any(|e| matches!(e, Event::Error(_))),
        "{events:#?}"
    );
    let compaction = compaction_events(&events);
    assert!(matches!(
        compaction[..],
        [
            Event::CompactionStart {
                reason: CompactionReason::Overflow,
                ..
            },
            Event::CompactionEnd {
                reason: CompactionReason::Overflow,
                outcome: CompactionOutcome::Compacted,
                ..
            }
        ]
    ));
    let sent = requests(&rig.record);
    // a, b (overflow), summary, b retried over the compacted context.
    assert_eq!(sent.len(), 4);
    assert!(is_summary_request(&sent[2]));
    assert!(
        matches!(&sent[3].messages[0], Message::User { text, .. } if text.starts_with(SUMMARY_PREFIX))
    );
    assert_eq!(sent[3].messages.last(), Some(&user("b")));

    // A second overflow in one run is reported, not compacted again.
    let events = prompt(&rig, "c");
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(compaction_events(&events).len(), 2);
    let errors: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Error(info) => Some(info.message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(errors, vec!["still too long"]);
    rig.handle.shutdown();
}

fn stop_of(events: &[Event]) -> StopCause {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::AgentEnd { stop, .. } => Some(*stop),
            _ => None,
        })
        .expect("an agent_end event")
}

#[test]
fn a_history_larger_than_the_window_is_summarized_in_parts_and_no_request_exceeds_it() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.auto = false;
    config.compaction.context_window = Some(10_000);
    config.compaction.reserve_tokens = 2_000;
    config.compaction.keep_recent_tokens = 5;
    // A resumed history larger than the window (no request of a live run
    // can grow one: none is sent over the window): turns of about 4,000,
    // 13,000 (alone over the 8,000-token threshold) and 4,000 tokens, then
    // a short last turn.
    config.history = vec![
        user(&"a".repeat(12_000)),
        answer("one"),
        user(&"b".repeat(40_000)),
        answer("two"),
        user(&"c".repeat(12_000)),
        answer("three"),
        user("last"),
        answer("four"),
    ];
    let rig = rig_with("[]", config);
    let before = messages(&rig);
    assert!(estimate_all(&before) > 10_000, "{}", estimate_all(&before));

    rig.handle.compact(None).unwrap();
    let events = until_settled(&rig, |_| {});
    let Event::CompactionEnd {
        outcome: CompactionOutcome::Compacted,
        summary: Some(summary),
        summarized_messages: Some(7),
        kept_messages: Some(1),
        usage: Some(usage),
        ..
    } = &events[1]
    else {
        panic!("{events:#?}")
    };
    // Three parts, then one request over their summaries.
    assert!(
        summary.starts_with("Mock summary of 3 message(s)."),
        "{summary}"
    );
    let sent = requests(&rig.record);
    let summaries: Vec<&Request> = sent.iter().filter(|r| is_summary_request(r)).collect();
    assert_eq!(summaries.len(), 4, "{summaries:#?}");
    assert_eq!(sent.len(), 4, "only the summary requests were sent");
    for request in &summaries {
        let system =
            (request.system.as_deref().map_or(0, str::len) as u64).div_ceil(BYTES_PER_TOKEN);
        let tokens = estimate_all(&request.messages) + system;
        assert!(tokens <= 8_000, "a summary request of {tokens} tokens");
    }
    let text = |r: &Request| r.messages.iter().map(Message::text).collect::<String>();
    // The part that is one message too large alone is clipped in the middle.
    assert!(text(summaries[1]).contains("bytes left out of this message"));
    assert!(text(summaries[1]).contains("bbbb"));
    assert!(text(summaries[3]).contains("[summary of part 1 of 3]"));
    assert!(text(summaries[3]).contains("[summary of part 3 of 3]"));
    // The usage recorded is every summary request's together: more input
    // than any one request (each at most 8,000 tokens) could have used.
    assert!(usage.input.unwrap() > 8_000, "{usage:?}");
    // The context is the summary and what was kept.
    let after = messages(&rig);
    assert_eq!(after[0], summary_message(summary));
    assert_eq!(&after[1..], &before[7..]);
    rig.handle.shutdown();
}

#[test]
fn a_request_too_large_to_send_or_build_compacts_once_and_is_not_sent_again_as_it_was() {
    for kind in ["request_too_large", "plugin_memory"] {
        let rig = rig(&format!(
            r#"[
              [{{"text": "one"}}, {{"stop": {{"reason": "end"}}}}],
              [{{"error": {{"kind": "{kind}", "message": "too large to send"}}}}],
              [{{"text": "fits now"}}, {{"stop": {{"reason": "end"}}}}]
            ]"#
        ));
        prompt(&rig, &long("a"));
        let events = prompt(&rig, "b");
        assert_eq!(stop_of(&events), StopCause::Done, "{kind}: {events:#?}");
        let compaction = compaction_events(&events);
        assert!(
            matches!(
                compaction[..],
                [
                    Event::CompactionStart {
                        reason: CompactionReason::Overflow,
                        ..
                    },
                    Event::CompactionEnd {
                        outcome: CompactionOutcome::Compacted,
                        ..
                    }
                ]
            ),
            "{kind}: {events:#?}"
        );
        let sent = requests(&rig.record);
        // a, b (refused), summary, b over the compacted context: the
        // refused request is never sent again unchanged.
        assert_eq!(sent.len(), 4, "{kind}");
        assert!(is_summary_request(&sent[2]));
        assert_ne!(sent[3].messages, sent[1].messages, "{kind}");
        assert_eq!(sent[3].messages.last(), Some(&user("b")));
        rig.handle.shutdown();
    }
}

/// A tool-using turn whose results are large: two reads of big.txt (the
/// first superseded by the second) with reasoning before them, then an
/// answer.
const BIG_READS: &str = r#"[
  [{"thinking": "I should read the file."}, {"tool_call": {"id": "r1", "name": "read", "arguments": {"path": "big.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"thinking": "Once more, to be sure."}, {"tool_call": {"id": "r2", "name": "read", "arguments": {"path": "big.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"text": "read it twice"}, {"usage": {"input": 28500, "output": 10}}, {"stop": {"reason": "end"}}],
  [{"text": "second answer"}, {"stop": {"reason": "end"}}]
]"#;

fn big_reads_rig(window: u64) -> Rig {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.context_window = Some(window);
    config.compaction.reserve_tokens = 2_000;
    config.compaction.keep_recent_tokens = 50;
    let rig = rig_with(BIG_READS, config);
    // 24,000 bytes of numbered lines: each read result alone is about
    // 8,000 tokens or more.
    let text: String = (0..1_000)
        .map(|i| format!("line {i:05} of big.txt ..\n"))
        .collect();
    std::fs::write(rig.work.path().join("big.txt"), text).unwrap();
    rig
}

#[test]
fn the_cheap_stage_alone_brings_the_context_under_the_threshold_without_asking_the_model() {
    // Threshold 28,000 tokens: the provider counts 28,510 after the first
    // run, mostly the two read results (about 9,000 tokens each); pruned,
    // the context is far under.
    let rig = big_reads_rig(30_000);
    let first = prompt(&rig, "read big.txt");
    assert!(compaction_events(&first).is_empty(), "{first:#?}");
    let before = messages(&rig);
    let events = prompt(&rig, "and now?");
    assert_eq!(stop_of(&events), StopCause::Done, "{events:#?}");
    let compaction = compaction_events(&events);
    let Event::CompactionEnd {
        reason: CompactionReason::Threshold,
        outcome: CompactionOutcome::Compacted,
        tokens_before,
        tokens_after: Some(tokens_after),
        summary: None,
        summarized_messages: Some(0),
        usage: None,
        detail: Some(detail),
        ..
    } = compaction[1]
    else {
        panic!("{events:#?}")
    };
    assert!(*tokens_before > 28_000, "{tokens_before}");
    assert!(*tokens_after <= 28_000, "{tokens_after}");
    assert_eq!(
        (
            detail.thinking_dropped,
            detail.results_clipped,
            detail.reads_superseded
        ),
        (2, 1, 1),
        "{detail:?}"
    );
    assert!(detail.bytes_after < detail.bytes_before / 4, "{detail:?}");
    let sent = requests(&rig.record);
    // Three requests of the first run, then one: no summary request.
    assert_eq!(sent.len(), 4);
    assert!(!sent.iter().any(is_summary_request));
    let last = &sent[3].messages;
    assert_eq!(last.len(), before.len() + 1);
    let result = |i: usize| match &last[i] {
        Message::ToolResult { content, .. } => content.clone(),
        other => panic!("{other:?}"),
    };
    // [user, call r1, result r1, call r2, result r2, answer, user]
    assert!(
        result(2).starts_with("[smith] This read of big.txt"),
        "{}",
        result(2)
    );
    let clipped = result(4);
    assert!(
        clipped.len() < PRUNED_RESULT_BYTES + 200,
        "{}",
        clipped.len()
    );
    assert!(clipped.contains("bytes of this tool result were left out"));
    assert!(clipped.contains("line 00000"), "the beginning is kept");
    assert!(clipped.contains("line 00999"), "the end is kept");
    // Reasoning of the finished turn is gone; every call keeps its result.
    assert!(last.iter().all(|m| {
        match m {
            Message::Assistant { content, .. } => !content
                .iter()
                .any(|b| matches!(b, ContentBlock::Thinking { .. })),
            _ => true,
        }
    }));
    // The durable history is unchanged: resume gives the full messages
    // (and prunes again, the same way, when it crosses the threshold).
    let store = Store::open(rig.home.path().join("store")).unwrap();
    let resumed = resume(&store.load("c").unwrap()).unwrap();
    assert_eq!(&resumed.history[..before.len()], &before[..]);
    assert!(resumed.compaction.is_none());
    rig.handle.shutdown();
}

#[test]
fn no_request_is_sent_over_the_window() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.auto = false;
    config.compaction.context_window = Some(4_000);
    let rig = rig_with(
        r#"[[{"text": "never"}, {"stop": {"reason": "end"}}]]"#,
        config,
    );
    let prompt_text = "x".repeat(usize::try_from(4_000 * BYTES_PER_TOKEN).unwrap());
    let events = prompt(&rig, &prompt_text);
    assert_eq!(stop_of(&events), StopCause::Error, "{events:#?}");
    let error = events
        .iter()
        .find_map(|e| match e {
            Event::Error(info) => Some(info.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(error.kind, "context_overflow");
    assert!(
        error
            .message
            .contains("more than the model's 4000-token context window, so nothing was sent"),
        "{}",
        error.message
    );
    assert!(error.message.contains("automatic compaction is off"));
    assert!(requests(&rig.record).is_empty());
    rig.handle.shutdown();
}

#[test]
fn a_history_of_many_windows_is_summarized_newest_first_within_a_bounded_number_of_requests() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.auto = false;
    config.compaction.context_window = Some(3_000);
    config.compaction.reserve_tokens = 1_000;
    config.compaction.keep_recent_tokens = 5;
    let turns = 40;
    // A resumed history of about 1,000 tokens a turn: some 40,000 in all,
    // many times the window and the eight summary requests' worth one
    // compaction summarizes.
    config.history = (0..turns)
        .flat_map(|i| {
            [
                user(&format!("{i:02} {}", "p".repeat(3_000))),
                answer(&format!("answer {i}")),
            ]
        })
        .collect();
    let rig = rig_with("[]", config);
    rig.handle.compact(None).unwrap();
    let events = until_settled(&rig, |_| {});
    let Event::CompactionEnd {
        outcome: CompactionOutcome::Compacted,
        summary: Some(summary),
        summarized_messages: Some(summarized),
        detail: Some(detail),
        ..
    } = &events[1]
    else {
        panic!("{events:#?}")
    };
    // Every message before the kept last turn leaves the context; the
    // oldest are left out of the summary, which says how many.
    assert_eq!(*summarized, 2 * turns - 1);
    assert!(detail.messages_left_out > 40, "{detail:?}");
    assert!(
        summary.starts_with(&format!(
            "[smith] The {} oldest messages (",
            detail.messages_left_out
        )),
        "{summary}"
    );
    let sent = requests(&rig.record);
    let summaries: Vec<&Request> = sent.iter().filter(|r| is_summary_request(r)).collect();
    // Eight budgets' worth (about 1,400 tokens each) of turns of about
    // 1,000 tokens: one turn a part, eleven parts, then one request over
    // their summaries — not one per turn of the whole history.
    let budgets = usize::try_from(MAX_SUMMARIZED_WINDOWS).unwrap();
    assert!(
        (budgets..=2 * budgets).contains(&summaries.len()),
        "{} summary requests",
        summaries.len()
    );
    for request in &summaries {
        let system =
            (request.system.as_deref().map_or(0, str::len) as u64).div_ceil(BYTES_PER_TOKEN);
        let tokens = estimate_all(&request.messages) + system;
        assert!(tokens <= 2_000, "a summary request of {tokens} tokens");
    }
    // The newest summarized turns are in the summaries, the oldest not.
    let text: String = summaries
        .iter()
        .flat_map(|r| r.messages.iter().map(Message::text))
        .collect();
    assert!(text.contains("[user]: 38 ppp"), "the newest are summarized");
    assert!(!text.contains("[user]: 00 ppp"), "the oldest are left out");
    rig.handle.shutdown();
}

/// The one `compaction_end` among `events`.
fn end_of(events: &[Event]) -> &Event {
    let ends: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::CompactionEnd { .. }))
        .collect();
    assert_eq!(ends.len(), 1, "{events:#?}");
    ends[0]
}

/// Whether the session holds a compaction entry.
fn has_compaction_entry(rig: &Rig) -> bool {
    rig.journal.with_session(|s| {
        s.records()
            .iter()
            .any(|r| r.entry_kind() == EntryKind::Compaction)
    })
}

#[test]
fn a_manual_compaction_of_a_tiny_conversation_sends_nothing_changes_nothing_and_says_why() {
    let rig = rig(r#"[
      [{"text": "one"}, {"stop": {"reason": "end"}}],
      [{"text": "two"}, {"stop": {"reason": "end"}}]
    ]"#);
    prompt(&rig, "a");
    prompt(&rig, "b");
    let before = messages(&rig);
    let entries_before = rig.journal.with_session(|s| s.records().len());

    rig.handle.compact(None).unwrap();
    let events = until_settled(&rig, |_| {});
    assert_eq!(events.len(), 3, "{events:#?}");
    let Event::CompactionStart {
        reason: CompactionReason::Manual,
        tokens_before,
    } = events[0]
    else {
        panic!("{events:#?}")
    };
    let Event::CompactionEnd {
        reason: CompactionReason::Manual,
        outcome: CompactionOutcome::Skipped,
        tokens_before: before_again,
        tokens_after: None,
        summary: None,
        summarized_messages: None,
        kept_messages: None,
        usage: None,
        error: Some(error),
        detail: None,
    } = &events[1]
    else {
        panic!("{events:#?}")
    };
    assert_eq!(*before_again, tokens_before);
    // A manual compaction would summarize the first turn; even the
    // shortest useful summary is larger than it.
    let shortest = estimate_tokens(&summary_message(&" ".repeat(MIN_SUMMARY_BYTES)));
    let would_be = tokens_before - estimate_all(&before[..2]) + shortest;
    assert!(would_be > tokens_before, "{would_be} {tokens_before}");
    assert_eq!(error.kind, "no_gain");
    assert_eq!(
        error.message,
        format!(
            "nothing to gain — the conversation is about {tokens_before} tokens and even the shortest useful summary (about {shortest} tokens, for the 2 older message(s) it would replace) would leave about {would_be} tokens, so no summary was asked for and nothing was changed; compact again when the conversation has grown, or with instructions asking for a shorter summary"
        )
    );
    assert_eq!(events[2], Event::Settled);
    // No request, no entry, the context as it was.
    assert_eq!(requests(&rig.record).len(), 2);
    assert_eq!(messages(&rig), before);
    assert_eq!(
        rig.journal.with_session(|s| s.records().len()),
        entries_before
    );
    assert!(!has_compaction_entry(&rig));
    rig.handle.shutdown();
}

#[test]
fn a_summary_no_shorter_than_what_it_replaces_is_not_used_and_nothing_changes() {
    let summary = "The user asked at length; every detail is worth keeping. ".repeat(40);
    let rig = rig(&format!(
        r#"{{
      "responses": [
        [{{"text": "one"}}, {{"stop": {{"reason": "end"}}}}],
        [{{"text": "two"}}, {{"stop": {{"reason": "end"}}}}],
        [{{"text": "three"}}, {{"stop": {{"reason": "end"}}}}]
      ],
      "summaries": [
        [{{"text": "{summary}"}}, {{"usage": {{"input": 500, "output": 700}}}}, {{"stop": {{"reason": "end"}}}}]
      ]
    }}"#
    ));
    prompt(&rig, &long("a"));
    prompt(&rig, "b");
    let before = messages(&rig);
    let entries_before = rig.journal.with_session(|s| s.records().len());

    rig.handle.compact(Some("keep everything")).unwrap();
    let events = until_settled(&rig, |_| {});
    let Event::CompactionStart { tokens_before, .. } = events[0] else {
        panic!("{events:#?}")
    };
    let Event::CompactionEnd {
        outcome: CompactionOutcome::Skipped,
        tokens_after: None,
        summary: None,
        usage: Some(usage),
        error: Some(error),
        ..
    } = end_of(&events)
    else {
        panic!("{events:#?}")
    };
    // The request was answered and paid for: its usage is reported.
    assert_eq!((usage.input, usage.output), (Some(500), Some(700)));
    let would_be = tokens_before - estimate_all(&before[..2])
        + estimate_tokens(&summary_message(summary.trim()));
    assert!(would_be >= tokens_before, "{would_be} {tokens_before}");
    assert_eq!(error.kind, "no_gain");
    assert_eq!(
        error.message,
        format!(
            "nothing to gain — the conversation is about {tokens_before} tokens and with its summary it would be about {would_be} tokens, so the summary was not used and nothing was changed; compact again when the conversation has grown, or with instructions asking for a shorter summary"
        )
    );
    let sent = requests(&rig.record);
    assert_eq!(sent.iter().filter(|r| is_summary_request(r)).count(), 1);
    assert_eq!(messages(&rig), before);
    assert_eq!(
        rig.journal.with_session(|s| s.records().len()),
        entries_before
    );
    assert!(!has_compaction_entry(&rig));
    // The next request carries the conversation as it was.
    prompt(&rig, "c");
    let sent = requests(&rig.record);
    let mut expected = before.clone();
    expected.push(user("c"));
    assert_eq!(sent.last().unwrap().messages, expected);
    rig.handle.shutdown();
}

#[test]
fn when_a_summary_gains_nothing_the_cheap_stage_alone_is_applied() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.auto = false;
    config.compaction.keep_recent_tokens = 50;
    // Longer than the pruned first turn (whose 24,000-byte read result the
    // cheap stage cuts to about 4,096 bytes), shorter than it was whole.
    let summary = "Everything the user and the model said, word for word. ".repeat(110);
    let rig = rig_with(
        &format!(
            r#"{{
          "responses": [
            [{{"tool_call": {{"id": "r1", "name": "read", "arguments": {{"path": "big.txt"}}}}}}, {{"stop": {{"reason": "tool_use"}}}}],
            [{{"text": "read it"}}, {{"stop": {{"reason": "end"}}}}],
            [{{"text": "second answer"}}, {{"stop": {{"reason": "end"}}}}]
          ],
          "summaries": [
            [{{"text": "{summary}"}}, {{"usage": {{"input": 3000, "output": 2000}}}}, {{"stop": {{"reason": "end"}}}}]
          ]
        }}"#
        ),
        config,
    );
    let text: String = (0..1_000)
        .map(|i| format!("line {i:05} of big.txt ..\n"))
        .collect();
    std::fs::write(rig.work.path().join("big.txt"), text).unwrap();
    prompt(&rig, "read big.txt");
    prompt(&rig, "and now?");
    let before = messages(&rig);
    assert_eq!(before.len(), 6, "{before:#?}");

    rig.handle.compact(None).unwrap();
    let events = until_settled(&rig, |_| {});
    let Event::CompactionStart { tokens_before, .. } = events[0] else {
        panic!("{events:#?}")
    };
    let Event::CompactionEnd {
        reason: CompactionReason::Manual,
        outcome: CompactionOutcome::Compacted,
        tokens_after: Some(tokens_after),
        summary: None,
        summarized_messages: Some(0),
        kept_messages: Some(6),
        usage: Some(usage),
        error: Some(error),
        detail: Some(detail),
        ..
    } = end_of(&events)
    else {
        panic!("{events:#?}")
    };
    assert_eq!(usage.output, Some(2000));
    // The recent turn (from index 4) is kept as it is; the read before it
    // is cut.
    let (pruned, _, saved) = smith_engine::agent::compact::prune(&before, 4);
    assert!(saved > 0);
    assert_eq!(*tokens_after, tokens_before - saved);
    assert_eq!(
        (
            detail.thinking_dropped,
            detail.results_clipped,
            detail.reads_superseded
        ),
        (0, 1, 0)
    );
    let would_be = tokens_before - estimate_all(&before[..4])
        + estimate_tokens(&summary_message(summary.trim()));
    assert!(would_be < tokens_before, "smaller than the whole history");
    assert!(would_be >= *tokens_after, "but not than the pruned one");
    assert_eq!(error.kind, "no_gain");
    assert_eq!(
        error.message,
        format!(
            "nothing to gain from a summary — the conversation is about {tokens_before} tokens and with its summary it would be about {would_be} tokens, no fewer than the {tokens_after} the cheap stage alone leaves, so the summary was not used; only the cheap stage was applied (it saved about {saved} tokens)"
        )
    );
    assert_eq!(messages(&rig), pruned);
    // Only the context changed: nothing was recorded.
    assert!(!has_compaction_entry(&rig));
    rig.handle.shutdown();
}

#[test]
fn an_overflow_compaction_that_cannot_gain_ends_the_run_with_the_overflow_error() {
    let rig = rig(r#"[
      [{"text": "one"}, {"stop": {"reason": "end"}}],
      [{"error": {"kind": "context_overflow", "message": "prompt is too long"}}],
      [{"text": "never sent"}, {"stop": {"reason": "end"}}]
    ]"#);
    prompt(&rig, "a");
    let before = messages(&rig);
    let events = prompt(&rig, "b");
    assert_eq!(stop_of(&events), StopCause::Error, "{events:#?}");
    let compaction = compaction_events(&events);
    assert_eq!(compaction.len(), 2, "{events:#?}");
    assert!(
        matches!(
            compaction[1],
            Event::CompactionEnd {
                reason: CompactionReason::Overflow,
                outcome: CompactionOutcome::Skipped,
                error: Some(e),
                ..
            } if e.kind == "no_gain"
        ),
        "{events:#?}"
    );
    let errors: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Error(info) => Some((info.kind.as_str(), info.message.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(errors, vec![("context_overflow", "prompt is too long")]);
    // a, b: no summary request, no retry.
    assert_eq!(requests(&rig.record).len(), 2);
    // Nothing was summarized: the conversation, the prompt and the failed
    // response as the run records it.
    let mut expected = before;
    expected.push(user("b"));
    expected.push(Message::Assistant {
        content: Vec::new(),
        stop: StopReason::Error,
    });
    assert_eq!(messages(&rig), expected);
    assert!(!has_compaction_entry(&rig));
    rig.handle.shutdown();
}

#[test]
fn a_threshold_compaction_that_cannot_gain_is_not_tried_again_in_the_run() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.compaction.context_window = Some(10_000);
    config.compaction.reserve_tokens = 2_000;
    config.compaction.keep_recent_tokens = 5;
    // Every response reports 8,900 tokens of context: over 8,000 before
    // each request of the second run.
    let rig = rig_with(
        r#"[
          [{"text": "one"}, {"usage": {"input": 8880, "output": 20}}, {"stop": {"reason": "end"}}],
          [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"usage": {"input": 8880, "output": 20}}, {"stop": {"reason": "tool_use"}}],
          [{"text": "done"}, {"usage": {"input": 8880, "output": 20}}, {"stop": {"reason": "end"}}]
        ]"#,
        config,
    );
    prompt(&rig, "a");
    let events = prompt(&rig, "b");
    assert_eq!(stop_of(&events), StopCause::Done, "{events:#?}");
    let compaction = compaction_events(&events);
    assert_eq!(compaction.len(), 2, "one attempt: {events:#?}");
    assert!(
        matches!(
            compaction[1],
            Event::CompactionEnd {
                reason: CompactionReason::Threshold,
                outcome: CompactionOutcome::Skipped,
                error: Some(e),
                ..
            } if e.kind == "no_gain"
        ),
        "{events:#?}"
    );
    let sent = requests(&rig.record);
    assert_eq!(sent.len(), 3);
    assert!(!sent.iter().any(is_summary_request));
    assert!(!has_compaction_entry(&rig));
    rig.handle.shutdown();
}
