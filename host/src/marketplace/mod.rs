//! Plugin marketplaces in Claude Code's format: `smith plugin marketplace
//! add SOURCE`, `smith plugin install PLUGIN@MARKETPLACE`.
//!
//! A marketplace is a folder with `.claude-plugin/marketplace.json`
//! (`name`, `owner`, `plugins: [{name, source, ...}]`), fetched from a
//! local folder, an `https://` archive (`.tar.gz`, `.tgz`, `.zip`) or a git
//! repository (`https://host/owner/repo(.git)`, or `owner/repo` for
//! GitHub) — archives and git through smith's HTTP engine ([`http`],
//! [`git`]), never a `git` executable. A plugin's `source` is a folder of
//! the marketplace (`./plugins/foo`) or a git repository (`{source:
//! "github", repo}`, `{source: "url", url}`, `{source: "git-subdir", url,
//! path}`).
//!
//! Where things live, in smith's configuration folder: each marketplace in
//! `marketplaces/NAME/` with its record `marketplaces/NAME.json` (source,
//! revision, time), each installed plugin in
//! `marketplace-plugins/PLUGIN@MARKETPLACE/` with its record beside it.
//! smith/skills and smith/agents read the `skills/` and `agents/` folders
//! of the installed plugins, as `PLUGIN:NAME`. Hooks, MCP servers and
//! commands a plugin declares are listed, and run only once the user
//! enables them ([`Store::set_enabled`]: `enabled.KIND` in the record, the
//! digest of what was approved), by smith/hooks, smith/mcp and
//! smith/skills; a reinstall that changes them disables them again.
//!
//! Every fetch fills a staging folder first ([`tree::Tree`] refuses
//! absolute paths, `..`, links and devices, and stops at the caps); only a
//! complete, valid fetch replaces the previous install, by renames.

pub mod archive;
pub mod git;
pub mod http;
pub mod pack;
pub mod tree;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use smith_diag::{Diagnostic, Surface};
use smith_net::Client;

use tree::Tree;

/// Where marketplaces and their installed plugins are kept.
#[derive(Clone, Debug)]
pub struct Store {
    config: PathBuf,
}

/// Where a marketplace (or a plugin) comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A local folder (absolute).
    Local(PathBuf),
    /// An archive at an address.
    Archive(String, archive::Kind),
    /// A git repository: its address, the branch, tag or commit (default:
    /// its default branch), and a folder inside it.
    Git {
        /// The repository's address.
        url: String,
        /// The branch, tag or commit id.
        reference: Option<String>,
        /// A folder inside the repository.
        path: Option<String>,
    },
}

impl Source {
    /// Reads a source as the user gives it: an `http(s)://` address of an
    /// archive (by its ending) or of a git repository, `owner/repo` for a
    /// GitHub repository (when no such local folder exists), or a local
    /// folder (relative to `cwd`).
    ///
    /// # Errors
    ///
    /// `marketplace.bad-source` when it is none of these.
    pub fn parse(text: &str, cwd: &Path) -> Result<Source, Diagnostic> {
        let trimmed = text.trim();
        if trimmed.starts_with("https://") || trimmed.starts_with("http://") {
            http::check_url(trimmed, "the command line")?;
            return Ok(match archive::Kind::of(trimmed) {
                Some(kind) => Source::Archive(trimmed.to_owned(), kind),
                None => Source::Git {
                    url: trimmed.to_owned(),
                    reference: None,
                    path: None,
                },
            });
        }
        let local = cwd.join(trimmed);
        if local.is_dir() {
            return Ok(Source::Local(local.canonicalize().unwrap_or(local)));
        }
        if let Some(url) = github(trimmed) {
            return Ok(Source::Git {
                url,
                reference: None,
                path: None,
            });
        }
        Err(Diagnostic::error(
            "marketplace.bad-source",
            format!("{trimmed:?} is not a marketplace source"),
            format!(
                "it is not an https:// address, not `owner/repo`, and no folder {} exists",
                local.display()
            ),
            "give a local folder holding .claude-plugin/marketplace.json, an https:// git repository or .tar.gz/.tgz/.zip archive, or `owner/repo` for a GitHub repository",
        )
        .with_value(format!("{trimmed:?}"))
        .with_surface(Surface::other("the command line"))
        .with_example("smith plugin marketplace add anthropics/claude-plugins-official"))
    }

    /// The source as the user would give it again.
    pub fn describe(&self) -> String {
        match self {
            Source::Local(path) => path.display().to_string(),
            Source::Archive(url, _) => url.clone(),
            Source::Git {
                url,
                reference,
                path,
            } => {
                let mut text = url.clone();
                if let Some(path) = path {
                    text.push_str(&format!(" (folder {path})"));
                }
                if let Some(reference) = reference {
                    text.push_str(&format!(" at {reference}"));
                }
                text
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Source::Local(_) => "local",
            Source::Archive(..) => "archive",
            Source::Git { .. } => "git",
        }
    }
}

/// `owner/repo` as its GitHub address.
fn github(text: &str) -> Option<String> {
    let (owner, repo) = text.split_once('/')?;
    let ok = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (ok(owner) && ok(repo)).then(|| {
        format!(
            "https://github.com/{owner}/{}.git",
            repo.trim_end_matches(".git")
        )
    })
}

/// A marketplace added, as its record says.
#[derive(Clone, Debug)]
pub struct Marketplace {
    /// Its name.
    pub name: String,
    /// The source as given.
    pub source: String,
    /// `local`, `archive` or `git`.
    pub kind: String,
    /// The commit (git), the archive's SHA-256, or none (a local folder).
    pub revision: Option<String>,
    /// When it was fetched, seconds since the Unix epoch.
    pub fetched_at: u64,
    /// Its folder.
    pub dir: PathBuf,
}

/// A plugin installed from a marketplace, as its record says.
#[derive(Clone, Debug)]
pub struct Installed {
    /// The plugin's name.
    pub plugin: String,
    /// The marketplace's name.
    pub marketplace: String,
    /// Its version, when the marketplace or plugin.json gives one.
    pub version: Option<String>,
    /// Its description.
    pub description: String,
    /// Where it was fetched from.
    pub source: String,
    /// The commit, or none (a folder of the marketplace).
    pub revision: Option<String>,
    /// When it was installed, seconds since the Unix epoch.
    pub installed_at: u64,
    /// Its skills, `PLUGIN:NAME`.
    pub skills: Vec<String>,
    /// Its agents, `PLUGIN:NAME`.
    pub agents: Vec<String>,
    /// Declared and not run: commands, hooks (by event), MCP servers.
    pub commands: Vec<String>,
    /// The hook events it declares.
    pub hooks: Vec<String>,
    /// The MCP servers it declares.
    pub mcp_servers: Vec<String>,
    /// What the user enabled ([`Extra`]), each with the digest of the
    /// declared content they approved.
    pub enabled: Vec<(Extra, String)>,
    /// The digest of what it declares now, by kind (none: nothing
    /// declared).
    pub digests: Vec<(Extra, String)>,
    /// What a reinstall disabled again because what it declares changed
    /// since the user enabled it (not kept in the record).
    pub disabled_again: Vec<Extra>,
    /// Its folder.
    pub dir: PathBuf,
}

/// What a marketplace plugin declares that runs only once the user
/// enables it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// Hook commands (`hooks/hooks.json`, plugin.json `hooks`).
    Hooks,
    /// MCP servers (`.mcp.json`, plugin.json `mcpServers`).
    Mcp,
    /// Slash commands (`commands/*.md`, plugin.json `commands`).
    Commands,
}

