//! Anthropic Messages API (`POST /v1/messages` with `stream: true`).
//!
//! Encoding: system prompt and tools, thinking (`budget_tokens`) only when
//! the model advertises it, prompt-cache breakpoints (`cache_control`) on
//! the system prompt, the last tool, and a rolling prefix of the messages
//! when the model advertises prompt caching. Signed thinking and redacted
//! thinking go back exactly as received.
//!
//! Decoding: `message_start` (input and cache usage), `content_block_*`
//! for text, thinking (`thinking_delta`, `signature_delta`),
//! `redacted_thinking` and `tool_use` (`input_json_delta`), `message_delta`
//! (stop reason, output usage), `message_stop` (the terminal event),
//! `error` events, `ping`. Server-side tool blocks (`server_tool_use`,
//! `*_tool_result`), `compaction` and `fallback` blocks are not client tool
//! calls or visible text and are skipped.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::common::{
    self, Body, Config, Frame, Out, Piece, advice, credential_handle, end_tool_call, error_object,
    join_url, str_at, u64_at,
};
use crate::types::{
    ContentBlock, Decoder, HttpExchange, Message, OpaqueBytes, ProviderError, ProviderErrorKind,
    Request, StopReason, StreamEvent, Usage,
};

/// The provider id.
pub const PROVIDER_ID: &str = "anthropic";
/// The model used when none is given.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5-20250929";
/// The default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The default credential slot (an API key, sent as `x-api-key`).
pub const CREDENTIAL_SLOT: &str = "anthropic.api_key";
/// The environment variable the host reads for [`CREDENTIAL_SLOT`].
pub const CREDENTIAL_ENV: &str = "ANTHROPIC_API_KEY";
/// The API version header value.
pub const API_VERSION: &str = "2023-06-01";
/// The output limit sent when neither the request nor the model gives one
/// (the API requires `max_tokens`).
pub const FALLBACK_MAX_TOKENS: u32 = 8_192;
/// The smallest thinking budget the API accepts.
pub const MIN_THINKING_BUDGET: u32 = 1_024;

const VENDOR: &str = "Anthropic";
/// Envelope tag of a signed thinking block (payload: the signature text).
pub(crate) const TAG_THINKING: &[u8; 4] = b"ATHK";
/// Envelope tag of a redacted thinking block (payload: its `data`).
pub(crate) const TAG_REDACTED: &[u8; 4] = b"ARED";

/// Builds the streaming Messages request.
///
/// # Errors
///
/// `invalid_request` before dispatch when tools are offered to a model that
/// does not advertise tool use.
pub fn encode(request: &Request, config: &Config) -> Result<HttpExchange, ProviderError> {
    let caps = &config.capabilities;
    common::check_tools(VENDOR, request, caps)?;
    let cache = caps.prompt_cache;
    let max_tokens = common::output_limit(request, caps).unwrap_or(FALLBACK_MAX_TOKENS);
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        let mut block = json!({"type": "text", "text": system});
        if cache {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        body.insert("system".into(), json!([block]));
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters})
            })
            .collect();
        if cache && let Some(last) = tools.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    let mut messages = encode_messages(&request.messages);
    if let Some(level) = config.thinking.filter(|_| caps.thinking) {
        // The budget must stay below max_tokens and at or above the minimum;
        // when max_tokens leaves no room, thinking is omitted. It is also
        // omitted while a tool loop continues from an assistant message that
        // has no returnable thinking (the API requires that message to start
        // with its thinking block when thinking is enabled).
        let budget = level.budget_tokens().min(max_tokens.saturating_sub(1));
        if budget >= MIN_THINKING_BUDGET && !unsigned_tool_loop(&messages) {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
    }
    if cache {
        mark_rolling_prefix(&mut messages);
    }
    body.insert("messages".into(), Value::Array(messages));
    let slot = config.credential.as_deref().unwrap_or(CREDENTIAL_SLOT);
    Ok(HttpExchange {
        method: "POST".into(),
        url: join_url(
            config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL),
            "/v1/messages",
        ),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
            ("anthropic-version".into(), API_VERSION.into()),
            ("x-api-key".into(), credential_handle(slot)),
        ],
        body: common::json_body(&Value::Object(body)),
    })
}

