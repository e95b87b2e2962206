//! Command-line parse errors from clap as diagnostics: [`parse_cli`]
//! reports one and exits with status 2; [`cli_diagnostic`] builds it.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use smith_diag::{Diagnostic, Surface};

use super::diagnostic;

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
            // Lossy: an argument that is not UTF-8 is what failed here.
            let raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
            let args: Vec<String> = raw
                .iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            let d = if err.kind() == ErrorKind::InvalidUtf8 {
                invalid_utf8(P::command(), &raw)
            } else {
                cli_diagnostic(&err, P::command(), &args)
            };
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

/// The diagnostic for a command line with an argument that is not UTF-8
/// where smith needs text (a prompt, a name, an option's value): it names
/// the first such argument lossily (U+FFFD for each undecodable byte) and
/// its position. Arguments that are paths may be any bytes; clap reports
/// only the others.
pub fn invalid_utf8(cmd: clap::Command, raw: &[std::ffi::OsString]) -> Diagnostic {
    let args: Vec<String> = raw
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let bad = raw.iter().position(|arg| arg.to_str().is_none());
    let what = match bad {
        Some(i) => format!(
            "command-line argument {} ({:?}) is not valid UTF-8",
            i + 1,
            args[i]
        ),
        None => "a command-line argument is not valid UTF-8".to_owned(),
    };
    let (path, usage) = command_path(cmd, &args);
    let mut d = Diagnostic::error(
        "cli.invalid-utf8",
        what,
        "smith reads prompts, names and option values as UTF-8 text, and this argument holds bytes that are not (each shown as \u{fffd}), so nothing ran",
        format!(
            "pass the text in UTF-8 (e.g. convert it with `iconv -t UTF-8`, or set a UTF-8 locale in the terminal); run `{path} --help` to see every option"
        ),
    );
    if let Some(i) = bad {
        d = d
            .with_value(args[i].clone())
            .with_surface(Surface::other(format!("command-line argument {}", i + 1)));
    } else {
        d = d.with_surface(Surface::other("the command line"));
    }
    d.with_example(usage.trim())
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
    use smith_diag::Value;

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
    fn an_argument_that_is_not_utf8_is_named_lossily_with_its_position() {
        use clap::{CommandFactory as _, Parser as _};
        use std::os::unix::ffi::OsStringExt as _;
        let raw: Vec<std::ffi::OsString> = vec![
            "--count".into(),
            "1".into(),
            "--mode".into(),
            std::ffi::OsString::from_vec(b"caf\xe9".to_vec()),
        ];
        let err =
            Demo::try_parse_from(std::iter::once("demo".into()).chain(raw.clone())).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidUtf8);
        let d = invalid_utf8(Demo::command(), &raw);
        assert!(d.is_complete(), "{d}");
        assert_eq!(d.code(), "cli.invalid-utf8");
        assert_eq!(
            d.what(),
            "command-line argument 4 (\"caf\u{fffd}\") is not valid UTF-8"
        );
        assert_eq!(d.value(), Some(&Value::Shown("caf\u{fffd}".into())));
        assert!(d.next().contains("demo --help"), "{d}");
    }
}
