//! Compaction: the older part of the conversation replaced, in the context
//! sent to providers, by a summary the model writes — without deleting any
//! durable history.
//!
//! Rules:
//!
//! 1. **When.** On request (`compact`, reason `manual`, only while idle);
//!    before a request of a run whose context estimate exceeds the model's
//!    context window less [`CompactionSettings::reserve_tokens`] (reason
//!    `threshold`); and once per run after the provider rejects a request as
//!    too large (`context_overflow`, reason `overflow`; the turn is then
//!    retried).
//! 2. **Where to cut.** The kept suffix starts at a user or assistant
//!    message, never at a tool result, so a call is never separated from its
//!    result. It is the longest suffix within
//!    [`CompactionSettings::keep_recent_tokens`] (at least the last message
//!    is kept when it alone exceeds that); a manual compaction keeps at most
//!    the latest user turn. At least one message is summarized, otherwise
//!    the outcome is `skipped`.
//! 3. **The summary** comes from tool-free provider requests: the
//!    [`SUMMARY_SYSTEM`] prompt and one user message holding the summarized
//!    messages as text (see [`summary_request`]), plus any custom
//!    instructions. No request carries more than the context window's
//!    threshold allows: when the summarized messages do not fit, each part
//!    that fits ([`summary_parts`]; a single message too large alone is
//!    clipped in the middle, [`clipped`]) is summarized first, then those
//!    summaries, level by level, until one request holds them all; its
//!    answer is the summary, and the usage recorded is the sum of every
//!    request's. Without a known window the summary is one request. A
//!    summary that was cut off by the output limit, is empty, or failed (at
//!    any stage) is never recorded.
//! 4. **The record.** A [`CompactionRecord`] is recorded durably through the
//!    session sink (the store writes a `compaction` entry whose pairing id
//!    is the first kept entry's id); only then does the context change to
//!    the summary message ([`summary_message`]) followed by the kept
//!    messages. An abort before the record leaves context and session
//!    exactly as they were.
//! 5. **Lifecycle.** `compaction_start` and exactly one `compaction_end`
//!    with the outcome; the runtime is busy throughout, so `settled` comes
//!    after.

use serde::{Deserialize, Serialize};

use super::lock;
use super::run::{Runner, journal_error_info, provider_error_info};
use crate::journal::SessionEvent;
use crate::protocol::{CompactionOutcome, CompactionReason, ErrorInfo, Event};
use crate::provider::transport::{StreamEnd, drive};
use crate::provider::{ContentBlock, Message, ProviderError, Request, StopReason, Usage};
use crate::tools::CancelToken;

/// How compaction behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionSettings {
    /// Compact automatically at the threshold and on context overflow.
    pub auto: bool,
    /// Tokens kept free below the context window: automatic compaction
    /// starts when the context estimate exceeds `window - reserve_tokens`.
    pub reserve_tokens: u64,
    /// The most tokens of recent messages kept verbatim after the summary.
    pub keep_recent_tokens: u64,
    /// The context window in tokens; `None` takes the model's from the
    /// provider (no window known: no threshold compaction).
    pub context_window: Option<u64>,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            auto: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
            context_window: None,
        }
    }
}

impl CompactionSettings {
    /// The context estimate above which a request is preceded by a
    /// compaction, for a model with `window` tokens of context.
    pub fn threshold(&self, window: u64) -> u64 {
        window.saturating_sub(self.reserve_tokens)
    }
}

/// What a compaction records in the session (the JSON projection is the
/// `compaction` entry's content; see `docs/session-format.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The summary that replaces the older messages.
    pub summary: String,
    /// Why the compaction ran (`manual`, `threshold`, `overflow`).
    pub reason: String,
    /// The custom instructions of a manual compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Messages the summary replaced.
    pub summarized_messages: usize,
    /// Messages kept after the summary.
    pub kept_messages: usize,
    /// User and assistant messages among the kept ones (tool results are
    /// not counted): a writer finds the first kept entry by counting these
    /// back from the end of the branch; 0 when nothing was kept.
    pub kept_heads: usize,
    /// The context estimate before, in tokens.
    pub tokens_before: u64,
    /// The context estimate after, in tokens.
    pub tokens_after: u64,
    /// The summary request's usage (unknown fields stay null).
    pub usage: Usage,
}

