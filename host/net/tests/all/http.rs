//! The HTTP engine against local servers, plain and TLS.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use smith_net::{BodyEvent, CancelToken, Limits, Method, NetErrorKind, Outcome, Request};

use crate::server::{BOTH, Mode, Server, client, pki, start_proxy};

fn quick() -> Limits {
    Limits {
        head_timeout: Duration::from_secs(10),
        body_gap_timeout: Duration::from_secs(10),
        ..Limits::default()
    }
}

fn get(server: &Server, path: &str) -> Request {
    Request::get(&server.url(path)).unwrap()
}

#[test]
fn defaults_are_the_documented_bounds() {
    let l = Limits::default();
    assert_eq!(l.max_request_body, 16 * 1024 * 1024);
    assert_eq!(l.max_response_body, 64 * 1024 * 1024);
    assert_eq!(l.head_timeout, Duration::from_secs(120));
    assert_eq!(l.body_gap_timeout, Duration::from_secs(300));
}

#[test]
fn content_length_body_is_complete_and_request_is_well_formed() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                let body = format!(
                    "{} {} {}",
                    req.method,
                    req.target,
                    String::from_utf8_lossy(&req.body)
                );
                c.respond(200, body.as_bytes());
            }
        });
        let req = Request::post(&server.url("/v1/x?y=1"), b"payload".to_vec())
            .unwrap()
            .with_header("X-Test", "yes");
        let resp = client(quick()).send(req, CancelToken::new()).unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers().get("Content-Length"), Some("22"));
        let (_, _, body) = resp.into_parts();
        let (bytes, outcome) = body.collect();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /v1/x?y=1 payload",
            "{mode:?}"
        );
        assert_eq!(outcome, Outcome::Complete { bytes: 22 });
        let seen = &server.requests()[0];
        assert_eq!(seen.header("host"), Some(server.addr.to_string().as_str()));
        assert_eq!(seen.header("x-test"), Some("yes"));
        assert_eq!(seen.header("content-length"), Some("7"));
    }
}

fn chunked_server(mode: Mode) -> Server {
    Server::start(mode, |c| {
        while c.read_request().is_some() {
            c.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
            for part in ["hello", " ", "chunked", " world"] {
                c.send(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes());
                std::thread::sleep(Duration::from_millis(5));
            }
            c.send(b"0\r\nx-trailer: t\r\n\r\n");
        }
    })
}

#[test]
fn chunked_body_is_decoded_and_complete() {
    for mode in BOTH {
        let server = chunked_server(mode);
        let resp = client(quick())
            .send(get(&server, "/"), CancelToken::new())
            .unwrap();
        let (_, _, body) = resp.into_parts();
        let (bytes, outcome) = body.collect();
        assert_eq!(bytes, b"hello chunked world", "{mode:?}");
        assert_eq!(outcome, Outcome::Complete { bytes: 19 });
    }
}

#[test]
fn read_to_close_body_is_complete_only_with_a_clean_close() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            if c.read_request().is_some() {
                c.send(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil close");
                c.close_notify();
            }
        });
        let (_, _, body) = client(quick())
            .send(get(&server, "/"), CancelToken::new())
            .unwrap()
            .into_parts();
        let (bytes, outcome) = body.collect();
        assert_eq!(bytes, b"until close");
        assert_eq!(outcome, Outcome::Complete { bytes: 11 }, "{mode:?}");
    }
    // Over TLS, a close without close_notify may be a truncation attack.
    let server = Server::start(Mode::Tls, |c| {
        if c.read_request().is_some() {
            c.send(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil close");
        }
    });
    let (_, _, body) = client(quick())
        .send(get(&server, "/"), CancelToken::new())
        .unwrap()
        .into_parts();
    let (bytes, outcome) = body.collect();
    assert_eq!(bytes, b"until close");
    match outcome {
        Outcome::Failed(e) => assert!(e.why().contains("close_notify"), "{e}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn bodies_cut_off_before_their_framing_ends_fail() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            if let Some(req) = c.read_request() {
                if req.target == "/length" {
                    c.send(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this");
                } else {
                    c.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\n");
                }
                c.close_notify();
            }
        });
        for path in ["/length", "/chunked"] {
            let (_, _, body) = client(quick())
                .send(get(&server, path), CancelToken::new())
                .unwrap()
                .into_parts();
            let (_, outcome) = body.collect();
            match &outcome {
                Outcome::Failed(e) => assert!(
                    matches!(
                        e.kind(),
                        NetErrorKind::Protocol | NetErrorKind::ConnectionLost
                    ),
                    "{mode:?} {path}: {e}"
                ),
                other => panic!("{mode:?} {path}: expected failure, got {other:?}"),
            }
            assert!(!outcome.is_complete());
        }
    }
}

