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

/// Resets the chunk size and the forced take when a test ends, passed or
/// not.
struct ChunkReset;

impl Drop for ChunkReset {
    fn drop(&mut self) {
        smith_store::set_parallel_load_chunk(0, 0, 0);
    }
}

/// Where the part the loading thread takes begins, for a forced take at
/// `take_at` 64ths of the second thread's part with chunks of `chunk`
/// bytes (the load's own arithmetic, see `store/src/session.rs`).
fn taken_from(len: usize, mapping: bool, chunk: usize, take_at: usize) -> usize {
    let share = if mapping { 30 } else { 33 };
    let start = format::HEADER_LEN;
    let floor = start + (len - start) / 64 * (64 - share);
    let at = floor + (len - floor) * take_at / 64;
    ((at / chunk).max(floor / chunk) + 1) * chunk
}

/// The loading thread, done with its own part while the second thread is
/// still far from the end, takes the end of the file from a chunk
/// boundary on and walks it itself (forced here, whatever the two threads'
/// pace, at several points and chunk sizes, so that the part taken begins
/// at many kinds of frame). Intact, the three parts are joined; with every
/// kind of damage in each frame around where the part taken begins, and
/// with the tail torn around it, the load finds exactly what the copying
/// load finds.
#[test]
fn the_end_taken_from_the_second_thread_joins_and_matches_the_copying_load() {
    let _one = one_at_a_time();
    let _reset = ChunkReset;
    smith_store::set_parallel_load_min(0);
    let full = varied_file(1_300_000);
    let ends = frame_ends(&full);
    let dir = tempfile::tempdir().expect("dir");
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        for (chunk, take_at) in [(4096, 40), (65_536, 48), (1000, 60), (777, 44)] {
            smith_store::set_parallel_load_chunk(chunk, take_at, 0);
            let (joins, takes) = (
                smith_store::parallel_load_joins(),
                smith_store::parallel_load_takes(),
            );
            same_load(dir.path(), "intact", &full);
            assert_eq!(
                (
                    smith_store::parallel_load_joins(),
                    smith_store::parallel_load_takes()
                ),
                (joins + 1, takes + 1),
                "the intact file was not joined in three parts (chunk {chunk}, at {take_at})"
            );
            let from = taken_from(full.len(), mapping, chunk, take_at);
            let first = ends.iter().position(|&e| e > from).expect("a frame");
            let mut start = if first == 0 {
                format::HEADER_LEN
            } else {
                ends[first - 1]
            };
            for (i, &end) in ends.iter().enumerate().skip(first).take(6) {
                for (what, at, bit) in [
                    ("payload", end - 13, 0x40),
                    ("length", start, 0x01),
                    ("trailing length", end - 1, 0x01),
                ] {
                    let mut b = full.clone();
                    b[at] ^= bit;
                    same_load(
                        dir.path(),
                        &format!("chunk {chunk} at {take_at}: frame {i} {what} damaged"),
                        &b,
                    );
                }
                start = end;
            }
            for t in (from.saturating_sub(300)..from + 3000).step_by(97) {
                same_load(
                    dir.path(),
                    &format!("chunk {chunk}: cut at {t}"),
                    &full[..t],
                );
            }
        }
    }
    smith_store::set_load_reads_mapping(None);
}

/// A part taken from the end of the file that begins inside a payload
/// holding copies of an intact frame starts at one that is not there: it
/// is not joined (the second thread stopped at the next real frame, not
/// there), this thread walks the rest again, and the load finds exactly
/// what the copying load finds.
#[test]
fn a_frame_inside_a_payload_where_the_taken_part_begins_is_not_taken_for_a_frame() {
    let _one = one_at_a_time();
    let _reset = ChunkReset;
    smith_store::set_parallel_load_min(0);
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
    let full = with_big_entries(1_500_000, 1, |_| copies.clone(), 300_000);
    let ends = frame_ends(&full);
    let big = ends
        .windows(2)
        .find(|w| w[1] - w[0] > 300_000)
        .expect("the large entry");
    let dir = tempfile::tempdir().expect("dir");
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        let chunk = 65_536;
        let take_at = (0..64)
            .find(|&k| {
                let from = taken_from(full.len(), mapping, chunk, k);
                big[0] + 2 * fake.len() < from && from + 2 * fake.len() < big[1]
            })
            .expect("a point inside the large entry");
        smith_store::set_parallel_load_chunk(chunk, take_at, 0);
        let (joins, takes) = (
            smith_store::parallel_load_joins(),
            smith_store::parallel_load_takes(),
        );
        let s = same_load(dir.path(), "a frame inside a payload", &full).expect("loads");
        assert_eq!(s.report().scan.corrupt_skipped, 0);
        assert_eq!(
            (
                smith_store::parallel_load_joins(),
                smith_store::parallel_load_takes()
            ),
            (joins + 1, takes),
            "the part taken was joined at a frame inside a payload"
        );
    }
    smith_store::set_load_reads_mapping(None);
}

