//! How the binary reports a failure: every top-level error becomes one
//! [`Diagnostic`] (what happened, why, the next action, the offending value
//! and where it came from), rendered for the terminal on standard error —
//! color only when standard error is a terminal and `NO_COLOR` is unset —
//! or as JSON for `--json` surfaces.
//!
//! Commands return `anyhow::Error`s. [`diagnose`] looks through the error's
//! chain for a typed error of a smith crate (a diagnostic itself, a
//! configuration, store, codec, engine, RPC, provider, plugin or terminal
//! error), converts it with that crate's conversion, and puts the context
//! the command added in front of its *what*. Command-line parse errors from clap
//! become diagnostics too ([`parse_cli`]).
//!
//! Every diagnostic reported here is also appended to the product log
//! (`log.level`, `log.file`; see [`smith_diag::log`]).

use std::io::IsTerminal;
use std::sync::LazyLock;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use smith_diag::{Diagnostic, Registry, Style, Surface, Value};

/// Every error type of the smith crates the binary links that has a
/// diagnostic, and [`Diagnostic`] itself.
fn registry() -> &'static Registry {
    static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
        Registry::new()
            .with(smith_config::DIAGNOSABLE)
            .with(smith_store::DIAGNOSABLE)
            .with(smith_codec::DIAGNOSABLE)
            .with(smith_rpc::DIAGNOSABLE)
            .with(smith_engine::DIAGNOSABLE)
            .with(smith_net::DIAGNOSABLE)
            .with(smith_plugins::DIAGNOSABLE)
            .with(smith_tui::DIAGNOSABLE)
    });
    &REGISTRY
}

