//! Scripted key sequences: scroll pinning, search, overlays, resize,
//! input behavior, and what the interface asks its host to do.

use crossterm::event::{Event, KeyCode, KeyModifiers};
use smith_tui::transcript::EntryKind;
use smith_tui::{Output, Overlay, Status};

use crate::{app, conversation, screen};

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

fn numbered(n: usize) -> smith_tui::App {
    let mut a = app();
    for i in 0..n {
        a.assistant_delta(&format!("message {i}"));
        a.notice(&format!("notice {i}"));
    }
    a
}

fn first_transcript_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}

#[test]
fn new_output_never_moves_a_view_scrolled_away_from_the_bottom() {
    let mut s = screen(numbered(50), 40, 12);
    let bottom = s.text();
    assert!(bottom.contains("notice 49"));
    s.key(KeyCode::PageUp, NONE);
    let scrolled = s.text();
    assert!(!scrolled.contains("notice 49"));
    let top_line = first_transcript_line(&scrolled);
    for i in 0..20 {
        s.app.assistant_delta(&format!(" streaming {i}"));
        s.app.notice("more");
        s.app.tool_start(&format!("t{i}"), "bash", "true");
    }
    let after = s.text();
    assert_eq!(first_transcript_line(&after), top_line);
    assert!(after.contains("scrolled"));
    // A key returns to the latest output, which is followed again.
    s.key(KeyCode::Char('g'), CTRL);
    let latest = s.text();
    assert!(latest.contains("bash true"), "{latest}");
    s.app.notice("newest line");
    assert!(s.text().contains("newest line"));
}

#[test]
fn scrolling_down_to_the_end_follows_again() {
    let mut s = screen(numbered(30), 40, 12);
    s.text();
    s.key(KeyCode::Up, KeyModifiers::SHIFT);
    s.text();
    assert!(!s.app.transcript.is_following());
    s.key(KeyCode::PageDown, NONE);
    s.text();
    assert!(s.app.transcript.is_following());
}

#[test]
fn search_jumps_to_older_matches_and_wraps() {
    let mut a = numbered(200);
    a.notice("needle in the middle");
    for i in 200..400 {
        a.notice(&format!("filler {i}"));
    }
    let mut s = screen(a, 40, 12);
    s.text();
    s.key(KeyCode::Char('f'), CTRL);
    assert!(matches!(s.app.overlay(), Overlay::Search { .. }));
    s.type_text("NEEDLE\n");
    let found = s.text();
    assert!(found.contains("needle in the middle"), "{found}");
    assert!(!s.app.transcript.is_following());
    // Esc closes the overlay; the view stays on the match.
    s.key(KeyCode::Esc, NONE);
    assert_eq!(*s.app.overlay(), Overlay::None);
    assert!(s.text().contains("needle in the middle"));
}

#[test]
fn enter_sends_and_steers_alt_enter_queues_esc_interrupts() {
    let mut s = screen(app(), 40, 10);
    assert_eq!(s.type_text("hello\n"), vec![Output::Prompt("hello".into())]);
    let mut busy = s.app.status.clone();
    busy.busy = true;
    s.app.set_status(busy);
    assert_eq!(
        s.type_text("go left\n"),
        vec![Output::Steer("go left".into())]
    );
    s.type_text("then test");
    assert_eq!(
        s.key(KeyCode::Enter, KeyModifiers::ALT),
        Some(Output::FollowUp("then test".into()))
    );
    assert_eq!(s.key(KeyCode::Esc, NONE), Some(Output::Interrupt));
    // History: Up recalls what was sent.
    s.key(KeyCode::Up, NONE);
    assert_eq!(s.app.editor.text(), "then test");
}

