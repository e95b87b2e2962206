//! The diff: compares the previous frame with the new one and writes only
//! the cells that changed, as ANSI sequences into a caller-owned byte
//! buffer (no allocation once the buffer has grown to a frame's size).

use std::io::Write;

use crate::buffer::{Buffer, Cell};
use crate::style::{Attrs, Color, Style};

/// What the output may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffOptions {
    /// Emit colors (off for `NO_COLOR` or a monochrome terminal: attributes only).
    pub color: bool,
    /// Wrap the frame in synchronized-update marks (DEC mode 2026).
    pub synchronized: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        Self {
            color: true,
            synchronized: false,
        }
    }
}

fn push_color(out: &mut Vec<u8>, color: Color, fg: bool) {
    // Writing to a Vec cannot fail.
    let _ = match (color, fg) {
        (Color::Reset, true) => out.write_all(b";39"),
        (Color::Reset, false) => out.write_all(b";49"),
        (Color::Indexed(n), true) if n < 8 => write!(out, ";{}", 30 + n),
        (Color::Indexed(n), false) if n < 8 => write!(out, ";{}", 40 + n),
        (Color::Indexed(n), true) if n < 16 => write!(out, ";{}", 90 + n - 8),
        (Color::Indexed(n), false) if n < 16 => write!(out, ";{}", 100 + n - 8),
        (Color::Indexed(n), true) => write!(out, ";38;5;{n}"),
        (Color::Indexed(n), false) => write!(out, ";48;5;{n}"),
        (Color::Rgb(r, g, b), true) => write!(out, ";38;2;{r};{g};{b}"),
        (Color::Rgb(r, g, b), false) => write!(out, ";48;2;{r};{g};{b}"),
    };
}

fn push_style(out: &mut Vec<u8>, style: Style, opts: &DiffOptions) {
    out.extend_from_slice(b"\x1b[0");
    for (attr, code) in [
        (Attrs::BOLD, b";1" as &[u8]),
        (Attrs::DIM, b";2"),
        (Attrs::ITALIC, b";3"),
        (Attrs::UNDERLINE, b";4"),
        (Attrs::REVERSE, b";7"),
    ] {
        if style.attrs.contains(attr) {
            out.extend_from_slice(code);
        }
    }
    if opts.color {
        if style.fg != Color::Reset {
            push_color(out, style.fg, true);
        }
        if style.bg != Color::Reset {
            push_color(out, style.bg, false);
        }
    }
    out.push(b'm');
}

fn push_move(out: &mut Vec<u8>, x: u16, y: u16) {
    let _ = write!(out, "\x1b[{};{}H", y + 1, x + 1);
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut tmp = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
}

/// Appends to `out` what turns the screen showing `prev` into `next`.
/// When the sizes differ (or `prev` is `None`) the whole screen is cleared
/// and redrawn. Returns the number of cells written.
pub fn diff(prev: Option<&Buffer>, next: &Buffer, opts: &DiffOptions, out: &mut Vec<u8>) -> usize {
    let full = match prev {
        Some(p) => p.width() != next.width() || p.height() != next.height(),
        None => true,
    };
    if opts.synchronized {
        out.extend_from_slice(b"\x1b[?2026h");
    }
    if full {
        out.extend_from_slice(b"\x1b[0m\x1b[2J");
    }
    let width = next.width();
    let cells = next.cells();
    let old = prev.filter(|_| !full).map(Buffer::cells);
    let mut cursor: Option<(u16, u16)> = None;
    let mut style: Option<Style> = None;
    let mut written = 0usize;
    for (i, cell) in cells.iter().enumerate() {
        let x = (i % usize::from(width.max(1))) as u16;
        let y = (i / usize::from(width.max(1))) as u16;
        if cell.is_continuation() {
            continue;
        }
        let changed = match old {
            None => *cell != Cell::BLANK,
            Some(old) => {
                old.get(i) != Some(cell)
                    || (cells.get(i + 1).is_some_and(Cell::is_continuation)
                        && old.get(i + 1) != cells.get(i + 1))
            }
        };
        if !changed {
            continue;
        }
        if cursor != Some((x, y)) {
            push_move(out, x, y);
        }
        if style != Some(cell.style) {
            push_style(out, cell.style, opts);
            style = Some(cell.style);
        }
        push_char(out, cell.ch);
        written += 1;
        let w = if cells.get(i + 1).is_some_and(Cell::is_continuation) {
            2
        } else {
            1
        };
        cursor = Some((x + w, y));
    }
    if style.is_some() {
        out.extend_from_slice(b"\x1b[0m");
    }
    if opts.synchronized {
        out.extend_from_slice(b"\x1b[?2026l");
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_cells_are_written() {
        let mut a = Buffer::new(10, 2);
        a.put_str(0, 0, "hello", Style::PLAIN, 10);
        let mut b = a.clone();
        b.put_str(0, 1, "x", Style::PLAIN, 10);
        let mut out = Vec::new();
        let n = diff(Some(&a), &b, &DiffOptions::default(), &mut out);
        assert_eq!(n, 1);
        assert_eq!(out, b"\x1b[2;1H\x1b[0mx\x1b[0m");
        out.clear();
        assert_eq!(diff(Some(&b), &b, &DiffOptions::default(), &mut out), 0);
        assert!(out.is_empty());
    }

    #[test]
    fn a_size_change_redraws_everything() {
        let mut b = Buffer::new(3, 1);
        b.put_str(0, 0, "abc", Style::PLAIN, 3);
        let mut out = Vec::new();
        let n = diff(
            Some(&Buffer::new(2, 1)),
            &b,
            &DiffOptions::default(),
            &mut out,
        );
        assert_eq!(n, 3);
        assert!(out.starts_with(b"\x1b[0m\x1b[2J"));
    }
}