pub use smith_contract::summary::{INSTRUCTIONS_MARKER, SUMMARY_SYSTEM, is_summary_request};

/// The text before the summary in the context's first message.
pub const SUMMARY_PREFIX: &str =
    "[smith] The conversation before this point was compacted. Summary:\n\n";

/// The message that stands for the summarized part of the conversation.
pub fn summary_message(summary: &str) -> Message {
    Message::User {
        text: format!("{SUMMARY_PREFIX}{summary}"),
    }
}

/// The summary a context's first message carries, if it is one.
pub fn summary_of(message: &Message) -> Option<&str> {
    match message {
        Message::User { text } => text.strip_prefix(SUMMARY_PREFIX),
        _ => None,
    }
}

/// A message's size estimate in tokens (four bytes of its JSON projection
/// per token, rounded up). Measured without allocating.
pub fn estimate_tokens(message: &Message) -> u64 {
    (json_len(message) as u64).div_ceil(4)
}

/// Counts the bytes written to it.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length of `value`'s JSON projection, measured without allocating.
fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut count = ByteCount(0);
    // Projections of smith's own types cannot fail; a failure counts what
    // was written before it.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The estimate of several messages.
pub fn estimate_all(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_tokens).sum()
}

/// Where the kept suffix of `history` starts (see the module rules), or
/// `None` when nothing can be summarized.
pub fn find_cut(history: &[Message], keep_recent_tokens: u64, manual: bool) -> Option<usize> {
    let is_head = |m: &Message| !matches!(m, Message::ToolResult { .. });
    // Candidate cuts: heads after the first message, newest first.
    let mut suffix = 0u64;
    let mut best: Option<usize> = None;
    let mut last_cut: Option<usize> = None;
    for index in (1..history.len()).rev() {
        suffix += estimate_tokens(&history[index]);
        if !is_head(&history[index]) {
            continue;
        }
        if last_cut.is_none() {
            last_cut = Some(index);
        }
        if suffix <= keep_recent_tokens {
            best = Some(index);
        } else {
            break;
        }
    }
    let mut cut = best.or(last_cut)?;
    if manual {
        // Keep at most the latest user turn.
        let latest_user = history
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .filter(|&i| i > 0);
        if let Some(latest_user) = latest_user {
            cut = cut.max(latest_user);
        }
    }
    Some(cut)
}

/// The messages to summarize as plain text, one block per message.
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::User { text } => {
                out.push_str("[user]: ");
                out.push_str(text);
            }
            Message::Assistant { content, .. } => {
                out.push_str("[assistant]: ");
                let mut first = true;
                for block in content {
                    let piece = match block {
                        ContentBlock::Text { text } => text.clone(),
                        ContentBlock::ToolCall(call) => {
                            format!("(calls {} {})", call.name, call.arguments)
                        }
                        // Reasoning is worthless to a summary and large.
                        _ => continue,
                    };
                    if !first {
                        out.push(' ');
                    }
                    first = false;
                    out.push_str(&piece);
                }
            }
            Message::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                out.push_str(if *is_error {
                    "[tool error] "
                } else {
                    "[tool result] "
                });
                out.push_str(name);
                out.push_str(": ");
                out.push_str(content);
            }
        }
        out.push_str("\n\n");
    }
    out
}

