//! Host effects a plugin asks for: capability checks, execution and the
//! effect journal.
//!
//! Every effect is checked against the plugin's [`Grants`] **before**
//! anything runs. A denied effect returns `effect-error.denied` to the guest
//! and leaves a [`Denial`] naming the plugin, the capability and the missing
//! grant. A granted effect is recorded like a built-in tool's: an
//! [`EffectIntent`] before it runs (a failed intent record prevents it) and
//! an [`EffectCompletion`] after, with its three-state mutation evidence.

use std::ffi::OsStr;
use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use sha2::{Digest as _, Sha256};
use smith_engine::journal::{
    EffectCompletion, EffectIntent, EffectJournal, Outcome, canonical_cbor,
};
use smith_engine::tools::Mutation;

use crate::manifest::{self, Manifest};
use crate::runtime::hex;

/// The largest file `read-file` returns and the largest HTTP body
/// `http-request` sends or returns.
pub const MAX_EFFECT_BYTES: usize = 16 << 20;

/// The most entries `list-dir` returns.
pub const MAX_DIR_ENTRIES: usize = 4096;

/// The most bytes of standard output, and of standard error, `run-process`
/// returns.
pub const MAX_PROCESS_OUTPUT: usize = 1 << 20;

/// The longest timeout `run-process` accepts.
pub const MAX_PROCESS_TIMEOUT: Duration = Duration::from_secs(600);

/// The most entries one `session-entries` page returns.
pub const MAX_SESSION_PAGE: u32 = 256;

/// How the embedding answers `session-entries`: given an offset and a
/// limit, the current session's messages from that offset on, as
/// `(role, text)` pairs, oldest first (the host bounds the page again).
pub type SessionSource = Arc<dyn Fn(u64, u32) -> Vec<(String, String)> + Send + Sync>;

/// How the embedding resolves a secret handle (`provider.slot`, as
/// `smith auth status` lists them) to its value: `Ok(None)` when no source
/// holds it, `Err` with a reason when resolving failed. The value goes only
/// into the HTTP requests the host sends; it never reaches a plugin.
pub type SecretSource = Arc<dyn Fn(&str) -> Result<Option<String>, String> + Send + Sync>;

/// The shortest value `register-secret` accepts: a shorter one would redact
/// ordinary words from every line smith prints.
pub const MIN_REGISTERED_SECRET: usize = 8;

/// The longest value `register-secret` accepts.
pub const MAX_REGISTERED_SECRET: usize = 4096;

/// How a header value names a secret for the host to put in its place.
const SECRET_OPEN: &str = "{secret:";

/// What a plugin may do beyond logging: the capabilities its manifest asks
/// for and the user granted (installing a plugin grants what its manifest
/// lists; built-ins get theirs from [`crate::builtin`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// The plugin's data folder; `fs-read` folders are relative to it.
    pub data_dir: PathBuf,
    /// Folders (relative to `data_dir`) the plugin may read and list.
    pub fs_read: Vec<String>,
    /// Folders (relative to `data_dir`) the plugin may write and edit in.
    pub fs_write: Vec<String>,
    /// Whether the plugin may run processes.
    pub process: bool,
    /// Whether the plugin may read the current session's messages.
    pub session_read: bool,
    /// Hosts the plugin may send HTTP requests to.
    pub net: Vec<String>,
    /// Whether the plugin may show UI intents.
    pub ui: bool,
    /// Secret handles (`provider.slot`) the plugin may have the host use.
    pub secrets: Vec<String>,
    /// Whether the plugin may snapshot, compare and restore the project's
    /// working tree.
    pub vcs: bool,
}

impl Grants {
    /// No grants at all: every effect is denied.
    pub fn none() -> Self {
        Self::default()
    }

    /// The grants a manifest lists, with the plugin's data folder under the
    /// user plugin root `root`.
    pub fn from_manifest(manifest: &Manifest, root: &Path) -> Self {
        let mut grants = Grants {
            data_dir: manifest::data_dir(root, &manifest.name),
            ..Grants::default()
        };
        for (kind, value) in &manifest.capabilities {
            match kind.as_str() {
                "fs-read" => grants.fs_read.push(value.clone()),
                "fs-write" => grants.fs_write.push(value.clone()),
                "process" => grants.process = true,
                "session-read" => grants.session_read = true,
                "net" => grants.net.push(value.to_ascii_lowercase()),
                "ui" => grants.ui = true,
                "secrets" => grants.secrets.push(value.clone()),
                "vcs" => grants.vcs = true,
                _ => {}
            }
        }
        grants
    }
}

/// An effect the host refused because a grant was missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The plugin that asked.
    pub plugin: String,
    /// The capability it needed (`fs-read`, `fs-write`, `process`, `net`,
    /// `session-read`, `ui`).
    pub capability: &'static str,
    /// The manifest line that would grant it.
    pub missing_grant: String,
    /// What it asked for.
    pub request: String,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plugin {} was denied {}: it needs the capability {} and its grants lack `{}`; nothing ran. Add `{}` to the capabilities block of its plugin.kdl and reinstall it if the plugin should be allowed this",
            self.plugin, self.request, self.capability, self.missing_grant, self.missing_grant
        )
    }
}

/// Why an effect did not happen or failed (the guest receives the same as
/// `effect-error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EffectError {
    /// No grant; nothing ran.
    Denied(Denial),
    /// A malformed request; nothing ran.
    Invalid(String),
    /// The effect ran and failed.
    Failed(String),
}

impl std::fmt::Display for EffectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EffectError::Denied(denial) => denial.fmt(f),
            EffectError::Invalid(message) | EffectError::Failed(message) => f.write_str(message),
        }
    }
}

/// An HTTP response returned to the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// The complete body.
    pub body: Vec<u8>,
}

/// What a folder entry is (symlinks are reported, not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else.
    Other,
}

/// A folder's entries, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirListing {
    /// Names and kinds, at most [`MAX_DIR_ENTRIES`].
    pub entries: Vec<(String, EntryKind)>,
    /// Whether the folder had more entries.
    pub truncated: bool,
}

