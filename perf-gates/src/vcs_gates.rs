//! Gates on the snapshot store (smith-vcs), over the workloads of
//! `smith_vcs::workloads`:
//!
//! - `vcs.undo_1000`: undo of an effect that changed 1,000 files of a
//!   10,000-file project, at most 200 ms (wall clock: the undo's own
//!   writes, renames and two scans, as a user waits for them). Each sample
//!   redoes the effect first (not timed). A warm-up undo and redo come
//!   first, as in a store that has restored before.
//! - `vcs.store_growth_100`: bytes the store grows by over 100 checkpoints
//!   of a one-line change in a 10 MB project, at most 1,000,000.
//! - `vcs.snapshot_unchanged_allocs`: allocations of a snapshot of an
//!   unchanged tree, an exact count (none).
//! - `vcs.snapshot_one_change`: a snapshot after a one-file change in a
//!   generated 100,000-file tree, against `git status --porcelain` after a
//!   one-file change in the same tree (git is used here only, as the floor;
//!   it is set up once with `git fast-import` and `git reset`), samples
//!   alternating, both on the wall clock (git's work is in its own
//!   processes and threads); at most 1x git.
//!
//! Every fixture is generated once per gate run in a folder under the
//! system temporary directory and removed after. The 100,000-file tree
//! comes last: removing it frees many inodes at once, which makes a file
//! system without a journal slower to allocate new ones for a minute.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use smith_vcs::workloads::{self, SnapshotAfterChange, UndoChange};
use smith_vcs::{Options, Vcs};

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::measure::{Plan, Timing};
use crate::table::Context;

/// The goal for undoing a 1,000-file change: 200 ms.
pub const UNDO_BUDGET_NS: f64 = 200_000_000.0;

/// The goal for the store's growth over 100 one-line checkpoints of a
/// 10 MB project: 1 MB.
pub const GROWTH_BUDGET_BYTES: f64 = 1_000_000.0;

/// Allocations of a snapshot of an unchanged tree, exactly (kept equal to
/// smith-vcs's `tests/all/alloc_count.rs`).
pub const UNCHANGED_SNAPSHOT_ALLOCATIONS: f64 = 0.0;

/// Files of the tree the one-change snapshot is measured in.
pub const SNAPSHOT_FILES: usize = 100_000;

/// Files of the undo's project, and how many the effect changed.
pub const UNDO_FILES: (usize, usize) = (10_000, 1_000);

/// Samples of the undo and of the snapshot gates (each a whole operation
/// on a large tree; the plan's count is capped here to keep the group
/// within its time).
const MAX_SAMPLES: usize = 11;

/// Gates on the snapshot store.
pub const VCS: &[Gate] = &[
    Gate {
        name: "vcs.undo_1000",
        metric: "undo of an effect that changed 1,000 files of a 10,000-file project (wall clock, redone before each sample)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(UNDO_BUDGET_NS)],
        floor: None,
        run: undo_1000,
        cores: 2,
    },
    Gate {
        name: "vcs.store_growth_100",
        metric: "bytes the store grows by over 100 checkpoints of a one-line change in a 10 MB project",
        unit: Unit::Bytes,
        limits: &[Limit::AtMost(GROWTH_BUDGET_BYTES)],
        floor: None,
        run: store_growth_100,
        cores: 1,
    },
    Gate {
        name: "vcs.snapshot_unchanged_allocs",
        metric: "allocations of a snapshot of an unchanged 10,000-file tree (exact count, must not grow)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(UNCHANGED_SNAPSHOT_ALLOCATIONS)],
        floor: None,
        run: snapshot_unchanged_allocs,
        cores: 1,
    },
    Gate {
        name: "vcs.snapshot_one_change",
        metric: "snapshot after a one-file change in a generated 100,000-file tree (wall clock)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::RatioAtMost(1.0)],
        floor: Some("`git status --porcelain` after a one-file change in the same tree"),
        run: snapshot_one_change,
        cores: 2,
    },
];

