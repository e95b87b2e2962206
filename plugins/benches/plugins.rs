//! Plugin host benchmarks: loading a built-in as a start does,
//! instantiating from a pre-instance, an event dispatch round trip, a
//! provider decode round trip, and a full reload.
//!
//! The built-ins load from the artifacts the build precompiled
//! (`builtin::PRECOMPILED`), not from the cache directory given here, which
//! they use only where those artifacts do not fit the machine. The
//! `*_from_warm_cache` names are kept from when they loaded from the cache,
//! to compare with the numbers measured then (docs/plugins.md).

use smith_plugins::builtin::{MOCK, PRODUCT};
use smith_plugins::extension::LifecycleEvent;
use smith_plugins::{ExtensionComponent, Limits, ProviderComponent};

fn main() {
    divan::main();
}

fn cache() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("smith-plugin-bench-{}", std::process::id()));
    // Warm the cache once.
    ProviderComponent::load("smith/mock", MOCK, Some(&dir), Limits::default()).expect("mock loads");
    ExtensionComponent::load("smith/product", PRODUCT, Some(&dir), Limits::default())
        .expect("product loads");
    dir
}

#[divan::bench]
fn load_mock_from_warm_cache(bencher: divan::Bencher<'_, '_>) {
    let dir = cache();
    bencher.bench(|| {
        ProviderComponent::load("smith/mock", MOCK, Some(&dir), Limits::default()).expect("loads")
    });
}

#[divan::bench]
fn load_product_from_warm_cache(bencher: divan::Bencher<'_, '_>) {
    let dir = cache();
    bencher.bench(|| {
        ExtensionComponent::load("smith/product", PRODUCT, Some(&dir), Limits::default())
            .expect("loads")
    });
}

#[divan::bench]
fn instantiate_product(bencher: divan::Bencher<'_, '_>) {
    let component =
        ExtensionComponent::load("smith/product", PRODUCT, Some(&cache()), Limits::default())
            .expect("loads");
    bencher.bench(|| component.instantiate().expect("instantiates"));
}

#[divan::bench]
fn event_dispatch_round_trip(bencher: divan::Bencher<'_, '_>) {
    let component =
        ExtensionComponent::load("smith/product", PRODUCT, Some(&cache()), Limits::default())
            .expect("loads");
    let mut extension = component.instantiate().expect("instantiates");
    let event = LifecycleEvent::MessageUpdate("a streamed piece of text".to_owned());
    bencher.bench_local(|| extension.handle(&event).expect("handles"));
}

#[divan::bench]
fn provider_decode_round_trip(bencher: divan::Bencher<'_, '_>) {
    use smith_engine::provider::Provider;
    let component = ProviderComponent::load("smith/mock", MOCK, Some(&cache()), Limits::default())
        .expect("loads");
    let mut provider = component.instantiate(&[]).expect("instantiates");
    let chunk = br#"[{"type":"text_delta","text":"hello "}]"#;
    bencher.bench_local(|| provider.decode(chunk));
}

#[divan::bench]
fn reload_product(bencher: divan::Bencher<'_, '_>) {
    let dir = cache();
    bencher.bench(|| {
        ExtensionComponent::load("smith/product", PRODUCT, Some(&dir), Limits::default())
            .expect("loads")
            .instantiate()
            .expect("instantiates")
    });
}

/// A surface that shows everything and keeps nothing.
struct Sink;

impl smith_plugins::dispatch::Surface for Sink {
    fn name(&self) -> &str {
        "bench"
    }
    fn can_show(&self, _: &smith_plugins::extension::IntentKind) -> bool {
        true
    }
    fn show(&mut self, _: &str, _: &smith_plugins::extension::UiIntent) {}
    fn show_text(&mut self, _: &str, _: &str) {}
}

#[divan::bench]
fn dispatcher_message_delta(bencher: divan::Bencher<'_, '_>) {
    // One streamed piece through the dispatcher: event translation, the
    // product handler's round trip, and the safe-point check.
    let component =
        ExtensionComponent::load("smith/product", PRODUCT, Some(&cache()), Limits::default())
            .expect("loads");
    let mut dispatcher = smith_plugins::dispatch::Dispatcher::new(vec![
        component.instantiate().expect("instantiates"),
    ]);
    let event = smith_engine::protocol::Event::MessageDelta {
        text: "a streamed piece of text".to_owned(),
    };
    let mut surface = Sink;
    bencher.bench_local(|| dispatcher.observe(&event, &mut surface));
}
