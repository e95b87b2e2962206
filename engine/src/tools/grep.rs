//! `grep {pattern, path?, glob?, ignore_case?, literal?, context?, limit?}`:
//! lines matching a regular expression, file by file in deterministic order.
//!
//! Built on ripgrep's crates: `grep-regex` (Rust regex syntax) and
//! `grep-searcher` (line-oriented search, context lines, binary detection:
//! a file stops being searched at its first NUL byte). Files come from the
//! shared walk (ignore files honoured, dot-files included, `.git` skipped,
//! sorted). Output lines look like ripgrep's: `path:12:matched line`,
//! `path-13-context line`, and `--` between separate groups.

use std::io;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};

use super::CancelCheck;
use super::find::bad_glob;
use super::walk::{BoundedLines, builder, walk_error_note};
use super::{
    Access, CancelToken, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind,
    ToolResult, args,
};

const NAME: &str = "grep";
/// Largest accepted `context`.
const MAX_CONTEXT: usize = 20;

/// The `grep` tool.
#[derive(Debug)]
pub struct GrepTool {
    def: ToolDefinition,
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

impl GrepTool {
    /// The tool with its definition.
    pub fn new() -> Self {
        GrepTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "Search file contents with a regular expression (Rust regex \
                    syntax; literal: true for plain text). Respects .gitignore and .ignore; \
                    skips binary files. Output: path:line:text, sorted by path."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "minLength": 1, "description": "Regular expression (or text with literal: true)."},
                        "path": {"type": "string", "minLength": 1, "description": "File or directory to search (default: the working directory)."},
                        "glob": {"type": "string", "minLength": 1, "description": "Only search files matching this glob, e.g. `*.rs`."},
                        "ignore_case": {"type": "boolean", "description": "Case-insensitive match (default false)."},
                        "literal": {"type": "boolean", "description": "Treat pattern as plain text (default false)."},
                        "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match (default 0)."},
                        "limit": {"type": "integer", "minimum": 1, "description": "Most matching lines to return (default 100)."}
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
                access: Access::ReadOnly,
            },
        }
    }
}

impl Tool for GrepTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

/// Collects one file's matches into the shared bounded output.
struct Collect<'a> {
    shown: &'a str,
    lines: &'a mut BoundedLines,
    matches: &'a mut usize,
    cancel: &'a CancelToken,
    /// Whether a separator goes before this file's first line.
    separate: bool,
    wrote: bool,
    /// Whether the latest matching line was shown (its after-context is
    /// shown even when it was the last one the limit allows).
    last_shown: bool,
}

fn text_of(bytes: &[u8]) -> String {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let b = b.strip_suffix(b"\r").unwrap_or(b);
    String::from_utf8_lossy(b).into_owned()
}

