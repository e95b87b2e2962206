//! Where a resolved value came from, and the precedence levels.

use std::fmt;
use std::path::PathBuf;

use smith_diag::{LineCol, Surface};

/// The precedence levels, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The product default from the option table.
    Default,
    /// A default supplied by a built-in plugin.
    BuiltinPlugin,
    /// A value contributed by a plugin, including runtime-only changes
    /// requested by plugin handlers.
    Plugin,
    /// The user configuration file.
    User,
    /// The trusted project configuration file.
    Project,
    /// An environment variable.
    Env,
    /// A command-line flag.
    Flag,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 7] = [
        Level::Default,
        Level::BuiltinPlugin,
        Level::Plugin,
        Level::User,
        Level::Project,
        Level::Env,
        Level::Flag,
    ];

    /// A short machine name: `default`, `builtin-plugin`, `plugin`, `user`,
    /// `project`, `env`, `flag`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Default => "default",
            Level::BuiltinPlugin => "builtin-plugin",
            Level::Plugin => "plugin",
            Level::User => "user",
            Level::Project => "project",
            Level::Env => "env",
            Level::Flag => "flag",
        }
    }
}

/// Where one value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The product default.
    Default,
    /// A built-in plugin's default.
    BuiltinPlugin {
        /// The plugin's name.
        plugin: String,
    },
    /// A plugin's contribution, loaded with the plugin.
    Plugin {
        /// The plugin's name.
        plugin: String,
    },
    /// A change a plugin handler requested at runtime; never persisted.
    Runtime {
        /// The plugin's name.
        plugin: String,
    },
    /// The user configuration file.
    User {
        /// The file.
        path: PathBuf,
        /// Where the value is in it.
        at: LineCol,
    },
    /// The trusted project configuration file.
    Project {
        /// The file.
        path: PathBuf,
        /// Where the value is in it.
        at: LineCol,
    },
    /// An environment variable.
    Env {
        /// Its name.
        var: String,
    },
    /// A command-line flag.
    Flag {
        /// The flag, e.g. `--model`.
        flag: String,
    },
}

impl Source {
    /// The precedence level this source belongs to.
    pub fn level(&self) -> Level {
        match self {
            Source::Default => Level::Default,
            Source::BuiltinPlugin { .. } => Level::BuiltinPlugin,
            Source::Plugin { .. } | Source::Runtime { .. } => Level::Plugin,
            Source::User { .. } => Level::User,
            Source::Project { .. } => Level::Project,
            Source::Env { .. } => Level::Env,
            Source::Flag { .. } => Level::Flag,
        }
    }

    /// The diagnostic surface for a value from this source.
    pub fn surface(&self) -> Surface {
        match self {
            Source::Default => Surface::Default,
            Source::BuiltinPlugin { plugin } | Source::Plugin { plugin } => {
                Surface::plugin(plugin.clone())
            }
            Source::Runtime { plugin } => {
                Surface::other(format!("plugin {plugin} (runtime change)"))
            }
            Source::User { path, at } | Source::Project { path, at } => Surface::File {
                path: path.clone(),
                at: Some(*at),
            },
            Source::Env { var } => Surface::env(var.clone()),
            Source::Flag { flag } => Surface::flag(flag.clone()),
        }
    }

    /// The JSON form: `{"level": ..., "display": ..., ...fields}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        obj.insert("level".into(), self.level().as_str().into());
        obj.insert("display".into(), self.to_string().into());
        match self {
            Source::Default => {}
            Source::BuiltinPlugin { plugin } | Source::Plugin { plugin } => {
                obj.insert("plugin".into(), plugin.clone().into());
            }
            Source::Runtime { plugin } => {
                obj.insert("plugin".into(), plugin.clone().into());
                obj.insert("runtime".into(), true.into());
            }
            Source::User { path, at } | Source::Project { path, at } => {
                obj.insert("path".into(), path.display().to_string().into());
                obj.insert("line".into(), at.line.into());
                obj.insert("column".into(), at.column.into());
            }
            Source::Env { var } => {
                obj.insert("var".into(), var.clone().into());
            }
            Source::Flag { flag } => {
                obj.insert("flag".into(), flag.clone().into());
            }
        }
        serde_json::Value::Object(obj)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::BuiltinPlugin { plugin } => write!(f, "built-in plugin {plugin}"),
            Source::Plugin { plugin } => write!(f, "plugin {plugin}"),
            Source::Runtime { plugin } => write!(f, "plugin {plugin} (runtime, not saved)"),
            Source::User { path, at } => {
                write!(
                    f,
                    "user config {}:{}:{}",
                    path.display(),
                    at.line,
                    at.column
                )
            }
            Source::Project { path, at } => {
                write!(
                    f,
                    "project config {}:{}:{}",
                    path.display(),
                    at.line,
                    at.column
                )
            }
            Source::Env { var } => write!(f, "env {var}"),
            Source::Flag { flag } => write!(f, "flag {flag}"),
        }
    }
}
