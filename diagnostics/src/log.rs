//! The product log: one line per reported diagnostic or note, appended to a
//! file.
//!
//! A [`Log`] holds a [`Level`] and a file path. Writing a [`Diagnostic`] at
//! or above the level appends one line — UTC timestamp, level, code, then
//! what, why, next and the offending value and its source — with every
//! registered secret redacted ([`crate::secrets`]). The file is opened on
//! the first line written, in append mode (its directory is created when
//! missing); a process that writes nothing never touches it. When the file
//! cannot be opened, one warning naming the path and the OS error goes to
//! standard error and every later line is dropped: the program goes on.
//!
//! The process-wide log is set up with [`install`], which only stores a
//! function: the function runs (and decides the level and the file) on the
//! first [`report`] or [`note`], so installing costs nothing at startup and
//! starts no thread.
//!
//! ```text
//! 2026-11-30T06:45:59.123Z WARN config.unknown-key: there is no option `tui.colour` | why: ... | next: ... | value: tui.colour | at: /home/u/.config/smith/config.kdl:3:1
//! ```

use std::fmt::{self, Write as _};
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::diagnostic::{Diagnostic, Severity, Value};
use crate::render::Style;
use crate::secrets::redact;

/// How severe a log line is, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// An operation failed.
    Error,
    /// An operation went ahead with something the user should look at.
    Warn,
    /// What smith chose or did (provider, session, files written).
    Info,
    /// Detail for finding a problem.
    Debug,
    /// Everything, step by step.
    Trace,
}

impl Level {
    /// Every level, most severe first.
    pub const ALL: [Level; 5] = [
        Level::Error,
        Level::Warn,
        Level::Info,
        Level::Debug,
        Level::Trace,
    ];

