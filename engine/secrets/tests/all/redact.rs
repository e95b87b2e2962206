//! Redaction of plain text, JSON and bytes.

use std::borrow::Cow;

use smith_secrets::{FingerprintKey, Registry, Source};

use crate::{API_KEY, GITHUB, LONG, QUOTED, SHORT, UNICODE, registry};

#[test]
fn planted_secrets_in_plain_text() {
    let r = registry().redactor();
    let text =
        format!("export KEY={API_KEY}\ncurl -H 'Authorization: token {GITHUB}' x\n{API_KEY}");
    assert_eq!(
        r.redact_str(&text),
        "export KEY={secret:anthropic.api_key}\ncurl -H 'Authorization: token {secret:github.token}' x\n{secret:anthropic.api_key}"
    );
    assert_eq!(r.redact_str(API_KEY), "{secret:anthropic.api_key}");
}

#[test]
fn text_without_secrets_is_borrowed() {
    let r = registry().redactor();
    let text = "nothing to see here: sk-ant-api03- and ghp_ prefixes alone";
    assert!(matches!(r.redact_str(text), Cow::Borrowed(t) if std::ptr::eq(t, text)));
    assert!(matches!(r.redact_bytes(text.as_bytes()), Cow::Borrowed(_)));
    assert!(!r.contains_secret(text.as_bytes()));
}

#[test]
fn overlapping_secrets_replace_the_longest() {
    let r = registry().redactor();
    assert_eq!(
        r.redact_str(&format!("{LONG} {SHORT} {SHORT}_extended")),
        "{secret:long} {secret:short} {secret:short}_extended"
    );
    // Two secrets back to back.
    assert_eq!(
        r.redact_str(&format!("{SHORT}{LONG}")),
        "{secret:short}{secret:long}"
    );
}

#[test]
fn unicode_secrets_and_text() {
    let r = registry().redactor();
    let text = format!("ключ: {UNICODE} — ok ✓ {API_KEY}é");
    assert_eq!(
        r.redact_str(&text),
        "ключ: {secret:unicode} — ok ✓ {secret:anthropic.api_key}é"
    );
}

