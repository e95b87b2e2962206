//! The mock provider: its script format (`--mock-script`, documented in
//! `docs/mock-provider.md`) and the scripted provider that plays it.
//!
//! A script is a list of responses, each a list of events, or an object with
//! `responses` and `summaries`. [`ScriptedProvider`] plays one response per
//! request through exactly the [`Provider`] contract: `encode` answers with a
//! local exchange whose chunks carry the response's events (with their
//! delays), `decode` turns each chunk back into normalized events. Summary
//! requests ([`is_summary_request`]) take the script's `summaries` in order,
//! or get a generated deterministic summary. With no script it runs a
//! built-in demo that lists the working directory, reads a file from it and
//! answers.
//!
//! This one implementation serves the host (which reads a script before a
//! run to name its errors), the smith/mock plugin (the product's scripted
//! provider, built for `wasm32-wasip2`) and the native test kit.

use serde::Deserialize;

use crate::summary::{INSTRUCTIONS_MARKER, is_summary_request};
use crate::types::{
    Exchange, LocalChunk, Message, ModelInfo, OpaqueBytes, Provider, ProviderError,
    ProviderErrorKind, ProviderInfo, Request, StopReason, StreamEvent, Usage,
};

/// The model the scripted provider (smith/mock) offers.
pub const MOCK_MODEL: &str = "mock-1";

/// One scripted event.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptEvent {
    /// A text delta.
    Text(String),
    /// A thinking delta: a string, or `{text, signature}` with hex bytes.
    Thinking(ScriptThinking),
    /// A complete tool call (start, argument text, end).
    ToolCall(ScriptToolCall),
    /// A usage report.
    Usage(Usage),
    /// The terminal stop event.
    Stop {
        /// end, tool_use, limit, abort or error.
        reason: StopReason,
    },
    /// The terminal error event.
    Error {
        /// The error kind (rate_limit, overloaded, auth, ...).
        kind: ProviderErrorKind,
        /// The message.
        message: String,
        /// Optional retry hint.
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    /// Wait this long before the next event (observes cancellation).
    DelayMs(u64),
    /// A raw normalized stream event, for streams the shorthands cannot
    /// express (a tool call cut off mid-arguments, a malformed stream).
    Event(StreamEvent),
}

/// A scripted thinking delta.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ScriptThinking {
    /// Text only.
    Text(String),
    /// Text and signature bytes.
    Signed {
        /// The text.
        text: String,
        /// Hex signature bytes.
        signature: OpaqueBytes,
    },
}

/// A scripted tool call.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The call id; generated as `call_<response>_<n>` when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// A parsed script: responses in order.
pub type Script = Vec<Vec<ScriptEvent>>;

/// A whole script file: the responses to ordinary requests and, when the
/// file is in its object form, separate responses to summary requests
/// (compaction; see [`is_summary_request`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    /// Responses to ordinary requests, in order.
    pub responses: Script,
    /// Responses to summary requests, in order; `None` makes the provider
    /// answer them with a generated deterministic summary.
    #[serde(default)]
    pub summaries: Option<Script>,
}

impl From<Script> for ScriptFile {
    fn from(responses: Script) -> Self {
        Self {
            responses,
            summaries: None,
        }
    }
}

