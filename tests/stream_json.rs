//! `smith eval --output-format stream-json | json` and `--input-format
//! stream-json`, end to end with the scripted provider, checked against
//! what Claude Code's headless mode writes.
//!
//! The expectations are not written here: the recordings in
//! `tests/data/claude-stream-json` (real captures of the Claude Code CLI,
//! plus a few synthetic and hand-written samples; see its README) decide
//! which keys each kind of object must have and which JSON types its values
//! may take. smith may leave out a key only when [`NOT_REPRESENTED`] says
//! why, and may write `null` only where [`UNKNOWN_IS_NULL`] allows it.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Map, Value, json};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/claude-stream-json");

/// How a recording came about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Output of the Claude Code CLI: decides the required keys.
    Real,
    /// Written by hand or synthesized: adds known keys and types only.
    Written,
    /// A real on-disk session transcript: only its content blocks count.
    Transcript,
}

const RECORDINGS: &[(&str, Origin)] = &[
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/system_message.json",
        Origin::Real,
    ),
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/assistant_message.json",
        Origin::Real,
    ),
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/user_message.json",
        Origin::Real,
    ),
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/result_success.json",
        Origin::Real,
    ),
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/golden/basic_query.ndjson",
        Origin::Real,
    ),
    (
        "alfredjeanlab__claudeless/crates/cli/tests/fixtures/cli/v2.1.12/stream-json/output.jsonl",
        Origin::Real,
    ),
    (
        "alfredjeanlab__claudeless/crates/cli/tests/fixtures/cli/v2.1.12/json-output/output.json",
        Origin::Real,
    ),
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/result_error.json",
        Origin::Written,
    ),
    (
        "charlieyou__claude-agent-sdk-gleam/test/fixtures/nested_content_blocks.json",
        Origin::Written,
    ),
    (
        "anthropics__claude-code-action/test/fixtures/sample-turns.json",
        Origin::Written,
    ),
    (
        "alfredjeanlab__claudeless/tests/fixtures/v2.1.29/hook-stop.projects/d266fdf5-b6a3-46aa-8627-920959a0109a.jsonl",
        Origin::Transcript,
    ),
];

/// Keys every real capture has that smith leaves out on purpose: (kind,
/// key, why). docs/cli.md gives the same reasons.
const NOT_REPRESENTED: &[(&str, &str, &str)] = &[
    (
        "system/init",
        "claude_code_version",
        "smith is not Claude Code; claiming one of its versions would be false",
    ),
    (
        "system/init",
        "permissionMode",
        "smith's approval modes (read-only, ask, workspace, full) are not Claude Code's permission modes",
    ),
    (
        "user",
        "tool_use_result",
        "Claude Code's per-tool structured output; smith's tool details have other shapes",
    ),
    (
        "assistant.message.usage",
        "service_tier",
        "normalized provider usage does not carry a service tier",
    ),
    (
        "result.usage",
        "service_tier",
        "normalized provider usage does not carry a service tier",
    ),
    (
        "result.usage",
        "server_tool_use",
        "normalized provider usage does not count server-side tool requests",
    ),
    (
        "block:thinking",
        "signature",
        "smith's thinking signatures are provider envelopes, not Anthropic's signature strings",
    ),
];

/// Where smith writes `null` for what it does not know (a token count the
/// provider did not report, a cost without a price), though the recordings
/// always had a number.
const UNKNOWN_IS_NULL: &[(&str, &str)] = &[
    ("assistant.message.usage", "input_tokens"),
    ("assistant.message.usage", "output_tokens"),
    ("assistant.message.usage", "cache_read_input_tokens"),
    ("assistant.message.usage", "cache_creation_input_tokens"),
    ("result.usage", "input_tokens"),
    ("result.usage", "output_tokens"),
    ("result.usage", "cache_read_input_tokens"),
    ("result.usage", "cache_creation_input_tokens"),
    ("result", "total_cost_usd"),
];

