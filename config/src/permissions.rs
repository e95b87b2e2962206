//! Permission rules: the `permissions` block of a configuration file.
//!
//! ```kdl
//! permissions {
//!     allow "bash" command="git status"
//!     allow "bash" command="cargo *"
//!     ask "write" path="src/**"
//!     deny "*" path=".env"
//!     deny "bash" command="rm -rf *"
//! }
//! ```
//!
//! Each rule is `allow`, `ask` or `deny`, one tool name (or `*` for every
//! tool), and at most one pattern: `path=` (a glob over the path a call
//! names) or `command=` (a glob over each command of a `bash` call). The
//! user file's rules apply everywhere; a project's apply only while the
//! project is trusted. smith/permissions applies them (docs/config.md and
//! docs/security.md describe the semantics); this module only reads,
//! validates and appends them.

use std::path::{Path, PathBuf};

use kdl::{KdlDocument, KdlNode};
use smith_diag::{Diagnostic, LineCol, Surface};

use crate::error::{ConfigError, ErrorKind};

/// The name of the block holding the rules.
pub const BLOCK: &str = "permissions";

/// What a rule can do, as its node name spells it.
pub const KINDS: [&str; 3] = ["allow", "ask", "deny"];

/// One permission rule as written in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermissionRule {
    /// `allow`, `ask` or `deny`.
    pub kind: String,
    /// The tool's name, or `*`.
    pub tool: String,
    /// The path glob, if any.
    pub path: Option<String>,
    /// The command glob, if any.
    pub command: Option<String>,
    /// Where it is written (`FILE:LINE`).
    pub origin: String,
}

impl PermissionRule {
    /// The rule as one KDL line (`deny "bash" command="rm -rf *"`).
    pub fn to_kdl(&self) -> String {
        let mut line = format!("{} {}", self.kind, quote(&self.tool));
        if let Some(path) = &self.path {
            line.push_str(&format!(" path={}", quote(path)));
        }
        if let Some(command) = &self.command {
            line.push_str(&format!(" command={}", quote(command)));
        }
        line
    }

    /// The rule as the JSON object smith/permissions reads.
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::json!({
            "kind": self.kind,
            "tool": self.tool,
            "origin": self.origin,
        });
        if let Some(path) = &self.path {
            object["path"] = path.clone().into();
        }
        if let Some(command) = &self.command {
            object["command"] = command.clone().into();
        }
        object
    }
}

/// A KDL string literal of `text`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The rules of the top-level `permissions` blocks of `doc` (the text
/// `text` of `path`), validated.
///
/// # Errors
///
/// A configuration error naming the file, the line, the rule and what is
/// valid.
pub(crate) fn from_document(
    doc: &KdlDocument,
    text: &str,
    path: &Path,
) -> Result<Vec<PermissionRule>, ConfigError> {
    let mut rules = Vec::new();
    for block in doc.nodes().iter().filter(|n| n.name().value() == BLOCK) {
        let Some(children) = block.children() else {
            return Err(invalid(
                text,
                path,
                block,
                "`permissions` is a block of rules, not a value".to_owned(),
            ));
        };
        if !block.entries().is_empty() {
            return Err(invalid(
                text,
                path,
                block,
                "`permissions` takes no value before its block".to_owned(),
            ));
        }
        for node in children.nodes() {
            rules.push(rule(node, text, path)?);
        }
    }
    Ok(rules)
}

/// Reads the permission rules of the configuration file `path` (none when
/// it does not exist).
///
/// # Errors
///
/// When the file cannot be read, is not KDL, or holds an invalid rule.
pub fn read(path: &Path) -> Result<Vec<PermissionRule>, ConfigError> {
    let Some(text) = crate::file::read_text(path, "permission rules file")? else {
        return Ok(Vec::new());
    };
    let doc = parse_document(&text, path)?;
    from_document(&doc, &text, path)
}

fn parse_document(text: &str, path: &Path) -> Result<KdlDocument, ConfigError> {
    crate::file::nesting_limit(text, path)?;
    KdlDocument::parse(text).map_err(|_| {
        ConfigError::new(
            ErrorKind::Parse,
            Diagnostic::error(
                "config.parse",
                format!("{} is not valid KDL", path.display()),
                "the file does not parse, so its permission rules cannot be read",
                "fix the syntax (`smith config show` points at the position)",
            )
            .with_surface(Surface::File {
                path: path.to_path_buf(),
                at: None,
            }),
        )
    })
}

