//! `smith doctor` end to end through the built binary, each run in a home
//! of its own: a clean home is all fine (exit 0); unknown configuration
//! keys are reported with their file and line (exit 1 for a section that
//! warns, 2 for one that rejects); a provider key in the environment or
//! the auth store is reported present with its source and never shown; a
//! damaged session is reported as repairable (and is fine once repaired);
//! an effect without a completion, an untrusted project and stale cache
//! entries are reported; nothing is sent to a provider unless `--live`,
//! which sends one request as `smith auth check --live` does; `--json` has the documented fields; the exit
//! status is the worst finding's; and every diagnostic the runs build is
//! complete and free of the test keys.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/http.rs"]
mod http;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A fake Anthropic key, in the environment of some runs.
const ENV_SECRET: &str = "sk-ant-doctor-ENV-SECRET-5521";
/// A fake OpenAI key, stored with `smith auth set`.
const STORED_SECRET: &str = "sk-openai-doctor-STORED-SECRET-8830";

/// A home (`HOME` and `SMITH_HOME`) and a working folder of its own.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        Home { _dir: dir, home }
    }

    fn path(&self) -> &Path {
        &self.home
    }

    /// `smith doctor ARGS` in `cwd` (the home when `None`) with only the
    /// variables it is given: doctor reports on the environment, so the
    /// test's own (a developer's API keys, `NO_COLOR`, `SMITH_*`) must not
    /// reach it. The audit's log variable is passed on.
    fn doctor_in(&self, cwd: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("SMITH_HOME", &self.home)
            .env("TERM", "xterm-256color")
            .env("COLORTERM", "truecolor")
            .current_dir(cwd.unwrap_or(&self.home))
            .arg("doctor")
            .args(args)
            .stdin(Stdio::null());
        for var in ["SMITH_DIAG_LOG", "SMITH_DIAG_AUDIT_CHILD"] {
            if let Some(v) = std::env::var_os(var) {
                cmd.env(var, v);
            }
        }
        cmd.envs(env.iter().copied()).output().unwrap()
    }

    fn doctor(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.doctor_in(None, args, env)
    }

    /// `smith doctor --json` (with `env`): the document and the exit
    /// status, checked against each other and against the text report.
    fn report(&self, env: &[(&str, &str)]) -> (Value, i32) {
        self.report_in(None, env)
    }

    fn report_in(&self, cwd: Option<&Path>, env: &[(&str, &str)]) -> (Value, i32) {
        let out = self.doctor_in(cwd, &["--json"], env);
        let stdout = text(&out.stdout);
        let doc: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("doctor --json is not JSON ({e}):\n{stdout}"));
        let code = out.status.code().unwrap();
        assert_eq!(code, worst_exit(&doc), "{stdout}");
        assert_eq!(doc["exit_code"], code, "{stdout}");
        let plain = self.doctor_in(cwd, &[], env);
        assert_eq!(
            plain.status.code(),
            Some(code),
            "the text report exits as the JSON one:\n{}",
            text(&plain.stdout)
        );
        (doc, code)
    }

    /// `smith ARGS` (with the usual test environment), asserting success.
    fn smith(&self, args: &[&str]) -> String {
        common::run(&self.home, args, 0).0
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The exit status the severities in `doc` call for: 2 with an error, 1
/// with a warning, else 0.
fn worst_exit(doc: &Value) -> i32 {
    let severities: Vec<&str> = findings(doc)
        .iter()
        .map(|f| f["severity"].as_str().unwrap())
        .collect();
    if severities.contains(&"error") {
        2
    } else if severities.contains(&"warning") {
        1
    } else {
        0
    }
}

fn findings(doc: &Value) -> &Vec<Value> {
    doc["findings"].as_array().unwrap()
}

/// The findings of `check`.
fn of<'a>(doc: &'a Value, check: &str) -> Vec<&'a Value> {
    findings(doc)
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

