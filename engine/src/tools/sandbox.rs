//! The sandbox the tools run in while the approval mode is sandboxed
//! (every mode but `full`).
//!
//! A [`Sandbox`] holds one [`Policy`] (write roots, read-denied paths) and
//! the kernel confinements prepared from it, lazily and once each: one with
//! the network off and one with it on. A runtime gives its
//! [`ToolContext`](super::ToolContext) one sandbox
//! ([`ToolContext::with_sandbox`](super::ToolContext::with_sandbox)); on
//! every call, while [`Approval::sandboxed`] holds:
//!
//! - `bash` spawns its shell confined ([`Sandbox::for_command`]), with
//!   `TMPDIR` set to the sandbox's temporary directory (a write root);
//! - `read`, `ls`, `find` and `grep` check their path with
//!   [`Sandbox::check_read`], `write` and `edit` with
//!   [`Sandbox::check_write`]; a refusal is a tool error carrying the
//!   policy's diagnostic.
//!
//! Where the kernel cannot confine a command (no Landlock, or the network
//! off with neither a network namespace nor Landlock TCP rules), a command
//! nobody approved (`read-only`, `workspace`) is refused with the missing
//! layer and what to do; in `ask`, where the user approved the command, it
//! runs with the layers the kernel has. Nothing runs unconfined while the
//! mode is sandboxed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::Value;
use smith_diag::Diagnostic;
pub use smith_sandbox::{
    Confinement, Coverage, Denied, DeniedKind, Enforcement, Layer, Mode, NamespaceKind, Network,
    Policy, PolicyBuilder, Support, WriteRoot, WriteRootKind, plain,
};

use super::result::{ToolError, ToolErrorKind};
use crate::approval::Approval;

/// The `sandbox.network` setting: whether confined commands may use the
/// network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NetworkSetting {
    /// Off in `read-only` and `workspace`; on in `ask` for `bash`, whose
    /// every call ran only once the permission policy let it through (the
    /// user approved it, or a rule the user wrote allows it). Plugin
    /// processes keep it off.
    #[default]
    Auto,
    /// Always off.
    Off,
    /// Always on.
    On,
}

impl NetworkSetting {
    /// The setting named `name` (`auto`, `off`, `on`).
    pub fn parse(name: &str) -> Option<NetworkSetting> {
        match name {
            "auto" => Some(NetworkSetting::Auto),
            "off" => Some(NetworkSetting::Off),
            "on" => Some(NetworkSetting::On),
            _ => None,
        }
    }

    /// The setting's name as the configuration spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkSetting::Auto => "auto",
            NetworkSetting::Off => "off",
            NetworkSetting::On => "on",
        }
    }

    /// The network a command gets in `approval` mode; `approved` says
    /// whether the user approved this exact command.
    pub fn network_for(self, approval: Approval, approved: bool) -> Network {
        match self {
            NetworkSetting::On => Network::On,
            NetworkSetting::Off => Network::Off,
            NetworkSetting::Auto if approval == Approval::Ask && approved => Network::On,
            NetworkSetting::Auto => Network::Off,
        }
    }
}