/// How a process run by `run-process` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessEnd {
    /// It exited with this status code.
    Exited(i32),
    /// A signal not sent by smith ended it.
    Signalled(i32),
    /// Smith killed it at its timeout.
    TimedOut,
    /// Smith killed it because the call was cancelled or reached its
    /// deadline.
    Cancelled,
}

impl std::fmt::Display for ProcessEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessEnd::Exited(code) => write!(f, "exited with status {code}"),
            ProcessEnd::Signalled(signal) => write!(f, "ended by signal {signal}"),
            ProcessEnd::TimedOut => f.write_str("killed at its timeout"),
            ProcessEnd::Cancelled => f.write_str("killed because the call was cancelled"),
        }
    }
}

/// What a process run by `run-process` produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessOutput {
    /// How it ended.
    pub end: ProcessEnd,
    /// Standard output, at most [`MAX_PROCESS_OUTPUT`] bytes.
    pub stdout: Vec<u8>,
    /// Whether standard output was cut.
    pub stdout_truncated: bool,
    /// Standard error, at most [`MAX_PROCESS_OUTPUT`] bytes.
    pub stderr: Vec<u8>,
    /// Whether standard error was cut.
    pub stderr_truncated: bool,
}

/// A `run-process` request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessRequest {
    /// The program (looked up on `PATH` unless it contains a `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working folder, relative to the plugin's data folder (empty for
    /// the data folder).
    pub cwd: String,
    /// Milliseconds before it is killed.
    pub timeout_ms: u32,
    /// Bytes written to its standard input.
    pub stdin: Vec<u8>,
}

/// Where a plugin's granted effects run and are recorded.
#[derive(Clone)]
pub struct Effects {
    plugin: String,
    grants: Grants,
    journal: Arc<dyn EffectJournal>,
    ids: Arc<AtomicU64>,
    net: Option<Arc<smith_net::Client>>,
    session: Option<SessionSource>,
    secrets: Option<SecretSource>,
    project: Option<PathBuf>,
    generation: u32,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Effects")
            .field("plugin", &self.plugin)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl Effects {
    /// Effects of `plugin` under `grants`, recorded in `journal` with effect
    /// ids `fx-N` drawn from `ids` (share the session's sequence so ids stay
    /// unique), carrying `generation` as the plugin generation.
    pub fn new(
        plugin: &str,
        grants: Grants,
        journal: Arc<dyn EffectJournal>,
        ids: Arc<AtomicU64>,
        generation: u32,
    ) -> Self {
        Self {
            plugin: plugin.to_owned(),
            grants,
            journal,
            ids,
            net: None,
            session: None,
            secrets: None,
            project: None,
            generation,
        }
    }

    /// Uses `client` (smith's HTTP engine) for `http-request`; without one,
    /// granted requests fail saying so.
    #[must_use]
    pub fn with_net(mut self, client: Arc<smith_net::Client>) -> Self {
        self.net = Some(client);
        self
    }

    /// Answers `session-entries` from `source` (the embedding's view of
    /// the current session); without one, granted calls fail saying so.
    #[must_use]
    pub fn with_session(mut self, source: SessionSource) -> Self {
        self.session = Some(source);
        self
    }

    /// Resolves the secret handles the plugin is granted through `source`
    /// (smith's credential resolver); without one, granted handles resolve
    /// to nothing.
    #[must_use]
    pub fn with_secrets(mut self, source: SecretSource) -> Self {
        self.secrets = Some(source);
        self
    }

    /// The project folder the `vcs` effects work on (the runtime's working
    /// folder); without one, granted calls fail saying so.
    #[must_use]
    pub fn with_project(mut self, folder: PathBuf) -> Self {
        self.project = Some(folder);
        self
    }

    /// The plugin's grants.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    fn deny(&self, capability: &'static str, grant: String, request: String) -> EffectError {
        EffectError::Denied(Denial {
            plugin: self.plugin.clone(),
            capability,
            missing_grant: grant,
            request,
        })
    }

    /// Records the intent of `tool` with `input`; returns its effect id.
    fn intent(&self, tool: &str, input: &serde_json::Value) -> Result<String, EffectError> {
        let effect_id = format!("fx-{}", self.ids.fetch_add(1, Ordering::SeqCst) + 1);
        let input = canonical_cbor(input).map_err(|e| {
            EffectError::Failed(format!("the effect's input could not be encoded: {e}"))
        })?;
        self.journal
            .record_intent(&EffectIntent {
                effect_id: effect_id.clone(),
                parent: format!("plugin:{}", self.plugin),
                tool: tool.to_owned(),
                plugin_generation: self.generation,
                input,
            })
            .map_err(|e| {
                EffectError::Failed(format!(
                    "the effect was not run because its intent could not be recorded: {e}"
                ))
            })?;
        Ok(effect_id)
    }

    fn complete(
        &self,
        effect_id: String,
        outcome: Outcome,
        mutation: Mutation,
        output: &serde_json::Value,
    ) -> Result<(), EffectError> {
        let output = canonical_cbor(output).map_err(|e| {
            EffectError::Failed(format!("the effect's output could not be encoded: {e}"))
        })?;
        self.journal
            .record_completion(&EffectCompletion {
                effect_id,
                outcome,
                mutation,
                output,
            })
            .map_err(|e| {
                EffectError::Failed(format!(
                    "the effect ran but its completion could not be recorded: {e}"
                ))
            })
    }

    /// Completes `effect_id` from what the effect did: `Ok((value,
    /// mutation, output))` is recorded as ok and returns `value`;
    /// `Err((message, mutation))` is recorded as an error with `message`
    /// (the caller prefixes the effect's name) and fails with it.
    fn settle<T>(
        &self,
        effect_id: String,
        result: Result<(T, Mutation, serde_json::Value), (String, Mutation)>,
    ) -> Result<T, EffectError> {
        match result {
            Ok((value, mutation, output)) => {
                self.complete(effect_id, Outcome::Ok, mutation, &output)?;
                Ok(value)
            }
            Err((message, mutation)) => {
                self.complete(
                    effect_id,
                    Outcome::Error,
                    mutation,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(message))
            }
        }
    }

