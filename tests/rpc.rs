//! `smith rpc` end to end: a test client spawns the built binary with the
//! scripted provider, speaks JSON-RPC over its standard input and output,
//! assembles complete messages from the streamed events, and checks them
//! against the session (the runtime's `messages`, and the conversation a
//! fresh server reads back from the store).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
    /// Notifications seen so far, in order.
    notes: Vec<Value>,
    /// Every record in arrival order (notifications and responses).
    records: Vec<Value>,
}

impl Client {
    fn spawn(home: &Path, work: &Path, args: &[&str]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
            .arg("rpc")
            .args(["--provider", "mock", "--cwd"])
            .arg(work)
            .args(args)
            .env("SMITH_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the smith binary built for this test starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                if reader.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                    break;
                }
                assert_eq!(line.last(), Some(&b'\n'), "every record ends with LF");
                let text = std::str::from_utf8(&line).expect("stdout is UTF-8");
                let value: Value = serde_json::from_str(text).unwrap_or_else(|e| {
                    panic!("stdout carries only JSON records, got {text:?}: {e}")
                });
                assert_eq!(value["jsonrpc"], "2.0", "{value}");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            lines,
            next_id: 0,
            notes: Vec::new(),
            records: Vec::new(),
        }
    }

    fn raw(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}),
        )
        .unwrap();
        line.push(b'\n');
        self.raw(&line);
        self.next_id
    }

    fn next(&mut self) -> Value {
        let v = self
            .lines
            .recv_timeout(WAIT)
            .expect("the server answers in time");
        self.records.push(v.clone());
        if v.get("method").is_some() {
            self.notes.push(v.clone());
        }
        v
    }

    /// Waits for the response to `id`, collecting notifications meanwhile.
    fn response(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        loop {
            let v = self.next();
            if v.get("method").is_none() && v["id"] == id {
                return v;
            }
            assert!(
                v.get("method").is_some(),
                "a response for another id arrived: {v}"
            );
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let r = self.response(id);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    fn call_err(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let r = self.response(id);
        assert!(r.get("result").is_none(), "{method} should fail: {r}");
        r["error"].clone()
    }

    fn close(mut self) {
        let id = self.send("shutdown", json!({}));
        let r = self.response(id);
        assert_eq!(r["result"], json!({}));
        drop(self.stdin);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "smith rpc exits 0 after shutdown, got {status}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "smith rpc did not exit after shutdown"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        match self.lines.recv_timeout(Duration::from_secs(5)) {
            Err(RecvTimeoutError::Disconnected) => {}
            other => panic!("nothing follows the shutdown response: {other:?}"),
        }
    }
}

fn fixture() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("hello.txt"), "hi from the file\n").unwrap();
    (dir, home, work)
}

fn script(dir: &Path, responses: Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, serde_json::to_vec(&responses).unwrap()).unwrap();
    path.display().to_string()
}

