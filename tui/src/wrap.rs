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

/// Calls `line` with the byte range of each display row of `text` wrapped
/// at `width` cells, at most `max_rows` of them: when more would follow,
/// the last row is cut to at most `width - 1` cells and `cut` is true (the
/// caller draws an ellipsis after it). So a collapsed entry takes at most
/// its preview's rows whatever its lines hold. Returns the rows drawn and
/// how many source lines were not drawn whole (the one cut and those
/// after it). Allocates nothing.
pub fn clip(
    text: &str,
    width: u16,
    max_rows: u32,
    mut line: impl FnMut(usize, usize, bool),
) -> (u32, usize) {
    let max_rows = max_rows.max(1);
    let mut rows = 0u32;
    let mut pending: Option<(usize, usize)> = None;
    let mut more = false;
    wrap(text, width, |a, b| {
        if more {
            return;
        }
        if rows == max_rows {
            more = true;
            return;
        }
        if let Some((pa, pb)) = pending.take() {
            line(pa, pb, false);
        }
        pending = Some((a, b));
        rows += 1;
    });
    let Some((a, b)) = pending else {
        return (rows, 0);
    };
    if !more {
        line(a, b, false);
        return (rows, 0);
    }
    // Room for the ellipsis.
    let room = usize::from(width.max(1)) - 1;
    let mut used = 0;
    let mut end = a;
    for (i, c) in Sanitized::new(&text[a..b]) {
        let w = char_width(c);
        if used + w > room {
            break;
        }
        used += w;
        end = a + i + c.len_utf8();
    }
    line(a, end, true);
    (rows, text[a..].matches('\n').count() + 1)
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
    fn clipping_stops_at_the_row_limit_with_a_cut() {
        let long = "x".repeat(5000);
        let text = format!("short\n{long}\nend");
        let mut rows = Vec::new();
        let n = clip(&text, 10, 3, |a, b, cut| rows.push((&text[a..b], cut)));
        // Three rows: the short line, then the long one's first row whole
        // and its second cut for the ellipsis; it and `end` are not shown
        // whole.
        assert_eq!(n, (3, 2));
        assert_eq!(
            rows,
            vec![("short", false), ("xxxxxxxxxx", false), ("xxxxxxxxx", true)]
        );
        // Everything fits: nothing is cut.
        let mut rows = Vec::new();
        let n = clip("ab cd\nef", 3, 6, |a, b, cut| rows.push((a, b, cut)));
        assert_eq!(n, (3, 0));
        assert_eq!(rows, vec![(0, 3, false), (3, 5, false), (6, 8, false)]);
        // Wide characters never split.
        let mut rows = Vec::new();
        let n = clip("世界世界世界", 5, 1, |a, b, cut| {
            rows.push((a, b, cut))
        });
        assert_eq!(n, (1, 1));
        assert_eq!(rows, vec![(0, 6, true)]);
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
