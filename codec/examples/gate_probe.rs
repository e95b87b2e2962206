//! A light stand-in for the `codec.encode_1000` and `codec.walk_1000` gates
//! that builds with this crate alone (the gate runner pulls in the whole
//! workspace): the same corpus generator (`perf-gates/src/entries.rs`, built
//! from its source), the same memcpy floor, subject and floor timed in
//! alternating batches (on the thread's CPU clock on Linux). For experiments on the codec and on build flags
//! (with a separate `CARGO_TARGET_DIR`); `smith bench` stays the judge.
//!
//! `cargo run --release -p smith-codec --example gate_probe -- [walk|encode] [rounds]`
//! prints, per measurement, the subject's and the floor's medians (ns per
//! operation) and their ratio. `chunks` encodes the same entries 25 at a
//! time into one buffer (cleared before each chunk), so the destination
//! stays in cache: the share of the encode that is writing a 943 KB buffer.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Instant;

#[allow(dead_code)]
#[path = "../../perf-gates/src/rng.rs"]
mod rng;

#[allow(dead_code)]
#[path = "../../perf-gates/src/entries.rs"]
mod entries;

/// Places blocks as `smith`'s accounting allocator does: behind a header
/// of 8 bytes (of the alignment above 8), so that buffers and strings sit
/// at the same offsets within cache lines as in the gate.
struct Headered;

const fn header(align: usize) -> usize {
    if align > 8 { align } else { 8 }
}

