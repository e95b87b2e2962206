//! Transcript entries kept in a session: the text of a resumed session's
//! messages is read from the session's payload arena when an entry is
//! drawn, measured, searched or copied, never copied into the transcript.
//!
//! A session-backed entry names a record (its index in
//! [`Session::records`]) and a part: the block of an assistant message's
//! `content`, 0 otherwise. [`SessionEntries::text_in`] walks the record's
//! canonical CBOR (the message as the journal recorded it: `role`, `text`,
//! `content`, …) to that text. An uncompressed record's text is borrowed
//! from the arena where it lies (the session file's mapping); a compressed
//! one is decompressed into the caller's bump arena, so it lives for one
//! frame (or one search step) and is dropped with it.

use bumpalo::Bump;
use smith_codec::{DecodeError, Decoder, Limits, Mode, Token};
use smith_store::{EntryKind as StoreKind, NONE, Record, Session};

/// The text of session-backed transcript entries.
pub trait EntryText: std::fmt::Debug + Send + Sync {
    /// The displayable text of part `part` of record `record`, borrowed
    /// from the source or decoded into `bump`. An entry that cannot be read
    /// yields a one-line explanation instead, the same every time.
    fn text_in<'a>(&'a self, record: u32, part: u32, bump: &'a Bump) -> &'a str;

    /// The entry id of record `record` (what `/branch ENTRY` takes), when
    /// the source knows it.
    fn entry_id(&self, record: u32) -> Option<u64> {
        let _ = record;
        None
    }
}

/// A session whose records back transcript entries.
#[derive(Debug)]
pub struct SessionEntries {
    session: Session,
}

/// One displayable part of a session record, found while filling the
/// transcript (see [`SessionEntries::parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// A user message's text.
    User,
    /// Assistant text (block `part` of the message's content).
    Text {
        /// Block index.
        part: u32,
    },
    /// Thinking (block `part`).
    Thinking {
        /// Block index.
        part: u32,
    },
    /// A tool call (block `part`).
    Call {
        /// The call id.
        id: &'a str,
        /// The tool's name.
        name: &'a str,
        /// The arguments' canonical CBOR.
        arguments: &'a [u8],
    },
    /// A tool result.
    Result {
        /// The call it answers.
        call_id: &'a str,
        /// Whether the call failed.
        is_error: bool,
        /// Whether the output is blank (nothing to show).
        blank: bool,
    },
}

fn decoder(bytes: &[u8]) -> Decoder<'_> {
    Decoder::new(bytes, Mode::Lenient, Limits::default())
}

/// Positions `d` (at a map) at the value of text key `key`; `false` when
/// the map has no such key (the map is then read whole).
fn seek(d: &mut Decoder<'_>, key: &str) -> Result<bool, DecodeError> {
    let n = d.map()?;
    for _ in 0..n {
        let hit = match d.peek()? {
            Token::Text(_) => d.str()? == key,
            _ => {
                d.skip()?;
                false
            }
        };
        if hit {
            return Ok(true);
        }
        d.skip()?;
    }
    Ok(false)
}

/// The text value of `key` in the map at `bytes`; empty when absent.
fn text_field<'a>(bytes: &'a [u8], key: &str) -> Result<&'a str, DecodeError> {
    let mut d = decoder(bytes);
    if seek(&mut d, key)?
        && let Token::Text(_) = d.peek()?
    {
        return d.str();
    }
    Ok("")
}

/// Block `part` of the `content` array of the message at `bytes`.
fn block(bytes: &[u8], part: u32) -> Result<Option<&[u8]>, DecodeError> {
    let mut d = decoder(bytes);
    if !seek(&mut d, "content")? {
        return Ok(None);
    }
    let Token::Array(n) = d.peek()? else {
        return Ok(None);
    };
    d.array()?;
    if u64::from(part) >= n {
        return Ok(None);
    }
    for _ in 0..part {
        d.skip()?;
    }
    d.skip().map(Some)
}

/// Every field of the map at `bytes` whose value is text, a bool or a
/// nested item, by key, in one pass.
fn fields<'a>(bytes: &'a [u8], mut each: impl FnMut(&'a str, &'a [u8])) -> Result<(), DecodeError> {
    let mut d = decoder(bytes);
    let n = d.map()?;
    for _ in 0..n {
        let key = match d.peek()? {
            Token::Text(_) => d.str()?,
            _ => {
                d.skip()?;
                ""
            }
        };
        let value = d.skip()?;
        each(key, value);
    }
    Ok(())
}

