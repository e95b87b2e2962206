//! Plugin manifests (`plugin.kdl`) and installation.
//!
//! A manifest is static data, validated before any code is compiled:
//!
//! ```kdl
//! name "example/hello"
//! version "0.1.0"
//! description "Greets people"
//! api 1
//! world "extension"
//! component "plugin.wasm"
//! memory-limit-mib 32
//! capabilities {
//!     fs-read "data"
//!     net "api.example.com"
//! }
//! ```
//!
//! Installation copies a plugin folder into its owned root after
//! validating it in a staging folder; it runs no plugin code. Nothing may
//! leave the plugin's roots: `..`, absolute paths and symlinks are refused.

use std::path::{Component as PathPart, Path, PathBuf};

use crate::error::{ErrorKind, Phase, PluginError};

/// The capabilities a manifest may ask for.
pub const CAPABILITIES: &[&str] = &[
    "fs-read",
    "fs-write",
    "process",
    "net",
    "secrets",
    "vcs",
    "session-read",
    "ui",
    "project-read",
    "project-write",
];

/// Whether `value` is a secret handle: `PROVIDER.SLOT`, each side made of
/// letters, digits, `-` and `_`.
pub fn secret_handle(value: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    value
        .split_once('.')
        .is_some_and(|(provider, slot)| part(provider) && part(slot))
}

/// A validated manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// `org/name`.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// One line about it.
    pub description: String,
    /// The API generation it targets.
    pub api: u32,
    /// `provider` or `extension`.
    pub world: String,
    /// The component file, relative to the plugin folder.
    pub component: String,
    /// The memory limit in MiB.
    pub memory_limit_mib: u32,
    /// Capabilities asked for: (kind, value).
    pub capabilities: Vec<(String, String)>,
}

fn invalid(origin: &str, message: String) -> PluginError {
    PluginError::new(origin, Phase::Manifest, ErrorKind::Invalid, message)
}

/// Whether `name` is a valid `org/name` (each part `[a-z0-9_-]+`).
pub fn valid_name(name: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    };
    matches!(name.split_once('/'), Some((org, rest)) if part(org) && part(rest))
}

/// Whether `path` is relative and stays inside its root lexically (no `..`,
/// no root, no prefix).
pub fn stays_inside(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|part| matches!(part, PathPart::Normal(_) | PathPart::CurDir))
}