    /// `read-file`: checks the path against the `fs-read` grants, records
    /// the intent, reads, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder; failed when reading fails.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, EffectError> {
        let file = self.check_path(PathCheck {
            op: "read-file",
            path,
            capability: "fs-read",
            grant_folder: GrantFolder::Parent,
            may_be_root: false,
            nothing: "read",
        })?;
        let effect_id = self.intent(
            "plugin.read-file",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = read_bounded(&file);
        let output = match &result {
            Ok(bytes) => json!({"bytes": bytes.len()}),
            Err(message) => json!({"error": message}),
        };
        let outcome = if result.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("read-file {path:?}: {message}")))
    }

    /// Checks `check.path` lexically (relative, no `..`), against the
    /// grants of `check.capability`, and against symlinks leading out of
    /// the granted folder; returns the path to use. Runs nothing.
    fn check_path(&self, check: PathCheck<'_>) -> Result<PathBuf, EffectError> {
        let PathCheck {
            op,
            path,
            capability,
            grant_folder,
            may_be_root,
            nothing,
        } = check;
        let invalid = || {
            EffectError::Invalid(format!(
                "{op} {path:?}: the path must be relative to the plugin's data folder and stay inside it (no `..`, no absolute path); nothing was {nothing}"
            ))
        };
        let parts = match relative_parts(path) {
            Some(parts) if may_be_root || !parts.is_empty() => parts,
            _ => return Err(invalid()),
        };
        let roots = match capability {
            "fs-write" => &self.grants.fs_write,
            _ => &self.grants.fs_read,
        };
        let Some(root) = roots.iter().find_map(|root| {
            relative_parts(root).filter(|root_parts| parts.starts_with(root_parts))
        }) else {
            let shown = match grant_folder {
                GrantFolder::Parent => &parts[..parts.len().saturating_sub(1)],
                GrantFolder::Itself => &parts[..],
            };
            let folder = if shown.is_empty() {
                ".".to_owned()
            } else {
                shown
                    .iter()
                    .collect::<PathBuf>()
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(self.deny(
                capability,
                format!("{capability} {folder:?}"),
                format!("{op} {path:?}"),
            ));
        };
        if let Err(why) = resolves_inside(&self.grants.data_dir, &root, &parts) {
            let folder = if root.is_empty() {
                ".".to_owned()
            } else {
                root.iter()
                    .collect::<PathBuf>()
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(EffectError::Invalid(format!(
                "{op} {path:?}: the path resolves outside the granted folder {folder:?} ({why}); nothing was {nothing}"
            )));
        }
        Ok(self.grants.data_dir.join(parts.iter().collect::<PathBuf>()))
    }

    /// `list-dir`: checks the folder against the `fs-read` grants, records
    /// the intent, lists at most [`MAX_DIR_ENTRIES`] entries sorted by
    /// name, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the folder; invalid when the path
    /// leaves the data folder; failed when listing fails.
    pub fn list_dir(&self, path: &str) -> Result<DirListing, EffectError> {
        let dir = self.check_path(PathCheck {
            op: "list-dir",
            path,
            capability: "fs-read",
            grant_folder: GrantFolder::Itself,
            may_be_root: true,
            nothing: "listed",
        })?;
        let effect_id = self.intent(
            "plugin.list-dir",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = list_bounded(&dir);
        let (outcome, output) = match &result {
            Ok(listing) => (
                Outcome::Ok,
                json!({"entries": listing.entries.len(), "truncated": listing.truncated}),
            ),
            Err(message) => (Outcome::Error, json!({"error": message})),
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("list-dir {path:?}: {message}")))
    }

    /// `write-file`: checks the path against the `fs-write` grants, records
    /// the intent, creates missing parent folders inside the granted
    /// folder, writes a temporary file next to the target and renames it
    /// over the target, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder or the bytes are too many; failed when
    /// writing fails (the completion says whether anything changed).
    pub fn write_file(&self, path: &str, bytes: &[u8]) -> Result<(), EffectError> {
        let file = self.check_path(PathCheck {
            op: "write-file",
            path,
            capability: "fs-write",
            grant_folder: GrantFolder::Parent,
            may_be_root: false,
            nothing: "written",
        })?;
        if bytes.len() > MAX_EFFECT_BYTES {
            return Err(EffectError::Invalid(format!(
                "write-file {path:?}: {} bytes is more than the {MAX_EFFECT_BYTES} allowed; nothing was written",
                bytes.len()
            )));
        }
        let effect_id = self.intent(
            "plugin.write-file",
            &json!({
                "plugin": self.plugin,
                "path": path,
                "bytes": bytes.len(),
                "sha256": hex(&Sha256::digest(bytes)),
            }),
        )?;
        self.finish_write(effect_id, "write-file", path, &file, bytes)
    }

    /// `edit-file`: checks the path against the `fs-write` grants, records
    /// the intent, reads the file, replaces the single occurrence of `old`
    /// with `new` and writes it back atomically, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder or `old` is empty; failed when the file cannot
    /// be read, is not UTF-8, or `old` does not occur exactly once (nothing
    /// changed), or when writing fails.
    pub fn edit_file(&self, path: &str, old: &str, new: &str) -> Result<(), EffectError> {
        let file = self.check_path(PathCheck {
            op: "edit-file",
            path,
            capability: "fs-write",
            grant_folder: GrantFolder::Parent,
            may_be_root: false,
            nothing: "edited",
        })?;
        if old.is_empty() {
            return Err(EffectError::Invalid(format!(
                "edit-file {path:?}: old-text is empty; pass the exact text to replace (it must occur exactly once); nothing was edited"
            )));
        }
        let effect_id = self.intent(
            "plugin.edit-file",
            &json!({
                "plugin": self.plugin,
                "path": path,
                "old_bytes": old.len(),
                "old_sha256": hex(&Sha256::digest(old.as_bytes())),
                "new_bytes": new.len(),
                "new_sha256": hex(&Sha256::digest(new.as_bytes())),
            }),
        )?;
        let refuse = |effect_id: String, message: String| -> Result<(), EffectError> {
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            Err(EffectError::Failed(format!(
                "edit-file {path:?}: {message}"
            )))
        };
        let bytes = match read_bounded(&file) {
            Ok(bytes) => bytes,
            Err(message) => return refuse(effect_id, message),
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return refuse(
                effect_id,
                "the file is not UTF-8 text; use write-file to replace it whole; it was left unchanged".to_owned(),
            );
        };
        let count = text.matches(old).count();
        if count != 1 {
            let message = if count == 0 {
                "old-text was not found (0 occurrences); it must occur exactly once, including whitespace; the file was left unchanged".to_owned()
            } else {
                format!(
                    "old-text occurs {count} times; it must occur exactly once: include more of the surrounding text; the file was left unchanged"
                )
            };
            return refuse(effect_id, message);
        }
        let edited = text.replacen(old, new, 1);
        if edited.len() > MAX_EFFECT_BYTES {
            return refuse(
                effect_id,
                format!(
                    "the edited file would have {} bytes, more than the {MAX_EFFECT_BYTES} allowed; it was left unchanged",
                    edited.len()
                ),
            );
        }
        self.finish_write(effect_id, "edit-file", path, &file, edited.as_bytes())
    }

    fn finish_write(
        &self,
        effect_id: String,
        op: &str,
        path: &str,
        file: &Path,
        bytes: &[u8],
    ) -> Result<(), EffectError> {
        match replace_file(file, bytes) {
            Ok(created) => {
                self.complete(
                    effect_id,
                    Outcome::Ok,
                    Mutation::Applied,
                    &json!({"bytes": bytes.len(), "created_folders": created}),
                )?;
                Ok(())
            }
            Err((message, mutation)) => {
                self.complete(
                    effect_id,
                    Outcome::Error,
                    mutation,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(format!("{op} {path:?}: {message}")))
            }
        }
    }

    /// `run-process`: checks the `process` grant and the working folder,
    /// records the intent, runs the program with an environment holding
    /// only `PATH`, kills its process group at the timeout or when
    /// `stop()` turns true, and records the completion (mutation unknown
    /// once it started).
    ///
    /// # Errors
    ///
    /// Denied without `process`; invalid for an empty program, a timeout of
    /// 0 or above [`MAX_PROCESS_TIMEOUT`], too much stdin or a working
    /// folder leaving the data folder; failed when it cannot be started
    /// (nothing ran).
    pub fn run_process(
        &self,
        request: &ProcessRequest,
        stop: &dyn Fn() -> bool,
    ) -> Result<ProcessOutput, EffectError> {
        let program = &request.program;
        if !self.grants.process {
            return Err(self.deny(
                "process",
                "process".to_owned(),
                format!("run-process {program:?}"),
            ));
        }
        let invalid = |why: String| -> Result<ProcessOutput, EffectError> {
            Err(EffectError::Invalid(format!(
                "run-process {program:?}: {why}; nothing ran"
            )))
        };
        if program.is_empty() || program.contains('\0') {
            return invalid("the program name is empty or holds a NUL character".to_owned());
        }
        if request.args.iter().any(|a| a.contains('\0')) {
            return invalid("an argument holds a NUL character".to_owned());
        }
        let timeout = Duration::from_millis(u64::from(request.timeout_ms));
        if timeout.is_zero() || timeout > MAX_PROCESS_TIMEOUT {
            return invalid(format!(
                "timeout-ms {} is outside 1..={}",
                request.timeout_ms,
                MAX_PROCESS_TIMEOUT.as_millis()
            ));
        }
        if request.stdin.len() > MAX_EFFECT_BYTES {
            return invalid(format!(
                "stdin has {} bytes, more than the {MAX_EFFECT_BYTES} allowed",
                request.stdin.len()
            ));
        }
        let cwd = &request.cwd;
        let Some(parts) = relative_parts(cwd) else {
            return invalid(format!(
                "the working folder {cwd:?} must be relative to the plugin's data folder and stay inside it (no `..`, no absolute path)"
            ));
        };
        if let Err(why) = resolves_inside(&self.grants.data_dir, &[], &parts) {
            return invalid(format!(
                "the working folder {cwd:?} resolves outside the plugin's data folder ({why})"
            ));
        }
        let dir = self.grants.data_dir.join(parts.iter().collect::<PathBuf>());
        let effect_id = self.intent(
            "plugin.run-process",
            &json!({
                "plugin": self.plugin,
                "program": program,
                "args": request.args,
                "cwd": cwd,
                "timeout_ms": request.timeout_ms,
                "stdin_bytes": request.stdin.len(),
            }),
        )?;
        match spawn_and_wait(request, &dir, timeout, stop) {
            Err(message) => {
                let message = format!(
                    "could not start it in {}: {message}; nothing ran",
                    dir.display()
                );
                self.complete(
                    effect_id,
                    Outcome::Error,
                    Mutation::NotApplied,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(format!(
                    "run-process {program:?}: {message}"
                )))
            }
            Ok(output) => {
                let outcome = match output.end {
                    ProcessEnd::Exited(0) => Outcome::Ok,
                    ProcessEnd::Cancelled => Outcome::Cancelled,
                    _ => Outcome::Error,
                };
                self.complete(
                    effect_id,
                    outcome,
                    Mutation::Unknown,
                    &json!({
                        "end": output.end.to_string(),
                        "stdout_bytes": output.stdout.len(),
                        "stdout_truncated": output.stdout_truncated,
                        "stderr_bytes": output.stderr.len(),
                        "stderr_truncated": output.stderr_truncated,
                    }),
                )?;
                Ok(output)
            }
        }
    }

    /// `session-entries`: checks the `session-read` grant, records the
    /// intent, asks the session source for at most
    /// [`MAX_SESSION_PAGE`] entries (and at most [`MAX_EFFECT_BYTES`] of
    /// text) from `offset`, records the completion (a read: not-applied).
    ///
    /// # Errors
    ///
    /// Denied without `session-read`; failed when the host has no session
    /// source.
    pub fn session_entries(
        &self,
        offset: u64,
        limit: u32,
    ) -> Result<Vec<(String, String)>, EffectError> {
        if !self.grants.session_read {
            return Err(self.deny(
                "session-read",
                "session-read".to_owned(),
                format!("session-entries from entry {offset}"),
            ));
        }
        let limit = limit.min(MAX_SESSION_PAGE);
        let effect_id = self.intent(
            "plugin.session-entries",
            &json!({"plugin": self.plugin, "offset": offset, "limit": limit}),
        )?;
        let Some(source) = &self.session else {
            let message = "session-entries: this host has no session to offer plugins (none is open here); nothing was read".to_owned();
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            return Err(EffectError::Failed(message));
        };
        let mut entries = source(offset, limit);
        entries.truncate(limit as usize);
        let mut total = 0usize;
        let keep = entries
            .iter()
            .take_while(|(role, text)| {
                total = total.saturating_add(role.len() + text.len());
                total <= MAX_EFFECT_BYTES
            })
            .count();
        let cut = keep < entries.len();
        entries.truncate(keep);
        self.complete(
            effect_id,
            Outcome::Ok,
            Mutation::NotApplied,
            &json!({"entries": entries.len(), "cut_at_byte_limit": cut}),
        )?;
        Ok(entries)
    }

    /// `http-request`: checks the URL's host against the `net` grants,
    /// records the intent, sends through smith-net, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant for the host; invalid for a bad method or
    /// URL; failed when the exchange fails.
    pub fn http_request(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<HttpResponse, EffectError> {
        let method = match method.to_ascii_uppercase().as_str() {
            "GET" => smith_net::Method::Get,
            "HEAD" => smith_net::Method::Head,
            "POST" => smith_net::Method::Post,
            "PUT" => smith_net::Method::Put,
            "PATCH" => smith_net::Method::Patch,
            "DELETE" => smith_net::Method::Delete,
            "OPTIONS" => smith_net::Method::Options,
            other => {
                return Err(EffectError::Invalid(format!(
                    "http-request: unknown method {other:?}; use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS"
                )));
            }
        };
        let parsed = smith_net::Url::parse(url)
            .map_err(|e| EffectError::Invalid(format!("http-request: bad URL: {e}")))?;
        let host = parsed.host().to_ascii_lowercase();
        if !self.grants.net.contains(&host) {
            return Err(self.deny(
                "net",
                format!("net {host:?}"),
                format!("http-request {} to host {host}", method.as_str()),
            ));
        }
        if body.len() > MAX_EFFECT_BYTES {
            return Err(EffectError::Invalid(format!(
                "http-request: the body has {} bytes, more than the {MAX_EFFECT_BYTES} allowed",
                body.len()
            )));
        }
        let mut handles: Vec<String> = Vec::new();
        for (name, value) in headers {
            for handle in secret_references(value).map_err(|problem| {
                EffectError::Invalid(format!("http-request: header {name:?}: {problem}"))
            })? {
                if !self.grants.secrets.iter().any(|g| g == handle) {
                    return Err(self.deny(
                        "secrets",
                        format!("secrets {handle:?}"),
                        format!(
                            "the secret {handle} in header {name:?} of an http-request to {host}"
                        ),
                    ));
                }
                if !handles.iter().any(|h| h == handle) {
                    handles.push(handle.to_owned());
                }
            }
        }
        let mut request = smith_net::Request::new(method, url)
            .map_err(|e| EffectError::Invalid(format!("http-request: {e}")))?
            .with_body(body);
        // Header values may carry credentials: the journal holds the names
        // and the handles of the secrets the host put in, never values.
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        let effect_id = self.intent(
            "plugin.http-request",
            &json!({"plugin": self.plugin, "method": method.as_str(), "url": url, "headers": names, "secrets": handles}),
        )?;
        let idempotent = method.is_idempotent();
        let mut values = Vec::with_capacity(handles.len());
        for handle in &handles {
            match self.resolve_secret(handle) {
                Ok(value) => values.push((handle.as_str(), value)),
                Err(message) => {
                    let message = format!("http-request: {message}; nothing was sent");
                    self.complete(
                        effect_id,
                        Outcome::Error,
                        Mutation::NotApplied,
                        &json!({"error": message}),
                    )?;
                    return Err(EffectError::Failed(message));
                }
            }
        }
        for (name, value) in headers {
            request
                .headers_mut()
                .append(name, expand_secrets(value, &values));
        }
        let Some(client) = &self.net else {
            let message = "http-request: this host has no HTTP engine configured for plugins; nothing was sent".to_owned();
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            return Err(EffectError::Failed(message));
        };
        let result = send(client, request);
        let (outcome, mutation, output) = match &result {
            Ok(response) => (
                Outcome::Ok,
                if idempotent {
                    Mutation::NotApplied
                } else {
                    Mutation::Applied
                },
                json!({"status": response.status, "bytes": response.body.len()}),
            ),
            Err(message) => (
                Outcome::Error,
                if idempotent {
                    Mutation::NotApplied
                } else {
                    Mutation::Unknown
                },
                json!({"error": message}),
            ),
        };
        self.complete(effect_id, outcome, mutation, &output)?;
        result.map_err(|message| EffectError::Failed(format!("http-request: {message}")))
    }

    /// The value of the granted secret `handle`, registered with
    /// smith-diag so that it is redacted wherever it would be printed.
    fn resolve_secret(&self, handle: &str) -> Result<String, String> {
        let Some(source) = &self.secrets else {
            return Err(format!(
                "the secret {handle} cannot be resolved: this host offers plugins no secrets"
            ));
        };
        match source(handle) {
            Ok(Some(value)) => {
                smith_diag::secrets::register(&value);
                Ok(value)
            }
            Ok(None) => {
                let (provider, slot) = handle.split_once('.').unwrap_or((handle, ""));
                Err(format!(
                    "the secret {handle} is not set; store it with `smith auth set {provider} --slot {slot}`"
                ))
            }
            Err(reason) => Err(format!(
                "the secret {handle} could not be resolved: {reason}"
            )),
        }
    }

    /// `secret-available`: whether the granted secret `handle` resolves,
    /// without giving its value to anyone. Recorded as a read.
    ///
    /// # Errors
    ///
    /// Denied without `secrets "HANDLE"`; failed when resolving fails for
    /// a reason other than the secret being unset.
    pub fn secret_available(&self, handle: &str) -> Result<bool, EffectError> {
        if !self.grants.secrets.iter().any(|g| g == handle) {
            return Err(self.deny(
                "secrets",
                format!("secrets {handle:?}"),
                format!("secret-available {handle:?}"),
            ));
        }
        let effect_id = self.intent(
            "plugin.secret-available",
            &json!({"plugin": self.plugin, "handle": handle}),
        )?;
        let answer = match &self.secrets {
            None => Ok(false),
            Some(source) => source(handle).map(|v| v.is_some_and(|v| !v.is_empty())),
        };
        let result = match answer {
            Ok(available) => Ok((
                available,
                Mutation::NotApplied,
                json!({"available": available}),
            )),
            Err(reason) => Err((
                format!("secret-available: the secret {handle} could not be resolved: {reason}"),
                Mutation::NotApplied,
            )),
        };
        self.settle(effect_id, result)
    }

    /// `register-secret`: from now on smith redacts `value` (a credential
    /// the plugin obtained itself) wherever it would print it. Needs at
    /// least one `secrets` grant; recorded with the value's length only.
    ///
    /// # Errors
    ///
    /// Denied without any `secrets` grant; invalid when the value is
    /// shorter than [`MIN_REGISTERED_SECRET`] or longer than
    /// [`MAX_REGISTERED_SECRET`] bytes.
    pub fn register_secret(&self, value: &str) -> Result<(), EffectError> {
        if self.grants.secrets.is_empty() {
            return Err(self.deny(
                "secrets",
                "secrets \"PROVIDER.SLOT\"".to_owned(),
                format!("register-secret of a {}-byte value", value.len()),
            ));
        }
        if !(MIN_REGISTERED_SECRET..=MAX_REGISTERED_SECRET).contains(&value.len()) {
            return Err(EffectError::Invalid(format!(
                "register-secret: the value has {} bytes; a secret must have {MIN_REGISTERED_SECRET} to {MAX_REGISTERED_SECRET} (shorter values would redact ordinary text)",
                value.len()
            )));
        }
        let effect_id = self.intent(
            "plugin.register-secret",
            &json!({"plugin": self.plugin, "bytes": value.len()}),
        )?;
        smith_diag::secrets::register(value);
        self.complete(
            effect_id,
            Outcome::Ok,
            Mutation::Applied,
            &json!({"registered": true}),
        )
    }

    /// The repository of the project folder for a `vcs` effect named
    /// `what`, after the grant check.
    fn repo(&self, what: String) -> Result<crate::vcs::Repo, EffectError> {
        if !self.grants.vcs {
            return Err(self.deny("vcs", "vcs".to_owned(), what));
        }
        let Some(project) = &self.project else {
            return Err(EffectError::Failed(format!(
                "{what}: this host offers plugins no project folder; nothing ran"
            )));
        };
        crate::vcs::Repo::open(project).map_err(|e| EffectError::Failed(format!("{what}: {e}")))
    }

    /// `vcs-snapshot`: records the project's working tree as a snapshot in
    /// its git repository (see [`crate::vcs`]); returns the snapshot id.
    ///
    /// # Errors
    ///
    /// Denied without `vcs`; failed outside a git working tree or when git
    /// fails.
    pub fn vcs_snapshot(&self, label: &str) -> Result<String, EffectError> {
        let repo = self.repo(format!("vcs-snapshot {label:?}"))?;
        let effect_id = self.intent(
            "plugin.vcs-snapshot",
            &json!({"plugin": self.plugin, "repository": repo.root().display().to_string(), "label": label}),
        )?;
        let result = match repo.snapshot(label) {
            Ok(id) => {
                let output = json!({"snapshot": id});
                Ok((id, Mutation::Applied, output))
            }
            Err(message) => Err((format!("vcs-snapshot: {message}"), Mutation::Unknown)),
        };
        self.settle(effect_id, result)
    }

    /// `vcs-diff`: the diff from snapshot `from` to snapshot `to` (the
    /// working tree now when `to` is empty), cut at 1 MiB.
    ///
    /// # Errors
    ///
    /// Denied without `vcs`; invalid when an id is not a snapshot; failed
    /// when git fails.
    pub fn vcs_diff(&self, from: &str, to: &str) -> Result<crate::vcs::DiffText, EffectError> {
        let repo = self.repo(format!("vcs-diff {from:?} {to:?}"))?;
        repo.check_ids(&[from, to])
            .map_err(|e| EffectError::Invalid(format!("vcs-diff: {e}")))?;
        let effect_id = self.intent(
            "plugin.vcs-diff",
            &json!({"plugin": self.plugin, "repository": repo.root().display().to_string(), "from": from, "to": to}),
        )?;
        let result = match repo.diff(from, to) {
            Ok(diff) => {
                let output = json!({"bytes": diff.text.len(), "truncated": diff.truncated});
                Ok((diff, Mutation::NotApplied, output))
            }
            Err(message) => Err((format!("vcs-diff: {message}"), Mutation::NotApplied)),
        };
        self.settle(effect_id, result)
    }

    /// `vcs-restore`: makes the working tree match snapshot `id`, first
    /// recording it as it is; returns that snapshot's id (restore it to
    /// undo).
    ///
    /// # Errors
    ///
    /// Denied without `vcs`; invalid when `id` is not a snapshot; failed
    /// when git fails (recorded unknown once files may have been written).
    pub fn vcs_restore(&self, id: &str) -> Result<String, EffectError> {
        let repo = self.repo(format!("vcs-restore {id:?}"))?;
        repo.check_ids(&[id])
            .map_err(|e| EffectError::Invalid(format!("vcs-restore: {e}")))?;
        let effect_id = self.intent(
            "plugin.vcs-restore",
            &json!({"plugin": self.plugin, "repository": repo.root().display().to_string(), "snapshot": id}),
        )?;
        let result = match repo.restore(id) {
            Ok(before) => {
                let output = json!({"before": before});
                Ok((before, Mutation::Applied, output))
            }
            Err((message, touched)) => Err((
                format!("vcs-restore: {message}"),
                // Files may have been written once git started on them.
                if touched {
                    Mutation::Unknown
                } else {
                    Mutation::NotApplied
                },
            )),
        };
        self.settle(effect_id, result)
    }

    /// Checks that the plugin may show UI intents and records one as an
    /// effect (`plugin.ui`); `deliver` shows it and says whether it was.
    ///
    /// # Errors
    ///
    /// Denied without the `ui` grant (nothing is shown).
    pub fn ui(
        &self,
        summary: &serde_json::Value,
        deliver: impl FnOnce() -> bool,
    ) -> Result<bool, EffectError> {
        if !self.grants.ui {
            return Err(self.deny("ui", "ui".to_owned(), format!("a UI intent ({summary})")));
        }
        let effect_id = self.intent(
            "plugin.ui",
            &json!({"plugin": self.plugin, "intent": summary}),
        )?;
        let shown = deliver();
        self.complete(
            effect_id,
            Outcome::Ok,
            if shown {
                Mutation::Applied
            } else {
                Mutation::NotApplied
            },
            &json!({"shown": shown}),
        )?;
        Ok(shown)
    }
}

/// The secret handles a header value names as `{secret:HANDLE}`, in order;
/// an error for an opening without a closing brace or an empty handle.
fn secret_references(value: &str) -> Result<Vec<&str>, String> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find(SECRET_OPEN) {
        let after = &rest[at + SECRET_OPEN.len()..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "`{SECRET_OPEN}` has no closing `}}`; write {{secret:PROVIDER.SLOT}}"
            ));
        };
        let handle = &after[..end];
        if handle.is_empty() {
            return Err("`{secret:}` names no secret; write {secret:PROVIDER.SLOT}".to_owned());
        }
        found.push(handle);
        rest = &after[end + 1..];
    }
    Ok(found)
}

