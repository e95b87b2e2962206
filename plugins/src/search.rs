//! Search provider plugins (the `search-provider-plugin` world): `ready`
//! and `search`, asked by the host's `web-search` on behalf of smith/web's
//! `web_search`. [`SearchProviders`] holds the enabled ones, in load order
//! (the built-ins smith/searxng and smith/brave, then installed plugins),
//! each loaded on first use, and picks the one the configuration chooses.

use std::sync::{Arc, Mutex};

use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker};

use crate::bindings::provider::smith::plugin::host::SearchHit;
use crate::bindings::search::{SearchProviderPlugin, SearchProviderPluginPre};
use crate::component::{Instance, LeftLog, PluginComponent, World};
use crate::effects::Effects;
use crate::error::{Phase, PluginError};
use crate::runtime::{CallControl, Limits, Runtime, State, call_error};
use crate::scope::plugin_scope;

/// The search provider world of the contract.
#[derive(Debug, Clone, Copy)]
pub struct SearchWorld;

impl World for SearchWorld {
    const NAME: &'static str = "search-provider";
    const TYPE_NAME: &'static str = "SearchComponent";
    type Pre = SearchProviderPluginPre<State>;

    fn linker(runtime: &Runtime) -> &Linker<State> {
        // The world imports the host interface and WASI, as the extension
        // world does: the same linker serves it.
        &runtime.extension_linker
    }

    fn typed(pre: InstancePre<State>) -> wasmtime::Result<Self::Pre> {
        SearchProviderPluginPre::new(pre)
    }
}

/// A compiled, pre-instantiated search provider component.
pub type SearchComponent = PluginComponent<SearchWorld>;

impl PluginComponent<SearchWorld> {
    /// A fresh instance whose host effects run through `effects` (its
    /// grants, journal and HTTP engine).
    ///
    /// # Errors
    ///
    /// When instantiation fails.
    pub fn instantiate_with(&self, effects: Option<Effects>) -> Result<WasmSearch, PluginError> {
        let runtime = Runtime::global()?;
        let control = Arc::new(CallControl::default());
        let scope = plugin_scope(&self.name);
        let (store, instance) = {
            let _guard = scope.enter();
            let mut store =
                runtime.new_store(&self.name, self.limits, Arc::clone(&control), effects);
            runtime.arm(&control, self.limits);
            let instance = self.pre.instantiate(&mut store);
            runtime.disarm(&control);
            let instance = instance
                .map_err(|e| call_error(store.data(), Phase::Instantiate, self.limits, &e))?;
            (store, instance)
        };
        Ok(WasmSearch {
            name: self.name.clone(),
            limits: self.limits,
            control,
            live: Some((store, instance)),
            scope,
            left_log: LeftLog::default(),
        })
    }
}

/// A live search provider instance.
pub struct WasmSearch {
    name: String,
    limits: Limits,
    control: Arc<CallControl>,
    live: Option<(Store<State>, SearchProviderPlugin)>,
    scope: smith_alloc::Scope,
    left_log: LeftLog,
}

impl std::fmt::Debug for WasmSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmSearch")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl WasmSearch {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ready`: ok when the provider is configured, else what to
    /// configure.
    ///
    /// # Errors
    ///
    /// When the call traps or runs out of time or memory.
    pub fn ready(&mut self) -> Result<Result<(), String>, PluginError> {
        self.call("ready", |store, plugin| {
            plugin.smith_plugin_search().call_ready(store)
        })
    }

    /// `search`: at most `count` hits of `query`, or the provider's
    /// message.
    ///
    /// # Errors
    ///
    /// When the call traps or runs out of time or memory.
    pub(crate) fn search(
        &mut self,
        query: &str,
        count: u32,
    ) -> Result<Result<Vec<SearchHit>, String>, PluginError> {
        self.call("search", |store, plugin| {
            plugin
                .smith_plugin_search()
                .call_search(store, query, count)
        })
    }

    fn call<R>(
        &mut self,
        export: &'static str,
        f: impl FnOnce(&mut Store<State>, &SearchProviderPlugin) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        Instance {
            name: &self.name,
            limits: self.limits,
            control: &self.control,
            scope: &self.scope,
            live: &mut self.live,
            left_log: &mut self.left_log,
        }
        .call(export, f)
    }
}

/// Compiles (or loads from the cache) and instantiates a search provider,
/// or says why it could not.
pub type SearchLoader = Box<dyn FnOnce() -> Result<WasmSearch, String> + Send>;

/// A search provider plugin, loaded when `web-search` first needs it (a
/// run that never searches pays nothing for it).
pub struct SearchEntry {
    name: String,
    state: EntryState,
}

enum EntryState {
    Waiting(SearchLoader),
    Live(WasmSearch),
    Broken(String),
}

impl std::fmt::Debug for SearchEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchEntry")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SearchEntry {
    /// The provider `name`, which `load` loads on first use.
    pub fn new(name: &str, load: SearchLoader) -> Self {
        Self {
            name: name.to_owned(),
            state: EntryState::Waiting(load),
        }
    }

    /// The live instance, loading it first if needed; why it could not be
    /// loaded (kept, so it is not tried again).
    fn live(&mut self) -> Result<&mut WasmSearch, String> {
        let state = std::mem::replace(&mut self.state, EntryState::Broken(String::new()));
        self.state = match state {
            EntryState::Waiting(load) => match load() {
                Ok(provider) => EntryState::Live(provider),
                Err(why) => EntryState::Broken(why),
            },
            other => other,
        };
        match &mut self.state {
            EntryState::Live(provider) => Ok(provider),
            EntryState::Broken(why) => Err(why.clone()),
            EntryState::Waiting(_) => Err(format!("{} was not loaded", self.name)),
        }
    }
}

