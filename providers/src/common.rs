//! Pieces every adapter shares: configuration and capabilities, the body
//! framing (SSE or a bare JSON error document), the terminal-event guard,
//! tool call argument checks, error classification and the signature
//! envelope.

use std::collections::HashSet;

use serde_json::Value;

use crate::sse::{SseEvent, SseParser};
use crate::types::{ProviderError, ProviderErrorKind, StreamEvent};

/// How much reasoning to ask for, when the model advertises thinking: the
/// catalog's levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingLevel {
    /// The smallest budget (OpenAI's `minimal` effort).
    Minimal,
    /// A small budget.
    Low,
    /// A medium budget.
    Medium,
    /// A large budget.
    High,
    /// The largest budget; sent as `high` effort to vendors whose efforts
    /// end there.
    Max,
}

impl ThinkingLevel {
    /// The token budget used by vendors that take one.
    pub fn budget_tokens(self) -> u32 {
        match self {
            ThinkingLevel::Minimal => 1_024,
            ThinkingLevel::Low => 2_048,
            ThinkingLevel::Medium => 8_192,
            ThinkingLevel::High => 24_576,
            ThinkingLevel::Max => 32_768,
        }
    }

    /// The effort name used by vendors that take one.
    pub fn effort(self) -> &'static str {
        match self {
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High | ThinkingLevel::Max => "high",
        }
    }
}

/// What the model advertises (from the catalog or the provider). A request
/// uses only what is advertised here; the default advertises nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The model accepts tool definitions and makes tool calls.
    pub tool_use: bool,
    /// The model can be asked to reason (thinking / reasoning effort).
    pub thinking: bool,
    /// The model honors explicit prompt-cache breakpoints.
    pub prompt_cache: bool,
    /// The model's output token limit, if known.
    pub max_output_tokens: Option<u32>,
}

/// Per-provider configuration for [`encode`](crate::anthropic::encode).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The API base URL; `None` uses the provider's default (required for
    /// the OpenAI-compatible provider).
    pub base_url: Option<String>,
    /// The credential slot whose handle goes into the auth header; `None`
    /// uses the provider's default slot (the OpenAI-compatible provider
    /// sends no auth header then).
    pub credential: Option<String>,
    /// What the model advertises.
    pub capabilities: Capabilities,
    /// Reasoning to ask for; ignored (omitted from the request) when the
    /// model does not advertise thinking.
    pub thinking: Option<ThinkingLevel>,
}

impl Config {
    /// A configuration with the given capabilities and defaults otherwise.
    pub fn with_capabilities(capabilities: Capabilities) -> Self {
        Self {
            capabilities,
            ..Self::default()
        }
    }
}

/// The opaque handle the host replaces with the credential in `slot`.
pub fn credential_handle(slot: &str) -> String {
    format!("{{{{credential:{slot}}}}}")
}

pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}{}", base.trim_end_matches('/'), path)
}

/// Fails before dispatch when tools are offered to a model without tool use.
pub(crate) fn check_tools(
    vendor: &str,
    request: &crate::types::Request,
    caps: &Capabilities,
) -> Result<(), ProviderError> {
    if !request.tools.is_empty() && !caps.tool_use {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!(
                "{vendor} model {:?} does not advertise tool use, but the request offers {} tool(s) (first: {:?}); nothing was sent — pick a model with tool use or run without tools",
                request.model,
                request.tools.len(),
                request.tools[0].name
            ),
        ));
    }
    Ok(())
}

/// The output limit to send: the request's, else the model's, clamped to
/// the model's advertised limit.
pub(crate) fn output_limit(request: &crate::types::Request, caps: &Capabilities) -> Option<u32> {
    match (request.max_output_tokens, caps.max_output_tokens) {
        (Some(asked), Some(max)) => Some(asked.min(max)),
        (asked, max) => asked.or(max),
    }
}

pub(crate) fn json_body(value: &Value) -> Vec<u8> {
    // Serializing a Value cannot fail (all keys are strings).
    serde_json::to_vec(value).unwrap_or_default()
}