/// The tool-free request that asks `model` for a summary of `messages`.
pub fn summary_request(
    model: &str,
    messages: &[Message],
    instructions: Option<&str>,
    max_output_tokens: Option<u32>,
) -> Request {
    let mut text = String::from("Summarize this conversation:\n\n<conversation>\n");
    text.push_str(&serialize_conversation(messages));
    text.push_str("</conversation>\n");
    if let Some(instructions) = instructions.filter(|i| !i.trim().is_empty()) {
        text.push_str(INSTRUCTIONS_MARKER);
        text.push_str(instructions);
        text.push('\n');
    }
    Request {
        model: model.to_owned(),
        system: Some(SUMMARY_SYSTEM.to_owned()),
        messages: vec![Message::User { text }],
        tools: Vec::new(),
        max_output_tokens,
    }
}

/// The stable name of a reason, as recorded.
pub fn reason_name(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Manual => "manual",
        CompactionReason::Threshold => "threshold",
        CompactionReason::Overflow => "overflow",
    }
}

/// The result of one compaction attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionResult {
    /// How it ended.
    pub outcome: CompactionOutcome,
    /// The summary request's usage, when one was answered.
    pub usage: Option<Usage>,
    /// Why nothing changed.
    pub error: Option<ErrorInfo>,
}

/// The context size a response's usage reports: every known input, cache
/// and output count; `None` when the input count is unknown.
pub fn context_tokens(usage: &Usage) -> Option<u64> {
    let input = usage.input?;
    Some(
        input
            .saturating_add(usage.cache_read.unwrap_or(0))
            .saturating_add(usage.cache_write.unwrap_or(0))
            .saturating_add(usage.output.unwrap_or(0)),
    )
}

/// The context window of `model` as `provider` describes it.
pub(super) fn model_window(provider: &dyn crate::provider::Provider, model: &str) -> Option<u64> {
    provider
        .describe()
        .models
        .iter()
        .find(|m| m.id == model)
        .and_then(|m| m.context_window)
}

/// A compaction's error of `kind` (see [`ErrorInfo::kind`]).
fn failure(kind: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        kind: kind.to_owned(),
        message: message.into(),
        mutation: None,
        effect_id: None,
        retry_after_ms: None,
    }
}

/// Why a summary was not produced.
enum SummaryStop {
    /// Aborted; the usage of what was answered so far.
    Aborted(Option<Usage>),
    /// Failed (request failed, cut off, empty or invalid); the usage of
    /// what was answered so far and why.
    Failed(Option<Usage>, Box<ErrorInfo>),
}

/// The most levels of summaries of summaries: each level's summaries are far
/// shorter than the parts they summarize, so a real conversation needs two
/// or three; a model whose summaries do not shrink ends here with an error.
const MAX_SUMMARY_LEVELS: usize = 6;

/// Consecutive parts of `messages` whose estimates fit `budget` tokens each
/// (a message larger than the budget alone makes a part, clipped by
/// [`clipped`] when it is sent).
pub fn summary_parts(messages: &[Message], budget: u64) -> Vec<std::ops::Range<usize>> {
    let mut parts = Vec::new();
    let (mut start, mut size) = (0, 0u64);
    for (i, message) in messages.iter().enumerate() {
        let tokens = estimate_tokens(message);
        if i > start && size.saturating_add(tokens) > budget {
            parts.push(start..i);
            (start, size) = (i, 0);
        }
        size = size.saturating_add(tokens);
    }
    if start < messages.len() {
        parts.push(start..messages.len());
    }
    parts
}

