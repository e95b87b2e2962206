//! `smith acp`: the Agent Client Protocol (version 1) over standard input
//! and output, so editors drive smith's runtime.
//!
//! The server reads LF-delimited JSON-RPC records ([`crate::jsonrpc`]).
//! Each ACP session is one smith runtime recording into one smith session
//! (its ACP session id is the smith session's id), started in the
//! session's working directory. A `session/prompt` becomes a runtime
//! prompt; the runtime's events stream out as `session/update`
//! notifications in the runtime's order, and the prompt is answered with
//! its stop reason once the runtime has settled. `session/cancel` aborts
//! the run (tool work included) and the prompt answers `cancelled`.
//!
//! The extension plugins' questions — smith/permissions asking before a
//! call runs — go to the client as `session/request_permission` about
//! the call they concern ([`permission`]); the request loop keeps reading
//! while they wait, so the client's answer (and a cancel) get through.
//!
//! What the client's `initialize` offers of its files and terminals
//! becomes the session's tool backends ([`editor`]): the file tools read
//! and write through `fs/*`, and `bash` runs in `terminal/*` while the
//! mode is `full`; the request loop routes the answers to the waiting
//! tool.
//!
//! Two kinds of thread write: the request loop (responses, the replay of
//! `session/load`) and one event pump per session (updates, and the
//! `session/prompt` answer right after the run's last update). The
//! mapping from events to updates is in [`map`] and `docs/acp.md`.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};
use smith_engine::agent::AgentHandle;
use smith_engine::approval::{Approval, ApprovalCell};
use smith_engine::journal::store::StoreJournal;
use smith_engine::protocol::{Command, ErrorInfo, Event, Header, Role, StopCause};
use smith_engine::provider::{Message, ToolCall};
use smith_host::questions::Asking;
use smith_host::{Runtime, RuntimeOptions, SessionChoice};
use smith_plugins::hooks::Commands;

use crate::jsonrpc::{
    self, BUSY, INVALID_PARAMS, Incoming, Output, RUNTIME_ERROR, Reader, Record, RpcError, req_str,
};
use crate::setup::SetupError;

mod client;
mod editor;
pub(crate) mod map;
mod permission;

use client::Client;

/// The ACP protocol version smith speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Every method `smith acp` answers.
pub const METHODS: &[&str] = &[
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
];

/// The session modes: smith's approval modes, with what each lets tools do.
const MODES: [(&str, &str, &str); 4] = [
    (
        "ask",
        "Ask",
        "ask before every call that can change something",
    ),
    (
        "workspace",
        "Workspace",
        "edit inside the project and run sandboxed commands without asking",
    ),
    (
        "read-only",
        "Read only",
        "refuse every call that can change something",
    ),
    (
        "full",
        "Full access",
        "run everything unsandboxed without asking",
    ),
];

/// The notifications `smith acp` takes.
pub const CLIENT_NOTIFICATIONS: &[&str] = &["session/cancel"];

const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A call of the current batch, between its announcement and its end.
pub(crate) struct LiveCall {
    pub(crate) call: ToolCall,
    /// Whether a permission request was sent about it.
    pub(crate) asked: bool,
    /// A `write`'s target as it was when the call was announced.
    old: Option<String>,
    /// Live output so far (the tail).
    output: String,
    /// The journal's effect id of the call, once it started.
    pub(crate) effect: Option<String>,
    /// The editor's terminal the call's command runs in.
    pub(crate) terminal: Option<String>,
}

#[derive(Default)]
pub(crate) struct St {
    /// A run is active or requested and its `settled` has not been seen.
    running: bool,
    /// The id of the `session/prompt` request the run answers.
    prompt: Option<Value>,
    /// How the run ended (`agent_end`).
    stop: Option<StopCause>,
    /// The run's last error.
    error: Option<ErrorInfo>,
    /// The client cancelled the run.
    cancelled: bool,
    /// Whether the current assistant message streamed its text and
    /// reasoning (else `message_end` carries them).
    text_streamed: bool,
    thinking_streamed: bool,
    pub(crate) calls: Vec<LiveCall>,
    /// Who waits for a `messages` answer.
    messages: Option<Sender<Vec<Message>>>,
    /// The id of a `session/set_config_option` waiting for its switch.
    model_waiter: Option<Value>,
    /// The models offered, for the answer to a model change.
    models: Vec<String>,
}

