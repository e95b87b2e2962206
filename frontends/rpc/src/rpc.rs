//! `smith rpc`: JSON-RPC 2.0 over standard input and output.
//!
//! The server reads LF-delimited requests (see [`crate::jsonrpc`]), turns
//! them into runtime [`Command`]s, and writes responses carrying the
//! request's id. Every runtime [`Event`] is forwarded as a notification
//! whose method is the event's `type` and whose params are the event's
//! versioned JSON projection (`docs/protocol.md`), in the runtime's order:
//! `message_start`, `message_delta`s carrying only new text, and an
//! authoritative `message_end`; tool, compaction and queue lifecycle;
//! `settled`. `state` and `messages` answers are consumed by the requests
//! that asked for them and are not forwarded.
//!
//! Two threads write: the request loop (responses) and an event pump
//! (notifications, and the `wait_settled` and `compact` responses, which
//! are written right after the `settled` or `compaction_end` notification
//! that resolves them). Standard
//! output carries only these records; diagnostics go to standard error.
//!
//! An extension plugin's question that waits (`host.ask`) goes out as a
//! `ui_question` notification with `wait: true` from the plugin's thread;
//! `ui/answer` hands the answer to the server's question broker, so the
//! request loop keeps reading while the question waits.
//!
//! The methods, their parameters and a complete example session are in
//! `docs/rpc.md`; [`METHODS`] lists them.

use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};
use smith_engine::agent::{AgentHandle, Answerer, HookAction, SessionGate, SessionOp, Verdict};
use smith_engine::protocol::{
    Command, CompactionReason, Event, Header, QueuedItem, SCHEMA_VERSION,
};
use smith_store::{Store, dump};

use crate::jsonrpc::{
    self, BLOCKED, BUSY, INVALID_PARAMS, Incoming, Output, RUNTIME_ERROR, Reader, Record, RpcError,
    STORE_ERROR, opt_str, opt_u64, req_str,
};
use crate::setup::SetupError;

mod checkpoints;
pub(crate) use checkpoints::{applied, diff as checkpoint_diff};
use smith_host::questions::{Broker, Presenter, Waiting};
use smith_host::{Runtime, RuntimeOptions, SessionChoice};

/// Every method `smith rpc` answers.
pub const METHODS: &[&str] = &[
    "initialize",
    "shutdown",
    "session/new",
    "session/open",
    "session/list",
    "session/info",
    "session/fork",
    "session/select_leaf",
    "session/dump",
    "prompt",
    "steer",
    "follow_up",
    "enqueue",
    "queue/list",
    "queue/remove",
    "queue/edit",
    "abort",
    "wait_settled",
    "state",
    "messages",
    "model/list",
    "model/set",
    "compact",
    "config/get",
    "ui/answer",
    "command",
    "checkpoint/list",
    "checkpoint/turns",
    "checkpoint/diff",
    "checkpoint/undo",
    "checkpoint/redo",
    "checkpoint/restore",
    "checkpoint/rewind",
    "jobs/list",
];

/// Every notification method `smith rpc` sends (the runtime's event types).
pub const NOTIFICATIONS: &[&str] = &[
    "agent_start",
    "agent_end",
    "settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_delta",
    "thinking_delta",
    "message_end",
    "tool_call",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "queue_changed",
    "compaction_start",
    "compaction_end",
    "model_changed",
    "provider_retry",
    "error",
    "ui_question",
    "job_ended",
];

/// The most messages one `messages` page returns.
pub const MAX_PAGE: u64 = 1000;

const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Default)]
struct St {
    /// A run (or model switch) is active or requested and its `settled`
    /// has not been seen.
    running: bool,
    settled_waiters: Vec<Value>,
    /// The id of a `compact` request waiting for its `compaction_end`.
    compact_waiter: Option<Value>,
    state_waiters: VecDeque<Sender<Event>>,
    messages_waiters: VecDeque<Sender<Event>>,
    /// While a queue removal is in flight: whether the runtime said the
    /// item was not queued.
    removal_failed: Option<bool>,
}

struct Shared {
    out: Output,
    st: Mutex<St>,
    /// The runtime now and its session's name, for [`Interrupter`].
    current: Mutex<Option<(Arc<AgentHandle>, String)>>,
}

/// Ends what a server runs from another thread (a signal's): see
/// [`RpcServer::interrupter`].
#[derive(Clone)]
pub struct Interrupter(Arc<Shared>);

impl std::fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupter")
    }
}

