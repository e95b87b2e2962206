//! Configuration in KDL: option declarations, precedence, sources, project
//! trust, and the user directories.
//!
//! Every option smith reads is declared once in [`options`]; that declaration
//! gives its KDL key, flag, environment variable, type, default and help.
//! A [`Loader`] gathers the seven layers — product defaults, built-in plugin
//! defaults, plugin contributions, the user file, the trusted project file,
//! `SMITH_*` variables, command-line flags — and resolves each option to a
//! [`Value`] with the [`Source`] it came from ([`Config`]). Invalid values
//! fail with a [`smith_diag::Diagnostic`] naming the file position, variable
//! or flag, the key, and a fix; unknown keys follow their section's
//! [`options::UnknownPolicy`].
//!
//! Project configuration and anything else under a project's `.smith` apply
//! only after the user trusts it ([`trust`]). Plugin handlers change values at
//! runtime only ([`Config::set_runtime`]); options plugins declare for
//! themselves are resolved beside the table's ([`plugin`]); only [`edit::set_in_file`] (used by
//! `smith config set`) writes, keeping comments and formatting.
//!
//! [`permissions`] reads the permission rules of the `permissions` block
//! (user file, then trusted project file: [`Config::permission_rules`]);
//! [`mcp`] the MCP servers of the `mcp` block ([`Config::mcp_servers`]).
//!
//! [`check`] reads each layer on its own with the loader's code, keeping
//! every problem instead of stopping at the first (`smith doctor`).
//!
//! [`paths`] says where user files live (`SMITH_HOME` overrides all of it);
//! other crates use it, e.g. `smith_config::paths::data_dir()`.
#![deny(missing_docs)]

pub mod check;
pub mod docs;
pub mod edit;
mod error;
mod file;
pub mod mcp;
pub mod nesting;
pub mod options;
pub mod paths;
pub mod permissions;
pub mod plugin;
mod resolve;
mod sha256;
mod source;
mod suggest;
pub mod trust;
mod value;

pub use error::{ConfigError, DIAGNOSABLE, ErrorKind};
pub use paths::Paths;
pub use resolve::{Config, Entry, Loader};
pub use source::{Level, Source};
pub use value::Value;
