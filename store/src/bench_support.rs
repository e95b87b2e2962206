//! Fixtures for benchmarks and `smith bench`: representative entries and
//! sessions of a requested size, written straight to disk.
//!
//! The measured operations are the public API itself:
//!
//! * append — [`encode_entries`] (encoding 1,000 entries into frames, the
//!   spec's 5 ms target) and [`crate::Store::append`] (durable append);
//! * open to "selected leaf ready" — [`crate::SessionFile::open`] then
//!   [`crate::SessionFile::recent`];
//! * full load — [`crate::SessionFile::load`], compared with
//!   [`sequential_read`] of the same file;
//! * fork — [`crate::Session::fork`].

use std::io::{Read, Write};
use std::path::Path;

use crate::compress::Compressor;
use crate::entry::EntryKind;
use crate::error::{Result, StoreError};
use crate::format::{self, EntryHead, KIND_ENTRY, SessionId};

/// A deterministic pseudo-random generator (xorshift), so fixtures are
/// identical across runs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeds the generator.
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

const WORDS: [&str; 24] = [
    "the", "function", "returns", "error", "file", "session", "let", "mut", "self", "value",
    "match", "Some", "None", "fn", "pub", "struct", "impl", "test", "assert", "path", "read",
    "write", "line", "offset",
];

fn text(rng: &mut Rng, len: usize, out: &mut String) {
    while out.len() < len {
        let w = WORDS[(rng.next_u64() % WORDS.len() as u64) as usize];
        out.push_str(w);
        out.push(if rng.next_u64().is_multiple_of(9) {
            '\n'
        } else {
            ' '
        });
    }
}

/// The `i`th representative entry: its kind and canonical CBOR content.
/// The mix follows real agent sessions: user and assistant messages of a
/// few hundred bytes, tool calls of about 150 bytes, and tool results from
/// 200 bytes to 8 KiB of source-like text.
pub fn representative_entry(rng: &mut Rng, i: u64) -> (EntryKind, u64, Vec<u8>) {
    let mut s = String::new();
    let (kind, pairing, len) = match i % 8 {
        0 => (
            EntryKind::UserMessage,
            0,
            80 + (rng.next_u64() % 400) as usize,
        ),
        1 | 4 | 7 => (
            EntryKind::AssistantMessage,
            0,
            200 + (rng.next_u64() % 1200) as usize,
        ),
        2 | 5 => (EntryKind::ToolCall, i, 60 + (rng.next_u64() % 150) as usize),
        _ => (
            EntryKind::ToolResult,
            i - 1,
            200 + (rng.next_u64() % 8000) as usize,
        ),
    };
    text(rng, len, &mut s);
    let mut c = Vec::with_capacity(s.len() + 32);
    smith_codec::Encoder::new(&mut c)
        .map(2)
        .u64(0)
        .u64(i)
        .u64(1)
        .str(&s);
    (kind, pairing, c)
}

/// `n` representative entries.
pub fn representative_entries(n: u64) -> Vec<(EntryKind, u64, Vec<u8>)> {
    let mut rng = Rng::new(0x5eed);
    (1..=n).map(|i| representative_entry(&mut rng, i)).collect()
}

/// Encodes entries as a chain of entry frames into `out`, exactly as an
/// append does (entry map, compression decision, frame), with `comp`
/// reused. This is the work the 5 ms target for 1,000 entries bounds.
pub fn encode_entries(
    comp: &mut Compressor,
    entries: &[(EntryKind, u64, Vec<u8>)],
    out: &mut Vec<u8>,
    map: &mut Vec<u8>,
) {
    let mut prev: Option<u64> = None;
    for (i, (kind, pairing, content)) in entries.iter().enumerate() {
        let id = i as u64 + 1;
        let head = EntryHead {
            id,
            parent: id - 1,
            timestamp_ms: 1_700_000_000_000 + id,
            kind: kind.code(),
            pairing: *pairing,
        };
        map.clear();
        format::encode_entry(map, &head, content);
        let here = out.len() as u64;
        comp.frame(out, KIND_ENTRY, prev.map_or(0, |p| here - p), map);
        prev = Some(here);
    }
}

