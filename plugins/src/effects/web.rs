//! The `web` capability (built-in plugins only): `web-get`, a GET to any
//! http or https host that smith's HTTP engine sends under the public-only
//! address policy — the host name is resolved by smith and the request is
//! refused unless every address is a public internet address, or the user
//! named the host in the configuration's `web.allow-hosts`. The plugin
//! cannot loosen the policy: the allow list is smith's own option, which
//! only the user changes (`config-set` refuses it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{
    EffectError, Effects, HttpResponse, MAX_EFFECT_BYTES,
    secrets::{expand_secrets, secret_references},
};

/// The configuration key that lists the hosts `web-get` may reach even
/// though they resolve to non-public addresses.
pub const WEB_ALLOW_HOSTS: &str = "web.allow-hosts";

/// The longest `web-get` may take, whatever the plugin asks.
pub const MAX_WEB_TIMEOUT: Duration = Duration::from_secs(300);

/// How often the wait checks the deadline and the call's cancellation.
const WATCH: Duration = Duration::from_millis(20);

impl Effects {
    /// `web-get`: a GET of `url` under the public-only address policy,
    /// bounded by `timeout_ms` (at most [`MAX_WEB_TIMEOUT`]) and
    /// `max_bytes` (at most [`MAX_EFFECT_BYTES`]); `stop` ends it early
    /// (the plugin's call was cancelled). Header values may name secrets
    /// as in `http-request`. Recorded in the effect journal.
    ///
    /// # Errors
    ///
    /// Denied without the `web` grant (or a `secrets` grant a header
    /// names); invalid for a URL that is not http or https; failed when
    /// the policy refuses the address, the exchange fails, the time runs
    /// out or the body is larger than `max_bytes`.
    pub fn web_get(
        &self,
        url: &str,
        headers: &[(String, String)],
        timeout_ms: u32,
        max_bytes: u64,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<HttpResponse, EffectError> {
        if !self.grants.web {
            return Err(self.deny("web", "web".to_owned(), format!("web-get {url}")));
        }
        let parsed = smith_net::Url::parse(url).map_err(|e| {
            EffectError::Invalid(format!(
                "web-get: {url:?} is not an http or https URL: {}; pass an absolute URL such as https://example.com/page",
                e.why()
            ))
        })?;
        let host = parsed.host().to_owned();
        let mut handles: Vec<String> = Vec::new();
        for (name, value) in headers {
            for handle in secret_references(value).map_err(|problem| {
                EffectError::Invalid(format!("web-get: header {name:?}: {problem}"))
            })? {
                if !self.grants.secrets.iter().any(|g| g == handle) {
                    return Err(self.deny(
                        "secrets",
                        format!("secrets {handle:?}"),
                        format!("the secret {handle} in header {name:?} of a web-get to {host}"),
                    ));
                }
                if !handles.iter().any(|h| h == handle) {
                    handles.push(handle.to_owned());
                }
            }
        }
        let timeout = Duration::from_millis(u64::from(timeout_ms.max(1))).min(MAX_WEB_TIMEOUT);
        let max_bytes = usize::try_from(max_bytes)
            .unwrap_or(usize::MAX)
            .min(MAX_EFFECT_BYTES);
        let allow_hosts = web_allow_hosts(self);
        let mut request = smith_net::Request::new(smith_net::Method::Get, url)
            .map_err(|e| EffectError::Invalid(format!("web-get: {e}")))?
            .with_address_policy(smith_net::AddressPolicy::PublicOnly(
                smith_net::PublicOnly {
                    allow_hosts,
                    setting: WEB_ALLOW_HOSTS.to_owned(),
                },
            ));
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        let effect_id = self.intent(
            "plugin.web-get",
            &json!({"plugin": self.plugin, "url": url, "headers": names, "secrets": handles}),
        )?;
        let fail = |message: String| -> Result<HttpResponse, EffectError> {
            self.complete(
                effect_id.clone(),
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            Err(EffectError::Failed(message))
        };
        let mut values = Vec::with_capacity(handles.len());
        for handle in &handles {
            match self.resolve_secret(handle) {
                Ok(value) => values.push((handle.as_str(), value)),
                Err(message) => return fail(format!("web-get: {message}; nothing was sent")),
            }
        }
        for (name, value) in headers {
            request
                .headers_mut()
                .append(name, expand_secrets(value, &values));
        }
        let Some(client) = &self.net else {
            return fail(
                "web-get: this host has no HTTP engine configured for plugins; nothing was sent"
                    .to_owned(),
            );
        };
        match fetch(client, request, timeout, max_bytes, stop) {
            Ok(response) => {
                self.complete(
                    effect_id,
                    Outcome::Ok,
                    Mutation::NotApplied,
                    &json!({"status": response.status, "bytes": response.body.len()}),
                )?;
                Ok(response)
            }
            Err(message) => fail(format!("web-get {url}: {message}")),
        }
    }
}

/// The hosts of `web.allow-hosts` (separated by commas or spaces) in the
/// runtime's configuration, which only the user sets.
fn web_allow_hosts(effects: &Effects) -> Vec<String> {
    let Some(text) = effects.config_get(WEB_ALLOW_HOSTS) else {
        return Vec::new();
    };
    let value: String = serde_json::from_str(&text).unwrap_or_default();
    split_hosts(&value)
}

/// The entries of an allow list: separated by commas or whitespace, empty
/// ones dropped.
fn split_hosts(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|entry| !entry.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Sends `request` and reads its body, within `timeout` and `max_bytes`,
/// stopping early when `stop` says so.
fn fetch(
    client: &smith_net::Client,
    request: smith_net::Request,
    timeout: Duration,
    max_bytes: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<HttpResponse, String> {
    let cancel = smith_net::CancelToken::new();
    let done = AtomicBool::new(false);
    let timed_out = AtomicBool::new(false);
    let deadline = Instant::now() + timeout;
    std::thread::scope(|scope| {
        // The engine observes the token while connecting, waiting for the
        // head and between body chunks: this watch turns the deadline and
        // the call's cancellation into it.
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if Instant::now() >= deadline {
                    timed_out.store(true, Ordering::SeqCst);
                    cancel.cancel();
                    return;
                }
                if stop() {
                    cancel.cancel();
                    return;
                }
                std::thread::sleep(WATCH);
            }
        });
        let result = exchange(client, request, &cancel, max_bytes);
        done.store(true, Ordering::SeqCst);
        result.map_err(|err| match err {
            Failure::Net(_) | Failure::Body(_) if timed_out.load(Ordering::SeqCst) => format!(
                "no complete answer within {} s (the time cap); the server is slow or not answering. Try again later or another source",
                timeout.as_secs_f64()
            ),
            Failure::Net(err) if err.kind() == smith_net::NetErrorKind::AddressRefused => {
                format!("{}; {}; {}", err.what(), err.why(), err.next_action())
            }
            Failure::Net(err) => err.to_string(),
            Failure::Body(message) => message,
        })
    })
}

enum Failure {
    Net(smith_net::NetError),
    Body(String),
}

fn exchange(
    client: &smith_net::Client,
    request: smith_net::Request,
    cancel: &smith_net::CancelToken,
    max_bytes: usize,
) -> Result<HttpResponse, Failure> {
    let mut response = client.send(request, cancel.clone()).map_err(Failure::Net)?;
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
                if body.len() + bytes.len() > max_bytes {
                    return Err(Failure::Body(format!(
                        "the response is larger than the size cap of {max_bytes} bytes, so it was not read further; ask for a smaller page, or raise the cap (up to {MAX_EFFECT_BYTES} bytes)"
                    )));
                }
                body.extend_from_slice(&bytes);
            }
            smith_net::BodyEvent::End(smith_net::Outcome::Complete { .. }) => break,
            smith_net::BodyEvent::End(other) => {
                return Err(Failure::Body(format!(
                    "the response body did not complete: {other:?}"
                )));
            }
        }
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::split_hosts;

    #[test]
    fn the_allow_list_splits_on_commas_and_spaces() {
        assert_eq!(
            split_hosts(" localhost:8080, intranet.example 10.0.0.5,,"),
            ["localhost:8080", "intranet.example", "10.0.0.5"]
        );
        assert!(split_hosts("").is_empty());
    }
}
