//! The engine's single integration-test binary; one module per area.

mod agent;
mod compact;
mod hooks;
mod media;
mod provider;
mod replay;
mod secrets;
mod tools;
mod turn_alloc;

// Exact allocation counts (turn_alloc) need the accounting allocator.
#[global_allocator]
static ALLOC: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();
