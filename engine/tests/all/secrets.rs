//! Redaction at the runtime's boundary: with a secret registered, the
//! provider request, the journal's records (effect inputs and outputs
//! included) and every event carry its placeholder, never the value — also
//! when a tool prints it in pieces, and when the model puts it in a call's
//! arguments (the call then runs with the placeholder: no policy
//! authorizes substitution).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use smith_engine::agent::{self, AgentConfig, Services, default_policies};
use smith_engine::journal::{MemoryJournal, Record, SessionEvent};
use smith_engine::protocol::{Command, Event};
use smith_engine::provider::record::RecordingProvider;
use smith_engine::provider::scripted::{MOCK_MODEL, parse_script};
use smith_engine::provider::{HostTransport, Provider};
use smith_engine::tools::{ToolContext, ToolSet};
use smith_secrets::{FingerprintKey, Registry, Source};
use smith_testkit::ScriptedProvider;

const SECRET: &str = "sk-test-split-0123456789abcdef";
const PLACEHOLDER: &str = "{secret:test.key}";

fn contains(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_registered_value_never_leaves_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let (head, tail) = SECRET.split_at(7);
    let script = serde_json::json!([
        [
            // Printed in two pieces, with a pause between them, so the
            // value arrives split across output chunks.
            {"tool_call": {"id": "c1", "name": "bash", "arguments": {
                "command": format!("printf '%s' '{head}'; sleep 0.3; printf '%s\\n' '{tail}'")
            }}},
            {"stop": {"reason": "tool_use"}}
        ],
        [
            // The model writes the value itself into a call.
            {"tool_call": {"id": "c2", "name": "bash", "arguments": {
                "command": format!("echo {SECRET} > echoed.txt")
            }}},
            {"stop": {"reason": "tool_use"}}
        ],
        [{"text": format!("the key is {SECRET}")}, {"stop": {"reason": "end"}}]
    ])
    .to_string();
    let log = dir.path().join("requests.jsonl");
    let provider: Box<dyn Provider> = Box::new(
        RecordingProvider::new(
            Box::new(ScriptedProvider::new(
                parse_script(&script, "test").unwrap(),
            )),
            &log,
        )
        .unwrap(),
    );
    let mut registry = Registry::new(FingerprintKey::from_bytes([5; 32]));
    registry.register("test.key", SECRET, Source::User).unwrap();
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.redactor = registry.redactor();
    config.system = Some(format!("You may use the key {SECRET}."));
    let journal = Arc::new(MemoryJournal::new());
    let services = Services {
        provider,
        transport: Arc::new(HostTransport),
        tools: ToolSet::builtin(),
        tool_context: ToolContext::new(dir.path()).unwrap(),
        journal: journal.clone(),
        sink: journal.clone(),
        policies: default_policies(),
    };
    let handle = agent::spawn(config, services).unwrap();
    handle
        .send(Command::Prompt {
            text: format!("here is my key: {SECRET}"),
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
    handle.send(Command::GetMessages).unwrap();
    events.push(handle.recv_timeout(Duration::from_secs(30)).unwrap());
    handle.shutdown();

    // Every event, as a frontend prints it.
    let shown: String = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!shown.contains(SECRET), "{shown}");
    // The streamed output, joined, shows the placeholder whole.
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionUpdate { call_id, output } if call_id == "c1" => {
                Some(output.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(streamed, format!("{PLACEHOLDER}\n"));
    assert!(
        shown.contains(&format!("the key is {PLACEHOLDER}")),
        "{shown}"
    );

    // What the provider received, system prompt included.
    let requests = std::fs::read(&log).unwrap();
    assert!(!contains(&requests, SECRET));
    assert!(contains(
        &requests,
        &format!("You may use the key {PLACEHOLDER}.")
    ));
    assert!(contains(
        &requests,
        &format!("here is my key: {PLACEHOLDER}")
    ));

    // Every record, effect inputs and outputs (CBOR) included.
    for record in journal.records() {
        let bytes = match &record {
            Record::Intent(intent) => intent.input.clone(),
            Record::Completion(completion) => completion.output.clone(),
            Record::Event(event) => serde_json::to_vec(event).unwrap(),
        };
        assert!(!contains(&bytes, SECRET), "{record:?}");
    }
    assert!(
        journal
            .records()
            .iter()
            .any(|r| matches!(r, Record::Event(SessionEvent::Message { .. })))
    );
    let runs = serde_json::to_string(&journal.run_records()).unwrap();
    assert!(!runs.contains(SECRET), "{runs}");

    // The call the model wrote with the value ran with the placeholder.
    let echoed = std::fs::read_to_string(dir.path().join("echoed.txt")).unwrap();
    assert_eq!(echoed, format!("{PLACEHOLDER}\n"));
}

/// Rewrites every bash call's arguments to echo the secret (an extension
/// that knows the value).
struct WritesTheSecret;

impl smith_engine::agent::Hooks for WritesTheSecret {
    fn input(&mut self, _: &str) -> smith_engine::agent::Verdict {
        smith_engine::agent::Verdict::Allow
    }
    fn observe(&mut self, _: &Event) -> Vec<smith_engine::agent::HookAction> {
        Vec::new()
    }
    fn tool_call(
        &mut self,
        call: &smith_engine::provider::ToolCall,
    ) -> smith_engine::agent::Verdict {
        if call.name == "bash" {
            return smith_engine::agent::Verdict::Replace {
                by: "test/rewriter".into(),
                value: serde_json::json!({"command": format!("echo {SECRET}")}).to_string(),
            };
        }
        smith_engine::agent::Verdict::Allow
    }
}

#[test]
fn arguments_an_extension_writes_in_are_redacted_before_they_are_recorded_or_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = serde_json::json!([
        [{"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "echo hi"}}},
         {"stop": {"reason": "tool_use"}}],
        [{"text": "done"}, {"stop": {"reason": "end"}}]
    ])
    .to_string();
    let mut registry = Registry::new(FingerprintKey::from_bytes([5; 32]));
    registry.register("test.key", SECRET, Source::User).unwrap();
    let mut config = AgentConfig::new(MOCK_MODEL);
    config.redactor = registry.redactor();
    let journal = Arc::new(MemoryJournal::new());
    let services = Services::local(
        Box::new(ScriptedProvider::new(
            parse_script(&script, "test").unwrap(),
        )),
        ToolContext::new(dir.path()).unwrap(),
        journal.clone(),
    );
    let handle = agent::spawn_with_hooks(config, services, Box::new(WritesTheSecret)).unwrap();
    handle
        .send(Command::Prompt {
            text: "go".to_owned(),
        })
        .unwrap();
    let mut output = None;
    loop {
        let event = handle.recv_timeout(Duration::from_secs(30)).unwrap();
        if let Event::ToolExecutionEnd { content, .. } = &event {
            output = Some(content.clone());
        }
        if event == Event::Settled {
            break;
        }
    }
    handle.shutdown();
    // No policy authorizes substitution: the command ran with the
    // placeholder, and nothing recorded holds the value.
    let output = output.unwrap();
    assert!(output.contains(PLACEHOLDER), "{output}");
    for record in journal.records() {
        let bytes = match &record {
            Record::Intent(intent) => intent.input.clone(),
            Record::Completion(completion) => completion.output.clone(),
            Record::Event(event) => serde_json::to_vec(event).unwrap(),
        };
        assert!(!contains(&bytes, SECRET), "{record:?}");
    }
}
