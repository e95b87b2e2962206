//! Host effects (list-dir, read-file, write-file, edit-file, run-process,
//! session-entries, http-request, secrets, vcs, UI intents) checked against
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
    let (log, _) = smith_plugins::dispatch::lock_plugin(&dispatcher.plugins()[0]).take_log();
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

// ---- files: list-dir, write-file, edit-file ----

/// The unit separator the probe splits its command arguments on.
const US: &str = "\u{1f}";

fn completed(journal: &MemoryJournal) -> Vec<(String, EffectState)> {
    effect_states(&journal.records())
}

fn fs_grants(data: &std::path::Path, read: &[&str], write: &[&str]) -> Grants {
    Grants {
        data_dir: data.to_path_buf(),
        fs_read: read.iter().map(|s| (*s).to_owned()).collect(),
        fs_write: write.iter().map(|s| (*s).to_owned()).collect(),
        ..Grants::default()
    }
}

#[test]
fn a_granted_listing_names_entries_with_their_kinds_and_is_journaled() {
    let (_dir, data) = data_dir();
    std::fs::create_dir(data.join("notes/sub")).unwrap();
    std::os::unix::fs::symlink("today.md", data.join("notes/link")).unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let grants = fs_grants(&data, &["notes"], &[]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let actions = plugin.run_command("ls", "notes").unwrap();
    assert_eq!(
        notified(&actions),
        ["link:symlink,sub:dir,today.md:file truncated=false"]
    );
    assert_eq!(intent_tools(&journal), ["plugin.list-dir"]);
    assert_eq!(
        completed(&journal),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Ok,
                mutation: Mutation::NotApplied
            }
        )]
    );
    // A folder without the grant: denied, naming the folder to grant.
    let err = plugin.run_command("ls", "secret").unwrap_err().to_string();
    assert!(
        err.contains("denied: plugin test/probe was denied list-dir \"secret\""),
        "{err}"
    );
    let denials = plugin.take_denials();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].capability, "fs-read");
    assert_eq!(denials[0].missing_grant, "fs-read \"secret\"");
    // Leaving the data folder: invalid.
    for path in ["..", "/etc", "notes/../.."] {
        let err = plugin.run_command("ls", path).unwrap_err().to_string();
        assert!(err.contains("invalid: "), "{path}: {err}");
    }
    assert_eq!(journal.records().len(), 2, "only the granted listing");
}

