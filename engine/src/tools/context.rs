//! The invocation context every tool runs in: working directory, allowed
//! roots, output limits, cancellation, the read tracker and where full
//! command outputs go.
//!
//! Nothing in a tool consults process-global state: relative paths resolve
//! against [`ToolContext::cwd`], never against the process's current
//! directory, and every path is checked against the context's roots after
//! symlinks are resolved.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::result::{ToolError, ToolErrorKind};

/// The cancellation token every tool invocation carries: one clone of the
/// run's token (`smith_contract::CancelToken`). Cancelling one clone cancels
/// all.
///
/// Tools poll it at every effect edge: before touching the filesystem,
/// before a rename, between directory entries, and every few milliseconds
/// while a process runs ([`CancelCheck::check`]).
pub use smith_contract::CancelToken;

/// The tools' check of a [`CancelToken`] before an effect.
pub trait CancelCheck {
    /// An error (changing nothing) when cancelled, naming the tool and the
    /// step it stopped before.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::Cancelled`] with [`Mutation::NotApplied`](super::Mutation::NotApplied).
    fn check(&self, tool: &str, before: &str) -> Result<(), ToolError>;
}

impl CancelCheck for CancelToken {
    fn check(&self, tool: &str, before: &str) -> Result<(), ToolError> {
        if self.is_cancelled() {
            return Err(ToolError::new(
                ToolErrorKind::Cancelled,
                format!("{tool} was cancelled before {before}"),
                "the invocation's cancellation token was set (the user aborted or the turn ended)",
                "nothing was changed; run the call again if it is still wanted",
            ));
        }
        Ok(())
    }
}

/// Output and time bounds. [`Limits::default`] gives the documented defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// read: most lines returned per call (default 2,000).
    pub read_max_lines: usize,
    /// read: most bytes of text returned per call (default 50 KiB).
    pub read_max_bytes: usize,
    /// read: characters kept of one line before a truncation marker
    /// (default 2,000).
    pub read_line_chars: usize,
    /// find, grep, ls: characters kept of one result line (default 500).
    pub list_line_chars: usize,
    /// find, grep, ls: most bytes of result text (default 50 KiB).
    pub list_max_bytes: usize,
    /// find: default `limit` (1,000 paths).
    pub find_limit: usize,
    /// grep: default `limit` (100 matching lines).
    pub grep_limit: usize,
    /// ls: default `limit` (500 entries).
    pub ls_limit: usize,
    /// edit and write: the largest existing file they will load (16 MiB).
    pub edit_max_file_bytes: u64,
    /// edit: most lines of diff returned (default 200).
    pub diff_max_lines: usize,
    /// bash: default timeout (120 s).
    pub bash_timeout: Duration,
    /// bash: largest accepted `timeout` (1 hour).
    pub bash_max_timeout: Duration,
    /// bash: bytes of output shown to the model; half from the head, half
    /// from the tail (default 50 KiB).
    pub bash_output_bytes: usize,
    /// bash: time between SIGTERM and SIGKILL of the process group (2 s).
    pub bash_kill_grace: Duration,
    /// bash: how long output is still read after the shell exited while a
    /// background process keeps the pipe open (1 s).
    pub bash_drain_after_exit: Duration,
    /// bash: what happens to a command that outruns its timeout: moved to
    /// the background as a job (the default) or killed.
    pub bash_on_timeout: super::jobs::OnTimeout,
    /// bash: most background jobs running at once in one runtime (16).
    pub bash_max_jobs: usize,
    /// bash: bytes of a background job's output kept in its output file
    /// (64 MiB); later output is counted and dropped.
    pub bash_job_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read_max_lines: 2_000,
            read_max_bytes: 50 * 1024,
            read_line_chars: 2_000,
            list_line_chars: 500,
            list_max_bytes: 50 * 1024,
            find_limit: 1_000,
            grep_limit: 100,
            ls_limit: 500,
            edit_max_file_bytes: 16 * 1024 * 1024,
            diff_max_lines: 200,
            bash_timeout: Duration::from_secs(120),
            bash_max_timeout: Duration::from_secs(3_600),
            bash_output_bytes: 50 * 1024,
            bash_kill_grace: Duration::from_secs(2),
            bash_drain_after_exit: Duration::from_secs(1),
            bash_on_timeout: super::jobs::OnTimeout::Background,
            bash_max_jobs: 16,
            bash_job_file_bytes: 64 * 1024 * 1024,
        }
    }
}

