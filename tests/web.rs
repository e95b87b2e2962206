//! smith/web end to end through the built binary with the scripted
//! provider and local HTTP servers: `web_fetch` turning an HTML page into
//! Markdown marked untrusted (and latin-1 text, a cut note, a refused
//! image); the public-only address policy refusing 127.0.0.1 and a name
//! (`localhost`) that resolves to a loopback address until
//! `web.allow-hosts` names them; a redirect from an allowed host to a
//! refused one refused at the hop; the size and time caps; `web_search`
//! through the search provider plugins smith/searxng and smith/brave
//! against local fakes (the Brave key sent by smith in
//! `X-Subscription-Token` and never shown); the guidance without a
//! provider; `smith plugin list` showing the built-in; disabling it
//! removing both tools and nothing else; search providers disabled, chosen
//! by name, broken, and installed by the user (test/searcher, under its
//! `net` grant).

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{recorded_requests as requests, run};
use serde_json::{Value, json};

/// A request the local server received: its target and headers.
#[derive(Clone, Debug)]
struct Seen {
    target: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A local HTTP/1.1 server on 127.0.0.1 answering by path; it records what
/// it receives.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

const PAGE: &str = "<!doctype html><html><head><title>Smith  Web Test</title><style>body{color:red}</style><script>var leaked = 'SCRIPT-TEXT';</script></head><body><h1>Hello web</h1><p>A <strong>bold</strong> claim with <a href=\"https://example.com/more\">a link</a>.</p><ul><li>one</li><li>two</li></ul><p><a href=\"/docs/intro\">intro</a>, <a href=\"next.html\">next</a>, <a href=\"#top\">top</a></p></body></html>";

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn serve(stream: &mut TcpStream, seen: &Mutex<Vec<Seen>>, port: u16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((n, v)) = h.trim_end().split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    seen.lock().unwrap().push(Seen {
        target: target.clone(),
        headers,
    });
    let path = target.split('?').next().unwrap_or("/");
    let html = ("content-type", "text/html; charset=utf-8".to_owned());
    match path {
        "/page" => respond(stream, "200 OK", &[html], PAGE.as_bytes()),
        "/latin1" => respond(
            stream,
            "200 OK",
            &[("content-type", "text/plain; charset=iso-8859-1".to_owned())],
            b"caf\xe9 cr\xe8me",
        ),
        "/meta" => respond(
            stream,
            "200 OK",
            &[("content-type", "text/html".to_owned())],
            b"<html><head><meta charset=\"windows-1252\"></head><body><p>\x93quoted\x94 \x80 5</p></body></html>",
        ),
        "/image" => respond(
            stream,
            "200 OK",
            &[("content-type", "image/png".to_owned())],
            b"\x89PNG\r\n\x1a\nnot really",
        ),
        "/long" => {
            let body = "word ".repeat(40_000);
            respond(stream, "200 OK", &[("content-type", "text/plain".to_owned())], body.as_bytes());
        }
        "/huge" => {
            let body = vec![b'x'; 64 * 1024];
            respond(stream, "200 OK", &[("content-type", "text/plain".to_owned())], &body);
        }
        "/silent" => {
            // Accepts and never answers.
            std::thread::sleep(Duration::from_secs(20));
        }
        "/hop" => respond(stream, "302 Found", &[("location", "page?from=hop".to_owned())], b""),
        "/to-localhost" => respond(
            stream,
            "302 Found",
            &[("location", format!("http://localhost:{port}/page"))],
            b"",
        ),
        "/search" => {
            let body = json!({
                "query": "rust wasm",
                "results": [
                    {"title": "Rust and WebAssembly", "url": "https://rustwasm.example/book", "content": "The book about Rust and wasm."},
                    {"title": "wasm32-wasip2", "url": "https://target.example/wasip2", "content": "The component target."},
                    {"title": "Third", "url": "https://third.example/", "content": "Not asked for."}
                ]
            });
            respond(stream, "200 OK", &[("content-type", "application/json".to_owned())], body.to_string().as_bytes());
        }
        "/brave" => {
            let body = json!({
                "type": "search",
                "web": {"results": [
                    {"title": "Brave <strong>result</strong>", "url": "https://brave.example/one", "description": "First &amp; <strong>best</strong>."}
                ]}
            });
            respond(stream, "200 OK", &[("content-type", "application/json".to_owned())], body.to_string().as_bytes());
        }
        _ => respond(stream, "404 Not Found", &[html], b"<p>no such page</p>"),
    }
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    serve(&mut stream, &log, port);
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Server { port, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Writes smith's configuration file (`SMITH_HOME/config.kdl`).
fn configure(home: &Path, web: &str) {
    std::fs::write(home.join("config.kdl"), format!("web {{\n{web}\n}}\n")).unwrap();
}

fn call(id: &str, tool: &str, arguments: Value) -> Value {
    json!({"tool_call": {"id": id, "name": tool, "arguments": arguments}})
}

/// Runs one `smith eval` whose model makes `calls` in one turn, then
/// answers; the tool results the second request carries, by call id, and
/// standard error.
fn eval_calls(
    home: &Path,
    calls: Vec<Value>,
) -> (HashMap<String, (String, bool)>, Vec<Value>, String) {
    let mut turn = calls;
    turn.push(json!({"stop": {"reason": "tool_use"}}));
    let script = json!([turn, [{"text": "done"}, {"stop": {"reason": "end"}}]]);
    let path = home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let record = home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let (script_arg, record_arg) = (path.display().to_string(), record.display().to_string());
    let (_, err) = run(
        home,
        &[
            "eval",
            "--mock-script",
            &script_arg,
            "--mock-record",
            &record_arg,
            "go",
        ],
        0,
    );
    let requests = requests(&record);
    assert_eq!(requests.len(), 2, "{err}");
    let results = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool_result")
        .map(|m| {
            (
                m["call_id"].as_str().unwrap().to_owned(),
                (
                    m["content"].as_str().unwrap_or_default().to_owned(),
                    m["is_error"].as_bool().unwrap_or(false),
                ),
            )
        })
        .collect();
    (results, requests, err)
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn web_fetch_turns_a_page_into_markdown_marked_untrusted_once_the_host_is_allowed() {
    let server = Server::start();
    let home = home();
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.contains("smith/web"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("built-in") && line.contains("enabled"),
        "{line}"
    );

    // By default 127.0.0.1 is refused after resolution, and nothing is sent.
    let (results, requests, _) = eval_calls(
        home.path(),
        vec![call("c1", "web_fetch", json!({"url": server.url("/page")}))],
    );
    let names = tool_names(&requests[0]);
    assert!(names.contains(&"web_fetch".to_owned()) && names.contains(&"web_search".to_owned()));
    let (text, is_error) = &results["c1"];
    assert!(is_error, "{text}");
    let port = server.port;
    for part in [
        format!("refused to connect to http://127.0.0.1:{port}/page"),
        "127.0.0.1 resolves to 127.0.0.1, a loopback address (this machine)".to_owned(),
        "public internet addresses only".to_owned(),
        format!("add `127.0.0.1` or `127.0.0.1:{port}` to `web.allow-hosts`"),
    ] {
        assert!(text.contains(&part), "{part:?} missing from {text}");
    }
    assert!(server.seen().is_empty(), "nothing may reach the server");

    // Allowed by host and port, the page comes back as Markdown.
    configure(
        home.path(),
        &format!("    allow-hosts \"127.0.0.1:{port}\""),
    );
    let (results, _, _) = eval_calls(
        home.path(),
        vec![
            call("c1", "web_fetch", json!({"url": server.url("/page")})),
            call(
                "c2",
                "web_fetch",
                json!({"url": server.url("/page"), "format": "text"}),
            ),
            call("c3", "web_fetch", json!({"url": server.url("/latin1")})),
            call("c4", "web_fetch", json!({"url": server.url("/meta")})),
            call("c5", "web_fetch", json!({"url": server.url("/image")})),
            call("c6", "web_fetch", json!({"url": server.url("/long")})),
            call("c7", "web_fetch", json!({"url": server.url("/hop")})),
            call("c8", "web_fetch", json!({"url": "file:///etc/passwd"})),
        ],
    );
    let url = server.url("/page");
    let (text, is_error) = &results["c1"];
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(&format!("<untrusted source=\"web:{url}\">\nURL: {url}\nStatus: 200\nContent-Type: text/html\nTitle: Smith Web Test\n")),
        "{text}"
    );
    assert!(text.ends_with("\n</untrusted>"), "{text}");
    for part in [
        "# Hello web",
        "A **bold** claim with [a link](https://example.com/more).",
        "one",
        "two",
    ] {
        assert!(text.contains(part), "{part:?} missing from {text}");
    }
    assert!(
        !text.contains("SCRIPT-TEXT") && !text.contains("color:red"),
        "{text}"
    );
    // Relative links are made absolute against the page's URL.
    assert!(
        text.contains(&format!(
            "[intro](http://127.0.0.1:{port}/docs/intro), [next](http://127.0.0.1:{port}/next.html), [top](#top)"
        )),
        "{text}"
    );
    let (plain, _) = &results["c2"];
    assert!(plain.contains("A bold claim with a link."), "{plain}");
    assert!(!plain.contains("**") && !plain.contains("]("), "{plain}");
    let (latin1, is_error) = &results["c3"];
    assert!(!is_error && latin1.contains("café crème"), "{latin1}");
    let (meta, _) = &results["c4"];
    assert!(meta.contains("“quoted” € 5"), "{meta}");
    let (image, is_error) = &results["c5"];
    assert!(*is_error, "{image}");
    assert!(
        image.contains("its content is image/png, not text or HTML"),
        "{image}"
    );
    let (long, is_error) = &results["c6"];
    assert!(!is_error, "{long}");
    assert!(
        long.contains("102400 of 200000 characters shown, 97600 left out"),
        "{}",
        &long[long.len().saturating_sub(400)..]
    );
    let (hop, is_error) = &results["c7"];
    assert!(!is_error, "{hop}");
    assert!(
        hop.contains(&format!(
            "URL: {}?from=hop\nRedirected from: {}\n",
            server.url("/page"),
            server.url("/hop")
        )),
        "{hop}"
    );
    assert!(hop.contains("# Hello web"), "{hop}");
    let (file, is_error) = &results["c8"];
    assert!(
        *is_error && file.contains("http and https URLs only"),
        "{file}"
    );
}

#[test]
fn a_name_resolving_to_loopback_and_a_redirect_to_it_are_refused_after_resolution() {
    let server = Server::start();
    let home = home();
    let port = server.port;
    configure(
        home.path(),
        &format!("    allow-hosts \"127.0.0.1:{port}\""),
    );
    let (results, _, _) = eval_calls(
        home.path(),
        vec![
            call(
                "c1",
                "web_fetch",
                json!({"url": format!("http://localhost:{port}/page")}),
            ),
            call(
                "c2",
                "web_fetch",
                json!({"url": server.url("/to-localhost")}),
            ),
            call(
                "c3",
                "web_fetch",
                json!({"url": "http://169.254.169.254/latest/meta-data/"}),
            ),
            call(
                "c4",
                "web_fetch",
                json!({"url": "http://[::ffff:127.0.0.1]:9/"}),
            ),
        ],
    );
    let (text, is_error) = &results["c1"];
    assert!(*is_error, "{text}");
    assert!(text.contains("localhost resolves to"), "{text}");
    assert!(text.contains("a loopback address (this machine)"), "{text}");
    assert!(text.contains("`web.allow-hosts`"), "{text}");
    let (text, is_error) = &results["c2"];
    assert!(*is_error, "{text}");
    assert!(
        text.contains(&format!(
            "{} redirected to http://localhost:{port}/page (hop 1 of at most 5), and fetching that failed"
        , server.url("/to-localhost"))),
        "{text}"
    );
    assert!(text.contains("a loopback address"), "{text}");
    let (text, _) = &results["c3"];
    assert!(
        text.contains("169.254.169.254, the link-local address of cloud metadata services"),
        "{text}"
    );
    let (text, _) = &results["c4"];
    assert!(
        text.contains("an IPv6 form of a non-public IPv4 address"),
        "{text}"
    );
    // Only the allowed hop reached the server.
    let targets: Vec<String> = server.seen().into_iter().map(|s| s.target).collect();
    assert_eq!(targets, ["/to-localhost"]);

    // Named in the allow list, the name goes through.
    configure(
        home.path(),
        &format!("    allow-hosts \"127.0.0.1:{port}, localhost\""),
    );
    let (results, _, _) = eval_calls(
        home.path(),
        vec![call(
            "c1",
            "web_fetch",
            json!({"url": server.url("/to-localhost")}),
        )],
    );
    let (text, is_error) = &results["c1"];
    assert!(!is_error && text.contains("# Hello web"), "{text}");
}

#[test]
fn the_size_and_time_caps_end_a_fetch_with_a_message_saying_which() {
    let server = Server::start();
    let home = home();
    let port = server.port;
    configure(
        home.path(),
        &format!("    allow-hosts \"127.0.0.1:{port}\"\n    timeout-s 1"),
    );
    let started = std::time::Instant::now();
    let (results, _, _) = eval_calls(
        home.path(),
        vec![
            call(
                "c1",
                "web_fetch",
                json!({"url": server.url("/huge"), "max_bytes": 1000}),
            ),
            call("c2", "web_fetch", json!({"url": server.url("/silent")})),
        ],
    );
    let (text, is_error) = &results["c1"];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("the response is larger than the size cap of 1000 bytes"),
        "{text}"
    );
    let (text, is_error) = &results["c2"];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("no complete answer within 1 s (the time cap)"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn web_search_asks_the_configured_adapter_and_says_what_to_configure_without_one() {
    let server = Server::start();
    let home = home();
    let port = server.port;
    // No adapter: the guidance.
    let (results, _, _) = eval_calls(
        home.path(),
        vec![call("c1", "web_search", json!({"query": "rust wasm"}))],
    );
    let (text, is_error) = &results["c1"];
    assert!(*is_error, "{text}");
    assert!(
        text.starts_with("web_search has no search provider configured"),
        "{text}"
    );
    for part in [
        "`web.searxng-url`",
        "`smith auth set brave`",
        "`web.search-provider`",
        "`web.allow-hosts`",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }

    // SearXNG at a local instance.
    configure(
        home.path(),
        &format!(
            "    allow-hosts \"127.0.0.1:{port}\"\n    searxng-url \"http://127.0.0.1:{port}/\""
        ),
    );
    let (results, _, _) = eval_calls(
        home.path(),
        vec![call(
            "c1",
            "web_search",
            json!({"query": "rust wasm & co", "count": 2}),
        )],
    );
    let (text, is_error) = &results["c1"];
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "<untrusted source=\"web-search:smith/searxng\">\nSearch: rust wasm & co\nProvider: smith/searxng\n\n1. Rust and WebAssembly\n   https://rustwasm.example/book\n   The book about Rust and wasm.\n\n2. wasm32-wasip2\n   https://target.example/wasip2\n   The component target.\n</untrusted>"
    );
    assert_eq!(
        server.seen().last().unwrap().target,
        "/search?q=rust+wasm+%26+co&format=json"
    );

    // Brave, pointed at the local fake: the key goes in the header, put in
    // by smith, and is never shown.
    let key = "BSA-test-key-5f1c9e0d7a";
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home.path())
        .args(["auth", "set", "brave"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(key.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    configure(
        home.path(),
        &format!(
            "    allow-hosts \"127.0.0.1:{port}\"\n    searxng-url \"http://127.0.0.1:{port}\"\n    search-provider \"brave\"\n    brave-url \"http://127.0.0.1:{port}/brave\""
        ),
    );
    let (results, requests, err) = eval_calls(
        home.path(),
        vec![call(
            "c1",
            "web_search",
            json!({"query": "smith", "count": 3}),
        )],
    );
    let (text, is_error) = &results["c1"];
    assert!(!is_error, "{text}");
    assert!(
        text.contains(
            "Provider: smith/brave\n\n1. Brave result\n   https://brave.example/one\n   First & best."
        ),
        "{text}"
    );
    let seen = server.seen();
    let brave = seen.last().unwrap();
    assert_eq!(brave.target, "/brave?q=smith&count=3");
    assert_eq!(brave.header("x-subscription-token"), Some(key));
    assert_eq!(brave.header("accept"), Some("application/json"));
    let everything = format!("{requests:?}{err}");
    assert!(!everything.contains(key), "the key leaked");
    // Nor is it in what smith keeps (the session, the journal, the logs),
    // but for the credential store itself.
    let mut files = Vec::new();
    for dir in ["data", "state"] {
        let dir = home.path().join(dir);
        if dir.exists() {
            files.extend(walk(&dir).into_iter().filter(|f| !f.ends_with("auth.json")));
        }
    }
    assert!(!files.is_empty(), "smith kept no files to check");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(key),
            "the key is in {}",
            file.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn disabling_the_plugin_removes_both_tools_and_nothing_else() {
    let home = home();
    let script = json!([[{"text": "done"}, {"stop": {"reason": "end"}}]]);
    let path = home.path().join("answer.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let record = home.path().join("requests.jsonl");
    let (script_arg, record_arg) = (path.display().to_string(), record.display().to_string());
    let eval = |home: &Path| {
        let _ = std::fs::remove_file(&record);
        let (_, err) = run(
            home,
            &[
                "eval",
                "--mock-script",
                &script_arg,
                "--mock-record",
                &record_arg,
                "hello",
            ],
            0,
        );
        (requests(&record), err)
    };
    let (before, _) = eval(home.path());
    run(home.path(), &["plugin", "disable", "smith/web"], 0);
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out.lines().find(|l| l.contains("smith/web")).unwrap();
    assert!(line.contains("disabled"), "{line}");
    let (after, err) = eval(home.path());
    let mut tools = tool_names(&before[0]);
    assert!(tools.contains(&"web_fetch".to_owned()) && tools.contains(&"web_search".to_owned()));
    tools.retain(|t| t != "web_fetch" && t != "web_search");
    assert_eq!(tool_names(&after[0]), tools);
    assert_eq!(after[0]["system"], before[0]["system"]);
    assert_eq!(after[0]["messages"], before[0]["messages"]);
    assert!(!err.contains("smith/web"), "{err}");
}

/// Stores `key` as the Brave Search API key, as a user does.
fn store_brave_key(home: &Path, key: &str) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .args(["auth", "set", "brave"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(key.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// One `web_search` call: its result text and whether it is an error, and
/// the tools of the first request.
fn search_once(home: &Path, query: &str) -> (String, bool, Vec<String>) {
    let (results, requests, _) = eval_calls(
        home,
        vec![call(
            "c1",
            "web_search",
            json!({"query": query, "count": 2}),
        )],
    );
    let (text, is_error) = results["c1"].clone();
    (text, is_error, tool_names(&requests[0]))
}

/// The search provider plugin test/searcher as a user installs it: its
/// plugin.kdl (world `search-provider`, `net "127.0.0.1"`) and component.
const SEARCHER: &str = r#"name "test/searcher"
version "0.1.0"
description "SearXNG through http-request under a net grant"
api 1
world "search-provider"
capabilities {
    net "127.0.0.1"
}
"#;

#[test]
fn search_providers_are_plugins_that_can_be_disabled_chosen_and_installed() {
    let server = Server::start();
    let home = home();
    let port = server.port;
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    for name in ["smith/searxng", "smith/brave"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{out}"));
        assert!(
            line.contains("search-provider")
                && line.contains("built-in")
                && line.contains("enabled"),
            "{line}"
        );
    }

    // Both built-ins configured: the first ready one answers.
    store_brave_key(home.path(), "BSA-test-key-0a1b2c");
    let both = format!(
        "    allow-hosts \"127.0.0.1:{port}\"\n    searxng-url \"http://127.0.0.1:{port}\"\n    brave-url \"http://127.0.0.1:{port}/brave\""
    );
    configure(home.path(), &both);
    let (text, is_error, tools_before) = search_once(home.path(), "rust");
    assert!(!is_error, "{text}");
    assert!(text.contains("Provider: smith/searxng\n"), "{text}");

    // Disabling smith/searxng takes it out of the choice, and nothing else.
    run(home.path(), &["plugin", "disable", "smith/searxng"], 0);
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.starts_with("smith/searxng"))
        .unwrap();
    assert!(line.contains("disabled"), "{line}");
    let (text, is_error, tools_after) = search_once(home.path(), "rust");
    assert!(!is_error, "{text}");
    assert!(
        text.contains("Provider: smith/brave\n\n1. Brave result"),
        "{text}"
    );
    assert_eq!(tools_after, tools_before);
    assert_eq!(
        server.seen().last().unwrap().target,
        "/brave?q=rust&count=2"
    );

    // Choosing the disabled one says which are enabled.
    configure(
        home.path(),
        &format!("{both}\n    search-provider \"searxng\""),
    );
    let (text, is_error, _) = search_once(home.path(), "rust");
    assert!(is_error, "{text}");
    assert!(
        text.contains("\"searxng\" (`web.search-provider`)")
            && text.contains("the enabled ones are: smith/brave")
            && text.contains("smith plugin enable NAME"),
        "{text}"
    );

    // With both built-ins disabled and nothing installed: what to do.
    run(home.path(), &["plugin", "disable", "smith/brave"], 0);
    configure(home.path(), &both);
    let (text, is_error, _) = search_once(home.path(), "rust");
    assert!(is_error, "{text}");
    assert!(
        text.starts_with(
            "web_search has no search provider configured: no search provider plugin is enabled"
        ) && text.contains("`smith plugin enable smith/searxng`")
            && text.contains("`search-provider` world"),
        "{text}"
    );

    // A user plugin of the search-provider world, installed like any
    // other: it reaches the instance under its own `net` grant, without
    // `web.allow-hosts`.
    let src = tempfile::tempdir().unwrap();
    let folder = src.path().join("searcher");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("plugin.kdl"), SEARCHER).unwrap();
    std::fs::copy(
        Path::new(smith_plugins::GUEST_DIR).join("smith_plugin_searcher.wasm"),
        folder.join("plugin.wasm"),
    )
    .unwrap();
    let (out, _) = run(
        home.path(),
        &["plugin", "install", &folder.display().to_string()],
        0,
    );
    assert!(out.starts_with("installed test/searcher 0.1.0"), "{out}");
    let (out, _) = run(home.path(), &["plugin", "list"], 0);
    let line = out
        .lines()
        .find(|l| l.starts_with("test/searcher"))
        .unwrap();
    assert!(
        line.contains("search-provider") && line.contains("enabled"),
        "{line}"
    );
    let only_url = format!("    searxng-url \"http://127.0.0.1:{port}\"");
    configure(home.path(), &only_url);
    let (text, is_error, _) = search_once(home.path(), "rust wasm");
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "<untrusted source=\"web-search:test/searcher\">\nSearch: rust wasm\nProvider: test/searcher\n\n1. Rust and WebAssembly\n   https://rustwasm.example/book\n   The book about Rust and wasm.\n\n2. wasm32-wasip2\n   https://target.example/wasip2\n   The component target.\n</untrusted>"
    );
    assert_eq!(
        server.seen().last().unwrap().target,
        "/search?q=rust+wasm&format=json"
    );

    // A search provider whose component is not of the world is loaded
    // when first needed, and a search it is chosen for says why it cannot
    // answer; the others are unaffected.
    let broken = src.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("plugin.kdl"),
        SEARCHER
            .replace("test/searcher", "test/broken")
            .replace("net \"127.0.0.1\"", ""),
    )
    .unwrap();
    std::fs::write(
        broken.join("plugin.wasm"),
        smith_plugins::builtin::PRODUCT.bytes().unwrap(),
    )
    .unwrap();
    run(
        home.path(),
        &["plugin", "install", &broken.display().to_string()],
        0,
    );
    configure(
        home.path(),
        &format!("{only_url}\n    search-provider \"test/broken\""),
    );
    let (text, is_error, _) = search_once(home.path(), "rust wasm");
    assert!(is_error, "{text}");
    assert!(
        text.starts_with("web_search is set to use test/broken (`web.search-provider` is \"test/broken\") but it could not be loaded: ")
            && text.contains("search-provider-plugin world")
            && text.contains("`smith plugin disable test/broken`"),
        "{text}"
    );
    configure(home.path(), &only_url);
    let (text, is_error, _) = search_once(home.path(), "rust wasm");
    assert!(!is_error, "{text}");
    assert!(text.contains("Provider: test/searcher\n"), "{text}");

    // With smith/searxng back, it comes first, and its web-get is under
    // the public-only policy: refused without `web.allow-hosts`, while the
    // user plugin named by `web.search-provider` answers.
    run(home.path(), &["plugin", "enable", "smith/searxng"], 0);
    let (text, is_error, _) = search_once(home.path(), "rust wasm");
    assert!(is_error, "{text}");
    assert!(
        text.starts_with(
            "web_search: the search provider smith/searxng failed: could not ask SearXNG: "
        ) && text.contains("`web.allow-hosts`"),
        "{text}"
    );
    configure(
        home.path(),
        &format!("{only_url}\n    search-provider \"test/searcher\""),
    );
    let (text, is_error, _) = search_once(home.path(), "rust wasm");
    assert!(!is_error, "{text}");
    assert!(text.contains("Provider: test/searcher\n"), "{text}");

    // Each search is an effect in the session's journal (smith's binary
    // store), with the query and the provider chosen.
    let kept: Vec<Vec<u8>> = ["data", "state"]
        .iter()
        .map(|dir| home.path().join(dir))
        .filter(|dir| dir.exists())
        .flat_map(|dir| walk(&dir))
        .filter_map(|f| std::fs::read(&f).ok())
        .collect();
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let recorded = kept.iter().any(|bytes| {
        let mut rest = bytes.as_slice();
        while let Some(at) = find(rest, b"plugin.web-search") {
            let window = &rest[at..(at + 400).min(rest.len())];
            if find(window, b"test/searcher").is_some() && find(window, b"rust wasm").is_some() {
                return true;
            }
            rest = &rest[at + 1..];
        }
        false
    });
    assert!(
        recorded,
        "no plugin.web-search effect with the query and test/searcher was kept"
    );
}
