//! The agent loop driven by the scripted provider: ordered durable records,
//! queue policies, abort at every stage, stream failures, output limits,
//! validation before effects and the journal's failure rules.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_engine::agent::{self, AgentConfig, AgentHandle, Services, default_policies};
use smith_engine::journal::{
    EffectState, FailureSwitch, MemoryJournal, Outcome, Record, SessionEvent, effect_states,
};
use smith_engine::protocol::{Command, Event, MutationState, Role, StopCause, ToolStatus};
use smith_engine::provider::record::RecordingProvider;
use smith_engine::provider::scripted::{MOCK_MODEL, parse_script};
use smith_engine::provider::{
    ContentBlock, HostTransport, Message, Provider, Request, StopReason, ToolCall, Usage,
};
use smith_engine::tools::{
    Access, CancelCheck, Mutation, Tool, ToolContext, ToolDefinition, ToolResult, ToolSet,
};
use smith_testkit::ScriptedProvider;

struct Harness {
    handle: AgentHandle,
    journal: Arc<MemoryJournal>,
    dir: tempfile::TempDir,
}

fn harness_with(
    script: &str,
    config: AgentConfig,
    tools: ToolSet,
    journal: Arc<MemoryJournal>,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    harness_in(dir, script, config, tools, journal, None)
}

fn harness_in(
    dir: tempfile::TempDir,
    script: &str,
    config: AgentConfig,
    tools: ToolSet,
    journal: Arc<MemoryJournal>,
    record: Option<&Path>,
) -> Harness {
    let mut provider: Box<dyn Provider> =
        Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap()));
    if let Some(path) = record {
        provider = Box::new(RecordingProvider::new(provider, path).unwrap());
    }
    let tool_context = ToolContext::new(dir.path())
        .unwrap()
        .with_output_dir(dir.path().join(".smith-output"));
    let services = Services {
        provider,
        transport: Arc::new(HostTransport),
        tools,
        tool_context,
        journal: journal.clone(),
        sink: journal.clone(),
        policies: default_policies(),
    };
    let handle = agent::spawn(config, services).unwrap();
    Harness {
        handle,
        journal,
        dir,
    }
}

fn harness(script: &str) -> Harness {
    harness_with(
        script,
        AgentConfig::new(MOCK_MODEL),
        ToolSet::builtin(),
        Arc::new(MemoryJournal::new()),
    )
}

/// Collects events until `settled`, calling `react` on each.
fn collect(h: &Harness, mut react: impl FnMut(&Event, &AgentHandle)) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let event = h
            .handle
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|timeout| panic!("no event (timeout: {timeout}); so far: {events:#?}"));
        react(&event, &h.handle);
        let settled = event == Event::Settled;
        events.push(event);
        if settled {
            return events;
        }
    }
}

fn prompt(h: &Harness, text: &str) -> Vec<Event> {
    h.handle
        .send(Command::Prompt { text: text.into() })
        .unwrap();
    collect(h, |_, _| {})
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

fn tool_ends(events: &[Event]) -> Vec<(String, ToolStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd { name, status, .. } => Some((name.clone(), *status)),
            _ => None,
        })
        .collect()
}

fn error_kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Error(info) => Some(info.kind.clone()),
            _ => None,
        })
        .collect()
}

/// A compact, ordered view of the durable records.
fn record_view(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|record| match record {
            Record::Intent(i) => format!("intent {} {} parent={}", i.effect_id, i.tool, i.parent),
            Record::Completion(c) => {
                format!(
                    "completion {} {} {}",
                    c.effect_id,
                    c.outcome.as_str(),
                    c.mutation.as_str()
                )
            }
            Record::Event(SessionEvent::ModelChange { provider, model }) => {
                format!("model {provider}/{model}")
            }
            Record::Event(SessionEvent::Compaction { compaction }) => format!(
                "compaction {} summarized={} kept={}",
                compaction.reason, compaction.summarized_messages, compaction.kept_messages
            ),
            Record::Event(SessionEvent::Message { message, .. }) => match message {
                Message::User { text, .. } => format!("user {text}"),
                Message::Assistant { content, stop } => {
                    let calls: Vec<String> = content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::ToolCall(c) => Some(format!("{}:{}", c.id, c.name)),
                            _ => None,
                        })
                        .collect();
                    format!(
                        "assistant {stop:?} [{}] {:?}",
                        calls.join(","),
                        message.text()
                    )
                }
                Message::ToolResult {
                    call_id, is_error, ..
                } => format!("result {call_id} error={is_error}"),
            },
        })
        .collect()
}

