//! Replay: a recorded session played back as protocol events, with no
//! provider, no credentials and no effects.
//!
//! [`Recording::from_session`] rebuilds the runtime's observable history from
//! the records of a session's selected branch — the run records
//! ([`RunRecord`]: start with system prompt, tools and working directory;
//! end with stop cause, usage, cost and text; reported errors), the
//! conversation messages with their [`MessageMeta`], and the effect intents
//! and completions — into a list of [`Step`]s, each one protocol [`Event`]
//! stamped with the time of the record it came from. Frontends consume the
//! events exactly as they consume a live runtime's.
//!
//! What a replayed stream reproduces, and where it must differ from the live
//! one (the live stream's chunking is not recorded; the session keeps the
//! authoritative complete records instead):
//!
//! - each assistant message's text and thinking arrive as one
//!   `message_delta` / `thinking_delta` per content block, not per stream
//!   chunk; `message_end` is identical;
//! - live `tool_execution_update` pieces are not replayed; the complete
//!   bounded output is in `tool_execution_end`, identical to the live one;
//! - `queue_changed`, `state` and `messages` answer frontend commands and
//!   are not recorded; `model_changed` is announced whenever the recorded
//!   model differs from the one before;
//! - every run ends with `settled`;
//! - a recorded compaction replays as `compaction_start` and a
//!   `compaction_end` with outcome `compacted` (aborted or failed
//!   compactions leave no record and do not replay); one outside a run (a
//!   manual compaction) is followed by `settled`;
//! - a run whose recording stops early (the process was killed) is closed
//!   with `aborted` results for unanswered calls — an effect with an intent
//!   but no completion carries mutation `unknown` — then an `interrupted`
//!   error and `agent_end` with stop `aborted`. Nothing is ever re-run.
//!
//! The steps are a pure function of the records, so the same session always
//! replays to the same events (byte-identical JSON).
//!
//! [`compare`] is the one place replay touches the world, on request: it
//! re-executes recorded effects in a scratch directory and reports every
//! divergence from the recorded completion. Effects recorded as unknown are
//! reported as skipped and never run. [`start_point`] and [`export_start`]
//! give it the workspace the effects saw: the snapshot the session's first
//! checkpoint took before them, written into the scratch directory.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize as _, Serialize};
use serde_json::Value;
use smith_store::{EntryKind, Session};

use crate::agent::aborted_result_text;
use crate::checkpoint::{VcsOp, VcsRecord};
use crate::journal::store::decode_json;
use crate::journal::{MessageMeta, Outcome, RunInfo, RunRecord};
use crate::protocol::{
    CompactionOutcome, CompactionReason, ErrorInfo, Event, MutationState, Role, StopCause,
    ToolStatus,
};
use crate::provider::{ContentBlock, Message, StopReason, ToolCall, Usage};
use crate::tools::{Mutation, ToolContext, ToolSet};

/// Replay could not proceed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError {
    /// What happened, why, and what to do next.
    pub message: String,
}

impl ReplayError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReplayError {}

/// What a step belongs to, for `--turns` selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Outside any run (a model change between runs, an error while idle).
    Session,
    /// A run's own events (`agent_start`, `agent_end`, `settled`, errors
    /// outside a turn); `run` is 1-based in the session.
    Run {
        /// The run.
        run: u32,
    },
    /// A turn's events, including the user input delivered right before it;
    /// `turn` is 1-based over the whole session.
    Turn {
        /// The run the turn is in.
        run: u32,
        /// The session-wide turn number.
        turn: u32,
    },
}

/// One replayed event.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// When the record behind it was written (ms since the Unix epoch).
    pub at_ms: u64,
    /// What it belongs to.
    pub scope: Scope,
    /// The event.
    pub event: Event,
}

/// A recorded effect's completion.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCompletion {
    /// How it ended.
    pub outcome: Outcome,
    /// Its mutation evidence.
    pub mutation: Mutation,
    /// The recorded `{content, details, is_error}`.
    pub output: Value,
}

/// One recorded effect.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEffect {
    /// The effect id (`fx-N`).
    pub effect_id: String,
    /// The tool.
    pub tool: String,
    /// The tool call that asked for it.
    pub parent: String,
    /// The recorded canonical input (the call's arguments).
    pub input: Value,
    /// The completion; `None` when only the intent is recorded (unknown).
    pub completion: Option<RecordedCompletion>,
    /// The session-wide turn it ran in (0 outside any turn).
    pub turn: u32,
    /// The working directory its run recorded, if any.
    pub cwd: Option<String>,
}

/// An inclusive, 1-based range of session-wide turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnRange {
    /// The first selected turn.
    pub first: u32,
    /// The last selected turn.
    pub last: u32,
}

impl TurnRange {
    /// Parses `A..B` (inclusive), `A..` (to the end), `..B` (from the
    /// first) or `N` (one turn). Turns are 1-based.
    ///
    /// # Errors
    ///
    /// When the text is not of those forms, a bound is 0, or A > B.
    pub fn parse(text: &str) -> Result<Self, ReplayError> {
        let bad = |why: &str| {
            ReplayError::new(format!(
                "--turns {text:?} is not a turn range: {why}; write A..B (1-based, inclusive), A.., ..B or N"
            ))
        };
        let number = |part: &str| -> Result<u32, ReplayError> {
            let n: u32 = part
                .trim()
                .parse()
                .map_err(|_| bad(&format!("{part:?} is not a whole number")))?;
            if n == 0 {
                return Err(bad("turns are numbered from 1"));
            }
            Ok(n)
        };
        let (first, last) = match text.split_once("..") {
            Some((a, b)) => (
                if a.trim().is_empty() { 1 } else { number(a)? },
                if b.trim().is_empty() {
                    u32::MAX
                } else {
                    number(b)?
                },
            ),
            None => {
                let n = number(text)?;
                (n, n)
            }
        };
        if first > last {
            return Err(bad(&format!(
                "the first turn {first} comes after the last {last}"
            )));
        }
        Ok(Self { first, last })
    }

    /// Whether `turn` is selected.
    pub fn contains(&self, turn: u32) -> bool {
        (self.first..=self.last).contains(&turn)
    }
}

/// How fast to play.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// No waiting.
    Instant,
    /// The recorded gaps between records, divided by the factor (1.0 is
    /// real time). Idle time between runs is capped at [`MAX_IDLE_GAP`].
    Scaled(f64),
}

/// The longest wait replay makes between one run's `settled` and the next
/// event: idle time (a user thinking, a session continued days later) is not
/// replayed.
pub const MAX_IDLE_GAP: Duration = Duration::from_secs(1);

/// Detail keys that differ on every execution and are not compared by
/// [`compare`]: process ids, durations and the path of a kept full output.
pub const VOLATILE_DETAILS: [&str; 3] = ["pid", "duration_ms", "full_output_path"];

/// A session's recorded history, ready to play.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recording {
    /// The replayed events, in order.
    pub steps: Vec<Step>,
    /// Every effect, in intent order.
    pub effects: Vec<RecordedEffect>,
    /// Each run's start record (`None` for runs recorded without one).
    pub runs: Vec<Option<RunInfo>>,
    /// How many turns the session has.
    pub turns: u32,
}

struct OpenRun {
    index: u32,
    turn_in_run: u32,
    in_turn: bool,
    usage: Usage,
    last_text: String,
    pending: Vec<ToolCall>,
    cwd: Option<String>,
}

/// A run start's definition held in full, for the run starts that keep it
/// unchanged.
enum Held {
    /// Read through the JSON value.
    Value(Value),
    /// Read straight from the CBOR ([`direct::run_start`]): the item's
    /// canonical CBOR bytes, a JSON-native item (its value is
    /// [`value_of`] of them, as the value path would have read it).
    Cbor(Vec<u8>),
}

impl Held {
    fn value(&self) -> Value {
        match self {
            Held::Value(value) => value.clone(),
            Held::Cbor(cbor) => value_of(cbor, 0, EntryKind::Metadata).unwrap_or(Value::Null),
        }
    }

    /// The digest a reference to it names: of the canonical CBOR of its
    /// JSON value, as the writer computed it.
    fn digest(&self) -> String {
        crate::journal::canonical_cbor(&self.value())
            .map(|cbor| crate::journal::store::digest(&cbor))
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Builder {
    out: Recording,
    run: Option<OpenRun>,
    model: Option<(String, String)>,
    at: u64,
    /// Index in `out.effects` of the latest effect with each id.
    by_id: std::collections::HashMap<String, usize>,
    /// Index in `out.effects` of the latest effect each tool call asked for.
    by_call: std::collections::HashMap<String, usize>,
    /// Streaming ([`stream`]): events leave as they are built, and what
    /// only `--compare` and `--turns` need (effect inputs, run records) is
    /// not kept.
    streaming: bool,
    /// Streaming: the calls a closed run left unanswered since the effects
    /// were last let go; a later run's result for one of them (a repaired
    /// call) still finds its effect.
    unanswered: Vec<String>,
    /// The newest run start's definitions held in full (`system`, `tools`),
    /// for the run starts that keep them unchanged (docs/session-format.md
    /// §4.1), each with its digest once a reference asked for it: most
    /// definitions are never referred to, and the digest (canonical CBOR,
    /// then a byte-wise hash) costs more than reading them.
    definitions: [Option<(Option<String>, Held)>; 2],
}

fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn field_str(value: &Value, key: &str) -> String {
    field(value, key).to_owned()
}

fn non_null(details: Value) -> Value {
    if details.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        details
    }
}

impl Builder {
    fn push(&mut self, scope: Scope, event: Event) {
        self.out.steps.push(Step {
            at_ms: self.at,
            scope,
            event,
        });
    }

