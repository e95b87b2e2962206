//! Redaction: every registered value replaced by its placeholder.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use zeroize::Zeroizing;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind, Span, packed};

use crate::placeholder;
use crate::registry::Registration;
use crate::substitute::{Lookup, NeverAuthorize, Policy, Substitution, substitute_json_with};

/// Whether any string of `value` holds the opening of a placeholder.
fn holds_placeholder(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => s.contains(placeholder::OPEN),
        serde_json::Value::Array(items) => items.iter().any(holds_placeholder),
        serde_json::Value::Object(map) => map.values().any(holds_placeholder),
        _ => false,
    }
}

/// Patterns per vectorized group: the most Teddy (the SIMD searcher)
/// takes. Past its own heuristic limit of 64 its buckets verify more
/// candidates, but for tokens of 20 bytes and more one 100-pattern pass
/// measured almost twice as fast as two passes of at most 64 (see
/// docs/secrets.md).
const GROUP: usize = 128;

/// The most vectorized groups before one automaton pass is cheaper than
/// several group passes.
const MAX_GROUPS: usize = 4;

/// How the patterns are searched.
enum Engine {
    /// Groups of at most [`GROUP`] patterns, each a vectorized searcher
    /// (Teddy), with the global id of each group's first pattern. A few
    /// passes over text without secrets cost less than one automaton
    /// pass, which moves one byte per step.
    Packed(Vec<(packed::Searcher, usize)>),
    /// One automaton, where vector instructions are missing or there are
    /// too many patterns.
    Automaton(AhoCorasick),
}

impl Engine {
    fn build(patterns: &[String]) -> Option<Engine> {
        if patterns.is_empty() {
            return None;
        }
        let groups = patterns.len().div_ceil(GROUP);
        if groups <= MAX_GROUPS {
            let mut searchers = Vec::with_capacity(groups);
            for (i, chunk) in patterns.chunks(GROUP).enumerate() {
                let searcher = packed::Config::new()
                    .match_kind(packed::MatchKind::LeftmostLongest)
                    .heuristic_pattern_limits(false)
                    .builder()
                    .extend(chunk)
                    .build();
                match searcher {
                    Some(searcher) => searchers.push((searcher, i * GROUP)),
                    None => break,
                }
            }
            if searchers.len() == groups {
                return Some(Engine::Packed(searchers));
            }
        }
        // Patterns are at most a few thousand short strings: building
        // cannot exceed the automaton's limits.
        AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(patterns)
            .ok()
            .map(Engine::Automaton)
    }

    /// Whether `text` contains any pattern.
    #[inline]
    fn is_match(&self, text: &[u8]) -> bool {
        match self {
            Engine::Packed(groups) => groups.iter().any(|(g, _)| g.find(text).is_some()),
            Engine::Automaton(ac) => ac.is_match(text),
        }
    }

    /// Calls `f(start, end, pattern)` for each leftmost-longest match, left
    /// to right, until it returns `false`.
    #[inline]
    fn scan(&self, text: &[u8], mut f: impl FnMut(usize, usize, usize) -> bool) {
        match self {
            Engine::Automaton(ac) => {
                for m in ac.find_iter(text) {
                    if !f(m.start(), m.end(), m.pattern().as_usize()) {
                        break;
                    }
                }
            }
            Engine::Packed(groups) => {
                let find = |(g, base): &(packed::Searcher, usize), from: usize| {
                    g.find_in(text, Span::from(from..text.len()))
                        .map(|m| (m.start(), m.end(), base + m.pattern().as_usize()))
                };
                // Each group's next match; the leftmost (longest on a tie)
                // of these is the next match overall.
                let mut next = [None; MAX_GROUPS];
                for (slot, group) in next.iter_mut().zip(groups) {
                    *slot = find(group, 0);
                }
                loop {
                    let best = next.iter().flatten().copied().reduce(|a, b| {
                        if b.0 < a.0 || (b.0 == a.0 && b.1 > a.1) {
                            b
                        } else {
                            a
                        }
                    });
                    let Some((start, end, pattern)) = best else {
                        break;
                    };
                    if !f(start, end, pattern) {
                        break;
                    }
                    for (slot, group) in next.iter_mut().zip(groups) {
                        if slot.is_some_and(|(s, _, _)| s < end) {
                            *slot = find(group, end);
                        }
                    }
                }
            }
        }
    }
}