/// `cause` as a diagnostic, when it is a typed error of a smith crate.
fn convert(cause: &(dyn std::error::Error + 'static)) -> Option<Diagnostic> {
    registry().find(cause)
}

/// The typed error in `err`'s chain nearest to its root, as a diagnostic,
/// and its position in the chain.
fn typed(err: &anyhow::Error) -> Option<(usize, Diagnostic)> {
    err.chain()
        .enumerate()
        .filter_map(|(i, cause)| convert(cause).map(|d| (i, d)))
        .last()
}

/// `d` with `prefix` in front of its *what*; everything else kept.
fn with_context(prefix: &str, d: &Diagnostic) -> Diagnostic {
    let mut out = Diagnostic::new(
        d.severity(),
        d.code(),
        format!("{prefix}: {}", d.what()),
        d.why(),
        d.next(),
    );
    match d.value() {
        Some(Value::Shown(v)) => out = out.with_value(v),
        Some(Value::Withheld) => out = out.with_withheld_value(),
        None => {}
    }
    if let Some(s) = d.surface() {
        out = out.with_surface(s.clone());
    }
    if let Some(f) = d.field() {
        out = out.with_field(f);
    }
    if let Some(e) = d.example() {
        out = out.with_example(e);
    }
    out
}

/// The part of a context message before its own "; next action".
fn context_what(message: &str) -> &str {
    message.rsplit_once("; ").map_or(message, |(what, _)| what)
}

/// `err` as one diagnostic.
pub fn diagnose(err: &anyhow::Error) -> Diagnostic {
    let messages: Vec<String> = err.chain().map(ToString::to_string).collect();
    match typed(err) {
        Some((0, d)) => d,
        Some((i, d)) => {
            // Contexts the command added, outermost first, that the typed
            // error does not already say.
            let prefix: Vec<&str> = messages[..i]
                .iter()
                .map(|m| context_what(m))
                .filter(|m| !d.what().contains(*m))
                .collect();
            if prefix.is_empty() {
                d
            } else {
                with_context(&prefix.join(": "), &d)
            }
        }
        None => {
            let why = if messages.len() > 1 {
                messages[1..].join(": ")
            } else {
                "the command could not complete".to_owned()
            };
            Diagnostic::from_message(
                "smith.failed",
                &messages[0],
                why,
                "correct the cause named above and run the command again",
            )
            .with_surface(Surface::other("the smith command"))
        }
    }
}

/// Reports `err` on standard error, rendered for the terminal, and
/// appends it to the log.
pub fn error(err: &anyhow::Error) {
    diagnostic(&diagnose(err));
}

/// Reports `d` (an error or a warning) on standard error, rendered for the
/// terminal, and appends it to the log ([`smith_diag::log`]) when its
/// severity is at or above `log.level`.
pub fn diagnostic(d: &Diagnostic) {
    eprint!("{}", d.render_terminal(Style::for_stderr()));
    smith_diag::log::report(d);
}

/// Reports `err` as one JSON line `{"type": "error", "error": {...}}` on
/// standard output (the `--json` surfaces), and the terminal rendering on
/// standard error when that is a terminal; the log gets it either way.
pub fn error_json(err: &anyhow::Error) {
    let d = diagnose(err);
    println!(
        "{}",
        serde_json::json!({"type": "error", "error": d.to_json()})
    );
    if std::io::stderr().is_terminal() {
        eprint!("{}", d.render_terminal(Style::for_stderr()));
    }
    smith_diag::log::report(&d);
}

/// The exit status of a `--json` command: an error is reported with
/// [`error_json`].
pub fn exit_json(result: anyhow::Result<u8>) -> std::process::ExitCode {
    match result {
        Ok(code) => std::process::ExitCode::from(code),
        Err(err) => {
            error_json(&err);
            std::process::ExitCode::from(1)
        }
    }
}

/// A protocol event as a `--json` record: an `error` event also carries its
/// diagnostic's JSON rendering under `diagnostic`.
///
/// # Errors
///
/// When the event cannot be projected to JSON.
pub fn event_record(
    event: &smith_engine::protocol::Event,
) -> serde_json::Result<serde_json::Value> {
    let mut record = serde_json::to_value(event)?;
    if let (smith_engine::protocol::Event::Error(info), serde_json::Value::Object(map)) =
        (event, &mut record)
    {
        map.insert("diagnostic".into(), info.to_diagnostic().to_json());
    }
    Ok(record)
}

/// Parses the command line; a parse error is reported as a diagnostic and
/// the process exits with status 2 (help and version print as usual).
pub fn parse_cli<P: clap::Parser>() -> P {
    match P::try_parse() {
        Ok(parsed) => parsed,
        Err(err) => {
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                err.exit();
            }
            let args: Vec<String> = std::env::args().skip(1).collect();
            let d = cli_diagnostic(&err, P::command(), &args);
            diagnostic(&d);
            // `exit` runs no destructors: drop the diagnostic first so the
            // audit log records it.
            drop(d);
            std::process::exit(2);
        }
    }
}

/// The (sub)command `args` name, as `smith session` and its usage line.
fn command_path(mut cmd: clap::Command, args: &[String]) -> (String, String) {
    let mut path = cmd.get_name().to_owned();
    for arg in args {
        if arg.starts_with('-') {
            continue;
        }
        let Some(sub) = cmd
            .get_subcommands()
            .find(|s| s.get_name() == arg || s.get_all_aliases().any(|a| a == arg))
            .cloned()
        else {
            break;
        };
        path.push(' ');
        path.push_str(sub.get_name());
        cmd = sub.bin_name(&path);
    }
    let usage = cmd.bin_name(&path).render_usage().to_string();
    (path, usage)
}

fn context(err: &clap::Error, kind: ContextKind) -> Option<String> {
    match err.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => Some(v.join(", ")),
        other => Some(other.to_string()),
    }
}

