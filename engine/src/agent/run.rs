//! The loop itself (the worker thread).
//!
//! Rules, in the order they apply within a run:
//!
//! 1. Input is delivered as user messages (recorded, then announced).
//! 2. A turn sends one request and reads one validated stream. A failed or
//!    malformed stream ends the run with an error; nothing from it is used.
//! 3. Every tool call is validated (active tool, parameter schema, input
//!    size) before any effect. Consecutive read-only calls run in parallel;
//!    a mutating call runs alone. Before each call or parallel group starts,
//!    the loop checks cancellation (→ `aborted` results) and the queue (a
//!    steering item → `skipped` results). Results are recorded and announced
//!    in call order, after the whole batch, so injected input never splits
//!    a call from its result.
//! 4. Each effect records its intent durably before it runs and its
//!    completion after; a failed intent record means the effect does not
//!    run; a failed record of any kind ends the run with an error.
//! 5. At the output limit, cut-off text is continued and cut-off tool calls
//!    are discarded with a notice asking the model to retry smaller; both
//!    count against [`AgentConfig::max_continuations`](super::AgentConfig).
//! 6. After the batch, steering input is delivered; when the agent would
//!    stop, follow-up input is. Otherwise the run ends: no tool calls, turn
//!    limit, budget, abort or error.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use smith_secrets::{Redactor, StreamRedactor};

use super::hooks::{HookAction, Hooks, Verdict};
use super::redact;
use super::{AgentConfig, DeliveryPoint, Services, Shared, Work, lock, try_start};
use crate::approval::Approval;
use crate::journal::{
    EffectCompletion, EffectIntent, EffectJournal, JournalError, MAX_INPUT_BYTES, MessageMeta,
    Outcome, RunInfo, RunRecord, RunSummary, SessionEvent, SessionSink, canonical_cbor,
};
use crate::protocol::{
    CompactionOutcome, CompactionReason, ErrorInfo, Event, MutationState, Role, StopCause,
    ToolStatus,
};
use crate::provider::transport::{StreamEnd, drive_with};
use crate::provider::{
    ContentBlock, Media, MediaType, Message, Pricing, Provider, ProviderError, Request, StopReason,
    StreamEvent, ToolCall, ToolSpec, Transport, Usage,
};
use crate::tools::{Access, CancelToken, Mutation, Tool, ToolContext, ToolResult, ToolSet};

/// The text of a result for a call that never ran because the run was
/// aborted (or the session ended with the call dangling).
pub fn aborted_result_text(name: &str) -> String {
    format!(
        "Aborted: the {name} call did not run to completion because the run was aborted; nothing is known to have happened. Call it again if it is still needed."
    )
}

/// The text of a result for a call skipped because steering input arrived.
pub fn skipped_result_text(name: &str) -> String {
    format!(
        "Skipped: the user sent new input before this {name} call started, so it did not run. Read the new input, then call it again if it is still needed."
    )
}

/// The text of a result for a mutating call refused because the approval
/// mode is `read-only`.
pub fn read_only_result_text(name: &str) -> String {
    format!(
        "Refused: the {name} call did not run because the approval mode is read-only, where no tool that changes anything runs. Nothing happened. Continue with read-only tools, or tell the user what you would change: they can allow changes with `/approval ask` (or `--approval ask` / `--approval workspace`)."
    )
}

/// The text of a result for a call an extension blocked before it ran.
pub fn blocked_result_text(name: &str, by: &str, reason: &str) -> String {
    format!(
        "Blocked: the {name} call did not run because the extension {by} blocked it: {reason}. Nothing happened. Do not repeat the call unchanged."
    )
}

/// For a resumed conversation: an `aborted` result for every tool call that
/// has none, each with the history index it must be inserted at (after the
/// results its assistant message already has). Indexes are for inserting in
/// the returned order.
pub fn dangling_results(history: &[Message]) -> Vec<(usize, Message)> {
    let mut out = Vec::new();
    for (index, message) in history.iter().enumerate() {
        let mut end = index + 1;
        while matches!(history.get(end), Some(Message::ToolResult { .. })) {
            end += 1;
        }
        for call in message.tool_calls() {
            let answered = history[index + 1..]
                .iter()
                .any(|m| matches!(m, Message::ToolResult { call_id, .. } if *call_id == call.id));
            if !answered {
                // Earlier insertions shift this message's slot by their count.
                out.push((
                    end + out.len(),
                    Message::ToolResult {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: aborted_result_text(&call.name),
                        is_error: true,
                        media: Vec::new(),
                    },
                ));
            }
        }
    }
    out
}

struct RunState {
    turn: u32,
    continuations: u32,
    usage: Usage,
    last_text: String,
    /// The run already compacted after a context overflow.
    overflow_compacted: bool,
    /// A threshold compaction in this run did not compact; not retried.
    threshold_gave_up: bool,
}

enum TurnOutcome {
    /// The turn finished; `more` when another request is needed.
    Continue { more: bool },
    /// The provider rejected the request as too large for the context
    /// window (not yet reported: compaction may recover).
    Overflow(ProviderError),
    /// The run ends.
    Stop(StopCause),
}

/// The answer to one call.
struct Answer {
    status: ToolStatus,
    result: ToolResult,
    effect_id: Option<String>,
    ran: bool,
    fatal: Option<ErrorInfo>,
}

impl Answer {
    fn unrun(status: ToolStatus, content: String, kind: &str) -> Self {
        Answer {
            status,
            result: ToolResult {
                content,
                details: serde_json::json!({ "error": { "kind": kind } }),
                is_error: true,
                mutation: Mutation::NotApplied,
                media: Vec::new(),
            },
            effect_id: None,
            ran: false,
            fatal: None,
        }
    }
}

enum Plan {
    Invalid(ToolResult),
    Ready {
        tool: Arc<dyn Tool>,
        access: Access,
        input: Vec<u8>,
    },
}

pub(crate) struct Runner {
    pub(super) config: AgentConfig,
    pub(super) provider: Box<dyn Provider>,
    pub(super) transport: Arc<dyn Transport>,
    pub(super) tools: ToolSet,
    pub(super) tool_context: ToolContext,
    pub(super) journal: Arc<dyn EffectJournal>,
    pub(super) sink: Arc<dyn SessionSink>,
    pub(super) history: Vec<Message>,
    pub(super) shared: Arc<Shared>,
    pub(super) events: Outbox,
    pub(super) work: SyncSender<Work>,
    pub(super) effect_seq: Arc<std::sync::atomic::AtomicU64>,
    /// The newest known provider count of the context: the history length
    /// after the response that reported it, and its tokens.
    pub(super) last_usage: Option<(usize, u64)>,
    /// The current model's context window as the provider describes it.
    pub(super) model_window: Option<u64>,
    /// The system prompt the hooks assembled last (compared by pointer).
    pub(super) assembled: Option<Arc<str>>,
    /// The extensions deciding tool calls: the same as the outbox's, kept
    /// while a child runs with an outbox of its own.
    pub(super) gate: Option<Arc<HookCell>>,
    /// The level the running agent is at: 0 for the main thread, 1 for its
    /// children...
    pub(super) depth: u32,
    /// Children started since the top-level prompt began, all levels.
    pub(super) spawned: u32,
    /// Usage of children that ended since the running turn's tool batch
    /// began, added to the run's once the batch is done.
    pub(super) child_usage: Usage,
    /// Whether the running agent is a child in inspect mode (its own
    /// children are too).
    pub(super) inspect: bool,
}

/// A usage of zero everywhere (known).
fn zero_usage() -> Usage {
    Usage {
        input: Some(0),
        output: Some(0),
        cache_read: Some(0),
        cache_write: Some(0),
    }
}

/// Extensions consulted at decision points and shown every event, with
/// the actions they asked for, held until the next safe point.
pub(super) struct HookCell {
    hooks: Mutex<Box<dyn Hooks>>,
    held: Mutex<Vec<HookAction>>,
}

