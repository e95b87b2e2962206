//! Replay: a scripted tool-using session recorded in a session store plays
//! back as the live event sequence (modulo the documented differences),
//! deterministically, by turn, and `compare` re-executes effects without
//! ever running an unknown one.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use smith_engine::agent::{self, AgentConfig, Services, default_policies};
use smith_engine::journal::store::StoreJournal;
use smith_engine::journal::{
    BUILTIN_GENERATION, EffectIntent, EffectJournal, MessageMeta, SessionEvent, SessionSink,
    canonical_cbor,
};
use smith_engine::protocol::{Command, Event, JsonLines, MutationState, StopCause, ToolStatus};
use smith_engine::provider::scripted::{MOCK_MODEL, parse_script};
use smith_engine::provider::{ContentBlock, HostTransport, Message, StopReason, ToolCall};
use smith_engine::replay::{Pace, Recording, TurnRange, Verdict, compare, copy_tree};
use smith_engine::tools::{ToolContext, ToolSet};
use smith_store::Store;
use smith_testkit::ScriptedProvider;

const SCRIPT: &str = r#"[
    [{"text": "Reading."}, {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"usage": {"input": 10, "output": 5}}, {"stop": {"reason": "tool_use"}}],
    [{"thinking": "a shell is quicker"}, {"tool_call": {"id": "c2", "name": "bash", "arguments": {"command": "echo from-bash > out.txt; echo printed"}}}, {"usage": {"input": 20, "output": 5}}, {"stop": {"reason": "tool_use"}}],
    [{"tool_call": {"id": "c3", "name": "edit", "arguments": {"path": "notes.txt", "old_text": "hello", "new_text": "goodbye"}}}, {"usage": {"input": 25, "output": 5}}, {"stop": {"reason": "tool_use"}}],
    [{"text": "All "}, {"text": "done."}, {"usage": {"input": 30, "output": 2}}, {"stop": {"reason": "end"}}]
]"#;

/// Runs `script` for `prompt` in `work`, recording into session `name` of
/// the store at `home`; returns the live events.
fn record_session(home: &Path, work: &Path, name: &str, script: &str, prompt: &str) -> Vec<Event> {
    let store = Store::open(home).unwrap();
    let session = store.create(Some(name)).unwrap();
    let journal = Arc::new(StoreJournal::new(store, session));
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.system = Some("You are a test agent.".into());
    let services = Services {
        provider: Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap())),
        transport: Arc::new(HostTransport),
        tools: ToolSet::builtin(),
        tool_context: ToolContext::new(work)
            .unwrap()
            .with_output_dir(home.join("outputs")),
        journal: journal.clone(),
        sink: journal,
        policies: default_policies(),
    };
    let handle = agent::spawn(config, services).unwrap();
    handle
        .send(Command::Prompt {
            text: prompt.into(),
        })
        .unwrap();
    let mut events = Vec::new();
    loop {
        let event = handle.recv_timeout(Duration::from_secs(30)).unwrap();
        let settled = event == Event::Settled;
        events.push(event);
        if settled {
            break;
        }
    }
    handle.shutdown();
    events
}

fn recording(home: &Path, name: &str) -> Recording {
    let store = Store::open(home).unwrap();
    Recording::from_session(&store.load(name).unwrap()).unwrap()
}

fn replayed(recording: &Recording, turns: Option<TurnRange>) -> Vec<Event> {
    let mut events = Vec::new();
    recording
        .play(turns, Pace::Instant, |event| -> Result<(), ()> {
            events.push(event.clone());
            Ok(())
        })
        .unwrap();
    events
}

/// The documented differences: deltas are coalesced per content block, and
/// live output pieces and queue notices are not replayed.
fn normalized(events: &[Event]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for event in events {
        match (out.last_mut(), event) {
            (_, Event::ToolExecutionUpdate { .. } | Event::QueueChanged { .. }) => {}
            (Some(Event::MessageDelta { text }), Event::MessageDelta { text: more })
            | (Some(Event::ThinkingDelta { text }), Event::ThinkingDelta { text: more }) => {
                text.push_str(more);
            }
            _ => out.push(event.clone()),
        }
    }
    out
}

fn json_bytes(events: &[Event]) -> Vec<u8> {
    let mut lines = JsonLines::start(Vec::new()).unwrap();
    for event in events {
        lines.write(event).unwrap();
    }
    lines.into_inner()
}

fn setup() -> (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "hello world\n").unwrap();
    // The workspace as it was before the run, for compare.
    let before = tempfile::tempdir().unwrap();
    copy_tree(work.path(), before.path()).unwrap();
    (home, work, before)
}

