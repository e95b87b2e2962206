//! One test per guarantee of the spec's "Sessions" section.

use std::process::Command;

use smith_store::publish::STEPS;
use smith_store::{
    EntryKind, ErrorKind, Limits, Session, SessionFile, SessionId, Store, dump, format,
};

use crate::loads::{same_load, varied_file};
use crate::{entry, frame_ends, sample_session, temp_store, text};

#[test]
fn deterministic_encoding() {
    // The same history written into two stores gives identical files.
    let (_a, sa) = temp_store();
    let (_b, sb) = temp_store();
    let one = sample_session(&sa);
    let two = sample_session(&sb);
    let fa = std::fs::read(sa.path_of(one.id())).expect("read");
    let fb = std::fs::read(sb.path_of(two.id())).expect("read");
    assert_eq!(fa, fb);
    // Re-encoding a loaded session reproduces the file it came from.
    let loaded = Session::load_bytes(&fa, &Limits::default(), "sample").expect("load");
    let mut again = Vec::new();
    loaded.encode_file(&mut again).expect("encode");
    assert_eq!(again, fa);
    // The sample includes a compressed frame, so compression is covered.
    assert!(loaded.report().compressed_entries >= 1);
}

proptest::proptest! {
    #[test]
    fn deterministic_encoding_of_arbitrary_entries(contents in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..3000), 1..20), kinds in proptest::collection::vec(0u32..40, 20)) {
        let mut ext = Vec::new();
        let encoded: Vec<Vec<u8>> = contents.iter().map(|c| { let mut v = Vec::new(); smith_codec::Encoder::new(&mut v).bytes(c); v }).collect();
        for (i, c) in encoded.iter().enumerate() {
            ext.push(smith_store::ExternalEntry { id: i as u64 + 10, parent: if i == 0 { 0 } else { i as u64 + 9 }, timestamp_ms: i as u64, kind: smith_store::EntryKind::from_code(kinds[i % kinds.len()]), pairing: 0, content: c });
        }
        let s = Session::from_external(SessionId([1; 16]), 5, &ext).expect("external");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        s.encode_file(&mut a).expect("encode");
        let loaded = Session::load_bytes(&a, &Limits::default(), "prop").expect("load");
        loaded.encode_file(&mut b).expect("encode");
        proptest::prop_assert_eq!(&a, &b);
        proptest::prop_assert_eq!(loaded.records().len(), encoded.len());
        for (r, c) in loaded.records().iter().zip(&encoded) {
            proptest::prop_assert_eq!(&*loaded.content(r).expect("content"), &c[..]);
        }
    }
}

/// Builds one frame with a valid checksum by hand.
fn raw_frame(kind: u8, flags: u8, content_len: u32, link: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    format::encode_frame(&mut out, kind, flags, content_len, link, payload);
    out
}

#[test]
fn bounded_frame_allocation() {
    let header = format::encode_header(SessionId([3; 16]), 0);
    // A frame declaring 3 GiB of content is refused before any allocation.
    let mut file = header.to_vec();
    let off = file.len() as u64;
    file.extend(raw_frame(
        format::KIND_ENTRY,
        format::FLAG_ZSTD,
        3 << 30,
        0,
        b"tiny",
    ));
    let (result, allocs) =
        crate::alloc_count::count(|| Session::load_bytes(&file, &Limits::default(), "bomb"));
    let err = result.expect_err("over-limit frame must fail");
    assert_eq!(err.kind(), ErrorKind::FrameOverLimit);
    assert_eq!(err.offset(), Some(off));
    assert!(err.to_string().contains(&format!("offset {off}")), "{err}");
    // Only the error message is allocated, never the declared size.
    assert!(
        allocs.peak_bytes < 4096,
        "peak live {} bytes",
        allocs.peak_bytes
    );

    // A zstd payload that expands beyond its declared size is capped: it is
    // decompressed into exactly the declared length and rejected.
    let bomb = zstd::bulk::compress(&vec![0u8; 10 << 20], 1).expect("compress");
    let mut file = header.to_vec();
    file.extend(raw_frame(
        format::KIND_ENTRY,
        format::FLAG_ZSTD,
        1000,
        0,
        &bomb,
    ));
    let (s, allocs) =
        crate::alloc_count::count(|| Session::load_bytes(&file, &Limits::default(), "bomb"));
    let s = s.expect("a lying frame is not fatal");
    assert_eq!(s.report().malformed_entries, 1);
    assert_eq!(s.records().len(), 0);
    // Exactly: the declared 1000 bytes of arena, one 64-byte record and the
    // arena's 40-byte shared handle; the 10 MiB the payload expands to never.
    assert_eq!(allocs.peak_bytes, 1000 + 64 + 40);

    // Limits are configurable and checked against the stored size too.
    let mut file = header.to_vec();
    file.extend(raw_frame(99, 0, 5000, 0, &[0u8; 5000]));
    let small = Limits {
        max_frame_len: 4096,
        ..Limits::default()
    };
    let err = Session::load_bytes(&file, &small, "big").expect_err("over the frame limit");
    assert_eq!(err.kind(), ErrorKind::FrameOverLimit);
}

