//! Host effects (read-file, http-request, UI intents) checked against
//! grants before they run and recorded in the effect journal; plugin actions
//! released only at safe points; UI intent degradation by policy.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectState, MemoryJournal, Outcome, Record, effect_states};
use smith_engine::protocol::{Event, Role};
use smith_engine::tools::Mutation;
use smith_plugins::dispatch::{Dispatcher, Released, Surface};
use smith_plugins::effects::{Effects, Grants};
use smith_plugins::extension::{Action, IntentKind, UiIntent};
use smith_plugins::{ExtensionComponent, Limits, WasmExtension};

use crate::guest;

fn probe(name: &str, effects: Option<Effects>) -> WasmExtension {
    ExtensionComponent::load(
        name,
        &guest("smith_plugin_probe.wasm"),
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate_with(effects)
    .unwrap()
}

fn effects(name: &str, grants: Grants, journal: &Arc<MemoryJournal>) -> Effects {
    Effects::new(
        name,
        grants,
        Arc::clone(journal) as Arc<dyn smith_engine::journal::EffectJournal>,
        Arc::new(AtomicU64::new(0)),
        1,
    )
}

fn notified(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Ui(UiIntent {
                kind: IntentKind::Notify(text),
                ..
            }) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn intent_tools(journal: &MemoryJournal) -> Vec<String> {
    journal
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Intent(i) => Some(i.tool.clone()),
            _ => None,
        })
        .collect()
}

fn data_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("notes")).unwrap();
    std::fs::create_dir_all(data.join("secret")).unwrap();
    std::fs::write(data.join("notes/today.md"), "buy milk").unwrap();
    std::fs::write(data.join("secret/key"), "hunter2").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "outside").unwrap();
    (dir, data)
}

#[test]
fn a_granted_read_runs_and_is_journaled_before_and_after() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        data_dir: data,
        fs_read: vec!["notes".to_owned()],
        ..Grants::default()
    };
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let actions = plugin.run_command("read", "notes/today.md").unwrap();
    assert_eq!(notified(&actions), ["buy milk"]);
    let records = journal.records();
    assert_eq!(records.len(), 2, "intent then completion: {records:?}");
    let Record::Intent(intent) = &records[0] else {
        panic!("first record is not an intent: {records:?}")
    };
    assert_eq!(intent.tool, "plugin.read-file");
    assert_eq!(intent.parent, "plugin:test/probe");
    assert_eq!(intent.effect_id, "fx-1");
    assert_eq!(intent.plugin_generation, 1);
    assert_eq!(
        effect_states(&records),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Ok,
                mutation: Mutation::NotApplied
            }
        )]
    );
    assert!(plugin.take_denials().is_empty());
}

#[test]
fn a_read_without_the_grant_is_denied_before_anything_runs() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        data_dir: data,
        fs_read: vec!["notes".to_owned()],
        ..Grants::default()
    };
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let err = plugin
        .run_command("read", "secret/key")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("denied: plugin test/probe was denied read-file \"secret/key\""),
        "{err}"
    );
    assert!(err.contains("fs-read \"secret\""), "{err}");
    assert!(!err.contains("hunter2"));
    let denials = plugin.take_denials();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].plugin, "test/probe");
    assert_eq!(denials[0].capability, "fs-read");
    assert_eq!(denials[0].missing_grant, "fs-read \"secret\"");
    assert!(
        journal.records().is_empty(),
        "a denied effect records nothing"
    );
    // Still serving after a denial.
    assert_eq!(
        notified(&plugin.run_command("read", "notes/today.md").unwrap()),
        ["buy milk"]
    );
}

#[test]
fn reads_leaving_the_granted_folder_are_invalid_and_unrecorded() {
    let (dir, data) = data_dir();
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), data.join("notes/link")).unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        data_dir: data,
        fs_read: vec!["notes".to_owned()],
        ..Grants::default()
    };
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    for path in ["../outside.txt", "/etc/passwd", "notes/../secret/key"] {
        let err = plugin.run_command("read", path).unwrap_err().to_string();
        assert!(err.contains("invalid: "), "{path}: {err}");
    }
    let err = plugin
        .run_command("read", "notes/link")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid: ") && err.contains("symlink"),
        "{err}"
    );
    assert!(journal.records().is_empty());
}

