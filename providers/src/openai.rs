//! OpenAI: the Responses API (`POST /v1/responses`, the default) and Chat
//! Completions (`POST /v1/chat/completions`).
//!
//! Responses encoding: `instructions` from the system prompt, `input` items
//! (user messages, assistant `output_text` messages, `function_call` and
//! `function_call_output` items, and reasoning items returned verbatim),
//! `store: false`, and — only when the model advertises thinking —
//! `reasoning: {effort, summary: "auto"}` with
//! `include: ["reasoning.encrypted_content"]` so reasoning can be returned
//! on later turns without server-side state.
//!
//! Responses decoding: `response.output_text.delta`, `response.refusal.delta`,
//! `response.reasoning_summary_text.delta` and `response.reasoning_text.delta`,
//! `response.output_item.added` / `done` (function calls and reasoning
//! items), `response.function_call_arguments.delta` / `done`,
//! `response.completed` (usage, the terminal event), `response.incomplete`,
//! `response.failed` and `error` (usage they carry is kept). A reasoning
//! item's place is recorded when it starts, so one that completes after
//! later items (OpenRouter) still goes back in its output order.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::chat::{ChatDecoder, Dialect};
use crate::common::{
    self, Body, Config, Frame, Out, advice, credential_handle, end_tool_call, error_object,
    join_url, str_at, u64_at,
};
use crate::types::{
    ContentBlock, Decoder, HttpExchange, Message, OpaqueBytes, ProviderError, ProviderErrorKind,
    Request, StopReason, StreamEvent, Usage,
};

/// The provider id.
pub const PROVIDER_ID: &str = "openai";
/// The model used when none is given.
pub const DEFAULT_MODEL: &str = "gpt-5.1";
/// The default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The default credential slot (an API key, sent as a bearer token).
pub const CREDENTIAL_SLOT: &str = "openai.api_key";
/// The environment variable the host reads for [`CREDENTIAL_SLOT`].
pub const CREDENTIAL_ENV: &str = "OPENAI_API_KEY";

const VENDOR: &str = "OpenAI";
/// Envelope tag of a reasoning item (payload: the item's JSON).
pub(crate) const TAG_REASONING: &[u8; 4] = b"ORSN";
/// Envelope tag of the place a reasoning item started (payload: the item's
/// id): a reasoning item completed after later items goes back here, in
/// its output order.
pub(crate) const TAG_REASONING_PLACE: &[u8; 4] = b"ORSP";

const CHAT: Dialect = Dialect {
    vendor: VENDOR,
    require_done: true,
    max_tokens_field: "max_completion_tokens",
    reasoning_effort: true,
    pdf: true,
};

fn auth(config: &Config) -> String {
    format!(
        "Bearer {}",
        credential_handle(config.credential.as_deref().unwrap_or(CREDENTIAL_SLOT))
    )
}

fn base(config: &Config) -> &str {
    config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL)
}

/// Builds a streaming Chat Completions request.
///
/// # Errors
///
/// `invalid_request` before dispatch when tools are offered to a model that
/// does not advertise tool use.
pub fn encode_chat(request: &Request, config: &Config) -> Result<HttpExchange, ProviderError> {
    crate::chat::encode(
        request,
        config,
        CHAT,
        join_url(base(config), "/chat/completions"),
        Some(auth(config)),
    )
}

/// The Chat Completions streaming decoder (requires `data: [DONE]`).
#[derive(Clone)]
pub struct ChatStreamDecoder(ChatDecoder);

impl ChatStreamDecoder {
    /// A decoder for one response body.
    pub fn new() -> Self {
        Self(ChatDecoder::new(CHAT))
    }
}

impl Default for ChatStreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for ChatStreamDecoder {
    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        self.0.decode(chunk)
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.0.finish()
    }
}