/// What a session's pump, its permission asker and the request loop share.
pub(crate) struct SessionShared {
    id: OnceLock<String>,
    /// The session's name: `acp-<time>` until a new session's first prompt
    /// names it.
    name: Mutex<String>,
    cwd: PathBuf,
    out: Output,
    /// The model the runtime uses now.
    model: Mutex<String>,
    pub(crate) st: Mutex<St>,
    /// Signalled when a call is announced.
    pub(crate) changed: Condvar,
}

impl SessionShared {
    /// The ACP session id.
    pub(crate) fn id(&self) -> &str {
        self.id.get().map_or("", String::as_str)
    }

    fn notify(&self, update: Value) -> std::io::Result<()> {
        self.out
            .notify("session/update", map::update(self.id(), update))
    }
}

struct Session {
    shared: Arc<SessionShared>,
    handle: Arc<AgentHandle>,
    /// The approval mode the runtime's tools and permission policy share.
    approval: ApprovalCell,
    /// The extensions' commands (`/approval` sets the mode).
    commands: Option<Commands>,
    /// The models the provider offers.
    models: Vec<String>,
    stop: Arc<AtomicBool>,
    pump: Option<JoinHandle<()>>,
    /// The session's journal, to name a new session after its first
    /// prompt.
    journal: Arc<StoreJournal>,
    /// Whether the session is new and still has the name it was created
    /// with (`acp-<time>`).
    titled: bool,
}

impl Session {
    /// The `modes` of a session response.
    fn modes(&self) -> Value {
        json!({
            "currentModeId": self.approval.get().as_str(),
            "availableModes": MODES
                .iter()
                .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
                .collect::<Vec<_>>(),
        })
    }

    /// The `configOptions` of a session: the model.
    fn config_options(&self) -> Value {
        let current = lock(&self.shared.model).clone();
        json!([{
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": current,
            "options": self.models.iter().map(|m| json!({"value": m, "name": m})).collect::<Vec<_>>(),
        }])
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

type Running = Arc<Mutex<Vec<(Arc<SessionShared>, Arc<AgentHandle>)>>>;

/// Ends what a server runs from another thread (a signal's): see
/// [`AcpServer::interrupter`].
#[derive(Clone)]
pub struct AcpInterrupter {
    out: Output,
    sessions: Running,
}

impl std::fmt::Debug for AcpInterrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AcpInterrupter")
    }
}