fn rule(node: &KdlNode, text: &str, path: &Path) -> Result<PermissionRule, ConfigError> {
    let kind = node.name().value();
    if !KINDS.contains(&kind) {
        return Err(invalid(
            text,
            path,
            node,
            format!("`{kind}` is not a rule; a rule is `allow`, `ask` or `deny`"),
        ));
    }
    if node.children().is_some() {
        return Err(invalid(
            text,
            path,
            node,
            "a rule takes no block".to_owned(),
        ));
    }
    let mut tool = None;
    let mut glob_path = None;
    let mut command = None;
    for entry in node.entries() {
        let Some(value) = entry.value().as_string() else {
            return Err(invalid(
                text,
                path,
                node,
                format!(
                    "`{}` is not a string; every value of a rule is a quoted string",
                    entry.value()
                ),
            ));
        };
        let slot = match entry.name().map(|n| n.value()) {
            None => &mut tool,
            Some("path") => &mut glob_path,
            Some("command") => &mut command,
            Some(other) => {
                return Err(invalid(
                    text,
                    path,
                    node,
                    format!("a rule has no property `{other}=`; it takes `path=` or `command=`"),
                ));
            }
        };
        if slot.is_some() || value.is_empty() {
            return Err(invalid(
                text,
                path,
                node,
                "a rule names one tool and at most one non-empty `path=` or `command=`".to_owned(),
            ));
        }
        *slot = Some(value.to_owned());
    }
    let Some(tool) = tool else {
        return Err(invalid(
            text,
            path,
            node,
            "the rule names no tool; write the tool's name (or \"*\" for every tool) after the rule".to_owned(),
        ));
    };
    if glob_path.is_some() && command.is_some() {
        return Err(invalid(
            text,
            path,
            node,
            "a rule takes `path=` or `command=`, not both; write two rules".to_owned(),
        ));
    }
    if command.is_some() && tool != "bash" && tool != "*" {
        return Err(invalid(
            text,
            path,
            node,
            format!(
                "`command=` matches the commands of bash calls, and this rule is for {tool:?}; write it for \"bash\""
            ),
        ));
    }
    let line = LineCol::from_offset(text, node.span().offset()).line;
    Ok(PermissionRule {
        kind: kind.to_owned(),
        tool,
        path: glob_path,
        command,
        origin: format!("{}:{line}", path.display()),
    })
}

fn invalid(text: &str, path: &Path, node: &KdlNode, why: String) -> ConfigError {
    let at = LineCol::from_offset(text, node.span().offset());
    let written = text
        .get(node.span().offset()..node.span().offset() + node.span().len())
        .unwrap_or_default()
        .trim();
    ConfigError::new(
        ErrorKind::InvalidValue,
        Diagnostic::error(
            "config.invalid-permission",
            format!("invalid permission rule in {}", path.display()),
            why,
            "write each rule as `allow|ask|deny \"TOOL\"` with an optional `path=\"GLOB\"` or `command=\"GLOB\"` (docs/config.md, \"Permission rules\")",
        )
        .with_value(written)
        .with_surface(Surface::File {
            path: path.to_path_buf(),
            at: Some(at),
        })
        .with_field(BLOCK.to_owned())
        .with_example("permissions {\n    allow \"bash\" command=\"cargo *\"\n    deny \"*\" path=\".env\"\n}"),
    )
}

fn io_failure(path: &Path, what: &str, err: &std::io::Error) -> ConfigError {
    ConfigError::new(
        ErrorKind::Io,
        Diagnostic::error(
            "config.io",
            format!("cannot {what} the configuration file {}", path.display()),
            err.to_string(),
            "check the file's permissions and the folder's",
        )
        .with_surface(Surface::File {
            path: path.to_path_buf(),
            at: None,
        }),
    )
}

