//! A plugin flooding the host through the built binary: test/lifecycle,
//! told to flood (`flood` in the input), sends 100,000 notices and writes
//! 100,000 log lines in one `before-provider-request` handler. Its caps per
//! run keep what fits, drop the rest unshown and unrecorded, warn once per
//! kind, and the session records how many were dropped.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const FLOOD: u64 = 100_000;

/// A smith home with test/lifecycle installed (granted `ui`) and a mock
/// script answering one turn with `done`.
fn home() -> (tempfile::TempDir, String) {
    let home = tempfile::tempdir().unwrap();
    common::install_guest(
        home.path(),
        "test/lifecycle",
        "smith_plugin_lifecycle.wasm",
        "    ui\n",
    );
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    (home, script)
}

/// `smith eval` of a flooding run in `home`, with `env`: standard output
/// and error (asserting exit status 0).
fn flood(home: &Path, script: &str, env: &[(&str, &str)]) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .env("SMITH_LOG_FILE", home.join("smith.log"))
        .envs(env.iter().copied())
        .current_dir(home)
        .args([
            "eval",
            "--name",
            "flooded",
            "--mock-script",
            script,
            "flood the host",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{out}\n{err}");
    (out, err)
}

/// The `plugin_limits` records of session `name`.
fn limit_records(home: &Path, name: &str) -> Vec<Value> {
    common::dump(home, name)
        .into_iter()
        .filter(|e| e["type"] == "entry" && e["content"]["type"] == "plugin_limits")
        .map(|e| e["content"].clone())
        .collect()
}

/// The intents of the `plugin.ui` effects recorded for test/lifecycle in
/// session `name`.
fn ui_effects(home: &Path, name: &str) -> Vec<Value> {
    common::dump(home, name)
        .into_iter()
        .filter(|e| e["kind"] == "effect_intent" && e["content"]["tool"] == "plugin.ui")
        .filter(|e| e["content"]["input"]["plugin"] == "test/lifecycle")
        .map(|e| e["content"]["input"]["intent"].clone())
        .collect()
}

#[test]
fn a_flooding_plugin_keeps_its_caps_warns_once_per_kind_and_the_session_counts_the_drops() {
    let (home, script) = home();
    let (out, err) = flood(home.path(), &script, &[]);
    // The run completes with its normal answer.
    assert_eq!(out.trim_end(), "done");
    // Exactly the cap of notices is shown, and recorded as effects.
    let shown = err
        .lines()
        .filter(|l| l.starts_with("[test/lifecycle] flood "))
        .count();
    assert_eq!(shown, 500, "{}", &err[..err.len().min(4000)]);
    let recorded = ui_effects(home.path(), "flooded");
    assert_eq!(recorded.iter().filter(|i| i["id"] == "flood").count(), 500);
    // Exactly the cap of log lines reaches smith's log.
    let log = std::fs::read_to_string(home.path().join("smith.log")).unwrap();
    let logged = log
        .lines()
        .filter(|l| l.contains("plugin.log: plugin test/lifecycle: flood "))
        .count();
    assert_eq!(logged, 1000);
    // One warning per kind, with its code.
    assert_eq!(
        err.matches("warning[plugin.rate-limited]").count(),
        2,
        "{err}"
    );
    assert_eq!(
        err.matches("plugin test/lifecycle sent more than 500 UI intents in one run")
            .count(),
        1
    );
    assert_eq!(
        err.matches("plugin test/lifecycle sent more than 1000 log lines in one run")
            .count(),
        1
    );
    assert!(err.contains("smith plugin disable test/lifecycle"), "{err}");
    // The session says how many were dropped.
    assert_eq!(
        limit_records(home.path(), "flooded"),
        [json!({
            "type": "plugin_limits",
            "plugin": "test/lifecycle",
            "dropped": [
                {"kind": "ui-intents", "limit": 500, "dropped": FLOOD - 500},
                {"kind": "log-lines", "limit": 1000, "dropped": FLOOD - 1000},
            ],
        })]
    );
    // After the run the plugin has caps of its own: its shutdown notice
    // is shown.
    assert!(
        err.contains("[test/lifecycle] session-shutdown"),
        "{}",
        &err[err.len().saturating_sub(4000)..]
    );
    // The session still resumes and replays.
    let (out, _) = common::run(
        home.path(),
        &[
            "eval",
            "--session",
            "flooded",
            "--mock-script",
            &script,
            "again",
        ],
        0,
    );
    assert_eq!(out.trim_end(), "done");
}

#[test]
fn the_journal_cap_drops_effects_unrecorded_and_the_caps_are_configurable() {
    let (home, script) = home();
    let (out, err) = flood(
        home.path(),
        &script,
        &[
            ("SMITH_PLUGINS_MAX_JOURNAL_ENTRIES", "100"),
            ("SMITH_PLUGINS_MAX_UI_INTENTS", "300"),
        ],
    );
    assert_eq!(out.trim_end(), "done");
    // 100 entries are 50 `plugin.ui` effects in the run: the ten notices
    // queued before it (nine plugin-loaded, session-start) and 40 of the
    // flood's 300; then the shutdown notice, after the run.
    let recorded = ui_effects(home.path(), "flooded");
    assert_eq!(recorded.len(), 51);
    assert_eq!(recorded.iter().filter(|i| i["id"] == "flood").count(), 40);
    let shown = err
        .lines()
        .filter(|l| l.starts_with("[test/lifecycle] flood "))
        .count();
    assert_eq!(shown, 40);
    assert_eq!(
        err.matches("warning[plugin.rate-limited]").count(),
        3,
        "{err}"
    );
    assert!(
        err.contains("plugin test/lifecycle sent more than 100 session journal entries in one run"),
        "{err}"
    );
    assert!(err.contains("plugins.max-journal-entries"), "{err}");
    assert_eq!(
        limit_records(home.path(), "flooded"),
        [json!({
            "type": "plugin_limits",
            "plugin": "test/lifecycle",
            "dropped": [
                {"kind": "ui-intents", "limit": 300, "dropped": FLOOD - 300},
                {"kind": "log-lines", "limit": 1000, "dropped": FLOOD - 1000},
                {"kind": "journal-entries", "limit": 100, "dropped": (300 - 40) * 2},
            ],
        })]
    );
}
