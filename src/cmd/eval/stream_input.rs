//! The prompts of `smith eval --input-format stream-json`: Claude Code
//! user messages on standard input, one a line, read on a thread of their
//! own and turned into prompts by [`smith_host::stream_json::user_prompt`].

use std::io::{BufRead, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use anyhow::Context;
use smith_host::stream_json;
use smith_tui::signals;

use super::STDIN_PROMPT;

/// The line of input `--input-format stream-json` reads next: a prompt,
/// the end of standard input, a line that is not a user message, or an
/// ending signal that came while waiting for it.
pub(super) enum Next {
    Prompt(String),
    End,
    Refused(smith_diag::Diagnostic),
    Signal(libc::c_int),
}

/// The prompts of `--input-format stream-json`: standard input read on a
/// thread of its own, one user message a line (each at most as large as a
/// prompt given as `-`), so that an ending signal is noticed while smith
/// waits for the next one. There is no deadline between lines: the
/// writer may take its time, and the end of standard input ends the
/// command.
pub(super) struct StreamInput {
    lines: Receiver<Result<String, smith_diag::Diagnostic>>,
}

impl StreamInput {
    pub(super) fn spawn() -> anyhow::Result<Self> {
        let (send, lines) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("eval-input".to_owned())
            .spawn(move || {
                let limit = STDIN_PROMPT.limit();
                let stdin = std::io::stdin();
                let mut reader = stdin.lock();
                for number in 1.. {
                    let mut bytes = Vec::new();
                    let read = (&mut reader)
                        .take(limit.saturating_add(1))
                        .read_until(b'\n', &mut bytes);
                    let line = match read {
                        Ok(0) => return,
                        Ok(_) => stream_line(bytes, number, limit),
                        Err(e) => Err(smith_diag::Diagnostic::error(
                            "input.io",
                            "standard input (--input-format stream-json) could not be read",
                            e.to_string(),
                            "pipe one user message a line into smith eval, and close standard input when done",
                        )),
                    };
                    match line {
                        Ok(None) => {}
                        Ok(Some(prompt)) => {
                            if send.send(Ok(prompt)).is_err() {
                                return;
                            }
                        }
                        Err(d) => {
                            // Nothing after a line that cannot be read is
                            // read.
                            let _ = send.send(Err(d));
                            return;
                        }
                    }
                }
            })
            .context("could not start the thread that reads standard input")?;
        Ok(Self { lines })
    }

    /// The first prompt, before anything runs.
    ///
    /// # Errors
    ///
    /// When the first line is not a user message, or standard input ends
    /// before one.
    pub(super) fn first(&self) -> anyhow::Result<String> {
        match self.lines.recv() {
            Ok(Ok(prompt)) => Ok(prompt),
            Ok(Err(d)) => Err(d.into()),
            Err(_) => Err(smith_diag::Diagnostic::error(
                "input.empty",
                "standard input (--input-format stream-json) brought no user message",
                "it ended before any line held one, so there is nothing to run",
                r#"pipe user messages in, one a line: {"type":"user","message":{"role":"user","content":"fix the tests"}}"#,
            )
            .with_surface(smith_diag::Surface::flag("--input-format"))
            .into()),
        }
    }

    /// Waits for the next line, watching for an ending signal.
    pub(super) fn next(&self) -> Next {
        loop {
            if let Some(signal) = signals::take() {
                return Next::Signal(signal);
            }
            let line = self.lines.recv_timeout(Duration::from_millis(50));
            // A signal that came while waiting wins over what came with it
            // (a Ctrl+C often closes the writer too).
            if let Some(signal) = signals::take() {
                return Next::Signal(signal);
            }
            match line {
                Ok(Ok(prompt)) => return Next::Prompt(prompt),
                Ok(Err(d)) => return Next::Refused(d),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Next::End,
            }
        }
    }
}

/// Line `number` of `--input-format stream-json` input, read as `bytes`
/// (at most one past `limit`): its prompt, or `None` for a blank line.
fn stream_line(
    mut bytes: Vec<u8>,
    number: usize,
    limit: u64,
) -> Result<Option<String>, smith_diag::Diagnostic> {
    let flag = || smith_diag::Surface::flag("--input-format");
    if bytes.len() as u64 > limit {
        return Err(smith_diag::Diagnostic::error(
            "input.too-large",
            format!("line {number} of standard input (--input-format stream-json) is too large"),
            format!(
                "a user message may take at most {} (the bound of a prompt)",
                smith_diag::input::size(limit)
            ),
            format!(
                "send a smaller prompt, or raise the bound with {}=MIB",
                smith_diag::input::LIMIT_ENV
            ),
        )
        .with_surface(flag()));
    }
    while bytes.ends_with(b"\n") || bytes.ends_with(b"\r") {
        bytes.pop();
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        smith_diag::Diagnostic::error(
            "input.not-utf8",
            format!(
                "line {number} of standard input (--input-format stream-json) is not UTF-8 text"
            ),
            format!(
                "byte {} starts a sequence that is not UTF-8",
                e.utf8_error().valid_up_to()
            ),
            "write JSON in UTF-8, one user message a line",
        )
        .with_surface(flag())
    })?;
    stream_json::user_prompt(&text, number)
}
