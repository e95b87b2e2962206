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

#[test]
fn two_thread_load_matches_the_copying_load_at_every_cut_and_every_damaged_frame() {
    smith_store::set_parallel_load_min(0);
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

/// A file past the first MiB (from which the record table is sized, so the
/// table has the slack a large file's has) with its frames' sizes varied:
/// intact, the two walks meet and are joined; with every kind of damage
/// around the point where the walks meet and in a spread of frames
/// elsewhere, and with the tail torn at every offset of its last frames and
/// at a spread of offsets over the whole file, the load finds exactly what
/// the copying load finds.
#[test]
fn two_thread_load_joins_and_matches_the_copying_load_around_the_meeting_point() {
    smith_store::set_parallel_load_min(0);
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