impl Manifest {
    /// Parses and validates manifest text; `origin` names the file in
    /// errors.
    ///
    /// # Errors
    ///
    /// A [`PluginError`] naming the field, the value and the rule it broke.
    pub fn parse(text: &str, origin: &str) -> Result<Manifest, PluginError> {
        // The parser descends once per level: refuse a hostile depth first.
        smith_config::nesting::check(text).map_err(|deep| {
            invalid(
                origin,
                format!(
                    "{origin} nests blocks deeper than {limit} levels at line {line}, so it was not parsed (a manifest that deep could exhaust the stack); flatten the blocks from that line, or do not install a plugin whose manifest you did not write",
                    limit = smith_config::nesting::MAX_DEPTH,
                    line = deep.line,
                ),
            )
        })?;
        let doc: kdl::KdlDocument = text.parse().map_err(|e: kdl::KdlError| {
            invalid(
                origin,
                format!(
                    "{origin} is not valid KDL: {e}; see docs/plugins.md for the manifest format"
                ),
            )
        })?;
        let string = |field: &str| -> Result<Option<String>, PluginError> {
            match doc.get(field) {
                None => Ok(None),
                Some(node) => match node.entries().first().map(|e| e.value().as_string()) {
                    Some(Some(s)) => Ok(Some(s.to_owned())),
                    _ => Err(invalid(
                        origin,
                        format!(
                            "{origin}: `{field}` must have one string value, like {field} \"...\""
                        ),
                    )),
                },
            }
        };
        let integer = |field: &str| -> Result<Option<i128>, PluginError> {
            match doc.get(field) {
                None => Ok(None),
                Some(node) => match node.entries().first().map(|e| e.value().as_integer()) {
                    Some(Some(i)) => Ok(Some(i)),
                    _ => Err(invalid(
                        origin,
                        format!("{origin}: `{field}` must have one integer value, like {field} 1"),
                    )),
                },
            }
        };
        let known = [
            "name",
            "version",
            "description",
            "api",
            "world",
            "component",
            "memory-limit-mib",
            "capabilities",
        ];
        for node in doc.nodes() {
            let field = node.name().value();
            if !known.contains(&field) {
                return Err(invalid(
                    origin,
                    format!(
                        "{origin}: unknown field `{field}`; the fields are {}",
                        known.join(", ")
                    ),
                ));
            }
        }
        let required = |field: &str, value: Option<String>| {
            value.ok_or_else(|| {
                invalid(
                    origin,
                    format!(
                        "{origin}: the required field `{field}` is missing; add a `{field}` line to plugin.kdl (docs/plugins.md lists the fields)"
                    ),
                )
            })
        };
        let name = required("name", string("name")?)?;
        if !valid_name(&name) {
            return Err(invalid(
                origin,
                format!(
                    "{origin}: name {name:?} must be org/name with only a-z, 0-9, _ and -; for example name \"example/greeter\""
                ),
            ));
        }
        let api = integer("api")?.ok_or_else(|| {
            invalid(
                origin,
                format!(
                    "{origin}: the required field `api` (the API generation) is missing; add `api 1`"
                ),
            )
        })?;
        let api = u32::try_from(api).ok().filter(|a| *a >= 1).ok_or_else(|| {
            invalid(
                origin,
                format!("{origin}: api {api} is not a generation (1, 2, ...); write `api 1`"),
            )
        })?;
        let world = required("world", string("world")?)?;
        if world != "provider" && world != "extension" && world != "search-provider" {
            return Err(invalid(
                origin,
                format!(
                    "{origin}: world {world:?} is not \"provider\", \"extension\" or \"search-provider\"; write `world \"provider\"` for a vendor adapter, `world \"search-provider\"` for a search provider of `web_search` or `world \"extension\"` for everything else"
                ),
            ));
        }
        let component = string("component")?.unwrap_or_else(|| "plugin.wasm".to_owned());
        if !stays_inside(&component) {
            return Err(invalid(
                origin,
                format!(
                    "{origin}: component {component:?} leaves the plugin folder; give a relative path without .."
                ),
            ));
        }
        let memory = integer("memory-limit-mib")?.unwrap_or(64);
        let memory_limit_mib = u32::try_from(memory)
            .ok()
            .filter(|m| (1..=4096).contains(m))
            .ok_or_else(|| {
                invalid(
                    origin,
                    format!(
                        "{origin}: memory-limit-mib {memory} is outside 1..=4096; give a whole number of MiB from 1 to 4096 (64 when left out)"
                    ),
                )
            })?;
        let mut capabilities = Vec::new();
        if let Some(children) = doc.get("capabilities").and_then(|n| n.children()) {
            for node in children.nodes() {
                let kind = node.name().value();
                if !CAPABILITIES.contains(&kind) {
                    return Err(invalid(
                        origin,
                        format!(
                            "{origin}: unknown capability `{kind}`; the capabilities are {}",
                            CAPABILITIES.join(", ")
                        ),
                    ));
                }
                let value = node
                    .entries()
                    .first()
                    .and_then(|e| e.value().as_string())
                    .unwrap_or("")
                    .to_owned();
                if kind.starts_with("fs-") && !stays_inside(&value) {
                    return Err(invalid(
                        origin,
                        format!(
                            "{origin}: capability {kind} {value:?} leaves the plugin's roots; name a relative folder inside its data folder"
                        ),
                    ));
                }
                if kind == "secrets" && !secret_handle(&value) {
                    return Err(invalid(
                        origin,
                        format!(
                            "{origin}: capability secrets {value:?} is not a secret handle; name one as PROVIDER.SLOT (letters, digits, `-` and `_` on each side of one dot), as `smith auth status` lists them"
                        ),
                    ));
                }
                capabilities.push((kind.to_owned(), value));
            }
        }
        Ok(Manifest {
            name,
            version: required("version", string("version")?)?,
            description: string("description")?.unwrap_or_default(),
            api,
            world,
            component,
            memory_limit_mib,
            capabilities,
        })
    }

    /// Why this host cannot load the plugin, if it cannot: a newer API
    /// generation is listed as disabled with both numbers.
    pub fn unsupported(&self) -> Option<String> {
        (self.api > crate::API_GENERATION).then(|| {
            format!(
                "needs plugin API generation {} but this smith supports up to {}; update smith to use it",
                self.api,
                crate::API_GENERATION
            )
        })
    }
}

/// Checks every file under `dir` (recursively): no symlinks, only plain
/// files and folders.
/// The most a plugin folder may hold, all files together (raised with
/// `SMITH_INPUT_LIMIT_MIB`): checked by size before anything is copied, so
/// a huge or sparse file is never read or made dense.
pub const FOLDER_BOUND: smith_diag::input::Bound<'static> = smith_diag::input::Bound {
    what: "plugin folder",
    max_bytes: 256 * 1024 * 1024,
    named: false,
};

