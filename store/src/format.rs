//! The on-disk format: file header, frame layout, checksums and the entry
//! payload map. `docs/session-format.md` is the normative description; this
//! module is its only implementation.

use crate::error::{ErrorKind, Result, StoreError};

/// The eight magic bytes that open every session file. Like PNG's signature,
/// the high-bit first byte and the CR LF / SUB / LF tail detect transfers
/// that mangle binary data.
pub const MAGIC: [u8; 8] = [0x89, b'S', b'M', b'S', b'\r', b'\n', 0x1a, b'\n'];
/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u16 = 1;
/// The length of a version-1 header.
pub const HEADER_LEN: usize = 48;
/// Bytes before a frame's payload: length prefix (4) + kind, flags, reserved,
/// content length, link (16).
pub const FRAME_PREFIX: usize = 20;
/// Bytes after a frame's payload: checksum (4) + repeated body length (4).
pub const FRAME_SUFFIX: usize = 8;
/// The fixed part of a frame body (kind .. link).
pub const BODY_FIXED: usize = 16;
/// The smallest possible frame.
pub const MIN_FRAME: usize = FRAME_PREFIX + FRAME_SUFFIX;

/// Frame kind: one history entry.
pub const KIND_ENTRY: u8 = 1;
/// Frame kind: the origin of a forked or cloned session.
pub const KIND_ORIGIN: u8 = 2;

/// Flag bit: the payload is one zstd frame holding `content_len` bytes
/// (whole-payload compression; still read, no longer written for entries).
pub const FLAG_ZSTD: u8 = 0x01;
/// Flag bit (entry frames): the payload is the entry map's head — every
/// byte before the content — in clear, followed by one zstd frame that
/// decompresses to the content; `content_len` is the whole map's length.
/// Loading reads the head without decompressing anything.
pub const FLAG_ZSTD_CONTENT: u8 = 0x02;

/// A session's identity: 16 bytes, shown as 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SessionId(pub [u8; 16]);

impl SessionId {
    /// A fresh id from the clock, the process id and the standard library's
    /// per-process random hash keys (no extra dependency, unique in practice).
    pub fn generate() -> Self {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut out = [0u8; 16];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(nanos);
            h.write_u32(std::process::id());
            h.write_u64(n);
            h.write_usize(i);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
        Self(out)
    }

    /// The id as 32 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(32);
        for b in self.0 {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 15)]));
        }
        s
    }

    /// Parses 32 hex digits.
    pub fn from_hex(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            let hi = hex_val(b[2 * i])?;
            let lo = hex_val(b[2 * i + 1])?;
            *o = hi << 4 | lo;
        }
        Some(Self(out))
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl std::fmt::Debug for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The decoded file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The session's id.
    pub id: SessionId,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Where the first frame starts (the header length).
    pub header_len: u32,
}

