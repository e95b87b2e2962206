//! Snapshots, diffs, restores, undo, redo and gc over real trees.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use smith_vcs::{
    ChangeKind, EntryKind, ErrorKind, Options, RestoreOptions, SkipReason, UndoOptions, Vcs,
};

use crate::fixtures::{Item, Project};

/// Write, edit, delete, chmod, symlink changes and a file created by a
/// background process, each snapshotted; restoring every snapshot gives
/// its tree back byte for byte (and the same snapshot id).
#[test]
fn restore_gives_byte_identical_trees_at_every_step() {
    let mut p = Project::new();
    let mut steps = Vec::new();
    let mut take = |p: &mut Project| {
        let s = p.vcs.snapshot().expect("snapshot");
        steps.push((s.id, p.manifest()));
    };
    // 1. Writes, in nested folders, an empty folder, an executable.
    p.write("src/main.rs", "fn main() {}\n");
    p.write("src/lib/mod.rs", "pub mod a;\n");
    p.write("README", "hello\n");
    p.write("run.sh", "#!/bin/sh\necho hi\n");
    p.chmod("run.sh", 0o755);
    std::fs::create_dir(p.path("empty")).expect("mkdir");
    take(&mut p);
    // 2. Edit, same size (the stat cache must still see it), and a new file.
    p.write("README", "HELLO\n");
    p.write("src/lib/b.rs", "pub fn b() {}\n");
    take(&mut p);
    // 3. Delete a file and a whole folder.
    std::fs::remove_file(p.path("src/main.rs")).expect("rm");
    std::fs::remove_dir_all(p.path("src/lib")).expect("rm -r");
    take(&mut p);
    // 4. chmod both ways.
    p.chmod("run.sh", 0o644);
    p.write("tool", "#!/bin/sh\n");
    p.chmod("tool", 0o755);
    take(&mut p);
    // 5. Symlinks: to a file, to a folder, dangling, out of the root;
    //    then a symlink retargeted and a file replaced by a symlink.
    symlink("README", p.path("link-file")).expect("symlink");
    symlink("src", p.path("link-dir")).expect("symlink");
    symlink("nowhere", p.path("dangling")).expect("symlink");
    symlink("/etc/passwd", p.path("outside")).expect("symlink");
    take(&mut p);
    std::fs::remove_file(p.path("link-file")).expect("rm");
    symlink("tool", p.path("link-file")).expect("symlink");
    std::fs::remove_file(p.path("README")).expect("rm");
    symlink("tool", p.path("README")).expect("symlink");
    take(&mut p);
    // 6. A file created by a background process; a folder replaced by a file.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf 'from the background\\n' > bg.txt & wait")
        .current_dir(p.root())
        .status()
        .expect("sh");
    assert!(status.success());
    std::fs::remove_dir(p.path("empty")).expect("rmdir");
    p.write("empty", "now a file\n");
    take(&mut p);

    // Restore every step, in an order that crosses every kind of change.
    for i in [0, 5, 2, 6, 1, 3, 4, 0, 6] {
        let (id, want) = &steps[i];
        let r = p
            .vcs
            .restore(*id, &RestoreOptions::default())
            .expect("restore");
        assert_eq!(&p.manifest(), want, "restoring step {}", i + 1);
        assert_eq!(
            r.after,
            *id,
            "the tree after restoring step {} is that snapshot",
            i + 1
        );
        assert_eq!(p.vcs.snapshot().expect("snapshot").id, *id);
    }
}

