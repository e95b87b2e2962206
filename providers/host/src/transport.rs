//! [`NetTransport`]: the engine's [`Transport`] over the HTTP engine.
//!
//! HTTP exchanges go through `smith-net` with its bounds; credential
//! handles (`{{credential:provider.slot}}`) in header values are replaced
//! with the resolved credential only here, on the request being sent —
//! never in the exchange, which may be recorded. Local exchanges are played
//! as the engine's [`HostTransport`] plays them.
//!
//! A response with a non-2xx status whose body is a JSON document is handed
//! to the provider's decoder, which turns the vendor's error object into a
//! typed error. Any other non-2xx body fails with an error typed by the
//! status (429 rate limit, 5xx overloaded, 401/403 auth, 404 unavailable
//! model, other 4xx invalid request).

use std::sync::Arc;
use std::time::Duration;

use smith_auth::Resolver;
use smith_engine::provider::transport::{BodyOutcome, kind_of_status};
use smith_engine::provider::{
    Exchange, HostTransport, HttpExchange, ProviderError, ProviderErrorKind, Transport,
};
use smith_engine::tools::CancelToken;
use smith_net::{BodyEvent, Client, Method, NetErrorKind, Outcome, Request};

/// The most bytes of an error response that are read.
const ERROR_BODY_LIMIT: usize = 1 << 20;

/// The three network timeouts a user configures (`net.connect-timeout-s`,
/// `net.head-timeout-s`, `net.body-gap-timeout-s`); every other bound of the
/// HTTP engine keeps its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// One TCP connect attempt.
    pub connect: Duration,
    /// From the start of a request to its complete response head.
    pub head: Duration,
    /// Between two arrivals of response body bytes.
    pub body_gap: Duration,
}

impl Default for Timeouts {
    /// The HTTP engine's defaults.
    fn default() -> Timeouts {
        let limits = smith_net::Limits::default();
        Timeouts {
            connect: limits.connect_timeout,
            head: limits.head_timeout,
            body_gap: limits.body_gap_timeout,
        }
    }
}

impl Timeouts {
    /// The engine's default bounds with these timeouts.
    pub fn limits(self) -> smith_net::Limits {
        smith_net::Limits {
            connect_timeout: self.connect,
            head_timeout: self.head,
            body_gap_timeout: self.body_gap,
            ..smith_net::Limits::default()
        }
    }
}

/// The host transport with the HTTP engine.
pub struct NetTransport {
    client: Client,
    resolver: Arc<Resolver>,
}

impl std::fmt::Debug for NetTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetTransport").finish_non_exhaustive()
    }
}

impl NetTransport {
    /// A transport sending through `client`, resolving credential handles
    /// with `resolver`.
    pub fn new(client: Client, resolver: Arc<Resolver>) -> NetTransport {
        NetTransport { client, resolver }
    }

    /// A transport over a client with the default bounds except `timeouts`,
    /// and the proxy variables of the process environment.
    ///
    /// # Errors
    ///
    /// When the HTTP engine cannot be set up (an unusable proxy variable);
    /// the message says which and what to do.
    pub fn from_env(resolver: Arc<Resolver>, timeouts: Timeouts) -> Result<NetTransport, String> {
        let client = Client::builder()
            .limits(timeouts.limits())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(NetTransport::new(client, resolver))
    }

    /// The bounds the HTTP client runs under.
    pub fn limits(&self) -> &smith_net::Limits {
        self.client.limits()
    }

