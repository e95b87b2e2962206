//! Representative session entries: a deterministic generator and their
//! canonical CBOR encoding.
//!
//! The spec's speed target ("encoding 1,000 representative session entries
//! completes within 5 ms") needs a fixed meaning of *representative*. Here it
//! is a coding-agent session as it looks on the wire:
//!
//! | kind | share (stationary) | content |
//! |---|---|---|
//! | user message | about 14 % | text of 400 to 600 bytes |
//! | assistant message | about 20 % | text of 400 to 600 bytes, model name |
//! | tool call | about 33 % | call id, tool name, nested argument map |
//! | tool result | about 33 % | call id, error flag, output of 1,500 to 2,500 bytes |
//!
//! The sequence is a small Markov chain (a user message is followed by an
//! answer or a tool call, every tool call by its result, a result by another
//! call or an answer), so pairs and proportions look like a real turn rather
//! than shuffled noise. Sizes are UTF-8 byte lengths, with a few multi-byte
//! characters mixed into the prose.
//!
//! Each entry is one canonical CBOR map with fixed integer keys in canonical
//! order (see [`key`]); the content is a nested map whose keys are fixed
//! integers too, except tool-call arguments, whose text keys are held in
//! canonical order (shorter first, then bytewise), as they are after decoding
//! canonical CBOR, so encoding never sorts. Entries are written one after the
//! other as a CBOR sequence, the way a session file appends them.

use smith_codec::{DecodeError, Decoder, Encoder, Item, Limits, Mode};

use crate::rng::Rng;

/// Integer keys of the entry map, in canonical (ascending) order.
pub mod key {
    /// Entry id (unsigned integer).
    pub const ID: u64 = 0;
    /// Parent entry id (unsigned integer), or null for the first entry.
    pub const PARENT: u64 = 1;
    /// Milliseconds since the Unix epoch (unsigned integer).
    pub const TIMESTAMP: u64 = 2;
    /// Entry kind (unsigned integer, see [`super::Kind`]).
    pub const KIND: u64 = 3;
    /// Kind-specific content (a map with integer keys).
    pub const CONTENT: u64 = 4;
}

/// Inclusive byte-length range of user and assistant text.
pub const MESSAGE_TEXT_BYTES: (usize, usize) = (400, 600);
/// Inclusive byte-length range of tool-result output.
pub const TOOL_OUTPUT_BYTES: (usize, usize) = (1500, 2500);

/// The seed `smith bench` and the divan benchmarks use.
pub const DEFAULT_SEED: u64 = 0x5EED_5317_4000_0001;

/// The kind of a representative entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A message typed by the user.
    User,
    /// Text produced by the model.
    Assistant,
    /// A tool invocation requested by the model.
    ToolCall,
    /// The output of a tool invocation.
    ToolResult,
}

impl Kind {
    /// The integer written under [`key::KIND`].
    pub const fn code(self) -> u64 {
        match self {
            Kind::User => 1,
            Kind::Assistant => 2,
            Kind::ToolCall => 3,
            Kind::ToolResult => 4,
        }
    }
}

/// A value inside tool-call arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A text string.
    Str(String),
    /// A signed integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An array.
    List(Vec<Arg>),
    /// A map with text keys, held in canonical key order.
    Map(Vec<(String, Arg)>),
}

/// Kind-specific content of an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// `{0: text}`
    User {
        /// The message text.
        text: String,
    },
    /// `{0: text, 1: model}`
    Assistant {
        /// The answer text.
        text: String,
        /// The model that produced it.
        model: &'static str,
    },
    /// `{0: call id, 1: tool name, 2: arguments}`
    ToolCall {
        /// Provider-assigned call id, repeated by the result.
        call_id: String,
        /// Tool name.
        tool: &'static str,
        /// Arguments: always an [`Arg::Map`].
        arguments: Arg,
    },
    /// `{0: call id, 1: is error, 2: output}`
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// Whether the tool failed.
        is_error: bool,
        /// The tool's output.
        output: String,
    },
}

/// One representative session entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Entry id; ids start at 1 and increase by one.
    pub id: u64,
    /// The previous entry's id (`None` for the first entry).
    pub parent: Option<u64>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// What the content is.
    pub content: Content,
}

impl Entry {
    /// The entry's kind.
    pub fn kind(&self) -> Kind {
        match self.content {
            Content::User { .. } => Kind::User,
            Content::Assistant { .. } => Kind::Assistant,
            Content::ToolCall { .. } => Kind::ToolCall,
            Content::ToolResult { .. } => Kind::ToolResult,
        }
    }
}

