//! `smith plugin list | info NAME | install PATH | uninstall NAME
//! [--purge-data] | enable NAME | disable NAME | reload NAME`, and the
//! marketplaces in Claude Code's format: `smith plugin marketplace add
//! SOURCE | list | update | remove`, `smith plugin install
//! PLUGIN@MARKETPLACE`, `smith plugin enable|disable PLUGIN@MARKETPLACE
//! --hooks --mcp --commands` (see [`smith_host::marketplace`]).
//!
//! Plugins live in three roots: built-in (embedded), user
//! (`$DATA/plugins/<org>/<name>/`) and project (`.smith/plugins/<org>/<name>/`,
//! loaded only when the project is trusted). Install validates in staging
//! and runs no plugin code.

use std::path::PathBuf;
use std::time::Instant;

use smith_host::marketplace::{EXTRAS, Extra, Installed, Source, Store};

use smith_host::plugins::{component, disabled, discover, not_found, user_root, write_disabled};

use smith_config::Paths;
use smith_diag::{Diagnostic, Surface};
use smith_plugins::builtin::BUILTINS;
use smith_plugins::manifest;
use smith_plugins::{ExtensionComponent, ProviderComponent};

/// `smith plugin`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// List built-in, user and project plugins with their state, and the
    /// plugins installed from marketplaces with what they bring.
    List {
        /// One JSON document: the plugins installed from marketplaces.
        #[arg(long)]
        json: bool,
    },
    /// Show one plugin's manifest, location and state (`org/name`, or
    /// `PLUGIN@MARKETPLACE`).
    Info {
        /// The plugin (`org/name` or `PLUGIN@MARKETPLACE`).
        name: String,
    },
    /// Install a plugin folder (with plugin.kdl) into the user root, or
    /// `PLUGIN@MARKETPLACE` from a marketplace added with `smith plugin
    /// marketplace add` (its skills and agents become `PLUGIN:NAME`).
    Install {
        /// The plugin folder, or `PLUGIN@MARKETPLACE`.
        path: PathBuf,
    },
    /// Remove a user plugin (its data folder stays unless --purge-data),
    /// or a plugin installed from a marketplace (`PLUGIN@MARKETPLACE`).
    Uninstall {
        /// The plugin (`org/name` or `PLUGIN@MARKETPLACE`).
        name: String,
        /// Also remove the plugin's data folder.
        #[arg(long)]
        purge_data: bool,
    },
    /// Enable a disabled plugin, or what a marketplace plugin declares:
    /// `smith plugin enable PLUGIN@MARKETPLACE --hooks --mcp --commands`.
    Enable {
        /// The plugin (`org/name` or `PLUGIN@MARKETPLACE`).
        name: String,
        #[command(flatten)]
        extras: ExtraFlags,
    },
    /// Disable a plugin without removing it, or (`PLUGIN@MARKETPLACE
    /// --hooks --mcp --commands`) what a marketplace plugin declares.
    Disable {
        /// The plugin (`org/name` or `PLUGIN@MARKETPLACE`).
        name: String,
        #[command(flatten)]
        extras: ExtraFlags,
    },
    /// Compile (or load from the cache) and instantiate a plugin afresh, as
    /// a reload does, and report how long it took.
    Reload {
        /// The plugin (`org/name`).
        name: String,
    },
    /// Marketplaces of plugins in Claude Code's format
    /// (.claude-plugin/marketplace.json).
    Marketplace {
        #[command(subcommand)]
        command: MarketSub,
    },
}

/// What of a marketplace plugin `enable` and `disable` act on.
#[derive(Debug, Clone, Copy, clap::Args)]
struct ExtraFlags {
    /// Its hooks (hooks/hooks.json, plugin.json `hooks`), run by
    /// smith/hooks.
    #[arg(long)]
    hooks: bool,
    /// Its MCP servers (.mcp.json, plugin.json `mcpServers`), started by
    /// smith/mcp.
    #[arg(long)]
    mcp: bool,
    /// Its commands (commands/*.md), offered as /PLUGIN:COMMAND.
    #[arg(long)]
    commands: bool,
}

impl ExtraFlags {
    fn kinds(self) -> Vec<Extra> {
        [
            (self.hooks, Extra::Hooks),
            (self.mcp, Extra::Mcp),
            (self.commands, Extra::Commands),
        ]
        .into_iter()
        .filter_map(|(on, kind)| on.then_some(kind))
        .collect()
    }
}

