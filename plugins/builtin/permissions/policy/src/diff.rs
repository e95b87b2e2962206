//! A bounded unified diff for prompts: the changed region between the
//! common first and last lines, with up to three lines of context.

/// Lines of context around the change.
const CONTEXT: usize = 3;

/// A unified diff from `old` (none: the file does not exist) to `new` for
/// `path`, with at most `max_lines` lines after the headers; a longer diff
/// is cut and ends with a line saying how many lines were left out.
pub fn unified(path: &str, old: Option<&str>, new: &str, max_lines: usize) -> String {
    let old_lines: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.lines().collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old_lines[prefix..]
        .iter()
        .rev()
        .zip(new_lines[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let start = prefix.saturating_sub(CONTEXT);
    let old_end = (old_lines.len() - suffix + CONTEXT).min(old_lines.len());
    let new_end = (new_lines.len() - suffix + CONTEXT).min(new_lines.len());
    let mut body: Vec<String> = Vec::new();
    for line in &old_lines[start..prefix] {
        body.push(format!(" {line}"));
    }
    for line in &old_lines[prefix..old_lines.len() - suffix] {
        body.push(format!("-{line}"));
    }
    for line in &new_lines[prefix..new_lines.len() - suffix] {
        body.push(format!("+{line}"));
    }
    for line in &old_lines[old_lines.len() - suffix..old_end] {
        body.push(format!(" {line}"));
    }
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_owned()
    };
    let mut out = format!(
        "--- {from}\n+++ b/{path}\n@@ -{},{} +{},{} @@\n",
        hunk_start(start, old_end),
        old_end - start,
        hunk_start(start, new_end),
        new_end - start
    );
    if prefix == old_lines.len() && prefix == new_lines.len() && old.is_some() {
        out.push_str(" (no change)\n");
        return out;
    }
    let shown = body.len().min(max_lines);
    for line in &body[..shown] {
        out.push_str(line);
        out.push('\n');
    }
    if body.len() > shown {
        out.push_str(&format!(
            "… {} more diff lines not shown\n",
            body.len() - shown
        ));
    }
    out
}

/// A hunk's first line number (0 for an empty range, as `diff` writes it).
fn hunk_start(start: usize, end: usize) -> usize {
    if end == start { start } else { start + 1 }
}
