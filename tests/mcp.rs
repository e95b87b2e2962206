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
