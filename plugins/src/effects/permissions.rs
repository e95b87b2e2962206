//! The `permissions` capability, granted to built-in plugins only (the
//! permission policy smith/permissions): the runtime's approval mode, what
//! its tools are, paths resolved as the tools resolve them, the permission
//! rules in effect, and saving a rule the user chose to keep.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde_json::json;
use smith_config::permissions::PermissionRule;
use smith_engine::approval::{Approval, ApprovalCell};
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;
use smith_engine::tools::sandbox::plain;

use super::{EffectError, Effects};

/// The most `peek-file` returns.
pub const MAX_PEEK_BYTES: u64 = 1 << 20;

/// Whether each of a runtime's tools only observes, by name: filled by the
/// embedding once every tool is known (built-in and plugin tools).
pub type ToolAccess = Arc<RwLock<HashMap<String, bool>>>;

/// What the `permissions` capability works on.
#[derive(Clone, Debug)]
pub struct PermissionAccess {
    /// The runtime's approval mode, shared with its tools.
    pub approval: ApprovalCell,
    /// Whether each tool is read-only.
    pub tools: ToolAccess,
    /// The project root paths are resolved against (the runtime's
    /// working folder).
    pub root: PathBuf,
    /// The rules in effect (user file, then the trusted project's).
    pub rules: Vec<PermissionRule>,
    /// The user configuration file, where rules are saved.
    pub user_config: Option<PathBuf>,
    /// The trusted project, its configuration file and the trust store:
    /// where project rules are saved (none in an untrusted project).
    pub trusted: Option<TrustedProject>,
    /// The MCP servers configured (user file, then the trusted
    /// project's), for `mcp-servers`.
    pub mcp_servers: Vec<smith_config::mcp::McpServer>,
}

/// What `stat-file` reports about a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// The size in bytes.
    pub size: u64,
    /// The last modification, nanoseconds since the Unix epoch (0 when
    /// unknown).
    pub modified_ns: u64,
    /// Whether it is a folder.
    pub is_dir: bool,
}

/// A trusted project, for saving rules to it.
#[derive(Clone, Debug)]
pub struct TrustedProject {
    /// The project.
    pub project: smith_config::trust::Project,
    /// The trust store that trusts it.
    pub trust_file: PathBuf,
}

impl PermissionAccess {
    /// Access over `approval` for a runtime working in `root`, with no
    /// rules, no files to save to and no tools known yet.
    pub fn new(approval: ApprovalCell, root: PathBuf) -> Self {
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        PermissionAccess {
            approval,
            tools: ToolAccess::default(),
            root,
            rules: Vec::new(),
            user_config: None,
            trusted: None,
            mcp_servers: Vec::new(),
        }
    }
}

/// A path resolved for the permission policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute, normalized, symlinks resolved.
    pub absolute: PathBuf,
    /// Relative to the project root (with `/`), inside it.
    pub project_relative: Option<String>,
}

/// Resolves `raw` against `root` (already canonical): the whole path when
/// it exists, else its components one by one, so a symlink anywhere
/// along it (or a `..` after one) is judged by where it leads.
pub fn resolve(root: &Path, raw: &str) -> ResolvedPath {
    let joined = if Path::new(raw).is_absolute() {
        PathBuf::from(raw)
    } else {
        root.join(raw)
    };
    // A normalized path with no link in it is its own resolution: one
    // lookup says so for every component at once.
    let absolute = if plain::plain(&joined).is_some() {
        joined
    } else {
        below_root(root, &joined)
            .or_else(|| std::fs::canonicalize(&joined).ok())
            .unwrap_or_else(|| {
                let mut current = PathBuf::from("/");
                for component in joined.components() {
                    match component {
                        Component::Prefix(_) | Component::RootDir => {
                            current = PathBuf::from("/");
                        }
                        Component::CurDir => {}
                        Component::ParentDir => {
                            current.pop();
                        }
                        Component::Normal(name) => {
                            current.push(name);
                            if let Ok(real) = std::fs::canonicalize(&current) {
                                current = real;
                            }
                        }
                    }
                }
                current
            })
    };
    let project_relative = project_relative(root, &absolute);
    ResolvedPath {
        absolute,
        project_relative: project_relative.filter(|r| !r.is_empty()),
    }
}

/// `absolute` relative to `root` with `/` separators, when it lies at or
/// beneath it: the bytes after the root when both are normalized, else
/// component by component.
fn project_relative(root: &Path, absolute: &Path) -> Option<String> {
    let (r, a) = (root.as_os_str().as_bytes(), absolute.as_os_str().as_bytes());
    if plain::is_normalized(r) && plain::is_normalized(a) {
        if !plain::is_beneath(a, r) {
            return None;
        }
        let rest = &a[r.len()..];
        let rest = rest.strip_prefix(b"/").unwrap_or(rest);
        return Some(String::from_utf8_lossy(rest).into_owned());
    }
    absolute.strip_prefix(root).ok().map(|rest| {
        rest.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    })
}

