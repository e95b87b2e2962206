//! `smith models [--provider P] [--json] [--sources] [--refresh] [--resolve NAME]`:
//! the model catalog as smith sees it now — the reviewed bundled catalog,
//! the user's `models.kdl` in the configuration directory (which always
//! wins), and provider data cached by earlier refreshes. Unknown values
//! print as `?`. `--resolve` shows where an alias or group routes, in
//! failover order. `--refresh` first asks the providers for their model
//! lists (waiting for them), saves what they said to the catalog cache, and
//! lists with provenance.
//!
//! [`start_background_refresh`] is the `catalog.refresh = "background"`
//! option: the commands that run the agent call it, it returns at once,
//! and the refresh it starts only writes the cache for later runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Once};

use smith_catalog::{
    Catalog, Entry, RefreshOutcome, Routes, Snapshot, Source, Target, bundled, parse_user_file,
};
use smith_config::Paths;
use smith_diag::Diagnostic;
use smith_provider_host::refresh::{Plan, PluginSetup};
use smith_provider_host::{NetTransport, Vendor};

use super::config::{report, style};

/// `smith models`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this provider's models (e.g. anthropic, openai, google).
    #[arg(long, value_name = "P")]
    provider: Option<String>,
    /// Print JSON: each model with the source of every field, and conflicts.
    #[arg(long)]
    json: bool,
    /// Also show where each value came from and where sources disagree.
    #[arg(long)]
    sources: bool,
    /// Resolve an alias, group or model reference to its ordered targets instead.
    #[arg(long, value_name = "NAME", conflicts_with = "refresh")]
    resolve: Option<String>,
    /// First ask the providers (all, or --provider's) for their model lists and wait: prints, per provider, how many models were published, why it failed, or why it was skipped; saves the lists to the catalog cache; then lists with provenance.
    #[arg(long)]
    refresh: bool,
}

/// The user's own model entries, next to `config.kdl`.
pub const USER_FILE: &str = "models.kdl";

/// Runs `smith models`.
///
/// # Errors
///
/// Only when standard output cannot be written; catalog problems are
/// reported as diagnostics with exit code 1.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let style = style(None);
    let (catalog, routes) = match load() {
        Ok(c) => c,
        Err(d) => {
            report(&d, args.json, style);
            return Ok(1);
        }
    };
    let mut refreshed = Vec::new();
    if args.refresh {
        refreshed = match refresh_now(&catalog, args.provider.as_deref()) {
            Ok(r) => r,
            Err(d) => {
                report(&d, args.json, style);
                return Ok(1);
            }
        };
        if !args.json {
            for r in &refreshed {
                println!("{}", r.line());
            }
            println!();
        }
    }
    let failed = refreshed.iter().any(|r| r.outcome == "failed");
    let snap = catalog.snapshot();
    if let Some(name) = &args.resolve {
        return match routes.resolve(name, &snap) {
            Ok(targets) => {
                let refs: Vec<String> = targets.iter().map(Target::reference).collect();
                if args.json {
                    println!("{}", serde_json::json!({ "name": name, "targets": refs }));
                } else {
                    for r in refs {
                        println!("{r}");
                    }
                }
                Ok(0)
            }
            Err(d) => {
                report(
                    &d.with_surface(smith_diag::Surface::flag("--resolve")),
                    args.json,
                    style,
                );
                Ok(1)
            }
        };
    }
    for problem in routes.check(&snap) {
        eprint!(
            "{}",
            problem
                .with_severity(smith_diag::Severity::Warning)
                .render_terminal(style)
        );
    }
    let entries: Vec<&Entry> = match &args.provider {
        None => snap.entries.iter().collect(),
        Some(p) => {
            let e: Vec<&Entry> = snap.provider(p).collect();
            if e.is_empty() {
                report(&unknown_provider(p, &snap), args.json, style);
                return Ok(1);
            }
            e
        }
    };
    let conflicts: Vec<_> = snap
        .conflicts
        .iter()
        .filter(|c| {
            args.provider
                .as_ref()
                .is_none_or(|p| c.model.starts_with(&format!("{p}/")))
        })
        .collect();
    let code = u8::from(failed);
    if args.json {
        let runtime: BTreeMap<&String, serde_json::Value> = snap
            .runtime
            .iter()
            .filter(|(p, _)| args.provider.as_ref().is_none_or(|want| want == *p))
            .map(|(p, r)| {
                (
                    p,
                    serde_json::json!({
                        "source": r.source,
                        "refreshed_at": r.refreshed_at,
                        "refreshed_at_utc": r.refreshed_at.map(utc),
                        "models": r.models,
                    }),
                )
            })
            .collect();
        let mut out = serde_json::json!({
            "generation": snap.generation,
            "models": entries,
            "conflicts": conflicts,
            "runtime": runtime,
        });
        if args.refresh {
            out["refresh"] = refreshed.iter().map(Refreshed::to_json).collect();
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(code);
    }
    print_table(&entries);
    if args.sources || args.refresh {
        println!();
        print_sources(&snap, &entries, args.provider.as_deref());
    }
    if !conflicts.is_empty() {
        eprintln!();
        for c in conflicts {
            eprint!("{}", c.diagnostic().render_terminal(style));
        }
    }
    Ok(code)
}

