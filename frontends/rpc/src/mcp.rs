//! `smith mcp`: a Model Context Protocol server over stdio.
//!
//! A client spawns `smith mcp` and talks JSON-RPC 2.0 over its standard
//! input and output (LF-delimited, see [`crate::jsonrpc`]). The server
//! speaks both eras of MCP on the same stream, deciding per request:
//!
//! - **stateless** (revision [`LATEST_PROTOCOL_VERSION`], 2026-07-28): a
//!   request whose `_meta` carries [`META_PROTOCOL_VERSION`] names its
//!   revision itself, with [`META_CLIENT_CAPABILITIES`]; there is no
//!   handshake and nothing is remembered between requests. `server/discover`
//!   answers the supported revisions, capabilities and identity. Results
//!   carry `resultType: "complete"`, and cacheable results (discover, the
//!   lists, `resources/read`) carry `ttlMs` and `cacheScope`. A revision
//!   this server does not serve per request is refused with
//!   [`UNSUPPORTED_PROTOCOL_VERSION`] listing [`PROTOCOL_VERSIONS`]; a
//!   missing capabilities key is an invalid-params error.
//! - **handshake** ([`HANDSHAKE_VERSIONS`], 2024-11-05 … 2025-11-25): a
//!   request without that `_meta` key follows the negotiated `initialize`
//!   era. `initialize` echoes a requested handshake revision and otherwise
//!   answers [`LATEST_HANDSHAKE_VERSION`] (the stateless revision has no
//!   handshake, so `initialize` never answers it); results have the shapes
//!   of those revisions, without `resultType` or cache hints.
//!
//! What it serves:
//!
//! - **tools**: the built-in tools with their JSON Schemas. A `tools/call`
//!   goes through the same tool contract and effect journal as the agent
//!   loop: the arguments are validated first (a rejected call is a tool
//!   error and nothing runs), the intent is made durable in the server's
//!   session before the effect starts, and the completion after. A call
//!   whose intent cannot be recorded does not run.
//! - **progress**: when a call carries `_meta.progressToken`, the server
//!   sends `notifications/progress` once the effect starts (progress 0) and
//!   then as live output arrives (progress = bytes of output so far,
//!   message = the newest output, at most one notification per
//!   [`PROGRESS_INTERVAL`]).
//! - **cancellation**: `notifications/cancelled` for a running call
//!   cancels its effect (bash gets its process group terminated); the
//!   completion is recorded as `cancelled` and, as the protocol asks, no
//!   response is sent for the cancelled request.
//! - **extension plugins** ([`McpServer::with_plugins`]): their
//!   `tool-call` decision runs before each call (a blocked call is a tool
//!   error and nothing runs); their questions that wait are asked through
//!   `elicitation/create` when the client declared `elicitation` at
//!   `initialize`, else answered by the server's policy (see the `elicit`
//!   module).
//! - **resources**: every stored session is a resource
//!   `smith://session/<id>`; reading one returns its dump (JSON Lines, one
//!   entry per line).
//!
//! Calls run on their own threads, so the server keeps reading (and can
//! take a cancellation) while a call runs.
//!
//! UI intents ([`deliver_intent`]): only `progress` has an MCP translation
//! (progress notifications, while a request with a progress token runs);
//! every other intent degrades by the policy it declares — dropped,
//! refused with an error event to the plugin, or persisted in the session.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_engine::journal::store::StoreJournal;
use smith_engine::journal::{
    BUILTIN_GENERATION, EffectCompletion, EffectIntent, EffectJournal, MAX_INPUT_BYTES, Outcome,
    canonical_cbor,
};
use smith_engine::tools::{Access, CancelToken, Tool, ToolContext, ToolSet};
use smith_store::{Store, dump};

use crate::elicit::Elicit;
use crate::jsonrpc::{
    self, INVALID_PARAMS, Incoming, Output, Reader, Record, RpcError, opt_str, req_str,
};
use crate::setup::SetupError;
use smith_engine::agent::{Hooks, Verdict, blocked_result_text};
use smith_engine::provider::ToolCall;
use smith_host::SessionChoice;
use smith_host::extensions::{Headless, load_for_runtime, session_hooks, warn};
use smith_host::questions::Policy;
use smith_host::session::{open as open_destination, warn_unknown_effects};

/// The newest revision this server speaks (the stateless one).
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";

/// Revisions served per request, without a handshake, newest first.
pub const STATELESS_VERSIONS: &[&str] = &["2026-07-28"];

/// The newest revision reachable through the `initialize` handshake.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";

/// Revisions negotiated by `initialize`, newest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Every revision this server speaks, newest first (as `server/discover`
/// and the unsupported-version error list them).
pub const PROTOCOL_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// The `_meta` key naming a stateless request's revision.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key carrying a stateless request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The result `_meta` key carrying the server's identity (discover).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// MCP's "unsupported protocol version" error code (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How long clients may reuse the tool list and the discover result: the
/// built-in tools do not change while the server runs.
pub const STATIC_TTL_MS: u64 = 3_600_000;

/// The URI prefix of session resources.
pub const SESSION_URI: &str = "smith://session/";

/// The MIME type of a session resource (its dump).
pub const SESSION_MIME: &str = "application/x-ndjson";

/// The least time between two output-driven progress notifications of one
/// call.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// MCP's "resource not found" error code.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The methods this server answers.
pub const METHODS: &[&str] = &[
    "server/discover",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How to start the MCP server.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// The tools' working directory.
    pub cwd: PathBuf,
    /// The session store root.
    pub store_root: PathBuf,
    /// The session that records the effects.
    pub session: SessionChoice,
    /// The approval mode the tools run under (the sandbox follows it).
    pub approval: smith_engine::approval::ApprovalCell,
}

