//! Measures the compression threshold trade-off and the store's main
//! operations in thread CPU time (robust on a busy machine). Run with
//! `cargo run --release -p smith-store --example measure`.

use smith_store::{Limits, Session, SessionId, bench_support, compress::Compressor, format};

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

fn rss_anon_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// With a session file argument: open-to-leaf, private memory while opening,
/// full load against a sequential read, and fork, on that file.
fn measure_file(path: &std::path::Path) {
    let len = std::fs::metadata(path).expect("fixture").len();
    let limits = Limits::default();
    let before = rss_anon_kib();
    let wall = std::time::Instant::now();
    let f = smith_store::SessionFile::open(path).expect("open");
    let bump = bumpalo::Bump::new();
    let n = f
        .recent(50, &limits, &bump)
        .expect("recent")
        .expect("intact")
        .len();
    let open_us = wall.elapsed().as_micros();
    let private = rss_anon_kib().saturating_sub(before);
    let open_med = median(
        || {
            let f = smith_store::SessionFile::open(path).expect("open");
            let bump = bumpalo::Bump::new();
            std::hint::black_box(
                f.recent(50, &limits, &bump)
                    .expect("recent")
                    .expect("intact")
                    .len(),
            );
        },
        101,
    );
    let seq = median(
        || {
            std::hint::black_box(bench_support::sequential_read(path).expect("read"));
        },
        5,
    );
    let load = median(
        || drop(std::hint::black_box(f.load(&limits).expect("load"))),
        5,
    );
    // The floor for any loader that copies: the mapped bytes into a fresh
    // buffer (page faults and the kernel's zeroing of new pages included).
    let copy = median(|| drop(std::hint::black_box(f.bytes().to_vec())), 5);
    // The same load copying every payload into an owned arena (what every
    // load did before the arena became the mapping), and the load from a
    // fresh open (page tables built again), as `smith bench` measures it.
    let copying = median(
        || {
            drop(std::hint::black_box(
                Session::load_bytes(f.bytes(), &limits, "m").expect("load"),
            ))
        },
        5,
    );
    let fresh = median(
        || {
            drop(std::hint::black_box(
                smith_store::SessionFile::open(path)
                    .expect("open")
                    .load(&limits)
                    .expect("load"),
            ))
        },
        5,
    );
    println!(
        "  load from a fresh open {fresh:.1} ms CPU (ratio {:.2}); copying load {copying:.1} ms CPU (ratio {:.2})",
        seq / fresh,
        seq / copying
    );
    let s = f.load(&limits).expect("load");
    let fork = median(
        || drop(std::hint::black_box(s.fork(SessionId([2; 16]), 0))),
        5,
    );
    let recs = s.branch().len();
    let rec_copy = median(|| drop(std::hint::black_box(s.branch().to_vec())), 5);
    println!(
        "{}: {len} bytes, {} entries ({} compressed)\n  open to leaf ready (leaf + {} ancestors): first {open_us} us wall, median {open_med:.3} ms CPU; private memory grew {private} KiB\n  full load {load:.1} ms CPU vs sequential read {seq:.1} ms CPU (throughput ratio {:.2}); copy of the mapped file into a fresh buffer {copy:.1} ms CPU (ratio {:.2})\n  fork of {recs}-entry branch {fork:.1} ms CPU; memcpy of its records alone {rec_copy:.1} ms",
        path.display(),
        s.records().len(),
        s.report().compressed_entries,
        n - 1,
        seq / load,
        seq / copy,
    );
}

fn main() {
    if let Some(p) = std::env::args_os().nth(1) {
        let path = std::path::PathBuf::from(p);
        if !path.exists() {
            let mb: u64 = std::env::var("SMITH_MEASURE_MB")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(10);
            bench_support::write_representative_session(&path, mb << 20).expect("write fixture");
        }
        measure_file(&path);
        return;
    }
    let entries = bench_support::representative_entries(1000);
    let raw: usize = entries.iter().map(|e| e.2.len()).sum();
    println!("1000 representative entries: {raw} content bytes");
    for t in [512usize, 1024, 2048, 4096, 8192, usize::MAX] {
        let mut comp = Compressor::with_threshold(t).expect("compressor");
        let (mut out, mut map) = (Vec::with_capacity(4 << 20), Vec::new());
        let ms = median(
            || {
                out.clear();
                bench_support::encode_entries(&mut comp, &entries, &mut out, &mut map);
            },
            31,
        );
        // Load cost of the same bytes (scaled to 10x: 10,000 entries).
        let mut file = format::encode_header(SessionId([1; 16]), 0).to_vec();
        let many = bench_support::representative_entries(10_000);
        bench_support::encode_entries(&mut comp, &many, &mut file, &mut map);
        let load = median(
            || drop(Session::load_bytes(&file, &Limits::default(), "m").expect("load")),
            11,
        );
        let copy = median(|| drop(std::hint::black_box(file.clone())), 11);
        println!(
            "threshold {:>6}: encode 1000 = {ms:.2} ms CPU, file {} bytes ({:.2}x), load 10k = {load:.2} ms, memcpy of file = {copy:.2} ms",
            if t == usize::MAX {
                "none".to_string()
            } else {
                t.to_string()
            },
            out.len(),
            raw as f64 / out.len() as f64
        );
    }
}
