//! Full-text search over stored sessions (`smith session search`,
//! `/search-all`).
//!
//! What is searched: the text a user reads in a conversation — user and
//! assistant messages (with their tool calls' arguments), tool results
//! (a result that refers to its effect's output for its text, §4.1 of
//! docs/session-format.md, is searched in that output) and compaction
//! summaries. Tool-call entries (which repeat a call the
//! assistant message holds), effect records (which repeat a tool's
//! output), run metadata (which repeats the system prompt and tool list on
//! every run) and plugin entries are not, so a hit names the entry a user
//! would look at, once.
//!
//! How: an entry's content is one canonical CBOR item whose text strings
//! are stored verbatim as UTF-8, so the query is first looked for in the
//! entry's bytes as they lie in the mapped file (decompressed first where
//! the entry is stored compressed) with one SIMD substring search
//! ([`aho_corasick`]'s packed searcher); nothing is decoded for the
//! entries that do not hold the query, which is almost all of them. An
//! entry whose bytes hold it is then walked item by item, and the hit is
//! confirmed inside one text string (the bytes could, rarely, span a CBOR
//! head and a text), which also gives the snippet.
//!
//! Case: smart case, as in ripgrep. A query without an uppercase letter
//! matches ASCII letters of either case (`error` finds `Error`); a query
//! with one matches exactly. Letters outside ASCII always match exactly.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use smith_codec::{Decoder, Token};

use crate::entry::{EntryKind, Record};
use crate::error::{ErrorKind, Result, StoreError};
use crate::session::Session;

/// Characters of context kept on each side of a hit in its snippet.
pub const SNIPPET_CONTEXT: usize = 40;

/// A compiled query.
#[derive(Debug, Clone)]
pub struct Query {
    text: String,
    case_sensitive: bool,
    finder: Finder,
}

/// How a query is looked for.
#[derive(Debug, Clone)]
enum Finder {
    /// Exactly: one pattern (a SIMD substring search inside).
    Exact(AhoCorasick),
    /// ASCII case ignored: every case variant of a short prefix found at
    /// once by the packed SIMD searcher (Teddy), each candidate then
    /// compared whole ignoring ASCII case. A single case-insensitive
    /// automaton would have to stop at every byte that can start the
    /// query (every `n` of English text for "needle"), which is several
    /// times slower.
    Variants {
        prefixes: aho_corasick::packed::Searcher,
        lower: Vec<u8>,
    },
    /// ASCII case ignored where the packed searcher cannot run (no SIMD):
    /// one case-insensitive automaton.
    Folded(AhoCorasick),
}

/// Case variants of the prefix are generated up to this many.
const MAX_VARIANTS: usize = 16;

impl Query {
    /// Compiles `text` with smart case (see the module docs).
    ///
    /// # Errors
    /// `Invalid` for an empty query.
    pub fn new(text: &str) -> Result<Query> {
        if text.is_empty() {
            return Err(StoreError::new(
                ErrorKind::Invalid,
                "the search text is empty; give the words to look for, e.g. `smith session search \"flaky test\"`",
            ));
        }
        let case_sensitive = text.chars().any(char::is_uppercase);
        let automaton = |fold: bool| {
            AhoCorasick::builder()
                .ascii_case_insensitive(fold)
                .match_kind(MatchKind::LeftmostFirst)
                .kind(Some(AhoCorasickKind::DFA))
                .build([text])
                .map_err(|err| {
                    StoreError::new(
                        ErrorKind::Invalid,
                        format!("the search text {text:?} cannot be searched for: {err}"),
                    )
                })
        };
        let finder = if case_sensitive {
            Finder::Exact(automaton(false)?)
        } else {
            let lower = text.as_bytes().to_ascii_lowercase();
            match prefix_variants(&lower) {
                Some(prefixes) => Finder::Variants { prefixes, lower },
                None => Finder::Folded(automaton(true)?),
            }
        };
        Ok(Query {
            text: text.to_owned(),
            case_sensitive,
            finder,
        })
    }

    /// The query as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether letters must match in case (the query has an uppercase
    /// letter).
    pub fn case_sensitive(&self) -> bool {
        self.case_sensitive
    }

    /// The byte range of the first match in `haystack`.
    pub fn find(&self, haystack: &[u8]) -> Option<(usize, usize)> {
        match &self.finder {
            Finder::Exact(a) | Finder::Folded(a) => a.find(haystack).map(|m| (m.start(), m.end())),
            Finder::Variants { prefixes, lower } => {
                let mut at = 0;
                while at < haystack.len() {
                    let m =
                        prefixes.find_in(haystack, aho_corasick::Span::from(at..haystack.len()))?;
                    let start = m.start();
                    let end = start + lower.len();
                    if haystack
                        .get(start..end)
                        .is_some_and(|h| h.eq_ignore_ascii_case(lower))
                    {
                        return Some((start, end));
                    }
                    at = start + 1;
                }
                None
            }
        }
    }
}

