//! The SKILL.md format as smith/skills reads it, as plain Rust (tested
//! natively, compiled into the wasm plugin).
//!
//! A skill is a folder holding `SKILL.md`: YAML frontmatter between two
//! `---` lines, then a Markdown body. [`parse`] reads the frontmatter
//! subset SKILL.md files use (see [`frontmatter`] for what it accepts and
//! refuses), [`check`] applies the skills format's rules to `name`,
//! `description` and `allowed-tools`, [`resolve`] keeps the first skill of
//! each name in precedence order and reports the ones it shadows,
//! [`catalog`] writes the bounded list the model sees, and [`invocation`]
//! recognizes `/name ARGS` and `$name ARGS` in a prompt. [`agent`] reads
//! agent files (`NAME.md` of smith/agents) with the same frontmatter parser.

pub mod agent;
pub mod frontmatter;

pub use frontmatter::{Value, parse};

/// The longest name (the skills format's limit).
pub const MAX_NAME: usize = 64;

/// The longest description (the skills format's limit), in characters.
pub const MAX_DESCRIPTION: usize = 1024;

/// What a SKILL.md declares, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// The tools it lists under `allowed-tools` (advisory; empty when
    /// none).
    pub allowed_tools: Vec<String>,
    /// Where the body starts in the file's text (a byte offset).
    pub body_start: usize,
}

/// Why `name` breaks the skills format's rules, or `None` when it keeps
/// them: 1 to 64 characters, lowercase ASCII letters, digits and `-`, no
/// `-` first, last or twice in a row.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".to_owned());
    }
    if name.chars().count() > MAX_NAME {
        return Some(format!(
            "the name `{name}` has {} characters, more than the {MAX_NAME} allowed",
            name.chars().count()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!(
            "the name `{name}` has the character {bad:?}; a name has only lowercase letters a-z, digits and `-`"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some(format!("the name `{name}` starts or ends with `-`"));
    }
    if name.contains("--") {
        return Some(format!("the name `{name}` has `--` (two hyphens in a row)"));
    }
    None
}

/// Reads and checks the frontmatter of the SKILL.md `text` found in the
/// folder named `folder`: `name` (the format's rules, and equal to the
/// folder's name), `description` (not empty, at most 1024 characters) and
/// `allowed-tools` (a list, or one string of names separated by commas
/// or spaces). The error says what is wrong and how to fix it.
pub fn check(text: &str, folder: &str) -> Result<Declared, String> {
    check_as(text, folder, true)
}

/// [`check`] for a skill of a plugin installed from a marketplace, as
/// Claude Code reads those: the skill is named after its folder, whatever
/// (or whether) its frontmatter says `name`.
pub fn check_plugin_skill(text: &str, folder: &str) -> Result<Declared, String> {
    check_as(text, folder, false)
}

fn check_as(text: &str, folder: &str, strict: bool) -> Result<Declared, String> {
    let (fields, body_start) = parse(text)?;
    let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let name = match get("name") {
        _ if !strict => folder.to_owned(),
        Some(Value::Text(name)) => name.trim().to_owned(),
        Some(_) => return Err("`name` is not a single string; write `name: my-skill`".to_owned()),
        None => {
            return Err(format!(
                "the frontmatter has no `name`; add `name: {folder}` (the folder's name)"
            ));
        }
    };
    if let Some(problem) = name_problem(&name) {
        return Err(format!("{problem}; rename it (and its folder) to fit"));
    }
    if name != folder {
        return Err(format!(
            "the name `{name}` differs from its folder's name `{folder}`; a skill's name is its folder's name: rename one of them"
        ));
    }
    let description = match get("description") {
        Some(Value::Text(text)) => text.trim().to_owned(),
        Some(_) => {
            return Err(
                "`description` is not a single string; write `description: what it does and when to use it`"
                    .to_owned(),
            );
        }
        None => {
            return Err(
                "the frontmatter has no `description`; add `description: what it does and when to use it` (the model picks skills by it)"
                    .to_owned(),
            );
        }
    };
    if description.is_empty() {
        return Err(
            "`description` is empty; say what the skill does and when to use it (the model picks skills by it)"
                .to_owned(),
        );
    }
    let count = description.chars().count();
    if count > MAX_DESCRIPTION {
        return Err(format!(
            "`description` has {count} characters, more than the {MAX_DESCRIPTION} allowed; shorten it and move details into the body"
        ));
    }
    let allowed_tools = match get("allowed-tools") {
        None => Vec::new(),
        Some(Value::Text(text)) => split_tools(text),
        Some(Value::List(items)) => items
            .iter()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect(),
        Some(Value::Map) => {
            return Err(
                "`allowed-tools` is a mapping; write a list (`allowed-tools: [Read, Grep]`) or one string (`allowed-tools: Read Grep`)"
                    .to_owned(),
            );
        }
    };
    Ok(Declared {
        name,
        description,
        allowed_tools,
        body_start,
    })
}

/// `allowed-tools` given as one string: names separated by commas, or by
/// spaces when there is no comma, never inside parentheses (`Bash(git
/// log:*)` is one name).
fn split_tools(text: &str) -> Vec<String> {
    let by_comma = text.contains(',');
    let mut tools = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let split = depth == 0
            && if by_comma {
                c == ','
            } else {
                c.is_whitespace()
            };
        if split {
            tools.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    tools.push(current);
    tools
        .into_iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect()
}

/// The precedence level a skill comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The project's folders (read only in a trusted project).
    Project,
    /// The user's folders.
    Global,
    /// A plugin installed from a marketplace (`smith plugin install
    /// NAME@MARKETPLACE`): its names are `PLUGIN:NAME`.
    Plugin,
}

impl Level {
    /// `project`, `global` or `plugin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Global => "global",
            Self::Plugin => "plugin",
        }
    }
}

