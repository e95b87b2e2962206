//! The process-wide registry of secret values that renderings must redact.
//!
//! Whoever first holds a secret (the auth resolver, a provider plugin host,
//! the environment reader) registers it here. Every diagnostic rendering then
//! replaces each occurrence with [`REDACTED`]. Registration is permanent for
//! the life of the process: a secret that was once live must never surface in
//! a later message either.

use std::borrow::Cow;
use std::sync::{PoisonError, RwLock};

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[redacted]";

static REGISTRY: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers `secret` so that every later rendering redacts it.
///
/// Empty strings are ignored (they would match everywhere). Registering the
/// same value twice is harmless.
pub fn register(secret: &str) {
    if secret.is_empty() {
        return;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    if registry.iter().any(|s| s == secret) {
        return;
    }
    registry.push(secret.to_owned());
    // Longest first, so a secret that contains another is replaced whole.
    registry.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// How many distinct secrets are registered.
pub fn count() -> usize {
    REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .len()
}

/// Returns `text` with every registered secret replaced by [`REDACTED`].
///
/// Borrows `text` unchanged when it contains no secret.
pub fn redact(text: &str) -> Cow<'_, str> {
    let registry = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    redact_with(text, &registry)
}

/// Whether `text` contains any registered secret.
pub fn contains_secret(text: &str) -> bool {
    let registry = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    registry.iter().any(|s| text.contains(s.as_str()))
}

fn redact_with<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut out: Cow<'a, str> = Cow::Borrowed(text);
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longer_secrets_are_replaced_whole() {
        let secrets = vec!["sk-abcdef123".to_owned(), "abc".to_owned()];
        assert_eq!(
            redact_with("key sk-abcdef123 and abc", &secrets),
            "key [redacted] and [redacted]"
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed() {
        let secrets = vec!["zzz-secret".to_owned()];
        assert!(matches!(redact_with("plain", &secrets), Cow::Borrowed(_)));
    }

    #[test]
    fn registered_secrets_are_redacted_and_empty_ignored() {
        register("");
        register("diag-unit-secret-7781");
        register("diag-unit-secret-7781");
        assert!(contains_secret("x diag-unit-secret-7781 y"));
        assert_eq!(redact("x diag-unit-secret-7781 y"), "x [redacted] y");
        assert!(!contains_secret("nothing here"));
    }
}
