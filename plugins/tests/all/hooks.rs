//! Extension plugins in a real agent run: the example plugin blocks a tool
//! call at the decision point, the probe's messages are applied only at a
//! safe point, and the provider is the smith/mock plugin.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use smith_engine::agent::{self, AgentConfig, Services};
use smith_engine::journal::MemoryJournal;
use smith_engine::protocol::{Command, Event, ToolStatus};
use smith_engine::provider::record::RecordingProvider;
use smith_engine::provider::{Message, Request};
use smith_engine::tools::ToolContext;
use smith_plugins::dispatch::Surface;
use smith_plugins::extension::{IntentKind, UiIntent};
use smith_plugins::hooks::{Frontend, PluginHooks};
use smith_plugins::{ExtensionComponent, Limits, WasmExtension};

use crate::guest;

fn extension(name: &str, file: &str) -> WasmExtension {
    ExtensionComponent::load(name, &guest(file), None, Limits::default())
        .unwrap()
        .instantiate()
        .unwrap()
}

/// Keeps what it is given.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<String>>>);

impl Surface for Kept {
    fn name(&self) -> &str {
        "test"
    }
    fn can_show(&self, _: &IntentKind) -> bool {
        true
    }
    fn show(&mut self, plugin: &str, intent: &UiIntent) {
        self.0
            .lock()
            .unwrap()
            .push(format!("show {plugin} {}", intent.id));
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        self.0.lock().unwrap().push(format!("text {plugin} {text}"));
    }
}

impl Frontend for Kept {
    fn persist(&mut self, plugin: &str, intent: &UiIntent) {
        self.0
            .lock()
            .unwrap()
            .push(format!("persist {plugin} {}", intent.id));
    }
    fn diagnostic(&mut self, message: &str) {
        self.0.lock().unwrap().push(format!("diagnostic {message}"));
    }
}

const SCRIPT: &str = r#"[
  [{"text": "look"},
   {"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "echo rm -rf /tmp/never > blocked.txt"}}},
   {"tool_call": {"id": "c2", "name": "bash", "arguments": {"command": "echo fine > fine.txt"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"stop": {"reason": "end"}}],
  [{"stop": {"reason": "end"}}]
]"#;

#[test]
fn plugins_block_at_decision_points_and_act_at_safe_points() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let mock = smith_plugins::builtin::mock_provider(
        Some((SCRIPT, "hooks.json")),
        None,
        Limits::default(),
    )
    .unwrap();
    let provider = RecordingProvider::new(Box::new(mock), &record).unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let services = Services::local(
        Box::new(provider),
        ToolContext::new(dir.path()).unwrap(),
        journal,
    );
    let kept = Kept::default();
    let hooks = PluginHooks::new(
        vec![
            extension("example/hello", "smith_plugin_hello.wasm"),
            extension("test/probe", "smith_plugin_probe.wasm"),
        ],
        Box::new(kept.clone()),
    );
    assert_eq!(hooks.names(), ["example/hello", "test/probe"]);
    let handle =
        agent::spawn_with_hooks(AgentConfig::new("mock-1"), services, Box::new(hooks)).unwrap();
    handle
        .send(Command::Prompt {
            text: "clean up".into(),
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
    let ends: Vec<(String, ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolExecutionEnd {
                call_id,
                status,
                content,
                ..
            } => Some((call_id.clone(), *status, content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2, "{events:#?}");
    assert_eq!(ends[0].1, ToolStatus::Blocked);
    assert!(
        ends[0].2.contains("example/hello refuses to run rm -rf /"),
        "{}",
        ends[0].2
    );
    // The command is harmless (an echo), so a missed block shows as a file.
    assert!(!dir.path().join("blocked.txt").exists());
    assert_eq!(ends[1].1, ToolStatus::Ok);
    assert!(dir.path().join("fine.txt").exists());
    // The probe answered the streamed "look" with a message; it was queued
    // only after the turn and sent as the last request's input.
    let requests: Vec<Request> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].messages.last(),
        Some(&Message::User {
            text: "look".into(),
            media: Vec::new(),
        })
    );
    let turn_end = events
        .iter()
        .position(|e| matches!(e, Event::TurnEnd { turn: 1 }))
        .unwrap();
    let queued = events
        .iter()
        .position(|e| matches!(e, Event::QueueChanged { items } if !items.is_empty()))
        .unwrap();
    assert!(queued > turn_end);
    // Nothing failed along the way.
    assert_eq!(kept.0.lock().unwrap().as_slice(), &[] as &[String]);
}

#[test]
fn a_run_abort_stops_a_hook_that_ignores_it_and_the_runtime_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"[[{"text": "hello again"}, {"stop": {"reason": "end"}}]]"#;
    let mock = smith_plugins::builtin::mock_provider(
        Some((script, "abort.json")),
        None,
        Limits::default(),
    )
    .unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let services = Services::local(
        Box::new(mock),
        ToolContext::new(dir.path()).unwrap(),
        journal,
    );
    let limits = Limits {
        call_deadline: Duration::from_secs(30),
        abort_grace: Duration::from_millis(100),
        ..Limits::default()
    };
    let probe = ExtensionComponent::load(
        "test/probe",
        &guest("smith_plugin_probe.wasm"),
        None,
        limits,
    )
    .unwrap()
    .instantiate()
    .unwrap();
    let kept = Kept::default();
    let hooks = PluginHooks::new(vec![probe], Box::new(kept.clone()));
    let handle =
        agent::spawn_with_hooks(AgentConfig::new("mock-1"), services, Box::new(hooks)).unwrap();
    let abort = handle.abort_fn();
    let aborter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        abort();
    });
    let start = std::time::Instant::now();
    // The probe spins on this input, ignoring cancellation.
    handle
        .send(Command::Prompt {
            text: "spin".into(),
        })
        .unwrap();
    let settle = |handle: &agent::AgentHandle| {
        let mut events = Vec::new();
        loop {
            let event = handle.recv_timeout(Duration::from_secs(30)).unwrap();
            let settled = event == Event::Settled;
            events.push(event);
            if settled {
                return events;
            }
        }
    };
    let events = settle(&handle);
    aborter.join().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let stops: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::AgentEnd { stop, .. } => Some(*stop),
            _ => None,
        })
        .collect();
    assert_eq!(stops, [smith_engine::protocol::StopCause::Aborted]);
    let said = kept.0.lock().unwrap().clone();
    assert!(
        said.iter()
            .any(|l| l.contains("test/probe") && l.contains("handle") && l.contains("no decision")),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|l| l.contains("plugin test/probe was stopped") && l.contains("left out")),
        "{said:#?}"
    );
    // The runtime keeps serving, without the stopped plugin.
    handle
        .send(Command::Prompt {
            text: "and now?".into(),
        })
        .unwrap();
    let events = settle(&handle);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::MessageDelta { text } if text.contains("hello again"))),
        "{events:#?}"
    );
}

