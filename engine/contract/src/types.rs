//! The normalized provider types: requests and messages, stream events,
//! usage and pricing, typed errors, exchanges, model and provider info, and
//! the [`Provider`] trait.

use serde::{Deserialize, Serialize};

use crate::media::Media;

/// Opaque bytes (thinking signatures). Projected to JSON as lowercase hex so
/// they round-trip exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpaqueBytes(pub Vec<u8>);

impl Serialize for OpaqueBytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut text = String::with_capacity(self.0.len() * 2);
        for byte in &self.0 {
            text.push(hex_digit(byte >> 4));
            text.push(hex_digit(byte & 0x0f));
        }
        serializer.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for OpaqueBytes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        decode_hex(&text).map(OpaqueBytes).map_err(|why| {
            serde::de::Error::custom(format!(
                "opaque bytes {text:?} are not valid lowercase hex: {why}; write two hex digits per byte"
            ))
        })
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}

fn decode_hex(text: &str) -> Result<Vec<u8>, &'static str> {
    if !text.len().is_multiple_of(2) {
        return Err("odd number of digits");
    }
    let value = |c: u8| -> Result<u8, &'static str> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err("a character outside 0-9a-f"),
        }
    };
    text.as_bytes()
        .chunks(2)
        .map(|pair| Ok(value(pair[0])? << 4 | value(pair[1])?))
        .collect()
}

/// One normalized conversation message, as sent to providers and recorded
/// in sessions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Input from the user (a prompt, a delivered steer or follow-up, or a
    /// runtime notice addressed to the model).
    User {
        /// The text.
        text: String,
        /// Images and documents attached to the text, in order (an
        /// `@shot.png` mention); absent in sessions written before media.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<Media>,
    },
    /// A model response.
    Assistant {
        /// Text, thinking and tool call blocks in stream order.
        content: Vec<ContentBlock>,
        /// Why the response ended.
        stop: StopReason,
    },
    /// The result of one tool call; always follows the assistant message
    /// that made the call, in call order.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The text shown to the model.
        content: String,
        /// Whether the call failed.
        is_error: bool,
        /// Images and documents the tool returned (a `read` of a PNG),
        /// after the text; absent in sessions written before media.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<Media>,
    },
}

impl Message {
    /// A user message of `text` alone.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            text: text.into(),
            media: Vec::new(),
        }
    }

    /// The media parts of a user message or tool result (empty for
    /// others).
    pub fn media(&self) -> &[Media] {
        match self {
            Message::User { media, .. } | Message::ToolResult { media, .. } => media,
            Message::Assistant { .. } => &[],
        }
    }

    /// The tool calls of an assistant message, in order (empty for others).
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        let blocks: &[ContentBlock] = match self {
            Message::Assistant { content, .. } => content,
            _ => &[],
        };
        blocks.iter().filter_map(|block| match block {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The concatenated text blocks of an assistant message, or a user
    /// message's text.
    pub fn text(&self) -> String {
        match self {
            Message::User { text, .. } => text.clone(),
            Message::Assistant { content, .. } => {
                let mut out = String::new();
                for block in content {
                    if let ContentBlock::Text { text } = block {
                        out.push_str(text);
                    }
                }
                out
            }
            Message::ToolResult { content, .. } => content.clone(),
        }
    }
}

/// One block of an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning; the signature round-trips to the provider untouched.
    Thinking {
        /// The reasoning text.
        text: String,
        /// Opaque provider signature bytes, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<OpaqueBytes>,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
}

/// A complete tool call as the model made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (pairs the call with its result).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments. Text that did not parse as JSON is kept as a JSON
    /// string so validation can reject it with the text in hand.
    pub arguments: serde_json::Value,
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// A normalized provider request: everything a provider needs, nothing
/// vendor-specific.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model id as the provider knows it.
    pub model: String,
    /// The system prompt, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The active tools.
    pub tools: Vec<ToolSpec>,
    /// The output token limit for this response, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

impl Request {
    /// The media parts of every message, oldest first.
    pub fn media(&self) -> impl Iterator<Item = &Media> {
        self.messages.iter().flat_map(Message::media)
    }

    /// Whether any message carries media.
    pub fn has_media(&self) -> bool {
        self.media().next().is_some()
    }
}

/// Token accounting. A field the provider did not report stays `None`;
/// unknown never becomes zero. `input` counts input tokens that were neither
/// read from nor written to a cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens.
    pub input: Option<u64>,
    /// Output tokens.
    pub output: Option<u64>,
    /// Input tokens read from the provider's cache.
    pub cache_read: Option<u64>,
    /// Input tokens written to the provider's cache.
    pub cache_write: Option<u64>,
}

impl Usage {
    /// Overlays `newer` onto `self`: fields `newer` reports replace ours.
    pub fn overlay(&mut self, newer: &Usage) {
        self.input = newer.input.or(self.input);
        self.output = newer.output.or(self.output);
        self.cache_read = newer.cache_read.or(self.cache_read);
        self.cache_write = newer.cache_write.or(self.cache_write);
    }