fn as_text(item: &[u8]) -> &str {
    let mut d = decoder(item);
    match d.peek() {
        Ok(Token::Text(_)) => d.str().unwrap_or(""),
        _ => "",
    }
}

/// `text` followed by one summary line per part of the message's `media`
/// (`[image shot.png · PNG 1280×720 · 412 KiB]`), never the bytes; `text`
/// itself when there are none.
fn with_media<'a>(bytes: &'a [u8], text: &'a str, bump: &'a Bump) -> Result<&'a str, DecodeError> {
    let mut media = None;
    fields(bytes, |key, value| {
        if key == "media" {
            media = Some(value);
        }
    })?;
    let Some(media) = media else {
        return Ok(text);
    };
    let mut d = decoder(media);
    let n = d.array()?;
    let mut out = text.to_owned();
    for _ in 0..n {
        let item = d.skip()?;
        let (mut mime, mut name, mut data) = ("", None, &[][..]);
        fields(item, |key, value| match key {
            "type" => mime = as_text(value),
            "name" => name = Some(as_text(value)),
            "data" => {
                let mut v = decoder(value);
                if let Ok(Token::Bytes(b)) = v.next() {
                    data = b;
                }
            }
            _ => {}
        })?;
        if let Some(media_type) = smith_contract::MediaType::from_mime(mime) {
            out.push('\n');
            out.push_str(&smith_contract::media::summary_of(media_type, name, data));
        }
    }
    Ok(bump.alloc_str(&out))
}

fn as_bool(item: &[u8]) -> bool {
    decoder(item).bool().unwrap_or(false)
}

