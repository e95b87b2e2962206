//! Globs: `*` (any run of characters; in paths not `/`), `**` (in paths,
//! any run including `/`; `**/` also matches nothing), `?` (one character;
//! in paths not `/`), and `\` making the next character literal.

use crate::ResolvedPath;

/// What a glob matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobKind {
    /// A path: `*` and `?` stop at `/`, `**` crosses folders.
    Path,
    /// A command: `*` matches anything, spaces and `/` included.
    Command,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    Star,
    DoubleStar,
    One,
}

/// A compiled glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    kind: GlobKind,
    tokens: Vec<Token>,
    /// The literal text before the first wildcard: a text not starting
    /// with it cannot match.
    prefix: String,
    /// Whether the pattern has no wildcard at all.
    literal: bool,
    /// Which part of a resolved path the pattern is matched with.
    shape: Shape,
}

/// Which part of a resolved path a path pattern is matched with, decided
/// once when the pattern is compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// Starts with `/`: the absolute path and its folders.
    Absolute,
    /// Starts with `./`: the path relative to the project root and its
    /// folders, with this glob (the pattern without `./`).
    Anchored(Box<Glob>),
    /// Holds a `/`: the relative path and its folders.
    Nested,
    /// No `/`: any name along the relative path.
    Name,
}

/// `text` with every glob character escaped, so it matches only itself.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str, kind: GlobKind) -> Glob {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => tokens.push(Token::Literal(chars.next().unwrap_or('\\'))),
                '*' if chars.peek() == Some(&'*') => {
                    chars.next();
                    while chars.peek() == Some(&'*') {
                        chars.next();
                    }
                    tokens.push(if kind == GlobKind::Path {
                        Token::DoubleStar
                    } else {
                        Token::Star
                    });
                }
                '*' => tokens.push(Token::Star),
                '?' => tokens.push(Token::One),
                c => tokens.push(Token::Literal(c)),
            }
        }
        let prefix: String = tokens
            .iter()
            .map_while(|t| match t {
                Token::Literal(c) => Some(*c),
                _ => None,
            })
            .collect();
        let literal = prefix.chars().count() == tokens.len();
        let shape = if pattern.starts_with('/') {
            Shape::Absolute
        } else if let Some(anchored) = pattern.strip_prefix("./") {
            Shape::Anchored(Box::new(Glob::new(anchored, kind)))
        } else if pattern.contains('/') {
            Shape::Nested
        } else {
            Shape::Name
        };
        Glob {
            pattern: pattern.to_owned(),
            kind,
            tokens,
            prefix,
            literal,
            shape,
        }
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        if self.literal {
            return text == self.prefix;
        }
        text.starts_with(&self.prefix) && match_tokens(&self.tokens, text, self.kind)
    }

    /// Whether the glob matches a resolved path: a pattern starting with
    /// `/` matches the absolute path; any other matches only paths inside
    /// the project, relative to its root (`./` anchors it there); a pattern
    /// without `/` matches any name along the path; a pattern matching a
    /// folder matches everything in it.
    pub fn matches_path(&self, path: &ResolvedPath) -> bool {
        let relative = path.relative.as_deref();
        match &self.shape {
            Shape::Absolute => ancestors(&path.absolute).any(|p| self.matches(p)),
            Shape::Anchored(glob) => {
                relative.is_some_and(|r| ancestors(r).any(|p| glob.matches(p)))
            }
            Shape::Nested => relative.is_some_and(|r| ancestors(r).any(|p| self.matches(p))),
            Shape::Name => relative.is_some_and(|r| r.split('/').any(|name| self.matches(name))),
        }
    }
}

/// `path` and each of its parent folders (`a/b/c`, `a/b`, `a`).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let path = path.trim_end_matches('/');
    let mut end = Some(path.len());
    std::iter::from_fn(move || {
        let here = &path[..end?];
        // `/` is one byte in UTF-8 and never inside another character.
        end = here.bytes().rposition(|b| b == b'/').filter(|at| *at > 0);
        Some(here)
    })
}

fn match_tokens(tokens: &[Token], text: &str, kind: GlobKind) -> bool {
    let text: Vec<char> = text.chars().collect();
    let (n, m) = (tokens.len(), text.len());
    // ok[i][j]: tokens[i..] match text[j..]; computed from the end.
    let width = m + 1;
    let mut ok = vec![false; (n + 1) * width];
    ok[n * width + m] = true;
    for i in (0..n).rev() {
        for j in (0..=m).rev() {
            let at = |i: usize, j: usize| ok[i * width + j];
            let value = match &tokens[i] {
                Token::Literal(c) => j < m && text[j] == *c && at(i + 1, j + 1),
                Token::One => {
                    j < m && (kind == GlobKind::Command || text[j] != '/') && at(i + 1, j + 1)
                }
                Token::Star => {
                    at(i + 1, j)
                        || (j < m && (kind == GlobKind::Command || text[j] != '/') && at(i, j + 1))
                }
                Token::DoubleStar => {
                    // `**/` may match nothing at all, slash included.
                    let skips_slash =
                        matches!(tokens.get(i + 1), Some(Token::Literal('/'))) && at(i + 2, j);
                    skips_slash || at(i + 1, j) || (j < m && at(i, j + 1))
                }
            };
            ok[i * width + j] = value;
        }
    }
    ok[0]
}
