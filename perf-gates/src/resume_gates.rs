//! Gates on resuming a huge session and answering one prompt: `smith eval
//! --session` over sessions of 1 GiB and 100 MB against a local fake
//! OpenAI-compatible endpoint (a loopback HTTP server this process runs;
//! no network), in CPU time beyond the provider and in heap growth.
//!
//! The fixtures come from the session gates' generator
//! ([`crate::session_gates::write_fixture_shaped`]): runs laid out the way
//! `smith eval` records them, each starting with its model change, and a
//! compaction every 512 KB, about every six runs, as a long session that
//! compacts whenever its context nears a 128k window has them. They are
//! written once per bench run into the system temp directory (1 GiB in a
//! few seconds: each template entry is compressed once) and removed when
//! the run ends.
//!
//! * `resume.answer_1gib`: the CPU time (user and system, read with
//!   `wait4`) of one `smith eval --session` of the 1 GiB session with one
//!   prompt, to its answer. The endpoint runs in this process, so its time
//!   (the provider's) is not counted; everything smith does is: starting,
//!   loading its plugins, opening the session at its leaf, resuming,
//!   building and sending the request, reading the answer, recording it.
//!   At most 100 ms, and at most 1.2 times the same at 100 MB (flat: the
//!   resume does not grow with the history).
//! * `resume.answer_100mb`: the same at 100 MB, at most 100 ms.
//! * `resume.heap_1gib`: the peak growth of live heap (accounting
//!   allocator) while this process resumes the 1 GiB session the way
//!   `smith eval` does and records one prompt and its answer into it; the
//!   file's mapping is not heap. At most 64 MiB.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use smith_engine::agent::compact::{BYTES_PER_TOKEN, MAX_SUMMARIZED_WINDOWS};
use smith_engine::journal::store::{StoreJournal, resume_from_leaf};
use smith_engine::journal::{MessageMeta, SessionEvent, SessionSink};
use smith_engine::provider::{ContentBlock, Message, StopReason};
use smith_store::{Limits, SessionFile, Store};

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::session_gates::{Shape, write_fixture_shaped};
use crate::store_gates::scaled;
use crate::table::Context;

/// The issue's bound on the CPU of resuming a session and answering one
/// prompt, beyond the provider: 100 ms.
pub const ANSWER_CPU_LIMIT_NS: f64 = 100_000_000.0;

/// The issue's flatness: the 1 GiB resume at most 1.2 times the 100 MB one.
pub const FLAT_RATIO_LIMIT: f64 = 1.2;

/// The issue's bound on heap growth while a huge session is resumed and
/// answered: 64 MiB.
pub const HEAP_LIMIT: f64 = 64.0 * 1024.0 * 1024.0;

/// The large fixture (1 GiB) and the small one (100 MB), under the full
/// and quick plans; 1,024 times smaller under the others.
pub const BIG_BYTES: u64 = 1 << 30;
/// See [`BIG_BYTES`].
pub const SMALL_BYTES: u64 = 100_000_000;

/// The model's window in tokens (a common local model's 128k), as the
/// fixture's `models.kdl` declares it.
pub const WINDOW: u64 = 128_000;

/// The fixtures' shape: a model change per run, a compaction every 512 KB.
pub const SHAPE: Shape = Shape {
    model_changes: true,
    compactions: Some((512 << 10, 0)),
};

/// What the endpoint answers.
const ANSWER: &str = "The answer, from the resumed session.";

/// Runs of `smith eval` measured per fixture under the quick plan.
const RUNS_QUICK: usize = 5;

/// Gates on resuming a huge session.
pub const RESUME: &[Gate] = &[
    Gate {
        name: "resume.answer_1gib",
        metric: "CPU time (user + system) of `smith eval --session` resuming a 1 GiB session recorded the way `smith eval` records one (a compaction every 512 KB) and answering one prompt against a local fake OpenAI-compatible endpoint (the endpoint's time not counted), at most 1.2 times the 100 MB figure (flat)",
        unit: Unit::Nanoseconds,
        limits: &[
            Limit::AtMost(ANSWER_CPU_LIMIT_NS),
            Limit::RatioAtMost(FLAT_RATIO_LIMIT),
        ],
        floor: Some("the same resume and answer of a 100 MB session"),
        run: answer_1gib,
        cores: 1,
    },
    Gate {
        name: "resume.answer_100mb",
        metric: "CPU time (user + system) of `smith eval --session` resuming the 100 MB session and answering one prompt against the local fake endpoint (the endpoint's time not counted)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(ANSWER_CPU_LIMIT_NS)],
        floor: None,
        run: answer_100mb,
        cores: 1,
    },
    Gate {
        name: "resume.heap_1gib",
        metric: "peak growth of live heap bytes (accounting allocator; the file's mapping is not heap) while the 1 GiB session is opened at its leaf, resumed within a 128k window and one prompt and its answer are recorded into it",
        unit: Unit::Bytes,
        limits: &[Limit::AtMost(HEAP_LIMIT)],
        floor: None,
        run: heap_1gib,
        cores: 1,
    },
];

