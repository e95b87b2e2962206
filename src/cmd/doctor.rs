//! `smith doctor [--json] [--live]`: what is wrong with this setup.
//!
//! Six areas are checked, each by the code the rest of smith uses for the
//! same thing, so that doctor and a run cannot disagree: the configuration
//! layers ([`configuration`]), credentials and the provider a run would use
//! ([`credentials`]), the terminal ([`terminal`]), the sandbox
//! ([`sandbox`]), plugins and their compiled-component cache
//! ([`plugins`]), and the session store ([`sessions`]). Each finding is
//! `ok`, `info`, `warning` or `error` ([`finding`]) and says what, why and
//! what to do next; the exit status is that of the worst finding.
//!
//! Doctor reads; it changes nothing of the user's and sends nothing over
//! the network unless `--live` is given. Credential values are never shown:
//! they are registered for redaction as they are found, and every line and
//! JSON string is redacted before it is printed.

mod configuration;
mod credentials;
pub mod finding;
mod plugins;
mod sandbox;
mod sessions;
mod terminal;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use smith_config::{Config, Paths};

use finding::{Area, Finding, Severity, redact};

/// What `smith doctor --help` says after the options: the areas, the exit
/// status and the JSON document (docs/cli.md is generated from it).
pub const HELP: &str = "\
Areas and what each checks (nothing is changed; nothing is sent without --live):
  configuration  the user file (config.kdl), the trusted project's .smith/config.kdl and the
                 SMITH_* variables, each read by the loader's own code: every invalid value and
                 unknown key with its file, line and column; an untrusted project; models.kdl
  credentials    each provider's credential: present or not, and where from (environment
                 variable or auth store; never the value); the auth and secret stores (readable,
                 mode 600); the provider a run here would use; with --live, one request per
                 provider with a credential, as `smith auth check PROVIDER --live` sends it
  terminal       standard input and output, TERM, colors (COLORTERM, NO_COLOR, `color`), the
                 keyboard protocol and synchronized output (the interface asks the terminal when
                 it starts, so unknown here unless SMITH_TUI_CAPS says), clipboard (OSC 52),
                 mouse capture (`tui.mouse`)
  sandbox        Landlock and the network namespace, and whether bash runs confined, refused or
                 unconfined in each approval mode (as `smith sandbox` reports)
  plugins        each plugin with its state and grants; the compiled-component cache: where,
                 how big, what is compiled for this build, stale entries
  sessions       the session store: sessions, disk use, files `smith session repair` fixes,
                 files that do not load, effects whose outcome is unknown (open intents)

Each finding is one line, `SEVERITY  WHAT — WHY`, with an indented `next:` line unless it is ok.
Severities: ok; info (worth knowing, nothing to fix); warning (works less well or will
surprise); error (a run fails on it).

Exit status: 0 when no finding is a warning or an error, 1 when the worst is a warning, 2 when
one is an error.

