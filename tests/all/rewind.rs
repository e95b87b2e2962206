//! Undo and redo by agent turn, and rewind of files and transcript
//! together, end to end: three scripted turns of one session change files
//! (content, modes, links, removals); `smith checkpoint undo` and `redo`
//! go back and forth a turn at a time to byte-identical trees; `rewind 1`
//! restores the files as they were before the first prompt and continues
//! the session on a new branch before it, the old branch kept; a rewind
//! over an outside change is refused and a dry run changes nothing; no
//! `git` process starts.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::trees::{Node, tree};
use smith_engine::checkpoint::VcsOp;
use smith_engine::journal::store::vcs_records;
use smith_store::{EntryKind, Store};

struct Env {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    scratch: tempfile::TempDir,
}

impl Env {
    /// A `git` that leaves a mark when run, ahead of the real `PATH`: the
    /// test ends by checking that none ran.
    fn git_mark(&self) -> PathBuf {
        self.scratch.path().join("git-ran")
    }

    fn path(&self) -> std::ffi::OsString {
        let bin = self.scratch.path().join("bin");
        if !bin.exists() {
            std::fs::create_dir(&bin).unwrap();
            let git = bin.join("git");
            std::fs::write(
                &git,
                format!(
                    "#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n",
                    self.git_mark().display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut path = bin.into_os_string();
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        path
    }

    fn smith(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_smith"))
            .env("SMITH_HOME", self.home.path())
            .env("PATH", self.path())
            .current_dir(self.work.path())
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.smith(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "smith {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn tree(&self) -> BTreeMap<PathBuf, Node> {
        tree(self.work.path())
    }

    /// Runs one scripted turn of session `rw` (created by the first).
    fn turn(&self, n: usize, script: &str, prompt: &str) {
        let file = self.scratch.path().join(format!("script{n}.json"));
        std::fs::write(&file, script).unwrap();
        let file = file.to_str().unwrap();
        let session = if n == 1 { "--name" } else { "--session" };
        self.ok(&["eval", session, "rw", "--mock-script", file, prompt]);
    }

    fn store(&self) -> Store {
        Store::open(self.home.path().join("data").join("sessions")).unwrap()
    }
}

const TURN1: &str = r#"[
 [{"tool_call": {"id": "c0", "name": "read", "arguments": {"path": "a.txt"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c1", "name": "edit", "arguments": {"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c2", "name": "write", "arguments": {"path": "new.txt", "content": "new\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "one"}, {"stop": {"reason": "end"}}]
]"#;

const TURN2: &str = r#"[
 [{"tool_call": {"id": "c3", "name": "bash", "arguments": {"command": "rm gone.txt && chmod -x run.sh && ln -sfn new.txt link && mkdir -p d && printf 'b\\000\\001' > d/f.bin"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "two"}, {"stop": {"reason": "end"}}]
]"#;

const TURN3: &str = r#"[
 [{"tool_call": {"id": "c5", "name": "read", "arguments": {"path": "a.txt"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c4", "name": "write", "arguments": {"path": "a.txt", "content": "third\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "three"}, {"stop": {"reason": "end"}}]
]"#;

#[test]
fn turns_undo_redo_and_rewind_files_and_transcript_together() {
    let env = Env {
        home: tempfile::tempdir().unwrap(),
        work: tempfile::tempdir().unwrap(),
        scratch: tempfile::tempdir().unwrap(),
    };
    let w = env.work.path();
    std::fs::write(w.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(w.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(w.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(w.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("a.txt", w.join("link")).unwrap();
    let initial = env.tree();

    env.turn(1, TURN1, "first: edit and write");
    let after1 = env.tree();
    env.turn(2, TURN2, "second: bash");
    let after2 = env.tree();
    env.turn(3, TURN3, "third: rewrite");
    let after3 = env.tree();
    assert_eq!(std::fs::read(w.join("a.txt")).unwrap(), b"third\n");
    assert_ne!(after1, initial);
    assert_ne!(after2, after1);

    // The turns, with the files each changed.
    let turns = env.ok(&["checkpoint", "turns"]);
    let lines: Vec<&str> = turns.lines().collect();
    assert!(lines[0].starts_with("TURN  ENTRY"), "{turns}");
    assert!(turns.contains("first: edit and write"), "{turns}");
    assert!(
        turns.contains("      M a.txt\n      A new.txt\n"),
        "{turns}"
    );
    assert!(
        turns.contains("      A d/f.bin\n      D gone.txt\n      M link\n      M run.sh\n"),
        "{turns}"
    );
    let json = env.ok(&["checkpoint", "turns", "--json"]);
    let turns: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0]["prompt"], "first: edit and write");
    assert_eq!(turns[0]["changed"], serde_json::json!(["a.txt", "new.txt"]));
    assert_eq!(turns[2]["state"], "done");
    let first_entry = turns[0]["entry"].as_u64().unwrap();

    // Undo by turn, newest first, then redo: byte-identical trees each way.
    let dry = env.ok(&["checkpoint", "undo", "--dry-run"]);
    assert!(dry.starts_with("would undo turn 3 "), "{dry}");
    assert_eq!(env.tree(), after3);
    let out = env.ok(&["checkpoint", "undo"]);
    assert!(
        out.starts_with("undid turn 3 \"third: rewrite\" (fx-"),
        "{out}"
    );
    assert!(out.contains("  M a.txt\n"), "{out}");
    assert_eq!(env.tree(), after2);
    let out = env.ok(&["checkpoint", "undo"]);
    assert!(out.starts_with("undid turn 2 "), "{out}");
    assert_eq!(env.tree(), after1);
    let listed = env.ok(&["checkpoint", "turns"]);
    assert!(listed.contains("undone"), "{listed}");
    let out = env.ok(&["checkpoint", "redo"]);
    assert!(out.starts_with("redid turn 2 "), "{out}");
    assert_eq!(env.tree(), after2);
    let out = env.ok(&["checkpoint", "redo"]);
    assert!(out.starts_with("redid turn 3 "), "{out}");
    assert_eq!(env.tree(), after3);
    env.ok(&["checkpoint", "undo", "--turn", "3"]);
    assert_eq!(env.tree(), after2);
    env.ok(&["checkpoint", "redo", "--turn", "3"]);
    assert_eq!(env.tree(), after3);

    let store = env.store();
    let entries = |store: &Store| store.load("rw").unwrap().records().len();
    let before_rewind = store.load("rw").unwrap();
    let old_branch: Vec<u64> = before_rewind.branch().iter().map(|r| r.id).collect();

    // An outside change to a file smith changed since turn 1: refused,
    // nothing changes, nothing is recorded.
    std::fs::write(w.join("new.txt"), "outside\n").unwrap();
    let outside = env.tree();
    let count = entries(&store);
    let refused = env.smith(&["checkpoint", "rewind", "1"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("vcs.conflict"), "{stderr}");
    assert!(stderr.contains("new.txt"), "{stderr}");
    assert_eq!(env.tree(), outside);
    assert_eq!(entries(&store), count);
    std::fs::write(w.join("new.txt"), "new\n").unwrap();
    assert_eq!(env.tree(), after3);

    // A dry run lists the changes and writes nothing.
    let dry = env.ok(&[
        "checkpoint",
        "rewind",
        &format!("@{first_entry}"),
        "--dry-run",
    ]);
    assert!(
        dry.starts_with(&format!(
            "would rewind to before turn 1 (entry {first_entry}) \"first: edit and write\": "
        )),
        "{dry}"
    );
    assert!(dry.contains("  D new.txt\n"), "{dry}");
    assert_eq!(env.tree(), after3);
    assert_eq!(entries(&store), count);

    // A file smith never touched is left alone by the rewind.
    std::fs::write(w.join("mine.txt"), "mine\n").unwrap();
    let out = env.ok(&["checkpoint", "rewind", "1"]);
    assert!(out.starts_with("rewound to before turn 1"), "{out}");
    assert!(out.contains("on a new branch"), "{out}");
    std::fs::remove_file(w.join("mine.txt")).unwrap();
    assert_eq!(env.tree(), initial);

    // The selected branch ends before the first prompt (then the leaf
    // switch and the rewind record); the old branch's entries remain.
    let session = store.load("rw").unwrap();
    let prompts = |kinds: &mut dyn Iterator<Item = EntryKind>| {
        kinds.filter(|k| *k == EntryKind::UserMessage).count()
    };
    assert_eq!(
        prompts(&mut session.branch().iter().map(|r| r.entry_kind())),
        0
    );
    assert_eq!(
        prompts(&mut session.records().iter().map(|r| r.entry_kind())),
        3
    );
    let all: Vec<u64> = session.records().iter().map(|r| r.id).collect();
    assert!(old_branch.iter().all(|id| all.contains(id)));
    assert!(!session.branch().iter().any(|r| r.id == first_entry));
    let records = vcs_records(&session).unwrap();
    let last = records.last().unwrap();
    assert_eq!(last.op, VcsOp::Rewind);
    assert_eq!(last.entry, Some(first_entry));
    assert!(last.changed.contains(&"new.txt".to_owned()));
    let info = env.ok(&["checkpoint", "turns"]);
    assert_eq!(info, "no turns on the selected branch of this session\n");
    // Nothing above started git.
    assert!(!env.git_mark().exists(), "a git process ran");
}