/// `joined` as it is when it lies under the canonical `root` with plain
/// names below it, none of them a symbolic link (looked up one by one:
/// two lookups for `src/main.rs`, however deep the project sits); `None`
/// when a link, `.` or `..` needs the full resolution.
fn below_root(root: &Path, joined: &Path) -> Option<PathBuf> {
    let rest = joined.strip_prefix(root).ok()?;
    if !rest.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let mut out = root.to_path_buf();
    for name in rest.components() {
        out.push(name);
        match std::fs::symlink_metadata(&out) {
            Ok(meta) if meta.file_type().is_symlink() => return None,
            Ok(_) => {}
            // Nothing below a missing entry can be a link.
            Err(_) => return Some(joined.to_path_buf()),
        }
    }
    Some(out)
}

impl Effects {
    /// Makes the `permissions` capability work on `access`.
    #[must_use]
    pub fn with_permissions(mut self, access: PermissionAccess) -> Self {
        self.permissions = Some(Arc::new(access));
        self
    }

    /// The permission state, or why the plugin cannot reach it; `request`
    /// names the call for the error (built only when there is one).
    fn permission_access(
        &self,
        request: impl FnOnce() -> String,
    ) -> Result<&PermissionAccess, EffectError> {
        if !self.grants.permissions {
            return Err(self.deny("permissions", "permissions".to_owned(), request()));
        }
        self.permissions.as_deref().ok_or_else(|| {
            EffectError::Failed(format!(
                "{}: this host offers plugins no approval mode or permission rules",
                request()
            ))
        })
    }

    /// The same state for the read-only observations (`resolve-path`,
    /// `peek-file`, `stat-file`, `peek-dir`, `config-dir`, `home-dir`,
    /// `project-trusted`): `local-read` suffices, `permissions` includes it.
    fn read_access(
        &self,
        request: impl FnOnce() -> String,
    ) -> Result<&PermissionAccess, EffectError> {
        if !self.grants.permissions && !self.grants.local_read {
            return Err(self.deny("local-read", "local-read".to_owned(), request()));
        }
        self.permissions.as_deref().ok_or_else(|| {
            EffectError::Failed(format!(
                "{}: this host offers plugins no view of the local files",
                request()
            ))
        })
    }

    /// `approval-mode`: the runtime's approval mode.
    ///
    /// # Errors
    ///
    /// Denied without the `permissions` grant.
    pub fn approval_mode(&self) -> Result<Approval, EffectError> {
        Ok(self
            .permission_access(|| "approval-mode".to_owned())?
            .approval
            .get())
    }

    /// `set-approval-mode`: changes the runtime's approval mode; recorded.
    ///
    /// # Errors
    ///
    /// Denied without the grant; invalid for an unknown mode.
    pub fn set_approval_mode(&self, mode: &str) -> Result<(), EffectError> {
        let access = self.permission_access(|| format!("set-approval-mode {mode:?}"))?;
        let Some(mode) = Approval::parse(mode) else {
            return Err(EffectError::Invalid(format!(
                "set-approval-mode {mode:?}: there is no such approval mode; the modes are {}; nothing changed",
                Approval::ALL.map(Approval::as_str).join(", ")
            )));
        };
        let effect_id = self.intent(
            "plugin.set-approval-mode",
            &json!({"plugin": self.plugin, "mode": mode.as_str()}),
        )?;
        let before = access.approval.get();
        access.approval.set(mode);
        self.complete(
            effect_id,
            Outcome::Ok,
            Mutation::Applied,
            &json!({"from": before.as_str(), "to": mode.as_str()}),
        )
    }

    /// `tool-read-only`: whether the tool `name` only observes.
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn tool_read_only(&self, name: &str) -> Result<Option<bool>, EffectError> {
        let access = self.permission_access(|| format!("tool-read-only {name:?}"))?;
        let tools = access
            .tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(tools.get(name).copied())
    }

    /// `resolve-path`: `path` resolved against the project root.
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn resolve_path(&self, path: &str) -> Result<ResolvedPath, EffectError> {
        let access = self.read_access(|| format!("resolve-path {path:?}"))?;
        Ok(resolve(&access.root, path))
    }

