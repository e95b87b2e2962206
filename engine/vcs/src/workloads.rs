//! The measured workloads, as plain functions so a benchmark harness (the
//! crate's divan benchmarks, or a gate of `smith bench`) can run them.
//!
//! Each works in a folder the caller gives and owns: a generated project
//! under `DIR/project` and its store under `DIR/store`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::{Options, RestoreReport, Snapshot, SnapshotId, UndoOptions, Vcs, VcsError};

/// Text of about `len` bytes, distinct per `seed`, in lines of source-like
/// text (so it compresses like code does).
pub fn file_text(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut line = 0u64;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let _ = writeln!(
            out,
            "    let value_{line} = compute({}, {:#x}, \"item-{}\"); // step {}",
            x % 1000,
            x >> 40,
            (x >> 20) % 97,
            seed
        );
        line += 1;
    }
    out.truncate(len);
    out
}

/// Writes a project of `files` files of about `file_bytes` bytes each
/// under `root`, 100 files to a folder, folders grouped 20 to a parent.
/// Returns the paths of the files, in creation order.
///
/// # Errors
///
/// When a file cannot be written.
pub fn generate(root: &Path, files: usize, file_bytes: usize) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::with_capacity(files);
    for i in 0..files {
        let path = file_path(root, i);
        if i % 100 == 0
            && let Some(dir) = path.parent()
        {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, file_text(i as u64, file_bytes))?;
        paths.push(path);
    }
    Ok(paths)
}

/// [`generate`] unless `dir` holds a marker saying it was done (so a large
/// fixture is generated once and reused); the file paths either way.
///
/// # Errors
///
/// When a file cannot be written.
pub fn generate_once(
    dir: &Path,
    project: &Path,
    files: usize,
    file_bytes: usize,
) -> Result<Vec<PathBuf>, VcsError> {
    let marker = dir.join(format!("generated-{files}-{file_bytes}"));
    if marker.exists() {
        return Ok((0..files).map(|i| file_path(project, i)).collect());
    }
    let list = generate(project, files, file_bytes).map_err(|e| vcs_error(e, project))?;
    std::fs::write(&marker, b"").map_err(|e| vcs_error(e, &marker))?;
    Ok(list)
}

/// The path of file `i` of a project [`generate`] wrote under `root`.
pub fn file_path(root: &Path, i: usize) -> PathBuf {
    root.join(format!("group{:03}", i / 2000))
        .join(format!("dir{:03}", (i / 100) % 20))
        .join(format!("file{:03}.rs", i % 100))
}

/// Appends one line to `path` (an edit of one line).
///
/// # Errors
///
/// When the file cannot be written.
pub fn append_line(path: &Path, n: u64) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    writeln!(f, "// edit {n}")
}

fn vcs_error(e: std::io::Error, path: &Path) -> VcsError {
    VcsError::io("writing the generated project", path, &e)
}

/// "Snapshot after a one-file change": a generated project already
/// snapshotted, ready to change one file and snapshot again.
#[derive(Debug)]
pub struct SnapshotAfterChange {
    /// The project root.
    pub project: PathBuf,
    /// Its store.
    pub vcs: Vcs,
    files: Vec<PathBuf>,
    edits: u64,
}

impl SnapshotAfterChange {
    /// Generates `files` files of 200 bytes under `dir/project` and takes
    /// the first snapshot.
    ///
    /// # Errors
    ///
    /// When the project or the store cannot be written.
    pub fn prepare(dir: &Path, files: usize) -> Result<SnapshotAfterChange, VcsError> {
        let project = dir.join("project");
        let list = generate_once(dir, &project, files, 200)?;
        let mut vcs = Vcs::open(&project, &dir.join("store"), Options::default())?;
        vcs.snapshot()?;
        Ok(SnapshotAfterChange {
            project,
            vcs,
            files: list,
            edits: 0,
        })
    }

    /// Changes one file (a different one each call).
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn change_one(&mut self) -> Result<(), VcsError> {
        self.edits += 1;
        let path = &self.files[(self.edits as usize * 7919) % self.files.len()];
        append_line(path, self.edits).map_err(|e| vcs_error(e, path))
    }

