//! Every ending signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) ends every mode
//! the way Ctrl+C ends `smith eval`: the bash command running in a turn or
//! a tool call is aborted (its process group ended, so its work never
//! finishes), its effect is recorded as ended (`cancelled`, mutation
//! `unknown`), the command that continues the session is printed on
//! standard error, the terminal is restored, and the exit code is 128 plus
//! the signal's number. `smith eval` itself is covered in
//! `hostile_input.rs`.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const SIGNALS: [(i32, &str); 4] = [
    (libc::SIGTERM, "term"),
    (libc::SIGHUP, "hup"),
    (libc::SIGQUIT, "quit"),
    (libc::SIGINT, "int"),
];

/// A bash command that records its process group's id, then would mark
/// `finished` after three seconds.
struct Work {
    pid_file: PathBuf,
    finished: PathBuf,
}

impl Work {
    fn new(dir: &Path, name: &str) -> Work {
        Work {
            pid_file: dir.join(format!("pid-{name}")),
            finished: dir.join(format!("finished-{name}")),
        }
    }

    fn command(&self) -> String {
        format!(
            "echo $$ > {} && sleep 3 && touch {}",
            self.pid_file.display(),
            self.finished.display()
        )
    }

    /// A mock script whose turn runs the command, then answers.
    fn script(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(format!("script-{name}.json"));
        let script = json!([
            [
                {"tool_call": {"id": "c1", "name": "bash", "arguments": {"command": self.command()}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]);
        std::fs::write(&path, script.to_string()).unwrap();
        path
    }

    /// Waits until the command runs; its process group's id.
    fn running(&self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.pid_file)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                assert!(
                    !live_in_group(pid).is_empty(),
                    "the command's process group {pid} has no live process"
                );
                return pid;
            }
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asserts the process group is gone (at once, or within two seconds
    /// of the command's end) and the work never finishes.
    fn never_finishes(&self, group: i32, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !live_in_group(group).is_empty() {
            assert!(
                Instant::now() < deadline,
                "{name}: the command's process group still runs: {:?}",
                live_in_group(group)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Past the moment the command would have finished.
        std::thread::sleep(Duration::from_secs(4));
        assert!(
            !self.finished.exists(),
            "{name}: the command ran on after smith ended"
        );
    }
}

/// The processes of group `group` that have not ended (zombies excluded).
fn live_in_group(group: i32) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces.
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(group)
            && fields.first() != Some(&"Z")
        {
            live.push(pid);
        }
    }
    live
}

fn smith_command(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .current_dir(home);
    // SAFETY: only resets signal dispositions, which is allowed between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Default dispositions, whatever the test runner inherited (a
            // background job starts with SIGINT and SIGQUIT ignored).
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: signals our own child process.
    assert_eq!(
        unsafe { libc::kill(i32::try_from(child.id()).unwrap(), signal) },
        0
    );
}

fn exit_within(child: &mut Child, limit: Duration, name: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed() < limit,
            "{name}: smith still ran {limit:?} after the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The outcome and mutation state recorded for effect `fx-1` of session
/// `name`.
fn recorded_end(home: &Path, name: &str) -> (String, String) {
    let out = smith_command(home)
        .args(["session", "dump", name])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let completion = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "effect_completion" && r["content"]["effect_id"] == "fx-1")
        .unwrap_or_else(|| panic!("{name}: no completion of fx-1 recorded:\n{text}"));
    (
        completion["content"]["outcome"]
            .as_str()
            .unwrap()
            .to_owned(),
        completion["content"]["mutation"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

fn resume_line(name: &str, command: &str) -> String {
    format!("smith: interrupted; session {name} is saved — continue it with: {command}")
}

/// `smith rpc` running a turn's bash command: each ending signal aborts
/// the run as the `abort` method does, and smith exits with 128 plus the
/// signal's number.
#[test]
fn every_ending_signal_aborts_an_rpc_run() {
    for (number, name) in SIGNALS {
        let home = tempfile::tempdir().unwrap();
        let work = Work::new(home.path(), name);
        let script = work.script(home.path(), name);
        let mut child = smith_command(home.path())
            .args(["rpc", "--approval", "full", "--name", name, "--mock-script"])
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Kept open: the end of the input would end the server.
        let mut stdin = child.stdin.take().unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"text": "go"}})
        )
        .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let record: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let started = record["method"] == "tool_execution_start";
            seen.push(record);
            if started {
                break;
            }
        }
        assert_eq!(
            seen.last().map(|r| r["method"].clone()),
            Some(json!("tool_execution_start")),
            "{name}: {seen:?}"
        );
        let group = work.running();
        signal(&child, number);
        let rest: Vec<Value> = lines
            .map_while(Result::ok)
            .map(|l| serde_json::from_str(&l).unwrap())
            .collect();
        let status = exit_within(&mut child, Duration::from_secs(10), name);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        drop(stdin);
        assert_eq!(
            status.code(),
            Some(128 + number),
            "{name}: {rest:?}\n{stderr}"
        );
        if number != libc::SIGHUP {
            // (After a hangup the output goes nowhere.)
            let end = rest
                .iter()
                .find(|r| r["method"] == "tool_execution_end")
                .unwrap_or_else(|| panic!("{name}: no end of the call: {rest:?}"));
            assert_eq!(end["params"]["status"], "aborted", "{name}: {end}");
            let agent_end = rest
                .iter()
                .find(|r| r["method"] == "agent_end")
                .unwrap_or_else(|| panic!("{name}: no end of the run: {rest:?}"));
            assert_eq!(agent_end["params"]["stop"], "aborted", "{name}");
            assert_eq!(
                rest.last().map(|r| r["method"].clone()),
                Some(json!("settled")),
                "{name}: {rest:?}"
            );
            assert_eq!(
                stderr.lines().last(),
                Some(resume_line(name, &format!("smith rpc --session {name}")).as_str()),
                "{name}"
            );
        }
        work.never_finishes(group, name);
        assert_eq!(
            recorded_end(home.path(), name),
            ("cancelled".to_owned(), "unknown".to_owned()),
            "{name}"
        );
    }
}

/// An idle `smith rpc` ends at a signal with 128 plus its number, after
/// answering what it was asked.
#[test]
fn an_idle_rpc_server_exits_with_the_signal_code() {
    let home = tempfile::tempdir().unwrap();
    let mut child = smith_command(home.path())
        .args(["rpc", "--provider", "mock", "--name", "idle"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    )
    .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], 1, "{first}");
    signal(&child, libc::SIGTERM);
    assert_eq!(lines.count(), 0);
    let status = exit_within(&mut child, Duration::from_secs(10), "idle");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert_eq!(
        stderr.lines().last(),
        Some(resume_line("idle", "smith rpc --session idle").as_str())
    );
}