    /// The scope of events inside the open run right now.
    fn scope(&self) -> Scope {
        match &self.run {
            None => Scope::Session,
            Some(run) if run.in_turn => Scope::Turn {
                run: run.index,
                turn: self.out.turns,
            },
            Some(run) => Scope::Run { run: run.index },
        }
    }

    fn open_run(&mut self, info: Option<RunInfo>) {
        if self.run.is_some() {
            self.close_interrupted();
        }
        let cwd = info.as_ref().map(|i| i.cwd.clone());
        self.out.runs.push(if self.streaming { None } else { info });
        let index = u32::try_from(self.out.runs.len()).unwrap_or(u32::MAX);
        self.run = Some(OpenRun {
            index,
            turn_in_run: 0,
            in_turn: false,
            usage: Usage {
                input: Some(0),
                output: Some(0),
                cache_read: Some(0),
                cache_write: Some(0),
            },
            last_text: String::new(),
            pending: Vec::new(),
            cwd,
        });
        self.push(Scope::Run { run: index }, Event::AgentStart);
    }

    /// The open run; a conversation record outside any recorded run (a
    /// session written before run records existed) opens one.
    fn ensure_run(&mut self) -> &mut OpenRun {
        if self.run.is_none() {
            self.open_run(None);
        }
        // Just opened if it was missing.
        self.run.get_or_insert_with(|| OpenRun {
            index: 0,
            turn_in_run: 0,
            in_turn: false,
            usage: Usage::default(),
            last_text: String::new(),
            pending: Vec::new(),
            cwd: None,
        })
    }

    fn end_turn(&mut self) {
        let scope = self.scope();
        if let Some(run) = &mut self.run
            && run.in_turn
        {
            let turn = run.turn_in_run;
            run.in_turn = false;
            self.push(scope, Event::TurnEnd { turn });
        }
    }

    fn close_run(&mut self, stop: StopCause, usage: Usage, cost: Option<f64>, text: String) {
        self.end_turn();
        let scope = self.scope();
        self.run = None;
        self.push(
            scope,
            Event::AgentEnd {
                stop,
                usage,
                cost,
                text,
            },
        );
        self.push(scope, Event::Settled);
    }

    /// Closes a run whose end was never recorded.
    fn close_interrupted(&mut self) {
        let pending = self
            .run
            .as_mut()
            .map(|run| std::mem::take(&mut run.pending))
            .unwrap_or_default();
        for call in pending {
            self.unanswered(&call);
        }
        self.end_turn();
        let scope = self.scope();
        self.push(
            scope,
            Event::Error(ErrorInfo {
                kind: "interrupted".to_owned(),
                message: "the recording of this run ends before the run did (the process stopped, or the run's end could not be recorded); effects without a recorded completion are unknown, and replay never re-runs them".to_owned(),
                mutation: None,
                effect_id: None,
                retry_after_ms: None,
            }),
        );
        let (usage, text) = self
            .run
            .as_ref()
            .map(|run| (run.usage, run.last_text.clone()))
            .unwrap_or_default();
        self.close_run(StopCause::Aborted, usage, None, text);
    }

    /// A call the recording never answered.
    fn unanswered(&mut self, call: &ToolCall) {
        if self.streaming {
            self.unanswered.push(call.id.clone());
        }
        let scope = self.scope();
        let effect = self.effect_of(&call.id);
        let event = match effect.and_then(|e| e.completion.as_ref().map(|c| (e, c))) {
            Some((effect, done)) => Event::ToolExecutionEnd {
                call_id: call.id.clone(),
                name: call.name.clone(),
                status: status_of(done.outcome),
                content: field_str(&done.output, "content"),
                details: non_null(done.output.get("details").cloned().unwrap_or(Value::Null)),
                mutation: Some(MutationState::from(done.mutation)),
                effect_id: Some(effect.effect_id.clone()),
            },
            None => Event::ToolExecutionEnd {
                call_id: call.id.clone(),
                name: call.name.clone(),
                status: ToolStatus::Aborted,
                content: aborted_result_text(&call.name),
                details: serde_json::json!({"error": {"kind": "aborted"}}),
                mutation: effect.map(|_| MutationState::Unknown),
                effect_id: effect.map(|e| e.effect_id.clone()),
            },
        };
        self.push(scope, event);
    }

    /// The latest effect asked for by `call_id`.
    fn effect_of(&self, call_id: &str) -> Option<&RecordedEffect> {
        self.by_call.get(call_id).map(|&i| &self.out.effects[i])
    }

    /// The latest effect with id `effect_id`.
    fn effect(&self, effect_id: &str) -> Option<&RecordedEffect> {
        self.by_id.get(effect_id).map(|&i| &self.out.effects[i])
    }

    /// Streaming, between runs: lets go of the effects of closed runs but
    /// those of calls they left unanswered, which a later run may answer.
    fn forget_closed_runs(&mut self) {
        if self.run.is_some() || self.out.effects.is_empty() {
            return;
        }
        let keep: std::collections::HashSet<&str> =
            self.unanswered.iter().map(String::as_str).collect();
        self.out
            .effects
            .retain(|e| keep.contains(e.parent.as_str()));
        self.unanswered.clear();
        self.by_id.clear();
        self.by_call.clear();
        for (i, e) in self.out.effects.iter().enumerate() {
            self.by_id.insert(e.effect_id.clone(), i);
            self.by_call.insert(e.parent.clone(), i);
        }
    }

    /// Fills a run start's `unchanged` definitions from the run start that
    /// held them (the newest one holding each, whose digest must match)
    /// and remembers the definitions it holds in full. A definition that
    /// cannot be found is left out (a run without its tool list still
    /// replays as a run).
    fn resolve_run_start(&mut self, value: &mut Value) {
        let Value::Object(map) = value else { return };
        if map.get("type").and_then(Value::as_str) != Some("run_start") {
            return;
        }
        let unchanged = match map.remove(crate::journal::store::UNCHANGED) {
            Some(Value::Object(unchanged)) => unchanged,
            _ => serde_json::Map::new(),
        };
        for (slot, key) in ["system", "tools"].into_iter().enumerate() {
            if let Some(held) = map.get(key) {
                self.definitions[slot] = Some((None, Held::Value(held.clone())));
            } else if let Some(reference) = unchanged.get(key) {
                let wanted = reference.get("digest").and_then(Value::as_str);
                match self.held_matching(slot, wanted) {
                    Some(held) => {
                        let held = held.value();
                        map.insert(key.to_owned(), held);
                    }
                    _ if key == "tools" => {
                        map.insert(key.to_owned(), Value::Array(Vec::new()));
                    }
                    _ => {}
                }
            }
        }
    }

    /// The held definition of `slot` when its digest is `wanted` (the
    /// digest is computed on the first reference and kept).
    fn held_matching(&mut self, slot: usize, wanted: Option<&str>) -> Option<&Held> {
        let (digest, held) = self.definitions[slot].as_mut()?;
        let digest = digest.get_or_insert_with(|| held.digest());
        (Some(digest.as_str()) == wanted).then_some(&*held)
    }

    /// A run start read straight from its CBOR ([`direct::run_start`]),
    /// streaming: `false`, having changed nothing, when it needs the
    /// value path (a definition it keeps unchanged is one the value path
    /// held, or is missing).
    fn run_start_direct(&mut self, start: direct::RunStart<'_>) -> bool {
        // Each definition the record leaves out must resolve as the value
        // path resolves it, to a held one read the same way or to nothing.
        for (slot, held, reference) in [
            (0, start.system.is_some(), start.unchanged[0]),
            (1, start.tools.is_some(), start.unchanged[1]),
        ] {
            if held {
                continue;
            }
            match reference {
                Some(wanted) => match self.held_matching(slot, wanted) {
                    Some(Held::Cbor(_)) | None => {}
                    Some(Held::Value(_)) => return false,
                },
                // Without its tool list the record is not a run start.
                None if slot == 1 => return false,
                None => {}
            }
        }
        for (slot, item) in [(0, start.system), (1, start.tools)] {
            if let Some(item) = item {
                match &mut self.definitions[slot] {
                    Some((digest, Held::Cbor(bytes))) => {
                        *digest = None;
                        bytes.clear();
                        bytes.extend_from_slice(item);
                    }
                    other => *other = Some((None, Held::Cbor(item.to_vec()))),
                }
            }
        }
        // Streaming keeps only the working directory of a run start.
        self.run_record(RunRecord::RunStart(RunInfo {
            provider: String::new(),
            model: String::new(),
            system: None,
            tools: Vec::new(),
            cwd: start.cwd.to_owned(),
        }));
        true
    }

    /// Replaces a tool result's `content_ref` by the output text of the
    /// effect it names (its completion was replayed before it).
    fn resolve_output(&self, value: &mut Value) {
        let Value::Object(map) = value else { return };
        let Some(effect_id) = map
            .get(smith_store::refs::CONTENT_REF)
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        let text = self.output_text(&effect_id);
        map.remove(smith_store::refs::CONTENT_REF);
        map.insert("content".to_owned(), Value::String(text));
    }

