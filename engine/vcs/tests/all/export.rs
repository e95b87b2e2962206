//! Export: a snapshot's tree written into an empty folder, byte for byte.

use std::os::unix::fs::symlink;

use smith_vcs::{EntryKind, ErrorKind, Options};

use crate::fixtures::{Project, manifest};

/// Files, an executable, nested and empty folders and symlinks (to a file,
/// to a folder, dangling, out of the root) come out as they were when the
/// snapshot was taken, even after the project changed; the export changes
/// nothing in the project or the store.
#[test]
fn export_writes_the_snapshot_byte_for_byte() {
    let p = Project::new();
    p.write("src/main.rs", "fn main() {}\n");
    p.write("src/lib/mod.rs", "pub mod a;\n");
    p.write("run.sh", "#!/bin/sh\necho hi\n");
    p.chmod("run.sh", 0o755);
    p.write("bin.dat", "\0\u{1}\u{2}binary");
    std::fs::create_dir_all(p.path("empty/nested")).expect("mkdir");
    symlink("src/main.rs", p.path("link-file")).expect("symlink");
    symlink("src", p.path("link-dir")).expect("symlink");
    symlink("nowhere", p.path("dangling")).expect("symlink");
    symlink("/etc/passwd", p.path("outside")).expect("symlink");
    let mut p = p;
    let snap = p.vcs.snapshot().expect("snapshot");
    let expected = p.manifest();

    // The project moves on; the export still gives the snapshot.
    p.write("src/main.rs", "changed\n");
    std::fs::remove_file(p.path("run.sh")).expect("rm");
    let now = p.vcs.snapshot().expect("snapshot");

    let out = tempfile::tempdir().expect("temp dir");
    let dest = out.path().join("a/b/copy");
    let report = p.vcs.export(snap.id, &dest).expect("export");
    assert_eq!(manifest(&dest), expected);
    assert_eq!(report.files, 4);
    assert_eq!(report.symlinks, 4);
    assert_eq!(report.folders, 4);
    assert!(report.not_written.is_empty());
    assert_eq!(
        report.dest,
        std::fs::canonicalize(&dest).expect("canonical")
    );

    // The project is as it was left, and a new snapshot is the same.
    assert_eq!(p.vcs.snapshot().expect("snapshot").id, now.id);

    // An existing empty folder is fine too.
    let empty = out.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    p.vcs
        .export(now.id, &empty)
        .expect("export into an empty folder");
    assert_eq!(manifest(&empty), p.manifest());
}

/// Entries recorded by size only (over the per-file cap, a fifo) are
/// reported and not written.
#[test]
fn export_reports_entries_recorded_by_size_only() {
    let mut p = Project::with(Options {
        max_file_bytes: 8,
        ..Options::default()
    });
    p.write("small", "tiny\n");
    p.write("dir/big", "more than eight bytes\n");
    let fifo =
        std::ffi::CString::new(p.path("pipe").into_os_string().into_encoded_bytes()).expect("path");
    // SAFETY: `fifo` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0, "mkfifo");
    let snap = p.vcs.snapshot().expect("snapshot");

    let out = tempfile::tempdir().expect("temp dir");
    let report = p.vcs.export(snap.id, out.path()).expect("export");
    assert_eq!(
        std::fs::read(out.path().join("small")).expect("read"),
        b"tiny\n"
    );
    assert!(out.path().join("dir").is_dir());
    assert!(!out.path().join("dir/big").exists());
    assert!(std::fs::symlink_metadata(out.path().join("pipe")).is_err());
    let listed: Vec<(String, EntryKind, u64)> = report
        .not_written
        .iter()
        .map(|n| (n.path.display().to_string(), n.kind, n.size))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("dir/big".to_string(), EntryKind::SkippedFileCap, 22),
            ("pipe".to_string(), EntryKind::SkippedSpecial, 0),
        ]
    );
}

/// A folder that is not empty, a file, and an unknown snapshot are refused
/// and nothing is written.
#[test]
fn export_refuses_a_used_destination_and_an_unknown_snapshot() {
    let mut p = Project::new();
    p.write("a", "a\n");
    let snap = p.vcs.snapshot().expect("snapshot");
    let out = tempfile::tempdir().expect("temp dir");

    std::fs::write(out.path().join("keep"), "mine\n").expect("write");
    let err = p.vcs.export(snap.id, out.path()).expect_err("not empty");
    assert_eq!(err.kind(), ErrorKind::InvalidOptions);
    assert!(err.to_string().contains("not empty"), "{err}");
    assert!(!out.path().join("a").exists());

    let err = p
        .vcs
        .export(snap.id, &out.path().join("keep"))
        .expect_err("a file");
    assert_eq!(err.kind(), ErrorKind::InvalidOptions);
    assert_eq!(
        std::fs::read(out.path().join("keep")).expect("read"),
        b"mine\n"
    );

    let unknown = p.vcs.resolve(&"0".repeat(64)).expect_err("unknown");
    assert_eq!(unknown.kind(), ErrorKind::UnknownSnapshot);
    let missing = out.path().join("never");
    let bogus = smith_vcs::SnapshotId(smith_vcs::ObjectId([7; 32]));
    let err = p.vcs.export(bogus, &missing).expect_err("unknown snapshot");
    assert_eq!(err.kind(), ErrorKind::UnknownSnapshot);
    assert!(
        !missing.exists(),
        "nothing is created for an unknown snapshot"
    );
}