    /// Adds `other` field by field; a field unknown on either side is
    /// unknown in the sum.
    pub fn add(&self, other: &Usage) -> Usage {
        let sum = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_add(b?));
        Usage {
            input: sum(self.input, other.input),
            output: sum(self.output, other.output),
            cache_read: sum(self.cache_read, other.cache_read),
            cache_write: sum(self.cache_write, other.cache_write),
        }
    }
}

/// Price per million tokens, in US dollars.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Input price.
    pub input: f64,
    /// Output price.
    pub output: f64,
    /// Cache read price.
    pub cache_read: f64,
    /// Cache write price.
    pub cache_write: f64,
}

impl Pricing {
    /// The cost of `usage`, or `None` when input or output usage is unknown.
    /// Unknown cache fields count as no cache use.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        Some(
            per(usage.input?, self.input)
                + per(usage.output?, self.output)
                + per(usage.cache_read.unwrap_or(0), self.cache_read)
                + per(usage.cache_write.unwrap_or(0), self.cache_write),
        )
    }
}

/// Why a response ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished.
    End,
    /// The model wants tool results.
    ToolUse,
    /// The output limit cut the response off.
    Limit,
    /// The response was aborted.
    Abort,
    /// The response failed.
    Error,
}

/// What kind of provider failure happened; drives retry and failover.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// Too many requests; see `retry_after_ms`.
    RateLimit,
    /// The provider is overloaded.
    Overloaded,
    /// Credentials are missing, wrong or expired.
    Auth,
    /// The provider rejected the request.
    InvalidRequest,
    /// The model does not exist or is not available.
    ModelUnavailable,
    /// The request does not fit the model's context window.
    ContextOverflow,
    /// The request body is larger than the HTTP engine sends (16 MiB), so
    /// nothing was sent. Deterministic: the same request is refused again.
    RequestTooLarge,
    /// The provider plugin ran out of its memory limit while building the
    /// request. Deterministic: the same request needs the same memory.
    PluginMemory,
    /// The response stream broke the stream rules or ended early.
    MalformedStream,
    /// The exchange could not be carried out (network, missing transport).
    Transport,
}

impl ProviderErrorKind {
    /// The kind's stable name (as in the JSON projection).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::RateLimit => "rate_limit",
            Self::Overloaded => "overloaded",
            Self::Auth => "auth",
            Self::InvalidRequest => "invalid_request",
            Self::ModelUnavailable => "model_unavailable",
            Self::ContextOverflow => "context_overflow",
            Self::RequestTooLarge => "request_too_large",
            Self::PluginMemory => "plugin_memory",
            Self::MalformedStream => "malformed_stream",
            Self::Transport => "transport",
        }
    }
}

/// A typed provider failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderError {
    /// The kind.
    pub kind: ProviderErrorKind,
    /// What happened, why, and what to do next.
    pub message: String,
    /// For rate limits: how long the provider asked us to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ProviderError {
    /// A new error without a retry hint.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// Whether the request is too large as it is — over the model's
    /// window, over the bound on what is sent, or beyond what the provider
    /// plugin can build: never retried or failed over unchanged; a run
    /// answers it by compacting once and trying again.
    pub fn is_too_large(&self) -> bool {
        matches!(
            self.kind,
            ProviderErrorKind::ContextOverflow
                | ProviderErrorKind::RequestTooLarge
                | ProviderErrorKind::PluginMemory
        )
    }

    /// A malformed-stream error.
    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(ProviderErrorKind::MalformedStream, message)
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "provider error ({}): {}",
            self.kind.as_str(),
            self.message
        )?;
        if let Some(ms) = self.retry_after_ms {
            write!(f, " (retry after {ms} ms)")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProviderError {}

/// One normalized stream event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Visible text.
    TextDelta {
        /// The text piece.
        text: String,
    },
    /// Reasoning text, optionally with (a piece of) its opaque signature.
    ThinkingDelta {
        /// The text piece.
        text: String,
        /// Signature bytes, appended to the block's signature.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<OpaqueBytes>,
    },
    /// A tool call begins.
    ToolCallStart {
        /// The call id, unique within the response.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a tool call's JSON argument text.
    ToolCallDelta {
        /// The call id.
        id: String,
        /// The argument text piece.
        arguments: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// The call id.
        id: String,
    },
    /// Token usage so far; later reports overlay earlier ones.
    Usage(Usage),
    /// Terminal: the response ended.
    Stop {
        /// Why.
        reason: StopReason,
    },
    /// Terminal: the response failed.
    Error(ProviderError),
}

impl StreamEvent {
    /// Whether this event ends the stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, StreamEvent::Stop { .. } | StreamEvent::Error(_))
    }
}

/// A model a provider offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id.
    pub id: String,
    /// The context window in tokens, if known.
    pub context_window: Option<u64>,
    /// The output limit in tokens, if known.
    pub max_output_tokens: Option<u32>,
    /// Prices, if known; `None` makes costs unknown.
    pub pricing: Option<Pricing>,
}

/// What a provider says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderInfo {
    /// The provider id (`mock`, ...).
    pub id: String,
    /// The models it offers; the first is its default.
    pub models: Vec<ModelInfo>,
}

