//! The secrets a runtime redacts: every credential smith can see,
//! gathered once per runtime start into a [`Registry`], and the values
//! that join it while the runtime runs.
//!
//! [`process_registry`] registers, for every provider the built-in
//! provider plugins describe (not only the one chosen):
//!
//! - each API-key environment variable the provider declares
//!   (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`,
//!   `GOOGLE_API_KEY`), as the slot's handle (`anthropic.api_key`) with
//!   source `env:VAR`;
//! - each credential in the auth store (`auth.json` in the data
//!   directory), as `provider.slot` with source `auth:provider.slot`; an
//!   OAuth token's refresh token as `provider.slot.refresh`;
//! - each secret the user registered with `smith secret add NAME`
//!   ([`UserSecrets`], `secrets.json` next to the auth store), as `NAME`
//!   with source `user`.
//!
//! The [`RuntimeSecrets`] it returns keeps the registry for the runtime's
//! life: the plugin host hands it the values plugins create
//! (`register-secret`, source `plugin:NAME`) and the secrets it resolves
//! for their headers ([`plugin_sink`]), and the plugins' configuration
//! adds credential options (source `config:KEY`) and secret routes
//! ([`apply_config`]). smith's own options hold no credentials.
//!
//! A value that cannot be registered (shorter than
//! [`smith_secrets::MIN_SECRET_LEN`] bytes, say) and a store that cannot
//! be read are reported to the log, never with the value, and the runtime
//! starts without them.
//!
//! Fingerprints are made under the key kept next to the auth store
//! ([`KEY_FILE`], drawn on first use), so every process makes the same
//! fingerprint of a value. The runtime gets the registry's live redactor
//! (see `smith_engine::agent::AgentConfig::redactor`), which replaces every
//! registered value with `{secret:NAME}` before anything is sent to the
//! provider, recorded in the session or shown — a value registered later
//! included — and substitutes placeholders in tool arguments where the
//! policy allows: the user's `--allow` tools and the routes plugins
//! contribute. Each registration made at start and not yet in the session
//! is recorded there as a *secret registration* entry (name, source,
//! fingerprint, key id; never the value).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use smith_auth::{AuthStore, Credential};
use smith_diag::{Diagnostic, Severity, Surface};
use smith_engine::journal::store::StoreJournal;
use smith_secrets::{AllowList, FingerprintKey, Redactor, Registration, Registry, Source};

/// The file, next to the auth store in the data directory, that holds the
/// fingerprint key: 64 hex digits, private to the user (mode 0600).
pub const KEY_FILE: &str = "secrets.key";

/// The fingerprint key kept in `data_dir` ([`KEY_FILE`]), drawn and
/// written (private to the user) when there is none yet. One key for
/// every process, so a registration recorded in a session by one process
/// is recognised by the next.
///
/// # Errors
///
/// When the file cannot be read or written, or does not hold a key; the
/// diagnostic names the file and what to do.
pub fn fingerprint_key(data_dir: &Path) -> Result<FingerprintKey, Diagnostic> {
    let path = data_dir.join(KEY_FILE);
    let surface = || Surface::other(path.display().to_string());
    let unreadable = |why: String| {
        Diagnostic::error(
            "secrets.key-unreadable",
            format!(
                "the secret fingerprint key {} could not be used",
                path.display()
            ),
            why,
            format!(
                "delete {} so a new key is drawn on the next start (registrations recorded under the old key are then no longer matched), or fix its permissions",
                path.display()
            ),
        )
        .with_surface(surface())
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_key(text.trim()).ok_or_else(|| {
            unreadable("it does not hold 64 hex digits, which is what smith writes".to_owned())
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| unreadable(format!("no random bytes for a new key: {e}")))?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::create_dir_all(data_dir)
                .map_err(|e| unreadable(format!("its directory could not be created: {e}")))?;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt as _;
                options.mode(0o600);
            }
            match options.open(&path) {
                Ok(mut file) => {
                    file.write_all(format!("{hex}\n").as_bytes())
                        .and_then(|()| file.sync_all())
                        .map_err(|e| unreadable(format!("it could not be written: {e}")))?;
                    Ok(FingerprintKey::from_bytes(bytes))
                }
                // Another process wrote it first: use its key.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| unreadable(format!("it could not be read: {e}")))?;
                    parse_key(text.trim()).ok_or_else(|| {
                        unreadable("another process is writing it right now".to_owned())
                    })
                }
                Err(e) => Err(unreadable(format!("it could not be created: {e}"))),
            }
        }
        Err(e) => Err(unreadable(format!("it could not be read: {e}"))),
    }
}

fn parse_key(hex: &str) -> Option<FingerprintKey> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(FingerprintKey::from_bytes(bytes))
}

/// One credential found: its secret name, value and source.
struct Found {
    name: String,
    value: String,
    source: Source,
}

