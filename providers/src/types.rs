//! The normalized request and event types, and the streaming [`Decoder`]
//! every adapter implements.
//!
//! The types are the host's provider contract itself (`smith-contract`),
//! re-exported: the guest glue and the host see the very same definitions
//! and JSON shapes. Vendor knowledge never appears here.

pub use smith_contract::{
    ContentBlock, HttpExchange, Media, MediaType, Message, OpaqueBytes, ProviderError,
    ProviderErrorKind, Request, StopReason, StreamEvent, ToolCall, ToolSpec, Usage,
};

/// A streaming decoder for one response body: feed every body chunk to
/// [`Decoder::decode`] in order, then call [`Decoder::finish`] once.
///
/// The events of one body end with exactly one terminal event (`stop` or
/// `error`); nothing follows it. A body that ends before the vendor's end
/// marker finishes with a `malformed_stream` error, never a `stop`.
pub trait Decoder {
    /// Turns one body chunk (split anywhere) into zero or more events.
    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent>;

    /// Called once after the last chunk; flushes what is buffered and emits
    /// the terminal event if none was emitted yet.
    fn finish(&mut self) -> Vec<StreamEvent>;
}