/// The revision `initialize` answers: the requested one when it is a
/// handshake revision, otherwise [`LATEST_HANDSHAKE_VERSION`].
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| HANDSHAKE_VERSIONS.iter().find(|v| **v == r).copied())
        .unwrap_or(LATEST_HANDSHAKE_VERSION)
}

/// Which era a request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// A stateless request of this revision (its `_meta` names it).
    Stateless(&'static str),
    /// A request of the negotiated `initialize` era.
    Handshake,
}

/// The era of a request from its params' `_meta` (see the module docs).
///
/// # Errors
///
/// [`UNSUPPORTED_PROTOCOL_VERSION`] for a revision this server does not
/// speak; invalid params for a malformed version or a stateless request
/// without client capabilities.
pub fn request_era(method: &str, params: &Value) -> Result<Era, RpcError> {
    let meta = params.get("_meta");
    let Some(version) = meta.and_then(|m| m.get(META_PROTOCOL_VERSION)) else {
        return Ok(Era::Handshake);
    };
    let Some(version) = version.as_str() else {
        return Err(RpcError::invalid_params(
            method,
            format!("_meta \"{META_PROTOCOL_VERSION}\" is {version}"),
            "a protocol revision string such as \"2026-07-28\"",
        ));
    };
    if let Some(known) = STATELESS_VERSIONS.iter().find(|v| **v == version) {
        if meta
            .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
            .is_none_or(|c| !c.is_object())
        {
            return Err(RpcError::invalid_params(
                method,
                format!("_meta has no \"{META_CLIENT_CAPABILITIES}\" object"),
                &format!(
                    "\"{META_CLIENT_CAPABILITIES}\": {{}} (or the client's capabilities) beside \"{META_PROTOCOL_VERSION}\", as revision {version} requires on every request"
                ),
            ));
        }
        return Ok(Era::Stateless(known));
    }
    if HANDSHAKE_VERSIONS.contains(&version) {
        // A handshake-era client stamping its revision: handshake semantics.
        return Ok(Era::Handshake);
    }
    Err(RpcError::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        "unsupported_protocol_version",
        format!("protocol revision {version:?} is not supported"),
        format!(
            "this server speaks {} per request and {} through initialize",
            STATELESS_VERSIONS.join(", "),
            HANDSHAKE_VERSIONS.join(", ")
        ),
        format!("retry with \"{META_PROTOCOL_VERSION}\": \"{LATEST_PROTOCOL_VERSION}\", or send initialize"),
    )
    .with("supported", PROTOCOL_VERSIONS)
    .with("requested", version))
}

/// Adds the stateless result fields to `result`: `resultType`, and for a
/// cacheable result its cache hints.
pub fn stateless_result(mut result: Value, cache: Option<(u64, &str)>) -> Value {
    if let Value::Object(map) = &mut result {
        map.insert("resultType".to_owned(), json!("complete"));
        if let Some((ttl, scope)) = cache {
            map.insert("ttlMs".to_owned(), json!(ttl));
            map.insert("cacheScope".to_owned(), json!(scope));
        }
    }
    result
}

/// The cache hints of a method's stateless result, if it is cacheable.
fn cache_hints(method: &str) -> Option<(u64, &'static str)> {
    match method {
        "server/discover" | "tools/list" | "resources/templates/list" => {
            Some((STATIC_TTL_MS, "public"))
        }
        // Sessions change with every recorded effect.
        "resources/list" | "resources/read" => Some((0, "private")),
        _ => None,
    }
}

/// The MCP tool description of a built-in tool.
pub fn tool_json(tool: &dyn Tool) -> Value {
    let def = tool.definition();
    let read_only = def.access == Access::ReadOnly;
    let mut title = def.name.clone();
    if let Some(first) = title.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    json!({
        "name": def.name,
        "title": title,
        "description": def.description,
        "inputSchema": def.parameters,
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": !read_only,
            "idempotentHint": read_only,
            "openWorldHint": def.name == "bash",
        },
    })
}

struct Inflight {
    cancel: CancelToken,
    cancelled_by_client: bool,
}

struct Calls {
    out: Output,
    tools: ToolSet,
    context: ToolContext,
    journal: Arc<StoreJournal>,
    next_effect: Arc<AtomicU64>,
    inflight: Mutex<HashMap<String, Inflight>>,
    /// The extension plugins' decisions (`tool-call`), when loaded.
    hooks: Option<Mutex<Box<dyn Hooks>>>,
    /// Every credential smith can see: redacted from what is recorded and
    /// answered, substituted into arguments where the policy allows.
    secrets: smith_host::secrets::RuntimeSecrets,
}

/// Ends the calls a server runs from another thread (a signal's): see
/// [`McpServer::interrupter`].
#[derive(Clone)]
pub struct McpInterrupter(Arc<Calls>);

impl std::fmt::Debug for McpInterrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpInterrupter")
    }
}

impl McpInterrupter {
    /// Cancels every running call the way `notifications/cancelled` does
    /// (bash gets its process group terminated), waits at most `grace` for
    /// their completions to be recorded and answered, then closes the
    /// output so nothing more is written.
    pub fn end(&self, grace: Duration) {
        for call in lock(&self.0.inflight).values() {
            call.cancel.cancel();
        }
        let started = Instant::now();
        while !lock(&self.0.inflight).is_empty() && started.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.0.out.close();
    }
}