/// A content fingerprint: length plus a 64-bit hash of the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// Length in bytes.
    pub len: u64,
    /// Hash of the bytes (stable within one build of smith).
    pub hash: u64,
}

impl Fingerprint {
    /// The fingerprint of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut h = FingerprintHasher::default();
        h.update(bytes);
        h.finish()
    }
}

/// Builds a [`Fingerprint`] incrementally, for streamed reads.
#[derive(Default)]
pub struct FingerprintHasher {
    len: u64,
    hasher: std::hash::DefaultHasher,
}

impl FingerprintHasher {
    /// Feeds more bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        self.hasher.write(bytes);
    }

    /// The fingerprint of everything fed so far.
    pub fn finish(&self) -> Fingerprint {
        Fingerprint {
            len: self.len,
            hash: self.hasher.finish(),
        }
    }
}

/// What the agent last saw of each file: the content fingerprint recorded
/// when `read` read it (or when `write`/`edit` wrote it).
///
/// `edit` and `write` compare the file's current fingerprint with the
/// recorded one and refuse stale input. Shared by all invocations of a
/// session; keys are resolved absolute paths.
#[derive(Debug, Default)]
pub struct ReadTracker {
    seen: Mutex<HashMap<PathBuf, Fingerprint>>,
}

impl ReadTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the agent has seen `path` with this content.
    pub fn record(&self, path: &Path, fingerprint: Fingerprint) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_path_buf(), fingerprint);
    }

    /// The fingerprint recorded for `path`, if the agent has seen it.
    pub fn get(&self, path: &Path) -> Option<Fingerprint> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .copied()
    }

    /// Forgets `path` (e.g. after it was deleted).
    pub fn forget(&self, path: &Path) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(path);
    }
}

/// Receives raw output bytes while a process runs (for live tool updates).
pub type OutputSink = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Everything a tool invocation may depend on besides its arguments.
///
/// Cheap to clone (the tracker, token and sink are shared); the loop keeps
/// one per session and clones it per call, possibly swapping the token.
#[derive(Clone)]
pub struct ToolContext {
    cwd: PathBuf,
    roots: Vec<PathBuf>,
    limits: Limits,
    cancel: CancelToken,
    reads: Arc<ReadTracker>,
    output_dir: PathBuf,
    output_sink: Option<OutputSink>,
    require_read: bool,
    checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The number N of the running call's effect `fx-N` (a number, so
    /// setting it per call allocates nothing).
    effect: Option<u64>,
    /// The runtime's approval mode (none: tools run as in `full`).
    approval: Option<crate::approval::ApprovalCell>,
    /// The sandbox the tools run in while the mode is sandboxed.
    sandbox: Option<Arc<super::Sandbox>>,
    /// Who reads and writes files and runs commands instead of the tools.
    backends: super::ToolBackends,
    /// The runtime's background jobs (shared by every clone; the last
    /// clone's drop ends them).
    jobs: Arc<super::jobs::Jobs>,
    /// What media the active model takes (none: no media encoder; see
    /// [`super::media`]).
    media: Option<super::media::MediaCell>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("roots", &self.roots)
            .field("limits", &self.limits)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("output_dir", &self.output_dir)
            .field("require_read", &self.require_read)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context working in `cwd` (canonicalized), with roots `[cwd]`,
    /// default limits, a fresh token and tracker, full outputs under
    /// `<temp dir>/smith-tool-output`, and read-before-overwrite required.
    ///
    /// # Errors
    ///
    /// `cwd` does not exist or is not a directory.
    pub fn new(cwd: impl AsRef<Path>) -> Result<Self, ToolError> {
        let cwd = canonical_dir(cwd.as_ref(), "working directory")?;
        Ok(ToolContext {
            roots: vec![cwd.clone()],
            cwd,
            limits: Limits::default(),
            cancel: CancelToken::new(),
            reads: Arc::new(ReadTracker::new()),
            output_dir: std::env::temp_dir().join("smith-tool-output"),
            output_sink: None,
            require_read: true,
            checkpoints: None,
            effect: None,
            approval: None,
            sandbox: None,
            backends: super::ToolBackends::default(),
            jobs: Arc::new(super::jobs::Jobs::new()),
            media: None,
        })
    }

