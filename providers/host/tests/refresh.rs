//! Catalog refresh through the built-in vendor plugins and the HTTP engine,
//! against local servers: Google's paged listing is followed to the end and
//! published whole; a refresh cancelled while the server keeps silent
//! publishes nothing; a listing that never ends stops at the page bound
//! and publishes nothing.
#![allow(clippy::unwrap_used)] // a test binary: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use smith_auth::Resolver;
use smith_catalog::{Catalog, RefreshOutcome, Source};
use smith_provider_host::refresh::{self, MAX_PAGES, Plan, PluginSetup};
use smith_provider_host::{NetTransport, Timeouts, Vendor};

/// Serves each connection with `answer(request target)`: `Some(body)` is a
/// 200 JSON reply; `None` keeps the connection silent until the client
/// leaves. Each request target is sent on the returned channel.
fn serve(
    answer: impl Fn(&str) -> Option<Vec<u8>> + Send + 'static,
) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim_end().is_empty() {
                    break;
                }
            }
            let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            let _ = tx.send(target.clone());
            match answer(&target) {
                Some(body) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(&body);
                }
                None => {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
                    let mut buf = [0u8; 16];
                    let _ = stream.read(&mut buf);
                }
            }
        }
    });
    (base, rx)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/listings")
            .join(name),
    )
    .unwrap()
}

fn target(vendor: Vendor, base: &str) -> (refresh::RefreshTarget, Arc<NetTransport>) {
    let resolver = Arc::new(
        Resolver::new(smith_provider_host::builtin_slots())
            .env(|name| (name == "GEMINI_API_KEY").then(|| "test-key".to_owned())),
    );
    let mut urls = BTreeMap::new();
    urls.insert(vendor.id().to_owned(), base.to_owned());
    let Plan::Ask(t) = refresh::plan(&[vendor], &urls, &resolver).remove(0) else {
        panic!("{vendor:?} cannot be asked");
    };
    let transport = NetTransport::from_env(resolver, Timeouts::default()).unwrap();
    (t, Arc::new(transport))
}

#[test]
fn a_paged_google_listing_is_published_whole() {
    let (base, seen) = serve(|target| {
        if target.contains("pageToken=") {
            Some(fixture("google-page-2.json"))
        } else {
            Some(fixture("google-page-1.json"))
        }
    });
    let (t, transport) = target(Vendor::Google, &base);
    let catalog = Catalog::new(Vec::new());
    let outcome = refresh::spawn(&catalog, t, transport, PluginSetup::default()).join();
    assert!(
        matches!(outcome, RefreshOutcome::Published(_)),
        "{outcome:?}"
    );
    let targets: Vec<String> = seen.try_iter().collect();
    assert_eq!(
        targets,
        [
            "/v1beta/models?pageSize=1000",
            "/v1beta/models?pageSize=1000&pageToken=Ch5tb2RlbHMvZ2VtaW5pLTIuMC1mbGFzaC0wMDE%3D"
        ]
    );
    let snap = catalog.snapshot();
    let ids: Vec<&str> = snap
        .provider("google")
        .map(|e| e.model.id.as_str())
        .collect();
    assert_eq!(ids, ["gemini-2.0-flash", "gemini-2.5-flash"]);
    let flash = snap.get("google", "gemini-2.5-flash").unwrap();
    assert_eq!(flash.model.context, Some(1_048_576));
    assert_eq!(flash.model.max_output, Some(65_536));
    assert_eq!(flash.model.thinking.as_ref().map(Vec::len), Some(3));
    assert_eq!(flash.model.tools, None, "not stated, so unknown");
    assert_eq!(snap.runtime["google"].source, Source::Refresh);
    assert_eq!(snap.runtime["google"].models, 2);
}

#[test]
fn a_cancelled_refresh_publishes_nothing() {
    let (base, seen) = serve(|_| None);
    let (t, transport) = target(Vendor::OpenAiCompatible, &base);
    let catalog = Catalog::new(Vec::new());
    let before = catalog.snapshot();
    let handle = refresh::spawn(&catalog, t, transport, PluginSetup::default());
    // Cancel once the request is in flight (the server holds it).
    seen.recv_timeout(Duration::from_secs(120)).unwrap();
    handle.cancel();
    let outcome = handle.join();
    assert!(matches!(outcome, RefreshOutcome::Cancelled), "{outcome:?}");
    let after = catalog.snapshot();
    assert_eq!(after.generation, before.generation);
    assert!(after.runtime.is_empty());
    assert!(catalog.last_refresh_error().is_none());
}

#[test]
fn a_listing_past_the_page_bound_publishes_nothing() {
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    let (base, _seen) = serve(move |_| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        Some(
            format!(
                r#"{{"models": [{{"name": "models/m-{n}", "supportedGenerationMethods": ["generateContent"]}}], "nextPageToken": "p{n}"}}"#
            )
            .into_bytes(),
        )
    });
    let (t, transport) = target(Vendor::Google, &base);
    let catalog = Catalog::new(Vec::new());
    let outcome = refresh::spawn(&catalog, t, transport, PluginSetup::default()).join();
    let RefreshOutcome::Failed(d) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        d.why().contains(&format!("more than {MAX_PAGES} pages")),
        "{}",
        d.why()
    );
    assert!(d.is_complete());
    assert_eq!(served.load(Ordering::SeqCst), MAX_PAGES);
    assert!(catalog.snapshot().runtime.is_empty());
}