impl AcpInterrupter {
    /// Aborts every session's running run, waits at most `grace` for them
    /// to settle (the abort recorded, their commands' process groups
    /// ended, the updates written), then closes the output. The name of
    /// the session that ran (or the last one opened), if any.
    pub fn end(&self, grace: Duration) -> Option<String> {
        let sessions = lock(&self.sessions).clone();
        let mut name = None;
        for (shared, handle) in &sessions {
            if lock(&shared.st).running {
                let _ = handle.send(Command::Abort);
                handle.abort();
                name = Some(lock(&shared.name).clone());
            }
        }
        let started = std::time::Instant::now();
        while started.elapsed() < grace && sessions.iter().any(|(s, _)| lock(&s.st).running) {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.out.close();
        name.or_else(|| sessions.last().map(|(s, _)| lock(&s.name).clone()))
    }
}

/// The ACP server.
pub struct AcpServer {
    options: RuntimeOptions,
    /// The approval mode each new session starts in.
    approval: Approval,
    out: Output,
    client: Arc<Client>,
    sessions: HashMap<String, Session>,
    running: Running,
    /// What the client said it can do (`initialize`).
    client_capabilities: Value,
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpServer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn busy(what: &str) -> RpcError {
    RpcError::new(
        BUSY,
        "busy",
        format!("{what} cannot run now"),
        "the session is working on a prompt",
        "send session/cancel, wait for the prompt's answer, then send it again",
    )
}

fn setup_error(e: &SetupError) -> RpcError {
    RpcError::new(
        RUNTIME_ERROR,
        "runtime_setup",
        "the session could not start",
        e.message.clone(),
        "fix the cause and call session/new or session/load again",
    )
}

fn runtime_stopped(e: smith_engine::agent::AgentError) -> RpcError {
    RpcError::new(
        RUNTIME_ERROR,
        "runtime_stopped",
        "the session's runtime stopped",
        e.message,
        "call session/load with the session's id to start it again",
    )
}

/// The `cwd` of a session request: an absolute path to a directory.
fn cwd(method: &str, params: &Value) -> Result<PathBuf, RpcError> {
    let dir = req_str(method, params, "cwd")?;
    let path = Path::new(dir);
    if !path.is_absolute() {
        return Err(RpcError::invalid_params(
            method,
            format!("\"cwd\" is {dir:?}, a relative path"),
            "\"cwd\" as an absolute path to the project's directory",
        ));
    }
    if !path.is_dir() {
        return Err(RpcError::invalid_params(
            method,
            format!("\"cwd\" {dir:?} is not a directory"),
            "\"cwd\" as the absolute path of an existing directory",
        ));
    }
    Ok(path.to_owned())
}

/// The text of a prompt's content blocks: text as it is, resource links
/// as Markdown links, embedded text resources in a `<context>` element.
fn prompt_text(method: &str, params: &Value) -> Result<String, RpcError> {
    let Some(blocks) = params.get("prompt").and_then(Value::as_array) else {
        return Err(RpcError::invalid_params(
            method,
            "\"prompt\" is missing or not a list",
            "\"prompt\" as a list of content blocks",
        ));
    };
    let mut text = String::new();
    for (i, block) in blocks.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => text.push_str(block["text"].as_str().unwrap_or_default()),
            "resource_link" => {
                let uri = block["uri"].as_str().unwrap_or_default();
                let name = block["name"].as_str().unwrap_or(uri);
                text.push_str(&format!("[{name}]({uri})"));
            }
            "resource" if block["resource"]["text"].is_string() => {
                let uri = block["resource"]["uri"].as_str().unwrap_or_default();
                let body = block["resource"]["text"].as_str().unwrap_or_default();
                text.push_str(&format!("\n<context uri=\"{uri}\">\n{body}\n</context>\n"));
            }
            other => {
                return Err(RpcError::invalid_params(
                    method,
                    format!(
                        "content block {i} of \"prompt\" is of type {other:?}, which smith does not take (its promptCapabilities offer no images, audio or binary resources)"
                    ),
                    "text, resource_link or text resource blocks",
                ));
            }
        }
    }
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params(
            method,
            "the prompt has no text",
            "at least one non-empty text block",
        ));
    }
    Ok(text)
}

impl AcpServer {
    /// A server that writes to `out` and starts one runtime per session
    /// from `options` (its `cwd` replaced by the session's), each in the
    /// approval mode `approval`.
    pub fn new(options: RuntimeOptions, approval: Approval, out: Output) -> Self {
        AcpServer {
            options,
            approval,
            client: Arc::new(Client::new(out.clone())),
            out,
            sessions: HashMap::new(),
            running: Arc::new(Mutex::new(Vec::new())),
            client_capabilities: json!({}),
        }
    }

    /// What ends this server's runs from another thread (after a signal).
    pub fn interrupter(&self) -> AcpInterrupter {
        AcpInterrupter {
            out: self.out.clone(),
            sessions: Arc::clone(&self.running),
        }
    }

