//! `smith session export REF`: a session's selected branch as a document a
//! person reads (Markdown) or a program reads (JSON), with every message,
//! thinking block, tool call and tool result in order, compactions marked
//! where they happened and each run's end with its usage and cost.

use std::io::Write;

use serde_json::Value;
use smith_store::{EntryKind, Session};

/// What the branch holds, in order, for both formats.
enum Item {
    User(String, Vec<String>),
    Assistant(Vec<Value>),
    ToolResult {
        name: String,
        status: String,
        content: String,
        media: Vec<String>,
    },
    Compaction(String),
    ModelChange(String),
    RunEnd(Value),
}

/// Reads the selected branch of `session` into items.
fn items(session: &Session) -> anyhow::Result<(Vec<Item>, Option<String>)> {
    let mut out = Vec::new();
    let mut cwd = None;
    for record in session.branch() {
        let kind = record.entry_kind();
        let wanted = matches!(
            kind,
            EntryKind::UserMessage
                | EntryKind::AssistantMessage
                | EntryKind::ToolResult
                | EntryKind::Compaction
                | EntryKind::ModelChange
                | EntryKind::Metadata
        );
        if !wanted {
            continue;
        }
        let v = smith_engine::journal::store::entry_json(session, record)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        // Media appear as their one-line summaries, never as bytes.
        let media = || {
            serde_json::from_value::<Vec<smith_engine::provider::Media>>(v["media"].clone())
                .map(|parts| {
                    parts
                        .iter()
                        .map(smith_engine::provider::Media::summary)
                        .collect()
                })
                .unwrap_or_default()
        };
        match kind {
            EntryKind::UserMessage => out.push(Item::User(text("text"), media())),
            EntryKind::AssistantMessage => out.push(Item::Assistant(
                v["content"].as_array().cloned().unwrap_or_default(),
            )),
            EntryKind::ToolResult => out.push(Item::ToolResult {
                name: text("name"),
                status: text("status"),
                content: text("content"),
                media: media(),
            }),
            EntryKind::Compaction => out.push(Item::Compaction(text("summary"))),
            EntryKind::ModelChange => {
                out.push(Item::ModelChange(format!(
                    "{}/{}",
                    text("provider"),
                    text("model")
                )));
            }
            _ => match v["type"].as_str() {
                Some("run_start") if cwd.is_none() => {
                    cwd = v["cwd"].as_str().map(str::to_owned);
                }
                Some("run_end") => out.push(Item::RunEnd(v)),
                _ => {}
            },
        }
    }
    Ok((out, cwd))
}

/// A code fence longer than any run of backticks in `text`, so no content
/// closes it early.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn fenced(out: &mut impl Write, lang: &str, text: &str) -> std::io::Result<()> {
    let f = fence(text);
    writeln!(out, "{f}{lang}")?;
    writeln!(out, "{}", text.trim_end_matches('\n'))?;
    writeln!(out, "{f}")?;
    writeln!(out)
}

