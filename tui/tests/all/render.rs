//! What rendering draws, cell by cell: Markdown's styles in assistant
//! text, diffs coloured with line numbers, collapsed tool output one row
//! a line, `NO_COLOR` keeping only attributes.

use smith_tui::style::{Attrs, Color};
use smith_tui::{App, Buffer, Options};

use crate::{app, screen};

/// The row holding `needle` and the column it starts at.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    for y in 0..buf.height() {
        let row = buf.row_text(y);
        if let Some(at) = row.find(needle) {
            let col = row[..at].chars().count() as u16;
            return Some((col, y));
        }
    }
    None
}

fn cell_style(buf: &Buffer, needle: &str) -> smith_tui::style::Style {
    let (x, y) =
        find(buf, needle).unwrap_or_else(|| panic!("{needle:?} not on screen:\n{}", buf.to_text()));
    buf.get(x, y).unwrap().style
}

const EDIT: &str = "Edited src/lib.rs: replaced 1 occurrence (line 11).\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -8,7 +8,7 @@\n one\n two\n three\n-let old = 1;\n+let new = 2;\n four\n five\n six";

#[test]
fn markdown_headings_emphasis_code_and_links_are_styled() {
    let mut a = app();
    a.assistant_delta(
        "# Plan\n\nFirst **build** it, then *test* with `cargo test`; see [the docs](https://example.org).\n\n- one\n- two\n\n```rust\nfn main() {}\n```",
    );
    let mut s = screen(a, 80, 24);
    let buf = s.frame().clone();
    let text = buf.to_text();
    assert!(!text.contains("# Plan") && !text.contains("**"), "{text}");
    let heading = cell_style(&buf, "Plan");
    assert!(heading.attrs.contains(Attrs::BOLD) && heading.attrs.contains(Attrs::UNDERLINE));
    assert_eq!(heading.fg, Color::Indexed(6));
    assert!(cell_style(&buf, "build").attrs.contains(Attrs::BOLD));
    assert!(cell_style(&buf, "test with").attrs.contains(Attrs::ITALIC));
    assert_eq!(cell_style(&buf, "cargo test").fg, Color::Indexed(3));
    let link = cell_style(&buf, "the docs");
    assert!(link.attrs.contains(Attrs::UNDERLINE));
    assert!(
        cell_style(&buf, "(https://example.org)")
            .attrs
            .contains(Attrs::DIM)
    );
    assert!(
        text.contains("• one\n") && text.contains("• two\n"),
        "{text}"
    );
    // The fence: indented, its keyword highlighted.
    assert!(text.contains("    fn main() {}"), "{text}");
    assert_eq!(cell_style(&buf, "fn main").fg, Color::Indexed(5));
    assert_eq!(cell_style(&buf, "main()").fg, Color::Indexed(4));
}

#[test]
fn without_colors_markdown_keeps_its_attributes() {
    let mut a = App::new(
        smith_tui::fixture::product(),
        Options {
            color: false,
            ..Options::default()
        },
    );
    a.assistant_delta("# Plan\n\nsome **bold** and `code`");
    let mut s = screen(a, 60, 10);
    let buf = s.frame().clone();
    let heading = cell_style(&buf, "Plan");
    assert!(heading.attrs.contains(Attrs::BOLD));
    assert_eq!(heading.fg, Color::Reset);
    assert!(cell_style(&buf, "bold").attrs.contains(Attrs::BOLD));
    assert_eq!(cell_style(&buf, "code").fg, Color::Reset);
}