/// Encodes a version-1 header.
pub fn encode_header(id: SessionId, created_ms: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
    h[12..28].copy_from_slice(&id.0);
    h[28..36].copy_from_slice(&created_ms.to_le_bytes());
    let crc = crc32c::crc32c(&h[..44]);
    h[44..48].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Decodes and checks the header at the start of `bytes`.
///
/// # Errors
/// `BadHeader` when the file is shorter than a header, the magic is wrong or
/// the checksum fails; `UnsupportedVersion` for a newer format.
pub fn decode_header(bytes: &[u8], what: &str) -> Result<Header> {
    if bytes.len() < HEADER_LEN {
        return Err(StoreError::at(
            ErrorKind::BadHeader,
            0,
            format!(
                "{what} is {} bytes long, shorter than the {HEADER_LEN}-byte session header, so it holds no recoverable frames; delete it or restore it from a backup",
                bytes.len()
            ),
        ));
    }
    if bytes[0..8] != MAGIC {
        return Err(StoreError::at(
            ErrorKind::BadHeader,
            0,
            format!(
                "{what} does not start with the smith session magic bytes, so it is not a session file; check the path or reference"
            ),
        ));
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    let header_len = u16::from_le_bytes([bytes[10], bytes[11]]);
    let stored = u32::from_le_bytes([bytes[44], bytes[45], bytes[46], bytes[47]]);
    if crc32c::crc32c(&bytes[..44]) != stored {
        return Err(StoreError::at(
            ErrorKind::BadHeader,
            0,
            format!(
                "{what} has a session header whose checksum does not match, so its id and creation time cannot be trusted; restore the file from a backup"
            ),
        ));
    }
    if version > FORMAT_VERSION || version == 0 {
        return Err(StoreError::at(
            ErrorKind::UnsupportedVersion,
            8,
            format!(
                "{what} uses session format version {version}, but this smith reads versions 1 to {FORMAT_VERSION}; upgrade smith to open it"
            ),
        ));
    }
    if usize::from(header_len) < HEADER_LEN || usize::from(header_len) > bytes.len() {
        return Err(StoreError::at(
            ErrorKind::BadHeader,
            10,
            format!(
                "{what} declares a header length of {header_len} bytes, which is impossible for format version {version}; restore the file from a backup"
            ),
        ));
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&bytes[12..28]);
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&bytes[28..36]);
    Ok(Header {
        id: SessionId(id),
        created_ms: u64::from_le_bytes(ts),
        header_len: u32::from(header_len),
    })
}

/// Appends one frame to `out`. `payload` is the stored payload (already
/// compressed when `flags` has [`FLAG_ZSTD`]).
pub fn encode_frame(
    out: &mut Vec<u8>,
    kind: u8,
    flags: u8,
    content_len: u32,
    link: u64,
    payload: &[u8],
) {
    encode_frame_parts(out, kind, flags, content_len, link, &[payload]);
}

/// Appends one frame to `out` whose stored payload is the concatenation of
/// `parts` (used to write an entry's clear head and compressed content
/// without joining them first).
pub fn encode_frame_parts(
    out: &mut Vec<u8>,
    kind: u8,
    flags: u8,
    content_len: u32,
    link: u64,
    parts: &[&[u8]],
) {
    let start = out.len();
    let len: usize = parts.iter().map(|p| p.len()).sum();
    // Callers keep payloads under the frame limit, far below u32::MAX.
    let body_len = (BODY_FIXED + len) as u32;
    out.reserve(MIN_FRAME + len);
    out.extend_from_slice(&body_len.to_le_bytes());
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&content_len.to_le_bytes());
    out.extend_from_slice(&link.to_le_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&body_len.to_le_bytes());
}

/// A frame whose boundaries and checksum were verified, borrowed from the file.
#[derive(Debug, Clone, Copy)]
pub struct FrameView<'a> {
    /// Offset of the frame's first byte in the file.
    pub offset: u64,
    /// Frame kind.
    pub kind: u8,
    /// Flag bits.
    pub flags: u8,
    /// Payload length after decompression.
    pub content_len: u32,
    /// Kind-specific link (entries: distance back to the parent's frame).
    pub link: u64,
    /// The stored payload bytes.
    pub payload: &'a [u8],
    /// The whole frame, prefix to trailer.
    pub raw: &'a [u8],
}

/// How the bytes at one offset look as a frame.
pub(crate) enum Probe<'a> {
    /// A whole frame whose checksum matches.
    Good(FrameView<'a>),
    /// Boundaries intact (length and repeated length agree) but the checksum fails.
    Corrupt { len: usize },
    /// Boundaries cannot be trusted: too short, length out of range, past the
    /// end, or the repeated length disagrees.
    Lost,
}

pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub(crate) fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Looks at `bytes[pos..]` as a frame. `max_body` bounds the length prefix.
pub(crate) fn probe(bytes: &[u8], pos: usize, max_body: u32) -> Probe<'_> {
    let rest = bytes.len().saturating_sub(pos);
    if rest < MIN_FRAME {
        return Probe::Lost;
    }
    let body_len = read_u32(bytes, pos);
    if (body_len as usize) < BODY_FIXED || body_len > max_body {
        return Probe::Lost;
    }
    let total = body_len as usize + 12;
    if total > rest {
        return Probe::Lost;
    }
    let end = pos + total;
    if read_u32(bytes, end - 4) != body_len {
        return Probe::Lost;
    }
    let crc_at = end - FRAME_SUFFIX;
    if crate::crc::crc32c(&bytes[pos..crc_at]) != read_u32(bytes, crc_at) {
        return Probe::Corrupt { len: total };
    }
    Probe::Good(FrameView {
        offset: pos as u64,
        kind: bytes[pos + 4],
        flags: bytes[pos + 5],
        content_len: read_u32(bytes, pos + 8),
        link: read_u64(bytes, pos + 12),
        payload: &bytes[pos + FRAME_PREFIX..crc_at],
        raw: &bytes[pos..end],
    })
}

/// The frame at `pos`, whose two length copies the caller has checked
/// agree and fit in `bytes`; its checksum is not checked (see
/// [`checksum_ok`]).
#[inline(always)]
pub(crate) fn frame_at_unchecked(bytes: &[u8], pos: usize) -> FrameView<'_> {
    let total = read_u32(bytes, pos) as usize + 12;
    let crc_at = pos + total - FRAME_SUFFIX;
    FrameView {
        offset: pos as u64,
        kind: bytes[pos + 4],
        flags: bytes[pos + 5],
        content_len: read_u32(bytes, pos + 8),
        link: read_u64(bytes, pos + 12),
        payload: &bytes[pos + FRAME_PREFIX..crc_at],
        raw: &bytes[pos..pos + total],
    }
}

/// Whether a frame's stored checksum matches its bytes.
#[inline]
pub(crate) fn checksum_ok(v: &FrameView<'_>) -> bool {
    let crc_at = v.raw.len() - FRAME_SUFFIX;
    crate::crc::crc32c(&v.raw[..crc_at]) == read_u32(v.raw, crc_at)
}

/// Probes the frame that ends exactly at `end` (found through its trailer).
pub(crate) fn probe_back(
    bytes: &[u8],
    end: usize,
    min_start: usize,
    max_body: u32,
) -> Option<FrameView<'_>> {
    if end < min_start + MIN_FRAME || end > bytes.len() {
        return None;
    }
    let body_len = read_u32(bytes, end - 4) as usize;
    let total = body_len.checked_add(12)?;
    if total > end - min_start {
        return None;
    }
    match probe(&bytes[..end], end - total, max_body) {
        Probe::Good(v) => Some(v),
        _ => None,
    }
}

// ---- the entry payload: a canonical CBOR map with integer keys 0..=5 ----

/// The fixed fields of an entry, as carried in its frame payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHead {
    /// Entry id (non-zero).
    pub id: u64,
    /// Parent entry id, 0 for a root.
    pub parent: u64,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Entry kind code.
    pub kind: u32,
    /// Pairing id (0 when the kind pairs with nothing).
    pub pairing: u64,
}

