//! The `web-search` capability (built-in plugins only, smith/web's
//! `web_search`): the host asks the search provider plugin the
//! configuration chooses (`web.search-provider`, or the first ready one)
//! and hands its hits back. The provider's own requests run under its own
//! grants and are recorded as its effects.

use std::sync::Arc;

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects};
use crate::bindings::provider::smith::plugin::host::SearchAnswer;
use crate::search::SearchProviders;

/// The configuration key naming the search provider plugin `web-search`
/// asks.
pub const WEB_SEARCH_PROVIDER: &str = "web.search-provider";

impl Effects {
    /// Routes `web-search` to `providers` (the grant `web-search`).
    #[must_use]
    pub fn with_search(mut self, providers: Arc<SearchProviders>) -> Self {
        self.search = Some(providers);
        self
    }

    /// `web-search`: at most `count` hits of `query` from the chosen
    /// search provider plugin; `stop` (the caller's call was cancelled)
    /// interrupts the provider. Recorded in the effect journal.
    ///
    /// # Errors
    ///
    /// Denied without the `web-search` grant; failed with what to
    /// configure when no provider is ready, or with the provider's message.
    pub(crate) fn web_search(
        &self,
        query: &str,
        count: u32,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<SearchAnswer, EffectError> {
        let Some(providers) = &self.search else {
            return Err(self.deny(
                "web-search",
                "web-search".to_owned(),
                format!("web-search {query:?}"),
            ));
        };
        let chosen = search_provider(self);
        let effect_id = self.intent(
            "plugin.web-search",
            &json!({"plugin": self.plugin, "query": query, "count": count, "provider": chosen}),
        )?;
        match providers.search(chosen.as_deref(), query, count, stop) {
            Ok((provider, hits)) => {
                self.complete(
                    effect_id,
                    Outcome::Ok,
                    Mutation::NotApplied,
                    &json!({"provider": provider, "hits": hits.len()}),
                )?;
                Ok(SearchAnswer { provider, hits })
            }
            Err(message) => {
                self.complete(
                    effect_id,
                    Outcome::Error,
                    Mutation::NotApplied,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(message))
            }
        }
    }
}

/// `web.search-provider` in the runtime's configuration: the search
/// provider plugin the user chose, none when unset.
fn search_provider(effects: &Effects) -> Option<String> {
    let text = effects.config_get(WEB_SEARCH_PROVIDER)?;
    let value = serde_json::from_str::<String>(&text).unwrap_or(text);
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_owned())
}
