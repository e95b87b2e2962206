//! Local model servers end to end: `smith --provider ollama` (and the other
//! local presets) against a local server shaped like Ollama's
//! OpenAI-compatible endpoints (`tests/data/ollama/`, see its README),
//! with no models.kdl and no key; the model listing from the server; the
//! diagnostics for a server that does not answer; and `smith auth check
//! --live` through the normal provider path.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[path = "common/http.rs"]
mod http;

use http::{Reply, Server};

const BIN: &str = env!("CARGO_BIN_EXE_smith");

fn data(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ollama")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Variables that would change which provider, server or key is used.
const CLEARED: [&str; 17] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "SMITH_PROVIDER",
    "SMITH_MODEL",
    "SMITH_OPENAI_API",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GEMINI_BASE_URL",
    "OPENAI_COMPATIBLE_BASE_URL",
    "OLLAMA_BASE_URL",
    "LLAMA_CPP_BASE_URL",
    "LMSTUDIO_BASE_URL",
    "VLLM_BASE_URL",
    "OLLAMA_HOST",
    "SMITH_CATALOG_REFRESH",
];

fn smith(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("SMITH_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(home)
        .stdin(Stdio::null());
    for var in CLEARED {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    smith(home, args, env).output().unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn events(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn assistant_messages(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .map(|e| e["message"].clone())
        .collect()
}

/// A server shaped like Ollama: `GET /v1/models` answers `listing`; each
/// `POST /v1/chat/completions` gets the next of `streams` (the last one
/// again after that).
fn ollama(listing: &'static str, streams: Vec<Vec<u8>>) -> Server {
    let listing = data(listing);
    Server::start(Box::new(move |_, seen| {
        if seen.path == "/v1/models" {
            return Reply::Json(200, Vec::new(), listing.clone());
        }
        if seen.path != "/v1/chat/completions" {
            return Reply::Status(404, "text/plain", b"404 page not found".to_vec());
        }
        // Chat requests so far (the listing is not one).
        let n = seen
            .body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        Reply::Stream(streams[n.min(streams.len() - 1)].clone())
    }))
}

fn chat_requests(server: &Server) -> Vec<http::Seen> {
    server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .collect()
}

/// A loopback address nothing listens on.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// "I have Ollama running": `--provider ollama --model qwen2.5-coder`,
/// no models.kdl, no key. The model calls `read` (a whole call without an
/// index, finish reason `stop`, as Ollama sends it), smith runs the tool,
/// sends the result, and the model's answer ends the run.
#[test]
fn an_ollama_model_runs_a_tool_using_turn_with_no_configuration() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("notes.txt"), "hello from the notes file\n").unwrap();
    let server = ollama(
        "models_two.json",
        vec![
            data("tool_call_without_index.sse"),
            data("final_answer.sse"),
        ],
    );
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "ollama",
            "--model",
            "qwen2.5-coder",
            "--no-session",
            "--json",
            "what do my notes say?",
        ],
        &[("OLLAMA_BASE_URL", &base)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let events = events(&out);
    let messages = assistant_messages(&events);
    assert_eq!(messages.len(), 2, "{}", describe(&out));
    assert_eq!(
        messages[0],
        json!({"role": "assistant", "content": [{"type": "tool_call", "id": "call_u4xq2k1c", "name": "read", "arguments": {"path": "notes.txt"}}], "stop": "tool_use"})
    );
    let answer = "notes.txt says: hello from the notes file.";
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [{"type": "text", "text": answer}], "stop": "end"})
    );
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["text"], answer);

    let chats = chat_requests(&server);
    assert_eq!(chats.len(), 2, "{}", describe(&out));
    for chat in &chats {
        assert_eq!(chat.body["model"], "qwen2.5-coder");
        assert_eq!(chat.body["stream"], true);
        assert_eq!(chat.header("authorization"), None, "no key is sent");
        let tools: Vec<&str> = chat.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(tools.contains(&"read"), "{tools:?}");
    }
    // The second request carries the call and the file's contents.
    let sent = chats[1].body["messages"].as_array().unwrap();
    let call = sent.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["id"], "call_u4xq2k1c");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read");
    let result = sent.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "call_u4xq2k1c");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("hello from the notes file"),
        "{result}"
    );
    let err = stderr(&out);
    assert!(
        err.contains(
            "smith: provider ollama (chosen with --provider), model ollama/qwen2.5-coder\n"
        ),
        "{err}"
    );
    assert_eq!(
        err.matches("smith: notice: tool use of `ollama/qwen2.5-coder` is assumed")
            .count(),
        1,
        "{err}"
    );
}

