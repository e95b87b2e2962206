//! Gates on the fullscreen interface (smith-tui).
//!
//! The workload is `smith_tui::bench_support::Screen`: an interface filled
//! the way resuming a session fills it — from an in-memory session of
//! representative messages (user message, assistant answer with a tool
//! call, the call's output, repeated), so its entries are session-backed
//! and every drawn entry's text is decoded from the session's arena — drawn
//! on a 160 × 50 screen exactly as the terminal loop draws it: prepare the
//! layout, render into the cell buffer with the frame's bump arena, diff
//! against the previous frame into the output buffer. The promise behind the gates: a frame costs the same at 10
//! entries and at a million, because only what is on screen is measured,
//! decoded and drawn.
//!
//! - [`FRAME_P99_BUDGET_NS`]: the 99th percentile of steady-frame CPU time
//!   at 1,000,000 entries, each frame timed on its own.
//! - `tui.frame_scaling` and `tui.keystroke_frame`: the frame at a million
//!   entries against the same frame at 10 entries, measured side by side
//!   (interleaved samples, medians), so the ratio is the cost of history
//!   size and nothing else.
//! - `tui.steady_frame_allocations`: exactly 0.
//! - `tui.waiting_question_frame_allocations`: exactly 0 while a plugin's
//!   question waits (its overlay open and drawn, a second queued behind
//!   it): a waiting question adds nothing to a frame.
//! - `tui.keystroke_frame_bytes`: the bytes one typed character makes the
//!   frame write to the terminal; deterministic, must not grow.
//! - `tui.first_frame`: wall time from spawning `smith tui --provider mock`
//!   in a pseudo-terminal to its first drawn frame (median of several
//!   launches; see [`time_to_first_frame`]).
//! - `tui.first_frame_fresh_home`: the same with a brand-new `SMITH_HOME`
//!   for every launch, as a first start after installing sees it; the
//!   same limit, and at most [`FRESH_HOME_RATIO`] times a later start
//!   measured beside it (its floor). The built-in plugins the interface
//!   loads come precompiled in the binary and are used where they lie on
//!   every start, so a first start compiles, decompresses and caches
//!   nothing; the gate fails when a launch writes any compiled component
//!   (`.cwasm`) into its home.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use smith_tui::bench_support::Screen;

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::measure;
use crate::table::Context;

/// Entries of the large session.
pub const LARGE: usize = 1_000_000;
/// Entries of the small session (the floor of the scaling gates).
pub const SMALL: usize = 10;
/// Entries of a session that fills the screen with exactly what the large
/// one shows (both are multiples of the four-entry pattern), for a note
/// that separates "more history" from "more on screen".
pub const FULL_SCREEN: usize = 1_000;

/// The issue's goal for a steady frame with a 1M-entry session: at most
/// 1 ms at the 99th percentile. The spec's frame budget is 16 ms (60 Hz);
/// 1 ms leaves the rest of the frame to the terminal and the runtime. The
/// frame measures about 0.1 ms at p99 on the loaded 2-core development
/// machine (docs/benchmarks.md).
pub const FRAME_P99_BUDGET_NS: f64 = 1_000_000.0;

/// "The same within noise": a frame at 1M entries may cost at most this
/// many times the same frame at 10 entries. Work proportional to history
/// size (a scan of the records, a height cache walk) would show up as
/// 10x or more; cache misses on a larger working set stay well below.
pub const SCALING_RATIO: f64 = 1.5;

/// Bytes written by the frame after one typed character on the 160 × 50
/// workload screen: the character, the cursor moves and the style resets
/// of the changed input cells, nothing else. Exact and deterministic;
/// lowering it is welcome (update the number), raising it must be a
/// deliberate change here. Kept equal to `TYPED_CHAR_FRAME_BYTES` in
/// smith-tui's `tests/all/allocs.rs`.
pub const KEYSTROKE_FRAME_BYTES: f64 = 23.0;

/// The spec's nearest startup budget ("help output starts within 100 ms"):
/// the interface's first frame must be drawn within it too.
pub const FIRST_FRAME_BUDGET_NS: f64 = 100_000_000.0;