/// The enabled search provider plugins, in load order, which `web-search`
/// chooses from.
#[derive(Debug, Default)]
pub struct SearchProviders {
    providers: Mutex<Vec<SearchEntry>>,
}

impl SearchProviders {
    /// The providers `providers`, in the order they are tried.
    pub fn new(providers: Vec<SearchEntry>) -> Self {
        Self {
            providers: Mutex::new(providers),
        }
    }

    /// Their names, in order.
    pub fn names(&self) -> Vec<String> {
        self.lock().iter().map(|p| p.name.clone()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SearchEntry>> {
        self.providers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// At most `count` hits of `query` from the provider `chosen` names
    /// (`web.search-provider`: a plugin name, or a built-in's name without
    /// `smith/`), or, with none chosen, from the first whose `ready` says
    /// it is configured; the provider's name and its hits. `stop` (the
    /// caller's call was cancelled) interrupts the provider's call.
    ///
    /// # Errors
    ///
    /// What to configure when no provider is ready or the chosen one is
    /// missing, cannot be loaded or is not configured; the provider's
    /// message when its search fails.
    pub(crate) fn search(
        &self,
        chosen: Option<&str>,
        query: &str,
        count: u32,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(String, Vec<SearchHit>), String> {
        let mut providers = self.lock();
        let names: Vec<String> = providers.iter().map(|p| p.name.clone()).collect();
        let failed = |name: &str, err: PluginError| {
            format!("web_search: the search provider plugin {name} failed: {err}")
        };
        let index = match chosen {
            Some(chosen) => {
                let Some(index) = providers
                    .iter()
                    .position(|p| p.name == chosen || p.name == format!("smith/{chosen}"))
                else {
                    return Err(format!(
                        "web_search is set to use the search provider {chosen:?} (`web.search-provider`) but no enabled search provider plugin has that name; the enabled ones are: {}. Set `web.search-provider` to one of them (`smith plugin list` shows every plugin; a disabled one comes back with `smith plugin enable NAME`)",
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ));
                };
                let name = names[index].clone();
                let provider = providers[index].live().map_err(|why| {
                    format!(
                        "web_search is set to use {name} (`web.search-provider` is {chosen:?}) but it could not be loaded: {why}"
                    )
                })?;
                match provider.ready() {
                    Ok(Ok(())) => index,
                    Ok(Err(advice)) => {
                        return Err(format!(
                            "web_search is set to use {name} (`web.search-provider` is {chosen:?}) but it is not configured: {advice}"
                        ));
                    }
                    Err(err) => return Err(failed(&name, err)),
                }
            }
            None => {
                if providers.is_empty() {
                    return Err("web_search has no search provider configured: no search provider plugin is enabled. The built-in ones are smith/searxng (a SearXNG instance at `web.searxng-url`; one on this machine or the private network must also be in `web.allow-hosts`) and smith/brave (the Brave Search API; `smith auth set brave` stores the key): enable one with `smith plugin enable smith/searxng`, or install a plugin of the `search-provider` world (docs/web.md); `web.search-provider` chooses when several are configured. Until then, use web_fetch on a page you know".to_owned());
                }
                let mut advice = Vec::new();
                let mut found = None;
                for (index, entry) in providers.iter_mut().enumerate() {
                    let name = &names[index];
                    let provider = match entry.live() {
                        Ok(provider) => provider,
                        Err(why) => {
                            advice.push(format!("{name}: it could not be loaded ({why})"));
                            continue;
                        }
                    };
                    match provider.ready() {
                        Ok(Ok(())) => {
                            found = Some(index);
                            break;
                        }
                        Ok(Err(what)) => advice.push(format!("{name}: {what}")),
                        Err(err) => advice.push(format!("{name}: its `ready` failed ({err})")),
                    }
                }
                match found {
                    Some(index) => index,
                    None => {
                        return Err(format!(
                            "web_search has no search provider configured. The enabled search provider plugins say what each needs. {}. `web.search-provider` chooses when several are configured. Until then, use web_fetch on a page you know",
                            advice.join(". ")
                        ));
                    }
                }
            }
        };
        let name = names[index].clone();
        let provider = providers[index].live().map_err(|why| {
            format!("web_search: the search provider {name} could not be loaded: {why}")
        })?;
        // The caller's cancellation reaches the provider: its call is
        // interrupted (its request ends at once) when the caller's call is
        // cancelled.
        let control = Arc::clone(&provider.control);
        let done = std::sync::atomic::AtomicBool::new(false);
        let answer = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    if stop() {
                        if let Ok(runtime) = Runtime::global() {
                            runtime.interrupt(&control);
                        }
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            });
            let answer = provider.search(query, count);
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            answer
        });
        match answer {
            Ok(Ok(mut hits)) => {
                hits.truncate(count as usize);
                Ok((name, hits))
            }
            Ok(Err(message)) => Err(format!(
                "web_search: the search provider {name} failed: {message}"
            )),
            Err(err) => Err(failed(&name, err)),
        }
    }
}