/// Collects events and guarantees exactly one terminal event.
#[derive(Clone, Debug, Default)]
pub(crate) struct Out {
    events: Vec<StreamEvent>,
    done: bool,
    call_ids: HashSet<String>,
}

impl Out {
    /// Starts a tool call, or ends the stream with `malformed_stream` when
    /// the id or name is empty or the id was already used in this response.
    /// Returns whether the call started.
    pub(crate) fn start_call(&mut self, vendor: &str, id: &str, name: &str) -> bool {
        if self.done {
            return false;
        }
        let problem = if id.is_empty() {
            Some("an empty call id")
        } else if name.is_empty() {
            Some("an empty tool name")
        } else if self.call_ids.contains(id) {
            Some("a call id already used in this response")
        } else {
            None
        };
        if let Some(problem) = problem {
            self.error(ProviderError::malformed(format!(
                "{vendor} started tool call {id:?} (tool {name:?}) with {problem}; {}",
                advice(ProviderErrorKind::MalformedStream)
            )));
            return false;
        }
        self.call_ids.insert(id.to_owned());
        self.push(StreamEvent::ToolCallStart {
            id: id.to_owned(),
            name: name.to_owned(),
        });
        true
    }

    pub(crate) fn push(&mut self, event: StreamEvent) {
        if self.done {
            return;
        }
        if event.is_terminal() {
            self.done = true;
        }
        self.events.push(event);
    }

    pub(crate) fn error(&mut self, error: ProviderError) {
        self.push(StreamEvent::Error(error));
    }

    pub(crate) fn done(&self) -> bool {
        self.done
    }

    pub(crate) fn take(&mut self) -> Vec<StreamEvent> {
        std::mem::take(&mut self.events)
    }
}

/// One unit of a response body.
pub(crate) enum Frame {
    /// A complete SSE event.
    Event(SseEvent),
    /// The final SSE event, cut before its terminating blank line.
    Unterminated(SseEvent),
    /// The whole body was a JSON document rather than an event stream (an
    /// error response), or could not be parsed as one.
    Json(Result<Value, String>),
}

const JSON_BODY_LIMIT: usize = 4 << 20;

#[derive(Clone, Debug, Default)]
enum Mode {
    #[default]
    Undecided,
    Sse,
    Json,
}

/// Decides whether the body is an event stream or a JSON document (error
/// responses arrive as plain JSON, with any status) and frames it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Body {
    mode: Mode,
    sse: SseParser,
    json: Vec<u8>,
    overflow: bool,
}

impl Body {
    pub(crate) fn feed(&mut self, chunk: &[u8], frames: &mut Vec<Frame>) {
        match self.mode {
            Mode::Sse => {
                frames.extend(self.sse.feed(chunk).into_iter().map(Frame::Event));
            }
            Mode::Json => self.buffer(chunk),
            Mode::Undecided => {
                self.json.extend_from_slice(chunk);
                let first = self
                    .json
                    .iter()
                    .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
                match first.map(|at| self.json[at]) {
                    None => {}
                    Some(b'{' | b'[') => self.mode = Mode::Json,
                    Some(_) => {
                        self.mode = Mode::Sse;
                        let pending = std::mem::take(&mut self.json);
                        frames.extend(self.sse.feed(&pending).into_iter().map(Frame::Event));
                    }
                }
            }
        }
    }

    fn buffer(&mut self, chunk: &[u8]) {
        if self.json.len() + chunk.len() > JSON_BODY_LIMIT {
            self.overflow = true;
        } else {
            self.json.extend_from_slice(chunk);
        }
    }

    pub(crate) fn finish(&mut self) -> Option<Frame> {
        match self.mode {
            Mode::Undecided => None,
            Mode::Sse => self.sse.finish().map(Frame::Unterminated),
            Mode::Json => {
                if self.overflow {
                    return Some(Frame::Json(Err(format!(
                        "the JSON body is larger than {JSON_BODY_LIMIT} bytes"
                    ))));
                }
                let body = std::mem::take(&mut self.json);
                Some(Frame::Json(
                    serde_json::from_slice(&body).map_err(|e| e.to_string()),
                ))
            }
        }
    }
}

