//! `smith acp` end to end, with both official ACP SDKs as clients and
//! with every record checked against the ACP schema.
//!
//! One scripted scenario (the mock provider, docs/mock-provider.md) in the
//! `ask` approval mode: the first prompt's "model" thinks, says something,
//! reads notes.txt (nothing asked: it only observes), edits it (the client allows it once), writes new.txt (allowed
//! always in this session) and runs a command (rejected: the call is
//! blocked and the file it would write never appears); the second prompt
//! runs `sleep 30`, which the client cancels as soon as the call reports
//! `in_progress`; then `session/load` replays the session.
//!
//! The Python client needs `agent-client-protocol` (PyPI) importable by
//! python3, the TypeScript client node and `@agentclientprotocol/sdk`
//! (npm) under the test cache; the schema check reads the schema that
//! package ships. `scripts/setup` installs both; when one is missing the
//! test fails and says so.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PYTHON_SDK: &str = "agent-client-protocol==0.12.1";
const TS_SDK: &str = "@agentclientprotocol/sdk@2.4.0";

/// Where scripts/setup installs the npm packages the tests use.
fn cache_dir() -> PathBuf {
    match std::env::var_os("SMITH_TEST_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/smith-test")
        }
    }
}

fn ts_sdk_dir() -> PathBuf {
    cache_dir().join("acp-ts")
}

fn ts_sdk_package() -> PathBuf {
    ts_sdk_dir().join("node_modules/@agentclientprotocol/sdk")
}

fn missing(what: &str) -> ! {
    panic!(
        "{what}; run scripts/setup (it installs {PYTHON_SDK} for python3 and {TS_SDK} under {}), then run the tests again",
        ts_sdk_dir().display()
    )
}

