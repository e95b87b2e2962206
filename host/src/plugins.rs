//! Plugin discovery: where plugins live, which ones the user disabled, and
//! the plugin folders found under the user root and (in a trusted project)
//! the project's `.smith/plugins`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use smith_config::Paths;
use smith_config::trust::{Project, TrustStatus, TrustStore};
use smith_diag::{Diagnostic, Surface};
use smith_plugins::builtin::BUILTINS;
use smith_plugins::manifest::Manifest;
use smith_plugins::{Limits, OwnedWasm};

/// A plugin folder found under a plugin root.
#[derive(Debug)]
pub struct Found {
    /// Its manifest, when it parsed.
    pub manifest: Option<Manifest>,
    /// Why it cannot be loaded (a bad manifest, a newer API generation).
    pub problem: Option<String>,
    /// The folder.
    pub dir: PathBuf,
    /// Which root: `user` or `project`.
    pub root: &'static str,
}

/// The user plugin root.
pub fn user_root(paths: &Paths) -> PathBuf {
    paths.data_dir.join("plugins")
}

/// The file listing the plugins the user disabled, one name a line.
pub fn disabled_file(paths: &Paths) -> PathBuf {
    user_root(paths).join("disabled.txt")
}

/// The names of the plugins the user disabled.
pub fn disabled(paths: &Paths) -> Vec<String> {
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
        let (manifest, problem) = match smith_plugins::manifest::read_manifest(&file) {
            Ok(text) => match Manifest::parse(&text, &origin) {
                Ok(m) => {
                    let why = m.unsupported();
                    (Some(m), why)
                }
                Err(e) => (None, Some(e.message)),
            },
            Err(message) => (None, Some(message)),
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
pub fn discover(paths: &Paths) -> (Vec<Found>, Option<String>) {
    let mut found = Vec::new();
    scan(&user_root(paths), "user", &mut found);
    let note = project_plugins(paths, &mut found);
    (found, note)
}

/// Writes the list of disabled plugins.
///
/// # Errors
///
/// When the data directory cannot be written.
pub fn write_disabled(paths: &Paths, list: &[String]) -> anyhow::Result<()> {
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

/// The plugin `name` (a built-in, or a user or trusted project plugin) as
/// its world, its component (a built-in's as the binary embeds it, not
/// copied, hashed or decompressed; another's bytes read from its file) and
/// the limits it runs under.
///
/// # Errors
///
/// No such plugin, a plugin that cannot be loaded, or an unreadable
/// component.
pub fn component(paths: &Paths, name: &str) -> anyhow::Result<(String, OwnedWasm, Limits)> {
    let found = if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
        (
            b.world.to_owned(),
            OwnedWasm::Embedded(b.component),
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
        (m.world.clone(), OwnedWasm::Bytes(bytes), limits)
    };
    Ok(found)
}

/// No plugin is named `name`.
pub fn not_found(name: &str) -> Diagnostic {
    Diagnostic::error(
        "plugin.not-found",
        format!("no plugin named {name:?}"),
        "the name matches no built-in, user or trusted project plugin",
        "run `smith plugin list` to see the plugins and pass one of their names",
    )
    .with_value(format!("{name:?}"))
    .with_surface(Surface::other("the command line"))
}
