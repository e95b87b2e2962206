//! Extension plugins at the session and context decision points and the
//! session lifecycle events, end to end through the built binary with the
//! test/lifecycle guest installed (it reports events as notices and blocks
//! what its triggers name; see plugins/tests/guests/lifecycle).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{Client, dump, run};
use serde_json::{Value, json};

/// A smith home with test/lifecycle installed (granted `ui`) and a mock
/// script answering one turn with `done`; returns the home and the script.
fn home_with_lifecycle() -> (tempfile::TempDir, String) {
    let home = tempfile::tempdir().unwrap();
    common::install_guest(
        home.path(),
        "test/lifecycle",
        "smith_plugin_lifecycle.wasm",
        "    ui\n",
    );
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    (home, script)
}

/// The lines of `stderr` that come from or name test/lifecycle.
fn lifecycle_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("test/lifecycle"))
        .collect()
}

fn session_id(home: &Path, name: &str) -> String {
    let (out, _) = run(home, &["session", "list", "--json"], 0);
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no session {name} in {out}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn eval_raises_the_session_lifecycle_and_keeps_a_persist_intent_in_the_session() {
    let (home, script) = home_with_lifecycle();
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--name",
            "kept",
            "--mock-script",
            &script,
            "write the release notes, persist them",
        ],
        0,
    );
    assert_eq!(out.trim_end(), "done");
    let id = session_id(home.path(), "kept");
    let session_start = format!("[test/lifecycle] session-start {id}");
    assert_eq!(
        lifecycle_lines(&err),
        [
            "[test/lifecycle] plugin-loaded smith/product",
            "[test/lifecycle] plugin-loaded smith/plan",
            "[test/lifecycle] plugin-loaded smith/permissions",
            "[test/lifecycle] plugin-loaded smith/instructions",
            "[test/lifecycle] plugin-loaded smith/skills",
            "[test/lifecycle] plugin-loaded smith/agents",
            "[test/lifecycle] plugin-loaded smith/mcp",
            "[test/lifecycle] plugin-loaded smith/mentions",
            "[test/lifecycle] plugin-loaded smith/todo",
            "[test/lifecycle] plugin-loaded smith/hooks",
            "[test/lifecycle] plugin-loaded smith/web",
            "[test/lifecycle] plugin-loaded test/lifecycle",
            session_start.as_str(),
            "[test/lifecycle] before-provider-request mock-1",
            "smith: plugin test/lifecycle's confirm intent \"keep-notes\" is kept in the session for a frontend that can show it",
            "[test/lifecycle] session-shutdown",
        ],
        "{err}"
    );
    // The intent is an entry of the session, after the run it came from.
    let entries = dump(home.path(), "kept");
    let kinds: Vec<&str> = entries
        .iter()
        .filter(|e| e["type"] == "entry")
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    // Every intent shown or kept is a `ui` effect with its intent and
    // completion records: the fourteen notices released together at the end
    // of the turn (twelve plugin-loaded, session-start, before-provider-request:
    // their intents in one write, then their completions in one write), the
    // kept question after the run's record, then the session-shutdown
    // notice.
    let ui = ["effect_intent", "effect_completion"];
    let mut expected = vec![
        "model_change",
        "metadata",
        "user_message",
        "assistant_message",
    ];
    expected.extend(["effect_intent"; 14]);
    expected.extend(["effect_completion"; 14]);
    expected.push("metadata");
    expected.extend(ui);
    expected.push("plugin_intent");
    expected.extend(ui);
    assert_eq!(kinds, expected);
    let kept = entries
        .iter()
        .find(|e| e["kind"] == "plugin_intent")
        .unwrap();
    assert_eq!(
        kept["content"],
        json!({
            "plugin": "test/lifecycle",
            "id": "keep-notes",
            "kind": "confirm",
            "text": "Keep the release notes? [yes / no]",
            "surface": "eval",
        })
    );
    // Resume and replay skip it: the session continues, and replays the
    // same with or without it.
    let (out, _) = run(
        home.path(),
        &[
            "eval",
            "--session",
            "kept",
            "--mock-script",
            &script,
            "again",
        ],
        0,
    );
    assert_eq!(out.trim_end(), "done");
    let (replayed, _) = run(home.path(), &["replay", "kept", "--instant", "--json"], 0);
    let types: Vec<String> = replayed
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| v["type"].as_str().unwrap_or("").to_owned())
        .filter(|t| t.contains("message") || t.contains("agent") || t == "result")
        .collect();
    assert!(!replayed.contains("keep-notes"), "{replayed}");
    assert_eq!(
        types.iter().filter(|t| *t == "agent_end").count(),
        2,
        "{replayed}"
    );
}

#[test]
fn a_blocked_context_sends_no_request_and_ends_the_turn() {
    let (home, script) = home_with_lifecycle();
    let record = home.path().join("requests.jsonl");
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--no-session",
            "--json",
            "--mock-script",
            &script,
            "--mock-record",
            &record.display().to_string(),
            "please block context",
        ],
        1,
    );
    let records: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let error = records.iter().find(|r| r["type"] == "error").unwrap();
    assert_eq!(error["kind"], "blocked");
    assert_eq!(
        error["message"],
        "the extension test/lifecycle blocked the provider request (a context of 1 message), so nothing was sent and the run stops: test/lifecycle holds back the 1 messages; disable the extension (`smith plugin disable test/lifecycle`) to send it"
    );
    // The turn ended cleanly: turn_end, then agent_end with stop error.
    let types: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .filter(|t| t.starts_with("turn") || t.starts_with("agent") || *t == "error")
        .collect();
    assert_eq!(
        types,
        [
            "agent_start",
            "turn_start",
            "error",
            "turn_end",
            "agent_end"
        ],
        "{out}"
    );
    let end = records.iter().find(|r| r["type"] == "agent_end").unwrap();
    assert_eq!(end["stop"], "error");
    // The provider never saw a request.
    let sent = std::fs::read_to_string(&record).unwrap_or_default();
    assert_eq!(sent, "", "{err}");
    assert!(
        !err.contains("before-provider-request"),
        "no request was about to be made: {err}"
    );
}