/// `text` cut to about `max` bytes: its beginning and end, with the number of
/// bytes left out between them (on character boundaries).
fn clip_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let half = max / 2;
    let mut head = half.min(text.len());
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half.min(text.len());
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[... {} bytes left out of this message for the summary ...]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// `message` with its text cut so that its estimate fits about `budget`
/// tokens (a tool result or user text clipped in the middle; an assistant
/// message's text blocks each clipped to their share).
pub fn clipped(message: &Message, budget: u64) -> Message {
    let max = usize::try_from(budget.saturating_mul(4)).unwrap_or(usize::MAX);
    match message {
        Message::User { text } => Message::User {
            text: clip_text(text, max),
        },
        Message::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } => Message::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            content: clip_text(content, max),
            is_error: *is_error,
        },
        Message::Assistant { content, stop } => {
            let share = max / content.len().max(1);
            Message::Assistant {
                content: content
                    .iter()
                    .map(|block| match block {
                        ContentBlock::Text { text } => ContentBlock::Text {
                            text: clip_text(text, share),
                        },
                        other => other.clone(),
                    })
                    .collect(),
                stop: *stop,
            }
        }
    }
}

impl Runner {
    /// The context window compaction works against.
    fn context_window(&self) -> Option<u64> {
        self.config.compaction.context_window.or(self.model_window)
    }

    /// The estimate of the next request's context, in tokens: the newest
    /// provider count plus estimates of the messages after it, or an
    /// estimate of the whole request (system prompt, tool definitions,
    /// messages) when no count is known. Allocates nothing.
    pub(super) fn context_estimate(&self) -> u64 {
        match self.last_usage {
            Some((len, tokens)) if len <= self.history.len() => {
                tokens.saturating_add(estimate_all(&self.history[len..]))
            }
            _ => {
                let tools: usize = self
                    .tools
                    .definitions()
                    .map(|d| d.name.len() + d.description.len() + json_len(&d.parameters))
                    .sum();
                let fixed = self.config.system.as_ref().map_or(0, String::len) + tools;
                (fixed as u64).div_ceil(4) + estimate_all(&self.history)
            }
        }
    }

    /// Whether the next request should be preceded by a compaction.
    pub(super) fn over_threshold(&self) -> bool {
        let settings = self.config.compaction;
        if !settings.auto {
            return false;
        }
        match self.context_window() {
            Some(window) => self.context_estimate() > settings.threshold(window),
            None => false,
        }
    }

    /// The most tokens of conversation one summary request may carry: the
    /// compaction threshold of the context window (which leaves the reserve
    /// for the answer) less the summary prompt; `None` when no window is
    /// known (the summary is then one request, as large as it has to be).
    fn summary_budget(&self) -> Option<u64> {
        let window = self.context_window()?;
        let prompt = (SUMMARY_SYSTEM.len() + INSTRUCTIONS_MARKER.len() + 256) as u64 / 4;
        Some(
            self.config
                .compaction
                .threshold(window)
                .saturating_sub(prompt)
                .max(256),
        )
    }

    /// The summary of `history[..cut]`, staged so that no request exceeds
    /// [`Runner::summary_budget`]: when the messages fit, one request; else
    /// a summary of each part that fits, then summaries of those summaries
    /// until one request holds them all (the custom instructions go with
    /// the last request only). Returns the summary and the summed usage.
    fn staged_summary(
        &mut self,
        cut: usize,
        instructions: Option<&str>,
        cancel: &CancelToken,
    ) -> Result<(String, Option<Usage>), SummaryStop> {
        let budget = self.summary_budget();
        let mut usage: Option<Usage> = None;
        let mut level: Option<Vec<Message>> = None;
        for _ in 0..MAX_SUMMARY_LEVELS {
            let messages: &[Message] = level.as_deref().unwrap_or(&self.history[..cut]);
            let parts = match budget {
                Some(budget) => summary_parts(messages, budget),
                None => std::iter::once(0..messages.len()).collect(),
            };
            let count = parts.len();
            let last = count == 1;
            let mut summaries = Vec::with_capacity(count);
            for part in parts {
                // One part's request at a time: a huge history is never
                // held as text all at once.
                let request = {
                    let messages: &[Message] = level.as_deref().unwrap_or(&self.history[..cut]);
                    let part = &messages[part];
                    let fitted: Vec<Message>;
                    let part = match budget {
                        Some(budget) if estimate_all(part) > budget => {
                            fitted = part.iter().map(|m| clipped(m, budget)).collect();
                            &fitted[..]
                        }
                        _ => part,
                    };
                    summary_request(
                        &self.config.model,
                        part,
                        if last { instructions } else { None },
                        self.config.max_output_tokens,
                    )
                };
                let (summary, used) = self.summary_of_request(&request, cancel, usage)?;
                usage = used;
                summaries.push(summary);
            }
            if last {
                return Ok((summaries.pop().unwrap_or_default(), usage));
            }
            level = Some(
                summaries
                    .iter()
                    .enumerate()
                    .map(|(i, summary)| Message::User {
                        text: format!("[summary of part {} of {count}] {summary}", i + 1),
                    })
                    .collect(),
            );
        }
        Err(SummaryStop::Failed(
            usage,
            Box::new(failure(
                "summary_too_long",
                format!(
                    "the summaries did not get shorter than the context window allows after {MAX_SUMMARY_LEVELS} levels, so the conversation was not compacted; compact with instructions asking for a shorter summary"
                ),
            )),
        ))
    }

