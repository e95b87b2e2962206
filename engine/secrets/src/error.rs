//! Why the registry refused something.

use std::fmt;

use smith_diag::Diagnostic;

/// What kind of refusal an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The value is shorter than [`crate::MIN_SECRET_LEN`]: redacting it
    /// would replace ordinary text.
    TooShort,
    /// The value is longer than [`crate::MAX_SECRET_LEN`].
    TooLong,
    /// The name does not fit the placeholder syntax.
    InvalidName,
    /// The value overlaps a placeholder (it contains one, sits inside one,
    /// or could join one), so redaction would not be stable.
    Ambiguous,
    /// The operating system could not supply random bytes.
    Random,
    /// A handoff ticket that is unknown or was already redeemed.
    Handoff,
    /// A registration record that cannot be read back.
    Record,
}

/// A refusal: its [`ErrorKind`] and a [`Diagnostic`] that says what
/// happened, why and what to do next. The diagnostic never holds the
/// secret value.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    diagnostic: Diagnostic,
}

impl Error {
    pub(crate) fn new(
        kind: ErrorKind,
        code: &str,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Error {
        Error {
            kind,
            diagnostic: Diagnostic::error(code, what, why, next),
        }
    }

    /// Marks the diagnostic as about a secret value without keeping it.
    pub(crate) fn withheld(mut self) -> Error {
        self.diagnostic = self.diagnostic.with_withheld_value();
        self
    }

    /// What kind of refusal this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The diagnostic to show.
    pub fn diagnostic(&self) -> &Diagnostic {
        &self.diagnostic
    }

    /// The diagnostic, for callers that report it.
    pub fn into_diagnostic(self) -> Diagnostic {
        self.diagnostic
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.diagnostic, f)
    }
}

impl std::error::Error for Error {}

impl From<Error> for Diagnostic {
    fn from(error: Error) -> Diagnostic {
        error.diagnostic
    }
}