/// `smith acp` running a prompt's bash command: each ending signal cancels
/// the prompt as `session/cancel` does (the prompt answers `cancelled`, the
/// call reports `failed`), its end is recorded, the command that continues
/// the session is printed, and smith exits with 128 plus the signal's
/// number.
#[test]
fn every_ending_signal_cancels_an_acp_prompt() {
    for (number, name) in SIGNALS {
        let home = tempfile::tempdir().unwrap();
        let work = Work::new(home.path(), name);
        let script = work.script(home.path(), name);
        let mut child = smith_command(home.path())
            .args(["acp", "--approval", "full", "--mock-script"])
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Kept open: the end of the input would end the server.
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let cwd = home.path().display().to_string();
        let mut session = String::new();
        for request in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
        ] {
            writeln!(stdin, "{request}").unwrap();
            let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!(answer["id"], request["id"], "{name}: {answer}");
            if let Some(id) = answer["result"]["sessionId"].as_str() {
                session = id.to_owned();
            }
        }
        assert!(!session.is_empty(), "{name}: session/new named no session");
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
        )
        .unwrap();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let record: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let update = &record["params"]["update"];
            let running = update["toolCallId"] == "c1" && update["status"] == "in_progress";
            seen.push(record);
            if running {
                break;
            }
        }
        let group = work.running();
        signal(&child, number);
        let rest: Vec<Value> = lines
            .map_while(Result::ok)
            .map(|l| serde_json::from_str(&l).unwrap())
            .collect();
        let status = exit_within(&mut child, Duration::from_secs(10), name);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        drop(stdin);
        assert_eq!(
            status.code(),
            Some(128 + number),
            "{name}: {seen:?}\n{rest:?}\n{stderr}"
        );
        if number != libc::SIGHUP {
            // (After a hangup the output goes nowhere.)
            let answer = rest
                .iter()
                .find(|r| r["id"] == 3)
                .unwrap_or_else(|| panic!("{name}: the prompt was never answered: {rest:?}"));
            assert_eq!(
                answer["result"]["stopReason"], "cancelled",
                "{name}: {answer}"
            );
            let failed = rest.iter().any(|r| {
                r["params"]["update"]["toolCallId"] == "c1"
                    && r["params"]["update"]["status"] == "failed"
            });
            assert!(failed, "{name}: the call's end was not reported: {rest:?}");
            let last = stderr.lines().last().unwrap_or_default().to_owned();
            // The session took its name from its first prompt, `go`.
            assert!(
                last.starts_with("smith: interrupted; session go ")
                    && last.ends_with("continue it with: smith --session go"),
                "{name}: {stderr}"
            );
        }
        work.never_finishes(group, name);
        assert_eq!(
            recorded_end(home.path(), &session),
            ("cancelled".to_owned(), "unknown".to_owned()),
            "{name}"
        );
    }
}

