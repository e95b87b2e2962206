//! Background jobs end to end through the built binary with the scripted
//! provider: `bash` with `background: true` returning at once, a command
//! that outruns its timeout moving to the background with its output
//! kept, `bash_output` reading on and `bash_kill` stopping a job, each
//! call recorded as an effect and replayed from the records; `jobs/list`
//! and `job_ended` over rpc; and no job process outliving smith when it
//! exits, is sent SIGTERM or is SIGKILLed.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Client, default_signals, dump, recorded_requests, run};
use serde_json::{Value, json};

fn script(dir: &Path, name: &str, turns: &Value) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, turns.to_string()).unwrap();
    path.display().to_string()
}

fn call(id: &str, tool: &str, arguments: Value) -> Value {
    json!([
        {"tool_call": {"id": id, "name": tool, "arguments": arguments}},
        {"stop": {"reason": "tool_use"}}
    ])
}

fn answer(text: &str) -> Value {
    json!([{"text": text}, {"stop": {"reason": "end"}}])
}

/// The content of the last tool result a recorded request carries.
fn last_result(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool_result")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

fn tool_ends(out: &str) -> Vec<Value> {
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_execution_end")
        .collect()
}

#[test]
fn jobs_start_are_read_and_killed_and_every_call_is_an_effect_that_replays() {
    let home = tempfile::tempdir().unwrap();
    let record = home.path().join("requests.jsonl");
    let s = script(
        home.path(),
        "jobs",
        &json!([
            call(
                "c1",
                "bash",
                json!({"command": "echo start-$((6*7)); sleep 0.6; echo end-$((6*7))", "background": true})
            ),
            call("c2", "bash_output", json!({"job": "job-1", "wait": 20})),
            call(
                "c3",
                "bash",
                json!({"command": "echo ready; sleep 100", "background": true})
            ),
            call("c4", "bash_kill", json!({"job": "job-2"})),
            call("c5", "bash_output", json!({"job": "job-9"})),
            answer("done"),
        ]),
    );
    let (out, _) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--name",
            "jobs",
            "--mock-script",
            &s,
            "--mock-record",
            &record.display().to_string(),
            "go",
        ],
        0,
    );
    let requests = recorded_requests(&record);
    assert_eq!(requests.len(), 6);
    // The model is offered the two job tools beside bash.
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"bash_output") && names.contains(&"bash_kill"),
        "{names:?}"
    );

    let started = last_result(&requests[1]);
    assert!(
        started.starts_with("Started job-1 in the background (process group "),
        "{started}"
    );
    assert!(
        started.contains(").\nstart-42\n[job-1 is running ("),
        "{started}"
    );
    let read = last_result(&requests[2]);
    assert!(
        read.starts_with("end-42\n[job-1 exited with code 0 after "),
        "{read}"
    );
    let killed = last_result(&requests[4]);
    assert!(
        killed.starts_with("[sent SIGTERM to process group "),
        "{killed}"
    );
    assert!(
        killed.contains("; job-2 was killed by signal 15 after "),
        "{killed}"
    );
    let unknown = last_result(&requests[5]);
    assert!(
        unknown.contains("there is no job `job-9` in this runtime"),
        "{unknown}"
    );
    assert!(unknown.contains("this runtime started 2 jobs"), "{unknown}");
    assert!(unknown.contains("jobs running now: none"), "{unknown}");

    // Each call is an effect: its intent names the tool, its completion
    // holds what the model saw.
    let entries = dump(home.path(), "jobs");
    let intents: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "effect_intent")
        .map(|e| &e["content"])
        .collect();
    let completion = |intent: &Value| -> Value {
        entries
            .iter()
            .filter(|e| e["kind"] == "effect_completion")
            .map(|e| &e["content"])
            .find(|c| c["effect_id"] == intent["effect_id"])
            .cloned()
            .unwrap_or_else(|| panic!("no completion of {intent}"))
    };
    let calls: Vec<&Value> = intents
        .iter()
        .copied()
        .filter(|i| i["tool"] != "bash_job_end")
        .collect();
    let tools: Vec<&str> = calls.iter().map(|i| i["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["bash", "bash_output", "bash", "bash_kill", "bash_output"]
    );
    let done: Vec<Value> = calls.iter().map(|i| completion(i)).collect();
    assert_eq!(done[0]["output"]["details"]["job"], "job-1");
    assert_eq!(done[0]["mutation"], "applied");
    assert_eq!(done[1]["output"]["content"], read.as_str());
    assert_eq!(done[1]["output"]["details"]["state"], "exited");
    assert_eq!(done[1]["mutation"], "not-applied");
    assert_eq!(done[3]["output"]["details"]["state"], "killed");
    assert_eq!(done[3]["mutation"], "applied");
    assert_eq!(done[4]["outcome"], "error");
    // Each job's end is an effect of its own, a child of the call that
    // started the job.
    let ends: Vec<&Value> = intents
        .iter()
        .copied()
        .filter(|i| i["tool"] == "bash_job_end")
        .collect();
    assert_eq!(ends.len(), 2, "{intents:?}");
    assert_eq!(ends[0]["parent"], calls[0]["effect_id"]);
    assert_eq!(ends[1]["parent"], calls[2]["effect_id"]);
    let first = completion(ends[0]);
    let text = first["output"]["content"].as_str().unwrap();
    assert!(
        text.starts_with("job-1 exited with code 0 after "),
        "{text}"
    );
    assert!(text.ends_with("; 16 bytes of output"), "{text}");
    assert_eq!(first["output"]["details"]["exit_code"], 0);
    let second = completion(ends[1]);
    let text = second["output"]["content"].as_str().unwrap();
    assert!(
        text.starts_with("job-2 was killed by signal 15 after "),
        "{text}"
    );
    assert_eq!(second["output"]["details"]["state"], "killed");

    // Replay reproduces every result from the records, running nothing.
    let live = tool_ends(&out);
    assert_eq!(live.len(), 5);
    let (replayed, _) = run(home.path(), &["replay", "jobs", "--instant", "--json"], 0);
    assert_eq!(tool_ends(&replayed), live);
}

