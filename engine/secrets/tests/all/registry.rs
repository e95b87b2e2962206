//! Registration: records, idempotence, refusals, handoff.

use smith_secrets::{ErrorKind, FingerprintKey, MIN_SECRET_LEN, Registration, Registry, Source};

use crate::{ALL_SECRETS, API_KEY, GITHUB, registry};

#[test]
fn registration_record_never_contains_plaintext() {
    let r = registry();
    assert_eq!(r.len(), ALL_SECRETS.len());
    for record in r.registrations() {
        let cbor = record.to_cbor();
        let json = record.to_json();
        let debug = format!("{record:?} {r:?}");
        for secret in ALL_SECRETS {
            let needle = secret.as_bytes();
            assert!(
                !cbor.windows(needle.len()).any(|w| w == needle),
                "CBOR of {} holds a value",
                record.name
            );
            assert!(!json.contains(secret), "{json}");
            assert!(!debug.contains(secret), "{debug}");
        }
        assert_eq!(Registration::from_cbor(&cbor).expect("reads back"), *record);
    }
}

#[test]
fn record_has_the_documented_canonical_form() {
    let mut r = Registry::new(FingerprintKey::from_bytes([1; 32]));
    let reg = r
        .register("github.token", GITHUB, Source::Env("GITHUB_TOKEN".into()))
        .expect("registered")
        .registration;
    let key = FingerprintKey::from_bytes([1; 32]);
    let expected = format!(
        r#"{{"name":"github.token","source":"env:GITHUB_TOKEN","fingerprint":"{}","key":"{}"}}"#,
        key.fingerprint(GITHUB.as_bytes()),
        key.id()
    );
    assert_eq!(reg.to_json(), expected);
    // Canonical CBOR: a 4-entry map, keys shortest first.
    let cbor = reg.to_cbor();
    assert_eq!(cbor[0], 0xa4);
    assert_eq!(&cbor[1..5], b"\x63key");
    let mut again = Vec::new();
    smith_codec::json::to_cbor(&expected, &mut again).expect("json");
    assert_eq!(cbor, again);
    assert_eq!(reg.placeholder(), "{secret:github.token}");
    // A later build may add keys: readers ignore them.
    let extended = expected.replace(r#""key""#, r#""expires":1,"key""#);
    assert_eq!(Registration::from_json(&extended).expect("reads"), reg);
}

#[test]
fn registering_the_same_value_twice_is_idempotent() {
    let mut r = Registry::new(FingerprintKey::from_bytes([2; 32]));
    let first = r.register("a.key", API_KEY, Source::User).expect("first");
    assert!(first.new);
    let second = r.register("a.key", API_KEY, Source::User).expect("second");
    assert!(!second.new);
    assert_eq!(second.registration, first.registration);
    // Under another name: still the first registration.
    let third = r
        .register("b.key", API_KEY, Source::Env("B".into()))
        .expect("third");
    assert!(!third.new);
    assert_eq!(third.registration.name, "a.key");
    assert_eq!(r.len(), 1);
    let redactor = r.redactor();
    assert_eq!(redactor.redact_str(API_KEY), "{secret:a.key}");
}

#[test]
fn short_values_are_refused_with_a_diagnostic() {
    let mut r = Registry::new(FingerprintKey::from_bytes([3; 32]));
    let short = "a".repeat(MIN_SECRET_LEN - 1);
    let err = r
        .register("x.y", &short, Source::User)
        .expect_err("too short");
    assert_eq!(err.kind(), ErrorKind::TooShort);
    let d = err.diagnostic();
    assert_eq!(d.code(), "secrets.too-short");
    assert!(d.what().contains("7 bytes"), "{}", d.what());
    assert!(d.why().contains("ordinary text"), "{}", d.why());
    assert!(!d.next().is_empty());
    assert!(r.is_empty());
    let err = r
        .register("x.y", &"a".repeat(5000), Source::User)
        .expect_err("too long");
    assert_eq!(err.kind(), ErrorKind::TooLong);
    let err = r
        .register("bad name", API_KEY, Source::User)
        .expect_err("bad name");
    assert_eq!(err.kind(), ErrorKind::InvalidName);
    assert!(r.is_empty());
}

#[test]
fn values_overlapping_placeholders_are_refused() {
    let mut r = Registry::new(FingerprintKey::from_bytes([4; 32]));
    r.register("a.key", API_KEY, Source::User).expect("plain");
    for value in [
        "xx{secret:a.key}yy",   // contains a placeholder
        "key}tail-123456",      // begins with the end of one
        "head-123456{secret:a", // ends with the start of one
        "secret:a.key",         // sits inside one
    ] {
        let err = r.register("b.key", value, Source::User).expect_err(value);
        assert_eq!(err.kind(), ErrorKind::Ambiguous, "{value}");
    }
    // A name whose placeholder would contain a registered value.
    r.register("c.key", "ret:longname", Source::User)
        .expect("fine alone");
    let err = r
        .register("longname", "sk-unrelated-1234", Source::User)
        .expect_err("placeholder {secret:longname} contains ret:longname");
    assert_eq!(err.kind(), ErrorKind::Ambiguous);
}

#[test]
fn rotation_keeps_the_old_value_redacted_and_substitutes_the_new() {
    let mut r = Registry::new(FingerprintKey::from_bytes([5; 32]));
    r.register(
        "oauth.access",
        "access-token-old-1111",
        Source::AuthSlot("x.oauth".into()),
    )
    .expect("old");
    let new = r
        .register(
            "oauth.access",
            "access-token-new-2222",
            Source::AuthSlot("x.oauth".into()),
        )
        .expect("new");
    assert!(new.new);
    assert_eq!(r.len(), 2);
    assert_eq!(r.get("oauth.access"), Some(&new.registration));
    let redactor = r.redactor();
    assert_eq!(
        redactor.redact_str("access-token-old-1111 access-token-new-2222"),
        "{secret:oauth.access} {secret:oauth.access}"
    );
    let policy = smith_secrets::AllowList::new().allow("t", "oauth.access");
    let s = r.substitute_str("{secret:oauth.access}", "t", &policy);
    assert_eq!(s.input(), "access-token-new-2222");
}

#[test]
fn handoff_registers_at_once_and_redeems_once() {
    let mut r = Registry::new(FingerprintKey::from_bytes([6; 32]));
    let handoff = r
        .hand_off(
            "github-login",
            "github.oauth",
            "gho_handoff_value_0123456789",
        )
        .expect("handed off");
    assert!(handoff.registered.new);
    assert_eq!(
        handoff.registered.registration.source,
        Source::Plugin("github-login".into())
    );
    // Redacted from the moment it is handed off.
    assert_eq!(
        r.redactor()
            .redact_str("token gho_handoff_value_0123456789"),
        "token {secret:github.oauth}"
    );
    let ticket = handoff.ticket.as_str().to_owned();
    assert!(ticket.starts_with("handoff-") && ticket.len() == 8 + 32);
    let (registration, value) = r.redeem(&ticket).expect("first redemption");
    assert_eq!(registration.name, "github.oauth");
    assert_eq!(value.expose(), "gho_handoff_value_0123456789");
    assert_eq!(format!("{value:?}"), "[redacted]");
    let err = r.redeem(&ticket).expect_err("second redemption");
    assert_eq!(err.kind(), ErrorKind::Handoff);
    assert!(r.redeem("handoff-unknown").is_err());
    // Still registered after redemption.
    assert!(
        r.redactor()
            .contains_secret(b"gho_handoff_value_0123456789")
    );
}

#[test]
fn fingerprints_identify_values_without_revealing_them() {
    let r = registry();
    let key = FingerprintKey::from_bytes([9; 32]);
    let found = r.find(&key.fingerprint(API_KEY.as_bytes())).expect("found");
    assert_eq!(found.name, "anthropic.api_key");
    assert!(r.find(&key.fingerprint(b"not-a-secret-value")).is_none());
    assert!(found.fingerprint.to_string().starts_with("hmac-sha256:"));
    assert_eq!(found.key, key.id());
}

#[test]
fn registered_values_are_redacted_in_diagnostics() {
    let _ = registry();
    let d = smith_diag::Diagnostic::error("test.leak", format!("key {API_KEY}"), "why", "next");
    assert!(!d.render_plain().contains(API_KEY));
}

#[test]
fn registry_and_redactor_can_be_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Registry>();
    shared::<smith_secrets::Redactor>();
    shared::<smith_secrets::StreamRedactor>();
    let redactor = registry().redactor();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let redactor = std::sync::Arc::clone(&redactor);
            std::thread::spawn(move || redactor.redact_str(API_KEY).into_owned())
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().expect("joined"), "{secret:anthropic.api_key}");
    }
}