#[test]
fn ctrl_c_interrupts_or_clears_then_a_second_press_exits() {
    let mut s = screen(app(), 60, 10);
    // Idle with text: the first press clears it and arms nothing.
    s.type_text("draft");
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
    assert!(s.app.editor.is_empty());
    assert!(!s.text().contains("again to exit"), "{}", s.text());
    // Idle and empty: a hint, then a second press exits.
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
    assert!(
        s.text().contains("ready · press Ctrl+C again to exit"),
        "{}",
        s.text()
    );
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), Some(Output::Quit));

    // Any other key in between disarms it.
    let mut s = screen(app(), 60, 10);
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
    s.type_text("x");
    assert!(!s.text().contains("again to exit"), "{}", s.text());
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
    assert!(s.app.editor.is_empty());

    // Working: the first press interrupts (the typed text stays); a
    // second exits, asking first while the work still runs.
    let mut s = screen(app(), 60, 10);
    s.app.set_status(Status {
        busy: true,
        ..Status::default()
    });
    s.type_text("next");
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), Some(Output::Interrupt));
    assert_eq!(s.app.editor.text(), "next");
    assert!(
        s.text().contains(" working ") && s.text().contains(" · press Ctrl+C again to exit"),
        "{}",
        s.text()
    );
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
    assert!(matches!(s.app.overlay(), Overlay::Confirm { .. }));
    assert!(s.text().contains("Exit anyway?"));
    assert_eq!(s.key(KeyCode::Char('n'), NONE), None);
    assert_eq!(*s.app.overlay(), Overlay::None);
    // Once the turn has stopped, the second press exits at once.
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), Some(Output::Interrupt));
    s.app.set_status(Status::default());
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), Some(Output::Quit));
    // Esc keeps interrupting.
    s.app.set_status(Status {
        busy: true,
        ..Status::default()
    });
    assert_eq!(s.key(KeyCode::Esc, NONE), Some(Output::Interrupt));
}

#[test]
fn the_exit_hint_lapses_after_its_moment() {
    let mut s = screen(app(), 60, 10);
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
    assert!(s.text().contains("again to exit"));
    std::thread::sleep(smith_tui::app::DOUBLE_CTRL_C + std::time::Duration::from_millis(50));
    let before = s.app.generation();
    s.app.tick();
    assert_ne!(
        s.app.generation(),
        before,
        "the lapse did not ask for a frame"
    );
    assert!(!s.text().contains("again to exit"), "{}", s.text());
    // The next press arms again rather than exiting.
    assert_eq!(s.key(KeyCode::Char('c'), CTRL), None);
}

#[test]
fn without_the_kitty_protocol_newlines_come_from_ctrl_j_and_backslash_enter() {
    let mut s = screen(app(), 60, 12);
    s.type_text("first");
    // Ctrl+J (byte 0x0A) is a new line, not Enter.
    assert_eq!(s.key(KeyCode::Char('j'), CTRL), None);
    s.type_text("second\\");
    // `\` just before the cursor and Enter: a new line, the `\` removed.
    assert_eq!(s.key(KeyCode::Enter, NONE), None);
    assert_eq!(s.app.editor.text(), "first\nsecond\n");
    // A `\` elsewhere in the line stays and Enter sends.
    assert_eq!(
        s.type_text("a\\b\n"),
        vec![Output::Prompt("first\nsecond\na\\b".into())]
    );
    // Alt+Enter (Esc then Enter) still queues a follow-up while busy.
    s.app.set_status(Status {
        busy: true,
        ..Status::default()
    });
    s.type_text("later");
    assert_eq!(
        s.key(KeyCode::Enter, KeyModifiers::ALT),
        Some(Output::FollowUp("later".into()))
    );
}

