//! A compiled, pre-instantiated plugin component of one world of the
//! `smith:plugin@1` contract (extension or provider): what both kinds
//! share. Compiling (or loading from the cache), linking against the
//! world's host imports and keeping the limits its instances run under are
//! written once here; each world adds its own `instantiate` in its module
//! ([`crate::extension`], the provider module).

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre, Linker};

use crate::error::{ErrorKind, Phase, PluginError};
use crate::runtime::{CallControl, Limits, Runtime, State, call_error};

/// One world of the `smith:plugin@1` contract that a component can
/// implement.
pub trait World {
    /// The world's name, as in `<name>-plugin` and the SDK feature that
    /// builds a guest for it.
    const NAME: &'static str;
    /// The name of the component type, for `Debug`.
    const TYPE_NAME: &'static str;
    /// The world's typed pre-instance.
    type Pre: Clone;
    /// The host's linker for the world's imports.
    fn linker(runtime: &Runtime) -> &Linker<State>;
    /// The typed pre-instance over an untyped one; fails when the
    /// component's exports do not match the world.
    ///
    /// # Errors
    ///
    /// When an export of the world is missing or has another type.
    fn typed(pre: InstancePre<State>) -> wasmtime::Result<Self::Pre>;
}

/// A compiled, pre-instantiated component of world `W`; instantiate it as
/// many times as needed.
pub struct PluginComponent<W: World> {
    pub(crate) name: String,
    pub(crate) pre: W::Pre,
    pub(crate) limits: Limits,
}

impl<W: World> Clone for PluginComponent<W> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            pre: self.pre.clone(),
            limits: self.limits,
        }
    }
}

impl<W: World> std::fmt::Debug for PluginComponent<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(W::TYPE_NAME)
            .field("name", &self.name)
            .finish()
    }
}

impl<W: World> PluginComponent<W> {
    /// Compiles (or loads from `cache_dir`, or from the build's artifact)
    /// and pre-instantiates `wasm` (a component's bytes, or one the build
    /// embedded: [`crate::Wasm`]) as the plugin `name`.
    ///
    /// # Errors
    ///
    /// When the component is refused, does not compile or does not
    /// implement the world.
    pub fn load<'a>(
        name: &str,
        wasm: impl Into<crate::Wasm<'a>>,
        cache_dir: Option<&std::path::Path>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        let runtime = Runtime::global()?;
        let component = runtime.load_component(name, wasm, cache_dir)?;
        Self::from_component(name, &component, limits)
    }

    /// Pre-instantiates an already compiled component.
    ///
    /// # Errors
    ///
    /// When the component does not implement the world.
    pub fn from_component(
        name: &str,
        component: &Component,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        let runtime = Runtime::global()?;
        let link_error = |e: wasmtime::Error| {
            PluginError::new(
                name,
                Phase::Instantiate,
                ErrorKind::Component,
                format!(
                    "the component does not fit the smith:plugin@1 {world}-plugin world: {e:#}; rebuild it with the SDK's `{world}` feature",
                    world = W::NAME
                ),
            )
        };
        let pre = W::linker(runtime)
            .instantiate_pre(component)
            .map_err(link_error)?;
        let pre = W::typed(pre).map_err(link_error)?;
        Ok(Self {
            name: name.to_owned(),
            pre,
            limits,
        })
    }
}

/// A live instance of a plugin of either world and what a call into it
/// needs: its name, its limits, the control the deadline arms, and its
/// allocation scope.
pub(crate) struct Instance<'a, P> {
    pub(crate) name: &'a str,
    pub(crate) limits: Limits,
    pub(crate) control: &'a CallControl,
    pub(crate) scope: &'a smith_alloc::Scope,
    pub(crate) live: &'a mut Option<(Store<State>, P)>,
    /// Where the log lines of an instance that a failure destroyed are
    /// kept for the next drain, with how many it dropped.
    pub(crate) left_log: &'a mut LeftLog,
}

/// Log lines left by a destroyed instance, and how many it dropped because
/// its buffer was full.
pub(crate) type LeftLog = (Vec<(crate::LogLevel, String)>, u64);

impl<P> Instance<'_, P> {
    /// Calls `f` on the live instance under the deadline, inside the
    /// plugin's accounting scope. A failure destroys the instance.
    ///
    /// # Errors
    ///
    /// When the instance was destroyed by an earlier failure, or the call
    /// traps, runs out of time or memory, or the guest fails.
    pub(crate) fn call<R>(
        self,
        export: &'static str,
        f: impl FnOnce(&mut Store<State>, &P) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let runtime = Runtime::global()?;
        let Some((store, plugin)) = self.live.as_mut() else {
            return Err(PluginError::new(
                self.name,
                Phase::Call(export),
                ErrorKind::Destroyed,
                "the plugin's instance was destroyed after an earlier failure; reload the plugin to start a fresh instance",
            ));
        };
        let _guard = self.scope.enter();
        runtime.arm(self.control, self.limits);
        store.data_mut().stop = None;
        store.data_mut().call_log_dropped = 0;
        let result = f(store, plugin);
        runtime.disarm(self.control);
        match result {
            Ok(value) => Ok(value),
            Err(err) => {
                let error = call_error(store.data(), Phase::Call(export), self.limits, &err);
                // What it wrote before it failed is still written.
                let state = store.data_mut();
                self.left_log.0.append(&mut state.log);
                let dropped = std::mem::take(&mut state.log_dropped);
                state.budget.count_dropped(crate::rate::Kind::Log, dropped);
                self.left_log.1 += dropped;
                *self.live = None;
                Err(error)
            }
        }
    }
}
