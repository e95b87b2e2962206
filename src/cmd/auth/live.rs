//! `smith auth check PROVIDER --live`: one small streaming request through
//! the provider exactly as a run sends it (selection, catalog, credential,
//! vendor plugin, HTTP engine, retries), offering one trivial tool. It
//! reports how long the answer took, which model answered, and whether
//! streaming and tool use worked. The credential is never printed: requests
//! carry its handle, and every message is redacted.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use smith_diag::Diagnostic;
use smith_engine::provider::transport::{BodyOutcome, StreamEnd, Transport, drive_with};
use smith_engine::provider::{
    ContentBlock, Exchange, Message, ProviderErrorKind, Request, StopReason, StreamEvent, ToolSpec,
};
use smith_engine::tools::CancelToken;

/// The tool offered to the model.
const TOOL: &str = "ping";

/// The most response bytes kept to find the model the server names.
const HEAD_BYTES: usize = 64 << 10;

/// Why the check did not succeed.
pub enum Failed {
    /// The provider could not be set up (nothing was sent).
    Setup(anyhow::Error),
    /// The request failed.
    Request(Diagnostic),
}

/// A transport that counts the body chunks, notes when the first arrived
/// and keeps the first bytes of the body.
struct Watch<'a> {
    inner: &'a dyn Transport,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    chunks: usize,
    first_chunk: Option<Instant>,
    head: Vec<u8>,
}

impl Transport for Watch<'_> {
    fn perform(
        &self,
        exchange: Exchange,
        cancel: &CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Seen::default();
        }
        self.inner.perform(exchange, cancel, &mut |chunk| {
            if let Ok(mut seen) = self.seen.lock() {
                seen.chunks += 1;
                seen.first_chunk.get_or_insert_with(Instant::now);
                let room = HEAD_BYTES.saturating_sub(seen.head.len());
                seen.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            on_chunk(chunk)
        })
    }
}

/// The model id the server names in its stream: `model` of a Chat
/// Completions chunk, `response.model` (Responses), `message.model`
/// (Anthropic) or `modelVersion` (Gemini), whichever comes first.
fn served_model(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .find_map(|v| {
            [
                &v["model"],
                &v["response"]["model"],
                &v["message"]["model"],
                &v["modelVersion"],
            ]
            .into_iter()
            .find_map(|m| m.as_str().filter(|m| !m.is_empty()).map(str::to_owned))
        })
}

fn millis(d: Duration) -> u128 {
    d.as_millis()
}

/// Runs the check: the report on success.
///
/// # Errors
///
/// [`Failed::Setup`] when no live provider can be set up for `provider`
/// (nothing was sent), [`Failed::Request`] when the request failed.
pub fn check(
    provider: &str,
    model: Option<&str>,
    base_url: Option<&str>,
) -> Result<String, Failed> {
    let mut chosen =
        smith_host::choose_live(Some(provider), model, base_url).map_err(Failed::Setup)?;
    eprintln!("{}", chosen.note);
    let vendor = chosen.vendor.id();
    let credential = chosen.provider.credential_origin();
    let request = Request {
        model: chosen.provider.model_name().to_owned(),
        system: Some(
            "This is a connectivity check. Call the ping tool once with the word \"pong\"."
                .to_owned(),
        ),
        messages: vec![Message::User {
            text: "Call the ping tool with the word pong.".to_owned(),
            media: Vec::new(),
        }],
        tools: vec![ToolSpec {
            name: TOOL.to_owned(),
            description: "Answers pong. Call it once with the word \"pong\".".to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
            }),
        }],
        max_output_tokens: Some(1024),
    };
    let watch = Watch {
        inner: &chosen.transport,
        seen: Mutex::new(Seen::default()),
    };
    let mut events = 0usize;
    let mut retries = Vec::new();
    let started = Instant::now();
    let mut attempt_started = started;
    let end = drive_with(
        &mut chosen.provider,
        &watch,
        &request,
        &CancelToken::new(),
        &mut |event| {
            if !matches!(event, StreamEvent::Stop { .. } | StreamEvent::Error(_)) {
                events += 1;
            }
        },
        &mut |wait, error| {
            retries.push(format!(
                "{} ({}), retried after {} ms",
                error.kind.as_str(),
                redact(&error.message),
                millis(wait)
            ));
            attempt_started = Instant::now() + wait;
        },
    );
    let elapsed = started.elapsed();
    let seen = watch
        .seen
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let target = chosen
        .provider
        .current_target()
        .unwrap_or_else(|| chosen.provider.model_name().to_owned());
    let turn = match end {
        StreamEnd::Turn(turn) if turn.stop != StopReason::Error => turn,
        StreamEnd::Turn(turn) => {
            let error = turn.error.unwrap_or_else(|| {
                smith_engine::provider::ProviderError::malformed(
                    "the response failed without detail",
                )
            });
            return Err(Failed::Request(failure(
                vendor,
                &target,
                elapsed,
                error.kind,
                &error.message,
                credential.as_deref(),
            )));
        }
        StreamEnd::Failed(error) => {
            return Err(Failed::Request(failure(
                vendor,
                &target,
                elapsed,
                error.kind,
                &error.message,
                credential.as_deref(),
            )));
        }
        StreamEnd::Aborted(_) => {
            return Err(Failed::Request(
                Diagnostic::error(
                    "auth.live-failed",
                    format!("the live check of provider `{vendor}` was interrupted"),
                    "the request was cancelled before the response ended",
                    format!("run `smith auth check {vendor} --live` again"),
                )
                .with_value(target),
            ));
        }
    };
    let first = seen
        .first_chunk
        .map(|t| millis(t.saturating_duration_since(attempt_started)));
    let mut lines = vec![format!(
        "ok: {vendor} answered in {} ms{}",
        millis(elapsed),
        first.map_or_else(String::new, |ms| format!(" (first bytes after {ms} ms)"))
    )];
    let served = served_model(&seen.head);
    lines.push(format!(
        "  model: {target}{}",
        served.map_or_else(
            || " (the server did not name its model)".to_owned(),
            |m| format!(" (the server says {m})")
        )
    ));
    lines.push(format!(
        "  credential: {}",
        credential.map_or_else(
            || "none sent (the provider takes none)".to_owned(),
            |origin| format!("from {origin} (accepted)")
        )
    ));
    lines.push(format!(
        "  streaming: {}",
        if seen.chunks > 1 {
            format!("yes, {events} events in {} body chunks", seen.chunks)
        } else {
            format!(
                "not shown: the whole response ({events} events) arrived in one body chunk, so smith cannot tell whether it was streamed"
            )
        }
    ));
    let called = turn.tool_calls().find(|c| c.name == TOOL);
    lines.push(format!(
        "  tools: {}",
        match called {
            Some(call) => format!(
                "yes, the model called `{TOOL}` with {}",
                redact(&call.arguments.to_string())
            ),
            None => {
                let said = turn
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<String>();
                format!(
                    "not confirmed: the request offering `{TOOL}` was accepted, but the model answered without calling it ({} characters of text, stop {})",
                    said.chars().count(),
                    stop_name(turn.stop)
                )
            }
        }
    ));
    lines.push(format!(
        "  usage: {} input, {} output tokens",
        known(turn.usage.input),
        known(turn.usage.output)
    ));
    for retry in retries {
        lines.push(format!("  retried: {retry}"));
    }
    Ok(lines.join("\n"))
}

