//! Deterministic, transparent payload compression.
//!
//! An entry's content of at least a threshold is compressed with zstd at a
//! fixed level, content size recorded in the zstd frame, no zstd checksum
//! (the frame's crc32c already covers the stored bytes) and no dictionary.
//! The compressed form is kept only when it is strictly smaller. Two
//! settings exist ([`Compression`], the user's `session.compression`):
//! `fast` ([`LEVEL`] from [`THRESHOLD`] bytes, the default) and `small`
//! ([`SMALL_LEVEL`] from [`SMALL_THRESHOLD`] bytes). Under one setting the
//! decision and the bytes are a pure function of the payload, so the same
//! entry always produces the same frame with this build's pinned zstd.
//! Readers never depend on the setting: a file may mix frames written
//! under both.

use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{self, EntryHead, FLAG_ZSTD, FLAG_ZSTD_CONTENT, FrameView, KIND_ENTRY};

/// Payloads shorter than this are stored as they are. Chosen with
/// [`LEVEL`] by measurement (`examples/compression.rs`, table in
/// `docs/session-format.md` §8): encoding 1,000 representative entries costs
/// about 1.7 ms of CPU and the file shrinks 1.26x, which keeps the durable
/// append of those entries (`store.append_1000`) well under the spec's 5 ms
/// on a loaded machine; at 4 KiB and level 1 (1.55x) encoding alone took
/// 3.0 ms and the append crossed 5 ms.
pub const THRESHOLD: usize = 6144;
/// The fixed zstd level: -1, the first of zstd's fast (negative) levels.
/// Decompression does not depend on it, so files written at another level
/// read the same. Level 1 runs the same fast match finder (with a larger
/// hash table) and Huffman-codes the literals, which level -1 stores as
/// they are: the conversation of
/// `tests/session_size.rs` comes out 1.12 times smaller (1,298,900
/// against 1,456,096 bytes) for a tenth more encoding, but every reader
/// then decodes the literals: the `session.*` gates measured 1.19 times
/// the time per MB for search (over its limit on a loaded machine), 1.13
/// for dump and 1.09 for replay (`docs/session-format.md` §4.1).
pub const LEVEL: i32 = -1;

/// The `small` setting's zstd level: 5, the cheapest level that brings the
/// conversation of `tests/session_size.rs` to at most 0.47 of pi's JSONL
/// (0.4698 from 256 bytes; level 4 gives 0.472 and level 3 0.482).
/// Measured with `examples/compression.rs`: encoding 1,000 representative
/// entries costs about 14 ms of CPU against 1.3 ms for `fast`, and readers
/// decode about 3.7 ms per MB of the `session.*` gates' fixture against
/// 0.7 (`docs/session-format.md` §4.1).
pub const SMALL_LEVEL: i32 = 5;
/// The `small` setting's threshold: content from 256 bytes is compressed.
/// Going down to 128 bytes gains 0.015 % of the file for 7 % more encoding.
pub const SMALL_THRESHOLD: usize = 256;

/// How session writers compress entry content: the user's
/// `session.compression` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// [`LEVEL`] from [`THRESHOLD`] bytes: cheap appends and readers, files
    /// about 0.71 of pi's JSONL for the same conversation.
    #[default]
    Fast,
    /// [`SMALL_LEVEL`] from [`SMALL_THRESHOLD`] bytes: files under half of
    /// pi's JSONL, for ten times the encoding and about five times the
    /// readers' decoding per MB of file.
    Small,
}

impl Compression {
    /// The setting's names, as `session.compression` accepts them.
    pub const NAMES: [&'static str; 2] = ["fast", "small"];

    /// The setting's name.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Fast => "fast",
            Compression::Small => "small",
        }
    }

    /// The setting named `name` (one of [`Compression::NAMES`]).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "fast" => Some(Compression::Fast),
            "small" => Some(Compression::Small),
            _ => None,
        }
    }

    /// The zstd level content is compressed at.
    pub fn level(self) -> i32 {
        match self {
            Compression::Fast => LEVEL,
            Compression::Small => SMALL_LEVEL,
        }
    }

    /// The least content length that is compressed.
    pub fn threshold(self) -> usize {
        match self {
            Compression::Fast => THRESHOLD,
            Compression::Small => SMALL_THRESHOLD,
        }
    }
}

