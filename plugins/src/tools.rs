//! Tools extension plugins run for the model.
//!
//! A `full-extension-plugin` component declares its tools through
//! `provide.tools` at load. [`plugin_tools`] turns them into engine
//! [`Tool`]s beside the built-ins: a name already taken (by a built-in or
//! an earlier plugin) or malformed, and a schema that is not a JSON object
//! schema, are refused with a diagnostic naming both owners or the
//! problem. The engine treats a [`PluginTool`] exactly like a built-in
//! tool: it validates the arguments against the declared schema before
//! anything runs, records the durable intent, runs read-only calls of a
//! batch in parallel and mutating ones alone (between two checkpoints),
//! records the three-state completion, and never retries an unknown one.
//!
//! A call locks its plugin's instance (calls into one plugin never
//! overlap; different plugins run side by side), runs `provide.call-tool`
//! under the plugin's deadline, and records the plugin's host effects as
//! children of the call's effect. A read-only tool's effects that could
//! change something are refused. The call's mutation evidence comes from
//! its children: applied when one applied a change, unknown when one's
//! outcome is unknown or the plugin failed after a change began, not
//! applied otherwise. Aborting the run reaches the call through the
//! plugin's abort handle (`cancelled()` turns true, and the instance is
//! destroyed after the abort grace).

use std::sync::Arc;

use serde_json::{Value, json};
use smith_engine::tools::{
    Access, Mutation, Tool, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolResult,
};

use crate::dispatch::{Shared, lock_plugin};
use crate::extension::ToolSpec;

/// The longest tool name a plugin may declare, in bytes.
pub const MAX_TOOL_NAME: usize = 64;

/// One tool of an extension plugin.
pub struct PluginTool {
    plugin: Shared,
    plugin_name: String,
    generation: u32,
    definition: ToolDefinition,
}

impl std::fmt::Debug for PluginTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginTool")
            .field("plugin", &self.plugin_name)
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl PluginTool {
    /// The plugin that runs the tool.
    pub fn plugin(&self) -> &str {
        &self.plugin_name
    }
}

/// Whether `name` is a tool name a plugin may declare.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The definition of `spec`, or why it is refused.
fn definition(plugin: &str, spec: &ToolSpec) -> Result<ToolDefinition, String> {
    if !valid_name(&spec.name) {
        return Err(format!(
            "plugin {plugin} declares a tool named {:?}, which is not a tool name (1 to {MAX_TOOL_NAME} letters, digits, `_` or `-`); the tool is left out, rename it in the plugin",
            spec.name
        ));
    }
    let parameters: Value = serde_json::from_str(&spec.parameters).map_err(|e| {
        format!(
            "plugin {plugin} declares the tool {} with parameters that are not JSON ({e}); the tool is left out, give its parameters as a JSON Schema object",
            spec.name
        )
    })?;
    let is_object_schema = parameters
        .as_object()
        .is_some_and(|schema| schema.get("type").and_then(Value::as_str) == Some("object"));
    if !is_object_schema {
        return Err(format!(
            "plugin {plugin} declares the tool {} with parameters that are not an object schema (`{{\"type\": \"object\", ...}}`); the tool is left out, describe its arguments as one JSON object",
            spec.name
        ));
    }
    Ok(ToolDefinition {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters,
        access: if spec.read_only {
            Access::ReadOnly
        } else {
            Access::Mutating
        },
    })
}

