//! Measures zstd level and threshold choices on 1,000 representative
//! entries: thread CPU time to encode them (entry map, compression decision,
//! frame, checksum) and the compression ratio, plus the split of that time
//! between its parts. Run with
//! `cargo run --release -p smith-store --example compression`.
//!
//! `SMITH_APPEND=1` measures the durable append of those entries under
//! each setting of `session.compression` instead.
//!
//! `SMITH_SESSIONS=A.smith,B.smith` measures session files instead: each
//! entry of each file is written again, exactly as the store writes it,
//! at each level and threshold of `SMITH_SETTINGS` (`LEVEL,THRESHOLD;...`,
//! default: the `fast` and `small` settings and the alternatives of
//! `docs/session-format.md` §4.1), and the table gives the file's size, the entries stored
//! compressed, and the thread CPU time a reader spends decompressing every
//! compressed content once (`Session::content_in`, the path search, dump
//! and replay decode through), in all and per MB of that file. The
//! readers' gates (`session.*`) are measured per MB of file, so a setting
//! that shrinks a file raises their figures even when decoding costs
//! nothing.

use smith_store::{
    Limits, Session, bench_support,
    compress::{self, Compressor},
    format::{self, EntryHead, KIND_ENTRY},
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
    if let Ok(paths) = std::env::var("SMITH_SESSIONS") {
        let settings = std::env::var("SMITH_SETTINGS").map_or_else(
            |_| {
                let mut v = vec![(compress::LEVEL, compress::THRESHOLD), (1, 6144)];
                v.extend([(1, 2048), (1, 1024), (1, 256), (3, 256)]);
                // The `small` setting and its neighbours (§8).
                v.extend([
                    (3, 128),
                    (4, 128),
                    (compress::SMALL_LEVEL, compress::SMALL_THRESHOLD),
                    (5, 128),
                    (6, 128),
                    (7, 128),
                    (19, 256),
                ]);
                v
            },
            |s| {
                s.split(';')
                    .map(|p| {
                        p.split_once(',')
                            .and_then(|(l, t)| Some((l.parse().ok()?, t.parse().ok()?)))
                            .unwrap_or_else(|| {
                                panic!("SMITH_SETTINGS: {p:?} is not LEVEL,THRESHOLD (two whole numbers)")
                            })
                    })
                    .collect()
            },
        );
        for path in paths.split(',') {
            sessions(path, &settings, rounds);
        }
        return;
    }
    if std::env::var_os("SMITH_APPEND").is_some() {
        appends(rounds);
        return;
    }
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
    rows.extend([
        (1, 256),
        (1, 512),
        (1, 1024),
        (1, 2048),
        (3, 128),
        (3, 256),
        (4, 128),
        (compress::SMALL_LEVEL, compress::SMALL_THRESHOLD),
        (19, 256),
    ]);
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

/// `SMITH_APPEND=1`: the durable append of 1,000 representative entries
/// (`Store::append`, as the gate `store.append_1000` measures it: lock,
/// encode, compress, one write, fdatasync) under each setting, thread CPU
/// time, median of `rounds`; a fresh session every 8 appends.
fn appends(rounds: usize) {
    use smith_store::{NewEntry, Store, compress::Compression};
    let generated = bench_support::representative_entries(1000);
    let entries: Vec<NewEntry<'_>> = generated
        .iter()
        .map(|(kind, pairing, content)| NewEntry {
            kind: *kind,
            parent: None,
            timestamp_ms: Some(1_700_000_000_000),
            pairing: *pairing,
            content,
        })
        .collect();
    println!("| setting | append 1,000 entries (ms CPU, median) | bytes appended |");
    println!("|---|---|---|");
    for c in [Compression::Fast, Compression::Small] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = Store::open(dir.path()).expect("store");
        store.set_compression(c);
        let mut session = store.create(None).expect("session");
        let mut n = 0usize;
        let ms = median(
            || {
                if n % 8 == 7 {
                    session = store.create(None).expect("session");
                }
                n += 1;
                store.append(&mut session, &entries).expect("append");
            },
            rounds,
        );
        let fresh = store.create(None).expect("session");
        let mut s = fresh;
        store.append(&mut s, &entries).expect("append");
        let bytes = std::fs::metadata(store.path_of(s.id()))
            .expect("file")
            .len()
            - format::HEADER_LEN as u64;
        println!("| {} | {ms:.3} | {bytes} |", c.name());
    }
}

/// Writes the entries of the session file at `path` again at each of
/// `settings` and prints what that gives (see the module's documentation).
fn sessions(path: &str, settings: &[(i32, usize)], rounds: usize) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("could not read {path}: {e}"));
    let session = Session::load_bytes(&bytes, &Limits::default(), path)
        .unwrap_or_else(|e| panic!("could not load {path}: {e}"));
    let entries: Vec<(EntryHead, Vec<u8>)> = session
        .records()
        .iter()
        .map(|r| {
            let head = EntryHead {
                id: r.id,
                parent: r.parent,
                timestamp_ms: r.timestamp_ms,
                kind: r.kind,
                pairing: r.pairing,
            };
            let content = session
                .content(r)
                .unwrap_or_else(|e| panic!("{path}: entry {}: {e}", r.id));
            (head, content.into_owned())
        })
        .collect();
    let raw: usize = entries.iter().map(|e| e.1.len()).sum();
    println!(
        "{path}: {} bytes as written, {} entries, {raw} content bytes",
        bytes.len(),
        entries.len()
    );
    println!(
        "| level | threshold | file bytes | of the file as written | compressed entries | decode all (ms CPU, median) | decode per MB of file (ms) |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut map = Vec::new();
    for &(level, t) in settings {
        let mut comp = Compressor::with_params(level, t).expect("compressor");
        let mut out = bytes[..format::HEADER_LEN].to_vec();
        let mut at = std::collections::HashMap::new();
        for (head, content) in &entries {
            map.clear();
            format::encode_entry(&mut map, head, content);
            let here = out.len() as u64;
            let link = at.get(&head.parent).map_or(0, |p| here - p);
            comp.frame(&mut out, KIND_ENTRY, link, &map);
            at.insert(head.id, here);
        }
        let again = Session::load_bytes(&out, &Limits::default(), path).expect("load");
        assert_eq!(
            again.records().len(),
            entries.len(),
            "{path}: every entry reads"
        );
        let compressed: Vec<_> = again
            .records()
            .iter()
            .filter(|r| r.is_compressed())
            .copied()
            .collect();
        let mut bump = bumpalo::Bump::new();
        let ms = median(
            || {
                for r in &compressed {
                    std::hint::black_box(again.content_in(r, &bump).expect("decode"));
                }
                bump.reset();
            },
            rounds,
        );
        println!(
            "| {level} | {t} | {} | {:.4} | {} | {ms:.3} | {:.3} |",
            out.len(),
            out.len() as f64 / bytes.len() as f64,
            compressed.len(),
            ms / (out.len() as f64 / 1e6)
        );
    }
}