/// Why a command may not run under `enforcement` in `approval` mode, or
/// `None` when it may: in `read-only` and `workspace` (nobody approved the
/// command) the filesystem layer must hold and, with the network off, the
/// network namespace or the Landlock TCP rules; in `ask` and `full`
/// nothing is refused.
pub fn refusal(enforcement: &Enforcement, approval: Approval) -> Option<String> {
    if matches!(approval, Approval::Ask | Approval::Full) {
        return None;
    }
    let unavailable = |name: &str| match enforcement.layer(name) {
        Some(Layer {
            coverage: Coverage::Unavailable(why),
            ..
        }) => Some(why.clone()),
        _ => None,
    };
    let mut reasons = Vec::new();
    if let Some(why) = unavailable("filesystem") {
        reasons.push(format!("filesystem: {why}"));
    }
    if let (Some(ns), Some(tcp)) = (unavailable("network"), unavailable("tcp")) {
        reasons.push(format!("network: {ns}; tcp: {tcp}"));
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// The sandbox of one runtime: its policy and the confinements prepared
/// from it. Shared (`Arc`) by the runtime's tool context and its plugins'
/// process effects.
pub struct Sandbox {
    /// The policy with the network off and on, or why it could not be
    /// built (then every sandboxed call is refused with it).
    policies: Result<(Policy, Policy), Diagnostic>,
    network: NetworkSetting,
    /// The support report this sandbox is judged against, when not this
    /// kernel's ([`Support::probe`], probed on first use).
    support: Option<Support>,
    temp_dir: Option<PathBuf>,
    /// Removes the temporary directory with the sandbox.
    _temp: Option<tempfile::TempDir>,
    off: OnceLock<Result<Confinement, Diagnostic>>,
    on: OnceLock<Result<Confinement, Diagnostic>>,
    /// Confinements with an extra write root (a plugin's data folder),
    /// keyed by that folder and the network.
    extra: Mutex<HashMap<(PathBuf, bool), Confinement>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("policy", &self.policy())
            .field("network", &self.network)
            .field("temp_dir", &self.temp_dir)
            .finish_non_exhaustive()
    }
}

/// How a sandbox's temporary directory is named under the system's:
/// `smith-sandbox-<pid>-<random>`, so that [`sweep_temp_dirs`] can tell a
/// killed run's from a live one's.
pub const TEMP_PREFIX: &str = "smith-sandbox-";

/// Removes from `parent` (the system temporary directory) the sandbox
/// temporary directories of runs that ended without removing their own
/// (killed): those named `smith-sandbox-<pid>-...` whose process no longer
/// exists, owned by this user, and real directories (a symbolic link is
/// left alone, and nothing inside one is followed). Returns how many were
/// removed.
pub fn sweep_temp_dirs(parent: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid > 0)
        else {
            continue;
        };
        if u32::try_from(pid).ok() == Some(std::process::id())
            || crate::tools::bash::process_alive(pid)
        {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() && meta.uid() == me && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

impl Sandbox {
    /// A sandbox for `builder`'s paths with a fresh temporary directory
    /// (made under the system's, added as the session temporary write
    /// root, removed when the sandbox is dropped), the network as
    /// `network` says, on this kernel ([`Support::probe`]).
    ///
    /// A policy that cannot be built (a write root that does not exist, a
    /// temporary directory that cannot be made) does not fail here: every
    /// sandboxed call is refused with its diagnostic instead.
    pub fn new(builder: PolicyBuilder, network: NetworkSetting) -> Sandbox {
        let temp = tempfile::Builder::new()
            .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
            .tempdir();
        let (builder, temp_dir, guard, made) = match temp {
            Ok(dir) => {
                let path = dir.path().to_path_buf();
                (builder.session_temp(&path), Some(path), Some(dir), Ok(()))
            }
            Err(e) => (
                builder,
                None,
                None,
                Err(Diagnostic::error(
                    "sandbox.temp-dir",
                    "the sandbox could not make the session's temporary directory",
                    format!(
                        "creating a folder under {} failed: {e}",
                        std::env::temp_dir().display()
                    ),
                    "make the system temporary directory writable (or point TMPDIR at one that is), or run with `--approval full`",
                )),
            ),
        };
        let policies = made.and_then(|()| Self::build(builder));
        let temp_dir = temp_dir.and_then(|p| smith_sandbox::resolve(&p).ok());
        Sandbox {
            policies,
            network,
            support: None,
            temp_dir,
            _temp: guard,
            off: OnceLock::new(),
            on: OnceLock::new(),
            extra: Mutex::new(HashMap::new()),
        }
    }

    fn build(builder: PolicyBuilder) -> Result<(Policy, Policy), Diagnostic> {
        let off = builder.clone().network(Network::Off).build()?;
        let on = builder.network(Network::On).build()?;
        Ok((off, on))
    }

    /// The same sandbox judged against `support` instead of this kernel's
    /// (to see what it does where layers are missing).
    #[must_use]
    pub fn with_support(mut self, support: Support) -> Sandbox {
        self.support = Some(support);
        self.off = OnceLock::new();
        self.on = OnceLock::new();
        self
    }

    /// The policy (with the network off), or why it could not be built.
    pub fn policy(&self) -> Result<&Policy, &Diagnostic> {
        self.policies.as_ref().map(|(off, _)| off)
    }

    /// The `sandbox.network` setting.
    pub fn network(&self) -> NetworkSetting {
        self.network
    }

    /// What the kernel offers, as this sandbox judges it.
    pub fn support(&self) -> &Support {
        self.support.as_ref().unwrap_or_else(|| Support::probe())
    }

    /// The session's temporary directory (`TMPDIR` of confined commands).
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp_dir.as_deref()
    }

    /// What a command gets with `network`, on this kernel.
    ///
    /// # Errors
    ///
    /// The diagnostic of a policy that could not be built.
    pub fn enforcement(&self, network: Network) -> Result<Enforcement, &Diagnostic> {
        self.policies.as_ref().map(|(off, on)| {
            self.support().enforcement(match network {
                Network::Off => off,
                Network::On => on,
            })
        })
    }

    fn policies(&self, tool: &str) -> Result<&(Policy, Policy), ToolError> {
        self.policies
            .as_ref()
            .map_err(|d| diagnostic_error(tool, d, ToolErrorKind::Sandbox))
    }

    /// The confinement a command runs in under `approval` (the network as
    /// the setting says; in `ask` the command was approved).
    ///
    /// # Errors
    ///
    /// A [`ToolErrorKind::Sandbox`] error when the policy could not be
    /// built, the confinement could not be prepared, or the kernel lacks a
    /// layer a command nobody approved needs ([`refusal`]).
    pub fn for_command(&self, tool: &str, approval: Approval) -> Result<Confinement, ToolError> {
        // In `ask` a command reaches the tool only once the permission
        // policy let it through: the user approved it or wrote the rule.
        let network = self
            .network
            .network_for(approval, approval == Approval::Ask);
        self.confinement(tool, network, approval)
    }

    /// The confinement for `network` under `approval`.
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::for_command`].
    pub fn confinement(
        &self,
        tool: &str,
        network: Network,
        approval: Approval,
    ) -> Result<Confinement, ToolError> {
        let (off, on) = self.policies(tool)?;
        let (cell, policy) = match network {
            Network::Off => (&self.off, off),
            Network::On => (&self.on, on),
        };
        let prepared = cell
            .get_or_init(|| Confinement::prepare_with(policy, Mode::BestEffort, self.support()))
            .as_ref()
            .map_err(|d| diagnostic_error(tool, d, ToolErrorKind::Sandbox))?;
        refuse_unconfined(tool, prepared.enforcement(), approval)?;
        Ok(prepared.clone())
    }

    /// The confinement of a plugin's process: the policy plus `extra` (the
    /// plugin's data folder) as a write root, the network off unless
    /// `sandbox.network` is `on`; prepared once per folder.
    ///
    /// # Errors
    ///
    /// As for [`Sandbox::for_command`].
    pub fn with_write_root(
        &self,
        tool: &str,
        extra: &Path,
        approval: Approval,
    ) -> Result<Confinement, ToolError> {
        let network = self.network.network_for(approval, false);
        let (off, on) = self.policies(tool)?;
        let base = match network {
            Network::Off => off,
            Network::On => on,
        };
        let key = (extra.to_path_buf(), network == Network::On);
        let mut cache = self.extra.lock().unwrap_or_else(PoisonError::into_inner);
        let prepared = match cache.get(&key) {
            Some(c) => c.clone(),
            None => {
                let mut builder = Policy::builder().network(network).write_root(extra);
                for root in base.write_roots() {
                    builder = builder.write_root(&root.path);
                }
                for denied in base.read_denied() {
                    builder = builder.read_denied(&denied.path);
                }
                let c = builder
                    .build()
                    .and_then(|p| Confinement::prepare_with(&p, Mode::BestEffort, self.support()))
                    .map_err(|d| diagnostic_error(tool, &d, ToolErrorKind::Sandbox))?;
                cache.insert(key, c.clone());
                c
            }
        };
        drop(cache);
        refuse_unconfined(tool, prepared.enforcement(), approval)?;
        Ok(prepared)
    }

    /// Checks that `tool` may read `path` (absolute, or relative to the
    /// process's directory).
    ///
    /// # Errors
    ///
    /// A [`ToolErrorKind::Sandbox`] error carrying the policy's diagnostic.
    pub fn check_read(&self, tool: &str, path: &Path) -> Result<(), ToolError> {
        let (policy, _) = self.policies(tool)?;
        policy
            .check_read(path)
            .map(drop)
            .map_err(|d| diagnostic_error(tool, &d, ToolErrorKind::Sandbox))
    }

    /// Checks that `tool` may write `path`.
    ///
    /// # Errors
    ///
    /// A [`ToolErrorKind::Sandbox`] error carrying the policy's diagnostic.
    pub fn check_write(&self, tool: &str, path: &Path) -> Result<(), ToolError> {
        let (policy, _) = self.policies(tool)?;
        policy
            .check_write(path)
            .map(drop)
            .map_err(|d| diagnostic_error(tool, &d, ToolErrorKind::Sandbox))
    }
}

fn refuse_unconfined(
    tool: &str,
    enforcement: &Enforcement,
    approval: Approval,
) -> Result<(), ToolError> {
    match refusal(enforcement, approval) {
        None => Ok(()),
        Some(why) => Err(ToolError::new(
            ToolErrorKind::Sandbox,
            format!("{tool}: the command was not run: the sandbox cannot confine it on this kernel"),
            format!("in {approval} mode commands run only confined, and a layer is missing: {why}"),
            "run `smith sandbox` to see what this kernel supports; to run commands without these layers, switch to `--approval ask` (you approve each command) or `--approval full` (no sandbox)",
        )
        .with_extra("code", Value::from("sandbox.unconfined"))),
    }
}

/// A sandbox diagnostic as the tool error the model reads: its what, why
/// and next, and its code in the details.
fn diagnostic_error(tool: &str, d: &Diagnostic, kind: ToolErrorKind) -> ToolError {
    let mut e = ToolError::new(kind, format!("{tool}: {}", d.what()), d.why(), d.next())
        .with_extra("code", Value::from(d.code()));
    if let Some(smith_diag::Value::Shown(path)) = d.value() {
        e = e.with_extra("path", Value::from(path.as_str()));
    }
    e
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::approval::ApprovalCell;
    use crate::tools::{ToolContext, ToolSet};

    struct Fixture {
        _dir: tempfile::TempDir,
        project: PathBuf,
        outside: PathBuf,
        cell: ApprovalCell,
        sandbox: Arc<Sandbox>,
    }

    /// A project, and a folder outside it holding a read-denied `secret/`;
    /// the context's roots allow both (so only the sandbox refuses).
    fn fixture(network: NetworkSetting, support: Option<Support>) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = smith_sandbox::resolve(dir.path()).expect("resolve");
        let project = base.join("project");
        let outside = base.join("outside");
        std::fs::create_dir_all(&project).expect("mkdir");
        std::fs::create_dir_all(outside.join("secret")).expect("mkdir");
        std::fs::write(outside.join("secret/key"), "hunter2").expect("write");
        std::fs::write(project.join("notes.txt"), "hello").expect("write");
        let builder = Policy::builder()
            .project_root(&project)
            .read_denied(outside.join("secret"));
        let mut sandbox = Sandbox::new(builder, network);
        if let Some(support) = support {
            sandbox = sandbox.with_support(support);
        }
        Fixture {
            _dir: dir,
            project,
            outside,
            cell: ApprovalCell::new(Approval::Workspace),
            sandbox: Arc::new(sandbox),
        }
    }

    impl Fixture {
        fn context(&self) -> ToolContext {
            ToolContext::new(&self.project)
                .expect("context")
                .with_roots([&self.project, &self.outside])
                .expect("roots")
                .with_approval(self.cell.clone())
                .with_sandbox(Arc::clone(&self.sandbox))
        }

        fn call(&self, tool: &str, args: serde_json::Value) -> crate::tools::ToolResult {
            let tools = ToolSet::builtin();
            let tool = tools.get(tool).expect("tool");
            tool.call(&args, &self.context())
        }
    }

    fn code(result: &crate::tools::ToolResult) -> Option<&str> {
        result
            .details
            .get("code")
            .and_then(serde_json::Value::as_str)
    }

    #[test]
    fn file_tools_check_the_policy_only_while_sandboxed() {
        let f = fixture(NetworkSetting::Auto, None);
        let secret = f.outside.join("secret");
        let key = secret.join("key").display().to_string();
        let secret = secret.display().to_string();
        let read = f.call("read", json!({"path": key}));
        assert!(read.is_error);
        assert_eq!(read.error_kind(), Some("sandbox"));
        assert_eq!(code(&read), Some("sandbox.read-denied"));
        assert!(!read.content.contains("hunter2"));
        assert!(read.content.contains("Why:") && read.content.contains("Next:"));
        for (tool, args) in [
            ("ls", json!({"path": secret})),
            ("find", json!({"pattern": "*", "path": secret})),
            ("grep", json!({"pattern": "hunter", "path": secret})),
        ] {
            let result = f.call(tool, args);
            assert_eq!(code(&result), Some("sandbox.read-denied"), "{tool}");
        }
        let outside = f.outside.join("new.txt");
        let write = f.call(
            "write",
            json!({"path": outside.display().to_string(), "content": "x"}),
        );
        assert_eq!(code(&write), Some("sandbox.write-outside-roots"));
        assert!(!outside.exists());
        let edit = f.call(
            "edit",
            json!({"path": key, "old_text": "hunter2", "new_text": "x"}),
        );
        assert_eq!(code(&edit), Some("sandbox.write-denied"));
        // Allowed work still runs.
        let ok = f.call("read", json!({"path": "notes.txt"}));
        assert!(!ok.is_error, "{}", ok.content);
        let ok = f.call("write", json!({"path": "new.txt", "content": "x"}));
        assert!(!ok.is_error, "{}", ok.content);
        // `full`: the tools behave as without a sandbox.
        f.cell.set(Approval::Full);
        let read = f.call("read", json!({"path": key}));
        assert!(!read.is_error, "{}", read.content);
        assert!(read.content.contains("hunter2"));
        let write = f.call(
            "write",
            json!({"path": outside.display().to_string(), "content": "x"}),
        );
        assert!(!write.is_error, "{}", write.content);
    }

    #[test]
    fn walks_leave_out_the_read_denied_paths_inside_their_root() {
        let f = fixture(NetworkSetting::Auto, None);
        let cx = f.context();
        let tools = ToolSet::builtin();
        let call =
            |tool: &str, args: serde_json::Value| tools.get(tool).expect("tool").call(&args, &cx);
        let root = f.outside.display().to_string();
        std::fs::write(f.outside.join("open.txt"), "hunter2 in the open").expect("write");
        let grep = call("grep", json!({"pattern": "hunter2", "path": root}));
        assert!(grep.content.contains("open.txt"), "{}", grep.content);
        assert!(!grep.content.contains("secret"), "{}", grep.content);
        let find = call("find", json!({"pattern": "**", "path": root}));
        assert!(find.content.contains("open.txt"), "{}", find.content);
        assert!(!find.content.contains("secret"), "{}", find.content);
        let ls = call("ls", json!({"path": root}));
        assert!(ls.content.contains("open.txt"), "{}", ls.content);
        assert!(!ls.content.contains("secret"), "{}", ls.content);
        f.cell.set(Approval::Full);
        let grep = call("grep", json!({"pattern": "hunter2", "path": root}));
        assert!(grep.content.contains("secret"), "{}", grep.content);
    }

    #[test]
    fn bash_runs_confined_with_tmpdir_in_the_sandbox() {
        let f = fixture(NetworkSetting::Auto, None);
        let escaped = f.outside.join("escaped");
        let command = format!(
            "echo in > inside.txt; echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"; echo out > {}; cat {}; cat notes.txt",
            escaped.display(),
            f.outside.join("secret/key").display()
        );
        let result = f.call("bash", json!({ "command": command }));
        assert!(f.project.join("inside.txt").exists(), "{}", result.content);
        assert!(!escaped.exists(), "{}", result.content);
        assert!(!result.content.contains("hunter2"), "{}", result.content);
        assert!(result.content.contains("tmp\n"), "{}", result.content);
        assert!(result.content.contains("hello"), "{}", result.content);
        let tmp = f.sandbox.temp_dir().expect("temp dir");
        assert!(tmp.join("t").exists());
        // `full`: the same command writes outside.
        f.cell.set(Approval::Full);
        let result = f.call("bash", json!({ "command": command }));
        assert!(escaped.exists(), "{}", result.content);
        assert!(result.content.contains("hunter2"));
    }

    #[test]
    fn bash_is_refused_where_the_kernel_cannot_confine_it() {
        let missing = Support {
            landlock_abi: Err("the kernel was built without Landlock (ENOSYS)".into()),
            network_namespace: Support::probe().network_namespace.clone(),
        };
        let f = fixture(NetworkSetting::Auto, Some(missing));
        let marker = f.project.join("ran");
        let command = format!("touch {}", marker.display());
        let result = f.call("bash", json!({ "command": command }));
        assert!(result.is_error);
        assert_eq!(result.error_kind(), Some("sandbox"));
        assert_eq!(code(&result), Some("sandbox.unconfined"));
        assert!(
            result.content.contains("without Landlock"),
            "{}",
            result.content
        );
        assert!(
            result.content.contains("--approval ask"),
            "{}",
            result.content
        );
        assert!(
            result.content.contains("smith sandbox"),
            "{}",
            result.content
        );
        assert!(!marker.exists());
        // In `ask` the user approved the command: it runs with what there is.
        f.cell.set(Approval::Ask);
        let result = f.call("bash", json!({ "command": command }));
        assert!(!result.is_error, "{}", result.content);
        assert!(marker.exists());
    }

    #[test]
    fn network_follows_the_setting_and_the_mode() {
        use Approval::{Ask, ReadOnly, Workspace};
        for mode in [ReadOnly, Workspace] {
            assert_eq!(NetworkSetting::Auto.network_for(mode, true), Network::Off);
        }
        assert_eq!(NetworkSetting::Auto.network_for(Ask, false), Network::Off);
        assert_eq!(NetworkSetting::Auto.network_for(Ask, true), Network::On);
        assert_eq!(NetworkSetting::Off.network_for(Ask, true), Network::Off);
        assert_eq!(
            NetworkSetting::On.network_for(Workspace, false),
            Network::On
        );
        let f = fixture(NetworkSetting::Auto, None);
        // In `workspace` a command has the network off; in `ask` (where it
        // ran only once the permission policy let it through) on.
        let off = f.sandbox.for_command("bash", Workspace).expect("off");
        assert_eq!(
            off.isolates_network(),
            Support::probe().network_namespace.is_ok()
        );
        let on = f.sandbox.for_command("bash", Ask).expect("on");
        assert!(!on.isolates_network());
    }

    #[test]
    fn a_policy_that_cannot_be_built_refuses_every_sandboxed_call() {
        let dir = tempfile::tempdir().expect("temp dir");
        let builder = Policy::builder()
            .project_root(dir.path())
            .write_root(dir.path().join("missing"));
        let sandbox = Arc::new(Sandbox::new(builder, NetworkSetting::Auto));
        let cx = ToolContext::new(dir.path())
            .expect("context")
            .with_approval(ApprovalCell::new(Approval::Workspace))
            .with_sandbox(sandbox);
        let tools = ToolSet::builtin();
        let bash = tools.get("bash").expect("bash");
        let result = bash.call(&json!({"command": "true"}), &cx);
        assert_eq!(code(&result), Some("sandbox.write-root-missing"));
    }
}