#[test]
fn non_2xx_statuses_are_responses_with_bodies() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                let status = if req.target == "/missing" { 404 } else { 500 };
                c.respond(status, format!("{{\"error\":{status}}}").as_bytes());
            }
        });
        let cl = client(quick());
        for (path, status) in [("/missing", 404), ("/broken", 500)] {
            let resp = cl.send(get(&server, path), CancelToken::new()).unwrap();
            assert_eq!(resp.status(), status);
            assert!(!resp.is_success());
            let (_, _, body) = resp.into_parts();
            assert_eq!(
                body.read_complete().unwrap(),
                format!("{{\"error\":{status}}}").as_bytes()
            );
        }
    }
}

#[test]
fn oversized_request_bodies_are_rejected_before_anything_is_sent() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                c.respond(200, format!("{}", req.body.len()).as_bytes());
            }
        });
        // The default bound: 16 MiB + 1 byte is refused.
        let big = vec![b'x'; 16 * 1024 * 1024 + 1];
        let e = client(quick())
            .send(
                Request::post(&server.url("/"), big).unwrap(),
                CancelToken::new(),
            )
            .unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::RequestTooLarge);
        assert!(
            e.what().contains("16777217") && e.what().contains("16777216"),
            "{e}"
        );
        // A configured bound: exactly the bound is sent, one more is not.
        let cl = client(Limits {
            max_request_body: 1024,
            ..quick()
        });
        let e = cl
            .send(
                Request::post(&server.url("/"), vec![1u8; 1025]).unwrap(),
                CancelToken::new(),
            )
            .unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::RequestTooLarge);
        assert_eq!(
            server.connections(),
            0,
            "{mode:?}: a rejected request must not connect"
        );
        let resp = cl
            .send(
                Request::post(&server.url("/"), vec![1u8; 1024]).unwrap(),
                CancelToken::new(),
            )
            .unwrap();
        let (_, _, body) = resp.into_parts();
        assert_eq!(body.read_complete().unwrap(), b"1024");
        // The server saw one connection carrying one request: the one that fit.
        assert_eq!(server.connections(), 1);
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].body.len(), 1024);
    }
}

#[test]
fn response_bodies_stop_at_the_configured_bound() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                let n: usize = req.target[1..].parse().unwrap();
                let body = vec![b'a'; n];
                if req.header("x-chunked").is_some() {
                    c.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
                    for part in body.chunks(300) {
                        c.send(
                            &[format!("{:x}\r\n", part.len()).as_bytes(), part, b"\r\n"].concat(),
                        );
                    }
                    c.send(b"0\r\n\r\n");
                } else {
                    c.respond(200, &body);
                }
            }
        });
        let cl = client(Limits {
            max_response_body: 1000,
            read_chunk_bytes: 256,
            ..quick()
        });
        for chunked in [false, true] {
            for (n, expect) in [
                (999, Outcome::Complete { bytes: 999 }),
                (1000, Outcome::Complete { bytes: 1000 }),
                (1001, Outcome::Truncated { bound: 1000 }),
                (5000, Outcome::Truncated { bound: 1000 }),
            ] {
                let mut req = get(&server, &format!("/{n}"));
                if chunked {
                    req = req.with_header("x-chunked", "1");
                }
                let (_, _, body) = cl.send(req, CancelToken::new()).unwrap().into_parts();
                let (bytes, outcome) = body.collect();
                assert_eq!(outcome, expect, "{mode:?} chunked={chunked} n={n}");
                assert_eq!(bytes.len(), n.min(1000));
            }
        }
    }
}

