//! `bash {command, timeout?, cwd?}`: run a shell command with bounded
//! output, a timeout and cancellation that terminates the whole process
//! group.
//!
//! Mechanics (Unix): `bash -c COMMAND` (or `sh -c` where bash is missing)
//! starts in its own session and process group (`setsid` before exec), in
//! the explicit working directory, with stdin closed and stdout and stderr
//! sharing one pipe so their interleaving is kept. One thread polls the pipe
//! every few milliseconds, so the token, the deadline and the child's exit
//! are all observed while output streams. Every byte goes to a full-output
//! file; the model sees the head and the tail. After the shell exits the
//! pipe is read to end-of-file, so output written just before exit is never
//! lost, but for at most [`Limits::bash_drain_after_exit`](super::Limits)
//! when a background process keeps the pipe open. On timeout or
//! cancellation the group gets SIGTERM, then SIGKILL after a grace period.
//!
//! While the approval mode is sandboxed and the context has a sandbox
//! ([`ToolContext::sandbox`]), the shell enters the sandbox's confinement
//! after `setsid` (Landlock, and with the network off the held empty
//! network namespace) with `TMPDIR` set to the sandbox's temporary
//! directory; a command the kernel cannot confine is refused there (see
//! [`super::sandbox`]). Otherwise (`full`) the command is not confined:
//! only its working directory is checked against the allowed roots, and
//! when the context has a [`CommandRunner`](super::CommandRunner) (an
//! editor's terminal) the command runs there instead
//! ([`ToolContext::command_runner`]).
//! Background processes that outlive a shell which exited normally are left
//! running.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::CancelCheck;
use super::fsutil::io_error;
use super::{
    Access, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolResult, args,
};

const NAME: &str = "bash";
/// How often the loop wakes to check the token, the deadline and the child.
const TICK_MS: i32 = 10;

/// The `bash` tool.
#[derive(Debug)]
pub struct BashTool {
    def: ToolDefinition,
    shell: PathBuf,
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BashTool {
    /// The tool, using the first `bash` on `PATH` (or `/bin/bash`), falling
    /// back to `/bin/sh`.
    pub fn new() -> Self {
        BashTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "Run a shell command (bash -c) in the working directory. stdin is \
                    closed. Output (stdout and stderr together) is bounded to its head and tail; \
                    the full output is saved to a file when cut. Default timeout 120 seconds; a \
                    command still running then continues as a background job. background: true \
                    starts a job and returns at once with its id; follow it with bash_output and \
                    stop it with bash_kill."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "minLength": 1, "description": "The command line to run."},
                        "timeout": {"type": "number", "minimum": 0, "description": "Seconds before the command is killed (default 120, at most 3600)."},
                        "cwd": {"type": "string", "minLength": 1, "description": "Directory to run in, relative to the working directory (default: the working directory)."},
                        "background": {"type": "boolean", "description": "Start the command as a background job and return at once with its id (default false)."}
                    },
                    "required": ["command"],
                    "additionalProperties": false
                }),
                access: Access::Mutating,
            },
            shell: find_shell(),
        }
    }

    /// The shell this tool runs.
    pub fn shell(&self) -> &Path {
        &self.shell
    }
}

fn find_shell() -> PathBuf {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("bash");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    let bash = PathBuf::from("/bin/bash");
    if bash.is_file() {
        bash
    } else {
        PathBuf::from("/bin/sh")
    }
}

impl Tool for BashTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(&self.shell, args, cx).unwrap_or_else(ToolError::into_result)
    }
}

/// How the process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

/// Output kept for the model: the first `head_max` bytes and the last
/// `tail_max` bytes, plus everything in the full-output file.
struct Capture {
    head: Vec<u8>,
    head_max: usize,
    tail: Vec<u8>,
    tail_max: usize,
    total: u64,
    file: Option<File>,
    file_error: Option<String>,
}