const SCRIPT: &str = r#"[
  [{"thinking": "Plan: edit, write, check."},
   {"text": "Tidying the notes."},
   {"tool_call": {"id": "c0", "name": "read", "arguments": {"path": "notes.txt"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "c1", "name": "edit", "arguments": {"path": "notes.txt", "old_text": "hello", "new_text": "goodbye"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "c2", "name": "write", "arguments": {"path": "new.txt", "content": "fresh\n"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "c3", "name": "bash", "arguments": {"command": "echo denied > denied.txt"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "All done."}, {"stop": {"reason": "end"}}],
  [{"tool_call": {"id": "c4", "name": "bash", "arguments": {"command": "sleep 30; echo late > late.txt"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "never sent"}, {"stop": {"reason": "end"}}]
]"#;

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    script: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "hello world\n").unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    Fixture {
        _dir: dir,
        home,
        work,
        script,
    }
}

/// What both SDK clients must have seen, and what the files say.
fn check_summary(summary: &Value, fx: &Fixture) {
    assert_eq!(summary["protocol_version"], 1, "{summary}");
    assert_eq!(summary["load_session"], true, "{summary}");
    assert_eq!(summary["agent"], "smith", "{summary}");
    assert_eq!(summary["first_stop"], "end_turn", "{summary}");
    assert_eq!(
        summary["thoughts"], "Plan: edit, write, check.",
        "{summary}"
    );
    assert_eq!(summary["text"], "Tidying the notes.All done.", "{summary}");
    assert_eq!(
        summary["calls"],
        json!([
            ["c0", "read", "pending"],
            ["c1", "edit", "pending"],
            ["c2", "edit", "pending"],
            ["c3", "execute", "pending"]
        ]),
        "{summary}"
    );
    assert_eq!(
        summary["final_status"],
        json!({"c0": "completed", "c1": "completed", "c2": "completed", "c3": "failed"}),
        "{summary}"
    );
    let notes = fx.work.join("notes.txt").to_string_lossy().into_owned();
    let edit = json!([{"type": "diff", "path": notes, "oldText": "hello", "newText": "goodbye"}]);
    assert_eq!(summary["edit_diff"], edit, "{summary}");
    assert!(
        summary["edit_text"]
            .as_str()
            .is_some_and(|t| t.contains("Edited notes.txt")),
        "{summary}"
    );
    assert_eq!(summary["announced_edit_diff"], edit, "{summary}");
    let new = fx.work.join("new.txt").to_string_lossy().into_owned();
    let write = &summary["write_diff"][0];
    assert_eq!(write["path"], new, "{summary}");
    assert_eq!(write["newText"], "fresh\n", "{summary}");
    assert!(
        write["oldText"].is_null(),
        "a new file has no old text: {summary}"
    );
    assert!(
        summary["denied_text"]
            .as_str()
            .is_some_and(|t| t.contains("smith/permissions") && t.contains("declined")),
        "the denial is recorded as smith records any: {summary}"
    );
    let permissions = summary["permissions"].as_array().unwrap();
    let asked: Vec<&str> = permissions
        .iter()
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["c1", "c2", "c3", "c4"], "{summary}");
    assert_eq!(
        permissions[0]["options"],
        json!([
            ["yes", "allow_once"],
            ["no", "reject_once"],
            ["always in this session", "allow_always"]
        ]),
        "{summary}"
    );
    assert_eq!(summary["second_stop"], "cancelled", "{summary}");
    assert!(
        summary["cancel_seconds"].as_f64().unwrap() < 20.0,
        "the cancel ended the 30 s command: {summary}"
    );
    assert_eq!(summary["cancelled_status"], "failed", "{summary}");
    assert_eq!(
        summary["replay_user"],
        json!(["tidy the notes, then check", "run the slow check"]),
        "{summary}"
    );
    assert_eq!(
        summary["replay_calls"],
        json!(["c0", "c1", "c2", "c3", "c4"]),
        "{summary}"
    );
    assert_eq!(
        summary["replay_status"],
        json!({"c0": "completed", "c1": "completed", "c2": "completed", "c3": "failed", "c4": "failed"}),
        "{summary}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.work.join("notes.txt")).unwrap(),
        "goodbye world\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.work.join("new.txt")).unwrap(),
        "fresh\n"
    );
    assert!(
        !fx.work.join("denied.txt").exists(),
        "the rejected command ran"
    );
    assert!(
        !fx.work.join("late.txt").exists(),
        "the cancelled command finished"
    );
}

fn run_client(mut command: Command, fx: &Fixture) -> Value {
    let out = command
        .env("SMITH_HOME", &fx.home)
        .output()
        .expect("the client script starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the ACP client failed:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The session went to the test's own store, not the user's: an SDK
    // that starts the agent with a trimmed environment drops SMITH_HOME.
    let recorded = std::fs::read_dir(fx.home.join("data/sessions"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "smith"))
        })
        .unwrap_or(false);
    assert!(
        recorded,
        "the client's smith recorded no session under SMITH_HOME ({}): the client must pass its environment on",
        fx.home.display()
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("the client prints a JSON summary ({e}):\n{stdout}\n{stderr}"))
}

#[test]
fn the_official_python_sdk_drives_smith_acp() {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m, acp; print(m.version('agent-client-protocol'))",
        ])
        .output();
    match probe {
        Err(e) => missing(&format!("python3 could not be started ({e})")),
        Ok(out) if !out.status.success() => missing(&format!(
            "the ACP Python SDK is not importable ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(out) if String::from_utf8_lossy(&out.stdout).trim() != "0.12.1" => missing(&format!(
            "python3 has agent-client-protocol {}, not the pinned 0.12.1",
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Ok(_) => {}
    }
    let fx = fixture();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/rpc/tests/acp_client.py");
    let mut command = Command::new("python3");
    command
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_smith"))
        .arg(&fx.work)
        .arg(&fx.script);
    let summary = run_client(command, &fx);
    check_summary(&summary, &fx);
}

#[test]
fn the_official_typescript_sdk_drives_smith_acp() {
    match Command::new("node").arg("--version").output() {
        Err(e) => missing(&format!(
            "node could not be started ({e}); install Node.js 20 or newer"
        )),
        Ok(out) if !out.status.success() => missing("node --version failed"),
        Ok(_) => {}
    }
    let manifest = ts_sdk_package().join("package.json");
    let version = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned));
    match version.as_deref() {
        Some("2.4.0") => {}
        Some(other) => missing(&format!(
            "{} is version {other}, not the pinned 2.4.0",
            manifest.display()
        )),
        None => missing(&format!("{} was not found", manifest.display())),
    }
    let fx = fixture();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/rpc/tests/acp_client.mjs");
    let mut command = Command::new("node");
    command
        .arg(&script)
        .arg(ts_sdk_dir())
        .arg(env!("CARGO_BIN_EXE_smith"))
        .arg(&fx.work)
        .arg(&fx.script);
    let summary = run_client(command, &fx);
    check_summary(&summary, &fx);
}

// ---- the schema check ----

/// A small JSON Schema evaluator for the constructs the ACP schema uses:
/// `$ref`, `allOf`, `anyOf`, `oneOf`, `const`, `enum`, `type`,
/// `required`, `properties`, `items`, `additionalProperties`, `minimum`.
struct Schema {
    root: Value,
}

