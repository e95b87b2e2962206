//! Requests, responses and header lists.

use crate::body::Body;
use crate::error::{NetError, NetErrorKind};
use crate::url::Url;

/// An HTTP request method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`
    Get,
    /// `HEAD` (the response never has a body)
    Head,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `PATCH`
    Patch,
    /// `DELETE`
    Delete,
    /// `OPTIONS`
    Options,
}

impl Method {
    /// Whether repeating the request has the same effect as sending it once
    /// (RFC 9110 section 9.2.2): every method but `POST` and `PATCH`.
    pub fn is_idempotent(self) -> bool {
        !matches!(self, Self::Post | Self::Patch)
    }

    /// The method token as sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
            Self::Options => "OPTIONS",
        }
    }
}

/// An ordered list of header fields. Names compare case-insensitively and are
/// stored lower-cased; values are kept as sent.
///
/// `Debug` shows values only for headers whose names do not suggest a
/// credential (anything with `auth`, `key`, `token`, `secret`, `cookie`,
/// `session` or `signature` in its name is shown as `<redacted>`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers {
    fields: Vec<(String, String)>,
}

/// Whether a header name suggests its value is a credential.
fn sensitive(name: &str) -> bool {
    [
        "auth",
        "key",
        "token",
        "secret",
        "cookie",
        "session",
        "signature",
        "password",
    ]
    .iter()
    .any(|w| name.contains(w))
}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.fields.iter().map(|(n, v)| {
                let shown: &dyn std::fmt::Debug = if sensitive(n) { &"<redacted>" } else { v };
                (n, shown)
            }))
            .finish()
    }
}

impl Headers {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a field (a repeated name keeps every value).
    pub fn append(&mut self, name: &str, value: impl Into<String>) {
        self.fields.push((name.to_ascii_lowercase(), value.into()));
    }

    /// Replaces every field named `name` with one field.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.remove(name);
        self.append(name, value);
    }

    /// Removes every field named `name`.
    pub fn remove(&mut self, name: &str) {
        self.fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every `(name, value)` pair in order; names are lower-case.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Whether any value of `name`, split on commas, equals `token`
    /// (case-insensitive), as for `Connection: close`.
    pub(crate) fn has_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

/// A request to send with [`crate::Client::send`].
///
/// Header values are never shown in errors or in this type's `Debug` output
/// (only names are), because they often carry credentials.
#[derive(Clone)]
pub struct Request {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: Headers,
    pub(crate) body: Vec<u8>,
    pub(crate) policy: crate::policy::AddressPolicy,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n).collect();
        f.debug_struct("Request")
            .field("method", &self.method)
            .field(
                "url",
                &format_args!(
                    "{}://{}{}",
                    self.url.scheme().as_str(),
                    self.url.authority(),
                    path_only(self.url.target())
                ),
            )
            .field("header_names", &names)
            .field("body_len", &self.body.len())
            .finish()
    }
}

fn path_only(target: &str) -> &str {
    // The query may carry keys (some vendors take `?key=`); never show it.
    target.split('?').next().unwrap_or(target)
}

impl Request {
    /// A request with no headers and an empty body.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::InvalidRequest`] when `url` is not an absolute
    /// `http`/`https` URL.
    pub fn new(method: Method, url: &str) -> Result<Self, NetError> {
        Ok(Self {
            method,
            url: Url::parse(url)?,
            headers: Headers::new(),
            body: Vec::new(),
            policy: crate::policy::AddressPolicy::Any,
        })
    }

