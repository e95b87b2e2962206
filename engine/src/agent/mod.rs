//! The agent runtime: one loop behind the protocol, on its own threads.
//!
//! [`spawn`] starts two threads and returns an [`AgentHandle`]:
//!
//! - the **control** thread reads [`Command`]s from a bounded channel and
//!   answers at once: it queues steering and follow-up input, cancels the
//!   running work on `abort`, answers state queries, and hands prompts to
//!   the worker;
//! - the **worker** thread runs the loop: provider request → validated
//!   stream → tool batch → queued input → next request, until an explicit
//!   stop (no tool calls and nothing queued, turn limit, budget, abort,
//!   error).
//!
//! Events flow out over a bounded channel; a slow consumer slows the loop
//! instead of growing memory. See [`run`] for the loop's rules and the
//! crate's `docs/protocol.md` for what a frontend observes.

pub mod compact;
pub mod delegate;
pub mod hooks;
pub mod queue;
pub(crate) mod redact;
pub(crate) mod run;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::journal::{EffectJournal, SessionEvent, SessionSink};
use crate::protocol::{Command, ErrorInfo, Event};
use crate::provider::{Message, Pricing, Provider, Transport};
use crate::tools::{CancelToken, ToolContext, ToolSet};

pub use compact::{CompactionRecord, CompactionSettings};
pub use hooks::{Answerer, HookAction, Hooks, Interrupt, SessionGate, SessionOp, Verdict};
pub use queue::{
    DeclaredPolicy, Delivery, DeliveryPoint, FollowUp, Queue, QueuePolicy, Steer, default_policies,
};
pub use run::{
    aborted_result_text, blocked_result_text, dangling_results, read_only_result_text,
    skipped_result_text,
};

/// Stops a run when usage passes a bound. Unknown usage never exceeds a
/// budget (it is unknown, not zero).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    /// Maximum input + output tokens over the run.
    pub max_tokens: Option<u64>,
    /// Maximum cost in US dollars over the run (needs a known price).
    pub max_cost: Option<f64>,
}

/// How the runtime behaves.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The model id sent in requests.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// Stop after this many turns in one run (zero: the input is kept in
    /// the conversation and no request is sent).
    pub max_turns: Option<u32>,
    /// Stop when this budget is exceeded.
    pub budget: Budget,
    /// The output token limit sent in requests.
    pub max_output_tokens: Option<u32>,
    /// Prices; when `None`, the provider's model info is used; when that is
    /// unknown too, costs are unknown.
    pub pricing: Option<Pricing>,
    /// How many times cut-off output is continued per run (3).
    pub max_continuations: u32,
    /// The conversation so far (a resumed session); dangling tool calls get
    /// `aborted` results at spawn.
    pub history: Vec<Message>,
    /// How many older messages of a resumed session `history` leaves out,
    /// and their bytes (a resume bounded by the model's window decodes only
    /// the newest part); the first compaction's summary says they were left
    /// out.
    pub history_omitted: Option<(usize, u64)>,
    /// Effects already in the session; new effect ids continue after it.
    pub first_effect_seq: u64,
    /// A counter of effect numbers shared with the other sources of effects
    /// in the session (plugin host effects), so every `fx-N` is unique.
    /// When given it must hold `first_effect_seq`; without it the runtime
    /// counts alone from `first_effect_seq`.
    pub effect_ids: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Record a model change for `model` at spawn.
    pub record_model: bool,
    /// Capacity of the event channel.
    pub event_capacity: usize,
    /// Capacity of the command channel.
    pub command_capacity: usize,
    /// When and how the conversation is compacted.
    pub compaction: CompactionSettings,
    /// Replaces registered secrets with their placeholders in everything
    /// the runtime sends to the provider, records or emits (see
    /// `redact`); empty by default. The embedding builds it from every
    /// credential it can see.
    pub redactor: Arc<smith_secrets::Redactor>,
    /// Subagents (the `agent` tool); `None`: calls of a tool named `agent`
    /// run as any tool's.
    pub delegation: Option<delegate::Delegation>,
}

impl AgentConfig {
    /// Defaults for `model`: no limits, three continuations, empty history.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: None,
            max_turns: None,
            budget: Budget::default(),
            max_output_tokens: None,
            pricing: None,
            max_continuations: 3,
            history: Vec::new(),
            history_omitted: None,
            first_effect_seq: 0,
            effect_ids: None,
            record_model: true,
            event_capacity: 256,
            command_capacity: 64,
            compaction: CompactionSettings::default(),
            redactor: Arc::new(smith_secrets::Redactor::empty()),
            delegation: None,
        }
    }
}

