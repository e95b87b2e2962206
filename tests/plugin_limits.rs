//! A plugin flooding the host through the built binary: test/lifecycle,
//! told to flood (`flood` in the input), writes 100,000 log lines and
//! returns 100,000 notices from one `before-provider-request` handler, or
//! returns the notices alone (`flood notices`). Its caps per run keep what
//! fits, drop the rest unshown and unrecorded, warn once per kind, and the
//! session records how many were dropped; a call that goes on writing log
//! lines after the cap dropped as many as a run keeps is stopped, and the
//! plugin with it.

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

/// `smith eval` of `prompt` in `home`, with `env`, as session `flooded`:
/// standard output and error (asserting exit status 0).
fn flood(home: &Path, script: &str, prompt: &str, env: &[(&str, &str)]) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .env("SMITH_LOG_FILE", home.join("smith.log"))
        .envs(env.iter().copied())
        .current_dir(home)
        .args(["eval", "--name", "flooded", "--mock-script", script, prompt])
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

/// The session's records of smith's log lines from test/lifecycle's flood.
fn logged_flood_lines(home: &Path) -> usize {
    let log = std::fs::read_to_string(home.join("smith.log")).unwrap_or_default();
    log.lines()
        .filter(|l| l.contains("plugin.log: plugin test/lifecycle: flood "))
        .count()
}

#[test]
fn a_plugin_flooding_notices_keeps_its_cap_warns_once_and_the_session_counts_the_drops() {
    let (home, script) = home();
    let (out, err) = flood(home.path(), &script, "flood notices", &[]);
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
    // The first 500 of the flood, in the plugin's order.
    let texts: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("[test/lifecycle] flood "))
        .collect();
    let expected: Vec<String> = (0..500).map(|n| n.to_string()).collect();
    assert_eq!(texts, expected);
    // One warning, with its code.
    assert_eq!(
        err.matches("warning[plugin.rate-limited]").count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("plugin test/lifecycle sent more than 500 UI intents in one run")
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
            ],
        })]
    );
    // The plugin was not stopped: after the run it has caps of its own,
    // and its shutdown notice is shown.
    assert!(
        err.contains("[test/lifecycle] session-shutdown"),
        "{}",
        &err[err.len().saturating_sub(4000)..]
    );
    // The session still resumes.
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
fn a_call_that_goes_on_logging_past_the_cap_is_stopped_and_the_run_goes_on() {
    let (home, script) = home();
    let (out, err) = flood(home.path(), &script, "flood the host", &[]);
    // The run completes with its normal answer.
    assert_eq!(out.trim_end(), "done");
    // Exactly the cap of log lines reaches smith's log.
    assert_eq!(logged_flood_lines(home.path()), 1000);
    // The cap's warning, then the stop: the call dropped as many lines as
    // a run keeps (1000), so it was stopped and the plugin destroyed.
    assert_eq!(
        err.matches("plugin test/lifecycle sent more than 1000 log lines in one run")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("plugin test/lifecycle (call handle): the plugin went on writing log lines after 1000 in one call had been dropped (a call keeps at most 1000, a run 1000: `plugins.max-log-lines`), so the call was stopped and the plugin destroyed"),
        "{err}"
    );
    assert!(err.contains("smith plugin disable test/lifecycle"), "{err}");
    // The stopped call's notices never arrive, and nothing of the plugin
    // after it: it is left out for the rest of the runtime.
    assert!(!err.contains("[test/lifecycle] flood "), "{err}");
    assert!(!err.contains("[test/lifecycle] session-shutdown"), "{err}");
    assert!(
        ui_effects(home.path(), "flooded")
            .iter()
            .all(|i| i["id"] != "flood")
    );
    // The session says how many were dropped before the stop.
    assert_eq!(
        limit_records(home.path(), "flooded"),
        [json!({
            "type": "plugin_limits",
            "plugin": "test/lifecycle",
            "dropped": [
                {"kind": "log-lines", "limit": 1000, "dropped": 1000},
            ],
        })]
    );
    // A new runtime loads the plugin afresh: resuming runs it again.
    let (out, err) = common::run(
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
    assert!(err.contains("[test/lifecycle] session-shutdown"), "{err}");
}

/// A raised log cap raises the point where a call is stopped: with
/// `plugins.max-log-lines` at 3000 a call keeps 1000 (the buffer of one
/// call) and is stopped after 3000 dropped.
#[test]
fn the_stop_follows_the_log_cap() {
    let (home, script) = home();
    let (out, err) = flood(
        home.path(),
        &script,
        "flood the host",
        &[("SMITH_PLUGINS_MAX_LOG_LINES", "3000")],
    );
    assert_eq!(out.trim_end(), "done");
    assert_eq!(logged_flood_lines(home.path()), 1000);
    assert!(
        err.contains("after 3000 in one call had been dropped (a call keeps at most 1000, a run 3000: `plugins.max-log-lines`)"),
        "{err}"
    );
}

#[test]
fn the_journal_cap_drops_effects_unrecorded_and_the_caps_are_configurable() {
    let (home, script) = home();
    let (out, err) = flood(
        home.path(),
        &script,
        "flood notices",
        &[
            ("SMITH_PLUGINS_MAX_JOURNAL_ENTRIES", "100"),
            ("SMITH_PLUGINS_MAX_UI_INTENTS", "300"),
        ],
    );
    assert_eq!(out.trim_end(), "done");
    // 100 entries are 50 `plugin.ui` effects in the run: the thirteen
    // notices queued before it (twelve plugin-loaded, session-start) and 37
    // of the flood's 300; then the shutdown notice, after the run.
    let recorded = ui_effects(home.path(), "flooded");
    assert_eq!(recorded.len(), 51);
    assert_eq!(recorded.iter().filter(|i| i["id"] == "flood").count(), 37);
    let shown = err
        .lines()
        .filter(|l| l.starts_with("[test/lifecycle] flood "))
        .count();
    assert_eq!(shown, 37);
    assert_eq!(
        err.matches("warning[plugin.rate-limited]").count(),
        2,
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
                {"kind": "journal-entries", "limit": 100, "dropped": (300 - 37) * 2},
            ],
        })]
    );
}
