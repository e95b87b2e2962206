//! Real providers end to end: `smith eval` (and `smith rpc`) as a process against a local
//! HTTP server that replays recorded vendor streams
//! (`providers/tests/fixtures/`), checking what the server receives and
//! what smith assembles; plus live smoke tests that run when a vendor's key
//! is set and say on standard error that they were skipped otherwise.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "common/http.rs"]
mod http;

use http::{Reply, Server};

const BIN: &str = env!("CARGO_BIN_EXE_smith");

fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("providers/tests/fixtures")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text and tool calls the golden events of a recording hold.
fn golden(rel: &str) -> (String, Vec<(String, String, String)>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("providers/tests/golden")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let event: Value = serde_json::from_str(line).unwrap();
        match event["type"].as_str().unwrap() {
            "text_delta" => out.push_str(event["text"].as_str().unwrap()),
            "tool_call_start" => calls.push((
                event["id"].as_str().unwrap().into(),
                event["name"].as_str().unwrap().into(),
                String::new(),
            )),
            "tool_call_delta" => calls
                .last_mut()
                .unwrap()
                .2
                .push_str(event["arguments"].as_str().unwrap()),
            _ => {}
        }
    }
    (out, calls)
}

const CHAT_TEXT: &str =
    "openai-chat/7e5ea4d12e7cc064399b6631415e65923f182256b6e6b752950a3aaa2ad2320a";
const CHAT_TOOL: &str =
    "openai-chat/2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7";

/// A private home with a models.kdl describing the local models.
fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("models.kdl"),
        r#"
provider "openai-compatible" {
    model "test-model" {
        tools #true
    }
    model "busy-model" {
        tools #true
    }
    model "openai/gpt-oss-120b" {
        tools #true
    }
    model "no-tools-model" {
        tools #false
    }
}
group "main" "openai-compatible/busy-model" "openai-compatible/test-model"
"#,
    )
    .unwrap();
    dir
}

const VENDOR_VARS: [&str; 16] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "SMITH_PROVIDER",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GEMINI_BASE_URL",
    "OPENAI_COMPATIBLE_BASE_URL",
    "SMITH_MODEL",
    "SMITH_OPENAI_API",
    "OLLAMA_BASE_URL",
    "LLAMA_CPP_BASE_URL",
    "LMSTUDIO_BASE_URL",
    "VLLM_BASE_URL",
    "SMITH_THINKING",
];

fn smith(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("SMITH_HOME", home)
        .env("NO_COLOR", "1")
        .current_dir(home)
        .stdin(Stdio::null());
    for var in VENDOR_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Default dispositions, whatever the test runner inherited (a
            // background job starts with SIGINT and SIGQUIT ignored, and
            // smith keeps an ignored signal ignored).
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    smith(home, args, env).output().unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
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

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Serves `first()` to the first request and the recorded text stream to
/// every later one; runs `smith eval` with `test-model` and `prompt` against
/// it. Returns the run's output and every request the server saw.
fn first_then_text(
    first: impl Fn() -> Reply + Send + Sync + 'static,
    prompt: &str,
) -> (Output, Vec<http::Seen>) {
    serve(
        move |index| {
            if index == 0 {
                first()
            } else {
                Reply::Stream(fixture(&format!("{CHAT_TEXT}.bin")))
            }
        },
        "test-model",
        prompt,
        &[],
    )
}

/// Serves the recorded text stream to every request; runs `smith eval`
/// with `model`, `prompt` and `env` against it.
fn text_run(model: &str, prompt: &str, env: &[(&str, &str)]) -> (Output, Vec<http::Seen>) {
    serve(
        |_| Reply::Stream(fixture(&format!("{CHAT_TEXT}.bin"))),
        model,
        prompt,
        env,
    )
}

/// Serves `reply(index)` to each request; runs `smith eval` with `model`,
/// `prompt` and `env` against it in a fresh home.
fn serve(
    reply: impl Fn(usize) -> Reply + Send + Sync + 'static,
    model: &str,
    prompt: &str,
    env: &[(&str, &str)],
) -> (Output, Vec<http::Seen>) {
    let home = home();
    let server = Server::start(Box::new(move |index, _| reply(index)));
    let base = server.url("/v1");
    let out = run(home.path(), &compatible_args(&base, model, prompt), env);
    (out, server.seen())
}

fn compatible_args<'a>(base: &'a str, model: &'a str, prompt: &'a str) -> Vec<&'a str> {
    vec![
        "eval",
        "--provider",
        "openai-compatible",
        "--base-url",
        base,
        "--model",
        model,
        "--no-session",
        "--json",
        prompt,
    ]
}

#[test]
fn a_recorded_text_stream_becomes_the_assistant_message() {
    let (out, seen) = text_run("test-model", "weather?", &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    let events = events(&out);
    let messages = assistant_messages(&events);
    assert_eq!(messages.len(), 1, "{}", describe(&out));
    assert_eq!(
        messages[0],
        json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stop": "end"})
    );
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["text"], text);
    assert_eq!(result["usage"]["input"], 79);
    assert_eq!(result["usage"]["output"], 14);

    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["model"], "test-model");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(
        seen[0].header("authorization"),
        None,
        "no key, no auth header"
    );
    let messages = seen[0].body["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "weather?");
    assert!(
        seen[0].body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "the built-in tools are offered to a model that advertises tool use"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("provider openai-compatible (chosen with --provider), model openai-compatible/test-model"),
        "{stderr}"
    );
}