#[test]
fn a_command_that_outruns_its_timeout_continues_as_a_job_with_its_output_kept() {
    let home = tempfile::tempdir().unwrap();
    let record = home.path().join("requests.jsonl");
    let s = script(
        home.path(),
        "timeout",
        &json!([
            call(
                "c1",
                "bash",
                json!({"command": "echo begun; sleep 1.5; echo later; exit 7", "timeout": 0.5})
            ),
            call("c2", "bash_output", json!({"job": "job-1", "wait": 20})),
            call("c3", "bash_output", json!({"job": "job-1", "since": 0})),
            answer("done"),
        ]),
    );
    run(
        home.path(),
        &[
            "eval",
            "--mock-script",
            &s,
            "--mock-record",
            &record.display().to_string(),
            "go",
        ],
        0,
    );
    let requests = recorded_requests(&record);
    let moved = last_result(&requests[1]);
    assert!(
        moved.starts_with(
            "begun\n[still running after the 0.5 s timeout: it continues in the background as job-1 (process group "
        ),
        "{moved}"
    );
    let is_error = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool_result")
        .map(|m| m["is_error"].as_bool().unwrap_or(false));
    assert_eq!(is_error, Some(false));
    let rest = last_result(&requests[2]);
    assert!(
        rest.starts_with("later\n[job-1 exited with code 7 after "),
        "{rest}"
    );
    let all = last_result(&requests[3]);
    assert!(
        all.starts_with("begun\nlater\n[job-1 exited with code 7"),
        "{all}"
    );
}

#[test]
fn rpc_lists_jobs_and_tells_when_one_ends() {
    let home = tempfile::tempdir().unwrap();
    let s = script(
        home.path(),
        "rpc",
        &json!([
            call(
                "c1",
                "bash",
                json!({"command": "echo hi; sleep 1; exit 5", "background": true})
            ),
            answer("started"),
        ]),
    );
    let mut c = Client::start(home.path(), &["--mock-script", &s]);
    c.send(1, "initialize", json!({}));
    let init = c.until(|r| r["id"] == 1);
    let methods = &init["result"]["capabilities"]["methods"];
    assert!(
        methods.as_array().unwrap().contains(&json!("jobs/list")),
        "{init}"
    );
    let notes = &init["result"]["capabilities"]["notifications"];
    assert!(
        notes.as_array().unwrap().contains(&json!("job_ended")),
        "{init}"
    );
    c.send(2, "jobs/list", json!({}));
    let empty = c.until(|r| r["id"] == 2);
    assert_eq!(empty["result"], json!({"jobs": []}));

    c.send(3, "prompt", json!({"text": "go"}));
    c.until(|r| r["method"] == "settled");
    c.send(4, "jobs/list", json!({}));
    let listed = c.until(|r| r["id"] == 4);
    let jobs = listed["result"]["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{listed}");
    assert_eq!(jobs[0]["id"], "job-1");
    assert_eq!(jobs[0]["command"], "echo hi; sleep 1; exit 5");
    assert_eq!(jobs[0]["state"], "running");
    assert_eq!(jobs[0]["output_bytes"], 3);

    let ended = c.until(|r| r["method"] == "job_ended");
    assert_eq!(ended["params"]["id"], "job-1");
    assert_eq!(ended["params"]["state"], "exited");
    assert_eq!(ended["params"]["exit_code"], 5);
    c.send(5, "jobs/list", json!({}));
    let listed = c.until(|r| r["id"] == 5);
    assert_eq!(listed["result"]["jobs"][0]["state"], "exited");
    assert_eq!(listed["result"]["jobs"][0]["exit_code"], 5);
    c.send(6, "shutdown", json!({}));
    c.until(|r| r["id"] == 6);
    c.finish();
}