#[test]
fn secrets_inside_json_escapes() {
    let r = registry().redactor();
    // As serde_json writes them.
    let body = serde_json::json!({"error": {"message": format!("bad key {QUOTED} / {UNICODE}")}})
        .to_string();
    assert!(!body.contains(QUOTED), "the escaped form differs");
    let redacted = r.redact_str(&body);
    assert_eq!(
        redacted,
        r#"{"error":{"message":"bad key {secret:quoted} / {secret:unicode}"}}"#
    );
    // As Python's json.dumps (ASCII only), PHP (`\/`) and Go (`\u003c`) write them.
    let python = r#"{"k": "clé-secrète-🔑-ünïcødé"}"#
        .replace("é", "\\u00e9")
        .replace("è", "\\u00e8")
        .replace("🔑", "\\ud83d\\udd11")
        .replace("ü", "\\u00fc")
        .replace("ï", "\\u00ef")
        .replace("ø", "\\u00f8");
    assert_eq!(r.redact_str(&python), r#"{"k": "{secret:unicode}"}"#);
    let php = r#"["pa\"ss\\w\/rd<&>\tend"]"#;
    assert_eq!(r.redact_str(php), r#"["{secret:quoted}"]"#);
    let go = r#"["pa\"ss\\w/rd\u003c\u0026\u003e\tend"]"#;
    assert_eq!(r.redact_str(go), r#"["{secret:quoted}"]"#);
}

#[test]
fn json_values_are_redacted_in_place() {
    let r = registry().redactor();
    let mut value = serde_json::json!({
        "command": format!("echo {API_KEY}"),
        "nested": [1, {"pw": QUOTED}, null, true],
    });
    assert_eq!(r.redact_json(&mut value), 2);
    assert_eq!(
        value,
        serde_json::json!({
            "command": "echo {secret:anthropic.api_key}",
            "nested": [1, {"pw": "{secret:quoted}"}, null, true],
        })
    );
    assert_eq!(r.redact_json(&mut value), 0);
}

#[test]
fn redaction_is_idempotent() {
    let r = registry().redactor();
    let inputs = [
        format!("{API_KEY}{GITHUB}{SHORT}{LONG}{QUOTED}{UNICODE}"),
        format!("{{secret:{API_KEY}}} }}{LONG}{{ {SHORT}}}"),
        serde_json::json!([API_KEY, QUOTED, UNICODE]).to_string(),
        "plain".to_owned(),
    ];
    for input in inputs {
        let once = r.redact_str(&input).into_owned();
        let twice = r.redact_str(&once);
        assert_eq!(twice, once, "redacting {once:?} again changed it");
        assert!(matches!(twice, Cow::Borrowed(_)));
        for secret in crate::ALL_SECRETS {
            assert!(!once.contains(secret));
        }
    }
}

#[test]
fn bytes_that_are_not_utf8_are_redacted() {
    let r = registry().redactor();
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend_from_slice(GITHUB.as_bytes());
    bytes.push(0x80);
    let mut out = Vec::new();
    assert_eq!(r.redact_into(&bytes, &mut out), 1);
    assert_eq!(out, b"\xff\xfe{secret:github.token}\x80");
    assert_eq!(r.redact_bytes(&bytes).as_ref(), out.as_slice());
}

#[test]
fn the_redactor_handed_out_learns_later_registrations() {
    let mut reg = Registry::new(FingerprintKey::from_bytes([8; 32]));
    assert!(reg.redactor().is_empty());
    reg.register("a.key", API_KEY, Source::User).expect("a");
    let first = reg.redactor();
    assert!(std::sync::Arc::ptr_eq(&first, &reg.redactor()));
    assert!(first.contains_secret(API_KEY.as_bytes()));
    assert!(!first.contains_secret(GITHUB.as_bytes()));
    // Registered while the redactor is held (a plugin's handoff during a
    // run): every holder redacts it from then on, without asking again.
    reg.register("b.key", GITHUB, Source::Plugin("login".into()))
        .expect("b");
    assert!(first.contains_secret(GITHUB.as_bytes()));
    assert_eq!(
        first.redact_str(&format!("{API_KEY} {GITHUB}")),
        "{secret:a.key} {secret:b.key}"
    );
    assert!(std::sync::Arc::ptr_eq(&first, &reg.redactor()));
}

#[test]
fn the_redactor_substitutes_only_what_its_policy_authorizes() {
    let mut reg = Registry::new(FingerprintKey::from_bytes([8; 32]));
    reg.register("github.token", GITHUB, Source::User)
        .expect("registered");
    let r = reg.redactor();
    let input = serde_json::json!({"command": "gh auth login --with-token {secret:github.token}"});
    // No placeholder: nothing to do, the policy is not asked.
    assert!(
        r.substitute_json(&serde_json::json!({"command": "ls"}), "bash")
            .is_none()
    );
    // The default policy authorizes nothing: the placeholder stays.
    let run = r.substitute_json(&input, "bash").expect("a placeholder");
    assert_eq!(run.input(), &input);
    assert!(run.used().is_empty());
    assert_eq!(run.refused().len(), 1);
    r.set_policy(std::sync::Arc::new(
        smith_secrets::AllowList::new().allow("bash", "github.token"),
    ));
    let run = r.substitute_json(&input, "bash").expect("a placeholder");
    assert_eq!(
        run.input()["command"],
        format!("gh auth login --with-token {GITHUB}")
    );
    assert_eq!(run.used(), ["github.token"]);
    let other = r.substitute_json(&input, "read").expect("a placeholder");
    assert_eq!(other.input(), &input);
    // The input the journal records is unchanged.
    assert!(
        input["command"]
            .as_str()
            .is_some_and(|c| c.ends_with("{secret:github.token}"))
    );
}
