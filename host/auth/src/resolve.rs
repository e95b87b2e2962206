//! Resolving a provider's credential before dispatch.
//!
//! Sources, first match wins:
//!
//! 1. explicit configuration ([`Resolver::explicit`]);
//! 2. the environment variables the slot's provider description names;
//! 3. smith's auth store;
//! 4. provider plugins ([`PluginSource`]).
//!
//! An OAuth token that has expired (or expires within the skew, 60 s by
//! default) and carries a refresh token is renewed through the provider's
//! [`Refresher`] before it is returned; a renewed stored token is written
//! back under the store's lock, so concurrent processes renew it once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use smith_diag::{Diagnostic, Surface};

use crate::secret::{Credential, OAuthToken, Secret, Slot};
use crate::store::AuthStore;

/// Seconds since the Unix epoch. Tests substitute a fake.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// Renews an expired OAuth token (supplied by the provider plugin).
pub trait Refresher: Send + Sync {
    /// Exchanges `token`'s refresh token for a new token set.
    ///
    /// # Errors
    ///
    /// A diagnostic when the provider refuses or cannot be reached.
    fn refresh(&self, slot: &Slot, token: &OAuthToken) -> Result<OAuthToken, Diagnostic>;
}

/// A provider plugin that can supply credentials itself.
pub trait PluginSource: Send + Sync {
    /// The plugin's name, for status reports.
    fn name(&self) -> &str;
    /// The credential for `slot`, if the plugin has one.
    fn credential(&self, slot: &Slot) -> Option<Credential>;
}

/// Where a credential came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Explicit configuration.
    Config,
    /// This environment variable.
    Env(String),
    /// smith's auth store at this path.
    Store(PathBuf),
    /// This provider plugin.
    Plugin(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Config => f.write_str("configuration"),
            Origin::Env(v) => write!(f, "environment variable {v}"),
            Origin::Store(p) => write!(f, "auth store {}", p.display()),
            Origin::Plugin(n) => write!(f, "plugin {n}"),
        }
    }
}

/// A resolved credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The credential, ready to send.
    pub credential: Credential,
    /// Where it came from.
    pub origin: Origin,
    /// Whether it was renewed during resolution.
    pub renewed: bool,
}

/// The state of one slot, without its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotStatus {
    /// `provider.slot`.
    pub handle: String,
    /// The credential found, if any: its origin, kind and expiry.
    pub found: Option<(Origin, &'static str, Option<u64>)>,
    /// `ready`, `renewable` (expired, will renew before use), `expired`, or
    /// `missing`.
    pub state: &'static str,
}

/// Reads one environment variable.
type EnvReader = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Resolves credentials from every source.
pub struct Resolver {
    slots: Vec<Slot>,
    env: EnvReader,
    store: Option<AuthStore>,
    explicit: BTreeMap<(String, String), Credential>,
    plugins: Vec<Box<dyn PluginSource>>,
    refreshers: BTreeMap<String, Arc<dyn Refresher>>,
    clock: Arc<dyn Clock>,
    skew: u64,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("slots", &self.slots)
            .field("store", &self.store)
            .field("explicit", &self.explicit)
            .finish_non_exhaustive()
    }
}

impl Resolver {
    /// A resolver for `slots` (from the provider descriptions) reading the
    /// process environment, with no store, plugins or refreshers yet.
    pub fn new(slots: Vec<Slot>) -> Resolver {
        Resolver {
            slots,
            env: Box::new(|name| std::env::var(name).ok()),
            store: None,
            explicit: BTreeMap::new(),
            plugins: Vec::new(),
            refreshers: BTreeMap::new(),
            clock: Arc::new(SystemClock),
            skew: 60,
        }
    }

    /// Reads environment variables through `env` instead.
    pub fn env(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Resolver {
        self.env = Box::new(env);
        self
    }

    /// Uses `store`.
    pub fn store(mut self, store: AuthStore) -> Resolver {
        self.store = Some(store);
        self
    }

    /// Sets a credential from explicit configuration.
    pub fn explicit(mut self, provider: &str, slot: &str, credential: Credential) -> Resolver {
        self.explicit
            .insert((provider.to_owned(), slot.to_owned()), credential);
        self
    }

    /// Adds a plugin credential source.
    pub fn plugin(mut self, plugin: Box<dyn PluginSource>) -> Resolver {
        self.plugins.push(plugin);
        self
    }

    /// Renews `provider`'s expired tokens with `refresher`.
    pub fn refresher(mut self, provider: &str, refresher: Arc<dyn Refresher>) -> Resolver {
        self.refreshers.insert(provider.to_owned(), refresher);
        self
    }

    /// Uses `clock` instead of the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Resolver {
        self.clock = clock;
        self
    }