impl Capture {
    fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if let Some(f) = &mut self.file
            && let Err(e) = f.write_all(chunk)
        {
            self.file_error = Some(e.to_string());
            self.file = None;
        }
        let room = self.head_max - self.head.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        self.tail.extend_from_slice(chunk);
        // Trim in amortized steps, keeping at least tail_max bytes.
        if self.tail.len() > 2 * self.tail_max.max(4096) {
            let cut = self.tail.len() - self.tail_max;
            self.tail.drain(..cut);
        }
    }

    fn truncated(&self) -> bool {
        self.total > (self.head_max + self.tail_max) as u64
    }

    /// The text shown to the model and the byte counts (head, tail) it keeps.
    fn render(&self) -> (String, usize, usize) {
        if !self.truncated() {
            let mut all = self.head.clone();
            all.extend_from_slice(&self.tail);
            let len = all.len();
            return (String::from_utf8_lossy(&all).into_owned(), len, 0);
        }
        let mut head = &self.head[..];
        // Cut at a line end when one is in the second half of the head.
        if let Some(nl) = head.iter().rposition(|&b| b == b'\n')
            && nl >= head.len() / 2
        {
            head = &head[..=nl];
        }
        let mut tail = &self.tail[self.tail.len().saturating_sub(self.tail_max)..];
        if let Some(nl) = tail.iter().position(|&b| b == b'\n')
            && nl < tail.len() / 2
        {
            tail = &tail[nl + 1..];
        }
        let omitted = self.total - (head.len() + tail.len()) as u64;
        let text = format!(
            "{}\n[... {omitted} bytes omitted ...]\n{}",
            String::from_utf8_lossy(head).trim_end_matches('\n'),
            String::from_utf8_lossy(tail)
        );
        (text, head.len(), tail.len())
    }
}

fn run(shell: &Path, args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let command = args::string(NAME, args, "command")?;
    let background = args::flag(NAME, args, "background")?;
    let limits = cx.limits();
    let timeout = match args::opt_f64(NAME, args, "timeout")? {
        None => limits.bash_timeout,
        Some(secs) if secs > 0.0 && secs <= limits.bash_max_timeout.as_secs_f64() => {
            Duration::from_secs_f64(secs)
        }
        Some(secs) => {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!(
                    "bash call rejected: argument `timeout` must be a number of seconds above 0 and at most {}, but received {secs}",
                    limits.bash_max_timeout.as_secs()
                ),
                "the timeout bounds how long the command may run; nothing was run",
                format!(
                    "omit timeout for the default of {} seconds, or pass a value in range",
                    limits.bash_timeout.as_secs()
                ),
            ));
        }
    };
    let cwd = match args::opt_string(NAME, args, "cwd")? {
        None => cx.cwd().to_path_buf(),
        Some(raw) => {
            let dir = cx.resolve(NAME, "cwd", raw)?;
            if !dir.is_dir() {
                return Err(ToolError::new(
                    ToolErrorKind::NotFound,
                    format!(
                        "bash: cwd `{raw}` ({}) is not an existing directory",
                        dir.display()
                    ),
                    "the command needs a directory to run in; nothing was run",
                    "pass an existing directory, or omit cwd to run in the working directory",
                )
                .with_extra("cwd", Value::from(raw)));
            }
            dir
        }
    };
    // Unsandboxed (`full`), a frontend's runner (an editor's terminal)
    // may run the command; it cannot apply the sandbox, so it gets none
    // of the sandboxed modes' commands (`ToolContext::command_runner`).
    if let Some(runner) = cx.command_runner() {
        if background {
            return Err(ToolError::new(
                ToolErrorKind::Spawn,
                "bash: background jobs cannot run in the editor's terminal",
                "in this approval mode the editor runs commands in its own terminals, which end with the call; nothing was run",
                "run the command without background (it is killed at its timeout there), or switch to a sandboxed approval mode, where smith runs commands and keeps jobs",
            ));
        }
        cx.cancel().check(NAME, "starting the command")?;
        let shell_args = ["-c", command];
        let request = super::CommandRequest {
            shell,
            args: &shell_args,
            command,
            cwd: &cwd,
            timeout,
            output_bytes: limits.bash_output_bytes,
        };
        let started = Instant::now();
        let outcome = runner.run(&request, cx)?;
        return Ok(delegated(
            command,
            &cx.display(&cwd),
            timeout,
            started.elapsed(),
            limits.bash_output_bytes,
            outcome,
        ));
    }
    let confined = match cx.sandbox() {
        Some(sandbox) => Some(Confined {
            confinement: sandbox.for_command(NAME, cx.approval())?,
            temp_dir: sandbox.temp_dir().map(Path::to_path_buf),
        }),
        None => None,
    };
    cx.cancel().check(NAME, "starting the command")?;
    if background {
        cx.jobs().admit(NAME, limits)?;
    }
    spawn_and_wait(
        shell,
        command,
        &cwd,
        timeout,
        confined.as_ref(),
        background,
        cx,
    )
}

