//! The two sizes a zstd frame declares, read without zstd for the frames
//! this store writes.
//!
//! A load classifies every entry stored with its content compressed: the
//! content must be one zstd frame that declares the entry's content size
//! and fills the rest of the payload exactly (`compress::classify_like`).
//! zstd's own answers (`ZSTD_getFrameContentSize`,
//! `ZSTD_findFrameCompressedSize`) parse the frame header twice through
//! general code, about 700 instructions per entry. The frames this store
//! writes have one shape (single segment, content size present, no
//! dictionary id, no checksum, the header's reserved bit clear); for that
//! shape the header is a few fixed fields and the rest a chain of 3-byte
//! block headers, read here the way zstd 1.5 reads them
//! (`ZSTD_getFrameHeader_advanced`, `ZSTD_findFrameSizeInfo`,
//! `ZSTD_getcBlockSize`), with the same answer for every input of that
//! shape, valid or not. Any other shape is left to zstd. The tests compare
//! both on written, mutated and truncated frames.

/// The magic number that starts a zstd frame.
const MAGIC: u32 = 0xFD2F_B528;

/// What zstd would say of a buffer's first frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sizes {
    /// Its declared content size and its length in bytes.
    Frame { content: u64, compressed: usize },
    /// zstd reports an error for one of the two sizes or does not know
    /// the content size.
    Invalid,
}

/// The sizes of the zstd frame at the start of `src`, as zstd reports
/// them; `None` when the frame is not of the shape this store writes (ask
/// zstd: [`sizes`]).
#[inline]
pub(crate) fn sizes_of_written(src: &[u8]) -> Option<Sizes> {
    let head = src.first_chunk::<5>()?;
    let fhd = head[4];
    // Single segment, reserved bit clear, no checksum, no dictionary id
    // (bit 4 is unused: zstd ignores it).
    if u32::from_le_bytes([head[0], head[1], head[2], head[3]]) != MAGIC || fhd & 0x2F != 0x20 {
        return None;
    }
    let (field, add) = match fhd >> 6 {
        0 => (1usize, 0u64),
        1 => (2, 256),
        2 => (4, 0),
        _ => (8, 0),
    };
    let header = 5 + field;
    let Some(bytes) = src.get(5..header) else {
        // zstd asks for more input: an error to both callers.
        return Some(Sizes::Invalid);
    };
    let mut le = [0u8; 8];
    le[..field].copy_from_slice(bytes);
    let content = u64::from_le_bytes(le) + add;
    let mut pos = header;
    loop {
        let Some(b) = src.get(pos..pos + 3) else {
            return Some(Sizes::Invalid);
        };
        let h = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
        let size = match (h >> 1) & 3 {
            // Raw and compressed blocks: the size field; RLE: one byte.
            1 => 1,
            3 => return Some(Sizes::Invalid),
            _ => (h >> 3) as usize,
        };
        if 3 + size > src.len() - pos {
            return Some(Sizes::Invalid);
        }
        pos += 3 + size;
        if h & 1 != 0 {
            return Some(Sizes::Frame {
                content,
                compressed: pos,
            });
        }
    }
}

/// The sizes of the zstd frame at the start of `src`, as zstd reports
/// them.
#[inline]
pub(crate) fn sizes(src: &[u8]) -> Sizes {
    sizes_of_written(src).unwrap_or_else(|| by_zstd(src))
}

/// [`sizes`] by asking zstd.
#[cold]
#[inline(never)]
pub(crate) fn by_zstd(src: &[u8]) -> Sizes {
    match (
        zstd::zstd_safe::get_frame_content_size(src),
        zstd::zstd_safe::find_frame_compressed_size(src),
    ) {
        (Ok(Some(content)), Ok(compressed)) => Sizes::Frame {
            content,
            compressed,
        },
        _ => Sizes::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u64, alphabet: u8) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b'a' + (x >> 40) as u8 % alphabet
            })
            .collect()
    }

    /// Frames as the store and other settings write them: every level
    /// the store has used or might, contents from empty to several blocks.
    fn written() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for level in [-5, -1, 1, 3, 19] {
            let mut c = zstd::bulk::Compressor::new(level).expect("compressor");
            c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(true))
                .expect("content size");
            c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(false))
                .expect("checksum");
            c.set_parameter(zstd::zstd_safe::CParameter::DictIdFlag(false))
                .expect("dict id");
            for (n, alphabet) in [
                (0, 1),
                (1, 1),
                (100, 2),
                (255, 26),
                (256, 26),
                (257, 4),
                (6_144, 8),
                (65_791, 26),
                (65_792, 3),
                (300_000, 26),
                (300_000, 1),
            ] {
                let content = bytes(n, n as u64 + 7, alphabet);
                out.push(c.compress(&content).expect("compress"));
            }
        }
        // With a checksum and without a content size: other shapes.
        let mut c = zstd::bulk::Compressor::new(3).expect("compressor");
        c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
            .expect("checksum");
        out.push(c.compress(&bytes(5_000, 3, 5)).expect("compress"));
        out
    }

    fn agree(src: &[u8], what: &str) {
        assert_eq!(sizes(src), by_zstd(src), "{what}: {src:02x?}");
    }

    #[test]
    fn written_frames_read_the_same_as_zstd_reads_them() {
        let mut fast = 0;
        for f in written() {
            agree(&f, "as written");
            fast += usize::from(sizes_of_written(&f).is_some());
            let mut longer = f.clone();
            longer.extend_from_slice(b"after the frame");
            agree(&longer, "with bytes after it");
        }
        // Every frame the store's settings write takes the short path.
        assert_eq!(fast, 55);
    }

    #[test]
    fn truncated_frames_read_the_same_as_zstd_reads_them() {
        for f in written() {
            for end in 0..f.len().min(400) {
                agree(&f[..end], "truncated");
            }
            for end in f.len().saturating_sub(300)..f.len() {
                agree(&f[..end], "truncated near its end");
            }
        }
    }

    #[test]
    fn mutated_frames_read_the_same_as_zstd_reads_them() {
        for f in written() {
            // The header and the first block header: every byte to a set of
            // values that change each field.
            for at in 0..f.len().min(20) {
                for v in [
                    0x00,
                    0x01,
                    0x02,
                    0x04,
                    0x08,
                    0x10,
                    0x20,
                    0x28,
                    0x2c,
                    0x40,
                    0x60,
                    0x80,
                    0xa0,
                    0xc0,
                    0xe0,
                    0xff,
                    f[at] ^ 0x06,
                    f[at] ^ 0x20,
                ] {
                    let mut g = f.clone();
                    g[at] = v;
                    agree(&g, "mutated");
                }
            }
        }
    }

    #[test]
    fn random_bytes_behind_the_magic_read_the_same_as_zstd_reads_them() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000 {
            let n = 5 + i % 40;
            let mut g = MAGIC.to_le_bytes().to_vec();
            g.extend((0..n).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            }));
            // Mostly the shape this store writes.
            if i % 4 != 0 {
                g[4] = (g[4] & 0xD0) | 0x20;
            }
            agree(&g, "random");
        }
    }
}
