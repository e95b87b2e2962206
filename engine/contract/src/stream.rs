//! Stream validation and assembly.
//!
//! [`Validator`] consumes normalized [`StreamEvent`]s in order, enforces the
//! stream rules and assembles the [`AssistantTurn`]:
//!
//! - exactly one terminal event (`stop` or `error`) ends the stream; any
//!   event after it is a malformed stream;
//! - a tool call's deltas and end refer to a call that is open; a call id is
//!   used once per response; calls are kept in the order they started;
//! - `stop end` / `stop tool_use` with a call still open is malformed, and
//!   `stop tool_use` needs at least one call;
//! - at `stop limit` the calls still open are cut off: they are removed from
//!   the turn (never executed) and listed in [`AssistantTurn::cut_off`];
//! - a stream that ends without a terminal event fails with
//!   [`ProviderErrorKind::MalformedStream`].

use std::collections::HashSet;

use crate::types::{
    ContentBlock, OpaqueBytes, ProviderError, ProviderErrorKind, StopReason, StreamEvent, ToolCall,
    Usage,
};

/// A tool call the output limit cut off before its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutOffCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// How many argument bytes had arrived.
    pub argument_bytes: usize,
}

/// A validated, assembled assistant response.
#[derive(Clone, Debug, PartialEq)]
pub struct AssistantTurn {
    /// Blocks in stream order (tool calls at the position they started).
    pub content: Vec<ContentBlock>,
    /// The last reported value of each usage field.
    pub usage: Usage,
    /// Why the response ended.
    pub stop: StopReason,
    /// The typed error when `stop` is [`StopReason::Error`].
    pub error: Option<ProviderError>,
    /// Tool calls cut off by the output limit (not in `content`).
    pub cut_off: Vec<CutOffCall>,
}

impl AssistantTurn {
    /// The complete tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

enum Slot {
    Text(String),
    Thinking(String, Option<Vec<u8>>),
    Call {
        id: String,
        name: String,
        arguments: String,
        open: bool,
    },
}

/// The stream state machine. Feed every event to [`Validator::push`], then
/// call [`Validator::finish`] when the body ends.
#[derive(Default)]
pub struct Validator {
    slots: Vec<Slot>,
    ids: HashSet<String>,
    usage: Usage,
    terminal: Option<(StopReason, Option<ProviderError>)>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("blocks", &self.slots.len())
            .field("terminal", &self.terminal)
            .finish()
    }
}

fn event_name(event: &StreamEvent) -> &'static str {
    match event {
        StreamEvent::TextDelta { .. } => "text_delta",
        StreamEvent::ThinkingDelta { .. } => "thinking_delta",
        StreamEvent::ToolCallStart { .. } => "tool_call_start",
        StreamEvent::ToolCallDelta { .. } => "tool_call_delta",
        StreamEvent::ToolCallEnd { .. } => "tool_call_end",
        StreamEvent::Usage(_) => "usage",
        StreamEvent::Stop { .. } => "stop",
        StreamEvent::Error(_) => "error",
    }
}

impl Validator {
    /// A validator for one response.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the terminal event has been seen.
    pub fn is_terminated(&self) -> bool {
        self.terminal.is_some()
    }

    fn open_call(&mut self, id: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(
            |slot| matches!(slot, Slot::Call { id: slot_id, open: true, .. } if slot_id == id),
        )
    }

