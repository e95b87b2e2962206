//! The live catalog: layered sources merged into published snapshots.
//!
//! Sources, from most to least authoritative:
//!
//! 1. [`Source::User`] — the user's own model entries (configuration);
//! 2. [`Source::Bundled`] — the reviewed catalog checked in with smith;
//! 3. [`Source::Refresh`] — what a provider reported at runtime, or
//!    [`Source::Cache`] — what a provider reported on an earlier run.
//!
//! For each model field the most authoritative source that states it wins.
//! When a less authoritative source states a different value, the snapshot
//! lists a [`Conflict`] naming both; nothing is overwritten silently.
//!
//! Readers take the current [`Snapshot`] (an `Arc`, never locked while
//! read). A refresh runs on its own thread; it publishes a whole new
//! snapshot at once, or nothing. A refresh that began before a newer
//! publication of the same provider's data is rejected as stale, a cancelled
//! one publishes nothing, and a failed one leaves the current snapshot in
//! place.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use serde::Serialize;
use smith_diag::Diagnostic;

use crate::model::{Field, ModelInfo};

/// Where a model field's value came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The user's configuration (always wins).
    User,
    /// The reviewed catalog shipped with smith.
    Bundled,
    /// A provider refresh during this run.
    Refresh,
    /// A provider refresh from an earlier run, read from the cache.
    Cache,
}

impl Source {
    /// The source's name in reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Bundled => "bundled",
            Source::Refresh => "refresh",
            Source::Cache => "cache",
        }
    }
}

/// Two sources state different values for one field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    /// `provider/id` of the model.
    pub model: String,
    /// The field.
    pub field: Field,
    /// The source whose value was kept, and the value.
    pub kept: (Source, String),
    /// The source whose value was not used, and the value.
    pub ignored: (Source, String),
}

impl Conflict {
    /// A warning diagnostic describing the conflict.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::warning(
            "catalog.conflict",
            format!(
                "{} of `{}` is {} per {} but {} per {}",
                self.field,
                self.model,
                self.kept.1,
                self.kept.0.as_str(),
                self.ignored.1,
                self.ignored.0.as_str()
            ),
            format!(
                "the {} value is kept because {} data outranks {} data",
                self.kept.0.as_str(),
                self.kept.0.as_str(),
                self.ignored.0.as_str()
            ),
            "review the entry; if the other value is right, change your models.kdl (or report the bundled entry)",
        )
    }
}

/// One model in a snapshot, with where each stated field came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The merged model.
    pub model: ModelInfo,
    /// The source of each stated field.
    pub provenance: BTreeMap<Field, Source>,
}

/// Where one provider's runtime data in a snapshot came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeData {
    /// [`Source::Refresh`] (this run) or [`Source::Cache`] (an earlier run).
    pub source: Source,
    /// When the provider was asked, in seconds since the Unix epoch, if
    /// known (a cache file written before times were kept has none).
    pub refreshed_at: Option<u64>,
    /// How many models the provider reported.
    pub models: usize,
}

/// A coherent, immutable view of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Increases by one with every publication.
    pub generation: u64,
    /// Every model, sorted by provider then id.
    pub entries: Vec<Entry>,
    /// Every disagreement between sources.
    pub conflicts: Vec<Conflict>,
    /// Per provider with runtime data (a refresh or the cache): where it
    /// came from and when.
    pub runtime: BTreeMap<String, RuntimeData>,
}

impl Snapshot {
    /// The model `provider/id`, if listed.
    pub fn get(&self, provider: &str, id: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| {
                (e.model.provider.as_str(), e.model.id.as_str()).cmp(&(provider, id))
            })
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// The models of one provider.
    pub fn provider<'a>(&'a self, provider: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries
            .iter()
            .filter(move |e| e.model.provider == provider)
    }

    /// What the model's family suggests when `provider/id` states nothing
    /// itself: the listed model of the same provider whose id shares the
    /// longest run of leading `-`-separated words with `id` (at least two).
    ///
    /// This is inference from a name, so it only fills fields that the model
    /// itself leaves unknown (see [`crate::gate::effective`]).
    pub fn family_of<'a>(&'a self, provider: &'a str, id: &str) -> Option<&'a ModelInfo> {
        let words: Vec<&str> = id.split('-').collect();
        let mut best: Option<(usize, &ModelInfo)> = None;
        for e in self.provider(provider) {
            if e.model.id == id {
                continue;
            }
            let shared = e
                .model
                .id
                .split('-')
                .zip(&words)
                .take_while(|(a, b)| a == *b)
                .count();
            if shared >= 2 && best.is_none_or(|(n, _)| shared > n) {
                best = Some((shared, &e.model));
            }
        }
        best.map(|(_, m)| m)
    }
}

/// Layers of source data a snapshot is merged from.
#[derive(Debug, Clone, Default)]
struct Layers {
    user: Vec<ModelInfo>,
    bundled: Vec<ModelInfo>,
    /// Per provider: its runtime data (refresh or cache).
    runtime: BTreeMap<String, Runtime>,
}