/// A script or record problem.
#[derive(Debug)]
pub struct ScriptError {
    /// What went wrong, naming the script or record file.
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScriptError {}

/// Parses a script from JSON text; `origin` names the source in errors.
///
/// # Errors
///
/// When the text is neither a JSON list of responses (lists of script
/// events) nor an object `{"responses": [...], "summaries": [...]}`; the
/// error names the origin, the line and column, and the expected shape.
pub fn parse_script(text: &str, origin: &str) -> Result<ScriptFile, ScriptError> {
    let parsed = if text.trim_start().starts_with('{') {
        serde_json::from_str::<ScriptFile>(text)
    } else {
        serde_json::from_str::<Script>(text).map(ScriptFile::from)
    };
    parsed.map_err(|err| ScriptError {
        message: format!(
            "mock script {origin} is not valid: {err}; a script is a JSON list of responses, each a list of events such as {{\"text\": \"hi\"}}, {{\"tool_call\": {{\"name\": \"ls\", \"arguments\": {{}}}}}}, {{\"stop\": {{\"reason\": \"end\"}}}}, or an object {{\"responses\": [...], \"summaries\": [...]}} (see docs/mock-provider.md)"
        ),
    })
}

enum Mode {
    Script(ScriptFile),
    Demo,
}

/// The scripted provider.
pub struct ScriptedProvider {
    mode: Mode,
    next: usize,
    next_summary: usize,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("next", &self.next)
            .field("demo", &matches!(self.mode, Mode::Demo))
            .finish()
    }
}

impl ScriptedProvider {
    /// A provider playing `script` (a list of responses, or a whole
    /// [`ScriptFile`]).
    pub fn new(script: impl Into<ScriptFile>) -> Self {
        Self {
            mode: Mode::Script(script.into()),
            next: 0,
            next_summary: 0,
        }
    }

    /// The built-in demo: list the working directory, read a file, answer.
    pub fn demo() -> Self {
        Self {
            mode: Mode::Demo,
            next: 0,
            next_summary: 0,
        }
    }

    /// How many ordinary requests have been answered.
    pub fn requests_seen(&self) -> usize {
        self.next
    }

    /// How many summary requests have been answered.
    pub fn summaries_seen(&self) -> usize {
        self.next_summary
    }

    fn scripted_response(&self, index: usize) -> Result<Vec<ScriptEvent>, ProviderError> {
        match &self.mode {
            Mode::Script(script) => script.responses.get(index).cloned().ok_or_else(|| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "the mock script has {} response(s) but the agent sent request {}; add a response to the script (each request consumes one)",
                        script.responses.len(),
                        index + 1
                    ),
                )
            }),
            Mode::Demo => Ok(Vec::new()),
        }
    }
}

/// Turns script events into local chunks: one chunk per event, carrying the
/// events it expands to as a JSON list; a `delay_ms` delays the next chunk.
fn to_chunks(response: usize, events: &[ScriptEvent]) -> Result<Vec<LocalChunk>, ProviderError> {
    let mut chunks = Vec::with_capacity(events.len());
    let mut delay = 0;
    let mut call_index = 0usize;
    for event in events {
        let expanded: Vec<StreamEvent> = match event {
            ScriptEvent::DelayMs(ms) => {
                delay += ms;
                continue;
            }
            ScriptEvent::Text(text) => vec![StreamEvent::TextDelta { text: text.clone() }],
            ScriptEvent::Thinking(ScriptThinking::Text(text)) => vec![StreamEvent::ThinkingDelta {
                text: text.clone(),
                signature: None,
            }],
            ScriptEvent::Thinking(ScriptThinking::Signed { text, signature }) => {
                vec![StreamEvent::ThinkingDelta {
                    text: text.clone(),
                    signature: Some(signature.clone()),
                }]
            }
            ScriptEvent::ToolCall(call) => {
                call_index += 1;
                let id = call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}_{}", response + 1, call_index));
                let arguments = if call.arguments.is_null() {
                    "{}".to_owned()
                } else {
                    call.arguments.to_string()
                };
                vec![
                    StreamEvent::ToolCallStart {
                        id: id.clone(),
                        name: call.name.clone(),
                    },
                    StreamEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments,
                    },
                    StreamEvent::ToolCallEnd { id },
                ]
            }
            ScriptEvent::Usage(usage) => vec![StreamEvent::Usage(*usage)],
            ScriptEvent::Stop { reason } => vec![StreamEvent::Stop { reason: *reason }],
            ScriptEvent::Error {
                kind,
                message,
                retry_after_ms,
            } => vec![StreamEvent::Error(ProviderError {
                kind: *kind,
                message: message.clone(),
                retry_after_ms: *retry_after_ms,
            })],
            ScriptEvent::Event(event) => vec![event.clone()],
        };
        let bytes = serde_json::to_vec(&expanded).map_err(|err| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "the mock provider could not encode response {}: {err}",
                    response + 1
                ),
            )
        })?;
        chunks.push(LocalChunk {
            delay_ms: std::mem::take(&mut delay),
            bytes,
        });
    }
    if delay > 0 {
        // A trailing delay still takes time: an empty chunk after it.
        chunks.push(LocalChunk {
            delay_ms: delay,
            bytes: b"[]".to_vec(),
        });
    }
    Ok(chunks)
}

