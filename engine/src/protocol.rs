//! The one protocol between the agent runtime and every frontend.
//!
//! Frontends (terminal, eval, JSON-RPC, MCP, replay) send [`Command`]s in and
//! receive typed lifecycle [`Event`]s out; none of them reimplements the
//! loop. Both have a JSON projection (serde, `type`-tagged, snake_case) that
//! is versioned: a JSON stream starts with a [`Header`] record carrying
//! [`SCHEMA_VERSION`], and later versions only add record types and fields.
//! `docs/protocol.md` documents every record with examples.
//!
//! Ordering guarantees (what a consumer may rely on):
//!
//! - `agent_start` … `agent_end` then `settled` bracket one run; turns nest
//!   inside (`turn_start` … `turn_end`), messages inside turns;
//! - `message_delta` / `thinking_delta` come between their message's
//!   `message_start` and `message_end`, in stream order; `message_end`
//!   carries the complete message and is authoritative;
//! - every `tool_call` is answered by exactly one `tool_execution_end`, in
//!   call order; `tool_execution_start` / `tool_execution_update` appear
//!   only for calls that ran;
//! - every `compaction_start` is followed by exactly one `compaction_end`
//!   carrying the outcome; the runtime stays busy in between, so `settled`
//!   never arrives while a compaction runs.

use serde::{Deserialize, Serialize};

use crate::provider::{Message, ToolCall, Usage};
use crate::tools::Mutation;

/// The JSON projection's schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// Input to the runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Start a run with this user input (only when idle).
    Prompt {
        /// The input.
        text: String,
    },
    /// Queue input with the `steer` policy: no new tool call starts, then it
    /// is delivered after the running calls finish.
    Steer {
        /// The input.
        text: String,
    },
    /// Queue input with the `follow_up` policy: delivered when the agent
    /// would otherwise stop.
    FollowUp {
        /// The input.
        text: String,
    },
    /// Queue input under any registered policy by its mode name.
    Enqueue {
        /// The policy's mode name (`steer`, `follow_up`, or a plugin's).
        mode: String,
        /// The input.
        text: String,
    },
    /// Remove one queued item.
    RemoveQueued {
        /// The item id from `queue_changed`.
        id: u64,
    },
    /// Remove every queued item.
    ClearQueue,
    /// Abort the current run: provider and tool work stop at the next
    /// cancellation check; calls not started get `aborted` results.
    Abort,
    /// Switch the model (only when idle); recorded in the session.
    SetModel {
        /// The model id.
        model: String,
    },
    /// Ask for a `state` event.
    GetState,
    /// Ask for a `messages` event with the conversation so far.
    GetMessages,
    /// Compact the conversation now (only when idle): older messages are
    /// replaced in the context by a summary the model writes; the session
    /// keeps them. Announced by `compaction_start` and `compaction_end`
    /// (reason `manual`), then `settled`.
    Compact {
        /// Extra instructions for the summary (what to focus on).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
    },
    /// Abort any run and stop the runtime; the event stream then closes.
    Shutdown,
}

/// The first record of every JSON stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always `"protocol"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `smith <version>`.
    pub producer: String,
    /// Present only when the stream is a replay of a recorded session; the
    /// one thing that tells a replayed stream from a live one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayMarker>,
}

/// Marks a stream as a replay (see `docs/replay.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayMarker {
    /// The replayed session's id (32 hex digits).
    pub session: String,
    /// The session's name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Header {
    /// The header for this build.
    pub fn current() -> Self {
        Self {
            kind: "protocol".to_owned(),
            schema_version: SCHEMA_VERSION,
            producer: format!("smith {}", env!("CARGO_PKG_VERSION")),
            replay: None,
        }
    }

    /// The header for a replay of a recorded session.
    pub fn replay(marker: ReplayMarker) -> Self {
        Self {
            replay: Some(marker),
            ..Self::current()
        }
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// User input.
    User,
    /// A model response.
    Assistant,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCause {
    /// The model answered without tool calls and no input was queued.
    Done,
    /// The turn limit was reached.
    TurnLimit,
    /// The token or cost budget was exceeded.
    Budget,
    /// The run was aborted.
    Aborted,
    /// The run failed (provider error, malformed stream, journal failure,
    /// output limit hit too often).
    Error,
}

/// What a compaction's cheap stage changed, and the size of the context's
/// messages (bytes of their JSON projection) before and after the whole
/// compaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionDetail {
    /// Reasoning blocks of finished turns dropped.
    pub thinking_dropped: usize,
    /// Old tool results cut to their beginning and end.
    pub results_clipped: usize,
    /// Old `read` results replaced because a later read of the same file
    /// supersedes them.
    pub reads_superseded: usize,
    /// The oldest messages left out of the summary, which covers at most
    /// `compact::MAX_SUMMARIZED_WINDOWS` requests' worth (it says so).
    #[serde(default)]
    pub messages_left_out: usize,
    /// The messages' size before, in bytes.
    pub bytes_before: u64,
    /// The messages' size after, in bytes.
    pub bytes_after: u64,
}

