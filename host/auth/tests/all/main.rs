//! Integration tests of smith-auth: sources and their order, the locked
//! store under concurrent writers (threads and processes), renewal with a
//! fake clock, and that no value ever shows.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use smith_auth::{
    AuthStore, Clock, Credential, CredentialKind, OAuthToken, Origin, PluginSource, Refresher,
    Resolver, Secret, Slot,
};
use smith_diag::{Diagnostic, Style};

const API_KEY: &str = "sk-test-VALUE-9f8e7d6c";
const ACCESS_OLD: &str = "at-test-OLD-1a2b3c";
const ACCESS_NEW: &str = "at-test-NEW-4d5e6f";
const REFRESH: &str = "rt-test-REFRESH-7a8b9c";
const ALL_SECRETS: [&str; 4] = [API_KEY, ACCESS_OLD, ACCESS_NEW, REFRESH];

fn slots() -> Vec<Slot> {
    vec![
        Slot::new(
            "acme",
            "api_key",
            &["ACME_KEY", "ACME_KEY_OLD"],
            CredentialKind::ApiKey,
        ),
        Slot::new("cloud", "oauth", &[], CredentialKind::OAuth),
    ]
}

fn no_env() -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    |_| None
}

struct FakeClock(AtomicU64);
impl Clock for FakeClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

struct FakeRefresher {
    calls: AtomicUsize,
    fail: bool,
}
impl Refresher for FakeRefresher {
    fn refresh(&self, slot: &Slot, token: &OAuthToken) -> Result<OAuthToken, Diagnostic> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        assert_eq!(slot.provider, "cloud");
        assert_eq!(token.refresh.as_ref().map(Secret::expose), Some(REFRESH));
        if self.fail {
            return Err(Diagnostic::error(
                "test.refused",
                "the token endpoint refused the refresh token",
                "it was revoked",
                "sign in again",
            ));
        }
        Ok(OAuthToken {
            access: Secret::new(ACCESS_NEW),
            refresh: Some(Secret::new(REFRESH)),
            expires_at: Some(10_000),
        })
    }
}

struct Plugin;
impl PluginSource for Plugin {
    fn name(&self) -> &str {
        "acme-plugin"
    }
    fn credential(&self, slot: &Slot) -> Option<Credential> {
        (slot.provider == "acme").then(|| Credential::ApiKey(Secret::new("plugin-key-test-1")))
    }
}

#[test]
fn sources_are_searched_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = AuthStore::in_data_dir(dir.path());
    store
        .set(
            "acme",
            "api_key",
            &Credential::ApiKey(Secret::new("stored-key-test-1")),
        )
        .expect("set");
    let env: HashMap<&str, &str> = [("ACME_KEY_OLD", "env-key-test-1")].into();
    let origin = |r: &Resolver| r.resolve("acme", "api_key").expect("found").origin;

    let only_plugin = Resolver::new(slots())
        .env(no_env())
        .plugin(Box::new(Plugin));
    assert_eq!(origin(&only_plugin), Origin::Plugin("acme-plugin".into()));
    let with_store = Resolver::new(slots())
        .env(no_env())
        .plugin(Box::new(Plugin))
        .store(store.clone());
    assert!(matches!(origin(&with_store), Origin::Store(_)));
    let with_env = Resolver::new(slots())
        .env(move |v| env.get(v).map(|s| (*s).to_owned()))
        .store(store.clone());
    assert_eq!(origin(&with_env), Origin::Env("ACME_KEY_OLD".into()));
    let with_config =
        with_env.explicit("acme", "api_key", Credential::ApiKey(Secret::new(API_KEY)));
    let r = with_config.resolve("acme", "api_key").expect("found");
    assert_eq!(r.origin, Origin::Config);
    assert_eq!(r.credential.secret().expose(), API_KEY);
}