// ------------------------------------------------------------ lifetime

/// The fields after a process's parenthesised name in `/proc/PID/stat`:
/// state, ppid, pgrp, ...
fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Live (not zombie) processes in group `pgid`, and live watchdogs
/// (`/bin/sh -c ... PGID`) of it.
fn survivors(pgid: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(fields) = stat_fields(&pid) else {
            continue;
        };
        if matches!(fields[0].as_str(), "Z" | "X") {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let watchdog = args.len() >= 4
            && args[0] == b"/bin/sh"
            && args[3] == pgid.as_bytes()
            && String::from_utf8_lossy(args[2]).contains("kill -TERM");
        if fields[2] == pgid || watchdog {
            out.push(format!("{pid} {}", String::from_utf8_lossy(&cmdline)));
        }
    }
    out
}

/// Waits up to `secs` for `pgid`'s processes and watchdog to be gone.
fn all_gone(pgid: &str, secs: u64) -> Result<(), Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = survivors(pgid);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A home whose script starts a job of two `sleep 1000`s that record
/// their pids, then runs `then` (answers, or waits on the job).
struct Lifetime {
    home: tempfile::TempDir,
    pids: PathBuf,
    record: PathBuf,
    script: String,
}

impl Lifetime {
    fn new(then: &[Value]) -> Lifetime {
        let home = tempfile::tempdir().unwrap();
        // The project is a folder of its own: the sandbox keeps smith's
        // home out of the commands' reach.
        std::fs::create_dir(home.path().join("work")).unwrap();
        let pids = home.path().join("work").join("pids");
        let record = home.path().join("requests.jsonl");
        let command = format!(
            "echo $$ > {p}; sleep 1000 & echo $! >> {p}; sleep 1000",
            p = pids.display()
        );
        let mut turns = vec![call(
            "c1",
            "bash",
            json!({"command": command, "background": true}),
        )];
        turns.extend_from_slice(then);
        let script = script(home.path(), "life", &Value::Array(turns));
        Lifetime {
            home,
            pids,
            record,
            script,
        }
    }

