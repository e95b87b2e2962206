//! Gates on the fullscreen interface (smith-tui).
//!
//! The workload is `smith_tui::bench_support::Screen`: an interface filled
//! with representative entries (user message, assistant answer, tool call,
//! notice, repeated), drawn on a 160 × 50 screen exactly as the terminal
//! loop draws it — prepare the layout, render into the cell buffer with the
//! frame's bump arena, diff against the previous frame into the output
//! buffer. The promise behind the gates: a frame costs the same at 10
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
//! - `tui.keystroke_frame_bytes`: the bytes one typed character makes the
//!   frame write to the terminal; deterministic, must not grow.

use std::hint::black_box;

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

/// Gates on the fullscreen interface.
pub const TUI: &[Gate] = &[
    Gate {
        name: "tui.frame_p99_1m",
        metric: "99th percentile CPU time of a steady frame (prepare, render, diff) with 1,000,000 entries, 160x50",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(FRAME_P99_BUDGET_NS)],
        floor: None,
        run: frame_p99,
    },
    Gate {
        name: "tui.frame_scaling",
        metric: "steady frame with 1,000,000 entries (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::RatioAtMost(SCALING_RATIO)],
        floor: Some("the same steady frame with 10 entries"),
        run: frame_scaling,
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
    },
    Gate {
        name: "tui.steady_frame_allocations",
        metric: "allocations per steady frame with 1,000,000 entries (exact count)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(0.0)],
        floor: None,
        run: steady_frame_allocations,
    },
    Gate {
        name: "tui.keystroke_frame_bytes",
        metric: "bytes written to the terminal by the frame after one typed character (exact, must not grow)",
        unit: Unit::Bytes,
        limits: &[Limit::AtMost(KEYSTROKE_FRAME_BYTES)],
        floor: None,
        run: keystroke_frame_bytes,
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

#[cfg(test)]
mod tests {
    use super::*;

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
            find("tui.keystroke_frame_bytes"),
            Some(vec![Limit::AtMost(23.0)])
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
