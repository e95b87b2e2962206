//! The search index: one sidecar file per session in smith's cache
//! directory that lets a search skip the entries that cannot hold the
//! query (docs/session-format.md §14).
//!
//! The records of a session (all branches, in append order) are cut into
//! groups of about [`GROUP_BYTES`] of content. Each group keeps a blocked
//! bloom filter of the ASCII-lowercased byte trigrams of the text a search
//! looks through in it: every searched entry's content bytes and, for a
//! tool result that refers to its effect's output, that output's text. A
//! query is lowercased the same way; a group missing any of its trigrams
//! cannot hold it (in either case, so one filter serves smart case) and is
//! neither decompressed nor scanned. A filter can say "maybe" wrongly (the
//! group is then scanned and nothing found), never "no" wrongly. Queries
//! shorter than three bytes have no trigram and scan every entry.
//!
//! Session files are only appended to, so an index covers a prefix of its
//! file: the bytes and records it covers, the file's identity (device and
//! inode), its length and modification time when indexed, and checksums
//! of the covered prefix's first and last 4 KiB. A later search indexes
//! only the frames appended since; a file that shrank below the covered
//! prefix, was replaced, or whose checked bytes differ, and an index that
//! is corrupt, of another version or of another session, is rebuilt from
//! the start, never trusted. Writes go to a temporary file renamed over
//! the index, so a concurrent search reads the old or the new one whole.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::format::SessionId;

/// The index file's first eight bytes.
pub const MAGIC: [u8; 8] = *b"SMSRCHIX";
/// The index format's version; any other is rebuilt.
pub const VERSION: u32 = 1;
/// Bloom filter bits per distinct trigram of a group.
pub const BITS_PER_TRIGRAM: u32 = 8;
/// A group is closed once its records hold this many content bytes.
pub const GROUP_BYTES: u64 = 64 * 1024;
/// The bytes at each end of the covered prefix that are checksummed.
pub const CHECK_BYTES: u64 = 4096;
/// The index file's fixed header length.
pub const HEADER_LEN: usize = 96;
/// Each group's fixed part: first record, end record, searched entries,
/// content bytes, filter words (five `u32`).
pub const GROUP_HEAD_LEN: usize = 20;
/// The index file's name suffix (after the session id in hex).
pub const SUFFIX: &str = ".trigrams";

/// The ASCII-lowercased trigrams of some text, gathered exactly (a bitmap
/// of all 2^24 trigrams and the list of those set), then turned into one
/// group's bloom filter. Reused from group to group.
#[derive(Debug)]
pub struct TrigramSet {
    bits: Vec<u64>,
    list: Vec<u32>,
}

impl Default for TrigramSet {
    fn default() -> Self {
        Self::new()
    }
}

impl TrigramSet {
    /// An empty set (2 MiB of bitmap).
    pub fn new() -> Self {
        Self {
            bits: vec![0; (1 << 24) / 64],
            list: Vec::new(),
        }
    }

    /// Adds the trigrams of `bytes` (ASCII-lowercased).
    pub fn add(&mut self, bytes: &[u8]) {
        let [a, b, rest @ ..] = bytes else {
            return;
        };
        let mut t = (u32::from(a.to_ascii_lowercase()) << 8) | u32::from(b.to_ascii_lowercase());
        // The bitmap has 2^18 words and `t >> 6` < 2^18: as an array, no
        // index is checked.
        let Ok(bits) = <&mut [u64; 1 << 18]>::try_from(self.bits.as_mut_slice()) else {
            return;
        };
        for &c in rest {
            t = ((t << 8) | u32::from(c.to_ascii_lowercase())) & 0x00ff_ffff;
            let (w, m) = ((t >> 6) as usize, 1u64 << (t & 63));
            let word = &mut bits[w];
            if *word & m == 0 {
                *word |= m;
                self.list.push(t);
            }
        }
    }

    /// Distinct trigrams added since the last [`TrigramSet::take_filter`].
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether nothing was added since the last filter.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The bloom filter of the trigrams added (emptying the set).
    pub fn take_filter(&mut self) -> Vec<u64> {
        let words = filter_words(self.list.len());
        let mut filter = vec![0u64; words];
        for &t in &self.list {
            let (w, m) = probe(t, words);
            filter[w] |= m;
            self.bits[(t >> 6) as usize] = 0;
        }
        self.list.clear();
        filter
    }
}