#[test]
fn a_listing_is_bounded_and_says_it_was_cut() {
    let (_dir, data) = data_dir();
    let many = data.join("notes/many");
    std::fs::create_dir(&many).unwrap();
    let count = smith_plugins::effects::MAX_DIR_ENTRIES + 5;
    for i in 0..count {
        std::fs::write(many.join(format!("f{i:05}")), "").unwrap();
    }
    let journal = Arc::new(MemoryJournal::new());
    let grants = fs_grants(&data, &["notes"], &[]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let text = notified(&plugin.run_command("ls", "notes/many").unwrap()).remove(0);
    let (entries, flag) = text.rsplit_once(' ').unwrap();
    assert_eq!(flag, "truncated=true");
    let names: Vec<&str> = entries.split(',').collect();
    assert_eq!(names.len(), smith_plugins::effects::MAX_DIR_ENTRIES);
    assert_eq!(names[0], "f00000:file");
    assert_eq!(
        names[names.len() - 1],
        format!("f{:05}:file", smith_plugins::effects::MAX_DIR_ENTRIES - 1)
    );
}

#[test]
fn a_granted_write_replaces_the_file_atomically_and_is_journaled_applied() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let grants = fs_grants(&data, &[], &["out"]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    // Missing parent folders (the granted one included) are created.
    let actions = plugin
        .run_command("write", &format!("out/a/b/c.txt{US}first"))
        .unwrap();
    assert_eq!(notified(&actions), ["wrote out/a/b/c.txt"]);
    assert_eq!(
        std::fs::read_to_string(data.join("out/a/b/c.txt")).unwrap(),
        "first"
    );
    plugin
        .run_command("write", &format!("out/a/b/c.txt{US}second"))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(data.join("out/a/b/c.txt")).unwrap(),
        "second"
    );
    // No temporary file is left beside it.
    let left: Vec<String> = std::fs::read_dir(data.join("out/a/b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["c.txt"]);
    assert_eq!(
        intent_tools(&journal),
        ["plugin.write-file", "plugin.write-file"]
    );
    let applied = EffectState::Completed {
        outcome: Outcome::Ok,
        mutation: Mutation::Applied,
    };
    assert_eq!(
        completed(&journal),
        vec![
            ("fx-1".to_owned(), applied.clone()),
            ("fx-2".to_owned(), applied)
        ]
    );
}

#[test]
fn a_write_without_the_grant_is_denied_and_nothing_is_written() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    // Reading a folder does not grant writing it.
    let grants = fs_grants(&data, &["notes"], &["out"]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let err = plugin
        .run_command("write", &format!("notes/today.md{US}overwritten"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("denied: plugin test/probe was denied write-file \"notes/today.md\"")
            && err.contains("needs the capability fs-write"),
        "{err}"
    );
    let err = plugin
        .run_command("edit", &format!("notes/today.md{US}milk{US}eggs"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("denied: ") && err.contains("edit-file"),
        "{err}"
    );
    let denials = plugin.take_denials();
    assert_eq!(denials.len(), 2);
    assert!(denials.iter().all(|d| d.plugin == "test/probe"
        && d.capability == "fs-write"
        && d.missing_grant == "fs-write \"notes\""));
    assert_eq!(
        std::fs::read_to_string(data.join("notes/today.md")).unwrap(),
        "buy milk"
    );
    assert!(journal.records().is_empty());
}

#[test]
fn writes_leaving_the_granted_folder_are_invalid_and_change_nothing() {
    let (dir, data) = data_dir();
    std::fs::create_dir(data.join("out")).unwrap();
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    // A folder symlink leading out, a file symlink leading out, a dangling
    // symlink, and a granted folder that is itself a symlink to another
    // folder of the data folder.
    std::os::unix::fs::symlink(&outside, data.join("out/dir-link")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), data.join("out/file-link")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), data.join("out/dangling")).unwrap();
    std::os::unix::fs::symlink(data.join("secret"), data.join("alias")).unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let grants = fs_grants(&data, &[], &["out", "alias"]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    for path in ["../x", "/tmp/x", "out/../notes/x", "out/../../x"] {
        let err = plugin
            .run_command("write", &format!("{path}{US}bad"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid: ") && err.contains("no `..`, no absolute path"),
            "{path}: {err}"
        );
    }
    for path in [
        "out/dir-link/x",
        "out/dir-link/new/x",
        "out/file-link",
        "out/dangling",
        "alias/key",
        "alias/new",
    ] {
        let err = plugin
            .run_command("write", &format!("{path}{US}bad"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid: ") && err.contains("symlink"),
            "{path}: {err}"
        );
        let err = plugin
            .run_command("edit", &format!("{path}{US}a{US}b"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid: ") && err.contains("symlink"),
            "{path}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("outside.txt")).unwrap(),
        "outside"
    );
    assert_eq!(
        std::fs::read_to_string(data.join("secret/key")).unwrap(),
        "hunter2"
    );
    assert!(!data.join("secret/new").exists());
    assert!(!dir.path().join("x").exists());
    assert!(journal.records().is_empty(), "refused before any record");
    assert!(plugin.take_denials().is_empty(), "invalid, not denied");
}

#[test]
fn an_edit_replaces_exactly_one_occurrence_or_changes_nothing() {
    let (_dir, data) = data_dir();
    std::fs::create_dir(data.join("out")).unwrap();
    std::fs::write(data.join("out/doc.txt"), "one two two").unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let grants = fs_grants(&data, &[], &["out"]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let actions = plugin
        .run_command("edit", &format!("out/doc.txt{US}one{US}1"))
        .unwrap();
    assert_eq!(notified(&actions), ["edited out/doc.txt"]);
    assert_eq!(
        std::fs::read_to_string(data.join("out/doc.txt")).unwrap(),
        "1 two two"
    );
    let err = plugin
        .run_command("edit", &format!("out/doc.txt{US}two{US}2"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("failed: ") && err.contains("old-text occurs 2 times"),
        "{err}"
    );
    let err = plugin
        .run_command("edit", &format!("out/doc.txt{US}three{US}3"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("failed: ") && err.contains("not found (0 occurrences)"),
        "{err}"
    );
    let err = plugin
        .run_command("edit", &format!("out/missing.txt{US}a{US}b"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("failed: ") && err.contains("cannot open"),
        "{err}"
    );
    let err = plugin
        .run_command("edit", &format!("out/doc.txt{US}{US}x"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid: ") && err.contains("old-text is empty"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(data.join("out/doc.txt")).unwrap(),
        "1 two two",
        "refused edits leave the file unchanged"
    );
    assert_eq!(intent_tools(&journal), ["plugin.edit-file"; 4]);
    let refused = EffectState::Completed {
        outcome: Outcome::Error,
        mutation: Mutation::NotApplied,
    };
    assert_eq!(
        completed(&journal),
        vec![
            (
                "fx-1".to_owned(),
                EffectState::Completed {
                    outcome: Outcome::Ok,
                    mutation: Mutation::Applied
                }
            ),
            ("fx-2".to_owned(), refused.clone()),
            ("fx-3".to_owned(), refused.clone()),
            ("fx-4".to_owned(), refused),
        ]
    );
}

#[test]
fn a_write_that_cannot_happen_is_recorded_not_applied() {
    // The target is an existing folder: the temporary file is written and
    // the rename fails, so it is removed and nothing changed.
    let (_dir, data) = data_dir();
    std::fs::create_dir_all(data.join("out/folder")).unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let grants = fs_grants(&data, &[], &["out"]);
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let err = plugin
        .run_command("write", &format!("out/folder{US}x"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("failed: ") && err.contains("rename"), "{err}");
    assert!(data.join("out/folder").is_dir());
    assert_eq!(std::fs::read_dir(data.join("out")).unwrap().count(), 1);
    assert_eq!(
        completed(&journal),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Error,
                mutation: Mutation::NotApplied
            }
        )]
    );
}

// ---- processes: run-process ----

fn process_grants(data: &std::path::Path) -> Grants {
    Grants {
        data_dir: data.to_path_buf(),
        process: true,
        ..Grants::default()
    }
}

fn run_arg(timeout_ms: u32, cwd: &str, stdin: &str, argv: &[&str]) -> String {
    let mut fields = vec![timeout_ms.to_string(), cwd.to_owned(), stdin.to_owned()];
    fields.extend(argv.iter().map(|a| (*a).to_owned()));
    fields.join(US)
}

#[test]
fn a_granted_process_runs_with_stdin_and_cwd_and_is_journaled_unknown() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    let actions = plugin
        .run_command("run", &run_arg(10_000, "", "hello", &["cat"]))
        .unwrap();
    assert_eq!(
        notified(&actions),
        ["exited 0", "stdout[5]=hello", "stderr[0]="]
    );
    let actions = plugin
        .run_command("run", &run_arg(10_000, "notes", "", &["pwd"]))
        .unwrap();
    let expected = data.join("notes").canonicalize().unwrap();
    assert_eq!(
        notified(&actions)[1],
        format!(
            "stdout[{}]={}\n",
            expected.as_os_str().len() + 1,
            expected.display()
        )
    );
    let actions = plugin
        .run_command(
            "run",
            &run_arg(10_000, ".", "", &["sh", "-c", "echo oops >&2; exit 3"]),
        )
        .unwrap();
    assert_eq!(
        notified(&actions),
        ["exited 3", "stdout[0]=", "stderr[5]=oops\n"]
    );
    assert_eq!(intent_tools(&journal), ["plugin.run-process"; 3]);
    let unknown = |outcome| EffectState::Completed {
        outcome,
        mutation: Mutation::Unknown,
    };
    assert_eq!(
        completed(&journal),
        vec![
            ("fx-1".to_owned(), unknown(Outcome::Ok)),
            ("fx-2".to_owned(), unknown(Outcome::Ok)),
            ("fx-3".to_owned(), unknown(Outcome::Error)),
        ]
    );
    // A program that cannot be started ran nothing.
    let err = plugin
        .run_command("run", &run_arg(10_000, "", "", &["smith-no-such-program"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("failed: ")
            && err.contains("could not start it")
            && err.contains("nothing ran"),
        "{err}"
    );
    assert_eq!(
        completed(&journal)[3],
        (
            "fx-4".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Error,
                mutation: Mutation::NotApplied
            }
        )
    );
}

#[test]
fn a_process_without_the_grant_is_denied_and_never_started() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        data_dir: data.clone(),
        fs_read: vec!["notes".to_owned()],
        fs_write: vec!["notes".to_owned()],
        ..Grants::default()
    };
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let err = plugin
        .run_command("run", &run_arg(10_000, "", "", &["touch", "marker"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("denied: plugin test/probe was denied run-process \"touch\"")
            && err.contains("needs the capability process")
            && err.contains("lack `process`"),
        "{err}"
    );
    let denials = plugin.take_denials();
    assert_eq!(denials.len(), 1);
    assert_eq!(
        (denials[0].capability, denials[0].missing_grant.as_str()),
        ("process", "process")
    );
    assert!(!data.join("marker").exists());
    assert!(journal.records().is_empty());
}

#[test]
fn a_working_folder_leaving_the_data_folder_is_refused_before_spawning() {
    let (dir, data) = data_dir();
    std::os::unix::fs::symlink(dir.path(), data.join("up")).unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    for cwd in ["..", "/tmp", "notes/../..", "up"] {
        let err = plugin
            .run_command("run", &run_arg(10_000, cwd, "", &["touch", "marker"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid: ") && err.contains("nothing ran"),
            "{cwd}: {err}"
        );
    }
    let err = plugin
        .run_command("run", &run_arg(0, "", "", &["true"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid: ") && err.contains("timeout-ms 0"),
        "{err}"
    );
    assert!(!dir.path().join("marker").exists());
    assert!(journal.records().is_empty());
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_process_past_its_timeout_is_killed_with_its_group() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    // The shell's child (sleep) holds the output pipe too and says its
    // pid: killing the whole group ends it with the shell.
    let start = std::time::Instant::now();
    let actions = plugin
        .run_command(
            "run",
            &run_arg(
                300,
                "",
                "",
                &[
                    "sh",
                    "-c",
                    "echo started; sleep 30 & echo $!; wait; echo never",
                ],
            ),
        )
        .unwrap();
    let took = start.elapsed();
    let shown = notified(&actions);
    assert_eq!(shown[0], "timed-out");
    assert_eq!(shown[2], "stderr[0]=");
    let stdout = shown[1].split_once('=').unwrap().1;
    let (first, pid) = stdout.trim_end().split_once('\n').unwrap();
    assert_eq!(first, "started");
    let pid: u32 = pid.parse().unwrap();
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let waited = std::time::Instant::now();
    while !ended(pid) && waited.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(ended(pid), "the shell's child {pid} outlived the kill");
    assert_eq!(
        completed(&journal),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Error,
                mutation: Mutation::Unknown
            }
        )]
    );
}

#[test]
fn what_a_process_leaves_running_in_its_group_ends_with_it() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    let start = std::time::Instant::now();
    let actions = plugin
        .run_command(
            "run",
            &run_arg(30_000, "", "", &["sh", "-c", "sleep 30 & echo $!"]),
        )
        .unwrap();
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let shown = notified(&actions);
    assert_eq!(shown[0], "exited 0");
    let pid: u32 = shown[1]
        .split_once('=')
        .unwrap()
        .1
        .trim_end()
        .parse()
        .unwrap();
    let waited = std::time::Instant::now();
    while !ended(pid) && waited.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(ended(pid), "the background child {pid} outlived its shell");
}

#[test]
fn process_output_is_bounded_and_flagged_truncated() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    let actions = plugin
        .run_command(
            "run",
            &run_arg(
                30_000,
                "",
                "",
                &["sh", "-c", "head -c 3000000 /dev/zero; echo small >&2"],
            ),
        )
        .unwrap();
    let max = smith_plugins::effects::MAX_PROCESS_OUTPUT;
    assert_eq!(
        notified(&actions),
        [
            "exited 0".to_owned(),
            format!("stdout[{max},truncated]=<{max} bytes>"),
            "stderr[6]=small\n".to_owned()
        ]
    );
}

/// The process's environment holds only `PATH`: a variable planted in the
/// host's environment does not reach it. The test runs itself again in a
/// child test process whose environment has the planted variable.
#[test]
fn a_process_sees_no_environment_but_path() {
    const NAME: &str = "SMITH_TEST_SECRET";
    let Ok(secret) = std::env::var(NAME) else {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "effects::a_process_sees_no_environment_but_path",
                "--test-threads=1",
            ])
            .env(NAME, "sk-planted-4242")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("1 passed"),
            "the check ran in the child: {text}"
        );
        return;
    };
    assert_eq!(secret, "sk-planted-4242");
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    let actions = plugin
        .run_command("run", &run_arg(10_000, "", "", &["env"]))
        .unwrap();
    let shown = notified(&actions);
    assert_eq!(shown[0], "exited 0");
    let path = std::env::var("PATH").unwrap();
    let expected = format!("PATH={path}\n");
    assert_eq!(
        shown[1],
        format!("stdout[{}]={expected}", expected.len()),
        "only PATH is passed on"
    );
    assert!(!shown[1].contains("sk-planted-4242"));
}

#[test]
fn a_cancelled_call_kills_its_process_and_keeps_the_evidence() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal)),
    );
    let handle = plugin.abort_handle();
    let aborter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        handle.abort();
    });
    let start = std::time::Instant::now();
    let actions = plugin
        .run_command("run", &run_arg(60_000, "", "", &["sleep", "60"]))
        .unwrap();
    let took = start.elapsed();
    aborter.join().unwrap();
    assert_eq!(notified(&actions)[0], "cancelled");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert!(plugin.is_alive(), "the plugin returned within its grace");
    assert_eq!(
        completed(&journal),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Cancelled,
                mutation: Mutation::Unknown
            }
        )]
    );
}