/// Every credential smith can see, from the process environment `env` and
/// the auth store `store` (when given), with the problems met on the way.
fn credentials(
    env: &dyn Fn(&str) -> Option<String>,
    store: Option<&AuthStore>,
    user: Option<&UserSecrets>,
) -> (Vec<Found>, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |name: &str, value: &str, source: Source| {
        let value = value.trim();
        if !value.is_empty() {
            found.push(Found {
                name: name.to_owned(),
                value: value.to_owned(),
                source,
            });
        }
    };
    for slot in smith_provider_host::builtin_slots() {
        let handle = slot.handle();
        for var in &slot.env {
            if let Some(value) = env(var) {
                add(&handle, &value, Source::Env(var.clone()));
            }
        }
    }
    if let Some(store) = store {
        match store.list() {
            Ok(stored) => {
                for (provider, slot) in stored {
                    let handle = format!("{provider}.{slot}");
                    match store.get(&provider, &slot) {
                        Ok(Some(Credential::ApiKey(key))) => {
                            add(&handle, key.expose(), Source::AuthSlot(handle.clone()));
                        }
                        Ok(Some(Credential::OAuth(token))) => {
                            add(
                                &handle,
                                token.access.expose(),
                                Source::AuthSlot(handle.clone()),
                            );
                            if let Some(refresh) = &token.refresh {
                                add(
                                    &format!("{handle}.refresh"),
                                    refresh.expose(),
                                    Source::AuthSlot(handle.clone()),
                                );
                            }
                        }
                        Ok(None) => {}
                        Err(d) => warnings.push(d.with_severity(Severity::Warning)),
                    }
                }
            }
            Err(d) => warnings.push(d.with_severity(Severity::Warning)),
        }
    }
    if let Some(user) = user {
        match user.list() {
            Ok(secrets) => {
                for secret in secrets {
                    add(&secret.name, &secret.value, Source::User);
                }
            }
            Err(d) => warnings.push(d.with_severity(Severity::Warning)),
        }
    }
    (found, warnings)
}

/// Registers `found` under `key`; a value the registry refuses becomes a
/// warning (which never shows it).
fn register_all(
    key: FingerprintKey,
    found: Vec<Found>,
    warnings: &mut Vec<Diagnostic>,
) -> Registry {
    let mut registry = Registry::new(key);
    for Found {
        name,
        value,
        source,
    } in found
    {
        if let Err(e) = registry.register(&name, &value, source) {
            warnings.push(e.into_diagnostic().with_severity(Severity::Warning));
        }
    }
    registry
}

/// Every credential smith can see, from the process environment `env` and
/// the auth store `store` (when given), registered under `key`. Problems
/// come back as warnings; the values that could be registered are.
pub fn registry(
    key: FingerprintKey,
    env: &dyn Fn(&str) -> Option<String>,
    store: Option<&AuthStore>,
    user: Option<&UserSecrets>,
) -> (Registry, Vec<Diagnostic>) {
    let (found, mut warnings) = credentials(env, store, user);
    let registry = register_all(key, found, &mut warnings);
    (registry, warnings)
}

/// The secrets of a running runtime: the registry every credential was
/// registered in at its start, kept so values that appear later (a
/// plugin's handoff, a resolved `{secret:…}` header) join it, and its live
/// redactor (which sees them at once).
#[derive(Clone)]
pub struct RuntimeSecrets {
    registry: Arc<Mutex<Registry>>,
    redactor: Arc<Redactor>,
    /// The (tool, secret) pairs the user's secrets allow
    /// (`smith secret add NAME --allow TOOL`).
    user_routes: Arc<Vec<(String, String)>>,
    /// Where registrations made after the start are recorded
    /// ([`RuntimeSecrets::record_later`]).
    journal: Arc<Mutex<Option<Arc<StoreJournal>>>>,
}

impl RuntimeSecrets {
    /// The live redactor, for `AgentConfig::redactor`: it redacts every
    /// value registered so far and every value registered later.
    pub fn redactor(&self) -> Arc<Redactor> {
        Arc::clone(&self.redactor)
    }

    /// Every registration so far, oldest first (never a value).
    pub fn registrations(&self) -> Vec<Registration> {
        self.lock().registrations().cloned().collect()
    }

    /// Registers `value`, created by `plugin` (its `register-secret`), as
    /// `plugin.NAME.N` with source `plugin:NAME`: the one-time handoff.
    /// From now on every text the runtime sends, records or shows has it
    /// replaced by the placeholder. Returns the registration (the earlier
    /// one when the value was registered before).
    ///
    /// # Errors
    ///
    /// The registry's diagnostics (`secrets.too-short`, …), which never
    /// show the value.
    pub fn register_plugin_secret(
        &self,
        plugin: &str,
        value: &str,
    ) -> Result<Registration, Diagnostic> {
        let mut registry = self.lock();
        let source = Source::Plugin(plugin.to_owned());
        let ordinal = registry
            .registrations()
            .filter(|r| r.source == source)
            .count()
            + 1;
        let name = format!("plugin.{}.{ordinal}", name_part(plugin));
        let registered = registry
            .register(&name, value, source)
            .map_err(smith_secrets::Error::into_diagnostic)?;
        drop(registry);
        self.record(&registered);
        Ok(registered.registration)
    }