/// One immutable set of patterns: what a [`Redactor`] searches for until
/// the next registration is published.
///
/// The automaton's tables hold the patterns too; they are freed, not
/// zeroed, when the snapshot drops.
struct Snapshot {
    matcher: Option<Engine>,
    /// Pattern id → index into `placeholders`.
    slots: Vec<u32>,
    placeholders: Vec<Box<str>>,
    /// The longest pattern, in bytes (0 when empty).
    max_len: usize,
    /// Each name's current value, for substitution; zeroed on drop.
    values: Vec<(Registration, Zeroizing<String>)>,
}

impl Lookup for Snapshot {
    fn value(&self, name: &str) -> Option<(&Registration, &str)> {
        self.values
            .iter()
            .find(|(r, _)| r.name == name)
            .map(|(r, v)| (r, v.as_str()))
    }
}

/// Replaces every registered value, and every JSON-escaped form of it, in
/// text with the placeholder `{secret:NAME}`.
///
/// One multi-pattern search (leftmost-longest, so of two secrets where one
/// begins the other the longer is replaced whole) scans the text once.
/// Text without a secret is returned borrowed, without allocating. Handed
/// out by [`crate::Registry::redactor`] and shared (`Arc`): it is *live*
/// — a value the registry registers after handing it out (a plugin's
/// handoff during a run) is redacted from then on by every holder.
///
/// Each registration published builds a new immutable snapshot of the
/// patterns and swaps it in with one atomic store; a search reads the
/// current snapshot with one atomic load, never a lock. Earlier snapshots
/// are kept until the redactor drops (a search may still be using one),
/// which costs one matcher per registration published during a run.
pub struct Redactor {
    /// Always points at the last snapshot in `kept`.
    current: AtomicPtr<Snapshot>,
    /// Every snapshot installed, oldest first: the boxes never move and
    /// are freed only when the redactor drops.
    // The boxes are the point: `current` points into them, and a box's
    // contents stay put when the vector grows.
    #[allow(clippy::vec_box)]
    kept: Mutex<Vec<Box<Snapshot>>>,
    /// Who may receive which secret at the effect boundary; asked only
    /// when an input holds a placeholder.
    policy: RwLock<Arc<dyn Policy>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.snapshot();
        f.debug_struct("Redactor")
            .field("patterns", &s.slots.len())
            .field("placeholders", &s.placeholders)
            .field("max_len", &s.max_len)
            .finish()
    }
}

impl Snapshot {
    /// A snapshot for `(registration, value, current)` triples. Values
    /// sharing a name share its placeholder.
    fn build<'a>(secrets: impl Iterator<Item = (&'a Registration, &'a str, bool)>) -> Snapshot {
        let mut patterns: Vec<String> = Vec::new();
        let mut slots = Vec::new();
        let mut placeholders: Vec<Box<str>> = Vec::new();
        let mut values = Vec::new();
        for (registration, value, current) in secrets {
            let text = placeholder::placeholder(&registration.name);
            let slot = match placeholders.iter().position(|p| **p == *text) {
                Some(at) => at,
                None => {
                    placeholders.push(text.into_boxed_str());
                    placeholders.len() - 1
                }
            };
            for form in variants(value) {
                if !patterns.contains(&form) {
                    patterns.push(form);
                    slots.push(slot as u32);
                }
            }
            if current {
                values.push((registration.clone(), Zeroizing::new(value.to_owned())));
            }
        }
        let max_len = patterns.iter().map(String::len).max().unwrap_or(0);
        let matcher = Engine::build(&patterns);
        zeroize::Zeroize::zeroize(&mut patterns);
        Snapshot {
            matcher,
            slots,
            placeholders,
            max_len,
            values,
        }
    }
}