/// `--provider openai-compatible --model openai/gpt-oss-120b --base-url
/// LOCAL`: the `/` belongs to the model id (as OpenRouter, Groq and local
/// servers name models), so the request goes to the chosen server with the
/// id whole. OpenAI's key is set and OpenAI's base URL points at a second
/// local server that must see nothing, and no request carries the key.
#[test]
fn an_explicit_provider_is_never_replaced_by_a_slash_in_the_model_id() {
    let trap_body = fixture(&format!("{CHAT_TEXT}.bin"));
    let trap = Server::start(Box::new(move |_, _| Reply::Stream(trap_body.clone())));
    let trap_base = trap.url("/v1");
    let key = "sk-openai-must-not-leave-1f2e3d";
    let (out, seen) = text_run(
        "openai/gpt-oss-120b",
        "weather?",
        &[("OPENAI_API_KEY", key), ("OPENAI_BASE_URL", &trap_base)],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        trap.seen().is_empty(),
        "OpenAI's server was asked: {:?}",
        trap.seen().len()
    );
    assert_eq!(seen.len(), 1, "{}", describe(&out));
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["model"], "openai/gpt-oss-120b");
    assert_eq!(
        seen[0].header("authorization"),
        None,
        "OpenAI's key is not sent"
    );
    assert!(
        seen[0].body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "models.kdl declares the id with `/` and its tool use"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "provider openai-compatible (chosen with --provider), model openai-compatible/openai/gpt-oss-120b"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(key) && !String::from_utf8_lossy(&out.stdout).contains(key));
}

/// Without --provider, a provider prefix in the model picks the provider,
/// and `--base-url` (which belongs to the provider chosen otherwise) is
/// refused rather than ignored: nothing is sent anywhere.
#[test]
fn a_base_url_for_one_provider_is_not_used_for_a_model_of_another() {
    let home = home();
    let trap_body = fixture(&format!("{CHAT_TEXT}.bin"));
    let trap = Server::start(Box::new(move |_, _| Reply::Stream(trap_body.clone())));
    let local_body = fixture(&format!("{CHAT_TEXT}.bin"));
    let local = Server::start(Box::new(move |_, _| Reply::Stream(local_body.clone())));
    let trap_base = trap.url("/v1");
    let local_base = local.url("/v1");
    let out = run(
        home.path(),
        &[
            "eval",
            "--base-url",
            &local_base,
            "--model",
            "openai/gpt-4o",
            "--no-session",
            "--json",
            "weather?",
        ],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-0001"),
            ("OPENAI_API_KEY", "sk-openai-test-0002"),
            ("OPENAI_BASE_URL", &trap_base),
        ],
    );
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(trap.seen().is_empty(), "a request went to OpenAI's server");
    assert!(
        local.seen().is_empty(),
        "a request went to the --base-url server"
    );
    // With --json the error is a JSON record on standard output.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("--base-url was given for provider anthropic")
            && said.contains("the model routes to openai/gpt-4o")
            && said.contains("pass --provider openai"),
        "{said}"
    );
    assert!(!said.contains("sk-ant-test-0001") && !said.contains("sk-openai-test-0002"));
}

/// A 429 whose JSON body carries the vendor's error and whose headers say
/// `Retry-After: 1`: smith tells the user it waits, waits that long, and
/// sends again to the same target, which answers.
#[test]
fn a_rate_limit_is_retried_after_the_wait_its_headers_ask_for() {
    let limited = br#"{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error","code":"rate_limit_exceeded"}}"#;
    let (out, seen) = first_then_text(
        move || Reply::Json(429, vec![("retry-after", "1".to_owned())], limited.to_vec()),
        "weather?",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(seen.len(), 2, "{}", describe(&out));
    let gap = seen[1].at.duration_since(seen[0].at);
    assert!(
        gap >= Duration::from_millis(950),
        "sent again after {gap:?}, not after the 1 s asked for"
    );
    let events = events(&out);
    let retries: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "provider_retry")
        .collect();
    assert_eq!(retries.len(), 1, "{}", describe(&out));
    assert_eq!(retries[0]["wait_ms"], 1000);
    assert_eq!(retries[0]["error"]["kind"], "rate_limit");
    assert_eq!(retries[0]["error"]["retry_after_ms"], 1000);
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    assert_eq!(events.last().unwrap()["text"], text);
}

/// A wait longer than smith waits on its own (one minute) with no other
/// target: the run fails at once, saying how long the provider asked for,
/// and sends nothing more. Human output announces nothing it will not do.
#[test]
fn a_rate_limit_asking_for_a_long_wait_fails_at_once_and_says_so() {
    let home = home();
    let limited =
        br#"{"error":{"message":"Rate limit reached for tokens","type":"rate_limit_error"}}"#;
    let server = Server::start(Box::new(move |_, _| {
        Reply::Json(
            429,
            vec![
                ("x-ratelimit-remaining-tokens", "0".to_owned()),
                ("x-ratelimit-reset-tokens", "2m0s".to_owned()),
            ],
            limited.to_vec(),
        )
    }));
    let base = server.url("/v1");
    let started = Instant::now();
    let mut args = compatible_args(&base, "test-model", "weather?");
    args.retain(|a| *a != "--json");
    let out = run(home.path(), &args, &[]);
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(started.elapsed() < Duration::from_secs(30), "it waited");
    assert_eq!(server.seen().len(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the provider asks to wait 120 s, longer than smith waits on its own"),
        "{stderr}"
    );
    assert!(!stderr.contains("sending again"), "{stderr}");
}

/// The connection is cut after part of the answer streamed: the text the
/// user saw stays in the message (stop reason error), in the result and in
/// the session, and the usage no report gave stays unknown, never 0.
#[test]
fn text_that_arrived_before_a_connection_cut_is_kept() {
    let home = home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    // Cut just after the event that carries the fifth content delta.
    let cut = after_deltas(&body, 5);
    assert!(
        cut < body.len() - 100,
        "the cut leaves most of the stream out"
    );
    let server = Server::start(Box::new(move |_, _| Reply::Cut(body.clone(), cut)));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &compatible_args(&base, "test-model", "weather?"),
        &[],
    );
    assert!(!out.status.success(), "{}", describe(&out));
    assert_eq!(
        server.seen().len(),
        1,
        "content arrived: nothing is sent twice"
    );
    let events = events(&out);
    let messages = assistant_messages(&events);
    assert_eq!(messages.len(), 1, "{}", describe(&out));
    assert_eq!(messages[0]["stop"], "error");
    let kept = messages[0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        !kept.is_empty() && text.starts_with(kept),
        "kept {kept:?} of {text:?}"
    );
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["text"], kept);
    assert!(result["usage"]["input"].is_null(), "{result}");
    assert!(
        result["cost"].is_null() || result["cost"] != 0.0,
        "{result}"
    );
}