/// Without `--model`, a server with one model: that model, said so.
#[test]
fn without_a_model_the_only_model_the_server_serves_is_used() {
    let home = tempfile::tempdir().unwrap();
    let server = ollama("models_one.json", vec![data("final_answer.sse")]);
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "ollama",
            "--no-session",
            "--json",
            "hi",
        ],
        &[("OLLAMA_BASE_URL", &base)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen[0].path, "/v1/models", "the server is asked first");
    let chats = chat_requests(&server);
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0].body["model"], "qwen2.5-coder");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "smith: notice: model `qwen2.5-coder` chosen: it is the only model the ollama server at {base} serves"
        )),
        "{err}"
    );
}

/// Without `--model`, a server with several models: nothing is sent, and
/// the error lists them and says how to choose.
#[test]
fn without_a_model_several_served_models_are_listed_to_choose_from() {
    let home = tempfile::tempdir().unwrap();
    let server = ollama("models_two.json", vec![data("final_answer.sse")]);
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &["eval", "--provider", "ollama", "--no-session", "hi"],
        &[("OLLAMA_BASE_URL", &base)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        chat_requests(&server).is_empty(),
        "no model request was sent"
    );
    let err = stderr(&out);
    assert!(
        err.contains("serves 2 models") && err.contains("qwen2.5-coder, llama3.2:latest"),
        "{err}"
    );
    assert!(err.contains("--model qwen2.5-coder"), "{err}");
}

/// A local server that is not running: the diagnostic names the address,
/// how to start the server and how to point smith elsewhere — at startup
/// when the model list is needed, and after the retries when a request
/// cannot be sent.
#[test]
fn a_local_server_that_does_not_answer_is_named_with_how_to_start_it() {
    let home = tempfile::tempdir().unwrap();
    let url = closed_port_url();
    let out = run(
        home.path(),
        &["eval", "--provider", "ollama", "--no-session", "hi"],
        &[("OLLAMA_BASE_URL", &url)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "the ollama server at {url} did not say which models it serves"
        )),
        "{err}"
    );
    assert!(err.contains("ollama serve"), "{err}");
    assert!(err.contains("OLLAMA_BASE_URL"), "{err}");

    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "llama.cpp",
            "--base-url",
            &url,
            "--model",
            "local",
            "--no-session",
            "--json",
            "hi",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let error = events(&out)
        .into_iter()
        .find(|e| e["type"] == "error")
        .unwrap_or_else(|| panic!("no error event: {}", describe(&out)));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the llama.cpp server at {url} is not answering")),
        "{message}"
    );
    assert!(message.contains("llama-server -m MODEL.gguf"), "{message}");
    assert!(
        message.contains("--base-url URL or LLAMA_CPP_BASE_URL"),
        "{message}"
    );
}

/// Every local preset speaks to the server `--base-url` names, with no key
/// and no models.kdl, and takes the server's only model.
#[test]
fn every_local_preset_runs_against_the_server_base_url_names() {
    let home = tempfile::tempdir().unwrap();
    let server = ollama("models_one.json", vec![data("final_answer.sse")]);
    let base = server.url("/v1");
    for preset in ["ollama", "llama.cpp", "lmstudio", "vllm"] {
        let out = run(
            home.path(),
            &[
                "eval",
                "--provider",
                preset,
                "--base-url",
                &base,
                "--no-session",
                "hi",
            ],
            &[],
        );
        assert!(out.status.success(), "{preset}: {}", describe(&out));
        assert!(
            stderr(&out).contains(&format!(
                "smith: provider {preset} (chosen with --provider), model {preset}/qwen2.5-coder"
            )),
            "{preset}: {}",
            describe(&out)
        );
        assert!(
            stdout(&out).contains("notes.txt says: hello from the notes file."),
            "{preset}: {}",
            describe(&out)
        );
    }
    let chats = chat_requests(&server);
    assert_eq!(chats.len(), 4);
    assert!(chats.iter().all(|c| c.header("authorization").is_none()));
}

