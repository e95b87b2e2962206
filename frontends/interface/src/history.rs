//! The input history kept across runs: every line the editor records
//! (prompts, steers, follow-ups, commands) is appended to
//! `<state dir>/input-history.jsonl`, one JSON string per line, newest
//! last, with every credential smith knows redacted. The interface starts
//! with the newest [`KEPT`] entries, so Up recalls what was sent in earlier
//! runs too.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The file's name in the state directory.
pub(super) const FILE: &str = "input-history.jsonl";

/// How many entries the interface starts with; the file is cut back to
/// these when it holds twice as many.
pub(super) const KEPT: usize = 1000;

/// The history file under `state_dir`.
pub(super) fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The newest [`KEPT`] entries of `file`, oldest first; none when it does
/// not exist. A line that is not a JSON string (a torn last write) is
/// skipped. A file holding more than twice [`KEPT`] entries is rewritten
/// with the newest [`KEPT`].
///
/// # Errors
///
/// When the file exists but cannot be read: the message says what, why and
/// what to do.
pub(super) fn load(file: &Path) -> Result<Vec<String>, String> {
    let text = match std::fs::read(file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(format!(
                "the input history of earlier runs was not loaded: {} could not be read ({err}); Up recalls only this run's input; check the file's permissions or remove it",
                file.display()
            ));
        }
    };
    let mut entries: Vec<String> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<String>(line).ok())
        .collect();
    if entries.len() > 2 * KEPT {
        entries.drain(..entries.len() - KEPT);
        // Cutting back is housekeeping: when it fails the file is only
        // larger than it needs to be.
        let _ = rewrite(file, &entries);
    }
    let from = entries.len().saturating_sub(KEPT);
    entries.drain(..from);
    Ok(entries)
}

/// Appends `entries` to `file` (created with its directory when missing),
/// each redacted of the credentials this process knows.
///
/// # Errors
///
/// When the file cannot be written: the message says what, why and what
/// to do.
pub(super) fn append(file: &Path, entries: &[String]) -> Result<(), String> {
    let redactor = smith_host::secrets::current().map(|s| s.redactor());
    let mut lines = String::new();
    for entry in entries {
        let text = match &redactor {
            Some(r) => r.redact_str(entry).into_owned(),
            None => entry.clone(),
        };
        lines.push_str(&serde_json::Value::String(text).to_string());
        lines.push('\n');
    }
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
        })
        .and_then(|mut f| f.write_all(lines.as_bytes()));
    written.map_err(|err| {
        format!(
            "the input history is not saved for later runs: {} could not be written ({err}); this run's input is still recalled with Up; check that the state directory is writable (SMITH_HOME or XDG_STATE_HOME)",
            file.display()
        )
    })
}

/// Replaces `file` with `entries`, through a temporary file renamed over
/// it.
fn rewrite(file: &Path, entries: &[String]) -> std::io::Result<()> {
    let mut text = String::new();
    for entry in entries {
        text.push_str(&serde_json::Value::String(entry.clone()).to_string());
        text.push('\n');
    }
    let temporary = file.with_extension("jsonl.tmp");
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, file)
}