/// A plugin's `plugin.kdl` is read only up to 1 MiB (raised with
/// `SMITH_INPUT_LIMIT_MIB`), at install and at every load.
pub const MANIFEST_BOUND: smith_diag::input::Bound<'static> = smith_diag::input::Bound {
    what: "plugin manifest",
    max_bytes: 1024 * 1024,
    named: false,
};

/// Reads the manifest `path` within [`MANIFEST_BOUND`]: its text, or what
/// went wrong (the file, the limit, how to raise it).
///
/// # Errors
/// A message naming the file when it is missing, not a regular file, too
/// large or not UTF-8.
pub fn read_manifest(path: &Path) -> Result<String, String> {
    smith_diag::input::read_text(path, &MANIFEST_BOUND)
        .map_err(|d| format!("{}: {}; {}", d.what(), d.why(), d.next()))
}

/// The WebAssembly header of a component (`\0asm`, version 13, layer 1);
/// a core module has version 1, layer 0.
const COMPONENT_HEADER: [u8; 8] = [0, b'a', b's', b'm', 0x0d, 0x00, 0x01, 0x00];

fn check_tree(dir: &Path, origin: &str) -> Result<(), PluginError> {
    let mut budget = FOLDER_BOUND.limit();
    check_tree_within(dir, origin, &mut budget)
}

fn check_tree_within(dir: &Path, origin: &str, budget: &mut u64) -> Result<(), PluginError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        PluginError::new(
            origin,
            Phase::Install,
            ErrorKind::Io,
            format!("cannot read {}: {e}", dir.display()),
        )
    })?;
    for entry in entries {
        let entry = entry.map_err(|e| {
            PluginError::new(
                origin,
                Phase::Install,
                ErrorKind::Io,
                format!("cannot read {}: {e}", dir.display()),
            )
        })?;
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).map_err(|e| {
            PluginError::new(
                origin,
                Phase::Install,
                ErrorKind::Io,
                format!("cannot inspect {}: {e}", path.display()),
            )
        })?;
        let kind = meta.file_type();
        if kind.is_file() {
            if meta.len() > *budget {
                let limit = FOLDER_BOUND.limit();
                return Err(PluginError::new(
                    origin,
                    Phase::Install,
                    ErrorKind::Invalid,
                    format!(
                        "{} holds {} ({} bytes), and a plugin folder may hold at most {} all files together; nothing was copied. A plugin is its plugin.kdl, its component and small files: remove what the plugin does not need, or raise the limit with {} (a whole number of MiB)",
                        path.display(),
                        smith_diag::input::size(meta.len()),
                        meta.len(),
                        smith_diag::input::size(limit),
                        smith_diag::input::LIMIT_ENV
                    ),
                ));
            }
            *budget -= meta.len();
        }
        if kind.is_symlink() {
            return Err(PluginError::new(
                origin,
                Phase::Install,
                ErrorKind::Invalid,
                format!(
                    "{} is a symlink; plugins may not contain symlinks (they could point outside the plugin's roots); replace it with the file itself",
                    path.display()
                ),
            ));
        }
        if kind.is_dir() {
            check_tree_within(&path, origin, budget)?;
        } else if !kind.is_file() {
            return Err(PluginError::new(
                origin,
                Phase::Install,
                ErrorKind::Invalid,
                format!("{} is not a plain file", path.display()),
            ));
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Installs the plugin folder `source` under `root` (`root/org/name`):
/// copies it into a staging folder, validates the manifest, the file tree
/// and the component's shape there without running plugin code, then moves
/// it into place. Returns the manifest.
///
/// # Errors
///
/// When the manifest is invalid, a file is a symlink or escapes, the
/// component is missing or precompiled, the name is reserved (`smith/`),
/// or the plugin is already installed.
pub fn install(source: &Path, root: &Path) -> Result<Manifest, PluginError> {
    let origin = source.display().to_string();
    let io = |what: &str, e: std::io::Error| {
        PluginError::new(
            &origin,
            Phase::Install,
            ErrorKind::Io,
            format!("{what}: {e}"),
        )
    };
    check_tree(source, &origin)?;
    let staging = root
        .join(".staging")
        .join(format!("{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    copy_tree(source, &staging).map_err(|e| {
        io(
            &format!(
                "cannot copy {} into staging {}",
                source.display(),
                staging.display()
            ),
            e,
        )
    })?;
    let result = (|| {
        let manifest_path = staging.join("plugin.kdl");
        if !manifest_path.exists() {
            return Err(PluginError::new(
                &origin,
                Phase::Install,
                ErrorKind::Io,
                format!(
                    "{}/plugin.kdl does not exist, and every plugin needs one",
                    source.display()
                ),
            ));
        }
        let text = read_manifest(&manifest_path).map_err(|message| {
            PluginError::new(&origin, Phase::Install, ErrorKind::Invalid, message)
        })?;
        let manifest = Manifest::parse(&text, &format!("{}/plugin.kdl", source.display()))?;
        if manifest.name.starts_with("smith/") {
            return Err(PluginError::new(
                &manifest.name,
                Phase::Install,
                ErrorKind::Invalid,
                "the smith/ namespace is reserved for built-in plugins; rename the plugin"
                    .to_owned(),
            ));
        }
        check_tree(&staging, &origin)?;
        let component = std::fs::read(staging.join(&manifest.component)).map_err(|e| {
            io(
                &format!(
                    "cannot read the component {} named in plugin.kdl",
                    manifest.component
                ),
                e,
            )
        })?;
        if wasmtime::Engine::detect_precompiled(&component).is_some() {
            return Err(PluginError::new(&manifest.name, Phase::Install, ErrorKind::Invalid, "the component is a precompiled wasmtime artifact, which smith refuses; ship the .wasm component".to_owned()));
        }
        if !component.starts_with(b"\0asm") {
            return Err(PluginError::new(
                &manifest.name,
                Phase::Install,
                ErrorKind::Invalid,
                format!(
                    "{} is not a WebAssembly component (no \\0asm header)",
                    manifest.component
                ),
            ));
        }
        if !component.starts_with(&COMPONENT_HEADER) {
            return Err(PluginError::new(
                &manifest.name,
                Phase::Install,
                ErrorKind::Invalid,
                format!(
                    "{} is a core WebAssembly module, not a component (its header is version {:02x?}, a component's is 0d 00 01 00); build the plugin for wasm32-wasip2 (`cargo build --target wasm32-wasip2`), or wrap the module with `wasm-tools component new`",
                    manifest.component,
                    component.get(4..8).unwrap_or_default()
                ),
            ));
        }
        Ok(manifest)
    })();
    let manifest = match result {
        Ok(manifest) => manifest,
        Err(err) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(err);
        }
    };
    let target = plugin_dir(root, &manifest.name);
    if target.exists() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(PluginError::new(
            &manifest.name,
            Phase::Install,
            ErrorKind::Invalid,
            format!(
                "{} is already installed at {}; uninstall it first",
                manifest.name,
                target.display()
            ),
        ));
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| io(&format!("cannot create {}", parent.display()), e))?;
    }
    std::fs::rename(&staging, &target).map_err(|e| {
        io(
            &format!("cannot move the staged plugin to {}", target.display()),
            e,
        )
    })?;
    Ok(manifest)
}

