//! `smith config set`: changing one option in a KDL file while keeping every
//! comment, blank line and formatting choice around it.

use std::path::Path;

use kdl::{KdlDocument, KdlEntry, KdlNode};
use smith_diag::{Diagnostic, Surface};

use crate::error::{ConfigError, ErrorKind};
use crate::file;
use crate::options::{self, OptionDecl};
use crate::trust::write_atomic;
use crate::value::{self, Value};

/// Looks up `key` and parses `raw` for it, as `smith config set` does.
///
/// # Errors
///
/// When the key is unknown (with a did-you-mean) or the text does not fit
/// the option's type; the surface is the command-line argument.
pub fn parse_assignment(key: &str, raw: &str) -> Result<(&'static OptionDecl, Value), ConfigError> {
    let decl = options::lookup(
        key,
        Surface::other("the KEY argument of `smith config set`"),
    )?;
    let value = value::parse_text(decl, raw).map_err(|why| {
        ConfigError::new(
            ErrorKind::InvalidValue,
            Diagnostic::error(
                "config.invalid-value",
                format!("`{raw}` is not a valid value for `{key}`"),
                why,
                format!("give `{key}` {}", value::expected(decl)),
            )
            .with_surface(Surface::other("the VALUE argument of `smith config set`"))
            .with_value(raw)
            .with_field(key)
            .with_example(format!(
                "smith config set {key} {}",
                value::example_text(decl)
            )),
        )
    })?;
    Ok((decl, value))
}

/// Returns `text` with `decl` set to `value`, changing nothing else: an
/// existing setting has its value replaced in place (its comments stay);
/// a missing one is added in its section, indented like its neighbours,
/// creating the section at the end of the file if needed.
///
/// # Errors
///
/// When `text` is not valid configuration (the same diagnostics loading
/// gives), so a broken file is never rewritten.
pub fn set_in_text(
    text: &str,
    path: &Path,
    decl: &OptionDecl,
    value: &Value,
) -> Result<String, ConfigError> {
    // Refuse to edit a file that would not load.
    file::parse(text, path, &mut Vec::new())?;
    let mut doc = if text.trim().is_empty() {
        KdlDocument::new()
    } else {
        KdlDocument::parse(text).map_err(|_| parse_failed(path))?
    };
    let sections: Vec<&str> = if decl.section().is_empty() {
        Vec::new()
    } else {
        decl.section().split('.').collect()
    };
    set_in_doc(&mut doc, &sections, decl.leaf(), value, 0);
    let mut out = doc.to_string();
    if !text.is_empty() && !out.ends_with('\n') && text.ends_with('\n') {
        out.push('\n');
    }
    // Check the result reads back as intended.
    let (settings, _) = file::parse(&out, path, &mut Vec::new())?;
    if !settings
        .iter()
        .any(|s| s.decl.key == decl.key && &s.value == value)
    {
        return Err(parse_failed(path));
    }
    Ok(out)
}

fn parse_failed(path: &Path) -> ConfigError {
    ConfigError::new(
        ErrorKind::Parse,
        Diagnostic::error(
            "config.edit-failed",
            format!("smith could not update {}", path.display()),
            "the edited file did not read back with the new value, so it was left unchanged",
            "edit the file by hand; `smith config show --sources` shows where each value comes from",
        )
        .with_surface(Surface::file(path)),
    )
}

fn set_in_doc(doc: &mut KdlDocument, sections: &[&str], leaf: &str, value: &Value, depth: usize) {
    if let Some((first, rest)) = sections.split_first() {
        // The last block of that section that already holds the leaf, else
        // the last block of that section.
        let nodes = doc.nodes_mut();
        let target = nodes
            .iter()
            .rposition(|n| {
                n.name().value() == *first && n.children().is_some() && holds(n, rest, leaf)
            })
            .or_else(|| {
                nodes
                    .iter()
                    .rposition(|n| n.name().value() == *first && n.children().is_some())
            });
        match target {
            Some(i) => {
                let children = nodes[i].ensure_children();
                set_in_doc(children, rest, leaf, value, depth + 1);
            }
            None => {
                let snippet = section_snippet(sections, leaf, value, depth);
                if let Ok(parsed) = KdlDocument::parse(&snippet)
                    && let Some(node) = parsed.nodes().first()
                {
                    let separate = !doc.nodes().is_empty() && depth == 0;
                    insert_like_siblings(doc, node.clone(), depth, separate);
                }
            }
        }
        return;
    }
    let nodes = doc.nodes_mut();
    if let Some(node) = nodes
        .iter_mut()
        .rev()
        .find(|n| n.name().value() == leaf && n.children().is_none())
    {
        let entries = node.entries_mut();
        if let [entry] = entries.as_mut_slice()
            && entry.name().is_none()
        {
            let kdl = value.to_kdl();
            entry.set_value(kdl.clone());
            if let Some(format) = entry.format_mut() {
                format.value_repr = kdl.to_string();
            }
        } else {
            entries.clear();
            entries.push(KdlEntry::new(value.to_kdl()));
        }
        return;
    }
    let line = format!("{leaf} {}\n", value.to_kdl());
    if let Ok(parsed) = KdlDocument::parse(&line)
        && let Some(node) = parsed.nodes().first()
    {
        insert_like_siblings(doc, node.clone(), depth, false);
    }
}

