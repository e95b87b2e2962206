//! Integration tests for smith-secrets: registration records, redaction
//! (plain text, JSON, streams, overlapping and unicode secrets),
//! substitution under a policy, and exact allocation counts.

mod alloc_count;
mod redact;
mod registry;
mod stream;
mod substitute;

use smith_secrets::{FingerprintKey, Registry, Source};

/// An API key.
pub const API_KEY: &str = "sk-ant-api03-Zq8vB3xY7wK2mN5pL0dR";
/// A GitHub token.
pub const GITHUB: &str = "ghp_0123456789abcdefABCDEF0123456789ab";
/// A short secret that begins a longer one.
pub const SHORT: &str = "tok_live_1234";
/// The longer secret that [`SHORT`] begins.
pub const LONG: &str = "tok_live_1234_extended_5678";
/// A password with characters JSON escapes.
pub const QUOTED: &str = "pa\"ss\\w/rd<&>\tend";
/// A unicode secret.
pub const UNICODE: &str = "clé-secrète-🔑-ünïcødé";

/// Every secret the tests register.
pub const ALL_SECRETS: [&str; 6] = [API_KEY, GITHUB, SHORT, LONG, QUOTED, UNICODE];

/// A registry holding every test secret, under a fixed key.
pub fn registry() -> Registry {
    let mut r = Registry::new(FingerprintKey::from_bytes([9; 32]));
    let names = [
        "anthropic.api_key",
        "github.token",
        "short",
        "long",
        "quoted",
        "unicode",
    ];
    for (name, value) in names.iter().zip(ALL_SECRETS) {
        r.register(name, value, Source::User).expect("registered");
    }
    r
}

#[test]
fn every_diagnostic_is_complete_and_leaks_nothing() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = smith_diag::audit::audit_test_suite("every_diagnostic_is_complete", &ALL_SECRETS)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{report:?}");
}