#[test]
fn a_scripted_tool_using_turn_leaves_ordered_durable_records() {
    let h = harness(
        r#"[
        [{"text": "Reading."}, {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"usage": {"input": 10, "output": 5}}, {"stop": {"reason": "tool_use"}}],
        [{"tool_call": {"id": "c2", "name": "bash", "arguments": {"command": "echo from-bash > out.txt"}}}, {"stop": {"reason": "tool_use"}}],
        [{"tool_call": {"id": "c3", "name": "edit", "arguments": {"path": "notes.txt", "old_text": "hello", "new_text": "goodbye"}}}, {"stop": {"reason": "tool_use"}}],
        [{"text": "All "}, {"text": "done."}, {"usage": {"input": 30, "output": 2}}, {"stop": {"reason": "end"}}]
    ]"#,
    );
    std::fs::write(h.dir.path().join("notes.txt"), "hello world\n").unwrap();
    let events = prompt(&h, "tidy the notes");
    assert_eq!(stop_of(&events), StopCause::Done);
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("notes.txt")).unwrap(),
        "goodbye world\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("out.txt")).unwrap(),
        "from-bash\n"
    );
    assert_eq!(
        record_view(&h.journal.records()),
        vec![
            "model mock/mock-1",
            "user tidy the notes",
            "assistant ToolUse [c1:read] \"Reading.\"",
            "intent fx-1 read parent=c1",
            "completion fx-1 ok not-applied",
            "result c1 error=false",
            "assistant ToolUse [c2:bash] \"\"",
            "intent fx-2 bash parent=c2",
            "completion fx-2 ok applied",
            "result c2 error=false",
            "assistant ToolUse [c3:edit] \"\"",
            "intent fx-3 edit parent=c3",
            "completion fx-3 ok applied",
            "result c3 error=false",
            "assistant End [] \"All done.\"",
        ]
    );
    // The protocol brackets: one run, four turns, every call answered.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::AgentStart => Some("agent_start"),
            Event::TurnStart { .. } => Some("turn_start"),
            Event::TurnEnd { .. } => Some("turn_end"),
            Event::ToolCall { .. } => Some("tool_call"),
            Event::ToolExecutionStart { .. } => Some("exec_start"),
            Event::ToolExecutionEnd { .. } => Some("exec_end"),
            Event::AgentEnd { .. } => Some("agent_end"),
            Event::Settled => Some("settled"),
            _ => None,
        })
        .collect();
    let turn = [
        "turn_start",
        "tool_call",
        "exec_start",
        "exec_end",
        "turn_end",
    ];
    let mut expected = vec!["agent_start"];
    for _ in 0..3 {
        expected.extend(turn);
    }
    expected.extend(["turn_start", "turn_end", "agent_end", "settled"]);
    assert_eq!(kinds, expected);
    let Some(Event::AgentEnd {
        usage, cost, text, ..
    }) = events.iter().find(|e| matches!(e, Event::AgentEnd { .. }))
    else {
        panic!("agent_end expected");
    };
    // Two responses reported no usage: the totals stay unknown.
    assert_eq!(usage.input, None);
    assert_eq!(*cost, None);
    assert_eq!(text, "All done.");
    // The streamed deltas reassemble to the final message.
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "Reading.All done.");
    // Usage and tool status are recorded for replay.
    let records = h.journal.records();
    let Record::Event(SessionEvent::Message { meta, .. }) = &records[2] else {
        panic!("assistant message expected");
    };
    assert_eq!(meta.usage.and_then(|u| u.input), Some(10));
    let Record::Event(SessionEvent::Message { meta, .. }) = &records[5] else {
        panic!("tool result expected");
    };
    assert_eq!(meta.status, Some(ToolStatus::Ok));
    assert_eq!(meta.effect_id.as_deref(), Some("fx-1"));
    // Intents carry canonical CBOR of the arguments.
    let Record::Intent(first) = &h.journal.records()[3] else {
        panic!("intent expected");
    };
    let mut expected_input = Vec::new();
    smith_codec::json::to_cbor(r#"{"path":"notes.txt"}"#, &mut expected_input).unwrap();
    assert_eq!(first.input, expected_input);
    assert_eq!(first.plugin_generation, 0);
}

#[test]
fn known_usage_sums_and_prices_unknown_cost_stays_null() {
    let h = harness(
        r#"[[{"text": "a"}, {"usage": {"input": 10, "output": 5}}, {"stop": {"reason": "end"}}]]"#,
    );
    let events = prompt(&h, "hi");
    let Some(Event::AgentEnd { usage, cost, .. }) =
        events.iter().find(|e| matches!(e, Event::AgentEnd { .. }))
    else {
        panic!("agent_end expected");
    };
    assert_eq!(usage.input, Some(10));
    assert_eq!(usage.output, Some(5));
    assert_eq!(usage.cache_read, None);
    assert_eq!(*cost, None, "the mock model has no price");
}

