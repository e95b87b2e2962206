//! Gates on what a flooding plugin costs a run, through the binary as a
//! user runs it: `smith eval` of one mock turn with test/lifecycle (the
//! test guest, embedded for these gates) installed with the `ui`
//! capability, in a `SMITH_HOME` of its own under the system temporary
//! directory (removed afterwards). Each run is timed on its CPU clock (the
//! user and system time of the process and its threads, from `wait4`), the
//! runs of the two sides alternating; the gates compare medians.
//!
//! A flood is measured against its capped twin: the same plugin sending
//! what its caps per run admit (the default 500 notices and 1000 log
//! lines), which a plugin may send and which costs what it costs. The
//! limit holds the rest, the 99.5 % of the flood over the caps, to at most
//! a tenth of the run.
//!
//! - `plugins.flood_run`: a run whose plugin writes 100,000 log lines and
//!   returns 100,000 notices from one handler, against the same run whose
//!   plugin writes 1000 and returns 500; at most 1.10x. The log lines over
//!   the cap are counted in `host.log` from their pointer and length, and
//!   the call is stopped once it dropped as many as a run keeps.
//! - `plugins.flood_notices`: a run whose plugin returns 100,000 notices
//!   from one handler, against the same run whose plugin makes the same
//!   100,000 and lays them out in its memory as returning them would (the
//!   canonical ABI's list, which the plugin's own bindings write and free:
//!   its own work, which no cap can take away) and returns the 500 the cap
//!   admits; at most 1.10x. The notices over the cap are counted from
//!   their tags, never copied out of the plugin.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::table::Context;

/// The issue's goal: a flooding plugin slows the run by at most 10 %.
pub const FLOOD_RATIO: f64 = 1.10;

/// Runs of each side with the quick plan (more with the full plan).
pub const FLOOD_RUNS_QUICK: usize = 9;

/// Gates on flooding plugins.
pub const FLOOD: &[Gate] = &[
    Gate {
        name: "plugins.flood_run",
        metric: "CPU time of a one-turn eval whose plugin sends 100,000 log lines and 100,000 notices from one handler (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::RatioAtMost(FLOOD_RATIO)],
        floor: Some(
            "the same run with the plugin sending what its caps admit (1000 log lines, 500 notices)",
        ),
        run: flood_run,
        cores: 1,
    },
    Gate {
        name: "plugins.flood_notices",
        metric: "CPU time of a one-turn eval whose plugin returns 100,000 notices from one handler (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::RatioAtMost(FLOOD_RATIO)],
        floor: Some(
            "the same run with the plugin making the same notices, laying them out as returning them would, and returning the 500 its cap admits",
        ),
        run: flood_notices,
        cores: 1,
    },
];

/// A `SMITH_HOME` with test/lifecycle installed and a one-turn mock
/// script; removed when dropped.
struct Fixture {
    home: PathBuf,
    exe: PathBuf,
    script: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

impl Fixture {
    fn new() -> Result<Fixture, GateError> {
        let exe = crate::smith_exe("the flood gates run `smith eval` as")?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let home =
            std::env::temp_dir().join(format!("smith-bench-flood-{}-{nanos}", std::process::id()));
        let fixture = Fixture {
            script: home.join("script.json"),
            home,
            exe,
        };
        let source = fixture.home.join("lifecycle");
        let io = |what: &str, path: &Path, e: std::io::Error| {
            GateError::new(format!("could not write {what} {}: {e}", path.display()))
        };
        std::fs::create_dir_all(&source).map_err(|e| io("the folder", &source, e))?;
        let manifest = source.join("plugin.kdl");
        std::fs::write(
            &manifest,
            "name \"test/lifecycle\"\nversion \"0.1.0\"\ndescription \"A flooding test guest\"\napi 1\nworld \"extension\"\ncapabilities {\n    ui\n}\n",
        )
        .map_err(|e| io("the manifest", &manifest, e))?;
        let wasm = source.join("plugin.wasm");
        let component = smith_plugins::builtin::TEST_LIFECYCLE
            .bytes()
            .map_err(GateError::new)?;
        std::fs::write(&wasm, component).map_err(|e| io("the component", &wasm, e))?;
        std::fs::write(
            &fixture.script,
            r#"[[{"text": "done"}, {"stop": {"reason": "end"}}]]"#,
        )
        .map_err(|e| io("the mock script", &fixture.script, e))?;
        fixture.smith([
            OsStr::new("plugin"),
            OsStr::new("install"),
            source.as_os_str(),
        ])?;
        Ok(fixture)
    }