/// `smith mcp` running a `tools/call` of bash: each ending signal cancels
/// the call as `notifications/cancelled` does, its completion is recorded
/// and answered, and smith exits with 128 plus the signal's number.
#[test]
fn every_ending_signal_cancels_an_mcp_call() {
    for (number, name) in SIGNALS {
        let home = tempfile::tempdir().unwrap();
        let work = Work::new(home.path(), name);
        let mut child = smith_command(home.path())
            .args(["mcp", "--no-plugins", "--approval", "full", "--name", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for request in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "signals", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "bash", "arguments": {"command": work.command()},
                "_meta": {"progressToken": "p"}}}),
        ] {
            writeln!(stdin, "{request}").unwrap();
        }
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let record: Value = serde_json::from_str(&line.unwrap()).unwrap();
            // Progress 0 is sent once the effect starts.
            let started = record["method"] == "notifications/progress";
            seen.push(record);
            if started {
                break;
            }
        }
        assert_eq!(
            seen.last().map(|r| r["method"].clone()),
            Some(json!("notifications/progress")),
            "{name}: {seen:?}"
        );
        let group = work.running();
        signal(&child, number);
        let rest: Vec<Value> = lines
            .map_while(Result::ok)
            .map(|l| serde_json::from_str(&l).unwrap())
            .collect();
        let status = exit_within(&mut child, Duration::from_secs(10), name);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        drop(stdin);
        assert_eq!(
            status.code(),
            Some(128 + number),
            "{name}: {rest:?}\n{stderr}"
        );
        if number != libc::SIGHUP {
            let answer = rest
                .iter()
                .find(|r| r["id"] == 2)
                .unwrap_or_else(|| panic!("{name}: the call was not answered: {rest:?}"));
            assert_eq!(answer["result"]["isError"], true, "{name}: {answer}");
            assert_eq!(
                answer["result"]["_meta"]["dev.smith/status"], "cancelled",
                "{name}: {answer}"
            );
            assert_eq!(
                stderr.lines().last(),
                Some(resume_line(name, &format!("smith mcp --session {name}")).as_str()),
                "{name}"
            );
        }
        work.never_finishes(group, name);
        assert_eq!(
            recorded_end(home.path(), name),
            ("cancelled".to_owned(), "unknown".to_owned()),
            "{name}"
        );
    }
}

// ---- the interface, in a pseudo-terminal ---------------------------------