impl Redactor {
    /// A live redactor for `(registration, value, current)` triples.
    pub(crate) fn build<'a>(
        secrets: impl Iterator<Item = (&'a Registration, &'a str, bool)>,
    ) -> Redactor {
        let first = Box::new(Snapshot::build(secrets));
        let current = AtomicPtr::new(std::ptr::from_ref::<Snapshot>(&first).cast_mut());
        Redactor {
            current,
            kept: Mutex::new(vec![first]),
            policy: RwLock::new(Arc::new(NeverAuthorize)),
        }
    }

    /// Publishes a new set of secrets: every search that starts after
    /// this returns uses it.
    pub(crate) fn publish<'a>(
        &self,
        secrets: impl Iterator<Item = (&'a Registration, &'a str, bool)>,
    ) {
        let next = Box::new(Snapshot::build(secrets));
        let ptr = std::ptr::from_ref::<Snapshot>(&next).cast_mut();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push(next);
        self.current.store(ptr, Ordering::Release);
    }

    /// The current snapshot.
    #[inline]
    fn snapshot(&self) -> &Snapshot {
        let ptr = self.current.load(Ordering::Acquire);
        // SAFETY: `current` only ever points at a boxed snapshot owned by
        // `kept` (set in `build` and `publish`, after the box is stored).
        // Boxes in `kept` are never removed or moved out before the
        // redactor drops, and a box's contents do not move when the vector
        // grows, so the snapshot outlives this borrow of `self`. Snapshots
        // are immutable after construction.
        unsafe { &*ptr }
    }

    /// Sets the policy that decides, at the effect boundary, which tool
    /// may receive which secret ([`Redactor::substitute_json`]). The
    /// default, [`NeverAuthorize`], allows nothing.
    pub fn set_policy(&self, policy: Arc<dyn Policy>) {
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) = policy;
    }

    /// `input` (a tool call's arguments) with each `{secret:NAME}` that
    /// the policy authorizes for `tool` replaced by the current value, for
    /// execution only: `input` itself (what the journal records) is not
    /// changed. `None` — without asking the policy or allocating — when no
    /// string of `input` holds a placeholder.
    pub fn substitute_json(
        &self,
        input: &serde_json::Value,
        tool: &str,
    ) -> Option<Substitution<serde_json::Value>> {
        if !holds_placeholder(input) {
            return None;
        }
        let policy = Arc::clone(&self.policy.read().unwrap_or_else(PoisonError::into_inner));
        Some(substitute_json_with(
            self.snapshot(),
            input,
            tool,
            policy.as_ref(),
        ))
    }

    /// A redactor that redacts nothing.
    pub fn empty() -> Redactor {
        Redactor::build(std::iter::empty())
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.snapshot().matcher.is_none()
    }

    /// The longest form of a secret it looks for, in bytes.
    pub fn max_len(&self) -> usize {
        self.snapshot().max_len
    }

    /// Whether `text` contains a registered value (in any form).
    #[inline]
    pub fn contains_secret(&self, text: &[u8]) -> bool {
        self.snapshot().contains_secret(text)
    }

    /// `text` with every registered value replaced by its placeholder;
    /// borrowed (no allocation) when there is none.
    pub fn redact_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.snapshot().redact_str(text)
    }

    /// [`Redactor::redact_str`] for bytes.
    pub fn redact_bytes<'t>(&self, text: &'t [u8]) -> Cow<'t, [u8]> {
        self.snapshot().redact_bytes(text)
    }

    /// Appends `text` with every registered value replaced to `out`, for
    /// callers that reuse a buffer. Returns how many values it replaced.
    pub fn redact_into(&self, text: &[u8], out: &mut Vec<u8>) -> usize {
        self.snapshot().redact_into(text, out)
    }

    /// Redacts every string in a JSON value in place (object keys are
    /// left as they are). Returns how many values it replaced.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> usize {
        self.snapshot().redact_json(value)
    }
}

