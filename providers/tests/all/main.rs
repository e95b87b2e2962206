//! Integration tests for smith-providers: golden decodes of recorded real
//! streams, cuts at every byte offset, arbitrary chunk splits, request
//! encoding, quirks of OpenAI-compatible servers, signature round trips, and
//! the SSE parser on its own.

#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

mod conformance;
mod cuts;
mod encode;
mod faults;
mod golden;
mod listings;
mod media;
mod quirks;
mod sse;
mod support;