/// Why a compaction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// A frontend asked for it (`compact`).
    Manual,
    /// The context estimate crossed the threshold (the model's context
    /// window less the reserve) before a request.
    Threshold,
    /// The provider rejected a request as too large for the context window.
    Overflow,
}

/// How a compaction ended. Only `compacted` changes the context or the
/// session; every other outcome leaves both exactly as they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionOutcome {
    /// The summary was recorded and now replaces the older messages.
    Compacted,
    /// Nothing changed: there was nothing to summarize (too few
    /// messages), a summary would not have made the context smaller (kind
    /// `no_gain`), or an extension blocked it (see `error`).
    Skipped,
    /// Aborted before the summary was recorded.
    Aborted,
    /// The summary request failed, was cut off or empty, or the record
    /// could not be made durable (see `error`).
    Failed,
}

/// How one tool call ended, from the conversation's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It ran and succeeded.
    Ok,
    /// It ran and failed.
    Error,
    /// It was rejected before any effect (unknown tool, invalid arguments,
    /// input too large).
    Invalid,
    /// It did not start because steering input was queued.
    Skipped,
    /// It did not start (or was cancelled) because the run was aborted.
    Aborted,
    /// It did not start because its intent could not be recorded.
    NotRecorded,
    /// It did not start because an extension blocked it.
    Blocked,
}

/// Three-state mutation evidence in the JSON projection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MutationState {
    /// The mutation happened.
    Applied,
    /// Nothing changed.
    NotApplied,
    /// It may have happened.
    Unknown,
}

impl From<Mutation> for MutationState {
    fn from(value: Mutation) -> Self {
        match value {
            Mutation::Applied => MutationState::Applied,
            Mutation::NotApplied => MutationState::NotApplied,
            Mutation::Unknown => MutationState::Unknown,
        }
    }
}

impl From<MutationState> for Mutation {
    fn from(value: MutationState) -> Self {
        match value {
            MutationState::Applied => Mutation::Applied,
            MutationState::NotApplied => Mutation::NotApplied,
            MutationState::Unknown => Mutation::Unknown,
        }
    }
}

/// One queued input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedItem {
    /// The item id (for `remove_queued`).
    pub id: u64,
    /// The policy mode (`steer`, `follow_up`, ...).
    pub mode: String,
    /// The input text.
    pub text: String,
}