/// Where every event the runtime emits goes: to the frontend, then (when
/// extensions take part) to the hooks. Every event is redacted on its way
/// out (see [`super::redact`]).
#[derive(Clone)]
pub(super) struct Outbox {
    events: SyncSender<Event>,
    hooks: Option<Arc<HookCell>>,
    redactor: Arc<Redactor>,
    /// While a child runs: the top-level `agent` call its events are shown
    /// under, as live output lines, with the child's label.
    relay: Option<(String, String)>,
}

impl Outbox {
    fn send(&self, mut event: Event) {
        redact::event(&self.redactor, &mut event);
        self.deliver(event);
    }

    /// Sends an event that is already redacted.
    fn deliver(&self, event: Event) {
        if let Some((call_id, label)) = &self.relay {
            let line = match &event {
                Event::ToolCall { call } => Some(format!(
                    "{label} → {} {}",
                    call.name,
                    super::delegate::brief(&call.arguments)
                )),
                Event::ToolExecutionEnd { name, status, .. } => Some(format!(
                    "{label} ← {name} {}",
                    serde_json::to_value(status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                )),
                Event::Error(info) => Some(format!("{label} error: {}", info.message)),
                _ => None,
            };
            if let Some(line) = line {
                let _ = self.events.send(Event::ToolExecutionUpdate {
                    call_id: call_id.clone(),
                    output: format!("{line}\n"),
                });
            }
            return;
        }
        let Some(cell) = &self.hooks else {
            // A frontend that stopped listening needs no more events.
            let _ = self.events.send(event);
            return;
        };
        let seen = event.clone();
        let _ = self.events.send(event);
        let actions = lock(&cell.hooks).observe(&seen);
        if !actions.is_empty() {
            lock(&cell.held).extend(actions);
        }
    }
}

pub(super) fn provider_error_info(error: &ProviderError) -> ErrorInfo {
    ErrorInfo {
        kind: error.kind.as_str().to_owned(),
        message: error.message.clone(),
        mutation: None,
        effect_id: None,
        retry_after_ms: error.retry_after_ms,
    }
}

pub(super) fn journal_error_info(
    message: String,
    mutation: Option<Mutation>,
    effect_id: Option<String>,
) -> ErrorInfo {
    ErrorInfo {
        kind: "journal".to_owned(),
        message,
        mutation: mutation.map(MutationState::from),
        effect_id,
        retry_after_ms: None,
    }
}

impl Runner {
    pub(crate) fn new(
        config: AgentConfig,
        services: Services,
        history: Vec<Message>,
        shared: Arc<Shared>,
        events: SyncSender<Event>,
        work: SyncSender<Work>,
        hooks: Option<Box<dyn Hooks>>,
    ) -> Self {
        let effect_seq = config.effect_ids.clone().unwrap_or_else(|| {
            Arc::new(std::sync::atomic::AtomicU64::new(config.first_effect_seq))
        });
        let model_window = super::compact::model_window(services.provider.as_ref(), &config.model);
        let redactor = Arc::clone(&config.redactor);
        let hooks = hooks.map(|hooks| {
            Arc::new(HookCell {
                hooks: Mutex::new(hooks),
                held: Mutex::new(Vec::new()),
            })
        });
        Self {
            config,
            provider: services.provider,
            transport: services.transport,
            tools: services.tools,
            tool_context: services.tool_context,
            journal: services.journal,
            sink: services.sink,
            history,
            shared,
            events: Outbox {
                events,
                redactor,
                hooks: hooks.clone(),
                relay: None,
            },
            work,
            effect_seq,
            last_usage: None,
            model_window,
            assembled: None,
            gate: hooks,
            depth: 0,
            spawned: 0,
            child_usage: zero_usage(),
            inspect: false,
        }
    }

    pub(super) fn emit(&self, mut event: Event) {
        redact::event(&self.config.redactor, &mut event);
        if let Event::Error(info) = &event {
            // Recorded for replay. Ignoring a failure: the error being
            // reported is usually that recording failed.
            let _ = self.sink.record_run(&RunRecord::Error(info.clone()));
        }
        self.events.deliver(event);
    }

    /// A safe point: applies the actions the hooks asked for since the last
    /// one, in order.
    fn apply_held(&mut self) {
        let Some(cell) = &self.events.hooks else {
            return;
        };
        let actions = std::mem::take(&mut *lock(&cell.held));
        for action in actions {
            match action {
                HookAction::SetModel { model, .. } => self.set_model(model),
                HookAction::FollowUp { by, text } => {
                    let pushed = lock(&self.shared.queue).push("follow_up", text);
                    match pushed {
                        Ok(_) => {
                            let items = lock(&self.shared.queue).snapshot();
                            self.emit(Event::QueueChanged { items });
                        }
                        Err(message) => self.emit(Event::Error(ErrorInfo {
                            kind: "unknown_queue_mode".to_owned(),
                            message: format!(
                                "the follow-up message from {by} could not be queued: {message}"
                            ),
                            mutation: None,
                            effect_id: None,
                            retry_after_ms: None,
                        })),
                    }
                }
            }
        }
    }

    /// A decision point: a compaction about to run. `Err((by, reason))`
    /// when an extension blocked it; `Ok(Some(text))` when one replaced
    /// the custom instructions.
    pub(super) fn screen_compaction(
        &self,
        reason: CompactionReason,
    ) -> Result<Option<String>, (String, String)> {
        let Some(cell) = &self.events.hooks else {
            return Ok(None);
        };
        let verdict = lock(&cell.hooks).compaction(reason);
        match verdict {
            Verdict::Allow => Ok(None),
            Verdict::Replace { value, .. } => Ok(Some(value)),
            Verdict::Block { by, reason } => Err((by, reason)),
        }
    }

    /// A decision point: user input about to be sent. Returns the text to
    /// send with the media extensions attached to it, or `None` when an
    /// extension blocked it (an `error` event of kind `blocked` says who
    /// and why) or the model does not take what was attached.
    fn screen_input(&mut self, mut text: String) -> Option<(String, Vec<Media>)> {
        // Extensions see the input as the provider will: redacted.
        redact::text(&self.config.redactor, &mut text);
        let Some(cell) = &self.events.hooks else {
            return Some((text, Vec::new()));
        };
        let (verdict, media) = {
            let mut hooks = lock(&cell.hooks);
            let verdict = hooks.input(&text);
            (verdict, hooks.take_media())
        };
        if !media.is_empty() && !matches!(verdict, Verdict::Block { .. }) {
            let support = self.provider.media_support(&self.config.model);
            let refused = media.iter().find_map(|part| {
                support
                    .refusal(part.media_type)
                    .or_else(|| {
                        (part.media_type == MediaType::Pdf && !support.pdf).then(|| {
                            format!("the provider does not send PDFs to {}", support.model)
                        })
                    })
                    .map(|why| (part.summary(), why))
            });
            if let Some((summary, why)) = refused {
                self.emit(Event::Error(ErrorInfo {
                    kind: "blocked".to_owned(),
                    message: format!(
                        "the input attaches {summary}, so it was not sent: {why}; remove the mention (or switch to a model that takes it, `/model`) and send it again"
                    ),
                    mutation: None,
                    effect_id: None,
                    retry_after_ms: None,
                }));
                return None;
            }
        }
        match verdict {
            Verdict::Allow => Some((text, media)),
            Verdict::Replace { value, .. } => Some((value, media)),
            Verdict::Block { by, reason } => {
                self.emit(Event::Error(ErrorInfo {
                    kind: "blocked".to_owned(),
                    message: format!(
                        "the extension {by} blocked this input, so it was not sent: {reason}; disable the extension (`smith plugin disable {by}`) to send it"
                    ),
                    mutation: None,
                    effect_id: None,
                    retry_after_ms: None,
                }));
                None
            }
        }
    }

    pub(crate) fn serve(mut self, work: Receiver<Work>) {
        if let Some(cell) = &self.events.hooks {
            lock(&cell.hooks).session_start();
        }
        self.serve_work(&work);
        if let Some(cell) = &self.events.hooks {
            lock(&cell.hooks).session_shutdown();
        }
    }

