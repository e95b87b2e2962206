//! The `net` capability: `http-request` to a granted host through
//! smith-net, with `{secret:HANDLE}` header values filled in by the host.

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{
    EffectError, Effects, MAX_EFFECT_BYTES,
    secrets::{expand_secrets, secret_references},
};

/// An HTTP response returned to the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// The complete body.
    pub body: Vec<u8>,
}

impl Effects {
    /// `http-request`: checks the URL's host against the `net` grants,
    /// records the intent, sends through smith-net, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant for the host; invalid for a bad method or
    /// URL; failed when the exchange fails.
    pub fn http_request(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<HttpResponse, EffectError> {
        self.exchange_with(method, url, headers, body, None)
    }

    /// [`Effects::http_request`] that gives up when `stop` turns true (the
    /// call was cancelled): the exchange ends at the engine's next
    /// cancellation point (connecting, waiting for the head, between body
    /// chunks) and fails saying it was cancelled.
    ///
    /// # Errors
    ///
    /// As [`Effects::http_request`]; failed when cancelled.
    pub fn http_request_until(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<HttpResponse, EffectError> {
        self.exchange_with(method, url, headers, body, Some(stop))
    }

    fn exchange_with(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        stop: Option<&(dyn Fn() -> bool + Sync)>,
    ) -> Result<HttpResponse, EffectError> {
        let method = match method.to_ascii_uppercase().as_str() {
            "GET" => smith_net::Method::Get,
            "HEAD" => smith_net::Method::Head,
            "POST" => smith_net::Method::Post,
            "PUT" => smith_net::Method::Put,
            "PATCH" => smith_net::Method::Patch,
            "DELETE" => smith_net::Method::Delete,
            "OPTIONS" => smith_net::Method::Options,
            other => {
                return Err(EffectError::Invalid(format!(
                    "http-request: unknown method {other:?}; use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS"
                )));
            }
        };
        let parsed = smith_net::Url::parse(url)
            .map_err(|e| EffectError::Invalid(format!("http-request: bad URL: {e}")))?;
        let host = parsed.host().to_ascii_lowercase();
        // Without a `net` grant for the host, the endpoint of a configured
        // MCP server (`mcp-net`) is the only way out.
        let mcp = if self.grants.net.contains(&host) {
            None
        } else {
            match self.mcp_endpoint(&parsed) {
                Ok(Some(endpoint)) => Some(endpoint),
                Ok(None) if self.grants.mcp_net => {
                    return Err(self.deny(
                        "net",
                        "an MCP server whose url is this endpoint".to_owned(),
                        format!(
                            "http-request {} to {host}, which is not the url of a configured MCP server (smith/mcp may reach only those)",
                            method.as_str()
                        ),
                    ));
                }
                Ok(None) => {
                    return Err(self.deny(
                        "net",
                        format!("net {host:?}"),
                        format!("http-request {} to host {host}", method.as_str()),
                    ));
                }
                Err(why) => {
                    return Err(EffectError::Invalid(format!(
                        "http-request: {why}; nothing was sent"
                    )));
                }
            }
        };
        // A header exactly as the MCP server's configuration writes it may
        // name that configuration's secrets and variables.
        let configured = |name: &str, value: &str| -> bool {
            mcp.as_ref().is_some_and(|endpoint| {
                endpoint
                    .headers
                    .iter()
                    .any(|(n, v)| n.eq_ignore_ascii_case(name) && v == value)
            })
        };
        if body.len() > MAX_EFFECT_BYTES {
            return Err(EffectError::Invalid(format!(
                "http-request: the body has {} bytes, more than the {MAX_EFFECT_BYTES} allowed",
                body.len()
            )));
        }
        let mut handles: Vec<String> = Vec::new();
        for (name, value) in headers {
            for handle in secret_references(value).map_err(|problem| {
                EffectError::Invalid(format!("http-request: header {name:?}: {problem}"))
            })? {
                if !self.grants.secrets.iter().any(|g| g == handle) && !configured(name, value) {
                    return Err(self.deny(
                        "secrets",
                        format!("secrets {handle:?}"),
                        format!(
                            "the secret {handle} in header {name:?} of an http-request to {host}"
                        ),
                    ));
                }
                if !handles.iter().any(|h| h == handle) {
                    handles.push(handle.to_owned());
                }
            }
        }
        let mut request = smith_net::Request::new(method, url)
            .map_err(|e| EffectError::Invalid(format!("http-request: {e}")))?
            .with_body(body);
        // Header values may carry credentials: the journal holds the names
        // and the handles of the secrets the host put in, never values.
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        // An MCP server's configured URL may carry a key in its query: the
        // journal keeps the endpoint without it.
        let recorded = if mcp.is_some() {
            url.split(['?', '#']).next().unwrap_or(url)
        } else {
            url
        };
        let effect_id = self.intent(
            "plugin.http-request",
            &json!({"plugin": self.plugin, "method": method.as_str(), "url": recorded, "headers": names, "secrets": handles}),
        )?;
        let idempotent = method.is_idempotent();
        let mut values = Vec::with_capacity(handles.len());
        for handle in &handles {
            match self.resolve_secret(handle) {
                Ok(value) => values.push((handle.as_str(), value)),
                Err(message) => {
                    let message = format!("http-request: {message}; nothing was sent");
                    self.complete(
                        effect_id,
                        Outcome::Error,
                        Mutation::NotApplied,
                        &json!({"error": message}),
                    )?;
                    return Err(EffectError::Failed(message));
                }
            }
        }
        for (name, value) in headers {
            let mut value = value.clone();
            if configured(name, &value) {
                let (expanded, unset) =
                    super::mcp_net::expand_env(&value, &|var| std::env::var(var).ok());
                if !unset.is_empty() {
                    let message = format!(
                        "http-request: the configured header {name:?} of the MCP server at {host} names the environment variable(s) {} that smith's environment does not set; set them (or give `${{VAR:-default}}`) and start smith again; nothing was sent",
                        unset.join(", ")
                    );
                    self.complete(
                        effect_id,
                        Outcome::Error,
                        Mutation::NotApplied,
                        &json!({"error": message}),
                    )?;
                    return Err(EffectError::Failed(message));
                }
                // The configured value may be a credential: redacted from
                // now on, whole and its last word (`Bearer TOKEN`).
                for part in [expanded.as_str(), expanded.rsplit(' ').next().unwrap_or("")] {
                    if part.len() >= super::MIN_REGISTERED_SECRET {
                        smith_diag::secrets::register(part);
                    }
                }
                value = expanded;
            }
            request
                .headers_mut()
                .append(name, expand_secrets(&value, &values));
        }
        let Some(client) = &self.net else {
            let message = "http-request: this host has no HTTP engine configured for plugins; nothing was sent".to_owned();
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            return Err(EffectError::Failed(message));
        };
        let result = send_until(client, request, stop);
        // A message to an MCP server is like a line to a spawned one: what
        // it does is unknown inside a tool call that may change something,
        // and nothing otherwise (handshakes, listings, read-only tools).
        let changes = if mcp.is_some() {
            let call = self
                .call
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if call.parent.is_some() && !call.read_only {
                Mutation::Unknown
            } else {
                Mutation::NotApplied
            }
        } else if idempotent {
            Mutation::NotApplied
        } else {
            Mutation::Applied
        };
        let (outcome, mutation, output) = match &result {
            Ok(response) => (
                Outcome::Ok,
                changes,
                json!({"status": response.status, "bytes": response.body.len()}),
            ),
            Err(message) => (
                Outcome::Error,
                if idempotent {
                    Mutation::NotApplied
                } else {
                    Mutation::Unknown
                },
                json!({"error": message}),
            ),
        };
        self.complete(effect_id, outcome, mutation, &output)?;
        result.map_err(|message| EffectError::Failed(format!("http-request: {message}")))
    }
}

/// One exchange through `client`, the body read to its end; with `stop`,
/// cancelled once it turns true (checked every 20 ms by a watcher that
/// wakes and ends as soon as the exchange does).
fn send_until(
    client: &smith_net::Client,
    request: smith_net::Request,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<HttpResponse, String> {
    let cancel = smith_net::CancelToken::new();
    let Some(stop) = stop else {
        return exchange(client, request, &cancel);
    };
    let (done, ended) = std::sync::mpsc::channel::<()>();
    let watched = cancel.clone();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                ended.recv_timeout(std::time::Duration::from_millis(20))
            {
                if stop() {
                    watched.cancel();
                    return;
                }
            }
        });
        let result = exchange(client, request, &cancel);
        drop(done);
        result.map_err(|message| {
            if cancel.is_cancelled() {
                format!("the exchange was cancelled (the call was aborted): {message}")
            } else {
                message
            }
        })
    })
}

fn exchange(
    client: &smith_net::Client,
    request: smith_net::Request,
    cancel: &smith_net::CancelToken,
) -> Result<HttpResponse, String> {
    let mut response = client
        .send(request, cancel.clone())
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let mut body = Vec::new();
    loop {
        match response.body().next_event() {
            smith_net::BodyEvent::Data(bytes) => {
                if body.len() + bytes.len() > MAX_EFFECT_BYTES {
                    return Err(format!(
                        "the response body is larger than the {MAX_EFFECT_BYTES} bytes http-request returns"
                    ));
                }
                body.extend_from_slice(&bytes);
            }
            smith_net::BodyEvent::End(smith_net::Outcome::Complete { .. }) => break,
            smith_net::BodyEvent::End(other) => {
                return Err(format!("the response body did not complete: {other:?}"));
            }
        }
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}