impl Schema {
    fn load() -> Schema {
        let path = ts_sdk_package().join("schema/v1/schema.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            missing(&format!(
                "the ACP schema {} could not be read ({e})",
                path.display()
            ))
        });
        Schema {
            root: serde_json::from_str(&text).unwrap(),
        }
    }

    fn def(&self, name: &str) -> &Value {
        self.root["$defs"]
            .get(name)
            .unwrap_or_else(|| panic!("the ACP schema has no definition {name}"))
    }

    /// Why `value` does not fit `schema`, if it does not.
    fn check(&self, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
        let Value::Object(s) = schema else {
            return Ok(());
        };
        if let Some(Value::String(r)) = s.get("$ref") {
            let name = r.trim_start_matches("#/$defs/");
            self.check(self.def(name), value, at)?;
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            for sub in all {
                self.check(sub, value, at)?;
            }
        }
        if let Some(Value::Array(any)) = s.get("anyOf")
            && !any.iter().any(|sub| self.check(sub, value, at).is_ok())
        {
            let why: Vec<String> = any
                .iter()
                .filter_map(|sub| self.check(sub, value, at).err())
                .collect();
            return Err(format!("{at}: fits no anyOf branch: {}", why.join(" | ")));
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let fits = one
                .iter()
                .filter(|sub| self.check(sub, value, at).is_ok())
                .count();
            if fits != 1 {
                let why: Vec<String> = one
                    .iter()
                    .filter_map(|sub| self.check(sub, value, at).err())
                    .collect();
                return Err(format!(
                    "{at}: fits {fits} oneOf branches, not exactly one: {}",
                    why.join(" | ")
                ));
            }
        }
        if let Some(c) = s.get("const")
            && c != value
        {
            return Err(format!("{at}: is {value}, not {c}"));
        }
        if let Some(Value::Array(options)) = s.get("enum")
            && !options.contains(value)
        {
            return Err(format!("{at}: {value} is not one of {options:?}"));
        }
        if let Some(t) = s.get("type") {
            let types: Vec<&str> = match t {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let fits = types.iter().any(|t| match *t {
                "object" => value.is_object(),
                "array" => value.is_array(),
                "string" => value.is_string(),
                "boolean" => value.is_boolean(),
                "null" => value.is_null(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                _ => true,
            });
            if !fits {
                return Err(format!("{at}: {value} is not of type {types:?}"));
            }
        }
        if let Some(min) = s.get("minimum").and_then(Value::as_f64)
            && value.as_f64().is_some_and(|v| v < min)
        {
            return Err(format!("{at}: {value} is below {min}"));
        }
        if let Value::Object(obj) = value {
            if let Some(Value::Array(required)) = s.get("required") {
                for key in required.iter().filter_map(Value::as_str) {
                    if !obj.contains_key(key) {
                        return Err(format!("{at}: the required {key:?} is missing"));
                    }
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for (key, v) in obj {
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => self.check(sub, v, &format!("{at}.{key}"))?,
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            return Err(format!("{at}: {key:?} is not allowed"));
                        }
                        Some(sub @ Value::Object(_)) => {
                            self.check(sub, v, &format!("{at}.{key}"))?;
                        }
                        _ => {}
                    },
                }
            }
        }
        if let (Value::Array(items), Some(sub)) = (value, s.get("items")) {
            for (i, item) in items.iter().enumerate() {
                self.check(sub, item, &format!("{at}[{i}]"))?;
            }
        }
        Ok(())
    }

    fn fits(&self, def: &str, value: &Value, record: &Value) {
        if let Err(why) = self.check(self.def(def), value, def) {
            panic!(
                "a record smith acp sent does not fit the ACP schema's {def}: {why}\nrecord: {record}"
            );
        }
    }
}

struct Peer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: Receiver<String>,
    sent: Vec<Value>,
}

impl Peer {
    /// Starts `smith acp` on the fixture's script and folders with the
    /// approval mode `approval`, its records read on a thread of their own.
    fn start(fx: &Fixture, approval: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
            .args([
                "acp",
                "--provider",
                "mock",
                "--approval",
                approval,
                "--mock-script",
            ])
            .arg(&fx.script)
            .current_dir(&fx.work)
            .env("SMITH_HOME", &fx.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            sent: Vec::new(),
        }
    }

    fn send(&mut self, value: Value) {
        writeln!(self.stdin, "{value}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("smith acp answers within 60 s");
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("smith acp wrote a line that is not JSON ({e}): {line}"));
        self.sent.push(value.clone());
        value
    }
}

