//! The durable effect boundary and conversation recording.
//!
//! Two contracts connect the agent loop to durable storage:
//!
//! - [`EffectJournal`]: every tool invocation records an [`EffectIntent`]
//!   (bounded canonical input, stable effect id, causal parent, plugin
//!   generation) **before** it runs, and an [`EffectCompletion`] (full
//!   bounded output, outcome, three-state [`Mutation`]) after. A failed
//!   intent record prevents the effect; a failed completion record ends the
//!   run, and the loop reports the best known mutation state in its error
//!   event (outside the record that failed).
//! - [`SessionSink`]: the conversation-relevant events (user, assistant and
//!   tool-result messages, model changes, compactions), in order, and the run records
//!   replay needs ([`RunRecord`]: each run's start with its system prompt,
//!   tools and working directory; its end with stop cause, usage, cost and
//!   final text; the errors it reported).
//!
//! Implementations must make a record durable before returning `Ok`.
//! [`store::StoreJournal`] writes both kinds of record into a session file
//! of the session store (one append and data flush per record); the
//! in-memory [`MemoryJournal`] serves tests and can be told to fail.
//!
//! Recovery is a pure function of the records: [`effect_states`] reports an
//! intent without a completion as [`EffectState::Unknown`]. Nothing here ever
//! re-runs an effect.

pub mod store;

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{ErrorInfo, StopCause, ToolStatus};
use crate::provider::{Message, ToolSpec, Usage};
use crate::tools::Mutation;

/// The largest canonical input an intent may carry. Larger arguments are
/// rejected before any effect (the model is told to send less).
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The plugin generation of built-in tools (they are not plugins yet).
pub const BUILTIN_GENERATION: u32 = 0;

/// What the loop records before an effect runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectIntent {
    /// Stable effect id, unique within the session (`fx-<n>`).
    pub effect_id: String,
    /// The causal parent: the id of the tool call that asked for the effect.
    pub parent: String,
    /// The tool (or host effect) name.
    pub tool: String,
    /// The generation of the plugin that owns the tool;
    /// [`BUILTIN_GENERATION`] for built-ins.
    pub plugin_generation: u32,
    /// The arguments as canonical CBOR, at most [`MAX_INPUT_BYTES`].
    pub input: Vec<u8>,
}

/// How an effect ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool reported success.
    Ok,
    /// The tool reported an error.
    Error,
    /// The effect was cancelled (abort).
    Cancelled,
}

impl Outcome {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// What the loop records after an effect ran.
#[derive(Clone, Debug, PartialEq)]
pub struct EffectCompletion {
    /// The intent's effect id.
    pub effect_id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What it did to the world.
    pub mutation: Mutation,
    /// The full bounded output (`{content, details, is_error}`) as canonical
    /// CBOR.
    pub output: Vec<u8>,
}

/// A conversation-relevant event, recorded in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    /// A message entered the conversation (delivered user input, a complete
    /// assistant response, a tool result).
    Message {
        /// The message.
        message: Message,
        /// What replay needs beyond the message itself.
        #[serde(default, skip_serializing_if = "MessageMeta::is_empty")]
        meta: MessageMeta,
    },
    /// The conversation was compacted: the context is now the summary
    /// followed by the kept messages (see [`crate::agent::compact`]).
    Compaction {
        /// What was summarized and kept.
        compaction: crate::agent::compact::CompactionRecord,
    },
    /// The active model changed.
    ModelChange {
        /// The provider id.
        provider: String,
        /// The model id.
        model: String,
    },
}

/// Facts about a message that are not part of the conversation sent to
/// providers but that replay and inspection need.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageMeta {
    /// An assistant response's usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A tool result's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    /// A tool result's effect id (calls that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_id: Option<String>,
    /// A tool result's structured details, for calls that did not run
    /// (invalid, skipped, aborted, not recorded); a call that ran has them
    /// in its effect completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// A user message the runtime itself delivered inside a turn (the
    /// notice after a tool call was cut off by the output limit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notice: bool,
}

impl MessageMeta {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == MessageMeta::default()
    }
}

/// What a run started with: everything replay needs that the conversation
/// does not hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The provider id.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// The system prompt sent with every request of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The active tools offered to the model, in request order.
    pub tools: Vec<ToolSpec>,
    /// The working directory tools resolved paths against.
    pub cwd: String,
}

/// How a run ended, as its `agent_end` event said.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Why.
    pub stop: StopCause,
    /// Total usage of the run.
    pub usage: Usage,
    /// Total cost in US dollars; null when unknown.
    pub cost: Option<f64>,
    /// The final assistant text.
    pub text: String,
}

/// A run-level record for replay, recorded in order with the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunRecord {
    /// A run started (recorded before `agent_start` is announced).
    RunStart(RunInfo),
    /// A run ended (recorded before `agent_end` is announced).
    RunEnd(RunSummary),
    /// The runtime reported an error (recorded when it is announced; a
    /// failure to record it is ignored, since the error is usually that
    /// recording failed).
    Error(ErrorInfo),
}

