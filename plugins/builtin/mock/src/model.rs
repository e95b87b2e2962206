//! Mirrors of the engine's normalized types with the same JSON shapes, so
//! scripts, chunks and the demo's usage numbers are byte-identical to the
//! native scripted provider's.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};

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
    },
}

impl Message {
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
            Message::User { text } => text.clone(),
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

/// Token accounting. A field the provider did not report stays `None`;
/// unknown never becomes zero.
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

/// One body chunk of a local exchange.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalChunk {
    /// Milliseconds to wait before delivering the chunk.
    pub delay_ms: u64,
    /// The chunk's bytes.
    pub bytes: Vec<u8>,
}
