//! Configuration options take effect in the commands that read them, end to
//! end through the built binary: `session.dir` (from the environment and
//! from config.kdl) moves where sessions are written and listed, the log
//! (`log.level`, `log.file`) records reported diagnostics redacted,
//! `net.head-timeout-s` bounds a live request, and `bench.samples` sets the
//! samples `smith bench` takes.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

/// `smith args` with `SMITH_HOME=home`, working in `home`, with no other
/// `SMITH_*` variable than `vars`.
fn smith(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SMITH_") || k.ends_with("_API_KEY") {
            cmd.env_remove(k);
        }
    }
    cmd.env("SMITH_HOME", home)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .current_dir(home)
        .envs(vars.iter().copied())
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> String {
    let o = smith(home, vars, args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "smith {args:?} failed:\nstdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

fn session_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| {
                    let name = e.ok()?.file_name().to_string_lossy().into_owned();
                    name.ends_with(".smith").then_some(name)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Records a session named `name` and checks it landed in `expected` (and
/// not in the default directory) and that `smith session list` finds it.
fn records_into(home: &Path, vars: &[(&str, &str)], name: &str, expected: &Path) {
    ok(
        home,
        vars,
        &["eval", "--provider", "mock", "--name", name, "hello"],
    );
    assert_eq!(session_files(expected).len(), 1, "{}", expected.display());
    assert!(
        session_files(&home.join("data").join("sessions")).is_empty(),
        "nothing is written to the default directory"
    );
    let list = ok(home, vars, &["session", "list", "--json"]);
    assert!(
        list.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .any(|v| v["name"] == name),
        "{list}"
    );
    // Without the option the default directory is used, and it is empty.
    let other = tempfile::tempdir().unwrap();
    let list = ok(other.path(), &[], &["session", "list", "--json"]);
    assert!(list.trim().is_empty(), "{list}");
}

#[test]
fn session_dir_from_the_environment_holds_the_sessions() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("elsewhere").join("sessions");
    let dir_text = dir.display().to_string();
    records_into(
        home.path(),
        &[("SMITH_SESSION_DIR", &dir_text)],
        "from-env",
        &dir,
    );
}

#[test]
fn session_dir_from_config_kdl_holds_the_sessions() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("kdl-sessions");
    std::fs::write(
        home.path().join("config.kdl"),
        format!("session {{\n    dir \"{}\"\n}}\n", dir.display()),
    )
    .unwrap();
    records_into(home.path(), &[], "from-kdl", &dir);
}

#[test]
fn without_session_dir_sessions_go_to_the_data_dir() {
    let home = tempfile::tempdir().unwrap();
    ok(
        home.path(),
        &[],
        &["eval", "--provider", "mock", "--name", "plain", "hello"],
    );
    assert_eq!(
        session_files(&home.path().join("data").join("sessions")).len(),
        1
    );
}

/// One warning (a near-miss environment variable shown by `config show`)
/// and one error (a session that is not there), each reported once.
fn warn_then_fail(home: &Path, vars: &[(&str, &str)]) {
    let mut with_typo = vars.to_vec();
    with_typo.push(("SMITH_MODLE", "small"));
    let o = smith(home, &with_typo, &["config", "show", "model"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("config.unknown-env"));
    let o = smith(home, vars, &["session", "info", "no-such-session"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_default_level_logs_warnings_and_errors_to_the_state_dir() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("state").join("smith.log");
    ok(home.path(), &[], &["session", "list"]);
    assert!(!log.exists(), "nothing reported, nothing opened");
    warn_then_fail(home.path(), &[]);
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].contains(" WARN config.unknown-env: environment variable SMITH_MODLE is not a smith option | why: "),
        "{lines:#?}"
    );
    assert!(lines[1].contains(" ERROR "), "{lines:#?}");
    assert!(lines[1].contains("no-such-session"), "{lines:#?}");
    assert!(lines[1].contains(" | next: "), "{lines:#?}");
}

#[test]
fn log_level_error_logs_only_errors() {
    let home = tempfile::tempdir().unwrap();
    warn_then_fail(home.path(), &[("SMITH_LOG_LEVEL", "error")]);
    let lines = log_lines(&home.path().join("state").join("smith.log"));
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains(" ERROR "), "{lines:#?}");
}

#[test]
fn log_file_from_config_kdl_receives_the_log() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("logs").join("custom.log");
    std::fs::write(
        home.path().join("config.kdl"),
        format!("log {{\n    file \"{}\"\n}}\n", file.display()),
    )
    .unwrap();
    warn_then_fail(home.path(), &[]);
    assert_eq!(log_lines(&file).len(), 2, "{:#?}", log_lines(&file));
    assert!(!home.path().join("state").join("smith.log").exists());
}

#[test]
fn an_unopenable_log_file_is_one_warning_and_smith_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let blocker = home.path().join("a-file");
    std::fs::write(&blocker, "x").unwrap();
    let file = blocker.join("smith.log");
    let file_text = file.display().to_string();
    let o = smith(
        home.path(),
        &[("SMITH_LOG_FILE", &file_text)],
        &["session", "info", "no-such-session"],
    );
    assert_eq!(o.status.code(), Some(1));
    let stderr = text(&o.stderr);
    assert_eq!(stderr.matches("log.open-failed").count(), 1, "{stderr}");
    assert!(stderr.contains(&file_text), "{stderr}");
    assert!(
        stderr.contains("no-such-session"),
        "the error is still reported: {stderr}"
    );
}