#[test]
fn a_process_outliving_the_call_deadline_is_killed_and_recorded() {
    let (_dir, data) = data_dir();
    let journal = Arc::new(MemoryJournal::new());
    let limits = Limits {
        call_deadline: std::time::Duration::from_millis(300),
        ..Limits::default()
    };
    let mut plugin = ExtensionComponent::load(
        "test/probe",
        &guest("smith_plugin_probe.wasm"),
        None,
        limits,
    )
    .unwrap()
    .instantiate_with(Some(effects("test/probe", process_grants(&data), &journal)))
    .unwrap();
    let start = std::time::Instant::now();
    let err = plugin
        .run_command("run", &run_arg(60_000, "", "", &["sleep", "60"]))
        .unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind, smith_plugins::ErrorKind::Deadline, "{err}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert_eq!(
        completed(&journal),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Cancelled,
                mutation: Mutation::Unknown
            }
        )]
    );
}

// ---- the session: session-entries ----

fn session_of(
    messages: &[(&str, &str)],
    asked: Arc<std::sync::Mutex<Vec<(u64, u32)>>>,
) -> smith_plugins::effects::SessionSource {
    let messages: Vec<(String, String)> = messages
        .iter()
        .map(|(r, t)| ((*r).to_owned(), (*t).to_owned()))
        .collect();
    Arc::new(move |offset, limit| {
        asked.lock().unwrap().push((offset, limit));
        // Answers more than asked for: the host bounds the page itself.
        messages
            .iter()
            .skip(usize::try_from(offset).unwrap())
            .cloned()
            .collect()
    })
}