#[test]
fn alt_b_and_alt_f_move_by_words_and_alt_backspace_deletes_one() {
    let alt = KeyModifiers::ALT;
    let mut s = screen(app(), 60, 12);
    s.type_text("fix the flaky test");
    s.key(KeyCode::Char('b'), alt);
    s.key(KeyCode::Char('b'), alt);
    s.type_text("very ");
    assert_eq!(s.app.editor.text(), "fix the very flaky test");
    s.key(KeyCode::Char('f'), alt);
    s.type_text("!");
    assert_eq!(s.app.editor.text(), "fix the very flaky! test");
    // Other Alt+letters type nothing.
    s.key(KeyCode::Char('z'), alt);
    assert_eq!(s.app.editor.text(), "fix the very flaky! test");
    s.key(KeyCode::End, NONE);
    s.key(KeyCode::Backspace, alt);
    assert_eq!(s.app.editor.text(), "fix the very flaky! ");
    // Ctrl+Left / Ctrl+Right move by words too.
    s.key(KeyCode::Left, CTRL);
    s.key(KeyCode::Right, CTRL);
    s.type_text("?");
    assert_eq!(s.app.editor.text(), "fix the very flaky?! ");
}

#[test]
fn typos_of_commands_and_shell_lines_are_refused_not_sent() {
    let mut s = screen(app(), 100, 16);
    // A mistyped command: refused with the command meant; the line stays.
    assert_eq!(s.type_text("/moddel gpt-5\n"), vec![]);
    assert_eq!(s.app.editor.text(), "/moddel gpt-5");
    let text = s.text();
    assert!(
        text.contains("unknown command /moddel — did you mean /model?"),
        "{text}"
    );
    let sent = (0..s.app.transcript.len())
        .any(|i| s.app.transcript.record(i).unwrap().kind == EntryKind::User);
    assert!(!sent, "{text}");
    // Fixed, it runs.
    s.key(KeyCode::Home, NONE);
    s.key(KeyCode::Right, NONE);
    s.key(KeyCode::Right, NONE);
    s.key(KeyCode::Right, NONE);
    s.key(KeyCode::Delete, NONE);
    assert_eq!(
        s.key(KeyCode::Enter, NONE),
        Some(Output::Command {
            name: "model".into(),
            arg: "gpt-5".into()
        })
    );
    // A name like no command's: refused without a suggestion.
    assert_eq!(s.type_text("/xyzzyq\n"), vec![]);
    assert!(
        s.text()
            .contains("unknown command /xyzzyq: no command has that name"),
        "{}",
        s.text()
    );
    s.app.editor.clear();
    // A shell line: refused with how to run a command.
    assert_eq!(s.type_text("!ls\n"), vec![]);
    assert_eq!(s.app.editor.text(), "!ls");
    assert!(
        s.text().contains("not sent: !ls would run a shell command"),
        "{}",
        s.text()
    );
    s.app.editor.clear();
    // Paths are prompts: a second `/` in the first word.
    assert_eq!(
        s.type_text("/srv/nowhere/x is broken\n"),
        vec![Output::Prompt("/srv/nowhere/x is broken".into())]
    );
    // Alt+Enter (queue a follow-up) refuses them too.
    s.app.set_status(Status {
        busy: true,
        ..Status::default()
    });
    s.type_text("/moddel");
    assert_eq!(s.key(KeyCode::Enter, KeyModifiers::ALT), None);
    assert_eq!(s.app.editor.text(), "/moddel");
    s.app.editor.clear();
    s.type_text("!make");
    assert_eq!(s.key(KeyCode::Enter, KeyModifiers::ALT), None);
    assert_eq!(s.app.editor.text(), "!make");
    s.app.editor.clear();
    s.app.set_status(Status::default());
    // A leading space sends any line as written.
    assert_eq!(
        s.type_text(" !important: keep it\n"),
        vec![Output::Prompt(" !important: keep it".into())]
    );
    assert_eq!(
        s.type_text(" /moddel\n"),
        vec![Output::Prompt(" /moddel".into())]
    );
}