    /// The output text of the effect `effect_id` names, which a tool
    /// result's `content_ref` refers to (its completion was replayed
    /// before the result).
    fn output_text(&self, effect_id: &str) -> String {
        self.effect(effect_id)
            .and_then(|e| e.completion.as_ref())
            .and_then(|done| done.output.get("content"))
            .and_then(Value::as_str)
            .map_or_else(
                || {
                    crate::journal::store::missing_output(
                        crate::journal::store::effect_number(effect_id).unwrap_or(0),
                    )
                },
                str::to_owned,
            )
    }

    fn run_record(&mut self, record: RunRecord) {
        match record {
            RunRecord::RunStart(info) => self.open_run(Some(info)),
            RunRecord::RunEnd(summary) => {
                self.ensure_run();
                let pending = self
                    .run
                    .as_mut()
                    .map(|run| std::mem::take(&mut run.pending))
                    .unwrap_or_default();
                for call in pending {
                    self.unanswered(&call);
                }
                self.close_run(summary.stop, summary.usage, summary.cost, summary.text);
            }
            RunRecord::Error(info) => {
                let scope = self.scope();
                self.push(scope, Event::Error(info));
            }
        }
    }

    /// A recorded compaction: its start and its (compacted) end; outside a
    /// run it was a manual one, which the runtime follows with `settled`.
    fn compaction(&mut self, record: crate::agent::CompactionRecord) {
        let reason = match record.reason.as_str() {
            "threshold" => CompactionReason::Threshold,
            "overflow" => CompactionReason::Overflow,
            _ => CompactionReason::Manual,
        };
        let scope = self.scope();
        self.push(
            scope,
            Event::CompactionStart {
                reason,
                tokens_before: record.tokens_before,
            },
        );
        self.push(
            scope,
            Event::CompactionEnd {
                reason,
                outcome: CompactionOutcome::Compacted,
                tokens_before: record.tokens_before,
                tokens_after: Some(record.tokens_after),
                summary: Some(record.summary),
                summarized_messages: Some(record.summarized_messages),
                kept_messages: Some(record.kept_messages),
                usage: Some(record.usage),
                error: None,
                // The record keeps no sizes in bytes or pruning counts.
                detail: None,
            },
        );
        if self.run.is_none() {
            self.push(scope, Event::Settled);
        }
    }

    fn model_change(&mut self, value: &Value) {
        let next = (field_str(value, "provider"), field_str(value, "model"));
        if let Some(previous) = &self.model
            && *previous != next
        {
            let scope = self.scope();
            self.push(
                scope,
                Event::ModelChanged {
                    provider: next.0.clone(),
                    model: next.1.clone(),
                },
            );
        }
        self.model = Some(next);
    }

    fn user(&mut self, message: Message, meta: &MessageMeta) {
        let run = self.ensure_run();
        let inside = meta.notice && run.in_turn;
        if !inside {
            self.end_turn();
        }
        let scope = match (&self.run, inside) {
            (Some(run), false) => Scope::Turn {
                run: run.index,
                turn: self.out.turns + 1,
            },
            _ => self.scope(),
        };
        self.push(scope, Event::MessageStart { role: Role::User });
        self.push(
            scope,
            Event::MessageEnd {
                message,
                usage: None,
            },
        );
    }

    fn assistant(&mut self, message: Message, meta: &MessageMeta) {
        self.ensure_run();
        self.end_turn();
        self.out.turns += 1;
        let turns = self.out.turns;
        let Some(run) = self.run.as_mut() else {
            return;
        };
        run.turn_in_run += 1;
        run.in_turn = true;
        if let Some(usage) = &meta.usage {
            run.usage = run.usage.add(usage);
        }
        let text = message.text();
        if !text.is_empty() {
            run.last_text = text;
        }
        let (stop, calls) = match &message {
            Message::Assistant { stop, .. } => (*stop, message.tool_calls().cloned().collect()),
            _ => (StopReason::End, Vec::new()),
        };
        let announce = matches!(
            stop,
            StopReason::End | StopReason::ToolUse | StopReason::Limit
        );
        run.pending.clone_from(&calls);
        let scope = Scope::Turn {
            run: run.index,
            turn: turns,
        };
        let turn = run.turn_in_run;
        self.push(scope, Event::TurnStart { turn });
        self.push(
            scope,
            Event::MessageStart {
                role: Role::Assistant,
            },
        );
        if let Message::Assistant { content, .. } = &message {
            for block in content {
                match block {
                    ContentBlock::Text { text } => {
                        self.push(scope, Event::MessageDelta { text: text.clone() });
                    }
                    ContentBlock::Thinking { text, .. } => {
                        self.push(scope, Event::ThinkingDelta { text: text.clone() });
                    }
                    ContentBlock::ToolCall(_) => {}
                }
            }
        }
        self.push(
            scope,
            Event::MessageEnd {
                message,
                usage: meta.usage,
            },
        );
        if announce {
            for call in calls {
                self.push(scope, Event::ToolCall { call });
            }
        }
    }

    fn intent(&mut self, value: &Value) {
        let input = if self.streaming {
            Value::Null
        } else if value.get(smith_store::refs::ARGUMENTS_REF) == Some(&Value::Bool(true)) {
            // The arguments of its call in the assistant message replayed
            // before it (docs/session-format.md §4.1).
            let parent = field(value, "parent");
            self.run
                .as_ref()
                .and_then(|run| run.pending.iter().find(|call| call.id == parent))
                .map_or(Value::Null, |call| call.arguments.clone())
        } else {
            value.get("input").cloned().unwrap_or(Value::Null)
        };
        self.intent_of(
            field_str(value, "effect_id"),
            field_str(value, "tool"),
            field_str(value, "parent"),
            input,
        );
    }

    /// An effect intent's fields (its `input` only when not streaming).
    fn intent_of(&mut self, effect_id: String, tool: String, parent: String, input: Value) {
        let scope = self.scope();
        let cwd = self.run.as_ref().and_then(|run| run.cwd.clone());
        self.push(
            scope,
            Event::ToolExecutionStart {
                call_id: parent.clone(),
                name: tool.clone(),
                effect_id: effect_id.clone(),
            },
        );
        let index = self.out.effects.len();
        self.by_id.insert(effect_id.clone(), index);
        self.by_call.insert(parent.clone(), index);
        self.out.effects.push(RecordedEffect {
            effect_id,
            tool,
            parent,
            input,
            completion: None,
            turn: if matches!(scope, Scope::Turn { .. }) {
                self.out.turns
            } else {
                0
            },
            cwd,
        });
    }

    fn completion(&mut self, mut value: Value) {
        // Moved out, not copied: it holds the tool's whole output.
        let output = value.get_mut("output").map(Value::take);
        self.completion_of(
            field(&value, "effect_id"),
            field(&value, "outcome"),
            field(&value, "mutation"),
            output.unwrap_or(Value::Null),
        );
    }

    /// An effect completion's fields; `output` is the recorded
    /// `{content, details, is_error}`.
    fn completion_of(&mut self, effect_id: &str, outcome: &str, mutation: &str, output: Value) {
        let outcome = match outcome {
            "ok" => Outcome::Ok,
            "cancelled" => Outcome::Cancelled,
            _ => Outcome::Error,
        };
        let mutation = match mutation {
            "applied" => Mutation::Applied,
            "not-applied" => Mutation::NotApplied,
            _ => Mutation::Unknown,
        };
        if let Some(&i) = self.by_id.get(effect_id) {
            let effect = &mut self.out.effects[i];
            effect.completion = Some(RecordedCompletion {
                outcome,
                mutation,
                output,
            });
        }
    }

    fn tool_result(&mut self, message: Message, meta: MessageMeta) {
        let Message::ToolResult {
            call_id,
            name,
            content,
            is_error,
            ..
        } = message
        else {
            return;
        };
        let scope = self.scope();
        if let Some(run) = &mut self.run {
            run.pending.retain(|call| call.id != call_id);
        }
        let status = meta.status.unwrap_or(if is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        });
        let effect = match &meta.effect_id {
            Some(id) => self.effect(id),
            None => self.effect_of(&call_id),
        };
        let (details, mutation, effect_id) = match effect {
            Some(effect) => match &effect.completion {
                Some(done) => (
                    done.output.get("details").cloned().unwrap_or(Value::Null),
                    MutationState::from(done.mutation),
                    effect.effect_id.clone(),
                ),
                None => (
                    meta.details.clone().unwrap_or(Value::Null),
                    MutationState::Unknown,
                    effect.effect_id.clone(),
                ),
            },
            None => {
                self.push(
                    scope,
                    Event::ToolExecutionEnd {
                        call_id,
                        name,
                        status,
                        content,
                        details: non_null(meta.details.unwrap_or(Value::Null)),
                        mutation: None,
                        effect_id: None,
                    },
                );
                return;
            }
        };
        self.push(
            scope,
            Event::ToolExecutionEnd {
                call_id,
                name,
                status,
                content,
                details: non_null(details),
                mutation: Some(mutation),
                effect_id: Some(effect_id),
            },
        );
    }
}

fn status_of(outcome: Outcome) -> ToolStatus {
    match outcome {
        Outcome::Ok => ToolStatus::Ok,
        Outcome::Error => ToolStatus::Error,
        Outcome::Cancelled => ToolStatus::Aborted,
    }
}

/// An entry's content as a JSON value (see [`value_of`]).
fn decode_value(session: &Session, record: &smith_store::Record) -> Result<Value, ReplayError> {
    if let Ok(content) = session.content(record) {
        let mut d = smith_codec::Decoder::strict(&content);
        if let Some(value) = json_item(&mut d)
            && d.is_at_end()
        {
            return Ok(value);
        }
    }
    decode_json(session, record).map_err(|err| ReplayError::new(err.message))
}

