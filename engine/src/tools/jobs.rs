//! Background jobs: `bash {background: true}`, a foreground command moved
//! to the background when it outruns its timeout, and the two tools that
//! follow a job: `bash_output {job, since?, max_bytes?, wait?}` and
//! `bash_kill {job, signal?}`.
//!
//! A job is a `bash -c` process group started exactly as a foreground
//! command is (its own session and group after `setsid`, the same sandbox,
//! stdin closed, stdout and stderr on one pipe). One thread per job reads
//! the pipe into the job's output file in the output folder
//! (`bash-PID-N.log`, at most [`Limits::bash_job_file_bytes`]; later output
//! is counted and dropped) and reaps the shell. The job ends when the shell
//! has exited and the pipe is closed (or the group is gone and the pipe
//! stayed open for [`Limits::bash_drain_after_exit`]).
//!
//! Every runtime has one [`Jobs`] table (in its [`ToolContext`]); job ids
//! are `job-1`, `job-2`, ... in start order. At most
//! [`Limits::bash_max_jobs`] run at once.
//!
//! Lifetime: the table's drop (the runtime's end) terminates every running
//! group (SIGTERM, SIGKILL after [`Limits::bash_kill_grace`]). So that no
//! job outlives smith even when it is killed outright, every job also has a
//! watchdog: a small `/bin/sh` in its own session whose standard input is a
//! pipe only smith holds the write end of (close-on-exec). When smith's
//! process ends in any way, the kernel closes that end, the watchdog reads
//! end-of-file and sends the group SIGTERM, then SIGKILL a second later.
//! A job that ends first has its watchdog killed.
//!
//! [`Limits::bash_job_file_bytes`]: super::Limits::bash_job_file_bytes
//! [`Limits::bash_drain_after_exit`]: super::Limits::bash_drain_after_exit
//! [`Limits::bash_max_jobs`]: super::Limits::bash_max_jobs
//! [`Limits::bash_kill_grace`]: super::Limits::bash_kill_grace

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    Access, Limits, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind,
    ToolResult, args,
};

/// What happens to a foreground `bash` command that outruns its timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnTimeout {
    /// It keeps running as a background job; the call returns its output
    /// so far and the job's id.
    #[default]
    Background,
    /// Its process group is terminated (SIGTERM, then SIGKILL).
    Kill,
}

impl OnTimeout {
    /// Parses `background` or `kill`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "background" => Some(OnTimeout::Background),
            "kill" => Some(OnTimeout::Kill),
            _ => None,
        }
    }

    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::Background => "background",
            OnTimeout::Kill => "kill",
        }
    }
}

/// How often a job's thread wakes to check the pipe and the shell.
const JOB_TICK_MS: i32 = 25;

/// Called when a job ends, from the job's thread.
pub type JobListener = Arc<dyn Fn(&JobInfo) + Send + Sync>;

/// Where a job's end is recorded: the runtime's journal and the counter its
/// effect ids are drawn from.
type Recorder = (
    Arc<dyn crate::journal::EffectJournal>,
    Arc<std::sync::atomic::AtomicU64>,
);