/// The MCP server.
pub struct McpServer {
    calls: Arc<Calls>,
    store_root: PathBuf,
    session_name: String,
    workers: Vec<JoinHandle<()>>,
    elicit: Arc<Elicit>,
    approval: smith_engine::approval::ApprovalCell,
    /// The sandbox the tools and the plugins' processes run in.
    sandbox: Arc<smith_engine::tools::Sandbox>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("store_root", &self.store_root)
            .field("session", &self.session_name)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Opens the session that records effects and prepares the tools.
    ///
    /// # Errors
    ///
    /// When the working directory or the session cannot be used.
    pub fn new(options: &McpOptions, out: Output) -> Result<Self, SetupError> {
        // The same sandbox a runtime's tools get: confined while the
        // approval mode is not `full`.
        let sandbox = smith_host::sandbox::for_runtime(&options.cwd);
        let context = ToolContext::new(&options.cwd)
            .map_err(|e| SetupError {
                message: format!("cannot work in {}: {e}", options.cwd.display()),
            })?
            .with_approval(options.approval.clone())
            .with_sandbox(Arc::clone(&sandbox))
            // A client has no bash_output or bash_kill to follow a job
            // with: no background jobs, and a command is killed at its
            // timeout.
            .with_limits(smith_engine::tools::Limits {
                bash_on_timeout: smith_engine::tools::jobs::OnTimeout::Kill,
                bash_max_jobs: 0,
                ..smith_engine::tools::Limits::default()
            });
        let destination = open_destination(&options.store_root, &options.session)?;
        warn_unknown_effects(&destination);
        let (secrets, recordable) = smith_host::secrets::process_registry();
        if recordable
            && let Err(err) = destination
                .journal
                .record_secret_registrations(&secrets.registrations())
        {
            smith_diag::log::report(&smith_diag::Diagnostic::warning(
                "secrets.not-recorded",
                "the secrets this server redacts were not recorded in the session",
                format!("the session store refused the entries: {err}"),
                "nothing else changes: they are redacted all the same; check the session store (`smith session repair`)",
            ));
        }
        if recordable {
            secrets.record_later(Arc::clone(&destination.journal));
        }
        Ok(McpServer {
            elicit: Arc::new(Elicit::new(out.clone())),
            calls: Arc::new(Calls {
                out,
                tools: ToolSet::builtin(),
                context,
                journal: destination.journal,
                next_effect: Arc::new(AtomicU64::new(destination.last_effect_seq)),
                inflight: Mutex::new(HashMap::new()),
                hooks: None,
                secrets,
            }),
            store_root: options.store_root.clone(),
            session_name: destination.name,
            workers: Vec::new(),
            approval: options.approval.clone(),
            sandbox,
        })
    }

    /// Loads the enabled extension plugins (as every frontend does,
    /// `smith_host::extensions`): their `tool-call` decisions run before
    /// each `tools/call`, and their questions that wait are asked through
    /// MCP elicitation when the client declared it at `initialize`, else
    /// answered by `policy`. Plugins that cannot load are left out with a
    /// warning on standard error. Call before [`McpServer::serve`].
    #[must_use]
    pub fn with_plugins(mut self, policy: Policy) -> Self {
        let asking = self.elicit.asking(policy);
        let Some(calls) = Arc::get_mut(&mut self.calls) else {
            return self;
        };
        let cwd = calls.context.cwd().to_path_buf();
        let (plugins, _config, warnings) = load_for_runtime(
            &calls.journal,
            &calls.next_effect,
            Some(&asking),
            &(Arc::clone(&self.sandbox), self.approval.clone()),
            &cwd,
        );
        let frontend = Headless {
            name: "mcp",
            journal: Some(Arc::clone(&calls.journal)),
            asker: None,
        };
        for warning in &warnings {
            warn(warning);
        }
        calls.hooks = session_hooks(
            plugins,
            Box::new(frontend),
            &calls.journal.session_id().to_hex(),
        )
        .map(|hooks| {
            let hooks = hooks.with_drop_records(smith_host::extensions::drop_recorder(Arc::clone(
                &calls.journal,
            )));
            Mutex::new(Box::new(hooks) as Box<dyn Hooks>)
        });
        self
    }

    /// What ends this server's calls from another thread (after a signal).
    pub fn interrupter(&self) -> McpInterrupter {
        McpInterrupter(Arc::clone(&self.calls))
    }

    /// The name of the session recording this server's effects (its id
    /// when it has none).
    pub fn session_name(&self) -> &str {
        &self.session_name
    }

    /// The id of the session recording this server's effects.
    pub fn session_id(&self) -> String {
        self.calls.journal.session_id().to_hex()
    }

    /// Serves until the input ends; running calls are cancelled then, and
    /// their completions recorded, before this returns.
    ///
    /// # Errors
    ///
    /// Read errors of the input, write errors of the output.
    pub fn serve(mut self, input: impl BufRead) -> std::io::Result<()> {
        let mut reader = Reader::new(input);
        let out = self.calls.out.clone();
        loop {
            let incoming = match reader.next_record()? {
                None => break,
                Some(Record::TooLong(n)) => {
                    let r = jsonrpc::too_long(n);
                    out.error(&r.id, &r.error)?;
                    continue;
                }
                // The client's answer to a plugin's question.
                Some(Record::Line(line)) if self.elicit.take_response(line) => continue,
                Some(Record::Line(line)) => jsonrpc::parse(line),
            };
            match incoming {
                Err(rejected) => out.error(&rejected.id, &rejected.error)?,
                Ok(Incoming::Response { .. }) => {}
                Ok(Incoming::Notification { method, params }) => {
                    self.notification(&method, &params)
                }
                Ok(Incoming::Request { id, method, params }) => {
                    let era = match request_era(&method, &params) {
                        Ok(era) => era,
                        Err(error) => {
                            out.error(&id, &error)?;
                            continue;
                        }
                    };
                    if method == "tools/call" {
                        if let Err(error) = self.start_call(&id, &params, era) {
                            out.error(&id, &error)?;
                        }
                        continue;
                    }
                    match self.request(&method, &params, era) {
                        Ok(result) => out.result(&id, result)?,
                        Err(error) => out.error(&id, &error)?,
                    }
                }
            }
            self.workers.retain(|w| !w.is_finished());
        }
        for call in lock(&self.calls.inflight).values() {
            call.cancel.cancel();
        }
        for worker in self.workers.drain(..) {
            // A panicked worker has nothing left to clean up.
            let _ = worker.join();
        }
        Ok(())
    }

