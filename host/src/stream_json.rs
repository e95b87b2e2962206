//! Claude Code's headless output shapes (`--output-format stream-json` and
//! `json`, `--input-format stream-json`), mapped from smith's runtime
//! events, so tools written for `claude -p` can read `smith eval`.
//!
//! [`StreamJson`] is the one place that decides how a protocol [`Event`]
//! becomes one of those objects:
//!
//! - [`StreamJson::init`]: `{"type":"system","subtype":"init",…}`, first;
//! - [`StreamJson::event`]: an `assistant` object for each complete
//!   assistant message (text, thinking and `tool_use` blocks), a `user`
//!   object carrying one `tool_result` block for each answered tool call;
//!   every other event updates the run's counters and maps to nothing;
//! - [`StreamJson::result`]: `{"type":"result",…}`, last of a run.
//!
//! What smith does not know is never made up: an unknown token count or
//! cost is `null`, and fields for things smith has no counterpart of
//! (Claude Code's version, its permission mode, per-model usage, service
//! tiers, structured tool output) are left out. `docs/cli.md` lists the
//! mapping field by field.
//!
//! [`user_prompt`] reads the other direction: one line of
//! `--input-format stream-json` (a `user` message) to the prompt it holds.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_diag::Diagnostic;
use smith_engine::protocol::{Event, Role, StopCause, ToolStatus};
use smith_engine::provider::{ContentBlock, Message, StopReason, Usage};

/// Where the mapper's identifiers (`uuid` of every object, `message.id` of
/// assistant messages) come from.
pub type IdSource = Box<dyn FnMut() -> String + Send>;

/// What the `init` object describes: the session and the runtime serving it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// smith's session id (32 hex digits), repeated in every object as
    /// `session_id`.
    pub id: String,
    /// The working directory the tools run in.
    pub cwd: String,
    /// The model the runtime starts with.
    pub model: String,
    /// The names of the tools offered to the model, in offer order.
    pub tools: Vec<String>,
}

/// How a run ended, as `agent_end` reports it.
#[derive(Clone, Copy, Debug)]
pub struct RunEnd<'a> {
    /// Why it stopped.
    pub stop: StopCause,
    /// Its total usage (unknown fields stay unknown).
    pub usage: &'a Usage,
    /// Its cost in US dollars, when the price and usage are known.
    pub cost: Option<f64>,
    /// The run's last assistant text.
    pub text: &'a str,
}

/// Maps one session's runtime events to Claude Code's headless objects.
///
/// Call [`init`](Self::init) once, then for each run
/// [`start_run`](Self::start_run), [`event`](Self::event) for every event
/// in order and [`result`](Self::result) at its end.
pub struct StreamJson {
    session: Session,
    /// The model of the messages that follow (`model_changed` moves it).
    model: String,
    /// The cost budget (`--max-cost`), to tell a cost budget from a token
    /// budget when a run stops for `budget`.
    max_cost: Option<f64>,
    ids: IdSource,
    run: RunState,
}

impl std::fmt::Debug for StreamJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamJson")
            .field("session", &self.session)
            .field("model", &self.model)
            .field("max_cost", &self.max_cost)
            .finish_non_exhaustive()
    }
}

/// What one run's `result` object sums up.
#[derive(Debug, Default)]
struct RunState {
    started: Option<Instant>,
    /// `turn_start` events: one provider request and its tool batch each.
    turns: u32,
    /// Time between each assistant `message_start` (the request is about
    /// to be sent) and its `message_end`.
    api: Duration,
    request_started: Option<Instant>,
    /// The tool calls made so far, by id: name and input (for
    /// `permission_denials`).
    calls: HashMap<String, (String, Value)>,
    denials: Vec<Value>,
    /// The messages of the run's `error` events, in order.
    errors: Vec<String>,
}

impl StreamJson {
    /// A mapper for `session` with random version-4 UUIDs as identifiers;
    /// `max_cost` is the run's cost budget, if any.
    pub fn new(session: Session, max_cost: Option<f64>) -> Self {
        Self::with_ids(session, max_cost, Box::new(random_uuid))
    }

    /// A mapper that takes its identifiers from `ids` (tests use a counter).
    pub fn with_ids(session: Session, max_cost: Option<f64>, ids: IdSource) -> Self {
        Self {
            model: session.model.clone(),
            session,
            max_cost,
            ids,
            run: RunState::default(),
        }
    }

