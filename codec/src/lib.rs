//! Canonical CBOR (RFC 8949 core deterministic encoding): encoder, borrowed pull decoder, limits and a JSON bridge.
#![deny(missing_docs)]
