//! The small slice of URL syntax the engine needs: `http` and `https` URLs
//! with a host, an optional port, and a path with query.

use crate::error::{NetError, NetErrorKind};

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme's default port.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    /// `"http"` or `"https"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// A parsed absolute `http`/`https` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    scheme: Scheme,
    /// Lower-cased host; IPv6 literals without brackets.
    host: String,
    port: u16,
    /// Path and query, always starting with `/`; the fragment is dropped.
    target: String,
}

impl Url {
    /// Parses an absolute `http://` or `https://` URL.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::InvalidRequest`] for another scheme, a missing or
    /// malformed host or port, user-info (`user:pass@`), or whitespace and
    /// control characters.
    pub fn parse(input: &str) -> Result<Self, NetError> {
        let bad = |why: &str| {
            NetError::new(
                NetErrorKind::InvalidRequest,
                "(unparsed URL)",
                "the request URL is not a valid http or https URL",
                why.to_string(),
                "pass an absolute URL such as https://host[:port]/path",
            )
        };
        if input.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("it contains whitespace or control characters"));
        }
        let (scheme, rest) = if let Some(r) = strip_prefix_ci(input, "https://") {
            (Scheme::Https, r)
        } else if let Some(r) = strip_prefix_ci(input, "http://") {
            (Scheme::Http, r)
        } else {
            return Err(bad("its scheme is not http:// or https://"));
        };
        let rest = match rest.find('#') {
            Some(i) => &rest[..i],
            None => rest,
        };
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        if authority.contains('@') {
            return Err(bad(
                "it contains user-info (user:password@); credentials belong in headers",
            ));
        }
        let (host, port) =
            split_host_port(authority).ok_or_else(|| bad("its host or port is malformed"))?;
        let port = port.unwrap_or(scheme.default_port());
        let target = if target.is_empty() {
            "/".to_string()
        } else if target.starts_with('?') {
            format!("/{target}")
        } else {
            target.to_string()
        };
        Ok(Self {
            scheme,
            host,
            port,
            target,
        })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The host, lower-cased; IPv6 literals without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (explicit or the scheme's default).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Path and query (the request target in origin form).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// `host:port`, with brackets around IPv6 literals; used in errors.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The `Host` header value: the port is omitted when it is the default.
    pub(crate) fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The absolute form, used as the request target through an HTTP proxy.
    pub(crate) fn absolute(&self) -> String {
        format!(
            "{}://{}{}",
            self.scheme.as_str(),
            self.host_header(),
            self.target
        )
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    if s.len() >= prefix.len()
        && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
    {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

/// Splits `host[:port]` or `[v6][:port]`; returns the lower-cased host.
pub(crate) fn split_host_port(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = &rest[..end];
        host.parse::<std::net::Ipv6Addr>().ok()?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return None,
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty()
        || host.contains(['[', ']', '/', '?', '#', '%'])
        || (!authority.starts_with('[') && host.contains(':'))
    {
        return None;
    }
    let port = match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
        None => None,
    };
    Some((host.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_port_and_target() {
        let u = Url::parse("HTTPS://Api.Example.com:8443/v1/messages?x=1#frag").unwrap();
        assert_eq!(u.scheme(), Scheme::Https);
        assert_eq!(u.host(), "api.example.com");
        assert_eq!(u.port(), 8443);
        assert_eq!(u.target(), "/v1/messages?x=1");
        assert_eq!(u.host_header(), "api.example.com:8443");
        let u = Url::parse("http://127.0.0.1").unwrap();
        assert_eq!(
            (u.port(), u.target(), u.host_header().as_str()),
            (80, "/", "127.0.0.1")
        );
        let u = Url::parse("http://h?q").unwrap();
        assert_eq!(u.target(), "/?q");
        let u = Url::parse("https://[::1]:9/x").unwrap();
        assert_eq!((u.host(), u.authority().as_str()), ("::1", "[::1]:9"));
    }

    #[test]
    fn rejects_bad_urls_without_echoing_them() {
        for bad in [
            "ftp://x/",
            "https://user:hunter2@example.com/",
            "https://:80/",
            "https://host:99999/",
            "https://host:/",
            "https://a b/",
            "https://[zz]/",
            "https://a:b:c/",
        ] {
            let e = Url::parse(bad).unwrap_err();
            assert_eq!(e.kind(), NetErrorKind::InvalidRequest, "{bad}");
            assert!(!e.to_string().contains("hunter2"));
        }
    }
}
