//! Why a runtime could not be set up, as the protocol servers report it.

use smith_host::StartError;

/// A runtime could not be set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupError {
    /// What happened, why, and what to do next.
    pub message: String,
}

impl SetupError {
    /// A setup failure described by `message` (what happened and what to do
    /// next).
    pub fn new(message: impl Into<String>) -> Self {
        SetupError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SetupError {}

impl From<StartError> for SetupError {
    fn from(err: StartError) -> Self {
        SetupError::new(err.to_string())
    }
}

impl From<smith_host::SessionError> for SetupError {
    fn from(err: smith_host::SessionError) -> Self {
        SetupError::new(err.to_string())
    }
}
