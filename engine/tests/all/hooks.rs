//! Hooks: decisions at decision points only, actions only at safe points.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use smith_engine::agent::{self, AgentConfig, AgentHandle, HookAction, Hooks, Services, Verdict};
use smith_engine::journal::MemoryJournal;
use smith_engine::protocol::{Command, Event, StopCause, ToolStatus};
use smith_engine::provider::record::RecordingProvider;
use smith_engine::provider::scripted::{MOCK_MODEL, parse_script};
use smith_engine::provider::{Message, Request, ToolCall};
use smith_engine::tools::ToolContext;
use smith_testkit::ScriptedProvider;

/// What the test hooks saw, in order.
#[derive(Default)]
struct Seen {
    /// Decision points and observed event types.
    log: Vec<String>,
}

/// Blocks bash calls and inputs mentioning "forbidden", rewrites the
/// path of read calls and inputs starting with "rewrite:", and asks for a
/// follow-up and a model switch while the first run streams.
struct TestHooks {
    seen: Arc<Mutex<Seen>>,
    asked: bool,
}

impl Hooks for TestHooks {
    fn input(&mut self, text: &str) -> Verdict {
        self.seen.lock().unwrap().log.push(format!("input {text}"));
        if text.contains("forbidden") {
            Verdict::Block {
                by: "test/guard".into(),
                reason: "no forbidden words".into(),
            }
        } else if let Some(rest) = text.strip_prefix("rewrite:") {
            Verdict::Replace {
                by: "test/guard".into(),
                value: format!("rewritten {rest}"),
            }
        } else {
            Verdict::Allow
        }
    }

    fn tool_call(&mut self, call: &ToolCall) -> Verdict {
        self.seen
            .lock()
            .unwrap()
            .log
            .push(format!("tool_call {} {}", call.id, call.name));
        match call.name.as_str() {
            "bash" => Verdict::Block {
                by: "test/guard".into(),
                reason: "shell commands need review".into(),
            },
            "read" => Verdict::Replace {
                by: "test/guard".into(),
                value: r#"{"path": "other.txt"}"#.into(),
            },
            "ls" => Verdict::Replace {
                by: "test/guard".into(),
                value: "not json".into(),
            },
            _ => Verdict::Allow,
        }
    }

    fn observe(&mut self, event: &Event) -> Vec<HookAction> {
        let name = serde_json::to_value(event).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned();
        self.seen.lock().unwrap().log.push(format!("event {name}"));
        match event {
            // Asked for mid-stream; must wait for the safe point.
            Event::MessageDelta { .. } if !self.asked => {
                self.asked = true;
                vec![
                    HookAction::SetModel {
                        by: "test/guard".into(),
                        model: "no-such-model".into(),
                    },
                    HookAction::FollowUp {
                        by: "test/guard".into(),
                        text: "and one more thing".into(),
                    },
                ]
            }
            _ => Vec::new(),
        }
    }
}

struct Rig {
    handle: AgentHandle,
    seen: Arc<Mutex<Seen>>,
    record: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn rig(script: &str) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the notes\n").unwrap();
    std::fs::write(dir.path().join("other.txt"), "the other file\n").unwrap();
    let record = dir.path().join("requests.jsonl");
    let provider = RecordingProvider::new(
        Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap())),
        &record,
    )
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let services = Services::local(
        Box::new(provider),
        ToolContext::new(dir.path()).unwrap(),
        journal,
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let hooks = TestHooks {
        seen: Arc::clone(&seen),
        asked: false,
    };
    let handle =
        agent::spawn_with_hooks(AgentConfig::new(MOCK_MODEL), services, Box::new(hooks)).unwrap();
    Rig {
        handle,
        seen,
        record,
        _dir: dir,
    }
}

fn until_settled(handle: &AgentHandle) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let event = handle
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|t| panic!("no event ({t}); so far {events:#?}"));
        let settled = event == Event::Settled;
        events.push(event);
        if settled {
            return events;
        }
    }
}