impl Interrupter {
    /// Aborts the running run the way the `abort` method does, waits at
    /// most `grace` for its `settled` (the abort recorded, its commands'
    /// process groups ended, the notifications written), then closes the
    /// output so nothing more is written. The name of the session open
    /// now, if any.
    pub fn end(&self, grace: Duration) -> Option<String> {
        let current = lock(&self.0.current).clone();
        if let Some((handle, _)) = &current
            && lock(&self.0.st).running
        {
            // Through the command channel (a prompt just sent starts its
            // run first) and at once (a run in a tool call).
            let _ = handle.send(Command::Abort);
            handle.abort();
            let started = std::time::Instant::now();
            while lock(&self.0.st).running && started.elapsed() < grace {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.0.out.close();
        current.map(|(_, name)| name)
    }
}

struct Current {
    handle: Arc<AgentHandle>,
    journal: Arc<smith_engine::journal::store::StoreJournal>,
    name: String,
    provider: smith_engine::provider::ProviderInfo,
    gate: Option<SessionGate>,
    answerer: Option<Answerer>,
    /// The commands the runtime's extensions provide (none without
    /// extensions).
    commands: Option<smith_plugins::hooks::Commands>,
    /// The modes input can be queued under (the runtime's queue policies).
    queue_modes: Vec<String>,
    /// The runtime's background jobs.
    jobs: Arc<smith_engine::tools::jobs::Jobs>,
    stop: Arc<AtomicBool>,
    pump: Option<JoinHandle<()>>,
}

impl Current {
    fn session_json(&self) -> Value {
        json!({"id": self.journal.session_id().to_hex(), "name": self.name})
    }

    fn shutdown(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(pump) = self.pump.take() {
            // A panicked pump has nothing left to clean up.
            let _ = pump.join();
        }
        match Arc::try_unwrap(self.handle) {
            Ok(handle) => handle.shutdown(),
            Err(handle) => handle.abort(),
        }
    }
}

/// The JSON-RPC server.
pub struct RpcServer {
    options: RuntimeOptions,
    shared: Arc<Shared>,
    current: Option<Current>,
    /// The extensions' questions that wait, answered with `ui/answer`.
    questions: Broker,
}

/// Sends each question that waits to the client as a `ui_question`
/// notification with `wait: true`.
struct Notifier(Output);

impl Presenter for Notifier {
    fn present(&self, waiting: &Waiting) {
        // A client that went away cannot answer; the question takes its
        // default when its timeout passes, and the server notices the
        // closed output itself.
        let _ = self.0.notify("ui_question", waiting_question(waiting));
    }
}

/// The params of the `ui_question` notification of a question that waits:
/// `plugin`, `id`, `kind`, `prompt`, `options` (for `select`), `default`,
/// `timeout_ms` and `wait: true`.
pub fn waiting_question(waiting: &Waiting) -> Value {
    let mut params = json!({
        "plugin": waiting.plugin,
        "id": waiting.id,
        "kind": waiting.question.kind.name(),
        "prompt": waiting.question.prompt,
        "default": waiting.question.default,
        "timeout_ms": waiting.timeout_ms,
        "wait": true,
    });
    if waiting.question.kind.name() == "select" {
        params["options"] = json!(waiting.options());
    }
    params
}

impl std::fmt::Debug for RpcServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcServer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn pump(handle: Arc<AgentHandle>, shared: Arc<Shared>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        let event = match handle.recv_timeout(Duration::from_millis(50)) {
            Ok(event) => event,
            Err(true) => continue,
            Err(false) => break,
        };
        let mut st = lock(&shared.st);
        match &event {
            Event::State { .. } | Event::Messages { .. } => {
                // Hand the answer to the oldest waiter still waiting (one
                // that timed out has dropped its receiver).
                let waiters = if matches!(event, Event::State { .. }) {
                    &mut st.state_waiters
                } else {
                    &mut st.messages_waiters
                };
                let mut answer = Some(event.clone());
                while let Some(a) = answer.take() {
                    let Some(tx) = waiters.pop_front() else {
                        answer = Some(a);
                        break;
                    };
                    if let Err(unsent) = tx.send(a) {
                        answer = Some(unsent.0);
                    }
                }
                if answer.is_none() {
                    continue;
                }
            }
            Event::Error(info)
                if info.kind == "queue_item_not_found" && st.removal_failed.is_some() =>
            {
                st.removal_failed = Some(true);
                continue;
            }
            Event::AgentStart => st.running = true,
            Event::Error(info) if info.kind == "busy" && st.compact_waiter.is_some() => {
                // The runtime refused the compaction (it was working).
                if let Some(id) = st.compact_waiter.take() {
                    let _ = shared.out.error(&id, &busy("compact"));
                }
            }
            _ => {}
        }
        let value = serde_json::to_value(&event).unwrap_or_else(|e| {
            json!({"type": "error", "kind": "internal", "message": format!("an event could not be projected to JSON: {e}")})
        });
        let method = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_owned();
        if shared.out.notify(&method, value.clone()).is_err() {
            // Standard output is gone: nobody can read anything more.
            break;
        }
        if let Event::CompactionEnd {
            reason: CompactionReason::Manual,
            ..
        } = &event
            && let Some(id) = st.compact_waiter.take()
        {
            // The answer follows its notification, like wait_settled's.
            let mut result = value;
            if let Value::Object(map) = &mut result {
                map.shift_remove("type");
            }
            let _ = shared.out.result(&id, result);
        }
        if matches!(event, Event::Settled) {
            st.running = false;
            for id in std::mem::take(&mut st.settled_waiters) {
                let _ = shared.out.result(&id, json!({"settled": true}));
            }
        }
    }
}

fn busy(method: &str) -> RpcError {
    RpcError::new(
        BUSY,
        "busy",
        format!("{method} cannot run now"),
        "the runtime is working (a run, queued input or a model switch)",
        "call abort, then wait_settled, and send the request again",
    )
}

fn setup_error(e: &SetupError) -> RpcError {
    RpcError::new(
        RUNTIME_ERROR,
        "runtime_setup",
        "the runtime could not start",
        e.message.clone(),
        "fix the cause and call session/new or session/open",
    )
}

fn store_error(what: &str, e: &smith_store::StoreError) -> RpcError {
    RpcError::new(
        STORE_ERROR,
        "store",
        what.to_owned(),
        e.to_string(),
        "check the session reference with session/list",
    )
}

impl RpcServer {
    /// A server that writes to `out` and starts its first runtime over
    /// `session`.
    ///
    /// # Errors
    ///
    /// When the first runtime cannot start.
    pub fn new(
        mut options: RuntimeOptions,
        session: &SessionChoice,
        out: Output,
    ) -> Result<Self, SetupError> {
        let questions = Broker::new();
        questions.set_presenter(Arc::new(Notifier(out.clone())));
        if options.extensions.is_some() {
            options.questions = Some(questions.asking());
        }
        let mut server = RpcServer {
            options,
            shared: Arc::new(Shared {
                out,
                st: Mutex::new(St::default()),
                current: Mutex::new(None),
            }),
            current: None,
            questions,
        };
        server.start(session)?;
        Ok(server)
    }

