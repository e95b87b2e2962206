//! `smith replay` end to end: the live stream again (modulo the replay
//! marker and the documented differences), byte-identical JSON, turn
//! selection, compare, and an unknown effect that is never re-executed.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn smith(home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.env("SMITH_HOME", home).current_dir(cwd);
    cmd
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write_script(dir: &Path, name: &str, script: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    path
}

const SCRIPT: &str = r#"[
    [{"text": "Reading."}, {"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}}, {"usage": {"input": 10, "output": 5}}, {"stop": {"reason": "tool_use"}}],
    [{"tool_call": {"id": "c2", "name": "bash", "arguments": {"command": "echo from-bash > out.txt; echo printed"}}}, {"usage": {"input": 20, "output": 5}}, {"stop": {"reason": "tool_use"}}],
    [{"tool_call": {"id": "c3", "name": "edit", "arguments": {"path": "notes.txt", "old_text": "hello", "new_text": "goodbye"}}}, {"usage": {"input": 25, "output": 5}}, {"stop": {"reason": "tool_use"}}],
    [{"text": "All "}, {"text": "done."}, {"usage": {"input": 30, "output": 2}}, {"stop": {"reason": "end"}}]
]"#;

/// Records session `name` with `SCRIPT`; returns the live `--json` lines.
fn record(home: &Path, work: &Path, name: &str) -> Vec<Value> {
    std::fs::write(work.join("notes.txt"), "hello world\n").unwrap();
    let script = write_script(home, "script.json", SCRIPT);
    let out = smith(home, work)
        .args(["eval", "--json", "--name", name, "--mock-script"])
        .arg(&script)
        .arg("tidy the notes")
        .output()
        .unwrap();
    ok(&out);
    json_lines(&out.stdout)
}

/// The documented differences: deltas coalesced per block, no live output
/// pieces or queue notices; the header compared apart.
fn normalized(lines: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for line in &lines[1..] {
        let kind = line["type"].as_str().unwrap();
        if kind == "tool_execution_update" || kind == "queue_changed" {
            continue;
        }
        if let Some(last) = out.last_mut()
            && (kind == "message_delta" || kind == "thinking_delta")
            && last["type"] == kind
        {
            let joined = format!(
                "{}{}",
                last["text"].as_str().unwrap(),
                line["text"].as_str().unwrap()
            );
            last["text"] = Value::from(joined);
            continue;
        }
        out.push(line.clone());
    }
    out
}

#[test]
fn replay_json_reproduces_the_live_stream_byte_identically_every_time() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let live = record(home.path(), work.path(), "s");
    let first = smith(home.path(), work.path())
        .args(["replay", "s", "--json"])
        .output()
        .unwrap();
    ok(&first);
    let second = smith(home.path(), work.path())
        .args(["replay", "s", "--json"])
        .output()
        .unwrap();
    ok(&second);
    assert_eq!(first.stdout, second.stdout, "byte-identical across runs");
    let replay = json_lines(&first.stdout);
    // The header differs only by the replay marker.
    let mut header = replay[0].clone();
    let marker = header.as_object_mut().unwrap().remove("replay").unwrap();
    assert_eq!(header, live[0]);
    assert_eq!(marker["name"], "s");
    assert_eq!(marker["session"].as_str().unwrap().len(), 32);
    assert_eq!(normalized(&replay), normalized(&live));
    assert_eq!(replay.last().unwrap()["type"], "result");
    assert_eq!(replay.last().unwrap()["stop"], "done");
}

#[test]
fn replay_selects_turns_and_plays_human_output() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    record(home.path(), work.path(), "s");
    let out = smith(home.path(), work.path())
        .args(["replay", "s", "--json", "--turns", "2..3"])
        .output()
        .unwrap();
    ok(&out);
    let lines = json_lines(&out.stdout);
    let turns: Vec<u64> = lines
        .iter()
        .filter(|l| l["type"] == "turn_start")
        .map(|l| l["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, vec![2, 3]);
    let tools: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, vec!["bash", "edit"]);

    let out = smith(home.path(), work.path())
        .args(["replay", "s", "--turns", "9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the session has 4 turns"));

    // Human output through eval's printer; --speed plays faster than real time.
    let out = smith(home.path(), work.path())
        .args(["replay", "s", "--speed", "1000"])
        .output()
        .unwrap();
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Reading."), "{stdout}");
    assert!(stdout.contains("All done."), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("replay of session s"), "{stderr}");
    assert!(stderr.contains("[read] ok"), "{stderr}");
    assert!(stderr.contains("[edit] ok"), "{stderr}");
}

