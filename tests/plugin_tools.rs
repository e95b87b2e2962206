//! Plugin tools, context and queue policies end to end through the built
//! binary with test/kit installed: the model calls kit_read (a read-only
//! tool that reads a project file through `project-read`) and kit_note (a
//! mutating tool writing in the plugin's data folder); the session records
//! each tool effect with the plugin's host effects as its children; without
//! the `project-read` grant the read is denied; the request carries the
//! plugin's prompt fragments after smith/product's base prompt.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use common::{dump, install_guest, run};
use serde_json::Value;

/// A smith home (also the project) with test/kit installed with
/// `capabilities`, an AGENTS.md, a rule allowing kit_note, and a mock
/// script calling kit_read and kit_note, then answering `done`.
fn home_with_kit(capabilities: &str) -> (tempfile::TempDir, String) {
    let home = tempfile::tempdir().unwrap();
    install_guest(
        home.path(),
        "test/kit",
        "smith_plugin_kit.wasm",
        capabilities,
    );
    std::fs::write(home.path().join("AGENTS.md"), "be brief").unwrap();
    // kit_note can change things: `smith eval` (workspace mode) runs it
    // only because a permission rule allows it.
    std::fs::write(
        home.path().join("config.kdl"),
        "permissions {\n    allow \"kit_note\"\n}\n",
    )
    .unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[
  [{"tool_call": {"id": "c1", "name": "kit_read", "arguments": {"path": "AGENTS.md"}}},
   {"tool_call": {"id": "c2", "name": "kit_note", "arguments": {"text": "hi"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    (home, script)
}

fn tool_ends(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "tool_execution_end")
        .collect()
}

#[test]
fn a_plugin_tool_runs_and_its_host_effects_are_its_children() {
    let (home, script) =
        home_with_kit("    project-read\n    fs-read \"notes\"\n    fs-write \"notes\"\n");
    let record = home.path().join("requests.jsonl");
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--name",
            "kit",
            "--mock-script",
            &script,
            "--mock-record",
            &record.display().to_string(),
            "use the kit",
        ],
        0,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 2, "{out}\n{err}");
    assert_eq!(ends[0]["status"], "ok", "{}", ends[0]);
    assert_eq!(ends[0]["content"], "be brief");
    assert_eq!(ends[1]["status"], "ok", "{}", ends[1]);
    assert_eq!(ends[1]["content"], "noted 2 bytes");

    let entries = dump(home.path(), "kit");
    let intents: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "effect_intent")
        .map(|e| &e["content"])
        .collect();
    let effect_of = |call: &str| {
        intents
            .iter()
            .find(|i| i["parent"] == call)
            .unwrap_or_else(|| panic!("no effect of {call}: {intents:?}"))
    };
    let read = effect_of("c1");
    let note = effect_of("c2");
    assert_eq!(read["tool"], "kit_read");
    assert_eq!(note["tool"], "kit_note");
    let children = |fx: &Value| -> Vec<String> {
        intents
            .iter()
            .filter(|i| i["parent"] == *fx)
            .map(|i| i["tool"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(children(&read["effect_id"]), ["plugin.project-read-file"]);
    assert_eq!(
        children(&note["effect_id"]),
        ["plugin.write-file", "plugin.read-file"]
    );

    // The request carried the tools and the context: smith/product's base
    // prompt first, then the kit's static and per-turn fragments.
    let requests = std::fs::read_to_string(&record).unwrap();
    let first: Value = serde_json::from_str(requests.lines().next().unwrap()).unwrap();
    let request = if first.get("request").is_some() {
        &first["request"]
    } else {
        &first
    };
    let system = request["system"].as_str().unwrap_or_default();
    assert!(
        system.starts_with("You are smith, a coding agent. Work in "),
        "{system}"
    );
    let rules = system.find("Kit rules: answer in one line.").unwrap();
    let turns = system
        .find("Kit context: at least 0 messages so far.")
        .unwrap();
    assert!(rules < turns, "{system}");
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"kit_read") && tools.contains(&"read"),
        "{tools:?}"
    );
}

#[test]
fn without_the_grant_a_project_file_is_not_read() {
    let (home, script) = home_with_kit("    fs-read \"notes\"\n    fs-write \"notes\"\n");
    let (out, _) = run(
        home.path(),
        &["eval", "--json", "--mock-script", &script, "use the kit"],
        0,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends[0]["status"], "error", "{}", ends[0]);
    let content = ends[0]["content"].as_str().unwrap();
    assert!(content.starts_with("denied:"), "{content}");
    assert!(content.contains("project-read"), "{content}");
    assert!(!content.contains("be brief"), "{content}");
}

#[test]
fn rpc_queues_input_under_a_plugins_queue_policy() {
    let (home, script) = home_with_kit("    fs-read \"notes\"\n    fs-write \"notes\"\n");
    let mut client = common::Client::start(home.path(), &["--mock-script", &script]);
    client.send(1, "initialize", serde_json::json!({}));
    let init = client.until(|r| r["id"] == 1);
    let modes: Vec<&str> = init["result"]["capabilities"]["queue_modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(modes, ["steer", "follow_up", "kit-batch"], "{init}");
    client.send(
        2,
        "enqueue",
        serde_json::json!({"mode": "nope", "text": "later"}),
    );
    let refused = client.until(|r| r["id"] == 2);
    let message = refused["error"].to_string();
    assert!(
        message.contains("no queue policy has the mode \\\"nope\\\"; this runtime's modes are steer, follow_up, kit-batch"),
        "{refused}"
    );
    // Queued while idle, kit-batch input starts a run at once.
    client.send(
        3,
        "enqueue",
        serde_json::json!({"mode": "kit-batch", "text": "use the kit"}),
    );
    assert_eq!(client.until(|r| r["id"] == 3)["result"]["queued"], true);
    // The run it started calls kit_read, which reports the missing grant.
    client.until(|r| r["method"] == "tool_execution_end" && r.to_string().contains("project-read"));
    client.until(|r| r["method"] == "agent_end");
    client.finish();
}