#[test]
fn response_bodies_stop_at_64_mib_by_default() {
    let server = Server::start(Mode::Plain, |c| {
        if c.read_request().is_some() {
            let total = 64 * 1024 * 1024 + 4096;
            c.send(format!("HTTP/1.1 200 OK\r\ncontent-length: {total}\r\n\r\n").as_bytes());
            let block = vec![b'z'; 1024 * 1024];
            let mut left = total;
            while left > 0 {
                let n = left.min(block.len());
                if !c.send(&block[..n]) {
                    return;
                }
                left -= n;
            }
        }
    });
    let (_, _, mut body) = client(quick())
        .send(get(&server, "/"), CancelToken::new())
        .unwrap()
        .into_parts();
    let mut total = 0usize;
    let outcome = loop {
        match body.next_event() {
            BodyEvent::Data(d) => total += d.len(),
            BodyEvent::End(o) => break o,
        }
    };
    assert_eq!(
        outcome,
        Outcome::Truncated {
            bound: 64 * 1024 * 1024
        }
    );
    assert_eq!(total, 64 * 1024 * 1024);
    let e = outcome.into_result("h").unwrap_err();
    assert_eq!(e.kind(), NetErrorKind::ResponseTooLarge);
}

#[test]
fn the_head_must_arrive_within_the_head_bound() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            if c.read_request().is_some() {
                std::thread::sleep(Duration::from_secs(3));
                c.respond(200, b"late");
            }
        });
        let cl = client(Limits {
            head_timeout: Duration::from_millis(200),
            ..quick()
        });
        let start = Instant::now();
        let e = cl.send(get(&server, "/"), CancelToken::new()).unwrap_err();
        let took = start.elapsed();
        assert_eq!(e.kind(), NetErrorKind::TimeoutHead, "{mode:?}: {e}");
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );
        assert!(e.what().contains("200ms"), "{e}");
    }
}

#[test]
fn a_gap_between_body_chunks_ends_the_body() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            if c.read_request().is_some() {
                c.send(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nfirst");
                std::thread::sleep(Duration::from_secs(3));
                c.send(b"later");
            }
        });
        let cl = client(Limits {
            body_gap_timeout: Duration::from_millis(200),
            ..quick()
        });
        let (_, _, mut body) = cl
            .send(get(&server, "/"), CancelToken::new())
            .unwrap()
            .into_parts();
        assert_eq!(body.next_event(), BodyEvent::Data(b"first".to_vec()));
        let start = Instant::now();
        match body.next_event() {
            BodyEvent::End(Outcome::Failed(e)) => {
                assert_eq!(e.kind(), NetErrorKind::TimeoutBodyGap, "{mode:?}: {e}");
                assert!(e.what().contains("after 5 bytes"), "{e}");
            }
            other => panic!("{mode:?}: expected a gap timeout, got {other:?}"),
        }
        assert!(start.elapsed() < Duration::from_secs(2));
        // The outcome is sticky.
        assert!(matches!(
            body.next_event(),
            BodyEvent::End(Outcome::Failed(_))
        ));
        assert!(matches!(body.outcome(), Some(Outcome::Failed(_))));
    }
}