fn gate_error(what: &str, err: impl std::fmt::Display) -> GateError {
    GateError::new(format!("{what}: {err}"))
}

/// A `SMITH_HOME` holding one fixture session and a `models.kdl` that
/// declares the model's window.
#[derive(Debug)]
struct Home {
    home: PathBuf,
    /// The session's store.
    sessions: PathBuf,
    /// The session file's length when written.
    len: u64,
    /// Its entries.
    entries: u64,
}

/// The resume gates' fixtures of a bench run, removed on drop.
#[derive(Debug)]
pub struct Fixtures {
    dir: PathBuf,
    big: Home,
    small: Home,
    /// The CPU figures of the big and the small session, measured by the
    /// first gate and reported again by the second.
    figures: Option<(Vec<u64>, Vec<u64>)>,
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        // Best effort: a leftover fixture in the temp dir harms nothing, and
        // its name says what it is.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The fixture session's id, as its file is named.
fn session_hex() -> String {
    "5e".repeat(16)
}

/// Writes `dir/name`, a `SMITH_HOME` with a fixture session of at least
/// `bytes` bytes (id `5e5e…5e`, [`SHAPE`]), its summary sidecar and a
/// `models.kdl` declaring `llama.cpp`'s `local-model` with a [`WINDOW`]
/// window; returns the home's path.
///
/// # Errors
///
/// When the folders or files cannot be written.
pub fn write_resume_home(dir: &Path, name: &str, bytes: u64) -> Result<PathBuf, GateError> {
    write_home(dir, name, bytes).map(|h| h.home)
}

fn write_home(dir: &Path, name: &str, bytes: u64) -> Result<Home, GateError> {
    let home = dir.join(name);
    let sessions = home.join("data/sessions");
    let io = |what: &str, path: &Path, e: std::io::Error| {
        GateError::new(format!(
            "could not write {what} {}: {e}; check that the temporary directory (TMPDIR) is writable and has room for {bytes} bytes",
            path.display()
        ))
    };
    std::fs::create_dir_all(&sessions).map_err(|e| io("the folder", &sessions, e))?;
    let scratch = home.join("scratch");
    std::fs::create_dir_all(&scratch).map_err(|e| io("the folder", &scratch, e))?;
    let file = sessions.join(format!("{}.smith", session_hex()));
    let (entries, runs) = write_fixture_shaped(&scratch, &file, bytes, &SHAPE)?;
    // Its summary sidecar, as every session smith records has one.
    let summary = smith_store::Summary {
        runs,
        cwd: Some("/home/user/project".to_owned()),
        // The fixture holds no plugin state.
        state_keys: Some(Vec::new()),
        ..smith_store::Summary::default()
    };
    Store::open(&sessions)
        .and_then(|store| store.write_summary(smith_store::SessionId([0x5e; 16]), &summary))
        .map_err(|e| gate_error("could not write the session fixture's summary", e))?;
    let len = std::fs::metadata(&file)
        .map_err(|e| io("the session fixture", &file, e))?
        .len();
    let models = home.join("models.kdl");
    std::fs::write(
        &models,
        format!(
            "provider \"llama.cpp\" {{\n    model \"local-model\" {{\n        context {WINDOW}\n        tools #true\n    }}\n}}\n"
        ),
    )
    .map_err(|e| io("the model list", &models, e))?;
    Ok(Home {
        home,
        sessions,
        len,
        entries,
    })
}

impl Context {
    /// The resume gates' fixtures, written on first use.
    fn resume_fixtures(&mut self) -> Result<&mut Fixtures, GateError> {
        if self.resume_fixtures.is_none() {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "smith-bench-resume-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).map_err(|e| {
                gate_error(
                    &format!(
                        "could not create the resume fixture directory {}; check that the temporary directory (TMPDIR) is writable",
                        dir.display()
                    ),
                    e,
                )
            })?;
            // Removed on every path from here on.
            let mut fixtures = Fixtures {
                dir: dir.clone(),
                big: Home {
                    home: PathBuf::new(),
                    sessions: PathBuf::new(),
                    len: 0,
                    entries: 0,
                },
                small: Home {
                    home: PathBuf::new(),
                    sessions: PathBuf::new(),
                    len: 0,
                    entries: 0,
                },
                figures: None,
            };
            fixtures.big = write_home(&dir, "big", scaled(&self.plan, BIG_BYTES))?;
            // Under the small plans both fixtures hold a compaction and the
            // same window's worth after it, as the full-size ones do (1 MiB
            // and 768 KiB rather than 1 MiB and 97 KB).
            let small = scaled(&self.plan, SMALL_BYTES);
            let small = if small < SMALL_BYTES {
                small.max(768 << 10)
            } else {
                small
            };
            fixtures.small = write_home(&dir, "small", small)?;
            // One compiled-component cache for both homes: the first
            // unmeasured run fills it, the second finds it.
            #[cfg(unix)]
            {
                let cache = fixtures.big.home.join("cache");
                std::fs::create_dir_all(&cache)
                    .and_then(|()| {
                        std::os::unix::fs::symlink(&cache, fixtures.small.home.join("cache"))
                    })
                    .map_err(|e| {
                        gate_error(
                            &format!(
                                "could not share the compiled-component cache {} between the resume fixtures",
                                cache.display()
                            ),
                            e,
                        )
                    })?;
            }
            self.resume_fixtures = Some(fixtures);
        }
        self.resume_fixtures
            .as_mut()
            .ok_or_else(|| GateError::new("the resume fixtures were not kept".to_owned()))
    }
}

