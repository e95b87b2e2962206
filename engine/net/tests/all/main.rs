//! Integration tests for smith-net: the HTTP engine against local plain and
//! TLS servers, and the SSE reader against recorded provider streams.
#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

mod allocs;
mod http;
mod server;
mod sse;

#[global_allocator]
static ALLOC: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();
