//! A compact unified diff of an edit, computed from the replacement
//! positions rather than by a general diff algorithm: the edit knows exactly
//! which bytes changed, so each replacement becomes one block of removed and
//! added lines, with unchanged lines before and after as context.

use std::fmt::Write as _;

use super::fsutil::cap_line;

/// Lines of context around each change.
pub(crate) const CONTEXT: usize = 3;

/// Byte offsets where each line starts.
pub(crate) fn line_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    if text.is_empty() {
        return starts;
    }
    starts.push(0);
    for (i, &b) in text.iter().enumerate() {
        if b == b'\n' && i + 1 < text.len() {
            starts.push(i + 1);
        }
    }
    starts
}

/// The 1-based line number containing byte `offset`.
pub(crate) fn line_number(starts: &[usize], offset: usize) -> usize {
    starts.partition_point(|&s| s <= offset).max(1)
}

fn line<'a>(text: &'a [u8], starts: &[usize], i: usize) -> &'a [u8] {
    let start = starts[i];
    let end = starts.get(i + 1).copied().unwrap_or(text.len());
    let l = &text[start..end];
    let l = l.strip_suffix(b"\n").unwrap_or(l);
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// One changed block: old lines `[old_at, old_at + old_len)` became new
/// lines `[new_at, new_at + new_len)` (0-based line indexes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    old_at: usize,
    old_len: usize,
    new_at: usize,
    new_len: usize,
}