fn requests(rig: &Rig) -> Vec<Request> {
    std::fs::read_to_string(&rig.record)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn tool_calls_are_blocked_or_rewritten_before_they_run() {
    let rig = rig(r#"[
        [{"text": "Working."},
         {"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "touch made.txt"}}},
         {"tool_call": {"id": "c2", "name": "read", "arguments": {"path": "notes.txt"}}},
         {"tool_call": {"id": "c3", "name": "ls", "arguments": {}}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "Done."}, {"stop": {"reason": "end"}}],
        [{"text": "Also done."}, {"stop": {"reason": "end"}}]
    ]"#);
    rig.handle
        .send(Command::Prompt { text: "go".into() })
        .unwrap();
    let events = until_settled(&rig.handle);
    let ends: Vec<(String, ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd {
                name,
                status,
                content,
                ..
            } => Some((name.clone(), *status, content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 3, "{ends:#?}");
    // Blocked: did not run, the model is told who blocked it and why.
    assert_eq!(ends[0].1, ToolStatus::Blocked);
    assert!(
        ends[0].2.contains("test/guard") && ends[0].2.contains("shell commands need review"),
        "{}",
        ends[0].2
    );
    assert!(!rig._dir.path().join("made.txt").exists());
    // Replaced: the rewritten arguments ran.
    assert_eq!(ends[1].1, ToolStatus::Ok);
    assert!(ends[1].2.contains("the other file"), "{}", ends[1].2);
    // A replacement that is not JSON is rejected like bad arguments.
    assert_eq!(ends[2].1, ToolStatus::Invalid);
    assert!(ends[2].2.contains("test/guard"), "{}", ends[2].2);
    // The second request carries the three results.
    let sent = requests(&rig);
    let results: Vec<&Message> = sent[1]
        .messages
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .collect();
    assert_eq!(results.len(), 3);
    // Decisions were asked only for validated calls, before any ran: all
    // three tool_call decisions precede the first tool execution.
    let log = rig.seen.lock().unwrap().log.clone();
    let first_exec = log
        .iter()
        .position(|l| l == "event tool_execution_start")
        .unwrap();
    let decisions: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("tool_call "))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(decisions.len(), 3, "{log:#?}");
    assert!(decisions.iter().all(|&i| i < first_exec), "{log:#?}");
}

#[test]
fn actions_wait_for_the_safe_point_and_inputs_are_screened() {
    let rig = rig(r#"[
        [{"text": "First answer."}, {"stop": {"reason": "end"}}],
        [{"text": "Second answer."}, {"stop": {"reason": "end"}}],
        [{"text": "Third answer."}, {"stop": {"reason": "end"}}]
    ]"#);
    // A blocked prompt is never sent: no run starts.
    rig.handle
        .send(Command::Prompt {
            text: "say the forbidden word".into(),
        })
        .unwrap();
    let events = until_settled(&rig.handle);
    let blocked: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Error(info) if info.kind == "blocked"))
        .collect();
    assert_eq!(blocked.len(), 1, "{events:#?}");
    assert!(!events.iter().any(|e| matches!(e, Event::AgentStart)));
    assert!(!rig.record.exists() || requests(&rig).is_empty());

    // A replaced prompt is sent as replaced. The model switch and the
    // follow-up asked for mid-stream are applied only after the turn: the
    // model switch fails (the provider has no such model) and the
    // follow-up is delivered before the run stops, as a second turn.
    rig.handle
        .send(Command::Prompt {
            text: "rewrite: please".into(),
        })
        .unwrap();
    let events = until_settled(&rig.handle);
    let sent = requests(&rig);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(
        sent[0].messages.last(),
        Some(&Message::User {
            text: "rewritten  please".into(),
            media: Vec::new(),
        })
    );
    assert_eq!(
        sent[1].messages.last(),
        Some(&Message::User {
            text: "and one more thing".into(),
            media: Vec::new(),
        })
    );
    let names: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let first_delta = names.iter().position(|n| n == "message_delta").unwrap();
    let first_turn_end = names.iter().position(|n| n == "turn_end").unwrap();
    let model_error = events
        .iter()
        .position(|e| matches!(e, Event::Error(info) if info.kind == "model_unavailable"))
        .unwrap();
    let queued = events
        .iter()
        .position(|e| matches!(e, Event::QueueChanged { items } if !items.is_empty()))
        .unwrap();
    assert!(first_delta < first_turn_end);
    assert!(model_error > first_turn_end, "{names:#?}");
    assert!(queued > first_turn_end, "{names:#?}");
    let ends: Vec<StopCause> = events
        .iter()
        .filter_map(|e| match e {
            Event::AgentEnd { stop, .. } => Some(*stop),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![StopCause::Done]);
    assert_eq!(names.iter().filter(|n| *n == "turn_end").count(), 2);
}

#[test]
fn effect_ids_come_from_the_shared_counter() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the notes\n").unwrap();
    let script = r#"[
        [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"stop": {"reason": "tool_use"}}],
        [{"text": "ok"}, {"stop": {"reason": "end"}}]
    ]"#;
    let journal = Arc::new(MemoryJournal::new());
    let services = Services::local(
        Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap())),
        ToolContext::new(dir.path()).unwrap(),
        journal,
    );
    // Another effect source (a plugin host) already drew fx-8 from the
    // counter the session started at 7.
    let ids = Arc::new(std::sync::atomic::AtomicU64::new(7));
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.first_effect_seq = 7;
    config.effect_ids = Some(Arc::clone(&ids));
    ids.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let handle = agent::spawn(config, services).unwrap();
    handle
        .send(Command::Prompt {
            text: "read".into(),
        })
        .unwrap();
    let events = until_settled(&handle);
    let started: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionStart { effect_id, .. } => Some(effect_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["fx-9"]);
    assert_eq!(ids.load(std::sync::atomic::Ordering::SeqCst), 9);
}

/// Blocks the first compaction, rewrites the instructions of the next.
struct CompactionGuard {
    calls: u32,
}

