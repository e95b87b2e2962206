//! The catalog refresh end to end: `smith models --refresh` as a process
//! against a local HTTP server serving model listings (the hand-written
//! bodies in `providers/tests/fixtures/listings/`), the catalog cache it
//! writes and later runs read offline, failures that keep the previous
//! snapshot, configuration that a refresh never overwrites, and the
//! background refresh (`catalog.refresh = "background"`) that startup never
//! waits for.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_smith");

fn listing(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("providers/tests/fixtures/listings")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One request as the server saw it: its target and headers.
#[derive(Clone, Debug)]
struct Seen {
    target: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers: a status and a JSON body, or nothing at all
/// (the connection stays open and silent for up to 60 s).
enum Reply {
    Json(u16, Vec<u8>),
    Silent,
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A local HTTP/1.1 server: one connection at a time, `Connection: close`.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(handler: Box<Handler>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let Some(request) = read_request(&stream) else {
                    continue;
                };
                log.lock().unwrap().push(request.clone());
                match handler(&request) {
                    Reply::Json(status, body) => {
                        let _ = respond(stream, status, &body);
                    }
                    Reply::Silent => {
                        std::thread::spawn(move || {
                            let mut stream = stream;
                            let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
                            let mut buf = [0u8; 64];
                            let _ = stream.read(&mut buf);
                        });
                    }
                }
            }
        });
        Server { port, seen }
    }

    fn base(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Some(Seen { target, headers })
}

fn respond(mut stream: TcpStream, status: u16, body: &[u8]) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

/// `smith args` with `SMITH_HOME=home` and no provider variables but `vars`.
fn smith(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    command(home, vars, args).output().unwrap()
}

fn command(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("SMITH_")
            || k.ends_with("_API_KEY")
            || k.ends_with("_BASE_URL")
            || k.to_ascii_lowercase().ends_with("_proxy")
        {
            cmd.env_remove(k);
        }
    }
    cmd.env("SMITH_HOME", home)
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .current_dir(home)
        .envs(vars.iter().copied())
        .args(args);
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

fn cache_file(home: &Path, provider: &str) -> PathBuf {
    home.join("cache")
        .join("catalog")
        .join(format!("{provider}.json"))
}

/// The `models` entry of `provider/id` in `smith models --json` output.
fn model<'a>(json: &'a Value, reference: &str) -> Option<&'a Value> {
    json["models"].as_array().unwrap().iter().find(|e| {
        format!(
            "{}/{}",
            e["model"]["provider"].as_str().unwrap(),
            e["model"]["id"].as_str().unwrap()
        ) == reference
    })
}

const SONNET: &str = "openai-compatible/anthropic/claude-sonnet-4.5";
const QWEN: &str = "openai-compatible/qwen2.5-coder:32b";