/// Undo and redo of an effect give the before and after trees byte for
/// byte; a change made outside smith to another path survives both.
#[test]
fn undo_and_redo_are_byte_identical_and_keep_other_changes() {
    let mut p = Project::new();
    p.write("a.txt", "a\n");
    p.write("dir/b.txt", "b\n");
    p.write("keep.txt", "keep\n");
    p.write("x.sh", "#!/bin/sh\n");
    let before = p.vcs.snapshot().expect("snapshot").id;
    let before_tree = p.manifest();
    // The effect: edit, delete, add in a new folder, chmod, add a symlink.
    p.write("a.txt", "a changed\n");
    std::fs::remove_file(p.path("dir/b.txt")).expect("rm");
    p.write("new/deep/c.txt", "c\n");
    p.chmod("x.sh", 0o755);
    symlink("a.txt", p.path("link")).expect("symlink");
    let after = p.vcs.snapshot().expect("snapshot").id;
    let after_tree = p.manifest();

    let r = p
        .vcs
        .undo(before, after, UndoOptions::default())
        .expect("undo");
    assert_eq!(p.manifest(), before_tree);
    assert_eq!(r.before, after);
    assert_eq!(r.after, before);
    let r = p
        .vcs
        .redo(before, after, UndoOptions::default())
        .expect("redo");
    assert_eq!(p.manifest(), after_tree);
    assert_eq!(r.after, after);

    // An outside change to a path the effect did not touch survives.
    p.write("keep.txt", "edited outside\n");
    p.vcs
        .undo(before, after, UndoOptions::default())
        .expect("undo");
    let mut want = before_tree.clone();
    want.insert(
        "keep.txt".into(),
        Item::File {
            content: b"edited outside\n".to_vec(),
            exec: false,
        },
    );
    assert_eq!(p.manifest(), want);
}

/// A restore that would overwrite a change made outside smith is refused
/// and changes nothing; forced, it goes ahead.
#[test]
fn conflicting_restore_is_refused_and_changes_nothing() {
    let mut p = Project::new();
    p.write("a.txt", "one\n");
    p.write("b.txt", "b\n");
    let before = p.vcs.snapshot().expect("snapshot").id;
    p.write("a.txt", "two\n");
    p.write("c.txt", "c\n");
    let after = p.vcs.snapshot().expect("snapshot").id;
    // Outside smith: a.txt edited again (same size), a file appears.
    p.write("a.txt", "TWO\n");
    p.write("d.txt", "d\n");
    let outside = p.manifest();

    let e = p
        .vcs
        .undo(before, after, UndoOptions::default())
        .expect_err("conflict");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(e.conflicts(), &[PathBuf::from("a.txt")]);
    assert_eq!(e.diagnostic().code(), "vcs.conflict");
    assert!(e.diagnostic().is_complete());
    assert_eq!(p.manifest(), outside);

    let e = p
        .vcs
        .restore(
            before,
            &RestoreOptions {
                expected: Some(after),
                ..RestoreOptions::default()
            },
        )
        .expect_err("conflict");
    assert_eq!(
        e.conflicts(),
        &[PathBuf::from("a.txt"), PathBuf::from("d.txt")]
    );
    assert_eq!(p.manifest(), outside);

    // Forced: a.txt goes back, d.txt (outside the effect) stays.
    p.vcs
        .undo(
            before,
            after,
            UndoOptions {
                force: true,
                dry_run: false,
            },
        )
        .expect("forced undo");
    let m = p.manifest();
    assert_eq!(
        m.get("a.txt"),
        Some(&Item::File {
            content: b"one\n".to_vec(),
            exec: false
        })
    );
    assert!(!m.contains_key("c.txt"));
    assert!(m.contains_key("d.txt"));
}

/// A dry run lists exactly the changes and changes nothing.
#[test]
fn dry_run_lists_exactly_the_changes() {
    let mut p = Project::new();
    p.write("same.txt", "same\n");
    p.write("edit.txt", "old\n");
    p.write("gone.txt", "gone\n");
    p.write("mode.sh", "#!/bin/sh\n");
    p.write("swap", "file\n");
    let target = p.vcs.snapshot().expect("snapshot").id;
    p.write("edit.txt", "new\n");
    std::fs::remove_file(p.path("gone.txt")).expect("rm");
    p.write("added/x.txt", "x\n");
    p.chmod("mode.sh", 0o755);
    std::fs::remove_file(p.path("swap")).expect("rm");
    symlink("same.txt", p.path("swap")).expect("symlink");
    let now = p.manifest();

    let r = p
        .vcs
        .restore(
            target,
            &RestoreOptions {
                dry_run: true,
                ..RestoreOptions::default()
            },
        )
        .expect("dry run");
    assert!(r.dry_run);
    assert_eq!(r.before, r.after);
    let listed: Vec<(String, ChangeKind)> = r
        .changes
        .iter()
        .map(|c| (c.path.display().to_string(), c.kind))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("added/x.txt".to_string(), ChangeKind::Removed),
            ("edit.txt".to_string(), ChangeKind::Modified),
            ("gone.txt".to_string(), ChangeKind::Added),
            ("mode.sh".to_string(), ChangeKind::ModeChanged),
            ("swap".to_string(), ChangeKind::TypeChanged),
        ]
    );
    assert_eq!(p.manifest(), now);
    // And the real restore does exactly that.
    let real = p
        .vcs
        .restore(target, &RestoreOptions::default())
        .expect("restore");
    assert_eq!(real.changes, r.changes);
    assert_eq!(real.after, target);
}