/// Where the part the second thread takes from the end of the loading
/// thread's part begins, for a forced take at `help_at` 64ths of that part
/// with chunks of `chunk` bytes (the load's own arithmetic).
fn helped_from(len: usize, mapping: bool, chunk: usize, help_at: usize) -> usize {
    let share = if mapping { 30 } else { 33 };
    let start = format::HEADER_LEN;
    let floor = start + (len - start) / 64 * (64 - share);
    let at = start + (floor - start) * help_at / 64;
    (at / chunk + 1) * chunk
}

/// The second thread, done with its own part while the loading thread is
/// still far from the split point, takes the end of the loading thread's
/// part from a chunk boundary on and walks it up to where its own walk
/// began (forced here, whatever the two threads' pace, at several points
/// and chunk sizes). Intact, the three parts are joined; with every kind
/// of damage in each frame around where the part taken begins and where it
/// must end, and with the tail torn there, the load finds exactly what the
/// copying load finds.
#[test]
fn the_end_of_the_first_part_taken_by_the_second_thread_joins_and_matches_the_copying_load() {
    let _one = one_at_a_time();
    let _reset = ChunkReset;
    smith_store::set_parallel_load_min(0);
    let full = varied_file(1_300_000);
    let ends = frame_ends(&full);
    let dir = tempfile::tempdir().expect("dir");
    for mapping in [false, true] {
        smith_store::set_load_reads_mapping(Some(mapping));
        for (chunk, help_at) in [(4096, 54), (65_536, 56), (1000, 60), (777, 40)] {
            smith_store::set_parallel_load_chunk(chunk, 0, help_at);
            let (joins, helps) = (
                smith_store::parallel_load_joins(),
                smith_store::parallel_load_helps(),
            );
            same_load(dir.path(), "intact", &full);
            assert_eq!(
                (
                    smith_store::parallel_load_joins(),
                    smith_store::parallel_load_helps()
                ),
                (joins + 1, helps + 1),
                "the intact file was not joined in three parts (chunk {chunk}, at {help_at})"
            );
            let from = helped_from(full.len(), mapping, chunk, help_at);
            let share = if mapping { 30 } else { 33 };
            let floor = format::HEADER_LEN + (full.len() - format::HEADER_LEN) / 64 * (64 - share);
            for around in [from, floor] {
                let first = ends.iter().position(|&e| e > around).expect("a frame");
                let mut start = if first == 0 {
                    format::HEADER_LEN
                } else {
                    ends[first - 1]
                };
                for (i, &end) in ends
                    .iter()
                    .enumerate()
                    .skip(first.saturating_sub(1))
                    .take(4)
                {
                    if i + 1 == first {
                        start = end;
                        continue;
                    }
                    for (what, at, bit) in [
                        ("payload", end - 13, 0x40),
                        ("length", start, 0x01),
                        ("trailing length", end - 1, 0x01),
                    ] {
                        let mut b = full.clone();
                        b[at] ^= bit;
                        same_load(
                            dir.path(),
                            &format!("chunk {chunk} help at {help_at}: frame {i} {what} damaged"),
                            &b,
                        );
                    }
                    start = end;
                }
            }
            for t in (from.saturating_sub(300)..from + 3000).step_by(97) {
                same_load(
                    dir.path(),
                    &format!("chunk {chunk}: cut at {t}"),
                    &full[..t],
                );
            }
        }
    }
    smith_store::set_load_reads_mapping(None);
}

/// A thread that may run on one CPU only (its affinity, as `taskset`
/// sets it) loads on that thread alone: a second walk would only take
/// turns with it. The load finds exactly what the copying load finds, and
/// again on two threads once the thread may run anywhere.
#[cfg(target_os = "linux")]
#[test]
fn a_thread_on_one_cpu_loads_alone() {
    let _one = one_at_a_time();
    smith_store::set_parallel_load_min(0);
    smith_store::set_load_reads_mapping(None);
    let full = varied_file(1_300_000);
    let dir = tempfile::tempdir().expect("dir");
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: cpu_set_t is plain data; the calls read and write
            // only the sets given, for this thread.
            let (mut all, mut one): (libc::cpu_set_t, libc::cpu_set_t) =
                unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut all) }, 0);
            let cpu = (0..libc::CPU_SETSIZE as usize)
                // SAFETY: as above.
                .find(|&c| unsafe { libc::CPU_ISSET(c, &all) })
                .expect("a CPU");
            // SAFETY: as above.
            unsafe { libc::CPU_SET(cpu, &mut one) };
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_setaffinity(0, size, &one) }, 0);
            let joins = smith_store::parallel_load_joins();
            same_load(dir.path(), "on one cpu", &full).expect("loads");
            assert_eq!(
                smith_store::parallel_load_joins(),
                joins,
                "loaded on two threads"
            );
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_setaffinity(0, size, &all) }, 0);
            // SAFETY: as above.
            if unsafe { libc::CPU_COUNT(&all) } >= 2 {
                same_load(dir.path(), "on every cpu", &full).expect("loads");
                assert_eq!(smith_store::parallel_load_joins(), joins + 1);
            }
        });
    });
}