#[test]
fn an_instance_without_effects_is_denied_everything() {
    let mut plugin = probe("test/probe", None);
    let err = plugin
        .run_command("read", "notes/today.md")
        .unwrap_err()
        .to_string();
    assert!(err.contains("denied: ") && err.contains("fs-read"), "{err}");
    let err = plugin
        .run_command("get", "http://127.0.0.1:9/")
        .unwrap_err()
        .to_string();
    assert!(err.contains("denied: ") && err.contains("net"), "{err}");
    assert_eq!(plugin.take_denials().len(), 2);
}

/// Serves one HTTP exchange on a local port; returns the port and the
/// request head it received.
fn one_shot_server() -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello")
            .unwrap();
        String::from_utf8(head).unwrap()
    });
    (port, handle)
}

fn client() -> Arc<smith_net::Client> {
    Arc::new(
        smith_net::Client::builder()
            .proxy(smith_net::ProxySettings::none())
            .build()
            .unwrap(),
    )
}

#[test]
fn a_granted_request_goes_through_smith_net_and_is_journaled() {
    let (port, server) = one_shot_server();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        net: vec!["127.0.0.1".to_owned()],
        ..Grants::default()
    };
    let fx = effects("test/probe", grants, &journal).with_net(client());
    let mut plugin = probe("test/probe", Some(fx));
    let actions = plugin
        .run_command("get", &format!("http://127.0.0.1:{port}/hi"))
        .unwrap();
    assert_eq!(notified(&actions), ["200 hello"]);
    let head = server.join().unwrap();
    assert!(head.starts_with("GET /hi HTTP/1.1\r\n"), "{head}");
    assert!(head.to_ascii_lowercase().contains("x-probe: 1"), "{head}");
    assert_eq!(intent_tools(&journal), ["plugin.http-request"]);
    assert_eq!(
        effect_states(&journal.records()),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Ok,
                mutation: Mutation::NotApplied
            }
        )]
    );
}

#[test]
fn a_request_to_an_ungranted_host_is_denied_and_never_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        net: vec!["api.example.com".to_owned()],
        ..Grants::default()
    };
    let fx = effects("test/probe", grants, &journal).with_net(client());
    let mut plugin = probe("test/probe", Some(fx));
    let err = plugin
        .run_command("get", &format!("http://127.0.0.1:{port}/"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs the capability net"), "{err}");
    assert!(err.contains("net \"127.0.0.1\""), "{err}");
    let denials = plugin.take_denials();
    assert_eq!(denials[0].capability, "net");
    assert_eq!(denials[0].missing_grant, "net \"127.0.0.1\"");
    assert!(journal.records().is_empty());
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing connected"
    );
}

/// A surface that shows only notifications natively.
#[derive(Default)]
struct NotifyOnly {
    shown: Vec<(String, UiIntent)>,
    text: Vec<(String, String)>,
}

impl Surface for NotifyOnly {
    fn name(&self) -> &str {
        "test"
    }
    fn can_show(&self, kind: &IntentKind) -> bool {
        matches!(kind, IntentKind::Notify(_))
    }
    fn show(&mut self, plugin: &str, intent: &UiIntent) {
        self.shown.push((plugin.to_owned(), intent.clone()));
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        self.text.push((plugin.to_owned(), text.to_owned()));
    }
}

fn ui_plugin(journal: &Arc<MemoryJournal>) -> Dispatcher {
    let grants = Grants {
        ui: true,
        ..Grants::default()
    };
    Dispatcher::new(vec![probe(
        "test/probe",
        Some(effects("test/probe", grants, journal)),
    )])
}

fn turn_end() -> Event {
    Event::TurnEnd { turn: 1 }
}

