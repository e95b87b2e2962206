//! Questions that wait, end to end through the built binary with test/kit
//! installed: its `tool-call` decision asks "Run read on confirm-me?"
//! (confirm, default `no`) before a `read` of `confirm-me.txt`, and blocks
//! the call unless the answer is `yes` (see plugins/tests/guests/kit).
//! `smith eval` answers by its policy (`--yes`, `--answer`), `smith rpc`
//! sends the question to its client and takes the answer with `ui/answer`,
//! `smith mcp` asks a client that declared elicitation and otherwise
//! answers by its policy.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Client, run};
use serde_json::{Value, json};

const PROMPT: &str = "Run read on confirm-me?";

/// A smith home with test/kit installed (granted `ui`), a file
/// `confirm-me.txt`, and a mock script whose first response reads it and
/// whose second says `done`; returns the home and the script.
fn home_with_kit() -> (tempfile::TempDir, String) {
    let home = tempfile::tempdir().unwrap();
    common::install_guest(home.path(), "test/kit", "smith_plugin_kit.wasm", "    ui\n");
    std::fs::write(home.path().join("confirm-me.txt"), "the secret plan\n").unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[
  [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "confirm-me.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    (home, script)
}

/// The `tool_execution_end` record of `--json` output.
fn tool_end(out: &str) -> Value {
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {out}"))
}

#[test]
fn eval_refuses_a_question_nobody_answers_and_says_how_to_allow_it() {
    let (home, script) = home_with_kit();
    let (out, err) = run(
        home.path(),
        &["eval", "--json", "--mock-script", &script, "read it"],
        0,
    );
    let end = tool_end(&out);
    assert_eq!(end["status"], "blocked", "{end}");
    let content = end["content"].as_str().unwrap();
    assert!(
        content.starts_with("Blocked: the read call did not run because the extension test/kit blocked it: could not ask: failed: plugin test/kit asked \"Run read on confirm-me?\" (confirm, default no) and smith eval has no one to answer it"),
        "{content}"
    );
    assert!(
        content.contains("pass --yes to take every question's default, or configure its answer with --answer 'Run read on confirm-me?=ANSWER'"),
        "{content}"
    );
    assert!(!content.contains("the secret plan"), "{content}");
    assert!(
        err.contains("smith: question refused: plugin test/kit asked \"Run read on confirm-me?\""),
        "{err}"
    );
}

#[test]
fn eval_yes_takes_the_default_and_a_configured_answer_allows_the_call() {
    let (home, script) = home_with_kit();
    // The default is `no`: --yes takes it, so the call stays blocked, by
    // the policy's answer.
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--yes",
            "--mock-script",
            &script,
            "read it",
        ],
        0,
    );
    let end = tool_end(&out);
    assert_eq!(end["status"], "blocked", "{end}");
    assert!(
        end["content"]
            .as_str()
            .unwrap()
            .contains("blocked it: the user answered no (policy)"),
        "{end}"
    );
    assert!(!err.contains("question refused"), "{err}");

    // A configured `yes` for the prompt lets the read run.
    let answer = format!("{PROMPT}=yes");
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--yes",
            "--answer",
            &answer,
            "--mock-script",
            &script,
            "read it",
        ],
        0,
    );
    let end = tool_end(&out);
    assert_eq!(end["status"], "ok", "{end}");
    assert!(
        end["content"].as_str().unwrap().contains("the secret plan"),
        "{end}"
    );
    assert!(!err.contains("question refused"), "{err}");
}

#[test]
fn eval_rejects_an_answer_without_a_prompt() {
    let (home, script) = home_with_kit();
    let (_, err) = run(
        home.path(),
        &[
            "eval",
            "--answer",
            "yes",
            "--mock-script",
            &script,
            "read it",
        ],
        1,
    );
    assert!(
        err.contains("--answer: the answer \"yes\" is not PROMPT=ANSWER"),
        "{err}"
    );
}

