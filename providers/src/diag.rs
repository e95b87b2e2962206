//! Provider adapter errors as [`smith_diag::Diagnostic`]s
//! (`provider.<kind>`).
//!
//! An adapter's [`ProviderError`] carries one message written as "what
//! happened; next action"; the conversion splits it with
//! [`Diagnostic::from_message`] and takes *why* (and the default action)
//! from the error's kind. The offending value is the retry hint for rate
//! limits, otherwise the message's first quoted value.

use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::types::{ProviderError, ProviderErrorKind};

impl ProviderErrorKind {
    /// The kind's stable snake_case name, as in the JSON projection.
    pub fn name(self) -> &'static str {
        match self {
            ProviderErrorKind::RateLimit => "rate_limit",
            ProviderErrorKind::Overloaded => "overloaded",
            ProviderErrorKind::Auth => "auth",
            ProviderErrorKind::InvalidRequest => "invalid_request",
            ProviderErrorKind::ModelUnavailable => "model_unavailable",
            ProviderErrorKind::ContextOverflow => "context_overflow",
            ProviderErrorKind::MalformedStream => "malformed_stream",
            ProviderErrorKind::Transport => "transport",
        }
    }

    fn why_next(self) -> (&'static str, &'static str) {
        match self {
            ProviderErrorKind::RateLimit => (
                "the provider is limiting how many requests this account may send",
                "wait for the retry hint, then retry, or configure a failover model",
            ),
            ProviderErrorKind::Overloaded => (
                "the provider has no capacity for the request right now",
                "retry later, or choose another model",
            ),
            ProviderErrorKind::Auth => (
                "the provider refused the credentials: they are missing, wrong or expired",
                "run `smith auth status` and set a valid key with `smith auth set PROVIDER`",
            ),
            ProviderErrorKind::InvalidRequest => (
                "the provider rejected the request as invalid",
                "check the model and its options; report the request if they are valid",
            ),
            ProviderErrorKind::ModelUnavailable => (
                "the model does not exist or this account cannot use it",
                "run `smith models` and choose an available model",
            ),
            ProviderErrorKind::ContextOverflow => (
                "the conversation does not fit the model's context window",
                "compact the conversation or choose a model with a larger context",
            ),
            ProviderErrorKind::MalformedStream => (
                "the response stream broke the stream rules or ended early",
                "retry; if it persists, report the provider's response",
            ),
            ProviderErrorKind::Transport => (
                "the exchange with the provider could not be carried out",
                "check the network and the provider's address, then retry",
            ),
        }
    }
}

impl Diagnose for ProviderError {
    /// This error as a diagnostic: code `provider.<kind>`, the provider's
    /// response as the surface.
    fn to_diagnostic(&self) -> Diagnostic {
        let (why, next) = self.kind.why_next();
        let d = Diagnostic::from_message(
            format!("provider.{}", self.kind.name()),
            &self.message,
            why,
            next,
        )
        .with_surface(Surface::other("the provider's response"));
        match self.retry_after_ms {
            Some(ms) => d
                .with_field("retry_after_ms")
                .with_value(format!("{ms} ms")),
            None => d,
        }
    }
}

impl From<&ProviderError> for Diagnostic {
    fn from(err: &ProviderError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<ProviderError> for Diagnostic {
    fn from(err: ProviderError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[smith_diag::finder::<ProviderError>];

#[cfg(test)]
mod tests {
    use super::*;
    use smith_diag::Value;

    #[test]
    fn every_kind_converts_with_all_parts_and_its_value() {
        let kinds = [
            ProviderErrorKind::RateLimit,
            ProviderErrorKind::Overloaded,
            ProviderErrorKind::Auth,
            ProviderErrorKind::InvalidRequest,
            ProviderErrorKind::ModelUnavailable,
            ProviderErrorKind::ContextOverflow,
            ProviderErrorKind::MalformedStream,
            ProviderErrorKind::Transport,
        ];
        for kind in kinds {
            // The name matches the serde projection.
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
            let err = ProviderError::new(kind, "event \"ping\" arrived out of order");
            let d = Diagnostic::from(&err);
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.code(), format!("provider.{}", kind.name()));
            assert_eq!(d.value(), Some(&Value::Shown("\"ping\"".into())));
            assert_eq!((d.why(), d.next()), kind.why_next());
        }
        let mut limited = ProviderError::new(ProviderErrorKind::RateLimit, "slow down; wait a bit");
        limited.retry_after_ms = Some(2000);
        let d = limited.to_diagnostic();
        assert_eq!(d.next(), "wait a bit");
        assert_eq!(d.value(), Some(&Value::Shown("2000 ms".into())));
    }
}