/// A response that fails before any content: what it used is unknown when
/// it stated nothing (the run's usage stays unknown, never 0), and counts
/// as stated when it reported usage before failing.
#[test]
fn usage_of_a_response_that_failed_before_content_stays_unknown_or_as_stated() {
    let end = |events: &[Event]| -> Usage {
        match events.iter().find(|e| matches!(e, Event::AgentEnd { .. })) {
            Some(Event::AgentEnd { usage, .. }) => *usage,
            _ => panic!("agent_end expected"),
        }
    };
    // The body ends without a terminal event and without any event.
    let h = harness("[[]]");
    let events = prompt(&h, "hi");
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(error_kinds(&events), vec!["malformed_stream"]);
    assert_eq!(end(&events), Usage::default(), "nothing was stated");
    // The body states usage, then ends without content or terminal event.
    let h = harness(r#"[[{"usage": {"input": 10, "output": 2}}]]"#);
    let events = prompt(&h, "hi");
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(error_kinds(&events), vec!["malformed_stream"]);
    assert_eq!(
        end(&events),
        Usage {
            input: Some(10),
            output: Some(2),
            cache_read: None,
            cache_write: None,
        }
    );
    let records = h.journal.records();
    let Record::Event(SessionEvent::Message { meta, .. }) = &records[2] else {
        panic!(
            "the failed assistant message expected: {:?}",
            record_view(&records)
        );
    };
    assert_eq!(
        meta.usage.and_then(|u| u.input),
        Some(10),
        "the failed message keeps the stated usage"
    );
}

#[test]
fn read_only_calls_run_in_parallel_and_answer_in_call_order() {
    let h = harness(
        r#"[
        [{"tool_call": {"id": "a", "name": "ls", "arguments": {}}},
         {"tool_call": {"id": "b", "name": "read", "arguments": {"path": "x.txt"}}},
         {"tool_call": {"id": "c", "name": "find", "arguments": {"pattern": "*.txt"}}},
         {"tool_call": {"id": "d", "name": "write", "arguments": {"path": "y.txt", "content": "y"}}},
         {"tool_call": {"id": "e", "name": "read", "arguments": {"path": "y.txt"}}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "ok"}, {"stop": {"reason": "end"}}]
    ]"#,
    );
    std::fs::write(h.dir.path().join("x.txt"), "x\n").unwrap();
    let events = prompt(&h, "look");
    let ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, vec!["a", "b", "c", "d", "e"]);
    assert!(
        tool_ends(&events).iter().all(|(_, s)| *s == ToolStatus::Ok),
        "{events:#?}"
    );
    // The write ran after the parallel group and before the last read.
    let results: Vec<String> = record_view(&h.journal.records())
        .into_iter()
        .filter(|r| r.starts_with("result") || r.starts_with("intent"))
        .collect();
    let d = results.iter().position(|r| r.contains("parent=d")).unwrap();
    let e = results.iter().position(|r| r.contains("parent=e")).unwrap();
    assert!(
        results[..d]
            .iter()
            .filter(|r| r.starts_with("intent"))
            .count()
            == 3
    );
    assert!(d < e);
}

#[test]
fn calls_are_validated_before_any_effect() {
    let h = harness(
        r#"[
        [{"tool_call": {"id": "a", "name": "rm", "arguments": {"path": "x"}}},
         {"tool_call": {"id": "b", "name": "write", "arguments": {"path": "made.txt"}}},
         {"tool_call": {"id": "c", "name": "bash", "arguments": {"command": 5}}},
         {"event": {"type": "tool_call_start", "id": "d", "name": "bash"}},
         {"event": {"type": "tool_call_delta", "id": "d", "arguments": "{not json"}},
         {"event": {"type": "tool_call_end", "id": "d"}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "sorry"}, {"stop": {"reason": "end"}}]
    ]"#,
    );
    let events = prompt(&h, "go");
    assert_eq!(
        tool_ends(&events),
        vec![
            ("rm".into(), ToolStatus::Invalid),
            ("write".into(), ToolStatus::Invalid),
            ("bash".into(), ToolStatus::Invalid),
            ("bash".into(), ToolStatus::Invalid),
        ]
    );
    assert!(!h.dir.path().join("made.txt").exists());
    assert!(
        h.journal
            .records()
            .iter()
            .all(|r| !matches!(r, Record::Intent(_))),
        "no effect may be recorded or run for an invalid call"
    );
    let contents: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(
        contents[0].contains("no active tool named `rm`"),
        "{}",
        contents[0]
    );
    assert!(contents[1].contains("content"), "{}", contents[1]);
    assert_eq!(stop_of(&events), StopCause::Done);
}

