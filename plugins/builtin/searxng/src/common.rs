//! What the built-in search providers share (smith/brave includes this
//! file too): the configuration they read, query encoding, and the one GET
//! through the host's `web-get`, under the public-only address policy and
//! the time cap `web.timeout-s`.

use serde_json::Value;
use smith_plugin_sdk::host;

/// The time cap when `web.timeout-s` cannot be read (its default).
const DEFAULT_TIMEOUT_S: u64 = 30;

/// Search answers are small: their size cap.
const SEARCH_MAX_BYTES: u64 = 2 << 20;

/// A string option of smith's configuration, none when unset or empty.
pub fn config_str(key: &str) -> Option<String> {
    let text = host::config_get(key)?;
    let value: String = serde_json::from_str(&text).ok()?;
    let value = value.trim().to_owned();
    (!value.is_empty()).then_some(value)
}

/// The time cap in milliseconds (`web.timeout-s`).
fn timeout_ms() -> u32 {
    let seconds = host::config_get("web.timeout-s")
        .and_then(|text| serde_json::from_str::<u64>(&text).ok())
        .unwrap_or(DEFAULT_TIMEOUT_S);
    u32::try_from(seconds.saturating_mul(1000)).unwrap_or(u32::MAX)
}

/// The JSON answer of a GET of `url` with `headers` to the provider
/// `name`; `advice` says what to do about a non-2xx status.
///
/// # Errors
///
/// When the host refuses or fails the request, the status is not 2xx, or
/// the answer is not JSON.
pub fn get_json(
    name: &str,
    url: &str,
    headers: &[(String, String)],
    advice: impl Fn(u16) -> String,
) -> Result<Value, String> {
    let response = host::web_get(url, headers, timeout_ms(), SEARCH_MAX_BYTES).map_err(|err| {
        let text = match err {
            host::EffectError::Denied(t)
            | host::EffectError::Invalid(t)
            | host::EffectError::Failed(t) => t,
        };
        format!("could not ask {name}: {text}")
    })?;
    if !(200..300).contains(&response.status) {
        return Err(format!(
            "{name} answered HTTP {}; {}",
            response.status,
            advice(response.status)
        ));
    }
    serde_json::from_slice(&response.body)
        .map_err(|e| format!("could not read {name}'s answer: it is not JSON ({e})"))
}

/// The string field `key` of `value`, trimmed; empty when missing.
pub fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// `text` percent-encoded for a query value (unreserved characters kept,
/// spaces as `+`).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