/// The confinement a sandboxed command runs in, and its `TMPDIR`.
struct Confined {
    confinement: super::sandbox::Confinement,
    temp_dir: Option<PathBuf>,
}

#[cfg(unix)]
fn spawn_and_wait(
    shell: &Path,
    command: &str,
    cwd: &Path,
    timeout: Duration,
    confined: Option<&Confined>,
    background: bool,
    cx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    use std::io::Read as _;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicU64, Ordering};

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let limits = cx.limits();
    let shown_cwd = cx.display(cwd);

    let out_dir = cx.output_dir();
    let out_path = out_dir.join(format!(
        "bash-{}-{}.log",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let (file, file_error) =
        match std::fs::create_dir_all(out_dir).and_then(|()| File::create(&out_path)) {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let head_max = limits.bash_output_bytes / 2;
    let mut capture = Capture {
        head: Vec::with_capacity(head_max.min(64 * 1024)),
        head_max,
        tail: Vec::new(),
        tail_max: limits.bash_output_bytes - head_max,
        total: 0,
        file,
        file_error,
    };

    let (mut reader, writer) = std::io::pipe()
        .map_err(|e| io_error(NAME, "creating the output pipe for", &shown_cwd, &e))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| io_error(NAME, "creating the output pipe for", &shown_cwd, &e))?;
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2);
    // SAFETY: the closure runs in the forked child before exec and calls
    // only `setsid`, which is async-signal-safe; it touches no memory of
    // the parent and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Installed after `setsid`, so the confinement is entered last, just
    // before exec.
    if let Some(confined) = confined {
        confined.confinement.apply(&mut cmd);
        if let Some(dir) = &confined.temp_dir {
            cmd.env("TMPDIR", dir);
        }
    }
    let started = Instant::now();
    let spawned = cmd.spawn();
    // Drop the parent's copies of the pipe's write end, or EOF never comes.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            if let Some(f) = capture.file.take() {
                drop(f);
                let _ = std::fs::remove_file(&out_path);
            }
            return Err(ToolError::new(
                ToolErrorKind::Spawn,
                format!(
                    "bash: starting {} in {shown_cwd} failed: {e}",
                    shell.display()
                ),
                "the operating system could not start the shell; nothing was run",
                "check that the shell exists and the directory is accessible",
            ));
        }
    };
    let pid = child.id();
    let pgid = pid as libc::pid_t;
    if background {
        let started = super::jobs::Started {
            child,
            reader,
            pgid,
            started,
            output_path: out_path,
            file: capture.file.take(),
            file_error: capture.file_error.take(),
            total: 0,
            limits: limits.clone(),
        };
        return Ok(super::jobs::started_result(
            cx, started, command, &shown_cwd,
        ));
    }
    let fd = reader.as_raw_fd();
    let mut buf = vec![0u8; 64 * 1024];
    let sink = cx.output_sink().cloned();
    let mut read_some = |capture: &mut Capture, wait_ms: i32| -> bool {
        // Returns false at end-of-file.
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is a valid pollfd for the duration of the call and
        // the count is 1.
        let ready = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if ready <= 0 {
            return true;
        }
        match reader.read(&mut buf) {
            Ok(0) => false,
            Ok(n) => {
                if let Some(s) = &sink {
                    s(&buf[..n]);
                }
                capture.push(&buf[..n]);
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => true,
            Err(_) => false,
        }
    };

    let deadline = started + timeout;
    let mut eof = false;
    let mut status = None;
    let mut exited_at: Option<Instant> = None;
    let mut pipe_held_open = false;
    let mut ending = Ending::Exited;
    loop {
        if eof {
            std::thread::sleep(Duration::from_millis(TICK_MS as u64));
        } else {
            eof = !read_some(&mut capture, TICK_MS);
        }
        if status.is_none()
            && let Ok(Some(s)) = child.try_wait()
        {
            status = Some(s);
            exited_at = Some(Instant::now());
        }
        if status.is_some() && eof {
            break;
        }
        if let Some(t) = exited_at {
            if t.elapsed() >= limits.bash_drain_after_exit {
                pipe_held_open = true;
                break;
            }
            continue;
        }
        if cx.cancel().is_cancelled() {
            ending = Ending::Cancelled;
            break;
        }
        if Instant::now() >= deadline {
            ending = Ending::TimedOut;
            break;
        }
    }

    // A command that outran its timeout keeps running as a job, unless
    // the configuration says to kill it or the runtime has no room.
    let mut not_moved = None;
    if ending == Ending::TimedOut && limits.bash_on_timeout == super::jobs::OnTimeout::Background {
        match cx.jobs().admit(NAME, limits) {
            Ok(()) => {
                let started_job = super::jobs::Started {
                    child,
                    reader,
                    pgid,
                    started,
                    output_path: out_path.clone(),
                    file: capture.file.take(),
                    file_error: capture.file_error.clone(),
                    total: capture.total,
                    limits: limits.clone(),
                };
                let job = cx
                    .jobs()
                    .adopt(started_job, command, &shown_cwd, cx.effect_id());
                return Ok(moved_result(command, &shown_cwd, timeout, &capture, &job));
            }
            Err(e) => not_moved = Some(e.what),
        }
    }
    let mut group_killed_hard = false;
    if ending != Ending::Exited {
        // SAFETY: plain syscall; a negative pid addresses the process group
        // the child leads (setsid made its pid the group id).
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let grace_end = Instant::now() + limits.bash_kill_grace;
        loop {
            if !eof {
                eof = !read_some(&mut capture, TICK_MS);
            } else {
                std::thread::sleep(Duration::from_millis(TICK_MS as u64));
            }
            if status.is_none()
                && let Ok(Some(s)) = child.try_wait()
            {
                status = Some(s);
            }
            if status.is_some() && !group_alive(pgid) {
                break;
            }
            if Instant::now() >= grace_end {
                // SAFETY: as above.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                group_killed_hard = true;
                break;
            }
        }
        if status.is_none() {
            status = child.wait().ok();
        }
        if group_killed_hard {
            // SIGKILL is delivered asynchronously; wait (boundedly) until
            // the group is really gone, so the caller can rely on it.
            let settle_end = Instant::now() + Duration::from_secs(1);
            while group_alive(pgid) && Instant::now() < settle_end {
                std::thread::sleep(Duration::from_millis(TICK_MS as u64));
            }
        }
        // The group is dead, so the pipe closes unless an escaped process
        // holds it; read what is left, briefly.
        let drain_end = Instant::now() + Duration::from_millis(200);
        while !eof && Instant::now() < drain_end {
            eof = !read_some(&mut capture, TICK_MS);
        }
    }
    let elapsed = started.elapsed();
    drop(reader);

    let truncated = capture.truncated();
    let (mut text, _, _) = capture.render();
    let full_output_path = if truncated && capture.file.is_some() {
        Some(out_path.display().to_string())
    } else {
        drop(capture.file.take());
        let _ = std::fs::remove_file(&out_path);
        None
    };
    if let Some(f) = capture.file.take() {
        let _ = f.sync_all();
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if truncated {
        match (&full_output_path, &capture.file_error) {
            (Some(p), _) => text.push_str(&format!(
                "[output truncated: {} bytes in total; full output saved to {p}]\n",
                capture.total
            )),
            (None, err) => text.push_str(&format!(
                "[output truncated: {} bytes in total; the full output could not be saved: {}]\n",
                capture.total,
                err.as_deref().unwrap_or("unknown error")
            )),
        }
    }
    if pipe_held_open {
        text.push_str(&format!(
            "[the shell exited but a background process kept its output open; stopped reading after {} ms]\n",
            limits.bash_drain_after_exit.as_millis()
        ));
    }
    let exit_code = status.and_then(|s| s.code());
    let signal = status.and_then(|s| s.signal());
    let (mutation, error) = match ending {
        Ending::Exited => {
            let failed = exit_code != Some(0);
            match (exit_code, signal) {
                (Some(code), _) => text.push_str(&format!("[exit code {code}]")),
                (None, Some(sig)) => text.push_str(&format!("[killed by signal {sig}]")),
                (None, None) => text.push_str("[exit status unknown]"),
            }
            let error = failed.then(|| {
                (
                    ToolErrorKind::CommandFailed,
                    match exit_code {
                        Some(code) => format!("the command exited with code {code}"),
                        None => "the command was killed by a signal".to_owned(),
                    },
                    "read the output above to see why it failed",
                )
            });
            (Mutation::Applied, error)
        }
        Ending::TimedOut => {
            text.push_str(&format!(
                "[timed out after {} s; the process group was terminated{}{}]",
                fmt_secs(timeout),
                if group_killed_hard {
                    " with SIGKILL"
                } else {
                    ""
                },
                match &not_moved {
                    Some(why) => format!(" (it could not move to the background: {why})"),
                    None => String::new(),
                }
            ));
            (
                Mutation::Unknown,
                Some((
                    ToolErrorKind::TimedOut,
                    format!("the command did not finish within {} s", fmt_secs(timeout)),
                    "pass a larger timeout, or run long jobs in the background with output redirected to a file",
                )),
            )
        }
        Ending::Cancelled => {
            text.push_str(&format!(
                "[cancelled after {} s; the process group was terminated{}]",
                fmt_secs(elapsed),
                if group_killed_hard {
                    " with SIGKILL"
                } else {
                    ""
                }
            ));
            (
                Mutation::Unknown,
                Some((
                    ToolErrorKind::Cancelled,
                    "the command was cancelled while running".to_owned(),
                    "whatever it did before it was stopped stays done; check the state before running it again",
                )),
            )
        }
    };
    let mut details = json!({
        "command": command,
        "cwd": shown_cwd,
        "pid": pid,
        "exit_code": exit_code,
        "signal": signal,
        "timed_out": ending == Ending::TimedOut,
        "cancelled": ending == Ending::Cancelled,
        "duration_ms": elapsed.as_millis() as u64,
        "output_bytes": capture.total,
        "truncated": truncated,
        "full_output_path": full_output_path,
        "pipe_held_open": pipe_held_open,
    });
    let is_error = error.is_some();
    if let Some((kind, what, next)) = error
        && let Some(obj) = details.as_object_mut()
    {
        obj.insert(
            "error".into(),
            json!({
                "kind": kind.as_str(),
                "what": what,
                "why": "",
                "next": next,
            }),
        );
    }
    Ok(ToolResult {
        content: text,
        details,
        is_error,
        mutation,
        media: Vec::new(),
    })
}

/// The result of a command that outran its timeout and moved to the
/// background as `job`: its output so far, then how to follow it.
#[cfg(unix)]
fn moved_result(
    command: &str,
    shown_cwd: &str,
    timeout: Duration,
    capture: &Capture,
    job: &super::jobs::Job,
) -> ToolResult {
    let truncated = capture.truncated();
    let (mut text, _, _) = capture.render();
    if text.is_empty() {
        text.push_str("(no output yet)");
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let file = job.info().output_path;
    if truncated {
        match &file {
            Some(p) => text.push_str(&format!(
                "[output truncated: {} bytes so far; the full output is in {p}]\n",
                capture.total
            )),
            None => text.push_str(&format!(
                "[output truncated: {} bytes so far; the full output could not be saved]\n",
                capture.total
            )),
        }
    }
    let id = job.id();
    text.push_str(&format!(
        "[still running after the {} s timeout: it continues in the background as {id} (process group {}); read its new output with bash_output {{\"job\": \"{id}\"}} (add \"wait\": SECONDS to wait for its end), stop it with bash_kill {{\"job\": \"{id}\"}}]",
        fmt_secs(timeout),
        job.pgid()
    ));
    ToolResult {
        media: Vec::new(),
        content: text,
        details: json!({
            "command": command,
            "cwd": shown_cwd,
            "pid": job.pgid(),
            "exit_code": Value::Null,
            "signal": Value::Null,
            "timed_out": true,
            "cancelled": false,
            "background": true,
            "job": id,
            "duration_ms": timeout.as_millis() as u64,
            "output_bytes": capture.total,
            "truncated": truncated,
            "full_output_path": file,
            "pipe_held_open": false,
        }),
        is_error: false,
        mutation: Mutation::Applied,
    }
}

/// The result of a command a [`CommandRunner`](super::CommandRunner) ran,
/// shaped as a local run's: the output, then how it ended.
fn delegated(
    command: &str,
    shown_cwd: &str,
    timeout: Duration,
    elapsed: Duration,
    kept: usize,
    outcome: super::CommandOutcome,
) -> ToolResult {
    use super::CommandEnding;
    let output_bytes = outcome.output.len();
    let mut text = outcome.output;
    if text.is_empty() {
        text.push_str("(no output)");
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if outcome.truncated {
        text.push_str(&format!(
            "[output truncated: the terminal kept the last {kept} bytes]\n"
        ));
    }
    let (mutation, error) = match outcome.ending {
        CommandEnding::Exited => {
            match (outcome.exit_code, &outcome.signal) {
                (Some(code), _) => text.push_str(&format!("[exit code {code}]")),
                (None, Some(sig)) => text.push_str(&format!("[killed by signal {sig}]")),
                (None, None) => text.push_str("[exit status unknown]"),
            }
            let error = (outcome.exit_code != Some(0)).then(|| {
                (
                    ToolErrorKind::CommandFailed,
                    match (outcome.exit_code, &outcome.signal) {
                        (Some(code), _) => format!("the command exited with code {code}"),
                        (None, Some(sig)) => format!("the command was killed by signal {sig}"),
                        (None, None) => "the command's exit status is unknown".to_owned(),
                    },
                    "read the output above to see why it failed",
                )
            });
            (Mutation::Applied, error)
        }
        CommandEnding::TimedOut => {
            text.push_str(&format!(
                "[timed out after {} s; the terminal was killed]",
                fmt_secs(timeout)
            ));
            (
                Mutation::Unknown,
                Some((
                    ToolErrorKind::TimedOut,
                    format!("the command did not finish within {} s", fmt_secs(timeout)),
                    "pass a larger timeout, or run long jobs in the background with output redirected to a file",
                )),
            )
        }
        CommandEnding::Cancelled => {
            text.push_str(&format!(
                "[cancelled after {} s; the terminal was killed]",
                fmt_secs(elapsed)
            ));
            (
                Mutation::Unknown,
                Some((
                    ToolErrorKind::Cancelled,
                    "the command was cancelled while running".to_owned(),
                    "whatever it did before it was stopped stays done; check the state before running it again",
                )),
            )
        }
    };
    let mut details = json!({
        "command": command,
        "cwd": shown_cwd,
        "terminal": outcome.handle,
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "timed_out": outcome.ending == CommandEnding::TimedOut,
        "cancelled": outcome.ending == CommandEnding::Cancelled,
        "duration_ms": elapsed.as_millis() as u64,
        "output_bytes": output_bytes,
        "truncated": outcome.truncated,
        "full_output_path": Value::Null,
        "pipe_held_open": false,
    });
    let is_error = error.is_some();
    if let Some((kind, what, next)) = error
        && let Some(obj) = details.as_object_mut()
    {
        obj.insert(
            "error".into(),
            json!({"kind": kind.as_str(), "what": what, "why": "", "next": next}),
        );
    }
    ToolResult {
        content: text,
        details,
        is_error,
        mutation,
        media: Vec::new(),
    }
}

/// Whether any live (non-zombie) process remains in group `pgid`.
///
/// On Linux this reads `/proc`, because `kill(-pgid, 0)` also succeeds for
/// zombies, and orphaned zombies linger where the init process does not
/// reap them (common in containers), which would make every cancellation
/// wait the full grace period.
#[cfg(target_os = "linux")]
pub(crate) fn group_alive(pgid: libc::pid_t) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        // SAFETY: signal 0 only checks whether the group exists.
        return unsafe { libc::kill(-pgid, 0) } == 0;
    };
    let want = pgid.to_string();
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the parenthesised command name: state, ppid, pgrp, ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1);
        if pgrp == Some(want.as_str()) && !matches!(state, Some("Z" | "X")) {
            return true;
        }
    }
    false
}