    fn notification(&self, method: &str, params: &Value) {
        if method == "notifications/cancelled" {
            let Some(request) = params.get("requestId") else {
                return;
            };
            // Unknown or finished requests are ignored, as the protocol asks.
            if let Some(call) = lock(&self.calls.inflight).get_mut(&request.to_string()) {
                call.cancelled_by_client = true;
                call.cancel.cancel();
            }
        }
        // notifications/initialized and others need no action.
    }

    fn request(&self, method: &str, params: &Value, era: Era) -> Result<Value, RpcError> {
        let result = self.answer(method, params, era)?;
        Ok(match era {
            Era::Stateless(_) => stateless_result(result, cache_hints(method)),
            Era::Handshake if method == "server/discover" => {
                // A probe without a revision still learns what is served.
                stateless_result(result, cache_hints(method))
            }
            Era::Handshake => result,
        })
    }

    fn instructions(&self) -> String {
        format!(
            "smith's built-in tools (read, write, edit, bash, find, grep, ls) working in {}. Every call is recorded in session {} before it runs. Stored sessions are resources under {SESSION_URI}.",
            self.calls.context.cwd().display(),
            self.session_name
        )
    }

    fn answer(&self, method: &str, params: &Value, era: Era) -> Result<Value, RpcError> {
        match method {
            "server/discover" => Ok(json!({
                "supportedVersions": PROTOCOL_VERSIONS,
                "capabilities": {
                    "tools": {"listChanged": false},
                    "resources": {"subscribe": false, "listChanged": false},
                },
                "instructions": self.instructions(),
                "_meta": {
                    META_SERVER_INFO: {"name": "smith", "title": "smith", "version": env!("CARGO_PKG_VERSION")},
                },
            })),
            "initialize" if era != Era::Handshake => Err(RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "no_handshake",
                "initialize is not part of a stateless request",
                format!(
                    "revision {LATEST_PROTOCOL_VERSION} has no handshake: every request names its revision in _meta"
                ),
                "send server/discover to learn what is served, or send initialize without the _meta revision to use the handshake era",
            )),
            "initialize" => {
                let requested = opt_str(method, params, "protocolVersion")?;
                self.elicit.initialized(params);
                Ok(json!({
                    "protocolVersion": negotiate(requested),
                    "capabilities": {
                        "tools": {"listChanged": false},
                        "resources": {"subscribe": false, "listChanged": false},
                    },
                    "serverInfo": {"name": "smith", "title": "smith", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": self.instructions(),
                }))
            }
            "ping" => Ok(jsonrpc::empty()),
            "tools/list" => {
                let tools: Vec<Value> = self
                    .calls
                    .tools
                    .names()
                    .filter_map(|n| self.calls.tools.get(n))
                    .map(|t| tool_json(t.as_ref()))
                    .chain(checkpoint_tools())
                    .collect();
                Ok(json!({"tools": tools}))
            }
            "resources/list" => {
                let store = self.store()?;
                let list = store.list().map_err(|e| {
                    RpcError::new(
                        jsonrpc::STORE_ERROR,
                        "store",
                        "the sessions could not be listed",
                        e.to_string(),
                        "check the session store directory",
                    )
                })?;
                let resources: Vec<Value> = list
                    .iter()
                    .map(|s| {
                        let id = s.id.to_hex();
                        json!({
                            "uri": format!("{SESSION_URI}{id}"),
                            "name": s.name.clone().unwrap_or_else(|| id.clone()),
                            "title": format!("smith session {}", s.name.as_deref().unwrap_or(&id)),
                            "description": format!("session {id}: its entries as JSON Lines (created {} ms, modified {} ms since the Unix epoch)", s.created_ms, s.modified_ms),
                            "mimeType": SESSION_MIME,
                            "size": s.bytes,
                        })
                    })
                    .collect();
                Ok(json!({"resources": resources}))
            }
            "resources/templates/list" => Ok(json!({"resourceTemplates": [{
                "uriTemplate": format!("{SESSION_URI}{{id}}"),
                "name": "session",
                "title": "smith session",
                "description": "a stored session by id (or unique id prefix or name): its entries as JSON Lines",
                "mimeType": SESSION_MIME,
            }]})),
            "resources/read" => {
                let uri = req_str(method, params, "uri")?;
                let not_found = |why: String| {
                    RpcError::new(
                        RESOURCE_NOT_FOUND,
                        "resource_not_found",
                        format!("resource {uri:?} was not read"),
                        why,
                        "list the resources with resources/list",
                    )
                    .with("uri", uri)
                };
                let Some(reference) = uri.strip_prefix(SESSION_URI).filter(|r| !r.is_empty())
                else {
                    return Err(not_found(format!(
                        "this server has only session resources, {SESSION_URI}<id>"
                    )));
                };
                let store = self.store()?;
                let file = store
                    .open_file(reference)
                    .map_err(|e| not_found(e.to_string()))?;
                let mut text = Vec::new();
                dump::dump(file.bytes(), store.limits(), reference, &mut text)
                    .map_err(|e| not_found(e.to_string()))?;
                Ok(json!({"contents": [{
                    "uri": uri,
                    "mimeType": SESSION_MIME,
                    "text": String::from_utf8_lossy(&text),
                }]}))
            }
            _ => Err(RpcError::method_not_found(method, METHODS)),
        }
    }