/// `smith plugin enable|disable PLUGIN@MARKETPLACE --hooks --mcp
/// --commands`.
fn enable_extras(paths: &Paths, name: &str, extras: ExtraFlags, on: bool) -> anyhow::Result<u8> {
    let store = store(paths);
    let kinds = extras.kinds();
    let verb = if on { "enable" } else { "disable" };
    if kinds.is_empty() {
        let Some(p) = store.installed().into_iter().find(|p| p.id() == name) else {
            return Err(store.not_installed(name).into());
        };
        let declared: Vec<&str> = EXTRAS
            .into_iter()
            .filter(|k| !p.declared(*k).is_empty())
            .map(Extra::flag)
            .collect();
        let d = Diagnostic::error(
            "marketplace.what-to-enable",
            format!("`smith plugin {verb} {name}` names nothing to {verb}"),
            "a marketplace plugin's skills and agents are always on; its hooks, MCP servers and commands are enabled each by a flag",
            if declared.is_empty() {
                format!("{name} declares no hooks, MCP servers or commands; there is nothing to {verb}")
            } else {
                format!("run `smith plugin {verb} {name} {}` (or fewer of the flags)", declared.join(" "))
            },
        )
        .with_surface(Surface::other("the command line"))
        .with_example(format!("smith plugin {verb} {name} --hooks"));
        crate::report::diagnostic(&d);
        return Ok(2);
    }
    let p = store.set_enabled(name, &kinds, on)?;
    let nouns: Vec<&str> = kinds.iter().map(|k| k.noun()).collect();
    println!("{verb}d the {} of {}", nouns.join(" and "), p.id());
    for line in brings(&p) {
        println!("  {line}");
    }
    print_warning(p.not_run());
    Ok(0)
}

