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

use smith_engine::checkpoint::VcsOp;
use smith_engine::journal::store::vcs_records;
use smith_store::Store;

/// What one path is: a file (bytes, permission bits), a link, a folder.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    File(Vec<u8>, u32),
    Link(PathBuf),
    Dir,
}

fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(rel, Node::Link(std::fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                out.insert(rel, Node::Dir);
                walk(root, &path, out);
            } else {
                let mode = meta.permissions().mode() & 0o777;
                out.insert(rel, Node::File(std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A `PATH` folder with the tools the script's bash command uses and a
/// `git` that records that it ran.
fn tools(dir: &Path, mark: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in ["rm", "chmod", "ln", "mkdir", "printf"] {
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
 [{"tool_call": {"id": "c4", "name": "bash", "arguments": {"command": "rm gone.txt && chmod -x run.sh && ln -sfn new.txt link && mkdir -p d/e && printf 'b\\000\\001' > d/e/f.bin && /bin/sh -c 'printf child > sub/kid.txt'"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#;

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
                vec!["d/e/f.bin", "gone.txt", "link", "run.sh", "sub/kid.txt"]
            ),
        ]
    );
    let list = env.ok(&["checkpoint", "list"]);
    assert!(list.contains("fx-2      edit"), "{list}");
    assert!(list.contains("sub/kid.txt"), "{list}");

    // A dry run lists and changes nothing.
    let dry = env.ok(&["checkpoint", "undo", "--dry-run"]);
    assert!(dry.starts_with("would undo fx-4: 5 paths"), "{dry}");
    assert!(dry.contains("  D d/e/f.bin"), "{dry}");
    assert_eq!(env.tree(), changed);

    // Undo every effect, newest first: the tree is the one before the run.
    for effect in ["fx-4", "fx-3", "fx-2"] {
        let out = env.ok(&["checkpoint", "undo"]);
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

    // Redo them, most recently undone first: the tree after the run.
    for effect in ["fx-2", "fx-3", "fx-4"] {
        let out = env.ok(&["checkpoint", "redo"]);
        assert!(out.starts_with(&format!("redid {effect}:")), "{out}");
    }
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
    assert_eq!(ops.iter().filter(|o| **o == VcsOp::Undo).count(), 3);
    assert_eq!(ops.iter().filter(|o| **o == VcsOp::Redo).count(), 3);
    assert_eq!(ops.last(), Some(&VcsOp::Restore));
    assert!(records.last().unwrap().forced);

    let diff = env.ok(&["checkpoint", "diff", "fx-2"]);
    assert!(diff.contains("-alpha\n+ALPHA\n"), "{diff}");

    assert!(
        !mark.exists(),
        "git ran: {:?}",
        std::fs::read_to_string(&mark)
    );
}
