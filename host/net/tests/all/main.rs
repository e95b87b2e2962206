//! Integration tests for smith-net: the HTTP engine against local plain and
//! TLS servers.
#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

mod http;
mod policy;
mod server;
