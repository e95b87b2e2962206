//! The project trust question: its screen, and that it owns focus until
//! answered with an explicit choice.

use crossterm::event::{Event, KeyCode, KeyModifiers};
use smith_tui::{Output, Overlay};

use crate::golden::check;
use crate::{app, screen};

const NONE: KeyModifiers = KeyModifiers::NONE;
const PATH: &str = "/home/user/projects/example";

fn asked(changed: bool) -> smith_tui::headless::Headless {
    let mut a = app();
    a.notice("session tui-1 · F1 help · / commands");
    a.open(Overlay::Trust {
        path: PATH.to_owned(),
        changed,
        on_trust: false,
    });
    screen(a, 72, 24)
}

/// The screen's words as one line, so wrapped phrases can be searched.
fn words(text: &str) -> String {
    text.lines()
        .map(|l| l.trim_matches(|c: char| c == ' ' || c == '│').trim())
        .collect::<Vec<_>>()
        .join(" ")
}

fn trust_answer(trust: bool) -> Option<Output> {
    Some(Output::Trust {
        path: PATH.to_owned(),
        trust,
    })
}

#[test]
fn the_question_names_the_project_and_what_trust_enables() {
    let mut s = asked(false);
    let screen = s.text();
    check("trust", &screen);
    let text = words(&screen);
    assert!(text.contains(PATH));
    for needle in [
        "project configuration",
        "project plugins",
        "project-local executable",
        "Nothing from it is used until you trust it",
        "t trust",
        "n not now",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from\n{text}");
    }
}

#[test]
fn a_changed_project_says_so() {
    let mut s = asked(true);
    let screen = s.text();
    check("trust_changed", &screen);
    let text = words(&screen);
    assert!(text.contains("changed since you trusted it"));
}

#[test]
fn t_trusts_and_closes_the_question() {
    let mut s = asked(false);
    assert_eq!(s.key(KeyCode::Char('t'), NONE), trust_answer(true));
    assert_eq!(s.app.overlay(), &Overlay::None);
}

#[test]
fn n_and_esc_answer_not_now() {
    for code in [KeyCode::Char('n'), KeyCode::Esc] {
        let mut s = asked(false);
        assert_eq!(s.key(code, NONE), trust_answer(false));
        assert_eq!(s.app.overlay(), &Overlay::None);
    }
}

#[test]
fn enter_takes_the_highlighted_choice_which_starts_on_not_now() {
    let mut s = asked(false);
    assert_eq!(s.key(KeyCode::Enter, NONE), trust_answer(false));
    let mut s = asked(false);
    assert_eq!(s.key(KeyCode::Right, NONE), None);
    assert!(matches!(
        s.app.overlay(),
        Overlay::Trust { on_trust: true, .. }
    ));
    assert_eq!(s.key(KeyCode::Enter, NONE), trust_answer(true));
}

#[test]
fn the_question_owns_focus_until_answered() {
    let mut s = asked(false);
    // Typing, pasting, help and commands reach nothing behind it.
    for c in "hello /help".chars() {
        if c != 't' && c != 'n' {
            assert_eq!(s.key(KeyCode::Char(c), NONE), None);
        }
    }
    s.event(&Event::Paste("trust me".to_owned()));
    assert_eq!(s.key(KeyCode::F(1), NONE), None);
    assert!(matches!(s.app.overlay(), Overlay::Trust { .. }));
    assert!(s.app.editor.is_empty());
    // Ctrl+C still leaves the program, without trusting.
    assert_eq!(
        s.key(KeyCode::Char('c'), KeyModifiers::CONTROL),
        Some(Output::Quit)
    );
}