#[test]
fn an_openai_compatible_refresh_publishes_caches_and_serves_later_runs_offline() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start(Box::new(|seen| {
        if seen.target == "/v1/models" {
            Reply::Json(200, listing("openrouter.json"))
        } else {
            Reply::Json(
                404,
                b"{\"error\": {\"message\": \"no such path\"}}".to_vec(),
            )
        }
    }));
    let base = server.base("/v1");
    let vars = [("OPENAI_COMPATIBLE_BASE_URL", base.as_str())];
    let o = smith(
        home.path(),
        &vars,
        &["models", "--refresh", "--provider", "openai-compatible"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("openai-compatible: published 2 models\n"),
        "{}",
        show(&o)
    );
    // The listing with provenance: the refreshed values and when.
    assert!(out.contains(SONNET), "{out}");
    assert!(out.contains("1000000"), "{out}");
    assert!(
        out.contains("openai-compatible: 2 models refreshed in this run at "),
        "{out}"
    );
    let sources = out
        .lines()
        .find(|l| l.starts_with(&format!("{SONNET}: ")))
        .unwrap();
    assert!(sources.contains("context=refresh@"), "{sources}");
    // No credential is configured, so none is sent.
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("authorization"), None);

    // The cache holds what was published, with the time.
    let cached: Value = serde_json::from_slice(
        &std::fs::read(cache_file(home.path(), "openai-compatible")).unwrap(),
    )
    .unwrap();
    assert!(cached["refreshed_at"].as_u64().is_some());
    assert_eq!(cached["models"].as_array().unwrap().len(), 2);

    // A later run without the server, and without asking, lists the cached
    // snapshot with its provenance.
    drop(server);
    let o = smith(
        home.path(),
        &[],
        &["models", "--provider", "openai-compatible", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    let sonnet = model(&json, SONNET).unwrap();
    assert_eq!(sonnet["model"]["context"], 1_000_000);
    assert_eq!(sonnet["model"]["max_output"], 64_000);
    assert_eq!(sonnet["model"]["tools"], true);
    assert_eq!(sonnet["model"]["pricing"]["input"], 3.0);
    assert_eq!(sonnet["provenance"]["context"], "cache");
    assert_eq!(json["runtime"]["openai-compatible"]["source"], "cache");
    assert_eq!(json["runtime"]["openai-compatible"]["models"], 2);
    assert_eq!(
        json["runtime"]["openai-compatible"]["refreshed_at"],
        cached["refreshed_at"]
    );
    let auto = model(&json, "openai-compatible/openrouter/auto").unwrap();
    assert!(
        auto["model"].get("pricing").is_none(),
        "-1 prices stay unknown: {auto}"
    );
    assert!(auto["model"].get("max_output").is_none());
}

#[test]
fn a_failing_refresh_keeps_the_previous_snapshot_and_says_why() {
    let home = tempfile::tempdir().unwrap();
    let fail = Arc::new(Mutex::new(false));
    let failing = fail.clone();
    let server = Server::start(Box::new(move |_| {
        if *failing.lock().unwrap() {
            Reply::Json(503, b"upstream unavailable".to_vec())
        } else {
            Reply::Json(200, listing("ollama.json"))
        }
    }));
    let base = server.base("/v1");
    let vars = [("OPENAI_COMPATIBLE_BASE_URL", base.as_str())];
    let args = ["models", "--refresh", "--provider", "openai-compatible"];
    let o = smith(home.path(), &vars, &args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let before = std::fs::read(cache_file(home.path(), "openai-compatible")).unwrap();

    *fail.lock().unwrap() = true;
    let o = smith(home.path(), &vars, &args);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let out = text(&o.stdout);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("openai-compatible: failed: could not refresh the model list"),
        "{out}"
    );
    assert!(first.contains("HTTP 503"), "{first}");
    assert!(
        first.contains("bundled or cached catalog stays in use"),
        "{first}"
    );
    // The cached snapshot is still listed, and the cache file is untouched.
    assert!(out.contains("openai-compatible/qwen2.5-coder:32b"), "{out}");
    assert!(
        out.contains("openai-compatible: 2 models from the catalog cache, refreshed at "),
        "{out}"
    );
    assert_eq!(
        std::fs::read(cache_file(home.path(), "openai-compatible")).unwrap(),
        before
    );
    // The same, as JSON.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let o = smith(home.path(), &vars, &json_args);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["refresh"][0]["outcome"], "failed");
    assert!(model(&json, "openai-compatible/llama3.2:latest").is_some());
}

#[test]
fn configuration_wins_over_a_refresh_and_the_disagreement_is_shown() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("models.kdl"),
        "provider \"openai-compatible\" {\n    model \"qwen2.5-coder:32b\" {\n        context 5000\n        tools #false\n    }\n}\n",
    )
    .unwrap();
    let server = Server::start(Box::new(|_| {
        Reply::Json(
            200,
            br#"{"object": "list", "data": [{"id": "qwen2.5-coder:32b", "context_length": 32768, "top_provider": {"max_completion_tokens": 8192}, "supported_parameters": ["tools"]}]}"#.to_vec(),
        )
    }));
    let base = server.base("/v1");
    let vars = [("OPENAI_COMPATIBLE_BASE_URL", base.as_str())];
    let o = smith(
        home.path(),
        &vars,
        &[
            "models",
            "--refresh",
            "--provider",
            "openai-compatible",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    let qwen = model(&json, QWEN).unwrap();
    assert_eq!(qwen["model"]["context"], 5000);
    assert_eq!(qwen["model"]["tools"], false);
    assert_eq!(qwen["provenance"]["context"], "user");
    assert_eq!(qwen["provenance"]["max-output"], "refresh");
    let conflicts = json["conflicts"].as_array().unwrap();
    let context = conflicts
        .iter()
        .find(|c| c["model"] == QWEN && c["field"] == "context")
        .unwrap_or_else(|| panic!("{conflicts:?}"));
    assert_eq!(context["kept"], serde_json::json!(["user", "5000"]));
    assert_eq!(context["ignored"], serde_json::json!(["refresh", "32768"]));
    // The user's file is not touched.
    assert!(
        std::fs::read_to_string(home.path().join("models.kdl"))
            .unwrap()
            .contains("context 5000")
    );
    // In text, the conflict is a warning naming both sources.
    let o = smith(
        home.path(),
        &[],
        &["models", "--provider", "openai-compatible"],
    );
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "context of `openai-compatible/qwen2.5-coder:32b` is 5000 per user but 32768 per cache"
        ),
        "{}",
        show(&o)
    );
}