/// The unified diff of replacing, at each byte offset in `matches`
/// (ascending, non-overlapping), `old_len` bytes of `old` with `new_len`
/// bytes, giving `new`. At most `max_lines` lines of diff body are shown;
/// longer diffs end with a marker counting the rest.
#[allow(clippy::too_many_arguments)] // plain inputs of one computation
pub(crate) fn unified(
    label: &str,
    old: &[u8],
    new: &[u8],
    matches: &[usize],
    old_len: usize,
    new_len: usize,
    max_lines: usize,
    line_chars: usize,
) -> String {
    let old_starts = line_starts(old);
    let new_starts = line_starts(new);
    // Byte regions (old start, old end, new start, new end) outside which
    // old and new are identical, widened until both ends sit on line
    // boundaries; regions that touch are merged.
    let aligned = |text: &[u8], i: usize| i == 0 || i == text.len() || text[i - 1] == b'\n';
    let mut regions: Vec<[usize; 4]> = Vec::new();
    let shift = new_len as isize - old_len as isize;
    for (k, &at) in matches.iter().enumerate() {
        let back = at - old_starts[line_number(&old_starts, at) - 1];
        let new_at = (at as isize + shift * k as isize) as usize;
        let os = at - back;
        let (oe, ne) = (at + old_len, new_at + new_len);
        match regions.last_mut() {
            Some(r) if os <= r[1] => {
                r[1] = oe;
                r[3] = ne;
            }
            // The `back` bytes before the match are unchanged text (no
            // earlier region reaches them), so they precede it in new too.
            _ => regions.push([os, oe, new_at - back, ne]),
        }
        // Widen the end over unchanged text, up to the next match.
        let limit = matches.get(k + 1).copied().unwrap_or(old.len());
        if let Some(r) = regions.last_mut() {
            while !(aligned(old, r[1]) && aligned(new, r[3])) && r[1] < limit {
                let step = old[r[1]..limit]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(limit - r[1], |p| p + 1);
                r[1] += step;
                r[3] += step;
            }
        }
    }
    let count_from = |starts: &[usize], from: usize, to: usize| -> (usize, usize) {
        let a = starts.partition_point(|&s| s < from);
        let b = starts.partition_point(|&s| s < to);
        (a, b - a)
    };
    let mut blocks = Vec::new();
    for &[os, oe, ns, ne] in &regions {
        let (old_at, old_len) = count_from(&old_starts, os, oe);
        let (new_at, new_len) = count_from(&new_starts, ns, ne);
        let mut b = Block {
            old_at,
            old_len,
            new_at,
            new_len,
        };
        // Lines equal at the start or end of both sides are context.
        while b.old_len > 0
            && b.new_len > 0
            && line(old, &old_starts, b.old_at) == line(new, &new_starts, b.new_at)
        {
            b.old_at += 1;
            b.new_at += 1;
            b.old_len -= 1;
            b.new_len -= 1;
        }
        while b.old_len > 0
            && b.new_len > 0
            && line(old, &old_starts, b.old_at + b.old_len - 1)
                == line(new, &new_starts, b.new_at + b.new_len - 1)
        {
            b.old_len -= 1;
            b.new_len -= 1;
        }
        if b.old_len > 0 || b.new_len > 0 {
            blocks.push(b);
        }
    }

    let mut body: Vec<String> = Vec::new();
    let mut i = 0;
    let old_total = old_starts.len();
    while i < blocks.len() {
        // Group blocks whose gaps are small enough to share context.
        let mut j = i;
        while j + 1 < blocks.len()
            && blocks[j + 1].old_at <= blocks[j].old_at + blocks[j].old_len + 2 * CONTEXT
        {
            j += 1;
        }
        let first = blocks[i];
        let last = blocks[j];
        let ctx_before = first.old_at.min(CONTEXT);
        let old_from = first.old_at - ctx_before;
        let old_to = (last.old_at + last.old_len + CONTEXT).min(old_total);
        let ctx_after = old_to - (last.old_at + last.old_len);
        let new_from = first.new_at - ctx_before;
        let new_to = last.new_at + last.new_len + ctx_after;
        let old_count = old_to - old_from;
        let new_count = new_to - new_from;
        let header_start = |from: usize, count: usize| if count == 0 { from } else { from + 1 };
        body.push(format!(
            "@@ -{},{} +{},{} @@",
            header_start(old_from, old_count),
            old_count,
            header_start(new_from, new_count),
            new_count
        ));
        let mut at = old_from;
        for b in &blocks[i..=j] {
            for k in at..b.old_at {
                body.push(format!(" {}", show(line(old, &old_starts, k), line_chars)));
            }
            for k in b.old_at..b.old_at + b.old_len {
                body.push(format!("-{}", show(line(old, &old_starts, k), line_chars)));
            }
            for k in b.new_at..b.new_at + b.new_len {
                body.push(format!("+{}", show(line(new, &new_starts, k), line_chars)));
            }
            at = b.old_at + b.old_len;
        }
        for k in at..old_to {
            body.push(format!(" {}", show(line(old, &old_starts, k), line_chars)));
        }
        i = j + 1;
    }

    let mut out = String::new();
    let _ = writeln!(out, "--- a/{label}");
    let _ = write!(out, "+++ b/{label}");
    let total = body.len();
    for l in body.iter().take(max_lines) {
        out.push('\n');
        out.push_str(l);
    }
    if total > max_lines {
        let _ = write!(out, "\n[diff truncated: {} more lines]", total - max_lines);
    }
    out
}