    fn store(&self) -> Result<Store, RpcError> {
        Store::open(&self.store_root).map_err(|e| {
            RpcError::new(
                jsonrpc::STORE_ERROR,
                "store",
                "the session store could not be opened",
                e.to_string(),
                "check SMITH_HOME",
            )
        })
    }

    fn start_call(&mut self, id: &Value, params: &Value, era: Era) -> Result<(), RpcError> {
        let method = "tools/call";
        let name = req_str(method, params, "name")?.to_owned();
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(other) => {
                return Err(RpcError::invalid_params(
                    method,
                    format!("\"arguments\" is {other}"),
                    "\"arguments\" as an object",
                ));
            }
        };
        if let Some(result) = self.calls.checkpoint_tool(&name, &arguments) {
            let result = match era {
                Era::Stateless(_) => stateless_result(result, None),
                Era::Handshake => result,
            };
            // The client may be gone; nothing is left to tell it.
            let _ = self.calls.out.result(id, result);
            return Ok(());
        }
        if self.calls.tools.get(&name).is_none() {
            let names: Vec<&str> = self.calls.tools.names().collect();
            return Err(RpcError::new(
                INVALID_PARAMS,
                "unknown_tool",
                format!("there is no tool named {name:?}"),
                "only the built-in tools can be called",
                format!("use one of: {}", names.join(", ")),
            )
            .with("tool", name));
        }
        let progress = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_number())
            .cloned();
        let key = id.to_string();
        let cancel = CancelToken::new();
        {
            let mut inflight = lock(&self.calls.inflight);
            if inflight.contains_key(&key) {
                return Err(RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "duplicate_id",
                    format!("request id {key} is already in use by a running call"),
                    "ids must be unique among requests in flight",
                    "use a new id",
                ));
            }
            inflight.insert(
                key.clone(),
                Inflight {
                    cancel: cancel.clone(),
                    cancelled_by_client: false,
                },
            );
        }
        let calls = Arc::clone(&self.calls);
        let reply_id = id.clone();
        let worker = std::thread::Builder::new()
            .name("smith-mcp-call".into())
            .spawn(move || {
                let result = calls.run(&key, &name, &arguments, progress, cancel);
                let cancelled = lock(&calls.inflight)
                    .remove(&key)
                    .is_some_and(|c| c.cancelled_by_client);
                if !cancelled {
                    let result = match era {
                        Era::Stateless(_) => stateless_result(result, None),
                        Era::Handshake => result,
                    };
                    let _ = calls.out.result(&reply_id, result);
                }
            });
        match worker {
            Ok(worker) => {
                self.workers.push(worker);
                Ok(())
            }
            Err(e) => {
                lock(&self.calls.inflight).remove(&id.to_string());
                Err(RpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    "thread",
                    "the call did not start",
                    format!("no thread could be started: {e}"),
                    "retry later",
                ))
            }
        }
    }
}

/// The checkpoint tools after the built-in ones: `checkpoint_list` and
/// `checkpoint_diff` read, `checkpoint_undo` and `checkpoint_redo` change
/// the project (refused in `read-only`).
pub fn checkpoint_tools() -> Vec<Value> {
    let tool = |name: &str, title: &str, description: &str, properties: Value, read_only: bool| {
        json!({
            "name": name,
            "title": title,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties, "additionalProperties": false},
            "annotations": {
                "readOnlyHint": read_only,
                "destructiveHint": !read_only,
                "idempotentHint": read_only,
                "openWorldHint": false,
            },
        })
    };
    let change = json!({
        "effect": {"type": "string", "description": "One effect (fx-N) instead of a whole turn."},
        "turn": {"type": "integer", "minimum": 1, "description": "The turn's number in checkpoint_list (default: the newest turn that qualifies)."},
        "dry_run": {"type": "boolean", "description": "List what would change; change nothing."},
        "force": {"type": "boolean", "description": "Go ahead even when the files changed outside smith since."},
    });
    vec![
        tool(
            "checkpoint_list",
            "Checkpoint list",
            "The snapshots smith took around this session's write, edit and bash calls: the agent turns (prompt, effects, changed files, whether undone) and every checkpoint.",
            json!({}),
            true,
        ),
        tool(
            "checkpoint_diff",
            "Checkpoint diff",
            "A unified diff: of the newest effect that changed files, of effect `from` (fx-N), from snapshot `from` to the project now, or between `from` and `to`.",
            json!({
                "from": {"type": "string", "description": "An effect id (fx-N) or a snapshot id."},
                "to": {"type": "string", "description": "An effect or snapshot id to compare with."},
            }),
            true,
        ),
        tool(
            "checkpoint_undo",
            "Checkpoint undo",
            "Undo the newest turn that changed files and is not undone (or `turn`, or one `effect`) at the paths it changed; refused when those files changed outside smith, unless `force`.",
            change.clone(),
            false,
        ),
        tool(
            "checkpoint_redo",
            "Checkpoint redo",
            "Redo the most recently undone turn (or `turn`, or one `effect`).",
            change,
            false,
        ),
    ]
}

fn tool_result(text: String, is_error: bool, meta: Value) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error, "_meta": meta})
}

