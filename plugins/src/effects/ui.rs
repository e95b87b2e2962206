//! The `ui` capability: UI intents a plugin hands to the embedding.

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::journal::{completion_failed, intent_failed};
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

    /// [`Effects::ui`] for several intents in a row: their intents are
    /// recorded together (one write, one flush), then each is delivered
    /// (`deliver(i)` shows the `i`th and says whether it was), then their
    /// completions are recorded together. Each intent is still durable
    /// before its intent is shown, and each completion records what
    /// happened. One result per summary, in order: an intent over the
    /// plugin's journal cap is `Limited` and not delivered.
    pub fn ui_batch(
        &self,
        summaries: &[serde_json::Value],
        mut deliver: impl FnMut(usize) -> bool,
    ) -> Vec<Result<bool, EffectError>> {
        if !self.grants.ui {
            return summaries
                .iter()
                .map(|summary| {
                    Err(self.deny("ui", "ui".to_owned(), format!("a UI intent ({summary})")))
                })
                .collect();
        }
        let mut results: Vec<Result<bool, EffectError>> = Vec::with_capacity(summaries.len());
        let mut intents = Vec::new();
        let mut admitted = Vec::new();
        for (i, summary) in summaries.iter().enumerate() {
            match self.new_intent(
                "plugin.ui",
                &json!({"plugin": self.plugin, "intent": summary}),
            ) {
                Ok(intent) => {
                    admitted.push(i);
                    intents.push(intent);
                    results.push(Ok(false));
                }
                Err(err) => results.push(Err(err)),
            }
        }
        if let Err(e) = self.journal.record_intents(&intents) {
            let err = intent_failed(e);
            for &i in &admitted {
                results[i] = Err(err.clone());
            }
            return results;
        }
        let mut completions = Vec::with_capacity(intents.len());
        for (&i, intent) in admitted.iter().zip(intents) {
            let shown = deliver(i);
            let mutation = if shown {
                Mutation::Applied
            } else {
                Mutation::NotApplied
            };
            match self.new_completion(
                intent.effect_id,
                Outcome::Ok,
                mutation,
                &json!({"shown": shown}),
            ) {
                Ok(completion) => {
                    completions.push(completion);
                    results[i] = Ok(shown);
                }
                Err(err) => results[i] = Err(err),
            }
        }
        if let Err(e) = self.journal.record_completions(&completions) {
            let err = completion_failed(e);
            for &i in &admitted {
                if results[i].is_ok() {
                    results[i] = Err(err.clone());
                }
            }
        }
        results
    }
}
