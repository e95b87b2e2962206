//! divan benchmarks for the session store: append, open to "selected leaf
//! ready", full load against a plain sequential read, and fork.
//!
//! Fixtures of 10 MB and 100 MB (and 1 GiB with `SMITH_BENCH_GIB=1`) are
//! written once to the system temp directory and reused.

use std::path::PathBuf;

use divan::{Bencher, black_box};
use smith_store::{Limits, SessionFile, SessionId, Store, bench_support, compress::Compressor};

fn main() {
    divan::main();
}

fn fixture(mb: u64) -> PathBuf {
    let path = std::env::temp_dir().join(format!("smith-store-bench-{mb}mb-c2.smith"));
    if !path.exists() {
        let tmp = path.with_extension("partial");
        bench_support::write_representative_session(&tmp, mb << 20).expect("write fixture");
        std::fs::rename(&tmp, &path).expect("publish fixture");
    }
    path
}

fn sizes() -> Vec<u64> {
    let mut v = vec![10, 100];
    if std::env::var_os("SMITH_BENCH_GIB").is_some() {
        v.push(1024);
    }
    v
}

/// Encoding 1,000 representative entries into frames (the spec's 5 ms target).
#[divan::bench]
fn encode_1000_entries(b: Bencher<'_, '_>) {
    let entries = bench_support::representative_entries(1000);
    let mut comp = Compressor::new().expect("compressor");
    let (mut out, mut map) = (Vec::with_capacity(4 << 20), Vec::new());
    b.bench_local(|| {
        out.clear();
        bench_support::encode_entries(&mut comp, &entries, &mut out, &mut map);
        black_box(out.len())
    });
}

/// Durably appending 1,000 entries in one batch (one write, one fsync).
#[divan::bench(sample_count = 20)]
fn append_1000_entries_durable(b: Bencher<'_, '_>) {
    let dir = tempfile::tempdir().expect("dir");
    let store = Store::open(dir.path()).expect("store");
    let entries = bench_support::representative_entries(1000);
    let new: Vec<_> = entries
        .iter()
        .map(|(k, p, c)| smith_store::NewEntry {
            kind: *k,
            parent: None,
            timestamp_ms: Some(1),
            pairing: *p,
            content: c,
        })
        .collect();
    b.with_inputs(|| store.create(None).expect("create"))
        .bench_local_values(|mut s| {
            store.append(&mut s, &new).expect("append");
            s
        });
}

/// Open (map + header) and read the selected leaf and 50 ancestors.
#[divan::bench(args = sizes())]
fn open_to_leaf_ready(b: Bencher<'_, '_>, mb: u64) {
    let path = fixture(mb);
    let limits = Limits::default();
    b.bench_local(|| {
        let f = SessionFile::open(&path).expect("open");
        let bump = bumpalo::Bump::new();
        let recent = f
            .recent(50, &limits, &bump)
            .expect("recent")
            .expect("intact");
        black_box(recent.len())
    });
}

/// Full load into the index arena.
#[divan::bench(args = sizes(), sample_count = 10)]
fn full_load(b: Bencher<'_, '_>, mb: u64) {
    let path = fixture(mb);
    let f = SessionFile::open(&path).expect("open");
    let limits = Limits::default();
    b.counter(divan::counter::BytesCount::new(f.bytes().len()))
        .bench_local(|| black_box(f.load(&limits).expect("load").records().len()));
}

/// The baseline for full load: a plain sequential read of the same file.
#[divan::bench(args = sizes(), sample_count = 10)]
fn sequential_read(b: Bencher<'_, '_>, mb: u64) {
    let path = fixture(mb);
    let len = std::fs::metadata(&path).expect("meta").len();
    b.counter(divan::counter::BytesCount::new(len as usize))
        .bench_local(|| black_box(bench_support::sequential_read(&path).expect("read")));
}

/// Forking the whole selected branch of a loaded session.
#[divan::bench(args = sizes(), sample_count = 10)]
fn fork_branch(b: Bencher<'_, '_>, mb: u64) {
    let s = SessionFile::open(&fixture(mb))
        .expect("open")
        .load(&Limits::default())
        .expect("load");
    b.bench_local(|| black_box(s.fork(SessionId([1; 16]), 0).branch().len()));
}
