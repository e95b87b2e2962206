//! `web_search`'s adapters. An adapter turns a query into one GET request
//! (URL and headers) and the response into hits; the tool picks the
//! adapter from the configuration and sends the request through the host's
//! `web-get`, under the same address policy and caps as `web_fetch`. A
//! vendor's key never reaches the plugin: the adapter names it as
//! `{secret:HANDLE}` in a header and the host puts the value in.
//!
//! The adapters ship inside smith/web rather than as plugins of their own:
//! the [`Adapter`] trait is the contract a separate `search-provider`
//! plugin world would carry (docs/web.md says what that needs).

use serde_json::Value;

use crate::url::encode;

/// One search result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The page's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// A short excerpt.
    pub snippet: String,
}

/// A search provider: the request for a query, and the hits of its answer.
pub trait Adapter {
    /// The adapter's name, as `web.search-provider` names it.
    fn name(&self) -> &'static str;

    /// The URL and headers of the GET that asks for `count` hits of
    /// `query`.
    fn request(&self, query: &str, count: u32) -> (String, Vec<(String, String)>);

    /// The hits in a 2xx answer's body, at most `count`.
    ///
    /// # Errors
    ///
    /// When the body is not the provider's JSON shape.
    fn hits(&self, body: &[u8], count: u32) -> Result<Vec<Hit>, String>;

    /// What to do about a non-2xx status.
    fn status_advice(&self, status: u16) -> String;
}

/// A SearXNG instance's JSON API: `BASE/search?q=QUERY&format=json`.
pub struct Searxng {
    /// The instance's base URL (`web.searxng-url`).
    pub base: String,
}

impl Adapter for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn request(&self, query: &str, _count: u32) -> (String, Vec<(String, String)>) {
        let base = self.base.trim_end_matches('/');
        let endpoint = if base.ends_with("/search") {
            base.to_owned()
        } else {
            format!("{base}/search")
        };
        (
            format!("{endpoint}?q={}&format=json", encode(query)),
            vec![("accept".to_owned(), "application/json".to_owned())],
        )
    }

    fn hits(&self, body: &[u8], count: u32) -> Result<Vec<Hit>, String> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| format!("its answer is not JSON ({e})"))?;
        let results = value
            .get("results")
            .and_then(Value::as_array)
            .ok_or("its answer has no `results` array")?;
        Ok(results
            .iter()
            .filter_map(|r| {
                Some(Hit {
                    title: text(r, "title"),
                    url: r.get("url")?.as_str()?.to_owned(),
                    snippet: text(r, "content"),
                })
            })
            .take(count as usize)
            .collect())
    }

    fn status_advice(&self, status: u16) -> String {
        if status == 403 {
            "a SearXNG instance answers 403 when its `search.formats` setting does not include `json`; enable it in the instance's settings.yml".to_owned()
        } else {
            format!(
                "check that `web.searxng-url` ({}) is a SearXNG instance",
                self.base
            )
        }
    }
}

/// The secret holding the Brave Search API key (`smith auth set brave`).
pub const BRAVE_KEY: &str = "brave.api_key";

/// The Brave Search API: `ENDPOINT?q=QUERY&count=N`, the key in the
/// `X-Subscription-Token` header.
pub struct Brave {
    /// The endpoint (`web.brave-url`).
    pub endpoint: String,
}

impl Adapter for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    fn request(&self, query: &str, count: u32) -> (String, Vec<(String, String)>) {
        (
            format!("{}?q={}&count={count}", self.endpoint, encode(query)),
            vec![
                ("accept".to_owned(), "application/json".to_owned()),
                (
                    "x-subscription-token".to_owned(),
                    format!("{{secret:{BRAVE_KEY}}}"),
                ),
            ],
        )
    }

    fn hits(&self, body: &[u8], count: u32) -> Result<Vec<Hit>, String> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| format!("its answer is not JSON ({e})"))?;
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
                Some(Hit {
                    title: strip_tags(&text(r, "title")),
                    url: r.get("url")?.as_str()?.to_owned(),
                    snippet: strip_tags(&text(r, "description")),
                })
            })
            .take(count as usize)
            .collect())
    }

    fn status_advice(&self, status: u16) -> String {
        match status {
            401 | 403 => "the Brave Search API refused the key; store a valid one with `smith auth set brave` (it reads the key from standard input)".to_owned(),
            429 => "the Brave Search API's rate limit or quota was reached; wait, or check the plan".to_owned(),
            _ => "try again later".to_owned(),
        }
    }
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned()
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