    /// The `system`/`init` object that opens the stream.
    pub fn init(&mut self) -> Value {
        json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.session.cwd,
            "session_id": self.session.id,
            "tools": self.session.tools,
            // smith connects to no MCP servers.
            "mcp_servers": [],
            "model": self.model,
            "uuid": (self.ids)(),
        })
    }

    /// A run begins at `now` (its prompt is sent): the counters of the
    /// next `result` start from zero.
    pub fn start_run(&mut self, now: Instant) {
        self.run = RunState {
            started: Some(now),
            ..RunState::default()
        };
    }

    /// The object `event`, received at `now`, maps to, if any.
    pub fn event(&mut self, event: &Event, now: Instant) -> Option<Value> {
        match event {
            Event::TurnStart { .. } => {
                self.run.turns += 1;
                None
            }
            Event::MessageStart {
                role: Role::Assistant,
            } => {
                self.run.request_started = Some(now);
                None
            }
            Event::MessageEnd {
                message: Message::Assistant { content, stop },
                usage,
            } => {
                if let Some(at) = self.run.request_started.take() {
                    self.run.api += now.saturating_duration_since(at);
                }
                self.assistant(content, *stop, usage.as_ref())
            }
            Event::ToolExecutionEnd {
                call_id,
                status,
                content,
                ..
            } => Some(self.tool_result(call_id, *status, content)),
            Event::ModelChanged { model, .. } => {
                self.model.clone_from(model);
                None
            }
            Event::Error(info) => {
                self.run.errors.push(info.message.clone());
                None
            }
            _ => None,
        }
    }

    /// The `result` object of the run that ended with `end` at `now`.
    pub fn result(&mut self, end: RunEnd<'_>, now: Instant) -> Value {
        let run = std::mem::take(&mut self.run);
        let is_error = end.stop != StopCause::Done;
        let subtype = match end.stop {
            StopCause::Done => "success",
            StopCause::TurnLimit => "error_max_turns",
            StopCause::Budget
                if self
                    .max_cost
                    .zip(end.cost)
                    .is_some_and(|(max, cost)| cost > max) =>
            {
                "error_max_budget_usd"
            }
            // A token budget has no subtype of its own in Claude Code's
            // vocabulary; neither has an interrupted run.
            StopCause::Budget | StopCause::Aborted | StopCause::Error => "error_during_execution",
        };
        // A failed run's answer is what went wrong, as Claude Code puts
        // its API errors there.
        let result = if is_error && !run.errors.is_empty() {
            run.errors.join("\n")
        } else {
            end.text.to_owned()
        };
        let duration = run
            .started
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        json!({
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": millis(duration),
            "duration_api_ms": millis(run.api),
            "num_turns": run.turns,
            "result": result,
            "session_id": self.session.id,
            "total_cost_usd": end.cost,
            "usage": usage(Some(end.usage)),
            "permission_denials": run.denials,
            "uuid": (self.ids)(),
        })
    }

    fn assistant(
        &mut self,
        content: &[ContentBlock],
        stop: StopReason,
        usage_of: Option<&Usage>,
    ) -> Option<Value> {
        // A response that failed before any content says nothing; the
        // error reaches the `result`.
        if content.is_empty() {
            return None;
        }
        let blocks: Vec<Value> = content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text } => json!({"type": "text", "text": text}),
                // smith's signatures are provider envelopes, not
                // Anthropic's signature strings: left out.
                ContentBlock::Thinking { text, .. } => {
                    json!({"type": "thinking", "thinking": text})
                }
                ContentBlock::ToolCall(call) => {
                    self.run
                        .calls
                        .insert(call.id.clone(), (call.name.clone(), call.arguments.clone()));
                    json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": call.arguments,
                    })
                }
            })
            .collect();
        let stop_reason = match stop {
            StopReason::End => Some("end_turn"),
            StopReason::ToolUse => Some("tool_use"),
            StopReason::Limit => Some("max_tokens"),
            StopReason::Abort | StopReason::Error => None,
        };
        let id = format!("msg_{}", (self.ids)().replace('-', ""));
        Some(json!({
            "type": "assistant",
            "message": {
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": blocks,
                "stop_reason": stop_reason,
                // smith sends no stop sequences.
                "stop_sequence": null,
                "usage": usage(usage_of),
            },
            // smith runs no subagents: every message is the session's own.
            "parent_tool_use_id": null,
            "session_id": self.session.id,
            "uuid": (self.ids)(),
        }))
    }

    fn tool_result(&mut self, call_id: &str, status: ToolStatus, content: &str) -> Value {
        if status == ToolStatus::Blocked
            && let Some((name, input)) = self.run.calls.get(call_id)
        {
            self.run.denials.push(json!({
                "tool_name": name,
                "tool_use_id": call_id,
                "tool_input": input,
            }));
        }
        json!({
            "type": "user",
            "message": {
                "role": "user",
                "content": [{
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": status != ToolStatus::Ok,
                }],
            },
            "parent_tool_use_id": null,
            "session_id": self.session.id,
            "uuid": (self.ids)(),
        })
    }
}

