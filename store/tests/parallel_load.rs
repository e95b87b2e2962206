//! The two-thread load on small files. A mapped load checks a file of
//! 16 MiB or more on two threads (`docs/session-format.md` §9); this test
//! binary lowers that threshold to zero for its own process, so that the
//! same code runs over files small enough to try every truncation and a
//! damaged byte in every frame, each load compared with the copying load
//! of the same bytes, which shares no code with the two-thread path.

#[path = "common/loads.rs"]
mod loads;

use loads::{frame_ends, same_load, varied_file};
use smith_store::format;

/// Held by every test of this binary: they count the process's joined
/// loads, which a test running beside them would add to.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn two_thread_load_matches_the_copying_load_at_every_cut_and_every_damaged_frame() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        let full = varied_file(40 << 10);
        let ends = frame_ends(&full);
        assert!(ends.len() >= 20, "{} frames", ends.len());
        let dir = tempfile::tempdir().expect("dir");
        same_load(dir.path(), "intact", &full);
        // Every truncation: the torn tail falls in the first thread's part, at
        // the join or in the second thread's part as the file shrinks.
        for t in format::HEADER_LEN..full.len() {
            same_load(dir.path(), &format!("cut at {t}"), &full[..t]);
        }
        // One damaged payload byte in each frame, then each frame's length
        // field (a damaged length makes the two walks disagree on boundaries).
        let mut start = format::HEADER_LEN;
        for (i, &end) in ends.iter().enumerate() {
            let mut b = full.clone();
            b[end - 13] ^= 0x40;
            same_load(dir.path(), &format!("frame {i} payload damaged"), &b);
            let mut b = full.clone();
            b[start] ^= 0x01;
            same_load(dir.path(), &format!("frame {i} length damaged"), &b);
            let mut b = full.clone();
            b[end - 1] ^= 0x01;
            same_load(
                dir.path(),
                &format!("frame {i} trailing length damaged"),
                &b,
            );
            start = end;
        }
    }
}

/// A file past the first MiB (from which the record table is sized, so the
/// table has the slack a large file's has) with its frames' sizes varied:
/// intact, the two walks meet and are joined; with every kind of damage
/// around the point where the walks meet and in a spread of frames
/// elsewhere, and with the tail torn at every offset of its last frames and
/// at a spread of offsets over the whole file, the load finds exactly what
/// the copying load finds.
#[test]
fn two_thread_load_joins_and_matches_the_copying_load_around_the_meeting_point() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        let full = varied_file(1_300_000);
        let ends = frame_ends(&full);
        let dir = tempfile::tempdir().expect("dir");
        let joins = smith_store::parallel_load_joins();
        same_load(dir.path(), "intact", &full);
        assert_eq!(
            smith_store::parallel_load_joins(),
            joins + 1,
            "the intact file was not loaded on two threads and joined"
        );
        // The walks meet a little before the middle (the second thread takes
        // about half the bytes from the end): damage every frame from 44 % to
        // 54 % of the file, and every 100th frame elsewhere.
        let mut start = format::HEADER_LEN;
        for (i, &end) in ends.iter().enumerate() {
            let middle = (full.len() * 44 / 100..full.len() * 54 / 100).contains(&start);
            if middle || i % 100 == 0 {
                for (what, at, bit) in [
                    ("payload", end - 13, 0x40),
                    ("length", start, 0x01),
                    ("trailing length", end - 1, 0x01),
                ] {
                    let mut b = full.clone();
                    b[at] ^= bit;
                    same_load(dir.path(), &format!("frame {i} {what} damaged"), &b);
                }
            }
            start = end;
        }
        // A torn tail is what the second thread meets first (it starts from the
        // end): these loads leave the two-thread path for the verifying reader.
        for t in
            (full.len() - 1_500..full.len()).chain((format::HEADER_LEN..full.len()).step_by(16_001))
        {
            same_load(dir.path(), &format!("cut at {t}"), &full[..t]);
        }
    }
}

/// Appends an entry frame holding `content`, stored plain or as the
/// compressor decides.
type AddEntry<'a> = dyn FnMut(&mut Vec<u8>, &[u8], bool) + 'a;