#[test]
fn recovery_of_all_complete_frames_before_truncated_tail() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let full = std::fs::read(store.path_of(s.id())).expect("read");
    let ends = frame_ends(&full);
    let whole = Session::load_bytes(&full, &Limits::default(), "full").expect("load");
    for t in 0..=full.len() {
        let cut = &full[..t];
        let r = Session::load_bytes(cut, &Limits::default(), "truncated");
        if t < format::HEADER_LEN {
            assert_eq!(
                r.expect_err("no header").kind(),
                ErrorKind::BadHeader,
                "t={t}"
            );
            continue;
        }
        let loaded = r.unwrap_or_else(|e| panic!("truncated at {t}: {e}"));
        let complete = ends.iter().filter(|&&e| e <= t).count();
        assert_eq!(loaded.report().scan.frames as usize, complete, "t={t}");
        let last_end = ends
            .iter()
            .copied()
            .filter(|&e| e <= t)
            .max()
            .unwrap_or(format::HEADER_LEN);
        assert_eq!(loaded.report().scan.valid_end as usize, last_end, "t={t}");
        assert_eq!(
            loaded.report().scan.torn_tail_at.is_some(),
            t != last_end,
            "t={t}"
        );
        // Every recovered entry is exactly the entry of the intact file.
        let n = loaded.records().len();
        assert_eq!(loaded.records(), &whole.records()[..n], "t={t}");
        for r in loaded.records() {
            assert_eq!(
                &*loaded.content(r).expect("content"),
                &*whole.content(r).expect("content"),
                "t={t}"
            );
        }
        // The fast path never returns a wrong answer: it yields the leaf of
        // an intact file, or declines on a torn one.
        let dir = tempfile::tempdir().expect("dir");
        if t == last_end && t % 7 == 0 {
            let p = dir.path().join("cut.smith");
            std::fs::write(&p, cut).expect("write");
            let f = SessionFile::open(&p).expect("open");
            let bump = bumpalo::Bump::new();
            let recent = f
                .recent(1, &Limits::default(), &bump)
                .expect("recent")
                .expect("intact tail");
            assert_eq!(
                recent.first().map(|v| v.head.id),
                loaded.records().last().map(|r| r.id),
                "t={t}"
            );
        }
    }
}

