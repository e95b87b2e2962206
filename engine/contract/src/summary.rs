//! Summary requests: the tool-free requests the engine sends to compact a
//! conversation. Providers may recognize them (the scripted provider answers
//! them from a separate list); they are ordinary requests otherwise.

use crate::types::Request;

/// The system prompt of a summary request; a tool-free request with exactly
/// this system prompt is a summary request.
pub const SUMMARY_SYSTEM: &str = "You summarize a coding session so that it can continue without the full transcript. Write a concise, complete summary: the user's goals and constraints, decisions made, files read and changed (with paths), commands run and their results, errors met and how they were handled, and the work still to do. Keep exact names, paths and values. Do not call tools; answer with the summary text only.";

/// The text that separates the summarized conversation from the custom
/// instructions in a summary request's user message.
pub const INSTRUCTIONS_MARKER: &str = "\nAdditional instructions for this summary: ";

/// Whether `request` is a summary request (tool-free, [`SUMMARY_SYSTEM`]).
pub fn is_summary_request(request: &Request) -> bool {
    request.tools.is_empty() && request.system.as_deref() == Some(SUMMARY_SYSTEM)
}