#[test]
fn compare_reports_matches_and_divergences_with_exit_codes() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A read-only session: the workspace is unchanged, so compare matches.
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    let script = write_script(
        home.path(),
        "read.json",
        r#"[[{"tool_call": {"id": "r", "name": "read", "arguments": {"path": "a.txt"}}}, {"stop": {"reason": "tool_use"}}],
            [{"tool_call": {"id": "l", "name": "ls", "arguments": {}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "ok"}, {"stop": {"reason": "end"}}]]"#,
    );
    let out = smith(home.path(), work.path())
        .args(["eval", "--name", "ro", "--mock-script"])
        .arg(&script)
        .arg("look")
        .output()
        .unwrap();
    ok(&out);
    let out = smith(home.path(), work.path())
        .args(["replay", "ro", "--instant", "--compare"])
        .output()
        .unwrap();
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("compare fx-1 read: match"), "{stdout}");
    assert!(stdout.contains("compare fx-2 ls: match"), "{stdout}");
    assert!(stdout.contains("2 matched, 0 diverged"), "{stdout}");
    // A read-only session takes no checkpoints: compare says it copies
    // the current files.
    assert!(
        stdout.contains(
            "compare: the session has no checkpoint of the compared effects; starting from a copy of the current files of "
        ),
        "{stdout}"
    );

    // The edited session starts from its first checkpoint (the files
    // before the bash call), so re-running it matches the recording.
    record(home.path(), work.path(), "s");
    let out = smith(home.path(), work.path())
        .args(["replay", "s", "--json", "--compare"])
        .output()
        .unwrap();
    ok(&out);
    let lines = json_lines(&out.stdout);
    let start = lines.iter().find(|l| l["type"] == "compare_start").unwrap();
    assert_eq!(start["source"], "checkpoint", "{start}");
    assert_eq!(start["effect_id"], "fx-2", "{start}");
    let summary = lines
        .iter()
        .find(|l| l["type"] == "compare_summary")
        .unwrap();
    assert_eq!(summary["matched"], 3, "{lines:?}");
    assert_eq!(summary["diverged"], 0, "{lines:?}");

    // A turn range starts from the first checkpoint in it.
    let out = smith(home.path(), work.path())
        .args(["replay", "s", "--json", "--compare", "--turns", "2"])
        .output()
        .unwrap();
    ok(&out);
    let lines = json_lines(&out.stdout);
    let start = lines.iter().find(|l| l["type"] == "compare_start").unwrap();
    assert_eq!(start["effect_id"], "fx-2", "{start}");
    assert_eq!(start["side"], "before", "{start}");
    let summary = lines
        .iter()
        .find(|l| l["type"] == "compare_summary")
        .unwrap();
    assert_eq!(
        (&summary["matched"], &summary["diverged"]),
        (&Value::from(1), &Value::from(0))
    );

    // From a copy of the current workspace instead: notes.txt changed
    // since the read was recorded (the run's own edit), so re-running the
    // read diverges.
    let out = smith(home.path(), work.path())
        .args(["replay", "s", "--json", "--compare", "--workspace"])
        .arg(work.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    let compares: Vec<&Value> = lines.iter().filter(|l| l["type"] == "compare").collect();
    assert_eq!(compares.len(), 3);
    assert_eq!(compares[0]["effect_id"], "fx-1");
    assert_eq!(compares[0]["result"], "diverged");
    let content = compares[0]["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["field"] == "content")
        .unwrap();
    assert!(
        content["expected"]
            .as_str()
            .unwrap()
            .contains("hello world")
    );
    assert!(content["got"].as_str().unwrap().contains("goodbye world"));
    assert_eq!(compares[1]["result"], "match", "{:?}", compares[1]);
    assert_eq!(
        compares[2]["result"], "diverged",
        "no \"hello\" left to edit"
    );
    let summary = lines
        .iter()
        .find(|l| l["type"] == "compare_summary")
        .unwrap();
    assert_eq!(summary["diverged"], 2);
    assert_eq!(summary["matched"], 1);
    // The real workspace is untouched by compare.
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).unwrap(),
        "goodbye world\n"
    );
}

#[test]
fn an_unknown_effect_replays_as_unknown_and_compare_never_runs_it() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("runs.txt");
    // An absolute path: a re-execution anywhere would append to this file.
    let script = write_script(
        home.path(),
        "slow.json",
        &format!(
            r#"[[{{"tool_call": {{"id": "slow", "name": "bash", "arguments": {{"command": "echo run >> {}; sleep 3"}}}}}},
                 {{"stop": {{"reason": "tool_use"}}}}],
                [{{"text": "never reached"}}, {{"stop": {{"reason": "end"}}}}]]"#,
            marker.display()
        ),
    );
    let mut child = smith(home.path(), work.path())
        .args(["eval", "--json", "--name", "crash", "--mock-script"])
        .arg(&script)
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("tool_execution_start") {
            break;
        }
    }
    let started = Instant::now();
    while !marker.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "bash never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Let the orphaned `sleep 3` finish so nothing else writes.
    std::thread::sleep(Duration::from_millis(3200));

    let out = smith(home.path(), work.path())
        .args(["replay", "crash", "--json", "--compare"])
        .output()
        .unwrap();
    ok(&out);
    let lines = json_lines(&out.stdout);
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["mutation"], "unknown");
    assert_eq!(end["effect_id"], "fx-1");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "error" && l["kind"] == "interrupted")
    );
    let compare = lines.iter().find(|l| l["type"] == "compare").unwrap();
    assert_eq!(compare["effect_id"], "fx-1");
    assert_eq!(compare["result"], "skipped-unknown");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "run\n");

    // Human output names the unknown effect.
    let out = smith(home.path(), work.path())
        .args(["replay", "crash", "--instant"])
        .output()
        .unwrap();
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("effect fx-1: whether it changed anything is unknown"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "run\n");
}
