//! Connections: TCP, proxy tunnels, TLS, bounded waits, and the keep-alive
//! pool.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use crate::error::{NetError, NetErrorKind};
use crate::http1::{HeadParse, parse_head};
use crate::limits::Limits;
use crate::policy::{AddressPolicy, PublicOnly, Resolve};
use crate::proxy::ProxyServer;
use crate::url::{Scheme, Url};
use smith_contract::CancelToken;

/// A plain or TLS connection.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(s) => s,
            Self::Tls(s) => &s.sock,
        }
    }

    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, Self::Tls(_))
    }

    /// Whether an idle pooled connection still looks usable: nothing to read
    /// and not closed by the peer.
    fn healthy(&self) -> bool {
        let tcp = self.tcp();
        if tcp.set_nonblocking(true).is_err() {
            return false;
        }
        let mut probe = [0u8; 1];
        let ok = matches!(tcp.peek(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        ok && tcp.set_nonblocking(false).is_ok()
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf),
            Self::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.write(buf),
            Self::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.flush(),
            Self::Tls(s) => s.flush(),
        }
    }
}

/// Why a bounded wait ended without data.
#[derive(Debug)]
pub(crate) enum WaitError {
    Deadline,
    Cancelled,
    Io(io::Error),
}

/// Reads once, waking every `poll` to check `stop` and `deadline`.
pub(crate) fn read_some(
    stream: &mut Stream,
    buf: &mut [u8],
    deadline: Instant,
    poll: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<usize, WaitError> {
    loop {
        if stop() {
            return Err(WaitError::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(WaitError::Deadline);
        }
        let wait = (deadline - now).min(poll).max(Duration::from_millis(1));
        stream
            .tcp()
            .set_read_timeout(Some(wait))
            .map_err(WaitError::Io)?;
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(WaitError::Io(e)),
        }
    }
}

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Writes all of `parts`, bounded by `deadline`.
pub(crate) fn write_all(
    stream: &mut Stream,
    parts: &[&[u8]],
    deadline: Instant,
) -> Result<(), WaitError> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(WaitError::Deadline);
    }
    stream
        .tcp()
        .set_write_timeout(Some(remaining))
        .map_err(WaitError::Io)?;
    let result = parts
        .iter()
        .try_for_each(|p| stream.write_all(p))
        .and_then(|()| stream.flush());
    match result {
        Ok(()) => Ok(()),
        Err(e) if is_timeout(&e) => Err(WaitError::Deadline),
        Err(e) => Err(WaitError::Io(e)),
    }
}

/// Describes an I/O error, unwrapping a TLS error when there is one.
pub(crate) fn describe_io(e: &io::Error) -> (bool, String) {
    if let Some(inner) = e.get_ref()
        && let Some(tls) = inner.downcast_ref::<rustls::Error>()
    {
        return (true, tls.to_string());
    }
    (false, e.to_string())
}

/// Everything needed to open a connection.
pub(crate) struct Dialer<'a> {
    pub(crate) limits: &'a Limits,
    pub(crate) tls: &'a Arc<rustls::ClientConfig>,
    pub(crate) deadline: Instant,
    pub(crate) cancel: &'a CancelToken,
    pub(crate) resolver: &'a dyn Resolve,
    pub(crate) policy: &'a AddressPolicy,
}