impl Hooks for CompactionGuard {
    fn input(&mut self, _: &str) -> Verdict {
        Verdict::Allow
    }
    fn tool_call(&mut self, _: &ToolCall) -> Verdict {
        Verdict::Allow
    }
    fn observe(&mut self, _: &Event) -> Vec<HookAction> {
        Vec::new()
    }
    fn compaction(&mut self, reason: smith_engine::protocol::CompactionReason) -> Verdict {
        assert_eq!(reason, smith_engine::protocol::CompactionReason::Manual);
        self.calls += 1;
        if self.calls == 1 {
            Verdict::Block {
                by: "test/keeper".into(),
                reason: "keep everything".into(),
            }
        } else {
            Verdict::Replace {
                by: "test/keeper".into(),
                value: "mention the notes file".into(),
            }
        }
    }
}

#[test]
fn a_compaction_is_blocked_or_given_instructions_at_its_decision_point() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let script = r#"[
        [{"text": "one"}, {"stop": {"reason": "end"}}],
        [{"text": "two"}, {"stop": {"reason": "end"}}],
        [{"text": "three"}, {"stop": {"reason": "end"}}]
    ]"#;
    let provider = RecordingProvider::new(
        Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap())),
        &record,
    )
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let services = Services::local(
        Box::new(provider),
        ToolContext::new(dir.path()).unwrap(),
        journal,
    );
    let handle = agent::spawn_with_hooks(
        AgentConfig::new(MOCK_MODEL),
        services,
        Box::new(CompactionGuard { calls: 0 }),
    )
    .unwrap();
    // A long first prompt: a summary of the turns before the latest is far
    // shorter than they are (one no shorter is never used).
    let first = format!(
        "first {}",
        "with every detail of the task spelled out. ".repeat(30)
    );
    for text in [first.as_str(), "second", "third"] {
        handle.send(Command::Prompt { text: text.into() }).unwrap();
        until_settled(&handle);
    }
    let outcome = |events: &[Event]| {
        events
            .iter()
            .find_map(|e| match e {
                Event::CompactionEnd { outcome, error, .. } => {
                    Some((*outcome, error.as_ref().map(|e| e.kind.clone())))
                }
                _ => None,
            })
            .unwrap()
    };
    handle.compact(None).unwrap();
    let blocked = until_settled(&handle);
    assert_eq!(
        outcome(&blocked),
        (
            smith_engine::protocol::CompactionOutcome::Skipped,
            Some("blocked".to_owned())
        )
    );
    let before = requests_at(&record).len();
    handle.compact(None).unwrap();
    let replaced = until_settled(&handle);
    assert_eq!(
        outcome(&replaced),
        (smith_engine::protocol::CompactionOutcome::Compacted, None)
    );
    // The blocked compaction sent nothing; the other sent one summary
    // request carrying the extension's instructions.
    let sent = requests_at(&record);
    assert_eq!(sent.len(), before + 1);
    let Some(Message::User { text, .. }) = sent.last().unwrap().messages.last() else {
        panic!("a summary request ends with a user message");
    };
    assert!(
        text.contains(&format!(
            "{}mention the notes file",
            smith_engine::agent::compact::INSTRUCTIONS_MARKER
        )),
        "{text}"
    );
}

fn requests_at(path: &std::path::Path) -> Vec<Request> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn in_read_only_mode_no_mutating_call_runs_even_without_plugins() {
    use smith_engine::approval::{Approval, ApprovalCell};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the notes\n").unwrap();
    let script = r#"[
        [{"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "touch made.txt"}}},
         {"tool_call": {"id": "c2", "name": "write", "arguments": {"path": "new.txt", "content": "x"}}},
         {"tool_call": {"id": "c3", "name": "read", "arguments": {"path": "notes.txt"}}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "Done."}, {"stop": {"reason": "end"}}]
    ]"#;
    let mode = ApprovalCell::new(Approval::ReadOnly);
    let services = Services::local(
        Box::new(ScriptedProvider::new(parse_script(script, "test").unwrap())),
        ToolContext::new(dir.path())
            .unwrap()
            .with_approval(mode.clone()),
        Arc::new(MemoryJournal::new()),
    );
    // No hooks at all: the floor holds without the permission plugin.
    let handle = agent::spawn(AgentConfig::new(MOCK_MODEL), services).unwrap();
    handle.send(Command::Prompt { text: "go".into() }).unwrap();
    let ends: Vec<(String, ToolStatus, String)> = until_settled(&handle)
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd {
                name,
                status,
                content,
                ..
            } => Some((name, status, content)),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 3, "{ends:#?}");
    for (name, status, content) in &ends[..2] {
        assert_eq!(*status, ToolStatus::Blocked, "{name}: {content}");
        assert!(content.contains("read-only"), "{content}");
        assert!(content.contains("/approval ask"), "{content}");
    }
    assert_eq!(ends[2].1, ToolStatus::Ok, "{}", ends[2].2);
    assert!(!dir.path().join("made.txt").exists());
    assert!(!dir.path().join("new.txt").exists());
}