impl Snapshot {
    #[inline]
    fn contains_secret(&self, text: &[u8]) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    fn redact_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Patterns and placeholders are whole UTF-8 strings, so
            // replacing them keeps the text valid UTF-8.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    fn redact_bytes<'t>(&self, text: &'t [u8]) -> Cow<'t, [u8]> {
        let Some(matcher) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        let mut out: Option<Vec<u8>> = None;
        let mut last = 0;
        matcher.scan(text, |start, end, pattern| {
            let buf = out.get_or_insert_with(|| Vec::with_capacity(text.len() + 32));
            buf.extend_from_slice(&text[last..start]);
            buf.extend_from_slice(self.placeholder(pattern));
            last = end;
            true
        });
        match out {
            None => Cow::Borrowed(text),
            Some(mut buf) => {
                buf.extend_from_slice(&text[last..]);
                Cow::Owned(buf)
            }
        }
    }

    fn redact_into(&self, text: &[u8], out: &mut Vec<u8>) -> usize {
        let Some(matcher) = &self.matcher else {
            out.extend_from_slice(text);
            return 0;
        };
        let mut last = 0;
        let mut count = 0;
        matcher.scan(text, |start, end, pattern| {
            out.extend_from_slice(&text[last..start]);
            out.extend_from_slice(self.placeholder(pattern));
            last = end;
            count += 1;
            true
        });
        out.extend_from_slice(&text[last..]);
        count
    }

    fn redact_json(&self, value: &mut serde_json::Value) -> usize {
        match value {
            serde_json::Value::String(s) => {
                if !self.contains_secret(s.as_bytes()) {
                    return 0;
                }
                let mut out = Vec::with_capacity(s.len());
                let count = self.redact_into(s.as_bytes(), &mut out);
                *s = String::from_utf8(out)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                count
            }
            serde_json::Value::Array(items) => items.iter_mut().map(|v| self.redact_json(v)).sum(),
            serde_json::Value::Object(map) => map.values_mut().map(|v| self.redact_json(v)).sum(),
            _ => 0,
        }
    }

    /// The placeholder bytes that replace `pattern`.
    #[inline]
    fn placeholder(&self, pattern: usize) -> &[u8] {
        self.placeholders[self.slots[pattern] as usize].as_bytes()
    }

    /// Redacts the longest prefix of `data` that later bytes cannot
    /// change, appending it to `out`; returns how many bytes of `data` it
    /// consumed and how many values it replaced. With `last` set, all of
    /// `data` is consumed.
    fn redact_settled(&self, data: &[u8], last: bool, out: &mut Vec<u8>) -> (usize, usize) {
        let Some(matcher) = &self.matcher else {
            out.extend_from_slice(data);
            return (data.len(), 0);
        };
        // A match starting at or after `horizon` may still grow (a longer
        // secret starting at the same byte) or be preceded by a longer
        // match that began earlier and is not complete yet.
        let horizon = if last {
            data.len()
        } else {
            data.len().saturating_sub(self.max_len - 1)
        };
        let (mut at, mut count) = (0, 0);
        matcher.scan(data, |start, end, pattern| {
            if !last && start >= horizon {
                return false;
            }
            out.extend_from_slice(&data[at..start]);
            out.extend_from_slice(self.placeholder(pattern));
            at = end;
            count += 1;
            true
        });
        let cut = horizon.max(at);
        out.extend_from_slice(&data[at..cut]);
        (cut, count)
    }
}

/// Redacts a byte stream chunk by chunk: a secret split across chunks is
/// still replaced whole. It holds back at most the longest secret form
/// minus one byte, and emits everything else at once.
#[derive(Debug)]
pub struct StreamRedactor {
    redactor: Arc<Redactor>,
    held: Vec<u8>,
    replaced: usize,
}

impl StreamRedactor {
    /// A stream over `redactor`.
    pub fn new(redactor: Arc<Redactor>) -> StreamRedactor {
        StreamRedactor {
            redactor,
            held: Vec::new(),
            replaced: 0,
        }
    }

