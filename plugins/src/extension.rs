//! Extension plugins: contributions read once at load, commands, and
//! lifecycle handlers. A handler that fails or runs past its deadline
//! yields "no decision", never a block.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Func, InstancePre, Linker, TypedFunc};

use crate::bindings::extension::exports::smith::plugin::extension as wit;
use crate::bindings::extension::{ExtensionPlugin, ExtensionPluginPre};
use crate::bindings::provide::ProvideExports;
use crate::bindings::provide::exports::smith::plugin::provide as provide_wit;
use crate::capped::CappedResult;
use crate::component::{Instance, PluginComponent, World};
use crate::effects::{Denial, Effects};
use crate::error::{ErrorKind, Phase, PluginError};
use crate::rate::Kind;
use crate::runtime::{CallControl, Limits, Runtime, State, call_error};
use crate::scope::plugin_scope;

pub use provide_wit::{Delivery, Fragment, QueuePolicy as QueuePolicySpec, ToolOutput, ToolSpec};
pub use wit::{
    Action, Command, Contributions, Decision, HandlerResult, IntentKind, IntentPolicy, Keybinding,
    LayoutKind, LayoutNode, LifecycleEvent, PromptFragment, Style, Theme, ToolCallEvent,
    ToolDefinition, ToolPresentation, UiIntent,
};

/// The extension world of the contract.
#[derive(Debug, Clone, Copy)]
pub struct ExtensionWorld;

impl World for ExtensionWorld {
    const NAME: &'static str = "extension";
    const TYPE_NAME: &'static str = "ExtensionComponent";
    type Pre = ExtensionPluginPre<State>;

    fn linker(runtime: &Runtime) -> &Linker<State> {
        &runtime.extension_linker
    }

    fn typed(pre: InstancePre<State>) -> wasmtime::Result<Self::Pre> {
        ExtensionPluginPre::new(pre)
    }
}

/// A compiled, pre-instantiated extension component.
pub type ExtensionComponent = PluginComponent<ExtensionWorld>;

impl PluginComponent<ExtensionWorld> {
    /// A fresh instance without host effects (every effect it asks for is
    /// denied); reads its contributions.
    ///
    /// # Errors
    ///
    /// When instantiation or `contribute` fails.
    pub fn instantiate(&self) -> Result<WasmExtension, PluginError> {
        self.instantiate_with(None)
    }

    /// A fresh instance whose host effects run through `effects` (its
    /// grants, journal and HTTP engine); reads its contributions.
    ///
    /// # Errors
    ///
    /// When instantiation or `contribute` fails.
    pub fn instantiate_with(&self, effects: Option<Effects>) -> Result<WasmExtension, PluginError> {
        let runtime = Runtime::global()?;
        let control = Arc::new(CallControl::default());
        let scope = plugin_scope(&self.name);
        let (store, instance) = {
            let _guard = scope.enter();
            let mut store =
                runtime.new_store(&self.name, self.limits, Arc::clone(&control), effects);
            runtime.arm(&control, self.limits);
            let instance = self
                .pre
                .instance_pre()
                .instantiate(&mut store)
                .and_then(|instance| {
                    let base = ExtensionPlugin::new(&mut store, &instance)?;
                    let handle = capped_handle(&mut store, &instance)?;
                    // A component of the `extension-plugin` world alone has
                    // no `provide` exports: it loads as it always did.
                    let provide = ProvideExports::new(&mut store, &instance).ok();
                    Ok(Exports {
                        base,
                        provide,
                        handle,
                    })
                });
            runtime.disarm(&control);
            let instance = instance
                .map_err(|e| call_error(store.data(), Phase::Instantiate, self.limits, &e))?;
            (store, instance)
        };
        let provides = instance.provide.is_some();
        let mut extension = WasmExtension {
            name: self.name.clone(),
            limits: self.limits,
            control,
            live: Some((store, instance)),
            contributions: None,
            provided: None,
            scope,
            left_log: Default::default(),
        };
        let contributions = extension.call("contribute", |store, plugin| {
            plugin.base.smith_plugin_extension().call_contribute(store)
        })?;
        extension.contributions = Some(contributions);
        if provides {
            let tools = extension.call("tools", |store, plugin| {
                provide_of(plugin).call_tools(store)
            })?;
            let queue_policies = extension.call("queue-policies", |store, plugin| {
                provide_of(plugin).call_queue_policies(store)
            })?;
            extension.provided = Some(Provided {
                tools,
                queue_policies,
            });
        }
        Ok(extension)
    }
}