impl SessionEntries {
    /// Backs transcript entries with `session` (a snapshot: records
    /// appended to the original later are not seen here).
    pub fn new(session: Session) -> Self {
        Self { session }
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Record `record`'s content: borrowed from the arena, or decompressed
    /// into `bump`.
    fn content<'a>(&'a self, record: &Record, bump: &'a Bump) -> Result<&'a [u8], String> {
        match self.session.content_plain(record) {
            Some(bytes) => Ok(bytes),
            None => self
                .session
                .content_in(record, bump)
                .map_err(|err| err.to_string()),
        }
    }

    /// A tool result's text: its `content`, or, for a result that refers to
    /// its effect's output (docs/session-format.md §4.1), that output's
    /// text, read from the completion entry before it.
    fn result_text<'a>(
        &'a self,
        record: u32,
        bytes: &'a [u8],
        bump: &'a Bump,
    ) -> Result<&'a str, String> {
        let Some(effect) = smith_store::refs::content_ref(bytes) else {
            return text_field(bytes, "content").map_err(|err| err.to_string());
        };
        let Some(completion) =
            smith_store::refs::completion_before(&self.session, record as usize, effect)
        else {
            return Ok(bump.alloc_str(&format!(
                "[the output of effect fx-{effect} is not in this session: its effect completion entry is missing or damaged]"
            )));
        };
        let output = self.content(completion, bump)?;
        Ok(smith_store::refs::output_content(output).unwrap_or(""))
    }

    /// The record indexes of the selected branch, root first.
    pub fn branch_indexes(&self) -> Vec<u32> {
        let records = self.session.records();
        let Some(leaf) = self.session.leaf() else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(self.session.branch().len());
        let mut i = self.session.find(leaf.id).map_or(NONE, |i| i as u32);
        while i != NONE && out.len() < records.len() {
            out.push(i);
            i = records[i as usize].parent_index;
        }
        out.reverse();
        out
    }

    /// The displayable parts of record `record`, in order, each given to
    /// `each` (with the record's content in `bump`, when it had to be
    /// decompressed). Kinds other than messages have none.
    ///
    /// # Errors
    ///
    /// A message whose content cannot be read or decoded: the text says
    /// which entry and why.
    pub fn parts<'a>(
        &'a self,
        record: u32,
        bump: &'a Bump,
        mut each: impl FnMut(Part<'a>),
    ) -> Result<(), String> {
        let Some(r) = self.session.records().get(record as usize) else {
            return Ok(());
        };
        let kind = r.entry_kind();
        if !matches!(
            kind,
            StoreKind::UserMessage | StoreKind::AssistantMessage | StoreKind::ToolResult
        ) {
            return Ok(());
        }
        let bytes = self.content(r, bump)?;
        let bad = |err: DecodeError| {
            format!(
                "session entry {} ({kind:?}) could not be decoded: {err}; inspect it with `smith session dump`",
                r.id
            )
        };
        match kind {
            StoreKind::UserMessage => each(Part::User),
            StoreKind::ToolResult => {
                let (mut call_id, mut is_error, mut blank) = ("", false, true);
                let mut referred = false;
                fields(bytes, |key, value| match key {
                    "call_id" => call_id = as_text(value),
                    "is_error" => is_error = as_bool(value),
                    "content" => blank = as_text(value).trim().is_empty(),
                    smith_store::refs::CONTENT_REF => referred = true,
                    _ => {}
                })
                .map_err(bad)?;
                if referred {
                    blank = self.result_text(record, bytes, bump)?.trim().is_empty();
                }
                each(Part::Result {
                    call_id,
                    is_error,
                    blank,
                });
            }
            _ => {
                let mut d = decoder(bytes);
                if !seek(&mut d, "content").map_err(bad)? {
                    return Ok(());
                }
                let n = d.array().map_err(bad)?;
                for part in 0..n {
                    let item = d.skip().map_err(bad)?;
                    let part = u32::try_from(part).unwrap_or(u32::MAX);
                    let (mut ty, mut id, mut name, mut arguments) = ("", "", "", &[][..]);
                    fields(item, |key, value| match key {
                        "type" => ty = as_text(value),
                        "id" => id = as_text(value),
                        "name" => name = as_text(value),
                        "arguments" => arguments = value,
                        _ => {}
                    })
                    .map_err(bad)?;
                    match ty {
                        "text" => each(Part::Text { part }),
                        "thinking" => each(Part::Thinking { part }),
                        "tool_call" => each(Part::Call {
                            id,
                            name,
                            arguments,
                        }),
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    fn text_of<'a>(&'a self, record: u32, part: u32, bump: &'a Bump) -> Result<&'a str, String> {
        let Some(r) = self.session.records().get(record as usize) else {
            return Err(format!(
                "record {record} is not in session {}",
                self.session.id()
            ));
        };
        let bytes = self.content(r, bump)?;
        let decoded = match r.entry_kind() {
            StoreKind::UserMessage => {
                text_field(bytes, "text").and_then(|text| with_media(bytes, text, bump))
            }
            StoreKind::ToolResult => return self.result_text(record, bytes, bump),
            StoreKind::AssistantMessage => match block(bytes, part) {
                Ok(Some(item)) => text_field(item, "text"),
                Ok(None) => Ok(""),
                Err(err) => Err(err),
            },
            _ => Ok(""),
        };
        decoded.map_err(|err| {
            format!(
                "session entry {} ({:?}) could not be decoded: {err}; inspect it with `smith session dump`",
                r.id,
                r.entry_kind()
            )
        })
    }
}

impl EntryText for SessionEntries {
    fn text_in<'a>(&'a self, record: u32, part: u32, bump: &'a Bump) -> &'a str {
        match self.text_of(record, part, bump) {
            Ok(text) => text,
            Err(why) => bump.alloc_str(&why),
        }
    }

    fn entry_id(&self, record: u32) -> Option<u64> {
        self.session.records().get(record as usize).map(|r| r.id)
    }
}

/// One line summarizing a tool call's arguments (canonical CBOR): the
/// `subject` argument, else the first of `command`, `path`, `pattern` and
/// `url` that is text, else the arguments as JSON; whitespace runs become
/// one space and the line is cut at 80 characters.
pub fn summarize(arguments: &[u8], subject: Option<&str>) -> String {
    let mut found: [Option<&str>; 5] = [None; 5];
    let keys = [
        subject.unwrap_or("\u{0}"),
        "command",
        "path",
        "pattern",
        "url",
    ];
    let is_map = matches!(decoder(arguments).peek(), Ok(Token::Map(_)));
    let text = if is_map {
        let _ = fields(arguments, |key, value| {
            if let Some(k) = keys.iter().position(|k| *k == key)
                && let Ok(Token::Text(t)) = decoder(value).peek()
            {
                found[k] = Some(t);
            }
        });
        found.iter().find_map(|f| *f).map(str::to_owned)
    } else {
        match decoder(arguments).peek() {
            Ok(Token::Text(t)) => Some(t.to_owned()),
            _ => None,
        }
    };
    let text = text.unwrap_or_else(|| {
        let mut json = String::new();
        match smith_codec::json::from_cbor(arguments, &mut json) {
            Ok(()) => json,
            Err(_) => String::new(),
        }
    });
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 {
        let mut cut: String = flat.chars().take(79).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}