#[test]
fn actions_wait_for_a_safe_point_never_mid_stream() {
    let journal = Arc::new(MemoryJournal::new());
    let mut dispatcher = ui_plugin(&journal);
    let mut surface = NotifyOnly::default();
    for event in [
        Event::TurnStart { turn: 1 },
        Event::MessageStart {
            role: Role::Assistant,
        },
        Event::MessageDelta { text: "a".into() },
        Event::MessageDelta { text: "b".into() },
        Event::ToolExecutionStart {
            call_id: "c1".into(),
            name: "read".into(),
            effect_id: "fx-9".into(),
        },
    ] {
        assert_eq!(dispatcher.observe(&event, &mut surface), None, "{event:?}");
    }
    assert_eq!(dispatcher.pending(), 2, "queued, not applied");
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(
        released.actions,
        vec![
            ("test/probe".to_owned(), Action::SendMessage("a".into())),
            ("test/probe".to_owned(), Action::SendMessage("b".into())),
        ]
    );
    assert_eq!(dispatcher.pending(), 0);
    // A later safe point has nothing left to release.
    assert_eq!(
        dispatcher.observe(&Event::Settled, &mut surface),
        Some(Released::default())
    );
}

#[test]
fn a_shown_intent_is_plain_text_and_journaled() {
    let journal = Arc::new(MemoryJournal::new());
    let mut dispatcher = ui_plugin(&journal);
    let mut surface = NotifyOnly::default();
    dispatcher
        .run_command("test/probe", "intent", "notify drop")
        .unwrap();
    assert!(surface.shown.is_empty(), "held until the safe point");
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(released.shown, 1);
    assert_eq!(
        surface.shown[0].1.kind,
        IntentKind::Notify("hello [31mred".into()),
        "the escape character is stripped"
    );
    assert_eq!(intent_tools(&journal), ["plugin.ui"]);
    assert!(matches!(
        effect_states(&journal.records())[0].1,
        EffectState::Completed {
            outcome: Outcome::Ok,
            mutation: Mutation::Applied
        }
    ));
}

#[test]
fn an_intent_the_surface_cannot_show_degrades_by_its_policy() {
    // drop: nothing shown, counted.
    let journal = Arc::new(MemoryJournal::new());
    let mut dispatcher = ui_plugin(&journal);
    let mut surface = NotifyOnly::default();
    dispatcher
        .run_command("test/probe", "intent", "confirm drop")
        .unwrap();
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!((released.shown, released.dropped), (0, 1));
    assert!(surface.shown.is_empty() && surface.text.is_empty());
    assert!(matches!(
        effect_states(&journal.records())[0].1,
        EffectState::Completed {
            mutation: Mutation::NotApplied,
            ..
        }
    ));

    // text: one plain line instead.
    let mut surface = NotifyOnly::default();
    dispatcher
        .run_command("test/probe", "intent", "select text")
        .unwrap();
    dispatcher
        .run_command("test/probe", "intent", "progress text")
        .unwrap();
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(released.shown, 2);
    assert_eq!(
        surface.text,
        vec![
            ("test/probe".to_owned(), "Pick [a / b]".to_owned()),
            ("test/probe".to_owned(), "build: 42.5%".to_owned()),
        ]
    );

    // refuse: not shown; the plugin receives an error event saying why.
    let mut surface = NotifyOnly::default();
    dispatcher
        .run_command("test/probe", "intent", "confirm refuse")
        .unwrap();
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(released.refused.len(), 1);
    assert_eq!(released.refused[0].1.id, "q-confirm-refuse");
    assert!(surface.shown.is_empty() && surface.text.is_empty());
    let (log, _) = dispatcher.plugins_mut()[0].take_log();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].0, smith_plugins::LogLevel::Error);
    assert!(
        log[0]
            .1
            .contains("cannot show the confirm intent \"q-confirm-refuse\""),
        "{log:?}"
    );

    // persist: kept for the session, not shown.
    let mut surface = NotifyOnly::default();
    dispatcher
        .run_command("test/probe", "intent", "confirm persist")
        .unwrap();
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(released.persisted.len(), 1);
    assert_eq!(
        released.persisted[0].1.kind,
        IntentKind::Confirm("Proceed?".into())
    );
    assert!(surface.shown.is_empty() && surface.text.is_empty());
    assert_eq!(intent_tools(&journal).len(), 5, "every intent is journaled");
}

