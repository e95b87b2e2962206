//! Which addresses a request may connect to, checked after DNS resolution.
//!
//! Most requests (providers, MCP servers, plugins with a `net` grant) go
//! wherever their URL's host resolves: the host was named by the user or by
//! a plugin manifest the user installed. A request whose URL came from the
//! model (smith/web's `web_fetch`) is different: a prompt could point it at
//! `http://127.0.0.1:8080/admin`, at a router's page on the private network
//! or at a cloud metadata service (`169.254.169.254`). Such a request carries
//! [`AddressPolicy::PublicOnly`]: the engine resolves the host itself,
//! refuses the request unless **every** resolved address is a public
//! internet address, and connects to the very addresses it checked, so a
//! second resolution cannot hand it another address (no DNS-rebinding
//! window). Hosts the user lists in the policy's allow list skip the check.
//!
//! Through an HTTP(S) proxy the proxy resolves and connects, so the engine
//! cannot pin the address it checked: it resolves the target itself, refuses
//! the request when that finds a non-public address, and only then asks the
//! proxy. What remains is the proxy's own resolution (and what the proxy can
//! reach); a proxy that must not reach private addresses enforces that
//! itself. A target that does not resolve locally is refused under the
//! policy rather than sent blind to the proxy.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use crate::error::{NetError, NetErrorKind};
use crate::url::Url;

/// Host names of cloud metadata services, refused by name under
/// [`AddressPolicy::PublicOnly`] before any resolution (their addresses
/// are link-local and refused anyway; the names are refused in case a
/// resolver maps them elsewhere).
pub const METADATA_NAMES: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.com",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Which addresses a request may connect to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AddressPolicy {
    /// Wherever the host resolves (the default).
    #[default]
    Any,
    /// Public internet addresses only, unless the host is allowed.
    PublicOnly(PublicOnly),
}

/// The allow list of [`AddressPolicy::PublicOnly`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublicOnly {
    /// Hosts that skip the check: `host` (any port) or `host:port`
    /// (`[v6]:port` for IPv6 literals), compared without case.
    pub allow_hosts: Vec<String>,
    /// Where the allow list is set, named in refusals so the user knows
    /// what to change (for example the configuration key `web.allow-hosts`).
    pub setting: String,
}

impl PublicOnly {
    /// Whether `url`'s host (or host and port) is on the allow list.
    pub fn allows(&self, url: &Url) -> bool {
        let host = url.host();
        let authority = url.authority();
        self.allow_hosts.iter().any(|entry| {
            let entry = entry.trim();
            let bare = entry
                .strip_prefix('[')
                .and_then(|e| e.strip_suffix(']'))
                .unwrap_or(entry);
            bare.eq_ignore_ascii_case(host) || entry.eq_ignore_ascii_case(&authority)
        })
    }

    /// Refuses a metadata service's name before it is resolved.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::AddressRefused`] naming the URL and the setting.
    pub fn check_name(&self, url: &Url) -> Result<(), NetError> {
        let host = url.host().trim_end_matches('.');
        if METADATA_NAMES.iter().any(|m| m.eq_ignore_ascii_case(host)) {
            return Err(self.refusal(
                url,
                format!("{host} is the name of a cloud metadata service"),
            ));
        }
        Ok(())
    }

    /// Checks every address `url`'s host resolved to.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::AddressRefused`] naming the URL, the first refused
    /// address, why it is refused and the setting that would allow it.
    pub fn check_addrs(&self, url: &Url, addrs: &[SocketAddr]) -> Result<(), NetError> {
        for addr in addrs {
            if let Some(why) = non_public(addr.ip()) {
                return Err(self.refusal(
                    url,
                    format!("{} resolves to {}, {why}", url.host(), addr.ip()),
                ));
            }
        }
        Ok(())
    }

    fn refusal(&self, url: &Url, what: String) -> NetError {
        let shown = shown_url(url);
        NetError::new(
            NetErrorKind::AddressRefused,
            url.authority(),
            format!("refused to connect to {shown}: {what}"),
            "this request may reach public internet addresses only (checked after DNS resolution), so that a URL cannot reach services on this machine, its private network or a cloud metadata service",
            format!(
                "if {host} is meant to be reachable, add `{host}` or `{authority}` to `{setting}` (a comma-separated list of hosts)",
                host = url.host(),
                authority = url.authority(),
                setting = self.setting,
            ),
        )
    }
}

