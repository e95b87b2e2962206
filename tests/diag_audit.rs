//! The diagnostics audit of the `smith` binary.
//!
//! Every scenario runs the real binary into a failure with `SMITH_DIAG_LOG`
//! set, so every diagnostic the process builds is appended to a log as one
//! JSON line (see docs/diagnostics.md). The audit then checks every record:
//! a valid severity and a non-empty code, what, why and next; the offending
//! value where the code requires one; and no trace of the fake credential
//! that every scenario carries in its environment (and one stores with
//! `smith auth set`) — neither in a diagnostic nor anywhere on stdout or
//! stderr. Each scenario also names the codes it must produce, so the audit
//! cannot pass by recording nothing.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// A fake API key. It is in every scenario's environment, so the auth
/// resolver reads (and registers) it; it must never be shown.
const SECRET: &str = "sk-smith-audit-SECRET-7f3c91e0d2";

/// Codes whose diagnostics must name the offending value.
const NEEDS_VALUE: &[&str] = &[
    "cli.unknown-argument",
    "cli.invalid-value",
    "cli.unknown-command",
    "cli.missing-argument",
    "config.invalid-value",
    "store.not-found",
    "rpc.method_not_found",
    "rpc.parse_error",
    "rpc.invalid_params",
    "catalog.invalid",
    "catalog.unknown-provider",
    "trust.not-a-project",
    "auth.missing",
    "engine.mock-script",
    "replay.invalid-speed",
    "bench.unknown-gate",
    "plugin.io",
    "plugin.invalid",
    "plugin.not-found",
    "plugin.invalid-name",
    "plugin.deadline",
];

struct Scenario {
    name: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    stdin: Option<String>,
    /// The exit status the failure must have.
    status: i32,
    /// Codes that must be among the recorded diagnostics.
    codes: &'static [&'static str],
}

fn scenario(
    name: &'static str,
    args: &[&str],
    status: i32,
    codes: &'static [&'static str],
) -> Scenario {
    Scenario {
        name,
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        env: Vec::new(),
        stdin: None,
        status,
        codes,
    }
}

impl Scenario {
    fn stdin(mut self, text: &str) -> Scenario {
        self.stdin = Some(text.to_owned());
        self
    }

    fn env(mut self, key: &'static str, value: impl Into<String>) -> Scenario {
        self.env.push((key, value.into()));
        self
    }

    fn arg(mut self, arg: impl Into<String>) -> Scenario {
        self.args.push(arg.into());
        self
    }
}

struct Outcome {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    log: PathBuf,
}

fn smith(home: &Path, work: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.current_dir(work)
        .env("SMITH_HOME", home)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("SMITH_PROVIDER")
        .env_remove("SMITH_MODEL")
        .env_remove("GEMINI_API_KEY")
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("OPENAI_API_KEY", SECRET);
    cmd
}

fn run(s: &Scenario, home: &Path, work: &Path, logs: &Path) -> Outcome {
    let log = logs.join(format!("{}.jsonl", s.name));
    let mut cmd = smith(home, work);
    cmd.args(&s.args)
        .env("SMITH_DIAG_LOG", &log)
        .envs(s.env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = &s.stdin {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    Outcome {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        log,
    }
}

/// Problems in one log: smith-diag's audit (three parts, severity, no
/// secret) plus the offending value where the code needs one.
fn audit(log: &Path, secrets: &[&str]) -> (Vec<Value>, Vec<String>) {
    let report = smith_diag::audit::audit_log(log, secrets)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", log.display()));
    let mut problems = report.problems;
    let text = std::fs::read_to_string(log).unwrap();
    let mut records = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue; // already reported by audit_log
        };
        let code = record["code"].as_str().unwrap_or_default();
        let has_value = record["value"]
            .as_str()
            .is_some_and(|v| !v.trim().is_empty())
            || record["value_withheld"] == Value::Bool(true);
        if NEEDS_VALUE.contains(&code) && !has_value {
            problems.push(format!(
                "`{code}` does not name the offending value: {line}"
            ));
        }
        records.push(record);
    }
    (records, problems)
}