    /// Serves requests from `input` until it ends, then stops every
    /// session's runtime (a running prompt is aborted and recorded).
    ///
    /// # Errors
    ///
    /// Read errors of `input` and write errors of the output.
    pub fn serve(mut self, input: impl BufRead) -> std::io::Result<()> {
        let mut reader = Reader::new(input);
        let out = self.out.clone();
        loop {
            let incoming = match reader.next_record()? {
                None => break,
                Some(Record::TooLong(n)) => {
                    let r = jsonrpc::too_long(n);
                    out.error(&r.id, &r.error)?;
                    continue;
                }
                // The client's answer to a permission request.
                Some(Record::Line(line)) if self.client.take_response(line) => continue,
                Some(Record::Line(line)) => jsonrpc::parse(line),
            };
            match incoming {
                Err(rejected) => out.error(&rejected.id, &rejected.error)?,
                Ok(Incoming::Response { .. }) => {}
                Ok(Incoming::Notification { method, params }) => {
                    if method == "session/cancel" {
                        self.cancel(&params);
                    }
                    // Other notifications ($/cancel_request, extensions)
                    // need nothing.
                }
                Ok(Incoming::Request { id, method, params }) => {
                    match self.call(&id, &method, &params) {
                        Ok(Some(result)) => out.result(&id, result)?,
                        Ok(None) => {}
                        Err(error) => out.error(&id, &error)?,
                    }
                }
            }
        }
        for session in self.sessions.values() {
            let _ = session.handle.send(Command::Abort);
            session.handle.abort();
        }
        self.client.clear();
        lock(&self.running).clear();
        for (_, session) in self.sessions.drain() {
            session.shutdown();
        }
        Ok(())
    }

    /// `session/cancel`: aborts the session's run, tool work included.
    fn cancel(&self, params: &Value) {
        let Some(session) = params
            .get("sessionId")
            .and_then(Value::as_str)
            .and_then(|id| self.sessions.get(id))
        else {
            return;
        };
        let mut st = lock(&session.shared.st);
        if st.running {
            st.cancelled = true;
            drop(st);
            // Through the command channel (a prompt just sent starts its
            // run first) and at once (a run in a tool call).
            let _ = session.handle.send(Command::Abort);
            session.handle.abort();
        }
    }