/// The process's setting: 0 for `fast`, 1 for `small`.
static PROCESS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Sets the compression every writer in this process uses from now on
/// ([`Compressor::new`]: appends, imports, forks). Set once from the
/// configuration before a session is written; a session's writer set up
/// earlier keeps its setting.
pub fn set_process_compression(c: Compression) {
    PROCESS.store(
        u8::from(c == Compression::Small),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// The compression writers in this process use ([`set_process_compression`];
/// `fast` until it is called).
pub fn process_compression() -> Compression {
    match PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => Compression::Fast,
        _ => Compression::Small,
    }
}

/// Reusable compression state for a writer.
pub struct Compressor {
    inner: zstd::bulk::Compressor<'static>,
    scratch: Vec<u8>,
    level: i32,
    threshold: usize,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compressor")
    }
}

impl Compressor {
    /// Creates the compressor with the process's setting
    /// ([`process_compression`]).
    ///
    /// # Errors
    /// `Io` when zstd cannot allocate its context.
    pub fn new() -> Result<Self> {
        Self::with(process_compression())
    }

    /// Creates the compressor with setting `c`.
    ///
    /// # Errors
    /// As [`Compressor::new`].
    pub fn with(c: Compression) -> Result<Self> {
        Self::with_params(c.level(), c.threshold())
    }

    /// A compressor with another level and threshold, for measuring the
    /// trade-off only (`examples/compression.rs`): files must be written
    /// with one of the [`Compression`] settings to stay deterministic.
    ///
    /// # Errors
    /// As [`Compressor::new`].
    pub fn with_params(level: i32, threshold: usize) -> Result<Self> {
        let map = |e: std::io::Error| {
            StoreError::new(
                ErrorKind::Io,
                format!(
                    "could not set up the zstd compressor: {e}; this indicates memory exhaustion, free memory and retry"
                ),
            )
        };
        let mut inner = zstd::bulk::Compressor::new(level).map_err(map)?;
        inner
            .set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(true))
            .map_err(map)?;
        inner
            .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(false))
            .map_err(map)?;
        inner
            .set_parameter(zstd::zstd_safe::CParameter::DictIdFlag(false))
            .map_err(map)?;
        Ok(Self {
            inner,
            scratch: Vec::new(),
            level,
            threshold,
        })
    }

    /// Whether this compressor writes as setting `c` does.
    pub fn is(&self, c: Compression) -> bool {
        self.level == c.level() && self.threshold == c.threshold()
    }

    /// A compressor with another threshold, for measuring the trade-off only:
    /// files must be written with [`THRESHOLD`] to stay deterministic.
    ///
    /// # Errors
    /// As [`Compressor::new`].
    pub fn with_threshold(threshold: usize) -> Result<Self> {
        Self::with_params(LEVEL, threshold)
    }

    /// Lets go of the compression scratch when a large payload grew it past
    /// `keep` bytes.
    pub(crate) fn trim(&mut self, keep: usize) {
        if self.scratch.capacity() > keep {
            self.scratch = Vec::new();
        }
    }

    /// Appends one frame of `kind` carrying `payload` to `out`. An entry
    /// map whose content is at least the threshold long is stored with its
    /// head in clear and its content compressed ([`FLAG_ZSTD_CONTENT`]) when
    /// that is strictly smaller; everything else is stored as it is.
    pub fn frame(&mut self, out: &mut Vec<u8>, kind: u8, link: u64, payload: &[u8]) {
        let content_len = payload.len() as u32;
        if kind == KIND_ENTRY
            && let Some((_, at, len)) = format::decode_entry(payload)
            && len >= self.threshold
        {
            let content = &payload[at..];
            self.scratch.clear();
            self.scratch.reserve(zstd::zstd_safe::compress_bound(len));
            if let Ok(n) = self.inner.compress_to_buffer(content, &mut self.scratch)
                && n < len
            {
                format::encode_frame_parts(
                    out,
                    kind,
                    FLAG_ZSTD_CONTENT,
                    content_len,
                    link,
                    &[&payload[..at], &self.scratch[..n]],
                );
                return;
            }
        }
        format::encode_frame(out, kind, 0, content_len, link, payload);
    }
}

