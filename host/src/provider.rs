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
    match choose(provider, model, base_url)? {
        None => Ok(Chosen {
            live: Live {
                provider: mock()?,
                transport: Arc::new(HostTransport),
                model: None,
            },
            note: None,
        }),
        Some(chosen) => Ok(Chosen {
            live: Live {
                model: Some(chosen.provider.model_name().to_owned()),
                provider: Box::new(chosen.provider),
                transport: Arc::new(chosen.transport),
            },
            note: Some(chosen.note),
        }),
    }
}

/// A live provider as [`choose_live`] chose it.
#[derive(Debug)]
pub struct LiveChoice {
    /// The provider (its targets resolved, credentials checked).
    pub provider: LiveProvider,
    /// The HTTP engine its requests go through.
    pub transport: NetTransport,
    /// The provider that was chosen.
    pub vendor: Vendor,
    /// The lines for standard error saying what was chosen and why.
    pub note: String,
}

/// Chooses a live provider exactly as [`choose_provider`] does, for a
/// command that talks to a provider itself (`smith auth check --live`).
///
/// # Errors
///
/// As [`choose_provider`], and when the choice is the offline scripted
/// provider.
pub fn choose_live(
    provider: Option<&str>,
    model: Option<&str>,
    base_url: Option<&str>,
) -> anyhow::Result<LiveChoice> {
    match choose(provider, model, base_url)? {
        Some(chosen) => Ok(chosen),
        None => bail!(
            "the provider is mock (the offline scripted provider), which sends no request, so there is nothing to check live; name a live provider, e.g. smith auth check anthropic --live"
        ),
    }
}