/// Where the event carrying the `n`th content delta of a recorded Chat
/// Completions stream ends (after its blank line).
fn after_deltas(body: &[u8], n: usize) -> usize {
    let recorded = String::from_utf8_lossy(body);
    let mut at = 0;
    for _ in 0..n {
        at += recorded[at..]
            .find("\"content\":\"")
            .unwrap_or_else(|| panic!("the recording has {n} content deltas"))
            + 1;
    }
    at + recorded[at..]
        .find("\n\n")
        .expect("events end with a blank line")
        + 2
}

/// A response that runs past the HTTP engine's 64 MiB body bound after
/// some text: the text that arrived is kept in the failed turn (message,
/// result), nothing is sent again, and usage that was never stated stays
/// unknown.
#[test]
fn text_that_arrived_before_the_response_bound_is_kept() {
    let home = home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    let cut = after_deltas(&body, 3);
    // Then SSE comment lines, which carry nothing, past the bound.
    let mut stream = body[..cut].to_vec();
    let pad = format!(": {}\n", "x".repeat(1021));
    while stream.len() <= 65 << 20 {
        stream.extend_from_slice(pad.as_bytes());
    }
    let len = stream.len();
    let server = Server::start(Box::new(move |_, _| Reply::Cut(stream.clone(), len)));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &compatible_args(&base, "test-model", "weather?"),
        &[],
    );
    assert!(!out.status.success(), "{}", describe(&out));
    assert_eq!(
        server.seen().len(),
        1,
        "content arrived: nothing is sent twice"
    );
    let events = events(&out);
    let error = events
        .iter()
        .find(|e| e["type"] == "error")
        .unwrap_or_else(|| panic!("no error event: {}", describe(&out)));
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("67108864-byte body bound"), "{message}");
    assert!(
        !message.contains("Limits::"),
        "says what a user can do: {message}"
    );
    let messages = assistant_messages(&events);
    assert_eq!(messages.len(), 1, "{}", describe(&out));
    assert_eq!(messages[0]["stop"], "error");
    let kept = messages[0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        !kept.is_empty() && text.starts_with(kept),
        "kept {kept:?} of {text:?}"
    );
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["text"], kept);
    assert!(result["usage"]["output"].is_null(), "{result}");
    assert!(result["cost"].is_null(), "{result}");
}

/// The connection is cut before any content, on every attempt: usage each
/// attempt's stream stated first (Anthropic's `message_start`) counts in
/// the result; a stream that stated none leaves the result's usage and cost
/// unknown, never 0.
#[test]
fn usage_of_a_connection_cut_before_content_is_as_stated_or_unknown() {
    // Stated: cut right after the message_start event.
    let home = home();
    let body = fixture("anthropic/basic_response.txt");
    let recorded = String::from_utf8_lossy(&body).into_owned();
    let cut = recorded.find("\n\n").expect("events end with a blank line") + 2;
    assert!(recorded[..cut].contains("\"input_tokens\":11"));
    let server = Server::start(Box::new(move |_, _| Reply::Cut(body.clone(), cut)));
    let out = run(
        home.path(),
        &["eval", "--no-session", "--json", "hello"],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-cut"),
            ("ANTHROPIC_BASE_URL", &server.url("")),
        ],
    );
    assert!(!out.status.success(), "{}", describe(&out));
    let result = events(&out).last().cloned().unwrap();
    assert_eq!(result["type"], "result", "{}", describe(&out));
    // Every attempt was cut the same way and retried; each stated (and
    // spent) its message_start usage.
    let attempts = server.seen().len() as u64;
    assert_eq!(attempts, 4, "a broken stream is tried four times");
    assert_eq!(result["usage"]["input"], 11 * attempts, "{result}");
    assert_eq!(result["usage"]["output"], attempts, "{result}");
    // Unstated: cut inside the first event.
    let fresh = self::home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    let server = Server::start(Box::new(move |_, _| Reply::Cut(body.clone(), 10)));
    let base = server.url("/v1");
    let out = run(
        fresh.path(),
        &compatible_args(&base, "test-model", "weather?"),
        &[],
    );
    assert!(!out.status.success(), "{}", describe(&out));
    let result = events(&out).last().cloned().unwrap();
    assert_eq!(result["type"], "result", "{}", describe(&out));
    for field in ["input", "output", "cache_read", "cache_write"] {
        assert!(result["usage"][field].is_null(), "{field}: {result}");
    }
    assert!(result["cost"].is_null(), "{result}");
}

