//! Unified diffs (an edit's result, `git diff` output) drawn with old and
//! new line numbers: removed lines red, added lines green, context dim.
//! The text around the diff stays as it is. A collapsed view starts at the
//! first change ([`super::Rendered::focus`]), so the removed and added
//! lines are what a collapsed entry shows.

use std::fmt::Write as _;

use super::{Look, Rendered};
use crate::style::Attrs;

/// An added line (green).
pub const ADDED: Look = Look::palette(2, Attrs::NONE);
/// A removed line (red).
pub const REMOVED: Look = Look::palette(1, Attrs::NONE);
/// A context line and the line numbers (dim).
pub const CONTEXT: Look = Look::attrs(Attrs::DIM);
/// A hunk's `@@` header (cyan).
pub const HUNK: Look = Look::palette(6, Attrs::NONE);
/// A file header (`--- a/x`, `+++ b/x`, `diff --git`), bold.
pub const HEADER: Look = Look::attrs(Attrs::BOLD);

/// Whether `text` holds a unified diff: a `+++` file line, then a hunk.
pub fn find(text: &str) -> bool {
    let Some(at) = text
        .find("\n+++ ")
        .map(|i| i + 1)
        .or_else(|| text.starts_with("+++ ").then_some(0))
    else {
        return false;
    };
    text[at..].contains("\n@@ -")
}

/// A hunk header's old start and count, new start and count
/// (`@@ -12,3 +12,4 @@`; a missing count is 1).
fn hunk(line: &str) -> Option<(u64, u64, u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u64, u64)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Some((a, b, c, d))
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Renders `text`, whose diff [`find`] found.
pub fn render(text: &str) -> Rendered {
    let width = text
        .lines()
        .filter_map(hunk)
        .map(|(a, b, c, d)| digits((a + b).max(c + d)))
        .max()
        .unwrap_or(1);
    let mut out = Rendered {
        text: String::with_capacity(text.len() + text.len() / 4),
        ..Rendered::default()
    };
    let (mut old, mut new, mut old_left, mut new_left) = (0u64, 0u64, 0u64, 0u64);
    let mut focus: Option<u32> = None;
    // The start of the last context line drawn inside a hunk.
    let mut last_context: Option<u32> = None;
    let mut num = String::new();
    for (k, line) in text.split('\n').enumerate() {
        if k > 0 {
            out.push("\n", Look::NONE);
        }
        let start = out.text.len() as u32;
        if old_left > 0 || new_left > 0 {
            let sign = line.as_bytes().first().copied();
            let body = line.get(1..).unwrap_or("");
            let (o, n, mark, look) = match sign {
                Some(b' ') | None => (Some(old), Some(new), "  ", CONTEXT),
                Some(b'-') => (Some(old), None, "- ", REMOVED),
                Some(b'+') => (None, Some(new), "+ ", ADDED),
                Some(b'\\') => {
                    out.push(line, CONTEXT);
                    continue;
                }
                _ => {
                    // Not a hunk line after all: the hunk ended early.
                    old_left = 0;
                    new_left = 0;
                    (None, None, "", Look::NONE)
                }
            };
            if old_left > 0 || new_left > 0 {
                num.clear();
                match o {
                    Some(o) => {
                        let _ = write!(num, "{o:>width$} ");
                    }
                    None => {
                        let _ = write!(num, "{:width$} ", "");
                    }
                }
                match n {
                    Some(n) => {
                        let _ = write!(num, "{n:>width$} ");
                    }
                    None => {
                        let _ = write!(num, "{:width$} ", "");
                    }
                }
                out.push(&num, CONTEXT);
                out.push(mark, look);
                out.push(body, look);
                if o.is_some() {
                    old += 1;
                    old_left = old_left.saturating_sub(1);
                }
                if n.is_some() {
                    new += 1;
                    new_left = new_left.saturating_sub(1);
                }
                if look == CONTEXT {
                    last_context = Some(start);
                } else if focus.is_none() {
                    focus = Some(last_context.unwrap_or(start));
                }
                continue;
            }
        }
        if let Some((a, b, c, d)) = hunk(line) {
            (old, old_left, new, new_left) = (a, b, c, d);
            last_context = None;
            out.push(line, HUNK);
        } else if line.starts_with("--- ")
            || line.starts_with("+++ ")
            || line.starts_with("diff ")
            || line.starts_with("index ")
        {
            out.push(line, HEADER);
        } else {
            out.push(line, Look::NONE);
        }
    }
    out.focus = focus.unwrap_or(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDIT: &str = "Edited src/a.rs: replaced 1 occurrence (line 11).\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -9,4 +9,5 @@\n one\n two\n-old\n+new\n+more\n three";

    #[test]
    fn finds_diffs_and_numbers_their_lines() {
        assert!(find(EDIT));
        assert!(!find("Created x (3 bytes, 1 lines)."));
        assert!(!find("+++ b/x but no hunk"));
        let r = render(EDIT);
        assert_eq!(
            r.text,
            "Edited src/a.rs: replaced 1 occurrence (line 11).\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -9,4 +9,5 @@\n 9  9   one\n10 10   two\n11    - old\n   11 + new\n   12 + more\n12 13   three"
        );
        // The collapsed view starts one context line before the change.
        assert_eq!(&r.text[r.focus as usize..][..15], "10 10   two\n11 ");
        let look_of = |needle: &str| {
            let at = r.text.find(needle).unwrap_or(usize::MAX) as u32;
            r.spans
                .iter()
                .find(|s| s.start <= at && at < s.end)
                .map(|s| s.look)
        };
        assert_eq!(look_of("- old"), Some(REMOVED));
        assert_eq!(look_of("+ new"), Some(ADDED));
        assert_eq!(look_of("  three"), Some(CONTEXT));
        assert_eq!(look_of("@@ -9"), Some(HUNK));
        assert_eq!(look_of("Edited"), None);
    }
}
