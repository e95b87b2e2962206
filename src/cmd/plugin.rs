//! `smith plugin list | info NAME | install PATH | uninstall NAME
//! [--purge-data] | enable NAME | disable NAME | reload NAME`.
//!
//! Plugins live in three roots: built-in (embedded), user
//! (`$DATA/plugins/<org>/<name>/`) and project (`.smith/plugins/<org>/<name>/`,
//! loaded only when the project is trusted). Install validates in staging
//! and runs no plugin code.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use smith_config::Paths;
use smith_config::trust::{Project, TrustStatus, TrustStore};
use smith_diag::{Diagnostic, Surface};
use smith_plugins::builtin::BUILTINS;
use smith_plugins::manifest::{self, Manifest};
use smith_plugins::{ExtensionComponent, Limits, ProviderComponent};

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

/// A plugin folder found under a plugin root.
pub(crate) struct Found {
    /// Its manifest, when it parsed.
    pub(crate) manifest: Option<Manifest>,
    /// Why it cannot be loaded (a bad manifest, a newer API generation).
    pub(crate) problem: Option<String>,
    /// The folder.
    pub(crate) dir: PathBuf,
    /// Which root: `user` or `project`.
    pub(crate) root: &'static str,
}

/// The user plugin root.
pub(crate) fn user_root(paths: &Paths) -> PathBuf {
    paths.data_dir.join("plugins")
}

fn disabled_file(paths: &Paths) -> PathBuf {
    user_root(paths).join("disabled.txt")
}

/// The names of the plugins the user disabled.
pub(crate) fn disabled(paths: &Paths) -> Vec<String> {
    std::fs::read_to_string(disabled_file(paths))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn scan(root: &Path, label: &'static str, out: &mut Vec<Found>) {
    let Ok(orgs) = std::fs::read_dir(root) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = orgs
        .flatten()
        .filter(|o| {
            o.file_type().is_ok_and(|t| t.is_dir())
                && !o.file_name().to_string_lossy().starts_with('.')
        })
        .flat_map(|org| {
            std::fs::read_dir(org.path())
                .into_iter()
                .flatten()
                .flatten()
                .map(|p| p.path())
        })
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let file = dir.join("plugin.kdl");
        let origin = file.display().to_string();
        let (manifest, problem) = match std::fs::read_to_string(&file) {
            Ok(text) => match Manifest::parse(&text, &origin) {
                Ok(m) => {
                    let why = m.unsupported();
                    (Some(m), why)
                }
                Err(e) => (None, Some(e.message)),
            },
            Err(e) => (None, Some(format!("cannot read {origin}: {e}"))),
        };
        out.push(Found {
            manifest,
            problem,
            dir,
            root: label,
        });
    }
}

fn project_plugins(paths: &Paths, out: &mut Vec<Found>) -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    let project = Project::discover(&cwd, paths.home.as_deref())?;
    let dir = project.plugins_dir();
    if !dir.is_dir() {
        return None;
    }
    let trusted = TrustStore::open(&paths.trust_file())
        .ok()
        .and_then(|store| store.status(&project).ok())
        .is_some_and(|s| matches!(s, TrustStatus::Trusted));
    if trusted {
        scan(&dir, "project", out);
        None
    } else {
        Some(format!(
            "project plugins in {} are not loaded: the project is not trusted (run `smith trust` after reviewing its .smith directory)",
            dir.display()
        ))
    }
}

/// Every user plugin, then (in a trusted project) every project plugin;
/// the note says why project plugins were not looked at.
pub(crate) fn discover(paths: &Paths) -> (Vec<Found>, Option<String>) {
    let mut found = Vec::new();
    scan(&user_root(paths), "user", &mut found);
    let note = project_plugins(paths, &mut found);
    (found, note)
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
fn capability_list<'a>(capabilities: impl Iterator<Item = (&'a str, &'a str)>) -> String {
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

fn write_disabled(paths: &Paths, list: &[String]) -> anyhow::Result<()> {
    let file = disabled_file(paths);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = list.join("\n");
    text.push('\n');
    std::fs::write(&file, text).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e}; check that the data directory is writable",
            file.display()
        )
    })
}

fn reload(paths: &Paths, name: &str) -> anyhow::Result<u8> {
    let (world, bytes, limits) = if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
        (
            b.world.to_owned(),
            b.component.to_vec(),
            crate::settings::process_plugin_limits(),
        )
    } else {
        let (found, _) = discover(paths);
        let Some((f, m)) = found.iter().find_map(|f| {
            f.manifest
                .as_ref()
                .filter(|m| m.name == name)
                .map(|m| (f, m))
        }) else {
            return Err(not_found(name).into());
        };
        if let Some(why) = &f.problem {
            return Err(Diagnostic::error(
                "plugin.disabled",
                format!("plugin {name:?} is disabled: {why}"),
                "a disabled plugin is not loaded, so it cannot be reloaded",
                "fix what makes it disabled (see `smith plugin info NAME`), then reload it",
            )
            .with_value(format!("{name:?}"))
            .with_surface(Surface::plugin(name))
            .into());
        }
        let file = f.dir.join(&m.component);
        let bytes = std::fs::read(&file).with_context(|| {
            format!(
                "cannot read the component {}; reinstall the plugin with `smith plugin install PATH`",
                file.display()
            )
        })?;
        let limits = Limits {
            memory_bytes: (m.memory_limit_mib as usize) << 20,
            ..crate::settings::process_plugin_limits()
        };
        (m.world.clone(), bytes, limits)
    };
    let start = Instant::now();
    let before = smith_plugins::compile_count();
    let result = if world == "provider" {
        ProviderComponent::load(name, &bytes, Some(&paths.cache_dir), limits)
            .and_then(|c| c.instantiate(&[]).map(|_| ()))
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

/// No plugin is named `name`.
fn not_found(name: &str) -> Diagnostic {
    Diagnostic::error(
        "plugin.not-found",
        format!("no plugin named {name:?}"),
        "the name matches no built-in, user or trusted project plugin",
        "run `smith plugin list` to see the plugins and pass one of their names",
    )
    .with_value(format!("{name:?}"))
    .with_surface(Surface::other("the command line"))
}