/// A record could not be made durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalError {
    /// What happened, why, and what to do next.
    pub message: String,
}

impl JournalError {
    /// A new error.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JournalError {}

/// Durable effect records. Calls may come from several tool threads at
/// once; each call returns only after its record is durable.
pub trait EffectJournal: Send + Sync {
    /// Makes `intent` durable.
    ///
    /// # Errors
    ///
    /// When the record is not durable; the effect must not run.
    fn record_intent(&self, intent: &EffectIntent) -> Result<(), JournalError>;

    /// Makes `completion` durable.
    ///
    /// # Errors
    ///
    /// When the record is not durable; the run must end.
    fn record_completion(&self, completion: &EffectCompletion) -> Result<(), JournalError>;

    /// Makes every intent of `intents` durable, in order — at once (one
    /// write, one flush) where the journal can.
    ///
    /// # Errors
    ///
    /// When the records are not durable; none of the effects may run.
    fn record_intents(&self, intents: &[EffectIntent]) -> Result<(), JournalError> {
        intents.iter().try_for_each(|i| self.record_intent(i))
    }

    /// Makes every completion of `completions` durable, in order — at once
    /// where the journal can.
    ///
    /// # Errors
    ///
    /// When the records are not durable; the run must end.
    fn record_completions(&self, completions: &[EffectCompletion]) -> Result<(), JournalError> {
        completions
            .iter()
            .try_for_each(|c| self.record_completion(c))
    }

    /// Makes a VCS operation (a checkpoint around an effect, an undo, redo
    /// or restore) durable. Journals that keep no VCS history accept and
    /// drop it.
    ///
    /// # Errors
    ///
    /// When the record is not durable.
    fn record_vcs(&self, record: &crate::checkpoint::VcsRecord) -> Result<(), JournalError> {
        let _ = record;
        Ok(())
    }
}

/// Durable conversation records.
pub trait SessionSink: Send + Sync {
    /// Makes `event` durable, after every event recorded before it.
    ///
    /// # Errors
    ///
    /// When the record is not durable; the run must end.
    fn record(&self, event: &SessionEvent) -> Result<(), JournalError>;

    /// Makes the run record durable, after every event recorded before it.
    ///
    /// # Errors
    ///
    /// When the record is not durable.
    fn record_run(&self, record: &RunRecord) -> Result<(), JournalError>;
}

/// The recovered state of one effect.
#[derive(Clone, Debug, PartialEq)]
pub enum EffectState {
    /// Intent and completion are both recorded.
    Completed {
        /// How it ended.
        outcome: Outcome,
        /// Its mutation evidence.
        mutation: Mutation,
    },
    /// The intent is recorded but no completion: the effect may or may not
    /// have happened. Never retried automatically.
    Unknown,
}

/// One journal record, in recording order.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// An intent.
    Intent(EffectIntent),
    /// A completion.
    Completion(EffectCompletion),
    /// A conversation event.
    Event(SessionEvent),
}

/// Recovers each effect's state from records: effect ids in intent order,
/// each with its completion, or [`EffectState::Unknown`] when the completion
/// is missing.
///
/// A completion finds its intent through an index by effect id (the first
/// intent of that id), so recovering a session of `n` effects takes O(n),
/// not a scan of every earlier effect per completion.
pub fn effect_states<'a>(
    records: impl IntoIterator<Item = &'a Record>,
) -> Vec<(String, EffectState)> {
    let mut states: Vec<(String, EffectState)> = Vec::new();
    let mut index: std::collections::HashMap<&'a str, usize> = std::collections::HashMap::new();
    for record in records {
        match record {
            Record::Intent(intent) => {
                index
                    .entry(intent.effect_id.as_str())
                    .or_insert(states.len());
                states.push((intent.effect_id.clone(), EffectState::Unknown));
            }
            Record::Completion(done) => {
                if let Some(&at) = index.get(done.effect_id.as_str()) {
                    states[at].1 = EffectState::Completed {
                        outcome: done.outcome,
                        mutation: done.mutation,
                    };
                }
            }
            Record::Event(_) => {}
        }
    }
    states
}

/// Which records a [`MemoryJournal`] refuses (for failure tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailureSwitch {
    /// Refuse intents.
    pub intents: bool,
    /// Refuse completions.
    pub completions: bool,
    /// Refuse conversation events.
    pub events: bool,
}

/// An in-memory journal and sink, for tests and embedding. "Durable" here
/// means "in this process's memory".
#[derive(Debug, Default)]
pub struct MemoryJournal {
    records: Mutex<Vec<Record>>,
    runs: Mutex<Vec<RunRecord>>,
    vcs: Mutex<Vec<crate::checkpoint::VcsRecord>>,
    fail: Mutex<FailureSwitch>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets which records are refused from now on.
    pub fn set_failures(&self, switch: FailureSwitch) {
        *lock(&self.fail) = switch;
    }

