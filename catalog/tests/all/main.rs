//! Integration tests of smith-catalog: the bundled catalog, refresh,
//! provenance and conflicts, gating against the real catalog.

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use smith_catalog::{
    CacheBehavior, Catalog, Field, ModelInfo, RefreshOutcome, RequestNeeds, Source, ThinkingLevel,
    bundled, gate,
};
use smith_diag::Diagnostic;

fn model(provider: &str, id: &str, context: u64) -> ModelInfo {
    let mut m = ModelInfo::new(provider, id);
    m.context = Some(context);
    m
}

#[test]
fn the_bundled_catalog_is_valid_and_covers_each_vendor() {
    let models = bundled().unwrap_or_else(|d| panic!("{}", d.render_plain()));
    for provider in ["anthropic", "openai", "google"] {
        assert!(
            models.iter().filter(|m| m.provider == provider).count() >= 3,
            "{provider} has fewer than three models"
        );
    }
    for m in &models {
        // Every reviewed entry states its limits and basic capabilities.
        assert!(m.name.is_some(), "{} has no name", m.reference());
        assert!(
            m.context.is_some() && m.max_output.is_some(),
            "{}",
            m.reference()
        );
        assert!(
            m.tools.is_some() && m.thinking.is_some(),
            "{}",
            m.reference()
        );
        assert!(m.cache.is_some(), "{}", m.reference());
        assert!(
            m.pricing.input.is_some() && m.pricing.output.is_some(),
            "{}",
            m.reference()
        );
        // Explicit caching lists a cache-write price only where it is known,
        // and no known price is zero.
        for p in [
            m.pricing.input,
            m.pricing.output,
            m.pricing.cache_read,
            m.pricing.cache_write,
        ]
        .into_iter()
        .flatten()
        {
            assert!(p > 0.0, "{} has a zero price", m.reference());
        }
    }
    // Unknown stays unknown: Google cached-token rates were not confirmed.
    let pro = models
        .iter()
        .find(|m| m.id == "gemini-2.5-pro")
        .expect("gemini-2.5-pro is listed");
    assert_eq!(pro.pricing.cache_read, None);
}

#[test]
fn a_new_catalog_is_usable_at_once_and_marks_provenance() {
    let catalog = Catalog::new(bundled().expect("valid"));
    let snap = catalog.snapshot();
    assert_eq!(snap.generation, 0);
    let e = snap
        .get("anthropic", "claude-sonnet-4-5-20250929")
        .expect("listed");
    assert_eq!(e.provenance.get(&Field::Context), Some(&Source::Bundled));
    assert!(snap.conflicts.is_empty());
}

#[test]
fn startup_never_waits_for_a_refresh() {
    let catalog = Catalog::new(vec![model("p", "old", 100)]);
    let (release, wait) = mpsc::channel::<()>();
    let started = Instant::now();
    let handle = catalog.spawn_refresh("p", move |_| {
        let _ = wait.recv();
        Ok(vec![model("p", "new", 100)])
    });
    // The refresh is blocked; the catalog answers anyway.
    assert!(catalog.snapshot().get("p", "old").is_some());
    assert!(catalog.snapshot().get("p", "new").is_none());
    assert!(started.elapsed() < Duration::from_secs(5));
    release.send(()).expect("refresh thread waits");
    assert!(matches!(handle.join(), RefreshOutcome::Published(1)));
    let snap = catalog.snapshot();
    assert!(snap.get("p", "new").is_some());
    assert_eq!(
        snap.get("p", "new")
            .and_then(|e| e.provenance.get(&Field::Context)),
        Some(&Source::Refresh)
    );
}

#[test]
fn a_cancelled_refresh_publishes_nothing() {
    let catalog = Catalog::new(vec![model("p", "old", 100)]);
    let (release, wait) = mpsc::channel::<()>();
    let handle = catalog.spawn_refresh("p", move |cancel| {
        let _ = wait.recv();
        assert!(cancel.is_cancelled());
        Ok(vec![model("p", "new", 100)])
    });
    handle.cancel();
    release.send(()).expect("refresh thread waits");
    assert!(matches!(handle.join(), RefreshOutcome::Cancelled));
    let snap = catalog.snapshot();
    assert_eq!(snap.generation, 0);
    assert!(snap.get("p", "new").is_none());
}