/// What the runtime works with.
pub struct Services {
    /// The provider (built-in or plugin-backed).
    pub provider: Box<dyn Provider>,
    /// The host transport.
    pub transport: Arc<dyn Transport>,
    /// The active tools.
    pub tools: ToolSet,
    /// The invocation context template (cwd, roots, limits, read tracker);
    /// each call gets a clone with the run's cancellation token.
    pub tool_context: ToolContext,
    /// Durable effect records.
    pub journal: Arc<dyn EffectJournal>,
    /// Durable conversation records.
    pub sink: Arc<dyn SessionSink>,
    /// Queue policies, in delivery priority order.
    pub policies: Vec<Arc<dyn QueuePolicy>>,
}

impl Services {
    /// The usual services: `provider` over the host transport (local
    /// exchanges; live providers bring their own transport), the built-in
    /// tools working in `tool_context`, `journal` recording both effects and
    /// the conversation, and the default queue policies.
    pub fn local<J>(provider: Box<dyn Provider>, tool_context: ToolContext, journal: Arc<J>) -> Self
    where
        J: EffectJournal + SessionSink + 'static,
    {
        Self {
            provider,
            transport: Arc::new(crate::provider::HostTransport),
            tools: ToolSet::builtin(),
            tool_context,
            journal: journal.clone(),
            sink: journal,
            policies: default_policies(),
        }
    }
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("tools", &self.tools)
            .field("tool_context", &self.tool_context)
            .finish_non_exhaustive()
    }
}

/// The runtime could not start or was used after it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentError {
    /// What happened, why, and what to do next.
    pub message: String,
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AgentError {}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock means a thread panicked while holding it; the data is
    // still structurally valid, and refusing to continue would lose more.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// State both threads see.
pub(crate) struct Shared {
    pub(crate) queue: Mutex<Queue>,
    pub(crate) cancel: Mutex<CancelToken>,
    /// Stops plugin calls in flight (provider and hooks) on abort.
    pub(crate) interrupters: Vec<Interrupt>,
    pub(crate) busy: AtomicBool,
    pub(crate) provider_id: String,
    pub(crate) model: Mutex<String>,
    pub(crate) messages: Mutex<Vec<Message>>,
}

impl Shared {
    /// Aborts the current run: cancels its token and interrupts any plugin
    /// call in flight (a plugin that ignores it is stopped after its grace).
    pub(crate) fn abort(&self) {
        lock(&self.cancel).cancel();
        for interrupt in &self.interrupters {
            interrupt();
        }
    }
}

pub(crate) enum Work {
    Run(Option<String>, CancelToken),
    SetModel(String),
    Compact(Option<String>, CancelToken),
    Shutdown,
}

/// The frontend's end of a running runtime.
///
/// The handle is `Send + Sync`: one thread may read events while others
/// send commands (events are read under a lock; there is one consumer).
pub struct AgentHandle {
    commands: SyncSender<Command>,
    events: Mutex<Receiver<Event>>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("busy", &self.shared.busy.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl AgentHandle {
    /// Sends a command.
    ///
    /// # Errors
    ///
    /// When the runtime has shut down.
    pub fn send(&self, command: Command) -> Result<(), AgentError> {
        self.commands.send(command).map_err(|_| AgentError {
            message: "the agent runtime has shut down and takes no more commands; start a new one"
                .to_owned(),
        })
    }

    /// The next event; `None` once the runtime has shut down and every
    /// event was read.
    pub fn recv(&self) -> Option<Event> {
        lock(&self.events).recv().ok()
    }

    /// The next event within `timeout`; `Err(true)` on timeout, `Err(false)`
    /// when the runtime has shut down.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Event, bool> {
        lock(&self.events)
            .recv_timeout(timeout)
            .map_err(|err| err == RecvTimeoutError::Timeout)
    }

    /// The next event if one is ready.
    pub fn try_recv(&self) -> Option<Event> {
        lock(&self.events).try_recv().ok()
    }

    /// Compacts the conversation now (only when idle), with optional
    /// instructions for the summary; the same as sending
    /// [`Command::Compact`]. Progress arrives as `compaction_start`, one
    /// `compaction_end` carrying the outcome, then `settled`; while the
    /// agent is busy it answers with an error event of kind `busy`.
    /// [`AgentHandle::abort`] cancels a running compaction and leaves the
    /// conversation and the session unchanged.
    ///
    /// # Errors
    ///
    /// When the runtime has shut down.
    pub fn compact(&self, instructions: Option<&str>) -> Result<(), AgentError> {
        self.send(Command::Compact {
            instructions: instructions.map(str::to_owned),
        })
    }

    /// Aborts the current run immediately, without going through the
    /// command channel (for signal handlers).
    pub fn abort(&self) {
        self.shared.abort();
    }

    /// A function that aborts the current run from any thread (the same
    /// effect as [`AgentHandle::abort`]), for handlers that outlive a borrow.
    pub fn abort_fn(&self) -> impl Fn() + Send + Sync + 'static {
        let shared = Arc::clone(&self.shared);
        move || shared.abort()
    }

