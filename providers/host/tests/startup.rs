//! Startup cost of live providers: the vendor plugins come precompiled in
//! the binary, so building a `LiveProvider` and sending its first request
//! compiles no component, whether smith's cache directory is fresh or not
//! (a fresh one gets the artifact decompressed, once); nothing is loaded
//! before the first request. A test binary of its own, so no other test has compiled a
//! component in this process.
#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::Arc;

use smith_auth::Resolver;
use smith_catalog::failover::Policy;
use smith_catalog::{Catalog, Routes};
use smith_engine::provider::{Exchange, Message, Provider, Request};
use smith_plugins::builtin::{BUILTINS, VENDORS};
use smith_plugins::{
    Limits, Runtime, compile_count_on_this_thread, precompiled_load_count_on_this_thread,
};
use smith_provider_host::{LiveProvider, Setup, Vendor};

fn setup() -> Setup {
    let catalog = Catalog::new(smith_catalog::bundled().unwrap());
    let resolver = Resolver::new(smith_provider_host::builtin_slots()).env(|name| {
        (name == "ANTHROPIC_API_KEY" || name == "GEMINI_API_KEY")
            .then(|| "test-key-not-sent".to_owned())
    });
    Setup {
        snapshot: catalog.snapshot(),
        routes: Routes::new(),
        resolver: Arc::new(resolver),
        base_urls: BTreeMap::new(),
        policy: Policy::default(),
        thinking: smith_provider_host::ThinkingDial::default(),
        plugin_settings: BTreeMap::new(),
        learned: None,
    }
}

fn request(model: &str) -> Request {
    Request {
        model: model.into(),
        system: None,
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_output_tokens: None,
    }
}

/// The files in `cache`'s plugin folder, once the host's cache writer
/// has written what it was handed.
fn cached_files(cache: &std::path::Path) -> usize {
    assert!(
        smith_plugins::flush_cache_writes(std::time::Duration::from_secs(60)),
        "the cache writes did not finish within 60 s"
    );
    let dir = cache
        .join("plugins")
        .join(Runtime::global().unwrap().compatibility_key());
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

#[test]
fn a_live_provider_compiles_no_component_even_with_a_fresh_cache() {
    // Every vendor plugin loads from its precompiled artifact, decompressed
    // into the fresh cache directory: nothing is compiled.
    let fresh = tempfile::tempdir().unwrap();
    let before = compile_count_on_this_thread();
    let loads = precompiled_load_count_on_this_thread();
    for name in VENDORS {
        let builtin = BUILTINS.iter().find(|b| b.name == name).unwrap();
        Runtime::global()
            .unwrap()
            .load_component(name, builtin.component, Some(fresh.path()))
            .unwrap();
    }
    assert_eq!(compile_count_on_this_thread() - before, 0);
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 4);
    assert_eq!(cached_files(fresh.path()), 4);

    let mut live = LiveProvider::new(setup(), Some(Vendor::Anthropic), None)
        .unwrap()
        .with_plugins(Some(fresh.path().to_path_buf()), Limits::default());
    let model = live.model_name().to_owned();
    let exchange = live.encode(&request(&model)).unwrap();
    assert!(matches!(exchange, Exchange::Http(_)));
    assert_eq!(live.plugin_instances(), 1);
    assert_eq!(compile_count_on_this_thread() - before, 0);

    // Another fresh cache directory: nothing is loaded before the first
    // request, which loads the one plugin it needs, still compiling nothing.
    let cold = tempfile::tempdir().unwrap();
    let loads = precompiled_load_count_on_this_thread();
    let mut live = LiveProvider::new(setup(), Some(Vendor::Google), None)
        .unwrap()
        .with_plugins(Some(cold.path().to_path_buf()), Limits::default());
    assert_eq!(
        precompiled_load_count_on_this_thread(),
        loads,
        "nothing before use"
    );
    let model = live.model_name().to_owned();
    live.encode(&request(&model)).unwrap();
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 1);
    let mut again = LiveProvider::new(setup(), Some(Vendor::Google), None)
        .unwrap()
        .with_plugins(Some(cold.path().to_path_buf()), Limits::default());
    again.encode(&request(&model)).unwrap();
    // The compiled component is kept for the process (`vendor_component`).
    assert_eq!(precompiled_load_count_on_this_thread() - loads, 1);
    assert_eq!(compile_count_on_this_thread() - before, 0);
    assert_eq!(cached_files(cold.path()), 1);
}