/// Plays the scenario over raw stdio; answers permission requests by call
/// id and cancels `c4` when it is in progress. Returns each answer by
/// request id.
fn drive(peer: &mut Peer, fx: &Fixture) -> Vec<Value> {
    let work = fx.work.to_string_lossy().into_owned();
    let choices = json!({"c1": "yes", "c2": "always in this session", "c3": "no", "c4": "yes"});
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": work, "mcpServers": []}}),
    ];
    let mut answers = Vec::new();
    let mut session = String::new();
    for request in requests {
        peer.send(request);
        let answer = peer.next();
        if let Some(id) = answer["result"]["sessionId"].as_str() {
            session = id.to_owned();
        }
        answers.push(answer);
    }
    for (id, text) in [(3, "tidy the notes, then check"), (4, "run the slow check")] {
        peer.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}));
        loop {
            let record = peer.next();
            if record["method"] == "session/request_permission" {
                let call = record["params"]["toolCall"]["toolCallId"].as_str().unwrap();
                let choice = choices[call].clone();
                peer.send(json!({"jsonrpc": "2.0", "id": record["id"], "result": {"outcome": {"outcome": "selected", "optionId": choice}}}));
            } else if record["method"] == "session/update" {
                let update = &record["params"]["update"];
                if update["toolCallId"] == "c4" && update["status"] == "in_progress" {
                    peer.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
                }
            } else if record["id"] == id {
                answers.push(record);
                break;
            }
        }
    }
    peer.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/load", "params": {"sessionId": session, "cwd": work, "mcpServers": []}}));
    loop {
        let record = peer.next();
        if record["id"] == 5 {
            answers.push(record);
            break;
        }
    }
    // The approval mode and the model, through the protocol's modes and
    // configuration options.
    peer.send(json!({"jsonrpc": "2.0", "id": 9, "method": "session/set_mode", "params": {"sessionId": session, "modeId": "workspace"}}));
    answers.push(peer.next());
    peer.send(json!({"jsonrpc": "2.0", "id": 10, "method": "session/set_config_option", "params": {"sessionId": session, "configId": "model", "value": "mock-1"}}));
    loop {
        let record = peer.next();
        if record["id"] == 10 {
            answers.push(record);
            break;
        }
    }
    // Errors: an unknown session, a relative cwd, an unknown method.
    peer.send(json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}}));
    answers.push(peer.next());
    peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}));
    answers.push(peer.next());
    peer.send(json!({"jsonrpc": "2.0", "id": 8, "method": "session/fly", "params": {}}));
    answers.push(peer.next());
    answers
}

#[test]
fn every_record_smith_acp_sends_fits_the_acp_schema() {
    let schema = Schema::load();
    let fx = fixture();
    let mut peer = Peer::start(&fx, "ask");
    let started = Instant::now();
    let answers = drive(&mut peer, &fx);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the cancel ended the slow command"
    );
    let Peer {
        mut child,
        stdin,
        sent,
        ..
    } = peer;
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "smith acp ends cleanly when its input ends: {status}"
    );

    // Every record sent, by what it is: results by their request's id.
    let responses = [
        (1, "InitializeResponse"),
        (2, "NewSessionResponse"),
        (3, "PromptResponse"),
        (4, "PromptResponse"),
        (5, "LoadSessionResponse"),
        (9, "SetSessionModeResponse"),
        (10, "SetSessionConfigOptionResponse"),
    ];
    let mut kinds = std::collections::BTreeMap::new();
    for record in &sent {
        assert_eq!(record["jsonrpc"], "2.0", "{record}");
        match record["method"].as_str() {
            Some("session/update") => {
                schema.fits("SessionNotification", &record["params"], record);
                let kind = record["params"]["update"]["sessionUpdate"]
                    .as_str()
                    .unwrap();
                *kinds.entry(kind.to_owned()).or_insert(0) += 1;
            }
            Some("session/request_permission") => {
                schema.fits("RequestPermissionRequest", &record["params"], record);
            }
            Some(other) => panic!("smith acp sent an unexpected request {other}: {record}"),
            None if record.get("error").is_some() => schema.fits("Error", &record["error"], record),
            None => {
                let id = record["id"].as_u64().unwrap();
                let Some((_, def)) = responses.iter().find(|(i, _)| *i == id) else {
                    panic!("an unexpected result for request {id}: {record}");
                };
                schema.fits(def, &record["result"], record);
            }
        }
    }
    for kind in [
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "user_message_chunk",
    ] {
        assert!(kinds.contains_key(kind), "no {kind} was sent: {kinds:?}");
    }
    assert_eq!(answers[2]["result"]["stopReason"], "end_turn");
    assert_eq!(answers[3]["result"]["stopReason"], "cancelled");
    let modes = &answers[1]["result"]["modes"];
    assert_eq!(modes["currentModeId"], "ask", "{modes}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ask", "workspace", "read-only", "full"]);
    assert_eq!(
        answers[1]["result"]["configOptions"][0]["currentValue"],
        "mock-1"
    );
    assert_eq!(answers[4]["result"]["modes"]["currentModeId"], "ask");
    assert_eq!(answers[5]["result"], json!({}), "set_mode answers");
    assert_eq!(
        answers[6]["result"]["configOptions"][0]["currentValue"], "mock-1",
        "set_config_option answers with the options"
    );
    let unknown = &answers[7]["error"];
    assert_eq!(unknown["code"], -32602, "{unknown}");
    assert!(
        unknown["message"].as_str().unwrap().contains("\"nope\""),
        "{unknown}"
    );
    let relative = &answers[8]["error"];
    assert!(
        relative["message"]
            .as_str()
            .unwrap()
            .contains("relative/dir"),
        "{relative}"
    );
    let method = &answers[9]["error"];
    assert_eq!(method["code"], -32601, "{method}");
    assert!(
        method["message"]
            .as_str()
            .unwrap()
            .contains("session/prompt"),
        "{method}"
    );
    assert!(!fx.work.join("denied.txt").exists());
    assert!(!fx.work.join("late.txt").exists());
}

