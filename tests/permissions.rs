//! Approval modes and permission rules end to end through the built
//! binary: smith/permissions decides every tool call of `smith eval` and
//! `smith rpc`, and a refusal is a tool result the model reads and the
//! session keeps.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{Client, dump, run};
use serde_json::{Value, json};

/// A mock script whose first turn makes `calls` (`(tool, arguments)`),
/// then answers `done`; written into `home`, its path returned.
fn script(home: &Path, calls: &[(&str, Value)]) -> String {
    let mut first: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"tool_call": {"id": format!("c{i}"), "name": name, "arguments": arguments}})
        })
        .collect();
    first.push(json!({"stop": {"reason": "tool_use"}}));
    let script = json!([first, [{"text": "done"}, {"stop": {"reason": "end"}}]]);
    let path = home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    path.display().to_string()
}

fn tool_ends(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "tool_execution_end")
        .collect()
}

fn content(end: &Value) -> &str {
    end["content"].as_str().unwrap_or_default()
}

#[test]
fn workspace_runs_a_write_in_the_project_and_refuses_one_outside() {
    let home = tempfile::tempdir().unwrap();
    // A subfolder: the project is smith's home here, whose root holds the
    // credential store the sandbox denies (docs/security.md).
    std::fs::create_dir(home.path().join("work")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let away = outside.path().join("away.txt");
    let script = script(
        home.path(),
        &[
            (
                "write",
                json!({"path": "work/in.txt", "content": "inside\n"}),
            ),
            (
                "write",
                json!({"path": away.display().to_string(), "content": "outside\n"}),
            ),
        ],
    );
    let (out, err) = run(
        home.path(),
        &["eval", "--json", "--mock-script", &script, "write both"],
        0,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 2, "{out}\n{err}");
    assert_eq!(ends[0]["status"], "ok", "{}", ends[0]);
    assert_eq!(
        std::fs::read_to_string(home.path().join("work/in.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(ends[1]["status"], "blocked", "{}", ends[1]);
    assert!(
        content(&ends[1]).contains("smith/permissions blocked it: in workspace mode only files inside the project change without asking"),
        "{}",
        ends[1]
    );
    assert!(!away.exists(), "the refused write did not happen");
}

#[test]
fn read_only_refuses_write_and_bash_and_the_session_keeps_the_refusal() {
    let home = tempfile::tempdir().unwrap();
    let script = script(
        home.path(),
        &[
            ("write", json!({"path": "a.txt", "content": "x"})),
            ("bash", json!({"command": "touch b.txt"})),
            ("ls", json!({})),
        ],
    );
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--approval",
            "read-only",
            "--name",
            "ro",
            "--mock-script",
            &script,
            "try",
        ],
        0,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 3, "{out}\n{err}");
    for end in &ends[..2] {
        assert_eq!(end["status"], "blocked", "{end}");
        assert!(content(end).contains("read-only mode"), "{end}");
    }
    assert_eq!(ends[2]["status"], "ok", "read-only tools run: {}", ends[2]);
    assert!(!home.path().join("a.txt").exists());
    assert!(!home.path().join("b.txt").exists());
    let entries = dump(home.path(), "ro");
    let kept = entries
        .iter()
        .filter(|e| {
            e.to_string()
                .contains("read-only mode lets no tool change anything")
        })
        .count();
    assert!(
        kept >= 2,
        "the refusals are tool results in the session: {entries:?}"
    );
}

#[test]
fn a_deny_rule_beats_yes() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.kdl"),
        "permissions {\n    deny \"bash\" command=\"rm *\"\n}\n",
    )
    .unwrap();
    std::fs::write(home.path().join("keep.txt"), "kept").unwrap();
    let script = script(
        home.path(),
        &[("bash", json!({"command": "echo hi && rm -f keep.txt"}))],
    );
    let (out, err) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--yes",
            "--mock-script",
            &script,
            "clean up",
        ],
        0,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 1, "{out}\n{err}");
    assert_eq!(ends[0]["status"], "blocked", "{}", ends[0]);
    assert!(
        content(&ends[0]).contains("the rule `deny \"bash\" command=\"rm *\"`"),
        "{}",
        ends[0]
    );
    assert!(home.path().join("keep.txt").exists());
}

