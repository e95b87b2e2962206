//! Hostile plugins are contained within their deadline; the host keeps
//! serving; the diagnostic names the plugin and the phase.

use std::time::{Duration, Instant};

use smith_engine::provider::{Provider, ProviderErrorKind, Request};
use smith_plugins::{ErrorKind, Limits, ProviderComponent, WasmProvider};

use crate::guest;

fn hostile(mode: &str, limits: Limits) -> WasmProvider {
    let component = ProviderComponent::load(
        "test/hostile",
        &guest("smith_plugin_hostile.wasm"),
        None,
        limits,
    )
    .unwrap();
    component
        .instantiate(&[("mode".to_owned(), mode.to_owned())])
        .unwrap()
}

fn request() -> Request {
    Request {
        model: "m".into(),
        system: None,
        messages: Vec::new(),
        tools: Vec::new(),
        max_output_tokens: None,
    }
}

fn short() -> Limits {
    Limits {
        call_deadline: Duration::from_millis(200),
        ..Limits::default()
    }
}

/// Runs `encode` and checks the failure: its kind, the plugin and phase
/// named, the instance destroyed, and the time it took.
fn contained(provider: &mut WasmProvider, kind: ErrorKind) -> Duration {
    let start = Instant::now();
    let err = provider.encode(&request()).unwrap_err();
    let took = start.elapsed();
    // Running out of memory would recur on the same request: its own kind,
    // `plugin_memory` (compacted, not retried as it is); the other failures
    // may not recur, and are retried.
    let expected = if kind == ErrorKind::Memory {
        ProviderErrorKind::PluginMemory
    } else {
        ProviderErrorKind::Transport
    };
    assert_eq!(err.kind, expected, "{}", err.message);
    assert!(
        err.message.contains("plugin test/hostile (call encode)"),
        "{}",
        err.message
    );
    let plugin_error = provider.last_error().expect("the failure is recorded");
    assert_eq!(plugin_error.kind, kind, "{plugin_error}");
    // As a diagnostic: complete, coded by kind, naming the plugin and the
    // phase, with the plugin as its surface.
    let d = plugin_error.to_diagnostic();
    assert!(d.is_complete(), "{d}");
    assert_eq!(d.code(), format!("plugin.{}", kind.name()));
    assert!(
        d.what().starts_with("plugin test/hostile (call encode): "),
        "{d}"
    );
    assert!(d.value().is_some(), "{d}");
    assert_eq!(
        d.surface(),
        Some(&smith_diag::Surface::plugin("test/hostile"))
    );
    assert!(!provider.is_alive(), "the instance must be destroyed");
    // The dead instance refuses further calls with a clear message.
    let again = provider.encode(&request()).unwrap_err();
    assert!(again.message.contains("destroyed"), "{}", again.message);
    took
}

/// After any hostile plugin, the host still serves: a fresh instance of
/// the same component and the mock provider work.
fn host_keeps_serving() {
    let mut ok = hostile("ok", short());
    let exchange = ok.encode(&request()).unwrap();
    assert!(matches!(
        exchange,
        smith_engine::provider::Exchange::Local { .. }
    ));
    let mut mock =
        smith_plugins::builtin::mock_provider(None, None, smith_plugins::Limits::default())
            .unwrap();
    assert!(mock.encode(&request()).is_ok());
}

#[test]
fn an_infinite_loop_is_stopped_at_its_deadline() {
    let mut provider = hostile("loop", short());
    let took = contained(&mut provider, ErrorKind::Deadline);
    assert!(
        took >= Duration::from_millis(200),
        "stopped early: {took:?}"
    );
    assert!(took < Duration::from_millis(1500), "stopped late: {took:?}");
    host_keeps_serving();
}

#[test]
fn a_memory_bomb_hits_its_limit() {
    let limits = Limits {
        memory_bytes: 16 << 20,
        ..short()
    };
    let mut provider = hostile("bomb", limits);
    let took = contained(&mut provider, ErrorKind::Memory);
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let message = provider.last_error().unwrap().message.clone();
    assert!(message.contains("16 MiB"), "{message}");
    // A user plugin's limit is in its own manifest.
    assert!(message.contains("raise `memory-limit-mib`"), "{message}");
    host_keeps_serving();
}

#[test]
fn a_flood_of_output_is_bounded_and_stopped() {
    let mut provider = hostile("flood", short());
    let start = Instant::now();
    let err = provider.encode(&request()).unwrap_err();
    assert!(start.elapsed() < Duration::from_millis(1500));
    assert!(
        err.message.contains("plugin test/hostile (call encode)"),
        "{}",
        err.message
    );
    // The stderr capture is bounded: overflowing it traps; the log lines
    // over the cap stop the call once as many were dropped as a run keeps;
    // or the deadline stops the flood. Whichever comes first, the plugin
    // is destroyed.
    let kind = provider.last_error().unwrap().kind;
    assert!(
        matches!(
            kind,
            ErrorKind::Trap | ErrorKind::Flood | ErrorKind::Deadline
        ),
        "{kind:?}"
    );
    assert!(!provider.is_alive());
    host_keeps_serving();
}

#[test]
fn a_trap_destroys_the_instance() {
    let mut provider = hostile("trap", short());
    contained(&mut provider, ErrorKind::Trap);
    let message = &provider.last_error().unwrap().message;
    assert!(
        message.contains("the hostile plugin panics on purpose"),
        "the captured panic message is named: {message}"
    );
    host_keeps_serving();
}

#[test]
fn a_plugin_ignoring_cancellation_is_destroyed_after_the_grace_period() {
    let limits = Limits {
        call_deadline: Duration::from_secs(30),
        abort_grace: Duration::from_millis(250),
        ..Limits::default()
    };
    let mut provider = hostile("ignore-cancel", limits);
    let handle = provider.abort_handle();
    let aborter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        handle.abort();
    });
    let took = contained(&mut provider, ErrorKind::AbortGrace);
    aborter.join().unwrap();
    assert!(
        took >= Duration::from_millis(280),
        "destroyed before the grace ended: {took:?}"
    );
    assert!(took < Duration::from_secs(2), "destroyed late: {took:?}");
    host_keeps_serving();
}

#[test]
fn a_cooperative_plugin_sees_cancellation_and_survives() {
    let limits = Limits {
        call_deadline: Duration::from_secs(30),
        ..Limits::default()
    };
    let mut provider = hostile("cooperative", limits);
    let handle = provider.abort_handle();
    let aborter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        handle.abort();
    });
    let start = Instant::now();
    let err = provider.encode(&request()).unwrap_err();
    aborter.join().unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(250),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err.message, "cancelled");
    assert!(
        provider.is_alive(),
        "a plugin that stops when asked is kept"
    );
}

#[test]
fn a_plugin_stuck_in_contribute_is_stopped_when_instantiated() {
    let component = smith_plugins::ExtensionComponent::load(
        "test/stuck",
        &guest("smith_plugin_stuck.wasm"),
        None,
        short(),
    )
    .unwrap();
    let start = Instant::now();
    let err = component.instantiate().unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind, ErrorKind::Deadline, "{err}");
    assert_eq!(err.phase, smith_plugins::Phase::Call("contribute"));
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let d = err.to_diagnostic();
    assert!(d.is_complete(), "{d}");
    assert_eq!(d.code(), "plugin.deadline");
    assert!(
        d.what().starts_with(
            "plugin test/stuck (call contribute): the plugin ran past its 200 ms deadline"
        ),
        "{d}"
    );
    host_keeps_serving();
}