    fn start(&mut self, choice: &SessionChoice) -> Result<(), SetupError> {
        let Runtime {
            handle,
            journal,
            name,
            provider,
            gate,
            answerer,
            commands,
            queue_modes,
            jobs,
            ..
        } = self.options.start(choice)?;
        let handle = Arc::new(handle);
        // A job's end goes out as a `job_ended` notification.
        {
            let shared = Arc::clone(&self.shared);
            jobs.set_listener(Arc::new(move |info| {
                let params = serde_json::to_value(info).unwrap_or(Value::Null);
                let _ = shared.out.notify("job_ended", params);
            }));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let pump = {
            let (handle, shared, stop) = (
                Arc::clone(&handle),
                Arc::clone(&self.shared),
                Arc::clone(&stop),
            );
            std::thread::Builder::new()
                .name("smith-rpc-events".into())
                .spawn(move || pump(handle, shared, stop))
                .map_err(|e| SetupError {
                    message: format!(
                        "could not start the event thread: {e}; the system may be out of threads"
                    ),
                })?
        };
        *lock(&self.shared.st) = St::default();
        *lock(&self.shared.current) = Some((Arc::clone(&handle), name.clone()));
        self.current = Some(Current {
            handle,
            journal,
            name,
            provider,
            gate,
            answerer,
            commands,
            queue_modes,
            jobs,
            stop,
            pump: Some(pump),
        });
        Ok(())
    }

    fn stop_current(&mut self) {
        lock(&self.shared.current).take();
        if let Some(current) = self.current.take() {
            current.shutdown();
        }
    }

    /// What ends this server's run from another thread (after a signal),
    /// whichever session is open by then.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter(Arc::clone(&self.shared))
    }

    /// Serves requests from `input` until it ends or `shutdown` is called,
    /// then stops the runtime.
    ///
    /// # Errors
    ///
    /// Read errors of `input` and write errors of the output.
    pub fn serve(mut self, input: impl BufRead) -> std::io::Result<()> {
        let mut reader = Reader::new(input);
        let out = self.shared.out.clone();
        loop {
            let incoming = match reader.next_record()? {
                None => break,
                Some(Record::TooLong(n)) => {
                    let r = jsonrpc::too_long(n);
                    out.error(&r.id, &r.error)?;
                    continue;
                }
                Some(Record::Line(line)) => jsonrpc::parse(line),
            };
            match incoming {
                Err(rejected) => out.error(&rejected.id, &rejected.error)?,
                Ok(Incoming::Response { .. } | Incoming::Notification { .. }) => {}
                Ok(Incoming::Request { id, method, params }) => {
                    if method == "wait_settled" {
                        self.wait_settled(id)?;
                        continue;
                    }
                    if method == "compact" {
                        if let Err(error) = self.compact(&id, &params) {
                            out.error(&id, &error)?;
                        }
                        continue;
                    }
                    if method == "command" {
                        if let Err(error) = self.command(&id, &params) {
                            out.error(&id, &error)?;
                        }
                        continue;
                    }
                    let shutdown = method == "shutdown";
                    match self.call(&method, &params) {
                        Ok(result) => out.result(&id, result)?,
                        Err(error) => out.error(&id, &error)?,
                    }
                    if shutdown {
                        break;
                    }
                }
            }
        }
        if let Some(current) = &self.current {
            current.handle.abort();
        }
        self.stop_current();
        Ok(())
    }

