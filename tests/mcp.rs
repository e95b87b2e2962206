//! `smith mcp` end to end with the official MCP Python SDK client.
//!
//! The client script (frontends/rpc/tests/mcp_client.py) spawns the built
//! binary and checks, once in the SDK's default mode (a `server/discover`
//! probe, then the stateless 2026-07-28 revision) and once in its legacy
//! mode (the `initialize` handshake, negotiating 2025-11-25): the revision,
//! tools/list,
//! tools/call of read and bash with progress notifications, resources/list
//! and resources/read, and a cancelled call. It needs python3 with the PyPI
//! `mcp` package; when either is missing this test fails and says how to
//! install it (scripts/setup installs it).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

const INSTALL: &str = "python3 -m pip install --quiet 'mcp==2.3.0'";

#[test]
fn the_official_python_client_drives_smith_mcp_statelessly() {
    drive("auto", "2026-07-28");
}

#[test]
fn the_official_python_client_drives_smith_mcp_through_the_handshake() {
    drive("legacy", "2025-11-25");
}

fn drive(mode: &str, version: &str) {
    let probe = Command::new("python3")
        .args(["-c", "import mcp, anyio"])
        .output();
    match probe {
        Err(e) => panic!(
            "python3 could not be started ({e}); install Python 3.10 or newer, then run: {INSTALL}"
        ),
        Ok(out) if !out.status.success() => panic!(
            "the MCP Python SDK is not importable ({}); run: {INSTALL}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Ok(_) => {}
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("hello.txt"), "hello from the fixture\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("frontends/rpc/tests/mcp_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_smith"))
        .arg(&work)
        .arg(mode)
        .env("SMITH_HOME", &home)
        .output()
        .expect("python3 runs the client script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("the client prints a JSON summary ({e}):\n{stdout}"));
    assert_eq!(summary["mode"], mode);
    assert_eq!(summary["protocol_version"], version);
    assert_eq!(
        summary["tools"],
        serde_json::json!([
            "read",
            "write",
            "edit",
            "bash",
            "find",
            "grep",
            "ls",
            "checkpoint_list",
            "checkpoint_diff",
            "checkpoint_undo",
            "checkpoint_redo"
        ])
    );
    assert_eq!(summary["read"], "hello from the fixture");
    assert!(
        summary["progress"].as_array().is_some_and(|p| p.len() >= 2),
        "{summary}"
    );
    assert_eq!(summary["cancelled_effect"], "fx-3");
    assert!(!work.join("cancelled-marker").exists());
}

/// The checkpoint tools over plain stdio in the `read-only` approval mode:
/// `checkpoint_list` answers, `checkpoint_undo` is refused like any tool
/// that changes files, and nothing changes.
#[test]
fn checkpoint_tools_list_and_refuse_to_undo_in_read_only() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("kept.txt"), "kept\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["mcp", "--no-plugins", "--approval", "read-only", "--cwd"])
        .arg(&work)
        .env("SMITH_HOME", &home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"checkpoint_list","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"checkpoint_undo","arguments":{}}}"#,
    ];
    {
        let mut stdin = child.stdin.take().unwrap();
        for r in requests {
            writeln!(stdin, "{r}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let replies: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v.get("id").is_some())
        .collect();
    let reply = |id: u64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply {id}: {stdout}"))
    };
    let tools = reply(2)["result"]["tools"].as_array().unwrap();
    let undo = tools
        .iter()
        .find(|t| t["name"] == "checkpoint_undo")
        .unwrap();
    assert_eq!(undo["annotations"]["destructiveHint"], true);
    let list = tools
        .iter()
        .find(|t| t["name"] == "checkpoint_list")
        .unwrap();
    assert_eq!(list["annotations"]["readOnlyHint"], true);

    let listed = &reply(3)["result"];
    assert_eq!(listed["isError"], false, "{listed}");
    let text: serde_json::Value =
        serde_json::from_str(listed["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["turns"], serde_json::json!([]));
    assert_eq!(text["checkpoints"], serde_json::json!([]));

    let refused = &reply(4)["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    let why = refused["content"][0]["text"].as_str().unwrap();
    assert!(why.contains("approval mode is read-only"), "{why}");
    assert_eq!(refused["_meta"]["dev.smith/status"], "blocked");
    assert_eq!(
        std::fs::read_to_string(work.join("kept.txt")).unwrap(),
        "kept\n"
    );
}
