//! smith/brave: a search provider plugin (`search-provider-plugin` world)
//! for `web_search`, asking the Brave Search API:
//! `GET ENDPOINT?q=QUERY&count=N` with the key in `X-Subscription-Token`.
//!
//! The key (`smith auth set brave`, the secret `brave.api_key`) never
//! reaches the plugin: the header value is `{secret:brave.api_key}` and
//! the host puts the key in when it sends the request (the grant
//! `secrets "brave.api_key"`). The request goes through the host's
//! `web-get` (the grant `web`), so `web.brave-url` (a relay, or a local
//! server in tests, which `web.allow-hosts` must then list) needs no grant
//! of its own.

#[path = "../../searxng/src/common.rs"]
mod common;

use serde_json::Value;
use smith_plugin_sdk::host::{self, SearchHit};
use smith_plugin_sdk::search::exports::smith::plugin::search::Guest;

use common::{config_str, encode, get_json, text};

/// The secret holding the Brave Search API key (`smith auth set brave`).
const BRAVE_KEY: &str = "brave.api_key";

/// The option changing the endpoint (docs/config.md).
const WEB_BRAVE_URL: &str = "web.brave-url";

/// The Brave Search API's web search endpoint.
const ENDPOINT: &str = "https://api.search.brave.com/res/v1/web/search";

struct Brave;

impl Guest for Brave {
    fn ready() -> Result<(), String> {
        if host::secret_available(BRAVE_KEY).unwrap_or(false) {
            Ok(())
        } else {
            Err(format!(
                "store a Brave Search API key with `smith auth set brave` (it reads the key from standard input; the secret {BRAVE_KEY})"
            ))
        }
    }

    fn search(query: String, count: u32) -> Result<Vec<SearchHit>, String> {
        Self::ready()?;
        let endpoint = config_str(WEB_BRAVE_URL).unwrap_or_else(|| ENDPOINT.to_owned());
        let url = format!("{endpoint}?q={}&count={count}", encode(&query));
        let headers = [
            ("accept".to_owned(), "application/json".to_owned()),
            (
                "x-subscription-token".to_owned(),
                format!("{{secret:{BRAVE_KEY}}}"),
            ),
        ];
        let value = get_json("the Brave Search API", &url, &headers, |status| {
            match status {
            401 | 403 => "the Brave Search API refused the key; store a valid one with `smith auth set brave` (it reads the key from standard input)".to_owned(),
            429 => "the Brave Search API's rate limit or quota was reached; wait, or check the plan".to_owned(),
            _ => "try again later".to_owned(),
        }
        })?;
        let Some(results) = value
            .get("web")
            .and_then(|web| web.get("results"))
            .and_then(Value::as_array)
        else {
            // No `web` section: the query found no web results.
            return Ok(Vec::new());
        };
        Ok(results
            .iter()
            .filter_map(|r| {
                Some(SearchHit {
                    title: strip_tags(&text(r, "title")),
                    url: r.get("url")?.as_str()?.to_owned(),
                    snippet: strip_tags(&text(r, "description")),
                })
            })
            .take(count as usize)
            .collect())
    }
}

/// Brave marks the query's words with `<strong>`: the text without tags.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

smith_plugin_sdk::search::export_search!(Brave);