/// A server that answers every request with `reply` and then holds the
/// connection open silently until the client closes it. It runs until the
/// test process ends.
fn server(reply: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(reply);
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    url
}

#[test]
fn a_planted_secret_never_reaches_the_log() {
    const SECRET: &str = "sk-ant-planted-log-secret-90417";
    let reply: &'static [u8] = b"HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: 55\r\nconnection: close\r\n\r\ninvalid x-api-key: sk-ant-planted-log-secret-90417 !!!!";
    let url = server(reply);
    let home = tempfile::tempdir().unwrap();
    let o = smith(
        home.path(),
        &[("ANTHROPIC_API_KEY", SECRET)],
        &[
            "eval",
            "--no-session",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "hi",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let log = std::fs::read_to_string(home.path().join("state").join("smith.log"))
        .unwrap_or_else(|e| panic!("no log ({e}); stderr: {}", text(&o.stderr)));
    assert!(log.contains("401"), "the failure is logged: {log}");
    // The runtime replaces the registered key by its placeholder before the
    // error is reported (docs/secrets.md).
    assert!(log.contains("{secret:anthropic.api_key}"), "{log}");
    assert!(!log.contains(SECRET), "{log}");
    assert!(!text(&o.stderr).contains(SECRET));
}

#[test]
fn the_configured_head_timeout_bounds_a_live_request() {
    let url = server(b"");
    let home = tempfile::tempdir().unwrap();
    let o = smith(
        home.path(),
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-timeout-test"),
            ("SMITH_NET_HEAD_TIMEOUT_S", "1"),
        ],
        &[
            "eval",
            "--no-session",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "hi",
        ],
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no response head within 1s"), "{stderr}");
    assert!(stderr.contains("net.head-timeout-s"), "{stderr}");
}

/// The samples one gate of `smith bench --json` reports. The gate is one
/// with a wide margin (redacting 4 MiB takes well under half its limit), so
/// that it passes in its first round even on the busy machine the test
/// suite makes: a gate that fails is measured again after a pause of
/// `ROUND_PAUSE` (20 s), which the samples setting has nothing to do with.
fn bench_samples(home: &Path, vars: &[(&str, &str)], quick: bool) -> u64 {
    let mut args = vec!["bench", "--json", "--only", "secrets.redact_100"];
    if quick {
        args.push("--quick");
    }
    let o = smith(home, vars, &args);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&o.stderr)));
    let gates = report["gates"].as_array().unwrap();
    assert_eq!(gates.len(), 1, "{report}");
    assert!(gates[0]["error"].is_null(), "{report}");
    gates[0]["samples"].as_u64().unwrap()
}

#[test]
fn bench_samples_sets_the_samples_taken_and_quick_keeps_its_own() {
    let home = tempfile::tempdir().unwrap();
    let vars = [("SMITH_BENCH_SAMPLES", "5")];
    assert_eq!(bench_samples(home.path(), &vars, false), 5);
    std::fs::write(
        home.path().join("config.kdl"),
        "bench {\n    samples 7\n}\n",
    )
    .unwrap();
    assert_eq!(bench_samples(home.path(), &[], false), 7);
    assert_eq!(bench_samples(home.path(), &vars, true), 21);
}
