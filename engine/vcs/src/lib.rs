//! Checkpoints without git: a content-addressed snapshot store of a
//! project's files and the operations over it — snapshot, diff, restore,
//! undo, redo and garbage collection — behind one structured API, with no
//! external VCS executable.
//!
//! [`Vcs::open`] takes the project root and the folder that holds the
//! project's store (smith uses its data directory). A snapshot
//! ([`Vcs::snapshot`]) records every file of the project that the ignore
//! rules keep (`.gitignore` files and an extra list in [`Options`]; the
//! `.git` folder and the store itself are never recorded): regular files
//! with their executable bit, symlinks as links (never followed), and files
//! over the per-file or per-snapshot size cap by path and size only, listed
//! in the result ([`Snapshot::skipped`]) and never restored over.
//!
//! Storage is content-addressed: blobs (file content, link targets) and
//! trees (one folder each, canonical CBOR written with `smith-codec`) are
//! named by the SHA-256 of a kind tag and their bytes, stored once and
//! zstd-compressed. A snapshot's id is the hash of its small record, so two
//! snapshots of the same tree have the same id. A stat cache (size, mtime,
//! ctime, inode, mode of every entry) makes snapshots incremental: an
//! unchanged file is not read again and a snapshot of an unchanged tree
//! allocates a constant number of times. `docs/vcs.md` gives the formats.
//!
//! Operations that change the project validate their target first and are
//! all-or-nothing: [`Vcs::restore`] writes every file into a staging folder,
//! then renames them into place, rolling back every step when one fails; it
//! refuses (changing nothing) when a file changed outside smith since an
//! expected snapshot unless forced, and its dry run lists the changes.
//! [`Vcs::undo`] and [`Vcs::redo`] are restores between an effect's before
//! and after snapshots limited to the paths the effect changed. Each
//! returns the snapshot ids before and after, for the session's VCS entry.
//! [`Vcs::gc`] removes everything the live snapshots do not reach.
#![deny(missing_docs)]

mod diff;
mod error;
mod export;
mod id;
mod objects;
mod restore;
mod scan;
mod tree;
pub mod workloads;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

pub use diff::{ChangeKind, Diff, FileChange, Side};
pub use error::{ErrorKind, VcsError};
pub use export::{ExportReport, NotWritten};
pub use id::{ObjectId, ObjectKind, SnapshotId};
pub use objects::ZSTD_LEVEL;
pub use restore::{RestoreOptions, RestoreReport, UndoOptions};
pub use scan::{RACY_MARGIN_NS, SkipReason, Skipped};
pub use tree::EntryKind;

use crate::objects::Objects;
use crate::scan::{Index, Scanner};
use crate::tree::Record;

/// What a [`Vcs`] records and how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Extra ignore patterns in `.gitignore` syntax, relative to the root,
    /// applied before the project's own `.gitignore` files (a `!pattern`
    /// here keeps a path they ignore).
    pub ignore: Vec<String>,
    /// Files larger than this many bytes are recorded by path and size only.
    pub max_file_bytes: u64,
    /// Once the recorded files add up to this many bytes, the remaining
    /// files (in path order) are recorded by path and size only.
    pub max_snapshot_bytes: u64,
    /// Folders never recorded, besides `.git` and the store itself
    /// (absolute, or relative to the root).
    pub exclude: Vec<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ignore: Vec::new(),
            max_file_bytes: 32 << 20,
            max_snapshot_bytes: 2 << 30,
            exclude: Vec::new(),
        }
    }
}

/// A snapshot just taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Its id.
    pub id: SnapshotId,
    /// The id of its root tree.
    pub tree: ObjectId,
    /// Files and symlinks recorded with their content.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files and symlinks read (the rest were unchanged per the stat cache).
    pub files_read: u64,
    /// Files recorded by path and size only, and why.
    pub skipped: Vec<Skipped>,
}

/// What [`Vcs::gc`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Snapshot records removed.
    pub snapshots_removed: u64,
    /// Trees and blobs removed.
    pub objects_removed: u64,
    /// Bytes of files removed.
    pub bytes_freed: u64,
    /// Trees and blobs kept.
    pub objects_kept: u64,
}

/// One project's snapshot store and working tree.
pub struct Vcs {
    objects: Objects,
    scanner: Scanner,
    index: Index,
    spare: Index,
    record_buf: Vec<u8>,
    /// Files read and folders listed since the cache was last saved.
    unsaved: u64,
    saved_once: bool,
    /// The last restore's tidying of what it replaced.
    cleanup: Option<std::thread::JoinHandle<()>>,
    /// Whether restores stage at the root rather than in the store's
    /// spare folder (another device, or another mount).
    spares_off: bool,
    /// `STORE/lock`, held shared while the store is open (and exclusive
    /// during [`Vcs::gc`]), so a collection never removes what another
    /// open `Vcs` is about to name.
    lock: std::fs::File,
}

