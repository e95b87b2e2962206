//! A prompt given at the top level (`smith WORDS`) that looks like a
//! mistyped or missing command, or that swallowed an option, is refused
//! before anything runs: no provider is asked, no session is made, and the
//! process exits with status 2 (the command-line error status).
//!
//! The rule, checked on the prompt's words as they were given (one
//! argument each), unless they follow `--` (`smith -- sesion list` always
//! runs):
//!
//! * The first word is checked only when it is a bare word: lowercase
//!   ASCII letters, digits, `-` and `_`, starting with a letter. A prompt
//!   given as one quoted argument with spaces (`smith "fix the tests"`) is
//!   never refused for its first word.
//! * A prompt of that one bare word alone (`smith sesion`, `smith docter`,
//!   `smith list`, `smith hi`) is refused: it names the command it is
//!   nearest to (edit distance 2 for words of 5 letters or more, 1 for
//!   shorter ones, or a prefix), the command of which it is a subcommand
//!   (`smith list` → `smith session list`...), or says that smith has no
//!   such command.
//! * A prompt of several words is refused when its first word is within
//!   edit distance 1 of a command, an alias or a top-level option spelled
//!   without its dashes (`sesion list`, `continue the refactor`) — words of
//!   4 letters or more only — or is a command other tools have and smith
//!   has not (`login`, `signin`).
//! * Any later word that is, or is within edit distance 1 of, a long option
//!   of `smith` or `smith eval` (`smith fix it --modle gpt-5`) is refused:
//!   options go before the prompt, and after its first word they would be
//!   sent as prompt text.
//! * A first word that is a long option whose two dashes became one
//!   typographic dash (`—continue`, pasted from a document) is refused with
//!   the option it stands for.
//!
//! A first word that is a command or an alias (which clap takes for the
//! prompt when top-level options come before it: `smith -c session list`)
//! is refused, since a command takes no top-level options.
//!
//! A first word in [`PROMPT_VERBS`] (`update`) followed by more words is a
//! prompt, not the command: `smith update the readme` runs, and words
//! within one edit of it (`updated the docs`) are not refused for it.
//!
//! A prompt given with `-c`, `--resume` or `--session` (`smith -c yes`) is
//! meant for that session, as no command takes those options: only the
//! option and command rules apply to it.

use clap::Command;
use smith_diag::suggest::distance;
use smith_diag::{Diagnostic, Surface};

/// Commands named by an everyday verb that also begins prompts: followed
/// by more words (`smith update the readme`) the line is a prompt, checked
/// like any other; alone or with its own options (`smith update --check`)
/// it is the command.
pub const PROMPT_VERBS: &[&str] = &["update"];

/// Commands other tools have that smith does not, and what to use instead.
/// Checked whatever follows them.
const MISSING: &[(&str, &str)] = &[
    ("login", "store a credential with `smith auth set PROVIDER`"),
    (
        "signin",
        "store a credential with `smith auth set PROVIDER`",
    ),
    (
        "logout",
        "remove a credential with `smith auth logout PROVIDER`",
    ),
];