#[test]
fn a_missing_credential_names_the_variables_and_the_fix() {
    let r = Resolver::new(slots()).env(no_env());
    let d = r.resolve("acme", "api_key").expect_err("missing");
    assert_eq!(d.code(), "auth.missing");
    assert!(d.why().contains("ACME_KEY, ACME_KEY_OLD"), "{}", d.why());
    assert!(d.next().contains("smith auth set acme --slot api_key"));
    assert!(d.is_complete());
}

fn expired_store(dir: &std::path::Path) -> AuthStore {
    let store = AuthStore::in_data_dir(dir);
    store
        .set(
            "cloud",
            "oauth",
            &Credential::OAuth(OAuthToken {
                access: Secret::new(ACCESS_OLD),
                refresh: Some(Secret::new(REFRESH)),
                expires_at: Some(1_000),
            }),
        )
        .expect("set");
    store
}

#[test]
fn expired_tokens_renew_before_use_and_are_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = expired_store(dir.path());
    let clock = Arc::new(FakeClock(AtomicU64::new(500)));
    let refresher = Arc::new(FakeRefresher {
        calls: AtomicUsize::new(0),
        fail: false,
    });
    let r = Resolver::new(slots())
        .env(no_env())
        .store(store.clone())
        .clock(clock.clone())
        .refresher("cloud", refresher.clone());
    // Valid: used as is.
    let got = r.resolve("cloud", "oauth").expect("valid");
    assert!(!got.renewed);
    assert_eq!(got.credential.secret().expose(), ACCESS_OLD);
    assert_eq!(refresher.calls.load(Ordering::SeqCst), 0);
    // Within the 60 s skew of expiry: renewed first.
    clock.0.store(950, Ordering::SeqCst);
    let status = r.status().expect("status");
    let cloud = status
        .iter()
        .find(|s| s.handle == "cloud.oauth")
        .expect("listed");
    assert_eq!(cloud.state, "renewable");
    let got = r.resolve("cloud", "oauth").expect("renewed");
    assert!(got.renewed);
    assert_eq!(got.credential.secret().expose(), ACCESS_NEW);
    assert_eq!(refresher.calls.load(Ordering::SeqCst), 1);
    // Written back: the next resolution needs no renewal.
    let stored = store.get("cloud", "oauth").expect("read").expect("present");
    assert_eq!(stored.expires_at(), Some(10_000));
    assert!(!r.resolve("cloud", "oauth").expect("valid").renewed);
    assert_eq!(refresher.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn renewal_failures_and_unrenewable_tokens_fail_before_dispatch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = expired_store(dir.path());
    let clock = Arc::new(FakeClock(AtomicU64::new(2_000)));
    let failing = Resolver::new(slots())
        .env(no_env())
        .store(store.clone())
        .clock(clock.clone())
        .refresher(
            "cloud",
            Arc::new(FakeRefresher {
                calls: AtomicUsize::new(0),
                fail: true,
            }),
        );
    let d = failing.resolve("cloud", "oauth").expect_err("refused");
    assert_eq!(d.code(), "auth.renew-failed");
    assert!(d.is_complete());
    // The old token stays stored (the failed renewal changed nothing).
    assert_eq!(
        store
            .get("cloud", "oauth")
            .expect("read")
            .expect("present")
            .secret()
            .expose(),
        ACCESS_OLD
    );
    let no_refresher = Resolver::new(slots())
        .env(no_env())
        .store(store)
        .clock(clock);
    assert_eq!(
        no_refresher
            .resolve("cloud", "oauth")
            .expect_err("expired")
            .code(),
        "auth.expired"
    );
    let status = no_refresher.status().expect("status");
    assert_eq!(
        status
            .iter()
            .find(|s| s.handle == "cloud.oauth")
            .map(|s| s.state),
        Some("expired")
    );
}