/// Appends `rule` (its `origin` is ignored) to the `permissions` block of
/// the configuration file `file`, adding the block (and the file) when
/// there is none; the rest of the file stays as written. Returns the file.
///
/// # Errors
///
/// When the file cannot be read or written, or is not valid KDL.
pub fn append(file: &Path, rule: &PermissionRule) -> Result<PathBuf, ConfigError> {
    let text = crate::file::read_text(file, "configuration file")?.unwrap_or_default();
    let doc = parse_document(&text, file)?;
    let line = rule.to_kdl();
    let block = doc
        .nodes()
        .iter()
        .rev()
        .find(|n| n.name().value() == BLOCK && n.children().is_some());
    let updated = match block {
        Some(block) => {
            // Insert before the block's closing brace.
            let end = block.span().offset() + block.span().len();
            let close = text[..end].rfind('}').unwrap_or(end);
            let before = text[..close].trim_end_matches([' ', '\t']);
            let newline = if before.ends_with('\n') { "" } else { "\n" };
            format!("{before}{newline}    {line}\n{}", &text[close..])
        }
        None => {
            let newline = if text.is_empty() || text.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            format!("{text}{newline}{BLOCK} {{\n    {line}\n}}\n")
        }
    };
    // The result must still read back, with the new rule in it.
    let check = parse_document(&updated, file)?;
    from_document(&check, &updated, file)?;
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|err| io_failure(file, "create the folder of", &err))?;
    }
    let temp = file.with_extension("kdl.tmp");
    std::fs::write(&temp, &updated).map_err(|err| io_failure(&temp, "write", &err))?;
    std::fs::rename(&temp, file).map_err(|err| io_failure(file, "replace", &err))?;
    Ok(file.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<PermissionRule>, ConfigError> {
        let doc = KdlDocument::parse(text).unwrap();
        from_document(&doc, text, Path::new("/home/u/.config/smith/config.kdl"))
    }

    #[test]
    fn rules_are_read_with_their_origin() {
        let rules = parse(
            "model \"x\"\npermissions {\n    allow \"bash\" command=\"cargo *\"\n    deny \"*\" path=\".env\"\n    ask \"write\"\n}\n",
        )
        .unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].to_kdl(), r#"allow "bash" command="cargo *""#);
        assert_eq!(rules[1].origin, "/home/u/.config/smith/config.kdl:4");
        assert_eq!(
            rules[1].to_json(),
            serde_json::json!({"kind": "deny", "tool": "*", "path": ".env", "origin": "/home/u/.config/smith/config.kdl:4"})
        );
        assert_eq!(rules[2].path, None);
    }

    #[test]
    fn bad_rules_name_the_file_the_rule_and_what_is_valid() {
        for (text, why) in [
            ("permissions {\n  allw \"bash\"\n}", "not a rule"),
            ("permissions {\n  allow\n}", "names no tool"),
            (
                "permissions {\n  allow \"bash\" cmd=\"x\"\n}",
                "no property `cmd=`",
            ),
            (
                "permissions {\n  allow \"bash\" path=\"a\" command=\"b\"\n}",
                "not both",
            ),
            (
                "permissions {\n  deny \"write\" command=\"b\"\n}",
                "write it for \"bash\"",
            ),
            ("permissions {\n  deny 3\n}", "not a string"),
            ("permissions \"x\"", "block of rules"),
        ] {
            let err = parse(text).unwrap_err();
            let d = err.diagnostic();
            assert!(d.why().contains(why), "{text}: {}", d.why());
            assert!(d.what().contains("config.kdl"), "{}", d.what());
            assert!(d.next().contains("allow|ask|deny"), "{}", d.next());
        }
    }

    #[test]
    fn appended_rules_join_the_block_or_start_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.kdl");
        let rule = PermissionRule {
            kind: "allow".into(),
            tool: "bash".into(),
            path: None,
            command: Some("echo \"hi\" \\*".into()),
            origin: String::new(),
        };
        append(&file, &rule).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "permissions {\n    allow \"bash\" command=\"echo \\\"hi\\\" \\\\*\"\n}\n"
        );
        std::fs::write(
            &file,
            "// mine\nmodel \"m\"\npermissions {\n    deny \"*\" path=\".env\"\n}\n",
        )
        .unwrap();
        append(&file, &rule).unwrap();
        let rules = read(&file).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].command.as_deref(), Some("echo \"hi\" \\*"));
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .starts_with("// mine\nmodel \"m\"\n")
        );
    }
}