    fn serve_work(&mut self, work: &Receiver<Work>) {
        while let Ok(item) = work.recv() {
            match item {
                Work::Shutdown => break,
                Work::SetModel(model) => {
                    self.set_model(model);
                    self.finish_work(None);
                }
                Work::Run(prompt, cancel) => {
                    let stop = self.run(prompt, &cancel);
                    self.finish_work(stop);
                }
                Work::Compact(instructions, cancel) => {
                    let result =
                        self.compact(CompactionReason::Manual, instructions.as_deref(), &cancel);
                    // Queued input waits for the compaction, then runs.
                    let stop = (result.outcome == CompactionOutcome::Aborted)
                        .then_some(StopCause::Aborted);
                    self.finish_work(stop);
                }
            }
        }
    }

    /// Marks the agent idle. After a run that ended normally (or when no
    /// run happened), input queued meanwhile — it may have arrived while the
    /// run was ending — starts another run; after an abort, error or limit
    /// it stays queued. Otherwise announces settled.
    fn finish_work(&mut self, stop: Option<StopCause>) {
        self.shared.busy.store(false, Ordering::SeqCst);
        let may_continue = matches!(stop, None | Some(StopCause::Done));
        let queued = !lock(&self.shared.queue).is_empty();
        if !(may_continue && queued && try_start(&self.shared, &self.work, None)) {
            self.emit(Event::Settled);
        }
    }

    fn set_model(&mut self, model: String) {
        let info = self.provider.describe();
        if !info.models.iter().any(|m| m.id == model) {
            let known: Vec<&str> = info.models.iter().map(|m| m.id.as_str()).collect();
            self.emit(Event::Error(ErrorInfo {
                kind: "model_unavailable".to_owned(),
                message: format!(
                    "provider {} has no model {model:?}; use one of: {}",
                    info.id,
                    known.join(", ")
                ),
                mutation: None,
                effect_id: None,
                retry_after_ms: None,
            }));
            return;
        }
        let event = SessionEvent::ModelChange {
            provider: info.id.clone(),
            model: model.clone(),
        };
        if let Err(err) = self.sink.record(&event) {
            self.emit(Event::Error(journal_error_info(
                format!("the model change to {model:?} could not be recorded, so the model stays {:?}: {err}", self.config.model),
                None,
                None,
            )));
            return;
        }
        self.config.model.clone_from(&model);
        *lock(&self.shared.model) = model.clone();
        self.model_window = info
            .models
            .iter()
            .find(|m| m.id == model)
            .and_then(|m| m.context_window);
        self.config.pricing = info
            .models
            .iter()
            .find(|m| m.id == model)
            .and_then(|m| m.pricing);
        self.emit(Event::ModelChanged {
            provider: info.id,
            model,
        });
    }

    /// Records `message` durably, then adds it to the conversation; both
    /// redacted.
    fn append(&mut self, mut message: Message, mut meta: MessageMeta) -> Result<(), JournalError> {
        redact::message(&self.config.redactor, &mut message);
        if let Some(details) = &mut meta.details {
            redact::json(&self.config.redactor, details);
        }
        self.sink.record(&SessionEvent::Message {
            message: message.clone(),
            meta,
        })?;
        if self.depth == 0 {
            lock(&self.shared.messages).push(message.clone());
        }
        self.history.push(message);
        Ok(())
    }

    fn deliver_user(
        &mut self,
        mut text: String,
        media: Vec<Media>,
        notice: bool,
    ) -> Result<(), ErrorInfo> {
        self.emit(Event::MessageStart { role: Role::User });
        redact::text(&self.config.redactor, &mut text);
        let message = Message::User { text, media };
        let meta = MessageMeta {
            notice,
            ..MessageMeta::default()
        };
        self.append(message.clone(), meta).map_err(|err| {
            journal_error_info(
                format!("the user input could not be recorded, so it was not sent: {err}"),
                None,
                None,
            )
        })?;
        self.emit(Event::MessageEnd {
            message,
            usage: None,
        });
        Ok(())
    }

    fn take_queued(&mut self, point: DeliveryPoint) -> Vec<(String, Vec<Media>)> {
        // Queued input is the user's, for the main thread: a child never
        // takes it.
        if self.depth > 0 {
            return Vec::new();
        }
        let (items, snapshot) = {
            let mut queue = lock(&self.shared.queue);
            let items = queue.take(point);
            (items, queue.snapshot())
        };
        if !items.is_empty() {
            self.emit(Event::QueueChanged { items: snapshot });
        }
        items
            .into_iter()
            .filter_map(|item| self.screen_input(item.text))
            .collect()
    }

    fn cost(&self, usage: &Usage) -> Option<f64> {
        self.config
            .pricing
            .as_ref()
            .and_then(|p: &Pricing| p.cost(usage))
    }

    fn over_budget(&self, usage: &Usage) -> bool {
        let budget = self.config.budget;
        let tokens = usage
            .input
            .zip(usage.output)
            .map(|(i, o)| i.saturating_add(o));
        matches!((budget.max_tokens, tokens), (Some(max), Some(used)) if used > max)
            || matches!((budget.max_cost, self.cost(usage)), (Some(max), Some(cost)) if cost > max)
    }

    fn turn_limit_reached(&self, state: &RunState) -> bool {
        self.config.max_turns.is_some_and(|max| state.turn >= max)
    }

    /// Forgets the conversation and restarts effect numbering, keeping
    /// allocated capacity (benchmarks repeat one turn without growth).
    #[cfg(feature = "bench")]
    pub(crate) fn reset_conversation(&mut self) {
        self.history.clear();
        lock(&self.shared.messages).clear();
        self.effect_seq
            .store(self.config.first_effect_seq, Ordering::SeqCst);
        self.last_usage = None;
    }

    /// Runs until an explicit stop; `None` when there was nothing to run.
    pub(crate) fn run(
        &mut self,
        prompt: Option<String>,
        cancel: &CancelToken,
    ) -> Option<StopCause> {
        self.spawned = 0;
        self.child_usage = zero_usage();
        self.run_full(prompt, cancel).map(|summary| summary.stop)
    }

