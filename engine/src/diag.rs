//! Engine errors as [`smith_diag::Diagnostic`]s.
//!
//! Each error type of the engine converts with `to_diagnostic()` (and
//! `From`; the contract's errors, defined in `smith-contract`, through
//! [`ContractDiagnostic`]): provider failures (`provider.<kind>`), runtime error reports
//! (`engine.<kind>`, from [`ErrorInfo`]), tool failures (`tool.<kind>`),
//! argument validation (`tool.invalid-arguments`), and the journal, replay,
//! agent, mock-script and benchmark errors. Errors that carry one message
//! written as "what happened; next action" are split with
//! [`Diagnostic::from_message`]; *why* comes from the error's kind.

use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::agent::AgentError;
#[cfg(feature = "bench")]
use crate::bench_support::BenchError;
use crate::checkpoint::CheckpointError;
use crate::journal::JournalError;
use crate::protocol::ErrorInfo;
use crate::provider::ProviderError;
use crate::provider::scripted::ScriptError;
use crate::replay::ReplayError;
use crate::tools::{Mutation, ToolError, ToolErrorKind, ValidationError};

/// Why a provider failure of `kind` stops the request, and the next action
/// when the message does not give one.
pub(crate) fn provider_kind_text(kind: &str) -> Option<(&'static str, &'static str)> {
    Some(match kind {
        "rate_limit" => (
            "the provider is limiting how many requests this account may send",
            "wait for the retry hint, then retry, or configure a failover model",
        ),
        "overloaded" => (
            "the provider has no capacity for the request right now",
            "retry later, or choose another model",
        ),
        "auth" => (
            "the provider refused the credentials: they are missing, wrong or expired",
            "run `smith auth status` and set a valid key with `smith auth set PROVIDER`",
        ),
        "invalid_request" => (
            "the provider rejected the request as invalid",
            "check the model and its options; report the request if they are valid",
        ),
        "model_unavailable" => (
            "the model does not exist or this account cannot use it",
            "run `smith models` and choose an available model",
        ),
        "context_overflow" => (
            "the conversation does not fit the model's context window",
            "compact the conversation or choose a model with a larger context",
        ),
        "request_too_large" => (
            "smith sends no request body over the HTTP engine's 16 MiB bound, so nothing was sent; the same request would be refused again, so it is not retried",
            "compact the conversation (/compact) or start a new session",
        ),
        "plugin_memory" => (
            "the provider plugin ran out of its memory limit building the request; the same request needs the same memory, so it is not retried",
            "compact the conversation (/compact) or start a new session",
        ),
        "malformed_stream" => (
            "the response stream broke the stream rules or ended early",
            "retry; if it persists, report the provider's response",
        ),
        "transport" => (
            "the exchange with the provider could not be carried out",
            "check the network and the provider's address, then retry",
        ),
        _ => return None,
    })
}

/// Why a runtime error report of `kind` happened, and the default action.
fn runtime_kind_text(kind: &str) -> (&'static str, &'static str) {
    if let Some(text) = provider_kind_text(kind) {
        return text;
    }
    match kind {
        "journal" => (
            "an effect or conversation record could not be made durable, and nothing runs without a durable record",
            "check that the session store is writable and the disk is not full, then retry",
        ),
        "output_limit" => (
            "the response reached the model's output limit before it finished",
            "ask for a shorter answer or raise the output limit",
        ),
        "busy" => (
            "the runtime is working and takes this command only when idle",
            "abort or wait for the run to settle, then send the command again",
        ),
        "unknown_queue_mode" => (
            "queued input is delivered only by a registered queue mode",
            "use steer or follow_up, or a mode a plugin registers",
        ),
        "queue_item_not_found" => (
            "the item is no longer queued",
            "send get_state to see the queue",
        ),
        "invalid_command" | "protocol" => (
            "the command does not fit the runtime's protocol",
            "send a command as docs/rpc.md describes",
        ),
        "interrupted" => (
            "the recorded run ended without its closing records",
            "inspect the session; effects of the interrupted run are reported as unknown",
        ),
        "nothing_to_compact" | "summary_empty" | "summary_truncated" | "summary_invalid" => (
            "compaction never records an incomplete summary, so the conversation was kept as it was",
            "try compacting again, with instructions if needed",
        ),
        _ => (
            "the agent runtime could not complete the operation",
            "read the message for its cause and retry",
        ),
    }
}

/// The diagnostics of the errors `smith-contract` defines (it knows no
/// diagnostics): provider failures and mock script problems.
pub trait ContractDiagnostic {
    /// This error as a diagnostic.
    fn to_diagnostic(&self) -> Diagnostic;
}