impl Collect<'_> {
    fn before_first(&mut self) {
        if !self.wrote && self.separate {
            self.lines.append("--");
        }
        self.wrote = true;
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = m.line_number().unwrap_or(0);
        for (n, line) in (first..).zip(m.lines()) {
            *self.matches += 1;
            if self.lines.has_room() {
                self.before_first();
                let before = self.lines.shown();
                self.lines
                    .push(&format!("{}:{n}:{}", self.shown, text_of(line)));
                self.last_shown = self.lines.shown() > before;
            } else {
                self.lines.skip();
                self.last_shown = false;
            }
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        let keep = match c.kind() {
            SinkContextKind::After => self.last_shown,
            _ => self.lines.has_room(),
        };
        if keep {
            self.before_first();
            let n = c.line_number().unwrap_or(0);
            self.lines
                .append(&format!("{}-{n}-{}", self.shown, text_of(c.bytes())));
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.lines.has_room() && self.wrote {
            self.lines.append("--");
        }
        Ok(true)
    }
}

fn run(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let pattern = args::string(NAME, args, "pattern")?;
    let raw = args::opt_string(NAME, args, "path")?.unwrap_or(".");
    let glob = args::opt_string(NAME, args, "glob")?;
    let ignore_case = args::flag(NAME, args, "ignore_case")?;
    let literal = args::flag(NAME, args, "literal")?;
    let context = args::opt_usize(NAME, args, "context")?
        .unwrap_or(0)
        .min(MAX_CONTEXT);
    let limits = cx.limits();
    let limit = args::opt_usize(NAME, args, "limit")?
        .unwrap_or(limits.grep_limit)
        .max(1);
    let root = cx.resolve_read(NAME, "path", raw)?;
    let shown_root = cx.display(&root);

    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            ToolError::new(
                ToolErrorKind::BadPattern,
                format!("grep: the pattern `{pattern}` is not a valid regular expression: {e}"),
                "patterns use Rust regex syntax",
                "escape special characters (e.g. `\\(`), or pass literal: true to search plain text",
            )
            .with_extra("pattern", Value::from(pattern))
        })?;
    let meta = std::fs::metadata(&root)
        .map_err(|e| super::fsutil::io_error(NAME, "searching", &shown_root, &e))?;
    if !meta.is_dir() {
        super::fsutil::require_regular(NAME, &meta, &shown_root)?;
    }
    cx.cancel()
        .check(NAME, &format!("searching {shown_root}"))?;

    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut lines = BoundedLines::new(limit, limits.list_max_bytes, limits.list_line_chars);
    let mut matches = 0usize;
    let mut files_matched = 0usize;
    let mut errors = 0usize;
    let mut first_error: Option<String> = None;

    let mut search_one = |path: &std::path::Path,
                          lines: &mut BoundedLines,
                          matches: &mut usize,
                          errors: &mut usize,
                          first_error: &mut Option<String>| {
        let shown = cx.display(path);
        let before = *matches;
        let mut sink = Collect {
            shown: &shown,
            lines,
            matches,
            cancel: cx.cancel(),
            separate: context > 0,
            wrote: false,
            last_shown: false,
        };
        // `separate` only matters once something was written before.
        sink.separate = sink.separate && !sink.lines_is_empty();
        if let Err(e) = searcher.search_path(&matcher, path, sink) {
            *errors += 1;
            first_error.get_or_insert_with(|| format!("{shown}: {e}"));
        }
        *matches > before
    };

    if meta.is_dir() {
        let mut walk = builder(&root, None, true, cx.hidden_paths());
        if let Some(g) = glob {
            let mut ob = OverrideBuilder::new(&root);
            let overrides = ob
                .add(g)
                .and_then(|b| b.build())
                .map_err(|e| bad_glob(g, &e.to_string()))?;
            walk.overrides(overrides);
        }
        for entry in walk.build() {
            cx.cancel()
                .check(NAME, &format!("finishing the search of {shown_root}"))?;
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    errors += 1;
                    first_error.get_or_insert_with(|| e.to_string());
                    continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if search_one(
                entry.path(),
                &mut lines,
                &mut matches,
                &mut errors,
                &mut first_error,
            ) {
                files_matched += 1;
            }
        }
    } else if search_one(
        &root,
        &mut lines,
        &mut matches,
        &mut errors,
        &mut first_error,
    ) {
        files_matched += 1;
    }
    cx.cancel()
        .check(NAME, &format!("finishing the search of {shown_root}"))?;

    let (shown, more) = (lines.shown(), lines.not_shown());
    let mut text = lines.into_text();
    if matches == 0 {
        text = format!("No matches for `{pattern}` in {shown_root}.");
    }
    if more > 0 {
        text.push_str(&format!(
            "\n[{more} more matches not shown; narrow the pattern, path or glob, or raise limit]"
        ));
    }
    if let Some(note) = walk_error_note(errors, first_error.as_deref()) {
        text.push('\n');
        text.push_str(&note);
    }
    Ok(ToolResult::ok(
        text,
        json!({
            "path": shown_root,
            "pattern": pattern,
            "matches": matches,
            "files": files_matched,
            "shown": shown,
            "not_shown": more,
            "unreadable": errors,
        }),
        Mutation::NotApplied,
    ))
}

impl Collect<'_> {
    fn lines_is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}