/// smith's usage in Claude's field names; an unknown count is `null`.
fn usage(usage: Option<&Usage>) -> Value {
    let usage = usage.copied().unwrap_or_default();
    json!({
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "output_tokens": usage.output,
    })
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A random version-4 UUID (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`), as
/// Claude Code gives each object; when the system has no randomness to
/// offer, a process-unique stand-in of the same form.
fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes[..8].copy_from_slice(&n.to_be_bytes());
        bytes[8..].copy_from_slice(&(nanos as u64).to_be_bytes());
    }
    format_uuid(bytes)
}

/// `bytes` as a version-4, variant-1 UUID.
fn format_uuid(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The prompt that line `number` (1-based) of `--input-format stream-json`
/// holds: `{"type":"user","message":{"role":"user","content":…}}`, whose
/// content is a string or a list of `text` blocks (joined by a blank
/// line). Other keys (`session_id`, `parent_tool_use_id`, `uuid`) are
/// ignored. `None` for a blank line.
///
/// # Errors
///
/// `input.stream-json` when the line is not JSON, not a user message, or
/// holds a block other than text (an image, a tool result): a prompt of
/// `smith eval` is text.
pub fn user_prompt(line: &str, number: usize) -> Result<Option<String>, Diagnostic> {
    const EXAMPLE: &str = r#"{"type":"user","message":{"role":"user","content":"fix the tests"}}"#;
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let refuse = |why: String| {
        Diagnostic::error(
            "input.stream-json",
            format!("line {number} of standard input (--input-format stream-json) is not a user message smith can run"),
            why,
            format!("write one user message a line, its content a string or text blocks, e.g. {EXAMPLE}"),
        )
        .with_surface(smith_diag::Surface::flag("--input-format"))
    };
    let value: Value =
        serde_json::from_str(line).map_err(|e| refuse(format!("it is not JSON: {e}")))?;
    let kind = value.get("type").and_then(Value::as_str);
    if kind != Some("user") {
        return Err(refuse(match kind {
            Some(kind) => format!("its type is {kind:?}, and only \"user\" messages are read"),
            None => "it has no \"type\"; only \"user\" messages are read".to_owned(),
        }));
    }
    let Some(message) = value.get("message") else {
        return Err(refuse("it has no \"message\"".to_owned()));
    };
    if let Some(role) = message.get("role").and_then(Value::as_str)
        && role != "user"
    {
        return Err(refuse(format!(
            "its message's role is {role:?}, not \"user\""
        )));
    }
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                match (
                    block.get("type").and_then(Value::as_str),
                    block.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(text)) => texts.push(text),
                    (Some("text"), None) => {
                        return Err(refuse(format!(
                            "its content block {} is a text block without a \"text\" string",
                            i + 1
                        )));
                    }
                    (kind, _) => {
                        return Err(refuse(format!(
                            "its content block {} is {}, and a prompt of smith eval is text only",
                            i + 1,
                            kind.map_or_else(|| "untyped".to_owned(), |k| format!("of type {k:?}"))
                        )));
                    }
                }
            }
            texts.join("\n\n")
        }
        Some(_) => {
            return Err(refuse(
                "its message's content is neither a string nor a list of blocks".to_owned(),
            ));
        }
        None => return Err(refuse("its message has no \"content\"".to_owned())),
    };
    if text.trim().is_empty() {
        return Err(refuse(
            "its text is empty, and an empty prompt would send nothing to answer".to_owned(),
        ));
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use smith_engine::protocol::{ErrorInfo, MutationState};
    use smith_engine::provider::ToolCall;

    fn mapper(max_cost: Option<f64>) -> StreamJson {
        let mut n = 0;
        StreamJson::with_ids(
            Session {
                id: "0123456789abcdef0123456789abcdef".into(),
                cwd: "/work".into(),
                model: "mock-1".into(),
                tools: vec!["read".into(), "ls".into()],
            },
            max_cost,
            Box::new(move || {
                n += 1;
                format!("id-{n}")
            }),
        )
    }

    fn known(input: u64, output: u64) -> Usage {
        Usage {
            input: Some(input),
            output: Some(output),
            cache_read: Some(0),
            cache_write: None,
        }
    }

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    fn tool_end(id: &str, status: ToolStatus, content: &str) -> Event {
        Event::ToolExecutionEnd {
            call_id: id.into(),
            name: "ls".into(),
            status,
            content: content.into(),
            details: json!({}),
            mutation: (status == ToolStatus::Ok).then_some(MutationState::NotApplied),
            effect_id: None,
        }
    }

    #[test]
    fn init_names_the_session_the_model_and_the_tools() {
        let mut map = mapper(None);
        assert_eq!(
            map.init(),
            json!({
                "type": "system",
                "subtype": "init",
                "cwd": "/work",
                "session_id": "0123456789abcdef0123456789abcdef",
                "tools": ["read", "ls"],
                "mcp_servers": [],
                "model": "mock-1",
                "uuid": "id-1",
            })
        );
    }

    #[test]
    fn a_tool_using_run_maps_to_assistant_user_assistant_result() {
        let mut map = mapper(None);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        map.start_run(t0);
        let events = [
            (0, Event::AgentStart),
            (
                0,
                Event::MessageEnd {
                    message: Message::user("hi"),
                    usage: None,
                },
            ),
            (1, Event::TurnStart { turn: 1 }),
            (
                10,
                Event::MessageStart {
                    role: Role::Assistant,
                },
            ),
            (
                12,
                Event::MessageDelta {
                    text: "Listing.".into(),
                },
            ),
            (
                40,
                Event::MessageEnd {
                    message: Message::Assistant {
                        content: vec![
                            ContentBlock::Thinking {
                                text: "look first".into(),
                                signature: None,
                            },
                            ContentBlock::Text {
                                text: "Listing.".into(),
                            },
                            ContentBlock::ToolCall(call("c1", "ls", json!({"path": "."}))),
                        ],
                        stop: StopReason::ToolUse,
                    },
                    usage: Some(known(10, 5)),
                },
            ),
            (
                41,
                Event::ToolCall {
                    call: call("c1", "ls", json!({"path": "."})),
                },
            ),
            (50, tool_end("c1", ToolStatus::Ok, "a.txt")),
            (51, Event::TurnEnd { turn: 1 }),
            (52, Event::TurnStart { turn: 2 }),
            (
                60,
                Event::MessageStart {
                    role: Role::Assistant,
                },
            ),
            (
                80,
                Event::MessageEnd {
                    message: Message::Assistant {
                        content: vec![ContentBlock::Text {
                            text: "One file.".into(),
                        }],
                        stop: StopReason::End,
                    },
                    usage: Some(known(20, 3)),
                },
            ),
            (81, Event::TurnEnd { turn: 2 }),
        ];
        let out: Vec<Value> = events
            .iter()
            .filter_map(|(ms, e)| map.event(e, at(*ms)))
            .collect();
        assert_eq!(
            out,
            vec![
                json!({
                    "type": "assistant",
                    "message": {
                        "id": "msg_id1",
                        "type": "message",
                        "role": "assistant",
                        "model": "mock-1",
                        "content": [
                            {"type": "thinking", "thinking": "look first"},
                            {"type": "text", "text": "Listing."},
                            {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "."}},
                        ],
                        "stop_reason": "tool_use",
                        "stop_sequence": null,
                        "usage": {"input_tokens": 10, "cache_creation_input_tokens": null, "cache_read_input_tokens": 0, "output_tokens": 5},
                    },
                    "parent_tool_use_id": null,
                    "session_id": "0123456789abcdef0123456789abcdef",
                    "uuid": "id-2",
                }),
                json!({
                    "type": "user",
                    "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "c1", "content": "a.txt", "is_error": false},
                    ]},
                    "parent_tool_use_id": null,
                    "session_id": "0123456789abcdef0123456789abcdef",
                    "uuid": "id-3",
                }),
                json!({
                    "type": "assistant",
                    "message": {
                        "id": "msg_id4",
                        "type": "message",
                        "role": "assistant",
                        "model": "mock-1",
                        "content": [{"type": "text", "text": "One file."}],
                        "stop_reason": "end_turn",
                        "stop_sequence": null,
                        "usage": {"input_tokens": 20, "cache_creation_input_tokens": null, "cache_read_input_tokens": 0, "output_tokens": 3},
                    },
                    "parent_tool_use_id": null,
                    "session_id": "0123456789abcdef0123456789abcdef",
                    "uuid": "id-5",
                }),
            ]
        );
        let total = known(30, 8);
        let result = map.result(
            RunEnd {
                stop: StopCause::Done,
                usage: &total,
                cost: None,
                text: "One file.",
            },
            at(90),
        );
        assert_eq!(
            result,
            json!({
                "type": "result",
                "subtype": "success",
                "is_error": false,
                "duration_ms": 90,
                // 10..40 and 60..80.
                "duration_api_ms": 50,
                "num_turns": 2,
                "result": "One file.",
                "session_id": "0123456789abcdef0123456789abcdef",
                "total_cost_usd": null,
                "usage": {"input_tokens": 30, "cache_creation_input_tokens": null, "cache_read_input_tokens": 0, "output_tokens": 8},
                "permission_denials": [],
                "uuid": "id-6",
            })
        );
    }

    #[test]
    fn a_failed_run_is_an_error_result_carrying_the_error() {
        let mut map = mapper(None);
        let t0 = Instant::now();
        map.start_run(t0);
        let silent = [
            Event::TurnStart { turn: 1 },
            Event::MessageStart {
                role: Role::Assistant,
            },
            // A response that failed before any content.
            Event::MessageEnd {
                message: Message::Assistant {
                    content: vec![],
                    stop: StopReason::Error,
                },
                usage: None,
            },
            Event::Error(ErrorInfo {
                kind: "auth".into(),
                message: "the provider refused the credential".into(),
                mutation: None,
                effect_id: None,
                retry_after_ms: None,
            }),
        ];
        for event in &silent {
            assert_eq!(map.event(event, t0), None, "{event:?}");
        }
        let unknown = Usage::default();
        let result = map.result(
            RunEnd {
                stop: StopCause::Error,
                usage: &unknown,
                cost: None,
                text: "",
            },
            t0,
        );
        assert_eq!(result["subtype"], "error_during_execution");
        assert_eq!(result["is_error"], true);
        assert_eq!(result["num_turns"], 1);
        assert_eq!(result["result"], "the provider refused the credential");
        assert_eq!(
            result["usage"],
            json!({"input_tokens": null, "cache_creation_input_tokens": null, "cache_read_input_tokens": null, "output_tokens": null}),
            "unknown usage stays unknown, never 0"
        );
        assert_eq!(result["total_cost_usd"], Value::Null);
    }

    #[test]
    fn stop_causes_map_to_claudes_subtypes() {
        let usage = known(1, 1);
        let end = |stop, cost| RunEnd {
            stop,
            usage: &usage,
            cost,
            text: "partial",
        };
        let t0 = Instant::now();
        let mut map = mapper(Some(0.5));
        for (stop, cost, subtype) in [
            (StopCause::Done, None, "success"),
            (StopCause::TurnLimit, None, "error_max_turns"),
            (StopCause::Budget, Some(0.75), "error_max_budget_usd"),
            // Under the cost budget: the token budget stopped it.
            (StopCause::Budget, Some(0.25), "error_during_execution"),
            (StopCause::Budget, None, "error_during_execution"),
            (StopCause::Aborted, None, "error_during_execution"),
        ] {
            map.start_run(t0);
            let result = map.result(end(stop, cost), t0);
            assert_eq!(result["subtype"], subtype, "{stop:?} {cost:?}");
            assert_eq!(result["is_error"], stop != StopCause::Done);
            // No error event: the last assistant text stands.
            assert_eq!(result["result"], "partial");
        }
    }

    #[test]
    fn blocked_calls_are_permission_denials_and_every_other_failure_is_an_error_result() {
        let mut map = mapper(None);
        let t0 = Instant::now();
        map.start_run(t0);
        map.event(
            &Event::MessageEnd {
                message: Message::Assistant {
                    content: vec![
                        ContentBlock::ToolCall(call("w", "write", json!({"path": "/etc/x"}))),
                        ContentBlock::ToolCall(call("r", "read", json!({"path": "nope"}))),
                    ],
                    stop: StopReason::ToolUse,
                },
                usage: None,
            },
            t0,
        );
        let blocked = map
            .event(&tool_end("w", ToolStatus::Blocked, "blocked by policy"), t0)
            .unwrap();
        assert_eq!(blocked["message"]["content"][0]["is_error"], true);
        let failed = map
            .event(&tool_end("r", ToolStatus::Error, "no such file"), t0)
            .unwrap();
        assert_eq!(failed["message"]["content"][0]["is_error"], true);
        let usage = Usage::default();
        let result = map.result(
            RunEnd {
                stop: StopCause::Done,
                usage: &usage,
                cost: None,
                text: "",
            },
            t0,
        );
        assert_eq!(
            result["permission_denials"],
            json!([{"tool_name": "write", "tool_use_id": "w", "tool_input": {"path": "/etc/x"}}])
        );
    }

    #[test]
    fn a_model_change_names_the_new_model_on_later_messages() {
        let mut map = mapper(None);
        let t0 = Instant::now();
        map.start_run(t0);
        map.event(
            &Event::ModelChanged {
                provider: "mock".into(),
                model: "mock-2".into(),
            },
            t0,
        );
        let message = map
            .event(
                &Event::MessageEnd {
                    message: Message::Assistant {
                        content: vec![ContentBlock::Text { text: "x".into() }],
                        stop: StopReason::Limit,
                    },
                    usage: None,
                },
                t0,
            )
            .unwrap();
        assert_eq!(message["message"]["model"], "mock-2");
        assert_eq!(message["message"]["stop_reason"], "max_tokens");
    }

    #[test]
    fn counters_start_afresh_for_each_run() {
        let mut map = mapper(None);
        let t0 = Instant::now();
        let usage = Usage::default();
        let end = RunEnd {
            stop: StopCause::Done,
            usage: &usage,
            cost: None,
            text: "",
        };
        map.start_run(t0);
        map.event(&Event::TurnStart { turn: 1 }, t0);
        map.event(&Event::TurnStart { turn: 2 }, t0);
        assert_eq!(map.result(end, t0)["num_turns"], 2);
        map.start_run(t0);
        map.event(&Event::TurnStart { turn: 1 }, t0);
        assert_eq!(map.result(end, t0)["num_turns"], 1);
    }

    #[test]
    fn uuids_have_the_version_4_form() {
        let id = format_uuid([0xff; 16]);
        assert_eq!(id, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let random = random_uuid();
        assert_eq!(random.len(), 36);
        assert_eq!(&random[14..15], "4");
        assert_ne!(random, random_uuid());
    }

    #[test]
    fn user_messages_read_as_prompts() {
        let read = |line: &str| user_prompt(line, 3);
        assert_eq!(
            read(r#"{"type":"user","message":{"role":"user","content":"fix it"}}"#).unwrap(),
            Some("fix it".to_owned())
        );
        assert_eq!(
            read(r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},"session_id":"x","parent_tool_use_id":null}"#).unwrap(),
            Some("one\n\ntwo".to_owned())
        );
        assert_eq!(read("   ").unwrap(), None);
        for (line, says) in [
            ("not json", "not JSON"),
            (r#"{"type":"control_request"}"#, "\"control_request\""),
            (r#"{"message":{}}"#, "no \"type\""),
            (r#"{"type":"user"}"#, "no \"message\""),
            (
                r#"{"type":"user","message":{"role":"assistant","content":"x"}}"#,
                "\"assistant\"",
            ),
            (
                r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{}}]}}"#,
                "\"image\"",
            ),
            (
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text"}]}}"#,
                "without a \"text\"",
            ),
            (
                r#"{"type":"user","message":{"role":"user","content":7}}"#,
                "neither a string",
            ),
            (
                r#"{"type":"user","message":{"role":"user"}}"#,
                "no \"content\"",
            ),
            (
                r#"{"type":"user","message":{"role":"user","content":" "}}"#,
                "empty",
            ),
        ] {
            let d = read(line).unwrap_err();
            assert_eq!(d.code(), "input.stream-json");
            assert!(d.what().contains("line 3"), "{}", d.what());
            assert!(d.why().contains(says), "{line}: {}", d.why());
        }
    }
}
