//! Reading every frame of a file front to back with the entries' content
//! ready, decompressed ahead on a second thread.
//!
//! [`scan_entries`] is [`scan::scan`] with each entry frame's head and
//! content read ([`compress::read_entry`]). A reader thread walks the frames
//! (lengths, checksums, entry heads) and decompresses the content stored
//! compressed into batches of about [`BATCH_BYTES`] of content; the caller's
//! thread visits the frames of each batch in file order while the reader
//! fills the next. Frames, entries and errors reach `visit` exactly as a
//! sequential walk gives them; only the work is split. At most [`BATCHES`]
//! batches exist at once, each holding at most about twice
//! [`BATCH_BYTES`] of decompressed content (an entry stored compressed
//! that is larger than that is decompressed by the visiting thread when it
//! reaches it, into one reused buffer), so memory stays that of a few
//! batches and one entry whatever the file's size.

use std::sync::mpsc;

use crate::compress::{self, StoredEntry};
use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{EntryHead, FrameView, KIND_ENTRY};
use crate::scan::{self, Limits, ScanReport};
use crate::session;

/// Content bytes (stored in clear or decompressed) after which a batch is
/// handed over: large enough that the handover costs nothing beside the
/// work, small enough that both threads start at once and a few batches
/// stay in the cache.
pub(crate) const BATCH_BYTES: usize = 256 * 1024;

/// Batches in existence at once: one being filled, one being visited, one
/// waiting between them.
pub(crate) const BATCHES: usize = 3;

/// A decompressed batch arena, or the visiting thread's buffer, grown past
/// this is let go once visited, so it does not pin its size for the rest.
const ARENA_KEEP: usize = 4 * BATCH_BYTES;

/// Where one frame's entry content is.
#[derive(Clone, Copy)]
enum Content<'a> {
    /// Not an entry frame, or not a well-formed one.
    None,
    /// Stored in clear: in the file.
    Mapped(EntryHead, &'a [u8]),
    /// Decompressed into the batch's arena at `start..start + len`.
    Arena(EntryHead, usize, usize),
    /// Stored compressed and larger than [`BATCH_BYTES`]: decompressed by
    /// the visiting thread when it gets there, so the batches never hold
    /// more than one batch's worth of content beyond their last entry.
    Later,
}

#[derive(Default)]
struct Batch<'a> {
    frames: Vec<(FrameView<'a>, Content<'a>)>,
    arena: Vec<u8>,
}

/// Why the reader stopped early.
enum Stop {
    /// The visiting thread stopped taking batches (its `visit` failed).
    Abandoned,
    /// The walk itself failed.
    Failed(StoreError),
}

