//! The crate's error: a kind for code, a [`Diagnostic`] for people.

use std::fmt;
use std::path::Path;

use smith_diag::{Diagnostic, Surface};

/// What went wrong, for code that branches on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not a snapshot id.
    InvalidId,
    /// No snapshot with that id is stored.
    UnknownSnapshot,
    /// A path names something outside the project root.
    PathEscapes,
    /// A path goes through a symbolic link, which could lead out of the root.
    SymlinkEscape,
    /// Files changed outside smith since the expected snapshot.
    Conflict,
    /// A stored object is missing or its bytes do not match its id.
    Corrupt,
    /// An operating-system call failed.
    Io,
    /// The options are not usable (an ignore pattern, the root).
    InvalidOptions,
    /// Another `Vcs` has the store open, so it cannot be collected now.
    Busy,
}

impl ErrorKind {
    /// The stable diagnostic code suffix.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidId => "invalid-id",
            ErrorKind::UnknownSnapshot => "unknown-snapshot",
            ErrorKind::PathEscapes => "path-escapes",
            ErrorKind::SymlinkEscape => "symlink-escape",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Io => "io",
            ErrorKind::InvalidOptions => "invalid-options",
            ErrorKind::Busy => "busy",
        }
    }
}

/// An error of a VCS operation. Nothing in the project was changed when
/// an operation returns one (a restore rolls back before returning it).
#[derive(Debug)]
pub struct VcsError {
    kind: ErrorKind,
    diagnostic: Diagnostic,
    conflicts: Vec<std::path::PathBuf>,
}

impl VcsError {
    /// An error of `kind` with its three parts; the code is `vcs.<kind>`.
    pub(crate) fn new(kind: ErrorKind, what: String, why: &str, next: &str) -> VcsError {
        VcsError {
            kind,
            diagnostic: Diagnostic::error(format!("vcs.{}", kind.name()), what, why, next),
            conflicts: Vec::new(),
        }
    }

    pub(crate) fn with_value(mut self, value: impl fmt::Display) -> VcsError {
        self.diagnostic = self.diagnostic.with_value(value);
        self
    }

    pub(crate) fn with_conflicts(mut self, paths: Vec<std::path::PathBuf>) -> VcsError {
        self.conflicts = paths;
        self
    }

    /// An operating-system error while doing `doing` on `path`.
    pub(crate) fn io(doing: &str, path: &Path, err: &std::io::Error) -> VcsError {
        let mut e = VcsError::new(
            ErrorKind::Io,
            format!("{doing} {} failed: {err}", path.display()),
            "the snapshot store and the project folder must be readable and writable by smith",
            "check the permissions and free space of that path, then run the operation again",
        );
        e.diagnostic = e.diagnostic.with_surface(Surface::file(path));
        e
    }

    /// A stored object that is missing or damaged.
    pub(crate) fn corrupt(what: String) -> VcsError {
        VcsError::new(
            ErrorKind::Corrupt,
            what,
            "every stored object is checked against its content hash when it is read",
            "take a new snapshot; snapshots that need the damaged object cannot be restored",
        )
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The diagnostic (what happened, why, next action).
    pub fn diagnostic(&self) -> &Diagnostic {
        &self.diagnostic
    }

    /// The diagnostic, owned.
    pub fn into_diagnostic(self) -> Diagnostic {
        self.diagnostic
    }

    /// For [`ErrorKind::Conflict`]: the paths (relative to the root) that
    /// changed outside smith.
    pub fn conflicts(&self) -> &[std::path::PathBuf] {
        &self.conflicts
    }
}

impl fmt::Display for VcsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.diagnostic.fmt(f)
    }
}

impl std::error::Error for VcsError {}

impl From<VcsError> for Diagnostic {
    fn from(e: VcsError) -> Diagnostic {
        e.diagnostic
    }
}

impl From<&VcsError> for Diagnostic {
    fn from(e: &VcsError) -> Diagnostic {
        e.diagnostic.clone()
    }
}

impl smith_diag::Diagnose for VcsError {
    fn to_diagnostic(&self) -> Diagnostic {
        self.diagnostic().clone()
    }
}