/// The folder of plugin `name` under `root`.
pub fn plugin_dir(root: &Path, name: &str) -> PathBuf {
    let (org, rest) = name.split_once('/').unwrap_or(("", name));
    root.join(org).join(rest)
}

/// The data folder of plugin `name` installed under `root`
/// (`root/.data/<org>/<name>`; the dot keeps it out of plugin listings).
pub fn data_dir(root: &Path, name: &str) -> PathBuf {
    plugin_dir(&root.join(".data"), name)
}

/// Removes plugin `name` from `root`; its data folder is removed only with
/// `purge_data`.
///
/// # Errors
///
/// When the name is invalid or reserved, the plugin is not installed, or
/// removal fails.
pub fn uninstall(root: &Path, name: &str, purge_data: bool) -> Result<(), PluginError> {
    if !valid_name(name) || name.starts_with("smith/") {
        return Err(PluginError::new(
            name,
            Phase::Install,
            ErrorKind::Invalid,
            format!("{name:?} is not an installed user plugin name (org/name, not smith/)"),
        ));
    }
    let dir = plugin_dir(root, name);
    if !dir.is_dir() {
        return Err(PluginError::new(
            name,
            Phase::Install,
            ErrorKind::Invalid,
            format!("{name} is not installed (no {})", dir.display()),
        ));
    }
    std::fs::remove_dir_all(&dir).map_err(|e| {
        PluginError::new(
            name,
            Phase::Install,
            ErrorKind::Io,
            format!("cannot remove {}: {e}", dir.display()),
        )
    })?;
    if purge_data {
        let data = data_dir(root, name);
        if data.exists() {
            std::fs::remove_dir_all(&data).map_err(|e| {
                PluginError::new(
                    name,
                    Phase::Install,
                    ErrorKind::Io,
                    format!("cannot remove {}: {e}", data.display()),
                )
            })?;
        }
    }
    Ok(())
}