    fn session(&self, method: &str, params: &Value) -> Result<&Session, RpcError> {
        let id = req_str(method, params, "sessionId")?;
        self.sessions.get(id).ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                "unknown_session",
                format!("{method}: no session {id:?} is open here"),
                "sessions are opened with session/new or session/load on this connection",
                "call session/new, or session/load with the id of a smith session",
            )
            .with("sessionId", id)
        })
    }

    /// A new session's first prompt names it (`acp-<time>` becomes
    /// `fix-the-login-bug`, numbered when taken); a prompt with no usable
    /// words keeps the name it has, and a failed rename is logged and
    /// changes nothing else.
    fn name_after_first_prompt(
        &mut self,
        method: &str,
        params: &Value,
        text: &str,
    ) -> Result<(), RpcError> {
        self.session(method, params)?;
        let id = req_str(method, params, "sessionId")?;
        let Some(session) = self.sessions.get_mut(id) else {
            return Ok(());
        };
        if !std::mem::take(&mut session.titled) {
            return Ok(());
        }
        let Some(base) = smith_store::name_from_text(text) else {
            return Ok(());
        };
        match session.journal.rename_titled(&base) {
            Ok(name) => *lock(&session.shared.name) = name,
            Err(err) => {
                let name = lock(&session.shared.name).clone();
                eprintln!(
                    "smith acp: the session keeps the name {name}: it could not be renamed to {base:?} after its first prompt ({err}); the prompt is sent all the same; rename it with `smith session rename {name} NEW-NAME`"
                );
            }
        }
        Ok(())
    }

    /// One request; `None` when its answer comes later (a prompt's).
    fn call(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
    ) -> Result<Option<Value>, RpcError> {
        match method {
            "initialize" => {
                self.client_capabilities = params
                    .get("clientCapabilities")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                let header = Header::current();
                Ok(Some(json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                        "mcpCapabilities": {"http": false, "sse": false},
                        "sessionCapabilities": {},
                    },
                    "authMethods": [],
                    "agentInfo": {
                        "name": "smith",
                        "title": "smith",
                        "version": header.producer.strip_prefix("smith ").unwrap_or(&header.producer),
                    },
                })))
            }
            // No authentication methods are offered: credentials are
            // smith's own (`smith auth`).
            "authenticate" => Ok(Some(json!({}))),
            "session/new" => {
                let dir = cwd(method, params)?;
                let name = format!("acp-{}", smith_store::now_ms());
                let session_id = self.open(&SessionChoice::New(Some(name)), dir, None)?;
                let session = &self.sessions[&session_id];
                Ok(Some(json!({
                    "sessionId": session_id,
                    "modes": session.modes(),
                    "configOptions": session.config_options(),
                })))
            }
            "session/load" => {
                let dir = cwd(method, params)?;
                let requested = req_str(method, params, "sessionId")?.to_owned();
                if let Some(open) = self.sessions.get(&requested) {
                    if lock(&open.shared.st).running {
                        return Err(busy(method));
                    }
                    self.close(&requested);
                }
                self.open(
                    &SessionChoice::Open(requested.clone()),
                    dir.clone(),
                    Some(requested.clone()),
                )?;
                let messages = self.messages(&requested)?;
                let session = self.session(method, params)?;
                for update in map::replay(&messages, &dir) {
                    session.shared.notify(update).map_err(|e| {
                        RpcError::new(
                            RUNTIME_ERROR,
                            "output",
                            "the session's history could not be sent",
                            e.to_string(),
                            "the client may have gone away",
                        )
                    })?;
                }
                Ok(Some(json!({
                    "modes": session.modes(),
                    "configOptions": session.config_options(),
                })))
            }
            "session/prompt" => {
                let text = prompt_text(method, params)?;
                self.name_after_first_prompt(method, params, &text)?;
                let session = self.session(method, params)?;
                {
                    let mut st = lock(&session.shared.st);
                    if st.running || st.prompt.is_some() {
                        return Err(busy("the prompt"));
                    }
                    st.running = true;
                    st.prompt = Some(id.clone());
                    st.stop = None;
                    st.error = None;
                    st.cancelled = false;
                }
                if let Err(e) = session.handle.send(Command::Prompt { text }) {
                    let mut st = lock(&session.shared.st);
                    st.running = false;
                    st.prompt = None;
                    return Err(runtime_stopped(e));
                }
                Ok(None)
            }
            "session/set_mode" => {
                let mode = req_str(method, params, "modeId")?;
                let Some(approval) = Approval::parse(mode) else {
                    let known: Vec<&str> = MODES.iter().map(|m| m.0).collect();
                    return Err(RpcError::invalid_params(
                        method,
                        format!("there is no mode {mode:?}"),
                        &format!("\"modeId\" as one of: {}", known.join(", ")),
                    ));
                };
                let session = self.session(method, params)?;
                match &session.commands {
                    // Through the permission policy's `/approval`, so the
                    // policy and the tools change together. On a thread
                    // of its own: the policy may be waiting for the
                    // answer to a permission request, which this loop
                    // must go on reading.
                    Some(commands) if commands.owner("approval").is_some() => {
                        let (commands, out, id, mode) = (
                            commands.clone(),
                            self.out.clone(),
                            id.clone(),
                            mode.to_owned(),
                        );
                        let settled = !lock(&session.shared.st).running;
                        std::thread::Builder::new()
                            .name("smith-acp-mode".into())
                            .spawn(move || {
                                let _ = match commands.run("approval", &mode, settled) {
                                    Ok(_) => out.result(&id, json!({})),
                                    Err(why) => out.error(
                                        &id,
                                        &RpcError::new(
                                            RUNTIME_ERROR,
                                            "mode",
                                            format!("the mode did not change to {mode:?}"),
                                            why,
                                            "check `smith plugin list` for smith/permissions",
                                        ),
                                    ),
                                };
                            })
                            .map_err(|e| {
                                RpcError::new(
                                    RUNTIME_ERROR,
                                    "thread",
                                    "the mode could not be changed",
                                    format!("no thread could be started: {e}"),
                                    "try again",
                                )
                            })?;
                        Ok(None)
                    }
                    _ => {
                        session.approval.set(approval);
                        Ok(Some(json!({})))
                    }
                }
            }
            "session/set_config_option" => {
                let config = req_str(method, params, "configId")?;
                if config != "model" {
                    return Err(RpcError::invalid_params(
                        method,
                        format!("there is no option {config:?}"),
                        "\"configId\": \"model\"",
                    ));
                }
                let model = req_str(method, params, "value")?.to_owned();
                let session = self.session(method, params)?;
                if !session.models.contains(&model) {
                    return Err(RpcError::invalid_params(
                        method,
                        format!("the provider has no model {model:?}"),
                        &format!("\"value\" as one of: {}", session.models.join(", ")),
                    ));
                }
                {
                    let mut st = lock(&session.shared.st);
                    if st.running {
                        return Err(busy("a model change"));
                    }
                    st.model_waiter = Some(id.clone());
                    st.running = true;
                }
                if let Err(e) = session.handle.send(Command::SetModel { model }) {
                    let mut st = lock(&session.shared.st);
                    st.model_waiter = None;
                    st.running = false;
                    return Err(runtime_stopped(e));
                }
                Ok(None)
            }
            _ => Err(RpcError::method_not_found(method, METHODS)),
        }
    }

    /// Starts a runtime for `choice` in `dir`; its ACP session id is `key`
    /// or else the smith session's id.
    fn open(
        &mut self,
        choice: &SessionChoice,
        dir: PathBuf,
        key: Option<String>,
    ) -> Result<String, RpcError> {
        let shared = Arc::new(SessionShared {
            id: OnceLock::new(),
            name: Mutex::new(String::new()),
            cwd: dir.clone(),
            out: self.out.clone(),
            model: Mutex::new(String::new()),
            st: Mutex::new(St::default()),
            changed: Condvar::new(),
        });
        let mut options = self.options.clone();
        options.cwd = dir;
        let approval = ApprovalCell::new(self.approval);
        options.approval = approval.clone();
        // What the client offered: its files for the file tools, its
        // terminals for unsandboxed commands.
        options.backends = editor::backends(&self.client_capabilities, &self.client, &shared);
        if options.extensions.is_some() {
            let (client, session) = (Arc::clone(&self.client), Arc::clone(&shared));
            options.questions = Some(Asking(Arc::new(move |plugin, question, stop| {
                permission::ask(&client, &session, plugin, question, stop)
            })));
        }
        let Runtime {
            handle,
            journal,
            name,
            model,
            provider,
            commands,
            ..
        } = options
            .start(choice)
            .map_err(|e| setup_error(&SetupError::from(e)))?;
        let id = key.unwrap_or_else(|| journal.session_id().to_hex());
        let _ = shared.id.set(id.clone());
        *lock(&shared.name) = name;
        *lock(&shared.model) = model;
        let models: Vec<String> = provider.models.iter().map(|m| m.id.clone()).collect();
        lock(&shared.st).models.clone_from(&models);
        let handle = Arc::new(handle);
        let stop = Arc::new(AtomicBool::new(false));
        let pump = {
            let (handle, shared, stop) =
                (Arc::clone(&handle), Arc::clone(&shared), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("smith-acp-events".into())
                .spawn(move || pump(&handle, &shared, &stop))
                .map_err(|e| {
                    setup_error(&SetupError::new(format!(
                        "could not start the event thread: {e}; the system may be out of threads"
                    )))
                })?
        };
        lock(&self.running).push((Arc::clone(&shared), Arc::clone(&handle)));
        self.sessions.insert(
            id.clone(),
            Session {
                shared,
                handle,
                approval,
                commands,
                models,
                stop,
                pump: Some(pump),
                journal,
                titled: matches!(choice, SessionChoice::New(_)),
            },
        );
        Ok(id)
    }

    fn close(&mut self, id: &str) {
        if let Some(session) = self.sessions.remove(id) {
            lock(&self.running).retain(|(s, _)| !Arc::ptr_eq(s, &session.shared));
            session.shutdown();
        }
    }

    /// The conversation of session `id`, asked of its runtime.
    fn messages(&self, id: &str) -> Result<Vec<Message>, RpcError> {
        let unresponsive = || {
            RpcError::new(
                RUNTIME_ERROR,
                "runtime_unresponsive",
                "the runtime did not answer a query for the session's messages",
                format!("no answer within {} seconds", QUERY_TIMEOUT.as_secs()),
                "load the session again; if that does not help, restart smith acp",
            )
        };
        let Some(session) = self.sessions.get(id) else {
            return Err(unresponsive());
        };
        let (tx, rx) = channel();
        lock(&session.shared.st).messages = Some(tx);
        session
            .handle
            .send(Command::GetMessages)
            .map_err(runtime_stopped)?;
        rx.recv_timeout(QUERY_TIMEOUT).map_err(|_| unresponsive())
    }
}