#[test]
fn bounded_skipping_of_corrupt_frames() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let full = std::fs::read(store.path_of(s.id())).expect("read");
    let ends = frame_ends(&full);
    // Flip one payload byte in the 2nd and 4th frames; lengths stay intact.
    let mut bad = full.clone();
    let starts: Vec<usize> = std::iter::once(format::HEADER_LEN)
        .chain(ends.iter().copied())
        .collect();
    for &i in &[1usize, 3] {
        bad[starts[i] + format::FRAME_PREFIX + 1] ^= 0x55;
    }
    let loaded = Session::load_bytes(&bad, &Limits::default(), "corrupt")
        .expect("two corrupt frames are within the bound");
    assert_eq!(loaded.report().scan.corrupt_skipped, 2);
    assert_eq!(
        loaded.report().scan.corrupt_bytes as usize,
        (ends[1] - ends[0]) + (ends[3] - ends[2])
    );
    assert_eq!(loaded.report().scan.frames as usize, ends.len() - 2);
    assert_eq!(loaded.records().len(), s.records().len() - 2);
    // The bound is configurable: with room for one, the second fails and is named.
    let one = Limits {
        max_corrupt_frames: 1,
        ..Limits::default()
    };
    let err = Session::load_bytes(&bad, &one, "corrupt").expect_err("over the bound");
    assert_eq!(err.kind(), ErrorKind::TooManyCorruptFrames);
    assert_eq!(err.offset(), Some(starts[3] as u64));
    // Repair drops them, keeps the rest, and the result loads clean.
    std::fs::write(store.path_of(s.id()), &bad).expect("write");
    let rep = store.repair("sample", false).expect("repair");
    assert_eq!(rep.corrupt_skipped, 2);
    let fixed = store.load("sample").expect("load repaired");
    assert_eq!(fixed.report().scan.corrupt_skipped, 0);
    assert_eq!(fixed.records().len(), s.records().len() - 2);
}

#[test]
fn a_branch_cut_by_a_lost_frame_names_its_intact_part() {
    let (_d, store) = temp_store();
    let mut s = store.create(Some("cut")).expect("create");
    let bodies: Vec<Vec<u8>> = (0..10).map(|i| text(&format!("message {i}"))).collect();
    for (i, b) in bodies.iter().enumerate() {
        store
            .append(&mut s, &[entry(EntryKind::UserMessage, b, i as u64)])
            .expect("append");
    }
    let ids: Vec<u64> = s.records().iter().map(|r| r.id).collect();
    assert!(s.broken_branch().is_none(), "a whole branch is not broken");
    let full = std::fs::read(store.path_of(s.id())).expect("read");
    let ends = frame_ends(&full);
    // Flip a payload byte of the 5th entry: its frame is skipped, so the
    // 6th names a parent no frame holds.
    let mut bad = full.clone();
    bad[ends[3] + format::FRAME_PREFIX + 1] ^= 0x55;
    let loaded = Session::load_bytes(&bad, &Limits::default(), "cut").expect("load");
    assert_eq!(loaded.report().orphans, 1);
    let broken = loaded
        .broken_branch()
        .expect("the branch lost its beginning");
    assert_eq!(broken.first, ids[5]);
    assert_eq!(broken.missing_parent, ids[4]);
    assert_eq!(broken.kept, 5);
    assert_eq!(broken.first_offset, ends[4] as u64);
    assert_eq!(broken.intact, Some(ids[3]));
    assert_eq!(broken.intact_len, 4);
    // Losing the very first entry leaves nothing provably whole.
    let mut first = full.clone();
    first[format::HEADER_LEN + format::FRAME_PREFIX + 1] ^= 0x55;
    let loaded = Session::load_bytes(&first, &Limits::default(), "cut").expect("load");
    let broken = loaded.broken_branch().expect("broken at the root");
    assert_eq!((broken.first, broken.kept), (ids[1], 9));
    assert_eq!((broken.intact, broken.intact_len), (None, 0));
}

/// A file with unknown frames: a future kind, one with unknown flag bits,
/// one claiming compression, between ordinary entries.
fn file_with_unknown_frames(store: &Store) -> (SessionId, Vec<u8>) {
    let mut s = sample_session(store);
    let path = store.path_of(s.id());
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend(raw_frame(200, 0, 5, 0, b"\x64abcd"));
    bytes.extend(raw_frame(201, 0x80, 3, 12345, b"xyz"));
    let z = zstd::bulk::compress(b"future compressed payload", 1).expect("zstd");
    bytes.extend(raw_frame(202, format::FLAG_ZSTD, 25, 0, &z));
    // An entry frame whose payload is not a canonical entry map.
    bytes.extend(raw_frame(format::KIND_ENTRY, 0, 2, 0, b"\xa0\x00"));
    std::fs::write(&path, &bytes).expect("write");
    let c = text("after the unknown frames");
    store
        .append(
            &mut s,
            &[entry(smith_store::EntryKind::UserMessage, &c, 99)],
        )
        .expect("append after unknown frames");
    (s.id(), std::fs::read(&path).expect("read"))
}

