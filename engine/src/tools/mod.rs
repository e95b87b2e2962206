//! Built-in tools and the contract every tool follows.
//!
//! # The contract
//!
//! A tool is a [`ToolDefinition`] plus an [`execute`](Tool::execute)
//! function. The definition is provider-neutral: a name, a description, a
//! JSON Schema for the parameters (a `serde_json::Value`) and an [`Access`]
//! flag. The loop runs [`Access::ReadOnly`] tools of one batch in parallel
//! and [`Access::Mutating`] tools one at a time.
//!
//! A call goes through three steps, and the loop owns the order:
//!
//! 1. [`ToolSet::prepare`] finds the active tool and validates the arguments
//!    against its schema. Nothing has happened yet; a rejected call is an
//!    error result with [`Mutation::NotApplied`].
//! 2. The effect journal records the intent (not this module's job).
//! 3. [`Tool::execute`] runs the effect in a [`ToolContext`]: paths resolve
//!    against the context's cwd and must stay under its roots; output is
//!    bounded by its [`Limits`]; its [`CancelToken`] is polled at every
//!    effect edge; its [`ReadTracker`] remembers what the agent has read so
//!    `edit` and `write` can refuse stale input.
//!    While the runtime's approval mode is sandboxed, its [`Sandbox`]
//!    checks the file tools' paths in process and confines `bash`
//!    ([`sandbox`]). A frontend may hand the file tools' bytes and the
//!    unsandboxed `bash` commands to its own [`backend`]s (an editor's
//!    buffers and terminals); every check above still comes first.
//!
//! Every outcome is a [`ToolResult`]: bounded text for the model, structured
//! `details` for frontends, `is_error`, and the three-state [`Mutation`]
//! evidence the journal records on completion. Tools never panic and never
//! return a bare error; failures are [`ToolError`]s (what happened, why,
//! what to do next) turned into error results.
//!
//! # The built-in tools
//!
//! [`read`], [`write`], [`edit`], [`bash`], [`find`], [`grep`] and [`ls`];
//! [`ToolSet::builtin`] holds all seven. `docs/tools.md` documents their
//! parameters, bounds, errors and mutation evidence.

use std::sync::Arc;

use serde_json::Value;

pub mod backend;
pub mod bash;
mod context;
mod diff;
pub mod edit;
pub mod find;
mod fsutil;
pub mod grep;
pub mod jobs;
pub mod ls;
pub mod media;
pub mod read;
mod result;
pub mod sandbox;
mod schema;
mod walk;
pub mod write;

pub use backend::{
    CommandEnding, CommandOutcome, CommandRequest, CommandRunner, FileAccess, ToolBackends,
};
pub use context::{
    CancelCheck, CancelToken, Fingerprint, FingerprintHasher, Limits, OutputSink, ReadTracker,
    ToolContext,
};
pub use result::{Mutation, ToolError, ToolErrorKind, ToolResult};
pub use sandbox::{NetworkSetting, Sandbox};
pub use schema::{ValidationError, validate};

/// Whether a tool can change the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Only observes; may run in parallel with other read-only calls.
    ReadOnly,
    /// May change files or run processes; runs alone.
    Mutating,
}

/// A provider-neutral tool definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    /// The name the model calls (`read`, `bash`).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Read-only or mutating.
    pub access: Access,
}

impl ToolDefinition {
    /// Checks `args` against [`parameters`](Self::parameters).
    ///
    /// # Errors
    ///
    /// The first violation, naming field, expectation and received value.
    pub fn validate(&self, args: &Value) -> Result<(), ValidationError> {
        validate(&self.name, &self.parameters, args)
    }
}

impl From<ValidationError> for ToolError {
    fn from(e: ValidationError) -> Self {
        let next = format!(
            "call {} again with `{}` set to {}",
            e.tool,
            if e.field.is_empty() {
                "the arguments"
            } else {
                &e.field
            },
            e.expected
        );
        ToolError::new(
            ToolErrorKind::InvalidArguments,
            e.to_string(),
            "arguments are checked against the tool's parameter schema before anything runs; nothing was done",
            next,
        )
        .with_extra("field", Value::from(e.field))
        .with_extra("expected", Value::from(e.expected))
        .with_extra("received", Value::from(e.received))
    }
}

/// A tool: a definition and the effect behind it.
pub trait Tool: Send + Sync {
    /// The provider-neutral definition.
    fn definition(&self) -> &ToolDefinition;

    /// The plugin generation its effects are recorded with
    /// ([`crate::journal::BUILTIN_GENERATION`] for smith's own tools; a
    /// plugin's tool answers its plugin's).
    fn plugin_generation(&self) -> u32 {
        crate::journal::BUILTIN_GENERATION
    }

    /// Runs the effect. `args` should already have passed
    /// [`ToolDefinition::validate`]; if not, a missing or mistyped field is
    /// reported as [`ToolErrorKind::InvalidArguments`], never a panic.
    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult;

    /// Validates, then executes: the whole call for callers without a
    /// journal step in between.
    fn call(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        match self.definition().validate(args) {
            Ok(()) => self.execute(args, cx),
            Err(e) => ToolError::from(e).into_result(),
        }
    }
}