    /// Runs smith with `args` in the fixture's home: its CPU time in
    /// nanoseconds (an error unless it exits 0).
    fn smith<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&self, args: I) -> Result<u64, GateError> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args)
            .env("SMITH_HOME", &self.home)
            .env("NO_COLOR", "1")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("SMITH_LOG_FILE")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd
            .spawn()
            .map_err(|e| GateError::new(format!("could not start {}: {e}", self.exe.display())))?;
        let (status, cpu) = wait_cpu(child)?;
        if status != 0 {
            return Err(GateError::new(format!(
                "`smith` in the flood fixture {} exited with {status}; run `cargo test --test plugin_limits`",
                self.home.display()
            )));
        }
        Ok(cpu)
    }

    /// One `smith eval` of the mock turn with `prompt`, recorded in a new
    /// session as a user's is.
    fn eval(&self, prompt: &str) -> Result<u64, GateError> {
        self.smith([
            OsStr::new("eval"),
            OsStr::new("--mock-script"),
            self.script.as_os_str(),
            OsStr::new(prompt),
        ])
    }
}

/// Waits for `child`: its exit code (128 plus the signal's number when a
/// signal ended it) and the CPU time it and its threads used.
#[cfg(unix)]
pub(crate) fn wait_cpu(child: std::process::Child) -> Result<(i32, u64), GateError> {
    let pid = i32::try_from(child.id())
        .map_err(|_| GateError::new("a child's process id does not fit a pid_t"))?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child, writing into locals.
        let done = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
        if done == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(GateError::new(format!("waiting for smith failed: {err}")));
        }
    }
    // Reaped here: the Child must not wait again.
    std::mem::forget(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    let nanos = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec).unwrap_or(0) * 1_000
    };
    Ok((code, nanos(usage.ru_utime) + nanos(usage.ru_stime)))
}

#[cfg(not(unix))]
pub(crate) fn wait_cpu(mut child: std::process::Child) -> Result<(i32, u64), GateError> {
    let _ = child.wait();
    Err(GateError::new(
        "the flood gates need a child's CPU time, which this platform's gate runner does not read",
    ))
}

/// Runs of each side for `cx`'s plan (odd).
fn runs(cx: &Context) -> usize {
    if cx.plan.name == "quick" {
        FLOOD_RUNS_QUICK
    } else {
        (cx.plan.samples | 1).clamp(3, 21)
    }
}

/// The two sides' runs alternating (one of each first, unmeasured, to
/// warm the compiled-component cache): their medians and spreads.
fn compare(cx: &Context, subject: &str, floor: &str) -> Result<Measurement, GateError> {
    let fixture = Fixture::new()?;
    fixture.eval(floor)?;
    fixture.eval(subject)?;
    let mut subjects = Vec::new();
    let mut floors = Vec::new();
    for _ in 0..runs(cx) {
        floors.push(fixture.eval(floor)?);
        subjects.push(fixture.eval(subject)?);
    }
    subjects.sort_unstable();
    floors.sort_unstable();
    let median = |v: &[u64]| v[v.len() / 2] as f64;
    Ok(Measurement {
        median: median(&subjects),
        floor: Some(median(&floors)),
        samples: subjects.len(),
        notes: vec![
            Note {
                name: "min",
                value: subjects[0] as f64,
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "max",
                value: subjects[subjects.len() - 1] as f64,
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "floor_min",
                value: floors[0] as f64,
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "floor_max",
                value: floors[floors.len() - 1] as f64,
                unit: Unit::Nanoseconds,
            },
        ],
    })
}

fn flood_run(cx: &mut Context) -> Result<Measurement, GateError> {
    compare(cx, "flood the host", "capped flood")
}

fn flood_notices(cx: &mut Context) -> Result<Measurement, GateError> {
    compare(cx, "flood notices", "dry flood")
}
