//! smith/searxng: a search provider plugin (`search-provider-plugin`
//! world) for `web_search`, asking a SearXNG instance's JSON API at
//! `web.searxng-url`: `GET BASE/search?q=QUERY&format=json`.
//!
//! The request goes through the host's `web-get` (the grant `web`), under
//! the public-only address policy: an instance on this machine or the
//! private network must be listed in `web.allow-hosts`, which only the user
//! sets. The instance's host is the user's choice, so the plugin needs no
//! `net` grant naming it.

mod common;

use serde_json::Value;
use smith_plugin_sdk::host::SearchHit;
use smith_plugin_sdk::search::exports::smith::plugin::search::Guest;

use common::{config_str, encode, get_json, text};

/// The option naming the instance (docs/config.md).
const WEB_SEARXNG_URL: &str = "web.searxng-url";

struct Searxng;

impl Guest for Searxng {
    fn ready() -> Result<(), String> {
        config_str(WEB_SEARXNG_URL).map(|_| ()).ok_or_else(|| {
            "set `web.searxng-url` to the base URL of a SearXNG instance whose JSON format is enabled (`smith config set web.searxng-url https://searx.example.org`; an instance on this machine or the private network must also be in `web.allow-hosts`)".to_owned()
        })
    }

    fn search(query: String, count: u32) -> Result<Vec<SearchHit>, String> {
        let base = config_str(WEB_SEARXNG_URL).ok_or_else(|| {
            Self::ready()
                .err()
                .unwrap_or_else(|| "`web.searxng-url` is not set".to_owned())
        })?;
        let trimmed = base.trim_end_matches('/');
        let endpoint = if trimmed.ends_with("/search") {
            trimmed.to_owned()
        } else {
            format!("{trimmed}/search")
        };
        let url = format!("{endpoint}?q={}&format=json", encode(&query));
        let headers = [("accept".to_owned(), "application/json".to_owned())];
        let value = get_json("SearXNG", &url, &headers, |status| {
            if status == 403 {
                "a SearXNG instance answers 403 when its `search.formats` setting does not include `json`; enable it in the instance's settings.yml".to_owned()
            } else {
                format!("check that `web.searxng-url` ({base}) is a SearXNG instance")
            }
        })?;
        let results = value
            .get("results")
            .and_then(Value::as_array)
            .ok_or("could not read SearXNG's answer: it has no `results` array")?;
        Ok(results
            .iter()
            .filter_map(|r| {
                Some(SearchHit {
                    title: text(r, "title"),
                    url: r.get("url")?.as_str()?.to_owned(),
                    snippet: text(r, "content"),
                })
            })
            .take(count as usize)
            .collect())
    }
}

smith_plugin_sdk::search::export_search!(Searxng);