/// A runtime error report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// A stable kind: a provider error kind (`rate_limit`, ...,
    /// `malformed_stream`), `journal`, `output_limit`, `busy`,
    /// `unknown_queue_mode`, `queue_item_not_found`, `invalid_command`,
    /// `nothing_to_compact`, `no_gain`, `summary_truncated`,
    /// `summary_empty`, `summary_invalid`, `summary_too_long`.
    pub kind: String,
    /// What happened, why, and what to do next.
    pub message: String,
    /// For a failed completion record: the best known mutation state of the
    /// effect whose record failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<MutationState>,
    /// The effect id, when the error concerns one effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_id: Option<String>,
    /// For rate limits: the provider's retry hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// A lifecycle event out of the runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A run began.
    AgentStart,
    /// A run ended.
    AgentEnd {
        /// Why.
        stop: StopCause,
        /// Total usage of the run (unknown fields stay null).
        usage: Usage,
        /// Total cost in US dollars; null when the price or usage is unknown.
        cost: Option<f64>,
        /// The final assistant text of the run.
        text: String,
    },
    /// The runtime is idle: the run ended and nothing queued starts another.
    Settled,
    /// A turn (one provider request and its tool batch) began.
    TurnStart {
        /// 1-based within the run.
        turn: u32,
    },
    /// A turn ended.
    TurnEnd {
        /// 1-based within the run.
        turn: u32,
    },
    /// A message began (user input being delivered, or a response stream).
    MessageStart {
        /// Who.
        role: Role,
    },
    /// Assistant text, in stream order.
    MessageDelta {
        /// The text piece.
        text: String,
    },
    /// Assistant reasoning, in stream order.
    ThinkingDelta {
        /// The text piece.
        text: String,
    },
    /// A message is complete; authoritative over the deltas.
    MessageEnd {
        /// The complete message.
        message: Message,
        /// The response's usage (assistant messages only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The model made a tool call (before validation).
    ToolCall {
        /// The call.
        call: ToolCall,
    },
    /// A validated call's effect starts; its intent is durable.
    ToolExecutionStart {
        /// The call id.
        call_id: String,
        /// The tool.
        name: String,
        /// The effect id in the journal.
        effect_id: String,
    },
    /// Live output of a running call.
    ToolExecutionUpdate {
        /// The call id.
        call_id: String,
        /// The output piece (lossy UTF-8).
        output: String,
    },
    /// A call is answered; exactly one per `tool_call`, in call order.
    ToolExecutionEnd {
        /// The call id.
        call_id: String,
        /// The tool.
        name: String,
        /// How it ended.
        status: ToolStatus,
        /// The text given to the model.
        content: String,
        /// Structured facts (paths, exit codes, the error kind).
        details: serde_json::Value,
        /// Mutation evidence (calls that ran only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mutation: Option<MutationState>,
        /// The effect id (calls that ran only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effect_id: Option<String>,
    },
    /// The input queue changed; the full queue in delivery order.
    QueueChanged {
        /// The queued items.
        items: Vec<QueuedItem>,
    },
    /// Compaction began: the context is about to be summarized.
    CompactionStart {
        /// Why.
        reason: CompactionReason,
        /// The context estimate before compaction, in tokens.
        tokens_before: u64,
    },
    /// Compaction ended; exactly one per `compaction_start`.
    CompactionEnd {
        /// Why it ran (as in `compaction_start`).
        reason: CompactionReason,
        /// How it ended.
        outcome: CompactionOutcome,
        /// The context estimate before compaction, in tokens.
        tokens_before: u64,
        /// The context estimate after (compacted only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_after: Option<u64>,
        /// The summary now at the front of the context (compacted only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// How many messages the summary replaced (compacted only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summarized_messages: Option<usize>,
        /// How many messages were kept after the summary (compacted only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kept_messages: Option<usize>,
        /// The summary request's usage (when a request was answered).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Why nothing changed (skipped, failed); on `compacted` without a
        /// summary, kind `no_gain`: why only the cheap stage was applied (a
        /// summary would not have made the context smaller).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorInfo>,
        /// What the cheap stage pruned and the messages' size in bytes
        /// before and after (compacted only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<CompactionDetail>,
    },
    /// A provider request failed before any content and is sent again
    /// after `wait_ms` (a rate limit's hint, the backoff after a transient
    /// failure, or 0 when the next target of a failover group is tried at
    /// once). A notice for the user while the run waits; it is not
    /// recorded, so a replay does not show it.
    ProviderRetry {
        /// How long the run waits before sending again, in milliseconds.
        wait_ms: u64,
        /// What failed (its `retry_after_ms` is the provider's hint, if
        /// it gave one).
        error: ErrorInfo,
    },
    /// The model changed.
    ModelChanged {
        /// The provider id.
        provider: String,
        /// The model id.
        model: String,
    },
    /// The answer to `get_state`.
    State {
        /// The provider id.
        provider: String,
        /// The model id.
        model: String,
        /// Whether a run is active.
        busy: bool,
        /// The queued items.
        queue: Vec<QueuedItem>,
        /// Number of messages in the conversation.
        message_count: usize,
    },
    /// The answer to `get_messages`.
    Messages {
        /// The conversation, oldest first.
        messages: Vec<Message>,
    },
    /// Something went wrong.
    Error(ErrorInfo),
}