#[test]
fn plugin_commands_run_from_the_frontend_and_release_when_settled() {
    let journal = Arc::new(MemoryJournal::new());
    let effects = smith_plugins::effects::Effects::new(
        "smith/product",
        smith_plugins::effects::Grants {
            ui: true,
            ..smith_plugins::effects::Grants::default()
        },
        journal as Arc<dyn smith_engine::journal::EffectJournal>,
        Arc::new(std::sync::atomic::AtomicU64::new(0)),
        1,
    );
    let product = ExtensionComponent::load(
        "smith/product",
        smith_plugins::builtin::PRODUCT,
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate_with(Some(effects))
    .unwrap();
    let kept = Kept::default();
    let mut hooks = PluginHooks::new(vec![product], Box::new(kept.clone()));
    let commands = hooks.commands();
    assert_eq!(commands.owner("help").as_deref(), Some("smith/product"));
    assert_eq!(commands.owner("no-such-command"), None);
    // Settled: released at once — the help notice is shown, the model
    // switch comes back for the runtime.
    assert_eq!(commands.run("help", "", true).unwrap(), []);
    assert!(
        kept.0
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("show smith/product")),
        "{:?}",
        kept.0.lock().unwrap()
    );
    assert_eq!(
        commands.run("model", "big-1", true).unwrap(),
        [smith_engine::agent::HookAction::SetModel {
            by: "smith/product".into(),
            model: "big-1".into()
        }]
    );
    // Busy: held for the runtime's next safe point.
    assert_eq!(commands.run("model", "big-2", false).unwrap(), []);
    use smith_engine::agent::Hooks as _;
    assert_eq!(hooks.observe(&Event::TurnStart { turn: 1 }), []);
    assert_eq!(
        hooks.observe(&Event::TurnEnd { turn: 1 }),
        [smith_engine::agent::HookAction::SetModel {
            by: "smith/product".into(),
            model: "big-2".into()
        }]
    );
    let err = commands.run("no-such-command", "", true).unwrap_err();
    assert!(err.contains("/no-such-command"), "{err}");
}

