//! `smith eval` end to end: the offline demo, JSON output, exit codes,
//! temporary stores, and a kill -9 during a bash effect.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use smith_engine::journal::store::resume;
use smith_engine::provider::Message;
use smith_store::Store;

fn smith(home: &Path, cwd: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.env("SMITH_HOME", home).current_dir(cwd);
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
    cmd
}

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

#[test]
fn the_offline_demo_runs_and_records_a_session() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("README.md"), "# hello project\n").unwrap();
    let out = smith(home.path(), work.path())
        .args(["eval", "--provider", "mock", "--name", "demo", "hello"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Reading README.md"), "{stdout}");
    assert!(stdout.contains("\"# hello project\""), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[ls] ok"), "{stderr}");
    assert!(stderr.contains("[read] ok"), "{stderr}");
    assert!(stderr.contains("cost unknown"), "{stderr}");
    let store = Store::open(home.path().join("data").join("sessions")).unwrap();
    let resumed = resume(&store.load("demo").unwrap()).unwrap();
    assert_eq!(
        resumed.history.first(),
        Some(&Message::User {
            text: "hello".into(),
            media: Vec::new(),
        })
    );
    assert_eq!(resumed.history.len(), 6, "user, 3 responses, 2 results");
    // Two effects, both completed: none is unknown.
    assert_eq!(resumed.last_effect_seq, 2);
    assert!(
        resumed.unknown_effects.is_empty(),
        "{:?}",
        resumed.unknown_effects
    );
}

#[test]
fn json_output_ends_with_a_result_record_and_no_session_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    let out = smith(home.path(), work.path())
        .args(["run", "--json", "--no-session", "hello"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["type"], "protocol");
    assert_eq!(lines[0]["schema_version"], 1);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["exit_code"], 0);
    assert_eq!(last["stop"], "done");
    assert!(last["cost"].is_null());
    assert!(last["session"].is_null());
    assert!(last["text"].as_str().unwrap().contains("alpha"));
    assert!(last["usage"]["input"].as_u64().is_some());
    assert!(
        !home.path().join("data").join("sessions").exists(),
        "--no-session must not touch the store"
    );
}

fn write_script(dir: &Path, script: &str) -> std::path::PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, script).unwrap();
    path
}

#[test]
fn an_overflow_compaction_with_nothing_to_gain_is_reported_and_the_run_fails_with_the_overflow() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A tool call, then the provider finds the context too large: the only
    // message a compaction could summarize is the short prompt.
    let script = write_script(
        work.path(),
        r#"[[{"tool_call": {"name": "ls"}}, {"stop": {"reason": "tool_use"}}],
            [{"error": {"kind": "context_overflow", "message": "prompt is too long"}}],
            [{"text": "never sent"}, {"stop": {"reason": "end"}}]]"#,
    );
    let record = work.path().join("requests.jsonl");
    let run = |json: bool| {
        let _ = std::fs::remove_file(&record);
        let mut cmd = smith(home.path(), work.path());
        cmd.args(["eval", "--no-session", "--mock-script"])
            .arg(&script)
            .arg("--mock-record")
            .arg(&record);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg("go").output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The two requests of the run: no summary request, no retry.
        assert_eq!(std::fs::read_to_string(&record).unwrap().lines().count(), 2);
        out
    };
    // Plain output: the compaction's line says why nothing changed, then
    // the overflow is the run's error.
    let out = run(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "smith: compacting the conversation (the provider found the context too large)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("smith: not compacted: nothing to gain — the conversation is about "),
        "{stderr}"
    );
    assert!(
        stderr.contains("so no summary was asked for and nothing was changed; compact again when the conversation has grown"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error[engine.context_overflow]: prompt is too long"),
        "{stderr}"
    );
    // JSON Lines: the compaction_end event carries the outcome and why.
    let out = run(true);
    let lines = json_lines(&out.stdout);
    let end: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "compaction_end")
        .collect();
    assert_eq!(end.len(), 1, "{lines:#?}");
    assert_eq!(end[0]["reason"], "overflow");
    assert_eq!(end[0]["outcome"], "skipped");
    assert_eq!(end[0]["error"]["kind"], "no_gain");
    assert!(
        end[0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("nothing to gain — the conversation is about "),
        "{}",
        end[0]
    );
    assert!(end[0].get("summary").is_none(), "{}", end[0]);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["stop"], "error");
}

#[test]
fn exit_codes_follow_the_stop_cause() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let failing = write_script(
        work.path(),
        r#"[[{"error": {"kind": "overloaded", "message": "try later"}}]]"#,
    );
    let out = smith(home.path(), work.path())
        .args(["eval", "--no-session", "--mock-script"])
        .arg(&failing)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The runtime's error report is rendered as a diagnostic: what, why, next.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error[engine.overloaded]: try later"),
        "{stderr}"
    );
    assert!(
        stderr.contains("why: the provider has no capacity for the request right now"),
        "{stderr}"
    );
    assert!(stderr.contains("next: retry later"), "{stderr}");

    let looping = write_script(
        work.path(),
        r#"[[{"tool_call": {"name": "ls"}}, {"stop": {"reason": "tool_use"}}],
            [{"tool_call": {"name": "ls"}}, {"stop": {"reason": "tool_use"}}]]"#,
    );
    let out = smith(home.path(), work.path())
        .args(["eval", "--no-session", "--max-turns", "1", "--mock-script"])
        .arg(&looping)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = smith(home.path(), work.path())
        .args(["eval", "--no-session", "--provider", "acme", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--provider mock"));
}

#[test]
fn interrupt_keeps_the_session_and_exits_130() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let script = write_script(
        work.path(),
        r#"[[{"text": "slow "}, {"delay_ms": 20000}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut child = smith(home.path(), work.path())
        .args(["eval", "--json", "--name", "intr", "--mock-script"])
        .arg(&script)
        .arg("go")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("message_delta") {
            break;
        }
    }
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("smith eval --session intr"), "{stderr}");
    let store = Store::open(home.path().join("data").join("sessions")).unwrap();
    let resumed = resume(&store.load("intr").unwrap()).unwrap();
    assert_eq!(
        resumed.history.len(),
        2,
        "the prompt and the aborted partial response"
    );
}

