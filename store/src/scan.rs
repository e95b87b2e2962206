//! The frame reader: a forward walk over a file's frames that verifies each
//! one, skips corrupt frames with intact lengths up to a bound, stops at a
//! torn tail, and fails explicitly where framing is lost but complete frames
//! follow. It never allocates.

use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{self, FrameView, MIN_FRAME, Probe};

/// Bounds applied while reading a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame body (header fields + stored payload) accepted, in bytes.
    pub max_frame_len: u32,
    /// Largest payload after decompression, in bytes. Checked against the
    /// declared size before anything is allocated.
    pub max_content_len: u32,
    /// How many corrupt frames (intact lengths, failed checksum) may be
    /// skipped before reading fails.
    pub max_corrupt_frames: u64,
    /// When framing is lost but complete frames follow, skip ahead to the next
    /// complete frame instead of failing (used by an explicit repair).
    pub resync: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_len: 64 << 20,
            max_content_len: 64 << 20,
            max_corrupt_frames: 16,
            resync: false,
        }
    }
}

/// What a walk over a file found besides good frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Frames whose checksum matched.
    pub frames: u64,
    /// Corrupt frames skipped (intact lengths, checksum mismatch).
    pub corrupt_skipped: u64,
    /// Bytes in skipped corrupt frames.
    pub corrupt_bytes: u64,
    /// Where an incomplete final frame starts, if the file ends in one.
    pub torn_tail_at: Option<u64>,
    /// Bytes in the incomplete final frame.
    pub torn_tail_bytes: u64,
    /// Bytes skipped by resynchronisation (only with [`Limits::resync`]).
    pub resynced_bytes: u64,
    /// The end of the last complete frame (good or skipped).
    pub valid_end: u64,
}

/// Finds the first offset at or after `from` holding a complete frame with a
/// matching checksum.
pub(crate) fn find_next_good(bytes: &[u8], from: usize, max_body: u32) -> Option<usize> {
    let last = bytes.len().checked_sub(MIN_FRAME)?;
    (from..=last).find(|&k| matches!(format::probe(bytes, k, max_body), Probe::Good(_)))
}

/// Walks frames already verified by a [`scan`] that found nothing wrong
/// (no corrupt frames, no lost framing) in the same immutable bytes: only
/// lengths are followed, checksums are not recomputed. Stops where that scan
/// stopped (`valid_end`).
pub(crate) fn walk_verified<'a>(
    bytes: &'a [u8],
    start: usize,
    valid_end: u64,
    mut visit: impl FnMut(FrameView<'a>),
) {
    let end = usize::try_from(valid_end)
        .unwrap_or(bytes.len())
        .min(bytes.len());
    let mut pos = start;
    while pos + MIN_FRAME <= end {
        let body_len = format::read_u32(bytes, pos) as usize;
        let total = body_len + 12;
        if pos + total > end {
            break;
        }
        let crc_at = pos + total - format::FRAME_SUFFIX;
        visit(FrameView {
            offset: pos as u64,
            kind: bytes[pos + 4],
            flags: bytes[pos + 5],
            content_len: format::read_u32(bytes, pos + 8),
            link: format::read_u64(bytes, pos + 12),
            payload: &bytes[pos + format::FRAME_PREFIX..crc_at],
            raw: &bytes[pos..pos + total],
        });
        pos += total;
    }
}

/// Walks the frames of `bytes` from `start`, calling `visit` for each good
/// frame in file order. `what` names the file in errors.
///
/// # Errors
/// `FrameOverLimit` when a good frame declares sizes over `limits` (before
/// anything is allocated for it), `TooManyCorruptFrames` past the bound,
/// `FramingAmbiguity` when framing is lost at an offset with complete frames
/// after it, and whatever `visit` returns.
pub fn scan<'a>(
    bytes: &'a [u8],
    start: usize,
    limits: &Limits,
    what: &str,
    mut visit: impl FnMut(FrameView<'a>) -> Result<()>,
) -> Result<ScanReport> {
    let mut report = ScanReport {
        valid_end: start as u64,
        ..ScanReport::default()
    };
    let mut pos = start;
    // Lengths are probed without the configured limit so that an oversized
    // but intact frame is reported as such rather than as lost framing.
    let probe_max = u32::MAX - 12;
    while pos < bytes.len() {
        match format::probe(bytes, pos, probe_max) {
            Probe::Good(view) => {
                let body = view.raw.len() as u64 - 12;
                if body > u64::from(limits.max_frame_len)
                    || view.content_len > limits.max_content_len
                {
                    return Err(StoreError::at(
                        ErrorKind::FrameOverLimit,
                        pos as u64,
                        format!(
                            "{what}: the frame at byte offset {pos} declares {body} stored and {} decompressed bytes, over the limits of {} and {} bytes, so it was not read; raise the limits if the file is trusted",
                            view.content_len, limits.max_frame_len, limits.max_content_len
                        ),
                    ));
                }
                visit(view)?;
                report.frames += 1;
                pos += view.raw.len();
                report.valid_end = pos as u64;
            }
            Probe::Corrupt { len } => {
                report.corrupt_skipped += 1;
                report.corrupt_bytes += len as u64;
                if report.corrupt_skipped > limits.max_corrupt_frames {
                    return Err(StoreError::at(
                        ErrorKind::TooManyCorruptFrames,
                        pos as u64,
                        format!(
                            "{what}: the frame at byte offset {pos} is the {}th corrupt frame (checksum mismatch), more than the bound of {}; the file is badly damaged — raise the bound to salvage what remains, or restore it from a backup",
                            report.corrupt_skipped, limits.max_corrupt_frames
                        ),
                    ));
                }
                pos += len;
                report.valid_end = pos as u64;
            }
            Probe::Lost => match find_next_good(bytes, pos + 1, probe_max) {
                Some(next) if limits.resync => {
                    report.resynced_bytes += (next - pos) as u64;
                    pos = next;
                }
                Some(next) => {
                    return Err(StoreError::at(
                        ErrorKind::FramingAmbiguity,
                        pos as u64,
                        format!(
                            "{what}: framing is lost at byte offset {pos} (the length prefix there does not delimit a frame), yet a complete frame starts at offset {next}; the bytes between cannot be attributed safely, so nothing was guessed — run `smith session repair --resync` to keep every complete frame and drop the {} unattributable bytes",
                            next - pos
                        ),
                    ));
                }
                None => {
                    report.torn_tail_at = Some(pos as u64);
                    report.torn_tail_bytes = (bytes.len() - pos) as u64;
                    break;
                }
            },
        }
    }
    Ok(report)
}