    /// Registers a credential `handle` (`provider.slot`) resolved for a
    /// plugin's `{secret:…}` header, as `handle` with source
    /// `auth:handle`; a value registered before changes nothing.
    ///
    /// # Errors
    ///
    /// As [`RuntimeSecrets::register_plugin_secret`].
    pub fn register_resolved(&self, handle: &str, value: &str) -> Result<(), Diagnostic> {
        let registered = self
            .lock()
            .register(handle, value, Source::AuthSlot(handle.to_owned()))
            .map_err(smith_secrets::Error::into_diagnostic)?;
        self.record(&registered);
        Ok(())
    }

    /// Records every registration made from now on (a plugin's handoff, a
    /// header secret, a credential option) in `journal` as a *secret
    /// registration* entry, as the runtime records those made at its
    /// start. A journal that refuses one is reported to the log.
    pub fn record_later(&self, journal: Arc<StoreJournal>) {
        *self.journal.lock().unwrap_or_else(PoisonError::into_inner) = Some(journal);
    }

    /// Records `registered` when it is new and a journal was given.
    fn record(&self, registered: &smith_secrets::Registered) {
        if !registered.new {
            return;
        }
        let journal = self
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(journal) = journal
            && let Err(err) =
                journal.record_secret_registrations(std::iter::once(&registered.registration))
        {
            smith_diag::log::report(&Diagnostic::warning(
                "secrets.not-recorded",
                format!(
                    "the registration of secret {} was not recorded in the session",
                    registered.registration.name
                ),
                format!("the session store refused the entry: {err}"),
                "nothing else changes: it is redacted all the same; check the session store (`smith session repair`)",
            ));
        }
    }