fn text_of(message: &Value) -> String {
    match message["role"].as_str() {
        Some("user") => message["text"].as_str().unwrap_or("").to_owned(),
        _ => message["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Assembles messages from `message_start` / `message_delta` / `message_end`
/// notifications, checking order, and that the deltas add up to the end
/// record's text. Returns the end records' messages.
fn assemble(notes: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for n in notes {
        match n["method"].as_str().unwrap() {
            "message_start" => {
                assert!(open.is_none(), "message_start inside an open message");
                open = Some((
                    n["params"]["role"].as_str().unwrap().to_owned(),
                    String::new(),
                ));
            }
            "message_delta" => {
                let (_, text) = open.as_mut().expect("a delta comes between start and end");
                text.push_str(n["params"]["text"].as_str().unwrap());
            }
            "message_end" => {
                let (role, text) = open.take().expect("message_end closes a started message");
                let message = n["params"]["message"].clone();
                assert_eq!(message["role"], role.as_str());
                if role == "assistant" {
                    assert_eq!(
                        text,
                        text_of(&message),
                        "the deltas add up to the authoritative text"
                    );
                }
                out.push(message);
            }
            _ => {}
        }
    }
    assert!(open.is_none(), "every started message ended");
    out
}

fn all_messages(client: &mut Client) -> Vec<Value> {
    let mut messages = Vec::new();
    let mut offset = 0;
    loop {
        let page = client.call("messages", json!({"offset": offset, "limit": 2}));
        messages.extend(page["messages"].as_array().unwrap().iter().cloned());
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    messages
}

#[test]
fn a_run_streams_messages_that_match_the_session() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([
            [{"text": "Let me "}, {"text": "read it."}, {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "hello.txt"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "It says "}, {"text": "hi \u{2028} there."}, {"stop": {"reason": "end"}}]
        ]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s, "--name", "streamed"]);
    let init = c.call("initialize", json!({}));
    assert_eq!(init["schema_version"], 1);
    assert_eq!(init["session"]["name"], "streamed");
    assert!(
        init["capabilities"]["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("wait_settled"))
    );

    // The prompt carries U+2028 and U+2029 raw: they are data, not line ends.
    c.raw("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"prompt\",\"params\":{\"text\":\"read\u{2028}hello\u{2029}.txt\"}}\n".as_bytes());
    assert_eq!(c.response("p")["result"], json!({"started": true}));
    let w = c.send("wait_settled", json!({}));
    let settled = c.response(w);
    assert_eq!(settled["result"], json!({"settled": true}));
    // The response follows the settled notification.
    assert_eq!(c.notes.last().unwrap()["method"], "settled");

    let methods: Vec<&str> = c
        .notes
        .iter()
        .map(|n| n["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods.first(), Some(&"agent_start"));
    let end = methods
        .iter()
        .position(|m| *m == "agent_end")
        .expect("agent_end");
    assert_eq!(methods[end + 1], "settled");
    let tool_start = methods
        .iter()
        .position(|m| *m == "tool_execution_start")
        .unwrap();
    let tool_end = methods
        .iter()
        .position(|m| *m == "tool_execution_end")
        .unwrap();
    assert!(tool_start < tool_end);
    let tool = &c.notes[tool_end]["params"];
    assert_eq!(
        (tool["status"].as_str(), tool["content"].as_str()),
        (Some("ok"), Some("hi from the file"))
    );

    let assembled = assemble(&c.notes.clone());
    assert_eq!(
        assembled.len(),
        3,
        "user, assistant, assistant: {assembled:?}"
    );
    assert_eq!(
        assembled[0],
        json!({"role": "user", "text": "read\u{2028}hello\u{2029}.txt"})
    );
    assert_eq!(text_of(&assembled[2]), "It says hi \u{2028} there.");

    // The session holds the same messages (plus the tool result), paged.
    let messages = all_messages(&mut c);
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[0], assembled[0]);
    assert_eq!(messages[1], assembled[1]);
    assert_eq!(messages[2]["role"], "tool_result");
    assert_eq!(messages[3], assembled[2]);
    let state = c.call("state", json!({}));
    assert_eq!(
        (state["busy"].as_bool(), state["message_count"].as_u64()),
        (Some(false), Some(4))
    );
    c.close();

    // A fresh server reads the same conversation back from the store.
    let mut again = Client::spawn(
        &home,
        &work,
        &["--mock-script", &s, "--session", "streamed"],
    );
    assert_eq!(all_messages(&mut again), messages);
    let dump = again.call("session/dump", json!({}));
    let kinds: Vec<&str> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"effect_intent") && kinds.contains(&"effect_completion"),
        "{kinds:?}"
    );
    again.close();
}

#[test]
fn malformed_and_unknown_requests_get_correlated_errors_and_serving_continues() {
    let (_dir, home, work) = fixture();
    let mut c = Client::spawn(&home, &work, &[]);
    c.raw(b"this is not json\n");
    let parse = c.next();
    assert_eq!(
        (parse["id"].clone(), parse["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    c.raw(b"[1,2]\n");
    assert_eq!(c.next()["error"]["code"], -32600);
    c.raw(b"{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"state\"\n");
    assert_eq!(c.next()["error"]["code"], -32700);
    let e = c.call_err("frobnicate", json!({}));
    assert_eq!(e["code"], -32601);
    assert_eq!(e["data"]["kind"], "method_not_found");
    for field in ["what", "why", "next"] {
        assert!(
            e["data"][field].as_str().is_some_and(|s| !s.is_empty()),
            "{e}"
        );
    }
    assert!(e["message"].as_str().unwrap().contains("frobnicate"));
    let bad = c.call_err("prompt", json!({"text": 5}));
    assert_eq!(bad["code"], -32602);
    // Nothing to compact yet: answered with the outcome, nothing sent.
    let compact = c.call("compact", json!({}));
    assert_eq!(
        (compact["outcome"].clone(), compact["error"]["kind"].clone()),
        (json!("skipped"), json!("nothing_to_compact"))
    );
    // Still serving: a string id is echoed as a string.
    c.raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"state\"}\r\n");
    let state = c.response("s-1");
    assert_eq!(state["result"]["model"], "mock-1");
    c.close();
}

#[test]
fn queued_input_can_be_listed_edited_and_removed_and_wait_settled_waits_for_it() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([
            [{"delay_ms": 1500}, {"text": "first"}, {"stop": {"reason": "end"}}],
            [{"text": "second"}, {"stop": {"reason": "end"}}]
        ]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s]);
    c.call("prompt", json!({"text": "go"}));
    let busy = c.call_err("prompt", json!({"text": "again"}));
    assert_eq!(
        (busy["code"].clone(), busy["data"]["kind"].clone()),
        (json!(-32001), json!("busy"))
    );
    c.call("follow_up", json!({"text": "a"}));
    c.call("follow_up", json!({"text": "b"}));
    let items = c.call("queue/list", json!({}))["items"].clone();
    let texts: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["a", "b"]);
    let (a, b) = (
        items[0]["id"].as_u64().unwrap(),
        items[1]["id"].as_u64().unwrap(),
    );
    let edited = c.call("queue/edit", json!({"id": a, "text": "a2"}));
    assert_eq!(edited["mode"], "follow_up");
    c.call("queue/remove", json!({"id": b}));
    let gone = c.call_err("queue/remove", json!({"id": b}));
    assert_eq!(gone["data"]["kind"], "queue_item_not_found");
    let texts: Vec<String> = c.call("queue/list", json!({}))["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, ["a2"]);
    assert!(c.notes.iter().any(|n| n["method"] == "queue_changed"));

    let w = c.send("wait_settled", json!({}));
    c.response(w);
    // Settled only after the queued follow-up ran: both responses are in.
    let ends = c
        .notes
        .iter()
        .filter(|n| n["method"] == "agent_end")
        .count();
    let starts = c
        .notes
        .iter()
        .filter(|n| n["method"] == "agent_start")
        .count();
    assert_eq!(
        (starts, ends),
        (1, 1),
        "the follow-up continued the same run"
    );
    let users: Vec<String> = all_messages(&mut c)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text_of)
        .collect();
    assert_eq!(users, ["go", "a2"]);
    let state = c.call("state", json!({}));
    assert_eq!(
        (state["busy"].as_bool(), state["settled"].as_bool()),
        (Some(false), Some(true))
    );
    c.close();
}

#[test]
fn abort_stops_a_run_and_model_and_sessions_can_be_managed() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([[{"delay_ms": 20000}, {"text": "late"}, {"stop": {"reason": "end"}}]]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s, "--name", "first"]);
    c.call("prompt", json!({"text": "slow"}));
    assert_eq!(c.call("abort", json!({}))["aborted"], true);
    let w = c.send("wait_settled", json!({}));
    c.response(w);
    let end = c
        .notes
        .iter()
        .find(|n| n["method"] == "agent_end")
        .expect("agent_end");
    assert_eq!(end["params"]["stop"], "aborted");

    let models = c.call("model/list", json!({}));
    assert_eq!(
        (models["provider"].clone(), models["current"].clone()),
        (json!("mock"), json!("mock-1"))
    );
    assert_eq!(models["models"][0]["id"], "mock-1");
    let unknown = c.call_err("model/set", json!({"model": "nope"}));
    assert_eq!(unknown["code"], -32602);
    assert!(unknown["message"].as_str().unwrap().contains("mock-1"));
    c.call("model/set", json!({"model": "mock-1"}));
    let w = c.send("wait_settled", json!({}));
    c.response(w);
    assert!(
        c.notes
            .iter()
            .any(|n| n["method"] == "model_changed" && n["params"]["model"] == "mock-1")
    );

    let first_id = c.call("state", json!({}))["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first_messages = all_messages(&mut c);
    let created = c.call("session/new", json!({"name": "second"}));
    assert_eq!(created["session"]["name"], "second");
    let list = c.call("session/list", json!({}));
    let names: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(
        names.contains(&"first") && names.contains(&"second"),
        "{names:?}"
    );
    let info = c.call("session/info", json!({"session": "first"}));
    assert_eq!(info["id"], first_id.as_str());
    assert_eq!(info["current"], false);
    let fork = c.call(
        "session/fork",
        json!({"session": "first", "name": "first-fork"}),
    );
    assert_eq!(fork["origin"], first_id.as_str());
    let opened = c.call("session/open", json!({"session": "first"}));
    assert_eq!(opened["session"]["id"], first_id.as_str());
    assert_eq!(all_messages(&mut c), first_messages);
    let entry = info["selected_leaf"]
        .as_u64()
        .expect("the session has entries");
    let selected = c.call("session/select_leaf", json!({"entry": 1}));
    assert_eq!(selected["leaf"], 1);
    assert!(selected["switch_entry"].as_u64().unwrap() > entry);
    let missing = c.call_err("session/open", json!({"session": "no-such-session"}));
    assert_eq!(missing["data"]["kind"], "runtime_setup");
    // The failed switch kept the previous session open.
    assert_eq!(
        c.call("state", json!({}))["session"]["id"],
        first_id.as_str()
    );
    let config = c.call("config/get", json!({}));
    assert!(config["options"].as_array().is_some_and(|o| !o.is_empty()));
    let bad_key = c.call_err("config/get", json!({"key": "no.such.key"}));
    assert_eq!(bad_key["code"], -32602);
    c.close();
}