/// Entry `id`'s content as a JSON value. Canonical CBOR of JSON's types
/// (what smith writes) is read in one pass straight into the value;
/// anything else takes the general bridge (CBOR to JSON text to value, as
/// resume reads entries), which gives the same value where both apply.
fn value_of(content: &[u8], id: u64, kind: EntryKind) -> Result<Value, ReplayError> {
    let mut d = smith_codec::Decoder::strict(content);
    if let Some(value) = json_item(&mut d)
        && d.is_at_end()
    {
        return Ok(value);
    }
    let mut text = String::new();
    smith_codec::json::from_cbor(content, &mut text).map_err(|err| {
        ReplayError::new(format!(
            "session entry {id} ({kind:?}) does not hold valid canonical CBOR: {err}; run `smith session repair` or inspect it with a dump"
        ))
    })?;
    serde_json::from_str(&text).map_err(|err| {
        ReplayError::new(format!(
            "session entry {id} could not be read as JSON: {err}"
        ))
    })
}

/// Reads one item of canonical CBOR as the value serde_json reads from its
/// JSON text: integers below -2^63 become floats, as serde reads them.
/// `None` for anything JSON has no type for (byte strings, tags, undefined,
/// simple values, non-finite floats, maps with other than text keys) and
/// for any decoding error, including the codec's depth and item limits.
fn json_item(d: &mut smith_codec::Decoder<'_>) -> Option<Value> {
    use smith_codec::Token;
    Some(match d.next().ok()? {
        Token::Unsigned(n) => Value::from(n),
        Token::Negative(n) => match i64::try_from(n) {
            Ok(n) => Value::from(-1 - n),
            Err(_) => Value::from(-((u128::from(n) + 1) as f64)),
        },
        Token::Float(x) if x.is_finite() => Value::from(x),
        Token::Text(s) => Value::String(s.to_owned()),
        Token::Bool(b) => Value::Bool(b),
        Token::Null => Value::Null,
        Token::Array(n) => {
            let mut items = Vec::with_capacity(usize::try_from(n).ok()?.min(1024));
            for _ in 0..n {
                items.push(json_item(d)?);
            }
            Value::Array(items)
        }
        Token::Map(n) => {
            let mut map = serde_json::Map::with_capacity(usize::try_from(n).ok()?.min(1024));
            for _ in 0..n {
                let Token::Text(key) = d.next().ok()? else {
                    return None;
                };
                let value = json_item(d)?;
                map.insert(key.to_owned(), value);
            }
            Value::Object(map)
        }
        _ => return None,
    })
}

/// Feeds one entry of a streamed replay straight from its canonical CBOR,
/// without building a JSON value of it: the entries a session holds most
/// (assistant messages, tool results, effect intents and completions) in
/// the exact form smith writes them. Returns `false`, having fed nothing,
/// for any other entry or form (an unknown field, a type or value the
/// derived readers would treat otherwise, media, thinking signatures,
/// content that is not canonical); [`feed`] then reads it through the
/// JSON value, as it reads everything else, so both ways give the same
/// events.
fn feed_direct(b: &mut Builder, kind: EntryKind, at: u64, content: &[u8]) -> bool {
    match kind {
        EntryKind::AssistantMessage => {
            let Some((message, meta)) = direct::assistant(content) else {
                return false;
            };
            b.at = at;
            b.assistant(message, &meta);
        }
        EntryKind::ToolResult => {
            let Some((mut message, meta, content_ref)) = direct::tool_result(content) else {
                return false;
            };
            if let (Some(effect_id), Message::ToolResult { content, .. }) =
                (content_ref, &mut message)
            {
                *content = b.output_text(effect_id);
            }
            b.at = at;
            b.tool_result(message, meta);
        }
        EntryKind::EffectIntent if b.streaming => {
            let Some([effect_id, tool, parent]) = direct::intent(content) else {
                return false;
            };
            b.at = at;
            b.intent_of(
                effect_id.to_owned(),
                tool.to_owned(),
                parent.to_owned(),
                Value::Null,
            );
        }
        EntryKind::Metadata if b.streaming => {
            let Some(start) = direct::run_start(content) else {
                return false;
            };
            b.at = at;
            if !b.run_start_direct(start) {
                return false;
            }
        }
        EntryKind::EffectCompletion => {
            let Some((effect_id, outcome, mutation, output)) = direct::completion(content) else {
                return false;
            };
            b.at = at;
            b.completion_of(effect_id, outcome, mutation, output);
        }
        _ => return false,
    }
    true
}

/// The readers behind [`feed_direct`]. Each accepts only what the
/// derived (serde) readers accept and reads it to the same values;
/// anything else is `None`, never an error.
mod direct {
    use serde::de::value::{Error, StrDeserializer};
    use serde_json::Value;
    use smith_codec::{Decoder, Token};

    use super::json_item;
    use crate::journal::MessageMeta;
    use crate::protocol::ToolStatus;
    use crate::provider::{ContentBlock, Message, StopReason, ToolCall, Usage};