#[test]
fn kill_9_during_bash_leaves_an_unknown_effect_that_is_never_retried() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let script = write_script(
        work.path(),
        r#"[[{"tool_call": {"id": "slow", "name": "bash", "arguments": {"command": "echo run >> runs.txt; sleep 3"}}},
             {"stop": {"reason": "tool_use"}}],
            [{"text": "never reached"}, {"stop": {"reason": "end"}}]]"#,
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
    // The intent is durable before tool_execution_start is announced; wait
    // until the command has visibly started, then SIGKILL.
    let started = Instant::now();
    while !work.path().join("runs.txt").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "bash never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let store = Store::open(home.path().join("data").join("sessions")).unwrap();
    let session = store.load("crash").unwrap();
    assert_eq!(session.open_intents().len(), 1);
    let resumed = resume(&session).unwrap();
    assert_eq!(resumed.unknown_effects, ["fx-1"]);
    assert!(
        matches!(resumed.history.last(), Some(Message::Assistant { .. })),
        "the call dangles"
    );

    // Resuming reports the unknown effect, answers the dangling call with
    // an aborted result, and never runs the command again.
    let next = write_script(
        work.path(),
        r#"[[{"text": "ok"}, {"stop": {"reason": "end"}}]]"#,
    );
    std::thread::sleep(Duration::from_millis(3200));
    let out = smith(home.path(), work.path())
        .args(["eval", "--session", "crash", "--mock-script"])
        .arg(&next)
        .arg("continue")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("effect fx-1"), "{stderr}");
    assert!(stderr.contains("will not be retried"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("runs.txt")).unwrap(),
        "run\n"
    );
    let resumed = resume(
        &Store::open(home.path().join("data").join("sessions"))
            .unwrap()
            .load("crash")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(resumed.unknown_effects, ["fx-1"]);
    let aborted = resumed.history.iter().any(|m| {
        matches!(m, Message::ToolResult { call_id, content, .. } if call_id == "slow" && content.starts_with("Aborted"))
    });
    assert!(aborted, "{:#?}", resumed.history);
}

#[test]
fn a_prompt_given_as_a_dash_is_read_from_standard_input() {
    use std::io::Write as _;
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(
        &script,
        r#"[[{"text": "answered"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let record = home.path().join("requests.jsonl");
    let piped = |args: &[&str]| {
        let mut child = smith(home.path(), home.path())
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
            .write_all(b"explain this\nline two\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let stdout = piped(&[
        "eval",
        "--no-session",
        "--mock-script",
        &script.display().to_string(),
        "--mock-record",
        &record.display().to_string(),
        "-",
    ]);
    assert!(stdout.contains("answered"), "{stdout}");
    let request: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&record)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(request["messages"][0]["text"], "explain this\nline two");
    // `smith -` with no subcommand: the prompt runs as eval does (the
    // offline demo repeats it).
    let stdout = piped(&["--provider", "mock", "-"]);
    assert!(
        stdout.contains(r#"You said "explain this\nline two""#),
        "{stdout}"
    );
    // An empty standard input is refused: nothing is sent.
    let out = smith(home.path(), home.path())
        .args(["eval", "--no-session", "--provider", "mock", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[input.empty]"), "{stderr}");
}

#[test]
fn cwd_works_as_if_smith_were_started_there() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    std::fs::write(project.join(".smith/config.kdl"), "model \"m\"\n").unwrap();
    std::fs::write(project.join("marker.txt"), "here\n").unwrap();
    std::fs::write(
        home.path().join("script.json"),
        r#"[[{"tool_call": {"id": "c1", "name": "ls", "arguments": {"path": "."}}}, {"stop": {"reason": "tool_use"}}], [{"text": "listed"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    // Started in the home, working in the project: the script is found
    // where smith was started, the project's configuration is found (and,
    // untrusted, ignored with the warning), and the tools work there.
    let out = smith(home.path(), home.path())
        .args([
            "eval",
            "--no-session",
            "--cwd",
            "project",
            "--mock-script",
            "script.json",
            "--mock-record",
            "requests.jsonl",
            "list it",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[trust.untrusted-project]"), "{stderr}");
    let canonical = std::fs::canonicalize(&project).unwrap();
    assert!(
        stderr.contains(&format!("{}/.smith is ignored", canonical.display())),
        "{stderr}"
    );
    assert!(stderr.contains("marker.txt"), "{stderr}");
    assert!(home.path().join("requests.jsonl").exists());
    // A folder that does not exist is a diagnostic, nothing runs.
    let out = smith(home.path(), home.path())
        .args([
            "eval",
            "--no-session",
            "--provider",
            "mock",
            "--cwd",
            "nowhere",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--cwd nowhere cannot be used"), "{stderr}");
}
