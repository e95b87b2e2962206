//! Gates on the plugin host (smith-plugins), with the issue's goals as
//! limits.
//!
//! The workload is the two built-in plugins as embedded in the binary
//! (smith/mock, the larger component, and smith/product). They load from
//! their artifacts precompiled by the build (`builtin::PRECOMPILED`),
//! which lie uncompressed in the binary and are used where they lie,
//! compiling nothing and writing nothing into the compiled-component cache
//! directory the runner gives them (one of its own under the system
//! temporary directory, removed afterwards), which they would use only
//! where those artifacts do not fit the machine.
//!
//! - `plugins.load_builtin_warm`: loading smith/mock as every load after
//!   the first in a process does (the component deserialized from its
//!   in-place artifact once per process, the linker's pre-instance built);
//!   at most 1 ms. smith/product's median is reported beside it.
//! - `plugins.event_dispatch`: one lifecycle event (a streamed message
//!   piece) into smith/product's handler and its result back; at most 5 µs.
//! - `plugins.reload`: a reload of smith/product (its load, a fresh
//!   instance, its contributions read); at most 4 ms.
//! - `plugins.warm_start_compiles`: components compiled while both built-ins
//!   load into a fresh, empty cache directory and then again; exactly 0 (a
//!   first start compiles no built-in, and no start compiles a component
//!   that is in the cache).
//! - `plugins.tool_call_overhead`: what a plugin tool call costs the host
//!   beyond the plugin's own work, with the SDK example's read-only `hello`
//!   tool (embedded for this gate): the call as the engine makes it
//!   (argument validation against the declared schema, the intent's CBOR
//!   and record, the dispatch into the plugin — its lock, the call scope
//!   that parents its host effects, the arguments' JSON — and the result's
//!   mapping, CBOR and completion record), minus the bare `call-tool`
//!   round trip into the component (the wasm call and the guest's work).
//!   At most 50 µs, and at most 3x the floor: the same bookkeeping around
//!   a built-in tool (`read`'s schema and arguments) whose work is nothing.
//!   Records go to a journal that keeps nothing, the same for both sides.
//! - `plugins.context_assemble`: the system prompt assembled again after a
//!   plugin's per-turn fragments changed, 20 fragments of 200 bytes from 20
//!   plugins (the update and the assembly); at most 20 µs.
//! - `plugins.context_unchanged_allocations`: allocations of
//!   `Assembler::prompt` when nothing changed; exactly 0 (the cached text is
//!   handed back). Its time is reported beside it.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use smith_engine::journal::{
    EffectCompletion, EffectIntent, EffectJournal, JournalError, Outcome, canonical_cbor,
};
use smith_engine::tools::{Mutation, Tool, ToolContext, ToolDefinition, ToolResult, ToolSet};
use smith_plugins::builtin::{EXAMPLE_HELLO, MOCK, PRODUCT};
use smith_plugins::context::Assembler;
use smith_plugins::dispatch::{lock_plugin, share};
use smith_plugins::effects::{Effects, Grants};
use smith_plugins::extension::{Fragment, LifecycleEvent};
use smith_plugins::tools::plugin_tools;
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
/// The goal for assembling a changed context of 20 fragments: 20 µs.
pub const CONTEXT_BUDGET_NS: f64 = 20_000.0;
/// Fragments in the context gates' workload.
pub const CONTEXT_FRAGMENTS: usize = 20;

/// The issue's goal for a plugin tool call's host overhead: 50 µs.
pub const TOOL_OVERHEAD_BUDGET_NS: f64 = 50_000.0;
/// The issue's goal for that overhead against a built-in tool's
/// bookkeeping: 3x.
pub const TOOL_OVERHEAD_RATIO: f64 = 3.0;

/// Gates on the plugin host.
pub const PLUGINS: &[Gate] = &[
    Gate {
        name: "plugins.load_builtin_warm",
        metric: "load smith/mock (the larger built-in) as every load after a process's first does: its in-place precompiled artifact's component, a pre-instance built (median)",
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
        metric: "reload smith/product: load, fresh instance, contributions (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(RELOAD_BUDGET_NS)],
        floor: None,
        run: reload,
        cores: 1,
    },
    Gate {
        name: "plugins.warm_start_compiles",
        metric: "components compiled while both built-ins load into a fresh cache directory, then again (exact count)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(0.0)],
        floor: None,
        run: warm_start_compiles,
        cores: 1,
    },
    Gate {
        name: "plugins.tool_call_overhead",
        metric: "a plugin tool call's host bookkeeping and dispatch beyond the plugin's own work (median)",
        unit: Unit::Nanoseconds,
        limits: &[
            Limit::AtMost(TOOL_OVERHEAD_BUDGET_NS),
            Limit::RatioAtMost(TOOL_OVERHEAD_RATIO),
        ],
        floor: Some("the same bookkeeping around a built-in tool that does nothing"),
        run: tool_call_overhead,
        cores: 1,
    },
    Gate {
        name: "plugins.context_assemble",
        metric: "assemble the system prompt of 20 fragments after one plugin's changed (median)",
        unit: Unit::Nanoseconds,
        limits: &[Limit::AtMost(CONTEXT_BUDGET_NS)],
        floor: None,
        run: context_assemble,
        cores: 1,
    },
    Gate {
        name: "plugins.context_unchanged_allocations",
        metric: "allocations of the system prompt when no fragment changed (exact count)",
        unit: Unit::Count,
        limits: &[Limit::AtMost(0.0)],
        floor: None,
        run: context_unchanged_allocations,
        cores: 1,
    },
];

