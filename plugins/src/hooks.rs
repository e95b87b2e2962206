//! Extension plugins taking part in an agent run: a [`Dispatcher`] and the
//! decision folding of [`crate::extension::decide`] behind the engine's
//! [`Hooks`] contract.
//!
//! The engine calls [`Hooks::input`], [`Hooks::tool_call`],
//! [`Hooks::compaction`] and [`Hooks::context`] at its decision points
//! only, and a frontend asks the [`Hooks::session_gate`] before it switches
//! or forks sessions; the handlers see the event in load order, the first
//! block wins and ends the fold, replacements chain, and a handler that fails or misses its
//! deadline is no decision. A replacement where it has no meaning (the
//! context, a session switch or fork) counts as allow and is reported.
//!
//! Hooks bound to a session ([`PluginHooks::in_session`]) raise
//! `plugin-loaded` for each plugin and then `session-start` when the
//! runtime starts serving, and `session-shutdown` when it stops; the
//! actions handlers return to `session-shutdown` are released right away
//! (the runtime is idle), UI intents included.
//!
//! [`Hooks::observe`] delivers each runtime event's
//! lifecycle counterpart; at a safe point the dispatcher's batch is checked
//! for conflicts and released: model switches and messages go back to the
//! engine (which applies them there), layout and theme changes and UI
//! intents go to the [`Frontend`].

use smith_engine::agent::{HookAction, Hooks, Interrupt, SessionGate, SessionOp, Verdict};
use smith_engine::protocol::Event;
use smith_engine::provider::ToolCall;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::dispatch::{Dispatcher, Released, Surface, lock_plugin};
use crate::extension::{
    Action, Folded, LifecycleEvent, ToolCallEvent, UiIntent, WasmExtension, decide_shared,
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

    /// A plugin problem the host reports as a diagnostic with its code
    /// (`plugin.rate-limited`). By default it is shown as plain text
    /// through [`Frontend::diagnostic`].
    fn report(&mut self, diagnostic: &smith_diag::Diagnostic) {
        self.diagnostic(&diagnostic.render_plain());
    }

    /// Whether the panels (`set-widget` intents) plugins return while the
    /// session starts (`plugin-loaded`, `session-start`) are shown right
    /// away — the runtime is idle then — rather than at the first safe
    /// point. A frontend that draws panels and that a user watches from
    /// the start (the interface) says yes, so a panel about the session
    /// (a todo list it keeps) shows when it opens. Every other action
    /// still waits for the first safe point. By default no.
    fn shows_panels_at_start(&self) -> bool {
        false
    }
}

/// Records in the session what a plugin's caps dropped in a run (the
/// plugin and each kind's cap and drop count); the error is reported as a
/// diagnostic.
pub type DropRecorder = Box<dyn Fn(&str, &[crate::rate::Dropped]) -> Result<(), String> + Send>;

/// Reports (and forgets) the configuration keys plugins changed since it
/// was last called.
pub type ConfigChanges = Box<dyn Fn() -> Vec<String> + Send>;

/// Loaded extension plugins as engine [`Hooks`].
pub struct PluginHooks {
    inner: Arc<Mutex<Inner>>,
}

/// The plugins and their frontend, shared by the hooks (the agent's
/// thread) and the [`Commands`] (the frontend's thread).
struct Inner {
    dispatcher: Dispatcher,
    frontend: Box<dyn Frontend>,
    /// The request context assembled from the plugins' prompt fragments,
    /// when the hooks assemble the system prompt.
    context: Option<crate::context::Assembler>,
    /// Reports the configuration keys plugins changed (`config-set`) since
    /// it was last asked; each is announced as `config-changed(KEY)`.
    config_changes: Option<ConfigChanges>,
    /// The session the runtime records into, when the hooks are bound to
    /// one (session events are raised only then).
    session: Option<String>,
    /// Records what the plugins' caps dropped at the end of each run.
    drops: Option<DropRecorder>,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves plain data behind; go on.
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for PluginHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHooks")
            .field("plugins", &self.names())
            .finish_non_exhaustive()
    }
}

