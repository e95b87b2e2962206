//! Machine frontends over the smith agent runtime: JSON-RPC, MCP and ACP.
//!
//! All speak JSON-RPC 2.0 over standard input and output with strictly
//! LF-delimited records ([`jsonrpc`]: framing, parsing, correlated errors
//! with what/why/next diagnostics, a shared writer), and both record every
//! effect in a session before it runs (the runtime is started through
//! [`smith_host::runtime`]: provider, recording session, extensions).
//!
//! - [`rpc`] — `smith rpc`: drives the agent runtime. Requests become
//!   runtime commands; runtime events stream out as notifications in the
//!   runtime's order; `wait_settled` resolves only when the runtime is idle.
//!   See `docs/rpc.md`.
//! - [`mcp`] — `smith mcp`: a Model Context Protocol server. The built-in
//!   tools are MCP tools (through the same tool contract and effect
//!   journal), sessions are resources, long calls report progress and can be
//!   cancelled; with extension plugins loaded, their `tool-call`
//!   decisions run before each call and their questions are asked through
//!   MCP elicitation. See `docs/mcp.md`.
//! - [`acp`] — `smith acp`: the Agent Client Protocol, for editors. Each
//!   ACP session is a runtime over a smith session; runtime events stream
//!   out as `session/update`s, approvals are `session/request_permission`.
//!   See `docs/acp.md`.
//!
//! Standard output carries protocol records only; everything else goes to
//! standard error.

#![deny(missing_docs)]

pub mod acp;
mod diag;
mod elicit;
pub mod jsonrpc;
pub mod mcp;
pub mod rpc;
mod setup;

pub use acp::{AcpInterrupter, AcpServer};
pub use diag::DIAGNOSABLE;
pub use jsonrpc::{Output, RpcError};
pub use mcp::{McpInterrupter, McpOptions, McpServer};
pub use rpc::{Interrupter, RpcServer};
pub use setup::SetupError;
pub use smith_host::{Extensions, Live, LiveProviders, RuntimeOptions, SessionChoice};