#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn group_alive(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks whether the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

#[cfg(not(unix))]
fn spawn_and_wait(
    _shell: &Path,
    _command: &str,
    _cwd: &Path,
    _timeout: Duration,
    _confined: Option<&Confined>,
    _background: bool,
    _cx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    Err(ToolError::new(
        ToolErrorKind::Spawn,
        "bash: process groups are not implemented on this platform",
        "bash needs process-group termination to honour cancellation",
        "run smith on Linux or macOS for the bash tool",
    ))
}

fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s:.1}")
    }
}

/// How long a full output file of a past run is kept for its session to
/// point at (a truncated result names it).
pub const KEEP_OUTPUTS: Duration = Duration::from_secs(24 * 60 * 60);

/// Removes what earlier runs left in the output folder `dir`: a bash
/// output file (`bash-PID-N.log`) whose process has ended is removed when
/// it is empty (a run killed before it finished) or older than `keep`; the
/// files of running processes, this one among them, and every other file
/// are left alone. Returns how many were removed.
pub fn sweep_outputs(dir: &Path, keep: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.ends_with(".log"))
            .and_then(|n| n.strip_prefix("bash-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid > 0)
        else {
            continue;
        };
        if u32::try_from(pid).ok() == Some(std::process::id()) || process_alive(pid) {
            continue;
        }
        // Not followed: only a plain file is ever removed.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= keep);
        if (meta.len() == 0 || old) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether process `pid` exists (it may belong to another user).
pub(crate) fn process_alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(max: usize) -> Capture {
        Capture {
            head: Vec::new(),
            head_max: max / 2,
            tail: Vec::new(),
            tail_max: max - max / 2,
            total: 0,
            file: None,
            file_error: None,
        }
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = capture(100);
        c.push(b"hello ");
        c.push(b"world\n");
        assert!(!c.truncated());
        assert_eq!(c.render().0, "hello world\n");
    }

    #[test]
    fn large_output_keeps_head_and_tail_at_line_ends() {
        let mut c = capture(40);
        for i in 0..100 {
            c.push(format!("line {i:03}\n").as_bytes());
        }
        assert!(c.truncated());
        assert_eq!(c.total, 900);
        let (text, head, tail) = c.render();
        assert_eq!(
            text,
            "line 000\nline 001\n[... 864 bytes omitted ...]\nline 098\nline 099\n"
        );
        assert_eq!((head, tail), (18, 18));
    }

    #[test]
    fn seconds_format() {
        assert_eq!(fmt_secs(Duration::from_secs(120)), "120");
        assert_eq!(fmt_secs(Duration::from_millis(1500)), "1.5");
    }
}