#[test]
fn rpc_sends_a_question_that_waits_and_its_answer_lets_the_call_run() {
    let (home, script) = home_with_kit();
    let mut client = Client::start(home.path(), &["--mock-script", &script, "--name", "asks"]);
    client.send(1, "prompt", json!({"text": "read it"}));
    let question = client.until(|r| r["method"] == "ui_question");
    assert_eq!(
        question["params"],
        json!({
            "plugin": "test/kit",
            "id": "q-1",
            "kind": "confirm",
            "prompt": PROMPT,
            "default": "no",
            "timeout_ms": 30_000,
            "wait": true,
        })
    );
    // The server keeps serving while the question waits: an answer it
    // does not accept is refused and the question still waits.
    client.send(
        2,
        "ui/answer",
        json!({"plugin": "test/kit", "id": "q-1", "answer": "maybe"}),
    );
    let refused = client.until(|r| r["id"] == 2);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["data"]["why"],
        "question q-1 (\"Run read on confirm-me?\") does not accept the answer \"maybe\": it wants `yes` or `no`; it still waits, answer it again"
    );
    // A request that would reach the plugins (held by the question) is
    // refused as busy instead of keeping the answer from being read.
    client.send(10, "session/fork", json!({}));
    let busy = client.until(|r| r["id"] == 10);
    assert_eq!(busy["error"]["data"]["kind"], "busy", "{busy}");
    assert_eq!(
        busy["error"]["data"]["next"],
        "answer the question with ui/answer (or let it time out), then send the request again"
    );
    let answer = json!({"plugin": "test/kit", "id": "q-1", "answer": "yes"});
    client.send(3, "ui/answer", answer.clone());
    assert_eq!(
        client.until(|r| r["id"] == 3)["result"],
        json!({"delivered": true})
    );
    let end = client.until(|r| r["method"] == "tool_execution_end");
    assert_eq!(end["params"]["status"], "ok", "{end}");
    assert!(
        end["params"]["content"]
            .as_str()
            .unwrap()
            .contains("the secret plan"),
        "{end}"
    );
    // Answered once: a second answer to the same id is refused.
    client.send(4, "ui/answer", answer);
    let again = client.until(|r| r["id"] == 4);
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert_eq!(
        again["error"]["data"]["why"],
        "question q-1 was answered already and takes no other answer; answer only questions that still wait"
    );
    client.send(5, "wait_settled", json!({}));
    client.until(|r| r["id"] == 5);
    client.finish();
}

#[test]
fn rpc_answer_no_blocks_the_call() {
    let (home, script) = home_with_kit();
    let mut client = Client::start(home.path(), &["--mock-script", &script, "--name", "no"]);
    client.send(1, "prompt", json!({"text": "read it"}));
    let question = client.until(|r| r["method"] == "ui_question");
    assert_eq!(question["params"]["id"], "q-1");
    client.send(
        2,
        "ui/answer",
        json!({"plugin": "test/kit", "id": "q-1", "answer": "no"}),
    );
    let end = client.until(|r| r["method"] == "tool_execution_end");
    assert_eq!(end["params"]["status"], "blocked", "{end}");
    assert!(
        end["params"]["content"]
            .as_str()
            .unwrap()
            .contains("blocked it: the user answered no (user)"),
        "{end}"
    );
    client.send(3, "wait_settled", json!({}));
    client.until(|r| r["id"] == 3);
    client.finish();
}

/// A `smith mcp` child driven by raw JSON-RPC records.
struct McpClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl McpClient {
    fn start(home: &Path, args: &[&str]) -> McpClient {
        let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
            .env("SMITH_HOME", home)
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .current_dir(home)
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        McpClient {
            child,
            stdin,
            lines,
        }
    }

    fn write(&mut self, record: &Value) {
        writeln!(self.stdin, "{record}").unwrap();
    }

    fn initialize(&mut self, capabilities: Value) {
        self.write(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "scripted", "version": "0"},
            }}),
        );
        self.next();
        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn call_read(&mut self, id: u64) {
        self.write(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "read", "arguments": {"path": "confirm-me.txt"},
            }}),
        );
    }

    fn next(&mut self) -> Value {
        let line = self.lines.next().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn finish(self) -> String {
        let McpClient {
            child,
            stdin,
            lines,
        } = self;
        drop(stdin);
        drop(lines);
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    }
}

#[test]
fn mcp_asks_a_client_with_elicitation_and_its_answer_decides_the_call() {
    let (home, _) = home_with_kit();
    let mut client = McpClient::start(home.path(), &[]);
    client.initialize(json!({"elicitation": {}}));
    client.call_read(2);
    let request = client.next();
    assert_eq!(
        request,
        json!({"jsonrpc": "2.0", "id": "smith-elicit-1", "method": "elicitation/create", "params": {
            "message": "[test/kit] Run read on confirm-me?",
            "requestedSchema": {
                "type": "object",
                "properties": {"answer": {"type": "string", "enum": ["yes", "no"], "title": PROMPT, "default": "no"}},
                "required": ["answer"],
            },
        }})
    );
    client.write(
        &json!({"jsonrpc": "2.0", "id": "smith-elicit-1", "result": {
            "action": "accept", "content": {"answer": "yes"},
        }}),
    );
    let result = client.next();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the secret plan"),
        "{result}"
    );
    // Declining takes the default (`no`): the call is blocked.
    client.call_read(3);
    let request = client.next();
    assert_eq!(request["id"], "smith-elicit-2", "{request}");
    client
        .write(&json!({"jsonrpc": "2.0", "id": "smith-elicit-2", "result": {"action": "decline"}}));
    let result = client.next();
    assert_eq!(result["id"], 3, "{result}");
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert_eq!(result["result"]["_meta"]["dev.smith/status"], "blocked");
    assert_eq!(
        result["result"]["content"][0]["text"],
        "Blocked: the read call did not run because the extension test/kit blocked it: the user answered no (user). Nothing happened. Do not repeat the call unchanged."
    );
    client.finish();
}