/// Why `words` must not be sent as a prompt, or `None` when they may.
/// `root` is the binary's command tree. A prompt `for_session` (given with
/// `-c`, `--resume` or `--session`, which no command takes) is meant as a
/// prompt: only options written inside it are refused.
pub fn check(words: &[String], root: &Command, for_session: bool) -> Option<Diagnostic> {
    let first = words.first()?;
    if let Some(d) = option_in_prompt(words, root) {
        return Some(d);
    }
    if words.len() > 1 && PROMPT_VERBS.contains(&first.as_str()) {
        return None;
    }
    if is_bare(first)
        && let Some(command) = root
            .get_subcommands()
            .find(|sub| sub.get_name() == first || sub.get_all_aliases().any(|a| a == first))
    {
        return Some(command_after_options(first, words, command.get_name()));
    }
    if for_session {
        return None;
    }
    if let Some(rest) = first.strip_prefix(['\u{2014}', '\u{2013}', '\u{2212}']) {
        // A long option whose two dashes a word processor or chat window
        // joined into one typographic dash.
        let name = rest.split_once('=').map_or(rest, |(n, _)| n);
        if let Some(long) = long_options(root)
            .into_iter()
            .filter(|l| distance(name, l) <= 1)
            .min_by_key(|l| distance(name, l))
        {
            let value = rest.strip_prefix(name).unwrap_or_default();
            return Some(refusal(
                first,
                words,
                format!(
                    "it starts with a typographic dash, as `--{long}` does after a word processor or chat window joins its two dashes into one"
                ),
                Some(format!("--{long}{value}")),
            ));
        }
    }
    if !is_bare(first) {
        return None;
    }
    let single = words.len() == 1;
    if let Some((name, next)) = MISSING.iter().find(|(name, _)| name == first) {
        return Some(
            Diagnostic::error(
                "cli.unknown-command",
                format!("smith has no command `{name}`"),
                "it is a command other tools have, and smith sends nothing to a model for a command line that names a command",
                format!(
                    "{next}; `smith --help` lists every command; to send the words to the model as a prompt, put `--` before them: `smith -- {}`",
                    words.join(" ")
                ),
            )
            .with_value(first.clone())
            .with_surface(Surface::other("command-line argument 1 (the prompt's first word)")),
        );
    }
    let candidates = candidates(root);
    let limit = match (single, first.len()) {
        (true, 5..) => 2,
        (true, _) | (false, 4..) => 1,
        (false, _) => 0,
    };
    let near = candidates
        .iter()
        // `updated the readme` is as much a prompt as `update the readme`.
        .filter(|c| single || !PROMPT_VERBS.contains(&c.word.as_str()))
        .filter_map(|c| {
            let d = distance(first, &c.word);
            let prefix = single
                && first.len() >= 3
                && (c.word.starts_with(first.as_str()) || first.starts_with(c.word.as_str()));
            (limit > 0 && d <= limit || prefix).then_some((d, c))
        })
        .min_by_key(|(d, _)| *d);
    if let Some((d, c)) = near {
        let why = if d == 0 {
            format!(
                "`{first}` is the option `{}` without its dashes, so the command line looks mistyped",
                c.replacement
            )
        } else {
            format!(
                "`{first}` is close to the {} `{}`, so the command line looks mistyped",
                c.kind, c.word
            )
        };
        return Some(refusal(first, words, why, Some(c.replacement.clone())));
    }
    if !single {
        return None;
    }
    // One bare word alone: a subcommand of a command, or no command at all.
    let nested: Vec<String> = root
        .get_subcommands()
        .flat_map(|parent| {
            parent
                .get_subcommands()
                .filter(|sub| sub.get_name() == first && sub.get_name() != "help")
                .map(move |sub| format!("`smith {} {}`", parent.get_name(), sub.get_name()))
        })
        .collect();
    if !nested.is_empty() {
        return Some(
            Diagnostic::error(
                "cli.unknown-command",
                format!("`{first}` is not a smith command"),
                "it is a subcommand of another command, and a prompt of one word that names a command is taken for a mistyped command line (nothing was sent to a model)",
                format!(
                    "did you mean {}? To send `{first}` to the model as a prompt, run `smith -- {first}`",
                    nested.join(" or ")
                ),
            )
            .with_value(first.clone())
            .with_surface(Surface::other("command-line argument 1 (the prompt's first word)")),
        );
    }
    Some(
        Diagnostic::error(
            "cli.unknown-command",
            format!("smith has no command `{first}`"),
            "a prompt of one bare word looks like a command name, so smith takes it for a mistyped or missing command and sends nothing to a model",
            format!(
                "`smith --help` lists every command; to send `{first}` to the model as a prompt, run `smith -- {first}`"
            ),
        )
        .with_value(first.clone())
        .with_surface(Surface::other("command-line argument 1 (the prompt)")),
    )
}

/// The refusal of `words` whose first word looks like `replacement`.
fn refusal(first: &str, words: &[String], why: String, replacement: Option<String>) -> Diagnostic {
    let rest = words[1..].join(" ");
    let suggestion = match replacement {
        Some(r) if rest.is_empty() => format!("did you mean `smith {r}`? "),
        Some(r) => format!("did you mean `smith {r} {rest}`? "),
        None => String::new(),
    };
    Diagnostic::error(
        "cli.unknown-command",
        format!("`{first}` is not a smith command or option"),
        format!("{why}; smith sends nothing to a model for such a command line"),
        format!(
            "{suggestion}To send the words to the model as a prompt, put `--` before them: `smith -- {}`",
            words.join(" ")
        ),
    )
    .with_value(first.to_owned())
    .with_surface(Surface::other(
        "command-line argument 1 (the prompt's first word)",
    ))
}

