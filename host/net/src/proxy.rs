//! Proxy selection from `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
//! `NO_PROXY`.
//!
//! The variables are read once, when the client is built, from the process
//! environment or from an injected list. `https` targets go through a
//! `CONNECT` tunnel; `http` targets are sent to the proxy in absolute form.
//! Only `http://` proxies are supported.

use std::net::IpAddr;

use base64::Engine as _;

use crate::error::{NetError, NetErrorKind};
use crate::url::{Scheme, Url, split_host_port};

/// One proxy server.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyServer {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `Basic <base64>` for `Proxy-Authorization`, from the URL's user-info.
    pub(crate) authorization: Option<String>,
    /// The variable it came from, for messages.
    pub(crate) source: String,
}

impl std::fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyServer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("has_credentials", &self.authorization.is_some())
            .field("source", &self.source)
            .finish()
    }
}

impl ProxyServer {
    /// `host:port` of the proxy.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The variable the proxy was configured by.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// Which proxy, if any, each request goes through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxySettings {
    https: Option<ProxyServer>,
    http: Option<ProxyServer>,
    no_proxy: Vec<NoProxyEntry>,
    no_proxy_all: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum NoProxyEntry {
    /// A domain: matches itself and its subdomains.
    Domain(String, Option<u16>),
    /// An address, or a network in CIDR form.
    Net(IpAddr, u8, Option<u16>),
}

impl ProxySettings {
    /// No proxy for any request.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads the process environment.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::Proxy`] when a proxy variable is set but unusable.
    pub fn from_process_env() -> Result<Self, NetError> {
        Self::from_vars(std::env::vars())
    }

    /// Reads proxy settings from `(name, value)` pairs, as from the
    /// environment. Lower-case names win over upper-case ones; `ALL_PROXY`
    /// applies when the scheme's own variable is unset; empty values count as
    /// unset.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::Proxy`] naming the variable when a proxy URL is not
    /// `http://host[:port]` (credentials are never shown).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Self, NetError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut found: Vec<(String, String)> = Vec::new();
        for (k, v) in vars {
            let k = k.as_ref();
            if matches!(
                k,
                "https_proxy"
                    | "HTTPS_PROXY"
                    | "http_proxy"
                    | "HTTP_PROXY"
                    | "all_proxy"
                    | "ALL_PROXY"
                    | "no_proxy"
                    | "NO_PROXY"
            ) && !v.as_ref().trim().is_empty()
            {
                found.push((k.to_string(), v.as_ref().trim().to_string()));
            }
        }
        let pick = |names: [&str; 2]| -> Option<(String, String)> {
            names
                .iter()
                .find_map(|n| found.iter().find(|(k, _)| k == n).cloned())
        };
        let all = pick(["all_proxy", "ALL_PROXY"]);
        let https = pick(["https_proxy", "HTTPS_PROXY"]).or_else(|| all.clone());
        let http = pick(["http_proxy", "HTTP_PROXY"]).or(all);
        let mut settings = Self {
            https: https.map(|(k, v)| parse_proxy(&k, &v)).transpose()?,
            http: http.map(|(k, v)| parse_proxy(&k, &v)).transpose()?,
            ..Self::default()
        };
        if let Some((_, list)) = pick(["no_proxy", "NO_PROXY"]) {
            for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                if entry == "*" {
                    settings.no_proxy_all = true;
                } else if let Some(e) = parse_no_proxy(entry) {
                    settings.no_proxy.push(e);
                }
            }
        }
        Ok(settings)
    }

    /// The proxy for `url`, or `None` to connect directly.
    pub fn proxy_for(&self, url: &Url) -> Option<&ProxyServer> {
        let proxy = match url.scheme() {
            Scheme::Https => self.https.as_ref(),
            Scheme::Http => self.http.as_ref(),
        }?;
        if self.bypass(url.host(), url.port()) {
            None
        } else {
            Some(proxy)
        }
    }

    fn bypass(&self, host: &str, port: u16) -> bool {
        if self.no_proxy_all {
            return true;
        }
        let ip = host.parse::<IpAddr>().ok();
        self.no_proxy.iter().any(|e| match e {
            NoProxyEntry::Domain(d, p) => {
                p.is_none_or(|p| p == port)
                    && (host == d
                        || (host.len() > d.len()
                            && host.ends_with(d.as_str())
                            && host.as_bytes()[host.len() - d.len() - 1] == b'.'))
            }
            NoProxyEntry::Net(net, bits, p) => {
                p.is_none_or(|p| p == port) && ip.is_some_and(|ip| in_network(ip, *net, *bits))
            }
        })
    }
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(bits.min(32)))
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(bits.min(128)))
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn parse_no_proxy(entry: &str) -> Option<NoProxyEntry> {
    let entry = entry.to_ascii_lowercase();
    if let Some((addr, bits)) = entry.split_once('/') {
        let ip = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok()?;
        let bits = bits.parse::<u8>().ok()?;
        return Some(NoProxyEntry::Net(ip, bits, None));
    }
    if let Ok(ip) = entry.parse::<IpAddr>() {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        return Some(NoProxyEntry::Net(ip, bits, None));
    }
    let (host, port) = split_host_port(&entry)?;
    if let Ok(ip) = host.parse::<IpAddr>() {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        return Some(NoProxyEntry::Net(ip, bits, port));
    }
    let host = host
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .to_string();
    (!host.is_empty()).then_some(NoProxyEntry::Domain(host, port))
}

