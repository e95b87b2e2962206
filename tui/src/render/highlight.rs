//! Syntax highlighting of code fences with syntect's bundled grammars
//! (the pure-Rust regex engine), mapped onto the terminal's palette.
//!
//! The grammars are loaded on the first fence that names a language,
//! never at startup (the first frame does not wait for them), and each
//! fence is highlighted once, when its entry is rendered.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxSet};

use super::Look;
use crate::style::Attrs;

/// Fences longer than this are drawn without highlighting (the
/// highlighter's regular expressions are not free).
pub const MAX_BYTES: usize = 64 * 1024;

/// Fences highlighted lately, by a hash of their language and text: an
/// answer that streams is rendered again as it grows, and its finished
/// fences are not highlighted again. Emptied when it holds [`CACHED`].
static DONE: Mutex<Option<HashMap<u64, Arc<Looks>>>> = Mutex::new(None);

/// The most fences [`DONE`] holds.
pub const CACHED: usize = 256;

/// A fence's styled byte ranges.
pub type Looks = Vec<(usize, usize, Look)>;

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static LOOKS: OnceLock<Vec<(Scope, Look)>> = OnceLock::new();

/// Scope prefixes and their looks, the first matching the innermost
/// scope wins.
const TABLE: [(&str, Look); 12] = [
    ("comment", Look::palette(8, Attrs::ITALIC)),
    ("string", Look::palette(2, Attrs::NONE)),
    ("constant", Look::palette(3, Attrs::NONE)),
    ("keyword", Look::palette(5, Attrs::NONE)),
    ("storage", Look::palette(5, Attrs::NONE)),
    ("entity.name.function", Look::palette(4, Attrs::NONE)),
    ("support.function", Look::palette(4, Attrs::NONE)),
    ("variable.function", Look::palette(4, Attrs::NONE)),
    ("entity.name", Look::palette(6, Attrs::NONE)),
    ("support.type", Look::palette(6, Attrs::NONE)),
    ("support.class", Look::palette(6, Attrs::NONE)),
    ("markup.heading", Look::attrs(Attrs::BOLD)),
];

/// Whether the grammars have been loaded (by a fence that named a
/// language).
pub fn loaded() -> bool {
    SYNTAXES.get().is_some()
}

fn looks() -> &'static [(Scope, Look)] {
    LOOKS.get_or_init(|| {
        TABLE
            .iter()
            .filter_map(|(name, look)| Some((Scope::new(name).ok()?, *look)))
            .collect()
    })
}

fn look_of(stack: &ScopeStack, table: &[(Scope, Look)]) -> Look {
    for scope in stack.as_slice().iter().rev() {
        if let Some((_, look)) = table.iter().find(|(p, _)| p.is_prefix_of(*scope)) {
            return *look;
        }
    }
    Look::NONE
}

/// The styled byte ranges of `code` in language `lang` (a fence's info
/// word: `rust`, `py`, `sh`...), ascending; empty for no language, an
/// unknown one, or a fence over [`MAX_BYTES`]. A fence highlighted lately
/// is not highlighted again.
pub fn highlight(lang: &str, code: &str) -> Arc<Looks> {
    if lang.is_empty() || code.len() > MAX_BYTES {
        return Arc::default();
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (lang, code).hash(&mut hasher);
    let key = hasher.finish();
    if let Some(done) = DONE
        .lock()
        .ok()
        .and_then(|d| d.as_ref().and_then(|d| d.get(&key).cloned()))
    {
        return done;
    }
    let looks = Arc::new(compute(lang, code));
    if let Ok(mut done) = DONE.lock() {
        let done = done.get_or_insert_with(HashMap::new);
        if done.len() >= CACHED {
            done.clear();
        }
        done.insert(key, Arc::clone(&looks));
    }
    looks
}

fn compute(lang: &str, code: &str) -> Looks {
    let mut out: Looks = Vec::new();
    let set = SYNTAXES.get_or_init(SyntaxSet::load_defaults_nonewlines);
    let Some(syntax) = set
        .find_syntax_by_token(lang)
        .or_else(|| set.find_syntax_by_extension(lang))
    else {
        return out;
    };
    let table = looks();
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut push = |start: usize, end: usize, look: Look| {
        if start >= end || look == Look::NONE {
            return;
        }
        match out.last_mut() {
            Some(last) if last.1 == start && last.2 == look => last.1 = end,
            _ => out.push((start, end, look)),
        }
    };
    let mut at = 0;
    for line in code.split('\n') {
        let Ok(ops) = state.parse_line(line, set) else {
            break;
        };
        let mut pos = 0;
        for (i, op) in ops {
            let i = i.min(line.len());
            if i > pos {
                push(at + pos, at + i, look_of(&stack, table));
                pos = i;
            }
            if stack.apply(&op).is_err() {
                break;
            }
        }
        push(at + pos, at + line.len(), look_of(&stack, table));
        at += line.len() + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_keywords_strings_and_comments_get_their_colors() {
        let code = "fn main() {\n    let s = \"hi\"; // say it\n}";
        let looks = highlight("rust", code);
        let of = |word: &str| {
            let at = code.find(word).unwrap_or(usize::MAX);
            looks
                .iter()
                .find(|(s, e, _)| *s <= at && at < *e)
                .map(|l| l.2)
        };
        assert_eq!(of("fn"), Some(Look::palette(5, Attrs::NONE)));
        assert_eq!(of("\"hi\""), Some(Look::palette(2, Attrs::NONE)));
        assert_eq!(of("// say"), Some(Look::palette(8, Attrs::ITALIC)));
        assert_eq!(of("main"), Some(Look::palette(4, Attrs::NONE)));
        assert!(loaded());
        assert!(highlight("no-such-language", code).is_empty());
        assert!(highlight("", code).is_empty());
    }

    #[test]
    fn a_fence_highlighted_lately_is_not_highlighted_again() {
        let code = "let cached = 1;";
        let first = highlight("rust", code);
        assert!(!first.is_empty());
        assert!(Arc::ptr_eq(&first, &highlight("rust", code)));
        assert!(!Arc::ptr_eq(&first, &highlight("rust", "let other = 2;")));
    }
}
