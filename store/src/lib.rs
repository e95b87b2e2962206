//! Session store: frame files, compression, recovery, locks, atomic publication, session arenas, JSONL dump.
#![deny(missing_docs)]