#[test]
fn unknown_future_frames_preserved() {
    let (_d, store) = temp_store();
    let (id, bytes) = file_with_unknown_frames(&store);
    let loaded = store.load("sample").expect("load");
    assert_eq!(loaded.report().unknown_frames, 3);
    assert_eq!(loaded.report().malformed_entries, 1);
    assert!(
        loaded.records().iter().any(|r| r.kind == 4242),
        "unknown entry kind is loaded by code"
    );
    // Dump then import reproduces the file byte for byte.
    let mut jsonl = Vec::new();
    dump::dump(&bytes, &Limits::default(), "sample", &mut jsonl).expect("dump");
    let back = dump::import(&jsonl[..]).expect("import");
    assert_eq!(back, bytes);
    // Repair of an intact file is the identity.
    store.repair("sample", false).expect("repair");
    assert_eq!(std::fs::read(store.path_of(id)).expect("read"), bytes);
    // A clone carries every unknown frame verbatim.
    let clone = store.clone_session("sample", Some("copy")).expect("clone");
    let cloned = std::fs::read(store.path_of(clone.id())).expect("read");
    for frame in [
        raw_frame(200, 0, 5, 0, b"\x64abcd"),
        raw_frame(201, 0x80, 3, 12345, b"xyz"),
    ] {
        assert!(
            cloned.windows(frame.len()).any(|w| w == frame),
            "clone lost an unknown frame"
        );
    }
    assert_eq!(clone.origin().map(|o| o.session), Some(id));
    assert_eq!(clone.records().len(), loaded.records().len());
}

#[test]
fn explicit_failure_for_unrecoverable_framing_ambiguity() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let path = store.path_of(s.id());
    let full = std::fs::read(&path).expect("read");
    let ends = frame_ends(&full);
    // Damage the length prefix of the third frame: it no longer delimits a
    // frame, yet complete frames follow.
    let at = ends[1];
    let mut bad = full.clone();
    bad[at] ^= 0x40;
    let err = Session::load_bytes(&bad, &Limits::default(), "ambiguous")
        .expect_err("ambiguity is explicit");
    assert_eq!(err.kind(), ErrorKind::FramingAmbiguity);
    assert_eq!(err.offset(), Some(at as u64));
    assert!(err.to_string().contains(&format!("offset {at}")), "{err}");
    // An explicit resync repair keeps every other complete frame.
    std::fs::write(&path, &bad).expect("write");
    let rep = store.repair("sample", true).expect("resync repair");
    assert_eq!(rep.resynced_bytes as usize, ends[2] - ends[1]);
    let fixed = store.load("sample").expect("load");
    assert_eq!(fixed.report().scan.frames as usize, ends.len() - 1);
}