/// `value` with every `{secret:HANDLE}` replaced by the handle's value.
fn expand_secrets(value: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find(SECRET_OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + SECRET_OPEN.len()..];
        // `secret_references` accepted this value, so the brace is there.
        let end = after.find('}').unwrap_or(after.len());
        let handle = &after[..end];
        if let Some((_, v)) = values.iter().find(|(h, _)| *h == handle) {
            out.push_str(v);
        }
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

fn read_bounded(file: &Path) -> Result<Vec<u8>, String> {
    let handle = std::fs::File::open(file).map_err(|e| format!("cannot open it: {e}"))?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_EFFECT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() > MAX_EFFECT_BYTES {
        return Err(format!(
            "the file is larger than the {MAX_EFFECT_BYTES} bytes read-file returns"
        ));
    }
    Ok(bytes)
}

fn send(client: &smith_net::Client, request: smith_net::Request) -> Result<HttpResponse, String> {
    let mut response = client
        .send(request, smith_net::CancelToken::new())
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let mut body = Vec::new();
    loop {
        match response.body().next_event() {
            smith_net::BodyEvent::Data(bytes) => {
                if body.len() + bytes.len() > MAX_EFFECT_BYTES {
                    return Err(format!(
                        "the response body is larger than the {MAX_EFFECT_BYTES} bytes http-request returns"
                    ));
                }
                body.extend_from_slice(&bytes);
            }
            smith_net::BodyEvent::End(smith_net::Outcome::Complete { .. }) => break,
            smith_net::BodyEvent::End(other) => {
                return Err(format!("the response body did not complete: {other:?}"));
            }
        }
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

/// Which folder a denial's missing grant names.
#[derive(Clone, Copy)]
enum GrantFolder {
    /// The folder holding the path (a file).
    Parent,
    /// The path itself (a folder).
    Itself,
}

/// One path to check before an effect.
struct PathCheck<'a> {
    /// The import (`read-file`), for messages.
    op: &'a str,
    /// The path the plugin passed.
    path: &'a str,
    /// `fs-read` or `fs-write`.
    capability: &'static str,
    grant_folder: GrantFolder,
    /// Whether the path may name the data folder itself (`.`).
    may_be_root: bool,
    /// What did not happen when refused (`read`, `written`).
    nothing: &'a str,
}

/// The named parts of a relative path (`.` dropped), or `None` when it is
/// absolute or has `..`. An empty path is the root itself.
fn relative_parts(path: &str) -> Option<Vec<&OsStr>> {
    let mut parts = Vec::new();
    for part in Path::new(path).components() {
        match part {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts)
}

/// Whether `data_dir/parts` stays inside `data_dir/root` once symlinks are
/// resolved: the deepest part that exists is resolved; up to the root's
/// depth it must be exactly the lexical path (no symlink on the way to the
/// granted folder), below it inside the granted folder. Parts that do not
/// exist yet cannot be symlinks.
fn resolves_inside(data_dir: &Path, root: &[&OsStr], parts: &[&OsStr]) -> Result<(), String> {
    let Ok(base) = data_dir.canonicalize() else {
        // No data folder yet: nothing below it exists either.
        return if data_dir.symlink_metadata().is_ok() {
            Err("the data folder is a symlink that leads nowhere".to_owned())
        } else {
            Ok(())
        };
    };
    let mut existing = 0;
    let mut at = data_dir.to_path_buf();
    for part in parts {
        at.push(part);
        if at.symlink_metadata().is_err() {
            break;
        }
        existing += 1;
    }
    let deepest = data_dir.join(parts[..existing].iter().collect::<PathBuf>());
    let resolved = deepest
        .canonicalize()
        .map_err(|_| "a symlink on the way leads nowhere".to_owned())?;
    let inside = if existing <= root.len() {
        resolved == base.join(parts[..existing].iter().collect::<PathBuf>())
    } else {
        resolved.starts_with(base.join(root.iter().collect::<PathBuf>()))
    };
    if inside {
        Ok(())
    } else {
        Err("a symlink leads out".to_owned())
    }
}

fn list_bounded(dir: &Path) -> Result<DirListing, String> {
    let reader = std::fs::read_dir(dir).map_err(|e| format!("cannot list it: {e}"))?;
    let mut entries = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| format!("cannot list it: {e}"))?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        entries.push((entry.file_name().to_string_lossy().into_owned(), kind));
    }
    entries.sort();
    let truncated = entries.len() > MAX_DIR_ENTRIES;
    entries.truncate(MAX_DIR_ENTRIES);
    Ok(DirListing { entries, truncated })
}

/// Replaces `file` with `bytes` atomically: creates the missing parent
/// folders, writes a temporary file beside it and renames it over it.
/// Returns how many folders it created; on failure the message and what
/// changed: not-applied when everything was undone, unknown when the
/// rename's outcome or the undoing is uncertain.
fn replace_file(file: &Path, bytes: &[u8]) -> Result<usize, (String, Mutation)> {
    static TEMPS: AtomicU64 = AtomicU64::new(0);
    let parent = file.parent().unwrap_or(Path::new("."));
    let mut missing = Vec::new();
    let mut dir = parent;
    while dir.symlink_metadata().is_err() {
        missing.push(dir.to_path_buf());
        match dir.parent() {
            Some(up) if !up.as_os_str().is_empty() => dir = up,
            _ => break,
        }
    }
    let mut created: Vec<PathBuf> = Vec::new();
    // Undoes the folders created here; tells what is left changed.
    let undo = |created: &[PathBuf], message: String| {
        let clean = created
            .iter()
            .rev()
            .all(|dir| std::fs::remove_dir(dir).is_ok());
        if clean {
            (message, Mutation::NotApplied)
        } else {
            (
                format!("{message} (folders it created could not all be removed)"),
                Mutation::Unknown,
            )
        }
    };
    for dir in missing.iter().rev() {
        match std::fs::create_dir(dir) {
            Ok(()) => created.push(dir.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(undo(
                    &created,
                    format!("cannot create the folder {}: {e}", dir.display()),
                ));
            }
        }
    }
    let name = file
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let temp = parent.join(format!(
        ".{name}.{}-{}.smith-tmp",
        std::process::id(),
        TEMPS.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| -> std::io::Result<()> {
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Ok(meta) = std::fs::metadata(file) {
            out.set_permissions(meta.permissions())?;
        }
        out.write_all(bytes)?;
        out.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(undo(
            &created,
            format!("cannot write the temporary file {}: {e}", temp.display()),
        ));
    }
    match std::fs::rename(&temp, file) {
        Ok(()) => Ok(created.len()),
        Err(e) if temp.symlink_metadata().is_ok() => {
            let _ = std::fs::remove_file(&temp);
            Err(undo(
                &created,
                format!("cannot rename the temporary file over it: {e}"),
            ))
        }
        Err(e) => Err((
            format!(
                "renaming the temporary file over it reported {e} and the temporary file is gone; whether the file was replaced is unknown"
            ),
            Mutation::Unknown,
        )),
    }
}

/// Output captured from one pipe: the first [`MAX_PROCESS_OUTPUT`] bytes,
/// and whether there were more (which are read and discarded so the
/// process never blocks on a full pipe).
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    truncated: bool,
}

fn capture(mut pipe: impl std::io::Read + Send + 'static) -> Arc<Mutex<Captured>> {
    let captured = Arc::new(Mutex::new(Captured::default()));
    let sink = Arc::clone(&captured);
    let _ = std::thread::Builder::new()
        .name("smith-plugin-process-output".to_owned())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let Ok(mut captured) = sink.lock() else { break };
                let room = MAX_PROCESS_OUTPUT - captured.bytes.len();
                if n > room {
                    captured.truncated = true;
                }
                captured.bytes.extend_from_slice(&buf[..n.min(room)]);
            }
            drop(sink);
        });
    captured
}