    /// Calls `field` with each key of the top-level map of `content` and
    /// the decoder at its value, which `field` reads whole. `None` when
    /// the content is not one canonical map with text keys, or `field`
    /// refuses a value.
    fn each_field<'a>(
        content: &'a [u8],
        mut field: impl FnMut(&'a str, &mut Decoder<'a>) -> Option<()>,
    ) -> Option<()> {
        let mut d = Decoder::strict(content);
        let n = d.map().ok()?;
        for _ in 0..n {
            let key = d.str().ok()?;
            field(key, &mut d)?;
        }
        d.is_at_end().then_some(())
    }

    fn text<'a>(d: &mut Decoder<'a>) -> Option<&'a str> {
        d.str().ok()
    }

    /// A unit enum by its serde name.
    fn named<T: serde::de::DeserializeOwned>(d: &mut Decoder<'_>) -> Option<T> {
        T::deserialize(StrDeserializer::<Error>::new(d.str().ok()?)).ok()
    }

    /// A usage map: each field a whole number or null (unknown).
    fn usage(d: &mut Decoder<'_>) -> Option<Usage> {
        let n = d.map().ok()?;
        let mut usage = Usage::default();
        for _ in 0..n {
            let key = d.str().ok()?;
            let value = match d.peek().ok()? {
                Token::Unsigned(_) => Some(d.u64().ok()?),
                Token::Null => {
                    d.null().ok()?;
                    None
                }
                _ => return None,
            };
            match key {
                "input" => usage.input = value,
                "output" => usage.output = value,
                "cache_read" => usage.cache_read = value,
                "cache_write" => usage.cache_write = value,
                _ => return None,
            }
        }
        Some(usage)
    }

    /// One content block: text, thinking without a signature, or a tool
    /// call.
    fn block(d: &mut Decoder<'_>) -> Option<ContentBlock> {
        let n = d.map().ok()?;
        let (mut kind, mut body, mut id, mut name, mut arguments) = (None, None, None, None, None);
        for _ in 0..n {
            match d.str().ok()? {
                "type" => kind = Some(text(d)?),
                "text" => body = Some(text(d)?),
                "id" => id = Some(text(d)?),
                "name" => name = Some(text(d)?),
                "arguments" => arguments = Some(json_item(d)?),
                _ => return None,
            }
        }
        let call_fields = id.is_some() || name.is_some() || arguments.is_some();
        match kind? {
            "text" if !call_fields => Some(ContentBlock::Text {
                text: body?.to_owned(),
            }),
            "thinking" if !call_fields => Some(ContentBlock::Thinking {
                text: body?.to_owned(),
                signature: None,
            }),
            "tool_call" if body.is_none() => Some(ContentBlock::ToolCall(ToolCall {
                id: id?.to_owned(),
                name: name?.to_owned(),
                arguments: arguments?,
            })),
            _ => None,
        }
    }

    /// An assistant message entry: `{role, content, stop}` and its usage.
    pub(super) fn assistant(content: &[u8]) -> Option<(Message, MessageMeta)> {
        let (mut role, mut blocks, mut stop, mut used) = (None, None, None, None);
        each_field(content, |key, d| {
            match key {
                "role" => role = Some(text(d)?),
                "content" => {
                    let n = d.array().ok()?;
                    let mut all = Vec::with_capacity(usize::try_from(n).ok()?.min(64));
                    for _ in 0..n {
                        all.push(block(d)?);
                    }
                    blocks = Some(all);
                }
                "stop" => stop = Some(named::<StopReason>(d)?),
                "usage" => used = Some(usage(d)?),
                _ => return None,
            }
            Some(())
        })?;
        (role? == "assistant").then_some(())?;
        let meta = MessageMeta {
            usage: used,
            ..MessageMeta::default()
        };
        Some((
            Message::Assistant {
                content: blocks?,
                stop: stop?,
            },
            meta,
        ))
    }

    /// A tool result entry: `{role, call_id, name, content, is_error}`
    /// with its status and effect id; or with `content_ref` (the effect
    /// whose output is its text) in place of `content`, returned third
    /// for the caller to resolve (the content is then empty).
    pub(super) fn tool_result(content: &[u8]) -> Option<(Message, MessageMeta, Option<&str>)> {
        let (mut role, mut call_id, mut name, mut body, mut is_error) =
            (None, None, None, None, None);
        let (mut status, mut effect_id, mut content_ref) = (None, None, None);
        each_field(content, |key, d| {
            match key {
                "role" => role = Some(text(d)?),
                "call_id" => call_id = Some(text(d)?),
                "name" => name = Some(text(d)?),
                "content" => body = Some(text(d)?),
                smith_store::refs::CONTENT_REF => content_ref = Some(text(d)?),
                "is_error" => is_error = Some(d.bool().ok()?),
                "status" => status = Some(named::<ToolStatus>(d)?),
                "effect_id" => effect_id = Some(text(d)?),
                _ => return None,
            }
            Some(())
        })?;
        (role? == "tool_result").then_some(())?;
        // Exactly one of the text and the reference.
        let body = match (body, content_ref) {
            (Some(body), None) => body,
            (None, Some(_)) => "",
            _ => return None,
        };
        let meta = MessageMeta {
            status,
            effect_id: effect_id.map(str::to_owned),
            ..MessageMeta::default()
        };
        Some((
            Message::ToolResult {
                call_id: call_id?.to_owned(),
                name: name?.to_owned(),
                content: body.to_owned(),
                is_error: is_error?,
                media: Vec::new(),
            },
            meta,
            content_ref,
        ))
    }

    /// An effect intent's effect id, tool and parent call; its other
    /// fields (the input) are checked, not kept.
    pub(super) fn intent(content: &[u8]) -> Option<[&str; 3]> {
        let (mut effect_id, mut tool, mut parent) = (None, None, None);
        each_field(content, |key, d| {
            match key {
                "effect_id" => effect_id = Some(text(d)?),
                "tool" => tool = Some(text(d)?),
                "parent" => parent = Some(text(d)?),
                _ => {
                    d.skip().ok()?;
                }
            }
            Some(())
        })?;
        Some([effect_id?, tool?, parent?])
    }

    /// A run start record as streaming replay reads it: the working
    /// directory, each definition held in full (its canonical CBOR), and
    /// each kept unchanged (the digest its reference names; `Some(None)`
    /// for a reference without one).
    pub(super) struct RunStart<'a> {
        pub(super) cwd: &'a str,
        pub(super) system: Option<&'a [u8]>,
        pub(super) tools: Option<&'a [u8]>,
        pub(super) unchanged: [Option<Option<&'a str>>; 2],
    }

    /// Checks one item as [`json_item`] reads it, without building it:
    /// `None` where it would be `None`.
    fn json_check(d: &mut Decoder<'_>) -> Option<()> {
        match d.next().ok()? {
            Token::Unsigned(_) | Token::Negative(_) | Token::Text(_) => {}
            Token::Bool(_) | Token::Null => {}
            Token::Float(x) if x.is_finite() => {}
            Token::Array(n) => {
                for _ in 0..n {
                    json_check(d)?;
                }
            }
            Token::Map(n) => {
                for _ in 0..n {
                    let Token::Text(_) = d.next().ok()? else {
                        return None;
                    };
                    json_check(d)?;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// The tool list of a run start: an array of `{name, description,
    /// parameters}`, the parameters any JSON item. Returns its bytes.
    fn tools<'a>(d: &mut Decoder<'a>) -> Option<&'a [u8]> {
        let rest = d.remaining();
        let n = d.array().ok()?;
        for _ in 0..n {
            let fields = d.map().ok()?;
            let (mut name, mut description, mut parameters) = (false, false, false);
            for _ in 0..fields {
                match d.str().ok()? {
                    "name" if !name => name = d.str().is_ok(),
                    "description" if !description => description = d.str().is_ok(),
                    "parameters" if !parameters => parameters = json_check(d).is_some(),
                    _ => return None,
                }
            }
            (name && description && parameters).then_some(())?;
        }
        Some(&rest[..rest.len() - d.remaining().len()])
    }

    /// The `unchanged` map of a run start: for `system` and `tools`, the
    /// `{entry, digest}` reference.
    fn unchanged<'a>(d: &mut Decoder<'a>) -> Option<[Option<Option<&'a str>>; 2]> {
        let mut out = [None, None];
        let n = d.map().ok()?;
        for _ in 0..n {
            let slot = match d.str().ok()? {
                "system" => 0,
                "tools" => 1,
                _ => return None,
            };
            let fields = d.map().ok()?;
            let (mut entry, mut digest) = (false, None);
            for _ in 0..fields {
                match d.str().ok()? {
                    "entry" if !entry => entry = d.u64().is_ok(),
                    "digest" if digest.is_none() => digest = Some(d.str().ok()?),
                    _ => return None,
                }
            }
            (entry && digest.is_some()).then_some(())?;
            out[slot] = Some(digest);
        }
        Some(out)
    }

    /// A run start record in the form smith writes it: `type`
    /// `run_start`, text `provider`, `model` and `cwd`, a text `system`
    /// and a tool list (each held in full or kept `unchanged`).
    pub(super) fn run_start(content: &[u8]) -> Option<RunStart<'_>> {
        let (mut kind, mut provider, mut model, mut cwd) = (None, None, None, None);
        let (mut system, mut tools_at, mut kept) = (None, None, None);
        each_field(content, |key, d| {
            match key {
                "type" => kind = Some(text(d)?),
                "provider" => provider = Some(text(d)?),
                "model" => model = Some(text(d)?),
                "cwd" => cwd = Some(text(d)?),
                "system" => {
                    let rest = d.remaining();
                    d.str().ok()?;
                    system = Some(&rest[..rest.len() - d.remaining().len()]);
                }
                "tools" => tools_at = Some(tools(d)?),
                crate::journal::store::UNCHANGED => kept = Some(unchanged(d)?),
                _ => return None,
            }
            Some(())
        })?;
        (kind? == "run_start" && provider.is_some() && model.is_some()).then_some(())?;
        Some(RunStart {
            cwd: cwd?,
            system,
            tools: tools_at,
            unchanged: kept.unwrap_or_default(),
        })
    }

    /// An effect completion's effect id, outcome, mutation and output.
    pub(super) fn completion(content: &[u8]) -> Option<(&str, &str, &str, Value)> {
        let (mut effect_id, mut outcome, mut mutation, mut output) = (None, None, None, None);
        each_field(content, |key, d| {
            match key {
                "effect_id" => effect_id = Some(text(d)?),
                "outcome" => outcome = Some(text(d)?),
                "mutation" => mutation = Some(text(d)?),
                "output" => output = Some(json_item(d)?),
                _ => return None,
            }
            Some(())
        })?;
        Some((effect_id?, outcome?, mutation?, output?))
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    value: Value,
    id: u64,
    what: &str,
) -> Result<T, ReplayError> {
    serde_json::from_value(value).map_err(|err| {
        ReplayError::new(format!(
            "session entry {id} is not a {what} this build understands: {err}; the session may come from a newer smith"
        ))
    })
}

/// Whether replay reads entries of `kind`.
fn replayed(kind: EntryKind) -> bool {
    matches!(
        kind,
        EntryKind::UserMessage
            | EntryKind::AssistantMessage
            | EntryKind::ToolResult
            | EntryKind::ModelChange
            | EntryKind::EffectIntent
            | EntryKind::EffectCompletion
            | EntryKind::Metadata
            | EntryKind::Compaction
    )
}

/// Feeds one replayed entry (`id`, its kind, its time and its content as a
/// JSON value) to `b`.
fn feed(
    b: &mut Builder,
    id: u64,
    kind: EntryKind,
    at: u64,
    value: Value,
) -> Result<(), ReplayError> {
    b.at = at;
    match kind {
        EntryKind::Metadata => {
            let mut value = value;
            b.resolve_run_start(&mut value);
            // Metadata of other kinds (a future writer's) is not ours.
            if let Ok(run) = serde_json::from_value::<RunRecord>(value) {
                b.run_record(run);
            }
        }
        EntryKind::ModelChange => b.model_change(&value),
        EntryKind::Compaction => {
            let record: crate::agent::CompactionRecord = decode(value, id, "compaction")?;
            b.compaction(record);
        }
        EntryKind::EffectIntent => b.intent(&value),
        EntryKind::EffectCompletion => b.completion(value),
        _ => {
            let mut value = value;
            if kind == EntryKind::ToolResult {
                b.resolve_output(&mut value);
            }
            // Read from the value in place: a clone would copy the whole
            // message (a tool result's output) once more.
            let meta = MessageMeta::deserialize(&value).unwrap_or_default();
            let message: Message = decode(value, id, "message")?;
            match kind {
                EntryKind::UserMessage => b.user(message, &meta),
                EntryKind::AssistantMessage => b.assistant(message, &meta),
                _ => b.tool_result(message, meta),
            }
        }
    }
    Ok(())
}

/// Feeds the records of `session`'s selected branch to `b` in order,
/// calling `each` after every record (and after closing a run the
/// recording leaves open).
fn walk<E: From<ReplayError>>(
    session: &Session,
    b: &mut Builder,
    mut each: impl FnMut(&mut Builder) -> Result<(), E>,
) -> Result<(), E> {
    for record in session.branch() {
        let kind = record.entry_kind();
        if !replayed(kind) {
            continue;
        }
        let value = decode_value(session, record).map_err(E::from)?;
        feed(b, record.id, kind, record.timestamp_ms, value).map_err(E::from)?;
        each(b)?;
    }
    if b.run.is_some() {
        b.close_interrupted();
    }
    each(b)
}

/// Waits before `step` as `pace` says, after the step played before it
/// (its time, and whether it was a `settled`).
fn wait(pace: Pace, previous: Option<(u64, bool)>, step: &Step) {
    if let (Pace::Scaled(factor), Some((at, idle))) = (pace, previous) {
        let mut gap = Duration::from_millis(step.at_ms.saturating_sub(at));
        if idle {
            gap = gap.min(MAX_IDLE_GAP);
        }
        if factor > 0.0 && factor.is_finite() {
            let wait = gap.as_secs_f64() / factor;
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait.min(3600.0)));
            }
        }
    }
}

