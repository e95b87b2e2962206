//! The suite-wide diagnostics audit.
//!
//! With `SMITH_DIAG_LOG=/some/file.jsonl` in the environment, every
//! [`Diagnostic`] the process builds is appended to that file as one JSON line
//! when it is dropped: its JSON rendering plus its terminal rendering, both
//! already redacted. Nothing is written when the variable is unset, and the
//! check costs one atomic load per drop.
//!
//! [`audit_log`] checks such a file: every record must carry a code, what,
//! why and next, and no record may contain any of the given secret values.
//! [`audit_test_suite`] runs a test binary again (the current one, minus the
//! calling test) with the log switched on, then audits what it produced — so
//! one test per crate covers every diagnostic that crate's suite builds.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::diagnostic::Diagnostic;

/// The environment variable that switches the log on and names its file.
pub const LOG_ENV: &str = "SMITH_DIAG_LOG";

static LOG: OnceLock<Option<Mutex<File>>> = OnceLock::new();

fn log_file() -> Option<&'static Mutex<File>> {
    LOG.get_or_init(|| {
        let path = std::env::var_os(LOG_ENV)?;
        if path.is_empty() {
            return None;
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(Mutex::new)
    })
    .as_ref()
}

/// Whether this process records diagnostics (`SMITH_DIAG_LOG` was set and
/// its file could be opened).
pub fn enabled() -> bool {
    log_file().is_some()
}

pub(crate) fn record(diag: &Diagnostic) {
    let Some(file) = log_file() else {
        return;
    };
    let mut json = diag.to_json();
    if let Some(obj) = json.as_object_mut() {
        obj.insert(
            "terminal".into(),
            serde_json::Value::String(diag.render_plain()),
        );
    }
    let mut line = json.to_string();
    line.push('\n');
    let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
    // One write per record: O_APPEND keeps records from interleaving. A
    // failed write cannot be reported from a destructor; the audit notices
    // the missing records instead.
    let _ = file.write_all(line.as_bytes());
}

/// What an audit found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// Number of diagnostics recorded.
    pub records: usize,
    /// How many records there were per code.
    pub codes: BTreeMap<String, usize>,
    /// Records whose rendering shows `[redacted]`.
    pub redacted: usize,
    /// One line per problem found; empty when the audit passed.
    pub problems: Vec<String>,
}

impl AuditReport {
    /// Whether no problem was found.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Audits a log written under [`LOG_ENV`].
///
/// # Errors
///
/// When the file cannot be read.
pub fn audit_log(path: &Path, secrets: &[&str]) -> io::Result<AuditReport> {
    let text = std::fs::read_to_string(path)?;
    let mut report = AuditReport::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        report.records += 1;
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            if line.contains(secret) {
                report
                    .problems
                    .push(format!("record {n} contains a registered secret value"));
            }
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            report
                .problems
                .push(format!("record {n} is not JSON: {line}"));
            continue;
        };
        let code = value["code"].as_str().unwrap_or_default().to_owned();
        for part in ["code", "what", "why", "next"] {
            if value[part].as_str().is_none_or(|s| s.trim().is_empty()) {
                report.problems.push(format!(
                    "record {n} (code `{code}`) has no `{part}`: {line}"
                ));
            }
        }
        if !matches!(value["severity"].as_str(), Some("error" | "warning")) {
            report
                .problems
                .push(format!("record {n} has no valid severity: {line}"));
        }
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            // Also look inside the decoded strings, in case escaping hid one.
            if value.to_string().contains(secret)
                || value["terminal"]
                    .as_str()
                    .is_some_and(|t| t.contains(secret))
            {
                report
                    .problems
                    .push(format!("record {n} (code `{code}`) leaks a secret"));
            }
        }
        if line.contains(crate::secrets::REDACTED) {
            report.redacted += 1;
        }
        *report.codes.entry(code).or_default() += 1;
    }
    Ok(report)
}

/// Runs the current test binary again with the log switched on, skipping
/// tests whose names contain `skip` (the caller), and audits the log.
///
/// The child inherits the environment and working directory; the variable
/// `SMITH_DIAG_AUDIT_CHILD=1` tells a test it runs inside an audit.
///
/// # Errors
///
/// A message with the child's output when the binary cannot be started or
/// its tests fail, or when the log cannot be read.
pub fn audit_test_suite(skip: &str, secrets: &[&str]) -> Result<AuditReport, String> {
    audit_test_suite_with_env(skip, secrets, &[])
}

/// [`audit_test_suite`] with extra environment variables for the child.
///
/// # Errors
///
/// As for [`audit_test_suite`].
pub fn audit_test_suite_with_env(
    skip: &str,
    secrets: &[&str],
    env: &[(&str, &str)],
) -> Result<AuditReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the test binary: {e}"))?;
    let log = unique_log_path();
    let output = Command::new(&exe)
        .args(["--skip", skip, "--test-threads", "2"])
        .env(LOG_ENV, &log)
        .env("SMITH_DIAG_AUDIT_CHILD", "1")
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&log);
        return Err(format!(
            "the audited suite failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let report =
        audit_log(&log, secrets).map_err(|e| format!("cannot read {}: {e}", log.display()));
    let _ = std::fs::remove_file(&log);
    report
}

fn unique_log_path() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!(
        "smith-diag-audit-{}-{nanos}.jsonl",
        std::process::id()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_flags_missing_parts_and_secrets() {
        let dir = std::env::temp_dir().join(format!("smith-diag-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"severity":"error","code":"a.b","what":"w","why":"y","next":"n"}"#,
                "\n",
                r#"{"severity":"error","code":"a.c","what":"w","why":"","next":"n"}"#,
                "\n",
                r#"{"severity":"warning","code":"a.d","what":"key sk-1234","why":"y","next":"n"}"#,
                "\n",
            ),
        )
        .unwrap();
        let report = audit_log(&path, &["sk-1234"]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(report.records, 3);
        assert!(!report.passed());
        assert!(report.problems.iter().any(|p| p.contains("has no `why`")));
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.contains("record 3") && p.contains("secret"))
        );
        assert!(!report.problems.iter().any(|p| p.contains("record 1")));
    }
}