/// The cache is saved once `unsaved * SAVE_RATIO` reaches its entry count:
/// writing one entry costs far less than reading one file again.
const SAVE_RATIO: u64 = 64;

impl Drop for Vcs {
    fn drop(&mut self) {
        self.finish_cleanup();
        if self.unsaved > 0 {
            let _ = self.save_index();
        }
    }
}

impl std::fmt::Debug for Vcs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vcs")
            .field("root", &self.scanner.root)
            .field("store", &self.objects.root())
            .finish_non_exhaustive()
    }
}

impl Vcs {
    /// Opens (creating when missing) the store in `store` for the project
    /// rooted at `root`.
    ///
    /// # Errors
    ///
    /// When `root` is not a folder, the store cannot be created, or an
    /// extra ignore pattern is invalid.
    pub fn open(root: &Path, store: &Path, options: Options) -> Result<Vcs, VcsError> {
        let root = std::fs::canonicalize(root)
            .map_err(|e| VcsError::io("opening the project root", root, &e))?;
        if !root.is_dir() {
            return Err(VcsError::new(
                ErrorKind::InvalidOptions,
                format!("the project root {} is not a folder", root.display()),
                "snapshots record a folder and everything under it",
                "open the project by its folder",
            ));
        }
        std::fs::create_dir_all(store)
            .map_err(|e| VcsError::io("creating the snapshot store", store, &e))?;
        let store = std::fs::canonicalize(store)
            .map_err(|e| VcsError::io("opening the snapshot store", store, &e))?;
        let objects = Objects::open(&store)?;
        let lock = open_lock(&store)?;

        let mut builder = ignore::gitignore::GitignoreBuilder::new(&root);
        for pattern in &options.ignore {
            builder.add_line(None, pattern).map_err(|e| {
                VcsError::new(
                    ErrorKind::InvalidOptions,
                    format!("the extra ignore pattern {pattern:?} is invalid: {e}"),
                    "extra ignore patterns use .gitignore syntax",
                    "fix or remove the pattern",
                )
                .with_value(pattern)
            })?;
        }
        let extra = builder.build().map_err(|e| {
            VcsError::new(
                ErrorKind::InvalidOptions,
                format!("the extra ignore patterns are invalid: {e}"),
                "extra ignore patterns use .gitignore syntax",
                "fix or remove the pattern",
            )
        })?;
        let mut exclude = Vec::new();
        for x in options
            .exclude
            .iter()
            .map(PathBuf::as_path)
            .chain([store.as_path()])
        {
            let abs = if x.is_absolute() {
                x.to_path_buf()
            } else {
                root.join(x)
            };
            let abs = std::fs::canonicalize(&abs).unwrap_or(abs);
            if let Ok(rel) = abs.strip_prefix(&root)
                && !rel.as_os_str().is_empty()
            {
                exclude.push(rel.as_os_str().as_bytes().to_vec());
            }
        }
        let mut fp = Vec::new();
        {
            let mut e = smith_codec::Encoder::new(&mut fp);
            e.array(4).array(options.ignore.len() as u64);
            for p in &options.ignore {
                e.str(p);
            }
            e.u64(options.max_file_bytes)
                .u64(options.max_snapshot_bytes);
            e.array(exclude.len() as u64);
            for x in &exclude {
                e.bytes(x);
            }
        }
        let fingerprint = ObjectId::of(ObjectKind::Blob, &fp);
        let scanner = Scanner::new(
            root,
            extra,
            exclude,
            options.max_file_bytes,
            options.max_snapshot_bytes,
            fingerprint,
        )?;
        let index = std::fs::read(store.join("index"))
            .ok()
            .and_then(|b| Index::decode(&b));
        let saved_once = index.is_some();
        let index = index.unwrap_or_default();
        Ok(Vcs {
            objects,
            scanner,
            index,
            spare: Index::default(),
            record_buf: Vec::with_capacity(128),
            unsaved: 0,
            saved_once,
            cleanup: None,
            spares_off: false,
            lock,
        })
    }

    /// The project root (canonical).
    pub fn root(&self) -> &Path {
        &self.scanner.root
    }

    /// The store folder (canonical).
    pub fn store(&self) -> &Path {
        self.objects.root()
    }

    /// Bytes of new objects written since the store was opened.
    pub fn bytes_written(&self) -> u64 {
        self.objects.written
    }

