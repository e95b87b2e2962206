//! `smith agents list [--json]`: the custom agents smith/agents finds here
//! — each agent's name, description, tools, model, level and source file,
//! which one shadows which, and the agent files it could not read with the
//! reason.
//!
//! The listing is the plugin's own (its `/agents` command, run on an
//! instance loaded as a run loads it), so the command and the interface
//! never disagree about discovery.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_plugins::extension::{Action, IntentKind};

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
    // The instance belongs to no session: its host effects stay in memory.
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (mut plugins, warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    for warning in &warnings {
        smith_host::extensions::warn(warning);
    }
    let Some(plugin) = plugins.iter_mut().find(|p| p.name() == PLUGIN) else {
        anyhow::bail!(
            "no agents are listed: the built-in plugin {PLUGIN} is not loaded (it is disabled, or failed to load as a warning above says); `smith plugin enable {PLUGIN}` turns it back on"
        );
    };
    let actions = plugin
        .run_command("agents", if json { "--json" } else { "" })
        .map_err(|err| anyhow::anyhow!("{PLUGIN} could not list the agents: {err}"))?;
    let mut out = std::io::stdout().lock();
    for action in actions {
        if let Action::Ui(intent) = action
            && let IntentKind::Notify(text) = intent.kind
        {
            if json {
                let value: serde_json::Value = serde_json::from_str(&text)?;
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                writeln!(out, "{text}")?;
            }
        }
    }
    Ok(0)
}
