//! The host-owned HTTP engine: synchronous, pure Rust, rustls with bundled
//! Mozilla roots, bounded and observable exchanges, and a streaming SSE reader.
#![deny(missing_docs)]