/// "As fast as later starts": a first start on a fresh `SMITH_HOME` may
/// take at most this many times a later start's first frame, measured
/// side by side. The built-in plugins the interface loads before its first
/// frame are embedded uncompressed and used where they lie in the binary
/// on every start, first or later (docs/plugins.md, "Precompiled
/// built-ins"), so what a first start does beyond a later one is creating
/// its folders and files. Before that a first start decompressed them,
/// deserialized copies and wrote their cache files (1.45 to 1.50x in a
/// quiet CI run, 18.9 ms against 12.6 ms; 2.0 to 2.3x when it compiled
/// them); since, 0.98 to 1.06x (10.1 to 10.5 ms against 9.8 to 10.3 ms)
/// at load average 2.8, and 0.83 to 1.20x per run with other builds
/// keeping the 2-core machine busy (load average 4.8 to 6.6; one run's
/// first round failed, its second passed: docs/benchmarks.md, "TUI
/// gates"). 1.25x holds "as fast" with a margin for a busy machine's
/// noise, and the old way fails it.
pub const FRESH_HOME_RATIO: f64 = 1.25;

/// Launches timed by `tui.first_frame` with the quick plan (more with the
/// full plan, see [`first_frame_launches`]).
pub const FIRST_FRAME_LAUNCHES_QUICK: usize = 5;

/// Text of the first drawn frame: the key hint at the end of the status
/// line, drawn by every frame.
pub const FIRST_FRAME_MARKER: &[u8] = b"F1 help";

/// Gates on the fullscreen interface.
pub const TUI: &[Gate] = &[
    Gate {
        name: "tui.frame_p99_1m",
        metric: "99th percentile CPU time of a steady frame (prepare, render, diff) with 1,000,000 entries, 160x50",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(FRAME_P99_BUDGET_NS)],
        floor: None,
        run: frame_p99,
        cores: 1,
    },
    Gate {
        name: "tui.frame_scaling",
        metric: "steady frame with 1,000,000 entries (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::RatioAtMost(SCALING_RATIO)],
        floor: Some("the same steady frame with 10 entries"),
        run: frame_scaling,
        cores: 1,
    },
    Gate {
        name: "tui.keystroke_frame",
        metric: "keystroke-to-frame (editor key, prepare, render, diff) with 1,000,000 entries (median)",
        unit: Unit::Nanoseconds,
        limits: &[
            Limit::AtMost(FRAME_P99_BUDGET_NS),
            Limit::RatioAtMost(SCALING_RATIO),
        ],
        floor: Some("the same keystroke-to-frame with 10 entries"),
        run: keystroke_frame,
        cores: 1,
    },
    Gate {
        name: "tui.steady_frame_allocations",
        metric: "allocations per steady frame with 1,000,000 entries (exact count)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(0.0)],
        floor: None,
        run: steady_frame_allocations,
        cores: 1,
    },
    Gate {
        name: "tui.waiting_question_frame_allocations",
        metric: "allocations per steady frame while a plugin's question waits (its overlay open, a second queued) over 1,000,000 entries (exact count)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(0.0)],
        floor: None,
        run: waiting_question_frame_allocations,
        cores: 1,
    },
    Gate {
        name: "tui.keystroke_frame_bytes",
        metric: "bytes written to the terminal by the frame after one typed character (exact, must not grow)",
        unit: Unit::Bytes,
        limits: &[Limit::AtMost(KEYSTROKE_FRAME_BYTES)],
        floor: None,
        run: keystroke_frame_bytes,
        cores: 1,
    },
    Gate {
        name: "tui.first_frame",
        metric: "wall time from spawning `smith tui --provider mock` in a pseudo-terminal to its first drawn frame, on a home an earlier start filled (median of launches)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(FIRST_FRAME_BUDGET_NS)],
        floor: None,
        run: first_frame,
        // The interface runs in its own process while this one reads its
        // output, timed on the wall clock.
        cores: 2,
    },
    Gate {
        name: "tui.first_frame_fresh_home",
        metric: "wall time from spawning `smith tui --provider mock` in a pseudo-terminal to its first drawn frame, a new empty SMITH_HOME for every launch (median of launches)",
        unit: Unit::Nanoseconds,
        limits: &[
            Limit::AtMost(FIRST_FRAME_BUDGET_NS),
            Limit::RatioAtMost(FRESH_HOME_RATIO),
        ],
        floor: Some(
            "the same launch on a home an earlier start filled, each launch right after a fresh one",
        ),
        run: first_frame_fresh_home,
        // As `tui.first_frame`.
        cores: 2,
    },
];