#[test]
fn session_entries_are_paged_bounded_and_journaled_as_reads() {
    let journal = Arc::new(MemoryJournal::new());
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let grants = Grants {
        session_read: true,
        ..Grants::default()
    };
    let fx = effects("test/probe", grants, &journal).with_session(session_of(
        &[
            ("user", "a"),
            ("assistant", "b"),
            ("user", "c"),
            ("tool", "d"),
        ],
        Arc::clone(&asked),
    ));
    let mut plugin = probe("test/probe", Some(fx));
    assert_eq!(
        notified(&plugin.run_command("session", "1 2").unwrap()),
        ["assistant: b", "user: c"]
    );
    assert_eq!(
        notified(&plugin.run_command("session", "3 10").unwrap()),
        ["tool: d"]
    );
    assert!(notified(&plugin.run_command("session", "9 10").unwrap()).is_empty());
    // A page larger than the bound is cut to it before the source is asked.
    plugin.run_command("session", "0 100000").unwrap();
    assert_eq!(
        *asked.lock().unwrap(),
        [
            (1, 2),
            (3, 10),
            (9, 10),
            (0, smith_plugins::effects::MAX_SESSION_PAGE)
        ]
    );
    assert_eq!(intent_tools(&journal), ["plugin.session-entries"; 4]);
    assert!(completed(&journal).iter().all(|(_, state)| *state
        == EffectState::Completed {
            outcome: Outcome::Ok,
            mutation: Mutation::NotApplied
        }));
}

#[test]
fn session_entries_without_the_grant_are_denied_and_never_asked() {
    let journal = Arc::new(MemoryJournal::new());
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let fx = effects("test/probe", Grants::none(), &journal)
        .with_session(session_of(&[("user", "private")], Arc::clone(&asked)));
    let mut plugin = probe("test/probe", Some(fx));
    let err = plugin
        .run_command("session", "0 10")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("denied: plugin test/probe was denied session-entries from entry 0")
            && err.contains("needs the capability session-read"),
        "{err}"
    );
    assert!(!err.contains("private"));
    let denials = plugin.take_denials();
    assert_eq!(
        (denials[0].capability, denials[0].missing_grant.as_str()),
        ("session-read", "session-read")
    );
    assert!(asked.lock().unwrap().is_empty());
    assert!(journal.records().is_empty());

    // Granted, but the host offers no session: a recorded failure.
    let grants = Grants {
        session_read: true,
        ..Grants::default()
    };
    let mut plugin = probe("test/probe", Some(effects("test/probe", grants, &journal)));
    let err = plugin
        .run_command("session", "0 10")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("failed: ") && err.contains("no session"),
        "{err}"
    );
    assert_eq!(
        completed(&journal),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Error,
                mutation: Mutation::NotApplied
            }
        )]
    );
}

#[test]
fn manifest_capabilities_become_grants() {
    let manifest = smith_plugins::manifest::Manifest::parse(
        r#"
name "example/tools"
version "0.1.0"
api 1
world "extension"
component "plugin.wasm"
capabilities {
    fs-read "notes"
    fs-write "out"
    process
    session-read
    secrets "github.token"
}
"#,
        "plugin.kdl",
    )
    .unwrap();
    let grants = Grants::from_manifest(&manifest, std::path::Path::new("/plugins"));
    assert_eq!(grants.fs_read, ["notes"]);
    assert_eq!(grants.fs_write, ["out"]);
    assert!(grants.process && grants.session_read);
    assert_eq!(grants.secrets, ["github.token"]);
    assert!(!grants.ui && grants.net.is_empty());
}

#[test]
fn an_instance_without_effects_is_denied_the_new_effects_too() {
    let mut plugin = probe("test/probe", None);
    for (command, argument, capability) in [
        ("ls", "notes".to_owned(), "fs-read"),
        ("write", format!("out/x{US}y"), "fs-write"),
        ("edit", format!("out/x{US}y{US}z"), "fs-write"),
        ("run", run_arg(1000, "", "", &["true"]), "process"),
        ("session", "0 1".to_owned(), "session-read"),
    ] {
        let err = plugin
            .run_command(command, &argument)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("denied: ") && err.contains(&format!("capability {capability}")),
            "{command}: {err}"
        );
    }
    assert_eq!(plugin.take_denials().len(), 5);
}