/// Plays `session`'s selected branch into `sink` as it reads it: the same
/// events as [`Recording::from_session`] then [`Recording::play`] without a
/// turn selection, but each record's events leave before the next record is
/// read, and effects are let go when their run closes (but those of calls
/// it left unanswered). Beyond the loaded session, memory stays that of one
/// run's open effects whatever the session's length; [`stream_file`] does
/// without the load.
///
/// # Errors
///
/// When an entry's content cannot be decoded (the error names the entry),
/// and the first error `sink` returns.
pub fn stream<E: From<ReplayError>>(
    session: &Session,
    pace: Pace,
    sink: impl FnMut(&Event) -> Result<(), E>,
) -> Result<(), E> {
    let mut b = Builder {
        streaming: true,
        ..Builder::default()
    };
    let mut play = player(pace, sink);
    walk(session, &mut b, |b| play(b))
}

/// Sends the events `b` built since the last call to `sink`, waiting as
/// `pace` says, then lets go of what closed runs no longer need.
fn player<E>(
    pace: Pace,
    mut sink: impl FnMut(&Event) -> Result<(), E>,
) -> impl FnMut(&mut Builder) -> Result<(), E> {
    let mut previous: Option<(u64, bool)> = None;
    move |b: &mut Builder| {
        for step in b.out.steps.drain(..) {
            wait(pace, previous, &step);
            previous = Some((step.at_ms, step.event == Event::Settled));
            sink(&step.event)?;
        }
        b.forget_closed_runs();
        Ok(())
    }
}

/// [`stream`] straight from a session file (read within `limits`), without
/// loading it: when the
/// file holds one intact linear history (its selected branch is then every
/// entry in file order, see
/// [`smith_store::SessionFile::for_each_linear_entry`]), each entry is read,
/// played and let go in turn, and memory stays that of one entry and one
/// run's open effects whatever the file's size. Returns `Ok(false)`, having
/// played nothing, for any other file: [`stream`] a full load of it then.
///
/// # Errors
///
/// As [`stream`], and the file's read errors.
pub fn stream_file<E: From<ReplayError>>(
    file: &smith_store::SessionFile,
    limits: &smith_store::Limits,
    pace: Pace,
    sink: impl FnMut(&Event) -> Result<(), E>,
) -> Result<bool, E> {
    /// A read error of the file, or the sink's.
    enum Stop<E> {
        Read(ReplayError),
        Sink(E),
    }
    impl<E> From<smith_store::StoreError> for Stop<E> {
        fn from(err: smith_store::StoreError) -> Self {
            Stop::Read(ReplayError::new(err.to_string()))
        }
    }
    let mut b = Builder {
        streaming: true,
        ..Builder::default()
    };
    let mut play = player(pace, sink);
    let linear = file.for_each_linear_entry(limits, |head, content| {
        let kind = EntryKind::from_code(head.kind);
        if !replayed(kind) {
            return Ok(());
        }
        if !feed_direct(&mut b, kind, head.timestamp_ms, content) {
            let value = value_of(content, head.id, kind).map_err(Stop::Read)?;
            feed(&mut b, head.id, kind, head.timestamp_ms, value).map_err(Stop::Read)?;
        }
        play(&mut b).map_err(Stop::Sink)
    });
    match linear {
        Ok(false) => Ok(false),
        Ok(true) => {
            if b.run.is_some() {
                b.close_interrupted();
            }
            play(&mut b)?;
            Ok(true)
        }
        Err(Stop::Read(err)) => Err(E::from(err)),
        Err(Stop::Sink(err)) => Err(err),
    }
}

impl Recording {
    /// Rebuilds the recorded history of `session`'s selected branch.
    ///
    /// # Errors
    ///
    /// When an entry's content cannot be decoded; the error names the entry.
    pub fn from_session(session: &Session) -> Result<Self, ReplayError> {
        let mut b = Builder::default();
        walk(session, &mut b, |_| Ok::<(), ReplayError>(()))?;
        Ok(b.out)
    }

    /// The run (1-based) a session-wide turn belongs to.
    fn run_has_turn(&self, run: u32, turns: TurnRange) -> bool {
        self.steps.iter().any(|step| {
            matches!(step.scope, Scope::Turn { run: r, turn } if r == run && turns.contains(turn) && turn <= self.turns)
        })
    }

    /// Checks a selection against the session.
    ///
    /// # Errors
    ///
    /// When the range starts after the session's last turn.
    pub fn check(&self, turns: TurnRange) -> Result<(), ReplayError> {
        if turns.first > self.turns {
            return Err(ReplayError::new(format!(
                "--turns starts at turn {} but the session has {} turn{}; pick a range within 1..{}",
                turns.first,
                self.turns,
                if self.turns == 1 { "" } else { "s" },
                self.turns.max(1)
            )));
        }
        Ok(())
    }

    /// The steps of the selected turns (all steps without a selection):
    /// each selected turn with the user input delivered right before it,
    /// bracketed by its run's `agent_start` … `agent_end`, `settled`.
    pub fn select(&self, turns: Option<TurnRange>) -> Vec<&Step> {
        let Some(range) = turns else {
            return self.steps.iter().collect();
        };
        let runs: Vec<bool> = (1..=u32::try_from(self.runs.len()).unwrap_or(u32::MAX))
            .map(|run| self.run_has_turn(run, range))
            .collect();
        let run_selected = |run: u32| {
            run.checked_sub(1)
                .and_then(|i| runs.get(i as usize))
                .copied()
                .unwrap_or(false)
        };
        self.steps
            .iter()
            .filter(|step| match step.scope {
                Scope::Session => false,
                Scope::Run { run } => run_selected(run),
                Scope::Turn { turn, .. } => range.contains(turn),
            })
            .collect()
    }

    /// The effects of the selected turns, in intent order.
    pub fn selected_effects(&self, turns: Option<TurnRange>) -> Vec<&RecordedEffect> {
        self.effects
            .iter()
            .filter(|e| turns.is_none_or(|range| range.contains(e.turn)))
            .collect()
    }

    /// Plays the selected steps into `sink`, waiting between them as `pace`
    /// says.
    ///
    /// # Errors
    ///
    /// The first error `sink` returns.
    pub fn play<E>(
        &self,
        turns: Option<TurnRange>,
        pace: Pace,
        mut sink: impl FnMut(&Event) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut previous: Option<(u64, bool)> = None;
        for step in self.select(turns) {
            wait(pace, previous, step);
            previous = Some((step.at_ms, step.event == Event::Settled));
            sink(&step.event)?;
        }
        Ok(())
    }
}

/// One field that differs between the recorded completion and the
/// re-execution.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// `outcome`, `mutation`, `is_error`, `content` or `details`.
    pub field: String,
    /// What the session recorded.
    pub expected: Value,
    /// What re-executing produced.
    pub got: Value,
}

/// The verdict on one recorded effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Verdict {
    /// Re-executing produced what was recorded.
    Match,
    /// At least one field differs.
    Diverged {
        /// Each differing field.
        divergences: Vec<Divergence>,
    },
    /// The effect has an intent but no completion: its outcome is unknown
    /// and it is never run.
    SkippedUnknown,
    /// The tool is not available to replay (not a built-in); not run.
    SkippedUnavailable,
}

/// One compared effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The effect id.
    pub effect_id: String,
    /// The tool.
    pub tool: String,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

fn replace_in(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(text) if text.contains(from) => *text = text.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_in(v, from, to)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_in(v, from, to)),
        _ => {}
    }
}

fn stable_details(details: &Value) -> Value {
    let mut details = non_null(details.clone());
    if let Value::Object(map) = &mut details {
        for key in VOLATILE_DETAILS {
            map.remove(key);
        }
    }
    details
}

/// Re-executes `effects` in recorded order in `scratch` (a copy of the
/// workspace) with the built-in `tools`, one shared read tracker, and full
/// outputs kept under `output_dir`, and compares each with its recorded
/// completion: outcome, mutation, `is_error`, `content` and `details`
/// (without [`VOLATILE_DETAILS`]). Paths under `scratch` are rewritten to
/// the effect's recorded working directory before comparing. Effects
/// without a completion are [`Verdict::SkippedUnknown`] and never run.
///
/// # Errors
///
/// When `scratch` is not a directory.
pub fn compare(
    effects: &[&RecordedEffect],
    tools: &ToolSet,
    scratch: &Path,
    output_dir: &Path,
) -> Result<Vec<Comparison>, ReplayError> {
    let cx = ToolContext::new(scratch)
        .map_err(|err| {
            ReplayError::new(format!(
                "the scratch workspace {} cannot be used: {err}",
                scratch.display()
            ))
        })?
        .with_output_dir(output_dir);
    let scratch_text = cx.cwd().display().to_string();
    let mut out = Vec::with_capacity(effects.len());
    for effect in effects {
        let verdict = match (&effect.completion, tools.get(&effect.tool)) {
            (None, _) => Verdict::SkippedUnknown,
            (Some(_), None) => Verdict::SkippedUnavailable,
            (Some(done), Some(tool)) => {
                let result = tool.call(&effect.input, &cx);
                let cancelled = result.is_error && result.error_kind() == Some("cancelled");
                let outcome = if cancelled {
                    Outcome::Cancelled
                } else if result.is_error {
                    Outcome::Error
                } else {
                    Outcome::Ok
                };
                let mut got = serde_json::json!({
                    "content": result.content,
                    "details": result.details,
                    "is_error": result.is_error,
                });
                if let Some(cwd) = &effect.cwd {
                    replace_in(&mut got, &scratch_text, cwd);
                }
                let mut divergences = Vec::new();
                let mut check = |field: &str, expected: Value, got: Value| {
                    if expected != got {
                        divergences.push(Divergence {
                            field: field.to_owned(),
                            expected,
                            got,
                        });
                    }
                };
                check(
                    "outcome",
                    Value::from(done.outcome.as_str()),
                    Value::from(outcome.as_str()),
                );
                check(
                    "mutation",
                    Value::from(done.mutation.as_str()),
                    Value::from(result.mutation.as_str()),
                );
                for key in ["is_error", "content"] {
                    check(
                        key,
                        done.output.get(key).cloned().unwrap_or(Value::Null),
                        got.get(key).cloned().unwrap_or(Value::Null),
                    );
                }
                check(
                    "details",
                    stable_details(done.output.get("details").unwrap_or(&Value::Null)),
                    stable_details(got.get("details").unwrap_or(&Value::Null)),
                );
                if divergences.is_empty() {
                    Verdict::Match
                } else {
                    Verdict::Diverged { divergences }
                }
            }
        };
        out.push(Comparison {
            effect_id: effect.effect_id.clone(),
            tool: effect.tool.clone(),
            verdict,
        });
    }
    Ok(out)
}