pub(crate) fn cbor_head(out: &mut Vec<u8>, major: u8, v: u64) {
    let m = major << 5;
    if v < 24 {
        out.push(m | v as u8);
    } else if v <= 0xff {
        out.extend_from_slice(&[m | 24, v as u8]);
    } else if v <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// The longest head [`encode_entry_head`] can write: the map's head, five
/// keys with 9-byte values, the content key and a 9-byte length.
pub const ENTRY_HEAD_MAX: usize = 1 + 5 * (1 + 9) + 1 + 9;

/// Encodes the entry payload map: `{0: id, 1: parent, 2: timestamp_ms,
/// 3: kind, 4: pairing, 5: content}` with `content` a byte string.
pub fn encode_entry(out: &mut Vec<u8>, head: &EntryHead, content: &[u8]) {
    out.reserve(48 + content.len());
    encode_entry_head(out, head, content.len());
    out.extend_from_slice(content);
}

/// Encodes the head of an entry payload map: every byte of
/// [`encode_entry`]'s output before the content, for a content of
/// `content_len` bytes.
pub fn encode_entry_head(out: &mut Vec<u8>, head: &EntryHead, content_len: usize) {
    cbor_head(out, 5, 6);
    for (key, value) in [
        (0, head.id),
        (1, head.parent),
        (2, head.timestamp_ms),
        (3, u64::from(head.kind)),
        (4, head.pairing),
    ] {
        cbor_head(out, 0, key);
        cbor_head(out, 0, value);
    }
    cbor_head(out, 0, 5);
    cbor_head(out, 2, content_len as u64);
}

/// Reads a canonical (shortest-form) CBOR head of the given major type.
fn read_head(b: &[u8], pos: &mut usize, major: u8) -> Option<u64> {
    let first = *b.get(*pos)?;
    if first >> 5 != major {
        return None;
    }
    let info = first & 31;
    *pos += 1;
    let (v, min) = match info {
        0..=23 => return Some(u64::from(info)),
        24 => (u64::from(*b.get(*pos)?), 24),
        25 => (
            u64::from(u16::from_be_bytes(b.get(*pos..*pos + 2)?.try_into().ok()?)),
            0x100,
        ),
        26 => (
            u64::from(u32::from_be_bytes(b.get(*pos..*pos + 4)?.try_into().ok()?)),
            0x1_0000,
        ),
        27 => (
            u64::from_be_bytes(b.get(*pos..*pos + 8)?.try_into().ok()?),
            0x1_0000_0000,
        ),
        _ => return None,
    };
    *pos += match info {
        24 => 1,
        25 => 2,
        26 => 4,
        _ => 8,
    };
    // Canonical encoding uses the shortest form; anything longer is rejected
    // so that one entry has exactly one byte representation.
    if v < min {
        return None;
    }
    Some(v)
}

/// Parses an entry payload's fixed fields and returns them with the byte
/// range of the content inside `b`. Content bytes are not looked at.
/// Returns `None` unless `b` is exactly the canonical map [`encode_entry`] writes.
#[inline(always)]
pub fn decode_entry(b: &[u8]) -> Option<(EntryHead, usize, usize)> {
    let (head, pos, len) = decode_entry_head(b)?;
    (b.len() - pos == len).then_some((head, pos, len))
}

/// Parses the fixed fields at the start of an entry map: the head, where the
/// content starts and the content's declared length. The content itself need
/// not follow (it may be stored compressed).
///
/// A load parses one such head per entry, so the usual case (at least
/// [`FAST_HEAD_INPUT`] bytes, as every entry with a few dozen bytes of
/// content has) takes [`decode_entry_head_fast`], which decides nothing per
/// field; shorter maps, and anything the fast path does not accept, are read
/// head by head. Both accept exactly the same maps (differential test below).
#[inline]
pub fn decode_entry_head(b: &[u8]) -> Option<(EntryHead, usize, usize)> {
    if let Some(block) = b.first_chunk::<FAST_HEAD_INPUT>()
        && let Some((head, pos, len)) = decode_entry_head_fast(block)
    {
        return Some((head, pos, len));
    }
    decode_entry_head_slow(b)
}

/// Bytes [`decode_entry_head_fast`] reads: the longest head it accepts
/// ([`ENTRY_HEAD_MAX`]) plus the eight bytes a field's argument is loaded
/// from past its initial byte.
pub const FAST_HEAD_INPUT: usize = ENTRY_HEAD_MAX + 8;

/// Argument bytes of an unsigned-integer or string head by its low five
/// bits, and the least argument that width may carry (a wider head than
/// needed is not canonical). Low bits 28 to 31 (reserved, indefinite) get
/// width 0 and a least argument no value reaches, so they never pass.
const FIELD_WIDTH: [u8; 32] = {
    let mut t = [0u8; 32];
    t[24] = 1;
    t[25] = 2;
    t[26] = 4;
    t[27] = 8;
    t
};
const FIELD_LEAST: [u64; 32] = {
    let mut t = [0u64; 32];
    t[24] = 24;
    t[25] = 0x100;
    t[26] = 0x1_0000;
    t[27] = 0x1_0000_0000;
    t[28] = u64::MAX;
    t[29] = u64::MAX;
    t[30] = u64::MAX;
    t[31] = u64::MAX;
    t
};

/// One head of major type `major` at `pos` of `b`: its argument, the
/// position after it, and whether it is that major type in shortest form.
/// Reads `b[pos..pos + 9]` whatever the width, and decides by table and
/// arithmetic rather than by branch.
#[inline(always)]
fn field(b: &[u8; FAST_HEAD_INPUT], pos: usize, major: u8) -> (u64, usize, bool) {
    let first = b[pos];
    let info = usize::from(first & 31);
    let width = usize::from(FIELD_WIDTH[info]);
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[pos + 1..pos + 9]);
    // The argument bytes are the top `width` bytes of the big-endian word
    // (a width of 0 shifts by 64, which `checked_shr` turns into 0).
    let word = u64::from_be_bytes(w);
    let wide = word.checked_shr(64 - 8 * width as u32).unwrap_or(0);
    let v = if info < 24 { info as u64 } else { wide };
    let ok = first >> 5 == major && (info < 24 || (v >= FIELD_LEAST[info]));
    (v, pos + 1 + width, ok)
}