    fn wait_settled(&mut self, id: Value) -> std::io::Result<()> {
        let mut st = lock(&self.shared.st);
        if st.running && self.current.is_some() {
            st.settled_waiters.push(id);
            Ok(())
        } else {
            self.shared.out.result(&id, json!({"settled": true}))
        }
    }

    /// Runs the extension command `name` (`/plan`, `/todo`...) with
    /// `argument`, as the interface's `/NAME ARGUMENT` does, on a thread of
    /// its own: a command may ask a question that waits, whose answer this
    /// loop must go on reading. The response is written when it returns;
    /// the actions it released apply then (a model switch, a message that
    /// starts a run when the runtime is idle).
    fn command(&self, id: &Value, params: &Value) -> Result<(), RpcError> {
        let method = "command";
        let name = req_str(method, params, "name")?;
        let name = name.strip_prefix('/').unwrap_or(name).to_owned();
        let argument = opt_str(method, params, "argument")?
            .unwrap_or_default()
            .to_owned();
        self.not_while_waiting(method)?;
        let current = self.current()?;
        let Some(commands) = current.commands.clone() else {
            return Err(RpcError::invalid_params(
                method,
                format!(
                    "no extension plugin runs in session {}, so there is no command /{name}",
                    current.name
                ),
                "the name of a command an extension plugin contributes (smith rpc without --no-plugins)",
            ));
        };
        let Some(plugin) = commands.owner(&name) else {
            return Err(RpcError::invalid_params(
                method,
                format!("no loaded extension plugin provides the command /{name}"),
                "the name of a command an extension plugin contributes, without the slash (`plan`, `normal`, `todo`...); `smith plugin list` shows the plugins and their state",
            ));
        };
        let (handle, shared, id) = (
            Arc::clone(&current.handle),
            Arc::clone(&self.shared),
            id.clone(),
        );
        let idle = !lock(&shared.st).running;
        let shown = format!("/{name}");
        std::thread::Builder::new()
            .name("smith-rpc-command".into())
            .spawn(move || {
                let answer = match commands.run(&name, &argument, idle) {
                    Ok(actions) => {
                        let mut sent = Ok(());
                        for action in actions {
                            // Like queued input, a switch or a message
                            // sent while idle starts the runtime working.
                            lock(&shared.st).running = true;
                            let command = match action {
                                HookAction::SetModel { model, .. } => Command::SetModel { model },
                                HookAction::FollowUp { text, .. } => Command::FollowUp { text },
                            };
                            if let Err(e) = handle.send(command) {
                                sent = Err(e.message);
                                break;
                            }
                        }
                        match sent {
                            Ok(()) => Ok(json!({"ran": true, "plugin": plugin})),
                            Err(why) => Err(RpcError::new(
                                RUNTIME_ERROR,
                                "runtime_stopped",
                                format!("/{name} ran, but what it asked for did not reach the runtime"),
                                why,
                                "call session/open to start it again",
                            )),
                        }
                    }
                    Err(why) => Err(RpcError::new(
                        RUNTIME_ERROR,
                        "command_failed",
                        format!("/{name} of plugin {plugin} did not run"),
                        why,
                        "check the command's name and argument; `smith plugin list` shows the plugin's state",
                    )),
                };
                // A client that went away cannot read the answer; the
                // server notices the closed output itself.
                let _ = match answer {
                    Ok(result) => shared.out.result(&id, result),
                    Err(error) => shared.out.error(&id, &error),
                };
            })
            .map_err(|e| {
                RpcError::new(
                    RUNTIME_ERROR,
                    "thread",
                    format!("{shown} did not run"),
                    format!("no thread could be started for it: {e}"),
                    "try again",
                )
            })?;
        Ok(())
    }

    /// Starts a manual compaction; the response is written when its
    /// `compaction_end` arrives (after that notification, before `settled`).
    fn compact(&mut self, id: &Value, params: &Value) -> Result<(), RpcError> {
        let method = "compact";
        let instructions = opt_str(method, params, "instructions")?.map(str::to_owned);
        {
            let mut st = lock(&self.shared.st);
            if st.running || st.compact_waiter.is_some() {
                return Err(busy(method));
            }
            self.current()?;
            st.running = true;
            st.compact_waiter = Some(id.clone());
        }
        if let Err(e) = self.send(Command::Compact { instructions }) {
            let mut st = lock(&self.shared.st);
            st.running = false;
            st.compact_waiter = None;
            return Err(e);
        }
        Ok(())
    }

