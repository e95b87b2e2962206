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
//! Command-line parse errors are in [`cli`].
//!
//! Every diagnostic reported here is also appended to the product log
//! (`log.level`, `log.file`; see [`smith_diag::log`]).

use std::io::IsTerminal;
use std::sync::LazyLock;

use smith_diag::{Diagnostic, Registry, Style, Surface, Value};

mod cli;
pub use cli::parse_cli;

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
    use std::io::Write as _;
    let d = diagnose(err);
    // Standard output may be gone (`smith eval --json ... | head`): the
    // record is then lost, never a panic.
    let _ = writeln!(
        std::io::stdout().lock(),
        "{}",
        serde_json::json!({"type": "error", "error": d.to_json()})
    );
    if std::io::stderr().is_terminal() {
        eprint!("{}", d.render_terminal(Style::for_stderr()));
    }
    smith_diag::log::report(&d);
}

/// The exit status of a `--json` command: an error is reported with
/// [`error_json`]; a failure because the reader of standard output went
/// away (`smith eval --json ... | head -1`) ends quietly with status 141,
/// as one ended by SIGPIPE.
pub fn exit_json(result: anyhow::Result<u8>) -> std::process::ExitCode {
    match result {
        Ok(code) => std::process::ExitCode::from(code),
        Err(_) if stdout_pipe_is_closed() => std::process::ExitCode::from(SIGPIPE_STATUS),
        Err(err) => {
            error_json(&err);
            std::process::ExitCode::from(1)
        }
    }
}

/// The status of a command whose standard output's reader went away:
/// that of a process ended by SIGPIPE (smith ignores the signal so that no
/// run is ever cut short by it).
pub const SIGPIPE_STATUS: u8 = 128 + libc::SIGPIPE as u8;

/// Whether standard output is a pipe whose reading end is closed.
pub fn stdout_pipe_is_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: polls one valid pollfd without waiting.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready == 1 && fd.revents & libc::POLLERR != 0
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

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

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