/// A file of `before` and `after` bytes of varied entries (in one line,
/// each entry the child of the one before) around the big entries made by
/// `big(i)` for `i` in `0..n`: each one's content, stored plain.
fn with_big_entries(
    before: usize,
    n: usize,
    big: impl Fn(usize) -> Vec<u8>,
    after: usize,
) -> Vec<u8> {
    let mut rng = smith_store::bench_support::Rng::new(5);
    let mut comp = smith_store::compress::Compressor::new().expect("compressor");
    let mut out = format::encode_header(smith_store::SessionId([4; 16]), 1).to_vec();
    let mut id = 0u64;
    let mut last = 0u64;
    let mut map = Vec::new();
    let mut entry = |out: &mut Vec<u8>, content: &[u8], plain: bool| {
        id += 1;
        map.clear();
        format::encode_entry(
            &mut map,
            &format::EntryHead {
                id,
                parent: id - 1,
                timestamp_ms: 1_700_000_000_000 + id,
                kind: smith_store::EntryKind::ToolResult.code(),
                pairing: 0,
            },
            content,
        );
        let here = out.len() as u64;
        let link = if id == 1 { 0 } else { here - last };
        if plain {
            format::encode_frame(out, format::KIND_ENTRY, 0, map.len() as u32, link, &map);
        } else {
            comp.frame(out, format::KIND_ENTRY, link, &map);
        }
        last = here;
    };
    let mut small = |out: &mut Vec<u8>, until: usize, entry: &mut AddEntry<'_>| {
        while out.len() < until {
            let (_, _, content) = smith_store::bench_support::representative_entry(&mut rng, 1);
            entry(out, &content, false);
        }
    };
    small(&mut out, before, &mut entry);
    for i in 0..n {
        let mut content = Vec::new();
        smith_codec::Encoder::new(&mut content).bytes(&big(i));
        entry(&mut out, &content, true);
        let until = out.len() + before / 4;
        small(&mut out, until, &mut entry);
    }
    let until = out.len() + after;
    small(&mut out, until, &mut entry);
    out
}

/// The second thread finds where to start by looking for a frame near the
/// middle of the file; an entry whose content holds copies of a whole,
/// intact frame can show it one that is not there. The walks then do not
/// meet, the first thread checks the rest itself, and the load finds
/// exactly what the copying load finds.
#[test]
fn a_frame_inside_a_payload_at_the_split_point_is_not_taken_for_a_frame() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        // A small, intact entry frame, copied end to end into the content of
        // one large entry that spans the point where the second thread starts
        // looking (31/64 of the way through the frames).
        let mut fake = Vec::new();
        let mut map = Vec::new();
        format::encode_entry(
            &mut map,
            &format::EntryHead {
                id: 99,
                parent: 98,
                timestamp_ms: 1_700_000_000_000,
                kind: smith_store::EntryKind::UserMessage.code(),
                pairing: 0,
            },
            b"\x63abc",
        );
        format::encode_frame(&mut fake, format::KIND_ENTRY, 0, map.len() as u32, 40, &map);
        let copies = fake.repeat(400_000 / fake.len());
        let full = with_big_entries(900_000, 1, |_| copies.clone(), 900_000);
        let floor = format::HEADER_LEN + (full.len() - format::HEADER_LEN) / 64 * 31;
        let ends = frame_ends(&full);
        let big = ends
            .windows(2)
            .find(|w| w[1] - w[0] > 300_000)
            .expect("the large entry");
        assert!(
            big[0] < floor && floor + 2 * fake.len() < big[1],
            "the large entry ({}..{}) must span the split point {floor}",
            big[0],
            big[1]
        );
        let dir = tempfile::tempdir().expect("dir");
        let joins = smith_store::parallel_load_joins();
        let s = same_load(dir.path(), "a frame inside a payload", &full).expect("loads");
        assert_eq!(s.report().scan.corrupt_skipped, 0);
        assert_eq!(
            smith_store::parallel_load_joins(),
            joins,
            "the walks were joined at a frame inside a payload"
        );
    }
}