--json prints one JSON object:
  {\"schema_version\": 1, \"status\": \"ok\"|\"warning\"|\"error\", \"exit_code\": 0|1|2,
   \"counts\": {\"ok\": N, \"info\": N, \"warning\": N, \"error\": N}, \"elapsed_ms\": N,
   \"live\": BOOL, \"findings\": [FINDING...]}
FINDING:
  {\"area\": \"configuration\"|\"credentials\"|\"terminal\"|\"sandbox\"|\"plugins\"|\"sessions\",
   \"check\": ID, \"severity\": \"ok\"|\"info\"|\"warning\"|\"error\", \"what\": TEXT,
   \"why\": TEXT|null, \"next\": TEXT|null, \"diagnostic\": DIAGNOSTIC|null, \"details\": {...}}
`diagnostic` is present for warnings and errors: the JSON rendering of docs/diagnostics.md
(code, value, surface with path, line and column, field). `details` holds the check's facts
(paths, counts, states). Check ids: config.paths, config.user-file, config.project-file,
config.environment, config.models-file, credentials.auth-store, credentials.slot,
credentials.local-server, credentials.secrets, credentials.provider, credentials.live,
terminal.tty, terminal.term, terminal.color, terminal.keyboard, terminal.synchronized,
terminal.clipboard, terminal.mouse, sandbox.kernel, sandbox.policy, sandbox.bash,
sandbox.layers, plugins.plugin, plugins.project, plugins.cache, plugins.mcp-server (each
configured MCP server, started and initialized by smith/mcp: ok when it answers, a warning
saying why when it does not; checked only when servers are configured), sessions.store,
sessions.file, sessions.leftovers.";

/// `smith doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of text (its fields are listed below).
    #[arg(long)]
    json: bool,
    /// Also send one small request to each provider with a credential (or a base URL), as `smith auth check PROVIDER --live` does; without it nothing is sent.
    #[arg(long)]
    live: bool,
}

/// What every check may use: the user directories and the resolved
/// configuration (when they can be had), the working folder.
pub struct Context {
    /// The user directories; `None` when no home can be found (the
    /// configuration area says so).
    pub paths: Option<Paths>,
    /// The configuration as a run resolves it; `None` when it does not
    /// load (the configuration area says why), and defaults apply.
    pub config: Option<&'static Config>,
    /// The working folder.
    pub cwd: PathBuf,
    /// `--live`.
    pub live: bool,
}

/// Runs `smith doctor`.
///
/// # Errors
///
/// When the working folder cannot be read or standard output cannot be
/// written; everything else is a finding.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let started = Instant::now();
    let cx = Context {
        paths: Paths::from_process().ok(),
        config: smith_host::settings::config().ok(),
        cwd: std::env::current_dir()?,
        live: args.live,
    };
    let findings = collect(&cx);
    let worst = findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok);
    let code = worst.exit_code();
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut out = std::io::stdout().lock();
    if args.json {
        let document = to_json(&findings, code, elapsed_ms, args.live);
        writeln!(out, "{}", serde_json::to_string_pretty(&document)?)?;
    } else {
        write!(out, "{}", text(&findings, code, elapsed_ms))?;
    }
    out.flush()?;
    Ok(code)
}

/// Every area's findings, in area order.
fn collect(cx: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    for area in Area::ALL {
        match area {
            Area::Configuration => configuration::check(cx, &mut findings),
            Area::Credentials => credentials::check(cx, &mut findings),
            Area::Terminal => terminal::check(cx, &mut findings),
            Area::Sandbox => sandbox::check(cx, &mut findings),
            Area::Plugins => plugins::check(cx, &mut findings),
            Area::Sessions => sessions::check(cx, &mut findings),
        }
    }
    findings
}

fn counts(findings: &[Finding]) -> [usize; 4] {
    let mut n = [0; 4];
    for f in findings {
        n[f.severity as usize] += 1;
    }
    n
}

/// The `--json` document.
fn to_json(findings: &[Finding], code: u8, elapsed_ms: u64, live: bool) -> serde_json::Value {
    let [ok, info, warning, error] = counts(findings);
    json!({
        "schema_version": 1,
        "status": match code { 0 => "ok", 1 => "warning", _ => "error" },
        "exit_code": code,
        "counts": {"ok": ok, "info": info, "warning": warning, "error": error},
        "elapsed_ms": elapsed_ms,
        "live": live,
        "findings": findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
    })
}

/// The human report: the areas as headings, one line per finding, a
/// `next:` line under each that is not ok, and a summary.
fn text(findings: &[Finding], code: u8, elapsed_ms: u64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for area in Area::ALL {
        let mut of_area = findings.iter().filter(|f| f.area == area).peekable();
        if of_area.peek().is_none() {
            continue;
        }
        let _ = writeln!(s, "{}", area.as_str());
        for f in of_area {
            let mut line = f.what.clone();
            if let Some(place) = f.place() {
                let _ = write!(line, " (at {place})");
            }
            if let Some(why) = &f.why {
                let _ = write!(line, " — {why}");
            }
            let _ = writeln!(s, "  {:<7}  {}", f.severity.as_str(), redact(&line));
            if f.severity != Severity::Ok
                && let Some(next) = &f.next
            {
                let _ = writeln!(s, "  {:<7}  next: {}", "", redact(next));
            }
        }
    }
    let [ok, info, warning, error] = counts(findings);
    let _ = writeln!(
        s,
        "\n{ok} ok, {info} info, {warning} warning(s), {error} error(s) in {elapsed_ms} ms; exit status {code}"
    );
    s
}
