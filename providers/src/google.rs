//! Google Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`).
//!
//! Encoding: `systemInstruction`, `contents` with `user` / `model` roles,
//! `functionCall` and `functionResponse` parts, thought signatures returned
//! on the parts they came with, tools as `functionDeclarations` with
//! `parametersJsonSchema` (full JSON Schema), `generationConfig` with
//! `maxOutputTokens` and — only when the model advertises thinking —
//! `thinkingConfig {includeThoughts, thinkingBudget}`.
//!
//! Decoding: each event is a `GenerateContentResponse`; parts with `text`
//! become text deltas (or thinking deltas when `thought` is true),
//! `functionCall` parts become complete tool calls, `thoughtSignature`s are
//! kept in the signature envelope, `usageMetadata` becomes usage, and
//! `finishReason` decides the stop. Gemini sends no end marker: the body
//! is complete when it ends after a chunk with a `finishReason`.

use serde_json::{Map, Value, json};

use crate::common::{
    self, Body, Config, Frame, Out, advice, credential_handle, error_object, join_url, str_at,
    u64_at,
};
use crate::types::{
    ContentBlock, Decoder, HttpExchange, Message, OpaqueBytes, ProviderError, ProviderErrorKind,
    Request, StopReason, StreamEvent, Usage,
};

/// The provider id.
pub const PROVIDER_ID: &str = "google";
/// The model used when none is given.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// The default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The default credential slot (an API key, sent as `x-goog-api-key`).
pub const CREDENTIAL_SLOT: &str = "google.api_key";
/// The environment variable the host reads for [`CREDENTIAL_SLOT`].
pub const CREDENTIAL_ENV: &str = "GEMINI_API_KEY";

const VENDOR: &str = "Google";
/// Envelope tag of a signed thought part (payload: the signature).
pub(crate) const TAG_THOUGHT: &[u8; 4] = b"GTHT";
/// Envelope tag of a signature carried by the next non-thought part.
pub(crate) const TAG_NEXT: &[u8; 4] = b"GNXT";

/// Builds the streaming generateContent request.
///
/// # Errors
///
/// `invalid_request` before dispatch when tools are offered to a model that
/// does not advertise tool use.
pub fn encode(request: &Request, config: &Config) -> Result<HttpExchange, ProviderError> {
    let caps = &config.capabilities;
    common::check_tools(VENDOR, request, caps)?;
    let mut contents: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, parts: Vec<Value>| {
        if parts.is_empty() {
            return;
        }
        match contents.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => contents.push((role, parts)),
        }
    };
    for message in &request.messages {
        match message {
            // The API rejects empty parts.
            Message::User { text } if text.is_empty() => {}
            Message::User { text } => push("user", vec![json!({"text": text})]),
            Message::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let response = if *is_error {
                    json!({"error": content})
                } else {
                    json!({"output": content})
                };
                push(
                    "user",
                    vec![json!({"functionResponse": {"name": name, "response": response}})],
                );
            }
            Message::Assistant { content, .. } => push("model", model_parts(content)),
        }
    }
    let mut body = Map::new();
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    body.insert(
        "contents".into(),
        Value::Array(
            contents
                .into_iter()
                .map(|(role, parts)| json!({"role": role, "parts": parts}))
                .collect(),
        ),
    );
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters}))
            .collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    let mut generation = Map::new();
    if let Some(limit) = common::output_limit(request, caps) {
        generation.insert("maxOutputTokens".into(), json!(limit));
    }
    if let Some(level) = config.thinking.filter(|_| caps.thinking) {
        generation.insert(
            "thinkingConfig".into(),
            json!({"includeThoughts": true, "thinkingBudget": level.budget_tokens()}),
        );
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    let slot = config.credential.as_deref().unwrap_or(CREDENTIAL_SLOT);
    Ok(HttpExchange {
        method: "POST".into(),
        url: join_url(
            config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL),
            &format!(
                "/v1beta/models/{}:streamGenerateContent?alt=sse",
                request.model
            ),
        ),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
            ("x-goog-api-key".into(), credential_handle(slot)),
        ],
        body: common::json_body(&Value::Object(body)),
    })
}

fn model_parts(content: &[ContentBlock]) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut pending: Option<String> = None;
    let attach = |mut part: Value, pending: &mut Option<String>| {
        if let Some(signature) = pending.take() {
            part["thoughtSignature"] = json!(signature);
        }
        part
    };
    for block in content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                parts.push(attach(json!({"text": text}), &mut pending));
            }
            ContentBlock::Text { .. } => {}
            ContentBlock::Thinking { text, signature } => {
                // Only this provider's records go back; unsigned thought
                // text is not needed by the API and is left out.
                for piece in common::pieces(text, signature.as_ref().map(|s| s.0.as_slice()))
                    .unwrap_or_default()
                {
                    let payload = String::from_utf8_lossy(piece.payload).into_owned();
                    match piece.tag.as_ref() {
                        Some(t) if t == TAG_THOUGHT => parts.push(
                            json!({"text": piece.text, "thought": true, "thoughtSignature": payload}),
                        ),
                        Some(t) if t == TAG_NEXT => pending = Some(payload),
                        _ => {}
                    }
                }
            }
            ContentBlock::ToolCall(call) => {
                let args = match &call.arguments {
                    Value::Object(_) => call.arguments.clone(),
                    _ => json!({}),
                };
                parts.push(attach(
                    json!({"functionCall": {"name": call.name, "args": args}}),
                    &mut pending,
                ));
            }
        }
    }
    parts
}

