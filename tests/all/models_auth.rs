//! `smith models` and `smith auth` end to end, under a temporary SMITH_HOME.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

fn smith(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.env("SMITH_HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GEMINI_API_KEY");
    cmd
}

#[test]
fn models_lists_the_bundled_catalog_with_unknowns_as_question_marks() {
    let home = tempfile::tempdir().unwrap();
    let out = smith(home.path())
        .args(["models", "--provider", "google"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("google/gemini-2.5-pro"), "{text}");
    assert!(!text.contains("anthropic/"), "{text}");
    // Cached-token rates are unknown and shown as such.
    assert!(text.contains("r? w?"), "{text}");
}

#[test]
fn user_models_win_and_conflicts_are_reported_in_json() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("models.kdl"),
        "provider \"openai\" {\n    model \"gpt-5\" {\n        context 1000\n    }\n}\nprovider \"local\" {\n    model \"coder\" {\n        tools #true\n    }\n}\n",
    )
    .unwrap();
    let out = smith(home.path())
        .args(["models", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = v["models"].as_array().unwrap();
    let gpt5 = models
        .iter()
        .find(|m| m["model"]["id"] == "gpt-5" && m["model"]["provider"] == "openai")
        .unwrap();
    assert_eq!(gpt5["model"]["context"], 1000);
    assert_eq!(gpt5["provenance"]["context"], "user");
    assert_eq!(gpt5["provenance"]["max-output"], "bundled");
    let local = models.iter().find(|m| m["model"]["id"] == "coder").unwrap();
    assert!(
        local["model"].get("context").is_none(),
        "unknown stays absent"
    );
    let conflicts = v["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!(conflicts[0]["field"], "context");
    assert_eq!(conflicts[0]["kept"][0], "user");
    assert_eq!(conflicts[0]["ignored"][0], "bundled");
}

#[test]
fn an_invalid_user_catalog_and_an_unknown_provider_fail_with_diagnostics() {
    let home = tempfile::tempdir().unwrap();
    let out = smith(home.path())
        .args(["models", "--provider", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope") && err.contains("anthropic"), "{err}");
    std::fs::write(
        home.path().join("models.kdl"),
        "provider \"x\" { model \"m\" { context 0 } }",
    )
    .unwrap();
    let out = smith(home.path()).arg("models").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("models.kdl"), "{err}");
}

const KEY: &str = "sk-cli-test-SECRET-31415";

#[test]
fn auth_set_status_check_logout_never_print_the_key() {
    let home = tempfile::tempdir().unwrap();
    let mut child = smith(home.path())
        .args(["auth", "set", "anthropic"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{KEY}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut outputs = vec![out];

    let stored = home.path().join("data").join("auth.json");
    let text = std::fs::read_to_string(&stored).unwrap();
    assert!(text.contains(KEY));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    let status = smith(home.path())
        .args(["auth", "status", "--json"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0));
    let rows: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let anthropic = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["slot"] == "anthropic.api_key")
        .unwrap();
    assert_eq!(anthropic["state"], "ready");
    assert_eq!(anthropic["kind"], "api-key");
    let openai = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["slot"] == "openai.api_key")
        .unwrap();
    assert_eq!(openai["state"], "missing");
    outputs.push(status);

    let check = smith(home.path())
        .args(["auth", "check", "anthropic"])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&check.stdout).contains("auth store"));
    outputs.push(check);

    // The environment is preferred over the store.
    let env_check = smith(home.path())
        .args(["auth", "check", "openai"])
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&env_check.stdout).contains("OPENAI_API_KEY"));
    outputs.push(env_check);

    let missing = smith(home.path())
        .args(["auth", "check", "google"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("GEMINI_API_KEY"));
    outputs.push(missing);

    let logout = smith(home.path())
        .args(["auth", "logout", "anthropic"])
        .output()
        .unwrap();
    assert_eq!(logout.status.code(), Some(0));
    outputs.push(logout);
    let after = smith(home.path())
        .args(["auth", "check", "anthropic"])
        .output()
        .unwrap();
    assert_eq!(after.status.code(), Some(1));
    outputs.push(after);

    for out in &outputs {
        for stream in [&out.stdout, &out.stderr] {
            assert!(!String::from_utf8_lossy(stream).contains(KEY), "key leaked");
        }
    }
}

#[test]
fn auth_set_refuses_an_empty_value() {
    let home = tempfile::tempdir().unwrap();
    let out = smith(home.path())
        .args(["auth", "set", "openai"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

#[test]
fn routes_in_models_kdl_resolve_and_broken_ones_are_reported() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("models.kdl"),
        "bucket \"work\" provider=\"anthropic\" slot=\"work\"\n\
         alias \"fast\" \"anthropic/claude-haiku-4-5-20251001\"\n\
         group \"main\" \"anthropic/claude-sonnet-4-5-20250929@work\" \"fast\" \"gpt-5\"\n\
         alias \"loop\" \"loop2\"\n\
         alias \"loop2\" \"loop\"\n",
    )
    .unwrap();
    let out = smith(home.path())
        .args(["models", "--resolve", "main"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "anthropic/claude-sonnet-4-5-20250929@work\nanthropic/claude-haiku-4-5-20251001\nopenai/gpt-5\n"
    );
    let out = smith(home.path())
        .args(["models", "--resolve", "loop"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loop -> loop2 -> loop"), "{err}");
    // Listing still works and warns about the broken definitions.
    let out = smith(home.path()).arg("models").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("route.cycle"));
}
