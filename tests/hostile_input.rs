//! Hostile input end to end through the built binary. `the_hostile_input_table`
//! is the standing table: one row per input, grouped by the surface it
//! arrives through (arguments, environment, configuration, manifests,
//! scripts, imports, project files, signals, plugin behaviors), each with
//! the exit status and the diagnostic a user must get and what must not
//! have happened (nothing published, nothing installed, no command left
//! running). Cases that need more than one command or a closer look have
//! tests of their own: an extension that blocks the prompt (its JSON
//! records), escape sequences in model text and tool output, a FIFO in a
//! cloned project's `.smith`, every ending signal (its JSON records; also
//! `tests/signals.rs`), and resuming a session that lost a frame. The
//! flooding plugin's exact counts are `tests/plugin_limits.rs`.
//! Never a hang, a panic or a terminal driven by untrusted text.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{default_signals, run};
use serde_json::Value;

/// `smith ARGS` in `home` (its home and working folder, no color), killed
/// and failed after `limit`: a hang is a failure, not a stuck suite.
fn smith_within(home: &Path, args: &[OsString], limit: Duration) -> Output {
    smith_in(home, home, args, limit)
}

/// [`smith_within`] with `cwd` as the working folder.
fn smith_in(home: &Path, cwd: &Path, args: &[OsString], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "smith {args:?} still ran after {limit:?}:\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write_script(home: &Path, responses: &Value) -> String {
    let path = home.join("script.json");
    std::fs::write(&path, responses.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn eval_ends_at_once_when_an_extension_blocks_the_prompt() {
    let home = tempfile::tempdir().unwrap();
    common::install_guest(
        home.path(),
        "test/lifecycle",
        "smith_plugin_lifecycle.wasm",
        "    ui\n",
    );
    let script = write_script(
        home.path(),
        &serde_json::json!([[{"text": "never"}, {"stop": {"reason": "end"}}]]),
    );
    // Human output: the block is reported and the run fails (exit 1).
    let out = smith_within(
        home.path(),
        &os(&[
            "eval",
            "--no-session",
            "--mock-script",
            &script,
            "please block input",
        ]),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("the extension test/lifecycle blocked this input, so it was not sent: test/lifecycle keeps this input from the model"),
        "{stderr}"
    );
    assert!(!stdout.contains("never"), "{stdout}");
    // JSON output: the error event, then a result record saying so.
    let out = smith_within(
        home.path(),
        &os(&[
            "eval",
            "--json",
            "--name",
            "blocked",
            "--mock-script",
            &script,
            "please block input",
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let records: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "error" && r["kind"] == "blocked"),
        "{records:?}"
    );
    let result = records.last().unwrap();
    assert_eq!(result["type"], "result", "{result}");
    assert_eq!(result["stop"], "error");
    assert_eq!(result["exit_code"], 1);
    assert!(
        !records.iter().any(|r| r["type"] == "agent_start"),
        "{records:?}"
    );
    // The session holds no user message: nothing was sent.
    let dump = common::dump(home.path(), "blocked");
    assert!(
        !dump.iter().any(|r| r.to_string().contains("block input")),
        "{dump:?}"
    );
}

#[test]
fn an_argument_that_is_not_utf8_is_a_diagnostic_with_status_2() {
    let home = tempfile::tempdir().unwrap();
    let bad = || OsString::from_vec(b"caf\xe9".to_vec());
    let cases: Vec<Vec<OsString>> = vec![
        vec!["eval".into(), bad()],
        vec![bad()],
        vec!["--model".into(), bad(), "hello".into()],
        vec!["eval".into(), "--answer".into(), bad(), "hi".into()],
        vec!["session".into(), "info".into(), bad()],
        vec!["config".into(), "show".into(), bad()],
        vec!["replay".into(), bad()],
        vec!["plugin".into(), "info".into(), bad()],
    ];
    for args in cases {
        let out = smith_within(home.path(), &args, Duration::from_secs(30));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        let position = args.iter().position(|a| a.to_str().is_none()).unwrap() + 1;
        assert!(
            stderr.contains(&format!(
                "command-line argument {position} (\"caf\u{fffd}\") is not valid UTF-8"
            )),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("[cli.invalid-utf8]"), "{args:?}: {stderr}");
        assert!(stderr.contains("why: "), "{args:?}: {stderr}");
        assert!(stderr.contains("next: "), "{args:?}: {stderr}");
        assert!(stdout_is_empty(&out), "{args:?}");
    }
}

fn stdout_is_empty(out: &Output) -> bool {
    out.stdout.is_empty()
}

/// `levels` nested `a {` blocks after `head`.
fn nested(head: &str, levels: usize) -> String {
    format!("{head}{}{}", "a {\n".repeat(levels), "}\n".repeat(levels))
}

#[test]
fn a_configuration_nested_100000_deep_is_refused_with_its_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("config.kdl");
    std::fs::write(&file, nested("model \"m\"\n", 100_000)).unwrap();
    for args in [
        &["config", "show"][..],
        &["eval", "--no-session", "--provider", "mock", "hi"][..],
    ] {
        let out = smith_within(home.path(), &os(args), Duration::from_secs(60));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{} nests blocks deeper than 64 levels at line 66",
                file.display()
            )),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("[config.too-deep]"), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("at: {}:66:3", file.display())),
            "{args:?}: {stderr}"
        );
    }
    // 64 levels are within the limit: the file parses and the unknown
    // section is only a warning or an error about its key, not its depth.
    std::fs::write(&file, nested("model \"m\"\n", 64)).unwrap();
    let out = smith_within(
        home.path(),
        &os(&["config", "show", "model"]),
        Duration::from_secs(60),
    );
    assert!(
        !text(&out.stderr).contains("config.too-deep"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_plugin_manifest_nested_100000_deep_is_refused_at_install() {
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().join("deep-src");
    std::fs::create_dir_all(&folder).unwrap();
    let head =
        "name \"test/deep\"\nversion \"0.1.0\"\ndescription \"deep\"\napi 1\nworld \"extension\"\n";
    std::fs::write(folder.join("plugin.kdl"), nested(head, 100_000)).unwrap();
    std::fs::write(folder.join("plugin.wasm"), b"\0asm").unwrap();
    let out = smith_within(
        home.path(),
        &os(&["plugin", "install", &folder.display().to_string()]),
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nests blocks deeper than 64 levels at line 70"),
        "{stderr}"
    );
    assert!(stderr.contains("plugin.kdl"), "{stderr}");
}

#[test]
fn escape_sequences_from_the_model_and_tools_reach_no_terminal() {
    let home = tempfile::tempdir().unwrap();
    let hostile = "title \u{1b}]0;pwned\u{7} screen \u{1b}[?1049h csi \u{9b}2J end";
    let script = write_script(
        home.path(),
        &serde_json::json!([
            [
                {"text": hostile},
                {"tool_call": {"id": "c1", "name": "bash",
                    "arguments": {"command": "printf 'out \\033]0;tool\\007 \\033[?1049h done'"}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": hostile}, {"stop": {"reason": "end"}}]
        ]),
    );
    let out = smith_within(
        home.path(),
        &os(&[
            "eval",
            "--name",
            "hostile",
            "--yes",
            "--mock-script",
            &script,
            "go",
        ]),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let shown = "title \\x1b]0;pwned\\x07 screen \\x1b[?1049h csi \\u{9b}2J end";
    assert!(stdout.contains(shown), "{stdout}");
    assert!(
        stderr.contains("[bash] ok: out \\x1b]0;tool\\x07 \\x1b[?1049h done"),
        "{stderr}"
    );
    for output in [&out.stdout, &out.stderr] {
        assert!(!output.contains(&0x1b), "{}", text(output));
        assert!(!output.contains(&0x07), "{}", text(output));
        assert!(!text(output).contains('\u{9b}'), "{}", text(output));
    }
    // Replayed, the same text is just as inert.
    let out = smith_within(
        home.path(),
        &os(&["replay", "hostile", "--instant"]),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(shown), "{stdout}");
    for output in [&out.stdout, &out.stderr] {
        assert!(!output.contains(&0x1b), "{}", text(output));
        assert!(!output.contains(&0x07), "{}", text(output));
    }
    // JSON keeps the text exactly (JSON escapes it).
    let (json, _) = run(
        home.path(),
        &[
            "eval",
            "--json",
            "--no-session",
            "--mock-script",
            &script,
            "--yes",
            "go",
        ],
        0,
    );
    assert!(json.contains("title \\u001b]0;pwned\\u0007"), "{json}");
    assert!(!json.as_bytes().contains(&0x1b));
}

#[test]
fn max_turns_0_is_refused_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    let script = write_script(
        home.path(),
        &serde_json::json!([
            [
                {"tool_call": {"id": "c1", "name": "write",
                    "arguments": {"path": "made.txt", "content": "x"}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]),
    );
    for command in ["eval", "rpc"] {
        let mut args = vec![command, "--max-turns", "0", "--mock-script", &script];
        if command == "eval" {
            args.extend(["--no-session", "--yes", "write it"]);
        }
        let out = smith_within(home.path(), &os(&args), Duration::from_secs(30));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("--max-turns"), "{command}: {stderr}");
        assert!(
            stderr.contains("a run of 0 turns would send nothing and run no tool"),
            "{command}: {stderr}"
        );
        assert!(!home.path().join("made.txt").exists(), "{command}");
    }
    // 1 turn runs the first turn's tools, then stops at the limit.
    let out = smith_within(
        home.path(),
        &os(&[
            "eval",
            "--max-turns",
            "1",
            "--no-session",
            "--yes",
            "--mock-script",
            &script,
            "write it",
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(home.path().join("made.txt").exists());
}

#[test]
fn a_fifo_under_dot_smith_is_named_never_waited_on() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    let made = Command::new("mkfifo")
        .arg(project.join(".smith/pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let script = write_script(
        home.path(),
        &serde_json::json!([[{"text": "answered"}, {"stop": {"reason": "end"}}]]),
    );
    // Untrusted: every command finishes, and eval warns that the project
    // is ignored until trusted.
    let limit = Duration::from_secs(60);
    let out = smith_in(home.path(), &project, &os(&["config", "show"]), limit);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let eval = ["eval", "--no-session", "--mock-script", &script, "hi"];
    let out = smith_in(home.path(), &project, &os(&eval), limit);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("answered"));
    // Trusting it digests `.smith` without opening the FIFO.
    let out = smith_in(home.path(), &project, &os(&["trust"]), limit);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = smith_in(home.path(), &project, &os(&eval), limit);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("answered"));
}

/// SIGTERM, SIGHUP and SIGQUIT end `eval` the way Ctrl+C does: the running
/// command's process group is ended (its work never finishes), the call
/// ends as aborted, the run is recorded as aborted, and the exit code is
/// 128 plus the signal's number.

#[test]
fn every_ending_signal_aborts_eval_like_ctrl_c() {
    use std::io::BufRead;
    for (signal, name) in [
        (libc::SIGTERM, "term"),
        (libc::SIGHUP, "hup"),
        (libc::SIGQUIT, "quit"),
    ] {
        let home = tempfile::tempdir().unwrap();
        let finished = home.path().join(format!("finished-{name}"));
        let script = write_script(
            home.path(),
            &serde_json::json!([
                [
                    {"tool_call": {"id": "c1", "name": "bash",
                        "arguments": {"command": format!("sleep 3 && touch {}", finished.display())}}},
                    {"stop": {"reason": "tool_use"}}
                ],
                [{"text": "done"}, {"stop": {"reason": "end"}}]
            ]),
        );
        let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
        default_signals(&mut command);
        let mut child = command
            .env("SMITH_HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("NO_COLOR", "1")
            .current_dir(home.path())
            .args([
                "eval",
                "--json",
                "--yes",
                "--name",
                name,
                "--mock-script",
                &script,
                "go",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            let started = line.contains("\"type\":\"tool_execution_start\"");
            seen.push(line);
            if started {
                break;
            }
        }
        assert!(
            seen.last()
                .is_some_and(|l| l.contains("tool_execution_start")),
            "{name}: the command never started: {seen:?}"
        );
        let pid = i32::try_from(child.id()).unwrap();
        // SAFETY: signals our own child process.
        unsafe { libc::kill(pid, signal) };
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{name}: eval still ran 20 s after the signal"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(
            status.code(),
            Some(128 + signal),
            "{name}: {rest:?}\n{stderr}"
        );
        if signal != libc::SIGHUP {
            // (After a hangup the output goes nowhere.)
            let end = rest
                .iter()
                .find(|l| l.contains("\"type\":\"tool_execution_end\""))
                .unwrap_or_else(|| panic!("{name}: no end of the call: {rest:?}"));
            assert!(end.contains("\"status\":\"aborted\""), "{name}: {end}");
            let last: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
            assert_eq!(last["stop"], "aborted", "{name}: {last}");
        }
        // The command's process group was ended: its work never finishes.
        std::thread::sleep(Duration::from_secs(4));
        assert!(
            !finished.exists(),
            "{name}: the command ran on after smith ended"
        );
        // The session records the run as aborted.
        let out = smith_within(
            home.path(),
            &os(&["session", "dump", name]),
            Duration::from_secs(30),
        );
        let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(shown.contains("\"aborted\""), "{name}: {shown}");
    }
}

/// `eval` prints the configuration's warnings the docs promise (an unknown
/// key, an untrusted project's configuration ignored) on standard error,
/// and its `--json` output stays records only.
#[test]
fn eval_prints_the_configuration_warnings() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.kdl"), "nonsense-option 5\n").unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    std::fs::create_dir(project.path().join(".smith")).unwrap();
    std::fs::write(project.path().join(".smith/config.kdl"), "model \"x\"\n").unwrap();
    for json in [false, true] {
        let mut args = vec!["eval", "--no-session", "hi"];
        if json {
            args.insert(1, "--json");
        }
        let out = smith_in(
            home.path(),
            project.path(),
            &os(&args),
            Duration::from_secs(60),
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(stderr.contains("config.unknown-key"), "{stderr}");
        assert!(stderr.contains("nonsense-option"), "{stderr}");
        assert!(stderr.contains("trust.untrusted-project"), "{stderr}");
        if json {
            for line in stdout.lines() {
                assert!(serde_json::from_str::<Value>(line).is_ok(), "{line}");
            }
        }
    }
}

/// Flips one byte of the first occurrence of `needle` in session `name`'s
/// file under `home`: the frame holding it fails its checksum at load.
fn damage_frame_holding(home: &Path, name: &str, needle: &[u8]) {
    let list = run(home, &["session", "list", "--json"], 0).0;
    let id = list
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|v| match v {
            Value::Array(items) => items,
            one => vec![one],
        })
        .find(|s| s["name"] == name)
        .and_then(|s| s["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no session {name} in {list}"));
    let path = std::fs::read_dir(home)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .flat_map(|p| walk(&p))
        .find(|p| {
            p.file_name()
                .is_some_and(|f| f == format!("{id}.smith").as_str())
        })
        .unwrap_or_else(|| panic!("no file of session {id} under {}", home.display()));
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| {
            panic!(
                "{:?} not in {}",
                String::from_utf8_lossy(needle),
                path.display()
            )
        });
    bytes[at] ^= 0x20;
    std::fs::write(&path, bytes).unwrap();
}

fn walk(path: &Path) -> Vec<std::path::PathBuf> {
    if path.is_dir() {
        std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .flat_map(|e| walk(&e.path()))
            .collect()
    } else {
        vec![path.to_owned()]
    }
}

/// The user texts of the conversation in each request `--mock-record`
/// wrote to `file`.
fn recorded_user_texts(file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let request: Value = serde_json::from_str(l).unwrap();
            request["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["text"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

/// `smith eval --session NAME PROMPT` with the mock provider, recording
/// its requests to `record`.
fn resume_recorded(home: &Path, name: &str, record: &Path, prompt: &str) -> Output {
    let record = record.display().to_string();
    smith_within(
        home,
        &os(&[
            "eval",
            "--provider",
            "mock",
            "--session",
            name,
            "--mock-record",
            &record,
            prompt,
        ]),
        Duration::from_secs(60),
    )
}

#[test]
fn a_resume_over_a_lost_frame_continues_from_the_intact_history_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    run(
        h,
        &[
            "eval",
            "--provider",
            "mock",
            "--name",
            "cut",
            "first question",
        ],
        0,
    );
    for prompt in ["second question", "third question", "fourth question"] {
        run(
            h,
            &["eval", "--provider", "mock", "--session", "cut", prompt],
            0,
        );
    }
    let whole = common::dump(h, "cut").len();
    // The third prompt's frame is lost: everything after it descends from
    // an entry no frame holds.
    damage_frame_holding(h, "cut", b"third question");
    let record = h.join("requests.jsonl");
    let out = resume_recorded(h, "cut", &record, "fifth question");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("warning[session.broken-branch]").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("1 corrupt frame"), "{stderr}");
    assert!(stderr.contains("are not sent"), "{stderr}");
    // Every request holds the whole history before the damage, and
    // nothing from after it.
    let requests = recorded_user_texts(&record);
    assert!(!requests.is_empty());
    for users in &requests {
        assert_eq!(
            users,
            &["first question", "second question", "fifth question"]
        );
    }
    // Nothing was deleted: the entries after the damage are still in the
    // session, beside the new branch.
    let dump = common::dump(h, "cut");
    let all = serde_json::to_string(&dump).unwrap();
    assert!(all.contains("fourth question"));
    assert!(
        dump.len() > whole,
        "{} entries after, {whole} before",
        dump.len()
    );
    assert!(dump.iter().any(|e| e["kind"] == "leaf_switch"), "{all}");
    // The next resume is whole again: no warning, the new branch continues.
    let out = resume_recorded(h, "cut", &record, "sixth question");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("broken"), "{stderr}");
    let last = recorded_user_texts(&record).pop().unwrap();
    assert_eq!(
        last,
        [
            "first question",
            "second question",
            "fifth question",
            "sixth question"
        ]
    );
}

#[test]
fn a_resume_with_no_intact_history_is_refused_and_sends_nothing() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    run(
        h,
        &[
            "eval",
            "--provider",
            "mock",
            "--name",
            "rootless",
            "first question",
        ],
        0,
    );
    run(
        h,
        &[
            "eval",
            "--provider",
            "mock",
            "--session",
            "rootless",
            "second question",
        ],
        0,
    );
    // The session's first entry (the model choice) is lost.
    damage_frame_holding(h, "rootless", b"mock-1");
    let record = h.join("requests.jsonl");
    let out = resume_recorded(h, "rootless", &record, "third question");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[session.broken-history]"), "{stderr}");
    assert!(stderr.contains("smith session dump rootless"), "{stderr}");
    assert!(recorded_user_texts(&record).is_empty());
}

/// The arguments and environment of one row's command.
type Invocation = (Vec<OsString>, Vec<(&'static str, String)>);

/// One row of the standing table: what is set up in a fresh home (which
/// is also the working folder), the command run there, and the outcome a
/// user must get.
struct Case {
    /// The surface the input arrives through.
    surface: &'static str,
    /// What the input is.
    name: &'static str,
    /// Prepares the home and returns the arguments and environment.
    setup: fn(&Path) -> Invocation,
    /// The exit status.
    code: i32,
    /// Text standard error must hold (diagnostic codes among it).
    stderr: &'static [&'static str],
    /// Checks on the home after the command (nothing published...).
    after: fn(&Path),
    /// The working folder, relative to the home.
    cwd: &'static str,
    /// A signal sent to the command once the file `started` appears in the
    /// home (0: none).
    signal: i32,
}

fn sparse(path: &Path, len: u64) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

fn fifo(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

fn args(list: &[&str]) -> Vec<OsString> {
    os(list)
}

fn nothing(_: &Path) {}

fn no_session_published(home: &Path) {
    let list = run(home, &["session", "list", "--json"], 0).0;
    assert!(list.trim().is_empty(), "a session was published: {list}");
}

fn no_plugin_installed(home: &Path) {
    let list = run(home, &["plugin", "list"], 0).0;
    assert!(!list.contains("test/hostile"), "{list}");
}

/// A plugin folder named `test/hostile` under `home`, its manifest
/// followed by `extra` and its component `wasm`.
fn plugin_folder(home: &Path, extra: &str, wasm: &[u8]) -> String {
    let folder = home.join("hostile-src");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("plugin.kdl"),
        format!(
            "name \"test/hostile\"\nversion \"0.1.0\"\ndescription \"hostile\"\napi 1\nworld \"extension\"\n{extra}"
        ),
    )
    .unwrap();
    std::fs::write(folder.join("plugin.wasm"), wasm).unwrap();
    folder.display().to_string()
}

/// A one-entry dump whose entry is followed by `more` lines.
fn dump_with(home: &Path, more: &[&str]) -> String {
    let path = home.join("dump.jsonl");
    let mut text = String::from(
        r#"{"type":"header","format":1,"id":"0123456789abcdef0123456789abcdef","created_ms":1}
{"type":"entry","id":1,"parent":0,"timestamp_ms":1,"kind":"user_message","pairing":0,"content":{"role":"user","text":"hi"}}
"#,
    );
    for line in more {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const CASES: &[Case] = &[
    // arguments
    Case {
        surface: "arguments",
        name: "a prompt that is not UTF-8",
        setup: |_| {
            (
                vec!["eval".into(), OsString::from_vec(b"caf\xe9".to_vec())],
                vec![],
            )
        },
        code: 2,
        stderr: &["[cli.invalid-utf8]", "is not valid UTF-8"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "arguments",
        name: "a turn limit of 0",
        setup: |_| {
            (
                args(&["eval", "--provider", "mock", "--max-turns", "0", "hi"]),
                vec![],
            )
        },
        code: 2,
        stderr: &["a run of 0 turns would send nothing and run no tool"],
        after: no_session_published,
        cwd: "",
        signal: 0,
    },
    // environment
    Case {
        surface: "environment",
        name: "an option's variable with a value it cannot take",
        setup: |_| {
            (
                args(&["eval", "--provider", "mock", "--no-session", "hi"]),
                vec![("SMITH_APPROVAL", "whenever".to_owned())],
            )
        },
        code: 1,
        stderr: &["[config.invalid-value]", "SMITH_APPROVAL"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "environment",
        name: "SMITH_INPUT_LIMIT_MIB raises the input limits",
        setup: |home| {
            // A script of 20 MiB (padded): past the 16 MiB limit, within the
            // raised one, so it is read and played.
            let script = home.join("big-script.json");
            let mut text = r#"[[{"text": "padded"}, {"stop": {"reason": "end"}}]]"#.to_owned();
            text.push_str(&" ".repeat(20 << 20));
            std::fs::write(&script, text).unwrap();
            (
                vec![
                    "eval".into(),
                    "--provider".into(),
                    "mock".into(),
                    "--no-session".into(),
                    "--mock-script".into(),
                    script.into(),
                    "hi".into(),
                ],
                vec![("SMITH_INPUT_LIMIT_MIB", "32".to_owned())],
            )
        },
        code: 0,
        stderr: &[],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "configuration",
        name: "a configuration file that is a FIFO",
        setup: |home| {
            fifo(&home.join("config.kdl"));
            (args(&["config", "show"]), vec![])
        },
        code: 1,
        stderr: &["[config.not-a-file]", "a FIFO"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "configuration",
        name: "a configuration file of 17 MiB",
        setup: |home| {
            sparse(&home.join("config.kdl"), 17 << 20);
            (
                args(&["eval", "--provider", "mock", "--no-session", "hi"]),
                vec![],
            )
        },
        code: 1,
        stderr: &["[config.too-large]", "17825792 bytes"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    // manifests
    Case {
        surface: "manifests",
        name: "a plugin folder holding a 2 GiB sparse file",
        setup: |home| {
            let folder = plugin_folder(home, "", b"\0asm\x0d\0\x01\0");
            sparse(&Path::new(&folder).join("data.bin"), 2 << 30);
            (args(&["plugin", "install", &folder]), vec![])
        },
        code: 1,
        stderr: &[
            "holds 2 GiB (2147483648 bytes)",
            "at most 256 MiB",
            "nothing was copied",
            "SMITH_INPUT_LIMIT_MIB",
        ],
        after: no_plugin_installed,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "manifests",
        name: "a plugin manifest of 21 MB",
        setup: |home| {
            let padding = format!("// {}\n", "x".repeat(21_000_000));
            let folder = plugin_folder(home, &padding, b"\0asm\x0d\0\x01\0");
            (args(&["plugin", "install", &folder]), vec![])
        },
        code: 1,
        stderr: &["plugin manifest", "is too large to read", "at most 1 MiB"],
        after: no_plugin_installed,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "manifests",
        name: "a core module instead of a component",
        setup: |home| {
            let folder = plugin_folder(home, "", b"\0asm\x01\0\0\0");
            (args(&["plugin", "install", &folder]), vec![])
        },
        code: 1,
        stderr: &[
            "is a core WebAssembly module, not a component",
            "wasm32-wasip2",
        ],
        after: no_plugin_installed,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "manifests",
        name: "an installed plugin's manifest grown to 21 MB",
        setup: |home| {
            common::install_guest(home, "test/grown", "smith_plugin_kit.wasm", "    ui\n");
            let manifest = walk(&home.join("data"))
                .into_iter()
                .find(|p| p.ends_with("grown/plugin.kdl"))
                .unwrap();
            let mut text = std::fs::read_to_string(&manifest).unwrap();
            text.push_str(&format!("// {}\n", "x".repeat(21_000_000)));
            std::fs::write(&manifest, text).unwrap();
            (args(&["plugin", "list"]), vec![])
        },
        code: 0,
        stderr: &[],
        after: |home| {
            let out = run(home, &["plugin", "list"], 0).0;
            assert!(out.contains("test/grown"), "{out}");
            assert!(out.contains("is too large to read"), "{out}");
        },
        cwd: "",
        signal: 0,
    },
    // scripts
    Case {
        surface: "scripts",
        name: "/dev/zero as the mock script",
        setup: |_| {
            (
                args(&[
                    "eval",
                    "--provider",
                    "mock",
                    "--no-session",
                    "--mock-script",
                    "/dev/zero",
                    "hi",
                ]),
                vec![],
            )
        },
        code: 1,
        stderr: &[
            "[input.too-large]",
            "a character device that delivered more than the limit",
            "at most 16 MiB",
        ],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "scripts",
        name: "a FIFO nobody writes as the mock script",
        setup: |home| {
            let pipe = home.join("script.fifo");
            fifo(&pipe);
            (
                vec![
                    "eval".into(),
                    "--provider".into(),
                    "mock".into(),
                    "--no-session".into(),
                    "--mock-script".into(),
                    pipe.into(),
                    "hi".into(),
                ],
                vec![],
            )
        },
        code: 1,
        stderr: &["[input.timed-out]", "did not reach its end within 10 s"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "scripts",
        name: "a 4 GiB sparse mock script",
        setup: |home| {
            let script = home.join("huge.json");
            sparse(&script, 4 << 30);
            (
                vec![
                    "eval".into(),
                    "--provider".into(),
                    "mock".into(),
                    "--no-session".into(),
                    "--mock-script".into(),
                    script.into(),
                    "hi".into(),
                ],
                vec![],
            )
        },
        code: 1,
        stderr: &["[input.too-large]", "it holds 4 GiB (4294967296 bytes)"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "scripts",
        name: "a folder as the mock script",
        setup: |home| {
            (
                vec![
                    "eval".into(),
                    "--provider".into(),
                    "mock".into(),
                    "--no-session".into(),
                    "--mock-script".into(),
                    home.into(),
                    "hi".into(),
                ],
                vec![],
            )
        },
        code: 1,
        stderr: &["[input.not-a-file]", "it is a folder"],
        after: nothing,
        cwd: "",
        signal: 0,
    },
    // imports
    Case {
        surface: "imports",
        name: "/dev/zero as a dump",
        setup: |_| (args(&["session", "import", "/dev/zero"]), vec![]),
        code: 1,
        stderr: &["dump line 1: the line is longer than 128 MiB"],
        after: no_session_published,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "imports",
        name: "a dump with an entry id twice",
        setup: |home| {
            let dump = dump_with(
                home,
                &[
                    r#"{"type":"entry","id":1,"parent":0,"timestamp_ms":2,"kind":"user_message","pairing":0,"content":{"role":"user","text":"again"}}"#,
                ],
            );
            (args(&["session", "import", &dump]), vec![])
        },
        code: 1,
        stderr: &["dump line 3: entry id 1 appears a second time (first on line 2)"],
        after: no_session_published,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "imports",
        name: "a dump whose entry names a parent no line holds",
        setup: |home| {
            let dump = dump_with(
                home,
                &[
                    r#"{"type":"entry","id":2,"parent":9,"timestamp_ms":2,"kind":"user_message","pairing":0,"content":{"role":"user","text":"lost"}}"#,
                ],
            );
            (args(&["session", "import", &dump]), vec![])
        },
        code: 1,
        stderr: &["dump line 3: entry 2 names parent 9, which no earlier line holds"],
        after: no_session_published,
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "imports",
        name: "a dump whose message could not be resumed",
        setup: |home| {
            let dump = dump_with(
                home,
                &[
                    r#"{"type":"entry","id":2,"parent":1,"timestamp_ms":2,"kind":"assistant_message","pairing":0,"content":{"bogus":1}}"#,
                ],
            );
            (args(&["session", "import", &dump]), vec![])
        },
        code: 1,
        stderr: &[
            "[session.invalid-import]",
            "session entry 2",
            "is not a message this build understands",
            "nothing was published",
        ],
        after: no_session_published,
        cwd: "",
        signal: 0,
    },
    // project files
    Case {
        surface: "project files",
        name: "a 4 GiB sparse file in an untrusted project's .smith",
        setup: |home| {
            std::fs::create_dir_all(home.join("proj/.git")).unwrap();
            std::fs::create_dir_all(home.join("proj/.smith")).unwrap();
            std::fs::write(home.join("proj/.smith/config.kdl"), "model \"m\"\n").unwrap();
            sparse(&home.join("proj/.smith/big.bin"), 4 << 30);
            (
                args(&["eval", "--provider", "mock", "--no-session", "hi"]),
                vec![],
            )
        },
        code: 0,
        stderr: &["[trust.untrusted-project]"],
        after: nothing,
        cwd: "proj",
        signal: 0,
    },
    Case {
        surface: "project files",
        name: "trusting a project whose .smith holds 4 GiB",
        setup: |home| {
            std::fs::create_dir_all(home.join("proj/.git")).unwrap();
            std::fs::create_dir_all(home.join("proj/.smith")).unwrap();
            sparse(&home.join("proj/.smith/big.bin"), 4 << 30);
            (
                args(&["trust", &home.join("proj").display().to_string()]),
                vec![],
            )
        },
        code: 1,
        stderr: &[
            "[trust.too-large]",
            "that file holds 4 GiB",
            "at most 256 MiB",
        ],
        after: nothing,
        cwd: "proj",
        signal: 0,
    },
    // signals: each ends a run whose command is running the way Ctrl+C
    // does: the command's process group ended, the run recorded as
    // aborted, the resume command printed (nowhere after a hangup, which
    // took the terminal away), exit 128 + the signal.
    Case {
        surface: "signals",
        name: "SIGINT while a command runs",
        setup: signalled_run,
        code: 130,
        stderr: &["[bash] aborted", "smith eval --session sig"],
        after: command_ended_and_run_aborted,
        cwd: "",
        signal: libc::SIGINT,
    },
    Case {
        surface: "signals",
        name: "SIGTERM while a command runs",
        setup: signalled_run,
        code: 143,
        stderr: &["[bash] aborted", "smith eval --session sig"],
        after: command_ended_and_run_aborted,
        cwd: "",
        signal: libc::SIGTERM,
    },
    Case {
        surface: "signals",
        name: "SIGHUP while a command runs",
        setup: signalled_run,
        code: 129,
        stderr: &[],
        after: command_ended_and_run_aborted,
        cwd: "",
        signal: libc::SIGHUP,
    },
    Case {
        surface: "signals",
        name: "SIGQUIT while a command runs",
        setup: signalled_run,
        code: 131,
        stderr: &["[bash] aborted", "smith eval --session sig"],
        after: command_ended_and_run_aborted,
        cwd: "",
        signal: libc::SIGQUIT,
    },
    // plugin behaviors
    Case {
        surface: "plugin behaviors",
        name: "an extension that blocks the user's input",
        setup: |home| {
            lifecycle_guest(home);
            (
                args(&[
                    "eval",
                    "--provider",
                    "mock",
                    "--name",
                    "blocked",
                    "please block input",
                ]),
                vec![],
            )
        },
        code: 1,
        stderr: &["the extension test/lifecycle blocked this input, so it was not sent"],
        after: |home| {
            let dump = common::dump(home, "blocked");
            assert!(
                !dump.iter().any(|r| r.to_string().contains("block input")),
                "{dump:?}"
            );
        },
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "plugin behaviors",
        name: "an extension returning 100,000 notices from one handler",
        setup: |home| {
            lifecycle_guest(home);
            let script = write_script(
                home,
                &serde_json::json!([[{"text": "done"}, {"stop": {"reason": "end"}}]]),
            );
            (
                args(&[
                    "eval",
                    "--name",
                    "flooded",
                    "--mock-script",
                    &script,
                    "flood notices",
                ]),
                vec![],
            )
        },
        code: 0,
        stderr: &[
            "[plugin.rate-limited]",
            "plugin test/lifecycle sent more than 500 UI intents in one run",
        ],
        after: |home| {
            let limits: Vec<Value> = common::dump(home, "flooded")
                .into_iter()
                .filter(|e| e["content"]["type"] == "plugin_limits")
                .collect();
            assert_eq!(limits.len(), 1, "{limits:?}");
            assert_eq!(
                limits[0]["content"]["dropped"][0]["dropped"], 99_500,
                "{limits:?}"
            );
        },
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "plugin behaviors",
        name: "an extension writing 100,000 log lines (and 100,000 notices) in one handler",
        setup: |home| {
            lifecycle_guest(home);
            let script = write_script(
                home,
                &serde_json::json!([[{"text": "done"}, {"stop": {"reason": "end"}}]]),
            );
            (
                args(&[
                    "eval",
                    "--name",
                    "flooded",
                    "--mock-script",
                    &script,
                    "flood the host",
                ]),
                vec![],
            )
        },
        code: 0,
        stderr: &[
            "[plugin.rate-limited]",
            "plugin test/lifecycle sent more than 1000 log lines in one run",
            "after 1000 in one call had been dropped (a call keeps at most 1000, a run 1000: `plugins.max-log-lines`), so the call was stopped and the plugin destroyed",
        ],
        after: |home| {
            let limits: Vec<Value> = common::dump(home, "flooded")
                .into_iter()
                .filter(|e| e["content"]["type"] == "plugin_limits")
                .collect();
            assert_eq!(limits.len(), 1, "{limits:?}");
            assert_eq!(
                limits[0]["content"]["dropped"],
                serde_json::json!([{"kind": "log-lines", "limit": 1000, "dropped": 1000}]),
                "{limits:?}"
            );
        },
        cwd: "",
        signal: 0,
    },
    Case {
        surface: "plugin behaviors",
        name: "an extension that never returns from its first call",
        setup: |home| {
            common::install_guest(home, "test/stuck", "smith_plugin_stuck.wasm", "    ui\n");
            (
                args(&["eval", "--provider", "mock", "--no-session", "hi"]),
                vec![],
            )
        },
        code: 0,
        stderr: &[
            "plugin test/stuck (call contribute): the plugin ran past its 2000 ms deadline and was destroyed",
            "smith plugin disable test/stuck",
        ],
        after: nothing,
        cwd: "",
        signal: 0,
    },
];

/// A run whose first tool call is a command that marks its start, then
/// would mark its end a second later (`--name sig`).
fn signalled_run(home: &Path) -> Invocation {
    let script = write_script(
        home,
        &serde_json::json!([
            [
                {"tool_call": {"id": "c1", "name": "bash",
                    "arguments": {"command": "touch started && sleep 1 && touch finished"}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]),
    );
    (
        args(&[
            "eval",
            "--yes",
            "--name",
            "sig",
            "--mock-script",
            &script,
            "go",
        ]),
        vec![],
    )
}

/// The signalled command never finished, and the session says the run was
/// aborted.
fn command_ended_and_run_aborted(home: &Path) {
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !home.join("finished").exists(),
        "the command ran on after smith ended"
    );
    let dump = common::dump(home, "sig");
    assert!(
        dump.iter().any(|r| r.to_string().contains("\"aborted\"")),
        "{dump:?}"
    );
}

/// test/lifecycle installed in `home`, granted `ui`.
fn lifecycle_guest(home: &Path) {
    common::install_guest(
        home,
        "test/lifecycle",
        "smith_plugin_lifecycle.wasm",
        "    ui\n",
    );
}

#[test]
fn the_hostile_input_table() {
    let mut failures = Vec::new();
    for case in CASES {
        let home = tempfile::tempdir().unwrap();
        let (args, env) = (case.setup)(home.path());
        let mut command = Command::new(env!("CARGO_BIN_EXE_smith"));
        command
            .env("SMITH_HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("NO_COLOR", "1")
            .current_dir(home.path().join(case.cwd))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        default_signals(&mut command);
        for (k, v) in &env {
            command.env(k, v);
        }
        let started = Instant::now();
        let mut child = command.spawn().unwrap();
        if case.signal != 0 {
            let marker = home.path().join(case.cwd).join("started");
            while !marker.exists()
                && child.try_wait().unwrap().is_none()
                && started.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            let pid = i32::try_from(child.id()).unwrap();
            // SAFETY: signals our own child process.
            unsafe { libc::kill(pid, case.signal) };
        }
        while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        let mut wrong = Vec::new();
        if out.status.code() != Some(case.code) {
            wrong.push(format!("exit {:?}, not {}", out.status.code(), case.code));
        }
        if stderr.contains("panicked") {
            wrong.push("a panic".to_owned());
        }
        for want in case.stderr {
            if !stderr.contains(want) {
                wrong.push(format!("no {want:?} on stderr"));
            }
        }
        if wrong.is_empty() {
            (case.after)(home.path());
        } else {
            failures.push(format!(
                "[{}] {}: {}\nstderr: {stderr}",
                case.surface,
                case.name,
                wrong.join("; ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