/// The agent's todo list (smith/todo's `todo_write`) reaches the editor
/// as the ACP plan: each write that succeeds is followed by a `plan`
/// update with the whole list, and `session/load` replays it after the
/// call. Every record fits the schema.
#[test]
fn the_todo_list_is_sent_as_the_plan_and_replayed_on_load() {
    let schema = Schema::load();
    let fx = fixture();
    std::fs::write(
        &fx.script,
        json!([
            [
                {"tool_call": {"id": "t1", "name": "todo_write", "arguments": {"todos": [
                    {"content": "Read the notes", "status": "in_progress"},
                    {"content": "Tidy them", "status": "pending"}
                ]}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [
                {"tool_call": {"id": "t2", "name": "todo_write", "arguments": {"todos": [
                    {"content": "Read the notes", "status": "completed"},
                    {"content": "Tidy them", "status": "in_progress"}
                ]}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": "Planned."}, {"stop": {"reason": "end"}}]
        ])
        .to_string(),
    )
    .unwrap();
    let mut peer = Peer::start(&fx, "full");
    let work = fx.work.to_string_lossy().into_owned();
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    assert_eq!(peer.next()["id"], 1);
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": work, "mcpServers": []}}));
    let session = peer.next()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The updates of one request, up to its answer.
    let until_answer = |peer: &mut Peer, id: u64| {
        let mut updates = Vec::new();
        loop {
            let record = peer.next();
            if record["id"] == id {
                assert!(record.get("error").is_none(), "{record}");
                return updates;
            }
            if record["method"] == "session/update" {
                schema.fits("SessionNotification", &record["params"], &record);
                updates.push(record["params"]["update"].clone());
            }
        }
    };
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "plan it"}]}}));
    let live = until_answer(&mut peer, 3);
    let first = json!({"sessionUpdate": "plan", "entries": [
        {"content": "Read the notes", "priority": "medium", "status": "in_progress"},
        {"content": "Tidy them", "priority": "medium", "status": "pending"}
    ]});
    let second = json!({"sessionUpdate": "plan", "entries": [
        {"content": "Read the notes", "priority": "medium", "status": "completed"},
        {"content": "Tidy them", "priority": "medium", "status": "in_progress"}
    ]});
    let plans: Vec<&Value> = live
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans, [&first, &second], "{live:#?}");
    // Each plan follows the completion of the call that wrote it.
    let at = |pred: &dyn Fn(&Value) -> bool| live.iter().position(pred).unwrap();
    let done = |id: &'static str| {
        move |u: &Value| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == id
                && u["status"] == "completed"
        }
    };
    assert!(at(&done("t1")) < at(&|u: &Value| *u == first));
    assert!(at(&|u: &Value| *u == first) < at(&done("t2")));
    assert!(at(&done("t2")) < at(&|u: &Value| *u == second));
    // The new session took its name from its first prompt.
    let listed = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", &fx.home)
        .env_remove("XDG_DATA_HOME")
        .args(["session", "info", &session, "--json"])
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&listed.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&listed.stderr)));
    assert_eq!(info["name"], "plan-it", "{info}");
    // Loading the session replays both, in place.
    peer.send(json!({"jsonrpc": "2.0", "id": 4, "method": "session/load", "params": {"sessionId": session, "cwd": work, "mcpServers": []}}));
    let replayed = until_answer(&mut peer, 4);
    let plans: Vec<&Value> = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans, [&first, &second], "{replayed:#?}");
    let Peer {
        mut child, stdin, ..
    } = peer;
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

// ---- the editor's files and terminals ----

