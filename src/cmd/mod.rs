//! Subcommands. One module per command; each exposes `Args` and `run`.

pub mod acp;
pub mod agents;
pub mod auth;
pub mod bench;
pub mod checkpoint;
pub mod completions;
pub mod config;
pub mod context;
pub mod doctor;
pub mod eval;
pub mod export;
pub mod help;
pub mod hooks;
pub mod mcp;
pub mod models;
pub mod plugin;
pub mod release;
pub mod replay;
pub mod rpc;
pub mod sandbox;
pub mod secret;
pub mod session;
pub mod skills;
pub mod stats;
pub mod trust;
pub mod tui;
pub mod update;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Makes `dir` (given with `--cwd`) the process's working directory, so
/// that everything found from it — the project's configuration and trust,
/// its plugins — is found from `dir`, as if smith had been started there;
/// the `files` named on the command line keep meaning what they meant where
/// it was started (relative ones are made absolute first). Returns `dir`,
/// absolute.
///
/// # Errors
///
/// A diagnostic naming `dir` when it cannot be opened or entered.
pub fn enter_cwd<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = &'a mut Option<PathBuf>>,
) -> anyhow::Result<PathBuf> {
    let unusable = |why: String, next: &str| {
        smith_diag::Diagnostic::error(
            "cli.invalid-value",
            format!("--cwd {} cannot be used", dir.display()),
            why,
            next,
        )
        .with_value(dir.display())
    };
    let absolute = std::fs::canonicalize(dir).map_err(|e| {
        unusable(
            format!("the folder could not be opened: {e}"),
            "give an existing folder to --cwd",
        )
    })?;
    let here = std::env::current_dir().context("could not read the current directory")?;
    for path in files.into_iter().flatten() {
        if path.is_relative() {
            *path = here.join(&*path);
        }
    }
    std::env::set_current_dir(&absolute).map_err(|e| {
        unusable(
            format!("smith could not work in it: {e}"),
            "give a folder smith may enter to --cwd",
        )
    })?;
    Ok(absolute)
}
