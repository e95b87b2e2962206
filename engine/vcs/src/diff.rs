//! Comparing two trees, entry by entry, skipping equal subtrees by id, and
//! rendering the differences as unified text.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;

use crate::error::VcsError;
use crate::id::{ObjectId, ObjectKind, SnapshotId};
use crate::objects::Objects;
use crate::tree::{EntryKind, TreeEntry, decode_tree};

/// One side of a change: what a path was or became.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// File, executable, symlink, folder or a skipped file.
    pub kind: EntryKind,
    /// The blob (file content, link target) or tree id; zero when skipped.
    pub id: ObjectId,
    /// The size in bytes (0 for a folder).
    pub size: u64,
}

impl Side {
    fn of(e: &TreeEntry) -> Side {
        Side {
            kind: e.kind,
            id: e.id,
            size: e.size,
        }
    }
}

/// A difference at one path, folders included.
#[derive(Clone, Debug)]
pub(crate) struct RawChange {
    pub path: Vec<u8>,
    pub old: Option<Side>,
    pub new: Option<Side>,
}

/// Loads a tree's entries (none for `None`).
pub(crate) fn load_tree(
    objects: &mut Objects,
    id: Option<ObjectId>,
) -> Result<Vec<TreeEntry>, VcsError> {
    match id {
        None => Ok(Vec::new()),
        Some(id) => {
            let bytes = objects.get(ObjectKind::Tree, &id)?;
            decode_tree(&id, &bytes)
        }
    }
}

/// Appends to `out`, in path order, every path where tree `a` and tree `b`
/// differ (`None` is an empty tree). A folder that appears or disappears is
/// listed before its contents.
pub(crate) fn tree_changes(
    objects: &mut Objects,
    a: Option<ObjectId>,
    b: Option<ObjectId>,
    prefix: &mut Vec<u8>,
    out: &mut Vec<RawChange>,
) -> Result<(), VcsError> {
    if a == b {
        return Ok(());
    }
    let left = load_tree(objects, a)?;
    let right = load_tree(objects, b)?;
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let order = match (left.get(i), right.get(j)) {
            (Some(l), Some(r)) => l.name.cmp(&r.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let (l, r) = match order {
            std::cmp::Ordering::Less => {
                i += 1;
                (Some(&left[i - 1]), None)
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                (None, Some(&right[j - 1]))
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
                (Some(&left[i - 1]), Some(&right[j - 1]))
            }
        };
        let name = l.or(r).map(|e| e.name.as_slice()).unwrap_or_default();
        let len = prefix.len();
        if len > 0 {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(name);
        let ldir = l.filter(|e| e.kind == EntryKind::Dir).map(|e| e.id);
        let rdir = r.filter(|e| e.kind == EntryKind::Dir).map(|e| e.id);
        let same = match (l, r) {
            (Some(l), Some(r)) => l.kind == r.kind && l.id == r.id && l.size == r.size,
            _ => false,
        };
        let both_dirs = ldir.is_some() && rdir.is_some();
        if !same && !both_dirs {
            out.push(RawChange {
                path: prefix.clone(),
                old: l.map(Side::of),
                new: r.map(Side::of),
            });
        }
        if !same && (ldir.is_some() || rdir.is_some()) {
            tree_changes(objects, ldir, rdir, prefix, out)?;
        }
        prefix.truncate(len);
    }
    Ok(())
}

/// How a path changed between two snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// It exists only in the newer snapshot.
    Added,
    /// It exists only in the older snapshot.
    Removed,
    /// Its content (or a symlink's target, or a skipped file's size) changed.
    Modified,
    /// Only its executable bit changed.
    ModeChanged,
    /// It became another kind of thing (file, symlink, folder, skipped file).
    TypeChanged,
}

/// One changed path of a [`Diff`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The path relative to the project root.
    pub path: PathBuf,
    /// How it changed.
    pub kind: ChangeKind,
    /// What it was, if it existed.
    pub old: Option<Side>,
    /// What it became, if it exists.
    pub new: Option<Side>,
    /// Whether either side's content is not text (a NUL byte, or not UTF-8).
    pub binary: bool,
    /// The unified text diff (`--- a/…`, `+++ b/…`, hunks with 3 lines of
    /// context) of a text file or a symlink's target; `None` for binary
    /// content, skipped files, folders and mode-only changes.
    pub patch: Option<String>,
}

/// The differences between two snapshots, in path order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    /// The older snapshot.
    pub from: SnapshotId,
    /// The newer snapshot.
    pub to: SnapshotId,
    /// Every changed file, symlink and skipped file; a folder only when it
    /// replaced or was replaced by something that is not a folder.
    pub changes: Vec<FileChange>,
}

