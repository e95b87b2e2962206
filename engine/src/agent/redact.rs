//! Redaction at the runtime's boundary: registered secrets are replaced by
//! their placeholders `{secret:NAME}` before anything leaves the runtime.
//!
//! The runtime holds one [`Redactor`] ([`AgentConfig::redactor`], built by
//! the embedding from every credential it can see; empty by default). It
//! is live: a value the embedding registers while the runtime runs (a
//! plugin's handoff) is redacted from then on. The runtime applies it
//! where text enters the conversation or leaves the loop:
//!
//! - at spawn, to the system prompt and a resumed history;
//! - to every message before it is recorded and joins the history
//!   (delivered input, assistant responses — before their tool calls are
//!   planned, so an effect's recorded input and the call that runs carry
//!   placeholders — and tool results), so every provider request, the
//!   session file and `get_messages` carry placeholders only;
//! - to a tool's result right after it ran, before its completion is
//!   recorded, and to its streamed output through a [`StreamRedactor`]
//!   (a value split across chunks is replaced whole);
//! - just before a tool runs, the other way: the placeholders in its
//!   arguments that the redactor's policy authorizes for that tool become
//!   values in the copy the tool gets (`Redactor::substitute_json`; none
//!   by default), while the recorded arguments keep the placeholders;
//! - to compaction instructions and summaries;
//! - to user input before an extension screens it;
//! - to every event on its way to the frontend and the extension hooks,
//!   from the loop and from the control thread (provider error messages,
//!   queued input and state included), and to error records.
//!
//! Text without a registered value is left as it is, without a copy.
//!
//! [`AgentConfig::redactor`]: super::AgentConfig::redactor
//! [`StreamRedactor`]: smith_secrets::StreamRedactor

use std::borrow::Cow;

use serde_json::Value;
use smith_secrets::Redactor;

use crate::protocol::{ErrorInfo, Event};
use crate::provider::{ContentBlock, Message};
use crate::tools::ToolResult;

/// Replaces registered values in `text`, in place.
pub(crate) fn text(redactor: &Redactor, text: &mut String) {
    if redactor.is_empty() {
        return;
    }
    if let Cow::Owned(redacted) = redactor.redact_str(text) {
        *text = redacted;
    }
}

/// Replaces registered values in every string of `value`, in place.
pub(crate) fn json(redactor: &Redactor, value: &mut Value) {
    if !redactor.is_empty() {
        redactor.redact_json(value);
    }
}

/// Replaces registered values in every text of `message`: user text,
/// assistant text, thinking and tool call arguments, tool results.
pub(crate) fn message(redactor: &Redactor, message: &mut Message) {
    if redactor.is_empty() {
        return;
    }
    match message {
        Message::User { text: t, .. } => text(redactor, t),
        Message::Assistant { content, .. } => {
            for block in content {
                match block {
                    ContentBlock::Text { text: t } | ContentBlock::Thinking { text: t, .. } => {
                        text(redactor, t);
                    }
                    ContentBlock::ToolCall(call) => json(redactor, &mut call.arguments),
                }
            }
        }
        Message::ToolResult { content, .. } => text(redactor, content),
    }
}

/// Replaces registered values in a tool's result (content and details).
pub(crate) fn tool_result(redactor: &Redactor, result: &mut ToolResult) {
    text(redactor, &mut result.content);
    json(redactor, &mut result.details);
}

/// Replaces registered values in an error report.
pub(crate) fn error_info(redactor: &Redactor, info: &mut ErrorInfo) {
    text(redactor, &mut info.message);
}

/// Replaces registered values in every text an event carries.
pub(crate) fn event(redactor: &Redactor, event: &mut Event) {
    if redactor.is_empty() {
        return;
    }
    match event {
        Event::AgentEnd { text: t, .. }
        | Event::MessageDelta { text: t }
        | Event::ThinkingDelta { text: t }
        | Event::ToolExecutionUpdate { output: t, .. } => text(redactor, t),
        Event::MessageEnd { message: m, .. } => message(redactor, m),
        Event::ToolCall { call } => json(redactor, &mut call.arguments),
        Event::ToolExecutionEnd {
            content, details, ..
        } => {
            text(redactor, content);
            json(redactor, details);
        }
        Event::QueueChanged { items } | Event::State { queue: items, .. } => {
            for item in items {
                text(redactor, &mut item.text);
            }
        }
        Event::CompactionEnd { summary, error, .. } => {
            if let Some(summary) = summary {
                text(redactor, summary);
            }
            if let Some(info) = error {
                error_info(redactor, info);
            }
        }
        Event::Messages { messages } => {
            for m in messages {
                message(redactor, m);
            }
        }
        Event::Error(info) | Event::ProviderRetry { error: info, .. } => error_info(redactor, info),
        Event::AgentStart
        | Event::Settled
        | Event::TurnStart { .. }
        | Event::TurnEnd { .. }
        | Event::MessageStart { .. }
        | Event::ToolExecutionStart { .. }
        | Event::CompactionStart { .. }
        | Event::ModelChanged { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{StopReason, ToolCall};
    use smith_secrets::{FingerprintKey, Registry, Source};

    const KEY: &str = "sk-test-0123456789abcdef";

    fn redactor() -> std::sync::Arc<Redactor> {
        let mut registry = Registry::new(FingerprintKey::from_bytes([3; 32]));
        registry
            .register("openai.api_key", KEY, Source::Env("OPENAI_API_KEY".into()))
            .unwrap_or_else(|e| panic!("{e}"));
        registry.redactor()
    }

    #[test]
    fn every_text_of_a_message_is_redacted() {
        let r = redactor();
        let mut m = Message::Assistant {
            content: vec![
                ContentBlock::Text {
                    text: format!("key {KEY}"),
                },
                ContentBlock::Thinking {
                    text: KEY.into(),
                    signature: None,
                },
                ContentBlock::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({ "command": format!("echo {KEY}") }),
                }),
            ],
            stop: StopReason::ToolUse,
        };
        message(&r, &mut m);
        let shown = serde_json::to_string(&m).unwrap_or_default();
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("echo {secret:openai.api_key}"), "{shown}");
    }

    #[test]
    fn error_events_are_redacted_including_json_escaped_echoes() {
        let r = redactor();
        let mut e = Event::Error(ErrorInfo {
            kind: "auth".into(),
            message: format!(
                r#"HTTP 401: {{"error":{{"message":"Incorrect API key provided: \"{KEY}\""}}}}"#
            ),
            mutation: None,
            effect_id: None,
            retry_after_ms: None,
        });
        event(&r, &mut e);
        let Event::Error(info) = e else {
            panic!("still an error event")
        };
        assert!(!info.message.contains(KEY), "{}", info.message);
        assert!(info.message.contains("{secret:openai.api_key}"));
    }

    #[test]
    fn an_empty_redactor_leaves_text_alone() {
        let r = Redactor::empty();
        let mut t = KEY.to_owned();
        text(&r, &mut t);
        assert_eq!(t, KEY);
    }
}
