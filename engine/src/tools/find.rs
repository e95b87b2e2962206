//! `find {pattern, path?, limit?}`: files and directories whose path
//! matches a glob, in deterministic order.
//!
//! The glob has gitignore semantics relative to the search directory: a
//! pattern without a slash (`*.rs`) matches a name at any depth; a pattern
//! with one (`src/*.rs`, `**/tests/*.rs`) matches the relative path. The
//! walk follows the shared policy in the `walk` module (ignore files
//! honoured, dot-files included, `.git` skipped, sorted by name, depth
//! first). Directories are shown with a trailing `/`.

use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};

use super::CancelCheck;
use super::walk::{BoundedLines, builder, walk_error_note};
use super::{
    Access, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolResult, args,
};

const NAME: &str = "find";

/// The `find` tool.
#[derive(Debug)]
pub struct FindTool {
    def: ToolDefinition,
}

impl Default for FindTool {
    fn default() -> Self {
        Self::new()
    }
}

impl FindTool {
    /// The tool with its definition.
    pub fn new() -> Self {
        FindTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "Find files and directories by glob (gitignore syntax: `*.rs` \
                    matches at any depth, `src/**/*.rs` matches paths). Respects .gitignore and \
                    .ignore. Results are sorted; directories end with /."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "minLength": 1, "description": "Glob to match, e.g. `*.rs` or `src/**/mod.rs`."},
                        "path": {"type": "string", "minLength": 1, "description": "Directory to search (default: the working directory)."},
                        "limit": {"type": "integer", "minimum": 1, "description": "Most results to return (default 1000)."}
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
                access: Access::ReadOnly,
            },
        }
    }
}

impl Tool for FindTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

fn run(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let pattern = args::string(NAME, args, "pattern")?;
    let raw = args::opt_string(NAME, args, "path")?.unwrap_or(".");
    let limits = cx.limits();
    let limit = args::opt_usize(NAME, args, "limit")?
        .unwrap_or(limits.find_limit)
        .max(1);
    let root = cx.resolve_read(NAME, "path", raw)?;
    let shown_root = cx.display(&root);
    if !root.is_dir() {
        let (kind, what) = if root.exists() {
            (
                ToolErrorKind::WrongFileType,
                format!("find: {shown_root} is not a directory"),
            )
        } else {
            (
                ToolErrorKind::NotFound,
                format!("find: {shown_root} does not exist"),
            )
        };
        return Err(ToolError::new(
            kind,
            what,
            "find searches a directory tree",
            "pass a directory as `path`, or omit it to search the working directory",
        )
        .with_extra("path", Value::from(raw)));
    }
    let mut globs = OverrideBuilder::new(&root);
    let glob = globs
        .add(pattern)
        .and_then(|b| b.build())
        .map_err(|e| bad_glob(pattern, &e.to_string()))?;
    cx.cancel()
        .check(NAME, &format!("searching {shown_root}"))?;

    let mut lines = BoundedLines::new(limit, limits.list_max_bytes, limits.list_line_chars);
    let mut errors = 0usize;
    let mut first_error = None;
    for (i, entry) in builder(&root, None, true, cx.hidden_paths())
        .build()
        .enumerate()
    {
        if i % 256 == 255 {
            cx.cancel()
                .check(NAME, &format!("finishing the search of {shown_root}"))?;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                errors += 1;
                first_error.get_or_insert_with(|| e.to_string());
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if !glob.matched(entry.path(), is_dir).is_whitelist() {
            continue;
        }
        if !lines.has_room() {
            lines.skip();
            continue;
        }
        let mut shown = cx.display(entry.path());
        if is_dir {
            shown.push('/');
        }
        lines.push(&shown);
    }
    let (shown, more) = (lines.shown(), lines.not_shown());
    let mut text = lines.into_text();
    if shown == 0 && more == 0 {
        text = format!("No paths under {shown_root} match `{pattern}`.");
    }
    if more > 0 {
        text.push_str(&format!(
            "\n[{more} more results not shown; narrow the pattern or path, or raise limit]"
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
            "shown": shown,
            "not_shown": more,
            "unreadable": errors,
        }),
        Mutation::NotApplied,
    ))
}

pub(crate) fn bad_glob(pattern: &str, err: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::BadPattern,
        format!("the glob `{pattern}` is invalid: {err}"),
        "globs use gitignore syntax (`*`, `**`, `?`, `[a-z]`, `{a,b}`)",
        "fix the glob, e.g. `*.rs` or `src/**/*.toml`",
    )
    .with_extra("pattern", Value::from(pattern))
}
