//! What else the machine ran while a gate measured: the CPU time other
//! processes used over the measurement, and the load average.
//!
//! Most gates time one thread with its own CPU clock, so a neighbour that
//! takes a core only delays them. A gate timed on the wall clock while
//! more than one thread or process of its own runs at once (the
//! two-thread session load, the interface started in a pseudo-terminal)
//! needs those cores free: on a 2-core machine one busy neighbour is
//! enough to make it measure the neighbour. Such a gate declares it
//! ([`crate::Gate::cores`]) and the report prints the machine's load
//! beside its figure, so a failure can be read for what it is.
//!
//! On Linux a [`Probe`] reads `/proc/stat` (busy time of every CPU: user,
//! nice, system, irq, softirq and steal) and `/proc/self/stat` (this
//! process's own CPU time and that of its reaped children) when the
//! measurement starts and when it ends; the difference is the CPU time of
//! everything else, divided by the wall time to give busy cores.
//! `/proc/loadavg` gives the 1-minute load average at the end. Elsewhere a
//! probe reports nothing.
//!
//! A neighbour can also slow a measurement without taking any CPU time
//! this machine can see: a virtual machine's core may be one hardware
//! thread of a physical core whose other thread runs someone else's work,
//! which halves the instructions the measured code gets per cycle and
//! shares its caches. So every timed gate also runs a *canary* between its
//! samples ([`canary_sample`]): a fixed integer kernel of independent
//! chains, timed on the thread's CPU clock like the samples. Its fastest
//! time in the run is what the core does alone; a round whose canary ran
//! slower than [`CONTENDED_BELOW`] of that speed (its median against the
//! run's best) measured a shared core, and the report says so beside the
//! figure ([`Load::core_speed`]).

use std::time::Instant;

/// The load on the machine over one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// CPU time used by other processes (and stolen by the hypervisor)
    /// over the measurement, divided by its wall time: how many cores
    /// the neighbours kept busy on average.
    pub others_busy_cores: f64,
    /// Online CPUs.
    pub cpus: usize,
    /// The 1-minute load average when the measurement ended.
    pub loadavg_1m: f64,
    /// Wall time of the measurement, in seconds.
    pub seconds: f64,
    /// The core's speed over the measurement as a fraction of its best in
    /// this run (the canary's fastest time over its median time during the
    /// measurement), where the canary ran.
    pub core_speed: Option<f64>,
}

impl Load {
    /// Cores left for the measurement on average: `cpus` less what the
    /// neighbours used, never below 0.
    pub fn free_cores(&self) -> f64 {
        (self.cpus as f64 - self.others_busy_cores).max(0.0)
    }

    /// One phrase for people: `others busy 0.05 of 2 cores, load average
    /// 0.42`, and `, core at 0.97 of its best speed` where the canary ran.
    pub fn human(&self) -> String {
        let mut text = format!(
            "others busy {:.2} of {} cores, load average {:.2}",
            self.others_busy_cores, self.cpus, self.loadavg_1m
        );
        if let Some(speed) = self.core_speed {
            text.push_str(&format!(", core at {speed:.2} of its best speed"));
        }
        text
    }

    /// True when the canary says the core ran below [`CONTENDED_BELOW`] of
    /// its best speed during the measurement.
    pub fn contended(&self) -> bool {
        self.core_speed.is_some_and(|s| s < CONTENDED_BELOW)
    }
}

/// A round whose core ran below this fraction of its best speed measured a
/// shared core (see the module docs).
pub const CONTENDED_BELOW: f64 = 0.8;

/// Iterations of the canary's kernel: about 0.1 ms on a current core.
const CANARY_ITERATIONS: u64 = 40_000;

/// The canary's kernel: eight independent chains of integer additions,
/// shifts and exclusive ors, enough parallel work to fill a core's integer
/// units, so it slows as soon as another hardware thread shares them. No
/// memory beyond registers, so it does not disturb the caches the measured
/// code warmed.
#[inline(never)]
fn canary_kernel(iterations: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
    let (mut e, mut f, mut g, mut h) = (5u64, 6u64, 7u64, 8u64);
    for i in 0..iterations {
        a = a.wrapping_add(i) ^ (b >> 3);
        b = b.wrapping_add(a) ^ (c << 5);
        c = c.wrapping_add(i) ^ (d >> 7);
        d = d.wrapping_add(c) ^ (e << 1);
        e = e.wrapping_add(i) ^ (f >> 2);
        f = f.wrapping_add(e) ^ (g << 3);
        g = g.wrapping_add(i) ^ (h >> 5);
        h = h.wrapping_add(g) ^ (a << 7);
    }
    a ^ b ^ c ^ d ^ e ^ f ^ g ^ h
}

