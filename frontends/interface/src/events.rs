//! The mapping of engine events onto the interface ([`apply`]): transcript
//! entries, the status line and notices, for a live runtime and for a
//! replay.

use smith_engine::protocol::{
    CompactionOutcome, CompactionReason, Event, QueuedItem, Role, StopCause, ToolStatus,
};
use smith_engine::provider::Message;
use smith_tui::App;

/// What the interface keeps about a batch's tool calls between their
/// events.
#[derive(Debug, Default)]
pub(super) struct Calls {
    /// Calls announced but not started: call id and summary.
    summaries: Vec<(String, String)>,
    /// `write` calls announced, for the diff shown with the result.
    writes: Vec<Write>,
    /// The directory relative paths resolve in; `None` reads no files
    /// (tests).
    cwd: Option<std::path::PathBuf>,
    /// The runtime's queue as it last listed it: item id and whether it
    /// is a follow-up (the rest steer).
    queued: Vec<(u64, bool)>,
    /// Input the runtime took from its queue whose user message has not
    /// arrived yet, in order: `true` for a follow-up (shown when its
    /// message arrives), `false` for a steer (shown when it was sent).
    taken: std::collections::VecDeque<bool>,
}

/// The title of the panel listing the queued follow-ups.
pub(super) const QUEUED_PANEL: &str = "queued · sent when the current work ends";

/// Who owns that panel (a plugin's panels are under the plugin's name).
const QUEUED_OWNER: &str = "smith";

/// The queue mode of a follow-up (Alt+Enter).
const FOLLOW_UP: &str = "follow_up";

/// A `write` call as announced.
#[derive(Debug)]
struct Write {
    /// The call id.
    id: String,
    /// The target as the call names it.
    path: String,
    /// Its text before the call (`None`: absent, not UTF-8 or over
    /// [`MAX_DIFF_FILE`]).
    old: Option<String>,
    /// The text the call writes.
    new: String,
}

/// A `write`'s target larger than this shows no diff.
pub(super) const MAX_DIFF_FILE: u64 = 1024 * 1024;

impl Calls {
    /// Calls of the runtime working in `cwd`.
    pub(super) fn new(cwd: &std::path::Path) -> Calls {
        Calls {
            cwd: Some(cwd.to_owned()),
            ..Calls::default()
        }
    }

    /// Forgets every call and queued input (another session or replay
    /// starts).
    pub(super) fn clear(&mut self) {
        self.summaries.clear();
        self.writes.clear();
        self.queued.clear();
        self.taken.clear();
    }

    /// The runtime's queue is now `items`: the items that left it are
    /// noted in order (a follow-up's user message is shown when it
    /// arrives), and the follow-ups still waiting are listed in a panel
    /// above the editor.
    fn queue_changed(&mut self, app: &mut App, items: &[QueuedItem]) {
        for &(id, follow_up) in &self.queued {
            if !items.iter().any(|item| item.id == id) {
                self.taken.push_back(follow_up);
            }
        }
        self.queued = items
            .iter()
            .map(|item| (item.id, item.mode == FOLLOW_UP))
            .collect();
        let mut panel = String::new();
        for item in items.iter().filter(|item| item.mode == FOLLOW_UP) {
            let mut lines = item.text.lines();
            panel.push_str("› ");
            panel.push_str(lines.next().unwrap_or(""));
            if lines.next().is_some() {
                panel.push_str(" …");
            }
            panel.push('\n');
        }
        app.set_widget(QUEUED_OWNER, QUEUED_PANEL, &panel);
    }

    /// A user message arrived: whether it is a follow-up taken from the
    /// queue (shown now: nothing showed it when it was queued).
    fn delivered_follow_up(&mut self) -> bool {
        self.taken.pop_front().unwrap_or(false)
    }

    fn take_summary(&mut self, call_id: &str) -> String {
        self.summaries
            .iter()
            .position(|(id, _)| id == call_id)
            .map(|i| self.summaries.swap_remove(i).1)
            .unwrap_or_default()
    }

    /// Remembers a `write`'s target as it is before the call runs.
    fn announce_write(&mut self, call: &smith_engine::provider::ToolCall) {
        let Some(cwd) = &self.cwd else {
            return;
        };
        let arg = |name: &str| call.arguments.get(name).and_then(|v| v.as_str());
        let (Some(path), Some(new)) = (arg("path"), arg("content")) else {
            return;
        };
        if new.len() as u64 > MAX_DIFF_FILE {
            return;
        }
        let full = cwd.join(path);
        let old = std::fs::metadata(&full)
            .ok()
            .filter(|m| m.is_file() && m.len() <= MAX_DIFF_FILE)
            .and_then(|_| std::fs::read(&full).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok());
        self.writes.push(Write {
            id: call.id.clone(),
            path: path.to_owned(),
            old,
            new: new.to_owned(),
        });
    }