/// One provider's runtime data.
#[derive(Debug, Clone)]
struct Runtime {
    source: Source,
    models: Vec<ModelInfo>,
    /// The generation at which it was published (0 for cache data).
    published: u64,
    /// When the provider was asked (seconds since the Unix epoch).
    refreshed_at: Option<u64>,
}

/// The current time in seconds since the Unix epoch (0 if the clock is
/// before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn merge(layers: &Layers, generation: u64) -> Snapshot {
    type Key = (String, String);
    let mut stack: BTreeMap<Key, Vec<(Source, &ModelInfo)>> = BTreeMap::new();
    // Highest authority first; each layer's stated fields fill the gaps.
    let mut sources: Vec<(Source, &[ModelInfo])> = vec![
        (Source::User, &layers.user),
        (Source::Bundled, &layers.bundled),
    ];
    for r in layers.runtime.values() {
        sources.push((r.source.clone(), &r.models));
    }
    for (source, models) in &sources {
        for m in *models {
            stack
                .entry((m.provider.clone(), m.id.clone()))
                .or_default()
                .push((source.clone(), m));
        }
    }
    let mut entries = Vec::with_capacity(stack.len());
    let mut conflicts = Vec::new();
    for ((provider, id), layers) in stack {
        let mut model = ModelInfo::new(&provider, &id);
        let mut provenance = BTreeMap::new();
        for field in Field::ALL {
            let mut kept: Option<(Source, String)> = None;
            for (source, m) in &layers {
                let Some(value) = field.render(m) else {
                    continue;
                };
                match &kept {
                    None => {
                        field.copy(m, &mut model);
                        provenance.insert(field, source.clone());
                        kept = Some((source.clone(), value));
                    }
                    Some(k) if k.1 != value => conflicts.push(Conflict {
                        model: format!("{provider}/{id}"),
                        field,
                        kept: k.clone(),
                        ignored: (source.clone(), value),
                    }),
                    Some(_) => {}
                }
            }
        }
        entries.push(Entry { model, provenance });
    }
    let runtime = layers
        .runtime
        .iter()
        .map(|(provider, r)| {
            (
                provider.clone(),
                RuntimeData {
                    source: r.source.clone(),
                    refreshed_at: r.refreshed_at,
                    models: r.models.len(),
                },
            )
        })
        .collect();
    Snapshot {
        generation,
        entries,
        conflicts,
        runtime,
    }
}

/// The cancellation flag shared between a refresh and whoever may cancel
/// it: the one token of `smith-contract`. A cancelled refresh publishes
/// nothing.
pub use smith_contract::CancelToken;

/// Permission to publish one provider's refresh, taken when the refresh
/// starts.
#[derive(Debug, Clone)]
pub struct RefreshTicket {
    provider: String,
    /// The generation current when the refresh began.
    based_on: u64,
    /// When the refresh began (seconds since the Unix epoch).
    began_at: u64,
    cancel: CancelToken,
}

impl RefreshTicket {
    /// The provider being refreshed.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The token that cancels this refresh.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }
}

/// How a refresh ended.
#[derive(Debug, Clone)]
pub enum RefreshOutcome {
    /// Published as this generation.
    Published(u64),
    /// Newer data for the provider was published after this refresh began;
    /// the newer data stays.
    Stale {
        /// The generation the refresh began from.
        began_at: u64,
        /// The generation at which the newer data was published.
        newer: u64,
    },
    /// Cancelled before publication.
    Cancelled,
    /// The provider could not be asked; the current snapshot stays.
    Failed(Diagnostic),
}

/// The catalog: the current snapshot and the layers it is built from.
#[derive(Debug, Clone)]
pub struct Catalog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    current: Mutex<Arc<Snapshot>>,
    layers: Mutex<Layers>,
    last_error: Mutex<Option<Diagnostic>>,
}

impl Catalog {
    /// A catalog of the given bundled models, with nothing else yet.
    /// Never blocks and never touches the network.
    pub fn new(bundled: Vec<ModelInfo>) -> Catalog {
        let layers = Layers {
            bundled,
            ..Layers::default()
        };
        let snapshot = merge(&layers, 0);
        Catalog {
            inner: Arc::new(Inner {
                current: Mutex::new(Arc::new(snapshot)),
                layers: Mutex::new(layers),
                last_error: Mutex::new(None),
            }),
        }
    }