#[test]
fn steer_skips_calls_not_started_then_is_delivered() {
    let h = harness(
        r#"[
        [{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "sleep 0.4; echo first > first.txt"}}},
         {"tool_call": {"id": "b", "name": "bash", "arguments": {"command": "echo second > second.txt"}}},
         {"tool_call": {"id": "c", "name": "ls", "arguments": {}}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "changing course"}, {"stop": {"reason": "end"}}]
    ]"#,
    );
    h.handle
        .send(Command::Prompt {
            text: "work".into(),
        })
        .unwrap();
    let events = collect(&h, |event, handle| {
        if matches!(event, Event::ToolExecutionStart { call_id, .. } if call_id == "a") {
            handle
                .send(Command::Steer {
                    text: "stop, do X".into(),
                })
                .unwrap();
        }
    });
    assert_eq!(
        tool_ends(&events),
        vec![
            ("bash".into(), ToolStatus::Ok),
            ("bash".into(), ToolStatus::Skipped),
            ("ls".into(), ToolStatus::Skipped),
        ]
    );
    assert!(
        h.dir.path().join("first.txt").exists(),
        "the running call finishes"
    );
    assert!(
        !h.dir.path().join("second.txt").exists(),
        "no new call starts"
    );
    assert_eq!(
        record_view(&h.journal.records())[2..],
        [
            "assistant ToolUse [a:bash,b:bash,c:ls] \"\"",
            "intent fx-1 bash parent=a",
            "completion fx-1 ok applied",
            "result a error=false",
            "result b error=true",
            "result c error=true",
            "user stop, do X",
            "assistant End [] \"changing course\"",
        ]
    );
    assert_eq!(stop_of(&events), StopCause::Done);
    let queue_events: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::QueueChanged { items } => Some(items.len()),
            _ => None,
        })
        .collect();
    assert_eq!(queue_events, vec![1, 0]);
}

#[test]
fn follow_up_waits_until_the_agent_would_stop() {
    let h = harness(
        r#"[
        [{"text": "first "}, {"delay_ms": 200}, {"tool_call": {"id": "a", "name": "ls", "arguments": {}}}, {"stop": {"reason": "tool_use"}}],
        [{"text": "answer one"}, {"stop": {"reason": "end"}}],
        [{"text": "answer two"}, {"stop": {"reason": "end"}}]
    ]"#,
    );
    h.handle
        .send(Command::Prompt { text: "one".into() })
        .unwrap();
    let mut sent = false;
    let events = collect(&h, |event, handle| {
        if !sent && matches!(event, Event::MessageDelta { .. }) {
            sent = true;
            handle
                .send(Command::FollowUp { text: "two".into() })
                .unwrap();
        }
    });
    assert_eq!(
        record_view(&h.journal.records())[1..],
        [
            "user one",
            "assistant ToolUse [a:ls] \"first \"",
            "intent fx-1 ls parent=a",
            "completion fx-1 ok not-applied",
            "result a error=false",
            "assistant End [] \"answer one\"",
            "user two",
            "assistant End [] \"answer two\"",
        ]
    );
    assert_eq!(tool_ends(&events), vec![("ls".into(), ToolStatus::Ok)]);
    assert_eq!(
        events.iter().filter(|e| **e == Event::AgentStart).count(),
        1
    );
    assert_eq!(stop_of(&events), StopCause::Done);
}