    /// The unified diff of a finished `write`: its target as announced
    /// against the content it wrote (every line added for a new file).
    fn write_diff(&mut self, call_id: &str) -> Option<String> {
        let at = self.writes.iter().position(|w| w.id == call_id)?;
        let Write { path, old, new, .. } = self.writes.swap_remove(at);
        let old = old.unwrap_or_default();
        let diff = similar::TextDiff::from_lines(old.as_str(), new.as_str());
        let text = diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        (!text.is_empty()).then_some(text)
    }
}

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
pub(super) fn apply(app: &mut App, event: Event, calls: &mut Calls, window: Option<u64>) {
    apply_event(app, event, calls, window, true);
}

/// [`apply`]; `live` is false for a replayed event (no file is read for
/// it: the file's state now is not the state it had then).
fn apply_event(app: &mut App, event: Event, calls: &mut Calls, window: Option<u64>, live: bool) {
    let mut status = app.status.clone();
    // A retry's countdown ends with whatever comes next (the retried
    // exchange's events, another retry, the end of the run).
    status.retry_at = None;
    match event {
        Event::AgentStart => status.busy = true,
        // A follow-up taken from the queue: its message is shown now,
        // between the answer before it and its own (a prompt or a steer
        // was shown when it was sent).
        Event::MessageEnd {
            message: Message::User { text, media, .. },
            usage: None,
        } if live && calls.delivered_follow_up() => {
            app.message_done();
            app.sent_message(&text);
            for part in &media {
                app.notice(&part.summary());
            }
        }
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
            // Input taken but never delivered (refused by a hook) has no
            // message to wait for.
            calls.taken.clear();
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
        } => app.assistant_start(),
        Event::MessageEnd { usage: Some(u), .. } => {
            app.message_done();
            let used = u.input.unwrap_or(0)
                + u.cache_read.unwrap_or(0)
                + u.cache_write.unwrap_or(0)
                + u.output.unwrap_or(0);
            status.context = window.map(|w| (used, w));
        }
        // A batch's calls are titled as the model made them, in order,
        // before any runs: each call's output then shows under its own
        // title, and a call rejected before it ran has one too.
        Event::ToolCall { call } => {
            let subject = app
                .product()
                .tool(&call.name)
                .and_then(|t| t.subject.as_deref());
            let summary = summarize(&call.arguments, subject);
            app.tool_start(&call.id, &call.name, &summary);
            if live && call.name == "write" {
                calls.announce_write(&call);
            }
            calls.summaries.push((call.id, summary));
        }
        Event::ToolExecutionStart { call_id, name, .. } => {
            let summary = calls.take_summary(&call_id);
            if !app.tool_running(&call_id) {
                app.tool_start(&call_id, &name, &summary);
            }
        }
        Event::ToolExecutionUpdate { call_id, output } => app.tool_update(&call_id, &output),
        Event::ToolExecutionEnd {
            call_id,
            name,
            status: tool_status,
            content,
            ..
        } => {
            // A call that never started (rejected, skipped, blocked,
            // aborted before it ran) has its title from `tool_call`; one
            // whose `tool_call` was not seen gets one now.
            let summary = calls.take_summary(&call_id);
            if !app.tool_running(&call_id) {
                app.tool_start(&call_id, &name, &summary);
            }
            let ok = tool_status == ToolStatus::Ok;
            // A write's result shows the diff of what it wrote.
            let diff = calls.write_diff(&call_id);
            match diff.filter(|_| ok) {
                Some(diff) => app.tool_end(&call_id, ok, &format!("{content}\n{diff}")),
                None => app.tool_end(&call_id, ok, &content),
            }
        }
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
                    "compacted: {} messages summarized, {} kept · context about {tokens_before} → {} tokens{}{}",
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
                    // Why a summary was not used, when it was not.
                    error.map_or_else(String::new, |e| format!(" · {}", e.message)),
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
        Event::QueueChanged { items } => {
            status.queue = items.len();
            calls.queue_changed(app, &items);
        }
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
pub(super) fn apply_replayed(app: &mut App, event: Event, calls: &mut Calls, window: Option<u64>) {
    if let Event::MessageEnd {
        message: Message::User { text, .. },
        ..
    } = &event
    {
        // Its media follow as one line each (`apply`).
        app.user_message(text);
    }
    apply_event(app, event, calls, window, false);
}
