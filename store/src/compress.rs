//! Deterministic, transparent payload compression.
//!
//! A payload of at least [`THRESHOLD`] bytes is compressed with zstd at
//! [`LEVEL`], content size recorded in the zstd frame, no zstd checksum (the
//! frame's crc32c already covers the stored bytes) and no dictionary. The
//! compressed form is kept only when it is strictly smaller. The decision and
//! the bytes are a pure function of the payload, so the same entry always
//! produces the same frame with this build's pinned zstd.

use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{self, FLAG_ZSTD};

/// Payloads shorter than this are stored as they are. Chosen by measurement
/// (`examples/measure.rs`, table in `docs/session-format.md`): at 4 KiB,
/// encoding 1,000 representative entries costs about 3.3 ms of CPU and the
/// file shrinks 1.5x; at 2 KiB the cost reaches 4.7 ms, too close to the
/// spec's 5 ms, and each halving adds load time for little gain.
pub const THRESHOLD: usize = 4096;
/// The fixed zstd level.
pub const LEVEL: i32 = 1;

/// Reusable compression state for a writer.
pub struct Compressor {
    inner: zstd::bulk::Compressor<'static>,
    scratch: Vec<u8>,
    threshold: usize,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compressor")
    }
}

impl Compressor {
    /// Creates the compressor with the pinned parameters.
    ///
    /// # Errors
    /// `Io` when zstd cannot allocate its context.
    pub fn new() -> Result<Self> {
        let map = |e: std::io::Error| {
            StoreError::new(
                ErrorKind::Io,
                format!(
                    "could not set up the zstd compressor: {e}; this indicates memory exhaustion, free memory and retry"
                ),
            )
        };
        let mut inner = zstd::bulk::Compressor::new(LEVEL).map_err(map)?;
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
            threshold: THRESHOLD,
        })
    }

    /// A compressor with another threshold, for measuring the trade-off only:
    /// files must be written with [`THRESHOLD`] to stay deterministic.
    ///
    /// # Errors
    /// As [`Compressor::new`].
    pub fn with_threshold(threshold: usize) -> Result<Self> {
        let mut c = Self::new()?;
        c.threshold = threshold;
        Ok(c)
    }

    /// Appends one frame of `kind` carrying `payload` to `out`, compressed
    /// when eligible.
    pub fn frame(&mut self, out: &mut Vec<u8>, kind: u8, link: u64, payload: &[u8]) {
        let content_len = payload.len() as u32;
        if payload.len() >= self.threshold {
            self.scratch.clear();
            self.scratch
                .reserve(zstd::zstd_safe::compress_bound(payload.len()));
            if let Ok(n) = self.inner.compress_to_buffer(payload, &mut self.scratch)
                && n < payload.len()
            {
                format::encode_frame(out, kind, FLAG_ZSTD, content_len, link, &self.scratch[..n]);
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