impl Dialer<'_> {
    fn timeout_head(&self, host: &str, during: &str) -> NetError {
        NetError::new(
            NetErrorKind::TimeoutHead,
            host,
            format!(
                "no response head within {:?} ({during})",
                self.limits.head_timeout
            ),
            "the head bound counts from the start of the exchange, including connect and TLS",
            "retry later, check the network, or raise the head timeout (`net.head-timeout-s`)",
        )
    }

    /// Resolves `host:port` (the proxy's when `proxy` is set) with the
    /// client's resolver.
    fn resolve(
        &self,
        host: &str,
        port: u16,
        err_host: &str,
        proxy: Option<&ProxyServer>,
    ) -> Result<Vec<SocketAddr>, NetError> {
        let dns_kind = match proxy {
            Some(_) => NetErrorKind::Proxy,
            None => NetErrorKind::Dns,
        };
        let peer = match proxy {
            Some(p) => format!("the proxy {} (from {})", p.authority(), p.source()),
            None => format!("{host}:{port}"),
        };
        let addrs: Vec<SocketAddr> = self.resolver.resolve(host, port).map_err(|e| {
            NetError::new(
                dns_kind,
                err_host,
                format!("could not resolve {peer}"),
                e.to_string(),
                "check the host name and your DNS or network connection",
            )
        })?;
        if addrs.is_empty() {
            return Err(NetError::new(
                dns_kind,
                err_host,
                format!("could not resolve {peer}"),
                "the resolver returned no addresses",
                "check the host name and your DNS or network connection",
            ));
        }
        Ok(addrs)
    }

    /// Connects to one of `addrs` (the addresses of `host:port`, or of
    /// the proxy when `proxy` is set); `err_host` names the peer in errors.
    fn tcp(
        &self,
        addrs: Vec<SocketAddr>,
        (host, port): (&str, u16),
        err_host: &str,
        proxy: Option<&ProxyServer>,
    ) -> Result<TcpStream, NetError> {
        let connect_kind = match proxy {
            Some(_) => NetErrorKind::Proxy,
            None => NetErrorKind::Connect,
        };
        let peer = match proxy {
            Some(p) => format!("the proxy {} (from {})", p.authority(), p.source()),
            None => format!("{host}:{port}"),
        };
        let mut last = String::new();
        for addr in addrs {
            if self.cancel.is_cancelled() {
                return Err(NetError::cancelled(err_host));
            }
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(self.timeout_head(err_host, "while connecting"));
            }
            let bound = remaining.min(self.limits.connect_timeout);
            match TcpStream::connect_timeout(&addr, bound) {
                Ok(s) => {
                    // Small request heads should not wait for Nagle.
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e) if is_timeout(&e) && bound == self.limits.connect_timeout => {
                    last = format!(
                        "{addr}: no connection within the connect timeout of {:?} (`net.connect-timeout-s`)",
                        self.limits.connect_timeout
                    );
                }
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        Err(NetError::new(
            connect_kind,
            err_host,
            format!("could not connect to {peer}"),
            last,
            "check that the server is running and reachable, and any firewall or proxy settings",
        ))
    }

    /// Opens a connection for `url`, directly or through `proxy`.
    pub(crate) fn open(&self, url: &Url, proxy: Option<&ProxyServer>) -> Result<Stream, NetError> {
        let host = url.authority();
        // The address check, unless the host is allowed: by name first,
        // then every resolved address. The connection goes to the very
        // addresses checked here (no second resolution), except through a
        // proxy, which resolves the host again itself (docs/net.md).
        let guard: Option<&PublicOnly> = match self.policy {
            AddressPolicy::PublicOnly(policy) if !policy.allows(url) => Some(policy),
            _ => None,
        };
        if let Some(policy) = guard {
            policy.check_name(url)?;
        }
        let tcp = match proxy {
            None => {
                let addrs = self.resolve(url.host(), url.port(), &host, None)?;
                if let Some(policy) = guard {
                    policy.check_addrs(url, &addrs)?;
                }
                self.tcp(addrs, (url.host(), url.port()), &host, None)?
            }
            Some(p) => {
                if let Some(policy) = guard {
                    let addrs = self.resolve(url.host(), url.port(), &host, None)?;
                    policy.check_addrs(url, &addrs)?;
                }
                let addrs = self.resolve(&p.host, p.port, &host, Some(p))?;
                let tcp = self.tcp(addrs, (&p.host, p.port), &host, Some(p))?;
                if url.scheme() == Scheme::Https {
                    self.tunnel(tcp, url, p)?
                } else {
                    tcp
                }
            }
        };
        match url.scheme() {
            Scheme::Http => Ok(Stream::Plain(tcp)),
            Scheme::Https => self.handshake(tcp, url),
        }
    }

    /// Sends `CONNECT` and waits for a 2xx.
    fn tunnel(
        &self,
        tcp: TcpStream,
        url: &Url,
        proxy: &ProxyServer,
    ) -> Result<TcpStream, NetError> {
        let host = url.authority();
        let mut stream = Stream::Plain(tcp);
        let mut req = format!("CONNECT {host} HTTP/1.1\r\nhost: {host}\r\n");
        if let Some(auth) = &proxy.authorization {
            req.push_str("proxy-authorization: ");
            req.push_str(auth);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        let proxy_err = |why: String| {
            NetError::new(
                NetErrorKind::Proxy,
                host.as_str(),
                format!(
                    "the proxy {} (from {}) did not open a tunnel",
                    proxy.authority(),
                    proxy.source()
                ),
                why,
                "check the proxy address and credentials, or exclude the host with NO_PROXY",
            )
        };
        match write_all(&mut stream, &[req.as_bytes()], self.deadline) {
            Ok(()) => {}
            Err(WaitError::Deadline) => {
                return Err(self.timeout_head(&host, "while opening the proxy tunnel"));
            }
            Err(WaitError::Cancelled) => return Err(NetError::cancelled(&host)),
            Err(WaitError::Io(e)) => return Err(proxy_err(e.to_string())),
        }
        let mut buf = Vec::new();
        let mut tmp = [0u8; 4096];
        let head = loop {
            match parse_head(&buf) {
                HeadParse::Complete(h) => break h,
                HeadParse::Invalid(e) => {
                    return Err(proxy_err(format!(
                        "its answer to CONNECT is malformed: {e}"
                    )));
                }
                HeadParse::Partial if buf.len() > self.limits.max_head_bytes => {
                    return Err(proxy_err(format!(
                        "its answer exceeds {} bytes",
                        self.limits.max_head_bytes
                    )));
                }
                HeadParse::Partial => {}
            }
            let cancel = self.cancel;
            match read_some(
                &mut stream,
                &mut tmp,
                self.deadline,
                self.limits.poll_interval,
                &|| cancel.is_cancelled(),
            ) {
                Ok(0) => {
                    return Err(proxy_err(
                        "it closed the connection before answering CONNECT".to_string(),
                    ));
                }
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
                Err(WaitError::Deadline) => {
                    return Err(self.timeout_head(&host, "waiting for the proxy tunnel"));
                }
                Err(WaitError::Cancelled) => return Err(NetError::cancelled(&host)),
                Err(WaitError::Io(e)) => return Err(proxy_err(e.to_string())),
            }
        };
        if !(200..300).contains(&head.status) {
            let hint = if head.status == 407 {
                " (proxy authentication required)"
            } else {
                ""
            };
            return Err(proxy_err(format!(
                "it answered CONNECT with status {}{hint}",
                head.status
            )));
        }
        if buf.len() > head.len {
            return Err(proxy_err(
                "it sent bytes after its CONNECT answer before the TLS handshake".to_string(),
            ));
        }
        match stream {
            Stream::Plain(tcp) => Ok(tcp),
            Stream::Tls(_) => Err(proxy_err(
                "internal: tunnel stream is not plain TCP".to_string(),
            )),
        }
    }

    fn handshake(&self, tcp: TcpStream, url: &Url) -> Result<Stream, NetError> {
        let host = url.authority();
        let tls_err = |why: String| {
            NetError::new(
                NetErrorKind::Tls,
                host.as_str(),
                format!("the TLS handshake with {host} failed"),
                why,
                "check the system clock and that the server's certificate is valid for this host; for a private CA add it as an extra trust anchor",
            )
        };
        let name = ServerName::try_from(url.host().to_string()).map_err(|e| {
            tls_err(format!(
                "{:?} is not a valid TLS server name: {e}",
                url.host()
            ))
        })?;
        let conn = rustls::ClientConnection::new(Arc::clone(self.tls), name)
            .map_err(|e| tls_err(e.to_string()))?;
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        while tls.conn.is_handshaking() {
            if self.cancel.is_cancelled() {
                return Err(NetError::cancelled(&host));
            }
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(self.timeout_head(&host, "during the TLS handshake"));
            }
            let wait = remaining
                .min(self.limits.poll_interval)
                .max(Duration::from_millis(1));
            let set = tls
                .sock
                .set_read_timeout(Some(wait))
                .and_then(|()| tls.sock.set_write_timeout(Some(remaining)));
            if let Err(e) = set {
                return Err(tls_err(e.to_string()));
            }
            match tls.conn.complete_io(&mut tls.sock) {
                Ok((0, 0)) if tls.conn.is_handshaking() => {
                    return Err(tls_err(
                        "the server closed the connection during the handshake".to_string(),
                    ));
                }
                Ok(_) => {}
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(tls_err(describe_io(&e).1)),
            }
        }
        Ok(Stream::Tls(Box::new(tls)))
    }
}

