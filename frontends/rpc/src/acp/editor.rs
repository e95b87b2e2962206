//! The editor's files and terminals as the tools' backends: `fs/*` and
//! `terminal/*` requests to the client.
//!
//! When the client's `initialize` offers `fs.readTextFile` or
//! `fs.writeTextFile`, the session's runtime gets an [`EditorFiles`]: the
//! file tools (`read`, `edit`, `write`) read the editor's buffers with
//! `fs/read_text_file` and write them with `fs/write_text_file`. When it
//! offers `terminal`, it gets an [`EditorTerminal`], which `bash` uses
//! only while the approval mode runs commands unsandboxed (`full`): the
//! editor's terminal cannot apply smith's sandbox.
//!
//! The tools call these from the runtime's tool thread after their own
//! checks (roots, sandbox paths, staleness) and inside the journaled
//! effect, so the journal records each request's outcome. Each waits for
//! the client's answer while the request loop goes on reading (the answer
//! is routed by its id, [`Client::take_response`]), and stops waiting at
//! once when the run is cancelled.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_engine::tools::{
    CommandEnding, CommandOutcome, CommandRequest, CommandRunner, FileAccess, Mutation,
    ToolContext, ToolError, ToolErrorKind,
};

use super::client::{Client, Waited};
use super::{SessionShared, lock};

/// How long a file request waits for the client.
const FS_TIMEOUT: Duration = Duration::from_secs(120);
/// How long `terminal/create` waits for the client.
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the requests after a command ended (kill, output, release)
/// wait: they are answered at once by a working client, and a cancelled
/// run must not hang on them.
const AFTER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a terminal waits for the runtime's announcement that its call
/// started (to show the terminal in that call).
const CALL_WAIT: Duration = Duration::from_secs(3);

/// The message of an error answer.
fn message(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned)
}

