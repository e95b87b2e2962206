//! Vendor adapters for smith's provider plugins.
//!
//! Each adapter turns the normalized [`Request`] into an [`HttpExchange`]
//! (URL, headers with credentials only as opaque `{{credential:SLOT}}`
//! handles the host substitutes, and a JSON body) and decodes the streamed
//! response body, fed in chunks split anywhere, into normalized
//! [`StreamEvent`]s ending in exactly one terminal event:
//!
//! - [`anthropic`] — the Messages API;
//! - [`openai`] — the Responses API and Chat Completions;
//! - [`google`] — Gemini `streamGenerateContent?alt=sse`;
//! - [`models`] — each vendor's model listing, page by page;
//! - [`openai_compatible`] — the Chat Completions dialect at any base URL
//!   (OpenRouter, Ollama, llama.cpp server, vLLM, LM Studio), with their
//!   quirks.
//!
//! The crate depends only on `std`, `serde` and `serde_json`, so it builds
//! for `wasm32-wasip2` and runs inside the provider plugins; it does not
//! know the host. Its [`types`] mirror the host's provider contract field
//! for field and serialize to the same JSON.
//!
//! Shared rules: a request uses only what the model advertises
//! ([`Capabilities`]); tools offered to a model without tool use fail
//! before dispatch; thinking asked of a model without thinking is omitted.
//! A body cut before the vendor's end marker finishes with a
//! `malformed_stream` error, never a `stop`. Error responses (a bare JSON
//! body, any status) and in-stream error events become typed errors.
//! Thinking signatures are carried as a small envelope of records
//! (tag, text length, payload) inside the opaque signature bytes, so blocks
//! the host merges can be split and returned to the vendor exactly.

#![deny(missing_docs)]

pub mod anthropic;
mod chat;
mod common;
mod diag;
pub mod google;
pub mod models;
pub mod openai;
pub mod openai_compatible;
pub mod settings;
pub mod sse;
pub mod types;

pub use common::{Capabilities, Config, ThinkingLevel, credential_handle};
pub use diag::DIAGNOSABLE;
pub use settings::SETTINGS;
pub use types::{
    ContentBlock, Decoder, HttpExchange, Message, OpaqueBytes, ProviderError, ProviderErrorKind,
    Request, StopReason, StreamEvent, ToolCall, ToolSpec, Usage,
};