/// The position of the first record matching `pred`.
fn position(records: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    records
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such record in {records:#?}"))
}

#[test]
fn compact_streams_its_lifecycle_wait_settled_waits_for_it_and_the_next_request_is_compacted() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!({
            "responses": [
                [{"text": "first answer"}, {"stop": {"reason": "end"}}],
                [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "hello.txt"}}}, {"stop": {"reason": "tool_use"}}],
                [{"text": "second answer"}, {"stop": {"reason": "end"}}],
                [{"text": "third answer"}, {"stop": {"reason": "end"}}]
            ],
            "summaries": [
                [{"delay_ms": 300}, {"text": "Summary: "}, {"text": "the user said first."}, {"usage": {"input": 30, "output": 6}}, {"stop": {"reason": "end"}}],
                [{"delay_ms": 20000}, {"text": "never"}, {"stop": {"reason": "end"}}]
            ]
        }),
    );
    let record = dir.path().join("requests.jsonl");
    let record_arg = record.display().to_string();
    let mut c = Client::spawn(
        &home,
        &work,
        &[
            "--mock-script",
            &s,
            "--mock-record",
            &record_arg,
            "--name",
            "cmp",
        ],
    );
    let init = c.call("initialize", json!({}));
    assert_eq!(init["capabilities"]["compaction"], true);
    // Long prompts: a summary of the turns before the latest is far
    // shorter than they are (one no shorter is never used), here and at
    // the aborted compaction below.
    let long = |head: &str| {
        format!(
            "{head} {}",
            "and every detail of it, spelled out. ".repeat(30)
        )
    };
    for text in [long("first"), long("second")] {
        c.call("prompt", json!({"text": text}));
        let w = c.send("wait_settled", json!({}));
        c.response(w);
    }
    let before = all_messages(&mut c);
    assert_eq!(before.len(), 6);

    // compact, a prompt (refused: busy) and wait_settled at once; the
    // responses are collected in whatever order they arrive.
    let from = c.records.len();
    let compact_id = c.send("compact", json!({"instructions": "keep the file name"}));
    let prompt_id = c.send("prompt", json!({"text": "too early"}));
    let wait_id = c.send("wait_settled", json!({}));
    let mut answered = Vec::new();
    while answered.len() < 3 {
        let r = c.next();
        if r.get("method").is_none() {
            answered.push(r["id"].as_u64().unwrap());
        }
    }
    let records = c.records[from..].to_vec();
    let response = |id: u64| {
        records[position(&records, |r| r.get("method").is_none() && r["id"] == id)].clone()
    };
    assert_eq!(response(prompt_id)["error"]["data"]["kind"], "busy");
    let compacted = response(compact_id)["result"].clone();
    assert_eq!(response(wait_id)["result"], json!({"settled": true}));
    let start = position(&records, |r| r["method"] == "compaction_start");
    let end = position(&records, |r| r["method"] == "compaction_end");
    let answer = position(&records, |r| {
        r.get("method").is_none() && r["id"] == compact_id
    });
    let settled_note = position(&records, |r| r["method"] == "settled");
    let wait_answer = position(&records, |r| {
        r.get("method").is_none() && r["id"] == wait_id
    });
    assert!(
        start < end && end < answer && answer < settled_note && settled_note < wait_answer,
        "{records:#?}"
    );
    assert_eq!(records[start]["params"]["reason"], "manual");
    assert_eq!(compacted["outcome"], "compacted");
    assert_eq!(compacted["reason"], "manual");
    assert_eq!(compacted["summary"], "Summary: the user said first.");
    assert_eq!(compacted["summarized_messages"], 2);
    assert_eq!(compacted["kept_messages"], 4);
    assert_eq!(compacted["usage"]["input"], 30);
    let mut end_params = records[end]["params"].clone();
    end_params.as_object_mut().unwrap().remove("type");
    assert_eq!(end_params, compacted, "the answer is the notification's");

    // The conversation: the summary, then the kept turn unchanged.
    let after = all_messages(&mut c);
    assert_eq!(after.len(), 5);
    assert_eq!(
        after[0]["text"],
        "[smith] The conversation before this point was compacted. Summary:\n\nSummary: the user said first."
    );
    assert_eq!(after[1..], before[2..]);
    let state = c.call("state", json!({}));
    assert_eq!(
        (state["busy"].clone(), state["settled"].clone()),
        (json!(false), json!(true))
    );

    // The next request carries the summary and only the kept messages.
    c.call("prompt", json!({"text": "third"}));
    let w = c.send("wait_settled", json!({}));
    c.response(w);
    let requests: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 5);
    assert!(
        requests[3]["tools"].as_array().unwrap().is_empty(),
        "the summary request is tool-free"
    );
    assert!(
        requests[3]["messages"][0]["text"]
            .as_str()
            .unwrap()
            .contains("keep the file name")
    );
    let mut expected = after.clone();
    expected.push(json!({"role": "user", "text": "third"}));
    assert_eq!(requests[4]["messages"], json!(expected));

    // An aborted compaction answers `aborted` and changes nothing.
    let current = all_messages(&mut c);
    let compact_id = c.send("compact", json!({}));
    loop {
        let r = c.next();
        if r["method"] == "compaction_start" {
            break;
        }
    }
    // The compaction's answer and the abort's may arrive in either order
    // (JSON-RPC does not order responses): take both as they come.
    let abort_id = c.send("abort", json!({}));
    let (mut aborted, mut abort_reply) = (None, None);
    while aborted.is_none() || abort_reply.is_none() {
        let v = c.next();
        if v.get("method").is_some() {
            continue;
        }
        if v["id"] == compact_id {
            aborted = Some(v["result"].clone());
        } else if v["id"] == abort_id {
            abort_reply = Some(v);
        } else {
            panic!("a response for another id arrived: {v}");
        }
    }
    let abort_reply = abort_reply.unwrap();
    assert!(
        abort_reply.get("error").is_none(),
        "abort failed: {abort_reply}"
    );
    let aborted = aborted.unwrap();
    assert_eq!(aborted["outcome"], "aborted");
    let w = c.send("wait_settled", json!({}));
    c.response(w);
    assert_eq!(all_messages(&mut c), current);

    // The session holds exactly one compaction entry.
    let dump = c.call("session/dump", json!({}));
    let kinds: Vec<String> = dump["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| k.as_str() == "compaction").count(),
        1,
        "{kinds:?}"
    );
    c.close();
}

