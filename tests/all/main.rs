//! The `smith` binary's single integration-test binary; one module per command.

mod eval;
mod replay;
mod models_auth;
