//! No external program: every operation works with `PATH` pointing at an
//! empty folder (checked in a child process of this test binary), and the
//! crate's source starts no process.

use smith_vcs::{RestoreOptions, UndoOptions};

use crate::fixtures::Project;

const CHILD: &str = "SMITH_VCS_EMPTY_PATH_CHILD";

#[test]
fn operations_run_with_an_empty_path() {
    if std::env::var_os(CHILD).is_none() {
        let empty = tempfile::tempdir().expect("dir");
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--exact",
                "no_git::operations_run_with_an_empty_path",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("PATH", empty.path())
            .output()
            .expect("run the child");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("1 passed"), "{text}");
        return;
    }
    // Here no program can be found by name: git cannot run.
    assert!(
        std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
    );
    let mut p = Project::new();
    p.write("a.txt", "a\n");
    let before = p.vcs.snapshot().expect("snapshot").id;
    p.write("a.txt", "b\n");
    p.write("dir/c.txt", "c\n");
    let after = p.vcs.snapshot().expect("snapshot").id;
    assert_eq!(p.vcs.diff(before, after).expect("diff").changes.len(), 2);
    p.vcs
        .undo(before, after, UndoOptions::default())
        .expect("undo");
    p.vcs
        .redo(before, after, UndoOptions::default())
        .expect("redo");
    p.vcs
        .restore(before, &RestoreOptions::default())
        .expect("restore");
    assert_eq!(std::fs::read_to_string(p.path("a.txt")).expect("a"), "a\n");
    p.vcs.gc(&[before]).expect("gc");
}

#[test]
fn the_source_starts_no_process() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(&src).expect("src") {
        let path = e.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        for needle in ["std::process::Command", "Command::new", "process::Command"] {
            assert!(!text.contains(needle), "{} uses {needle}", path.display());
        }
        assert!(
            !text.contains("\"git\""),
            "{} names the git program",
            path.display()
        );
    }
}