#[test]
fn an_intent_without_the_ui_grant_is_denied_and_not_shown() {
    let journal = Arc::new(MemoryJournal::new());
    let mut dispatcher = Dispatcher::new(vec![probe(
        "test/probe",
        Some(effects("test/probe", Grants::none(), &journal)),
    )]);
    let mut surface = NotifyOnly::default();
    dispatcher
        .run_command("test/probe", "intent", "notify text")
        .unwrap();
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(released.shown, 0);
    assert!(surface.shown.is_empty() && surface.text.is_empty());
    assert_eq!(released.diagnostics.len(), 1);
    let message = &released.diagnostics[0];
    assert!(
        message.contains("plugin test/probe was denied")
            && message.contains("capability ui")
            && message.contains("lack `ui`"),
        "{message}"
    );
    assert!(journal.records().is_empty());
}

#[test]
fn conflicting_actions_from_two_plugins_are_rejected_whole() {
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        ui: true,
        ..Grants::default()
    };
    let mut dispatcher = Dispatcher::new(vec![
        probe("test/a", Some(effects("test/a", grants.clone(), &journal))),
        probe("test/b", Some(effects("test/b", grants, &journal))),
    ]);
    let mut surface = NotifyOnly::default();
    dispatcher.run_command("test/a", "model", "m1").unwrap();
    dispatcher.run_command("test/b", "model", "m2").unwrap();
    dispatcher
        .run_command("test/a", "intent", "notify drop")
        .unwrap();
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert!(released.actions.is_empty());
    assert_eq!(released.shown, 0);
    assert_eq!(
        released.diagnostics,
        [
            "conflicting actions: test/a and test/b both set the model in one batch; the batch was rejected whole, nothing was applied"
        ]
    );
    assert!(journal.records().is_empty());
}

#[test]
fn an_effect_in_flight_keeps_its_evidence_when_the_plugin_is_stopped() {
    // The server answers only after the abort's grace has run out, so the
    // plugin is aborted while the host performs its request; the request
    // completes and is recorded, then the plugin (which ignores
    // cancellation) is stopped.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            .unwrap();
    });
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        net: vec!["127.0.0.1".to_owned()],
        ..Grants::default()
    };
    let limits = Limits {
        call_deadline: std::time::Duration::from_secs(30),
        abort_grace: std::time::Duration::from_millis(100),
        ..Limits::default()
    };
    let mut plugin = ExtensionComponent::load(
        "test/probe",
        &guest("smith_plugin_probe.wasm"),
        None,
        limits,
    )
    .unwrap()
    .instantiate_with(Some(
        effects("test/probe", grants, &journal).with_net(client()),
    ))
    .unwrap();
    let handle = plugin.abort_handle();
    let aborter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        handle.abort();
    });
    let start = std::time::Instant::now();
    let err = plugin
        .run_command("get-spin", &format!("http://127.0.0.1:{port}/slow"))
        .unwrap_err();
    let took = start.elapsed();
    aborter.join().unwrap();
    server.join().unwrap();
    assert_eq!(err.kind, smith_plugins::ErrorKind::AbortGrace, "{err}");
    assert_eq!(err.plugin, "test/probe");
    assert_eq!(err.phase, smith_plugins::Phase::Call("run-command"));
    assert!(!plugin.is_alive());
    // The host call was not cut short: the response came and was recorded.
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert_eq!(intent_tools(&journal), ["plugin.http-request"]);
    assert_eq!(
        effect_states(&journal.records()),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Ok,
                mutation: Mutation::NotApplied
            }
        )]
    );
}

#[test]
fn an_interrupt_with_no_call_in_flight_leaves_the_next_call_alone() {
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", Grants::none(), &journal)),
    );
    plugin.abort_handle().interrupt();
    let actions = plugin.run_command("model", "m-2").unwrap();
    assert_eq!(actions, vec![Action::SetModel("m-2".to_owned())]);
    assert!(plugin.is_alive());
}