/// A command written after top-level options (`smith -c session list`),
/// where it is taken for the prompt's first word.
fn command_after_options(first: &str, words: &[String], command: &str) -> Diagnostic {
    let rest = words[1..].join(" ");
    let meant = if rest.is_empty() {
        format!("smith {command}")
    } else {
        format!("smith {command} {rest}")
    };
    Diagnostic::error(
        "cli.conflict",
        format!(
            "`{first}` is a smith command, but it came after top-level options, where it is taken for the prompt's first word"
        ),
        "the top-level options (--provider, --model, --base-url, -c, --resume, --session) go with a prompt or the interface, and a command takes its own options after its name; smith sends nothing to a model for such a command line",
        format!(
            "did you mean `{meant}`? Give the command's own options after its name (`smith eval --provider P PROMPT`); to send the words to the model as a prompt, put `--` before them"
        ),
    )
    .with_value(first.to_owned())
    .with_surface(Surface::other(
        "command-line argument after the options (the prompt's first word)",
    ))
}

/// A long option written after the prompt's first word, where it would be
/// sent as prompt text.
fn option_in_prompt(words: &[String], root: &Command) -> Option<Diagnostic> {
    let longs = long_options(root);
    for (i, word) in words.iter().enumerate().skip(1) {
        let Some(name) = word.strip_prefix("--") else {
            continue;
        };
        let name = name.split_once('=').map_or(name, |(n, _)| n);
        if name.is_empty() {
            continue;
        }
        let Some(long) = longs
            .iter()
            .filter(|l| distance(name, l) <= 1)
            .min_by_key(|l| distance(name, l))
        else {
            continue;
        };
        let before: Vec<&str> = words[..i].iter().map(String::as_str).collect();
        let after: Vec<&str> = words[i + 1..].iter().map(String::as_str).collect();
        let at_root = root.get_arguments().any(|a| a.get_long() == Some(long));
        let command = if at_root { "smith" } else { "smith eval" };
        return Some(
            Diagnostic::error(
                "cli.option-in-prompt",
                format!(
                    "`{word}` comes after the prompt's first word `{}`, so it would be sent to the model as prompt text",
                    words[0]
                ),
                format!(
                    "the prompt takes every word from its first one on{}; smith sends nothing to a model for such a command line",
                    if name == long {
                        String::new()
                    } else {
                        format!(", and `--{name}` is close to the option `--{long}`")
                    }
                ),
                format!(
                    "put the option before the prompt: `{command} --{long} ... {}`{}; to send the words as they are, put `--` before them: `smith -- {}`",
                    before.join(" "),
                    if after.is_empty() {
                        String::new()
                    } else {
                        format!(" (its value, if any, follows it: {})", after.join(" "))
                    },
                    words.join(" ")
                ),
            )
            .with_value(word.clone())
            .with_surface(Surface::other(format!("command-line argument {} (in the prompt)", i + 1))),
        );
    }
    None
}

/// The long options of `smith` and `smith eval`, without their dashes.
fn long_options(root: &Command) -> Vec<String> {
    let mut longs: Vec<String> = root
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect();
    if let Some(eval) = root.find_subcommand("eval") {
        longs.extend(
            eval.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned)),
        );
    }
    longs.extend(["help".to_owned(), "version".to_owned()]);
    longs
}