#[test]
fn overlays_own_focus() {
    let mut a = app();
    a.set_models(vec![
        "mock-model".into(),
        "mock-large".into(),
        "other".into(),
    ]);
    let mut s = screen(a, 60, 20);
    s.key(KeyCode::Char('p'), CTRL);
    assert!(matches!(s.app.overlay(), Overlay::Picker(_)));
    // Typed keys filter the picker, not the editor.
    s.type_text("large");
    assert!(s.app.editor.is_empty());
    assert!(s.text().contains("mock-large"));
    assert_eq!(
        s.key(KeyCode::Enter, NONE),
        Some(Output::Command {
            name: "model".into(),
            arg: "mock-large".into()
        })
    );
    assert_eq!(*s.app.overlay(), Overlay::None);
    // Help closes on any key, which it swallows.
    s.key(KeyCode::F(1), NONE);
    assert_eq!(s.key(KeyCode::Char('x'), NONE), None);
    assert!(s.app.editor.is_empty());
    // An input intent collects text and hands it to its command.
    s.app.open(Overlay::Prompt {
        message: "Branch name?".into(),
        command: "branch".into(),
        text: String::new(),
        cancel: None,
    });
    s.type_text("fix");
    assert!(s.text().contains("Branch name?"));
    assert_eq!(
        s.key(KeyCode::Enter, NONE),
        Some(Output::Command {
            name: "branch".into(),
            arg: "fix".into()
        })
    );
}

#[test]
fn slash_commands_complete_and_run() {
    let mut s = screen(app(), 60, 16);
    s.type_text("/com");
    s.key(KeyCode::Tab, NONE);
    assert_eq!(s.app.editor.text(), "/compact ");
    assert_eq!(
        s.key(KeyCode::Enter, NONE),
        Some(Output::Command {
            name: "compact".into(),
            arg: String::new()
        })
    );
    s.type_text("/re");
    s.key(KeyCode::Down, NONE);
    assert_eq!(
        s.key(KeyCode::Enter, NONE),
        Some(Output::Command {
            name: "replay".into(),
            arg: String::new()
        })
    );
    // An unknown slash word is sent as a prompt.
    assert_eq!(
        s.type_text("/tmp is full\n"),
        vec![Output::Prompt("/tmp is full".into())]
    );
}

#[test]
fn at_completes_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
    std::fs::write(dir.path().join("src/mod.rs"), "").unwrap();
    let mut a = app();
    a.set_cwd(dir.path().to_owned());
    let mut s = screen(a, 60, 16);
    s.type_text("look at @sr");
    s.key(KeyCode::Tab, NONE);
    assert_eq!(s.app.editor.text(), "look at @src/");
    s.type_text("m");
    s.key(KeyCode::Tab, NONE);
    let popup = s.text();
    assert!(
        popup.contains("@src/main.rs") && popup.contains("@src/mod.rs"),
        "{popup}"
    );
    s.key(KeyCode::Down, NONE);
    s.key(KeyCode::Enter, NONE);
    assert_eq!(s.app.editor.text(), "look at @src/mod.rs");
}

#[test]
fn paste_keeps_lines_and_drops_controls() {
    let mut s = screen(app(), 40, 10);
    s.event(&Event::Paste("one\r\ntwo\u{1b}[2J".into()));
    assert_eq!(s.app.editor.text(), "one\ntwo[2J");
}

#[test]
fn resize_and_focus_keep_a_valid_layout() {
    let mut a = app();
    conversation(&mut a);
    let mut s = screen(a, 60, 30);
    s.text();
    s.key(KeyCode::PageUp, NONE);
    for (w, h) in [(20, 8), (1, 1), (0, 0), (200, 60), (3, 40), (60, 30)] {
        s.resize(w, h);
        let text = s.text();
        assert_eq!(text.lines().count(), usize::from(h));
        assert!(text.lines().all(|l| l.chars().count() <= usize::from(w)));
    }
    s.event(&Event::FocusLost);
    assert!(!s.app.focused());
    s.event(&Event::FocusGained);
    assert!(s.app.focused());
}

