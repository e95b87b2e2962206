//! smith/mcp, the MCP client, end to end through the built binary with the
//! scripted provider, against a server written with the official MCP
//! Python SDK (tests/fixtures/mcp_server.py, `mcp==2.3.0`) and the
//! reference server `@modelcontextprotocol/server-everything` (npm). Both
//! are installed by scripts/setup; when one is missing the test fails and
//! says to run it.
//!
//! What is checked: the server's tools reach the model as
//! `mcp__SERVER__TOOL` and a call's result reaches the next request
//! wrapped as untrusted; the call is journaled with its host effects as
//! children; configured env values reach the server and never smith's
//! output, log or session; the server's stderr goes to the log, not the
//! terminal; two calls of one batch each get their own answer; a crashed
//! server is started again once, then reported; a server that cannot start
//! is tried twice and named in a notice; an untrusted project's .mcp.json
//! is named and not started, a trusted one's is; `smith mcp list` shows
//! servers, states and tools; no server process is left once smith exits,
//! also after SIGTERM.
//!
//! Over Streamable HTTP (the reference server's `streamableHttp` mode and
//! the fixture's `http` mode, which records every request it receives):
//! listing and calls through the gate with their POSTs journaled as the
//! call's children; JSON and event-stream answers; the session id and
//! `MCP-Protocol-Version` on every message after `initialize`; a forgotten
//! session (404) initialized again once; configured headers received by the
//! server and never shown by smith; `notifications/cancelled` for an
//! aborted call; the DELETE at exit; a trusted project's `.mcp.json`
//! server; and a URL where nothing listens, reported without its query.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

const INSTALL: &str = "run scripts/setup (it installs python3's `mcp==2.3.0` and @modelcontextprotocol/server-everything)";

const SECRET: &str = "fixture-token-Zq81vX";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py")
}

