//! The client: configuration, connection reuse, and one exchange.

use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::body::{Body, Outcome, Reader};
use crate::conn::{Dialer, Pool, PoolKey, Stream, WaitError, describe_io, read_some, write_all};
use crate::error::{NetError, NetErrorKind};
use crate::http1::{self, Framing, Head, HeadParse};
use crate::limits::Limits;
use crate::policy::{AddressPolicy, Resolve, SystemResolver};
use crate::proxy::ProxySettings;
use crate::request::{Request, Response};
use crate::url::Scheme;
use smith_contract::CancelToken;

/// Builds a [`Client`].
///
/// By default: [`Limits::default`], proxies from the process environment,
/// and the bundled Mozilla roots as the only trust anchors.
#[derive(Debug, Default)]
pub struct ClientBuilder {
    limits: Limits,
    proxy: Option<ProxySettings>,
    proxy_vars: Option<Vec<(String, String)>>,
    extra_roots: Vec<CertificateDer<'static>>,
    without_bundled_roots: bool,
    resolver: Option<Arc<dyn Resolve>>,
}

impl ClientBuilder {
    /// Replaces the bounds.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Uses these proxy settings instead of reading the environment.
    #[must_use]
    pub fn proxy(mut self, proxy: ProxySettings) -> Self {
        self.proxy = Some(proxy);
        self.proxy_vars = None;
        self
    }

    /// Reads `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`/`NO_PROXY` (either case)
    /// from these pairs instead of the process environment.
    #[must_use]
    pub fn proxy_env<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.proxy = None;
        self.proxy_vars = Some(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        self
    }

    /// Trusts one more root certificate (DER), in addition to the bundled
    /// roots.
    #[must_use]
    pub fn add_root_der(mut self, der: impl Into<Vec<u8>>) -> Self {
        self.extra_roots.push(CertificateDer::from(der.into()));
        self
    }