impl ContractDiagnostic for ProviderError {
    /// This error as a diagnostic (`provider.<kind>`).
    fn to_diagnostic(&self) -> Diagnostic {
        let kind = self.kind.as_str();
        let (why, next) = provider_kind_text(kind).unwrap_or((
            "the provider reported a failure",
            "retry, or choose another provider",
        ));
        let mut d = Diagnostic::from_message(format!("provider.{kind}"), &self.message, why, next)
            .with_surface(Surface::other("the model provider"));
        if let Some(ms) = self.retry_after_ms {
            d = d
                .with_field("retry_after_ms")
                .with_value(format!("{ms} ms"));
        }
        d
    }
}

impl Diagnose for ErrorInfo {
    /// This runtime error report as a diagnostic (`engine.<kind>`). The
    /// effect id, when there is one, is the offending value.
    fn to_diagnostic(&self) -> Diagnostic {
        let (why, next) = runtime_kind_text(&self.kind);
        let mut d =
            Diagnostic::from_message(format!("engine.{}", self.kind), &self.message, why, next)
                .with_surface(Surface::other("the agent runtime"));
        if let Some(effect) = &self.effect_id {
            d = d.with_field("effect_id").with_value(effect);
        } else if let Some(ms) = self.retry_after_ms {
            d = d
                .with_field("retry_after_ms")
                .with_value(format!("{ms} ms"));
        }
        d
    }
}

impl ErrorInfo {
    /// This error as a diagnostic: [`Diagnose::to_diagnostic`], callable
    /// without the trait in scope.
    pub fn to_diagnostic(&self) -> Diagnostic {
        <Self as Diagnose>::to_diagnostic(self)
    }
}

impl ToolErrorKind {
    fn default_why(self) -> &'static str {
        match self {
            ToolErrorKind::UnknownTool => "only active tools can be invoked",
            ToolErrorKind::InvalidArguments => {
                "arguments are checked against the tool's schema before any effect"
            }
            ToolErrorKind::OutsideRoots => "tools act only inside their allowed roots",
            _ => "the tool could not complete the invocation",
        }
    }
}

impl Diagnose for ToolError {
    /// This error as a diagnostic (`tool.<kind>`). *What* names the
    /// offending path or value; the mutation state it left behind is the
    /// field `mutation` when anything may have changed.
    fn to_diagnostic(&self) -> Diagnostic {
        let why = if self.why.trim().is_empty() {
            self.kind.default_why().to_owned()
        } else {
            self.why.clone()
        };
        let mut d = Diagnostic::error(
            format!("tool.{}", self.kind.as_str()),
            self.what.clone(),
            why,
            self.next.clone(),
        )
        .with_surface(Surface::other("a tool invocation"));
        if let Some(value) = smith_diag_value(&self.what) {
            d = d.with_value(value);
        }
        match self.mutation {
            Mutation::NotApplied => d,
            Mutation::Applied => d.with_field("mutation: applied"),
            Mutation::Unknown => d.with_field("mutation: unknown"),
        }
    }
}

/// The offending value quoted in a sentence: its first `"..."` or `` `...` ``.
fn smith_diag_value(text: &str) -> Option<String> {
    for quote in ['"', '`'] {
        if let Some(start) = text.find(quote)
            && let Some(len) = text[start + 1..].find(quote)
        {
            return Some(text[start..start + 1 + len + 1].to_owned());
        }
    }
    None
}

impl Diagnose for ValidationError {
    /// This error as a diagnostic (`tool.invalid-arguments`) naming the
    /// tool, the field, what it must be and what was received.
    fn to_diagnostic(&self) -> Diagnostic {
        let field = if self.field.is_empty() {
            "the arguments".to_owned()
        } else {
            format!("argument `{}`", self.field)
        };
        let d = Diagnostic::error(
            "tool.invalid-arguments",
            format!("{} call rejected: {field} is invalid", self.tool),
            format!("{field} must be {}", self.expected),
            format!("call {} again with {field} as {}", self.tool, self.expected),
        )
        .with_value(&self.received)
        .with_surface(Surface::other(format!(
            "the arguments of a {} call",
            self.tool
        )));
        if self.field.is_empty() {
            d
        } else {
            d.with_field(&self.field)
        }
    }
}

impl Diagnose for JournalError {
    /// This error as a diagnostic (`engine.journal`).
    fn to_diagnostic(&self) -> Diagnostic {
        let (why, next) = runtime_kind_text("journal");
        Diagnostic::from_message("engine.journal", &self.message, why, next)
            .with_surface(Surface::other("the session journal"))
    }
}

impl Diagnose for ReplayError {
    /// This error as a diagnostic (`engine.replay`).
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::from_message(
            "engine.replay",
            &self.message,
            "replay reconstructs the run only from the recorded events",
            "inspect the session with `smith session dump REF`; repair it if it is damaged",
        )
        .with_surface(Surface::other("the recorded session"))
    }
}