    fn first_open_call(&self) -> Option<&str> {
        self.slots.iter().find_map(|slot| match slot {
            Slot::Call { id, open: true, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// Checks and applies one event.
    ///
    /// # Errors
    ///
    /// A [`ProviderErrorKind::MalformedStream`] error naming the rule the
    /// event broke. The stream must be abandoned then.
    pub fn push(&mut self, event: &StreamEvent) -> Result<(), ProviderError> {
        if self.terminal.is_some() {
            return Err(ProviderError::malformed(format!(
                "the provider sent a {} event after the stream's terminal event; a stream ends with exactly one stop or error event — this is a provider defect, report it",
                event_name(event)
            )));
        }
        match event {
            StreamEvent::TextDelta { text } => match self.slots.last_mut() {
                Some(Slot::Text(existing)) => existing.push_str(text),
                _ => self.slots.push(Slot::Text(text.clone())),
            },
            StreamEvent::ThinkingDelta { text, signature } => {
                let sig = signature.as_ref().map(|s| s.0.as_slice());
                match self.slots.last_mut() {
                    Some(Slot::Thinking(existing, existing_sig)) => {
                        existing.push_str(text);
                        if let Some(bytes) = sig {
                            existing_sig
                                .get_or_insert_with(Vec::new)
                                .extend_from_slice(bytes);
                        }
                    }
                    _ => self
                        .slots
                        .push(Slot::Thinking(text.clone(), sig.map(<[u8]>::to_vec))),
                }
            }
            StreamEvent::ToolCallStart { id, name } => {
                if id.is_empty() || name.is_empty() {
                    return Err(ProviderError::malformed(format!(
                        "the provider started a tool call with an empty {} (id {id:?}, name {name:?}); every call needs an id and a tool name",
                        if id.is_empty() { "id" } else { "name" }
                    )));
                }
                if !self.ids.insert(id.clone()) {
                    return Err(ProviderError::malformed(format!(
                        "the provider started tool call {id:?} twice in one response; call ids must be unique per response"
                    )));
                }
                self.slots.push(Slot::Call {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    open: true,
                });
            }
            StreamEvent::ToolCallDelta {
                id,
                arguments: piece,
            } => match self.open_call(id) {
                Some(Slot::Call { arguments, .. }) => arguments.push_str(piece),
                _ => {
                    return Err(ProviderError::malformed(format!(
                        "the provider sent argument text for tool call {id:?}, which is not open (never started, or already ended)"
                    )));
                }
            },
            StreamEvent::ToolCallEnd { id } => match self.open_call(id) {
                Some(Slot::Call { open, .. }) => *open = false,
                _ => {
                    return Err(ProviderError::malformed(format!(
                        "the provider ended tool call {id:?}, which is not open (never started, or already ended)"
                    )));
                }
            },
            StreamEvent::Usage(usage) => self.usage.overlay(usage),
            StreamEvent::Stop { reason } => {
                match reason {
                    StopReason::End | StopReason::ToolUse => {
                        if let Some(open) = self.first_open_call() {
                            return Err(ProviderError::malformed(format!(
                                "the provider stopped the stream ({}) while tool call {open:?} was still open; a call must end before the stream stops",
                                stop_name(*reason)
                            )));
                        }
                        if *reason == StopReason::ToolUse && self.ids.is_empty() {
                            return Err(ProviderError::malformed(
                                "the provider stopped for tool use but made no tool call",
                            ));
                        }
                    }
                    StopReason::Limit | StopReason::Abort => {}
                    StopReason::Error => {
                        self.terminal = Some((
                            StopReason::Error,
                            Some(ProviderError::malformed(
                                "the provider ended the stream with stop reason error but sent no error detail",
                            )),
                        ));
                        return Ok(());
                    }
                }
                self.terminal = Some((*reason, None));
            }
            StreamEvent::Error(error) => {
                self.terminal = Some((StopReason::Error, Some(error.clone())));
            }
        }
        Ok(())
    }

    /// Ends the stream and returns the assembled turn.
    ///
    /// # Errors
    ///
    /// A [`ProviderErrorKind::MalformedStream`] error when no terminal event
    /// arrived (an incomplete stream).
    pub fn finish(mut self) -> Result<AssistantTurn, ProviderError> {
        let Some((stop, error)) = self.terminal.take() else {
            let open = self
                .first_open_call()
                .map(|id| format!(" (tool call {id:?} was still open)"))
                .unwrap_or_default();
            return Err(ProviderError::malformed(format!(
                "the response stream ended without a stop or error event{open}; the response is incomplete and was not used — retry the request"
            )));
        };
        Ok(self.assemble(stop, error))
    }

    /// Ends an aborted stream: keeps what arrived, drops open tool calls.
    pub fn abort(self) -> AssistantTurn {
        self.assemble(StopReason::Abort, None)
    }

    /// Ends a stream that failed after some of its content arrived (the
    /// connection was cut, the body bound was reached, the stream ended
    /// without a terminal event): keeps what arrived, drops open tool
    /// calls, and marks the turn incomplete with stop reason error and
    /// `error`. Usage stays what the stream reported (unknown fields stay
    /// unknown).
    pub fn fail(self, error: ProviderError) -> AssistantTurn {
        self.assemble(StopReason::Error, Some(error))
    }

    /// Whether any content (text, thinking or a tool call) has begun.
    pub fn has_content(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Whether the stream has stated any usage (a field the provider
    /// reported), so a failure must keep it rather than drop it.
    pub fn has_usage(&self) -> bool {
        self.usage != Usage::default()
    }

    fn assemble(self, stop: StopReason, error: Option<ProviderError>) -> AssistantTurn {
        let mut content = Vec::with_capacity(self.slots.len());
        let mut cut_off = Vec::new();
        for slot in self.slots {
            match slot {
                Slot::Text(text) => content.push(ContentBlock::Text { text }),
                Slot::Thinking(text, signature) => content.push(ContentBlock::Thinking {
                    text,
                    signature: signature.map(OpaqueBytes),
                }),
                Slot::Call {
                    id,
                    name,
                    arguments,
                    open: true,
                } => cut_off.push(CutOffCall {
                    id,
                    name,
                    argument_bytes: arguments.len(),
                }),
                Slot::Call {
                    id,
                    name,
                    arguments,
                    open: false,
                } => {
                    let arguments = if arguments.trim().is_empty() {
                        serde_json::Value::Object(serde_json::Map::new())
                    } else {
                        serde_json::from_str(&arguments)
                            .unwrap_or(serde_json::Value::String(arguments))
                    };
                    content.push(ContentBlock::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                    }));
                }
            }
        }
        AssistantTurn {
            content,
            usage: self.usage,
            stop,
            error,
            cut_off,
        }
    }
}

/// A stop reason's stable name.
pub fn stop_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::End => "end",
        StopReason::ToolUse => "tool_use",
        StopReason::Limit => "limit",
        StopReason::Abort => "abort",
        StopReason::Error => "error",
    }
}

/// Whether `error` is a malformed-stream error.
pub fn is_malformed(error: &ProviderError) -> bool {
    error.kind == ProviderErrorKind::MalformedStream
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> StreamEvent {
        StreamEvent::TextDelta { text: t.into() }
    }
    fn start(id: &str, name: &str) -> StreamEvent {
        StreamEvent::ToolCallStart {
            id: id.into(),
            name: name.into(),
        }
    }
    fn delta(id: &str, a: &str) -> StreamEvent {
        StreamEvent::ToolCallDelta {
            id: id.into(),
            arguments: a.into(),
        }
    }
    fn end(id: &str) -> StreamEvent {
        StreamEvent::ToolCallEnd { id: id.into() }
    }
    fn stop(reason: StopReason) -> StreamEvent {
        StreamEvent::Stop { reason }
    }

    fn run(events: &[StreamEvent]) -> Result<AssistantTurn, ProviderError> {
        let mut v = Validator::new();
        for e in events {
            v.push(e)?;
        }
        v.finish()
    }

    #[test]
    fn assembles_text_thinking_and_calls_in_order() {
        let turn = run(&[
            StreamEvent::ThinkingDelta {
                text: "hm".into(),
                signature: Some(OpaqueBytes(vec![1])),
            },
            StreamEvent::ThinkingDelta {
                text: "m".into(),
                signature: Some(OpaqueBytes(vec![2])),
            },
            text("a"),
            text("b"),
            start("1", "ls"),
            start("2", "read"),
            delta("2", "{\"path\":"),
            delta("1", "{}"),
            delta("2", "\"x\"}"),
            end("2"),
            end("1"),
            StreamEvent::Usage(Usage {
                input: Some(3),
                ..Usage::default()
            }),
            stop(StopReason::ToolUse),
        ])
        .unwrap();
        assert_eq!(
            turn.content,
            vec![
                ContentBlock::Thinking {
                    text: "hmm".into(),
                    signature: Some(OpaqueBytes(vec![1, 2]))
                },
                ContentBlock::Text { text: "ab".into() },
                ContentBlock::ToolCall(ToolCall {
                    id: "1".into(),
                    name: "ls".into(),
                    arguments: serde_json::json!({})
                }),
                ContentBlock::ToolCall(ToolCall {
                    id: "2".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "x"})
                }),
            ]
        );
        assert_eq!(turn.usage.input, Some(3));
        assert_eq!(turn.usage.output, None);
        assert_eq!(turn.stop, StopReason::ToolUse);
    }

