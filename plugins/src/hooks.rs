//! Extension plugins taking part in an agent run: a [`Dispatcher`] and the
//! decision folding of [`crate::extension::decide`] behind the engine's
//! [`Hooks`] contract.
//!
//! The engine calls [`Hooks::input`] and [`Hooks::tool_call`] at its
//! decision points only; every handler sees the event in load order, any
//! block wins, replacements chain, and a handler that fails or misses its
//! deadline is no decision. [`Hooks::observe`] delivers each runtime event's
//! lifecycle counterpart; at a safe point the dispatcher's batch is checked
//! for conflicts and released: model switches and messages go back to the
//! engine (which applies them there), layout and theme changes and UI
//! intents go to the [`Frontend`].

use smith_engine::agent::{HookAction, Hooks, Interrupt, Verdict};
use smith_engine::protocol::Event;
use smith_engine::provider::ToolCall;

use crate::dispatch::{Dispatcher, Surface};
use crate::extension::{
    Action, Folded, LifecycleEvent, ToolCallEvent, UiIntent, WasmExtension, decide,
};

/// The frontend extension actions reach: a [`Surface`] for UI intents, plus
/// presentation changes and problems to report.
pub trait Frontend: Surface + Send {
    /// A released layout or theme change from `plugin`. A frontend without
    /// a screen has nothing to lay out and ignores it.
    fn present(&mut self, plugin: &str, action: &Action) {
        let _ = (plugin, action);
    }

    /// A UI intent this frontend cannot show whose policy is `persist`.
    fn persist(&mut self, plugin: &str, intent: &UiIntent);

    /// A plugin problem: a failed or timed-out handler, a conflicting batch,
    /// a denied effect. The message names the plugin.
    fn diagnostic(&mut self, message: &str);
}

/// Loaded extension plugins as engine [`Hooks`].
pub struct PluginHooks {
    dispatcher: Dispatcher,
    frontend: Box<dyn Frontend>,
}

impl std::fmt::Debug for PluginHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHooks")
            .field("dispatcher", &self.dispatcher)
            .finish_non_exhaustive()
    }
}

impl PluginHooks {
    /// `plugins` in load order, reporting to `frontend`.
    pub fn new(plugins: Vec<WasmExtension>, frontend: Box<dyn Frontend>) -> Self {
        Self {
            dispatcher: Dispatcher::new(plugins),
            frontend,
        }
    }

    /// The plugins' names, in load order.
    pub fn names(&self) -> Vec<String> {
        self.dispatcher
            .plugins()
            .iter()
            .map(|p| p.name().to_owned())
            .collect()
    }

    /// Leaves out, for the rest of the runtime, every plugin whose instance
    /// was destroyed, saying so once.
    fn drop_dead(&mut self) {
        for name in self.dispatcher.drop_dead() {
            self.frontend.diagnostic(&format!(
                "plugin {name} was stopped (its own diagnostic says why) and is left out for the rest of this runtime; a new session loads it afresh, and `smith plugin disable {name}` keeps it out"
            ));
        }
    }

    fn decide(&mut self, event: &LifecycleEvent) -> Verdict {
        let (folded, errors) = decide(self.dispatcher.plugins_mut(), event);
        for error in errors {
            self.frontend.diagnostic(&format!(
                "{error}; it counts as no decision, so the {} went ahead as far as it is concerned",
                match event {
                    LifecycleEvent::ToolCall(_) => "tool call",
                    LifecycleEvent::SessionCompact => "compaction",
                    _ => "input",
                }
            ));
        }
        for plugin in self.dispatcher.plugins_mut() {
            for denial in plugin.take_denials() {
                self.frontend.diagnostic(&denial.to_string());
            }
        }
        self.drop_dead();
        match folded {
            Folded::Block { plugin, reason } => Verdict::Block { by: plugin, reason },
            Folded::Allow {
                replacement: Some((by, value)),
            } => Verdict::Replace { by, value },
            Folded::Allow { replacement: None } => Verdict::Allow,
        }
    }
}

impl Hooks for PluginHooks {
    fn input(&mut self, text: &str) -> Verdict {
        self.decide(&LifecycleEvent::Input(text.to_owned()))
    }

    fn tool_call(&mut self, call: &ToolCall) -> Verdict {
        self.decide(&LifecycleEvent::ToolCall(ToolCallEvent {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
        }))
    }

    fn compaction(&mut self, _reason: smith_engine::protocol::CompactionReason) -> Verdict {
        self.decide(&LifecycleEvent::SessionCompact)
    }

    fn interrupter(&self) -> Option<Interrupt> {
        let handles: Vec<crate::AbortHandle> = self
            .dispatcher
            .plugins()
            .iter()
            .map(WasmExtension::abort_handle)
            .collect();
        Some(std::sync::Arc::new(move || {
            for handle in &handles {
                handle.interrupt();
            }
        }))
    }

    fn observe(&mut self, event: &Event) -> Vec<HookAction> {
        let released = self
            .dispatcher
            .observe(event, &mut SurfaceOf(&mut *self.frontend));
        self.drop_dead();
        let Some(released) = released else {
            return Vec::new();
        };
        for message in &released.diagnostics {
            self.frontend.diagnostic(message);
        }
        for (plugin, intent) in &released.persisted {
            self.frontend.persist(plugin, intent);
        }
        let mut actions = Vec::new();
        for (plugin, action) in released.actions {
            match action {
                Action::SetModel(model) => actions.push(HookAction::SetModel { by: plugin, model }),
                Action::SendMessage(text) => {
                    actions.push(HookAction::FollowUp { by: plugin, text })
                }
                Action::SetLayout(_) | Action::SetTheme(_) => {
                    self.frontend.present(&plugin, &action);
                }
                // The dispatcher shows intents itself; none are released.
                Action::Ui(_) => {}
            }
        }
        actions
    }
}

/// A frontend seen as the dispatcher's surface.
struct SurfaceOf<'a>(&'a mut dyn Frontend);

impl Surface for SurfaceOf<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn can_show(&self, kind: &crate::extension::IntentKind) -> bool {
        self.0.can_show(kind)
    }
    fn show(&mut self, plugin: &str, intent: &UiIntent) {
        self.0.show(plugin, intent);
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        self.0.show_text(plugin, text);
    }
}
