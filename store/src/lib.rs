//! The session store: frame files, compression, recovery, locks, atomic
//! publication, session arenas and the JSONL dump.
//!
//! A session is an append-only branching history. On disk it is one file: a
//! 48-byte header and then length-prefixed frames, each carrying a kind,
//! flags, a crc32c checksum and one canonical CBOR item, with the length
//! repeated at the end so the file can be walked backwards
//! (`docs/session-format.md` is the complete description). In memory it is
//! an index arena ([`Session`]): fixed-size [`Record`]s over one payload
//! arena (the file's read-only mapping, read in place, plus one owned buffer
//! for what is appended later), content kept as canonical CBOR bytes and
//! decoded only by whoever reads it.
//!
//! * [`format`] — the byte layout (header, frames, entry map).
//! * [`scan`] — the frame reader with recovery: torn tails, corrupt frames
//!   with intact lengths (bounded), explicit failure on lost framing.
//! * [`SessionFile`] — a mapped file; [`SessionFile::recent`] reaches the
//!   selected leaf from the end of the file in time independent of its size.
//! * [`Session`] — the index arena: load, fork, traversal, compaction boundary.
//! * [`Store`] — a directory of sessions: create, append (under an fs4
//!   lock), fork, clone, names, list, delete, prune, repair, all new files
//!   published atomically ([`publish`]).
//! * [`dump`] — the JSONL dump and its exact inverse, import.
//! * `bench_support` (with the `bench` feature) — fixtures for benchmarks
//!   and `smith bench`.
#![deny(missing_docs)]

mod ahead;
#[cfg(feature = "bench")]
pub mod bench_support;
pub mod compress;
mod crc;
mod diag;
pub mod dump;
mod entry;
mod error;
mod file;
pub mod format;
mod helper;
mod leaf;
pub mod publish;
pub mod refs;
pub mod scan;
pub mod search;
pub mod search_index;
mod session;
mod store;
pub mod summary;
mod tail;
mod window;
mod zstd_frame;

/// Lowers (or raises) the file size from which a mapped load checks the
/// file on two threads, for this whole process. The default is 16 MiB;
/// tests set it to 0 to run the two-thread path over small files, where
/// every truncation and every damaged frame can be tried. Not meant for
/// anything else: the default is what the load is tuned for.
#[doc(hidden)]
pub fn set_parallel_load_min(bytes: usize) {
    tail::set_parallel_min(bytes);
}

/// Makes every mapped load of this process read its frames through the
/// mapping (`Some(true)`) or through a buffer (`Some(false)`), instead of
/// deciding by how the page cache holds the file (`None`, the default;
/// see `docs/session-format.md` §9), so that a test covers both ways
/// whatever the page cache does. Not meant for anything else.
#[doc(hidden)]
pub fn set_load_reads_mapping(mapping: Option<bool>) {
    window::force_mapping(mapping);
}

/// Sets, for this whole process, the chunk in which the two threads of a
/// two-thread load claim the file as they walk (`bytes`; 0: the default,
/// 1 MiB), and makes the loading thread take the end of the file from the
/// point `take_at_64ths` 64ths into the second thread's part before that
/// thread starts, or the second thread take the end of the loading
/// thread's part from `help_at_64ths` 64ths into it, whatever their pace
/// (0: only when the other thread falls behind, the default). Tests use it
/// to have the parts taken start at every kind of frame; not meant for
/// anything else.
#[doc(hidden)]
pub fn set_parallel_load_chunk(bytes: usize, take_at_64ths: usize, help_at_64ths: usize) {
    tail::set_chunk(bytes, take_at_64ths, help_at_64ths);
}

/// How many of this process's two-thread loads joined a part that the
/// second thread took from the end of the loading thread's part because
/// that thread was still walking it (see [`set_parallel_load_chunk`]).
#[doc(hidden)]
pub fn parallel_load_helps() -> u64 {
    tail::HELPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many session file mappings this process released on two threads
/// (see `store/src/helper.rs`), so that a test can tell that it did.
#[doc(hidden)]
pub fn parallel_releases() -> u64 {
    helper::RELEASES.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many mapped loads in this process checked their file on two threads
/// and joined the halves (rather than finishing on one thread), so that a
/// test can tell which path its loads took.
#[doc(hidden)]
pub fn parallel_load_joins() -> u64 {
    tail::JOINS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many of this process's two-thread loads joined a part that the
/// loading thread took from the end of the file because the second thread
/// was still walking it (see [`set_parallel_load_chunk`]).
#[doc(hidden)]
pub fn parallel_load_takes() -> u64 {
    tail::TAKES.load(std::sync::atomic::Ordering::Relaxed)
}

pub use diag::DIAGNOSABLE;
pub use entry::{EntryKind, ExternalEntry, NO_FRAME, NONE, NewEntry, RECORD_COMPRESSED, Record};
pub use error::{ErrorKind, Result, StoreError};
pub use file::{EntryView, SessionFile};
pub use format::SessionId;
pub use scan::{Limits, ScanReport};
pub use session::{BrokenBranch, LoadReport, Origin, Session};
pub use store::{
    Claim, EXTENSION, LockGuard, Packed, PruneOptions, PruneReport, SessionInfo, Store,
    TEMP_GRACE_MS, name_from_text, now_ms, repack, rewrite, validate_name,
};
pub use summary::Summary;
