//! Downloads through the host's HTTP engine: `https://` anywhere, plain
//! `http://` only to a loopback address (a local mirror, the tests), so
//! that nothing on the network path can even see which release is fetched.
//! The signature, not the transport, is what makes a release trusted.

use smith_diag::{Diagnostic, Surface};
use smith_net::{CancelToken, Client, Request, Scheme, Url};

/// Whether `url` may be fetched: `https://`, or `http://` to `localhost`,
/// `127.0.0.0/8` or `[::1]`.
///
/// # Errors
///
/// `update.bad-url` naming the URL and `origin` (the option or file that
/// gave it) when it does not parse or is plain HTTP to another host.
pub fn check_url(url: &str, origin: &str) -> Result<(), Diagnostic> {
    let bad = |why: String| {
        Diagnostic::error(
            "update.bad-url",
            format!("update.url {url} cannot be used"),
            why,
            "set update.url to the https:// address releases are published at, e.g. `smith config set update.url https://example.com/smith/releases`",
        )
        .with_value(url)
        .with_surface(Surface::other(origin.to_owned()))
    };
    let parsed = Url::parse(url).map_err(|e| bad(e.what().to_owned()))?;
    if parsed.scheme() == Scheme::Http && !is_loopback(parsed.host()) {
        return Err(bad(format!(
            "plain http:// is allowed only to this machine (localhost, 127.0.0.1, [::1]), and {} is not",
            parsed.host()
        )));
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Downloads `url` whole (bounded by the engine's 64 MiB response bound).
///
/// # Errors
///
/// `update.download` naming the URL when the exchange fails, the status is
/// not 200, or the body did not arrive complete (a truncated download is
/// never handed on).
pub fn get(client: &Client, url: &str) -> Result<Vec<u8>, Diagnostic> {
    let failed = |what: String, why: String, next: &str| {
        Diagnostic::error("update.download", what, why, next.to_owned())
            .with_surface(Surface::other(url.to_owned()))
    };
    let request = Request::get(url).map_err(|e| {
        failed(
            format!("{url} cannot be requested"),
            e.why().to_owned(),
            "set update.url to the https:// address releases are published at",
        )
    })?;
    let response = client.send(request, CancelToken::new()).map_err(|e| {
        failed(
            format!("downloading {url} failed: {}", e.what()),
            e.why().to_owned(),
            e.next_action(),
        )
    })?;
    if response.status() != 200 {
        return Err(failed(
            format!(
                "downloading {url} failed: the server answered {} {}",
                response.status(),
                response.reason()
            ),
            "a release file is expected at this address".to_owned(),
            "check update.url (`smith config show update.url --sources`) and that the release is published completely",
        ));
    }
    let (_, _, body) = response.into_parts();
    body.read_complete().map_err(|e| {
        failed(
            format!("the download of {url} did not complete: {}", e.what()),
            format!("{}; an incomplete file is never installed", e.why()),
            "nothing was changed; run the command again when the connection is stable",
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_http_is_only_for_loopback() {
        for ok in [
            "https://example.com/r",
            "http://127.0.0.1:8000/r",
            "http://localhost/r",
            "http://[::1]:9/r",
        ] {
            assert!(super::check_url(ok, "t").is_ok(), "{ok}");
        }
        for bad in ["http://example.com/r", "ftp://x/r", "example.com"] {
            assert_eq!(
                super::check_url(bad, "t").unwrap_err().code(),
                "update.bad-url",
                "{bad}"
            );
        }
    }
}