/// Every kind, in the order they are shown.
pub const EXTRAS: [Extra; 3] = [Extra::Hooks, Extra::Mcp, Extra::Commands];

impl Extra {
    /// The key in the install record (`enabled.hooks`...), which
    /// smith/hooks, smith/mcp and smith/skills read.
    pub fn key(self) -> &'static str {
        match self {
            Extra::Hooks => "hooks",
            Extra::Mcp => "mcp",
            Extra::Commands => "commands",
        }
    }

    /// The command-line flag that names it.
    pub fn flag(self) -> &'static str {
        match self {
            Extra::Hooks => "--hooks",
            Extra::Mcp => "--mcp",
            Extra::Commands => "--commands",
        }
    }

    /// How it is named in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Extra::Hooks => "hooks",
            Extra::Mcp => "MCP servers",
            Extra::Commands => "commands",
        }
    }

    fn from_key(key: &str) -> Option<Extra> {
        EXTRAS.into_iter().find(|e| e.key() == key)
    }
}

impl Installed {
    /// `PLUGIN@MARKETPLACE`.
    pub fn id(&self) -> String {
        format!("{}@{}", self.plugin, self.marketplace)
    }

    /// The names of what it declares of `kind`.
    pub fn declared(&self, kind: Extra) -> &[String] {
        match kind {
            Extra::Hooks => &self.hooks,
            Extra::Mcp => &self.mcp_servers,
            Extra::Commands => &self.commands,
        }
    }

    /// Whether the user enabled `kind`.
    pub fn is_enabled(&self, kind: Extra) -> bool {
        self.enabled.iter().any(|(k, _)| *k == kind)
    }

    /// The kinds it declares and the user has not enabled.
    pub fn idle(&self) -> Vec<Extra> {
        EXTRAS
            .into_iter()
            .filter(|k| !self.declared(*k).is_empty() && !self.is_enabled(*k))
            .collect()
    }

    /// The warning that a reinstall disabled what was enabled, because
    /// what the plugin declares changed; none when nothing was.
    pub fn disabled_again_warning(&self) -> Option<Diagnostic> {
        if self.disabled_again.is_empty() {
            return None;
        }
        let nouns: Vec<&str> = self.disabled_again.iter().map(|k| k.noun()).collect();
        Some(
            Diagnostic::warning(
                "marketplace.disabled-again",
                format!(
                    "{}'s {} are disabled again: what it declares of them changed since you enabled them",
                    self.id(),
                    nouns.join(" and ")
                ),
                "you approved other commands than these; smith runs a plugin's hooks, MCP servers and commands only as the user enabled them",
                format!(
                    "review them in {}, then run `{}` to enable them again",
                    self.dir.display(),
                    self.enable_command(&self.disabled_again)
                ),
            )
            .with_surface(Surface::other(self.id())),
        )
    }

    /// The command that enables `kinds`.
    pub fn enable_command(&self, kinds: &[Extra]) -> String {
        let flags: Vec<&str> = kinds.iter().map(|k| k.flag()).collect();
        format!("smith plugin enable {} {}", self.id(), flags.join(" "))
    }

    /// The warning naming what the plugin declares that smith does not
    /// run (not enabled), or none when there is nothing of the kind.
    pub fn not_run(&self) -> Option<Diagnostic> {
        let idle = self.idle();
        if idle.is_empty() {
            return None;
        }
        let parts: Vec<String> = idle
            .iter()
            .map(|k| format!("{} ({})", k.noun(), self.declared(*k).join(", ")))
            .collect();
        let enabled: Vec<&str> = EXTRAS
            .into_iter()
            .filter(|k| self.is_enabled(*k))
            .map(Extra::noun)
            .collect();
        let enabled = if enabled.is_empty() {
            String::new()
        } else {
            format!("; its {} are enabled", enabled.join(" and "))
        };
        Some(
            Diagnostic::warning(
                "marketplace.not-run",
                format!(
                    "{} declares {}, which smith does not run until you enable them{enabled}",
                    self.id(),
                    parts.join(", ")
                ),
                "a marketplace plugin's hooks, MCP servers and commands run programs, reach servers or put prompts in your name; smith takes only its skills and agents until you enable the rest",
                format!(
                    "review them in {}, then run `{}` (or name fewer of the flags)",
                    self.dir.display(),
                    self.enable_command(&idle)
                ),
            )
            .with_surface(Surface::other(self.id())),
        )
    }

    fn to_json(&self) -> Value {
        json!({
            "plugin": self.plugin,
            "marketplace": self.marketplace,
            "version": self.version,
            "description": self.description,
            "source": self.source,
            "revision": self.revision,
            "installed_at": self.installed_at,
            "skills": self.skills,
            "agents": self.agents,
            "commands": self.commands,
            "hooks": self.hooks,
            "mcp_servers": self.mcp_servers,
            "enabled": self.enabled.iter().map(|(k, d)| (k.key().to_owned(), json!(d))).collect::<serde_json::Map<_, _>>(),
            "digests": self.digests.iter().map(|(k, d)| (k.key().to_owned(), json!(d))).collect::<serde_json::Map<_, _>>(),
        })
    }

    /// The record as `smith plugin list --json` shows it.
    pub fn to_json_with_dir(&self) -> Value {
        let mut value = self.to_json();
        value["dir"] = json!(self.dir.display().to_string());
        value
    }