/// The tools of `plugins` (in load order) that may join `taken` (the
/// names already in use, each with its owner: `smith` for the built-ins),
/// and a diagnostic for each one refused. A name clash keeps the first
/// owner's tool and names both owners.
pub fn plugin_tools(
    plugins: &[Shared],
    taken: &mut Vec<(String, String)>,
) -> (Vec<Arc<PluginTool>>, Vec<String>) {
    let mut tools = Vec::new();
    let mut refused = Vec::new();
    for shared in plugins {
        let plugin = lock_plugin(shared);
        let Some(provided) = plugin.provided() else {
            if plugin.contributions().is_some_and(|c| !c.tools.is_empty()) {
                refused.push(format!(
                    "plugin {} lists tools in its contributions but was built for the `extension-plugin` world, which cannot run them; they are left out. Rebuild it for `full-extension-plugin` and declare them through `provide.tools`",
                    plugin.name()
                ));
            }
            continue;
        };
        let name = plugin.name().to_owned();
        let generation = plugin
            .effects()
            .map_or(1, crate::effects::Effects::generation);
        for spec in &provided.tools {
            let definition = match definition(&name, spec) {
                Ok(definition) => definition,
                Err(message) => {
                    refused.push(message);
                    continue;
                }
            };
            if let Some((_, owner)) = taken.iter().find(|(tool, _)| *tool == definition.name) {
                let owner = if owner == "smith" {
                    "smith's built-in tools".to_owned()
                } else {
                    format!("plugin {owner}")
                };
                refused.push(format!(
                    "plugin {name} declares the tool {}, but {owner} already provide{} a tool of that name; the later one is left out. Rename the tool in plugin {name}, or disable one of the two (`smith plugin disable NAME`)",
                    definition.name,
                    if owner.starts_with("plugin") { "s" } else { "" }
                ));
                continue;
            }
            taken.push((definition.name.clone(), name.clone()));
            tools.push(Arc::new(PluginTool {
                plugin: Arc::clone(shared),
                plugin_name: name.clone(),
                generation,
                definition,
            }));
        }
    }
    (tools, refused)
}

impl Tool for PluginTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn plugin_generation(&self) -> u32 {
        self.generation
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        let name = &self.definition.name;
        if cx.cancel().is_cancelled() {
            return ToolError::new(
                ToolErrorKind::Cancelled,
                format!("the {name} call was cancelled before it started"),
                "the run was aborted",
                "nothing was done; ask again if it is still wanted",
            )
            .into_result();
        }
        let arguments = args.to_string();
        let read_only = self.definition.access == Access::ReadOnly;
        let mut plugin = lock_plugin(&self.plugin);
        let scope = plugin.effects().map(crate::effects::Effects::call_scope);
        if let Some(scope) = &scope {
            scope.begin(cx.effect_id().as_deref(), name, read_only);
        }
        let result = plugin.call_tool(name, &arguments);
        drop(plugin);
        let children = scope
            .as_ref()
            .map(crate::effects::CallScope::end)
            .unwrap_or_default();
        let changed = if children.contains(&Mutation::Unknown) {
            Mutation::Unknown
        } else if children.contains(&Mutation::Applied) {
            Mutation::Applied
        } else {
            Mutation::NotApplied
        };
        match result {
            Ok(output) => {
                let structured = match output.structured.as_deref().map(serde_json::from_str) {
                    None => Value::Null,
                    Some(Ok(value)) => value,
                    Some(Err(e)) => json!({
                        "unparsed": output.structured,
                        "error": format!("the plugin's structured content is not JSON: {e}"),
                    }),
                };
                let details = json!({
                    "plugin": self.plugin_name,
                    "structured": structured,
                    "children": children.len(),
                });
                if output.is_error {
                    ToolResult {
                        content: output.text,
                        details,
                        is_error: true,
                        mutation: changed,
                        media: Vec::new(),
                    }
                } else {
                    ToolResult::ok(output.text, details, changed)
                }
            }
            Err(err) => {
                let cancelled = cx.cancel().is_cancelled();
                // A failure after a change began leaves the world unknown.
                let mutation = if changed == Mutation::NotApplied {
                    Mutation::NotApplied
                } else {
                    Mutation::Unknown
                };
                ToolError::new(
                    if cancelled {
                        ToolErrorKind::Cancelled
                    } else {
                        ToolErrorKind::Io
                    },
                    format!("the {name} call of plugin {} failed", self.plugin_name),
                    err.to_string(),
                    if cancelled {
                        "the run was aborted; check what the call did before asking again".to_owned()
                    } else {
                        format!(
                            "the plugin {} is left out for the rest of this runtime if its instance was stopped; check its diagnostic, and report it to its author if it persists",
                            self.plugin_name
                        )
                    },
                )
                .with_mutation(mutation)
                .with_extra("plugin", Value::from(self.plugin_name.clone()))
                .into_result()
            }
        }
    }
}
