//! The store's error type: what happened, why, and what to do next.

use std::fmt;

/// What kind of failure a [`StoreError`] reports; callers branch on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An operating-system I/O call failed.
    Io,
    /// The file does not start with a valid session header.
    BadHeader,
    /// The header names a format version this build cannot read.
    UnsupportedVersion,
    /// A frame declares a size over the configured limit; nothing was allocated for it.
    FrameOverLimit,
    /// More corrupt frames were found than the configured bound allows.
    TooManyCorruptFrames,
    /// Framing was lost at an offset while complete frames exist after it.
    FramingAmbiguity,
    /// A reference names no session, or more than one.
    NotFound,
    /// A reference is ambiguous (an id prefix matching several sessions).
    Ambiguous,
    /// A name or id is already taken.
    AlreadyExists,
    /// An argument is malformed (a name, an entry, a dump line).
    Invalid,
    /// Another process holds the session's lock and waiting was not requested.
    Locked,
    /// Stored content does not decode (a compressed payload whose checksum
    /// matched but which does not decompress to its declared size).
    Malformed,
}

/// An error from the session store.
///
/// Its message states what happened, why, and the next corrective action,
/// naming the offending value (a path, an offset, a name).
#[derive(Debug)]
pub struct StoreError {
    kind: ErrorKind,
    message: String,
    offset: Option<u64>,
    source: Option<std::io::Error>,
}

impl StoreError {
    /// Creates an error of `kind` with a complete message.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            offset: None,
            source: None,
        }
    }

    /// Creates an error tied to a byte offset in a session file.
    pub(crate) fn at(kind: ErrorKind, offset: u64, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            offset: Some(offset),
            source: None,
        }
    }

    /// Wraps an I/O error with what was being done and to which path.
    pub(crate) fn io(doing: &str, path: &std::path::Path, err: std::io::Error) -> Self {
        let message = format!(
            "could not {doing} {}: {err}; check that the path exists and is writable, and that the disk is not full",
            path.display()
        );
        Self {
            kind: ErrorKind::Io,
            message,
            offset: None,
            source: Some(err),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The byte offset in the session file the error concerns, when there is one.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