/// The scenario of an editor that owns the files and the terminals: in
/// mode `full`, a read, an edit and a write through the editor, a read
/// the editor fails, a read outside the project, a command in the
/// editor's terminal; then, in mode `workspace`, a command smith runs
/// itself.
const EDITOR_SCRIPT: &str = r#"[
  [{"tool_call": {"id": "e0", "name": "read", "arguments": {"path": "notes.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "e1", "name": "edit", "arguments": {"path": "notes.txt", "old_text": "hello", "new_text": "goodbye"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "e2", "name": "write", "arguments": {"path": "new.txt", "content": "fresh\n"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "e3", "name": "read", "arguments": {"path": "broken.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "e4", "name": "read", "arguments": {"path": "../outside.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "e5", "name": "bash", "arguments": {"command": "echo from smith"}}}, {"stop": {"reason": "tool_use"}}],
  [{"text": "Edited in the editor."}, {"stop": {"reason": "end"}}],
  [{"tool_call": {"id": "e6", "name": "bash", "arguments": {"command": "echo local > local.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"text": "Ran here."}, {"stop": {"reason": "end"}}]
]"#;

/// What the pretend editor terminal prints (the client scripts' own).
const TERMINAL_OUTPUT: &str = "from the editor's terminal\n";

/// The fixture with the editor scenario, its project path canonical (the
/// paths smith sends are), and a file beside the project.
fn editor_fixture() -> Fixture {
    let mut fx = fixture();
    fx.work = std::fs::canonicalize(&fx.work).unwrap();
    std::fs::write(&fx.script, EDITOR_SCRIPT).unwrap();
    std::fs::write(fx.work.with_file_name("outside.txt"), "outside\n").unwrap();
    fx
}

/// The session's journal as `smith session dump` prints it.
fn dump(fx: &Fixture, session: &str) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["session", "dump", session])
        .current_dir(&fx.work)
        .env("SMITH_HOME", &fx.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "smith session dump {session} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What both SDK clients must have seen as the editor, what the disk and
/// the editor's buffers say, and what the journal recorded.
fn check_editor_summary(summary: &Value, fx: &Fixture) {
    let work = fx.work.to_string_lossy().into_owned();
    let notes = format!("{work}/notes.txt");
    let new = format!("{work}/new.txt");
    assert_eq!(summary["first_stop"], "end_turn", "{summary}");
    let requests = &summary["first_requests"];
    let shell = requests[5]["command"].as_str().unwrap_or_default();
    assert!(
        shell.starts_with('/') && shell.ends_with("sh"),
        "the terminal runs the shell by its path: {summary}"
    );
    // No request about ../outside.txt: the roots refused it first.
    assert_eq!(
        *requests,
        json!([
            {"method": "fs/read_text_file", "path": notes},
            // The edit reads the buffer it changes, then writes it.
            {"method": "fs/read_text_file", "path": notes},
            {"method": "fs/write_text_file", "path": notes, "content": "goodbye buffer\n"},
            {"method": "fs/write_text_file", "path": new, "content": "fresh\n"},
            {"method": "fs/read_text_file", "path": format!("{work}/broken.txt")},
            {"method": "terminal/create", "command": shell, "args": ["-c", "echo from smith"], "cwd": work, "outputByteLimit": 51200},
            {"method": "terminal/wait_for_exit", "terminalId": "term-1"},
            {"method": "terminal/output", "terminalId": "term-1"},
            {"method": "terminal/release", "terminalId": "term-1"}
        ]),
        "{summary}"
    );
    let calls = &summary["first_calls"];
    let status: Vec<(&str, &str)> = ["e0", "e1", "e2", "e3", "e4", "e5"]
        .iter()
        .map(|id| (*id, calls[id]["status"].as_str().unwrap_or("none")))
        .collect();
    assert_eq!(
        status,
        [
            ("e0", "completed"),
            ("e1", "completed"),
            ("e2", "completed"),
            ("e3", "failed"),
            ("e4", "failed"),
            ("e5", "completed")
        ],
        "{summary}"
    );
    let text = |id: &str| calls[id]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        text("e0"),
        "hello buffer",
        "the read saw the buffer: {summary}"
    );
    assert!(
        text("e1").contains("-hello buffer\n+goodbye buffer"),
        "{summary}"
    );
    assert!(
        text("e3").contains("fs/read_text_file")
            && text("e3").contains("no such buffer: broken.txt"),
        "the client's error is the tool's: {summary}"
    );
    assert!(
        text("e4").contains("outside the allowed roots"),
        "{summary}"
    );
    assert_eq!(
        text("e5"),
        format!("{TERMINAL_OUTPUT}[exit code 0]"),
        "the output is the terminal's: {summary}"
    );
    let terminals = calls["e5"]["terminals"].as_array().unwrap();
    assert!(
        !terminals.is_empty() && terminals.iter().all(|t| t == "term-1"),
        "the call shows the terminal: {summary}"
    );
    // In `workspace` smith runs the command itself, sandboxed.
    assert_eq!(summary["second_stop"], "end_turn", "{summary}");
    assert_eq!(summary["second_requests"], json!([]), "{summary}");
    assert_eq!(
        summary["second_calls"]["e6"]["status"], "completed",
        "{summary}"
    );
    assert!(
        summary["second_calls"]["e6"]["terminals"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{summary}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.work.join("local.txt")).unwrap(),
        "local\n"
    );
    // The writes landed in the editor, not on disk.
    assert_eq!(
        summary["buffers"],
        json!({notes.clone(): "goodbye buffer\n", new.clone(): "fresh\n"}),
        "{summary}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.work.join("notes.txt")).unwrap(),
        "hello world\n",
        "smith left the file on disk to the editor"
    );
    assert!(!fx.work.join("new.txt").exists(), "smith created new.txt");

    // The journal records each effect as it happened.
    let entries = dump(fx, summary["session_id"].as_str().unwrap());
    let completions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "effect_completion")
        .map(|e| &e["content"])
        .collect();
    let outcome = |i: usize| {
        let c = completions[i];
        (
            c["outcome"].as_str().unwrap_or_default(),
            c["mutation"].as_str().unwrap_or_default(),
        )
    };
    assert!(completions.len() >= 6, "{completions:#?}");
    assert_eq!(outcome(0), ("ok", "not-applied"), "{completions:#?}");
    assert_eq!(completions[0]["output"]["content"], "hello buffer");
    assert_eq!(outcome(1), ("ok", "applied"), "{completions:#?}");
    assert_eq!(outcome(2), ("ok", "applied"), "{completions:#?}");
    assert_eq!(outcome(3), ("error", "not-applied"), "{completions:#?}");
    assert!(
        completions[3]["output"]["content"]
            .as_str()
            .unwrap()
            .contains("no such buffer: broken.txt"),
        "{completions:#?}"
    );
    assert_eq!(outcome(4), ("error", "not-applied"), "{completions:#?}");
    assert_eq!(outcome(5), ("ok", "applied"), "{completions:#?}");
    assert_eq!(completions[5]["output"]["details"]["terminal"], "term-1");
}

#[test]
fn the_python_sdk_as_an_editor_gets_the_file_and_terminal_requests() {
    let fx = editor_fixture();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/rpc/tests/acp_editor_client.py");
    let mut command = Command::new("python3");
    command
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_smith"))
        .arg(&fx.work)
        .arg(&fx.script);
    let summary = run_client(command, &fx);
    check_editor_summary(&summary, &fx);
}

#[test]
fn the_typescript_sdk_as_an_editor_gets_the_file_and_terminal_requests() {
    if !ts_sdk_package().join("package.json").is_file() {
        missing(&format!(
            "{} was not found",
            ts_sdk_package().join("package.json").display()
        ));
    }
    let fx = editor_fixture();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/rpc/tests/acp_editor_client.mjs");
    let mut command = Command::new("node");
    command
        .arg(&script)
        .arg(ts_sdk_dir())
        .arg(env!("CARGO_BIN_EXE_smith"))
        .arg(&fx.work)
        .arg(&fx.script);
    let summary = run_client(command, &fx);
    check_editor_summary(&summary, &fx);
}

/// A run cancelled while a tool waits on the editor ends at once: an
/// unanswered `fs/read_text_file` stops waiting, and an unanswered
/// `terminal/wait_for_exit` is followed by `terminal/kill`,
/// `terminal/output` and `terminal/release`; both prompts answer
/// `cancelled`, the journal records both effects cancelled, a late
/// answer is ignored. A command past its timeout is killed the same way.
/// Every record fits the ACP schema.
#[test]
fn a_cancel_ends_the_waits_on_the_editor() {
    let schema = Schema::load();
    let fx = editor_fixture();
    std::fs::write(
        &fx.script,
        r#"[
  [{"tool_call": {"id": "w0", "name": "read", "arguments": {"path": "notes.txt"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "w1", "name": "bash", "arguments": {"command": "sleep 30"}}}, {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "w2", "name": "bash", "arguments": {"command": "sleep 30", "timeout": 1}}}, {"stop": {"reason": "tool_use"}}],
  [{"text": "It timed out."}, {"stop": {"reason": "end"}}]
]"#,
    )
    .unwrap();
    let mut peer = Peer::start(&fx, "full");
    let work = fx.work.to_string_lossy().into_owned();
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}}));
    assert_eq!(peer.next()["id"], 1);
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": work, "mcpServers": []}}));
    let session = peer.next()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}});

    // The read waits on the editor, which never answers; the user cancels.
    let started = Instant::now();
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read it"}]}}));
    let mut unanswered = None;
    let first = loop {
        let record = peer.next();
        if record["method"] == "fs/read_text_file" {
            assert_eq!(
                record["params"]["path"],
                format!("{work}/notes.txt"),
                "{record}"
            );
            unanswered = Some(record["id"].clone());
            peer.send(cancel.clone());
        } else if record["id"] == 3 {
            break record;
        }
    };
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    assert!(started.elapsed() < Duration::from_secs(20));
    // The answer that comes after the cancel is ignored.
    let late = unanswered.expect("smith asked the editor for notes.txt");
    peer.send(json!({"jsonrpc": "2.0", "id": late, "result": {"content": "late"}}));

    // The command waits in the editor's terminal; the user cancels.
    let started = Instant::now();
    peer.send(json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}}));
    let mut methods = Vec::new();
    let mut end = Value::Null;
    let second = loop {
        let record = peer.next();
        let method = record["method"].as_str().unwrap_or_default().to_owned();
        let answer =
            |result: Value| json!({"jsonrpc": "2.0", "id": record["id"], "result": result});
        match method.as_str() {
            "terminal/create" => {
                methods.push(method);
                peer.send(answer(json!({"terminalId": "term-9"})));
            }
            "terminal/wait_for_exit" => {
                methods.push(method);
                peer.send(cancel.clone());
            }
            "terminal/kill" | "terminal/release" => {
                methods.push(method);
                peer.send(answer(json!({})));
            }
            "terminal/output" => {
                methods.push(method);
                peer.send(answer(json!({"output": "partial\n", "truncated": true, "exitStatus": {"exitCode": null, "signal": "SIGTERM"}})));
            }
            "session/update" => {
                let update = &record["params"]["update"];
                if update["toolCallId"] == "w1" && update["status"] == "failed" {
                    end = update.clone();
                }
            }
            _ if record["id"] == 4 => break record,
            _ => {}
        }
    };
    assert_eq!(second["result"]["stopReason"], "cancelled", "{second}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/output",
            "terminal/release"
        ]
    );
    let content = end["content"].as_array().unwrap();
    assert_eq!(
        content[0],
        json!({"type": "terminal", "terminalId": "term-9"}),
        "{end}"
    );
    let text = content[1]["content"]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "partial\n[output truncated: the terminal kept the last 51200 bytes]\n[cancelled after"
        ),
        "{end}"
    );

    // A command past its timeout (1 s): the editor never says it exited.
    let started = Instant::now();
    peer.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run it briefly"}]}}));
    let mut methods = Vec::new();
    let mut end = Value::Null;
    let third = loop {
        let record = peer.next();
        let method = record["method"].as_str().unwrap_or_default().to_owned();
        let answer =
            |result: Value| json!({"jsonrpc": "2.0", "id": record["id"], "result": result});
        match method.as_str() {
            "terminal/create" => {
                methods.push(method);
                peer.send(answer(json!({"terminalId": "term-10"})));
            }
            "terminal/wait_for_exit" => methods.push(method),
            "terminal/kill" | "terminal/release" => {
                methods.push(method);
                peer.send(answer(json!({})));
            }
            "terminal/output" => {
                methods.push(method);
                peer.send(answer(json!({"output": "slow\n", "truncated": false})));
            }
            "session/update" => {
                let update = &record["params"]["update"];
                if update["toolCallId"] == "w2" && update["status"] == "failed" {
                    end = update.clone();
                }
            }
            _ if record["id"] == 5 => break record,
            _ => {}
        }
    };
    assert_eq!(third["result"]["stopReason"], "end_turn", "{third}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/output",
            "terminal/release"
        ]
    );
    assert_eq!(
        end["content"][1]["content"]["text"],
        "slow\n[timed out after 1 s; the terminal was killed]",
        "{end}"
    );

    let Peer {
        mut child,
        stdin,
        sent,
        ..
    } = peer;
    drop(stdin);
    assert!(child.wait().unwrap().success());
    for record in &sent {
        let def = match record["method"].as_str() {
            Some("session/update") => "SessionNotification",
            Some("fs/read_text_file") => "ReadTextFileRequest",
            Some("terminal/create") => "CreateTerminalRequest",
            Some("terminal/wait_for_exit") => "WaitForTerminalExitRequest",
            Some("terminal/kill") => "KillTerminalRequest",
            Some("terminal/output") => "TerminalOutputRequest",
            Some("terminal/release") => "ReleaseTerminalRequest",
            Some(other) => panic!("smith acp sent an unexpected request {other}: {record}"),
            None => match record["id"].as_u64() {
                Some(1) => "InitializeResponse",
                Some(2) => "NewSessionResponse",
                Some(3..=5) => "PromptResponse",
                _ => panic!("an unexpected record: {record}"),
            },
        };
        let params = if record.get("method").is_some() {
            &record["params"]
        } else {
            &record["result"]
        };
        schema.fits(def, params, record);
    }

    let entries = dump(&fx, &session);
    let completions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "effect_completion")
        .map(|e| &e["content"])
        .collect();
    let summary: Vec<(String, String, String)> = completions
        .iter()
        .map(|c| {
            (
                c["outcome"].as_str().unwrap_or_default().to_owned(),
                c["mutation"].as_str().unwrap_or_default().to_owned(),
                c["output"]["details"]["error"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "cancelled".to_owned(),
                "not-applied".to_owned(),
                "cancelled".to_owned()
            ),
            (
                "cancelled".to_owned(),
                "unknown".to_owned(),
                "cancelled".to_owned()
            ),
            (
                "error".to_owned(),
                "unknown".to_owned(),
                "timed-out".to_owned()
            )
        ],
        "{completions:#?}"
    );
}
