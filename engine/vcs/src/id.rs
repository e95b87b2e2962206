//! Object and snapshot ids: SHA-256 over a one-byte domain tag and the
//! object's bytes, written as 64 lowercase hexadecimal digits.

use std::fmt;

use sha2::{Digest as _, Sha256};

/// What an object is; its tag byte is hashed in front of the content, so
/// a blob and a tree with equal bytes have different ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// File content or a symlink's target.
    Blob = 1,
    /// One directory: its entries, as canonical CBOR.
    Tree = 2,
    /// A snapshot record, as canonical CBOR.
    Snapshot = 3,
}

/// The id of a stored object: SHA-256 of its kind tag and its bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectId(pub [u8; 32]);

impl ObjectId {
    /// The id of `data` stored as `kind`.
    pub fn of(kind: ObjectKind, data: &[u8]) -> ObjectId {
        let mut h = Sha256::new();
        h.update([kind as u8]);
        h.update(data);
        ObjectId(h.finalize().into())
    }

    /// The id as 64 lowercase hexadecimal digits, without allocating.
    pub fn hex(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 15)];
        }
        out
    }

    /// Parses 64 hexadecimal digits (either case).
    pub fn from_hex(text: &str) -> Option<ObjectId> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Some(ObjectId(out))
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        // The digits are ASCII.
        f.write_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

/// The id of a snapshot: the [`ObjectId`] of its record. Equal trees with
/// equal exceedances have equal snapshot ids.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SnapshotId(pub ObjectId);

impl fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for SnapshotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SnapshotId({})", self.0)
    }
}