/// Parses an SSE event's data as JSON; `None` when it is not JSON.
pub(crate) fn parse_data(data: &str) -> Result<Value, String> {
    serde_json::from_str(data).map_err(|e| e.to_string())
}

/// Shortens `text` for a diagnostic.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 160;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// Sorts a vendor error into a kind, from its type/code/status names and
/// message.
pub(crate) fn classify(hints: &[&str], message: &str) -> ProviderErrorKind {
    let hints: Vec<String> = hints.iter().map(|h| h.to_ascii_lowercase()).collect();
    let message = message.to_ascii_lowercase();
    let any = |names: &[&str]| {
        hints
            .iter()
            .any(|h| names.iter().any(|n| h == n || h.starts_with(n)))
    };
    let context = [
        "prompt is too long",
        "context length",
        "context window",
        "maximum context",
        "context_length_exceeded",
        "input token count",
        "too many input tokens",
    ];
    if any(&["context_length_exceeded", "string_above_max_length"])
        || context.iter().any(|c| message.contains(c))
    {
        return ProviderErrorKind::ContextOverflow;
    }
    if any(&[
        "rate_limit",
        "429",
        "resource_exhausted",
        "insufficient_quota",
        "too_many_requests",
    ]) {
        return ProviderErrorKind::RateLimit;
    }
    if any(&["overloaded", "529", "503", "unavailable", "slow_down"]) {
        return ProviderErrorKind::Overloaded;
    }
    if any(&[
        "authentication",
        "permission",
        "invalid_api_key",
        "401",
        "403",
        "unauthenticated",
        "billing",
    ]) {
        return ProviderErrorKind::Auth;
    }
    if any(&["not_found", "model_not_found", "404"]) {
        return ProviderErrorKind::ModelUnavailable;
    }
    if any(&[
        "api_error",
        "server_error",
        "internal",
        "500",
        "502",
        "504",
        "deadline_exceeded",
        "timeout",
    ]) {
        return ProviderErrorKind::Overloaded;
    }
    // The model wrote a tool call the server could not parse (Groq's
    // `tool_use_failed`, under `invalid_request_error` and status 400): the
    // request is fine, the sampled output was not, and sending it again
    // usually succeeds. A malformed response, retried like one.
    if any(&["tool_use_failed"]) {
        return ProviderErrorKind::MalformedStream;
    }
    if any(&[
        "invalid_request",
        "invalid_argument",
        "400",
        "413",
        "422",
        "request_too_large",
        "failed_precondition",
        "out_of_range",
    ]) {
        return ProviderErrorKind::InvalidRequest;
    }
    // Servers that send only a message (Ollama: `{"error": "..."}`).
    let by_message = [
        ("rate limit", ProviderErrorKind::RateLimit),
        ("too many requests", ProviderErrorKind::RateLimit),
        ("overloaded", ProviderErrorKind::Overloaded),
        ("unauthorized", ProviderErrorKind::Auth),
        ("api key", ProviderErrorKind::Auth),
        ("not found", ProviderErrorKind::ModelUnavailable),
        ("does not exist", ProviderErrorKind::ModelUnavailable),
    ];
    by_message
        .iter()
        .find(|(text, _)| message.contains(text))
        .map_or(ProviderErrorKind::Transport, |(_, kind)| *kind)
}

/// What to do next, per kind.
pub(crate) fn advice(kind: ProviderErrorKind) -> &'static str {
    match kind {
        ProviderErrorKind::RateLimit => {
            "wait before retrying, or fail over to another account or model"
        }
        ProviderErrorKind::Overloaded => "retry shortly, or fail over to another provider",
        ProviderErrorKind::Auth => {
            "check the configured credential (`smith auth check`) and its permissions"
        }
        ProviderErrorKind::InvalidRequest => {
            "the provider will reject the same request again; change it (or the model) before retrying"
        }
        ProviderErrorKind::ModelUnavailable => {
            "check the model id or choose another model (`smith models`)"
        }
        ProviderErrorKind::ContextOverflow
        | ProviderErrorKind::RequestTooLarge
        | ProviderErrorKind::PluginMemory => {
            "compact the conversation or choose a model with a larger context window"
        }
        ProviderErrorKind::MalformedStream | ProviderErrorKind::Transport => {
            "retry; if it persists, report it with the recorded stream"
        }
    }
}