#[test]
fn an_edit_shows_its_changed_lines_coloured_with_line_numbers_while_collapsed() {
    let mut a = app();
    a.tool_start("c1", "edit", "src/lib.rs");
    a.tool_end("c1", true, EDIT);
    let mut s = screen(a, 70, 40);
    let buf = s.frame().clone();
    let text = buf.to_text();
    // Collapsed: from one context line before the change, the removed and
    // added lines with their old and new numbers.
    assert!(text.contains("│ 10 10   three\n"), "{text}");
    assert!(text.contains("│ 11    - let old = 1;\n"), "{text}");
    assert!(text.contains("│    11 + let new = 2;\n"), "{text}");
    assert!(!text.contains("+++"), "{text}");
    assert_eq!(cell_style(&buf, "- let old").fg, Color::Indexed(1));
    assert_eq!(cell_style(&buf, "+ let new").fg, Color::Indexed(2));
    assert!(cell_style(&buf, "  three").attrs.contains(Attrs::DIM));
    assert!(cell_style(&buf, "11    -").attrs.contains(Attrs::DIM));
    assert!(text.contains("more lines (ctrl+t)"), "{text}");
    // Expanded: the whole result, headers and the hunk line included.
    s.key(
        smith_tui::crossterm::event::KeyCode::Char('t'),
        smith_tui::crossterm::event::KeyModifiers::CONTROL,
    );
    let buf = s.frame().clone();
    let text = buf.to_text();
    assert!(text.contains("│ Edited src/lib.rs"), "{text}");
    assert!(text.contains("│ @@ -8,7 +8,7 @@"), "{text}");
    assert!(text.contains("│ 14 14   six"), "{text}");
    assert_eq!(cell_style(&buf, "@@ -8").fg, Color::Indexed(6));
}

#[test]
fn a_long_line_collapsed_takes_at_most_the_preview_rows_cut_with_an_ellipsis() {
    let mut a = app();
    a.tool_start("c1", "bash", "cat big");
    let long = "y".repeat(5000);
    a.tool_end("c1", true, &format!("start\n{long}\nend\n"));
    let mut s = screen(a, 60, 40);
    let text = s.text();
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("│ ")).collect();
    // Six rows (the preview), the last cut with an ellipsis, then what was
    // not shown whole: the long line and `end`.
    assert_eq!(rows.len(), 7, "{text}");
    assert_eq!(rows[0], "│ start");
    assert_eq!(rows[1], format!("│ {}", "y".repeat(58)));
    assert_eq!(rows[5], format!("│ {}…", "y".repeat(57)));
    assert_eq!(rows[6], "│ … 2 more lines (ctrl+t)");
    assert!(!text.contains("end"), "{text}");
    // Title, its blank line; six rows, the summary and a blank line.
    assert_eq!(s.app.transcript.cached_height(1), 8);
    // Expanded, it wraps whole.
    s.key(
        smith_tui::crossterm::event::KeyCode::Char('o'),
        smith_tui::crossterm::event::KeyModifiers::CONTROL,
    );
    s.frame();
    assert_eq!(
        s.app.transcript.cached_height(1),
        1 + 5000_u32.div_ceil(58) + 1 + 1
    );
}

#[test]
fn ctrl_o_toggles_the_selected_entry_alone_and_ctrl_t_all() {
    use smith_tui::crossterm::event::{KeyCode, KeyModifiers};
    let mut a = app();
    let output: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    a.tool_start("c1", "bash", "first");
    a.tool_end("c1", true, &output);
    a.tool_start("c2", "bash", "second");
    a.tool_end("c2", true, &output);
    let mut s = screen(a, 60, 60);
    let count = |s: &mut smith_tui::headless::Headless| s.text().matches("line 12").count();
    assert_eq!(count(&mut s), 0);
    // Without a selection: the latest output.
    s.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert_eq!(count(&mut s), 1);
    assert!(s.app.transcript.record(3).unwrap().expanded);
    assert!(!s.app.transcript.record(1).unwrap().expanded);
    s.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert_eq!(count(&mut s), 0);
    // Select the first call's title (Alt+Up from the last entry on
    // screen, three times): Ctrl+O opens its output only.
    for _ in 0..4 {
        s.key(KeyCode::Up, KeyModifiers::ALT);
    }
    s.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert!(s.app.transcript.record(1).unwrap().expanded);
    assert!(!s.app.transcript.record(3).unwrap().expanded);
    assert_eq!(count(&mut s), 1);
    // Ctrl+T still expands (then collapses) every entry.
    s.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(count(&mut s), 2);
    s.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(count(&mut s), 0);
}

