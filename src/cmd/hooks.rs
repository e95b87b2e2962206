//! `smith hooks list`: the hook commands smith/hooks finds here — each
//! hook's event, matcher, command, timeout and source file, whether it
//! runs (an untrusted project's do not), the entries smith does not run
//! and the files it could not read.
//!
//! The listing is the plugin's own (its `/hooks` command, run on an
//! instance loaded as a run loads it), so the command and the interface
//! never disagree.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_plugins::extension::{Action, IntentKind};

/// The plugin that runs hooks.
const PLUGIN: &str = "smith/hooks";

/// Manage hook commands.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// List the hook commands: event, matcher, command, timeout, source file and whether they run, then entries smith does not run and files it could not read.
    List,
}

/// Runs `smith hooks`.
///
/// # Errors
///
/// When smith/hooks is disabled or fails, or standard output cannot be
/// written.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let Sub::List = args.command;
    // The instance belongs to no session: its host effects stay in memory.
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (mut plugins, warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    for warning in &warnings {
        smith_host::extensions::warn(warning);
    }
    let Some(plugin) = plugins.iter_mut().find(|p| p.name() == PLUGIN) else {
        anyhow::bail!(
            "no hooks are listed: the built-in plugin {PLUGIN} is not loaded (it is disabled, or failed to load as a warning above says); `smith plugin enable {PLUGIN}` turns it back on"
        );
    };
    let actions = plugin
        .run_command("hooks", "")
        .map_err(|err| anyhow::anyhow!("{PLUGIN} could not list the hooks: {err}"))?;
    let mut out = std::io::stdout().lock();
    for action in actions {
        if let Action::Ui(intent) = action
            && let IntentKind::Notify(text) = intent.kind
        {
            writeln!(out, "{text}")?;
        }
    }
    Ok(0)
}