/// The diff names every kind of change, with unified text for text files
/// and binary files named as such.
#[test]
fn diff_reports_each_kind_of_change() {
    let mut p = Project::new();
    p.write("text.txt", "one\ntwo\nthree\n");
    p.write("gone.txt", "bye\n");
    std::fs::write(p.path("bin"), [0u8, 1, 2, 3]).expect("write");
    p.write("run", "x\n");
    symlink("text.txt", p.path("l")).expect("symlink");
    let a = p.vcs.snapshot().expect("snapshot").id;
    p.write("text.txt", "one\n2\nthree\n");
    std::fs::remove_file(p.path("gone.txt")).expect("rm");
    std::fs::write(p.path("bin"), [0u8, 9, 2, 3]).expect("write");
    p.chmod("run", 0o755);
    std::fs::remove_file(p.path("l")).expect("rm");
    symlink("run", p.path("l")).expect("symlink");
    p.write("new.txt", "hi\n");
    let b = p.vcs.snapshot().expect("snapshot").id;

    let d = p.vcs.diff(a, b).expect("diff");
    let kinds: Vec<(String, ChangeKind, bool)> = d
        .changes
        .iter()
        .map(|c| (c.path.display().to_string(), c.kind, c.binary))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("bin".into(), ChangeKind::Modified, true),
            ("gone.txt".into(), ChangeKind::Removed, false),
            ("l".into(), ChangeKind::Modified, false),
            ("new.txt".into(), ChangeKind::Added, false),
            ("run".into(), ChangeKind::ModeChanged, false),
            ("text.txt".into(), ChangeKind::Modified, false),
        ]
    );
    let text = d
        .changes
        .iter()
        .find(|c| c.path == Path::new("text.txt"))
        .expect("text");
    assert_eq!(
        text.patch.as_deref(),
        Some("--- a/text.txt\n+++ b/text.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
    );
    let link = d
        .changes
        .iter()
        .find(|c| c.path == Path::new("l"))
        .expect("link");
    assert_eq!(link.old.map(|s| s.kind), Some(EntryKind::Symlink));
    assert!(
        link.patch
            .as_deref()
            .is_some_and(|p| p.contains("-text.txt") && p.contains("+run"))
    );
    let all = d.unified();
    assert!(all.contains("Binary files a/bin and b/bin differ"), "{all}");
    assert!(all.contains("old mode 100644\nnew mode 100755"), "{all}");
    assert!(all.contains("deleted file mode 100644"), "{all}");
    assert!(p.vcs.diff(a, a).expect("diff").changes.is_empty());
}

