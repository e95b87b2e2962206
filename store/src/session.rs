//! The in-memory session: an index arena.
//!
//! A [`Session`] holds a payload arena ([`Arena`]) with every entry's
//! stored payload, a table of fixed-size [`Record`]s in file order, and the
//! selected branch as its own contiguous `Vec<Record>` from root to leaf.
//! A session loaded from a file (on Unix) uses the file's read-only mapping
//! itself as the arena: loading checks every frame and builds records, but
//! copies no payload byte. Payloads that are not in that mapping (appended
//! later, decompressed from old whole-compressed frames, or built in memory)
//! go to one owned buffer addressed past the mapping's end. Loading
//! allocates a constant number of times whatever the entry count (one more
//! when the record table's size estimate proves wrong). Forks
//! share the arena (the owned part copy on write), so forking copies
//! records only. Content is never parsed on load; callers borrow it with
//! [`Session::content`] and decode it into their own scope.

use crate::compress::{self, StoredEntry};
use crate::entry::{EntryKind, ExternalEntry, NO_FRAME, NONE, RECORD_COMPRESSED, Record};
use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{
    self, EntryHead, FLAG_ZSTD, FLAG_ZSTD_CONTENT, FrameView, Header, KIND_ENTRY, KIND_ORIGIN,
    SessionId,
};
use crate::scan::{self, Limits, ScanReport};
use crate::tail;
use crate::window;

/// Where a forked or cloned session came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// The session it was forked or cloned from.
    pub session: SessionId,
    /// The selected leaf of that session at the time.
    pub leaf: u64,
}

/// What loading a session found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The frame walk's findings (good, corrupt, torn tail).
    pub scan: ScanReport,
    /// Entry frames loaded.
    pub entries: u64,
    /// Frames of kinds this build does not know (kept in the file untouched).
    pub unknown_frames: u64,
    /// Entry frames with a good checksum whose payload is not the canonical
    /// entry map (kept in the file untouched, not loaded).
    pub malformed_entries: u64,
    /// Entries whose parent is absent (lost to damage).
    pub orphans: u64,
    /// Stored payload bytes of entry frames (after compression).
    pub stored_bytes: u64,
    /// Payload bytes of entry frames after decompression.
    pub content_bytes: u64,
    /// Entry frames stored compressed.
    pub compressed_entries: u64,
    /// The file's length.
    pub file_len: u64,
}

/// A selected branch whose beginning was lost to damage (see
/// [`Session::broken_branch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokenBranch {
    /// The branch's first loaded entry, whose parent is missing.
    pub first: u64,
    /// The id of that missing parent.
    pub missing_parent: u64,
    /// Entries the branch still holds, from `first` to the selected leaf.
    pub kept: usize,
    /// The file offset of `first`'s frame (the damage lies before it).
    pub first_offset: u64,
    /// The newest entry appended before `first` whose whole history is
    /// present, if any.
    pub intact: Option<u64>,
    /// How many entries that intact history holds (0 without one).
    pub intact_len: usize,
}

/// The payload arena: one address space over two regions. Offsets below
/// the mapping's length address the session file's read-only mapping (the
/// stored payloads of the frames it was loaded from or has since appended
/// to it, in place); offsets from there on address the owned buffer
/// (payloads taken in from other writers, appended where the file could not
/// be mapped again, decompressed at load from whole-compressed frames, and
/// every payload of a session built in memory or loaded from a byte slice). Both parts are
/// shared by clones and forks; the owned part is copied on write.
#[derive(Debug, Clone)]
pub(crate) struct Arena {
    map: Option<std::sync::Arc<crate::helper::Mapping>>,
    owned: std::sync::Arc<Vec<u8>>,
    /// The identity of the file `map` maps, when it is the session's own
    /// file: an append to that same file can then map the longer file
    /// instead of copying what it wrote.
    pub(crate) file: Option<FileId>,
}

/// A file's identity (device and inode), so a mapping is only ever
/// extended over the very file it maps, never over one that replaced it.
pub(crate) type FileId = (u64, u64);

/// The identity of the file `m` describes; `None` where the platform has
/// no such notion (an append there always copies into the owned buffer).
pub(crate) fn file_id(m: &std::fs::Metadata) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

impl Arena {
    /// An arena with no mapping and an empty owned buffer.
    pub(crate) fn owned(owned: Vec<u8>) -> Self {
        Self {
            map: None,
            owned: std::sync::Arc::new(owned),
            file: None,
        }
    }

    /// An arena over the mapping of the session's own file `file`, with
    /// an empty owned buffer.
    pub(crate) fn mapped(
        map: std::sync::Arc<crate::helper::Mapping>,
        file: Option<FileId>,
    ) -> Self {
        Self {
            map: Some(map),
            owned: std::sync::Arc::new(Vec::new()),
            file,
        }
    }

    /// True when bytes appended to the file `id` can be addressed by
    /// mapping that file again: nothing is owned (owned bytes sit after
    /// the mapping, so a longer mapping would move them) and the current
    /// mapping, if any, is of that same file.
    pub(crate) fn can_extend_over(&self, id: FileId) -> bool {
        self.owned.is_empty() && (self.map.is_none() || self.file == Some(id))
    }

    /// Replaces the mapping with `map`, a mapping of the whole file `id`
    /// (see [`Arena::can_extend_over`]); the old mapping stays alive while
    /// a clone or a fork still holds it.
    pub(crate) fn extend_over(&mut self, map: memmap2::Mmap, id: FileId) {
        self.map = Some(std::sync::Arc::new(crate::helper::Mapping::new(map)));
        self.file = Some(id);
    }

    /// The length of the mapped region (0 without a mapping).
    pub(crate) fn base_len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// The logical end: where the next owned byte goes.
    pub(crate) fn len(&self) -> usize {
        self.base_len() + self.owned.len()
    }

    /// The owned buffer, copied first if a fork or clone shares it.
    pub(crate) fn owned_mut(&mut self) -> &mut Vec<u8> {
        std::sync::Arc::make_mut(&mut self.owned)
    }

    /// `len` bytes at logical offset `start`; empty when the range is not
    /// wholly inside one region (never the case for a record's range).
    pub(crate) fn get(&self, start: usize, len: usize) -> &[u8] {
        let base = self.base_len();
        let Some(end) = start.checked_add(len) else {
            return &[];
        };
        if end <= base {
            self.map
                .as_ref()
                .and_then(|m| m.get(start..end))
                .unwrap_or(&[])
        } else if start >= base {
            self.owned.get(start - base..end - base).unwrap_or(&[])
        } else {
            &[]
        }
    }
}

/// Where [`ingest`] puts an entry frame's stored payload.
pub(crate) struct Sink<'a> {
    /// The owned buffer; its byte `i` is at logical offset `base_len + i`.
    pub(crate) owned: &'a mut Vec<u8>,
    /// The arena's mapped length.
    pub(crate) base_len: usize,
    /// True when the frames being read are the arena's mapping itself, so
    /// payloads are addressed where they lie instead of copied.
    pub(crate) in_place: bool,
    /// The layout of the last entry head read (see
    /// [`format::decode_entry_head_like`]).
    pub(crate) layout: &'a mut format::HeadLayout,
}

/// What appending to a session's file reuses from one append to the next,
/// so a batch is assembled in memory the process already holds instead of
/// pages first touched (and cleared by the kernel) on every append. A clone
/// or a fork starts empty, and a buffer one large append grew past
/// [`Writer::KEEP`] is let go ([`Writer::trim`]).
#[derive(Default)]
pub(crate) struct Writer {
    /// The frames of the batch, written with one call.
    pub(crate) buf: Vec<u8>,
    /// One entry map at a time, before it is framed.
    pub(crate) map: Vec<u8>,
    /// The zstd context, made at the first append.
    pub(crate) comp: Option<compress::Compressor>,
}

impl Writer {
    /// The largest buffer kept between appends.
    pub(crate) const KEEP: usize = 4 << 20;

    /// Lets go of every buffer larger than [`Writer::KEEP`].
    pub(crate) fn trim(&mut self) {
        for b in [&mut self.buf, &mut self.map] {
            if b.capacity() > Self::KEEP {
                *b = Vec::new();
            }
        }
        if let Some(c) = &mut self.comp {
            c.trim(Self::KEEP);
        }
    }
}

