//! Times a full load of a session file against the floor of the gate
//! `store.load_throughput` (a sequential `read` into a reused 1 MiB
//! buffer), and the parts a load through the file's mapping is made of,
//! each interleaved with the floor, on the wall clock and on this process's
//! CPU clock (docs/benchmarks.md, "`store.load_throughput`: one core").
//!
//! `cargo run --release -p smith-store --example load_vs_read -- [PATH|-]
//! [SAMPLES] [WHAT...]`. Without a path (`-`), a 100 MB fixture is written
//! to the temp directory (as the gate writes its own, and flushed) and
//! removed at the end; a path that does not exist gets one, which stays.
//! WHAT is any of:
//!
//! * `load`: `SessionFile::open` + `load` + drop, as the gate times it;
//! * `load:one`: the same on one thread (`map` or `buf` after it force
//!   reading through the mapping or through buffers, as in `load:one:map`);
//! * `populate`: map, `MADV_POPULATE_READ`, unmap: no byte read;
//! * `touch`: map, read one byte per 4 KiB page, unmap;
//! * `unmap`: unmapping a populated mapping, alone;
//! * `xor`: XOR of every word of a populated mapping (the memory stream);
//! * `xor2`: the same in two halves on two threads at once (the memory
//!   stream two cores draw);
//! * `check`: every frame's lengths and crc32c through a populated mapping
//!   (`scan::scan`), no record built.
//!
//! Run it pinned (`taskset -c 0`) to see what one core does.

use std::hint::black_box;
use std::time::Instant;

use smith_store::{Limits, SessionFile, bench_support};

/// This process's CPU time (all threads), in ns.
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The jiffies all CPUs were busy, and this process's own.
fn busy() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let all = cpu
        .iter()
        .take(8)
        .enumerate()
        .filter(|&(i, _)| i != 3 && i != 4);
    let all = all.map(|(_, v)| v).sum();
    let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<u64> = me
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (
        all,
        fields.get(11).unwrap_or(&0) + fields.get(12).unwrap_or(&0),
    )
}

/// A read-only shared mapping of a whole file.
struct Map {
    at: *mut libc::c_void,
    len: usize,
}