    /// Replaces every credential handle in `value`.
    fn substitute(&self, value: &str) -> Result<String, ProviderError> {
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while let Some(start) = rest.find("{{credential:") {
            out.push_str(&rest[..start]);
            let after = &rest[start + "{{credential:".len()..];
            let Some(end) = after.find("}}") else {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    "a request header holds an unterminated credential handle; this is a provider defect, report it",
                ));
            };
            let handle = &after[..end];
            let (provider, slot) = handle.split_once('.').unwrap_or((handle, "api_key"));
            let resolved = self.resolver.resolve(provider, slot).map_err(|d| {
                ProviderError::new(
                    ProviderErrorKind::Auth,
                    format!("{}: {}; {}", d.what(), d.why(), d.next()),
                )
            })?;
            out.push_str(resolved.credential.secret().expose());
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn build(&self, http: &HttpExchange) -> Result<Request, ProviderError> {
        let method = match http.method.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            other => {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "the provider asked for HTTP method {other:?}, which the host does not send; this is a provider defect, report it"
                    ),
                ));
            }
        };
        let mut request = Request::new(method, &http.url)
            .map_err(|e| ProviderError::new(ProviderErrorKind::InvalidRequest, e.to_string()))?
            .with_body(http.body.clone());
        for (name, value) in &http.headers {
            let value = if value.contains("{{credential:") {
                self.substitute(value)?
            } else {
                value.clone()
            };
            request = request.with_header(name, value);
        }
        Ok(request)
    }

    fn perform_http(
        &self,
        http: HttpExchange,
        cancel: &CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome {
        let request = match self.build(&http) {
            Ok(r) => r,
            Err(e) => return BodyOutcome::Failed(e),
        };
        let host = request.url().authority();
        let outcome = self.exchange(request, &host, cancel.clone(), on_chunk);
        if cancel.is_cancelled()
            && !matches!(outcome, BodyOutcome::Complete | BodyOutcome::Refused { .. })
        {
            return BodyOutcome::Cancelled;
        }
        outcome
    }

    fn exchange(
        &self,
        request: Request,
        host: &str,
        cancel: CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome {
        let request_len = request.body().len();
        let mut response = match self.client.send(request, cancel) {
            Ok(r) => r,
            Err(e) => {
                let kind = match e.kind() {
                    NetErrorKind::Cancelled => return BodyOutcome::Cancelled,
                    // Larger than anything smith sends, and than any
                    // model's context window: a context overflow, which a
                    // run answers by compacting once and trying again.
                    NetErrorKind::RequestTooLarge => {
                        return BodyOutcome::Failed(ProviderError::new(
                            ProviderErrorKind::RequestTooLarge,
                            format!(
                                "the request to {host} is {} bytes, over the {}-byte bound on what smith sends (and beyond any model's context window), so nothing was sent; compact the conversation (/compact) or start a new session",
                                request_len,
                                self.client.limits().max_request_body
                            ),
                        ));
                    }
                    NetErrorKind::InvalidRequest => ProviderErrorKind::InvalidRequest,
                    _ => ProviderErrorKind::Transport,
                };
                return BodyOutcome::Failed(ProviderError::new(kind, e.to_string()));
            }
        };
        let status = response.status();
        if !response.is_success() {
            let headers = response.headers();
            let retry_after = crate::retry_hint::retry_after_ms(
                |name| headers.get(name),
                std::time::SystemTime::now(),
            );
            let reason = response.reason().to_owned();
            let (body, complete) = read_bounded(response.body(), ERROR_BODY_LIMIT);
            let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
            if complete && matches!(first, Some(b'{' | b'[')) {
                // The provider decodes its own error from the body; the
                // headers' wait travels beside it.
                on_chunk(&body);
                return BodyOutcome::Refused {
                    status,
                    retry_after_ms: retry_after,
                };
            }
            let mut error = status_error(status, &reason, host, &body);
            error.retry_after_ms = retry_after;
            return BodyOutcome::Failed(error);
        }
        let body = response.body();
        loop {
            match body.next_event() {
                BodyEvent::Data(bytes) => {
                    if !on_chunk(&bytes) {
                        return BodyOutcome::Stopped;
                    }
                }
                BodyEvent::End(Outcome::Complete { .. }) => return BodyOutcome::Complete,
                BodyEvent::End(Outcome::Cancelled) => return BodyOutcome::Cancelled,
                BodyEvent::End(Outcome::Truncated { bound }) => {
                    return BodyOutcome::Failed(ProviderError::new(
                        ProviderErrorKind::Transport,
                        format!(
                            "the response from {host} reached the {bound}-byte body bound and was cut off there; ask for a shorter response (a lower output limit)"
                        ),
                    ));
                }
                BodyEvent::End(Outcome::Failed(e)) => {
                    return BodyOutcome::Failed(ProviderError::new(
                        ProviderErrorKind::Transport,
                        format!("the response body from {host} was cut off: {e}"),
                    ));
                }
            }
        }
    }
}

/// Reads at most `limit` bytes; `true` when the body ended complete within
/// them.
fn read_bounded(body: &mut smith_net::Body, limit: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        match body.next_event() {
            BodyEvent::Data(bytes) => {
                out.extend_from_slice(&bytes);
                if out.len() > limit {
                    out.truncate(limit);
                    return (out, false);
                }
            }
            BodyEvent::End(outcome) => return (out, outcome.is_complete()),
        }
    }
}

