//! smith/mentions: `@path` in a prompt attaches the file's text (or a
//! folder's listing) to what the model receives, through the plugin
//! contract's `input` hook.
//!
//! A mention is `@` at the start of the prompt or after whitespace or `(`,
//! followed by a path (`@src/main.rs`) or a quoted one (`@"my notes.txt"`).
//! Trailing punctuation (`@notes.txt,`) is not part of the path unless a
//! file of that name exists. A mention naming nothing that exists is left
//! as it was written (`@dataclass`, `@someone`). Paths resolve as the
//! runtime's tools resolve them (relative to the project root, or
//! absolute); one outside the project is refused: the prompt is not sent,
//! and the reason says which mention and where the project is.
//!
//! What is attached goes after the prompt, in one `<attachments>` block:
//! each file as `<file path="…">` with its text, each folder as
//! `<folder path="…">` with its entries (folders end in `/`). Budgets:
//! [`FILE_BUDGET`] bytes per file and [`TOTAL_BUDGET`] in all; a file over
//! its share is cut at a line boundary and the cut is said in the block, so
//! the model knows to read the rest with the read tool. An image (PNG,
//! JPEG, GIF, WebP) or PDF, told by its first bytes, is attached as a media
//! part of the prompt (`host.attach-media`) and named in the block by its
//! one-line summary; the runtime refuses the prompt when the model does not
//! take it. Another binary file (a NUL byte in its first 8 KiB) and
//! anything that is not a regular file or a folder are named, not attached.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;
use smith_plugin_sdk::extension::exports::smith::plugin::provide as pro;
use smith_plugin_sdk::host;

struct Mentions;

/// The most text attached from one file.
const FILE_BUDGET: usize = 100 * 1024;

/// The most text attached from all the mentions of one prompt.
const TOTAL_BUDGET: usize = 400 * 1024;

/// The most entries listed for one folder.
const FOLDER_ENTRIES: usize = 200;

/// One mention as written: where it starts and ends in the prompt, and the
/// path it names (without `@` and quotes).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mention {
    written: String,
    path: String,
    /// The path with trailing punctuation, tried first when it differs.
    with_trailing: Option<String>,
}

/// The mentions in `text`, in order, each path once.
fn mentions(text: &str) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'@'
            && (i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'\r' | b'('));
        if !starts {
            i += 1;
            continue;
        }
        let rest = &text[i + 1..];
        let (path, written_len, with_trailing) = if let Some(quoted) = rest.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (quoted[..end].to_owned(), end + 2, None),
                None => {
                    i += 1;
                    continue;
                }
            }
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            let raw = &rest[..end];
            let trimmed = raw.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'']);
            let trailing = (trimmed != raw).then(|| raw.to_owned());
            (trimmed.to_owned(), end, trailing)
        };
        let written = text[i..i + 1 + written_len].to_owned();
        i += 1 + written_len;
        if path.is_empty() || out.iter().any(|m| m.path == path) {
            continue;
        }
        out.push(Mention {
            written,
            path,
            with_trailing,
        });
    }
    out
}

/// What one mention attaches.
enum Attached {
    File { path: String, text: String, cut: Option<usize>, size: u64 },
    Folder { path: String, entries: Vec<String>, more: bool },
    Named { path: String, why: String },
}

fn error_text(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(text)
        | host::EffectError::Invalid(text)
        | host::EffectError::Failed(text) => text.clone(),
    }
}

/// The mention's path as the runtime resolves it, when something is there:
/// the path with its trailing punctuation first, then without.
fn locate(m: &Mention) -> Option<(String, host::FileStat, host::ResolvedPath)> {
    for candidate in m.with_trailing.iter().chain(std::iter::once(&m.path)) {
        if let Ok(Some(stat)) = host::stat_file(candidate)
            && let Ok(resolved) = host::resolve_path(candidate)
        {
            return Some((candidate.clone(), stat, resolved));
        }
    }
    None
}

/// Reads what each mention names; `Err` with the reason when one lies
/// outside the project.
fn attach(found: &[Mention]) -> Result<Vec<Attached>, String> {
    let mut located = Vec::new();
    for m in found {
        let Some((path, stat, resolved)) = locate(m) else {
            continue;
        };
        let Some(shown) = resolved.project_relative.clone() else {
            let root = host::resolve_path(".")
                .map(|r| r.absolute)
                .unwrap_or_else(|_| "the working folder".to_owned());
            return Err(format!(
                "{} names {}, outside the project ({root}): a mention attaches files of the project only; remove it, or ask the model to read the file with its read tool (which asks first)",
                m.written, resolved.absolute
            ));
        };
        let shown = if shown.is_empty() { ".".to_owned() } else { shown };
        located.push((path, stat, shown));
    }
    let mut left = TOTAL_BUDGET;
    let mut out = Vec::new();
    for (path, stat, shown) in located {
        if stat.is_dir {
            out.push(folder(&path, shown));
            continue;
        }
        if left == 0 {
            out.push(Attached::Named {
                path: shown,
                why: format!(
                    "not attached: the prompt's mentions already reached {TOTAL_BUDGET} bytes; read it with the read tool"
                ),
            });
            continue;
        }
        // An image or PDF (by its magic bytes) goes to the model as a media
        // part of the prompt, named in the block by its summary.
        match host::attach_media(&path) {
            Ok(Some(summary)) => {
                out.push(Attached::Named {
                    path: shown,
                    why: format!("attached: {summary}"),
                });
                continue;
            }
            Ok(None) => {}
            Err(err) => {
                out.push(Attached::Named {
                    path: shown,
                    why: format!("not attached: {}", error_text(&err)),
                });
                continue;
            }
        }
        match host::peek_file(&path) {
            Ok(Some(text)) => {
                let probe = &text.as_bytes()[..text.len().min(8192)];
                if probe.contains(&0) {
                    out.push(Attached::Named {
                        path: shown,
                        why: format!("a binary file of {} bytes, not attached", stat.size),
                    });
                    continue;
                }
                let budget = FILE_BUDGET.min(left);
                let (text, cut) = if text.len() > budget {
                    let mut end = budget;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    if let Some(line) = text[..end].rfind('\n') {
                        end = line + 1;
                    }
                    (text[..end].to_owned(), Some(end))
                } else {
                    (text, None)
                };
                left -= text.len();
                out.push(Attached::File {
                    path: shown,
                    text,
                    cut,
                    size: stat.size,
                });
            }
            Ok(None) => {}
            Err(err) => out.push(Attached::Named {
                path: shown,
                why: format!("not attached: {}", error_text(&err)),
            }),
        }
    }
    Ok(out)
}