/// Where each value came from: per provider with runtime data, its source
/// and time, then per model each field's source.
fn print_sources(snap: &Snapshot, entries: &[&Entry], only: Option<&str>) {
    for (provider, r) in &snap.runtime {
        if only.is_some_and(|p| p != provider.as_str()) {
            continue;
        }
        let when = r.refreshed_at.map_or_else(
            || "at an unknown time".to_owned(),
            |t| format!("at {}", utc(t)),
        );
        let what = match r.source {
            Source::Refresh => "refreshed in this run",
            _ => "from the catalog cache, refreshed",
        };
        println!("{provider}: {} models {what} {when}", r.models);
    }
    for e in entries {
        let sources: Vec<String> = e
            .provenance
            .iter()
            .map(|(f, s)| format!("{f}={}", source_label(snap, &e.model.provider, s)))
            .collect();
        println!("{}: {}", e.model.reference(), sources.join(" "));
    }
}

/// `user`, `bundled`, or `refresh@TIME` / `cache@TIME` for runtime data.
fn source_label(snap: &Snapshot, provider: &str, source: &Source) -> String {
    match source {
        Source::Refresh | Source::Cache => {
            match snap.runtime.get(provider).and_then(|r| r.refreshed_at) {
                Some(t) => format!("{}@{}", source.as_str(), utc_compact(t)),
                None => source.as_str().to_owned(),
            }
        }
        _ => source.as_str().to_owned(),
    }
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(secs);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02} UTC")
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_compact(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(secs);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// The proleptic Gregorian date and time of a Unix time (days-from-civil
/// inverted, after H. Hinnant).
fn civil(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// One provider's refresh result, for the report.
#[derive(Debug)]
struct Refreshed {
    provider: String,
    /// `published`, `failed`, `skipped`, `stale` or `cancelled`.
    outcome: &'static str,
    /// Published: how many models.
    models: Option<usize>,
    /// Failed or skipped: why (or, when published, why the cache was not
    /// written).
    message: Option<String>,
}

impl Refreshed {
    fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "provider": self.provider,
            "outcome": self.outcome,
        });
        if let Some(n) = self.models {
            v["models"] = n.into();
        }
        if let Some(m) = &self.message {
            v["message"] = m.clone().into();
        }
        v
    }

    fn line(&self) -> String {
        match (self.outcome, self.models, &self.message) {
            ("published", Some(n), None) => format!("{}: published {n} models", self.provider),
            ("published", Some(n), Some(why)) => format!(
                "{}: published {n} models (not cached: {why})",
                self.provider
            ),
            (outcome, _, Some(why)) => format!("{}: {outcome}: {why}", self.provider),
            (outcome, _, None) => format!("{}: {outcome}", self.provider),
        }
    }
}

/// Base URLs by provider id from the providers' base URL variables.
fn base_urls_from_env() -> BTreeMap<String, String> {
    Vendor::ALL
        .into_iter()
        .filter_map(|v| {
            let url = std::env::var(v.base_url_env()).ok()?;
            (!url.is_empty()).then(|| (v.id().to_owned(), url))
        })
        .collect()
}

/// What a refresh runs with: the plan, the transport, the plugin setup and
/// the cache directory.
struct RefreshSetup {
    plans: Vec<Plan>,
    transport: Arc<NetTransport>,
    plugins: PluginSetup,
    cache_dir: std::path::PathBuf,
}