#[test]
fn compact_with_nothing_to_gain_answers_skipped_no_gain_sends_nothing_and_changes_nothing() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([
            [{"text": "one"}, {"stop": {"reason": "end"}}],
            [{"text": "two"}, {"stop": {"reason": "end"}}]
        ]),
    );
    let record = dir.path().join("requests.jsonl");
    let record_arg = record.display().to_string();
    let mut c = Client::spawn(
        &home,
        &work,
        &[
            "--mock-script",
            &s,
            "--mock-record",
            &record_arg,
            "--name",
            "tiny",
        ],
    );
    c.call("initialize", json!({}));
    for text in ["a", "b"] {
        c.call("prompt", json!({"text": text}));
        let w = c.send("wait_settled", json!({}));
        c.response(w);
    }
    let before = all_messages(&mut c);
    let from = c.records.len();
    let answer = c.call("compact", json!({}));
    let records = c.records[from..].to_vec();
    let end = position(&records, |r| r["method"] == "compaction_end");
    let mut end_params = records[end]["params"].clone();
    end_params.as_object_mut().unwrap().remove("type");
    assert_eq!(end_params, answer, "the answer is the notification's");
    assert_eq!(answer["outcome"], "skipped", "{answer}");
    assert_eq!(answer["reason"], "manual");
    assert_eq!(answer["error"]["kind"], "no_gain", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    let tokens_before = answer["tokens_before"].as_u64().unwrap();
    assert!(
        message.starts_with(&format!(
            "nothing to gain — the conversation is about {tokens_before} tokens and even the shortest useful summary"
        )),
        "{message}"
    );
    assert!(
        message.contains("so no summary was asked for and nothing was changed"),
        "{message}"
    );
    for absent in ["summary", "tokens_after", "usage", "summarized_messages"] {
        assert!(answer.get(absent).is_none(), "{absent} in {answer}");
    }
    let w = c.send("wait_settled", json!({}));
    c.response(w);
    assert_eq!(all_messages(&mut c), before);
    // Only the two prompts' requests: no summary request.
    let requests = std::fs::read_to_string(&record).unwrap();
    assert_eq!(requests.lines().count(), 2, "{requests}");
    let dump = c.call("session/dump", json!({}));
    assert!(
        !dump["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "compaction"),
        "{dump}"
    );
    c.close();
}

#[test]
fn an_installed_extension_blocks_a_tool_call_in_an_rpc_run() {
    let (dir, home, work) = fixture();
    // Install the SDK example (it refuses `rm -rf /`) as a user plugin.
    let folder = dir.path().join("hello-plugin");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("plugin.kdl"),
        "name \"example/hello\"\nversion \"0.1.0\"\ndescription \"Refuses rm -rf /\"\napi 1\nworld \"extension\"\n",
    )
    .unwrap();
    std::fs::copy(
        Path::new(smith_plugins::builtin::GUESTS_DIR).join("smith_plugin_hello.wasm"),
        folder.join("plugin.wasm"),
    )
    .unwrap();
    let installed = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", &home)
        .args(["plugin", "install"])
        .arg(&folder)
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    // Harmless (an echo), but it matches what the plugin refuses.
    let s = script(
        dir.path(),
        json!([
            [{"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": "echo rm -rf /nothing > ran.txt"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "ok"}, {"stop": {"reason": "end"}}]
        ]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s]);
    c.call("initialize", json!({}));
    c.call("prompt", json!({"text": "clean up"}));
    c.call("wait_settled", json!({}));
    let end = c
        .notes
        .iter()
        .find(|n| n["method"] == "tool_execution_end")
        .expect("a tool_execution_end");
    assert_eq!(end["params"]["status"], "blocked", "{end}");
    assert!(
        end["params"]["content"]
            .as_str()
            .unwrap()
            .contains("example/hello refuses to run rm -rf /"),
        "{end}"
    );
    assert!(!work.join("ran.txt").exists());
}

