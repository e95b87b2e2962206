//! Opening a session at its selected leaf: the newest part of the selected
//! branch as a [`Session`], read from the end of the file back, without
//! the whole record table.
//!
//! A full load ([`SessionFile::load`]) checks every frame of the file and
//! builds a record for every entry: linear in the file's size (about 150 ms
//! of CPU for 1 GiB). Resuming a conversation needs far less: the entries
//! from the selected leaf back to the newest compaction's boundary, or as
//! many as the model's window can use. [`SessionFile::open_at_leaf`] reads
//! those and no others: it finds the newest entry frame through the
//! trailer at the end of the file (the selected leaf, as a full load
//! selects it), then follows each entry's frame link to its parent,
//! checking each frame as a load does (lengths, checksum, limits) and
//! building its record, until the caller says it has what it needs. The
//! payloads stay where they lie in the file's mapping, as in a full load.
//!
//! The session it returns is a normal one for appending
//! ([`crate::Store::append`] writes under the leaf, and new entries take
//! ids after the leaf's, the largest in a file smith wrote), for reading
//! the records it holds and for their content. It does not hold the rest
//! of the session: [`Session::opened_at_leaf`] says so, and whatever needs
//! the whole session (the branch tree, search, dump, fork, leaf switches)
//! loads it fully instead.

use crate::entry::{NONE, Record};
use crate::error::Result;
use crate::file::SessionFile;
use crate::format::{self, KIND_ENTRY, KIND_ORIGIN, Probe};
use crate::scan::{Limits, ScanReport};
use crate::session::{Arena, LoadReport, Origin, Session, Writer, in_place_record};

impl SessionFile {
    /// The selected branch's newest entries as a session, read from the
    /// selected leaf back: `more` is called with each entry's record (the
    /// leaf first, then its parent, and so on; the session given is the
    /// one being opened, whose [`Session::content`] reads any of them) and
    /// the walk stops after the first record it answers `false` for, or at
    /// the branch's root. Reads only the frames of the entries walked,
    /// whatever the file's size.
    ///
    /// `Ok(None)` when the file is not one the walk can vouch for: the end
    /// of the file is torn or damaged, a frame on the way fails its checks
    /// or is over `limits`, an entry is stored as a whole-payload
    /// compressed frame (its payload must be decompressed into memory of
    /// its own), or the entries do not chain (a parent's id is not what its
    /// child names, or not smaller than the child's). A full
    /// [`SessionFile::load`] then reads the session, recovering and
    /// reporting what it can.
    ///
    /// # Errors
    /// None today: every problem of the file makes the answer `Ok(None)`;
    /// the `Result` leaves room for reads that can fail.
    pub fn open_at_leaf(
        &self,
        limits: &Limits,
        mut more: impl FnMut(&Session, &Record) -> bool,
    ) -> Result<Option<Session>> {
        let bytes: &[u8] = &self.map;
        let start = self.header.header_len as usize;
        let max_body = limits.max_frame_len;
        let mut s = Session {
            header: self.header,
            origin: None,
            records: Vec::new(),
            payload: Arena::mapped(std::sync::Arc::clone(&self.map), self.id),
            branch: Vec::new(),
            linear: true,
            report: LoadReport {
                file_len: bytes.len() as u64,
                ..LoadReport::default()
            },
            known_len: bytes.len() as u64,
            path: Some(self.path.clone()),
            max_id: 0,
            writer: Writer::default(),
            from_leaf: true,
        };
        // The origin frame, when the session has one, is the file's first.
        if let Probe::Good(v) = format::probe(bytes, start, max_body)
            && v.kind == KIND_ORIGIN
        {
            s.origin =
                format::decode_origin(v.payload).map(|(session, leaf)| Origin { session, leaf });
        }
        // The newest entry frame, stepping back over frames of other kinds.
        let mut end = bytes.len();
        let mut frame = loop {
            if end == start {
                // No entry at all: the whole (empty) session.
                s.from_leaf = false;
                return Ok(Some(s));
            }
            let Some(v) = format::probe_back(bytes, end, start, max_body) else {
                return Ok(None);
            };
            if v.kind == KIND_ENTRY {
                break v;
            }
            if v.kind != KIND_ORIGIN {
                s.report.unknown_frames += 1;
            }
            end = v.offset as usize;
        };
        let mut report = s.report;
        let mut layout = format::HeadLayout::default();
        // Leaf first.
        let mut walked: Vec<Record> = Vec::new();
        let mut frames = 0u64;
        // Whether the frames walked are every frame of the file: the leaf's
        // ends the file, each parent's ends where its child's begins, and
        // the root's begins the file (after the origin frame, if any).
        let mut every_frame = frame.offset as usize + frame.raw.len() == bytes.len();
        loop {
            if frame.content_len > limits.max_content_len {
                return Ok(None);
            }
            let Some(r) = in_place_record(&frame, &mut report, &mut layout) else {
                return Ok(None);
            };
            frames += 1;
            if let Some(child) = walked.last()
                && (child.parent != r.id || r.id >= child.id)
            {
                return Ok(None);
            }
            let go_on = more(&s, &r);
            walked.push(r);
            if r.parent == 0 {
                // The root: the branch is whole.
                let first = match format::probe(bytes, start, max_body) {
                    Probe::Good(v) if v.kind == KIND_ORIGIN => start + v.raw.len(),
                    _ => start,
                };
                every_frame &= frame.offset as usize == first;
                break;
            }
            if frame.link == 0 || frame.link > frame.offset {
                return Ok(None);
            }
            if !go_on {
                break;
            }
            let target = (frame.offset - frame.link) as usize;
            if target < start {
                return Ok(None);
            }
            let child_at = frame.offset as usize;
            frame = match format::probe(bytes, target, max_body) {
                Probe::Good(v) if v.kind == KIND_ENTRY => v,
                _ => return Ok(None),
            };
            every_frame &= frame.offset as usize + frame.raw.len() == child_at;
        }
        walked.reverse();
        for (i, r) in walked.iter_mut().enumerate() {
            r.parent_index = if i == 0 { NONE } else { (i - 1) as u32 };
        }
        s.max_id = walked.last().map_or(0, |r| r.id);
        // Only a walk over every frame of the file holds the whole session
        // (other branches, and frames of other kinds, are not walked).
        s.from_leaf = !(every_frame && walked.first().is_some_and(|r| r.parent == 0));
        s.records = walked;
        report.scan = ScanReport {
            frames,
            valid_end: bytes.len() as u64,
            ..ScanReport::default()
        };
        s.report = report;
        Ok(Some(s))
    }
}

impl Session {
    /// Whether this session was opened at its selected leaf
    /// ([`SessionFile::open_at_leaf`]) and holds only the newest part of
    /// its selected branch: its records, branch and leaves are that part's,
    /// and a caller that needs the whole session loads it
    /// ([`crate::Store::load`]). `false` for a loaded, created or forked
    /// session, and for one opened at its leaf whose walk went over every
    /// frame of the file (one line of history, from its root).
    pub fn opened_at_leaf(&self) -> bool {
        self.from_leaf
    }
}