#[test]
fn queued_input_on_an_idle_agent_starts_a_run() {
    let h = harness(r#"[[{"text": "hi"}, {"stop": {"reason": "end"}}]]"#);
    h.handle
        .send(Command::FollowUp {
            text: "later".into(),
        })
        .unwrap();
    let events = collect(&h, |_, _| {});
    assert_eq!(stop_of(&events), StopCause::Done);
    assert_eq!(
        h.journal.messages()[0],
        Message::User {
            text: "later".into(),
            media: Vec::new(),
        }
    );
}

#[test]
fn abort_during_a_stream_keeps_what_arrived() {
    let h = harness(
        r#"[[{"text": "partial "}, {"delay_ms": 20000}, {"text": "never"}, {"stop": {"reason": "end"}}]]"#,
    );
    let started = Instant::now();
    h.handle
        .send(Command::Prompt { text: "go".into() })
        .unwrap();
    let events = collect(&h, |event, handle| {
        if matches!(event, Event::MessageDelta { .. }) {
            handle.send(Command::Abort).unwrap();
        }
    });
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(stop_of(&events), StopCause::Aborted);
    assert_eq!(
        record_view(&h.journal.records())[1..],
        ["user go", "assistant Abort [] \"partial \""]
    );
}

#[test]
fn abort_during_bash_records_the_completion_and_aborts_the_rest() {
    let h = harness(
        r#"[[{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "sleep 20"}}},
              {"tool_call": {"id": "b", "name": "write", "arguments": {"path": "w.txt", "content": "x"}}},
              {"stop": {"reason": "tool_use"}}]]"#,
    );
    let started = Instant::now();
    h.handle
        .send(Command::Prompt { text: "go".into() })
        .unwrap();
    let events = collect(&h, |event, handle| {
        if matches!(event, Event::ToolExecutionStart { .. }) {
            handle.abort();
        }
    });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bash must stop on abort"
    );
    assert_eq!(stop_of(&events), StopCause::Aborted);
    assert_eq!(
        tool_ends(&events),
        vec![
            ("bash".into(), ToolStatus::Aborted),
            ("write".into(), ToolStatus::Aborted)
        ]
    );
    let bash_end = events
        .iter()
        .find_map(|e| match e {
            Event::ToolExecutionEnd {
                mutation,
                effect_id,
                call_id,
                ..
            } if call_id == "a" => Some((*mutation, effect_id.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(bash_end.1.as_deref(), Some("fx-1"));
    assert!(
        bash_end.0.is_some(),
        "a call that ran reports mutation evidence"
    );
    let states = effect_states(&h.journal.records());
    assert_eq!(states.len(), 1, "the write never started: {states:?}");
    assert!(matches!(
        states[0].1,
        EffectState::Completed {
            outcome: Outcome::Cancelled,
            ..
        }
    ));
    assert!(!h.dir.path().join("w.txt").exists());
}

/// A read-only tool that runs until cancelled.
struct Wait(ToolDefinition);

impl Wait {
    fn new() -> Self {
        Self(ToolDefinition {
            name: "wait".into(),
            description: "waits until cancelled".into(),
            parameters: json!({"type": "object", "properties": {}}),
            access: Access::ReadOnly,
        })
    }
}

impl Tool for Wait {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    fn execute(&self, _args: &Value, cx: &ToolContext) -> ToolResult {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Err(e) = cx.cancel().check("wait", "finishing") {
                return e.into_result();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        ToolResult::ok("waited".into(), json!({}), Mutation::NotApplied)
    }
}

#[test]
fn abort_during_a_parallel_batch_cancels_every_running_call() {
    let mut tools = ToolSet::builtin();
    tools.insert(Arc::new(Wait::new()));
    let h = harness_with(
        r#"[[{"tool_call": {"id": "a", "name": "wait"}},
              {"tool_call": {"id": "b", "name": "wait"}},
              {"tool_call": {"id": "c", "name": "wait"}},
              {"tool_call": {"id": "d", "name": "bash", "arguments": {"command": "touch never"}}},
              {"stop": {"reason": "tool_use"}}]]"#,
        AgentConfig::new(MOCK_MODEL),
        tools,
        Arc::new(MemoryJournal::new()),
    );
    let started = Instant::now();
    h.handle
        .send(Command::Prompt { text: "go".into() })
        .unwrap();
    let mut starts = 0;
    let events = collect(&h, |event, handle| {
        if matches!(event, Event::ToolExecutionStart { .. }) {
            starts += 1;
            if starts == 3 {
                handle.send(Command::Abort).unwrap();
            }
        }
    });
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(stop_of(&events), StopCause::Aborted);
    assert_eq!(
        tool_ends(&events),
        vec![
            ("wait".into(), ToolStatus::Aborted),
            ("wait".into(), ToolStatus::Aborted),
            ("wait".into(), ToolStatus::Aborted),
            ("bash".into(), ToolStatus::Aborted),
        ]
    );
    let states = effect_states(&h.journal.records());
    assert_eq!(states.len(), 3, "three ran in parallel, bash never started");
    assert!(states.iter().all(|(_, s)| matches!(
        s,
        EffectState::Completed {
            outcome: Outcome::Cancelled,
            mutation: Mutation::NotApplied
        }
    )));
    assert!(!h.dir.path().join("never").exists());
    // Results stay paired and ordered after the abort.
    let tail: Vec<String> = record_view(&h.journal.records())
        .into_iter()
        .filter(|r| r.starts_with("result"))
        .collect();
    assert_eq!(
        tail,
        [
            "result a error=true",
            "result b error=true",
            "result c error=true",
            "result d error=true"
        ]
    );
}

#[test]
fn a_malformed_stream_fails_explicitly() {
    let h =
        harness(r#"[[{"text": "x"}, {"stop": {"reason": "end"}}, {"stop": {"reason": "end"}}]]"#);
    let events = prompt(&h, "go");
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(error_kinds(&events), vec!["malformed_stream"]);
    // The text that streamed before the broken event is kept (the user saw
    // it), in a message marked as failed; nothing else of it is used.
    assert_eq!(
        record_view(&h.journal.records())[1..],
        ["user go", "assistant Error [] \"x\""]
    );
}

#[test]
fn an_incomplete_stream_fails_explicitly() {
    let h = harness(
        r#"[[{"text": "x"}, {"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "touch t"}}}]]"#,
    );
    let events = prompt(&h, "go");
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(error_kinds(&events), vec!["malformed_stream"]);
    assert!(!h.dir.path().join("t").exists());
    let Some(Event::Error(info)) = events.iter().find(|e| matches!(e, Event::Error(_))) else {
        panic!("error expected");
    };
    assert!(
        info.message.contains("without a stop or error event"),
        "{}",
        info.message
    );
}

#[test]
fn provider_errors_are_typed() {
    let h = harness(
        r#"[[{"error": {"kind": "rate_limit", "message": "slow down", "retry_after_ms": 1500}}]]"#,
    );
    let events = prompt(&h, "go");
    assert_eq!(stop_of(&events), StopCause::Error);
    let Some(Event::Error(info)) = events.iter().find(|e| matches!(e, Event::Error(_))) else {
        panic!("error expected");
    };
    assert_eq!(info.kind, "rate_limit");
    assert_eq!(info.retry_after_ms, Some(1500));
}

#[test]
fn cut_off_text_is_continued_with_the_partial_message_in_context() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let h = harness_in(
        tempfile::tempdir().unwrap(),
        r#"[[{"text": "part one "}, {"stop": {"reason": "limit"}}],
            [{"text": "part two"}, {"stop": {"reason": "end"}}]]"#,
        AgentConfig::new(MOCK_MODEL),
        ToolSet::builtin(),
        Arc::new(MemoryJournal::new()),
        Some(&record),
    );
    let events = prompt(&h, "write a lot");
    assert_eq!(stop_of(&events), StopCause::Done);
    let requests: Vec<Request> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].messages.last().unwrap(),
        &Message::Assistant {
            content: vec![ContentBlock::Text {
                text: "part one ".into()
            }],
            stop: StopReason::Limit
        }
    );
    assert_eq!(requests[1].tools.len(), 7);
}