impl Provider for ScriptedProvider {
    fn describe(&self) -> ProviderInfo {
        ProviderInfo {
            id: "mock".to_owned(),
            models: vec![ModelInfo {
                id: MOCK_MODEL.to_owned(),
                context_window: Some(200_000),
                max_output_tokens: Some(8_192),
                pricing: None,
            }],
        }
    }

    fn encode(&mut self, request: &Request) -> Result<Exchange, ProviderError> {
        if is_summary_request(request) {
            let index = self.next_summary;
            let scripted = match &self.mode {
                Mode::Script(ScriptFile {
                    summaries: Some(summaries),
                    ..
                }) => Some(summaries.get(index).cloned().ok_or_else(|| {
                    ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        format!(
                            "the mock script has {} summary response(s) but the agent sent summary request {}; add one to the script's \"summaries\" (each compaction consumes one)",
                            summaries.len(),
                            index + 1
                        ),
                    )
                })?),
                _ => None,
            };
            let events = scripted.unwrap_or_else(|| generated_summary(request));
            self.next_summary += 1;
            return Ok(Exchange::Local {
                chunks: to_chunks(index, &events)?,
            });
        }
        let index = self.next;
        let events = match self.mode {
            Mode::Demo => demo_response(request),
            Mode::Script(_) => self.scripted_response(index)?,
        };
        self.next += 1;
        Ok(Exchange::Local {
            chunks: to_chunks(index, &events)?,
        })
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        match serde_json::from_slice::<Vec<StreamEvent>>(chunk) {
            Ok(events) => events,
            Err(err) => vec![StreamEvent::Error(ProviderError::malformed(format!(
                "the mock provider received a body chunk that is not a JSON list of stream events: {err}"
            )))],
        }
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------
// The built-in demo.

/// The deterministic answer to a summary request when the script has no
/// `summaries`: the user requests of the summarized messages, in order, and
/// the custom instructions.
fn generated_summary(request: &Request) -> Vec<ScriptEvent> {
    let text = request
        .messages
        .iter()
        .map(Message::text)
        .collect::<Vec<_>>()
        .join("\n");
    let (conversation, instructions) = match text.split_once(INSTRUCTIONS_MARKER) {
        Some((conversation, instructions)) => (conversation, Some(instructions.trim())),
        None => (text.as_str(), None),
    };
    let asks: Vec<String> = conversation
        .lines()
        .filter_map(|line| line.strip_prefix("[user]: "))
        .map(|ask| format!("{:?}", ask.chars().take(80).collect::<String>()))
        .collect();
    let messages = conversation
        .lines()
        .filter(|line| {
            [
                "[user]: ",
                "[assistant]: ",
                "[tool result] ",
                "[tool error] ",
            ]
            .iter()
            .any(|p| line.starts_with(p))
        })
        .count();
    let mut summary = format!(
        "Mock summary of {messages} message(s). The user asked: {}.",
        if asks.is_empty() {
            "nothing".to_owned()
        } else {
            asks.join(", ")
        }
    );
    if let Some(instructions) = instructions {
        summary.push_str(&format!(" Focus: {instructions}"));
    }
    let mut events = words(&summary);
    events.push(demo_usage(request, &summary));
    events.push(ScriptEvent::Stop {
        reason: StopReason::End,
    });
    events
}

fn words(text: &str) -> Vec<ScriptEvent> {
    text.split_inclusive(' ')
        .map(|word| ScriptEvent::Text(word.to_owned()))
        .collect()
}

fn approx_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The demo's usage: a deterministic approximation (four characters per
/// token), so usage lines have numbers; the mock model has no price, so the
/// cost stays unknown.
fn demo_usage(request: &Request, reply: &str) -> ScriptEvent {
    let input: usize = request
        .messages
        .iter()
        .map(|message| match message {
            Message::Assistant { .. } => serde_json::to_string(message).map_or(0, |s| s.len()),
            other => other.text().len(),
        })
        .sum();
    ScriptEvent::Usage(Usage {
        input: Some(approx_tokens(input)),
        output: Some(approx_tokens(reply.len())),
        cache_read: None,
        cache_write: None,
    })
}

fn tool_call(name: &str, arguments: serde_json::Value) -> ScriptEvent {
    ScriptEvent::ToolCall(ScriptToolCall {
        id: None,
        name: name.to_owned(),
        arguments,
    })
}

/// Picks the file the demo reads from an `ls` listing: a README if there is
/// one, else the first plain entry (directories end with `/`).
fn pick_file(listing: &str) -> Option<String> {
    let entries: Vec<&str> = listing
        .lines()
        .map(str::trim)
        .filter(|line| {
            !line.is_empty()
                && !line.ends_with('/')
                && !line.starts_with('[')
                && !line.starts_with('(')
                && !line.contains(": ")
        })
        .collect();
    entries
        .iter()
        .find(|name| name.to_ascii_lowercase().starts_with("readme"))
        .or_else(|| entries.first())
        .map(|name| (*name).to_owned())
}

fn demo_response(request: &Request) -> Vec<ScriptEvent> {
    let prompt = request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let last_result = match request.messages.last() {
        Some(Message::ToolResult {
            name,
            content,
            is_error,
            ..
        }) => Some((name.as_str(), content.as_str(), *is_error)),
        _ => None,
    };
    let (reply, call) = match last_result {
        None => (
            format!(
                "You said {prompt:?}. This is the offline demo: I will list the working directory, read a file and answer. "
            ),
            Some(tool_call("ls", serde_json::json!({"path": "."}))),
        ),
        Some(("ls", listing, false)) => match pick_file(listing) {
            Some(file) => (
                format!(
                    "The directory has {} entries. Reading {file}. ",
                    listing.lines().count()
                ),
                Some(tool_call(
                    "read",
                    serde_json::json!({"path": file, "limit": 20}),
                )),
            ),
            None => (
                "The directory has no plain files to read, so the demo ends here.".to_owned(),
                None,
            ),
        },
        Some(("read", content, false)) => {
            let first = content
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or("(empty)");
            let first: String = first.chars().take(120).collect();
            (
                format!(
                    "Done. The file starts with: {first:?}. That was one tool-using turn with the mock provider; use --mock-script FILE to play your own responses."
                ),
                None,
            )
        }
        Some((name, content, _)) => {
            let first: String = content
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            (
                format!("The {name} call failed ({first}), so the demo ends here."),
                None,
            )
        }
    };
    let mut events = words(&reply);
    let stop = if call.is_some() {
        StopReason::ToolUse
    } else {
        StopReason::End
    };
    events.extend(call);
    events.push(demo_usage(request, &reply));
    events.push(ScriptEvent::Stop { reason: stop });
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_scripts_are_rejected_with_the_origin() {
        let err = parse_script(r#"[[{"txt":"hi"}]]"#, "s.json").unwrap_err();
        assert!(err.to_string().contains("mock script s.json is not valid"));
        assert!(err.to_string().contains("txt"));
        let err = parse_script(r#"{"responses": [], "summary": []}"#, "o.json").unwrap_err();
        assert!(err.to_string().contains("mock script o.json is not valid"));
        assert!(err.to_string().contains("summary"), "{err}");
    }
}