#[test]
fn no_drawn_cell_holds_a_control_character() {
    let mut a = app();
    a.assistant_delta("\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{9b}1;1H\u{85}ok\r");
    a.tool_start("x", "bash\u{1b}[31m", "\u{7}");
    a.tool_end("x", true, "\u{1b}P+q\u{1b}\\out\u{0}put");
    let mut s = screen(a, 40, 10);
    let screen = s.frame().clone();
    assert!(
        screen
            .cells()
            .iter()
            .all(|c| c.is_continuation() || !smith_tui::sanitize::is_control(c.ch))
    );
    // Every control is shown as a visible picture, never hidden: the
    // clipboard write, the clear and the cursor move are readable text.
    let text = screen.to_text();
    assert!(
        text.contains("\u{241b}]52;c;ZXZpbA==\u{2407}\u{241b}[2J\u{fffd}1;1H\u{fffd}ok"),
        "{text}"
    );
    assert!(
        text.contains("\u{241b}P+q\u{241b}\\out\u{2400}put"),
        "{text}"
    );
}

#[test]
fn copy_takes_the_last_answer_sanitized() {
    let mut a = app();
    a.assistant_delta("first");
    a.assistant_delta(" answer\u{1b}[0m");
    let mut s = screen(a, 40, 10);
    assert_eq!(
        s.key(KeyCode::Char('y'), CTRL),
        Some(Output::Copy("first answer".into()))
    );
}

#[test]
fn an_unchanged_frame_writes_nothing_and_one_key_writes_little() {
    let mut a = app();
    conversation(&mut a);
    let mut s = screen(a, 80, 24);
    s.frame();
    s.frame();
    assert_eq!(s.last_frame_bytes, 0);
    s.type_text("x");
    s.frame();
    assert!(
        s.last_frame_bytes > 0 && s.last_frame_bytes < 64,
        "{}",
        s.last_frame_bytes
    );
}

#[test]
fn selection_moves_over_visible_entries_and_copies_the_selected_one() {
    let mut a = numbered(20);
    a.assistant_delta("\u{1b}[1mlast\u{1b}[0m answer");
    let mut s = screen(a, 40, 12);
    s.text();
    // The first Alt+Up selects the last visible entry, the next moves up.
    s.key(KeyCode::Up, KeyModifiers::ALT);
    s.key(KeyCode::Up, KeyModifiers::ALT);
    assert_eq!(
        s.key(KeyCode::Char('y'), CTRL),
        Some(Output::Copy("notice 19".into()))
    );
    // Selecting far up scrolls the selection into view.
    for _ in 0..50 {
        s.key(KeyCode::Up, KeyModifiers::ALT);
    }
    let text = s.text();
    assert!(text.contains("message 0"), "{text}");
    assert_eq!(
        s.key(KeyCode::Char('y'), CTRL),
        Some(Output::Copy("message 0".into()))
    );
    // Esc clears the selection; copy falls back to the last answer.
    s.key(KeyCode::Esc, NONE);
    assert_eq!(
        s.key(KeyCode::Char('y'), CTRL),
        Some(Output::Copy("last answer".into()))
    );
}

fn wheel(kind: crossterm::event::MouseEventKind) -> Event {
    Event::Mouse(crossterm::event::MouseEvent {
        kind,
        column: 5,
        row: 3,
        modifiers: NONE,
    })
}

#[test]
fn the_wheel_scrolls_only_when_the_mouse_is_captured() {
    use crossterm::event::MouseEventKind::{ScrollDown, ScrollUp};
    let mut s = screen(numbered(30), 40, 12);
    s.text();
    s.app.handle(&wheel(ScrollUp));
    s.text();
    assert!(!s.app.transcript.is_following());
    s.app.handle(&wheel(ScrollDown));
    s.text();
    assert!(s.app.transcript.is_following());

    let mut off = screen(numbered(30), 40, 12);
    off.app.set_options(smith_tui::Options {
        mouse: false,
        ..smith_tui::Options::default()
    });
    off.text();
    off.app.handle(&wheel(ScrollUp));
    off.text();
    assert!(off.app.transcript.is_following());
}