    /// Feeds `chunk`, appending to `out` every byte that is settled.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        if self.held.is_empty() {
            let (used, count) = self.redactor.snapshot().redact_settled(chunk, false, out);
            self.replaced += count;
            self.held.extend_from_slice(&chunk[used..]);
        } else {
            let mut data = std::mem::take(&mut self.held);
            data.extend_from_slice(chunk);
            let (used, count) = self.redactor.snapshot().redact_settled(&data, false, out);
            self.replaced += count;
            data.drain(..used);
            self.held = data;
        }
    }

    /// Ends the stream, appending what was held back.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let data = std::mem::take(&mut self.held);
        let (_, count) = self.redactor.snapshot().redact_settled(&data, true, out);
        self.replaced += count;
    }

    /// How many bytes are held back now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// How many values were replaced so far.
    pub fn replaced(&self) -> usize {
        self.replaced
    }
}

/// The forms in which `value` can appear in text: as is, and as the body
/// of a JSON string by the escapers in common use (minimal escaping as
/// serde_json and JavaScript write it; `\/` as PHP writes it; `\uXXXX` for
/// every non-ASCII character as Python writes it; `<`, `>`, `&`, U+2028
/// and U+2029 as `\uXXXX` as Go writes it). Distinct forms only, the value
/// itself first.
pub(crate) fn variants(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    for flags in 0..8u8 {
        let form = json_escape(value, flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// The body of a JSON string holding `value`.
fn json_escape(value: &str, slash: bool, ascii: bool, html: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '/' if slash => out.push_str("\\/"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' if html => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ascii && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_forms_match_serde_json() {
        let value = "pa\"ss\\wo/rd\n\u{1}é😀<&";
        let forms = variants(value);
        let serde = serde_json::to_string(value).expect("serializes");
        assert!(forms.contains(&serde[1..serde.len() - 1].to_owned()));
        assert!(forms.iter().any(|f| f.contains("\\/")));
        assert!(forms.iter().any(|f| f.contains("\\u00e9\\ud83d\\ude00")));
        assert!(forms.iter().any(|f| f.contains("\\u003c\\u0026")));
        assert_eq!(variants("sk-plain-token-123"), ["sk-plain-token-123"]);
    }

    /// Every leftmost-longest match, the slow obvious way.
    fn naive(patterns: &[String], text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let best = patterns
                .iter()
                .enumerate()
                .filter(|(_, p)| text[at..].starts_with(p.as_bytes()))
                .max_by_key(|(i, p)| (p.len(), std::cmp::Reverse(*i)));
            match best {
                Some((i, p)) => {
                    out.push((at, at + p.len(), i));
                    at += p.len();
                }
                None => at += 1,
            }
        }
        out
    }

    fn scanned(engine: &Engine, text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        engine.scan(text, |s, e, p| {
            out.push((s, e, p));
            true
        });
        out
    }

    #[test]
    fn every_engine_finds_the_same_matches() {
        for count in [3, 100, 300, 700] {
            let mut patterns = crate::bench_support::tokens(count);
            // A pattern that begins another, in another group.
            patterns.push(format!("{}-extended-tail", patterns[1]));
            let secrets: Vec<String> = patterns.iter().step_by(7).cloned().collect();
            let mut text = crate::bench_support::tool_output(40_000, &secrets, false).into_bytes();
            for (i, secret) in secrets.iter().enumerate() {
                let at = (i * 997) % 39_000;
                text.splice(at..at, secret.bytes());
            }
            text.extend_from_slice(patterns[1].as_bytes());
            text.extend_from_slice(patterns[count].as_bytes());
            text.extend_from_slice(&patterns[count].as_bytes()[..10]);
            let expected = naive(&patterns, &text);
            assert!(expected.len() > secrets.len(), "{count}");
            let built = Engine::build(&patterns).expect("non-empty");
            assert_eq!(
                matches!(built, Engine::Packed(_)),
                count < GROUP * MAX_GROUPS,
                "{count}"
            );
            assert_eq!(scanned(&built, &text), expected, "{count} patterns");
            let automaton = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .expect("automaton");
            assert_eq!(
                scanned(&Engine::Automaton(automaton), &text),
                expected,
                "{count} patterns, automaton"
            );
        }
    }

    #[test]
    fn empty_redactor_borrows() {
        let r = Redactor::empty();
        assert!(r.is_empty());
        assert!(matches!(r.redact_str("anything"), Cow::Borrowed(_)));
    }
}