#[derive(Debug, clap::Subcommand)]
enum MarketSub {
    /// Add a marketplace: a local folder, an https:// .tar.gz/.tgz/.zip
    /// archive, or a git repository (`https://host/owner/repo`, or
    /// `owner/repo` for GitHub), fetched through smith's HTTP engine.
    Add {
        /// The folder, address or `owner/repo`.
        source: String,
        /// The name to add it under (default: the name its
        /// marketplace.json gives).
        #[arg(long)]
        name: Option<String>,
    },
    /// List the marketplaces added, with their source, revision and
    /// plugins.
    List {
        /// One JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Fetch a marketplace (or every one) again from its source; a failed
    /// fetch leaves the previous copy.
    Update {
        /// The marketplace (default: every one).
        name: Option<String>,
    },
    /// Remove a marketplace (once no plugin installed from it is left).
    Remove {
        /// The marketplace.
        name: String,
    },
}

/// The marketplace store in smith's configuration folder.
fn store(paths: &Paths) -> Store {
    Store::new(&paths.config_dir)
}

/// `PLUGIN@MARKETPLACE` rather than a folder.
fn marketplace_spec(text: &str) -> bool {
    text.contains('@') && !text.contains('/') && !std::path::Path::new(text).exists()
}

fn when(seconds: u64) -> String {
    smith_host::marketplace::utc(seconds)
}

/// What an installed marketplace plugin brings, as lines.
fn brings(p: &Installed) -> Vec<String> {
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    let mut lines = vec![
        format!("skills: {}", list(&p.skills)),
        format!("agents: {}", list(&p.agents)),
    ];
    let named = |kinds: Vec<Extra>| -> Vec<String> {
        kinds
            .into_iter()
            .map(|k| format!("{} {}", k.noun(), p.declared(k).join(", ")))
            .collect()
    };
    let enabled = named(
        EXTRAS
            .into_iter()
            .filter(|k| p.is_enabled(*k) && !p.declared(*k).is_empty())
            .collect(),
    );
    if !enabled.is_empty() {
        lines.push(format!("enabled: {}", enabled.join("; ")));
    }
    let idle = p.idle();
    if !idle.is_empty() {
        lines.push(format!(
            "declared, not run until enabled (`{}`): {}",
            p.enable_command(&idle),
            named(idle.clone()).join("; ")
        ));
    }
    lines
}

fn print_warning(d: Option<smith_diag::Diagnostic>) {
    if let Some(d) = d {
        crate::report::diagnostic(&d);
    }
}

fn marketplace(paths: &Paths, command: MarketSub) -> anyhow::Result<u8> {
    let store = store(paths);
    match command {
        MarketSub::Add { source, name } => {
            let cwd = std::env::current_dir()?;
            let source = Source::parse(&source, &cwd)?;
            let (added, notes) = store.add(&source, name.as_deref(), false)?;
            let plugins = store.catalog(&added.name)?;
            println!(
                "added the marketplace {} from {} ({} plugins){}",
                added.name,
                added.source,
                plugins.len(),
                added
                    .revision
                    .as_deref()
                    .map(|r| format!(" at {r}"))
                    .unwrap_or_default()
            );
            for note in notes {
                println!("  note: {note}");
            }
            println!(
                "  install one with `smith plugin install PLUGIN@{}`; `smith plugin marketplace list` shows its plugins",
                added.name
            );
            Ok(0)
        }
        MarketSub::List { json } => {
            let all = store.list();
            if json {
                let value: Vec<serde_json::Value> = all
                    .iter()
                    .map(|m| {
                        let plugins: Vec<serde_json::Value> = store
                            .catalog(&m.name)
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(name, version, description)| {
                                serde_json::json!({"name": name, "version": version, "description": description})
                            })
                            .collect();
                        serde_json::json!({
                            "name": m.name,
                            "source": m.source,
                            "kind": m.kind,
                            "revision": m.revision,
                            "fetched_at": m.fetched_at,
                            "dir": m.dir.display().to_string(),
                            "plugins": plugins,
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::from(value));
                return Ok(0);
            }
            if all.is_empty() {
                println!(
                    "No marketplace added. Add one with `smith plugin marketplace add SOURCE` (a folder, an https:// archive or git repository, or owner/repo)."
                );
            }
            for m in &all {
                println!(
                    "{}  {} {}{}  fetched {}",
                    m.name,
                    m.kind,
                    m.source,
                    m.revision
                        .as_deref()
                        .map(|r| format!(" at {r}"))
                        .unwrap_or_default(),
                    when(m.fetched_at)
                );
                for (name, version, description) in store.catalog(&m.name).unwrap_or_default() {
                    println!(
                        "    {name}@{}{}  — {description}",
                        m.name,
                        version.map(|v| format!(" {v}")).unwrap_or_default()
                    );
                }
            }
            Ok(0)
        }
        MarketSub::Update { name } => {
            let names: Vec<String> = match name {
                Some(name) => vec![name],
                None => store.list().into_iter().map(|m| m.name).collect(),
            };
            let mut failed = false;
            for name in names {
                match store.update(&name) {
                    Ok((m, notes)) => {
                        println!(
                            "updated the marketplace {}{}",
                            m.name,
                            m.revision
                                .as_deref()
                                .map(|r| format!(" to {r}"))
                                .unwrap_or_default()
                        );
                        for note in notes {
                            println!("  note: {note}");
                        }
                        let installed: Vec<String> = store
                            .installed()
                            .iter()
                            .filter(|p| p.marketplace == m.name)
                            .map(Installed::id)
                            .collect();
                        if !installed.is_empty() {
                            println!(
                                "  the plugins installed from it stay as they are; install them again to update them: {}",
                                installed
                                    .iter()
                                    .map(|p| format!("`smith plugin install {p}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            );
                        }
                    }
                    Err(d) => {
                        crate::report::diagnostic(&d);
                        failed = true;
                    }
                }
            }
            Ok(u8::from(failed))
        }
        MarketSub::Remove { name } => {
            store.remove(&name)?;
            println!("removed the marketplace {name}");
            Ok(0)
        }
    }
}

/// Runs `smith plugin`.
///
/// # Errors
///
/// When the smith directories cannot be resolved.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let paths = Paths::from_process()?;
    let disabled_list = disabled(&paths);
    let state = |name: &str, problem: &Option<String>| match problem {
        Some(why) => format!("disabled: {why}"),
        None if disabled_list.iter().any(|d| d == name) => {
            "disabled (smith plugin enable to turn it on)".to_owned()
        }
        None => "enabled".to_owned(),
    };
    match args.command {
        Sub::Marketplace { command } => marketplace(&paths, command),
        Sub::List { json: true } => {
            let value: Vec<serde_json::Value> = store(&paths)
                .installed()
                .iter()
                .map(Installed::to_json_with_dir)
                .collect();
            println!("{}", serde_json::json!({ "marketplace_plugins": value }));
            Ok(0)
        }
        Sub::Info { name } if marketplace_spec(&name) => {
            let Some(p) = store(&paths)
                .installed()
                .into_iter()
                .find(|p| p.id() == name)
            else {
                return Err(store(&paths).not_installed(&name).into());
            };
            println!(
                "name: {}\nmarketplace: {}\nversion: {}\nsource: {}\nrevision: {}\ninstalled: {}\nfolder: {}",
                p.plugin,
                p.marketplace,
                p.version.as_deref().unwrap_or("none given"),
                p.source,
                p.revision
                    .as_deref()
                    .unwrap_or("none (a folder of the marketplace)"),
                when(p.installed_at),
                p.dir.display()
            );
            for line in brings(&p) {
                println!("{line}");
            }
            println!("{}", p.description);
            print_warning(p.not_run());
            Ok(0)
        }
        Sub::Install { path } if marketplace_spec(&path.to_string_lossy()) => {
            let spec = path.to_string_lossy().into_owned();
            let (p, notes) = store(&paths).install(&spec)?;
            println!(
                "installed {}{} into {}",
                p.id(),
                p.version
                    .as_deref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default(),
                p.dir.display()
            );
            for line in brings(&p) {
                println!("  {line}");
            }
            for note in notes {
                println!("  note: {note}");
            }
            print_warning(p.disabled_again_warning());
            print_warning(p.not_run());
            Ok(0)
        }
        Sub::Uninstall { name, .. } if marketplace_spec(&name) => {
            let p = store(&paths).uninstall(&name)?;
            println!(
                "uninstalled {} (its skills and agents are gone: {})",
                p.id(),
                if p.skills.is_empty() && p.agents.is_empty() {
                    "it had none".to_owned()
                } else {
                    [p.skills.clone(), p.agents.clone()].concat().join(", ")
                }
            );
            Ok(0)
        }
        Sub::List { json: false } => {
            for b in BUILTINS {
                println!(
                    "{:<24} {:<10} built-in  {}  — {}",
                    b.name,
                    b.world,
                    state(b.name, &None),
                    b.description
                );
            }
            let (found, note) = discover(&paths);
            for f in &found {
                match &f.manifest {
                    Some(m) => println!(
                        "{:<24} {:<10} {:<8}  {}  — {}",
                        m.name,
                        m.world,
                        f.root,
                        state(&m.name, &f.problem),
                        m.description
                    ),
                    None => println!(
                        "{:<24} {:<10} {:<8}  invalid: {}",
                        f.dir.display(),
                        "?",
                        f.root,
                        f.problem.as_deref().unwrap_or("")
                    ),
                }
            }
            if let Some(note) = note {
                println!("\n{note}");
            }
            let installed = store(&paths).installed();
            if !installed.is_empty() {
                println!("\nFrom marketplaces (skills and agents named PLUGIN:NAME):");
            }
            for p in &installed {
                println!(
                    "{:<24} {:<10} {}  — {}",
                    p.id(),
                    p.version.as_deref().unwrap_or("-"),
                    p.source,
                    p.description
                );
                for line in brings(p) {
                    println!("    {line}");
                }
            }
            Ok(0)
        }
        Sub::Info { name } => {
            if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
                println!(
                    "name: {}\nworld: {}\nroot: built-in\nstate: {}\ncomponent: {} bytes\ncapabilities: {}\n{}",
                    b.name,
                    b.world,
                    state(b.name, &None),
                    b.component.len(),
                    capability_list(b.capabilities.iter().map(|(k, v)| (*k, *v))),
                    b.description
                );
                return Ok(0);
            }
            let (found, _) = discover(&paths);
            let Some((f, m)) = found.iter().find_map(|f| {
                f.manifest
                    .as_ref()
                    .filter(|m| m.name == name)
                    .map(|m| (f, m))
            }) else {
                return Err(not_found(&name).into());
            };
            println!(
                "name: {}\nversion: {}\nworld: {}\napi: {}\nroot: {} ({})\nstate: {}\nmemory limit: {} MiB\ncapabilities: {}\n{}",
                m.name,
                m.version,
                m.world,
                m.api,
                f.root,
                f.dir.display(),
                state(&m.name, &f.problem),
                m.memory_limit_mib,
                capability_list(m.capabilities.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
                m.description
            );
            Ok(0)
        }
        Sub::Install { path } => match manifest::install(&path, &user_root(&paths)) {
            Ok(m) => {
                println!(
                    "installed {} {} into {}",
                    m.name,
                    m.version,
                    manifest::plugin_dir(&user_root(&paths), &m.name).display()
                );
                if let Some(why) = m.unsupported() {
                    println!("  it stays disabled: {why}");
                }
                Ok(0)
            }
            Err(e) => Err(anyhow::Error::from(e).context("smith plugin install")),
        },
        Sub::Uninstall { name, purge_data } => {
            match manifest::uninstall(&user_root(&paths), &name, purge_data) {
                Ok(()) => {
                    println!(
                        "uninstalled {name}{}",
                        if purge_data {
                            " and its data"
                        } else {
                            " (its data folder is kept; --purge-data removes it)"
                        }
                    );
                    Ok(0)
                }
                Err(e) => Err(anyhow::Error::from(e).context("smith plugin uninstall")),
            }
        }
        Sub::Enable { name, extras } if marketplace_spec(&name) => {
            enable_extras(&paths, &name, extras, true)
        }
        Sub::Disable { name, extras } if marketplace_spec(&name) => {
            enable_extras(&paths, &name, extras, false)
        }
        Sub::Enable { extras, .. } | Sub::Disable { extras, .. } if !extras.kinds().is_empty() => {
            let d = Diagnostic::error(
                "plugin.extras-of-wasm",
                "--hooks, --mcp and --commands apply to a plugin installed from a marketplace",
                "a wasm plugin is enabled or disabled whole",
                "pass PLUGIN@MARKETPLACE (see `smith plugin list`), or leave the flags out",
            )
            .with_surface(Surface::other("the command line"))
            .with_example("smith plugin enable hookify@claude-plugins-official --hooks");
            crate::report::diagnostic(&d);
            Ok(2)
        }
        Sub::Enable { name, .. } | Sub::Disable { name, .. } if !manifest::valid_name(&name) => {
            let d = Diagnostic::error(
                "plugin.invalid-name",
                format!("{name:?} is not a plugin name"),
                "a plugin name is org/name, each part made of a-z, 0-9, _ and -",
                "run `smith plugin list` to see the plugins' names and pass one of them",
            )
            .with_value(format!("{name:?}"))
            .with_surface(Surface::other("the command line"))
            .with_example("smith plugin enable example/greeter");
            crate::report::diagnostic(&d);
            Ok(2)
        }
        Sub::Enable { name, .. } => {
            let list: Vec<String> = disabled_list.into_iter().filter(|d| *d != name).collect();
            write_disabled(&paths, &list)?;
            println!("enabled {name}");
            Ok(0)
        }
        Sub::Disable { name, .. } => {
            let mut list = disabled_list;
            if !list.contains(&name) {
                list.push(name.clone());
            }
            write_disabled(&paths, &list)?;
            println!("disabled {name}");
            Ok(0)
        }
        Sub::Reload { name } => reload(&paths, &name),
    }
}

/// `fs-read "notes", ui`, or `none`.
pub(crate) fn capability_list<'a>(
    capabilities: impl Iterator<Item = (&'a str, &'a str)>,
) -> String {
    let list: Vec<String> = capabilities
        .map(|(k, v)| {
            if v.is_empty() {
                k.to_owned()
            } else {
                format!("{k} {v:?}")
            }
        })
        .collect();
    if list.is_empty() {
        "none".to_owned()
    } else {
        list.join(", ")
    }
}

fn reload(paths: &Paths, name: &str) -> anyhow::Result<u8> {
    let (world, bytes, limits) = component(paths, name)?;
    let start = Instant::now();
    let before = smith_plugins::compile_count();
    let precompiled_before = smith_plugins::precompiled_load_count();
    let result = if world == "provider" {
        ProviderComponent::load(name, &bytes, Some(&paths.cache_dir), limits)
            .and_then(|c| c.instantiate(&[]).map(|_| ()))
    } else if world == "search-provider" {
        smith_plugins::SearchComponent::load(name, &bytes, Some(&paths.cache_dir), limits)
            .and_then(|c| c.instantiate_with(None).map(|_| ()))
    } else {
        ExtensionComponent::load(name, &bytes, Some(&paths.cache_dir), limits)
            .and_then(|c| c.instantiate().map(|_| ()))
    };
    match result {
        Ok(()) => {
            let compiled = smith_plugins::compile_count() > before;
            let precompiled = smith_plugins::precompiled_load_count() > precompiled_before;
            println!(
                "reloaded {name} in {:.2} ms ({})",
                start.elapsed().as_secs_f64() * 1000.0,
                if compiled {
                    "compiled and cached"
                } else if precompiled {
                    "precompiled in smith"
                } else {
                    "from the cache"
                }
            );
            Ok(0)
        }
        Err(e) => Err(anyhow::Error::from(e).context("smith plugin reload")),
    }
}
