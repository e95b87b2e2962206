//! The agent file format smith/agents reads: `NAME.md` in an agents
//! folder, YAML frontmatter between two `---` lines (the subset
//! [`crate::frontmatter`] reads), then a Markdown body, the agent's system
//! prompt. Claude Code's agent files load unchanged.
//!
//! Keys read: `name` (the name rules of [`crate::name_problem`]; the
//! file's name without `.md` when absent), `description` (required),
//! `tools` (a list, or one string of names separated by commas or spaces;
//! absent: every tool), `model` (absent or `inherit`: the caller's model)
//! and `provider` (absent: the caller's provider). Other keys (`color`...)
//! are accepted and not read.

use crate::frontmatter::{Value, parse};
use crate::{MAX_DESCRIPTION, name_problem};

/// What an agent file declares, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentDeclared {
    /// The agent's name.
    pub name: String,
    /// What it does and when to delegate to it.
    pub description: String,
    /// The tools it may use, as written (`None`: every tool).
    pub tools: Option<Vec<String>>,
    /// The model it runs on (`None`: the caller's).
    pub model: Option<String>,
    /// The provider it runs on (`None`: the caller's).
    pub provider: Option<String>,
    /// Where the body (the system prompt) starts in the file's text.
    pub body_start: usize,
}

fn text_field(fields: &[(String, Value)], key: &str) -> Result<Option<String>, String> {
    match fields.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
        None => Ok(None),
        Some(Value::Text(text)) => {
            let text = text.trim();
            Ok((!text.is_empty()).then(|| text.to_owned()))
        }
        Some(_) => Err(format!(
            "`{key}` is not a single string; write `{key}: VALUE` on one line"
        )),
    }
}

/// Reads and checks the agent file `text` named `stem` (its file name
/// without `.md`). The error says what is wrong and how to fix it.
pub fn check_agent(text: &str, stem: &str) -> Result<AgentDeclared, String> {
    let starts = text
        .trim_start_matches('\u{feff}')
        .lines()
        .next()
        .is_some_and(|l| l.trim_end() == "---");
    if !starts {
        return Err(
            "the file does not start with a `---` line; an agent file begins with YAML frontmatter between two `---` lines (name, description, optional tools and model), then the agent's system prompt"
                .to_owned(),
        );
    }
    let (fields, body_start) = parse(text)?;
    let name = text_field(&fields, "name")?.unwrap_or_else(|| stem.to_owned());
    if let Some(problem) = name_problem(&name) {
        return Err(format!(
            "{problem}; an agent's name has lowercase letters, digits and `-` (rename it, or the file when the frontmatter has no `name`)"
        ));
    }
    let Some(description) = text_field(&fields, "description")? else {
        return Err(
            "the frontmatter has no `description` (or it is empty); add `description: what the agent does and when to delegate to it` (the model picks agents by it)"
                .to_owned(),
        );
    };
    let count = description.chars().count();
    if count > MAX_DESCRIPTION {
        return Err(format!(
            "`description` has {count} characters, more than the {MAX_DESCRIPTION} allowed; shorten it and move details into the body"
        ));
    }
    let tools = match fields.iter().find(|(k, _)| k == "tools").map(|(_, v)| v) {
        None => None,
        Some(Value::Text(text)) => Some(crate::split_tools(text)),
        Some(Value::List(items)) => Some(
            items
                .iter()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect(),
        ),
        Some(Value::Map) => {
            return Err(
                "`tools` is a mapping; write a list (`tools: [read, grep]`) or one string (`tools: Read, Grep, Glob`)"
                    .to_owned(),
            );
        }
    };
    let model = text_field(&fields, "model")?.filter(|m| m != "inherit");
    let provider = text_field(&fields, "provider")?.filter(|p| p != "inherit");
    Ok(AgentDeclared {
        name,
        description,
        tools,
        model,
        provider,
        body_start,
    })
}

/// Claude Code's tool names and smith's tool for each.
const CLAUDE_TOOLS: [(&str, &str); 10] = [
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("MultiEdit", "edit"),
    ("Bash", "bash"),
    ("Grep", "grep"),
    ("Glob", "find"),
    ("LS", "ls"),
    ("TodoWrite", "todo_write"),
    ("Task", "agent"),
];

/// The smith tool name a `tools` entry means: Claude Code's names map to
/// smith's (`Read` → `read`, `Glob` → `find`, `Task` → `agent`...), a
/// permission pattern keeps its tool (`Bash(git log:*)` → `bash`), and any
/// other name is kept as written (smith's own, a plugin's, `mcp__...`).
pub fn tool_name(entry: &str) -> String {
    let bare = entry.split('(').next().unwrap_or(entry).trim();
    CLAUDE_TOOLS
        .iter()
        .find(|(claude, _)| *claude == bare)
        .map_or_else(|| bare.to_owned(), |(_, smith)| (*smith).to_owned())
}

/// The names of `known` within one edit or a shared prefix of `name`,
/// nearest first, for "did you mean" hints.
pub fn near_names<'a>(name: &str, known: &[&'a str]) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = known
        .iter()
        .filter_map(|k| {
            let distance = edit_distance(name, k);
            let prefix = k.starts_with(name) || name.starts_with(k);
            (distance <= 2 || (prefix && !name.is_empty())).then_some((distance, *k))
        })
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, k)| k).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}
