//! `write {path, content}`: create or replace a whole file, atomically.
//!
//! Policy: a new file may always be created (missing parent directories
//! are created too, inside the allowed roots). An existing file may be
//! replaced only if the agent has read it in this session and it has not
//! changed since (unless the context turns the read requirement off; the
//! staleness check applies whenever a read was recorded). The replacement
//! is atomic and keeps the file's permissions.

use serde_json::{Value, json};

use super::CancelCheck;
use super::fsutil::{
    atomic_replace, check_fresh, create_parents, io_error, remove_created, require_regular,
};
use super::{
    Access, Fingerprint, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, args,
};

const NAME: &str = "write";

/// The `write` tool.
#[derive(Debug)]
pub struct WriteTool {
    def: ToolDefinition,
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteTool {
    /// The tool with its definition.
    pub fn new() -> Self {
        WriteTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "Write a whole file, creating it and its parent directories if \
                    needed. Replacing an existing file requires reading it first. Prefer edit \
                    for changes to existing files."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1, "description": "File to write, relative to the working directory or absolute."},
                        "content": {"type": "string", "description": "The complete new content."}
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
                access: Access::Mutating,
            },
        }
    }
}

impl Tool for WriteTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

fn run(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let raw = args::string(NAME, args, "path")?;
    let content = args::string(NAME, args, "content")?;
    let path = cx.resolve_write(NAME, "path", raw)?;
    let shown = cx.display(&path);
    cx.cancel().check(NAME, &format!("writing {shown}"))?;

    let existed = match std::fs::metadata(&path) {
        Ok(meta) => {
            require_regular(NAME, &meta, &shown)?;
            // The text the agent saw is compared with the owner's current
            // text when an editor serves reads (its unsaved buffer), else
            // with the disk's.
            let current = match cx.file_reads() {
                Some(files) if cx.reads().get(&path).is_some() => Some(Fingerprint::of(
                    files.read_text(NAME, &path, &shown, cx)?.as_bytes(),
                )),
                _ => None,
            };
            check_fresh(NAME, cx, &path, &shown, current)?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(io_error(NAME, "inspecting", &shown, &e)),
    };

    let created = match cx.file_writes() {
        // The file's owner (an editor) creates the file; smith touches
        // nothing on disk.
        Some(files) => {
            files.write_text(NAME, &path, &shown, content, cx)?;
            Vec::new()
        }
        None => {
            let created = create_parents(&path)
                .map_err(|e| io_error(NAME, "creating the parent directories of", &shown, &e))?;
            if let Err(e) = atomic_replace(NAME, &path, &shown, content.as_bytes(), cx.cancel()) {
                let mutation = if remove_created(&created) {
                    Mutation::NotApplied
                } else {
                    Mutation::Unknown
                };
                return Err(e.with_mutation(mutation));
            }
            created
        }
    };
    cx.reads()
        .record(&path, Fingerprint::of(content.as_bytes()));

    let lines = content.lines().count();
    let created_dirs: Vec<String> = created.iter().map(|d| cx.display(d)).collect();
    let mut text = format!(
        "{} {shown} ({} bytes, {lines} lines).",
        if existed { "Replaced" } else { "Created" },
        content.len()
    );
    if !created_dirs.is_empty() {
        text.push_str(&format!(
            " Created directories: {}.",
            created_dirs.join(", ")
        ));
    }
    Ok(ToolResult::ok(
        text,
        json!({
            "path": shown,
            "bytes": content.len(),
            "lines": lines,
            "created": !existed,
            "created_dirs": created_dirs,
        }),
        Mutation::Applied,
    ))
}
