//! [`LiveProvider`]: the engine's provider contract over the catalog, the
//! credential resolver and the built-in vendor provider plugins.
//!
//! For each request it takes the current target of the resolved route,
//! gates the request against the target model's advertised capabilities
//! (failing before dispatch with a diagnostic naming the unsupported
//! feature), checks the credential resolves, and has the target's vendor
//! plugin (smith/anthropic, smith/openai, smith/google,
//! smith/openai-compatible) encode the request into an HTTP exchange whose
//! credentials are opaque handles. The body is decoded by the same plugin
//! instance. Each prepared target has its own plugin instance, configured
//! with the target's settings ([`smith_providers::Config::settings`]:
//! base URL, credential handle, capabilities, thinking level), created on
//! the target's first request and reused after. A plugin failure (trap,
//! deadline, memory limit) is a transport or malformed-stream error naming
//! the plugin, which failover treats as transient; the next request starts
//! a fresh instance. When a response fails before any content arrived,
//! [`Provider::recover`] applies the failover policy: rate limits fail over
//! at once, transient failures retry with backoff and then fail over,
//! invalid requests give up.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use smith_auth::Resolver;
use smith_catalog::failover::{Decision, Failure, Policy};
use smith_catalog::{ModelInfo as CatalogModel, RequestNeeds, Routes, Snapshot, Target};
use smith_diag::Diagnostic;
use smith_engine::provider::{
    Exchange, Interrupt, MediaSupport, ModelInfo, Pricing, Provider, ProviderError,
    ProviderErrorKind, ProviderInfo, Request, StreamEvent,
};
use smith_plugins::{AbortHandle, InstantiateError, Limits, WasmProvider};
use smith_providers::{Capabilities, Config};

use crate::learned::{Fact, Learned};
use crate::vendor::Vendor;

/// One line of a diagnostic for an error message: what, why, next.
pub fn diagnostic_message(d: &Diagnostic) -> String {
    let mut text = format!("{}: {}; {}", d.what(), d.why(), d.next());
    if let Some(example) = d.example() {
        text.push_str(&format!(" (for example: {})", example.trim()));
    }
    smith_diag::secrets::redact(&text).into_owned()
}

/// Everything a live provider resolves against.
#[derive(Clone)]
pub struct Setup {
    /// The catalog snapshot (capabilities, prices).
    pub snapshot: Arc<Snapshot>,
    /// Aliases, groups and buckets.
    pub routes: Routes,
    /// The credential resolver (also used by the transport).
    pub resolver: Arc<Resolver>,
    /// Base URLs by provider id: explicit overrides first, then the
    /// providers' base URL variables.
    pub base_urls: BTreeMap<String, String>,
    /// Retry and failover bounds.
    pub policy: Policy,
    /// The thinking level to ask for (degraded by the gate per request),
    /// shared with the frontend that may change it.
    pub thinking: crate::ThinkingDial,
    /// Plugin settings by provider id beyond those the catalog gives each
    /// target, e.g. `api` = `chat` for `openai` (the `openai.api` option).
    /// Applied after the target's own; the plugin refuses any it does not
    /// take.
    pub plugin_settings: BTreeMap<String, Vec<(String, String)>>,
    /// What earlier runs learned about models no catalog describes
    /// (whether they call tools); `None` learns nothing and keeps nothing.
    pub learned: Option<Arc<Learned>>,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("base_urls", &self.base_urls)
            .field("policy", &self.policy)
            .field("plugin_settings", &self.plugin_settings)
            .finish_non_exhaustive()
    }
}

/// One target, ready to encode for.
#[derive(Debug)]
struct Prepared {
    target: Target,
    vendor: Vendor,
    model: CatalogModel,
    family: Option<CatalogModel>,
    /// The credential handle (`provider.slot`), or `None` for a server that
    /// takes none.
    credential: Option<String>,
    base_url: Option<String>,
    /// Tool use is assumed, not known: an OpenAI-compatible model the
    /// catalog does not describe (see [`LiveProvider::assumptions`]).
    assumed_tools: bool,
    /// What an earlier run learned about the target's tool use, when the
    /// catalog says nothing and that decides.
    learned: Option<Fact>,
    /// The target's vendor plugin instance and the settings it was
    /// configured with; created on the target's first request.
    plugin: Option<(Vec<(String, String)>, WasmProvider)>,
}

/// A live provider over the built-in vendor adapters.
pub struct LiveProvider {
    setup: Setup,
    default_vendor: Option<Vendor>,
    /// The user chose `default_vendor` explicitly: see [`LiveProvider::pinned`].
    pinned: bool,
    name: String,
    targets: Vec<Prepared>,
    current: usize,
    retries: u32,
    recovering: bool,
    gate_failed: bool,
    /// The request in flight offered tools.
    offered_tools: bool,
    attempts: Vec<String>,
    /// The target whose plugin instance decodes the response in flight.
    decoding: Option<usize>,
    plugin_cache: Option<PathBuf>,
    plugin_limits: Limits,
    /// Abort handles of the live plugin instances, by target, for
    /// [`Provider::interrupter`].
    aborts: Arc<Mutex<BTreeMap<usize, AbortHandle>>>,
    instances: u64,
}