/// The warnings and errors outside the sandbox area. The sandbox is the
/// kernel's: on a machine without Landlock it warns whatever the home
/// holds, so the other areas are what a test of the home looks at.
fn problems(doc: &Value) -> Vec<&Value> {
    findings(doc)
        .iter()
        .filter(|f| {
            f["area"] != "sandbox" && matches!(f["severity"].as_str(), Some("warning" | "error"))
        })
        .collect()
}

/// The exit status of `doc` once the sandbox area is set aside.
fn home_exit(doc: &Value) -> i32 {
    let p = problems(doc);
    if p.iter().any(|f| f["severity"] == "error") {
        2
    } else if p.is_empty() {
        0
    } else {
        1
    }
}

fn sandbox_warns(doc: &Value) -> bool {
    findings(doc)
        .iter()
        .any(|f| f["area"] == "sandbox" && f["severity"] != "ok" && f["severity"] != "info")
}

#[test]
fn a_clean_home_is_all_fine_and_exits_0() {
    let home = Home::new();
    let (doc, code) = home.report(&[]);
    assert!(problems(&doc).is_empty(), "{doc:#}");
    if sandbox_warns(&doc) {
        // A kernel without Landlock: the only warning is the sandbox's.
        assert_eq!(code, 1, "{doc:#}");
        eprintln!("note: this kernel cannot enter the sandbox; doctor says so and exits 1");
    } else {
        assert_eq!(code, 0, "{doc:#}");
        assert_eq!(doc["status"], "ok");
    }
    // Every area was looked at, and nothing was written to the home.
    let areas: BTreeSet<&str> = findings(&doc)
        .iter()
        .map(|f| f["area"].as_str().unwrap())
        .collect();
    assert_eq!(
        areas,
        BTreeSet::from([
            "configuration",
            "credentials",
            "terminal",
            "sandbox",
            "plugins",
            "sessions"
        ])
    );
    let left: Vec<_> = std::fs::read_dir(home.path()).unwrap().collect();
    assert!(left.is_empty(), "doctor wrote into the home: {left:?}");
    // The user file's place and layer are named even when it is absent.
    let user = &of(&doc, "config.user-file")[0];
    assert_eq!(user["severity"], "ok");
    assert_eq!(user["details"]["layer"], "user");
    assert_eq!(user["details"]["state"], "absent");
    assert_eq!(
        user["details"]["path"],
        home.path().join("config.kdl").display().to_string()
    );
    // With no credential, runs use the offline provider: worth knowing.
    let provider = &of(&doc, "credentials.provider")[0];
    assert_eq!(provider["severity"], "info");
    assert_eq!(provider["details"]["provider"], "mock");
    // Not a terminal here: said, not held against the setup.
    assert_eq!(of(&doc, "terminal.tty")[0]["severity"], "info");
    assert_eq!(
        of(&doc, "terminal.keyboard")[0]["details"]["state"],
        "unknown"
    );
    // Fast: well under a second.
    assert!(doc["elapsed_ms"].as_u64().unwrap() < 1000, "{doc:#}");
}