#[test]
fn chunks_are_delivered_as_they_arrive() {
    for mode in BOTH {
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let go_rx = std::sync::Mutex::new(go_rx);
        let server = Server::start(mode, move |c| {
            if c.read_request().is_some() {
                c.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nearly\r\n");
                // Nothing more until the client has seen the first chunk.
                go_rx.lock().unwrap().recv().unwrap();
                c.send(b"4\r\nlate\r\n0\r\n\r\n");
            }
        });
        let (_, _, mut body) = client(quick())
            .send(get(&server, "/"), CancelToken::new())
            .unwrap()
            .into_parts();
        assert_eq!(
            body.next_chunk().as_deref(),
            Some(&b"early"[..]),
            "{mode:?}"
        );
        go_tx.send(()).unwrap();
        assert_eq!(body.next_chunk().as_deref(), Some(&b"late"[..]));
        assert_eq!(body.next_chunk(), None);
        assert_eq!(body.outcome(), Some(&Outcome::Complete { bytes: 9 }));
    }
}

#[test]
fn cancellation_mid_body_delivers_no_further_chunk() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            if c.read_request().is_some() {
                c.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
                for i in 0..40 {
                    if !c.send(format!("2\r\n{i:02}\r\n").as_bytes()) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                c.send(b"0\r\n\r\n");
            }
        });
        let cancel = CancelToken::new();
        let (_, _, mut body) = client(quick())
            .send(get(&server, "/"), cancel.clone())
            .unwrap()
            .into_parts();
        // A delivered chunk holds whatever one read brought, so it may carry
        // several of the server's chunks; read until at least three arrived.
        let mut got = Vec::new();
        while got.len() < 6 {
            got.extend(body.next_chunk().unwrap());
        }
        let expect: String = (0..40).map(|i| format!("{i:02}")).collect();
        assert!(expect.as_bytes().starts_with(&got), "{mode:?}: {got:?}");
        let requests_before = server.requests().len();
        cancel.cancel();
        // Let more chunks reach the reader thread; none may be delivered.
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(body.next_event(), BodyEvent::End(Outcome::Cancelled));
        assert_eq!(server.requests().len(), requests_before);
        assert_eq!(body.next_chunk(), None);
        assert_eq!(body.outcome(), Some(&Outcome::Cancelled));
    }
}

#[test]
fn cancellation_while_waiting_for_the_head_ends_the_exchange() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            if c.read_request().is_some() {
                std::thread::sleep(Duration::from_secs(3));
            }
        });
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            c2.cancel();
        });
        let start = Instant::now();
        let e = client(quick()).send(get(&server, "/"), cancel).unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::Cancelled, "{mode:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
        // An already-cancelled token stops before connecting.
        let before = server.connections();
        let done = CancelToken::new();
        done.cancel();
        let e = client(quick()).send(get(&server, "/"), done).unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::Cancelled);
        assert_eq!(server.connections(), before);
    }
}

#[test]
fn sequential_requests_reuse_one_connection() {
    for mode in BOTH {
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                if req.target == "/chunked" {
                    c.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
                } else if req.method == "HEAD" {
                    c.send(b"HTTP/1.1 200 OK\r\ncontent-length: 42\r\n\r\n");
                } else {
                    c.respond(200, req.target.as_bytes());
                }
            }
        });
        let cl = client(quick());
        for path in ["/one", "/chunked", "/two"] {
            let (_, _, body) = cl
                .send(get(&server, path), CancelToken::new())
                .unwrap()
                .into_parts();
            body.read_complete().unwrap();
        }
        let head = Request::new(Method::Head, &server.url("/h")).unwrap();
        let resp = cl.send(head, CancelToken::new()).unwrap();
        assert_eq!(resp.headers().get("content-length"), Some("42"));
        let (_, _, body) = resp.into_parts();
        assert_eq!(body.collect(), (Vec::new(), Outcome::Complete { bytes: 0 }));
        let (_, _, body) = cl
            .send(get(&server, "/last"), CancelToken::new())
            .unwrap()
            .into_parts();
        assert_eq!(body.read_complete().unwrap(), b"/last");
        assert_eq!(
            server.connections(),
            1,
            "{mode:?}: every request should share one connection"
        );
        assert_eq!(
            server
                .requests()
                .iter()
                .map(|r| r.connection)
                .collect::<Vec<_>>(),
            [1, 1, 1, 1, 1]
        );
        assert_eq!(cl.idle_connections(), 1);
    }
}