/// Generates `count` representative entries from `seed`.
///
/// The same `(seed, count)` always gives the same entries, on every platform
/// (the PRNG is [`Rng`], written in this crate).
pub fn generate(seed: u64, count: usize) -> Vec<Entry> {
    let mut rng = Rng::new(seed);
    let mut entries = Vec::with_capacity(count);
    // 2026-01-01T00:00:00Z in milliseconds.
    let mut timestamp: u64 = 1_767_225_600_000;
    let mut pending_call: Option<String> = None;
    let mut previous: Option<Kind> = None;
    for index in 0..count {
        let id = index as u64 + 1;
        let kind = next_kind(&mut rng, previous);
        timestamp += rng.between(40, 30_000);
        let content = match kind {
            Kind::User => Content::User {
                text: prose(&mut rng, MESSAGE_TEXT_BYTES),
            },
            Kind::Assistant => Content::Assistant {
                text: prose(&mut rng, MESSAGE_TEXT_BYTES),
                model: rng.pick(MODELS),
            },
            Kind::ToolCall => {
                let call_id = call_id(&mut rng);
                pending_call = Some(call_id.clone());
                let (tool, arguments) = tool_call(&mut rng);
                Content::ToolCall {
                    call_id,
                    tool,
                    arguments,
                }
            }
            Kind::ToolResult => Content::ToolResult {
                // `next_kind` only yields a result right after a call.
                call_id: pending_call.take().unwrap_or_default(),
                is_error: rng.chance(8),
                output: tool_output(&mut rng, TOOL_OUTPUT_BYTES),
            },
        };
        entries.push(Entry {
            id,
            parent: index.checked_sub(1).map(|p| p as u64 + 1),
            timestamp,
            content,
        });
        previous = Some(kind);
    }
    entries
}

/// Encodes `entries` as a CBOR sequence appended to `out`.
///
/// Allocates nothing when `out` has room for the encoded bytes: every string
/// is written straight from the entry, every map in canonical order.
///
/// One [`Encoder`] writes entry after entry, a tool call's top-level
/// arguments included; only a container nested in the arguments hands the
/// vector on (to `encode_arg`), and the encoder is made again after it.
/// (An encoder per entry wrote its length back to the vector and read it
/// again for the next entry, 1,000 times per encode, and a call for every
/// tool call's arguments made 370 more.)
pub fn encode_entries(entries: &[Entry], out: &mut Vec<u8>) {
    let mut enc = Encoder::new(out);
    for entry in entries {
        if let Some(arguments) = write_entry(&mut enc, entry) {
            write_arg!(enc, out, arguments);
        }
    }
}

/// Encodes one entry as a canonical CBOR map appended to `out`.
pub fn encode_entry(out: &mut Vec<u8>, entry: &Entry) {
    let mut enc = Encoder::new(out);
    if let Some(arguments) = write_entry(&mut enc, entry) {
        drop(enc);
        encode_arg(out, arguments);
    }
}

/// Writes `entry` with `enc` up to a tool call's arguments, which it
/// returns for the caller to write next (the last value of the entry).
///
/// Each entry is one run of [`Encoder::items`]: the fixed keys, the entry's
/// fields and its content up to the tool-call arguments, with one capacity
/// check for the run (the keys and the kind are constants of each arm, so
/// they are stored as constant bytes).
///
/// The caller writes the arguments with the same encoder (`write_arg!`);
/// a container nested in them goes to [`encode_arg`], which is handed the
/// vector, not the encoder: an encoder that never leaves the function that
/// made it keeps its write position in a register (see [`Encoder`]).
#[inline(always)]
fn write_entry<'e>(enc: &mut Encoder<'_>, entry: &'e Entry) -> Option<&'e Arg> {
    let parent = match entry.parent {
        Some(parent) => Item::u64(parent),
        None => Item::null(),
    };
    // The entry map's head, its fields and the content's key: the first
    // ten items of every entry's run.
    macro_rules! entry_run {
        ($kind:expr, $($content:expr),+ $(,)?) => {
            enc.items((
                Item::map(5),
                Item::u64(key::ID),
                Item::u64(entry.id),
                Item::u64(key::PARENT),
                parent,
                Item::u64(key::TIMESTAMP),
                Item::u64(entry.timestamp),
                Item::u64(key::KIND),
                Item::u64($kind.code()),
                Item::u64(key::CONTENT),
                $($content,)+
            ))
        };
    }
    match &entry.content {
        Content::User { text } => {
            entry_run!(Kind::User, Item::map(1), Item::u64(0), Item::str(text));
            None
        }
        Content::Assistant { text, model } => {
            entry_run!(
                Kind::Assistant,
                Item::map(2),
                Item::u64(0),
                Item::str(text),
                Item::u64(1),
                Item::str(model),
            );
            None
        }
        Content::ToolCall {
            call_id,
            tool,
            arguments,
        } => {
            entry_run!(
                Kind::ToolCall,
                Item::map(3),
                Item::u64(0),
                Item::str(call_id),
                Item::u64(1),
                Item::str(tool),
                Item::u64(2),
            );
            Some(arguments)
        }
        Content::ToolResult {
            call_id,
            is_error,
            output,
        } => {
            entry_run!(
                Kind::ToolResult,
                Item::map(3),
                Item::u64(0),
                Item::str(call_id),
                Item::u64(1),
                Item::bool(*is_error),
                Item::u64(2),
                Item::str(output),
            );
            None
        }
    }
}