/// The active tools, looked up by name. Only tools in the set can be called.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The seven built-in tools in the order read, write, edit, bash, find,
    /// grep, ls.
    pub fn builtin() -> Self {
        let mut set = ToolSet::new();
        set.insert(Arc::new(read::ReadTool::new()));
        set.insert(Arc::new(write::WriteTool::new()));
        set.insert(Arc::new(edit::EditTool::new()));
        set.insert(Arc::new(bash::BashTool::new()));
        set.insert(Arc::new(find::FindTool::new()));
        set.insert(Arc::new(grep::GrepTool::new()));
        set.insert(Arc::new(ls::LsTool::new()));
        set
    }

    /// Adds `tool`, replacing (and returning) a tool of the same name, which
    /// keeps its position.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let name = tool.definition().name.clone();
        match self.tools.iter_mut().find(|t| t.definition().name == name) {
            Some(slot) => Some(std::mem::replace(slot, tool)),
            None => {
                self.tools.push(tool);
                None
            }
        }
    }

    /// Removes the tool called `name`.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let i = self
            .tools
            .iter()
            .position(|t| t.definition().name == name)?;
        Some(self.tools.remove(i))
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.definition().name == name)
    }

    /// The tool names, in set order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.definition().name.as_str())
    }

    /// The definitions, in set order (what a provider request advertises).
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.iter().map(|t| t.definition())
    }

    /// Step 1 of a call: finds the active tool and validates `args`. No
    /// effect happens.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::UnknownTool`] naming the active tools, or
    /// [`ToolErrorKind::InvalidArguments`] naming the field.
    pub fn prepare(&self, name: &str, args: &Value) -> Result<&Arc<dyn Tool>, ToolError> {
        let Some(tool) = self.get(name) else {
            let names: Vec<&str> = self.names().collect();
            return Err(ToolError::new(
                ToolErrorKind::UnknownTool,
                format!("there is no active tool named `{name}`"),
                "only active tools can be called",
                format!("use one of: {}", names.join(", ")),
            )
            .with_extra("tool", Value::from(name)));
        };
        tool.definition().validate(args)?;
        Ok(tool)
    }

    /// Prepares and executes in one step.
    pub fn call(&self, name: &str, args: &Value, cx: &ToolContext) -> ToolResult {
        match self.prepare(name, args) {
            Ok(tool) => tool.execute(args, cx),
            Err(e) => e.into_result(),
        }
    }
}

/// Typed access to validated arguments.
pub(crate) mod args {
    use serde_json::Value;

    use super::{ToolError, ToolErrorKind};

    fn missing(tool: &str, name: &str, expected: &str, got: Option<&Value>) -> ToolError {
        ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "{tool} call rejected: argument `{name}` must be {expected}, but received {}",
                got.map_or_else(|| "nothing (missing)".to_owned(), |v| v.to_string())
            ),
            "the arguments do not match the tool's parameter schema; nothing was done",
            format!("call {tool} again with `{name}` set to {expected}"),
        )
    }

    /// A required string.
    pub(crate) fn string<'a>(
        tool: &str,
        args: &'a Value,
        name: &str,
    ) -> Result<&'a str, ToolError> {
        match args.get(name) {
            Some(Value::String(s)) => Ok(s),
            other => Err(missing(tool, name, "a string", other)),
        }
    }

    /// An optional string.
    pub(crate) fn opt_string<'a>(
        tool: &str,
        args: &'a Value,
        name: &str,
    ) -> Result<Option<&'a str>, ToolError> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            other => Err(missing(tool, name, "a string", other)),
        }
    }

    /// An optional non-negative integer (5.0 counts).
    pub(crate) fn opt_usize(
        tool: &str,
        args: &Value,
        name: &str,
    ) -> Result<Option<usize>, ToolError> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                if let Some(n) = v.as_u64() {
                    return Ok(Some(usize::try_from(n).unwrap_or(usize::MAX)));
                }
                match v.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 && f.is_finite() => {
                        Ok(Some(f as usize))
                    }
                    _ => Err(missing(tool, name, "a non-negative integer", Some(v))),
                }
            }
        }
    }

    /// An optional non-negative number.
    pub(crate) fn opt_f64(tool: &str, args: &Value, name: &str) -> Result<Option<f64>, ToolError> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f)),
                _ => Err(missing(tool, name, "a non-negative number", Some(v))),
            },
        }
    }

    /// An optional boolean, `false` when absent.
    pub(crate) fn flag(tool: &str, args: &Value, name: &str) -> Result<bool, ToolError> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            other => Err(missing(tool, name, "a boolean", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_set_has_seven_tools_with_access_flags() {
        let set = ToolSet::builtin();
        let names: Vec<&str> = set.names().collect();
        assert_eq!(
            names,
            ["read", "write", "edit", "bash", "find", "grep", "ls"]
        );
        let mutating: Vec<&str> = set
            .definitions()
            .filter(|d| d.access == Access::Mutating)
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(mutating, ["write", "edit", "bash"]);
        for def in set.definitions() {
            assert_eq!(def.parameters["type"], "object", "{}", def.name);
            assert_eq!(
                def.parameters["additionalProperties"], false,
                "{}",
                def.name
            );
            assert!(!def.description.is_empty());
        }
    }

    #[test]
    fn prepare_rejects_unknown_tools_and_bad_arguments() {
        let set = ToolSet::builtin();
        let err = set.prepare("delete", &json!({})).err();
        let err = err.map(|e| (e.kind, e.next));
        assert_eq!(
            err,
            Some((
                ToolErrorKind::UnknownTool,
                "use one of: read, write, edit, bash, find, grep, ls".to_owned()
            ))
        );
        let err = set.prepare("read", &json!({"path": 3})).err();
        assert_eq!(err.map(|e| e.kind), Some(ToolErrorKind::InvalidArguments));
    }
}