#[test]
fn help_describes_every_new_import() {
    for (item, phrase) in [
        ("host.list-dir", "Lists a folder"),
        ("host.write-file", "Writes a whole file"),
        ("host.edit-file", "exactly once"),
        ("host.run-process", "Runs a program"),
        ("host.session-entries", "Pages through the current session"),
        ("host.process-end.timed-out", "killed it"),
        ("host.secret-available", "Whether the secret"),
        ("host.register-secret", "Registers a credential"),
        ("host.vcs-snapshot", "Records the project"),
        ("host.vcs-diff", "The diff from snapshot"),
        ("host.vcs-restore", "Makes the project match"),
    ] {
        let text = smith_plugins::help::render(Some(item)).unwrap();
        assert!(
            text.starts_with(&format!("{item} (")) && text.contains(phrase),
            "{item}: {text}"
        );
    }
}

#[test]
fn a_session_page_stops_at_the_byte_bound() {
    let journal = Arc::new(MemoryJournal::new());
    let big = "x".repeat(9 << 20);
    let grants = Grants {
        session_read: true,
        ..Grants::default()
    };
    let fx = effects("test/probe", grants, &journal).with_session(Arc::new(move |_, _| {
        vec![
            ("user".to_owned(), big.clone()),
            ("assistant".to_owned(), big.clone()),
        ]
    }));
    let mut plugin = probe("test/probe", Some(fx));
    let shown = notified(&plugin.run_command("session", "0 2").unwrap());
    assert_eq!(shown.len(), 1, "two 9 MiB entries pass the 16 MiB bound");
    assert_eq!(shown[0].len(), "user: ".len() + (9 << 20));
    assert_eq!(intent_tools(&journal), ["plugin.session-entries"]);
}

/// Serves one HTTP exchange and returns the value of the `authorization`
/// header it received.
fn auth_echo_server() -> (u16, std::thread::JoinHandle<Option<String>>) {
    let (port, server) = one_shot_server();
    let handle = std::thread::spawn(move || {
        let head = server.join().unwrap();
        head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("authorization")
                .then(|| value.trim().to_owned())
        })
    });
    (port, handle)
}

const TOKEN: &str = "ghp_probe_token_5f1c9a";

fn secret_grants(handles: &[&str]) -> Grants {
    Grants {
        net: vec!["127.0.0.1".to_owned()],
        secrets: handles.iter().map(|h| (*h).to_owned()).collect(),
        ..Grants::default()
    }
}

fn token_source() -> smith_plugins::effects::SecretSource {
    Arc::new(|handle: &str| Ok((handle == "github.token").then(|| TOKEN.to_owned())))
}

/// Every intent's input and completion's output bytes (canonical CBOR,
/// whose text strings are stored as plain UTF-8), as lossy text.
fn journal_text(journal: &MemoryJournal) -> String {
    journal
        .records()
        .iter()
        .map(|r| match r {
            Record::Intent(i) => String::from_utf8_lossy(&i.input).into_owned(),
            Record::Completion(c) => String::from_utf8_lossy(&c.output).into_owned(),
            Record::Event(e) => format!("{e:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_granted_secret_in_a_header_is_put_in_by_the_host_and_never_journaled() {
    let (port, server) = auth_echo_server();
    let journal = Arc::new(MemoryJournal::new());
    let fx = effects("test/probe", secret_grants(&["github.token"]), &journal)
        .with_net(client())
        .with_secrets(token_source());
    let mut plugin = probe("test/probe", Some(fx));
    let actions = plugin
        .run_command(
            "get-auth",
            &format!("http://127.0.0.1:{port}/user{US}Bearer {{secret:github.token}}"),
        )
        .unwrap();
    assert_eq!(notified(&actions), ["200 hello"]);
    assert_eq!(server.join().unwrap(), Some(format!("Bearer {TOKEN}")));
    assert_eq!(intent_tools(&journal), ["plugin.http-request"]);
    let text = journal_text(&journal);
    assert!(
        text.contains("github.token"),
        "the handle is recorded: {text}"
    );
    assert!(!text.contains(TOKEN), "the value is not: {text}");
    // Used once, the value is redacted wherever smith prints it.
    assert_eq!(
        smith_diag::secrets::redact(&format!("token {TOKEN}")),
        format!("token {}", smith_diag::secrets::REDACTED)
    );
}

#[test]
fn a_secret_the_plugin_is_not_granted_is_denied_and_nothing_is_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let journal = Arc::new(MemoryJournal::new());
    let fx = effects("test/probe", secret_grants(&["gitlab.token"]), &journal)
        .with_net(client())
        .with_secrets(token_source());
    let mut plugin = probe("test/probe", Some(fx));
    let err = plugin
        .run_command(
            "get-auth",
            &format!("http://127.0.0.1:{port}/{US}token {{secret:github.token}}"),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs the capability secrets"), "{err}");
    assert!(err.contains("secrets \"github.token\""), "{err}");
    assert_eq!(plugin.take_denials()[0].capability, "secrets");
    assert!(journal.records().is_empty());
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing connected"
    );
}

#[test]
fn an_unset_secret_fails_the_request_before_it_is_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let journal = Arc::new(MemoryJournal::new());
    let fx = effects("test/probe", secret_grants(&["gitlab.token"]), &journal)
        .with_net(client())
        .with_secrets(token_source());
    let mut plugin = probe("test/probe", Some(fx));
    let err = plugin
        .run_command(
            "get-auth",
            &format!("http://127.0.0.1:{port}/{US}{{secret:gitlab.token}}"),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the secret gitlab.token is not set")
            && err.contains("smith auth set gitlab --slot token")
            && err.contains("nothing was sent"),
        "{err}"
    );
    assert_eq!(
        effect_states(&journal.records()),
        vec![(
            "fx-1".to_owned(),
            EffectState::Completed {
                outcome: Outcome::Error,
                mutation: Mutation::NotApplied
            }
        )]
    );
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing connected"
    );
}

