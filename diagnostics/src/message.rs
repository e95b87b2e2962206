//! Diagnostics from one-sentence error messages.
//!
//! Many error types carry a single message written as "what happened; next
//! action", naming the offending value with `{:?}` quotes. [`Diagnostic::from_message`]
//! turns such a message into the three parts, taking *why* (and, when the
//! message has no action, *next*) from the error's kind.

use crate::diagnostic::{Diagnostic, Severity};

impl Diagnostic {
    /// An error diagnostic from a message of the form `what; next`.
    ///
    /// - *what* is the message up to its last `"; "` (the whole message when
    ///   it has none);
    /// - *next* is the text after that `"; "`, or `default_next`;
    /// - *why* is `why`;
    /// - the offending value is the message's first `"..."` (quotes kept),
    ///   when it has one.
    ///
    /// ```
    /// use smith_diag::{Diagnostic, Value};
    ///
    /// let d = Diagnostic::from_message(
    ///     "store.not-found",
    ///     "no session is named \"demo\"; run `smith session list`",
    ///     "the reference names no session",
    ///     "list the sessions",
    /// );
    /// assert_eq!(d.what(), "no session is named \"demo\"");
    /// assert_eq!(d.next(), "run `smith session list`");
    /// assert_eq!(d.value(), Some(&Value::Shown("\"demo\"".into())));
    /// ```
    pub fn from_message(
        code: impl Into<String>,
        message: &str,
        why: impl Into<String>,
        default_next: impl Into<String>,
    ) -> Diagnostic {
        let (what, next) = match last_separator(message) {
            Some(at)
                if !message[..at].trim().is_empty() && !message[at + 2..].trim().is_empty() =>
            {
                (message[..at].to_owned(), message[at + 2..].to_owned())
            }
            _ => (message.to_owned(), default_next.into()),
        };
        let d = Diagnostic::new(Severity::Error, code, what, why, next);
        match first_quoted(message) {
            Some(value) => d.with_value(value),
            None => d,
        }
    }
}

/// The byte offset of the last `"; "` of `text` outside brackets and
/// quotes (a parenthesized aside may hold its own `;`).
fn last_separator(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    let mut last = None;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' | '[' | '{' if !quoted => depth += 1,
            ')' | ']' | '}' if !quoted => depth = depth.saturating_sub(1),
            ';' if !quoted && depth == 0 && text[i + 1..].starts_with(' ') => last = Some(i),
            _ => {}
        }
    }
    last
}

/// The first `"..."` of `text`, quotes included, honoring `\"` escapes.
pub(crate) fn first_quoted(text: &str) -> Option<&str> {
    let start = text.find('"')?;
    let rest = &text[start + 1..];
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some(&text[start..start + 1 + i + 1]),
            _ => escaped = false,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    #[test]
    fn splits_at_the_last_separator_and_quotes_the_value() {
        let d = Diagnostic::from_message(
            "x.y",
            "entry 3: bad CBOR; rule: r; run repair",
            "why",
            "default",
        );
        assert_eq!(d.what(), "entry 3: bad CBOR; rule: r");
        assert_eq!(d.next(), "run repair");
        assert_eq!(d.value(), None);
        assert!(d.is_complete());
    }

    #[test]
    fn separators_inside_brackets_and_quotes_do_not_split() {
        let d = Diagnostic::from_message(
            "x.y",
            "could not connect; check the server (after 2 attempts: a; b)",
            "why",
            "default",
        );
        assert_eq!(d.what(), "could not connect");
        assert_eq!(d.next(), "check the server (after 2 attempts: a; b)");
        let d = Diagnostic::from_message("x.y", "name \"a; b\" is bad", "why", "fix it");
        assert_eq!((d.what(), d.next()), ("name \"a; b\" is bad", "fix it"));
    }

    #[test]
    fn without_a_separator_the_default_action_is_used() {
        let d = Diagnostic::from_message("x.y", "provider \"p\" failed", "why", "retry");
        assert_eq!(d.what(), "provider \"p\" failed");
        assert_eq!(d.next(), "retry");
        assert_eq!(d.value(), Some(&Value::Shown("\"p\"".into())));
        // A trailing separator with nothing after it is not an action.
        let d = Diagnostic::from_message("x.y", "broken; ", "why", "retry");
        assert_eq!(d.next(), "retry");
    }

    #[test]
    fn quoted_values_respect_escapes() {
        assert_eq!(first_quoted(r#"a "b\"c" d"#), Some(r#""b\"c""#));
        assert_eq!(first_quoted("none"), None);
        assert_eq!(first_quoted("open \"never"), None);
    }
}