    /// [`Runner::run`], answering the run's summary.
    fn run_full(&mut self, prompt: Option<String>, cancel: &CancelToken) -> Option<RunSummary> {
        let mut inputs: Vec<(String, Vec<Media>)> = prompt
            .into_iter()
            .filter_map(|text| self.screen_input(text))
            .collect();
        if inputs.is_empty() {
            inputs = self.take_queued(DeliveryPoint::BeforeStop);
            if inputs.is_empty() {
                return None;
            }
        }
        self.refresh_system();
        let started = self.sink.record_run(&RunRecord::RunStart(self.run_info()));
        self.emit(Event::AgentStart);
        let mut state = RunState {
            turn: 0,
            continuations: 0,
            usage: Usage {
                input: Some(0),
                output: Some(0),
                cache_read: Some(0),
                cache_write: Some(0),
            },
            last_text: String::new(),
            overflow_compacted: false,
            threshold_gave_up: false,
        };
        let stop = loop {
            if let Err(err) = &started {
                self.emit(Event::Error(journal_error_info(
                    format!("the start of the run could not be recorded, so the input was not sent: {err}"),
                    None,
                    None,
                )));
                break StopCause::Error;
            }
            if cancel.is_cancelled() {
                break StopCause::Aborted;
            }
            let mut delivered = Ok(());
            for (text, media) in inputs.drain(..) {
                delivered = self.deliver_user(text, media, false);
                if delivered.is_err() {
                    break;
                }
            }
            if let Err(info) = delivered {
                self.emit(Event::Error(info));
                break StopCause::Error;
            }
            if cancel.is_cancelled() {
                break StopCause::Aborted;
            }
            if !state.threshold_gave_up && self.over_threshold() {
                let result = self.compact(CompactionReason::Threshold, None, cancel);
                if let Some(usage) = &result.usage {
                    state.usage = state.usage.add(usage);
                }
                // Not tried again in this run when it did not compact, or
                // only pruned because a summary gains nothing.
                state.threshold_gave_up =
                    result.outcome != CompactionOutcome::Compacted || result.no_gain;
                if cancel.is_cancelled() {
                    break StopCause::Aborted;
                }
            }
            // A limit of zero turns allows no request at all: the input
            // above is kept in the conversation, and the run stops before
            // the first turn (later turns are stopped after the turn that
            // reaches the limit, below).
            if self.turn_limit_reached(&state) {
                break StopCause::TurnLimit;
            }
            // No request is sent over the model's window: it could only be
            // refused (or, far over it, not even be built or sent).
            if let Some(info) = self.over_window() {
                self.emit(Event::Error(info));
                break StopCause::Error;
            }
            state.turn += 1;
            self.emit(Event::TurnStart { turn: state.turn });
            let outcome = self.turn(cancel, &mut state);
            self.emit(Event::TurnEnd { turn: state.turn });
            self.apply_held();
            let more = match outcome {
                TurnOutcome::Stop(cause) => break cause,
                TurnOutcome::Continue { more } => more,
                TurnOutcome::Overflow(error) => {
                    state.overflow_compacted = true;
                    let result = self.compact(CompactionReason::Overflow, None, cancel);
                    if let Some(usage) = &result.usage {
                        state.usage = state.usage.add(usage);
                    }
                    if cancel.is_cancelled() {
                        break StopCause::Aborted;
                    }
                    if result.outcome != CompactionOutcome::Compacted {
                        self.emit(Event::Error(provider_error_info(&error)));
                        break StopCause::Error;
                    }
                    // Retry the request over the compacted context.
                    true
                }
            };
            if self.over_budget(&state.usage) {
                break StopCause::Budget;
            }
            if cancel.is_cancelled() {
                break StopCause::Aborted;
            }
            let queued_waiting = !lock(&self.shared.queue).is_empty();
            if self.turn_limit_reached(&state) {
                if more || queued_waiting {
                    break StopCause::TurnLimit;
                }
                break StopCause::Done;
            }
            inputs = self.take_queued(DeliveryPoint::AfterToolBatch);
            if !inputs.is_empty() || more {
                continue;
            }
            inputs = self.take_queued(DeliveryPoint::BeforeStop);
            if inputs.is_empty() {
                break StopCause::Done;
            }
        };
        let cost = self.cost(&state.usage);
        let mut summary = RunSummary {
            stop,
            usage: state.usage,
            cost,
            text: state.last_text,
        };
        if started.is_ok()
            && let Err(err) = self.sink.record_run(&RunRecord::RunEnd(summary.clone()))
        {
            self.emit(Event::Error(journal_error_info(
                format!("the end of the run could not be recorded; the session will show the run as interrupted: {err}"),
                None,
                None,
            )));
        }
        // Only a child's caller reads the text afterwards: the main
        // thread's moves into the event.
        let text = if self.depth > 0 {
            summary.text.clone()
        } else {
            std::mem::take(&mut summary.text)
        };
        self.emit(Event::AgentEnd {
            stop: summary.stop,
            usage: summary.usage,
            cost: summary.cost,
            text,
        });
        self.apply_held();
        Some(summary)
    }

    /// What replay needs to know about the run about to start.
    fn run_info(&self) -> RunInfo {
        RunInfo {
            provider: self.shared.provider_id.clone(),
            model: self.config.model.clone(),
            system: self.config.system.clone(),
            tools: self.tool_specs(),
            cwd: self.tool_context.cwd().display().to_string(),
        }
    }

    fn tool_specs(&self) -> Vec<ToolSpec> {
        self.tools
            .definitions()
            .map(|d| ToolSpec {
                name: d.name.clone(),
                description: d.description.clone(),
                parameters: d.parameters.clone(),
            })
            .collect()
    }

    pub(super) fn request(&self) -> Request {
        // Failed responses carry nothing a provider may see again.
        let messages = self
            .history
            .iter()
            .filter(|m| !matches!(m, Message::Assistant { stop: StopReason::Error, content } if content.is_empty()))
            .cloned()
            .collect();
        Request {
            model: self.config.model.clone(),
            system: self.config.system.clone(),
            messages,
            tools: self.tool_specs(),
            max_output_tokens: self.config.max_output_tokens,
        }
    }

    /// Records and announces an assistant message; a record failure ends the
    /// run.
    fn finish_message(&mut self, message: Message, usage: Option<Usage>) -> Result<(), StopCause> {
        let meta = MessageMeta {
            usage,
            ..MessageMeta::default()
        };
        if let Err(err) = self.append(message.clone(), meta) {
            self.emit(Event::Error(journal_error_info(
                format!("the assistant response could not be recorded, so the run stops before acting on it: {err}"),
                None,
                None,
            )));
            return Err(StopCause::Error);
        }
        if let Some(tokens) = usage.as_ref().and_then(super::compact::context_tokens) {
            self.last_usage = Some((self.history.len(), tokens));
        }
        self.emit(Event::MessageEnd { message, usage });
        Ok(())
    }

    /// A decision point: the context about to be sent in a provider
    /// request. `Err` when an extension blocked it (an `error` event of
    /// kind `blocked` says who and why); otherwise the hooks hear that the
    /// request is about to be made.
    fn screen_context(&self, messages: usize) -> Result<(), StopCause> {
        let Some(cell) = &self.events.hooks else {
            return Ok(());
        };
        let verdict = lock(&cell.hooks).context(messages);
        if let Verdict::Block { by, reason } = verdict {
            self.emit(Event::Error(ErrorInfo {
                kind: "blocked".to_owned(),
                message: format!(
                    "the extension {by} blocked the provider request (a context of {messages} message{}), so nothing was sent and the run stops: {reason}; disable the extension (`smith plugin disable {by}`) to send it",
                    if messages == 1 { "" } else { "s" }
                ),
                mutation: None,
                effect_id: None,
                retry_after_ms: None,
            }));
            return Err(StopCause::Error);
        }
        lock(&cell.hooks).before_request(&self.config.model);
        Ok(())
    }

