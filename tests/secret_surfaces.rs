//! The secret proxy end to end, against a local OpenAI-compatible server
//! that logs every request body: a secret the user registered (`smith
//! secret add`) and a provider key in the environment (`OPENAI_API_KEY`,
//! registered although another provider runs) are planted in a project
//! file the `read` tool reads, in a bash command's output, in a plugin
//! tool's result (test/kit's `kit_read`) and in a provider error body
//! (HTTP 400 and 500 whose JSON echoes them). Neither plaintext may appear
//! in the request log, the session file's bytes, `smith session dump`,
//! `smith replay --json`, `smith eval --json` output and standard error,
//! or the `smith rpc` stream of the same run; their placeholders appear
//! where the values were. A placeholder in a tool call's arguments gets
//! the value only for a tool the secret's policy allows (`smith secret add
//! --allow TOOL`), and the recorded arguments keep the placeholder.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod common;
#[path = "common/http.rs"]
mod http;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use http::{Handler, Reply, Server};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_smith");

/// Registered with `smith secret add user.token`.
const USER_SECRET: &str = "usr-PLANTEDuser0123456789abcdefXYZ";
/// Set as `OPENAI_API_KEY` in smith's environment.
const ENV_SECRET: &str = "sk-proj-PLANTEDenv0123456789abcdefQRS";
/// Registered with `smith secret add deploy.token --allow bash`.
const ALLOWED_SECRET: &str = "dpl-PLANTEDallowed0123456789abcdef";

const USER_PLACEHOLDER: &str = "{secret:user.token}";
const ENV_PLACEHOLDER: &str = "{secret:openai.api_key}";

/// Every request body the server received, as received, one per line.
fn request_log(server: &Server) -> Vec<u8> {
    server
        .seen()
        .into_iter()
        .map(|seen| seen.raw)
        .collect::<Vec<_>>()
        .join(&b'\n')
}

/// An OpenAI chat completion stream of `deltas`, ending with `finish`.
fn stream(deltas: &[Value], finish: &str) -> Vec<u8> {
    let mut out = String::new();
    let chunk = |delta: &Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    for delta in deltas {
        out.push_str(&format!("data: {}\n\n", chunk(delta, Value::Null)));
    }
    out.push_str(&format!("data: {}\n\n", chunk(&json!({}), json!(finish))));
    out.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"test-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

/// The tool calls of the first turn: the planted file through `read`,
/// `bash` and test/kit's `kit_read`; a bash call whose command holds two
/// placeholders (one secret allowed for bash, one not).
fn tool_calls() -> Vec<u8> {
    let calls = [
        ("call_read", "read", json!({"path": "notes.txt"})),
        (
            "call_bash",
            "bash",
            json!({"command": "cat notes.txt; printf 'env=%s\\n' \"$OPENAI_API_KEY\""}),
        ),
        ("call_kit", "kit_read", json!({"path": "notes.txt"})),
        (
            "call_subst",
            "bash",
            json!({"command": "printf 'allowed=%s denied=%s\\n' '{secret:deploy.token}' '{secret:user.token}' | sha256sum; printf 'denied=%s\\n' '{secret:user.token}'"}),
        ),
    ];
    let deltas: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| {
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": i, "id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}}]})
        })
        .collect();
    stream(&deltas, "tool_calls")
}

/// The model: tool calls first; once the results are in, it echoes what
/// it saw (placeholders) and stops.
fn model() -> Box<Handler> {
    Box::new(|_, seen| {
        let request = &seen.body;
        let answered = request["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if answered {
            let text = format!("saw {USER_PLACEHOLDER} and {ENV_PLACEHOLDER}");
            Reply::Stream(stream(
                &[json!({"role": "assistant", "content": text})],
                "stop",
            ))
        } else {
            Reply::Stream(tool_calls())
        }
    })
}

/// A provider that refuses every request with `status`, echoing both keys
/// in its JSON error body as vendors do.
fn refusing(status: u16) -> Box<Handler> {
    Box::new(move |_, _| {
        let body = json!({"error": {"message": format!("Incorrect API key provided: {ENV_SECRET}; also saw {USER_SECRET}"),
                                     "type": "invalid_request_error"}});
        Reply::Status(status, "application/json", body.to_string().into_bytes())
    })
}

