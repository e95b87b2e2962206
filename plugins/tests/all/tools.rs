//! Plugin tools in a real agent run (test/kit through the engine): offered
//! beside the built-ins, arguments validated before any effect, recorded
//! like a built-in tool with the plugin's host effects as children, a
//! read-only tool refused any change, read-only calls of a batch running
//! side by side with the built-ins, abort reaching a running call, and
//! clashing names refused at load naming both owners.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use smith_engine::agent::{self, AgentConfig, Services};
use smith_engine::journal::{EffectJournal, MemoryJournal, Outcome, Record};
use smith_engine::protocol::{Command, Event, ToolStatus};
use smith_engine::tools::{Mutation, Tool, ToolContext, ToolSet};
use smith_plugins::dispatch::Surface;
use smith_plugins::effects::{Effects, Grants};
use smith_plugins::extension::{IntentKind, UiIntent};
use smith_plugins::hooks::{Frontend, PluginHooks};
use smith_plugins::{ExtensionComponent, Limits, WasmExtension};

use crate::guest;

#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<String>>>);

impl Surface for Kept {
    fn name(&self) -> &str {
        "test"
    }
    fn can_show(&self, _: &IntentKind) -> bool {
        true
    }
    fn show(&mut self, _: &str, _: &UiIntent) {}
    fn show_text(&mut self, _: &str, _: &str) {}
}

impl Frontend for Kept {
    fn persist(&mut self, _: &str, _: &UiIntent) {}
    fn diagnostic(&mut self, message: &str) {
        self.0.lock().unwrap().push(message.to_owned());
    }
}

fn kit(
    journal: &Arc<MemoryJournal>,
    ids: &Arc<AtomicU64>,
    project: &std::path::Path,
    data: &std::path::Path,
) -> WasmExtension {
    let grants = Grants {
        data_dir: data.to_path_buf(),
        fs_read: vec!["notes".into()],
        fs_write: vec!["notes".into()],
        project_read: true,
        project_write: true,
        ..Grants::default()
    };
    let effects = Effects::new(
        "test/kit",
        grants,
        Arc::clone(journal) as Arc<dyn EffectJournal>,
        Arc::clone(ids),
        7,
    )
    .with_project(project.to_path_buf());
    ExtensionComponent::load(
        "test/kit",
        &guest("smith_plugin_kit.wasm"),
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate_with(Some(effects))
    .unwrap()
}

/// Runs `script` (the native scripted provider) with test/kit's tools
/// beside the built-ins; returns the events up to `settled`.
fn run(
    script: &str,
    journal: &Arc<MemoryJournal>,
    project: &std::path::Path,
    data: &std::path::Path,
    kept: &Kept,
    abort_after_start: bool,
) -> Vec<Event> {
    let ids = Arc::new(AtomicU64::new(0));
    let provider = smith_engine::provider::scripted::ScriptedProvider::new(
        smith_engine::provider::scripted::parse_script(script, "tools.json").unwrap(),
    );
    let hooks = PluginHooks::new(
        vec![kit(journal, &ids, project, data)],
        Box::new(kept.clone()),
    );
    let mut tools = ToolSet::builtin();
    let mut taken: Vec<(String, String)> = tools
        .names()
        .map(|n| (n.to_owned(), "smith".to_owned()))
        .collect();
    for tool in hooks.tools(&mut taken) {
        tools.insert(tool);
    }
    let mut services = Services::local(
        Box::new(provider),
        ToolContext::new(project).unwrap(),
        Arc::clone(journal),
    );
    services.tools = tools;
    let mut config = AgentConfig::new("mock-1");
    config.effect_ids = Some(ids);
    let handle = agent::spawn_with_hooks(config, services, Box::new(hooks)).unwrap();
    handle.send(Command::Prompt { text: "go".into() }).unwrap();
    let mut events = Vec::new();
    loop {
        let event = handle.recv_timeout(Duration::from_secs(30)).unwrap();
        if abort_after_start && matches!(event, Event::ToolExecutionStart { .. }) {
            std::thread::sleep(Duration::from_millis(50));
            handle.send(Command::Abort).unwrap();
        }
        let settled = event == Event::Settled;
        events.push(event);
        if settled {
            return events;
        }
    }
}

fn ends(events: &[Event]) -> Vec<(String, ToolStatus, String)> {
    events
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
        .collect()
}

fn intents(journal: &MemoryJournal) -> Vec<(String, String, String, u32)> {
    journal
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Intent(i) => Some((
                i.effect_id.clone(),
                i.parent.clone(),
                i.tool.clone(),
                i.plugin_generation,
            )),
            _ => None,
        })
        .collect()
}

