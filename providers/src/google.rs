//! Google Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`).
//!
//! Encoding: `systemInstruction`, `contents` with `user` / `model` roles,
//! `functionCall` and `functionResponse` parts, tools as
//! `functionDeclarations` with `parametersJsonSchema` (full JSON Schema),
//! `generationConfig` with `maxOutputTokens` and — only when the model
//! advertises thinking — `thinkingConfig {includeThoughts, thinkingBudget}`.
//! Every part of an earlier response goes back as it came: thought
//! signatures on the parts they arrived with (thought text, text, function
//! calls), and server-side tool parts (`toolCall`, `toolResponse`,
//! `executableCode`, `codeExecutionResult`) and signed empty text parts
//! verbatim, in their places.
//!
//! Decoding: each event is a `GenerateContentResponse`; parts with `text`
//! become text deltas (or thinking deltas when `thought` is true),
//! `functionCall` parts become complete tool calls, signatures and
//! server-side tool parts are kept in the signature envelope, as is the
//! candidate's `groundingMetadata` / `urlContextMetadata` (kept with the
//! message, never sent: requests have no place for it), `usageMetadata`
//! becomes usage (`toolUsePromptTokenCount` counts as input), and
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
/// Envelope tag of a signature carried by the next part (a function call).
pub(crate) const TAG_NEXT: &[u8; 4] = b"GNXT";
/// Envelope tag of a signed text part (payload: `{"thoughtSignature",
/// "textBytes"}`, the signature of the next text block's first
/// `textBytes` bytes).
pub(crate) const TAG_SIGNED_TEXT: &[u8; 4] = b"GSTX";
/// Envelope tag of a part returned verbatim (payload: the part's JSON, its
/// signature included): server-side tool parts (`toolCall`,
/// `toolResponse`, `executableCode`, `codeExecutionResult`), signed empty
/// text, and any part kind this adapter does not interpret.
pub(crate) const TAG_PART: &[u8; 4] = b"GPRT";
/// Envelope tag of a candidate's metadata kept with the message
/// (payload: `{"groundingMetadata": …, "urlContextMetadata": …}`); the
/// API has no place for it in a request, so it is never sent.
pub(crate) const TAG_METADATA: &[u8; 4] = b"GMTA";
/// Envelope tag covering unsigned thought text (no payload; nothing goes
/// back).
pub(crate) const TAG_SKIP: &[u8; 4] = b"GSKP";

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
            Message::User { text, media } if text.is_empty() && media.is_empty() => {}
            Message::User { text, media } => {
                let mut parts: Vec<Value> = media.iter().map(inline_data).collect();
                if !text.is_empty() {
                    parts.push(json!({"text": text}));
                }
                push("user", parts);
            }
            Message::ToolResult {
                name,
                content,
                is_error,
                media,
                ..
            } => {
                let response = if *is_error {
                    json!({"error": content})
                } else {
                    json!({"output": content})
                };
                // The media of a result follow its function response as
                // inline data parts of the same turn.
                let mut parts =
                    vec![json!({"functionResponse": {"name": name, "response": response}})];
                parts.extend(media.iter().map(inline_data));
                push("user", parts);
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
    // A signature recorded for the part that follows it in the stream: it
    // goes back on that part only, never on another one.
    let mut pending: Option<Pending> = None;
    for block in content {
        match block {
            ContentBlock::Text { text } => match pending.take() {
                Some(Pending::Text(len, signature))
                    if len > 0 && len < text.len() && text.is_char_boundary(len) =>
                {
                    let (signed, rest) = text.split_at(len);
                    parts.push(json!({"text": signed, "thoughtSignature": signature}));
                    if !rest.is_empty() {
                        parts.push(json!({"text": rest}));
                    }
                }
                Some(Pending::Text(_, signature) | Pending::Next(signature))
                    if !text.is_empty() =>
                {
                    parts.push(json!({"text": text, "thoughtSignature": signature}));
                }
                _ if !text.is_empty() => parts.push(json!({"text": text})),
                _ => {}
            },
            ContentBlock::Thinking { text, signature } => {
                // Only this provider's records go back; unsigned thought
                // text is not needed by the API and is left out.
                for piece in common::pieces(text, signature.as_ref().map(|s| s.0.as_slice()))
                    .unwrap_or_default()
                {
                    // A pending signature whose part never arrived (cut
                    // off) is dropped rather than moved.
                    if piece.tag.is_some() {
                        pending = None;
                    }
                    let payload = String::from_utf8_lossy(piece.payload).into_owned();
                    match piece.tag.as_ref() {
                        Some(t) if t == TAG_THOUGHT => parts.push(
                            json!({"text": piece.text, "thought": true, "thoughtSignature": payload}),
                        ),
                        Some(t) if t == TAG_NEXT => pending = Some(Pending::Next(payload)),
                        Some(t) if t == TAG_SIGNED_TEXT => {
                            if let Ok(signed) = serde_json::from_str::<Value>(&payload) {
                                let len = u64_at(&signed, "textBytes").unwrap_or(0);
                                pending = Some(Pending::Text(
                                    usize::try_from(len).unwrap_or(usize::MAX),
                                    str_at(&signed, "thoughtSignature").to_owned(),
                                ));
                            }
                        }
                        Some(t) if t == TAG_PART => {
                            if let Ok(part) = serde_json::from_str::<Value>(&payload) {
                                parts.push(part);
                            }
                        }
                        _ => {}
                    }
                }
            }
            ContentBlock::ToolCall(call) => {
                let args = match &call.arguments {
                    Value::Object(_) => call.arguments.clone(),
                    _ => json!({}),
                };
                let mut part = json!({"functionCall": {"name": call.name, "args": args}});
                if let Some(Pending::Next(signature)) = pending.take() {
                    part["thoughtSignature"] = json!(signature);
                }
                parts.push(part);
            }
        }
    }
    parts
}