#[test]
fn smith_rpc_prompts_go_to_the_chosen_live_provider() {
    let home = home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
    let base = server.url("/v1");
    let mut child = smith(
        home.path(),
        &[
            "rpc",
            "--provider",
            "openai-compatible",
            "--base-url",
            &base,
            "--model",
            "test-model",
        ],
        &[],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize"}}
{{"jsonrpc":"2.0","id":2,"method":"prompt","params":{{"text":"weather?"}}}}
{{"jsonrpc":"2.0","id":3,"method":"wait_settled"}}"#
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut records = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| {
                panic!("no answer to wait_settled ({e}); got so far: {records:#?}")
            });
        let record: Value = serde_json::from_str(&line).unwrap();
        let done = record["id"] == 3;
        records.push(record);
        if done {
            break;
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "status {status:?}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("provider openai-compatible (chosen with --provider), model openai-compatible/test-model"),
        "{stderr}"
    );

    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    let ends: Vec<&Value> = records
        .iter()
        .filter(|r| r["method"] == "message_end" && r["params"]["message"]["role"] == "assistant")
        .collect();
    assert_eq!(ends.len(), 1, "{records:#?}");
    assert_eq!(
        ends[0]["params"]["message"],
        json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stop": "end"})
    );
    let deltas: String = records
        .iter()
        .filter(|r| r["method"] == "message_delta")
        .map(|r| r["params"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, text, "the deltas add up to the final text");
    assert_eq!(records.last().unwrap()["result"], json!({"settled": true}));

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["model"], "test-model");
    let messages = seen[0].body["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "weather?");
}

#[test]
fn a_tool_call_round_trip_takes_two_requests() {
    let home = home();
    let first = fixture(&format!("{CHAT_TOOL}.bin"));
    let second = fixture(&format!("{CHAT_TEXT}.bin"));
    let (_, calls) = golden(&format!("{CHAT_TOOL}.jsonl"));
    let (call_id, call_name, call_args) = calls[0].clone();
    let expected_id = call_id.clone();
    let server = Server::start(Box::new(move |index, seen| {
        if index == 0 {
            return Reply::Stream(first.clone());
        }
        // The second request must carry the call and its result.
        let messages = seen.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let answered = messages
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == expected_id.as_str());
        if answered {
            Reply::Stream(second.clone())
        } else {
            Reply::Status(
                400,
                "application/json",
                br#"{"error":{"message":"the tool result is missing","type":"invalid_request_error"}}"#
                    .to_vec(),
            )
        }
    }));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &compatible_args(&base, "test-model", "weather in NYC?"),
        &[],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let events = events(&out);
    let messages = assistant_messages(&events);
    assert_eq!(messages.len(), 2, "{}", describe(&out));
    let arguments: Value = serde_json::from_str(&call_args).unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "assistant", "content": [{"type": "tool_call", "id": call_id, "name": call_name, "arguments": arguments}], "stop": "tool_use"})
    );
    assert_eq!(arguments, json!({"city": "New York City"}));
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    assert_eq!(messages[1]["content"][0]["text"], text.as_str());
    // get_weather is no active tool: smith answers the call with an error
    // result instead of running anything, and the model sees that result.
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let sent = seen[1].body["messages"].as_array().unwrap();
    let assistant = sent.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["tool_calls"][0]["id"], call_id.as_str());
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let result = sent.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        result["content"].as_str().unwrap().contains("get_weather"),
        "{result}"
    );
}

#[test]
fn a_rate_limited_target_fails_over_at_once_to_the_next() {
    let home = home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    let server = Server::start(Box::new(move |_, seen| {
        if seen.body["model"] == "busy-model" {
            Reply::Status(
                429,
                "application/json",
                br#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#.to_vec(),
            )
        } else {
            Reply::Stream(body.clone())
        }
    }));
    let base = server.url("/v1");
    let out = run(home.path(), &compatible_args(&base, "main", "hi"), &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let models: Vec<Value> = server
        .seen()
        .iter()
        .map(|s| s.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        [json!("busy-model"), json!("test-model")],
        "one try, no retry, then the next target"
    );
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    assert_eq!(events(&out).last().unwrap()["text"], text.as_str());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("model openai-compatible/busy-model -> openai-compatible/test-model"),
        "{stderr}"
    );
}

#[test]
fn a_transient_server_error_is_retried_after_a_backoff() {
    let (out, seen) = first_then_text(
        || {
            Reply::Status(
                503,
                "text/html",
                b"<html>upstream unavailable</html>".to_vec(),
            )
        },
        "hi",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body, seen[1].body, "the same request, sent again");
    let waited = seen[1].at - seen[0].at;
    assert!(
        waited >= Duration::from_millis(500),
        "the first retry waits the base backoff (500 ms); waited {waited:?}"
    );
}

#[test]
fn retries_are_bounded_and_the_failure_names_every_attempt() {
    let home = home();
    let server = Server::start(Box::new(|_, _| {
        Reply::Status(502, "text/plain", b"bad gateway".to_vec())
    }));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &compatible_args(&base, "test-model", "hi"),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 4, "one try and three retries");
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, min) in gaps.iter().zip([500, 1000, 2000]) {
        assert!(*gap >= Duration::from_millis(min), "{gaps:?}");
    }
    let error = events(&out)
        .into_iter()
        .find(|e| e["type"] == "error")
        .unwrap();
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("HTTP 502"), "{message}");
    assert!(message.contains("after 4 attempts"), "{message}");
}

#[test]
fn an_invalid_request_is_not_retried() {
    let home = home();
    let server = Server::start(Box::new(|_, _| {
        Reply::Status(
            400,
            "application/json",
            br#"{"error":{"message":"messages: bad","type":"invalid_request_error"}}"#.to_vec(),
        )
    }));
    let base = server.url("/v1");
    let out = run(home.path(), &compatible_args(&base, "main", "hi"), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(server.seen().len(), 1, "no retry and no failover");
}

#[test]
fn cancellation_mid_stream_stops_the_exchange() {
    let home = home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    // Cut after the fourth event: some text has arrived, the end has not.
    let cut = body
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w == b"\n\n")
        .nth(3)
        .unwrap()
        .0
        + 2;
    let (signal_tx, signal_rx) = mpsc::channel();
    let signal_tx = Mutex::new(signal_tx);
    let server = Server::start(Box::new(move |_, _| {
        Reply::Stall(body.clone(), cut, signal_tx.lock().unwrap().clone())
    }));
    let base = server.url("/v1");
    let child = smith(
        home.path(),
        &compatible_args(&base, "test-model", "hi"),
        &[],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    signal_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending SIGINT to our own child process.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the stalled exchange was abandoned"
    );
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    let events = events(&out);
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "message_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    assert!(
        !streamed.is_empty() && text.starts_with(&streamed) && streamed != text,
        "{streamed:?}"
    );
    let messages = assistant_messages(&events);
    assert_eq!(messages.last().unwrap()["stop"], "abort");
    assert_eq!(events.last().unwrap()["stop"], "aborted");
}