#[test]
fn a_replacement_at_context_counts_as_allow_and_is_reported() {
    let (home, script) = home_with_lifecycle();
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--no-session",
            "--mock-script",
            &script,
            "replace context please",
        ],
        0,
    );
    assert_eq!(out.trim_end(), "done");
    assert!(
        err.contains("smith: warning: plugin test/lifecycle answered the provider request with a replacement, which has no meaning there (only block or allow do); it counts as allow, so the provider request went ahead unchanged"),
        "{err}"
    );
    assert!(
        err.contains("[test/lifecycle] before-provider-request mock-1"),
        "{err}"
    );
}

/// Sends `requests` to `smith rpc` (then closes its input) and returns the
/// response to each, by id.
fn rpc(home: &Path, args: &[&str], requests: &[Value]) -> (Vec<Value>, String) {
    let mut client = Client::start(home, args);
    for request in requests {
        client.write(request);
    }
    let (records, err) = client.finish();
    let responses = records
        .into_iter()
        .filter(|v| v.get("id").is_some())
        .collect();
    (responses, err)
}

#[test]
fn rpc_asks_plugins_before_a_fork_or_switch_and_a_block_stops_it() {
    let (home, script) = home_with_lifecycle();
    let request = |id: u64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let (responses, err) = rpc(
        home.path(),
        &["--mock-script", &script, "--name", "nofork-1"],
        &[
            request(1, "session/fork", json!({"session": "nofork-1"})),
            request(2, "session/open", json!({"session": "noswitch-2"})),
            request(
                3,
                "session/select_leaf",
                json!({"session": "nofork-1", "entry": 1}),
            ),
            request(4, "session/list", json!({})),
            request(5, "session/new", json!({"name": "next"})),
        ],
    );
    let by_id = |id: u64| responses.iter().find(|r| r["id"] == id).unwrap();
    let fork = &by_id(1)["error"];
    assert_eq!(fork["code"], -32005);
    assert_eq!(
        fork["message"],
        "session/fork did not run: the extension test/lifecycle blocked it: nofork-1 stays in one piece; disable the extension (`smith plugin disable test/lifecycle`) to do it"
    );
    assert_eq!(fork["data"]["kind"], "blocked");
    assert_eq!(fork["data"]["plugin"], "test/lifecycle");
    assert_eq!(fork["data"]["reason"], "nofork-1 stays in one piece");
    let switch = &by_id(2)["error"];
    assert_eq!(switch["code"], -32005);
    assert_eq!(switch["data"]["reason"], "noswitch-2 is off limits");
    // A branch of the current session is a fork of it too.
    let branch = &by_id(3)["error"];
    assert_eq!(branch["code"], -32005);
    assert_eq!(branch["data"]["reason"], "nofork-1#1 stays in one piece");
    // Nothing was forked: the store holds the one session.
    let sessions = by_id(4)["result"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    // An allowed switch goes ahead: the old runtime shuts down and the new
    // one starts.
    assert_eq!(by_id(5)["result"]["session"]["name"], "next");
    let first = session_id(home.path(), "nofork-1");
    let next = session_id(home.path(), "next");
    let starts: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("session-start") || l.contains("session-shutdown"))
        .collect();
    let (start_first, start_next) = (
        format!("[test/lifecycle] session-start {first}"),
        format!("[test/lifecycle] session-start {next}"),
    );
    assert_eq!(
        starts,
        [
            start_first.as_str(),
            "[test/lifecycle] session-shutdown",
            start_next.as_str(),
            "[test/lifecycle] session-shutdown",
        ],
        "{err}"
    );
}

#[test]
fn rpc_sends_a_plugin_question_to_its_client_and_the_answer_back_to_the_plugin() {
    let (home, script) = home_with_lifecycle();
    let mut client = Client::start(home.path(), &["--mock-script", &script, "--name", "asks"]);
    client.send(1, "prompt", json!({"text": "ask me which target"}));
    let question = client.until(|r| r["method"] == "ui_question");
    assert_eq!(
        question["params"],
        json!({
            "plugin": "test/lifecycle",
            "id": "pick-1",
            "kind": "select",
            "prompt": "Which target?",
            "options": ["staging", "production"],
        })
    );
    client.send(2, "wait_settled", json!({}));
    client.until(|r| r["id"] == 2);
    // Answered once: the plugin hears it; a second answer is refused.
    let answer = json!({"plugin": "test/lifecycle", "id": "pick-1", "answer": "production"});
    client.send(3, "ui/answer", answer.clone());
    assert_eq!(
        client.until(|r| r["id"] == 3)["result"],
        json!({"delivered": true})
    );
    client.send(4, "ui/answer", answer);
    let refused = client.until(|r| r["id"] == 4);
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(
        refused["error"]["data"]["why"],
        "the answer to question \"pick-1\" of plugin test/lifecycle was not delivered: the plugin has no such open question (it was never asked here, or it was answered already)"
    );
    let (_, err) = client.finish();
    assert!(
        err.contains("[test/lifecycle] answer pick-1 \"production\""),
        "{err}"
    );
}