    /// Takes the snapshot (the measured step).
    ///
    /// # Errors
    ///
    /// As [`Vcs::snapshot`].
    pub fn snapshot(&mut self) -> Result<Snapshot, VcsError> {
        self.vcs.snapshot()
    }
}

/// "Undo of a 1,000-file change": a project, the snapshots before and after
/// an effect that changed `changed` of its files.
#[derive(Debug)]
pub struct UndoChange {
    /// The store.
    pub vcs: Vcs,
    /// The snapshot before the effect.
    pub before: SnapshotId,
    /// The snapshot after the effect.
    pub after: SnapshotId,
}

impl UndoChange {
    /// Generates `files` files under `dir/project`, snapshots, changes the
    /// first `changed` of them by one line and snapshots again.
    ///
    /// # Errors
    ///
    /// When the project or the store cannot be written.
    pub fn prepare(dir: &Path, files: usize, changed: usize) -> Result<UndoChange, VcsError> {
        let project = dir.join("project");
        let list = generate(&project, files, 1024).map_err(|e| vcs_error(e, &project))?;
        let mut vcs = Vcs::open(&project, &dir.join("store"), Options::default())?;
        let before = vcs.snapshot()?.id;
        for (i, p) in list.iter().take(changed).enumerate() {
            append_line(p, i as u64).map_err(|e| vcs_error(e, p))?;
        }
        let after = vcs.snapshot()?.id;
        Ok(UndoChange { vcs, before, after })
    }

    /// Undoes the effect (the measured step).
    ///
    /// # Errors
    ///
    /// As [`Vcs::undo`].
    pub fn undo(&mut self) -> Result<RestoreReport, VcsError> {
        self.vcs
            .undo(self.before, self.after, UndoOptions::default())
    }

    /// Redoes it (to measure the undo again).
    ///
    /// # Errors
    ///
    /// As [`Vcs::redo`].
    pub fn redo(&mut self) -> Result<RestoreReport, VcsError> {
        self.vcs
            .redo(self.before, self.after, UndoOptions::default())
    }
}

/// What [`store_growth`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Growth {
    /// Bytes of the generated project.
    pub project_bytes: u64,
    /// Bytes the store's files took after the first snapshot.
    pub first: u64,
    /// Bytes the store's files grew by over the checkpoints.
    pub growth: u64,
    /// Checkpoints taken after the first snapshot.
    pub checkpoints: u64,
}

/// "Store growth": generates a project of about `project_bytes` under
/// `dir/project` (files of 10 KiB), snapshots it, then `checkpoints` times
/// appends one line to one file and snapshots; returns how much the store
/// grew (the sum of its files' sizes, the stat cache excluded).
///
/// # Errors
///
/// When the project or the store cannot be written.
pub fn store_growth(dir: &Path, project_bytes: u64, checkpoints: u64) -> Result<Growth, VcsError> {
    let project = dir.join("project");
    let store = dir.join("store");
    let file_bytes = 10 * 1024;
    let files = (project_bytes as usize).div_ceil(file_bytes);
    let list = generate(&project, files, file_bytes).map_err(|e| vcs_error(e, &project))?;
    let mut vcs = Vcs::open(&project, &store, Options::default())?;
    vcs.snapshot()?;
    let first = store_bytes(&store);
    for i in 0..checkpoints {
        let path = &list[(i as usize * 37) % list.len()];
        append_line(path, i).map_err(|e| vcs_error(e, path))?;
        vcs.snapshot()?;
    }
    let last = store_bytes(&store);
    Ok(Growth {
        project_bytes: (files * file_bytes) as u64,
        first,
        growth: last.saturating_sub(first),
        checkpoints,
    })
}

/// The sum of the sizes of the store's objects and snapshot records.
pub fn store_bytes(store: &Path) -> u64 {
    fn walk(p: &Path) -> u64 {
        let Ok(rd) = std::fs::read_dir(p) else {
            return 0;
        };
        rd.flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path()),
                Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
                Err(_) => 0,
            })
            .sum()
    }
    walk(&store.join("objects")) + walk(&store.join("snapshots"))
}
