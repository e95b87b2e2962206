//! `smith context [--json]`: what every request carries before the
//! conversation, measured.
//!
//! Loads the enabled extension plugins as a run does, assembles the system
//! prompt for the current folder from their fragments (static ones and the
//! per-turn ones of a first turn) and lists each fragment — source plugin,
//! id, order, size in bytes, estimated tokens, static or per-turn — then
//! each tool definition's share (the built-in tools, then each plugin's),
//! and the totals ([`smith_host::context::Report`]). Tokens are estimated
//! as bytes / 3, rounded up, as the runtime estimates them.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_host::context::Report;

/// `smith context`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `smith context`.
///
/// # Errors
///
/// When the current folder cannot be read or standard output cannot be
/// written; plugins that cannot be loaded are warnings.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir()?;
    // The instances belong to no session: their host effects are kept in
    // memory only.
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (mut plugins, warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    let mut report = Report::new(&cwd, &mut plugins);
    report.warnings.splice(0..0, warnings);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.to_json())?)?;
        return Ok(0);
    }
    for warning in &report.warnings {
        smith_host::extensions::warn(warning);
    }
    write!(out, "{}", report.text())?;
    Ok(0)
}