/// The exports of a live extension instance: the `extension` interface,
/// and `provide` when the component was built for `full-extension-plugin`.
pub(crate) struct Exports {
    base: ExtensionPlugin,
    provide: Option<ProvideExports>,
    /// `extension.handle`, type-checked at instantiation as returning a
    /// [`CappedResult`].
    handle: Func,
}

/// The instance's `extension.handle`, checked to return what a
/// [`CappedResult`] lifts.
fn capped_handle(
    store: &mut Store<State>,
    instance: &wasmtime::component::Instance,
) -> wasmtime::Result<Func> {
    let missing =
        || wasmtime::format_err!("the component exports no `smith:plugin/extension@1.0.0.handle`");
    let interface = instance
        .get_export_index(&mut *store, None, "smith:plugin/extension@1.0.0")
        .ok_or_else(missing)?;
    let index = instance
        .get_export_index(&mut *store, Some(&interface), "handle")
        .ok_or_else(missing)?;
    let func = instance.get_func(&mut *store, index).ok_or_else(missing)?;
    func.typed::<(&LifecycleEvent,), (CappedResult,)>(&*store)?;
    Ok(func)
}

/// The `provide` exports of an instance whose `provided` is set (checked
/// at instantiation, so never missing where it is called).
fn provide_of(exports: &Exports) -> &provide_wit::Guest {
    exports
        .provide
        .as_ref()
        .map(ProvideExports::smith_plugin_provide)
        .unwrap_or_else(|| unreachable!("provide exports are checked at instantiation"))
}

/// What a `full-extension-plugin` component declared at load through
/// `provide`: its tools and queue policies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provided {
    /// The tools it runs for the model.
    pub tools: Vec<ToolSpec>,
    /// The queue policies it contributes.
    pub queue_policies: Vec<QueuePolicySpec>,
}

/// A live extension plugin instance.
pub struct WasmExtension {
    name: String,
    limits: Limits,
    control: Arc<CallControl>,
    live: Option<(Store<State>, Exports)>,
    contributions: Option<Contributions>,
    provided: Option<Provided>,
    scope: smith_alloc::Scope,
    left_log: crate::component::LeftLog,
}

impl std::fmt::Debug for WasmExtension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmExtension")
            .field("name", &self.name)
            .finish()
    }
}

impl WasmExtension {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A handle that aborts this plugin's calls from another thread.
    pub fn abort_handle(&self) -> crate::AbortHandle {
        crate::AbortHandle::new(Arc::clone(&self.control))
    }

    /// The contributions read at load (cached by the host: the render path
    /// never calls into a guest).
    pub fn contributions(&self) -> Option<&Contributions> {
        self.contributions.as_ref()
    }

    /// What the plugin declared through `provide` (tools, queue policies);
    /// none for a component of the `extension-plugin` world alone.
    pub fn provided(&self) -> Option<&Provided> {
        self.provided.as_ref()
    }

    /// Runs one call of the plugin's tool `name` with `arguments` (a JSON
    /// object as text, already validated against the tool's schema).
    ///
    /// # Errors
    ///
    /// When the plugin has no `provide` exports, or fails (deadline, trap,
    /// memory).
    pub fn call_tool(&mut self, name: &str, arguments: &str) -> Result<ToolOutput, PluginError> {
        self.require_provide("call-tool")?;
        self.call("call-tool", |store, plugin| {
            provide_of(plugin).call_call_tool(store, name, arguments)
        })
    }

    /// The fragments the plugin adds to a turn's context of `messages`
    /// messages; `Ok(None)` when they are unchanged since its last answer
    /// or the plugin has no `provide` exports.
    ///
    /// # Errors
    ///
    /// When the plugin fails (deadline, trap, memory).
    pub fn context(&mut self, messages: u32) -> Result<Option<Vec<Fragment>>, PluginError> {
        if self.provided.is_none() {
            return Ok(None);
        }
        self.call("context", |store, plugin| {
            provide_of(plugin).call_context(store, messages)
        })
    }

    fn require_provide(&self, export: &'static str) -> Result<(), PluginError> {
        if self.provided.is_some() {
            return Ok(());
        }
        Err(PluginError::new(
            &self.name,
            Phase::Call(export),
            ErrorKind::Guest,
            "the plugin was built for the `extension-plugin` world, which has no `provide` exports; rebuild it for `full-extension-plugin` to give it tools",
        ))
    }

