//! crc32c of one frame at the speed of a long buffer.
//!
//! Frames are about a kilobyte. The `crc32c` crate interleaves three
//! streams only over whole 768-byte chunks and does the rest of a buffer
//! one word at a time, each word waiting for the previous one (three
//! cycles), so a typical frame spends most of its time in that serial
//! tail. Here every buffer of [`STREAMS`] x 32 bytes or more is cut into
//! [`STREAMS`] equal blocks of whole words that are checksummed at once and
//! then joined: the checksum register of a block followed by `n` more bytes
//! is the block's register multiplied by `x^(8n)` modulo the polynomial, one
//! carry-less multiplication by a constant from [`SHIFT`] reduced by the
//! crc32 instruction itself. Where the CPU lacks SSE 4.2 or PCLMULQDQ (or
//! elsewhere than x86-64) the `crc32c` crate does the work. The result is
//! the same function either way (checked against the crate in the tests).
//! Where the CPU has AVX-512 and VPCLMULQDQ, `wide` folds 64-byte blocks
//! instead (below).
//!
//! Why six blocks: the crc32 instruction takes three cycles before its
//! result can feed the next one, so one chain of words runs at a third of
//! the unit's rate. Processors that start one crc32 per cycle (Intel's) are
//! kept busy by three chains; processors that start two per cycle (AMD's
//! Zen 5) need six. Measured on 1 MiB of words, AMD EPYC family 26
//! model 2: 32.5 GB/s with three chains, 64.0 GB/s with six. On one-per-cycle
//! processors the three extra joins per buffer cost a few cycles per frame.

/// Blocks checksummed at once (see the module docs).
#[cfg(target_arch = "x86_64")]
const STREAMS: usize = 6;

/// The largest block, in bytes; longer buffers are done in runs of
/// [`STREAMS`] blocks.
#[cfg(target_arch = "x86_64")]
const MAX_BLOCK: usize = 2048;

/// `SHIFT[j]` is `x^(64 j - 33)` modulo the CRC-32C polynomial in the
/// reflected bit order the crc32 instruction uses: multiplying a register
/// by it (carry-less) and reducing with `crc32(0, ·)` advances the register
/// over `8 j` zero bytes. Index 0 is unused.
#[cfg(target_arch = "x86_64")]
static SHIFT: [u32; (STREAMS - 1) * MAX_BLOCK / 8 + 1] = shift_table();

#[cfg(target_arch = "x86_64")]
const fn shift_table() -> [u32; (STREAMS - 1) * MAX_BLOCK / 8 + 1] {
    let mut t = [0u32; (STREAMS - 1) * MAX_BLOCK / 8 + 1];
    // r = x^k mod P, reflected (bit 31 is x^0), from k = 0 up.
    let mut r: u32 = 0x8000_0000;
    let mut k = 0usize;
    let mut j = 1usize;
    while j < t.len() {
        let want = 64 * j - 33;
        while k < want {
            r = (r >> 1) ^ if r & 1 != 0 { 0x82F6_3B78 } else { 0 };
            k += 1;
        }
        t[j] = r;
        j += 1;
    }
    t
}

/// The crc32c of `data` (the same value as `crc32c::crc32c`).
#[inline]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if wide::available() {
            // SAFETY: the CPU has the instructions `crc32c` uses (checked
            // just now).
            return unsafe { wide::crc32c(data) };
        }
        if hardware() {
            // SAFETY: the CPU has SSE 4.2 and PCLMULQDQ (checked just now).
            return unsafe { crc32c_hw(data) };
        }
    }
    crc32c::crc32c(data)
}

/// Whether this CPU has the instructions [`crc32c_hw`] uses (detected
/// once; the standard library caches the answer).
#[cfg(target_arch = "x86_64")]
#[inline]
fn hardware() -> bool {
    std::arch::is_x86_feature_detected!("sse4.2")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn word(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[8 * i..8 * i + 8]);
    u64::from_le_bytes(w)
}

