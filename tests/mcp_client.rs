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
