//! Plugin effects and the runtime's checkpoints: an effect that may change
//! the project outside a tool call is checkpointed (a VCS entry naming it);
//! inside a tool call it is not (the call's own checkpoint covers it); the
//! `vcs` effects share the runtime's store and a `vcs-restore` is recorded
//! as a VCS entry.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::checkpoint::{Checkpoints, VcsOp};
use smith_engine::journal::{EffectJournal, MemoryJournal, Record};
use smith_plugins::effects::{Effects, Grants, ProcessRequest};

struct Setup {
    project: tempfile::TempDir,
    _store: tempfile::TempDir,
    checkpoints: Arc<Checkpoints>,
    journal: Arc<MemoryJournal>,
    effects: Effects,
}

fn setup() -> Setup {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "one\n").unwrap();
    let store = tempfile::tempdir().unwrap();
    let checkpoints = Arc::new(Checkpoints::lazy(project.path(), store.path()));
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        data_dir: store.path().join("plugin-data"),
        process: true,
        vcs: true,
        project_read: true,
        project_write: true,
        ..Grants::default()
    };
    let effects = Effects::new(
        "test/probe",
        grants,
        Arc::clone(&journal) as Arc<dyn EffectJournal>,
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_project(project.path().to_owned())
    .with_checkpoints(Arc::clone(&checkpoints));
    Setup {
        project,
        _store: store,
        checkpoints,
        journal,
        effects,
    }
}

fn shell(script: &str) -> ProcessRequest {
    ProcessRequest {
        program: "sh".to_owned(),
        args: vec!["-c".to_owned(), script.to_owned()],
        cwd: String::new(),
        timeout_ms: 10_000,
        stdin: Vec::new(),
    }
}

#[test]
fn a_project_effect_outside_a_tool_call_is_checkpointed() {
    let s = setup();
    s.effects
        .project_write_file("b.txt", b"two\n")
        .expect("project-write-file");
    s.effects
        .project_run_process(&shell("printf three > c.txt && rm a.txt"), &|| false)
        .expect("project-run-process");
    let records = s.journal.vcs_records();
    assert_eq!(records.len(), 2, "{records:?}");
    let intents: Vec<(String, String)> = s
        .journal
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Intent(i) => Some((i.effect_id.clone(), i.tool.clone())),
            _ => None,
        })
        .collect();
    for (record, (effect_id, tool)) in records.iter().zip(&intents) {
        assert_eq!(record.op, VcsOp::Checkpoint);
        assert_eq!(record.effect_id.as_ref(), Some(effect_id));
        assert_eq!(record.tool.as_ref(), Some(tool));
        assert_eq!(record.error, None);
        assert_eq!(record.root, s.checkpoints.root());
    }
    assert_eq!(records[0].changed, ["b.txt"]);
    assert_eq!(records[1].changed, ["a.txt", "c.txt"]);
    assert_eq!(records[0].after, records[1].before);
    // The snapshots are the runtime's: the store restores them.
    let before = records[0].before.clone();
    s.checkpoints
        .with_vcs(|vcs| {
            let id = vcs.resolve(&before).unwrap();
            vcs.restore(id, &smith_vcs::RestoreOptions::default())
                .unwrap();
        })
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(s.project.path().join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(!s.project.path().join("b.txt").exists());
    assert!(!s.project.path().join("c.txt").exists());
}

#[test]
fn inside_a_tool_call_the_calls_own_checkpoint_covers_its_effects() {
    let s = setup();
    s.effects.begin_tool_call(Some("fx-9"), "probe_tool", false);
    s.effects
        .project_write_file("b.txt", b"two\n")
        .expect("project-write-file");
    s.effects.end_tool_call();
    assert!(s.journal.vcs_records().is_empty());
    // A read changes nothing and is never checkpointed.
    s.effects.project_read_file("a.txt").expect("read");
    assert!(s.journal.vcs_records().is_empty());
}

#[test]
fn vcs_effects_share_the_runtimes_store_and_a_restore_is_recorded() {
    let s = setup();
    let first = s.effects.vcs_snapshot("start").expect("snapshot");
    // The runtime's instance knows the plugin's snapshot.
    s.checkpoints
        .with_vcs(|vcs| vcs.resolve(&first).map(|_| ()))
        .unwrap()
        .unwrap();
    std::fs::write(s.project.path().join("a.txt"), "changed\n").unwrap();
    std::fs::write(s.project.path().join("new.txt"), "new\n").unwrap();
    let undo = s.effects.vcs_restore(&first[..12]).expect("restore");
    assert_eq!(
        std::fs::read_to_string(s.project.path().join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(!s.project.path().join("new.txt").exists());
    let records = s.journal.vcs_records();
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r.op, VcsOp::Restore);
    assert_eq!(r.target.as_deref(), Some(first.as_str()));
    assert_eq!(r.before, undo);
    assert_eq!(r.changed, ["a.txt", "new.txt"]);
    assert_eq!(r.tool.as_deref(), Some("plugin.vcs-restore"));
    let restore_effect = s
        .journal
        .records()
        .iter()
        .filter_map(|x| match x {
            Record::Intent(i) if i.tool == "plugin.vcs-restore" => Some(i.effect_id.clone()),
            _ => None,
        })
        .next();
    assert_eq!(r.effect_id, restore_effect);
    // The restore's `after` is the snapshot the store holds now.
    let now = s
        .checkpoints
        .with_vcs(|vcs| vcs.snapshot().map(|x| x.id.to_string()))
        .unwrap()
        .unwrap();
    assert_eq!(r.after, now);
    // The restore itself is not also a checkpoint.
    assert!(records.iter().all(|r| r.op != VcsOp::Checkpoint));
}
