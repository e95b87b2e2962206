//! Options plugins declare for themselves.
//!
//! A plugin's `config-value` contribution whose key is not in the option
//! table ([`crate::options`]) declares an option of the plugin's own: typed
//! by its JSON Schema, documented by its description, with its default
//! value. Its default is a layer at the plugin's level (built-in plugin
//! defaults at [`crate::Level::BuiltinPlugin`], other plugins at
//! [`crate::Level::Plugin`]); the plugin changes it for the runtime only
//! ([`crate::Config::set_plugin_runtime`]). Configuration files,
//! variables and flags set only table options.

use crate::source::Source;

/// An option a plugin declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginOption {
    /// The declaring plugin (`org/name`).
    pub plugin: String,
    /// Whether the plugin is one of smith's built-in plugins.
    pub builtin: bool,
    /// The dotted key.
    pub key: String,
    /// One line of description.
    pub description: String,
    /// The JSON Schema its values must match.
    pub schema: serde_json::Value,
    /// Its default.
    pub default: serde_json::Value,
}

impl PluginOption {
    /// The source of the option's default.
    pub fn default_source(&self) -> Source {
        let plugin = self.plugin.clone();
        if self.builtin {
            Source::BuiltinPlugin { plugin }
        } else {
            Source::Plugin { plugin }
        }
    }
}

/// One plugin option's resolution: its declaration and every layer that set
/// it, highest precedence first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginEntry {
    /// The declaration.
    pub option: PluginOption,
    /// `(value, source)`, highest precedence first.
    pub layers: Vec<(serde_json::Value, Source)>,
}

impl PluginEntry {
    /// The value in effect.
    pub fn value(&self) -> Option<&serde_json::Value> {
        self.layers.first().map(|(v, _)| v)
    }

    /// Where the value in effect came from.
    pub fn source(&self) -> Option<&Source> {
        self.layers.first().map(|(_, s)| s)
    }

    /// The JSON form, as [`crate::Entry::to_json`] plus the declaring
    /// plugin and the description.
    pub fn to_json(&self, sources: bool) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        obj.insert("key".into(), self.option.key.clone().into());
        obj.insert(
            "value".into(),
            self.value().cloned().unwrap_or(serde_json::Value::Null),
        );
        obj.insert(
            "source".into(),
            self.source()
                .map_or(serde_json::Value::Null, Source::to_json),
        );
        obj.insert("plugin".into(), self.option.plugin.clone().into());
        obj.insert("description".into(), self.option.description.clone().into());
        if sources {
            obj.insert(
                "sources".into(),
                self.layers
                    .iter()
                    .map(|(v, s)| serde_json::json!({"value": v, "source": s.to_json()}))
                    .collect(),
            );
        }
        serde_json::Value::Object(obj)
    }
}