    /// Whether the instance is still alive.
    pub fn is_alive(&self) -> bool {
        self.live.is_some()
    }

    /// The effects this instance runs with (none: every effect is denied).
    pub fn effects(&self) -> Option<&Effects> {
        self.live
            .as_ref()
            .and_then(|(store, _)| store.data().effects.as_ref())
    }

    /// Takes the effects denied since the last call: each names the plugin,
    /// the capability and the missing grant.
    pub fn take_denials(&mut self) -> Vec<Denial> {
        self.live
            .as_mut()
            .map(|(store, _)| std::mem::take(&mut store.data_mut().denials))
            .unwrap_or_default()
    }

    /// Takes the working-tree operations (`snapshot ID`, `restore ID`) the
    /// plugin made through `vcs` since the last call.
    pub fn take_vcs_operations(&mut self) -> Vec<String> {
        self.live
            .as_mut()
            .map(|(store, _)| std::mem::take(&mut store.data_mut().vcs_operations))
            .unwrap_or_default()
    }

    /// Takes the log lines written since the last call and how many were
    /// dropped because the buffer between two drains was full (those count
    /// as dropped in the instance's [`crate::rate::Budget`] as well).
    pub fn take_log(&mut self) -> (Vec<(crate::LogLevel, String)>, u64) {
        // The lines of an instance a failure destroyed; their drops were
        // counted in its budget (which the dispatcher holds) below.
        let (mut lines, left_dropped) = std::mem::take(&mut self.left_log);
        let dropped = self.live.as_mut().map_or(0, |(store, _)| {
            let state = store.data_mut();
            lines.append(&mut state.log);
            let dropped = std::mem::take(&mut state.log_dropped);
            state.budget.count_dropped(crate::rate::Kind::Log, dropped);
            dropped
        });
        (lines, dropped + left_dropped)
    }

    /// The instance's caps and counters per run ([`crate::rate`]); none
    /// once it was destroyed.
    pub fn budget(&self) -> Option<Arc<crate::rate::Budget>> {
        self.live
            .as_ref()
            .map(|(store, _)| Arc::clone(&store.data().budget))
    }

    /// Runs a command the plugin contributed.
    ///
    /// # Errors
    ///
    /// When the plugin fails (deadline, trap, memory) or rejects the
    /// command (its message is kept).
    pub fn run_command(&mut self, name: &str, argument: &str) -> Result<Vec<Action>, PluginError> {
        let result = self.call("run-command", |store, plugin| {
            plugin
                .base
                .smith_plugin_extension()
                .call_run_command(store, name, argument)
        })?;
        result.map_err(|message| {
            PluginError::new(
                &self.name,
                Phase::Call("run-command"),
                ErrorKind::Guest,
                message,
            )
        })
    }

    /// Handles `event` like [`WasmExtension::handle`], with `details` (JSON
    /// text) as what `host.event-details` answers during the call.
    ///
    /// # Errors
    ///
    /// As [`WasmExtension::handle`].
    pub fn handle_with_details(
        &mut self,
        event: &LifecycleEvent,
        details: Option<&str>,
    ) -> Result<HandlerResult, PluginError> {
        if let Some((store, _)) = &mut self.live {
            store.data_mut().event_details = details.map(str::to_owned);
        }
        let result = self.handle(event);
        if let Some((store, _)) = &mut self.live {
            store.data_mut().event_details = None;
        }
        result
    }

    /// Delivers one lifecycle event.
    ///
    /// # Errors
    ///
    /// When the plugin fails; callers treat that as "no decision".
    ///
    /// Of the UI intents it returns, only as many as its cap per run still
    /// has room for are taken from the plugin; the rest are counted as
    /// dropped ([`crate::capped`]).
    pub fn handle(&mut self, event: &LifecycleEvent) -> Result<HandlerResult, PluginError> {
        self.call("handle", |store, plugin| {
            // SAFETY: the signature was checked at instantiation
            // (`capped_handle`).
            let callee = unsafe {
                TypedFunc::<(&LifecycleEvent,), (CappedResult,)>::new_unchecked(plugin.handle)
            };
            let budget = Arc::clone(&store.data().budget);
            let (result,) = crate::capped::with_ui_room(budget.room(Kind::Ui), || {
                callee.call(&mut *store, (event,))
            })?;
            Ok(match result {
                CappedResult::None => HandlerResult::None,
                CappedResult::Decision(decision) => HandlerResult::Decision(decision),
                CappedResult::Actions(actions) => {
                    if actions.skipped > 0 {
                        // Over the room: counted as dropped.
                        budget.count_dropped(Kind::Ui, actions.skipped);
                    }
                    HandlerResult::Actions(actions.kept)
                }
            })
        })
    }

