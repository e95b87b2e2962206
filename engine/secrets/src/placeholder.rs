//! The placeholder syntax: `{secret:NAME}`.
//!
//! The same syntax plugins already write in `http-request` header values
//! (`{secret:PROVIDER.SLOT}`), so one reference form names a secret
//! everywhere: in redacted text, in recorded effect inputs and in plugin
//! requests. A name is 1 to [`MAX_NAME_LEN`] bytes of ASCII letters,
//! digits, `.`, `_` and `-`, which keeps a placeholder free of every
//! character JSON, shells or URLs escape, and makes it unambiguous where it
//! ends.

use std::fmt;

/// What opens a placeholder.
pub const OPEN: &str = "{secret:";

/// What closes a placeholder.
pub const CLOSE: &str = "}";

/// The longest secret name.
pub const MAX_NAME_LEN: usize = 128;

/// Whether `byte` may appear in a secret name.
#[inline]
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-')
}

/// Why `name` is not a valid secret name, or `None` when it is.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".to_owned());
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!(
            "the name has {} bytes, more than the {MAX_NAME_LEN} allowed",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !c.is_ascii() || !is_name_byte(*c as u8))
    {
        return Some(format!(
            "the name contains {c:?}; a name uses only ASCII letters, digits, `.`, `_` and `-`"
        ));
    }
    None
}

/// The placeholder that stands for the secret `name`.
pub fn placeholder(name: &str) -> String {
    let mut out = String::with_capacity(OPEN.len() + name.len() + CLOSE.len());
    out.push_str(OPEN);
    out.push_str(name);
    out.push_str(CLOSE);
    out
}

/// One placeholder found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference<'t> {
    /// The byte range of the whole placeholder in the text.
    pub span: std::ops::Range<usize>,
    /// The secret name it references.
    pub name: &'t str,
}

impl fmt::Display for Reference<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OPEN}{}{CLOSE}", self.name)
    }
}

/// Every well-formed placeholder in `text`, left to right. Text that only
/// looks like the start of one (`{secret:` without a valid name and a
/// closing brace) is ordinary text and is skipped.
pub fn references(text: &str) -> References<'_> {
    References { text, at: 0 }
}

/// The iterator [`references`] returns.
#[derive(Debug, Clone)]
pub struct References<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for References<'t> {
    type Item = Reference<'t>;

    fn next(&mut self) -> Option<Reference<'t>> {
        loop {
            let rest = self.text.get(self.at..)?;
            let found = rest.find(OPEN)?;
            let start = self.at + found;
            let name_start = start + OPEN.len();
            let bytes = self.text.as_bytes();
            let mut end = name_start;
            while end < bytes.len() && end - name_start < MAX_NAME_LEN && is_name_byte(bytes[end]) {
                end += 1;
            }
            if end > name_start && bytes.get(end) == Some(&b'}') {
                self.at = end + 1;
                return Some(Reference {
                    span: start..end + 1,
                    name: &self.text[name_start..end],
                });
            }
            // Not a placeholder: resume just after this `{`.
            self.at = start + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_well_formed_references_only() {
        let text = "a {secret:x.y} {secret:} {secret:bad name} {secret:{secret:ok-1_2}";
        let found: Vec<_> = references(text).map(|r| r.name).collect();
        assert_eq!(found, ["x.y", "ok-1_2"]);
        let first = references(text).next().expect("one reference");
        assert_eq!(&text[first.span.clone()], "{secret:x.y}");
        assert_eq!(first.to_string(), "{secret:x.y}");
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(name_problem("anthropic.api_key"), None);
        assert!(name_problem("").is_some());
        assert!(name_problem("a}b").is_some());
        assert!(name_problem("é").is_some());
        assert!(name_problem(&"a".repeat(MAX_NAME_LEN + 1)).is_some());
        assert_eq!(placeholder("a.b"), "{secret:a.b}");
    }
}