#[test]
fn unknown_keys_are_reported_with_their_file_and_line() {
    let home = Home::new();
    let file = home.path().join("config.kdl");
    // `tui` warns about keys it does not know.
    std::fs::write(&file, "model \"m\"\ntui {\n    colour \"dark\"\n}\n").unwrap();
    let (doc, _) = home.report(&[]);
    assert_eq!(home_exit(&doc), 1, "{doc:#}");
    let found = of(&doc, "config.user-file");
    assert_eq!(found.len(), 1, "{doc:#}");
    let f = found[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["diagnostic"]["code"], "config.unknown-key");
    assert_eq!(f["diagnostic"]["field"], "tui.colour");
    assert_eq!(
        f["diagnostic"]["surface"]["path"],
        file.display().to_string()
    );
    assert_eq!(f["diagnostic"]["surface"]["line"], 3);
    assert_eq!(f["diagnostic"]["surface"]["column"], 5);
    assert_eq!(f["details"]["layer"], "user");
    let out = home.doctor(&[], &[]);
    let report = text(&out.stdout);
    let line = report
        .lines()
        .find(|l| l.contains("unknown key `tui.colour`"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(line.trim_start().starts_with("warning"), "{line}");
    assert!(line.contains(&file.display().to_string()), "{line}");
    assert!(line.contains("line 3, column 5"), "{line}");
    assert!(report.contains("next: "), "{report}");

    // `session` rejects them: a run refuses to start, so it is an error;
    // the other layers are still checked.
    std::fs::write(&file, "session {\n  dri \"x\"\n}\n").unwrap();
    let (doc, _) = home.report(&[("SMITH_MODLE", "big")]);
    assert_eq!(home_exit(&doc), 2, "{doc:#}");
    let f = of(&doc, "config.user-file")[0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["diagnostic"]["surface"]["line"], 2);
    assert!(f["next"].as_str().unwrap().contains("`dir`"), "{f:#}");
    let env = of(&doc, "config.environment");
    assert_eq!(env[0]["severity"], "warning", "{doc:#}");
    assert_eq!(env[0]["diagnostic"]["code"], "config.unknown-env");
}

#[test]
fn an_untrusted_project_is_a_warning_naming_its_configuration() {
    let home = Home::new();
    let project = home.path().join("work/repo");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    std::fs::write(project.join(".smith/config.kdl"), "model \"m\"\n").unwrap();
    let (doc, _) = home.report_in(Some(&project), &[]);
    let f = &of(&doc, "config.project-file")[0];
    assert_eq!(f["severity"], "warning", "{doc:#}");
    assert_eq!(f["details"]["state"], "untrusted");
    assert_eq!(f["diagnostic"]["code"], "trust.untrusted-project");
    assert!(f["next"].as_str().unwrap().contains("smith trust"), "{f:#}");
    assert_eq!(home_exit(&doc), 1);
}

#[test]
fn a_key_is_reported_present_with_its_source_and_never_shown() {
    let home = Home::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .args(["auth", "set", "openai"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(STORED_SECRET.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let env = [("ANTHROPIC_API_KEY", ENV_SECRET)];
    for args in [&[][..], &["--json"][..]] {
        let out = home.doctor(args, &env);
        for stream in [&out.stdout, &out.stderr] {
            let s = text(stream);
            assert!(!s.contains(ENV_SECRET), "the key was shown:\n{s}");
            assert!(!s.contains(STORED_SECRET), "the key was shown:\n{s}");
        }
    }
    // The auth store holds keys in plain text: readable by others is a
    // warning naming the fix.
    let auth = home.path().join("data/auth.json");
    set_mode(&auth, 0o644);
    let (doc, _) = home.report(&env);
    let store = &of(&doc, "credentials.auth-store")[0];
    assert_eq!(
        store["diagnostic"]["code"], "doctor.file-not-private",
        "{doc:#}"
    );
    assert!(
        store["next"]
            .as_str()
            .unwrap()
            .contains(&format!("chmod 600 {}", auth.display())),
        "{store:#}"
    );
    assert_eq!(home_exit(&doc), 1);
    set_mode(&auth, 0o600);
    let (doc, _) = home.report(&env);
    assert!(problems(&doc).is_empty(), "{doc:#}");
    let slot = |provider: &str| {
        of(&doc, "credentials.slot")
            .into_iter()
            .find(|f| f["details"]["provider"] == provider)
            .unwrap_or_else(|| panic!("no {provider} slot in {doc:#}"))
            .clone()
    };
    let anthropic = slot("anthropic");
    assert_eq!(anthropic["severity"], "ok");
    assert_eq!(anthropic["details"]["state"], "ready");
    assert_eq!(
        anthropic["details"]["source"],
        "environment variable ANTHROPIC_API_KEY"
    );
    let openai = slot("openai");
    assert_eq!(openai["details"]["state"], "ready");
    assert!(
        openai["details"]["source"]
            .as_str()
            .unwrap()
            .starts_with("auth store "),
        "{openai:#}"
    );
    assert_eq!(slot("google")["details"]["state"], "missing");
    // The provider a run would use: the first with a credential.
    let provider = &of(&doc, "credentials.provider")[0];
    assert_eq!(provider["severity"], "ok");
    assert_eq!(provider["details"]["provider"], "anthropic");
    // A configured provider without a credential fails every run.
    let (doc, code) = home.report(&[("SMITH_PROVIDER", "google")]);
    let provider = &of(&doc, "credentials.provider")[0];
    assert_eq!(provider["severity"], "error", "{doc:#}");
    assert_eq!(provider["diagnostic"]["code"], "auth.missing");
    assert!(
        provider["next"]
            .as_str()
            .unwrap()
            .contains("GEMINI_API_KEY"),
        "{provider:#}"
    );
    assert_eq!(code, 2);
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn json_has_the_documented_fields() {
    let home = Home::new();
    let (doc, code) = home.report(&[]);
    let keys: BTreeSet<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "schema_version",
            "status",
            "exit_code",
            "counts",
            "elapsed_ms",
            "live",
            "findings"
        ])
    );
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["live"], false);
    assert_eq!(
        doc["status"],
        match code {
            0 => "ok",
            1 => "warning",
            _ => "error",
        }
    );
    let mut counted = [0u64; 4];
    // The check ids `smith doctor --help` documents.
    let help = text(&home.doctor(&["--help"], &[]).stdout);
    let ids: BTreeSet<String> = help
        .split("Check ids:")
        .nth(1)
        .and_then(|rest| rest.split("Not checked yet").next())
        .unwrap_or_else(|| panic!("{help}"))
        .split([',', ' ', '\n'])
        .map(|w| w.trim().trim_end_matches('.').to_owned())
        .filter(|w| !w.is_empty())
        .collect();
    assert!(ids.contains("sessions.file") && ids.len() > 20, "{ids:?}");
    for f in findings(&doc) {
        let obj = f.as_object().unwrap();
        let fields: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            BTreeSet::from([
                "area",
                "check",
                "severity",
                "what",
                "why",
                "next",
                "diagnostic",
                "details"
            ]),
            "{f:#}"
        );
        let severity = f["severity"].as_str().unwrap();
        let i = ["ok", "info", "warning", "error"]
            .iter()
            .position(|s| *s == severity)
            .unwrap_or_else(|| panic!("severity {severity}"));
        counted[i] += 1;
        let check = f["check"].as_str().unwrap();
        assert!(
            ids.contains(check),
            "check {check} is not documented in {ids:?}"
        );
        assert!(check.starts_with(match f["area"].as_str().unwrap() {
            "configuration" => "config.",
            "credentials" => "credentials.",
            "terminal" => "terminal.",
            "sandbox" => "sandbox.",
            "plugins" => "plugins.",
            "sessions" => "sessions.",
            other => panic!("area {other}"),
        }));
        assert!(!f["what"].as_str().unwrap().is_empty());
        assert!(f["details"].is_object());
        if severity != "ok" {
            assert!(!f["why"].as_str().unwrap().is_empty(), "{f:#}");
            assert!(!f["next"].as_str().unwrap().is_empty(), "{f:#}");
        }
        if matches!(severity, "warning" | "error") {
            assert_eq!(f["diagnostic"]["severity"], severity, "{f:#}");
            assert!(f["diagnostic"]["code"].is_string(), "{f:#}");
        } else {
            assert!(f["diagnostic"].is_null(), "{f:#}");
        }
    }
    for (i, name) in ["ok", "info", "warning", "error"].iter().enumerate() {
        assert_eq!(doc["counts"][name], counted[i], "{name}");
    }
}

#[test]
fn a_damaged_session_is_reported_as_repairable() {
    let home = Home::new();
    home.smith(&["eval", "--provider", "mock", "--name", "demo", "hello"]);
    let (doc, _) = home.report(&[]);
    assert!(problems(&doc).is_empty(), "{doc:#}");
    let store = &of(&doc, "sessions.store")[0];
    assert_eq!(store["details"]["sessions"], 1);
    assert_eq!(store["details"]["checked"], 1);
    assert!(store["details"]["bytes"].as_u64().unwrap() > 0);

    // A torn tail, as a crash in the middle of a write leaves.
    let sessions = home.path().join("data/sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "smith"))
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(&[40, 0, 0, 0, 1, 0]);
    std::fs::write(&file, &bytes).unwrap();
    let (doc, code) = home.report(&[]);
    assert_eq!(home_exit(&doc), 1, "{doc:#}");
    assert!(code >= 1);
    let damaged = of(&doc, "sessions.file");
    assert_eq!(damaged.len(), 1, "{doc:#}");
    let f = damaged[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["diagnostic"]["code"], "session.repairable");
    assert_eq!(f["details"]["repairable"], true);
    assert_eq!(f["details"]["torn_tail_bytes"], 6);
    assert_eq!(
        f["diagnostic"]["surface"]["path"],
        file.display().to_string()
    );
    assert!(
        f["next"]
            .as_str()
            .unwrap()
            .contains("`smith session repair demo`"),
        "{f:#}"
    );
    let listed = &of(&doc, "sessions.store")[0]["details"]["repairable"];
    assert_eq!(listed.as_array().unwrap().len(), 1, "{doc:#}");

    // What it says to run fixes it.
    home.smith(&["session", "repair", "demo"]);
    let (doc, _) = home.report(&[]);
    assert!(problems(&doc).is_empty(), "{doc:#}");
}

#[test]
fn an_effect_without_a_completion_is_reported() {
    let home = Home::new();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/session-dump/session.jsonl");
    home.smith(&[
        "session",
        "import",
        fixture.to_str().unwrap(),
        "--name",
        "fixture",
    ]);
    let (doc, _) = home.report(&[]);
    let open = of(&doc, "sessions.file");
    assert_eq!(open.len(), 1, "{doc:#}");
    assert_eq!(open[0]["diagnostic"]["code"], "session.open-effects");
    assert_eq!(open[0]["details"]["open_effects"], 1);
    assert_eq!(home_exit(&doc), 1);
}

#[test]
fn stale_plugin_cache_entries_are_found_and_cost_nothing() {
    let home = Home::new();
    let stale = home.path().join("cache/plugins/0000-another-build");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("old.cwasm"), vec![0u8; 4096]).unwrap();
    // A cache file of smith/mock, which this build uses where it lies in
    // the binary and never caches: an older build wrote it.
    let runtime = smith_plugins::Runtime::global().unwrap();
    assert!(runtime.loads_in_place(smith_plugins::builtin::MOCK));
    let mock = runtime.cache_file_of(&home.path().join("cache"), smith_plugins::builtin::MOCK);
    std::fs::create_dir_all(mock.parent().unwrap()).unwrap();
    std::fs::write(&mock, vec![0u8; 1024]).unwrap();
    let (doc, _) = home.report(&[]);
    assert!(problems(&doc).is_empty(), "{doc:#}");
    let cache = of(&doc, "plugins.cache");
    let summary = cache
        .iter()
        .find(|f| f["details"]["path"].is_string())
        .unwrap();
    assert_eq!(summary["details"]["files"], 2, "{summary:#}");
    // The built-ins come precompiled: none is missing from the cache.
    assert_eq!(summary["severity"], "ok", "{summary:#}");
    assert_eq!(summary["details"]["not_compiled"], serde_json::json!([]));
    assert_eq!(
        summary["details"]["precompiled"], summary["details"]["components"],
        "{summary:#}"
    );
    assert!(summary["details"]["precompiled"].as_u64().unwrap() >= 18);
    assert_eq!(summary["details"]["stale_bytes"], 4096 + 1024);
    assert_eq!(
        summary["details"]["stale"][0]["path"],
        stale.display().to_string()
    );
    assert_eq!(
        summary["details"]["stale"][1]["path"],
        mock.display().to_string()
    );
    let note = cache
        .iter()
        .find(|f| f["what"].as_str().unwrap().contains("stale"))
        .unwrap();
    assert_eq!(note["severity"], "info");
    assert!(
        note["next"]
            .as_str()
            .unwrap()
            .contains(&stale.display().to_string()),
        "{note:#}"
    );
    // Built-in plugins are listed with their grants.
    let permissions = of(&doc, "plugins.plugin")
        .into_iter()
        .find(|f| f["details"]["plugin"] == "smith/permissions")
        .unwrap();
    assert_eq!(
        permissions["details"]["capabilities"],
        serde_json::json!(["ui", "permissions"])
    );
}

/// A server shaped like Ollama's OpenAI-compatible endpoints: its one
/// model listed, and `chat` answering each chat request.
fn ollama(chat: impl Fn() -> http::Reply + Send + Sync + 'static) -> http::Server {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ollama");
    let listing = std::fs::read(data.join("models_one.json")).unwrap();
    http::Server::start(Box::new(move |_, seen| {
        if seen.path == "/v1/models" {
            return http::Reply::Json(200, Vec::new(), listing.clone());
        }
        chat()
    }))
}

#[test]
fn nothing_is_sent_without_live_and_live_sends_one_request() {
    let home = Home::new();
    let ping = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ollama/ping_tool_call.sse"),
    )
    .unwrap();
    let server = ollama(move || http::Reply::Paced(ping.clone(), Duration::from_millis(10)));
    let base = server.url("/v1");
    let env = [("OLLAMA_BASE_URL", base.as_str())];
    let (doc, _) = home.report(&env);
    assert!(
        server.seen().is_empty(),
        "doctor sent a request without --live"
    );
    let local = &of(&doc, "credentials.local-server")[0];
    assert_eq!(local["details"]["provider"], "ollama");
    assert!(of(&doc, "credentials.live").is_empty());
    assert_eq!(
        of(&doc, "credentials.provider")[0]["details"]["provider"],
        "ollama"
    );

    let out = home.doctor(&["--json", "--live"], &env);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["live"], true);
    let live = of(&doc, "credentials.live");
    assert_eq!(live.len(), 1, "{doc:#}");
    assert_eq!(live[0]["severity"], "ok", "{doc:#}");
    assert_eq!(live[0]["details"]["provider"], "ollama");
    assert!(
        live[0]["what"]
            .as_str()
            .unwrap()
            .starts_with("ollama answered in "),
        "{doc:#}"
    );
    let chats: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chats.len(), 1, "one request");
    assert_eq!(chats[0].body["tools"][0]["function"]["name"], "ping");
}