fn parse_proxy(var: &str, value: &str) -> Result<ProxyServer, NetError> {
    let bad = |why: String| {
        NetError::new(
            NetErrorKind::Proxy,
            "(proxy)",
            format!("the proxy configured by {var} cannot be used"),
            why,
            format!(
                "set {var} to http://host:port (or http://user:password@host:port), or unset it"
            ),
        )
    };
    let rest = if let Some(r) = strip_ci(value, "http://") {
        r
    } else if value.contains("://") {
        let scheme = value.split("://").next().unwrap_or_default();
        return Err(bad(format!(
            "its scheme {scheme:?} is not supported; only http:// proxies are"
        )));
    } else {
        value
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = split_host_port(hostport)
        .ok_or_else(|| bad("its host or port is malformed".to_string()))?;
    let authorization = userinfo.map(|u| {
        let decoded = percent_decode(u);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(decoded)
        )
    });
    Ok(ProxyServer {
        host,
        port: port.unwrap_or(80),
        authorization,
        source: var.to_string(),
    })
}

fn strip_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len()
        && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
    .then(|| &s[prefix.len()..])
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> ProxySettings {
        ProxySettings::from_vars(vars.iter().copied()).unwrap()
    }

    fn via(s: &ProxySettings, url: &str) -> Option<String> {
        s.proxy_for(&Url::parse(url).unwrap())
            .map(ProxyServer::authority)
    }

    #[test]
    fn scheme_variables_and_all_proxy() {
        let s = settings(&[("HTTPS_PROXY", "http://p1:3128"), ("ALL_PROXY", "p2:8080")]);
        assert_eq!(via(&s, "https://x/").as_deref(), Some("p1:3128"));
        assert_eq!(via(&s, "http://x/").as_deref(), Some("p2:8080"));
        let s = settings(&[
            ("https_proxy", "http://lower:1"),
            ("HTTPS_PROXY", "http://upper:2"),
        ]);
        assert_eq!(via(&s, "https://x/").as_deref(), Some("lower:1"));
        assert_eq!(via(&settings(&[]), "https://x/"), None);
        assert_eq!(via(&settings(&[("HTTPS_PROXY", "  ")]), "https://x/"), None);
    }

    #[test]
    fn no_proxy_domains_ports_addresses_and_networks() {
        let s = settings(&[
            ("HTTPS_PROXY", "http://p:1"),
            (
                "NO_PROXY",
                "example.com, .internal ,10.0.0.0/8,::1,localhost:8443,*.wild.org",
            ),
        ]);
        assert_eq!(via(&s, "https://example.com/"), None);
        assert_eq!(via(&s, "https://api.example.com/"), None);
        assert!(via(&s, "https://notexample.com/").is_some());
        assert_eq!(via(&s, "https://a.b.internal/"), None);
        assert_eq!(via(&s, "https://10.2.3.4/"), None);
        assert!(via(&s, "https://11.2.3.4/").is_some());
        assert_eq!(via(&s, "https://[::1]/"), None);
        assert_eq!(via(&s, "https://localhost:8443/"), None);
        assert!(via(&s, "https://localhost/").is_some());
        assert_eq!(via(&s, "https://x.wild.org/"), None);
        let all = settings(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "*")]);
        assert_eq!(via(&all, "https://anything/"), None);
    }

    #[test]
    fn credentials_become_basic_auth_and_never_show() {
        let s = settings(&[("HTTPS_PROXY", "http://us%40er:hunter2@proxy.corp:8080/")]);
        let p = s.https.as_ref().unwrap();
        assert_eq!(p.authority(), "proxy.corp:8080");
        let expect = base64::engine::general_purpose::STANDARD.encode("us@er:hunter2");
        assert_eq!(
            p.authorization.as_deref(),
            Some(format!("Basic {expect}").as_str())
        );
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn unsupported_proxy_is_an_error_naming_the_variable_not_the_secret() {
        let e =
            ProxySettings::from_vars([("HTTPS_PROXY", "socks5://u:hunter2@p:1080")]).unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::Proxy);
        assert!(e.to_string().contains("HTTPS_PROXY"));
        assert!(!format!("{e}{e:?}").contains("hunter2"));
        let e = ProxySettings::from_vars([("HTTP_PROXY", "http://p:notaport")]).unwrap_err();
        assert!(e.what().contains("HTTP_PROXY"));
    }
}