/// Forwards one session's events as updates until `stop` or the end of
/// its event stream.
fn pump(handle: &AgentHandle, shared: &SessionShared, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let event = match handle.recv_timeout(Duration::from_millis(50)) {
            Ok(event) => event,
            Err(true) => continue,
            Err(false) => break,
        };
        if forward(shared, event).is_err() {
            // Standard output is gone: nobody can read anything more.
            break;
        }
    }
}

/// Turns one event into updates (and, at `settled`, the prompt's answer).
fn forward(shared: &SessionShared, event: Event) -> std::io::Result<()> {
    let mut st = lock(&shared.st);
    match event {
        Event::AgentStart => st.running = true,
        Event::MessageStart {
            role: Role::Assistant,
        } => {
            st.text_streamed = false;
            st.thinking_streamed = false;
        }
        Event::MessageDelta { text } => {
            st.text_streamed = true;
            shared.notify(map::chunk("agent_message_chunk", &text))?;
        }
        Event::ThinkingDelta { text } => {
            st.thinking_streamed = true;
            shared.notify(map::chunk("agent_thought_chunk", &text))?;
        }
        Event::MessageEnd {
            message: Message::Assistant { content, .. },
            ..
        } => {
            // A response that did not stream says it all at its end.
            for block in content {
                match block {
                    smith_engine::provider::ContentBlock::Thinking { text, .. }
                        if !st.thinking_streamed && !text.is_empty() =>
                    {
                        shared.notify(map::chunk("agent_thought_chunk", &text))?;
                    }
                    smith_engine::provider::ContentBlock::Text { text }
                        if !st.text_streamed && !text.is_empty() =>
                    {
                        shared.notify(map::chunk("agent_message_chunk", &text))?;
                    }
                    _ => {}
                }
            }
        }
        Event::ToolCall { call } => {
            let old = map::old_text(&call, &shared.cwd);
            shared.notify(map::tool_call(&call, &shared.cwd, old.as_deref()))?;
            st.calls.push(LiveCall {
                call,
                asked: false,
                old,
                output: String::new(),
                effect: None,
                terminal: None,
            });
            shared.changed.notify_all();
        }
        Event::ToolExecutionStart {
            call_id, effect_id, ..
        } => {
            shared.notify(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
            }))?;
            // An editor terminal the call opens is shown in it.
            if let Some(live) = st.calls.iter_mut().find(|c| c.call.id == call_id) {
                live.effect = Some(effect_id);
                shared.changed.notify_all();
            }
        }
        Event::ToolExecutionUpdate { call_id, output } => {
            if let Some(live) = st.calls.iter_mut().find(|c| c.call.id == call_id) {
                live.output.push_str(&output);
                if live.output.len() > map::MAX_LIVE_OUTPUT {
                    let mut cut = live.output.len() - map::MAX_LIVE_OUTPUT;
                    while !live.output.is_char_boundary(cut) {
                        cut += 1;
                    }
                    live.output.drain(..cut);
                }
                let body = live.output.clone();
                shared.notify(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "content": [map::content(&body)],
                }))?;
            }
        }
        Event::ToolExecutionEnd {
            call_id,
            name,
            status,
            content,
            details,
            mutation,
            effect_id,
        } => {
            let index = st.calls.iter().position(|c| c.call.id == call_id);
            let live = index.map(|i| st.calls.remove(i));
            let mut body = Vec::new();
            // The editor keeps showing a released terminal's output.
            if let Some(terminal) = live.as_ref().and_then(|l| l.terminal.as_deref()) {
                body.push(json!({"type": "terminal", "terminalId": terminal}));
            }
            if status == smith_engine::protocol::ToolStatus::Ok
                && let Some(live) = &live
                && let Some(diff) = map::diff(&live.call, &shared.cwd, live.old.as_deref())
            {
                body.push(diff);
            }
            if !content.is_empty() {
                body.push(map::content(&content));
            }
            let mut raw = json!({"tool": name, "status": status, "details": details});
            if let Some(mutation) = mutation {
                raw["mutation"] = json!(mutation);
            }
            if let Some(effect_id) = effect_id {
                raw["effect_id"] = json!(effect_id);
            }
            shared.notify(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": map::status(status),
                "content": body,
                "rawOutput": raw,
            }))?;
            // The todo list the call wrote is the agent's plan.
            if status == smith_engine::protocol::ToolStatus::Ok
                && let Some(plan) = live.as_ref().and_then(|live| map::plan(&live.call))
            {
                shared.notify(plan)?;
            }
        }
        Event::ModelChanged { model, .. } => {
            lock(&shared.model).clone_from(&model);
            if let Some(id) = st.model_waiter.take() {
                let options = json!([{
                    "id": "model",
                    "name": "Model",
                    "category": "model",
                    "type": "select",
                    "currentValue": model,
                    "options": st.models.iter().map(|m| json!({"value": m, "name": m})).collect::<Vec<_>>(),
                }]);
                shared.out.result(&id, json!({"configOptions": options}))?;
            }
        }
        Event::Error(info) if st.model_waiter.is_some() && st.prompt.is_none() => {
            if let Some(id) = st.model_waiter.take() {
                shared.out.error(
                    &id,
                    &RpcError::new(
                        RUNTIME_ERROR,
                        "model",
                        "the model did not change",
                        format!("{}: {}", info.kind, info.message),
                        "fix the cause named here and choose the model again",
                    ),
                )?;
            }
        }
        Event::Error(info) => st.error = Some(info),
        Event::AgentEnd { stop, .. } => st.stop = Some(stop),
        Event::Messages { messages } => {
            if let Some(tx) = st.messages.take() {
                let _ = tx.send(messages);
            }
        }
        Event::Settled => {
            st.running = false;
            st.calls.clear();
            if let Some(id) = st.prompt.take() {
                match answer(&st) {
                    Ok(reason) => shared.out.result(&id, json!({"stopReason": reason}))?,
                    Err(error) => shared.out.error(&id, &error)?,
                }
            }
            st.cancelled = false;
        }
        _ => {}
    }
    Ok(())
}

/// The answer to a prompt whose run settled: its stop reason, or the
/// error that ended it.
fn answer(st: &St) -> Result<&'static str, RpcError> {
    if st.cancelled {
        return Ok("cancelled");
    }
    let kind = st.error.as_ref().map(|e| e.kind.as_str());
    match st.stop {
        Some(stop) => map::stop_reason(stop, kind).ok_or_else(|| run_error(st.error.as_ref())),
        // No run started: the input was refused before it was sent.
        None if kind == Some("blocked") => Ok("refusal"),
        None => match &st.error {
            Some(error) => Err(run_error(Some(error))),
            None => Ok("end_turn"),
        },
    }
}

fn run_error(error: Option<&ErrorInfo>) -> RpcError {
    let (kind, message) = error.map_or(("unknown", "the run failed without detail"), |e| {
        (e.kind.as_str(), e.message.as_str())
    });
    RpcError::new(
        RUNTIME_ERROR,
        "run_failed",
        "the prompt's run failed",
        format!("{kind}: {message}"),
        "fix the cause named here and send the prompt again; the session keeps what was done",
    )
    .with("error_kind", kind)
}
