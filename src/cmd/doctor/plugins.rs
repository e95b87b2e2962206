//! Plugins: every built-in, user and (trusted) project plugin with its
//! state and the capabilities it is granted, found as a run finds them
//! ([`smith_host::plugins::discover`]: manifests only, no plugin code
//! runs), and the compiled-component cache: where it is, how big, which
//! components are compiled for this build, and which files are stale —
//! compiled by another wasmtime build, or for a component no plugin has
//! any more. The built-in plugins come precompiled in the binary
//! ([`smith_plugins::builtin::PRECOMPILED`]): when their artifact loads on
//! this machine ([`smith_plugins::Runtime::loads_precompiled`]) they count
//! as compiled before the first run decompresses them into the cache, and
//! the ones used where they lie in the binary
//! ([`smith_plugins::Runtime::loads_in_place`]) never have a cache file:
//! one under their name (an older build's) is stale. The cache keys are
//! the runtime's own
//! ([`smith_plugins::Runtime::cache_file_of`]); nothing is compiled.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::json;
use smith_config::Paths;
use smith_diag::{Diagnostic, Surface};
use smith_plugins::builtin::BUILTINS;
use smith_plugins::{OwnedWasm, Runtime};

use super::Context;
use super::finding::{Area, Finding};
use crate::cmd::plugin::capability_list;

const AREA: Area = Area::Plugins;

/// A component a plugin here would load: its plugin, its bytes (a
/// built-in's as the binary embeds it: its digest is the build's, nothing
/// is hashed or decompressed), whether the plugin is enabled.
struct Component {
    plugin: String,
    bytes: OwnedWasm,
    enabled: bool,
}

/// The findings of the plugins area.
pub fn check(cx: &Context, out: &mut Vec<Finding>) {
    let Some(paths) = &cx.paths else {
        return;
    };
    let disabled = smith_host::plugins::disabled(paths);
    let is_disabled = |name: &str| disabled.iter().any(|d| d == name);
    let mut components = Vec::new();
    for b in BUILTINS {
        let grants = capability_list(b.capabilities.iter().copied());
        let details = json!({
            "plugin": b.name, "world": b.world, "root": "built-in",
            "enabled": !is_disabled(b.name),
            "capabilities": b.capabilities.iter().map(|(k, v)| capability(k, v)).collect::<Vec<_>>(),
        });
        out.push(if is_disabled(b.name) {
            Finding::info(
                AREA,
                "plugins.plugin",
                format!("{} ({}, built-in): disabled", b.name, b.world),
                "you disabled it; runs go without it",
                format!("run `smith plugin enable {}` to turn it back on", b.name),
            )
            .details(details)
        } else {
            Finding::ok(
                AREA,
                "plugins.plugin",
                format!(
                    "{} ({}, built-in): enabled; grants: {grants}",
                    b.name, b.world
                ),
            )
            .details(details)
        });
        components.push(Component {
            plugin: b.name.to_owned(),
            bytes: OwnedWasm::Embedded(b.component),
            enabled: !is_disabled(b.name),
        });
    }
    let (found, note) = smith_host::plugins::discover(paths);
    for f in &found {
        let Some(m) = &f.manifest else {
            out.push(
                Finding::problem(
                    AREA,
                    "plugins.plugin",
                    Diagnostic::warning(
                        "plugin.invalid",
                        format!(
                            "the {} plugin folder {} cannot be loaded",
                            f.root,
                            f.dir.display()
                        ),
                        f.problem
                            .clone()
                            .unwrap_or_else(|| "its manifest is not valid".to_owned()),
                        "fix its plugin.kdl, or remove the folder",
                    )
                    .with_surface(Surface::file(f.dir.join("plugin.kdl"))),
                )
                .details(json!({"dir": f.dir.display().to_string(), "root": f.root})),
            );
            continue;
        };
        let details = json!({
            "plugin": m.name, "version": m.version, "world": m.world, "root": f.root,
            "dir": f.dir.display().to_string(),
            "enabled": f.problem.is_none() && !is_disabled(&m.name),
            "capabilities": m.capabilities.iter().map(|(k, v)| capability(k, v)).collect::<Vec<_>>(),
        });
        let grants = capability_list(m.capabilities.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let label = format!("{} {} ({}, {})", m.name, m.version, m.world, f.root);
        if let Some(why) = &f.problem {
            out.push(
                Finding::problem(
                    AREA,
                    "plugins.plugin",
                    Diagnostic::warning(
                        "plugin.unsupported",
                        format!("{label} is not loaded"),
                        why.clone(),
                        format!(
                            "update smith, or remove the plugin (`smith plugin uninstall {}`)",
                            m.name
                        ),
                    )
                    .with_surface(Surface::plugin(m.name.clone())),
                )
                .details(details),
            );
            continue;
        }
        let file = f.dir.join(&m.component);
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                out.push(Finding::problem(
                    AREA,
                    "plugins.plugin",
                    Diagnostic::warning(
                        "plugin.io",
                        format!("{label}: its component {} cannot be read", file.display()),
                        format!("{e}; a run goes without the plugin and says so"),
                        format!("reinstall it with `smith plugin install PATH`, or remove it (`smith plugin uninstall {}`)", m.name),
                    )
                    .with_surface(Surface::file(&file)),
                ).details(details));
                continue;
            }
        };
        let enabled = !is_disabled(&m.name);
        out.push(if enabled {
            Finding::ok(
                AREA,
                "plugins.plugin",
                format!("{label}: enabled; grants: {grants}"),
            )
            .details(details)
        } else {
            Finding::info(
                AREA,
                "plugins.plugin",
                format!("{label}: disabled"),
                "you disabled it; runs go without it",
                format!("run `smith plugin enable {}` to turn it back on", m.name),
            )
            .details(details)
        });
        components.push(Component {
            plugin: m.name.clone(),
            bytes: OwnedWasm::Bytes(bytes),
            enabled,
        });
    }
    if let Some(note) = note {
        out.push(Finding::info(
            AREA,
            "plugins.project",
            note,
            "a project's own plugins run only once you trust the project",
            "review the project's .smith folder, then run `smith trust`",
        ));
    }
    cache(paths, &components, out);
    if !is_disabled("smith/mcp") {
        mcp_servers(cx, out);
    }
}

