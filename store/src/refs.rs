//! References that keep one copy of a value in a session
//! (docs/session-format.md §4.1).
//!
//! A tool call's arguments are stored once, in the assistant message that
//! made the call: its `tool_call` entry and its effect's intent hold,
//! instead of `arguments` (`input` for the intent), the key
//! [`ARGUMENTS_REF`] with the value `true`, naming the arguments of the
//! call the entry is about (the call's `id`; the intent's `parent`) in the
//! nearest `assistant_message` entry among the entry's ancestors
//! ([`message_before`]).
//!
//! A tool's output is stored once, in its effect completion: the tool
//! result entry written after it holds, instead of its `content`, the key
//! [`CONTENT_REF`] naming the effect (`"content_ref": "fx-N"`). The text is
//! the completion's `output.content`, the completion being the nearest
//! `effect_completion` entry of that effect among the result's ancestors
//! (it is written before the result, after the effect's intent, on the
//! same branch). The reference is by position in the branch, not by entry
//! id, so it holds in forks, imports and any copy that keeps the order of
//! a branch. This module is what every reader that works on records
//! rather than on the engine's decoded messages uses (search, the
//! interface's transcript); the engine's readers resolve through
//! `smith_engine::journal::store`.

use smith_codec::{Decoder, Limits, Mode, Token};

use crate::entry::{EntryKind, Record};
use crate::session::Session;

/// The key of a tool result's content reference.
pub const CONTENT_REF: &str = "content_ref";

/// The key of a tool call entry's or an effect intent's reference to the
/// call's arguments in the assistant message that made the call (its
/// value is `true`).
pub const ARGUMENTS_REF: &str = "arguments_ref";

fn decoder(bytes: &[u8]) -> Decoder<'_> {
    Decoder::new(bytes, Mode::Lenient, Limits::default())
}

/// Positions `d` (at a map) at the value of text key `key`; `false` when
/// the map has no such key or is not a map.
fn seek(d: &mut Decoder<'_>, key: &str) -> bool {
    let Ok(n) = d.map() else {
        return false;
    };
    for _ in 0..n {
        let hit = match d.peek() {
            Ok(Token::Text(_)) => d.str().is_ok_and(|k| k == key),
            _ => {
                if d.skip().is_err() {
                    return false;
                }
                false
            }
        };
        if hit {
            return true;
        }
        if d.skip().is_err() {
            return false;
        }
    }
    false
}

/// The effect number a tool result's content (its canonical CBOR map)
/// names with [`CONTENT_REF`]; `None` for a result that holds its content
/// itself (every result written before references existed, and any whose
/// text differs from its effect's output).
pub fn content_ref(result: &[u8]) -> Option<u64> {
    let mut d = decoder(result);
    if !seek(&mut d, CONTENT_REF) {
        return None;
    }
    match d.next() {
        Ok(Token::Text(t)) => t.strip_prefix("fx-")?.parse().ok(),
        _ => None,
    }
}

/// Whether a tool call entry's or an effect intent's content (its
/// canonical CBOR map) refers to its call's arguments with
/// [`ARGUMENTS_REF`] instead of holding them.
pub fn arguments_ref(content: &[u8]) -> bool {
    let mut d = decoder(content);
    seek(&mut d, ARGUMENTS_REF) && matches!(d.next(), Ok(Token::Bool(true)))
}

/// The assistant message whose call arguments an entry at record index
/// `index` (in [`Session::records`]) refers to: the nearest
/// `assistant_message` entry among its ancestors, reading records only.
/// `None` when there is none (it was lost with a damaged frame).
pub fn message_before(session: &Session, index: usize) -> Option<&Record> {
    let parent = session.records().get(index)?.parent_index;
    message_from(session, parent as usize)
}

/// As [`message_before`], for an entry to be appended under the record at
/// `index`: the walk starts at that record itself.
pub fn message_from(session: &Session, index: usize) -> Option<&Record> {
    session
        .ancestors(index)
        .find(|r| r.entry_kind() == EntryKind::AssistantMessage)
}

/// The `output.content` text of an effect completion's content; `None`
/// when it has none.
pub fn output_content(completion: &[u8]) -> Option<&str> {
    let mut d = decoder(completion);
    if !seek(&mut d, "output") {
        return None;
    }
    text_at(d, "content")
}

/// The `content` text of an effect's output (the `{content, details,
/// is_error}` map a completion holds as `output`); `None` when it has
/// none.
pub fn output_text(output: &[u8]) -> Option<&str> {
    text_at(decoder(output), "content")
}

/// The text value of key `key` of the map `d` is at.
fn text_at<'a>(mut d: Decoder<'a>, key: &str) -> Option<&'a str> {
    if !seek(&mut d, key) {
        return None;
    }
    match d.next() {
        Ok(Token::Text(t)) => Some(t),
        _ => None,
    }
}

/// The completion of effect `effect` that a tool result at record index
/// `index` (in [`Session::records`]) refers to: the nearest
/// `effect_completion` entry paired with `effect` among its ancestors,
/// reading records only. `None` when the walk meets the effect's intent
/// first, or the root (the completion is missing: never written, or lost
/// with a damaged frame).
pub fn completion_before(session: &Session, index: usize, effect: u64) -> Option<&Record> {
    let parent = session.records().get(index)?.parent_index;
    completion_from(session, parent as usize, effect)
}

/// As [`completion_before`], for an entry to be appended under the
/// record at `index`: the walk starts at that record itself.
pub fn completion_from(session: &Session, index: usize, effect: u64) -> Option<&Record> {
    for r in session.ancestors(index) {
        if r.pairing != effect {
            continue;
        }
        match r.entry_kind() {
            EntryKind::EffectCompletion => return Some(r),
            EntryKind::EffectIntent => return None,
            _ => {}
        }
    }
    None
}

/// The index in [`Session::records`] of `record` (a record of this
/// session, from its table or its branch): found by id with a binary
/// search, since records are in append order and ids grow with it
/// (ids are unique in a session), and otherwise by [`Session::find`].
pub fn index_of(session: &Session, record: &Record) -> Option<usize> {
    let records = session.records();
    if let Ok(i) = records.binary_search_by_key(&record.id, |r| r.id) {
        return Some(i);
    }
    session.find(record.id)
}