/// Builds a streaming Responses request.
///
/// # Errors
///
/// `invalid_request` before dispatch when tools are offered to a model that
/// does not advertise tool use.
pub fn encode(request: &Request, config: &Config) -> Result<HttpExchange, ProviderError> {
    let caps = &config.capabilities;
    common::check_tools(VENDOR, request, caps)?;
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text, media } => {
                let mut parts: Vec<Value> = media.iter().map(input_media).collect();
                parts.push(json!({"type": "input_text", "text": text}));
                input.push(json!({"role": "user", "content": parts}));
            }
            Message::ToolResult {
                call_id,
                content,
                media,
                ..
            } => {
                // With media, the output is a list of input parts: the text,
                // then each image or file.
                let output = if media.is_empty() {
                    json!(content)
                } else {
                    let mut parts = vec![json!({"type": "input_text", "text": content})];
                    parts.extend(media.iter().map(input_media));
                    Value::Array(parts)
                };
                input.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": output}),
                );
            }
            Message::Assistant { content, .. } => assistant_items(content, &mut input),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(limit) = common::output_limit(request, caps) {
        body.insert("max_output_tokens".into(), json!(limit));
    }
    if let Some(level) = config.thinking.filter(|_| caps.thinking) {
        body.insert(
            "reasoning".into(),
            json!({"effort": level.effort(), "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    Ok(HttpExchange {
        method: "POST".into(),
        url: join_url(base(config), "/responses"),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
            ("authorization".into(), auth(config)),
        ],
        body: common::json_body(&Value::Object(body)),
    })
}

/// The reasoning items (by id) this provider recorded in `content`.
fn reasoning_items(content: &[ContentBlock]) -> HashMap<String, Value> {
    let mut items = HashMap::new();
    for block in content {
        if let ContentBlock::Thinking { text, signature } = block {
            let pieces = common::pieces(text, signature.as_ref().map(|s| s.0.as_slice()));
            for piece in pieces.unwrap_or_default() {
                if piece.tag.as_ref() == Some(TAG_REASONING)
                    && let Ok(item) = serde_json::from_slice::<Value>(piece.payload)
                    && !str_at(&item, "id").is_empty()
                {
                    items.insert(str_at(&item, "id").to_owned(), item);
                }
            }
        }
    }
    items
}

/// The input items of one assistant message, in output order: a reasoning
/// item goes where it started, even when it completed after later items.
fn assistant_items(content: &[ContentBlock], input: &mut Vec<Value>) {
    let mut reasoning = reasoning_items(content);
    for block in content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => input.push(json!({
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]
            })),
            ContentBlock::Text { .. } => {}
            ContentBlock::Thinking { text, signature } => {
                // Only reasoning items this provider produced go back;
                // other thinking has no place in the input.
                let pieces = common::pieces(text, signature.as_ref().map(|s| s.0.as_slice()));
                for piece in pieces.unwrap_or_default() {
                    let id = match piece.tag.as_ref() {
                        Some(t) if t == TAG_REASONING_PLACE => {
                            String::from_utf8_lossy(piece.payload).into_owned()
                        }
                        Some(t) if t == TAG_REASONING => {
                            match serde_json::from_slice::<Value>(piece.payload) {
                                // An item without an id goes back where it
                                // completed.
                                Ok(item) if str_at(&item, "id").is_empty() => {
                                    input.push(item);
                                    continue;
                                }
                                Ok(item) => str_at(&item, "id").to_owned(),
                                Err(_) => continue,
                            }
                        }
                        _ => continue,
                    };
                    if let Some(item) = reasoning.remove(&id) {
                        input.push(item);
                    }
                }
            }
            ContentBlock::ToolCall(call) => {
                let arguments = match &call.arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                input.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments}));
            }
        }
    }
}

#[derive(Clone)]
struct FunctionCall {
    call_id: String,
    name: String,
    arguments: String,
    ended: bool,
}

