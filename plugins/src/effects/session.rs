//! The `session-read` capability: `session-entries`, a bounded page of the
//! current session's messages.

use std::sync::Arc;

use serde_json::json;
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use super::{EffectError, Effects, MAX_EFFECT_BYTES};

/// The most entries one `session-entries` page returns.
pub const MAX_SESSION_PAGE: u32 = 256;

/// How the embedding answers `session-entries`: given an offset and a
/// limit, the current session's messages from that offset on, as
/// `(role, text)` pairs, oldest first (the host bounds the page again).
pub type SessionSource = Arc<dyn Fn(u64, u32) -> Vec<(String, String)> + Send + Sync>;

impl Effects {
    /// `session-entries`: checks the `session-read` grant, records the
    /// intent, asks the session source for at most
    /// [`MAX_SESSION_PAGE`] entries (and at most [`MAX_EFFECT_BYTES`] of
    /// text) from `offset`, records the completion (a read: not-applied).
    ///
    /// # Errors
    ///
    /// Denied without `session-read`; failed when the host has no session
    /// source.
    pub fn session_entries(
        &self,
        offset: u64,
        limit: u32,
    ) -> Result<Vec<(String, String)>, EffectError> {
        if !self.grants.session_read {
            return Err(self.deny(
                "session-read",
                "session-read".to_owned(),
                format!("session-entries from entry {offset}"),
            ));
        }
        let limit = limit.min(MAX_SESSION_PAGE);
        let effect_id = self.intent(
            "plugin.session-entries",
            &json!({"plugin": self.plugin, "offset": offset, "limit": limit}),
        )?;
        let Some(source) = &self.session else {
            let message = "session-entries: this host has no session to offer plugins (none is open here); nothing was read".to_owned();
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            return Err(EffectError::Failed(message));
        };
        let mut entries = source(offset, limit);
        entries.truncate(limit as usize);
        let mut total = 0usize;
        let keep = entries
            .iter()
            .take_while(|(role, text)| {
                total = total.saturating_add(role.len() + text.len());
                total <= MAX_EFFECT_BYTES
            })
            .count();
        let cut = keep < entries.len();
        entries.truncate(keep);
        self.complete(
            effect_id,
            Outcome::Ok,
            Mutation::NotApplied,
            &json!({"entries": entries.len(), "cut_at_byte_limit": cut}),
        )?;
        Ok(entries)
    }
}