#[test]
fn a_tool_presentation_sets_the_call_s_title_and_preview_lines() {
    use smith_tui::product::{ProductSpec, ToolSpec};
    let overlay = ProductSpec {
        plugin: "example/tools".to_owned(),
        tools: vec![ToolSpec {
            tool: "bash".to_owned(),
            title: "$ {command}".to_owned(),
            subject_argument: Some("command".to_owned()),
            result_style: "code".to_owned(),
            preview_lines: 2,
        }],
        ..ProductSpec::default()
    };
    let (product, errors) =
        smith_tui::Product::build(&[smith_tui::fixture::product_spec(), overlay]);
    assert!(errors.is_empty(), "{errors:?}");
    let mut a = smith_tui::App::new(product, smith_tui::Options::default());
    conversation(&mut a);
    let text = screen(a, 60, 30).text();
    let lines: Vec<&str> = text.lines().collect();
    let call = lines
        .iter()
        .position(|l| *l == "✓ $ ls -la")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        lines[call + 2..call + 5],
        ["│ total 3", "│ README.md", "│ … 6 more lines (ctrl+t)"],
        "{text}"
    );
    // The read call keeps smith/product's presentation.
    assert!(lines.contains(&"✗ read README.md"), "{text}");
}

#[test]
fn plugin_questions_wait_their_turn_and_answer_even_when_dismissed() {
    use smith_tui::app::Picker;
    let answer = |arg: &str| Output::Command {
        name: "answer".into(),
        arg: arg.into(),
    };
    let mut s = screen(app(), 60, 20);
    // The user is reading help when two questions arrive: they wait.
    s.key(KeyCode::F(1), NONE);
    s.app.ask(Overlay::Confirm {
        message: "Deploy now?".into(),
        on_yes: answer("yes"),
        on_no: Some(answer("no")),
    });
    s.app.ask(Overlay::Picker(Picker {
        title: "Which target?".into(),
        detail: Vec::new(),
        command: "answer".into(),
        items: vec!["staging".into(), "production".into()],
        filter: String::new(),
        selected: 0,
        cancel: Some(answer("")),
        ..Picker::default()
    }));
    assert_eq!(*s.app.overlay(), Overlay::Help);
    // Closing help opens the first question; "n" answers it with no.
    assert_eq!(s.key(KeyCode::Char('x'), NONE), None);
    assert!(s.text().contains("Deploy now?"));
    assert_eq!(s.key(KeyCode::Char('n'), NONE), Some(answer("no")));
    // The second question follows at once; Esc answers it with nothing.
    assert!(s.text().contains("Which target?"));
    assert!(s.text().contains("production"));
    assert_eq!(s.key(KeyCode::Esc, NONE), Some(answer("")));
    assert_eq!(*s.app.overlay(), Overlay::None);
    // With nothing open, a question opens at once; Esc on a text question
    // gives its cancel output.
    s.app.ask(Overlay::Prompt {
        message: "Release name?".into(),
        command: "answer".into(),
        text: String::new(),
        cancel: Some(answer("")),
    });
    assert!(matches!(s.app.overlay(), Overlay::Prompt { .. }));
    s.type_text("v2");
    assert_eq!(s.key(KeyCode::Esc, NONE), Some(answer("")));
}