    /// `peek-file`: the text of `path` (at most 1 MiB), none when it does
    /// not exist.
    ///
    /// # Errors
    ///
    /// Denied without the grant; failed when it exists but cannot be read.
    pub fn peek_file(&self, path: &str) -> Result<Option<String>, EffectError> {
        let access = self.read_access(|| format!("peek-file {path:?}"))?;
        let resolved = resolve(&access.root, path);
        // Only a regular file is read: opening a FIFO nobody writes would
        // block the plugin's call, a device could never end.
        match std::fs::metadata(&resolved.absolute) {
            Ok(meta) if !meta.is_file() => {
                return Err(EffectError::Invalid(format!(
                    "peek-file {path:?}: {} is not a regular file (a folder, pipe or device), so it is not read",
                    resolved.absolute.display()
                )));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        let file = match std::fs::File::open(&resolved.absolute) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(EffectError::Failed(format!(
                    "peek-file {path:?}: {} cannot be read: {err}",
                    resolved.absolute.display()
                )));
            }
        };
        let mut bytes = Vec::new();
        file.take(MAX_PEEK_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|err| {
                EffectError::Failed(format!(
                    "peek-file {path:?}: {} cannot be read: {err}",
                    resolved.absolute.display()
                ))
            })?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// `attach-media`: reads the image or PDF at `path` (a project file)
    /// and attaches it to the input being decided; its summary, or none
    /// when the file is not an image or PDF by its first bytes.
    ///
    /// # Errors
    ///
    /// Denied without the grant; invalid for a file outside the project,
    /// not a regular file, or over its cap; failed when it cannot be read.
    pub fn attach_media(&self, path: &str) -> Result<Option<String>, EffectError> {
        use smith_engine::provider::{Media, MediaType};
        let access = self.read_access(|| format!("attach-media {path:?}"))?;
        let resolved = resolve(&access.root, path);
        let Some(shown) = resolved.project_relative.clone() else {
            return Err(EffectError::Invalid(format!(
                "attach-media {path:?}: {} is outside the project, so it is not attached",
                resolved.absolute.display()
            )));
        };
        let meta = std::fs::metadata(&resolved.absolute).map_err(|err| {
            EffectError::Failed(format!(
                "attach-media {path:?}: {} cannot be examined: {err}",
                resolved.absolute.display()
            ))
        })?;
        if !meta.is_file() {
            return Err(EffectError::Invalid(format!(
                "attach-media {path:?}: {} is not a regular file, so it is not attached",
                resolved.absolute.display()
            )));
        }
        let failed = |err: std::io::Error| {
            EffectError::Failed(format!(
                "attach-media {path:?}: {} cannot be read: {err}",
                resolved.absolute.display()
            ))
        };
        let mut file = std::fs::File::open(&resolved.absolute).map_err(failed)?;
        let mut head = [0u8; 16];
        let n = file.read(&mut head).map_err(failed)?;
        let Some(media_type) = MediaType::sniff(&head[..n]) else {
            return Ok(None);
        };
        let cap = media_type.max_bytes();
        if meta.len() > cap {
            return Err(EffectError::Invalid(format!(
                "attach-media {path:?}: {shown} is {} bytes, over the cap of {cap} bytes for a {}; it is not attached (never scaled down)",
                meta.len(),
                media_type.label()
            )));
        }
        let mut data = head[..n].to_vec();
        file.take(cap + 1 - n as u64)
            .read_to_end(&mut data)
            .map_err(failed)?;
        if data.len() as u64 > cap {
            return Err(EffectError::Invalid(format!(
                "attach-media {path:?}: {shown} grew past the cap of {cap} bytes while it was read; it is not attached"
            )));
        }
        let media = Media::new(media_type, data).named(shown);
        let summary = media.summary();
        self.push_attached(media);
        Ok(Some(summary))
    }

    /// `stat-file`: the size, modification time and kind of `path`,
    /// none when it does not exist. Reads no content; not recorded.
    ///
    /// # Errors
    ///
    /// Denied without the grant; failed when it exists but cannot be
    /// examined.
    pub fn file_stat(&self, path: &str) -> Result<Option<FileStat>, EffectError> {
        let access = self.read_access(|| format!("stat-file {path:?}"))?;
        let resolved = resolve(&access.root, path);
        match std::fs::metadata(&resolved.absolute) {
            Ok(meta) => Ok(Some(FileStat {
                size: meta.len(),
                modified_ns: meta
                    .modified()
                    .ok()
                    .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |since| {
                        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
                    }),
                is_dir: meta.is_dir(),
            })),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(EffectError::Failed(format!(
                "stat-file {path:?}: {} cannot be examined: {err}",
                resolved.absolute.display()
            ))),
        }
    }

    /// `config-dir`: smith's configuration folder (the folder of the
    /// user configuration file), none when it is unknown.
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn config_dir(&self) -> Result<Option<String>, EffectError> {
        let access = self.read_access(|| "config-dir".to_owned())?;
        Ok(access
            .user_config
            .as_deref()
            .and_then(Path::parent)
            .map(|dir| dir.to_string_lossy().into_owned()))
    }