/// The local fake OpenAI-compatible endpoint: answers every chat request
/// with a short streamed completion, counts the requests and keeps the
/// largest's size. Stops when dropped.
struct Endpoint {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    largest: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Endpoint {
    fn start() -> Result<Endpoint, GateError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| {
            gate_error(
                "could not listen on a loopback port for the fake endpoint",
                e,
            )
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| gate_error("the fake endpoint's port cannot be read", e))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let largest = Arc::new(AtomicU64::new(0));
        let (s, r, l) = (
            Arc::clone(&stop),
            Arc::clone(&requests),
            Arc::clone(&largest),
        );
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(conn) = conn {
                    // One connection at a time: smith sends one request at
                    // once, and a failure only fails that request.
                    let _ = serve(conn, &r, &l);
                }
            }
        });
        Ok(Endpoint {
            port,
            stop,
            requests,
            largest,
            thread: Some(thread),
        })
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A streamed chat completion answering [`ANSWER`].
fn completion() -> String {
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1733500000,\"model\":\"local-model\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut body = chunk(
        &format!("{{\"role\":\"assistant\",\"content\":\"{ANSWER}\"}}"),
        "null",
    );
    body.push_str(&chunk("{}", "\"stop\""));
    body.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":12,\"total_tokens\":912}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body
}

/// Serves the requests of one connection until it closes.
fn serve(conn: TcpStream, requests: &AtomicU64, largest: &AtomicU64) -> std::io::Result<()> {
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                return Ok(());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let (status, kind, reply) = if path.ends_with("/models") {
            (
                "200 OK",
                "application/json",
                r#"{"object":"list","data":[{"id":"local-model","object":"model"}]}"#.to_owned(),
            )
        } else if path.ends_with("/chat/completions") {
            requests.fetch_add(1, Ordering::Relaxed);
            largest.fetch_max(length as u64, Ordering::Relaxed);
            ("200 OK", "text/event-stream", completion())
        } else {
            (
                "404 Not Found",
                "text/plain",
                "404 page not found".to_owned(),
            )
        };
        write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n{reply}",
            reply.len()
        )?;
        out.flush()?;
    }
}