#[test]
fn a_live_request_that_fails_is_an_error() {
    let home = Home::new();
    let server = ollama(|| {
        http::Reply::Json(
            500,
            Vec::new(),
            br#"{"error":{"message":"model crashed","type":"server_error"}}"#.to_vec(),
        )
    });
    let base = server.url("/v1");
    let out = home.doctor(&["--json", "--live"], &[("OLLAMA_BASE_URL", &base)]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{doc:#}");
    let live = &of(&doc, "credentials.live")[0];
    assert_eq!(live["severity"], "error");
    assert_eq!(live["diagnostic"]["code"], "auth.live-failed");
    assert!(
        live["why"].as_str().unwrap().contains("model crashed"),
        "{live:#}"
    );
}

#[test]
fn exit_codes_match_severities() {
    let home = Home::new();
    // Only info findings (no terminal, no credential): 0.
    let (doc, code) = home.report(&[]);
    assert!(findings(&doc).iter().any(|f| f["severity"] == "info"));
    if !sandbox_warns(&doc) {
        assert_eq!(code, 0);
    }
    // A warning: 1.
    let (doc, code) = home.report(&[("SMITH_MODLE", "x")]);
    if !sandbox_warns(&doc) {
        assert_eq!(code, 1, "{doc:#}");
    }
    // An error: 2, whatever else warns.
    let (_, code) = home.report(&[("SMITH_MODLE", "x"), ("SMITH_NET_HEAD_TIMEOUT_S", "soon")]);
    assert_eq!(code, 2);
}

#[test]
fn suite_audit_every_diagnostic_is_complete_and_secret_free() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report =
        smith_diag::audit::audit_test_suite("suite_audit", &[ENV_SECRET, STORED_SECRET]).unwrap();
    assert!(report.passed(), "{:#?}", report.problems);
    for code in [
        "config.unknown-key",
        "session.repairable",
        "session.open-effects",
        "auth.missing",
    ] {
        assert!(
            report.codes.contains_key(code),
            "{code}: {:?}",
            report.codes
        );
    }
}
