//! Line wrapping shared by measuring and drawing, so a cached height always
//! matches what is drawn.

use crate::buffer::char_width;
use crate::sanitize::Sanitized;

/// Calls `line` with the byte range of each display line of `text` wrapped
/// at `width` cells: hard line breaks at `\n`, soft breaks after the last
/// space that fits, otherwise at the width. An empty text is one empty
/// line. Returns the number of lines. Allocates nothing.
pub fn wrap(text: &str, width: u16, mut line: impl FnMut(usize, usize)) -> u32 {
    let width = usize::from(width.max(1));
    let mut count = 0u32;
    for segment in text.split('\n') {
        let base = segment.as_ptr() as usize - text.as_ptr() as usize;
        let mut start = base;
        let mut used = 0usize;
        // Position just after the last space that fits on this line.
        let mut last_space: Option<(usize, usize)> = None;
        let mut emitted_any = false;
        let iter = Sanitized::new(segment).peekable();
        for (i, c) in iter {
            let w = char_width(c);
            if w == 0 {
                continue;
            }
            let at = base + i;
            if used + w > width {
                let (end, next_start, rest) = match last_space {
                    Some((after, used_after)) if after > start => (after, after, used - used_after),
                    _ => (at, at, 0),
                };
                line(start, end);
                count += 1;
                emitted_any = true;
                start = next_start;
                used = rest;
                last_space = None;
            }
            used += w;
            if c == ' ' {
                last_space = Some((at + c.len_utf8(), used));
            }
        }
        let end = base + segment.len();
        if !emitted_any || start < end || used > 0 {
            line(start, end);
            count += 1;
        }
    }
    count
}

/// The number of display lines of `text` at `width`.
pub fn line_count(text: &str, width: u16) -> u32 {
    wrap(text, width, |_, _| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str, width: u16) -> Vec<&str> {
        let mut v = Vec::new();
        wrap(text, width, |a, b| v.push(&text[a..b]));
        v
    }

    #[test]
    fn wraps_at_spaces_then_hard() {
        assert_eq!(lines("hello world foo", 11), vec!["hello ", "world foo"]);
        assert_eq!(lines("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(lines("a\n\nb", 4), vec!["a", "", "b"]);
        assert_eq!(lines("", 4), vec![""]);
        assert_eq!(line_count("世界世界", 3), 4);
        assert_eq!(line_count("世界世界", 4), 2);
    }

    #[test]
    fn count_matches_lines() {
        for text in ["a b c d e f g h", "x\u{1b}[31myyyyyyy", "tab\tand\nnew"] {
            for w in 1..12 {
                assert_eq!(line_count(text, w) as usize, lines(text, w).len());
            }
        }
    }
}
