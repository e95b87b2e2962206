//! How smith's runtime events and recorded messages become ACP
//! `session/update`s: tool kinds, titles, locations, content and diffs,
//! stop reasons, and the replay of a conversation for `session/load`.

use std::path::Path;

use serde_json::{Value, json};
use smith_engine::protocol::{StopCause, ToolStatus};
use smith_engine::provider::{ContentBlock, Message, ToolCall};

/// The most bytes of a file read to show a `write`'s old text in its diff.
pub(crate) const MAX_DIFF_FILE: u64 = 1024 * 1024;

/// The most bytes of live command output kept for a running call (the
/// tail; the completion carries the tool's own bounded result).
pub(crate) const MAX_LIVE_OUTPUT: usize = 64 * 1024;

/// A text content block.
pub(crate) fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A `session/update` params object.
pub(crate) fn update(session: &str, update: Value) -> Value {
    json!({"sessionId": session, "update": update})
}

/// A chunk update (`agent_message_chunk`, `agent_thought_chunk`,
/// `user_message_chunk`) carrying `body` as text.
pub(crate) fn chunk(kind: &str, body: &str) -> Value {
    json!({"sessionUpdate": kind, "content": text(body)})
}

/// The ACP tool kind of a smith tool.
pub(crate) fn kind(tool: &str) -> &'static str {
    match tool {
        "read" => "read",
        "write" | "edit" => "edit",
        "bash" => "execute",
        "ls" | "find" | "grep" => "search",
        _ => "other",
    }
}

fn arg<'a>(arguments: &'a Value, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str)
}

/// `text` on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max).collect();
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// A short title for a call, as an editor shows it.
pub(crate) fn title(call: &ToolCall) -> String {
    let a = &call.arguments;
    let path = arg(a, "path");
    match call.name.as_str() {
        "bash" => format!("`{}`", one_line(arg(a, "command").unwrap_or_default(), 80)),
        "read" => format!("Read {}", path.unwrap_or("?")),
        "write" => format!("Write {}", path.unwrap_or("?")),
        "edit" => format!("Edit {}", path.unwrap_or("?")),
        "ls" => format!("List {}", path.unwrap_or(".")),
        "find" | "grep" => format!(
            "{} {}",
            if call.name == "find" { "Find" } else { "Grep" },
            one_line(arg(a, "pattern").unwrap_or_default(), 60)
        ),
        other => other.to_owned(),
    }
}

/// `path` made absolute against `cwd` (ACP paths are absolute).
pub(crate) fn absolute(cwd: &Path, path: &str) -> String {
    let p = Path::new(path);
    if p.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(p).to_string_lossy().into_owned()
    }
}

/// The file locations a call touches.
pub(crate) fn locations(call: &ToolCall, cwd: &Path) -> Vec<Value> {
    let Some(path) = arg(&call.arguments, "path") else {
        return Vec::new();
    };
    let mut location = json!({"path": absolute(cwd, path)});
    if call.name == "read"
        && let Some(line) = call.arguments.get("offset").and_then(Value::as_u64)
    {
        location["line"] = json!(line);
    }
    vec![location]
}

/// The diff of an `edit` (old text to new) or a `write` (`old`: the file
/// as it was when the call was announced; `None` for a new file).
pub(crate) fn diff(call: &ToolCall, cwd: &Path, old: Option<&str>) -> Option<Value> {
    let a = &call.arguments;
    let path = absolute(cwd, arg(a, "path")?);
    match call.name.as_str() {
        "edit" => Some(json!({
            "type": "diff",
            "path": path,
            "oldText": arg(a, "old_text").unwrap_or_default(),
            "newText": arg(a, "new_text").unwrap_or_default(),
        })),
        "write" => Some(json!({
            "type": "diff",
            "path": path,
            "oldText": old,
            "newText": arg(a, "content").unwrap_or_default(),
        })),
        _ => None,
    }
}

/// The current text of a `write`'s target, read when the call is
/// announced (before it runs): `None` when it does not exist, is larger
/// than [`MAX_DIFF_FILE`] or is not UTF-8.
pub(crate) fn old_text(call: &ToolCall, cwd: &Path) -> Option<String> {
    if call.name != "write" {
        return None;
    }
    let path = absolute(cwd, arg(&call.arguments, "path")?);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_DIFF_FILE {
        return None;
    }
    String::from_utf8(std::fs::read(&path).ok()?).ok()
}

/// The `tool_call` update announcing `call` (status `pending`).
pub(crate) fn tool_call(call: &ToolCall, cwd: &Path, old: Option<&str>) -> Value {
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": call.id,
        "title": title(call),
        "kind": kind(&call.name),
        "status": "pending",
        "rawInput": call.arguments,
    });
    let locations = locations(call, cwd);
    if !locations.is_empty() {
        update["locations"] = json!(locations);
    }
    if let Some(diff) = diff(call, cwd, old) {
        update["content"] = json!([diff]);
    }
    update
}

/// The ACP status of a finished call: `completed` when it ran and
/// succeeded, else `failed` (an error, a refusal, a block, an abort).
pub(crate) fn status(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Ok => "completed",
        _ => "failed",
    }
}