#[test]
fn the_status_line_shows_model_thinking_context_cost_and_a_spinner_while_busy() {
    use smith_tui::Status;
    let mut a = app();
    let line = |s: &mut smith_tui::headless::Headless| {
        let text = s.text();
        text.lines()
            .find(|l| l.contains("mock-model"))
            .unwrap_or_else(|| panic!("no status line:\n{text}"))
            .to_owned()
    };
    a.set_status(Status {
        model: "mock-model".to_owned(),
        cost: Some(0.0123),
        context: Some((12_345, 200_000)),
        thinking: "high".to_owned(),
        ..Status::default()
    });
    // Idle: no spinner, no elapsed time, and a tick redraws nothing.
    assert_eq!(a.tick_interval(), smith_tui::app::IDLE_TICK);
    let before = a.generation();
    a.tick();
    assert_eq!(a.generation(), before);
    let mut s = screen(a, 100, 8);
    let idle = line(&mut s);
    assert!(
        idle.starts_with(" ready · mock-model · thinking high · $0.0123 · ctx 12k/200k 6%"),
        "{idle}"
    );
    assert!(!idle.contains(smith_tui::app::SPINNER));
    // Busy: a spinner and the elapsed time, moved on by the tick.
    let mut status = s.app.status.clone();
    status.busy = true;
    s.app.set_status(status);
    assert_eq!(s.app.tick_interval(), smith_tui::app::SPIN_INTERVAL);
    let first = line(&mut s);
    let spinner = |l: &str| l.chars().nth(1).unwrap();
    assert!(
        smith_tui::app::SPINNER.contains(&spinner(&first)),
        "{first}"
    );
    assert!(first.contains(" working 0s · mock-model"), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(250));
    let before = s.app.generation();
    s.app.tick();
    assert_ne!(s.app.generation(), before, "the tick redraws while busy");
    let second = line(&mut s);
    assert_ne!(spinner(&first), spinner(&second), "{first} / {second}");
    // Done: the spinner goes.
    let mut status = s.app.status.clone();
    status.busy = false;
    s.app.set_status(status);
    assert!(line(&mut s).starts_with(" ready · "));
    assert!(s.app.busy_since().is_none());
}

#[test]
fn parallel_calls_show_each_output_under_its_own_title_and_stream_their_latest_lines() {
    let mut a = app();
    a.tool_start("c1", "bash", "make one");
    a.tool_start("c2", "bash", "make two");
    a.tool_update("c2", "building two\n");
    a.tool_update(
        "c1",
        "step 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\nstep 7\nstep 8\n",
    );
    let mut s = screen(a, 60, 30);
    let text = s.text();
    // Streaming: the latest lines of each, under its title.
    let one = text.find("bash make one").unwrap();
    let two = text.find("bash make two").unwrap();
    let seven = text.find("step 8").unwrap();
    let building = text.find("building two").unwrap();
    assert!(one < seven && seven < two && two < building, "{text}");
    assert!(!text.contains("step 2"), "{text}");
    assert!(text.contains("… 2 more lines"), "{text}");
    // The second ends first; each result replaces its streamed output.
    s.app.tool_end("c2", true, "two done\n");
    s.app.tool_end("c1", false, "one failed\n");
    let text = s.text();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let at = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap();
    assert_eq!(at("✗ bash make one") + 1, at("│ one failed"), "{text}");
    assert_eq!(at("✓ bash make two") + 1, at("│ two done"), "{text}");
    assert!(
        !text.contains("step 8") && !text.contains("building two"),
        "{text}"
    );
}

#[test]
fn thinking_shows_whole_while_it_streams_then_folds() {
    let mut a = app();
    a.thinking_delta("first line\nsecond line\nthird line\nfourth line\nfifth line");
    let mut s = screen(a, 60, 20);
    let text = s.text();
    assert!(
        text.contains("~ first line") && text.contains("  fifth line"),
        "{text}"
    );
    s.app.message_done();
    let text = s.text();
    assert!(text.contains("~ thinking (5 lines, ctrl+t)"), "{text}");
    assert!(!text.contains("first line"), "{text}");
}

