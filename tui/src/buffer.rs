//! The cell buffer: a grid of characters with styles, drawn into each frame.
//!
//! Text enters only through [`Buffer::put_str`] and [`Buffer::put_char`],
//! which pass it through the [sanitizer](crate::sanitize), so a cell never
//! holds a control character. Wide characters take two cells (the second is
//! a continuation cell); zero-width characters are dropped.

use unicode_width::UnicodeWidthChar;

use crate::layout::Rect;
use crate::sanitize::{Sanitized, is_control};
use crate::style::Style;

/// One screen cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// The character; `'\0'` marks the right half of a wide character.
    pub ch: char,
    /// How it is drawn.
    pub style: Style,
}

impl Cell {
    /// A blank cell.
    pub const BLANK: Cell = Cell {
        ch: ' ',
        style: Style::PLAIN,
    };
    const CONTINUATION: char = '\0';

    /// Whether this is the right half of a wide character.
    pub fn is_continuation(&self) -> bool {
        self.ch == Self::CONTINUATION
    }
}

/// A grid of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    width: u16,
    height: u16,
    cells: Vec<Cell>,
}

/// The display width of a character as drawn (controls are 0).
pub fn char_width(c: char) -> usize {
    if is_control(c) {
        0
    } else {
        c.width().unwrap_or(0)
    }
}

/// The display width of `s` after sanitizing.
pub fn str_width(s: &str) -> usize {
    Sanitized::new(s).map(|(_, c)| char_width(c)).sum()
}

impl Buffer {
    /// A blank buffer of `width` × `height` cells.
    pub fn new(width: u16, height: u16) -> Self {
        Self {
            width,
            height,
            cells: vec![Cell::BLANK; usize::from(width) * usize::from(height)],
        }
    }

    /// The buffer's area.
    pub fn area(&self) -> Rect {
        Rect::new(0, 0, self.width, self.height)
    }

    /// Width in cells.
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// Every cell, row by row.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Changes the size; every cell becomes blank. Reuses the allocation
    /// when it is large enough.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.width = width;
        self.height = height;
        self.cells.clear();
        self.cells
            .resize(usize::from(width) * usize::from(height), Cell::BLANK);
    }

    /// Makes every cell blank.
    pub fn clear(&mut self) {
        self.cells.fill(Cell::BLANK);
    }

    /// The cell at (`x`, `y`), if inside.
    pub fn get(&self, x: u16, y: u16) -> Option<&Cell> {
        if x < self.width && y < self.height {
            self.cells
                .get(usize::from(y) * usize::from(self.width) + usize::from(x))
        } else {
            None
        }
    }

    fn index(&self, x: u16, y: u16) -> usize {
        usize::from(y) * usize::from(self.width) + usize::from(x)
    }

    /// Fills `area` (clipped to the buffer) with blanks of `style`.
    pub fn fill(&mut self, area: Rect, style: Style) {
        let area = area.intersect(self.area());
        for y in area.y..area.bottom() {
            let start = self.index(area.x, y);
            let end = start + usize::from(area.width);
            if let Some(row) = self.cells.get_mut(start..end) {
                row.fill(Cell { ch: ' ', style });
            }
        }
    }

    /// Changes the style of every cell in `area`, keeping characters.
    pub fn restyle(&mut self, area: Rect, f: impl Fn(Style) -> Style) {
        let area = area.intersect(self.area());
        for y in area.y..area.bottom() {
            let start = self.index(area.x, y);
            let end = start + usize::from(area.width);
            if let Some(row) = self.cells.get_mut(start..end) {
                for cell in row {
                    cell.style = f(cell.style);
                }
            }
        }
    }

    /// Draws one character at (`x`, `y`) if it fits before `max_x`; returns
    /// the x after it. Controls and zero-width characters draw nothing.
    pub fn put_char(&mut self, x: u16, y: u16, c: char, style: Style, max_x: u16) -> u16 {
        let max_x = max_x.min(self.width);
        if y >= self.height || is_control(c) {
            return x;
        }
        let w = char_width(c) as u16;
        if w == 0 || x.saturating_add(w) > max_x {
            return x;
        }
        let i = self.index(x, y);
        if let Some(cell) = self.cells.get_mut(i) {
            *cell = Cell { ch: c, style };
        }
        if w == 2
            && let Some(cell) = self.cells.get_mut(i + 1)
        {
            *cell = Cell {
                ch: Cell::CONTINUATION,
                style,
            };
        }
        x + w
    }

    /// Draws the sanitized `text` from (`x`, `y`), clipped at `max_x` (and
    /// the buffer's width); returns the x after the last drawn character.
    pub fn put_str(&mut self, x: u16, y: u16, text: &str, style: Style, max_x: u16) -> u16 {
        let mut cx = x;
        for (_, c) in Sanitized::new(text) {
            let w = char_width(c) as u16;
            if w == 0 {
                continue;
            }
            if cx.saturating_add(w) > max_x.min(self.width) {
                break;
            }
            cx = self.put_char(cx, y, c, style, max_x);
        }
        cx
    }

    /// The buffer as plain text, one line per row, trailing blanks trimmed
    /// (for snapshots and tests).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for y in 0..self.height {
            let mut line = String::new();
            for x in 0..self.width {
                if let Some(cell) = self.get(x, y)
                    && !cell.is_continuation()
                {
                    line.push(cell.ch);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// The text of row `y` (trailing blanks kept).
    pub fn row_text(&self, y: u16) -> String {
        (0..self.width)
            .filter_map(|x| self.get(x, y))
            .filter(|c| !c.is_continuation())
            .map(|c| c.ch)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_clipped_and_sanitized() {
        let mut b = Buffer::new(8, 1);
        let end = b.put_str(0, 0, "ab\u{1b}[2Jcdefghij", Style::PLAIN, 8);
        assert_eq!(end, 8);
        // The escape is drawn as a visible picture, never sent.
        assert_eq!(b.to_text(), "ab\u{241b}[2Jcd\n");
    }

    #[test]
    fn wide_characters_take_two_cells_and_never_split() {
        let mut b = Buffer::new(5, 1);
        let end = b.put_str(0, 0, "世界!", Style::PLAIN, 5);
        assert_eq!(end, 5);
        assert!(b.get(1, 0).is_some_and(Cell::is_continuation));
        let mut b = Buffer::new(3, 1);
        assert_eq!(b.put_str(0, 0, "世界", Style::PLAIN, 3), 2);
        assert_eq!(b.to_text(), "世\n");
    }
}