/// The typed error for a non-2xx status whose body is not a JSON document.
pub(crate) fn status_error(status: u16, reason: &str, host: &str, body: &[u8]) -> ProviderError {
    // The kind by status is the engine's (the same that types a refusal
    // whose JSON body names no kind); the advice is this transport's.
    let kind = kind_of_status(status).unwrap_or(ProviderErrorKind::Transport);
    let next = match kind {
        ProviderErrorKind::RateLimit => {
            "wait and try again, or configure a failover target (a group in models.kdl)"
        }
        ProviderErrorKind::Auth => {
            "check the credential with `smith auth check PROVIDER`, or store a new one with `smith auth set PROVIDER`"
        }
        ProviderErrorKind::ModelUnavailable => {
            "check the model id (`smith models`) and the base URL"
        }
        ProviderErrorKind::Overloaded => {
            "try again later, or configure a failover target (a group in models.kdl)"
        }
        ProviderErrorKind::InvalidRequest => "check the model id, base URL and request options",
        _ => "check the base URL points at the provider's API",
    };
    let text = String::from_utf8_lossy(body);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = flat.chars().take(160).collect();
    if shown.len() < flat.len() {
        shown.push('…');
    }
    let said = if shown.is_empty() {
        "with an empty body".to_owned()
    } else {
        format!("saying {shown:?}")
    };
    ProviderError::new(
        kind,
        format!("{host} answered HTTP {status} {reason} {said}; {next}"),
    )
}

