//! Measures zstd level and threshold choices on 1,000 representative
//! entries: thread CPU time to encode them (entry map, compression decision,
//! frame, checksum) and the compression ratio, plus the split of that time
//! between its parts. Run with
//! `cargo run --release -p smith-store --example compression`.

use smith_store::{
    bench_support,
    compress::Compressor,
    format::{self, EntryHead},
};

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(mut f: impl FnMut(), n: usize) -> f64 {
    let mut v: Vec<u64> = (0..n)
        .map(|_| {
            let t = cpu_ns();
            f();
            cpu_ns() - t
        })
        .collect();
    v.sort_unstable();
    v[n / 2] as f64 / 1e6
}

fn main() {
    let rounds: usize = std::env::var("SMITH_MEASURE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(51);
    let entries = bench_support::representative_entries(1000);
    let raw: usize = entries.iter().map(|e| e.2.len()).sum();
    let (mut out, mut map) = (Vec::with_capacity(4 << 20), Vec::new());

    // `SMITH_PROFILE=LEVEL,THRESHOLD`: only encode in a loop, for `perf record`.
    if let Some((level, t)) = std::env::var("SMITH_PROFILE").ok().and_then(|v| {
        let (l, t) = v.split_once(',')?;
        Some((l.parse::<i32>().ok()?, t.parse::<usize>().ok()?))
    }) {
        let mut comp = Compressor::with_params(level, t).expect("compressor");
        let ms = median(
            || {
                out.clear();
                bench_support::encode_entries(&mut comp, &entries, &mut out, &mut map);
            },
            rounds,
        );
        println!("level {level}, threshold {t}: {ms:.3} ms");
        return;
    }

    // The parts of the work, each alone.
    let maps = median(
        || {
            for (i, (kind, pairing, content)) in entries.iter().enumerate() {
                let head = EntryHead {
                    id: i as u64 + 1,
                    parent: i as u64,
                    timestamp_ms: 1_700_000_000_000,
                    kind: kind.code(),
                    pairing: *pairing,
                };
                map.clear();
                format::encode_entry(&mut map, &head, content);
                std::hint::black_box(&map);
            }
        },
        rounds,
    );
    let mut none = Compressor::with_params(1, usize::MAX).expect("compressor");
    out.clear();
    bench_support::encode_entries(&mut none, &entries, &mut out, &mut map);
    let plain = out.clone();
    let crc = median(
        || {
            std::hint::black_box(crc32c::crc32c(&plain));
        },
        rounds,
    );
    let copy = median(|| drop(std::hint::black_box(plain.clone())), rounds);
    println!(
        "1000 representative entries: {raw} content bytes, {} framed bytes uncompressed",
        plain.len()
    );
    println!(
        "parts: entry maps {maps:.3} ms, crc32c over all frames {crc:.3} ms, one copy of all frames {copy:.3} ms"
    );

    println!("| level | threshold | encode 1,000 (ms CPU, median) | file bytes | ratio |");
    println!("|---|---|---|---|---|");
    let mut rows = vec![(1, usize::MAX)];
    for level in [1, -1, -5, -10] {
        for t in [4096usize, 5120, 5632, 6144, 8192] {
            rows.push((level, t));
        }
    }
    // The lower thresholds of docs/session-format.md §4.1 (Sizes).
    rows.extend([(1, 256), (1, 512), (1, 1024), (1, 2048), (3, 256)]);
    for (level, t) in rows {
        let mut comp = Compressor::with_params(level, t).expect("compressor");
        let ms = median(
            || {
                out.clear();
                bench_support::encode_entries(&mut comp, &entries, &mut out, &mut map);
            },
            rounds,
        );
        println!(
            "| {} | {} | {ms:.3} | {} | {:.3}x |",
            if t == usize::MAX {
                "-".to_string()
            } else {
                level.to_string()
            },
            if t == usize::MAX {
                "none".to_string()
            } else {
                t.to_string()
            },
            out.len(),
            plain.len() as f64 / out.len() as f64
        );
    }
}