    /// Takes the hooks' system prompt when they assemble one and it
    /// changed (a pointer comparison while it did not); it is redacted
    /// like every text that reaches the provider. True when it changed.
    fn refresh_system(&mut self) -> bool {
        let Some(cell) = &self.events.hooks else {
            return false;
        };
        let Some(prompt) = lock(&cell.hooks).system_prompt() else {
            return false;
        };
        if self
            .assembled
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, &prompt))
        {
            return false;
        }
        let mut text = prompt.to_string();
        redact::text(&self.config.redactor, &mut text);
        self.config.system = (!text.is_empty()).then_some(text);
        self.assembled = Some(prompt);
        true
    }

    fn turn(&mut self, cancel: &CancelToken, state: &mut RunState) -> TurnOutcome {
        let mut request = self.request();
        if let Err(cause) = self.screen_context(request.messages.len()) {
            return TurnOutcome::Stop(cause);
        }
        if self.refresh_system() {
            request.system.clone_from(&self.config.system);
        }
        self.emit(Event::MessageStart {
            role: Role::Assistant,
        });
        let events = self.events.clone();
        let notices = self.events.clone();
        let end = drive_with(
            self.provider.as_mut(),
            self.transport.as_ref(),
            &request,
            cancel,
            &mut |event| {
                let out = match event {
                    StreamEvent::TextDelta { text } => Event::MessageDelta { text: text.clone() },
                    StreamEvent::ThinkingDelta { text, .. } => {
                        Event::ThinkingDelta { text: text.clone() }
                    }
                    _ => return,
                };
                events.send(out);
            },
            &mut |wait, error| {
                // Redacted on its way out, like every event.
                notices.send(Event::ProviderRetry {
                    wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    error: provider_error_info(error),
                });
            },
        );
        // The tools of this response attach media for the model it came from.
        let media = self.provider.media_support(&request.model);
        self.tool_context.set_media(media);
        let turn = match end {
            StreamEnd::Failed(error) => {
                // The response stated no usage: the run's usage is unknown
                // from here on, never counted as 0.
                state.usage = state.usage.add(&Usage::default());
                let message = Message::Assistant {
                    content: Vec::new(),
                    stop: StopReason::Error,
                };
                if let Err(cause) = self.finish_message(message, None) {
                    return TurnOutcome::Stop(cause);
                }
                if self.may_compact_overflow(&error, state) {
                    return TurnOutcome::Overflow(error);
                }
                self.emit(Event::Error(provider_error_info(&error)));
                return TurnOutcome::Stop(StopCause::Error);
            }
            StreamEnd::Aborted(partial) => {
                let calls: Vec<ToolCall> = partial.tool_calls().cloned().collect();
                let message = Message::Assistant {
                    content: partial.content,
                    stop: StopReason::Abort,
                };
                state.usage = state.usage.add(&partial.usage);
                if let Err(cause) = self.finish_message(message, Some(partial.usage)) {
                    return TurnOutcome::Stop(cause);
                }
                self.answer_unrun(&calls, ToolStatus::Aborted);
                return TurnOutcome::Stop(StopCause::Aborted);
            }
            StreamEnd::Turn(turn) => turn,
        };
        state.usage = state.usage.add(&turn.usage);
        let mut content = turn.content;
        if turn.stop == StopReason::Error {
            // A failed response's calls are never executed or kept.
            content.retain(|block| !matches!(block, ContentBlock::ToolCall(_)));
        }
        let mut message = Message::Assistant {
            content,
            stop: turn.stop,
        };
        // Before its calls are planned: an effect's recorded input and the
        // call that runs carry placeholders, never a registered value.
        redact::message(&self.config.redactor, &mut message);
        let text = message.text();
        if !text.is_empty() {
            state.last_text = text;
        }
        let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
        if let Err(cause) = self.finish_message(message, Some(turn.usage)) {
            return TurnOutcome::Stop(cause);
        }
        match turn.stop {
            StopReason::Error => {
                let error = turn.error.unwrap_or_else(|| {
                    ProviderError::malformed("the response failed without detail")
                });
                if self.may_compact_overflow(&error, state) {
                    return TurnOutcome::Overflow(error);
                }
                self.emit(Event::Error(provider_error_info(&error)));
                return TurnOutcome::Stop(StopCause::Error);
            }
            StopReason::Abort => {
                self.answer_unrun(&calls, ToolStatus::Aborted);
                return TurnOutcome::Stop(StopCause::Aborted);
            }
            StopReason::End | StopReason::ToolUse | StopReason::Limit => {}
        }
        for call in &calls {
            self.emit(Event::ToolCall { call: call.clone() });
        }
        let stopped = self.run_tools(&calls, cancel);
        // What the batch's children used is the run's too.
        state.usage = state
            .usage
            .add(&std::mem::replace(&mut self.child_usage, zero_usage()));
        if let Some(cause) = stopped {
            return TurnOutcome::Stop(cause);
        }
        if turn.stop == StopReason::Limit && (calls.is_empty() || !turn.cut_off.is_empty()) {
            state.continuations += 1;
            if state.continuations > self.config.max_continuations {
                self.emit(Event::Error(ErrorInfo {
                    kind: "output_limit".to_owned(),
                    message: format!(
                        "the model hit its output limit {} times in this run (at most {} continuations are allowed), so the run stops; ask for smaller pieces of work or raise the model's output limit",
                        state.continuations, self.config.max_continuations
                    ),
                    mutation: None,
                    effect_id: None,
                    retry_after_ms: None,
                }));
                return TurnOutcome::Stop(StopCause::Error);
            }
            if !turn.cut_off.is_empty() {
                let names: Vec<String> = turn
                    .cut_off
                    .iter()
                    .map(|c| {
                        format!(
                            "{} (id {}, {} argument bytes received)",
                            c.name, c.id, c.argument_bytes
                        )
                    })
                    .collect();
                let notice = format!(
                    "[smith] Your tool call {} was cut off by the output limit before its arguments were complete, so it was discarded and NOT executed. Retry with smaller arguments, for example by splitting the content across several calls.",
                    names.join(", ")
                );
                if let Err(info) = self.deliver_user(notice, Vec::new(), true) {
                    self.emit(Event::Error(info));
                    return TurnOutcome::Stop(StopCause::Error);
                }
            }
            return TurnOutcome::Continue { more: true };
        }
        TurnOutcome::Continue {
            more: !calls.is_empty(),
        }
    }

    /// Whether a failed request may be recovered by an overflow compaction.
    fn may_compact_overflow(&self, error: &ProviderError, state: &RunState) -> bool {
        error.is_too_large() && self.config.compaction.auto && !state.overflow_compacted
    }

    /// Answers calls that never ran (aborted stream, aborted response).
    fn answer_unrun(&mut self, calls: &[ToolCall], status: ToolStatus) {
        for call in calls {
            self.emit(Event::ToolCall { call: call.clone() });
        }
        let answers: Vec<Answer> = calls
            .iter()
            .map(|call| Answer::unrun(status, aborted_result_text(&call.name), "aborted"))
            .collect();
        // Recording errors here end the run anyway (it is aborting).
        let _ = self.publish(calls, answers);
    }

    fn plan(&self, call: &ToolCall) -> Plan {
        let tool = match self.tools.prepare(&call.name, &call.arguments) {
            Ok(tool) => Arc::clone(tool),
            Err(error) => return Plan::Invalid(error.into_result()),
        };
        let input = match canonical_cbor(&call.arguments) {
            Ok(input) => input,
            Err(err) => {
                return Plan::Invalid(
                    crate::tools::ToolError::new(
                        crate::tools::ToolErrorKind::InvalidArguments,
                        format!("{} call rejected: {err}", call.name),
                        "effect inputs are recorded as canonical CBOR before they run; nothing was done",
                        "send simpler arguments (less nesting, numbers within 64 bits)",
                    )
                    .into_result(),
                );
            }
        };
        if input.len() > MAX_INPUT_BYTES {
            return Plan::Invalid(
                crate::tools::ToolError::new(
                    crate::tools::ToolErrorKind::InvalidArguments,
                    format!(
                        "{} call rejected: its arguments take {} bytes, more than the {} bytes an effect record may hold",
                        call.name,
                        input.len(),
                        MAX_INPUT_BYTES
                    ),
                    "effect inputs are recorded durably before they run, and records are bounded; nothing was done",
                    "send smaller arguments, for example by splitting the work across several calls",
                )
                .into_result(),
            );
        }
        let access = tool.definition().access;
        Plan::Ready {
            tool,
            access,
            input,
        }
    }

    fn next_effect_id(&mut self) -> String {
        let number = self.effect_seq.fetch_add(1, Ordering::SeqCst) + 1;
        format!("fx-{number}")
    }

    /// Runs a batch. Returns a stop cause when the run must end.
    fn run_tools(&mut self, calls: &[ToolCall], cancel: &CancelToken) -> Option<StopCause> {
        if calls.is_empty() {
            return None;
        }
        // Validation happens for the whole batch before any effect.
        let mut calls = Cow::Borrowed(calls);
        let mut plans: Vec<Plan> = calls.iter().map(|call| self.plan(call)).collect();
        let mut answers: Vec<Option<Answer>> = Vec::with_capacity(calls.len());
        answers.resize_with(calls.len(), || None);
        self.screen_calls(&mut calls, &mut plans, &mut answers);
        let mut fatal: Option<ErrorInfo> = None;
        let mut index = 0;
        while index < calls.len() {
            let call = &calls[index];
            if answers[index].is_some() {
                // Blocked by an extension.
                index += 1;
                continue;
            }
            if fatal.is_some() {
                answers[index] = Some(Answer::unrun(
                    ToolStatus::Aborted,
                    aborted_result_text(&call.name),
                    "aborted",
                ));
                index += 1;
                continue;
            }
            if cancel.is_cancelled() {
                answers[index] = Some(Answer::unrun(
                    ToolStatus::Aborted,
                    aborted_result_text(&call.name),
                    "aborted",
                ));
                index += 1;
                continue;
            }
            if lock(&self.shared.queue).interrupts_tools() {
                answers[index] = Some(Answer::unrun(
                    ToolStatus::Skipped,
                    skipped_result_text(&call.name),
                    "skipped",
                ));
                index += 1;
                continue;
            }
            match &plans[index] {
                Plan::Invalid(result) => {
                    answers[index] = Some(Answer {
                        status: ToolStatus::Invalid,
                        result: result.clone(),
                        effect_id: None,
                        ran: false,
                        fatal: None,
                    });
                    index += 1;
                }
                Plan::Ready { input, .. }
                    if call.name == super::delegate::TOOL && self.config.delegation.is_some() =>
                {
                    let (call, input) = (call.clone(), input.clone());
                    let answer = self.delegate(&call, input, cancel);
                    if fatal.is_none() {
                        fatal.clone_from(&answer.fatal);
                    }
                    answers[index] = Some(answer);
                    index += 1;
                }
                Plan::Ready { access, .. } => {
                    let mut end = index + 1;
                    if *access == Access::ReadOnly {
                        while end < calls.len()
                            && answers[end].is_none()
                            && !(calls[end].name == super::delegate::TOOL
                                && self.config.delegation.is_some())
                            && matches!(
                                &plans[end],
                                Plan::Ready {
                                    access: Access::ReadOnly,
                                    ..
                                }
                            )
                        {
                            end += 1;
                        }
                    }
                    let ids: Vec<String> = (index..end).map(|_| self.next_effect_id()).collect();
                    let group =
                        self.execute_group(&calls[index..end], &plans[index..end], ids, cancel);
                    for (offset, answer) in group.into_iter().enumerate() {
                        if fatal.is_none() {
                            fatal.clone_from(&answer.fatal);
                        }
                        answers[index + offset] = Some(answer);
                    }
                    index = end;
                }
            }
        }
        let answers: Vec<Answer> = answers
            .into_iter()
            .zip(calls.iter())
            .map(|(answer, call)| {
                answer.unwrap_or_else(|| {
                    Answer::unrun(
                        ToolStatus::Aborted,
                        aborted_result_text(&call.name),
                        "aborted",
                    )
                })
            })
            .collect();
        let published = self.publish(&calls, answers);
        if let Some(info) = fatal {
            self.emit(Event::Error(info));
            return Some(StopCause::Error);
        }
        if let Err(info) = published {
            self.emit(Event::Error(info));
            return Some(StopCause::Error);
        }
        if cancel.is_cancelled() {
            return Some(StopCause::Aborted);
        }
        None
    }

    /// A decision point for each validated call of a batch, before any of
    /// them runs: a blocked call gets its `blocked` answer, a replaced
    /// call's arguments are validated again.
    fn screen_calls(
        &self,
        calls: &mut Cow<'_, [ToolCall]>,
        plans: &mut [Plan],
        answers: &mut [Option<Answer>],
    ) {
        self.screen_with_hooks(calls, plans, answers);
        // In `read-only` no mutating call runs, whatever the plugins said
        // (and with no plugin loaded at all): the floor under the
        // permission policy, which refuses them first in its own words.
        if self.tool_context.approval() == Approval::ReadOnly {
            for index in 0..calls.len() {
                if answers[index].is_none()
                    && let Plan::Ready {
                        access: Access::Mutating,
                        ..
                    } = plans[index]
                {
                    answers[index] = Some(Answer::unrun(
                        ToolStatus::Blocked,
                        read_only_result_text(&calls[index].name),
                        "blocked",
                    ));
                }
            }
        }
    }

    /// The extensions' `tool-call` decisions of [`Runner::screen_calls`].
    fn screen_with_hooks(
        &self,
        calls: &mut Cow<'_, [ToolCall]>,
        plans: &mut [Plan],
        answers: &mut [Option<Answer>],
    ) {
        let Some(cell) = &self.gate else {
            return;
        };
        for index in 0..calls.len() {
            if !matches!(plans[index], Plan::Ready { .. }) {
                continue;
            }
            let verdict = lock(&cell.hooks).tool_call(&calls[index]);
            match verdict {
                Verdict::Allow => {}
                Verdict::Block { by, reason } => {
                    answers[index] = Some(Answer::unrun(
                        ToolStatus::Blocked,
                        blocked_result_text(&calls[index].name, &by, &reason),
                        "blocked",
                    ));
                }
                Verdict::Replace { by, value } => match serde_json::from_str::<Value>(&value) {
                    Ok(mut arguments) => {
                        // Recorded and run like the model's own: a
                        // registered value the extension wrote in becomes
                        // its placeholder, which the effect boundary
                        // substitutes only where the policy allows.
                        super::redact::json(&self.config.redactor, &mut arguments);
                        calls.to_mut()[index].arguments = arguments;
                        plans[index] = self.plan(&calls[index]);
                    }
                    Err(err) => {
                        plans[index] = Plan::Invalid(
                            crate::tools::ToolError::new(
                                crate::tools::ToolErrorKind::InvalidArguments,
                                format!(
                                    "{} call rejected: the extension {by} replaced its arguments with text that is not JSON ({err})",
                                    calls[index].name
                                ),
                                "a replacement is validated like the model's own arguments before anything runs; nothing was done",
                                "call it again; if this repeats, report it to the extension's author or disable the extension",
                            )
                            .into_result(),
                        );
                    }
                },
            }
        }
    }

    /// Runs a group: one mutating call, or read-only calls in parallel.
    fn execute_group(
        &self,
        calls: &[ToolCall],
        plans: &[Plan],
        ids: Vec<String>,
        cancel: &CancelToken,
    ) -> Vec<Answer> {
        let exec = Executor {
            journal: self.journal.as_ref(),
            events: &self.events,
            tool_context: &self.tool_context,
            redactor: &self.config.redactor,
        };
        exec.group(calls, plans, ids, cancel)
    }
    /// Records and announces results in call order.
    fn publish(&mut self, calls: &[ToolCall], answers: Vec<Answer>) -> Result<(), ErrorInfo> {
        let mut failure = None;
        for (call, answer) in calls.iter().zip(answers) {
            let message = Message::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: answer.result.content.clone(),
                is_error: answer.result.is_error,
                media: answer.result.media.clone(),
            };
            let meta = MessageMeta {
                usage: None,
                status: Some(answer.status),
                effect_id: answer.effect_id.clone(),
                details: (!answer.ran).then(|| answer.result.details.clone()),
                notice: false,
            };
            if failure.is_none()
                && let Err(err) = self.append(message, meta)
            {
                failure = Some(journal_error_info(
                    format!(
                        "the result of the {} call {} could not be recorded: {err}",
                        call.name, call.id
                    ),
                    answer.ran.then_some(answer.result.mutation),
                    answer.effect_id.clone(),
                ));
            }
            self.emit(Event::ToolExecutionEnd {
                call_id: call.id.clone(),
                name: call.name.clone(),
                status: answer.status,
                content: answer.result.content,
                details: if answer.result.details.is_null() {
                    Value::Object(serde_json::Map::new())
                } else {
                    answer.result.details
                },
                mutation: answer
                    .ran
                    .then(|| MutationState::from(answer.result.mutation)),
                effect_id: answer.effect_id,
            });
        }
        failure.map_or(Ok(()), Err)
    }
}

