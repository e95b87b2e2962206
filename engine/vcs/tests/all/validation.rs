//! Every operation validates its target: unknown or malformed snapshot
//! ids, paths escaping the root, paths through symlinks.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use smith_vcs::{ErrorKind, RestoreOptions, SnapshotId, UndoOptions};

use crate::fixtures::Project;

#[test]
fn unknown_and_malformed_ids_are_refused() {
    let mut p = Project::new();
    p.write("a", "a\n");
    let s = p.vcs.snapshot().expect("snapshot").id;
    let missing = SnapshotId(smith_vcs::ObjectId([7; 32]));
    let before = p.manifest();
    for e in [
        p.vcs
            .restore(missing, &RestoreOptions::default())
            .expect_err("unknown"),
        p.vcs.diff(s, missing).expect_err("unknown"),
        p.vcs
            .undo(missing, s, UndoOptions::default())
            .expect_err("unknown"),
        p.vcs
            .redo(s, missing, UndoOptions::default())
            .expect_err("unknown"),
        p.vcs.gc(&[missing]).expect_err("unknown"),
        p.vcs.resolve(&missing.to_string()).expect_err("unknown"),
    ] {
        assert_eq!(e.kind(), ErrorKind::UnknownSnapshot, "{e}");
        assert_eq!(e.diagnostic().code(), "vcs.unknown-snapshot");
        assert!(e.diagnostic().is_complete());
    }
    let e = p
        .vcs
        .restore(
            s,
            &RestoreOptions {
                expected: Some(missing),
                ..RestoreOptions::default()
            },
        )
        .expect_err("unknown expected");
    assert_eq!(e.kind(), ErrorKind::UnknownSnapshot);
    for bad in ["", "xyz", "1234567", "g".repeat(64).as_str()] {
        assert_eq!(
            p.vcs.resolve(bad).expect_err("bad").kind(),
            ErrorKind::InvalidId,
            "{bad:?}"
        );
    }
    assert_eq!(p.vcs.resolve(&s.to_string()[..12]).expect("prefix"), s);
    assert_eq!(
        p.vcs.resolve(&s.to_string().to_uppercase()).expect("upper"),
        s
    );
    assert_eq!(p.manifest(), before);
}

#[test]
fn paths_escaping_the_root_are_refused() {
    let mut p = Project::new();
    p.write("a", "a\n");
    let s = p.vcs.snapshot().expect("snapshot").id;
    p.write("a", "b\n");
    let before = p.manifest();
    let outside = tempfile::tempdir().expect("dir");
    for path in [
        "../a",
        "x/../../a",
        outside.path().to_str().expect("utf-8"),
        "/etc/passwd",
    ] {
        let e = p
            .vcs
            .restore(
                s,
                &RestoreOptions {
                    paths: Some(vec![PathBuf::from(path)]),
                    ..RestoreOptions::default()
                },
            )
            .expect_err("escapes");
        assert_eq!(e.kind(), ErrorKind::PathEscapes, "{path}");
        assert!(e.diagnostic().is_complete());
    }
    let e = p.vcs.read(s, "../a".as_ref()).expect_err("escapes");
    assert_eq!(e.kind(), ErrorKind::PathEscapes);
    assert_eq!(p.manifest(), before);
    // An absolute path inside the root is fine.
    let inside = p.path("a");
    p.vcs
        .restore(
            s,
            &RestoreOptions {
                paths: Some(vec![inside]),
                ..RestoreOptions::default()
            },
        )
        .expect("restore inside");
    assert_eq!(std::fs::read_to_string(p.path("a")).expect("a"), "a\n");
}

#[test]
fn paths_through_symlinks_are_refused() {
    let mut p = Project::new();
    let outside = tempfile::tempdir().expect("dir");
    std::fs::write(outside.path().join("secret"), "outside\n").expect("write");
    symlink(outside.path(), p.path("out")).expect("symlink");
    p.write("a", "a\n");
    let s = p.vcs.snapshot().expect("snapshot").id;
    // The snapshot holds the link, not what it points to.
    assert!(p.vcs.read(s, "out".as_ref()).expect("read").is_some());
    let e = p
        .vcs
        .restore(
            s,
            &RestoreOptions {
                paths: Some(vec![PathBuf::from("out/secret")]),
                ..RestoreOptions::default()
            },
        )
        .expect_err("through a symlink");
    assert_eq!(e.kind(), ErrorKind::SymlinkEscape);
    assert!(
        e.diagnostic()
            .what()
            .contains("leads out of the project root"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).expect("s"),
        "outside\n"
    );
}