    /// One summary request: its answer's text (redacted) and `usage` plus
    /// this request's; a failed, cut off, empty, aborted or tool-calling
    /// answer stops the compaction.
    fn summary_of_request(
        &mut self,
        request: &Request,
        cancel: &CancelToken,
        usage: Option<Usage>,
    ) -> Result<(String, Option<Usage>), SummaryStop> {
        let sum = |more: &Usage| Some(usage.map_or(*more, |u| u.add(more)));
        if cancel.is_cancelled() {
            return Err(SummaryStop::Aborted(usage));
        }
        let end = drive(
            self.provider.as_mut(),
            self.transport.as_ref(),
            request,
            cancel,
            &mut |_| {},
        );
        let turn = match end {
            StreamEnd::Aborted(partial) => {
                return Err(SummaryStop::Aborted(sum(&partial.usage)));
            }
            StreamEnd::Failed(error) => {
                let mut info = provider_error_info(&error);
                info.message = format!(
                    "the summary request failed, so the conversation was not compacted: {}",
                    info.message
                );
                // Nothing stated what the failed request used: unknown.
                return Err(SummaryStop::Failed(sum(&Usage::default()), Box::new(info)));
            }
            StreamEnd::Turn(turn) => turn,
        };
        let usage = sum(&turn.usage);
        let mut summary = turn
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<String>()
            .trim()
            .to_owned();
        super::redact::text(&self.config.redactor, &mut summary);
        let problem = match turn.stop {
            StopReason::End if summary.is_empty() => failure(
                "summary_empty",
                "the model answered the summary request with no text, so the conversation was not compacted; try again, or give instructions",
            ),
            StopReason::End => return Ok((summary, usage)),
            StopReason::Limit => failure(
                "summary_truncated",
                "the summary was cut off by the output limit and a truncated summary is never recorded, so the conversation was not compacted; raise the output limit or compact with instructions asking for a shorter summary",
            ),
            StopReason::Abort => return Err(SummaryStop::Aborted(usage)),
            StopReason::ToolUse => failure(
                "summary_invalid",
                "the model answered the tool-free summary request with a tool call, so the conversation was not compacted; try again",
            ),
            StopReason::Error => {
                let error = turn.error.unwrap_or_else(|| {
                    ProviderError::malformed("the response failed without detail")
                });
                let mut info = provider_error_info(&error);
                info.message = format!(
                    "the summary request failed, so the conversation was not compacted: {}",
                    info.message
                );
                info
            }
        };
        Err(SummaryStop::Failed(usage, Box::new(problem)))
    }

    fn end_compaction(
        &self,
        reason: CompactionReason,
        tokens_before: u64,
        outcome: CompactionOutcome,
        usage: Option<Usage>,
        error: Option<ErrorInfo>,
    ) -> CompactionResult {
        self.emit(Event::CompactionEnd {
            reason,
            outcome,
            tokens_before,
            tokens_after: None,
            summary: None,
            summarized_messages: None,
            kept_messages: None,
            usage,
            error: error.clone(),
        });
        CompactionResult {
            outcome,
            usage,
            error,
        }
    }