// SAFETY: every block is a `System` block of `size + header` bytes with the
// caller's alignment, handed out `header` bytes in (still aligned, as the
// header is a multiple of the alignment), and freed with the same layout.
unsafe impl GlobalAlloc for Headered {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let h = header(layout.align());
        let Ok(full) = Layout::from_size_align(layout.size() + h, layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `full` has a non-zero size.
        let base = unsafe { System.alloc(full) };
        if base.is_null() {
            base
        } else {
            base.wrapping_add(h)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let h = header(layout.align());
        let full =
            Layout::from_size_align(layout.size() + h, layout.align()).expect("allocated with it");
        // SAFETY: `ptr` came from `alloc` with `layout`.
        unsafe { System.dealloc(ptr.wrapping_sub(h), full) }
    }
}

#[global_allocator]
static GLOBAL: Headered = Headered;

fn memcpy_floor(dst: &mut Vec<u8>, src: &[u8]) {
    dst.clear();
    dst.extend_from_slice(src);
}

#[inline(never)]
fn encode_into(entries: &[entries::Entry], buf: &mut Vec<u8>) {
    buf.clear();
    entries::encode_entries(entries, buf);
}

/// The calling thread's CPU time in nanoseconds where the platform has a
/// thread clock (Linux), so that time spent waiting for a core while other
/// processes run is not counted, as in the gates; else the monotonic clock.
fn now_ns(start: Instant) -> f64 {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        unsafe extern "C" {
            fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec { sec: 0, nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec (two 64-bit fields on
        // 64-bit Linux), and the clock id is Linux's thread CPU clock.
        if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            let _ = start;
            return ts.sec as f64 * 1e9 + ts.nsec as f64;
        }
    }
    start.elapsed().as_nanos() as f64
}

fn batch(f: &mut dyn FnMut(), n: u32) -> f64 {
    let start = Instant::now();
    let t = now_ns(start);
    for _ in 0..n {
        f();
    }
    (now_ns(start) - t) / f64::from(n)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn paired(rounds: usize, subject: &mut dyn FnMut(), floor: &mut dyn FnMut()) -> (f64, f64) {
    // Warm both, then alternate batches of about 2 ms each.
    for _ in 0..50 {
        subject();
        floor();
    }
    let n = 40;
    let mut s = Vec::new();
    let mut f = Vec::new();
    for r in 0..rounds {
        if r % 2 == 0 {
            f.push(batch(floor, n));
            s.push(batch(subject, n));
        } else {
            s.push(batch(subject, n));
            f.push(batch(floor, n));
        }
    }
    (median(&mut s), median(&mut f))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("both", String::as_str);
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(60);
    let corpus = entries::generate(entries::DEFAULT_SEED, 1000);
    let mut encoded = Vec::new();
    entries::encode_entries(&corpus, &mut encoded);
    let mut dst = Vec::with_capacity(encoded.len());
    if what == "walk" || what == "both" {
        assert_eq!(entries::validate(&encoded).ok(), Some(1000));
        let (s, f) = paired(
            rounds,
            &mut || {
                let _ = black_box(entries::validate(black_box(&encoded)));
            },
            &mut || {
                memcpy_floor(&mut dst, black_box(&encoded));
                black_box(&dst);
            },
        );
        println!(
            "walk   {:8.1} ns  floor {:8.1} ns  ratio {:.2}",
            s,
            f,
            s / f
        );
    }
    if what == "copy" {
        let mut texts: Vec<&str> = Vec::new();
        for e in &corpus {
            match &e.content {
                entries::Content::User { text } | entries::Content::Assistant { text, .. } => {
                    texts.push(text)
                }
                entries::Content::ToolResult { output, .. } => texts.push(output),
                entries::Content::ToolCall { .. } => {}
            }
        }
        let total: usize = texts.iter().map(|t| t.len()).sum();
        let mut out = vec![0u8; total + 64];
        for mode in 0..3 {
            let (s, f) = paired(
                rounds,
                &mut || {
                    let mut at = 0;
                    for t in black_box(&texts) {
                        let b = t.as_bytes();
                        // SAFETY: every long text has at least 64 bytes, and
                        // `out` has room for all of them one after another.
                        unsafe { copy_mode(mode, b, out.as_mut_ptr().add(at)) };
                        at += b.len();
                    }
                    black_box(&out);
                },
                &mut || {
                    memcpy_floor(&mut dst, black_box(&encoded));
                    black_box(&dst);
                },
            );
            println!(
                "copy mode {mode} {} strings {total} bytes {:8.1} ns  floor {:8.1} ns  ratio {:.2}",
                texts.len(),
                s,
                f,
                s / f
            );
        }
    }
    if what == "prefix" {
        // The walk over the first entries only (cache-resident), per entry.
        for k in [20usize, 100, 1000] {
            let mut prefix = Vec::new();
            entries::encode_entries(&corpus[..k], &mut prefix);
            let (s, _) = paired(
                rounds,
                &mut || {
                    let _ = black_box(entries::validate(black_box(&prefix)));
                },
                &mut || {},
            );
            println!(
                "walk first {k:5} entries ({:7} bytes): {:8.1} ns per 1000 entries",
                prefix.len(),
                s * 1000.0 / k as f64
            );
        }
    }
    if what == "hot" {
        // The walk alone, run back to back (no floor evicting the input).
        let (s, _) = paired(
            rounds,
            &mut || {
                let _ = black_box(entries::validate(black_box(&encoded)));
            },
            &mut || {},
        );
        println!("walk back to back {:8.1} ns", s);
        let mut buf = Vec::with_capacity(encoded.len());
        let (s, _) = paired(
            rounds,
            &mut || {
                encode_into(black_box(&corpus), &mut buf);
                black_box(&buf);
            },
            &mut || {},
        );
        println!("encode back to back {:8.1} ns", s);
        let mut small = Vec::with_capacity(encoded.len());
        let (s, _) = paired(
            rounds,
            &mut || {
                encode_into(black_box(&corpus[..20]), &mut small);
                black_box(&small);
            },
            &mut || {},
        );
        println!("encode first 20 entries, per 1000 {:8.1} ns", s * 50.0);
    }
    if what == "count" {
        // A fixed number of walks and encodes and nothing else, for
        // instruction counts (`valgrind --tool=callgrind`).
        let mut buf = Vec::with_capacity(encoded.len());
        for _ in 0..rounds {
            let _ = black_box(entries::validate(black_box(&encoded)));
            encode_into(black_box(&corpus), &mut buf);
            black_box(&buf);
        }
    }
    if what == "encode-small" {
        // Encoding the first 20 entries (in cache) back to back, for profiles.
        let mut small = Vec::with_capacity(encoded.len());
        let (s, _) = paired(
            rounds,
            &mut || {
                encode_into(black_box(&corpus[..20]), &mut small);
                black_box(&small);
            },
            &mut || {},
        );
        println!("encode first 20 entries, per 1000 {:8.1} ns", s * 50.0);
    }
    if what == "parts" || what == "parts-hot" {
        let hot = what == "parts-hot";
        // The text payloads of the corpus, as byte ranges.
        let mut spans = Vec::new();
        let mut d = smith_codec::Decoder::strict(&encoded);
        while !d.is_at_end() {
            if let smith_codec::Token::Text(t) = d.next().expect("the corpus is canonical") {
                let end = d.position();
                spans.push((end - t.len(), t.len()));
            }
        }
        for (label, lo, hi) in [
            ("text >512", 513, usize::MAX),
            ("text 33..=512", 33, 512),
            ("text <=32", 0, 32),
        ] {
            let sel: Vec<(usize, usize)> = spans
                .iter()
                .copied()
                .filter(|s| s.1 >= lo && s.1 <= hi && (!hot || s.0 < 100_000))
                .collect();
            let bytes: usize = sel.iter().map(|s| s.1).sum();
            let (s, f) = paired(
                rounds,
                &mut || {
                    let mut ok = true;
                    for &(at, n) in black_box(&sel) {
                        ok &= simdutf8::basic::from_utf8(&encoded[at..at + n]).is_ok();
                    }
                    black_box(ok);
                },
                &mut || {
                    if !hot {
                        memcpy_floor(&mut dst, black_box(&encoded));
                        black_box(&dst);
                    }
                },
            );
            println!(
                "simdutf8 {label:14} {} strings {bytes} bytes {:8.1} ns  floor {:8.1} ns  ratio {:.2}",
                sel.len(),
                s,
                f,
                s / f
            );
            let (s, f) = paired(
                rounds,
                &mut || {
                    let mut acc = 0u8;
                    for &(at, n) in black_box(&sel) {
                        acc |= encoded[at..at + n].iter().fold(0u8, |a, &b| a | b);
                    }
                    black_box(acc);
                },
                &mut || {
                    if !hot {
                        memcpy_floor(&mut dst, black_box(&encoded));
                        black_box(&dst);
                    }
                },
            );
            println!(
                "or-fold  {label:14} {} strings {bytes} bytes {:8.1} ns  floor {:8.1} ns  ratio {:.2}",
                sel.len(),
                s,
                f,
                s / f
            );
        }
    }
    if what == "chunks" {
        let mut small = Vec::with_capacity(encoded.len());
        let (s, f) = paired(
            rounds,
            &mut || {
                for c in black_box(&corpus).chunks(25) {
                    encode_into(c, &mut small);
                    black_box(&small);
                }
            },
            &mut || {
                memcpy_floor(&mut dst, black_box(&encoded));
                black_box(&dst);
            },
        );
        println!(
            "encode in chunks of 25 into one buffer {:8.1} ns  floor {:8.1} ns  ratio {:.2}",
            s,
            f,
            s / f
        );
    }
    if what == "encode" || what == "both" {
        let mut buf = Vec::with_capacity(encoded.len());
        encode_into(&corpus, &mut buf);
        assert_eq!(buf, encoded);
        let (s, f) = paired(
            rounds,
            &mut || {
                encode_into(black_box(&corpus), &mut buf);
                black_box(&buf);
            },
            &mut || {
                memcpy_floor(&mut dst, black_box(&encoded));
                black_box(&dst);
            },
        );
        println!(
            "encode {:8.1} ns  floor {:8.1} ns  ratio {:.2}",
            s,
            f,
            s / f
        );
    }
}

/// Copies `src` (at least 64 bytes) to `dst`: mode 0 by `memcpy`, mode 1 by
/// 64-byte steps of 16-byte moves (the encoder's loop), mode 2 by 32-byte
/// AVX2 moves where the processor has them (else as mode 1). Each loop's
/// last step overlaps the one before it.
///
/// # Safety
///
/// `src.len() >= 64`; `dst` is valid for writes of `src.len()` bytes and
/// does not overlap `src`.
#[inline(never)]
unsafe fn copy_mode(mode: u32, src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    #[cfg(target_arch = "x86_64")]
    if mode == 2 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked); the caller's contract covers
        // the bytes.
        unsafe { avx2_copy(s, dst, n) };
        return;
    }
    type Block = [u128; 4];
    // SAFETY: every move reads inside `src` and writes inside `dst[..n]`
    // (the last step starts at `n - 64 >= 0`), unaligned.
    unsafe {
        if mode == 0 {
            std::ptr::copy_nonoverlapping(s, dst, n);
            return;
        }
        let mut i = 0;
        while i + 64 < n {
            let c = s.add(i).cast::<Block>().read_unaligned();
            dst.add(i).cast::<Block>().write_unaligned(c);
            i += 64;
        }
        let c = s.add(n - 64).cast::<Block>().read_unaligned();
        dst.add(n - 64).cast::<Block>().write_unaligned(c);
    }
}

/// [`copy_mode`]'s mode 2.
///
/// # Safety
///
/// As [`copy_mode`], and the processor has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_copy(s: *const u8, dst: *mut u8, n: usize) {
    use std::arch::x86_64::{_mm256_loadu_si256, _mm256_storeu_si256};
    // SAFETY: as in `copy_mode`; 32-byte unaligned moves.
    unsafe {
        let mut i = 0;
        while i + 64 < n {
            let a = _mm256_loadu_si256(s.add(i).cast());
            let b = _mm256_loadu_si256(s.add(i + 32).cast());
            _mm256_storeu_si256(dst.add(i).cast(), a);
            _mm256_storeu_si256(dst.add(i + 32).cast(), b);
            i += 64;
        }
        let i = n - 64;
        let a = _mm256_loadu_si256(s.add(i).cast());
        let b = _mm256_loadu_si256(s.add(i + 32).cast());
        _mm256_storeu_si256(dst.add(i).cast(), a);
        _mm256_storeu_si256(dst.add(i + 32).cast(), b);
    }
}