/// The comparable part of a termios.
fn termios(fd: i32) -> (u32, u32, u32, u32, Vec<u8>) {
    let mut t = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: tcgetattr fills the struct on success.
    assert_eq!(unsafe { libc::tcgetattr(fd, t.as_mut_ptr()) }, 0);
    // SAFETY: initialised above.
    let t = unsafe { t.assume_init() };
    (t.c_iflag, t.c_oflag, t.c_cflag, t.c_lflag, t.c_cc.to_vec())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The interface running a turn's bash command: each ending signal aborts
/// the turn as Esc does, the terminal is restored, the command that
/// continues the session is printed after it, and smith exits with 128
/// plus the signal's number.
#[test]
fn every_ending_signal_ends_the_interface_like_an_interrupt() {
    for (number, name) in SIGNALS {
        let home = tempfile::tempdir().unwrap();
        let work = Work::new(home.path(), name);
        let script = work.script(home.path(), name);
        let (mut master, slave) = {
            let (mut master, mut slave) = (-1, -1);
            let size = libc::winsize {
                ws_row: 24,
                ws_col: 80,
                ws_xpixel: 0,
                ws_ypixel: 0,
            };
            // SAFETY: valid out-pointers; a null name and termios are allowed.
            let rc = unsafe {
                libc::openpty(
                    &mut master,
                    &mut slave,
                    std::ptr::null_mut(),
                    std::ptr::null(),
                    &size,
                )
            };
            assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
            // SAFETY: openpty returned two fresh descriptors we now own.
            unsafe {
                (
                    std::fs::File::from_raw_fd(master),
                    OwnedFd::from_raw_fd(slave),
                )
            }
        };
        let before = termios(slave.as_raw_fd());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
        cmd.args(["tui", "--approval", "full", "--mock-script"])
            .arg(&script)
            .arg("--cwd")
            .arg(home.path())
            .env("SMITH_HOME", home.path())
            .env("TERM", "xterm-256color")
            .env_remove("SMITH_TUI_CAPS")
            .env_remove("NO_COLOR");
        let fd = slave.as_raw_fd();
        // SAFETY: dups of a valid descriptor, handed to the child; between
        // fork and exec only async-signal-safe calls.
        unsafe {
            cmd.stdin(Stdio::from_raw_fd(libc::dup(fd)))
                .stdout(Stdio::from_raw_fd(libc::dup(fd)))
                .stderr(Stdio::from_raw_fd(libc::dup(fd)));
            cmd.pre_exec(|| {
                for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                    libc::signal(signal, libc::SIG_DFL);
                }
                // A new session with the pty as its controlling terminal.
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        let output = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&output);
        let mut reader = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while find(&output.lock().unwrap(), b"F1 help").is_none() {
            assert!(
                Instant::now() < deadline,
                "{name}: the interface never drew"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_ne!(termios(slave.as_raw_fd()), before, "{name}: no raw mode");
        master.write_all(b"go\r").unwrap();
        let group = work.running();
        signal(&child, number);
        let status = exit_within(&mut child, Duration::from_secs(10), name);
        // What smith wrote last reaches the reader thread.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            status.code(),
            Some(128 + number),
            "{name}: {status:?}\n{}",
            String::from_utf8_lossy(&output.lock().unwrap())
        );
        assert_eq!(
            termios(slave.as_raw_fd()),
            before,
            "{name}: the termios was not restored"
        );
        let out = output.lock().unwrap().clone();
        let shown = String::from_utf8_lossy(&out).into_owned();
        let entered = rfind(&out, b"\x1b[?1049h").unwrap();
        let left = rfind(&out, b"\x1b[?1049l")
            .unwrap_or_else(|| panic!("{name}: the alternate screen was not left"));
        assert!(left > entered, "{name}");
        let cursor = rfind(&out, b"\x1b[?25h").unwrap();
        assert!(cursor > rfind(&out, b"\x1b[?25l").unwrap_or(0), "{name}");
        let paste = rfind(&out, b"\x1b[?2004l").unwrap();
        assert!(paste > rfind(&out, b"\x1b[?2004h").unwrap_or(0), "{name}");
        // The session the interface named on its first frame took its
        // name from the first prompt, `go`.
        let first = shown
            .split("session ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap()
            .to_owned();
        assert!(first.starts_with("tui-"), "{name}: {first}");
        let session = "go".to_owned();
        if number != libc::SIGHUP {
            // (After a hangup the terminal is gone and nothing is printed.)
            let line = resume_line(&session, &format!("smith tui --session {session}"));
            let printed = rfind(&out, line.as_bytes())
                .unwrap_or_else(|| panic!("{name}: no resume command in:\n{shown}"));
            assert!(
                printed > left,
                "{name}: printed before the terminal was restored"
            );
        }
        work.never_finishes(group, name);
        assert_eq!(
            recorded_end(home.path(), &session),
            ("cancelled".to_owned(), "unknown".to_owned()),
            "{name}"
        );
    }
}
