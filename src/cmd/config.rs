//! `smith config show [KEY] [--sources] [--json]` and
//! `smith config set KEY VALUE [--project]`.
//!
//! `show` accepts every option's own flag (`--model`, `--tui-theme`, ...),
//! generated from the option table, so the command-line layer of the
//! precedence can be seen taking effect.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use clap::{Arg, ArgMatches, Command, FromArgMatches};
use smith_config::options::{self, OptionDecl};
use smith_config::plugin::PluginEntry;
use smith_config::{Config, ConfigError, Loader};
use smith_diag::{Diagnostic, Surface};
use smith_engine::journal::{EffectJournal, MemoryJournal};
pub(crate) use smith_host::output::{report, style};

/// `smith config`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCommand {
    /// Show resolved values and where each came from.
    Show(ShowArgs),
    /// Save one option to the user (or project) configuration file, keeping its comments and formatting.
    Set(SetArgs),
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    /// Only this option, by its dotted key (e.g. `tui.theme`).
    key: Option<String>,
    /// List every layer that set each value, the one in effect first.
    #[arg(long)]
    sources: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    overrides: Overrides,
}

#[derive(Debug, clap::Args)]
struct SetArgs {
    /// The option's dotted key (e.g. `tui.theme`).
    key: String,
    /// The new value, as text (`true`, `120`, `dark`, `~/sessions`).
    value: String,
    /// Write the project's `.smith/config.kdl` instead of the user configuration.
    #[arg(long)]
    project: bool,
}

/// One flag per declared option, generated from the option table; each
/// given flag becomes a command-line override.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `(flag, raw value)` pairs in table order.
    pub values: Vec<(&'static str, String)>,
}

impl Overrides {
    /// Adds the overrides to `loader`.
    pub fn apply(&self, mut loader: Loader) -> Loader {
        for (flag, raw) in &self.values {
            loader = loader.flag(flag, raw);
        }
        loader
    }
}