impl Map {
    fn new(file: &std::fs::File, len: usize) -> Self {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh read-only mapping of an open file, unmapped on drop.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED, "mmap");
        Self { at, len }
    }

    fn populate(&self) {
        // SAFETY: advice on this mapping only.
        let rc = unsafe { libc::madvise(self.at, self.len, libc::MADV_POPULATE_READ) };
        assert_eq!(rc, 0, "MADV_POPULATE_READ (Linux 5.14 or later)");
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes, alive while `self` is.
        unsafe { std::slice::from_raw_parts(self.at.cast(), self.len) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `new`.
        unsafe { libc::munmap(self.at, self.len) };
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let samples: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(31);
    // A path that does not exist yet gets the fixture, and keeps it.
    let (path, remove) = match args.first().filter(|a| *a != "-") {
        Some(p) => (std::path::PathBuf::from(p), false),
        None => {
            let p = std::env::temp_dir().join(format!("load_vs_read_{}.smith", std::process::id()));
            (p, true)
        }
    };
    if !path.exists() {
        bench_support::write_session_fast_aligned(&path, 100_000_000).expect("fixture");
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .expect("flush");
    }
    let what: Vec<&str> = if args.len() > 2 {
        args[2..].iter().map(String::as_str).collect()
    } else {
        vec![
            "load", "load:one", "populate", "touch", "unmap", "xor", "check",
        ]
    };
    let file = std::fs::File::open(&path).expect("open");
    let len = file.metadata().expect("metadata").len() as usize;
    let limits = Limits::default();
    let run = |what: &str| -> f64 {
        let mut parts = what.split(':');
        let t;
        match parts.next() {
            Some("load") => {
                let mut one = false;
                let mut mapping = None;
                for p in parts {
                    match p {
                        "one" => one = true,
                        "map" => mapping = Some(true),
                        "buf" => mapping = Some(false),
                        _ => panic!("unknown: {what}"),
                    }
                }
                smith_store::set_parallel_load_min(if one { usize::MAX } else { 16 << 20 });
                smith_store::set_load_reads_mapping(mapping);
                t = Instant::now();
                let s = SessionFile::open(&path)
                    .and_then(|f| f.load(&limits))
                    .expect("load");
                drop(black_box(s));
            }
            Some("populate") => {
                t = Instant::now();
                Map::new(&file, len).populate();
            }
            Some("touch") => {
                t = Instant::now();
                let m = Map::new(&file, len);
                let mut x = 0u8;
                for i in (0..len).step_by(4096) {
                    x ^= m.bytes()[i];
                }
                black_box(x);
            }
            Some("unmap") => {
                let m = Map::new(&file, len);
                m.populate();
                t = Instant::now();
                drop(m);
            }
            Some("xor2") => {
                let m = Map::new(&file, len);
                m.populate();
                t = Instant::now();
                let b = m.bytes();
                let (l, r) = b.split_at(b.len() / 2 / 8 * 8);
                let f = |h: &[u8]| {
                    let mut x = 0u64;
                    for w in h.chunks_exact(8) {
                        x ^= u64::from_le_bytes(w.try_into().expect("8 bytes"));
                    }
                    x
                };
                let x = std::thread::scope(|sc| {
                    let j = sc.spawn(|| f(r));
                    f(l) ^ j.join().expect("the second half's thread")
                });
                black_box(x);
                let e = t.elapsed().as_secs_f64() * 1e3;
                drop(m);
                return e;
            }
            Some("xor") => {
                let m = Map::new(&file, len);
                m.populate();
                t = Instant::now();
                let mut x = 0u64;
                for w in m.bytes().chunks_exact(8) {
                    x ^= u64::from_le_bytes(w.try_into().expect("8 bytes"));
                }
                black_box(x);
                let e = t.elapsed().as_secs_f64() * 1e3;
                drop(m);
                return e;
            }
            Some("check") => {
                let m = Map::new(&file, len);
                m.populate();
                t = Instant::now();
                let r = smith_store::scan::scan(m.bytes(), 48, &limits, "fixture", |_| Ok(()))
                    .expect("scan");
                black_box(r);
                let e = t.elapsed().as_secs_f64() * 1e3;
                drop(m);
                return e;
            }
            _ => panic!("unknown: {what}"),
        }
        t.elapsed().as_secs_f64() * 1e3
    };
    let floor = || {
        let t = Instant::now();
        black_box(bench_support::sequential_read(&path).expect("read"));
        t.elapsed().as_secs_f64() * 1e3
    };
    for _ in 0..3 {
        floor();
        for w in &what {
            run(w);
        }
    }
    let b0 = busy();
    let t0 = Instant::now();
    let (mut fw, mut fc) = (Vec::new(), Vec::new());
    let mut ww = vec![Vec::new(); what.len()];
    let mut wc = vec![Vec::new(); what.len()];
    let mut ratios = vec![Vec::new(); what.len()];
    let mut counts = vec![[0u64; 3]; what.len()];
    for i in 0..samples {
        let c = cpu_ns();
        let f = floor();
        fc.push((cpu_ns() - c) as f64 / 1e6);
        fw.push(f);
        for k in 0..what.len() {
            // Rotated, so that nothing always runs right after the floor.
            let j = (k + i) % what.len();
            let before = [
                smith_store::parallel_load_joins(),
                smith_store::parallel_load_takes(),
                smith_store::parallel_load_helps(),
            ];
            let c = cpu_ns();
            let w = run(what[j]);
            wc[j].push((cpu_ns() - c) as f64 / 1e6);
            ww[j].push(w);
            ratios[j].push(w / f);
            counts[j][0] += smith_store::parallel_load_joins() - before[0];
            counts[j][1] += smith_store::parallel_load_takes() - before[1];
            counts[j][2] += smith_store::parallel_load_helps() - before[2];
        }
    }
    let b1 = busy();
    let secs = t0.elapsed().as_secs_f64();
    let others = ((b1.0 - b0.0) as f64 - (b1.1 - b0.1) as f64) / 100.0 / secs;
    let frames = smith_store::scan::scan(
        &std::fs::read(&path).expect("read"),
        48,
        &limits,
        "f",
        |_| Ok(()),
    )
    .expect("scan")
    .frames;
    println!(
        "{} ({len} bytes, {frames} frames; {} 4 KiB pages); others busy {others:.2} cores over {secs:.1} s",
        path.display(),
        len.div_ceil(4096)
    );
    let (f0, c0) = (median(&fw), median(&fc));
    println!(
        "{:16} wall {f0:7.3} ms          cpu {c0:7.3} ms",
        "floor (read)"
    );
    for (j, w) in what.iter().enumerate() {
        let (m, c) = (median(&ww[j]), median(&wc[j]));
        print!(
            "{w:16} wall {m:7.3} ms {:5.2}x  cpu {c:7.3} ms {:5.2}x  (median pair ratio {:.2}x",
            m / f0,
            c / c0,
            median(&ratios[j])
        );
        if w.starts_with("load") {
            println!(
                "; joined {}, took the end {}, helped {})",
                counts[j][0], counts[j][1], counts[j][2]
            );
        } else {
            println!(
                "; {:.1} ns per 4 KiB page)",
                m * 1e6 / len.div_ceil(4096) as f64
            );
        }
    }
    if remove {
        std::fs::remove_file(&path).expect("remove the fixture");
    }
}