/// Writes a representative session of at least `target_bytes` to `path` as
/// one linear branch, streaming (memory stays small whatever the size).
/// Returns the number of entries.
///
/// # Errors
/// `Io` when the file cannot be written.
pub fn write_representative_session(path: &Path, target_bytes: u64) -> Result<u64> {
    let f = std::fs::File::create(path).map_err(|e| StoreError::io("create", path, e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let io = |e| StoreError::io("write", path, e);
    w.write_all(&format::encode_header(
        SessionId([0x42; 16]),
        1_700_000_000_000,
    ))
    .map_err(io)?;
    let mut written = format::HEADER_LEN as u64;
    let mut comp = Compressor::new()?;
    let mut rng = Rng::new(0x5eed);
    let (mut buf, mut map) = (Vec::new(), Vec::new());
    let mut prev: Option<u64> = None;
    let mut id = 0u64;
    while written < target_bytes {
        id += 1;
        let (kind, pairing, content) = representative_entry(&mut rng, id);
        let head = EntryHead {
            id,
            parent: id - 1,
            timestamp_ms: 1_700_000_000_000 + id,
            kind: kind.code(),
            pairing,
        };
        map.clear();
        format::encode_entry(&mut map, &head, &content);
        buf.clear();
        comp.frame(&mut buf, KIND_ENTRY, prev.map_or(0, |p| written - p), &map);
        w.write_all(&buf).map_err(io)?;
        prev = Some(written);
        written += buf.len() as u64;
    }
    w.flush().map_err(io)?;
    Ok(id)
}

/// Distinct entries [`write_session_fast`] generates before it starts
/// reusing them (a multiple of the eight-entry kind cycle).
pub const FAST_POOL: u64 = 4096;

/// Writes a representative session of at least `target_bytes` to `path`,
/// like [`write_representative_session`] but fast enough to build a 1 GiB
/// fixture in about a second: the first [`FAST_POOL`] entries' contents are
/// generated (and compressed where a write would compress them) once, then
/// reused in order, each frame re-encoded with its own id, parent, timestamp,
/// pairing id, link and checksum. The result is an ordinary, fully valid
/// session file of one linear branch: entry `n` has the kind, size and
/// content of pool entry `(n - 1) % FAST_POOL + 1`, with its tool results
/// paired to the call just before them. Returns the number of entries.
///
/// # Errors
/// `Io` when the file cannot be written or the compressor cannot be set up.
pub fn write_session_fast(path: &Path, target_bytes: u64) -> Result<u64> {
    write_fast(path, target_bytes, false)
}

/// As [`write_session_fast`], but the file ends with the last entry of the
/// pool (its entry count is a multiple of [`FAST_POOL`]; it may exceed
/// `target_bytes` by up to one pool, about 3.6 MB). Every such file ends
/// with the same 4,096 entries, so reading its newest entries costs the same
/// whatever its size: the fixture for comparing open times across sizes.
///
/// # Errors
/// As [`write_session_fast`].
pub fn write_session_fast_aligned(path: &Path, target_bytes: u64) -> Result<u64> {
    write_fast(path, target_bytes, true)
}

fn write_fast(path: &Path, target_bytes: u64, aligned: bool) -> Result<u64> {
    // The pool: kind, pairing distance back from the entry's own id (none
    // for kinds that pair with nothing), and
    // the stored content (compressed exactly as `Compressor::frame` would).
    struct Pooled {
        kind: u32,
        pair_back: Option<u64>,
        flags: u8,
        content_len: usize,
        stored: Vec<u8>,
    }
    let mut comp = Compressor::new()?;
    let mut rng = Rng::new(0x5eed);
    let mut pool = Vec::with_capacity(FAST_POOL as usize);
    let (mut map, mut frame) = (Vec::new(), Vec::new());
    for i in 1..=FAST_POOL {
        let (kind, pairing, content) = representative_entry(&mut rng, i);
        // Encode once through the real writer to learn the stored form.
        let head = EntryHead {
            id: i,
            parent: i - 1,
            timestamp_ms: 1_700_000_000_000 + i,
            kind: kind.code(),
            pairing,
        };
        map.clear();
        format::encode_entry(&mut map, &head, &content);
        frame.clear();
        comp.frame(&mut frame, KIND_ENTRY, 0, &map);
        let flags = frame[5];
        let content_len = content.len();
        let stored = if flags == format::FLAG_ZSTD_CONTENT {
            let (_, head_len, _) = format::decode_entry_head(&map).ok_or_else(|| {
                StoreError::new(
                    crate::error::ErrorKind::Invalid,
                    "the fixture writer produced an entry map it cannot parse; this is a bug in smith-store's bench_support".to_owned(),
                )
            })?;
            frame[format::FRAME_PREFIX + head_len..frame.len() - format::FRAME_SUFFIX].to_vec()
        } else {
            content
        };
        pool.push(Pooled {
            kind: kind.code(),
            pair_back: (pairing != 0).then(|| i - pairing),
            flags,
            content_len,
            stored,
        });
    }
    let f = std::fs::File::create(path).map_err(|e| StoreError::io("create", path, e))?;
    let mut w = RegionWriter::new(f);
    let io = |e| StoreError::io("write", path, e);
    w.write_all(&format::encode_header(
        SessionId([0x42; 16]),
        1_700_000_000_000,
    ))
    .map_err(io)?;
    let mut written = format::HEADER_LEN as u64;
    let mut prev: Option<u64> = None;
    let mut id = 0u64;
    let mut head_bytes = Vec::with_capacity(64);
    while written < target_bytes || (aligned && !id.is_multiple_of(FAST_POOL)) {
        id += 1;
        let p = &pool[((id - 1) % FAST_POOL) as usize];
        let head = EntryHead {
            id,
            parent: id - 1,
            timestamp_ms: 1_700_000_000_000 + id,
            kind: p.kind,
            pairing: p.pair_back.map_or(0, |back| id - back),
        };
        head_bytes.clear();
        format::encode_entry_head(&mut head_bytes, &head, p.content_len);
        let content_len = (head_bytes.len() + p.content_len) as u32;
        frame.clear();
        format::encode_frame_parts(
            &mut frame,
            KIND_ENTRY,
            p.flags,
            content_len,
            prev.map_or(0, |q| written - q),
            &[&head_bytes, &p.stored],
        );
        w.write_all(&frame).map_err(io)?;
        prev = Some(written);
        written += frame.len() as u64;
    }
    w.flush().map_err(io)?;
    Ok(id)
}

/// A writer that hands the file whole 2 MiB pieces at 2 MiB offsets (the
/// last piece shorter), so the page cache can hold every full 2 MiB region
/// of a fresh fixture in one huge folio wherever the kernel can allocate one.
/// A `BufWriter` of 4 MiB writes pieces a partial frame short of its
/// capacity, at offsets that drift off the 2 MiB grid: then each piece covers
/// one whole region and the kernel holds the regions it only partly covers
/// in smaller folios, about half the file (docs/benchmarks.md,
/// "`store.load_throughput`: the page cache's folios").
struct RegionWriter<W: Write> {
    file: W,
    buf: Vec<u8>,
}

impl<W: Write> RegionWriter<W> {
    /// Bytes of each write: the size of a huge page on x86_64 and aarch64
    /// (4 KiB base pages).
    const PIECE: usize = crate::window::REGION;

    fn new(file: W) -> Self {
        Self {
            file,
            buf: Vec::with_capacity(2 * Self::PIECE),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= Self::PIECE {
            let whole = self.buf.len() / Self::PIECE * Self::PIECE;
            self.file.write_all(&self.buf[..whole])?;
            self.buf.drain(..whole);
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all(&self.buf)?;
        self.buf.clear();
        self.file.flush()
    }
}

/// How many of the full 2 MiB regions of the file at `path` the page cache
/// holds as huge pages (each mapped with one page-table entry once
/// touched), and how many full regions the file has: `(huge, regions)`.
/// Maps the file, reads one byte of every region (which faults it in at
/// the size the page cache holds it) and asks the kernel which it mapped
/// huge (`PAGEMAP_SCAN`, Linux 6.7 and later). `None` where that cannot be
/// asked, or the file cannot be opened or mapped.
pub fn huge_regions(path: &Path) -> Option<(usize, usize)> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only mapping of a fixture nothing else writes while
    // it is measured; dropped before returning.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    crate::window::huge_regions_of(&map)
}

/// Reads `path` sequentially into one reused 1 MiB buffer: the baseline for
/// load throughput. Returns the bytes read.
///
/// # Errors
/// `Io` when the file cannot be read.
pub fn sequential_read(path: &Path) -> Result<u64> {
    let mut f = std::fs::File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| StoreError::io("read", path, e))?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

#[cfg(test)]
mod region_writer_tests {
    use super::*;

    /// Records every write it is handed: offset and length.
    struct Recorder {
        bytes: Vec<u8>,
        writes: Vec<(usize, usize)>,
    }

    impl Write for Recorder {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.writes.push((self.bytes.len(), b.len()));
            self.bytes.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Pieces of many sizes (frames of a few bytes to more than a region)
    /// reach the file unchanged and in order, every write but the last is
    /// whole regions at a region's offset, and nothing is held back after
    /// the flush.
    #[test]
    fn writes_whole_regions_at_region_offsets() {
        let piece = RegionWriter::<Recorder>::PIECE;
        let mut w = RegionWriter::new(Recorder {
            bytes: Vec::new(),
            writes: Vec::new(),
        });
        let mut expected = Vec::new();
        let mut x = 7u32;
        for size in [
            1usize,
            47,
            1156,
            3,
            piece - 1,
            2,
            piece,
            5 * piece + 13,
            999,
        ] {
            let chunk: Vec<u8> = (0..size)
                .map(|_| {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (x >> 24) as u8
                })
                .collect();
            w.write_all(&chunk).expect("write");
            expected.extend_from_slice(&chunk);
        }
        w.flush().expect("flush");
        let r = &w.file;
        assert_eq!(r.bytes, expected);
        let (last, whole) = r.writes.split_last().expect("writes");
        assert!(!whole.is_empty());
        for &(at, len) in whole {
            assert_eq!(at % piece, 0, "a write at {at}, off the 2 MiB grid");
            assert_eq!(len % piece, 0, "a write of {len} bytes, not whole regions");
        }
        assert_eq!(last.0 % piece, 0);
        assert_eq!(last.0 + last.1, expected.len());
        assert!(w.buf.is_empty());
    }
}