impl Calls {
    /// A checkpoint tool's result, `None` for any other name. Undo and
    /// redo are refused in `read-only`, like every tool that changes
    /// files.
    fn checkpoint_tool(&self, name: &str, arguments: &Value) -> Option<Value> {
        use smith_engine::checkpoint::{self, Checkpoints, TurnRef, UndoOptions};
        if !matches!(
            name,
            "checkpoint_list" | "checkpoint_diff" | "checkpoint_undo" | "checkpoint_redo"
        ) {
            return None;
        }
        let mutating = matches!(name, "checkpoint_undo" | "checkpoint_redo");
        if mutating && self.context.approval() == smith_engine::approval::Approval::ReadOnly {
            return Some(tool_result(
                smith_engine::agent::read_only_result_text(name),
                true,
                json!({"dev.smith/status": "blocked"}),
            ));
        }
        let failed = |text: String| tool_result(text, true, json!({}));
        let cwd = self.context.cwd().to_path_buf();
        let root = checkpoint::project_root(&cwd);
        let steps = match self
            .journal
            .with_session(smith_engine::journal::store::timeline)
        {
            Ok(steps) => steps,
            Err(e) => return Some(failed(format!("The session could not be read: {e}"))),
        };
        let records = checkpoint::records_of(&steps);
        if name == "checkpoint_list" {
            let turns: Vec<Value> = checkpoint::turns(&steps, &root)
                .iter()
                .map(|t| {
                    json!({
                        "turn": t.number,
                        "entry": t.entry,
                        "prompt": t.prompt,
                        "effects": t.effects(),
                        "changed": t.changed,
                        "undone": t.undone,
                    })
                })
                .collect();
            let list: Vec<Value> = checkpoint::checkpoints(&records, &root)
                .iter()
                .map(|s| {
                    let mut v = json!(s.record);
                    v["undone"] = Value::Bool(s.undone);
                    v
                })
                .collect();
            let text = json!({"root": root, "turns": turns, "checkpoints": list});
            return Some(tool_result(
                serde_json::to_string_pretty(&text).unwrap_or_default(),
                false,
                json!({}),
            ));
        }
        let Some(data) = smith_host::runtime::checkpoints_root() else {
            return Some(failed(
                "smith cannot tell where its data directory is, so it has no checkpoints; set SMITH_HOME".to_owned(),
            ));
        };
        let text = |key: &str| arguments.get(key).and_then(Value::as_str);
        let flag = |key: &str| matches!(arguments.get(key), Some(Value::Bool(true)));
        let options = UndoOptions {
            force: flag("force"),
            dry_run: flag("dry_run"),
        };
        let which = arguments
            .get("turn")
            .and_then(Value::as_u64)
            .map_or(TurnRef::Latest, |n| {
                TurnRef::Number(usize::try_from(n).unwrap_or(usize::MAX))
            });
        let journal: &StoreJournal = &self.journal;
        let done = Checkpoints::open(&cwd, &data)
            .map_err(checkpoint::CheckpointError::from)
            .and_then(|c| {
                c.with_vcs(|vcs| match name {
                    "checkpoint_diff" => {
                        crate::rpc::checkpoint_diff(vcs, &records, &root, text("from"), text("to"))
                    }
                    "checkpoint_undo" => match text("effect") {
                        Some(e) => checkpoint::undo(vcs, journal, &records, Some(e), options),
                        None => checkpoint::undo_turn(vcs, journal, &steps, which, options),
                    }
                    .map(|done| crate::rpc::applied(&done).to_string()),
                    _ => match text("effect") {
                        Some(e) => checkpoint::redo(vcs, journal, &records, Some(e), options),
                        None => checkpoint::redo_turn(vcs, journal, &steps, which, options),
                    }
                    .map(|done| crate::rpc::applied(&done).to_string()),
                })?
            });
        Some(match done {
            Ok(text) => tool_result(text, false, json!({})),
            Err(e) => failed(format!("The {name} call changed nothing: {e}")),
        })
    }

    /// The extension plugins' `tool-call` decision on a call (validated
    /// first, so nothing is asked about a call that would not run):
    /// `Ok(None)` to run it as it is, `Ok(Some(arguments))` to run it with
    /// a plugin's replacement, or the blocked call's result.
    fn decide(&self, key: &str, name: &str, arguments: &Value) -> Result<Option<Value>, Value> {
        let decided = self.decide_with_hooks(key, name, arguments)?;
        // In `read-only` no mutating call runs, whatever the plugins said
        // (and without plugins): the same floor the runtime's loop keeps.
        if self.context.approval() == smith_engine::approval::Approval::ReadOnly
            && self
                .tools
                .get(name)
                .is_some_and(|tool| tool.definition().access == Access::Mutating)
        {
            return Err(tool_result(
                smith_engine::agent::read_only_result_text(name),
                true,
                json!({"dev.smith/status": "blocked"}),
            ));
        }
        Ok(decided)
    }

    /// The extensions' part of [`Calls::decide`].
    fn decide_with_hooks(
        &self,
        key: &str,
        name: &str,
        arguments: &Value,
    ) -> Result<Option<Value>, Value> {
        let Some(hooks) = &self.hooks else {
            return Ok(None);
        };
        if self.tools.prepare(name, arguments).is_err() {
            return Ok(None);
        }
        let call = ToolCall {
            id: key.to_owned(),
            name: name.to_owned(),
            arguments: arguments.clone(),
        };
        // One decision at a time: the plugins are one set of instances.
        let verdict = lock(hooks).tool_call(&call);
        match verdict {
            Verdict::Allow => Ok(None),
            Verdict::Block { by, reason } => Err(tool_result(
                blocked_result_text(name, &by, &reason),
                true,
                json!({"dev.smith/status": "blocked", "dev.smith/plugin": by}),
            )),
            Verdict::Replace { by, value } => match serde_json::from_str(&value) {
                Ok(replacement @ Value::Object(_)) => Ok(Some(replacement)),
                _ => Err(tool_result(
                    format!(
                        "The {name} call did not run: the extension {by} replaced its arguments with {value:?}, which is not a JSON object; nothing happened."
                    ),
                    true,
                    json!({"dev.smith/status": "invalid", "dev.smith/plugin": by}),
                )),
            },
        }
    }

