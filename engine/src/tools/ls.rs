//! `ls {path?, limit?}`: the entries of one directory, sorted by name.
//!
//! Entries excluded by ignore files are not shown (the shared policy in the
//! `walk` module); dot-files and `.git` are. Directories end with `/`,
//! symlinks with `@` (they are not followed).

use serde_json::{Value, json};

use super::CancelCheck;
use super::walk::{BoundedLines, builder, walk_error_note};
use super::{
    Access, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolResult, args,
};

const NAME: &str = "ls";

/// The `ls` tool.
#[derive(Debug)]
pub struct LsTool {
    def: ToolDefinition,
}

impl Default for LsTool {
    fn default() -> Self {
        Self::new()
    }
}

impl LsTool {
    /// The tool with its definition.
    pub fn new() -> Self {
        LsTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "List a directory's entries, sorted by name. Directories end with \
                    /, symlinks with @. Entries ignored by .gitignore or .ignore are omitted."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1, "description": "Directory to list (default: the working directory)."},
                        "limit": {"type": "integer", "minimum": 1, "description": "Most entries to return (default 500)."}
                    },
                    "additionalProperties": false
                }),
                access: Access::ReadOnly,
            },
        }
    }
}

impl Tool for LsTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

fn run(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let raw = args::opt_string(NAME, args, "path")?.unwrap_or(".");
    let limits = cx.limits();
    let limit = args::opt_usize(NAME, args, "limit")?
        .unwrap_or(limits.ls_limit)
        .max(1);
    let dir = cx.resolve_read(NAME, "path", raw)?;
    let shown_dir = cx.display(&dir);
    cx.cancel().check(NAME, &format!("listing {shown_dir}"))?;
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::new(
                ToolErrorKind::WrongFileType,
                format!("ls: {shown_dir} is a file, not a directory"),
                "ls lists directories",
                format!("use read with path `{shown_dir}` to see its content"),
            )
            .with_extra("path", Value::from(raw)));
        }
        Err(e) => {
            return Err(super::fsutil::io_error(NAME, "listing", &shown_dir, &e));
        }
    }

    let mut lines = BoundedLines::new(limit, limits.list_max_bytes, limits.list_line_chars);
    let mut errors = 0usize;
    let mut first_error = None;
    for entry in builder(&dir, Some(1), false, cx.hidden_paths()).build() {
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
        if !lines.has_room() {
            lines.skip();
            continue;
        }
        let mut name = entry.file_name().to_string_lossy().into_owned();
        match entry.file_type() {
            Some(t) if t.is_dir() => name.push('/'),
            Some(t) if t.is_symlink() => name.push('@'),
            _ => {}
        }
        lines.push(&name);
    }
    let (shown, more) = (lines.shown(), lines.not_shown());
    let mut text = lines.into_text();
    if shown == 0 && more == 0 {
        text = "(empty directory)".to_owned();
    }
    if more > 0 {
        text.push_str(&format!(
            "\n[{more} more entries not shown; raise limit or use find with a pattern]"
        ));
    }
    if let Some(note) = walk_error_note(errors, first_error.as_deref()) {
        text.push('\n');
        text.push_str(&note);
    }
    Ok(ToolResult::ok(
        text,
        json!({
            "path": shown_dir,
            "shown": shown,
            "not_shown": more,
            "unreadable": errors,
        }),
        Mutation::NotApplied,
    ))
}