/// One skill found, in precedence order (its index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The skill's name.
    pub name: String,
    /// The SKILL.md file.
    pub path: String,
}

/// Which of `found` (in precedence order: the first wins) is used, and
/// which are shadowed: for each index, `None` when it is used, else the
/// index of the one that shadows it.
pub fn resolve(found: &[Found]) -> Vec<Option<usize>> {
    found
        .iter()
        .enumerate()
        .map(|(index, skill)| found[..index].iter().position(|f| f.name == skill.name))
        .collect()
}

/// One catalog line: `- NAME: DESCRIPTION` (the description on one line).
pub fn catalog_line(name: &str, description: &str) -> String {
    let one_line: Vec<&str> = description.split_whitespace().collect();
    format!("- {name}: {}", one_line.join(" "))
}

/// The catalog the model sees: a lead paragraph naming the tool, then one
/// line per skill, in order, within `max_bytes`; the names of the skills
/// left out when the budget runs out (they stay loadable by name).
pub fn catalog(skills: &[(&str, &str)], tool: &str, max_bytes: usize) -> (String, Vec<String>) {
    let mut text = format!(
        "# Skills\n\nSkills are folders of instructions, scripts and resources for particular tasks. The list below gives each skill's name and what it is for. When a task matches a skill's description, call the `{tool}` tool with its name before starting the task: it returns the skill's instructions, its folder and its other files (read those with the read tool when the instructions refer to them). Do not load a skill that does not fit the task. When the user's message contains a skill's instructions already (they invoked it), follow them without loading it again.\n\n"
    );
    let mut left_out = Vec::new();
    for (name, description) in skills {
        let line = catalog_line(name, description);
        if left_out.is_empty() && text.len() + line.len() < max_bytes {
            text.push_str(&line);
            text.push('\n');
        } else {
            left_out.push((*name).to_owned());
        }
    }
    if !left_out.is_empty() {
        text.push_str(&format!(
            "- ({} more skills are not listed here for space: {}; load one by name when the user asks for it)\n",
            left_out.len(),
            left_out.join(", ")
        ));
    }
    (text.trim_end().to_owned(), left_out)
}

/// A prompt that invokes a skill: `/name ARGS` or `$name ARGS` (leading
/// spaces allowed), with `name` keeping the name rules. Returns the sigil,
/// the name and the arguments (trimmed, possibly empty).
pub fn invocation(prompt: &str) -> Option<(char, &str, &str)> {
    let text = prompt.trim_start();
    let sigil = text.chars().next().filter(|c| *c == '/' || *c == '$')?;
    let rest = &text[1..];
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if qualified_name_problem(name).is_some() {
        return None;
    }
    Some((sigil, name, rest[end..].trim()))
}

/// Why `name` is neither a name nor `PLUGIN:NAME` (a skill or agent of a
/// plugin installed from a marketplace, both parts keeping the name
/// rules), or `None` when it is one of them.
pub fn qualified_name_problem(name: &str) -> Option<String> {
    match name.split_once(':') {
        Some((plugin, name)) => name_problem(plugin).or_else(|| name_problem(name)),
        None => name_problem(name),
    }
}

/// The plugin a skills or agents folder of an installed marketplace
/// plugin belongs to: `.../PLUGIN@MARKETPLACE/skills` gives `PLUGIN`.
pub fn plugin_of(root: &str) -> Option<&str> {
    let folder = root.trim_end_matches('/').rsplit_once('/')?.0;
    let installed = folder.rsplit('/').next()?;
    let (plugin, _) = installed.split_once('@')?;
    name_problem(plugin).is_none().then_some(plugin)
}