#[test]
fn connection_close_and_stale_connections_get_a_fresh_connection() {
    for mode in BOTH {
        // The server answers one request per connection and then closes,
        // without announcing it: the pooled connection goes stale.
        let server = Server::start(mode, |c| {
            if let Some(req) = c.read_request() {
                c.respond(200, req.target.as_bytes());
                c.close_notify();
            }
        });
        let cl = client(quick());
        for path in ["/a", "/b", "/c"] {
            let (_, _, body) = cl
                .send(get(&server, path), CancelToken::new())
                .unwrap()
                .into_parts();
            assert_eq!(body.read_complete().unwrap(), path.as_bytes(), "{mode:?}");
            std::thread::sleep(Duration::from_millis(30));
        }
        assert_eq!(server.connections(), 3);
        // A request that says Connection: close is not pooled.
        let server = Server::start(mode, |c| {
            while let Some(_req) = c.read_request() {
                c.respond(200, b"x");
            }
        });
        for _ in 0..2 {
            let req = get(&server, "/").with_header("Connection", "close");
            let (_, _, body) = cl.send(req, CancelToken::new()).unwrap().into_parts();
            body.read_complete().unwrap();
        }
        assert_eq!(server.connections(), 2);
    }
}

#[test]
fn interim_100_responses_are_skipped() {
    let server = Server::start(Mode::Plain, |c| {
        if c.read_request().is_some() {
            c.send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n");
            c.respond(201, b"made");
        }
    });
    let resp = client(quick())
        .send(
            Request::post(&server.url("/"), b"x".to_vec()).unwrap(),
            CancelToken::new(),
        )
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.into_parts().2.read_complete().unwrap(), b"made");
}

#[test]
fn malformed_heads_are_protocol_errors() {
    let server = Server::start(Mode::Plain, |c| {
        if c.read_request().is_some() {
            c.send(b"SSH-2.0-OpenSSH\r\n\r\n");
        }
    });
    let e = client(quick())
        .send(get(&server, "/"), CancelToken::new())
        .unwrap_err();
    assert_eq!(e.kind(), NetErrorKind::Protocol);
}

#[test]
fn tls_requires_a_trusted_certificate() {
    let server = Server::start(Mode::Tls, |c| {
        if c.read_request().is_some() {
            c.respond(200, b"x");
        }
    });
    // Bundled roots only: the test CA is not trusted.
    let cl = smith_net::Client::builder()
        .proxy(smith_net::ProxySettings::none())
        .limits(quick())
        .build()
        .unwrap();
    let e = cl.send(get(&server, "/"), CancelToken::new()).unwrap_err();
    assert_eq!(e.kind(), NetErrorKind::Tls);
    assert!(e.why().to_lowercase().contains("issuer"), "{e}");
    // A PEM bundle works as well as DER.
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        base64_lines(&pki().ca_der)
    );
    let cl = smith_net::Client::builder()
        .proxy(smith_net::ProxySettings::none())
        .without_bundled_roots()
        .add_roots_pem(pem.as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let (_, _, body) = cl
        .send(get(&server, "/"), CancelToken::new())
        .unwrap()
        .into_parts();
    assert_eq!(body.read_complete().unwrap(), b"x");
    assert!(
        smith_net::Client::builder()
            .add_roots_pem(b"nothing here")
            .is_err()
    );
}

fn base64_lines(der: &[u8]) -> String {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    text.as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn connect_and_dns_failures_are_typed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let cl = client(quick());
    let e = cl
        .send(
            Request::get(&format!("http://127.0.0.1:{port}/")).unwrap(),
            CancelToken::new(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), NetErrorKind::Connect);
    assert_eq!(e.host(), format!("127.0.0.1:{port}"));
    let e = cl
        .send(
            Request::get("https://no-such-host.invalid/").unwrap(),
            CancelToken::new(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), NetErrorKind::Dns, "{e}");
    assert_eq!(e.host(), "no-such-host.invalid:443");
}

