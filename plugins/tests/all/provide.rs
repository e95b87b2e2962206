//! The `provide` exports of a `full-extension-plugin` component (the
//! test/kit guest): tools and queue policies declared at load, tool calls,
//! per-turn context that answers "unchanged", project access only when
//! granted, questions through the embedding's asker, and a plugin of the
//! `extension-plugin` world alone still loading without them.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectJournal, MemoryJournal, Record};
use smith_plugins::effects::{
    Answer, AnswerSource, Asker, EffectError, Effects, Grants, QuestionKind,
};
use smith_plugins::extension::{Delivery, LifecycleEvent, ToolCallEvent};
use smith_plugins::{ExtensionComponent, Limits, WasmExtension};

use crate::guest;

fn kit(effects: Option<Effects>) -> WasmExtension {
    ExtensionComponent::load(
        "test/kit",
        &guest("smith_plugin_kit.wasm"),
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate_with(effects)
    .unwrap()
}

fn effects(grants: Grants, journal: &Arc<MemoryJournal>, project: &std::path::Path) -> Effects {
    Effects::new(
        "test/kit",
        grants,
        Arc::clone(journal) as Arc<dyn EffectJournal>,
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_project(project.to_path_buf())
}

fn intents(journal: &MemoryJournal) -> Vec<String> {
    journal
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Intent(i) => Some(i.tool.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_full_extension_declares_its_tools_and_queue_policies_at_load() {
    let plugin = kit(None);
    let provided = plugin.provided().expect("kit exports provide");
    let names: Vec<_> = provided.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kit_read",
            "kit_note",
            "kit_spin",
            "kit_fail",
            "kit_guarded"
        ]
    );
    let read_only: Vec<_> = provided.tools.iter().map(|t| t.read_only).collect();
    assert_eq!(read_only, [true, false, true, true, false]);
    assert_eq!(provided.queue_policies.len(), 1);
    let policy = &provided.queue_policies[0];
    assert_eq!(policy.mode, "kit-batch");
    assert!(!policy.interrupts_tools);
    assert_eq!(policy.after_tool_batch, Delivery::All);
    assert_eq!(policy.before_stop, Delivery::All);
}

#[test]
fn an_extension_plugin_alone_still_loads_without_provide() {
    let plugin = ExtensionComponent::load(
        "test/lifecycle",
        &guest("smith_plugin_lifecycle.wasm"),
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate()
    .unwrap();
    assert!(plugin.provided().is_none());
    let mut plugin = plugin;
    assert_eq!(plugin.context(3).unwrap(), None);
    let err = plugin.call_tool("anything", "{}").unwrap_err();
    assert!(err.to_string().contains("full-extension-plugin"), "{err}");
}

#[test]
fn the_product_contributes_the_base_prompt_and_both_queue_policies() {
    let plugin = ExtensionComponent::load(
        "smith/product",
        smith_plugins::builtin::PRODUCT,
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate()
    .unwrap();
    let fragments = &plugin.contributions().unwrap().prompt_fragments;
    assert_eq!(fragments.len(), 1);
    assert_eq!(fragments[0].id, "base");
    assert!(fragments[0].text.contains("{cwd}"), "{}", fragments[0].text);
    let modes: Vec<_> = plugin
        .provided()
        .unwrap()
        .queue_policies
        .iter()
        .map(|p| {
            (
                p.mode.as_str(),
                p.interrupts_tools,
                p.after_tool_batch,
                p.before_stop,
            )
        })
        .collect();
    assert_eq!(
        modes,
        [
            ("steer", true, Delivery::All, Delivery::All),
            ("follow_up", false, Delivery::None, Delivery::One),
        ]
    );
}

#[test]
fn context_answers_none_while_nothing_changed() {
    let mut plugin = kit(None);
    let first = plugin.context(1).unwrap().expect("first answer");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].id, "kit.turns");
    assert_eq!(first[0].order, 60);
    assert_eq!(plugin.context(2).unwrap(), None);
    assert_eq!(plugin.context(3).unwrap(), None);
    let changed = plugin.context(5).unwrap().expect("a new bucket");
    assert_eq!(changed[0].text, "Kit context: at least 4 messages so far.");
}

#[test]
fn a_project_file_is_read_only_when_granted() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("AGENTS.md"), "be brief").unwrap();
    std::fs::write(
        project.path().parent().unwrap().join("kit-outside.txt"),
        "x",
    )
    .ok();
    let journal = Arc::new(MemoryJournal::new());

    let mut denied = kit(Some(effects(Grants::default(), &journal, project.path())));
    let out = denied
        .call_tool("kit_read", r#"{"path":"AGENTS.md"}"#)
        .unwrap();
    assert!(out.is_error);
    assert!(out.text.starts_with("denied:"), "{}", out.text);
    assert!(out.text.contains("project-read"), "{}", out.text);
    assert!(
        intents(&journal).is_empty(),
        "a denied read records nothing"
    );

    let grants = Grants {
        project_read: true,
        ..Grants::default()
    };
    let mut granted = kit(Some(effects(grants, &journal, project.path())));
    let out = granted
        .call_tool("kit_read", r#"{"path":"AGENTS.md"}"#)
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "be brief");
    assert_eq!(out.structured.as_deref(), Some(r#"{"bytes":8}"#));
    assert_eq!(intents(&journal), ["plugin.project-read-file"]);

    for escape in ["../kit-outside.txt", "/etc/passwd"] {
        let out = granted
            .call_tool("kit_read", &format!(r#"{{"path":"{escape}"}}"#))
            .unwrap();
        assert!(out.is_error);
        assert!(out.text.starts_with("invalid:"), "{escape}: {}", out.text);
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc", project.path().join("etc")).unwrap();
        let out = granted
            .call_tool("kit_read", r#"{"path":"etc/hostname"}"#)
            .unwrap();
        assert!(out.is_error);
        assert!(
            out.text.contains("resolves outside the project"),
            "{}",
            out.text
        );
    }
    assert_eq!(intents(&journal).len(), 1, "refused paths record nothing");
}

#[test]
fn a_question_waits_for_the_askers_answer_and_is_journaled() {
    let project = tempfile::tempdir().unwrap();
    let journal = Arc::new(MemoryJournal::new());
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let asker: Asker = Arc::new(move |plugin, question, _stop| {
        seen.lock().unwrap().push((
            plugin.to_owned(),
            question.prompt.clone(),
            question.kind.clone(),
        ));
        // Longer than the plugin's 200 ms call deadline: the wait is not
        // the plugin's time.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok::<_, EffectError>(Answer {
            text: "yes".to_owned(),
            source: AnswerSource::User,
        })
    });
    let grants = Grants {
        ui: true,
        ..Grants::default()
    };
    let limits = Limits {
        call_deadline: std::time::Duration::from_millis(200),
        ..Limits::default()
    };
    let mut plugin =
        ExtensionComponent::load("test/kit", &guest("smith_plugin_kit.wasm"), None, limits)
            .unwrap()
            .instantiate_with(Some(
                effects(grants, &journal, project.path()).with_asker(asker),
            ))
            .unwrap();
    let event = LifecycleEvent::ToolCall(ToolCallEvent {
        id: "call-1".into(),
        name: "kit_guarded".into(),
        arguments: r#"{"target":"prod"}"#.into(),
    });
    let decided = plugin.handle(&event).unwrap();
    assert_eq!(
        decided,
        smith_plugins::extension::HandlerResult::Decision(
            smith_plugins::extension::Decision::Allow
        )
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [(
            "test/kit".to_owned(),
            "Run kit_guarded on prod?".to_owned(),
            QuestionKind::Confirm
        )]
    );
    assert_eq!(intents(&journal), ["plugin.ask"]);
}