#[test]
fn a_malformed_secret_reference_is_invalid_and_unrecorded() {
    let journal = Arc::new(MemoryJournal::new());
    let fx = effects("test/probe", secret_grants(&["github.token"]), &journal)
        .with_net(client())
        .with_secrets(token_source());
    let mut plugin = probe("test/probe", Some(fx));
    for value in ["Bearer {secret:github.token", "{secret:}"] {
        let err = plugin
            .run_command("get-auth", &format!("http://127.0.0.1:9/{US}{value}"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid: ") && err.contains("header \"authorization\""),
            "{value}: {err}"
        );
    }
    assert!(journal.records().is_empty());
}

#[test]
fn secret_available_says_whether_a_granted_secret_is_set_and_nothing_more() {
    let journal = Arc::new(MemoryJournal::new());
    let fx = effects(
        "test/probe",
        secret_grants(&["github.token", "gitlab.token"]),
        &journal,
    )
    .with_secrets(token_source());
    let mut plugin = probe("test/probe", Some(fx));
    let mut shown = Vec::new();
    for handle in ["github.token", "gitlab.token"] {
        shown.extend(notified(&plugin.run_command("secret", handle).unwrap()));
    }
    assert_eq!(
        shown,
        [
            "github.token available=true",
            "gitlab.token available=false"
        ]
    );
    let err = plugin
        .run_command("secret", "openai.api_key")
        .unwrap_err()
        .to_string();
    assert!(err.contains("secrets \"openai.api_key\""), "{err}");
    assert_eq!(
        intent_tools(&journal),
        ["plugin.secret-available", "plugin.secret-available"]
    );
    assert!(!journal_text(&journal).contains(TOKEN));
}

#[test]
fn a_registered_secret_is_redacted_from_then_on() {
    let journal = Arc::new(MemoryJournal::new());
    let value = "sess_registered_7d2e41";
    let fx = effects("test/probe", secret_grants(&["github.token"]), &journal);
    let mut plugin = probe("test/probe", Some(fx));
    assert_eq!(
        notified(&plugin.run_command("register-secret", value).unwrap()),
        ["registered"]
    );
    assert_eq!(
        smith_diag::secrets::redact(&format!("got {value}.")),
        format!("got {}.", smith_diag::secrets::REDACTED)
    );
    assert!(!journal_text(&journal).contains(value));
    let err = plugin
        .run_command("register-secret", "short")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid: ") && err.contains("5 bytes"),
        "{err}"
    );
    let mut ungranted = probe(
        "test/probe",
        Some(effects("test/probe", Grants::default(), &journal)),
    );
    let err = ungranted
        .run_command("register-secret", "another_value_123")
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs the capability secrets"), "{err}");
    assert_eq!(intent_tools(&journal), ["plugin.register-secret"]);
}

/// A project folder with two files and a `.gitignore`, and a folder for
/// its snapshot store.
struct Project {
    dir: tempfile::TempDir,
    store: tempfile::TempDir,
}

impl Project {
    fn root(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The project's store, opened as the plugin's effects open it.
    fn vcs(&self) -> smith_vcs::Vcs {
        let store = smith_engine::checkpoint::store_dir(self.store.path(), self.root());
        smith_vcs::Vcs::open(self.root(), &store, smith_vcs::Options::default()).unwrap()
    }
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/b.rs"), "fn b() {}\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    Project {
        dir,
        store: tempfile::tempdir().unwrap(),
    }
}

fn vcs_probe(p: &Project, journal: &Arc<MemoryJournal>) -> WasmExtension {
    let grants = Grants {
        vcs: true,
        ..Grants::default()
    };
    let fx = effects("test/probe", grants, journal)
        .with_project(p.root().to_owned())
        .with_checkpoints_root(p.store.path().to_owned());
    probe("test/probe", Some(fx))
}

fn one(actions: &[Action]) -> String {
    let shown = notified(actions);
    assert_eq!(shown.len(), 1, "{shown:?}");
    shown[0].clone()
}

#[test]
fn snapshots_diff_and_restore_the_project_in_smiths_own_store() {
    let p = project();
    let root = p.root();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = vcs_probe(&p, &journal);

    // An untracked file is part of the snapshot; an ignored one is not.
    std::fs::write(root.join("notes.md"), "draft\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/out.bin"), "build output").unwrap();
    let first = one(&plugin.run_command("snapshot", "before edits").unwrap());
    assert_eq!(first.len(), 64, "{first}");
    let mut vcs = p.vcs();
    let id = vcs.resolve(&first).unwrap();
    assert_eq!(
        vcs.read(id, std::path::Path::new("notes.md")).unwrap(),
        Some(b"draft\n".to_vec())
    );
    assert_eq!(
        vcs.read(id, std::path::Path::new("target/out.bin"))
            .unwrap(),
        None
    );
    drop(vcs);

    // Edit one file, remove one, add one.
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::remove_file(root.join("notes.md")).unwrap();
    std::fs::write(root.join("src/c.rs"), "fn c() {}\n").unwrap();
    let actions = plugin.run_command("diff", &format!("{first}{US}")).unwrap();
    let shown = notified(&actions);
    let diff = &shown[0];
    assert!(
        diff.contains("diff --smith a/a.txt b/a.txt") && diff.contains("+two"),
        "{diff}"
    );
    assert!(
        diff.contains("deleted file mode") && diff.contains("a/notes.md"),
        "{diff}"
    );
    assert!(
        diff.contains("new file mode") && diff.contains("b/src/c.rs"),
        "{diff}"
    );
    assert_eq!(shown[1], "truncated=false");