/// What the recordings say about one kind of object.
#[derive(Debug, Default)]
struct Shape {
    /// The keys every real capture of this kind has (`None`: no real
    /// capture of this kind).
    required: Option<BTreeSet<String>>,
    /// Every key any recording has, with the JSON types of its values
    /// (placeholders left out).
    known: BTreeMap<String, BTreeSet<&'static str>>,
}

#[derive(Debug)]
struct Shapes(BTreeMap<String, Shape>);

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value the claudeless captures replaced by a placeholder
/// (`"<USAGE>"`): its key is real, its type unknown.
fn placeholder(value: &Value) -> bool {
    value.as_str().is_some_and(|s| {
        s.len() > 2
            && s.starts_with('<')
            && s.ends_with('>')
            && s[1..s.len() - 1]
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

/// Calls `visit` with every object of `top` that has a shape: the object
/// itself (`system/init`, `assistant`, `user`, `result`), its `message`,
/// the message's and the result's `usage`, and each content block
/// (`block:TYPE`). With `blocks_only`, only the content blocks.
fn walk(top: &Value, blocks_only: bool, visit: &mut dyn FnMut(&str, &Map<String, Value>)) {
    let Some(object) = top.as_object() else {
        return;
    };
    let kind = match (
        object.get("type").and_then(Value::as_str),
        object.get("subtype").and_then(Value::as_str),
    ) {
        (Some("system"), Some(subtype)) => format!("system/{subtype}"),
        (Some(kind), _) => kind.to_owned(),
        (None, _) => return,
    };
    if !blocks_only {
        visit(&kind, object);
    }
    if let Some(message) = object.get("message").and_then(Value::as_object) {
        if !blocks_only {
            visit(&format!("{kind}.message"), message);
            if let Some(usage) = message.get("usage").and_then(Value::as_object) {
                visit(&format!("{kind}.message.usage"), usage);
            }
        }
        if let Some(blocks) = message.get("content").and_then(Value::as_array) {
            for block in blocks.iter().filter_map(Value::as_object) {
                if let Some(kind) = block.get("type").and_then(Value::as_str) {
                    visit(&format!("block:{kind}"), block);
                }
            }
        }
    }
    if kind == "result"
        && !blocks_only
        && let Some(usage) = object.get("usage").and_then(Value::as_object)
    {
        visit("result.usage", usage);
    }
}

/// The objects of a recording: one pretty-printed object, a JSON array of
/// them, or one a line.
fn objects(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => items,
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    }
}

impl Shapes {
    fn from_recordings() -> Self {
        let mut shapes: BTreeMap<String, Shape> = BTreeMap::new();
        for (file, origin) in RECORDINGS {
            for top in objects(&Path::new(DATA).join(file)) {
                walk(&top, *origin == Origin::Transcript, &mut |kind, object| {
                    let shape = shapes.entry(kind.to_owned()).or_default();
                    let mut keys = BTreeSet::new();
                    for (key, value) in object {
                        // The claudeless normaliser wrote `cost_usd` where
                        // the sorted `total_cost_usd` stood (see the
                        // README): the key Claude Code writes is the
                        // latter.
                        let key = if file.starts_with("alfredjeanlab__claudeless")
                            && kind == "result"
                            && key == "cost_usd"
                        {
                            "total_cost_usd"
                        } else {
                            key.as_str()
                        };
                        keys.insert(key.to_owned());
                        let types = shape.known.entry(key.to_owned()).or_default();
                        if !placeholder(value) {
                            types.insert(json_type(value));
                        }
                    }
                    if *origin != Origin::Written {
                        shape.required = Some(match shape.required.take() {
                            None => keys,
                            Some(before) => before.intersection(&keys).cloned().collect(),
                        });
                    }
                });
            }
        }
        Shapes(shapes)
    }

    fn required(&self, kind: &str) -> BTreeSet<String> {
        self.0
            .get(kind)
            .and_then(|s| s.required.clone())
            .unwrap_or_default()
    }

    /// What is wrong with `top` (one object smith wrote) by the
    /// recordings; empty when nothing is.
    fn problems(&self, top: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        let mut seen = false;
        walk(top, false, &mut |kind, object| {
            seen = true;
            let Some(shape) = self.0.get(kind) else {
                problems.push(format!("no recording has a {kind} object"));
                return;
            };
            for key in shape.required.iter().flatten() {
                let left_out = NOT_REPRESENTED
                    .iter()
                    .any(|(k, name, _)| *k == kind && name == key);
                match (object.contains_key(key), left_out) {
                    (false, false) => problems.push(format!(
                        "{kind} lacks {key:?}, which every real capture has"
                    )),
                    (true, true) => problems.push(format!(
                        "{kind} has {key:?}, which NOT_REPRESENTED says smith leaves out"
                    )),
                    _ => {}
                }
            }
            for (key, value) in object {
                let Some(types) = shape.known.get(key) else {
                    problems.push(format!("{kind} has {key:?}, which no recording has"));
                    continue;
                };
                let ty = json_type(value);
                let unknown = ty == "null" && UNKNOWN_IS_NULL.contains(&(kind, key.as_str()));
                if !types.is_empty() && !types.contains(ty) && !unknown {
                    problems.push(format!(
                        "{kind}.{key} is a {ty}; the recordings have {types:?}"
                    ));
                }
            }
        });
        if !seen {
            problems.push(format!("not an object with a type: {top}"));
        }
        problems
    }

    fn assert_fits(&self, top: &Value) {
        let problems = self.problems(top);
        assert!(
            problems.is_empty(),
            "{top}\ndiffers from Claude Code's recorded output:\n  {}",
            problems.join("\n  ")
        );
    }
}

/// Runs `smith ARGS` in `work` with `home` as its home, `stdin` on its
/// standard input.
fn smith(home: &Path, work: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("SMITH_PROVIDER")
        .env("NO_COLOR", "1")
        .current_dir(work)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Every line of standard output, each of which must be one JSON object.
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let value: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}"));
            assert!(value.is_object(), "not an object: {l}");
            value
        })
        .collect()
}