/// A journal that keeps nothing: both sides of the tool gate pay the same
/// (nothing) for the store, so the gate compares the host's own work (the
/// permission gate uses it too: a decision records nothing).
pub(crate) struct Discard;

impl EffectJournal for Discard {
    fn record_intent(&self, intent: &EffectIntent) -> Result<(), JournalError> {
        black_box(intent);
        Ok(())
    }
    fn record_completion(&self, completion: &EffectCompletion) -> Result<(), JournalError> {
        black_box(completion);
        Ok(())
    }
}

/// The engine's bookkeeping around one call of `definition` with `args`
/// (validation, the intent's CBOR and record, `run`, the completion's CBOR
/// and record), as `execute_one` does it; false when something failed.
fn bookkeeping(
    journal: &Discard,
    number: &mut u64,
    definition: &ToolDefinition,
    args: &serde_json::Value,
    generation: u32,
    run: impl FnOnce(&str) -> ToolResult,
) -> bool {
    if definition.validate(args).is_err() {
        return false;
    }
    *number += 1;
    let effect_id = format!("fx-{number}");
    let Ok(input) = canonical_cbor(args) else {
        return false;
    };
    let intent = EffectIntent {
        effect_id: effect_id.clone(),
        parent: "call-1".to_owned(),
        tool: definition.name.clone(),
        plugin_generation: generation,
        input,
    };
    if journal.record_intent(&intent).is_err() {
        return false;
    }
    let result = run(&effect_id);
    let output_value = serde_json::json!({
        "content": result.content,
        "details": result.details,
        "is_error": result.is_error,
    });
    let Ok(output) = canonical_cbor(&output_value) else {
        return false;
    };
    let completion = EffectCompletion {
        effect_id,
        outcome: if result.is_error {
            Outcome::Error
        } else {
            Outcome::Ok
        },
        mutation: result.mutation,
        output,
    };
    journal.record_completion(&completion).is_ok() && !result.is_error
}

fn tool_call_overhead(cx: &mut Context) -> Result<Measurement, GateError> {
    let cache = Cache::warm()?;
    let effects = Effects::new(
        "example/hello",
        Grants::none(),
        std::sync::Arc::new(Discard),
        std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
        1,
    );
    let hello = ExtensionComponent::load(
        "example/hello",
        EXAMPLE_HELLO,
        Some(&cache.dir),
        Limits::default(),
    )
    .and_then(|c| c.instantiate_with(Some(effects)))
    .map_err(|e| failed(&e))?;
    let shared = share(hello);
    let mut taken = Vec::new();
    let (tools, refused) = plugin_tools(std::slice::from_ref(&shared), &mut taken);
    let Some(tool) = tools.into_iter().find(|t| t.definition().name == "hello") else {
        return Err(GateError::new(format!(
            "example/hello offered no `hello` tool ({refused:?}); run `cargo test -p smith-plugins`"
        )));
    };
    let dir = std::env::temp_dir();
    let cx_tool = ToolContext::new(&dir).map_err(|e| {
        GateError::new(format!(
            "the temporary directory {} cannot be a tool context: {e}",
            dir.display()
        ))
    })?;
    let builtin = ToolSet::builtin();
    let Some(read) = builtin.get("read") else {
        return Err(GateError::new("the built-in tool set has no read tool"));
    };
    let read_definition = read.definition().clone();
    let plugin_args = serde_json::json!({"name": "world"});
    let read_args = serde_json::json!({"path": "notes.md", "offset": 1, "limit": 40});
    let journal = Discard;
    let mut number = 0u64;
    let mut floor_number = 0u64;
    let mut failures = 0usize;
    let mut floor_failures = 0usize;
    let (plugin, floor) = measure::paired(
        &cx.plan,
        || {
            let cx_call = cx_tool.clone();
            let ok = bookkeeping(
                &journal,
                &mut number,
                tool.definition(),
                &plugin_args,
                tool.plugin_generation(),
                |effect_id| tool.execute(&plugin_args, &cx_call.with_effect_id(effect_id)),
            );
            failures += usize::from(!ok);
        },
        || {
            let cx_call = cx_tool.clone();
            let ok = bookkeeping(
                &journal,
                &mut floor_number,
                &read_definition,
                &read_args,
                0,
                |effect_id| {
                    black_box((&cx_call, effect_id));
                    ToolResult::ok(
                        "Hello, world!".to_owned(),
                        serde_json::Value::Null,
                        Mutation::NotApplied,
                    )
                },
            );
            floor_failures += usize::from(!ok);
        },
    );
    failures += floor_failures;
    let text = plugin_args.to_string();
    let raw = measure::single(&cx.plan, || {
        let mut plugin = lock_plugin(&shared);
        match plugin.call_tool("hello", &text) {
            Ok(output) if !output.is_error => drop(black_box(output)),
            _ => failures += 1,
        }
    });
    if failures > 0 {
        return Err(GateError::new(format!(
            "{failures} call(s) of example/hello's tool or of the bookkeeping failed while measuring; run `cargo test -p smith-plugins`"
        )));
    }
    let overhead = (plugin.median_ns - raw.median_ns).max(0.0);
    Ok(Measurement {
        median: overhead,
        floor: Some(floor.median_ns),
        samples: plugin.samples,
        notes: vec![
            Note {
                name: "whole_call",
                value: plugin.median_ns,
                unit: Unit::Nanoseconds,
            },
            Note {
                name: "bare_call_tool",
                value: raw.median_ns,
                unit: Unit::Nanoseconds,
            },
        ],
    })
}