/// Where [`compare`]'s scratch workspace starts: a snapshot the session's
/// checkpoints recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StartPoint {
    /// The project root the checkpoint was taken of (canonical).
    pub root: String,
    /// The snapshot id (64 hexadecimal digits).
    pub snapshot: String,
    /// The effect whose checkpoint it is.
    pub effect_id: String,
    /// `before` (the project right before that effect) or `after` (right
    /// after it, for a selection that starts after it).
    pub side: &'static str,
}

/// The snapshot a re-execution of `selected` (a selection of `all`, the
/// session's effects in intent order) starts from, from the session's VCS
/// `records`: the `before` of the first checkpoint of a selected effect;
/// when no selected effect has one, the `after` of the newest checkpoint
/// of an effect before the selection. `None` when the session recorded no
/// usable checkpoint for them (none at all, or the first one's snapshot
/// failed).
pub fn start_point(
    records: &[VcsRecord],
    all: &[RecordedEffect],
    selected: &[&RecordedEffect],
) -> Option<StartPoint> {
    let checkpoint_of = |effect_id: &str| {
        records
            .iter()
            .find(|r| r.op == VcsOp::Checkpoint && r.effect_id.as_deref() == Some(effect_id))
    };
    if let Some((effect, record)) = selected
        .iter()
        .find_map(|e| checkpoint_of(&e.effect_id).map(|r| (e, r)))
    {
        return (!record.before.is_empty()).then(|| StartPoint {
            root: record.root.clone(),
            snapshot: record.before.clone(),
            effect_id: effect.effect_id.clone(),
            side: "before",
        });
    }
    let first = selected.first()?;
    let earlier = all.iter().take_while(|e| e.effect_id != first.effect_id);
    let earlier: Vec<&RecordedEffect> = earlier.collect();
    earlier.iter().rev().find_map(|e| {
        let record = checkpoint_of(&e.effect_id)?;
        (!record.after.is_empty()).then(|| StartPoint {
            root: record.root.clone(),
            snapshot: record.after.clone(),
            effect_id: e.effect_id.clone(),
            side: "after",
        })
    })
}

/// Writes the snapshot `point` names, from the checkpoint store of its
/// project under `checkpoints_root` (smith's `<data dir>/checkpoints`),
/// into `scratch`, an empty folder. Returns the store's report (entries
/// recorded by size only are listed there, not written).
///
/// # Errors
///
/// When the store is missing, the snapshot is no longer stored (it was
/// collected), or the export fails; the message says to compare against a
/// copy with `--workspace DIR` instead.
pub fn export_start(
    checkpoints_root: &Path,
    point: &StartPoint,
    scratch: &Path,
) -> Result<smith_vcs::ExportReport, ReplayError> {
    let store = crate::checkpoint::store_dir(checkpoints_root, Path::new(&point.root));
    let fail = |why: String| {
        ReplayError::new(format!(
            "could not start the comparison from snapshot {} ({} {}) of {}: {why}; pass --workspace DIR to compare against a copy of DIR instead",
            point.snapshot, point.side, point.effect_id, point.root
        ))
    };
    if !store.is_dir() {
        return Err(fail(format!(
            "the checkpoint store {} does not exist",
            store.display()
        )));
    }
    // The store is only read: no snapshot is taken, so the stat cache is
    // left as it is.
    let mut vcs = smith_vcs::Vcs::open(scratch, &store, smith_vcs::Options::default())
        .map_err(|e| fail(e.to_string()))?;
    let id = vcs
        .resolve(&point.snapshot)
        .map_err(|e| fail(e.to_string()))?;
    vcs.export(id, scratch).map_err(|e| fail(e.to_string()))
}