/// Walks the frames of `bytes` from `start` as [`scan::scan`] does, and
/// calls `visit` with each frame in file order and, for an entry frame, its
/// head and content as [`compress::read_entry`] reads them (`None` for
/// other frames and for entry frames that are not well-formed or do not
/// decompress to their declared size). The frames are checked and the
/// content decompressed on a second thread, ahead of `visit`.
///
/// # Errors
/// As [`scan::scan`], the zstd context's setup, and the first error
/// `visit` returns (the walk then stops).
pub(crate) fn scan_entries<'a>(
    bytes: &'a [u8],
    start: usize,
    limits: &Limits,
    what: &str,
    mut visit: impl FnMut(FrameView<'a>, Option<(EntryHead, &[u8])>) -> Result<()>,
) -> Result<ScanReport> {
    let mut dctx = session::decompressor(what)?;
    // The visiting thread's own context and buffer, for large entries.
    let mut large: Option<(zstd::bulk::Decompressor<'static>, Vec<u8>)> = None;
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch<'a>>(BATCHES);
    let (free_tx, free_rx) = mpsc::sync_channel::<Batch<'a>>(BATCHES);
    for _ in 0..BATCHES {
        // The channel holds all of them.
        let _ = free_tx.send(Batch::default());
    }
    std::thread::scope(|s| {
        let reader = std::thread::Builder::new()
            .name("smith-read-ahead".to_owned())
            .spawn_scoped(s, move || read(bytes, start, limits, what, &mut dctx, &full_tx, &free_rx))
            .map_err(|e| {
                StoreError::new(
                    ErrorKind::Io,
                    format!("could not start the thread that reads {what} ahead: {e}; the system is out of threads or memory, retry when it has room"),
                )
            })?;
        let mut failed = None;
        for mut batch in full_rx.iter() {
            for &(view, content) in &batch.frames {
                if let (Content::Later, None) = (content, &large) {
                    match session::decompressor(what) {
                        Ok(d) => large = Some((d, Vec::new())),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                let entry = match content {
                    Content::None => None,
                    Content::Mapped(head, c) => Some((head, c)),
                    Content::Arena(head, at, len) => Some((head, &batch.arena[at..at + len])),
                    Content::Later => large
                        .as_mut()
                        .and_then(|(d, scratch)| compress::read_entry(&view, d, scratch)),
                };
                let r = visit(view, entry);
                if let Some((_, scratch)) = &mut large
                    && scratch.capacity() > ARENA_KEEP
                {
                    // One large entry does not pin its size for the rest.
                    *scratch = Vec::new();
                }
                if let Err(e) = r {
                    failed = Some(e);
                    break;
                }
            }
            if failed.is_some() {
                break;
            }
            batch.frames.clear();
            batch.arena.clear();
            if batch.arena.capacity() > ARENA_KEEP {
                batch.arena = Vec::new();
            }
            // The reader may have finished and gone: nothing more to fill.
            let _ = free_tx.send(batch);
        }
        // Dropping the channels tells a reader still running to stop.
        drop(full_rx);
        drop(free_tx);
        let walked = reader.join().unwrap_or_else(|_| {
            Err(Stop::Failed(StoreError::new(
                ErrorKind::Io,
                format!("the thread reading {what} ahead stopped unexpectedly (it panicked); this is a bug in smith, report it with the file if you can share it"),
            )))
        });
        match (failed, walked) {
            (Some(e), _) => Err(e),
            (None, Ok(report)) => Ok(report),
            (None, Err(Stop::Failed(e))) => Err(e),
            (None, Err(Stop::Abandoned)) => Err(StoreError::new(
                ErrorKind::Io,
                format!(
                    "the walk of {what} stopped before its end without a reason; this is a bug in smith"
                ),
            )),
        }
    })
}

/// The reader thread: fills batches from `free` and sends them to `full`.
fn read<'a>(
    bytes: &'a [u8],
    start: usize,
    limits: &Limits,
    what: &str,
    dctx: &mut zstd::bulk::Decompressor<'static>,
    full: &mpsc::SyncSender<Batch<'a>>,
    free: &mpsc::Receiver<Batch<'a>>,
) -> std::result::Result<ScanReport, Stop> {
    let Ok(mut batch) = free.recv() else {
        return Err(Stop::Abandoned);
    };
    let mut filled = 0usize;
    let mut abandoned = false;
    let report = scan::scan(bytes, start, limits, what, |v| {
        let content = if v.kind == KIND_ENTRY {
            entry(&v, dctx, &mut batch.arena)
        } else {
            Content::None
        };
        filled += match content {
            Content::None | Content::Later => v.payload.len(),
            Content::Mapped(_, c) => c.len(),
            Content::Arena(_, _, len) => len,
        };
        batch.frames.push((v, content));
        if filled >= BATCH_BYTES {
            filled = 0;
            let next = free.recv();
            let done = std::mem::replace(&mut batch, next.unwrap_or_default());
            if full.send(done).is_err() {
                abandoned = true;
                // Stops the walk; the error is not reported.
                return Err(StoreError::new(ErrorKind::Io, String::new()));
            }
        }
        Ok(())
    });
    if abandoned {
        return Err(Stop::Abandoned);
    }
    // The frames read before a failure are visited before it is reported,
    // as a sequential walk visits them.
    if !batch.frames.is_empty() && full.send(batch).is_err() {
        return Err(Stop::Abandoned);
    }
    report.map_err(Stop::Failed)
}

/// An entry frame's head and where its content is, decompressing content
/// stored compressed onto the end of `arena`.
fn entry<'a>(
    v: &FrameView<'a>,
    dctx: &mut zstd::bulk::Decompressor<'static>,
    arena: &mut Vec<u8>,
) -> Content<'a> {
    match compress::classify(v) {
        Some(StoredEntry::Plain {
            head,
            map,
            content_at,
        }) => Content::Mapped(head, &map[content_at..]),
        Some(StoredEntry::Split { content_len, .. }) if content_len > BATCH_BYTES => Content::Later,
        Some(StoredEntry::Whole) if v.content_len as usize > BATCH_BYTES => Content::Later,
        Some(StoredEntry::Split {
            head,
            zstd,
            content_len,
            ..
        }) => {
            let at = arena.len();
            arena.resize(at + content_len, 0);
            if compress::decompress_into(dctx, zstd, &mut arena[at..]) {
                Content::Arena(head, at, content_len)
            } else {
                arena.truncate(at);
                Content::None
            }
        }
        Some(StoredEntry::Whole) => {
            let at = arena.len();
            arena.resize(at + v.content_len as usize, 0);
            if !compress::decompress_into(dctx, v.payload, &mut arena[at..]) {
                arena.truncate(at);
                return Content::None;
            }
            match crate::format::decode_entry(&arena[at..]) {
                Some((head, start, len)) => Content::Arena(head, at + start, len),
                None => {
                    arena.truncate(at);
                    Content::None
                }
            }
        }
        None => Content::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::Compressor;
    use crate::format::{self, FLAG_ZSTD, KIND_ORIGIN, SessionId};

    /// What a sequential walk gives: each frame's offset and, for entries,
    /// the head and content.
    type Seen = Vec<(u64, Option<(EntryHead, Vec<u8>)>)>;

    fn sequential(bytes: &[u8], limits: &Limits) -> (Seen, Result<ScanReport>) {
        let mut dctx = session::decompressor("t").expect("zstd");
        let mut scratch = Vec::new();
        let mut seen = Vec::new();
        let r = scan::scan(bytes, format::HEADER_LEN, limits, "t", |v| {
            let entry = if v.kind == KIND_ENTRY {
                compress::read_entry(&v, &mut dctx, &mut scratch).map(|(h, c)| (h, c.to_vec()))
            } else {
                None
            };
            seen.push((v.offset, entry));
            Ok(())
        });
        (seen, r)
    }

    fn ahead(bytes: &[u8], limits: &Limits, stop_at: Option<usize>) -> (Seen, Result<ScanReport>) {
        let mut seen = Vec::new();
        let r = scan_entries(bytes, format::HEADER_LEN, limits, "t", |v, entry| {
            if Some(seen.len()) == stop_at {
                return Err(StoreError::new(
                    ErrorKind::Io,
                    "the sink is full".to_owned(),
                ));
            }
            seen.push((v.offset, entry.map(|(h, c)| (h, c.to_vec()))));
            Ok(())
        });
        (seen, r)
    }

    /// Many batches' worth of entries, stored in clear and compressed
    /// (some larger than a batch), an origin, a whole-payload compressed
    /// entry, an unknown frame and an entry frame that is not an entry.
    fn file() -> Vec<u8> {
        let mut file = format::encode_header(SessionId([3; 16]), 1).to_vec();
        let mut p = Vec::new();
        format::encode_origin(&mut p, SessionId([4; 16]), 2);
        format::encode_frame(&mut file, KIND_ORIGIN, 0, p.len() as u32, 0, &p);
        let mut comp = Compressor::new().expect("zstd");
        let mut map = Vec::new();
        for id in 1..=400u64 {
            let len = [10, 7_000, 300, 20_000, 3 * BATCH_BYTES][(id % 5) as usize];
            let text = "tool output line\n".repeat(len / 17 + 1);
            let mut content = Vec::new();
            format::cbor_head(&mut content, 3, text.len() as u64);
            content.extend_from_slice(text.as_bytes());
            let head = EntryHead {
                id,
                parent: id - 1,
                timestamp_ms: id,
                kind: 4,
                pairing: 0,
            };
            map.clear();
            format::encode_entry(&mut map, &head, &content);
            if id % 97 == 0 {
                let z = zstd::bulk::compress(&map, 3).expect("compress");
                format::encode_frame(&mut file, KIND_ENTRY, FLAG_ZSTD, map.len() as u32, 0, &z);
            } else {
                comp.frame(&mut file, KIND_ENTRY, 0, &map);
            }
            if id % 131 == 0 {
                format::encode_frame(&mut file, 200, 0, 5, 0, b"hello");
                format::encode_frame(&mut file, KIND_ENTRY, 0, 3, 0, b"\x01\x02\x03");
            }
        }
        file
    }

    #[test]
    fn frames_and_entries_arrive_as_a_sequential_walk_gives_them() {
        let file = file();
        let limits = Limits::default();
        let (want, want_report) = sequential(&file, &limits);
        let (got, report) = ahead(&file, &limits, None);
        assert_eq!(report.expect("walk"), want_report.expect("walk"));
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the same frames, heads and content in order");
        let entries = got.iter().filter(|(_, e)| e.is_some()).count();
        assert_eq!(
            entries, 400,
            "every entry read, the frame that is not one not"
        );
        // Entries larger than a batch (decompressed by the visiting
        // thread) are among them, in both compressed forms.
        let large = |id: u64| {
            got.iter().any(|(_, e)| {
                e.as_ref()
                    .is_some_and(|(h, c)| h.id == id && c.len() > BATCH_BYTES)
            })
        };
        assert!(large(4) && large(194), "split and whole-payload frames");
    }

    #[test]
    fn a_visit_error_stops_the_walk_and_is_returned() {
        let file = file();
        let (want, _) = sequential(&file, &Limits::default());
        for stop in [0, 1, 57, 300] {
            let (got, r) = ahead(&file, &Limits::default(), Some(stop));
            assert_eq!(got[..], want[..stop]);
            let e = r.expect_err("stops");
            assert!(e.to_string().contains("the sink is full"), "{e}");
        }
    }

    #[test]
    fn a_walk_error_comes_after_the_frames_before_it() {
        let file = file();
        // A limit the largest entries exceed: the walk fails at the first.
        let limits = Limits {
            max_content_len: 2 * BATCH_BYTES as u32,
            ..Limits::default()
        };
        let (want, want_err) = sequential(&file, &limits);
        let (got, err) = ahead(&file, &limits, None);
        assert!(got == want, "the frames before the failing one");
        assert_eq!(
            err.expect_err("over the limit").to_string(),
            want_err.expect_err("over the limit").to_string()
        );
    }
}