    /// Applies what the configuration holds for the secret proxy: each
    /// credential option's value is registered (source `config:KEY`), and
    /// the substitution policy becomes the user's routes plus the routes
    /// the configuration holds ([`config_secrets`]). Problems come back
    /// as warnings, which never show a value.
    pub fn apply_config(
        &self,
        config: &smith_config::Config,
        grants: &dyn Fn(&str) -> Vec<String>,
    ) -> Vec<Diagnostic> {
        let (credentials, routes, mut warnings) = config_secrets(config, grants);
        for Found {
            name,
            value,
            source,
        } in credentials
        {
            let registered = self.lock().register(&name, &value, source);
            match registered {
                Ok(registered) => self.record(&registered),
                Err(e) => warnings.push(e.into_diagnostic().with_severity(Severity::Warning)),
            }
        }
        let mut policy = AllowList::new();
        for (tool, secret) in self.user_routes.iter().chain(&routes) {
            policy = policy.allow(tool, secret);
        }
        self.redactor.set_policy(Arc::new(policy));
        warnings
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The last segment of a plugin option's key that holds secret routes:
/// a list of `{"secret": NAME, "tool": TOOL}` objects, each authorizing
/// `TOOL` to receive the secret `NAME` in place of its placeholder.
pub const ROUTES_OPTION: &str = "secret-routes";

/// Whether a plugin option is a credential: its schema marks it
/// (`"writeOnly": true`, or `"format": "password"`), or its key's last
/// segment names one (`api-key`, `api_key`, `token`, `password`, `secret`
/// or ending in `-token`, `_token`, `-key`, `_key`).
fn is_credential(option: &smith_config::plugin::PluginOption) -> bool {
    let schema = &option.schema;
    if schema.get("writeOnly") == Some(&serde_json::Value::Bool(true))
        || schema.get("format").and_then(serde_json::Value::as_str) == Some("password")
    {
        return true;
    }
    let last = option.key.rsplit('.').next().unwrap_or(&option.key);
    matches!(
        last,
        "api-key" | "api_key" | "token" | "password" | "secret"
    ) || ["-token", "_token", "-key", "_key", "-password", "_password"]
        .iter()
        .any(|end| last.ends_with(end))
}

/// What `config` holds for the secret proxy: the credential options'
/// values, and the secret routes (tool, secret) of every `secret-routes`
/// option ([`ROUTES_OPTION`]).
///
/// A route a plugin contributes (its option's default, a value it
/// contributes or sets) is honored only for a secret that plugin may hold
/// anyway: one its `secrets` capability grants (`grants(plugin)`) or one
/// it created (`plugin.NAME.N`); any other is left out with a warning.
/// (Configuration files, variables and flags do not set plugin options
/// today; a route set there would be the user's and taken as it is.)
fn config_secrets(
    config: &smith_config::Config,
    grants: &dyn Fn(&str) -> Vec<String>,
) -> (Vec<Found>, Vec<(String, String)>, Vec<Diagnostic>) {
    use smith_config::Source as From;
    let mut credentials = Vec::new();
    let mut routes = Vec::new();
    let mut warnings = Vec::new();
    for entry in config.plugin_entries() {
        let option = &entry.option;
        let (Some(value), Some(from)) = (entry.value(), entry.source()) else {
            continue;
        };
        if is_credential(option) {
            if let Some(text) = value.as_str().map(str::trim).filter(|t| !t.is_empty()) {
                credentials.push(Found {
                    name: option.key.clone(),
                    value: text.to_owned(),
                    source: Source::Config(option.key.clone()),
                });
            }
            continue;
        }
        if option.key.rsplit('.').next() != Some(ROUTES_OPTION) {
            continue;
        }
        let by_plugin = match from {
            From::Default
            | From::BuiltinPlugin { .. }
            | From::Plugin { .. }
            | From::Runtime { .. } => Some(option.plugin.as_str()),
            From::User { .. } | From::Project { .. } | From::Env { .. } | From::Flag { .. } => None,
        };
        let granted = by_plugin.map(grants).unwrap_or_default();
        for route in value.as_array().map(Vec::as_slice).unwrap_or_default() {
            let (Some(secret), Some(tool)) = (
                route.get("secret").and_then(serde_json::Value::as_str),
                route.get("tool").and_then(serde_json::Value::as_str),
            ) else {
                warnings.push(
                    Diagnostic::warning(
                        "secrets.bad-route",
                        format!("a secret route in `{}` is left out", option.key),
                        format!("{route} is not an object with `secret` and `tool` strings"),
                        "write each route as {\"secret\": \"NAME\", \"tool\": \"TOOL\"}",
                    )
                    .with_field(option.key.clone()),
                );
                continue;
            };
            if let Some(plugin) = by_plugin {
                let own = format!("plugin.{}.", name_part(plugin));
                if !granted.iter().any(|g| g == secret) && !secret.starts_with(&own) {
                    warnings.push(
                        Diagnostic::warning(
                            "secrets.route-not-granted",
                            format!(
                                "plugin {plugin}'s route of secret {secret} to {tool} is left out"
                            ),
                            format!(
                                "a plugin routes only secrets it is granted (`secrets \"{secret}\"` in its capabilities) or created itself"
                            ),
                            format!(
                                "grant the plugin the secret, or set the route yourself: `smith config set {} ...`",
                                option.key
                            ),
                        )
                        .with_field(option.key.clone()),
                    );
                    continue;
                }
            }
            routes.push((tool.to_owned(), secret.to_owned()));
        }
    }
    (credentials, routes, warnings)
}

/// `text` as a part of a secret name: letters, digits, `.`, `_` and `-`
/// kept, anything else (the `/` of `smith/product`) as `-`.
fn name_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The secrets of the runtime started last in this process, for the
/// plugin host ([`plugin_sink`]).
static CURRENT: Mutex<Option<RuntimeSecrets>> = Mutex::new(None);

/// The secrets of the runtime started last in this process, if any.
pub fn current() -> Option<RuntimeSecrets> {
    CURRENT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// How the plugin host hands values to the runtime's registry: a value a
/// plugin registers (`register-secret`, `plugin` given) or a credential
/// resolved for its `{secret:HANDLE}` header (`plugin` absent, `name` the
/// handle). Without a running runtime the value is registered with
/// diagnostics only (as the plugin host does anyway).
pub fn plugin_sink() -> smith_plugins::effects::SecretSink {
    Arc::new(|registration| {
        let Some(secrets) = current() else {
            return Ok(());
        };
        match registration {
            smith_plugins::effects::SecretRegistration::Created { plugin, value } => secrets
                .register_plugin_secret(plugin, value)
                .map(|_| ())
                .map_err(|d| d.what().to_owned()),
            smith_plugins::effects::SecretRegistration::Resolved { handle, value } => secrets
                .register_resolved(handle, value)
                .map_err(|d| d.what().to_owned()),
        }
    })
}

/// This process's registry for a runtime starting now: [`registry`] over
/// the process environment, the auth store and the user's secrets
/// ([`UserSecrets`]) in the data directory, under the key kept there
/// ([`fingerprint_key`]; a fresh per-process key when it cannot be used),
/// and whether its registrations may be recorded (not when no key could
/// be drawn at all). The key file is read or created only when there is a
/// credential to register. Warnings go to the log.
///
/// The redactor's substitution policy is the user's: each secret added
/// with `smith secret add NAME --allow TOOL` may be put into the
/// arguments of the tools listed; nothing else is authorized. The result
/// becomes [`current`], so plugins loaded for the runtime register into
/// it.
pub fn process_registry() -> (RuntimeSecrets, bool) {
    let data_dir = smith_config::Paths::from_process()
        .ok()
        .map(|paths| paths.data_dir);
    let store = data_dir.as_deref().map(AuthStore::in_data_dir);
    let user = data_dir.as_deref().map(UserSecrets::in_data_dir);
    let (found, mut warnings) = credentials(
        &|name| std::env::var(name).ok(),
        store.as_ref(),
        user.as_ref(),
    );
    let kept = if found.is_empty() {
        None
    } else {
        data_dir.as_deref().map(fingerprint_key).and_then(|r| {
            r.map_err(|d| warnings.push(d.with_severity(Severity::Warning)))
                .ok()
        })
    };
    let key = kept.or_else(|| {
        FingerprintKey::random()
            .map_err(|e| warnings.push(e.into_diagnostic().with_severity(Severity::Warning)))
            .ok()
    });
    // No randomness at all: redaction works the same under a fixed key,
    // but fingerprints made under it could be tested against guesses, so
    // they are not recorded.
    let recordable = key.is_some();
    let key = key.unwrap_or_else(|| FingerprintKey::from_bytes([0; 32]));
    let registry = register_all(key, found, &mut warnings);
    let user_routes = user
        .as_ref()
        .and_then(|user| user.list().ok())
        .map(|secrets| user_routes(&secrets))
        .unwrap_or_default();
    let mut policy = AllowList::new();
    for (tool, secret) in &user_routes {
        policy = policy.allow(tool, secret);
    }
    registry.set_policy(Arc::new(policy));
    for warning in &warnings {
        smith_diag::log::report(warning);
    }
    let secrets = RuntimeSecrets {
        redactor: registry.redactor(),
        registry: Arc::new(Mutex::new(registry)),
        user_routes: Arc::new(user_routes),
        journal: Arc::new(Mutex::new(None)),
    };
    *CURRENT.lock().unwrap_or_else(PoisonError::into_inner) = Some(secrets.clone());
    (secrets, recordable)
}

/// The (tool, secret) pairs the user's secrets allow: each `allow` tool
/// may receive that secret.
fn user_routes(secrets: &[UserSecret]) -> Vec<(String, String)> {
    secrets
        .iter()
        .flat_map(|s| s.allow.iter().map(|tool| (tool.clone(), s.name.clone())))
        .collect()
}

/// Applies the resolved configuration (with the plugins' contributions)
/// to the secrets of the runtime started last in this process
/// ([`RuntimeSecrets::apply_config`]): credential options registered,
/// secret routes in the policy. `grants(plugin)` lists the secret handles
/// a plugin is granted. Warnings go to the log. Nothing happens without a
/// running runtime.
pub fn apply_config(config: &smith_config::Config, grants: &dyn Fn(&str) -> Vec<String>) {
    let Some(secrets) = current() else {
        return;
    };
    for warning in secrets.apply_config(config, grants) {
        smith_diag::log::report(&warning);
    }
}

/// The file, next to the auth store in the data directory, that holds the
/// secrets the user registered with `smith secret add`: JSON, private to
/// the user (mode 0600), replaced atomically on every change.
pub const USER_FILE: &str = "secrets.json";

/// One secret the user registered.
pub struct UserSecret {
    /// Its name; its placeholder is `{secret:NAME}`.
    pub name: String,
    /// The value.
    pub value: String,
    /// The tools that may receive the value in place of its placeholder.
    pub allow: Vec<String>,
}

impl std::fmt::Debug for UserSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserSecret")
            .field("name", &self.name)
            .field("value", &smith_diag::secrets::REDACTED)
            .field("allow", &self.allow)
            .finish()
    }
}

/// The secrets the user registered ([`USER_FILE`]), registered at every
/// runtime start with source `user`.
#[derive(Debug, Clone)]
pub struct UserSecrets {
    path: PathBuf,
}

impl UserSecrets {
    /// The user's secrets kept in `data_dir`.
    pub fn in_data_dir(data_dir: &Path) -> UserSecrets {
        UserSecrets {
            path: data_dir.join(USER_FILE),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every secret, in name order.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or is not what smith writes.
    pub fn list(&self) -> Result<Vec<UserSecret>, Diagnostic> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io_error("read", &e)),
        };
        let damaged = |why: &str| {
            Diagnostic::error(
                "secrets.store-damaged",
                format!("the secret store {} cannot be read", self.path.display()),
                why.to_owned(),
                "move the file aside and add the secrets again with `smith secret add NAME`",
            )
            .with_surface(Surface::file(&self.path))
        };
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| damaged("it is not valid JSON"))?;
        let Some(entries) = doc.get("secrets").and_then(serde_json::Value::as_object) else {
            return Err(damaged("it has no `secrets` object"));
        };
        let mut out = Vec::with_capacity(entries.len());
        for (name, entry) in entries {
            let Some(value) = entry.get("value").and_then(serde_json::Value::as_str) else {
                return Err(damaged(&format!(
                    "the entry `{name}` has no `value` string"
                )));
            };
            let allow = entry
                .get("allow")
                .and_then(serde_json::Value::as_array)
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            out.push(UserSecret {
                name: name.clone(),
                value: value.to_owned(),
                allow,
            });
        }
        Ok(out)
    }

    /// Adds (or replaces) the secret `name`, whose value `tools` may
    /// receive in place of its placeholder. The value is checked as the
    /// registry checks it first.
    ///
    /// # Errors
    ///
    /// The registry's refusal (`secrets.invalid-name`, `secrets.too-short`,
    /// `secrets.too-long`, `secrets.ambiguous`; never showing the value),
    /// or when the file cannot be read or written.
    pub fn add(&self, name: &str, value: &str, tools: &[String]) -> Result<(), Diagnostic> {
        let mut check = Registry::new(FingerprintKey::from_bytes([0; 32]));
        check
            .register(name, value, Source::User)
            .map_err(smith_secrets::Error::into_diagnostic)?;
        let mut secrets = self.list()?;
        secrets.retain(|s| s.name != name);
        secrets.push(UserSecret {
            name: name.to_owned(),
            value: value.to_owned(),
            allow: tools.to_vec(),
        });
        self.write(&secrets)
    }

    /// Removes the secret `name`; whether there was one.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or written.
    pub fn remove(&self, name: &str) -> Result<bool, Diagnostic> {
        let mut secrets = self.list()?;
        let before = secrets.len();
        secrets.retain(|s| s.name != name);
        if secrets.len() == before {
            return Ok(false);
        }
        self.write(&secrets)?;
        Ok(true)
    }

    fn write(&self, secrets: &[UserSecret]) -> Result<(), Diagnostic> {
        let mut entries = serde_json::Map::new();
        for s in secrets {
            entries.insert(
                s.name.clone(),
                serde_json::json!({"value": s.value, "allow": s.allow}),
            );
        }
        let doc = serde_json::json!({"version": 1, "secrets": entries});
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        text.push('\n');
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| self.io_error("create the directory of", &e))?;
        // A temporary file in the same directory (created private to the
        // user), synced, then renamed over the store: a reader sees the
        // old file or the new one, never a part.
        let mut tmp =
            tempfile::NamedTempFile::new_in(dir).map_err(|e| self.io_error("write", &e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o600))
                .map_err(|e| self.io_error("write", &e))?;
        }
        tmp.write_all(text.as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| self.io_error("write", &e))?;
        tmp.persist(&self.path)
            .map_err(|e| self.io_error("write", &e.error))?;
        Ok(())
    }

    fn io_error(&self, action: &str, e: &std::io::Error) -> Diagnostic {
        Diagnostic::error(
            "secrets.store-io",
            format!(
                "could not {action} the secret store {}",
                self.path.display()
            ),
            format!("the system reported: {e}"),
            "check that the data directory exists and belongs to you (or set SMITH_HOME)",
        )
        .with_surface(Surface::file(&self.path))
    }
}