fn holds(node: &KdlNode, rest: &[&str], leaf: &str) -> bool {
    let Some(children) = node.children() else {
        return false;
    };
    match rest.split_first() {
        None => children.nodes().iter().any(|n| n.name().value() == leaf),
        Some((first, rest)) => children
            .nodes()
            .iter()
            .any(|n| n.name().value() == *first && holds(n, rest, leaf)),
    }
}

fn section_snippet(sections: &[&str], leaf: &str, value: &Value, depth: usize) -> String {
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        out.push_str(&"    ".repeat(depth + i));
        out.push_str(s);
        out.push_str(" {\n");
    }
    out.push_str(&"    ".repeat(depth + sections.len()));
    out.push_str(&format!("{leaf} {}\n", value.to_kdl()));
    for i in (0..sections.len()).rev() {
        out.push_str(&"    ".repeat(depth + i));
        out.push_str("}\n");
    }
    out
}

/// Appends `node` to `doc`, copying the indentation and terminator style of
/// the last sibling so the new line looks like it was always there.
fn insert_like_siblings(doc: &mut KdlDocument, mut node: KdlNode, depth: usize, separate: bool) {
    let nodes = doc.nodes_mut();
    let (indent, terminator, first_in_block) = match nodes.last_mut() {
        Some(last) => {
            let (leading, terminator) = last
                .format()
                .map(|f| (f.leading.clone(), f.terminator.clone()))
                .unwrap_or_default();
            let indent = leading.rsplit('\n').next().unwrap_or_default().to_owned();
            let terminator = if terminator == ";" {
                ";".to_owned()
            } else {
                // Make sure the previous node ends its line.
                if let Some(f) = last.format_mut()
                    && !f.terminator.ends_with('\n')
                {
                    f.terminator.push('\n');
                }
                "\n".to_owned()
            };
            (indent, terminator, false)
        }
        None => ("    ".repeat(depth), "\n".to_owned(), true),
    };
    if let Some(f) = node.format_mut() {
        let mut leading = String::new();
        if separate {
            leading.push('\n');
        }
        if first_in_block && depth > 0 {
            leading.push('\n');
        }
        leading.push_str(&indent);
        f.leading = leading;
        // Nested lines of a new section keep their own indentation; only the
        // terminator of the node itself follows the siblings.
        f.terminator = terminator;
    }
    nodes.push(node);
}

/// Sets `decl` to `value` in the file at `path`, creating the file (and its
/// directory) if needed, writing atomically and keeping the file's mode.
///
/// # Errors
///
/// When the file cannot be read or written, or does not load as
/// configuration.
pub fn set_in_file(path: &Path, decl: &OptionDecl, value: &Value) -> Result<(), ConfigError> {
    let text = crate::file::read_text(path, "configuration file")?.unwrap_or_default();
    let out = set_in_text(&text, path, decl, value)?;
    write_atomic(path, out.as_bytes(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{MODEL, NET_HEAD_TIMEOUT_S, TUI_MOUSE, TUI_THEME};

    fn set(text: &str, decl: &OptionDecl, value: Value) -> String {
        set_in_text(text, Path::new("/c.kdl"), decl, &value).unwrap()
    }

    #[test]
    fn replaces_in_place_keeping_comments() {
        let text = "// mine\nmodel \"a\" // why a\n\ntui {\n    // look\n    theme   \"dark\" // keep\n}\n// end\n";
        assert_eq!(
            set(text, &TUI_THEME, Value::Str("light".into())),
            "// mine\nmodel \"a\" // why a\n\ntui {\n    // look\n    theme   light // keep\n}\n// end\n"
        );
        assert_eq!(
            set(text, &MODEL, Value::Str("big one".into())),
            "// mine\nmodel \"big one\" // why a\n\ntui {\n    // look\n    theme   \"dark\" // keep\n}\n// end\n"
        );
    }

    #[test]
    fn adds_to_existing_sections_like_the_neighbours() {
        let text = "tui {\n  theme \"dark\" // two-space indent\n}\n";
        assert_eq!(
            set(text, &TUI_MOUSE, Value::Bool(false)),
            "tui {\n  theme \"dark\" // two-space indent\n  mouse #false\n}\n"
        );
        let one_line = "tui { theme dark; }\n";
        assert_eq!(
            set(one_line, &TUI_MOUSE, Value::Bool(true)),
            "tui { theme dark; mouse #true; }\n"
        );
    }

    #[test]
    fn creates_sections_and_files() {
        assert_eq!(
            set("", &NET_HEAD_TIMEOUT_S, Value::Int(90)),
            "net {\n    head-timeout-s 90\n}\n"
        );
        assert_eq!(
            set("model m // pick\n", &NET_HEAD_TIMEOUT_S, Value::Int(90)),
            "model m // pick\n\nnet {\n    head-timeout-s 90\n}\n"
        );
        assert_eq!(
            set("model m", &TUI_THEME, Value::Str("x".into())),
            "model m\n\ntui {\n    theme x\n}\n"
        );
    }

    #[test]
    fn refuses_broken_files_and_bad_values() {
        assert!(
            set_in_text(
                "tui {",
                Path::new("/c.kdl"),
                &TUI_THEME,
                &Value::Str("x".into())
            )
            .is_err()
        );
        assert_eq!(
            parse_assignment("tui.theem", "x").unwrap_err().kind(),
            ErrorKind::UnknownKey
        );
        assert_eq!(
            parse_assignment("net.head-timeout-s", "soon")
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidValue
        );
    }
}
