//! Gates on the plugin host (smith-plugins), with the issue's goals as
//! limits.
//!
//! The workload is the two built-in plugins as embedded in the binary
//! (smith/mock, the larger component, and smith/product), loaded through a
//! compiled-component cache that the runner warms first in a directory of
//! its own under the system temporary directory (removed afterwards):
//!
//! - `plugins.load_builtin_warm`: loading smith/mock from the warm cache
//!   (the cached artifact deserialized, the linker's pre-instance built); at
//!   most 1 ms. smith/product's median is reported beside it.
//! - `plugins.event_dispatch`: one lifecycle event (a streamed message
//!   piece) into smith/product's handler and its result back; at most 5 µs.
//! - `plugins.reload`: a reload of smith/product (warm-cache load, a fresh
//!   instance, its contributions read); at most 4 ms.
//! - `plugins.warm_start_compiles`: components compiled while both built-ins
//!   load from the warm cache; exactly 0 (startup never compiles a component
//!   that is in the cache).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use smith_plugins::builtin::{MOCK, PRODUCT};
use smith_plugins::extension::LifecycleEvent;
use smith_plugins::{
    ExtensionComponent, Limits, PluginError, ProviderComponent, compile_count_on_this_thread,
};

use crate::gate::{Gate, GateError, Limit, Measurement, Note, Unit};
use crate::measure;
use crate::table::Context;

/// The issue's goal for loading a built-in from the warm cache: 1 ms.
pub const LOAD_BUDGET_NS: f64 = 1_000_000.0;
/// The issue's goal for an event dispatch round trip: 5 µs.
pub const DISPATCH_BUDGET_NS: f64 = 5_000.0;
/// The issue's goal for a reload: 4 ms.
pub const RELOAD_BUDGET_NS: f64 = 4_000_000.0;

/// Gates on the plugin host.
pub const PLUGINS: &[Gate] = &[
    Gate {
        name: "plugins.load_builtin_warm",
        metric: "load smith/mock (the larger built-in) from the warm compiled-component cache (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(LOAD_BUDGET_NS)],
        floor: None,
        run: load_builtin_warm,
        cores: 1,
    },
    Gate {
        name: "plugins.event_dispatch",
        metric: "one lifecycle event through smith/product's handler and back (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(DISPATCH_BUDGET_NS)],
        floor: None,
        run: event_dispatch,
        cores: 1,
    },
    Gate {
        name: "plugins.reload",
        metric: "reload smith/product: warm-cache load, fresh instance, contributions (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(RELOAD_BUDGET_NS)],
        floor: None,
        run: reload,
        cores: 1,
    },
    Gate {
        name: "plugins.warm_start_compiles",
        metric: "components compiled while both built-ins load from the warm cache (exact count)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(0.0)],
        floor: None,
        run: warm_start_compiles,
        cores: 1,
    },
];