/// Reads the calling thread's CPU clock in nanoseconds (the wall clock
/// where there is none), like the clock `measure` times samples with.
#[cfg(unix)]
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant every supported Unix defines for the calling thread.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return wall_ns();
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(not(unix))]
fn cpu_ns() -> u64 {
    wall_ns()
}

fn wall_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// The `q` quantile (0..=1) of sorted samples, nearest rank below.
fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q) as usize] as f64
}

/// Frames timed one by one: `plan.samples` × 50 of them (1,050 with the
/// quick plan, 5,050 with the full one), after the plan's warm-up.
fn frame_percentiles(cx: &Context, screen: &mut Screen) -> Vec<u64> {
    let start = cpu_ns();
    while (cpu_ns() - start) < cx.plan.warmup.as_nanos() as u64 {
        black_box(screen.frame());
    }
    let frames = cx.plan.samples.max(1) * 50;
    let mut samples = Vec::with_capacity(frames);
    for _ in 0..frames {
        let t = cpu_ns();
        black_box(screen.frame());
        samples.push(cpu_ns().saturating_sub(t));
    }
    samples.sort_unstable();
    samples
}

fn frame_p99(cx: &mut Context) -> Result<Measurement, GateError> {
    let mut large = Screen::new(LARGE);
    let samples = frame_percentiles(cx, &mut large);
    let mut small = Screen::new(SMALL);
    let small_samples = frame_percentiles(cx, &mut small);
    Ok(Measurement {
        median: quantile(&samples, 0.99),
        floor: None,
        samples: samples.len(),
        notes: vec![
            Note {
                name: "p50_1m",
                value: quantile(&samples, 0.5),
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "max_1m",
                value: quantile(&samples, 1.0),
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "p99_10",
                value: quantile(&small_samples, 0.99),
                unit: Unit::Nanoseconds,
            },
        ],
    })
}

fn frame_scaling(cx: &mut Context) -> Result<Measurement, GateError> {
    let mut large = Screen::new(LARGE);
    let mut small = Screen::new(SMALL);
    let (subject, floor) = measure::paired(
        &cx.plan,
        || {
            black_box(large.frame());
        },
        || {
            black_box(small.frame());
        },
    );
    // Ten entries do not fill the screen, so part of the ratio is the
    // rows the large session draws and the small one does not. Against a
    // session showing the identical screen, what is left is history size.
    let mut full = Screen::new(FULL_SCREEN);
    let (again, same_screen) = measure::paired(
        &cx.plan,
        || {
            black_box(large.frame());
        },
        || {
            black_box(full.frame());
        },
    );
    let mut m = Measurement::timed(&subject, &floor);
    m.notes.push(Note {
        name: "same_screen_1k",
        value: same_screen.median_ns,
        unit: Unit::Nanoseconds,
    });
    m.notes.push(Note {
        name: "ratio_to_same_screen_1k",
        value: again.median_ns / same_screen.median_ns.max(f64::MIN_POSITIVE),
        unit: Unit::Ratio,
    });
    Ok(m)
}

fn keystroke_frame(cx: &mut Context) -> Result<Measurement, GateError> {
    let mut large = Screen::new(LARGE);
    let mut small = Screen::new(SMALL);
    let (subject, floor) = measure::paired(
        &cx.plan,
        || {
            black_box(large.keystroke_frame());
        },
        || {
            black_box(small.keystroke_frame());
        },
    );
    Ok(Measurement::timed(&subject, &floor))
}

fn steady_frame_allocations(_cx: &mut Context) -> Result<Measurement, GateError> {
    if !smith_alloc::is_global_allocator() {
        return Err(GateError::new(
            "smith_alloc::AccountingAllocator is not this process's global allocator, so an \
             allocation count of 0 would be meaningless; run the gate from the `smith` binary \
             (`smith bench`)",
        ));
    }
    let mut screen = Screen::new(LARGE);
    let frames = 100;
    let (written, stats) = smith_alloc::count(|| {
        let mut written = 0;
        for _ in 0..frames {
            written += screen.frame();
        }
        written
    });
    if written != 0 {
        return Err(GateError::new(format!(
            "{frames} steady frames wrote {written} bytes to the terminal, so they were not \
             steady (something on screen changes every frame); the allocation count of such \
             frames says nothing about a steady frame: fix smith-tui's App::prepare/render"
        )));
    }
    Ok(Measurement {
        median: stats.allocations as f64,
        floor: None,
        samples: frames,
        notes: vec![Note {
            name: "bytes_allocated",
            value: stats.allocated_bytes as f64,
            unit: Unit::Bytes,
        }],
    })
}