impl Clone for Writer {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("buf_capacity", &self.buf.capacity())
            .field("comp", &self.comp.is_some())
            .finish()
    }
}

/// An in-memory session.
#[derive(Debug, Clone)]
pub struct Session {
    pub(crate) header: Header,
    pub(crate) origin: Option<Origin>,
    pub(crate) records: Vec<Record>,
    /// The payload arena: the file's mapping and an owned buffer, shared
    /// with forks (the owned buffer is copied when either side appends).
    pub(crate) payload: Arena,
    /// The selected branch when it is not the whole record table in order;
    /// empty while `linear` holds.
    pub(crate) branch: Vec<Record>,
    /// The selected branch is the whole record table in order (each record's
    /// parent the record before it): a one-line history, the usual case,
    /// keeps no second copy of its records.
    pub(crate) linear: bool,
    pub(crate) report: LoadReport,
    /// Bytes of the backing file reflected in memory (0 when in memory only).
    pub(crate) known_len: u64,
    pub(crate) path: Option<std::path::PathBuf>,
    /// The largest entry id in the session (0 when empty).
    pub(crate) max_id: u64,
    /// Reused between appends to the session's file.
    pub(crate) writer: Writer,
    /// The session was opened at its selected leaf
    /// ([`crate::SessionFile::open_at_leaf`]): the record table holds the
    /// newest part of the selected branch only, not the whole session.
    pub(crate) from_leaf: bool,
}

struct Counts {
    entries: usize,
    content: usize,
}

/// Adds a frame to the table sizes: entry frames take a record and, in the
/// owned buffer, their stored payload (whole-compressed ones their
/// decompressed size); read in place, only whole-compressed frames need
/// owned bytes.
fn count_frame(counts: &mut Counts, v: &FrameView<'_>, in_place: bool) {
    if v.kind == KIND_ENTRY {
        counts.entries += 1;
        counts.content += if v.flags == FLAG_ZSTD {
            v.content_len as usize
        } else if in_place {
            0
        } else {
            v.payload.len()
        };
    }
}

/// Follows the length fields from `start` to the end of `bytes` without
/// checksumming, sizing the tables. `None` unless every frame's two length
/// copies agree, the frames end exactly at the end of the file and every
/// frame is within `limits`.
fn prewalk(bytes: &[u8], start: usize, limits: &Limits, in_place: bool) -> Option<Counts> {
    let mut counts = Counts {
        entries: 0,
        content: 0,
    };
    let mut pos = start;
    while pos < bytes.len() {
        let total = frame_len_at(bytes, pos, limits)?;
        let v = format::frame_at_unchecked(bytes, pos);
        if v.content_len > limits.max_content_len {
            return None;
        }
        count_frame(&mut counts, &v, in_place);
        pos += total;
    }
    Some(counts)
}

/// The largest entry id of a record table and whether its history is one
/// line (each record's parent the record before it), gathered as the
/// records are written rather than in a pass of its own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) max_id: u64,
    pub(crate) linear: bool,
}

impl Shape {
    pub(crate) const EMPTY: Self = Self {
        max_id: 0,
        linear: true,
    };

    /// Adds the record at index `i` of the table.
    #[inline]
    pub(crate) fn add(&mut self, i: usize, r: &Record) {
        self.max_id = self.max_id.max(r.id);
        self.linear &= r.parent_index == i.wrapping_sub(1) as u32;
    }

    /// The shape of `records`, in one pass.
    fn of(records: &[Record]) -> Self {
        let mut s = Self::EMPTY;
        for (i, r) in records.iter().enumerate() {
            s.add(i, r);
        }
        s
    }
}

/// Why [`in_place_pass`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    /// A frame is damaged, torn or over the limits: the verifying reader
    /// decides what to recover and what to report.
    Verify,
    /// Every frame so far is intact, but one needs owned arena bytes (a
    /// whole-payload compressed frame) that an exact count must size: the
    /// two-pass load takes over.
    Exact,
}

/// File bytes whose frames are walked to size the record table before the
/// one pass (a file no longer than this is counted exactly).
const SAMPLE_BYTES: usize = 1 << 20;

/// Bytes of file per record, at most, that the record table's estimate
/// assumes beyond the sample: with 64-byte records, an eighth of the file.
/// Representative entries take about 1,150 bytes each; a file of entries
/// under 512 bytes on average is sized exactly once the estimate runs out.
const MAX_GUESS_DENSITY: usize = 512;

/// The frame at `pos`'s total length, when both copies of its body length
/// agree, it ends inside `bytes` and it is within `limits`; `None`
/// otherwise (the checks the verifying reader makes before a checksum).
#[inline]
pub(crate) fn frame_len_at(bytes: &[u8], pos: usize, limits: &Limits) -> Option<usize> {
    let total = declared_len(bytes, pos, limits)?;
    (format::read_u32(bytes, pos + total - 4) == total as u32 - 12).then_some(total)
}

/// The total length the frame at `pos` declares in its length prefix,
/// when that is within `limits` and the frame would end inside `bytes`;
/// `None` otherwise. Only the prefix is read.
#[inline]
fn declared_len(bytes: &[u8], pos: usize, limits: &Limits) -> Option<usize> {
    if bytes.len() - pos < format::MIN_FRAME {
        return None;
    }
    let body_len = format::read_u32(bytes, pos);
    if (body_len as usize) < format::BODY_FIXED || body_len > limits.max_frame_len {
        return None;
    }
    let total = body_len as usize + 12;
    (total <= bytes.len() - pos).then_some(total)
}

/// The frame at `pos`, when it is intact: both copies of its body length
/// agree, it ends inside `bytes`, it is within `limits` and its checksum
/// matches; `None` otherwise. The bytes are read in the order they lie in
/// the file (length, body, trailer), the order the hardware streams them
/// in: the trailer is compared only after the checksum has read up to it,
/// so no load reaches ahead of the stream and waits on memory.
#[inline]
pub(crate) fn intact_frame_at<'a>(
    bytes: &'a [u8],
    pos: usize,
    limits: &Limits,
) -> Option<FrameView<'a>> {
    let total = declared_len(bytes, pos, limits)?;
    let v = format::frame_at_unchecked(bytes, pos);
    let good = format::checksum_ok(&v)
        & (format::read_u32(bytes, pos + total - 4) == total as u32 - 12)
        & (v.content_len <= limits.max_content_len);
    good.then_some(v)
}

/// Entry frames from `pos` to the end of `bytes`, following the length
/// fields alone; `None` where the lengths do not chain to the end exactly.
fn count_entries(bytes: &[u8], mut pos: usize, limits: &Limits) -> Option<usize> {
    let mut n = 0;
    while pos < bytes.len() {
        let total = frame_len_at(bytes, pos, limits)?;
        n += usize::from(bytes[pos + 4] == KIND_ENTRY);
        pos += total;
    }
    Some(n)
}

/// How many records to allocate before the one pass: the entry frames in
/// the first [`SAMPLE_BYTES`] of frames (all of them in a smaller file,
/// exactly), and for the rest of the file that density extrapolated with
/// one eighth and 64 records of slack, but never more than one record per
/// [`MAX_GUESS_DENSITY`] bytes of the rest, so that a wrong guess never
/// reserves more than an eighth of the file's size in records. `None` when
/// the sampled frames' lengths do not chain.
fn estimate_entries(bytes: &[u8], start: usize, limits: &Limits) -> Option<usize> {
    let stop = start.saturating_add(SAMPLE_BYTES).min(bytes.len());
    let (mut pos, mut n) = (start, 0usize);
    while pos < stop {
        let total = frame_len_at(bytes, pos, limits)?;
        n += usize::from(bytes[pos + 4] == KIND_ENTRY);
        pos += total;
    }
    let rest = bytes.len() - pos;
    if rest == 0 {
        return Some(n);
    }
    let sampled = (pos - start) as u128;
    let scaled = (n as u128 * rest as u128 * 9).div_ceil(sampled * 8);
    let most = rest / MAX_GUESS_DENSITY;
    Some(
        n + usize::try_from(scaled)
            .unwrap_or(usize::MAX)
            .saturating_add(64)
            .min(most),
    )
}