/// Encodes one tool-call argument (and everything nested in it).
///
/// One encoder writes a container's head and every leaf in it (map keys,
/// strings, integers, booleans); only a nested container hands the vector
/// on, to a call of its own, and the encoder is made again after it (an
/// encoder per key/value pair and a call per list item cost about 10 k
/// instructions per encode of the standard corpus, 2 %: docs/benchmarks.md,
/// "The codec gates: wide heads from a table").
fn encode_arg(out: &mut Vec<u8>, arg: &Arg) {
    let mut enc = Encoder::new(out);
    write_arg!(enc, out, arg);
}

/// Writes `$arg` with the encoder `$enc` over `$out`: a container's head
/// and its leaves with `$enc`, a nested container by [`encode_arg`] (the
/// encoder is dropped before and made again after). A macro, not a
/// function, so that [`encode_entries`] writes the top-level arguments
/// with its own encoder too: an encoder handed to a function counts as
/// escaped there (see [`Encoder`]).
macro_rules! write_arg {
    ($enc:ident, $out:ident, $arg:expr) => {
        match $arg {
            Arg::List(items) => {
                $enc.array(items.len() as u64);
                for item in items {
                    if !encode_leaf(&mut $enc, item) {
                        drop($enc);
                        encode_arg($out, item);
                        $enc = Encoder::new($out);
                    }
                }
            }
            Arg::Map(pairs) => {
                $enc.map(pairs.len() as u64);
                for (k, v) in pairs {
                    $enc.str(k);
                    if !encode_leaf(&mut $enc, v) {
                        drop($enc);
                        encode_arg($out, v);
                        $enc = Encoder::new($out);
                    }
                }
            }
            leaf => {
                encode_leaf(&mut $enc, leaf);
            }
        }
    };
}
use write_arg;

/// Writes `arg` with `enc` when it is a leaf (a string, an integer, a
/// boolean); `false`, writing nothing, for a container.
#[inline(always)]
fn encode_leaf(enc: &mut Encoder<'_>, arg: &Arg) -> bool {
    match arg {
        Arg::Str(s) => {
            enc.str(s);
        }
        Arg::Int(i) => {
            enc.i64(*i);
        }
        Arg::Bool(b) => {
            enc.bool(*b);
        }
        Arg::List(_) | Arg::Map(_) => return false,
    }
    true
}

/// Validates the encoded corpus as a strict CBOR sequence with
/// [`smith_codec::validate_sequence`] and returns how many top-level items
/// (entries) it holds.
///
/// This is the "structure walk" the gate table times: it checks every head,
/// every length and every canonical-form rule (shortest heads and floats,
/// definite lengths, UTF-8 text, sorted unique map keys, preferred bignums,
/// the default [`Limits`]) over every item, builds nothing and hands nothing
/// out. It runs the codec's dedicated strict walker.
///
/// # Errors
///
/// The strict decoder's error (with the byte offset and the rule broken)
/// for the first non-canonical or malformed item.
pub fn validate(bytes: &[u8]) -> Result<u64, DecodeError> {
    smith_codec::validate_sequence(bytes, Mode::Strict, Limits::default())
}