/// One `smith eval --session` of `home`'s session with one prompt against
/// `endpoint`: its CPU time in nanoseconds (an error unless it exits 0).
fn eval(exe: &Path, home: &Home, endpoint: &Endpoint) -> Result<u64, GateError> {
    let base = endpoint.base_url();
    let session = session_hex();
    let mut cmd = Command::new(exe);
    cmd.args([
        OsStr::new("eval"),
        OsStr::new("--provider"),
        OsStr::new("llama.cpp"),
        OsStr::new("--base-url"),
        OsStr::new(&base),
        OsStr::new("--model"),
        OsStr::new("local-model"),
        OsStr::new("--session"),
        OsStr::new(&session),
        OsStr::new("what did we do so far?"),
    ])
    .env("SMITH_HOME", &home.home)
    .env("NO_COLOR", "1")
    .env_remove("XDG_DATA_HOME")
    .env_remove("XDG_CACHE_HOME")
    .env_remove("XDG_CONFIG_HOME")
    .env_remove("SMITH_LOG_FILE")
    .env_remove("SMITH_PROVIDER")
    .env_remove("SMITH_MODEL")
    .env_remove("OPENAI_BASE_URL")
    .env_remove("LLAMA_CPP_BASE_URL")
    .current_dir(&home.home)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let child = cmd
        .spawn()
        .map_err(|e| GateError::new(format!("could not start {}: {e}", exe.display())))?;
    let (status, cpu) = crate::flood_gates::wait_cpu(child)?;
    if status != 0 {
        return Err(GateError::new(format!(
            "`smith eval --session` of the resume fixture in {} exited with {status}; run `cargo test --release --test big_resume` to see why",
            home.home.display()
        )));
    }
    Ok(cpu)
}

/// Runs of each fixture for `cx`'s plan (odd).
fn runs(cx: &Context) -> usize {
    if cx.plan.name == "quick" {
        RUNS_QUICK
    } else {
        (cx.plan.samples | 1).clamp(3, 11)
    }
}

fn median(v: &[u64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0) as f64
}

fn note(name: &'static str, value: f64, unit: Unit) -> Note {
    Note { name, value, unit }
}

/// Both fixtures' CPU figures, alternating (one unmeasured run of each
/// first: it warms the compiled-component cache and writes the sessions'
/// summary sidecars, as any earlier use of a session has).
fn measure_both(cx: &mut Context) -> Result<(Vec<u64>, Vec<u64>, u64, u64), GateError> {
    let exe = crate::smith_exe("the resume gates run `smith eval` as")?;
    let n = runs(cx);
    let probe = crate::load::Probe::start();
    let fixtures = cx.resume_fixtures()?;
    let endpoint = Endpoint::start()?;
    eval(&exe, &fixtures.big, &endpoint)?;
    eval(&exe, &fixtures.small, &endpoint)?;
    let before = endpoint.requests.load(Ordering::Relaxed);
    let (mut big, mut small) = (Vec::new(), Vec::new());
    for _ in 0..n {
        small.push(eval(&exe, &fixtures.small, &endpoint)?);
        big.push(eval(&exe, &fixtures.big, &endpoint)?);
    }
    let requests = endpoint.requests.load(Ordering::Relaxed) - before;
    let largest = endpoint.largest.load(Ordering::Relaxed);
    fixtures.figures = Some((big.clone(), small.clone()));
    cx.record_load(probe.finish());
    Ok((big, small, requests, largest))
}

fn answer_1gib(cx: &mut Context) -> Result<Measurement, GateError> {
    let (big, small, requests, largest) = measure_both(cx)?;
    let fixtures = cx.resume_fixtures()?;
    let bound = WINDOW * BYTES_PER_TOKEN;
    if largest > bound {
        return Err(GateError::new(format!(
            "a request to the fake endpoint was {largest} bytes, over the {WINDOW}-token window ({bound} bytes at {BYTES_PER_TOKEN} a token)"
        )));
    }
    Ok(Measurement {
        median: median(&big),
        floor: Some(median(&small)),
        samples: big.len(),
        notes: vec![
            note("file_bytes", fixtures.big.len as f64, Unit::Bytes),
            note("entries", fixtures.big.entries as f64, Unit::Count),
            note(
                "min",
                big.iter().min().copied().unwrap_or(0) as f64,
                Unit::Nanoseconds,
            ),
            note(
                "max",
                big.iter().max().copied().unwrap_or(0) as f64,
                Unit::Nanoseconds,
            ),
            note(
                "requests_per_answer",
                requests as f64 / (2 * big.len()) as f64,
                Unit::Count,
            ),
            note("largest_request", largest as f64, Unit::Bytes),
        ],
    })
}