#[test]
fn an_anthropic_stream_through_a_base_url_override_with_the_key_substituted() {
    let home = home();
    let body = fixture("anthropic/basic_response.txt");
    let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
    let key = "sk-ant-test-9f8e7d6c5b4a";
    let out = run(
        home.path(),
        &["eval", "--no-session", "--json", "hello"],
        &[
            ("ANTHROPIC_API_KEY", key),
            ("ANTHROPIC_BASE_URL", &server.url("")),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let (text, _) = golden("anthropic/basic_response.jsonl");
    assert_eq!(text, "Hello there!");
    assert_eq!(events(&out).last().unwrap()["text"], text.as_str());
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].header("x-api-key"), Some(key));
    assert_eq!(seen[0].body["model"], "claude-sonnet-4-5-20250929");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(key), "the key never appears in output");
    assert!(
        all.contains("provider anthropic (its credential was found in environment variable ANTHROPIC_API_KEY)"),
        "{all}"
    );
}

#[test]
fn a_gemini_stream_through_a_base_url_override() {
    let home = home();
    let body = fixture("google/text_stream.sse");
    let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
    let key = "gemini-test-key-5566";
    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "google",
            "--no-session",
            "--json",
            "hello",
        ],
        &[
            ("GOOGLE_API_KEY", key),
            ("GEMINI_BASE_URL", &server.url("")),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let (text, _) = golden("google/text_stream.jsonl");
    assert!(!text.is_empty());
    assert_eq!(events(&out).last().unwrap()["text"], text.as_str());
    let seen = server.seen();
    assert_eq!(
        seen[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(seen[0].header("x-goog-api-key"), Some(key));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(key), "the key never appears in output");
}

#[test]
fn an_openai_responses_stream_with_reasoning_and_a_tool_call() {
    let home = home();
    let body = fixture("openai-responses/reasoning_usage_stream.sse");
    let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
    let key = "sk-openai-test-7788";
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "openai",
            "--model",
            "gpt-5-mini",
            "--max-turns",
            "1",
            "--no-session",
            "--json",
            "hello",
        ],
        &[("OPENAI_API_KEY", key), ("OPENAI_BASE_URL", &base)],
    );
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        1,
        "the turn limit stops before a second request"
    );
    assert_eq!(seen[0].path, "/v1/responses");
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert_eq!(seen[0].body["model"], "gpt-5-mini");
    let (_, calls) = golden("openai-responses/reasoning_usage_stream.jsonl");
    let messages = assistant_messages(&events(&out));
    let content = messages[0]["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "thinking", "{content:?}");
    let call = content.iter().find(|b| b["type"] == "tool_call").unwrap();
    assert_eq!(call["id"], calls[0].0.as_str());
    assert_eq!(call["name"], calls[0].1.as_str());
    let arguments: Value = serde_json::from_str(&calls[0].2).unwrap();
    assert_eq!(call["arguments"], arguments);
    assert_eq!(messages[0]["stop"], "tool_use");
}

/// `openai.api = "chat"`, from `SMITH_OPENAI_API` or from `config.kdl`:
/// an `openai` request goes to Chat Completions with the Chat body and
/// OpenAI's key, and the recorded Chat stream becomes the answer.
#[test]
fn the_openai_chat_completions_api_can_be_chosen() {
    let key = "sk-openai-chat-e2e-7c8d9e0f";
    let (text, _) = golden(&format!("{CHAT_TEXT}.jsonl"));
    for how in ["env", "config.kdl"] {
        let home = home();
        let body = fixture(&format!("{CHAT_TEXT}.bin"));
        let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
        let base = server.url("/v1");
        let mut env = vec![("OPENAI_API_KEY", key), ("OPENAI_BASE_URL", base.as_str())];
        if how == "env" {
            env.push(("SMITH_OPENAI_API", "chat"));
        } else {
            std::fs::write(
                home.path().join("config.kdl"),
                "openai {\n    api \"chat\"\n}\n",
            )
            .unwrap();
        }
        let out = run(
            home.path(),
            &[
                "eval",
                "--provider",
                "openai",
                "--no-session",
                "--json",
                "weather?",
            ],
            &env,
        );
        assert!(out.status.success(), "{how}: {}", describe(&out));
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{how}: {}", describe(&out));
        assert_eq!(seen[0].path, "/v1/chat/completions", "{how}");
        let sent = &seen[0].body;
        assert_eq!(sent["model"], "gpt-5.1", "{how}");
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["stream_options"]["include_usage"], true);
        assert_eq!(
            sent["messages"].as_array().unwrap().last().unwrap()["content"],
            "weather?"
        );
        assert!(sent.get("input").is_none(), "no Responses body: {sent}");
        assert_eq!(
            seen[0].header("authorization"),
            Some(format!("Bearer {key}").as_str())
        );
        let events = events(&out);
        let result = events.last().unwrap();
        assert_eq!(result["type"], "result");
        assert_eq!(result["text"], text.as_str(), "{how}");
        assert_eq!(result["usage"]["input"], 79);
        assert_eq!(result["usage"]["output"], 14);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("; openai through Chat Completions (openai.api = chat, from "),
            "{how}: {stderr}"
        );
        assert!(!describe(&out).contains(key));
    }
    // An unknown API is refused when the configuration loads, naming it,
    // and nothing is sent.
    let home = home();
    let server = Server::start(Box::new(|_, _| {
        Reply::Status(500, "text/plain", b"must not be asked".to_vec())
    }));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &["eval", "--provider", "openai", "--no-session", "hi"],
        &[
            ("OPENAI_API_KEY", key),
            ("OPENAI_BASE_URL", &base),
            ("SMITH_OPENAI_API", "completions"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SMITH_OPENAI_API") && stderr.contains("completions"),
        "{}",
        describe(&out)
    );
    assert!(server.seen().is_empty(), "nothing is sent");
}

