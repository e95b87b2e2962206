//! smith-rpc's single integration-test binary; one module per area.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod allocs;
mod framing;
mod mcp_revisions;
mod mcp_shapes;
mod rpc_inprocess;
mod support;

#[global_allocator]
static ALLOC: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();
