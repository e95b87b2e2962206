//! test/searcher: a search provider plugin as a user would install one
//! (`world "search-provider"` in its plugin.kdl): it asks the SearXNG JSON
//! API at `web.searxng-url` with `http-request`, under its manifest's
//! `net HOST` grant rather than the built-ins' `web-get`.

use serde_json::Value;
use smith_plugin_sdk::host::{self, SearchHit};
use smith_plugin_sdk::search::exports::smith::plugin::search::Guest;

struct Searcher;

fn base() -> Option<String> {
    let text = host::config_get("web.searxng-url")?;
    let value: String = serde_json::from_str(&text).ok()?;
    let value = value.trim().trim_end_matches('/').to_owned();
    (!value.is_empty()).then_some(value)
}

fn encode(text: &str) -> String {
    let mut out = String::new();
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

impl Guest for Searcher {
    fn ready() -> Result<(), String> {
        base()
            .map(|_| ())
            .ok_or_else(|| "set `web.searxng-url` for test/searcher".to_owned())
    }

    fn search(query: String, count: u32) -> Result<Vec<SearchHit>, String> {
        let base = base().ok_or("`web.searxng-url` is not set")?;
        let url = format!("{base}/search?q={}&format=json", encode(&query));
        let response = host::http_request("GET", &url, &[], &[]).map_err(|err| match err {
            host::EffectError::Denied(t)
            | host::EffectError::Invalid(t)
            | host::EffectError::Failed(t) => format!("test/searcher could not ask {url}: {t}"),
        })?;
        if response.status != 200 {
            return Err(format!("{url} answered HTTP {}", response.status));
        }
        let value: Value =
            serde_json::from_slice(&response.body).map_err(|e| format!("not JSON: {e}"))?;
        let results = value
            .get("results")
            .and_then(Value::as_array)
            .ok_or("no `results` array")?;
        Ok(results
            .iter()
            .filter_map(|r| {
                Some(SearchHit {
                    title: r.get("title")?.as_str()?.to_owned(),
                    url: r.get("url")?.as_str()?.to_owned(),
                    snippet: r.get("content")?.as_str()?.to_owned(),
                })
            })
            .take(count as usize)
            .collect())
    }
}

smith_plugin_sdk::search::export_search!(Searcher);
