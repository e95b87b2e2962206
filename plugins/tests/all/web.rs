//! `web-get`, the host effect behind smith/web: only the built-in `web`
//! grant allows it, it is sent under the public-only address policy with
//! the user's `web.allow-hosts`, and it is recorded in the journal.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use smith_engine::journal::{MemoryJournal, Outcome, Record};
use smith_plugins::effects::{ConfigAccess, EffectError, Effects, Grants};

/// The runtime's configuration with `web.allow-hosts` set (or not).
struct Allow(Option<String>);

impl ConfigAccess for Allow {
    fn get(&self, key: &str) -> Option<String> {
        (key == "web.allow-hosts")
            .then(|| {
                self.0
                    .as_ref()
                    .map(|v| serde_json::Value::from(v.as_str()).to_string())
            })
            .flatten()
    }

    fn set(&self, _plugin: &str, key: &str, _value: &str) -> Result<(), String> {
        Err(format!("`{key}` is one of smith's own options"))
    }
}

/// A server answering every request `ok`, counting requests and keeping
/// their header lines.
fn server() -> (u16, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (c, l) = (Arc::clone(&count), Arc::clone(&lines));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            c.fetch_add(1, Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                l.lock().unwrap().push(line.trim_end().to_owned());
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (port, count, lines)
}

fn effects(grants: Grants, allow: Option<&str>, journal: &Arc<MemoryJournal>) -> Effects {
    let client = smith_net::Client::builder()
        .proxy(smith_net::ProxySettings::none())
        .build()
        .unwrap();
    Effects::new(
        "smith/web",
        grants,
        Arc::clone(journal) as Arc<dyn smith_engine::journal::EffectJournal>,
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_net(Arc::new(client))
    .with_config(Arc::new(Allow(allow.map(str::to_owned))))
}

const NEVER: &(dyn Fn() -> bool + Sync) = &|| false;

#[test]
fn web_get_needs_the_web_grant_and_a_net_grant_is_not_enough() {
    let (port, count, _) = server();
    let journal = Arc::new(MemoryJournal::new());
    let grants = Grants {
        net: vec!["127.0.0.1".to_owned()],
        ..Grants::default()
    };
    let fx = effects(grants, Some(&format!("127.0.0.1:{port}")), &journal);
    let url = format!("http://127.0.0.1:{port}/");
    let err = fx.web_get(&url, &[], 5_000, 1024, NEVER).unwrap_err();
    let EffectError::Denied(denial) = err else {
        panic!("{err}")
    };
    assert_eq!(
        (denial.capability, denial.missing_grant.as_str()),
        ("web", "web")
    );
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert!(journal.records().is_empty());
}

#[test]
fn web_get_refuses_loopback_unless_the_user_allows_the_host_and_records_both() {
    let (port, count, lines) = server();
    let url = format!("http://127.0.0.1:{port}/page?q=1");
    let web = || Grants {
        web: true,
        ..Grants::default()
    };
    let journal = Arc::new(MemoryJournal::new());
    let err = effects(web(), None, &journal)
        .web_get(&url, &[], 5_000, 1024, NEVER)
        .unwrap_err();
    let EffectError::Failed(text) = err else {
        panic!("{err}")
    };
    assert!(
        text.starts_with(&format!(
            "web-get {url}: refused to connect to http://127.0.0.1:{port}/page: 127.0.0.1 resolves to 127.0.0.1, a loopback address (this machine)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("`127.0.0.1:{port}` to `web.allow-hosts`")),
        "{text}"
    );
    assert_eq!(count.load(Ordering::SeqCst), 0);
    let outcomes: Vec<Outcome> = journal
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Completion(c) => Some(c.outcome),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, [Outcome::Error]);

    let journal = Arc::new(MemoryJournal::new());
    let headers = [("accept".to_owned(), "text/html".to_owned())];
    let response = effects(
        web(),
        Some(&format!("localhost, 127.0.0.1:{port}")),
        &journal,
    )
    .web_get(&url, &headers, 5_000, 1024, NEVER)
    .unwrap();
    assert_eq!(
        (response.status, response.body.as_slice()),
        (200, &b"ok"[..])
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert!(
        lines
            .lock()
            .unwrap()
            .contains(&"accept: text/html".to_owned())
    );
    let intents: Vec<String> = journal
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Intent(i) => Some(i.tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(intents, ["plugin.web-get"]);
}