/// Frames longer than the buffer each thread reads the file through are
/// checked through the mapping, in both threads' parts, and the walks are
/// still joined.
#[test]
fn frames_longer_than_the_read_buffer_load_on_both_threads() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        let mut rng = smith_store::bench_support::Rng::new(9);
        let noise: Vec<u8> = (0..700_000).map(|_| rng.next_u64() as u8).collect();
        let full = with_big_entries(
            300_000,
            4,
            |i| noise[i * 1000..i * 1000 + 300_000 + i * 50_000].to_vec(),
            300_000,
        );
        let dir = tempfile::tempdir().expect("dir");
        let joins = smith_store::parallel_load_joins();
        let s = same_load(dir.path(), "frames longer than the buffer", &full).expect("loads");
        assert!(
            s.records()
                .iter()
                .filter(|r| r.payload_len > 256 << 10)
                .count()
                >= 4
        );
        assert_eq!(
            smith_store::parallel_load_joins(),
            joins + 1,
            "the file was not loaded on two threads and joined"
        );
    }
}

/// Loads on several threads at once: one runs its second walk on the
/// process's helper thread, the others on threads of their own, and every
/// load is joined and matches the copying load.
#[test]
fn loads_at_once_each_get_a_second_thread() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    smith_store::set_load_reads_mapping(None);
    let full = varied_file(1_300_000);
    let dir = tempfile::tempdir().expect("dir");
    let joins = smith_store::parallel_load_joins();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (dir, full) = (dir.path(), &full);
            s.spawn(move || {
                for i in 0..5 {
                    same_load(dir, &format!("thread {t}, load {i}"), full).expect("loads");
                }
            });
        }
    });
    assert_eq!(smith_store::parallel_load_joins(), joins + 20);
}

/// A child made by `fork` has no helper thread, whatever its memory copied
/// from the parent says: its loads start one of their own instead of
/// waiting for a thread that does not exist.
#[cfg(target_os = "linux")]
#[test]
fn a_forked_child_loads_on_two_threads() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    smith_store::set_load_reads_mapping(None);
    let full = varied_file(1_300_000);
    let dir = tempfile::tempdir().expect("dir");
    // The parent's helper is running.
    same_load(dir.path(), "parent", &full).expect("loads");
    let path = dir.path().join("child.smith");
    std::fs::write(&path, &full).expect("write");
    let joins = smith_store::parallel_load_joins();
    // SAFETY: the child only loads the file and leaves with `_exit`; no
    // other test runs beside this one (`one_at_a_time`).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = smith_store::SessionFile::open(&path)
            .and_then(|f| f.load(&smith_store::Limits::default()))
            .is_ok_and(|s| s.report().scan.corrupt_skipped == 0)
            && smith_store::parallel_load_joins() == joins + 1;
        // SAFETY: ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut status = 0;
    loop {
        // SAFETY: waits for the child made above, without blocking.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            break;
        }
        if std::time::Instant::now() > deadline {
            // SAFETY: the child made above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the forked child's load did not finish in 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's load failed (status {status})"
    );
}

/// A large mapping read through is released on two threads when its
/// session and file are dropped; the file is untouched by that and loads
/// again the same.
#[cfg(target_os = "linux")]
#[test]
fn a_large_mapping_is_released_in_halves_and_the_file_loads_again_the_same() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    smith_store::set_load_reads_mapping(Some(true));
    let full = varied_file(6 << 20);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("big.smith");
    std::fs::write(&path, &full).expect("write");
    let limits = smith_store::Limits::default();
    let load = || {
        smith_store::SessionFile::open(&path)
            .and_then(|f| f.load(&limits))
            .expect("loads")
    };
    let releases = smith_store::parallel_releases();
    let first = load();
    let records = first.records().to_vec();
    let report = *first.report();
    drop(first);
    assert_eq!(smith_store::parallel_releases(), releases + 1);
    let again = load();
    assert_eq!(again.records(), &records[..]);
    assert_eq!(*again.report(), report);
    assert_eq!(std::fs::read(&path).expect("read"), full);
    smith_store::set_load_reads_mapping(None);
}
