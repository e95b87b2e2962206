//! `smith agents list [--json]`: the custom agents smith/agents finds here
//! — each agent's name, description, tools, model, level and source file,
//! which one shadows which, and the agent files it could not read with the
//! reason.
//!
//! The listing is the plugin's own (its `/agents` command, run on an
//! instance loaded as a run loads it), so the command and the interface
//! never disagree about discovery.

use smith_host::agents::PLUGIN;

/// Manage custom agents (NAME.md files).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// List the agents: name, description, tools, model, level (project or global), source file, what shadows what, and files that could not be read with the reason.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `smith agents`.
///
/// # Errors
///
/// When smith/agents is disabled or fails, or standard output cannot be
/// written.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let Sub::List { json } = args.command;
    super::skills::list_through(PLUGIN, "agents", json)
}