fn proxied_client(vars: &[(&str, String)]) -> smith_net::Client {
    smith_net::Client::builder()
        .limits(quick())
        .proxy_env(vars.iter().map(|(k, v)| (k.to_string(), v.clone())))
        .add_root_der(pki().ca_der.clone())
        .build()
        .unwrap()
}

#[test]
fn https_goes_through_a_connect_proxy_and_no_proxy_bypasses_it() {
    let server = Server::start(Mode::Tls, |c| {
        while let Some(req) = c.read_request() {
            c.respond(200, req.target.as_bytes());
        }
    });
    let (proxy, log) = start_proxy(None);
    let cl = proxied_client(&[("HTTPS_PROXY", format!("http://{proxy}"))]);
    for path in ["/through", "/again"] {
        let (_, _, body) = cl
            .send(get(&server, path), CancelToken::new())
            .unwrap()
            .into_parts();
        assert_eq!(body.read_complete().unwrap(), path.as_bytes());
    }
    // One tunnel, reused for both requests.
    assert_eq!(
        *log.lines.lock().unwrap(),
        [format!("CONNECT {}", server.addr)]
    );
    assert_eq!(server.connections(), 1);
    // NO_PROXY naming the host sends it directly.
    let cl = proxied_client(&[
        ("HTTPS_PROXY", format!("http://{proxy}")),
        ("NO_PROXY", "example.com,127.0.0.1".to_string()),
    ]);
    let (_, _, body) = cl
        .send(get(&server, "/direct"), CancelToken::new())
        .unwrap()
        .into_parts();
    assert_eq!(body.read_complete().unwrap(), b"/direct");
    assert_eq!(log.lines.lock().unwrap().len(), 1);
    assert_eq!(server.connections(), 2);
}

#[test]
fn http_goes_to_the_proxy_in_absolute_form_with_credentials() {
    let (proxy, log) = start_proxy(Some("Basic dXNlcjpwYXNz".to_string()));
    let cl = proxied_client(&[("http_proxy", format!("http://user:pass@{proxy}"))]);
    let resp = cl
        .send(
            Request::get("http://upstream.example:8080/p?q=1").unwrap(),
            CancelToken::new(),
        )
        .unwrap();
    assert_eq!(resp.into_parts().2.read_complete().unwrap(), b"via proxy");
    assert_eq!(
        *log.lines.lock().unwrap(),
        ["GET http://upstream.example:8080/p?q=1"]
    );
    // Wrong credentials: the proxy's 407 for CONNECT is a typed proxy error.
    let cl = proxied_client(&[("HTTPS_PROXY", format!("http://user:wrong@{proxy}"))]);
    let e = cl
        .send(
            Request::get("https://upstream.example/").unwrap(),
            CancelToken::new(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), NetErrorKind::Proxy);
    assert!(e.why().contains("407"), "{e}");
    assert!(!format!("{e}{e:?}").contains("wrong"), "{e}");
}

