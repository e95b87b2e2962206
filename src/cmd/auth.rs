//! `smith auth set|status|check|logout`: credentials in smith's auth store.
//!
//! `set` reads the value from standard input, or from a prompt that does
//! not echo when standard input is a terminal — never from the command line,
//! where it would land in shell history and process listings. No command
//! prints a credential value.

use std::io::{IsTerminal as _, Read as _, Write as _};

use smith_auth::{AuthStore, Credential, CredentialKind, Resolver, Secret, Slot};
use smith_config::Paths;
use smith_diag::{Diagnostic, Surface};

use super::config::{report, style};

pub(crate) mod live;

/// Manage credentials.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Store an API key for PROVIDER, read from standard input or a hidden prompt.
    Set {
        /// The provider, e.g. anthropic, openai, google, openai-compatible.
        provider: String,
        /// The credential slot (default: the provider's API key slot).
        #[arg(long)]
        slot: Option<String>,
    },
    /// Show every credential slot: where its value comes from, its kind and expiry (never the value).
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Resolve PROVIDER's credential as a request would, renewing it if needed; no model request is made unless --live is given.
    Check {
        /// The provider.
        provider: String,
        /// The credential slot (default: the provider's API key slot).
        #[arg(long, conflicts_with = "live")]
        slot: Option<String>,
        /// Also send one small streaming request, offering one tool, through the provider as a run would: reports the latency, the model that answered, and whether streaming and tool use worked; exits 1 when the request fails.
        #[arg(long)]
        live: bool,
        /// With --live: the model to ask (default: the provider's default model, or a local server's only model).
        #[arg(long, value_name = "M", requires = "live")]
        model: Option<String>,
        /// With --live: the provider's API base URL (default: the provider's, or its base URL variable).
        #[arg(long, value_name = "URL", requires = "live")]
        base_url: Option<String>,
    },
    /// Remove PROVIDER's stored credentials (one slot with --slot).
    Logout {
        /// The provider.
        provider: String,
        /// Only this slot.
        #[arg(long)]
        slot: Option<String>,
    },
}

/// The credential slots the built-in providers describe (the same list the
/// live providers resolve with).
fn provider_slots() -> Vec<Slot> {
    smith_provider_host::builtin_slots()
}

fn default_slot(provider: &str, slots: &[Slot]) -> String {
    slots
        .iter()
        .find(|s| s.provider == provider)
        .map_or_else(|| "api_key".to_owned(), |s| s.slot.clone())
}

/// Runs `smith auth`.
///
/// # Errors
///
/// Only when standard output cannot be written; credential problems are
/// reported as diagnostics with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let style = style(None);
    if let Sub::Check {
        provider,
        live: true,
        model,
        base_url,
        ..
    } = &args.command
    {
        return match live::check(provider, model.as_deref(), base_url.as_deref()) {
            Ok(report) => {
                println!("{report}");
                Ok(0)
            }
            Err(live::Failed::Setup(e)) => Err(e),
            Err(live::Failed::Request(d)) => {
                report(&d, false, style);
                Ok(1)
            }
        };
    }
    let json = matches!(args.command, Sub::Status { json: true });
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
    let store = AuthStore::in_data_dir(&paths.data_dir);
    let slots = provider_slots();
    match command {
        Sub::Set { provider, slot } => {
            let slot = slot.unwrap_or_else(|| default_slot(&provider, &slots));
            let value = read_value(&provider, &slot)?;
            store.set(&provider, &slot, &Credential::ApiKey(Secret::new(value)))?;
            println!("stored {provider}.{slot} in {}", store.path().display());
            Ok(0)
        }
        Sub::Status { json } => {
            let resolver = Resolver::new(slots).store(store);
            let status = resolver.status()?;
            if json {
                let rows: Vec<_> = status
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "slot": s.handle,
                            "state": s.state,
                            "source": s.found.as_ref().map(|f| f.0.to_string()),
                            "kind": s.found.as_ref().map(|f| f.1),
                            "expires_at": s.found.as_ref().and_then(|f| f.2),
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(rows));
            } else {
                for s in &status {
                    match &s.found {
                        Some((origin, kind, expires)) => println!(
                            "{:<28} {:<9} {kind} from {origin}{}",
                            s.handle,
                            s.state,
                            expires.map_or_else(String::new, |e| format!(", expires at {e}"))
                        ),
                        None => println!("{:<28} {}", s.handle, s.state),
                    }
                }
            }
            Ok(0)
        }
        Sub::Check { provider, slot, .. } => {
            if let Some(vendor) = smith_provider_host::Vendor::from_id(&provider)
                .filter(|v| v.is_local() && slot.is_none())
            {
                println!(
                    "ok: {} is a local server and takes no credential; `smith auth check {} --live` sends it one request",
                    vendor.id(),
                    vendor.id()
                );
                return Ok(0);
            }
            let slot = slot.unwrap_or_else(|| default_slot(&provider, &slots));
            let resolver = Resolver::new(slots).store(store);
            let r = resolver.resolve(&provider, &slot)?;
            println!(
                "ok: {provider}.{slot} is a{} {} from {}{}",
                if r.credential.kind() == CredentialKind::ApiKey {
                    "n"
                } else {
                    ""
                },
                r.credential.kind().as_str(),
                r.origin,
                if r.renewed { " (renewed)" } else { "" }
            );
            Ok(0)
        }
        Sub::Logout { provider, slot } => {
            let removed = store.remove(&provider, slot.as_deref())?;
            if removed == 0 {
                println!("nothing stored for {provider}");
            } else {
                println!("removed {removed} credential(s) of {provider}");
            }
            Ok(0)
        }
    }
}

fn read_value(provider: &str, slot: &str) -> Result<String, Diagnostic> {
    let stdin = std::io::stdin();
    let fail = |e: std::io::Error| {
        Diagnostic::error(
            "auth.read",
            format!("could not read the credential for {provider}.{slot}"),
            format!("reading standard input failed: {e}"),
            format!("pipe the key in: `printf %s \"$KEY\" | smith auth set {provider}`"),
        )
        .with_surface(Surface::other("standard input"))
    };
    let value = if stdin.is_terminal() {
        let mut err = std::io::stderr();
        let _ = write!(err, "{provider}.{slot} (input hidden): ");
        let _ = err.flush();
        let line = read_hidden_line().map_err(fail)?;
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
            "auth.empty",
            format!("no credential was given for {provider}.{slot}"),
            "standard input was empty",
            format!("pipe the key in: `printf %s \"$KEY\" | smith auth set {provider}`, or type it at the prompt"),
        )
        .with_surface(Surface::other("standard input")));
    }
    Ok(value)
}

/// Reads one line from the terminal on standard input with echo off.
#[cfg(unix)]
pub(super) fn read_hidden_line() -> std::io::Result<String> {
    let fd = libc::STDIN_FILENO;
    // SAFETY: termios is plain data; tcgetattr fills it for a valid fd.
    let mut old: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is standard input and `old` is a valid termios.
    if unsafe { libc::tcgetattr(fd, &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut quiet = old;
    quiet.c_lflag &= !libc::ECHO;
    quiet.c_lflag |= libc::ECHONL;
    // SAFETY: as above, with a termios derived from the current one.
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut line = String::new();
    let result = std::io::stdin().read_line(&mut line);
    // SAFETY: restores the settings read above.
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &old) };
    result.map(|_| line)
}

/// Reads one line from standard input (echo cannot be turned off here).
#[cfg(not(unix))]
pub(super) fn read_hidden_line() -> std::io::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map(|_| line)
}