fn encode_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    };
    for message in messages {
        match message {
            // The API rejects empty text blocks.
            Message::User { text, media } if text.is_empty() && media.is_empty() => {}
            Message::User { text, media } => {
                let mut blocks: Vec<Value> = media.iter().map(media_block).collect();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                push("user", blocks);
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                media,
                ..
            } => {
                // With media, the result's content is a list of blocks: the
                // text first, then each image or document.
                let content = if media.is_empty() {
                    json!(content)
                } else {
                    let mut blocks = vec![json!({"type": "text", "text": content})];
                    blocks.extend(media.iter().map(media_block));
                    Value::Array(blocks)
                };
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                push("user", vec![block]);
            }
            Message::Assistant { content, .. } => {
                let mut blocks = Vec::new();
                for block in content {
                    match block {
                        ContentBlock::Text { text } if !text.is_empty() => {
                            blocks.push(json!({"type": "text", "text": text}));
                        }
                        ContentBlock::Text { .. } => {}
                        ContentBlock::Thinking { text, signature } => {
                            thinking_blocks(text, signature.as_ref(), &mut blocks);
                        }
                        ContentBlock::ToolCall(call) => {
                            let input = match &call.arguments {
                                Value::Object(_) => call.arguments.clone(),
                                _ => json!({}),
                            };
                            blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                        }
                    }
                }
                push("assistant", blocks);
            }
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Signed thinking goes back verbatim; thinking without an Anthropic
/// signature (unsigned, or from another provider) cannot be verified by the
/// API and is left out.
fn thinking_blocks(text: &str, signature: Option<&OpaqueBytes>, blocks: &mut Vec<Value>) {
    let Some(pieces) = common::pieces(text, signature.map(|s| s.0.as_slice())) else {
        return;
    };
    for Piece { tag, text, payload } in pieces {
        let payload = String::from_utf8_lossy(payload);
        match tag.as_ref() {
            Some(t) if t == TAG_THINKING => {
                blocks.push(json!({"type": "thinking", "thinking": text, "signature": payload}));
            }
            Some(t) if t == TAG_REDACTED => {
                blocks.push(json!({"type": "redacted_thinking", "data": payload}));
            }
            _ => {}
        }
    }
}

/// Whether the conversation continues a tool loop (it ends with tool
/// results) whose assistant message does not start with thinking.
fn unsigned_tool_loop(messages: &[Value]) -> bool {
    let [.., assistant, last] = messages else {
        return false;
    };
    let continues = last["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    let first = assistant["content"]
        .as_array()
        .and_then(|blocks| blocks.first())
        .map(|b| str_at(b, "type"))
        .unwrap_or("");
    continues
        && assistant["role"] == "assistant"
        && !matches!(first, "thinking" | "redacted_thinking")
}

/// Cache breakpoints on the last block of the last message and of the last
/// user message before it, so each turn reads the previous turn's prefix.
fn mark_rolling_prefix(messages: &mut [Value]) {
    let count = messages.len();
    let mut marked = 0;
    for (index, message) in messages.iter_mut().enumerate().rev() {
        let is_last = index + 1 == count;
        if !is_last && message["role"] != "user" {
            continue;
        }
        let Some(block) = message["content"]
            .as_array_mut()
            .and_then(|blocks| blocks.iter_mut().rev().find(|b| cacheable(b)))
        else {
            continue;
        };
        block["cache_control"] = json!({"type": "ephemeral"});
        marked += 1;
        if marked == 2 {
            break;
        }
    }
}

fn cacheable(block: &Value) -> bool {
    !matches!(str_at(block, "type"), "thinking" | "redacted_thinking")
}

#[derive(Clone, Debug)]
enum Block {
    Text,
    Thinking {
        text_len: usize,
        signature: String,
    },
    Tool {
        id: String,
        name: String,
        arguments: String,
        initial: Option<String>,
    },
    Skipped,
}

/// The streaming decoder.
#[derive(Clone, Default)]
pub struct StreamDecoder {
    body: Body,
    out: Out,
    blocks: BTreeMap<u64, Block>,
    started: bool,
    stop_reason: Option<String>,
    stop_details: Option<Value>,
    tool_calls: usize,
}

impl StreamDecoder {
    /// A decoder for one response body.
    pub fn new() -> Self {
        Self::default()
    }

    fn frame(&mut self, frame: Frame) {
        match frame {
            Frame::Event(event) => match common::parse_data(&event.data) {
                Ok(data) => self.event(&data),
                Err(why) => self.out.error(ProviderError::malformed(format!(
                    "Anthropic sent a {:?} event whose data is not JSON ({why}): {}; {}",
                    event.event,
                    common::excerpt(&event.data),
                    advice(ProviderErrorKind::MalformedStream)
                ))),
            },
            // The final event lost its terminating blank line: it counts
            // only if its data is complete JSON.
            Frame::Unterminated(event) => {
                if let Ok(data) = common::parse_data(&event.data) {
                    self.event(&data);
                }
            }
            Frame::Json(parsed) => self.out.error(common::json_body_error(VENDOR, parsed)),
        }
    }

    fn event(&mut self, data: &Value) {
        let kind = str_at(data, "type");
        if !self.started && !matches!(kind, "message_start" | "ping" | "error") {
            self.out.error(ProviderError::malformed(format!(
                "Anthropic sent {kind:?} before message_start; {}",
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        }
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(usage) = data.get("message").and_then(|m| m.get("usage")) {
                    self.usage(usage);
                }
            }
            "content_block_start" => self.block_start(data),
            "content_block_delta" => self.block_delta(data),
            "content_block_stop" => self.block_stop(data),
            "message_delta" => {
                if let Some(delta) = data.get("delta") {
                    if let Some(reason) = delta.get("stop_reason").and_then(Value::as_str) {
                        self.stop_reason = Some(reason.to_owned());
                    }
                    if let Some(details) = delta.get("stop_details").filter(|d| !d.is_null()) {
                        self.stop_details = Some(details.clone());
                    }
                }
                if let Some(usage) = data.get("usage") {
                    self.usage(usage);
                }
            }
            "message_stop" => self.stop(),
            "error" => {
                let error = data.get("error").unwrap_or(data);
                self.out.error(error_object(VENDOR, error));
            }
            // ping, and event types added later, carry nothing for us.
            _ => {}
        }
    }

    fn usage(&mut self, usage: &Value) {
        let reported = Usage {
            input: u64_at(usage, "input_tokens"),
            output: u64_at(usage, "output_tokens"),
            cache_read: u64_at(usage, "cache_read_input_tokens"),
            cache_write: u64_at(usage, "cache_creation_input_tokens"),
        };
        if reported != Usage::default() {
            self.out.push(StreamEvent::Usage(reported));
        }
    }

    fn index(&mut self, data: &Value) -> Option<u64> {
        let index = u64_at(data, "index");
        if index.is_none() {
            self.out.error(ProviderError::malformed(format!(
                "Anthropic sent a {} event without a block index; {}",
                str_at(data, "type"),
                advice(ProviderErrorKind::MalformedStream)
            )));
        }
        index
    }

    fn block_start(&mut self, data: &Value) {
        let Some(index) = self.index(data) else {
            return;
        };
        if self.blocks.contains_key(&index) {
            self.out.error(ProviderError::malformed(format!(
                "Anthropic started content block {index} twice; {}",
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        }
        let empty = Value::Null;
        let block = data.get("content_block").unwrap_or(&empty);
        let state = match str_at(block, "type") {
            "text" => {
                let text = str_at(block, "text");
                if !text.is_empty() {
                    self.out.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
                Block::Text
            }
            "thinking" => {
                let text = str_at(block, "thinking");
                if !text.is_empty() {
                    self.out.push(StreamEvent::ThinkingDelta {
                        text: text.to_owned(),
                        signature: None,
                    });
                }
                Block::Thinking {
                    text_len: text.len(),
                    signature: str_at(block, "signature").to_owned(),
                }
            }
            "redacted_thinking" => {
                let record = common::record(TAG_REDACTED, 0, str_at(block, "data").as_bytes());
                self.out.push(StreamEvent::ThinkingDelta {
                    text: String::new(),
                    signature: Some(OpaqueBytes(record)),
                });
                Block::Skipped
            }
            "tool_use" => {
                let id = str_at(block, "id").to_owned();
                let name = str_at(block, "name").to_owned();
                if !self.out.start_call(VENDOR, &id, &name) {
                    return;
                }
                self.tool_calls += 1;
                let initial = block
                    .get("input")
                    .filter(|input| input.as_object().is_some_and(|o| !o.is_empty()))
                    .map(Value::to_string);
                Block::Tool {
                    id,
                    name,
                    arguments: String::new(),
                    initial,
                }
            }
            _ => Block::Skipped,
        };
        self.blocks.insert(index, state);
    }

    fn block_delta(&mut self, data: &Value) {
        let Some(index) = self.index(data) else {
            return;
        };
        let empty = Value::Null;
        let delta = data.get("delta").unwrap_or(&empty);
        let Some(block) = self.blocks.get_mut(&index) else {
            self.out.error(ProviderError::malformed(format!(
                "Anthropic sent a delta for content block {index}, which is not open; {}",
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        };
        match (str_at(delta, "type"), block) {
            ("text_delta", Block::Text) => {
                let text = str_at(delta, "text");
                if !text.is_empty() {
                    self.out.push(StreamEvent::TextDelta { text: text.to_owned() });
                }
            }
            ("thinking_delta", Block::Thinking { text_len, .. }) => {
                let text = str_at(delta, "thinking");
                if !text.is_empty() {
                    *text_len += text.len();
                    self.out.push(StreamEvent::ThinkingDelta {
                        text: text.to_owned(),
                        signature: None,
                    });
                }
            }
            ("signature_delta", Block::Thinking { signature, .. }) => {
                signature.push_str(str_at(delta, "signature"));
            }
            ("input_json_delta", Block::Tool { id, arguments, .. }) => {
                let piece = str_at(delta, "partial_json");
                if !piece.is_empty() {
                    arguments.push_str(piece);
                    self.out.push(StreamEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments: piece.to_owned(),
                    });
                }
            }
            (_, Block::Skipped) => {}
            // citations_delta and later additions carry nothing for us.
            (kind, _) if !matches!(kind, "text_delta" | "thinking_delta" | "signature_delta" | "input_json_delta") => {}
            (kind, _) => self.out.error(ProviderError::malformed(format!(
                "Anthropic sent a {kind} for content block {index}, which is a different kind of block; {}",
                advice(ProviderErrorKind::MalformedStream)
            ))),
        }
    }

    fn block_stop(&mut self, data: &Value) {
        let Some(index) = self.index(data) else {
            return;
        };
        match self.blocks.remove(&index) {
            None => self.out.error(ProviderError::malformed(format!(
                "Anthropic stopped content block {index}, which is not open; {}",
                advice(ProviderErrorKind::MalformedStream)
            ))),
            Some(Block::Thinking {
                text_len,
                signature,
            }) => {
                if !signature.is_empty() {
                    let record = common::record(TAG_THINKING, text_len, signature.as_bytes());
                    self.out.push(StreamEvent::ThinkingDelta {
                        text: String::new(),
                        signature: Some(OpaqueBytes(record)),
                    });
                }
            }
            Some(Block::Tool {
                id,
                name,
                arguments,
                initial,
            }) => {
                let arguments = match initial {
                    Some(initial) if arguments.is_empty() => {
                        self.out.push(StreamEvent::ToolCallDelta {
                            id: id.clone(),
                            arguments: initial.clone(),
                        });
                        initial
                    }
                    _ => arguments,
                };
                end_tool_call(&mut self.out, VENDOR, &id, &name, &arguments);
            }
            Some(Block::Text | Block::Skipped) => {}
        }
    }

    fn stop(&mut self) {
        let Some(reason) = self.stop_reason.clone() else {
            self.out.error(ProviderError::malformed(format!(
                "Anthropic sent message_stop without a stop reason in any message_delta; {}",
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        };
        let stop = match reason.as_str() {
            "max_tokens" | "model_context_window_exceeded" => StopReason::Limit,
            "tool_use" if self.tool_calls > 0 => StopReason::ToolUse,
            "refusal" => {
                let details = self.stop_details.as_ref();
                let explanation = details.map(|d| str_at(d, "explanation")).unwrap_or("");
                let category = details.map(|d| str_at(d, "category")).unwrap_or("");
                self.out.error(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "the Anthropic model refused to answer (stop reason refusal{}{}); rephrase the request or choose another model",
                        if category.is_empty() { String::new() } else { format!(", category {category}") },
                        if explanation.is_empty() { String::new() } else { format!(": {explanation}") },
                    ),
                ));
                return;
            }
            // end_turn, stop_sequence, pause_turn (a server tool loop paused;
            // sending the conversation again continues it), tool_use with no
            // client tool call, and reasons added later.
            _ => StopReason::End,
        };
        if stop != StopReason::Limit
            && let Some((index, _)) = self
                .blocks
                .iter()
                .find(|(_, b)| matches!(b, Block::Tool { .. }))
        {
            self.out.error(ProviderError::malformed(format!(
                "Anthropic ended the message (stop reason {reason}) with tool call block {index} still open; {}",
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        }
        self.out.push(StreamEvent::Stop { reason: stop });
    }
}

impl Decoder for StreamDecoder {
    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        if self.out.done() {
            return Vec::new();
        }
        let mut frames = Vec::new();
        self.body.feed(chunk, &mut frames);
        for frame in frames {
            if self.out.done() {
                break;
            }
            self.frame(frame);
        }
        self.out.take()
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        if !self.out.done()
            && let Some(frame) = self.body.finish()
        {
            self.frame(frame);
        }
        if !self.out.done() {
            self.out.error(common::ended_early(VENDOR, "message_stop"));
        }
        self.out.take()
    }
}

/// An `image` block (PNG, JPEG, GIF, WebP) or a `document` block (PDF) with
/// a base64 source.
fn media_block(media: &crate::types::Media) -> Value {
    let kind = if media.media_type.is_image() {
        "image"
    } else {
        "document"
    };
    json!({
        "type": kind,
        "source": {"type": "base64", "media_type": media.media_type.mime(), "data": media.base64()},
    })
}
