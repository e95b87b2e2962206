//! The mapping of engine events onto the interface ([`apply`]): transcript
//! entries, the status line and notices, for a live runtime and for a
//! replay.

use smith_engine::protocol::{
    CompactionOutcome, CompactionReason, Event, Role, StopCause, ToolStatus,
};
use smith_engine::provider::Message;
use smith_tui::App;

/// One line describing a tool call's arguments: the `subject` argument the
/// tool's presentation names, else the first of command, path, pattern and
/// url.
pub(super) fn summarize(arguments: &serde_json::Value, subject: Option<&str>) -> String {
    let text = match arguments {
        serde_json::Value::Object(map) => subject
            .iter()
            .chain(&["command", "path", "pattern", "url"])
            .find_map(|k| map.get(*k).and_then(serde_json::Value::as_str))
            .map_or_else(|| arguments.to_string(), str::to_owned),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 {
        let mut cut: String = flat.chars().take(79).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// How the interface names a compaction's reason.
fn compaction_reason(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Manual => "asked for",
        CompactionReason::Threshold => "the context is nearly full",
        CompactionReason::Overflow => "the provider found the context too large",
    }
}

/// Applies one agent event to the interface.
pub(super) fn apply(
    app: &mut App,
    event: Event,
    summaries: &mut Vec<(String, String)>,
    window: Option<u64>,
) {
    let mut status = app.status.clone();
    // A retry's countdown ends with whatever comes next (the retried
    // exchange's events, another retry, the end of the run).
    status.retry_at = None;
    match event {
        Event::AgentStart => status.busy = true,
        Event::MessageEnd {
            message: Message::User { media, .. },
            usage: None,
        } if !media.is_empty() => {
            app.message_done();
            // What a mention attached: one line each, never the bytes.
            for part in &media {
                app.notice(&part.summary());
            }
        }
        Event::MessageEnd { usage: None, .. } => app.message_done(),
        Event::AgentEnd { stop, cost, .. } => {
            app.message_done();
            status.busy = false;
            if let Some(c) = cost {
                status.cost = Some(status.cost.unwrap_or(0.0) + c);
            }
            match stop {
                StopCause::Aborted => app.notice("interrupted"),
                StopCause::Budget => app.notice("stopped: budget reached"),
                StopCause::TurnLimit => app.notice("stopped: turn limit reached"),
                StopCause::Done | StopCause::Error => {}
            }
        }
        Event::MessageDelta { text } => app.assistant_delta(&text),
        Event::ThinkingDelta { text } => app.thinking_delta(&text),
        Event::MessageStart {
            role: Role::Assistant,
        } => app.assistant_delta(""),
        Event::MessageEnd { usage: Some(u), .. } => {
            app.message_done();
            let used = u.input.unwrap_or(0)
                + u.cache_read.unwrap_or(0)
                + u.cache_write.unwrap_or(0)
                + u.output.unwrap_or(0);
            status.context = window.map(|w| (used, w));
        }
        Event::ToolCall { call } => {
            let subject = app
                .product()
                .tool(&call.name)
                .and_then(|t| t.subject.as_deref());
            summaries.push((call.id.clone(), summarize(&call.arguments, subject)));
        }
        Event::ToolExecutionStart { call_id, name, .. } => {
            let summary = summaries
                .iter()
                .position(|(id, _)| *id == call_id)
                .map(|i| summaries.swap_remove(i).1)
                .unwrap_or_default();
            app.tool_start(&call_id, &name, &summary);
        }
        Event::ToolExecutionEnd {
            call_id,
            status: tool_status,
            content,
            ..
        } => app.tool_end(&call_id, tool_status == ToolStatus::Ok, &content),
        Event::CompactionStart {
            reason,
            tokens_before,
        } => {
            status.activity = "compacting".to_owned();
            // Busy, so that Esc interrupts it.
            status.busy = true;
            app.notice(&format!(
                "compacting ({}) · context about {tokens_before} tokens",
                compaction_reason(reason)
            ));
        }
        Event::CompactionEnd {
            reason,
            outcome,
            tokens_before,
            tokens_after,
            summarized_messages,
            kept_messages,
            error,
            detail,
            ..
        } => {
            status.activity.clear();
            // A compaction inside a run leaves the run busy.
            if reason == CompactionReason::Manual {
                status.busy = false;
            }
            match outcome {
                CompactionOutcome::Compacted => app.notice(&format!(
                    "compacted: {} messages summarized, {} kept · context about {tokens_before} → {} tokens{}",
                    summarized_messages.unwrap_or(0),
                    kept_messages.unwrap_or(0),
                    tokens_after.map_or_else(|| "?".to_owned(), |t| t.to_string()),
                    // What the cheap stage pruned and the size in bytes,
                    // when the runtime reported them.
                    detail.map_or_else(String::new, |d| format!(
                        " ({} → {} bytes; pruned {} reasoning block(s), {} long tool result(s), {} superseded read(s))",
                        d.bytes_before,
                        d.bytes_after,
                        d.thinking_dropped,
                        d.results_clipped,
                        d.reads_superseded
                    )),
                )),
                CompactionOutcome::Skipped => app.notice(&format!(
                    "not compacted: {}",
                    error.map_or_else(|| "there is nothing to summarize yet".to_owned(), |e| e.message)
                )),
                CompactionOutcome::Aborted => app.notice("compaction interrupted; the context is unchanged"),
                CompactionOutcome::Failed => app.error(&format!(
                    "compaction failed, the context is unchanged: {}",
                    error.map_or_else(|| "no reason was given".to_owned(), |e| e.message)
                )),
            }
        }
        Event::QueueChanged { items } => status.queue = items.len(),
        Event::ModelChanged { model, .. } => status.model = model,
        Event::ProviderRetry { wait_ms, error } => {
            let when = if wait_ms == 0 {
                "sending again now".to_owned()
            } else {
                format!("sending again in {} s", wait_ms.div_ceil(1000))
            };
            app.notice(&format!("{}: {} · {when}", error.kind, error.message));
            status.retry_at =
                Some(std::time::Instant::now() + std::time::Duration::from_millis(wait_ms));
        }
        Event::Error(info) => {
            smith_diag::log::report(&info.to_diagnostic());
            app.error(&format!("{}: {}", info.kind, info.message));
        }
        _ => {}
    }
    app.set_status(status);
}

/// Applies one replayed event: as a live one, plus the user messages a
/// live session shows from the editor.
pub(super) fn apply_replayed(
    app: &mut App,
    event: Event,
    summaries: &mut Vec<(String, String)>,
    window: Option<u64>,
) {
    if let Event::MessageEnd {
        message: Message::User { text, .. },
        ..
    } = &event
    {
        // Its media follow as one line each (`apply`).
        app.user_message(text);
    }
    apply(app, event, summaries, window);
}
