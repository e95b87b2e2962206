//! What a tool invocation hands back: [`ToolResult`], [`Mutation`] evidence
//! and the [`ToolError`] every failure is expressed as.
//!
//! A tool never panics and never returns a bare `Err`: every outcome, good or
//! bad, becomes a [`ToolResult`] so the loop can pair it with its call, the
//! effect journal can record it, and the model can read it. Failures carry a
//! [`ToolErrorKind`] for programs and a three-part message (what happened,
//! why, what to do next) for people and models.

use std::fmt;

use serde_json::{Map, Value};

/// Evidence of whether an invocation changed the world.
///
/// This is the three-state mutation evidence the effect journal records on
/// completion. Read-only tools always report [`Mutation::NotApplied`]. A
/// mutating tool that fails reports honestly which state it left behind:
/// an edit rejected before writing is `NotApplied`; a shell command killed
/// mid-run is `Unknown`, because whatever it did before the kill stays done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutation {
    /// The mutation happened (a file was replaced, a command ran to exit).
    Applied,
    /// Nothing was changed.
    NotApplied,
    /// The mutation may have partially or fully happened; nobody can tell.
    Unknown,
}

impl Mutation {
    /// The stable lower-case name used in JSON projections and journals:
    /// `applied`, `not-applied` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mutation::Applied => "applied",
            Mutation::NotApplied => "not-applied",
            Mutation::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one tool invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// Text for the model. Always bounded by the invocation's limits.
    pub content: String,
    /// Structured facts for frontends and the journal (a JSON object: paths,
    /// line ranges, exit codes, the error kind). Never needed by the model.
    pub details: Value,
    /// True when the invocation failed; `content` then explains the failure.
    pub is_error: bool,
    /// What the invocation did to the world.
    pub mutation: Mutation,
    /// Images and documents for the model, after `content` (a `read` of a
    /// PNG); empty for most results.
    pub media: Vec<smith_contract::Media>,
}

impl ToolResult {
    /// A successful result with the given model text, details and mutation.
    pub fn ok(content: String, details: Value, mutation: Mutation) -> Self {
        ToolResult {
            content,
            details,
            is_error: false,
            mutation,
            media: Vec::new(),
        }
    }

    /// The error kind recorded in `details.error.kind`, when this is an
    /// error produced from a [`ToolError`].
    pub fn error_kind(&self) -> Option<&str> {
        self.details.get("error")?.get("kind")?.as_str()
    }
}

/// What went wrong, for programs. The stable names (`as_str`) appear in
/// `details.error.kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// No tool of that name is active.
    UnknownTool,
    /// The arguments do not match the tool's parameter schema.
    InvalidArguments,
    /// A path (or a cwd) resolves outside every allowed root.
    OutsideRoots,
    /// The path does not exist.
    NotFound,
    /// The path exists but is the wrong kind of thing (a directory for read,
    /// a file for ls).
    WrongFileType,
    /// The file's bytes are not text.
    Binary,
    /// The file is too large for the operation.
    TooLarge,
    /// The file changed since the agent last read it.
    Stale,
    /// A mutation of an existing file was attempted before reading it.
    NotRead,
    /// `old_text` was not found.
    NoMatch,
    /// `old_text` was found more than once without `replace_all`.
    AmbiguousMatch,
    /// The replacement would not change the file.
    NoChange,
    /// A window starts beyond the end of the file.
    OffsetOutOfRange,
    /// A regex or glob pattern does not compile.
    BadPattern,
    /// The invocation was cancelled.
    Cancelled,
    /// The invocation ran out of time.
    TimedOut,
    /// A process could not be started.
    Spawn,
    /// A shell command exited with a non-zero status or by a signal.
    CommandFailed,
    /// An operating-system I/O error.
    Io,
    /// The sandbox refused the call (a read-denied path, a write outside
    /// the write roots, a command the kernel cannot confine).
    Sandbox,
}

