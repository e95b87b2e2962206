//! `smith` with no subcommand: a prompt runs as `smith eval` does, and with
//! nothing to run and no terminal the command overview is printed.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

use smith_store::Store;

#[test]
fn a_bare_prompt_runs_like_eval_and_records_a_session() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("README.md"), "# bare prompt\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .current_dir(work.path())
        .args(["hello", "there"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The words are joined into one prompt, which the offline demo echoes.
    assert!(stdout.contains("You said \"hello there\""), "{stdout}");
    assert!(stdout.contains("\"# bare prompt\""), "{stdout}");
    let store = Store::open(home.path().join("data").join("sessions")).unwrap();
    assert_eq!(store.list().unwrap().len(), 1, "one session recorded");
}

#[test]
fn no_arguments_off_a_terminal_prints_the_overview() {
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for command in ["eval", "session", "replay", "rpc", "mcp", "tui", "bench"] {
        assert!(
            stdout.contains(command),
            "overview lacks {command}: {stdout}"
        );
    }
}
