//! Entry kinds and the fixed-size entry record.

/// What an entry represents. The numeric codes are part of the file format.
/// Codes this build does not know are carried as [`EntryKind::Other`] and
/// survive every round trip unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A user message (code 1).
    UserMessage,
    /// An assistant message (code 2).
    AssistantMessage,
    /// A tool call; its pairing id names the call (code 3).
    ToolCall,
    /// A tool result; its pairing id is the call's (code 4).
    ToolResult,
    /// The model changed (code 5).
    ModelChange,
    /// A compaction; its pairing id is the first kept entry's id (code 6).
    Compaction,
    /// A secret registration (code 7).
    SecretRegistration,
    /// A VCS operation (code 8).
    VcsOperation,
    /// An effect intent, durable before the effect runs; pairing = effect id (code 9).
    EffectIntent,
    /// An effect completion; pairing = the intent's effect id (code 10).
    EffectCompletion,
    /// A leaf switch: its parent is the newly selected entry (code 11).
    LeafSwitch,
    /// A plugin's custom entry (code 12).
    PluginCustom,
    /// Replay-relevant metadata (code 13).
    Metadata,
    /// A plugin's UI intent that a frontend could not show and whose policy
    /// is `persist`, kept for the next frontend that opens the session
    /// (code 14).
    PluginIntent,
    /// A kind this build does not know, kept by code.
    Other(u32),
}

const NAMES: [(EntryKind, u32, &str); 14] = [
    (EntryKind::UserMessage, 1, "user_message"),
    (EntryKind::AssistantMessage, 2, "assistant_message"),
    (EntryKind::ToolCall, 3, "tool_call"),
    (EntryKind::ToolResult, 4, "tool_result"),
    (EntryKind::ModelChange, 5, "model_change"),
    (EntryKind::Compaction, 6, "compaction"),
    (EntryKind::SecretRegistration, 7, "secret_registration"),
    (EntryKind::VcsOperation, 8, "vcs_operation"),
    (EntryKind::EffectIntent, 9, "effect_intent"),
    (EntryKind::EffectCompletion, 10, "effect_completion"),
    (EntryKind::LeafSwitch, 11, "leaf_switch"),
    (EntryKind::PluginCustom, 12, "plugin_custom"),
    (EntryKind::Metadata, 13, "metadata"),
    (EntryKind::PluginIntent, 14, "plugin_intent"),
];

impl EntryKind {
    /// The kind's code in the file format.
    pub fn code(self) -> u32 {
        match self {
            EntryKind::Other(c) => c,
            known => NAMES
                .iter()
                .find(|(k, _, _)| *k == known)
                .map_or(0, |(_, c, _)| *c),
        }
    }

    /// The kind for a code; unknown codes become [`EntryKind::Other`].
    pub fn from_code(code: u32) -> Self {
        NAMES
            .iter()
            .find(|(_, c, _)| *c == code)
            .map_or(EntryKind::Other(code), |(k, _, _)| *k)
    }

    /// The snake_case name used in dumps, `None` for unknown kinds.
    pub fn name(self) -> Option<&'static str> {
        NAMES
            .iter()
            .find(|(k, _, _)| *k == self)
            .map(|(_, _, n)| *n)
    }

    /// The kind for a snake_case name.
    pub fn from_name(name: &str) -> Option<Self> {
        NAMES
            .iter()
            .find(|(_, _, n)| *n == name)
            .map(|(k, _, _)| *k)
    }
}

/// Marks an absent index or offset in a [`Record`].
pub const NONE: u32 = u32::MAX;
/// Marks an entry that has no frame in a file (an externally managed entry).
pub const NO_FRAME: u64 = u64::MAX;

/// One entry's fixed-size record: everything history traversal, tracing,
/// forking and compaction logic need, without decoding content.
///
/// Records are 64 bytes (one cache line) and plain data, so a branch is a
/// contiguous `Vec<Record>` that forks copy with one `memcpy`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The entry's stable id (non-zero).
    pub id: u64,
    /// The parent's id, 0 for a root.
    pub parent: u64,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Pairing id: tool call ↔ result, effect intent ↔ completion,
    /// compaction → first kept entry; 0 when none.
    pub pairing: u64,
    /// Offset of the entry's frame in its file, [`NO_FRAME`] when it has none.
    pub frame_offset: u64,
    /// Start of the entry's stored content in the payload arena: canonical
    /// CBOR, or one zstd frame of it when [`Record::is_compressed`].
    pub payload_offset: u64,
    /// Length of the stored content in the arena (the compressed length
    /// when compressed; see `Session::content_len` for the decoded length).
    pub payload_len: u32,
    /// The kind's code (see [`EntryKind::code`]).
    pub kind: u32,
    /// Index of the parent in the session's record table, [`NONE`] when the
    /// parent is absent (a root, or a parent lost to damage).
    pub parent_index: u32,
    /// Length of the entry map's fixed part (id … the content's byte-string
    /// head) stored in the arena just before the content, so the whole frame
    /// payload is `payload_offset - head_len .. payload_offset + payload_len`
    /// and a fork re-frames an entry without re-encoding it.
    pub head_len: u16,
    /// In-memory flags ([`RECORD_COMPRESSED`]); not part of the file format.
    pub flags: u16,
}

/// [`Record::flags`] bit: the stored content is one zstd frame, copied from
/// the file as it is and decompressed only when content is read.
pub const RECORD_COMPRESSED: u16 = 1;

impl Record {
    /// The entry's kind.
    pub fn entry_kind(&self) -> EntryKind {
        EntryKind::from_code(self.kind)
    }

    /// Whether the stored content is compressed (decoded on access).
    pub fn is_compressed(&self) -> bool {
        self.flags & RECORD_COMPRESSED != 0
    }
}

/// A new entry to append.
#[derive(Debug, Clone, Copy)]
pub struct NewEntry<'a> {
    /// The entry's kind.
    pub kind: EntryKind,
    /// The parent's id; `None` appends under the selected leaf.
    pub parent: Option<u64>,
    /// Milliseconds since the Unix epoch; `None` uses the current time.
    pub timestamp_ms: Option<u64>,
    /// Pairing id (0 when the kind pairs with nothing).
    pub pairing: u64,
    /// The content: one canonical CBOR item.
    pub content: &'a [u8],
}

impl<'a> NewEntry<'a> {
    /// An entry of `kind` with `content`, under the selected leaf, stamped now.
    pub fn new(kind: EntryKind, content: &'a [u8]) -> Self {
        Self {
            kind,
            parent: None,
            timestamp_ms: None,
            pairing: 0,
            content,
        }
    }
}

/// An externally managed entry that initializes an in-memory session with
/// its own id and order.
#[derive(Debug, Clone, Copy)]
pub struct ExternalEntry<'a> {
    /// The entry's id (non-zero, unique).
    pub id: u64,
    /// The parent's id, 0 for a root.
    pub parent: u64,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// The entry's kind.
    pub kind: EntryKind,
    /// Pairing id.
    pub pairing: u64,
    /// The content: one canonical CBOR item.
    pub content: &'a [u8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Record>(), 64);
    }

    #[test]
    fn kinds_round_trip_by_code_and_name() {
        for (k, c, n) in NAMES {
            assert_eq!(EntryKind::from_code(c), k);
            assert_eq!(k.code(), c);
            assert_eq!(EntryKind::from_name(n), Some(k));
        }
        assert_eq!(EntryKind::from_code(999), EntryKind::Other(999));
        assert_eq!(EntryKind::Other(999).code(), 999);
    }
}