#[test]
fn an_anthropic_refresh_follows_pages_with_the_credential_and_reports_bundled_conflicts() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start(Box::new(|seen| {
        if seen.target == "/v1/models?limit=1000" {
            Reply::Json(200, listing("anthropic-page-1.json"))
        } else if seen.target == "/v1/models?limit=1000&after_id=claude-sonnet-4-5-20250929" {
            // A second page that disagrees with the bundled review.
            Reply::Json(
                200,
                br#"{"data": [{"type": "model", "id": "claude-haiku-4-5-20251001", "display_name": "Claude Haiku 4.5", "created_at": "2025-10-01T00:00:00Z", "max_tokens": 8192}], "has_more": false, "first_id": "claude-haiku-4-5-20251001", "last_id": "claude-haiku-4-5-20251001"}"#.to_vec(),
            )
        } else {
            Reply::Json(404, br#"{"type": "error", "error": {"type": "not_found_error", "message": "unexpected"}}"#.to_vec())
        }
    }));
    let base = server.base("");
    let key = "sk-ant-catalog-refresh-test-0042";
    let vars = [
        ("ANTHROPIC_BASE_URL", base.as_str()),
        ("ANTHROPIC_API_KEY", key),
    ];
    let o = smith(
        home.path(),
        &vars,
        &["models", "--refresh", "--provider", "anthropic"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("anthropic: published 3 models\n"),
        "{}",
        show(&o)
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for s in &seen {
        assert_eq!(s.header("x-api-key"), Some(key));
        assert_eq!(s.header("anthropic-version"), Some("2023-06-01"));
    }
    assert!(!out.contains(key) && !text(&o.stderr).contains(key));
    // A model the bundled catalog does not list arrives with what the
    // listing states; the bundled review keeps its value in a conflict.
    assert!(out.contains("anthropic/claude-opus-4-1-20250805"), "{out}");
    let err = text(&o.stderr);
    assert!(
        err.contains("max-output of `anthropic/claude-haiku-4-5-20251001` is 64000 per bundled but 8192 per refresh"),
        "{}",
        show(&o)
    );
}

#[test]
fn providers_that_cannot_be_asked_are_skipped_with_the_reason() {
    let home = tempfile::tempdir().unwrap();
    let o = smith(home.path(), &[], &["models", "--refresh"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().take(4).collect();
    assert!(
        lines[0].starts_with("anthropic: skipped: no credentials (set ANTHROPIC_API_KEY"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("openai: skipped: no credentials (set OPENAI_API_KEY"),
        "{out}"
    );
    assert!(
        lines[2]
            .starts_with("google: skipped: no credentials (set GEMINI_API_KEY or GOOGLE_API_KEY"),
        "{out}"
    );
    assert!(
        lines[3]
            .starts_with("openai-compatible: skipped: no base URL (set OPENAI_COMPATIBLE_BASE_URL"),
        "{out}"
    );
    assert!(!home.path().join("cache").join("catalog").exists());
}

#[test]
fn startup_never_waits_for_a_background_refresh() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start(Box::new(|_| Reply::Silent));
    let base = server.base("/v1");
    let vars = [
        ("OPENAI_COMPATIBLE_BASE_URL", base.as_str()),
        ("SMITH_CATALOG_REFRESH", "background"),
    ];
    let started = Instant::now();
    let o = smith(home.path(), &vars, &["eval", "--provider", "mock", "hello"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // The server never answers and the head timeout is 120 s: finishing
    // well before it means eval did not wait for the refresh.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "eval took {:?}",
        started.elapsed()
    );
    assert!(!cache_file(home.path(), "openai-compatible").exists());
}

#[test]
fn a_background_refresh_writes_the_cache_while_a_session_runs() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start(Box::new(|_| Reply::Json(200, listing("ollama.json"))));
    let base = server.base("/v1");
    let vars = [
        ("OPENAI_COMPATIBLE_BASE_URL", base.as_str()),
        ("SMITH_CATALOG_REFRESH", "background"),
    ];
    // `smith rpc` keeps running while its standard input is open.
    let mut child = command(home.path(), &vars, &["rpc", "--provider", "mock"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let file = cache_file(home.path(), "openai-compatible");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(child.stdin.take());
    let _ = child.wait();
    let cached: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(cached["models"][0]["id"], "qwen2.5-coder:32b");
    assert_eq!(server.seen().len(), 1);
}
