//! Trees and snapshot records as canonical CBOR.
//!
//! A tree is one directory: an array of entries sorted by name bytes, each
//! `[name: bytes, kind: uint, id: bytes(32) or bytes(0), size: uint]`.
//! A snapshot record is `[1, tree: bytes(32), files: uint, bytes: uint,
//! skipped: uint]`.

use smith_codec::{Decoder, Encoder};

use crate::error::VcsError;
use crate::id::ObjectId;

/// What a tree entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file without the owner's executable bit.
    File,
    /// A regular file with the owner's executable bit.
    Executable,
    /// A symbolic link; its blob holds the link's target.
    Symlink,
    /// A directory; its id is a tree.
    Dir,
    /// A regular file larger than the per-file cap: not stored.
    SkippedFileCap,
    /// A regular file that did not fit under the per-snapshot cap: not stored.
    SkippedSnapshotCap,
    /// Neither file, directory nor symlink (a socket, a fifo, a device): not stored.
    SkippedSpecial,
}

impl EntryKind {
    /// The code written in trees.
    pub fn code(self) -> u64 {
        match self {
            EntryKind::File => 0,
            EntryKind::Executable => 1,
            EntryKind::Symlink => 2,
            EntryKind::Dir => 3,
            EntryKind::SkippedFileCap => 4,
            EntryKind::SkippedSnapshotCap => 5,
            EntryKind::SkippedSpecial => 6,
        }
    }

    /// The kind of a code.
    pub fn from_code(code: u64) -> Option<EntryKind> {
        Some(match code {
            0 => EntryKind::File,
            1 => EntryKind::Executable,
            2 => EntryKind::Symlink,
            3 => EntryKind::Dir,
            4 => EntryKind::SkippedFileCap,
            5 => EntryKind::SkippedSnapshotCap,
            6 => EntryKind::SkippedSpecial,
            _ => return None,
        })
    }

    /// Whether the entry's content is not stored.
    pub fn is_skipped(self) -> bool {
        matches!(
            self,
            EntryKind::SkippedFileCap | EntryKind::SkippedSnapshotCap | EntryKind::SkippedSpecial
        )
    }

    /// Whether the entry has a blob (a file or a symlink).
    pub fn is_leaf(self) -> bool {
        matches!(
            self,
            EntryKind::File | EntryKind::Executable | EntryKind::Symlink
        )
    }
}

/// One decoded tree entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreeEntry {
    pub name: Vec<u8>,
    pub kind: EntryKind,
    pub id: ObjectId,
    pub size: u64,
}

/// Appends one entry to a tree being encoded.
pub(crate) fn encode_entry(
    e: &mut Encoder<'_>,
    name: &[u8],
    kind: EntryKind,
    id: &ObjectId,
    size: u64,
) {
    e.array(4).bytes(name).u64(kind.code());
    if kind.is_skipped() {
        e.bytes(&[]);
    } else {
        e.bytes(&id.0);
    }
    e.u64(size);
}

/// Whether `name` may be a tree entry's name.
pub(crate) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

/// Decodes and checks a tree.
pub(crate) fn decode_tree(id: &ObjectId, bytes: &[u8]) -> Result<Vec<TreeEntry>, VcsError> {
    let bad = |why: String| VcsError::corrupt(format!("the tree object {id} is malformed: {why}"));
    let mut d = Decoder::strict(bytes);
    let n = d.array().map_err(|e| bad(e.to_string()))?;
    let mut out: Vec<TreeEntry> = Vec::with_capacity(n.min(1 << 20) as usize);
    for _ in 0..n {
        let len = d.array().map_err(|e| bad(e.to_string()))?;
        if len != 4 {
            return Err(bad(format!("an entry has {len} fields, not 4")));
        }
        let name = d.bytes().map_err(|e| bad(e.to_string()))?;
        let code = d.u64().map_err(|e| bad(e.to_string()))?;
        let kind = EntryKind::from_code(code).ok_or_else(|| bad(format!("unknown kind {code}")))?;
        let raw_id = d.bytes().map_err(|e| bad(e.to_string()))?;
        let size = d.u64().map_err(|e| bad(e.to_string()))?;
        if !valid_name(name) {
            return Err(bad(format!(
                "invalid name {:?}",
                String::from_utf8_lossy(name)
            )));
        }
        if let Some(prev) = out.last()
            && prev.name.as_slice() >= name
        {
            return Err(bad("names are not in strictly ascending order".into()));
        }
        let id = if kind.is_skipped() {
            if !raw_id.is_empty() {
                return Err(bad("a skipped entry has an id".into()));
            }
            ObjectId::default()
        } else {
            let arr: [u8; 32] = raw_id
                .try_into()
                .map_err(|_| bad(format!("an id has {} bytes, not 32", raw_id.len())))?;
            ObjectId(arr)
        };
        out.push(TreeEntry {
            name: name.to_vec(),
            kind,
            id,
            size,
        });
    }
    if !d.is_at_end() {
        return Err(bad("bytes follow the tree".into()));
    }
    Ok(out)
}

/// A decoded snapshot record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub tree: ObjectId,
    pub files: u64,
    pub bytes: u64,
    pub skipped: u64,
}

impl Record {
    pub(crate) fn encode(&self, buf: &mut Vec<u8>) {
        let mut e = Encoder::new(buf);
        e.array(5)
            .u64(1)
            .bytes(&self.tree.0)
            .u64(self.files)
            .u64(self.bytes)
            .u64(self.skipped);
    }

    pub(crate) fn decode(id: &ObjectId, bytes: &[u8]) -> Result<Record, VcsError> {
        let bad = |why: String| {
            VcsError::corrupt(format!("the snapshot record {id} is malformed: {why}"))
        };
        let mut d = Decoder::strict(bytes);
        let n = d.array().map_err(|e| bad(e.to_string()))?;
        let version = d.u64().map_err(|e| bad(e.to_string()))?;
        if n != 5 || version != 1 {
            return Err(bad(format!(
                "version {version} with {n} fields; this build reads version 1 with 5"
            )));
        }
        let tree: [u8; 32] = d
            .bytes()
            .map_err(|e| bad(e.to_string()))?
            .try_into()
            .map_err(|_| bad("the tree id is not 32 bytes".into()))?;
        let files = d.u64().map_err(|e| bad(e.to_string()))?;
        let bytes_total = d.u64().map_err(|e| bad(e.to_string()))?;
        let skipped = d.u64().map_err(|e| bad(e.to_string()))?;
        Ok(Record {
            tree: ObjectId(tree),
            files,
            bytes: bytes_total,
            skipped,
        })
    }
}