fn completion(journal: &MemoryJournal, effect: &str) -> (Outcome, Mutation) {
    journal
        .records()
        .iter()
        .find_map(|r| match r {
            Record::Completion(c) if c.effect_id == effect => Some((c.outcome, c.mutation)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no completion of {effect}"))
}

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(data.join("notes")).unwrap();
    std::fs::write(project.join("AGENTS.md"), "be brief").unwrap();
    (dir, project, data)
}

#[test]
fn a_plugin_tool_runs_like_a_built_in_with_its_effects_as_children() {
    let (_dir, project, data) = dirs();
    let journal = Arc::new(MemoryJournal::new());
    let kept = Kept::default();
    let script = r#"[
      [{"tool_call": {"id": "c1", "name": "kit_read", "arguments": {"path": "AGENTS.md"}}},
       {"tool_call": {"id": "c2", "name": "read", "arguments": {"path": "AGENTS.md"}}},
       {"tool_call": {"id": "c3", "name": "kit_note", "arguments": {"text": "hi"}}},
       {"tool_call": {"id": "c4", "name": "kit_read", "arguments": {"path": 7}}},
       {"stop": {"reason": "tool_use"}}],
      [{"text": "done"}, {"stop": {"reason": "end"}}]
    ]"#;
    let events = run(script, &journal, &project, &data, &kept, false);
    let ends = ends(&events);
    assert_eq!(ends.len(), 4, "{ends:?}");
    let by_id = |id: &str| ends.iter().find(|(c, _, _)| c == id).unwrap().clone();
    assert_eq!(by_id("c1").1, ToolStatus::Ok);
    assert_eq!(by_id("c1").2, "be brief");
    assert_eq!(by_id("c2").1, ToolStatus::Ok);
    assert_eq!(by_id("c3").1, ToolStatus::Ok);
    assert_eq!(by_id("c3").2, "noted 2 bytes");
    // Invalid arguments are refused against the declared schema before
    // any effect: no intent is recorded for c4.
    assert_eq!(by_id("c4").1, ToolStatus::Invalid, "{:?}", by_id("c4"));
    assert_eq!(
        std::fs::read_to_string(data.join("notes/last.txt")).unwrap(),
        "hi"
    );

    let intents = intents(&journal);
    let tool_effect = |call: &str| {
        intents
            .iter()
            .find(|(_, parent, _, _)| parent == call)
            .unwrap_or_else(|| panic!("no effect of {call}: {intents:?}"))
            .clone()
    };
    let (read_fx, _, tool, generation) = tool_effect("c1");
    assert_eq!((tool.as_str(), generation), ("kit_read", 7));
    let (note_fx, _, _, _) = tool_effect("c3");
    assert!(intents.iter().all(|(_, parent, _, _)| parent != "c4"));
    let children = |fx: &str| -> Vec<String> {
        intents
            .iter()
            .filter(|(_, parent, _, _)| parent == fx)
            .map(|(_, _, tool, _)| tool.clone())
            .collect()
    };
    assert_eq!(children(&read_fx), ["plugin.project-read-file"]);
    assert_eq!(
        children(&note_fx),
        ["plugin.write-file", "plugin.read-file"]
    );
    assert_eq!(
        completion(&journal, &read_fx),
        (Outcome::Ok, Mutation::NotApplied)
    );
    assert_eq!(
        completion(&journal, &note_fx),
        (Outcome::Ok, Mutation::Applied)
    );
    // Every effect id in the journal is unique (one counter for tools and
    // plugin effects).
    let mut ids: Vec<_> = intents.iter().map(|(fx, _, _, _)| fx.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), intents.len());
}

