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
