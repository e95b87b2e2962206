//! `smith help plugins [ITEM]`, generated from the WIT doc comments, so the
//! help cannot drift from the contract: every interface, world, function,
//! type, field and case is listed with its `///` description.

use crate::WIT;

/// One documented WIT item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The dotted path (`provider.encode`, `provider.stream-event.stop`).
    pub path: String,
    /// What it is: interface, world, func, record, variant, enum, field,
    /// case, import or export.
    pub kind: &'static str,
    /// The declaration line as written.
    pub signature: String,
    /// The doc comment text (empty when missing).
    pub doc: String,
}

fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '%'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Every item of the embedded WIT, in source order.
pub fn items() -> Vec<Item> {
    let mut items = Vec::new();
    for (_, text) in WIT {
        let mut doc: Vec<&str> = Vec::new();
        // (name, kind) of each open block.
        let mut stack: Vec<(String, &'static str)> = Vec::new();
        for raw in text.lines() {
            let line = raw.trim();
            if let Some(comment) = line.strip_prefix("///") {
                doc.push(comment.trim());
                continue;
            }
            if line.is_empty() || line.starts_with("//") || line.starts_with("package ") {
                doc.clear();
                continue;
            }
            if line.starts_with('}') {
                stack.pop();
                doc.clear();
                continue;
            }
            let prefix = stack
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(".");
            let join = |name: &str| {
                if prefix.is_empty() {
                    name.to_owned()
                } else {
                    format!("{prefix}.{name}")
                }
            };
            let mut opened = None;
            let (name, kind) = if let Some(rest) = line.strip_prefix("interface ") {
                opened = Some("interface");
                (identifier(rest).to_owned(), "interface")
            } else if let Some(rest) = line.strip_prefix("world ") {
                opened = Some("world");
                (identifier(rest).to_owned(), "world")
            } else if let Some((keyword, rest)) =
                ["record ", "variant ", "enum ", "flags ", "resource "]
                    .iter()
                    .find_map(|k| line.strip_prefix(k).map(|rest| (k.trim(), rest)))
            {
                let kind: &'static str = match keyword {
                    "record" => "record",
                    "variant" => "variant",
                    "enum" => "enum",
                    "flags" => "flags",
                    _ => "resource",
                };
                opened = Some(kind);
                (identifier(rest).to_owned(), kind)
            } else if let Some(rest) = line.strip_prefix("import ") {
                (identifier(rest).to_owned(), "import")
            } else if let Some(rest) = line.strip_prefix("export ") {
                (identifier(rest).to_owned(), "export")
            } else if line.contains(": func(") {
                (identifier(line).to_owned(), "func")
            } else {
                let parent = stack.last().map(|(_, kind)| *kind);
                let kind = match parent {
                    Some("record") => "field",
                    Some("variant" | "enum" | "flags") => "case",
                    _ => "line",
                };
                (identifier(line).to_owned(), kind)
            };
            if kind != "line" && !name.is_empty() {
                let path = if kind == "import" || kind == "export" {
                    format!("{}.{kind}.{name}", prefix)
                } else {
                    join(&name)
                };
                items.push(Item {
                    path,
                    kind,
                    signature: line.trim_end_matches('{').trim().to_owned(),
                    doc: doc.join(" "),
                });
            }
            doc.clear();
            if let Some(kind) = opened
                && !line.ends_with('}')
            {
                stack.push((name, kind));
            }
        }
    }
    items
}

/// The help text: with no item, the interfaces, worlds and functions with
/// their descriptions; with an item (a path or its last part), that item
/// and everything under it.
///
/// # Errors
///
/// When no item matches; the message suggests the top-level names.
pub fn render(item: Option<&str>) -> Result<String, String> {
    let all = items();
    let mut out = String::new();
    match item {
        None => {
            out.push_str(
                "smith plugins: the smith:plugin@1 contract (from the WIT doc comments)\n",
            );
            for entry in all
                .iter()
                .filter(|i| matches!(i.kind, "interface" | "world" | "func"))
            {
                let indent = if entry.kind == "func" { "    " } else { "" };
                out.push_str(&format!(
                    "\n{indent}{} ({})\n{indent}    {}\n",
                    entry.path, entry.kind, entry.doc
                ));
            }
            out.push_str("\nRun `smith help plugins ITEM` for one item, e.g. `smith help plugins provider.encode`.\n");
        }
        Some(wanted) => {
            let matches: Vec<&Item> = all
                .iter()
                .filter(|i| {
                    i.path == wanted
                        || i.path.ends_with(&format!(".{wanted}"))
                        || i.path.starts_with(&format!("{wanted}."))
                })
                .collect();
            if matches.is_empty() {
                let tops: Vec<&str> = all
                    .iter()
                    .filter(|i| matches!(i.kind, "interface" | "world"))
                    .map(|i| i.path.as_str())
                    .collect();
                return Err(format!(
                    "the plugin contract has no item {wanted:?}; try one of {} or a function such as provider.encode",
                    tops.join(", ")
                ));
            }
            for entry in matches {
                out.push_str(&format!(
                    "{} ({})\n    {}\n    {}\n",
                    entry.path, entry.kind, entry.signature, entry.doc
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_has_a_description() {
        let all = items();
        assert!(all.len() > 100, "the parser found only {} items", all.len());
        let missing: Vec<&str> = all
            .iter()
            .filter(|i| !matches!(i.kind, "import" | "export") && i.doc.is_empty())
            .map(|i| i.path.as_str())
            .collect();
        assert!(
            missing.is_empty(),
            "WIT items without a doc comment: {missing:?}"
        );
    }

    #[test]
    fn paths_name_the_items() {
        let all = items();
        let find = |path: &str| all.iter().find(|i| i.path == path).map(|i| i.kind);
        assert_eq!(find("provider.encode"), Some("func"));
        assert_eq!(find("provider.stream-event.stop"), Some("case"));
        assert_eq!(find("provider.request.messages"), Some("field"));
        assert_eq!(find("extension.handle"), Some("func"));
        assert_eq!(find("host.cancelled"), Some("func"));
        assert_eq!(find("provider-plugin"), Some("world"));
    }

    #[test]
    fn unknown_items_are_errors_naming_the_tops() {
        let err = render(Some("no-such-thing")).unwrap_err();
        assert!(
            err.contains("no-such-thing") && err.contains("provider"),
            "{err}"
        );
        assert!(
            render(Some("encode"))
                .unwrap()
                .contains("provider.encode (func)")
        );
    }
}