impl std::fmt::Debug for LiveProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveProvider")
            .field("name", &self.name)
            .field(
                "targets",
                &self
                    .targets
                    .iter()
                    .map(|t| t.target.reference())
                    .collect::<Vec<_>>(),
            )
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl LiveProvider {
    /// Resolves `model` (an alias, group, `provider/model` reference or a
    /// model id of `vendor`; `None` for `vendor`'s default model) to its
    /// targets, and checks before any request that each target's provider
    /// is built in and configured (a base URL where one is required) and
    /// that at least one target's credential resolves.
    ///
    /// # Errors
    ///
    /// A diagnostic saying what is missing and how to supply it.
    pub fn new(
        setup: Setup,
        vendor: Option<Vendor>,
        model: Option<&str>,
    ) -> Result<LiveProvider, Diagnostic> {
        Self::build(setup, vendor, model, false)
    }

    /// A provider whose vendor the user chose explicitly (`--provider`, or
    /// the `provider` option): every model name resolves to a target of
    /// `vendor` and never to another provider. A name that starts with
    /// `vendor`'s id and `/` is that reference; an alias or group is
    /// resolved and refused when it reaches another provider; any other
    /// name is the model id at `vendor`, `/` included
    /// (`openai/gpt-oss-120b` on an OpenAI-compatible server is that
    /// server's model `openai/gpt-oss-120b`, not OpenAI's `gpt-oss-120b`).
    /// So no request goes to a provider, or a host, the user did not
    /// choose. Model switches later in the run follow the same rule.
    ///
    /// # Errors
    ///
    /// As [`LiveProvider::new`], and `provider.pinned` when an alias or
    /// group reaches another provider.
    pub fn pinned(
        setup: Setup,
        vendor: Vendor,
        model: Option<&str>,
    ) -> Result<LiveProvider, Diagnostic> {
        Self::build(setup, Some(vendor), model, true)
    }

    fn build(
        setup: Setup,
        vendor: Option<Vendor>,
        model: Option<&str>,
        pinned: bool,
    ) -> Result<LiveProvider, Diagnostic> {
        let name = match (model, vendor) {
            (Some(m), _) => m.to_owned(),
            (None, Some(v)) => match v.default_model() {
                Some(m) => format!("{}/{m}", v.id()),
                None => {
                    return Err(Diagnostic::error(
                        "provider.model-required",
                        format!("no model was given for provider `{}`", v.id()),
                        "an OpenAI-compatible server serves whatever models it hosts, so smith has no default model for it",
                        format!(
                            "name the model with --model, e.g. --model qwen2.5-coder:32b (`smith models --refresh --provider {}` lists what the server serves)",
                            v.id()
                        ),
                    ));
                }
            },
            (None, None) => {
                return Err(Diagnostic::error(
                    "provider.model-required",
                    "no provider and no model were given",
                    "smith cannot tell which model to ask",
                    format!(
                        "pass --provider (one of {}) or --model provider/model",
                        Vendor::ids()
                    ),
                ));
            }
        };
        let mut provider = LiveProvider {
            setup,
            default_vendor: vendor,
            pinned,
            name: String::new(),
            targets: Vec::new(),
            current: 0,
            retries: 0,
            recovering: false,
            gate_failed: false,
            offered_tools: false,
            attempts: Vec::new(),
            decoding: None,
            plugin_cache: None,
            plugin_limits: provider_plugin_limits(Limits::default()),
            aborts: Arc::default(),
            instances: 0,
        };
        provider.retarget(&name)?;
        provider.check_credentials()?;
        Ok(provider)
    }

    /// Where the vendor plugins' compiled components are cached (smith's
    /// cache directory; without one each process compiles them once) and
    /// the deadlines and memory cap their instances run under.
    #[must_use]
    pub fn with_plugins(mut self, cache_dir: Option<PathBuf>, limits: Limits) -> LiveProvider {
        self.plugin_cache = cache_dir;
        self.plugin_limits = limits;
        self
    }

    /// How many vendor plugin instances this provider has created: one per
    /// target on its first request, and one more after a plugin failure
    /// destroyed an instance or the target's settings changed.
    pub fn plugin_instances(&self) -> u64 {
        self.instances
    }

    /// The name requests should carry as their model (what was resolved).
    pub fn model_name(&self) -> &str {
        &self.name
    }

    /// The resolved targets, in failover order, as `provider/model[@bucket]`.
    pub fn targets(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.target.reference()).collect()
    }

    /// The target the next request goes to, and after a response that
    /// succeeded, the target that answered it (`provider/model[@bucket]`).
    pub fn current_target(&self) -> Option<String> {
        self.targets.get(self.current).map(|t| t.target.reference())
    }

    /// What is assumed rather than known about the targets, one sentence
    /// each, for a notice at startup: tool use of OpenAI-compatible models
    /// the catalog does not describe.
    pub fn assumptions(&self) -> Vec<String> {
        self.targets
            .iter()
            .filter(|t| t.assumed_tools)
            .map(|t| assumed_tools_note(&t.target))
            .collect()
    }

    /// Where the credential of the first target comes from (never its
    /// value), for a startup line.
    pub fn credential_origin(&self) -> Option<String> {
        let t = self.targets.first()?;
        let handle = t.credential.as_ref()?;
        let (p, s) = handle.split_once('.')?;
        self.setup
            .resolver
            .resolve(p, s)
            .ok()
            .map(|r| r.origin.to_string())
    }

    fn resolve_name(&self, name: &str) -> Result<Vec<Target>, Diagnostic> {
        let snapshot = &self.setup.snapshot;
        if let (true, Some(vendor)) = (self.pinned, self.default_vendor) {
            return self.resolve_pinned(name, vendor);
        }
        if name.contains('/') {
            return self.setup.routes.resolve(name, snapshot);
        }
        // An alias or group of full references resolves without the
        // catalog; otherwise a bare id belongs to the selected provider.
        if self.is_route(name) {
            return self.setup.routes.resolve(name, snapshot);
        }
        match self.default_vendor {
            Some(v) => self
                .setup
                .routes
                .resolve(&format!("{}/{name}", v.id()), snapshot),
            None => self.setup.routes.resolve(name, snapshot),
        }
    }

    /// Whether `name` is an alias or group (route names never hold `/`)
    /// that resolves without the catalog.
    fn is_route(&self, name: &str) -> bool {
        let empty = Snapshot {
            generation: 0,
            entries: Vec::new(),
            conflicts: Vec::new(),
            runtime: BTreeMap::new(),
        };
        !name.contains('/') && self.setup.routes.resolve(name, &empty).is_ok()
    }

    /// [`LiveProvider::resolve_name`] for a provider the user chose: see
    /// [`LiveProvider::pinned`].
    fn resolve_pinned(&self, name: &str, vendor: Vendor) -> Result<Vec<Target>, Diagnostic> {
        let snapshot = &self.setup.snapshot;
        let own = format!("{}/", vendor.id());
        // Route names never hold `/`, so a reference of this provider is
        // never taken for one.
        if self.is_route(name) {
            let targets = self.setup.routes.resolve(name, snapshot)?;
            let elsewhere: Vec<String> = targets
                .iter()
                .filter(|t| t.provider != vendor.id())
                .map(Target::reference)
                .collect();
            if !elsewhere.is_empty() {
                return Err(Diagnostic::error(
                    "provider.pinned",
                    format!(
                        "`{name}` routes to {}, but the provider was chosen as `{}`",
                        elsewhere.join(", "),
                        vendor.id()
                    ),
                    "a provider chosen with --provider (or the `provider` option) is never replaced: no request goes to a provider or host that was not chosen",
                    format!(
                        "name a model of `{}`, or leave out --provider and the `provider` option to let `{name}` choose",
                        vendor.id()
                    ),
                )
                .with_value(name));
            }
            return Ok(targets);
        }
        let reference = if name.starts_with(&own) {
            name.to_owned()
        } else {
            format!("{own}{name}")
        };
        self.setup.routes.resolve(&reference, snapshot)
    }

    fn retarget(&mut self, name: &str) -> Result<(), Diagnostic> {
        let targets = self.resolve_name(name)?;
        let mut prepared = Vec::with_capacity(targets.len());
        for target in targets {
            prepared.push(self.prepare(target)?);
        }
        self.name = name.to_owned();
        self.targets = prepared;
        self.decoding = None;
        if let Ok(mut aborts) = self.aborts.lock() {
            aborts.clear();
        }
        self.current = 0;
        self.retries = 0;
        self.recovering = false;
        self.track_thinking();
        Ok(())
    }

    /// Tells the thinking dial which target requests go to now.
    fn track_thinking(&self) {
        if let Some(t) = self.targets.get(self.current) {
            self.setup
                .thinking
                .track(t.target.reference(), &t.model, t.family.as_ref());
        }
    }

    fn prepare(&self, target: Target) -> Result<Prepared, Diagnostic> {
        let Some(vendor) = Vendor::from_id(&target.provider) else {
            return Err(Diagnostic::error(
                "provider.unknown",
                format!(
                    "`{}` names provider `{}`, which is not built in",
                    target.reference(),
                    target.provider
                ),
                format!("the built-in providers are {}", Vendor::ids()),
                "use one of them, or install a provider plugin that supplies it",
            )
            .with_value(target.reference()));
        };
        let snapshot = &self.setup.snapshot;
        let mut model = snapshot
            .get(&target.provider, &target.model)
            .map(|e| e.model.clone())
            .unwrap_or_else(|| CatalogModel::new(&target.provider, &target.model));
        let family = snapshot.family_of(&target.provider, &target.model).cloned();
        // Local servers (Ollama, llama.cpp, vLLM, LM Studio) serve models no
        // catalog lists; most of them call tools. Without a word from the
        // catalog, tool use is assumed (and said so) rather than refused, so
        // a local model works without configuration. A stated `tools
        // #false` still decides.
        // What an earlier run learned settles it instead, without a word:
        // the server answered tools (so the notice is said once), or
        // refused them (so the refusal is not paid for again).
        let unknown = vendor.is_compatible()
            && smith_catalog::gate::effective(&model, family.as_ref())
                .tools
                .is_none();
        let learned = unknown
            .then(|| self.setup.learned.as_ref()?.get(&model_key(&target)))
            .flatten();
        let assumed_tools = unknown && learned.is_none();
        if unknown {
            model.tools = Some(learned.as_ref().is_none_or(|f| f.tools));
        }
        // A local server's preset address goes to the OpenAI-compatible
        // plugin, which has no default of its own.
        let base_url = self.setup.base_urls.get(vendor.id()).cloned().or_else(|| {
            vendor
                .is_local()
                .then(|| vendor.default_base_url().map(str::to_owned))
                .flatten()
        });
        if base_url.is_none() && vendor.default_base_url().is_none() {
            return Err(Diagnostic::error(
                "provider.base-url-required",
                format!("no base URL is configured for `{}`", target.reference()),
                "an OpenAI-compatible provider has no default server",
                format!(
                    "pass --base-url URL (e.g. http://localhost:11434/v1 for Ollama) or set {}",
                    vendor.base_url_env()
                ),
            )
            .with_value(target.reference()));
        }
        let credential = match &target.bucket {
            Some(bucket) => self
                .setup
                .routes
                .get_bucket(bucket)
                .map(|b| format!("{}.{}", b.provider, b.slot)),
            // The OpenAI-compatible server's key is optional: sent when
            // one is stored. The local servers take none.
            None if vendor.is_compatible() => vendor.credential_slot().and_then(|handle| {
                let (p, s) = handle.split_once('.').unwrap_or((handle, "api_key"));
                self.setup
                    .resolver
                    .resolve(p, s)
                    .ok()
                    .map(|_| handle.to_owned())
            }),
            None => vendor.credential_slot().map(str::to_owned),
        };
        Ok(Prepared {
            assumed_tools,
            learned,
            target,
            vendor,
            model,
            family,
            credential,
            base_url,
            plugin: None,
        })
    }

    fn check_credentials(&self) -> Result<(), Diagnostic> {
        let mut first_missing = None;
        for t in &self.targets {
            let Some(handle) = &t.credential else {
                return Ok(());
            };
            let (p, s) = handle.split_once('.').unwrap_or((handle, "api_key"));
            match self.setup.resolver.resolve(p, s) {
                Ok(_) => return Ok(()),
                Err(d) => {
                    first_missing.get_or_insert((t.target.reference(), t.vendor, d));
                }
            }
        }
        match first_missing {
            None => Ok(()),
            Some((reference, vendor, d)) => {
                let env = vendor.credential_env();
                let how = if env.is_empty() {
                    format!("store one with `smith auth set {}`", vendor.id())
                } else {
                    format!(
                        "set {} or store one with `smith auth set {}`",
                        env.join(" or "),
                        vendor.id()
                    )
                };
                Err(Diagnostic::error(
                    "provider.credential-missing",
                    format!("no credential for `{reference}`"),
                    format!("{} ({})", d.what(), d.why()),
                    format!(
                        "{how}; or run without a provider (--provider mock) for the offline demo"
                    ),
                )
                .with_value(reference))
            }
        }
    }

    fn encode_current(&mut self, request: &Request) -> Result<Exchange, ProviderError> {
        self.gate_failed = false;
        let Some(t) = self.targets.get(self.current) else {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "`{}` resolved to no targets; check its definition in models.kdl (`smith models --resolve {}`)",
                    self.name, self.name
                ),
            ));
        };
        self.setup
            .thinking
            .track(t.target.reference(), &t.model, t.family.as_ref());
        let needs = RequestNeeds {
            tools: !request.tools.is_empty(),
            thinking: self.setup.thinking.level(),
            cache_breakpoints: t.vendor.cache_breakpoints(),
            max_output: request.max_output_tokens.map(u64::from),
            images: request.media().any(|m| m.media_type.is_image()),
            ..RequestNeeds::default()
        };
        self.offered_tools = needs.tools;
        let gated = smith_catalog::gate(&t.model, t.family.as_ref(), &needs).map_err(|d| {
            self.gate_failed = true;
            let mut message = diagnostic_message(&d);
            if let (Some(fact), Some(learned)) = (&t.learned, &self.setup.learned)
                && !fact.tools
            {
                message.push_str(&format!(
                    " (smith learned this on {} when {}, and keeps it in {}: to try tools again, declare `model \"{}\" {{ tools #true }}` under `provider \"{}\"` in models.kdl, or delete that file)",
                    smith_diag::log::utc_minute(fact.at.saturating_mul(1000)),
                    fact.how,
                    learned.path().display(),
                    t.target.model,
                    t.target.provider
                ));
            }
            ProviderError::new(ProviderErrorKind::InvalidRequest, message)
        })?;
        let effective = smith_catalog::gate::effective(&t.model, t.family.as_ref());
        if let Some(handle) = &t.credential {
            let (p, s) = handle.split_once('.').unwrap_or((handle, "api_key"));
            self.setup
                .resolver
                .resolve(p, s)
                .map_err(|d| ProviderError::new(ProviderErrorKind::Auth, diagnostic_message(&d)))?;
        }
        let config = Config {
            base_url: t.base_url.clone(),
            credential: t.credential.clone(),
            capabilities: Capabilities {
                // What the model advertises, not what this request uses, so
                // the settings stay the target's own (a request with tools
                // reaches the plugin only when the gate found tool use).
                tool_use: effective.tools == Some(true),
                thinking: gated.needs.thinking.is_some(),
                prompt_cache: gated.needs.cache_breakpoints > 0,
                max_output_tokens: effective
                    .max_output
                    .map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
            },
            thinking: gated.needs.thinking.map(|level| match level {
                smith_catalog::ThinkingLevel::Minimal => smith_providers::ThinkingLevel::Minimal,
                smith_catalog::ThinkingLevel::Low => smith_providers::ThinkingLevel::Low,
                smith_catalog::ThinkingLevel::Medium => smith_providers::ThinkingLevel::Medium,
                smith_catalog::ThinkingLevel::High => smith_providers::ThinkingLevel::High,
                smith_catalog::ThinkingLevel::Max => smith_providers::ThinkingLevel::Max,
            }),
        };
        let mut target_request = request.clone();
        target_request.model.clone_from(&t.target.model);
        let index = self.current;
        let mut settings = config.settings();
        if let Some(extra) = self.setup.plugin_settings.get(t.vendor.id()) {
            settings.extend(extra.iter().cloned());
        }
        let plugin = self.plugin_for(index, settings)?;
        let exchange = plugin.encode(&target_request)?;
        self.decoding = Some(index);
        Ok(exchange)
    }

    /// The plugin instance of target `index`, configured with `settings`:
    /// the one made for an earlier request when it is alive and has the
    /// same settings, else a fresh one.
    fn plugin_for(
        &mut self,
        index: usize,
        settings: Vec<(String, String)>,
    ) -> Result<&mut WasmProvider, ProviderError> {
        let Some(t) = self.targets.get_mut(index) else {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "target {index} of `{}` does not exist; this is a host defect, report it",
                    self.name
                ),
            ));
        };
        let reuse = t
            .plugin
            .as_ref()
            .is_some_and(|(had, plugin)| *had == settings && plugin.is_alive());
        if !reuse {
            t.plugin = None;
            let name = t.vendor.plugin();
            let component = smith_plugins::builtin::vendor_component(
                name,
                self.plugin_cache.as_deref(),
                self.plugin_limits,
            )
            .map_err(|e| ProviderError::new(ProviderErrorKind::Transport, e.to_string()))?;
            let instance = component
                .instantiate_checked(&settings)
                .map_err(|e| match e {
                    InstantiateError::Rejected(message) => ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        format!(
                            "plugin {name} refused the settings of `{}`: {message}",
                            t.target.reference()
                        ),
                    ),
                    InstantiateError::Failed(error) => {
                        ProviderError::new(ProviderErrorKind::Transport, error.to_string())
                    }
                })?;
            if let Ok(mut aborts) = self.aborts.lock() {
                aborts.insert(index, instance.abort_handle());
            }
            self.instances += 1;
            t.plugin = Some((settings, instance));
        }
        match &mut t.plugin {
            Some((_, plugin)) => Ok(plugin),
            None => Err(ProviderError::new(
                ProviderErrorKind::Transport,
                "the vendor plugin instance vanished; this is a host defect, report it",
            )),
        }
    }

    /// The plugin instance decoding the response in flight.
    /// A response that ended well, to a request that offered tools, proves
    /// the tool use assumed of its target: kept, so the assumption is
    /// announced once and not on every run.
    fn learn_from(&mut self, events: &[StreamEvent]) {
        if !self.offered_tools || !events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })) {
            return;
        }
        let (Some(index), Some(learned)) = (self.decoding, &self.setup.learned) else {
            return;
        };
        if let Some(t) = self.targets.get_mut(index)
            && t.assumed_tools
        {
            t.assumed_tools = false;
            if let Err(d) = learned.record(
                &model_key(&t.target),
                true,
                "the server answered a request offering tools",
            ) {
                smith_diag::log::report(&d);
            }
        }
    }

    fn decoding_plugin(&mut self) -> Option<&mut WasmProvider> {
        let index = self.decoding?;
        self.targets
            .get_mut(index)
            .and_then(|t| t.plugin.as_mut())
            .map(|(_, plugin)| plugin)
    }
}