/// [`decode_entry_head`] over a block of at least [`FAST_HEAD_INPUT`]
/// bytes: the map head, five key-value pairs, the content key and the
/// content's byte-string head, each validated into one flag that is tested
/// once at the end. `None` means "not accepted here" (the caller then reads
/// the map head by head), not "invalid".
#[inline]
pub(crate) fn decode_entry_head_fast(
    b: &[u8; FAST_HEAD_INPUT],
) -> Option<(EntryHead, usize, usize)> {
    let mut ok = b[0] == 0xa6;
    let mut pos = 1;
    let mut vals = [0u64; 5];
    for (key, slot) in vals.iter_mut().enumerate() {
        // Keys 0 to 4 are one byte each: the byte is the key.
        ok &= b[pos] == key as u8;
        let (v, next, good) = field(b, pos + 1, 0);
        ok &= good;
        *slot = v;
        pos = next;
    }
    ok &= b[pos] == 5;
    let (len, next, good) = field(b, pos + 1, 2);
    ok &= good && vals[0] != 0 && vals[3] <= u64::from(u32::MAX);
    let len = usize::try_from(len).ok()?;
    ok.then_some((
        EntryHead {
            id: vals[0],
            parent: vals[1],
            timestamp_ms: vals[2],
            kind: vals[3] as u32,
            pairing: vals[4],
        },
        next,
        len,
    ))
}

/// Where the values of keys 1 to 4 of an entry head start (key 0's value
/// starts at byte 2): the layout of the last head a walk read, from which
/// [`decode_entry_head_like`] reads the next one.
///
/// Consecutive entries of a session mostly share their layout (ids and
/// timestamps change width rarely, kinds are small), so reading the first
/// four fields at the positions of the previous head lets their loads and
/// checks run side by side instead of one after another, each field's
/// position waiting on the width of the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadLayout {
    at: [u8; 4],
}

impl Default for HeadLayout {
    /// Every field one byte long (values under 24).
    fn default() -> Self {
        Self { at: [4, 6, 8, 10] }
    }
}