    /// Shares what media the active model takes with the tools (`read`).
    #[must_use]
    pub fn with_media(mut self, media: super::media::MediaCell) -> Self {
        self.media = Some(media);
        self
    }

    /// Sets what media the active model takes: in the shared cell when
    /// there is one, else in a new one.
    pub fn set_media(&mut self, support: super::media::MediaSupport) {
        match &self.media {
            Some(cell) => cell.set(support),
            None => self.media = Some(super::media::MediaCell::new(support)),
        }
    }

    /// What media the active model takes (see [`super::media`]).
    pub fn media(&self) -> super::media::MediaSupport {
        self.media
            .as_ref()
            .map_or_else(Default::default, super::media::MediaCell::get)
    }

    /// Shares the runtime's approval mode with the tools (the sandbox
    /// follows it).
    #[must_use]
    pub fn with_approval(mut self, approval: crate::approval::ApprovalCell) -> Self {
        self.approval = Some(approval);
        self
    }

    /// The current approval mode: [`Approval::Full`](crate::approval::Approval::Full)
    /// when the context was given none.
    pub fn approval(&self) -> crate::approval::Approval {
        self.approval.as_ref().map_or(
            crate::approval::Approval::Full,
            crate::approval::ApprovalCell::get,
        )
    }

    /// Confines the tools with `sandbox` while the approval mode is
    /// sandboxed (every mode but `full`; see [`super::sandbox`]).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Arc<super::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The sandbox the call runs in: the context's sandbox while the
    /// approval mode is sandboxed, else none (tools run unconfined).
    pub fn sandbox(&self) -> Option<&super::Sandbox> {
        self.sandbox
            .as_deref()
            .filter(|_| self.approval().sandboxed())
    }

    /// Hands the file tools' reads and writes and `bash`'s unsandboxed
    /// commands to `backends` (see [`super::backend`]).
    #[must_use]
    pub fn with_backends(mut self, backends: super::ToolBackends) -> Self {
        self.backends = backends;
        self
    }

    /// The backend the file tools' reads go through, if one serves them.
    pub fn file_reads(&self) -> Option<&dyn super::FileAccess> {
        self.backends.files.as_deref().filter(|f| f.reads())
    }

    /// The backend the file tools' writes go through, if one serves them.
    pub fn file_writes(&self) -> Option<&dyn super::FileAccess> {
        self.backends.files.as_deref().filter(|f| f.writes())
    }

    /// The runner `bash` hands its command to: the context's runner while
    /// the approval mode runs commands unsandboxed, else none (a runner
    /// cannot apply the sandbox, so sandboxed commands stay local).
    pub fn command_runner(&self) -> Option<&dyn super::CommandRunner> {
        self.backends
            .commands
            .as_deref()
            .filter(|_| !self.approval().sandboxed())
    }