/// Advances the register `crc` over `8 j` zero bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn shift(crc: u64, j: usize) -> u64 {
    use std::arch::x86_64::{
        _mm_clmulepi64_si128, _mm_crc32_u64, _mm_cvtsi64_si128, _mm_cvtsi128_si64,
    };
    let a = _mm_cvtsi64_si128(crc as i64);
    let k = _mm_cvtsi64_si128(i64::from(SHIFT[j]));
    let p = _mm_clmulepi64_si128::<0>(a, k);
    _mm_crc32_u64(0, _mm_cvtsi128_si64(p) as u64)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn crc32c_hw(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};
    let mut crc: u64 = 0xffff_ffff;
    let mut rest = data;
    while rest.len() >= STREAMS * 32 {
        let words = (rest.len() / (8 * STREAMS)).min(MAX_BLOCK / 8);
        let n = 8 * words;
        let (blocks, tail) = rest.split_at(STREAMS * n);
        let p = blocks.as_ptr();
        // One register per block, named: the loop below is written for six.
        const _: () = assert!(STREAMS == 6);
        let (mut c0, mut c1, mut c2, mut c3, mut c4, mut c5) = (crc, 0u64, 0u64, 0u64, 0u64, 0u64);
        let mut i = 0;
        while i < n {
            // SAFETY: `i + 8 <= n` and block `s` spans `s * n .. (s + 1) * n`
            // of `blocks`, so every read is inside it.
            unsafe {
                let w = |s: usize| p.add(s * n + i).cast::<u64>().read_unaligned();
                c0 = _mm_crc32_u64(c0, w(0));
                c1 = _mm_crc32_u64(c1, w(1));
                c2 = _mm_crc32_u64(c2, w(2));
                c3 = _mm_crc32_u64(c3, w(3));
                c4 = _mm_crc32_u64(c4, w(4));
                c5 = _mm_crc32_u64(c5, w(5));
            }
            i += 8;
        }
        crc = shift(c0, 5 * words)
            ^ shift(c1, 4 * words)
            ^ shift(c2, 3 * words)
            ^ shift(c3, 2 * words)
            ^ shift(c4, words)
            ^ c5;
        rest = tail;
    }
    let words = rest.len() / 8;
    for i in 0..words {
        crc = _mm_crc32_u64(crc, word(rest, i));
    }
    let mut c = crc as u32;
    for &byte in &rest[8 * words..] {
        c = _mm_crc32_u8(c, byte);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::crc32c;

    #[test]
    fn equals_the_crate_at_every_length_and_alignment() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..40_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for start in 0..8 {
            for len in 0..=2_000 {
                let d = &data[start..start + len];
                assert_eq!(crc32c(d), crc32c::crc32c(d), "start {start} len {len}");
            }
        }
        // Lengths past one run of three largest blocks, and their edges.
        for len in [12_287, 12_288, 12_289, 24_575, 24_576, 30_001, 39_990] {
            let d = &data[3..3 + len];
            assert_eq!(crc32c(d), crc32c::crc32c(d), "len {len}");
        }
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    fn data(n: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect()
    }

    /// A buffer that starts at a page whose predecessor is not readable:
    /// the bytes the front padding stands for are never read.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_buffer_after_an_unreadable_page_is_read_from_its_start_only() {
        let page = 4096;
        // SAFETY: a fresh anonymous mapping of three pages, the first and
        // last made unreadable; only the middle one is written and read.
        unsafe {
            let at = libc::mmap(
                std::ptr::null_mut(),
                3 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(at, libc::MAP_FAILED);
            let base = at.cast::<u8>();
            assert_eq!(libc::mprotect(at, page, libc::PROT_NONE), 0);
            assert_eq!(
                libc::mprotect(base.add(2 * page).cast(), page, libc::PROT_NONE),
                0
            );
            let mid = std::slice::from_raw_parts_mut(base.add(page), page);
            mid.copy_from_slice(&data(page));
            for len in (0..=600).chain([page - 1, page]) {
                let head = &mid[..len];
                assert_eq!(crc32c(head), crc32c::crc32c(head), "head {len}");
                let tail = &mid[page - len..];
                assert_eq!(crc32c(tail), crc32c::crc32c(tail), "tail {len}");
            }
            assert_eq!(libc::munmap(at, 3 * page), 0);
        }
    }

    /// The six-chain path, which CPUs without the wide instructions take
    /// (this one may take the wide path in `crc32c`).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_six_chain_path_equals_the_crate() {
        if !super::hardware() {
            return;
        }
        let d = data(40_000);
        for start in 0..4 {
            for len in (0..=2_000).chain([12_287, 12_288, 12_289, 24_576, 39_990]) {
                let r = &d[start..start + len];
                // SAFETY: the CPU has SSE 4.2 and PCLMULQDQ (checked above).
                assert_eq!(
                    unsafe { super::crc32c_hw(r) },
                    crc32c::crc32c(r),
                    "{start} {len}"
                );
            }
        }
    }
}