/// A home (also the project) with the local model described, test/kit
/// installed with `project-read`, both user secrets added and the planted
/// project file.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("models.kdl"),
        "provider \"openai-compatible\" {\n    model \"test-model\" {\n        tools #true\n    }\n}\n",
    )
    .unwrap();
    common::install_guest(
        home.path(),
        "test/kit",
        "smith_plugin_kit.wasm",
        "    project-read\n",
    );
    let add = |name: &str, value: &str, extra: &[&str]| {
        let mut args = vec!["secret", "add", name];
        args.extend_from_slice(extra);
        let mut child = smith(home.path(), &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(value.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        assert_clean("`smith secret add` output", &out.stdout);
    };
    add("user.token", USER_SECRET, &[]);
    add("deploy.token", ALLOWED_SECRET, &["--allow", "bash"]);
    std::fs::write(
        home.path().join("notes.txt"),
        format!("USER_TOKEN={USER_SECRET}\nOPENAI_API_KEY={ENV_SECRET}\n"),
    )
    .unwrap();
    home
}

const VENDOR_VARS: [&str; 6] = [
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "SMITH_PROVIDER",
    "OPENAI_BASE_URL",
    "SMITH_MODEL",
];

fn smith(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", ENV_SECRET)
        .current_dir(home)
        .stdin(Stdio::null());
    for var in VENDOR_VARS {
        cmd.env_remove(var);
    }
    cmd
}

fn run(home: &Path, args: &[&str]) -> Output {
    smith(home, args).output().unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn assert_clean(what: &str, bytes: &[u8]) {
    for secret in [USER_SECRET, ENV_SECRET, ALLOWED_SECRET] {
        assert!(
            !contains(bytes, secret),
            "{what} contains the planted secret {secret}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

fn assert_placeholders(what: &str, bytes: &[u8]) {
    for placeholder in [USER_PLACEHOLDER, ENV_PLACEHOLDER] {
        assert!(
            contains(bytes, placeholder),
            "{what} lacks {placeholder}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// The bytes of every session file.
fn session_files(home: &Path) -> Vec<u8> {
    let dir = home.join("data").join("sessions");
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "smith") {
            bytes.extend(std::fs::read(path).unwrap());
        }
    }
    assert!(!bytes.is_empty(), "no session file in {}", dir.display());
    bytes
}

fn eval_args<'a>(base: &'a str, name: &'a str) -> Vec<&'a str> {
    vec![
        "eval",
        "--provider",
        "openai-compatible",
        "--base-url",
        base,
        "--model",
        "test-model",
        "--json",
        "--name",
        name,
        "show me the notes",
    ]
}

/// The recorded surfaces of session `name`: the session file's bytes,
/// `smith session dump` and `smith replay --json` output.
fn recorded(home: &Path, name: &str) -> Vec<(&'static str, Vec<u8>)> {
    let dump = run(home, &["session", "dump", name]);
    assert!(dump.status.success(), "{}", describe(&dump));
    let replay = run(home, &["replay", name, "--instant", "--json"]);
    assert!(replay.status.success(), "{}", describe(&replay));
    vec![
        ("the session files", session_files(home)),
        ("the session dump", dump.stdout),
        ("smith replay --json", replay.stdout),
        ("replay's standard error", replay.stderr),
    ]
}

#[test]
fn planted_secrets_reach_no_surface_and_substitution_follows_the_policy() {
    let home = home();
    let list = run(home.path(), &["secret", "list"]);
    assert!(list.status.success(), "{}", describe(&list));
    assert_clean("`smith secret list`", &list.stdout);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains("user.token"), "{listed}");
    assert!(listed.contains("openai.api_key"), "{listed}");
    assert!(listed.contains("env:OPENAI_API_KEY"), "{listed}");
    assert!(listed.contains("hmac-sha256:"), "{listed}");

    let server = Server::start(model());
    let base = server.url("/v1");
    let out = run(home.path(), &eval_args(&base, "planted"));
    assert!(out.status.success(), "{}", describe(&out));
    let ends: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 4, "{}", describe(&out));
    for end in &ends[..3] {
        assert_eq!(end["status"], "ok", "{end}");
        let content = end["content"].to_string();
        assert_placeholders(&format!("the {} result", end["name"]), content.as_bytes());
    }
    // The allowed secret went into bash (the digest of the real text), the
    // other placeholder stayed as text; the recorded arguments keep both.
    let substituted = ends[3]["content"].as_str().unwrap();
    let digest = |text: &str| {
        let mut child = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let expected = digest(&format!(
        "allowed={ALLOWED_SECRET} denied={USER_PLACEHOLDER}\n"
    ));
    assert!(
        substituted.contains(expected.split_whitespace().next().unwrap()),
        "{substituted}\nexpected the digest of the substituted text: {expected}"
    );
    assert!(
        substituted.contains(&format!("denied={USER_PLACEHOLDER}")),
        "{substituted}"
    );

    let log = request_log(&server);
    assert_clean("the provider request log", &log);
    assert_placeholders("the provider request log", &log);
    assert_clean("the eval --json output", &out.stdout);
    assert_clean("eval's standard error", &out.stderr);
    assert_placeholders("the eval --json output", &out.stdout);
    for (what, bytes) in recorded(home.path(), "planted") {
        assert_clean(what, &bytes);
        if what != "replay's standard error" {
            assert_placeholders(what, &bytes);
        }
    }
    let dump = String::from_utf8_lossy(&run(home.path(), &["session", "dump", "planted"]).stdout)
        .into_owned();
    assert!(
        dump.contains("'{secret:deploy.token}'"),
        "the recorded arguments keep the placeholder:\n{dump}"
    );
    assert!(
        dump.contains(r#""source":"user""#),
        "the user's secrets are recorded as registrations:\n{dump}"
    );

    // The same run through `smith rpc`.
    let rpc_server = Server::start(model());
    let rpc_base = rpc_server.url("/v1");
    let mut child = smith(
        home.path(),
        &[
            "rpc",
            "--provider",
            "openai-compatible",
            "--base-url",
            &rpc_base,
            "--model",
            "test-model",
        ],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"text":"show me the notes"}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":3,"method":"wait_settled","params":{}}"#,
                "\n"
            )
            .as_bytes(),
        )
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut rpc_out = Vec::new();
    loop {
        let mut line = Vec::new();
        let read = reader.read_until(b'\n', &mut line).unwrap();
        rpc_out.extend_from_slice(&line);
        if read == 0 || contains(&line, r#""id":3"#) {
            break;
        }
    }
    drop(stdin);
    let rpc_err = child.wait_with_output().unwrap().stderr;
    assert!(
        contains(&rpc_out, "tool_execution_end"),
        "{}\n{}",
        String::from_utf8_lossy(&rpc_out),
        String::from_utf8_lossy(&rpc_err)
    );
    assert_clean("the rpc output", &rpc_out);
    assert_clean("rpc's standard error", &rpc_err);
    assert_placeholders("the rpc output", &rpc_out);
    assert_clean("the rpc provider's request log", &request_log(&rpc_server));
}

#[test]
fn a_provider_error_body_that_echoes_the_secrets_is_redacted_everywhere() {
    let home = home();
    for (status, name) in [(400, "refused"), (500, "failed")] {
        let server = Server::start(refusing(status));
        let base = server.url("/v1");
        let out = run(home.path(), &eval_args(&base, name));
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert_clean("the eval --json output", &out.stdout);
        assert_clean("eval's standard error", &out.stderr);
        // The message reached the output, redacted.
        let shown = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        assert_placeholders("eval's output", &shown);
        assert_clean("the provider request log", &request_log(&server));
        for (what, bytes) in recorded(home.path(), name) {
            assert_clean(what, &bytes);
        }
    }
}

#[test]
fn smith_mcp_answers_and_records_placeholders_not_secrets() {
    let home = home();
    let mut child = smith(home.path(), &["mcp", "--name", "mcp-planted"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "notes.txt"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "cat notes.txt; printf '%s\\n' '{secret:deploy.token}' | sha256sum"}}}),
    ];
    for request in &requests {
        writeln!(stdin, "{request}").unwrap();
    }
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut out = Vec::new();
    let mut answered = 0;
    while answered < 2 {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line).unwrap() == 0 {
            break;
        }
        if contains(&line, r#""id":2"#) || contains(&line, r#""id":3"#) {
            answered += 1;
        }
        out.extend_from_slice(&line);
    }
    drop(stdin);
    let err = child.wait_with_output().unwrap().stderr;
    assert_eq!(
        answered,
        2,
        "{}\n{}",
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&err)
    );
    assert_clean("the MCP answers", &out);
    assert_clean("mcp's standard error", &err);
    assert_placeholders("the MCP answers", &out);
    // The allowed secret reached bash: the digest of the real value.
    let digest = {
        let mut child = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "{ALLOWED_SECRET}").unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let digest = digest.split_whitespace().next().unwrap();
    assert!(contains(&out, digest), "{}", String::from_utf8_lossy(&out));
    let dump = run(home.path(), &["session", "dump", "mcp-planted"]);
    assert!(dump.status.success(), "{}", describe(&dump));
    assert_clean("the MCP session dump", &dump.stdout);
    assert!(
        contains(&dump.stdout, "'{secret:deploy.token}'"),
        "the recorded arguments keep the placeholder:\n{}",
        String::from_utf8_lossy(&dump.stdout)
    );
    assert_clean("the session files", &session_files(home.path()));
}