/// Writes the JSON projection: the header, then one event per line.
#[derive(Debug)]
pub struct JsonLines<W: std::io::Write> {
    out: W,
    /// [`JsonLines::write_event`]'s line, reused.
    line: Vec<u8>,
}

impl<W: std::io::Write> JsonLines<W> {
    /// Starts a stream by writing the [`Header`].
    ///
    /// # Errors
    ///
    /// When writing fails.
    pub fn start(out: W) -> std::io::Result<Self> {
        Self::start_with(out, &Header::current())
    }

    /// Starts a stream with a given header (a replay's).
    ///
    /// # Errors
    ///
    /// When writing fails.
    pub fn start_with(mut out: W, header: &Header) -> std::io::Result<Self> {
        write_line(&mut out, header)?;
        Ok(Self {
            out,
            line: Vec::new(),
        })
    }

    /// Writes one record (an [`Event`] or any other serializable record).
    ///
    /// # Errors
    ///
    /// When writing fails.
    pub fn write<T: Serialize>(&mut self, record: &T) -> std::io::Result<()> {
        write_line(&mut self.out, record)
    }

    /// Writes one [`Event`]: the same line as [`JsonLines::write`] gives
    /// it, built by [`Event::write_json`] into a reused buffer and handed
    /// to the writer in one write.
    ///
    /// # Errors
    ///
    /// When writing fails.
    pub fn write_event(&mut self, event: &Event) -> std::io::Result<()> {
        self.line.clear();
        event.write_json(&mut self.line);
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        // One event's text is not kept past its line: a huge tool output
        // does not pin its size for the rest of the stream.
        if self.line.capacity() > LINE_KEEP {
            self.line = Vec::new();
        }
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The most of [`JsonLines`]' line buffer kept between lines.
const LINE_KEEP: usize = 1 << 20;

fn write_line<W: std::io::Write, T: Serialize>(out: &mut W, record: &T) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, record).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Appends `s` as a JSON string (serde_json's escapes).
fn push_str(out: &mut Vec<u8>, s: &str) {
    smith_codec::json::push_json_string(out, s);
}

/// Appends `,"key":` (`key` needs no escape).
fn push_key(out: &mut Vec<u8>, key: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Appends any serializable value as serde_json writes it.
fn push_serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail, and every type here serializes.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn push_opt_u64(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        Some(n) => smith_codec::json::push_json_u64(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

fn push_usage(out: &mut Vec<u8>, usage: &Usage) {
    out.extend_from_slice(b"{\"input\":");
    push_opt_u64(out, usage.input);
    out.extend_from_slice(b",\"output\":");
    push_opt_u64(out, usage.output);
    out.extend_from_slice(b",\"cache_read\":");
    push_opt_u64(out, usage.cache_read);
    out.extend_from_slice(b",\"cache_write\":");
    push_opt_u64(out, usage.cache_write);
    out.push(b'}');
}

fn push_call(out: &mut Vec<u8>, call: &ToolCall) {
    out.extend_from_slice(b"\"id\":");
    push_str(out, &call.id);
    out.extend_from_slice(b",\"name\":");
    push_str(out, &call.name);
    out.extend_from_slice(b",\"arguments\":");
    push_serde(out, &call.arguments);
}

/// Appends `message` as its JSON projection; `false`, with nothing
/// written, for the forms [`Event::write_json`] leaves to serde (media,
/// thinking signatures).
fn push_message(out: &mut Vec<u8>, message: &Message) -> bool {
    use crate::provider::ContentBlock;
    match message {
        Message::User { text, media } if media.is_empty() => {
            out.extend_from_slice(b"{\"role\":\"user\",\"text\":");
            push_str(out, text);
        }
        Message::Assistant { content, stop } => {
            let plain = content.iter().all(|block| {
                !matches!(
                    block,
                    ContentBlock::Thinking {
                        signature: Some(_),
                        ..
                    }
                )
            });
            if !plain {
                return false;
            }
            out.extend_from_slice(b"{\"role\":\"assistant\",\"content\":[");
            for (i, block) in content.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match block {
                    ContentBlock::Text { text } => {
                        out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                        push_str(out, text);
                    }
                    ContentBlock::Thinking { text, .. } => {
                        out.extend_from_slice(b"{\"type\":\"thinking\",\"text\":");
                        push_str(out, text);
                    }
                    ContentBlock::ToolCall(call) => {
                        out.extend_from_slice(b"{\"type\":\"tool_call\",");
                        push_call(out, call);
                    }
                }
                out.push(b'}');
            }
            out.extend_from_slice(b"],\"stop\":");
            push_serde(out, stop);
        }
        Message::ToolResult {
            call_id,
            name,
            content,
            is_error,
            media,
        } if media.is_empty() => {
            out.extend_from_slice(b"{\"role\":\"tool_result\",\"call_id\":");
            push_str(out, call_id);
            out.extend_from_slice(b",\"name\":");
            push_str(out, name);
            out.extend_from_slice(b",\"content\":");
            push_str(out, content);
            out.extend_from_slice(if *is_error {
                b",\"is_error\":true"
            } else {
                b",\"is_error\":false"
            });
        }
        _ => return false,
    }
    out.push(b'}');
    true
}

impl Event {
    /// Appends this event's JSON projection to `out`: byte for byte what
    /// serde_json writes for it, without a line end. The events a replay
    /// or a run streams most (deltas, messages, tool calls and their ends)
    /// are written directly, their text with
    /// [`smith_codec::json::push_json_string`] (runs of clean bytes copied
    /// whole); the rest, and rare forms (media, thinking signatures), go
    /// through serde_json.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let done = match self {
            Event::AgentStart => {
                out.extend_from_slice(b"{\"type\":\"agent_start\"}");
                true
            }
            Event::Settled => {
                out.extend_from_slice(b"{\"type\":\"settled\"}");
                true
            }
            Event::TurnStart { turn } | Event::TurnEnd { turn } => {
                out.extend_from_slice(if matches!(self, Event::TurnStart { .. }) {
                    b"{\"type\":\"turn_start\",\"turn\":"
                } else {
                    b"{\"type\":\"turn_end\",\"turn\":"
                });
                smith_codec::json::push_json_u64(out, u64::from(*turn));
                out.push(b'}');
                true
            }
            Event::MessageStart { role } => {
                out.extend_from_slice(match role {
                    Role::User => b"{\"type\":\"message_start\",\"role\":\"user\"}",
                    Role::Assistant => b"{\"type\":\"message_start\",\"role\":\"assistant\"}",
                });
                true
            }
            Event::MessageDelta { text } | Event::ThinkingDelta { text } => {
                out.extend_from_slice(if matches!(self, Event::MessageDelta { .. }) {
                    b"{\"type\":\"message_delta\",\"text\":"
                } else {
                    b"{\"type\":\"thinking_delta\",\"text\":"
                });
                push_str(out, text);
                out.push(b'}');
                true
            }
            Event::MessageEnd { message, usage } => {
                out.extend_from_slice(b"{\"type\":\"message_end\",\"message\":");
                let done = push_message(out, message);
                if done {
                    if let Some(usage) = usage {
                        push_key(out, "usage");
                        push_usage(out, usage);
                    }
                    out.push(b'}');
                }
                done
            }
            Event::ToolCall { call } => {
                out.extend_from_slice(b"{\"type\":\"tool_call\",\"call\":{");
                push_call(out, call);
                out.extend_from_slice(b"}}");
                true
            }
            Event::ToolExecutionStart {
                call_id,
                name,
                effect_id,
            } => {
                out.extend_from_slice(b"{\"type\":\"tool_execution_start\",\"call_id\":");
                push_str(out, call_id);
                push_key(out, "name");
                push_str(out, name);
                push_key(out, "effect_id");
                push_str(out, effect_id);
                out.push(b'}');
                true
            }
            Event::ToolExecutionEnd {
                call_id,
                name,
                status,
                content,
                details,
                mutation,
                effect_id,
            } => {
                out.extend_from_slice(b"{\"type\":\"tool_execution_end\",\"call_id\":");
                push_str(out, call_id);
                push_key(out, "name");
                push_str(out, name);
                push_key(out, "status");
                push_serde(out, status);
                push_key(out, "content");
                push_str(out, content);
                push_key(out, "details");
                push_serde(out, details);
                if let Some(mutation) = mutation {
                    push_key(out, "mutation");
                    push_serde(out, mutation);
                }
                if let Some(effect_id) = effect_id {
                    push_key(out, "effect_id");
                    push_str(out, effect_id);
                }
                out.push(b'}');
                true
            }
            Event::AgentEnd {
                stop,
                usage,
                cost,
                text,
            } => {
                out.extend_from_slice(b"{\"type\":\"agent_end\",\"stop\":");
                push_serde(out, stop);
                push_key(out, "usage");
                push_usage(out, usage);
                push_key(out, "cost");
                push_serde(out, cost);
                push_key(out, "text");
                push_str(out, text);
                out.push(b'}');
                true
            }
            _ => false,
        };
        if !done {
            out.truncate(start);
            push_serde(out, self);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_from_json() {
        let cmd: Command = serde_json::from_str(r#"{"type":"follow_up","text":"next"}"#).unwrap();
        assert_eq!(
            cmd,
            Command::FollowUp {
                text: "next".into()
            }
        );
        let cmd: Command = serde_json::from_str(r#"{"type":"abort"}"#).unwrap();
        assert_eq!(cmd, Command::Abort);
        assert!(serde_json::from_str::<Command>(r#"{"type":"launch"}"#).is_err());
    }

    /// Every event form [`Event::write_json`] writes itself, and some it
    /// leaves to serde, with text that needs every kind of escape.
    fn events() -> Vec<Event> {
        use crate::provider::{ContentBlock, StopReason};
        let controls: String = (0u8..0x20).map(char::from).collect();
        let texts = [
            String::new(),
            "plain".to_owned(),
            "quote \" backslash \\ del \u{7f} tab\t nl\n cr\r".to_owned(),
            controls,
            "ünïcödé — 日本語 😀 \u{2028}\u{2029}".to_owned(),
            "long line of text with a \"quote\" every so often\n".repeat(300),
        ];
        let usage = Usage {
            input: Some(12),
            output: None,
            cache_read: Some(0),
            cache_write: Some(u64::MAX),
        };
        let call = |t: &str| ToolCall {
            id: format!("call_{t}"),
            name: "bash".into(),
            arguments: serde_json::json!({"command": t, "n": [1, 2.5, null, true], "z": {"a": "\u{1}"}}),
        };
        let media = crate::provider::Media::new(crate::provider::MediaType::Png, vec![1, 2, 3]);
        let mut all = vec![
            Event::AgentStart,
            Event::Settled,
            Event::TurnStart { turn: 1 },
            Event::TurnEnd { turn: u32::MAX },
            Event::MessageStart { role: Role::User },
            Event::MessageStart {
                role: Role::Assistant,
            },
            Event::ToolExecutionUpdate {
                call_id: "c".into(),
                output: "x\n".into(),
            },
            Event::ModelChanged {
                provider: "p".into(),
                model: "m\"".into(),
            },
            Event::Error(ErrorInfo {
                kind: "interrupted".into(),
                message: "m".into(),
                mutation: None,
                effect_id: None,
                retry_after_ms: Some(5),
            }),
        ];
        for stop in [
            StopCause::Done,
            StopCause::TurnLimit,
            StopCause::Budget,
            StopCause::Aborted,
            StopCause::Error,
        ] {
            for cost in [None, Some(0.0125), Some(1e-7), Some(3.0), Some(f64::NAN)] {
                all.push(Event::AgentEnd {
                    stop,
                    usage,
                    cost,
                    text: "done \"now\"".into(),
                });
            }
        }
        for t in &texts {
            all.push(Event::MessageDelta { text: t.clone() });
            all.push(Event::ThinkingDelta { text: t.clone() });
            all.push(Event::ToolCall { call: call(t) });
            all.push(Event::ToolExecutionStart {
                call_id: t.clone(),
                name: t.clone(),
                effect_id: t.clone(),
            });
            for status in [
                ToolStatus::Ok,
                ToolStatus::Error,
                ToolStatus::Invalid,
                ToolStatus::Skipped,
                ToolStatus::Aborted,
                ToolStatus::NotRecorded,
                ToolStatus::Blocked,
            ] {
                for (mutation, effect_id) in [
                    (None, None),
                    (Some(MutationState::Applied), Some("fx-1".to_owned())),
                    (Some(MutationState::NotApplied), None),
                    (Some(MutationState::Unknown), Some(t.clone())),
                ] {
                    all.push(Event::ToolExecutionEnd {
                        call_id: "c1".into(),
                        name: "bash".into(),
                        status,
                        content: t.clone(),
                        details: serde_json::json!({"exit_code": 0, "path": t, "nested": {"k": [t]}}),
                        mutation,
                        effect_id,
                    });
                }
            }
            let messages = [
                Message::User {
                    text: t.clone(),
                    media: Vec::new(),
                },
                Message::User {
                    text: t.clone(),
                    media: vec![media.clone()],
                },
                Message::ToolResult {
                    call_id: "c\"1".into(),
                    name: "read".into(),
                    content: t.clone(),
                    is_error: true,
                    media: Vec::new(),
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "read".into(),
                    content: t.clone(),
                    is_error: false,
                    media: vec![media.clone()],
                },
                Message::Assistant {
                    content: Vec::new(),
                    stop: StopReason::End,
                },
                Message::Assistant {
                    content: vec![
                        ContentBlock::Thinking {
                            text: t.clone(),
                            signature: None,
                        },
                        ContentBlock::Text { text: t.clone() },
                        ContentBlock::ToolCall(call(t)),
                        ContentBlock::ToolCall(call("second")),
                    ],
                    stop: StopReason::ToolUse,
                },
                Message::Assistant {
                    content: vec![ContentBlock::Thinking {
                        text: t.clone(),
                        signature: Some(crate::provider::OpaqueBytes(vec![0, 255])),
                    }],
                    stop: StopReason::Limit,
                },
            ];
            for message in messages {
                for stop in [StopReason::Abort, StopReason::Error] {
                    if let Message::Assistant { content, .. } = &message {
                        all.push(Event::MessageEnd {
                            message: Message::Assistant {
                                content: content.clone(),
                                stop,
                            },
                            usage: None,
                        });
                    }
                }
                all.push(Event::MessageEnd {
                    message: message.clone(),
                    usage: None,
                });
                all.push(Event::MessageEnd {
                    message,
                    usage: Some(usage),
                });
            }
        }
        all
    }

    #[test]
    fn events_are_written_byte_for_byte_as_serde_json_writes_them() {
        let mut out = Vec::new();
        for event in events() {
            out.clear();
            event.write_json(&mut out);
            let want = serde_json::to_string(&event).unwrap();
            assert_eq!(String::from_utf8(out.clone()).unwrap(), want);
        }
        // Through the stream: the same lines as `write`.
        let (mut fast, mut slow) = (
            JsonLines::start(Vec::new()).unwrap(),
            JsonLines::start(Vec::new()).unwrap(),
        );
        for event in events() {
            fast.write_event(&event).unwrap();
            slow.write(&event).unwrap();
        }
        assert_eq!(fast.into_inner(), slow.into_inner());
    }

    #[test]
    fn the_stream_starts_with_the_schema_version() {
        let mut lines = JsonLines::start(Vec::new()).unwrap();
        lines.write(&Event::AgentStart).unwrap();
        lines
            .write(&Event::ToolExecutionEnd {
                call_id: "c1".into(),
                name: "bash".into(),
                status: ToolStatus::Error,
                content: "x".into(),
                details: serde_json::json!({}),
                mutation: Some(MutationState::NotApplied),
                effect_id: Some("fx-1".into()),
            })
            .unwrap();
        let text = String::from_utf8(lines.into_inner()).unwrap();
        let mut it = text.lines();
        assert_eq!(
            it.next().unwrap(),
            format!(
                r#"{{"type":"protocol","schema_version":1,"producer":"smith {}"}}"#,
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(it.next().unwrap(), r#"{"type":"agent_start"}"#);
        assert_eq!(
            it.next().unwrap(),
            r#"{"type":"tool_execution_end","call_id":"c1","name":"bash","status":"error","content":"x","details":{},"mutation":"not-applied","effect_id":"fx-1"}"#
        );
    }
}