    fn from_json(value: &Value, dir: PathBuf) -> Option<Installed> {
        let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
        let list = |k: &str| -> Vec<String> {
            value
                .get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let kinds = |k: &str| -> Vec<(Extra, String)> {
            value
                .get(k)
                .and_then(Value::as_object)
                .map(|o| {
                    o.iter()
                        .filter_map(|(key, d)| {
                            Some((Extra::from_key(key)?, d.as_str()?.to_owned()))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        Some(Installed {
            plugin: text("plugin")?,
            marketplace: text("marketplace")?,
            version: text("version"),
            description: text("description").unwrap_or_default(),
            source: text("source").unwrap_or_default(),
            revision: text("revision"),
            installed_at: value
                .get("installed_at")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            skills: list("skills"),
            agents: list("agents"),
            commands: list("commands"),
            hooks: list("hooks"),
            mcp_servers: list("mcp_servers"),
            enabled: kinds("enabled"),
            digests: kinds("digests"),
            disabled_again: Vec::new(),
            dir,
        })
    }
}

/// `seconds` since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn utc(seconds: u64) -> String {
    let rest = seconds % 86_400;
    let (year, month, day) = smith_diag::log::civil_from_days(seconds / 86_400);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn io_failed(path: &Path, what: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        "marketplace.io",
        format!("{what} {} failed: {e}", path.display()),
        "smith could not change its marketplace folders",
        "check that smith's configuration folder is writable and has free space, then run the command again",
    )
    .with_surface(Surface::file(path.to_owned()))
}

/// Writes `value` to `path` through a temporary file and a rename.
fn write_record(path: &Path, value: &Value) -> Result<(), Diagnostic> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    std::fs::write(&tmp, text + "\n").map_err(|e| io_failed(&tmp, "writing", &e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_failed(path, "writing", &e))
}

fn read_json(path: &Path, what: &str) -> Result<Value, Diagnostic> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::error(
            "marketplace.invalid",
            format!("{} cannot be read: {e}", path.display()),
            format!("{what} must be there"),
            "check the source; the previous install, if any, is unchanged",
        )
        .with_surface(Surface::file(path.to_owned()))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Diagnostic::error(
            "marketplace.invalid",
            format!("{} is not valid JSON: {e}", path.display()),
            format!("{what} is read as JSON"),
            "fix the file (or ask the source's maintainer to); the previous install, if any, is unchanged",
        )
        .with_surface(Surface::file(path.to_owned()))
    })
}

/// Why `name` cannot name a marketplace, or none.
fn marketplace_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 64 {
        return Some("a marketplace name has 1 to 64 characters".to_owned());
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Some("a marketplace name does not start with `.` or `-`".to_owned());
    }
    name.chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')))
        .map(|c| {
            format!(
                "a marketplace name has only a-z, 0-9, `-`, `_` and `.`, and {c:?} is none of these"
            )
        })
}

/// The checks of the SchemaStore schema (`claude-code-marketplace.json`)
/// smith relies on: `name`, `owner.name`, and each plugin's `name` and
/// `source`.
///
/// # Errors
///
/// `marketplace.invalid` naming the field and the file.
pub fn check_manifest(manifest: &Value, file: &Path) -> Result<(), Diagnostic> {
    let bad = |field: &str, why: &str| {
        Err(Diagnostic::error(
            "marketplace.invalid",
            format!("{} is not a valid marketplace: {field} {why}", file.display()),
            "Claude Code's marketplace format (.claude-plugin/marketplace.json) requires `name`, `owner` (with `name`) and `plugins`, each plugin with `name` and `source`",
            "fix the file (or ask the marketplace's maintainer to); nothing was changed",
        )
        .with_field(field.to_owned())
        .with_surface(Surface::file(file.to_owned())))
    };
    let blank = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
    if blank(manifest.get("name")) {
        return bad("name", "is missing or not a string");
    }
    if blank(manifest.get("owner").and_then(|o| o.get("name"))) {
        return bad("owner.name", "is missing or not a string");
    }
    let Some(plugins) = manifest.get("plugins").and_then(Value::as_array) else {
        return bad("plugins", "is missing or not an array");
    };
    for (i, plugin) in plugins.iter().enumerate() {
        if blank(plugin.get("name")) {
            return bad(&format!("plugins[{i}].name"), "is missing or not a string");
        }
        match plugin.get("source") {
            Some(Value::String(_)) => {}
            Some(Value::Object(o)) if o.get("source").and_then(Value::as_str).is_some() => {}
            _ => {
                return bad(
                    &format!("plugins[{i}].source"),
                    "is missing, or neither a path nor an object with `source`",
                );
            }
        }
    }
    Ok(())
}

/// The folder of a fetched tree that holds `marker`: the tree itself, or,
/// for an archive, its one folder (GitHub's `repo-main/`).
fn content_root(source: &Source, staging: &Path, marker: &str) -> PathBuf {
    if !matches!(source, Source::Archive(..)) || staging.join(marker).exists() {
        return staging.to_owned();
    }
    let entries: Vec<_> = std::fs::read_dir(staging)
        .map(|r| r.filter_map(Result::ok).collect())
        .unwrap_or_default();
    match entries.as_slice() {
        [one] if one.path().is_dir() && one.path().join(marker).exists() => one.path(),
        _ => staging.to_owned(),
    }
}

/// A fresh staging folder in `parent`.
fn staging(parent: &Path, label: &str) -> Result<tempfile::TempDir, Diagnostic> {
    std::fs::create_dir_all(parent).map_err(|e| io_failed(parent, "creating", &e))?;
    tempfile::Builder::new()
        .prefix(&format!(".staging-{label}-"))
        .tempdir_in(parent)
        .map_err(|e| io_failed(parent, "creating a staging folder in", &e))
}

/// Puts `content` at `target`, replacing what was there only once the
/// rename succeeded.
fn place(content: &Path, target: &Path) -> Result<(), Diagnostic> {
    let old = target.with_file_name(format!(
        ".old-{}-{}",
        target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let had = target.exists();
    if had {
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(target, &old).map_err(|e| io_failed(target, "moving aside", &e))?;
    }
    if let Err(e) = std::fs::rename(content, target) {
        if had {
            let _ = std::fs::rename(&old, target);
        }
        return Err(io_failed(target, "moving into place", &e));
    }
    if had {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Fetches `source` into `tree`; answers the revision and notes.
fn fetch(
    client: &dyn Fn() -> Result<Client, Diagnostic>,
    source: &Source,
    tree: &mut Tree,
) -> Result<(Option<String>, Vec<String>), Diagnostic> {
    match source {
        Source::Local(path) => {
            tree::copy_folder(path, "", tree)?;
            Ok((None, Vec::new()))
        }
        Source::Archive(url, kind) => {
            let bytes = http::fetch(&client()?, url, tree.origin(), &|a| {
                smith_net::Request::get(a)
            })?;
            let sum = sha2::Sha256::digest(&bytes);
            archive::expand(*kind, &bytes, tree)?;
            Ok((
                Some(format!(
                    "sha256:{}",
                    sum.iter().map(|b| format!("{b:02x}")).collect::<String>()
                )),
                Vec::new(),
            ))
        }
        Source::Git {
            url,
            reference,
            path,
        } => {
            let fetched = git::fetch(&client()?, url, reference.as_deref(), path.as_deref(), tree)?;
            let notes = fetched
                .skipped
                .iter()
                .map(|p| format!("the submodule {p} was left out (submodules are not fetched)"))
                .collect();
            Ok((Some(fetched.commit), notes))
        }
    }
}

use sha2::Digest as _;

/// The HTTP engine, built when a source needs it.
fn engine() -> Result<Client, Diagnostic> {
    Client::new().map_err(|e| {
        Diagnostic::error(
            "marketplace.download",
            format!("smith's HTTP engine could not start: {}", e.what()),
            e.why().to_owned(),
            e.next_action().to_owned(),
        )
    })
}

impl Store {
    /// The store in smith's configuration folder `config`.
    pub fn new(config: &Path) -> Store {
        Store {
            config: config.to_owned(),
        }
    }

    fn marketplaces(&self) -> PathBuf {
        self.config.join("marketplaces")
    }

    /// The folder the installed plugins' folders are in.
    pub fn plugins(&self) -> PathBuf {
        self.config.join("marketplace-plugins")
    }

    /// The marketplaces added, by name.
    pub fn list(&self) -> Vec<Marketplace> {
        let mut found: Vec<Marketplace> = std::fs::read_dir(self.marketplaces())
            .map(|r| r.filter_map(Result::ok).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| {
                let path = e.path();
                let name = path
                    .file_name()?
                    .to_str()?
                    .strip_suffix(".json")?
                    .to_owned();
                let value: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
                let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
                Some(Marketplace {
                    dir: self.marketplaces().join(&name),
                    name,
                    source: text("source").unwrap_or_default(),
                    kind: text("kind").unwrap_or_default(),
                    revision: text("revision"),
                    fetched_at: value.get("fetched_at").and_then(Value::as_u64).unwrap_or(0),
                })
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    fn find(&self, name: &str) -> Result<Marketplace, Diagnostic> {
        let all = self.list();
        all.iter().find(|m| m.name == name).cloned().ok_or_else(|| {
            Diagnostic::error(
                "marketplace.unknown",
                format!("no marketplace is named {name:?}"),
                if all.is_empty() {
                    "no marketplace has been added".to_owned()
                } else {
                    format!(
                        "the marketplaces are: {}",
                        all.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
                    )
                },
                "add it with `smith plugin marketplace add SOURCE`, or use one of the names `smith plugin marketplace list` shows",
            )
            .with_value(format!("{name:?}"))
            .with_surface(Surface::other("the command line"))
        })
    }

    /// Adds the marketplace at `source` (named `name`, or as its
    /// marketplace.json says), or, with `replace`, fetches it again.
    ///
    /// # Errors
    ///
    /// The source cannot be fetched, holds an unsafe entry, is over a
    /// cap, holds no valid marketplace.json, or its name is taken (without
    /// `replace`); nothing is changed then.
    pub fn add(
        &self,
        source: &Source,
        name: Option<&str>,
        replace: bool,
    ) -> Result<(Marketplace, Vec<String>), Diagnostic> {
        let origin = source.describe();
        let exists = |name: &str| {
            Diagnostic::error(
                "marketplace.exists",
                format!("a marketplace named {name:?} is already added"),
                "two marketplaces cannot share a name",
                format!("run `smith plugin marketplace update {name}` to fetch it again, or add this one under another name with `--name NAME`"),
            )
            .with_value(format!("{name:?}"))
        };
        // A name given and taken is refused before anything is fetched.
        if let Some(name) = name.filter(|n| !replace && self.marketplaces().join(n).exists()) {
            return Err(exists(name));
        }
        let stage = staging(&self.marketplaces(), "marketplace")?;
        let mut tree = Tree::new(stage.path(), &origin);
        let (revision, notes) = fetch(&engine, source, &mut tree)?;
        let root = content_root(source, stage.path(), ".claude-plugin/marketplace.json");
        let file = root.join(".claude-plugin/marketplace.json");
        if !file.is_file() {
            return Err(Diagnostic::error(
                "marketplace.invalid",
                format!("{origin} holds no .claude-plugin/marketplace.json"),
                "a marketplace (Claude Code's format) is a folder with .claude-plugin/marketplace.json listing its plugins",
                "check the source: it should be the marketplace's repository or folder, not one plugin's; nothing was changed",
            )
            .with_surface(Surface::other(origin)));
        }
        let manifest = read_json(&file, "a marketplace's .claude-plugin/marketplace.json")?;
        check_manifest(&manifest, &file)?;
        let declared = manifest
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = name.unwrap_or(declared).to_owned();
        if let Some(problem) = marketplace_name_problem(&name) {
            return Err(Diagnostic::error(
                "marketplace.invalid-name",
                format!("{name:?} cannot name a marketplace"),
                problem,
                "give another name with `--name NAME`",
            )
            .with_value(format!("{name:?}"))
            .with_example(format!(
                "smith plugin marketplace add {} --name my-marketplace",
                source.describe()
            )));
        }
        let target = self.marketplaces().join(&name);
        if !replace && target.exists() {
            return Err(exists(&name));
        }
        place(&root, &target)?;
        let record = json!({
            "name": name,
            "source": source.describe(),
            "source_spec": source_spec(source),
            "kind": source.kind(),
            "revision": revision,
            "fetched_at": now(),
        });
        write_record(&self.marketplaces().join(format!("{name}.json")), &record)?;
        drop(stage);
        let added = self.find(&name)?;
        Ok((added, notes))
    }

    /// Fetches the marketplace `name` again from its source.
    ///
    /// # Errors
    ///
    /// As [`Store::add`]; the previous copy stays when the fetch fails.
    pub fn update(&self, name: &str) -> Result<(Marketplace, Vec<String>), Diagnostic> {
        let market = self.find(name)?;
        let record = read_json(
            &self.marketplaces().join(format!("{name}.json")),
            "the marketplace's record",
        )?;
        let source = record
            .get("source_spec")
            .and_then(source_from_spec)
            .ok_or_else(|| {
                Diagnostic::error(
                    "marketplace.invalid",
                    format!("the record of the marketplace {name} does not say where it came from"),
                    "its record file was changed or written by another version",
                    format!("remove it (`smith plugin marketplace remove {name}`) and add it again from {}", market.source),
                )
            })?;
        self.add(&source, Some(name), true)
    }

    /// Removes the marketplace `name`.
    ///
    /// # Errors
    ///
    /// It is not added, or plugins installed from it are still installed.
    pub fn remove(&self, name: &str) -> Result<(), Diagnostic> {
        let market = self.find(name)?;
        let installed: Vec<String> = self
            .installed()
            .iter()
            .filter(|p| p.marketplace == name)
            .map(Installed::id)
            .collect();
        if !installed.is_empty() {
            return Err(Diagnostic::error(
                "marketplace.in-use",
                format!(
                    "the marketplace {name} still has installed plugins: {}",
                    installed.join(", ")
                ),
                "a marketplace is removed only once nothing installed from it is left",
                format!(
                    "uninstall them first: {}",
                    installed
                        .iter()
                        .map(|p| format!("`smith plugin uninstall {p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        std::fs::remove_dir_all(&market.dir).map_err(|e| io_failed(&market.dir, "removing", &e))?;
        let record = self.marketplaces().join(format!("{name}.json"));
        std::fs::remove_file(&record).map_err(|e| io_failed(&record, "removing", &e))
    }

    /// The plugins installed from marketplaces, by id.
    pub fn installed(&self) -> Vec<Installed> {
        let mut found: Vec<Installed> = std::fs::read_dir(self.plugins())
            .map(|r| r.filter_map(Result::ok).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| {
                let path = e.path();
                let id = path
                    .file_name()?
                    .to_str()?
                    .strip_suffix(".json")?
                    .to_owned();
                let value: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
                Installed::from_json(&value, self.plugins().join(id))
            })
            .collect();
        found.sort_by_key(Installed::id);
        found
    }

    /// The plugins the marketplace `name` lists: name, version, description.
    ///
    /// # Errors
    ///
    /// The marketplace is unknown or its file unreadable.
    pub fn catalog(&self, name: &str) -> Result<Vec<(String, Option<String>, String)>, Diagnostic> {
        let market = self.find(name)?;
        let manifest = read_json(
            &market.dir.join(".claude-plugin/marketplace.json"),
            "the marketplace's file",
        )?;
        Ok(manifest
            .get("plugins")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|p| {
                        let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_owned);
                        (
                            text("name").unwrap_or_default(),
                            text("version"),
                            text("description").unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Installs (or reinstalls) `PLUGIN@MARKETPLACE`.
    ///
    /// # Errors
    ///
    /// An unknown marketplace or plugin, an unsupported source, or a fetch
    /// that fails or is refused; the previous install stays then.
    pub fn install(&self, spec: &str) -> Result<(Installed, Vec<String>), Diagnostic> {
        let (plugin, market_name) = spec.split_once('@').unwrap_or((spec, ""));
        let market = self.find(market_name)?;
        let file = market.dir.join(".claude-plugin/marketplace.json");
        let manifest = read_json(&file, "the marketplace's .claude-plugin/marketplace.json")?;
        let entries = manifest
            .get("plugins")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(entry) = entries
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(plugin))
        else {
            let names: Vec<&str> = entries
                .iter()
                .filter_map(|p| p.get("name").and_then(Value::as_str))
                .collect();
            return Err(Diagnostic::error(
                "marketplace.unknown-plugin",
                format!("the marketplace {market_name} has no plugin named {plugin:?}"),
                format!("its plugins are: {}", if names.is_empty() { "none".to_owned() } else { names.join(", ") }),
                format!("install one of them as `smith plugin install NAME@{market_name}`, or run `smith plugin marketplace update {market_name}` if it was added since"),
            )
            .with_value(format!("{plugin:?}"))
            .with_surface(Surface::file(file)));
        };
        if let Some(problem) = smith_skill_format::name_problem(plugin) {
            return Err(Diagnostic::error(
                "marketplace.invalid-name",
                format!("the plugin {plugin:?} of {market_name} cannot be installed: {problem}"),
                "smith names a marketplace plugin's skills and agents PLUGIN:NAME, so the plugin's name must keep the skill name rules (a-z, 0-9 and `-`)",
                "ask the marketplace's maintainer to rename it",
            )
            .with_value(format!("{plugin:?}")));
        }
        let source = plugin_source(entry, &manifest, &market, &file)?;
        let origin = format!("{spec} ({})", source.describe());
        let stage = staging(&self.plugins(), "plugin")?;
        let mut tree = Tree::new(stage.path(), &origin);
        let (revision, notes) = fetch(&engine, &source, &mut tree)?;
        let root = content_root(&source, stage.path(), ".claude-plugin");
        let plugin_json = root.join(".claude-plugin/plugin.json");
        let declared = if plugin_json.is_file() {
            read_json(&plugin_json, "a plugin's .claude-plugin/plugin.json")?
        } else {
            json!({})
        };
        let text = |k: &str| {
            declared
                .get(k)
                .or_else(|| entry.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut installed = inventory(&root, plugin, &declared, entry);
        installed.marketplace = market_name.to_owned();
        installed.version = text("version");
        installed.description = text("description").unwrap_or_default();
        installed.source = source.describe();
        installed.revision = revision;
        installed.installed_at = now();
        let id = installed.id();
        // What was enabled stays enabled only while what it declares is
        // the same content the user approved.
        if let Some(before) = self.installed().into_iter().find(|p| p.id() == id) {
            for (kind, approved) in before.enabled {
                let now = installed.digests.iter().find(|(k, _)| *k == kind);
                if now.is_some_and(|(_, d)| *d == approved) {
                    installed.enabled.push((kind, approved));
                } else {
                    installed.disabled_again.push(kind);
                }
            }
        }
        let target = self.plugins().join(&id);
        place(&root, &target)?;
        installed.dir = target;
        write_record(
            &self.plugins().join(format!("{id}.json")),
            &installed.to_json(),
        )?;
        drop(stage);
        Ok((installed, notes))
    }

    /// Enables (`on`) or disables `kinds` of the installed plugin `spec`;
    /// an enabled kind records the digest of what it declares now.
    ///
    /// # Errors
    ///
    /// It is not installed, or (enabling) declares nothing of a kind.
    pub fn set_enabled(
        &self,
        spec: &str,
        kinds: &[Extra],
        on: bool,
    ) -> Result<Installed, Diagnostic> {
        let Some(mut found) = self.installed().into_iter().find(|p| p.id() == spec) else {
            return Err(self.not_installed(spec));
        };
        for kind in kinds {
            found.enabled.retain(|(k, _)| k != kind);
            if !on {
                continue;
            }
            let digest = found.digests.iter().find(|(k, _)| k == kind);
            if digest.is_none() && !found.declared(*kind).is_empty() {
                return Err(Diagnostic::error(
                    "marketplace.reinstall-to-enable",
                    format!("{spec}'s {} cannot be enabled: its record predates enabling", kind.noun()),
                    "enabling records the digest of what the plugin declares, which an install from before this smith version did not keep",
                    format!("run `smith plugin install {spec}`, then `smith plugin enable {spec} {}`", kind.flag()),
                )
                .with_value(spec.to_owned()));
            }
            let Some((_, digest)) = digest else {
                let declares: Vec<&str> = EXTRAS
                    .into_iter()
                    .filter(|k| !found.declared(*k).is_empty())
                    .map(Extra::flag)
                    .collect();
                return Err(Diagnostic::error(
                    "marketplace.nothing-to-enable",
                    format!(
                        "{spec} declares no {}, so `{}` has nothing to enable",
                        kind.noun(),
                        kind.flag()
                    ),
                    "only what a plugin declares can be enabled",
                    if declares.is_empty() {
                        "it declares no hooks, MCP servers or commands; nothing needs enabling"
                            .to_owned()
                    } else {
                        format!("run `smith plugin enable {spec} {}`", declares.join(" "))
                    },
                )
                .with_value(kind.flag().to_owned()));
            };
            found.enabled.push((*kind, digest.clone()));
        }
        found
            .enabled
            .sort_by_key(|(k, _)| EXTRAS.iter().position(|e| e == k));
        write_record(
            &self.plugins().join(format!("{spec}.json")),
            &found.to_json(),
        )?;
        Ok(found)
    }

    /// The error for `spec` naming no installed marketplace plugin.
    pub fn not_installed(&self, spec: &str) -> Diagnostic {
        let all = self.installed();
        Diagnostic::error(
            "marketplace.not-installed",
            format!("no plugin {spec} is installed from a marketplace"),
            if all.is_empty() {
                "no marketplace plugin is installed".to_owned()
            } else {
                format!(
                    "the installed ones are: {}",
                    all.iter().map(Installed::id).collect::<Vec<_>>().join(", ")
                )
            },
            "run `smith plugin list` to see the installed plugins and pass one as PLUGIN@MARKETPLACE",
        )
        .with_value(spec.to_owned())
    }

    /// Removes the installed plugin `PLUGIN@MARKETPLACE`.
    ///
    /// # Errors
    ///
    /// It is not installed.
    pub fn uninstall(&self, spec: &str) -> Result<Installed, Diagnostic> {
        let Some(found) = self.installed().into_iter().find(|p| p.id() == spec) else {
            return Err(self.not_installed(spec));
        };
        let record = self.plugins().join(format!("{spec}.json"));
        std::fs::remove_file(&record).map_err(|e| io_failed(&record, "removing", &e))?;
        std::fs::remove_dir_all(&found.dir).map_err(|e| io_failed(&found.dir, "removing", &e))?;
        Ok(found)
    }
}

/// The source as a JSON value the record keeps (to fetch it again).
fn source_spec(source: &Source) -> Value {
    match source {
        Source::Local(path) => json!({"local": path.display().to_string()}),
        Source::Archive(url, _) => json!({"archive": url}),
        Source::Git {
            url,
            reference,
            path,
        } => json!({"git": url, "ref": reference, "path": path}),
    }
}

fn source_from_spec(value: &Value) -> Option<Source> {
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(path) = text("local") {
        return Some(Source::Local(PathBuf::from(path)));
    }
    if let Some(url) = text("archive") {
        let kind = archive::Kind::of(&url)?;
        return Some(Source::Archive(url, kind));
    }
    Some(Source::Git {
        url: text("git")?,
        reference: text("ref"),
        path: text("path"),
    })
}

/// Where the marketplace `entry`'s plugin comes from.
fn plugin_source(
    entry: &Value,
    manifest: &Value,
    market: &Marketplace,
    file: &Path,
) -> Result<Source, Diagnostic> {
    let name = entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let unsupported = |why: String| {
        Diagnostic::error(
            "marketplace.unsupported-source",
            format!("the plugin {name} of {} cannot be installed: {why}", market.name),
            "smith installs plugins from a folder of the marketplace, or a git repository (`github`, `url`, `git-subdir` sources)",
            "install another plugin, or fetch this one yourself and install it from a local marketplace",
        )
        .with_field(format!("plugins[{name}].source"))
        .with_surface(Surface::file(file.to_owned()))
    };
    match entry.get("source") {
        Some(Value::String(path)) => {
            let base = manifest
                .get("metadata")
                .and_then(|m| m.get("pluginRoot"))
                .and_then(Value::as_str)
                .filter(|_| !path.starts_with("./"))
                .unwrap_or("");
            let origin = format!("the marketplace {}", market.name);
            let joined = if base.is_empty() {
                path.clone()
            } else {
                format!("{base}/{path}")
            };
            let relative = tree::relative(&joined, &origin)?;
            let dir = market.dir.join(relative);
            let is_link = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
            if is_link {
                return Err(tree::refused(path, &origin, "it is a symbolic link"));
            }
            if !dir.is_dir() {
                return Err(unsupported(format!(
                    "its source {path:?} is not a folder of the marketplace ({} does not exist)",
                    dir.display()
                )));
            }
            Ok(Source::Local(dir))
        }
        Some(Value::Object(o)) => {
            let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
            let reference = text("sha").or_else(|| text("ref"));
            let repo_url =
                |url: String| github(&url).filter(|_| !url.contains("://")).unwrap_or(url);
            let (url, path) = match text("source").as_deref() {
                Some("github") => (github(&text("repo").unwrap_or_default()), None),
                Some("url") => (text("url").map(repo_url), None),
                Some("git-subdir") => (text("url").map(repo_url), text("path")),
                Some(other) => {
                    return Err(unsupported(format!(
                        "its source kind {other:?} is not supported"
                    )));
                }
                None => (None, None),
            };
            let Some(url) = url else {
                return Err(unsupported(
                    "its source object has no repository address".to_owned(),
                ));
            };
            http::check_url(&url, &format!("the marketplace {}", market.name))?;
            if let Some(kind) = archive::Kind::of(&url) {
                return Ok(Source::Archive(url, kind));
            }
            Ok(Source::Git {
                url,
                reference,
                path,
            })
        }
        _ => Err(unsupported("it has no source".to_owned())),
    }
}

/// The names of the `.md` files in `dir`, sorted.
fn markdown_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(Result::ok).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".md")
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

/// The hook events a hooks value (`{"hooks": {EVENT: [...]}}` or
/// `{EVENT: [...]}`) names.
fn hook_events(value: &Value) -> Vec<String> {
    let map = value.get("hooks").unwrap_or(value);
    map.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The server names an MCP value (`{"mcpServers": {...}}` or `{...}`)
/// names.
fn mcp_names(value: &Value) -> Vec<String> {
    let map = value.get("mcpServers").unwrap_or(value);
    map.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// What the plugin folder `root` brings and declares.
fn inventory(root: &Path, plugin: &str, declared: &Value, entry: &Value) -> Installed {
    let field = |k: &str| declared.get(k).or_else(|| entry.get(k));
    let mut skills: Vec<String> = std::fs::read_dir(root.join("skills"))
        .map(|r| r.filter_map(Result::ok).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.path().join("SKILL.md").is_file())
        .filter_map(|e| e.file_name().to_str().map(|n| format!("{plugin}:{n}")))
        .collect();
    skills.sort();
    let agents = markdown_names(&root.join("agents"))
        .into_iter()
        .map(|n| format!("{plugin}:{n}"))
        .collect();
    let mut commands = markdown_names(&root.join("commands"));
    match field("commands") {
        Some(Value::String(path)) => commands.push(path.clone()),
        Some(Value::Array(paths)) => {
            commands.extend(paths.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        Some(Value::Object(o)) => commands.extend(o.keys().cloned()),
        _ => {}
    }
    let mut hooks = Vec::new();
    let hooks_file = root.join("hooks/hooks.json");
    if let Ok(value) = read_json(&hooks_file, "hooks") {
        hooks.extend(hook_events(&value));
    }
    match field("hooks") {
        Some(Value::Object(_)) => hooks.extend(field("hooks").map(hook_events).unwrap_or_default()),
        Some(Value::String(path)) => hooks.push(format!("from {path}")),
        Some(Value::Array(paths)) => hooks.extend(
            paths
                .iter()
                .filter_map(Value::as_str)
                .map(|p| format!("from {p}")),
        ),
        _ => {}
    }
    let mut mcp_servers = Vec::new();
    if let Ok(value) = read_json(&root.join(".mcp.json"), "MCP servers") {
        mcp_servers.extend(mcp_names(&value));
    }
    match field("mcpServers") {
        Some(Value::Object(_)) => {
            mcp_servers.extend(field("mcpServers").map(mcp_names).unwrap_or_default())
        }
        Some(Value::String(path)) => mcp_servers.push(format!("from {path}")),
        Some(Value::Array(paths)) => mcp_servers.extend(
            paths
                .iter()
                .filter_map(Value::as_str)
                .map(|p| format!("from {p}")),
        ),
        _ => {}
    }
    for list in [&mut commands, &mut hooks, &mut mcp_servers] {
        list.sort();
        list.dedup();
    }
    Installed {
        plugin: plugin.to_owned(),
        marketplace: String::new(),
        version: None,
        description: String::new(),
        source: String::new(),
        revision: None,
        installed_at: 0,
        skills,
        agents,
        commands,
        hooks,
        mcp_servers,
        enabled: Vec::new(),
        disabled_again: Vec::new(),
        digests: EXTRAS
            .into_iter()
            .filter_map(|kind| Some((kind, digest(root, declared, entry, kind)?)))
            .collect(),
        dir: root.to_owned(),
    }
}

/// The SHA-256 of what the plugin at `root` declares of `kind` (the files
/// and plugin.json's field), or none when it declares nothing: an enabled
/// kind stays enabled across a reinstall only while this is unchanged.
fn digest(root: &Path, declared: &Value, entry: &Value, kind: Extra) -> Option<String> {
    use sha2::Digest;
    let (field, files): (&str, Vec<PathBuf>) = match kind {
        Extra::Hooks => ("hooks", vec![root.join("hooks/hooks.json")]),
        Extra::Mcp => ("mcpServers", vec![root.join(".mcp.json")]),
        Extra::Commands => (
            "commands",
            markdown_names(&root.join("commands"))
                .into_iter()
                .map(|n| root.join("commands").join(format!("{n}.md")))
                .collect(),
        ),
    };
    let mut hash = sha2::Sha256::new();
    let mut any = false;
    let value = declared.get(field).or_else(|| entry.get(field));
    if let Some(value) = value {
        any = true;
        hash.update(format!("{field}={value}\n").as_bytes());
        // Files the field names, relative to the plugin.
        let paths: Vec<&str> = match value {
            Value::String(p) => vec![p.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for path in paths {
            if let Ok(bytes) = std::fs::read(root.join(path.trim_start_matches("./"))) {
                hash.update(path.as_bytes());
                hash.update(&bytes);
            }
        }
    }
    for file in files {
        if let Ok(bytes) = std::fs::read(&file) {
            any = true;
            hash.update(
                file.strip_prefix(root)
                    .unwrap_or(&file)
                    .display()
                    .to_string()
                    .as_bytes(),
            );
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
    }
    // Hooks and servers run the plugin's own code (hookify's `hooks/*.py`,
    // a server's scripts and packages): every file they could run is part
    // of what was approved. Skills, agents and commands are text the model
    // reads, and the plugin's top-level Markdown and `.claude-plugin` are
    // its description, so a version bump alone keeps the choice.
    if any && kind != Extra::Commands {
        let mut code = Vec::new();
        code_files(root, root, &mut code);
        code.sort();
        for file in code {
            if let Ok(bytes) = std::fs::read(root.join(&file)) {
                hash.update(file.as_bytes());
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(&bytes);
            }
        }
    }
    any.then(|| format!("sha256:{:x}", hash.finalize()))
}

/// The files under `dir` (relative to `root`, `/`-separated) that hooks or
/// MCP servers could run: all but `skills/`, `agents/`, `commands/`,
/// `.claude-plugin/` and Markdown at the top. Installs hold no symlinks.
fn code_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(relative) = path.strip_prefix(root) else {
            continue;
        };
        let name = relative.to_string_lossy().replace('\\', "/");
        let top = dir == root;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if top
                && matches!(
                    name.as_str(),
                    "skills" | "agents" | "commands" | ".claude-plugin"
                )
            {
                continue;
            }
            code_files(root, &path, out);
        } else if kind.is_file() && !(top && name.ends_with(".md")) {
            out.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A plugin holding only `skills/` (no plugin.json) installs with its
    /// skill; a reinstall replaces the copy; uninstall removes it.
    #[test]
    fn a_plugin_with_only_skills_installs_and_reinstalls_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let market = dir.path().join("m");
        std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
        std::fs::write(
            market.join(".claude-plugin/marketplace.json"),
            r#"{"name": "local", "owner": {"name": "t"}, "plugins": [{"name": "p", "source": "./p", "version": "1.0.0"}]}"#,
        )
        .unwrap();
        std::fs::create_dir_all(market.join("p/skills/x")).unwrap();
        std::fs::write(
            market.join("p/skills/x/SKILL.md"),
            "---\nname: x\ndescription: d\n---\n",
        )
        .unwrap();
        let store = Store::new(&dir.path().join("config"));
        let (added, _) = store
            .add(&Source::Local(market.clone()), None, false)
            .unwrap();
        assert_eq!(added.name, "local");
        let (installed, _) = store.install("p@local").unwrap();
        assert_eq!(installed.skills, ["p:x"]);
        assert_eq!(installed.version.as_deref(), Some("1.0.0"));
        assert!(installed.not_run().is_none());
        assert!(installed.dir.join("skills/x/SKILL.md").is_file());
        let (again, _) = store.install("p@local").unwrap();
        assert_eq!(again.dir, installed.dir);
        assert_eq!(store.installed().len(), 1);
        let err = store
            .add(&Source::Local(market), Some("local"), false)
            .unwrap_err();
        assert_eq!(err.code(), "marketplace.exists");
        store.uninstall("p@local").unwrap();
        assert!(!installed.dir.exists());
        assert!(store.installed().is_empty());
        assert_eq!(
            store.uninstall("p@local").unwrap_err().code(),
            "marketplace.not-installed"
        );
    }

    /// Enabling records the digest of what is declared; a reinstall of the
    /// same content keeps it, one whose hooks changed disables them again
    /// (and only them).
    #[test]
    fn enabled_kinds_stay_enabled_only_while_what_they_declare_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let market = dir.path().join("m");
        std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
        std::fs::write(
            market.join(".claude-plugin/marketplace.json"),
            r#"{"name": "local", "owner": {"name": "t"}, "plugins": [{"name": "p", "source": "./p"}]}"#,
        )
        .unwrap();
        std::fs::create_dir_all(market.join("p/hooks")).unwrap();
        std::fs::create_dir_all(market.join("p/commands")).unwrap();
        let hooks = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#;
        std::fs::write(market.join("p/hooks/hooks.json"), hooks).unwrap();
        std::fs::write(market.join("p/commands/c.md"), "do $ARGUMENTS\n").unwrap();
        let store = Store::new(&dir.path().join("config"));
        store
            .add(&Source::Local(market.clone()), None, false)
            .unwrap();
        store.install("p@local").unwrap();
        let err = store
            .set_enabled("p@local", &[Extra::Mcp], true)
            .unwrap_err();
        assert_eq!(err.code(), "marketplace.nothing-to-enable");
        let p = store
            .set_enabled("p@local", &[Extra::Hooks, Extra::Commands], true)
            .unwrap();
        assert!(p.is_enabled(Extra::Hooks) && p.is_enabled(Extra::Commands));
        assert!(p.not_run().is_none());
        let (again, _) = store.install("p@local").unwrap();
        assert!(again.disabled_again.is_empty());
        assert!(again.is_enabled(Extra::Hooks));
        std::fs::write(
            store.marketplaces().join("local/p/hooks/hooks.json"),
            hooks.replace("true", "rm -rf x"),
        )
        .unwrap();
        let (changed, _) = store.install("p@local").unwrap();
        assert_eq!(changed.disabled_again, [Extra::Hooks]);
        assert!(!changed.is_enabled(Extra::Hooks));
        assert!(changed.is_enabled(Extra::Commands));
        let warning = changed.disabled_again_warning().unwrap();
        assert_eq!(warning.code(), "marketplace.disabled-again");
        // A script the hooks run is part of what was approved too; a new
        // README or skill is not.
        store.set_enabled("p@local", &[Extra::Hooks], true).unwrap();
        let installed = store.marketplaces().join("local/p");
        std::fs::write(installed.join("README.md"), "about p\n").unwrap();
        std::fs::create_dir_all(installed.join("skills/s")).unwrap();
        std::fs::write(
            installed.join("skills/s/SKILL.md"),
            "---\nname: s\ndescription: d\n---\n",
        )
        .unwrap();
        let (kept, _) = store.install("p@local").unwrap();
        assert!(kept.disabled_again.is_empty());
        assert!(kept.is_enabled(Extra::Hooks));
        std::fs::write(installed.join("hooks/stop.py"), "print('changed')\n").unwrap();
        let (script, _) = store.install("p@local").unwrap();
        assert_eq!(script.disabled_again, [Extra::Hooks]);
        assert!(script.is_enabled(Extra::Commands));
        let read = store.installed().remove(0);
        assert!(!read.is_enabled(Extra::Hooks) && read.is_enabled(Extra::Commands));
        let off = store
            .set_enabled("p@local", &[Extra::Commands], false)
            .unwrap();
        assert!(off.enabled.is_empty());
    }

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_709_210_096), "2024-02-29 12:34 UTC");
    }

    #[test]
    fn sources_read_as_the_user_means_them() {
        let cwd = std::env::temp_dir();
        assert_eq!(
            Source::parse("anthropics/claude-plugins-official", &cwd).unwrap(),
            Source::Git {
                url: "https://github.com/anthropics/claude-plugins-official.git".to_owned(),
                reference: None,
                path: None
            }
        );
        assert!(matches!(
            Source::parse("https://example.com/m.tgz", &cwd).unwrap(),
            Source::Archive(_, archive::Kind::TarGz)
        ));
        assert!(matches!(
            Source::parse("https://example.com/o/r", &cwd).unwrap(),
            Source::Git { .. }
        ));
        assert_eq!(
            Source::parse("no such thing at all", &cwd)
                .unwrap_err()
                .code(),
            "marketplace.bad-source"
        );
    }

    #[test]
    fn the_real_marketplace_keeps_what_the_schema_requires() {
        let data = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/data/marketplace/claude-plugins-official"
        );
        let file = Path::new(data).join(".claude-plugin/marketplace.json");
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        check_manifest(&manifest, &file).unwrap();
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../tests/data/marketplace/claude-code-marketplace.schema.json"
            ))
            .unwrap(),
        )
        .unwrap();
        for key in schema["required"].as_array().unwrap() {
            assert!(manifest.get(key.as_str().unwrap()).is_some(), "{key}");
        }
        let mut broken = manifest.clone();
        broken["plugins"][0]
            .as_object_mut()
            .unwrap()
            .remove("source");
        let e = check_manifest(&broken, &file).unwrap_err();
        assert_eq!(e.field(), Some("plugins[0].source"));
    }
}