    #[test]
    fn a_second_terminal_event_is_malformed() {
        let mut v = Validator::new();
        v.push(&stop(StopReason::End)).unwrap();
        let err = v.push(&stop(StopReason::End)).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::MalformedStream);
        assert!(err.message.contains("after the stream's terminal event"));
        let err = v.push(&text("late")).unwrap_err();
        assert!(err.message.contains("text_delta"));
    }

    #[test]
    fn a_stream_without_terminal_event_fails() {
        let err = run(&[text("partial"), start("1", "ls")]).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::MalformedStream);
        assert!(err.message.contains("without a stop or error event"));
        assert!(err.message.contains("\"1\""));
    }

    #[test]
    fn call_rules_are_enforced() {
        assert!(
            run(&[delta("9", "{}")])
                .unwrap_err()
                .message
                .contains("not open")
        );
        assert!(run(&[end("9")]).unwrap_err().message.contains("not open"));
        assert!(
            run(&[start("1", "ls"), end("1"), start("1", "ls")])
                .unwrap_err()
                .message
                .contains("twice")
        );
        assert!(
            run(&[start("1", "ls"), stop(StopReason::End)])
                .unwrap_err()
                .message
                .contains("still open")
        );
        assert!(
            run(&[text("x"), stop(StopReason::ToolUse)])
                .unwrap_err()
                .message
                .contains("made no tool call")
        );
        assert!(
            run(&[start("", "ls")])
                .unwrap_err()
                .message
                .contains("empty id")
        );
    }

    #[test]
    fn limit_cuts_off_open_calls() {
        let turn = run(&[
            text("writing"),
            start("1", "write"),
            delta("1", "{\"content\":\"aaa"),
            stop(StopReason::Limit),
        ])
        .unwrap();
        assert_eq!(turn.stop, StopReason::Limit);
        assert_eq!(turn.tool_calls().count(), 0);
        assert_eq!(
            turn.cut_off,
            vec![CutOffCall {
                id: "1".into(),
                name: "write".into(),
                argument_bytes: 15
            }]
        );
    }

    #[test]
    fn error_event_is_terminal_and_typed() {
        let turn = run(&[
            text("x"),
            StreamEvent::Error(ProviderError::new(ProviderErrorKind::Overloaded, "busy")),
        ])
        .unwrap();
        assert_eq!(turn.stop, StopReason::Error);
        assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Overloaded);
    }

    #[test]
    fn unparsable_arguments_are_kept_as_text() {
        let turn = run(&[
            start("1", "ls"),
            delta("1", "{nope"),
            end("1"),
            stop(StopReason::ToolUse),
        ])
        .unwrap();
        let call = turn.tool_calls().next().unwrap();
        assert_eq!(call.arguments, serde_json::Value::String("{nope".into()));
    }
}