fn engine_pricing(model: &CatalogModel) -> Option<Pricing> {
    let p = &model.pricing;
    Some(Pricing {
        input: p.input?,
        output: p.output?,
        cache_read: p.cache_read?,
        cache_write: p.cache_write?,
    })
}

/// Whether a refusal's message says the server does not take tools (as
/// Ollama's "does not support tools", llama.cpp's "tools param requires
/// --jinja flag" and vLLM's "\"auto\" tool choice requires
/// --enable-auto-tool-choice" do), rather than refusing something else.
fn refuses_tools(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("tool")
        && ["support", "requires", "enable"]
            .iter()
            .any(|w| m.contains(w))
}

/// The key of what is learned about a target's model: `provider/model`
/// (a bucket shares its model's facts).
fn model_key(target: &Target) -> String {
    format!("{}/{}", target.provider, target.model)
}

/// The notice for a target whose tool use is assumed.
fn assumed_tools_note(target: &Target) -> String {
    format!(
        "tool use of `{}` is assumed: no models.kdl entry describes it; if the server refuses tools, declare `model \"{}\" {{ tools #false }}` under `provider \"{}\"` in models.kdl",
        target.reference(),
        target.model,
        target.provider
    )
}

/// Linear memory a built-in provider plugin may use per byte of the
/// largest request body the HTTP engine sends
/// ([`smith_net::Limits::max_request_body`]): the request arrives as WIT
/// values, is built as a JSON value and serialized into a growing buffer,
/// so its bytes are held several times over at the peak. Measured: a
/// request of 16 MiB less 64 KiB encodes in each built-in provider plugin
/// within this limit (`tests/plugins.rs`), and fails at the general
/// 64 MiB default.
pub const PROVIDER_MEMORY_PER_REQUEST_BYTE: usize = 8;