fn refresh_setup(vendors: &[Vendor]) -> Result<RefreshSetup, Diagnostic> {
    let paths = Paths::from_process().map_err(|e| e.into_diagnostic())?;
    let resolver = Arc::new(
        smith_auth::Resolver::new(smith_provider_host::builtin_slots())
            .store(smith_auth::AuthStore::in_data_dir(&paths.data_dir)),
    );
    let config = crate::settings::config().ok();
    let timeouts = config
        .map(crate::settings::net_timeouts)
        .unwrap_or_default();
    let limits = config.map_or_else(
        smith_plugins::Limits::default,
        crate::settings::plugin_limits,
    );
    let transport = NetTransport::from_env(Arc::clone(&resolver), timeouts).map_err(|e| {
        Diagnostic::error(
            "catalog.refresh-net",
            "could not set up the HTTP engine for the catalog refresh",
            e,
            "fix the proxy variable it names, or unset it",
        )
    })?;
    let disabled = super::plugin::disabled(&paths);
    let plans = smith_provider_host::refresh::plan(vendors, &base_urls_from_env(), &resolver)
        .into_iter()
        .map(|plan| match plan {
            Plan::Ask(t) if disabled.iter().any(|d| d == t.vendor.plugin()) => Plan::Skip(
                t.vendor,
                format!(
                    "its plugin {} is disabled (`smith plugin enable {}`)",
                    t.vendor.plugin(),
                    t.vendor.plugin()
                ),
            ),
            other => other,
        })
        .collect();
    Ok(RefreshSetup {
        plans,
        transport: Arc::new(transport),
        plugins: PluginSetup {
            cache_dir: Some(paths.cache_dir.clone()),
            limits,
        },
        cache_dir: paths.cache_dir.join("catalog"),
    })
}

/// Refreshes the providers of `setup` in parallel, waits for all, and
/// saves what was published to the cache.
fn run_refresh(catalog: &Catalog, setup: RefreshSetup) -> Vec<Refreshed> {
    let mut running = Vec::new();
    let mut out = Vec::new();
    for plan in setup.plans {
        match plan {
            Plan::Ask(target) => {
                let provider = target.vendor.id().to_owned();
                let handle = smith_provider_host::refresh::spawn(
                    catalog,
                    target,
                    Arc::clone(&setup.transport),
                    setup.plugins.clone(),
                );
                running.push((provider, handle));
            }
            Plan::Skip(vendor, why) => out.push(Refreshed {
                provider: vendor.id().to_owned(),
                outcome: "skipped",
                models: None,
                message: Some(why),
            }),
        }
    }
    for (provider, handle) in running {
        let (outcome, models, message) = match handle.join() {
            RefreshOutcome::Published(_) => {
                let count = catalog.runtime_models(&provider).map(|(_, m)| m.len());
                let saved = smith_catalog::cache::save(catalog, &setup.cache_dir, &provider);
                match saved {
                    Ok(_) => ("published", count, None),
                    Err(d) => ("published", count, Some(one_line(&d))),
                }
            }
            RefreshOutcome::Failed(d) => ("failed", None, Some(one_line(&d))),
            RefreshOutcome::Stale { newer, .. } => (
                "stale",
                None,
                Some(format!(
                    "newer data (generation {newer}) was published while it ran; the newer data stays"
                )),
            ),
            RefreshOutcome::Cancelled => ("cancelled", None, None),
        };
        out.push(Refreshed {
            provider,
            outcome,
            models,
            message,
        });
    }
    let order = |p: &str| Vendor::ALL.iter().position(|v| v.id() == p);
    out.sort_by_key(|r| order(&r.provider));
    out
}

fn one_line(d: &Diagnostic) -> String {
    smith_provider_host::diagnostic_message(d)
}

/// `smith models --refresh [--provider P]`.
fn refresh_now(catalog: &Catalog, provider: Option<&str>) -> Result<Vec<Refreshed>, Diagnostic> {
    let vendors: Vec<Vendor> = match provider {
        None => Vendor::ALL.to_vec(),
        Some("mock") => {
            return Ok(vec![Refreshed {
                provider: "mock".to_owned(),
                outcome: "skipped",
                models: None,
                message: Some(
                    "the offline scripted provider has no model listing; its model is built in"
                        .to_owned(),
                ),
            }]);
        }
        Some(p) => vec![Vendor::from_id(p).ok_or_else(|| {
            Diagnostic::error(
                "catalog.unknown-provider",
                format!("provider `{p}` cannot be refreshed"),
                format!("the providers with model lists are {}", Vendor::ids()),
                "pick one of those with --provider, or leave it out to refresh them all",
            )
            .with_value(p)
            .with_surface(smith_diag::Surface::flag("--provider"))
        })?],
    };
    Ok(run_refresh(catalog, refresh_setup(&vendors)?))
}

/// Whether `catalog.refresh` asks for a background refresh.
pub(crate) fn background_refresh(config: &smith_config::Config) -> bool {
    config.str(&smith_config::options::CATALOG_REFRESH) == Some("background")
}

static BACKGROUND: Once = Once::new();

