//! The `smith` binary's single integration-test binary; one module per command.

mod architecture;
mod checkpoint;
mod default;
mod diag_audit;
mod eval;
mod models_auth;
mod replay;
mod rewind;
mod secrets;
mod trees;