#[test]
fn a_failed_refresh_keeps_the_bundled_snapshot() {
    let catalog = Catalog::new(vec![model("p", "old", 100)]);
    let before = catalog.snapshot();
    let outcome = catalog
        .spawn_refresh("p", |_| {
            Err(Diagnostic::error(
                "test.offline",
                "the provider could not be reached",
                "the network is down",
                "try again later",
            ))
        })
        .join();
    assert!(matches!(outcome, RefreshOutcome::Failed(_)));
    assert_eq!(catalog.snapshot(), before);
    assert_eq!(
        catalog.last_refresh_error().map(|d| d.code().to_owned()),
        Some("test.offline".to_owned())
    );
}

#[test]
fn a_stale_refresh_cannot_replace_newer_data() {
    let catalog = Catalog::new(vec![]);
    let slow = catalog.begin_refresh("p");
    let fast = catalog.begin_refresh("p");
    assert!(matches!(
        catalog.publish_refresh(&fast, vec![model("p", "m", 200)]),
        RefreshOutcome::Published(1)
    ));
    match catalog.publish_refresh(&slow, vec![model("p", "m", 100)]) {
        RefreshOutcome::Stale { began_at, newer } => assert_eq!((began_at, newer), (0, 1)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        catalog
            .snapshot()
            .get("p", "m")
            .and_then(|e| e.model.context),
        Some(200)
    );
    // Another provider's refresh that began earlier is not stale: it
    // speaks for different data.
    let other = catalog.begin_refresh("q");
    let p_again = catalog.begin_refresh("p");
    assert!(matches!(
        catalog.publish_refresh(&p_again, vec![model("p", "m", 300)]),
        RefreshOutcome::Published(2)
    ));
    assert!(matches!(
        catalog.publish_refresh(&other, vec![model("q", "n", 1), model("p", "m", 1)]),
        RefreshOutcome::Published(3)
    ));
    // A provider speaks only for itself.
    assert_eq!(
        catalog
            .snapshot()
            .get("p", "m")
            .and_then(|e| e.model.context),
        Some(300)
    );
}

#[test]
fn user_configuration_always_wins_and_conflicts_are_listed() {
    let mut bundled_m = model("p", "m", 100);
    bundled_m.max_output = Some(10);
    let catalog = Catalog::new(vec![bundled_m]);
    let mut user = ModelInfo::new("p", "m");
    user.context = Some(50);
    catalog.set_user(vec![user]);
    let t = catalog.begin_refresh("p");
    let mut fresh = model("p", "m", 400);
    fresh.max_output = Some(20);
    fresh.tools = Some(true);
    catalog.publish_refresh(&t, vec![fresh]);

    let snap = catalog.snapshot();
    let e = snap.get("p", "m").expect("listed");
    assert_eq!(e.model.context, Some(50));
    assert_eq!(e.provenance[&Field::Context], Source::User);
    assert_eq!(e.model.max_output, Some(10));
    assert_eq!(e.provenance[&Field::MaxOutput], Source::Bundled);
    assert_eq!(e.model.tools, Some(true));
    assert_eq!(e.provenance[&Field::Tools], Source::Refresh);

    let mut found: Vec<(Field, Source, Source)> = snap
        .conflicts
        .iter()
        .map(|c| (c.field, c.kept.0.clone(), c.ignored.0.clone()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            (Field::Context, Source::User, Source::Bundled),
            (Field::Context, Source::User, Source::Refresh),
            (Field::MaxOutput, Source::Bundled, Source::Refresh),
        ]
    );
    for c in &snap.conflicts {
        let d = c.diagnostic();
        assert!(d.is_complete());
        assert!(d.what().contains("p/m"));
    }
}

#[test]
fn cached_data_serves_until_a_refresh_replaces_it() {
    let catalog = Catalog::new(vec![]);
    catalog.load_cached("p", vec![model("p", "m", 100)]);
    let e = catalog.snapshot().get("p", "m").cloned().expect("cached");
    assert_eq!(e.provenance[&Field::Context], Source::Cache);
    let t = catalog.begin_refresh("p");
    catalog.publish_refresh(&t, vec![model("p", "m", 200)]);
    // A late cache load does not displace fresher data.
    catalog.load_cached("p", vec![model("p", "m", 100)]);
    let e = catalog.snapshot().get("p", "m").cloned().expect("listed");
    assert_eq!(e.model.context, Some(200));
    assert_eq!(e.provenance[&Field::Context], Source::Refresh);
}

/// Readers racing with many publications always see a whole snapshot: the
/// models of one publication, never a mix.
#[test]
fn snapshots_are_coherent_under_concurrent_publication() {
    let catalog = Catalog::new(vec![]);
    let barrier = Arc::new(Barrier::new(3));
    let writer = {
        let catalog = catalog.clone();
        let barrier = Arc::clone(&barrier);
        std::thread::spawn(move || {
            barrier.wait();
            for g in 1..=300u64 {
                let t = catalog.begin_refresh("p");
                let models = (0..8).map(|i| model("p", &format!("m{i}"), g)).collect();
                assert!(matches!(
                    catalog.publish_refresh(&t, models),
                    RefreshOutcome::Published(_)
                ));
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let catalog = catalog.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut last = 0;
                for _ in 0..2000 {
                    let s = catalog.snapshot();
                    assert!(s.generation >= last, "generations never go back");
                    last = s.generation;
                    let contexts: Vec<Option<u64>> =
                        s.entries.iter().map(|e| e.model.context).collect();
                    if let Some(first) = contexts.first() {
                        assert_eq!(contexts.len(), 8);
                        assert!(contexts.iter().all(|c| c == first), "mixed snapshot");
                        assert_eq!(*first, Some(s.generation));
                    }
                }
            })
        })
        .collect();
    writer.join().expect("writer");
    for r in readers {
        r.join().expect("reader");
    }
    assert_eq!(catalog.snapshot().generation, 300);
}

#[test]
fn gating_against_the_bundled_catalog() {
    let catalog = Catalog::new(bundled().expect("valid"));
    let snap = catalog.snapshot();
    let haiku35 = &snap
        .get("anthropic", "claude-3-5-haiku-20241022")
        .expect("listed")
        .model;
    // Listed with no thinking: thinking is dropped even though its
    // vendor's other models think.
    let needs = RequestNeeds {
        tools: true,
        thinking: Some(ThinkingLevel::High),
        cache_breakpoints: 3,
        ..RequestNeeds::default()
    };
    let g = gate(haiku35, snap.family_of("anthropic", &haiku35.id), &needs).expect("sendable");
    assert_eq!(g.needs.thinking, None);
    assert_eq!(g.needs.cache_breakpoints, 3);

    // An unlisted dated Sonnet inherits from its listed family.
    let unlisted = ModelInfo::new("anthropic", "claude-sonnet-4-5-20990101");
    let family = snap.family_of("anthropic", &unlisted.id).expect("family");
    assert_eq!(family.id, "claude-sonnet-4-5-20250929");
    let g = gate(&unlisted, Some(family), &needs).expect("sendable");
    assert_eq!(g.needs.thinking, Some(ThinkingLevel::High));

    let gpt = &snap.get("openai", "gpt-5").expect("listed").model;
    assert_eq!(gpt.cache, Some(CacheBehavior::Automatic));
    let g = gate(gpt, None, &needs).expect("sendable");
    assert_eq!(g.needs.cache_breakpoints, 0);
}

#[test]
fn every_diagnostic_is_complete_and_leaks_nothing() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = smith_diag::audit::audit_test_suite("every_diagnostic_is_complete", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{report:?}");
}