    // Restore: back to the snapshot; the ignored file stays.
    let undo = one(&plugin.run_command("restore", &first).unwrap());
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.md")).unwrap(),
        "draft\n"
    );
    assert!(!root.join("src/c.rs").exists());
    assert!(root.join("target/out.bin").exists());

    // Restoring the id it returned undoes the restore.
    let redo = one(&plugin.run_command("restore", &undo).unwrap());
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!root.join("notes.md").exists());
    assert!(root.join("src/c.rs").exists());
    // And the two snapshots differ by exactly those edits.
    let between = notified(
        &plugin
            .run_command("diff", &format!("{first}{US}{undo}"))
            .unwrap(),
    );
    assert!(between[0].contains("+two"), "{}", between[0]);
    // The snapshot before the second restore is the first one again.
    assert_eq!(redo, first);

    assert_eq!(
        intent_tools(&journal),
        [
            "plugin.vcs-snapshot",
            "plugin.vcs-diff",
            "plugin.vcs-restore",
            "plugin.vcs-restore",
            "plugin.vcs-diff",
        ]
    );
    let states = effect_states(&journal.records());
    let mutations: Vec<_> = states
        .iter()
        .map(|(_, s)| match s {
            EffectState::Completed { mutation, .. } => *mutation,
            other => panic!("not completed: {other:?}"),
        })
        .collect();
    assert_eq!(
        mutations,
        [
            Mutation::Applied,
            Mutation::NotApplied,
            Mutation::Applied,
            Mutation::Applied,
            Mutation::NotApplied,
        ]
    );
}

#[test]
fn the_vcs_effects_start_no_process() {
    for source in [
        include_str!("../../src/vcs.rs"),
        include_str!("../../src/effects/vcs.rs"),
    ] {
        assert!(!source.contains("std::process"));
        assert!(!source.contains("Command::new"));
    }
}