/// The load of a whole mapped file in one pass: each frame's lengths and
/// checksum are checked and its record is built as its bytes stream by.
/// The record table is allocated once at [`estimate_entries`]' size; when
/// that proves short, the rest of the file's lengths are walked and the
/// table grows once to the exact size, and when it proves more than a
/// quarter too large the table is shrunk to fit, so the table is never
/// over-reserved by more than a quarter and a load allocates at most one
/// time more than for a file whose estimate holds (the estimate holds for
/// files whose entries are about as large at the end as at the start).
///
/// With `file` (the mapped file itself), frames are read through a small
/// buffer rather than through the mapping (see [`window`]): the load maps
/// no page and the session's payload pages are mapped only when read.
///
/// A file of [`tail::PARALLEL_MIN`] bytes or more (or the threshold a test
/// set), loaded by a thread that may run on two CPUs, is walked in two
/// parts at once: a second thread finds a frame start near the middle and
/// checks the frames from there to the end, building their records above
/// this thread's share of the table (see [`tail`]); this thread checks the
/// frames before it and joins the two parts when its walk lands where the
/// worker started. The thread done first takes the end of the other's part
/// (see [`tail::Fence`]), and its walk of it joins when it begins where
/// the other stopped and ends where the next part begins. When a walk does
/// not join, this thread walks that part itself; when a part of the table
/// fills, the walk stops there and this thread goes on from it alone.
fn in_place_pass(
    bytes: &[u8],
    file: Option<&std::fs::File>,
    start: usize,
    limits: &Limits,
    report: &mut LoadReport,
    origin: &mut Option<Origin>,
) -> std::result::Result<(Vec<Record>, Shape), Fallback> {
    let estimate = estimate_entries(bytes, start, limits).ok_or(Fallback::Verify)?;
    let len = bytes.len();
    // The worker takes the frames from `floor` on and the table's slots
    // from `limit` up; this thread those before.
    let parallel = len >= tail::parallel_min() && len > start && tail::two_cpus();
    // On two threads, this thread's share of the table has room for the
    // records of a part it may take from the end of the file (see
    // `steal_from`): an eighth of the table more, which keeps the table
    // within a quarter of its records, so no shrink follows when the
    // estimate holds.
    let extra = if parallel { estimate / 9 } else { 0 };
    let mut records: Vec<Record> = table_with_capacity(estimate + extra);
    let mut layout = format::HeadLayout::default();
    let mut frames = 0u64;
    let mut pos = start;
    let cap = records.capacity();
    // Frames are read through a buffer (`pread`) when the caller gave the
    // file, which it does unless the page cache holds much of the file in
    // huge pages, whose mapping costs a page fault per 2 MiB: then they are
    // read in place (see [`crate::window`]).
    let share = if file.is_some() {
        tail::WORKER_SHARE_64THS
    } else {
        tail::WORKER_SHARE_MAPPED_64THS
    };
    // The table: this thread's records from 0 up to `own`, a pool of
    // `extra` slots up to `limit` for a part either thread takes from the
    // other's end (see `tail::Fence`), the worker's records from there.
    let (floor, own, limit) = if parallel {
        let floor = start + (len - start) / 64 * (64 - share);
        let share = ((cap - extra) as u128 * (floor - start) as u128) / (len - start) as u128;
        let own = usize::try_from(share).unwrap_or(cap).min(cap - extra);
        (floor, own, own + extra)
    } else {
        (len, cap, cap)
    };
    // This thread's read buffer, on its stack (the worker has its own):
    // no allocation, so a load allocates the same whichever way it reads.
    let mut buf;
    let mut window = match file {
        Some(file) => {
            buf = [0u8; window::BUFFER];
            let each = window::BUFFER.min(len);
            Some(window::Window::new(file, bytes, &mut buf[..each]))
        }
        None => None,
    };
    // Who walks which chunks past the split point (the worker claims, this
    // thread may take the end), and before it (this thread claims, the
    // worker may take the end): see `tail::Fence`.
    let fence = tail::Fence::new();
    let help = tail::Fence::new();
    // A test's forced takes: the end of the file is this thread's, or the
    // end of this thread's part the worker's, from the start, whatever the
    // two threads' pace.
    let two = floor < len && limit < cap;
    let (forced, help_forced) = match tail::forced_take() {
        Some((at, help_at)) if two => {
            if at > 0 {
                let at = floor + ((len - floor) as u128 * at as u128 / 64) as usize;
                fence.take_from(tail::chunk_of(at).max(tail::chunk_of(floor)) + 1);
            }
            if help_at > 0 {
                let at = start + ((floor - start) as u128 * help_at as u128 / 64) as usize;
                help.take_from(tail::chunk_of(at) + 1);
            }
            (at > 0, help_at > 0)
        }
        _ => (false, false),
    };
    let mut slot = tail::JobSlot::new(
        bytes,
        file,
        start,
        floor,
        limits,
        records.as_mut_ptr().wrapping_add(limit),
        cap - limit,
        Some(&fence),
    )
    .with_help(
        &help,
        help_forced,
        records.as_mut_ptr().wrapping_add(own),
        extra,
    );
    let mut worker = if two {
        tail::Tail::spawn(&mut slot)
    } else {
        None
    };
    // The end of the chunks of its part this thread has claimed (see
    // `help`); once the worker is joined, it claims no more.
    let mut claimed_end = 0;
    // The worker's walk, done, when this thread could not join it yet (it
    // joins it on reaching the worker's part).
    let mut done: Option<tail::Part> = None;
    // The records' shape, gathered as they are written.
    let mut shape = Shape::EMPTY;
    while pos < len {
        if pos < floor && pos >= claimed_end && worker.is_some() {
            let chunk = tail::chunk_of(pos);
            if help.claim(chunk) {
                claimed_end = (chunk as usize + 1).saturating_mul(tail::chunk());
            } else if let Some(w) = worker.take() {
                // The worker, done with its own part, took the rest of this
                // one from here. Its walk of it joins if it began where
                // this thread stops: all three parts when it ended where the
                // worker's own began; when it ended early (the pool of
                // slots it writes to filled), this thread walks on from
                // there up to the worker's part, and joins that then.
                claimed_end = usize::MAX;
                let (part, second) = w.join();
                let whole = matches!(part.outcome, tail::Outcome::Met(_)) && part.end == len;
                let second = second.filter(|t| {
                    whole
                        && matches!(t.outcome,
                            tail::Outcome::Met(f) | tail::Outcome::Full(f) if f == pos)
                });
                if let Some(t) = second {
                    let all = t.outcome == tail::Outcome::Met(pos)
                        && part.outcome == tail::Outcome::Met(t.end);
                    let parts = [(own, &t), (limit, &part)];
                    let parts = &parts[..1 + usize::from(all)];
                    if join_parts(&mut records, cap, limit, bytes, parts, report, &mut shape) {
                        tail::HELPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if origin.is_none() {
                            *origin = t.origin;
                        }
                        frames += t.frames;
                        pos = t.end;
                        if all {
                            tail::JOINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if origin.is_none() {
                                *origin = part.origin;
                            }
                            frames += part.frames;
                            break;
                        }
                    }
                }
                done = Some(part);
                continue;
            }
        }
        if pos >= floor && (worker.is_some() || done.is_some()) {
            // This thread's part is done. When the worker is still far from
            // the end (its core shared with something else), this thread
            // takes the end of the file from it instead of waiting, and
            // walks that part as the worker walks its own.
            let mut taken = None;
            let part = match worker.take() {
                Some(w) => {
                    let from = if forced {
                        Some((fence.taken() as usize).saturating_mul(tail::chunk()))
                            .filter(|&f| f < len)
                    } else if !fence.finished() {
                        steal_from(&fence, start, floor, len)
                    } else {
                        None
                    };
                    if let Some(from) = from {
                        let mut job = tail::JobSlot::new(
                            bytes,
                            file,
                            start,
                            from,
                            limits,
                            records.as_mut_ptr().wrapping_add(records.len()),
                            limit - records.len(),
                            None,
                        );
                        taken = Some(job.walk_here());
                    }
                    w.join().0
                }
                None => done.take().unwrap_or(tail::Part::empty()),
            };
            claimed_end = usize::MAX;
            match part.outcome {
                tail::Outcome::Met(met) | tail::Outcome::Full(met) if met == pos => {
                    // The part taken joins if it starts exactly where the
                    // worker stopped and fits after the worker's records;
                    // otherwise this thread walks it again, alone. Either
                    // walk may have ended early (its share of the table
                    // full): this thread then walks on from where the
                    // joined ones ended.
                    let a = records.len();
                    let taken = taken.filter(|t| {
                        part.end < len
                            && matches!(t.outcome,
                                tail::Outcome::Met(f) | tail::Outcome::Full(f) if f == part.end)
                            && a + t.written <= limit
                            && limit + part.written + t.written <= cap
                    });
                    if let Some(t) = &taken {
                        // Out of the way of the worker's records, which move
                        // down over where it lies.
                        let base = records.as_mut_ptr();
                        // SAFETY: the part taken wrote `t.written`
                        // initialised records at `a .. a + t.written`, at or
                        // below `limit`; they are copied to just after the
                        // worker's, inside the allocation (checked above),
                        // which nothing holds: the ranges do not overlap.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                base.add(a),
                                base.add(limit + part.written),
                                t.written,
                            );
                        }
                    }
                    let moved = (limit + part.written, taken.as_ref().unwrap_or(&part));
                    let parts = [(limit, &part), moved];
                    let parts = &parts[..1 + usize::from(taken.is_some())];
                    if !join_parts(&mut records, cap, limit, bytes, parts, report, &mut shape) {
                        return Err(Fallback::Verify);
                    }
                    tail::JOINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if taken.is_some() {
                        tail::TAKES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    if origin.is_none() {
                        *origin = part.origin.or(taken.and_then(|t| t.origin));
                    }
                    frames += part.frames + taken.map_or(0, |t| t.frames);
                    pos = taken.map_or(part.end, |t| t.end);
                    if pos == len {
                        break;
                    }
                    continue;
                }
                // The walks did not meet (the worker started inside a
                // payload), or the worker stopped at a frame it could not
                // take: damaged, or whole compressed, or either only seen
                // from a false start. This thread checks the rest itself,
                // and decides.
                tail::Outcome::Met(_)
                | tail::Outcome::Full(_)
                | tail::Outcome::Damaged
                | tail::Outcome::Exact => {}
            }
        }
        let v = match &mut window {
            Some(w) => w.intact_frame(pos, limits),
            None => intact_frame_at(bytes, pos, limits),
        };
        let v = v.ok_or(Fallback::Verify)?;
        let total = v.raw.len();
        if v.kind == KIND_ENTRY {
            if v.flags == FLAG_ZSTD {
                return Err(Fallback::Exact);
            }
            if (worker.is_some() && records.len() == own)
                || (done.is_some() && records.len() == limit)
            {
                // This thread's share of the table is full (with the pool,
                // once the worker is done and left nothing there that joins):
                // stop the worker at its next chunk, drop its records and go
                // on alone.
                fence.take_from(0);
                worker = None;
                done = None;
                claimed_end = usize::MAX;
            }
            if records.len() == records.capacity() {
                let rest = count_entries(bytes, pos, limits).ok_or(Fallback::Verify)?;
                records.reserve_exact(rest);
            }
        }
        frames += 1;
        pos += total;
        if v.kind != KIND_ENTRY {
            if v.kind == KIND_ORIGIN {
                if origin.is_none() {
                    *origin = format::decode_origin(v.payload)
                        .map(|(session, leaf)| Origin { session, leaf });
                }
            } else {
                report.unknown_frames += 1;
            }
            continue;
        }
        // An entry frame read in place (plain, or its content compressed):
        // its record, built as the worker builds its own, straight into the
        // table (which has room: ensured above).
        let n = records.len();
        let Some(slot) = records.spare_capacity_mut().first_mut() else {
            return Err(Fallback::Verify);
        };
        if !in_place_record_into(&v, report, &mut layout, slot) {
            continue;
        }
        // SAFETY: the slot at `n` was initialised just now.
        unsafe { records.set_len(n + 1) };
        let (below, new) = records.split_at_mut(n);
        let r = &mut new[0];
        r.parent_index = resolve_parent_id(below, r.parent, v.offset, v.link);
        if r.parent_index == NONE && r.parent != 0 {
            report.orphans += 1;
        }
        shape.add(n, r);
    }
    drop(worker);
    // The pool of a two-thread load does not count against the estimate.
    if records.capacity() - records.len() > records.len() / 4 + 1024 + extra {
        records.shrink_to_fit();
    }
    report.scan = ScanReport {
        frames,
        valid_end: len as u64,
        ..ScanReport::default()
    };
    Ok((records, shape))
}

