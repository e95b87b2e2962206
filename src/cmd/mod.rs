//! Subcommands. One module per command; each exposes `Args` and `run`.

pub mod bench;
pub mod config;
pub mod trust;
pub mod session;
pub mod eval;
pub mod rpc;
pub mod mcp;
pub mod models;
pub mod auth;
pub mod replay;
pub mod tui;