    /// Shuts the runtime down and waits for its threads. Events not yet
    /// read are dropped.
    pub fn shutdown(mut self) {
        // Ignoring the result: a runtime that already stopped needs nothing.
        let _ = self.commands.send(Command::Shutdown);
        self.shared.abort();
        // Drain so the worker never blocks on a full event channel.
        let events = lock(&self.events);
        while events.recv().is_ok() {}
        drop(events);
        for thread in self.threads.drain(..) {
            // A panicked thread has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

/// Starts a runtime.
///
/// Before returning it repairs the history: every tool call without a
/// result gets an `aborted` result, recorded through the sink; and it
/// records the model when [`AgentConfig::record_model`] is set.
///
/// # Errors
///
/// When a repair or model record cannot be made durable, or a thread
/// cannot be started.
pub fn spawn(config: AgentConfig, services: Services) -> Result<AgentHandle, AgentError> {
    spawn_with(config, services, None)
}

/// Starts an agent whose runs consult `hooks` at their decision points and
/// apply the hooks' actions at safe points (see [`hooks`]).
///
/// # Errors
///
/// As [`spawn`].
pub fn spawn_with_hooks(
    config: AgentConfig,
    services: Services,
    hooks: Box<dyn Hooks>,
) -> Result<AgentHandle, AgentError> {
    spawn_with(config, services, Some(hooks))
}

fn spawn_with(
    mut config: AgentConfig,
    services: Services,
    hooks: Option<Box<dyn Hooks>>,
) -> Result<AgentHandle, AgentError> {
    let info = services.provider.describe();
    if config.pricing.is_none() {
        config.pricing = info
            .models
            .iter()
            .find(|m| m.id == config.model)
            .and_then(|m| m.pricing);
    }
    let journal_error = |err: crate::journal::JournalError| AgentError {
        message: format!(
            "the agent could not start because a session record could not be made durable: {err}"
        ),
    };
    if config.record_model {
        services
            .sink
            .record(&SessionEvent::ModelChange {
                provider: info.id.clone(),
                model: config.model.clone(),
            })
            .map_err(journal_error)?;
    }
    // Text that entered before the secrets were known (a resumed history,
    // the system prompt) is redacted before anything is sent or recorded.
    if let Some(system) = &mut config.system {
        redact::text(&config.redactor, system);
    }
    let mut history = std::mem::take(&mut config.history);
    for message in &mut history {
        redact::message(&config.redactor, message);
    }
    for (position, result) in dangling_results(&history) {
        services
            .sink
            .record(&SessionEvent::Message {
                message: result.clone(),
                meta: crate::journal::MessageMeta {
                    status: Some(crate::protocol::ToolStatus::Aborted),
                    ..Default::default()
                },
            })
            .map_err(journal_error)?;
        history.insert(position, result);
    }
    let interrupters: Vec<Interrupt> = services
        .provider
        .interrupter()
        .into_iter()
        .chain(hooks.as_ref().and_then(|h| h.interrupter()))
        .collect();
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::new(services.policies.clone())),
        cancel: Mutex::new(CancelToken::new()),
        interrupters,
        busy: AtomicBool::new(false),
        provider_id: info.id,
        model: Mutex::new(config.model.clone()),
        messages: Mutex::new(history.clone()),
    });
    let (command_tx, command_rx) = sync_channel::<Command>(config.command_capacity.max(1));
    let (event_tx, event_rx) = sync_channel::<Event>(config.event_capacity.max(1));
    let (work_tx, work_rx) = sync_channel::<Work>(1);

    let control_redactor = Arc::clone(&config.redactor);
    let runner = run::Runner::new(
        config,
        services,
        history,
        Arc::clone(&shared),
        event_tx.clone(),
        work_tx.clone(),
        hooks,
    );
    let spawn_error = |err: std::io::Error| AgentError {
        message: format!(
            "could not start an agent thread: {err}; the system may be out of threads or memory"
        ),
    };
    let worker = std::thread::Builder::new()
        .name("smith-agent".into())
        .spawn(move || runner.serve(work_rx))
        .map_err(spawn_error)?;
    let control_shared = Arc::clone(&shared);
    let control = std::thread::Builder::new()
        .name("smith-agent-control".into())
        .spawn(move || {
            control_loop(
                command_rx,
                control_shared,
                event_tx,
                work_tx,
                &control_redactor,
            );
        })
        .map_err(spawn_error)?;
    Ok(AgentHandle {
        commands: command_tx,
        events: Mutex::new(event_rx),
        shared,
        threads: vec![control, worker],
    })
}