/// Every secret a runtime started now would register, registered under
/// the key kept in `data_dir` (for `smith secret list`): names, sources,
/// fingerprints. Problems come back as warnings.
pub fn visible(data_dir: &Path) -> (Vec<Registration>, Vec<Diagnostic>) {
    let store = AuthStore::in_data_dir(data_dir);
    let user = UserSecrets::in_data_dir(data_dir);
    let (found, mut warnings) =
        credentials(&|name| std::env::var(name).ok(), Some(&store), Some(&user));
    if found.is_empty() {
        return (Vec::new(), warnings);
    }
    let key = match fingerprint_key(data_dir) {
        Ok(key) => key,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let registry = register_all(key, found, &mut warnings);
    (registry.registrations().cloned().collect(), warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI: &str = "sk-proj-test-0123456789abcdef";
    const GOOGLE: &str = "AIzaSyTest0123456789abcdefghij";
    const STORED: &str = "sk-ant-stored-0123456789abcdef";
    const ACCESS: &str = "oauth-access-0123456789abcdef";
    const REFRESH: &str = "oauth-refresh-0123456789abcdef";

    #[test]
    fn the_fingerprint_key_is_kept_private_and_reused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = dir.path().join("data");
        let first = fingerprint_key(&data).unwrap_or_else(|d| panic!("{d:?}"));
        let second = fingerprint_key(&data).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(first.id(), second.id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(data.join(KEY_FILE))
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or_default();
            assert_eq!(mode, 0o600);
        }
        std::fs::write(data.join(KEY_FILE), "not a key\n").unwrap_or_else(|e| panic!("{e}"));
        let refused = fingerprint_key(&data)
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(refused.code(), "secrets.key-unreadable");
        assert!(refused.next().contains("delete"), "{refused:?}");
    }

    #[test]
    fn every_provider_environment_variable_and_stored_credential_is_registered() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = AuthStore::in_data_dir(dir.path());
        store
            .set(
                "anthropic",
                "api_key",
                &Credential::ApiKey(smith_auth::Secret::new(STORED)),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        store
            .set(
                "acme",
                "oauth",
                &Credential::OAuth(smith_auth::OAuthToken {
                    access: smith_auth::Secret::new(ACCESS),
                    refresh: Some(smith_auth::Secret::new(REFRESH)),
                    expires_at: None,
                }),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        let env = |name: &str| match name {
            "OPENAI_API_KEY" => Some(format!("{OPENAI}\n")),
            "GOOGLE_API_KEY" => Some(GOOGLE.to_owned()),
            "ANTHROPIC_API_KEY" => Some("short".to_owned()),
            _ => None,
        };
        let key = FingerprintKey::from_bytes([1; 32]);
        let (registry, warnings) = registry(key, &env, Some(&store), None);
        let names: Vec<String> = registry
            .registrations()
            .map(|r| format!("{} {}", r.name, r.source))
            .collect();
        assert_eq!(
            names,
            [
                "openai.api_key env:OPENAI_API_KEY",
                "google.api_key env:GOOGLE_API_KEY",
                "acme.oauth auth:acme.oauth",
                "acme.oauth.refresh auth:acme.oauth",
                "anthropic.api_key auth:anthropic.api_key",
            ]
        );
        // The 5-byte value was refused, and the warning does not show it.
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].code(), "secrets.too-short");
        let redactor = registry.redactor();
        let text = format!("{OPENAI} {GOOGLE} {STORED} {ACCESS} {REFRESH}");
        assert_eq!(
            redactor.redact_str(&text),
            "{secret:openai.api_key} {secret:google.api_key} {secret:anthropic.api_key} {secret:acme.oauth} {secret:acme.oauth.refresh}"
        );
    }
    #[test]
    fn the_user_store_is_private_refuses_short_values_and_forgets_on_remove() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = UserSecrets::in_data_dir(dir.path());
        assert!(store.list().unwrap_or_else(|d| panic!("{d:?}")).is_empty());
        let refused = store
            .add("x.y", "Zq9!x", &[])
            .err()
            .unwrap_or_else(|| panic!("accepted a 5-byte value"));
        assert_eq!(refused.code(), "secrets.too-short");
        assert!(!format!("{refused:?}").contains("Zq9!x"), "{refused:?}");
        store
            .add("github.token", STORED, &["bash".to_owned()])
            .unwrap_or_else(|d| panic!("{d:?}"));
        store
            .add("other.token", ACCESS, &[])
            .unwrap_or_else(|d| panic!("{d:?}"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(store.path())
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or_default();
            assert_eq!(mode, 0o600);
        }
        let listed = store.list().unwrap_or_else(|d| panic!("{d:?}"));
        let names: Vec<(&str, &[String])> = listed
            .iter()
            .map(|s| (s.name.as_str(), s.allow.as_slice()))
            .collect();
        assert_eq!(
            names,
            [
                ("github.token", &["bash".to_owned()][..]),
                ("other.token", &[][..])
            ]
        );
        assert!(!format!("{listed:?}").contains(STORED));
        let (registry, warnings) = registry(
            FingerprintKey::from_bytes([2; 32]),
            &|_| None,
            None,
            Some(&store),
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let sources: Vec<String> = registry
            .registrations()
            .map(|r| format!("{} {}", r.name, r.source))
            .collect();
        assert_eq!(sources, ["github.token user", "other.token user"]);
        assert!(
            store
                .remove("github.token")
                .unwrap_or_else(|d| panic!("{d:?}"))
        );
        assert!(
            !store
                .remove("github.token")
                .unwrap_or_else(|d| panic!("{d:?}"))
        );
        assert_eq!(store.list().map(|l| l.len()).unwrap_or_default(), 1);
    }

    fn runtime(registry: Registry) -> RuntimeSecrets {
        RuntimeSecrets {
            redactor: registry.redactor(),
            registry: Arc::new(Mutex::new(registry)),
            user_routes: Arc::new(vec![("bash".to_owned(), "user.token".to_owned())]),
            journal: Arc::new(Mutex::new(None)),
        }
    }

    #[test]
    fn a_plugin_secret_is_redacted_by_the_redactor_already_handed_out() {
        let secrets = runtime(Registry::new(FingerprintKey::from_bytes([4; 32])));
        let redactor = secrets.redactor();
        assert!(redactor.is_empty());
        let registration = secrets
            .register_plugin_secret("acme/login", ACCESS)
            .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(registration.name, "plugin.acme-login.1");
        assert_eq!(registration.source.to_string(), "plugin:acme/login");
        assert_eq!(
            redactor.redact_str(&format!("token {ACCESS}")),
            "token {secret:plugin.acme-login.1}"
        );
        let second = secrets
            .register_plugin_secret("acme/login", REFRESH)
            .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(second.name, "plugin.acme-login.2");
        let refused = secrets
            .register_plugin_secret("acme/login", "tiny")
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(refused.code(), "secrets.too-short");
        assert_eq!(secrets.registrations().len(), 2);
    }

    #[test]
    fn registrations_made_while_the_runtime_runs_are_recorded_in_its_session() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = smith_store::Store::open(dir.path()).unwrap_or_else(|e| panic!("{e:?}"));
        let session = store.create(Some("s")).unwrap_or_else(|e| panic!("{e:?}"));
        let journal = Arc::new(StoreJournal::new(store.clone(), session));
        let secrets = runtime(Registry::new(FingerprintKey::from_bytes([6; 32])));
        secrets.record_later(Arc::clone(&journal));
        secrets
            .register_plugin_secret("acme/login", ACCESS)
            .unwrap_or_else(|d| panic!("{d:?}"));
        secrets
            .register_resolved("acme.token", REFRESH)
            .unwrap_or_else(|d| panic!("{d:?}"));
        // Both are in the session already: recording them again adds
        // nothing.
        let again = journal
            .record_secret_registrations(&secrets.registrations())
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(again, 0);
        let loaded = store.load("s").unwrap_or_else(|e| panic!("{e:?}"));
        let bytes = std::fs::read(store.path_of(loaded.id())).unwrap_or_else(|e| panic!("{e}"));
        assert!(!bytes.is_empty());
        for value in [ACCESS, REFRESH] {
            assert!(!bytes.windows(value.len()).any(|w| w == value.as_bytes()));
        }
    }

    fn option(
        key: &str,
        schema: serde_json::Value,
        default: serde_json::Value,
    ) -> smith_config::plugin::PluginOption {
        smith_config::plugin::PluginOption {
            plugin: "acme/deploy".into(),
            builtin: false,
            key: key.into(),
            description: "An option.".into(),
            schema,
            default,
        }
    }

    #[test]
    fn credential_options_are_registered_and_routes_need_a_grant() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = smith_config::Loader::new(smith_config::Paths::under(dir.path()))
            .plugin_option(option(
                "deploy.api-key",
                serde_json::json!({"type": "string"}),
                serde_json::json!(STORED),
            ))
            .plugin_option(option(
                "deploy.login",
                serde_json::json!({"type": "string", "writeOnly": true}),
                serde_json::json!(ACCESS),
            ))
            .plugin_option(option(
                "deploy.greeting",
                serde_json::json!({"type": "string"}),
                serde_json::json!("hello there, not a secret"),
            ))
            .plugin_option(option(
                "deploy.secret-routes",
                serde_json::json!({"type": "array"}),
                serde_json::json!([
                    {"secret": "github.token", "tool": "bash"},
                    {"secret": "anthropic.api_key", "tool": "bash"},
                    {"secret": "plugin.acme-deploy.1", "tool": "deploy_run"},
                    "bash"
                ]),
            ))
            .load()
            .unwrap_or_else(|e| panic!("{e:?}"));
        let mut registry = Registry::new(FingerprintKey::from_bytes([5; 32]));
        for (name, value) in [
            ("github.token", OPENAI),
            ("anthropic.api_key", GOOGLE),
            ("user.token", REFRESH),
        ] {
            registry
                .register(name, value, Source::User)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let secrets = runtime(registry);
        let grants = |plugin: &str| {
            if plugin == "acme/deploy" {
                vec!["github.token".to_owned()]
            } else {
                Vec::new()
            }
        };
        let warnings = secrets.apply_config(&config, &grants);
        let codes: Vec<&str> = warnings.iter().map(Diagnostic::code).collect();
        assert_eq!(
            codes,
            ["secrets.route-not-granted", "secrets.bad-route"],
            "{warnings:?}"
        );
        assert!(!format!("{warnings:?}").contains(GOOGLE));
        let sources: Vec<String> = secrets
            .registrations()
            .iter()
            .map(|r| format!("{} {}", r.name, r.source))
            .collect();
        assert_eq!(
            &sources[3..],
            [
                "deploy.api-key config:deploy.api-key",
                "deploy.login config:deploy.login"
            ]
        );
        let redactor = secrets.redactor();
        assert_eq!(
            redactor.redact_str(&format!("{STORED} {ACCESS}")),
            "{secret:deploy.api-key} {secret:deploy.login}"
        );
        let input = serde_json::json!({"command": "run {secret:github.token} {secret:anthropic.api_key} {secret:user.token}"});
        let run = redactor
            .substitute_json(&input, "bash")
            .unwrap_or_else(|| panic!("placeholders"));
        assert_eq!(
            run.input()["command"],
            format!("run {OPENAI} {{secret:anthropic.api_key}} {REFRESH}")
        );
        assert!(
            redactor
                .substitute_json(&input, "read")
                .is_some_and(|r| r.used().is_empty())
        );
    }
}