fn show(bytes: &[u8], line_chars: usize) -> String {
    cap_line(&String::from_utf8_lossy(bytes), line_chars).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(old: &str, needle: &str, replacement: &str) -> String {
        let matches: Vec<usize> = old.match_indices(needle).map(|(i, _)| i).collect();
        let new = old.replace(needle, replacement);
        unified(
            "f.txt",
            old.as_bytes(),
            new.as_bytes(),
            &matches,
            needle.len(),
            replacement.len(),
            200,
            500,
        )
    }

    #[test]
    fn single_line_change_has_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        assert_eq!(
            diff(old, "5", "five"),
            "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8"
        );
    }

    #[test]
    fn deletion_of_whole_lines_and_file_edges() {
        assert_eq!(
            diff("a\nb\nc\n", "b\n", ""),
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,2 @@\n a\n-b\n c"
        );
        assert_eq!(
            diff("a\nb", "b", "B"),
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B"
        );
    }

    #[test]
    fn shared_first_line_becomes_context() {
        assert_eq!(
            diff(
                "fn a() {\n    x\n}\n",
                "fn a() {\n    x\n",
                "fn a() {\n    y\n"
            ),
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n fn a() {\n-    x\n+    y\n }"
        );
    }

    #[test]
    fn distant_replacements_are_separate_hunks_near_ones_merge() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let old = old.replace("l2\n", "x\n").replace("l18\n", "x\n");
        let d = diff(&old, "x", "y");
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        let d = diff("x\n1\n2\nx\n", "x", "y");
        assert_eq!(
            d,
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n-x\n+y\n 1\n 2\n-x\n+y"
        );
        // Two matches on one line are one block.
        let d = diff("x x\n", "x", "y");
        assert_eq!(d, "--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-x x\n+y y");
    }

    #[test]
    fn long_diffs_are_truncated_with_a_count() {
        let old: String = (0..50).map(|i| format!("x{i}\n")).collect();
        let matches: Vec<usize> = old.match_indices('x').map(|(i, _)| i).collect();
        let new = old.replace('x', "y");
        let d = unified("f", old.as_bytes(), new.as_bytes(), &matches, 1, 1, 10, 500);
        assert!(d.ends_with("[diff truncated: 91 more lines]"), "{d}");
    }

    #[test]
    fn line_numbers() {
        let starts = line_starts(b"a\nbb\nc");
        assert_eq!(starts, [0, 2, 5]);
        assert_eq!(line_number(&starts, 0), 1);
        assert_eq!(line_number(&starts, 3), 2);
        assert_eq!(line_number(&starts, 5), 3);
    }

    /// Applies a unified diff produced by `unified` to `old`, checking
    /// every context and removed line against it.
    fn apply(old: &str, diff: &str) -> Result<String, String> {
        let old_lines: Vec<&str> = old.lines().collect();
        let mut out: Vec<String> = Vec::new();
        let mut at = 0usize;
        let mut lines = diff.lines().skip(2).peekable();
        while let Some(header) = lines.next() {
            let spec = header
                .strip_prefix("@@ -")
                .and_then(|h| h.split(' ').next())
                .ok_or(format!("bad header {header}"))?;
            let (start, count) = spec.split_once(',').ok_or("bad range")?;
            let start: usize = start.parse().map_err(|_| "start")?;
            let count: usize = count.parse().map_err(|_| "count")?;
            let from = if count == 0 { start } else { start - 1 };
            while at < from {
                out.push(old_lines[at].to_owned());
                at += 1;
            }
            while let Some(l) = lines.peek() {
                if l.starts_with("@@") {
                    break;
                }
                let l = lines.next().unwrap_or_default();
                let (tag, text) = l.split_at(1);
                match tag {
                    " " | "-" => {
                        if old_lines.get(at) != Some(&text) {
                            return Err(format!(
                                "line {} is {:?}, diff says {text:?}",
                                at + 1,
                                old_lines.get(at)
                            ));
                        }
                        if tag == " " {
                            out.push(text.to_owned());
                        }
                        at += 1;
                    }
                    "+" => out.push(text.to_owned()),
                    _ => return Err(format!("bad line {l}")),
                }
            }
        }
        out.extend(old_lines[at..].iter().map(|s| (*s).to_owned()));
        Ok(out.join("\n"))
    }

    proptest::proptest! {
        #[test]
        fn applying_the_diff_to_old_gives_new(
            lines in proptest::collection::vec("[abx ]{0,4}", 1..30),
            start in proptest::prelude::any::<proptest::sample::Index>(),
            len in 1..6usize,
            replacement in "[aby\n]{0,5}",
        ) {
            let old = lines.join("\n") + "\n";
            // A needle cut from the text itself, so it always occurs.
            let from = start.index(old.len());
            let needle = old[from..(from + len).min(old.len())].to_owned();
            let matches: Vec<usize> = old.match_indices(needle.as_str()).map(|(i, _)| i).collect();
            proptest::prop_assume!(needle != replacement);
            let new = old.replace(needle.as_str(), &replacement);
            let d = unified("f", old.as_bytes(), new.as_bytes(), &matches, needle.len(), replacement.len(), usize::MAX, usize::MAX);
            let applied = apply(&old, &d).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e}\n{d}")))?;
            let expected: Vec<&str> = new.lines().collect();
            proptest::prop_assert_eq!(applied, expected.join("\n"), "{}", d);
        }
    }
}
