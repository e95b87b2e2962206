//! Subcommands. One module per command; each exposes `Args` and `run`.

pub mod auth;
pub mod bench;
pub mod checkpoint;
pub mod config;
pub mod context;
pub mod eval;
pub mod help;
pub mod mcp;
pub mod models;
pub mod plugin;
pub mod replay;
pub mod rpc;
pub mod secret;
pub mod session;
pub mod trust;
pub mod tui;