/// The limits built-in provider plugins run under: `base` (the process's
/// plugin limits) with at least enough memory to build a request of the
/// HTTP engine's largest body, so that no request smith can send fails
/// for a built-in's memory and no user has to (or could) raise a
/// built-in's limit.
#[must_use]
pub fn provider_plugin_limits(base: Limits) -> Limits {
    let bound =
        usize::try_from(smith_net::Limits::default().max_request_body).unwrap_or(usize::MAX);
    let needed = bound
        .saturating_mul(PROVIDER_MEMORY_PER_REQUEST_BYTE)
        .saturating_add(32 << 20);
    Limits {
        memory_bytes: base.memory_bytes.max(needed),
        ..base
    }
}

/// How failover sees a provider error.
pub fn failure_of(kind: ProviderErrorKind) -> Failure {
    match kind {
        ProviderErrorKind::RateLimit => Failure::RateLimited,
        ProviderErrorKind::Overloaded
        | ProviderErrorKind::Transport
        | ProviderErrorKind::MalformedStream => Failure::Transient,
        ProviderErrorKind::Auth => Failure::Unauthorized,
        ProviderErrorKind::ModelUnavailable => Failure::ModelUnavailable,
        ProviderErrorKind::InvalidRequest
        | ProviderErrorKind::ContextOverflow
        | ProviderErrorKind::RequestTooLarge
        | ProviderErrorKind::PluginMemory => Failure::InvalidRequest,
    }
}