    /// The current snapshot. Cheap: an `Arc` clone under a short lock.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(
            &self
                .inner
                .current
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The problem with the most recent failed refresh, if any.
    pub fn last_refresh_error(&self) -> Option<Diagnostic> {
        self.inner
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the user's model entries (they always win) and publishes.
    pub fn set_user(&self, models: Vec<ModelInfo>) -> u64 {
        self.publish_with(|layers| layers.user = models)
    }

    /// Loads a provider's data saved by an earlier run ([`Source::Cache`]).
    /// Ignored when this run already has fresher data for the provider.
    pub fn load_cached(&self, provider: &str, models: Vec<ModelInfo>) -> u64 {
        self.load_cached_at(provider, models, None)
    }

    /// Like [`Catalog::load_cached`], with the time the provider was asked
    /// (seconds since the Unix epoch), for provenance reports.
    pub fn load_cached_at(
        &self,
        provider: &str,
        models: Vec<ModelInfo>,
        refreshed_at: Option<u64>,
    ) -> u64 {
        self.publish_with(|layers| {
            let fresher = layers
                .runtime
                .get(provider)
                .is_some_and(|r| r.source == Source::Refresh);
            if !fresher {
                layers.runtime.insert(
                    provider.to_owned(),
                    Runtime {
                        source: Source::Cache,
                        models,
                        published: 0,
                        refreshed_at,
                    },
                );
            }
        })
    }

    /// The runtime data currently held for `provider` (for saving to the
    /// cache after a refresh).
    pub fn runtime_models(&self, provider: &str) -> Option<(Source, Vec<ModelInfo>)> {
        self.runtime_data(provider).map(|(s, m, _)| (s, m))
    }

    /// Like [`Catalog::runtime_models`], with when the provider was asked.
    pub fn runtime_data(&self, provider: &str) -> Option<(Source, Vec<ModelInfo>, Option<u64>)> {
        let layers = self
            .inner
            .layers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        layers
            .runtime
            .get(provider)
            .map(|r| (r.source.clone(), r.models.clone(), r.refreshed_at))
    }

    fn publish_with(&self, change: impl FnOnce(&mut Layers)) -> u64 {
        let mut layers = self
            .inner
            .layers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        change(&mut layers);
        let mut current = self
            .inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let generation = current.generation + 1;
        *current = Arc::new(merge(&layers, generation));
        generation
    }

    /// Starts a refresh of `provider`: the ticket records the current
    /// generation so a later, newer publication makes this one stale.
    pub fn begin_refresh(&self, provider: &str) -> RefreshTicket {
        RefreshTicket {
            provider: provider.to_owned(),
            based_on: self.snapshot().generation,
            began_at: unix_now(),
            cancel: CancelToken::new(),
        }
    }

    /// Publishes a refresh's result for the ticket's provider, unless it was
    /// cancelled or is stale. Models of other providers in `models` are
    /// dropped: a provider speaks only for itself.
    pub fn publish_refresh(
        &self,
        ticket: &RefreshTicket,
        models: Vec<ModelInfo>,
    ) -> RefreshOutcome {
        let mut layers = self
            .inner
            .layers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if ticket.cancel.is_cancelled() {
            return RefreshOutcome::Cancelled;
        }
        if let Some(r) = layers.runtime.get(&ticket.provider)
            && r.source == Source::Refresh
            && r.published > ticket.based_on
        {
            return RefreshOutcome::Stale {
                began_at: ticket.based_on,
                newer: r.published,
            };
        }
        let mut current = self
            .inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let generation = current.generation + 1;
        let models = models
            .into_iter()
            .filter(|m| m.provider == ticket.provider)
            .collect();
        layers.runtime.insert(
            ticket.provider.clone(),
            Runtime {
                source: Source::Refresh,
                models,
                published: generation,
                refreshed_at: Some(ticket.began_at),
            },
        );
        *current = Arc::new(merge(&layers, generation));
        *self
            .inner
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        RefreshOutcome::Published(generation)
    }

    /// Records a failed refresh; the current snapshot stays in use.
    pub fn refresh_failed(&self, ticket: &RefreshTicket, diagnostic: Diagnostic) -> RefreshOutcome {
        if ticket.cancel.is_cancelled() {
            return RefreshOutcome::Cancelled;
        }
        *self
            .inner
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(diagnostic.clone());
        RefreshOutcome::Failed(diagnostic)
    }

    /// Refreshes `provider` on a new thread and returns at once. `fetch`
    /// asks the provider for its models; it should check the token between
    /// steps and give up when cancelled.
    pub fn spawn_refresh<F>(&self, provider: &str, fetch: F) -> RefreshHandle
    where
        F: FnOnce(&CancelToken) -> Result<Vec<ModelInfo>, Diagnostic> + Send + 'static,
    {
        let ticket = self.begin_refresh(provider);
        let cancel = ticket.cancel.clone();
        let catalog = self.clone();
        let thread = std::thread::spawn(move || match fetch(&ticket.cancel) {
            Ok(models) => catalog.publish_refresh(&ticket, models),
            Err(d) => catalog.refresh_failed(&ticket, d),
        });
        RefreshHandle {
            cancel,
            thread: Some(thread),
        }
    }
}

/// A refresh running on its own thread.
#[derive(Debug)]
pub struct RefreshHandle {
    cancel: CancelToken,
    thread: Option<JoinHandle<RefreshOutcome>>,
}

impl RefreshHandle {
    /// Cancels the refresh: whatever it fetches is not published.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for the refresh to end and returns its outcome. A refresh
    /// whose thread panicked is reported as failed.
    pub fn join(mut self) -> RefreshOutcome {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(outcome)) => outcome,
            _ => RefreshOutcome::Failed(Diagnostic::error(
                "catalog.refresh-panicked",
                "a catalog refresh stopped abnormally",
                "the code asking the provider for its models panicked",
                "the bundled or cached catalog stays in use; report the problem with the provider plugin",
            )),
        }
    }
}
