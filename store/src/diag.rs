//! Store errors as [`smith_diag::Diagnostic`]s.
//!
//! A [`StoreError`]'s message is written as "what happened; next action"
//! and names the offending value (a path, a name, a reference, an offset).
//! The conversion keeps that sentence as *what* and *next*, adds *why* from
//! the error's kind, and carries the offending value: the byte offset when
//! the error has one, otherwise the first quoted value of the message. The
//! surface is the session store; a caller that knows the file attaches it
//! with [`Diagnostic::with_surface`].

use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::error::{ErrorKind, StoreError};

impl ErrorKind {
    /// The stable kebab-case name of the kind, as used in diagnostic codes
    /// (`store.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::BadHeader => "bad-header",
            ErrorKind::UnsupportedVersion => "unsupported-version",
            ErrorKind::FrameOverLimit => "frame-over-limit",
            ErrorKind::TooManyCorruptFrames => "too-many-corrupt-frames",
            ErrorKind::FramingAmbiguity => "framing-ambiguity",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Ambiguous => "ambiguous",
            ErrorKind::AlreadyExists => "already-exists",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Locked => "locked",
            ErrorKind::Malformed => "malformed",
        }
    }

    /// Why an error of this kind stops the operation.
    fn why(self) -> &'static str {
        match self {
            ErrorKind::Io => "the operating system refused or failed a file operation",
            ErrorKind::BadHeader => {
                "a session file must start with the smith session header (docs/session-format.md)"
            }
            ErrorKind::UnsupportedVersion => {
                "the file was written by a newer format version than this build reads"
            }
            ErrorKind::FrameOverLimit => {
                "a frame larger than the configured limit is refused before anything is allocated for it"
            }
            ErrorKind::TooManyCorruptFrames => {
                "the number of corrupt frames a load may skip is bounded, so a damaged file cannot pass for a session"
            }
            ErrorKind::FramingAmbiguity => {
                "frame boundaries are lost while complete frames follow, so no frame after that point can be trusted"
            }
            ErrorKind::NotFound => "the reference names no session in the store",
            ErrorKind::Ambiguous => "the reference matches more than one session",
            ErrorKind::AlreadyExists => "session names and ids are unique within a store",
            ErrorKind::Invalid => "the value does not satisfy the store's rules",
            ErrorKind::Locked => {
                "another smith runtime serves the session, and two runtimes on one session would interleave their conversations on one branch"
            }
            ErrorKind::Malformed => "stored content does not decode to what its frame declares",
        }
    }

    /// The next action when the message itself does not give one.
    fn next(self) -> &'static str {
        match self {
            ErrorKind::Io => {
                "check that the path exists and is writable, and that the disk is not full"
            }
            ErrorKind::BadHeader | ErrorKind::Malformed => {
                "run `smith session repair REF` or dump the session to recover its entries"
            }
            ErrorKind::UnsupportedVersion => "open the file with a newer smith",
            ErrorKind::FrameOverLimit
            | ErrorKind::TooManyCorruptFrames
            | ErrorKind::FramingAmbiguity => {
                "run `smith session repair REF` to keep the complete frames, or raise the limit if the file is trusted"
            }
            ErrorKind::NotFound | ErrorKind::Ambiguous => {
                "run `smith session list` to see the sessions and pass one of their names or ids"
            }
            ErrorKind::AlreadyExists => {
                "choose another name, or delete or rename the existing session"
            }
            ErrorKind::Invalid => "correct the value as the message describes",
            ErrorKind::Locked => {
                "fork the session (`smith session fork REF`) and open the fork, or end the other smith first"
            }
        }
    }
}

impl Diagnose for StoreError {
    /// This error as a diagnostic (`store.<kind>`): the message's account of
    /// what happened and its next action, why from the kind, the offending
    /// value, and the session store as the surface.
    fn to_diagnostic(&self) -> Diagnostic {
        let kind = self.kind();
        let d = Diagnostic::from_message(
            format!("store.{}", kind.name()),
            &self.to_string(),
            kind.why(),
            kind.next(),
        )
        .with_surface(Surface::other("the session store"));
        match self.offset() {
            Some(offset) => d
                .with_value(format!("byte {offset}"))
                .with_field("session file"),
            None => d,
        }
    }
}

impl From<&StoreError> for Diagnostic {
    fn from(err: &StoreError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<StoreError> for Diagnostic {
    fn from(err: StoreError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[smith_diag::finder::<StoreError>];

#[cfg(test)]
mod tests {
    use super::*;
    use smith_diag::Value;

    fn shown(d: &Diagnostic) -> String {
        match d.value() {
            Some(Value::Shown(v)) => v.clone(),
            other => panic!("no offending value in {d}: {other:?}"),
        }
    }

    #[test]
    fn every_kind_converts_with_all_parts_and_its_value() {
        let kinds = [
            ErrorKind::Io,
            ErrorKind::BadHeader,
            ErrorKind::UnsupportedVersion,
            ErrorKind::FrameOverLimit,
            ErrorKind::TooManyCorruptFrames,
            ErrorKind::FramingAmbiguity,
            ErrorKind::NotFound,
            ErrorKind::Ambiguous,
            ErrorKind::AlreadyExists,
            ErrorKind::Invalid,
            ErrorKind::Locked,
            ErrorKind::Malformed,
        ];
        let mut codes = std::collections::BTreeSet::new();
        for kind in kinds {
            let plain = StoreError::new(kind, "session \"demo\" is troubled; do the thing");
            let d = Diagnostic::from(&plain);
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.code(), format!("store.{}", kind.name()));
            assert_eq!(d.what(), "session \"demo\" is troubled");
            assert_eq!(d.why(), kind.why());
            assert_eq!(d.next(), "do the thing");
            assert_eq!(shown(&d), "\"demo\"");
            assert_eq!(d.surface(), Some(&Surface::other("the session store")));
            codes.insert(d.code().to_owned());

            // Without a "; next" the kind supplies the action; an offset is
            // the offending value.
            let at = StoreError::at(kind, 42, "frame trouble");
            let d = at.to_diagnostic();
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.what(), "frame trouble");
            assert_eq!(d.next(), kind.next());
            assert_eq!(shown(&d), "byte 42");
        }
        assert_eq!(codes.len(), kinds.len());
    }

    #[test]
    fn a_real_store_error_names_the_reference() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(dir.path()).unwrap();
        let err = store.load("no-such-session").unwrap_err();
        let d = err.to_diagnostic();
        assert_eq!(d.code(), "store.not-found");
        assert!(d.is_complete());
        assert_eq!(shown(&d), "\"no-such-session\"");
        assert!(d.next().contains("smith session list"), "{d}");
    }
}