/// Walks every item of a CBOR sequence token by token with a strict
/// [`Decoder`] and returns how many items it holds (every map, key, value
/// and array element counts).
///
/// The same checks as [`validate`], through the pull decoder a reader of
/// entries uses: it produces a token per item and hands out borrowed views.
/// The gate table reports its time beside the gated walk.
///
/// # Errors
///
/// The strict decoder's error (with the byte offset and the rule broken)
/// for the first non-canonical or malformed item.
pub fn walk(bytes: &[u8]) -> Result<usize, DecodeError> {
    let mut dec = Decoder::strict(bytes);
    let mut items = 0usize;
    while !dec.is_at_end() {
        dec.next()?;
        items += 1;
    }
    Ok(items)
}

/// The Markov chain behind the kind mix (see the module docs).
fn next_kind(rng: &mut Rng, previous: Option<Kind>) -> Kind {
    match previous {
        None => Kind::User,
        Some(Kind::User) => {
            if rng.chance(40) {
                Kind::Assistant
            } else {
                Kind::ToolCall
            }
        }
        Some(Kind::Assistant) => {
            if rng.chance(70) {
                Kind::User
            } else {
                Kind::ToolCall
            }
        }
        Some(Kind::ToolCall) => Kind::ToolResult,
        Some(Kind::ToolResult) => {
            if rng.chance(55) {
                Kind::ToolCall
            } else {
                Kind::Assistant
            }
        }
    }
}

const MODELS: &[&str] = &["claude-sonnet-4-5", "gpt-5-codex", "gemini-2.5-pro"];

const WORDS: &[&str] = &[
    "the",
    "function",
    "returns",
    "an",
    "error",
    "when",
    "the",
    "buffer",
    "is",
    "empty",
    "so",
    "we",
    "should",
    "check",
    "length",
    "before",
    "reading",
    "I",
    "will",
    "update",
    "test",
    "module",
    "and",
    "run",
    "cargo",
    "again",
    "it",
    "looks",
    "like",
    "parser",
    "skips",
    "a",
    "field",
    "in",
    "struct",
    "because",
    "of",
    "off-by-one",
    "index",
    "let",
    "me",
    "read",
    "file",
    "first",
    "then",
    "apply",
    "fix",
    "`Vec<u8>`",
    "`Result<(), Error>`",
    "src/lib.rs",
    "naïve",
    "café",
    "→",
    "déjà",
    "vu",
    "this",
    "change",
    "keeps",
    "behaviour",
    "same",
    "for",
    "existing",
    "callers",
    "but",
    "handles",
    "case",
    "where",
    "input",
    "ends",
    "early.",
    "Done.",
    "Could",
    "you",
    "also",
    "add",
    "regression",
    "tests?",
    "Sure,",
    "here",
    "what",
    "changed:",
    "\n- ",
    "\n\n",
    "```rust\n",
    "\n```\n",
];

const CODE_LINES: &[&str] = &[
    "use std::io::{self, Read};",
    "    let mut buf = Vec::with_capacity(4096);",
    "    for (i, line) in input.lines().enumerate() {",
    "        if line.is_empty() { continue; }",
    "    }",
    "fn parse_header(bytes: &[u8]) -> Result<Header, ParseError> {",
    "    Ok(Header { version, flags, len })",
    "}",
    "test codec::tests::round_trip ... ok",
    "test store::tests::truncated_tail ... FAILED",
    "error[E0308]: mismatched types",
    "   --> src/frame.rs:118:24",
    "warning: unused variable: `offset`",
    "    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.41s",
    "src/main.rs:12:    let config = Config::load(&path)?;",
    "README.md:40:Run `smith bench --quick` before pushing.",
    "// Résumé: the decoder never allocates; views borrow the input.",
    "",
];

const PATHS: &[&str] = &[
    "src/lib.rs",
    "src/main.rs",
    "codec/src/decode.rs",
    "store/src/frame.rs",
    "engine/src/agent/loop.rs",
    "tests/all/main.rs",
    "docs/session-format.md",
];

const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn call_id(rng: &mut Rng) -> String {
    let mut id = String::with_capacity(30);
    id.push_str("toolu_");
    for _ in 0..24 {
        id.push(char::from(rng.pick(ALPHANUMERIC)));
    }
    id
}

/// Prose of an exact byte length drawn from `range` (inclusive).
fn prose(rng: &mut Rng, range: (usize, usize)) -> String {
    let target = rng.between(range.0 as u64, range.1 as u64) as usize;
    let mut text = String::with_capacity(target);
    while text.len() < target {
        let word = rng.pick(WORDS);
        if text.len() + word.len() + 1 > target {
            break;
        }
        if !text.is_empty() && !text.ends_with('\n') {
            text.push(' ');
        }
        text.push_str(word);
    }
    pad_ascii(rng, &mut text, target);
    text
}