#[test]
fn a_withdrawn_question_closes_open_or_queued_and_the_next_takes_focus() {
    use smith_tui::app::Picker;
    let answer = |name: &str, arg: &str| Output::Command {
        name: name.into(),
        arg: arg.into(),
    };
    let mut s = screen(app(), 60, 20);
    s.app.ask(Overlay::Confirm {
        message: "Deploy now?".into(),
        on_yes: answer("q-1", "yes"),
        on_no: Some(answer("q-1", "no")),
    });
    s.app.ask(Overlay::Picker(Picker {
        title: "Which target?".into(),
        detail: Vec::new(),
        command: "q-2".into(),
        items: vec!["staging".into(), "production".into()],
        filter: String::new(),
        selected: 0,
        cancel: Some(answer("q-2", "staging")),
        ..Picker::default()
    }));
    s.app.ask(Overlay::Prompt {
        message: "Release name?".into(),
        command: "q-3".into(),
        text: String::new(),
        cancel: Some(answer("q-3", "")),
    });
    // A queued question that no longer waits never opens.
    assert!(s.app.withdraw("q-2"));
    assert!(!s.app.withdraw("q-2"));
    assert!(s.text().contains("Deploy now?"));
    // The open one closes and the next queued one takes focus.
    assert!(s.app.withdraw("q-1"));
    assert!(s.text().contains("Release name?"), "{}", s.text());
    assert!(!s.text().contains("Deploy now?"));
    assert!(s.app.withdraw("q-3"));
    assert_eq!(*s.app.overlay(), Overlay::None);
    // Other overlays are never withdrawn.
    s.key(KeyCode::F(1), NONE);
    assert!(!s.app.withdraw("q-1"));
    assert_eq!(*s.app.overlay(), Overlay::Help);
}

#[test]
fn a_resize_is_reported_to_the_host() {
    let mut s = screen(app(), 60, 20);
    assert_eq!(
        s.event(&Event::Resize(100, 30)),
        Some(Output::Resized {
            columns: 100,
            rows: 30
        })
    );
}

#[test]
fn a_question_shows_its_detail_lines_above_the_choices() {
    use smith_tui::app::Picker;
    let answer = |arg: &str| Output::Command {
        name: "answer".into(),
        arg: arg.into(),
    };
    let picker = |detail: Vec<String>| {
        Overlay::Picker(Picker {
            title: "Allow write?".into(),
            detail,
            command: "answer".into(),
            items: vec!["yes".into(), "no".into()],
            filter: String::new(),
            selected: 0,
            cancel: Some(answer("no")),
            ..Picker::default()
        })
    };
    let mut s = screen(app(), 80, 24);
    s.app.ask(picker(vec![
        "--- a/notes.txt".into(),
        "+++ b/notes.txt".into(),
        "-old line".into(),
        "+new line".into(),
    ]));
    let text = s.text();
    for line in ["Allow write?", "-old line", "+new line", "yes", "no"] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert_eq!(s.key(KeyCode::Enter, NONE), Some(answer("yes")));
    // A detail longer than the screen is cut, and the cut is shown; the
    // choices stay visible.
    let long: Vec<String> = (0..100).map(|n| format!("+line {n}")).collect();
    s.app.ask(picker(long));
    let text = s.text();
    assert!(text.contains("+line 0"), "{text}");
    assert!(!text.contains("+line 99"), "{text}");
    assert!(text.contains('…'), "{text}");
    assert!(text.contains("yes") && text.contains("no"), "{text}");
}

#[test]
fn esc_esc_while_idle_with_an_empty_editor_asks_for_the_rewind_picker() {
    let mut s = screen(app(), 40, 10);
    assert_eq!(s.key(KeyCode::Esc, NONE), None);
    assert_eq!(
        s.key(KeyCode::Esc, NONE),
        Some(Output::Command {
            name: "rewind".into(),
            arg: String::new()
        })
    );
    // A third press starts over.
    assert_eq!(s.key(KeyCode::Esc, NONE), None);
    // Not with text in the editor.
    s.type_text("draft");
    assert_eq!(s.key(KeyCode::Esc, NONE), None);
    assert_eq!(s.key(KeyCode::Esc, NONE), None);
    s.key(KeyCode::Char('u'), CTRL);
    // Not apart: the second press after the window is a first press.
    assert_eq!(s.key(KeyCode::Esc, NONE), None);
    std::thread::sleep(smith_tui::app::DOUBLE_ESC + std::time::Duration::from_millis(50));
    assert_eq!(s.key(KeyCode::Esc, NONE), None);
    // Not while the agent works: Esc interrupts.
    let mut busy = s.app.status.clone();
    busy.busy = true;
    s.app.set_status(busy);
    assert_eq!(s.key(KeyCode::Esc, NONE), Some(Output::Interrupt));
    assert_eq!(s.key(KeyCode::Esc, NONE), Some(Output::Interrupt));
}