#[test]
fn output_limit_continuation_stops_after_three() {
    let limit = r#"[{"text": "more "}, {"stop": {"reason": "limit"}}]"#;
    let script = format!("[{limit},{limit},{limit},{limit}]");
    let h = harness(&script);
    let events = prompt(&h, "go");
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(error_kinds(&events), vec!["output_limit"]);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::TurnStart { .. }))
            .count(),
        4,
        "the first response plus three continuations"
    );
}

#[test]
fn a_cut_off_tool_call_is_discarded_and_the_model_told_to_retry_smaller() {
    let h = harness(
        r#"[[{"text": "writing"},
             {"event": {"type": "tool_call_start", "id": "w", "name": "write"}},
             {"event": {"type": "tool_call_delta", "id": "w", "arguments": "{\"path\": \"big.txt\", \"content\": \"aaaa"}},
             {"stop": {"reason": "limit"}}],
            [{"tool_call": {"id": "w2", "name": "write", "arguments": {"path": "big.txt", "content": "small"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    );
    let events = prompt(&h, "write it");
    assert_eq!(stop_of(&events), StopCause::Done);
    let view = record_view(&h.journal.records());
    assert_eq!(view[2], "assistant Limit [] \"writing\"");
    assert!(
        view[3].starts_with("user [smith] Your tool call write (id w"),
        "{}",
        view[3]
    );
    assert!(view[3].contains("NOT executed"));
    assert_eq!(view[4], "assistant ToolUse [w2:write] \"\"");
    assert_eq!(
        effect_states(&h.journal.records()).len(),
        1,
        "only the retried call ran"
    );
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("big.txt")).unwrap(),
        "small"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { call } if call.id == "w"))
    );
}

#[test]
fn a_resumed_conversation_with_a_dangling_call_gets_aborted_results() {
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.history = vec![
        Message::User {
            text: "run it".into(),
            media: Vec::new(),
        },
        Message::Assistant {
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: "old".into(),
                name: "bash".into(),
                arguments: json!({"command": "make"}),
            })],
            stop: StopReason::ToolUse,
        },
    ];
    config.first_effect_seq = 1;
    let h = harness_with(
        r#"[[{"tool_call": {"id": "n", "name": "ls"}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "ok"}, {"stop": {"reason": "end"}}]]"#,
        config,
        ToolSet::builtin(),
        Arc::new(MemoryJournal::new()),
    );
    assert_eq!(
        record_view(&h.journal.records()),
        ["model mock/mock-1", "result old error=true"]
    );
    h.handle.send(Command::GetMessages).unwrap();
    let Some(Event::Messages { messages }) = h.handle.recv() else {
        panic!("messages expected");
    };
    assert_eq!(messages.len(), 3);
    assert!(
        matches!(&messages[2], Message::ToolResult { call_id, content, .. } if call_id == "old" && content.starts_with("Aborted"))
    );
    let events = prompt(&h, "again");
    assert_eq!(stop_of(&events), StopCause::Done);
    // Effect ids continue after the session's existing effects.
    assert!(record_view(&h.journal.records()).contains(&"intent fx-2 ls parent=n".to_owned()));
}

#[test]
fn an_intent_recording_failure_prevents_execution() {
    let journal = Arc::new(MemoryJournal::new());
    journal.set_failures(FailureSwitch {
        intents: true,
        ..FailureSwitch::default()
    });
    let h = harness_with(
        r#"[[{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "touch marker"}}},
             {"tool_call": {"id": "b", "name": "bash", "arguments": {"command": "touch marker2"}}},
             {"stop": {"reason": "tool_use"}}]]"#,
        AgentConfig::new(MOCK_MODEL),
        ToolSet::builtin(),
        journal,
    );
    let events = prompt(&h, "go");
    assert!(!h.dir.path().join("marker").exists());
    assert!(!h.dir.path().join("marker2").exists());
    assert_eq!(stop_of(&events), StopCause::Error);
    assert_eq!(
        tool_ends(&events),
        vec![
            ("bash".into(), ToolStatus::NotRecorded),
            ("bash".into(), ToolStatus::Aborted)
        ]
    );
    let Some(Event::Error(info)) = events.iter().find(|e| matches!(e, Event::Error(_))) else {
        panic!("error expected");
    };
    assert_eq!(info.kind, "journal");
    assert_eq!(info.mutation, Some(MutationState::NotApplied));
    assert_eq!(info.effect_id.as_deref(), Some("fx-1"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolExecutionStart { .. }))
    );
}

