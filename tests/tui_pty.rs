//! The interface in a real pseudo-terminal: every way out (normal exit,
//! error, panic, abort, SIGINT, SIGTERM, SIGHUP — the signals end it with
//! 128 plus their number and the command that continues the session)
//! leaves the terminal as it found it — the same termios, the alternate screen left, the cursor
//! shown, modifyOtherKeys off — and an end-to-end run with the scripted provider shows the tool
//! activity and the answer.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "common/http.rs"]
mod http;

struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
}

fn open_pty() -> Pty {
    let mut master = -1;
    let mut slave = -1;
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

/// The comparable part of a termios.
fn termios(fd: i32) -> (u32, u32, u32, u32, Vec<u8>) {
    let mut t = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: tcgetattr fills the struct on success.
    assert_eq!(unsafe { libc::tcgetattr(fd, t.as_mut_ptr()) }, 0);
    // SAFETY: initialised above.
    let t = unsafe { t.assume_init() };
    (t.c_iflag, t.c_oflag, t.c_cflag, t.c_lflag, t.c_cc.to_vec())
}

struct Session {
    pty: Pty,
    child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    before: (u32, u32, u32, u32, Vec<u8>),
    started: Instant,
    home: tempfile::TempDir,
    _work: tempfile::TempDir,
}

/// A test that fails before smith exits leaves no interface running.
impl Drop for Session {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn start(fault: Option<&str>) -> Session {
    start_with(fault, None)
}

/// Starts smith; `ignored` is a signal the child inherits as ignored.
fn start_with(fault: Option<&str>, ignored: Option<i32>) -> Session {
    start_prepared(fault, ignored, |_| {})
}

/// Starts smith after `prepare` has set up its home.
fn start_prepared(
    fault: Option<&str>,
    ignored: Option<i32>,
    prepare: impl FnOnce(&std::path::Path),
) -> Session {
    start_prepared_with(fault, ignored, prepare, &[])
}

/// [`start_prepared`] with more arguments for `smith tui`.
fn start_prepared_with(
    fault: Option<&str>,
    ignored: Option<i32>,
    prepare: impl FnOnce(&std::path::Path),
    args: &[&str],
) -> Session {
    start_provider(fault, ignored, prepare, &["--provider", "mock"], args, &[])
}

/// Starts `smith tui` with `provider` (its arguments), `args` and the
/// variables `env`, after `prepare` has set up its home.
fn start_provider(
    fault: Option<&str>,
    ignored: Option<i32>,
    prepare: impl FnOnce(&std::path::Path),
    provider: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
) -> Session {
    let pty = open_pty();
    let before = termios(pty.slave.as_raw_fd());
    let home = tempfile::tempdir().unwrap();
    prepare(home.path());
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("README.md"), "# Hello from the fixture\n").unwrap();
    let slave = pty.slave.as_raw_fd();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smith"));
    cmd.arg("tui")
        .args(provider)
        .arg("--cwd")
        .arg(work.path())
        .args(args)
        .env("SMITH_HOME", home.path())
        .env("TERM", "xterm-256color")
        .env_remove("SMITH_TUI_CAPS")
        .env_remove("NO_COLOR")
        .env_remove("SMITH_THINKING")
        .envs(env.iter().copied());
    if let Some(fault) = fault {
        cmd.env("SMITH_TUI_TEST_FAULT", fault);
    }
    // SAFETY: dup of a valid descriptor.
    let (i, o, e) = unsafe { (libc::dup(slave), libc::dup(slave), libc::dup(slave)) };
    // SAFETY: fresh descriptors handed to the child.
    unsafe {
        cmd.stdin(Stdio::from_raw_fd(i))
            .stdout(Stdio::from_raw_fd(o))
            .stderr(Stdio::from_raw_fd(e));
        cmd.pre_exec(move || {
            // Default dispositions, whatever the test runner inherited (a
            // background job starts with SIGINT and SIGQUIT ignored).
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            if let Some(signal) = ignored {
                libc::signal(signal, libc::SIG_IGN);
            }
            // A new session with the pty as its controlling terminal.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
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
    Session {
        pty,
        child,
        output,
        before,
        started,
        home,
        _work: work,
    }
}

/// The screen the output draws: a minimal interpreter of what the
/// interface writes (cursor positioning, clears, text; other sequences are
/// skipped). Only the latest alternate-screen session counts.
fn render(bytes: &[u8], rows: usize, cols: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut grid = vec![vec![' '; cols]; rows];
    let (mut r, mut c) = (0usize, 0usize);
    let mut chars = text.chars().peekable();
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

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

impl Session {
    fn output(&self) -> Vec<u8> {
        self.output.lock().unwrap().clone()
    }

    fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if find(&self.output(), needle.as_bytes()).is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "{needle:?} never appeared; output so far:\n{}",
            String::from_utf8_lossy(&self.output())
        );
    }

    /// Waits until `needle` is on the drawn screen.
    fn wait_for_screen(&self, needle: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = render(&self.output(), 24, 80);
            if screen.iter().any(|row| row.contains(needle)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared on the screen:\n{}",
                screen.join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `needle` is in the drawn screen's text, its rows
    /// joined with a space (so a line the interface wrapped still
    /// matches); returns that text.
    fn wait_for_text(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = render(&self.output(), 24, 80)
                .iter()
                .map(|row| row.trim())
                .collect::<Vec<_>>()
                .join(" ");
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared on the screen:\n{}",
                render(&self.output(), 24, 80).join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `needle` is drawn after the last `start` (the screen's
    /// rows joined with a space): text that was on the screen before
    /// `start` does not count.
    fn wait_for_after(&self, start: &str, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = render(&self.output(), 24, 80).join(" ");
            if text
                .rfind(start)
                .is_some_and(|at| text[at..].contains(needle))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared after {start:?} on the screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.pty.master.write_all(bytes).unwrap();
    }

    /// Resizes the terminal (the interface gets SIGWINCH) and gives it a
    /// moment to redraw.
    fn resize(&mut self, rows: u16, cols: u16) {
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: a valid descriptor and winsize.
        let rc = unsafe { libc::ioctl(self.pty.master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(
            rc,
            0,
            "TIOCSWINSZ failed: {}",
            std::io::Error::last_os_error()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    /// Waits for the first frame and checks that the interface really did
    /// change the terminal (so the restore checks are not vacuous).
    fn ready(&self) {
        self.wait_for("F1 help");
        eprintln!(
            "process start to first frame: {:?} (includes the bounded capability probe, which no one answers here)",
            self.started.elapsed()
        );
        let during = termios(self.pty.slave.as_raw_fd());
        assert_ne!(during, self.before, "the interface did not enter raw mode");
        assert_eq!(during.3 & libc::ICANON, 0);
        assert!(find(&self.output(), b"\x1b[?1049h").is_some());
    }

    /// Exits as a user does on an idle, empty input: Ctrl+C shows the
    /// hint, a second Ctrl+C exits.
    fn quit(&mut self) {
        // A run still going ends first: a first Ctrl+C would interrupt it,
        // and the second then asks whether to exit with work running.
        self.wait_for_screen(" ready ·");
        self.send(b"\x03");
        self.wait_for_screen("press Ctrl+C again to exit");
        self.send(b"\x03");
    }

    /// [`Session::finish`], keeping smith's home to look at afterwards.
    fn finish_keeping_home(mut self) -> (ExitStatus, String, tempfile::TempDir) {
        let home = std::mem::replace(&mut self.home, tempfile::tempdir().unwrap());
        let (status, out) = self.finish();
        (status, out, home)
    }

    fn finish(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "smith did not exit; the screen:\n{}",
                render(&self.output(), 24, 80).join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(100));
        let after = termios(self.pty.slave.as_raw_fd());
        assert_eq!(
            after, self.before,
            "the terminal's termios was not restored"
        );
        let out = self.output();
        let entered = rfind(&out, b"\x1b[?1049h").expect("never entered the alternate screen");
        let left = rfind(&out, b"\x1b[?1049l").expect("never left the alternate screen");
        assert!(
            left > entered,
            "the alternate screen was entered again after leaving"
        );
        let shown = rfind(&out, b"\x1b[?25h").expect("the cursor was never shown again");
        let hidden = rfind(&out, b"\x1b[?25l").unwrap_or(0);
        assert!(shown > hidden, "the cursor was hidden after it was shown");
        let paste_off = rfind(&out, b"\x1b[?2004l").expect("bracketed paste was left on");
        assert!(paste_off > rfind(&out, b"\x1b[?2004h").unwrap_or(0));
        // xterm's modifyOtherKeys, asked for when the kitty protocol did not
        // answer, is turned off again on every way out.
        if let Some(on) = rfind(&out, b"\x1b[>4;1m") {
            let off = rfind(&out, b"\x1b[>4;0m").expect("modifyOtherKeys was left on");
            assert!(off > on, "modifyOtherKeys was turned on after leaving");
        }
        (status, String::from_utf8_lossy(&out).into_owned())
    }
}

#[test]
fn normal_exit_restores_the_terminal() {
    let mut s = start(None);
    s.ready();
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn an_error_restores_the_terminal() {
    let mut s = start(Some("error"));
    s.ready();
    s.send(b"go\r");
    let (status, out) = s.finish();
    assert_eq!(status.code(), Some(1));
    assert!(out.contains("a deliberate error"), "{out}");
}

#[test]
fn a_panic_restores_the_terminal_before_the_message() {
    let mut s = start(Some("panic"));
    s.ready();
    s.send(b"go\r");
    let (status, out) = s.finish();
    assert_eq!(status.code(), Some(101));
    let message = out.find("a deliberate panic").expect("no panic message");
    let left = out.rfind("\x1b[?1049l").unwrap();
    assert!(
        left < message,
        "the panic message was printed on the alternate screen"
    );
}

#[test]
fn abort_restores_the_terminal() {
    let mut s = start(Some("abort"));
    s.ready();
    s.send(b"go\r");
    let (status, _) = s.finish();
    assert_eq!(status.signal(), Some(libc::SIGABRT));
}

fn killed_by(signal: i32) {
    let s = start(None);
    s.ready();
    // SAFETY: signals our own child.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, signal) }, 0);
    let (status, out, home) = s.finish_keeping_home();
    // Ended like an interrupt: 128 plus the signal's number, after the
    // terminal was restored.
    assert_eq!(status.code(), Some(128 + signal), "{out}");
    // Nothing was asked, so nothing was recorded: no session is kept, and
    // none is offered to continue.
    assert!(
        !out.contains("continue it with"),
        "a resume command for an empty session: {out}"
    );
    assert_eq!(stored_sessions(home.path()), Vec::<String>::new());
}

/// The names of the sessions stored in `home` (every project's).
fn stored_sessions(home: &std::path::Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["session", "list", "--all", "--json"])
        .env("SMITH_HOME", home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["name"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// Opening the interface and leaving it (or switching away with /new)
/// before any prompt stores no session; a session with a prompt stays.
#[test]
fn sessions_left_without_a_prompt_are_not_stored() {
    let mut s = start(None);
    s.ready();
    s.send(b"/new\r");
    s.wait_for_screen("session tui-");
    s.send(b"keep this one\r");
    s.wait_for_screen("Done.");
    s.send(b"/new\r");
    s.wait_for_screen("session tui-");
    s.quit();
    let (status, out, home) = s.finish_keeping_home();
    assert_eq!(status.code(), Some(0));
    assert_eq!(stored_sessions(home.path()), ["keep-this-one"], "{out}");
}

#[test]
fn sigint_restores_the_terminal() {
    killed_by(libc::SIGINT);
}

#[test]
fn sigterm_restores_the_terminal() {
    killed_by(libc::SIGTERM);
}

#[test]
fn sighup_restores_the_terminal() {
    killed_by(libc::SIGHUP);
}

#[test]
fn end_to_end_prompt_shows_tools_and_answer_then_quits() {
    let mut s = start(None);
    s.ready();
    s.send(b"what is in the readme?");
    s.wait_for_screen("› what is in the readme?");
    s.send(b"\r");
    // The demo lists the directory, reads the readme and answers with its
    // first line; the tool calls show as finished.
    s.wait_for_screen("✓ ls");
    s.wait_for_screen("✓ read README.md");
    s.wait_for_screen("# Hello from the fixture");
    let screen = s.wait_for_screen(" ready ·");
    let rows = screen.join("\n");
    let asked = rows.find("› what is in the readme?").unwrap();
    let listed = rows.find("✓ ls").unwrap();
    let answered = rows.rfind("# Hello from the fixture").unwrap();
    assert!(asked < listed && listed < answered, "{rows}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_signal_inherited_as_ignored_stays_ignored() {
    // As under `nohup`: SIGHUP does not end the interface.
    let mut s = start_with(None, Some(libc::SIGHUP));
    s.ready();
    // SAFETY: signals our own child.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGHUP) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.child.try_wait().unwrap().is_none(), "SIGHUP ended smith");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn replay_plugins_and_branch_commands_in_a_real_terminal() {
    let mut s = start(None);
    s.ready();
    s.send(b"what is in the readme?\r");
    s.wait_for_screen("# Hello from the fixture");
    s.wait_for_screen(" ready ·");
    // /replay clears the transcript and plays the session back.
    s.send(b"/replay instant\r");
    let rows = s.wait_for_screen("replay finished").join("\n");
    // Rebuilt, not appended: the turn is on screen once, before the end.
    assert_eq!(
        rows.matches("› what is in the readme?").count(),
        1,
        "{rows}"
    );
    assert_eq!(rows.matches("✓ read README.md").count(), 1, "{rows}");
    let read = rows.find("✓ read README.md").unwrap();
    let finished = rows.find("replay finished").unwrap();
    assert!(read < finished, "{rows}");
    // /plugins lists the built-in plugins; any key closes it.
    s.send(b"/plugins\r");
    s.wait_for_screen("smith/product (extension, built in)");
    s.send(b"q");
    // /branch shows the tree with the current leaf; Enter selects it
    // through the store and the session's branch is shown again.
    s.send(b"/branch\r");
    let tree = s.wait_for_screen("branches · enter selects").join("\n");
    assert!(tree.contains("● entry"), "{tree}");
    s.send(b"\r");
    // (The session took its name from its first prompt.)
    s.wait_for_screen("· session what-is-in-the-readme");
    s.wait_for_screen("# Hello from the fixture");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Installs the test guest `wasm` (a file of the guest build) into `home`
/// as the user plugin `name` of world `extension`, granted `ui`.
fn install_guest(home: &std::path::Path, name: &str, wasm: &str) {
    let folder = home.join(format!("{}-src", name.replace('/', "-")));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("plugin.kdl"),
        format!(
            "name \"{name}\"\nversion \"0.1.0\"\ndescription \"A test guest\"\napi 1\nworld \"extension\"\ncapabilities {{\n    ui\n}}\n"
        ),
    )
    .unwrap();
    std::fs::copy(
        std::path::Path::new(smith_plugins::builtin::GUESTS_DIR).join(wasm),
        folder.join("plugin.wasm"),
    )
    .unwrap();
    let installed = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .args(["plugin", "install"])
        .arg(&folder)
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
}

#[test]
fn a_user_plugin_command_runs_in_its_plugin() {
    let mut s = start_prepared(None, None, |home| {
        // The SDK example, installed with the `ui` grant its notice needs.
        install_guest(home, "example/hello", "smith_plugin_hello.wasm");
    });
    s.ready();
    s.send(b"/hello world\r");
    s.wait_for_screen("[example/hello] Hello, world!");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_resumed_session_shows_kept_plugin_intents_blocks_a_branch_and_asks_a_plugin_question() {
    let mut s = start_prepared_with(
        None,
        None,
        |home| {
            // test/lifecycle, granted `ui`: it keeps a question for a later
            // frontend when an input says "persist", and blocks forks of
            // sessions whose name contains "nofork".
            install_guest(home, "test/lifecycle", "smith_plugin_lifecycle.wasm");
            let script = home.join("script.json");
            std::fs::write(
                &script,
                r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
            )
            .unwrap();
            let done = Command::new(env!("CARGO_BIN_EXE_smith"))
                .env("SMITH_HOME", home)
                .current_dir(home)
                .args(["eval", "--name", "nofork-tui", "--mock-script"])
                .arg(&script)
                .arg("notes, persist them")
                .output()
                .unwrap();
            assert!(done.status.success(), "{done:?}");
        },
        &["--session", "nofork-tui"],
    );
    s.ready();
    // Rows joined, so a line the transcript wrapped reads whole.
    let joined = |rows: Vec<String>| rows.iter().map(|r| r.trim()).collect::<Vec<_>>().join(" ");
    let screen = joined(s.wait_for_screen("Keep the release notes?"));
    assert!(
        screen.contains("[test/lifecycle] Keep the release notes? [yes / no] (kept from eval)"),
        "{screen}"
    );
    s.send(b"/branch 1\r");
    let screen = joined(s.wait_for_screen("lets it through"));
    assert!(
        screen.contains("the extension test/lifecycle blocked /branch 1: nofork-tui#1 stays in one piece; the session stays nofork-tui"),
        "{screen}"
    );
    // A question the plugin asks at the end of a run is asked here; the
    // answer (the second option) goes back to the plugin, which says so.
    s.send(b"ask me\r");
    s.wait_for_screen("[test/lifecycle] Which target?");
    s.send(b"\x1b[B\r");
    s.wait_for_screen("[test/lifecycle] answer pick-1 \"production\"");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_question_a_plugin_waits_for_owns_focus_and_its_answer_decides_the_call() {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("script.json");
    let read = r#"[{"tool_call": {"name": "read", "arguments": {"path": "confirm-me.txt"}}}, {"stop": {"reason": "tool_use"}}]"#;
    std::fs::write(
        &script,
        format!(
            r#"[{read}, [{{"text": "first done"}}, {{"stop": {{"reason": "end"}}}}], {read}, [{{"text": "second done"}}, {{"stop": {{"reason": "end"}}}}]]"#
        ),
    )
    .unwrap();
    let script = script.display().to_string();
    let mut s = start_prepared_with(
        None,
        None,
        |home| {
            // test/kit, granted `ui`: it asks before any tool call whose
            // arguments contain "confirm-me" and blocks it unless the
            // answer is yes.
            install_guest(home, "test/kit", "smith_plugin_kit.wasm");
        },
        &["--mock-script", &script],
    );
    std::fs::write(s._work.path().join("confirm-me.txt"), "the secret plan\n").unwrap();
    s.ready();
    s.send(b"read it\r");
    s.wait_for_screen("[test/kit] Run read on confirm-me?");
    // The terminal is resized while the question waits: the interface
    // keeps handling input (the plugins hear of the size once it is
    // answered), so the answer arrives long before the question's 30 s.
    s.resize(30, 100);
    s.resize(24, 80);
    let asked = Instant::now();
    s.send(b"y");
    s.wait_for_screen("first done");
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    s.wait_for_screen("✓ read confirm-me.txt");
    s.send(b"read it again\r");
    s.wait_for_screen("[test/kit] Run read on confirm-me?");
    s.send(b"n");
    let screen = s.wait_for_screen("second done").join("\n");
    assert!(screen.contains("the user answered no (user)"), "{screen}");
    // A plugin command that asks: it runs off the interface's thread, so
    // the question's overlay shows while the command waits for it, and
    // Enter answers the preselected default (blue) as the user.
    let asked = Instant::now();
    s.send(b"/kit-ask\r");
    s.wait_for_screen("Which color?");
    s.send(b"\r");
    s.wait_for_screen("answer blue from user");
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_permission_question_asks_in_ask_mode_and_always_keeps_the_call() {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("script.json");
    let turn = |command: &str, done: &str| {
        format!(
            r#"[{{"tool_call": {{"name": "bash", "arguments": {{"command": "{command}"}}}}}}, {{"stop": {{"reason": "tool_use"}}}}], [{{"text": "{done}"}}, {{"stop": {{"reason": "end"}}}}]"#
        )
    };
    std::fs::write(
        &script,
        format!(
            "[{}, {}, {}, {}]",
            turn("touch one.txt", "first done"),
            turn("touch two.txt", "second done"),
            turn("touch three.txt", "third done"),
            turn("touch three.txt", "fourth done"),
        ),
    )
    .unwrap();
    let script = script.display().to_string();
    // The interface's approval mode is `ask`: every command asks.
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &script]);
    let work = s._work.path().to_path_buf();
    s.ready();
    s.send(b"one\r");
    s.wait_for_screen("[smith/permissions] Allow bash to run");
    // Typing filters the options: `yes` runs this call.
    s.send(b"yes\r");
    s.wait_for_screen("first done");
    assert!(work.join("one.txt").exists());
    s.send(b"two\r");
    s.wait_for_screen("[smith/permissions] Allow bash to run");
    // Esc takes the default, no: the call is refused and the model is told.
    s.send(b"\x1b");
    s.wait_for_screen("second done");
    assert!(!work.join("two.txt").exists());
    s.send(b"three\r");
    s.wait_for_screen("[smith/permissions] Allow bash to run");
    s.send(b"always\r");
    s.wait_for_screen("third done");
    assert!(work.join("three.txt").exists());
    std::fs::remove_file(work.join("three.txt")).unwrap();
    // The same call again runs without a question (one would wait and
    // keep "fourth done" from ever showing).
    s.send(b"four\r");
    s.wait_for_screen("fourth done");
    assert!(work.join("three.txt").exists());
    s.wait_for_screen(" ready ·");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn esc_esc_opens_the_rewind_picker_and_choosing_a_turn_restores_the_file() {
    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("script.json");
    std::fs::write(
        &script,
        r#"[
 [{"tool_call": {"id": "c1", "name": "write", "arguments": {"path": "made.txt", "content": "made\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "made it"}, {"stop": {"reason": "end"}}]
]"#,
    )
    .unwrap();
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &[
            "--approval",
            "workspace",
            "--mock-script",
            script.to_str().unwrap(),
        ],
    );
    s.ready();
    s.send(b"make a file\r");
    s.wait_for_screen("made it");
    s.wait_for_screen(" ready ·");
    let made = s._work.path().join("made.txt");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "made\n");
    // Esc twice, idle with an empty editor: the picker of turns, with the
    // files each changed.
    s.send(b"\x1b");
    std::thread::sleep(Duration::from_millis(150));
    s.send(b"\x1b");
    let picker = s.wait_for_screen("Rewind to before a turn").join("\n");
    assert!(picker.contains("turn 1: make a file · 1 file"), "{picker}");
    assert!(picker.contains("turn 1: made.txt"), "{picker}");
    s.send(b"\r");
    s.wait_for_screen("rewound to before prompt");
    assert!(!made.exists(), "the rewind removed the file the turn made");
    // The prompt is back in the editor; the transcript no longer has it.
    let rows = s.wait_for_screen("make a file").join("\n");
    assert!(!rows.contains("made it"), "{rows}");
    // The first Ctrl+C clears the restored prompt; then two exit.
    s.send(b"\x03");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Writes a mock script into a new directory; returns both (the
/// directory must outlive the run).
fn script(json: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, json).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

#[test]
fn ctrl_c_interrupts_the_running_turn_and_two_more_exit() {
    let (_dir, path) = script(
        r#"[[{"text": "thinking it over"}, {"delay_ms": 30000}, {"text": "too late"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"go\r");
    let screen = s.wait_for_screen("thinking it over").join("\n");
    assert!(screen.contains(" working"), "{screen}");
    // Ctrl+C as a terminal sends it in raw mode: byte 0x03. It interrupts
    // the turn; nothing asks about exiting.
    s.send(b"\x03");
    s.wait_for_screen("interrupted");
    let screen = s.wait_for_screen(" ready ·").join("\n");
    assert!(!screen.contains("Exit anyway?"), "{screen}");
    assert!(!screen.contains("too late"), "{screen}");
    assert!(s.child.try_wait().unwrap().is_none(), "Ctrl+C ended smith");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_lone_ctrl_c_on_an_empty_input_only_warns_and_the_moment_passes() {
    let mut s = start(None);
    s.ready();
    s.send(b"\x03");
    s.wait_for_screen("ready · press Ctrl+C again to exit");
    // Past the moment the hint is gone and smith still runs.
    std::thread::sleep(Duration::from_millis(3000));
    let screen = render(&s.output(), 24, 80).join("\n");
    assert!(!screen.contains("again to exit"), "{screen}");
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "one Ctrl+C ended smith"
    );
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn ctrl_j_and_backslash_enter_write_a_multi_line_prompt_without_the_kitty_protocol() {
    let (_dir, path) = script(r#"[[{"text": "got all three"}, {"stop": {"reason": "end"}}]]"#);
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    // Ctrl+J is byte 0x0A; `\` then Enter (0x0D) continues the line.
    s.send(b"first\x0asecond\\\rthird");
    let screen = s.wait_for_screen("  third").join("\n");
    assert!(screen.contains("› first"), "{screen}");
    assert!(screen.contains("  second"), "{screen}");
    assert!(!screen.contains("second\\"), "{screen}");
    assert!(!screen.contains("got all three"), "sent early:\n{screen}");
    // Enter sends the three lines as one prompt.
    s.send(b"\r");
    let screen = s.wait_for_screen("got all three").join("\n");
    let first = screen.find("› first").unwrap();
    let second = screen.find("  second").unwrap();
    let third = screen.find("  third").unwrap();
    assert!(first < second && second < third, "{screen}");
    s.wait_for_screen(" ready ·");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Without the kitty protocol the interface asks for xterm's
/// modifyOtherKeys (`CSI > 4 ; 1 m`), and xterm then sends Shift+Enter as
/// `CSI 27 ; 2 ; 13 ~`: it adds a line, and Enter sends both lines as one
/// prompt. The other keys keep working in that form (Ctrl+J, Alt+B, Ctrl+C),
/// and leaving turns modifyOtherKeys off again.
#[test]
fn shift_enter_as_xterm_sends_it_with_modify_other_keys_adds_a_line() {
    let (_dir, path) = script(r#"[[{"text": "got both lines"}, {"stop": {"reason": "end"}}]]"#);
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    // No kitty reply (nothing answers the probe here), so modifyOtherKeys
    // is asked for instead of the kitty flags.
    let out = s.output();
    assert!(
        find(&out, b"\x1b[>4;1m").is_some(),
        "modifyOtherKeys was not requested"
    );
    assert!(
        find(&out, b"\x1b[>1u").is_none(),
        "kitty flags pushed unasked"
    );
    s.send(b"first");
    s.send(b"\x1b[27;2;13~");
    s.send(b"second");
    let screen = s.wait_for_screen("  second").join("\n");
    assert!(screen.contains("› first"), "{screen}");
    assert!(!screen.contains("got both lines"), "sent early:\n{screen}");
    // Ctrl+J (`CSI 27;5;106~`) adds a line too; Alt+B (`CSI 27;3;98~`) moves
    // a word back.
    s.send(b"\x1b[27;5;106~third");
    s.send(b"\x1b[27;3;98~very ");
    let screen = s.wait_for_screen("  very third").join("\n");
    assert!(!screen.contains("got both lines"), "sent early:\n{screen}");
    s.send(b"\r");
    let screen = s.wait_for_screen("got both lines").join("\n");
    let first = screen.find("› first").unwrap();
    let second = screen.find("  second").unwrap();
    let third = screen.find("  very third").unwrap();
    assert!(first < second && second < third, "{screen}");
    // Ctrl+C in its modifyOtherKeys form (`CSI 27;5;99~`) arms and exits.
    s.wait_for_screen(" ready ·");
    s.send(b"\x1b[27;5;99~");
    s.wait_for_screen("press Ctrl+C again to exit");
    s.send(b"\x1b[27;5;99~");
    let (status, out, home) = s.finish_keeping_home();
    assert_eq!(status.code(), Some(0));
    // The prompt the model got is the three lines.
    let name = &stored_sessions(home.path())[0];
    let dump = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["session", "dump", name])
        .env("SMITH_HOME", home.path())
        .output()
        .unwrap();
    assert!(dump.status.success(), "{dump:?}");
    let prompts: Vec<String> = String::from_utf8(dump.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == "user_message")
        .map(|e| e["content"].to_string())
        .collect();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert!(
        prompts[0].contains(r#""first\nsecond\nvery third""#),
        "{prompts:?}"
    );
    // Leaving turned modifyOtherKeys off after the last time it was on.
    let out = out.as_bytes();
    let on = rfind(out, b"\x1b[>4;1m").unwrap();
    let off = rfind(out, b"\x1b[>4;0m").expect("modifyOtherKeys was left on");
    assert!(
        off > on,
        "modifyOtherKeys was turned on again after leaving"
    );
}

/// `SMITH_TUI_CAPS=modkeys=off` leaves modifyOtherKeys unasked (for a
/// terminal that misreads the request), so there is nothing to turn off.
#[test]
fn modify_other_keys_is_not_asked_for_when_overridden_off() {
    let mut s = start_provider(
        None,
        None,
        |_| {},
        &["--provider", "mock"],
        &[],
        &[("SMITH_TUI_CAPS", "modkeys=off")],
    );
    s.ready();
    s.quit();
    let (status, out) = s.finish();
    assert_eq!(status.code(), Some(0));
    assert!(
        !out.contains("\x1b[>4;"),
        "modifyOtherKeys was touched: {out:?}"
    );
}

/// The entry id at the right end of a transcript row (`#12`), if any.
fn entry_id_on(row: &str) -> Option<u64> {
    row.trim_end()
        .rsplit(' ')
        .next()?
        .strip_prefix('#')?
        .parse()
        .ok()
}

/// Each message shows its session entry id at the right end of its row,
/// live as it is recorded; `/branch` with an id read off the screen goes
/// back to that message, whose resumed row shows the same id.
#[test]
fn an_entry_id_read_off_the_transcript_branches_there() {
    let (_dir, path) = script(
        r#"[[{"text": "answer one"}, {"stop": {"reason": "end"}}],
            [{"text": "answer two"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"first question\r");
    s.wait_for_screen("answer one");
    s.wait_for_screen(" ready ·");
    s.send(b"second question\r");
    s.wait_for_screen("answer two");
    s.wait_for_screen(" ready ·");
    let id_of = |s: &Session, text: &str| {
        wait_until(s, &format!("the entry id beside {text:?}"), |screen| {
            screen
                .lines()
                .find(|row| row.contains(text))
                .and_then(entry_id_on)
                .is_some()
        })
        .lines()
        .find(|row| row.contains(text))
        .and_then(entry_id_on)
        .unwrap()
    };
    let ids = [
        id_of(&s, "› first question"),
        id_of(&s, "  answer one"),
        id_of(&s, "› second question"),
        id_of(&s, "  answer two"),
    ];
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Notices and the status line carry none.
    let screen = render(&s.output(), 24, 80);
    assert_eq!(
        screen
            .iter()
            .filter(|row| entry_id_on(row).is_some())
            .count(),
        4,
        "{}",
        screen.join("\n")
    );
    let answer_one = ids[1];
    s.send(format!("/branch {answer_one}\r").as_bytes());
    let screen = wait_until(&s, "the branch at answer one", |screen| {
        screen.contains("  answer one") && !screen.contains("second question")
    });
    assert!(screen.contains("› first question"), "{screen}");
    assert!(!screen.contains("answer two"), "{screen}");
    assert_eq!(id_of(&s, "  answer one"), answer_one);
    assert_eq!(id_of(&s, "› first question"), ids[0]);
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn alt_b_alt_f_and_alt_backspace_edit_by_words() {
    let mut s = start(None);
    s.ready();
    s.send(b"fix the flaky test");
    s.wait_for_screen("› fix the flaky test");
    // Alt+B twice (Esc b), as terminals send it without the kitty protocol.
    s.send(b"\x1bb");
    s.send(b"\x1bb");
    s.send(b"very ");
    s.wait_for_screen("› fix the very flaky test");
    // Alt+F (Esc f) to the end of the word.
    s.send(b"\x1bf");
    s.send(b"!");
    s.wait_for_screen("› fix the very flaky! test");
    // End, then Alt+Backspace (Esc DEL) deletes the word before.
    s.send(b"\x1b[F");
    s.send(b"\x1b\x7f");
    s.send(b"now");
    let screen = s.wait_for_screen("› fix the very flaky! now").join("\n");
    assert!(!screen.contains("test"), "{screen}");
    // Clear the input, then exit.
    s.send(b"\x03");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_mistyped_command_and_a_shell_line_are_refused_and_never_reach_the_model() {
    let mut s = start(None);
    s.ready();
    s.send(b"/moddel gpt-5\r");
    let screen = s
        .wait_for_screen("unknown command /moddel — did you mean /model?")
        .join("\n");
    // Kept to be fixed; nothing ran.
    assert!(screen.contains("› /moddel gpt-5"), "{screen}");
    assert!(screen.contains(" ready ·"), "{screen}");
    s.send(b"\x03");
    s.send(b"!ls\r");
    let screen = s
        .wait_for_screen("not sent: !ls would run a shell command")
        .join("\n");
    assert!(screen.contains("› !ls"), "{screen}");
    // The demo would list the directory for any prompt it is sent.
    std::thread::sleep(Duration::from_millis(500));
    let screen = render(&s.output(), 24, 80).join("\n");
    assert!(!screen.contains("✓ ls"), "{screen}");
    assert!(!screen.contains(" working"), "{screen}");
    s.send(b"\x03");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn compact_on_a_tiny_conversation_says_there_is_nothing_to_gain_and_sends_nothing() {
    // No summaries in the script: a summary request would fail the
    // compaction ("the mock script has 0 summary response(s)").
    let (_dir, path) = script(
        r#"{"responses": [[{"text": "first answer"}, {"stop": {"reason": "end"}}],
                          [{"text": "second answer"}, {"stop": {"reason": "end"}}]],
            "summaries": []}"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"one\r");
    s.wait_for_screen("first answer");
    s.wait_for_screen(" ready ·");
    s.send(b"two\r");
    s.wait_for_screen("second answer");
    s.wait_for_screen(" ready ·");
    s.send(b"/compact\r");
    let text = s.wait_for_text("not compacted: nothing to gain — the conversation is about");
    assert!(
        text.contains("so no summary was asked for and nothing was changed"),
        "{text}"
    );
    let screen = s.wait_for_screen(" ready ·").join("\n");
    // No summary request was sent (it would have failed the compaction).
    assert!(!screen.contains("compaction failed"), "{screen}");
    assert!(!screen.contains("summary response"), "{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn switching_sessions_never_says_the_runtime_stopped() {
    let mut s = start(None);
    s.ready();
    for (command, shown) in [
        (&b"/new\r"[..], "session tui-"),
        (&b"/continue\r"[..], "session tui-"),
    ] {
        let before = s.output().len();
        s.send(command);
        s.wait_for_screen(shown);
        // The replaced runtime's end arrives after the switch; it is not
        // the current one's, so nothing is said.
        std::thread::sleep(Duration::from_millis(700));
        let out = s.output();
        let after = String::from_utf8_lossy(&out[before..]).into_owned();
        assert!(!after.contains("runtime stopped"), "{after}");
        let screen = render(&out, 24, 80).join("\n");
        assert!(!screen.contains("runtime stopped"), "{screen}");
        assert!(screen.contains(" ready ·"), "{screen}");
    }
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn escape_sequences_in_model_text_are_shown_never_sent_to_the_terminal() {
    // A window-title change, a clipboard write, a screen clear and an exit
    // from the alternate screen, as a model (or a file it quotes) could
    // emit them.
    let (_dir, path) = script(
        r#"[[{"text": "title \u001b]0;pwned\u0007 clip \u001b]52;c;ZXZpbA==\u0007 clear \u001b[2J leave \u001b[?1049l end"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"go\r");
    let screen = s.wait_for_screen(" end").join("\n");
    // What the text holds is on the screen, each control as its picture.
    assert!(screen.contains("title ␛]0;pwned␇ clip"), "{screen}");
    assert!(screen.contains("clear ␛[2J leave ␛[?1049l end"), "{screen}");
    let out = s.output();
    for sequence in [
        &b"\x1b]0;pwned"[..],
        b"\x1b]52;c;ZXZpbA==",
        b"\x1b[2J leave",
        b"leave \x1b[?1049l",
    ] {
        assert!(
            find(&out, sequence).is_none(),
            "the terminal received {:?}",
            String::from_utf8_lossy(sequence)
        );
    }
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn hooks_lists_the_hook_commands_and_a_prompt_hook_adds_context() {
    let mut s = start_prepared(None, None, |home| {
        // The user's hooks: smith's configuration folder is its home here.
        std::fs::write(
            home.join("hooks.json"),
            r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo HOOK-CONTEXT-42"}]}]}}"#,
        )
        .unwrap();
    });
    s.ready();
    s.send(b"/hooks\r");
    s.wait_for_screen("[smith/hooks] 1 hook configured:");
    s.wait_for_screen("UserPromptSubmit: `echo HOOK-CONTEXT-42` (timeout 60 s)");
    s.send(b"what changed?\r");
    // The mock provider echoes the prompt it received: the hook's context
    // follows it. (The `/hooks` listing above already shows the hook's
    // command, so the context is looked for after the echo's start, and
    // the run's end is its last answer, not a ` ready` drawn before the
    // run began.)
    s.wait_for_after("You said", "HOOK-CONTEXT-42");
    s.wait_for_screen("Done. The file starts with");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_skill_is_a_command_listed_by_skills_and_sent_with_its_instructions() {
    let mut s = start_prepared(None, None, |home| {
        // A global skill: smith's configuration folder is its home here.
        let dir = home.join("skills/demo-skill");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: demo-skill\ndescription: Demonstrates skills.\n---\nDEMO-BODY: say hello.\n",
        )
        .unwrap();
    });
    s.ready();
    // Completion offers it with its description, as /help lists it.
    s.send(b"/demo");
    s.wait_for_screen("skill: Demonstrates skills.");
    s.send(b"\x15");
    s.send(b"/skills\r");
    s.wait_for_screen("[smith/skills] demo-skill  global");
    s.send(b"/demo-skill go\r");
    // The mock provider echoes the prompt it received: the instructions
    // attached, then the request.
    s.wait_for_screen("DEMO-BODY: say hello.");
    // (The answer is Markdown: the backticks around the command are drawn
    // as inline code, without them.)
    s.wait_for_screen("demo-skill (/demo-skill) with this request");
    s.wait_for_screen("Done. The file starts with");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn agents_lists_the_custom_agents_and_the_interface_runs_as_one() {
    let mut s = start_prepared_with(
        None,
        None,
        |home| {
            // A global agent: smith's configuration folder is its home here.
            let dir = home.join("agents");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("demo-agent.md"),
                "---\ndescription: Demonstrates agents.\ntools: Read, Grep\nmodel: mock-1\n---\nDEMO-AGENT-BODY\n",
            )
            .unwrap();
            std::fs::write(dir.join("broken.md"), "no frontmatter\n").unwrap();
        },
        &["--agent", "demo-agent"],
    );
    s.ready();
    // Completion offers the command with its description, as /help lists it.
    s.send(b"/agen");
    s.wait_for_screen("list the agents: source, tools, model");
    s.send(b"\x15");
    s.send(b"/agents\r");
    s.wait_for_screen("[smith/agents] demo-agent  global");
    s.wait_for_screen("tools: Read (read), Grep (grep)");
    s.wait_for_screen("does not start with a `---` line");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_todo_list_shows_as_a_panel_above_the_editor_and_todo_lists_it() {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("script.json");
    std::fs::write(
        &script,
        r#"[[{"tool_call": {"id": "c1", "name": "todo_write", "arguments": {"todos": [
            {"content": "Read the parser", "status": "completed"},
            {"content": "Fix the off-by-one in the lexer", "status": "in_progress"},
            {"content": "Run the parser tests", "status": "pending"}]}}},
           {"stop": {"reason": "tool_use"}}],
          [{"text": "planned the fix"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &script]);
    s.ready();
    // /help and completion list the command.
    s.send(b"/tod");
    s.wait_for_screen("show the agent's todo list");
    s.send(b"\x15");
    s.send(b"plan the fix\r");
    s.wait_for_screen("planned the fix");
    // The answer shows before the run ends: the status turns back to
    // ready after it, and the panel (set during the tool call) is there.
    s.wait_for_screen(" ready ·");
    // The panel: a rule with its name, then the list, right above the
    // status line and the editor.
    let screen = s.wait_for_screen("[>] Fix the off-by-one in the lexer");
    let row = |needle: &str| {
        screen
            .iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} is not on the screen:\n{}", screen.join("\n")))
    };
    let rule = row("── todo ──");
    assert_eq!(row("1/3 done"), rule + 1, "{}", screen.join("\n"));
    assert_eq!(row("[x] Read the parser"), rule + 2);
    assert_eq!(row("[>] Fix the off-by-one in the lexer"), rule + 3);
    assert_eq!(row("[ ] Run the parser tests"), rule + 4);
    assert_eq!(row(" ready ·"), rule + 5, "{}", screen.join("\n"));
    // /todo lists it in the transcript too.
    s.send(b"/todo\r");
    s.wait_for_screen("· [smith/todo] [ ] Run the parser tests");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_session_that_keeps_a_todo_list_opens_with_its_panel() {
    let mut s = start_prepared_with(
        None,
        None,
        |home| {
            let script = home.join("script.json");
            std::fs::write(
                &script,
                r#"[[{"tool_call": {"id": "c1", "name": "todo_write", "arguments": {"todos": [
                    {"content": "Write the migration", "status": "in_progress"},
                    {"content": "Update the docs", "status": "pending"}]}}},
                   {"stop": {"reason": "tool_use"}}],
                  [{"text": "planned"}, {"stop": {"reason": "end"}}]]"#,
            )
            .unwrap();
            let done = Command::new(env!("CARGO_BIN_EXE_smith"))
                .env("SMITH_HOME", home)
                .current_dir(home)
                .args(["eval", "--name", "todo-tui", "--mock-script"])
                .arg(&script)
                .arg("plan the migration")
                .output()
                .unwrap();
            assert!(done.status.success(), "{done:?}");
        },
        &["--session", "todo-tui"],
    );
    s.ready();
    // Nothing was sent: the panel shows as the session opens.
    let screen = s.wait_for_screen("[>] Write the migration");
    let rows = screen.join("\n");
    assert!(rows.contains("── todo ──"), "{rows}");
    assert!(rows.contains("0/2 done"), "{rows}");
    assert!(rows.contains("[ ] Update the docs"), "{rows}");
    // /new leaves it: the new session keeps no list.
    s.send(b"/new\r");
    s.wait_for_screen("session tui-");
    std::thread::sleep(Duration::from_millis(300));
    let screen = render(&s.output(), 24, 80).join("\n");
    assert!(!screen.contains("── todo ──"), "{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// `@` completes a path with Tab as before, and on sending smith/mentions
/// attaches the file: the mock provider echoes the prompt it received,
/// attachment included.
#[test]
fn a_mentioned_file_is_completed_and_attached_to_the_prompt() {
    let mut s = start(None);
    s.ready();
    s.send(b"summarize @READ\t");
    s.wait_for_screen("summarize @README.md");
    s.send(b"\r");
    // The demo quotes the prompt as a JSON string, which the answer's
    // Markdown draws with its escaped quotes unescaped.
    s.wait_for_screen("<attachments>\\n<file path=\"README.md\">\\n#");
    s.wait_for_screen("</file>\\n</attachments>");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// `@shot.png` attaches the image to the prompt through smith/mentions, and
/// the interface shows it as its one-line summary, never its bytes.
#[test]
fn a_mentioned_image_shows_as_its_summary_line() {
    let (_dir, path) = script(r#"[[{"text": "a small picture"}, {"stop": {"reason": "end"}}]]"#);
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    std::fs::write(
        s._work.path().join("shot.png"),
        include_bytes!("data/media-4x2.png"),
    )
    .unwrap();
    s.ready();
    s.send(b"what is @shot.png\r");
    s.wait_for_screen("[image shot.png · PNG 4×2 · 74 B]");
    s.wait_for_screen("a small picture");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Thinking shows as it streams: its last lines, in the thinking style,
/// while the model thinks; when the answer starts it collapses to its one
/// line.
#[test]
fn thinking_shows_whole_while_it_streams_then_collapses() {
    let (_dir, path) = script(
        r#"[[{"thinking": "first I look at the files\n"}, {"thinking": "then I weigh the options\nthe tests come first\nthen the fix"}, {"delay_ms": 2500}, {"text": "the answer is 42"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"think it over\r");
    let screen = s.wait_for_screen("the tests come first").join("\n");
    assert!(
        screen.contains("~ first I look at the files")
            && screen.contains("then I weigh the options")
            && screen.contains("then the fix"),
        "the whole thinking shows while it streams: {screen}"
    );
    assert!(!screen.contains("thinking (4 lines"), "{screen}");
    // The style in effect where the line was written: the last one set
    // before it.
    let out = s.output();
    let at = rfind(&out, b"the tests come first").unwrap();
    let set = rfind(&out[..at], b"\x1b[0").unwrap();
    let style = String::from_utf8_lossy(&out[set..at]);
    assert!(
        style.starts_with("\x1b[0;3;90m"),
        "thinking is drawn in its style, italic bright black: {style:?}"
    );
    let screen = s.wait_for_screen("the answer is 42").join("\n");
    assert!(
        screen.contains("~ thinking (4 lines, ctrl+t)"),
        "collapsed once the answer starts: {screen}"
    );
    assert!(!screen.contains("the tests come first"), "{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// The SGR sequence in effect where `text` was last written: the last one
/// set before it.
fn style_before(out: &[u8], text: &str) -> String {
    let at = rfind(out, text.as_bytes()).unwrap_or_else(|| {
        panic!(
            "{text:?} was never written:\n{}",
            String::from_utf8_lossy(out)
        )
    });
    let set = rfind(&out[..at], b"\x1b[0").unwrap();
    let end = out[set..].iter().position(|&b| b == b'm').unwrap();
    String::from_utf8_lossy(&out[set..=set + end]).into_owned()
}

/// An edit's result is a diff with old and new line numbers, the removed
/// line red and the added green, shown while collapsed; so is a write's
/// (every line added for a new file); the answer's Markdown is drawn (a
/// bold cyan underlined heading, no `#`).
#[test]
fn edits_and_writes_show_coloured_diffs_with_line_numbers_and_the_answer_renders_markdown() {
    let (_dir, path) = script(
        r##"[
 [{"tool_call": {"id": "r1", "name": "read", "arguments": {"path": "README.md"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "e1", "name": "edit", "arguments": {"path": "README.md", "old_text": "Hello from the fixture", "new_text": "Hello, edited"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "w1", "name": "write", "arguments": {"path": "notes.txt", "content": "alpha\nbeta\n"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "# Changed\n\nThe readme now says **Hello, edited**."}, {"stop": {"reason": "end"}}]
]"##,
    );
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &["--approval", "workspace", "--mock-script", &path],
    );
    s.ready();
    s.send(b"edit the readme\r");
    let screen = s.wait_for_screen("The readme now says").join("\n");
    assert!(screen.contains("✓ edit README.md"), "{screen}");
    assert!(
        screen.contains("│ 1   - # Hello from the fixture"),
        "the removed line with its old number: {screen}"
    );
    assert!(
        screen.contains("│   1 + # Hello, edited"),
        "the added line with its new number: {screen}"
    );
    assert!(!screen.contains("+++ b/README.md"), "collapsed: {screen}");
    assert!(screen.contains("✓ write notes.txt"), "{screen}");
    assert!(
        screen.contains("│   1 + alpha") && screen.contains("│   2 + beta"),
        "the written lines, added: {screen}"
    );
    assert!(
        screen.contains("  Changed") && !screen.contains("# Changed"),
        "{screen}"
    );
    let out = s.output();
    assert_eq!(
        style_before(&out, "- # Hello from the fixture"),
        "\x1b[0;31m"
    );
    assert_eq!(style_before(&out, "+ # Hello, edited"), "\x1b[0;32m");
    assert_eq!(style_before(&out, "+ beta"), "\x1b[0;32m");
    assert_eq!(style_before(&out, "Changed"), "\x1b[0;1;4;36m");
    assert!(find(&out, b"**Hello").is_none(), "no markup is drawn");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}
/// Waits until `ok` holds for the drawn screen's rows; returns them.
fn wait_until(s: &Session, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let screen = render(&s.output(), 24, 80).join("\n");
        if ok(&screen) {
            return screen;
        }
        assert!(Instant::now() < deadline, "never {what}:\n{screen}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The status line's row on `screen`: the last one naming the help key
/// (the first notice names it too).
fn status_row(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|l| l.contains("F1 help") || l.contains(" · $"))
        .unwrap_or_else(|| panic!("no status line:\n{screen}"))
}

/// A command's output shows under its title while it runs, and the status
/// line shows a spinner and the elapsed time that move on while it runs,
/// beside the model and the cost; the result replaces the streamed output
/// and the spinner goes.
#[test]
fn bash_output_streams_under_its_title_while_the_spinner_and_elapsed_time_move() {
    let (_dir, path) = script(
        r#"[
 [{"tool_call": {"id": "b1", "name": "bash", "arguments": {"command": "echo first-line; sleep 3; printf 'second%sline\\n' -"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "all done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &["--approval", "full", "--mock-script", &path],
    );
    s.ready();
    let idle = s.wait_for_screen(" ready ·").join("\n");
    let idle = status_row(&idle).to_owned();
    assert!(!idle.contains(" working"), "{idle}");
    s.send(b"run it\r");
    let screen = s.wait_for_screen("│ first-line").join("\n");
    assert!(!screen.contains("second-line"), "{screen}");
    let rows: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let title = rows
        .iter()
        .position(|l| l.contains("⋯ bash echo first-line"))
        .unwrap_or_else(|| panic!("the running call's title: {screen}"));
    assert!(rows[title + 1].contains("│ first-line"), "{screen}");
    let first = status_row(&screen).to_owned();
    let spinner = |row: &str| row.chars().nth(1).unwrap();
    assert!(
        "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏".contains(spinner(&first)),
        "a spinner leads the status line: {first:?}"
    );
    assert!(
        first.contains(" working ") && first.contains("s · "),
        "{first}"
    );
    // The model and the cost as the idle line showed them.
    let model = idle.split(" · ").nth(1).unwrap();
    assert!(first.contains(model), "{first} / {idle}");
    // It moves on by itself while the command runs (no event arrives).
    let later = wait_until(&s, "a moved spinner", |screen| {
        let row = status_row(screen);
        row.contains(" working ") && spinner(row) != spinner(&first)
    });
    assert!(!later.contains("second-line"), "{later}");
    s.wait_for_screen("all done");
    let done = wait_until(&s, "idle again", |screen| {
        status_row(screen).contains(" ready ·")
    });
    assert!(
        done.contains("│ first-line") && done.contains("second-line"),
        "{done}"
    );
    assert!(!"⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏".contains(spinner(status_row(&done))), "{done}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Calls made together show each output directly under its own title; a
/// call rejected before it ran (an unknown tool) has its title too.
#[test]
fn parallel_calls_and_a_rejected_call_each_show_their_output_under_their_title() {
    let (_dir, path) = script(
        r#"[
 [{"tool_call": {"id": "r1", "name": "read", "arguments": {"path": "README.md"}}}, {"tool_call": {"id": "x1", "name": "no_such_tool", "arguments": {"path": "x"}}}, {"tool_call": {"id": "l1", "name": "ls", "arguments": {"path": "."}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "all done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &["--approval", "workspace", "--mock-script", &path],
    );
    s.ready();
    s.send(b"look around\r");
    s.wait_for_screen("all done");
    let screen = wait_until(&s, "idle", |screen| status_row(screen).contains(" ready ·"));
    let rows: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let at = |needle: &str| {
        rows.iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not on screen:\n{screen}"))
    };
    let read = at("✓ read README.md");
    let rejected = at("✗ no_such_tool x");
    let ls = at("✓ ls .");
    assert!(read < rejected && rejected < ls, "{screen}");
    assert!(
        rows[read + 1].starts_with("│ ") && rows[read + 1].contains("Hello from the fixture"),
        "{screen}"
    );
    assert!(rows[rejected + 1].starts_with("│ "), "{screen}");
    assert!(
        rows[ls + 1].starts_with("│ ") && rows[ls + 1..].iter().any(|l| l.contains("README.md")),
        "{screen}"
    );
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Ctrl+O expands or collapses one entry: the latest output without a
/// selection, else the one selected with Alt+Up as an xterm sends it.
#[test]
fn ctrl_o_expands_the_latest_or_the_selected_output_alone() {
    let (_dir, path) = script(
        r#"[
 [{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "seq -f a%g 1 12"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "b", "name": "bash", "arguments": {"command": "seq -f b%g 1 12"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "all done"}, {"stop": {"reason": "end"}}]
]"#,
    );
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &["--approval", "full", "--mock-script", &path],
    );
    s.ready();
    s.send(b"count\r");
    s.wait_for_screen("all done");
    let screen = wait_until(&s, "idle", |screen| status_row(screen).contains(" ready ·"));
    assert!(
        screen.contains("│ b6") && !screen.contains("b12"),
        "{screen}"
    );
    // Ctrl+O: byte 0x0f. The latest output opens, the other stays.
    s.send(b"\x0f");
    let screen = wait_until(&s, "b12 shown", |screen| screen.contains("│ b12"));
    assert!(!screen.contains("a12"), "{screen}");
    s.send(b"\x0f");
    wait_until(&s, "b12 folded again", |screen| !screen.contains("b12"));
    // Alt+Up (ESC [1;3A) four times: the answer, b's output, b's call,
    // a's output.
    for _ in 0..4 {
        s.send(b"\x1b[1;3A");
    }
    s.send(b"\x0f");
    // (The selected entry's gutter is drawn reversed, without `│`.)
    let screen = wait_until(&s, "a12 shown", |screen| screen.contains("a12"));
    assert!(!screen.contains("b12"), "{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// `/thinking` shows the level and what the model offers, `/thinking
/// LEVEL` sets it with the gate's warning when the model does not offer
/// it, and the next request carries what the gate decided; a word that is
/// not a level changes nothing and says why.
#[test]
fn the_thinking_command_shows_and_sets_the_level_the_next_request_carries() {
    let body = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("providers/tests/fixtures/anthropic/basic_response.txt"),
    )
    .unwrap();
    let server = http::Server::start(Box::new(move |_, _| http::Reply::Stream(body.clone())));
    let base = server.url("");
    let mut s = start_provider(
        None,
        None,
        |_| {},
        &[
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5-20250929",
        ],
        &[],
        &[
            ("ANTHROPIC_API_KEY", "test-key-thinking-pty-0001"),
            ("ANTHROPIC_BASE_URL", &base),
        ],
    );
    s.ready();
    s.send(b"/thinking\r");
    let text = s.wait_for_text("offers low, medium, high");
    assert!(
        text.contains(
            "thinking off · anthropic/claude-sonnet-4-5-20250929 offers low, medium, high"
        ),
        "{text}"
    );
    s.send(b"/thinking loud\r");
    let text = s.wait_for_text("is not a thinking level");
    assert!(
        text.contains("/thinking loud: \"loud\" is not a thinking level; the levels are off, minimal, low, medium, high, max; nothing changed, the level stays off"),
        "{text}"
    );
    s.send(b"/thinking max\r");
    let text = s.wait_for_text("requests carry thinking high");
    assert!(
        text.contains(
            "thinking max set · anthropic/claude-sonnet-4-5-20250929 offers low, medium, high"
        ) && text.contains(
                "warning: thinking level `max` is not offered by `anthropic/claude-sonnet-4-5-20250929`; using `high`"
            ),
        "{text}"
    );
    s.send(b"hello\r");
    s.wait_for_screen("Hello there!");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["thinking"],
        serde_json::json!({"type": "enabled", "budget_tokens": 24576}),
        "{}",
        seen[0].body
    );
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Plan mode in a real terminal: `/plan TEXT` turns it on (a panel above
/// the editor) and sends TEXT; the model's write is blocked; the plan
/// `exit_plan_mode` puts to the user is approved in the question overlay,
/// which ends plan mode, and the next write runs; `/plan` and `/normal`
/// turn the panel on and off.
#[test]
fn plan_mode_blocks_writes_until_the_plan_is_approved_in_the_overlay() {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("script.json");
    std::fs::write(
        &script,
        r#"[[{"tool_call": {"id": "c1", "name": "write", "arguments": {"path": "out.txt", "content": "hi\n"}}}, {"stop": {"reason": "tool_use"}}],
           [{"text": "blocked, planning first"}, {"stop": {"reason": "end"}}],
           [{"tool_call": {"id": "c2", "name": "exit_plan_mode", "arguments": {"plan": "1. Write out.txt"}}}, {"stop": {"reason": "tool_use"}}],
           [{"tool_call": {"id": "c3", "name": "write", "arguments": {"path": "out.txt", "content": "hi\n"}}}, {"stop": {"reason": "tool_use"}}],
           [{"text": "written after approval"}, {"stop": {"reason": "end"}}]]"#,
    )
    .unwrap();
    let script = script.display().to_string();
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &["--mock-script", &script, "--approval", "workspace"],
    );
    let work = s._work.path().to_path_buf();
    s.ready();
    // /help and completion list the commands.
    s.send(b"/pla");
    s.wait_for_screen("plan mode: the agent researches and proposes a plan");
    s.send(b"\x15");
    s.send(b"/plan write the file\r");
    s.wait_for_text("[smith/plan] plan mode on: the agent researches and proposes a plan");
    let screen = s.wait_for_screen("blocked, planning first").join("\n");
    assert!(screen.contains("── plan ──"), "{screen}");
    assert!(screen.contains("research only"), "{screen}");
    assert!(!work.join("out.txt").exists());
    // The plan goes to the user as a question; approving it ends plan mode.
    s.send(b"go\r");
    s.wait_for_screen("[smith/plan] The agent's plan:");
    s.send(b"approve\r");
    let screen = s.wait_for_screen("written after approval").join("\n");
    assert!(work.join("out.txt").exists());
    std::thread::sleep(Duration::from_millis(300));
    let screen_now = render(&s.output(), 24, 80).join("\n");
    assert!(!screen_now.contains("── plan ──"), "{screen}\n{screen_now}");
    // /plan shows the panel again, /normal takes it away.
    s.send(b"/plan\r");
    s.wait_for_screen("── plan ──");
    s.send(b"/normal\r");
    s.wait_for_text("[smith/plan] plan mode off");
    std::thread::sleep(Duration::from_millis(300));
    let screen = render(&s.output(), 24, 80).join("\n");
    assert!(!screen.contains("── plan ──"), "{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// `smith tui --plan`: the session opens in plan mode, its panel showing
/// before anything is sent.
#[test]
fn the_interface_started_with_plan_opens_in_plan_mode() {
    let mut s = start_prepared_with(None, None, |_| {}, &["--plan"]);
    s.ready();
    let screen = s.wait_for_screen("── plan ──").join("\n");
    assert!(
        screen.contains("research only: tools that change anything are blocked"),
        "{screen}"
    );
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_new_session_is_named_after_its_first_prompt() {
    let mut home = None;
    let mut s = start_prepared(None, None, |h| home = Some(h.to_owned()));
    let home = home.unwrap();
    s.ready();
    s.send(b"Fix the lexer's off-by-one, please\r");
    s.wait_for_screen("Done.");
    // The transcript says the name it has now (its opening line named it
    // by its time).
    s.wait_for_screen("session fix-the-lexer-s-off-by-one-please");
    // A second prompt does not rename it again.
    s.send(b"and now something else\r");
    s.wait_for_text("You said \"and now something else\"");
    // Its run's end: the last answer after that echo.
    s.wait_for_after("You said \"and now something else\"", "Done.");
    // (Listed while the interface runs: its home goes with it; in its
    // project, whose sessions a listing shows.)
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", &home)
        .current_dir(s._work.path())
        .args(["session", "list", "--json"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    let names: Vec<String> = listed
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["name"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(names, ["fix-the-lexer-s-off-by-one-please"], "{listed}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Records `prompt` with the offline demo in a session of another project
/// (the folder `other` in `home`) before the interface starts.
fn record_in_another_project(home: &std::path::Path, prompt: &str) {
    let other = home.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_smith"))
        .args(["eval", "--provider", "mock", prompt])
        .current_dir(&other)
        .env("SMITH_HOME", home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// `/resume` lists the current project's sessions with their date,
/// messages, cost, project and first prompt; Tab (shown in the footer)
/// lists every project's; choosing a row opens that session.
#[test]
fn the_resume_picker_shows_this_projects_sessions_and_tab_shows_every_project() {
    let mut s = start_prepared(None, None, |home| {
        record_in_another_project(home, "somewhere else entirely");
    });
    s.ready();
    s.send(b"alpha task\r");
    s.wait_for_screen("Done.");
    // The run's end, which writes the session's summary (its start wrote
    // one with no messages yet).
    s.wait_for_screen(" ready ·");
    s.send(b"/resume\r");
    let screen = s.wait_for_screen("Sessions · this project (1 of 2)");
    let text = screen.join("\n");
    // The prompt, the offline demo's two answers and its tool result.
    assert!(
        text.contains("alpha-task · today ")
            && text.contains(" · 4 msgs · cost unknown · alpha task · /"),
        "{text}"
    );
    assert!(text.contains("Tab: every project"), "{text}");
    assert!(!text.contains("somewhere"), "{text}");
    s.send(b"\t");
    let screen = s.wait_for_screen("Sessions · every project (2)");
    let text = screen.join("\n");
    assert!(
        text.contains("somewhere-else-entirely · today ")
            && text.contains(" · 3 msgs · cost unknown · somewhere"),
        "{text}"
    );
    assert!(text.contains("Tab: this project only"), "{text}");
    s.send(b"somewhere\r");
    s.wait_for_screen("session somewhere-else-entirely");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// `/search-all TEXT` searches every stored session, every project's: the
/// hit names the session, the entry and its kind; choosing it opens that
/// session with the transcript search set to the text. Without text it
/// says what to type; text no session holds is said so, with what was
/// searched.
#[test]
fn search_all_lists_hits_from_every_project_and_opens_the_chosen_session() {
    let mut s = start_prepared(None, None, |home| {
        record_in_another_project(home, "find the zebra crossing");
    });
    s.ready();
    s.send(b"/search-all\r");
    s.wait_for_screen("/search-all needs the text to look for");
    s.send(b"/search-all okapi\r");
    s.wait_for_screen("no stored session holds \"okapi\" (searched ");
    // Smart case: an upper-case letter makes the search case-sensitive.
    s.send(b"/search-all ZEBRA\r");
    s.wait_for_screen("no stored session holds \"ZEBRA\"");
    s.send(b"/search-all zebra\r");
    // The prompt and the offline demo's answer, which quotes it.
    let screen = s.wait_for_screen("Search \"zebra\" · 2 hits in ");
    let text = screen.join("\n");
    assert!(
        text.contains("find-the-zebra-crossing  #")
            && text.contains("user  find the zebra crossing"),
        "{text}"
    );
    s.send(b"\r");
    s.wait_for_screen("session find-the-zebra-crossing");
    let screen = s.wait_for_screen(" search: zebra");
    let text = screen.join("\n");
    assert!(text.contains("find the zebra crossing"), "{text}");
    s.send(b"\x1b");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Alt+Enter (Esc then Enter, as terminals send it without the kitty
/// protocol) while the agent works queues a follow-up: it is listed above
/// the editor until it is sent, then shows as its own message between the
/// answer before it and its own answer.
#[test]
fn a_queued_follow_up_is_listed_until_sent_then_shows_as_its_own_message() {
    let (_dir, path) = script(
        r#"[[{"text": "first answer"}, {"delay_ms": 2500}, {"text": " ends here"}, {"stop": {"reason": "end"}}],
            [{"text": "second answer"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"go\r");
    s.wait_for_screen("first answer");
    s.send(b"then the tests");
    s.wait_for_screen("› then the tests");
    s.send(b"\x1b\r");
    let screen = s
        .wait_for_screen("queued · sent when the current work ends")
        .join("\n");
    assert!(screen.contains("  › then the tests"), "{screen}");
    assert!(screen.contains(" · queue 1 · "), "{screen}");
    // Not sent yet: the editor is free again and no answer came.
    assert!(!screen.contains("second answer"), "{screen}");
    s.wait_for_screen("second answer");
    s.wait_for_screen(" ready ·");
    let screen = render(&s.output(), 24, 80).join("\n");
    // Sent: the panel is gone and the message sits between the answers.
    assert!(!screen.contains("queued ·"), "{screen}");
    let first = screen.find("first answer ends here").expect(&screen);
    let message = screen.find("› then the tests").expect(&screen);
    let second = screen.find("  second answer").expect(&screen);
    assert!(first < message && message < second, "{screen}");
    assert_eq!(screen.matches("then the tests").count(), 1, "{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// A replay stopped while a call was running, then `/branch N` and a new
/// prompt: the new branch's call (the scripted one has the same id) ends
/// under its own title instead of staying running.
#[test]
fn after_a_stopped_replay_and_a_branch_the_first_call_ends_under_its_title() {
    let (_dir, path) = script(
        r#"[[{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "sleep 2; echo slept"}}}, {"stop": {"reason": "tool_use"}}],
            [{"text": "all done"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(
        None,
        None,
        |_| {},
        &["--mock-script", &path, "--approval", "full"],
    );
    s.ready();
    s.send(b"go\r");
    s.wait_for_screen("all done");
    s.wait_for_screen(" ready ·");
    // Played in real time: the call runs for two seconds; Esc stops the
    // replay while it does.
    s.send(b"/replay 1\r");
    s.wait_for_after("replaying session", "⋯ bash sleep 2; echo slept");
    s.send(b"\x1b");
    s.wait_for_screen("replay finished");
    // Entry 3 is the prompt `go` (a model change and the run's start come
    // first).
    s.send(b"/branch 3\r");
    s.wait_for_screen("· session go");
    s.send(b"again\r");
    s.wait_for_after("› again", "all done");
    let screen = s.wait_for_screen(" ready ·").join("\n");
    let again = screen.find("› again").expect(&screen);
    let after = &screen[again..];
    assert!(after.contains("✓ bash sleep 2; echo slept"), "{screen}");
    assert!(!after.contains('⋯'), "a call stayed running:\n{screen}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Up recalls what was sent in an earlier run of the interface (the
/// history is kept in smith's state directory), a multi-line prompt
/// whole, the newest first.
#[test]
fn input_history_is_recalled_after_a_restart() {
    let mut s = start(None);
    s.ready();
    s.send(b"first prompt\r");
    s.wait_for_after("› first prompt", "Done.");
    s.send(b"two\x0alines\r");
    s.wait_for_after("› two", "Done.");
    s.quit();
    let (status, _, home) = s.finish_keeping_home();
    assert_eq!(status.code(), Some(0));
    let mut s = start_prepared(None, None, |new| {
        let copied = Command::new("cp")
            .arg("-a")
            .arg(home.path().join("."))
            .arg(new)
            .status()
            .unwrap();
        assert!(copied.success());
    });
    s.ready();
    // Up on an empty editor: the newest entry, both of its lines.
    s.send(b"\x1b[A");
    let screen = s.wait_for_screen("› two").join("\n");
    assert!(screen.contains("  lines"), "{screen}");
    // Up from its first line: the one before.
    s.send(b"\x1b[A");
    s.send(b"\x1b[A");
    s.wait_for_screen("› first prompt");
    s.send(b"\x03");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// `/resume NAME`, choosing a branch in the `/branch` tree and
/// `/branch ENTRY` each replace the runtime; the replaced one's end is
/// never reported as "the agent runtime stopped".
#[test]
fn resuming_and_choosing_a_branch_never_say_the_runtime_stopped() {
    let mut s = start(None);
    s.ready();
    s.send(b"hello\r");
    s.wait_for_after("› hello", "Done.");
    s.wait_for_screen(" ready ·");
    let before = s.output().len();
    for (command, then) in [
        (&b"/resume hello\r"[..], None),
        (&b"/branch\r"[..], Some(&b"\r"[..])),
        (&b"/branch 3\r"[..], None),
    ] {
        s.send(command);
        if let Some(keys) = then {
            s.wait_for_screen("branches · enter selects");
            s.send(keys);
        }
        s.wait_for_screen("· session hello");
        // The replaced runtime's end arrives after the switch.
        std::thread::sleep(Duration::from_millis(1000));
        let screen = render(&s.output(), 24, 80).join("\n");
        assert!(screen.contains(" ready ·"), "{screen}");
        assert!(!screen.contains("branches ·"), "{screen}");
    }
    // The last switch took the session back to its prompt, before the
    // answer.
    let screen = render(&s.output(), 24, 80).join("\n");
    assert!(
        screen.contains("› hello") && !screen.contains("Done."),
        "{screen}"
    );
    let out = s.output();
    let after = String::from_utf8_lossy(&out[before..]).into_owned();
    assert!(!after.contains("runtime stopped"), "{after}");
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// At 60x20 the help overlay does not fit: it says how to scroll, and
/// PageDown, End and Home (as terminals send them) move through it.
#[test]
fn the_help_overlay_scrolls_at_60_by_20() {
    let mut s = start(None);
    s.ready();
    s.resize(20, 60);
    // F1 as xterm sends it.
    s.send(b"\x1bOP");
    let screen_at = |s: &Session, needle: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = render(&s.output(), 20, 60).join("\n");
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let screen = screen_at(&s, "↑↓ pgup pgdn scroll");
    assert!(screen.contains("enter         send"), "{screen}");
    assert!(!screen.contains("/quit"), "{screen}");
    // End (CSI F): the last command.
    s.send(b"\x1b[F");
    let screen = screen_at(&s, "/quit         exit smith");
    assert!(!screen.contains("enter         send"), "{screen}");
    // Home (CSI H), then PageDown (CSI 6 ~) leaves the first rows.
    s.send(b"\x1b[H");
    screen_at(&s, "enter         send");
    s.send(b"\x1b[6~");
    let deadline = Instant::now() + Duration::from_secs(20);
    while render(&s.output(), 20, 60)
        .join("\n")
        .contains("enter         send")
    {
        assert!(Instant::now() < deadline, "PageDown did not scroll");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Any other key closes it.
    s.send(b"q");
    let deadline = Instant::now() + Duration::from_secs(20);
    while render(&s.output(), 20, 60).join("\n").contains("pgup pgdn") {
        assert!(Instant::now() < deadline, "the help did not close");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.wait_for("F1 help");
    s.resize(24, 80);
    s.quit();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// Ctrl+C (byte 0x03) on a draft clears it without offering to exit; Esc
/// (a lone 0x1B) interrupts a running turn; Ctrl+C interrupts one too, and
/// a second Ctrl+C at once exits.
#[test]
fn ctrl_c_clears_a_draft_and_after_an_interrupt_a_second_press_exits() {
    let (_dir, path) = script(
        r#"[[{"text": "mulling it over"}, {"delay_ms": 30000}, {"text": "too late"}, {"stop": {"reason": "end"}}],
            [{"text": "thinking it over"}, {"delay_ms": 30000}, {"text": "too late"}, {"stop": {"reason": "end"}}]]"#,
    );
    let mut s = start_prepared_with(None, None, |_| {}, &["--mock-script", &path]);
    s.ready();
    s.send(b"a draft");
    s.wait_for_screen("› a draft");
    s.send(b"\x03");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let screen = render(&s.output(), 24, 80).join("\n");
        if !screen.contains("› a draft") {
            assert!(!screen.contains("again to exit"), "{screen}");
            break;
        }
        assert!(Instant::now() < deadline, "the draft stayed:\n{screen}");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send(b"wait\r");
    s.wait_for_screen("mulling it over");
    s.send(b"\x1b");
    s.wait_for_screen("interrupted");
    let screen = s.wait_for_screen(" ready ·").join("\n");
    assert!(!screen.contains("too late"), "{screen}");
    assert!(!screen.contains("again to exit"), "{screen}");
    s.send(b"go\r");
    s.wait_for_screen("thinking it over");
    s.send(b"\x03");
    s.wait_for_after("thinking it over", "interrupted");
    s.wait_for_screen("press Ctrl+C again to exit");
    s.send(b"\x03");
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

/// The interface opened on a session another smith's runtime serves is
/// refused (two runtimes would interleave their conversations on one
/// branch) with a diagnostic that offers a fork, and the terminal is
/// restored.
#[test]
fn the_interface_on_a_session_in_use_is_refused_and_offered_a_fork() {
    use std::io::BufRead as _;
    let mut server = None;
    let s = start_prepared_with(
        None,
        None,
        |home| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
                .env("SMITH_HOME", home)
                .current_dir(home)
                .args(["rpc", "--provider", "mock", "--name", "busy"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            writeln!(
                stdin,
                r#"{{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{}}}}"#
            )
            .unwrap();
            // Once it answers, its runtime serves the session.
            let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
            let answer = lines.next().unwrap().unwrap();
            assert!(answer.contains(r#""id":1"#), "{answer}");
            server = Some((child, stdin));
        },
        &["--session", "busy"],
    );
    let (status, out) = s.finish();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(
        out.contains("session busy is in use by another smith (process"),
        "{out}"
    );
    assert!(
        out.contains("fork it to go on in a copy (`smith session fork busy`, then open the fork)"),
        "{out}"
    );
    let (mut child, stdin) = server.unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