    fn spawn(&self) -> Smith {
        let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
        default_signals(&mut command);
        let child = command
            .env("SMITH_HOME", self.home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .current_dir(self.home.path().join("work"))
            .args([
                "eval",
                "--mock-script",
                &self.script,
                "--mock-record",
                &self.record.display().to_string(),
                "go",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Smith(child)
    }

    /// The job's group and its two processes' pids, once both are written.
    fn job(&self) -> (String, Vec<String>) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&self.pids).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            if lines.len() == 2 {
                return (lines[0].clone(), lines);
            }
            assert!(Instant::now() < deadline, "the job never wrote its pids");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the scripted provider has been asked `n` times.
    fn wait_requests(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while recorded_requests(&self.record).len() < n {
            assert!(Instant::now() < deadline, "smith never made request {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A smith this test started: killed if the test fails while it runs.
struct Smith(Child);

impl Drop for Smith {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn wait_exit(child: &mut Smith) -> std::process::ExitStatus {
    let child = &mut child.0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("smith did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts the job's processes live now, so their absence later means
/// something.
fn assert_running(pgid: &str, pids: &[String]) {
    for pid in pids {
        let state = stat_fields(pid).map(|f| f[0].clone());
        assert!(
            matches!(state.as_deref(), Some("S" | "R")),
            "job process {pid} is not running: {state:?}"
        );
    }
    assert!(
        survivors(pgid).len() >= 3,
        "the job's two processes and its watchdog: {:?}",
        survivors(pgid)
    );
}

#[test]
fn no_job_outlives_smith_when_it_exits() {
    let life = Lifetime::new(&[answer("done")]);
    let mut child = life.spawn();
    let (pgid, pids) = life.job();
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(0));
    all_gone(&pgid, 10).unwrap_or_else(|left| panic!("outlived smith: {left:?} (pids {pids:?})"));
}

#[test]
fn no_job_outlives_smith_after_sigterm_or_sigint() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // The second turn waits on the job, so smith is busy when
        // signalled.
        let life = Lifetime::new(&[
            call("c2", "bash_output", json!({"job": "job-1", "wait": 600})),
            answer("done"),
        ]);
        let mut child = life.spawn();
        let (pgid, pids) = life.job();
        life.wait_requests(2);
        std::thread::sleep(Duration::from_millis(300));
        assert_running(&pgid, &pids);
        // SAFETY: signalling the smith this test started, by its pid.
        unsafe { libc::kill(child.0.id() as libc::pid_t, signal) };
        let status = wait_exit(&mut child);
        assert_eq!(status.code(), Some(128 + signal));
        all_gone(&pgid, 10)
            .unwrap_or_else(|left| panic!("outlived smith after signal {signal}: {left:?}"));
    }
}

#[test]
fn no_job_outlives_smith_after_sigkill() {
    let life = Lifetime::new(&[
        call("c2", "bash_output", json!({"job": "job-1", "wait": 600})),
        answer("done"),
    ]);
    let mut child = life.spawn();
    let (pgid, pids) = life.job();
    life.wait_requests(2);
    std::thread::sleep(Duration::from_millis(300));
    assert_running(&pgid, &pids);
    child.0.kill().unwrap();
    let status = wait_exit(&mut child);
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // The watchdog sends SIGTERM at once and SIGKILL a second later.
    all_gone(&pgid, 10).unwrap_or_else(|left| panic!("outlived smith: {left:?}"));
}

#[test]
fn the_options_kill_at_the_timeout_and_bound_the_jobs() {
    let home = tempfile::tempdir().unwrap();
    let record = home.path().join("requests.jsonl");
    let s = script(
        home.path(),
        "options",
        &json!([
            call(
                "c1",
                "bash",
                json!({"command": "sleep 100", "background": true})
            ),
            call(
                "c2",
                "bash",
                json!({"command": "sleep 100", "background": true})
            ),
            call(
                "c3",
                "bash",
                json!({"command": "echo begun; sleep 30", "timeout": 0.5})
            ),
            answer("done"),
        ]),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("SMITH_BASH_ON_TIMEOUT", "kill")
        .env("SMITH_BASH_MAX_JOBS", "1")
        .current_dir(home.path())
        .args([
            "eval",
            "--mock-script",
            &s,
            "--mock-record",
            &record.display().to_string(),
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = recorded_requests(&record);
    let refused = last_result(&requests[2]);
    assert!(
        refused.contains("bash: no new background job: 1 jobs are already running"),
        "{refused}"
    );
    assert!(
        refused.contains("running: job-1 (`sleep 100`, running "),
        "{refused}"
    );
    let killed = last_result(&requests[3]);
    assert!(
        killed.starts_with("begun\n[timed out after 0.5 s; the process group was terminated]"),
        "{killed}"
    );
}

#[test]
fn smith_mcp_keeps_no_jobs() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["mcp", "--no-plugins", "--approval", "workspace", "--cwd"])
        .arg(&work)
        .env("SMITH_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 100","background":true}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo begun; sleep 30","timeout":0.5}}}"#,
    ];
    // Input stays open until both answers are in: its end cancels calls
    // in flight.
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut replies: Vec<Value> = Vec::new();
    while !replies.iter().any(|r| r["id"] == 3) {
        let line = lines.next().expect("smith mcp ended early").unwrap();
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            replies.push(v);
        }
    }
    drop(stdin);
    child.wait().unwrap();
    let reply = |id: u64| -> Value {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no reply {id}: {replies:?}"))
    };
    let refused = reply(2)["result"].clone();
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("bash: background jobs are off here"),
        "{text}"
    );
    let killed = reply(3)["result"].clone();
    let text = killed["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("begun\n[timed out after 0.5 s; the process group was terminated]"),
        "{text}"
    );
}