#[test]
fn secret_header_values_never_appear_in_errors_or_outcomes() {
    const SECRET: &str = "sk-test-SECRET-4242";
    let with_secret = |url: &str| {
        Request::post(url, b"{}".to_vec())
            .unwrap()
            .with_header("Authorization", format!("Bearer {SECRET}"))
            .with_header("x-api-key", SECRET)
    };
    let mut rendered = Vec::new();
    let mut record = |e: &smith_net::NetError| rendered.push(format!("{e} {e:?}"));

    // Too large.
    let cl = client(Limits {
        max_request_body: 1,
        ..quick()
    });
    record(
        &cl.send(with_secret("http://127.0.0.1:9/"), CancelToken::new())
            .unwrap_err(),
    );
    // Connection refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let cl = client(quick());
    record(
        &cl.send(
            with_secret(&format!("http://127.0.0.1:{port}/")),
            CancelToken::new(),
        )
        .unwrap_err(),
    );
    // Untrusted TLS.
    let tls = Server::start(Mode::Tls, |c| {
        c.read_request();
    });
    let untrusting = smith_net::Client::builder()
        .proxy(smith_net::ProxySettings::none())
        .build()
        .unwrap();
    record(
        &untrusting
            .send(with_secret(&tls.url("/")), CancelToken::new())
            .unwrap_err(),
    );
    // Head timeout, protocol error, header with a line break.
    let slow = Server::start(Mode::Plain, |c| {
        if let Some(req) = c.read_request() {
            if req.target == "/bad" {
                c.send(b"garbage\r\n\r\n");
            } else {
                std::thread::sleep(Duration::from_secs(2));
            }
        }
    });
    let cl = client(Limits {
        head_timeout: Duration::from_millis(100),
        ..quick()
    });
    record(
        &cl.send(with_secret(&slow.url("/")), CancelToken::new())
            .unwrap_err(),
    );
    record(
        &cl.send(with_secret(&slow.url("/bad")), CancelToken::new())
            .unwrap_err(),
    );
    let broken =
        with_secret(&slow.url("/")).with_header("x-other", format!("{SECRET}\r\nInjected: 1"));
    record(&cl.send(broken, CancelToken::new()).unwrap_err());
    // A body failure.
    let gap = Server::start(Mode::Plain, |c| {
        if c.read_request().is_some() {
            c.send(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nab");
            std::thread::sleep(Duration::from_secs(2));
        }
    });
    let cl = client(Limits {
        body_gap_timeout: Duration::from_millis(100),
        ..quick()
    });
    let (_, _, body) = cl
        .send(with_secret(&gap.url("/")), CancelToken::new())
        .unwrap()
        .into_parts();
    let (_, outcome) = body.collect();
    let Outcome::Failed(e) = &outcome else {
        panic!("{outcome:?}")
    };
    record(e);
    rendered.push(format!(
        "{outcome:?} {:?}",
        with_secret(&gap.url("/?key=x"))
    ));

    assert_eq!(rendered.len(), 8);
    for text in &rendered {
        assert!(!text.contains(SECRET), "secret leaked: {text}");
    }
}

#[test]
fn a_reused_connection_closed_without_an_answer_is_retried_only_when_idempotent() {
    for mode in BOTH {
        // The first connection answers one request, then reads the next and
        // closes without answering: the race with an idle close.
        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                if c.index == 1 && req.target != "/first" {
                    c.close_notify();
                    return;
                }
                c.respond(200, req.target.as_bytes());
            }
        });
        let cl = client(quick());
        let (_, _, body) = cl
            .send(get(&server, "/first"), CancelToken::new())
            .unwrap()
            .into_parts();
        body.read_complete().unwrap();
        let (_, _, body) = cl
            .send(get(&server, "/again"), CancelToken::new())
            .unwrap()
            .into_parts();
        assert_eq!(body.read_complete().unwrap(), b"/again", "{mode:?}");
        let seen: Vec<(String, usize)> = server
            .requests()
            .into_iter()
            .map(|r| (r.target, r.connection))
            .collect();
        assert_eq!(
            seen,
            [
                ("/first".into(), 1),
                ("/again".into(), 1),
                ("/again".into(), 2)
            ]
        );

        let server = Server::start(mode, |c| {
            while let Some(req) = c.read_request() {
                if c.index == 1 && req.target != "/first" {
                    c.close_notify();
                    return;
                }
                c.respond(200, req.target.as_bytes());
            }
        });
        let (_, _, body) = cl
            .send(get(&server, "/first"), CancelToken::new())
            .unwrap()
            .into_parts();
        body.read_complete().unwrap();
        let post = Request::post(&server.url("/charge"), b"once".to_vec()).unwrap();
        let e = cl.send(post, CancelToken::new()).unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::ConnectionLost, "{mode:?}: {e}");
        assert!(e.next_action().contains("safe to repeat"), "{e}");
        std::thread::sleep(Duration::from_millis(50));
        let posts = server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count();
        assert_eq!(posts, 1, "{mode:?}: a POST must not be sent twice");
    }
}