/// Where this thread, done with its own part of the file (`floor - start`
/// bytes), takes the end of the file from the worker: as much as it would
/// walk in the time the worker needs for the rest at the pace each kept so
/// far (the worker's measured by the chunks it claimed), so that both end
/// at once, from a chunk boundary past `floor`. `None` when that is under
/// two chunks, or the worker claimed it first. (Its walk writes records
/// into this thread's spare slots; should they fill, this thread goes on
/// from there in its own walk: the part is this thread's either way.)
fn steal_from(fence: &tail::Fence, start: usize, floor: usize, len: usize) -> Option<usize> {
    let claimed = (fence.claimed() as usize)
        .saturating_mul(tail::chunk())
        .clamp(floor, len);
    let rest = (len - claimed) as u128;
    let (mine, theirs) = ((floor - start) as u128, (claimed - floor) as u128);
    let take = usize::try_from(rest * mine / (mine + theirs).max(1)).unwrap_or(0);
    if take < 2 * tail::chunk() {
        return None;
    }
    let want = tail::chunk_of(len - take).max(tail::chunk_of(floor)) + 1;
    let from = (fence.take_from(want) as usize).saturating_mul(tail::chunk());
    (from < len).then_some(from)
}

/// Moves the records of walks that joined this thread's, `parts` in file
/// order (each one's records at the index given with it, in this table's
/// spare capacity), down to follow this thread's records and one another,
/// resolves the parents they left pending, shifts the parent indices they
/// resolved among their own records, and adds their counts to `report`;
/// `false` (nothing changed) when they do not lie where this requires.
///
/// Records are moved one at a time, in order, each read before any write
/// that could reach it: every part lies at or above where it goes, and
/// none lies below where an earlier part goes (the callers place them so;
/// checked here because the copies must stay inside the allocation).
fn join_parts(
    records: &mut Vec<Record>,
    cap: usize,
    limit: usize,
    bytes: &[u8],
    parts: &[(usize, &tail::Part)],
    report: &mut LoadReport,
    shape: &mut Shape,
) -> bool {
    let a = records.len();
    if records.capacity() != cap || a > limit {
        return false;
    }
    let mut to = a;
    for (k, &(from, part)) in parts.iter().enumerate() {
        let n = part.written;
        // Inside the allocation, at or above where it goes, and where it
        // goes clear of every later part.
        let clear = parts[k + 1..]
            .iter()
            .all(|&(f, p)| p.written == 0 || f >= to + n || f + p.written <= to);
        if n > 0 && (from < to || from + n > cap || !clear) {
            return false;
        }
        to += n;
    }
    let base = records.as_mut_ptr();
    let mut at = a;
    for &(from, part) in parts {
        let first = at;
        for i in 0..part.written {
            // SAFETY: the walk wrote `part.written` initialised records at
            // `from ..`, inside this table's allocation (capacity `cap`,
            // unchanged since; checked above). Each is read before the
            // record written at `at <= from + i` can overwrite it (records
            // move down, in order, and no part lies below where an earlier
            // one goes), and the `at` records below it are initialised when
            // it is resolved.
            let mut r = unsafe { base.add(from + i).read() };
            r.parent_index = match r.parent_index {
                NONE => NONE,
                tail::PARENT_PENDING => {
                    let link = format::read_u64(bytes, r.frame_offset as usize + 12);
                    // SAFETY: see above.
                    let below = unsafe { std::slice::from_raw_parts(base, at) };
                    let p = resolve_parent_id(below, r.parent, r.frame_offset, link);
                    if p == NONE {
                        report.orphans += 1;
                    }
                    p
                }
                // An index among its own walk's records.
                mine => mine + first as u32,
            };
            shape.add(at, &r);
            // SAFETY: `at < to <= cap`, inside the allocation.
            unsafe { base.add(at).write(r) };
            at += 1;
        }
        let t = &part.report;
        report.entries += t.entries;
        report.unknown_frames += t.unknown_frames;
        report.malformed_entries += t.malformed_entries;
        report.orphans += t.orphans;
        report.stored_bytes += t.stored_bytes;
        report.content_bytes += t.content_bytes;
        report.compressed_entries += t.compressed_entries;
    }
    // SAFETY: `at` records are initialised (the loop above).
    unsafe { records.set_len(at) };
    true
}