/// A question a plugin waits for, as the interface shows it: a confirmation
/// whose answer is a command.
fn waiting_question(id: &str) -> smith_tui::Overlay {
    let answer = |text: &str| smith_tui::Output::Command {
        name: format!("\0wait\01\0{id}"),
        arg: text.to_owned(),
    };
    smith_tui::Overlay::Confirm {
        message: "[test/kit] Run kit_guarded on prod?".to_owned(),
        on_yes: answer("yes"),
        on_no: Some(answer("no")),
    }
}

fn waiting_question_frame_allocations(_cx: &mut Context) -> Result<Measurement, GateError> {
    if !smith_alloc::is_global_allocator() {
        return Err(GateError::new(
            "smith_alloc::AccountingAllocator is not this process's global allocator, so an \
             allocation count of 0 would be meaningless; run the gate from the `smith` binary \
             (`smith bench`)",
        ));
    }
    let mut screen = Screen::new(LARGE);
    // The question's overlay opens and is drawn; a second waits behind it.
    screen.app.ask(waiting_question("q-1"));
    screen.app.ask(waiting_question("q-2"));
    screen.frame();
    screen.frame();
    let frames = 100;
    let (written, stats) = smith_alloc::count(|| {
        let mut written = 0;
        for _ in 0..frames {
            written += screen.frame();
        }
        written
    });
    if written != 0 {
        return Err(GateError::new(format!(
            "{frames} frames while a question waited wrote {written} bytes to the terminal, so \
             the waiting question changes the screen every frame: fix smith-tui's overlay drawing"
        )));
    }
    Ok(Measurement {
        median: stats.allocations as f64,
        floor: None,
        samples: frames,
        notes: vec![Note {
            name: "bytes_allocated",
            value: stats.allocated_bytes as f64,
            unit: Unit::Bytes,
        }],
    })
}

fn keystroke_frame_bytes(_cx: &mut Context) -> Result<Measurement, GateError> {
    let mut screen = Screen::new(SMALL);
    let first = screen.typed_char_frame_bytes();
    let again = screen.typed_char_frame_bytes();
    if first != again {
        return Err(GateError::new(format!(
            "the same keystroke wrote {first} bytes and then {again} bytes: the frame diff is \
             not deterministic, so its size cannot be gated; fix smith-tui's diff"
        )));
    }
    let mut large = Screen::new(LARGE);
    let at_large = large.typed_char_frame_bytes();
    Ok(Measurement {
        median: first as f64,
        floor: None,
        samples: 2,
        notes: vec![Note {
            name: "bytes_at_1m",
            value: at_large as f64,
            unit: Unit::Bytes,
        }],
    })
}

/// How many launches `tui.first_frame` times with `plan`.
pub fn first_frame_launches(plan: &crate::measure::Plan) -> usize {
    if plan.name == "quick" {
        FIRST_FRAME_LAUNCHES_QUICK
    } else {
        plan.samples.clamp(FIRST_FRAME_LAUNCHES_QUICK, 21)
    }
}

/// A program to launch in a pseudo-terminal and wait for.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<std::ffi::OsString>,
    /// Environment variables set (on top of this process's).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Environment variables removed.
    pub env_remove: Vec<String>,
    /// The bytes that mark the first frame.
    pub marker: Vec<u8>,
    /// How long to wait for the marker.
    pub timeout: Duration,
}

#[cfg(unix)]
struct Pty {
    master: std::fs::File,
    slave: std::os::fd::OwnedFd,
}

