//! The model catalog as a runtime sees it: the reviewed bundled catalog,
//! the user's `models.kdl` in the configuration directory (which always
//! wins) and provider data cached by earlier refreshes ([`load`]), and the
//! refreshes that ask providers for their model lists ([`refresh_now`], and
//! [`start_background_refresh`], the `catalog.refresh = "background"`
//! option: the commands that run the agent call it, it returns at once,
//! and the refresh it starts only writes the cache for later runs).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Once};

use smith_catalog::{Catalog, RefreshOutcome, Routes, Snapshot, Source, bundled, parse_user_file};
use smith_config::Paths;
use smith_diag::Diagnostic;
use smith_provider_host::refresh::{Plan, PluginSetup};
use smith_provider_host::{NetTransport, Vendor};

/// The user's own model entries, next to `config.kdl`.
pub const USER_FILE: &str = "models.kdl";

/// One provider's refresh result, for the report.
#[derive(Debug)]
pub struct Refreshed {
    /// The provider.
    pub provider: String,
    /// `published`, `failed`, `skipped`, `stale` or `cancelled`.
    pub outcome: &'static str,
    /// Published: how many models.
    pub models: Option<usize>,
    /// Failed or skipped: why (or, when published, why the cache was not
    /// written).
    pub message: Option<String>,
}

impl Refreshed {
    /// The result as a JSON object (`smith models --refresh --json`).
    pub fn to_json(&self) -> serde_json::Value {
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

    /// The result as one line of text.
    pub fn line(&self) -> String {
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
            let url = v.base_url_from_env(&|name| std::env::var(name).ok())?;
            Some((v.id().to_owned(), url))
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

/// `named` is the provider `--provider` named, if any: a local server named
/// there is asked at its preset address when no variable gives another.
fn refresh_setup(vendors: &[Vendor], named: Option<Vendor>) -> Result<RefreshSetup, Diagnostic> {
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
    let disabled = crate::plugins::disabled(&paths);
    let mut base_urls = base_urls_from_env();
    if let Some(v) = named.filter(|v| v.is_local())
        && let Some(url) = v.default_base_url()
    {
        base_urls
            .entry(v.id().to_owned())
            .or_insert_with(|| url.to_owned());
    }
    let plans = smith_provider_host::refresh::plan(vendors, &base_urls, &resolver)
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

/// Refreshes `provider`'s model list (every provider's without one) and
/// waits: what `smith models --refresh [--provider P]` does.
///
/// # Errors
///
/// An unknown provider, or a refresh that cannot be set up.
pub fn refresh_now(
    catalog: &Catalog,
    provider: Option<&str>,
) -> Result<Vec<Refreshed>, Diagnostic> {
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
    let named = provider.and(vendors.first().copied());
    Ok(run_refresh(catalog, refresh_setup(&vendors, named)?))
}

/// Whether `catalog.refresh` asks for a background refresh.
pub fn background_refresh(config: &smith_config::Config) -> bool {
    config.str(&smith_config::options::CATALOG_REFRESH) == Some("background")
}

static BACKGROUND: Once = Once::new();

/// With `catalog.refresh = "background"`, starts refreshing every provider
/// that can be asked on a thread of its own (once per process) and returns
/// at once: startup never waits for it. What it publishes is saved to the
/// catalog cache, which later runs read without network; problems go to
/// the log, not the terminal.
pub fn start_background_refresh() {
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
                let setup = match refresh_setup(&Vendor::ALL, None) {
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

/// The catalog (bundled, the user's `models.kdl`, the refresh cache) and
/// the user's routes; damaged cache files are reported on standard error.
///
/// # Errors
///
/// An unreadable or invalid `models.kdl`, or no smith directories.
pub fn load() -> Result<(Catalog, Routes), Diagnostic> {
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
        eprint!("{}", warning.render_terminal(crate::output::style(None)));
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

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(secs);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02} UTC")
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_compact(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(secs);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// The proleptic Gregorian date and time of a Unix time (days-from-civil
/// inverted, after H. Hinnant).
fn civil(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let rem = secs % 86_400;
    let (y, m, d) = smith_diag::log::civil_from_days(secs / 86_400);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `user`, `bundled`, or `refresh@TIME` / `cache@TIME` for runtime data.
pub fn source_label(snap: &Snapshot, provider: &str, source: &Source) -> String {
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
