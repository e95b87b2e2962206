//! Where the file tools read and write text and where `bash` runs a
//! command, when a frontend hands that work to someone else.
//!
//! By default the tools touch the disk and start processes themselves. A
//! frontend whose other side owns the files or the terminals (an editor
//! speaking the Agent Client Protocol, whose unsaved buffers are the
//! truth) gives the tool context a [`FileAccess`] or a [`CommandRunner`]
//! ([`ToolBackends`]). The tools still do everything else themselves and
//! first: argument validation, path resolution against the roots, the
//! sandbox's path checks, the read-before-write and staleness checks. Only
//! the last step, the bytes in or out or the process, goes through the
//! backend, inside the same journaled effect, so the journal records what
//! the backend did (its errors are the effect's errors).
//!
//! A backend blocks until its answer comes, and must end its wait when the
//! context's [`CancelToken`](super::CancelToken) is cancelled, reporting
//! [`ToolErrorKind::Cancelled`](super::ToolErrorKind::Cancelled).
//!
//! The engine knows nothing of who is on the other side: the traits speak
//! of paths, text and processes only.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{ToolContext, ToolError};

/// Reads and writes whole text files for the file tools (`read`, `edit`,
/// `write`).
pub trait FileAccess: Send + Sync {
    /// Whether [`read_text`](Self::read_text) serves the reads (else the
    /// tools read the disk).
    fn reads(&self) -> bool;

    /// Whether [`write_text`](Self::write_text) serves the writes (else the
    /// tools write the disk).
    fn writes(&self) -> bool;

    /// The whole current text of `path` (absolute, resolved, inside the
    /// roots); `shown` is how the tools name it to the model.
    ///
    /// # Errors
    ///
    /// The backend's failure, saying what its other side answered, or
    /// [`Cancelled`](super::ToolErrorKind::Cancelled) when the context was
    /// cancelled while it waited. Nothing was changed either way.
    fn read_text(
        &self,
        tool: &str,
        path: &Path,
        shown: &str,
        cx: &ToolContext,
    ) -> Result<String, ToolError>;

    /// Replaces the whole text of `path` (creating the file) with
    /// `content`.
    ///
    /// # Errors
    ///
    /// The backend's failure, carrying the mutation evidence it can give:
    /// an error answered by the other side, or a cancelled or unanswered
    /// wait, leaves the change [`Unknown`](super::Mutation::Unknown) unless
    /// the backend knows better.
    fn write_text(
        &self,
        tool: &str,
        path: &Path,
        shown: &str,
        content: &str,
        cx: &ToolContext,
    ) -> Result<(), ToolError>;
}

/// What `bash` asks a [`CommandRunner`] to run.
#[derive(Clone, Debug)]
pub struct CommandRequest<'a> {
    /// The shell to run (`/usr/bin/bash`).
    pub shell: &'a Path,
    /// Its arguments (`-c`, the command line).
    pub args: &'a [&'a str],
    /// The command line as the model wrote it (for messages).
    pub command: &'a str,
    /// The working directory (absolute, resolved, inside the roots).
    pub cwd: &'a Path,
    /// How long the command may run before it is killed.
    pub timeout: Duration,
    /// The most output bytes to keep (the runner keeps the end).
    pub output_bytes: usize,
}

/// How a command a [`CommandRunner`] ran ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandEnding {
    /// The command exited on its own.
    Exited,
    /// It ran past its timeout and was killed.
    TimedOut,
    /// The context was cancelled and it was killed.
    Cancelled,
}

/// What a [`CommandRunner`] observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The output (standard output and error together) that was kept.
    pub output: String,
    /// Whether the runner cut the beginning of the output to stay within
    /// [`CommandRequest::output_bytes`].
    pub truncated: bool,
    /// The exit code, when the command exited with one.
    pub exit_code: Option<i32>,
    /// The signal that ended it, by name, when one did.
    pub signal: Option<String>,
    /// How it ended.
    pub ending: CommandEnding,
    /// The runner's own name for the run (a terminal's id), for the
    /// result's details.
    pub handle: String,
}

/// Runs `bash`'s commands somewhere else (an editor's terminal).
///
/// Such a runner cannot apply smith's sandbox, so `bash` uses it only
/// while the approval mode runs commands unsandboxed
/// ([`Approval::sandboxed`](crate::approval::Approval::sandboxed) is
/// false); in the sandboxed modes `bash` runs the command itself, confined.
pub trait CommandRunner: Send + Sync {
    /// Runs `request` to its end, its timeout or the context's
    /// cancellation, and reports what it saw.
    ///
    /// # Errors
    ///
    /// The command could not be started or followed (the other side
    /// answered an error or nothing), with the mutation evidence the
    /// runner can give.
    fn run(
        &self,
        request: &CommandRequest<'_>,
        cx: &ToolContext,
    ) -> Result<CommandOutcome, ToolError>;
}

/// The backends a tool context hands work to; the default has none (the
/// tools do it all themselves).
#[derive(Clone, Default)]
pub struct ToolBackends {
    /// Reads and writes of the file tools.
    pub files: Option<Arc<dyn FileAccess>>,
    /// `bash`'s processes while commands run unsandboxed.
    pub commands: Option<Arc<dyn CommandRunner>>,
}

