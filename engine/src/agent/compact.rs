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
//!    retried; also for `request_too_large` and `plugin_memory`, a request
//!    too large to send or to build). Estimates count
//!    [`BYTES_PER_TOKEN`] bytes per token. A request whose estimate is
//!    over the whole window is never sent (`Runner::over_window`).
//! 2. **Cheap stage first.** The messages before the kept suffix (rule 3)
//!    are pruned without asking the model ([`prune`]): stale reasoning
//!    dropped, superseded reads replaced by a note, other long tool
//!    results cut to their beginning and end. When that alone brings a
//!    threshold compaction under the threshold, it is the whole compaction:
//!    the context changes, nothing is recorded (the durable history is
//!    unchanged, and a resumed session prunes it again the same way).
//!    Otherwise the summary is written from the pruned messages.
//! 3. **Where to cut.** The kept suffix starts at a user or assistant
//!    message, never at a tool result, so a call is never separated from its
//!    result. It is the longest suffix within
//!    [`CompactionSettings::keep_recent_tokens`] (at least the last message
//!    is kept when it alone exceeds that); a manual compaction keeps at most
//!    the latest user turn. At least one message is summarized, otherwise
//!    the outcome is `skipped`.
//! 4. **Never larger.** A compaction never grows the context. The
//!    context with the summary (the estimate before, less the summarized
//!    messages', plus the summary message's) must be smaller than what the
//!    cheap stage alone leaves. No summary is asked for when even the
//!    shortest useful one ([`MIN_SUMMARY_BYTES`]) could not be; a summary
//!    that comes back no smaller is not used (its usage is still
//!    reported). Either way nothing is recorded and an error of kind
//!    `no_gain` says what the sizes were: the outcome is `compacted` with
//!    no summary when the cheap stage saves anything (it is applied, as in
//!    rule 2), `skipped` with the context unchanged otherwise. A threshold
//!    compaction is then not tried again in the run; an overflow one that
//!    could not gain ends the run with the provider's overflow error.
//! 5. **The summary** comes from tool-free provider requests: the
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
//! 6. **The record.** A [`CompactionRecord`] is recorded durably through the
//!    session sink (the store writes a `compaction` entry whose pairing id
//!    is the first kept entry's id); only then does the context change to
//!    the summary message ([`summary_message`]) followed by the kept
//!    messages. An abort before the record leaves context and session
//!    exactly as they were.
//! 7. **Lifecycle.** `compaction_start` and exactly one `compaction_end`
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
        media: Vec::new(),
    }
}

/// The summary a context's first message carries, if it is one.
pub fn summary_of(message: &Message) -> Option<&str> {
    match message {
        Message::User { text, .. } => text.strip_prefix(SUMMARY_PREFIX),
        _ => None,
    }
}

/// Bytes of JSON per token in smith's estimates, where no tokenizer is at
/// hand (smith carries none): conservative, so that an estimate is rarely
/// below what a model's tokenizer counts. English prose runs about four
/// bytes per token and source code about three and a half; JSON escapes
/// and markup only add bytes. Three bytes per token over-counts most
/// conversations by a quarter or more, which keeps requests inside the
/// window at the price of compacting a little early.
pub const BYTES_PER_TOKEN: u64 = 3;

/// A message's size estimate in tokens ([`BYTES_PER_TOKEN`] bytes of its
/// JSON projection per token, rounded up). Measured without allocating.
pub fn estimate_tokens(message: &Message) -> u64 {
    (json_len(message) as u64).div_ceil(BYTES_PER_TOKEN)
}