#[test]
fn the_help_scrolls_when_it_does_not_fit() {
    let mut s = screen(app(), 60, 20);
    s.key(KeyCode::F(1), NONE);
    let text = s.text();
    assert!(text.contains("↑↓ pgup pgdn scroll"), "{text}");
    assert!(text.contains("enter         send"), "{text}");
    assert!(!text.contains("/quit"), "{text}");
    // PageDown pages; End reaches the last command; nothing closes.
    s.key(KeyCode::PageDown, NONE);
    let text = s.text();
    assert_eq!(*s.app.overlay(), Overlay::Help);
    assert!(!text.contains("enter         send"), "{text}");
    s.key(KeyCode::End, NONE);
    let text = s.text();
    assert!(text.contains("/quit         exit smith"), "{text}");
    // Down at the end stays at the end; Up moves one row back.
    s.key(KeyCode::Down, NONE);
    assert!(s.text().contains("/quit         exit smith"));
    s.key(KeyCode::Up, NONE);
    assert!(
        !s.text().contains("/quit         exit smith"),
        "{}",
        s.text()
    );
    s.key(KeyCode::PageUp, NONE);
    s.key(KeyCode::Home, NONE);
    assert!(s.text().contains("enter         send"));
    // Any other key closes it; it opens at the top again.
    s.key(KeyCode::End, NONE);
    s.key(KeyCode::Char('q'), NONE);
    assert_eq!(*s.app.overlay(), Overlay::None);
    assert!(s.app.editor.is_empty());
    s.key(KeyCode::F(1), NONE);
    assert!(s.text().contains("enter         send"));
    // When it fits, no scrolling is offered.
    let mut s = screen(app(), 70, 60);
    s.key(KeyCode::F(1), NONE);
    let text = s.text();
    assert!(text.contains("help — any key closes"), "{text}");
    assert!(text.contains("/quit         exit smith"), "{text}");
}

#[test]
fn a_plugins_panel_sits_above_the_status_line_is_capped_and_goes_when_emptied() {
    let mut s = screen(numbered(30), 40, 16);
    s.app.set_widget(
        "smith/todo",
        "todo",
        "1/2 done\n[x] read\n[>] fix \u{1b}[31mit",
    );
    let text = s.text();
    let rows: Vec<&str> = text.lines().collect();
    let at = |needle: &str| {
        rows.iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
    };
    let rule = at("── todo ──");
    assert_eq!(at("1/2 done"), rule + 1);
    assert_eq!(at("[x] read"), rule + 2);
    // Control characters are not drawn.
    assert!(rows[rule + 3].contains("[>] fix [31mit"), "{text}");
    assert_eq!(at(" ready"), rule + 4, "{text}");
    // The newest transcript line is still shown, above the panel.
    assert!(at("notice 29") < rule, "{text}");
    // A long panel takes at most half of the transcript's rows and says
    // how much is left out.
    let long: Vec<String> = (0..40).map(|i| format!("item {i}")).collect();
    s.app.set_widget("smith/todo", "todo", &long.join("\n"));
    let text = s.text();
    let rows: Vec<&str> = text.lines().collect();
    let rule = rows.iter().position(|r| r.contains("── todo ──")).unwrap();
    let status = rows.iter().position(|r| r.contains(" ready")).unwrap();
    let panel = status - rule;
    assert_eq!(panel, (status / 2).min(12), "{text}");
    assert!(rows[status - 1].contains("more lines"), "{text}");
    // Empty text removes it.
    s.app.set_widget("smith/todo", "todo", "");
    let text = s.text();
    assert!(!text.contains("── todo"), "{text}");
    assert!(s.app.widgets().is_empty());
}