/// Runs `smith ARGS` with nothing on standard input, asserts its exit
/// status, and returns its output lines as JSON objects, each checked
/// against the recorded shapes when `shapes` is given.
fn eval_objects(
    home: &Path,
    work: &Path,
    args: &[&str],
    code: i32,
    shapes: Option<&Shapes>,
) -> Vec<Value> {
    let out = smith(home, work, args, "");
    assert_eq!(code_of(&out), Some(code), "{}", stderr(&out));
    let objects = lines(&out);
    if let Some(shapes) = shapes {
        for object in &objects {
            shapes.assert_fits(object);
        }
    }
    objects
}

fn code_of(out: &Output) -> Option<i32> {
    out.status.code()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A scripted tool-using turn: thinking, text and two calls, their
/// results, then an answer. The first response states no cache usage.
const TOOL_TURN: &str = r#"[
  [{"thinking": "The user wants the notes; read them first."},
   {"text": "Reading the notes."},
   {"tool_call": {"id": "toolu_read", "name": "read", "arguments": {"path": "notes.txt"}}},
   {"tool_call": {"id": "toolu_ls", "name": "ls", "arguments": {"path": "."}}},
   {"usage": {"input": 120, "output": 30}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "The notes say hello."},
   {"usage": {"input": 160, "output": 8, "cache_read": 100, "cache_write": 0}},
   {"stop": {"reason": "end"}}]
]"#;

/// A temporary home and working folder (holding `notes.txt`) with `script`
/// in `script.json`.
fn setup(script: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "hello\n").unwrap();
    std::fs::write(work.path().join("script.json"), script).unwrap();
    (home, work)
}