impl Provider for LiveProvider {
    fn describe(&self) -> ProviderInfo {
        let id = self
            .targets
            .get(self.current)
            .map_or("live", |t| t.vendor.id());
        ProviderInfo {
            id: id.to_owned(),
            models: self
                .targets
                .iter()
                .map(|t| ModelInfo {
                    id: t.target.model.clone(),
                    context_window: t.model.context,
                    max_output_tokens: t
                        .model
                        .max_output
                        .map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
                    pricing: engine_pricing(&t.model),
                })
                .collect(),
        }
    }

    fn encode(&mut self, request: &Request) -> Result<Exchange, ProviderError> {
        if request.model != self.name {
            self.retarget(&request.model).map_err(|d| {
                ProviderError::new(ProviderErrorKind::InvalidRequest, diagnostic_message(&d))
            })?;
        }
        if !self.recovering {
            self.retries = 0;
            self.attempts.clear();
        }
        self.recovering = false;
        self.decoding = None;
        self.encode_current(request)
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        let events = match self.decoding_plugin() {
            Some(plugin) => plugin.decode(chunk),
            None => vec![StreamEvent::Error(ProviderError::malformed(
                "a response body arrived for no encoded request; this is a host defect, report it",
            ))],
        };
        self.learn_from(&events);
        events
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        let events = match self.decoding_plugin() {
            Some(plugin) => plugin.finish(),
            None => Vec::new(),
        };
        self.learn_from(&events);
        events
    }

    fn interrupter(&self) -> Option<Interrupt> {
        let aborts = Arc::clone(&self.aborts);
        Some(Arc::new(move || {
            if let Ok(aborts) = aborts.lock() {
                for handle in aborts.values() {
                    handle.interrupt();
                }
            }
        }))
    }

    fn media_support(&mut self, _model: &str) -> MediaSupport {
        let Some(t) = self.targets.get_mut(self.current) else {
            return MediaSupport::default();
        };
        let effective = smith_catalog::gate::effective(&t.model, t.family.as_ref());
        let reference = t.target.reference();
        // The vendor plugin says what it sends: the instance of the last
        // request, or (before the first request, e.g. a PDF mentioned in
        // the first prompt) an instance made to ask and dropped; when none
        // can be made, images only.
        let types = match &mut t.plugin {
            Some((_, plugin)) => plugin.media_types(&t.target.model),
            None => smith_plugins::builtin::vendor_component(
                t.vendor.plugin(),
                self.plugin_cache.as_deref(),
                self.plugin_limits,
            )
            .ok()
            .and_then(|component| component.instantiate_checked(&[]).ok())
            .map_or_else(
                || Some(Vec::new()),
                |mut plugin| plugin.media_types(&t.target.model),
            ),
        };
        MediaSupport {
            source: format!("the catalog entry of `{reference}`"),
            model: reference,
            images: effective.image_input,
            pdf: types
                .as_ref()
                .is_some_and(|t| t.contains(&smith_engine::provider::MediaType::Pdf)),
            encoder: types.is_some(),
        }
    }