impl std::fmt::Debug for ToolBackends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBackends")
            .field(
                "files",
                &self.files.as_ref().map(|b| (b.reads(), b.writes())),
            )
            .field("commands", &self.commands.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::approval::{Approval, ApprovalCell};
    use crate::tools::{Mutation, Tool, ToolErrorKind};

    /// An owner of files that keeps them in memory and logs each request.
    #[derive(Default)]
    struct Buffers {
        files: Mutex<HashMap<PathBuf, String>>,
        log: Mutex<Vec<String>>,
    }

    impl FileAccess for Buffers {
        fn reads(&self) -> bool {
            true
        }

        fn writes(&self) -> bool {
            true
        }

        fn read_text(
            &self,
            tool: &str,
            path: &Path,
            shown: &str,
            _cx: &ToolContext,
        ) -> Result<String, ToolError> {
            self.log.lock().unwrap().push(format!("read {shown}"));
            self.files
                .lock()
                .unwrap()
                .get(path)
                .cloned()
                .ok_or_else(|| {
                    ToolError::new(
                        ToolErrorKind::NotFound,
                        format!("{tool}: no buffer {shown}"),
                        "the test's buffers do not hold it",
                        "open it",
                    )
                })
        }

        fn write_text(
            &self,
            _tool: &str,
            path: &Path,
            shown: &str,
            content: &str,
            _cx: &ToolContext,
        ) -> Result<(), ToolError> {
            self.log.lock().unwrap().push(format!("write {shown}"));
            self.files
                .lock()
                .unwrap()
                .insert(path.to_owned(), content.to_owned());
            Ok(())
        }
    }

    /// A runner that answers every command with the same output.
    #[derive(Default)]
    struct Terminal {
        runs: Mutex<Vec<String>>,
    }

    impl CommandRunner for Terminal {
        fn run(
            &self,
            request: &CommandRequest<'_>,
            _cx: &ToolContext,
        ) -> Result<CommandOutcome, ToolError> {
            self.runs.lock().unwrap().push(request.command.to_owned());
            Ok(CommandOutcome {
                output: "from the terminal".to_owned(),
                truncated: false,
                exit_code: Some(3),
                signal: None,
                ending: CommandEnding::Exited,
                handle: "t1".to_owned(),
            })
        }
    }

    #[test]
    fn the_file_tools_read_and_write_through_the_backend_and_leave_the_disk_alone() {
        let dir = tempfile::tempdir().unwrap();
        let buffers = Arc::new(Buffers::default());
        let cx = ToolContext::new(dir.path())
            .unwrap()
            .with_backends(ToolBackends {
                files: Some(Arc::clone(&buffers) as Arc<dyn FileAccess>),
                commands: None,
            });
        let notes = cx.cwd().join("notes.txt");
        std::fs::write(&notes, "on disk\n").unwrap();
        buffers
            .files
            .lock()
            .unwrap()
            .insert(notes.clone(), "in the buffer\n".to_owned());

        let read = crate::tools::read::ReadTool::new().execute(&json!({"path": "notes.txt"}), &cx);
        assert_eq!(read.content, "in the buffer");
        let edit = crate::tools::edit::EditTool::new().execute(
            &json!({"path": "notes.txt", "old_text": "buffer", "new_text": "editor"}),
            &cx,
        );
        assert!(!edit.is_error, "{}", edit.content);
        assert_eq!(edit.mutation, Mutation::Applied);
        let write = crate::tools::write::WriteTool::new()
            .execute(&json!({"path": "sub/new.txt", "content": "fresh\n"}), &cx);
        assert!(!write.is_error, "{}", write.content);
        let outside = crate::tools::read::ReadTool::new().execute(&json!({"path": "../x"}), &cx);
        assert!(outside.is_error);

        assert_eq!(
            *buffers.log.lock().unwrap(),
            [
                "read notes.txt",
                "read notes.txt",
                "write notes.txt",
                "write sub/new.txt"
            ]
        );
        assert_eq!(
            buffers
                .files
                .lock()
                .unwrap()
                .get(&notes)
                .map(String::as_str),
            Some("in the editor\n")
        );
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "on disk\n");
        assert!(!cx.cwd().join("sub").exists());
    }

    #[test]
    fn bash_hands_commands_to_the_runner_only_while_unsandboxed() {
        let dir = tempfile::tempdir().unwrap();
        let terminal = Arc::new(Terminal::default());
        let approval = ApprovalCell::new(Approval::Full);
        let cx = ToolContext::new(dir.path())
            .unwrap()
            .with_approval(approval.clone())
            .with_backends(ToolBackends {
                files: None,
                commands: Some(Arc::clone(&terminal) as Arc<dyn CommandRunner>),
            });
        let bash = crate::tools::bash::BashTool::new();
        let full = bash.execute(&json!({"command": "echo here > here.txt"}), &cx);
        assert_eq!(full.content, "from the terminal\n[exit code 3]");
        assert!(full.is_error);
        assert_eq!(full.details["terminal"], "t1");
        assert!(!cx.cwd().join("here.txt").exists());

        approval.set(Approval::Workspace);
        let local = bash.execute(&json!({"command": "echo here > here.txt"}), &cx);
        assert!(!local.is_error, "{}", local.content);
        assert!(cx.cwd().join("here.txt").exists());
        assert_eq!(*terminal.runs.lock().unwrap(), ["echo here > here.txt"]);
    }

    #[test]
    fn an_editors_terminal_takes_no_background_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let terminal = Arc::new(Terminal::default());
        let cx = ToolContext::new(dir.path())
            .unwrap()
            .with_approval(ApprovalCell::new(Approval::Full))
            .with_backends(ToolBackends {
                files: None,
                commands: Some(Arc::clone(&terminal) as Arc<dyn CommandRunner>),
            });
        let bash = crate::tools::bash::BashTool::new();
        let refused = bash.execute(&json!({"command": "sleep 100", "background": true}), &cx);
        assert!(refused.is_error);
        assert_eq!(refused.mutation, Mutation::NotApplied);
        assert!(
            refused
                .content
                .contains("bash: background jobs cannot run in the editor's terminal"),
            "{}",
            refused.content
        );
        assert!(terminal.runs.lock().unwrap().is_empty());
        assert!(cx.jobs().list().is_empty());
    }
}
