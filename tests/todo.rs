//! smith/todo end to end through the built binary with the scripted
//! provider: `todo_write` writing the list (the next recorded request
//! carries the tool's summary and the list in the system prompt, the
//! session a `plugin_state` entry); continuing the session (`smith eval
//! --session`) giving the model the
//! list again; a compaction over rpc keeping it; a list with two items in
//! progress refused with what to fix and nothing kept; `smith plugin
//! list` showing the built-in; disabling it removing the
//! tool and nothing else.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{Client, dump, recorded_requests as requests, run};
use serde_json::{Value, json};

fn script(home: &Path, name: &str, value: &Value) -> String {
    let path = home.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

/// `smith eval ARGS... PROMPT` with `script`, recording requests; the
/// requests and standard error.
fn eval(home: &Path, script: &str, args: &[&str], prompt: &str) -> (Vec<Value>, String) {
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let record_arg = record.display().to_string();
    let mut all = vec![
        "eval",
        "--mock-script",
        script,
        "--mock-record",
        &record_arg,
    ];
    all.extend_from_slice(args);
    all.push(prompt);
    let (_, err) = run(home, &all, 0);
    (requests(&record), err)
}

fn system(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results a request carries, as (content, is_error).
fn tool_results(request: &Value) -> Vec<(String, bool)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool_result")
        .map(|m| {
            (
                m["content"].as_str().unwrap_or_default().to_owned(),
                m["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

/// The `plugin_state` records of session `name`.
fn states(home: &Path, name: &str) -> Vec<Value> {
    dump(home, name)
        .into_iter()
        .filter(|e| e["type"] == "entry" && e["content"]["type"] == "plugin_state")
        .map(|e| e["content"].clone())
        .collect()
}

fn write_call(id: &str, todos: &Value) -> Value {
    json!([
        {"tool_call": {"id": id, "name": "todo_write", "arguments": {"todos": todos}}},
        {"stop": {"reason": "tool_use"}}
    ])
}

fn answer(text: &str) -> Value {
    json!([{"text": text}, {"stop": {"reason": "end"}}])
}

fn plan() -> Value {
    json!([
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the off-by-one in the lexer", "status": "in_progress"},
        {"content": "Run the parser tests", "status": "pending", "id": "tests"}
    ])
}

/// The fragment's lines for [`plan`].
const PLAN_LINES: [&str; 3] = [
    "- [completed] Read the parser (id 1)",
    "- [in_progress] Fix the off-by-one in the lexer (id 2)",
    "- [pending] Run the parser tests (id tests)",
];

fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn todo_write_keeps_the_list_in_the_session_and_a_continued_eval_gives_it_to_the_model() {
    let home = home();
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.contains("smith/todo"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("built-in") && line.contains("enabled"),
        "{line}"
    );

    let s = script(
        home.path(),
        "plan.json",
        &json!([write_call("c1", &plan()), answer("planned")]),
    );
    let (requests, err) = eval(home.path(), &s, &["--name", "todo"], "fix the lexer");
    assert_eq!(requests.len(), 2, "{err}");
    // The model is offered the tool; before any list there is no fragment.
    assert!(tool_names(&requests[0]).contains(&"todo_write".to_owned()));
    assert!(
        !system(&requests[0]).contains("Your todo list"),
        "{}",
        system(&requests[0])
    );
    // The next request carries the tool's summary, and the list.
    assert_eq!(
        tool_results(&requests[1]),
        [(
            "Todo list updated: 3 items (1 completed, 1 in progress, 1 pending). In progress: Fix the off-by-one in the lexer (id 2). Next: Run the parser tests (id tests).".to_owned(),
            false
        )]
    );
    let second = system(&requests[1]);
    assert!(second.contains("Your todo list"), "{second}");
    let at: Vec<usize> = PLAN_LINES
        .iter()
        .map(|l| {
            second
                .find(l)
                .unwrap_or_else(|| panic!("{l} missing from {second}"))
        })
        .collect();
    assert!(at[0] < at[1] && at[1] < at[2], "{second}");
    // The panel is a widget: eval has no panels and drops it silently.
    assert!(!err.contains("todo:"), "{err}");

    // The session keeps the list as one plugin_state entry.
    let kept = states(home.path(), "todo");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["plugin"], "smith/todo");
    assert_eq!(kept[0]["key"], "list");
    let value: Value = serde_json::from_str(kept[0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(
        value,
        json!({"items": [
            {"id": "1", "content": "Read the parser", "status": "completed"},
            {"id": "2", "content": "Fix the off-by-one in the lexer", "status": "in_progress"},
            {"id": "tests", "content": "Run the parser tests", "status": "pending"}
        ]})
    );

    // Continuing the session (`smith eval --session todo`) the first
    // request of the new run already tells the model the list.
    let s = script(home.path(), "more.json", &json!([answer("going on")]));
    let (requests, err) = eval(home.path(), &s, &["--session", "todo"], "go on");
    assert_eq!(requests.len(), 1, "{err}");
    let first = system(&requests[0]);
    for line in PLAN_LINES {
        assert!(first.contains(line), "{line} missing from {first}");
    }

    // Completing every item ends the fragment; an empty list clears it.
    let done = json!([
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the off-by-one in the lexer", "status": "completed"},
        {"content": "Run the parser tests", "status": "completed", "id": "tests"}
    ]);
    let s = script(
        home.path(),
        "done.json",
        &json!([write_call("c2", &done), answer("all done")]),
    );
    let (requests, err) = eval(home.path(), &s, &["--session", "todo"], "finish");
    assert_eq!(requests.len(), 2, "{err}");
    assert!(system(&requests[0]).contains(PLAN_LINES[1]));
    assert_eq!(
        tool_results(&requests[1]).last().unwrap().0,
        "Todo list updated: 3 items (3 completed, 0 in progress, 0 pending). Every item is completed."
    );
    assert!(
        !system(&requests[1]).contains("Your todo list"),
        "{}",
        system(&requests[1])
    );
    assert_eq!(states(home.path(), "todo").len(), 2);
}

#[test]
fn two_items_in_progress_are_refused_with_what_to_fix_and_nothing_is_kept() {
    let home = home();
    let two = json!([
        {"content": "Fix the lexer", "status": "in_progress"},
        {"content": "Fix the parser", "status": "in_progress"}
    ]);
    let fixed = json!([
        {"content": "Fix the lexer", "status": "in_progress"},
        {"content": "Fix the parser", "status": "pending"}
    ]);
    let s = script(
        home.path(),
        "two.json",
        &json!([
            write_call("c1", &two),
            write_call("c2", &fixed),
            answer("fixed the list")
        ]),
    );
    let (requests, err) = eval(home.path(), &s, &["--name", "two"], "fix both");
    assert_eq!(requests.len(), 3, "{err}");
    let refused = tool_results(&requests[1]);
    assert_eq!(refused.len(), 1);
    let (text, is_error) = &refused[0];
    assert!(is_error, "{text}");
    assert_eq!(
        text,
        "todo_write refused the list: 2 items are in_progress: \"Fix the lexer\" (id 1), \"Fix the parser\" (id 2); at most one item may be in_progress at a time. Keep in_progress only the one you are working on now, mark the others pending (or completed if they are done), and call todo_write again with the whole list; the list was not changed"
    );
    // Nothing was kept and the model is told no list.
    assert!(!system(&requests[1]).contains("Your todo list"));
    // The corrected list is taken.
    let taken = tool_results(&requests[2]);
    assert_eq!(
        taken.last().unwrap(),
        &(
            "Todo list updated: 2 items (0 completed, 1 in progress, 1 pending). In progress: Fix the lexer (id 1). Next: Fix the parser (id 2).".to_owned(),
            false
        )
    );
    let kept = states(home.path(), "two");
    assert_eq!(kept.len(), 1, "only the accepted list is kept: {kept:?}");

    // A status outside the three never reaches the plugin: the schema
    // refuses it, naming the field.
    let s = script(
        home.path(),
        "bad.json",
        &json!([
            write_call("c1", &json!([{"content": "Fix it", "status": "done"}])),
            answer("ok")
        ]),
    );
    let (requests, _) = eval(home.path(), &s, &["--name", "bad"], "fix");
    let (text, is_error) = tool_results(&requests[1]).remove(0);
    assert!(is_error && text.contains("todos[0].status"), "{text}");
    assert!(states(home.path(), "bad").is_empty());
}

/// Reads records until the response to `id`, and returns it.
fn response(c: &mut Client, id: u64) -> Value {
    c.until(|r| r.get("method").is_none() && r["id"] == id)
}

#[test]
fn a_compaction_keeps_the_list_before_the_model() {
    let home = home();
    let s = script(
        home.path(),
        "compact.json",
        &json!({
            "responses": [
                write_call("c1", &plan()),
                answer("planned"),
                answer("still on it"),
                answer("after the compaction")
            ],
            "summaries": [
                [{"text": "Summary: the user asked for a lexer fix."}, {"stop": {"reason": "end"}}]
            ]
        }),
    );
    let record = home.path().join("requests.jsonl");
    let record_arg = record.display().to_string();
    let mut c = Client::start(
        home.path(),
        &[
            "--mock-script",
            &s,
            "--mock-record",
            &record_arg,
            "--name",
            "cmp",
        ],
    );
    c.send(1, "initialize", json!({}));
    response(&mut c, 1);
    let mut id = 2;
    // A long first prompt: its summary is far shorter than the turn it
    // replaces (one no shorter is never used).
    let first = format!(
        "fix the lexer {}",
        "so that every token keeps its position. ".repeat(30)
    );
    for text in [first.as_str(), "and then?"] {
        c.send(id, "prompt", json!({"text": text}));
        response(&mut c, id);
        c.send(id + 1, "wait_settled", json!({}));
        response(&mut c, id + 1);
        id += 2;
    }
    c.send(id, "compact", json!({}));
    let compacted = response(&mut c, id);
    assert_eq!(compacted["result"]["outcome"], "compacted", "{compacted}");
    // The first prompt's four messages (the todo_write call among them)
    // are summarized; the last turn is kept.
    assert_eq!(compacted["result"]["summarized_messages"], 4, "{compacted}");
    // The compaction is answered before the runtime settles.
    c.send(id + 1, "wait_settled", json!({}));
    response(&mut c, id + 1);
    c.send(id + 2, "prompt", json!({"text": "what is left?"}));
    let started = response(&mut c, id + 2);
    assert_eq!(started["result"]["started"], true, "{started}");
    c.send(id + 3, "wait_settled", json!({}));
    response(&mut c, id + 3);
    let (_, err) = c.finish();
    let requests = requests(&record);
    // Three requests of the first two prompts, the summary request, and
    // the request after the compaction.
    assert_eq!(requests.len(), 5, "{err}");
    let after = &requests[4];
    let messages = after["messages"].to_string();
    assert!(
        messages.contains("Summary: the user asked for a lexer fix."),
        "{messages}"
    );
    // The tool call that wrote the list was summarized away; the model is
    // still told the list.
    assert!(!messages.contains("todo_write"), "{messages}");
    let prompt = system(after);
    for line in PLAN_LINES {
        assert!(prompt.contains(line), "{line} missing from {prompt}");
    }
}

#[test]
fn disabling_the_plugin_removes_the_tool_and_nothing_else() {
    let home = home();
    let s = script(home.path(), "answer.json", &json!([answer("done")]));
    let (before, _) = eval(home.path(), &s, &[], "hello");
    run(home.path(), &["plugin", "disable", "smith/todo"], 0);
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out.lines().find(|l| l.contains("smith/todo")).unwrap();
    assert!(line.contains("disabled"), "{line}");
    let (after, err) = eval(home.path(), &s, &[], "hello");
    assert!(!tool_names(&after[0]).contains(&"todo_write".to_owned()));
    let mut tools = tool_names(&before[0]);
    assert!(tools.contains(&"todo_write".to_owned()));
    tools.retain(|t| t != "todo_write");
    assert_eq!(tool_names(&after[0]), tools);
    // The system prompt and the messages are as they were (no list was
    // written, so the plugin added no fragment).
    assert_eq!(system(&after[0]), system(&before[0]));
    assert_eq!(after[0]["messages"], before[0]["messages"]);
    assert!(!err.contains("smith/todo"), "{err}");
    // A model that calls it anyway is told there is no such tool.
    let s = script(
        home.path(),
        "call.json",
        &json!([write_call("c1", &plan()), answer("ok")]),
    );
    let (requests, _) = eval(home.path(), &s, &["--name", "off"], "plan");
    let (text, is_error) = tool_results(&requests[1]).remove(0);
    assert!(is_error && text.contains("todo_write"), "{text}");
    assert!(states(home.path(), "off").is_empty());
}
