//! Provider selection: which provider and model a runtime talks to, and the
//! transport its requests go through.

use std::sync::Arc;

use anyhow::bail;
use smith_engine::provider::{HostTransport, Provider};
use smith_provider_host::{LiveProvider, NetTransport, Selection, Setup, Vendor};

use crate::runtime::Live;

/// The provider and transport a run uses, chosen in the order of
/// [`smith_provider_host::select`]: `--provider`, `SMITH_PROVIDER`, the
/// first provider with a credential, the offline scripted provider.
#[derive(Debug)]
pub struct Chosen {
    /// The provider, its transport (the HTTP engine for live providers) and
    /// the model name requests carry.
    pub live: Live,
    /// A line for standard error saying what was chosen and why.
    pub note: Option<String>,
}

/// Chooses the provider from `provider` (`--provider`), `model` and
/// `base_url`; `mock` builds the scripted provider when that is the choice.
/// Starts the background catalog refresh when it is configured.
///
/// # Errors
///
/// An unknown or unusable provider or model, a base URL for the scripted
/// provider, a disabled provider plugin, or an HTTP engine that cannot be
/// set up; each says what to do next.
pub fn choose_provider(
    provider: Option<&str>,
    model: Option<&str>,
    base_url: Option<&str>,
    mock: impl FnOnce() -> anyhow::Result<Box<dyn Provider>>,
) -> anyhow::Result<Chosen> {
    crate::catalog::start_background_refresh();
    let failed = <anyhow::Error as From<smith_diag::Diagnostic>>::from;
    let paths = smith_config::Paths::from_process().map_err(|e| failed(e.into_diagnostic()))?;
    let resolver = Arc::new(
        smith_auth::Resolver::new(smith_provider_host::builtin_slots())
            .store(smith_auth::AuthStore::in_data_dir(&paths.data_dir)),
    );
    // The `provider` and `model` options (SMITH_PROVIDER / SMITH_MODEL,
    // config.kdl) apply when a source other than their defaults sets them.
    let config = match crate::settings::config() {
        Ok(config) => Some(config),
        Err(e) => {
            let d = e.into_diagnostic();
            eprintln!(
                "smith: warning: configuration not applied to provider selection: {}",
                smith_provider_host::diagnostic_message(&d)
            );
            smith_diag::log::report(&d.with_severity(smith_diag::Severity::Warning));
            None
        }
    };
    let configured = |decl: &smith_config::options::OptionDecl| -> Option<(String, String)> {
        let config = config.as_ref()?;
        let source = config.source(decl)?;
        if source.level() == smith_config::Level::Default {
            return None;
        }
        Some((config.str(decl)?.to_owned(), source.to_string()))
    };
    let configured_provider = configured(&smith_config::options::PROVIDER);
    let configured_model = configured(&smith_config::options::MODEL).map(|(m, _)| m);
    let model = model.or(configured_model.as_deref());
    let (selection, why) = smith_provider_host::select(
        provider,
        configured_provider
            .as_ref()
            .map(|(v, s)| (v.as_str(), s.as_str())),
        &|name| std::env::var(name).ok(),
        &resolver,
    )
    .map_err(failed)?;
    let vendor = match selection {
        Selection::Mock => {
            if base_url.is_some() {
                bail!(
                    "--base-url was given but the provider is mock (the offline scripted provider), which sends nothing; choose a provider with --provider, e.g. --provider openai-compatible --base-url URL"
                );
            }
            return Ok(Chosen {
                live: Live {
                    provider: mock()?,
                    transport: Arc::new(HostTransport),
                    model: None,
                },
                note: None,
            });
        }
        Selection::Live(vendor) => vendor,
    };
    let (catalog, routes) = crate::catalog::load().map_err(failed)?;
    let mut base_urls = std::collections::BTreeMap::new();
    for v in Vendor::ALL {
        if let Some(url) = std::env::var(v.base_url_env())
            .ok()
            .filter(|u| !u.is_empty())
        {
            base_urls.insert(v.id().to_owned(), url);
        }
    }
    if let Some(url) = base_url {
        base_urls.insert(vendor.id().to_owned(), url.to_owned());
    }
    let setup = Setup {
        snapshot: catalog.snapshot(),
        routes,
        resolver: resolver.clone(),
        base_urls,
        policy: smith_catalog::failover::Policy::default(),
        thinking: None,
    };
    // A provider the user named (`--provider`, or the `provider` option
    // from a source other than its default) is never replaced by a model
    // name: see `LiveProvider::pinned`.
    let named = provider.is_some()
        || configured_provider
            .as_ref()
            .is_some_and(|(v, _)| !v.is_empty());
    let live = if named {
        LiveProvider::pinned(setup, vendor, model)
    } else {
        LiveProvider::new(setup, Some(vendor), model)
    };
    let live = live.map_err(failed)?.with_plugins(
        Some(paths.cache_dir.clone()),
        smith_provider_host::provider_plugin_limits(config.map_or_else(
            smith_plugins::Limits::default,
            crate::settings::plugin_limits,
        )),
    );
    // Each target runs in its vendor's built-in provider plugin: a plugin
    // the user disabled is not used behind their back.
    let disabled = crate::plugins::disabled(&paths);
    for target in live.targets() {
        let vendor_id = target.split('/').next().unwrap_or(&target);
        let plugin = format!("smith/{vendor_id}");
        if disabled.contains(&plugin) {
            bail!(
                "the provider plugin {plugin} is disabled, and the request would go through it (target {target}); run `smith plugin enable {plugin}` or choose another provider with --provider"
            );
        }
    }
    // --base-url is the chosen provider's server: a model that routes to
    // another provider would send its requests to a host the user did not
    // choose, with that provider's credential.
    if base_url.is_some() {
        let elsewhere: Vec<String> = live
            .targets()
            .into_iter()
            .filter(|t| t.split('/').next() != Some(vendor.id()))
            .collect();
        if let Some(first) = elsewhere.first() {
            let other = first.split('/').next().unwrap_or(first);
            bail!(
                "--base-url was given for provider {} ({why}), but the model routes to {}, so the URL would not be used and requests would go to {other}'s own server; to send this model to that URL pass --provider {other}, or drop --base-url",
                vendor.id(),
                elsewhere.join(", "),
            );
        }
    }
    // The net.* timeouts; their defaults when the configuration did not load
    // (that was reported above).
    let timeouts = config
        .map(crate::settings::net_timeouts)
        .unwrap_or_default();
    let transport = NetTransport::from_env(resolver, timeouts)
        .map_err(|e| anyhow::anyhow!("could not set up the HTTP engine: {e}"))?;
    let credential = live
        .credential_origin()
        .map_or_else(String::new, |origin| format!("; credential from {origin}"));
    let mut note = format!(
        "smith: provider {} ({why}), model {}{credential}",
        vendor.id(),
        live.targets().join(" -> "),
    );
    for assumed in live.assumptions() {
        note.push_str(&format!("\nsmith: notice: {assumed}"));
    }
    Ok(Chosen {
        live: Live {
            model: Some(live.model_name().to_owned()),
            provider: Box::new(live),
            transport: Arc::new(transport),
        },
        note: Some(note),
    })
}