/// Decompresses a zstd payload into `dst`, which must be exactly the declared
/// content length. The zstd frame's own content size is checked against it
/// first, and output can never exceed `dst`.
pub(crate) fn decompress_into(
    d: &mut zstd::bulk::Decompressor<'static>,
    src: &[u8],
    dst: &mut [u8],
) -> bool {
    match zstd::zstd_safe::get_frame_content_size(src) {
        Ok(Some(n)) if n == dst.len() as u64 => {}
        _ => return false,
    }
    matches!(d.decompress_to_buffer(src, dst), Ok(n) if n == dst.len())
}

/// How an entry frame's payload holds its entry.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StoredEntry<'a> {
    /// The entry map in clear; the content is `map[content_at..]`.
    Plain {
        head: EntryHead,
        map: &'a [u8],
        content_at: usize,
    },
    /// The map's head in clear (`head_len` bytes) and the content as one
    /// zstd frame (`zstd`) declaring `content_len` bytes.
    Split {
        head: EntryHead,
        head_len: usize,
        zstd: &'a [u8],
        content_len: usize,
    },
    /// The whole map as one zstd frame ([`FLAG_ZSTD`]): it must be
    /// decompressed before anything in it can be read.
    Whole,
}

/// Classifies a good entry frame's payload without decompressing anything.
/// `None` when it is not a well-formed entry frame of this format (it is
/// then kept as an unknown frame).
#[inline(always)]
pub(crate) fn classify<'a>(v: &FrameView<'a>) -> Option<StoredEntry<'a>> {
    classify_like(v, &mut format::HeadLayout::default())
}

/// [`classify`], reading the entry head by the layout of the last one a
/// walk read (see [`format::decode_entry_head_like`]).
#[inline(always)]
pub(crate) fn classify_like<'a>(
    v: &FrameView<'a>,
    layout: &mut format::HeadLayout,
) -> Option<StoredEntry<'a>> {
    if v.kind != KIND_ENTRY {
        return None;
    }
    // One head decoder for both stored forms (it is inlined here).
    match v.flags {
        0 if v.content_len as usize == v.payload.len() => {}
        FLAG_ZSTD_CONTENT => {}
        FLAG_ZSTD => return Some(StoredEntry::Whole),
        _ => return None,
    }
    let (head, head_len, content_len) = format::decode_entry_head_like(v.payload, layout)?;
    match v.flags {
        0 => (v.payload.len() - head_len == content_len).then_some(StoredEntry::Plain {
            head,
            map: v.payload,
            content_at: head_len,
        }),
        _ => {
            if head_len.checked_add(content_len)? != v.content_len as usize {
                return None;
            }
            let zstd = &v.payload[head_len..];
            if crate::zstd_frame::sizes(zstd)
                != (crate::zstd_frame::Sizes::Frame {
                    content: content_len as u64,
                    compressed: zstd.len(),
                })
            {
                return None;
            }
            Some(StoredEntry::Split {
                head,
                head_len,
                zstd,
                content_len,
            })
        }
    }
}