#[test]
fn vcs_ids_that_are_not_snapshots_are_invalid_and_change_nothing() {
    let p = project();
    let root = p.root();
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = vcs_probe(&p, &journal);
    one(&plugin.run_command("snapshot", "s").unwrap());
    std::fs::write(root.join("a.txt"), "changed\n").unwrap();
    // A well-formed id of no snapshot, an option, junk, too short.
    for id in [
        "0123456789abcdef0123456789abcdef01234567",
        "--output=/tmp/x",
        "zzzz",
        "12",
    ] {
        let err = plugin.run_command("restore", id).unwrap_err().to_string();
        assert!(
            err.contains("invalid: ") && err.contains("vcs-restore"),
            "{id}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "changed\n"
    );
    assert_eq!(intent_tools(&journal), ["plugin.vcs-snapshot"]);
}

#[test]
fn vcs_needs_the_grant_and_a_project_folder() {
    let p = project();
    let journal = Arc::new(MemoryJournal::new());
    let fx = effects("test/probe", Grants::default(), &journal)
        .with_project(p.root().to_owned())
        .with_checkpoints_root(p.store.path().to_owned());
    let mut plugin = probe("test/probe", Some(fx));
    let err = plugin.run_command("snapshot", "x").unwrap_err().to_string();
    assert!(err.contains("needs the capability vcs"), "{err}");
    assert_eq!(plugin.take_denials()[0].missing_grant, "vcs");
    assert_eq!(
        std::fs::read_dir(p.store.path()).unwrap().count(),
        0,
        "no store was made"
    );

    let grants = Grants {
        vcs: true,
        ..Grants::default()
    };
    let fx = effects("test/probe", grants, &journal)
        .with_project(p.root().join("missing"))
        .with_checkpoints_root(p.store.path().to_owned());
    let mut plugin = probe("test/probe", Some(fx));
    let err = plugin.run_command("snapshot", "x").unwrap_err().to_string();
    assert!(
        err.contains("failed: ") && err.contains("opening the project root"),
        "{err}"
    );
    assert!(journal.records().is_empty());
}

fn lifecycle_with_ui(journal: &Arc<MemoryJournal>) -> WasmExtension {
    crate::lifecycle_guest(Arc::clone(journal) as Arc<dyn smith_engine::journal::EffectJournal>)
}

/// The notices a release showed, as `[plugin] text`.
fn shown_notices(surface: &NotifyOnly) -> Vec<String> {
    surface
        .shown
        .iter()
        .filter_map(|(plugin, intent)| match &intent.kind {
            IntentKind::Notify(text) => Some(format!("[{plugin}] {text}")),
            _ => None,
        })
        .collect()
}

#[test]
fn other_plugins_hear_of_vcs_operations_and_the_asker_alone_hears_its_answer() {
    let p = project();
    let root = p.root();
    let journal = Arc::new(MemoryJournal::new());
    let mut dispatcher =
        Dispatcher::new(vec![vcs_probe(&p, &journal), lifecycle_with_ui(&journal)]);
    dispatcher
        .run_command("test/probe", "snapshot", "before edits")
        .unwrap();
    // A snapshot of the same files is the same snapshot.
    let id = p.vcs().snapshot().unwrap().id.to_string();
    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    dispatcher
        .run_command("test/probe", "restore", &id)
        .unwrap();
    let mut surface = NotifyOnly::default();
    dispatcher.release(&mut surface);
    let notices = shown_notices(&surface);
    // The probe's own notices (its snapshot id, its undo id) come first; the
    // lifecycle plugin hears of each operation, the probe does not.
    let heard: Vec<&String> = notices
        .iter()
        .filter(|n| n.starts_with("[test/lifecycle]"))
        .collect();
    assert_eq!(
        heard,
        [
            &format!("[test/lifecycle] vcs-operation snapshot {id}"),
            &format!("[test/lifecycle] vcs-operation restore {id}"),
        ]
    );
    assert!(
        !notices
            .iter()
            .any(|n| n.contains("[test/probe] vcs-operation"))
    );

    // An answer to a question never asked is not delivered.
    let err = dispatcher.answer("test/lifecycle", "q", "yes").unwrap_err();
    assert_eq!(
        err,
        "the answer to question \"q\" of plugin test/lifecycle was not delivered: the plugin has no such open question (it was never asked here, or it was answered already)"
    );
}

// ---- processes in the runtime's sandbox ----

/// A plugin process with the runtime's sandbox: confined while the mode
/// is sandboxed (its data folder writable, the rest of the policy as
/// `bash` has it, `TMPDIR` in the session temporary folder), unconfined in
/// `full`, refused where the kernel cannot confine it.
#[test]
fn a_process_runs_confined_while_the_approval_mode_is_sandboxed() {
    use smith_engine::approval::{Approval, ApprovalCell};
    use smith_engine::tools::sandbox::{NetworkSetting, Policy, Sandbox, Support};

    let (dir, data) = data_dir();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("project");
    let private = base.join("private");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("key"), "hunter3").unwrap();
    let builder = || {
        Policy::builder()
            .project_root(&project)
            .read_denied(&private)
    };
    let cell = ApprovalCell::new(Approval::Workspace);
    let sandbox = Arc::new(Sandbox::new(builder(), NetworkSetting::Auto));
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(
            effects("test/probe", process_grants(&data), &journal)
                .with_sandbox(Arc::clone(&sandbox), cell.clone()),
        ),
    );
    let escaped = base.join("escaped");
    let script = format!(
        "echo kept > kept.txt; echo out > {}; cat {}; echo \"tmp=$TMPDIR\"",
        escaped.display(),
        private.join("key").display()
    );
    let actions = plugin
        .run_command("run", &run_arg(10_000, "", "", &["sh", "-c", &script]))
        .unwrap();
    let shown = notified(&actions).join("\n");
    assert!(data.join("kept.txt").exists(), "{shown}");
    assert!(!escaped.exists(), "{shown}");
    assert!(!shown.contains("hunter3"), "{shown}");
    let tmp = sandbox.temp_dir().unwrap().display().to_string();
    assert!(shown.contains(&format!("tmp={tmp}")), "{shown}");

    cell.set(Approval::Full);
    plugin
        .run_command("run", &run_arg(10_000, "", "", &["sh", "-c", &script]))
        .unwrap();
    assert!(escaped.exists(), "full mode runs the process unconfined");
    std::fs::remove_file(&escaped).unwrap();

    // Without Landlock, workspace refuses before anything runs.
    let blind = Arc::new(
        Sandbox::new(builder(), NetworkSetting::Auto).with_support(Support {
            landlock_abi: Err("the kernel was built without Landlock (ENOSYS)".into()),
            network_namespace: Err("no user namespaces".into()),
        }),
    );
    let cell = ApprovalCell::new(Approval::Workspace);
    let journal = Arc::new(MemoryJournal::new());
    let mut plugin = probe(
        "test/probe",
        Some(effects("test/probe", process_grants(&data), &journal).with_sandbox(blind, cell)),
    );
    let err = plugin
        .run_command("run", &run_arg(10_000, "", "", &["sh", "-c", &script]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot confine it"), "{err}");
    assert!(err.contains("without Landlock"), "{err}");
    assert!(!escaped.exists());
    assert!(
        intent_tools(&journal).is_empty(),
        "nothing was recorded as run"
    );
}

/// A journal that counts its writes (each call is one write and one
/// flush in the session store) and keeps the records in memory.
#[derive(Default)]
struct CountingJournal {
    inner: MemoryJournal,
    writes: std::sync::Mutex<Vec<&'static str>>,
}

impl smith_engine::journal::EffectJournal for CountingJournal {
    fn record_intent(
        &self,
        intent: &smith_engine::journal::EffectIntent,
    ) -> Result<(), smith_engine::journal::JournalError> {
        self.writes.lock().unwrap().push("intent");
        self.inner.record_intent(intent)
    }
    fn record_completion(
        &self,
        completion: &smith_engine::journal::EffectCompletion,
    ) -> Result<(), smith_engine::journal::JournalError> {
        self.writes.lock().unwrap().push("completion");
        self.inner.record_completion(completion)
    }
    fn record_intents(
        &self,
        intents: &[smith_engine::journal::EffectIntent],
    ) -> Result<(), smith_engine::journal::JournalError> {
        self.writes.lock().unwrap().push("intents");
        self.inner.record_intents(intents)
    }
    fn record_completions(
        &self,
        completions: &[smith_engine::journal::EffectCompletion],
    ) -> Result<(), smith_engine::journal::JournalError> {
        self.writes.lock().unwrap().push("completions");
        self.inner.record_completions(completions)
    }
}

/// A surface that notes, at each intent it shows, how many intents and
/// completions the journal holds.
struct Witness {
    journal: Arc<CountingJournal>,
    seen: Vec<(usize, usize)>,
}

impl Surface for Witness {
    fn name(&self) -> &str {
        "test"
    }
    fn can_show(&self, _: &IntentKind) -> bool {
        true
    }
    fn show(&mut self, _: &str, _: &UiIntent) {
        let records = self.journal.inner.records();
        let intents = records
            .iter()
            .filter(|r| matches!(r, Record::Intent(_)))
            .count();
        let done = records
            .iter()
            .filter(|r| matches!(r, Record::Completion(_)))
            .count();
        self.seen.push((intents, done));
    }
    fn show_text(&mut self, _: &str, _: &str) {}
}

#[test]
fn a_plugins_intents_in_a_row_are_recorded_in_one_write_before_any_is_shown() {
    let journal = Arc::new(CountingJournal::default());
    let effects = Effects::new(
        "test/probe",
        Grants {
            ui: true,
            ..Grants::default()
        },
        Arc::clone(&journal) as Arc<dyn smith_engine::journal::EffectJournal>,
        Arc::new(AtomicU64::new(0)),
        1,
    );
    let mut dispatcher = Dispatcher::new(vec![probe("test/probe", Some(effects))]);
    for _ in 0..3 {
        dispatcher
            .run_command("test/probe", "intent", "notify text")
            .unwrap();
    }
    let mut surface = Witness {
        journal: Arc::clone(&journal),
        seen: Vec::new(),
    };
    let released = dispatcher.observe(&turn_end(), &mut surface).unwrap();
    assert_eq!(released.shown, 3);
    // Every intent was durable before the first was shown; the
    // completions came after the last.
    assert_eq!(surface.seen, vec![(3, 0), (3, 0), (3, 0)]);
    assert_eq!(
        *journal.writes.lock().unwrap(),
        vec!["intents", "completions"]
    );
    let states = effect_states(&journal.inner.records());
    assert_eq!(states.len(), 3);
    assert!(
        states
            .iter()
            .all(|(_, s)| matches!(s, EffectState::Completed { .. })),
        "{states:?}"
    );
}