    /// Runs one compaction (see the module rules): announces it, asks the
    /// provider for a summary, records it, then replaces the context.
    pub(super) fn compact(
        &mut self,
        reason: CompactionReason,
        instructions: Option<&str>,
        cancel: &CancelToken,
    ) -> CompactionResult {
        let tokens_before = self.context_estimate();
        self.emit(Event::CompactionStart {
            reason,
            tokens_before,
        });
        let replaced = match self.screen_compaction(reason) {
            Ok(replaced) => replaced,
            Err((by, why)) => {
                let error = failure(
                    "blocked",
                    format!(
                        "the extension {by} blocked this compaction, so the conversation was left as it is: {why}; disable the extension (`smith plugin disable {by}`) to compact"
                    ),
                );
                return self.end_compaction(
                    reason,
                    tokens_before,
                    CompactionOutcome::Skipped,
                    None,
                    Some(error),
                );
            }
        };
        let mut instructions = replaced.as_deref().or(instructions).map(str::to_owned);
        if let Some(text) = &mut instructions {
            super::redact::text(&self.config.redactor, text);
        }
        let instructions = instructions.as_deref();
        let Some(cut) = find_cut(
            &self.history,
            self.config.compaction.keep_recent_tokens,
            reason == CompactionReason::Manual,
        ) else {
            let error = failure(
                "nothing_to_compact",
                format!(
                    "the conversation has {} message(s), too few to summarize, so it was left as it is; compact again after more turns",
                    self.history.len()
                ),
            );
            return self.end_compaction(
                reason,
                tokens_before,
                CompactionOutcome::Skipped,
                None,
                Some(error),
            );
        };
        if cancel.is_cancelled() {
            return self.end_compaction(
                reason,
                tokens_before,
                CompactionOutcome::Aborted,
                None,
                None,
            );
        }
        let (summary, usage) = match self.staged_summary(cut, instructions, cancel) {
            Ok(done) => done,
            Err(SummaryStop::Aborted(usage)) => {
                return self.end_compaction(
                    reason,
                    tokens_before,
                    CompactionOutcome::Aborted,
                    usage,
                    None,
                );
            }
            Err(SummaryStop::Failed(usage, error)) => {
                return self.end_compaction(
                    reason,
                    tokens_before,
                    CompactionOutcome::Failed,
                    usage,
                    Some(*error),
                );
            }
        };
        // The last point an abort leaves everything unchanged.
        if cancel.is_cancelled() {
            return self.end_compaction(
                reason,
                tokens_before,
                CompactionOutcome::Aborted,
                usage,
                None,
            );
        }
        let kept = &self.history[cut..];
        let mut context = Vec::with_capacity(kept.len() + 1);
        context.push(summary_message(&summary));
        context.extend_from_slice(kept);
        // The same base as before: the summary replaces what it summarizes.
        let tokens_after = tokens_before
            .saturating_sub(estimate_all(&self.history[..cut]))
            .saturating_add(estimate_tokens(&context[0]));
        let record = CompactionRecord {
            summary: summary.clone(),
            reason: reason_name(reason).to_owned(),
            instructions: instructions.map(str::to_owned),
            summarized_messages: cut,
            kept_messages: kept.len(),
            kept_heads: kept
                .iter()
                .filter(|m| !matches!(m, Message::ToolResult { .. }))
                .count(),
            tokens_before,
            tokens_after,
            usage: usage.unwrap_or_default(),
        };
        if let Err(err) = self
            .sink
            .record(&SessionEvent::Compaction { compaction: record })
        {
            let error = journal_error_info(
                format!(
                    "the compaction could not be recorded, so the conversation was left as it is: {err}"
                ),
                None,
                None,
            );
            return self.end_compaction(
                reason,
                tokens_before,
                CompactionOutcome::Failed,
                usage,
                Some(error),
            );
        }
        let kept_messages = context.len() - 1;
        *lock(&self.shared.messages) = context.clone();
        self.history = context;
        self.last_usage = None;
        self.emit(Event::CompactionEnd {
            reason,
            outcome: CompactionOutcome::Compacted,
            tokens_before,
            tokens_after: Some(tokens_after),
            summary: Some(summary),
            summarized_messages: Some(cut),
            kept_messages: Some(kept_messages),
            usage,
            error: None,
        });
        CompactionResult {
            outcome: CompactionOutcome::Compacted,
            usage,
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn user(text: &str) -> Message {
        Message::User { text: text.into() }
    }

    fn call(id: &str) -> Message {
        Message::Assistant {
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "a"}),
            })],
            stop: StopReason::ToolUse,
        }
    }

    fn result(id: &str, size: usize) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "read".into(),
            content: "x".repeat(size),
            is_error: false,
        }
    }

    fn answer(text: &str) -> Message {
        Message::Assistant {
            content: vec![ContentBlock::Text { text: text.into() }],
            stop: StopReason::End,
        }
    }

    #[test]
    fn the_cut_never_lands_on_a_tool_result() {
        let history = vec![
            user("one"),
            call("a"),
            result("a", 4000),
            answer("done"),
            user("two"),
            call("b"),
            result("b", 4000),
            answer("done again"),
        ];
        for keep in [0, 10, 500, 1010, 1100, 5000] {
            let cut = find_cut(&history, keep, false).unwrap();
            assert!(cut >= 1);
            assert!(
                !matches!(history[cut], Message::ToolResult { .. }),
                "keep {keep} cut at {cut}"
            );
        }
        // Everything after the first message fits: keep it all but one.
        assert_eq!(find_cut(&history, 100_000, false), Some(1));
        // Only the last answer fits.
        assert_eq!(find_cut(&history, 5, false), Some(7));
        // Nothing fits: the last head is kept anyway.
        assert_eq!(find_cut(&history, 0, false), Some(7));
        // The second turn's result is 1000+ tokens: the cut is after it.
        assert_eq!(find_cut(&history, 1000, false), Some(7));
        // Up to the first turn's answer fits in 1100.
        assert_eq!(find_cut(&history, 1100, false), Some(3));
    }

    #[test]
    fn a_manual_cut_keeps_at_most_the_latest_user_turn() {
        let history = vec![user("one"), answer("a"), user("two"), answer("b")];
        assert_eq!(find_cut(&history, 100_000, false), Some(1));
        assert_eq!(find_cut(&history, 100_000, true), Some(2));
        assert_eq!(find_cut(&[user("only")], 100_000, true), None);
        assert_eq!(find_cut(&[], 100_000, true), None);
        // One turn: the latest user message is the first; keep its answer.
        assert_eq!(find_cut(&[user("q"), answer("a")], 10, true), Some(1));
    }

    #[test]
    fn the_summary_request_is_tool_free_and_carries_the_instructions() {
        let request = summary_request(
            "m",
            &[user("fix the bug"), call("a"), result("a", 3)],
            Some("focus on the parser"),
            Some(100),
        );
        assert!(is_summary_request(&request));
        let Message::User { text } = &request.messages[0] else {
            panic!("a user message");
        };
        assert!(text.contains("[user]: fix the bug"));
        assert!(text.contains("(calls read {\"path\":\"a\"})"));
        assert!(text.contains("[tool result] read: xxx"));
        assert!(text.ends_with(&format!("{INSTRUCTIONS_MARKER}focus on the parser\n")));
        assert_eq!(summary_of(&summary_message("s")), Some("s"));
        assert_eq!(summary_of(&user("s")), None);
    }
}