impl Diagnose for AgentError {
    /// This error as a diagnostic (`engine.agent`).
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::from_message(
            "engine.agent",
            &self.message,
            "the agent runtime is not running",
            "start a new runtime",
        )
        .with_surface(Surface::other("the agent runtime"))
    }
}

impl ContractDiagnostic for ScriptError {
    /// This error as a diagnostic (`engine.mock-script`), with the mock
    /// script flag as the surface.
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::from_message(
            "engine.mock-script",
            &self.to_string(),
            "the mock provider replays a script: a JSON list of responses, each a list of events (docs/mock-provider.md)",
            "fix the script or the path given to --mock-script",
        )
        .with_surface(Surface::flag("--mock-script"))
    }
}

#[cfg(feature = "bench")]
impl Diagnose for BenchError {
    /// This error as a diagnostic (`engine.bench`).
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::from_message(
            "engine.bench",
            &self.message,
            "a benchmark workload is measured only when it did its whole work",
            "fix the workload's setup and run the benchmark again",
        )
        .with_surface(Surface::other("a benchmark workload"))
    }
}

macro_rules! into_diagnostic {
    ($($ty:ty),* $(,)?) => {$(
        impl From<&$ty> for Diagnostic {
            fn from(err: &$ty) -> Diagnostic {
                err.to_diagnostic()
            }
        }
        impl From<$ty> for Diagnostic {
            fn from(err: $ty) -> Diagnostic {
                err.to_diagnostic()
            }
        }
    )*};
}

into_diagnostic!(
    ErrorInfo,
    ToolError,
    ValidationError,
    JournalError,
    ReplayError,
    AgentError,
);

#[cfg(feature = "bench")]
into_diagnostic!(BenchError);

/// The [`smith_diag::Finder`] for a contract error type `T`, whose
/// diagnostic comes from [`ContractDiagnostic`].
fn contract_finder<T: ContractDiagnostic + std::error::Error + 'static>(
    error: &(dyn std::error::Error + 'static),
) -> Option<Diagnostic> {
    error
        .downcast_ref::<T>()
        .map(ContractDiagnostic::to_diagnostic)
}

