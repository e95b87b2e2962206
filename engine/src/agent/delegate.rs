//! Subagents: the `agent` tool, which runs a child agent on the same
//! runtime for one task and returns its final text as the tool's result.
//!
//! The child runs on the parent's worker thread, with the parent's
//! provider, transport, tool context, cancellation token and extension
//! gate (so plan mode and the permission policy decide its tool calls as
//! they decide the parent's), and with its own conversation, system prompt
//! and tools. It records into a child session of its own, opened through
//! [`Delegation::open`] and named in the parent's result (`details.session`),
//! so `smith replay CHILD` plays it back; its events reach the frontend only
//! as the parent call's live output (one line per child tool call and
//! result). Its usage is added to the parent run's. Bounds: a nesting depth
//! ([`Delegation::max_depth`]) and a number of children per top-level prompt
//! shared by every level ([`Delegation::max_spawns`]).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::journal::{EffectJournal, SessionSink};
use crate::tools::{
    Access, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolResult,
};

/// The tool's name.
pub const TOOL: &str = "agent";

/// The default nesting depth: the main thread's children and theirs.
pub const MAX_DEPTH: u32 = 2;

/// The default number of children per top-level prompt, all levels
/// together.
pub const MAX_SPAWNS: u32 = 8;

/// The most of a child's final text returned to the parent.
pub const MAX_RESULT_BYTES: usize = 32 * 1024;

/// A child's session, opened for recording.
pub struct ChildSession {
    /// Its effect journal.
    pub journal: Arc<dyn EffectJournal>,
    /// Its conversation records.
    pub sink: Arc<dyn SessionSink>,
    /// Its name (what `smith replay` takes).
    pub name: String,
}

/// A custom agent a child runs as.
#[derive(Clone, Debug, Default)]
pub struct ChildAgent {
    /// Its name.
    pub name: String,
    /// Its file, for messages.
    pub path: String,
    /// Its system prompt.
    pub prompt: String,
    /// The tools it may use (smith's names); `None`: the caller's.
    pub tools: Option<Vec<String>>,
    /// Its model; `None`: the caller's.
    pub model: Option<String>,
}

/// Opens a child session: given the parent's session name and the task's
/// description.
pub type OpenChild = dyn Fn(&str) -> Result<ChildSession, String> + Send + Sync;

/// Resolves a custom agent by name (the text says why not).
pub type ResolveAgent = dyn Fn(&str) -> Result<ChildAgent, String> + Send + Sync;

/// What lets a runtime start children.
#[derive(Clone)]
pub struct Delegation {
    /// The deepest level a child may run at (the main thread is 0).
    pub max_depth: u32,
    /// How many children one top-level prompt may start, all levels
    /// together.
    pub max_spawns: u32,
    /// Opens a child's session.
    pub open: Arc<OpenChild>,
    /// Resolves the `agent` argument.
    pub resolve: Arc<ResolveAgent>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("max_depth", &self.max_depth)
            .field("max_spawns", &self.max_spawns)
            .finish_non_exhaustive()
    }
}

/// The `agent` tool's definition. The runtime runs its calls itself, one
/// at a time; the tool only carries the definition the model sees. It is
/// read-only: what a child changes, its own calls change, and they are
/// decided one by one.
pub struct AgentTool {
    definition: ToolDefinition,
}

impl AgentTool {
    /// The tool, its description naming the custom agents there are
    /// (`(name, description)`).
    pub fn new(agents: &[(String, String)]) -> Self {
        let mut description = "Starts a subagent: a fresh agent with its own conversation that works on one task and returns its final message as this tool's result. Use it for a self-contained piece of work (searching a large codebase, a review, an independent change) so that your own context stays small. The subagent does not see this conversation: put everything it needs in `prompt`, and say what it should return. `mode` `inspect` gives it only read-only tools; `work` lets it change files and run commands like you. Several subagent calls in one response run one after another.".to_owned();
        if !agents.is_empty() {
            description.push_str(
                "\n\nCustom agents (`agent` argument; each has its own instructions and tools):",
            );
            for (name, about) in agents {
                let about: Vec<&str> = about.split_whitespace().collect();
                description.push_str(&format!("\n- {name}: {}", about.join(" ")));
            }
        }
        AgentTool {
            definition: ToolDefinition {
                name: TOOL.to_owned(),
                description,
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "description": {"type": "string", "description": "A short (3-7 words) description of the task, shown to the user."},
                        "prompt": {"type": "string", "description": "The task, with everything the subagent needs to know and what it should return."},
                        "agent": {"type": "string", "description": "A custom agent to run as (listed in this tool's description); omit for a general-purpose subagent."},
                        "mode": {"type": "string", "enum": ["work", "inspect"], "description": "`inspect`: read-only tools only; `work`: every tool you have."}
                    },
                    "required": ["description", "prompt", "mode"],
                    "additionalProperties": false
                }),
                // The call itself changes nothing: each of the child's own
                // calls is decided (plan mode, permissions, approval) as
                // the caller's are.
                access: Access::ReadOnly,
            },
        }
    }
}

impl Tool for AgentTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute(&self, _args: &Value, _cx: &ToolContext) -> ToolResult {
        ToolError::new(
            ToolErrorKind::InvalidArguments,
            "the agent tool did not run: subagents run only inside the agent loop",
            "this runtime has no subagent support configured",
            "do the task yourself with the other tools",
        )
        .into_result()
    }
}

/// The arguments of one call.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) description: String,
    pub(crate) prompt: String,
    pub(crate) agent: Option<String>,
    pub(crate) inspect: bool,
}

impl Request {
    pub(crate) fn from(arguments: &Value) -> Self {
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Request {
            description: text("description").unwrap_or_else(|| "subagent".to_owned()),
            prompt: text("prompt").unwrap_or_default(),
            agent: text("agent"),
            inspect: text("mode").as_deref() == Some("inspect"),
        }
    }
}

/// The system prompt a child runs with: the caller's, then what a
/// subagent is, then the custom agent's prompt.
pub(crate) fn system_prompt(
    base: Option<&str>,
    request: &Request,
    agent: Option<&ChildAgent>,
    depth: u32,
) -> String {
    let mut text = base.map(str::trim).unwrap_or_default().to_owned();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(&format!(
        "# Subagent\n\nYou are a subagent (level {depth}) started by another agent for one task: {}. You do not see its conversation; the task below is all you are given. Work on it with your tools, then end with one final message that answers the task completely: that message, and only it, is returned to the agent that started you.",
        request.description
    ));
    if request.inspect {
        text.push_str(" You run in inspect mode: you have only read-only tools, and must not try to change anything.");
    }
    if let Some(agent) = agent {
        text.push_str(&format!(
            "\n\n# Agent: {}\n\nYou run as the agent `{}` ({}). Its instructions follow and take precedence over the general guidance above where they differ.\n\n{}",
            agent.name, agent.name, agent.path, agent.prompt
        ));
    }
    text
}

/// `text` within [`MAX_RESULT_BYTES`], with a note when cut.
pub(crate) fn bounded(text: &str, session: &str) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n\n[cut: the subagent's answer is {} bytes, more than the {MAX_RESULT_BYTES} returned; the whole answer is in its session {session}]",
        &text[..end],
        text.len()
    )
}

/// One line of a call's arguments for the live output.
pub(crate) fn brief(arguments: &Value) -> String {
    let text = match arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    };
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 100 {
        let cut: String = line.chars().take(99).collect();
        format!("{cut}…")
    } else {
        line
    }
}
