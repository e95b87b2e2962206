//! Shared by every capability: refusing an effect without its grant, and
//! recording an effect's intent before it runs and its completion after.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use smith_engine::checkpoint::Checkpoints;
use smith_engine::journal::{EffectCompletion, EffectIntent, Outcome, canonical_cbor};
use smith_engine::tools::Mutation;

use super::{Denial, EffectError, Effects};

impl Effects {
    pub(super) fn deny(
        &self,
        capability: &'static str,
        grant: String,
        request: String,
    ) -> EffectError {
        EffectError::Denied(Denial {
            plugin: self.plugin.clone(),
            capability,
            missing_grant: grant,
            request,
        })
    }

    /// Records the intent of `tool` with `input`; returns its effect id.
    pub(super) fn intent(
        &self,
        tool: &str,
        input: &serde_json::Value,
    ) -> Result<String, EffectError> {
        // An effect is two entries, its intent and its completion; over
        // the run's cap neither is written and the effect does not run.
        let intent = self.new_intent(tool, input)?;
        let effect_id = intent.effect_id.clone();
        self.journal.record_intent(&intent).map_err(intent_failed)?;
        if let Some(checkpoints) = self.checkpoint_for(tool) {
            let before = checkpoints.before();
            self.pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(effect_id.clone(), (tool.to_owned(), before));
        }
        Ok(effect_id)
    }

    /// The intent of an effect of `tool` with `input`, under the plugin's
    /// journal cap (an effect is two entries, its intent and its
    /// completion; over the run's cap neither is written and the effect
    /// does not run), with its effect id drawn.
    pub(super) fn new_intent(
        &self,
        tool: &str,
        input: &serde_json::Value,
    ) -> Result<EffectIntent, EffectError> {
        if let Some(budget) = &self.budget
            && !budget.admit(crate::rate::Kind::Journal, 2)
        {
            return Err(EffectError::Limited);
        }
        let input = canonical_cbor(input).map_err(|e| {
            EffectError::Failed(format!("the effect's input could not be encoded: {e}"))
        })?;
        Ok(EffectIntent {
            effect_id: format!("fx-{}", self.ids.fetch_add(1, Ordering::SeqCst) + 1),
            parent: self.parent(),
            tool: tool.to_owned(),
            plugin_generation: self.generation,
            input,
        })
    }

    /// What the plugin's effects run under: the tool call that runs the
    /// plugin, else the plugin itself.
    fn parent(&self) -> String {
        self.call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .parent
            .clone()
            .unwrap_or_else(|| format!("plugin:{}", self.plugin))
    }

    /// The checkpoint store when effect `tool` may change the project and
    /// runs outside a tool call (inside one, the call's own checkpoint
    /// covers it): processes (they may write anywhere), project writes,
    /// and writes to the plugin's data folder when that folder is inside
    /// the project.
    fn checkpoint_for(&self, tool: &str) -> Option<&Arc<Checkpoints>> {
        let checkpoints = self.checkpoints.as_ref()?;
        let in_call = self
            .call
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .parent
            .is_some();
        if in_call {
            return None;
        }
        let mutates = match tool {
            "plugin.run-process" | "plugin.project-run-process" | "plugin.project-write-file" => {
                true
            }
            "plugin.write-file" | "plugin.edit-file" => {
                let root = Path::new(&checkpoints.root()).to_path_buf();
                std::fs::canonicalize(&self.grants.data_dir)
                    .unwrap_or_else(|_| self.grants.data_dir.clone())
                    .starts_with(root)
            }
            _ => false,
        };
        mutates.then_some(checkpoints)
    }

    /// Snapshots the project after checkpointed effect `effect_id` and
    /// records its checkpoint (a failure is recorded in the entry and
    /// never fails the effect).
    fn checkpoint_after(&self, effect_id: &str) {
        let Some((tool, before)) = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(effect_id)
        else {
            return;
        };
        let Some(checkpoints) = &self.checkpoints else {
            return;
        };
        let record = checkpoints.after(effect_id, &tool, before);
        // The checkpoint is history, not the effect: a failure to record
        // it does not fail the effect.
        let _ = self.journal.record_vcs(&record);
    }

    pub(super) fn complete(
        &self,
        effect_id: String,
        outcome: Outcome,
        mutation: Mutation,
        output: &serde_json::Value,
    ) -> Result<(), EffectError> {
        self.checkpoint_after(&effect_id);
        let completion = self.new_completion(effect_id, outcome, mutation, output)?;
        self.journal
            .record_completion(&completion)
            .map_err(completion_failed)
    }

    /// The completion of `effect_id`, counted against the tool call that
    /// runs the plugin (when one does).
    pub(super) fn new_completion(
        &self,
        effect_id: String,
        outcome: Outcome,
        mutation: Mutation,
        output: &serde_json::Value,
    ) -> Result<EffectCompletion, EffectError> {
        {
            let mut call = self
                .call
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !call.tool.is_empty() {
                call.mutations.push(mutation);
            }
        }
        let output = canonical_cbor(output).map_err(|e| {
            EffectError::Failed(format!("the effect's output could not be encoded: {e}"))
        })?;
        Ok(EffectCompletion {
            effect_id,
            outcome,
            mutation,
            output,
        })
    }

    /// Completes `effect_id` from what the effect did: `Ok((value,
    /// mutation, output))` is recorded as ok and returns `value`;
    /// `Err((message, mutation))` is recorded as an error with `message`
    /// (the caller prefixes the effect's name) and fails with it.
    pub(super) fn settle<T>(
        &self,
        effect_id: String,
        result: Result<(T, Mutation, serde_json::Value), (String, Mutation)>,
    ) -> Result<T, EffectError> {
        match result {
            Ok((value, mutation, output)) => {
                self.complete(effect_id, Outcome::Ok, mutation, &output)?;
                Ok(value)
            }
            Err((message, mutation)) => {
                self.complete(
                    effect_id,
                    Outcome::Error,
                    mutation,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(message))
            }
        }
    }
}

/// An intent that could not be recorded: the effect did not run.
pub(super) fn intent_failed(e: smith_engine::journal::JournalError) -> EffectError {
    EffectError::Failed(format!(
        "the effect was not run because its intent could not be recorded: {e}"
    ))
}

/// A completion that could not be recorded after the effect ran.
pub(super) fn completion_failed(e: smith_engine::journal::JournalError) -> EffectError {
    EffectError::Failed(format!(
        "the effect ran but its completion could not be recorded: {e}"
    ))
}