/// Wraps `body` as tool call content.
pub(crate) fn content(body: &str) -> Value {
    json!({"type": "content", "content": text(body)})
}

/// The ACP stop reason of a run that ended with `stop`, or `None` for a
/// run that failed (answered with an error instead).
pub(crate) fn stop_reason(stop: StopCause, error_kind: Option<&str>) -> Option<&'static str> {
    match stop {
        StopCause::Done => Some("end_turn"),
        StopCause::TurnLimit => Some("max_turn_requests"),
        StopCause::Budget => Some("max_tokens"),
        StopCause::Aborted => Some("cancelled"),
        StopCause::Error if error_kind == Some("output_limit") => Some("max_tokens"),
        StopCause::Error => None,
    }
}

/// The tool that writes the agent's todo list (the built-in smith/todo).
pub(crate) const TODO_WRITE: &str = "todo_write";

/// The `plan` update for a `todo_write` call's list (`todos`: each item's
/// `content` and `status`), or none when the arguments hold no list. The
/// todo list has no priorities: every entry is `medium`. A status the
/// protocol does not know is sent as `pending`.
pub(crate) fn plan(call: &ToolCall) -> Option<Value> {
    if call.name != TODO_WRITE {
        return None;
    }
    let todos = call.arguments.get("todos")?.as_array()?;
    let entries: Vec<Value> = todos
        .iter()
        .filter_map(|item| {
            let content = item.get("content")?.as_str()?;
            let status = item
                .get("status")
                .and_then(Value::as_str)
                .filter(|s| matches!(*s, "in_progress" | "completed"))
                .unwrap_or("pending");
            Some(json!({"content": content, "priority": "medium", "status": status}))
        })
        .collect();
    Some(json!({"sessionUpdate": "plan", "entries": entries}))
}

/// The updates that replay a conversation (`session/load`): each user
/// message as `user_message_chunk`, each assistant message's reasoning
/// and text as thought and message chunks and its calls as `tool_call`s
/// completed with their results; a `todo_write` that succeeded is followed
/// by the `plan` it wrote.
pub(crate) fn replay(messages: &[Message], cwd: &Path) -> Vec<Value> {
    let mut updates = Vec::new();
    let mut plans: Vec<(String, Value)> = Vec::new();
    for message in messages {
        match message {
            Message::User { text, .. } => updates.push(chunk("user_message_chunk", text)),
            Message::Assistant { content, .. } => {
                for block in content {
                    match block {
                        ContentBlock::Thinking { text, .. } if !text.is_empty() => {
                            updates.push(chunk("agent_thought_chunk", text));
                        }
                        ContentBlock::Text { text } if !text.is_empty() => {
                            updates.push(chunk("agent_message_chunk", text));
                        }
                        ContentBlock::ToolCall(call) => {
                            if let Some(plan) = plan(call) {
                                plans.push((call.id.clone(), plan));
                            }
                            let mut update = tool_call(call, cwd, None);
                            if call.name == "write" {
                                // The old text is not known any more.
                                if let Some(fields) = update.as_object_mut() {
                                    fields.remove("content");
                                }
                            }
                            updates.push(update);
                        }
                        _ => {}
                    }
                }
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                updates.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": if *is_error { "failed" } else { "completed" },
                    "content": [self::content(content)],
                }));
                if let Some(i) = plans.iter().position(|(id, _)| id == call_id) {
                    let (_, plan) = plans.swap_remove(i);
                    if !*is_error {
                        updates.push(plan);
                    }
                }
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn edits_and_writes_carry_diffs_with_absolute_paths() {
        let cwd = Path::new("/w");
        let edit = tool_call(
            &call(
                "edit",
                json!({"path": "a.txt", "old_text": "x", "new_text": "y"}),
            ),
            cwd,
            None,
        );
        assert_eq!(edit["kind"], "edit");
        assert_eq!(edit["title"], "Edit a.txt");
        assert_eq!(
            edit["content"],
            json!([{"type": "diff", "path": "/w/a.txt", "oldText": "x", "newText": "y"}])
        );
        assert_eq!(edit["locations"], json!([{"path": "/w/a.txt"}]));
        let write = tool_call(
            &call("write", json!({"path": "/abs/b.txt", "content": "new"})),
            cwd,
            None,
        );
        assert_eq!(write["content"][0]["oldText"], Value::Null);
        assert_eq!(write["content"][0]["path"], "/abs/b.txt");
        let bash = tool_call(
            &call("bash", json!({"command": "sleep 5\necho"})),
            cwd,
            None,
        );
        assert_eq!(bash["kind"], "execute");
        assert_eq!(bash["title"], "`sleep 5…`");
        assert!(bash.get("content").is_none());
    }

    #[test]
    fn stop_causes_map_to_acp_stop_reasons() {
        assert_eq!(stop_reason(StopCause::Done, None), Some("end_turn"));
        assert_eq!(stop_reason(StopCause::Aborted, None), Some("cancelled"));
        assert_eq!(
            stop_reason(StopCause::TurnLimit, None),
            Some("max_turn_requests")
        );
        assert_eq!(
            stop_reason(StopCause::Error, Some("output_limit")),
            Some("max_tokens")
        );
        assert_eq!(stop_reason(StopCause::Error, Some("transport")), None);
    }
}