/// Sends `method` and waits for its answer.
fn call(
    client: &Client,
    method: &str,
    params: Value,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<Waited, std::io::Error> {
    let (id, rx) = client.request(method, params)?;
    Ok(client.wait(&id, &rx, timeout, stop))
}

/// The file tools' reads and writes through the client.
pub(crate) struct EditorFiles {
    pub(crate) client: Arc<Client>,
    pub(crate) session: Arc<SessionShared>,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

impl EditorFiles {
    /// The failure of `method` about `shown` for `tool`: `what` went wrong,
    /// with the mutation evidence `mutation`.
    fn failed(
        tool: &str,
        method: &str,
        shown: &str,
        kind: ToolErrorKind,
        what: String,
        mutation: Mutation,
    ) -> ToolError {
        let next = match kind {
            ToolErrorKind::Cancelled => {
                "the run was cancelled; check the file in the editor before running the call again"
                    .to_owned()
            }
            _ => format!(
                "check {shown} in the editor (open, readable, writable) and run the call again"
            ),
        };
        ToolError::new(
            kind,
            format!("{tool}: {what}"),
            format!("the editor owns the file's text (the ACP client offered {method})"),
            next,
        )
        .with_extra("path", Value::from(shown))
        .with_extra("method", Value::from(method))
        .with_mutation(mutation)
    }

    /// What `method`'s wait ending in `waited` means for the tool.
    fn answer(
        tool: &str,
        method: &str,
        shown: &str,
        waited: Result<Waited, std::io::Error>,
        unsure: Mutation,
    ) -> Result<Value, ToolError> {
        let fail = |kind, what: String, mutation| {
            Err(Self::failed(tool, method, shown, kind, what, mutation))
        };
        match waited {
            Ok(Waited::Reply(Ok(result))) => Ok(result),
            Ok(Waited::Reply(Err(error))) => fail(
                ToolErrorKind::Io,
                format!(
                    "the editor answered {method} for {shown} with an error: {}",
                    message(&error)
                ),
                unsure,
            ),
            Ok(Waited::Timeout) => fail(
                ToolErrorKind::TimedOut,
                format!(
                    "the editor did not answer {method} for {shown} within {} s",
                    FS_TIMEOUT.as_secs()
                ),
                unsure,
            ),
            Ok(Waited::Stopped) => fail(
                ToolErrorKind::Cancelled,
                format!("{method} for {shown} was cancelled while it waited for the editor"),
                unsure,
            ),
            Err(e) => fail(
                ToolErrorKind::Io,
                format!("{method} for {shown} could not be sent to the editor: {e}"),
                Mutation::NotApplied,
            ),
        }
    }
}

impl FileAccess for EditorFiles {
    fn reads(&self) -> bool {
        self.read
    }

    fn writes(&self) -> bool {
        self.write
    }

    fn read_text(
        &self,
        tool: &str,
        path: &Path,
        shown: &str,
        cx: &ToolContext,
    ) -> Result<String, ToolError> {
        const METHOD: &str = "fs/read_text_file";
        let params = json!({"sessionId": self.session.id(), "path": path});
        let stop = || cx.cancel().is_cancelled();
        let waited = call(&self.client, METHOD, params, FS_TIMEOUT, &stop);
        let result = Self::answer(tool, METHOD, shown, waited, Mutation::NotApplied)?;
        match result.get("content").and_then(Value::as_str) {
            Some(content) => Ok(content.to_owned()),
            None => Err(Self::failed(
                tool,
                METHOD,
                shown,
                ToolErrorKind::Io,
                format!(
                    "the editor answered {METHOD} for {shown} with {result}, which has no text \"content\""
                ),
                Mutation::NotApplied,
            )),
        }
    }

    fn write_text(
        &self,
        tool: &str,
        path: &Path,
        shown: &str,
        content: &str,
        cx: &ToolContext,
    ) -> Result<(), ToolError> {
        const METHOD: &str = "fs/write_text_file";
        let params = json!({"sessionId": self.session.id(), "path": path, "content": content});
        let stop = || cx.cancel().is_cancelled();
        let waited = call(&self.client, METHOD, params, FS_TIMEOUT, &stop);
        // Sent and not confirmed: whether the editor changed its buffer
        // is not known.
        Self::answer(tool, METHOD, shown, waited, Mutation::Unknown).map(|_| ())
    }
}

/// `bash`'s unsandboxed commands in the editor's terminal.
pub(crate) struct EditorTerminal {
    pub(crate) client: Arc<Client>,
    pub(crate) session: Arc<SessionShared>,
}

/// A `bash` failure about the editor's terminal.
fn terminal_error(kind: ToolErrorKind, what: String, mutation: Mutation) -> ToolError {
    ToolError::new(
        kind,
        format!("bash: {what}"),
        "the command runs in the editor's terminal (the ACP client offered terminals and the approval mode is full)",
        "check the editor's terminal, or switch to the workspace mode to run commands in smith's sandbox",
    )
    .with_mutation(mutation)
}

impl EditorTerminal {
    /// Shows terminal `id` in the call whose effect is `effect`, once the
    /// runtime has announced that the call started.
    fn show(&self, effect: Option<&str>, id: &str) {
        let Some(effect) = effect else { return };
        let deadline = Instant::now() + CALL_WAIT;
        let mut st = lock(&self.session.st);
        loop {
            if let Some(live) = st
                .calls
                .iter_mut()
                .find(|c| c.effect.as_deref() == Some(effect))
            {
                live.terminal = Some(id.to_owned());
                let call_id = live.call.id.clone();
                // A failed write is the pump's to notice.
                let _ = self.session.notify(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "content": [{"type": "terminal", "terminalId": id}],
                }));
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            st = self
                .session
                .changed
                .wait_timeout(st, (deadline - now).min(Duration::from_millis(50)))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Sends a request after the command ended (kill, output, release):
    /// not stopped by the cancellation that may have ended it.
    fn after(&self, method: &str, id: &str) -> Result<Value, String> {
        let params = json!({"sessionId": self.session.id(), "terminalId": id});
        match call(&self.client, method, params, AFTER_TIMEOUT, &|| false) {
            Ok(Waited::Reply(Ok(result))) => Ok(result),
            Ok(Waited::Reply(Err(error))) => Err(format!(
                "the editor answered {method} with an error: {}",
                message(&error)
            )),
            Ok(Waited::Timeout | Waited::Stopped) => Err(format!(
                "the editor did not answer {method} within {} s",
                AFTER_TIMEOUT.as_secs()
            )),
            Err(e) => Err(format!("{method} could not be sent to the editor: {e}")),
        }
    }
}

/// The exit code and signal of an `exitStatus` (`terminal/wait_for_exit`'s
/// answer, `terminal/output`'s `exitStatus`).
fn exit_status(status: &Value) -> (Option<i32>, Option<String>) {
    (
        status
            .get("exitCode")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok()),
        status
            .get("signal")
            .and_then(Value::as_str)
            .map(str::to_owned),
    )
}

impl CommandRunner for EditorTerminal {
    fn run(
        &self,
        request: &CommandRequest<'_>,
        cx: &ToolContext,
    ) -> Result<CommandOutcome, ToolError> {
        let stop = || cx.cancel().is_cancelled();
        let params = json!({
            "sessionId": self.session.id(),
            "command": request.shell,
            "args": request.args,
            "cwd": request.cwd,
            "env": [],
            "outputByteLimit": request.output_bytes,
        });
        let created = call(
            &self.client,
            "terminal/create",
            params,
            CREATE_TIMEOUT,
            &stop,
        );
        let id = match created {
            Ok(Waited::Reply(Ok(result))) => match result.get("terminalId").and_then(Value::as_str)
            {
                Some(id) => id.to_owned(),
                None => {
                    return Err(terminal_error(
                        ToolErrorKind::Spawn,
                        format!(
                            "the editor answered terminal/create with {result}, which has no \"terminalId\"; the command may have started"
                        ),
                        Mutation::Unknown,
                    ));
                }
            },
            Ok(Waited::Reply(Err(error))) => {
                return Err(terminal_error(
                    ToolErrorKind::Spawn,
                    format!(
                        "the editor could not start `{}` in a terminal: {}",
                        request.command,
                        message(&error)
                    ),
                    Mutation::NotApplied,
                ));
            }
            Ok(Waited::Timeout) => {
                return Err(terminal_error(
                    ToolErrorKind::Spawn,
                    format!(
                        "the editor did not answer terminal/create within {} s; the command may have started",
                        CREATE_TIMEOUT.as_secs()
                    ),
                    Mutation::Unknown,
                ));
            }
            Ok(Waited::Stopped) => {
                return Err(terminal_error(
                    ToolErrorKind::Cancelled,
                    "the run was cancelled while the editor was starting the command's terminal; the command may have started".to_owned(),
                    Mutation::Unknown,
                ));
            }
            Err(e) => {
                return Err(terminal_error(
                    ToolErrorKind::Spawn,
                    format!("terminal/create could not be sent to the editor: {e}"),
                    Mutation::NotApplied,
                ));
            }
        };
        self.show(cx.effect_id().as_deref(), &id);
        let params = json!({"sessionId": self.session.id(), "terminalId": id});
        let waited = call(
            &self.client,
            "terminal/wait_for_exit",
            params,
            request.timeout,
            &stop,
        );
        let (ending, mut exit) = match waited {
            Ok(Waited::Reply(Ok(status))) => (CommandEnding::Exited, exit_status(&status)),
            Ok(Waited::Timeout) => (CommandEnding::TimedOut, (None, None)),
            Ok(Waited::Stopped) => (CommandEnding::Cancelled, (None, None)),
            Ok(Waited::Reply(Err(error))) => {
                let _ = self.after("terminal/kill", &id);
                let _ = self.after("terminal/release", &id);
                return Err(terminal_error(
                    ToolErrorKind::Io,
                    format!(
                        "the editor answered terminal/wait_for_exit for terminal {id} with an error: {}; the terminal was killed",
                        message(&error)
                    ),
                    Mutation::Unknown,
                ));
            }
            Err(e) => {
                let _ = self.after("terminal/release", &id);
                return Err(terminal_error(
                    ToolErrorKind::Io,
                    format!("terminal/wait_for_exit could not be sent to the editor: {e}"),
                    Mutation::Unknown,
                ));
            }
        };
        let mut problems = Vec::new();
        if ending != CommandEnding::Exited
            && let Err(why) = self.after("terminal/kill", &id)
        {
            problems.push(why);
        }
        let output = self.after("terminal/output", &id);
        if let Err(why) = self.after("terminal/release", &id) {
            problems.push(why);
        }
        let output = match output {
            Ok(output) => output,
            Err(why) => {
                return Err(terminal_error(
                    ToolErrorKind::Io,
                    format!(
                        "the command ran in terminal {id} but its output could not be read: {why}"
                    ),
                    Mutation::Unknown,
                ));
            }
        };
        if exit == (None, None)
            && let Some(status) = output.get("exitStatus")
        {
            exit = exit_status(status);
        }
        let mut text = output
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for problem in problems {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[{problem}]"));
        }
        Ok(CommandOutcome {
            output: text,
            truncated: output.get("truncated").and_then(Value::as_bool) == Some(true),
            exit_code: exit.0,
            signal: exit.1,
            ending,
            handle: id,
        })
    }
}

/// The backends for a client whose `initialize` said `capabilities`.
pub(crate) fn backends(
    capabilities: &Value,
    client: &Arc<Client>,
    session: &Arc<SessionShared>,
) -> smith_engine::tools::ToolBackends {
    let offered = |v: &Value| v.as_bool() == Some(true);
    let (read, write) = (
        offered(&capabilities["fs"]["readTextFile"]),
        offered(&capabilities["fs"]["writeTextFile"]),
    );
    smith_engine::tools::ToolBackends {
        files: (read || write).then(|| {
            Arc::new(EditorFiles {
                client: Arc::clone(client),
                session: Arc::clone(session),
                read,
                write,
            }) as Arc<dyn FileAccess>
        }),
        commands: offered(&capabilities["terminal"]).then(|| {
            Arc::new(EditorTerminal {
                client: Arc::clone(client),
                session: Arc::clone(session),
            }) as Arc<dyn CommandRunner>
        }),
    }
}
