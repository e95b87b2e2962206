//! `smith skills list [--json]`: the skills smith/skills finds here — each
//! skill's name, description, level and source file, which one shadows
//! which, and the SKILL.md files it could not read with the reason.
//!
//! The listing is the plugin's own (its `/skills` command, run on an
//! instance loaded as a run loads it), so the command and the interface
//! never disagree about discovery.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_engine::journal::{EffectJournal, MemoryJournal};
use smith_plugins::extension::{Action, IntentKind};

/// The plugin that owns skills.
const PLUGIN: &str = "smith/skills";

/// Manage skills (SKILL.md folders).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// List the skills: name, description, level (project or global), source file, what shadows what, and files that could not be read with the reason.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `smith skills`.
///
/// # Errors
///
/// When smith/skills is disabled or fails, or standard output cannot be
/// written.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let Sub::List { json } = args.command;
    list_through(PLUGIN, "skills", json)
}

/// Prints the listing a built-in plugin's `/NOUN` command gives (`--json`
/// with `json`), run on an instance that belongs to no session: what
/// `smith skills list` and `smith agents list` print.
///
/// # Errors
///
/// When `plugin` is disabled or fails, or standard output cannot be
/// written.
pub(crate) fn list_through(plugin: &str, noun: &str, json: bool) -> anyhow::Result<u8> {
    // The instance belongs to no session: its host effects stay in memory.
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (mut plugins, warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    for warning in &warnings {
        smith_host::extensions::warn(warning);
    }
    let Some(loaded) = plugins.iter_mut().find(|p| p.name() == plugin) else {
        anyhow::bail!(
            "no {noun} are listed: the built-in plugin {plugin} is not loaded (it is disabled, or failed to load as a warning above says); `smith plugin enable {plugin}` turns it back on"
        );
    };
    let actions = loaded
        .run_command(noun, if json { "--json" } else { "" })
        .map_err(|err| anyhow::anyhow!("{plugin} could not list the {noun}: {err}"))?;
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