    fn current(&self) -> Result<&Current, RpcError> {
        self.current.as_ref().ok_or_else(|| {
            RpcError::new(
                RUNTIME_ERROR,
                "no_session",
                "no session is open",
                "the last session switch failed",
                "call session/new or session/open",
            )
        })
    }

    fn send(&self, command: Command) -> Result<(), RpcError> {
        self.current()?.handle.send(command).map_err(|e| {
            RpcError::new(
                RUNTIME_ERROR,
                "runtime_stopped",
                "the runtime stopped",
                e.message,
                "call session/open to start it again",
            )
        })
    }

    fn require_idle(&self, method: &str) -> Result<(), RpcError> {
        if lock(&self.shared.st).running {
            return Err(busy(method));
        }
        Ok(())
    }

    /// Sends a query command and waits for its answer event.
    fn query(&self, messages: bool) -> Result<Event, RpcError> {
        let (tx, rx) = channel();
        {
            let mut st = lock(&self.shared.st);
            if messages {
                st.messages_waiters.push_back(tx);
            } else {
                st.state_waiters.push_back(tx);
            }
        }
        let sent = self.send(if messages {
            Command::GetMessages
        } else {
            Command::GetState
        });
        if let Err(e) = sent {
            let mut st = lock(&self.shared.st);
            if messages {
                st.messages_waiters.pop_back();
            } else {
                st.state_waiters.pop_back();
            }
            return Err(e);
        }
        rx.recv_timeout(QUERY_TIMEOUT).map_err(|_| {
            RpcError::new(
                RUNTIME_ERROR,
                "runtime_unresponsive",
                "the runtime did not answer a query",
                format!("no answer within {} seconds", QUERY_TIMEOUT.as_secs()),
                "call abort; if that does not help, restart smith rpc",
            )
        })
    }

    fn queue(&self) -> Result<Vec<QueuedItem>, RpcError> {
        match self.query(false)? {
            Event::State { queue, .. } => Ok(queue),
            _ => Ok(Vec::new()),
        }
    }

    fn queue_input(&self, command: Command) -> Result<Value, RpcError> {
        {
            let mut st = lock(&self.shared.st);
            // Queued input that arrives while idle starts a run at once.
            st.running = true;
        }
        self.send(command)?;
        Ok(json!({"queued": true}))
    }

