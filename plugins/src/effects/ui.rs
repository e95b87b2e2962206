//! The `ui` capability: UI intents a plugin hands to the embedding.

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects};

impl Effects {
    /// Checks that the plugin may show UI intents and records one as an
    /// effect (`plugin.ui`); `deliver` shows it and says whether it was.
    ///
    /// # Errors
    ///
    /// Denied without the `ui` grant (nothing is shown).
    pub fn ui(
        &self,
        summary: &serde_json::Value,
        deliver: impl FnOnce() -> bool,
    ) -> Result<bool, EffectError> {
        if !self.grants.ui {
            return Err(self.deny("ui", "ui".to_owned(), format!("a UI intent ({summary})")));
        }
        let effect_id = self.intent(
            "plugin.ui",
            &json!({"plugin": self.plugin, "intent": summary}),
        )?;
        let shown = deliver();
        self.complete(
            effect_id,
            Outcome::Ok,
            if shown {
                Mutation::Applied
            } else {
                Mutation::NotApplied
            },
            &json!({"shown": shown}),
        )?;
        Ok(shown)
    }
}