/// A typed error from a vendor error object's names and message.
pub(crate) fn vendor_error(vendor: &str, hints: &[&str], message: &str) -> ProviderError {
    let kind = classify(hints, message);
    let names: Vec<&str> = hints.iter().copied().filter(|h| !h.is_empty()).collect();
    ProviderError::new(
        kind,
        format!(
            "{vendor} reported an error ({}): {}; {}",
            if names.is_empty() {
                "no type given".to_owned()
            } else {
                names.join(", ")
            },
            excerpt(message),
            advice(kind)
        ),
    )
}

/// A string field of a JSON object, or "".
pub(crate) fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An unsigned integer field of a JSON object.
pub(crate) fn u64_at(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// A malformed-stream error for a body that ended early.
pub(crate) fn ended_early(vendor: &str, expected: &str) -> ProviderError {
    ProviderError::malformed(format!(
        "the {vendor} response body ended before {expected}, so the response is incomplete (connection cut or body truncated); {}",
        advice(ProviderErrorKind::MalformedStream)
    ))
}

/// A malformed-stream error for a JSON document where an event stream was
/// expected, or an unparseable JSON body.
pub(crate) fn json_body_error(vendor: &str, parsed: Result<Value, String>) -> ProviderError {
    match parsed {
        Ok(value) => {
            let error = match &value {
                Value::Array(items) => items.iter().find_map(|item| item.get("error")),
                _ => value.get("error"),
            };
            match error {
                Some(error) => error_object(vendor, error),
                None => ProviderError::malformed(format!(
                    "the {vendor} response was a JSON document, not an event stream, and carries no error: {}; {}",
                    excerpt(&value.to_string()),
                    advice(ProviderErrorKind::MalformedStream)
                )),
            }
        }
        Err(why) => ProviderError::malformed(format!(
            "the {vendor} response started like a JSON document but is not valid JSON ({why}); {}",
            advice(ProviderErrorKind::MalformedStream)
        )),
    }
}

/// A typed error from a vendor error object (`{"type"|"code"|"status",
/// "message"}` in any of the vendors' spellings).
pub(crate) fn error_object(vendor: &str, error: &Value) -> ProviderError {
    if let Some(text) = error.as_str() {
        return vendor_error(vendor, &[], text);
    }
    let code = match error.get("code") {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let hints = [
        str_at(error, "type"),
        code.as_str(),
        str_at(error, "status"),
    ];
    let mut out = vendor_error(vendor, &hints, str_at(error, "message"));
    out.retry_after_ms = retry_delay(error);
    out
}

/// Google's `RetryInfo.retryDelay` ("7s", "1.5s") in milliseconds.
fn retry_delay(error: &Value) -> Option<u64> {
    let details = error.get("details")?.as_array()?;
    details.iter().find_map(|detail| {
        let delay = detail.get("retryDelay")?.as_str()?;
        let seconds: f64 = delay.strip_suffix('s')?.parse().ok()?;
        (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64)
    })
}

/// Checks a completed tool call's argument text: empty text becomes `{}`
/// (the vendors' meaning of "no arguments"); anything else must be JSON.
pub(crate) fn end_tool_call(out: &mut Out, vendor: &str, id: &str, name: &str, arguments: &str) {
    if arguments.trim().is_empty() {
        out.push(StreamEvent::ToolCallDelta {
            id: id.to_owned(),
            arguments: "{}".to_owned(),
        });
    } else if let Err(why) = serde_json::from_str::<Value>(arguments) {
        out.error(ProviderError::malformed(format!(
            "{vendor} finished tool call {id:?} ({name}) with arguments that are not valid JSON ({why}): {}; {}",
            excerpt(arguments),
            advice(ProviderErrorKind::MalformedStream)
        )));
        return;
    }
    out.push(StreamEvent::ToolCallEnd { id: id.to_owned() });
}

/// The signature envelope. A thinking block's opaque signature bytes are a
/// sequence of records, each `tag (4 bytes) | text length (u32 BE) |
/// payload length (u32 BE) | payload`. The text length says how many bytes
/// of the block's text (after the previous record's text) the record
/// belongs to, so blocks the host merged can be split apart again.
pub(crate) fn record(tag: &[u8; 4], text_len: usize, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + payload.len());
    out.extend_from_slice(tag);
    out.extend_from_slice(&u32::try_from(text_len).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(payload);
    out
}

/// One piece of a thinking block, split by its signature records.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Piece<'a> {
    /// The record's tag, or `None` for trailing text with no record.
    pub(crate) tag: Option<[u8; 4]>,
    /// The text the record covers.
    pub(crate) text: &'a str,
    /// The record's payload.
    pub(crate) payload: &'a [u8],
}

/// Splits a thinking block into its signed pieces; `None` when the
/// signature is not a well-formed envelope (from another provider).
pub(crate) fn pieces<'a>(text: &'a str, signature: Option<&'a [u8]>) -> Option<Vec<Piece<'a>>> {
    let mut bytes = signature.unwrap_or(&[]);
    let mut at = 0usize;
    let mut out = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 12 {
            return None;
        }
        let tag: [u8; 4] = bytes[..4].try_into().ok()?;
        let text_len = u32::from_be_bytes(bytes[4..8].try_into().ok()?) as usize;
        let payload_len = u32::from_be_bytes(bytes[8..12].try_into().ok()?) as usize;
        let payload = bytes.get(12..12 + payload_len)?;
        let end = at.checked_add(text_len)?;
        let piece_text = text.get(at..end)?;
        out.push(Piece {
            tag: Some(tag),
            text: piece_text,
            payload,
        });
        at = end;
        bytes = &bytes[12 + payload_len..];
    }
    if at < text.len() {
        out.push(Piece {
            tag: None,
            text: &text[at..],
            payload: &[],
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_split_merged_blocks() {
        let mut sig = record(b"ATHK", 5, b"sig1");
        sig.extend(record(b"ARED", 0, b"opaque"));
        sig.extend(record(b"ATHK", 3, b"s2"));
        let got = pieces("helloabcrest", Some(&sig)).unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].text, "hello");
        assert_eq!(got[0].payload, b"sig1");
        assert_eq!(got[1].tag, Some(*b"ARED"));
        assert_eq!(got[1].text, "");
        assert_eq!(got[2].text, "abc");
        assert_eq!(got[3].tag, None);
        assert_eq!(got[3].text, "rest");
        assert_eq!(pieces("x", Some(b"garbage")), None);
        assert_eq!(pieces("ab", Some(&record(b"ATHK", 9, b""))), None);
    }

    #[test]
    fn classification_covers_the_vendor_spellings() {
        use ProviderErrorKind::*;
        assert_eq!(classify(&["overloaded_error"], "Overloaded"), Overloaded);
        assert_eq!(classify(&["rate_limit_error"], ""), RateLimit);
        assert_eq!(classify(&["", "429", "RESOURCE_EXHAUSTED"], ""), RateLimit);
        assert_eq!(
            classify(
                &["invalid_request_error"],
                "prompt is too long: 210000 tokens > 200000 maximum"
            ),
            ContextOverflow
        );
        assert_eq!(
            classify(&["invalid_request_error", "context_length_exceeded"], ""),
            ContextOverflow
        );
        assert_eq!(classify(&["authentication_error"], ""), Auth);
        assert_eq!(classify(&["not_found_error"], ""), ModelUnavailable);
        assert_eq!(classify(&["api_error"], ""), Overloaded);
        assert_eq!(classify(&["invalid_request_error"], "bad"), InvalidRequest);
        // Groq: the model's tool call did not parse; a retry samples anew.
        assert_eq!(
            classify(
                &["invalid_request_error", "tool_use_failed", "400"],
                "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details."
            ),
            MalformedStream
        );
        assert_eq!(classify(&["weird"], "?"), Transport);
    }

    #[test]
    fn google_retry_delay_is_read() {
        let error: Value = serde_json::json!({"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]});
        let got = error_object("Google", &error);
        assert_eq!(got.kind, ProviderErrorKind::RateLimit);
        assert_eq!(got.retry_after_ms, Some(7000));
    }
}