/// Copies the directory tree at `from` into `to` (which must exist):
/// directories, regular files (with their permissions) and symbolic links
/// (as links); other file types are skipped. Returns the number of files
/// copied.
///
/// # Errors
///
/// The first file that cannot be read or written, named.
pub fn copy_tree(from: &Path, to: &Path) -> Result<u64, ReplayError> {
    let fail = |path: &Path, err: std::io::Error| {
        ReplayError::new(format!(
            "could not copy {} into the scratch workspace: {err}; check its permissions",
            path.display()
        ))
    };
    let mut copied = 0;
    let entries = std::fs::read_dir(from).map_err(|err| fail(from, err))?;
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|err| fail(from, err))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().map_err(|err| fail(&source, err))?;
        if kind.is_symlink() {
            let link = std::fs::read_link(&source).map_err(|err| fail(&source, err))?;
            std::os::unix::fs::symlink(link, &target).map_err(|err| fail(&target, err))?;
        } else if kind.is_dir() {
            std::fs::create_dir(&target).map_err(|err| fail(&target, err))?;
            copied += copy_tree(&source, &target)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target).map_err(|err| fail(&source, err))?;
            copied += 1;
        }
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records, through the session journal, runs with every form the
    /// direct readers take (text, thinking, tool calls with nested
    /// arguments, usage with unknown fields, results with and without an
    /// effect, completions of every outcome, escapes and multibyte text)
    /// and forms they leave to the JSON value (media, thinking signatures,
    /// a notice, details of a call that did not run, a result whose effect
    /// has no completion, a run left open); returns the session file.
    fn recorded_session(dir: &Path) -> std::path::PathBuf {
        use crate::journal::store::StoreJournal;
        use crate::journal::{
            EffectCompletion, EffectIntent, EffectJournal, RunSummary, SessionEvent, SessionSink,
            canonical_cbor,
        };
        use crate::provider::{Media, MediaType, OpaqueBytes};
        let store = smith_store::Store::open(dir).unwrap();
        let session = store.create(None).unwrap();
        let id = session.id().to_hex();
        let journal = StoreJournal::new(store, session);
        let message = |message: Message, meta: MessageMeta| {
            journal
                .record(&SessionEvent::Message { message, meta })
                .unwrap();
        };
        let odd = "quote \" backslash \\ tab\t nl\n \u{1} \u{7f} ünï 日本 😀 \u{2028}";
        let long = format!("{odd} and clean text after it\n").repeat(400);
        for run in 0..3u32 {
            journal
                .record_run(&RunRecord::RunStart(RunInfo {
                    provider: "p".into(),
                    model: format!("m{}", run % 2),
                    system: Some(odd.into()),
                    tools: Vec::new(),
                    cwd: "/w".into(),
                }))
                .unwrap();
            message(
                Message::User {
                    text: odd.into(),
                    media: if run == 1 {
                        vec![Media::new(MediaType::Png, vec![0x89, b'P', b'N', b'G'])]
                    } else {
                        Vec::new()
                    },
                },
                MessageMeta::default(),
            );
            let usage = Usage {
                input: Some(10),
                output: None,
                cache_read: Some(u64::MAX),
                cache_write: None,
            };
            for k in 0..4u32 {
                let call_id = format!("call_{run}_{k}");
                let call = ToolCall {
                    id: call_id.clone(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": odd, "n": [1, -2, 2.5, null, true], "deep": {"b": {}, "a": []}}),
                };
                let mut content = vec![
                    ContentBlock::Thinking {
                        text: odd.into(),
                        signature: (k == 3).then(|| OpaqueBytes(vec![1, 2])),
                    },
                    ContentBlock::Text { text: long.clone() },
                    ContentBlock::ToolCall(call),
                ];
                if k == 1 {
                    content.remove(0);
                }
                message(
                    Message::Assistant {
                        content,
                        stop: StopReason::ToolUse,
                    },
                    MessageMeta {
                        usage: (k != 2).then_some(usage),
                        ..MessageMeta::default()
                    },
                );
                let effect_id = format!("fx-{}", run * 10 + k + 1);
                let ran = k != 1;
                if ran {
                    journal
                        .record_intent(&EffectIntent {
                            effect_id: effect_id.clone(),
                            parent: call_id.clone(),
                            tool: "bash".into(),
                            plugin_generation: crate::journal::BUILTIN_GENERATION,
                            input: canonical_cbor(&serde_json::json!({"command": odd})).unwrap(),
                        })
                        .unwrap();
                }
                // The last call of the last run is left without completion
                // or result: the run closes as interrupted.
                if run == 2 && k == 3 {
                    continue;
                }
                if ran && k != 2 {
                    journal
                        .record_completion(&EffectCompletion {
                            effect_id: effect_id.clone(),
                            outcome: [Outcome::Ok, Outcome::Error, Outcome::Ok, Outcome::Cancelled]
                                [k as usize],
                            mutation: [
                                Mutation::Applied,
                                Mutation::NotApplied,
                                Mutation::Unknown,
                                Mutation::Unknown,
                            ][k as usize],
                            output: canonical_cbor(&serde_json::json!({
                                "content": long,
                                "details": {"exit_code": k, "path": odd, "list": [1.5, "x"]},
                                "is_error": k == 3,
                            }))
                            .unwrap(),
                        })
                        .unwrap();
                }
                message(
                    Message::ToolResult {
                        call_id,
                        name: "bash".into(),
                        content: long.clone(),
                        is_error: k == 3,
                        media: Vec::new(),
                    },
                    MessageMeta {
                        status: Some(if k == 3 {
                            ToolStatus::Error
                        } else {
                            ToolStatus::Ok
                        }),
                        effect_id: ran.then(|| effect_id.clone()),
                        details: (!ran).then(|| serde_json::json!({"error": {"kind": "invalid"}})),
                        ..MessageMeta::default()
                    },
                );
            }
            message(
                Message::User {
                    text: "notice".into(),
                    media: Vec::new(),
                },
                MessageMeta {
                    notice: true,
                    ..MessageMeta::default()
                },
            );
            if run < 2 {
                message(
                    Message::Assistant {
                        content: vec![ContentBlock::Text { text: odd.into() }],
                        stop: StopReason::End,
                    },
                    MessageMeta::default(),
                );
                journal
                    .record_run(&RunRecord::RunEnd(RunSummary {
                        stop: StopCause::Done,
                        usage,
                        cost: Some(0.5),
                        text: odd.into(),
                    }))
                    .unwrap();
            }
        }
        dir.join(format!("{id}.smith"))
    }

    #[test]
    fn streaming_straight_from_the_records_plays_what_the_recording_plays() {
        let dir = tempfile::tempdir().unwrap();
        let path = recorded_session(dir.path());
        let file = smith_store::SessionFile::open(&path).unwrap();
        let limits = smith_store::Limits::default();
        let session = file.load(&limits).unwrap();
        let recording = Recording::from_session(&session).unwrap();
        let mut want = Vec::new();
        recording
            .play(None, Pace::Instant, |e: &Event| {
                want.push(e.clone());
                Ok::<(), ReplayError>(())
            })
            .unwrap();
        let mut got = Vec::new();
        let streamed = stream_file(&file, &limits, Pace::Instant, |e: &Event| {
            got.push(e.clone());
            Ok::<(), ReplayError>(())
        })
        .unwrap();
        assert!(streamed, "a linear session streams from the file");
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "event {i}");
        }
        // The JSON lines are the same bytes.
        let json = |events: &[Event]| {
            let mut out = Vec::new();
            for e in events {
                e.write_json(&mut out);
                out.push(b'\n');
            }
            out
        };
        assert_eq!(json(&got), json(&want));
        // The direct readers took the common forms and left the others to
        // the JSON value.
        let (mut direct_taken, mut left) = (0, 0);
        for record in session.branch() {
            let kind = record.entry_kind();
            let content = session.content(record).unwrap();
            let taken = match kind {
                EntryKind::AssistantMessage => direct::assistant(&content).is_some(),
                EntryKind::ToolResult => direct::tool_result(&content).is_some(),
                EntryKind::EffectIntent => direct::intent(&content).is_some(),
                EntryKind::EffectCompletion => direct::completion(&content).is_some(),
                _ => continue,
            };
            if taken {
                direct_taken += 1;
            } else {
                left += 1;
            }
        }
        // Per run: assistants 4 + 1 (3 in the last run, whose final answer
        // is missing), results 4 (3 in the last run), 3 intents, 2
        // completions (1 in the last run); signed thinking (one assistant
        // a run) and the un-run call's result with details go the long way.
        assert_eq!(direct_taken, (4 + 3 + 3 + 2) * 2 + (3 + 2 + 3 + 1));
        assert_eq!(left, 2 * 3);
        // Run starts are read straight from their CBOR, those holding the
        // definitions and those keeping them unchanged alike; run ends are
        // not run starts.
        let metadata: Vec<bool> = session
            .branch()
            .iter()
            .filter(|r| r.entry_kind() == EntryKind::Metadata)
            .map(|r| direct::run_start(&session.content(r).unwrap()).is_some())
            .collect();
        assert_eq!(
            metadata,
            [true, false, true, false, true],
            "run start, run end, run start, run end, run start"
        );
        let kept: Vec<[Option<Option<String>>; 2]> = session
            .branch()
            .iter()
            .filter_map(|r| {
                let content = session.content(r).unwrap();
                direct::run_start(&content)
                    .map(|s| s.unchanged.map(|k| k.map(|d| d.map(str::to_owned))))
            })
            .collect();
        assert!(kept[0] == [None, None], "the first run start holds both");
        assert!(
            kept[1..]
                .iter()
                .all(|k| k.iter().all(|d| matches!(d, Some(Some(_))))),
            "later ones keep both unchanged: {kept:?}"
        );
    }

    #[test]
    fn turn_ranges_parse_inclusive_and_one_based() {
        assert_eq!(
            TurnRange::parse("2..3").unwrap(),
            TurnRange { first: 2, last: 3 }
        );
        assert_eq!(
            TurnRange::parse("4").unwrap(),
            TurnRange { first: 4, last: 4 }
        );
        assert_eq!(TurnRange::parse("..2").unwrap().first, 1);
        assert_eq!(TurnRange::parse("3..").unwrap().last, u32::MAX);
        assert!(TurnRange::parse("0..2").is_err());
        assert!(
            TurnRange::parse("3..2")
                .unwrap_err()
                .message
                .contains("after")
        );
        assert!(TurnRange::parse("a..b").is_err());
        let range = TurnRange::parse("2..3").unwrap();
        assert!(!range.contains(1) && range.contains(2) && range.contains(3) && !range.contains(4));
    }

    fn effect(id: &str) -> RecordedEffect {
        RecordedEffect {
            effect_id: id.to_owned(),
            tool: "bash".to_owned(),
            parent: String::new(),
            input: Value::Null,
            completion: None,
            turn: 0,
            cwd: None,
        }
    }

    fn checkpoint(id: &str, before: &str, after: &str) -> VcsRecord {
        VcsRecord {
            op: VcsOp::Checkpoint,
            root: "/p".to_owned(),
            effect_id: Some(id.to_owned()),
            tool: Some("bash".to_owned()),
            turn: None,
            effects: Vec::new(),
            entry: None,
            before: before.to_owned(),
            after: after.to_owned(),
            target: None,
            changed: Vec::new(),
            forced: false,
            error: None,
        }
    }

    #[test]
    fn compare_starts_before_the_first_selected_checkpoint_or_after_the_last_earlier_one() {
        let all: Vec<RecordedEffect> = ["fx-1", "fx-2", "fx-3", "fx-4"]
            .into_iter()
            .map(effect)
            .collect();
        let records = vec![
            checkpoint("fx-2", "b2", "a2"),
            checkpoint("fx-4", "b4", "a4"),
        ];
        let pick = |ids: &[&str]| -> Vec<&RecordedEffect> {
            all.iter()
                .filter(|e| ids.contains(&e.effect_id.as_str()))
                .collect()
        };
        let start = |ids: &[&str]| {
            start_point(&records, &all, &pick(ids)).map(|p| (p.effect_id, p.side, p.snapshot))
        };
        let at = |id: &str, side, snap: &str| Some((id.to_owned(), side, snap.to_owned()));
        assert_eq!(
            start(&["fx-1", "fx-2", "fx-3", "fx-4"]),
            at("fx-2", "before", "b2")
        );
        assert_eq!(start(&["fx-3", "fx-4"]), at("fx-4", "before", "b4"));
        // No checkpoint in the selection: the newest one before it.
        assert_eq!(start(&["fx-3"]), at("fx-2", "after", "a2"));
        assert_eq!(start(&["fx-1"]), None);
        assert_eq!(start(&[]), None);
        // A failed first snapshot is no starting point.
        let failed = vec![checkpoint("fx-2", "", "a2")];
        assert_eq!(start_point(&failed, &all, &pick(&["fx-2"])), None);
        assert_eq!(start_point(&[], &all, &pick(&["fx-2"])), None);
    }

    #[test]
    fn volatile_details_are_not_compared() {
        let a = serde_json::json!({"pid": 1, "duration_ms": 5, "exit_code": 0});
        let b = serde_json::json!({"pid": 2, "duration_ms": 9, "exit_code": 0});
        assert_eq!(stable_details(&a), stable_details(&b));
        assert_eq!(stable_details(&Value::Null), serde_json::json!({}));
    }

    #[test]
    fn scratch_paths_are_rewritten_everywhere() {
        let mut v = serde_json::json!({"a": ["/tmp/x/f", 1], "b": {"c": "in /tmp/x"}});
        replace_in(&mut v, "/tmp/x", "/work");
        assert_eq!(
            v,
            serde_json::json!({"a": ["/work/f", 1], "b": {"c": "in /work"}})
        );
    }
}