/// What a child swaps out of the runner while it runs.
struct Parked {
    history: Vec<Message>,
    journal: Arc<dyn EffectJournal>,
    sink: Arc<dyn SessionSink>,
    tools: ToolSet,
    system: Option<String>,
    model: String,
    events: Outbox,
    last_usage: Option<(usize, u64)>,
    assembled: Option<Arc<str>>,
}

impl Runner {
    /// Runs one `agent` call: a child agent on this runner, recorded in a
    /// child session of its own (see [`super::delegate`]).
    fn delegate(&mut self, call: &ToolCall, input: Vec<u8>, cancel: &CancelToken) -> Answer {
        use super::delegate::{self, Request};
        let Some(delegation) = self.config.delegation.clone() else {
            return Answer::unrun(
                ToolStatus::Invalid,
                "the agent tool is not available in this runtime".to_owned(),
                "invalid_arguments",
            );
        };
        let mut request = Request::from(&call.arguments);
        // An inspecting agent's children inspect too.
        request.inspect |= self.inspect;
        let refuse = |text: String, kind: &str| Answer::unrun(ToolStatus::Error, text, kind);
        if self.depth >= delegation.max_depth {
            return refuse(
                format!(
                    "Refused: the subagent \"{}\" was not started, because subagents nest at most {} levels deep and this agent already runs at level {}. Nothing ran. Do this part yourself with your other tools, or finish and say what is left so the agent above you can delegate it.",
                    request.description, delegation.max_depth, self.depth
                ),
                "depth",
            );
        }
        if self.spawned >= delegation.max_spawns {
            return refuse(
                format!(
                    "Refused: the subagent \"{}\" was not started, because this prompt has started {} subagents already, the most one prompt may start (counted over every level). Nothing ran. Do the rest of the work yourself with your other tools, or finish and tell the user what is left.",
                    request.description, delegation.max_spawns
                ),
                "budget",
            );
        }
        let agent = match &request.agent {
            None => None,
            Some(name) => match (delegation.resolve)(name) {
                Ok(agent) => Some(agent),
                Err(why) => {
                    return refuse(
                        format!(
                            "Refused: the subagent \"{}\" was not started: {why}. Nothing ran. Call the agent tool again with one of the agents listed in its description, or without `agent`.",
                            request.description
                        ),
                        "unknown_agent",
                    );
                }
            },
        };
        let child = match (delegation.open)(&request.description) {
            Ok(child) => child,
            Err(why) => {
                return refuse(
                    format!(
                        "The subagent \"{}\" was not started because its session could not be opened: {why}. Nothing ran. Do the task yourself.",
                        request.description
                    ),
                    "session",
                );
            }
        };
        self.spawned += 1;
        let effect_id = self.next_effect_id();
        let intent = EffectIntent {
            effect_id: effect_id.clone(),
            parent: call.id.clone(),
            tool: call.name.clone(),
            plugin_generation: crate::journal::BUILTIN_GENERATION,
            input,
        };
        if let Err(err) = self.journal.record_intent(&intent) {
            let message = format!(
                "the agent call (effect {effect_id}) did not run because its intent could not be recorded: {err}; nothing was started — fix the session store, then resume"
            );
            let mut answer =
                Answer::unrun(ToolStatus::NotRecorded, message.clone(), "not_recorded");
            answer.fatal = Some(journal_error_info(
                message,
                Some(Mutation::NotApplied),
                Some(effect_id),
            ));
            return answer;
        }
        self.events.send(Event::ToolExecutionStart {
            call_id: call.id.clone(),
            name: call.name.clone(),
            effect_id: effect_id.clone(),
        });
        // The child's tools: the caller's, within the custom agent's list,
        // read-only ones alone in inspect mode.
        let mut tools = self.tools.clone();
        let names: Vec<String> = tools.names().map(str::to_owned).collect();
        for name in names {
            let listed = agent
                .as_ref()
                .and_then(|a| a.tools.as_ref())
                .is_none_or(|list| list.contains(&name));
            let mutating = tools
                .get(&name)
                .is_some_and(|t| t.definition().access == Access::Mutating);
            if !listed || (request.inspect && mutating) {
                tools.remove(&name);
            }
        }
        let depth = self.depth + 1;
        let label = match &self.events.relay {
            Some((_, above)) => format!("{above}/{}", request.description),
            None => format!("[{}]", request.description),
        };
        let relay_call = self
            .events
            .relay
            .as_ref()
            .map_or_else(|| call.id.clone(), |(id, _)| id.clone());
        let system = delegate::system_prompt(
            self.config.system.as_deref(),
            &request,
            agent.as_ref(),
            depth,
        );
        let relay = Outbox {
            events: self.events.events.clone(),
            hooks: None,
            redactor: Arc::clone(&self.events.redactor),
            relay: Some((relay_call, label)),
        };
        let parked = Parked {
            history: std::mem::take(&mut self.history),
            journal: std::mem::replace(&mut self.journal, child.journal),
            sink: std::mem::replace(&mut self.sink, child.sink),
            tools: std::mem::replace(&mut self.tools, tools),
            system: self.config.system.replace(system),
            model: self.config.model.clone(),
            events: std::mem::replace(&mut self.events, relay),
            last_usage: self.last_usage.take(),
            assembled: self.assembled.clone(),
        };
        if let Some(model) = agent.as_ref().and_then(|a| a.model.clone()) {
            self.config.model = model;
        }
        self.depth = depth;
        let inspect = std::mem::replace(&mut self.inspect, request.inspect);
        let summary = self.run_full(Some(request.prompt.clone()), cancel);
        self.depth = depth - 1;
        self.inspect = inspect;
        self.history = parked.history;
        self.journal = parked.journal;
        self.sink = parked.sink;
        self.tools = parked.tools;
        self.config.system = parked.system;
        self.config.model = parked.model;
        self.events = parked.events;
        self.last_usage = parked.last_usage;
        self.assembled = parked.assembled;
        let (stop, usage, cost, text) = match summary {
            Some(s) => (s.stop, s.usage, s.cost, s.text),
            None => (StopCause::Error, Usage::default(), None, String::new()),
        };
        self.child_usage = self.child_usage.add(&usage);
        let done = stop == StopCause::Done;
        let stop_name = serde_json::to_value(stop)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let content = if done {
            delegate::bounded(&text, &child.name)
        } else {
            let said = if text.is_empty() {
                "it gave no answer".to_owned()
            } else {
                format!(
                    "its last words were:\n\n{}",
                    delegate::bounded(&text, &child.name)
                )
            };
            format!(
                "The subagent \"{}\" did not finish: its run ended with `{stop_name}` ({}); {said}\n\nIts session {} has what it did.",
                request.description,
                match stop {
                    StopCause::Aborted => "the user aborted",
                    StopCause::TurnLimit => "it reached the turn limit",
                    StopCause::Budget => "it went over the budget",
                    _ => "an error stopped it",
                },
                child.name
            )
        };
        let result = ToolResult {
            media: Vec::new(),
            content,
            details: serde_json::json!({
                "session": child.name,
                "description": request.description,
                "agent": agent.as_ref().map(|a| a.name.clone()),
                "mode": if request.inspect { "inspect" } else { "work" },
                "depth": depth,
                "stop": stop_name,
                "usage": usage,
                "cost": cost,
            }),
            is_error: !done,
            mutation: if request.inspect {
                Mutation::NotApplied
            } else {
                Mutation::Unknown
            },
        };
        let outcome = match stop {
            StopCause::Done => Outcome::Ok,
            StopCause::Aborted => Outcome::Cancelled,
            _ => Outcome::Error,
        };
        let output = canonical_cbor(&serde_json::json!({
            "content": result.content,
            "details": result.details,
            "is_error": result.is_error,
        }))
        .unwrap_or_default();
        let completion = EffectCompletion {
            effect_id: effect_id.clone(),
            outcome,
            mutation: result.mutation,
            output,
        };
        let fatal = self.journal.record_completion(&completion).err().map(|err| {
            journal_error_info(
                format!(
                    "the agent call (effect {effect_id}) finished but its completion could not be recorded: {err}; the session will show this effect as unknown, and the run stops"
                ),
                Some(result.mutation),
                Some(effect_id.clone()),
            )
        });
        let status = match outcome {
            Outcome::Ok => ToolStatus::Ok,
            Outcome::Error => ToolStatus::Error,
            Outcome::Cancelled => ToolStatus::Aborted,
        };
        Answer {
            status,
            result,
            effect_id: Some(effect_id),
            ran: true,
            fatal,
        }
    }
}

