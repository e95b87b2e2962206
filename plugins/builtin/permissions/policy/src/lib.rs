//! The permission policy smith/permissions applies to every tool call, as
//! plain Rust with no host: the rules (`allow`, `ask`, `deny`) read from
//! the JSON the host hands the plugin, the path and command globs they
//! match with, the splitting of a shell command line into the commands it
//! runs, and the decision for one call under an approval mode.
//!
//! The order of a decision is fixed: a matching deny rule blocks the call
//! in every mode (read-only tools and `full` included); then allow rules
//! allow it; then ask rules ask; then read-only tools run; then the mode
//! decides (`read-only` refuses every mutating call, `ask` asks,
//! `workspace` runs writes inside the project and commands, which the
//! sandbox confines, and refuses anything else, `full` runs everything).
//!
//! A shell command is judged per command: the line is split at `&&`,
//! `||`, `;`, `|`, `&`, newlines, subshells, command substitutions
//! (`$( )`, backticks) and process substitutions (`<( )`, `>( )`), with
//! quotes respected. Any denied command denies the call; an allow rule
//! allows it only when every command is allowed.
//!
//! The plugin crate compiles this for `wasm32-wasip2`; the main workspace
//! tests it on the host.
#![deny(missing_docs)]

pub mod diff;
mod glob;
mod shell;

pub use glob::{Glob, GlobKind};
pub use shell::split_commands;

/// What a rule does with the calls it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Run without asking.
    Allow,
    /// Ask the user first.
    Ask,
    /// Never run (in every mode).
    Deny,
}

impl RuleKind {
    /// The rule's KDL node name.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }

    /// The kind named `name` (`allow`, `ask`, `deny`).
    pub fn parse(name: &str) -> Option<RuleKind> {
        match name {
            "allow" => Some(RuleKind::Allow),
            "ask" => Some(RuleKind::Ask),
            "deny" => Some(RuleKind::Deny),
            _ => None,
        }
    }
}

/// One permission rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// What it does.
    pub kind: RuleKind,
    /// The tool it applies to, or `*` for every tool.
    pub tool: String,
    /// The path glob a call's path must match, if any.
    pub path: Option<Glob>,
    /// The command glob each command of a `bash` call is matched with, if
    /// any.
    pub command: Option<Glob>,
    /// Where the rule comes from (a file, or `this session`), for reasons.
    pub origin: String,
}

impl Rule {
    /// A rule of `kind` for `tool` with optional path and command globs.
    pub fn new(
        kind: RuleKind,
        tool: &str,
        path: Option<&str>,
        command: Option<&str>,
        origin: &str,
    ) -> Rule {
        Rule {
            kind,
            tool: tool.to_owned(),
            path: path.map(|p| Glob::new(p, GlobKind::Path)),
            command: command.map(|c| Glob::new(c, GlobKind::Command)),
            origin: origin.to_owned(),
        }
    }

    /// The rule as its configuration line spells it
    /// (`deny "bash" command="rm -rf *"`).
    pub fn describe(&self) -> String {
        let mut text = format!("{} {:?}", self.kind.as_str(), self.tool);
        if let Some(path) = &self.path {
            text.push_str(&format!(" path={:?}", path.pattern()));
        }
        if let Some(command) = &self.command {
            text.push_str(&format!(" command={:?}", command.pattern()));
        }
        text
    }

    /// The rule and where it comes from, for a reason.
    fn cited(&self) -> String {
        format!("`{}` ({})", self.describe(), self.origin)
    }

    fn tool_matches(&self, tool: &str) -> bool {
        self.tool == "*" || self.tool == tool
    }
}