impl HeadLayout {
    /// The layout of a head `b` whose fields were checked (by the
    /// decoder): each value's width read from its initial byte.
    fn of(b: &[u8; FAST_HEAD_INPUT]) -> Self {
        let mut at = [0u8; 4];
        let mut pos = 2;
        for slot in &mut at {
            pos += 1 + usize::from(FIELD_WIDTH[usize::from(b[pos] & 31)]) + 1;
            *slot = pos as u8;
        }
        Self { at }
    }
}

/// [`decode_entry_head`], reading the first four fields at the positions
/// `layout` gives (the last head read), checked: each field must end where
/// the next one's key is expected. When they do not (the widths changed),
/// the head is read field by field and `layout` becomes its layout. Accepts
/// exactly what [`decode_entry_head`] accepts, with the same result
/// (differential test below).
#[inline(always)]
pub fn decode_entry_head_like(
    b: &[u8],
    layout: &mut HeadLayout,
) -> Option<(EntryHead, usize, usize)> {
    if let Some(block) = b.first_chunk::<FAST_HEAD_INPUT>() {
        if let Some(found) = head_at_layout(block, layout) {
            return Some(found);
        }
        return decode_entry_head_relayout(b, block, layout);
    }
    decode_entry_head_slow(b)
}

/// The head of `block` read at the positions `layout` gives, when it is laid
/// out that way and valid (what [`decode_entry_head_like`] returns then);
/// `None` otherwise, which does not mean the head is invalid.
#[inline(always)]
pub(crate) fn head_at_layout(
    block: &[u8; FAST_HEAD_INPUT],
    layout: &HeadLayout,
) -> Option<(EntryHead, usize, usize)> {
    let [v1, v2, v3, v4] = layout.at.map(usize::from);
    let (id, n0, g0) = field(block, 2, 0);
    let (parent, n1, g1) = field(block, v1, 0);
    let (ts, n2, g2) = field(block, v2, 0);
    let (kind, n3, g3) = field(block, v3, 0);
    let (pairing, n4, g4) = field(block, v4, 0);
    let placed = (n0 + 1 == v1) & (n1 + 1 == v2) & (n2 + 1 == v3) & (n3 + 1 == v4);
    let keys = (block[0] == 0xa6)
        & (block[1] == 0)
        & (block[v1 - 1] == 1)
        & (block[v2 - 1] == 2)
        & (block[v3 - 1] == 3)
        & (block[v4 - 1] == 4)
        & (block[n4] == 5);
    let (len, next, g5) = field(block, n4 + 1, 2);
    let ok =
        placed & keys & g0 & g1 & g2 & g3 & g4 & g5 & (id != 0) & (kind <= u64::from(u32::MAX));
    if ok {
        let len = usize::try_from(len).ok()?;
        return Some((
            EntryHead {
                id,
                parent,
                timestamp_ms: ts,
                kind: kind as u32,
                pairing,
            },
            next,
            len,
        ));
    }
    None
}

/// [`decode_entry_head_like`] when the head is not laid out like the last
/// one: read field by field, and its layout kept for the next.
#[cold]
#[inline(never)]
fn decode_entry_head_relayout(
    b: &[u8],
    block: &[u8; FAST_HEAD_INPUT],
    layout: &mut HeadLayout,
) -> Option<(EntryHead, usize, usize)> {
    let found = decode_entry_head(b);
    if found.is_some() {
        *layout = HeadLayout::of(block);
    }
    found
}

/// [`decode_entry`] through [`decode_entry_head_like`].
#[inline(always)]
pub fn decode_entry_like(b: &[u8], layout: &mut HeadLayout) -> Option<(EntryHead, usize, usize)> {
    let (head, pos, len) = decode_entry_head_like(b, layout)?;
    (b.len() - pos == len).then_some((head, pos, len))
}

