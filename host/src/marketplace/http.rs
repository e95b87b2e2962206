//! Downloads through smith's HTTP engine: `https://` anywhere, plain
//! `http://` only to this machine (a local mirror, the tests). Redirects
//! are followed (at most 5, never from `https://` down to `http://`), and
//! a body that did not arrive complete is never handed on.

use smith_diag::{Diagnostic, Surface};
use smith_net::{CancelToken, Client, Request, Scheme, Url};

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `url` may be fetched.
///
/// # Errors
///
/// `marketplace.bad-url` when it does not parse, is not http(s), or is
/// plain `http://` to another machine.
pub fn check_url(url: &str, origin: &str) -> Result<Url, Diagnostic> {
    let bad = |why: String| {
        Diagnostic::error(
            "marketplace.bad-url",
            format!("the address {url} cannot be used"),
            why,
            "give an https:// address (a git repository, or a .tar.gz, .tgz or .zip archive), `owner/repo` for a GitHub repository, or a local folder",
        )
        .with_value(url)
        .with_surface(Surface::other(origin.to_owned()))
    };
    let parsed = Url::parse(url).map_err(|e| bad(e.what().to_owned()))?;
    if parsed.scheme() == Scheme::Http && !is_loopback(parsed.host()) {
        return Err(bad(format!(
            "plain http:// is allowed only to this machine (localhost, 127.0.0.1, [::1]), and {} is not; anything on the way could change what is installed",
            parsed.host()
        )));
    }
    Ok(parsed)
}

/// Sends `request` (built for each address by `make`) and reads the whole
/// body of a 200 answer, following redirects.
///
/// # Errors
///
/// `marketplace.download` naming the address: a transport failure, a
/// status other than 200, or a body that did not complete (over the
/// engine's 64 MiB bound included).
pub fn fetch(
    client: &Client,
    url: &str,
    origin: &str,
    make: &dyn Fn(&str) -> Result<Request, smith_net::NetError>,
) -> Result<Vec<u8>, Diagnostic> {
    let mut current = url.to_owned();
    let secure = url.starts_with("https://");
    for _ in 0..6 {
        let failed = |what: String, why: String, next: String| {
            Diagnostic::error("marketplace.download", what, why, next)
                .with_surface(Surface::other(origin.to_owned()))
        };
        check_url(&current, origin)?;
        let request = make(&current).map_err(|e| {
            failed(
                format!("{current} cannot be requested"),
                e.why().to_owned(),
                e.next_action().to_owned(),
            )
        })?;
        let response = client.send(request, CancelToken::new()).map_err(|e| {
            failed(
                format!("fetching {current} failed: {}", e.what()),
                e.why().to_owned(),
                e.next_action().to_owned(),
            )
        })?;
        let status = response.status();
        if matches!(status, 301 | 302 | 303 | 307 | 308) {
            let location = response.headers().get("location").unwrap_or("").to_owned();
            let next = join_location(&current, &location);
            if secure && !next.starts_with("https://") {
                return Err(failed(
                    format!("{current} redirects to {next}, which is not https://"),
                    "a redirect from https:// down to plain http:// is never followed".to_owned(),
                    "use the https:// address the source is served at".to_owned(),
                ));
            }
            current = next;
            continue;
        }
        if status != 200 {
            return Err(failed(
                format!(
                    "fetching {current} failed: the server answered {status} {}",
                    response.reason()
                ),
                "the address does not serve what was asked (a missing repository or archive, or one that needs a login)".to_owned(),
                "check the address in a browser; a private repository cannot be fetched".to_owned(),
            ));
        }
        let (_, _, body) = response.into_parts();
        return body.read_complete().map_err(|e| {
            failed(
                format!("the download of {current} did not complete: {}", e.what()),
                format!(
                    "{}; a marketplace or plugin source may weigh at most 64 MiB, and an incomplete one is never installed",
                    e.why()
                ),
                "nothing was changed; run the command again when the connection is stable, or use a smaller source".to_owned(),
            )
        });
    }
    Err(Diagnostic::error(
        "marketplace.download",
        format!("{url} redirects more than 5 times"),
        "a redirect loop, or a chain too long to follow",
        "use the address the source is finally served at",
    )
    .with_surface(Surface::other(origin.to_owned())))
}

/// The absolute address a `Location` header names from `base`.
fn join_location(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    if location.starts_with('/') {
        format!("{}{location}", &base[..host_end])
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|i| *i >= host_end)
            .unwrap_or(host_end);
        format!("{}/{location}", &base[..dir_end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_join_like_a_browser() {
        assert_eq!(
            join_location("https://a.example/x/y.tgz", "/z.tgz"),
            "https://a.example/z.tgz"
        );
        assert_eq!(
            join_location("https://a.example/x/y.tgz", "z.tgz"),
            "https://a.example/x/z.tgz"
        );
        assert_eq!(
            join_location("https://a.example/x", "https://b.example/q"),
            "https://b.example/q"
        );
    }

    #[test]
    fn plain_http_is_only_for_this_machine() {
        assert!(check_url("http://127.0.0.1:8080/a.tgz", "t").is_ok());
        assert!(check_url("http://localhost/a.tgz", "t").is_ok());
        let e = check_url("http://example.com/a.tgz", "t").err();
        assert_eq!(
            e.map(|e| e.code().to_owned()).as_deref(),
            Some("marketplace.bad-url")
        );
    }
}