/// Checks that every `tool_result` answers the `tool_use` of the assistant
/// message before it, in call order, and that every call is answered.
fn assert_calls_answered_in_order(objects: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for object in objects {
        let blocks = object["message"]["content"].as_array();
        match object["type"].as_str() {
            Some("assistant") => {
                assert!(open.is_empty(), "calls left unanswered: {open:?}");
                open = blocks
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].as_str().unwrap().to_owned())
                    .collect();
            }
            Some("user") => {
                for block in blocks.unwrap() {
                    assert_eq!(block["type"], "tool_result");
                    assert!(!open.is_empty(), "a result with no call: {block}");
                    assert_eq!(
                        block["tool_use_id"].as_str().unwrap(),
                        open.remove(0),
                        "results come in call order"
                    );
                }
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "calls left unanswered: {open:?}");
}

#[test]
fn the_recordings_decide_what_is_required_and_the_checker_holds_to_them() {
    let shapes = Shapes::from_recordings();
    // Read from the files, not written here: a broken path or parse would
    // leave these empty.
    for (kind, keys) in [
        (
            "system/init",
            &["type", "subtype", "cwd", "session_id", "tools", "model"][..],
        ),
        ("assistant", &["type", "message", "session_id"][..]),
        (
            "assistant.message",
            &["content", "role", "model", "usage"][..],
        ),
        ("user", &["type", "message", "session_id"][..]),
        (
            "result",
            &[
                "subtype",
                "is_error",
                "duration_ms",
                "num_turns",
                "result",
                "session_id",
                "total_cost_usd",
                "usage",
            ][..],
        ),
        ("block:tool_use", &["id", "name", "input"][..]),
        ("block:tool_result", &["tool_use_id", "content"][..]),
        ("block:thinking", &["thinking"][..]),
    ] {
        let required = shapes.required(kind);
        for key in keys {
            assert!(required.contains(*key), "{kind}: {key} in {required:?}");
        }
    }
    // Every omission is of a key the real captures all have.
    for (kind, key, _) in NOT_REPRESENTED {
        assert!(
            shapes.required(kind).contains(*key),
            "NOT_REPRESENTED lists {kind}.{key}, which is not required anyway"
        );
    }
    // The checker catches a missing key, an invented one, a wrong type, a
    // null where a number is known, and an omission that is not one.
    let good = json!({
        "type": "system", "subtype": "init", "cwd": "/w", "session_id": "s",
        "tools": [], "mcp_servers": [], "model": "m", "uuid": "u",
    });
    shapes.assert_fits(&good);
    let mut bad = good.clone();
    bad.as_object_mut().unwrap().remove("session_id");
    bad["smith_only"] = json!(1);
    bad["tools"] = json!("read");
    bad["claude_code_version"] = json!("2.1.7");
    let problems = shapes.problems(&bad).join("\n");
    for says in [
        "lacks \"session_id\"",
        "\"smith_only\", which no recording has",
        "tools is a string",
        "\"claude_code_version\", which NOT_REPRESENTED",
    ] {
        assert!(problems.contains(says), "{says}: {problems}");
    }
    let null_turns = json!({"type": "result", "num_turns": null});
    assert!(
        shapes
            .problems(&null_turns)
            .join("\n")
            .contains("result.num_turns is a null"),
        "null only where unknown is allowed"
    );
}