    /// Records the project as it is now.
    ///
    /// # Errors
    ///
    /// When a file cannot be read or the store cannot be written.
    pub fn snapshot(&mut self) -> Result<Snapshot, VcsError> {
        let out = self
            .scanner
            .scan(&self.index, &mut self.spare, &mut self.objects)?;
        std::mem::swap(&mut self.index, &mut self.spare);
        let record = Record {
            tree: out.tree,
            files: out.files,
            bytes: out.bytes,
            skipped: out.skipped.len() as u64,
        };
        self.record_buf.clear();
        record.encode(&mut self.record_buf);
        let id = ObjectId::of(ObjectKind::Snapshot, &self.record_buf);
        self.objects
            .put_with_id(ObjectKind::Snapshot, id, &self.record_buf)?;
        // `spare` now holds the previous scan.
        if out.changed || out.stats_changed || self.spare.snapshot != Some(id) {
            self.unsaved += 1 + out.read + out.listed;
        }
        self.index.snapshot = Some(id);
        // The saved cache is only a hint (a stale one costs rereading what
        // changed since), so it is saved when that would cost more than
        // writing it, and on `flush` and drop.
        if self.unsaved > 0
            && (self.unsaved * SAVE_RATIO >= self.index.entries.len() as u64 || !self.saved_once)
        {
            self.flush()?;
        }
        Ok(Snapshot {
            id: SnapshotId(id),
            tree: out.tree,
            files: out.files,
            bytes: out.bytes,
            files_read: out.read,
            skipped: out.skipped,
        })
    }

    /// Saves the stat cache now if it changed since it was last saved
    /// (a `Vcs` also saves it when dropped).
    ///
    /// # Errors
    ///
    /// When the cache file cannot be written.
    pub fn flush(&mut self) -> Result<(), VcsError> {
        if self.unsaved == 0 && self.saved_once {
            return Ok(());
        }
        self.save_index()?;
        self.unsaved = 0;
        self.saved_once = true;
        Ok(())
    }

    fn save_index(&mut self) -> Result<(), VcsError> {
        let mut bytes = Vec::new();
        self.index.encode(&mut bytes);
        let dest = self.objects.root().join("index");
        let tmp = self
            .objects
            .root()
            .join("tmp")
            .join(format!("index-{}", std::process::id()));
        std::fs::write(&tmp, &bytes)
            .map_err(|e| VcsError::io("writing the stat cache", &tmp, &e))?;
        std::fs::rename(&tmp, &dest)
            .map_err(|e| VcsError::io("publishing the stat cache", &dest, &e))
    }