impl FromArgMatches for Overrides {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let values = options::ALL
            .iter()
            .filter_map(|d| {
                matches
                    .get_one::<String>(d.key)
                    .map(|v| (d.flag, v.clone()))
            })
            .collect();
        Ok(Overrides { values })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Overrides::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for Overrides {
    fn augment_args(cmd: Command) -> Command {
        options::ALL.iter().fold(cmd, |cmd, d: &&OptionDecl| {
            cmd.arg(
                Arg::new(d.key)
                    .long(d.flag.trim_start_matches('-'))
                    .value_name("VALUE")
                    .help(d.help)
                    .help_heading("Option overrides"),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Overrides::augment_args(cmd)
    }
}

/// Runs `smith config`.
///
/// # Errors
///
/// Only when standard output cannot be written; configuration problems are
/// reported as diagnostics with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        ConfigCommand::Show(a) => show(a),
        ConfigCommand::Set(a) => set(a),
    }
}

fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
    overrides.apply(Loader::from_process()?).load()
}

fn show(args: ShowArgs) -> anyhow::Result<u8> {
    let config = match load(&args.overrides) {
        Ok(c) => c,
        Err(e) => {
            report(e.diagnostic(), args.json, style(None));
            return Ok(1);
        }
    };
    let style = style(Some(&config));
    // The options plugins declare, with the defaults they contribute.
    let (config, plugin_warnings) = with_plugins(&args.overrides, config);
    let plugin_entries: Vec<&PluginEntry> = match &args.key {
        Some(key) => config.plugin_entry(key).into_iter().collect(),
        None => config.plugin_entries().iter().collect(),
    };
    let entries: Vec<&smith_config::Entry> = match &args.key {
        Some(_) if !plugin_entries.is_empty() => Vec::new(),
        Some(key) => match options::lookup(
            key,
            Surface::other("the KEY argument of `smith config show`"),
        ) {
            Ok(decl) => config.entry(decl.key).into_iter().collect(),
            Err(e) => {
                report(e.diagnostic(), args.json, style);
                return Ok(1);
            }
        },
        None => config.entries().iter().collect(),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut json = serde_json::json!({
            "options": entries.iter().map(|e| e.to_json(args.sources)).collect::<Vec<_>>(),
            "warnings": config.warnings().iter().map(Diagnostic::to_json).collect::<Vec<_>>(),
        });
        if !plugin_entries.is_empty() {
            json["plugin_options"] = plugin_entries
                .iter()
                .map(|e| e.to_json(args.sources))
                .collect();
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(0);
    }
    for w in config.warnings() {
        eprint!("{}", w.render_terminal(style));
        smith_diag::log::report(w);
    }
    for w in &plugin_warnings {
        smith_host::extensions::warn(w);
    }
    let width = entries
        .iter()
        .map(|e| e.decl.key.len())
        .chain(plugin_entries.iter().map(|e| e.option.key.len()))
        .max()
        .unwrap_or(0);
    for entry in entries {
        let key = entry.decl.key;
        match (entry.value(), entry.source()) {
            (Some(value), Some(source)) => {
                writeln!(out, "{key:<width$} = {value}  ({source})")?;
            }
            _ => writeln!(out, "{key:<width$} unset: {}", entry.decl.unset)?,
        }
        if args.sources {
            for (i, (value, source)) in entry.layers.iter().enumerate() {
                let mark = if i == 0 { "*" } else { " " };
                writeln!(
                    out,
                    "  {mark} {:<10} {value}  ({source})",
                    source.level().as_str()
                )?;
            }
        }
    }
    for entry in plugin_entries {
        let key = &entry.option.key;
        if let (Some(value), Some(source)) = (entry.value(), entry.source()) {
            writeln!(out, "{key:<width$} = {value}  ({source})")?;
        }
        if args.sources {
            for (i, (value, source)) in entry.layers.iter().enumerate() {
                let mark = if i == 0 { "*" } else { " " };
                writeln!(
                    out,
                    "  {mark} {:<10} {value}  ({source})",
                    source.level().as_str()
                )?;
            }
        }
    }
    Ok(0)
}

/// `config` resolved again with the enabled extension plugins'
/// contributions (their defaults and their own options), with the warnings
/// about plugins and contributions left out. Plugins that cannot be loaded
/// leave `config` as it is.
fn with_plugins(overrides: &Overrides, config: Config) -> (Config, Vec<String>) {
    // The instances belong to no session: their host effects are kept in
    // memory only.
    let journal: Arc<dyn EffectJournal> = Arc::new(MemoryJournal::new());
    let ids = Arc::new(AtomicU64::new(1));
    let (plugins, mut warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    let Ok(loader) = Loader::from_process() else {
        return (config, warnings);
    };
    match smith_host::plugin_config::resolve_with(overrides.apply(loader), &plugins) {
        Ok((resolved, notes)) => {
            warnings.extend(notes);
            (resolved, warnings)
        }
        Err(_) => (config, warnings),
    }
}

fn set(args: SetArgs) -> anyhow::Result<u8> {
    smith_host::settings::set(&args.key, &args.value, args.project)
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _};
    use smith_config::Source;

    use super::*;

    #[test]
    fn every_option_gets_its_declared_flag() {
        let cmd = Overrides::augment_args(Command::new("show").no_binary_name(true));
        let matches = cmd
            .try_get_matches_from([
                "--model",
                "big",
                "--tui-theme",
                "light",
                "--net-head-timeout-s",
                "9",
            ])
            .unwrap();
        let o = Overrides::from_arg_matches(&matches).unwrap();
        assert_eq!(
            o.values,
            vec![
                ("--model", "big".to_owned()),
                ("--tui-theme", "light".to_owned()),
                ("--net-head-timeout-s", "9".to_owned()),
            ]
        );
        let cmd = Overrides::augment_args(Command::new("show"));
        for decl in options::ALL {
            assert!(
                cmd.get_arguments()
                    .any(|a| a.get_long() == Some(decl.flag.trim_start_matches('-'))),
                "{}",
                decl.flag
            );
        }
    }

    #[test]
    fn overrides_reach_the_flag_layer() {
        let dir = std::env::temp_dir().join(format!("smith-cmd-config-{}", std::process::id()));
        let o = Overrides {
            values: vec![("--model", "m".to_owned())],
        };
        let config = o
            .apply(Loader::new(smith_config::Paths::under(&dir)))
            .load()
            .unwrap();
        assert_eq!(config.str(&options::MODEL), Some("m"));
        assert_eq!(
            config.source(&options::MODEL),
            Some(&Source::Flag {
                flag: "--model".to_owned()
            })
        );
    }
}