#[test]
fn the_configured_provider_and_model_options_choose_without_flags() {
    let home = home();
    let body = fixture(&format!("{CHAT_TEXT}.bin"));
    let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &["eval", "--no-session", "--json", "hi"],
        &[
            ("SMITH_PROVIDER", "openai-compatible"),
            ("SMITH_MODEL", "test-model"),
            ("OPENAI_COMPATIBLE_BASE_URL", &base),
            // A key of another provider does not override the configured choice.
            ("ANTHROPIC_API_KEY", "sk-ant-unused"),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("provider openai-compatible (chosen by env SMITH_PROVIDER), model openai-compatible/test-model"),
        "{stderr}"
    );
    assert_eq!(server.seen()[0].body["model"], "test-model");
}

#[test]
fn without_a_key_the_offline_demo_runs() {
    let home = home();
    let out = run(
        home.path(),
        &["eval", "--no-session", "--json", "hello"],
        &[],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let events = events(&out);
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    assert_eq!(
        calls[0]["call"]["name"], "ls",
        "the scripted demo lists the directory"
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("smith: provider"));
}

#[test]
fn missing_configuration_is_a_diagnostic_naming_the_fix() {
    let home = home();
    let out = run(
        home.path(),
        &["eval", "--provider", "anthropic", "--no-session", "hi"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no credential for `anthropic/claude-sonnet-4-5-20250929`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("set ANTHROPIC_API_KEY or store one with `smith auth set anthropic`"),
        "{stderr}"
    );

    let out = run(
        home.path(),
        &["eval", "--provider", "google", "--no-session", "hi"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("set GEMINI_API_KEY or GOOGLE_API_KEY"),
        "{stderr}"
    );

    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "openai-compatible",
            "--model",
            "test-model",
            "--no-session",
            "hi",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no base URL is configured for `openai-compatible/test-model`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--base-url URL") && stderr.contains("OPENAI_COMPATIBLE_BASE_URL"),
        "{stderr}"
    );

    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            "openai-compatible",
            "--no-session",
            "hi",
        ],
        &[("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:9/v1")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no model was given for provider `openai-compatible`"),
        "{stderr}"
    );

    let out = run(
        home.path(),
        &["eval", "--provider", "antropic", "--no-session", "hi"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("provider `antropic` given by --provider is not known"),
        "{stderr}"
    );
}

#[test]
fn a_model_without_advertised_tool_use_fails_before_dispatch() {
    let home = home();
    let server = Server::start(Box::new(|_, _| {
        Reply::Status(500, "text/plain", Vec::new())
    }));
    let base = server.url("/v1");
    let out = run(
        home.path(),
        &compatible_args(&base, "no-tools-model", "hi"),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(server.seen().is_empty(), "nothing was sent");
    let error = events(&out)
        .into_iter()
        .find(|e| e["type"] == "error")
        .unwrap();
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("does not call tools"), "{message}");
    assert!(message.contains("tools #true"), "{message}");
}

/// An OpenAI-compatible model no models.kdl entry describes (as every model
/// of a fresh Ollama or llama.cpp install is): tool use is assumed, said
/// once at startup, and the request goes out with the tools.
#[test]
fn an_unlisted_local_model_is_offered_tools_with_a_notice() {
    let (out, seen) = text_run("qwen2.5-coder:7b", "weather?", &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["model"], "qwen2.5-coder:7b");
    assert!(
        seen[0].body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "tools are offered"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("smith: notice: tool use of `openai-compatible/qwen2.5-coder:7b` is assumed")
            .count(),
        1,
        "{stderr}"
    );
}

/// The first answer to a request offering tools settles the assumption:
/// kept in the cache's learned-models.json, so the next run offers tools
/// without announcing the assumption again.
#[test]
fn an_assumed_tool_use_the_server_honoured_is_announced_once() {
    let home = home();
    let server = Server::start(Box::new(|_, _| {
        Reply::Stream(fixture(&format!("{CHAT_TEXT}.bin")))
    }));
    let base = server.url("/v1");
    let notice = "smith: notice: tool use of `openai-compatible/qwen2.5-coder:7b` is assumed";
    let learned = home.path().join("cache/learned-models.json");
    for (run_index, notices) in [(0, 1), (1, 0)] {
        let out = run(
            home.path(),
            &compatible_args(&base, "qwen2.5-coder:7b", "weather?"),
            &[],
        );
        assert!(out.status.success(), "{}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches(notice).count(),
            notices,
            "run {run_index}: {stderr}"
        );
        let seen = server.seen();
        assert!(
            seen[run_index].body["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "run {run_index}: tools are offered"
        );
        let file: Value = serde_json::from_slice(&std::fs::read(&learned).unwrap()).unwrap();
        assert_eq!(
            file["models"]["openai-compatible/qwen2.5-coder:7b"]["tools"], true,
            "{file}"
        );
    }
}

/// A server that refuses the assumed tools: the refusal is kept, and the
/// next run refuses before sending, saying what was learned, when, where
/// it is kept and how to try again.
#[test]
fn a_refusal_of_assumed_tools_is_kept_and_not_paid_for_again() {
    let home = home();
    let refusal = br#"{"error":"registry.ollama.ai/library/gemma3:1b does not support tools"}"#;
    let server = Server::start(Box::new(move |_, _| {
        Reply::Json(400, Vec::new(), refusal.to_vec())
    }));
    let base = server.url("/v1");
    let learned = home.path().join("cache/learned-models.json");
    let error = |out: &Output| {
        let error = events(out)
            .into_iter()
            .find(|e| e["type"] == "error")
            .unwrap_or_else(|| panic!("no error event: {}", describe(out)));
        error["message"].as_str().unwrap().to_owned()
    };
    let first = run(home.path(), &compatible_args(&base, "gemma3:1b", "hi"), &[]);
    assert_eq!(first.status.code(), Some(1), "{}", describe(&first));
    let message = error(&first);
    assert!(
        message.contains(&format!("smith keeps this in {}", learned.display())),
        "{message}"
    );
    let second = run(home.path(), &compatible_args(&base, "gemma3:1b", "hi"), &[]);
    assert_eq!(second.status.code(), Some(1), "{}", describe(&second));
    assert_eq!(server.seen().len(), 1, "the second run sends nothing");
    let message = error(&second);
    assert!(message.contains("does not call tools"), "{message}");
    assert!(
        message.contains("when the server refused a request offering tools"),
        "{message}"
    );
    assert!(
        message.contains(&learned.display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("declare `model \"gemma3:1b\" { tools #true }`"),
        "{message}"
    );
    // Forgetting it (deleting the file) tries tools again.
    std::fs::remove_file(&learned).unwrap();
    let third = run(home.path(), &compatible_args(&base, "gemma3:1b", "hi"), &[]);
    assert_eq!(third.status.code(), Some(1), "{}", describe(&third));
    assert_eq!(
        server.seen().len(),
        2,
        "asked again after the file was deleted"
    );
}

/// Ollama refuses tools for a model that has none with a 400 whose JSON
/// body holds only a message: the status types it (an invalid request, not
/// retried) and the error says how to declare the model.
#[test]
fn a_server_refusing_assumed_tools_is_not_retried_and_the_fix_is_named() {
    let home = home();
    let refusal = br#"{"error":"registry.ollama.ai/library/gemma3:1b does not support tools"}"#;
    let server = Server::start(Box::new(move |_, _| {
        Reply::Json(400, Vec::new(), refusal.to_vec())
    }));
    let base = server.url("/v1");
    let out = run(home.path(), &compatible_args(&base, "gemma3:1b", "hi"), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(server.seen().len(), 1, "an invalid request is sent once");
    let error = events(&out)
        .into_iter()
        .find(|e| e["type"] == "error")
        .unwrap_or_else(|| panic!("no error event: {}", describe(&out)));
    assert_eq!(error["kind"], "invalid_request", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("does not support tools"), "{message}");
    assert!(
        message.contains("declare `model \"gemma3:1b\" { tools #false }`"),
        "{message}"
    );
}

/// A live request to a vendor when its key is set.
/// Runs `smith eval --provider VENDOR --model MODEL ARGS hello` against a
/// local server replaying a recorded text stream of the vendor, with the
/// vendor's key and base URL and `env`, in a home whose config.kdl is
/// `config` when given. Returns the output and the one request body the
/// server received.
fn vendor_run(
    vendor: &str,
    model: &str,
    args: &[&str],
    env: &[(&str, &str)],
    config: Option<&str>,
) -> (Output, Value) {
    let (recording, key, base_var, prefix) = match vendor {
        "anthropic" => (
            "anthropic/basic_response.txt",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "",
        ),
        "openai" => (
            "openai-responses/conf-text.sse",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "/v1",
        ),
        "google" => (
            "google/text_stream.sse",
            "GOOGLE_API_KEY",
            "GEMINI_BASE_URL",
            "",
        ),
        other => panic!("no recording for {other}"),
    };
    let home = home();
    if let Some(config) = config {
        std::fs::write(home.path().join("config.kdl"), config).unwrap();
    }
    let body = fixture(recording);
    let server = Server::start(Box::new(move |_, _| Reply::Stream(body.clone())));
    let base = server.url(prefix);
    let mut all = vec![
        "eval",
        "--provider",
        vendor,
        "--model",
        model,
        "--no-session",
        "--json",
    ];
    all.extend_from_slice(args);
    all.push("hello");
    let mut vars = vec![(key, "test-key-thinking-0001"), (base_var, base.as_str())];
    vars.extend_from_slice(env);
    let out = run(home.path(), &all, &vars);
    assert!(out.status.success(), "{}", describe(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{}", describe(&out));
    (out, seen[0].body.clone())
}

/// `--thinking high` to a model whose catalog entry lists `high`: each
/// vendor's request carries its own encoding of the level (Anthropic's
/// budget, OpenAI's reasoning effort, Google's thinking budget), and the
/// startup line says so; without `--thinking` none of them carries any.
#[test]
fn thinking_high_reaches_each_vendor_in_its_own_encoding() {
    let (out, body) = vendor_run(
        "anthropic",
        "claude-sonnet-4-5-20250929",
        &["--thinking", "high"],
        &[],
        None,
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 24576}),
        "{body}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("model anthropic/claude-sonnet-4-5-20250929; credential from")
            && stderr.contains("; thinking high (from --thinking)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("gate.thinking") && !stderr.contains("warning"),
        "{stderr}"
    );

    let (_, body) = vendor_run("openai", "gpt-5-mini", &["--thinking", "high"], &[], None);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"}),
        "{body}"
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    // gpt-5-mini lists minimal: OpenAI's own minimal effort.
    let (out, body) = vendor_run(
        "openai",
        "gpt-5-mini",
        &["--thinking", "minimal"],
        &[],
        None,
    );
    assert_eq!(body["reasoning"]["effort"], "minimal", "{body}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));

    let (_, body) = vendor_run(
        "google",
        "gemini-2.5-flash",
        &["--thinking", "high"],
        &[],
        None,
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 24576}),
        "{body}"
    );

    // Off (the default, and `--thinking off`): no encoding at all.
    let (_, body) = vendor_run("anthropic", "claude-sonnet-4-5-20250929", &[], &[], None);
    assert_eq!(body.get("thinking"), None, "{body}");
    let (out, body) = vendor_run("openai", "gpt-5-mini", &["--thinking", "off"], &[], None);
    assert_eq!(body.get("reasoning"), None, "{body}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("thinking"));
    let (_, body) = vendor_run("google", "gemini-2.5-flash", &[], &[], None);
    assert_eq!(
        body["generationConfig"].get("thinkingConfig"),
        None,
        "{body}"
    );
}

/// A level the model does not list: the gate's warning is on standard
/// error, and the request carries what the gate decided: nothing for a
/// model listed without thinking, the nearest listed level below for one
/// that lists others.
#[test]
fn a_level_the_model_does_not_list_is_degraded_with_the_gates_warning() {
    let (out, body) = vendor_run(
        "anthropic",
        "claude-3-5-haiku-20241022",
        &["--thinking", "high"],
        &[],
        None,
    );
    assert_eq!(body.get("thinking"), None, "{body}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "smith: warning: thinking is off for `anthropic/claude-3-5-haiku-20241022`: `anthropic/claude-3-5-haiku-20241022` is listed without thinking; choose an offered level, or a thinking model, to silence this; requests carry thinking off"
        ),
        "{stderr}"
    );

    // gpt-5.1 lists low, medium and high: max becomes high.
    let (out, body) = vendor_run("openai", "gpt-5.1", &["--thinking", "max"], &[], None);
    assert_eq!(body["reasoning"]["effort"], "high", "{body}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "smith: warning: thinking level `max` is not offered by `openai/gpt-5.1`; using `high`: `openai/gpt-5.1` offers only low, medium, high"
        ),
        "{stderr}"
    );
    // gemini-2.5-flash lists nothing below low: minimal becomes low.
    let (out, body) = vendor_run(
        "google",
        "gemini-2.5-flash",
        &["--thinking", "minimal"],
        &[],
        None,
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"]["thinkingBudget"], 2048,
        "{body}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("using `low`"));
}

/// The `thinking` option: from config.kdl and from SMITH_THINKING (which
/// wins over the file), and `--thinking` wins over both; the startup line
/// names where the level came from.
#[test]
fn the_thinking_option_applies_and_the_flag_wins() {
    let model = "claude-sonnet-4-5-20250929";
    let config = Some("thinking \"medium\"\n");
    let budget = |body: &Value| body["thinking"]["budget_tokens"].clone();

    let (out, body) = vendor_run("anthropic", model, &[], &[], config);
    assert_eq!(budget(&body), 8192, "{body}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("; thinking medium (from user config ")
            && stderr.contains("config.kdl:1:10)"),
        "{stderr}"
    );

    let (out, body) = vendor_run(
        "anthropic",
        model,
        &[],
        &[("SMITH_THINKING", "low")],
        config,
    );
    assert_eq!(budget(&body), 2048, "{body}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("; thinking low (from env SMITH_THINKING)"),
        "{}",
        describe(&out)
    );

    let (out, body) = vendor_run(
        "anthropic",
        model,
        &["--thinking", "high"],
        &[("SMITH_THINKING", "low")],
        config,
    );
    assert_eq!(budget(&body), 24576, "{body}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("; thinking high (from --thinking)"));

    // `--thinking off` turns a configured level off.
    let (_, body) = vendor_run("anthropic", model, &["--thinking", "off"], &[], config);
    assert_eq!(body.get("thinking"), None, "{body}");
}

/// An invalid level is refused before anything is sent, naming the value,
/// where it came from and the valid levels.
#[test]
fn an_invalid_thinking_level_names_the_value_its_source_and_the_levels() {
    let home = home();
    let server = Server::start(Box::new(|_, _| Reply::Stream(Vec::new())));
    let base = server.url("");
    let vars = [
        ("ANTHROPIC_API_KEY", "test-key-thinking-0002"),
        ("ANTHROPIC_BASE_URL", base.as_str()),
    ];
    let args = ["eval", "--no-session", "--thinking", "hgh", "hello"];
    let out = run(home.path(), &args, &vars);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "invalid value 'hgh' for '--thinking <LEVEL>': \"hgh\" is not a thinking level; the levels are off, minimal, low, medium, high, max"
        ) && stderr.contains("at: command-line flag --thinking"),
        "{stderr}"
    );

    let out = run(
        home.path(),
        &["eval", "--no-session", "hello"],
        &[vars[0], vars[1], ("SMITH_THINKING", "loud")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SMITH_THINKING")
            && stderr.contains("loud")
            && stderr.contains("`off`, `minimal`, `low`, `medium`, `high`, `max`"),
        "{stderr}"
    );

    std::fs::write(
        home.path().join("config.kdl"),
        "// levels\nthinking \"very-high\"\n",
    )
    .unwrap();
    let out = run(home.path(), &["eval", "--no-session", "hello"], &vars);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.kdl:2")
            && stderr.contains("very-high")
            && stderr.contains("`off`, `minimal`, `low`, `medium`, `high`, `max`"),
        "{stderr}"
    );
    assert!(server.seen().is_empty(), "nothing is sent");
}

fn live(vendor: &str, vars: &[&str]) {
    let Some(key_var) = vars
        .iter()
        .find(|v| std::env::var(v).is_ok_and(|k| !k.is_empty()))
    else {
        // Straight to the process's standard error, past the test
        // harness's capture, so a skip is always visible.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} not set (live {vendor} smoke test)",
            vars.join(" / ")
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let key = std::env::var(key_var).unwrap();
    let out = run(
        home.path(),
        &[
            "eval",
            "--provider",
            vendor,
            "--no-session",
            "--json",
            "--max-turns",
            "1",
            "Reply with the single word: pong",
        ],
        &[(key_var, &key)],
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(&key), "the key never appears in output");
    assert!(out.status.success(), "{}", describe(&out));
    let text = events(&out).last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_lowercase();
    assert!(text.contains("pong"), "{text}");
}

#[test]
fn live_anthropic() {
    live("anthropic", &["ANTHROPIC_API_KEY"]);
}

#[test]
fn live_openai() {
    live("openai", &["OPENAI_API_KEY"]);
}

#[test]
fn live_google() {
    live("google", &["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
}