#[test]
fn a_completion_recording_failure_is_terminal_and_reports_the_mutation() {
    let journal = Arc::new(MemoryJournal::new());
    journal.set_failures(FailureSwitch {
        completions: true,
        ..FailureSwitch::default()
    });
    let h = harness_with(
        r#"[[{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "touch marker"}}},
             {"tool_call": {"id": "b", "name": "bash", "arguments": {"command": "touch marker2"}}},
             {"stop": {"reason": "tool_use"}}],
            [{"text": "must not be asked"}, {"stop": {"reason": "end"}}]]"#,
        AgentConfig::new(MOCK_MODEL),
        ToolSet::builtin(),
        journal.clone(),
    );
    let events = prompt(&h, "go");
    assert!(h.dir.path().join("marker").exists(), "the effect ran");
    assert!(
        !h.dir.path().join("marker2").exists(),
        "nothing runs after the failure"
    );
    assert_eq!(stop_of(&events), StopCause::Error);
    let Some(Event::Error(info)) = events.iter().find(|e| matches!(e, Event::Error(_))) else {
        panic!("error expected");
    };
    assert_eq!(info.kind, "journal");
    assert_eq!(info.mutation, Some(MutationState::Applied));
    assert_eq!(info.effect_id.as_deref(), Some("fx-1"));
    assert!(info.message.contains("applied"));
    // The durable records show the effect as unknown: never retried.
    assert_eq!(
        effect_states(&journal.records()),
        vec![("fx-1".to_owned(), EffectState::Unknown)]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::TurnStart { .. }))
            .count(),
        1
    );
}

#[test]
fn turn_limit_and_budget_stop_the_run() {
    let looping = r#"[{"tool_call": {"name": "ls"}}, {"usage": {"input": 100, "output": 100}}, {"stop": {"reason": "tool_use"}}]"#;
    let script = format!("[{looping},{looping},{looping}]");
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.max_turns = Some(2);
    let h = harness_with(
        &script,
        config,
        ToolSet::builtin(),
        Arc::new(MemoryJournal::new()),
    );
    assert_eq!(stop_of(&prompt(&h, "loop")), StopCause::TurnLimit);

    let mut config = AgentConfig::new(MOCK_MODEL);
    config.budget.max_tokens = Some(300);
    let h = harness_with(
        &script,
        config,
        ToolSet::builtin(),
        Arc::new(MemoryJournal::new()),
    );
    let events = prompt(&h, "loop");
    assert_eq!(stop_of(&events), StopCause::Budget);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::TurnStart { .. }))
            .count(),
        2
    );
}

#[test]
fn a_turn_limit_of_zero_sends_no_request_and_keeps_the_input() {
    let script = r#"[[{"tool_call": {"name": "ls"}}, {"stop": {"reason": "tool_use"}}]]"#;
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.max_turns = Some(0);
    let journal = Arc::new(MemoryJournal::new());
    let h = harness_with(script, config, ToolSet::builtin(), journal.clone());
    let events = prompt(&h, "hello there");
    assert_eq!(stop_of(&events), StopCause::TurnLimit);
    assert!(
        !events.iter().any(|e| matches!(
            e,
            Event::TurnStart { .. } | Event::ToolExecutionStart { .. }
        )),
        "{events:?}"
    );
    // The input is kept (recorded in the conversation), only not sent.
    let kept = journal
        .records()
        .iter()
        .filter(|r| matches!(r, Record::Event(_)))
        .map(|r| format!("{r:?}"))
        .collect::<Vec<_>>();
    assert!(kept.iter().any(|r| r.contains("hello there")), "{kept:?}");
    // No effect ran.
    assert!(effect_states(&journal.records()).is_empty());
}