/// `bytes` as an estimate in tokens ([`BYTES_PER_TOKEN`]).
pub fn tokens_of_bytes(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The length of a message's JSON projection in bytes, measured without
/// allocating. A media part counts as its token estimate
/// ([`smith_contract::Media::estimated_tokens`]) times
/// [`BYTES_PER_TOKEN`], not as the length of its bytes: a model sees an
/// image as about (width × height) / 750 tokens, whatever its file size.
pub fn message_bytes(message: &Message) -> u64 {
    let media = message.media();
    let all = json_len(message) as u64;
    if media.is_empty() {
        return all;
    }
    let raw: u64 = media.iter().map(|m| json_len(m) as u64).sum();
    let estimate: u64 = media
        .iter()
        .map(|m| m.estimated_tokens() * BYTES_PER_TOKEN)
        .sum();
    all.saturating_sub(raw) + estimate
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
            Message::User { text, .. } => {
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
        messages: vec![Message::User {
            text,
            media: Vec::new(),
        }],
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
    /// Why nothing changed, or (kind `no_gain` on a `compacted` outcome)
    /// why only the cheap stage was applied.
    pub error: Option<ErrorInfo>,
    /// A summary would not have made the context smaller (it was written
    /// and not used, or not asked for): compacting again before the
    /// conversation grows gains nothing.
    pub no_gain: bool,
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

/// The fewest bytes of summary text counted as useful when deciding,
/// before asking, whether a summary could make the context smaller: a
/// summary that says the user's goals, the decisions, the files and the
/// work left (what [`SUMMARY_SYSTEM`] asks for) is hardly ever shorter.
/// When the messages a summary would replace are no larger than a summary
/// message this long, no summary request is sent.
pub const MIN_SUMMARY_BYTES: usize = 256;

/// Why a summary is not used (kind `no_gain`): the conversation is about
/// `before` tokens; `after` says what it would be with the summary;
/// `saved` is what the cheap stage alone saves (it is applied when not 0,
/// and the message says so); `done` what became of the summary.
fn no_gain(before: u64, saved: u64, after: String, done: &str) -> ErrorInfo {
    let message = if saved == 0 {
        format!(
            "nothing to gain — the conversation is about {before} tokens and {after}, so {done} and nothing was changed; compact again when the conversation has grown, or with instructions asking for a shorter summary"
        )
    } else {
        format!(
            "nothing to gain from a summary — the conversation is about {before} tokens and {after}, no fewer than the {} the cheap stage alone leaves, so {done}; only the cheap stage was applied (it saved about {saved} tokens)",
            before.saturating_sub(saved)
        )
    };
    failure("no_gain", message)
}

/// The most summary requests' worth of conversation (each up to the
/// summary budget, about a context window) one compaction summarizes: a
/// conversation far larger than the window (an imported or long-resumed
/// session) would otherwise cost hundreds of requests, each nearly a window
/// of input. Older messages are left out of the summary, which says so.
pub const MAX_SUMMARIZED_WINDOWS: u64 = 8;

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
    let max = usize::try_from(budget.saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX);
    match message {
        Message::User { text, media } => Message::User {
            text: clip_text(text, max),
            media: media.clone(),
        },
        Message::ToolResult {
            call_id,
            name,
            content,
            is_error,
            media,
        } => Message::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            content: clip_text(content, max),
            is_error: *is_error,
            media: media.clone(),
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

/// An old tool result longer than this many bytes is cut to its beginning
/// and end by pruning (compaction's first, cheap stage).
pub const PRUNED_RESULT_BYTES: usize = 4096;

/// What compaction's cheap stage changed (see [`prune`]) and the size of
/// the context's messages (bytes of their JSON projection) before and
/// after the whole compaction.
pub use crate::protocol::CompactionDetail;

/// The path a `read` call reads, and whether it reads the whole file (no
/// `offset` or `limit`).
fn read_of(call: &crate::provider::ToolCall) -> Option<(&str, bool)> {
    if call.name != "read" {
        return None;
    }
    let path = call.arguments.get("path")?.as_str()?;
    let whole = call.arguments.get("offset").is_none() && call.arguments.get("limit").is_none();
    Some((path, whole))
}

/// Compaction's cheap stage: `history` with the messages before
/// `protect_from` reduced without asking the model — reasoning of finished
/// turns dropped (before the latest user message), `read` results
/// superseded by a later read of the same file (a whole-file read, or one
/// with the same arguments) replaced by a note, and other tool results over
/// [`PRUNED_RESULT_BYTES`] cut to their beginning and end with a note of
/// what was left out. Messages are never removed or reordered, so every
/// call keeps its result. Deterministic: the same history gives the same
/// result, so a resumed session prunes as the live one did. Returns the
/// pruned messages, what changed, and the tokens saved (the difference of
/// the estimates).
pub fn prune(history: &[Message], protect_from: usize) -> (Vec<Message>, CompactionDetail, u64) {
    use std::collections::HashMap;
    let protect_from = protect_from.min(history.len());
    let last_user = history
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .unwrap_or(0);
    let stale = protect_from.min(last_user);
    // Every read call: its message index, arguments and whether it reads
    // the whole file, by path, in order.
    let mut reads: HashMap<&str, Vec<(usize, &serde_json::Value, bool)>> = HashMap::new();
    for (i, message) in history.iter().enumerate() {
        if let Message::Assistant { content, .. } = message {
            for block in content {
                if let ContentBlock::ToolCall(call) = block
                    && let Some((path, whole)) = read_of(call)
                {
                    reads
                        .entry(path)
                        .or_default()
                        .push((i, &call.arguments, whole));
                }
            }
        }
    }
    // Whether the read `call` (made in message `at`) is superseded by a
    // later read of the same file: a whole-file read, or the same
    // arguments. The path when it is.
    let superseded = |at: usize, call: &crate::provider::ToolCall| -> Option<String> {
        let (path, _) = read_of(call)?;
        reads
            .get(path)?
            .iter()
            .rev()
            .take_while(|(later, _, _)| *later > at)
            .any(|(_, arguments, whole)| *whole || *arguments == &call.arguments)
            .then(|| path.to_owned())
    };
    // The calls of the newest assistant message, by id: a result answers
    // the nearest call with its id before it (ids may repeat across turns).
    let mut open: HashMap<&str, (usize, &crate::provider::ToolCall)> = HashMap::new();
    let mut detail = CompactionDetail::default();
    let mut saved = 0u64;
    let mut out = Vec::with_capacity(history.len());
    for (i, message) in history.iter().enumerate() {
        let bytes = message_bytes(message);
        detail.bytes_before += bytes;
        if let Message::Assistant { content, .. } = message {
            for block in content {
                if let ContentBlock::ToolCall(call) = block {
                    open.insert(call.id.as_str(), (i, call));
                }
            }
        }
        let read_superseded = match message {
            Message::ToolResult {
                call_id,
                content,
                is_error: false,
                ..
            } if i < protect_from && content.len() > 200 => open
                .get(call_id.as_str())
                .and_then(|(at, call)| superseded(*at, call)),
            _ => None,
        };
        let pruned = match message {
            Message::Assistant { content, stop }
                if i < stale
                    && content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Thinking { .. })) =>
            {
                let kept: Vec<ContentBlock> = content
                    .iter()
                    .filter(|b| !matches!(b, ContentBlock::Thinking { .. }))
                    .cloned()
                    .collect();
                detail.thinking_dropped += content.len() - kept.len();
                let kept = if kept.is_empty() {
                    vec![ContentBlock::Text {
                        text: "[smith] (reasoning left out when the conversation was compacted)"
                            .to_owned(),
                    }]
                } else {
                    kept
                };
                Message::Assistant {
                    content: kept,
                    stop: *stop,
                }
            }
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
                media,
            } if i < protect_from && !media.is_empty() => {
                // Older images and documents leave the context, each
                // replaced by a line naming it: they are what makes a
                // request too large to send, and the model can read the
                // file again.
                detail.results_clipped += 1;
                let mut content = content.clone();
                for part in media {
                    content.push_str(&format!(
                        "\n[smith] {} was left out when the conversation was compacted; read the file again to see it.",
                        part.summary()
                    ));
                }
                Message::ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content,
                    is_error: *is_error,
                    media: Vec::new(),
                }
            }
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
                media,
            } if i < protect_from
                && (read_superseded.is_some() || content.len() > PRUNED_RESULT_BYTES) =>
            {
                let content = if let Some(path) = &read_superseded {
                    detail.reads_superseded += 1;
                    format!(
                        "[smith] This read of {path} ({} bytes) was superseded by a later read of the same file; it was left out when the conversation was compacted.",
                        content.len()
                    )
                } else {
                    detail.results_clipped += 1;
                    clip_result(content, PRUNED_RESULT_BYTES)
                };
                Message::ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content,
                    is_error: *is_error,
                    media: media.clone(),
                }
            }
            other => {
                // Unchanged: measured once.
                detail.bytes_after += bytes;
                out.push(other.clone());
                continue;
            }
        };
        let after = message_bytes(&pruned);
        detail.bytes_after += after;
        saved += bytes
            .div_ceil(BYTES_PER_TOKEN)
            .saturating_sub(after.div_ceil(BYTES_PER_TOKEN));
        out.push(pruned);
    }
    (out, detail, saved)
}

