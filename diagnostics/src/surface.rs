//! Where an offending value came from.

use std::fmt;
use std::path::PathBuf;

/// A 1-based line and column inside a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineCol {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
}

impl LineCol {
    /// Computes the 1-based line and column of byte `offset` in `text`.
    ///
    /// Offsets past the end, or inside a multi-byte character, are clamped to
    /// the nearest preceding character boundary.
    pub fn from_offset(text: &str, offset: usize) -> LineCol {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        LineCol {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }
}

/// The surface that supplied a value: where a user must look to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Surface {
    /// A file, optionally with the position of the value inside it.
    File {
        /// The file's path as the user would type it.
        path: PathBuf,
        /// Where in the file, when known.
        at: Option<LineCol>,
    },
    /// An environment variable.
    Env {
        /// The variable's name, e.g. `SMITH_MODEL`.
        var: String,
    },
    /// A command-line flag or argument.
    Flag {
        /// The flag as typed, e.g. `--model`.
        flag: String,
    },
    /// A plugin (its handler, manifest or contribution).
    Plugin {
        /// The plugin's name.
        plugin: String,
    },
    /// A field of an RPC request.
    RpcField {
        /// The RPC method, e.g. `session.prompt`.
        method: String,
        /// The field path inside the request's params, e.g. `params.model`.
        field: String,
    },
    /// A built-in default of the product.
    Default,
    /// Anything else, described in a few words (e.g. `the trust store`).
    Other {
        /// A short description of the surface.
        label: String,
    },
}

impl Surface {
    /// A file surface with a position.
    pub fn file_at(path: impl Into<PathBuf>, line: u32, column: u32) -> Surface {
        Surface::File {
            path: path.into(),
            at: Some(LineCol { line, column }),
        }
    }

    /// A file surface without a position.
    pub fn file(path: impl Into<PathBuf>) -> Surface {
        Surface::File {
            path: path.into(),
            at: None,
        }
    }

    /// An environment-variable surface.
    pub fn env(var: impl Into<String>) -> Surface {
        Surface::Env { var: var.into() }
    }

    /// A command-line flag surface.
    pub fn flag(flag: impl Into<String>) -> Surface {
        Surface::Flag { flag: flag.into() }
    }

    /// A plugin surface.
    pub fn plugin(plugin: impl Into<String>) -> Surface {
        Surface::Plugin {
            plugin: plugin.into(),
        }
    }

    /// An RPC request field surface.
    pub fn rpc_field(method: impl Into<String>, field: impl Into<String>) -> Surface {
        Surface::RpcField {
            method: method.into(),
            field: field.into(),
        }
    }

    /// A free-form surface.
    pub fn other(label: impl Into<String>) -> Surface {
        Surface::Other {
            label: label.into(),
        }
    }

    /// The machine-readable kind: `file`, `env`, `flag`, `plugin`,
    /// `rpc-field`, `default` or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            Surface::File { .. } => "file",
            Surface::Env { .. } => "env",
            Surface::Flag { .. } => "flag",
            Surface::Plugin { .. } => "plugin",
            Surface::RpcField { .. } => "rpc-field",
            Surface::Default => "default",
            Surface::Other { .. } => "other",
        }
    }
}

impl fmt::Display for Surface {
    /// One line a person can act on: `path:line:column`,
    /// `environment variable SMITH_MODEL`, `flag --model`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Surface::File { path, at: Some(at) } => {
                write!(f, "{}:{}:{}", path.display(), at.line, at.column)
            }
            Surface::File { path, at: None } => write!(f, "{}", path.display()),
            Surface::Env { var } => write!(f, "environment variable {var}"),
            Surface::Flag { flag } => write!(f, "command-line flag {flag}"),
            Surface::Plugin { plugin } => write!(f, "plugin {plugin}"),
            Surface::RpcField { method, field } => {
                write!(f, "RPC request {method}, field {field}")
            }
            Surface::Default => write!(f, "built-in default"),
            Surface::Other { label } => write!(f, "{label}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_and_in_characters() {
        let text = "a\nbé c\n";
        assert_eq!(
            LineCol::from_offset(text, 0),
            LineCol { line: 1, column: 1 }
        );
        assert_eq!(
            LineCol::from_offset(text, 2),
            LineCol { line: 2, column: 1 }
        );
        // 'c' is at byte 6 (b=3, é=4..6, space=6? no: b=2, é=3..5, ' '=5, c=6).
        assert_eq!(
            LineCol::from_offset(text, 6),
            LineCol { line: 2, column: 4 }
        );
        // Inside 'é' clamps back to its start.
        assert_eq!(
            LineCol::from_offset(text, 4),
            LineCol { line: 2, column: 2 }
        );
        assert_eq!(
            LineCol::from_offset(text, 999),
            LineCol { line: 3, column: 1 }
        );
    }

    #[test]
    fn display_names_the_surface() {
        assert_eq!(
            Surface::file_at("/a/b.kdl", 3, 7).to_string(),
            "/a/b.kdl:3:7"
        );
        assert_eq!(
            Surface::env("SMITH_MODEL").to_string(),
            "environment variable SMITH_MODEL"
        );
        assert_eq!(
            Surface::flag("--model").to_string(),
            "command-line flag --model"
        );
        assert_eq!(
            Surface::rpc_field("session.prompt", "params.model").to_string(),
            "RPC request session.prompt, field params.model"
        );
    }
}