#[test]
fn concurrent_threads_never_lose_another_providers_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.json");
    let threads = 8;
    let rounds = 20;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let store = AuthStore::at(path);
                barrier.wait();
                for round in 0..rounds {
                    let v = Credential::ApiKey(Secret::new(format!("thread-key-{t}-{round}")));
                    store.set(&format!("p{t}"), "api_key", &v).expect("set");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    let store = AuthStore::at(&path);
    for t in 0..threads {
        let c = store.get(&format!("p{t}"), "api_key").expect("read");
        assert_eq!(
            c.map(|c| c.secret().expose().to_owned()),
            Some(format!("thread-key-{t}-{}", rounds - 1))
        );
    }
}

/// The body of one child process in the process test.
#[test]
fn child_writer() {
    let (Ok(path), Ok(provider)) = (
        std::env::var("SMITH_AUTH_TEST_PATH"),
        std::env::var("SMITH_AUTH_TEST_PROVIDER"),
    ) else {
        return;
    };
    let store = AuthStore::at(path);
    for round in 0..15 {
        let v = Credential::ApiKey(Secret::new(format!("proc-key-{provider}-{round}")));
        store.set(&provider, "api_key", &v).expect("set");
    }
}

#[test]
fn concurrent_processes_never_lose_another_providers_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.json");
    let exe = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(&exe)
                .args(["--exact", "child_writer", "--test-threads", "1"])
                .env("SMITH_AUTH_TEST_PATH", &path)
                .env("SMITH_AUTH_TEST_PROVIDER", format!("proc{i}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success());
    }
    let store = AuthStore::at(&path);
    let listed = store.list().expect("list");
    assert_eq!(listed.len(), 4, "{listed:?}");
    for i in 0..4 {
        let c = store.get(&format!("proc{i}"), "api_key").expect("read");
        assert_eq!(
            c.map(|c| c.secret().expose().to_owned()),
            Some(format!("proc-key-proc{i}-14"))
        );
    }
}

/// Every rendering of everything that held a secret: Debug of credentials,
/// resolutions and the resolver, status, and every diagnostic rendering.
#[test]
fn secrets_never_appear_in_any_rendering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = expired_store(dir.path());
    let env: HashMap<&str, &str> = [("ACME_KEY", API_KEY)].into();
    let r = Resolver::new(slots())
        .env(move |v| env.get(v).map(|s| (*s).to_owned()))
        .store(store)
        .clock(Arc::new(FakeClock(AtomicU64::new(5_000))))
        .explicit(
            "other",
            "api_key",
            Credential::ApiKey(Secret::new(ACCESS_NEW)),
        )
        .refresher(
            "cloud",
            Arc::new(FakeRefresher {
                calls: AtomicUsize::new(0),
                fail: true,
            }),
        );
    let mut texts = vec![format!("{r:?}")];
    let resolved = r.resolve("acme", "api_key").expect("env");
    texts.push(format!("{resolved:?}"));
    texts.push(format!("{}", resolved.credential.secret()));
    texts.push(format!("{:?}", r.status().expect("status")));
    let d = r.resolve("cloud", "oauth").expect_err("refused");
    // A diagnostic that quotes a secret is redacted in every rendering.
    let leaky = Diagnostic::error(
        "test.leak",
        format!("header x-api-key: {API_KEY}"),
        format!("token {ACCESS_OLD} then {REFRESH}"),
        "nothing",
    )
    .with_value(ACCESS_NEW);
    for d in [d, leaky] {
        texts.push(d.render_plain());
        texts.push(d.render_terminal(Style::COLOR));
        texts.push(d.to_json().to_string());
        texts.push(format!("{:?}", d.to_plugin()));
    }
    for text in &texts {
        for secret in ALL_SECRETS {
            assert!(!text.contains(secret), "{secret} leaked in: {text}");
        }
    }
}

#[test]
fn every_diagnostic_is_complete_and_leaks_nothing() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = smith_diag::audit::audit_test_suite("every_diagnostic_is_complete", &ALL_SECRETS)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.passed(), "{report:?}");
}