    /// One call: validate, record the intent, run, record the completion.
    fn run(
        &self,
        key: &str,
        name: &str,
        arguments: &Value,
        progress: Option<Value>,
        cancel: CancelToken,
    ) -> Value {
        let replaced;
        let arguments = match self.decide(key, name, arguments) {
            Ok(None) => arguments,
            Ok(Some(replacement)) => {
                replaced = replacement;
                &replaced
            }
            Err(blocked) => return blocked,
        };
        let tool = match self.tools.prepare(name, arguments) {
            Ok(tool) => Arc::clone(tool),
            Err(e) => {
                let r = e.into_result();
                return tool_result(
                    r.content,
                    true,
                    json!({"dev.smith/status": "invalid", "dev.smith/details": r.details}),
                );
            }
        };
        // The intent records the arguments with registered secrets as
        // placeholders; the tool gets the client's arguments with the
        // placeholders the policy authorizes for it substituted.
        let redactor = self.secrets.redactor();
        let mut recorded = arguments.clone();
        redactor.redact_json(&mut recorded);
        let substituted = redactor.substitute_json(arguments, name);
        let input = match canonical_cbor(&recorded) {
            Ok(input) if input.len() <= MAX_INPUT_BYTES => input,
            Ok(input) => {
                return tool_result(
                    format!(
                        "The {name} call did not run: its arguments take {} bytes, more than the {MAX_INPUT_BYTES} an effect record may hold; send smaller arguments.",
                        input.len()
                    ),
                    true,
                    json!({"dev.smith/status": "invalid"}),
                );
            }
            Err(e) => {
                return tool_result(
                    format!("The {name} call did not run: {e}"),
                    true,
                    json!({"dev.smith/status": "invalid"}),
                );
            }
        };
        let effect_id = format!("fx-{}", self.next_effect.fetch_add(1, Ordering::SeqCst) + 1);
        let intent = EffectIntent {
            effect_id: effect_id.clone(),
            parent: format!("mcp:{key}"),
            tool: name.to_owned(),
            plugin_generation: BUILTIN_GENERATION,
            input,
        };
        if let Err(e) = self.journal.record_intent(&intent) {
            return tool_result(
                format!(
                    "The {name} call (effect {effect_id}) did not run because its intent could not be recorded: {e}; nothing was changed — fix the session store and call again."
                ),
                true,
                json!({"dev.smith/status": "not_recorded", "dev.smith/effect_id": effect_id}),
            );
        }
        let mut cx = self.context.clone().with_cancel(cancel.clone());
        if let Some(token) = progress {
            let _ = self.out.notify(
                "notifications/progress",
                json!({"progressToken": token, "progress": 0, "message": format!("{name} started (effect {effect_id})")}),
            );
            let out = self.out.clone();
            let progress_redactor = Arc::clone(&redactor);
            let state = Mutex::new((0u64, Instant::now()));
            cx = cx.with_output_sink(Arc::new(move |bytes: &[u8]| {
                let mut s = lock(&state);
                s.0 += bytes.len() as u64;
                if s.1.elapsed() >= PROGRESS_INTERVAL && !bytes.is_empty() {
                    s.1 = Instant::now();
                    let text = String::from_utf8_lossy(bytes);
                    let message: String = text
                        .chars()
                        .rev()
                        .take(200)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    let message = progress_redactor.redact_str(&message).into_owned();
                    let _ = out.notify(
                        "notifications/progress",
                        json!({"progressToken": token, "progress": s.0, "message": message}),
                    );
                }
            }));
        }
        let mut result = tool.execute(substituted.as_ref().map_or(arguments, |s| s.input()), &cx);
        drop(substituted);
        if let std::borrow::Cow::Owned(content) = redactor.redact_str(&result.content) {
            result.content = content;
        }
        redactor.redact_json(&mut result.details);
        let cancelled = result.is_error && result.error_kind() == Some("cancelled");
        let outcome = if cancelled {
            Outcome::Cancelled
        } else if result.is_error {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        let output = canonical_cbor(&json!({"content": result.content, "details": result.details, "is_error": result.is_error}))
            .unwrap_or_else(|e| canonical_cbor(&json!({"unrecordable_output": e.message})).unwrap_or_default());
        let completion = EffectCompletion {
            effect_id: effect_id.clone(),
            outcome,
            mutation: result.mutation,
            output,
        };
        let meta = json!({
            "dev.smith/status": outcome.as_str(),
            "dev.smith/effect_id": effect_id,
            "dev.smith/mutation": result.mutation.as_str(),
            "dev.smith/details": result.details,
        });
        match self.journal.record_completion(&completion) {
            Ok(()) => tool_result(result.content, result.is_error, meta),
            Err(e) => tool_result(
                format!(
                    "{}\n\nThe {name} call (effect {effect_id}) finished with mutation state {} but its completion could not be recorded: {e}; the session will show this effect as unknown — fix the session store before calling more tools.",
                    result.content,
                    result.mutation.as_str()
                ),
                true,
                meta,
            ),
        }
    }
}

/// What a UI intent asks a frontend to do (the plugin interface's
/// `intent-kind`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntentKind {
    /// A transient notice.
    Notify(String),
    /// The plugin's status line text.
    SetStatus(String),
    /// A named widget's text (name, text).
    SetWidget(String, String),
    /// Pick one of the options (prompt, options).
    Select(String, Vec<String>),
    /// Confirm (prompt).
    Confirm(String),
    /// Ask for text (prompt).
    Input(String),
    /// A progress fraction in thousandths (label, value).
    Progress(String, u32),
    /// A link to open.
    OpenLink(String),
}

/// What happens to an intent a frontend cannot show (the plugin
/// interface's `intent-policy`), declared by the intent itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntentPolicy {
    /// Drop it silently.
    Drop,
    /// Refuse it: the plugin gets an error event.
    Refuse,
    /// Persist it into the session for a later frontend.
    Persist,
}