/// One body chunk of a local exchange, delivered after a delay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalChunk {
    /// Milliseconds to wait before delivering the chunk (the wait observes
    /// cancellation).
    pub delay_ms: u64,
    /// The chunk's bytes, handed to [`Provider::decode`].
    pub bytes: Vec<u8>,
}

/// An HTTP exchange description for the host's HTTP engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HttpExchange {
    /// The method.
    pub method: String,
    /// The URL.
    pub url: String,
    /// Header names and values; credentials appear only as opaque handles
    /// (`{{credential:SLOT}}`) the host substitutes at the effect boundary.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: Vec<u8>,
}

impl HttpExchange {
    /// The body parsed as JSON, if it is JSON (the vendor adapters' bodies
    /// always are).
    pub fn body_json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What the host must do to get a response body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Exchange {
    /// No network: the body is the given chunks (scripted providers).
    Local {
        /// The body chunks in order.
        chunks: Vec<LocalChunk>,
    },
    /// An HTTP request through the host's HTTP engine.
    Http(HttpExchange),
}

/// The provider contract: what a built-in or plugin provider implements.
///
/// One value serves one conversation; the host calls `encode` once per
/// request, then `decode` for each body chunk in order, then `finish` once
/// when the body ends (completely or not). Errors inside a stream are
/// reported as [`StreamEvent::Error`] events, never by panicking.
pub trait Provider: Send {
    /// Identity and models.
    fn describe(&self) -> ProviderInfo;

    /// Turns a request into the exchange the host performs.
    ///
    /// # Errors
    ///
    /// A typed error when the request cannot be sent (for example a model
    /// the provider does not offer); nothing is sent then.
    fn encode(&mut self, request: &Request) -> Result<Exchange, ProviderError>;

    /// Turns one body chunk into zero or more events.
    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent>;

    /// Called once after the last chunk; flushes buffered events. A provider
    /// must not invent a terminal event for a body that was cut off.
    fn finish(&mut self) -> Vec<StreamEvent>;

    /// Called when a response failed before any of its content (text,
    /// thinking or tool calls) reached the caller: the request could not be
    /// encoded, the exchange failed, or the stream ended in an error first.
    /// Returns how long to wait before [`Provider::encode`] is called again
    /// for the same request (a retry, or failover to another target), or
    /// `None` to give up with `error`, which the provider may amend (for
    /// example with the attempts it made). The default gives up at once.
    fn recover(&mut self, error: &mut ProviderError) -> Option<std::time::Duration> {
        let _ = error;
        None
    }

    /// A function that interrupts a provider call in flight from another
    /// thread, called when the run is aborted. Providers that run foreign
    /// code (plugins) return one; the default has none.
    fn interrupter(&self) -> Option<Interrupt> {
        None
    }

    /// What media the provider sends to `model` and whether the model
    /// reads images, with where that came from. The default: no media
    /// encoder (tools refuse to attach images and documents).
    fn media_support(&mut self, model: &str) -> crate::media::MediaSupport {
        let _ = model;
        crate::media::MediaSupport::default()
    }
}

/// Interrupts a call in flight from another thread (see
/// [`Provider::interrupter`]).
pub type Interrupt = std::sync::Arc<dyn Fn() + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_bytes_round_trip_through_json() {
        let bytes = OpaqueBytes(vec![0, 1, 0xab, 0xff]);
        let json = serde_json::to_string(&bytes).unwrap();
        assert_eq!(json, "\"0001abff\"");
        assert_eq!(serde_json::from_str::<OpaqueBytes>(&json).unwrap(), bytes);
        assert!(serde_json::from_str::<OpaqueBytes>("\"abc\"").is_err());
        assert!(serde_json::from_str::<OpaqueBytes>("\"zz\"").is_err());
    }

    #[test]
    fn unknown_usage_stays_unknown() {
        let known = Usage {
            input: Some(10),
            output: Some(5),
            ..Usage::default()
        };
        let unknown = Usage::default();
        assert_eq!(known.add(&unknown).input, None);
        assert_eq!(known.add(&known).output, Some(10));
        let price = Pricing {
            input: 1.0,
            output: 2.0,
            cache_read: 0.0,
            cache_write: 0.0,
        };
        assert_eq!(price.cost(&unknown), None);
        assert_eq!(price.cost(&known), Some(20.0 / 1_000_000.0));
        let mut overlay = known;
        overlay.overlay(&Usage {
            output: Some(7),
            ..Usage::default()
        });
        assert_eq!(overlay.input, Some(10));
        assert_eq!(overlay.output, Some(7));
    }

    #[test]
    fn stream_events_have_a_tagged_json_shape() {
        let event = StreamEvent::Stop {
            reason: StopReason::ToolUse,
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"stop","reason":"tool_use"}"#
        );
        let err = StreamEvent::Error(ProviderError {
            kind: ProviderErrorKind::RateLimit,
            message: "slow down".into(),
            retry_after_ms: Some(1000),
        });
        assert_eq!(
            serde_json::to_string(&err).unwrap(),
            r#"{"type":"error","kind":"rate_limit","message":"slow down","retry_after_ms":1000}"#
        );
    }
}