struct Executor<'a> {
    journal: &'a dyn EffectJournal,
    events: &'a Outbox,
    tool_context: &'a ToolContext,
    redactor: &'a Arc<Redactor>,
}

impl Executor<'_> {
    fn group(
        &self,
        calls: &[ToolCall],
        plans: &[Plan],
        ids: Vec<String>,
        cancel: &CancelToken,
    ) -> Vec<Answer> {
        let jobs: Vec<(&ToolCall, &Plan, String)> = calls
            .iter()
            .zip(plans)
            .zip(ids)
            .map(|((call, plan), id)| (call, plan, id))
            .collect();
        if jobs.len() == 1 {
            return jobs
                .into_iter()
                .map(|(call, plan, id)| self.execute_one(call, plan, id, cancel))
                .collect();
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|(call, plan, id)| {
                    let name = call.name.clone();
                    (
                        name,
                        scope.spawn(move || self.execute_one(call, plan, id, cancel)),
                    )
                })
                .collect();
            handles
                .into_iter()
                .map(|(name, handle)| {
                    handle.join().unwrap_or_else(|_| {
                        // A tool panicked; its effect state is unknowable.
                        Answer {
                            status: ToolStatus::Error,
                            result: ToolResult {
                                content: format!("The {name} call failed inside smith (a defect); whether it changed anything is unknown."),
                                details: serde_json::json!({"error": {"kind": "internal"}}),
                                is_error: true,
                                mutation: Mutation::Unknown,
                                media: Vec::new(),
                            },
                            effect_id: None,
                            ran: true,
                            fatal: None,
                        }
                    })
                })
                .collect()
        })
    }

    /// One effect: intent, execution, completion.
    fn execute_one(
        &self,
        call: &ToolCall,
        plan: &Plan,
        effect_id: String,
        cancel: &CancelToken,
    ) -> Answer {
        let Plan::Ready {
            tool,
            input,
            access,
        } = plan
        else {
            return Answer::unrun(
                ToolStatus::Invalid,
                "invalid call".to_owned(),
                "invalid_arguments",
            );
        };
        if cancel.is_cancelled() {
            return Answer::unrun(
                ToolStatus::Aborted,
                aborted_result_text(&call.name),
                "aborted",
            );
        }
        let intent = EffectIntent {
            effect_id: effect_id.clone(),
            parent: call.id.clone(),
            tool: call.name.clone(),
            plugin_generation: tool.plugin_generation(),
            input: input.clone(),
        };
        if let Err(err) = self.journal.record_intent(&intent) {
            let message = format!(
                "the {} call (effect {effect_id}) did not run because its intent could not be recorded: {err}; nothing was changed — fix the session store, then resume",
                call.name
            );
            let mut answer =
                Answer::unrun(ToolStatus::NotRecorded, message.clone(), "not_recorded");
            answer.fatal = Some(journal_error_info(
                message,
                Some(Mutation::NotApplied),
                Some(effect_id),
            ));
            return answer;
        }
        // A mutating effect runs between two snapshots of the project.
        let checkpoints = match access {
            Access::Mutating => self.tool_context.checkpoints(),
            Access::ReadOnly => None,
        };
        let before = checkpoints.map(|c| c.before());
        self.events.send(Event::ToolExecutionStart {
            call_id: call.id.clone(),
            name: call.name.clone(),
            effect_id: effect_id.clone(),
        });
        let updates = self.events.clone();
        let call_id = call.id.clone();
        // A registered value split across output chunks is replaced whole
        // (with nothing registered, chunks pass as they are).
        let stream = (!self.redactor.is_empty())
            .then(|| Arc::new(Mutex::new(StreamRedactor::new(Arc::clone(self.redactor)))));
        let streamed = stream.clone();
        let cx = self
            .tool_context
            .clone()
            .with_cancel(cancel.clone())
            .with_effect_id(&effect_id)
            .with_output_sink(Arc::new(move |bytes: &[u8]| {
                let output = match &streamed {
                    None => String::from_utf8_lossy(bytes).into_owned(),
                    Some(stream) => {
                        let mut out = Vec::with_capacity(bytes.len());
                        lock(stream).push(bytes, &mut out);
                        if out.is_empty() {
                            return;
                        }
                        String::from_utf8_lossy(&out).into_owned()
                    }
                };
                updates.send(Event::ToolExecutionUpdate {
                    call_id: call_id.clone(),
                    output,
                });
            }));
        // The recorded arguments keep their placeholders; the tool gets
        // the values the substitution policy authorizes for it (none by
        // default), wiped when the call returns.
        let substituted = self.redactor.substitute_json(&call.arguments, &call.name);
        let arguments = substituted.as_ref().map_or(&call.arguments, |s| s.input());
        let mut result = tool.execute(arguments, &cx);
        drop(substituted);
        if let Some(stream) = stream {
            let mut rest = Vec::new();
            lock(&stream).finish(&mut rest);
            if !rest.is_empty() {
                self.events.send(Event::ToolExecutionUpdate {
                    call_id: call.id.clone(),
                    output: String::from_utf8_lossy(&rest).into_owned(),
                });
            }
        }
        if let (Some(c), Some(before)) = (checkpoints, before) {
            // The checkpoint is history, not the effect: a failure to record
            // it leaves the effect's own records intact.
            let _ = self
                .journal
                .record_vcs(&c.after(&effect_id, &call.name, before));
        }
        redact::tool_result(self.redactor, &mut result);
        let cancelled = result.is_error && result.error_kind() == Some("cancelled");
        let outcome = if cancelled {
            Outcome::Cancelled
        } else if result.is_error {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        let output_value = serde_json::json!({
            "content": result.content,
            "details": result.details,
            "is_error": result.is_error,
        });
        // Tool output is plain JSON built by smith; should it ever fail to
        // encode, the completion still records outcome and mutation, with
        // the output replaced by the encoding error.
        let output = canonical_cbor(&output_value).unwrap_or_else(|err| {
            canonical_cbor(&serde_json::json!({ "unrecordable_output": err.message }))
                .unwrap_or_default()
        });
        let completion = EffectCompletion {
            effect_id: effect_id.clone(),
            outcome,
            mutation: result.mutation,
            output,
        };
        let fatal = self.journal.record_completion(&completion).err().map(|err| {
            journal_error_info(
                format!(
                    "the {} call (effect {effect_id}) finished with mutation state {} but its completion could not be recorded: {err}; the session will show this effect as unknown, and the run stops",
                    call.name,
                    result.mutation.as_str()
                ),
                Some(result.mutation),
                Some(effect_id.clone()),
            )
        });
        let status = match outcome {
            Outcome::Ok => ToolStatus::Ok,
            Outcome::Error => ToolStatus::Error,
            Outcome::Cancelled => ToolStatus::Aborted,
        };
        Answer {
            status,
            result,
            effect_id: Some(effect_id),
            ran: true,
            fatal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: serde_json::json!({}),
        })
    }

    fn result(id: &str) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "bash".into(),
            content: "ok".into(),
            is_error: false,
            media: Vec::new(),
        }
    }

    #[test]
    fn dangling_calls_get_aborted_results_after_their_answered_siblings() {
        let history = vec![
            Message::user("go"),
            Message::Assistant {
                content: vec![call("a"), call("b"), call("c")],
                stop: StopReason::ToolUse,
            },
            result("a"),
            Message::User {
                text: "later".into(),
                media: Vec::new(),
            },
            Message::Assistant {
                content: vec![call("d")],
                stop: StopReason::ToolUse,
            },
        ];
        let mut repaired = history.clone();
        let fixes = dangling_results(&history);
        for (position, message) in fixes {
            repaired.insert(position, message);
        }
        let ids: Vec<String> = repaired
            .iter()
            .map(|m| match m {
                Message::ToolResult {
                    call_id, content, ..
                } => {
                    format!("{call_id}:{}", content.starts_with("Aborted"))
                }
                Message::User { text, .. } => text.clone(),
                Message::Assistant { .. } => "assistant".into(),
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                "go",
                "assistant",
                "a:false",
                "b:true",
                "c:true",
                "later",
                "assistant",
                "d:true"
            ]
        );
    }
}
