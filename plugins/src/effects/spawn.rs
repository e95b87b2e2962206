//! The `spawn` capability: a long-lived program (an MCP server) the plugin
//! talks to by lines over its standard input and output, for as long as
//! the plugin's instance lives.
//!
//! Each program leads its own process group. Its standard output is read
//! by a thread into a bounded queue of lines; its standard error goes to
//! smith's log line by line (attributed to the plugin and the program)
//! and its last lines are kept for diagnostics. The group is killed when
//! the handle is dropped (the plugin drops it, its instance is destroyed,
//! the runtime ends) and, through an exit hook, when smith exits by any
//! path that runs `exit` (a normal end, `std::process::exit` after a
//! signal): nothing is left running.
//!
//! `spawn` is granted to built-in plugins only: the program runs outside
//! the tool sandbox with part of the user's environment, for the whole
//! runtime, which no manifest may ask for.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects, MAX_EFFECT_BYTES};

/// The variables of smith's environment a spawned program inherits (the
/// configured ones are added).
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR",
];

/// The longest line read from a program's standard output.
pub const MAX_LINE: usize = MAX_EFFECT_BYTES;

/// The longest wait `read-line` accepts.
pub const MAX_READ_WAIT: Duration = Duration::from_secs(600);

/// How many stderr lines are kept for diagnostics.
const STDERR_LINES: usize = 20;
/// How many stderr bytes are kept for diagnostics.
const STDERR_BYTES: usize = 2048;

/// How long a killed group gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(200);

/// How many programs can be alive at once across the process (each holds
/// one slot of the exit hook's table).
pub const MAX_LIVE: usize = 256;

/// The process groups alive now, for the exit hook (0: a free slot). A
/// fixed table of atomics: the hook neither allocates nor locks.
static LIVE: [AtomicI32; MAX_LIVE] = [const { AtomicI32::new(0) }; MAX_LIVE];

static HOOK: Once = Once::new();

/// Kills every process group still alive; registered with `atexit`.
extern "C" fn kill_live_groups() {
    kill_all();
}

/// Kills every spawned program's process group now (what smith's exit
/// does). Safe to call from a signal path: it neither allocates nor locks.
pub fn kill_all() {
    for slot in &LIVE {
        let pgid = slot.swap(0, Ordering::SeqCst);
        if pgid > 0 {
            signal_group(pgid, Signal::Kill);
        }
    }
}

/// The process groups of spawned programs alive now.
pub fn live_groups() -> Vec<i32> {
    LIVE.iter()
        .map(|slot| slot.load(Ordering::SeqCst))
        .filter(|pgid| *pgid > 0)
        .collect()
}