/// The packed searcher for every ASCII case variant of the longest prefix
/// of `lower` that has at most [`MAX_VARIANTS`] of them; `None` where the
/// packed searcher is not available.
fn prefix_variants(lower: &[u8]) -> Option<aho_corasick::packed::Searcher> {
    let mut len = 0;
    let mut count = 1usize;
    for &b in lower {
        let more = if b.is_ascii_alphabetic() { 2 } else { 1 };
        if count * more > MAX_VARIANTS {
            break;
        }
        count *= more;
        len += 1;
    }
    let prefix = &lower[..len.max(1)];
    let mut variants: Vec<Vec<u8>> = vec![Vec::with_capacity(prefix.len())];
    for &b in prefix {
        if b.is_ascii_alphabetic() {
            let upper: Vec<Vec<u8>> = variants
                .iter()
                .map(|v| {
                    let mut v = v.clone();
                    v.push(b.to_ascii_uppercase());
                    v
                })
                .collect();
            for v in &mut variants {
                v.push(b);
            }
            variants.extend(upper);
        } else {
            for v in &mut variants {
                v.push(b);
            }
        }
    }
    aho_corasick::packed::Config::new()
        .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
        .builder()
        .extend(variants)
        .build()
}

/// One entry holding the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The entry's id.
    pub entry: u64,
    /// The entry's kind.
    pub kind: EntryKind,
    /// When the entry was written (milliseconds since the Unix epoch).
    pub timestamp_ms: u64,
    /// The text around the first match, on one line, with `…` where it
    /// was cut.
    pub snippet: String,
    /// The match's byte range in [`Hit::snippet`].
    pub matched: (usize, usize),
}

/// What one session's search covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Searched {
    /// Entries whose content was searched.
    pub entries: u64,
    /// Content bytes searched (after decompression).
    pub bytes: u64,
    /// Entries holding the query.
    pub hits: u64,
}

/// Whether entries of `kind` are searched (see the module docs).
pub fn searched_kind(kind: EntryKind) -> bool {
    matches!(
        kind,
        EntryKind::UserMessage
            | EntryKind::AssistantMessage
            | EntryKind::ToolResult
            | EntryKind::Compaction
    )
}

/// Searches every entry of `session` (all branches, in append order) for
/// `query`, calling `on_hit` for each entry that holds it until it returns
/// `false`. `scratch` is reused for compressed entries.
///
/// # Errors
/// `Malformed` when a compressed entry does not decompress (the session's
/// name and the entry are in the message).
pub fn search_session(
    session: &Session,
    query: &Query,
    scratch: &mut Vec<u8>,
    mut on_hit: impl FnMut(Hit) -> bool,
) -> Result<Searched> {
    let mut searched = Searched::default();
    // A referred output's content, when it is stored compressed.
    let mut output_scratch = Vec::new();
    for (index, record) in session.records().iter().enumerate() {
        if !searched_kind(record.entry_kind()) {
            continue;
        }
        let content = content(session, record, scratch)?;
        searched.entries += 1;
        searched.bytes += content.len() as u64;
        let mut found = None;
        if query.find(content).is_some() {
            found = confirm(content, query);
        }
        if found.is_none()
            && record.entry_kind() == EntryKind::ToolResult
            && let Some(effect) = crate::refs::content_ref(content)
            && let Some(completion) = crate::refs::completion_before(session, index, effect)
        {
            // The result's text is its effect's output (§4.1): searched
            // there, and the hit is the result's.
            let output = self::content(session, completion, &mut output_scratch)?;
            if let Some(text) = crate::refs::output_content(output) {
                searched.bytes += text.len() as u64;
                if let Some((start, end)) = query.find(text.as_bytes()) {
                    found = Some(snippet(text, start, end));
                }
            }
        }
        let Some((snippet, matched)) = found else {
            continue;
        };
        searched.hits += 1;
        let go_on = on_hit(Hit {
            entry: record.id,
            kind: record.entry_kind(),
            timestamp_ms: record.timestamp_ms,
            snippet,
            matched,
        });
        if !go_on {
            break;
        }
    }
    Ok(searched)
}

/// What a search of the store covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreSearched {
    /// Sessions searched.
    pub sessions: u64,
    /// The sum over sessions of what each search covered.
    pub within: Searched,
    /// Session files read (bytes on disk).
    pub file_bytes: u64,
}

/// Searches `sessions` (the store's listing, or part of it; newest first
/// is the listing's order) for `query`, calling `on_hit` with each hit's
/// session until it returns `false`. Each session is loaded (mapped; its
/// record table built) and dropped before the next.
///
/// # Errors
/// A session that cannot be loaded or whose compressed entry does not
/// decompress: the error names it (loading reports the file and the fix).
pub fn search_sessions(
    store: &crate::Store,
    sessions: &[crate::SessionInfo],
    query: &Query,
    mut on_hit: impl FnMut(&crate::SessionInfo, Hit) -> bool,
) -> Result<StoreSearched> {
    let mut total = StoreSearched::default();
    let mut scratch = Vec::new();
    for info in sessions {
        let session = store.load(&info.id.to_hex())?;
        let mut stop = false;
        let within = search_session(&session, query, &mut scratch, |hit| {
            stop = !on_hit(info, hit);
            !stop
        })?;
        total.sessions += 1;
        total.file_bytes += info.bytes;
        total.within.entries += within.entries;
        total.within.bytes += within.bytes;
        total.within.hits += within.hits;
        if stop {
            break;
        }
    }
    Ok(total)
}