    /// The paths a directory walk leaves out: the sandbox's read-denied
    /// paths while the call is sandboxed, else none.
    pub(crate) fn hidden_paths(&self) -> Vec<PathBuf> {
        match self.sandbox().map(super::Sandbox::policy) {
            Some(Ok(policy)) => policy
                .read_denied()
                .iter()
                .map(|d| d.path.clone())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// [`ToolContext::resolve`] for a path `tool` reads, checked first
    /// against the sandbox's read-denied paths when the call is sandboxed.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::Sandbox`] when the sandbox refuses the read, then
    /// as for [`ToolContext::resolve`].
    pub fn resolve_read(&self, tool: &str, field: &str, raw: &str) -> Result<PathBuf, ToolError> {
        if let Some(sandbox) = self.sandbox()
            && !raw.is_empty()
        {
            sandbox.check_read(tool, &self.cwd.join(raw))?;
        }
        self.resolve(tool, field, raw)
    }

    /// [`ToolContext::resolve`] for a path `tool` writes, checked first
    /// against the sandbox's write roots and read-denied paths when the
    /// call is sandboxed.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::Sandbox`] when the sandbox refuses the write, then
    /// as for [`ToolContext::resolve`].
    pub fn resolve_write(&self, tool: &str, field: &str, raw: &str) -> Result<PathBuf, ToolError> {
        if let Some(sandbox) = self.sandbox()
            && !raw.is_empty()
        {
            sandbox.check_write(tool, &self.cwd.join(raw))?;
        }
        self.resolve(tool, field, raw)
    }

    /// The effect id (`fx-N`) of the call this context runs, so a tool
    /// that makes effects of its own (a plugin's host effects) records
    /// them as children of it. An id of another shape is not kept.
    #[must_use]
    pub fn with_effect_id(mut self, effect_id: &str) -> Self {
        self.effect = effect_id.strip_prefix("fx-").and_then(|n| n.parse().ok());
        self
    }

    /// The effect id (`fx-N`) of the call this context runs, when the loop
    /// runs it as a journaled effect.
    pub fn effect_id(&self) -> Option<String> {
        self.effect.map(|n| format!("fx-{n}"))
    }

    /// Replaces the allowed roots. Each must be an existing directory; it is
    /// canonicalized (symlinks resolved).
    ///
    /// # Errors
    ///
    /// A root does not exist or is not a directory.
    pub fn with_roots<P: AsRef<Path>>(
        mut self,
        roots: impl IntoIterator<Item = P>,
    ) -> Result<Self, ToolError> {
        let mut out = Vec::new();
        for root in roots {
            out.push(canonical_dir(root.as_ref(), "allowed root")?);
        }
        self.roots = out;
        Ok(self)
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Replaces the cancellation token.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Shares a read tracker (one per session).
    pub fn with_read_tracker(mut self, reads: Arc<ReadTracker>) -> Self {
        self.reads = reads;
        self
    }

    /// Where bash keeps full outputs that exceeded the bound (created on
    /// demand).
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = dir.into();
        self
    }

    /// Receives process output as it arrives.
    pub fn with_output_sink(mut self, sink: OutputSink) -> Self {
        self.output_sink = Some(sink);
        self
    }

    /// Whether write and edit refuse to change an existing file the agent
    /// has not read (default true). Staleness is checked either way.
    pub fn with_require_read(mut self, require: bool) -> Self {
        self.require_read = require;
        self
    }

    /// Snapshots the project into `checkpoints` before and after every
    /// mutating effect run in this context (see [`crate::checkpoint`]).
    pub fn with_checkpoints(mut self, checkpoints: Arc<crate::checkpoint::Checkpoints>) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// The project's checkpoint store, when effects are checkpointed.
    pub fn checkpoints(&self) -> Option<&Arc<crate::checkpoint::Checkpoints>> {
        self.checkpoints.as_ref()
    }

    /// The canonical working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The canonical allowed roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The bounds.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The cancellation token.
    pub fn cancel(&self) -> &CancelToken {
        &self.cancel
    }

    /// The read tracker.
    pub fn reads(&self) -> &ReadTracker {
        &self.reads
    }

    /// The runtime's background jobs (`bash` with `background: true`,
    /// `bash_output`, `bash_kill`; see [`super::jobs`]).
    pub fn jobs(&self) -> &Arc<super::jobs::Jobs> {
        &self.jobs
    }

    /// The full-output directory.
    pub fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    /// The live output sink, if any.
    pub fn output_sink(&self) -> Option<&OutputSink> {
        self.output_sink.as_ref()
    }

    /// Whether overwriting requires a prior read.
    pub fn require_read(&self) -> bool {
        self.require_read
    }

    /// Resolves `raw` (argument `field` of `tool`) to an absolute path with
    /// symlinks resolved, and checks it lies under an allowed root.
    ///
    /// Relative paths resolve against [`cwd`](Self::cwd). Components that do
    /// not exist yet are appended lexically (`..` removes the previous one),
    /// so a file about to be created resolves too. `~` is not expanded.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::InvalidArguments`] for an empty path,
    /// [`ToolErrorKind::OutsideRoots`] when the resolved path escapes every
    /// root.
    pub fn resolve(&self, tool: &str, field: &str, raw: &str) -> Result<PathBuf, ToolError> {
        if raw.is_empty() {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("{tool}: argument `{field}` is an empty path"),
                "a path must name a file or directory",
                format!("pass a path relative to {}", self.cwd.display()),
            ));
        }
        let joined = self.cwd.join(raw);
        let resolved = resolve_physical(&joined);
        if self.roots.iter().any(|root| resolved.starts_with(root)) {
            return Ok(resolved);
        }
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        Err(ToolError::new(
            ToolErrorKind::OutsideRoots,
            format!(
                "{tool}: path `{raw}` (argument `{field}`) resolves to {}, outside the allowed roots ({})",
                resolved.display(),
                roots.join(", ")
            ),
            "tools may only touch files under the workspace roots; symlinks are resolved before this check",
            format!(
                "use a path under {}, or have the user add the directory as a root",
                roots.join(" or ")
            ),
        )
        .with_extra("path", Value::from(raw))
        .with_extra("resolved", Value::from(resolved.display().to_string())))
    }

