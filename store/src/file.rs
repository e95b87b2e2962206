//! A mapped session file and the fast path to the selected leaf.
//!
//! [`SessionFile::open`] maps the file and checks its header; nothing else
//! is read. [`SessionFile::recent`] then finds the newest entry frame through
//! the trailer at the end of the file and follows parent links backwards, so
//! the selected leaf and its nearest ancestors are ready after reading a few
//! frames, whatever the file's size.

use std::path::{Path, PathBuf};

use bumpalo::Bump;
use memmap2::Mmap;

use crate::compress;
use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{self, EntryHead, Header, KIND_ENTRY, Probe};
use crate::scan::Limits;
use crate::session::{self, Session};

/// A session file mapped read-only.
#[derive(Debug)]
pub struct SessionFile {
    pub(crate) map: std::sync::Arc<crate::helper::Mapping>,
    /// The file, kept open: a full load reads it through buffers unless
    /// the page cache holds it in huge pages (see `crate::window`).
    file: std::fs::File,
    pub(crate) header: Header,
    pub(crate) path: PathBuf,
    /// The mapped file's identity (see `session::file_id`).
    pub(crate) id: Option<crate::session::FileId>,
}

/// One entry read straight from a file, content borrowed from the mapping or
/// (when compressed) from the caller's arena.
#[derive(Debug, Clone, Copy)]
pub struct EntryView<'a> {
    /// The entry's fixed fields.
    pub head: EntryHead,
    /// The entry's content (canonical CBOR).
    pub content: &'a [u8],
    /// Offset of the entry's frame.
    pub offset: u64,
}