/// The streaming decoder.
#[derive(Clone, Default)]
pub struct StreamDecoder {
    body: Body,
    out: Out,
    finish_reason: Option<String>,
    tool_calls: usize,
    last_usage: Option<Usage>,
    response_id: String,
}

impl StreamDecoder {
    /// A decoder for one response body.
    pub fn new() -> Self {
        Self::default()
    }

    fn frame(&mut self, frame: Frame) {
        match frame {
            Frame::Event(event) => match common::parse_data(&event.data) {
                Ok(data) => self.chunk(&data),
                Err(why) => self.out.error(ProviderError::malformed(format!(
                    "Google sent an event whose data is not JSON ({why}): {}; {}",
                    common::excerpt(&event.data),
                    advice(ProviderErrorKind::MalformedStream)
                ))),
            },
            Frame::Unterminated(event) => {
                if let Ok(data) = common::parse_data(&event.data) {
                    self.chunk(&data);
                }
            }
            Frame::Json(parsed) => self.out.error(common::json_body_error(VENDOR, parsed)),
        }
    }

    fn chunk(&mut self, data: &Value) {
        if let Some(error) = data.get("error").filter(|e| !e.is_null()) {
            self.out.error(error_object(VENDOR, error));
            return;
        }
        if self.response_id.is_empty() {
            self.response_id = str_at(data, "responseId").to_owned();
        }
        if let Some(reason) = data
            .get("promptFeedback")
            .map(|f| str_at(f, "blockReason"))
            .filter(|r| !r.is_empty())
        {
            self.out.error(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "Google blocked the prompt (blockReason {reason}); rephrase the request or choose another model"
                ),
            ));
            return;
        }
        if let Some(candidate) = data
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        {
            if let Some(parts) = candidate
                .get("content")
                .and_then(|c| c.get("parts"))
                .and_then(Value::as_array)
            {
                for part in parts {
                    self.part(part);
                }
            }
            if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        if let Some(usage) = data.get("usageMetadata") {
            self.usage(usage);
        }
    }

    fn part(&mut self, part: &Value) {
        let signature = str_at(part, "thoughtSignature");
        let thought = part
            .get("thought")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if thought {
            let text = str_at(part, "text");
            let signature = (!signature.is_empty()).then(|| {
                OpaqueBytes(common::record(
                    TAG_THOUGHT,
                    text.len(),
                    signature.as_bytes(),
                ))
            });
            if !text.is_empty() || signature.is_some() {
                self.out.push(StreamEvent::ThinkingDelta {
                    text: text.to_owned(),
                    signature,
                });
            }
            return;
        }
        if !signature.is_empty() {
            self.out.push(StreamEvent::ThinkingDelta {
                text: String::new(),
                signature: Some(OpaqueBytes(common::record(
                    TAG_NEXT,
                    0,
                    signature.as_bytes(),
                ))),
            });
        }
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            if !text.is_empty() {
                self.out.push(StreamEvent::TextDelta {
                    text: text.to_owned(),
                });
            }
        } else if let Some(call) = part.get("functionCall") {
            self.tool_calls += 1;
            let id = match str_at(call, "id") {
                "" if self.response_id.is_empty() => format!("gemini_call_{}", self.tool_calls),
                "" => format!("{}_{}", self.response_id, self.tool_calls),
                given => given.to_owned(),
            };
            let name = str_at(call, "name").to_owned();
            let arguments = call
                .get("args")
                .filter(|a| !a.is_null())
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            if !self.out.start_call(VENDOR, &id, &name) {
                return;
            }
            self.out.push(StreamEvent::ToolCallDelta {
                id: id.clone(),
                arguments,
            });
            self.out.push(StreamEvent::ToolCallEnd { id });
        }
    }

    fn usage(&mut self, usage: &Value) {
        let prompt = u64_at(usage, "promptTokenCount");
        let cached = u64_at(usage, "cachedContentTokenCount");
        let candidates = u64_at(usage, "candidatesTokenCount");
        let thoughts = u64_at(usage, "thoughtsTokenCount");
        let reported = Usage {
            input: prompt.map(|p| p.saturating_sub(cached.unwrap_or(0))),
            output: candidates.map(|c| c + thoughts.unwrap_or(0)),
            cache_read: cached,
            cache_write: None,
        };
        if reported != Usage::default() && self.last_usage != Some(reported) {
            self.last_usage = Some(reported);
            self.out.push(StreamEvent::Usage(reported));
        }
    }

    fn stop(&mut self, reason: &str) {
        let stop = match reason {
            "STOP" if self.tool_calls > 0 => StopReason::ToolUse,
            "STOP" => StopReason::End,
            "MAX_TOKENS" => StopReason::Limit,
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => {
                self.out.error(ProviderError::malformed(format!(
                    "Google ended the response with finishReason {reason}: the model produced a tool call the API could not accept; retry, or choose another model"
                )));
                return;
            }
            _ => {
                self.out.error(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "Google stopped the response with finishReason {reason} (a safety, recitation or policy block); rephrase the request or choose another model"
                    ),
                ));
                return;
            }
        };
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
            match self.finish_reason.clone() {
                Some(reason) => self.stop(&reason),
                None => self
                    .out
                    .error(common::ended_early(VENDOR, "a chunk with a finishReason")),
            }
        }
        self.out.take()
    }
}
