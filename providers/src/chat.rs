//! The Chat Completions dialect, shared by OpenAI and every
//! OpenAI-compatible server.
//!
//! Decoding handles what real servers do: tool call pieces keyed by
//! `index` (id and name in the first piece, arguments split anywhere after;
//! a missing index counts by position; a missing id gets `call_N`), usage
//! only in a final chunk with no choices, reasoning in `reasoning_content`
//! or `reasoning`, refusals in `refusal`, errors as `{"error": ...}` data
//! lines (with status 200), `finish_reason: "stop"` on a turn that made
//! tool calls, and — where the dialect allows it — no `[DONE]`.

use serde_json::{Map, Value, json};

use crate::common::{
    self, Body, Config, Frame, Out, advice, end_tool_call, error_object, str_at, u64_at,
};
use crate::types::{
    ContentBlock, HttpExchange, Media, MediaType, Message, ProviderError, ProviderErrorKind,
    Request, StopReason, StreamEvent, Usage,
};

/// What differs between servers speaking the dialect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dialect {
    /// The vendor name used in diagnostics.
    pub(crate) vendor: &'static str,
    /// Whether a body without `data: [DONE]` is incomplete.
    pub(crate) require_done: bool,
    /// The name of the output-limit field.
    pub(crate) max_tokens_field: &'static str,
    /// Whether `reasoning_effort` may be sent.
    pub(crate) reasoning_effort: bool,
    /// Whether PDFs may be sent as `file` parts; without it a request
    /// carrying a PDF is refused before dispatch.
    pub(crate) pdf: bool,
}

pub(crate) fn encode(
    request: &Request,
    config: &Config,
    dialect: Dialect,
    url: String,
    auth: Option<String>,
) -> Result<HttpExchange, ProviderError> {
    let caps = &config.capabilities;
    common::check_tools(dialect.vendor, request, caps)?;
    let mut messages = Vec::new();
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    if !dialect.pdf
        && let Some(pdf) = request.media().find(|m| m.media_type == MediaType::Pdf)
    {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!(
                "the request carries the PDF {}, and the {} dialect has no way to send a PDF; nothing was sent. Extract its text with a tool (e.g. bash `pdftotext FILE -`) and send that, or use a provider that takes PDFs",
                pdf.summary(),
                dialect.vendor
            ),
        ));
    }
    // A tool message carries text only: the media of a run of tool
    // results follows the run as one user message.
    let mut pending: Vec<Value> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::ToolResult { .. }) && !pending.is_empty() {
            messages.push(tool_media_message(std::mem::take(&mut pending)));
        }
        match message {
            Message::User { text, media } if media.is_empty() => {
                messages.push(json!({"role": "user", "content": text}));
            }
            Message::User { text, media } => {
                let mut parts: Vec<Value> = media.iter().map(media_part).collect();
                parts.push(json!({"type": "text", "text": text}));
                messages.push(json!({"role": "user", "content": parts}));
            }
            Message::ToolResult {
                call_id,
                content,
                media,
                ..
            } => {
                messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}));
                if !media.is_empty() {
                    pending.push(json!({"type": "text", "text": format!("The {} attached to the result of tool call {call_id}:", if media.len() == 1 { "file" } else { "files" })}));
                    pending.extend(media.iter().map(media_part));
                }
            }
            Message::Assistant { content, .. } => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for block in content {
                    match block {
                        ContentBlock::Text { text: piece } => text.push_str(piece),
                        // The dialect has no way to return reasoning.
                        ContentBlock::Thinking { .. } => {}
                        ContentBlock::ToolCall(call) => {
                            let arguments = match &call.arguments {
                                Value::String(raw) => raw.clone(),
                                other => other.to_string(),
                            };
                            calls.push(json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}));
                        }
                    }
                }
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut out = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    out["tool_calls"] = Value::Array(calls);
                }
                messages.push(out);
            }
        }
    }
    if !pending.is_empty() {
        messages.push(tool_media_message(pending));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(limit) = common::output_limit(request, caps) {
        body.insert(dialect.max_tokens_field.into(), json!(limit));
    }
    if dialect.reasoning_effort
        && let Some(level) = config.thinking.filter(|_| caps.thinking)
    {
        body.insert("reasoning_effort".into(), json!(level.effort()));
    }
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "text/event-stream".to_owned()),
    ];
    if let Some(auth) = auth {
        headers.push(("authorization".to_owned(), auth));
    }
    Ok(HttpExchange {
        method: "POST".into(),
        url,
        headers,
        body: common::json_body(&Value::Object(body)),
    })
}