/// A compiled-component cache directory of this run, removed on drop.
struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// A fresh cache with both built-ins compiled into it.
    fn warm() -> Result<Cache, GateError> {
        let dir = std::env::temp_dir().join(format!(
            "smith-bench-plugin-cache-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let cache = Cache { dir };
        load_mock(&cache.dir)?;
        load_product(&cache.dir)?;
        Ok(cache)
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn failed(err: &PluginError) -> GateError {
    GateError::new(format!(
        "the plugin host failed: {err}; run `cargo test -p smith-plugins` to see why the built-ins do not load"
    ))
}

fn load_mock(dir: &Path) -> Result<ProviderComponent, GateError> {
    ProviderComponent::load("smith/mock", MOCK, Some(dir), Limits::default())
        .map_err(|e| failed(&e))
}

fn load_product(dir: &Path) -> Result<ExtensionComponent, GateError> {
    ExtensionComponent::load("smith/product", PRODUCT, Some(dir), Limits::default())
        .map_err(|e| failed(&e))
}

fn load_builtin_warm(cx: &mut Context) -> Result<Measurement, GateError> {
    let cache = Cache::warm()?;
    // Every load succeeded once while warming; a failure inside the timed
    // loop is counted and fails the gate afterwards.
    let mut failures = 0usize;
    let mock = measure::single(&cx.plan, || match load_mock(&cache.dir) {
        Ok(component) => drop(black_box(component)),
        Err(_) => failures += 1,
    });
    let product = measure::single(&cx.plan, || match load_product(&cache.dir) {
        Ok(component) => drop(black_box(component)),
        Err(_) => failures += 1,
    });
    if failures > 0 {
        return Err(GateError::new(format!(
            "{failures} warm-cache load(s) failed while measuring; run `cargo test -p smith-plugins`"
        )));
    }
    Ok(Measurement {
        median: mock.median_ns,
        floor: None,
        samples: mock.samples,
        notes: vec![Note {
            name: "product_load",
            value: product.median_ns,
            unit: Unit::Nanoseconds,
        }],
    })
}

fn event_dispatch(cx: &mut Context) -> Result<Measurement, GateError> {
    let cache = Cache::warm()?;
    let mut extension = load_product(&cache.dir)?
        .instantiate()
        .map_err(|e| failed(&e))?;
    let event = LifecycleEvent::MessageUpdate("a streamed piece of text".to_owned());
    let mut failures = 0usize;
    let timing = measure::single(&cx.plan, || match extension.handle(&event) {
        Ok(result) => drop(black_box(result)),
        Err(_) => failures += 1,
    });
    if failures > 0 {
        return Err(GateError::new(format!(
            "smith/product's handler failed {failures} time(s) while measuring; run `cargo test -p smith-plugins`"
        )));
    }
    Ok(Measurement {
        median: timing.median_ns,
        floor: None,
        samples: timing.samples,
        notes: Vec::new(),
    })
}

fn reload(cx: &mut Context) -> Result<Measurement, GateError> {
    let cache = Cache::warm()?;
    let mut failures = 0usize;
    let timing = measure::single(&cx.plan, || {
        match load_product(&cache.dir).and_then(|c| c.instantiate().map_err(|e| failed(&e))) {
            Ok(extension) => drop(black_box(extension)),
            Err(_) => failures += 1,
        }
    });
    if failures > 0 {
        return Err(GateError::new(format!(
            "{failures} reload(s) of smith/product failed while measuring; run `cargo test -p smith-plugins`"
        )));
    }
    Ok(Measurement {
        median: timing.median_ns,
        floor: None,
        samples: timing.samples,
        notes: Vec::new(),
    })
}

fn warm_start_compiles(_cx: &mut Context) -> Result<Measurement, GateError> {
    let cache = Cache::warm()?;
    let before = compile_count_on_this_thread();
    load_mock(&cache.dir)?;
    load_product(&cache.dir)?;
    let compiled = compile_count_on_this_thread() - before;
    Ok(Measurement {
        median: compiled as f64,
        floor: None,
        samples: 1,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_gates_run_with_the_issue_s_limits() {
        let find = crate::table::limits_of;
        assert_eq!(
            find("plugins.load_builtin_warm"),
            Some(vec![Limit::AtMost(1_000_000.0)])
        );
        assert_eq!(
            find("plugins.event_dispatch"),
            Some(vec![Limit::AtMost(5_000.0)])
        );
        assert_eq!(
            find("plugins.reload"),
            Some(vec![Limit::AtMost(4_000_000.0)])
        );
        assert_eq!(
            find("plugins.warm_start_compiles"),
            Some(vec![Limit::AtMost(0.0)])
        );
    }

    #[test]
    fn a_warm_start_compiles_nothing_and_the_cache_is_removed() {
        let plan = measure::Plan {
            name: "test",
            warmup: std::time::Duration::from_millis(1),
            samples: 1,
            sample_target: std::time::Duration::from_millis(1),
        };
        let mut cx = Context::new(plan);
        let m = warm_start_compiles(&mut cx).unwrap();
        assert_eq!((m.median, m.samples), (0.0, 1));

        // Warming a fresh cache does compile, once per built-in, and the
        // cache is gone once dropped.
        let before = compile_count_on_this_thread();
        let cache = Cache::warm().unwrap();
        assert_eq!(compile_count_on_this_thread() - before, 2);
        let dir = cache.dir.clone();
        assert!(dir.is_dir());
        drop(cache);
        assert!(!dir.exists());
    }
}
