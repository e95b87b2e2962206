//! Configuration for plugins: `config-get` reads the runtime's resolved
//! configuration, `config-set` changes one of the plugin's own declared
//! options for the runtime only, through the embedding's [`ConfigAccess`].

use std::sync::Arc;

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects};

/// The runtime's configuration as plugins see it.
pub trait ConfigAccess: Send + Sync {
    /// The current value of `key` as JSON text; none when it has none.
    fn get(&self, key: &str) -> Option<String>;

    /// Sets `key` (an option `plugin` declared) to `value` (JSON text) for
    /// this runtime only.
    ///
    /// # Errors
    ///
    /// What is wrong (the key is not the plugin's, the value does not match
    /// its schema), saying what to do instead.
    fn set(&self, plugin: &str, key: &str, value: &str) -> Result<(), String>;
}

/// A shared [`ConfigAccess`].
pub type SharedConfig = Arc<dyn ConfigAccess>;

impl Effects {
    /// `config-get`: the value of `key` as JSON text.
    pub fn config_get(&self, key: &str) -> Option<String> {
        self.config.as_ref().and_then(|config| config.get(key))
    }

    /// `config-set`: changes one of the plugin's own options for this
    /// runtime; recorded in the effect journal.
    ///
    /// # Errors
    ///
    /// Invalid when the key is not one the plugin declared or the value
    /// does not match its schema; failed when the host has no
    /// configuration to change.
    pub fn config_set(&self, key: &str, value: &str) -> Result<(), EffectError> {
        let Some(config) = &self.config else {
            return Err(EffectError::Failed(format!(
                "config-set {key:?}: this host offers plugins no configuration; nothing changed"
            )));
        };
        let effect_id = self.intent(
            "plugin.config-set",
            &json!({"plugin": self.plugin, "key": key, "value": value}),
        )?;
        let result = config.set(&self.plugin, key, value);
        let (outcome, mutation, output) = match &result {
            Ok(()) => (Outcome::Ok, Mutation::Applied, json!({"set": key})),
            Err(message) => (
                Outcome::Error,
                Mutation::NotApplied,
                json!({"error": message}),
            ),
        };
        self.complete(effect_id, outcome, mutation, &output)?;
        result.map_err(|message| EffectError::Invalid(format!("config-set {key:?}: {message}")))
    }
}
