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
        if !self.grants.net.contains(&host) {
            return Err(self.deny(
                "net",
                format!("net {host:?}"),
                format!("http-request {} to host {host}", method.as_str()),
            ));
        }
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
                if !self.grants.secrets.iter().any(|g| g == handle) {
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
        let effect_id = self.intent(
            "plugin.http-request",
            &json!({"plugin": self.plugin, "method": method.as_str(), "url": url, "headers": names, "secrets": handles}),
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
            request
                .headers_mut()
                .append(name, expand_secrets(value, &values));
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
        let result = send(client, request);
        let (outcome, mutation, output) = match &result {
            Ok(response) => (
                Outcome::Ok,
                if idempotent {
                    Mutation::NotApplied
                } else {
                    Mutation::Applied
                },
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

pub(super) fn send(
    client: &smith_net::Client,
    request: smith_net::Request,
) -> Result<HttpResponse, String> {
    let mut response = client
        .send(request, smith_net::CancelToken::new())
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