/// [`in_place_record`] written into `out` (`true`; `false` when it built
/// none, `out` untouched). The usual frame, an uncompressed entry whose
/// head is laid out like the last one read, is built here field by field
/// straight into `out`; anything else takes [`in_place_record`] out of line.
/// (Built into a value first, the record and the head went through the
/// stack and were read back in wider pieces than they were written, which
/// the processor cannot forward from its store buffer: a stall per frame.)
#[inline(always)]
pub(crate) fn in_place_record_into(
    v: &FrameView<'_>,
    report: &mut LoadReport,
    layout: &mut format::HeadLayout,
    out: &mut std::mem::MaybeUninit<Record>,
) -> bool {
    if v.kind == KIND_ENTRY
        && v.flags == 0
        && v.content_len as usize == v.payload.len()
        && let Some(block) = v.payload.first_chunk::<{ format::FAST_HEAD_INPUT }>()
        && let Some((head, c_at, c_len)) = format::head_at_layout(block, layout)
        && v.payload.len() - c_at == c_len
    {
        report.stored_bytes += v.payload.len() as u64;
        report.content_bytes += u64::from(v.content_len);
        report.entries += 1;
        out.write(Record {
            id: head.id,
            parent: head.parent,
            timestamp_ms: head.timestamp_ms,
            pairing: head.pairing,
            frame_offset: v.offset,
            payload_offset: (v.offset as usize + format::FRAME_PREFIX + c_at) as u64,
            payload_len: c_len as u32,
            kind: head.kind,
            parent_index: NONE,
            head_len: c_at as u16,
            flags: 0,
        });
        return true;
    }
    in_place_record_slow(v, report, layout, out)
}

/// [`in_place_record_into`] for every other frame.
#[cold]
#[inline(never)]
fn in_place_record_slow(
    v: &FrameView<'_>,
    report: &mut LoadReport,
    layout: &mut format::HeadLayout,
    out: &mut std::mem::MaybeUninit<Record>,
) -> bool {
    match in_place_record(v, report, layout) {
        Some(r) => {
            out.write(r);
            true
        }
        None => false,
    }
}

/// The record of an entry frame read in place (stored uncompressed or with
/// its content compressed), its parent not yet resolved (`parent_index` is
/// [`NONE`]), counting it in `report`; `None` (counted as malformed) when
/// the payload is not an entry map.
pub(crate) fn in_place_record(
    v: &FrameView<'_>,
    report: &mut LoadReport,
    layout: &mut format::HeadLayout,
) -> Option<Record> {
    let (head, c_at, c_len, flags) = match compress::classify_like(v, layout) {
        Some(StoredEntry::Plain {
            head, content_at, ..
        }) => (head, content_at, v.payload.len() - content_at, 0),
        Some(StoredEntry::Split { head, head_len, .. }) => {
            report.compressed_entries += 1;
            (
                head,
                head_len,
                v.payload.len() - head_len,
                RECORD_COMPRESSED,
            )
        }
        Some(StoredEntry::Whole) | None => {
            report.malformed_entries += 1;
            return None;
        }
    };
    report.stored_bytes += v.payload.len() as u64;
    report.content_bytes += u64::from(v.content_len);
    report.entries += 1;
    Some(Record {
        id: head.id,
        parent: head.parent,
        timestamp_ms: head.timestamp_ms,
        pairing: head.pairing,
        frame_offset: v.offset,
        payload_offset: (v.offset as usize + format::FRAME_PREFIX + c_at) as u64,
        payload_len: c_len as u32,
        kind: head.kind,
        parent_index: NONE,
        head_len: c_at as u16,
        flags,
    })
}

/// A table of `n` `T`s, allocated once; on Linux, when it is large, its
/// pages are requested as transparent huge pages, so that filling it takes a
/// few page faults per 2 MiB instead of one per 4 KiB.
fn table_with_capacity<T>(n: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    advise_huge(
        v.as_ptr().cast::<u8>(),
        n.saturating_mul(std::mem::size_of::<T>()),
    );
    v
}

/// Asks for transparent huge pages over the whole 2 MiB pages inside the
/// `len` bytes at `p`, when there are any (at least 4 MiB). Advice only:
/// failure (e.g. huge pages disabled) changes nothing but speed.
#[cfg(target_os = "linux")]
fn advise_huge(p: *const u8, len: usize) {
    if len < 4 << 20 {
        return;
    }
    let p = p as usize;
    let lo = (p + (2 << 20) - 1) & !((2 << 20) - 1);
    let hi = (p + len) & !((2 << 20) - 1);
    if hi > lo {
        // SAFETY: [lo, hi) lies inside an allocation the caller owns;
        // madvise with MADV_HUGEPAGE changes only how its pages are backed.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
    }
}

/// The payload arena: allocated once at its final size. On Linux its pages
/// are requested as transparent huge pages, so that filling it takes a
/// few hundred page faults per GiB instead of a quarter million.
fn arena_with_capacity(n: usize) -> Vec<u8> {
    table_with_capacity(n)
}

impl Session {
    /// An empty session that lives only in memory.
    pub fn in_memory(id: SessionId, created_ms: u64) -> Self {
        Self {
            header: Header {
                id,
                created_ms,
                header_len: format::HEADER_LEN as u32,
            },
            origin: None,
            records: Vec::new(),
            payload: Arena::owned(Vec::new()),
            branch: Vec::new(),
            linear: true,
            report: LoadReport::default(),
            known_len: 0,
            path: None,
            max_id: 0,
            writer: Writer::default(),
            from_leaf: false,
        }
    }

    /// Loads a whole session from a file's bytes, copying every entry's
    /// stored payload into the session's own arena.
    ///
    /// Content is copied, never parsed. Allocates exactly three times (record
    /// table, payload arena, its shared handle) whatever the number of
    /// entries, and once more for the selected branch of a history that
    /// branches (a one-line history's branch is its record table).
    /// [`crate::SessionFile::load`] copies nothing: its session's arena is
    /// the file's mapping.
    ///
    /// # Errors
    /// Header errors, and the frame reader's errors (see [`scan::scan`]).
    pub fn load_bytes(bytes: &[u8], limits: &Limits, what: &str) -> Result<Self> {
        Self::load_from(bytes, None, None, limits, what)
    }

