//! Frames read through a small buffer instead of through the file's
//! mapping.
//!
//! A full load of a large file checks every byte of it. Read through the
//! mapping, each page it touches costs a page fault to map and a page-table
//! entry to tear down when the session is dropped, kernel work that grows
//! with the file and that a plain `read` does not do. So a load of a large
//! file reads its frames with `pread` into a buffer that stays in the
//! core's cache, checks them there, and builds records that address the
//! mapping, which it never touches itself: payload pages are mapped later,
//! and only those whose content is read. A frame longer than the buffer is
//! checked through the mapping.

use crate::format::{self, FRAME_PREFIX, FrameView};
use crate::scan::Limits;

/// Bytes of each loading thread's buffer: large enough that a refill
/// (one system call) is rare next to the frames checked, small enough to
/// stay in the core's level-2 cache beside the code and the records.
pub(crate) const BUFFER: usize = 256 << 10;

/// A window of a file's bytes, refilled from the file as a walk moves on.
pub(crate) struct Window<'a> {
    file: &'a std::fs::File,
    /// The whole file, mapped: the source of frames longer than the buffer.
    map: &'a [u8],
    buf: &'a mut [u8],
    /// File offset of `buf[0]`.
    lo: usize,
    /// File offset just past the bytes read into `buf`.
    hi: usize,
}

impl<'a> Window<'a> {
    /// A window over `file` (mapped as `map`) reading into `buf`.
    pub(crate) fn new(file: &'a std::fs::File, map: &'a [u8], buf: &'a mut [u8]) -> Self {
        Self {
            file,
            map,
            buf,
            lo: 0,
            hi: 0,
        }
    }

    /// Bytes of the file from `pos` on, at least `need` of them (the
    /// caller has checked that the file holds them), with the file offset
    /// of the returned slice's first byte; `None` when the file cannot be
    /// read (the caller then lets the verifying reader decide).
    #[inline]
    fn bytes(&mut self, pos: usize, need: usize) -> Option<(&[u8], usize)> {
        if pos >= self.lo && pos + need <= self.hi {
            return Some((&self.buf[..self.hi - self.lo], self.lo));
        }
        if need > self.buf.len() {
            return Some((self.map, 0));
        }
        let n = self.buf.len().min(self.map.len() - pos);
        self.lo = pos;
        self.hi = pos;
        read_at(self.file, &mut self.buf[..n], pos)?;
        self.hi = pos + n;
        Some((&self.buf[..n], pos))
    }

    /// The frame at `pos`, when it is intact: both copies of its body
    /// length agree, it ends inside the file, it is within `limits` and its
    /// checksum matches; `None` otherwise. Its bytes are read in the order
    /// they lie in the file (length, body, trailer), the order the hardware
    /// streams them in.
    #[inline]
    pub(crate) fn intact_frame(&mut self, pos: usize, limits: &Limits) -> Option<FrameView<'_>> {
        let len = self.map.len();
        if len - pos < format::MIN_FRAME {
            return None;
        }
        let (b, base) = self.bytes(pos, format::MIN_FRAME)?;
        let body_len = format::read_u32(b, pos - base);
        if (body_len as usize) < format::BODY_FIXED || body_len > limits.max_frame_len {
            return None;
        }
        let total = body_len as usize + 12;
        if total > len - pos {
            return None;
        }
        let (b, base) = self.bytes(pos, total)?;
        let at = pos - base;
        let v = view(b, at, pos, total);
        let good = format::checksum_ok(&v)
            & (format::read_u32(b, at + total - 4) == body_len)
            & (v.content_len <= limits.max_content_len);
        good.then_some(v)
    }
}

/// The frame of `total` bytes at `at` of `b`, which lies at file offset
/// `pos` (its lengths already checked).
#[inline]
fn view(b: &[u8], at: usize, pos: usize, total: usize) -> FrameView<'_> {
    FrameView {
        offset: pos as u64,
        kind: b[at + 4],
        flags: b[at + 5],
        content_len: format::read_u32(b, at + 8),
        link: format::read_u64(b, at + 12),
        payload: &b[at + FRAME_PREFIX..at + total - format::FRAME_SUFFIX],
        raw: &b[at..at + total],
    }
}

/// Fills `buf` from `file` at offset `pos`; `None` on any error, or when
/// the file ends first (it was cut short since it was mapped).
fn read_at(file: &std::fs::File, buf: &mut [u8], pos: usize) -> Option<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, pos as u64).ok()
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf, pos);
        None
    }
}
