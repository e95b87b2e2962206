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

fn main() {
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