/// The tool name of the effect that records a job's end.
pub const JOB_END: &str = "bash_job_end";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a listing shows of one job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobInfo {
    /// `job-N`.
    pub id: String,
    /// The command line.
    pub command: String,
    /// The working directory, as shown to the model.
    pub cwd: String,
    /// The process group (the shell's pid).
    pub pgid: i32,
    /// `running`, `exited` or `killed` (ended after `bash_kill` or the
    /// runtime's end).
    pub state: String,
    /// The shell's exit code, once it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if one did.
    pub signal: Option<i32>,
    /// Milliseconds since the start (until the end, once ended).
    pub elapsed_ms: u64,
    /// Bytes of output so far.
    pub output_bytes: u64,
    /// The output file, when it could be created.
    pub output_path: Option<String>,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JobEnd {
    exit_code: Option<i32>,
    signal: Option<i32>,
    elapsed: Duration,
}

struct JobState {
    /// Bytes the job wrote.
    total: u64,
    /// Bytes kept in the output file (at most the cap).
    stored: u64,
    file_error: Option<String>,
    /// Where the next `bash_output` without `since` starts.
    cursor: u64,
    end: Option<JobEnd>,
    /// The signal `bash_kill` (or the runtime's end) sent, if any.
    killed_with: Option<&'static str>,
}

/// One background job.
pub struct Job {
    id: String,
    /// The effect id (`fx-N`) of the `bash` call that started the job.
    started_by: Option<String>,
    command: String,
    cwd: String,
    pgid: libc::pid_t,
    started: Instant,
    output_path: Option<PathBuf>,
    state: Mutex<JobState>,
    changed: Condvar,
    watchdog: Mutex<Option<Watchdog>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("pgid", &self.pgid)
            .finish_non_exhaustive()
    }
}

/// The runtime's background jobs.
#[derive(Default)]
pub struct Jobs {
    inner: Mutex<Inner>,
    listener: Arc<Mutex<Option<JobListener>>>,
    recorder: Arc<Mutex<Option<Recorder>>>,
}

#[derive(Default)]
struct Inner {
    started: u64,
    jobs: Vec<Arc<Job>>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("jobs", &lock(&self.inner).jobs)
            .finish_non_exhaustive()
    }
}

/// What a started process hands to its job.
#[cfg(unix)]
pub(crate) struct Started {
    pub(crate) child: std::process::Child,
    pub(crate) reader: std::io::PipeReader,
    pub(crate) pgid: libc::pid_t,
    pub(crate) started: Instant,
    pub(crate) output_path: PathBuf,
    pub(crate) file: Option<File>,
    pub(crate) file_error: Option<String>,
    /// Bytes already written to the file (a foreground command's output
    /// before it moved to the background).
    pub(crate) total: u64,
    /// The runtime's limits (the file's cap, the drain time).
    pub(crate) limits: Limits,
}

impl Jobs {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `listener` whenever a job ends (replacing an earlier one).
    pub fn set_listener(&self, listener: JobListener) {
        *lock(&self.listener) = Some(listener);
    }

    /// Records every job's end in `journal` as an effect of its own
    /// ([`JOB_END`], its parent the effect of the `bash` call that started
    /// the job), its id drawn from `ids` (the runtime's effect counter).
    pub fn record_ends(
        &self,
        journal: Arc<dyn crate::journal::EffectJournal>,
        ids: Arc<std::sync::atomic::AtomicU64>,
    ) {
        *lock(&self.recorder) = Some((journal, ids));
    }

    /// Every job of the runtime, running or ended, in start order.
    pub fn list(&self) -> Vec<JobInfo> {
        let jobs = lock(&self.inner).jobs.clone();
        jobs.iter().map(|j| j.info()).collect()
    }

    /// How many jobs are running.
    pub fn running(&self) -> usize {
        let jobs = lock(&self.inner).jobs.clone();
        jobs.iter().filter(|j| j.is_running()).count()
    }

    /// Refuses a new job when [`Limits::bash_max_jobs`] are running.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::Spawn`] naming the limit and the running jobs.
    pub fn admit(&self, tool: &str, limits: &Limits) -> Result<(), ToolError> {
        if limits.bash_max_jobs == 0 {
            return Err(ToolError::new(
                ToolErrorKind::Spawn,
                format!("{tool}: background jobs are off here"),
                "this frontend offers no bash_output or bash_kill to follow a job with (the limit of jobs is 0)",
                "run the command in the foreground, with a timeout long enough for it",
            ));
        }
        if self.running() < limits.bash_max_jobs {
            return Ok(());
        }
        Err(ToolError::new(
            ToolErrorKind::Spawn,
            format!(
                "{tool}: no new background job: {} jobs are already running",
                limits.bash_max_jobs
            ),
            format!(
                "a runtime runs at most {} background jobs at once",
                limits.bash_max_jobs
            ),
            format!(
                "stop one with bash_kill or wait for one to end (bash_output with wait); running: {}",
                self.describe_running()
            ),
        ))
    }

