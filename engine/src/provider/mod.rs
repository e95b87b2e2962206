//! The vendor-neutral provider contract, as the engine uses it.
//!
//! The contract itself — requests, messages, stream events, usage, pricing,
//! errors, exchanges, model and provider info, the [`Provider`] trait and
//! the stream [`Validator`] — is defined once in `smith-contract` and
//! re-exported here. A provider turns a normalized [`Request`] into an
//! [`Exchange`] and the response body's chunks back into [`StreamEvent`]s;
//! the host — never the provider — moves the bytes ([`Transport`]), so a
//! provider running inside a wasm sandbox needs no capability beyond the
//! contract.
//!
//! Every stream is checked by [`stream::Validator`]: exactly one terminal
//! event (`stop` or `error`), no events after it, tool call deltas only for
//! open calls. A stream that breaks the rules, or ends without a terminal
//! event, fails with a [`ProviderErrorKind::MalformedStream`] error.
//!
//! Vendor knowledge never appears here: there are no wire formats, endpoints
//! or credential names in this module.

pub mod record;
pub mod scripted;
pub mod transport;

pub use smith_contract::media::MediaSupport;
pub use smith_contract::stream;
pub use smith_contract::{
    AssistantTurn, ContentBlock, Exchange, HttpExchange, Interrupt, LocalChunk, Media, MediaType,
    Message, ModelInfo, OpaqueBytes, Pricing, Provider, ProviderError, ProviderErrorKind,
    ProviderInfo, Request, StopReason, StreamEvent, ToolCall, ToolSpec, Usage, Validator,
};
pub use transport::{HostTransport, Transport};