    /// One request.
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => {
                let header = Header::current();
                Ok(json!({
                    "protocol": "smith-rpc",
                    "schema_version": SCHEMA_VERSION,
                    "producer": header.producer,
                    "capabilities": {
                        "methods": METHODS,
                        "notifications": NOTIFICATIONS,
                        "queue_modes": self.current.as_ref().map_or_else(
                            || vec!["steer".to_owned(), "follow_up".to_owned()],
                            |c| c.queue_modes.clone(),
                        ),
                        "compaction": true,
                        "max_page": MAX_PAGE,
                    },
                    "session": self.current.as_ref().map(Current::session_json),
                }))
            }
            "shutdown" => Ok(json!({})),
            "prompt" => {
                let text = req_str(method, params, "text")?.to_owned();
                {
                    let mut st = lock(&self.shared.st);
                    if st.running {
                        return Err(RpcError::new(
                            BUSY,
                            "busy",
                            "the prompt was not started",
                            "the runtime is already working",
                            "use steer or follow_up to queue input, or wait_settled first",
                        ));
                    }
                    self.current()?;
                    st.running = true;
                }
                if let Err(e) = self.send(Command::Prompt { text }) {
                    lock(&self.shared.st).running = false;
                    return Err(e);
                }
                Ok(json!({"started": true}))
            }
            "steer" => {
                let text = req_str(method, params, "text")?.to_owned();
                self.queue_input(Command::Steer { text })
            }
            "follow_up" => {
                let text = req_str(method, params, "text")?.to_owned();
                self.queue_input(Command::FollowUp { text })
            }
            "enqueue" => {
                let mode = req_str(method, params, "mode")?.to_owned();
                let text = req_str(method, params, "text")?.to_owned();
                let modes = &self.current()?.queue_modes;
                if !modes.contains(&mode) {
                    return Err(RpcError::invalid_params(
                        method,
                        format!(
                            "no queue policy has the mode {mode:?}; this runtime's modes are {}",
                            modes.join(", ")
                        ),
                        "one of the queue_modes initialize lists (the plugins' queue policies)",
                    ));
                }
                self.queue_input(Command::Enqueue { mode, text })
            }
            "queue/list" => Ok(json!({"items": self.queue()?})),
            "jobs/list" => Ok(json!({
                "jobs": self.current.as_ref().map(|c| c.jobs.list()).unwrap_or_default()
            })),
            "queue/remove" | "queue/edit" => {
                let id = opt_u64(method, params, "id")?.ok_or_else(|| {
                    RpcError::invalid_params(method, "\"id\" is missing", "\"id\" from queue/list")
                })?;
                let text = if method == "queue/edit" {
                    Some(req_str(method, params, "text")?.to_owned())
                } else {
                    None
                };
                let not_queued = || {
                    RpcError::new(
                        INVALID_PARAMS,
                        "queue_item_not_found",
                        format!("queued item {id} was not changed"),
                        "it is not in the queue (it may have been delivered already)",
                        "call queue/list to see the queue",
                    )
                    .with("id", id)
                };
                let queue = self.queue()?;
                let Some(item) = queue.iter().find(|i| i.id == id).cloned() else {
                    return Err(not_queued());
                };
                lock(&self.shared.st).removal_failed = Some(false);
                let sent = self.send(Command::RemoveQueued { id });
                // The answer to the removal precedes the state answer.
                let checked = sent.and_then(|()| self.query(false));
                let failed = lock(&self.shared.st).removal_failed.take() == Some(true);
                checked?;
                if failed {
                    return Err(not_queued());
                }
                match text {
                    None => Ok(json!({"removed": id})),
                    Some(text) => {
                        self.send(Command::Enqueue {
                            mode: item.mode.clone(),
                            text,
                        })?;
                        Ok(json!({"removed": id, "queued": true, "mode": item.mode}))
                    }
                }
            }
            "abort" => {
                // Through the command channel, so an abort right after a
                // prompt reaches the run that prompt started.
                let running = lock(&self.shared.st).running;
                self.send(Command::Abort)?;
                Ok(json!({"aborted": running}))
            }
            "state" => match self.query(false)? {
                Event::State {
                    provider,
                    model,
                    busy,
                    queue,
                    message_count,
                } => Ok(json!({
                    "provider": provider,
                    "model": model,
                    "busy": busy,
                    "settled": !lock(&self.shared.st).running,
                    "queue": queue,
                    "message_count": message_count,
                    "session": self.current()?.session_json(),
                    "schema_version": SCHEMA_VERSION,
                })),
                _ => Err(RpcError::new(
                    RUNTIME_ERROR,
                    "internal",
                    "the runtime answered a state query with another event",
                    "this is a defect",
                    "report it",
                )),
            },
            "messages" => {
                let offset = opt_u64(method, params, "offset")?.unwrap_or(0);
                let limit = opt_u64(method, params, "limit")?.unwrap_or(100);
                if limit == 0 || limit > MAX_PAGE {
                    return Err(RpcError::invalid_params(
                        method,
                        format!("\"limit\" is {limit}"),
                        &format!("a limit from 1 to {MAX_PAGE}"),
                    ));
                }
                let Event::Messages { messages } = self.query(true)? else {
                    return Err(RpcError::new(
                        RUNTIME_ERROR,
                        "internal",
                        "the runtime answered a messages query with another event",
                        "this is a defect",
                        "report it",
                    ));
                };
                let total = messages.len();
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
                let end = start
                    .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
                    .min(total);
                Ok(json!({
                    "total": total,
                    "offset": start,
                    "messages": messages[start..end],
                    "next_offset": if end < total { Value::from(end) } else { Value::Null },
                }))
            }
            "model/list" => {
                let current = self.current()?;
                let model = match self.query(false)? {
                    Event::State { model, .. } => model,
                    _ => String::new(),
                };
                Ok(
                    json!({"provider": current.provider.id, "models": current.provider.models, "current": model}),
                )
            }
            "model/set" => {
                let model = req_str(method, params, "model")?.to_owned();
                let current = self.current()?;
                if !current.provider.models.iter().any(|m| m.id == model) {
                    let known: Vec<&str> = current
                        .provider
                        .models
                        .iter()
                        .map(|m| m.id.as_str())
                        .collect();
                    return Err(RpcError::invalid_params(
                        method,
                        format!("provider {} has no model {model:?}", current.provider.id),
                        &format!("one of: {}", known.join(", ")),
                    ));
                }
                {
                    let mut st = lock(&self.shared.st);
                    if st.running {
                        return Err(busy(method));
                    }
                    st.running = true;
                }
                if let Err(e) = self.send(Command::SetModel {
                    model: model.clone(),
                }) {
                    lock(&self.shared.st).running = false;
                    return Err(e);
                }
                Ok(json!({"model": model}))
            }
            "config/get" => self.config_get(params),
            "ui/answer" => self.answer(method, params),
            "session/list" => {
                let store = self.store()?;
                let current = self.current.as_ref().map(|c| c.journal.session_id());
                let list = store
                    .list()
                    .map_err(|e| store_error("the sessions could not be listed", &e))?;
                let sessions: Vec<Value> = list
                    .iter()
                    .map(|s| {
                        json!({"id": s.id.to_hex(), "name": s.name, "created_ms": s.created_ms, "modified_ms": s.modified_ms, "bytes": s.bytes, "current": Some(s.id) == current})
                    })
                    .collect();
                Ok(json!({"sessions": sessions}))
            }
            "session/info" => {
                let store = self.store()?;
                let reference = self.reference(method, params)?;
                let session = store.load(&reference).map_err(|e| {
                    store_error(&format!("session {reference:?} could not be read"), &e)
                })?;
                let id = session.id();
                Ok(json!({
                    "id": id.to_hex(),
                    "name": store.name_of(id),
                    "created_ms": session.created_ms(),
                    "origin": session.origin().map(|o| json!({"session": o.session.to_hex(), "leaf": o.leaf})),
                    "entries": session.records().len(),
                    "leaves": session.leaves(),
                    "selected_leaf": session.leaf().map(|l| l.id),
                    "selected_branch_len": session.branch().len(),
                    "open_effect_intents": session.open_intents().len(),
                    "current": self.current.as_ref().map(|c| c.journal.session_id()) == Some(id),
                }))
            }
            "session/dump" => {
                let store = self.store()?;
                let reference = self.reference(method, params)?;
                let file = store.open_file(&reference).map_err(|e| {
                    store_error(&format!("session {reference:?} could not be read"), &e)
                })?;
                let mut bytes = Vec::new();
                dump::dump(file.bytes(), store.limits(), &reference, &mut bytes).map_err(|e| {
                    store_error(&format!("session {reference:?} could not be dumped"), &e)
                })?;
                let records: Vec<Value> = bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .filter_map(|l| serde_json::from_slice(l).ok())
                    .collect();
                Ok(json!({"records": records}))
            }
            "session/fork" => {
                let store = self.store()?;
                let reference = self.reference(method, params)?;
                let name = opt_str(method, params, "name")?;
                self.ask(method, &SessionOp::Fork(reference.clone()))?;
                let session = store.load(&reference).map_err(|e| {
                    store_error(&format!("session {reference:?} could not be read"), &e)
                })?;
                let fork = store.fork(&session, name).map_err(|e| {
                    store_error(&format!("session {reference:?} could not be forked"), &e)
                })?;
                Ok(
                    json!({"session": {"id": fork.id().to_hex(), "name": name}, "origin": session.id().to_hex()}),
                )
            }
            "session/new" | "session/open" => {
                self.require_idle(method)?;
                let choice = if method == "session/new" {
                    SessionChoice::New(opt_str(method, params, "name")?.map(str::to_owned))
                } else {
                    SessionChoice::Open(req_str(method, params, "session")?.to_owned())
                };
                let to = match &choice {
                    SessionChoice::New(name) => name.clone().unwrap_or_default(),
                    SessionChoice::Open(reference) => reference.clone(),
                    SessionChoice::Titled(..) | SessionChoice::Temporary => String::new(),
                };
                self.ask(method, &SessionOp::Switch(to))?;
                self.switch(&choice)
            }
            m if m.starts_with("checkpoint/") && METHODS.contains(&m) => self.checkpoint(m, params),
            "session/select_leaf" => {
                self.require_idle(method)?;
                let entry = opt_u64(method, params, "entry")?.ok_or_else(|| {
                    RpcError::invalid_params(
                        method,
                        "\"entry\" is missing",
                        "\"entry\": an entry id from session/dump",
                    )
                })?;
                let reference = self.reference(method, params)?;
                self.ask(method, &SessionOp::Fork(format!("{reference}#{entry}")))?;
                let store = self.store()?;
                let id = store.resolve(&reference).map_err(|e| {
                    store_error(&format!("session {reference:?} could not be found"), &e)
                })?;
                let is_current = self.current.as_ref().map(|c| c.journal.session_id()) == Some(id);
                if is_current {
                    self.stop_current();
                }
                let selected = store
                    .load(&id.to_hex())
                    .and_then(|mut s| store.select_leaf(&mut s, entry, None))
                    .map_err(|e| {
                        store_error(
                            &format!(
                                "entry {entry} of session {reference:?} could not be selected"
                            ),
                            &e,
                        )
                    });
                if is_current {
                    let reopened = self.switch(&SessionChoice::Open(id.to_hex()));
                    selected.as_ref().map_err(Clone::clone)?;
                    reopened?;
                }
                let switch_entry = selected?;
                Ok(json!({"session": id.to_hex(), "leaf": entry, "switch_entry": switch_entry}))
            }
            _ => Err(RpcError::method_not_found(method, METHODS)),
        }
    }

    /// `ui/answer`: the user's answer to an extension's `ui_question`. When
    /// the runtime is idle (a safe point) the actions the extension returns
    /// are applied now: a model switch, a follow-up message.
    /// A question that waits (`wait: true`) is answered through the
    /// server's broker, which the runtime does not need for it: the plugin
    /// that asked is blocked on the agent's thread until then.
    fn answer(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let plugin = req_str(method, params, "plugin")?;
        let id = req_str(method, params, "id")?;
        let answer = req_str(method, params, "answer")?;
        if self.questions.knows(id) {
            self.questions.answer(id, answer).map_err(|refused| {
                RpcError::invalid_params(
                    method,
                    refused.to_string(),
                    "the id of a ui_question that still waits and an answer it accepts",
                )
            })?;
            return Ok(json!({"delivered": true}));
        }
        self.not_while_waiting(method)?;
        let current = self.current()?;
        let Some(answerer) = current.answerer.as_ref() else {
            return Err(RpcError::invalid_params(
                method,
                format!(
                    "no extension plugin runs in session {}, so none asked question {id:?}",
                    current.name
                ),
                "the plugin and id of a ui_question notification",
            ));
        };
        let idle = !lock(&self.shared.st).running;
        let actions = answerer
            .answer(plugin, id, answer, idle)
            .map_err(|message| {
                RpcError::invalid_params(
                    method,
                    message,
                    "the plugin and id of a ui_question notification not answered yet",
                )
            })?;
        for action in actions {
            match action {
                HookAction::SetModel { model, .. } => {
                    lock(&self.shared.st).running = true;
                    self.send(Command::SetModel { model })?;
                }
                HookAction::FollowUp { text, .. } => {
                    self.queue_input(Command::FollowUp { text })?;
                }
            }
        }
        Ok(json!({"delivered": true}))
    }

    /// A busy error while a plugin waits for the answer to a question: the
    /// plugins are held until it is answered, so a request that reaches
    /// them would keep this loop from reading that answer.
    fn not_while_waiting(&self, method: &str) -> Result<(), RpcError> {
        if self.questions.waiting() == 0 {
            return Ok(());
        }
        Err(RpcError::new(
            BUSY,
            "busy",
            format!("{method} cannot run now"),
            "an extension plugin waits for the answer to a question (a ui_question with wait: true), and its plugins are held until then",
            "answer the question with ui/answer (or let it time out), then send the request again",
        ))
    }

    /// Asks the current runtime's extensions about `op` before `method`
    /// does it; an error when one blocks it.
    fn ask(&self, method: &str, op: &SessionOp) -> Result<(), RpcError> {
        let Some(gate) = self.current.as_ref().and_then(|c| c.gate.as_ref()) else {
            return Ok(());
        };
        self.not_while_waiting(method)?;
        match gate.ask(op) {
            Verdict::Block { by, reason } => Err(RpcError::new(
                BLOCKED,
                "blocked",
                format!("{method} did not run"),
                format!("the extension {by} blocked it: {reason}"),
                format!("disable the extension (`smith plugin disable {by}`) to do it"),
            )
            .with("plugin", by)
            .with("reason", reason)),
            Verdict::Allow | Verdict::Replace { .. } => Ok(()),
        }
    }

    fn switch(&mut self, choice: &SessionChoice) -> Result<Value, RpcError> {
        let previous = self
            .current
            .as_ref()
            .map(|c| c.journal.session_id().to_hex());
        self.stop_current();
        match self.start(choice) {
            Ok(()) => Ok(json!({"session": self.current()?.session_json()})),
            Err(e) => {
                if let Some(previous) = previous
                    && let Err(again) = self.start(&SessionChoice::Open(previous.clone()))
                {
                    eprintln!(
                        "smith: could not reopen session {previous} after a failed switch: {again}"
                    );
                }
                Err(setup_error(&e))
            }
        }
    }

    fn store(&self) -> Result<Store, RpcError> {
        Store::open(&self.options.store_root)
            .map_err(|e| store_error("the session store could not be opened", &e))
    }

    fn reference(&self, method: &str, params: &Value) -> Result<String, RpcError> {
        match opt_str(method, params, "session")? {
            Some(r) => Ok(r.to_owned()),
            None => Ok(self.current()?.journal.session_id().to_hex()),
        }
    }

    fn config_get(&self, params: &Value) -> Result<Value, RpcError> {
        let method = "config/get";
        let key = opt_str(method, params, "key")?;
        let sources = matches!(params.get("sources"), Some(Value::Bool(true)));
        let config_error = |e: smith_config::ConfigError| {
            RpcError::new(
                RUNTIME_ERROR,
                "config",
                "the configuration could not be loaded",
                e.to_string(),
                "fix the configuration file named in the message",
            )
        };
        let config = smith_config::Loader::from_process()
            .map_err(config_error)?
            .start_dir(&self.options.cwd)
            .load()
            .map_err(config_error)?;
        match key {
            Some(key) => config
                .entry(key)
                .map(|e| e.to_json(sources))
                .ok_or_else(|| {
                    let known: Vec<&str> = config.entries().iter().map(|e| e.decl.key).collect();
                    RpcError::invalid_params(
                        method,
                        format!("there is no option {key:?}"),
                        &format!("one of: {}", known.join(", ")),
                    )
                }),
            None => Ok(
                json!({"options": config.entries().iter().map(|e| e.to_json(sources)).collect::<Vec<_>>()}),
            ),
        }
    }
}
