//! Substitution at the effect boundary.

use std::borrow::Cow;

use smith_secrets::{AllowList, Decision, NeverAuthorize, Policy, Refused, Request};

use crate::{API_KEY, GITHUB, QUOTED, registry};

#[test]
fn nothing_is_substituted_by_default() {
    let r = registry();
    let input = serde_json::json!({"command": "curl -H 'x-api-key: {secret:anthropic.api_key}' u"});
    let s = r.substitute_json(&input, "bash", &NeverAuthorize);
    assert_eq!(s.input(), &input);
    assert!(s.used().is_empty());
    assert_eq!(s.refused().len(), 1);
    assert_eq!(s.refused()[0].name, "anthropic.api_key");
    assert!(matches!(s.refused()[0].reason, Refused::Denied(_)));
    assert!(s.refused()[0].to_string().contains("stayed as text"));
}

#[test]
fn only_authorized_placeholders_are_substituted() {
    let r = registry();
    let recorded = serde_json::json!({
        "command": "git push https://x:{secret:github.token}@host {secret:anthropic.api_key}",
        "env": {"PW": "{secret:quoted}", "NOPE": "{secret:nobody}"},
        "n": 3,
    });
    let policy = AllowList::new()
        .allow("bash", "github.token")
        .allow("bash", "quoted")
        .allow("other", "anthropic.api_key");
    let s = r.substitute_json(&recorded, "bash", &policy);
    assert_eq!(
        s.input(),
        &serde_json::json!({
            "command": format!("git push https://x:{GITHUB}@host {{secret:anthropic.api_key}}"),
            "env": {"PW": QUOTED, "NOPE": "{secret:nobody}"},
            "n": 3,
        })
    );
    assert_eq!(s.used(), ["github.token", "quoted"]);
    let refused: Vec<_> = s
        .refused()
        .iter()
        .map(|r| (r.name.as_str(), &r.reason))
        .collect();
    assert_eq!(refused.len(), 2);
    assert_eq!(refused[0].0, "anthropic.api_key");
    assert_eq!(refused[1], ("nobody", &Refused::Unknown));
    // The recorded input still holds placeholders only.
    assert!(!recorded.to_string().contains(GITHUB));
    // Debug never shows the plaintext input.
    assert!(!format!("{s:?}").contains(GITHUB));
    // Serialized for the tool, the value is escaped like any string.
    assert!(s.input().to_string().contains(r#"pa\"ss\\w/rd<&>\tend"#));
}

#[test]
fn text_substitution_borrows_when_nothing_is_authorized() {
    let r = registry();
    let text = "k={secret:anthropic.api_key} {secret:anthropic.api_key}";
    let s = r.substitute_str(text, "bash", &NeverAuthorize);
    assert!(matches!(s.input(), Cow::Borrowed(_)));
    // One refusal per name, however often it appears.
    assert_eq!(s.refused().len(), 1);
    let policy = AllowList::new().allow("bash", "anthropic.api_key");
    let s = r.substitute_str(text, "bash", &policy);
    assert_eq!(s.input(), &format!("k={API_KEY} {API_KEY}"));
    assert_eq!(s.used(), ["anthropic.api_key"]);
}

/// A policy that counts its questions.
struct Counting(std::sync::atomic::AtomicUsize);

impl Policy for Counting {
    fn authorize(&self, request: &Request<'_>) -> Decision {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(
            request
                .secret
                .fingerprint
                .to_string()
                .starts_with("hmac-sha256:")
        );
        Decision::Allow
    }
}

#[test]
fn the_policy_is_asked_once_per_secret() {
    let r = registry();
    let policy = Counting(Default::default());
    let input = serde_json::json!([
        "{secret:github.token}",
        "{secret:github.token}{secret:short}"
    ]);
    let s = r.substitute_json(&input, "t", &policy);
    assert_eq!(policy.0.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert_eq!(s.used(), ["github.token", "short"]);
}

#[test]
fn redact_then_substitute_round_trips() {
    let r = registry();
    let original = serde_json::json!({"command": format!("deploy --token {GITHUB}")});
    let mut recorded = original.clone();
    r.redactor().redact_json(&mut recorded);
    assert_eq!(recorded["command"], "deploy --token {secret:github.token}");
    let policy = AllowList::new().allow("bash", "github.token");
    let s = r.substitute_json(&recorded, "bash", &policy);
    assert_eq!(s.input(), &original);
}