    /// The lowercase name used in configuration (`warn`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    /// The level named `name` (as [`Level::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The level a diagnostic of `severity` is logged at.
    pub fn of(severity: Severity) -> Level {
        match severity {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warn,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a log writes and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The least severe level written.
    pub level: Level,
    /// The file lines are appended to.
    pub file: PathBuf,
}

/// A log over one file, opened on the first line written.
#[derive(Debug)]
pub struct Log {
    settings: Settings,
    file: OnceLock<Option<Mutex<File>>>,
}

impl Log {
    /// A log with `settings`; nothing is opened yet.
    pub fn new(settings: Settings) -> Log {
        Log {
            settings,
            file: OnceLock::new(),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether a line at `level` is written.
    pub fn enabled(&self, level: Level) -> bool {
        level <= self.settings.level
    }

    /// Appends `diag` when its severity is at or above the level.
    pub fn diagnostic(&self, diag: &Diagnostic) {
        let level = Level::of(diag.severity());
        if self.enabled(level) {
            self.write(&line(level, diag));
        }
    }

    /// Appends a note at `level` (`info`, `debug`, ...) under `code` when the
    /// level is written.
    pub fn note(&self, level: Level, code: &str, message: &str) {
        if self.enabled(level) {
            let mut text = String::new();
            let _ = write!(
                text,
                "{} {} {}: {}",
                timestamp(SystemTime::now()),
                level.as_str().to_uppercase(),
                one_line(code),
                one_line(message)
            );
            self.write(&text);
        }
    }

    fn write(&self, text: &str) {
        let Some(file) = self.file.get_or_init(|| self.open()) else {
            return;
        };
        let mut record = redact(text).into_owned();
        record.push('\n');
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        // One write per line: O_APPEND keeps processes sharing the file from
        // interleaving. A failed write is not reported again: the log is a
        // record of what was already reported elsewhere.
        let _ = file.write_all(record.as_bytes());
    }

    fn open(&self) -> Option<Mutex<File>> {
        match open_append(&self.settings.file) {
            Ok(file) => Some(Mutex::new(file)),
            Err(e) => {
                eprint!(
                    "{}",
                    open_failed(&self.settings.file, &e).render_terminal(Style::for_stderr())
                );
                None
            }
        }
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// The warning for a log file that cannot be opened.
pub fn open_failed(path: &Path, err: &io::Error) -> Diagnostic {
    Diagnostic::warning(
        "log.open-failed",
        format!("could not open the log file {}", path.display()),
        format!("{err}; smith goes on without writing a log"),
        "set `log.file` (SMITH_LOG_FILE) to a file smith may write, or fix the permissions of its directory",
    )
    .with_value(path.display())
}

/// The one log line for `diag`, not yet redacted.
fn line(level: Level, diag: &Diagnostic) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{} {} {}: {} | why: {} | next: {}",
        timestamp(SystemTime::now()),
        level.as_str().to_uppercase(),
        one_line(diag.code()),
        one_line(diag.what()),
        one_line(diag.why()),
        one_line(diag.next()),
    );
    match diag.value() {
        Some(Value::Shown(v)) => {
            let _ = write!(out, " | value: {}", one_line(v));
        }
        Some(Value::Withheld) => out.push_str(" | value: [withheld]"),
        None => {}
    }
    if let Some(surface) = diag.surface() {
        let _ = write!(out, " | at: {}", one_line(&surface.to_string()));
    }
    out
}

/// `text` with line breaks turned into spaces, so one record is one line.
fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// `t` as an RFC 3339 UTC timestamp with milliseconds.
fn timestamp(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// `ms` (milliseconds since the Unix epoch) as a UTC date and minute,
/// `2026-12-03 10:22`: how listings show when something happened.
pub fn utc_minute(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Year, month, day of the day `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for non-negative days): the one date conversion
/// every UTC time smith prints goes through.
pub fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

type Resolve = fn() -> Option<Settings>;

static RESOLVE: OnceLock<Resolve> = OnceLock::new();
static GLOBAL: OnceLock<Option<Log>> = OnceLock::new();

/// Sets up the process-wide log: `resolve` decides the settings (or `None`
/// for no log) when the first line is written. Only the first call counts.
pub fn install(resolve: Resolve) {
    let _ = RESOLVE.set(resolve);
}

/// The process-wide log, once [`install`]ed and resolved.
pub fn global() -> Option<&'static Log> {
    GLOBAL
        .get_or_init(|| RESOLVE.get().and_then(|resolve| resolve()).map(Log::new))
        .as_ref()
}

/// Writes a diagnostic that was reported to the user to the process-wide
/// log, when its severity is at or above the level.
pub fn report(diag: &Diagnostic) {
    if let Some(log) = global() {
        log.diagnostic(diag);
    }
}

/// Writes a note to the process-wide log when `level` is written.
pub fn note(level: Level, code: &str, message: &str) {
    if let Some(log) = global() {
        log.note(level, code, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Surface;
    use std::time::Duration;

    /// A fresh directory under the system temp dir, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("smith-diag-log-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn log_at(level: Level) -> (Scratch, Log) {
        let dir = Scratch::new();
        let file = dir.path().join("nested").join("smith.log");
        (dir, Log::new(Settings { level, file }))
    }

    fn read(log: &Log) -> Vec<String> {
        std::fs::read_to_string(&log.settings().file)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn both() -> (Diagnostic, Diagnostic) {
        (
            Diagnostic::error("t.failed", "the thing failed", "it broke", "fix it"),
            Diagnostic::warning("t.odd", "the thing is odd", "it looks odd", "look at it"),
        )
    }

    #[test]
    fn warn_writes_warnings_and_errors() {
        let (_dir, log) = log_at(Level::Warn);
        let (error, warning) = both();
        log.diagnostic(&warning);
        log.diagnostic(&error);
        log.note(Level::Info, "t.info", "chose something");
        let lines = read(&log);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0]
                .contains(" WARN t.odd: the thing is odd | why: it looks odd | next: look at it")
        );
        assert!(
            lines[1].contains(" ERROR t.failed: the thing failed | why: it broke | next: fix it")
        );
    }

    #[test]
    fn error_writes_only_errors() {
        let (_dir, log) = log_at(Level::Error);
        let (error, warning) = both();
        log.diagnostic(&warning);
        log.diagnostic(&error);
        let lines = read(&log);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(" ERROR t.failed: "), "{lines:?}");
    }

    #[test]
    fn info_and_debug_notes_follow_the_level() {
        let (_dir, log) = log_at(Level::Info);
        log.note(Level::Info, "t.info", "chose\nsomething");
        log.note(Level::Debug, "t.debug", "detail");
        let lines = read(&log);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].ends_with(" INFO t.info: chose something"),
            "{lines:?}"
        );
    }

    #[test]
    fn nothing_is_opened_until_a_line_is_written() {
        let (_dir, log) = log_at(Level::Error);
        log.diagnostic(&both().1);
        assert!(!log.settings().file.exists());
        assert!(!log.settings().file.parent().unwrap().exists());
    }

    #[test]
    fn secrets_never_reach_the_file() {
        let secret = "sk-log-unit-secret-55831";
        crate::secrets::register(secret);
        let (_dir, log) = log_at(Level::Trace);
        log.diagnostic(
            &Diagnostic::error(
                "t.auth",
                format!("the key {secret} was refused"),
                format!("the server said {secret} is revoked"),
                "set a new key",
            )
            .with_value(secret)
            .with_surface(Surface::env("SMITH_TEST_KEY")),
        );
        log.note(Level::Debug, "t.note", &format!("sent {secret}"));
        let text = std::fs::read_to_string(&log.settings().file).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert_eq!(text.matches("[redacted]").count(), 4, "{text}");
        assert!(
            text.contains("| at: environment variable SMITH_TEST_KEY"),
            "{text}"
        );
    }

    #[test]
    fn an_unopenable_file_drops_lines_and_goes_on() {
        let dir = Scratch::new();
        let blocker = dir.path().join("not-a-dir");
        std::fs::write(&blocker, "x").unwrap();
        let log = Log::new(Settings {
            level: Level::Trace,
            file: blocker.join("smith.log"),
        });
        log.diagnostic(&both().0);
        log.diagnostic(&both().0);
        assert!(!blocker.join("smith.log").exists());
        let err = open_append(&blocker.join("smith.log")).unwrap_err();
        let warning = open_failed(&blocker.join("smith.log"), &err);
        let text = warning.render_plain();
        assert!(
            text.contains(&blocker.join("smith.log").display().to_string()),
            "{text}"
        );
        assert!(text.contains(&err.to_string()), "{text}");
    }

    #[test]
    fn levels_parse_and_order() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.as_str()), Some(l));
        }
        assert_eq!(Level::parse("verbose"), None);
        assert!(Level::Error < Level::Warn && Level::Debug < Level::Trace);
    }

    #[test]
    fn minutes_are_utc() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        // 2026-12-03T10:22:59.999Z
        assert_eq!(utc_minute(1_796_293_379_999), "2026-12-03 10:22");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00");
    }

    #[test]
    fn timestamps_are_utc_rfc3339() {
        let t = UNIX_EPOCH + Duration::from_millis(1_764_485_159_123);
        assert_eq!(timestamp(t), "2025-11-30T06:45:59.123Z");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }
}
