//! `smith plugin list | info NAME | install PATH | uninstall NAME
//! [--purge-data] | enable NAME | disable NAME | reload NAME`.
//!
//! Plugins live in three roots: built-in (embedded), user
//! (`$DATA/plugins/<org>/<name>/`) and project (`.smith/plugins/<org>/<name>/`,
//! loaded only when the project is trusted). Install validates in staging
//! and runs no plugin code.

use std::path::PathBuf;
use std::time::Instant;

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
    /// List built-in, user and project plugins with their state.
    List,
    /// Show one plugin's manifest, location and state.
    Info {
        /// The plugin (`org/name`).
        name: String,
    },
    /// Install a plugin folder (with plugin.kdl) into the user root.
    Install {
        /// The plugin folder.
        path: PathBuf,
    },
    /// Remove a user plugin (its data folder stays unless --purge-data).
    Uninstall {
        /// The plugin (`org/name`).
        name: String,
        /// Also remove the plugin's data folder.
        #[arg(long)]
        purge_data: bool,
    },
    /// Enable a disabled plugin.
    Enable {
        /// The plugin (`org/name`).
        name: String,
    },
    /// Disable a plugin without removing it.
    Disable {
        /// The plugin (`org/name`).
        name: String,
    },
    /// Compile (or load from the cache) and instantiate a plugin afresh, as
    /// a reload does, and report how long it took.
    Reload {
        /// The plugin (`org/name`).
        name: String,
    },
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
        Sub::List => {
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
        Sub::Enable { name } | Sub::Disable { name } if !manifest::valid_name(&name) => {
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
        Sub::Enable { name } => {
            let list: Vec<String> = disabled_list.into_iter().filter(|d| *d != name).collect();
            write_disabled(&paths, &list)?;
            println!("enabled {name}");
            Ok(0)
        }
        Sub::Disable { name } => {
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
            println!(
                "reloaded {name} in {:.2} ms ({})",
                start.elapsed().as_secs_f64() * 1000.0,
                if compiled {
                    "compiled and cached"
                } else {
                    "from the cache"
                }
            );
            Ok(0)
        }
        Err(e) => Err(anyhow::Error::from(e).context("smith plugin reload")),
    }
}
