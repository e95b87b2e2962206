//! Gates on the sandbox (smith-sandbox, as the tools apply it).
//!
//! - `sandbox.setup`: what entering the sandbox adds to a command's spawn.
//!   `true` is spawned as `bash` spawns its shell (a `pre_exec` hook calling
//!   `setsid`), once unconfined and once confined by a policy like a
//!   runtime's (a project folder and a session temporary folder as write
//!   roots, the home secrets denied, the network off: the held empty network
//!   namespace joined and the Landlock domain entered between fork and
//!   exec), alternating, each waited for. Spawns are timed on the monotonic
//!   wall clock (the work happens in the child, which a thread CPU clock
//!   would not see), and the gate's figure is the fastest confined spawn
//!   minus the fastest unconfined one over all rounds, so a busy machine
//!   does not inflate it. At most 2 ms. The confinement is prepared once,
//!   before timing, as a runtime prepares it once.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use smith_engine::tools::sandbox::{Confinement, Mode, Network, Policy};

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::table::Context;

/// The goal for what a confined spawn adds over an unconfined one: 2 ms.
pub const SETUP_BUDGET_NS: f64 = 2_000_000.0;

/// Gates on the sandbox.
pub const SANDBOX: &[Gate] = &[Gate {
    name: "sandbox.setup",
    metric: "what entering the sandbox (network namespace joined, Landlock domain entered) adds to spawning `true` and waiting for it (fastest confined minus fastest unconfined spawn, wall clock)",
    unit: Unit::Nanoseconds,
    limits: &[Limit::AtMost(SETUP_BUDGET_NS)],
    floor: None,
    run: setup,
    cores: 1,
}];

/// Folders made for the measurement under the system temporary directory,
/// removed when dropped.
struct Folders {
    root: PathBuf,
}

impl Folders {
    fn new() -> Result<Folders, GateError> {
        let root = std::env::temp_dir().join(format!("smith-sandbox-gate-{}", std::process::id()));
        for sub in ["project", "tmp", "home"] {
            std::fs::create_dir_all(root.join(sub)).map_err(|e| {
                GateError::new(format!(
                    "cannot make the gate's folder {}: {e}; check the system temporary directory is writable",
                    root.join(sub).display()
                ))
            })?;
        }
        Ok(Folders { root })
    }
}

impl Drop for Folders {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn program() -> &'static str {
    if std::path::Path::new("/bin/true").is_file() {
        "/bin/true"
    } else {
        "true"
    }
}

/// Spawns `true` in its own session (as `bash` does), confined by
/// `confinement` when given, waits for it, and returns the wall time.
fn spawn(confinement: Option<&Confinement>) -> Result<Duration, String> {
    let mut cmd = Command::new(program());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: the hook calls only `setsid`, which is async-signal-safe,
        // and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    if let Some(c) = confinement {
        c.apply(&mut cmd);
    }
    let start = Instant::now();
    let status = cmd
        .spawn()
        .and_then(|mut child| child.wait())
        .map_err(|e| e.to_string())?;
    let took = start.elapsed();
    if !status.success() {
        return Err(format!("`true` ended with {status}"));
    }
    Ok(took)
}

fn setup(cx: &mut Context) -> Result<Measurement, GateError> {
    let folders = Folders::new()?;
    let policy = Policy::builder()
        .project_root(folders.root.join("project"))
        .session_temp(folders.root.join("tmp"))
        .home(folders.root.join("home"))
        .network(Network::Off)
        .build()
        .map_err(|d| GateError::new(format!("the gate's policy cannot be built: {}", d.what())))?;
    let confinement = Confinement::prepare(&policy, Mode::BestEffort).map_err(|d| {
        GateError::new(format!(
            "the sandbox cannot be prepared on this kernel: {}; {}",
            d.what(),
            d.why()
        ))
    })?;
    if !confinement.confines_filesystem() && !confinement.isolates_network() {
        return Err(GateError::new(
            "the kernel offers the sandbox no layer (no Landlock, no network namespace), so there is nothing to measure; run `smith sandbox` to see why",
        ));
    }
    let failed = |side: &str, e: String| {
        GateError::new(format!(
            "spawning `true` {side} failed: {e}; run `smith sandbox` and `cargo test -p smith-sandbox`"
        ))
    };
    for _ in 0..5 {
        spawn(None).map_err(|e| failed("unconfined", e))?;
        spawn(Some(&confinement)).map_err(|e| failed("confined", e))?;
    }
    let rounds = cx.plan.samples.max(1);
    let probe = crate::load::Probe::start();
    let mut plain = Duration::MAX;
    let mut confined = Duration::MAX;
    for round in 0..rounds {
        // Alternate which goes first, so neither always follows the other.
        let (a, b) = if round % 2 == 0 {
            let a = spawn(None).map_err(|e| failed("unconfined", e))?;
            let b = spawn(Some(&confinement)).map_err(|e| failed("confined", e))?;
            (a, b)
        } else {
            let b = spawn(Some(&confinement)).map_err(|e| failed("confined", e))?;
            let a = spawn(None).map_err(|e| failed("unconfined", e))?;
            (a, b)
        };
        plain = plain.min(a);
        confined = confined.min(b);
    }
    cx.record_load(probe.finish());
    let plain_ns = plain.as_nanos() as f64;
    let confined_ns = confined.as_nanos() as f64;
    Ok(Measurement {
        median: (confined_ns - plain_ns).max(0.0),
        floor: None,
        samples: rounds,
        notes: vec![
            Note {
                name: "unconfined_spawn_ns",
                value: plain_ns,
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "confined_spawn_ns",
                value: confined_ns,
                unit: Unit::Nanoseconds,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_gate_runs_with_its_limit() {
        assert_eq!(
            crate::table::limits_of("sandbox.setup"),
            Some(vec![Limit::AtMost(2_000_000.0)])
        );
    }

    #[test]
    fn the_gate_measures_a_confined_spawn() {
        let mut cx = Context::new(crate::measure::Plan {
            samples: 3,
            ..crate::measure::Plan::QUICK
        });
        let m = setup(&mut cx).expect("the gate runs on this kernel");
        assert_eq!(m.samples, 3);
        assert!(m.median >= 0.0 && m.median.is_finite());
        assert!(m.notes.iter().all(|n| n.value > 0.0));
    }
}