thread_local! {
    static CANARY: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs the canary once and records its time (ns, on the same clock as the
/// samples) for [`take_canary_samples`].
pub fn canary_sample() {
    let ns = crate::measure::timed_ns(|| {
        std::hint::black_box(canary_kernel(std::hint::black_box(CANARY_ITERATIONS)));
    });
    CANARY.with(|c| c.borrow_mut().push(ns));
}

/// The canary times recorded on this thread since the last call, oldest
/// first.
pub fn take_canary_samples() -> Vec<f64> {
    CANARY.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

/// The run's best canary time and the core speeds it gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoreSpeed {
    best_ns: Option<f64>,
}

impl CoreSpeed {
    /// A tracker with no canary seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in a measurement's canary times and returns the core's speed
    /// over it: the best time seen in the run (these included) over their
    /// median. `None` without samples.
    pub fn observe(&mut self, samples: &[f64]) -> Option<f64> {
        let mut sorted: Vec<f64> = samples
            .iter()
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let fastest = sorted[0];
        let median = sorted[sorted.len() / 2];
        let best = self.best_ns.map_or(fastest, |b| b.min(fastest));
        self.best_ns = Some(best);
        Some((best / median).min(1.0))
    }
}

/// A load measurement in progress; [`Probe::finish`] ends it.
#[derive(Debug)]
pub struct Probe {
    start: Option<Snapshot>,
}

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    wall: Instant,
    /// Busy ticks of all CPUs together.
    busy: u64,
    /// This process's own ticks, its reaped children's included.
    own: u64,
}

impl Probe {
    /// Starts measuring the machine's load.
    pub fn start() -> Probe {
        Probe { start: snapshot() }
    }

    /// The load since [`Probe::start`], or `None` where it cannot be read
    /// (not Linux, `/proc` not mounted).
    pub fn finish(self) -> Option<Load> {
        let start = self.start?;
        let end = snapshot()?;
        let (cpus, loadavg_1m) = (cpu_count()?, loadavg()?);
        let seconds = end.wall.duration_since(start.wall).as_secs_f64();
        Some(load_between(
            (start.busy, start.own),
            (end.busy, end.own),
            seconds,
            ticks_per_second()?,
            cpus,
            loadavg_1m,
        ))
    }
}

/// The load from two readings of (all CPUs' busy ticks, own ticks) taken
/// `seconds` apart: the others' ticks per second of wall time, in cores.
pub fn load_between(
    start: (u64, u64),
    end: (u64, u64),
    seconds: f64,
    ticks_per_second: f64,
    cpus: usize,
    loadavg_1m: f64,
) -> Load {
    let busy = end.0.saturating_sub(start.0);
    let own = end.1.saturating_sub(start.1);
    let others = busy.saturating_sub(own) as f64;
    let others_busy_cores = if seconds > 0.0 && ticks_per_second > 0.0 {
        (others / ticks_per_second / seconds).min(cpus as f64)
    } else {
        0.0
    };
    Load {
        others_busy_cores,
        cpus,
        loadavg_1m,
        seconds,
        core_speed: None,
    }
}

/// Parses the first (`cpu`) line of `/proc/stat` into busy ticks: user,
/// nice, system, irq, softirq and steal (guest time is already in user).
pub fn busy_ticks(proc_stat: &str) -> Option<u64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    Some(at(0) + at(1) + at(2) + at(5) + at(6) + at(7))
}