#[test]
fn checkpoint_methods_list_turns_undo_by_turn_and_rewind_files_and_transcript() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([
            [{"tool_call": {"id": "c1", "name": "write", "arguments": {"path": "a.txt", "content": "one\n"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "wrote a"}, {"stop": {"reason": "end"}}],
            [{"tool_call": {"id": "c2", "name": "write", "arguments": {"path": "b.txt", "content": "two\n"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "wrote b"}, {"stop": {"reason": "end"}}]
        ]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s, "--name", "rw"]);
    let init = c.call("initialize", json!({}));
    let session = init["session"]["id"].clone();
    for prompt in ["first", "second"] {
        c.call("prompt", json!({"text": prompt}));
        c.call("wait_settled", json!({}));
    }
    assert_eq!(
        std::fs::read_to_string(work.join("b.txt")).unwrap(),
        "two\n"
    );

    let turns = c.call("checkpoint/turns", json!({}))["turns"].clone();
    assert_eq!(turns.as_array().unwrap().len(), 2, "{turns}");
    assert_eq!(turns[0]["prompt"], "first");
    assert_eq!(turns[0]["changed"], json!(["a.txt"]));
    assert_eq!(turns[1]["changed"], json!(["b.txt"]));

    // Undo by turn: the newest turn, recorded with its prompt's entry.
    let undone = c.call("checkpoint/undo", json!({}));
    assert_eq!(undone["record"]["turn"], turns[1]["entry"], "{undone}");
    assert_eq!(undone["changes"], json!([{"code": "D", "path": "b.txt"}]));
    assert!(!work.join("b.txt").exists());
    let turns_now = c.call("checkpoint/turns", json!({}))["turns"].clone();
    assert_eq!(turns_now[1]["undone"], true);
    c.call("checkpoint/redo", json!({}));
    assert_eq!(
        std::fs::read_to_string(work.join("b.txt")).unwrap(),
        "two\n"
    );
    let nothing = c.call_err("checkpoint/redo", json!({}));
    assert_eq!(nothing["data"]["kind"], "checkpoint.nothing", "{nothing}");

    // Not a prompt: refused.
    let wrong = c.call_err("checkpoint/rewind", json!({"entry": 999_999}));
    assert_eq!(wrong["data"]["kind"], "checkpoint.nothing", "{wrong}");

    // A dry run changes nothing.
    let entry = turns[0]["entry"].clone();
    let dry = c.call(
        "checkpoint/rewind",
        json!({"entry": entry, "dry_run": true}),
    );
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["switch_entry"], Value::Null);
    assert!(work.join("a.txt").exists() && work.join("b.txt").exists());

    // The rewind: files back to before the first prompt, the session on a
    // new branch before it, the runtime restarted on it.
    let done = c.call("checkpoint/rewind", json!({"entry": entry}));
    assert_eq!(done["prompt"], "first");
    assert_eq!(done["session"], session);
    assert!(done["switch_entry"].is_u64(), "{done}");
    assert!(!work.join("a.txt").exists());
    assert!(!work.join("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(work.join("hello.txt")).unwrap(),
        "hi from the file\n"
    );
    assert_eq!(c.call("checkpoint/turns", json!({}))["turns"], json!([]));
    let info = c.call("session/info", json!({}));
    assert_eq!(info["current"], true, "{info}");
    assert!(info["leaves"].as_array().unwrap().len() >= 2, "{info}");
    let list = c.call("checkpoint/list", json!({}));
    assert_eq!(
        list["operations"].as_array().unwrap().last().unwrap()["op"],
        "rewind"
    );
    c.close();
}

/// A prompt sent over rpc goes through the same plugins as eval's:
/// smith/mentions attaches the mentioned file to the user message.
#[test]
fn an_rpc_prompt_with_a_mention_carries_the_file() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([[{"text": "Read."}, {"stop": {"reason": "end"}}]]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s]);
    c.call("initialize", json!({}));
    c.call("prompt", json!({"text": "what does @hello.txt say"}));
    c.call("wait_settled", json!({}));
    let messages = all_messages(&mut c);
    assert_eq!(
        text_of(&messages[0]),
        "what does @hello.txt say\n\n<attachments>\n<file path=\"hello.txt\">\nhi from the file\n</file>\n</attachments>",
        "{messages:?}"
    );
    c.close();
}