#[test]
fn replay_reproduces_the_live_event_sequence() {
    let (home, work, _before) = setup();
    let live = record_session(home.path(), work.path(), "s", SCRIPT, "tidy the notes");
    assert!(
        live.iter()
            .any(|e| matches!(e, Event::ToolExecutionUpdate { .. })),
        "bash streamed output live"
    );
    let recording = recording(home.path(), "s");
    let replay = replayed(&recording, None);
    assert_eq!(normalized(&replay), normalized(&live));
    // Deltas are one per content block in replay.
    let deltas: Vec<&Event> = replay
        .iter()
        .filter(|e| matches!(e, Event::MessageDelta { .. }))
        .collect();
    assert_eq!(
        deltas,
        vec![
            &Event::MessageDelta {
                text: "Reading.".into()
            },
            &Event::MessageDelta {
                text: "All done.".into()
            }
        ]
    );
    assert!(replay.contains(&Event::ThinkingDelta {
        text: "a shell is quicker".into()
    }));
    assert_eq!(recording.turns, 4);
    assert_eq!(recording.effects.len(), 3);
    // The run records carry what replay and inspection need.
    let info = recording.runs[0].as_ref().unwrap();
    assert_eq!(info.system.as_deref(), Some("You are a test agent."));
    let names: Vec<&str> = info.tools.iter().map(|t| t.name.as_str()).collect();
    for tool in ["read", "write", "edit", "bash", "find", "grep", "ls"] {
        assert!(names.contains(&tool), "{names:?}");
    }
    assert_eq!(
        Path::new(&info.cwd),
        std::fs::canonicalize(work.path()).unwrap()
    );
}

#[test]
fn replay_json_is_byte_identical_across_runs_and_reopened_sessions() {
    let (home, work, _before) = setup();
    record_session(home.path(), work.path(), "s", SCRIPT, "tidy the notes");
    let first = json_bytes(&replayed(&recording(home.path(), "s"), None));
    let again = json_bytes(&replayed(&recording(home.path(), "s"), None));
    assert_eq!(first, again);
    // Reopening the store (a new process would) changes nothing.
    let reopened = Store::open(home.path()).unwrap();
    let session = reopened.load("s").unwrap();
    let third = json_bytes(&replayed(&Recording::from_session(&session).unwrap(), None));
    assert_eq!(first, third);
    // Continuing the session appends a run; the first run's replay is
    // unchanged.
    record_session_continue(home.path(), work.path());
    let longer = replayed(
        &recording(home.path(), "s"),
        Some(TurnRange::parse("1..4").unwrap()),
    );
    assert_eq!(json_bytes(&longer), first);
}

/// Appends a second run to session "s" (as `smith eval --session s` does).
fn record_session_continue(home: &Path, work: &Path) {
    let store = Store::open(home).unwrap();
    let session = store.load("s").unwrap();
    let resumed = smith_engine::journal::store::resume(&session).unwrap();
    let journal = Arc::new(StoreJournal::new(store, session));
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.history = resumed.history;
    config.first_effect_seq = resumed.last_effect_seq;
    let services = Services {
        provider: Box::new(ScriptedProvider::new(
            parse_script(r#"[[{"text": "again"}, {"stop": {"reason": "end"}}]]"#, "t").unwrap(),
        )),
        transport: Arc::new(HostTransport),
        tools: ToolSet::builtin(),
        tool_context: ToolContext::new(work).unwrap(),
        journal: journal.clone(),
        sink: journal,
        policies: default_policies(),
    };
    let handle = agent::spawn(config, services).unwrap();
    handle
        .send(Command::Prompt {
            text: "more".into(),
        })
        .unwrap();
    while handle.recv_timeout(Duration::from_secs(30)).unwrap() != Event::Settled {}
    handle.shutdown();
}

#[test]
fn turns_select_session_wide_turns_inside_their_run() {
    let (home, work, _before) = setup();
    record_session(home.path(), work.path(), "s", SCRIPT, "tidy the notes");
    record_session_continue(home.path(), work.path());
    let recording = recording(home.path(), "s");
    assert_eq!(recording.turns, 5);
    let events = replayed(&recording, Some(TurnRange::parse("2..3").unwrap()));
    let turns: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Event::TurnStart { turn } => Some(*turn),
            _ => None,
        })
        .collect();
    assert_eq!(
        turns,
        vec![2, 3],
        "turn numbers stay as recorded in the run"
    );
    assert_eq!(events.first(), Some(&Event::AgentStart));
    assert_eq!(events.last(), Some(&Event::Settled));
    assert!(
        !events.iter().any(|e| matches!(
            e,
            Event::MessageEnd {
                message: Message::User { .. },
                ..
            }
        )),
        "the prompt belongs to turn 1"
    );
    let ends: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec!["bash", "edit"]);
    // Turn 5 is the second run's only turn, with its prompt.
    let last = replayed(&recording, Some(TurnRange::parse("5").unwrap()));
    assert!(last.contains(&Event::MessageEnd {
        message: Message::User {
            text: "more".into(),
            media: Vec::new(),
        },
        usage: None
    }));
    assert_eq!(last.iter().filter(|e| **e == Event::AgentStart).count(), 1);
    assert!(recording.check(TurnRange::parse("6..9").unwrap()).is_err());
    // Effects follow the selection too.
    let ids: Vec<&str> = recording
        .selected_effects(Some(TurnRange::parse("2..3").unwrap()))
        .iter()
        .map(|e| e.effect_id.as_str())
        .collect();
    assert_eq!(ids, vec!["fx-2", "fx-3"]);
}