fn known(n: Option<u64>) -> String {
    n.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

fn stop_name(stop: StopReason) -> &'static str {
    match stop {
        StopReason::End => "end",
        StopReason::ToolUse => "tool_use",
        StopReason::Limit => "limit",
        StopReason::Abort => "abort",
        StopReason::Error => "error",
    }
}

fn redact(text: &str) -> String {
    smith_diag::secrets::redact(text).into_owned()
}

/// The diagnostic for a failed request: what failed, the provider's
/// words, and what to do for that kind of failure.
fn failure(
    vendor: &str,
    target: &str,
    elapsed: Duration,
    kind: ProviderErrorKind,
    message: &str,
    credential: Option<&str>,
) -> Diagnostic {
    let next = match kind {
        ProviderErrorKind::Auth => format!(
            "the provider refused the credential{}: store a valid key with `smith auth set {vendor}` (or fix the variable it came from), then run the check again",
            credential.map_or_else(String::new, |c| format!(" from {c}"))
        ),
        ProviderErrorKind::ModelUnavailable => format!(
            "the model `{target}` is not available with this credential: name another with --model, e.g. one from `smith models --refresh --provider {vendor}`"
        ),
        ProviderErrorKind::RateLimit => {
            "the provider is limiting requests: wait and run the check again, or check the account's limits".to_owned()
        }
        ProviderErrorKind::Transport | ProviderErrorKind::Overloaded => format!(
            "check the network and the base URL (--base-url), then run `smith auth check {vendor} --live` again"
        ),
        ProviderErrorKind::InvalidRequest
        | ProviderErrorKind::ContextOverflow
        | ProviderErrorKind::RequestTooLarge
        | ProviderErrorKind::PluginMemory
        | ProviderErrorKind::MalformedStream => format!(
            "the provider did not accept or complete the request as smith sent it; if it refuses tools, the model cannot run smith's tools (pick another with --model); otherwise run `smith auth check {vendor} --live` again"
        ),
    };
    Diagnostic::error(
        "auth.live-failed",
        format!(
            "the live check of provider `{vendor}` (model {target}) failed after {} ms",
            millis(elapsed)
        ),
        format!("{}: {}", kind.as_str(), redact(message)),
        next,
    )
    .with_value(target)
}

#[cfg(test)]
mod tests {
    use super::served_model;

    #[test]
    fn the_served_model_is_found_in_each_dialect() {
        let chat = b"data: {\"id\":\"c\",\"model\":\"qwen2.5-coder:7b\",\"choices\":[]}\n\n";
        assert_eq!(served_model(chat).as_deref(), Some("qwen2.5-coder:7b"));
        let responses = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5.1-2025-11-13\"}}\n\n";
        assert_eq!(
            served_model(responses).as_deref(),
            Some("gpt-5.1-2025-11-13")
        );
        let anthropic = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\"}}\n\n";
        assert_eq!(served_model(anthropic).as_deref(), Some("claude-x"));
        let gemini = b"data: {\"candidates\":[],\"modelVersion\":\"gemini-2.5-flash\"}\r\n\r\n";
        assert_eq!(served_model(gemini).as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(served_model(b"data: {\"choices\":[]}\n\n"), None);
        assert_eq!(served_model(b"not a stream"), None);
    }
}
