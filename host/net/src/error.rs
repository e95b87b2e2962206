//! Typed transport errors.
//!
//! Every [`NetError`] says what happened, why, and what to do next, and names
//! the host (`host:port`) of the URL it concerns. It never carries header
//! values, request bodies or URL user-info, so it is safe to log and to show.

use std::fmt;

/// What kind of failure a [`NetError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NetErrorKind {
    /// The request was malformed before anything was sent (bad URL, a header
    /// name or value with forbidden bytes).
    InvalidRequest,
    /// The request body exceeded the configured bound; nothing was sent.
    RequestTooLarge,
    /// The host name could not be resolved.
    Dns,
    /// The TCP connection could not be established.
    Connect,
    /// The TLS handshake or a TLS record failed (certificate, protocol).
    Tls,
    /// The proxy refused or broke the tunnel, or its configuration is invalid.
    Proxy,
    /// The response head did not arrive within the head bound.
    TimeoutHead,
    /// The gap between two body chunks exceeded the gap bound.
    TimeoutBodyGap,
    /// The peer violated HTTP/1.1 (malformed head, bad chunk framing, a body
    /// cut off before its declared end).
    Protocol,
    /// The connection failed while sending the request or reading the response.
    ConnectionLost,
    /// The response body exceeded its bound (see
    /// [`crate::Outcome::into_result`]).
    ResponseTooLarge,
    /// The caller cancelled the exchange.
    Cancelled,
    /// The request's [`crate::AddressPolicy`] refused the address its host
    /// resolved to (or the host's name); nothing was sent.
    AddressRefused,
}

impl NetErrorKind {
    /// A short stable name (`timeout-head`, `request-too-large`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid-request",
            Self::RequestTooLarge => "request-too-large",
            Self::Dns => "dns",
            Self::Connect => "connect",
            Self::Tls => "tls",
            Self::Proxy => "proxy",
            Self::TimeoutHead => "timeout-head",
            Self::TimeoutBodyGap => "timeout-body-gap",
            Self::Protocol => "protocol",
            Self::ConnectionLost => "connection-lost",
            Self::ResponseTooLarge => "response-too-large",
            Self::Cancelled => "cancelled",
            Self::AddressRefused => "address-refused",
        }
    }
}

impl fmt::Display for NetErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A transport failure: what happened, why, and the next action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetError {
    kind: NetErrorKind,
    host: String,
    what: String,
    why: String,
    next: String,
}

impl NetError {
    /// Builds an error. `host` is `host:port` of the URL (never user-info).
    pub fn new(
        kind: NetErrorKind,
        host: impl Into<String>,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            host: host.into(),
            what: what.into(),
            why: why.into(),
            next: next.into(),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> NetErrorKind {
        self.kind
    }

    /// The `host:port` the exchange was addressed to.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// What happened.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Why it happened, as far as the transport can tell.
    pub fn why(&self) -> &str {
        &self.why
    }

    /// What the user or caller can do next.
    pub fn next_action(&self) -> &str {
        &self.next
    }

    pub(crate) fn cancelled(host: &str) -> Self {
        Self::new(
            NetErrorKind::Cancelled,
            host,
            "the exchange was cancelled",
            "the caller's cancel token was triggered",
            "nothing to do; start a new exchange if the result is still needed",
        )
    }
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{}, host {}]: {}; {}",
            self.what, self.kind, self.host, self.why, self.next
        )
    }
}

impl std::error::Error for NetError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_kind_host_why_and_next() {
        let e = NetError::new(
            NetErrorKind::Dns,
            "example.invalid:443",
            "could not resolve the host",
            "no addresses",
            "check the URL",
        );
        assert_eq!(
            e.to_string(),
            "could not resolve the host [dns, host example.invalid:443]: no addresses; check the URL"
        );
    }
}