#[test]
fn a_read_only_plugin_tool_may_change_nothing() {
    let (_dir, project, data) = dirs();
    let journal = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(0));
    let plugin = smith_plugins::dispatch::share(kit(&journal, &ids, &project, &data));
    let mut taken = Vec::new();
    let (tools, refused) = smith_plugins::tools::plugin_tools(&[plugin], &mut taken);
    assert!(refused.is_empty(), "{refused:?}");
    let spin = tools
        .iter()
        .find(|t| t.definition().name == "kit_fail")
        .unwrap();
    let result = spin.call(&serde_json::json!({}), &ToolContext::new(&project).unwrap());
    assert!(result.is_error);
    assert_eq!(result.mutation, Mutation::NotApplied);
    // kit_read is read-only: make it try a write by pointing the effects at
    // a read-only scope directly.
    let effects = Effects::new(
        "test/kit",
        Grants {
            project_write: true,
            ..Grants::default()
        },
        Arc::clone(&journal) as Arc<dyn EffectJournal>,
        Arc::new(AtomicU64::new(100)),
        1,
    )
    .with_project(project.clone());
    effects.begin_tool_call(Some("fx-1"), "kit_read", true);
    let refused = effects.project_write_file("x.txt", b"x").unwrap_err();
    assert!(
        refused.to_string().contains("declared read-only"),
        "{refused}"
    );
    assert!(!project.join("x.txt").exists());
    assert_eq!(effects.end_tool_call(), Vec::<Mutation>::new());
}

#[test]
fn abort_reaches_a_running_plugin_tool() {
    let (_dir, project, data) = dirs();
    let journal = Arc::new(MemoryJournal::new());
    let kept = Kept::default();
    let script = r#"[
      [{"tool_call": {"id": "c1", "name": "kit_spin", "arguments": {}}},
       {"stop": {"reason": "tool_use"}}],
      [{"text": "never"}, {"stop": {"reason": "end"}}]
    ]"#;
    let events = run(script, &journal, &project, &data, &kept, true);
    let ends = ends(&events);
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_ne!(ends[0].1, ToolStatus::Ok, "{ends:?}");
    let fx = intents(&journal)
        .into_iter()
        .find(|(_, parent, _, _)| parent == "c1")
        .unwrap()
        .0;
    let (outcome, mutation) = completion(&journal, &fx);
    assert_ne!(outcome, Outcome::Ok);
    assert_eq!(mutation, Mutation::NotApplied);
}

#[test]
fn a_tool_name_clash_is_refused_naming_both_owners() {
    let (_dir, project, data) = dirs();
    let journal = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(0));
    let first = smith_plugins::dispatch::share(kit(&journal, &ids, &project, &data));
    let second = {
        let effects = Effects::new(
            "test/kit-two",
            Grants::default(),
            Arc::clone(&journal) as Arc<dyn EffectJournal>,
            Arc::clone(&ids),
            1,
        );
        smith_plugins::dispatch::share(
            ExtensionComponent::load(
                "test/kit-two",
                &guest("smith_plugin_kit.wasm"),
                None,
                Limits::default(),
            )
            .unwrap()
            .instantiate_with(Some(effects))
            .unwrap(),
        )
    };
    let mut taken = vec![("read".to_owned(), "smith".to_owned())];
    let (tools, refused) = smith_plugins::tools::plugin_tools(&[first, second], &mut taken);
    assert_eq!(tools.len(), 5, "the first plugin keeps all its tools");
    assert!(tools.iter().all(|t| t.plugin() == "test/kit"));
    assert_eq!(refused.len(), 5, "{refused:?}");
    assert!(
        refused[0].contains(
            "plugin test/kit-two declares the tool kit_read, but plugin test/kit already provides"
        ),
        "{}",
        refused[0]
    );
}