    /// The described slots.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    fn slot(&self, provider: &str, slot: &str) -> Slot {
        self.slots
            .iter()
            .find(|s| s.provider == provider && s.slot == slot)
            .cloned()
            .unwrap_or_else(|| Slot::new(provider, slot, &[], crate::CredentialKind::ApiKey))
    }

    /// Finds the credential without renewing it.
    fn find(&self, slot: &Slot) -> Result<Option<(Credential, Origin)>, Diagnostic> {
        if let Some(c) = self
            .explicit
            .get(&(slot.provider.clone(), slot.slot.clone()))
        {
            return Ok(Some((c.clone(), Origin::Config)));
        }
        for var in &slot.env {
            if let Some(v) = (self.env)(var).filter(|v| !v.trim().is_empty()) {
                let secret = Secret::new(v.trim());
                let c = match slot.kind {
                    crate::CredentialKind::ApiKey => Credential::ApiKey(secret),
                    crate::CredentialKind::OAuth => Credential::OAuth(OAuthToken {
                        access: secret,
                        refresh: None,
                        expires_at: None,
                    }),
                };
                return Ok(Some((c, Origin::Env(var.clone()))));
            }
        }
        if let Some(store) = &self.store
            && let Some(c) = store.get(&slot.provider, &slot.slot)?
        {
            return Ok(Some((c, Origin::Store(store.path().to_path_buf()))));
        }
        for p in &self.plugins {
            if let Some(c) = p.credential(slot) {
                return Ok(Some((c, Origin::Plugin(p.name().to_owned()))));
            }
        }
        Ok(None)
    }

    fn expired(&self, c: &Credential) -> bool {
        c.expires_at()
            .is_some_and(|at| at <= self.clock.now().saturating_add(self.skew))
    }

    /// The credential for `provider`'s `slot`, renewed first if it has
    /// expired. Call before dispatch; it needs no model request.
    ///
    /// # Errors
    ///
    /// When no source has it, or it expired and cannot be renewed.
    pub fn resolve(&self, provider: &str, slot: &str) -> Result<Resolved, Diagnostic> {
        let slot = self.slot(provider, slot);
        let Some((credential, origin)) = self.find(&slot)? else {
            return Err(self.missing(&slot));
        };
        if !self.expired(&credential) {
            return Ok(Resolved {
                credential,
                origin,
                renewed: false,
            });
        }
        let Credential::OAuth(token) = &credential else {
            return Ok(Resolved {
                credential,
                origin,
                renewed: false,
            });
        };
        let handle = slot.handle();
        let Some(refresher) = self.refreshers.get(&slot.provider) else {
            return Err(self.expired_error(
                &slot,
                &origin,
                "no renewal is available for this provider",
            ));
        };
        if token.refresh.is_none() {
            return Err(self.expired_error(&slot, &origin, "it carries no refresh token"));
        }
        let renew = |t: &OAuthToken| -> Result<Credential, Diagnostic> {
            refresher
                .refresh(&slot, t)
                .map(Credential::OAuth)
                .map_err(|d| {
                    Diagnostic::error(
                        "auth.renew-failed",
                        format!("renewing the expired credential `{handle}` failed"),
                        format!("the provider answered: {}", d.what()),
                        format!(
                            "sign in again and store the new credential with `smith auth set {}`",
                            slot.provider
                        ),
                    )
                    .with_surface(Surface::other(origin.to_string()))
                })
        };
        let renewed = match (&origin, &self.store) {
            (Origin::Store(_), Some(store)) => {
                // Under the store's lock: another process may have renewed
                // it already, in which case its token is used as is.
                store.modify(&slot.provider, &slot.slot, |current| match current {
                    Some(c) if !self.expired(&c) => Ok(c),
                    Some(Credential::OAuth(t)) => renew(&t),
                    _ => renew(token),
                })?
            }
            _ => renew(token)?,
        };
        Ok(Resolved {
            credential: renewed,
            origin,
            renewed: true,
        })
    }

    /// The state of every described slot and every stored one, without
    /// values, network access or renewal.
    ///
    /// # Errors
    ///
    /// When the auth store cannot be read.
    pub fn status(&self) -> Result<Vec<SlotStatus>, Diagnostic> {
        let mut slots = self.slots.clone();
        if let Some(store) = &self.store {
            for (p, s) in store.list()? {
                if !slots.iter().any(|x| x.provider == p && x.slot == s) {
                    slots.push(self.slot(&p, &s));
                }
            }
        }
        slots.sort_by(|a, b| (&a.provider, &a.slot).cmp(&(&b.provider, &b.slot)));
        let mut out = Vec::new();
        for slot in slots {
            let found = self.find(&slot)?;
            let state = match &found {
                None => "missing",
                Some((c, _)) if !self.expired(c) => "ready",
                Some((Credential::OAuth(t), _))
                    if t.refresh.is_some() && self.refreshers.contains_key(&slot.provider) =>
                {
                    "renewable"
                }
                Some(_) => "expired",
            };
            out.push(SlotStatus {
                handle: slot.handle(),
                found: found.map(|(c, o)| (o, c.kind().as_str(), c.expires_at())),
                state,
            });
        }
        Ok(out)
    }

    fn missing(&self, slot: &Slot) -> Diagnostic {
        let env = if slot.env.is_empty() {
            String::new()
        } else {
            format!("export {}=…, or ", slot.env[0])
        };
        Diagnostic::error(
            "auth.missing",
            format!("no credential for `{}`", slot.handle()),
            format!(
                "none was found in the configuration, {}the auth store, or a provider plugin",
                if slot.env.is_empty() {
                    String::new()
                } else {
                    format!("the environment ({}), ", slot.env.join(", "))
                }
            ),
            format!(
                "{env}run `smith auth set {} --slot {}` and paste the key",
                slot.provider, slot.slot
            ),
        )
        .with_value(slot.handle())
    }

    fn expired_error(&self, slot: &Slot, origin: &Origin, why: &str) -> Diagnostic {
        Diagnostic::error(
            "auth.expired",
            format!(
                "the credential `{}` from {origin} has expired",
                slot.handle()
            ),
            format!("it cannot be renewed: {why}"),
            format!(
                "sign in again and store the new credential with `smith auth set {}`",
                slot.provider
            ),
        )
        .with_value(slot.handle())
    }
}
