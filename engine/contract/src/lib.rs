//! The contract between smith's host and its providers, and the one
//! cancellation token.
//!
//! A provider turns a normalized [`Request`] into an [`Exchange`] (what the
//! host must send), and turns the response body's chunks back into
//! normalized [`StreamEvent`]s. This mirrors the plugin `provider` world one
//! to one: `encode(request) -> exchange`, `decode(chunk) ->
//! list<stream-event>`, `finish() -> list<stream-event>`. The host — never
//! the provider — moves the bytes, so a provider running inside a wasm
//! sandbox needs no capability beyond the contract, and moving a provider
//! from native Rust into a plugin changes no engine code: the plugin host
//! only implements [`Provider`] by calling the guest.
//!
//! Every stream is checked by [`Validator`]: exactly one terminal event
//! (`stop` or `error`), no events after it, tool call deltas only for open
//! calls. A stream that breaks the rules, or ends without a terminal event,
//! fails with a [`ProviderErrorKind::MalformedStream`] error.
//!
//! This crate is the one definition of these types. The engine re-exports
//! them (`smith_engine::provider`), the vendor adapters (`smith-providers`)
//! encode and decode them, and the built-in guest plugins compile them for
//! `wasm32-wasip2`; their JSON shapes are what session files, mock scripts
//! and the protocol carry. It depends only on `std`, `serde` and
//! `serde_json`, and knows no vendor: there are no wire formats, endpoints
//! or credential names here.
//!
//! [`CancelToken`] is the cooperative cancellation flag the run hands to
//! everything working for it: the provider exchange, the HTTP engine, the
//! tools and model list refreshes share the same token.
//!
//! With the `scripted` feature, [`scripted`] holds the mock script format
//! and the scripted provider that plays it (`docs/mock-provider.md`), used
//! by the host, the smith/mock plugin and the test kit alike.
#![deny(missing_docs)]

mod cancel;
pub mod media;
#[cfg(feature = "scripted")]
pub mod scripted;
pub mod stream;
pub mod summary;
mod types;

pub use cancel::CancelToken;
pub use media::{Media, MediaBytes, MediaType};
pub use stream::{AssistantTurn, CutOffCall, Validator};
pub use types::{
    ContentBlock, Exchange, HttpExchange, Interrupt, LocalChunk, Message, ModelInfo, OpaqueBytes,
    Pricing, Provider, ProviderError, ProviderErrorKind, ProviderInfo, Request, StopReason,
    StreamEvent, ToolCall, ToolSpec, Usage,
};