    fn call<R>(
        &mut self,
        export: &'static str,
        f: impl FnOnce(&mut Store<State>, &Exports) -> wasmtime::Result<R>,
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

/// The folded outcome of one decision point across handlers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Folded {
    /// Proceed; `replacement` is the chained replacement, if any.
    Allow {
        /// The last replacement (each handler saw the previous one), with
        /// the plugin that made it.
        replacement: Option<(String, String)>,
    },
    /// Blocked by `plugin` with `reason`.
    Block {
        /// The blocking plugin.
        plugin: String,
        /// Its reason.
        reason: String,
    },
}

/// Delivers `event` to `handlers` in load order and folds their decisions:
/// the first block wins over allow and ends the fold (the handlers after
/// it are not asked: what will not happen needs no one's approval);
/// replacements chain; a handler that fails or times out counts as no
/// decision (its error is returned alongside).
pub fn decide(
    handlers: &mut [WasmExtension],
    event: &LifecycleEvent,
) -> (Folded, Vec<PluginError>) {
    fold(handlers.len(), event, |index, current| {
        let handler = &mut handlers[index];
        (handler.name.clone(), handler.handle(current))
    })
}

/// [`decide`] over shared plugins, each locked only for its own handler.
pub fn decide_shared(
    handlers: &[crate::dispatch::Shared],
    event: &LifecycleEvent,
) -> (Folded, Vec<PluginError>) {
    fold(handlers.len(), event, |index, current| {
        let mut handler = crate::dispatch::lock_plugin(&handlers[index]);
        (handler.name.clone(), handler.handle(current))
    })
}

/// Folds the decisions of `count` handlers, `handle(index, event)` asking
/// one (each sees the previous replacement) until one blocks.
fn fold(
    count: usize,
    event: &LifecycleEvent,
    mut handle: impl FnMut(usize, &LifecycleEvent) -> (String, Result<HandlerResult, PluginError>),
) -> (Folded, Vec<PluginError>) {
    let mut replacement: Option<(String, String)> = None;
    let mut errors = Vec::new();
    let mut block = None;
    for index in 0..count {
        let current = match (&replacement, event) {
            (Some((_, args)), LifecycleEvent::ToolCall(call)) => {
                LifecycleEvent::ToolCall(ToolCallEvent {
                    arguments: String::clone(args),
                    ..call.clone()
                })
            }
            (Some((_, text)), LifecycleEvent::Input(_)) => {
                LifecycleEvent::Input(String::clone(text))
            }
            _ => event.clone(),
        };
        match handle(index, &current) {
            (name, Ok(HandlerResult::Decision(Decision::Block(reason)))) => {
                block = Some((name, reason));
                break;
            }
            (name, Ok(HandlerResult::Decision(Decision::Replace(value)))) => {
                replacement = Some((name, value));
            }
            (_, Ok(_)) => {}
            (_, Err(err)) => errors.push(err),
        }
    }
    let folded = match block {
        Some((plugin, reason)) => Folded::Block { plugin, reason },
        None => Folded::Allow { replacement },
    };
    (folded, errors)
}

/// Checks an action batch gathered from several plugins (each action with
/// the plugin that asked for it) for conflicts: two model switches, two
/// layouts or two theme switches in one batch reject the whole batch.
///
/// # Errors
///
/// A diagnostic naming the plugins and the field.
pub fn check_batch(batch: &[(String, Action)]) -> Result<(), String> {
    let field = |action: &Action| match action {
        Action::SetModel(_) => Some("model"),
        Action::SetLayout(_) => Some("layout"),
        Action::SetTheme(_) => Some("theme"),
        Action::SendMessage(_) | Action::Ui(_) => None,
    };
    for (i, (first_plugin, first)) in batch.iter().enumerate() {
        let Some(name) = field(first) else { continue };
        if let Some((second_plugin, _)) =
            batch[i + 1..].iter().find(|(_, a)| field(a) == Some(name))
        {
            return Err(format!(
                "conflicting actions: {first_plugin} and {second_plugin} both set the {name} in one batch; the batch was rejected whole, nothing was applied"
            ));
        }
    }
    Ok(())
}