impl SessionFile {
    /// Maps `path` and checks its header.
    ///
    /// # Errors
    /// `Io` when the file cannot be opened or mapped, header errors otherwise.
    pub fn open(path: &Path) -> Result<Self> {
        let file =
            std::fs::File::open(path).map_err(|e| StoreError::io("open session file", path, e))?;
        // SAFETY: session files are only ever appended to (under the session
        // lock) or replaced by rename, never truncated in place except for a
        // torn tail past every complete frame; the mapping's bytes that we
        // read are therefore stable. A concurrent truncation of the tail could
        // fault a read of the removed bytes, the accepted risk of mapping.
        let map =
            unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io("map session file", path, e))?;
        let header = format::decode_header(&map, &path.display().to_string())?;
        let id = file
            .metadata()
            .ok()
            .and_then(|m| crate::session::file_id(&m));
        Ok(Self {
            map: std::sync::Arc::new(crate::helper::Mapping::new(map)),
            file,
            header,
            path: path.to_path_buf(),
            id,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Loads the whole session into an index arena.
    ///
    /// On Unix the session's payload arena is this file's mapping itself:
    /// every frame is checked and every record built, but no payload byte
    /// is copied, and the session keeps the mapping alive. This is sound
    /// because a session file is only ever appended to, or cut back to its
    /// last complete frame (a torn tail no record refers to), and every
    /// rewrite (repair, import, clone, fork) publishes a new file by rename:
    /// the bytes a loaded session addresses never change, and a renamed-over
    /// or deleted file stays readable through its mapping. Elsewhere (where
    /// a mapped file cannot be renamed over) payloads are copied into an
    /// owned arena and the mapping is released with this `SessionFile`.
    ///
    /// # Errors
    /// See [`Session::load_bytes`].
    pub fn load(&self, limits: &Limits) -> Result<Session> {
        let what = self.path.display().to_string();
        // Loading reads the frames through a buffer (`crate::window`), or
        // through the mapping where the page cache holds the file in huge
        // pages (docs/session-format.md §9).
        #[cfg(unix)]
        let mut s = {
            let mapped = crate::window::reads_mapping(
                &self.map,
                self.map.len() >= crate::tail::parallel_min(),
            );
            if mapped {
                // Its pages are mapped by the load: released on two threads
                // when the session and this file are dropped.
                self.map.read_through();
            }
            let file = (!mapped).then_some(&self.file);
            Session::load_from(&self.map, Some(&self.map), file, limits, &what)?
        };
        #[cfg(not(unix))]
        let mut s = Session::load_from(&self.map, None, None, limits, &what)?;
        // Read in place, the session's arena maps this very file, which a
        // later append can then map again at its new length.
        #[cfg(unix)]
        {
            s.payload.file = self.id;
        }
        s.path = Some(self.path.clone());
        Ok(s)
    }

    /// Calls `visit` with every entry of the file in file order (head and
    /// decompressed content) when the file holds one intact linear history:
    /// every frame good (no corrupt frame, no torn tail), only entry frames
    /// and the origin frame, the first entry a root and each later one the
    /// child of the entry before it, linked to its frame. The selected
    /// branch (the newest entry and its ancestors) is then every entry in
    /// file order, so it is read front to back with nothing held per entry:
    /// memory stays that of one entry whatever the file's size. A first pass
    /// checks the file; when it finds anything else, `visit` is never called
    /// and the result is `Ok(false)` (a full [`SessionFile::load`] then
    /// reads the branch, recovering what can be recovered).
    ///
    /// # Errors
    /// `FrameOverLimit` (as a load), an entry that does not decompress to
    /// its declared size, and the first error `visit` returns.
    pub fn for_each_linear_entry<E: From<StoreError>>(
        &self,
        limits: &Limits,
        mut visit: impl FnMut(EntryHead, &[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<bool, E> {
        let bytes: &[u8] = &self.map;
        let start = self.header.header_len as usize;
        let what = self.path.display().to_string();
        let mut linear = true;
        let mut prev: Option<(u64, u64)> = None;
        let report = crate::scan::scan(bytes, start, limits, &what, |v| {
            if !linear {
                return Ok(());
            }
            if v.kind == format::KIND_ORIGIN {
                return Ok(());
            }
            let head = match (v.kind == KIND_ENTRY)
                .then(|| compress::classify(&v))
                .flatten()
            {
                Some(compress::StoredEntry::Plain { head, .. })
                | Some(compress::StoredEntry::Split { head, .. }) => head,
                _ => {
                    linear = false;
                    return Ok(());
                }
            };
            linear = match prev {
                None => head.parent == 0 && v.link == 0,
                Some((id, at)) => head.parent == id && v.link == v.offset - at,
            };
            prev = Some((head.id, v.offset));
            Ok(())
        })?;
        if !linear
            || report.corrupt_skipped != 0
            || report.torn_tail_at.is_some()
            || report.resynced_bytes != 0
        {
            return Ok(false);
        }
        let mut failed: Option<E> = None;
        // The entries are decompressed on a second thread, ahead of `visit`.
        let walked = crate::ahead::scan_entries(bytes, start, limits, &what, |v, entry| {
            if v.kind != KIND_ENTRY {
                return Ok(());
            }
            let Some((head, content)) = entry else {
                return Err(StoreError::at(
                    ErrorKind::Invalid,
                    v.offset,
                    format!(
                        "{what}: the entry frame at byte offset {} does not decompress to its declared {} bytes; run `smith session repair` to drop it",
                        v.offset, v.content_len
                    ),
                ));
            };
            visit(head, content).map_err(|e| {
                failed = Some(e);
                StoreError::new(ErrorKind::Io, String::new())
            })
        });
        match (walked, failed) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => Err(e.into()),
            (Ok(_), None) => Ok(true),
        }
    }

    /// The selected leaf and up to `n - 1` of its ancestors, leaf first,
    /// read by following frame links from the end of the file. Reads O(n)
    /// frames, independent of the file's size.
    ///
    /// Returns `Ok(None)` when the end of the file or a link is damaged; a
    /// full [`SessionFile::load`] then recovers what can be recovered.
    ///
    /// # Errors
    /// `FrameOverLimit` when a frame declares content over `limits`.
    pub fn recent<'b>(
        &'b self,
        n: usize,
        limits: &Limits,
        bump: &'b Bump,
    ) -> Result<Option<bumpalo::collections::Vec<'b, EntryView<'b>>>> {
        let bytes: &'b [u8] = &self.map;
        let start = self.header.header_len as usize;
        let max_body = u32::MAX - 12;
        let mut out = bumpalo::collections::Vec::with_capacity_in(n.min(1024), bump);
        // Find the newest entry frame, stepping back over other frames.
        let mut end = bytes.len();
        let mut frame = loop {
            if end == start {
                return Ok(Some(out));
            }
            let Some(v) = format::probe_back(bytes, end, start, max_body) else {
                return Ok(None);
            };
            if v.kind == KIND_ENTRY {
                break v;
            }
            end = v.offset as usize;
        };
        let mut dctx = None;
        let mut expected: Option<u64> = None;
        while out.len() < n {
            if frame.content_len > limits.max_content_len {
                return Err(StoreError::at(
                    ErrorKind::FrameOverLimit,
                    frame.offset,
                    format!(
                        "{}: the frame at byte offset {} declares {} bytes of content, over the limit of {}; raise the limit if the file is trusted",
                        self.path.display(),
                        frame.offset,
                        frame.content_len,
                        limits.max_content_len
                    ),
                ));
            }
            let (head, content): (EntryHead, &'b [u8]) =
                match compress::classify(&frame) {
                    Some(compress::StoredEntry::Plain {
                        head,
                        map,
                        content_at,
                    }) => (head, &map[content_at..]),
                    Some(compress::StoredEntry::Split {
                        head,
                        zstd,
                        content_len,
                        ..
                    }) => {
                        let d = match &mut dctx {
                            Some(d) => d,
                            None => dctx
                                .insert(session::decompressor(&self.path.display().to_string())?),
                        };
                        let dst = bump.alloc_slice_fill_copy(content_len, 0u8);
                        if !compress::decompress_into(d, zstd, dst) {
                            return Ok(None);
                        }
                        (head, &*dst)
                    }
                    Some(compress::StoredEntry::Whole) => {
                        let d = match &mut dctx {
                            Some(d) => d,
                            None => dctx
                                .insert(session::decompressor(&self.path.display().to_string())?),
                        };
                        let dst = bump.alloc_slice_fill_copy(frame.content_len as usize, 0u8);
                        if !compress::decompress_into(d, frame.payload, dst) {
                            return Ok(None);
                        }
                        let Some((head, at, len)) = format::decode_entry(dst) else {
                            return Ok(None);
                        };
                        (head, &dst[at..at + len])
                    }
                    None => return Ok(None),
                };
            if expected.is_some_and(|e| e != head.id) {
                return Ok(None);
            }
            out.push(EntryView {
                head,
                content,
                offset: frame.offset,
            });
            if head.parent == 0 || frame.link == 0 || frame.link > frame.offset {
                break;
            }
            let target = (frame.offset - frame.link) as usize;
            frame = match format::probe(bytes, target, max_body) {
                Probe::Good(v) if v.kind == KIND_ENTRY => v,
                _ => return Ok(None),
            };
            // The parent's id is checked when it is decoded on the next turn.
            expected = Some(head.parent);
        }
        Ok(Some(out))
    }
}