impl Transport for NetTransport {
    fn perform(
        &self,
        exchange: Exchange,
        cancel: &CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome {
        match exchange {
            Exchange::Local { .. } => HostTransport.perform(exchange, cancel, on_chunk),
            Exchange::Http(http) => self.perform_http(http, cancel, on_chunk),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_handles_are_replaced_only_on_the_outgoing_request() {
        let resolver = Resolver::new(crate::builtin_slots())
            .env(|name| (name == "OPENAI_API_KEY").then(|| "sk-transport-unit-42".to_owned()));
        let transport = NetTransport::from_env(Arc::new(resolver), Timeouts::default()).unwrap();
        let http = HttpExchange {
            method: "POST".into(),
            url: "http://127.0.0.1:9/v1/responses".into(),
            headers: vec![(
                "authorization".into(),
                "Bearer {{credential:openai.api_key}}".into(),
            )],
            body: b"{}".to_vec(),
        };
        let request = transport.build(&http).unwrap();
        assert_eq!(
            request.headers().get("authorization"),
            Some("Bearer sk-transport-unit-42")
        );
        assert!(!format!("{request:?}").contains("sk-transport-unit-42"));
        assert!(!format!("{http:?}").contains("sk-transport-unit-42"));

        let missing = transport
            .substitute("{{credential:anthropic.api_key}}")
            .unwrap_err();
        assert_eq!(missing.kind, ProviderErrorKind::Auth);
        assert!(
            missing.message.contains("ANTHROPIC_API_KEY"),
            "{}",
            missing.message
        );
        let broken = transport
            .substitute("{{credential:openai.api_key")
            .unwrap_err();
        assert_eq!(broken.kind, ProviderErrorKind::InvalidRequest);
    }

    #[test]
    fn a_body_over_the_bound_is_request_too_large_and_nothing_is_sent() {
        let resolver = Resolver::new(crate::builtin_slots());
        let transport = NetTransport::from_env(Arc::new(resolver), Timeouts::default()).unwrap();
        let bound = usize::try_from(transport.client.limits().max_request_body).unwrap();
        // Port 9 (discard) on loopback: were anything sent, the failure
        // would be a connection error, not this one.
        let http = HttpExchange {
            method: "POST".into(),
            url: "http://127.0.0.1:9/v1/chat/completions".into(),
            headers: Vec::new(),
            body: vec![b' '; bound + 1],
        };
        let outcome = transport.perform(Exchange::Http(http), &CancelToken::new(), &mut |_| {
            panic!("no byte was received")
        });
        let BodyOutcome::Failed(error) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(error.kind, ProviderErrorKind::RequestTooLarge);
        assert!(
            error.message.starts_with(&format!(
                "the request to 127.0.0.1:9 is {} bytes, over the {bound}-byte bound on what smith sends",
                bound + 1
            )),
            "{}",
            error.message
        );
        assert!(error.message.contains("/compact"), "{}", error.message);
    }

    #[test]
    fn statuses_without_a_json_body_are_typed() {
        let cases = [
            (429, ProviderErrorKind::RateLimit),
            (401, ProviderErrorKind::Auth),
            (403, ProviderErrorKind::Auth),
            (404, ProviderErrorKind::ModelUnavailable),
            (500, ProviderErrorKind::Overloaded),
            (503, ProviderErrorKind::Overloaded),
            (400, ProviderErrorKind::InvalidRequest),
            (302, ProviderErrorKind::Transport),
        ];
        for (status, kind) in cases {
            let e = status_error(status, "X", "h:1", b"<html> busy </html>");
            assert_eq!(e.kind, kind, "{status}");
            assert!(
                e.message.contains(&format!("HTTP {status}")),
                "{}",
                e.message
            );
            assert!(
                e.message.contains("\"<html> busy </html>\""),
                "{}",
                e.message
            );
        }
        let e = status_error(503, "Service Unavailable", "h:1", b"");
        assert!(e.message.contains("with an empty body"), "{}", e.message);
    }

    /// A local server that accepts connections and reads, and answers with
    /// `reply` (then stalls) or with nothing at all.
    fn stalling_server(reply: &'static [u8]) -> (String, std::thread::JoinHandle<()>) {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/responses", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(reply);
            // Hold the connection open, silent, until the client gives up.
            while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
        });
        (url, server)
    }

    fn send_to(url: &str, timeouts: Timeouts) -> BodyOutcome {
        let transport =
            NetTransport::from_env(Arc::new(Resolver::new(crate::builtin_slots())), timeouts)
                .unwrap();
        let http = HttpExchange {
            method: "POST".into(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: b"{}".to_vec(),
        };
        transport.perform(Exchange::Http(http), &CancelToken::new(), &mut |_| true)
    }

    #[test]
    fn the_configured_head_timeout_ends_a_silent_exchange() {
        let (url, server) = stalling_server(b"");
        let timeouts = Timeouts {
            head: Duration::from_secs(1),
            ..Timeouts::default()
        };
        let BodyOutcome::Failed(e) = send_to(&url, timeouts) else {
            panic!("a server that never answers must fail the exchange");
        };
        assert_eq!(e.kind, ProviderErrorKind::Transport);
        assert!(
            e.message.contains("no response head within 1s"),
            "{}",
            e.message
        );
        assert!(e.message.contains("timeout-head"), "{}", e.message);
        assert!(e.message.contains("`net.head-timeout-s`"), "{}", e.message);
        server.join().unwrap();
    }

    #[test]
    fn the_configured_body_gap_timeout_ends_a_stalled_body() {
        let (url, server) = stalling_server(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",
        );
        let timeouts = Timeouts {
            body_gap: Duration::from_secs(1),
            ..Timeouts::default()
        };
        let BodyOutcome::Failed(e) = send_to(&url, timeouts) else {
            panic!("a body that stalls must fail the exchange");
        };
        assert!(e.message.contains("no body bytes for 1s"), "{}", e.message);
        assert!(
            e.message.contains("`net.body-gap-timeout-s`"),
            "{}",
            e.message
        );
        server.join().unwrap();
    }

    #[test]
    fn every_configured_timeout_reaches_the_client() {
        let timeouts = Timeouts {
            connect: Duration::from_secs(7),
            head: Duration::from_secs(11),
            body_gap: Duration::from_secs(13),
        };
        let transport =
            NetTransport::from_env(Arc::new(Resolver::new(crate::builtin_slots())), timeouts)
                .unwrap();
        let limits = transport.limits();
        assert_eq!(limits.connect_timeout, Duration::from_secs(7));
        assert_eq!(limits.head_timeout, Duration::from_secs(11));
        assert_eq!(limits.body_gap_timeout, Duration::from_secs(13));
        assert_eq!(Timeouts::default().limits(), smith_net::Limits::default());
    }
}