    fn recover(&mut self, error: &mut ProviderError) -> Option<Duration> {
        let failure = if self.gate_failed {
            // This target cannot serve the request; another may.
            Failure::ModelUnavailable
        } else {
            failure_of(error.kind)
        };
        let reference = self
            .targets
            .get(self.current)
            .map_or_else(|| self.name.clone(), |t| t.target.reference());
        self.attempts
            .push(format!("{reference}: {}", error.kind.as_str()));
        if error.kind == ProviderErrorKind::InvalidRequest
            && let Some(t) = self.targets.get_mut(self.current)
            && t.assumed_tools
            && !self.gate_failed
        {
            let refused_tools = self.offered_tools && refuses_tools(&error.message);
            error
                .message
                .push_str(&format!(" ({})", assumed_tools_note(&t.target)));
            // A refusal that speaks of tools, of a request that offered
            // them, disproves the assumption: kept, so the next run says
            // so before sending instead of paying for the refusal again.
            if refused_tools && let Some(learned) = &self.setup.learned {
                let key = model_key(&t.target);
                match learned.record(&key, false, "the server refused a request offering tools") {
                    Ok(()) => error.message.push_str(&format!(
                        " (smith keeps this in {}: later runs refuse tools for `{key}` before sending)",
                        learned.path().display()
                    )),
                    Err(d) => smith_diag::log::report(&d),
                }
                t.assumed_tools = false;
            }
        }
        let next = self.current + 1 < self.targets.len();
        let hint = error.retry_after_ms.map(Duration::from_millis);
        let decision = self
            .setup
            .policy
            .decide_with_hint(failure, self.retries, next, hint);
        if decision == Decision::GiveUp
            && failure == Failure::RateLimited
            && let Some(h) = hint.filter(|h| *h > self.setup.policy.max_rate_wait)
        {
            error.message.push_str(&format!(
                " (the provider asks to wait {} s, longer than smith waits on its own: try again then)",
                h.as_secs()
            ));
        }
        match decision {
            Decision::Retry { after } => {
                self.retries += 1;
                self.recovering = true;
                Some(after)
            }
            Decision::FailOver => {
                self.current += 1;
                self.retries = 0;
                self.recovering = true;
                Some(Duration::ZERO)
            }
            Decision::GiveUp => {
                if error.kind == ProviderErrorKind::Transport
                    && let Some(t) = self.targets.get(self.current)
                    && let Some(start) = t.vendor.start_hint()
                {
                    let url = t.base_url.as_deref().unwrap_or_default();
                    error.message.push_str(&format!(
                        " (the {} server at {url} is not answering: {start}; or point smith at the address it listens on with --base-url URL or {})",
                        t.vendor.id(),
                        t.vendor.base_url_env()
                    ));
                }
                if self.attempts.len() > 1 {
                    error.message.push_str(&format!(
                        " (after {} attempts: {})",
                        self.attempts.len(),
                        self.attempts.join("; ")
                    ));
                }
                self.attempts.clear();
                self.current = 0;
                self.retries = 0;
                self.recovering = false;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smith_catalog::Catalog;
    use smith_engine::provider::ToolSpec;

    fn setup(env: &[(&str, &str)], routes: Routes) -> Setup {
        let catalog = Catalog::new(smith_catalog::bundled().unwrap());
        let mut tools = CatalogModel::new("openai-compatible", "a");
        tools.tools = Some(true);
        let mut b = tools.clone();
        b.id = "b".into();
        let mut no_tools = tools.clone();
        no_tools.id = "plain".into();
        no_tools.tools = Some(false);
        catalog.set_user(vec![tools, b, no_tools]);
        let vars: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let resolver =
            Resolver::new(crate::builtin_slots()).env(move |name| vars.get(name).cloned());
        let mut base_urls = BTreeMap::new();
        base_urls.insert(
            "openai-compatible".to_owned(),
            "http://127.0.0.1:9/v1".to_owned(),
        );
        Setup {
            snapshot: catalog.snapshot(),
            routes,
            resolver: Arc::new(resolver),
            base_urls,
            policy: Policy::default(),
            thinking: crate::ThinkingDial::default(),
            plugin_settings: BTreeMap::new(),
            learned: None,
        }
    }

    fn request(model: &str) -> Request {
        Request {
            model: model.into(),
            system: None,
            messages: vec![smith_engine::provider::Message::user("hi")],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "list".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
            max_output_tokens: None,
        }
    }

    fn model_of(exchange: &Exchange) -> String {
        let Exchange::Http(http) = exchange else {
            panic!("expected an HTTP exchange");
        };
        let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
        body["model"].as_str().unwrap().to_owned()
    }

    fn error(kind: ProviderErrorKind) -> ProviderError {
        ProviderError::new(kind, "failed")
    }

    #[test]
    fn rate_limits_fail_over_at_once_and_transient_failures_back_off() {
        let routes = Routes::new().group("main", ["openai-compatible/a", "openai-compatible/b"]);
        let mut p = LiveProvider::new(
            setup(&[], routes),
            Some(Vendor::OpenAiCompatible),
            Some("main"),
        )
        .unwrap();
        assert_eq!(p.targets(), ["openai-compatible/a", "openai-compatible/b"]);
        let req = request("main");
        assert_eq!(model_of(&p.encode(&req).unwrap()), "a");
        assert_eq!(
            p.recover(&mut error(ProviderErrorKind::RateLimit)),
            Some(Duration::ZERO)
        );
        assert_eq!(model_of(&p.encode(&req).unwrap()), "b");
        let waits: Vec<Option<Duration>> = (0..3)
            .map(|_| {
                let wait = p.recover(&mut error(ProviderErrorKind::Overloaded));
                assert_eq!(model_of(&p.encode(&req).unwrap()), "b");
                wait
            })
            .collect();
        assert_eq!(
            waits,
            [500, 1000, 2000].map(|ms| Some(Duration::from_millis(ms)))
        );
        let mut last = error(ProviderErrorKind::Transport);
        assert_eq!(p.recover(&mut last), None, "three retries, no target left");
        assert!(
            last.message.ends_with(
                "(after 5 attempts: openai-compatible/a: rate_limit; openai-compatible/b: overloaded; openai-compatible/b: overloaded; openai-compatible/b: overloaded; openai-compatible/b: transport)"
            ),
            "{}",
            last.message
        );
        // The next request starts at the first target again.
        assert_eq!(model_of(&p.encode(&req).unwrap()), "a");
    }

    #[test]
    fn invalid_requests_give_up_at_once() {
        let routes = Routes::new().group("main", ["openai-compatible/a", "openai-compatible/b"]);
        let mut p = LiveProvider::new(
            setup(&[], routes),
            Some(Vendor::OpenAiCompatible),
            Some("main"),
        )
        .unwrap();
        p.encode(&request("main")).unwrap();
        for kind in [
            ProviderErrorKind::InvalidRequest,
            ProviderErrorKind::ContextOverflow,
            ProviderErrorKind::RequestTooLarge,
            ProviderErrorKind::PluginMemory,
        ] {
            let mut e = error(kind);
            assert_eq!(p.recover(&mut e), None);
            assert_eq!(e.message, "failed", "a single attempt is not listed");
        }
    }

    #[test]
    fn a_target_the_gate_rejects_fails_over_before_dispatch() {
        let routes =
            Routes::new().group("main", ["openai-compatible/plain", "openai-compatible/a"]);
        let mut p = LiveProvider::new(
            setup(&[], routes),
            Some(Vendor::OpenAiCompatible),
            Some("main"),
        )
        .unwrap();
        let req = request("main");
        let mut e = p.encode(&req).unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::InvalidRequest);
        assert!(
            e.message.contains(
                "the request offers tools but `openai-compatible/plain` does not call tools"
            ),
            "{}",
            e.message
        );
        assert_eq!(p.recover(&mut e), Some(Duration::ZERO));
        assert_eq!(model_of(&p.encode(&req).unwrap()), "a");
        // Without tools the gate lets the first target through.
        let mut p = LiveProvider::new(
            setup(&[], Routes::new()),
            Some(Vendor::OpenAiCompatible),
            Some("plain"),
        )
        .unwrap();
        let mut bare = request("plain");
        bare.tools.clear();
        assert_eq!(model_of(&p.encode(&bare).unwrap()), "plain");
    }

    #[test]
    fn credentials_travel_as_handles_and_a_changed_model_re_resolves() {
        let key = "sk-ant-unit-0123456789";
        let mut p = LiveProvider::new(
            setup(&[("ANTHROPIC_API_KEY", key)], Routes::new()),
            Some(Vendor::Anthropic),
            None,
        )
        .unwrap();
        assert_eq!(p.model_name(), "anthropic/claude-sonnet-4-5-20250929");
        assert_eq!(
            p.credential_origin().as_deref(),
            Some("environment variable ANTHROPIC_API_KEY")
        );
        let exchange = p.encode(&request(p.model_name())).unwrap();
        let Exchange::Http(http) = &exchange else {
            panic!("expected an HTTP exchange");
        };
        assert!(http.url.ends_with("/v1/messages"));
        assert!(
            http.headers
                .iter()
                .any(|(k, v)| k == "x-api-key" && v == "{{credential:anthropic.api_key}}")
        );
        let text = format!("{exchange:?}{}", serde_json::to_string(&exchange).unwrap());
        assert!(!text.contains(key));
        assert!(!format!("{p:?}").contains(key));
        let info = p.describe();
        assert_eq!(info.id, "anthropic");
        assert!(
            info.models[0].pricing.is_some(),
            "the catalog lists all four prices"
        );
        // The model picker changes the request's model: the targets follow.
        let exchange = p.encode(&request("claude-haiku-4-5-20251001")).unwrap();
        assert_eq!(model_of(&exchange), "claude-haiku-4-5-20251001");
    }

    #[test]
    fn a_pinned_provider_keeps_every_name_at_its_own_provider() {
        let routes = Routes::new()
            .alias("elsewhere", "openai/gpt-5.1")
            .alias("local", "openai-compatible/b")
            .group(
                "mixed",
                ["openai-compatible/a", "anthropic/claude-haiku-4-5-20251001"],
            );
        let env = [("OPENAI_API_KEY", "sk-openai-unit-0001")];
        let pinned = |model: &str| {
            LiveProvider::pinned(
                setup(&env, routes.clone()),
                Vendor::OpenAiCompatible,
                Some(model),
            )
        };
        // A `/` in a model id is part of the id at the chosen provider.
        let p = pinned("openai/gpt-oss-120b").unwrap();
        assert_eq!(p.targets(), ["openai-compatible/openai/gpt-oss-120b"]);
        // The provider's own references and routes that stay with it.
        assert_eq!(
            pinned("openai-compatible/a").unwrap().targets(),
            ["openai-compatible/a"]
        );
        assert_eq!(pinned("local").unwrap().targets(), ["openai-compatible/b"]);
        assert_eq!(pinned("b").unwrap().targets(), ["openai-compatible/b"]);
        // Routes that reach another provider are refused, naming it.
        for name in ["elsewhere", "mixed"] {
            let e = pinned(name).unwrap_err();
            assert_eq!(e.code(), "provider.pinned", "{name}");
            assert!(e.is_complete(), "{name}");
        }
        let e = pinned("mixed").unwrap_err();
        assert!(
            e.what().contains("anthropic/claude-haiku-4-5-20251001")
                && e.what().contains("`openai-compatible`"),
            "{}",
            e.what()
        );
        // A later switch follows the same rule: the request's model is
        // resolved at the pinned provider.
        let mut p = pinned("a").unwrap();
        let mut switch = request("openai/gpt-oss-120b");
        switch.tools.clear();
        let exchange = p.encode(&switch).unwrap();
        assert_eq!(model_of(&exchange), "openai/gpt-oss-120b");
        assert_eq!(p.targets(), ["openai-compatible/openai/gpt-oss-120b"]);
        // Unpinned, the prefix still chooses the provider.
        let p = LiveProvider::new(
            setup(&env, routes.clone()),
            Some(Vendor::OpenAiCompatible),
            Some("openai/gpt-5.1"),
        )
        .unwrap();
        assert_eq!(p.targets(), ["openai/gpt-5.1"]);
    }

    fn http(exchange: &Exchange) -> &smith_engine::provider::HttpExchange {
        let Exchange::Http(http) = exchange else {
            panic!("expected an HTTP exchange");
        };
        http
    }

    #[test]
    fn a_local_preset_asks_its_default_address_without_a_key() {
        let mut s = setup(&[("OPENAI_API_KEY", "sk-openai-unit-0002")], Routes::new());
        s.base_urls.clear();
        let mut p = LiveProvider::pinned(s, Vendor::Ollama, Some("qwen2.5-coder")).unwrap();
        assert_eq!(p.targets(), ["ollama/qwen2.5-coder"]);
        assert_eq!(p.credential_origin(), None);
        assert_eq!(p.assumptions().len(), 1, "tool use is assumed, and said");
        let exchange = p.encode(&request("qwen2.5-coder")).unwrap();
        let sent = http(&exchange);
        assert_eq!(sent.url, "http://127.0.0.1:11434/v1/chat/completions");
        assert!(
            sent.headers
                .iter()
                .all(|(k, _)| !k.eq_ignore_ascii_case("authorization")),
            "{:?}",
            sent.headers
        );
        // A server that does not answer: after the retries, the error
        // names its address, how to start it and how to point elsewhere.
        let mut last = error(ProviderErrorKind::Transport);
        for _ in 0..3 {
            assert!(
                p.recover(&mut error(ProviderErrorKind::Transport))
                    .is_some()
            );
            p.encode(&request("qwen2.5-coder")).unwrap();
        }
        assert_eq!(p.recover(&mut last), None);
        assert!(
            last.message.contains(
                "the ollama server at http://127.0.0.1:11434/v1 is not answering: start it with `ollama serve`"
            ) && last.message.contains("--base-url URL or OLLAMA_BASE_URL"),
            "{}",
            last.message
        );
        // Each preset's address, and --base-url (or its variable) over it.
        for (vendor, url) in [
            (Vendor::LlamaCpp, "http://127.0.0.1:8080/v1"),
            (Vendor::LmStudio, "http://127.0.0.1:1234/v1"),
            (Vendor::Vllm, "http://127.0.0.1:8000/v1"),
        ] {
            let mut s = setup(&[], Routes::new());
            s.base_urls.clear();
            let mut p = LiveProvider::pinned(s, vendor, Some("m")).unwrap();
            let exchange = p.encode(&request("m")).unwrap();
            assert_eq!(http(&exchange).url, format!("{url}/chat/completions"));
            let mut s = setup(&[], Routes::new());
            s.base_urls
                .insert(vendor.id().to_owned(), "http://10.0.0.7:9999/v1".to_owned());
            let mut p = LiveProvider::pinned(s, vendor, Some("m")).unwrap();
            let exchange = p.encode(&request("m")).unwrap();
            assert_eq!(
                http(&exchange).url,
                "http://10.0.0.7:9999/v1/chat/completions"
            );
        }
        // Without a model there is none to default to.
        let e = LiveProvider::pinned(setup(&[], Routes::new()), Vendor::Ollama, None).unwrap_err();
        assert_eq!(e.code(), "provider.model-required");
        assert!(e.next().contains("--provider ollama"), "{}", e.next());
    }

    #[test]
    fn the_openai_api_setting_chooses_chat_completions() {
        let env = [("OPENAI_API_KEY", "sk-openai-unit-0003")];
        let mut p = LiveProvider::pinned(setup(&env, Routes::new()), Vendor::OpenAi, None).unwrap();
        let exchange = p.encode(&request(p.model_name())).unwrap();
        assert!(
            http(&exchange).url.ends_with("/v1/responses"),
            "the default"
        );
        let mut s = setup(&env, Routes::new());
        s.plugin_settings.insert(
            "openai".to_owned(),
            vec![("api".to_owned(), "chat".to_owned())],
        );
        let mut p = LiveProvider::pinned(s, Vendor::OpenAi, None).unwrap();
        let exchange = p.encode(&request(p.model_name())).unwrap();
        let sent = http(&exchange);
        assert_eq!(sent.url, "https://api.openai.com/v1/chat/completions");
        let body: serde_json::Value = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(body["messages"][0]["content"], "hi");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(
            sent.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v == "Bearer {{credential:openai.api_key}}")
        );
        // A value the plugin does not take fails before dispatch, naming it.
        let mut s = setup(&env, Routes::new());
        s.plugin_settings.insert(
            "openai".to_owned(),
            vec![("api".to_owned(), "completions".to_owned())],
        );
        let mut p = LiveProvider::pinned(s, Vendor::OpenAi, None).unwrap();
        let e = p.encode(&request(p.model_name())).unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::InvalidRequest);
        assert!(e.message.contains("\"completions\""), "{}", e.message);
    }

