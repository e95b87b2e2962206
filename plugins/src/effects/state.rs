//! A plugin's own state in the current session: `session-state` reads the
//! value it last stored under a key on the session's selected branch,
//! `set-session-state` stores a new one as a durable session entry,
//! through the embedding's [`StateAccess`].

use std::sync::Arc;

use super::{EffectError, Effects};

/// The longest key `set-session-state` accepts, in bytes.
pub const MAX_STATE_KEY: usize = 64;

/// The largest value `set-session-state` accepts, in bytes.
pub const MAX_STATE_VALUE: usize = 64 << 10;

/// The runtime's session as plugins keep their state in it.
pub trait StateAccess: Send + Sync {
    /// The value `plugin` last stored under `key` on the session's
    /// selected branch; none when it stored none.
    fn get(&self, plugin: &str, key: &str) -> Option<String>;

    /// Records `value` under `key` for `plugin` as a session entry under
    /// the selected leaf, durably, before it returns.
    ///
    /// # Errors
    ///
    /// Why the entry could not be written.
    fn set(&self, plugin: &str, key: &str, value: &str) -> Result<(), String>;
}

/// A shared [`StateAccess`].
pub type SharedState = Arc<dyn StateAccess>;

impl Effects {
    /// Keeps the plugin's session state (`session-state`,
    /// `set-session-state`) in `state` (the runtime's session); without
    /// one, reads find nothing and writes fail saying so.
    #[must_use]
    pub fn with_state(mut self, state: SharedState) -> Self {
        self.state = Some(state);
        self
    }

    /// `session-state`: what the plugin last stored under `key`.
    pub fn session_state(&self, key: &str) -> Option<String> {
        self.state
            .as_ref()
            .and_then(|state| state.get(&self.plugin, key))
    }

    /// `set-session-state`: stores `value` under `key` for the plugin as
    /// one session entry, counted against its journal cap.
    ///
    /// # Errors
    ///
    /// Invalid when the key is empty or longer than [`MAX_STATE_KEY`], or
    /// the value longer than [`MAX_STATE_VALUE`]; limited over the
    /// plugin's journal cap; failed when the host has no session or the
    /// entry could not be written.
    pub fn set_session_state(&self, key: &str, value: &str) -> Result<(), EffectError> {
        if key.is_empty() || key.len() > MAX_STATE_KEY {
            return Err(EffectError::Invalid(format!(
                "set-session-state {key:?}: a key is 1 to {MAX_STATE_KEY} bytes and this one is {}; nothing was stored. Use a short name such as \"list\"",
                key.len()
            )));
        }
        if value.len() > MAX_STATE_VALUE {
            return Err(EffectError::Invalid(format!(
                "set-session-state {key:?}: the value is {} bytes, over the {MAX_STATE_VALUE} a session entry of plugin state may hold; nothing was stored. Store less (keep the state small, or in the plugin's data folder)",
                value.len()
            )));
        }
        let Some(state) = &self.state else {
            return Err(EffectError::Failed(format!(
                "set-session-state {key:?}: this host has no session to keep plugin state in (the plugin runs outside a runtime); nothing was stored"
            )));
        };
        if let Some(budget) = &self.budget
            && !budget.admit(crate::rate::Kind::Journal, 1)
        {
            return Err(EffectError::Limited);
        }
        state
            .set(&self.plugin, key, value)
            .map_err(|why| EffectError::Failed(format!("set-session-state {key:?}: {why}")))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use smith_engine::journal::MemoryJournal;

    use super::*;
    use crate::effects::Grants;
    use crate::rate::{Budget, RateLimits};

    /// A session as a list of (plugin, key, value), newest last.
    #[derive(Default)]
    struct Kept(Mutex<Vec<(String, String, String)>>);

    impl StateAccess for Kept {
        fn get(&self, plugin: &str, key: &str) -> Option<String> {
            let kept = self.0.lock().unwrap();
            kept.iter()
                .rev()
                .find(|(p, k, _)| p == plugin && k == key)
                .map(|(_, _, v)| v.clone())
        }
        fn set(&self, plugin: &str, key: &str, value: &str) -> Result<(), String> {
            self.0
                .lock()
                .unwrap()
                .push((plugin.to_owned(), key.to_owned(), value.to_owned()));
            Ok(())
        }
    }

    fn effects(plugin: &str) -> Effects {
        Effects::new(
            plugin,
            Grants::none(),
            Arc::new(MemoryJournal::new()),
            Arc::default(),
            1,
        )
    }

    #[test]
    fn a_plugin_keeps_and_reads_its_own_state_without_a_grant_within_bounds() {
        let kept: Arc<Kept> = Arc::default();
        let shared: SharedState = kept.clone();
        let a = effects("a/x").with_state(Arc::clone(&shared));
        let b = effects("a/y").with_state(shared);
        assert_eq!(a.session_state("list"), None);
        a.set_session_state("list", "[1]").unwrap();
        b.set_session_state("list", "[2]").unwrap();
        assert_eq!(a.session_state("list").as_deref(), Some("[1]"));
        assert_eq!(b.session_state("list").as_deref(), Some("[2]"));
        let long_key = "k".repeat(MAX_STATE_KEY + 1);
        for (key, value) in [
            ("", "v".to_owned()),
            (long_key.as_str(), "v".to_owned()),
            ("list", "v".repeat(MAX_STATE_VALUE + 1)),
        ] {
            let err = a.set_session_state(key, &value).unwrap_err();
            assert!(
                matches!(&err, EffectError::Invalid(m) if m.contains("nothing was stored")),
                "{err}"
            );
        }
        assert_eq!(
            kept.0.lock().unwrap().len(),
            2,
            "nothing out of bounds is kept"
        );
        // Without a session: nothing to read, and writing fails saying so.
        let none = effects("a/x");
        assert_eq!(none.session_state("list"), None);
        let err = none.set_session_state("list", "[1]").unwrap_err();
        assert!(
            matches!(&err, EffectError::Failed(m) if m.contains("no session to keep plugin state in")),
            "{err}"
        );
    }

    #[test]
    fn each_write_counts_one_journal_entry_against_the_cap() {
        let kept: Arc<Kept> = Arc::default();
        let budget = Arc::new(Budget::new(RateLimits {
            journal_entries: 2,
            ..RateLimits::default()
        }));
        let a = effects("a/x").with_state(kept.clone()).with_budget(budget);
        a.set_session_state("list", "1").unwrap();
        a.set_session_state("list", "2").unwrap();
        assert_eq!(a.set_session_state("list", "3"), Err(EffectError::Limited));
        assert_eq!(a.session_state("list").as_deref(), Some("2"));
    }
}