/// `OLLAMA_HOST` (as the `ollama` command reads it) gives Ollama its
/// address, and a set `OLLAMA_BASE_URL` chooses Ollama when nothing else
/// chooses a provider.
#[test]
fn ollama_is_found_where_ollama_host_says_and_chosen_by_its_base_url() {
    let home = tempfile::tempdir().unwrap();
    let server = ollama("models_one.json", vec![data("final_answer.sse")]);
    let base = server.url("/v1");
    let host = base
        .strip_prefix("http://")
        .and_then(|b| b.strip_suffix("/v1"))
        .unwrap()
        .to_owned();
    let out = run(
        home.path(),
        &["eval", "--provider", "ollama", "--no-session", "hi"],
        &[("OLLAMA_HOST", &host)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(chat_requests(&server).len(), 1);

    let out = run(
        home.path(),
        &["eval", "--no-session", "hi"],
        &[("OLLAMA_BASE_URL", &base)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        stderr(&out).contains(
            "smith: provider ollama (OLLAMA_BASE_URL is set), model ollama/qwen2.5-coder"
        ),
        "{}",
        describe(&out)
    );
    assert_eq!(chat_requests(&server).len(), 2);
}

/// `smith models --refresh --provider ollama` lists what the server's
/// `GET /v1/models` returns; refreshing every provider leaves the local
/// servers alone unless one is configured.
#[test]
fn the_model_list_comes_from_the_local_server() {
    let home = tempfile::tempdir().unwrap();
    let server = ollama("models_two.json", Vec::new());
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &["models", "--refresh", "--provider", "ollama"],
        &[("OLLAMA_BASE_URL", &base)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    assert!(text.contains("ollama: published 2 models"), "{text}");
    assert!(
        text.contains("ollama/qwen2.5-coder") && text.contains("ollama/llama3.2:latest"),
        "{text}"
    );
    assert_eq!(server.seen().len(), 1);
    assert_eq!(server.seen()[0].path, "/v1/models");

    let out = run(home.path(), &["models", "--refresh", "--json"], &[]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ollama = report["refresh"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["provider"] == "ollama")
        .unwrap()
        .clone();
    assert_eq!(ollama["outcome"], "skipped", "{ollama}");
    assert!(
        ollama["message"]
            .as_str()
            .unwrap()
            .contains("--provider ollama"),
        "{ollama}"
    );
    assert_eq!(server.seen().len(), 1, "the server was not asked again");
}

/// `smith auth check ollama --live`: one streaming request offering one
/// tool, through the normal provider path; the report says how long it
/// took, which model answered, and that streaming and tool use worked.
#[test]
fn a_live_check_reports_latency_model_streaming_and_tool_use() {
    let home = tempfile::tempdir().unwrap();
    let listing = data("models_one.json");
    let ping = data("ping_tool_call.sse");
    let server = Server::start(Box::new(move |_, seen| {
        if seen.path == "/v1/models" {
            return Reply::Json(200, Vec::new(), listing.clone());
        }
        Reply::Paced(ping.clone(), Duration::from_millis(30))
    }));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &["auth", "check", "ollama", "--live", "--base-url", &base],
        &[],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    assert!(text.starts_with("ok: ollama answered in "), "{text}");
    assert!(
        text.contains("  model: ollama/qwen2.5-coder (the server says qwen2.5-coder)"),
        "{text}"
    );
    assert!(text.contains("  streaming: yes, "), "{text}");
    assert!(
        text.contains("  tools: yes, the model called `ping` with {\"word\":\"pong\"}"),
        "{text}"
    );
    assert!(
        text.contains("  usage: 96 input, 17 output tokens"),
        "{text}"
    );
    let chats = chat_requests(&server);
    assert_eq!(chats.len(), 1, "one request");
    let body = &chats[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "qwen2.5-coder");
    assert_eq!(body["tools"].as_array().unwrap().len(), 1);
    assert_eq!(body["tools"][0]["function"]["name"], "ping");
}

/// The live check with a stored key against an OpenAI-compatible server:
/// the key goes out in the auth header and never into any output; a
/// refused key fails with exit 1, saying what to do.
#[test]
fn a_live_check_never_shows_the_key_and_fails_on_a_refused_one() {
    let home = tempfile::tempdir().unwrap();
    let key = "sk-compat-live-check-5e6f7a8b9c";
    let mut set = smith(home.path(), &["auth", "set", "openai-compatible"], &[]);
    let mut child = set
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), key.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());

    let ping = data("ping_tool_call.sse");
    let server = Server::start(Box::new(move |index, _| {
        if index == 0 {
            Reply::Paced(ping.clone(), Duration::from_millis(30))
        } else {
            Reply::Json(
                401,
                Vec::new(),
                br#"{"error":{"message":"Invalid API key","type":"invalid_request_error","code":"invalid_api_key"}}"#.to_vec(),
            )
        }
    }));
    let base = server.url("/v1");
    let args = [
        "auth",
        "check",
        "openai-compatible",
        "--live",
        "--base-url",
        &base,
        "--model",
        "qwen2.5-coder",
    ];
    let out = run(home.path(), &args, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    assert!(text.contains("  credential: from auth store "), "{text}");
    let seen = server.seen();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert!(!describe(&out).contains(key), "{}", describe(&out));

    let out = run(home.path(), &args, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr(&out);
    assert!(
        err.contains("the live check of provider `openai-compatible` (model openai-compatible/qwen2.5-coder) failed"),
        "{err}"
    );
    assert!(err.contains("Invalid API key"), "{err}");
    assert!(err.contains("smith auth set openai-compatible"), "{err}");
    assert!(!describe(&out).contains(key), "{}", describe(&out));
}

/// Without `--live` nothing is sent: the check resolves the credential
/// only, as before.
#[test]
fn a_check_without_live_sends_nothing() {
    let home = tempfile::tempdir().unwrap();
    let server = Server::start(Box::new(|_, _| {
        Reply::Status(500, "text/plain", b"must not be asked".to_vec())
    }));
    let base = server.url("/v1");
    let key = "sk-openai-check-0a1b2c3d";
    let out = run(
        home.path(),
        &["auth", "check", "openai"],
        &[("OPENAI_API_KEY", key), ("OPENAI_BASE_URL", &base)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        stdout(&out)
            .contains("ok: openai.api_key is an api-key from environment variable OPENAI_API_KEY"),
        "{}",
        describe(&out)
    );
    assert!(!describe(&out).contains(key));
    let out = run(home.path(), &["auth", "check", "ollama"], &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        stdout(&out).contains("takes no credential"),
        "{}",
        describe(&out)
    );
    assert!(server.seen().is_empty(), "no request without --live");
}

/// A live check against a vendor, when its key is set; says on standard
/// error that it was skipped otherwise.
#[test]
fn live_check_against_a_vendor_when_a_key_is_set() {
    let vendors = [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("google", "GEMINI_API_KEY"),
    ];
    let mut ran = false;
    for (vendor, var) in vendors {
        let Some(key) = std::env::var(var).ok().filter(|k| !k.is_empty()) else {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("skipped: {var} not set (live check of {vendor})\n").as_bytes(),
            );
            continue;
        };
        ran = true;
        let home = tempfile::tempdir().unwrap();
        let out = run(
            home.path(),
            &["auth", "check", vendor, "--live"],
            &[(var, &key)],
        );
        assert!(!describe(&out).contains(&key), "the key never appears");
        assert!(out.status.success(), "{vendor}: {}", describe(&out));
        assert!(
            stdout(&out).starts_with(&format!("ok: {vendor} answered in ")),
            "{}",
            describe(&out)
        );
    }
    if !ran {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: no vendor key set, no live check was made\n",
        );
    }
}
