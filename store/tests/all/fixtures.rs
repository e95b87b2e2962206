//! The benchmark fixtures are real, valid session files.

use smith_store::{EntryKind, Limits, SessionFile, bench_support};

/// Below the pool size the fast writer reuses nothing, so it must write
/// exactly the bytes the entry-by-entry writer does.
#[test]
fn fast_fixture_matches_the_reference_writer_within_the_pool() {
    let dir = tempfile::tempdir().expect("dir");
    let (a, b) = (dir.path().join("a.smith"), dir.path().join("b.smith"));
    let na = bench_support::write_representative_session(&a, 1 << 20).expect("reference");
    let nb = bench_support::write_session_fast(&b, 1 << 20).expect("fast");
    assert!(na < bench_support::FAST_POOL, "{na} entries");
    let (ba, bb) = (
        std::fs::read(&a).expect("read a"),
        std::fs::read(&b).expect("read b"),
    );
    let first_diff = ba.iter().zip(&bb).position(|(x, y)| x != y);
    assert_eq!((first_diff, ba.len(), na), (None, bb.len(), nb));
}

/// Past the pool, entries reuse pool contents under fresh ids: the file
/// loads with nothing skipped, one linear branch, and every tool result
/// paired with the call right before it.
#[test]
fn fast_fixture_past_the_pool_is_a_valid_linear_session() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("f.smith");
    let n = bench_support::write_session_fast(&path, 12 << 20).expect("fast");
    assert!(n > 2 * bench_support::FAST_POOL, "{n} entries");
    let f = SessionFile::open(&path).expect("open");
    let s = f.load(&Limits::default()).expect("load");
    let r = s.report();
    assert_eq!(r.entries, n);
    assert_eq!(
        (
            r.scan.corrupt_skipped,
            r.malformed_entries,
            r.orphans,
            r.unknown_frames
        ),
        (0, 0, 0, 0)
    );
    assert!(r.scan.torn_tail_at.is_none());
    assert!(r.compressed_entries > 0);
    assert_eq!(s.branch().len() as u64, n);
    for (i, rec) in s.branch().iter().enumerate() {
        assert_eq!(rec.id, i as u64 + 1);
        assert_eq!(rec.parent, i as u64);
        if rec.entry_kind() == EntryKind::ToolResult {
            assert_eq!(rec.pairing, rec.id - 1, "entry {}", rec.id);
            assert_eq!(s.branch()[i - 1].entry_kind(), EntryKind::ToolCall);
        }
        // Every entry's content reads back at its declared length.
        assert_eq!(s.content(rec).expect("content").len(), s.content_len(rec));
    }
    let bump = bumpalo::Bump::new();
    let recent = f
        .recent(50, &Limits::default(), &bump)
        .expect("recent")
        .expect("intact tail");
    assert_eq!(recent.len(), 50);
    assert_eq!(recent[0].head.id, n);
}
