//! The engine's single integration-test binary; one module per area.

mod agent;
mod provider;
mod replay;
mod tools;
