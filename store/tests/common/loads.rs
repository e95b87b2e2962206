//! What the load tests of more than one test binary share: a varied
//! session file, its frame boundaries, and the comparison of the mapped
//! load (one or two threads) with the copying load of the same bytes.

#![allow(dead_code)] // each binary uses part of it

use smith_store::{Limits, Record, Session, SessionFile, SessionId, format};

/// A session file of at least `target` bytes that exercises everything a
/// full load joins: entries stored plain and with compressed content, runs
/// of entries whose parent is not the entry just before them, new roots,
/// unknown frames, origin frames (the first one malformed), and entry
/// frames whose payload is not an entry map, spread over the whole file.
pub fn varied_file(target: usize) -> Vec<u8> {
    let mut comp = smith_store::compress::Compressor::new().expect("compressor");
    let mut rng = smith_store::bench_support::Rng::new(7);
    let mut out = format::encode_header(SessionId([3; 16]), 1).to_vec();
    let mut offsets: Vec<u64> = Vec::new();
    let mut map = Vec::new();
    let mut id = 0u64;
    while out.len() < target {
        let here = out.len() as u64;
        let roll = rng.next_u64() % 1000;
        if roll < 3 {
            format::encode_frame(&mut out, 9, 0, 3, 0, b"\x63abc");
            continue;
        }
        if roll < 5 {
            let mut p = Vec::new();
            if out.len() < target * 3 / 5 {
                // Not an origin map: a load keeps looking.
                p.extend_from_slice(b"\xa0");
            } else {
                format::encode_origin(&mut p, SessionId([(roll & 0xff) as u8; 16]), roll);
            }
            format::encode_frame(&mut out, format::KIND_ORIGIN, 0, p.len() as u32, 0, &p);
            continue;
        }
        if roll < 7 {
            format::encode_frame(&mut out, format::KIND_ENTRY, 0, 2, 0, b"\x82\x01");
            continue;
        }
        id += 1;
        // Mostly the previous entry; sometimes one further back, sometimes
        // a new root.
        let back = match rng.next_u64() % 20 {
            0 => 0,
            1 | 2 => 1 + (rng.next_u64() % 5) as usize,
            _ => 1,
        };
        let parent_at = offsets.len().checked_sub(back).filter(|_| back > 0);
        let parent = parent_at.map_or(0, |i| i as u64 + 1);
        let (kind, pairing, content) =
            smith_store::bench_support::representative_entry(&mut rng, id);
        map.clear();
        format::encode_entry(
            &mut map,
            &format::EntryHead {
                id,
                parent,
                timestamp_ms: 1_700_000_000_000 + id,
                kind: kind.code(),
                pairing,
            },
            &content,
        );
        let link = parent_at.map_or(0, |i| here - offsets[i]);
        comp.frame(&mut out, format::KIND_ENTRY, link, &map);
        offsets.push(here);
    }
    out
}

/// Loads `bytes` both ways and asserts they found the same: report, origin,
/// records (but for where the payload lies), contents, selected branch, and
/// returns the copying load's session; or asserts that both failed with the
/// same kind of error and returns `None`.
pub fn same_load(dir: &std::path::Path, what: &str, bytes: &[u8]) -> Option<Session> {
    // A fresh name each time: a loaded session keeps its mapping.
    let p = dir.join(format!("{}.smith", what.replace(' ', "-")));
    std::fs::write(&p, bytes).expect("write");
    let copied = Session::load_bytes(bytes, &Limits::default(), "copied");
    let mapped = SessionFile::open(&p).and_then(|f| f.load(&Limits::default()));
    let (mapped, copied) = match (mapped, copied) {
        (Ok(m), Ok(c)) => (m, c),
        // Damage the reader refuses to guess about (framing lost before a
        // later complete frame) fails both loads the same way.
        (Err(m), Err(c)) => {
            assert_eq!(m.kind(), c.kind(), "{what}: {m} / {c}");
            std::fs::remove_file(&p).expect("remove");
            return None;
        }
        (m, c) => panic!(
            "{what}: the mapped load gave {:?}, the copying load {:?}",
            m.map(|s| *s.report()),
            c.map(|s| *s.report())
        ),
    };
    let without_address = |r: &Record| Record {
        payload_offset: 0,
        ..*r
    };
    assert_eq!(mapped.report(), copied.report(), "{what}");
    assert_eq!(mapped.origin(), copied.origin(), "{what}");
    assert_eq!(mapped.records().len(), copied.records().len(), "{what}");
    for (m, c) in mapped.records().iter().zip(copied.records()) {
        assert_eq!(without_address(m), without_address(c), "{what}");
        assert_eq!(
            &*mapped.content(m).expect("content"),
            &*copied.content(c).expect("content"),
            "{what}"
        );
    }
    let ids = |s: &Session| s.branch().iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(&mapped), ids(&copied), "{what}");
    drop(mapped);
    std::fs::remove_file(&p).expect("remove");
    Some(copied)
}

/// Offsets where each frame of `bytes` ends, in order.
pub fn frame_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut pos = format::HEADER_LEN;
    while pos < bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        pos += len + 12;
        ends.push(pos);
    }
    ends
}