#[test]
fn atomic_publication_of_new_forked_repaired() {
    for step in STEPS {
        let (_d, mut store) = temp_store();
        let s = sample_session(&store);
        let path = store.path_of(s.id());
        let old = std::fs::read(&path).expect("read");

        // New session: after a crash the final file is absent or whole.
        store.set_crash_after(Some(step));
        let id = SessionId([0xab; 16]);
        let r = store.create_with(id, 1, None);
        assert!(r.is_err(), "{step:?}");
        let new_path = store.path_of(id);
        let expected_new = {
            let mut v = Vec::new();
            Session::in_memory(id, 1)
                .encode_file(&mut v)
                .expect("encode");
            v
        };
        if let Ok(b) = std::fs::read(&new_path) {
            assert_eq!(b, expected_new, "{step:?}: half a new file");
        }

        // Fork: the same.
        let before: Vec<_> = std::fs::read_dir(store.root())
            .expect("dir")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(store.fork(&s, None).is_err());
        for e in std::fs::read_dir(store.root()).expect("dir").flatten() {
            let name = e.file_name();
            let n = name.to_str().expect("utf8");
            if n.ends_with(".smith") && !before.contains(&name) {
                let b = std::fs::read(e.path()).expect("read");
                let f = Session::load_bytes(&b, &Limits::default(), "fork")
                    .expect("a published fork is whole");
                assert_eq!(f.report().scan.torn_tail_at, None, "{step:?}");
                assert_eq!(f.records().len(), s.branch().len(), "{step:?}");
            }
        }

        // Repair of a file with a torn tail: old bytes or the repaired bytes.
        let mut torn = old.clone();
        torn.extend_from_slice(&old[format::HEADER_LEN..format::HEADER_LEN + 10]);
        std::fs::write(&path, &torn).expect("write");
        assert!(store.repair("sample", false).is_err());
        let now = std::fs::read(&path).expect("read");
        assert!(
            now == torn || now == old,
            "{step:?}: repair left a third state"
        );

        // Without the crash every operation completes, and prune sweeps the
        // temporaries the crashes left.
        store.set_crash_after(None);
        store.repair("sample", false).expect("repair");
        assert_eq!(std::fs::read(&path).expect("read"), old);
        let pruned = store
            .prune(smith_store::PruneOptions {
                temp_grace_ms: 0,
                ..Default::default()
            })
            .expect("prune");
        let leftovers = std::fs::read_dir(store.root())
            .expect("dir")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(".tmp-"))
            })
            .count();
        assert_eq!(leftovers, 0, "{step:?}: pruned {pruned:?}");
    }
}

const WORKER_ENV: &str = "SMITH_STORE_TEST_WORKER";
const WORKERS: u64 = 4;
const PER_WORKER: u64 = 40;

/// Not a test of its own: the body each child process of
/// `concurrent_writers_serialized` runs when the environment names a store.
#[test]
fn concurrent_writer_child_process() {
    let Ok(spec) = std::env::var(WORKER_ENV) else {
        return;
    };
    let (root, worker) = spec.split_once('|').expect("root|worker");
    let worker: u64 = worker.parse().expect("worker number");
    let store = Store::open(root).expect("store");
    let mut s = store.load("shared").expect("load");
    let mut parent = 0;
    for i in 0..PER_WORKER {
        // Large, compressible content makes interleaving likely if the lock failed.
        let body = format!("worker {worker} entry {i} ").repeat(200);
        let c = crate::text(&body);
        let e = smith_store::NewEntry {
            kind: smith_store::EntryKind::Other(1000 + worker as u32),
            parent: Some(parent),
            timestamp_ms: Some(i),
            pairing: i,
            content: &c,
        };
        parent = store.append(&mut s, &[e]).expect("append")[0];
    }
}

