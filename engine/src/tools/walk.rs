//! The one directory-walk configuration find, grep and ls share, so the
//! three agree on what is visible.
//!
//! Policy: ignore files are honoured (`.gitignore`, `.ignore`,
//! `.git/info/exclude`, including those of parent directories, whether or
//! not the tree is a git repository); the user's global git excludes are
//! not, so results depend only on the files of the tree. Hidden entries
//! (dot-files) are included, because `.github/`, `.env.example` and the like
//! matter to coding work; `.git` directories are never descended into.
//! Symlinks are not followed, so a walk never leaves its root. Entries of
//! each directory are visited in byte order of their names, depth first.
//! While the call is sandboxed, the sandbox's read-denied paths inside the
//! root are not visited.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// A configured walk under `root`; `max_depth` 1 lists one directory.
/// Entries at or beneath a path of `hidden` (the sandbox's read-denied
/// paths, while the call is sandboxed) are left out, subtree and all.
pub(crate) fn builder(
    root: &Path,
    max_depth: Option<usize>,
    skip_git_dir: bool,
    hidden: Vec<PathBuf>,
) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b));
    if skip_git_dir || !hidden.is_empty() {
        b.filter_entry(move |e| {
            if skip_git_dir && e.depth() > 0 && e.file_name() == ".git" {
                return false;
            }
            !hidden.iter().any(|h| e.path().starts_with(h))
        });
    }
    b
}

/// Result lines bounded by a count and a byte budget, each line capped.
pub(crate) struct BoundedLines {
    out: String,
    shown: usize,
    not_shown: usize,
    limit: usize,
    max_bytes: usize,
    line_chars: usize,
}

impl BoundedLines {
    /// At most `limit` lines and `max_bytes` bytes; lines capped at
    /// `line_chars` characters.
    pub(crate) fn new(limit: usize, max_bytes: usize, line_chars: usize) -> Self {
        BoundedLines {
            out: String::new(),
            shown: 0,
            not_shown: 0,
            limit,
            max_bytes,
            line_chars,
        }
    }

    /// True while another counted line would still be shown.
    pub(crate) fn has_room(&self) -> bool {
        self.shown < self.limit && self.out.len() < self.max_bytes
    }

    /// Adds a counted result line (or counts it as not shown).
    pub(crate) fn push(&mut self, line: &str) {
        if self.has_room() && self.append(line) {
            self.shown += 1;
        } else {
            self.not_shown += 1;
        }
    }

    /// Adds an uncounted line (context, separators) if the byte budget
    /// allows; false if it did not fit.
    pub(crate) fn append(&mut self, line: &str) -> bool {
        let capped = super::fsutil::cap_line(line, self.line_chars);
        if self.out.len() + capped.len() + 1 > self.max_bytes {
            self.max_bytes = self.out.len(); // closes the budget for good
            return false;
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out.push_str(&capped);
        true
    }

    /// Counts a result that was never offered as a line.
    pub(crate) fn skip(&mut self) {
        self.not_shown += 1;
    }

    /// True when nothing was written yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Counted lines shown.
    pub(crate) fn shown(&self) -> usize {
        self.shown
    }

    /// Counted lines not shown.
    pub(crate) fn not_shown(&self) -> usize {
        self.not_shown
    }

    /// The text so far.
    pub(crate) fn into_text(self) -> String {
        self.out
    }
}

/// Turns a walk error into a short note for the result.
pub(crate) fn walk_error_note(count: usize, first: Option<&str>) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "[{count} entr{} could not be read{}]",
            if count == 1 { "y" } else { "ies" },
            first.map(|e| format!(", e.g. {e}")).unwrap_or_default()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines_counts_what_it_drops() {
        let mut b = BoundedLines::new(2, 1000, 10);
        b.push("a");
        b.push("0123456789abc");
        b.push("c");
        assert_eq!(b.shown(), 2);
        assert_eq!(b.not_shown(), 1);
        assert_eq!(
            b.into_text(),
            "a\n0123456789… [line truncated: 3 more characters]"
        );
        let mut b = BoundedLines::new(10, 5, 100);
        b.push("abc");
        b.push("def");
        b.push("g");
        assert_eq!((b.shown(), b.not_shown()), (1, 2));
    }
}
