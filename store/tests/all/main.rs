//! Integration tests for smith-store. Each guarantee of the spec's
//! "Sessions" section has a test named after it.

mod alloc_count;
mod fixtures;
mod guarantees;
#[path = "../common/loads.rs"]
mod loads;
mod operations;
mod search;

use smith_store::{EntryKind, NewEntry, Session, SessionId, Store};

/// Canonical CBOR text string content.
pub fn text(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    smith_codec::Encoder::new(&mut v).str(s);
    v
}

/// A fixed-time entry under the selected leaf.
pub fn entry(kind: EntryKind, content: &[u8], ts: u64) -> NewEntry<'_> {
    NewEntry {
        kind,
        parent: None,
        timestamp_ms: Some(ts),
        pairing: 0,
        content,
    }
}

/// A store in a fresh temporary directory.
pub fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path().join("sessions")).expect("store opens");
    (dir, store)
}

/// Builds a representative sample session in `store` with a fixed id and
/// fixed timestamps: messages, a compressed tool result, a branch made by a
/// leaf switch, an unknown entry kind, and a compaction.
pub fn sample_session(store: &Store) -> Session {
    let mut s = store
        .create_with(SessionId([9; 16]), 1_700_000_000_000, Some("sample"))
        .expect("create");
    let big: String = (0..400)
        .map(|i| format!("line {i} of a long tool result\n"))
        .collect();
    let (c1, c2, c3) = (
        text("hello"),
        text("hi there, how can I help?"),
        text("read src/main.rs"),
    );
    let big = text(&big);
    let ids = store
        .append(
            &mut s,
            &[
                entry(EntryKind::UserMessage, &c1, 1),
                entry(EntryKind::AssistantMessage, &c2, 2),
                NewEntry {
                    pairing: 77,
                    ..entry(EntryKind::ToolCall, &c3, 3)
                },
                NewEntry {
                    pairing: 77,
                    ..entry(EntryKind::ToolResult, &big, 4)
                },
            ],
        )
        .expect("append");
    let (c4, c5) = (text("unknown future kind"), text("summary"));
    store
        .append(&mut s, &[entry(EntryKind::Other(4242), &c4, 5)])
        .expect("append unknown kind");
    store
        .select_leaf(&mut s, ids[1], Some(5))
        .expect("select leaf");
    store
        .append(
            &mut s,
            &[
                entry(EntryKind::UserMessage, &c1, 6),
                NewEntry {
                    pairing: ids[0],
                    ..entry(EntryKind::Compaction, &c5, 7)
                },
                entry(EntryKind::AssistantMessage, &c2, 8),
            ],
        )
        .expect("append after switch");
    s
}

pub use loads::frame_ends;