#[test]
fn a_tool_using_turn_streams_init_messages_and_a_result_in_claudes_shapes() {
    let shapes = Shapes::from_recordings();
    let (home, work) = setup(TOOL_TURN);
    let objects = eval_objects(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--output-format",
            "stream-json",
            "--name",
            "sj",
            "what do the notes say?",
        ],
        0,
        Some(&shapes),
    );
    let kinds: Vec<String> = objects
        .iter()
        .map(|o| match o["subtype"].as_str() {
            Some(subtype) if o["type"] == "system" => format!("system/{subtype}"),
            _ => o["type"].as_str().unwrap().to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "system/init",
            "assistant",
            "user",
            "user",
            "assistant",
            "result"
        ],
        "init first, the result last"
    );
    assert_calls_answered_in_order(&objects);

    let init = &objects[0];
    let session = init["session_id"].as_str().unwrap();
    assert_eq!(session.len(), 32, "smith's session id: {session}");
    for object in &objects {
        assert_eq!(object["session_id"], session, "{object}");
    }
    assert_eq!(init["model"], "mock-1");
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for tool in ["read", "write", "edit", "bash", "find", "grep", "ls"] {
        assert!(tools.contains(&tool), "{tools:?}");
    }
    assert_eq!(
        std::fs::canonicalize(init["cwd"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(work.path()).unwrap()
    );
    let uuids: BTreeSet<&str> = objects
        .iter()
        .map(|o| o["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(uuids.len(), objects.len(), "every object has its own uuid");

    let first = &objects[1]["message"];
    assert_eq!(
        first["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants the notes; read them first."},
            {"type": "text", "text": "Reading the notes."},
            {"type": "tool_use", "id": "toolu_read", "name": "read", "input": {"path": "notes.txt"}},
            {"type": "tool_use", "id": "toolu_ls", "name": "ls", "input": {"path": "."}},
        ])
    );
    assert_eq!(first["stop_reason"], "tool_use");
    assert_eq!(
        first["usage"],
        json!({"input_tokens": 120, "cache_creation_input_tokens": null, "cache_read_input_tokens": null, "output_tokens": 30}),
        "what the response did not state stays null"
    );
    let read = &objects[2]["message"]["content"][0];
    assert_eq!(read["tool_use_id"], "toolu_read");
    assert_eq!(read["is_error"], false);
    assert!(
        read["content"].as_str().unwrap().contains("hello"),
        "{read}"
    );
    assert_eq!(objects[4]["message"]["stop_reason"], "end_turn");

    let result = objects.last().unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["result"], "The notes say hello.");
    assert_eq!(result["permission_denials"], json!([]));
    assert!(
        result["total_cost_usd"].is_null(),
        "the mock model has no price: the cost is unknown, not 0"
    );
    assert_eq!(
        result["usage"],
        json!({"input_tokens": 280, "cache_creation_input_tokens": null, "cache_read_input_tokens": null, "output_tokens": 38}),
        "a count one response left unknown is unknown for the run"
    );
    assert!(result["duration_ms"].as_u64().unwrap() >= result["duration_api_ms"].as_u64().unwrap());

    // The session_id is the session the run was recorded in.
    let listed = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .current_dir(work.path())
        .args(["session", "info", "sj"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(session),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
}

#[test]
fn json_output_is_the_result_object_alone() {
    let shapes = Shapes::from_recordings();
    let (home, work) = setup(TOOL_TURN);
    let objects = eval_objects(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--output-format",
            "json",
            "--no-session",
            "what do the notes say?",
        ],
        0,
        None,
    );
    assert_eq!(objects.len(), 1, "{objects:?}");
    shapes.assert_fits(&objects[0]);
    assert_eq!(objects[0]["type"], "result");
    assert_eq!(objects[0]["result"], "The notes say hello.");
    assert_eq!(objects[0]["num_turns"], 2);
}

#[test]
fn stream_json_input_runs_each_user_message_in_turn_on_one_session() {
    let shapes = Shapes::from_recordings();
    let (home, work) = setup(
        r#"[[{"text": "first answer"}, {"usage": {"input": 5, "output": 2}}, {"stop": {"reason": "end"}}],
            [{"text": "second answer"}, {"usage": {"input": 9, "output": 2}}, {"stop": {"reason": "end"}}]]"#,
    );
    // The shapes the Agent SDKs write: a string, and text blocks with the
    // SDK's extra keys; a blank line between them is skipped.
    let input = concat!(
        r#"{"type":"user","message":{"role":"user","content":"first question"}}"#,
        "\n\n",
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second"},{"type":"text","text":"question"}]},"parent_tool_use_id":null,"session_id":"ignored"}"#,
        "\n",
    );
    let out = smith(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--mock-record",
            "requests.jsonl",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--no-session",
        ],
        input,
    );
    assert_eq!(code_of(&out), Some(0), "{}", stderr(&out));
    let objects = lines(&out);
    for object in &objects {
        shapes.assert_fits(object);
    }
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["system", "assistant", "result", "assistant", "result"],
        "one init, then each message's run ends with its own result"
    );
    assert_eq!(objects[2]["result"], "first answer");
    assert_eq!(objects[4]["result"], "second answer");
    assert_eq!(objects[4]["num_turns"], 1, "counted per run");
    assert_eq!(
        objects[4]["usage"]["input_tokens"], 9,
        "usage is the run's own"
    );
    let session = &objects[0]["session_id"];
    assert!(objects.iter().all(|o| &o["session_id"] == session));

    // The provider got each message as the prompt, the second after the
    // first exchange: one conversation.
    let requests: Vec<Value> = std::fs::read_to_string(work.path().join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0]["messages"],
        json!([{"role": "user", "text": "first question"}])
    );
    let second = requests[1]["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(
        second[2],
        json!({"role": "user", "text": "second\n\nquestion"})
    );
}