/// With `catalog.refresh = "background"`, starts refreshing every provider
/// that can be asked on a thread of its own (once per process) and returns
/// at once: startup never waits for it. What it publishes is saved to the
/// catalog cache, which later runs read without network; problems go to
/// the log, not the terminal.
pub(crate) fn start_background_refresh() {
    let Ok(config) = crate::settings::config() else {
        return;
    };
    if !background_refresh(config) {
        return;
    }
    BACKGROUND.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("smith-catalog-refresh".into())
            .spawn(|| {
                let catalog = match load_quiet() {
                    Ok(c) => c,
                    Err(d) => {
                        smith_diag::log::report(&d.with_severity(smith_diag::Severity::Warning));
                        return;
                    }
                };
                let setup = match refresh_setup(&Vendor::ALL) {
                    Ok(s) => s,
                    Err(d) => {
                        smith_diag::log::report(&d.with_severity(smith_diag::Severity::Warning));
                        return;
                    }
                };
                for r in run_refresh(&catalog, setup) {
                    smith_diag::log::note(
                        smith_diag::log::Level::Info,
                        "catalog.refresh",
                        &r.line(),
                    );
                }
            });
        if let Err(e) = spawned {
            smith_diag::log::note(
                smith_diag::log::Level::Warn,
                "catalog.refresh",
                &format!("the background catalog refresh could not start: {e}"),
            );
        }
    });
}

/// The catalog as [`load`] builds it, with damaged cache files reported to
/// the log instead of the terminal.
fn load_quiet() -> Result<Catalog, Diagnostic> {
    let catalog = Catalog::new(bundled()?);
    let paths = Paths::from_process().map_err(|e| e.into_diagnostic())?;
    let user = paths.config_dir.join(USER_FILE);
    if let Some(text) = read_optional(&user)? {
        let (models, _) = parse_user_file(&text, &user)?;
        catalog.set_user(models);
    }
    for warning in smith_catalog::cache::load_dir(&catalog, &paths.cache_dir.join("catalog")) {
        smith_diag::log::report(&warning);
    }
    Ok(catalog)
}

pub(crate) fn load() -> Result<(Catalog, Routes), Diagnostic> {
    let catalog = Catalog::new(bundled()?);
    let paths = Paths::from_process().map_err(|e| e.into_diagnostic())?;
    let user = paths.config_dir.join(USER_FILE);
    let mut routes = Routes::new();
    if let Some(text) = read_optional(&user)? {
        let (models, r) = parse_user_file(&text, &user)?;
        catalog.set_user(models);
        routes = r;
    }
    for warning in smith_catalog::cache::load_dir(&catalog, &paths.cache_dir.join("catalog")) {
        eprint!("{}", warning.render_terminal(style(None)));
    }
    Ok((catalog, routes))
}

fn read_optional(path: &Path) -> Result<Option<String>, Diagnostic> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Diagnostic::error(
            "catalog.read",
            format!("could not read {}", path.display()),
            format!("the system reported: {e}"),
            "fix the file's permissions or move it aside",
        )
        .with_surface(smith_diag::Surface::file(path))),
    }
}

fn unknown_provider(p: &str, snap: &Snapshot) -> Diagnostic {
    let mut known: Vec<&str> = snap
        .entries
        .iter()
        .map(|e| e.model.provider.as_str())
        .collect();
    known.dedup();
    Diagnostic::error(
        "catalog.unknown-provider",
        format!("the catalog lists no models of provider `{p}`"),
        format!("the providers listed are: {}", known.join(", ")),
        "pick one of those, or add the provider's models to your models.kdl",
    )
    .with_value(p)
    .with_surface(smith_diag::Surface::flag("--provider"))
}

fn print_table(entries: &[&Entry]) {
    fn q<T: ToString>(v: Option<T>) -> String {
        v.map_or_else(|| "?".to_owned(), |v| v.to_string())
    }
    let rows: Vec<[String; 8]> = entries
        .iter()
        .map(|e| {
            let m = &e.model;
            let input = match (m.text_input, m.image_input) {
                (None, None) => "?".to_owned(),
                (t, i) => [(t, "text"), (i, "image")]
                    .iter()
                    .filter(|(v, _)| *v == Some(true))
                    .map(|(_, n)| *n)
                    .collect::<Vec<_>>()
                    .join("+"),
            };
            let p = &m.pricing;
            [
                m.reference(),
                q(m.context),
                q(m.max_output),
                input,
                q(m.tools.map(|t| if t { "yes" } else { "no" })),
                q(smith_catalog::Field::Thinking.render(m)),
                q(m.cache.map(|c| c.to_string())),
                format!(
                    "{}/{} r{} w{}",
                    q(p.input),
                    q(p.output),
                    q(p.cache_read),
                    q(p.cache_write)
                ),
            ]
        })
        .collect();
    let head = [
        "MODEL",
        "CONTEXT",
        "OUTPUT",
        "INPUT",
        "TOOLS",
        "THINKING",
        "CACHE",
        "$/MTOK IN/OUT",
    ];
    let mut widths = head.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(head.to_vec());
    for r in &rows {
        line(r.iter().map(String::as_str).collect());
    }
}