/// Identifies connections that may be shared: scheme, host, port and proxy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    pub(crate) scheme: Scheme,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) proxy: Option<String>,
    /// Whether the connection was opened under an address policy.
    pub(crate) guarded: bool,
}

struct Idle {
    stream: Stream,
    since: Instant,
}

/// Idle keep-alive connections.
pub(crate) struct Pool {
    idle: Mutex<HashMap<PoolKey, Vec<Idle>>>,
    idle_timeout: Duration,
    max_per_key: usize,
}

impl Pool {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            idle: Mutex::new(HashMap::new()),
            idle_timeout: limits.idle_timeout,
            max_per_key: limits.max_idle_per_host,
        }
    }

    /// The most recently used healthy idle connection for `key`.
    pub(crate) fn take(&self, key: &PoolKey) -> Option<Stream> {
        let mut map = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let list = map.get_mut(key)?;
        while let Some(idle) = list.pop() {
            if idle.since.elapsed() < self.idle_timeout && idle.stream.healthy() {
                return Some(idle.stream);
            }
        }
        None
    }

    pub(crate) fn put(&self, key: PoolKey, stream: Stream) {
        if self.max_per_key == 0 {
            return;
        }
        let mut map = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let list = map.entry(key).or_default();
        list.retain(|i| i.since.elapsed() < self.idle_timeout);
        if list.len() >= self.max_per_key {
            list.remove(0);
        }
        list.push(Idle {
            stream,
            since: Instant::now(),
        });
    }

    /// The number of idle connections held.
    pub(crate) fn idle_count(&self) -> usize {
        let map = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.values().map(Vec::len).sum()
    }
}