fn write_script(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn every_diagnostic_of_the_binary_is_complete_and_secret_free() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (h, w) = (home.path(), work.path());

    // The credential is also stored, so it is loaded from the auth store.
    let mut set = smith(h, w)
        .args(["auth", "set", "anthropic"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    set.stdin
        .take()
        .unwrap()
        .write_all(SECRET.as_bytes())
        .unwrap();
    let set = set.wait_with_output().unwrap();
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );

    // A session to corrupt, and files the scenarios read.
    let ok = smith(h, w)
        .args(["eval", "--provider", "mock", "--name", "damaged", "hello"])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let ok = smith(h, w)
        .args(["eval", "--provider", "mock", "--name", "good", "hello"])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let sessions = h.join("data").join("sessions");
    let id = std::fs::read_to_string(sessions.join("names").join("damaged")).unwrap();
    let damaged = sessions.join(format!("{}.smith", id.trim()));
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes[..8].copy_from_slice(b"NOTSMITH");
    std::fs::write(&damaged, bytes).unwrap();

    let failing = write_script(
        w,
        "failing.json",
        r#"[[{"error": {"kind": "overloaded", "message": "try later"}}]]"#,
    );
    let broken_script = write_script(w, "broken.json", "{ not a script");
    let bad_dump = write_script(w, "bad.jsonl", "{\"not\": \"a dump\"}\n");
    // A plugin folder whose manifest targets no world smith knows.
    let bad_plugin = w.join("bad-plugin");
    std::fs::create_dir_all(&bad_plugin).unwrap();
    std::fs::write(
        bad_plugin.join("plugin.kdl"),
        "name \"example/bad\"\nversion \"1.0.0\"\ndescription \"d\"\napi 1\nworld \"sideways\"\ncomponent \"plugin.wasm\"\n",
    )
    .unwrap();
    std::fs::write(bad_plugin.join("plugin.wasm"), b"\0asm").unwrap();
    // An installed plugin that never finishes instantiating (its
    // `contribute` spins), so a reload runs into the call deadline.
    let stuck = w.join("stuck-plugin");
    std::fs::create_dir_all(&stuck).unwrap();
    std::fs::write(
        stuck.join("plugin.kdl"),
        "name \"example/stuck\"\nversion \"1.0.0\"\napi 1\nworld \"extension\"\n",
    )
    .unwrap();
    std::fs::copy(
        Path::new(smith_plugins::GUEST_DIR).join("smith_plugin_stuck.wasm"),
        stuck.join("plugin.wasm"),
    )
    .unwrap();
    let installed = smith(h, w)
        .args(["plugin", "install"])
        .arg(&stuck)
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );

    let scenarios = vec![
        // The command line.
        scenario(
            "bad-flag",
            &["eval", "--bogus", "x"],
            2,
            &["cli.unknown-argument"],
        ),
        scenario(
            "unknown-command",
            &["session", "frobnicate"],
            2,
            &["cli.unknown-command"],
        ),
        scenario(
            "missing-argument",
            &["session", "info"],
            2,
            &["cli.missing-argument"],
        ),
        // Configuration, from each surface.
        scenario(
            "config-file",
            &["config", "show"],
            1,
            &["config.invalid-value"],
        )
        .env("SMITH_HOME", h.join("conf-home").display().to_string()),
        scenario(
            "config-env",
            &["config", "show"],
            1,
            &["config.invalid-value"],
        )
        .env("SMITH_NET_HEAD_TIMEOUT_S", "soon"),
        scenario(
            "config-flag",
            &["config", "show", "--net-head-timeout-s", "soon"],
            1,
            &["config.invalid-value"],
        ),
        // The session store and its file format.
        scenario(
            "unknown-session",
            &["session", "info", "ghost"],
            1,
            &["store.not-found"],
        ),
        scenario(
            "unknown-session-json",
            &[
                "eval",
                "--json",
                "--provider",
                "mock",
                "--session",
                "ghost",
                "hi",
            ],
            1,
            &["store.not-found"],
        ),
        scenario(
            "corrupt-session",
            &["session", "info", "damaged"],
            1,
            &["store.bad-header"],
        ),
        scenario("bad-dump", &["session", "import"], 1, &["store.invalid"]).arg(&bad_dump),
        // The engine: a failing provider turn, in both output modes, and a
        // broken mock script.
        scenario(
            "provider-error",
            &[
                "eval",
                "--no-session",
                "--provider",
                "mock",
                "--mock-script",
            ],
            1,
            &["engine.overloaded"],
        )
        .arg(&failing)
        .arg("go"),
        scenario(
            "provider-error-json",
            &[
                "eval",
                "--json",
                "--no-session",
                "--provider",
                "mock",
                "--mock-script",
            ],
            1,
            &["engine.overloaded"],
        )
        .arg(&failing)
        .arg("go"),
        scenario(
            "broken-script",
            &[
                "eval",
                "--no-session",
                "--provider",
                "mock",
                "--mock-script",
            ],
            1,
            &["engine.mock-script"],
        )
        .arg(&broken_script)
        .arg("go"),
        // The network: a real provider adapter whose server is not there,
        // with the secret as its credential.
        scenario(
            "connection-refused",
            &[
                "eval",
                "--no-session",
                "--provider",
                "anthropic",
                "--base-url",
                "http://127.0.0.1:9",
                "hi",
            ],
            1,
            &["engine.transport"],
        ),
        // JSON-RPC and MCP.
        scenario("rpc-malformed", &["rpc"], 0, &["rpc.parse_error"]).stdin("this is not json\n"),
        scenario("rpc-unknown-method", &["rpc"], 0, &["rpc.method_not_found"])
            .stdin("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"explode\"}\n"),
        scenario("rpc-bad-params", &["rpc"], 0, &["rpc.invalid_params"])
            .stdin("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/open\",\"params\":{}}\n"),
        scenario("mcp-bad-request", &["mcp"], 0, &["rpc.method_not_found"])
            .stdin("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/explode\"}\n"),
        // Credentials, with the secret stored and in the environment.
        scenario(
            "auth-missing",
            &["auth", "check", "google"],
            1,
            &["auth.missing"],
        ),
        // The model catalog.
        scenario("catalog-invalid", &["models"], 1, &["catalog.invalid"])
            .env("SMITH_HOME", h.join("catalog-home").display().to_string()),
        scenario(
            "catalog-unknown-provider",
            &["models", "--provider", "acme"],
            1,
            &["catalog.unknown-provider"],
        ),
        // Replay and the benchmark gates.
        scenario(
            "replay-bad-speed",
            &["replay", "good", "--speed", "0"],
            1,
            &["replay.invalid-speed"],
        ),
        scenario(
            "bench-unknown-gate",
            &["bench", "--only", "no-such-gate"],
            1,
            &["bench.unknown-gate"],
        ),
        // Plugin management: a folder that is not there, a manifest that
        // does not validate, a name that matches no plugin, a plugin that
        // runs past its deadline, and a name that is not a plugin name.
        scenario(
            "plugin-install-missing",
            &["plugin", "install", "/nonexistent/smith-plugin"],
            1,
            &["plugin.io"],
        ),
        scenario(
            "plugin-install-invalid",
            &["plugin", "install"],
            1,
            &["plugin.invalid"],
        )
        .arg(bad_plugin.display().to_string()),
        scenario(
            "plugin-unknown",
            &["plugin", "reload", "example/ghost"],
            1,
            &["plugin.not-found"],
        ),
        scenario(
            "plugin-over-deadline",
            &["plugin", "reload", "example/stuck"],
            1,
            &["plugin.deadline"],
        ),
        scenario(
            "plugin-bad-name",
            &["plugin", "enable", "Not A Name"],
            2,
            &["plugin.invalid-name"],
        ),
        // Project trust.
        scenario(
            "trust-not-a-project",
            &["trust", "/nonexistent/project"],
            1,
            &["trust.not-a-project"],
        ),
    ];
    // Homes with a bad user configuration and a bad user catalog.
    let conf_home = h.join("conf-home");
    std::fs::create_dir_all(&conf_home).unwrap();
    std::fs::write(
        conf_home.join("config.kdl"),
        "net {\n    head-timeout-s \"soon\"\n}\n",
    )
    .unwrap();
    let catalog_home = h.join("catalog-home");
    std::fs::create_dir_all(&catalog_home).unwrap();
    std::fs::write(
        catalog_home.join("models.kdl"),
        "provider \"x\" {\n    model \"m\" {\n        context \"big\"\n    }\n}\n",
    )
    .unwrap();

    let mut failures = Vec::new();
    let mut total = 0;
    let mut seen_codes = std::collections::BTreeSet::new();
    for s in &scenarios {
        let out = run(s, h, w, logs.path());
        let context = format!(
            "scenario {} ({:?}): status {:?}\nstdout:\n{}\nstderr:\n{}",
            s.name, s.args, out.status, out.stdout, out.stderr
        );
        if out.status != Some(s.status) {
            failures.push(format!("expected status {}: {context}", s.status));
        }
        for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if text.contains(SECRET) {
                failures.push(format!("the secret appears on {stream}: {context}"));
            }
        }
        if !out.log.exists() {
            failures.push(format!("no diagnostic was recorded: {context}"));
            continue;
        }
        let (records, problems) = audit(&out.log, &[SECRET]);
        total += records.len();
        failures.extend(problems.into_iter().map(|p| format!("{}: {p}", s.name)));
        let codes: Vec<&str> = records.iter().filter_map(|r| r["code"].as_str()).collect();
        for code in s.codes {
            if !codes.contains(code) {
                failures.push(format!(
                    "`{code}` was not recorded (got {codes:?}): {context}"
                ));
            }
        }
        seen_codes.extend(codes.iter().map(|c| (*c).to_owned()));
        // The rendering the user saw carries the same three parts (JSON
        // modes answer on stdout, checked below).
        let json_mode = s.args.iter().any(|a| a == "--json");
        if s.status != 0
            && !json_mode
            && !(out.stderr.contains("why: ") && out.stderr.contains("next: "))
        {
            failures.push(format!("stderr lacks the diagnostic's why/next: {context}"));
        }
        // JSON surfaces carry the JSON rendering.
        match s.name {
            "unknown-session-json" => {
                let last: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or(""))
                    .unwrap_or_default();
                if last["type"] != "error" || last["error"]["code"] != "store.not-found" {
                    failures.push(format!("no JSON error record on stdout: {context}"));
                }
            }
            "provider-error-json" => {
                let has = out.stdout.lines().any(|l| {
                    serde_json::from_str::<Value>(l).is_ok_and(|v| {
                        v["type"] == "error" && v["diagnostic"]["code"] == "engine.overloaded"
                    })
                });
                if !has {
                    failures.push(format!("the error event has no diagnostic: {context}"));
                }
            }
            "rpc-malformed" | "rpc-unknown-method" | "rpc-bad-params" | "mcp-bad-request" => {
                let has = out.stdout.lines().any(|l| {
                    serde_json::from_str::<Value>(l).is_ok_and(|v| {
                        ["what", "why", "next"].iter().all(|p| {
                            v["error"]["data"][p]
                                .as_str()
                                .is_some_and(|t| !t.is_empty())
                        }) && v["error"]["data"]["code"]
                            .as_str()
                            .is_some_and(|c| c.starts_with("rpc."))
                    })
                });
                if !has {
                    failures.push(format!(
                        "no error object with a diagnostic in data: {context}"
                    ));
                }
            }
            "config-file" => {
                let at_line = std::fs::read_to_string(&out.log).unwrap().lines().any(|l| {
                    serde_json::from_str::<Value>(l).is_ok_and(|v| {
                        v["code"] == "config.invalid-value"
                            && v["surface"]["line"] == 2
                            && v["surface"]["column"] == 20
                    })
                });
                if !at_line || !out.stderr.contains("config.kdl:2:20") {
                    failures.push(format!("the file position is not reported: {context}"));
                }
            }
            _ => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n---\n")
    );
    assert!(scenarios.len() >= 15);
    assert!(
        total >= scenarios.len(),
        "{total} records for {} scenarios",
        scenarios.len()
    );
    // Every area of the binary spoke at least once.
    for area in [
        "cli.", "config.", "store.", "engine.", "rpc.", "auth.", "catalog.", "trust.", "plugin.",
    ] {
        assert!(
            seen_codes.iter().any(|c| c.starts_with(area)),
            "no `{area}` diagnostic among {seen_codes:?}"
        );
    }
}