#[derive(Clone)]
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

/// The streaming decoder for the dialect.
#[derive(Clone)]
pub(crate) struct ChatDecoder {
    dialect: Dialect,
    body: Body,
    out: Out,
    calls: Vec<Call>,
    finish_reason: Option<String>,
    refusal: String,
    generated_ids: usize,
    tool_calls: usize,
}

impl ChatDecoder {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            body: Body::default(),
            out: Out::default(),
            calls: Vec::new(),
            finish_reason: None,
            refusal: String::new(),
            generated_ids: 0,
            tool_calls: 0,
        }
    }

    fn frame(&mut self, frame: Frame) {
        match frame {
            Frame::Event(event) => {
                if event.data.trim() == "[DONE]" {
                    self.done_marker();
                    return;
                }
                match common::parse_data(&event.data) {
                    Ok(data) => self.chunk(&data),
                    Err(why) => self.out.error(ProviderError::malformed(format!(
                        "{} sent a data line that is not JSON ({why}): {}; {}",
                        self.dialect.vendor,
                        common::excerpt(&event.data),
                        advice(ProviderErrorKind::MalformedStream)
                    ))),
                }
            }
            Frame::Unterminated(event) => {
                if event.data.trim() == "[DONE]" {
                    self.done_marker();
                } else if let Ok(data) = common::parse_data(&event.data) {
                    self.chunk(&data);
                }
            }
            Frame::Json(parsed) => self
                .out
                .error(common::json_body_error(self.dialect.vendor, parsed)),
        }
    }

    fn chunk(&mut self, data: &Value) {
        // Usage first: an error chunk may carry it (OpenRouter).
        if let Some(usage) = data.get("usage").filter(|u| u.is_object()) {
            let prompt = u64_at(usage, "prompt_tokens");
            let cached = usage
                .get("prompt_tokens_details")
                .and_then(|d| u64_at(d, "cached_tokens"));
            self.out.push(StreamEvent::Usage(Usage {
                input: prompt.map(|p| p.saturating_sub(cached.unwrap_or(0))),
                output: u64_at(usage, "completion_tokens"),
                cache_read: cached,
                cache_write: None,
            }));
        }
        if let Some(error) = data.get("error").filter(|e| !e.is_null()) {
            self.out.error(error_object(self.dialect.vendor, error));
            return;
        }
        let Some(choices) = data.get("choices").and_then(Value::as_array) else {
            return;
        };
        // Only the first choice is followed (requests never ask for more).
        let Some(choice) = choices
            .iter()
            .find(|c| u64_at(c, "index").unwrap_or(0) == 0)
        else {
            return;
        };
        if let Some(delta) = choice.get("delta") {
            self.delta(delta);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
            if reason != "length" {
                self.end_calls();
            }
        }
    }

    fn delta(&mut self, delta: &Value) {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.out.push(StreamEvent::ThinkingDelta {
                    text: text.to_owned(),
                    signature: None,
                });
                break;
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.out.push(StreamEvent::TextDelta {
                text: text.to_owned(),
            });
        }
        if let Some(text) = delta
            .get("refusal")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.refusal.push_str(text);
            self.out.push(StreamEvent::TextDelta {
                text: text.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, piece) in calls.iter().enumerate() {
                self.call_piece(position as u64, piece);
            }
        }
    }

    fn call_piece(&mut self, position: u64, piece: &Value) {
        let index = u64_at(piece, "index").unwrap_or(position);
        let id = str_at(piece, "id");
        let function = piece.get("function");
        let name = function.map(|f| str_at(f, "name")).unwrap_or("");
        let arguments = function.map(|f| str_at(f, "arguments")).unwrap_or("");
        // A piece continues the latest call with its index unless it brings
        // a different id (some servers reuse index 0 for every call).
        let existing = self
            .calls
            .iter()
            .rposition(|c| c.index == index && (id.is_empty() || c.id.is_empty() || c.id == id));
        let at = match existing {
            Some(at) => at,
            None => {
                self.calls.push(Call {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        if call.id.is_empty() && !id.is_empty() {
            call.id = id.to_owned();
        }
        if call.name.is_empty() && !name.is_empty() {
            call.name = name.to_owned();
        }
        call.arguments.push_str(arguments);
        if !call.started && !call.name.is_empty() {
            call.started = true;
            if call.id.is_empty() {
                self.generated_ids += 1;
                call.id = format!("call_{}", self.generated_ids);
            }
            let (id, name, pending) = (call.id.clone(), call.name.clone(), call.arguments.clone());
            self.tool_calls += 1;
            if self.out.start_call(self.dialect.vendor, &id, &name) && !pending.is_empty() {
                self.out.push(StreamEvent::ToolCallDelta {
                    id,
                    arguments: pending,
                });
            }
        } else if call.started && !arguments.is_empty() {
            let id = call.id.clone();
            self.out.push(StreamEvent::ToolCallDelta {
                id,
                arguments: arguments.to_owned(),
            });
        }
    }

    fn end_calls(&mut self) {
        for call in std::mem::take(&mut self.calls) {
            if !call.started {
                self.out.error(ProviderError::malformed(format!(
                    "{} sent tool call piece(s) at index {} without a function name; {}",
                    self.dialect.vendor,
                    call.index,
                    advice(ProviderErrorKind::MalformedStream)
                )));
                return;
            }
            end_tool_call(
                &mut self.out,
                self.dialect.vendor,
                &call.id,
                &call.name,
                &call.arguments,
            );
        }
    }

    fn done_marker(&mut self) {
        let Some(reason) = self.finish_reason.clone() else {
            self.out.error(ProviderError::malformed(format!(
                "{} sent [DONE] without a finish_reason; the response is incomplete; {}",
                self.dialect.vendor,
                advice(ProviderErrorKind::MalformedStream)
            )));
            return;
        };
        let stop = match reason.as_str() {
            "length" => StopReason::Limit,
            "content_filter" => {
                self.out.error(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "{} stopped the response with its content filter (finish_reason content_filter); rephrase the request or choose another model",
                        self.dialect.vendor
                    ),
                ));
                return;
            }
            "error" => {
                self.out.error(ProviderError::new(
                    ProviderErrorKind::Transport,
                    format!(
                        "{} ended the response with finish_reason error and no error details; {}",
                        self.dialect.vendor,
                        advice(ProviderErrorKind::Transport)
                    ),
                ));
                return;
            }
            _ if !self.calls.is_empty() => {
                // Tool call pieces after the finish_reason: end them too.
                self.end_calls();
                if self.out.done() {
                    return;
                }
                StopReason::ToolUse
            }
            _ if !self.refusal.is_empty() => {
                self.out.error(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "the model refused to answer ({}): {}; rephrase the request or choose another model",
                        self.dialect.vendor,
                        common::excerpt(&self.refusal)
                    ),
                ));
                return;
            }
            _ if self.tool_calls > 0 => StopReason::ToolUse,
            _ => StopReason::End,
        };
        self.out.push(StreamEvent::Stop { reason: stop });
    }

    pub(crate) fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
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

    pub(crate) fn finish(&mut self) -> Vec<StreamEvent> {
        if !self.out.done()
            && let Some(frame) = self.body.finish()
        {
            self.frame(frame);
        }
        if !self.out.done() && !self.dialect.require_done && self.finish_reason.is_some() {
            self.done_marker();
        }
        if !self.out.done() {
            let expected = if self.dialect.require_done {
                "data: [DONE]"
            } else {
                "a finish_reason"
            };
            self.out
                .error(common::ended_early(self.dialect.vendor, expected));
        }
        self.out.take()
    }
}

/// An `image_url` part with a data URL, or a `file` part (PDF) with base64
/// file data.
fn media_part(media: &Media) -> Value {
    if media.media_type.is_image() {
        json!({"type": "image_url", "image_url": {"url": media.data_url()}})
    } else {
        json!({"type": "file", "file": {"filename": crate::openai::media_file_name(media), "file_data": media.data_url()}})
    }
}

/// The user message that carries the media of a run of tool results.
fn tool_media_message(parts: Vec<Value>) -> Value {
    json!({"role": "user", "content": parts})
}
