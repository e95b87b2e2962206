//! Transport errors as [`smith_diag::Diagnostic`]s (`net.<kind>`).
//!
//! A [`NetError`] already says what happened, why and what to do next; the
//! conversion keeps those three, names the host (`host:port`) as the
//! offending value, and gives the connection to that host as the surface.
//! Like the error itself, the diagnostic never holds header values, bodies
//! or URL user-info.

use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::error::NetError;

impl Diagnose for NetError {
    /// This error as a diagnostic: code `net.<kind>`, the error's own what,
    /// why and next, the host as the offending value.
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(
            format!("net.{}", self.kind().name()),
            self.what(),
            self.why(),
            self.next_action(),
        )
        .with_value(self.host())
        .with_field("host")
        .with_surface(Surface::other(format!("the connection to {}", self.host())))
    }
}

impl From<&NetError> for Diagnostic {
    fn from(err: &NetError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<NetError> for Diagnostic {
    fn from(err: NetError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[smith_diag::finder::<NetError>];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::NetErrorKind;
    use smith_diag::Value;

    #[test]
    fn every_kind_converts_with_all_parts_and_names_the_host() {
        let kinds = [
            NetErrorKind::InvalidRequest,
            NetErrorKind::RequestTooLarge,
            NetErrorKind::Dns,
            NetErrorKind::Connect,
            NetErrorKind::Tls,
            NetErrorKind::Proxy,
            NetErrorKind::TimeoutHead,
            NetErrorKind::TimeoutBodyGap,
            NetErrorKind::Protocol,
            NetErrorKind::ConnectionLost,
            NetErrorKind::ResponseTooLarge,
            NetErrorKind::Cancelled,
            NetErrorKind::AddressRefused,
        ];
        for kind in kinds {
            let err = NetError::new(kind, "api.example.invalid:443", "w", "y", "n");
            let d = Diagnostic::from(&err);
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.code(), format!("net.{}", kind.name()));
            assert_eq!((d.what(), d.why(), d.next()), ("w", "y", "n"));
            assert_eq!(
                d.value(),
                Some(&Value::Shown("api.example.invalid:443".into()))
            );
            assert!(
                d.render_plain()
                    .contains("at: the connection to api.example.invalid:443")
            );
        }
    }

    #[test]
    fn a_real_transport_error_converts() {
        let err = crate::Url::parse("ftp://example.invalid/x").unwrap_err();
        let d = err.to_diagnostic();
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "net.invalid-request");
    }
}
