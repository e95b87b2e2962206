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
//! batches exist at once, so memory stays that of a few batches (or of one
//! entry, when a single entry is larger) whatever the file's size.

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

/// A decompressed batch arena grown past this by one large entry is let go
/// once visited, so that entry does not pin its size for the rest.
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
                let entry = match content {
                    Content::None => None,
                    Content::Mapped(head, c) => Some((head, c)),
                    Content::Arena(head, at, len) => Some((head, &batch.arena[at..at + len])),
                };
                if let Err(e) = visit(view, entry) {
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
            Content::None => v.payload.len(),
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
    let report = report.map_err(Stop::Failed)?;
    if !batch.frames.is_empty() && full.send(batch).is_err() {
        return Err(Stop::Abandoned);
    }
    Ok(report)
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