/// Parses `/proc/self/stat` into this process's CPU ticks: utime, stime,
/// cutime and cstime (fields 14 to 17, counted after the command name,
/// which may itself hold spaces and parentheses).
pub fn own_ticks(self_stat: &str) -> Option<u64> {
    let after = &self_stat[self_stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is the first; utime is field 14.
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |field: usize| fields.get(field - 3)?.parse::<i64>().ok();
    let sum = tick(14)? + tick(15)? + tick(16)? + tick(17)?;
    u64::try_from(sum).ok()
}

#[cfg(target_os = "linux")]
fn snapshot() -> Option<Snapshot> {
    let wall = Instant::now();
    let busy = busy_ticks(&std::fs::read_to_string("/proc/stat").ok()?)?;
    let own = own_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    Some(Snapshot { wall, busy, own })
}

#[cfg(not(target_os = "linux"))]
fn snapshot() -> Option<Snapshot> {
    None
}

#[cfg(target_os = "linux")]
fn cpu_count() -> Option<usize> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let n = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    (n > 0).then_some(n)
}

#[cfg(not(target_os = "linux"))]
fn cpu_count() -> Option<usize> {
    None
}

#[cfg(target_os = "linux")]
fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn loadavg() -> Option<f64> {
    None
}

#[cfg(target_os = "linux")]
fn ticks_per_second() -> Option<f64> {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as f64)
}

#[cfg(not(target_os = "linux"))]
fn ticks_per_second() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_ticks_count_everything_but_idle_and_iowait() {
        let stat = "cpu  100 2 30 5000 40 5 6 7 0 0\ncpu0 50 1 15 2500 20 2 3 3 0 0\n";
        assert_eq!(busy_ticks(stat), Some(100 + 2 + 30 + 5 + 6 + 7));
        assert_eq!(busy_ticks("intr 1 2 3\n"), None);
    }

    #[test]
    fn own_ticks_survive_a_command_name_with_spaces() {
        let stat = "4242 (smith (x) y) R 1 4242 4242 0 -1 4194304 100 0 0 0 \
                    11 22 3 4 20 0 3 0 100 1000 200 0 0 0";
        assert_eq!(own_ticks(stat), Some(11 + 22 + 3 + 4));
        assert_eq!(own_ticks("no parenthesis"), None);
    }

    #[test]
    fn others_busy_cores_exclude_this_process() {
        // 2 s, 100 ticks/s: 300 busy ticks of which 100 are ours -> 1 core.
        let l = load_between((1000, 50), (1300, 150), 2.0, 100.0, 2, 1.5);
        assert!((l.others_busy_cores - 1.0).abs() < 1e-9, "{l:?}");
        assert!((l.free_cores() - 1.0).abs() < 1e-9);
        assert_eq!(l.human(), "others busy 1.00 of 2 cores, load average 1.50");
        // Counters never run backwards into a negative load.
        let idle = load_between((1000, 50), (1000, 80), 1.0, 100.0, 2, 0.0);
        assert_eq!(idle.others_busy_cores, 0.0);
        assert_eq!(idle.free_cores(), 2.0);
    }

    #[test]
    fn core_speed_is_the_best_canary_over_the_median() {
        let mut speed = CoreSpeed::new();
        assert_eq!(speed.observe(&[]), None);
        // The first measurement sets the best: 100 over a median of 110.
        let s = speed.observe(&[100.0, 110.0, 120.0]).unwrap();
        assert!((s - 100.0 / 110.0).abs() < 1e-12, "{s}");
        // A shared core: the median doubles against the run's best.
        let s = speed.observe(&[190.0, 200.0, 210.0]).unwrap();
        assert!((s - 0.5).abs() < 1e-12, "{s}");
        let mut l = load_between((0, 0), (0, 0), 1.0, 100.0, 2, 0.5);
        l.core_speed = Some(s);
        assert!(l.contended());
        assert_eq!(
            l.human(),
            "others busy 0.00 of 2 cores, load average 0.50, core at 0.50 of its best speed"
        );
        // A faster canary later becomes the best; speed never exceeds 1.
        assert_eq!(speed.observe(&[50.0]), Some(1.0));
        l.core_speed = Some(0.9);
        assert!(!l.contended());
    }

    #[test]
    fn the_canary_records_a_time_per_sample() {
        let _ = take_canary_samples();
        canary_sample();
        canary_sample();
        let t = take_canary_samples();
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|ns| *ns > 0.0 && ns.is_finite()), "{t:?}");
        assert!(take_canary_samples().is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_probe_reads_this_machine() {
        let probe = Probe::start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let load = probe.finish().expect("/proc is readable on Linux");
        assert!(load.cpus >= 1);
        assert!(load.others_busy_cores >= 0.0 && load.others_busy_cores <= load.cpus as f64);
        assert!(load.seconds > 0.0);
    }
}