    /// The dial is read for each request: a level set between two
    /// requests (`/thinking`) changes the second, and the dial learns the
    /// target's levels when the model resolves.
    #[test]
    fn the_thinking_dial_decides_each_request_and_knows_the_target() {
        let env = [("OPENAI_API_KEY", "sk-openai-unit-0004")];
        let s = setup(&env, Routes::new());
        let dial = s.thinking.clone();
        let mut p = LiveProvider::pinned(s, Vendor::OpenAi, Some("gpt-5-mini")).unwrap();
        let offered = dial.offered().unwrap();
        assert_eq!(offered.reference, "openai/gpt-5-mini");
        assert_eq!(
            offered.levels.as_deref().map(<[_]>::len),
            Some(4),
            "minimal, low, medium, high"
        );
        let body = |p: &mut LiveProvider| -> serde_json::Value {
            let exchange = p.encode(&request(p.model_name())).unwrap();
            serde_json::from_slice(&http(&exchange).body).unwrap()
        };
        assert_eq!(body(&mut p).get("reasoning"), None, "off by default");
        dial.set(Some(smith_catalog::ThinkingLevel::High));
        let sent = body(&mut p);
        assert_eq!(sent["reasoning"]["effort"], "high");
        assert_eq!(sent["include"][0], "reasoning.encrypted_content");
        dial.set(None);
        assert_eq!(body(&mut p).get("reasoning"), None, "off again");
    }

    #[test]
    fn setup_problems_are_diagnostics_before_any_request() {
        let missing =
            LiveProvider::new(setup(&[], Routes::new()), Some(Vendor::OpenAi), None).unwrap_err();
        assert_eq!(missing.code(), "provider.credential-missing");
        assert!(
            missing
                .next()
                .contains("set OPENAI_API_KEY or store one with `smith auth set openai`")
        );
        let mut s = setup(&[], Routes::new());
        s.base_urls.clear();
        let no_url = LiveProvider::new(s, Some(Vendor::OpenAiCompatible), Some("a")).unwrap_err();
        assert_eq!(no_url.code(), "provider.base-url-required");
        let unknown =
            LiveProvider::new(setup(&[], Routes::new()), None, Some("acme/model")).unwrap_err();
        assert_eq!(unknown.code(), "provider.unknown");
    }
}