    /// Loads a whole session from `bytes`. With `map` (whose bytes `bytes`
    /// must be), the arena is that mapping and payloads are addressed in
    /// place; without, they are copied into an owned arena.
    pub(crate) fn load_from(
        bytes: &[u8],
        map: Option<&std::sync::Arc<crate::helper::Mapping>>,
        file: Option<&std::fs::File>,
        limits: &Limits,
        what: &str,
    ) -> Result<Self> {
        let in_place = map.is_some();
        let base_len = if in_place { bytes.len() } else { 0 };
        let header = format::decode_header(bytes, what)?;
        let start = header.header_len as usize;
        let mut report = LoadReport {
            file_len: bytes.len() as u64,
            ..LoadReport::default()
        };
        let mut origin = None;
        let mut dctx = None;
        let mut layout = format::HeadLayout::default();
        // Fast paths. Read in place, one pass checks every frame's lengths
        // and checksum and builds its record while its bytes stream through
        // the cache; the record table is sized from the first frames
        // (`in_place_pass`). Copying, a walk over the length fields sizes
        // both tables exactly first, then one pass verifies and copies.
        // Anything unusual (damage, a torn tail, sizes over the limits)
        // falls back to the verifying reader.
        let mut exact = !in_place;
        let fast = if in_place {
            match in_place_pass(bytes, file, start, limits, &mut report, &mut origin) {
                Ok((records, shape)) => Some((records, Vec::new(), Some(shape))),
                Err(fallback) => {
                    report = LoadReport {
                        file_len: bytes.len() as u64,
                        ..LoadReport::default()
                    };
                    origin = None;
                    exact = fallback == Fallback::Exact;
                    None
                }
            }
        } else {
            None
        };
        let fast = match fast {
            Some(t) => Some(t),
            None if !exact => None,
            None => match prewalk(bytes, start, limits, in_place) {
                Some(counts) => {
                    let mut records: Vec<Record> = Vec::with_capacity(counts.entries);
                    let mut payload: Vec<u8> = arena_with_capacity(counts.content);
                    let mut frames = 0u64;
                    let mut pos = start;
                    let mut intact = true;
                    while pos < bytes.len() {
                        let v = format::frame_at_unchecked(bytes, pos);
                        if !format::checksum_ok(&v) {
                            intact = false;
                            break;
                        }
                        ingest(
                            &mut records,
                            &mut Sink {
                                owned: &mut payload,
                                base_len,
                                in_place,
                                layout: &mut layout,
                            },
                            &mut report,
                            &mut origin,
                            &mut dctx,
                            &v,
                        );
                        frames += 1;
                        pos += v.raw.len();
                    }
                    if intact {
                        report.scan = ScanReport {
                            frames,
                            valid_end: bytes.len() as u64,
                            ..ScanReport::default()
                        };
                        Some((records, payload, None))
                    } else {
                        report = LoadReport {
                            file_len: bytes.len() as u64,
                            ..LoadReport::default()
                        };
                        origin = None;
                        None
                    }
                }
                None => None,
            },
        };
        let (records, payload, shape) = match fast {
            Some(t) => t,
            None => {
                // Pass 1: count, so that pass 2 allocates exactly once per table.
                let mut counts = Counts {
                    entries: 0,
                    content: 0,
                };
                let first = scan::scan(bytes, start, limits, what, |v| {
                    count_frame(&mut counts, &v, in_place);
                    Ok(())
                })?;
                let mut records: Vec<Record> = Vec::with_capacity(counts.entries);
                let mut payload: Vec<u8> = arena_with_capacity(counts.content);
                // Pass 2 copies what pass 1 verified. When pass 1 found
                // every frame intact, the same immutable bytes need not be
                // checksummed again.
                report.scan = if first.corrupt_skipped == 0 && first.resynced_bytes == 0 {
                    scan::walk_verified(bytes, start, first.valid_end, |v| {
                        ingest(
                            &mut records,
                            &mut Sink {
                                owned: &mut payload,
                                base_len,
                                in_place,
                                layout: &mut layout,
                            },
                            &mut report,
                            &mut origin,
                            &mut dctx,
                            &v,
                        );
                    });
                    first
                } else {
                    scan::scan(bytes, start, limits, what, |v| {
                        ingest(
                            &mut records,
                            &mut Sink {
                                owned: &mut payload,
                                base_len,
                                in_place,
                                layout: &mut layout,
                            },
                            &mut report,
                            &mut origin,
                            &mut dctx,
                            &v,
                        );
                        Ok(())
                    })?
                };
                (records, payload, None)
            }
        };
        let mut s = Self {
            header,
            origin,
            records,
            payload: Arena {
                map: map.cloned(),
                owned: std::sync::Arc::new(payload),
                file: None,
            },
            branch: Vec::new(),
            linear: false,
            report,
            known_len: report.scan.valid_end,
            path: None,
            max_id: 0,
            writer: Writer::default(),
            from_leaf: false,
        };
        // The largest id, and whether the history is one line (each
        // record's parent the record before it), whose selected branch is
        // then the whole table itself: gathered by the one-pass load as it
        // wrote the records, or found here in one streaming pass.
        let shape = shape.unwrap_or_else(|| Shape::of(&s.records));
        s.max_id = shape.max_id;
        if shape.linear {
            s.linear = true;
        } else {
            s.rebuild_branch();
        }
        Ok(s)
    }