fn folder(path: &str, shown: String) -> Attached {
    match host::peek_dir(path) {
        Ok(Some(listing)) => {
            let more = listing.truncated || listing.entries.len() > FOLDER_ENTRIES;
            let entries = listing
                .entries
                .iter()
                .take(FOLDER_ENTRIES)
                .map(|e| match e.kind {
                    host::EntryKind::Dir => format!("{}/", e.name),
                    _ => e.name.clone(),
                })
                .collect();
            Attached::Folder {
                path: shown,
                entries,
                more,
            }
        }
        Ok(None) => Attached::Named {
            path: shown,
            why: "not attached: the folder went away".to_owned(),
        },
        Err(err) => Attached::Named {
            path: shown,
            why: format!("not attached: {}", error_text(&err)),
        },
    }
}

/// Quotes a path for an attribute.
fn attr(path: &str) -> String {
    path.replace('&', "&amp;").replace('"', "&quot;")
}

/// `text` with the attachments after it.
fn with_attachments(text: &str, attached: &[Attached]) -> String {
    let mut out = text.trim_end().to_owned();
    out.push_str("\n\n<attachments>\n");
    for a in attached {
        match a {
            Attached::File {
                path,
                text,
                cut,
                size,
            } => {
                out.push_str(&format!("<file path=\"{}\">\n", attr(path)));
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
                if let Some(cut) = cut {
                    out.push_str(&format!(
                        "[cut: the first {cut} of {size} bytes are shown; read the rest with the read tool]\n"
                    ));
                }
                out.push_str("</file>\n");
            }
            Attached::Folder {
                path,
                entries,
                more,
            } => {
                out.push_str(&format!("<folder path=\"{}\">\n", attr(path)));
                for e in entries {
                    out.push_str(e);
                    out.push('\n');
                }
                if *more {
                    out.push_str(&format!(
                        "[more entries than the {FOLDER_ENTRIES} listed; list it with the ls tool]\n"
                    ));
                }
                out.push_str("</folder>\n");
            }
            Attached::Named { path, why } => {
                out.push_str(&format!("<file path=\"{}\">{why}</file>\n", attr(path)));
            }
        }
    }
    out.push_str("</attachments>");
    out
}

impl ext::Guest for Mentions {
    fn contribute() -> ext::Contributions {
        ext::Contributions {
            commands: Vec::new(),
            keybindings: Vec::new(),
            themes: Vec::new(),
            layout: Vec::new(),
            prompt_fragments: Vec::new(),
            tools: Vec::new(),
            tool_presentations: Vec::new(),
            config: Vec::new(),
        }
    }

    fn run_command(name: String, _argument: String) -> Result<Vec<ext::Action>, String> {
        Err(format!("smith/mentions has no command /{name}"))
    }

    /// `input`: a prompt with mentions is replaced by the prompt with what
    /// they name attached; one naming a path outside the project is
    /// blocked with the reason.
    fn handle(event: ext::LifecycleEvent) -> ext::HandlerResult {
        let ext::LifecycleEvent::Input(text) = &event else {
            return ext::HandlerResult::None;
        };
        let found = mentions(text);
        if found.is_empty() {
            return ext::HandlerResult::None;
        }
        match attach(&found) {
            Ok(attached) if attached.is_empty() => ext::HandlerResult::None,
            Ok(attached) => ext::HandlerResult::Decision(ext::Decision::Replace(
                with_attachments(text, &attached),
            )),
            Err(reason) => ext::HandlerResult::Decision(ext::Decision::Block(reason)),
        }
    }
}

impl pro::Guest for Mentions {
    fn tools() -> Vec<pro::ToolSpec> {
        Vec::new()
    }

    fn call_tool(name: String, _arguments: String) -> pro::ToolOutput {
        pro::ToolOutput {
            text: format!("smith/mentions has no tool {name}"),
            structured: None,
            is_error: true,
        }
    }

    fn context(_messages: u32) -> Option<Vec<pro::Fragment>> {
        None
    }

    fn queue_policies() -> Vec<pro::QueuePolicy> {
        Vec::new()
    }
}

smith_plugin_sdk::extension::export_extension!(Mentions);