fn answer_100mb(cx: &mut Context) -> Result<Measurement, GateError> {
    // The first gate measured both sessions, interleaved; its figures are
    // reused when it ran in this round, else both are measured here.
    let small = match cx.resume_fixtures()?.figures.take() {
        Some((_, small)) => small,
        None => measure_both(cx)?.1,
    };
    let fixtures = cx.resume_fixtures()?;
    Ok(Measurement {
        median: median(&small),
        floor: None,
        samples: small.len(),
        notes: vec![
            note("file_bytes", fixtures.small.len as f64, Unit::Bytes),
            note("entries", fixtures.small.entries as f64, Unit::Count),
            note(
                "min",
                small.iter().min().copied().unwrap_or(0) as f64,
                Unit::Nanoseconds,
            ),
            note(
                "max",
                small.iter().max().copied().unwrap_or(0) as f64,
                Unit::Nanoseconds,
            ),
        ],
    })
}

/// Resumes the session in `sessions` as `smith eval` does (opened at its
/// leaf, within a 128k window's budget, claimed for recording) and records
/// one prompt and its answer: the messages resumed.
fn resume_and_record(sessions: &Path) -> Result<usize, GateError> {
    let store = Store::open(sessions).map_err(|e| gate_error("opening the fixture's store", e))?;
    let file = SessionFile::open(&store.path_of(smith_store::SessionId([0x5e; 16])))
        .map_err(|e| gate_error("opening the fixture session", e))?;
    let budget = WINDOW * BYTES_PER_TOKEN * (MAX_SUMMARIZED_WINDOWS + 2);
    let Some((session, resumed)) = resume_from_leaf(&file, &Limits::default(), &|_| Some(budget))
        .map_err(|e| gate_error("resuming the fixture session", e))?
    else {
        return Err(GateError::new(
            "the fixture session could not be resumed from its leaf (it would be loaded whole); its compactions are meant to keep the walk short"
                .to_owned(),
        ));
    };
    drop(file);
    let journal = StoreJournal::claimed(store, session)
        .map_err(|e| gate_error("claiming the fixture session", e))?;
    let record = |message: Message| {
        journal
            .record(&SessionEvent::Message {
                message,
                meta: MessageMeta::default(),
            })
            .map_err(|e| gate_error("recording into the resumed session", e))
    };
    record(Message::user("what did we do so far?"))?;
    record(Message::Assistant {
        content: vec![ContentBlock::Text {
            text: ANSWER.to_owned(),
        }],
        stop: StopReason::End,
    })?;
    if !journal.opened_at_leaf() {
        return Err(GateError::new(
            "recording into the resumed session loaded it whole".to_owned(),
        ));
    }
    Ok(resumed.history.len())
}

fn heap_1gib(cx: &mut Context) -> Result<Measurement, GateError> {
    if !smith_alloc::is_global_allocator() {
        return Err(GateError::new(
            "smith_alloc::AccountingAllocator is not this process's global allocator, so a peak \
             of live bytes would be meaningless; run the gate from the `smith` binary (`smith \
             bench`)"
                .to_owned(),
        ));
    }
    let fixtures = cx.resume_fixtures()?;
    let sessions = fixtures.big.sessions.clone();
    let len = fixtures.big.len;
    let runs = 3;
    let (mut worst, mut messages) = (0u64, 0usize);
    for _ in 0..runs {
        let (r, stats) = smith_alloc::count(|| resume_and_record(&sessions));
        messages = r?;
        worst = worst.max(stats.peak_live_bytes);
    }
    Ok(Measurement {
        median: worst as f64,
        floor: None,
        samples: runs,
        notes: vec![
            note("file_bytes", len as f64, Unit::Bytes),
            note("messages_resumed", messages as f64, Unit::Count),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_gates_carry_the_issue_s_limits() {
        assert_eq!(
            crate::table::limits_of("resume.answer_1gib"),
            Some(vec![Limit::AtMost(100_000_000.0), Limit::RatioAtMost(1.2)]),
            "100 ms of CPU, flat within 1.2x of the 100 MB figure"
        );
        assert_eq!(
            crate::table::limits_of("resume.answer_100mb"),
            Some(vec![Limit::AtMost(100_000_000.0)]),
        );
        assert_eq!(
            crate::table::limits_of("resume.heap_1gib"),
            Some(vec![Limit::AtMost(64.0 * 1024.0 * 1024.0)]),
            "64 MiB"
        );
    }
}
