//! Fuzz the frame reader and the loader with arbitrary frame bytes.
//!
//! The input follows a valid session header (so the fuzzer spends its time
//! on frames, not on the 44-byte header checksum). Beyond "never panics",
//! every run checks the reader's promises:
//! * the frame walk and the loader agree: loading fails exactly when the
//!   walk fails, and the loader's scan report equals the walk's;
//! * sizes stay within the configured limits;
//! * every loaded entry's content can be read (copied or decompressed) and
//!   has the length its record declares;
//! * a loaded session re-encodes to a file that loads to the same records'
//!   ids, parents, kinds and contents, and re-encoding that is a fixed point;
//! * the JSONL dump never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smith_store::{Limits, Session, SessionId, dump, format, scan};

fuzz_target!(|data: &[u8]| {
    let mut file = format::encode_header(SessionId([7; 16]), 1).to_vec();
    file.extend_from_slice(data);
    let limits = Limits {
        max_frame_len: 1 << 20,
        max_content_len: 1 << 20,
        max_corrupt_frames: 4,
        resync: data.first().is_some_and(|b| b & 1 == 1),
    };
    let walked = scan::scan(&file, format::HEADER_LEN, &limits, "fuzz", |v| {
        assert!(v.raw.len() as u64 - 12 <= u64::from(limits.max_frame_len));
        assert!(v.content_len <= limits.max_content_len);
        Ok(())
    });
    let loaded = Session::load_bytes(&file, &limits, "fuzz");
    assert_eq!(walked.is_ok(), loaded.is_ok(), "walk and load disagree");
    let mut sink = Vec::new();
    let dumped = dump::dump(&file, &limits, "fuzz", &mut sink);
    assert_eq!(walked.is_ok(), dumped.is_ok(), "walk and dump disagree");
    let (Ok(walked), Ok(s)) = (walked, loaded) else {
        return;
    };
    assert_eq!(
        s.report().scan,
        walked,
        "the loader's scan report is the walk's"
    );
    let bump = bumpalo::Bump::new();
    let contents: Vec<&[u8]> = s
        .records()
        .iter()
        .map(|r| {
            let c = s.content_in(r, &bump).expect("loaded content decodes");
            assert_eq!(c.len(), s.content_len(r));
            c
        })
        .collect();
    let mut again = Vec::new();
    s.encode_file(&mut again).expect("encode");
    let t = Session::load_bytes(&again, &Limits::default(), "re-encoded").expect("reload");
    assert_eq!(t.records().len(), s.records().len());
    for ((a, b), c) in t.records().iter().zip(s.records()).zip(&contents) {
        assert_eq!(
            (a.id, a.parent, a.kind, a.pairing),
            (b.id, b.parent, b.kind, b.pairing)
        );
        assert_eq!(&*t.content(a).expect("content"), *c);
    }
    let mut third = Vec::new();
    t.encode_file(&mut third).expect("encode");
    assert_eq!(again, third, "re-encoding is a fixed point");
});