fn error_event(kind: &str, message: String) -> Event {
    Event::Error(ErrorInfo {
        kind: kind.to_owned(),
        message,
        mutation: None,
        effect_id: None,
        retry_after_ms: None,
    })
}

/// Starts a run if the agent is idle; `false` when it is busy.
pub(crate) fn try_start(shared: &Shared, work: &SyncSender<Work>, prompt: Option<String>) -> bool {
    if shared.busy.swap(true, Ordering::SeqCst) {
        return false;
    }
    let token = CancelToken::new();
    *lock(&shared.cancel) = token.clone();
    // The worker is idle, so the work slot is free unless a shutdown is
    // pending there; never block on it (the worker itself may be calling).
    if work.try_send(Work::Run(prompt, token)).is_err() {
        shared.busy.store(false, Ordering::SeqCst);
        return false;
    }
    true
}

fn control_loop(
    commands: Receiver<Command>,
    shared: Arc<Shared>,
    events: SyncSender<Event>,
    work: SyncSender<Work>,
    redactor: &smith_secrets::Redactor,
) {
    let emit = |mut event: Event| {
        // Queued input and state echo text the user gave: redacted like
        // every event.
        redact::event(redactor, &mut event);
        // A frontend that stopped listening needs no more events.
        let _ = events.send(event);
    };
    let queue_changed = |shared: &Shared| Event::QueueChanged {
        items: lock(&shared.queue).snapshot(),
    };
    for command in commands.iter() {
        match command {
            Command::Prompt { text } => {
                if !try_start(&shared, &work, Some(text)) {
                    emit(error_event(
                        "busy",
                        "the agent is already working, so the prompt was not started; send it as steer (interrupts) or follow_up (after the current work)".to_owned(),
                    ));
                }
            }
            Command::Steer { text } => enqueue(&shared, &work, &emit, "steer", text),
            Command::FollowUp { text } => enqueue(&shared, &work, &emit, "follow_up", text),
            Command::Enqueue { mode, text } => enqueue(&shared, &work, &emit, &mode, text),
            Command::RemoveQueued { id } => {
                if lock(&shared.queue).remove(id) {
                    emit(queue_changed(&shared));
                } else {
                    emit(error_event(
                        "queue_item_not_found",
                        format!(
                            "no queued item has id {id}; it may have been delivered already — send get_state to see the queue"
                        ),
                    ));
                }
            }
            Command::ClearQueue => {
                lock(&shared.queue).clear();
                emit(queue_changed(&shared));
            }
            Command::Abort => shared.abort(),
            Command::SetModel { model } => {
                if shared.busy.swap(true, Ordering::SeqCst) {
                    emit(error_event(
                        "busy",
                        format!(
                            "the model cannot change to {model:?} while the agent is working; abort or wait for settled, then send set_model again"
                        ),
                    ));
                } else if work.try_send(Work::SetModel(model)).is_err() {
                    shared.busy.store(false, Ordering::SeqCst);
                }
            }
            Command::Compact { instructions } => {
                if shared.busy.swap(true, Ordering::SeqCst) {
                    emit(error_event(
                        "busy",
                        "the conversation cannot be compacted while the agent is working; abort or wait for settled, then send compact again".to_owned(),
                    ));
                } else {
                    let token = CancelToken::new();
                    *lock(&shared.cancel) = token.clone();
                    if work.try_send(Work::Compact(instructions, token)).is_err() {
                        shared.busy.store(false, Ordering::SeqCst);
                    }
                }
            }
            Command::GetState => {
                let event = Event::State {
                    provider: shared.provider_id.clone(),
                    model: lock(&shared.model).clone(),
                    busy: shared.busy.load(Ordering::SeqCst),
                    queue: lock(&shared.queue).snapshot(),
                    message_count: lock(&shared.messages).len(),
                };
                emit(event);
            }
            Command::GetMessages => {
                let messages = lock(&shared.messages).clone();
                emit(Event::Messages { messages });
            }
            Command::Shutdown => break,
        }
    }
    shared.abort();
    // The worker may be mid-run; it sees the cancellation, then this.
    let _ = work.send(Work::Shutdown);
}

fn enqueue(
    shared: &Shared,
    work: &SyncSender<Work>,
    emit: &dyn Fn(Event),
    mode: &str,
    text: String,
) {
    let pushed = lock(&shared.queue).push(mode, text);
    match pushed {
        Ok(_) => {
            emit(Event::QueueChanged {
                items: lock(&shared.queue).snapshot(),
            });
            // An idle agent delivers queued input right away.
            try_start(shared, work, None);
        }
        Err(message) => emit(error_event("unknown_queue_mode", message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handle_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<AgentHandle>();
    }
}