#[test]
fn compare_matches_a_faithful_workspace_and_reports_divergence() {
    let (home, work, before) = setup();
    record_session(home.path(), work.path(), "s", SCRIPT, "tidy the notes");
    let recording = recording(home.path(), "s");
    let effects = recording.selected_effects(None);

    // A copy of the workspace as it was before the run reproduces every effect.
    let scratch = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    copy_tree(before.path(), scratch.path()).unwrap();
    let results = compare(
        &effects,
        &ToolSet::builtin(),
        scratch.path(),
        outputs.path(),
    )
    .unwrap();
    let verdicts: Vec<(&str, &Verdict)> = results
        .iter()
        .map(|c| (c.effect_id.as_str(), &c.verdict))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("fx-1", &Verdict::Match),
            ("fx-2", &Verdict::Match),
            ("fx-3", &Verdict::Match)
        ]
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("notes.txt")).unwrap(),
        "goodbye world\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "goodbye world\n",
        "the recorded workspace is untouched by compare"
    );

    // The file changed between recording and compare: the read diverges
    // (content), and the edit finds no "hello" to replace.
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(before.path(), scratch.path()).unwrap();
    std::fs::write(scratch.path().join("notes.txt"), "hello there\n").unwrap();
    let results = compare(
        &effects,
        &ToolSet::builtin(),
        scratch.path(),
        outputs.path(),
    )
    .unwrap();
    let Verdict::Diverged { divergences } = &results[0].verdict else {
        panic!("the read must diverge: {:?}", results[0]);
    };
    assert_eq!(results[0].effect_id, "fx-1");
    let content = divergences.iter().find(|d| d.field == "content").unwrap();
    assert!(content.expected.as_str().unwrap().contains("hello world"));
    assert!(content.got.as_str().unwrap().contains("hello there"));
    assert_eq!(
        results[1].verdict,
        Verdict::Match,
        "bash does not depend on the file"
    );
    // The edit still finds one "hello", but its diff shows the other line.
    let Verdict::Diverged { divergences } = &results[2].verdict else {
        panic!("the edit's diff must diverge: {:?}", results[2]);
    };
    let fields: Vec<&str> = divergences.iter().map(|d| d.field.as_str()).collect();
    assert!(fields.contains(&"content"), "{divergences:?}");
    assert!(
        !fields.contains(&"mutation"),
        "it still applied: {divergences:?}"
    );
}

#[test]
fn an_effect_recorded_without_completion_replays_as_unknown_and_is_never_run() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let store = Store::open(home.path()).unwrap();
    let session = store.create(Some("crash")).unwrap();
    let journal = StoreJournal::new(store, session);
    let call = ToolCall {
        id: "slow".into(),
        name: "bash".into(),
        arguments: json!({"command": "touch ran.txt"}),
    };
    journal
        .record(&SessionEvent::Message {
            message: Message::user("go"),
            meta: MessageMeta::default(),
        })
        .unwrap();
    journal
        .record(&SessionEvent::Message {
            message: Message::Assistant {
                content: vec![ContentBlock::ToolCall(call.clone())],
                stop: StopReason::ToolUse,
            },
            meta: MessageMeta::default(),
        })
        .unwrap();
    journal
        .record_intent(&EffectIntent {
            effect_id: "fx-1".into(),
            parent: "slow".into(),
            tool: "bash".into(),
            plugin_generation: BUILTIN_GENERATION,
            input: canonical_cbor(&call.arguments).unwrap(),
        })
        .unwrap();
    drop(journal);

    let recording = recording(home.path(), "crash");
    let events = replayed(&recording, None);
    let end = events
        .iter()
        .find_map(|e| match e {
            Event::ToolExecutionEnd {
                status,
                mutation,
                effect_id,
                ..
            } => Some((*status, *mutation, effect_id.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        end,
        (
            ToolStatus::Aborted,
            Some(MutationState::Unknown),
            Some("fx-1".to_owned())
        )
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Error(info) if info.kind == "interrupted"))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::AgentEnd {
            stop: StopCause::Aborted,
            ..
        }
    )));

    let scratch = tempfile::tempdir().unwrap();
    copy_tree(work.path(), scratch.path()).unwrap();
    let results = compare(
        &recording.selected_effects(None),
        &ToolSet::builtin(),
        scratch.path(),
        work.path(),
    )
    .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].verdict, Verdict::SkippedUnknown);
    assert!(!scratch.path().join("ran.txt").exists(), "never re-run");
    assert!(!work.path().join("ran.txt").exists(), "never re-run");
}