/// The Responses API streaming decoder.
#[derive(Clone, Default)]
pub struct StreamDecoder {
    body: Body,
    out: Out,
    /// Function calls by item id.
    calls: HashMap<String, FunctionCall>,
    tool_calls: usize,
    /// Thinking text bytes since the last record or other content (the
    /// text the next record covers).
    thinking_bytes: usize,
    refusal: String,
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
                    "OpenAI sent a {:?} event whose data is not JSON ({why}): {}; {}",
                    event.event,
                    common::excerpt(&event.data),
                    advice(ProviderErrorKind::MalformedStream)
                ))),
            },
            Frame::Unterminated(event) => {
                if let Ok(data) = common::parse_data(&event.data) {
                    self.event(&data);
                }
            }
            Frame::Json(parsed) => self.out.error(common::json_body_error(VENDOR, parsed)),
        }
    }

    fn event(&mut self, data: &Value) {
        match str_at(data, "type") {
            "response.output_text.delta" => {
                let text = str_at(data, "delta");
                if !text.is_empty() {
                    self.thinking_bytes = 0;
                    self.out.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            "response.refusal.delta" => {
                let text = str_at(data, "delta");
                if !text.is_empty() {
                    self.thinking_bytes = 0;
                    self.refusal.push_str(text);
                    self.out.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let text = str_at(data, "delta");
                if !text.is_empty() {
                    self.thinking_bytes += text.len();
                    self.out.push(StreamEvent::ThinkingDelta {
                        text: text.to_owned(),
                        signature: None,
                    });
                }
            }
            "response.output_item.added" => self.item_added(data.get("item")),
            "response.function_call_arguments.delta" => {
                let piece = str_at(data, "delta");
                match self.calls.get_mut(str_at(data, "item_id")) {
                    Some(call) if !call.ended => {
                        if !piece.is_empty() {
                            call.arguments.push_str(piece);
                            self.out.push(StreamEvent::ToolCallDelta {
                                id: call.call_id.clone(),
                                arguments: piece.to_owned(),
                            });
                        }
                    }
                    _ => self.unknown_call(data),
                }
            }
            "response.function_call_arguments.done" => {
                let item = str_at(data, "item_id").to_owned();
                let Some(call) = self.calls.get_mut(&item) else {
                    self.unknown_call(data);
                    return;
                };
                // Arguments delivered only here (no deltas) still arrive.
                let done = str_at(data, "arguments");
                if call.arguments.is_empty() && !done.is_empty() {
                    call.arguments = done.to_owned();
                    self.out.push(StreamEvent::ToolCallDelta {
                        id: call.call_id.clone(),
                        arguments: done.to_owned(),
                    });
                }
                self.end_call(&item);
            }
            "response.output_item.done" => self.item_done(data.get("item")),
            "response.completed" => self.completed(data.get("response")),
            "response.incomplete" => {
                let response = data.get("response");
                self.report_usage(response);
                let reason = response
                    .and_then(|r| r.get("incomplete_details"))
                    .map(|d| str_at(d, "reason"))
                    .unwrap_or("");
                if reason == "max_output_tokens" {
                    self.out.push(StreamEvent::Stop {
                        reason: StopReason::Limit,
                    });
                } else {
                    self.out.error(ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        format!(
                            "OpenAI ended the response as incomplete (reason {:?}); rephrase the request or choose another model",
                            reason
                        ),
                    ));
                }
            }
            "response.failed" => {
                self.report_usage(data.get("response"));
                let error = data
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null());
                match error {
                    Some(error) => self.out.error(error_object(VENDOR, error)),
                    None => self.out.error(ProviderError::new(
                        ProviderErrorKind::Transport,
                        format!(
                            "OpenAI reported response.failed without error details; {}",
                            advice(ProviderErrorKind::Transport)
                        ),
                    )),
                }
            }
            "error" => {
                // Usage carried with the error (OpenRouter) is kept.
                self.report_usage(Some(data));
                self.report_usage(data.get("response"));
                let error = data.get("error").unwrap_or(data);
                self.out.error(error_object(VENDOR, error));
            }
            _ => {}
        }
    }

    fn unknown_call(&mut self, data: &Value) {
        self.out.error(ProviderError::malformed(format!(
            "OpenAI sent {} for item {:?}, which is not an open function call; {}",
            str_at(data, "type"),
            str_at(data, "item_id"),
            advice(ProviderErrorKind::MalformedStream)
        )));
    }

    fn item_added(&mut self, item: Option<&Value>) {
        let Some(item) = item else { return };
        match str_at(item, "type") {
            "function_call" => {}
            "reasoning" => {
                // Where the item goes back, should it complete after later
                // items.
                let id = str_at(item, "id");
                if !id.is_empty() {
                    self.record(TAG_REASONING_PLACE, id.as_bytes());
                }
                return;
            }
            _ => return,
        }
        self.thinking_bytes = 0;
        let call_id = str_at(item, "call_id").to_owned();
        let name = str_at(item, "name").to_owned();
        if !self.out.start_call(VENDOR, &call_id, &name) {
            return;
        }
        self.tool_calls += 1;
        let initial = str_at(item, "arguments").to_owned();
        if !initial.is_empty() {
            self.out.push(StreamEvent::ToolCallDelta {
                id: call_id.clone(),
                arguments: initial.clone(),
            });
        }
        self.calls.insert(
            str_at(item, "id").to_owned(),
            FunctionCall {
                call_id,
                name,
                arguments: initial,
                ended: false,
            },
        );
    }

    fn end_call(&mut self, item: &str) {
        if let Some(call) = self.calls.get_mut(item)
            && !call.ended
        {
            call.ended = true;
            let (id, name, arguments) = (
                call.call_id.clone(),
                call.name.clone(),
                call.arguments.clone(),
            );
            end_tool_call(&mut self.out, VENDOR, &id, &name, &arguments);
        }
    }

    fn item_done(&mut self, item: Option<&Value>) {
        let Some(item) = item else { return };
        match str_at(item, "type") {
            "function_call" => {
                let id = str_at(item, "id").to_owned();
                if let Some(call) = self.calls.get_mut(&id)
                    && call.arguments.is_empty()
                {
                    let done = str_at(item, "arguments");
                    if !done.is_empty() {
                        call.arguments = done.to_owned();
                        self.out.push(StreamEvent::ToolCallDelta {
                            id: call.call_id.clone(),
                            arguments: done.to_owned(),
                        });
                    }
                }
                self.end_call(&id);
            }
            "reasoning" => {
                let mut kept = item.clone();
                if let Some(object) = kept.as_object_mut() {
                    object.remove("status");
                }
                self.record(TAG_REASONING, kept.to_string().as_bytes());
            }
            _ => {}
        }
    }

    /// A signature record covering the thinking text since the last one.
    fn record(&mut self, tag: &[u8; 4], payload: &[u8]) {
        let text_len = std::mem::take(&mut self.thinking_bytes);
        self.out.push(StreamEvent::ThinkingDelta {
            text: String::new(),
            signature: Some(OpaqueBytes(common::record(tag, text_len, payload))),
        });
    }

    fn report_usage(&mut self, response: Option<&Value>) {
        let Some(usage) = response
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
        else {
            return;
        };
        let input = u64_at(usage, "input_tokens");
        let cached = usage
            .get("input_tokens_details")
            .and_then(|d| u64_at(d, "cached_tokens"));
        self.out.push(StreamEvent::Usage(Usage {
            input: input.map(|i| i.saturating_sub(cached.unwrap_or(0))),
            output: u64_at(usage, "output_tokens"),
            cache_read: cached,
            cache_write: None,
        }));
    }

    fn completed(&mut self, response: Option<&Value>) {
        self.report_usage(response);
        if let Some((_, call)) = self.calls.iter().find(|(_, c)| !c.ended) {
            self.out.error(ProviderError::malformed(format!(
                "OpenAI completed the response with function call {:?} still open; {}",
                call.call_id,
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        }
        if !self.refusal.is_empty() {
            self.out.error(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "the OpenAI model refused to answer: {}; rephrase the request or choose another model",
                    common::excerpt(&self.refusal)
                ),
            ));
            return;
        }
        let reason = if self.tool_calls > 0 {
            StopReason::ToolUse
        } else {
            StopReason::End
        };
        self.out.push(StreamEvent::Stop { reason });
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
            self.out
                .error(common::ended_early(VENDOR, "response.completed"));
        }
        self.out.take()
    }
}

/// An `input_image` part with a data URL, or an `input_file` part (PDF)
/// with base64 file data.
fn input_media(media: &crate::types::Media) -> Value {
    if media.media_type.is_image() {
        json!({"type": "input_image", "image_url": media.data_url()})
    } else {
        json!({"type": "input_file", "filename": media_file_name(media), "file_data": media.data_url()})
    }
}

/// The file name a vendor is told for a document: the last component of
/// the name it came from, else `document.pdf`.
pub(crate) fn media_file_name(media: &crate::types::Media) -> String {
    media
        .name
        .as_deref()
        .and_then(|name| name.rsplit(['/', '\\']).next())
        .filter(|name| !name.is_empty())
        .unwrap_or("document.pdf")
        .to_owned()
}