/// The choice: `None` for the scripted provider.
fn choose(
    provider: Option<&str>,
    model: Option<&str>,
    base_url: Option<&str>,
) -> anyhow::Result<Option<LiveChoice>> {
    let failed = <anyhow::Error as From<smith_diag::Diagnostic>>::from;
    let paths = smith_config::Paths::from_process().map_err(|e| failed(e.into_diagnostic()))?;
    let resolver = Arc::new(
        smith_auth::Resolver::new(smith_provider_host::builtin_slots())
            .store(smith_auth::AuthStore::in_data_dir(&paths.data_dir)),
    );
    // The `provider` and `model` options (SMITH_PROVIDER / SMITH_MODEL,
    // config.kdl) apply when a source other than their defaults sets them.
    let loaded = crate::settings::config();
    let config = match &loaded {
        Ok(config) => Some(*config),
        Err(e) => {
            let d = e.clone().into_diagnostic();
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
            return Ok(None);
        }
        Selection::Live(vendor) => vendor,
    };
    // Which API `openai` speaks comes from the configuration: without it,
    // a request could go out in the dialect the user turned away from.
    if vendor == Vendor::OpenAi
        && let Err(e) = &loaded
    {
        return Err(failed(e.clone().into_diagnostic()));
    }
    let (catalog, routes) = crate::catalog::load().map_err(failed)?;
    let mut base_urls = std::collections::BTreeMap::new();
    for v in Vendor::ALL {
        if let Some(url) = v.base_url_from_env(&|name| std::env::var(name).ok()) {
            base_urls.insert(v.id().to_owned(), url);
        }
    }
    if let Some(url) = base_url {
        base_urls.insert(vendor.id().to_owned(), url.to_owned());
    }
    // The `openai.api` option (SMITH_OPENAI_API, config.kdl): Chat
    // Completions instead of the Responses API for `openai`.
    let mut plugin_settings = std::collections::BTreeMap::new();
    let openai_api = configured(&smith_config::options::OPENAI_API);
    if let Some((api, _)) = &openai_api {
        plugin_settings.insert(
            Vendor::OpenAi.id().to_owned(),
            vec![("api".to_owned(), api.clone())],
        );
    }
    // The net.* timeouts; their defaults when the configuration did not load
    // (that was reported above).
    let timeouts = config
        .map(crate::settings::net_timeouts)
        .unwrap_or_default();
    let transport = NetTransport::from_env(resolver.clone(), timeouts)
        .map_err(|e| anyhow::anyhow!("could not set up the HTTP engine: {e}"))?;
    let limits = smith_provider_host::provider_plugin_limits(config.map_or_else(
        smith_plugins::Limits::default,
        crate::settings::plugin_limits,
    ));
    // A local server without --model: the server says what it serves.
    let mut notices = Vec::new();
    let asked;
    let model = match model {
        None if vendor.is_local() => {
            let url = base_urls.get(vendor.id()).map_or(
                vendor.default_base_url().unwrap_or_default(),
                String::as_str,
            );
            let (picked, notice) =
                model_from_server(vendor, url, &transport, &paths.cache_dir, limits)?;
            notices.push(notice);
            asked = picked;
            Some(asked.as_str())
        }
        other => other,
    };
    // What earlier runs learned about models no catalog describes: a
    // damaged file is only a cache, skipped with a warning.
    let (learned, damaged) = smith_provider_host::learned::Learned::open(&paths.cache_dir);
    if let Some(warning) = damaged {
        smith_diag::log::report(&warning);
        notices.push(smith_provider_host::diagnostic_message(&warning));
    }
    let setup = Setup {
        snapshot: catalog.snapshot(),
        routes,
        resolver: resolver.clone(),
        base_urls,
        policy: smith_catalog::failover::Policy::default(),
        thinking: None,
        plugin_settings,
        learned: Some(std::sync::Arc::new(learned)),
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
    let live = live
        .map_err(failed)?
        .with_plugins(Some(paths.cache_dir.clone()), limits);
    // Each target runs in its vendor's built-in provider plugin: a plugin
    // the user disabled is not used behind their back.
    let disabled = crate::plugins::disabled(&paths);
    for target in live.targets() {
        let vendor_id = target.split('/').next().unwrap_or(&target);
        let plugin = Vendor::from_id(vendor_id)
            .map_or_else(|| format!("smith/{vendor_id}"), |v| v.plugin().to_owned());
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
    let credential = live
        .credential_origin()
        .map_or_else(String::new, |origin| format!("; credential from {origin}"));
    let api = match &openai_api {
        Some((api, source))
            if live
                .targets()
                .iter()
                .any(|t| t.starts_with(&format!("{}/", Vendor::OpenAi.id()))) =>
        {
            let name = if api == "chat" {
                "Chat Completions"
            } else {
                "the Responses API"
            };
            format!("; openai through {name} (openai.api = {api}, from {source})")
        }
        _ => String::new(),
    };
    let mut note = format!(
        "smith: provider {} ({why}), model {}{credential}{api}",
        vendor.id(),
        live.targets().join(" -> "),
    );
    for notice in notices {
        note.push_str(&format!("\nsmith: notice: {notice}"));
    }
    for assumed in live.assumptions() {
        note.push_str(&format!("\nsmith: notice: {assumed}"));
    }
    Ok(Some(LiveChoice {
        provider: live,
        transport,
        vendor,
        note,
    }))
}

/// The model to ask a local server for when none was given: its only
/// model (and a notice saying so). Several models, none, or a server that
/// does not answer are diagnostics saying what to do.
fn model_from_server(
    vendor: Vendor,
    url: &str,
    transport: &NetTransport,
    cache_dir: &std::path::Path,
    limits: smith_plugins::Limits,
) -> anyhow::Result<(String, String)> {
    let id = vendor.id();
    let env = vendor.base_url_env();
    let target = smith_provider_host::refresh::RefreshTarget::at(vendor, url);
    let plugins = smith_provider_host::refresh::PluginSetup {
        cache_dir: Some(cache_dir.to_owned()),
        limits,
    };
    let listed = smith_provider_host::refresh::fetch(
        &target,
        transport,
        &plugins,
        &smith_catalog::CancelToken::new(),
    );
    let models = match listed {
        Ok(models) => models,
        Err(d) => {
            return Err(smith_diag::Diagnostic::error(
                "provider.local-unreachable",
                format!(
                    "no model was given for provider `{id}`, and the {id} server at {url} did not say which models it serves"
                ),
                d.why().to_owned(),
                format!(
                    "is the server running? {}; or point smith at the address it listens on with --base-url URL or {env}; or name the model with --model",
                    vendor.start_hint().unwrap_or("start it")
                ),
            )
            .with_value(url)
            .into());
        }
    };
    let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
    match ids.as_slice() {
        [] => Err(smith_diag::Diagnostic::error(
            "provider.model-required",
            format!("no model was given for provider `{id}`, and the {id} server at {url} serves no models"),
            format!("GET {url}/models listed none"),
            match vendor {
                Vendor::Ollama => "fetch one (`ollama pull qwen2.5-coder`), then run again, or name a model with --model".to_owned(),
                _ => "load a model into the server, then run again, or name one with --model".to_owned(),
            },
        )
        .with_value(url)
        .into()),
        [only] => Ok((
            (*only).to_owned(),
            format!("model `{only}` chosen: it is the only model the {id} server at {url} serves (name another with --model)"),
        )),
        several => Err(smith_diag::Diagnostic::error(
            "provider.model-required",
            format!("no model was given for provider `{id}`"),
            format!(
                "the {id} server at {url} serves {} models, so smith cannot tell which one is meant: {}",
                several.len(),
                several.join(", ")
            ),
            format!("name one with --model, e.g. --model {}", several[0]),
        )
        .with_value(url)
        .into()),
    }
}