/// An old tool result cut to about `max` bytes: its beginning and end, and
/// between them how much was left out (on character boundaries).
fn clip_result(text: &str, max: usize) -> String {
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
        "{}\n[smith] ... {} bytes of this tool result were left out when the conversation was compacted ...\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

impl Runner {
    /// The context window compaction works against.
    pub(super) fn context_window(&self) -> Option<u64> {
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
                tokens_of_bytes(fixed) + estimate_all(&self.history)
            }
        }
    }

    /// Why the next request must not be sent: its context estimate is over
    /// the whole context window, so the model cannot take it (compaction,
    /// when it ran, did not bring it under). `None` when it fits or no
    /// window is known.
    pub(super) fn over_window(&self) -> Option<ErrorInfo> {
        let window = self.context_window()?;
        let estimate = self.context_estimate();
        (estimate > window).then(|| {
            failure(
                "context_overflow",
                format!(
                    "the next request's context is about {estimate} tokens (estimated at {BYTES_PER_TOKEN} bytes per token), more than the model's {window}-token context window, so nothing was sent; {}",
                    if self.config.compaction.auto {
                        "compaction did not bring it under the window (see its report above): run /compact with instructions asking for a shorter summary, or start a new session"
                    } else {
                        "automatic compaction is off: run /compact, or start a new session"
                    }
                ),
            )
        })
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
        let prompt = tokens_of_bytes(SUMMARY_SYSTEM.len() + INSTRUCTIONS_MARKER.len() + 256);
        Some(
            self.config
                .compaction
                .threshold(window)
                .saturating_sub(prompt)
                .max(256),
        )
    }

    /// The summary of `source` (the pruned messages before the cut), staged
    /// so that no request exceeds [`Runner::summary_budget`]: when the messages fit, one request; else
    /// a summary of each part that fits, then summaries of those summaries
    /// until one request holds them all (the custom instructions go with
    /// the last request only). Returns the summary and the summed usage.
    fn staged_summary(
        &mut self,
        source: &[Message],
        instructions: Option<&str>,
        cancel: &CancelToken,
    ) -> Result<(String, Option<Usage>), SummaryStop> {
        let budget = self.summary_budget();
        let mut usage: Option<Usage> = None;
        let mut level: Option<Vec<Message>> = None;
        for _ in 0..MAX_SUMMARY_LEVELS {
            let messages: &[Message] = level.as_deref().unwrap_or(source);
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
                    let messages: &[Message] = level.as_deref().unwrap_or(source);
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
                        media: Vec::new(),
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
            detail: None,
        });
        CompactionResult {
            outcome,
            usage,
            error,
            no_gain: false,
        }
    }

    /// Bounds a summary's cost: of `source` (the pruned messages before the
    /// cut) only the newest [`MAX_SUMMARIZED_WINDOWS`] summary requests'
    /// worth is summarized (an earlier compaction's summary at its front is
    /// always kept); the older messages are removed from `source`. Returns
    /// how many messages and bytes were left out, if any. Without a known
    /// window nothing is left out.
    fn leave_out_oldest(&self, source: &mut Vec<Message>) -> Option<(usize, u64)> {
        let most = self
            .summary_budget()?
            .saturating_mul(MAX_SUMMARIZED_WINDOWS);
        let first = usize::from(source.first().and_then(summary_of).is_some());
        let mut total = 0u64;
        let mut start = source.len();
        while start > first {
            let tokens = estimate_tokens(&source[start - 1]);
            if total.saturating_add(tokens) > most {
                break;
            }
            total += tokens;
            start -= 1;
        }
        if start == first {
            return None;
        }
        let bytes = source[first..start].iter().map(message_bytes).sum();
        source.drain(first..start);
        Some((start - first, bytes))
    }

    /// Ends a compaction with its cheap stage alone: the context becomes
    /// `pruned`, which saved `saved` tokens. Nothing is recorded (the
    /// durable history is unchanged; a resumed session prunes it again, the
    /// same way, when it crosses the threshold). `usage` is what a summary
    /// request used and `note` why its summary was not used (kind
    /// `no_gain`), when one was asked for or skipped as useless.
    #[allow(clippy::too_many_arguments)]
    fn end_pruned(
        &mut self,
        reason: CompactionReason,
        tokens_before: u64,
        saved: u64,
        pruned: Vec<Message>,
        detail: CompactionDetail,
        cancel: &CancelToken,
        usage: Option<Usage>,
        note: Option<ErrorInfo>,
    ) -> CompactionResult {
        if cancel.is_cancelled() {
            return self.end_compaction(
                reason,
                tokens_before,
                CompactionOutcome::Aborted,
                usage,
                None,
            );
        }
        let tokens_after = tokens_before.saturating_sub(saved);
        let kept_messages = pruned.len();
        // The provider's newest count covered the first `len` messages:
        // it shrinks by what pruning saved among them, so the estimate
        // after is `tokens_after`, as announced.
        self.last_usage = self.last_usage.map(|(len, tokens)| {
            let len = len.min(pruned.len());
            let within =
                estimate_all(&self.history[..len]).saturating_sub(estimate_all(&pruned[..len]));
            (len, tokens.saturating_sub(within))
        });
        *lock(&self.shared.messages) = pruned.clone();
        self.history = pruned;
        self.emit(Event::CompactionEnd {
            reason,
            outcome: CompactionOutcome::Compacted,
            tokens_before,
            tokens_after: Some(tokens_after),
            summary: None,
            summarized_messages: Some(0),
            kept_messages: Some(kept_messages),
            usage,
            error: note.clone(),
            detail: Some(detail),
        });
        CompactionResult {
            outcome: CompactionOutcome::Compacted,
            usage,
            no_gain: note.is_some(),
            error: note,
        }
    }

    /// Ends a compaction whose summary would not make the context smaller
    /// (`why`, kind `no_gain`; `usage` is what its request used, if one
    /// was sent): the cheap stage alone is applied when it saves anything,
    /// otherwise nothing changes (outcome `skipped`). Nothing is recorded.
    fn end_no_gain(
        &mut self,
        reason: CompactionReason,
        tokens_before: u64,
        protect_from: usize,
        cancel: &CancelToken,
        usage: Option<Usage>,
        why: ErrorInfo,
    ) -> CompactionResult {
        // The cheap stage again (deterministic: the same as the summary
        // was written from), kept whole this time.
        let (pruned, detail, saved) = prune(&self.history, protect_from);
        if saved > 0 {
            return self.end_pruned(
                reason,
                tokens_before,
                saved,
                pruned,
                detail,
                cancel,
                usage,
                Some(why),
            );
        }
        let mut result = self.end_compaction(
            reason,
            tokens_before,
            CompactionOutcome::Skipped,
            usage,
            Some(why),
        );
        result.no_gain = true;
        result
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
        let keep_recent = self.config.compaction.keep_recent_tokens;
        // The cheap stage first: what comes before the recent messages,
        // pruned (see [`prune`]). It asks the model nothing; when it alone
        // brings a threshold compaction under the threshold, it is the
        // whole compaction.
        let protect_from = find_cut(&self.history, keep_recent, false).unwrap_or(0);
        let (pruned, mut detail, saved) = prune(&self.history, protect_from);
        if reason == CompactionReason::Threshold
            && saved > 0
            && let Some(window) = self.context_window()
            && tokens_before.saturating_sub(saved) <= self.config.compaction.threshold(window)
        {
            return self.end_pruned(
                reason,
                tokens_before,
                saved,
                pruned,
                detail,
                cancel,
                None,
                None,
            );
        }
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
        // What the summary would replace: the messages before the cut. The
        // context with the summary is `tokens_before` less their estimate
        // plus the summary message's; the cheap stage alone leaves
        // `tokens_before - saved`. A summary is used only when it leaves
        // less than that, and not asked for when even the shortest useful
        // one could not (no paid request for nothing).
        let replaced = estimate_all(&self.history[..cut]);
        let pruned_only = tokens_before.saturating_sub(saved);
        let with_summary = |summary: u64| {
            tokens_before
                .saturating_sub(replaced)
                .saturating_add(summary)
        };
        let shortest = tokens_of_bytes(json_len(&summary_message("")) + MIN_SUMMARY_BYTES);
        if with_summary(shortest) >= pruned_only {
            let why = no_gain(
                tokens_before,
                saved,
                format!(
                    "even the shortest useful summary (about {shortest} tokens, for the {cut} older message(s) it would replace) would leave about {} tokens",
                    with_summary(shortest)
                ),
                "no summary was asked for",
            );
            return self.end_no_gain(reason, tokens_before, protect_from, cancel, None, why);
        }
        // The summary is of the pruned messages; the kept ones are the
        // recent ones, which pruning leaves as they are.
        let mut source = pruned;
        source.truncate(cut);
        // Messages a bounded resume never decoded are left out as well.
        let left_out = match (
            self.leave_out_oldest(&mut source),
            self.config.history_omitted,
        ) {
            (Some((n, b)), Some((m, c))) => Some((n + m, b + c)),
            (here, before) => here.or(before),
        };
        detail.messages_left_out = left_out.map_or(0, |(n, _)| n);
        let summarized = self.staged_summary(&source, instructions, cancel);
        drop(source);
        let (summary, usage) = match summarized {
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
        let summary = match left_out {
            Some((messages, bytes)) => format!(
                "[smith] The {messages} oldest messages ({bytes} bytes) were left out of this summary: the conversation before it was more than {MAX_SUMMARIZED_WINDOWS} context windows long.\n\n{summary}"
            ),
            None => summary,
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
        // The same base as before: the summary replaces what it summarizes.
        let message = summary_message(&summary);
        let tokens_after = with_summary(estimate_tokens(&message));
        if tokens_after >= pruned_only {
            let why = no_gain(
                tokens_before,
                saved,
                format!("with its summary it would be about {tokens_after} tokens"),
                "the summary was not used",
            );
            return self.end_no_gain(reason, tokens_before, protect_from, cancel, usage, why);
        }
        let kept = &self.history[cut..];
        let mut context = Vec::with_capacity(kept.len() + 1);
        context.push(message);
        context.extend_from_slice(kept);
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
        detail.bytes_after = context.iter().map(message_bytes).sum();
        *lock(&self.shared.messages) = context.clone();
        self.history = context;
        self.last_usage = None;
        // What a bounded resume left out is now behind the summary.
        self.config.history_omitted = None;
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
            detail: Some(detail),
        });
        CompactionResult {
            outcome: CompactionOutcome::Compacted,
            usage,
            error: None,
            no_gain: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn user(text: &str) -> Message {
        Message::user(text)
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
            media: Vec::new(),
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
            // 3,000 bytes: 1,000 tokens and a little more.
            result("a", 3000),
            answer("done"),
            user("two"),
            call("b"),
            result("b", 3000),
            answer("done again"),
        ];
        for keep in [0, 10, 500, 1010, 1200, 5000] {
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
        // Up to the first turn's answer fits in 1200.
        assert_eq!(find_cut(&history, 1200, false), Some(3));
    }

    #[test]
    fn pruning_leaves_out_older_media_with_a_line_naming_each_and_counts_them_as_estimated() {
        let png = include_bytes!("../../../tests/data/media-4x2.png");
        let with_image = |id: &str| Message::ToolResult {
            call_id: id.into(),
            name: "read".into(),
            content: "shot.png: PNG image, 4×2, 74 B, attached.".into(),
            is_error: false,
            media: vec![
                crate::provider::Media::new(crate::provider::MediaType::Png, png.to_vec())
                    .named("shot.png"),
            ],
        };
        let history = vec![
            user("look"),
            call("a"),
            with_image("a"),
            answer("seen"),
            user("again"),
            call("b"),
            with_image("b"),
        ];
        // An image counts as its token estimate (85 at least), not its
        // base64: the message is far smaller than 3 bytes per base64 digit.
        let bytes = message_bytes(&history[2]);
        let text_only = message_bytes(&result("a", 0));
        assert!(bytes >= text_only + 85 * BYTES_PER_TOKEN, "{bytes}");
        let (pruned, detail, _) = prune(&history, 4);
        let Message::ToolResult { content, media, .. } = &pruned[2] else {
            panic!("{:?}", pruned[2]);
        };
        assert!(media.is_empty());
        assert_eq!(
            content,
            "shot.png: PNG image, 4×2, 74 B, attached.\n[smith] [image shot.png · PNG 4×2 · 74 B] was left out when the conversation was compacted; read the file again to see it."
        );
        assert_eq!(detail.results_clipped, 1);
        // The recent part keeps its image.
        assert_eq!(pruned[6], history[6]);
    }

    #[test]
    fn pruning_pairs_results_with_the_nearest_call_even_when_ids_repeat() {
        let read = |path: &str, arguments: serde_json::Value| Message::Assistant {
            content: vec![
                ContentBlock::Thinking {
                    text: "hmm".into(),
                    signature: None,
                },
                ContentBlock::ToolCall(ToolCall {
                    id: "call_0".into(),
                    name: "read".into(),
                    arguments: {
                        let mut a = arguments;
                        a["path"] = path.into();
                        a
                    },
                }),
            ],
            stop: StopReason::ToolUse,
        };
        let history = vec![
            user("one"),
            read("a.rs", serde_json::json!({})),
            result("call_0", 300),
            // The same id again, another file: not superseded.
            read("b.rs", serde_json::json!({})),
            result("call_0", 300),
            // Part of a.rs: does not supersede the whole read above, and is
            // superseded by nothing.
            read("a.rs", serde_json::json!({"offset": 10, "limit": 5})),
            result("call_0", 300),
            read("a.rs", serde_json::json!({})),
            result("call_0", 300),
            user("two"),
            answer("done"),
        ];
        let (pruned, detail, saved) = prune(&history, 9);
        assert_eq!(pruned.len(), history.len());
        let content = |m: &Message| match m {
            Message::ToolResult { content, .. } => content.clone(),
            other => panic!("{other:?}"),
        };
        // The first read of a.rs is superseded by the last (whole) one; the
        // partial read is too (a whole-file read follows it); b.rs is not.
        assert!(content(&pruned[2]).starts_with("[smith] This read of a.rs (300 bytes)"));
        assert_eq!(content(&pruned[4]), content(&history[4]));
        assert!(content(&pruned[6]).starts_with("[smith] This read of a.rs"));
        // The newest read is the one kept.
        assert_eq!(content(&pruned[8]), content(&history[8]));
        assert_eq!(
            (
                detail.thinking_dropped,
                detail.results_clipped,
                detail.reads_superseded
            ),
            (4, 0, 2)
        );
        assert!(saved > 0);
        assert_eq!(
            detail.bytes_after,
            pruned.iter().map(message_bytes).sum::<u64>()
        );
        assert_eq!(
            detail.bytes_before,
            history.iter().map(message_bytes).sum::<u64>()
        );
        // Nothing from `protect_from` on changes.
        assert_eq!(&pruned[9..], &history[9..]);
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
        let Message::User { text, .. } = &request.messages[0] else {
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