#[test]
fn a_failing_provider_ends_with_an_error_result_and_status_1() {
    let shapes = Shapes::from_recordings();
    let (home, work) = setup(
        r#"[[{"text": "Looking."}, {"tool_call": {"id": "c1", "name": "ls", "arguments": {"path": "."}}},
             {"usage": {"input": 10, "output": 5}}, {"stop": {"reason": "tool_use"}}],
            [{"error": {"kind": "auth", "message": "the key was refused"}}]]"#,
    );
    let out = smith(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--output-format",
            "stream-json",
            "--no-session",
            "look",
        ],
        "",
    );
    assert_eq!(code_of(&out), Some(1), "{}", stderr(&out));
    let objects = lines(&out);
    for object in &objects {
        shapes.assert_fits(object);
    }
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    // The failed response had no content: no assistant object for it.
    assert_eq!(kinds, ["system", "assistant", "user", "result"]);
    assert_calls_answered_in_order(&objects);
    let result = &objects[3];
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["result"], "the key was refused");
    assert_eq!(
        result["usage"],
        json!({"input_tokens": null, "cache_creation_input_tokens": null, "cache_read_input_tokens": null, "output_tokens": null}),
        "a response that failed before stating usage leaves the run's usage unknown"
    );
    assert!(result["total_cost_usd"].is_null());
    // The diagnostic still reaches standard error; standard output stays
    // objects only.
    assert!(
        stderr(&out).contains("error[engine.auth]: the key was refused"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_turn_limit_is_an_error_max_turns_result_with_status_2() {
    let (home, work) = setup(TOOL_TURN);
    let objects = eval_objects(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--output-format",
            "stream-json",
            "--no-session",
            "--max-turns",
            "1",
            "look",
        ],
        2,
        None,
    );
    let result = objects.last().unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["num_turns"], 1);
}