    /// The snapshot whose id is `text`: 64 hexadecimal digits, or a unique
    /// prefix of at least 8.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidId`] when `text` is not hexadecimal of a usable
    /// length; [`ErrorKind::UnknownSnapshot`] when no snapshot (or more
    /// than one) matches.
    pub fn resolve(&mut self, text: &str) -> Result<SnapshotId, VcsError> {
        let text = text.trim();
        if !(8..=64).contains(&text.len()) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(VcsError::new(
                ErrorKind::InvalidId,
                format!("{text:?} is not a snapshot id"),
                "a snapshot id is 64 hexadecimal digits (a unique prefix of 8 or more will do)",
                "give an id a snapshot, restore, undo or redo returned",
            )
            .with_value(text));
        }
        if let Some(id) = ObjectId::from_hex(text) {
            self.check(SnapshotId(id))?;
            return Ok(SnapshotId(id));
        }
        let lower = text.to_ascii_lowercase();
        let matches: Vec<ObjectId> = self
            .objects
            .list_snapshots()?
            .into_iter()
            .filter(|id| id.to_string().starts_with(&lower))
            .collect();
        match matches.as_slice() {
            [one] => Ok(SnapshotId(*one)),
            [] => Err(unknown(text, self.objects.root())),
            _ => Err(VcsError::new(
                ErrorKind::UnknownSnapshot,
                format!(
                    "the snapshot id prefix {text:?} matches {} snapshots",
                    matches.len()
                ),
                "a prefix must name exactly one snapshot",
                "give more digits of the id",
            )
            .with_value(text)),
        }
    }

    /// Checks that snapshot `id` is stored.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownSnapshot`] when it is not.
    pub fn check(&mut self, id: SnapshotId) -> Result<(), VcsError> {
        self.record(id).map(|_| ())
    }

    fn record(&mut self, id: SnapshotId) -> Result<Record, VcsError> {
        if !self.objects.has(ObjectKind::Snapshot, &id.0) {
            return Err(unknown(&id.to_string(), self.objects.root()));
        }
        let bytes = self.objects.get(ObjectKind::Snapshot, &id.0)?;
        Record::decode(&id.0, &bytes)
    }

    /// The root tree of snapshot `id`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownSnapshot`] when it is not stored.
    pub fn tree_of(&mut self, id: SnapshotId) -> Result<ObjectId, VcsError> {
        Ok(self.record(id)?.tree)
    }

    /// The differences from snapshot `from` to snapshot `to`, with unified
    /// text diffs of text files.
    ///
    /// # Errors
    ///
    /// When an id is unknown or an object is damaged.
    pub fn diff(&mut self, from: SnapshotId, to: SnapshotId) -> Result<Diff, VcsError> {
        self.compare(from, to, true)
    }

    /// [`Vcs::diff`] and [`Vcs::changes`]: the differences between two
    /// snapshots, with unified text diffs when `text`.
    fn compare(&mut self, from: SnapshotId, to: SnapshotId, text: bool) -> Result<Diff, VcsError> {
        let raw = self.raw_changes(from, to)?;
        diff::build(&mut self.objects, from, to, raw, text)
    }

    /// The paths that differ between two snapshots' trees, with their
    /// entries on each side, in path order.
    pub(crate) fn raw_changes(
        &mut self,
        from: SnapshotId,
        to: SnapshotId,
    ) -> Result<Vec<diff::RawChange>, VcsError> {
        let a = self.record(from)?.tree;
        let b = self.record(to)?.tree;
        let mut raw = Vec::new();
        diff::tree_changes(
            &mut self.objects,
            Some(a),
            Some(b),
            &mut Vec::new(),
            &mut raw,
        )?;
        Ok(raw)
    }

    /// The changed paths from snapshot `from` to snapshot `to`, as
    /// [`Vcs::diff`] lists them but without text diffs (cheaper: no file
    /// content is read).
    ///
    /// # Errors
    ///
    /// When an id is unknown or a tree is damaged.
    pub fn changes(
        &mut self,
        from: SnapshotId,
        to: SnapshotId,
    ) -> Result<Vec<FileChange>, VcsError> {
        Ok(self.compare(from, to, false)?.changes)
    }

    /// The content of the file or symlink target at `path` in snapshot
    /// `id`; `None` when the snapshot has no file there.
    ///
    /// # Errors
    ///
    /// When the id is unknown, the path escapes the root, or an object is
    /// damaged.
    pub fn read(&mut self, id: SnapshotId, path: &Path) -> Result<Option<Vec<u8>>, VcsError> {
        let rel = self.relative(path)?;
        let mut tree = self.record(id)?.tree;
        let mut parts = rel.split(|b| *b == b'/').peekable();
        while let Some(part) = parts.next() {
            let entries = diff::load_tree(&mut self.objects, Some(tree))?;
            let Some(e) = entries.iter().find(|e| e.name == part) else {
                return Ok(None);
            };
            if parts.peek().is_none() {
                return if e.kind.is_leaf() {
                    Ok(Some(self.objects.get(ObjectKind::Blob, &e.id)?))
                } else {
                    Ok(None)
                };
            }
            if e.kind != EntryKind::Dir {
                return Ok(None);
            }
            tree = e.id;
        }
        Ok(None)
    }

    /// `path` relative to the root, checked: it stays inside the root and
    /// goes through no symlink there.
    pub(crate) fn relative(&self, path: &Path) -> Result<Vec<u8>, VcsError> {
        let root = &self.scanner.root;
        let escapes = |why: &str| {
            VcsError::new(
                ErrorKind::PathEscapes,
                format!(
                    "the path {} is outside the project root {}",
                    path.display(),
                    root.display()
                ),
                why,
                "give a path inside the project, relative to its root",
            )
            .with_value(path.display())
        };
        let rel = if path.is_absolute() {
            path.strip_prefix(root)
                .map_err(|_| escapes("snapshots record only the project's own files"))?
        } else {
            path
        };
        let mut out: Vec<u8> = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(name) => {
                    if !out.is_empty() {
                        out.push(b'/');
                    }
                    out.extend_from_slice(name.as_bytes());
                }
                Component::CurDir => {}
                _ => {
                    return Err(escapes(
                        "`..` and absolute parts lead out of the project root",
                    ));
                }
            }
        }
        if out.is_empty() {
            return Err(escapes("the path names no file under the root"));
        }
        // Every folder on the way must be a real folder.
        let mut at = root.clone();
        let parts: Vec<&[u8]> = out.split(|b| *b == b'/').collect();
        for part in &parts[..parts.len() - 1] {
            at.push(OsStr::from_bytes(part));
            if let Ok(m) = std::fs::symlink_metadata(&at)
                && m.file_type().is_symlink()
            {
                let target = std::fs::canonicalize(&at).ok();
                let outside = target.as_ref().is_none_or(|t| !t.starts_with(root));
                return Err(VcsError::new(
                    ErrorKind::SymlinkEscape,
                    format!(
                        "the path {} goes through the symlink {}{}",
                        path.display(),
                        at.display(),
                        if outside { ", which leads out of the project root" } else { "" }
                    ),
                    "snapshots record symlinks as links and never write through them",
                    "give the path the link points to, inside the project, or restore the link itself",
                )
                .with_value(path.display()));
            }
        }
        Ok(out)
    }

    /// Removes every snapshot not in `live` and every tree and blob that
    /// neither they nor the stat cache reach.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Busy`] (nothing removed) while another `Vcs`, in this
    /// process or another, has the store open: it may be about to name a
    /// snapshot no live id covers yet. [`ErrorKind::UnknownSnapshot`]
    /// (before anything is removed) when a live id is not stored; I/O
    /// errors while removing.
    pub fn gc(&mut self, live: &[SnapshotId]) -> Result<GcReport, VcsError> {
        if !flock(&self.lock, libc::LOCK_EX | libc::LOCK_NB) {
            // Converting the lock may have dropped the shared one: take it
            // again (it waits only for another collection).
            flock(&self.lock, libc::LOCK_SH);
            return Err(VcsError::new(
                ErrorKind::Busy,
                format!(
                    "the snapshot store {} is open in another smith (a session working in {}), so nothing was collected",
                    self.objects.root().display(),
                    self.scanner.root.display()
                ),
                "a running smith may be about to record a snapshot no session names yet, and collecting now could remove it",
                "collect again when no smith works in that project: the next `smith session delete` or `smith session prune` of one of its sessions does it",
            )
            .with_value(self.objects.root().display()));
        }
        let report = self.gc_locked(live);
        flock(&self.lock, libc::LOCK_SH);
        report
    }

    fn gc_locked(&mut self, live: &[SnapshotId]) -> Result<GcReport, VcsError> {
        let mut trees = Vec::new();
        for id in live {
            trees.push(self.record(*id)?.tree);
        }
        let mut marked = std::collections::HashSet::new();
        for e in &self.index.entries {
            if !e.kind.is_skipped() {
                marked.insert(e.id);
            }
        }
        while let Some(t) = trees.pop() {
            // A marked tree's whole subtree is marked already: it came
            // from the stat cache (which holds every descendant) or was
            // walked before.
            if !marked.insert(t) {
                continue;
            }
            for e in diff::load_tree(&mut self.objects, Some(t))? {
                match e.kind {
                    EntryKind::Dir => trees.push(e.id),
                    k if k.is_leaf() => {
                        marked.insert(e.id);
                    }
                    _ => {}
                }
            }
        }
        let mut report = GcReport::default();
        let keep: std::collections::HashSet<ObjectId> = live.iter().map(|s| s.0).collect();
        for id in self.objects.list_snapshots()? {
            if !keep.contains(&id) {
                report.bytes_freed += self.objects.remove(ObjectKind::Snapshot, &id)?;
                report.snapshots_removed += 1;
            }
        }
        for (id, _) in self.objects.list_objects()? {
            if marked.contains(&id) {
                report.objects_kept += 1;
            } else {
                report.bytes_freed += self.objects.remove(ObjectKind::Blob, &id)?;
                report.objects_removed += 1;
            }
        }
        Ok(report)
    }
}

fn unknown(text: &str, store: &Path) -> VcsError {
    VcsError::new(
        ErrorKind::UnknownSnapshot,
        format!("no snapshot {text} in the store {}", store.display()),
        "only stored snapshots can be compared, read or restored",
        "give an id a snapshot, restore, undo or redo returned in this project",
    )
    .with_value(text)
}

/// Opens `STORE/lock` and takes it shared (waiting only while another
/// `Vcs` collects the store).
fn open_lock(store: &Path) -> Result<std::fs::File, VcsError> {
    let path = store.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| VcsError::io("opening the store's lock", &path, &e))?;
    flock(&file, libc::LOCK_SH);
    Ok(file)
}

/// `flock(2)` on `file`; whether the lock was taken. A file system without
/// locks counts as taken: the lock guards collection, not the data.
fn flock(file: &std::fs::File, op: libc::c_int) -> bool {
    use std::os::fd::AsRawFd as _;
    loop {
        // SAFETY: a plain syscall on a descriptor `file` owns.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return true;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return false,
            _ => return true,
        }
    }
}