/// A signature waiting for the block it belongs to.
enum Pending {
    /// For the next part (a function call).
    Next(String),
    /// For the first `usize` bytes of the next text block.
    Text(usize, String),
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
    metadata: Map<String, Value>,
    /// Unsigned thought text bytes in the current thinking run that no
    /// record covers yet.
    unclaimed: usize,
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
            self.metadata(candidate);
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
        let text = part.get("text").and_then(Value::as_str);
        if thought {
            let text = text.unwrap_or("");
            if !signature.is_empty() {
                self.record(text, TAG_THOUGHT, signature.as_bytes());
            } else if !text.is_empty() {
                self.unclaimed += text.len();
                self.out.push(StreamEvent::ThinkingDelta {
                    text: text.to_owned(),
                    signature: None,
                });
            }
            return;
        }
        if let Some(text) = text {
            if text.is_empty() {
                // A signature on an empty text part (the last part of a
                // streamed answer) goes back as that very part.
                if !signature.is_empty() {
                    self.record("", TAG_PART, part.to_string().as_bytes());
                }
                return;
            }
            if !signature.is_empty() {
                let signed = json!({"thoughtSignature": signature, "textBytes": text.len()});
                self.record("", TAG_SIGNED_TEXT, signed.to_string().as_bytes());
            }
            self.unclaimed = 0;
            self.out.push(StreamEvent::TextDelta {
                text: text.to_owned(),
            });
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
            if !signature.is_empty() {
                self.record("", TAG_NEXT, signature.as_bytes());
            }
            self.unclaimed = 0;
            if !self.out.start_call(VENDOR, &id, &name) {
                return;
            }
            self.out.push(StreamEvent::ToolCallDelta {
                id: id.clone(),
                arguments,
            });
            self.out.push(StreamEvent::ToolCallEnd { id });
        } else if part.as_object().is_some_and(|o| !o.is_empty()) {
            // Server-side tool parts (`toolCall`, `toolResponse`,
            // `executableCode`, `codeExecutionResult`) and any other kind:
            // kept whole, signature included, and sent back as they came.
            self.record("", TAG_PART, part.to_string().as_bytes());
        }
    }

    /// A thinking delta with `text` and one record covering exactly that
    /// text; unsigned thought text before it in the same block is covered
    /// by a skip record first, so merged blocks split where they came.
    fn record(&mut self, text: &str, tag: &[u8; 4], payload: &[u8]) {
        let mut bytes = Vec::new();
        let skipped = std::mem::take(&mut self.unclaimed);
        if skipped > 0 {
            bytes = common::record(TAG_SKIP, skipped, &[]);
        }
        bytes.extend(common::record(tag, text.len(), payload));
        self.out.push(StreamEvent::ThinkingDelta {
            text: text.to_owned(),
            signature: Some(OpaqueBytes(bytes)),
        });
    }

    /// Keeps the candidate's grounding and URL context metadata (the
    /// latest of each) for the message.
    fn metadata(&mut self, candidate: &Value) {
        for key in ["groundingMetadata", "urlContextMetadata"] {
            if let Some(value) = candidate.get(key).filter(|v| !v.is_null()) {
                self.metadata.insert(key.to_owned(), value.clone());
            }
        }
    }

    /// The kept metadata, as one record before the terminal event.
    fn flush_metadata(&mut self) {
        if self.metadata.is_empty() || self.out.done() {
            return;
        }
        let payload = Value::Object(std::mem::take(&mut self.metadata)).to_string();
        self.record("", TAG_METADATA, payload.as_bytes());
    }

    fn usage(&mut self, usage: &Value) {
        // Tokens of server-side tool results count as input.
        let prompt = match (
            u64_at(usage, "promptTokenCount"),
            u64_at(usage, "toolUsePromptTokenCount"),
        ) {
            (Some(prompt), tools) => Some(prompt.saturating_add(tools.unwrap_or(0))),
            (None, tools) => tools,
        };
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
            self.flush_metadata();
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

/// An `inlineData` part: the MIME type (`application/pdf` for a PDF) and
/// the base64 bytes.
fn inline_data(media: &crate::types::Media) -> Value {
    json!({"inlineData": {"mimeType": media.media_type.mime(), "data": media.base64()}})
}