#[test]
fn a_bad_rule_is_a_configuration_error_naming_the_file_and_the_rule() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.kdl"),
        "permissions {\n    allow \"bash\" cmd=\"ls\"\n}\n",
    )
    .unwrap();
    let script = script(home.path(), &[]);
    let (_, err) = run(
        home.path(),
        &["eval", "--json", "--mock-script", &script, "hi"],
        1,
    );
    assert!(err.contains("invalid permission rule in"), "{err}");
    assert!(err.contains("config.kdl"), "{err}");
    assert!(err.contains("no property `cmd=`"), "{err}");
}

/// The question asked before the scripted command. The command writes in a
/// subfolder: the project is smith's home here, whose root holds smith's
/// credential store, and the sandbox cannot let new entries appear beside a
/// denied path (docs/security.md).
const ASKED: &str = "Allow bash to run this command?\n$ echo asked > out/asked.txt";

#[test]
fn ask_mode_asks_and_an_answer_decides() {
    for (answer, status) in [("yes", "ok"), ("no", "blocked")] {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("out")).unwrap();
        let script = script(
            home.path(),
            &[("bash", json!({"command": "echo asked > out/asked.txt"}))],
        );
        let configured = format!("{ASKED}={answer}");
        let (out, err) = run(
            home.path(),
            &[
                "eval",
                "--json",
                "--approval",
                "ask",
                "--answer",
                &configured,
                "--mock-script",
                &script,
                "ask me",
            ],
            0,
        );
        let ends = tool_ends(&out);
        assert_eq!(ends.len(), 1, "{out}\n{err}");
        assert_eq!(ends[0]["status"], status, "{answer}: {}", ends[0]);
        assert_eq!(home.path().join("out/asked.txt").exists(), answer == "yes");
        if answer == "no" {
            assert!(
                content(&ends[0]).contains("the user declined it"),
                "{}",
                ends[0]
            );
        }
    }
}

#[test]
fn project_rules_apply_only_in_a_trusted_project() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    std::fs::write(
        project.join(".smith").join("config.kdl"),
        "permissions {\n    deny \"write\" path=\"locked/**\"\n}\n",
    )
    .unwrap();
    let project_arg = project.display().to_string();
    let script = script(
        home.path(),
        &[("write", json!({"path": "locked/a.txt", "content": "x"}))],
    );
    let eval = [
        "eval",
        "--json",
        "--cwd",
        &project_arg,
        "--mock-script",
        &script,
        "write",
    ];
    let (out, err) = run(home.path(), &eval, 0);
    let ends = tool_ends(&out);
    assert_eq!(
        ends[0]["status"], "ok",
        "untrusted: its rules are ignored: {out}\n{err}"
    );
    std::fs::remove_file(project.join("locked/a.txt")).unwrap();
    run(home.path(), &["trust", &project_arg], 0);
    let (out, err) = run(home.path(), &eval, 0);
    let ends = tool_ends(&out);
    assert_eq!(ends[0]["status"], "blocked", "trusted: {out}\n{err}");
    assert!(content(&ends[0]).contains("locked/**"), "{}", ends[0]);
    assert!(!project.join("locked/a.txt").exists());
}

#[test]
fn rpc_asks_over_ui_question_and_the_answer_decides() {
    for (answer, status) in [("yes", "ok"), ("no", "blocked")] {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("out")).unwrap();
        let script = script(
            home.path(),
            &[("bash", json!({"command": "echo asked > out/asked.txt"}))],
        );
        let mut client = Client::start(
            home.path(),
            &[
                "--approval",
                "ask",
                "--mock-script",
                &script,
                "--name",
                answer,
            ],
        );
        client.send(1, "prompt", json!({"text": "run it"}));
        let question = client.until(|r| r["method"] == "ui_question");
        assert_eq!(question["params"]["plugin"], "smith/permissions");
        assert_eq!(question["params"]["prompt"], ASKED);
        assert_eq!(question["params"]["kind"], "select", "{question}");
        assert_eq!(
            question["params"]["options"],
            json!(["yes", "no", "no, with a note", "always in this session"]),
            "{question}"
        );
        let id = question["params"]["id"].as_str().unwrap().to_owned();
        client.send(
            2,
            "ui/answer",
            json!({"plugin": "smith/permissions", "id": id, "answer": answer}),
        );
        let end = client.until(|r| r["method"] == "tool_execution_end");
        assert_eq!(end["params"]["status"], status, "{end}");
        client.send(3, "wait_settled", json!({}));
        client.until(|r| r["id"] == 3);
        client.finish();
        assert_eq!(home.path().join("out/asked.txt").exists(), answer == "yes");
    }
}
