//! The interface inside a real tmux (a private server: its own socket, no
//! configuration file): Ctrl+Y copies the last answer with OSC 52, and what
//! tmux does with it decides the outcome. With `set-clipboard on` the
//! answer lands in tmux's paste buffer and the interface says so; with
//! tmux's default (`external`, no passthrough) tmux would drop the write,
//! so nothing is sent and the interface says why and which command
//! changes it — never "copied". Ctrl+O and Alt+Up as tmux sends them
//! expand one entry; the editing and interrupt keys (Ctrl+J, `\` then
//! Enter, Alt+B, Ctrl+C, Esc) and `/copy` work as tmux sends them, and
//! with `extended-keys` on Shift+Enter adds a line.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A private tmux server, killed when dropped.
struct Tmux {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    home: PathBuf,
    work: PathBuf,
}

impl Tmux {
    fn start() -> Tmux {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock");
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let tmux = Tmux {
            _dir: dir,
            socket,
            home,
            work,
        };
        // A first session holding the server open while options are set.
        tmux.ok(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "100",
            "-y",
            "30",
            "sleep 120",
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs (scripts/setup installs it)")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `smith tui` in a new window answering every prompt with
    /// `answer`.
    fn smith(&self, answer: &str) {
        self.smith_script(
            &format!(r#"[[{{"text": "{answer}"}}, {{"stop": {{"reason": "end"}}}}]]"#),
            "",
        );
    }

    /// Starts `smith tui` in a new window playing the mock `script`, with
    /// `args` (already quoted) after it.
    fn smith_script(&self, script_json: &str, args: &str) {
        let script = self.home.join("script.json");
        std::fs::write(&script, script_json).unwrap();
        let command = format!(
            "env SMITH_HOME={} NO_COLOR=1 SMITH_TUI_CAPS=probe=off {} tui --provider mock --mock-script {} --cwd {} {args}",
            quote(&self.home),
            quote(Path::new(env!("CARGO_BIN_EXE_smith"))),
            quote(&script),
            quote(&self.work),
        );
        // `t:` names the session alone. A bare `t` is looked up as a window
        // name first (by prefix too), and once in seven runs here it named
        // the first window ("index 0 in use"): that window's automatic
        // name follows its process, which may briefly be `tmux` itself.
        self.ok(&["new-window", "-t", "t:", "-n", "smith", &command]);
    }

    /// Waits (at most 10 s) until smith's window is gone: smith exited.
    fn wait_for_exit(&self) {
        let start = Instant::now();
        while self
            .ok(&["list-windows", "-F", "#{window_name}"])
            .contains("smith")
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "smith did not exit:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn screen(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "t:smith"])
    }

    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "never showed {needle:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen satisfies `ok` (`what` names it).
    fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "never showed {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t:smith"];
        args.extend_from_slice(keys);
        self.ok(&args);
    }

    /// tmux's newest paste buffer, if it has one.
    fn buffer(&self) -> Option<String> {
        let out = self.run(&["show-buffer"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn with_set_clipboard_on_a_copy_lands_in_tmux_and_says_so() {
    let tmux = Tmux::start();
    tmux.ok(&["set", "-g", "set-clipboard", "on"]);
    tmux.smith("the answer is 42");
    tmux.wait_for("F1 help");
    tmux.keys(&["go", "Enter"]);
    tmux.wait_for("the answer is 42");
    tmux.keys(&["C-y"]);
    let screen = tmux.wait_for("copied: tmux keeps it in its paste buffer");
    assert!(!screen.contains("not copied"), "{screen}");
    let start = Instant::now();
    while tmux.buffer().as_deref() != Some("the answer is 42") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "tmux's buffer: {:?}",
            tmux.buffer()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn with_tmux_defaults_nothing_is_sent_and_the_user_is_told_the_command() {
    let tmux = Tmux::start();
    tmux.ok(&["set", "-g", "set-clipboard", "external"]);
    tmux.ok(&["set", "-g", "allow-passthrough", "off"]);
    tmux.smith("keep this");
    tmux.wait_for("F1 help");
    tmux.keys(&["go", "Enter"]);
    tmux.wait_for("keep this");
    tmux.keys(&["C-y"]);
    // The notice may wrap: look for its parts.
    let screen = tmux.wait_for("not copied: tmux drops clipboard writes");
    let flat: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("tmux set -g set-clipboard on"), "{screen}");
    assert!(!flat.contains("copied to the clipboard"), "{screen}");
    assert_eq!(tmux.buffer(), None, "something reached tmux's buffer");
}

/// Inside tmux (keys as tmux sends them, no kitty protocol): Ctrl+O opens
/// the latest output alone; Alt+Up selects entries and Ctrl+O opens the
/// selected one.
#[test]
fn ctrl_o_and_alt_up_expand_one_entry_in_tmux() {
    let tmux = Tmux::start();
    tmux.smith_script(
        r#"[
 [{"tool_call": {"id": "a", "name": "bash", "arguments": {"command": "seq -f a%g 1 12"}}}, {"stop": {"reason": "tool_use"}}],
 [{"tool_call": {"id": "b", "name": "bash", "arguments": {"command": "seq -f b%g 1 12"}}}, {"stop": {"reason": "tool_use"}}],
 [{"text": "all done"}, {"stop": {"reason": "end"}}]
]"#,
        "--approval full",
    );
    tmux.wait_for("F1 help");
    tmux.keys(&["count", "Enter"]);
    tmux.wait_for("all done");
    let screen = tmux.wait_for(" ready ·");
    assert!(screen.contains("b6") && !screen.contains("b12"), "{screen}");
    tmux.keys(&["C-o"]);
    let screen = tmux.wait_for("b12");
    assert!(!screen.contains("a12"), "{screen}");
    tmux.keys(&["C-o"]);
    let start = Instant::now();
    while tmux.screen().contains("b12") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The answer, b's output, b's call, a's output.
    tmux.keys(&["M-Up", "M-Up", "M-Up", "M-Up", "C-o"]);
    let screen = tmux.wait_for("a12");
    assert!(!screen.contains("b12"), "{screen}");
}

/// The editing and interrupt keys inside tmux, as tmux sends them (no
/// kitty protocol): Ctrl+J and `\` then Enter add lines, Alt+B moves back
/// a word, Enter sends; `/copy` puts the answer in tmux's buffer; Ctrl+C
/// clears a draft without offering to exit; Esc interrupts a turn; Ctrl+C
/// interrupts one and a second Ctrl+C at once exits.
#[test]
fn editing_copy_and_interrupt_keys_work_as_tmux_sends_them() {
    let tmux = Tmux::start();
    tmux.ok(&["set", "-g", "set-clipboard", "on"]);
    let slow = r#"[{"text": "working on it"}, {"delay_ms": 30000}, {"text": "too late"}, {"stop": {"reason": "end"}}]"#;
    tmux.smith_script(
        &format!(
            r#"[[{{"text": "got all lines"}}, {{"stop": {{"reason": "end"}}}}], {slow}, {slow}]"#
        ),
        "",
    );
    tmux.wait_for("F1 help");
    tmux.keys(&["first", "C-j", "second"]);
    tmux.ok(&["send-keys", "-t", "t:smith", "-l", "\\"]);
    tmux.keys(&["Enter", "third"]);
    tmux.wait_for("  third");
    tmux.keys(&["M-b", "very "]);
    let screen = tmux.wait_for("  very third");
    assert!(
        screen.contains("› first") && screen.contains("  second"),
        "{screen}"
    );
    assert!(!screen.contains("second\\"), "{screen}");
    assert!(!screen.contains("got all lines"), "sent early:\n{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("got all lines");
    tmux.wait_for(" ready ·");
    tmux.keys(&["/copy", "Enter"]);
    tmux.wait_for("copied: tmux keeps it in its paste buffer");
    let start = Instant::now();
    while tmux.buffer().as_deref() != Some("got all lines") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "tmux's buffer: {:?}",
            tmux.buffer()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Ctrl+C on a draft clears it and arms nothing.
    tmux.keys(&["a draft"]);
    tmux.wait_for("› a draft");
    tmux.keys(&["C-c"]);
    let start = Instant::now();
    while tmux.screen().contains("› a draft") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !tmux.screen().contains("again to exit"),
        "{}",
        tmux.screen()
    );
    // Esc interrupts a turn.
    tmux.keys(&["slow one", "Enter"]);
    tmux.wait_for("working on it");
    tmux.keys(&["Escape"]);
    tmux.wait_for("interrupted");
    let screen = tmux.wait_for(" ready ·");
    assert!(!screen.contains("too late"), "{screen}");
    // Ctrl+C interrupts a turn; a second one at once exits.
    tmux.keys(&["slow two", "Enter"]);
    tmux.wait_until("the second turn's text", |screen| {
        screen.matches("working on it").count() == 2
    });
    tmux.keys(&["C-c"]);
    tmux.wait_until("the second interruption", |screen| {
        screen.matches("interrupted").count() == 2 && screen.contains("again to exit")
    });
    tmux.keys(&["C-c"]);
    tmux.wait_for_exit();
}

/// With tmux's `extended-keys` on, tmux sends modified keys in an extended
/// form only to an application that asked for them with modifyOtherKeys (as
/// the interface does without the kitty protocol); tmux 3.3a sends
/// Shift+Enter as `CSI 13 ; 2 u` then, and without the request types the
/// words `S-Enter` instead. Shift+Enter adds a line and Enter sends the lines
/// as one prompt; Ctrl+J, Alt+B, Alt+Enter, Esc and Ctrl+C keep working.
#[test]
fn shift_enter_adds_a_line_in_tmux_with_extended_keys() {
    let tmux = Tmux::start();
    tmux.ok(&["set", "-g", "extended-keys", "on"]);
    let slow = r#"[{"text": "working on it"}, {"delay_ms": 30000}, {"text": "too late"}, {"stop": {"reason": "end"}}]"#;
    tmux.smith_script(
        &format!(
            r#"[[{{"text": "got all lines"}}, {{"stop": {{"reason": "end"}}}}],
                [{{"text": "first answer"}}, {{"delay_ms": 2500}}, {{"text": " ends here"}}, {{"stop": {{"reason": "end"}}}}],
                [{{"text": "queued answer"}}, {{"stop": {{"reason": "end"}}}}], {slow}]"#
        ),
        "",
    );
    tmux.wait_for("F1 help");
    tmux.keys(&["first", "S-Enter", "second", "C-j", "third"]);
    tmux.wait_for("  third");
    tmux.keys(&["M-b", "very "]);
    let screen = tmux.wait_for("  very third");
    assert!(
        screen.contains("› first") && screen.contains("  second"),
        "{screen}"
    );
    assert!(!screen.contains("got all lines"), "sent early:\n{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("got all lines");
    let first = screen.find("› first").expect(&screen);
    let second = screen.find("  second").expect(&screen);
    let third = screen.find("  very third").expect(&screen);
    assert!(first < second && second < third, "{screen}");
    tmux.wait_for(" ready ·");
    // Alt+Enter queues a follow-up while a turn runs; it is sent after.
    tmux.keys(&["go", "Enter"]);
    tmux.wait_for("first answer");
    tmux.keys(&["then this", "M-Enter"]);
    tmux.wait_for("queued · sent when the current work ends");
    tmux.wait_for("queued answer");
    tmux.wait_for(" ready ·");
    // Esc interrupts a turn.
    tmux.keys(&["slow", "Enter"]);
    tmux.wait_for("working on it");
    tmux.keys(&["Escape"]);
    tmux.wait_for("interrupted");
    let screen = tmux.wait_for(" ready ·");
    assert!(!screen.contains("too late"), "{screen}");
    // Ctrl+C twice exits.
    tmux.keys(&["C-c"]);
    tmux.wait_for("again to exit");
    tmux.keys(&["C-c"]);
    tmux.wait_for_exit();
}

/// Alt+Enter as tmux sends it (Esc then Enter) while the agent works
/// queues a follow-up: listed above the editor until it is sent, then
/// shown as its own message between the two answers.
#[test]
fn a_follow_up_queued_with_alt_enter_in_tmux_is_listed_then_shown() {
    let tmux = Tmux::start();
    tmux.smith_script(
        r#"[[{"text": "first answer"}, {"delay_ms": 2500}, {"text": " ends here"}, {"stop": {"reason": "end"}}],
            [{"text": "second answer"}, {"stop": {"reason": "end"}}]]"#,
        "",
    );
    tmux.wait_for("F1 help");
    tmux.keys(&["go", "Enter"]);
    tmux.wait_for("first answer");
    tmux.keys(&["then the tests", "M-Enter"]);
    let screen = tmux.wait_for("queued · sent when the current work ends");
    assert!(screen.contains("  › then the tests"), "{screen}");
    tmux.wait_for("second answer");
    let screen = tmux.wait_for(" ready ·");
    assert!(!screen.contains("queued ·"), "{screen}");
    let first = screen.find("first answer ends here").expect(&screen);
    let message = screen.find("› then the tests").expect(&screen);
    let second = screen.find("  second answer").expect(&screen);
    assert!(first < message && message < second, "{screen}");
}