/// Reads a good entry frame's head and content, decompressing into
/// `scratch` when the content is stored compressed. `None` when the frame is
/// not a well-formed entry frame or its payload does not decompress to its
/// declared size.
pub(crate) fn read_entry<'a>(
    v: &FrameView<'a>,
    dctx: &mut zstd::bulk::Decompressor<'static>,
    scratch: &'a mut Vec<u8>,
) -> Option<(EntryHead, &'a [u8])> {
    match classify(v)? {
        StoredEntry::Plain {
            head,
            map,
            content_at,
        } => Some((head, &map[content_at..])),
        StoredEntry::Split {
            head,
            zstd,
            content_len,
            ..
        } => {
            scratch.clear();
            scratch.resize(content_len, 0);
            decompress_into(dctx, zstd, scratch).then_some((head, &scratch[..]))
        }
        StoredEntry::Whole => {
            scratch.clear();
            scratch.resize(v.content_len as usize, 0);
            if !decompress_into(dctx, v.payload, scratch) {
                return None;
            }
            let (head, at, len) = format::decode_entry(scratch)?;
            Some((head, &scratch[at..at + len]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FLAG_ZSTD, SessionId};
    use crate::scan::Limits;
    use crate::session::Session;

    fn content() -> Vec<u8> {
        // One canonical CBOR text string of 8,010 compressible bytes.
        let text = "compressible tool output line\n".repeat(267);
        let mut c = Vec::new();
        format::cbor_head(&mut c, 3, text.len() as u64);
        c.extend_from_slice(text.as_bytes());
        c
    }

    fn map(content: &[u8]) -> Vec<u8> {
        let head = EntryHead {
            id: 1,
            parent: 0,
            timestamp_ms: 5,
            kind: 4,
            pairing: 9,
        };
        let mut m = Vec::new();
        format::encode_entry(&mut m, &head, content);
        m
    }

    #[test]
    fn large_content_is_stored_compressed_and_decoded_on_read() {
        let c = content();
        let m = map(&c);
        let mut file = format::encode_header(SessionId([1; 16]), 0).to_vec();
        Compressor::new()
            .expect("zstd")
            .frame(&mut file, KIND_ENTRY, 0, &m);
        assert_eq!(file[format::HEADER_LEN + 5], FLAG_ZSTD_CONTENT);
        assert!(file.len() < format::HEADER_LEN + m.len());
        let s = Session::load_bytes(&file, &Limits::default(), "t").expect("load");
        let r = s.records()[0];
        assert!(r.is_compressed());
        assert_eq!(s.report().compressed_entries, 1);
        assert!(
            (r.payload_len as usize) < c.len(),
            "kept compressed in the arena"
        );
        assert_eq!(s.content_plain(&r), None);
        assert_eq!(s.content_len(&r), c.len());
        let bump = bumpalo::Bump::new();
        assert_eq!(s.content_in(&r, &bump).expect("decode"), &c[..]);
        assert_eq!(&*s.content(&r).expect("decode"), &c[..]);
        let mut again = Vec::new();
        s.encode_file(&mut again).expect("encode");
        assert_eq!(again, file, "re-framed without recompression, same bytes");
    }

    #[test]
    fn files_written_with_the_previous_level_and_threshold_still_load() {
        // Until this build, content of 4096 bytes or more was compressed at
        // level 1. Two representative tool results: one compressed then but
        // stored as is now, one compressed by both settings.
        let mix = crate::bench_support::representative_entries(400);
        let pick = |lo: usize, hi: usize| {
            mix.iter()
                .map(|e| e.2.clone())
                .find(|c| c.len() >= lo && c.len() < hi)
                .expect("the mix has one")
        };
        let c = pick(4096, THRESHOLD);
        let m = map(&c);
        let mut old = format::encode_header(SessionId([1; 16]), 0).to_vec();
        Compressor::with_params(1, 4096)
            .expect("zstd")
            .frame(&mut old, KIND_ENTRY, 0, &m);
        assert_eq!(old[format::HEADER_LEN + 5], FLAG_ZSTD_CONTENT);
        let mut new = format::encode_header(SessionId([1; 16]), 0).to_vec();
        Compressor::new()
            .expect("zstd")
            .frame(&mut new, KIND_ENTRY, 0, &m);
        assert_eq!(new[format::HEADER_LEN + 5], 0, "below today's threshold");
        // Level 1 and today's level give different bytes for the same
        // content; both decode to it.
        let big = pick(THRESHOLD + 1024, usize::MAX);
        let bm = map(&big);
        let (mut old_big, mut new_big) = (Vec::new(), Vec::new());
        Compressor::with_params(1, 4096)
            .expect("zstd")
            .frame(&mut old_big, KIND_ENTRY, 0, &bm);
        Compressor::new()
            .expect("zstd")
            .frame(&mut new_big, KIND_ENTRY, 0, &bm);
        assert_ne!(old_big, new_big, "the level changed the stored bytes");
        old.extend_from_slice(&old_big);

        let s = Session::load_bytes(&old, &Limits::default(), "old").expect("load");
        assert_eq!(s.report().entries, 2);
        assert_eq!(s.report().compressed_entries, 2);
        assert_eq!(s.report().malformed_entries, 0);
        let recs = s.records();
        assert_eq!(&*s.content(&recs[0]).expect("decode"), &c[..]);
        assert_eq!(&*s.content(&recs[1]).expect("decode"), &big[..]);
        // Rewrites copy the old compressed frames as they are.
        let mut again = Vec::new();
        s.encode_file(&mut again).expect("encode");
        assert_eq!(again, old);
    }

    #[test]
    fn the_settings_compress_from_their_thresholds_and_read_alike() {
        assert_eq!(
            Compression::NAMES.map(|n| Compression::parse(n).map(Compression::name)),
            [Some("fast"), Some("small")]
        );
        assert_eq!(Compression::parse("Small"), None);
        assert_eq!(Compression::default(), Compression::Fast);
        assert_eq!(
            (Compression::Fast.level(), Compression::Fast.threshold()),
            (LEVEL, THRESHOLD)
        );
        assert_eq!(
            (Compression::Small.level(), Compression::Small.threshold()),
            (SMALL_LEVEL, SMALL_THRESHOLD)
        );
        let fast = Compressor::with(Compression::Fast).expect("zstd");
        let small = Compressor::with(Compression::Small).expect("zstd");
        assert!(fast.is(Compression::Fast) && !fast.is(Compression::Small));
        assert!(small.is(Compression::Small) && !small.is(Compression::Fast));
        // Content one byte under the small threshold, at it, and under the
        // fast one; each setting writes a file, and both read the same.
        let text = |n: usize| {
            let body = "compressible tool output line\n".repeat(n / 30 + 1);
            let mut c = Vec::new();
            // The text's CBOR head is 2 bytes below 256 bytes of text, 3 from it.
            let len = if n - 2 < 256 { n - 2 } else { n - 3 };
            format::cbor_head(&mut c, 3, len as u64);
            c.extend_from_slice(&body.as_bytes()[..len]);
            assert_eq!(c.len(), n);
            c
        };
        let contents = [
            text(SMALL_THRESHOLD - 1),
            text(SMALL_THRESHOLD),
            text(THRESHOLD - 1),
        ];
        let mut files = Vec::new();
        for c in [Compression::Fast, Compression::Small] {
            let mut comp = Compressor::with(c).expect("zstd");
            let mut file = format::encode_header(SessionId([1; 16]), 0).to_vec();
            for content in &contents {
                comp.frame(&mut file, KIND_ENTRY, 0, &map(content));
            }
            let s = Session::load_bytes(&file, &Limits::default(), "t").expect("load");
            let flags: Vec<bool> = s.records().iter().map(|r| r.is_compressed()).collect();
            assert_eq!(
                flags,
                [false, c == Compression::Small, c == Compression::Small],
                "{c:?}"
            );
            let read: Vec<Vec<u8>> = s
                .records()
                .iter()
                .map(|r| s.content(r).expect("decode").into_owned())
                .collect();
            assert_eq!(read, contents);
            files.push(file);
        }
        assert!(files[1].len() < files[0].len());
    }

    #[test]
    fn whole_payload_compressed_frames_still_load() {
        let c = content();
        let m = map(&c);
        let z = zstd::bulk::compress(&m, LEVEL).expect("compress");
        let mut file = format::encode_header(SessionId([1; 16]), 0).to_vec();
        format::encode_frame(&mut file, KIND_ENTRY, FLAG_ZSTD, m.len() as u32, 0, &z);
        let s = Session::load_bytes(&file, &Limits::default(), "t").expect("load");
        assert_eq!(s.report().entries, 1);
        assert_eq!(s.report().compressed_entries, 1);
        let r = s.records()[0];
        assert!(!r.is_compressed(), "decompressed on load to reach the head");
        assert_eq!(s.content_plain(&r), Some(&c[..]));
        assert_eq!((r.id, r.kind, r.pairing, r.timestamp_ms), (1, 4, 9, 5));
    }

    #[test]
    fn split_frames_with_inconsistent_sizes_are_not_entries() {
        let c = content();
        let m = map(&c);
        let mut good = Vec::new();
        Compressor::new()
            .expect("zstd")
            .frame(&mut good, KIND_ENTRY, 0, &m);
        let payload = &good[format::FRAME_PREFIX..good.len() - format::FRAME_SUFFIX];
        // content_len one short of head + content; and a truncated zstd frame.
        for (content_len, cut) in [(m.len() as u32 - 1, 0), (m.len() as u32, 1)] {
            let mut file = format::encode_header(SessionId([1; 16]), 0).to_vec();
            let p = &payload[..payload.len() - cut];
            format::encode_frame(&mut file, KIND_ENTRY, FLAG_ZSTD_CONTENT, content_len, 0, p);
            let s = Session::load_bytes(&file, &Limits::default(), "t").expect("load");
            assert_eq!(s.report().entries, 0);
            assert_eq!(s.report().malformed_entries, 1);
        }
    }
}