/// Filter words for `n` distinct trigrams.
fn filter_words(n: usize) -> usize {
    (n * BITS_PER_TRIGRAM as usize).div_ceil(64).max(1)
}

/// A trigram's word in a filter of `words` words and its three bits there.
fn probe(t: u32, words: usize) -> (usize, u64) {
    // murmur3's 64-bit finalizer: every input bit moves every output bit.
    let mut h = u64::from(t) ^ 0x5ea7_c400_0000_0000;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    let w = (((h >> 32) * words as u64) >> 32) as usize;
    let m = (1u64 << (h & 63)) | (1u64 << ((h >> 6) & 63)) | (1u64 << ((h >> 12) & 63));
    (w, m)
}

/// The distinct ASCII-lowercased trigrams of a query; empty for one
/// shorter than three bytes (which the index cannot narrow).
pub fn query_trigrams(text: &str) -> Vec<u32> {
    let lower = text.as_bytes().to_ascii_lowercase();
    let mut out: Vec<u32> = lower
        .windows(3)
        .map(|w| (u32::from(w[0]) << 16) | (u32::from(w[1]) << 8) | u32::from(w[2]))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether a filter may hold every trigram of `trigrams`.
pub fn may_hold(filter: &[u64], trigrams: &[u32]) -> bool {
    trigrams.iter().all(|&t| {
        let (w, m) = probe(t, filter.len());
        filter[w] & m == m
    })
}

/// One group of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Its first record (position in [`crate::Session::records`]).
    pub first: u32,
    /// One past its last record.
    pub end: u32,
    /// The searched entries among its records.
    pub entries: u32,
    /// Content bytes of its records (the measure groups are cut by).
    pub bytes: u32,
    /// Its bloom filter.
    pub filter: Vec<u64>,
}

/// What an index says about its session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Covered {
    /// The session's id (from the file's header).
    pub session: SessionId,
    /// The file's identity (device, inode); zeros where unknown.
    pub file: (u64, u64),
    /// The file's length when it was indexed.
    pub seen_len: u64,
    /// Its modification time then (nanoseconds since the Unix epoch).
    pub seen_mtime_ns: u64,
    /// The end of the last complete frame indexed.
    pub bytes: u64,
    /// The records indexed.
    pub records: u64,
    /// crc32c of the covered prefix's first [`CHECK_BYTES`].
    pub head_check: u32,
    /// crc32c of its last [`CHECK_BYTES`].
    pub tail_check: u32,
}

/// A session's index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Index {
    /// What it covers.
    pub covered: Covered,
    /// Its groups, in record order, covering records `0..covered.records`.
    pub groups: Vec<Group>,
}

/// A session file as seen before it is read: identity, length, time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileState {
    /// Device and inode (zeros where unknown).
    pub file: (u64, u64),
    /// Length.
    pub len: u64,
    /// Modification time (nanoseconds since the Unix epoch; 0 unknown).
    pub mtime_ns: u64,
}

impl FileState {
    /// The state of the file `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            file: crate::session::file_id(meta).unwrap_or((0, 0)),
            len: meta.len(),
            mtime_ns: meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        }
    }
}

/// How far an index can be trusted for a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// It covers the file as it is: nothing to load to rule groups out.
    Current,
    /// It covers a prefix of the file; the frames after it are new.
    Prefix,
    /// It does not describe this file: rebuild.
    Rebuild,
}

/// The crc32c of `file`'s bytes `at..at + len`; `None` when they cannot
/// be read.
fn check_of(file: &mut std::fs::File, at: u64, len: u64) -> Option<u32> {
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    file.seek(SeekFrom::Start(at)).ok()?;
    file.read_exact(&mut buf).ok()?;
    Some(crate::crc::crc32c(&buf))
}