    /// A copy of every record so far, in order.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.records).clone()
    }

    /// A copy of every run record so far, in order (kept apart from
    /// [`records`](Self::records)).
    pub fn run_records(&self) -> Vec<RunRecord> {
        lock(&self.runs).clone()
    }

    /// A copy of every VCS record so far, in order.
    pub fn vcs_records(&self) -> Vec<crate::checkpoint::VcsRecord> {
        lock(&self.vcs).clone()
    }

    /// Forgets every record, keeping the allocated capacity (for
    /// measurements that must not see the journal grow).
    pub fn clear(&self) {
        lock(&self.records).clear();
        lock(&self.runs).clear();
    }

    /// The conversation messages so far, in order.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.records)
            .iter()
            .filter_map(|record| match record {
                Record::Event(SessionEvent::Message { message, .. }) => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    fn push(&self, refuse: bool, what: &str, record: Record) -> Result<(), JournalError> {
        if refuse {
            return Err(JournalError::new(format!(
                "the in-memory journal refused the {what} record because it was told to fail"
            )));
        }
        lock(&self.records).push(record);
        Ok(())
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked mid-push; the
    // vector itself is still valid.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EffectJournal for MemoryJournal {
    fn record_intent(&self, intent: &EffectIntent) -> Result<(), JournalError> {
        let refuse = lock(&self.fail).intents;
        self.push(refuse, "intent", Record::Intent(intent.clone()))
    }

    fn record_completion(&self, completion: &EffectCompletion) -> Result<(), JournalError> {
        let refuse = lock(&self.fail).completions;
        self.push(refuse, "completion", Record::Completion(completion.clone()))
    }

    fn record_vcs(&self, record: &crate::checkpoint::VcsRecord) -> Result<(), JournalError> {
        lock(&self.vcs).push(record.clone());
        Ok(())
    }
}

impl SessionSink for MemoryJournal {
    fn record(&self, event: &SessionEvent) -> Result<(), JournalError> {
        let refuse = lock(&self.fail).events;
        self.push(refuse, "conversation event", Record::Event(event.clone()))
    }

    fn record_run(&self, record: &RunRecord) -> Result<(), JournalError> {
        if lock(&self.fail).events {
            return Err(JournalError::new(
                "the in-memory journal refused the run record because it was told to fail",
            ));
        }
        lock(&self.runs).push(record.clone());
        Ok(())
    }
}

/// Encodes a JSON value as canonical CBOR through the codec's JSON bridge
/// (RFC 8949 core deterministic encoding), so effect inputs and outputs are
/// byte-identical to what the session store writes for the same JSON.
///
/// # Errors
///
/// When the value has no canonical CBOR form (nesting deeper than the
/// codec's limit, a number outside its range); the message says which.
pub fn canonical_cbor(value: &Value) -> Result<Vec<u8>, JournalError> {
    let text = value.to_string();
    let mut out = Vec::with_capacity(text.len());
    smith_codec::json::to_cbor(&text, &mut out).map_err(|err| {
        JournalError::new(format!(
            "a JSON value could not be encoded as canonical CBOR for the effect record: {err}"
        ))
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_cbor_sorts_keys_by_encoding() {
        let value = serde_json::json!({"bb": 1, "a": [true, null], "c": -2});
        // {"a": [true, null], "c": -2, "bb": 1}: shorter keys sort first.
        assert_eq!(
            canonical_cbor(&value).unwrap(),
            vec![
                0xa3, 0x61, b'a', 0x82, 0xf5, 0xf6, 0x61, b'c', 0x21, 0x62, b'b', b'b', 0x01
            ]
        );
    }

    #[test]
    fn a_missing_completion_recovers_as_unknown() {
        let journal = MemoryJournal::new();
        let intent = |id: &str| EffectIntent {
            effect_id: id.into(),
            parent: "call".into(),
            tool: "bash".into(),
            plugin_generation: BUILTIN_GENERATION,
            input: canonical_cbor(&serde_json::json!({"command": "true"})).unwrap(),
        };
        journal.record_intent(&intent("fx-1")).unwrap();
        journal
            .record_completion(&EffectCompletion {
                effect_id: "fx-1".into(),
                outcome: Outcome::Ok,
                mutation: Mutation::Applied,
                output: Vec::new(),
            })
            .unwrap();
        journal.record_intent(&intent("fx-2")).unwrap();
        assert_eq!(
            effect_states(&journal.records()),
            vec![
                (
                    "fx-1".to_owned(),
                    EffectState::Completed {
                        outcome: Outcome::Ok,
                        mutation: Mutation::Applied
                    }
                ),
                ("fx-2".to_owned(), EffectState::Unknown),
            ]
        );
    }

    #[test]
    fn failure_switch_refuses_records() {
        let journal = MemoryJournal::new();
        journal.set_failures(FailureSwitch {
            intents: true,
            ..FailureSwitch::default()
        });
        let err = journal
            .record_intent(&EffectIntent {
                effect_id: "fx-1".into(),
                parent: "c".into(),
                tool: "ls".into(),
                plugin_generation: 0,
                input: Vec::new(),
            })
            .unwrap_err();
        assert!(err.message.contains("intent"));
        assert!(journal.records().is_empty());
    }
}