/// Keeps the text of what it is given, and the intents it keeps.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Surface for Lines {
    fn name(&self) -> &str {
        "lines"
    }
    fn can_show(&self, kind: &IntentKind) -> bool {
        matches!(kind, IntentKind::Notify(_))
    }
    fn show(&mut self, plugin: &str, intent: &UiIntent) {
        let text = smith_plugins::dispatch::text_fallback(&intent.kind);
        self.0.lock().unwrap().push(format!("[{plugin}] {text}"));
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        self.0.lock().unwrap().push(format!("[{plugin}] {text}"));
    }
}

impl Frontend for Lines {
    fn persist(&mut self, plugin: &str, intent: &UiIntent) {
        self.0
            .lock()
            .unwrap()
            .push(format!("persist {plugin} {}", intent.id));
    }
    fn diagnostic(&mut self, message: &str) {
        self.0.lock().unwrap().push(format!("diagnostic {message}"));
    }
}

fn lifecycle() -> WasmExtension {
    crate::lifecycle_guest(Arc::new(MemoryJournal::new()))
}

#[test]
fn session_hooks_raise_start_and_shutdown_and_gate_switches_and_forks() {
    use smith_engine::agent::{Hooks as _, SessionOp, Verdict};
    let lines = Lines::default();
    let mut hooks = PluginHooks::new(vec![lifecycle()], Box::new(lines.clone())).in_session("5e55");
    let gate = hooks.session_gate().unwrap();
    hooks.session_start();
    // Raised, but shown only at a safe point.
    assert!(lines.0.lock().unwrap().is_empty());
    assert_eq!(hooks.observe(&Event::TurnEnd { turn: 1 }), []);
    assert_eq!(
        std::mem::take(&mut *lines.0.lock().unwrap()),
        [
            "[test/lifecycle] plugin-loaded test/lifecycle",
            "[test/lifecycle] session-start 5e55"
        ]
    );
    assert_eq!(
        gate.ask(&SessionOp::Fork("nofork-a#3".into())),
        Verdict::Block {
            by: "test/lifecycle".into(),
            reason: "nofork-a#3 stays in one piece".into()
        }
    );
    assert_eq!(
        gate.ask(&SessionOp::Switch("noswitch".into())),
        Verdict::Block {
            by: "test/lifecycle".into(),
            reason: "noswitch is off limits".into()
        }
    );
    assert_eq!(gate.ask(&SessionOp::Fork("other".into())), Verdict::Allow);
    assert_eq!(gate.ask(&SessionOp::Switch(String::new())), Verdict::Allow);
    // A context decision: allowed until an input arms the block; a
    // replacement there counts as allow and is reported.
    assert_eq!(hooks.context(2), Verdict::Allow);
    assert_eq!(hooks.input("now replace context"), Verdict::Allow);
    assert_eq!(hooks.context(3), Verdict::Allow);
    assert_eq!(
        std::mem::take(&mut *lines.0.lock().unwrap()),
        [
            "diagnostic plugin test/lifecycle answered the provider request with a replacement, which has no meaning there (only block or allow do); it counts as allow, so the provider request went ahead unchanged"
        ]
    );
    assert_eq!(hooks.input("now block context"), Verdict::Allow);
    assert_eq!(
        hooks.context(4),
        Verdict::Block {
            by: "test/lifecycle".into(),
            reason: "test/lifecycle holds back the 4 messages".into()
        }
    );
    // Shutdown releases what is queued right away.
    hooks.before_request("m-1");
    hooks.session_shutdown();
    assert_eq!(
        std::mem::take(&mut *lines.0.lock().unwrap()),
        [
            "[test/lifecycle] before-provider-request m-1",
            "[test/lifecycle] session-shutdown"
        ]
    );
}

#[test]
fn hooks_without_a_session_raise_no_session_events() {
    use smith_engine::agent::Hooks as _;
    let lines = Lines::default();
    let mut hooks = PluginHooks::new(vec![lifecycle()], Box::new(lines.clone()));
    hooks.session_start();
    hooks.session_shutdown();
    assert_eq!(hooks.observe(&Event::TurnEnd { turn: 1 }), []);
    assert!(lines.0.lock().unwrap().is_empty());
    // The runtime's model changes and errors reach handlers as events.
    assert_eq!(
        hooks.observe(&Event::ModelChanged {
            provider: "mock".into(),
            model: "mock-2".into()
        }),
        []
    );
    assert_eq!(hooks.observe(&Event::Settled), []);
    assert_eq!(
        *lines.0.lock().unwrap(),
        ["[test/lifecycle] model-change mock-2"]
    );
}

