//! Timing: batched samples, interleaved with a floor, reduced to medians.
//!
//! A gate on a shared 2-core machine must not flip because a compiler ran
//! for a second in the background. Three habits keep the numbers stable:
//!
//! 1. **Batching.** One sample runs the measured operation as many times as
//!    it takes to fill [`Plan::sample_target`] (calibrated once, after a
//!    warm-up), so timer resolution and call overhead vanish.
//! 2. **Interleaving.** The subject and its floor are sampled in alternation
//!    (floor, subject, subject, floor, ...), so a burst of machine noise hits
//!    both sides alike and the ratio between them survives it.
//! 3. **Medians.** A gate compares the median sample, which ignores the
//!    slowest (and fastest) outliers entirely.
//! 4. **Thread CPU time.** On Unix a sample is timed with the thread's CPU
//!    clock (`CLOCK_THREAD_CPUTIME_ID`), so time spent waiting for a core
//!    while other processes run is not counted; cache and memory stalls
//!    still are. Elsewhere the monotonic wall clock is used. [`CLOCK`]
//!    names the clock in reports.
//! 5. **A canary between samples.** After each sample (each pair of them
//!    in [`paired`]) a fixed integer kernel runs and is timed on the same
//!    clock ([`crate::load::canary_sample`]), so the report can tell a
//!    round measured on a core shared with someone else's work, which the
//!    CPU clock cannot see, from a slow program.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// The clock samples are timed with (see the module docs).
#[cfg(unix)]
pub const CLOCK: &str = "thread_cpu";
/// The clock samples are timed with (see the module docs).
#[cfg(not(unix))]
pub const CLOCK: &str = "monotonic_wall";

/// A reading of [`CLOCK`].
#[derive(Debug, Clone, Copy)]
struct Stamp(Duration);

impl Stamp {
    #[cfg(unix)]
    fn now() -> Stamp {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the clock id is a
        // constant every supported Unix defines for the calling thread.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc != 0 {
            // Cannot happen for this clock id on a supported system; fall
            // back to the wall clock rather than report a zero time.
            return Stamp(wall_epoch().elapsed());
        }
        Stamp(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    #[cfg(not(unix))]
    fn now() -> Stamp {
        Stamp(wall_epoch().elapsed())
    }

    fn elapsed(self) -> Duration {
        Stamp::now().0.saturating_sub(self.0)
    }
}

fn wall_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// How much measuring to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// A short name for reports (`"full"` or `"quick"`).
    pub name: &'static str,
    /// Time spent running each measured operation before sampling.
    pub warmup: Duration,
    /// Samples taken of each side; odd, so the median is one sample.
    pub samples: usize,
    /// Minimum wall time of one sample; sets the batch size.
    pub sample_target: Duration,
}

impl Plan {
    /// The default: enough samples for stable medians on a busy machine.
    pub const FULL: Plan = Plan {
        name: "full",
        warmup: Duration::from_millis(300),
        samples: 101,
        sample_target: Duration::from_millis(2),
    };

    /// For CI: fewer and shorter samples, still a real measurement.
    pub const QUICK: Plan = Plan {
        name: "quick",
        warmup: Duration::from_millis(60),
        samples: 21,
        sample_target: Duration::from_millis(1),
    };

    /// Every gate runs, over small fixtures (session files divided by
    /// 1,024, trees by 100), with three short samples: checks in seconds
    /// that each gate runs and reports. Its figures say nothing about
    /// smith's speed, and its verdict only whether each gate met its
    /// limits at that size.
    pub const SMOKE: Plan = Plan {
        name: "smoke",
        warmup: Duration::from_millis(5),
        samples: 3,
        sample_target: Duration::from_millis(1),
    };
}

/// The reduced samples of one measured operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Median time of one operation, in nanoseconds.
    pub median_ns: f64,
    /// Fastest sample, per operation, in nanoseconds.
    pub min_ns: f64,
    /// Slowest sample, per operation, in nanoseconds.
    pub max_ns: f64,
    /// Operations per sample (the calibrated batch size).
    pub batch: u64,
    /// Number of samples.
    pub samples: usize,
}

impl Timing {
    /// Reduces per-operation sample times (ns) to a [`Timing`].
    ///
    /// Returns `None` for an empty sample list.
    pub fn from_samples(mut per_op_ns: Vec<f64>, batch: u64) -> Option<Timing> {
        if per_op_ns.is_empty() {
            return None;
        }
        per_op_ns.sort_by(f64::total_cmp);
        let n = per_op_ns.len();
        let median_ns = if n % 2 == 1 {
            per_op_ns[n / 2]
        } else {
            (per_op_ns[n / 2 - 1] + per_op_ns[n / 2]) / 2.0
        };
        Some(Timing {
            median_ns,
            min_ns: per_op_ns[0],
            max_ns: per_op_ns[n - 1],
            batch,
            samples: n,
        })
    }
}

/// Times one call of `op` on [`CLOCK`], in nanoseconds.
pub fn timed_ns(op: impl FnOnce()) -> f64 {
    let start = Stamp::now();
    op();
    start.elapsed().as_nanos() as f64
}