/// A token count, or `?` when the provider did not state it.
fn tokens(v: &Value) -> String {
    v.as_u64().map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// Writes the selected branch of `session` as Markdown under `title`.
///
/// # Errors
///
/// When an entry cannot be decoded (naming it), or the output fails.
pub fn markdown(
    session: &Session,
    title: &str,
    created: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let (items, cwd) = items(session)?;
    writeln!(out, "# {title}")?;
    writeln!(out)?;
    writeln!(out, "- Session: `{}`", session.id())?;
    writeln!(out, "- Created: {created} UTC")?;
    if let Some(cwd) = cwd {
        writeln!(out, "- Working directory: `{cwd}`")?;
    }
    writeln!(out)?;
    for item in items {
        match item {
            Item::User(text, media) => {
                writeln!(out, "## User")?;
                writeln!(out)?;
                writeln!(out, "{}", text.trim_end())?;
                writeln!(out)?;
                for line in &media {
                    writeln!(out, "{line}")?;
                    writeln!(out)?;
                }
            }
            Item::Assistant(blocks) => {
                writeln!(out, "## Assistant")?;
                writeln!(out)?;
                for block in blocks {
                    let text = block["text"].as_str().unwrap_or_default();
                    match block["type"].as_str() {
                        Some("text") => {
                            writeln!(out, "{}", text.trim_end())?;
                            writeln!(out)?;
                        }
                        Some("thinking") => {
                            writeln!(out, "<details><summary>Thinking</summary>")?;
                            writeln!(out)?;
                            writeln!(out, "{}", text.trim_end())?;
                            writeln!(out)?;
                            writeln!(out, "</details>")?;
                            writeln!(out)?;
                        }
                        Some("redacted_thinking") => {
                            writeln!(out, "*(thinking the provider sent encrypted)*")?;
                            writeln!(out)?;
                        }
                        _ if block.get("name").is_some() => {
                            writeln!(
                                out,
                                "**Tool call** `{}`",
                                block["name"].as_str().unwrap_or("?")
                            )?;
                            writeln!(out)?;
                            let args = serde_json::to_string_pretty(&block["arguments"])?;
                            fenced(out, "json", &args)?;
                        }
                        _ => {}
                    }
                }
            }
            Item::ToolResult {
                name,
                status,
                content,
                media,
            } => {
                writeln!(out, "**Result** of `{name}` ({status}):")?;
                writeln!(out)?;
                fenced(out, "", &content)?;
                for line in &media {
                    writeln!(out, "{line}")?;
                    writeln!(out)?;
                }
            }
            Item::Compaction(summary) => {
                writeln!(out, "---")?;
                writeln!(out)?;
                writeln!(
                    out,
                    "**Compacted.** The conversation above was summarized for the model as:"
                )?;
                writeln!(out)?;
                for line in summary.trim_end().lines() {
                    writeln!(out, "> {line}")?;
                }
                writeln!(out)?;
            }
            Item::ModelChange(model) => {
                writeln!(out, "*Model: {model}*")?;
                writeln!(out)?;
            }
            Item::RunEnd(v) => {
                let u = &v["usage"];
                let cost = v["cost"]
                    .as_f64()
                    .map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"));
                writeln!(
                    out,
                    "*Run ended ({}): {} input, {} output tokens; cost {cost}*",
                    v["stop"].as_str().unwrap_or("?"),
                    tokens(&u["input"]),
                    tokens(&u["output"]),
                )?;
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

/// Writes the selected branch of `session` as one JSON object: the
/// session's id and the items in order (`user`, `assistant` with its
/// content blocks, `tool_result`, `compaction`, `model`, `run_end`).
///
/// # Errors
///
/// When an entry cannot be decoded (naming it), or the output fails.
pub fn json(session: &Session, title: &str, out: &mut impl Write) -> anyhow::Result<()> {
    let (items, cwd) = items(session)?;
    let items: Vec<Value> = items
        .into_iter()
        .map(|item| match item {
            Item::User(text, media) if media.is_empty() => {
                serde_json::json!({"type": "user", "text": text})
            }
            Item::User(text, media) => {
                serde_json::json!({"type": "user", "text": text, "media": media})
            }
            Item::Assistant(content) => {
                serde_json::json!({"type": "assistant", "content": content})
            }
            Item::ToolResult {
                name,
                status,
                content,
                media,
            } => {
                let mut item = serde_json::json!({"type": "tool_result", "name": name, "status": status, "content": content});
                if !media.is_empty() {
                    item["media"] = serde_json::json!(media);
                }
                item
            }
            Item::Compaction(summary) => {
                serde_json::json!({"type": "compaction", "summary": summary})
            }
            Item::ModelChange(model) => serde_json::json!({"type": "model", "model": model}),
            Item::RunEnd(v) => serde_json::json!({
                "type": "run_end", "stop": v["stop"], "usage": v["usage"], "cost": v["cost"]
            }),
        })
        .collect();
    let doc = serde_json::json!({
        "session": session.id().to_string(),
        "title": title,
        "cwd": cwd,
        "items": items,
    });
    writeln!(out, "{doc}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fence;

    #[test]
    fn a_fence_is_longer_than_any_backtick_run_inside() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ``` b"), "````");
        assert_eq!(fence("`````"), "``````");
    }
}