fn register(pgid: i32) -> Option<usize> {
    HOOK.call_once(|| {
        #[cfg(unix)]
        // SAFETY: `atexit` takes a plain `extern "C" fn()`; the hook only
        // reads and swaps atomics and sends signals.
        unsafe {
            libc::atexit(kill_live_groups);
        }
    });
    LIVE.iter().position(|slot| {
        slot.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

fn signal_group(pgid: i32, signal: Signal) {
    #[cfg(unix)]
    // SAFETY: `kill` has no memory-safety preconditions; the negative pid
    // names the group the program leads (`process_group(0)`).
    unsafe {
        libc::kill(
            -pgid,
            match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            },
        );
    }
    #[cfg(not(unix))]
    let _ = (pgid, signal);
}

/// A spawned program (the host side of the `server-process` resource).
pub struct ServerProcess {
    plugin: String,
    program: String,
    pid: u32,
    slot: Option<usize>,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<String, String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    ended: Option<String>,
}

impl std::fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerProcess")
            .field("plugin", &self.plugin)
            .field("program", &self.program)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl ServerProcess {
    /// The process id (and process group id).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// How it ended, none while it runs.
    pub fn ended(&mut self) -> Option<String> {
        if self.ended.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.ended = Some(describe(status));
            // Whatever it left in its group ends with it.
            self.release();
        }
        self.ended.clone()
    }

    /// The last lines of its standard error, joined by newlines.
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// Writes `line` and a newline to its standard input.
    ///
    /// # Errors
    ///
    /// Invalid for a line over [`MAX_LINE`] or holding a newline; failed
    /// when its input is closed.
    pub fn write_line(&mut self, line: &str) -> Result<(), EffectError> {
        if line.len() > MAX_LINE || line.contains('\n') {
            return Err(EffectError::Invalid(format!(
                "write-line to {} (pid {}): the line has {} bytes{}; send one line of at most {MAX_LINE} bytes; nothing was written",
                self.program,
                self.pid,
                line.len(),
                if line.contains('\n') {
                    " and holds a newline"
                } else {
                    ""
                }
            )));
        }
        let failed = |this: &mut Self, why: String| {
            let how = this
                .ended()
                .map_or_else(|| "it still runs".to_owned(), |e| format!("it {e}"));
            EffectError::Failed(format!(
                "write-line to {} (pid {}): {why} ({how}); start it again",
                this.program, this.pid
            ))
        };
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(failed(self, "its standard input is closed".to_owned()));
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(err) = stdin.write_all(&bytes).and_then(|()| stdin.flush()) {
            self.stdin = None;
            return Err(failed(self, format!("its standard input failed: {err}")));
        }
        Ok(())
    }

    /// The next line of its standard output, waiting at most `timeout`
    /// (none when none came), ending early with `failed` when `stop()`.
    ///
    /// # Errors
    ///
    /// Failed when the process ended and every line was read, or when the
    /// wait was stopped.
    pub fn read_line(
        &mut self,
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<String>, EffectError> {
        let started = Instant::now();
        loop {
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Ok(None);
            }
            match self.lines.recv_timeout(left.min(Duration::from_millis(10))) {
                Ok(Ok(line)) => return Ok(Some(line)),
                Ok(Err(why)) => {
                    return Err(EffectError::Failed(format!(
                        "read-line from {} (pid {}): {why}",
                        self.program, self.pid
                    )));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if stop() {
                        return Err(EffectError::Failed(format!(
                            "read-line from {} (pid {}): the call was cancelled while waiting",
                            self.program, self.pid
                        )));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // The reader saw the end of output: wait briefly for the
                    // exit status so the message can say how it ended.
                    let deadline = Instant::now() + Duration::from_millis(200);
                    while self.ended().is_none() && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let how = self
                        .ended()
                        .unwrap_or_else(|| "closed its standard output but still runs".to_owned());
                    return Err(EffectError::Failed(format!(
                        "read-line from {} (pid {}): the program {how}",
                        self.program, self.pid
                    )));
                }
            }
        }
    }

    /// Kills its process group: SIGTERM, a short grace, then SIGKILL.
    pub fn kill(&mut self) {
        self.stdin = None;
        if self.ended.is_some() {
            self.release();
            return;
        }
        if let Ok(pgid) = i32::try_from(self.pid) {
            signal_group(pgid, Signal::Term);
            let deadline = Instant::now() + TERM_GRACE;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            signal_group(pgid, Signal::Kill);
        }
        let _ = self.child.kill();
        if let Ok(status) = self.child.wait() {
            self.ended = Some(describe(status));
        }
        self.release();
    }

    /// Kills what is left of the group and frees the exit hook's slot.
    fn release(&mut self) {
        if let Some(slot) = self.slot.take() {
            LIVE[slot].store(0, Ordering::SeqCst);
            if let Ok(pgid) = i32::try_from(self.pid) {
                signal_group(pgid, Signal::Kill);
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("was ended by signal {signal}");
    }
    "ended".to_owned()
}

/// A `server-process.spawn` request.
#[derive(Clone, Default)]
pub struct SpawnRequest {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working folder: absolute, `~/…`, relative to the project root,
    /// or empty for the project root.
    pub cwd: String,
    /// Extra environment variables (values may be secret).
    pub env: Vec<(String, String)>,
}

impl Effects {
    /// `server-process.spawn`: checks the `spawn` grant and the request,
    /// records the intent (env names only), starts the program in its own
    /// process group and records the completion.
    ///
    /// # Errors
    ///
    /// Denied without `spawn`; invalid for an empty program or a NUL in a
    /// value; failed when it cannot start (nothing runs then).
    pub fn spawn_server(&self, request: &SpawnRequest) -> Result<ServerProcess, EffectError> {
        let program = &request.program;
        if !self.grants.spawn {
            return Err(self.deny(
                "spawn",
                "spawn".to_owned(),
                format!("server-process.spawn {program:?}"),
            ));
        }
        let invalid = |why: &str| {
            EffectError::Invalid(format!(
                "server-process.spawn {program:?}: {why}; nothing was started"
            ))
        };
        if program.is_empty() || program.contains('\0') {
            return Err(invalid(
                "the program name is empty or holds a NUL character",
            ));
        }
        if request.args.iter().any(|a| a.contains('\0'))
            || request.env.iter().any(|(k, v)| {
                k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0')
            })
        {
            return Err(invalid(
                "an argument or environment entry holds a NUL character, or a variable name is empty or holds `=`",
            ));
        }
        let root = self
            .project
            .clone()
            .or_else(|| self.permissions.as_ref().map(|p| p.root.clone()))
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        let dir = if request.cwd.is_empty() {
            root
        } else if let Some(rest) = request.cwd.strip_prefix("~/") {
            std::env::var_os("HOME")
                .map_or_else(|| root.join(rest), |h| PathBuf::from(h).join(rest))
        } else {
            root.join(&request.cwd)
        };
        let effect_id = self.intent(
            "plugin.server-process.spawn",
            &json!({
                "plugin": self.plugin,
                "program": program,
                "args": request.args,
                "cwd": dir.display().to_string(),
                "env": request.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            }),
        )?;
        match start(&self.plugin, request, &dir) {
            Err(message) => {
                let message = format!(
                    "could not start {program:?} in {}: {message}; nothing was started",
                    dir.display()
                );
                self.complete(
                    effect_id,
                    Outcome::Error,
                    Mutation::NotApplied,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(format!(
                    "server-process.spawn {program:?}: {message}"
                )))
            }
            Ok(process) => {
                // It runs from now on and may do anything it is built to.
                self.complete(
                    effect_id,
                    Outcome::Ok,
                    Mutation::Unknown,
                    &json!({"pid": process.pid}),
                )?;
                Ok(process)
            }
        }
    }

    /// Records a line written to a spawned program: an effect whose
    /// mutation is unknown inside a tool call that may change something
    /// (the program may act on it), not applied otherwise.
    ///
    /// # Errors
    ///
    /// When the intent or completion cannot be recorded, or writing fails.
    pub fn server_write_line(
        &self,
        process: &mut ServerProcess,
        line: &str,
    ) -> Result<(), EffectError> {
        let (in_call, read_only) = {
            let call = self
                .call
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (call.parent.is_some(), call.read_only)
        };
        let effect_id = self.intent(
            "plugin.server-process.write-line",
            &json!({"plugin": self.plugin, "pid": process.pid, "bytes": line.len()}),
        )?;
        let result = process.write_line(line);
        let (outcome, mutation, output) = match &result {
            Ok(()) => (
                Outcome::Ok,
                if in_call && !read_only {
                    Mutation::Unknown
                } else {
                    Mutation::NotApplied
                },
                json!({"written": line.len() + 1}),
            ),
            Err(err) => (
                Outcome::Error,
                Mutation::NotApplied,
                json!({"error": err.to_string()}),
            ),
        };
        self.complete(effect_id, outcome, mutation, &output)?;
        result
    }
}

fn start(
    plugin: &str,
    request: &SpawnRequest,
    dir: &std::path::Path,
) -> Result<ServerProcess, String> {
    let mut command = Command::new(&request.program);
    command
        .args(&request.args)
        .current_dir(dir)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in &request.env {
        command.env(name, value);
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let pid = child.id();
    let slot = i32::try_from(pid).ok().and_then(register);
    let stdin = child.stdin.take();
    let (sender, lines) = std::sync::mpsc::sync_channel(1024);
    if let Some(stdout) = child.stdout.take() {
        read_lines(stdout, sender);
    }
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(pipe) = child.stderr.take() {
        log_stderr(
            pipe,
            Arc::clone(&stderr),
            format!("{plugin}: {}[{pid}]", request.program),
        );
    }
    let mut process = ServerProcess {
        plugin: plugin.to_owned(),
        program: request.program.clone(),
        pid,
        slot,
        child,
        stdin,
        lines,
        stderr,
        ended: None,
    };
    if process.slot.is_none() {
        process.kill();
        return Err(format!(
            "{MAX_LIVE} spawned programs are alive already, the most smith keeps track of"
        ));
    }
    Ok(process)
}

fn read_lines(
    stdout: impl std::io::Read + Send + 'static,
    sender: SyncSender<Result<String, String>>,
) {
    let _ = std::thread::Builder::new()
        .name("smith-server-stdout".to_owned())
        .spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                let limit = u64::try_from(MAX_LINE).unwrap_or(u64::MAX) + 1;
                match (&mut reader).take(limit).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let complete = line.last() == Some(&b'\n');
                if complete {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                } else if line.len() > MAX_LINE {
                    // Skip the rest of the overlong line.
                    let mut rest = Vec::new();
                    let _ = reader.read_until(b'\n', &mut rest);
                    let _ = sender.send(Err(format!(
                        "the program wrote a line longer than {MAX_LINE} bytes, which was dropped"
                    )));
                    continue;
                }
                let text = String::from_utf8_lossy(&line).into_owned();
                if sender.send(Ok(text)).is_err() {
                    break;
                }
            }
        });
}

fn log_stderr(
    stderr: impl std::io::Read + Send + 'static,
    tail: Arc<Mutex<VecDeque<String>>>,
    who: String,
) {
    let _ = std::thread::Builder::new()
        .name("smith-server-stderr".to_owned())
        .spawn(move || {
            let mut reader = BufReader::new(stderr);
            loop {
                let mut line = Vec::new();
                match (&mut reader).take(4096).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                if text.is_empty() {
                    continue;
                }
                smith_diag::log::note(
                    smith_diag::log::Level::Info,
                    "plugin.server.stderr",
                    &format!("{who}: {text}"),
                );
                if let Ok(mut lines) = tail.lock() {
                    lines.push_back(text);
                    while lines.len() > STDERR_LINES
                        || lines.iter().map(String::len).sum::<usize>() > STDERR_BYTES
                    {
                        if lines.pop_front().is_none() {
                            break;
                        }
                    }
                }
            }
        });
}