/// `.gitignore` files, the extra ignore list, `.git` and the store are not
/// recorded, and a restore leaves ignored files alone.
#[test]
fn ignore_rules_are_respected() {
    let mut p = Project::with(Options {
        ignore: vec!["*.log".into(), "!keep.log".into()],
        ..Options::default()
    });
    p.write(".gitignore", "target/\n*.tmp\n");
    p.write("sub/.gitignore", "local.txt\n");
    p.write("target/out.bin", "build\n");
    p.write("a.tmp", "t\n");
    p.write("x.log", "log\n");
    p.write("keep.log", "kept\n");
    p.write("sub/local.txt", "local\n");
    p.write("sub/other.txt", "other\n");
    p.write(".git/HEAD", "ref\n");
    let s = p.vcs.snapshot().expect("snapshot");
    let nothing = empty(&mut p);
    let files: Vec<String> = p
        .vcs
        .diff(nothing, s.id)
        .expect("diff")
        .changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    assert_eq!(
        files,
        [".gitignore", "keep.log", "sub/.gitignore", "sub/other.txt"]
    );

    // A new .gitignore rule takes effect at the next snapshot.
    p.write("sub/.gitignore", "local.txt\nother.txt\n");
    let s2 = p.vcs.snapshot().expect("snapshot");
    assert!(
        p.vcs
            .read(s2.id, "sub/other.txt".as_ref())
            .expect("read")
            .is_none()
    );

    // Restoring an older tree never touches ignored files.
    p.write("new.txt", "n\n");
    p.vcs
        .restore(s.id, &RestoreOptions::default())
        .expect("restore");
    assert!(!p.path("new.txt").exists());
    for kept in [
        "target/out.bin",
        "a.tmp",
        "x.log",
        "sub/local.txt",
        ".git/HEAD",
    ] {
        assert!(p.path(kept).exists(), "{kept} kept");
    }
}

/// A snapshot of the empty project, for diffs from nothing.
fn empty(p: &mut Project) -> smith_vcs::SnapshotId {
    let dir = tempfile::tempdir().expect("dir");
    let mut v = smith_vcs::Vcs::open(dir.path(), p.vcs.store(), Options::default()).expect("open");
    v.snapshot().expect("snapshot").id
}

/// Files over the caps are reported (never silently dropped), and a
/// restore keeps them.
#[test]
fn size_caps_are_reported_and_restores_keep_the_files() {
    let mut p = Project::with(Options {
        max_file_bytes: 100,
        max_snapshot_bytes: 150,
        ..Options::default()
    });
    p.write("a.txt", &"a".repeat(80));
    p.write("b.txt", &"b".repeat(80));
    p.write("big.bin", &"x".repeat(101));
    let s = p.vcs.snapshot().expect("snapshot");
    assert_eq!(s.files, 1);
    assert_eq!(s.bytes, 80);
    let skipped: Vec<(String, u64, SkipReason)> = s
        .skipped
        .iter()
        .map(|k| (k.path.display().to_string(), k.size, k.reason))
        .collect();
    assert_eq!(
        skipped,
        vec![
            ("b.txt".into(), 80, SkipReason::SnapshotCap(150)),
            ("big.bin".into(), 101, SkipReason::FileCap(100)),
        ]
    );
    std::fs::remove_file(p.path("a.txt")).expect("rm");
    p.write("big.bin", &"y".repeat(120));
    let r = p
        .vcs
        .restore(s.id, &RestoreOptions::default())
        .expect("restore");
    // b.txt fits now that a.txt is gone, but the target records it by
    // size only: both are kept as they are.
    assert_eq!(
        r.kept,
        vec![PathBuf::from("b.txt"), PathBuf::from("big.bin")]
    );
    assert_eq!(
        std::fs::read_to_string(p.path("a.txt")).expect("a"),
        "a".repeat(80)
    );
    assert_eq!(
        std::fs::read_to_string(p.path("big.bin")).expect("big"),
        "y".repeat(120)
    );
    assert!(p.path("b.txt").exists());
}