impl Diagnose for CheckpointError {
    fn to_diagnostic(&self) -> Diagnostic {
        match self {
            CheckpointError::Nothing(message) => Diagnostic::from_message(
                "checkpoint.nothing",
                message,
                "undo, redo and restore work from the checkpoints a session recorded for this project",
                "run `smith checkpoint list` to see the checkpoints",
            ),
            CheckpointError::Vcs(e) => e.diagnostic().clone(),
            CheckpointError::Journal(e) => Diagnostic::error(
                "checkpoint.unrecorded",
                format!("the files were changed but the session could not record it: {e}"),
                "every undo, redo and restore is recorded in the session it works from",
                "check that the session store is writable; `smith checkpoint list` shows what was recorded",
            ),
        }
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[
    smith_diag::finder::<CheckpointError>,
    smith_diag::finder::<smith_vcs::VcsError>,
    contract_finder::<ProviderError>,
    smith_diag::finder::<ToolError>,
    smith_diag::finder::<ValidationError>,
    smith_diag::finder::<JournalError>,
    smith_diag::finder::<ReplayError>,
    smith_diag::finder::<AgentError>,
    contract_finder::<ScriptError>,
    #[cfg(feature = "bench")]
    smith_diag::finder::<BenchError>,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderErrorKind;
    use smith_diag::Value;

    fn value(d: &Diagnostic) -> String {
        match d.value() {
            Some(Value::Shown(v)) => v.clone(),
            other => panic!("no offending value in {d}: {other:?}"),
        }
    }

    fn complete(d: &Diagnostic) {
        assert!(d.is_complete(), "{d}");
        assert!(d.surface().is_some(), "{d}");
    }

    const PROVIDER_KINDS: [ProviderErrorKind; 10] = [
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

    #[test]
    fn every_provider_kind_converts_with_why_next_and_value() {
        for kind in PROVIDER_KINDS {
            let err = ProviderError::new(kind, "model \"m-1\" refused the request");
            let d = err.to_diagnostic();
            complete(&d);
            assert_eq!(d.code(), format!("provider.{}", kind.as_str()));
            assert_eq!(value(&d), "\"m-1\"");
            assert_eq!(d.what(), "model \"m-1\" refused the request");
            // The kind gives why and the default action.
            let (why, next) = provider_kind_text(kind.as_str()).unwrap();
            assert_eq!((d.why(), d.next()), (why, next));
        }
        let mut limited = ProviderError::new(ProviderErrorKind::RateLimit, "slow down; wait");
        limited.retry_after_ms = Some(1500);
        let d = limited.to_diagnostic();
        assert_eq!(d.next(), "wait");
        assert_eq!(value(&d), "1500 ms");
    }

    #[test]
    fn every_runtime_report_kind_converts() {
        let kinds = [
            "rate_limit",
            "overloaded",
            "auth",
            "invalid_request",
            "model_unavailable",
            "context_overflow",
            "request_too_large",
            "plugin_memory",
            "malformed_stream",
            "transport",
            "journal",
            "output_limit",
            "busy",
            "unknown_queue_mode",
            "queue_item_not_found",
            "invalid_command",
            "protocol",
            "interrupted",
            "nothing_to_compact",
            "summary_empty",
            "summary_truncated",
            "summary_invalid",
            "something_new",
        ];
        for kind in kinds {
            let info = ErrorInfo {
                kind: kind.to_owned(),
                message: format!("the {kind} thing failed"),
                mutation: None,
                effect_id: Some("fx-7".to_owned()),
                retry_after_ms: None,
            };
            let d = info.to_diagnostic();
            complete(&d);
            assert_eq!(d.code(), format!("engine.{kind}"));
            assert_eq!(value(&d), "fx-7");
            assert_eq!(d.field(), Some("effect_id"));
        }
    }

    #[test]
    fn every_tool_error_kind_converts_and_keeps_what_why_next() {
        let kinds = [
            ToolErrorKind::UnknownTool,
            ToolErrorKind::InvalidArguments,
            ToolErrorKind::OutsideRoots,
            ToolErrorKind::NotFound,
            ToolErrorKind::WrongFileType,
            ToolErrorKind::Binary,
            ToolErrorKind::TooLarge,
            ToolErrorKind::Stale,
            ToolErrorKind::NotRead,
            ToolErrorKind::NoMatch,
            ToolErrorKind::AmbiguousMatch,
            ToolErrorKind::NoChange,
            ToolErrorKind::OffsetOutOfRange,
            ToolErrorKind::BadPattern,
            ToolErrorKind::Cancelled,
            ToolErrorKind::TimedOut,
            ToolErrorKind::Spawn,
            ToolErrorKind::CommandFailed,
            ToolErrorKind::Io,
        ];
        for kind in kinds {
            let err = ToolError::new(kind, "`src/a.rs` failed", "", "read it first")
                .with_mutation(Mutation::Unknown);
            let d = err.to_diagnostic();
            complete(&d);
            assert_eq!(d.code(), format!("tool.{}", kind.as_str()));
            assert_eq!(value(&d), "`src/a.rs`");
            assert_eq!(d.why(), kind.default_why());
            assert_eq!(d.field(), Some("mutation: unknown"));
        }
        let d = ToolError::new(
            ToolErrorKind::Io,
            "reading \"x\" failed",
            "disk error",
            "retry",
        )
        .to_diagnostic();
        assert_eq!((d.why(), value(&d).as_str()), ("disk error", "\"x\""));
    }

    #[test]
    fn validation_errors_name_tool_field_and_received_value() {
        let err = crate::tools::validate(
            "read",
            &serde_json::json!({"type": "object", "properties": {"offset": {"type": "integer", "minimum": 1}}}),
            &serde_json::json!({"offset": "abc"}),
        )
        .unwrap_err();
        let d = Diagnostic::from(err);
        complete(&d);
        assert_eq!(d.code(), "tool.invalid-arguments");
        assert_eq!(d.field(), Some("offset"));
        assert_eq!(value(&d), "string \"abc\"");
        assert!(d.what().contains("read call rejected"), "{d}");
    }

    #[test]
    fn message_errors_convert_with_all_parts() {
        let journal = JournalError::new("the effect record for \"fx-1\" failed; check the disk");
        let replay = ReplayError {
            message: "session \"s\" has no runs; record one first".to_owned(),
        };
        let agent = AgentError {
            message: "the runtime \"r\" stopped; start a new one".to_owned(),
        };
        let script =
            crate::provider::scripted::parse_script("not json", "\"demo.json\"").unwrap_err();
        let bench = BenchError {
            message: "workload \"w\" did nothing; fix its setup".to_owned(),
        };
        let all = [
            ("engine.journal", journal.to_diagnostic(), "\"fx-1\""),
            ("engine.replay", replay.to_diagnostic(), "\"s\""),
            ("engine.agent", agent.to_diagnostic(), "\"r\""),
            (
                "engine.mock-script",
                script.to_diagnostic(),
                "\"demo.json\"",
            ),
            ("engine.bench", bench.to_diagnostic(), "\"w\""),
        ];
        for (code, d, v) in all {
            complete(&d);
            assert_eq!(d.code(), code);
            assert_eq!(value(&d), v, "{d}");
        }
    }
}