/// `scheme://authority/path` without the query, which may carry keys.
fn shown_url(url: &Url) -> String {
    let path = url.target().split('?').next().unwrap_or("/");
    format!("{}://{}{path}", url.scheme().as_str(), url.authority())
}

/// Why `ip` is not a public internet address, or `None` when it is.
///
/// Refused: unspecified (`0.0.0.0/8`, `::`), loopback (`127.0.0.0/8`,
/// `::1`), private (`10/8`, `172.16/12`, `192.168/16`), shared address
/// space (CGNAT, `100.64/10`), link-local (`169.254/16` with the metadata
/// address `169.254.169.254`, `fe80::/10`), IETF protocol assignments
/// (`192.0.0/24`), benchmarking (`198.18/15`), documentation ranges,
/// multicast, reserved (`240/4`) and broadcast, unique local (`fc00::/7`),
/// site-local (`fec0::/10`), and the IPv6 forms that carry an IPv4 address
/// (IPv4-mapped `::ffff:0:0/96`, IPv4-compatible `::/96`, NAT64
/// `64:ff9b::/96`, 6to4 `2002::/16`) when the address they carry is refused.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => {
            "the link-local address of cloud metadata services"
        }
        (0, _, _) => "an unspecified (\"this network\") address",
        (127, _, _) => "a loopback address (this machine)",
        (10, _, _) => "a private address (10.0.0.0/8)",
        (172, 16..=31, _) => "a private address (172.16.0.0/12)",
        (192, 168, _) => "a private address (192.168.0.0/16)",
        (100, 64..=127, _) => "a shared address (carrier-grade NAT, 100.64.0.0/10)",
        (169, 254, _) => "a link-local address (169.254.0.0/16)",
        (192, 0, 0) => "an IETF protocol assignment address (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address (198.18.0.0/15)",
        (224..=239, _, _) => "a multicast address",
        _ if ip == Ipv4Addr::BROADCAST => "the broadcast address",
        (240..=255, _, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        return Some("the unspecified address (::)");
    }
    if ip.is_loopback() {
        return Some("a loopback address (this machine)");
    }
    // Forms that carry an IPv4 address: judged by the address they carry.
    let carried = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    let embedded = match segments {
        [0, 0, 0, 0, 0, 0xffff, h, l] => Some(("an IPv4-mapped form of ", carried(h, l))),
        [0, 0, 0, 0, 0, 0, h, l] => Some(("an IPv4-compatible form of ", carried(h, l))),
        [0x64, 0xff9b, 0, 0, 0, 0, h, l] => Some(("a NAT64 form of ", carried(h, l))),
        [0x2002, h, l, ..] => Some(("a 6to4 form of ", carried(h, l))),
        _ => None,
    };
    if let Some((_, v4)) = embedded {
        return non_public_v4(v4).map(|_| "an IPv6 form of a non-public IPv4 address");
    }
    Some(match segments[0] {
        s if s & 0xfe00 == 0xfc00 => "a unique local address (fc00::/7)",
        s if s & 0xffc0 == 0xfe80 => "a link-local address (fe80::/10)",
        s if s & 0xffc0 == 0xfec0 => "a site-local address (fec0::/10)",
        s if s & 0xff00 == 0xff00 => "a multicast address (ff00::/8)",
        0x2001 if segments[1] == 0x0db8 => "a documentation address (2001:db8::/32)",
        _ => return None,
    })
}