/// Runs `op` `batch` times and returns the elapsed time.
fn run_batch<F: FnMut()>(op: &mut F, batch: u64) -> Duration {
    let start = Stamp::now();
    for _ in 0..batch {
        op();
    }
    black_box(start.elapsed())
}

/// Warms `op` up for `warmup`, then doubles the batch until one batch takes
/// at least `target`. Returns the batch size.
fn calibrate<F: FnMut()>(op: &mut F, warmup: Duration, target: Duration) -> u64 {
    let start = Stamp::now();
    while start.elapsed() < warmup {
        op();
    }
    let mut batch: u64 = 1;
    loop {
        let took = run_batch(op, batch);
        if took >= target || batch >= 1 << 40 {
            // Scale to the target from the last measurement so the batch
            // is not up to 2x larger than needed.
            let per_op = took.as_secs_f64() / batch as f64;
            let scaled = (target.as_secs_f64() / per_op.max(1e-12)).ceil() as u64;
            return scaled.clamp(1, batch.max(1));
        }
        batch *= 2;
    }
}

/// Measures `subject` and `floor` side by side, interleaving their samples.
///
/// Returns `(subject, floor)` timings per operation.
pub fn paired<S: FnMut(), F: FnMut()>(
    plan: &Plan,
    mut subject: S,
    mut floor: F,
) -> (Timing, Timing) {
    let half = plan.warmup / 2;
    let floor_batch = calibrate(&mut floor, half, plan.sample_target);
    let subject_batch = calibrate(&mut subject, half, plan.sample_target);
    let n = plan.samples.max(1);
    let mut subject_samples = Vec::with_capacity(n);
    let mut floor_samples = Vec::with_capacity(n);
    for round in 0..n {
        // Alternate which side goes first so neither always runs right
        // after the other has warmed (or evicted) the caches.
        if round % 2 == 0 {
            floor_samples.push(per_op_ns(run_batch(&mut floor, floor_batch), floor_batch));
            subject_samples.push(per_op_ns(
                run_batch(&mut subject, subject_batch),
                subject_batch,
            ));
        } else {
            subject_samples.push(per_op_ns(
                run_batch(&mut subject, subject_batch),
                subject_batch,
            ));
            floor_samples.push(per_op_ns(run_batch(&mut floor, floor_batch), floor_batch));
        }
        crate::load::canary_sample();
    }
    (
        reduce(subject_samples, subject_batch, plan),
        reduce(floor_samples, floor_batch, plan),
    )
}

/// Measures one operation alone.
pub fn single<S: FnMut()>(plan: &Plan, mut subject: S) -> Timing {
    let batch = calibrate(&mut subject, plan.warmup, plan.sample_target);
    let samples = (0..plan.samples.max(1))
        .map(|_| {
            let ns = per_op_ns(run_batch(&mut subject, batch), batch);
            crate::load::canary_sample();
            ns
        })
        .collect();
    reduce(samples, batch, plan)
}

fn per_op_ns(took: Duration, batch: u64) -> f64 {
    took.as_nanos() as f64 / batch as f64
}

fn reduce(samples: Vec<f64>, batch: u64, plan: &Plan) -> Timing {
    // Callers take at least one sample (`plan.samples.max(1)`), so the
    // fallback is never used; it keeps this total without a panic path.
    Timing::from_samples(samples, batch).unwrap_or(Timing {
        median_ns: f64::NAN,
        min_ns: f64::NAN,
        max_ns: f64::NAN,
        batch,
        samples: plan.samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_sample_counts() {
        let t = Timing::from_samples(vec![5.0, 1.0, 3.0], 10).unwrap();
        assert_eq!(
            (t.median_ns, t.min_ns, t.max_ns, t.batch, t.samples),
            (3.0, 1.0, 5.0, 10, 3)
        );
        let t = Timing::from_samples(vec![4.0, 1.0, 3.0, 2.0], 1).unwrap();
        assert_eq!(t.median_ns, 2.5);
        assert_eq!(Timing::from_samples(Vec::new(), 1), None);
    }

    #[test]
    fn median_ignores_one_huge_outlier() {
        let t = Timing::from_samples(vec![10.0, 11.0, 10.5, 1e9, 10.2], 1).unwrap();
        assert_eq!(t.median_ns, 10.5);
    }

    #[test]
    fn paired_takes_the_planned_number_of_samples() {
        let plan = Plan {
            name: "test",
            warmup: Duration::from_millis(2),
            samples: 5,
            sample_target: Duration::from_micros(200),
        };
        let mut subject_runs = 0u64;
        let mut floor_runs = 0u64;
        let (s, f) = paired(&plan, || subject_runs += 1, || floor_runs += 1);
        assert_eq!((s.samples, f.samples), (5, 5));
        assert!(s.batch >= 1 && f.batch >= 1);
        assert!(subject_runs >= 5 * s.batch);
        assert!(floor_runs >= 5 * f.batch);
        assert!(s.median_ns.is_finite() && f.median_ns.is_finite());
    }
}