/// Reads the rules from the JSON the host hands the plugin: an array of
/// objects with `kind` (`allow`, `ask`, `deny`), `tool`, and optional
/// `path`, `command` and `origin`.
///
/// # Errors
///
/// What is wrong with the text or which rule is malformed.
pub fn rules_from_json(text: &str) -> Result<Vec<Rule>, String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|err| format!("the permission rules are not JSON: {err}"))?;
    let Some(items) = value.as_array() else {
        return Err("the permission rules are not a JSON array".to_owned());
    };
    let mut rules = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = |name: &str| item.get(name).and_then(serde_json::Value::as_str);
        let kind = field("kind").and_then(RuleKind::parse).ok_or_else(|| {
            format!("permission rule {index} has no kind allow, ask or deny: {item}")
        })?;
        let tool = field("tool")
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("permission rule {index} names no tool: {item}"))?;
        rules.push(Rule::new(
            kind,
            tool,
            field("path"),
            field("command"),
            field("origin").unwrap_or("configuration"),
        ));
    }
    Ok(rules)
}

/// How much runs without asking (the runtime's approval mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No mutating call runs.
    ReadOnly,
    /// Mutating calls no rule allows ask the user.
    Ask,
    /// Changes inside the project and commands (sandboxed) run; anything
    /// else is refused.
    Workspace,
    /// Everything runs; deny rules still hold.
    Full,
}

impl Mode {
    /// The mode named `name` (`read-only`, `ask`, `workspace`, `full`).
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "read-only" => Some(Mode::ReadOnly),
            "ask" => Some(Mode::Ask),
            "workspace" => Some(Mode::Workspace),
            "full" => Some(Mode::Full),
            _ => None,
        }
    }

    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Ask => "ask",
            Mode::Workspace => "workspace",
            Mode::Full => "full",
        }
    }
}

/// A path a call touches, resolved by the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute, normalized, with symlinks resolved.
    pub absolute: String,
    /// Relative to the project root (with `/` separators) when it lies
    /// inside the project.
    pub relative: Option<String>,
}

/// One tool call as the policy sees it.
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// Whether the tool only observes.
    pub read_only: bool,
    /// The command line of a `bash` call.
    pub command: Option<&'a str>,
    /// The path the call touches, if it names one.
    pub path: Option<&'a ResolvedPath>,
}

/// What the policy decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Refuse it, with the reason the model reads.
    Block(String),
    /// Ask the user; where nobody can be asked it is refused with the
    /// given reason.
    Ask,
}

/// How a rule's patterns judge one call.
fn rule_matches_path(rule: &Rule, path: Option<&ResolvedPath>) -> bool {
    let (Some(glob), Some(path)) = (&rule.path, path) else {
        return false;
    };
    glob.matches_path(path)
}

/// Whether `rule` (without a command pattern) covers the whole call.
fn covers(rule: &Rule, call: &Call<'_>) -> bool {
    if !rule.tool_matches(call.tool) {
        return false;
    }
    match (&rule.path, &rule.command) {
        (None, None) => true,
        (Some(_), None) => rule_matches_path(rule, call.path),
        _ => false,
    }
}

/// Whether `rule` has a command pattern matching `segment`.
fn matches_segment(rule: &Rule, tool: &str, segment: &str, loose: bool) -> bool {
    if !rule.tool_matches(tool) || rule.path.is_some() {
        return false;
    }
    let Some(glob) = &rule.command else {
        return false;
    };
    glob.matches(segment) || (loose && glob.matches(shell::without_assignments(segment)))
}

