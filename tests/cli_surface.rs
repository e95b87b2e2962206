//! The top-level command line end to end: a mistyped command line runs
//! nothing (status 2, "did you mean", no session) and `--` forces a
//! prompt; `-c`, `--resume` and `--session` continue a stored session with
//! a prompt and `--provider` and `-c` reach the interface without one;
//! standard input is the prompt or is appended to it when piped; `--model`
//! applies with a prompt, piped and in the interface, a bare `--resume` and
//! `--session` open the interface on their session; output to a reader
//! that went away ends quietly with status 141; and the shell completions
//! and manual pages name every command.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use smith_engine::journal::store::resume;
use smith_engine::provider::Message;
use smith_store::Store;

/// Every top-level command, as `smith --help` lists them.
const COMMANDS: &[&str] = &[
    "bench",
    "config",
    "context",
    "trust",
    "sandbox",
    "doctor",
    "session",
    "skills",
    "hooks",
    "eval",
    "tui",
    "models",
    "auth",
    "secret",
    "rpc",
    "mcp",
    "checkpoint",
    "replay",
    "plugin",
    "update",
    "help",
    "completions",
    "man",
];

/// `smith` in `home` (its SMITH_HOME, HOME and working folder) with no
/// credential in the environment.
fn smith(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.env("SMITH_HOME", home)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("XDG_DATA_HOME")
        .env_remove("SMITH_PROVIDER")
        .env_remove("SMITH_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY")
        .current_dir(home);
    cmd
}