/// The auditor itself fails on a diagnostic without a part, on one that
/// hides its offending value, and on one that leaks the secret.
#[test]
fn the_auditor_rejects_incomplete_valueless_and_leaking_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("planted.jsonl");
    let good =
        smith_diag::Diagnostic::error("store.not-found", "no session \"x\"", "none", "list them")
            .with_value("\"x\"");
    let no_why =
        smith_diag::Diagnostic::error("store.not-found", "no session \"y\"", " ", "list them")
            .with_value("\"y\"");
    let no_value =
        smith_diag::Diagnostic::error("config.invalid-value", "bad", "because", "fix it");
    // Rendered without redaction (as a leaking renderer would write it).
    let leaking = format!(
        r#"{{"severity":"error","code":"auth.missing","what":"key {SECRET}","why":"w","next":"n","value_withheld":true}}"#
    );
    std::fs::write(
        &log,
        format!(
            "{}\n{}\n{}\n{leaking}\n",
            good.to_json(),
            no_why.to_json(),
            no_value.to_json()
        ),
    )
    .unwrap();
    let (records, problems) = audit(&log, &[SECRET]);
    assert_eq!(records.len(), 4);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("record 2") && p.contains("`why`")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`config.invalid-value` does not name the offending value")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("record 4") && p.contains("secret")),
        "{problems:#?}"
    );
    assert!(
        !problems.iter().any(|p| p.contains("record 1")),
        "{problems:#?}"
    );

    // The complete, valued, secret-free record alone passes.
    std::fs::write(&log, format!("{}\n", good.to_json())).unwrap();
    let (_, problems) = audit(&log, &[SECRET]);
    assert!(problems.is_empty(), "{problems:#?}");
}