/// The head and tail checks of the first `covered` bytes of `file`.
pub fn checks(file: &mut std::fs::File, covered: u64) -> Option<(u32, u32)> {
    let n = covered.min(CHECK_BYTES);
    Some((check_of(file, 0, n)?, check_of(file, covered - n, n)?))
}

impl Index {
    /// How far this index describes session `id`'s file `path`, seen as
    /// `state` just before.
    pub fn fit(&self, id: SessionId, path: &Path, state: &FileState) -> Fit {
        let c = &self.covered;
        if c.session != id || c.file != state.file || state.len < c.bytes {
            return Fit::Rebuild;
        }
        let Ok(mut file) = std::fs::File::open(path) else {
            return Fit::Rebuild;
        };
        if checks(&mut file, c.bytes) != Some((c.head_check, c.tail_check)) {
            return Fit::Rebuild;
        }
        if state.len == c.seen_len && state.mtime_ns == c.seen_mtime_ns {
            Fit::Current
        } else {
            Fit::Prefix
        }
    }

    /// The index in its file format (docs/session-format.md §14).
    pub fn encode(&self) -> Vec<u8> {
        let c = &self.covered;
        let words: usize = self.groups.iter().map(|g| g.filter.len()).sum();
        let mut out =
            Vec::with_capacity(HEADER_LEN + self.groups.len() * GROUP_HEAD_LEN + words * 8 + 4);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&BITS_PER_TRIGRAM.to_le_bytes());
        out.extend_from_slice(&c.session.0);
        for v in [
            c.file.0,
            c.file.1,
            c.seen_len,
            c.seen_mtime_ns,
            c.bytes,
            c.records,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let groups = u32::try_from(self.groups.len()).unwrap_or(u32::MAX);
        for v in [c.head_check, c.tail_check, groups, 0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        debug_assert_eq!(out.len(), HEADER_LEN);
        for g in &self.groups {
            let n = u32::try_from(g.filter.len()).unwrap_or(u32::MAX);
            for v in [g.first, g.end, g.entries, g.bytes, n] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for w in &g.filter {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        let crc = crate::crc::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads an index; `None` for anything but a whole, consistent index of
    /// this version (which is then rebuilt).
    pub fn decode(bytes: &[u8]) -> Option<Index> {
        let (body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
        if crate::crc::crc32c(body) != u32::from_le_bytes(crc.try_into().ok()?) {
            return None;
        }
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?))
        };
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?))
        };
        if body.get(..8)? != MAGIC || u32_at(8)? != VERSION || u32_at(12)? != BITS_PER_TRIGRAM {
            return None;
        }
        let covered = Covered {
            session: SessionId(body.get(16..32)?.try_into().ok()?),
            file: (u64_at(32)?, u64_at(40)?),
            seen_len: u64_at(48)?,
            seen_mtime_ns: u64_at(56)?,
            bytes: u64_at(64)?,
            records: u64_at(72)?,
            head_check: u32_at(80)?,
            tail_check: u32_at(84)?,
        };
        let count = u32_at(88)? as usize;
        let mut groups = Vec::with_capacity(count.min(body.len() / GROUP_HEAD_LEN));
        let mut at = HEADER_LEN;
        let mut next = 0u32;
        for _ in 0..count {
            let (first, end, entries, bytes, words) = (
                u32_at(at)?,
                u32_at(at + 4)?,
                u32_at(at + 8)?,
                u32_at(at + 12)?,
                u32_at(at + 16)? as usize,
            );
            at += GROUP_HEAD_LEN;
            if first != next || end <= first || entries > end - first || words == 0 {
                return None;
            }
            let raw = body.get(at..at.checked_add(words.checked_mul(8)?)?)?;
            at += raw.len();
            let filter = raw
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
                .collect();
            groups.push(Group {
                first,
                end,
                entries,
                bytes,
                filter,
            });
            next = end;
        }
        if at != body.len() || u64::from(next) != covered.records {
            return None;
        }
        Some(Index { covered, groups })
    }
}

/// Where session `id`'s index lives in `dir`.
pub fn path_in(dir: &Path, id: SessionId) -> PathBuf {
    dir.join(format!("{}{SUFFIX}", id.to_hex()))
}