/// A message's session entry id (what `/branch` takes) shows dim at the
/// right end of its first row; of its last row when the first is full;
/// nowhere when no row has room. Entries that are not messages show none.
#[test]
fn entry_ids_show_dim_at_the_right_end_of_a_message() {
    let mut a = app();
    a.sent_message("short prompt");
    a.message_recorded(true, "short prompt", 12);
    a.assistant_start();
    a.assistant_delta(&"word ".repeat(30));
    a.message_recorded(false, "", 345);
    a.notice("a notice");
    let mut s = screen(a, 40, 20);
    let buf = s.frame().clone();
    let text = buf.to_text();
    let (x, y) = find(&buf, "#12").unwrap_or_else(|| panic!("no #12:\n{text}"));
    assert_eq!(x, 40 - 3, "{text}");
    assert!(buf.row_text(y).starts_with("› short prompt "), "{text}");
    assert!(cell_style(&buf, "#12").attrs.contains(Attrs::DIM));
    // The answer's first row is full: its id ends its last row.
    let (first, top) = find(&buf, "word").unwrap();
    assert_eq!(first, 2);
    let (x, y) = find(&buf, "#345").unwrap_or_else(|| panic!("no #345:\n{text}"));
    assert_eq!(x, 40 - 4, "{text}");
    assert!(y > top, "{text}");
    assert!(buf.row_text(y).starts_with("  word"), "{text}");
    assert_eq!(buf.row_text(y + 1).trim(), "", "not the last row:\n{text}");
    assert!(cell_style(&buf, "#345").attrs.contains(Attrs::DIM));
    // One id each, and none for the notice.
    assert_eq!(text.matches('#').count(), 2, "{text}");

    // A one-row prompt that fills the row leaves no room: no id.
    let mut a = app();
    let full = "x".repeat(38);
    a.sent_message(&full);
    a.message_recorded(true, &full, 12);
    let text = screen(a, 40, 10).text();
    assert!(text.contains(&full) && !text.contains("#12"), "{text}");
}

/// A recorded user message's id goes to the message sent with its text —
/// the oldest such, else one whose text the recorded one extends (a hook
/// added context) — and the messages sent before it that were never
/// recorded stop waiting; a message the interface did not show (a runtime
/// notice) takes none. An assistant message's id goes to each of its text
/// entries.
#[test]
fn recorded_messages_take_their_ids_in_order() {
    let mut a = app();
    a.sent_message("refused by a hook");
    a.sent_message("same");
    a.sent_message("same");
    a.sent_message("extended");
    a.message_recorded(true, "[smith] a notice the runtime added", 3);
    a.message_recorded(true, "same", 4);
    a.message_recorded(true, "same", 5);
    a.message_recorded(true, "extended\n\ncontext from a hook", 6);
    // The refused one is no longer waiting: a later message with its text
    // takes nothing.
    a.message_recorded(true, "refused by a hook", 7);
    let t = &a.transcript;
    let ids: Vec<Option<u64>> = (0..t.len()).map(|i| t.entry_id(i)).collect();
    assert_eq!(ids, [None, Some(4), Some(5), Some(6)]);

    let mut a = app();
    a.assistant_start();
    a.thinking_delta("thinking it over");
    a.assistant_delta("first part");
    a.tool_start("c1", "bash", "ls");
    a.assistant_delta("second part");
    a.message_recorded(false, "", 9);
    let t = &a.transcript;
    let with_ids: Vec<(String, u64)> = (0..t.len())
        .filter_map(|i| Some((t.text(i).into_owned(), t.entry_id(i)?)))
        .collect();
    assert_eq!(
        with_ids,
        [("first part".to_owned(), 9), ("second part".to_owned(), 9)]
    );
    // A message of calls alone has no text to carry it.
    a.assistant_start();
    a.tool_start("c2", "bash", "ls");
    a.message_recorded(false, "", 10);
    let t = &a.transcript;
    assert!((0..t.len()).all(|i| t.entry_id(i) != Some(10)));
}
