//! Terminal backend errors as [`smith_diag::Diagnostic`]s (`tui.terminal`).
//!
//! A [`TermError`] names the terminal operation that failed and the
//! operating system's reason; the diagnostic adds the fix (run in a
//! terminal, or use `smith eval` without one) and names the terminal device
//! as the surface and the OS error as the offending value.

use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::term::TermError;

impl Diagnose for TermError {
    /// This error as a diagnostic.
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(
            "tui.terminal",
            format!("{}: {}", self.what, self.source),
            "smith's interface needs an interactive terminal it can put in raw mode",
            "run smith in a terminal, or use `smith eval \"prompt\"` without one",
        )
        .with_value(self.source.to_string())
        .with_surface(Surface::other("the controlling terminal"))
        .with_example("smith eval \"list the files\"")
    }
}

impl From<&TermError> for Diagnostic {
    fn from(err: &TermError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<TermError> for Diagnostic {
    fn from(err: TermError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[
    smith_diag::finder::<TermError>,
    smith_diag::finder::<crate::ProductError>,
];

#[cfg(test)]
mod tests {
    use super::*;
    use smith_diag::Value;

    #[test]
    fn a_terminal_error_converts_with_all_parts_and_the_os_error() {
        let err = crate::term::err(
            "cannot read the terminal's mode",
            std::io::Error::from_raw_os_error(libc::ENOTTY),
        );
        let d = Diagnostic::from(&err);
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "tui.terminal");
        assert!(d.what().starts_with("cannot read the terminal's mode: "));
        match d.value() {
            Some(Value::Shown(v)) => assert!(v.contains("os error"), "{v}"),
            other => panic!("no value: {other:?}"),
        }
        assert!(d.render_plain().contains("at: the controlling terminal"));
    }
}