/// Fails (never skips) when the Python SDK is missing.
fn require_python_sdk() {
    match Command::new("python3")
        .args(["-c", "import mcp.server.mcpserver"])
        .output()
    {
        Err(e) => panic!(
            "python3 could not be started ({e}); install Python 3.10 or newer, then {INSTALL}"
        ),
        Ok(out) if !out.status.success() => panic!(
            "the MCP Python SDK is not importable ({}); {INSTALL}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Ok(_) => {}
    }
}

/// A home whose configuration runs the fixture as server `fixture` (with
/// `extra` lines in its block), and the fixture's state folder.
fn home_with_fixture(extra: &str) -> (tempfile::TempDir, PathBuf) {
    require_python_sdk();
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("fixture-state");
    std::fs::write(
        home.path().join("config.kdl"),
        format!(
            "mcp {{\n    server \"fixture\" {{\n        command \"python3\"\n        args \"{}\" \"{}\"\n        env \"FIXTURE_TOKEN\" \"{SECRET}\"\n{extra}    }}\n}}\n",
            fixture().display(),
            state.display()
        ),
    )
    .unwrap();
    (home, state)
}

fn smith_in(home: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn script(home: &Path, json: &str) -> String {
    let path = home.join("script.json");
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

/// `smith eval --json` of `script` in `home`, recording requests and
/// logging at `info`; (stdout, stderr, log).
fn eval(home: &Path, json: &str) -> (String, String, String) {
    let script = script(home, json);
    let record = home.join("requests.jsonl");
    let log = home.join("smith.log");
    let out = smith_in(
        home,
        home,
        &[
            "eval",
            "--json",
            "--yes",
            "--name",
            "mcp",
            "--mock-script",
            &script,
            "--mock-record",
            &record.display().to_string(),
            "use the server",
        ],
        &[
            ("SMITH_LOG_FILE", &log.display().to_string()),
            ("SMITH_LOG_LEVEL", "info"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "smith eval:\n{stdout}\n{stderr}"
    );
    (
        stdout,
        stderr,
        std::fs::read_to_string(&log).unwrap_or_default(),
    )
}

fn tool_ends(out: &str) -> Vec<Value> {
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_execution_end")
        .collect()
}

/// The pids of the fixture's starts.
fn starts(state: &Path) -> Vec<i32> {
    std::fs::read_to_string(state.join("starts"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for our purpose: it runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Every process of the groups `pgids` (the fixture's pid leads its group).
fn group_members(pgids: &[i32]) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let after = stat.rsplit(')').next().unwrap_or("");
        let fields: Vec<&str> = after.split_whitespace().collect();
        // state, ppid, pgrp
        if fields.len() > 2
            && fields[0] != "Z"
            && let Ok(pgrp) = fields[2].parse::<i32>()
            && pgids.contains(&pgrp)
        {
            members.push(pid);
        }
    }
    members
}

fn assert_gone(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && !group_members(pids).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        group_members(pids).is_empty() && pids.iter().all(|p| !alive(*p)),
        "server processes are left running after smith exited: {:?}",
        group_members(pids)
    );
}

#[test]
fn a_python_sdk_server_over_stdio_serves_tools_through_the_gate_and_the_journal() {
    let (home, state) = home_with_fixture("");
    let (out, err, log) = eval(
        home.path(),
        r#"[
  [{"tool_call": {"id": "c1", "name": "mcp__fixture__add", "arguments": {"a": 2, "b": 3}}},
   {"tool_call": {"id": "c2", "name": "mcp__fixture__write_note", "arguments": {"name": "note.txt", "text": "hello"}}},
   {"tool_call": {"id": "c3", "name": "mcp__fixture__token_set", "arguments": {}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 3, "{out}\n{err}");
    for end in &ends {
        assert_eq!(end["status"], "ok", "{end}\n{err}");
    }
    let add = ends[0]["content"].as_str().unwrap();
    assert!(
        add.starts_with("<untrusted source=\"mcp:fixture/add\">") && add.contains("sum=5"),
        "{add}"
    );
    assert!(ends[2]["content"].as_str().unwrap().contains("token=set"));
    // The server really ran the mutating tool.
    assert_eq!(
        std::fs::read_to_string(state.join("note.txt")).unwrap(),
        "hello"
    );
    // The results reached the model in the next request.
    let requests = std::fs::read_to_string(home.path().join("requests.jsonl")).unwrap();
    let second = requests.lines().nth(1).expect("a second request");
    assert!(second.contains("sum=5"), "{second}");
    assert!(second.contains("wrote 5 bytes to note.txt"), "{second}");
    // The first request offered the tools with the server's schemas.
    let first: Value = serde_json::from_str(requests.lines().next().unwrap()).unwrap();
    let first = if first.get("request").is_some() {
        &first["request"]
    } else {
        &first
    };
    let add_tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fixture__add")
        .unwrap_or_else(|| panic!("no mcp__fixture__add in {}", first["tools"]));
    assert_eq!(
        add_tool["parameters"]["required"],
        serde_json::json!(["a", "b"])
    );
    // Journaled: each call is an effect; its lines to the server are its
    // children.
    let entries = common::dump(home.path(), "mcp");
    let intents: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "effect_intent")
        .map(|e| &e["content"])
        .collect();
    let call = intents
        .iter()
        .find(|i| i["parent"] == "c2")
        .unwrap_or_else(|| panic!("no effect of the write_note call: {intents:?}"));
    assert_eq!(call["tool"], "mcp__fixture__write_note");
    assert!(
        intents
            .iter()
            .any(|i| i["parent"] == call["effect_id"]
                && i["tool"] == "plugin.server-process.write-line"),
        "{intents:?}"
    );
    assert!(
        intents
            .iter()
            .any(|i| i["tool"] == "plugin.server-process.spawn"
                && i["input"]["env"] == serde_json::json!(["FIXTURE_TOKEN"])),
        "{intents:?}"
    );
    // The env value never shows; the server's stderr went to the log.
    let dumped = serde_json::to_string(&entries).unwrap();
    for (what, text) in [
        ("stdout", &out),
        ("stderr", &err),
        ("log", &log),
        ("session", &dumped),
    ] {
        assert!(!text.contains(SECRET), "the env value leaked into {what}");
    }
    assert!(!err.contains("fixture server starting"), "{err}");
    assert!(log.contains("fixture server starting"), "{log}");
    assert_gone(&starts(&state));
}

#[test]
fn two_calls_of_one_batch_each_get_their_own_answer() {
    let (home, state) = home_with_fixture("");
    let (out, err, log) = eval(
        home.path(),
        r#"[
  [{"tool_call": {"id": "s1", "name": "mcp__fixture__slow", "arguments": {"label": "first", "ms": 300}}},
   {"tool_call": {"id": "s2", "name": "mcp__fixture__slow", "arguments": {"label": "second", "ms": 100}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 2, "{out}\n{err}");
    let by_id = |id: &str| {
        ends.iter()
            .find(|e| e["id"] == id || e["tool_call_id"] == id || e["call_id"] == id)
            .unwrap_or_else(|| panic!("no end of {id}: {ends:?}"))["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(by_id("s1").contains("slow first done"), "{ends:?}");
    assert!(by_id("s2").contains("slow second done"), "{ends:?}");
    // Progress notifications are mapped to the log.
    assert!(
        log.contains("progress") && log.contains("second step"),
        "{log}"
    );
    assert_gone(&starts(&state));
}

#[test]
fn a_crashed_server_is_started_again_once_then_reported() {
    let (home, state) = home_with_fixture("");
    let (out, err, _) = eval(
        home.path(),
        r#"[
  [{"tool_call": {"id": "k1", "name": "mcp__fixture__crash_once", "arguments": {}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "k2", "name": "mcp__fixture__crash_once", "arguments": {}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "k3", "name": "mcp__fixture__crash_always", "arguments": {}}},
   {"stop": {"reason": "tool_use"}}],
  [{"tool_call": {"id": "k4", "name": "mcp__fixture__add", "arguments": {"a": 1, "b": 1}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 4, "{out}\n{err}");
    let text = |i: usize| ends[i]["content"].as_str().unwrap_or_default().to_owned();
    assert_eq!(ends[0]["status"], "error", "{}", ends[0]);
    assert!(
        text(0).contains("stopped during the call") && text(0).contains("exited with status 3"),
        "{}",
        text(0)
    );
    assert!(
        text(0).contains("crashes on purpose"),
        "its stderr is quoted: {}",
        text(0)
    );
    assert_eq!(ends[1]["status"], "ok", "restarted: {}", ends[1]);
    assert!(text(1).contains("survived"));
    assert_eq!(ends[2]["status"], "error");
    // The second death is reported: no more restarts.
    assert_eq!(ends[3]["status"], "error");
    let report = text(3);
    assert!(
        report.contains("MCP server fixture")
            && report.contains("python3")
            && report.contains("config.kdl")
            && report.contains("started again once"),
        "{report}"
    );
    assert_eq!(starts(&state).len(), 2, "started once, restarted once");
    assert_gone(&starts(&state));
}

#[test]
fn a_server_that_cannot_start_is_tried_twice_and_named() {
    let (home, state) = home_with_fixture("        env \"FIXTURE_FAIL_START\" \"1\"\n");
    let (out, err, _) = eval(
        home.path(),
        r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    );
    assert_eq!(starts(&state).len(), 2, "{out}\n{err}");
    let all = format!("{out}\n{err}");
    assert!(
        all.contains("MCP server fixture")
            && all.contains("is not available")
            && all.contains("refuses to start"),
        "{all}"
    );
    let requests = std::fs::read_to_string(home.path().join("requests.jsonl")).unwrap();
    assert!(
        !requests.contains("mcp__fixture__"),
        "no tool of a failed server is offered"
    );
}

#[test]
fn a_projects_mcp_json_starts_only_once_the_project_is_trusted() {
    require_python_sdk();
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    let state = home.path().join("fixture-state");
    std::fs::write(
        project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"proj": {
            "type": "stdio",
            "command": "python3",
            "args": [fixture().display().to_string(), state.display().to_string()],
        }}})
        .to_string(),
    )
    .unwrap();
    let out = smith_in(home.path(), &project, &["mcp", "list"], &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(".mcp.json") && text.contains("not trusted") && text.contains("smith trust"),
        "{text}"
    );
    assert!(
        starts(&state).is_empty(),
        "an untrusted project's server was started"
    );
    common::run(home.path(), &["trust", &project.display().to_string()], 0);
    let out = smith_in(home.path(), &project, &["mcp", "list", "--json"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &listing["servers"][0];
    assert_eq!(server["name"], "proj", "{listing}");
    assert_eq!(server["state"], "ready", "{listing}");
    assert_eq!(server["protocol"], "2025-11-25");
    assert!(server["origin"].as_str().unwrap().ends_with(".mcp.json"));
    let tools: Vec<&str> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"mcp__proj__add") && tools.contains(&"mcp__proj__write_note"),
        "{tools:?}"
    );
    let add = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__proj__add")
        .unwrap();
    assert_eq!(add["read_only"], true);
    assert_gone(&starts(&state));
}

#[test]
fn smith_mcp_list_shows_a_configured_server_its_state_and_tools() {
    let (home, state) = home_with_fixture("");
    let out = smith_in(home.path(), home.path(), &["mcp", "list"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("fixture  ready  python3 "), "{text}");
    assert!(first.contains("config.kdl:2"), "{text}");
    assert!(text.contains("  mcp__fixture__add (read-only)\n"), "{text}");
    assert!(text.contains("  mcp__fixture__write_note\n"), "{text}");
    assert!(!text.contains(SECRET));
    assert_gone(&starts(&state));
}

#[test]
fn no_server_process_is_left_after_smith_is_terminated() {
    let (home, state) = home_with_fixture("");
    let script = script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "w1", "name": "mcp__fixture__slow", "arguments": {"label": "long", "ms": 30000}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .current_dir(home.path())
        .args(["eval", "--yes", "--mock-script", &script, "wait"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while starts(&state).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let pids = starts(&state);
    assert_eq!(pids.len(), 1, "the server did not start");
    // Let the long call begin.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(alive(pids[0]));
    let smith = i32::try_from(child.id()).unwrap();
    // SAFETY: sending SIGTERM to the child this test started.
    unsafe {
        libc::kill(smith, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_gone(&pids);
}

/// The reference server's launcher, installed by scripts/setup.
fn everything() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME is set");
    let bin = cache.join("smith-test/server-everything/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "the reference MCP server is not installed at {}; {INSTALL}",
        bin.display()
    );
    bin
}

#[test]
fn the_reference_server_everything_lists_and_echoes() {
    let bin = everything();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.kdl"),
        format!(
            "mcp {{\n    server \"everything\" {{\n        command \"{}\"\n        args \"stdio\"\n    }}\n}}\n",
            bin.display()
        ),
    )
    .unwrap();
    let out = smith_in(home.path(), home.path(), &["mcp", "list", "--json"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &listing["servers"][0];
    assert_eq!(server["state"], "ready", "{listing}");
    assert_eq!(
        server["server_info"], "mcp-servers/everything 2.0.0",
        "{listing}"
    );
    let pid = i32::try_from(server["pid"].as_u64().unwrap()).unwrap();
    let echo = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("no echo tool: {listing}"));
    assert_eq!(echo["read_only"], true);
    assert_gone(&[pid]);
    let (out, err, _) = eval(
        home.path(),
        r#"[
  [{"tool_call": {"id": "e1", "name": "mcp__everything__echo", "arguments": {"message": "ping from smith"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 1, "{out}\n{err}");
    assert_eq!(ends[0]["status"], "ok", "{}", ends[0]);
    let text = ends[0]["content"].as_str().unwrap();
    assert!(
        text.starts_with("<untrusted source=\"mcp:everything/echo\">")
            && text.contains("Echo: ping from smith"),
        "{text}"
    );
    let requests = std::fs::read_to_string(home.path().join("requests.jsonl")).unwrap();
    assert!(
        requests
            .lines()
            .nth(1)
            .unwrap()
            .contains("Echo: ping from smith")
    );
}

#[test]
fn resources_and_prompts_are_reached_through_tools_of_their_own() {
    let (home, state) = home_with_fixture("");
    let (out, err, _) = eval(
        home.path(),
        r#"[
  [{"tool_call": {"id": "r1", "name": "mcp__fixture__list_resources", "arguments": {}}},
   {"tool_call": {"id": "r2", "name": "mcp__fixture__read_resource", "arguments": {"uri": "fixture://greeting"}}},
   {"tool_call": {"id": "p1", "name": "mcp__fixture__get_prompt", "arguments": {"name": "review", "arguments": {"code": "x = 1"}}}},
   {"tool_call": {"id": "r3", "name": "mcp__fixture__read_resource", "arguments": {"uri": "fixture://missing"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 4, "{out}\n{err}");
    let text = |i: usize| ends[i]["content"].as_str().unwrap_or_default().to_owned();
    assert!(text(0).contains("fixture://greeting"), "{}", text(0));
    assert!(
        text(1).starts_with("<untrusted source=\"mcp:fixture/read_resource\">")
            && text(1).contains("hello from the fixture resource"),
        "{}",
        text(1)
    );
    assert!(
        text(2).contains("[user] Please review: x = 1"),
        "{}",
        text(2)
    );
    assert_eq!(ends[3]["status"], "error", "{}", ends[3]);
    assert!(
        text(3).contains("could not answer read_resource"),
        "{}",
        text(3)
    );
    assert_gone(&starts(&state));
}

#[test]
fn smith_doctor_reports_whether_each_server_answers() {
    let (home, state) = home_with_fixture("");
    let config = std::fs::read_to_string(home.path().join("config.kdl")).unwrap();
    let broken = config
        .replace("server \"fixture\"", "server \"broken\"")
        .replace(
            "env \"FIXTURE_TOKEN\"",
            "env \"FIXTURE_FAIL_START\" \"1\"\n        env \"FIXTURE_TOKEN\"",
        );
    // Both servers in one `mcp` block.
    let both = format!(
        "{}{}",
        config.trim_end().trim_end_matches('}'),
        broken.trim_start_matches("mcp {")
    );
    std::fs::write(home.path().join("config.kdl"), both).unwrap();
    let out = smith_in(home.path(), home.path(), &["doctor", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let text = doc.to_string();
    let findings: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .filter(|f| f["check"] == "plugins.mcp-server")
        .collect();
    assert_eq!(findings.len(), 2, "{text}");
    let fixture = findings
        .iter()
        .find(|f| f["details"]["server"] == "fixture")
        .unwrap();
    assert_eq!(fixture["severity"], "ok", "{fixture}");
    assert!(
        fixture["what"].as_str().unwrap().contains("ready"),
        "{fixture}"
    );
    let broken = findings
        .iter()
        .find(|f| f["details"]["server"] == "broken")
        .unwrap();
    assert_eq!(broken["severity"], "warning", "{broken}");
    assert!(
        broken["why"].as_str().unwrap().contains("refuses to start"),
        "{broken}"
    );
    assert!(!text.contains(SECRET));
    assert_gone(&starts(&state));
}

// Streamable HTTP.

/// A port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process the test started; killed when dropped.
struct Served {
    child: std::process::Child,
    what: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` and waits until it accepts connections on `port`.
fn serve(mut command: Command, port: u16, what: &str) -> Served {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut served = Served {
        child: command.spawn().unwrap_or_else(|e| panic!("{what}: {e}")),
        what: what.to_owned(),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return served;
        }
        if let Ok(Some(status)) = served.child.try_wait() {
            panic!(
                "{} ended before it listened on port {port}: {status}",
                served.what
            );
        }
        assert!(
            Instant::now() < deadline,
            "{} did not listen on port {port} within 60 s",
            served.what
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The reference server in its Streamable HTTP mode on `port` (endpoint
/// /mcp).
fn everything_http(port: u16) -> Served {
    let mut command = Command::new("node");
    command
        .arg(everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    serve(command, port, "server-everything (streamableHttp)")
}

/// The Python SDK fixture over Streamable HTTP on `port`, answering with
/// JSON bodies (`json`) or event streams (`sse`), recording what it
/// receives into `state`.
fn fixture_http(state: &Path, port: u16, answers: &str) -> Served {
    require_python_sdk();
    let mut command = Command::new("python3");
    command
        .arg(fixture())
        .arg(state)
        .args(["http", &port.to_string(), answers]);
    serve(
        command,
        port,
        &format!("the Python fixture over HTTP ({answers})"),
    )
}

/// The HTTP requests a fixture received.
fn received(state: &Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_reference_server_everything_over_streamable_http_lists_echoes_and_reports_progress() {
    let port = free_port();
    let _server = everything_http(port);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.kdl"),
        format!(
            "mcp {{\n    server \"everything\" {{\n        url \"http://127.0.0.1:{port}/mcp\"\n    }}\n}}\n"
        ),
    )
    .unwrap();
    let out = smith_in(home.path(), home.path(), &["mcp", "list", "--json"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &listing["servers"][0];
    assert_eq!(server["state"], "ready", "{listing}");
    assert_eq!(server["transport"], "http", "{listing}");
    assert_eq!(
        server["target"]["url"],
        format!("http://127.0.0.1:{port}/mcp")
    );
    assert_eq!(
        server["server_info"], "mcp-servers/everything 2.0.0",
        "{listing}"
    );
    assert!(server["protocol"].as_str().unwrap().starts_with("2025-"));
    let tools: Vec<&str> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__trigger-long-running-operation",
    ] {
        assert!(tools.contains(&tool), "no {tool} in {tools:?}");
    }
    let (out, err, log) = eval(
        home.path(),
        r#"[
  [{"tool_call": {"id": "e1", "name": "mcp__everything__echo", "arguments": {"message": "ping over http"}}},
   {"tool_call": {"id": "e2", "name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 40}}},
   {"tool_call": {"id": "e3", "name": "mcp__everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let ends = tool_ends(&out);
    assert_eq!(ends.len(), 3, "{out}\n{err}");
    for end in &ends {
        assert_eq!(end["status"], "ok", "{end}\n{err}");
    }
    let text = |i: usize| ends[i]["content"].as_str().unwrap().to_owned();
    assert!(
        text(0).starts_with("<untrusted source=\"mcp:everything/echo\">")
            && text(0).contains("Echo: ping over http"),
        "{}",
        text(0)
    );
    assert!(
        text(1).contains("The sum of 2 and 40 is 42."),
        "{}",
        text(1)
    );
    assert!(
        text(2).contains("Long running operation completed"),
        "{}",
        text(2)
    );
    // The progress notifications of the event stream reached the log.
    assert!(log.contains("MCP server everything progress 3/3"), "{log}");
    let requests = std::fs::read_to_string(home.path().join("requests.jsonl")).unwrap();
    let second = requests.lines().nth(1).unwrap();
    assert!(second.contains("Echo: ping over http"), "{second}");
    assert!(second.contains("The sum of 2 and 40 is 42."), "{second}");
    // Journaled: each call's POSTs are children of its effect, with the
    // session's header named, never its value.
    let entries = common::dump(home.path(), "mcp");
    let intents: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "effect_intent")
        .map(|e| &e["content"])
        .collect();
    let call = intents
        .iter()
        .find(|i| i["parent"] == "e2")
        .unwrap_or_else(|| panic!("no effect of the get-sum call: {intents:?}"));
    assert_eq!(call["tool"], "mcp__everything__get-sum");
    let post = intents
        .iter()
        .find(|i| i["parent"] == call["effect_id"] && i["tool"] == "plugin.http-request")
        .unwrap_or_else(|| panic!("no http-request under the call: {intents:?}"));
    assert_eq!(post["input"]["method"], "POST");
    assert_eq!(post["input"]["url"], format!("http://127.0.0.1:{port}/mcp"));
    let names = post["input"]["headers"].to_string();
    assert!(
        names.contains("Mcp-Session-Id") && names.contains("MCP-Protocol-Version"),
        "{names}"
    );
}

#[test]
fn a_python_sdk_server_over_streamable_http_answers_in_json_and_event_streams_and_keeps_its_session()
 {
    let home = tempfile::tempdir().unwrap();
    let (json_port, sse_port) = (free_port(), free_port());
    let (json_state, sse_state) = (home.path().join("json"), home.path().join("sse"));
    let _json = fixture_http(&json_state, json_port, "json");
    let _sse = fixture_http(&sse_state, sse_port, "sse");
    const BEARER: &str = "Bearer http-fixture-secret-7Qk2";
    const KEY: &str = "env-expanded-key-Xw93";
    std::fs::write(
        home.path().join("config.kdl"),
        format!(
            "mcp {{\n    server \"js\" {{\n        url \"http://127.0.0.1:{json_port}/mcp\"\n        header \"Authorization\" \"{BEARER}\"\n    }}\n    server \"ev\" {{\n        url \"http://127.0.0.1:{sse_port}/mcp\"\n        header \"X-Api-Key\" \"${{FIXTURE_KEY}}\"\n    }}\n}}\n"
        ),
    )
    .unwrap();
    let script = script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "j1", "name": "mcp__js__add", "arguments": {"a": 20, "b": 22}}},
   {"tool_call": {"id": "v1", "name": "mcp__ev__slow", "arguments": {"label": "streamed", "ms": 200}}},
   {"tool_call": {"id": "j2", "name": "mcp__js__expire_session", "arguments": {}}},
   {"tool_call": {"id": "j3", "name": "mcp__js__write_note", "arguments": {"name": "note.txt", "text": "over http"}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let log = home.path().join("smith.log");
    let record = home.path().join("requests.jsonl");
    let out = smith_in(
        home.path(),
        home.path(),
        &[
            "eval",
            "--json",
            "--yes",
            "--name",
            "mcp",
            "--mock-script",
            &script,
            "--mock-record",
            &record.display().to_string(),
            "use the servers",
        ],
        &[
            ("SMITH_LOG_FILE", &log.display().to_string()),
            ("SMITH_LOG_LEVEL", "debug"),
            ("FIXTURE_KEY", KEY),
        ],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let ends = tool_ends(&stdout);
    assert_eq!(ends.len(), 4, "{stdout}\n{stderr}");
    for end in &ends {
        assert_eq!(end["status"], "ok", "{end}\n{stderr}");
    }
    let text = |i: usize| ends[i]["content"].as_str().unwrap().to_owned();
    assert!(
        text(0).starts_with("<untrusted source=\"mcp:js/add\">") && text(0).contains("sum=42"),
        "{}",
        text(0)
    );
    assert!(text(1).contains("slow streamed done"), "{}", text(1));
    assert!(text(3).contains("wrote 9 bytes to note.txt"), "{}", text(3));
    // The server ran the mutating call, in the session made again after
    // the first one expired.
    assert_eq!(
        std::fs::read_to_string(json_state.join("note.txt")).unwrap(),
        "over http"
    );
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        log_text.contains("progress") && log_text.contains("streamed step"),
        "{log_text}"
    );
    assert!(
        log_text.contains("no longer knows smith's session (HTTP 404); initializing again"),
        "{log_text}"
    );

    // What the JSON-answering server received: the handshake without a
    // session id, then every message with it and the agreed revision, the
    // configured header each time; after the 404 a second handshake and a
    // new session; the session ended with DELETE at exit.
    let got = received(&json_state);
    let posts: Vec<&Value> = got.iter().filter(|r| r["method"] == "POST").collect();
    assert_eq!(posts[0]["rpc"], "initialize", "{got:?}");
    assert!(posts[0]["headers"].get("mcp-session-id").is_none());
    for request in &got {
        assert_eq!(request["path"], "/mcp");
        assert_eq!(request["headers"]["authorization"], BEARER, "{request}");
    }
    for post in &posts {
        assert_eq!(
            post["headers"]["accept"], "application/json, text/event-stream",
            "{post}"
        );
        assert_eq!(post["headers"]["content-type"], "application/json");
    }
    let sessions: Vec<&str> = posts
        .iter()
        .filter_map(|p| p["headers"]["mcp-session-id"].as_str())
        .collect();
    let mut distinct = sessions.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 2, "one session, then a new one: {got:?}");
    let initializes: Vec<&&Value> = posts.iter().filter(|p| p["rpc"] == "initialize").collect();
    assert_eq!(initializes.len(), 2, "{got:?}");
    assert!(posts.iter().any(|p| p["rpc"] == "notifications/initialized"
        && p["headers"]["mcp-protocol-version"] == "2025-11-25"));
    let write = posts.iter().rfind(|p| p["rpc"] == "tools/call").unwrap();
    assert_eq!(write["headers"]["mcp-session-id"], distinct[1]);
    assert_eq!(write["headers"]["mcp-protocol-version"], "2025-11-25");
    assert!(
        got.iter()
            .any(|r| r["method"] == "DELETE" && r["headers"]["mcp-session-id"] == distinct[1]),
        "the session is ended at exit: {got:?}"
    );
    // The event-stream server got the variable's value in its header.
    let streamed = received(&sse_state);
    assert!(!streamed.is_empty());
    for request in &streamed {
        assert_eq!(request["headers"]["x-api-key"], KEY, "{request}");
    }

    // `smith mcp list` shows both servers, their headers by name only.
    let list = smith_in(
        home.path(),
        home.path(),
        &["mcp", "list"],
        &[("FIXTURE_KEY", KEY)],
    );
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    assert_eq!(list.status.code(), Some(0), "{listed}");
    assert!(
        listed.contains(&format!("js  ready  http://127.0.0.1:{json_port}/mcp  ")),
        "{listed}"
    );
    assert!(listed.contains("  mcp__ev__slow (read-only)\n"), "{listed}");
    let list_json = smith_in(
        home.path(),
        home.path(),
        &["mcp", "list", "--json"],
        &[("FIXTURE_KEY", KEY)],
    );
    let listing: Value = serde_json::from_slice(&list_json.stdout).unwrap();
    assert_eq!(
        listing["servers"][0]["target"]["headers"],
        serde_json::json!(["Authorization"])
    );

    // No header value shows anywhere smith writes.
    let dumped = serde_json::to_string(&common::dump(home.path(), "mcp")).unwrap();
    let list_err = String::from_utf8_lossy(&list.stderr).into_owned();
    let list_json_text = String::from_utf8_lossy(&list_json.stdout).into_owned();
    for secret in ["http-fixture-secret-7Qk2", KEY] {
        for (what, text) in [
            ("stdout", &stdout),
            ("stderr", &stderr),
            ("log", &log_text),
            ("session", &dumped),
            ("smith mcp list", &listed),
            ("smith mcp list stderr", &list_err),
            ("smith mcp list --json", &list_json_text),
        ] {
            assert!(!text.contains(secret), "a header value leaked into {what}");
        }
    }
}

#[test]
fn an_http_server_where_nothing_listens_is_tried_twice_and_named_without_its_query() {
    let port = free_port();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.kdl"),
        format!(
            "mcp {{\n    server \"nowhere\" {{\n        url \"http://127.0.0.1:{port}/mcp?key=query-secret-55Zr\"\n    }}\n    server \"plain\" {{\n        url \"http://mcp.example.com/mcp\"\n    }}\n}}\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = smith_in(home.path(), home.path(), &["mcp", "list"], &[]);
    let took = started.elapsed();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        took < Duration::from_secs(30),
        "smith mcp list took {took:?}"
    );
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("nowhere  failed  http://127.0.0.1:{port}/mcp?…  ")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "MCP server nowhere from http://127.0.0.1:{port}/mcp?… ("
        )) && text.contains("config.kdl:2")
            && text.contains("`initialize` failed")
            && text.contains("started again once")
            && text.contains("reachable at"),
        "{text}"
    );
    // Plain http to another machine is refused before anything is sent.
    assert!(
        text.contains("MCP server plain")
            && text.contains("plain http to a host that is not this machine"),
        "{text}"
    );
    // `smith doctor` reports it with what to check.
    let doctor = smith_in(home.path(), home.path(), &["doctor", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&doctor.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&doctor.stdout)));
    let finding = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "plugins.mcp-server" && f["details"]["server"] == "nowhere")
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(finding["severity"], "warning", "{finding}");
    let said = finding.to_string();
    assert!(
        said.contains("`initialize` failed") && said.contains("reachable at its URL"),
        "{said}"
    );
    assert!(!doc.to_string().contains("query-secret-55Zr"));
    // A run tries it twice as well (the log says so), names it in a
    // notice, and goes on without it.
    let started = Instant::now();
    let (out, err, log_text) = eval(
        home.path(),
        r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        log_text.contains("MCP server nowhere failed (`initialize` failed")
            && log_text.contains("starting it again (once)"),
        "{log_text}"
    );
    let run = format!("{out}\n{err}");
    assert!(
        run.contains("MCP server nowhere") && run.contains("is not available"),
        "{run}"
    );
    for (what, text) in [("output", &text), ("run", &run), ("log", &log_text)] {
        assert!(
            !text.contains("query-secret-55Zr"),
            "the query leaked into {what}"
        );
    }
}

#[test]
fn a_trusted_projects_mcp_json_reaches_its_http_server_and_an_untrusted_ones_is_not_contacted() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    let port = free_port();
    let state = home.path().join("remote-state");
    let _server = fixture_http(&state, port, "sse");
    const TOKEN: &str = "project-token-Vb61";
    std::fs::write(
        project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"remote": {
            "type": "http",
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"Authorization": "Bearer ${PROJ_TOKEN}"},
        }}})
        .to_string(),
    )
    .unwrap();
    let env = [("PROJ_TOKEN", TOKEN)];
    let out = smith_in(home.path(), &project, &["mcp", "list"], &env);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("not trusted"), "{text}");
    assert!(
        received(&state).is_empty(),
        "an untrusted project's server was contacted"
    );
    common::run(home.path(), &["trust", &project.display().to_string()], 0);
    let out = smith_in(home.path(), &project, &["mcp", "list", "--json"], &env);
    let listing: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let server = &listing["servers"][0];
    assert_eq!(server["name"], "remote", "{listing}");
    assert_eq!(server["state"], "ready", "{listing}");
    assert!(server["origin"].as_str().unwrap().ends_with(".mcp.json"));
    assert!(
        server["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mcp__remote__add"),
        "{listing}"
    );
    let got = received(&state);
    assert!(!got.is_empty());
    for request in &got {
        assert_eq!(
            request["headers"]["authorization"],
            format!("Bearer {TOKEN}"),
            "{request}"
        );
    }
    assert!(!listing.to_string().contains(TOKEN));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(TOKEN));
}

#[test]
fn an_aborted_http_call_sends_notifications_cancelled_and_the_session_is_ended() {
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let state = home.path().join("fx-state");
    let _server = fixture_http(&state, port, "sse");
    std::fs::write(
        home.path().join("config.kdl"),
        format!(
            "mcp {{\n    server \"fx\" {{\n        url \"http://127.0.0.1:{port}/mcp\"\n    }}\n}}\n"
        ),
    )
    .unwrap();
    let script = script(
        home.path(),
        r#"[
  [{"tool_call": {"id": "w1", "name": "mcp__fx__slow", "arguments": {"label": "long", "ms": 30000}}},
   {"stop": {"reason": "tool_use"}}],
  [{"text": "done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
    command
        .env("SMITH_HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .current_dir(home.path())
        .args(["eval", "--json", "--yes", "--mock-script", &script, "wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    common::default_signals(&mut command);
    let child = command.spawn().unwrap();
    // Wait until the call is with the server.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !received(&state).iter().any(|r| r["rpc"] == "tools/call") {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let interrupted = Instant::now();
    // SAFETY: sending SIGINT to the child this test started.
    unsafe {
        libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        interrupted.elapsed() < Duration::from_secs(15),
        "smith took {:?} to stop",
        interrupted.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ends = tool_ends(&stdout);
    assert_eq!(ends.len(), 1, "{stdout}");
    assert_eq!(ends[0]["status"], "error");
    assert!(
        ends[0]["content"]
            .as_str()
            .unwrap()
            .contains("was cancelled (the server was sent notifications/cancelled)"),
        "{}",
        ends[0]
    );
    let got = received(&state);
    let call = got.iter().find(|r| r["rpc"] == "tools/call").unwrap();
    let cancelled = got
        .iter()
        .find(|r| r["rpc"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled: {got:?}"));
    assert_eq!(
        cancelled["headers"]["mcp-session-id"],
        call["headers"]["mcp-session-id"]
    );
    assert!(
        got.iter().any(|r| r["method"] == "DELETE"
            && r["headers"]["mcp-session-id"] == call["headers"]["mcp-session-id"]),
        "{got:?}"
    );
}