/// [`decode_entry_head`] head by head, for maps shorter than the fast
/// path's block.
fn decode_entry_head_slow(b: &[u8]) -> Option<(EntryHead, usize, usize)> {
    let mut pos = 0;
    if read_head(b, &mut pos, 5)? != 6 {
        return None;
    }
    let mut vals = [0u64; 5];
    for (key, slot) in vals.iter_mut().enumerate() {
        if read_head(b, &mut pos, 0)? != key as u64 {
            return None;
        }
        *slot = read_head(b, &mut pos, 0)?;
    }
    if read_head(b, &mut pos, 0)? != 5 {
        return None;
    }
    let len = usize::try_from(read_head(b, &mut pos, 2)?).ok()?;
    if vals[0] == 0 {
        return None;
    }
    let kind = u32::try_from(vals[3]).ok()?;
    Some((
        EntryHead {
            id: vals[0],
            parent: vals[1],
            timestamp_ms: vals[2],
            kind,
            pairing: vals[4],
        },
        pos,
        len,
    ))
}

/// Encodes the origin payload: `{0: origin session id (16-byte string),
/// 1: origin leaf entry id}`.
pub fn encode_origin(out: &mut Vec<u8>, origin: SessionId, leaf: u64) {
    cbor_head(out, 5, 2);
    cbor_head(out, 0, 0);
    cbor_head(out, 2, 16);
    out.extend_from_slice(&origin.0);
    cbor_head(out, 0, 1);
    cbor_head(out, 0, leaf);
}

