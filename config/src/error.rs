//! The crate's error type: a kind for code to match on, and a diagnostic for
//! people.

use std::fmt;

use smith_diag::{Diagnose, Diagnostic};

/// What kind of failure a [`ConfigError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration file is not valid KDL.
    Parse,
    /// A value has the wrong type or is out of range.
    InvalidValue,
    /// A key is not declared and its section rejects unknown keys.
    UnknownKey,
    /// The same option is set twice in one file.
    Duplicate,
    /// A file or directory could not be read or written.
    Io,
    /// The trust store is unreadable or a trust operation failed.
    Trust,
    /// No directory could be determined for user files.
    NoHome,
    /// A path given as a project has no `.smith` directory.
    NotAProject,
}

/// A configuration failure, carrying the diagnostic to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    kind: ErrorKind,
    diagnostic: Diagnostic,
}

impl ConfigError {
    pub(crate) fn new(kind: ErrorKind, diagnostic: Diagnostic) -> ConfigError {
        ConfigError { kind, diagnostic }
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The diagnostic: what happened, why, what to do next.
    pub fn diagnostic(&self) -> &Diagnostic {
        &self.diagnostic
    }

    /// Gives up the diagnostic.
    pub fn into_diagnostic(self) -> Diagnostic {
        self.diagnostic
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.diagnostic, f)
    }
}

impl std::error::Error for ConfigError {}

impl Diagnose for ConfigError {
    /// A copy of the diagnostic the error carries.
    fn to_diagnostic(&self) -> Diagnostic {
        self.diagnostic.clone()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[smith_diag::finder::<ConfigError>];

pub(crate) fn io_error(
    action: &str,
    path: &std::path::Path,
    err: &std::io::Error,
    next: &str,
) -> ConfigError {
    ConfigError::new(
        ErrorKind::Io,
        Diagnostic::error(
            "config.io",
            format!("could not {action} {}", path.display()),
            format!("the operating system reported: {err}"),
            next.to_owned(),
        )
        .with_surface(smith_diag::Surface::file(path)),
    )
}