impl ToolErrorKind {
    /// The stable kebab-case name, e.g. `ambiguous-match`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::UnknownTool => "unknown-tool",
            ToolErrorKind::InvalidArguments => "invalid-arguments",
            ToolErrorKind::OutsideRoots => "outside-roots",
            ToolErrorKind::NotFound => "not-found",
            ToolErrorKind::WrongFileType => "wrong-file-type",
            ToolErrorKind::Binary => "binary",
            ToolErrorKind::TooLarge => "too-large",
            ToolErrorKind::Stale => "stale",
            ToolErrorKind::NotRead => "not-read",
            ToolErrorKind::NoMatch => "no-match",
            ToolErrorKind::AmbiguousMatch => "ambiguous-match",
            ToolErrorKind::NoChange => "no-change",
            ToolErrorKind::OffsetOutOfRange => "offset-out-of-range",
            ToolErrorKind::BadPattern => "bad-pattern",
            ToolErrorKind::Cancelled => "cancelled",
            ToolErrorKind::TimedOut => "timed-out",
            ToolErrorKind::Spawn => "spawn",
            ToolErrorKind::CommandFailed => "command-failed",
            ToolErrorKind::Io => "io",
            ToolErrorKind::Sandbox => "sandbox",
        }
    }
}

/// A tool failure: what happened, why, and what to do next, plus the
/// mutation state it left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolError {
    /// The category, for programs.
    pub kind: ToolErrorKind,
    /// What happened, naming the offending path or value.
    pub what: String,
    /// Why it happened.
    pub why: String,
    /// The corrective action.
    pub next: String,
    /// What the failed invocation left behind.
    pub mutation: Mutation,
    /// Extra structured facts (e.g. match line numbers), merged into
    /// `details` of the resulting [`ToolResult`]. Boxed to keep the error
    /// small on the `Err` path.
    pub extra: Option<Box<Map<String, Value>>>,
}

impl ToolError {
    /// A new error that changed nothing ([`Mutation::NotApplied`]).
    pub fn new(
        kind: ToolErrorKind,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Self {
        ToolError {
            kind,
            what: what.into(),
            why: why.into(),
            next: next.into(),
            mutation: Mutation::NotApplied,
            extra: None,
        }
    }

    /// Sets the mutation state this failure left behind.
    pub fn with_mutation(mut self, mutation: Mutation) -> Self {
        self.mutation = mutation;
        self
    }

    /// Adds a structured fact to the error's details.
    pub fn with_extra(mut self, key: &str, value: Value) -> Self {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(key.to_owned(), value);
        self
    }

    /// Converts the error into the result the model and the journal see.
    pub fn into_result(self) -> ToolResult {
        let content = self.to_string();
        let mut error = Map::new();
        error.insert("kind".into(), Value::from(self.kind.as_str()));
        error.insert("what".into(), Value::from(self.what));
        error.insert("why".into(), Value::from(self.why));
        error.insert("next".into(), Value::from(self.next));
        let mut details = self.extra.map(|b| *b).unwrap_or_default();
        details.insert("error".into(), Value::Object(error));
        ToolResult {
            content,
            details: Value::Object(details),
            is_error: true,
            mutation: self.mutation,
            media: Vec::new(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error: {}", self.what)?;
        if !self.why.is_empty() {
            write!(f, "\nWhy: {}", self.why)?;
        }
        if !self.next.is_empty() {
            write!(f, "\nNext: {}", self.next)?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_result_carries_kind_message_and_mutation() {
        let err = ToolError::new(
            ToolErrorKind::Stale,
            "src/a.rs changed since it was last read",
            "its content fingerprint differs",
            "read src/a.rs again",
        )
        .with_extra("path", Value::from("src/a.rs"));
        let result = err.into_result();
        assert!(result.is_error);
        assert_eq!(result.mutation, Mutation::NotApplied);
        assert_eq!(result.error_kind(), Some("stale"));
        assert_eq!(
            result.content,
            "Error: src/a.rs changed since it was last read\nWhy: its content fingerprint differs\nNext: read src/a.rs again"
        );
        assert_eq!(result.details["path"], "src/a.rs");
    }

    #[test]
    fn mutation_names_are_stable() {
        assert_eq!(Mutation::Applied.as_str(), "applied");
        assert_eq!(Mutation::NotApplied.as_str(), "not-applied");
        assert_eq!(Mutation::Unknown.as_str(), "unknown");
    }
}