    /// `peek-dir`: the entries of the folder `path`, none when it does not
    /// exist. Reads no content; not recorded.
    ///
    /// # Errors
    ///
    /// Denied without the grant; failed when it exists but cannot be
    /// listed (or is not a folder).
    pub fn peek_dir(&self, path: &str) -> Result<Option<super::DirListing>, EffectError> {
        let access = self.read_access(|| format!("peek-dir {path:?}"))?;
        let resolved = resolve(&access.root, path);
        if !resolved.absolute.exists() {
            return Ok(None);
        }
        super::fs::list_bounded(&resolved.absolute)
            .map(Some)
            .map_err(|message| {
                EffectError::Failed(format!(
                    "peek-dir {path:?}: {} {message}",
                    resolved.absolute.display()
                ))
            })
    }

    /// `home-dir`: the user's home folder (`HOME`, on Windows
    /// `USERPROFILE`), none when it is unknown.
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn home_dir(&self) -> Result<Option<String>, EffectError> {
        self.read_access(|| "home-dir".to_owned())?;
        let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        Ok(std::env::var_os(var)
            .filter(|home| !home.is_empty())
            .map(|home| PathBuf::from(home).to_string_lossy().into_owned()))
    }

    /// `permission-rules`: the rules in effect as a JSON array.
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn permission_rules(&self) -> Result<String, EffectError> {
        let access = self.permission_access(|| "permission-rules".to_owned())?;
        let rules: Vec<serde_json::Value> =
            access.rules.iter().map(PermissionRule::to_json).collect();
        Ok(serde_json::Value::from(rules).to_string())
    }

    /// `mcp-servers`: the configured MCP servers as a JSON array (with
    /// their env and header values, which the plugin must not show).
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn mcp_servers(&self) -> Result<String, EffectError> {
        let access = self.permission_access(|| "mcp-servers".to_owned())?;
        let servers: Vec<serde_json::Value> = access
            .mcp_servers
            .iter()
            .map(smith_config::mcp::McpServer::to_json)
            .collect();
        Ok(serde_json::Value::from(servers).to_string())
    }

    /// `project-trusted`: whether the runtime works in a trusted project.
    ///
    /// # Errors
    ///
    /// Denied without the grant.
    pub fn project_trusted(&self) -> Result<bool, EffectError> {
        Ok(self
            .read_access(|| "project-trusted".to_owned())?
            .trusted
            .is_some())
    }

    /// `save-permission-rule`: appends `rule` to the trusted project's
    /// configuration (`project`; its trust is renewed for the change) or
    /// the user's; returns the file. Recorded.
    ///
    /// # Errors
    ///
    /// Denied without the grant; invalid for a malformed rule or a project
    /// that is not trusted; failed when the file cannot be written.
    pub fn save_permission_rule(
        &self,
        rule: &PermissionRule,
        project: bool,
    ) -> Result<PathBuf, EffectError> {
        let request = format!("save-permission-rule `{}`", rule.to_kdl());
        let access = self.permission_access(|| request.clone())?;
        if !smith_config::permissions::KINDS.contains(&rule.kind.as_str()) || rule.tool.is_empty() {
            return Err(EffectError::Invalid(format!(
                "{request}: a rule is allow, ask or deny and names a tool; nothing was saved"
            )));
        }
        let (file, trusted) = if project {
            let Some(trusted) = &access.trusted else {
                return Err(EffectError::Invalid(format!(
                    "{request}: the project is not trusted, so rules cannot be saved to it; save it to the user configuration, or trust the project first (`smith trust`)"
                )));
            };
            (trusted.project.config_file(), Some(trusted))
        } else {
            let Some(file) = &access.user_config else {
                return Err(EffectError::Failed(format!(
                    "{request}: smith's configuration folder is unknown (set SMITH_HOME or HOME); nothing was saved"
                )));
            };
            (file.clone(), None)
        };
        let effect_id = self.intent(
            "plugin.save-permission-rule",
            &json!({"plugin": self.plugin, "rule": rule.to_kdl(), "file": file.display().to_string()}),
        )?;
        let saved = smith_config::permissions::append(&file, rule).and_then(|file| {
            if let Some(trusted) = trusted {
                smith_config::trust::TrustStore::open(&trusted.trust_file)
                    .and_then(|mut store| store.trust(&trusted.project))?;
            }
            Ok(file)
        });
        self.settle(
            effect_id,
            saved
                .map(|file| {
                    let output = json!({"file": file.display().to_string()});
                    (file, Mutation::Applied, output)
                })
                .map_err(|err| {
                    (
                        format!("{request}: {}", err.diagnostic().what()),
                        Mutation::Unknown,
                    )
                }),
        )
    }
}