#[test]
fn abort_reaches_a_subagent_and_its_call_ends_aborted() {
    let (dir, home, work) = fixture();
    let s = script(
        dir.path(),
        json!([
            [{"tool_call": {"id": "p1", "name": "agent", "arguments": {"description": "slow child", "prompt": "take your time", "mode": "inspect"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "child started "}, {"delay_ms": 20000}, {"text": "late"}, {"stop": {"reason": "end"}}],
            [{"text": "parent never"}, {"stop": {"reason": "end"}}]
        ]),
    );
    let mut c = Client::spawn(&home, &work, &["--mock-script", &s, "--name", "parent"]);
    c.call("prompt", json!({"text": "delegate"}));
    // The child is under way once the agent call's effect has started.
    loop {
        let v = c.next();
        if v["method"] == "tool_execution_start" && v["params"]["call_id"] == "p1" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    assert_eq!(c.call("abort", json!({}))["aborted"], true);
    let w = c.send("wait_settled", json!({}));
    c.response(w);
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "the run took {:?} to settle after abort",
        asked.elapsed()
    );
    let ended = c
        .notes
        .iter()
        .find(|n| n["method"] == "tool_execution_end" && n["params"]["call_id"] == "p1")
        .expect("the agent call is answered");
    assert_eq!(ended["params"]["status"], "aborted", "{ended}");
    assert!(
        ended["params"]["content"]
            .as_str()
            .unwrap()
            .contains("did not finish: its run ended with `aborted` (the user aborted)"),
        "{ended}"
    );
    // Only one agent_end reaches the client: the child's events are the
    // call's live output, never the parent's.
    let ends: Vec<&Value> = c
        .notes
        .iter()
        .filter(|n| n["method"] == "agent_end")
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["params"]["stop"], "aborted");
    c.close();
}