/// The entry's content: borrowed from the mapping, or decompressed into
/// `scratch`.
fn content<'a>(
    session: &'a Session,
    record: &Record,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8]> {
    if let Some(plain) = session.content_plain(record) {
        return Ok(plain);
    }
    let len = session.content_len(record);
    scratch.clear();
    scratch.resize(len, 0);
    session.decompress(record, scratch)?;
    Ok(scratch)
}

/// The first text string of the CBOR item `content` that holds the query,
/// as a snippet and the match's range in it.
fn confirm(content: &[u8], query: &Query) -> Option<(String, (usize, usize))> {
    let mut dec = Decoder::lenient(content);
    while !dec.is_at_end() {
        match dec.next() {
            Ok(Token::Text(text)) => {
                if let Some((start, end)) = query.find(text.as_bytes()) {
                    return Some(snippet(text, start, end));
                }
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `text` around `start..end` (a match on character boundaries), at most
/// [`SNIPPET_CONTEXT`] characters on each side, on one line.
fn snippet(text: &str, start: usize, end: usize) -> (String, (usize, usize)) {
    let before: Vec<(usize, char)> = text[..start].char_indices().collect();
    let from = before
        .len()
        .checked_sub(SNIPPET_CONTEXT)
        .map_or(0, |i| before[i].0);
    let to = text[end..]
        .char_indices()
        .nth(SNIPPET_CONTEXT)
        .map_or(text.len(), |(i, _)| end + i);
    let mut out = String::with_capacity(to - from + 8);
    if from > 0 {
        out.push('…');
    }
    let flat = |s: &str, out: &mut String| {
        for c in s.chars() {
            out.push(if c.is_control() { ' ' } else { c });
        }
    };
    flat(&text[from..start], &mut out);
    let m0 = out.len();
    flat(&text[start..end], &mut out);
    let m1 = out.len();
    flat(&text[end..to], &mut out);
    if to < text.len() {
        out.push('…');
    }
    (out, (m0, m1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_case() {
        let q = Query::new("flaky test").unwrap();
        assert!(!q.case_sensitive());
        assert_eq!(q.find(b"a Flaky Test here"), Some((2, 12)));
        let q = Query::new("Flaky").unwrap();
        assert!(q.case_sensitive());
        assert_eq!(q.find(b"a flaky one"), None);
        assert_eq!(q.find(b"a Flaky one"), Some((2, 7)));
        assert!(Query::new("").is_err());
    }

    #[test]
    fn ignoring_case_finds_every_variant_and_checks_the_whole_query() {
        let q = Query::new("flaky test").unwrap();
        for hay in ["FLAKY TEST", "fLaKy TeSt", "a flaky test", "flaky testing"] {
            assert!(q.find(hay.as_bytes()).is_some(), "{hay}");
        }
        // A prefix that matches but a tail that does not, then a match.
        assert_eq!(q.find(b"flaky tent, Flaky Test"), Some((12, 22)));
        assert_eq!(q.find(b"flaky tes"), None);
        // Non-letters and non-ASCII in the query.
        let q = Query::new("é-42 x").unwrap();
        assert_eq!(
            q.find("É-42 x".as_bytes()),
            None,
            "only ASCII case is ignored"
        );
        assert!(q.find("é-42 X".as_bytes()).is_some());
        // Short haystacks and queries.
        let q = Query::new("a").unwrap();
        assert_eq!(q.find(b"A"), Some((0, 1)));
        assert_eq!(q.find(b""), None);
    }

    #[test]
    fn snippets_are_cut_on_characters_and_flattened() {
        let text = format!(
            "{}déjà vu\nthe needle\there{}",
            "x".repeat(60),
            "y".repeat(60)
        );
        let q = Query::new("needle").unwrap();
        let (start, end) = q.find(text.as_bytes()).unwrap();
        let (s, (a, b)) = snippet(&text, start, end);
        assert_eq!(&s[a..b], "needle");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("déjà vu the needle here"), "{s}");
        assert!(!s.contains('\n') && !s.contains('\t'));
        // Short texts are whole.
        let (s, r) = snippet("a needle", 2, 8);
        assert_eq!((s.as_str(), r), ("a needle", (2, 8)));
    }

    #[test]
    fn a_match_across_a_cbor_head_is_not_a_hit() {
        // Two text strings "ab" and "c": the bytes hold "b" 0x61 "c", so a
        // query "bac" matches the bytes (0x61 is the head of "c") but no text.
        let mut content = Vec::new();
        smith_codec::Encoder::new(&mut content)
            .array(2)
            .str("ab")
            .str("c");
        let q = Query::new("bac").unwrap();
        assert!(q.find(&content).is_some(), "{content:?}");
        assert_eq!(confirm(&content, &q), None);
        let q = Query::new("ab").unwrap();
        assert_eq!(confirm(&content, &q), Some(("ab".to_owned(), (0, 2))));
    }
}