impl Diff {
    /// The whole diff as text: per change a `diff --smith a/P b/P` line,
    /// `old mode`/`new mode`, `new file`/`deleted file` or `type` lines, then
    /// the patch or `Binary files a/P and b/P differ`.
    pub fn unified(&self) -> String {
        let mut s = String::new();
        for c in &self.changes {
            let p = c.path.display();
            let _ = writeln!(s, "diff --smith a/{p} b/{p}");
            let mode = |side: &Option<Side>| side.map(|x| mode_name(x.kind));
            match (c.kind, mode(&c.old), mode(&c.new)) {
                (ChangeKind::Added, _, Some(m)) => {
                    let _ = writeln!(s, "new file {m}");
                }
                (ChangeKind::Removed, Some(m), _) => {
                    let _ = writeln!(s, "deleted file {m}");
                }
                (_, Some(a), Some(b)) if a != b => {
                    let _ = writeln!(s, "old {a}\nnew {b}");
                }
                _ => {}
            }
            if let Some(patch) = &c.patch {
                s.push_str(patch);
                if !patch.ends_with('\n') {
                    s.push('\n');
                }
            } else if c.binary {
                let _ = writeln!(s, "Binary files a/{p} and b/{p} differ");
            }
        }
        s
    }
}

fn mode_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "mode 100644",
        EntryKind::Executable => "mode 100755",
        EntryKind::Symlink => "mode 120000 (symlink)",
        EntryKind::Dir => "mode 040000 (folder)",
        EntryKind::SkippedFileCap => "skipped (over the per-file size cap)",
        EntryKind::SkippedSnapshotCap => "skipped (over the per-snapshot size cap)",
        EntryKind::SkippedSpecial => "skipped (not a file, folder or symlink)",
    }
}

fn classify(old: Option<Side>, new: Option<Side>) -> ChangeKind {
    match (old, new) {
        (None, _) => ChangeKind::Added,
        (_, None) => ChangeKind::Removed,
        (Some(a), Some(b)) => {
            let file = |k| matches!(k, EntryKind::File | EntryKind::Executable);
            if a.kind == b.kind || (file(a.kind) && file(b.kind)) {
                if a.id == b.id && a.size == b.size {
                    ChangeKind::ModeChanged
                } else {
                    ChangeKind::Modified
                }
            } else {
                ChangeKind::TypeChanged
            }
        }
    }
}

/// The content as text: `""` when absent, `None` when binary.
fn text(v: &Option<Vec<u8>>) -> Option<&str> {
    match v {
        None => Some(""),
        Some(v) if v.contains(&0) => None,
        Some(v) => std::str::from_utf8(v).ok(),
    }
}

/// Builds the public diff from raw changes, with patches when `patches`.
pub(crate) fn build(
    objects: &mut Objects,
    from: SnapshotId,
    to: SnapshotId,
    raw: Vec<RawChange>,
    patches: bool,
) -> Result<Diff, VcsError> {
    let mut changes = Vec::with_capacity(raw.len());
    for r in raw {
        let is_dir = |s: Option<Side>| s.is_none_or(|s| s.kind == EntryKind::Dir);
        if is_dir(r.old) && is_dir(r.new) {
            continue;
        }
        let kind = classify(r.old, r.new);
        let path = PathBuf::from(OsStr::from_bytes(&r.path));
        let (mut binary, mut patch) = (false, None);
        if patches && kind != ChangeKind::ModeChanged {
            let content = |objects: &mut Objects,
                           s: Option<Side>|
             -> Result<Option<Vec<u8>>, VcsError> {
                match s {
                    Some(s) if s.kind.is_leaf() => Ok(Some(objects.get(ObjectKind::Blob, &s.id)?)),
                    _ => Ok(None),
                }
            };
            let a = content(objects, r.old)?;
            let b = content(objects, r.new)?;
            if a.is_some() || b.is_some() {
                match (text(&a), text(&b)) {
                    (Some(x), Some(y)) => {
                        let p = path.display();
                        let old_name = if a.is_some() {
                            format!("a/{p}")
                        } else {
                            "/dev/null".into()
                        };
                        let new_name = if b.is_some() {
                            format!("b/{p}")
                        } else {
                            "/dev/null".into()
                        };
                        let d = similar::TextDiff::from_lines(x, y);
                        let body = d
                            .unified_diff()
                            .context_radius(3)
                            .header(&old_name, &new_name)
                            .to_string();
                        patch = Some(body);
                    }
                    _ => binary = true,
                }
            }
        }
        changes.push(FileChange {
            path,
            kind,
            old: r.old,
            new: r.new,
            binary,
            patch,
        });
    }
    Ok(Diff { from, to, changes })
}