/// How the MCP frontend delivers one intent.
#[derive(Clone, Debug, PartialEq)]
pub enum IntentDelivery {
    /// Sent as this MCP notification (method, params).
    Notification(&'static str, Value),
    /// Dropped (policy `drop`).
    Dropped,
    /// Refused (policy `refuse`); the message is the plugin's error event.
    Refused(String),
    /// To be recorded in the session (policy `persist`).
    Persisted,
}

/// Translates a UI intent for MCP. Only `progress` has a translation, and
/// only while a request with a progress token runs: it becomes
/// `notifications/progress` (progress in thousandths, total 1000, the
/// label as message). Every other intent — and progress without a token —
/// degrades by its declared policy; it is never guessed at.
pub fn deliver_intent(
    kind: &IntentKind,
    policy: IntentPolicy,
    progress_token: Option<&Value>,
) -> IntentDelivery {
    if let (IntentKind::Progress(label, value), Some(token)) = (kind, progress_token) {
        return IntentDelivery::Notification(
            "notifications/progress",
            json!({"progressToken": token, "progress": (*value).min(1000), "total": 1000, "message": label}),
        );
    }
    let name = match kind {
        IntentKind::Notify(_) => "notify",
        IntentKind::SetStatus(_) => "set-status",
        IntentKind::SetWidget(..) => "set-widget",
        IntentKind::Select(..) => "select",
        IntentKind::Confirm(_) => "confirm",
        IntentKind::Input(_) => "input",
        IntentKind::Progress(..) => "progress",
        IntentKind::OpenLink(_) => "open-link",
    };
    match policy {
        IntentPolicy::Drop => IntentDelivery::Dropped,
        IntentPolicy::Persist => IntentDelivery::Persisted,
        IntentPolicy::Refuse => IntentDelivery::Refused(format!(
            "the {name} intent was refused: the MCP frontend has no translation for it{}; declare policy persist to keep it for another frontend, or drop",
            if matches!(kind, IntentKind::Progress(..)) {
                " outside a request that asked for progress"
            } else {
                ""
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_revisions_and_counters_others() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate(Some("2024-11-05")), "2024-11-05");
        // The stateless revision has no handshake.
        assert_eq!(negotiate(Some("2026-07-28")), LATEST_HANDSHAKE_VERSION);
        assert_eq!(negotiate(Some("1999-01-01")), LATEST_HANDSHAKE_VERSION);
        assert_eq!(negotiate(None), LATEST_HANDSHAKE_VERSION);
    }

    #[test]
    fn the_era_comes_from_each_request_meta() {
        let meta = |v: Value| json!({"_meta": v});
        assert_eq!(request_era("tools/list", &json!({})), Ok(Era::Handshake));
        assert_eq!(
            request_era(
                "tools/list",
                &meta(json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}))
            ),
            Ok(Era::Stateless("2026-07-28"))
        );
        assert_eq!(
            request_era(
                "tools/list",
                &meta(json!({META_PROTOCOL_VERSION: "2025-06-18"}))
            ),
            Ok(Era::Handshake)
        );
        let missing = request_era(
            "tools/list",
            &meta(json!({META_PROTOCOL_VERSION: "2026-07-28"})),
        )
        .unwrap_err();
        assert_eq!(missing.code, INVALID_PARAMS);
        assert!(missing.message.contains(META_CLIENT_CAPABILITIES));
        let unknown = request_era(
            "tools/list",
            &meta(json!({META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}})),
        )
        .unwrap_err();
        assert_eq!(unknown.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(unknown.data["supported"], json!(PROTOCOL_VERSIONS));
        assert_eq!(unknown.data["requested"], "2099-01-01");
    }

    #[test]
    fn built_in_tools_have_object_schemas_and_honest_hints() {
        let set = ToolSet::builtin();
        for name in set.names() {
            let tool = set.get(name).unwrap();
            let v = tool_json(tool.as_ref());
            assert_eq!(v["inputSchema"]["type"], "object", "{name}");
            let read_only = tool.definition().access == Access::ReadOnly;
            assert_eq!(v["annotations"]["readOnlyHint"], read_only, "{name}");
            assert_eq!(v["annotations"]["destructiveHint"], !read_only, "{name}");
        }
        assert_eq!(
            tool_json(set.get("read").unwrap().as_ref())["title"],
            "Read"
        );
    }

    #[test]
    fn only_progress_with_a_token_translates_and_the_rest_follow_their_policy() {
        let token = json!("t1");
        let progress = IntentKind::Progress("indexing".into(), 250);
        assert_eq!(
            deliver_intent(&progress, IntentPolicy::Drop, Some(&token)),
            IntentDelivery::Notification(
                "notifications/progress",
                json!({"progressToken": "t1", "progress": 250, "total": 1000, "message": "indexing"})
            )
        );
        assert_eq!(
            deliver_intent(&progress, IntentPolicy::Persist, None),
            IntentDelivery::Persisted
        );
        let kinds = [
            IntentKind::Notify("n".into()),
            IntentKind::SetStatus("s".into()),
            IntentKind::SetWidget("w".into(), "t".into()),
            IntentKind::Select("p".into(), vec!["a".into()]),
            IntentKind::Confirm("c".into()),
            IntentKind::Input("i".into()),
            IntentKind::OpenLink("https://example.invalid".into()),
        ];
        for kind in &kinds {
            assert_eq!(
                deliver_intent(kind, IntentPolicy::Drop, Some(&token)),
                IntentDelivery::Dropped
            );
            assert_eq!(
                deliver_intent(kind, IntentPolicy::Persist, Some(&token)),
                IntentDelivery::Persisted
            );
            let IntentDelivery::Refused(message) =
                deliver_intent(kind, IntentPolicy::Refuse, Some(&token))
            else {
                panic!("{kind:?} is refused");
            };
            assert!(message.contains("no translation"), "{message}");
        }
    }
}
