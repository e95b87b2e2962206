//! The public-only address policy against local servers, with a resolver
//! that makes public-looking names resolve to private addresses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use smith_net::{
    AddressPolicy, CancelToken, Client, NetErrorKind, ProxySettings, PublicOnly, Request, Resolve,
};

use crate::server::{Mode, Server, pki, start_proxy};

/// Resolves `name` to `addr` (any port: the request's) and counts calls.
#[derive(Debug)]
struct Fixed {
    name: &'static str,
    addr: std::net::IpAddr,
    calls: AtomicUsize,
}

impl Resolve for Fixed {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if host == self.name {
            return Ok(vec![SocketAddr::new(self.addr, port)]);
        }
        smith_net::SystemResolver.resolve(host, port)
    }
}

fn resolver(name: &'static str, addr: &str) -> Arc<Fixed> {
    Arc::new(Fixed {
        name,
        addr: addr.parse().unwrap(),
        calls: AtomicUsize::new(0),
    })
}

fn client_with(resolver: Arc<Fixed>, proxy: ProxySettings) -> Client {
    Client::builder()
        .proxy(proxy)
        .add_root_der(pki().ca_der.clone())
        .resolver(resolver)
        .build()
        .unwrap()
}

fn public_only(allow: &[&str]) -> AddressPolicy {
    AddressPolicy::PublicOnly(PublicOnly {
        allow_hosts: allow.iter().map(|s| (*s).to_owned()).collect(),
        setting: "web.allow-hosts".to_owned(),
    })
}

fn echo() -> Server {
    Server::start(Mode::Plain, |c| {
        while let Some(req) = c.read_request() {
            c.respond(200, req.target.as_bytes());
        }
    })
}

#[test]
fn a_public_looking_name_resolving_to_a_private_address_is_refused_after_resolution() {
    let r = resolver("www.public.example", "10.20.30.40");
    let client = client_with(Arc::clone(&r), ProxySettings::none());
    let request = Request::get("http://www.public.example/page?token=abc")
        .unwrap()
        .with_address_policy(public_only(&[]));
    let err = client.send(request, CancelToken::new()).unwrap_err();
    assert_eq!(err.kind(), NetErrorKind::AddressRefused);
    assert_eq!(
        err.what(),
        "refused to connect to http://www.public.example:80/page: www.public.example resolves to 10.20.30.40, a private address (10.0.0.0/8)"
    );
    assert!(err.next_action().contains("`web.allow-hosts`"), "{err}");
    assert!(!err.to_string().contains("token=abc"), "{err}");
    assert_eq!(r.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn the_check_covers_the_address_connected_to_and_the_allow_list_lets_a_host_through() {
    let server = echo();
    let port = server.addr.port();
    let r = resolver("intranet.example", "127.0.0.1");
    let client = client_with(Arc::clone(&r), ProxySettings::none());
    let url = format!("http://intranet.example:{port}/x");
    let refused = client
        .send(
            Request::get(&url)
                .unwrap()
                .with_address_policy(public_only(&[])),
            CancelToken::new(),
        )
        .unwrap_err();
    assert_eq!(refused.kind(), NetErrorKind::AddressRefused);
    assert!(refused.what().contains("a loopback address"), "{refused}");
    assert_eq!(server.connections(), 0, "nothing was sent");
    // Named in the allow list (host and port, or host alone), it goes
    // through, resolving once.
    for allow in [
        format!("intranet.example:{port}"),
        "INTRANET.example".to_owned(),
    ] {
        let client = client_with(
            resolver("intranet.example", "127.0.0.1"),
            ProxySettings::none(),
        );
        let response = client
            .send(
                Request::get(&url)
                    .unwrap()
                    .with_address_policy(public_only(&[&allow])),
                CancelToken::new(),
            )
            .unwrap();
        assert_eq!(response.into_parts().2.read_complete().unwrap(), b"/x");
    }
    // Another port of the same host is not allowed by `host:port`.
    let err = client
        .send(
            Request::get(&format!("http://intranet.example:{}/x", port + 1))
                .unwrap()
                .with_address_policy(public_only(&[&format!("intranet.example:{port}")])),
            CancelToken::new(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), NetErrorKind::AddressRefused);
}

#[test]
fn a_kept_alive_connection_opened_without_the_check_is_not_reused_by_a_checked_request() {
    let server = echo();
    let r = resolver("cache.example", "127.0.0.1");
    let client = client_with(Arc::clone(&r), ProxySettings::none());
    let url = format!("http://cache.example:{}/a", server.addr.port());
    let response = client
        .send(Request::get(&url).unwrap(), CancelToken::new())
        .unwrap();
    assert_eq!(response.into_parts().2.read_complete().unwrap(), b"/a");
    assert_eq!(client.idle_connections(), 1);
    let err = client
        .send(
            Request::get(&url)
                .unwrap()
                .with_address_policy(public_only(&[])),
            CancelToken::new(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), NetErrorKind::AddressRefused);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn literal_addresses_ipv4_mapped_forms_and_metadata_names_are_refused() {
    let client = client_with(resolver("unused.example", "8.8.8.8"), ProxySettings::none());
    for url in [
        "http://127.0.0.1:9/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/",
        "http://[::ffff:127.0.0.1]:9/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://0.0.0.0:9/",
        "http://metadata.google.internal/computeMetadata/v1/",
    ] {
        let err = client
            .send(
                Request::get(url)
                    .unwrap()
                    .with_address_policy(public_only(&[])),
                CancelToken::new(),
            )
            .unwrap_err();
        assert_eq!(err.kind(), NetErrorKind::AddressRefused, "{url}: {err}");
    }
}

#[test]
fn through_a_proxy_the_target_is_checked_before_the_proxy_is_asked() {
    let (proxy, log) = start_proxy(None);
    let settings = ProxySettings::from_vars([
        ("HTTP_PROXY", format!("http://{proxy}")),
        ("HTTPS_PROXY", format!("http://{proxy}")),
    ])
    .unwrap();
    let client = client_with(resolver("inside.example", "192.168.1.10"), settings);
    for url in ["http://inside.example/p", "https://inside.example/p"] {
        let err = client
            .send(
                Request::get(url)
                    .unwrap()
                    .with_address_policy(public_only(&[])),
                CancelToken::new(),
            )
            .unwrap_err();
        assert_eq!(err.kind(), NetErrorKind::AddressRefused, "{url}: {err}");
        assert!(err.what().contains("192.168.1.10"), "{err}");
    }
    assert!(log.lines.lock().unwrap().is_empty());
    // Allowed, the request goes to the proxy as before.
    let response = client
        .send(
            Request::get("http://inside.example/p")
                .unwrap()
                .with_address_policy(public_only(&["inside.example"])),
            CancelToken::new(),
        )
        .unwrap();
    assert_eq!(
        response.into_parts().2.read_complete().unwrap(),
        b"via proxy"
    );
}