/// Parses an origin payload.
pub fn decode_origin(b: &[u8]) -> Option<(SessionId, u64)> {
    let mut pos = 0;
    if read_head(b, &mut pos, 5)? != 2
        || read_head(b, &mut pos, 0)? != 0
        || read_head(b, &mut pos, 2)? != 16
    {
        return None;
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(b.get(pos..pos + 16)?);
    pos += 16;
    if read_head(b, &mut pos, 0)? != 1 {
        return None;
    }
    let leaf = read_head(b, &mut pos, 0)?;
    (pos == b.len()).then_some((SessionId(id), leaf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_payload_round_trips_and_rejects_non_canonical() {
        let head = EntryHead {
            id: 300,
            parent: 299,
            timestamp_ms: 1_700_000_000_000,
            kind: 4,
            pairing: 17,
        };
        let mut out = Vec::new();
        encode_entry(&mut out, &head, b"\x63abc");
        let (h, at, len) = decode_entry(&out).expect("canonical payload decodes");
        assert_eq!(h, head);
        assert_eq!(&out[at..at + len], b"\x63abc");
        // The id 300 written in a longer-than-needed form is not canonical.
        let mut long = vec![0xa6, 0x00, 0x1a, 0, 0, 1, 44];
        long.extend_from_slice(&out[5..]);
        assert!(decode_entry(&long).is_none());
    }

    /// The fast head parser accepts exactly what the head-by-head one
    /// accepts, with the same fields, over every width of every field and
    /// every single-byte change of the encoded head.
    #[test]
    fn fast_entry_head_agrees_with_the_slow_one() {
        let values = [
            0u64,
            1,
            23,
            24,
            255,
            256,
            65_535,
            65_536,
            u64::from(u32::MAX),
            1 << 32,
            u64::MAX,
        ];
        let mut checked = 0;
        for (i, &a) in values.iter().enumerate() {
            let b = values[(i * 7 + 3) % values.len()];
            let c = values[(i * 5 + 1) % values.len()];
            for kind in [0u32, 4, 24, u32::MAX] {
                let head = EntryHead {
                    id: a.max(1),
                    parent: b,
                    timestamp_ms: c,
                    kind,
                    pairing: a,
                };
                for content_len in [0usize, 23, 24, 300, 70_000] {
                    let mut out = Vec::new();
                    encode_entry_head(&mut out, &head, content_len);
                    out.resize(out.len().max(FAST_HEAD_INPUT) + 3, 0x41);
                    let slow = decode_entry_head_slow(&out);
                    assert_eq!(slow.map(|s| s.0), Some(head));
                    // A valid head is taken by the fast path itself.
                    let block = out.first_chunk::<FAST_HEAD_INPUT>().expect("padded");
                    assert_eq!(decode_entry_head_fast(block), slow);
                    assert_eq!(decode_entry_head(&out), slow);
                    // Every byte of the head changed to a few other values
                    // (other major types, other widths, reserved bits).
                    let head_len = slow.map_or(0, |s| s.1);
                    for at in 0..head_len {
                        for byte in [
                            0x00, 0x05, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1f, 0x20, 0x40, 0x58,
                            0xa6, 0xff,
                        ] {
                            let mut m = out.clone();
                            m[at] = byte;
                            let fast = m
                                .first_chunk::<FAST_HEAD_INPUT>()
                                .and_then(decode_entry_head_fast);
                            let slow = decode_entry_head_slow(&m);
                            if fast.is_some() {
                                assert_eq!(fast, slow, "byte {at} set to {byte:#04x}");
                            }
                            assert_eq!(decode_entry_head(&m), slow, "byte {at} set to {byte:#04x}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn entry_head_read_by_layout_agrees_with_the_plain_reader() {
        // Valid heads of many widths, and each of them with one byte
        // changed; every one read with the layout of every valid head.
        let values = [0u64, 1, 23, 24, 255, 256, 65_536, 1 << 32, u64::MAX];
        let mut inputs = Vec::new();
        let mut layouts = vec![HeadLayout::default()];
        for (i, &a) in values.iter().enumerate() {
            let b = values[(i * 7 + 3) % values.len()];
            for kind in [0u32, 24, u32::MAX] {
                for content_len in [0usize, 24, 70_000] {
                    let head = EntryHead {
                        id: a.max(1),
                        parent: b,
                        timestamp_ms: a,
                        kind,
                        pairing: b,
                    };
                    let mut out = Vec::new();
                    encode_entry_head(&mut out, &head, content_len);
                    let head_len = out.len();
                    out.resize(out.len().max(FAST_HEAD_INPUT) + 3, 0x41);
                    let block = out.first_chunk::<FAST_HEAD_INPUT>().expect("padded");
                    let layout = HeadLayout::of(block);
                    if !layouts.contains(&layout) {
                        layouts.push(layout);
                    }
                    for at in 0..head_len {
                        for byte in [0x00, 0x01, 0x05, 0x18, 0x19, 0x1b, 0x1c, 0x40, 0xa6] {
                            let mut m = out.clone();
                            m[at] = byte;
                            inputs.push(m);
                        }
                    }
                    // Short maps go to the head-by-head reader.
                    inputs.push(out[..head_len].to_vec());
                    inputs.push(out);
                }
            }
        }
        assert!(layouts.len() > 20, "{}", layouts.len());
        let mut taken = 0;
        for input in &inputs {
            let plain = decode_entry_head(input);
            taken += usize::from(plain.is_some());
            for layout in &layouts {
                let mut l = *layout;
                assert_eq!(decode_entry_head_like(input, &mut l), plain, "{input:02x?}");
                // A head read field by field leaves its layout behind, so
                // the same head is then read by layout.
                if plain.is_some() && input.len() >= FAST_HEAD_INPUT {
                    let before = l;
                    assert_eq!(decode_entry_head_like(input, &mut l), plain);
                    assert_eq!(l, before);
                }
            }
        }
        // Both kinds are well represented.
        assert!(
            taken > 1000 && inputs.len() - taken > 1000,
            "{taken} of {}",
            inputs.len()
        );
    }

    #[test]
    fn header_round_trips() {
        let id = SessionId([7; 16]);
        let h = encode_header(id, 42);
        let d = decode_header(&h, "test").expect("valid header");
        assert_eq!(d.id, id);
        assert_eq!(d.created_ms, 42);
        assert_eq!(SessionId::from_hex(&id.to_hex()), Some(id));
    }
}