#[test]
fn concurrent_writers_serialized() {
    let (dir, store) = temp_store();
    store.create(Some("shared")).expect("create");
    let exe = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..WORKERS)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "guarantees::concurrent_writer_child_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(WORKER_ENV, format!("{}|{w}", store.root().display()))
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success(), "a worker failed");
    }
    let s = store.load("shared").expect("load");
    let rep = s.report();
    assert_eq!(rep.scan.corrupt_skipped, 0);
    assert_eq!(rep.scan.torn_tail_at, None);
    assert_eq!(rep.malformed_entries, 0);
    assert_eq!(s.records().len() as u64, WORKERS * PER_WORKER);
    let mut ids: Vec<u64> = s.records().iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() as u64, WORKERS * PER_WORKER, "ids are unique");
    for w in 0..WORKERS {
        let mine: Vec<_> = s
            .records()
            .iter()
            .filter(|r| r.kind == 1000 + w as u32)
            .collect();
        assert_eq!(mine.len() as u64, PER_WORKER);
        for (i, r) in mine.iter().enumerate() {
            assert_eq!(r.pairing, i as u64, "worker {w}'s entries are in order");
            let want = format!("worker {w} entry {i} ").repeat(200);
            assert_eq!(&*s.content(r).expect("content"), &crate::text(&want)[..]);
            if i > 0 {
                assert_eq!(r.parent, mine[i - 1].id, "worker {w}'s chain is intact");
                assert_eq!(s.records()[r.parent_index as usize].id, r.parent);
            }
        }
    }
    drop(dir);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Arbitrary damage (flipped bytes, a cut, inserted garbage) never makes
    /// reading panic or hand out out-of-range content: it either loads what
    /// verifies or fails with a typed error.
    #[test]
    fn damaged_files_never_panic_the_reader(
        flips in proptest::collection::vec((proptest::num::usize::ANY, proptest::num::u8::ANY), 0..6),
        cut in proptest::option::of(proptest::num::usize::ANY),
        insert in proptest::option::of((proptest::num::usize::ANY, proptest::collection::vec(proptest::num::u8::ANY, 1..40))),
    ) {
        static SAMPLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let sample = SAMPLE.get_or_init(|| {
            let (_d, store) = temp_store();
            let s = sample_session(&store);
            std::fs::read(store.path_of(s.id())).expect("read")
        });
        let mut bytes = sample.clone();
        for (at, x) in flips {
            let i = at % bytes.len();
            bytes[i] ^= x;
        }
        if let Some((at, junk)) = insert {
            let i = at % bytes.len();
            bytes.splice(i..i, junk);
        }
        if let Some(c) = cut {
            bytes.truncate(c % (bytes.len() + 1));
        }
        let limits = Limits::default();
        if let Ok(s) = Session::load_bytes(&bytes, &limits, "damaged") {
            for r in s.records() {
                proptest::prop_assert_eq!(s.content(r).expect("content").len(), s.content_len(r));
            }
            let mut again = Vec::new();
            s.encode_file(&mut again).expect("re-encode");
            let mut out = Vec::new();
            dump::dump(&bytes, &limits, "damaged", &mut out).expect("a loadable file dumps");
        }
        let _ = smith_store::rewrite(&bytes, &Limits { resync: true, max_corrupt_frames: u64::MAX, ..limits }, "damaged", SessionId([1; 16]), 0, None);
    }
}

/// The same recovery when the session is loaded from a mapped file, whose
/// payloads the session then reads in place: at every truncation offset the
/// in-place load finds what the copying load finds — the same report, the
/// same records (but where their payloads live) and the same contents.
#[test]
fn recovery_of_all_complete_frames_before_truncated_tail_when_loaded_in_place() {
    let (_d, store) = temp_store();
    let s = sample_session(&store);
    let full = std::fs::read(store.path_of(s.id())).expect("read");
    let dir = tempfile::tempdir().expect("dir");
    for t in format::HEADER_LEN..=full.len() {
        let loaded = same_load(dir.path(), &format!("cut at {t}"), &full[..t]);
        assert!(loaded.is_some(), "t={t}: a torn tail must load");
    }
}

/// A load of a large mapped file, which two threads share (each checks and
/// builds its end of the file), finds exactly what the copying load of the
/// same bytes finds: intact, and with damage in the first thread's part,
/// in the second thread's part, where the two parts meet, and in a torn
/// tail.
#[test]
fn large_mapped_load_matches_the_copying_load_intact_and_damaged() {
    let full = varied_file(24 << 20);
    let ends = frame_ends(&full);
    let dir = tempfile::tempdir().expect("dir");
    // A byte inside the frame that contains file offset `at`.
    let payload_byte = |at: usize| {
        let i = ends.partition_point(|&e| e <= at);
        ends[i] - 12
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![("intact", full.clone())];
    for (name, at) in [
        ("damaged near the start", full.len() / 10),
        ("damaged just before the middle", full.len() / 2 - 200),
        ("damaged at the middle", full.len() / 2),
        ("damaged just after the middle", full.len() / 2 + 200),
        ("damaged near the end", full.len() - full.len() / 10),
    ] {
        let mut b = full.clone();
        b[payload_byte(at)] ^= 0x40;
        cases.push((name, b));
    }
    cases.push(("torn tail", full[..full.len() - 7].to_vec()));
    for (name, bytes) in &cases {
        let copied = same_load(dir.path(), name, bytes)
            .unwrap_or_else(|| panic!("{name}: both loads failed"));
        assert!(copied.origin().is_some(), "{name}: the origin frames load");
        assert!(copied.report().unknown_frames > 0 && copied.report().malformed_entries > 0);
    }
}