/// Whether each configured MCP server answers: only when servers are
/// configured (the `mcp` block, or a `.mcp.json` in the working folder),
/// the plugins are loaded as a run loads them, smith/mcp starts the
/// servers, and each one's state becomes a finding; they stop again.
fn mcp_servers(cx: &Context, out: &mut Vec<Finding>) {
    let configured = cx.config.is_some_and(|c| !c.mcp_servers().is_empty())
        || cx.cwd.join(".mcp.json").is_file();
    if !configured {
        return;
    }
    let check = "plugins.mcp-server";
    let journal: std::sync::Arc<dyn smith_engine::journal::EffectJournal> =
        std::sync::Arc::new(smith_engine::journal::MemoryJournal::new());
    let ids = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
    let (mut plugins, _) = smith_host::extensions::load_into(&journal, &ids, None);
    let listing = plugins
        .iter_mut()
        .find(|p| p.name() == "smith/mcp")
        .and_then(|p| p.run_command("mcp", "--json").ok())
        .and_then(|actions| {
            actions.into_iter().find_map(|action| match action {
                smith_plugins::extension::Action::Ui(intent) => match intent.kind {
                    smith_plugins::extension::IntentKind::Notify(text) => {
                        serde_json::from_str::<serde_json::Value>(&text).ok()
                    }
                    _ => None,
                },
                _ => None,
            })
        });
    drop(plugins);
    let Some(listing) = listing else {
        out.push(Finding::problem(
            AREA,
            check,
            Diagnostic::warning(
                check,
                "the MCP servers could not be checked",
                "smith/mcp did not load or did not answer",
                "see the plugin warnings of `smith mcp list`",
            ),
        ));
        return;
    };
    for server in listing["servers"].as_array().into_iter().flatten() {
        let name = server["name"].as_str().unwrap_or("?");
        let origin = server["origin"].as_str().unwrap_or("?");
        let tools = server["tools"].as_array().map_or(0, Vec::len);
        let details =
            json!({"server": name, "origin": origin, "state": server["state"], "tools": tools});
        out.push(match server["error"].as_str() {
            None => Finding::ok(
                AREA,
                check,
                format!("MCP server {name} ({origin}): {}, {tools} tools", server["state"].as_str().unwrap_or("?")),
            )
            .details(details),
            Some(error) => Finding::problem(
                AREA,
                check,
                Diagnostic::warning(
                    check,
                    format!("MCP server {name} ({origin}) is not available"),
                    error.to_owned(),
                    if server["transport"] == "http" {
                        "check that the server is up and reachable at its URL and that its configured headers are right, fix it in the configuration, then check again with `smith mcp list`"
                    } else {
                        "run its command on its own to see why, fix it in the configuration, then check again with `smith mcp list`"
                    },
                ),
            )
            .details(details),
        });
    }
    let errors: Vec<&str> = listing["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["error"].as_str())
        .collect();
    // A failed server's notice repeats its error, reported above.
    for notice in listing["notices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| !errors.contains(&n.as_str().unwrap_or_default()))
    {
        out.push(Finding::info(
            AREA,
            check,
            notice.as_str().unwrap_or_default().to_owned(),
            "smith/mcp left it out",
            "see docs/mcp.md, \"smith as an MCP client\"",
        ));
    }
}

fn capability(kind: &str, value: &str) -> serde_json::Value {
    if value.is_empty() {
        json!(kind)
    } else {
        json!(format!("{kind} {value}"))
    }
}

/// The compiled-component cache under `<cache dir>/plugins`.
fn cache(paths: &Paths, components: &[Component], out: &mut Vec<Finding>) {
    let check = "plugins.cache";
    let root = paths.cache_dir.join("plugins");
    let runtime = match Runtime::global() {
        Ok(runtime) => runtime,
        Err(e) => {
            out.push(Finding::problem(
                AREA,
                check,
                crate::report::diagnose(&anyhow::Error::from(e)),
            ));
            return;
        }
    };
    let current = runtime.cache_folder(&paths.cache_dir);
    let wanted: BTreeSet<PathBuf> = components
        .iter()
        .filter(|c| !runtime.loads_in_place(&c.bytes))
        .map(|c| runtime.cache_file_of(&paths.cache_dir, &c.bytes))
        .collect();
    // The components that load from the binary's own precompiled artifacts
    // are never compiled, cached or not; the others are compiled into it.
    let (precompiled, cached): (Vec<&Component>, Vec<&Component>) = components
        .iter()
        .partition(|c| runtime.loads_precompiled(&c.bytes));
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut stale: Vec<(PathBuf, u64)> = Vec::new();
    for entry in read_dir(&root) {
        let size = tree_size(&entry);
        files += size.0;
        bytes += size.1;
        if entry != current {
            stale.push((entry, size.1));
            continue;
        }
        for file in read_dir(&current) {
            if !wanted.contains(&file) {
                let size = tree_size(&file).1;
                stale.push((file, size));
            }
        }
    }
    let precompiled = precompiled.iter().filter(|c| c.enabled).count();
    let missing: Vec<&str> = cached
        .iter()
        .filter(|c| c.enabled && !runtime.cache_file_of(&paths.cache_dir, &c.bytes).is_file())
        .map(|c| c.plugin.as_str())
        .collect();
    let enabled = components.iter().filter(|c| c.enabled).count();
    let stale_bytes: u64 = stale.iter().map(|(_, b)| b).sum();
    let details = json!({
        "path": root.display().to_string(),
        "current": current.display().to_string(),
        "files": files,
        "bytes": bytes,
        "compiled": enabled - missing.len(),
        "precompiled": precompiled,
        "components": enabled,
        "not_compiled": missing,
        "stale": stale.iter().map(|(p, b)| json!({"path": p.display().to_string(), "bytes": b})).collect::<Vec<_>>(),
        "stale_bytes": stale_bytes,
    });
    let summary = format!(
        "compiled-component cache {}: {files} file(s), {}; {} of {enabled} enabled plugin component(s) compiled for this build ({precompiled} built in precompiled)",
        root.display(),
        size_text(bytes),
        enabled - missing.len(),
    );
    out.push(if missing.is_empty() {
        Finding::ok(AREA, check, summary).details(details)
    } else {
        Finding::info(
            AREA,
            check,
            format!("{summary}; not yet: {}", missing.join(", ")),
            "the first run that loads a plugin compiles its component (a second or more) and caches the result; later runs load it at once",
            format!(
                "nothing to do; `smith plugin reload {}` compiles it now",
                missing.first().copied().unwrap_or("NAME")
            ),
        )
        .details(details)
    });
    if !stale.is_empty() {
        let paths: Vec<String> = stale
            .iter()
            .map(|(p, _)| shell_word(&p.display().to_string()))
            .collect();
        out.push(
            Finding::info(
                AREA,
                check,
                format!(
                    "{} stale cache entr{} ({}): compiled by another smith build, or for a component no plugin here has",
                    stale.len(),
                    if stale.len() == 1 { "y" } else { "ies" },
                    size_text(stale_bytes)
                ),
                "this smith never reads them again; they only take disk space",
                format!("remove them: rm -r {}", paths.join(" ")),
            )
            .details(json!({"stale_bytes": stale_bytes})),
        );
    }
}

/// The entries of `dir`, sorted (none when it cannot be read).
fn read_dir(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    entries
}

/// Files and bytes under `path` (itself when it is a file); links are not
/// followed.
fn tree_size(path: &Path) -> (u64, u64) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return (0, 0);
    };
    if !meta.is_dir() {
        return (1, meta.len());
    }
    read_dir(path)
        .iter()
        .map(|p| tree_size(p))
        .fold((0, 0), |(f, b), (f2, b2)| (f + f2, b + b2))
}

/// `bytes` for people: `812 KiB`, `3.4 MiB`.
pub fn size_text(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.0} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / KIB / KIB)
    } else {
        format!("{:.1} GiB", b / KIB / KIB / KIB)
    }
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(2048), "2 KiB");
        assert_eq!(size_text(3 * 1024 * 1024 + 400 * 1024), "3.4 MiB");
        assert_eq!(shell_word("/a/b.cwasm"), "/a/b.cwasm");
        assert_eq!(shell_word("/a b/it's"), "'/a b/it'\\''s'");
    }
}
