//! The Streamable HTTP transport (MCP revisions 2025-03-26 and later),
//! through the host's `http-request` (smith's HTTP engine).
//!
//! Every JSON-RPC message is a POST to the server's endpoint with
//! `Accept: application/json, text/event-stream`. A request is answered by
//! one JSON body or by an event stream (`text/event-stream`) the server
//! closes after the response; `http-request` returns the body complete, so
//! the stream's events are read in order once it ends: notifications and
//! the server's own requests before the response are handled as they would
//! be over stdio. A notification or a response smith sends is accepted
//! with 202 and no body.
//!
//! The `Mcp-Session-Id` the server gives with its `initialize` answer is
//! sent with every later message, and `MCP-Protocol-Version` once the
//! revision is agreed. A 404 to a message carrying a session id means the
//! server forgot the session: the caller initializes again, once, and
//! repeats the message. The session is ended with a DELETE when smith/mcp
//! stops the server.

use serde_json::Value;
use smith_plugin_sdk::host;

/// What one POST brought back.
pub(crate) enum Reply {
    /// Accepted without a body (202, or an empty 2xx).
    Accepted,
    /// The JSON-RPC messages of the body (one object, a batch, or each
    /// `data` of an event stream), in order.
    Messages(Vec<Value>),
}

/// Why a POST brought back no messages.
pub(crate) enum HttpFailure {
    /// The session id was refused with 404: initialize again.
    Expired,
    /// The exchange was cancelled (the call was aborted).
    Cancelled,
    /// Anything else, said for a diagnostic.
    Failed(String),
}

/// A server's endpoint and the session smith holds with it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Endpoint {
    /// The configured URL, as written (it may hold a query credential:
    /// shown only through [`shown_url`]).
    pub url: String,
    /// The configured headers, as written: values may name secrets
    /// (`{secret:PROVIDER.SLOT}`) or variables (`${VAR}`), which the host
    /// puts in; never shown.
    pub headers: Vec<(String, String)>,
    /// The `Mcp-Session-Id` the server gave, if it gave one.
    pub session: Option<String>,
    /// The agreed revision, sent as `MCP-Protocol-Version` once known.
    pub protocol: String,
}

/// `url` without what may be a credential: user-info and the query.
pub(crate) fn shown_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let hidden = if url.contains('?') { "?…" } else { "" };
    if scheme.is_empty() {
        format!("{authority}{path}{hidden}")
    } else {
        format!("{scheme}://{authority}{path}{hidden}")
    }
}

fn error_text(err: &host::EffectError) -> String {
    match err {
        host::EffectError::Denied(text)
        | host::EffectError::Invalid(text)
        | host::EffectError::Failed(text) => text.clone(),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl Endpoint {
    /// The headers of every message: the configured ones, then the
    /// transport's.
    fn request_headers(&self, json_body: bool) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        if json_body {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
        }
        headers.push((
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ));
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
        }
        if !self.protocol.is_empty() {
            headers.push(("MCP-Protocol-Version".to_owned(), self.protocol.clone()));
        }
        headers
    }

    /// POSTs `message`; keeps the session id the server gives.
    pub(crate) fn post(&mut self, message: &Value) -> Result<Reply, HttpFailure> {
        let headers = self.request_headers(true);
        let response =
            host::http_request("POST", &self.url, &headers, message.to_string().as_bytes())
                .map_err(|err| {
                    let text = error_text(&err);
                    if host::cancelled() || text.contains("cancelled") {
                        HttpFailure::Cancelled
                    } else {
                        HttpFailure::Failed(text)
                    }
                })?;
        if response.status == 404 && self.session.is_some() {
            return Err(HttpFailure::Expired);
        }
        if !(200..300).contains(&response.status) {
            let body = String::from_utf8_lossy(&response.body);
            let body: String = body.trim().chars().take(300).collect();
            return Err(HttpFailure::Failed(format!(
                "it answered HTTP {}{}",
                response.status,
                if body.is_empty() {
                    String::new()
                } else {
                    format!(" ({body})")
                }
            )));
        }
        if let Some(session) = header(&response.headers, "mcp-session-id")
            && self.session.is_none()
        {
            self.session = Some(session.to_owned());
        }
        if response.status == 202 || response.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Reply::Accepted);
        }
        let kind = header(&response.headers, "content-type")
            .unwrap_or("")
            .to_ascii_lowercase();
        let body = String::from_utf8_lossy(&response.body);
        let texts: Vec<String> = if kind.starts_with("text/event-stream") {
            events(&body)
        } else {
            vec![body.into_owned()]
        };
        let mut messages = Vec::new();
        for text in texts {
            let value: Value = serde_json::from_str(&text).map_err(|err| {
                HttpFailure::Failed(format!(
                    "its answer is not JSON-RPC ({err}): {}",
                    text.chars().take(200).collect::<String>()
                ))
            })?;
            match value {
                Value::Array(batch) => messages.extend(batch),
                other => messages.push(other),
            }
        }
        Ok(Reply::Messages(messages))
    }

    /// Ends the session (DELETE with its id), best effort: a server that
    /// does not allow it answers 405, which is fine.
    pub(crate) fn end_session(&mut self) {
        if self.session.is_some() {
            let headers = self.request_headers(false);
            let _ = host::http_request("DELETE", &self.url, &headers, &[]);
        }
        self.session = None;
        self.protocol.clear();
    }
}

/// The data of each event of an event stream, in order: `data:` lines of
/// one event joined by newlines; comments, other fields and events without
/// data are skipped.
pub(crate) fn events(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut data: Option<String> = None;
    let body = body.replace("\r\n", "\n").replace('\r', "\n");
    for line in body.split('\n') {
        if line.is_empty() {
            if let Some(done) = data.take()
                && !done.is_empty()
            {
                out.push(done);
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if field == "data" {
            match &mut data {
                Some(text) => {
                    text.push('\n');
                    text.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    // The server closed the stream right after its last event.
    if let Some(done) = data
        && !done.is_empty()
    {
        out.push(done);
    }
    out
}