#[test]
fn mcp_without_elicitation_refuses_unless_its_policy_answers() {
    let (home, _) = home_with_kit();
    let mut client = McpClient::start(home.path(), &[]);
    client.initialize(json!({}));
    client.call_read(2);
    let result = client.next();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("plugin test/kit asked \"Run read on confirm-me?\" (confirm, default no) and smith mcp (its client did not declare elicitation) has no one to answer it"),
        "{text}"
    );
    assert!(
        text.contains("--answer 'Run read on confirm-me?=ANSWER'"),
        "{text}"
    );
    let err = client.finish();
    assert!(
        err.contains("smith: question refused: plugin test/kit"),
        "{err}"
    );

    let answer = format!("{PROMPT}=yes");
    let mut client = McpClient::start(home.path(), &["--answer", &answer]);
    client.initialize(json!({}));
    client.call_read(2);
    let result = client.next();
    assert_eq!(result["result"]["isError"], false, "{result}");
    client.finish();

    // Without plugins nothing is asked and the call runs.
    let mut client = McpClient::start(home.path(), &["--no-plugins"]);
    client.initialize(json!({}));
    client.call_read(2);
    let result = client.next();
    assert_eq!(result["result"]["isError"], false, "{result}");
    client.finish();
}

#[test]
fn the_official_python_client_answers_a_plugin_question_through_elicitation() {
    // The SDK is installed by scripts/setup; tests/mcp.rs says how when it
    // is missing.
    let (home, _) = home_with_kit();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/rpc/tests/mcp_elicit.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_smith"))
        .arg(home.path())
        .env("SMITH_HOME", home.path())
        .output()
        .expect("python3 runs the client script (install the SDK: python3 -m pip install --quiet 'mcp==2.3.0')");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    assert!(
        summary["accepted"]
            .as_str()
            .unwrap()
            .contains("the secret plan"),
        "{summary}"
    );
    assert_eq!(
        summary["declined"],
        "Blocked: the read call did not run because the extension test/kit blocked it: the user answered no (user). Nothing happened. Do not repeat the call unchanged."
    );
    let asked = &summary["asked"][0];
    assert_eq!(asked["message"], "[test/kit] Run read on confirm-me?");
    assert_eq!(
        asked["schema"]["properties"]["answer"]["enum"],
        json!(["yes", "no"])
    );
    assert_eq!(summary["asked"].as_array().unwrap().len(), 2);
}

/// `smith mcp` under each approval mode: `ask` asks the client through
/// elicitation before a `write` (showing the diff) and the answer decides;
/// `workspace` (the default) runs a write inside the project and refuses
/// one outside; `read-only` refuses every write.
#[test]
fn mcp_follows_the_approval_mode_and_asks_through_elicitation_in_ask() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("work");
    std::fs::create_dir_all(&project).unwrap();
    let cwd = project.display().to_string();
    let write = |client: &mut McpClient, id: u64, path: &str| {
        client.write(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "write", "arguments": {"path": path, "content": "made by the agent\n"},
            }}),
        );
    };

    // ask: the permission question reaches the client with the diff.
    let mut client = McpClient::start(home.path(), &["--cwd", &cwd, "--approval", "ask"]);
    client.initialize(json!({"elicitation": {}}));
    write(&mut client, 2, "made.txt");
    let request = client.next();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    let message = request["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("[smith/permissions] Allow write to made.txt?"),
        "{message}"
    );
    assert!(message.contains("+made by the agent"), "{message}");
    let id = request["id"].clone();
    client.write(&json!({"jsonrpc": "2.0", "id": id, "result": {
        "action": "accept", "content": {"answer": "no"},
    }}));
    let result = client.next();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["_meta"]["dev.smith/status"], "blocked",
        "{result}"
    );
    assert!(!project.join("made.txt").exists());
    write(&mut client, 3, "made.txt");
    let request = client.next();
    let id = request["id"].clone();
    client.write(&json!({"jsonrpc": "2.0", "id": id, "result": {
        "action": "accept", "content": {"answer": "yes"},
    }}));
    let result = client.next();
    assert_eq!(result["id"], 3, "{result}");
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(project.join("made.txt").exists());
    client.finish();

    // workspace (the default): inside runs, outside is refused, nothing asked.
    let outside = home.path().join("outside.txt").display().to_string();
    let mut client = McpClient::start(home.path(), &["--cwd", &cwd]);
    client.initialize(json!({"elicitation": {}}));
    write(&mut client, 2, "inside.txt");
    let result = client.next();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["isError"], false, "{result}");
    write(&mut client, 3, &outside);
    let result = client.next();
    assert_eq!(result["id"], 3, "{result}");
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("workspace"), "{text}");
    assert!(project.join("inside.txt").exists());
    assert!(!home.path().join("outside.txt").exists());
    client.finish();

    // read-only: every write is refused.
    let mut client = McpClient::start(home.path(), &["--cwd", &cwd, "--approval", "read-only"]);
    client.initialize(json!({"elicitation": {}}));
    write(&mut client, 2, "again.txt");
    let result = client.next();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("read-only"), "{text}");
    assert!(!project.join("again.txt").exists());
    client.finish();
}