/// A word that could be a command name.
fn is_bare(word: &str) -> bool {
    word.len() <= 32
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// A word the prompt's first word may be mistaken for.
struct Candidate {
    /// The command, alias or option name.
    word: String,
    /// What it is, for the message.
    kind: &'static str,
    /// What to write instead of the first word.
    replacement: String,
}

/// The top-level commands and their aliases, and the top-level long
/// options without their dashes.
fn candidates(root: &Command) -> Vec<Candidate> {
    let mut out = Vec::new();
    for sub in root.get_subcommands() {
        let name = sub.get_name();
        out.push(Candidate {
            word: name.to_owned(),
            kind: "command",
            replacement: name.to_owned(),
        });
        for alias in sub.get_all_aliases() {
            out.push(Candidate {
                word: alias.to_owned(),
                kind: "command",
                replacement: alias.to_owned(),
            });
        }
    }
    let longs = root
        .get_arguments()
        .filter_map(|a| a.get_long())
        .chain(["help", "version"]);
    for long in longs {
        if out.iter().any(|c| c.word == long) {
            continue;
        }
        out.push(Candidate {
            word: long.to_owned(),
            kind: "option",
            replacement: format!("--{long}"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::check;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    fn refused(line: &str) -> smith_diag::Diagnostic {
        check(&words(line), &crate::Cli::command(), false)
            .unwrap_or_else(|| panic!("`smith {line}` was not refused"))
    }

    fn allowed(line: &str) {
        if let Some(d) = check(&words(line), &crate::Cli::command(), false) {
            panic!("`smith {line}` was refused: {d}");
        }
    }

    #[test]
    fn near_commands_and_options_are_refused_with_a_suggestion() {
        let d = refused("sesion list");
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "cli.unknown-command");
        assert!(
            d.next().contains("did you mean `smith session list`?"),
            "{d}"
        );
        assert!(d.next().contains("`smith -- sesion list`"), "{d}");
        assert!(d.what().contains("`sesion`"), "{d}");
        assert!(refused("sessions").next().contains("`smith session`"));
        assert!(
            refused("plugins list")
                .next()
                .contains("`smith plugin list`")
        );
        assert!(
            refused("continue the refactor")
                .next()
                .contains("did you mean `smith --continue the refactor`?")
        );
        assert!(refused("sess").next().contains("`smith session`"));
        assert!(refused("—continue").next().contains("`smith --continue`"));
        assert!(
            refused("—model=m fix it")
                .next()
                .contains("`smith --model=m fix it`")
        );
    }

    #[test]
    fn missing_commands_and_lone_bare_words_are_refused() {
        let d = refused("docter");
        assert!(d.next().contains("did you mean `smith doctor`?"), "{d}");
        // `acp` is a command now: a prompt starting with it is refused as
        // one that swallowed a command, never sent.
        let d = refused("acp fix it");
        assert!(d.next().contains("smith acp"), "{d}");
        assert!(refused("login anthropic").next().contains("smith auth set"));
        let d = refused("undo");
        assert!(
            d.next().contains("did you mean `smith checkpoint undo`?"),
            "{d}"
        );
        let d = refused("hi");
        assert_eq!(d.what(), "smith has no command `hi`");
        assert!(d.next().contains("`smith -- hi`"), "{d}");
        assert!(d.is_complete(), "{d}");
    }

    #[test]
    fn options_after_the_first_word_are_refused() {
        let d = refused("fix the tests --model gpt-5");
        assert_eq!(d.code(), "cli.option-in-prompt");
        assert!(
            d.next().contains("`smith --model ... fix the tests`"),
            "{d}"
        );
        let d = refused("fix it --jsno");
        assert!(d.why().contains("`--json`"), "{d}");
        assert!(d.next().contains("`smith eval --json"), "{d}");
    }

    #[test]
    fn a_prompt_for_a_session_is_only_checked_for_options_and_commands() {
        let root = crate::Cli::command();
        assert!(check(&words("yes"), &root, true).is_none());
        assert!(check(&words("sesion list"), &root, true).is_none());
        let d = check(&words("session list"), &root, true).unwrap();
        assert_eq!(d.code(), "cli.conflict");
        assert!(
            d.next().contains("did you mean `smith session list`?"),
            "{d}"
        );
        assert!(d.is_complete(), "{d}");
        let d = check(&words("run the tests"), &root, false).unwrap();
        assert!(
            d.next().contains("did you mean `smith eval the tests`?"),
            "{d}"
        );
        let d = check(&words("go on --modle m"), &root, true).unwrap();
        assert_eq!(d.code(), "cli.option-in-prompt");
    }

    #[test]
    fn real_prompts_run() {
        allowed("fix the tests");
        allowed("replace foo with bar");
        allowed("explain what the session store does");
        allowed("Hi");
        allowed("fix the failing test in src/main.rs");
        allowed("what does -c do");
        allowed("-");
        allowed("update the readme");
        allowed("map the modules");
        allowed("—what is this");
    }

    #[test]
    fn a_command_named_by_a_verb_begins_a_prompt_when_words_follow() {
        allowed("update the readme");
        allowed("updated the docs");
        assert_eq!(
            refused("update the readme --modle x").code(),
            "cli.option-in-prompt"
        );
        assert_eq!(refused("updat").code(), "cli.unknown-command");
    }
}