    /// How a resolved path is shown to the model: relative to the cwd when
    /// under it (`src/lib.rs`, `.` for the cwd itself), absolute otherwise.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.cwd) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

fn canonical_dir(path: &Path, what: &str) -> Result<PathBuf, ToolError> {
    let canonical = std::fs::canonicalize(path).map_err(|e| {
        ToolError::new(
            ToolErrorKind::NotFound,
            format!("the {what} {} cannot be opened: {e}", path.display()),
            "tool invocations need an existing directory to resolve paths against",
            format!("create {} or pass an existing directory", path.display()),
        )
    })?;
    if !canonical.is_dir() {
        return Err(ToolError::new(
            ToolErrorKind::WrongFileType,
            format!("the {what} {} is not a directory", path.display()),
            "paths resolve against a directory",
            "pass a directory",
        ));
    }
    Ok(canonical)
}

/// Resolves an absolute path component by component: existing symlinks are
/// followed (via `canonicalize`), `..` pops the physical parent, missing
/// components are appended as they are.
fn resolve_physical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                let is_link = std::fs::symlink_metadata(&out)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_link {
                    // A dangling link stays as it is: it then names a path
                    // inside the parent, and a later write would follow it,
                    // so refuse by resolving to the link target lexically.
                    match std::fs::canonicalize(&out) {
                        Ok(target) => out = target,
                        Err(_) => {
                            if let Ok(target) = std::fs::read_link(&out) {
                                out.pop();
                                let joined = out.join(target);
                                out = lexical(&joined);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_token_is_shared_between_clones() {
        let a = CancelToken::new();
        let b = a.clone();
        assert!(a.check("read", "opening").is_ok());
        b.cancel();
        assert!(a.is_cancelled());
        let err = a.check("read", "opening the file").err();
        assert_eq!(err.map(|e| e.kind), Some(ToolErrorKind::Cancelled));
    }

    #[test]
    fn fingerprint_streaming_equals_whole() {
        let mut h = FingerprintHasher::default();
        h.update(b"hello ");
        h.update(b"world");
        h.update(b"");
        // read hashes line by line, edit hashes the whole file at once: the
        // two must agree.
        assert_eq!(h.finish(), Fingerprint::of(b"hello world"));
        assert_ne!(h.finish(), Fingerprint::of(b"hello world!"));
    }

    #[test]
    fn resolves_relative_dotdot_and_missing_components() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cx = ToolContext::new(dir.path()).expect("context");
        let root = cx.cwd().to_path_buf();
        std::fs::create_dir(root.join("a")).expect("mkdir");
        assert_eq!(
            cx.resolve("read", "path", "a/../b/new/./f.txt").ok(),
            Some(root.join("b/new/f.txt"))
        );
        assert_eq!(cx.display(&root.join("b/c")), "b/c");
        assert_eq!(cx.display(&root), ".");
        let err = cx.resolve("read", "path", "../outside").err();
        assert_eq!(err.map(|e| e.kind), Some(ToolErrorKind::OutsideRoots));
        let err = cx.resolve("read", "path", "").err();
        assert_eq!(err.map(|e| e.kind), Some(ToolErrorKind::InvalidArguments));
    }
}