impl PluginHooks {
    /// `plugins` in load order, reporting to `frontend`.
    pub fn new(plugins: Vec<WasmExtension>, frontend: Box<dyn Frontend>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                dispatcher: Dispatcher::new(plugins),
                frontend,
                context: None,
                config_changes: None,
                session: None,
                drops: None,
            })),
        }
    }

    /// Binds the hooks to the session `id` the runtime records into: its
    /// start and shutdown are raised to the plugins (`plugin-loaded` for
    /// each plugin, `session-start(id)`, `session-shutdown`).
    #[must_use]
    pub fn in_session(self, id: &str) -> Self {
        lock(&self.inner).session = Some(id.to_owned());
        self
    }

    /// Assembles the system prompt of every request with `assembler`
    /// (seeded with the plugins' static fragments): after each allowed
    /// `context` decision, each plugin providing context is asked for its
    /// fragments of the turn, and the engine gets the assembled prompt
    /// (the same `Arc` while nothing changed).
    #[must_use]
    pub fn with_context(self, assembler: crate::context::Assembler) -> Self {
        lock(&self.inner).context = Some(assembler);
        self
    }

    /// Announces the configuration keys `changes` reports (the options
    /// plugins changed with `config-set`) to every plugin as
    /// `config-changed(KEY)`, after each event, decision and command.
    #[must_use]
    pub fn with_config_changes(self, changes: ConfigChanges) -> Self {
        lock(&self.inner).config_changes = Some(changes);
        self
    }

    /// Records what each plugin's caps per run dropped ([`crate::rate`])
    /// with `recorder`, at the end of each run and when the session shuts
    /// down (only plugins that dropped something).
    #[must_use]
    pub fn with_drop_records(self, recorder: DropRecorder) -> Self {
        lock(&self.inner).drops = Some(recorder);
        self
    }

    /// The plugins' names, in load order.
    pub fn names(&self) -> Vec<String> {
        lock(&self.inner).dispatcher.names().to_vec()
    }

    /// The tools the plugins run for the model (see [`crate::tools`]),
    /// joining the names in `taken` (each with its owner, `smith` for the
    /// built-ins). Each refused tool (a name clash, a malformed name or
    /// schema) is reported to the frontend as a diagnostic.
    pub fn tools(&self, taken: &mut Vec<(String, String)>) -> Vec<Arc<crate::tools::PluginTool>> {
        let mut inner = lock(&self.inner);
        let (tools, refused) = crate::tools::plugin_tools(inner.dispatcher.plugins(), taken);
        for message in refused {
            inner.frontend.diagnostic(&message);
        }
        tools
    }

    /// Runs the plugins' commands from the frontend's thread.
    pub fn commands(&self) -> Commands {
        Commands {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// Asks the plugins about the decision point `event`. The shared state is
/// not held while the handlers run (a handler may wait for the user's
/// answer to a question): the frontend can still run commands, raise
/// events and answer old-style questions meanwhile. Each plugin is locked
/// only for its own handler.
fn decide(inner: &Mutex<Inner>, event: &LifecycleEvent) -> Verdict {
    let plugins = lock(inner).dispatcher.plugins().to_vec();
    let (folded, errors) = decide_shared(&plugins, event);
    lock(inner).settle(event, folded, errors)
}

impl Inner {
    /// Announces the configuration keys plugins changed since the last
    /// call (none: nothing is delivered).
    fn announce_config(&mut self) {
        let Some(changes) = &self.config_changes else {
            return;
        };
        let keys = changes();
        for key in keys {
            self.dispatcher.notify(&LifecycleEvent::ConfigChanged(key));
        }
    }

    /// Asks each plugin that provides context for its fragments of a turn
    /// of `messages` messages; a plugin that fails keeps its previous
    /// fragments and is reported.
    fn refresh_context(&mut self, messages: u32) {
        let Some(assembler) = &mut self.context else {
            return;
        };
        let mut failures = Vec::new();
        for (plugin, name) in self
            .dispatcher
            .plugins()
            .iter()
            .zip(self.dispatcher.names())
        {
            let mut plugin = lock_plugin(plugin);
            if plugin.provided().is_none() {
                continue;
            }
            match plugin.context(messages) {
                Ok(fragments) => assembler.update(name, fragments),
                Err(err) => failures.push(format!(
                    "{err}; the request context keeps the fragments plugin {name} gave before"
                )),
            }
        }
        for failure in failures {
            self.frontend.diagnostic(&failure);
        }
        self.dispatcher.drain_logs();
        self.drop_dead();
    }

    /// Records what the plugins' caps dropped since the last record.
    fn record_drops(&mut self) {
        let drops = self.dispatcher.take_drops();
        let Some(recorder) = &self.drops else {
            return;
        };
        for (plugin, dropped) in drops {
            if let Err(message) = recorder(&plugin, &dropped) {
                self.frontend.diagnostic(&message);
            }
        }
    }

    /// Leaves out, for the rest of the runtime, every plugin whose instance
    /// was destroyed, saying so once; first reports each cap a plugin
    /// exceeded for the first time this run.
    fn drop_dead(&mut self) {
        for diagnostic in self.dispatcher.take_limited() {
            self.frontend.report(&diagnostic);
        }
        for name in self.dispatcher.drop_dead() {
            self.frontend.diagnostic(&format!(
                "plugin {name} was stopped (its own diagnostic says why) and is left out for the rest of this runtime; a new session loads it afresh, and `smith plugin disable {name}` keeps it out"
            ));
        }
    }

    /// Reports what the handlers of a decision point said (`folded`, and
    /// the handlers that failed) and turns it into the engine's verdict.
    fn settle(
        &mut self,
        event: &LifecycleEvent,
        folded: Folded,
        errors: Vec<crate::PluginError>,
    ) -> Verdict {
        self.dispatcher.announce_vcs();
        self.dispatcher.drain_logs();
        self.announce_config();
        for error in errors {
            self.frontend.diagnostic(&format!(
                "{error}; it counts as no decision, so the {} went ahead as far as it is concerned",
                what(event)
            ));
        }
        for plugin in self.dispatcher.plugins() {
            let denials = lock_plugin(plugin).take_denials();
            for denial in denials {
                self.frontend.diagnostic(&denial.to_string());
            }
        }
        self.drop_dead();
        match folded {
            Folded::Block { plugin, reason } => Verdict::Block { by: plugin, reason },
            Folded::Allow {
                replacement: Some((by, _)),
            } if !replaceable(event) => {
                self.frontend.diagnostic(&format!(
                    "plugin {by} answered the {} with a replacement, which has no meaning there (only block or allow do); it counts as allow, so the {} went ahead unchanged",
                    what(event),
                    what(event)
                ));
                Verdict::Allow
            }
            Folded::Allow {
                replacement: Some((by, value)),
            } => Verdict::Replace { by, value },
            Folded::Allow { replacement: None } => Verdict::Allow,
        }
    }

    /// Delivers `event` to every handler outside a decision point: their
    /// actions wait for the next safe point.
    fn notify(&mut self, event: &LifecycleEvent) {
        self.dispatcher.notify(event);
        self.drop_dead();
    }

    /// When `settled` (the runtime is idle, a safe point), releases the
    /// queued batch now and returns the actions for the engine; otherwise
    /// they wait for the runtime's next safe point.
    fn release_if(&mut self, settled: bool) -> Vec<HookAction> {
        if !settled {
            return Vec::new();
        }
        let released = self.dispatcher.release(&mut SurfaceOf(&mut *self.frontend));
        self.release(released)
    }

    /// Reports what a safe point released and returns the actions for the
    /// engine (model switches, messages).
    fn release(&mut self, released: Released) -> Vec<HookAction> {
        for message in &released.diagnostics {
            self.frontend.diagnostic(message);
        }
        for diagnostic in &released.limited {
            self.frontend.report(diagnostic);
        }
        for (plugin, intent) in &released.persisted {
            self.frontend.persist(plugin, intent);
        }
        let mut actions = Vec::new();
        for (plugin, action) in released.actions {
            match action {
                Action::SetModel(model) => actions.push(HookAction::SetModel { by: plugin, model }),
                Action::SendMessage(text) => {
                    actions.push(HookAction::FollowUp { by: plugin, text });
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

/// What a decision point is called in diagnostics.
fn what(event: &LifecycleEvent) -> &'static str {
    match event {
        LifecycleEvent::ToolCall(_) => "tool call",
        LifecycleEvent::SessionCompact => "compaction",
        LifecycleEvent::Context(_) => "provider request",
        LifecycleEvent::SessionSwitch(_) => "session switch",
        LifecycleEvent::SessionFork(_) => "session fork",
        _ => "input",
    }
}

/// Whether a replacement means something at this decision point.
fn replaceable(event: &LifecycleEvent) -> bool {
    matches!(
        event,
        LifecycleEvent::ToolCall(_) | LifecycleEvent::Input(_) | LifecycleEvent::SessionCompact
    )
}

impl Hooks for PluginHooks {
    fn context(&mut self, messages: usize) -> Verdict {
        let count = u32::try_from(messages).unwrap_or(u32::MAX);
        let verdict = decide(&self.inner, &LifecycleEvent::Context(count));
        if !matches!(verdict, Verdict::Block { .. }) {
            lock(&self.inner).refresh_context(count);
        }
        verdict
    }

    fn system_prompt(&mut self) -> Option<Arc<str>> {
        lock(&self.inner)
            .context
            .as_mut()
            .map(crate::context::Assembler::prompt)
    }

    fn before_request(&mut self, model: &str) {
        lock(&self.inner).notify(&LifecycleEvent::BeforeProviderRequest(model.to_owned()));
    }

    fn session_start(&mut self) {
        let mut inner = lock(&self.inner);
        let Some(id) = inner.session.clone() else {
            return;
        };
        let names = inner.dispatcher.names().to_vec();
        for name in names {
            inner.notify(&LifecycleEvent::PluginLoaded(name));
        }
        inner.notify(&LifecycleEvent::SessionStart(id));
        if inner.frontend.shows_panels_at_start() {
            // Idle before the first run: the panels show now; everything
            // else waits for the first safe point.
            let inner = &mut *inner;
            let released = inner
                .dispatcher
                .release_panels(&mut SurfaceOf(&mut *inner.frontend));
            let actions = inner.release(released);
            debug_assert!(actions.is_empty(), "only panels were released");
        }
    }

    fn session_shutdown(&mut self) {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        if inner.session.is_none() {
            return;
        }
        inner.notify(&LifecycleEvent::SessionShutdown);
        // The runtime is idle and stopping: a safe point, and the last one.
        let released = inner
            .dispatcher
            .release(&mut SurfaceOf(&mut *inner.frontend));
        for action in inner.release(released) {
            let (by, what) = match &action {
                HookAction::SetModel { by, model } => (by, format!("switch to model {model}")),
                HookAction::FollowUp { by, .. } => (by, "follow-up message".to_owned()),
            };
            inner.frontend.diagnostic(&format!(
                "plugin {by} asked for a {what} as the session shut down; the runtime has stopped, so it was not applied"
            ));
        }
        inner.drop_dead();
        inner.record_drops();
    }

    fn session_gate(&self) -> Option<SessionGate> {
        let inner = Arc::clone(&self.inner);
        Some(SessionGate(Arc::new(move |op: &SessionOp| {
            let event = match op {
                SessionOp::Switch(to) => LifecycleEvent::SessionSwitch(to.clone()),
                SessionOp::Fork(from) => LifecycleEvent::SessionFork(from.clone()),
            };
            decide(&inner, &event)
        })))
    }

    fn answerer(&self) -> Option<smith_engine::agent::Answerer> {
        let commands = self.commands();
        Some(smith_engine::agent::Answerer(Arc::new(
            move |plugin: &str, id: &str, answer: &str, idle: bool| {
                commands.answer(plugin, id, answer, idle)
            },
        )))
    }

    fn input(&mut self, text: &str) -> Verdict {
        decide(&self.inner, &LifecycleEvent::Input(text.to_owned()))
    }

    fn take_media(&mut self) -> Vec<smith_engine::provider::Media> {
        let plugins = lock(&self.inner).dispatcher.plugins().to_vec();
        plugins
            .iter()
            .flat_map(|plugin| {
                plugin
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .effects()
                    .map(crate::effects::Effects::take_attached)
                    .unwrap_or_default()
            })
            .collect()
    }

    fn tool_call(&mut self, call: &ToolCall) -> Verdict {
        decide(
            &self.inner,
            &LifecycleEvent::ToolCall(ToolCallEvent {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.to_string(),
            }),
        )
    }

    fn compaction(&mut self, _reason: smith_engine::protocol::CompactionReason) -> Verdict {
        decide(&self.inner, &LifecycleEvent::SessionCompact)
    }

    fn interrupter(&self) -> Option<Interrupt> {
        let handles: Vec<crate::AbortHandle> = lock(&self.inner)
            .dispatcher
            .plugins()
            .iter()
            .map(|p| lock_plugin(p).abort_handle())
            .collect();
        Some(Arc::new(move || {
            for handle in &handles {
                handle.interrupt();
            }
        }))
    }

    fn observe(&mut self, event: &Event) -> Vec<HookAction> {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        if matches!(event, Event::AgentStart) {
            // What was dropped since the last run ended belongs to it; the
            // dispatcher resets the caps for the new run.
            inner.record_drops();
        }
        let released = inner
            .dispatcher
            .observe(event, &mut SurfaceOf(&mut *inner.frontend));
        inner.announce_config();
        inner.drop_dead();
        let actions = match released {
            Some(released) => inner.release(released),
            None => Vec::new(),
        };
        if matches!(event, Event::AgentEnd { .. }) {
            inner.record_drops();
            // Between runs (settling, commands, the session's shutdown)
            // the plugins get caps of their own.
            inner.dispatcher.reset_caps();
        }
        actions
    }
}

/// Runs the commands extension plugins contribute, from the frontend.
#[derive(Clone)]
pub struct Commands {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for Commands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Commands(..)")
    }
}

impl Commands {
    /// The plugin that provides the command `name`: the last loaded plugin
    /// contributing it (later plugins override earlier ones).
    pub fn owner(&self, name: &str) -> Option<String> {
        let inner = lock(&self.inner);
        let dispatcher = &inner.dispatcher;
        dispatcher
            .plugins()
            .iter()
            .zip(dispatcher.names())
            .rev()
            .find(|(p, _)| {
                lock_plugin(p)
                    .contributions()
                    .is_some_and(|c| c.commands.iter().any(|command| command.name == name))
            })
            .map(|(_, name)| name.clone())
    }

    /// Runs the command `name` with `argument` in the plugin that provides
    /// it. Its actions wait for the runtime's next safe point, unless
    /// `settled` says the runtime is idle — idle is a safe point, so they
    /// are released now: intents are shown, and the model switches and
    /// messages are returned for the caller to send to the runtime.
    ///
    /// # Errors
    ///
    /// When no loaded plugin provides the command, or the plugin fails or
    /// refuses it (the message names the plugin).
    pub fn run(
        &self,
        name: &str,
        argument: &str,
        settled: bool,
    ) -> Result<Vec<HookAction>, String> {
        let Some(plugin) = self.owner(name) else {
            return Err(format!(
                "no loaded extension plugin provides the command /{name}; `smith plugin list` shows the plugins and their state"
            ));
        };
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        let ran = inner.dispatcher.run_command(&plugin, name, argument);
        inner.announce_config();
        inner.drop_dead();
        ran?;
        Ok(inner.release_if(settled))
    }
}

impl Commands {
    /// Raises `event` (one a frontend observes: `resize`, `config-changed`)
    /// to every plugin. Like a command's, the actions handlers return wait
    /// for the runtime's next safe point unless `settled` says it is idle;
    /// then they are released now and the model switches and messages are
    /// returned for the caller to send to the runtime.
    pub fn raise(&self, event: &LifecycleEvent, settled: bool) -> Vec<HookAction> {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        inner.notify(event);
        inner.release_if(settled)
    }

    /// Delivers the user's `answer` to the question intent `id` that
    /// `plugin` asked (an `answer` event to that plugin only); its actions
    /// are handled as [`Commands::raise`] handles them.
    ///
    /// # Errors
    ///
    /// When the plugin is no longer loaded (the message says the answer was
    /// not delivered).
    pub fn answer(
        &self,
        plugin: &str,
        id: &str,
        answer: &str,
        settled: bool,
    ) -> Result<Vec<HookAction>, String> {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        let delivered = inner.dispatcher.answer(plugin, id, answer);
        inner.drop_dead();
        delivered?;
        Ok(inner.release_if(settled))
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