/// Whether `plan` is the full or the quick plan (by name: `smith bench`
/// may change the full plan's sample count) and so uses full-size
/// fixtures; other plans (tests) use a hundredth.
fn full_size(plan: &Plan) -> bool {
    plan.name == Plan::FULL.name || plan.name == Plan::QUICK.name
}

fn files(plan: &Plan, n: usize) -> usize {
    if full_size(plan) {
        n
    } else {
        (n / 100).max(10)
    }
}

fn samples(plan: &Plan) -> usize {
    plan.samples.clamp(1, MAX_SAMPLES)
}

/// A fixture folder, removed on drop: under [`fixture_root`], and whether
/// that is a tmpfs.
struct FixtureDir(PathBuf, bool);

/// Free space a tmpfs must have before the trees are generated on it: the
/// 100,000-file tree takes a page per file (about 400 MiB) and its
/// checkpoint store comes on top.
const TMPFS_MIN_FREE: u64 = 2 << 30;

/// Where the gates generate their trees: `/dev/shm` when it is a writable
/// tmpfs with [`TMPFS_MIN_FREE`] free, else the system temporary directory.
///
/// Why: the setup of `vcs.snapshot_one_change` creates 100,000 files. On a
/// disk file system that has just deleted as many (the tests and the gates
/// before it generate and remove their fixtures), ext4's inode allocator
/// scans the inode tables for each new file and skips the recently deleted
/// ones: the setup took 53 s inside a full `smith bench --quick` run, 18 s
/// alone and 9 s on tmpfs, on an AMD EPYC (family 26 model 2, 2 vCPUs).
/// What is timed (a snapshot against `git status` on the same tree, the
/// undo, the store's growth) compares both sides on the same file system
/// wherever the tree is; the snapshot gate notes which (`tmpfs`).
fn fixture_root() -> (PathBuf, bool) {
    #[cfg(target_os = "linux")]
    {
        let shm = Path::new("/dev/shm");
        // SAFETY: statfs writes only into `st`; the path is a NUL-terminated
        // literal.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::statfs(c"/dev/shm".as_ptr(), &raw mut st) } == 0;
        // Compared as i128: the field and the constant are signed on glibc,
        // and the field is unsigned on musl.
        let tmpfs = ok && i128::from(st.f_type) == i128::from(libc::TMPFS_MAGIC);
        let free = (st.f_bavail as u64).saturating_mul(st.f_bsize as u64);
        // SAFETY: access only reads the path.
        let writable = unsafe { libc::access(c"/dev/shm".as_ptr(), libc::W_OK) } == 0;
        if tmpfs && writable && free >= TMPFS_MIN_FREE {
            return (shm.to_path_buf(), true);
        }
    }
    (std::env::temp_dir(), false)
}

impl FixtureDir {
    fn new(what: &str) -> Result<FixtureDir, GateError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let (root, tmpfs) = fixture_root();
        let path = root.join(format!(
            "smith-bench-vcs-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).map_err(|e| {
            GateError::new(format!(
                "could not create the fixture folder {}: {e}; check that the temporary \
                 directory is writable (TMPDIR, or /dev/shm when it is a tmpfs with 2 GiB \
                 free) and has room for 100,000 small files",
                path.display()
            ))
        })?;
        Ok(FixtureDir(path, tmpfs))
    }
}