#[cfg(unix)]
fn open_pty() -> Result<Pty, GateError> {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: valid out-pointers; a null name and termios are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    if rc != 0 {
        return Err(GateError::new(format!(
            "could not open a pseudo-terminal to start the interface in: {}; the gate needs              openpty (a Unix with /dev/ptmx)",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: openpty returned two fresh descriptors that are now owned here.
    unsafe {
        Ok(Pty {
            master: std::fs::File::from_raw_fd(master),
            slave: std::os::fd::OwnedFd::from_raw_fd(slave),
        })
    }
}

/// The primary device attributes reply of a VT220-class terminal: the
/// interface's capability probe ends when it arrives, as it does on every
/// real terminal.
const DA1_REPLY: &[u8] = b"\x1b[?62;22c";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Spawns `launch` on a new pseudo-terminal (80 × 24, its controlling
/// terminal, in a session of its own) and returns the wall time from the
/// spawn to the moment its output first contains the marker. It answers
/// the primary device attributes query (`CSI c`) like a terminal does.
/// The program is then sent SIGTERM (SIGKILL after two seconds) and
/// reaped.
///
/// # Errors
///
/// When the pseudo-terminal or the process cannot be started, or the
/// marker does not appear within the timeout (the error quotes the end of
/// the output).
#[cfg(unix)]
pub fn time_to_first_frame(launch: &Launch) -> Result<Duration, GateError> {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let pty = open_pty()?;
    let slave = pty.slave.as_raw_fd();
    let mut cmd = Command::new(&launch.program);
    cmd.args(&launch.args);
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    for k in &launch.env_remove {
        cmd.env_remove(k);
    }
    let mut fds = [-1; 3];
    for fd in &mut fds {
        // SAFETY: dup of a valid descriptor.
        *fd = unsafe { libc::dup(slave) };
        if *fd < 0 {
            return Err(GateError::new(format!(
                "could not duplicate the pseudo-terminal's descriptor: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    // SAFETY: fresh descriptors handed to the child (and closed here when
    // the command is dropped); the pre-exec hook only makes async-signal-
    // safe calls.
    unsafe {
        cmd.stdin(Stdio::from_raw_fd(fds[0]))
            .stdout(Stdio::from_raw_fd(fds[1]))
            .stderr(Stdio::from_raw_fd(fds[2]));
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut reader = pty.master.try_clone().map_err(|e| {
        GateError::new(format!("could not clone the pseudo-terminal's master: {e}"))
    })?;
    let mut writer = pty.master;
    let marker = launch.marker.clone();
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let output = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&output);
    let spawned = Instant::now();
    let child = cmd.spawn();
    drop(cmd);
    drop(pty.slave);
    let mut child = child.map_err(|e| {
        GateError::new(format!("could not start {}: {e}", launch.program.display()))
    })?;
    // The reader ends when the last holder of the terminal closes it; it
    // is not waited for (a process the program left behind may hold it).
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        let (mut answered, mut seen) = (false, false);
        let mut all = Vec::new();
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let at = Instant::now();
                    all.extend_from_slice(&buf[..n]);
                    if !seen && contains(&all, &marker) {
                        seen = true;
                        let _ = tx.send(at);
                    }
                    if !answered && (contains(&all, b"\x1b[c") || contains(&all, b"\x1b[0c")) {
                        answered = true;
                        let _ = writer.write_all(DA1_REPLY);
                    }
                    if let Ok(mut out) = sink.lock() {
                        out.extend_from_slice(&buf[..n]);
                    }
                }
            }
        }
    });
    let seen = rx.recv_timeout(launch.timeout);
    // Stop the interface the way a terminal closing does: it restores
    // the terminal and exits.
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling our own child, which has not been reaped yet.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    match seen {
        Ok(at) => Ok(at.saturating_duration_since(spawned)),
        Err(_) => {
            let out = output.lock().map(|o| o.clone()).unwrap_or_default();
            let tail = &out[out.len().saturating_sub(400)..];
            Err(GateError::new(format!(
                "{} {} drew no frame containing {:?} within {:?}; the end of its output was: {:?}",
                launch.program.display(),
                launch
                    .args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                String::from_utf8_lossy(&launch.marker),
                launch.timeout,
                String::from_utf8_lossy(tail)
            )))
        }
    }
}

/// Needs a Unix pseudo-terminal: always an error elsewhere.
///
/// # Errors
///
/// Always.
#[cfg(not(unix))]
pub fn time_to_first_frame(_launch: &Launch) -> Result<Duration, GateError> {
    Err(GateError::new(
        "the first-frame gate needs a Unix pseudo-terminal",
    ))
}

/// A directory of this run under the system temporary directory, removed
/// when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// A fresh `smith-bench-WHAT-PID-NANOS` directory.
    pub(crate) fn new(what: &str) -> Result<Self, GateError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("smith-bench-{what}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| GateError::new(format!("could not create {}: {e}", dir.display())))?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The interface's launch: offline (`--provider mock`) in an empty
/// directory, with a fresh `SMITH_HOME`, as an xterm-class terminal.
fn interface_launch(exe: &Path, home: &Path, work: &Path) -> Launch {
    Launch {
        program: exe.to_path_buf(),
        args: vec![
            "tui".into(),
            "--provider".into(),
            "mock".into(),
            "--cwd".into(),
            work.as_os_str().to_owned(),
        ],
        env: vec![
            ("SMITH_HOME".to_owned(), home.as_os_str().to_owned()),
            ("TERM".to_owned(), "xterm-256color".into()),
        ],
        env_remove: vec![
            "SMITH_TUI_CAPS".to_owned(),
            "NO_COLOR".to_owned(),
            "SMITH_TUI_TEST_FAULT".to_owned(),
        ],
        marker: FIRST_FRAME_MARKER.to_vec(),
        timeout: Duration::from_secs(20),
    }
}

/// The measurement of first-frame launch times (nanoseconds, any order)
/// with `extra` notes after min and max.
fn first_frame_measurement(mut samples: Vec<u64>, extra: Vec<Note>) -> Measurement {
    samples.sort_unstable();
    let mut notes = vec![
        Note {
            name: "min",
            value: quantile(&samples, 0.0),
            unit: Unit::Nanoseconds,
        },
        Note {
            name: "max",
            value: quantile(&samples, 1.0),
            unit: Unit::Nanoseconds,
        },
    ];
    notes.extend(extra);
    Measurement {
        median: quantile(&samples, 0.5),
        floor: None,
        samples: samples.len(),
        notes,
    }
}

fn first_frame(cx: &mut Context) -> Result<Measurement, GateError> {
    let exe = crate::smith_exe("the first-frame gates launch the interface as")?;
    let home = TempDir::new("home")?;
    let work = TempDir::new("work")?;
    let launch = interface_launch(&exe, &home.0, &work.0);
    // The first start fills SMITH_HOME (configuration, state, and the
    // compile cache of any plugin that is not built in); the gate measures
    // the starts after it, as users see them every day.
    let cold = time_to_first_frame(&launch)?;
    // Timed on the wall clock: the report carries the machine's load over
    // the warm launches.
    let probe = crate::load::Probe::start();
    let mut samples = Vec::new();
    for _ in 0..first_frame_launches(&cx.plan) {
        samples.push(time_to_first_frame(&launch)?.as_nanos() as u64);
    }
    cx.record_load(probe.finish());
    Ok(first_frame_measurement(
        samples,
        vec![Note {
            name: "cold_first_launch",
            value: cold.as_nanos() as f64,
            unit: Unit::Nanoseconds,
        }],
    ))
}

/// The compiled components (`.cwasm` files) anywhere under `dir`.
fn compiled_components_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "cwasm") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn first_frame_fresh_home(cx: &mut Context) -> Result<Measurement, GateError> {
    let exe = crate::smith_exe("the first-frame gates launch the interface as")?;
    let work = TempDir::new("work")?;
    // The floor: later starts, on a home the first of them filled.
    let warm_home = TempDir::new("home")?;
    let warm = interface_launch(&exe, &warm_home.0, &work.0);
    time_to_first_frame(&warm)?;
    let probe = crate::load::Probe::start();
    let mut samples = Vec::new();
    let mut floor = Vec::new();
    for _ in 0..first_frame_launches(&cx.plan) {
        // A new, empty home for every launch: every launch is a first
        // start. Each is followed by a later start, so both see the same
        // machine.
        let home = TempDir::new("fresh-home")?;
        let launch = interface_launch(&exe, &home.0, &work.0);
        samples.push(time_to_first_frame(&launch)?.as_nanos() as u64);
        floor.push(time_to_first_frame(&warm)?.as_nanos() as u64);
        // The built-ins the interface loads are used where they lie in the
        // binary: a start compiles, decompresses and caches none of them.
        let cached = compiled_components_under(&home.0);
        if !cached.is_empty() {
            return Err(GateError::new(format!(
                "a first start on a fresh SMITH_HOME wrote {} compiled component(s) into its cache ({}), but the built-in plugins the interface loads are embedded precompiled and used in place, never cached; check plugins/build.rs (it prints a warning when it cannot precompile for the target, and IN_PLACE says which built-ins lie in place) and `cargo test -p smith-plugins precompiled`",
                cached.len(),
                cached
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    cx.record_load(probe.finish());
    let mut measurement = first_frame_measurement(samples, Vec::new());
    floor.sort_unstable();
    measurement.floor = Some(quantile(&floor, 0.5));
    Ok(measurement)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> Launch {
        Launch {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: Vec::new(),
            env_remove: Vec::new(),
            marker: FIRST_FRAME_MARKER.to_vec(),
            timeout,
        }
    }

    #[test]
    fn the_first_frame_is_timed_from_spawn_to_its_marker() {
        let took = time_to_first_frame(&sh(
            "sleep 0.2; printf 'status · F1 help'; sleep 30",
            Duration::from_secs(10),
        ))
        .unwrap();
        assert!(took >= Duration::from_millis(200), "{took:?}");
        // The program was stopped right after: well before its 30 s sleep.
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn the_probe_is_answered_like_a_terminal_answers_it() {
        // Like the interface's probe: ask for the device attributes, draw
        // only once the reply arrives (raw mode so it is not echoed).
        let took = time_to_first_frame(&sh(
            "stty raw -echo; printf '\\033[c'; r=$(dd bs=1 count=9 2>/dev/null); \
             [ \"$r\" = \"$(printf '\\033[?62;22c')\" ] && printf 'F1 help'; sleep 30",
            Duration::from_secs(10),
        ))
        .unwrap();
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn a_program_that_draws_nothing_is_an_error_naming_its_output() {
        let err = time_to_first_frame(&sh(
            "printf 'no frame here'; sleep 30",
            Duration::from_millis(300),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("no frame here"), "{err}");
        assert!(err.to_string().contains("F1 help"), "{err}");
    }

    #[test]
    fn quick_launches_a_few_and_full_more() {
        assert_eq!(first_frame_launches(&crate::measure::Plan::QUICK), 5);
        assert!(first_frame_launches(&crate::measure::Plan::FULL) > 5);
    }

    #[test]
    fn the_tui_gates_run_with_the_issue_s_limits() {
        let find = crate::table::limits_of;
        assert_eq!(
            find("tui.frame_p99_1m"),
            Some(vec![Limit::AtMost(1_000_000.0)])
        );
        assert_eq!(
            find("tui.frame_scaling"),
            Some(vec![Limit::RatioAtMost(SCALING_RATIO)])
        );
        assert_eq!(
            find("tui.keystroke_frame"),
            Some(vec![
                Limit::AtMost(1_000_000.0),
                Limit::RatioAtMost(SCALING_RATIO)
            ])
        );
        assert_eq!(
            find("tui.steady_frame_allocations"),
            Some(vec![Limit::AtMost(0.0)])
        );
        assert_eq!(
            find("tui.waiting_question_frame_allocations"),
            Some(vec![Limit::AtMost(0.0)])
        );
        assert_eq!(
            find("tui.keystroke_frame_bytes"),
            Some(vec![Limit::AtMost(23.0)])
        );
        assert_eq!(
            find("tui.first_frame"),
            Some(vec![Limit::AtMost(100_000_000.0)])
        );
        assert_eq!(
            find("tui.first_frame_fresh_home"),
            Some(vec![
                Limit::AtMost(100_000_000.0),
                Limit::RatioAtMost(FRESH_HOME_RATIO)
            ])
        );
    }

    #[test]
    fn quantiles_pick_the_nearest_rank_below() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&s, 0.5), 50.0);
        assert_eq!(quantile(&s, 0.99), 99.0);
        assert_eq!(quantile(&s, 1.0), 100.0);
        assert!(quantile(&[], 0.5).is_nan());
    }
}