    /// Applies `policy` to the addresses the URL's host resolves to (the
    /// default, [`AddressPolicy::Any`](crate::AddressPolicy::Any), checks
    /// nothing).
    #[must_use]
    pub fn with_address_policy(mut self, policy: crate::policy::AddressPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The address policy in force.
    pub fn address_policy(&self) -> &crate::policy::AddressPolicy {
        &self.policy
    }

    /// `GET url`.
    ///
    /// # Errors
    ///
    /// As [`Request::new`].
    pub fn get(url: &str) -> Result<Self, NetError> {
        Self::new(Method::Get, url)
    }

    /// `POST url` with `body`.
    ///
    /// # Errors
    ///
    /// As [`Request::new`].
    pub fn post(url: &str, body: impl Into<Vec<u8>>) -> Result<Self, NetError> {
        Ok(Self::new(Method::Post, url)?.with_body(body))
    }

    /// Appends a header field. `Host`, `Content-Length` and
    /// `Transfer-Encoding` are set by the engine and replaced if given.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Sets the body bytes.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The header fields.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Mutable header fields.
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.headers
    }

    /// The body bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Checks header names and values for bytes that would break framing.
    /// Errors name the header, never its value.
    pub(crate) fn validate_headers(&self) -> Result<(), NetError> {
        for (name, value) in self.headers.iter() {
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !name_ok {
                return Err(NetError::new(
                    NetErrorKind::InvalidRequest,
                    self.url.authority(),
                    format!("header name {name:?} is not a valid HTTP token"),
                    "header names may hold only letters, digits and !#$%&'*+-.^_`|~",
                    "fix the header name",
                ));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(NetError::new(
                    NetErrorKind::InvalidRequest,
                    self.url.authority(),
                    format!("the value of header {name:?} contains CR, LF or NUL"),
                    "those bytes would split the header and corrupt the request",
                    "remove line breaks from the header value (the value is not shown here)",
                ));
            }
        }
        Ok(())
    }
}

/// A response head with its streaming body.
///
/// Every status, including 4xx and 5xx, is delivered as a `Response`.
#[derive(Debug)]
pub struct Response {
    pub(crate) status: u16,
    pub(crate) reason: String,
    pub(crate) headers: Headers,
    pub(crate) body: Body,
}

impl Response {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The reason phrase as sent (may be empty).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The response header fields.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// The body, read chunk by chunk.
    pub fn body(&mut self) -> &mut Body {
        &mut self.body
    }

    /// Splits the response into status, headers and body.
    pub fn into_parts(self) -> (u16, Headers, Body) {
        (self.status, self.headers, self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_case_insensitive_and_tokens_split_on_commas() {
        let mut h = Headers::new();
        h.append("Connection", "keep-alive, Close");
        h.append("X-A", "1");
        h.append("x-a", "2");
        assert!(h.has_token("connection", "close"));
        assert_eq!(h.get_all("X-A").collect::<Vec<_>>(), ["1", "2"]);
        h.set("x-A", "3");
        assert_eq!(h.get_all("x-a").collect::<Vec<_>>(), ["3"]);
    }

    #[test]
    fn headers_debug_redacts_credential_like_names() {
        let mut h = Headers::new();
        h.append("Authorization", "Bearer s1");
        h.append("x-api-key", "s2");
        h.append("x-goog-api-key", "s3");
        h.append("Cookie", "s4");
        h.append("content-type", "application/json");
        let d = format!("{h:?}");
        for s in ["s1", "s2", "s3", "s4"] {
            assert!(!d.contains(s), "{d}");
        }
        assert!(d.contains("application/json"), "{d}");
    }

    #[test]
    fn debug_hides_header_values_and_query() {
        let r = Request::get("https://h/p?key=sekrit")
            .unwrap()
            .with_header("Authorization", "Bearer sekrit");
        let d = format!("{r:?}");
        assert!(!d.contains("sekrit"), "{d}");
        assert!(d.contains("authorization"));
    }

    #[test]
    fn header_with_newline_is_rejected_without_its_value() {
        let r = Request::get("http://h/")
            .unwrap()
            .with_header("X-Key", "abc\r\nsekrit");
        let e = r.validate_headers().unwrap_err();
        assert_eq!(e.kind(), NetErrorKind::InvalidRequest);
        assert!(!format!("{e} {e:?}").contains("sekrit"));
    }
}