/// Tool output (source lines, compiler and test output) of an exact byte
/// length drawn from `range` (inclusive).
fn tool_output(rng: &mut Rng, range: (usize, usize)) -> String {
    let target = rng.between(range.0 as u64, range.1 as u64) as usize;
    let mut text = String::with_capacity(target);
    loop {
        let line = rng.pick(CODE_LINES);
        if text.len() + line.len() + 1 > target {
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    pad_ascii(rng, &mut text, target);
    text
}

/// Fills `text` up to exactly `target` bytes with ASCII letters (so no
/// multi-byte character can straddle the end).
fn pad_ascii(rng: &mut Rng, text: &mut String, target: usize) {
    while text.len() < target {
        text.push(char::from(rng.pick(ALPHANUMERIC)));
    }
}

fn tool_call(rng: &mut Rng) -> (&'static str, Arg) {
    fn s(v: &str) -> Arg {
        Arg::Str(v.to_owned())
    }
    let tool = rng.pick(&["read", "bash", "edit", "grep", "write"]);
    let pairs: Vec<(&str, Arg)> = match tool {
        "read" => vec![
            ("path", s(rng.pick(PATHS))),
            ("offset", Arg::Int(rng.between(0, 2000) as i64)),
            ("limit", Arg::Int(rng.between(50, 400) as i64)),
        ],
        "bash" => vec![
            (
                "command",
                s(rng.pick(&[
                    "cargo test -p smith-codec",
                    "git status --short",
                    "rg -n 'fn decode' codec/src",
                    "cargo clippy --all-targets -- -D warnings",
                ])),
            ),
            ("timeout_ms", Arg::Int(rng.between(1, 120) as i64 * 1000)),
            (
                "env",
                map(vec![
                    ("LANG", s("C.UTF-8")),
                    ("RUST_BACKTRACE", s("1")),
                    ("CARGO_TERM_COLOR", s("never")),
                ]),
            ),
        ],
        "edit" => {
            let edits = (0..rng.between(1, 3))
                .map(|_| {
                    map(vec![
                        ("old", Arg::Str(prose(rng, (40, 120)))),
                        ("new", Arg::Str(prose(rng, (40, 160)))),
                        ("replace_all", Arg::Bool(rng.chance(10))),
                    ])
                })
                .collect();
            vec![("path", s(rng.pick(PATHS))), ("edits", Arg::List(edits))]
        }
        "grep" => vec![
            (
                "pattern",
                s(rng.pick(&["fn \\w+_frame", "TODO|FIXME", "impl .* for Decoder"])),
            ),
            (
                "paths",
                Arg::List((0..rng.between(1, 3)).map(|_| s(rng.pick(PATHS))).collect()),
            ),
            (
                "options",
                map(vec![
                    ("case_insensitive", Arg::Bool(rng.chance(30))),
                    ("context", Arg::Int(rng.between(0, 5) as i64)),
                    ("glob", s("*.rs")),
                    ("max_count", Arg::Int(-1)),
                ]),
            ),
        ],
        _ => vec![
            ("path", s(rng.pick(PATHS))),
            ("content", Arg::Str(tool_output(rng, (100, 300)))),
            ("create_dirs", Arg::Bool(true)),
        ],
    };
    (tool, map(pairs))
}

/// Builds a map with its keys in canonical CBOR order: for text keys the
/// encoded head grows with the length, so shorter keys sort first, and keys
/// of equal length sort bytewise.
fn map(pairs: Vec<(&str, Arg)>) -> Arg {
    let mut pairs: Vec<(String, Arg)> = pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    pairs.sort_by(|a, b| (a.0.len(), a.0.as_bytes()).cmp(&(b.0.len(), b.0.as_bytes())));
    Arg::Map(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_entry_is_a_user_message_without_parent() {
        let entries = generate(1, 3);
        assert_eq!(entries[0].kind(), Kind::User);
        assert_eq!(entries[0].parent, None);
        assert_eq!(entries[1].parent, Some(1));
        assert_eq!(entries[2].parent, Some(2));
    }

    #[test]
    fn canonical_map_orders_short_keys_first() {
        let Arg::Map(pairs) = map(vec![
            ("bb", Arg::Int(1)),
            ("c", Arg::Int(2)),
            ("ab", Arg::Int(3)),
        ]) else {
            panic!("map() must build a map");
        };
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["c", "ab", "bb"]);
    }
}
