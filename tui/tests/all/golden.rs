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

/// The screen's text followed by the rows above the status line drawn
/// reversed (the highlighted row of an overlay).
fn with_highlight(s: &mut smith_tui::headless::Headless) -> String {
    let mut text = s.text();
    let screen = s.frame().clone();
    for y in 0..screen.height() - 3 {
        let reversed = (0..screen.width())
            .filter(|&x| {
                screen
                    .get(x, y)
                    .unwrap()
                    .style
                    .attrs
                    .contains(Attrs::REVERSE)
            })
            .count();
        if reversed > 0 {
            text.push_str(&format!("highlighted row {y} ({reversed} cells)\n"));
        }
    }
    text
}

/// The session's branches as the host lists them: a root chain forking
/// twice, the current leaf marked.
fn branch_tree() -> smith_tui::Tree {
    use smith_tui::TreeRow;
    let row = |depth: u16, label: &str, arg: &str, current: bool| TreeRow {
        depth,
        label: label.to_owned(),
        arg: arg.to_owned(),
        current,
    };
    smith_tui::Tree {
        title: " branches ".to_owned(),
        command: "branch".to_owned(),
        rows: vec![
            row(0, "entry 4 · fork · “list the files”", "4", false),
            row(1, "entry 9 · 9 entries · “now read the readme”", "9", false),
            row(
                1,
                "entry 12 · fork · “read Cargo.toml instead”",
                "12",
                false,
            ),
            row(2, "entry 15 · 15 entries · “and the lock file”", "15", true),
            row(2, "entry 17 · 14 entries · “stop”", "17", false),
        ],
        selected: 3,
    }
}

#[test]
fn branch_tree_overlay() {
    let mut a = app();
    conversation(&mut a);
    a.open(smith_tui::Overlay::Tree(branch_tree()));
    let mut s = screen(a, 70, 20);
    check("branch_tree", &with_highlight(&mut s));
    // Moving and choosing runs the tree's command with the row's argument.
    s.key(KeyCode::Down, KeyModifiers::NONE);
    check("branch_tree_moved", &with_highlight(&mut s));
    assert_eq!(
        s.key(KeyCode::Enter, KeyModifiers::NONE),
        Some(smith_tui::Output::Command {
            name: "branch".to_owned(),
            arg: "17".to_owned()
        })
    );
    assert_eq!(*s.app.overlay(), smith_tui::Overlay::None);
}

#[test]
fn branch_tree_esc_closes_without_a_command() {
    let mut a = app();
    a.open(smith_tui::Overlay::Tree(branch_tree()));
    let mut s = screen(a, 70, 20);
    assert_eq!(s.key(KeyCode::Esc, KeyModifiers::NONE), None);
    assert_eq!(*s.app.overlay(), smith_tui::Overlay::None);
}

#[test]
fn plugins_info_overlay() {
    let mut a = app();
    a.open(smith_tui::Overlay::Info {
        title: " plugins ".to_owned(),
        lines: vec![
            "smith/mock (provider, built in): The scripted provider".to_owned(),
            "smith/product (extension, built in): The default layout, theme, keybindings, commands and tool presentation".to_owned(),
            String::new(),
            "Plugins run only when the plugin host is enabled.".to_owned(),
        ],
    });
    let mut s = screen(a, 60, 16);
    check("plugins", &s.text());
    // Any key closes it.
    assert_eq!(s.key(KeyCode::Char('q'), KeyModifiers::NONE), None);
    assert_eq!(*s.app.overlay(), smith_tui::Overlay::None);
    assert!(s.app.editor.is_empty());
}

#[test]
fn status_line_shows_the_host_activity() {
    let mut a = app();
    let mut status = a.status.clone();
    status.activity = "compacting".to_owned();
    a.set_status(status);
    let mut s = screen(a, 60, 6);
    check("status_compacting", &s.text());
}

/// A provider retry counts down in the status line, and the countdown
/// moves on with the idle tick; a passed deadline reads "retrying".
#[test]
fn status_line_counts_down_to_a_provider_retry() {
    let mut a = app();
    let mut status = a.status.clone();
    status.busy = true;
    status.retry_at = Some(std::time::Instant::now() + std::time::Duration::from_millis(12_500));
    a.set_status(status);
    let before = a.generation();
    a.tick();
    assert_ne!(
        a.generation(),
        before,
        "a pending retry redraws on the tick"
    );
    let mut s = screen(a, 80, 6);
    let text = s.text();
    let line = text.lines().find(|l| l.contains(" working")).unwrap();
    assert!(line.contains(" · retrying in 13 s · "), "{line}");
    let mut status = s.app.status.clone();
    status.retry_at = Some(std::time::Instant::now());
    s.app.set_status(status);
    let text = s.text();
    let line = text.lines().find(|l| l.contains(" working")).unwrap();
    assert!(line.contains(" · retrying · "), "{line}");
    // The run ends: nothing pending (no retry, no spinner while idle),
    // nothing redrawn.
    let mut status = s.app.status.clone();
    status.retry_at = None;
    status.busy = false;
    s.app.set_status(status);
    let before = s.app.generation();
    s.app.tick();
    assert_eq!(
        s.app.generation(),
        before,
        "nothing pending, nothing redrawn"
    );
    assert!(!s.text().contains("retrying"));
}
