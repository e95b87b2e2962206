//! `smith checkpoint` end to end: a scripted session edits, writes, and
//! through bash deletes, changes modes and links and makes files from a
//! child process; each effect is checkpointed and recorded in the session;
//! undo and redo give byte-identical trees; a restore over an outside
//! change is refused and changes nothing. No git process starts: `PATH`
//! holds only a few tools and a `git` that leaves a mark when run.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::trees::{Node, tree};
use serde_json::Value;
use smith_engine::checkpoint::VcsOp;
use smith_engine::journal::store::vcs_records;
use smith_store::Store;
use smith_vcs::{ObjectId, ObjectKind};

/// A `PATH` folder with the tools the script's bash command uses and a
/// `git` that records that it ran.
fn tools(dir: &Path, mark: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in ["rm", "chmod", "ln", "mkdir", "printf", "sleep"] {
        let found = ["/bin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} not found"));
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    let git = bin.join("git");
    std::fs::write(
        &git,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n", mark.display()),
    )
    .unwrap();
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

struct Env {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    path: PathBuf,
}

impl Env {
    fn smith(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_smith"))
            .env("SMITH_HOME", self.home.path())
            .env("PATH", &self.path)
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
}

const SCRIPT: &str = r#"[
 [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "a.txt"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c2", "name": "edit", "arguments": {"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c3", "name": "write", "arguments": {"path": "new.txt", "content": "new\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "c4", "name": "bash", "arguments": {"command": "rm gone.txt && chmod -x run.sh && ln -sfn new.txt link && mkdir -p d/e && printf 'b\\000\\001' > d/e/f.bin && /bin/sh -c 'printf child > sub/kid.txt'; (sleep 0.3; printf bg > bg.txt) &"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#;

/// A second session over the same project: writes a file, then replaces
/// `a.txt`, so the project's current files no longer hold `alpha`.
const KEEP_SCRIPT: &str = r#"[
 [{"tool_call": {"id": "k1", "name": "write", "arguments": {"path": "kept.txt", "content": "kept\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "k2", "name": "write", "arguments": {"path": "a.txt", "content": "replaced\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#;

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

#[test]
fn effects_are_checkpointed_undone_and_redone_byte_for_byte() {
    let scratch = tempfile::tempdir().unwrap();
    let mark = scratch.path().join("git-ran");
    let env = Env {
        home: tempfile::tempdir().unwrap(),
        work: tempfile::tempdir().unwrap(),
        path: tools(scratch.path(), &mark),
    };
    let w = env.work.path();
    std::fs::write(w.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(w.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(w.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(w.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("a.txt", w.join("link")).unwrap();
    std::fs::create_dir(w.join("sub")).unwrap();
    std::fs::write(w.join("sub/keep.txt"), "keep\n").unwrap();
    let script = scratch.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let initial = env.tree();

    env.ok(&[
        "eval",
        "--name",
        "cp",
        "--mock-script",
        script.to_str().unwrap(),
        "go",
    ]);
    let changed = env.tree();
    assert_eq!(
        std::fs::read(w.join("a.txt")).unwrap(),
        b"ALPHA\n",
        "the edit ran"
    );
    assert_eq!(
        changed.get(Path::new("sub/kid.txt")),
        Some(&Node::File(b"child".to_vec(), 0o644))
    );
    assert!(!w.join("gone.txt").exists());
    assert_eq!(
        changed.get(Path::new("bg.txt")),
        Some(&Node::File(b"bg".to_vec(), 0o644)),
        "the background child finished before bash returned"
    );

    // The session names the effect behind every checkpoint and what it
    // changed; the read-only read has none.
    let store = Store::open(env.home.path().join("data").join("sessions")).unwrap();
    let records = vcs_records(&store.load("cp").unwrap()).unwrap();
    let summary: Vec<(Option<&str>, Option<&str>, Vec<&str>)> = records
        .iter()
        .map(|r| {
            assert_eq!(r.op, VcsOp::Checkpoint);
            assert_eq!(r.error, None);
            (
                r.effect_id.as_deref(),
                r.tool.as_deref(),
                r.changed.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (Some("fx-2"), Some("edit"), vec!["a.txt"]),
            (Some("fx-3"), Some("write"), vec!["new.txt"]),
            (
                Some("fx-4"),
                Some("bash"),
                vec![
                    "bg.txt",
                    "d/e/f.bin",
                    "gone.txt",
                    "link",
                    "run.sh",
                    "sub/kid.txt"
                ]
            ),
        ]
    );
    let list = env.ok(&["checkpoint", "list"]);
    assert!(list.contains("fx-2      edit"), "{list}");
    assert!(list.contains("sub/kid.txt"), "{list}");

    // A dry run lists and changes nothing.
    let dry = env.ok(&["checkpoint", "undo", "fx-4", "--dry-run"]);
    assert!(dry.starts_with("would undo fx-4: 6 paths"), "{dry}");
    assert!(dry.contains("  D d/e/f.bin"), "{dry}");
    assert_eq!(env.tree(), changed);

    // Undo every effect, newest first: the tree is the one before the run.
    for effect in ["fx-4", "fx-3", "fx-2"] {
        let out = env.ok(&["checkpoint", "undo", effect]);
        assert!(out.starts_with(&format!("undid {effect}:")), "{out}");
    }
    assert_eq!(env.tree(), initial);
    let none = env.smith(&["checkpoint", "undo"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("nothing to undo"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );

    // Redo them, oldest first: the tree after the run.
    for effect in ["fx-2", "fx-3", "fx-4"] {
        let out = env.ok(&["checkpoint", "redo", effect]);
        assert!(out.starts_with(&format!("redid {effect}:")), "{out}");
    }
    assert_eq!(env.tree(), changed);

    // The whole turn at once (the default): undo gives the tree before the
    // run, redo the tree after it, byte for byte.
    let out = env.ok(&["checkpoint", "undo"]);
    assert!(out.starts_with("undid turn 1"), "{out}");
    assert_eq!(env.tree(), initial);
    let out = env.ok(&["checkpoint", "redo"]);
    assert!(out.starts_with("redid turn 1"), "{out}");
    assert_eq!(env.tree(), changed);

    // A file changed outside smith: restoring over it and undoing the
    // effect that wrote it are refused, and nothing changes.
    std::fs::write(w.join("a.txt"), "outside\n").unwrap();
    let outside = env.tree();
    for args in [
        &["checkpoint", "restore", "fx-2", "--before"][..],
        &["checkpoint", "undo", "fx-2"][..],
    ] {
        let out = env.smith(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("vcs.conflict"), "{stderr}");
        assert!(stderr.contains("a.txt"), "{stderr}");
        assert_eq!(env.tree(), outside);
    }
    // Replay re-executes the session from its first checkpoint, not from
    // the files as they are now: no divergence despite the outside edit.
    let out = env.smith(&["replay", "cp", "--json", "--compare"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    let start = lines.iter().find(|l| l["type"] == "compare_start").unwrap();
    assert_eq!(start["source"], "checkpoint", "{start}");
    assert_eq!(start["effect_id"], "fx-2", "{start}");
    assert_eq!(start["side"], "before", "{start}");
    assert_eq!(start["snapshot"].as_str(), Some(records[0].before.as_str()));
    let results: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "compare")
        .map(|l| {
            (
                l["effect_id"].as_str().unwrap(),
                l["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("fx-1", "match"),
            ("fx-2", "match"),
            ("fx-3", "match"),
            ("fx-4", "match")
        ],
        "{lines:?}"
    );
    let human = env.smith(&["replay", "cp", "--instant", "--compare"]);
    assert_eq!(human.status.code(), Some(0));
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(
        human.contains("compare: starting from snapshot ") && human.contains("(before fx-2,"),
        "{human}"
    );
    // The control: a copy of the current files diverges on the read.
    let copy = env.smith(&[
        "replay",
        "cp",
        "--json",
        "--compare",
        "--workspace",
        w.to_str().unwrap(),
    ]);
    assert_eq!(copy.status.code(), Some(1));
    let lines = json_lines(&copy.stdout);
    let start = lines.iter().find(|l| l["type"] == "compare_start").unwrap();
    assert_eq!(start["source"], "workspace", "{start}");
    let read = lines
        .iter()
        .find(|l| l["type"] == "compare" && l["effect_id"] == "fx-1")
        .unwrap();
    assert_eq!(read["result"], "diverged", "{read}");
    assert_eq!(env.tree(), outside, "replay never touches the project");

    let dry = env.ok(&[
        "checkpoint",
        "restore",
        "fx-2",
        "--before",
        "--force",
        "--dry-run",
    ]);
    assert!(dry.contains("  M a.txt"), "{dry}");
    assert_eq!(env.tree(), outside);
    env.ok(&["checkpoint", "restore", "fx-2", "--before", "--force"]);
    // The whole project as before the edit: what the later effects added
    // is gone as well.
    assert_eq!(env.tree(), initial);

    // Every undo, redo and restore is in the session too.
    let records = vcs_records(&store.load("cp").unwrap()).unwrap();
    let ops: Vec<VcsOp> = records.iter().map(|r| r.op).collect();
    // Three effects and one turn each way.
    assert_eq!(ops.iter().filter(|o| **o == VcsOp::Undo).count(), 4);
    assert_eq!(ops.iter().filter(|o| **o == VcsOp::Redo).count(), 4);
    let turn_undo = records
        .iter()
        .find(|r| r.op == VcsOp::Undo && r.turn.is_some())
        .unwrap();
    assert_eq!(turn_undo.effects, ["fx-2", "fx-3", "fx-4"]);
    assert_eq!(ops.last(), Some(&VcsOp::Restore));
    assert!(records.last().unwrap().forced);

    let diff = env.ok(&["checkpoint", "diff", "fx-2"]);
    assert!(diff.contains("-alpha\n+ALPHA\n"), "{diff}");

    // A second session checkpoints the same project; deleting the first
    // collects what only it named and keeps what the second names.
    let keep_script = env.home.path().join("keep.json");
    std::fs::write(&keep_script, KEEP_SCRIPT).unwrap();
    env.ok(&[
        "eval",
        "--name",
        "keep",
        "--mock-script",
        keep_script.to_str().unwrap(),
        "go",
    ]);
    let checkpoints = env.home.path().join("data").join("checkpoints");
    let store_dir = smith_engine::checkpoint::store_dir(&checkpoints, w);
    let blob = |content: &[u8]| {
        let hex = ObjectId::of(ObjectKind::Blob, content).to_string();
        store_dir.join("objects").join(&hex[..2]).join(&hex[2..])
    };
    let only_cp: [&[u8]; 4] = [b"ALPHA\n", b"outside\n", b"child", b"bg"];
    for content in only_cp
        .iter()
        .copied()
        .chain([&b"alpha\n"[..], &b"kept\n"[..]])
    {
        assert!(blob(content).exists(), "{content:?} is stored");
    }
    let deleted = env.ok(&["session", "delete", "cp"]);
    let line = deleted
        .lines()
        .find(|l| l.starts_with("checkpoints of "))
        .unwrap_or_else(|| panic!("{deleted}"));
    assert!(line.contains("freed"), "{line}");
    assert!(!line.contains("removed 0 snapshot(s)"), "{line}");
    for content in only_cp {
        assert!(
            !blob(content).exists(),
            "{content:?} only the deleted session named"
        );
    }
    for content in [&b"alpha\n"[..], b"kept\n", b"keep\n"] {
        assert!(
            blob(content).exists(),
            "{content:?} the other session names"
        );
    }
    // A snapshot the remaining session names still restores in full.
    env.ok(&[
        "checkpoint",
        "restore",
        "fx-1",
        "--before",
        "--session",
        "keep",
    ]);
    assert_eq!(env.tree(), initial);

    assert!(
        !mark.exists(),
        "git ran: {:?}",
        std::fs::read_to_string(&mark)
    );
}

/// A detached child (output redirected, still running when bash returns)
/// is not in the call's checkpoint: what it changes later shows up as a
/// change outside smith, between that checkpoint's `after` and the next
/// checkpoint's `before`, and a restore refuses to overwrite it.
#[test]
fn a_detached_child_shows_up_as_an_outside_change() {
    let scratch = tempfile::tempdir().unwrap();
    let mark = scratch.path().join("git-ran");
    let env = Env {
        home: tempfile::tempdir().unwrap(),
        work: tempfile::tempdir().unwrap(),
        path: tools(scratch.path(), &mark),
    };
    let w = env.work.path();
    std::fs::write(w.join("a.txt"), "alpha\n").unwrap();
    let detach = scratch.path().join("detach.json");
    std::fs::write(
        &detach,
        r#"[
 [{"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "(sleep 2; printf late > late.txt) > /dev/null 2>&1 &"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    )
    .unwrap();
    env.ok(&[
        "eval",
        "--name",
        "detach",
        "--mock-script",
        detach.to_str().unwrap(),
        "go",
    ]);
    let store = Store::open(env.home.path().join("data").join("sessions")).unwrap();
    let first = vcs_records(&store.load("detach").unwrap()).unwrap();
    assert_eq!(first.len(), 1);
    assert!(first[0].changed.is_empty(), "{:?}", first[0]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !w.join("late.txt").exists() {
        assert!(std::time::Instant::now() < deadline, "late.txt never came");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));

    // A restore of the session refuses: late.txt changed outside smith.
    let before = tree(w);
    let out = env.smith(&["checkpoint", "restore", "fx-1", "--before"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("vcs.conflict") && stderr.contains("late.txt"),
        "{stderr}"
    );
    assert_eq!(tree(w), before);

    // The next checkpoint's `before` has it; the call's `after` does not.
    let next = scratch.path().join("next.json");
    std::fs::write(
        &next,
        r#"[
 [{"tool_call": {"id": "c1", "name": "write", "arguments": {"path": "b.txt", "content": "b\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    )
    .unwrap();
    env.ok(&[
        "eval",
        "--name",
        "next",
        "--mock-script",
        next.to_str().unwrap(),
        "go",
    ]);
    let second = vcs_records(&store.load("next").unwrap()).unwrap();
    assert_eq!(second[0].changed, vec!["b.txt".to_owned()]);
    let checkpoints = env.home.path().join("data").join("checkpoints");
    let mut vcs = smith_vcs::Vcs::open(
        w,
        &smith_engine::checkpoint::store_dir(&checkpoints, w),
        smith_vcs::Options::default(),
    )
    .unwrap();
    let after = vcs.resolve(&first[0].after).unwrap();
    let next_before = vcs.resolve(&second[0].before).unwrap();
    let outside: Vec<String> = vcs
        .changes(after, next_before)
        .unwrap()
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    assert_eq!(outside, vec!["late.txt".to_owned()]);
    assert!(!mark.exists(), "git ran");
}
