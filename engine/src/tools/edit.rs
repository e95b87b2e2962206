//! `edit {path, old_text, new_text, replace_all?}`: exact replacement in an
//! existing file, written atomically, answered with a compact diff.
//!
//! Matching is exact and byte-wise (whitespace and indentation included),
//! with one convenience: in a file whose lines end in CRLF, `old_text` and
//! `new_text` written with plain LF are converted to CRLF before matching,
//! because models rarely reproduce carriage returns. Every failure happens
//! before the file is touched and reports [`Mutation::NotApplied`].

use serde_json::{Value, json};

use super::CancelCheck;
use super::diff::{line_number, line_starts, unified};
use super::fsutil::{atomic_replace, binary_reason, check_fresh, io_error, require_regular};
use super::{
    Access, Fingerprint, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind,
    ToolResult, args,
};

const NAME: &str = "edit";
/// Line numbers listed in an ambiguous-match error.
const MAX_LISTED: usize = 20;

/// The `edit` tool.
#[derive(Debug)]
pub struct EditTool {
    def: ToolDefinition,
}

impl Default for EditTool {
    fn default() -> Self {
        Self::new()
    }
}

impl EditTool {
    /// The tool with its definition.
    pub fn new() -> Self {
        EditTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "Replace exact text in a file you have read. old_text must match \
                    exactly once (including whitespace) unless replace_all is true. Returns a diff."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1, "description": "File to edit, relative to the working directory or absolute."},
                        "old_text": {"type": "string", "minLength": 1, "description": "Exact text to replace."},
                        "new_text": {"type": "string", "description": "Replacement text."},
                        "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                    },
                    "required": ["path", "old_text", "new_text"],
                    "additionalProperties": false
                }),
                access: Access::Mutating,
            },
        }
    }
}

impl Tool for EditTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

/// Byte offsets of the non-overlapping occurrences of `needle`, left to
/// right.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let Some(&first) = needle.first() else {
        return out;
    };
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)
        {
            None => break,
            Some(p) => {
                let at = i + p;
                if hay[at..].starts_with(needle) {
                    out.push(at);
                    i = at + needle.len();
                } else {
                    i = at + 1;
                }
            }
        }
    }
    out
}

fn to_crlf(s: &str) -> String {
    s.replace('\n', "\r\n")
}