/// How often the wait loop looks at the process, the timeout and `stop`.
const PROCESS_POLL: Duration = Duration::from_millis(5);
/// How long output is still read after the process ended, for pipes a
/// process that escaped its group keeps open.
const PROCESS_DRAIN: Duration = Duration::from_millis(500);

fn spawn_and_wait(
    request: &ProcessRequest,
    dir: &Path,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<ProcessOutput, String> {
    use std::process::{Command, Stdio};
    let mut command = Command::new(&request.program);
    command
        .args(&request.args)
        .current_dir(dir)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let stdout = child.stdout.take().map(capture);
    let stderr = child.stderr.take().map(capture);
    if let Some(mut input) = child.stdin.take() {
        let bytes = request.stdin.clone();
        let _ = std::thread::Builder::new()
            .name("smith-plugin-process-input".to_owned())
            .spawn(move || {
                // A process that exits without reading its input closes
                // the pipe: that is not an error of the run.
                let _ = input.write_all(&bytes);
            });
    }
    let mut killed = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => {
                killed = Some(ProcessEnd::Cancelled);
                kill_group(&mut child);
                break child.wait().ok();
            }
        }
        let why = if started.elapsed() >= timeout {
            Some(ProcessEnd::TimedOut)
        } else if stop() {
            Some(ProcessEnd::Cancelled)
        } else {
            None
        };
        if let Some(why) = why {
            killed = Some(why);
            kill_group(&mut child);
            break child.wait().ok();
        }
        std::thread::sleep(PROCESS_POLL);
    };
    // Whatever the program left running in its group ends with it.
    kill_group(&mut child);
    let end = killed.unwrap_or_else(|| exit_of(status));
    let drained = Instant::now();
    let take = |captured: Option<Arc<Mutex<Captured>>>| -> (Vec<u8>, bool) {
        let Some(captured) = captured else {
            return (Vec::new(), false);
        };
        while Arc::strong_count(&captured) > 1 && drained.elapsed() < PROCESS_DRAIN {
            std::thread::sleep(Duration::from_millis(1));
        }
        let Ok(mut guard) = captured.lock() else {
            return (Vec::new(), false);
        };
        (std::mem::take(&mut guard.bytes), guard.truncated)
    };
    let (stdout, stdout_truncated) = take(stdout);
    let (stderr, stderr_truncated) = take(stderr);
    Ok(ProcessOutput {
        end,
        stdout,
        stdout_truncated,
        stderr,
        stderr_truncated,
    })
}

fn exit_of(status: Option<std::process::ExitStatus>) -> ProcessEnd {
    let Some(status) = status else {
        return ProcessEnd::Cancelled;
    };
    if let Some(code) = status.code() {
        return ProcessEnd::Exited(code);
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return ProcessEnd::Signalled(signal);
    }
    ProcessEnd::Signalled(0)
}

/// Kills the child's whole process group (it leads one of its own), or the
/// child alone where groups do not exist.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: `kill` has no memory-safety preconditions. The negative
        // pid names the process group the child leads (`process_group(0)`);
        // its id cannot be reused while any member lives, and once the group
        // is empty the call fails harmlessly with ESRCH.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}