/// A compiled-component cache directory of this run, removed on drop.
struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// A fresh cache directory with both built-ins loaded once: from their
    /// precompiled artifacts where they lie (nothing is written into it)
    /// or, where those do not fit this machine, compiled into it.
    fn warm() -> Result<Cache, GateError> {
        let cache = Cache::fresh();
        load_mock(&cache.dir)?;
        load_product(&cache.dir)?;
        cache.written()?;
        Ok(cache)
    }

    /// Waits until the cache files a load handed to the plugin host's
    /// writer thread are on disk, so a later load maps them as a later
    /// start would.
    fn written(&self) -> Result<(), GateError> {
        if smith_plugins::flush_cache_writes(std::time::Duration::from_secs(60)) {
            Ok(())
        } else {
            Err(GateError::new(format!(
                "the built-ins' cache files in {} were not written within 60 s; \
                 check that the folder is writable and the disk not full",
                self.dir.display()
            )))
        }
    }

    /// A new cache directory path, not created.
    fn fresh() -> Cache {
        let dir = std::env::temp_dir().join(format!(
            "smith-bench-plugin-cache-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        Cache { dir }
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
            "{failures} load(s) of a built-in failed while measuring; run `cargo test -p smith-plugins`"
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
    let cache = Cache::fresh();
    let before = compile_count_on_this_thread();
    // A first start (nothing in the cache), then a later one.
    for _ in 0..2 {
        load_mock(&cache.dir)?;
        load_product(&cache.dir)?;
        cache.written()?;
    }
    let compiled = compile_count_on_this_thread() - before;
    Ok(Measurement {
        median: compiled as f64,
        floor: None,
        samples: 1,
        notes: Vec::new(),
    })
}

/// An assembler holding [`CONTEXT_FRAGMENTS`] per-turn fragments of 200
/// bytes, one from each of as many plugins, with its prompt built once.
fn context_workload() -> Assembler {
    let mut assembler = Assembler::new(Path::new("/work/project"));
    for i in 0..CONTEXT_FRAGMENTS {
        assembler.update(&format!("bench/p{i}"), Some(vec![fragment(i, 'a')]));
    }
    drop(assembler.prompt());
    assembler
}

fn fragment(i: usize, fill: char) -> Fragment {
    Fragment {
        id: format!("f{i}"),
        text: std::iter::repeat_n(fill, 200).collect(),
        order: i32::try_from(i).unwrap_or(i32::MAX),
    }
}

fn context_assemble(cx: &mut Context) -> Result<Measurement, GateError> {
    let mut assembler = context_workload();
    let sets = [vec![fragment(0, 'b')], vec![fragment(0, 'c')]];
    let mut turn = 0usize;
    let mut unchanged = 0usize;
    let timing = measure::single(&cx.plan, || {
        turn += 1;
        let before = assembler.generation();
        assembler.update("bench/p0", Some(sets[turn % 2].clone()));
        if assembler.generation() == before {
            unchanged += 1;
        }
        black_box(assembler.prompt());
    });
    if unchanged > 0 {
        return Err(GateError::new(format!(
            "{unchanged} changed update(s) left the generation as it was, so nothing was assembled; run `cargo test -p smith-plugins context`"
        )));
    }
    Ok(Measurement {
        median: timing.median_ns,
        floor: None,
        samples: timing.samples,
        notes: vec![Note {
            name: "bytes",
            value: assembler.prompt().len() as f64,
            unit: Unit::Bytes,
        }],
    })
}

fn context_unchanged_allocations(cx: &mut Context) -> Result<Measurement, GateError> {
    if !smith_alloc::is_global_allocator() {
        return Err(GateError::new(
            "smith_alloc::AccountingAllocator is not this process's global allocator, so an \
             allocation count of 0 would be meaningless; run the gate from the `smith` binary \
             (`smith bench`), or install the accounting allocator as #[global_allocator] in the \
             test or bench binary that runs it",
        ));
    }
    let mut assembler = context_workload();
    let mut worst = 0u64;
    let runs = 5;
    for _ in 0..runs {
        let (prompt, stats) = smith_alloc::count(|| assembler.prompt());
        drop(black_box(prompt));
        worst = worst.max(stats.allocations);
    }
    let timing = measure::single(&cx.plan, || drop(black_box(assembler.prompt())));
    Ok(Measurement {
        median: worst as f64,
        floor: None,
        samples: runs,
        notes: vec![Note {
            name: "unchanged_ns",
            value: timing.median_ns,
            unit: Unit::Nanoseconds,
        }],
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
        assert_eq!(
            find("plugins.tool_call_overhead"),
            Some(vec![Limit::AtMost(50_000.0), Limit::RatioAtMost(3.0)])
        );
        assert_eq!(
            find("plugins.context_assemble"),
            Some(vec![Limit::AtMost(20_000.0)])
        );
        assert_eq!(
            find("plugins.context_unchanged_allocations"),
            Some(vec![Limit::AtMost(0.0)])
        );
    }

    #[test]
    fn the_tool_gate_measures_a_working_plugin_tool_against_a_floor() {
        let plan = measure::Plan {
            name: "test",
            warmup: std::time::Duration::from_millis(1),
            samples: 3,
            sample_target: std::time::Duration::from_millis(1),
        };
        let mut cx = Context::new(plan);
        let m = tool_call_overhead(&mut cx).unwrap();
        let floor = m.floor.unwrap();
        assert!(floor > 0.0, "{m:?}");
        let whole = m.notes.iter().find(|n| n.name == "whole_call").unwrap();
        let bare = m.notes.iter().find(|n| n.name == "bare_call_tool").unwrap();
        assert!(bare.value > 0.0 && whole.value > 0.0, "{m:?}");
        assert_eq!(m.median, (whole.value - bare.value).max(0.0));
    }

    #[test]
    fn the_context_gates_measure_a_changed_and_an_unchanged_prompt() {
        let plan = measure::Plan {
            name: "test",
            warmup: std::time::Duration::from_millis(1),
            samples: 3,
            sample_target: std::time::Duration::from_millis(1),
        };
        let mut cx = Context::new(plan);
        let m = context_assemble(&mut cx).unwrap();
        assert!(m.median > 0.0);
        assert_eq!(
            m.notes[0].value,
            (CONTEXT_FRAGMENTS * 200 + (CONTEXT_FRAGMENTS - 1) * 2) as f64
        );
        if smith_alloc::is_global_allocator() {
            let m = context_unchanged_allocations(&mut cx).unwrap();
            assert_eq!(m.median, 0.0);
        }
    }

    #[test]
    fn a_fresh_start_compiles_nothing_and_the_cache_is_removed() {
        let plan = measure::Plan {
            name: "test",
            warmup: std::time::Duration::from_millis(1),
            samples: 1,
            sample_target: std::time::Duration::from_millis(1),
        };
        let mut cx = Context::new(plan);
        let m = warm_start_compiles(&mut cx).unwrap();
        assert_eq!((m.median, m.samples), (0.0, 1));

        // Warming a fresh cache compiles nothing: both built-ins load from
        // their precompiled artifacts, where they lie, and write nothing
        // into it; the cache is gone once dropped.
        let before = compile_count_on_this_thread();
        let loads = smith_plugins::precompiled_load_count_on_this_thread();
        let cache = Cache::warm().unwrap();
        assert_eq!(compile_count_on_this_thread() - before, 0);
        assert_eq!(
            smith_plugins::precompiled_load_count_on_this_thread() - loads,
            2
        );
        let dir = cache.dir.clone();
        assert!(!dir.exists(), "nothing was written into {}", dir.display());
        std::fs::create_dir_all(&dir).unwrap();
        drop(cache);
        assert!(!dir.exists());
    }
}