fn run(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let raw = args::string(NAME, args, "path")?;
    let old_text = args::string(NAME, args, "old_text")?;
    let new_text = args::string(NAME, args, "new_text")?;
    let replace_all = args::flag(NAME, args, "replace_all")?;
    if old_text.is_empty() {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            "edit call rejected: argument `old_text` is empty",
            "an empty text matches everywhere",
            "pass the exact text to replace; use write to create a file",
        ));
    }
    let path = cx.resolve_write(NAME, "path", raw)?;
    let shown = cx.display(&path);
    cx.cancel().check(NAME, &format!("reading {shown}"))?;

    let max = cx.limits().edit_max_file_bytes;
    let too_large = |len: u64| {
        ToolError::new(
            ToolErrorKind::TooLarge,
            format!("edit: {shown} is {len} bytes, over the {max}-byte edit limit"),
            "edit loads the whole file into memory",
            "change it with bash (e.g. sed) instead",
        )
        .with_extra("path", Value::from(shown.clone()))
    };
    let old = match cx.file_reads() {
        // The text's owner (an editor with unsaved buffers) has the text
        // the edit applies to.
        Some(files) => {
            let text = files.read_text(NAME, &path, &shown, cx)?;
            if text.len() as u64 > max {
                return Err(too_large(text.len() as u64));
            }
            text.into_bytes()
        }
        None => {
            let meta = std::fs::metadata(&path).map_err(|e| {
                let mut err = io_error(NAME, "opening", &shown, &e);
                if err.kind == ToolErrorKind::NotFound {
                    err.next = format!("check the path, or use write to create {shown}");
                }
                err
            })?;
            require_regular(NAME, &meta, &shown)?;
            if meta.len() > max {
                return Err(too_large(meta.len()));
            }
            std::fs::read(&path).map_err(|e| io_error(NAME, "reading", &shown, &e))?
        }
    };
    if let Some(reason) = binary_reason(&old) {
        return Err(ToolError::new(
            ToolErrorKind::Binary,
            format!("edit: {shown} is a binary file"),
            format!("{reason}; edit changes text only"),
            "change binary files with bash",
        )
        .with_extra("path", Value::from(shown)));
    }
    check_fresh(NAME, cx, &path, &shown, Some(Fingerprint::of(&old)))?;

    let (mut needle, mut replacement) = (old_text.to_owned(), new_text.to_owned());
    let mut matches = find_all(&old, needle.as_bytes());
    if matches.is_empty()
        && needle.contains('\n')
        && !needle.contains('\r')
        && old.windows(2).any(|w| w == b"\r\n")
    {
        let crlf = to_crlf(&needle);
        let found = find_all(&old, crlf.as_bytes());
        if !found.is_empty() {
            needle = crlf;
            replacement = to_crlf(&replacement);
            matches = found;
        }
    }
    let starts = line_starts(&old);
    let lines: Vec<usize> = matches.iter().map(|&m| line_number(&starts, m)).collect();
    if matches.is_empty() {
        let mut why = "edit needs an exact match, including whitespace and indentation".to_owned();
        if let Some(hint) = near_miss(&old, &starts, old_text) {
            why.push_str(&format!("; {hint}"));
        }
        return Err(ToolError::new(
            ToolErrorKind::NoMatch,
            format!("edit: old_text was not found in {shown} (0 occurrences)"),
            why,
            format!("read {shown} again and copy the text to replace exactly"),
        )
        .with_extra("path", Value::from(shown))
        .with_extra("count", Value::from(0)));
    }
    if matches.len() > 1 && !replace_all {
        let listed: Vec<String> = lines
            .iter()
            .take(MAX_LISTED)
            .map(usize::to_string)
            .collect();
        let more = if lines.len() > MAX_LISTED {
            format!(" and {} more", lines.len() - MAX_LISTED)
        } else {
            String::new()
        };
        return Err(ToolError::new(
            ToolErrorKind::AmbiguousMatch,
            format!(
                "edit: old_text occurs {} times in {shown} (lines {}{more})",
                matches.len(),
                listed.join(", ")
            ),
            "without replace_all, old_text must identify exactly one place",
            "add surrounding lines to old_text so it matches once, or set replace_all: true to change every occurrence",
        )
        .with_extra("path", Value::from(shown))
        .with_extra("count", Value::from(matches.len()))
        .with_extra("lines", json!(lines)));
    }
    if needle == replacement {
        return Err(ToolError::new(
            ToolErrorKind::NoChange,
            format!("edit: old_text and new_text are identical; {shown} would not change"),
            "an edit must change something",
            "pass the intended new_text",
        )
        .with_extra("path", Value::from(shown)));
    }

    let mut new = Vec::with_capacity(
        old.len() + matches.len() * replacement.len().saturating_sub(needle.len()),
    );
    let mut last = 0;
    for &m in &matches {
        new.extend_from_slice(&old[last..m]);
        new.extend_from_slice(replacement.as_bytes());
        last = m + needle.len();
    }
    new.extend_from_slice(&old[last..]);

    match cx.file_writes() {
        Some(files) => {
            let text = std::str::from_utf8(&new).map_err(|e| {
                ToolError::new(
                    ToolErrorKind::Binary,
                    format!("edit: the edited text of {shown} is not valid UTF-8 ({e})"),
                    "the file's owner (the editor) takes text only, and the file on disk holds bytes that are not UTF-8",
                    "change this file with bash instead",
                )
                .with_extra("path", Value::from(shown.clone()))
            })?;
            files.write_text(NAME, &path, &shown, text, cx)?;
        }
        None => atomic_replace(NAME, &path, &shown, &new, cx.cancel())?,
    }
    cx.reads().record(&path, Fingerprint::of(&new));

    let limits = cx.limits();
    let diff = unified(
        &shown,
        &old,
        &new,
        &matches,
        needle.len(),
        replacement.len(),
        limits.diff_max_lines,
        limits.list_line_chars,
    );
    let where_ = if lines.len() == 1 {
        format!("line {}", lines[0])
    } else {
        let listed: Vec<String> = lines
            .iter()
            .take(MAX_LISTED)
            .map(usize::to_string)
            .collect();
        format!("lines {}", listed.join(", "))
    };
    let text = format!(
        "Edited {shown}: replaced {} occurrence{} ({where_}).\n{diff}",
        matches.len(),
        if matches.len() == 1 { "" } else { "s" }
    );
    Ok(ToolResult::ok(
        text,
        json!({
            "path": shown,
            "replacements": matches.len(),
            "lines": lines,
            "diff": diff,
        }),
        Mutation::Applied,
    ))
}

/// A hint when `old_text`'s first non-blank line occurs in the file with
/// different indentation or trailing whitespace.
fn near_miss(old: &[u8], starts: &[usize], old_text: &str) -> Option<String> {
    let first = old_text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut found = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let e = starts.get(i + 1).copied().unwrap_or(old.len());
        let line = String::from_utf8_lossy(&old[s..e]);
        if line.trim() == first {
            found.push((i + 1).to_string());
            if found.len() == 5 {
                break;
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "its first line appears, ignoring surrounding whitespace, at line(s) {}",
        found.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_all_is_non_overlapping_left_to_right() {
        assert_eq!(find_all(b"aaaa", b"aa"), [0, 2]);
        assert_eq!(find_all(b"xabxab", b"ab"), [1, 4]);
        assert_eq!(find_all(b"ab", b"abc"), Vec::<usize>::new());
        assert_eq!(find_all(b"", b"a"), Vec::<usize>::new());
    }

    #[test]
    fn near_miss_reports_indentation_differences() {
        let text = b"fn main() {\n        let x = 1;\n}\n";
        let starts = line_starts(text);
        assert_eq!(
            near_miss(text, &starts, "    let x = 1;\n"),
            Some(
                "its first line appears, ignoring surrounding whitespace, at line(s) 2".to_owned()
            )
        );
        assert_eq!(near_miss(text, &starts, "let y"), None);
    }
}
