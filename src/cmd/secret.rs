//! `smith secret add|list|remove`: secrets the user registers with the
//! secret proxy.
//!
//! A secret added here is kept in `secrets.json` next to the auth store
//! (private to the user, replaced atomically) and registered at every
//! runtime start with source `user`: from then on every text smith sends
//! to a provider, records or shows carries `{secret:NAME}` in its place.
//! `add` reads the value from standard input, or from a prompt that does
//! not echo when standard input is a terminal — never from the command
//! line. No command prints a value.

use std::io::{IsTerminal as _, Read as _, Write as _};

use smith_config::Paths;
use smith_diag::{Diagnostic, Surface};
use smith_host::secrets::UserSecrets;

use super::config::{report, style};

/// Manage the secrets smith redacts.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Register a secret NAME, read from standard input or a hidden prompt; smith replaces it with {secret:NAME} everywhere.
    Add {
        /// The name: letters, digits, `.`, `_`, `-` (e.g. github.token).
        name: String,
        /// A tool that may receive the value where its arguments say {secret:NAME} (repeatable; default: none).
        #[arg(long = "allow", value_name = "TOOL")]
        allow: Vec<String>,
    },
    /// List every secret a runtime registers: names, sources and fingerprints (never values).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop registering the secret NAME in future runtimes (past sessions keep its placeholder).
    Remove {
        /// The name.
        name: String,
    },
}

/// Runs `smith secret`.
///
/// # Errors
///
/// Only when standard output cannot be written; problems are reported as
/// diagnostics with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let style = style(None);
    let json = matches!(args.command, Sub::List { json: true });
    match run_inner(args.command) {
        Ok(code) => Ok(code),
        Err(d) => {
            report(&d, json, style);
            Ok(1)
        }
    }
}

fn run_inner(command: Sub) -> Result<u8, Diagnostic> {
    let paths = Paths::from_process().map_err(|e| e.into_diagnostic())?;
    let store = UserSecrets::in_data_dir(&paths.data_dir);
    match command {
        Sub::Add { name, allow } => {
            let value = read_value(&name)?;
            store.add(&name, &value, &allow)?;
            let allowed = if allow.is_empty() {
                String::new()
            } else {
                format!("; {} may receive it", allow.join(", "))
            };
            println!(
                "registered {name} in {}: smith shows {{secret:{name}}} in its place{allowed}",
                store.path().display()
            );
            Ok(0)
        }
        Sub::List { json } => {
            let user = store.list()?;
            let (registered, warnings) = smith_host::secrets::visible(&paths.data_dir);
            for warning in &warnings {
                report(warning, json, style(None));
            }
            let allowed = |name: &str, source: &str| {
                if source != "user" {
                    return Vec::new();
                }
                user.iter()
                    .find(|s| s.name == name)
                    .map(|s| s.allow.clone())
                    .unwrap_or_default()
            };
            if json {
                let rows: Vec<_> = registered
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "name": r.name,
                            "source": r.source.to_string(),
                            "fingerprint": r.fingerprint.to_string(),
                            "allow": allowed(&r.name, &r.source.to_string()),
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(rows));
            } else if registered.is_empty() {
                println!("no secrets are registered (add one with `smith secret add NAME`)");
            } else {
                for r in &registered {
                    let tools = allowed(&r.name, &r.source.to_string());
                    let tools = if tools.is_empty() {
                        String::new()
                    } else {
                        format!("  allow {}", tools.join(","))
                    };
                    println!(
                        "{:<28} {:<24} {}{tools}",
                        r.name,
                        r.source.to_string(),
                        r.fingerprint
                    );
                }
            }
            Ok(0)
        }
        Sub::Remove { name } => {
            if store.remove(&name)? {
                println!(
                    "removed {name}: runtimes started from now on no longer register it; sessions recorded before keep {{secret:{name}}} where its value was"
                );
                Ok(0)
            } else {
                Err(Diagnostic::error(
                    "secrets.unknown",
                    format!("there is no secret {name} to remove"),
                    format!(
                        "{} holds no secret of that name (secrets from the environment, the auth store and configuration are removed where they are set)",
                        store.path().display()
                    ),
                    "list the registered secrets with `smith secret list`",
                ))
            }
        }
    }
}

fn read_value(name: &str) -> Result<String, Diagnostic> {
    let stdin = std::io::stdin();
    let fail = |e: std::io::Error| {
        Diagnostic::error(
            "secrets.read",
            format!("could not read the value of secret {name}"),
            format!("reading standard input failed: {e}"),
            format!("pipe the value in: `printf %s \"$VALUE\" | smith secret add {name}`"),
        )
        .with_surface(Surface::other("standard input"))
    };
    let value = if stdin.is_terminal() {
        let mut err = std::io::stderr();
        let _ = write!(err, "{name} (input hidden): ");
        let _ = err.flush();
        let line = super::auth::read_hidden_line().map_err(fail)?;
        let _ = writeln!(err);
        line
    } else {
        let mut s = String::new();
        stdin.lock().read_to_string(&mut s).map_err(fail)?;
        s
    };
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(Diagnostic::error(
            "secrets.empty",
            format!("no value was given for secret {name}"),
            "standard input was empty",
            format!(
                "pipe the value in: `printf %s \"$VALUE\" | smith secret add {name}`, or type it at the prompt"
            ),
        )
        .with_surface(Surface::other("standard input")));
    }
    Ok(value)
}