/// Runs `smith ARGS` with `stdin` piped to it (closed at once when empty).
fn run(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = smith(home)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(home: &Path, args: &[&str], stdin: &str) -> String {
    let out = run(home, args, stdin);
    assert_eq!(
        out.status.code(),
        Some(0),
        "smith {args:?} failed:\nstdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn home_with_readme() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("README.md"), "# cli surface\n").unwrap();
    home
}

fn store(home: &Path) -> Store {
    Store::open(home.join("data").join("sessions")).unwrap()
}

/// The user prompts of every stored session, by session.
fn prompts(home: &Path) -> Vec<Vec<String>> {
    let store = store(home);
    store
        .list()
        .unwrap()
        .iter()
        .map(|info| {
            let session = store.load(&info.id.to_hex()).unwrap();
            resume(&session)
                .unwrap()
                .history
                .iter()
                .filter_map(|m| match m {
                    Message::User { text, .. } => Some(text.clone()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_mistyped_command_line_runs_nothing_and_says_what_was_meant() {
    let home = home_with_readme();
    let cases: &[(&[&str], &str)] = &[
        (&["sesion", "list"], "did you mean `smith session list`?"),
        (&["sessions"], "did you mean `smith session`?"),
        (
            &["completion", "bash"],
            "did you mean `smith completions bash`?",
        ),
        (&["docter"], "did you mean `smith doctor`?"),
        (&["login"], "smith has no command `login`"),
        // `acp` is a command: after top-level options it is refused.
        (&["acp"], "did you mean `smith acp`?"),
        (&["list"], "did you mean `smith session list`"),
        (
            &["continue", "the", "refactor"],
            "did you mean `smith --continue the refactor`?",
        ),
        (&["fix", "the", "tests", "--modle", "m"], "`--model`"),
        // A command after top-level options would be taken for a prompt.
        (&["session", "list"], "did you mean `smith session list`?"),
        (
            &["-c", "session", "list"],
            "did you mean `smith session list`?",
        ),
    ];
    for (args, expected) in cases {
        let mut line = vec!["--provider", "mock"];
        line.extend_from_slice(args);
        let out = run(home.path(), &line, "");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "smith {line:?}: {stderr}");
        assert!(stderr.contains(expected), "smith {line:?}: {stderr}");
        // What, why and next, naming the word.
        assert!(
            stderr.contains(args[0]) || stderr.contains("--modle"),
            "{stderr}"
        );
        assert!(
            stderr.contains("put `--` before them") || stderr.contains("`smith -- "),
            "the way to send it anyway is named: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    }
    assert!(
        store(home.path()).list().unwrap().is_empty(),
        "a refused command line made no session"
    );
}

/// A mistyped option before the prompt is refused by the parser with the
/// option meant: status 2, nothing run, no session.
#[test]
fn a_mistyped_option_before_the_prompt_names_the_option_meant() {
    let home = home_with_readme();
    let out = run(
        home.path(),
        &["--provider", "mock", "--modle", "m", "fix", "it"],
        "",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unexpected argument '--modle'"), "{stderr}");
    assert!(stderr.contains("'--model'"), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(store(home.path()).list().unwrap().is_empty());
}

#[test]
fn a_refusal_never_shows_a_credential_written_into_the_prompt() {
    let home = home_with_readme();
    let secret = "sk-ant-cli-surface-SECRET-4471";
    let out = smith(home.path())
        .env("ANTHROPIC_API_KEY", secret)
        .args(["fix", "it", "--modle", secret])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("[cli.option-in-prompt]"), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");
    assert!(stderr.contains("[redacted]"), "{stderr}");
}

#[test]
fn a_prompt_after_a_double_dash_runs_whatever_it_looks_like() {
    let home = home_with_readme();
    let stdout = ok(
        home.path(),
        &["--provider", "mock", "--", "sesion", "list"],
        "",
    );
    assert!(stdout.contains("You said \"sesion list\""), "{stdout}");
    let stdout = ok(
        home.path(),
        &["--provider", "mock", "fix", "the", "tests"],
        "",
    );
    assert!(stdout.contains("You said \"fix the tests\""), "{stdout}");
    assert_eq!(
        prompts(home.path()).len(),
        2,
        "each prompt ran in a session of its own"
    );
}

#[test]
fn continue_resume_and_session_at_the_top_level_run_on_the_stored_session() {
    let home = home_with_readme();
    ok(
        home.path(),
        &["--provider", "mock", "first", "question"],
        "",
    );
    let stdout = ok(
        home.path(),
        &["--provider", "mock", "-c", "second", "question"],
        "",
    );
    assert!(stdout.contains("You said \"second question\""), "{stdout}");
    ok(
        home.path(),
        &["--provider", "mock", "--continue", "third", "question"],
        "",
    );
    let id = store(home.path()).latest().unwrap().unwrap().id.to_hex();
    ok(
        home.path(),
        &["--provider", "mock", "--resume", &id, "fourth", "question"],
        "",
    );
    ok(
        home.path(),
        &[
            "--provider",
            "mock",
            "--session",
            &id[..8],
            "fifth",
            "question",
        ],
        "",
    );
    // A prompt for a session is meant as one, even a single word.
    let stdout = ok(home.path(), &["--provider", "mock", "-c", "yes"], "");
    assert!(stdout.contains("You said \"yes\""), "{stdout}");
    // A prompt piped in runs on the session too.
    ok(
        home.path(),
        &["--provider", "mock", "-c"],
        "piped follow-up\n",
    );
    assert_eq!(
        prompts(home.path()),
        vec![vec![
            "first question".to_owned(),
            "second question".to_owned(),
            "third question".to_owned(),
            "fourth question".to_owned(),
            "fifth question".to_owned(),
            "yes".to_owned(),
            "piped follow-up".to_owned(),
        ]],
        "every answer is on the one session"
    );
}

#[test]
fn continue_with_a_prompt_and_no_stored_session_is_refused() {
    let home = home_with_readme();
    let out = run(home.path(), &["--provider", "mock", "-c", "and", "now"], "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("there is no session to continue (--continue)"),
        "{stderr}"
    );
    assert!(stderr.contains("without --continue"), "{stderr}");
    assert!(store(home.path()).list().unwrap().is_empty());
}

#[test]
fn options_with_nothing_to_run_off_a_terminal_are_refused_not_dropped() {
    let home = home_with_readme();
    let out = run(home.path(), &["--provider", "mock"], "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("smith --provider was given nothing to run"),
        "{stderr}"
    );
    // Without options the overview is printed, as before.
    let out = run(home.path(), &[], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Usage: smith"));
    assert!(store(home.path()).list().unwrap().is_empty());
}

#[test]
fn piped_standard_input_is_the_prompt_or_is_appended_to_it() {
    let home = home_with_readme();
    let stdout = ok(home.path(), &["--provider", "mock"], "hello from a pipe\n");
    assert!(
        stdout.contains("You said \"hello from a pipe\""),
        "{stdout}"
    );
    let stdout = ok(
        home.path(),
        &["--provider", "mock", "explain", "this"],
        "line one\nline two\n",
    );
    assert!(
        stdout.contains("You said \"explain this\\n\\nline one\\nline two\""),
        "{stdout}"
    );
    // Empty standard input adds nothing.
    let stdout = ok(home.path(), &["--provider", "mock", "just", "this"], "");
    assert!(stdout.contains("You said \"just this\""), "{stdout}");
    assert_eq!(
        prompts(home.path()).concat().len(),
        3,
        "three prompts, each sent once"
    );
    // Standard input that is not text runs nothing and says so.
    let mut child = smith(home.path())
        .args(["--provider", "mock", "explain", "this"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"caf\xe9\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("[input.not-utf8]"), "{stderr}");
    assert!(
        stderr.contains("standard input (piped to smith with a prompt) is not UTF-8"),
        "{stderr}"
    );
    assert!(stderr.contains("< /dev/null"), "{stderr}");
    assert_eq!(prompts(home.path()).concat().len(), 3, "nothing more ran");
}

#[test]
fn the_bash_completion_names_every_command_and_parses() {
    let home = tempfile::tempdir().unwrap();
    let script = ok(home.path(), &["completions", "bash"], "");
    for command in COMMANDS {
        assert!(script.contains(command), "bash completion lacks {command}");
    }
    let path = home.path().join("smith.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "bash -n rejects the script: {}",
        text(&check.stderr)
    );
    // The script really completes: COMPREPLY after `smith ses`.
    let complete = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(smith ses); COMP_CWORD=1; COMP_LINE='smith ses'; COMP_POINT=9; _smith smith ses smith; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        ))
        .output()
        .unwrap();
    assert_eq!(
        text(&complete.stdout).trim(),
        "session",
        "{}",
        text(&complete.stderr)
    );
}

#[test]
fn the_zsh_and_fish_completions_name_every_command() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["zsh", "fish"] {
        let script = ok(home.path(), &["completions", shell], "");
        for command in COMMANDS {
            assert!(
                script.contains(command),
                "{shell} completion lacks {command}"
            );
        }
    }
    let out = run(home.path(), &["completions", "tcsh"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("tcsh"), "{}", text(&out.stderr));
}

#[test]
fn the_manual_pages_name_every_command_and_are_valid_roff() {
    let home = tempfile::tempdir().unwrap();
    let page = ok(home.path(), &["man"], "");
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH smith 1"), "{page}");
    for command in COMMANDS {
        assert!(
            page.contains(&format!("smith\\-{command}(1)")),
            "the page lacks {command}"
        );
    }
    let sub = ok(home.path(), &["man", "session", "list"], "");
    assert!(sub.contains(".TH smith-session-list 1"), "{sub}");
    for page in [page, sub] {
        let mut groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("groff is installed (groff-base)");
        groff
            .stdin
            .take()
            .unwrap()
            .write_all(page.as_bytes())
            .unwrap();
        let out = groff.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(
            out.stderr.is_empty(),
            "groff warns about the page: {}",
            text(&out.stderr)
        );
    }
    let out = run(home.path(), &["man", "sesion"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`sesion`"));
}

/// A pseudo-terminal pair.
struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
}

fn open_pty() -> Pty {
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
    assert_eq!(rc, 0, "openpty failed: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two fresh descriptors we now own.
    unsafe {
        Pty {
            master: std::fs::File::from_raw_fd(master),
            slave: OwnedFd::from_raw_fd(slave),
        }
    }
}

/// `smith ARGS` on a terminal of its own; returns the terminal and what it
/// has written so far.
fn on_terminal(
    home: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Pty, std::process::Child, Arc<Mutex<Vec<u8>>>) {
    let pty = open_pty();
    let slave = pty.slave.as_raw_fd();
    let mut cmd = smith(home);
    cmd.args(args)
        .env("TERM", "xterm-256color")
        .env_remove("SMITH_TUI_CAPS")
        .envs(env.iter().copied());
    // SAFETY: dup of a valid descriptor.
    let (i, o, e) = unsafe { (libc::dup(slave), libc::dup(slave), libc::dup(slave)) };
    // SAFETY: fresh descriptors handed to the child; the pre-exec hook
    // only makes the terminal the child's controlling one.
    unsafe {
        cmd.stdin(Stdio::from_raw_fd(i))
            .stdout(Stdio::from_raw_fd(o))
            .stderr(Stdio::from_raw_fd(e));
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    let output = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&output);
    let mut reader = pty.master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink.lock().unwrap().extend_from_slice(&buf[..n]),
            }
        }
    });
    (pty, child, output)
}

/// The screen the output draws: a minimal interpreter of what the
/// interface writes (cursor positioning, clears, text; other sequences are
/// skipped).
fn render(bytes: &[u8], rows: usize, cols: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut grid = vec![vec![' '; cols]; rows];
    let (mut r, mut c) = (0usize, 0usize);
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch != '\u{1b}' {
            if !ch.is_control() && r < rows && c < cols {
                grid[r][c] = ch;
                c += 1;
            }
            continue;
        }
        match chars.next() {
            Some('[') => {
                let mut params = String::new();
                let mut fin = ' ';
                for p in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&p) {
                        fin = p;
                        break;
                    }
                    params.push(p);
                }
                match fin {
                    'H' => {
                        let mut it = params.split(';').map(|n| n.parse::<usize>().unwrap_or(1));
                        r = it.next().unwrap_or(1).saturating_sub(1);
                        c = it.next().unwrap_or(1).saturating_sub(1);
                    }
                    'J' if params == "2" => grid = vec![vec![' '; cols]; rows],
                    _ => {}
                }
            }
            Some(']') => {
                for p in chars.by_ref() {
                    if p == '\u{7}' {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    grid.into_iter()
        .map(|row| row.into_iter().collect())
        .collect()
}

/// Waits until `needle` is on the drawn screen; returns the screen.
fn wait_for(output: &Mutex<Vec<u8>>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let screen = render(&output.lock().unwrap(), 24, 80).join("\n");
        if screen.contains(needle) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} never appeared on the screen:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Quits the interface (Ctrl+C, then Ctrl+C again if it asks) and waits
/// for the process.
fn quit(mut pty: Pty, mut child: std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    pty.master.write_all(b"\x03").unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0), "{status:?}");
            return;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the interface did not quit");
        }
        std::thread::sleep(Duration::from_millis(200));
        let _ = pty.master.write_all(b"\x03");
    }
}

#[test]
fn provider_without_a_prompt_reaches_the_interface() {
    let home = home_with_readme();
    // A credential that would be chosen if --provider were dropped.
    let (mut pty, child, output) = on_terminal(
        home.path(),
        &["--provider", "mock"],
        &[("ANTHROPIC_API_KEY", "sk-ant-fake-cli-surface")],
    );
    let screen = wait_for(&output, "F1 help");
    assert!(screen.contains(" ready · mock-1 "), "{screen}");
    pty.master.write_all(b"what is here?").unwrap();
    wait_for(&output, "what is here?");
    pty.master.write_all(b"\r").unwrap();
    // The offline demo answered: the scripted provider was chosen.
    wait_for(
        &output,
        "You said \"what is here?\". This is the offline demo",
    );
    wait_for(&output, "# cli surface");
    quit(pty, child);
}

#[test]
fn continue_without_a_prompt_opens_the_interface_on_the_latest_session() {
    let home = home_with_readme();
    let work_name = "earlier-work";
    ok(
        home.path(),
        &["eval", "--provider", "mock", "--name", work_name, "earlier"],
        "",
    );
    let (pty, child, output) = on_terminal(home.path(), &["--provider", "mock", "-c"], &[]);
    wait_for(&output, &format!("session {work_name}"));
    quit(pty, child);
    let (pty, child, output) = on_terminal(
        home.path(),
        &["--provider", "mock", "--resume", work_name],
        &[],
    );
    wait_for(&output, &format!("session {work_name}"));
    quit(pty, child);
}

#[test]
fn a_prompt_on_a_terminal_never_reads_the_terminal() {
    let home = home_with_readme();
    let (_pty, mut child, output) =
        on_terminal(home.path(), &["--provider", "mock", "hello", "there"], &[]);
    // Nothing is typed: the run must not wait for the terminal.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!(
                "smith waited for the terminal:\n{}",
                text(&output.lock().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(100));
    let seen = text(&output.lock().unwrap());
    assert_eq!(status.code(), Some(0), "{seen}");
    assert!(seen.contains("You said \"hello there\""), "{seen}");
}

/// Output whose reader has gone away (`| head` that ended before smith
/// wrote) ends each command quietly with status 141, as SIGPIPE would:
/// a prompt's answer, `eval --json` and `--output-format stream-json`,
/// the completions and the manual page. Nothing is said on standard
/// error and nothing panics.
#[test]
fn output_to_a_reader_that_went_away_ends_quietly() {
    let home = home_with_readme();
    let cases: &[&[&str]] = &[
        &["--provider", "mock", "say", "hello", "there"],
        &["eval", "--provider", "mock", "--json", "say hello there"],
        &[
            "eval",
            "--provider",
            "mock",
            "--output-format",
            "stream-json",
            "say hello there",
        ],
        &["completions", "bash"],
        &["man"],
    ];
    for args in cases {
        // The reader is gone before smith starts: closed before the spawn,
        // so that no write can reach the pipe first however the two
        // processes are scheduled.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = smith(home.path())
            .args(*args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "smith {args:?}: {stderr}");
        assert!(stderr.is_empty(), "smith {args:?}: {stderr}");
    }
}

/// `--model` at the top level applies in every mode: with a prompt, with
/// a piped prompt and in the interface; a bare `--resume` opens the
/// interface on the latest session and `--session REF` on the one named.
#[test]
fn model_session_and_a_bare_resume_apply_at_the_top_level_in_every_mode() {
    let home = home_with_readme();
    let h = home.path();
    ok(
        h,
        &[
            "--provider",
            "mock",
            "--model",
            "mock-large",
            "first",
            "question",
        ],
        "",
    );
    ok(
        h,
        &["--provider", "mock", "--model", "mock-large"],
        "piped question\n",
    );
    let store = store(h);
    let sessions = store.list().unwrap();
    assert_eq!(sessions.len(), 2);
    for info in &sessions {
        let dump = ok(h, &["session", "dump", &info.id.to_hex()], "");
        let model_changes: Vec<&str> = dump
            .lines()
            .filter(|l| l.contains(r#""kind":"model_change""#))
            .collect();
        assert!(
            !model_changes.is_empty()
                && model_changes
                    .iter()
                    .all(|l| l.contains(r#""model":"mock-large""#)),
            "{dump}"
        );
    }
    let (pty, child, output) =
        on_terminal(h, &["--provider", "mock", "--model", "mock-large"], &[]);
    let screen = wait_for(&output, " ready · mock-large ");
    assert!(screen.contains("F1 help"), "{screen}");
    quit(pty, child);
    // The latest session is the piped one.
    let (pty, child, output) = on_terminal(h, &["--provider", "mock", "--resume"], &[]);
    wait_for(&output, "session piped-question");
    quit(pty, child);
    let (pty, child, output) = on_terminal(
        h,
        &["--provider", "mock", "--session", "first-question"],
        &[],
    );
    wait_for(&output, "session first-question");
    quit(pty, child);
}