    /// Trusts every certificate in a PEM bundle.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::Tls`] when the bundle holds no readable certificate.
    pub fn add_roots_pem(mut self, pem: &[u8]) -> Result<Self, NetError> {
        let before = self.extra_roots.len();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert =
                cert.map_err(|e| roots_error(format!("a PEM certificate could not be read: {e}")))?;
            self.extra_roots.push(cert);
        }
        if self.extra_roots.len() == before {
            return Err(roots_error(
                "the PEM bundle holds no CERTIFICATE block".to_string(),
            ));
        }
        Ok(self)
    }

    /// Drops the bundled Mozilla roots, so only added roots are trusted.
    #[must_use]
    pub fn without_bundled_roots(mut self) -> Self {
        self.without_bundled_roots = true;
        self
    }

    /// Resolves host names with `resolver` instead of the system's
    /// resolver (tests make a public-looking name resolve to a private
    /// address with this, to exercise [`AddressPolicy::PublicOnly`]).
    #[must_use]
    pub fn resolver(mut self, resolver: Arc<dyn Resolve>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Builds the client; proxy variables are read now, once.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::Proxy`] for an unusable proxy variable,
    /// [`NetErrorKind::Tls`] for an unusable extra root certificate.
    pub fn build(self) -> Result<Client, NetError> {
        let proxy = match (self.proxy, self.proxy_vars) {
            (Some(p), _) => p,
            (None, Some(vars)) => ProxySettings::from_vars(vars)?,
            (None, None) => ProxySettings::from_process_env()?,
        };
        let mut roots = rustls::RootCertStore::empty();
        if !self.without_bundled_roots {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        for (i, der) in self.extra_roots.into_iter().enumerate() {
            roots.add(der).map_err(|e| {
                roots_error(format!(
                    "extra root certificate #{} is not usable: {e}",
                    i + 1
                ))
            })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| roots_error(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Client {
            inner: Arc::new(Inner {
                pool: Arc::new(Pool::new(&self.limits)),
                limits: self.limits,
                proxy,
                tls: Arc::new(tls),
                resolver: self.resolver.unwrap_or_else(|| Arc::new(SystemResolver)),
            }),
        })
    }
}

fn roots_error(why: String) -> NetError {
    NetError::new(
        NetErrorKind::Tls,
        "(configuration)",
        "the TLS trust anchors could not be set up",
        why,
        "pass DER or PEM encoded X.509 CA certificates",
    )
}

/// A synchronous HTTP/1.1 client. Cheap to clone; clones share the
/// keep-alive pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    limits: Limits,
    proxy: ProxySettings,
    tls: Arc<rustls::ClientConfig>,
    pool: Arc<Pool>,
    resolver: Arc<dyn Resolve>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("limits", &self.inner.limits)
            .field("proxy", &self.inner.proxy)
            .finish_non_exhaustive()
    }
}

/// Why one attempt on a connection did not produce a response.
enum Attempt {
    /// A reused connection was closed before any response byte: try a fresh one.
    Stale,
    Failed(NetError),
}

impl Client {
    /// A client with default limits, proxies from the process environment and
    /// the bundled roots.
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::build`].
    pub fn new() -> Result<Self, NetError> {
        Self::builder().build()
    }

    /// A builder with the defaults.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The bounds in force.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The proxy settings read at construction.
    pub fn proxy_settings(&self) -> &ProxySettings {
        &self.inner.proxy
    }

    /// Idle keep-alive connections currently held.
    pub fn idle_connections(&self) -> usize {
        self.inner.pool.idle_count()
    }

    /// Sends `request` and returns the response head with a streaming body.
    ///
    /// Any status (including 4xx and 5xx) is a response. Redirects are not
    /// followed. The request's [`AddressPolicy`] is applied to the addresses
    /// its host resolves to before any connection is opened. The returned [`Body`] is read on a thread of its own and is
    /// bounded by the client's [`Limits`]; `cancel` is observed until the body
    /// ends.
    ///
    /// # Errors
    ///
    /// A [`NetError`] when no response head was received: the request is too
    /// large or invalid, DNS, connect, proxy or TLS failed, the head did not
    /// arrive in time, the server broke the protocol, or `cancel` fired.
    pub fn send(&self, request: Request, cancel: CancelToken) -> Result<Response, NetError> {
        let limits = &self.inner.limits;
        let host = request.url.authority();
        let len = request.body.len() as u64;
        if len > limits.max_request_body {
            return Err(NetError::new(
                NetErrorKind::RequestTooLarge,
                host,
                format!(
                    "the request body of {len} bytes exceeds the bound of {} bytes",
                    limits.max_request_body
                ),
                "the engine rejects oversized request bodies before sending anything",
                "send less data (for example fewer or smaller attachments), or raise Limits::max_request_body",
            ));
        }
        request.validate_headers()?;
        if cancel.is_cancelled() {
            return Err(NetError::cancelled(&host));
        }
        let deadline = Instant::now() + limits.head_timeout;
        let proxy = self.inner.proxy.proxy_for(&request.url);
        let http_proxy = proxy.filter(|_| request.url.scheme() == Scheme::Http);
        let key = PoolKey {
            scheme: request.url.scheme(),
            host: request.url.host().to_string(),
            port: request.url.port(),
            proxy: proxy.map(|p| p.authority()),
            // A connection opened without the address check is never
            // handed to a request that needs it.
            guarded: request.policy != AddressPolicy::Any,
        };
        let head = http1::request_head(&request, http_proxy);
        if let Some(stream) = self.inner.pool.take(&key) {
            match self.exchange(stream, &request, &head, &key, deadline, &cancel, true) {
                Ok(r) => return Ok(r),
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Stale) => {}
            }
        }
        let dialer = Dialer {
            limits,
            tls: &self.inner.tls,
            deadline,
            cancel: &cancel,
            resolver: self.inner.resolver.as_ref(),
            policy: &request.policy,
        };
        let stream = dialer.open(&request.url, proxy)?;
        match self.exchange(stream, &request, &head, &key, deadline, &cancel, false) {
            Ok(r) => Ok(r),
            Err(Attempt::Failed(e)) => Err(e),
            Err(Attempt::Stale) => Err(NetError::new(
                NetErrorKind::ConnectionLost,
                host,
                "the server closed the connection without answering",
                "the connection ended before any response byte arrived",
                "retry later; the server may be restarting or rejecting the request",
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &self,
        mut stream: Stream,
        request: &Request,
        head_bytes: &[u8],
        key: &PoolKey,
        deadline: Instant,
        cancel: &CancelToken,
        reused: bool,
    ) -> Result<Response, Attempt> {
        let limits = &self.inner.limits;
        let host = request.url.authority();
        let timeout = |during: &str| {
            Attempt::Failed(NetError::new(
                NetErrorKind::TimeoutHead,
                host.as_str(),
                format!(
                    "no response head within {:?} ({during})",
                    limits.head_timeout
                ),
                "the server did not answer in time",
                "retry later, or raise the head timeout (`net.head-timeout-s`)",
            ))
        };
        let lost = |during: &str, e: &std::io::Error| {
            let (tls, why) = describe_io(e);
            Attempt::Failed(NetError::new(
                if tls {
                    NetErrorKind::Tls
                } else {
                    NetErrorKind::ConnectionLost
                },
                host.as_str(),
                format!("the connection failed {during}"),
                why,
                "retry the request",
            ))
        };
        match write_all(&mut stream, &[head_bytes, &request.body], deadline) {
            Ok(()) => {}
            Err(WaitError::Deadline) => return Err(timeout("while sending the request")),
            Err(WaitError::Cancelled) => return Err(Attempt::Failed(NetError::cancelled(&host))),
            Err(WaitError::Io(_)) if reused => return Err(Attempt::Stale),
            Err(WaitError::Io(e)) => return Err(lost("while sending the request", &e)),
        }
        // A reused connection that closes before any response byte usually
        // raced the server's idle close. The request is resent on a fresh
        // connection only when that is safe: the method is idempotent (the
        // server may have received a POST before closing).
        let retry_on_silence = reused && request.method.is_idempotent();
        let mut buf: Vec<u8> = Vec::new();
        let mut tmp = vec![0u8; 8192];
        let mut received_any = false;
        let head: Head = loop {
            match http1::parse_head(&buf) {
                HeadParse::Complete(h) if (100..200).contains(&h.status) && h.status != 101 => {
                    // Interim responses (100 Continue, 103 Early Hints) are skipped.
                    buf.drain(..h.len);
                    continue;
                }
                HeadParse::Complete(h) => break h,
                HeadParse::Invalid(why) => {
                    return Err(Attempt::Failed(NetError::new(
                        NetErrorKind::Protocol,
                        host.as_str(),
                        "the response head is malformed",
                        why,
                        "check that the URL points at an HTTP/1.1 server (not HTTP/2-only or another protocol)",
                    )));
                }
                HeadParse::Partial if buf.len() > limits.max_head_bytes => {
                    return Err(Attempt::Failed(NetError::new(
                        NetErrorKind::Protocol,
                        host.as_str(),
                        format!("the response head exceeds {} bytes", limits.max_head_bytes),
                        "the server sent an oversized head",
                        "check the URL, or raise Limits::max_head_bytes",
                    )));
                }
                HeadParse::Partial => {}
            }
            match read_some(
                &mut stream,
                &mut tmp,
                deadline,
                limits.poll_interval,
                &|| cancel.is_cancelled(),
            ) {
                Ok(0) if retry_on_silence && !received_any => return Err(Attempt::Stale),
                Ok(0) => {
                    return Err(Attempt::Failed(NetError::new(
                        NetErrorKind::ConnectionLost,
                        host.as_str(),
                        "the server closed the connection before a complete response head",
                        format!(
                            "{} head bytes had arrived{}",
                            buf.len(),
                            if reused {
                                " on a reused keep-alive connection"
                            } else {
                                ""
                            }
                        ),
                        "retry if the request is safe to repeat (the server may have processed it)",
                    )));
                }
                Ok(n) => {
                    received_any = true;
                    buf.extend_from_slice(&tmp[..n]);
                }
                Err(WaitError::Deadline) => return Err(timeout("waiting for the response head")),
                Err(WaitError::Cancelled) => {
                    return Err(Attempt::Failed(NetError::cancelled(&host)));
                }
                Err(WaitError::Io(_)) if retry_on_silence && !received_any => {
                    return Err(Attempt::Stale);
                }
                Err(WaitError::Io(e)) => return Err(lost("while reading the response head", &e)),
            }
        };
        if head.status == 101 {
            return Err(Attempt::Failed(NetError::new(
                NetErrorKind::Protocol,
                host.as_str(),
                "the server switched protocols (101)",
                "the engine speaks HTTP/1.1 only and never asks for an upgrade",
                "check the URL",
            )));
        }
        let framing = http1::framing(request.method, &head).map_err(|why| {
            Attempt::Failed(NetError::new(
                NetErrorKind::Protocol,
                host.as_str(),
                "the response body framing is invalid",
                why,
                "the server or an intermediary is misbehaving; retry or report it",
            ))
        })?;
        let reusable = http1::reusable(request, &head, framing);
        let leftover = buf.split_off(head.len);
        let body = if framing == Framing::Empty {
            if reusable && leftover.is_empty() {
                self.inner.pool.put(key.clone(), stream);
            }
            Body::finished(host.clone(), cancel.clone(), Outcome::Complete { bytes: 0 })
        } else {
            Reader {
                stream: Some(stream),
                leftover,
                framing,
                reuse: reusable.then(|| (Arc::clone(&self.inner.pool), key.clone())),
                limits: limits.clone(),
                cancel: cancel.clone(),
                host: host.clone(),
            }
            .spawn()
            .map_err(Attempt::Failed)?
        };
        Ok(Response {
            status: head.status,
            reason: head.reason,
            headers: head.headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}

    #[test]
    fn client_is_shareable_and_bodies_can_move_between_threads() {
        assert_send_sync::<Client>();
        assert_send::<Body>();
        assert_send::<Response>();
    }

    #[test]
    fn proxy_variables_are_read_at_build_time_from_the_injected_list() {
        let c = Client::builder()
            .proxy_env([("HTTPS_PROXY", "http://proxy.test:3128")])
            .build()
            .unwrap();
        let url = crate::Url::parse("https://example.com/").unwrap();
        let p = c.proxy_settings().proxy_for(&url).unwrap();
        assert_eq!(
            (p.authority().as_str(), p.source()),
            ("proxy.test:3128", "HTTPS_PROXY")
        );
        let e = Client::builder()
            .proxy_env([("HTTP_PROXY", "socks5://x:1")])
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::Proxy);
    }
}