#[test]
fn a_plugin_stopped_at_its_deadline_is_announced_as_unloaded_to_the_others() {
    use smith_engine::agent::{Hooks as _, Verdict};
    let limits = Limits {
        call_deadline: Duration::from_millis(200),
        ..Limits::default()
    };
    let probe = ExtensionComponent::load(
        "test/probe",
        &guest("smith_plugin_probe.wasm"),
        None,
        limits,
    )
    .unwrap()
    .instantiate()
    .unwrap();
    let lines = Lines::default();
    let mut hooks = PluginHooks::new(vec![probe, lifecycle()], Box::new(lines.clone()));
    // The probe spins on this input past its deadline: no decision, so the
    // input goes ahead; the probe is left out and the others hear of it.
    assert_eq!(hooks.input("spin"), Verdict::Allow);
    assert_eq!(hooks.names(), ["test/lifecycle"]);
    assert_eq!(hooks.observe(&Event::Settled), []);
    let got = std::mem::take(&mut *lines.0.lock().unwrap());
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[0].starts_with("diagnostic plugin test/probe (call handle): the plugin ran past its 200 ms deadline and was destroyed"),
        "{got:?}"
    );
    assert_eq!(
        got[1],
        "diagnostic plugin test/probe was stopped (its own diagnostic says why) and is left out for the rest of this runtime; a new session loads it afresh, and `smith plugin disable test/probe` keeps it out"
    );
    assert_eq!(got[2], "[test/lifecycle] plugin-unloaded test/probe");
}

/// Shows every intent: questions as `ask ID`, notices as their text.
#[derive(Clone, Default)]
struct Asks(Arc<Mutex<Vec<String>>>);

impl Surface for Asks {
    fn name(&self) -> &str {
        "asks"
    }
    fn can_show(&self, _: &IntentKind) -> bool {
        true
    }
    fn show(&mut self, plugin: &str, intent: &UiIntent) {
        let line = match &intent.kind {
            IntentKind::Notify(text) => format!("[{plugin}] {text}"),
            _ => format!("ask {plugin} {}", intent.id),
        };
        self.0.lock().unwrap().push(line);
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        self.0.lock().unwrap().push(format!("text {plugin} {text}"));
    }
}

impl Frontend for Asks {
    fn persist(&mut self, plugin: &str, intent: &UiIntent) {
        self.0
            .lock()
            .unwrap()
            .push(format!("persist {plugin} {}", intent.id));
    }
    fn diagnostic(&mut self, message: &str) {
        self.0.lock().unwrap().push(format!("diagnostic {message}"));
    }
}

#[test]
fn frontend_events_reach_handlers_and_release_at_once_only_when_idle() {
    use smith_engine::agent::{Hooks as _, Verdict};
    use smith_plugins::extension::LifecycleEvent;
    let asks = Asks::default();
    let mut hooks = PluginHooks::new(vec![lifecycle()], Box::new(asks.clone()));
    let commands = hooks.commands();
    let answerer = hooks.answerer().unwrap();
    let take = || std::mem::take(&mut *asks.0.lock().unwrap());
    // Idle: a safe point, so the notice is shown at once.
    assert_eq!(commands.raise(&LifecycleEvent::Resize((100, 30)), true), []);
    assert_eq!(take(), ["[test/lifecycle] resize 100x30"]);
    // While the runtime works, it waits for the next safe point.
    assert_eq!(
        commands.raise(&LifecycleEvent::ConfigChanged("model".into()), false),
        []
    );
    assert!(take().is_empty());
    // The plugin asks at the end of the run; the answer reaches it, once.
    assert_eq!(hooks.input("ask me"), Verdict::Allow);
    assert_eq!(
        hooks.observe(&Event::AgentEnd {
            stop: smith_engine::protocol::StopCause::Done,
            usage: smith_engine::provider::Usage::default(),
            cost: None,
            text: String::new(),
        }),
        []
    );
    assert_eq!(
        take(),
        [
            "[test/lifecycle] config-changed model",
            "ask test/lifecycle pick-1"
        ]
    );
    assert_eq!(
        answerer.answer("test/lifecycle", "pick-1", "staging", false),
        Ok(Vec::new())
    );
    assert!(take().is_empty());
    assert_eq!(hooks.observe(&Event::TurnEnd { turn: 2 }), []);
    assert_eq!(take(), ["[test/lifecycle] answer pick-1 \"staging\""]);
    assert_eq!(
        answerer.answer("test/lifecycle", "pick-1", "production", true),
        Err("the answer to question \"pick-1\" of plugin test/lifecycle was not delivered: the plugin has no such open question (it was never asked here, or it was answered already)".to_owned())
    );
}