    /// An in-memory session initialised from externally managed entries,
    /// keeping their order and ids.
    ///
    /// # Errors
    /// `Invalid` when an id is zero or repeated, or a parent does not precede
    /// its child.
    pub fn from_external(
        id: SessionId,
        created_ms: u64,
        entries: &[ExternalEntry<'_>],
    ) -> Result<Self> {
        let mut s = Self::in_memory(id, created_ms);
        let total: usize = entries.iter().map(|e| e.content.len() + 48).sum();
        s.records.reserve_exact(entries.len());
        s.payload.owned_mut().reserve_exact(total);
        for e in entries {
            let head = EntryHead {
                id: e.id,
                parent: e.parent,
                timestamp_ms: e.timestamp_ms,
                kind: e.kind.code(),
                pairing: e.pairing,
            };
            s.push_entry(&head, e.content, NO_FRAME)?;
        }
        s.rebuild_branch();
        Ok(s)
    }

    /// Adds one entry to the arena and record table (not to any file).
    pub(crate) fn push_entry(
        &mut self,
        head: &EntryHead,
        content: &[u8],
        frame_offset: u64,
    ) -> Result<&Record> {
        let parent_index = self.new_entry_parent(head)?;
        let at = self.payload.len();
        let payload = self.payload.owned_mut();
        let before = payload.len();
        format::encode_entry(payload, head, content);
        let head_len = payload.len() - before - content.len();
        Ok(self.push_record(Record {
            id: head.id,
            parent: head.parent,
            timestamp_ms: head.timestamp_ms,
            pairing: head.pairing,
            frame_offset,
            payload_offset: (at + head_len) as u64,
            payload_len: content.len() as u32,
            kind: head.kind,
            parent_index,
            head_len: head_len as u16,
            flags: 0,
        }))
    }

    /// Adds a record whose stored payload the caller has placed (or is
    /// about to place) in the arena, and counts it.
    pub(crate) fn push_record(&mut self, r: Record) -> &Record {
        self.records.push(r);
        self.report.entries += 1;
        self.max_id = self.max_id.max(r.id);
        let idx = self.records.len() - 1;
        &self.records[idx]
    }

    /// Checks that a new entry's id is unused and non-zero and that its
    /// parent is an earlier entry; returns the parent's record index
    /// ([`NONE`] for a root).
    pub(crate) fn new_entry_parent(&self, head: &EntryHead) -> Result<u32> {
        if head.id == 0 || (head.id <= self.max_id && self.find(head.id).is_some()) {
            return Err(StoreError::new(
                ErrorKind::Invalid,
                format!(
                    "entry id {} is zero or already used in session {}; entry ids must be unique and non-zero",
                    head.id, self.header.id
                ),
            ));
        }
        let parent_index = if head.parent == 0 {
            NONE
        } else {
            match self.find(head.parent) {
                Some(i) => i as u32,
                None => {
                    return Err(StoreError::new(
                        ErrorKind::Invalid,
                        format!(
                            "entry {} names parent {}, which is not an earlier entry of session {}; append the parent first or use 0 for a root",
                            head.id, head.parent, self.header.id
                        ),
                    ));
                }
            }
        };
        Ok(parent_index)
    }

    /// The record index of entry `id`, searching from the newest entry (parents
    /// are almost always recent).
    pub fn find(&self, id: u64) -> Option<usize> {
        self.records.iter().rposition(|r| r.id == id)
    }

    /// Brings the selected branch up to date after records from index
    /// `from` on were appended: each new record whose parent is the current
    /// leaf (or a root, on an empty branch) extends the branch in place, so
    /// an append costs the size of the batch, not of the history; any other
    /// record (a leaf switch, a branch off an older entry) rebuilds it.
    pub(crate) fn extend_branch(&mut self, from: usize) {
        if self.linear {
            // Still one line while each new record's parent is the record
            // before it.
            let one_line = (from..self.records.len())
                .all(|i| self.records[i].parent_index == i.wrapping_sub(1) as u32);
            if !one_line {
                self.rebuild_branch();
            }
            return;
        }
        for i in from..self.records.len() {
            let r = self.records[i];
            let extends = match self.branch.last() {
                Some(leaf) => r.parent_index != NONE && r.parent == leaf.id,
                None => r.parent_index == NONE && r.parent == 0,
            };
            if !extends {
                self.rebuild_branch();
                return;
            }
            self.branch.push(r);
        }
    }

    /// Rebuilds the selected branch: the path from a root to the newest entry.
    pub(crate) fn rebuild_branch(&mut self) {
        let Some(leaf) = self.records.len().checked_sub(1) else {
            self.branch = Vec::new();
            self.linear = true;
            return;
        };
        let mut depth = 0usize;
        let mut i = leaf as u32;
        while i != NONE && depth <= self.records.len() {
            depth += 1;
            i = self.records[i as usize].parent_index;
        }
        if depth == self.records.len() {
            // Parent indexes only point back, so a path from the newest
            // record through every record is the whole table in order.
            self.branch = Vec::new();
            self.linear = true;
            return;
        }
        self.linear = false;
        let mut branch = table_with_capacity(depth);
        let mut i = leaf as u32;
        while i != NONE && branch.len() < depth {
            branch.push(self.records[i as usize]);
            i = self.records[i as usize].parent_index;
        }
        branch.reverse();
        self.branch = branch;
    }

    /// The session's id.
    pub fn id(&self) -> SessionId {
        self.header.id
    }

    /// Creation time, milliseconds since the Unix epoch.
    pub fn created_ms(&self) -> u64 {
        self.header.created_ms
    }

    /// Where this session was forked or cloned from.
    pub fn origin(&self) -> Option<Origin> {
        self.origin
    }

    /// Every entry's record, in append order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The selected branch, root first, leaf last.
    pub fn branch(&self) -> &[Record] {
        if self.linear {
            &self.records
        } else {
            &self.branch
        }
    }

    /// The selected leaf.
    pub fn leaf(&self) -> Option<&Record> {
        self.branch().last()
    }

    /// What loading found.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// The payload arena's two regions: the mapping of the session's file
    /// it was loaded from or has appended to, read in place (empty when
    /// there is none), and the owned buffer. A record's `payload_offset`
    /// addresses the mapping below its length and the owned buffer (at
    /// `payload_offset - mapping length`) from there on.
    pub fn payload_regions(&self) -> (&[u8], &[u8]) {
        let mapped = self.payload.map.as_ref().map_or(&[][..], |m| &m[..]);
        (mapped, &self.payload.owned)
    }

    /// The entry's stored content bytes in the arena: canonical CBOR, or one
    /// zstd frame of it when the record is compressed.
    fn stored(&self, r: &Record) -> &[u8] {
        self.payload
            .get(r.payload_offset as usize, r.payload_len as usize)
    }

    /// An entry's content borrowed from the arena, when it is stored
    /// uncompressed; `None` for a compressed entry (read it with
    /// [`Session::content_in`] or [`Session::content`]).
    pub fn content_plain(&self, r: &Record) -> Option<&[u8]> {
        (!r.is_compressed()).then(|| self.stored(r))
    }

    /// The length of an entry's content (decoded), read from the record or,
    /// for a compressed entry, from its zstd frame header.
    pub fn content_len(&self, r: &Record) -> usize {
        if !r.is_compressed() {
            return r.payload_len as usize;
        }
        match zstd::zstd_safe::get_frame_content_size(self.stored(r)) {
            Ok(Some(n)) => usize::try_from(n).unwrap_or(usize::MAX),
            _ => 0,
        }
    }

    /// An entry's content (one canonical CBOR item) in the caller's arena,
    /// decompressed there when it is stored compressed, so that it is
    /// decoded and dropped with that scope and never held decoded in the
    /// session.
    ///
    /// # Errors
    /// `Malformed` when a compressed payload does not decompress to its
    /// declared size (the frame's checksum matched, so the file was written
    /// that way).
    pub fn content_in<'b>(&self, r: &Record, bump: &'b bumpalo::Bump) -> Result<&'b [u8]> {
        if !r.is_compressed() {
            return Ok(bump.alloc_slice_copy(self.stored(r)));
        }
        let dst = bump.alloc_slice_fill_copy(self.content_len(r), 0u8);
        self.decompress(r, dst)?;
        Ok(dst)
    }

    /// An entry's content: borrowed from the arena when stored uncompressed,
    /// decompressed into an owned buffer (the caller's scope) otherwise.
    ///
    /// # Errors
    /// As [`Session::content_in`].
    pub fn content(&self, r: &Record) -> Result<std::borrow::Cow<'_, [u8]>> {
        if !r.is_compressed() {
            return Ok(std::borrow::Cow::Borrowed(self.stored(r)));
        }
        let mut dst = vec![0u8; self.content_len(r)];
        self.decompress(r, &mut dst)?;
        Ok(std::borrow::Cow::Owned(dst))
    }

    pub(crate) fn decompress(&self, r: &Record, dst: &mut [u8]) -> Result<()> {
        thread_local! {
            static DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        let src = self.stored(r);
        let ok = DCTX.with(|cell| -> Result<bool> {
            let mut slot = cell.borrow_mut();
            let d = match &mut *slot {
                Some(d) => d,
                None => slot.insert(decompressor("session content")?),
            };
            Ok(compress::decompress_into(d, src, dst))
        })?;
        if ok {
            Ok(())
        } else {
            Err(StoreError::new(
                ErrorKind::Malformed,
                format!(
                    "entry {} of session {}: its compressed content ({} bytes) does not decompress to the {} bytes its frame declares; the file was written damaged — dump the session to see the remaining entries",
                    r.id,
                    self.header.id,
                    src.len(),
                    dst.len()
                ),
            ))
        }
    }

    /// The entry's whole stored frame payload: the canonical entry map, or
    /// for a compressed record its clear head followed by the zstd frame.
    pub(crate) fn entry_map(&self, r: &Record) -> &[u8] {
        let start = r.payload_offset as usize - r.head_len as usize;
        self.payload
            .get(start, r.head_len as usize + r.payload_len as usize)
    }

    /// The path from the selected leaf back to a root, leaf first, reading
    /// records only.
    pub fn ancestors(&self, index: usize) -> impl Iterator<Item = &Record> + '_ {
        let mut i = if index < self.records.len() {
            index as u32
        } else {
            NONE
        };
        std::iter::from_fn(move || {
            if i == NONE {
                return None;
            }
            let r = &self.records[i as usize];
            i = r.parent_index;
            Some(r)
        })
    }

    /// The compaction boundary of the selected branch: the index in
    /// [`Session::branch`] of the first entry kept after the newest compaction
    /// (the compaction's pairing id names that entry), or 0 without one.
    pub fn compaction_boundary(&self) -> usize {
        let branch = self.branch();
        for (i, r) in branch.iter().enumerate().rev() {
            if r.entry_kind() == EntryKind::Compaction {
                let kept = branch[..i].iter().position(|b| b.id == r.pairing);
                return kept.unwrap_or(i);
            }
        }
        0
    }

    /// Whether the selected branch has lost its beginning to damage: its
    /// first entry names a parent that no loaded frame holds (a frame lost
    /// to corruption held it, or an entry above it). `None` for a whole
    /// branch — always, at no cost, when loading found no orphan.
    ///
    /// The answer names what the branch still holds and the entry a run can
    /// safely continue from: the newest entry appended before the break
    /// whose every ancestor up to a root is present, so its history is
    /// provably whole.
    pub fn broken_branch(&self) -> Option<BrokenBranch> {
        if self.report.orphans == 0 {
            return None;
        }
        let branch = self.branch();
        let first = branch.first()?;
        if first.parent == 0 {
            return None;
        }
        let start = self.find(first.id)?;
        // Parent indexes point back, so one pass in append order settles
        // whether each entry reaches a root.
        let mut whole = vec![false; start];
        let mut intact = None;
        for (i, r) in self.records[..start].iter().enumerate() {
            whole[i] = match r.parent_index {
                NONE => r.parent == 0,
                p => whole[p as usize],
            };
            if whole[i] {
                intact = Some(i);
            }
        }
        let intact = intact.map(|i| {
            let r = &self.records[i];
            (r.id, self.ancestors(i).count())
        });
        Some(BrokenBranch {
            first: first.id,
            missing_parent: first.parent,
            kept: branch.len(),
            first_offset: first.frame_offset,
            intact: intact.map(|(id, _)| id),
            intact_len: intact.map_or(0, |(_, n)| n),
        })
    }

    /// Leaves: entries no other entry names as parent. Reads records only.
    pub fn leaves(&self) -> Vec<u64> {
        let mut has_child = vec![false; self.records.len()];
        for r in &self.records {
            if r.parent_index != NONE {
                has_child[r.parent_index as usize] = true;
            }
        }
        self.records
            .iter()
            .zip(has_child)
            .filter(|(_, c)| !c)
            .map(|(r, _)| r.id)
            .collect()
    }

    /// Effect intents with no completion carrying the same pairing id anywhere
    /// in the session: their effects recover as `unknown` and are never
    /// retried automatically. Reads records only.
    pub fn open_intents(&self) -> Vec<Record> {
        let completion = EntryKind::EffectCompletion.code();
        let intent = EntryKind::EffectIntent.code();
        let mut done: Vec<u64> = self
            .records
            .iter()
            .filter(|r| r.kind == completion)
            .map(|r| r.pairing)
            .collect();
        done.sort_unstable();
        self.records
            .iter()
            .filter(|r| r.kind == intent && done.binary_search(&r.pairing).is_err())
            .copied()
            .collect()
    }

    /// Forks the selected branch into a new in-memory session with `id`:
    /// the branch's records are copied in one piece and the payload arena is
    /// shared (copied on the first append to either session). Allocates
    /// exactly once whatever the branch length: the record table, which is
    /// also the fork's (one-line) branch.
    pub fn fork(&self, id: SessionId, created_ms: u64) -> Session {
        // One pass writes each record already re-linked (its frame is in the
        // origin's file, its parent the record before it), instead of a copy
        // and a second pass over 64 MB of fresh records.
        let branch = self.branch();
        let mut records: Vec<Record> = Vec::with_capacity(branch.len());
        records.extend(branch.iter().enumerate().map(|(i, r)| Record {
            frame_offset: NO_FRAME,
            parent_index: if i == 0 { NONE } else { (i - 1) as u32 },
            ..*r
        }));
        Session {
            header: Header {
                id,
                created_ms,
                header_len: format::HEADER_LEN as u32,
            },
            origin: Some(Origin {
                session: self.header.id,
                leaf: self.leaf().map_or(0, |l| l.id),
            }),
            report: LoadReport {
                entries: records.len() as u64,
                ..LoadReport::default()
            },
            records,
            payload: self.payload.clone(),
            branch: Vec::new(),
            linear: true,
            known_len: 0,
            path: None,
            max_id: self.max_id,
            writer: Writer::default(),
            from_leaf: false,
        }
    }

    /// Serialises the session as a complete file: header, origin frame if
    /// any, one frame per entry in record order.
    ///
    /// # Errors
    /// `Io` when the compressor cannot be set up.
    pub fn encode_file(&self, out: &mut Vec<u8>) -> Result<Vec<u64>> {
        let mut comp = compress::Compressor::new()?;
        out.extend_from_slice(&format::encode_header(
            self.header.id,
            self.header.created_ms,
        ));
        if let Some(o) = self.origin {
            let mut p = Vec::new();
            format::encode_origin(&mut p, o.session, o.leaf);
            format::encode_frame(out, KIND_ORIGIN, 0, p.len() as u32, 0, &p);
        }
        let mut offsets = Vec::with_capacity(self.records.len());
        for r in &self.records {
            let here = out.len() as u64;
            let link = if r.parent_index == NONE {
                0
            } else {
                here - offsets[r.parent_index as usize]
            };
            if r.is_compressed() {
                // Already in its stored form: copied, not recompressed
                // (under one compression setting compression is a pure
                // function of the content, so this is the frame a fresh
                // write under the setting it was written with produces;
                // readers never depend on the setting).
                let map = self.entry_map(r);
                let content_len = r.head_len as usize + self.content_len(r);
                format::encode_frame(
                    out,
                    KIND_ENTRY,
                    FLAG_ZSTD_CONTENT,
                    content_len as u32,
                    link,
                    map,
                );
            } else {
                comp.frame(out, KIND_ENTRY, link, self.entry_map(r));
            }
            offsets.push(here);
        }
        Ok(offsets)
    }
}