/// The stat cache: an unchanged file is not read again, in this process
/// or the next.
#[test]
fn unchanged_files_are_not_read_again() {
    let mut p = Project::new();
    for i in 0..50 {
        p.write(&format!("d{}/f{i}.txt", i % 5), &format!("file {i}\n"));
    }
    let first = p.vcs.snapshot().expect("snapshot");
    assert_eq!(first.files_read, 50);
    std::thread::sleep(std::time::Duration::from_nanos(
        2 * smith_vcs::RACY_MARGIN_NS as u64,
    ));
    p.vcs.snapshot().expect("snapshot");
    let again = p.vcs.snapshot().expect("snapshot");
    assert_eq!((again.id, again.files_read), (first.id, 0));
    p.write("d1/f1.txt", "changed\n");
    let one = p.vcs.snapshot().expect("snapshot");
    assert_eq!(one.files_read, 1);
    assert_ne!(one.id, first.id);
    std::thread::sleep(std::time::Duration::from_nanos(
        2 * smith_vcs::RACY_MARGIN_NS as u64,
    ));
    p.vcs.snapshot().expect("snapshot");
    // A new process (a new Vcs) reads the cache from the store (saved on
    // drop or flush).
    p.vcs.flush().expect("flush");
    let mut reopened =
        smith_vcs::Vcs::open(&p.root(), p.vcs.store(), Options::default()).expect("open");
    let s = reopened.snapshot().expect("snapshot");
    assert_eq!((s.id, s.files_read), (one.id, 0));
}

/// gc keeps what the live snapshots reach and removes the rest.
#[test]
fn gc_removes_unreferenced_snapshots_and_objects() {
    let mut p = Project::new();
    p.write("a.txt", "first version\n");
    let a = p.vcs.snapshot().expect("snapshot");
    p.write("a.txt", "second version\n");
    p.write("b.txt", "only in b\n");
    let b = p.vcs.snapshot().expect("snapshot");
    p.write("a.txt", "third version\n");
    std::fs::remove_file(p.path("b.txt")).expect("rm");
    let c = p.vcs.snapshot().expect("snapshot");
    let report = p.vcs.gc(&[a.id]).expect("gc");
    assert_eq!(report.snapshots_removed, 2);
    // b's root tree, its a.txt and b.txt blobs; c's root tree and a.txt
    // blob stay (the stat cache holds the working tree).
    assert_eq!(report.objects_removed, 3);
    assert_eq!(
        p.vcs.check(b.id).expect_err("gone").kind(),
        ErrorKind::UnknownSnapshot
    );
    p.vcs
        .restore(a.id, &RestoreOptions::default())
        .expect("restore a");
    assert_eq!(
        std::fs::read_to_string(p.path("a.txt")).expect("a"),
        "first version\n"
    );
    let _ = c;
    // Unknown live ids are refused before anything is removed.
    let e = p.vcs.gc(&[b.id]).expect_err("unknown");
    assert_eq!(e.kind(), ErrorKind::UnknownSnapshot);
    assert!(p.vcs.check(a.id).is_ok());
}

#[test]
fn gc_is_refused_while_another_vcs_has_the_store_open() {
    let mut p = Project::new();
    p.write("a.txt", "first version\n");
    let a = p.vcs.snapshot().expect("snapshot");
    p.write("a.txt", "second version\n");
    let b = p.vcs.snapshot().expect("snapshot");
    let store = p.vcs.store().to_path_buf();
    let other = Vcs::open(&p.root(), &store, Options::default()).expect("open again");
    let e = p.vcs.gc(&[b.id]).expect_err("busy");
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert!(e.to_string().contains("nothing was collected"), "{e}");
    // Nothing was removed, and the store still works from both.
    assert!(p.vcs.check(a.id).is_ok());
    drop(other);
    let report = p.vcs.gc(&[b.id]).expect("gc once the other is closed");
    assert_eq!(report.snapshots_removed, 1);
    // The collection gave the lock back: another `Vcs` opens, and now the
    // first one is the other.
    let mut again = Vcs::open(&p.root(), &store, Options::default()).expect("open");
    assert_eq!(again.gc(&[b.id]).expect_err("busy").kind(), ErrorKind::Busy);
}