/// Turns a host name and port into addresses. The engine resolves through
/// one of these so that tests can make a public-looking name resolve to a
/// private address without touching the system's resolver.
pub trait Resolve: Send + Sync + std::fmt::Debug {
    /// The addresses of `host:port`.
    ///
    /// # Errors
    ///
    /// The resolver's error when the name does not resolve.
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo` through the standard library).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok((host, port).to_socket_addrs()?.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Option<&'static str> {
        non_public(text.parse().unwrap())
    }

    #[test]
    fn every_non_public_ipv4_range_is_refused_at_both_ends() {
        for addr in [
            "0.0.0.0",
            "0.255.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "192.168.255.255",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.0.1",
            "169.254.169.254",
            "169.254.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.255",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(refused(addr).is_some(), "{addr} should be refused");
        }
    }

    #[test]
    fn public_ipv4_addresses_just_outside_the_ranges_pass() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "93.184.216.34",
        ] {
            assert_eq!(refused(addr), None, "{addr} should pass");
        }
    }

    #[test]
    fn each_refusal_says_which_range() {
        assert_eq!(
            refused("127.0.0.1"),
            Some("a loopback address (this machine)")
        );
        assert_eq!(refused("10.1.2.3"), Some("a private address (10.0.0.0/8)"));
        assert_eq!(
            refused("169.254.169.254"),
            Some("the link-local address of cloud metadata services")
        );
        assert_eq!(
            refused("100.100.100.100"),
            Some("a shared address (carrier-grade NAT, 100.64.0.0/10)")
        );
        assert_eq!(refused("::1"), Some("a loopback address (this machine)"));
        assert_eq!(
            refused("fd00::1"),
            Some("a unique local address (fc00::/7)")
        );
    }

    #[test]
    fn every_non_public_ipv6_range_is_refused() {
        for addr in [
            "::",
            "::1",
            "fc00::1",
            "fdff:ffff::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(refused(addr).is_some(), "{addr} should be refused");
        }
        for addr in ["2606:4700:4700::1111", "2001:4860:4860::8888", "fe7f::1"] {
            assert_eq!(refused(addr), None, "{addr} should pass");
        }
    }

    #[test]
    fn ipv6_forms_carrying_a_refused_ipv4_address_are_refused() {
        for addr in [
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:172.16.0.1",
            "::ffff:192.168.1.1",
            "::ffff:169.254.169.254",
            "::ffff:100.64.0.1",
            "::ffff:0.0.0.0",
            "::ffff:224.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
        ] {
            assert_eq!(
                refused(addr),
                Some("an IPv6 form of a non-public IPv4 address"),
                "{addr} should be refused"
            );
        }
        for addr in ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"] {
            assert_eq!(refused(addr), None, "{addr} should pass");
        }
    }

    fn policy(allow: &[&str]) -> PublicOnly {
        PublicOnly {
            allow_hosts: allow.iter().map(|s| (*s).to_owned()).collect(),
            setting: "web.allow-hosts".to_owned(),
        }
    }

    #[test]
    fn the_allow_list_matches_a_host_or_a_host_and_port() {
        let url = |u: &str| Url::parse(u).unwrap();
        let p = policy(&["localhost:8080", "Intranet.Example", "[::1]:9000"]);
        assert!(p.allows(&url("http://localhost:8080/x")));
        assert!(!p.allows(&url("http://localhost:8081/x")));
        assert!(p.allows(&url("https://intranet.example/")));
        assert!(p.allows(&url("http://intranet.example:81/")));
        assert!(p.allows(&url("http://[::1]:9000/")));
        assert!(!p.allows(&url("http://[::1]:9001/")));
        assert!(policy(&["::1"]).allows(&url("http://[::1]:1/")));
        assert!(!policy(&[]).allows(&url("http://localhost/")));
    }

    #[test]
    fn a_refusal_names_the_url_the_address_why_and_the_setting_but_not_the_query() {
        let url = Url::parse("http://public.example:8080/a/b?key=s3cret").unwrap();
        let addrs = [
            "93.184.216.34:8080".parse().unwrap(),
            "10.0.0.7:8080".parse().unwrap(),
        ];
        let err = policy(&[]).check_addrs(&url, &addrs).unwrap_err();
        assert_eq!(err.kind(), NetErrorKind::AddressRefused);
        assert_eq!(
            err.what(),
            "refused to connect to http://public.example:8080/a/b: public.example resolves to 10.0.0.7, a private address (10.0.0.0/8)"
        );
        assert!(err.next_action().contains("`web.allow-hosts`"), "{err}");
        assert!(err.next_action().contains("`public.example:8080`"), "{err}");
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert!(policy(&[]).check_addrs(&url, &addrs[..1]).is_ok());
    }

    #[test]
    fn metadata_names_are_refused_before_resolution() {
        let url = Url::parse("http://metadata.google.internal/computeMetadata/v1/").unwrap();
        let err = policy(&[]).check_name(&url).unwrap_err();
        assert_eq!(err.kind(), NetErrorKind::AddressRefused);
        assert!(err.what().contains("cloud metadata service"), "{err}");
        let url = Url::parse("http://metadata.example.com/").unwrap();
        assert!(policy(&[]).check_name(&url).is_ok());
    }
}
