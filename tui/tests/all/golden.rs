//! Golden screen snapshots under tests/golden/. `SMITH_BLESS=1` rewrites
//! them; otherwise a difference fails with both screens shown.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyModifiers};

use smith_tui::style::Attrs;

use crate::{app, conversation, screen};

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"))
}

/// Compares `actual` with the golden file `name` (or rewrites it).
pub fn check(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("SMITH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "golden file {} cannot be read ({err}); run with SMITH_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "screen differs from {}; rerun with SMITH_BLESS=1 if the change is intended\n--- expected\n{expected}--- actual\n{actual}",
        path.display()
    );
}

#[test]
fn empty_screen() {
    let mut s = screen(app(), 60, 10);
    check("empty", &s.text());
}

#[test]
fn conversation_with_tools_thinking_and_errors() {
    let mut a = app();
    conversation(&mut a);
    let mut s = screen(a, 60, 30);
    check("conversation", &s.text());
}

#[test]
fn details_expanded() {
    let mut a = app();
    conversation(&mut a);
    let mut s = screen(a, 60, 30);
    s.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    check("conversation_expanded", &s.text());
}

#[test]
fn command_popup_filters() {
    let mut s = screen(app(), 60, 16);
    s.type_text("/co");
    check("command_popup", &s.text());
}

#[test]
fn help_overlay() {
    let mut s = screen(app(), 70, 40);
    s.key(KeyCode::F(1), KeyModifiers::NONE);
    check("help", &s.text());
}

#[test]
fn multi_line_input_grows_the_editor() {
    let mut s = screen(app(), 40, 12);
    s.type_text("first line");
    s.key(KeyCode::Char('j'), KeyModifiers::CONTROL);
    s.type_text("second line that is long enough to wrap around");
    check("multiline_input", &s.text());
}

#[test]
fn search_highlights_and_status_bar() {
    let mut a = app();
    conversation(&mut a);
    let mut s = screen(a, 60, 30);
    s.key(KeyCode::Char('f'), KeyModifiers::CONTROL);
    s.type_text("readme\n");
    let mut text = s.text();
    // Record the styled cells too: the current match is reversed, the
    // others underlined.
    let screen = s.frame().clone();
    // Transcript rows only (the status line and cursor are reversed too).
    for y in 0..screen.height() - 3 {
        for x in 0..screen.width() {
            let attrs = screen.get(x, y).unwrap().style.attrs;
            if attrs.contains(Attrs::REVERSE) || attrs.contains(Attrs::UNDERLINE) {
                let kind = if attrs.contains(Attrs::REVERSE) {
                    "current"
                } else {
                    "match"
                };
                text.push_str(&format!("{kind} at row {y} col {x}\n"));
            }
        }
    }
    check("search", &text);
}

#[test]
fn tiny_terminal_keeps_a_valid_layout() {
    let mut a = app();
    conversation(&mut a);
    let mut s = screen(a, 12, 3);
    check("tiny", &s.text());
}
