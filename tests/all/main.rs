//! The `smith` binary's single integration-test binary; one module per command.

mod default;
mod eval;
mod models_auth;
mod replay;