/// An ignored file in the way of a file a restore writes is overwritten
/// only when its content is the same, or when forced.
#[test]
fn restore_refuses_to_overwrite_a_differing_ignored_file() {
    let mut p = Project::new();
    p.write("notes.txt", "recorded\n");
    let s = p.vcs.snapshot().expect("snapshot").id;
    p.write(".gitignore", "notes.txt\n");
    p.write("notes.txt", "private, never recorded\n");
    p.vcs.snapshot().expect("snapshot");
    let before = p.manifest();
    let e = p
        .vcs
        .restore(s, &RestoreOptions::default())
        .expect_err("in the way");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(e.conflicts(), &[PathBuf::from("notes.txt")]);
    assert_eq!(p.manifest(), before);
    p.vcs
        .restore(
            s,
            &RestoreOptions {
                force: true,
                ..RestoreOptions::default()
            },
        )
        .expect("forced");
    assert_eq!(
        std::fs::read_to_string(p.path("notes.txt")).expect("notes"),
        "recorded\n"
    );
    assert!(!p.path(".gitignore").exists());
}

/// Every diagnostic the suite produced has its three parts.
#[test]
fn every_diagnostic_is_complete_and_leaks_nothing() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = smith_diag::audit::audit_test_suite("every_diagnostic_is_complete", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{report:?}");
}

/// A restore that fails after it swapped files in (a folder it must remove
/// is kept alive by an ignored file) puts every file back as it was.
#[test]
fn a_restore_that_fails_late_rolls_back_its_swaps() {
    let mut p = Project::new();
    p.write(".gitignore", "*.log\n");
    p.write("a.txt", "one\n");
    p.write("b.txt", "bee\n");
    let s1 = p.vcs.snapshot().expect("snapshot").id;
    p.write("a.txt", "two, longer\n");
    p.write("b.txt", "B\n");
    p.write("d/x.txt", "x\n");
    p.vcs.snapshot().expect("snapshot");
    p.write("d/keep.log", "ignored\n");
    let before = p.manifest();
    let e = p
        .vcs
        .restore(s1, &RestoreOptions::default())
        .expect_err("the folder cannot go");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.diagnostic().what().contains("rolled back"), "{e}");
    assert_eq!(p.manifest(), before);
    // Once the ignored file is gone the same restore goes through.
    std::fs::remove_file(p.path("d/keep.log")).expect("rm");
    p.vcs
        .restore(s1, &RestoreOptions::default())
        .expect("restore");
    assert_eq!(std::fs::read(p.path("a.txt")).expect("a"), b"one\n");
    assert_eq!(std::fs::read(p.path("b.txt")).expect("b"), b"bee\n");
    assert!(!p.path("d").exists());
}

/// A restore writes into the file it replaced last time instead of a new
/// one, and never empties a replaced file that is linked elsewhere.
#[test]
fn restores_reuse_replaced_files_and_spare_hard_links() {
    use std::os::unix::fs::MetadataExt as _;
    let mut p = Project::new();
    p.write("a.txt", "one\n");
    let s1 = p.vcs.snapshot().expect("snapshot").id;
    p.write("a.txt", "two, longer\n");
    let s2 = p.vcs.snapshot().expect("snapshot").id;
    let ino = |p: &Project| std::fs::symlink_metadata(p.path("a.txt")).expect("a").ino();
    let replaced = ino(&p);
    p.vcs.undo(s1, s2, UndoOptions::default()).expect("undo");
    assert_eq!(std::fs::read(p.path("a.txt")).expect("a"), b"one\n");
    p.vcs.redo(s1, s2, UndoOptions::default()).expect("redo");
    assert_eq!(std::fs::read(p.path("a.txt")).expect("a"), b"two, longer\n");
    assert_eq!(
        ino(&p),
        replaced,
        "the redo wrote into the file the undo replaced"
    );

    // A second link outside the project keeps its content.
    let outside = p._dir.path().join("outside-link");
    std::fs::hard_link(p.path("a.txt"), &outside).expect("link");
    p.vcs.undo(s1, s2, UndoOptions::default()).expect("undo");
    p.vcs.redo(s1, s2, UndoOptions::default()).expect("redo");
    p.vcs.undo(s1, s2, UndoOptions::default()).expect("undo");
    let a = p.path("a.txt");
    // Dropping the store waits for the tidying of what it replaced.
    let Project { _dir: dir, vcs } = p;
    drop(vcs);
    assert_eq!(std::fs::read(&outside).expect("link"), b"two, longer\n");
    assert_eq!(std::fs::read(&a).expect("a"), b"one\n");
    drop(dir);
}