    /// The running jobs as `job-1 (`cmd`, running 3 s)`, or a sentence
    /// saying there are none.
    fn describe_running(&self) -> String {
        let running: Vec<String> = self
            .list()
            .into_iter()
            .filter(|j| j.state == "running")
            .map(|j| {
                format!(
                    "{} (`{}`, running {} s)",
                    j.id,
                    short(&j.command, 60),
                    j.elapsed_ms / 1000
                )
            })
            .collect();
        if running.is_empty() {
            "none".to_owned()
        } else {
            running.join(", ")
        }
    }

    /// The job called `id` (`job-N`, or just `N`).
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::NotFound`] listing the running jobs.
    pub fn get(&self, tool: &str, id: &str) -> Result<Arc<Job>, ToolError> {
        let wanted = if id.bytes().all(|b| b.is_ascii_digit()) && !id.is_empty() {
            format!("job-{id}")
        } else {
            id.to_owned()
        };
        let (found, started) = {
            let inner = lock(&self.inner);
            (
                inner.jobs.iter().find(|j| j.id == wanted).cloned(),
                inner.started,
            )
        };
        found.ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::NotFound,
                format!("{tool}: there is no job `{id}` in this runtime"),
                format!(
                    "job ids come from bash (background: true, or a command that outran its timeout); this runtime started {started} job{} and jobs do not outlive the runtime that started them",
                    if started == 1 { "" } else { "s" }
                ),
                format!(
                    "use the id bash returned; jobs running now: {}",
                    self.describe_running()
                ),
            )
            .with_extra("job", Value::from(id))
        })
    }

    /// Makes `started` a job: gives it an id and a watchdog and starts the
    /// thread that reads its output and reaps it. The job's read cursor
    /// starts at `started.total` (what the caller already showed).
    #[cfg(unix)]
    pub(crate) fn adopt(
        &self,
        started: Started,
        command: &str,
        cwd: &str,
        started_by: Option<String>,
    ) -> Arc<Job> {
        let watchdog = Watchdog::spawn(started.pgid);
        let id = {
            let mut inner = lock(&self.inner);
            inner.started += 1;
            format!("job-{}", inner.started)
        };
        let output_path = started.file.as_ref().map(|_| started.output_path.clone());
        let job = Arc::new(Job {
            id,
            started_by,
            command: command.to_owned(),
            cwd: cwd.to_owned(),
            pgid: started.pgid,
            started: started.started,
            output_path,
            state: Mutex::new(JobState {
                total: started.total,
                stored: if started.file.is_some() {
                    started.total
                } else {
                    0
                },
                file_error: started.file_error.clone(),
                cursor: started.total,
                end: None,
                killed_with: None,
            }),
            changed: Condvar::new(),
            watchdog: Mutex::new(watchdog),
        });
        lock(&self.inner).jobs.push(Arc::clone(&job));
        let thread_job = Arc::clone(&job);
        let listener = Arc::clone(&self.listener);
        let recorder = Arc::clone(&self.recorder);
        let spawned = std::thread::Builder::new()
            .name(format!("smith-{}", job.id))
            .spawn(move || {
                follow(&thread_job, started);
                let info = thread_job.info();
                let recorder = lock(&recorder).clone();
                if let Some((journal, ids)) = recorder {
                    record_end(&thread_job, &info, journal.as_ref(), &ids);
                }
                let listener = lock(&listener).clone();
                if let Some(listener) = listener {
                    listener(&info);
                }
            });
        if spawned.is_err() {
            // No thread follows the job: end it now rather than leave it
            // unobserved.
            job.signal(libc::SIGKILL, "KILL");
        }
        job
    }

    /// Terminates every running job's group: SIGTERM, then SIGKILL after
    /// `grace`; waits (boundedly) for their ends.
    pub fn end_all(&self, grace: Duration) {
        let jobs = lock(&self.inner).jobs.clone();
        let running: Vec<&Arc<Job>> = jobs.iter().filter(|j| j.is_running()).collect();
        for job in &running {
            job.signal(libc::SIGTERM, "TERM");
        }
        let deadline = Instant::now() + grace;
        for job in &running {
            job.wait_end(deadline.saturating_duration_since(Instant::now()), None);
        }
        for job in running.iter().filter(|j| j.is_running()) {
            job.signal(libc::SIGKILL, "KILL");
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        for job in &running {
            job.wait_end(deadline.saturating_duration_since(Instant::now()), None);
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.end_all(Limits::default().bash_kill_grace);
    }
}

fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && line.len() == text.len() {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}

impl Job {
    /// `job-N`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The process group.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Whether the job has not ended.
    pub fn is_running(&self) -> bool {
        lock(&self.state).end.is_none()
    }

    /// The listing entry.
    pub fn info(&self) -> JobInfo {
        let st = lock(&self.state);
        let (state, exit_code, signal, elapsed) = match st.end {
            None => ("running", None, None, self.started.elapsed()),
            Some(end) => (
                if st.killed_with.is_some() {
                    "killed"
                } else {
                    "exited"
                },
                end.exit_code,
                end.signal,
                end.elapsed,
            ),
        };
        JobInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pgid: self.pgid,
            state: state.to_owned(),
            exit_code,
            signal,
            elapsed_ms: elapsed.as_millis() as u64,
            output_bytes: st.total,
            output_path: self.output_path.as_ref().map(|p| p.display().to_string()),
        }
    }

    /// Sends `signal` to the group unless the job has ended. Returns
    /// whether it was sent.
    fn signal(&self, signal: libc::c_int, name: &'static str) -> bool {
        let mut st = lock(&self.state);
        if st.end.is_some() {
            return false;
        }
        st.killed_with = Some(name);
        // SAFETY: plain syscall. The job has not ended, so its shell is
        // not yet reaped or its group still has members: the group id
        // cannot have been reused.
        unsafe { libc::kill(-self.pgid, signal) };
        true
    }

    /// Waits up to `timeout` for the end (checking `cancel` between
    /// ticks); returns whether the job has ended.
    fn wait_end(&self, timeout: Duration, cancel: Option<&super::CancelToken>) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = lock(&self.state);
        loop {
            if st.end.is_some() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || cancel.is_some_and(super::CancelToken::is_cancelled) {
                return false;
            }
            let step = (deadline - now).min(Duration::from_millis(50));
            st = self
                .changed
                .wait_timeout(st, step)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Reads the output from `since` (default: where the last read
    /// stopped), at most `max` bytes, and moves the read cursor past it.
    fn read(&self, since: Option<u64>, max: usize) -> Result<Chunk, ToolError> {
        let mut st = lock(&self.state);
        let from = since.unwrap_or(st.cursor);
        if from > st.total {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!(
                    "bash_output: `since` {from} is past the end of {}'s output ({} bytes so far)",
                    self.id, st.total
                ),
                "`since` is a byte offset into the job's output, as returned in `next`",
                format!(
                    "omit since to read what is new, or pass a value up to {}",
                    st.total
                ),
            ));
        }
        let mut chunk = Chunk {
            from,
            bytes: Vec::new(),
            dropped: 0,
            next: from,
            total: st.total,
            file_error: st.file_error.clone(),
        };
        if from < st.stored
            && let Some(path) = &self.output_path
        {
            let want = (st.stored - from).min(max as u64) as usize;
            let mut buf = vec![0u8; want];
            let read = File::open(path).and_then(|mut f| {
                f.seek(SeekFrom::Start(from))?;
                f.read_exact(&mut buf)
            });
            match read {
                Ok(()) => {
                    // Stop at a line end when more follows and one is in
                    // the second half, so lines are not split across reads.
                    if from + (want as u64) < st.total
                        && let Some(nl) = buf.iter().rposition(|&b| b == b'\n')
                        && nl >= buf.len() / 2
                    {
                        buf.truncate(nl + 1);
                    }
                    chunk.next = from + buf.len() as u64;
                    chunk.bytes = buf;
                }
                Err(e) => chunk.file_error = Some(e.to_string()),
            }
        } else if from >= st.stored && st.total > from {
            // Past the file's cap (or with no file): counted, not kept.
            chunk.dropped = st.total - from;
            chunk.next = st.total;
        }
        if chunk.bytes.is_empty() && chunk.dropped == 0 && from < st.total {
            // The file could not be read: skip what cannot be shown.
            chunk.dropped = st.total - from;
            chunk.next = st.total;
        }
        st.cursor = chunk.next;
        Ok(chunk)
    }

    /// The text a tool shows of the job's state after a read.
    fn status_line(&self) -> String {
        let info = self.info();
        let secs = fmt_ms(info.elapsed_ms);
        match info.state.as_str() {
            "running" => format!("{} is running ({secs} s so far)", self.id),
            _ => {
                let how = match (info.exit_code, info.signal) {
                    (Some(code), _) => format!("exited with code {code}"),
                    (None, Some(sig)) => format!("was killed by signal {sig}"),
                    (None, None) => "ended (exit status unknown)".to_owned(),
                };
                format!("{} {how} after {secs} s", self.id)
            }
        }
    }
}

fn fmt_ms(ms: u64) -> String {
    format!("{:.1}", ms as f64 / 1000.0)
}

/// One read of a job's output.
struct Chunk {
    from: u64,
    bytes: Vec<u8>,
    /// Bytes skipped because they were not kept (past the file's cap).
    dropped: u64,
    next: u64,
    total: u64,
    file_error: Option<String>,
}

impl Chunk {
    /// The output text followed by notes on what was skipped or is left.
    fn render(&self, id: &str) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if self.dropped > 0 {
            text.push_str(&format!(
                "[{} bytes of output were not kept: {}]\n",
                self.dropped,
                match &self.file_error {
                    Some(e) => format!("the output file failed: {e}"),
                    None => "they came after the output file's size cap".to_owned(),
                }
            ));
        }
        let left = self.total - self.next;
        if left > 0 {
            text.push_str(&format!(
                "[{left} more bytes not shown; call bash_output {{\"job\": \"{id}\"}} again to read on from byte {}]\n",
                self.next
            ));
        }
        text
    }
}

/// Follows a job until it ends: reads the pipe into the output file and
/// reaps the shell, then records the end and kills the watchdog.
#[cfg(unix)]
fn follow(job: &Job, started: Started) {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::process::ExitStatusExt as _;

    let Started {
        mut child,
        mut reader,
        mut file,
        limits,
        ..
    } = started;
    let file_cap = limits.bash_job_file_bytes;
    let fd = reader.as_raw_fd();
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let mut status = None;
    let mut exited_at: Option<Instant> = None;
    // When the group was last looked for in `/proc` (a whole scan).
    let mut looked = Instant::now();
    loop {
        if eof {
            std::thread::sleep(Duration::from_millis(JOB_TICK_MS as u64));
        } else {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is a valid pollfd for the call and the count is 1.
            let ready = unsafe { libc::poll(&mut pfd, 1, JOB_TICK_MS) };
            if ready > 0 {
                match reader.read(&mut buf) {
                    Ok(0) => eof = true,
                    Ok(n) => {
                        let mut st = lock(&job.state);
                        let keep = (file_cap.saturating_sub(st.stored)).min(n as u64) as usize;
                        if keep > 0
                            && let Some(f) = &mut file
                        {
                            if let Err(e) = f.write_all(&buf[..keep]) {
                                st.file_error = Some(e.to_string());
                                file = None;
                            } else {
                                st.stored += keep as u64;
                            }
                        }
                        st.total += n as u64;
                        drop(st);
                        job.changed.notify_all();
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => eof = true,
                }
            }
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
        // The shell exited but the pipe stays open: keep reading while
        // the group lives; once it is gone, a process that left it holds
        // the pipe, and reading stops after the drain time.
        if let Some(t) = exited_at
            && t.elapsed() >= limits.bash_drain_after_exit
            && looked.elapsed() >= Duration::from_millis(250)
        {
            looked = Instant::now();
            if !super::bash::group_alive(job.pgid) {
                break;
            }
        }
    }
    if let Some(f) = file {
        let _ = f.sync_all();
    }
    let end = JobEnd {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        elapsed: job.started.elapsed(),
    };
    lock(&job.state).end = Some(end);
    job.changed.notify_all();
    if let Some(mut dog) = lock(&job.watchdog).take() {
        dog.stop();
    }
}

/// Records `job`'s end as an effect: an intent (`{job}`) and at once its
/// completion (`{content, details, is_error}`, the details a [`JobInfo`]).
/// A record the journal refuses is dropped: the job is over either way.
fn record_end(
    job: &Job,
    info: &JobInfo,
    journal: &dyn crate::journal::EffectJournal,
    ids: &std::sync::atomic::AtomicU64,
) {
    use crate::journal::{
        BUILTIN_GENERATION, EffectCompletion, EffectIntent, Outcome, canonical_cbor,
    };
    let effect_id = format!(
        "fx-{}",
        ids.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
    );
    let Ok(input) = canonical_cbor(&json!({"job": info.id})) else {
        return;
    };
    let intent = EffectIntent {
        effect_id: effect_id.clone(),
        parent: job.started_by.clone().unwrap_or_else(|| info.id.clone()),
        tool: JOB_END.to_owned(),
        plugin_generation: BUILTIN_GENERATION,
        input,
    };
    if journal.record_intent(&intent).is_err() {
        return;
    }
    let content = format!(
        "{}; {} bytes of output",
        job.status_line(),
        info.output_bytes
    );
    let details = serde_json::to_value(info).unwrap_or(Value::Null);
    let Ok(output) =
        canonical_cbor(&json!({"content": content, "details": details, "is_error": false}))
    else {
        return;
    };
    let _ = journal.record_completion(&EffectCompletion {
        effect_id,
        outcome: Outcome::Ok,
        mutation: Mutation::Applied,
        output,
    });
}

/// A `/bin/sh` that terminates a job's group when smith's process ends:
/// it blocks reading a pipe whose write end only smith holds.
struct Watchdog {
    child: std::process::Child,
    _holds: std::io::PipeWriter,
}

impl Watchdog {
    #[cfg(unix)]
    fn spawn(pgid: libc::pid_t) -> Option<Watchdog> {
        use std::os::unix::process::CommandExt as _;
        use std::process::{Command, Stdio};
        // The write end is close-on-exec: no other child inherits it.
        let (read_end, write_end) = std::io::pipe().ok()?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("read _ ; kill -TERM -$0 2>/dev/null; sleep 1; kill -KILL -$0 2>/dev/null")
            .arg(pgid.to_string())
            .stdin(read_end)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only `setsid`, async-signal-safe, runs in the child: the
        // watchdog gets its own session, so a terminal's signals and a
        // kill of smith's group leave it to do its work.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().ok()?;
        Some(Watchdog {
            child,
            _holds: write_end,
        })
    }

    /// Ends the watchdog without letting it signal (the job is over).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a job from `started` and returns the `bash` result for it: the
/// id, the group, and the output of its first moment.
#[cfg(unix)]
pub(crate) fn started_result(
    cx: &ToolContext,
    started: Started,
    command: &str,
    shown_cwd: &str,
) -> ToolResult {
    let job = cx.jobs().adopt(started, command, shown_cwd, cx.effect_id());
    // The first moment: enough for a quick error or a first line.
    job.wait_end(Duration::from_millis(300), Some(cx.cancel()));
    let chunk = job.read(None, cx.limits().bash_output_bytes);
    let mut text = format!(
        "Started {} in the background (process group {}).\n",
        job.id, job.pgid
    );
    let (shown, next) = match &chunk {
        Ok(c) => {
            text.push_str(&c.render(&job.id));
            (c.bytes.len(), c.next)
        }
        Err(_) => (0, 0),
    };
    text.push_str(&format!("[{}", job.status_line()));
    if job.is_running() {
        text.push_str(&format!(
            "; read its new output with bash_output {{\"job\": \"{id}\"}} (add \"wait\": SECONDS to wait for its end), stop it with bash_kill {{\"job\": \"{id}\"}}]",
            id = job.id
        ));
    } else {
        text.push_str(&format!(
            "; read the rest of its output with bash_output {{\"job\": \"{}\"}}]",
            job.id
        ));
    }
    let info = job.info();
    ToolResult {
        media: Vec::new(),
        content: text,
        details: json!({
            "command": command,
            "cwd": shown_cwd,
            "background": true,
            "job": job.id,
            "pid": job.pgid,
            "state": info.state,
            "exit_code": info.exit_code,
            "signal": info.signal,
            "shown_bytes": shown,
            "next": next,
            "output_bytes": info.output_bytes,
            "full_output_path": info.output_path,
        }),
        is_error: false,
        mutation: Mutation::Applied,
    }
}

/// `bash_output {job, since?, max_bytes?, wait?}`.
#[derive(Debug)]
pub struct BashOutputTool {
    def: ToolDefinition,
}

impl Default for BashOutputTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BashOutputTool {
    /// The tool.
    pub fn new() -> Self {
        BashOutputTool {
            def: ToolDefinition {
                name: "bash_output".into(),
                description: "Read a background job's new output (since the last read, or from \
                    byte `since`), bounded to `max_bytes`; reports whether it is still running or \
                    how it ended. `wait` blocks up to that many seconds for the job to end first. \
                    Jobs come from bash with background: true, or a command that outran its timeout."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "job": {"type": "string", "minLength": 1, "description": "The job id bash returned (job-N)."},
                        "since": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (default: where the last read stopped; 0 reads from the start)."},
                        "max_bytes": {"type": "integer", "minimum": 1, "description": "Most bytes of output returned (default and maximum 50 KiB)."},
                        "wait": {"type": "number", "minimum": 0, "description": "Seconds to wait for the job to end before reading (default 0, at most 600)."}
                    },
                    "required": ["job"],
                    "additionalProperties": false
                }),
                access: Access::ReadOnly,
            },
        }
    }
}

impl Tool for BashOutputTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        bash_output(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

/// The longest `wait` of `bash_output`.
const MAX_WAIT: Duration = Duration::from_secs(600);

fn bash_output(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    const NAME: &str = "bash_output";
    let id = args::string(NAME, args, "job")?;
    let since = args::opt_usize(NAME, args, "since")?.map(|n| n as u64);
    let cap = cx.limits().bash_output_bytes;
    let max = args::opt_usize(NAME, args, "max_bytes")?
        .unwrap_or(cap)
        .clamp(1, cap);
    let wait = args::opt_f64(NAME, args, "wait")?
        .map(|s| Duration::from_secs_f64(s.min(MAX_WAIT.as_secs_f64())))
        .unwrap_or_default();
    let job = cx.jobs().get(NAME, id)?;
    if !wait.is_zero() {
        job.wait_end(wait, Some(cx.cancel()));
    }
    let chunk = job.read(since, max)?;
    let mut text = chunk.render(&job.id);
    if chunk.bytes.is_empty() && chunk.dropped == 0 {
        text.push_str("(no new output)\n");
    }
    text.push_str(&format!("[{}]", job.status_line()));
    let info = job.info();
    Ok(ToolResult {
        media: Vec::new(),
        content: text,
        details: json!({
            "job": job.id,
            "command": job.command,
            "state": info.state,
            "exit_code": info.exit_code,
            "signal": info.signal,
            "elapsed_ms": info.elapsed_ms,
            "from": chunk.from,
            "next": chunk.next,
            "shown_bytes": chunk.bytes.len(),
            "dropped_bytes": chunk.dropped,
            "output_bytes": chunk.total,
            "full_output_path": info.output_path,
        }),
        is_error: false,
        mutation: Mutation::NotApplied,
    })
}

/// `bash_kill {job, signal?}`.
#[derive(Debug)]
pub struct BashKillTool {
    def: ToolDefinition,
}

impl Default for BashKillTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BashKillTool {
    /// The tool.
    pub fn new() -> Self {
        BashKillTool {
            def: ToolDefinition {
                name: "bash_kill".into(),
                description: "Stop a background job: signal its whole process group (TERM by \
                    default), then KILL it if it has not ended after a 2-second grace; reports \
                    how it ended and its last output."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "job": {"type": "string", "minLength": 1, "description": "The job id bash returned (job-N)."},
                        "signal": {"type": "string", "enum": ["TERM", "INT", "HUP", "KILL"], "description": "The first signal (default TERM)."}
                    },
                    "required": ["job"],
                    "additionalProperties": false
                }),
                access: Access::Mutating,
            },
        }
    }
}

impl Tool for BashKillTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        bash_kill(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

fn bash_kill(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    const NAME: &str = "bash_kill";
    let id = args::string(NAME, args, "job")?;
    let (signal, name) = match args::opt_string(NAME, args, "signal")? {
        None | Some("TERM") => (libc::SIGTERM, "TERM"),
        Some("INT") => (libc::SIGINT, "INT"),
        Some("HUP") => (libc::SIGHUP, "HUP"),
        Some("KILL") => (libc::SIGKILL, "KILL"),
        Some(other) => {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("bash_kill: unknown signal `{other}`"),
                "bash_kill sends one of TERM, INT, HUP or KILL",
                "omit signal for TERM, or pass one of those names",
            ));
        }
    };
    let job = cx.jobs().get(NAME, id)?;
    let sent = job.signal(signal, name);
    let mut hard = false;
    if sent {
        let grace = cx.limits().bash_kill_grace;
        if !job.wait_end(grace, None) && signal != libc::SIGKILL {
            job.signal(libc::SIGKILL, "KILL");
            hard = true;
        }
        job.wait_end(Duration::from_secs(2), None);
    }
    let chunk = job.read(None, cx.limits().bash_output_bytes)?;
    let mut text = chunk.render(&job.id);
    let info = job.info();
    let what = if !sent {
        format!("[{} had already ended: {}]", job.id, job.status_line())
    } else {
        format!(
            "[sent SIG{name} to process group {}{}; {}]",
            job.pgid,
            if hard {
                ", then SIGKILL after the grace"
            } else {
                ""
            },
            job.status_line()
        )
    };
    text.push_str(&what);
    Ok(ToolResult {
        media: Vec::new(),
        content: text,
        details: json!({
            "job": job.id,
            "command": job.command,
            "signal_sent": sent.then_some(name),
            "killed_hard": hard,
            "state": info.state,
            "exit_code": info.exit_code,
            "signal": info.signal,
            "elapsed_ms": info.elapsed_ms,
            "from": chunk.from,
            "next": chunk.next,
            "shown_bytes": chunk.bytes.len(),
            "output_bytes": chunk.total,
            "full_output_path": info.output_path,
        }),
        is_error: false,
        mutation: if sent {
            Mutation::Applied
        } else {
            Mutation::NotApplied
        },
    })
}

/// `bash_output` and `bash_kill`, the tools that follow the jobs `bash`
/// starts (a runtime offers them beside the built-in seven).
pub fn job_tools() -> [Arc<dyn Tool>; 2] {
    [
        Arc::new(BashOutputTool::new()),
        Arc::new(BashKillTool::new()),
    ]
}