/// Decides `call` under `rules` (configuration rules and this session's,
/// in order) and `mode`.
pub fn decide(rules: &[Rule], call: &Call<'_>, mode: Mode) -> Decision {
    let segments: Vec<String> = call.command.map(split_commands).unwrap_or_default();
    // Deny wins, in every mode and for read-only tools too.
    for rule in rules.iter().filter(|r| r.kind == RuleKind::Deny) {
        let denied = covers(rule, call)
            || segments
                .iter()
                .any(|s| matches_segment(rule, call.tool, s, true));
        if denied {
            return Decision::Block(format!(
                "the rule {} denies it, in every approval mode; remove or change that rule to allow it",
                rule.cited()
            ));
        }
    }
    let allows = |kind: RuleKind| {
        let of_kind = || rules.iter().filter(move |r| r.kind == kind);
        if of_kind().any(|r| covers(r, call)) {
            return true;
        }
        kind == RuleKind::Allow
            && !segments.is_empty()
            && segments.iter().all(|s| {
                of_kind().any(|r| covers(r, call) || matches_segment(r, call.tool, s, false))
            })
    };
    if allows(RuleKind::Allow) {
        return Decision::Allow;
    }
    let asking = rules.iter().filter(|r| r.kind == RuleKind::Ask).find(|r| {
        covers(r, call)
            || segments
                .iter()
                .any(|s| matches_segment(r, call.tool, s, true))
    });
    if let Some(rule) = asking {
        return match mode {
            Mode::Full => Decision::Allow,
            Mode::Ask => Decision::Ask,
            Mode::ReadOnly if call.read_only => Decision::Ask,
            Mode::ReadOnly => Decision::Block(read_only_reason(call.tool)),
            Mode::Workspace => Decision::Block(format!(
                "the rule {} asks before this call, and in workspace mode nobody is asked; use `/approval ask` (or `--approval ask`) to be asked, or change the rule",
                rule.cited()
            )),
        };
    }
    if call.read_only {
        return Decision::Allow;
    }
    match mode {
        Mode::Full => Decision::Allow,
        Mode::Ask => Decision::Ask,
        Mode::ReadOnly => Decision::Block(read_only_reason(call.tool)),
        Mode::Workspace => workspace(call),
    }
}

fn read_only_reason(tool: &str) -> String {
    format!(
        "read-only mode lets no tool change anything, and {tool} can; `/approval ask` or `--approval workspace` allows it"
    )
}

/// `workspace`: file changes inside the project and commands (confined by
/// the sandbox) run, and so does stopping a background job those commands
/// started (`bash_kill`); everything else is refused with what would
/// allow it.
fn workspace(call: &Call<'_>) -> Decision {
    match (call.tool, call.path) {
        ("bash" | "bash_kill", _) => Decision::Allow,
        ("write" | "edit", Some(path)) if path.relative.is_some() => Decision::Allow,
        ("write" | "edit", Some(path)) => Decision::Block(format!(
            "in workspace mode only files inside the project change without asking, and {} is outside it; add `allow {:?} path={:?}` to the permissions block of your configuration, use `/approval ask` (or `--approval ask`) to be asked, or `--approval full`",
            path.absolute, call.tool, path.absolute
        )),
        (tool, _) => Decision::Block(format!(
            "in workspace mode the tool {tool}, which can change things, runs only when a rule allows it; add `allow {tool:?}` to the permissions block of your configuration, use `/approval ask` (or `--approval ask`) to be asked, or `--approval full`"
        )),
    }
}

/// The rules that allow calls exactly like `call` from now on (the
/// answer "always"): one per command of a `bash` call (its exact text),
/// the exact path of a file tool, else the tool itself. Glob characters
/// are escaped.
pub fn exact_rules(call: &Call<'_>, origin: &str) -> Vec<Rule> {
    if let Some(command) = call.command {
        return split_commands(command)
            .iter()
            .map(|segment| {
                Rule::new(
                    RuleKind::Allow,
                    call.tool,
                    None,
                    Some(&glob::escape(segment)),
                    origin,
                )
            })
            .collect();
    }
    if let Some(path) = call.path {
        let pattern = match &path.relative {
            // Anchored at the project root: a pattern without `/` would
            // match the name at any depth.
            Some(relative) => format!("./{}", glob::escape(relative)),
            None => glob::escape(&path.absolute),
        };
        return vec![Rule::new(
            RuleKind::Allow,
            call.tool,
            Some(&pattern),
            None,
            origin,
        )];
    }
    vec![Rule::new(RuleKind::Allow, call.tool, None, None, origin)]
}

#[cfg(test)]
mod tests;
