//! The diagnostic value itself.

use std::fmt;

use crate::surface::Surface;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The operation failed.
    Error,
    /// The operation went ahead, but something needs the user's attention.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The offending value carried by a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// The value as the user supplied it (still redacted on rendering).
    Shown(String),
    /// A value that is secret by nature; only the fact that one was supplied
    /// is reported.
    Withheld,
}

/// One user-facing error or warning: what happened, why, and the next action.
///
/// Build one with [`Diagnostic::error`] or [`Diagnostic::warning`] — both
/// require all three parts — then attach optional detail with the `with_*`
/// methods:
///
/// ```
/// use smith_diag::{Diagnostic, Surface};
///
/// let d = Diagnostic::error(
///     "config.invalid-value",
///     "`net.head-timeout-s` is not a whole number",
///     "the option takes a whole number of seconds from 1 to 3600",
///     "write a whole number of seconds",
/// )
/// .with_value("\"soon\"")
/// .with_surface(Surface::file_at("config.kdl", 3, 20))
/// .with_field("net.head-timeout-s")
/// .with_example("head-timeout-s 120");
/// assert!(d.render_plain().contains("config.kdl:3:20"));
/// ```
///
/// When the audit log is switched on (see [`crate::audit`]), dropping a
/// diagnostic appends its redacted JSON form to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    // Boxed so `Result<T, Diagnostic>` stays one pointer wide.
    pub(crate) inner: Box<Inner>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inner {
    pub(crate) severity: Severity,
    pub(crate) code: String,
    pub(crate) what: String,
    pub(crate) why: String,
    pub(crate) next: String,
    pub(crate) value: Option<Value>,
    pub(crate) surface: Option<Surface>,
    pub(crate) field: Option<String>,
    pub(crate) example: Option<String>,
}

impl Diagnostic {
    /// An error: the operation failed.
    ///
    /// - `code`: a stable dotted identifier for machines and tests, e.g.
    ///   `config.invalid-value` (never shown without the prose);
    /// - `what`: what happened, naming the offending thing;
    /// - `why`: why it is a problem;
    /// - `next`: the next corrective action.
    pub fn error(
        code: impl Into<String>,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, what, why, next)
    }

    /// A warning: the operation went ahead. Same parts as [`Diagnostic::error`].
    pub fn warning(
        code: impl Into<String>,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, what, why, next)
    }

    /// A diagnostic of the given severity. Same parts as [`Diagnostic::error`].
    pub fn new(
        severity: Severity,
        code: impl Into<String>,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            inner: Box::new(Inner {
                severity,
                code: code.into(),
                what: what.into(),
                why: why.into(),
                next: next.into(),
                value: None,
                surface: None,
                field: None,
                example: None,
            }),
        }
    }

    /// Attaches the offending value, as the user wrote it.
    #[must_use]
    pub fn with_value(mut self, value: impl fmt::Display) -> Diagnostic {
        self.inner.value = Some(Value::Shown(value.to_string()));
        self
    }

    /// Records that a secret value was involved without keeping its content.
    #[must_use]
    pub fn with_withheld_value(mut self) -> Diagnostic {
        self.inner.value = Some(Value::Withheld);
        self
    }

    /// Attaches the surface that supplied the offending value.
    #[must_use]
    pub fn with_surface(mut self, surface: Surface) -> Diagnostic {
        self.inner.surface = Some(surface);
        self
    }

    /// Attaches the field path, e.g. `tui.theme` or `params.model`.
    #[must_use]
    pub fn with_field(mut self, field: impl Into<String>) -> Diagnostic {
        self.inner.field = Some(field.into());
        self
    }

    /// Attaches a concrete example of the fix, e.g. `theme "dark"`.
    #[must_use]
    pub fn with_example(mut self, example: impl Into<String>) -> Diagnostic {
        self.inner.example = Some(example.into());
        self
    }

    /// Turns this diagnostic into a warning or an error.
    #[must_use]
    pub fn with_severity(mut self, severity: Severity) -> Diagnostic {
        self.inner.severity = severity;
        self
    }

    /// Error or warning.
    pub fn severity(&self) -> Severity {
        self.inner.severity
    }

    /// The stable dotted code, e.g. `config.invalid-value`.
    pub fn code(&self) -> &str {
        &self.inner.code
    }

    /// What happened (unredacted; render to show it).
    pub fn what(&self) -> &str {
        &self.inner.what
    }

    /// Why it is a problem (unredacted; render to show it).
    pub fn why(&self) -> &str {
        &self.inner.why
    }

    /// The next corrective action (unredacted; render to show it).
    pub fn next(&self) -> &str {
        &self.inner.next
    }

    /// The offending value, if attached (unredacted; render to show it).
    pub fn value(&self) -> Option<&Value> {
        self.inner.value.as_ref()
    }

    /// The surface that supplied the offending value, if attached.
    pub fn surface(&self) -> Option<&Surface> {
        self.inner.surface.as_ref()
    }

    /// The field path, if attached.
    pub fn field(&self) -> Option<&str> {
        self.inner.field.as_deref()
    }

    /// The example fix, if attached.
    pub fn example(&self) -> Option<&str> {
        self.inner.example.as_deref()
    }

    /// Whether all three required parts are non-empty.
    pub fn is_complete(&self) -> bool {
        !self.inner.code.trim().is_empty()
            && !self.inner.what.trim().is_empty()
            && !self.inner.why.trim().is_empty()
            && !self.inner.next.trim().is_empty()
    }
}

impl fmt::Display for Diagnostic {
    /// The plain terminal rendering (no color), redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render_plain())
    }
}

impl std::error::Error for Diagnostic {}

impl Drop for Diagnostic {
    fn drop(&mut self) {
        crate::audit::record(self);
    }
}