#[test]
fn commands_answer_while_idle_and_busy() {
    let h = harness(r#"[[{"text": "a"}, {"delay_ms": 300}, {"stop": {"reason": "end"}}]]"#);
    h.handle.send(Command::GetState).unwrap();
    let Some(Event::State { model, busy, .. }) = h.handle.recv() else {
        panic!("state expected");
    };
    assert_eq!((model.as_str(), busy), (MOCK_MODEL, false));
    h.handle
        .send(Command::Enqueue {
            mode: "someday".into(),
            text: "x".into(),
        })
        .unwrap();
    assert!(
        matches!(h.handle.recv(), Some(Event::Error(info)) if info.kind == "unknown_queue_mode")
    );
    h.handle
        .send(Command::SetModel {
            model: "nope".into(),
        })
        .unwrap();
    assert!(
        matches!(h.handle.recv(), Some(Event::Error(info)) if info.kind == "model_unavailable")
    );
    assert_eq!(h.handle.recv(), Some(Event::Settled));
    h.handle
        .send(Command::Prompt { text: "go".into() })
        .unwrap();
    let mut rejected = false;
    let events = collect(&h, |event, handle| {
        if matches!(event, Event::MessageDelta { .. }) && !rejected {
            rejected = true;
            handle
                .send(Command::Prompt {
                    text: "second".into(),
                })
                .unwrap();
        }
    });
    assert_eq!(error_kinds(&events), vec!["busy"]);
    assert_eq!(stop_of(&events), StopCause::Done);
    let roles: Vec<Role> = events
        .iter()
        .filter_map(|e| match e {
            Event::MessageStart { role } => Some(*role),
            _ => None,
        })
        .collect();
    assert_eq!(roles, vec![Role::User, Role::Assistant]);
}

#[test]
fn abort_leaves_queued_input_queued() {
    let h = harness(
        r#"[[{"text": "slow "}, {"delay_ms": 20000}, {"stop": {"reason": "end"}}],
            [{"text": "next"}, {"stop": {"reason": "end"}}],
            [{"text": "and after"}, {"stop": {"reason": "end"}}]]"#,
    );
    h.handle
        .send(Command::Prompt { text: "go".into() })
        .unwrap();
    let mut sent = false;
    let events = collect(&h, |event, handle| {
        if !sent && matches!(event, Event::MessageDelta { .. }) {
            sent = true;
            handle
                .send(Command::FollowUp {
                    text: "after".into(),
                })
                .unwrap();
            handle.send(Command::Abort).unwrap();
        }
    });
    assert_eq!(stop_of(&events), StopCause::Aborted);
    assert_eq!(
        events.iter().filter(|e| **e == Event::AgentStart).count(),
        1
    );
    h.handle.send(Command::GetState).unwrap();
    let Some(Event::State { queue, busy, .. }) = h.handle.recv() else {
        panic!("state expected");
    };
    assert!(!busy);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0].text, "after");
    // The next prompt runs, and the follow-up is delivered when it would stop.
    let events = prompt(&h, "again");
    assert_eq!(stop_of(&events), StopCause::Done);
    let users: Vec<String> = h
        .journal
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::User { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(users, vec!["go", "again", "after"]);
}

/// The JSON projection of a whole scripted run, compared with a golden file
/// (`tests/fixtures/protocol_run.jsonl`; rewrite with `SMITH_BLESS=1` after
/// a deliberate, additive change and review the diff).
#[test]
fn the_json_projection_of_a_run_matches_the_golden_file() {
    let h = harness(
        r#"[
        [{"thinking": {"text": "plan", "signature": "c0ffee"}}, {"text": "Reading."},
         {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}},
         {"usage": {"input": 12, "output": 7}}, {"stop": {"reason": "tool_use"}}],
        [{"tool_call": {"id": "c2", "name": "edit", "arguments": {"path": "notes.txt", "old_text": "hello", "new_text": "bye"}}},
         {"tool_call": {"id": "c3", "name": "nope", "arguments": {}}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "Done."}, {"usage": {"input": 40, "output": 2, "cache_read": 30}}, {"stop": {"reason": "end"}}]
    ]"#,
    );
    std::fs::write(h.dir.path().join("notes.txt"), "hello\n").unwrap();
    let events = prompt(&h, "edit the notes");
    let mut lines = smith_engine::protocol::JsonLines::start(Vec::new()).unwrap();
    for event in &events {
        lines.write(event).unwrap();
    }
    let got = String::from_utf8(lines.into_inner()).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/protocol_run.jsonl");
    if std::env::var_os("SMITH_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; create it with SMITH_BLESS=1",
            path.display()
        )
    });
    assert!(
        got == want,
        "the protocol projection changed; if deliberate (additive only), rerun with SMITH_BLESS=1 and review\n--- got\n{got}\n--- want\n{want}"
    );
}

#[test]
fn running_bash_output_streams_as_tool_execution_updates() {
    let h = harness(
        r#"[[{"tool_call": {"id": "b", "name": "bash", "arguments": {"command": "echo streamed-line"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "ok"}, {"stop": {"reason": "end"}}]]"#,
    );
    let events = prompt(&h, "go");
    let updates: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionUpdate { call_id, output } if call_id == "b" => {
                Some(output.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(updates.contains("streamed-line"), "{events:#?}");
    let start = events
        .iter()
        .position(|e| matches!(e, Event::ToolExecutionStart { .. }))
        .unwrap();
    let update = events
        .iter()
        .position(|e| matches!(e, Event::ToolExecutionUpdate { .. }))
        .unwrap();
    let end = events
        .iter()
        .position(|e| matches!(e, Event::ToolExecutionEnd { .. }))
        .unwrap();
    assert!(start < update && update < end);
}