/// Creates a zstd decompression context.
pub(crate) fn decompressor(what: &str) -> Result<zstd::bulk::Decompressor<'static>> {
    zstd::bulk::Decompressor::new().map_err(|e| {
        StoreError::new(ErrorKind::Io, format!("could not set up the zstd decompressor while reading {what}: {e}; free memory and retry"))
    })
}

/// Copies one good frame into the arena and record table (entry frames), or
/// notes it in the report (all others). Never parses content, and never
/// decompresses it except for whole-payload compressed frames
/// ([`FLAG_ZSTD`]), whose head is inside the compressed bytes.
pub(crate) fn ingest(
    records: &mut Vec<Record>,
    sink: &mut Sink<'_>,
    report: &mut LoadReport,
    origin: &mut Option<Origin>,
    dctx: &mut Option<zstd::bulk::Decompressor<'static>>,
    v: &FrameView<'_>,
) {
    if v.kind == KIND_ORIGIN {
        if origin.is_none() {
            *origin =
                format::decode_origin(v.payload).map(|(session, leaf)| Origin { session, leaf });
        }
        return;
    }
    if v.kind != KIND_ENTRY {
        report.unknown_frames += 1;
        return;
    }
    // Where this entry's stored payload starts in the arena: where it lies
    // in the mapping, or at the end of the owned buffer where it is copied.
    let in_place_at = v.offset as usize + format::FRAME_PREFIX;
    let payload = &mut *sink.owned;
    let owned_at = payload.len();
    let mut at = sink.base_len + owned_at;
    let (head, c_at, c_len, flags) = match compress::classify_like(v, sink.layout) {
        None => {
            report.malformed_entries += 1;
            return;
        }
        Some(StoredEntry::Plain {
            head, content_at, ..
        }) => {
            if sink.in_place {
                at = in_place_at;
            } else {
                payload.extend_from_slice(v.payload);
            }
            (head, content_at, v.payload.len() - content_at, 0)
        }
        Some(StoredEntry::Split { head, head_len, .. }) => {
            if sink.in_place {
                at = in_place_at;
            } else {
                payload.extend_from_slice(v.payload);
            }
            report.compressed_entries += 1;
            (
                head,
                head_len,
                v.payload.len() - head_len,
                RECORD_COMPRESSED,
            )
        }
        Some(StoredEntry::Whole) => {
            let d = match dctx {
                Some(d) => d,
                None => match decompressor("a session file") {
                    Ok(d) => dctx.insert(d),
                    Err(_) => {
                        report.malformed_entries += 1;
                        return;
                    }
                },
            };
            payload.resize(owned_at + v.content_len as usize, 0);
            let decoded = compress::decompress_into(d, v.payload, &mut payload[owned_at..])
                .then(|| format::decode_entry(&payload[owned_at..]))
                .flatten();
            let Some((head, c_at, c_len)) = decoded else {
                payload.truncate(owned_at);
                report.malformed_entries += 1;
                return;
            };
            report.compressed_entries += 1;
            (head, c_at, c_len, 0)
        }
    };
    let parent_index = resolve_parent(records, &head, v.offset, v.link);
    if parent_index == NONE && head.parent != 0 {
        report.orphans += 1;
    }
    report.stored_bytes += v.payload.len() as u64;
    report.content_bytes += u64::from(v.content_len);
    report.entries += 1;
    records.push(Record {
        id: head.id,
        parent: head.parent,
        timestamp_ms: head.timestamp_ms,
        pairing: head.pairing,
        frame_offset: v.offset,
        payload_offset: (at + c_at) as u64,
        payload_len: c_len as u32,
        kind: head.kind,
        parent_index,
        head_len: c_at as u16,
        flags,
    });
}

/// Finds the parent's record through the frame link: records are in file
/// order, so a binary search on frame offsets finds it without a hash table.
fn resolve_parent(records: &[Record], head: &EntryHead, offset: u64, link: u64) -> u32 {
    resolve_parent_id(records, head.parent, offset, link)
}

/// [`resolve_parent`] for the entry at frame `offset` whose parent is
/// entry `parent`.
pub(crate) fn resolve_parent_id(records: &[Record], parent: u64, offset: u64, link: u64) -> u32 {
    if parent == 0 || link == 0 || link > offset {
        return NONE;
    }
    let target = offset - link;
    // Most entries follow their parent directly: try the newest record
    // before searching.
    if let Some(last) = records.last()
        && last.frame_offset == target
    {
        return if last.id == parent {
            (records.len() - 1) as u32
        } else {
            NONE
        };
    }
    match records.binary_search_by_key(&target, |r| r.frame_offset) {
        Ok(i) if records[i].id == parent => i as u32,
        _ => NONE,
    }
}