/// The name `name` of a skill or agent found at `level` in `root`
/// takes: `PLUGIN:NAME` for a marketplace plugin's, `name` otherwise.
pub fn qualified(level: Level, root: &str, name: &str) -> String {
    match (level, plugin_of(root)) {
        (Level::Plugin, Some(plugin)) => format!("{plugin}:{name}"),
        _ => name.to_owned(),
    }
}

/// The folder (under smith's configuration folder) that holds the
/// plugins installed from marketplaces, one `PLUGIN@MARKETPLACE` folder
/// each.
pub const MARKETPLACE_PLUGINS: &str = "marketplace-plugins";

/// Splits a skill's arguments into words the way a shell would: blanks
/// separate them; single quotes keep everything up to the next one;
/// double quotes keep everything up to the next unescaped one, a backslash
/// escaping `"`, `\\`, `$` and `` ` `` inside them; a backslash outside
/// quotes keeps the next character. Arguments with an unclosed quote are
/// split at blanks alone, quotes kept.
pub fn split_arguments(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return args.split_whitespace().map(str::to_owned).collect(),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => return args.split_whitespace().map(str::to_owned).collect(),
                        },
                        Some(c) => word.push(c),
                        None => return args.split_whitespace().map(str::to_owned).collect(),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `body` with the arguments of an invocation put in its placeholders, the
/// ones Claude Code's skills and commands use: `$ARGUMENTS` is the
/// arguments as typed; `$ARGUMENTS[N]` and `$N` are the `N`th word of
/// [`split_arguments`], counted from 0 (`$N` only where no letter, digit or
/// `_` follows the number). A word the arguments do not have leaves its
/// placeholder as written (`$2` in "costs $2" stays). `None` when the body
/// has no placeholder that was replaced: the arguments then go after the
/// instructions as the user's request.
pub fn substitute_arguments(body: &str, args: &str) -> Option<String> {
    const ALL: &str = "$ARGUMENTS";
    let words = split_arguments(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut replaced = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        if let Some(after) = tail.strip_prefix(ALL) {
            if let Some(index) = after.strip_prefix('[') {
                let n = digits(index);
                if n > 0 && index[n..].starts_with(']') {
                    let used = ALL.len() + 1 + n + 1;
                    match index[..n].parse::<usize>().ok().and_then(|i| words.get(i)) {
                        Some(word) => {
                            out.push_str(word);
                            replaced = true;
                        }
                        None => out.push_str(&tail[..used]),
                    }
                    rest = &tail[used..];
                    continue;
                }
            }
            out.push_str(args);
            replaced = true;
            rest = after;
            continue;
        }
        let n = digits(&tail[1..]);
        let follows_word = tail[1 + n..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if n > 0 && !follows_word {
            match tail[1..=n].parse::<usize>().ok().and_then(|i| words.get(i)) {
                Some(word) => {
                    out.push_str(word);
                    replaced = true;
                }
                None => out.push_str(&tail[..=n]),
            }
            rest = &tail[1 + n..];
            continue;
        }
        out.push('$');
        rest = &tail[1..];
    }
    out.push_str(rest);
    replaced.then_some(out)
}

/// The longest prefix of `text` at most `max` bytes, at a char boundary.
pub fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What the skill `name` hands the model: a header naming the skill and
/// its folder, the advisory `allowed-tools`, the body (cut to `max_body`
/// bytes with a marker), and the folder's other files.
pub fn loaded(
    name: &str,
    dir: &str,
    allowed_tools: &[String],
    body: &str,
    files: &[String],
    max_body: usize,
) -> String {
    let mut text = format!("<skill name=\"{name}\" folder=\"{dir}\">\n");
    text.push_str(&format!(
        "The skill's folder is {dir}; paths in its instructions are relative to it.\n"
    ));
    if !allowed_tools.is_empty() {
        text.push_str(&format!(
            "The skill lists these tools for its work (allowed-tools): {}.\n",
            allowed_tools.join(", ")
        ));
    }
    text.push('\n');
    let body = body.trim();
    let cut = prefix(body, max_body);
    text.push_str(cut);
    if cut.len() < body.len() {
        text.push_str(&format!(
            "\n\n[cut: the instructions are {} bytes, more than the {max_body} sent; read the rest from {dir}/SKILL.md with the read tool]",
            body.len()
        ));
    }
    if !files.is_empty() {
        text.push_str(
            "\n\nOther files in the skill's folder (read them with the read tool when needed):\n",
        );
        for file in files {
            text.push_str(&format!("- {dir}/{file}\n"));
        }
    }
    let end = text.trim_end().len();
    text.truncate(end);
    text.push_str("\n</skill>");
    text
}

#[cfg(test)]
mod tests;
