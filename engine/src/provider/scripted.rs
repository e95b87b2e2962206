//! The mock provider's script format (`--mock-script`): a list of
//! responses, each a list of events, or an object with `responses` and
//! `summaries`. The provider that plays it is the built-in smith/mock
//! plugin (`plugins/builtin/mock`); this module is the host's reading of
//! the same format, for checking a script before a run and naming its
//! errors. The format is documented in `docs/mock-provider.md`.

use std::path::Path;

use serde::Deserialize;

use super::{OpaqueBytes, ProviderErrorKind, StopReason, StreamEvent, Usage};

/// The model the scripted provider (smith/mock) offers.
pub const MOCK_MODEL: &str = "mock-1";

/// One scripted event.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptEvent {
    /// A text delta.
    Text(String),
    /// A thinking delta: a string, or `{text, signature}` with hex bytes.
    Thinking(ScriptThinking),
    /// A complete tool call (start, argument text, end).
    ToolCall(ScriptToolCall),
    /// A usage report.
    Usage(Usage),
    /// The terminal stop event.
    Stop {
        /// end, tool_use, limit, abort or error.
        reason: StopReason,
    },
    /// The terminal error event.
    Error {
        /// The error kind (rate_limit, overloaded, auth, ...).
        kind: ProviderErrorKind,
        /// The message.
        message: String,
        /// Optional retry hint.
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    /// Wait this long before the next event (observes cancellation).
    DelayMs(u64),
    /// A raw normalized stream event, for streams the shorthands cannot
    /// express (a tool call cut off mid-arguments, a malformed stream).
    Event(StreamEvent),
}

/// A scripted thinking delta.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ScriptThinking {
    /// Text only.
    Text(String),
    /// Text and signature bytes.
    Signed {
        /// The text.
        text: String,
        /// Hex signature bytes.
        signature: OpaqueBytes,
    },
}

/// A scripted tool call.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The call id; generated as `call_<response>_<n>` when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// A parsed script: responses in order.
pub type Script = Vec<Vec<ScriptEvent>>;

/// A whole script file: the responses to ordinary requests and, when the
/// file is in its object form, separate responses to summary requests
/// (compaction; see [`crate::agent::compact::is_summary_request`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    /// Responses to ordinary requests, in order.
    pub responses: Script,
    /// Responses to summary requests, in order; `None` makes the provider
    /// answer them with a generated deterministic summary.
    #[serde(default)]
    pub summaries: Option<Script>,
}

impl From<Script> for ScriptFile {
    fn from(responses: Script) -> Self {
        Self {
            responses,
            summaries: None,
        }
    }
}

/// A script or record problem.
#[derive(Debug)]
pub struct ScriptError {
    /// What went wrong, naming the script or record file.
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScriptError {}

/// Parses a script from JSON text; `origin` names the source in errors.
///
/// # Errors
///
/// When the text is neither a JSON list of responses (lists of script
/// events) nor an object `{"responses": [...], "summaries": [...]}`; the
/// error names the origin, the line and column, and the expected shape.
pub fn parse_script(text: &str, origin: &str) -> Result<ScriptFile, ScriptError> {
    let parsed = if text.trim_start().starts_with('{') {
        serde_json::from_str::<ScriptFile>(text)
    } else {
        serde_json::from_str::<Script>(text).map(ScriptFile::from)
    };
    parsed.map_err(|err| ScriptError {
        message: format!(
            "mock script {origin} is not valid: {err}; a script is a JSON list of responses, each a list of events such as {{\"text\": \"hi\"}}, {{\"tool_call\": {{\"name\": \"ls\", \"arguments\": {{}}}}}}, {{\"stop\": {{\"reason\": \"end\"}}}}, or an object {{\"responses\": [...], \"summaries\": [...]}} (see docs/mock-provider.md)"
        ),
    })
}

/// Reads a script file's text.
///
/// # Errors
///
/// When the file cannot be read; the error names the path.
pub fn read_script(path: &Path) -> Result<String, ScriptError> {
    std::fs::read_to_string(path).map_err(|err| ScriptError {
        message: format!(
            "cannot read mock script {}: {err}; check the path given to --mock-script",
            path.display()
        ),
    })
}

/// Reads and parses a script file.
///
/// # Errors
///
/// When the file cannot be read or parsed; the error names the path.
pub fn load_script(path: &Path) -> Result<ScriptFile, ScriptError> {
    let text = read_script(path)?;
    parse_script(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_scripts_are_rejected_with_the_origin() {
        let err = parse_script(r#"[[{"txt":"hi"}]]"#, "s.json").unwrap_err();
        assert!(err.to_string().contains("mock script s.json is not valid"));
        assert!(err.to_string().contains("txt"));
        let err = parse_script(r#"{"responses": [], "summary": []}"#, "o.json").unwrap_err();
        assert!(err.to_string().contains("mock script o.json is not valid"));
        assert!(err.to_string().contains("summary"), "{err}");
    }
}