impl Drop for FixtureDir {
    fn drop(&mut self) {
        // Best effort: a leftover fixture in the temp dir harms nothing, and
        // its name says what it is.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn vcs_error(what: &str, e: smith_vcs::VcsError) -> GateError {
    GateError::new(format!("{what}: {e}"))
}

fn note(name: &'static str, value: f64, unit: Unit) -> Note {
    Note { name, value, unit }
}

fn nanos(d: Duration) -> f64 {
    d.as_nanos() as f64
}

fn timing(samples: Vec<f64>) -> Timing {
    let n = samples.len();
    Timing::from_samples(samples, 1).unwrap_or(Timing {
        median_ns: f64::NAN,
        min_ns: f64::NAN,
        max_ns: f64::NAN,
        batch: 1,
        samples: n,
    })
}

// ---- undo ----

fn undo_1000(cx: &mut Context) -> Result<Measurement, GateError> {
    let plan = cx.plan;
    let (n, changed) = (files(&plan, UNDO_FILES.0), files(&plan, UNDO_FILES.1));
    let dir = FixtureDir::new("undo")?;
    let mut w = UndoChange::prepare(&dir.0, n, changed)
        .map_err(|e| vcs_error("the undo fixture could not be set up", e))?;
    let undo = |w: &mut UndoChange| -> Result<Duration, GateError> {
        let start = Instant::now();
        let r = w
            .undo()
            .map_err(|e| vcs_error("the undo of the fixture's effect failed", e))?;
        let took = start.elapsed();
        if r.changes.len() != changed {
            return Err(GateError::new(format!(
                "the undo changed {} paths, not the {changed} the effect changed: the \
                 workload or the undo is broken, so its time means nothing",
                r.changes.len()
            )));
        }
        Ok(took)
    };
    let redo = |w: &mut UndoChange| {
        w.redo()
            .map(|_| ())
            .map_err(|e| vcs_error("redoing the fixture's effect failed", e))
    };
    // Warm-up: a store that has restored before.
    undo(&mut w)?;
    redo(&mut w)?;
    let probe = crate::load::Probe::start();
    let mut times = Vec::new();
    for _ in 0..samples(&plan) {
        times.push(nanos(undo(&mut w)?));
        redo(&mut w)?;
    }
    cx.record_load(probe.finish());
    let t = timing(times);
    Ok(Measurement {
        median: t.median_ns,
        floor: None,
        samples: t.samples,
        notes: vec![
            note("fastest", t.min_ns, Unit::Nanoseconds),
            note("slowest", t.max_ns, Unit::Nanoseconds),
            note("files", n as f64, Unit::Count),
            note("changed", changed as f64, Unit::Count),
        ],
    })
}

// ---- store growth ----

fn store_growth_100(cx: &mut Context) -> Result<Measurement, GateError> {
    let bytes = if full_size(&cx.plan) {
        10 << 20
    } else {
        100 << 10
    };
    let dir = FixtureDir::new("growth")?;
    let g = workloads::store_growth(&dir.0, bytes, 100)
        .map_err(|e| vcs_error("the store growth workload failed", e))?;
    Ok(Measurement {
        median: g.growth as f64,
        floor: None,
        samples: 1,
        notes: vec![
            note("project", g.project_bytes as f64, Unit::Bytes),
            note("first_snapshot", g.first as f64, Unit::Bytes),
            note(
                "per_checkpoint",
                g.growth as f64 / g.checkpoints.max(1) as f64,
                Unit::Bytes,
            ),
        ],
    })
}

// ---- allocations ----

fn snapshot_unchanged_allocs(cx: &mut Context) -> Result<Measurement, GateError> {
    if !smith_alloc::is_global_allocator() {
        return Err(GateError::new(
            "smith_alloc::AccountingAllocator is not this process's global allocator, so an \
             allocation count would be meaningless; run the gate from the `smith` binary \
             (`smith bench`), or install the accounting allocator as #[global_allocator] in \
             the binary that runs it",
        ));
    }
    let n = files(&cx.plan, UNDO_FILES.0);
    let dir = FixtureDir::new("allocs")?;
    let project = dir.0.join("project");
    workloads::generate(&project, n, 200).map_err(|e| {
        GateError::new(format!(
            "could not write the {n}-file fixture under {}: {e}",
            project.display()
        ))
    })?;
    let mut vcs = Vcs::open(&project, &dir.0.join("store"), Options::default())
        .map_err(|e| vcs_error("the fixture's store could not be opened", e))?;
    let snapshot = |vcs: &mut Vcs| {
        vcs.snapshot()
            .map_err(|e| vcs_error("a snapshot of the fixture failed", e))
    };
    let first = snapshot(&mut vcs)?;
    // Past the racy window, so the stat cache trusts every entry; the
    // next snapshots size the reused buffers.
    std::thread::sleep(Duration::from_nanos(2 * smith_vcs::RACY_MARGIN_NS as u64));
    snapshot(&mut vcs)?;
    snapshot(&mut vcs)?;
    let mut worst = 0u64;
    let runs = 5;
    for _ in 0..runs {
        let (s, stats) = smith_alloc::count(|| vcs.snapshot());
        let s = s.map_err(|e| vcs_error("a counted snapshot of the fixture failed", e))?;
        if s.id != first.id || s.files_read != 0 {
            return Err(GateError::new(format!(
                "a snapshot of the unchanged fixture read {} files or gave another id, so it \
                 did not measure an unchanged tree; something changed the fixture under {}",
                s.files_read,
                project.display()
            )));
        }
        worst = worst.max(stats.allocations);
    }
    Ok(Measurement {
        median: worst as f64,
        floor: None,
        samples: runs,
        notes: vec![note("files", n as f64, Unit::Count)],
    })
}

// ---- snapshot after one change, against git ----

/// Runs git in `dir`; its standard output.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GateError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| git_missing(&e))?;
    if !out.status.success() {
        return Err(GateError::new(format!(
            "`git {}` in the fixture {} failed ({}): {}; the floor of vcs.snapshot_one_change \
             cannot be measured without it",
            args.join(" "),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

fn git_missing(e: &std::io::Error) -> GateError {
    GateError::new(format!(
        "git could not be run ({e}): vcs.snapshot_one_change needs git, as its floor \
         (`git status --porcelain` on the same tree); install git and put it on PATH, or \
         leave this gate out (`smith bench --only` with another gate's name)"
    ))
}

/// Makes `project` (whose files are `list`) a git repository with one
/// commit of every file and an index that knows their stats, writing one
/// pack rather than a loose object per file.
fn git_fixture(project: &Path, list: &[PathBuf]) -> Result<(), GateError> {
    git(project, &["init", "-q"])?;
    let mut child = Command::new("git")
        .arg("-C")
        .arg(project)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| git_missing(&e))?;
    let feed = |stdin: &mut std::process::ChildStdin| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
        w.write_all(
            b"commit refs/heads/main\ncommitter bench <bench@example.com> 0 +0000\ndata 7\nfixture\n",
        )?;
        for path in list {
            let rel = path.strip_prefix(project).unwrap_or(path);
            let content = std::fs::read(path)?;
            writeln!(w, "M 100644 inline {}", rel.display())?;
            writeln!(w, "data {}", content.len())?;
            w.write_all(&content)?;
            w.write_all(b"\n")?;
        }
        w.write_all(b"done\n")?;
        w.flush()
    };
    let fed = match child.stdin.as_mut() {
        Some(stdin) => feed(stdin),
        None => Ok(()),
    };
    drop(child.stdin.take());
    let out = child.wait_with_output().map_err(|e| git_missing(&e))?;
    if let Err(e) = fed {
        return Err(GateError::new(format!(
            "feeding the fixture to `git fast-import` failed: {e}; {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    if !out.status.success() {
        return Err(GateError::new(format!(
            "`git fast-import` of the fixture failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    git(project, &["symbolic-ref", "HEAD", "refs/heads/main"])?;
    // The index from the commit, its stats refreshed (every file hashed once).
    git(project, &["reset", "-q"])?;
    Ok(())
}

fn snapshot_one_change(cx: &mut Context) -> Result<Measurement, GateError> {
    let plan = cx.plan;
    // Fail early, before generating anything, when git is missing.
    Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| git_missing(&e))?;
    let n = files(&plan, SNAPSHOT_FILES);
    let dir = FixtureDir::new("snapshot")?;
    let setup = Instant::now();
    let mut w = SnapshotAfterChange::prepare(&dir.0, n)
        .map_err(|e| vcs_error("the 100,000-file fixture could not be set up", e))?;
    let list: Vec<PathBuf> = (0..n)
        .map(|i| workloads::file_path(&w.project, i))
        .collect();
    git_fixture(&w.project, &list)?;
    // Past the racy window of the first snapshot and of git's index.
    std::thread::sleep(Duration::from_millis(200));
    w.snapshot()
        .map_err(|e| vcs_error("a snapshot of the fixture failed", e))?;
    git(&w.project, &["status", "--porcelain"])?;
    let setup = setup.elapsed();
    let mut edits = 0u64;
    let mut git_change = || -> Result<(), GateError> {
        edits += 1;
        // Files the smith side does not change (it steps by 7919).
        let path = &list[(edits as usize * 104_729 + 1) % list.len()];
        workloads::append_line(path, edits)
            .map_err(|e| GateError::new(format!("could not change {}: {e}", path.display())))
    };
    let smith = |w: &mut SnapshotAfterChange| -> Result<f64, GateError> {
        w.change_one()
            .map_err(|e| vcs_error("changing one file of the fixture failed", e))?;
        let start = Instant::now();
        let s = w
            .snapshot()
            .map_err(|e| vcs_error("a snapshot of the fixture failed", e))?;
        let took = start.elapsed();
        if s.files_read == 0 {
            return Err(GateError::new(
                "the snapshot after a one-file change read no file: the change was not seen, \
                 so the snapshot did not do the work being measured",
            ));
        }
        Ok(nanos(took))
    };
    let project = w.project.clone();
    let mut floor = || -> Result<f64, GateError> {
        git_change()?;
        let start = Instant::now();
        let out = git(&project, &["status", "--porcelain"])?;
        let took = start.elapsed();
        if out.is_empty() {
            return Err(GateError::new(
                "`git status --porcelain` after a one-file change printed nothing: git did \
                 not see the change, so its time is no floor",
            ));
        }
        Ok(nanos(took))
    };
    // One of each, untimed: both sides warm.
    smith(&mut w)?;
    floor()?;
    let probe = crate::load::Probe::start();
    let (mut s, mut f) = (Vec::new(), Vec::new());
    for round in 0..samples(&plan) {
        if round % 2 == 0 {
            f.push(floor()?);
            s.push(smith(&mut w)?);
        } else {
            s.push(smith(&mut w)?);
            f.push(floor()?);
        }
    }
    cx.record_load(probe.finish());
    let (subject, floor) = (timing(s), timing(f));
    let mut m = Measurement::timed(&subject, &floor);
    m.notes.push(note("files", n as f64, Unit::Count));
    m.notes.push(note("setup", nanos(setup), Unit::Nanoseconds));
    m.notes
        .push(note("tmpfs", if dir.1 { 1.0 } else { 0.0 }, Unit::Count));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vcs_gates_carry_their_limits() {
        let find = crate::table::limits_of;
        assert_eq!(
            find("vcs.undo_1000"),
            Some(vec![Limit::AtMost(200_000_000.0)])
        );
        assert_eq!(
            find("vcs.store_growth_100"),
            Some(vec![Limit::AtMost(1_000_000.0)])
        );
        assert_eq!(
            find("vcs.snapshot_unchanged_allocs"),
            Some(vec![Limit::AtMost(0.0)])
        );
        assert_eq!(
            find("vcs.snapshot_one_change"),
            Some(vec![Limit::RatioAtMost(1.0)])
        );
    }

    fn tiny() -> Context {
        Context::new(Plan {
            name: "test",
            samples: 3,
            ..Plan::QUICK
        })
    }

    #[test]
    fn the_undo_gate_measures_an_undo() {
        let m = undo_1000(&mut tiny()).expect("the undo gate runs");
        assert_eq!(m.samples, 3);
        assert!(m.median > 0.0 && m.median.is_finite());
    }

    #[test]
    fn the_growth_gate_measures_growth() {
        let m = store_growth_100(&mut tiny()).expect("the growth gate runs");
        assert!(m.median > 0.0 && m.median < GROWTH_BUDGET_BYTES);
    }

    #[test]
    fn the_snapshot_gate_measures_smith_and_git() {
        if Command::new("git").arg("--version").output().is_err() {
            let e = snapshot_one_change(&mut tiny()).expect_err("no git");
            assert!(e.to_string().contains("needs git"), "{e}");
            return;
        }
        let m = snapshot_one_change(&mut tiny()).expect("the snapshot gate runs");
        let floor = m.floor.expect("git is the floor");
        assert!(m.median > 0.0 && floor > 0.0);
        assert_eq!(m.samples, 3);
    }
}
