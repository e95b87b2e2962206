//! Provider adapter errors as [`smith_diag::Diagnostic`]s
//! (`provider.<kind>`).
//!
//! An adapter's [`ProviderError`] carries one message written as "what
//! happened; next action"; the conversion splits it with
//! [`Diagnostic::from_message`] and takes *why* (and the default action)
//! from the error's kind. The offending value is the retry hint for rate
//! limits, otherwise the message's first quoted value.

use smith_diag::{Diagnostic, Surface};

use crate::types::{ProviderError, ProviderErrorKind};

/// Why a failure of `kind` stops the request, and the default next action.
fn why_next(kind: ProviderErrorKind) -> (&'static str, &'static str) {
    match kind {
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
        ProviderErrorKind::RequestTooLarge => (
            "smith sends no request body over the HTTP engine's 16 MiB bound, so nothing was sent; the same request would be refused again, so it is not retried",
            "compact the conversation (/compact) or start a new session",
        ),
        ProviderErrorKind::PluginMemory => (
            "the provider plugin ran out of its memory limit building the request; the same request needs the same memory, so it is not retried",
            "compact the conversation (/compact) or start a new session",
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

/// An adapter error as a diagnostic (the error type is the contract's,
/// defined in `smith-contract`, which knows no diagnostics).
pub trait ToDiagnostic {
    /// This error as a diagnostic: code `provider.<kind>`, the provider's
    /// response as the surface.
    fn to_diagnostic(&self) -> Diagnostic;
}

impl ToDiagnostic for ProviderError {
    fn to_diagnostic(&self) -> Diagnostic {
        let (why, next) = why_next(self.kind);
        let d = Diagnostic::from_message(
            format!("provider.{}", self.kind.as_str()),
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
            ProviderErrorKind::RequestTooLarge,
            ProviderErrorKind::PluginMemory,
            ProviderErrorKind::MalformedStream,
            ProviderErrorKind::Transport,
        ];
        for kind in kinds {
            // The name matches the serde projection.
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            let err = ProviderError::new(kind, "event \"ping\" arrived out of order");
            let d = err.to_diagnostic();
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.code(), format!("provider.{}", kind.as_str()));
            assert_eq!(d.value(), Some(&Value::Shown("\"ping\"".into())));
            assert_eq!((d.why(), d.next()), why_next(kind));
        }
        let mut limited = ProviderError::new(ProviderErrorKind::RateLimit, "slow down; wait a bit");
        limited.retry_after_ms = Some(2000);
        let d = limited.to_diagnostic();
        assert_eq!(d.next(), "wait a bit");
        assert_eq!(d.value(), Some(&Value::Shown("2000 ms".into())));
    }
}