/// A clap parse error of `cmd` given `args` as a diagnostic
/// (`cli.<kind>`), with the usage of the (sub)command as the example.
pub fn cli_diagnostic(err: &clap::Error, cmd: clap::Command, args: &[String]) -> Diagnostic {
    let rendered = err.render().to_string();
    let mut what = String::new();
    let mut tip = None;
    for line in rendered.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("error: ") {
            what = rest.to_owned();
        } else if what.ends_with(':') && !line.is_empty() {
            what.push(' ');
            what.push_str(line);
        } else if let Some(rest) = line.strip_prefix("tip: ") {
            tip.get_or_insert_with(|| rest.to_owned());
        }
    }
    if what.is_empty() {
        what = rendered
            .lines()
            .next()
            .unwrap_or("invalid command line")
            .to_owned();
    }
    let (code, why) = match err.kind() {
        ErrorKind::UnknownArgument => (
            "cli.unknown-argument",
            "the command does not accept that argument",
        ),
        ErrorKind::InvalidValue => ("cli.invalid-value", "the value is not one the flag accepts"),
        ErrorKind::ValueValidation => (
            "cli.invalid-value",
            "the value does not parse as the flag's type",
        ),
        ErrorKind::InvalidSubcommand => {
            ("cli.unknown-command", "smith has no command of that name")
        }
        ErrorKind::MissingRequiredArgument => {
            ("cli.missing-argument", "the command needs that argument")
        }
        ErrorKind::MissingSubcommand => ("cli.missing-command", "the command needs a subcommand"),
        ErrorKind::ArgumentConflict => ("cli.conflict", "those arguments cannot be used together"),
        ErrorKind::TooManyValues | ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => (
            "cli.value-count",
            "the flag takes a different number of values",
        ),
        ErrorKind::NoEquals => (
            "cli.no-equals",
            "the flag's value must follow an equals sign",
        ),
        _ => (
            "cli.invalid",
            "the command line does not match the command's usage",
        ),
    };
    let (path, usage) = command_path(cmd, args);
    let help = format!("{path} --help");
    let next = match tip {
        Some(tip) => format!("{tip}; run `{help}` to see every option"),
        None => format!("correct the command line; run `{help}` to see every option"),
    };
    let mut d = Diagnostic::error(code, what, why, next);
    let arg = context(err, ContextKind::InvalidArg);
    let value = context(err, ContextKind::InvalidValue)
        .or_else(|| context(err, ContextKind::InvalidSubcommand))
        .or_else(|| arg.clone());
    if let Some(value) = value {
        d = d.with_value(value);
    }
    d = match arg {
        Some(arg) if arg.starts_with('-') => {
            d.with_surface(Surface::flag(arg.split_whitespace().next().unwrap_or(&arg)))
        }
        Some(arg) => d.with_surface(Surface::other(format!("command-line argument {arg}"))),
        None => d.with_surface(Surface::other("the command line")),
    };
    d.with_example(usage.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[derive(Debug, clap::Parser)]
    #[command(name = "demo")]
    struct Demo {
        #[arg(long)]
        count: u32,
        #[arg(long, value_parser = ["a", "b"])]
        mode: Option<String>,
    }

    #[test]
    fn clap_errors_become_complete_diagnostics_naming_the_flag() {
        use clap::{CommandFactory as _, Parser as _};
        let diagnose_args = |args: &[&str]| {
            let err = Demo::try_parse_from(args).unwrap_err();
            let rest: Vec<String> = args[1..].iter().map(|s| (*s).to_owned()).collect();
            cli_diagnostic(&err, Demo::command(), &rest)
        };
        let d = diagnose_args(&["demo", "--count", "x"]);
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "cli.invalid-value");
        assert_eq!(d.value(), Some(&Value::Shown("x".into())));
        assert_eq!(d.surface(), Some(&Surface::flag("--count")));
        assert!(d.render_plain().contains("Usage: demo"), "{d}");

        let d = diagnose_args(&["demo", "--count", "1", "--bogus"]);
        assert_eq!(d.code(), "cli.unknown-argument");
        assert_eq!(d.value(), Some(&Value::Shown("--bogus".into())));
        assert!(d.next().contains("demo --help"), "{d}");

        let d = diagnose_args(&["demo"]);
        assert_eq!(d.code(), "cli.missing-argument");
        assert!(d.is_complete(), "{d}");
    }

    #[test]
    fn typed_errors_keep_their_parts_under_context() {
        let dir = tempfile::tempdir().unwrap();
        let store = smith_store::Store::open(dir.path()).unwrap();
        let err = anyhow::Error::from(store.load("ghost").unwrap_err()).context(
            "could not open session \"ghost\" given with --session; run `smith session list`",
        );
        let d = diagnose(&err);
        assert_eq!(d.code(), "store.not-found");
        assert!(
            d.what()
                .starts_with("could not open session \"ghost\" given with --session: "),
            "{d}"
        );
        assert_eq!(d.value(), Some(&Value::Shown("\"ghost\"".into())));
        assert!(d.is_complete());
    }

    #[test]
    fn plugin_errors_render_like_the_other_crates_errors() {
        let missing = std::path::Path::new("/nonexistent/smith-plugin-folder");
        let root = tempfile::tempdir().unwrap();
        let err = smith_plugins::manifest::install(missing, root.path()).unwrap_err();
        let err = anyhow::Error::from(err).context("smith plugin install");
        let d = diagnose(&err);
        assert_eq!(d.code(), "plugin.io");
        assert!(d.is_complete(), "{d}");
        assert!(
            d.what().starts_with(
                "smith plugin install: plugin /nonexistent/smith-plugin-folder (install): "
            ),
            "{d}"
        );
        assert_eq!(
            d.value(),
            Some(&Value::Shown("\"/nonexistent/smith-plugin-folder\"".into()))
        );
        assert_eq!(
            d.surface(),
            Some(&Surface::file("/nonexistent/smith-plugin-folder"))
        );
        let rendered = d.render_plain();
        assert!(rendered.starts_with("error[plugin.io]: "), "{rendered}");
        assert!(rendered.contains("\n  why: "), "{rendered}");
    }

    #[test]
    fn a_diagnostic_under_context_keeps_its_parts() {
        let original = Diagnostic::error("p.unknown", "provider `x` is not known", "y", "n")
            .with_value("x")
            .with_surface(Surface::env("SMITH_PROVIDER"))
            .with_field("provider")
            .with_example("--provider mock");
        let err = anyhow::Error::from(original).context("setting up");
        let d = diagnose(&err);
        assert_eq!(d.code(), "p.unknown");
        assert_eq!(d.what(), "setting up: provider `x` is not known");
        assert_eq!((d.why(), d.next()), ("y", "n"));
        assert_eq!(d.value(), Some(&Value::Shown("x".into())));
        assert_eq!(d.surface(), Some(&Surface::env("SMITH_PROVIDER")));
        assert_eq!(d.field(), Some("provider"));
        assert_eq!(d.example(), Some("--provider mock"));
    }

    #[test]
    fn every_linked_crates_errors_are_found_without_naming_their_types() {
        let env = smith_config::paths::PathEnv::from_vars(|_| None);
        let config = smith_config::Paths::resolve(&env).unwrap_err();
        let d = diagnose(&anyhow::Error::from(config.clone()).context("starting"));
        assert_eq!(d.code(), config.diagnostic().code());
        assert_eq!(
            d.what(),
            format!("starting: {}", config.diagnostic().what())
        );
        assert_eq!(d.next(), config.diagnostic().next());
    }

    #[test]
    fn a_diagnostic_passes_through_and_plain_messages_still_have_three_parts() {
        let original = Diagnostic::error("x.y", "w", "y", "n").with_value("v");
        let d = diagnose(&anyhow::Error::from(original.clone()));
        assert_eq!(d, original);

        let err = anyhow::anyhow!("the thing broke; fix the thing");
        let d = diagnose(&err);
        assert_eq!((d.what(), d.next()), ("the thing broke", "fix the thing"));
        assert!(d.is_complete());

        let io = std::io::Error::other("disk on fire");
        let err = Err::<(), _>(io).context("writing \"out.txt\"").unwrap_err();
        let d = diagnose(&err);
        assert_eq!(d.what(), "writing \"out.txt\"");
        assert_eq!(d.why(), "disk on fire");
        assert_eq!(d.value(), Some(&Value::Shown("\"out.txt\"".into())));
    }
}
