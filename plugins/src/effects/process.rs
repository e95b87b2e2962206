//! The `process` capability: `run-process`, a granted program run in its
//! own process group with a timeout, bounded output and a stop signal.
//!
//! With the runtime's sandbox ([`Effects::with_sandbox`]) and a sandboxed
//! approval mode, the program runs confined as `bash` does: Landlock (the
//! plugin's data folder is an extra write root for `run-process`), the
//! network as `sandbox.network` says, `TMPDIR` in the session temporary
//! directory; where the kernel cannot confine it in `read-only` or
//! `workspace`, it is refused and nothing runs.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{
    EffectError, Effects, MAX_EFFECT_BYTES,
    fs::{relative_parts, resolves_inside},
};

/// The most bytes of standard output, and of standard error, `run-process`
/// returns.
pub const MAX_PROCESS_OUTPUT: usize = 1 << 20;

/// The longest timeout `run-process` accepts.
pub const MAX_PROCESS_TIMEOUT: Duration = Duration::from_secs(600);

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

impl Effects {
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
        if !self.grants.process {
            return Err(self.deny(
                "process",
                "process".to_owned(),
                format!("run-process {:?}", request.program),
            ));
        }
        let base = self.grants.data_dir.clone();
        self.run_process_in(request, stop, &base, Where::DataFolder)
    }

    /// Runs `request` with its working folder under `base` (the data
    /// folder or the project root), once the grants are checked.
    pub(super) fn run_process_in(
        &self,
        request: &ProcessRequest,
        stop: &dyn Fn() -> bool,
        base: &Path,
        place: Where,
    ) -> Result<ProcessOutput, EffectError> {
        let program = &request.program;
        let op = place.op();
        self.writable(&format!("{op} {program:?}"))?;
        let invalid = |why: String| -> Result<ProcessOutput, EffectError> {
            Err(EffectError::Invalid(format!(
                "{op} {program:?}: {why}; nothing ran"
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
        let folder = place.folder();
        let Some(parts) = relative_parts(cwd) else {
            return invalid(format!(
                "the working folder {cwd:?} must be relative to {folder} and stay inside it (no `..`, no absolute path)"
            ));
        };
        if let Err(why) = resolves_inside(base, &[], &parts) {
            return invalid(format!(
                "the working folder {cwd:?} resolves outside {folder} ({why})"
            ));
        }
        let dir = base.join(parts.iter().collect::<PathBuf>());
        let confined = self.confinement(op, base, place)?;
        let effect_id = self.intent(
            &format!("plugin.{op}"),
            &json!({
                "plugin": self.plugin,
                "program": program,
                "args": request.args,
                "cwd": cwd,
                "timeout_ms": request.timeout_ms,
                "stdin_bytes": request.stdin.len(),
            }),
        )?;
        match spawn_and_wait(request, &dir, timeout, confined.as_ref(), stop) {
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
                Err(EffectError::Failed(format!("{op} {program:?}: {message}")))
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
}

impl Effects {
    /// The confinement a process of this plugin runs in: none without a
    /// sandbox or in `full`; else the runtime's (with the plugin's data
    /// folder as an extra write root for `run-process`).
    fn confinement(
        &self,
        op: &str,
        base: &Path,
        place: Where,
    ) -> Result<Option<Confined>, EffectError> {
        let Some((sandbox, approval)) = &self.sandbox else {
            return Ok(None);
        };
        let approval = approval.get();
        if !approval.sandboxed() {
            return Ok(None);
        }
        let confinement = match place {
            Where::DataFolder => sandbox.with_write_root(op, base, approval),
            Where::Project => {
                sandbox.confinement(op, sandbox.network().network_for(approval, false), approval)
            }
        }
        .map_err(|e| EffectError::Failed(format!("{}; {}; {}", e.what, e.why, e.next)))?;
        Ok(Some(Confined {
            confinement,
            temp_dir: sandbox.temp_dir().map(Path::to_path_buf),
        }))
    }
}

/// The confinement a process runs in, and its `TMPDIR`.
struct Confined {
    confinement: smith_engine::tools::sandbox::Confinement,
    temp_dir: Option<PathBuf>,
}

/// Where a process runs: the plugin's data folder (`run-process`) or the
/// project (`project-run-process`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Where {
    /// The plugin's data folder.
    DataFolder,
    /// The project root.
    Project,
}

impl Where {
    fn op(self) -> &'static str {
        match self {
            Where::DataFolder => "run-process",
            Where::Project => "project-run-process",
        }
    }

    fn folder(self) -> &'static str {
        match self {
            Where::DataFolder => "the plugin's data folder",
            Where::Project => "the project",
        }
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
    confined: Option<&Confined>,
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
    if let Some(confined) = confined {
        confined.confinement.apply(&mut command);
        if let Some(dir) = &confined.temp_dir {
            command.env("TMPDIR", dir);
        }
    }
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