/// crc32c by folding 64-byte blocks with carry-less multiplication
/// (VPCLMULQDQ on 512-bit registers), where the CPU has it.
///
/// A frame's checksum is the one computation a full load does over every
/// byte. The crc32 instruction takes 8 bytes at a time and three cycles
/// before its result feeds the next one, so even six interleaved chains
/// (above) spend a kilobyte-sized frame mostly in joins and serial tails.
/// Folding instead moves four 64-byte accumulators 256 bytes along the
/// message per step (two carry-less multiplications and one three-way XOR
/// each, all four independent), then folds them into one 16-byte block
/// whose remainder two crc32 instructions take. A buffer is padded in
/// front to whole 256-byte steps (see [`wide::crc32c`]), so a frame of any
/// length takes the same instructions but for the number of steps: no
/// tail loops, whose trip counts vary with each frame's length.
///
/// Checking every frame of the 100 MB fixture of `store.load_throughput`
/// (90,112 frames of about 1.1 KB) through a populated mapping on one core
/// (`store/examples/load_vs_read`), AMD EPYC family 26 model 2: 2.8-3.0 ms,
/// against 2.2-2.4 ms to XOR every word of it (the memory stream); with
/// tail loops after the steps (one of 64 bytes, one of 16, then words,
/// halves and bytes) a full load on one core took 6.3-6.5 ms of CPU
/// instead of 4.9.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::*;

    /// Whether this CPU has the instructions [`crc32c`] uses (detected
    /// once; the standard library caches the answer).
    #[inline]
    pub(super) fn available() -> bool {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0: not asked yet; 1: yes; 2: no. One load per checksum instead
        // of six feature tests.
        static WIDE: AtomicU8 = AtomicU8::new(0);
        match WIDE.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let yes = std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("vpclmulqdq")
                    && std::arch::is_x86_feature_detected!("pclmulqdq")
                    && std::arch::is_x86_feature_detected!("sse4.2");
                WIDE.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
                yes
            }
        }
    }

    /// `x^e` modulo the CRC-32C polynomial, in the reflected bit order the
    /// crc32 instruction uses (bit 31 is `x^0`).
    const fn xpow(e: usize) -> u64 {
        let mut r: u32 = 0x8000_0000;
        let mut k = 0;
        while k < e {
            r = (r >> 1) ^ if r & 1 != 0 { 0x82F6_3B78 } else { 0 };
            k += 1;
        }
        r as u64
    }
    /// The constants that move a 16-byte block `d` bytes further along the
    /// message: carry-less products of its low half by the first and of its
    /// high half by the second, added together, are a block with the same
    /// remainder `d` bytes later (found, and checked in the tests, against the
    /// crc32 instruction).
    const fn pair(d: usize) -> (u64, u64) {
        (xpow(8 * d + 31), xpow(8 * d - 33))
    }
    const K16: (u64, u64) = pair(16);
    const K32: (u64, u64) = pair(32);
    const K48: (u64, u64) = pair(48);
    const K64: (u64, u64) = pair(64);
    const K128: (u64, u64) = pair(128);
    const K192: (u64, u64) = pair(192);
    const K256: (u64, u64) = pair(256);

    /// `k` in each of the four 16-byte lanes.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn splat(k: (u64, u64)) -> __m512i {
        let (lo, hi) = (k.0 as i64, k.1 as i64);
        _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo)
    }

    /// Each 16-byte lane of `x` moved along by the distance `k` stands for,
    /// added to `y`.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold(x: __m512i, k: __m512i, y: __m512i) -> __m512i {
        let a = _mm512_clmulepi64_epi128::<0x00>(x, k);
        let b = _mm512_clmulepi64_epi128::<0x11>(x, k);
        _mm512_ternarylogic_epi64::<0x96>(a, b, y)
    }

    /// `START[k]` is the register that `k` zero bytes advance to `!0`, the
    /// register a crc32c starts from.
    static START: [u32; 256] = start_table();

    const fn start_table() -> [u32; 256] {
        let mut t = [0u32; 256];
        let mut r: u32 = !0;
        let mut k = 0;
        while k < 256 {
            t[k] = r;
            // One zero byte back: the crc step `r >> 1 ^ (r & 1) * P`
            // undone eight times (bit 31 of a stepped register is set
            // exactly when the step added the polynomial, whose bit 31 is).
            let mut b = 0;
            while b < 8 {
                r = if r & 0x8000_0000 != 0 {
                    ((r ^ 0x82F6_3B78) << 1) | 1
                } else {
                    r << 1
                };
                b += 1;
            }
            k += 1;
        }
        t
    }

    /// The mask of the bytes of a 64-byte block from the `skip`th on.
    #[inline]
    fn from_byte(skip: usize) -> u64 {
        u64::MAX.checked_shl(skip as u32).unwrap_or(0)
    }

    /// The crc32c of `data`, with no branch that depends on its length
    /// other than the one loop over its 256-byte steps.
    ///
    /// The buffer is read as if `k` zero bytes came before it, `k` making
    /// the whole a multiple of 256 bytes, and the register starts at
    /// `START[k]`, which those zero bytes advance to the usual `!0`. The
    /// first four 64-byte blocks are loaded with a mask that leaves those
    /// bytes zero (masked-off bytes are not read, so nothing before `data`
    /// is touched). Every buffer then ends on a whole step: no 64-byte,
    /// 16-byte or word-sized tail, whose varying counts cost a
    /// mispredicted branch or two per frame and kept one frame's checks
    /// from overlapping the next.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,vpclmulqdq,pclmulqdq,sse4.2")]
    pub(super) fn crc32c(data: &[u8]) -> u32 {
        let n = data.len();
        if n == 0 {
            return 0;
        }
        let k = n.wrapping_neg() % 256;
        let p = data.as_ptr().wrapping_sub(k);
        let keep = |j: usize| from_byte(k.saturating_sub(64 * j));
        // SAFETY: the mask selects the bytes of `p + 64 j .. + 64` at
        // `p + k` (the start of `data`) and after, which lie in `data`
        // (`64 j + 64 <= 256 <= n + k`); the others are not read.
        let first =
            |j: usize| unsafe { _mm512_maskz_loadu_epi8(keep(j), p.wrapping_add(64 * j).cast()) };
        let start = _mm512_zextsi128_si512(_mm_cvtsi32_si128(START[k] as i32));
        let mut x0 = _mm512_xor_si512(first(0), start);
        let (mut x1, mut x2, mut x3) = (first(1), first(2), first(3));
        // SAFETY: `256 <= i` and `i + 256 <= n + k`, so each load lies in
        // `p + k .. p + k + n`, that is in `data`.
        let ld = |i: usize| unsafe { _mm512_loadu_si512(p.wrapping_add(i).cast()) };
        let k256 = splat(K256);
        let mut i = 256;
        while i < n + k {
            x0 = fold(x0, k256, ld(i));
            x1 = fold(x1, k256, ld(i + 64));
            x2 = fold(x2, k256, ld(i + 128));
            x3 = fold(x3, k256, ld(i + 192));
            i += 256;
        }
        let a = fold(x0, splat(K192), x3);
        let b = fold(x1, splat(K128), _mm512_setzero_si512());
        let x = fold(x2, splat(K64), b);
        !reduce(_mm512_xor_si512(a, x))
    }

    /// The register of a 64-byte accumulator: its lanes 0..2 folded onto
    /// lane 3's position, the 16 bytes left taken by two crc32 instructions.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,vpclmulqdq,sse4.2")]
    fn reduce(x: __m512i) -> u32 {
        let kl = _mm512_set_epi64(
            0,
            0,
            K16.1 as i64,
            K16.0 as i64,
            K32.1 as i64,
            K32.0 as i64,
            K48.1 as i64,
            K48.0 as i64,
        );
        let y = fold(x, kl, _mm512_maskz_mov_epi64(0b1100_0000, x));
        let h = _mm256_xor_si256(_mm512_castsi512_si256(y), _mm512_extracti64x4_epi64::<1>(y));
        let r = _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
        let lo = _mm_cvtsi128_si64(r) as u64;
        let hi = _mm_extract_epi64::<1>(r) as u64;
        _mm_crc32_u64(_mm_crc32_u64(0, lo), hi) as u32
    }
}