#[test]
fn input_that_is_not_a_user_message_is_refused_with_its_line() {
    // On the first line: nothing runs, nothing is written on standard
    // output.
    let (home, work) = setup(TOOL_TURN);
    let args = [
        "eval",
        "--mock-script",
        "script.json",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--no-session",
    ];
    let out = smith(
        home.path(),
        work.path(),
        &args,
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}}\n",
    );
    assert_eq!(code_of(&out), Some(1));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = stderr(&out);
    assert!(err.contains("error[input.stream-json]: line 1 "), "{err}");
    assert!(err.contains("\"image\""), "{err}");

    // After a good line: its run is answered, then the reading stops.
    let (home, work) = setup(r#"[[{"text": "ok"}, {"stop": {"reason": "end"}}]]"#);
    let out = smith(
        home.path(),
        work.path(),
        &args,
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\nnot json\n",
    );
    assert_eq!(code_of(&out), Some(1));
    let kinds: Vec<String> = lines(&out)
        .iter()
        .map(|o| o["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["system", "assistant", "result"]);
    assert!(stderr(&out).contains("line 2 "), "{}", stderr(&out));
}

#[test]
fn formats_that_do_not_go_together_are_refused_before_anything_runs() {
    let (home, work) = setup(TOOL_TURN);
    for (args, says) in [
        (
            &["eval", "--input-format", "stream-json", "--no-session"][..],
            "needs --output-format stream-json",
        ),
        (
            &[
                "eval",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--no-session",
                "hi",
            ][..],
            "a PROMPT was given",
        ),
        (
            &["eval", "--json", "--output-format", "stream-json", "hi"][..],
            "cannot be used with",
        ),
    ] {
        let out = smith(home.path(), work.path(), args, "");
        assert_eq!(code_of(&out), Some(2), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// Sends SIGINT to `child` once standard output has shown a line of type
/// `after` and `ready` holds; the objects written, the status and standard
/// error.
fn interrupt_after(
    mut child: std::process::Child,
    after: &str,
    ready: &dyn Fn() -> bool,
) -> (Vec<Value>, Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut objects = Vec::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 {
        let object: Value = serde_json::from_str(&line).unwrap();
        line.clear();
        let seen = object["type"] == after;
        objects.push(object);
        if seen {
            break;
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "never ready");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    objects.extend(
        rest.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()),
    );
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (objects, status.code(), err)
}

fn spawn(home: &Path, work: &Path, args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("SMITH_PROVIDER")
        .env("NO_COLOR", "1")
        .current_dir(work)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only resets signal dispositions, which is allowed between
    // fork and exec.
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
    cmd.spawn().unwrap()
}

#[test]
fn an_interrupt_ends_the_run_with_an_error_result_and_status_130() {
    let shapes = Shapes::from_recordings();
    let (home, work) = setup(
        r#"[[{"text": "slow "}, {"delay_ms": 20000}, {"text": "never"}, {"stop": {"reason": "end"}}]]"#,
    );
    let child = spawn(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--mock-record",
            "requests.jsonl",
            "--output-format",
            "stream-json",
            "--name",
            "intr",
            "go",
        ],
    );
    // The request is recorded before it is answered: then the run is
    // inside its provider request.
    let record = work.path().join("requests.jsonl");
    let (objects, code, err) = interrupt_after(child, "system", &|| {
        std::fs::read_to_string(&record).is_ok_and(|r| r.ends_with('\n'))
    });
    assert_eq!(code, Some(130), "{err}");
    for object in &objects {
        shapes.assert_fits(object);
    }
    let result = objects.last().unwrap();
    assert_eq!(result["type"], "result", "{objects:?}");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error_during_execution");
    assert!(err.contains("smith eval --session intr"), "{err}");
}

#[test]
fn an_interrupt_while_waiting_for_the_next_message_ends_with_status_130() {
    let (home, work) = setup(r#"[[{"text": "ok"}, {"stop": {"reason": "end"}}]]"#);
    let mut child = spawn(
        home.path(),
        work.path(),
        &[
            "eval",
            "--mock-script",
            "script.json",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--name",
            "idle",
        ],
    );
    // Standard input stays open: smith waits for a second message.
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\n")
        .unwrap();
    let (objects, code, err) = interrupt_after(child, "result", &|| true);
    drop(stdin);
    assert_eq!(code, Some(130), "{err}");
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["system", "assistant", "result"]);
    assert_eq!(objects[2]["is_error"], false, "the run itself succeeded");
    assert!(err.contains("smith eval --session idle"), "{err}");
}