/// Reads session `id`'s index from `dir`; `None` when there is none or it
/// is not a whole index of this version.
pub fn read(dir: &Path, id: SessionId) -> Option<Index> {
    let bytes = std::fs::read(path_in(dir, id)).ok()?;
    Index::decode(&bytes)
}

/// Writes `index` as session `id`'s index in `dir` (created if missing):
/// a temporary file in `dir` renamed over the index.
///
/// # Errors
/// The I/O error, with the path it concerns.
pub fn write(dir: &Path, index: &Index) -> std::result::Result<(), (PathBuf, std::io::Error)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir).map_err(|e| (dir.to_path_buf(), e))?;
    let path = path_in(dir, index.covered.session);
    let tmp = dir.join(format!(
        ".{}{SUFFIX}.{}-{}.tmp",
        index.covered.session.to_hex(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&index.encode()))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err((path, e));
    }
    Ok(())
}

/// Removes from `dir` the index files of sessions not in `keep` (the
/// store's listing: sessions deleted since they were indexed); returns how
/// many were removed. Best effort: a file that cannot be removed stays,
/// and costs only its room.
pub fn prune(dir: &Path, keep: &[SessionId]) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let keep: std::collections::HashSet<SessionId> = keep.iter().copied().collect();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_suffix(SUFFIX))
            .and_then(SessionId::from_hex)
        else {
            continue;
        };
        if !keep.contains(&id) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_holds_every_trigram_added_and_rules_most_others_out() {
        let mut set = TrigramSet::new();
        set.add(b"The Quick brown fox");
        let filter = set.take_filter();
        assert!(set.is_empty());
        for q in [
            "the",
            "quick",
            "QUICK BROWN",
            "n fox",
            "the quick brown fox",
        ] {
            assert!(may_hold(&filter, &query_trigrams(q)), "{q}");
        }
        // The bitmap is cleared: a second group starts empty.
        set.add(b"zzz");
        assert_eq!(set.len(), 1);
        let second = set.take_filter();
        assert!(!may_hold(&second, &query_trigrams("the")));
        // Random trigrams absent from a 2,000-trigram group: about 1 in 20
        // passes at 8 bits per trigram and 3 bits a probe.
        let mut set = TrigramSet::new();
        let text: Vec<u8> = (0u32..2002)
            .flat_map(|i| (i * 7919).to_le_bytes())
            .collect();
        set.add(&text);
        let n = set.len();
        let filter = set.take_filter();
        assert_eq!(filter.len(), filter_words(n));
        let mut passed = 0;
        for t in 0u32..10_000 {
            let t = 0x00e0_0000 | t;
            passed += u32::from(may_hold(&filter, &[t]));
        }
        assert!(passed < 1_000, "{passed} of 10000 passed");
    }

    #[test]
    fn an_index_reads_back_and_any_damage_is_refused() {
        let index = Index {
            covered: Covered {
                session: SessionId([7; 16]),
                file: (1, 2),
                seen_len: 900,
                seen_mtime_ns: 5,
                bytes: 880,
                records: 5,
                head_check: 11,
                tail_check: 12,
            },
            groups: vec![
                Group {
                    first: 0,
                    end: 3,
                    entries: 2,
                    bytes: 70_000,
                    filter: vec![1, 2],
                },
                Group {
                    first: 3,
                    end: 5,
                    entries: 2,
                    bytes: 10,
                    filter: vec![u64::MAX],
                },
            ],
        };
        let bytes = index.encode();
        assert_eq!(bytes.len(), HEADER_LEN + 2 * GROUP_HEAD_LEN + 3 * 8 + 4);
        assert_eq!(Index::decode(&bytes), Some(index.clone()));
        // Every flipped byte and every cut is refused.
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert_eq!(Index::decode(&bad), None, "byte {at}");
            assert_eq!(Index::decode(&bytes[..at]), None, "cut at {at}");
        }
        // A consistent file whose groups do not cover the records.
        let mut short = index.clone();
        short.covered.records = 6;
        assert_eq!(Index::decode(&short.encode()), None);
        let mut gap = index;
        gap.groups[1].first = 4;
        assert_eq!(Index::decode(&gap.encode()), None);
    }
}
