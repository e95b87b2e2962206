//! The `mcp-net` grant: `http-request` reaches exactly the endpoints of the
//! configured MCP HTTP servers, puts in their configured headers'
//! variables, and is refused everything else before anything is sent.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use smith_config::mcp::McpServer;
use smith_engine::approval::{Approval, ApprovalCell};
use smith_engine::journal::{MemoryJournal, Record};
use smith_plugins::effects::{EffectError, Effects, Grants, PermissionAccess};

fn server(url: &str, headers: &[(&str, &str)]) -> McpServer {
    McpServer {
        name: "remote".into(),
        command: String::new(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        url: Some(url.into()),
        headers: headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
        origin: "test.kdl:2".into(),
    }
}

/// Effects of smith/mcp granted `mcp-net` with `servers` configured.
fn mcp_effects(servers: Vec<McpServer>, journal: &Arc<MemoryJournal>) -> Effects {
    let project = std::env::temp_dir();
    let mut access = PermissionAccess::new(ApprovalCell::new(Approval::Ask), project);
    access.mcp_servers = servers;
    Effects::new(
        "smith/mcp",
        Grants {
            mcp_net: true,
            ..Grants::default()
        },
        Arc::clone(journal) as Arc<dyn smith_engine::journal::EffectJournal>,
        Arc::new(AtomicU64::new(0)),
        1,
    )
    .with_permissions(access)
    .with_net(Arc::new(
        smith_net::Client::builder()
            .proxy(smith_net::ProxySettings::none())
            .build()
            .unwrap(),
    ))
}

/// The journal's intents and completions as text (CBOR strings show).
fn journal_text(journal: &MemoryJournal) -> String {
    journal
        .records()
        .iter()
        .map(|r| match r {
            Record::Intent(i) => String::from_utf8_lossy(&i.input).into_owned(),
            Record::Completion(c) => String::from_utf8_lossy(&c.output).into_owned(),
            Record::Event(e) => format!("{e:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A listener that answers one exchange with 202; the request head.
fn accepting() -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        stream
            .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .unwrap();
        String::from_utf8(head).unwrap()
    });
    (port, handle)
}

#[test]
fn the_configured_endpoint_is_reached_with_its_headers_variables_put_in() {
    let (port, served) = accepting();
    let url = format!("http://127.0.0.1:{port}/mcp");
    // An unset variable with a default: the default is put in (setting a
    // variable would race the other tests' threads).
    let written = "${SMITH_TEST_MCP_NET_UNSET:-mcp-net-key-value-91}";
    let journal = Arc::new(MemoryJournal::new());
    let fx = mcp_effects(vec![server(&url, &[("X-Key", written)])], &journal);
    let response = fx
        .http_request(
            "POST",
            &url,
            &[
                ("X-Key".to_owned(), written.to_owned()),
                // Not configured: passed as written.
                ("X-Other".to_owned(), written.to_owned()),
            ],
            b"{}".to_vec(),
        )
        .unwrap();
    assert_eq!(response.status, 202);
    let head = served.join().unwrap().to_ascii_lowercase();
    assert!(head.starts_with("post /mcp http/1.1\r\n"), "{head}");
    assert!(head.contains("x-key: mcp-net-key-value-91\r\n"), "{head}");
    assert!(
        head.contains("x-other: ${smith_test_mcp_net_unset:-mcp-net-key-value-91}\r\n"),
        "{head}"
    );
    let records = journal_text(&journal);
    assert!(records.contains("X-Key"), "{records}");
    assert!(!records.contains("mcp-net-key-value-91"), "{records}");
    assert!(smith_diag::secrets::contains_secret("mcp-net-key-value-91"));
}

#[test]
fn any_other_url_is_denied_and_nothing_connects() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let journal = Arc::new(MemoryJournal::new());
    let fx = mcp_effects(
        vec![server(&format!("http://127.0.0.1:{port}/mcp"), &[])],
        &journal,
    );
    for other in [
        format!("http://127.0.0.1:{port}/other"),
        format!("http://127.0.0.1:{port}/mcp?x=1"),
        format!("http://localhost:{port}/mcp"),
    ] {
        let err = fx
            .http_request("POST", &other, &[], Vec::new())
            .unwrap_err();
        assert!(
            matches!(&err, EffectError::Denied(d) if d.capability == "net"),
            "{other}: {err}"
        );
        assert!(
            err.to_string()
                .contains("not the url of a configured MCP server"),
            "{err}"
        );
    }
    // Without `mcp-net`, the configured endpoint is denied like any host.
    let plain = Effects::new(
        "test/other",
        Grants::default(),
        Arc::clone(&journal) as Arc<dyn smith_engine::journal::EffectJournal>,
        Arc::new(AtomicU64::new(100)),
        1,
    );
    let err = plain
        .http_request(
            "POST",
            &format!("http://127.0.0.1:{port}/mcp"),
            &[],
            Vec::new(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("net \"127.0.0.1\""), "{err}");
    assert!(journal.records().is_empty());
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing connected"
    );
}

#[test]
fn plain_http_to_another_machine_is_refused_even_when_configured() {
    let journal = Arc::new(MemoryJournal::new());
    let fx = mcp_effects(vec![server("http://mcp.example.com/mcp", &[])], &journal);
    let err = fx
        .http_request("POST", "http://mcp.example.com/mcp", &[], Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("plain http to a host that is not this machine") && err.contains("https://"),
        "{err}"
    );
    assert!(journal.records().is_empty());
}

#[test]
fn a_secret_named_in_a_configured_header_is_put_in_without_a_secrets_grant() {
    let (port, served) = accepting();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let written = "Bearer {secret:remote.token}";
    let journal = Arc::new(MemoryJournal::new());
    let fx = mcp_effects(vec![server(&url, &[("Authorization", written)])], &journal).with_secrets(
        Arc::new(|handle: &str| {
            Ok((handle == "remote.token").then(|| "mcp-net-secret-value-44".to_owned()))
        }),
    );
    fx.http_request(
        "POST",
        &url,
        &[("Authorization".to_owned(), written.to_owned())],
        b"{}".to_vec(),
    )
    .unwrap();
    let head = served.join().unwrap().to_ascii_lowercase();
    assert!(
        head.contains("authorization: bearer mcp-net-secret-value-44\r\n"),
        "{head}"
    );
    let records = journal_text(&journal);
    assert!(!records.contains("mcp-net-secret-value-44"), "{records}");
    assert!(records.contains("remote.token"), "the handle is journaled");
    // The same secret in a header the configuration does not give is
    // denied: the grant covers the configured headers only.
    let err = fx
        .http_request(
            "POST",
            &url,
            &[("X-Other".to_owned(), written.to_owned())],
            Vec::new(),
        )
        .unwrap_err();
    assert!(
        matches!(&err, EffectError::Denied(d) if d.capability == "secrets"),
        "{err}"
    );
}
