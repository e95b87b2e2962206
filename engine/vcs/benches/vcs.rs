//! divan benchmarks for the snapshot store, over the workloads in
//! `smith_vcs::workloads`:
//!
//! * a snapshot after a one-file change in a generated 100,000-file tree,
//!   beside `git status --porcelain` on the same tree (git is used only
//!   here, as the floor to compare with);
//! * undo of an effect that changed 1,000 files (of 10,000);
//! * store growth over 100 checkpoints of a one-line change in a 10 MB
//!   project (printed to standard error; the time is the whole run).
//!
//! The 100,000-file tree and its git repository are generated once under
//! the system temp directory and reused (`SMITH_VCS_BENCH_FILES` changes
//! the count).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use divan::Bencher;
use smith_vcs::workloads::{self, SnapshotAfterChange, UndoChange};

fn main() {
    divan::main();
}

fn files() -> usize {
    std::env::var("SMITH_VCS_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// The shared fixture folder: `project/` (also a git repository) and
/// `store/`.
fn fixture() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("smith-vcs-bench-{}", files()));
        std::fs::create_dir_all(&dir).expect("fixture dir");
        // Generates the tree (once) and takes the first snapshot.
        SnapshotAfterChange::prepare(&dir, files()).expect("prepare");
        let project = dir.join("project");
        if !project.join(".git").exists() {
            git(&project, &["init", "-q"]);
            git(&project, &["add", "-A"]);
            git(
                &project,
                &[
                    "-c",
                    "user.name=b",
                    "-c",
                    "user.email=b@b",
                    "commit",
                    "-qm",
                    "fixture",
                ],
            );
        }
        dir
    })
}

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// smith: change one file, snapshot (measured).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn snapshot_after_one_file_change(b: Bencher<'_, '_>) {
    let w = RefCell::new(SnapshotAfterChange::prepare(fixture(), files()).expect("prepare"));
    // Settle the racy window of the first snapshot.
    std::thread::sleep(std::time::Duration::from_millis(200));
    w.borrow_mut().snapshot().expect("snapshot");
    b.with_inputs(|| w.borrow_mut().change_one().expect("change"))
        .bench_local_values(|()| {
            let s = w.borrow_mut().snapshot().expect("snapshot");
            assert!(s.files_read >= 1);
            s
        });
}

/// smith: snapshot of the unchanged tree (measured): the floor of the
/// one-file-change case.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn snapshot_unchanged(b: Bencher<'_, '_>) {
    let mut w = SnapshotAfterChange::prepare(fixture(), files()).expect("prepare");
    std::thread::sleep(std::time::Duration::from_millis(200));
    w.snapshot().expect("snapshot");
    b.bench_local(|| {
        let s = w.snapshot().expect("snapshot");
        assert_eq!(s.files_read, 0);
        s
    });
}

/// git: change one file, `git status --porcelain` (measured).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn git_status_after_one_file_change(b: Bencher<'_, '_>) {
    let project = fixture().join("project");
    let list: Vec<PathBuf> = (0..files())
        .step_by(7919)
        .map(|i| {
            project
                .join(format!("group{:03}", i / 2000))
                .join(format!("dir{:03}", (i / 100) % 20))
                .join(format!("file{:03}.rs", i % 100))
        })
        .collect();
    let mut n = 0u64;
    git(&project, &["status", "--porcelain"]);
    b.with_inputs(|| {
        n += 1;
        workloads::append_line(&list[n as usize % list.len()], n).expect("change");
    })
    .bench_local_values(|()| git(&project, &["status", "--porcelain"]));
}

/// Undo of an effect that changed 1,000 of 10,000 files (measured); each
/// sample redoes it first.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn undo_1000_file_change(b: Bencher<'_, '_>) {
    let dir = tempfile::tempdir().expect("dir");
    let w = RefCell::new(UndoChange::prepare(dir.path(), 10_000, 1_000).expect("prepare"));
    w.borrow_mut().undo().expect("undo");
    b.with_inputs(|| {
        w.borrow_mut().redo().expect("redo");
    })
    .bench_local_values(|()| {
        let r = w.borrow_mut().undo().expect("undo");
        assert_eq!(r.changes.len(), 1_000);
        r
    });
}

/// Store growth over 100 checkpoints of a one-line change in a 10 MB
/// project; the figures go to standard error.
#[divan::bench(sample_count = 1, sample_size = 1)]
fn store_growth_100_checkpoints_10mb(b: Bencher<'_, '_>) {
    b.bench_local(|| {
        let dir = tempfile::tempdir().expect("dir");
        let g = workloads::store_growth(dir.path(), 10 << 20, 100).expect("growth");
        eprintln!(
            "store growth: project {} bytes, first snapshot {} bytes, +{} bytes over {} checkpoints ({} bytes each)",
            g.project_bytes,
            g.first,
            g.growth,
            g.checkpoints,
            g.growth / g.checkpoints.max(1)
        );
        g
    });
}
