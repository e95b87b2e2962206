//! Lifecycle events to extension handlers, and their actions applied only at
//! safe points.
//!
//! A [`Dispatcher`] observes the agent runtime's events in order. Each
//! event that has a lifecycle counterpart goes to every handler in load
//! order; the actions they return (and those of commands run through
//! [`Dispatcher::run_command`]) are **queued**, never applied where they
//! arrive. Only at a safe point ([`safe_point`]: the end of a turn — after
//! the stream and the complete tool-result batch — the end of a run, or
//! settling) is the queued batch checked for conflicts
//! ([`crate::extension::check_batch`]) and released. A message streaming or
//! a tool batch running is never a safe point.
//!
//! UI intents are host effects: each is checked against the plugin's `ui`
//! grant before it is shown and recorded in the effect journal. A surface
//! that cannot show an intent's kind degrades it by the intent's declared
//! policy: `drop` (nothing shown), `text` (one line of plain text instead),
//! `refuse` (the plugin receives an `error` lifecycle event saying so) or
//! `persist` (kept for the session, returned in [`Released::persisted`]).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use smith_engine::protocol::{Event, Role, ToolStatus};

use crate::extension::{
    Action, HandlerResult, IntentKind, IntentPolicy, LifecycleEvent, UiIntent, WasmExtension,
    check_batch,
};
use crate::rate::{Budget, Dropped, Kind};

/// Where queued plugin actions may be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SafePoint {
    /// A turn ended: its stream and its complete tool-result batch are done,
    /// and the next provider request has not started.
    TurnEnd,
    /// A run ended.
    AgentEnd,
    /// The runtime is idle.
    Settled,
}

/// The safe point `event` marks, if any.
pub fn safe_point(event: &Event) -> Option<SafePoint> {
    match event {
        Event::TurnEnd { .. } => Some(SafePoint::TurnEnd),
        Event::AgentEnd { .. } => Some(SafePoint::AgentEnd),
        Event::Settled => Some(SafePoint::Settled),
        _ => None,
    }
}

/// The lifecycle event handlers receive for a runtime event, if it has one.
pub fn lifecycle(event: &Event) -> Option<LifecycleEvent> {
    let role = |role: &Role| match role {
        Role::User => "user".to_owned(),
        Role::Assistant => "assistant".to_owned(),
    };
    Some(match event {
        Event::AgentStart => LifecycleEvent::AgentStart,
        Event::AgentEnd { .. } => LifecycleEvent::AgentEnd,
        Event::Settled => LifecycleEvent::AgentSettled,
        Event::TurnStart { turn } => LifecycleEvent::TurnStart(*turn),
        Event::TurnEnd { turn } => LifecycleEvent::TurnEnd(*turn),
        Event::MessageStart { role: r } => LifecycleEvent::MessageStart(role(r)),
        Event::MessageDelta { text } => LifecycleEvent::MessageUpdate(text.clone()),
        Event::MessageEnd { message, .. } => LifecycleEvent::MessageEnd(
            match message {
                smith_engine::provider::Message::User { .. } => "user",
                smith_engine::provider::Message::Assistant { .. } => "assistant",
                _ => "tool",
            }
            .to_owned(),
        ),
        Event::ToolExecutionStart { call_id, .. } => {
            LifecycleEvent::ToolExecutionStart(call_id.clone())
        }
        Event::ToolExecutionUpdate { call_id, output } => {
            LifecycleEvent::ToolExecutionUpdate((call_id.clone(), output.clone()))
        }
        Event::ToolExecutionEnd {
            call_id, status, ..
        } => LifecycleEvent::ToolExecutionEnd((call_id.clone(), *status != ToolStatus::Ok)),
        Event::ModelChanged { model, .. } => LifecycleEvent::ModelChange(model.clone()),
        Event::Error(info) => LifecycleEvent::Error(info.message.clone()),
        _ => return None,
    })
}

/// What `host.event-details` answers while handlers see `event`'s
/// lifecycle counterpart: how a run ended, a finished tool call's output.
pub fn details(event: &Event) -> Option<String> {
    let value = match event {
        Event::AgentEnd { stop, .. } => serde_json::json!({ "stop": stop }),
        Event::ToolExecutionEnd {
            call_id,
            name,
            status,
            content,
            details,
            ..
        } => serde_json::json!({
            "call_id": call_id,
            "name": name,
            "status": status,
            "content": content,
            "details": details,
        }),
        _ => return None,
    };
    Some(value.to_string())
}

/// A frontend that shows UI intents.
pub trait Surface {
    /// The surface's name, for diagnostics (`tui`, `eval`, `rpc`).
    fn name(&self) -> &str;
    /// Whether it can show intents of this kind.
    fn can_show(&self, kind: &IntentKind) -> bool;
    /// Shows `intent` from `plugin` (its text already made plain).
    fn show(&mut self, plugin: &str, intent: &UiIntent);
    /// Shows one line of plain text from `plugin` (the `text` policy).
    fn show_text(&mut self, plugin: &str, text: &str);
}

/// What a safe point released.
#[derive(Debug, Default, PartialEq)]
pub struct Released {
    /// Actions other than UI intents, each with the plugin that asked, for
    /// the caller to apply now (model, queued message, layout, theme).
    pub actions: Vec<(String, Action)>,
    /// UI intents shown by the surface (natively or as text).
    pub shown: usize,
    /// Intents the surface could not show whose policy is `persist`: the
    /// caller keeps them in the session for a later frontend.
    pub persisted: Vec<(String, UiIntent)>,
    /// Intents refused by policy `refuse` (the plugin got an error event).
    pub refused: Vec<(String, UiIntent)>,
    /// Intents dropped by policy `drop`.
    pub dropped: usize,
    /// Diagnostics: conflicts, denied effects, failed handlers.
    pub diagnostics: Vec<String>,
    /// One `plugin.rate-limited` warning for each plugin and kind whose
    /// cap per run was first exceeded since the last release.
    pub limited: Vec<smith_diag::Diagnostic>,
}

/// How many unanswered questions a dispatcher remembers; an answer to one
/// forgotten beyond this is refused like an answer to no question.
pub const OPEN_QUESTIONS: usize = 256;

/// Delivers lifecycle events to extension plugins and applies their
/// actions at safe points.
#[derive(Debug, Default)]
pub struct Dispatcher {
    plugins: Vec<Shared>,
    /// The plugins' names, in the same order (kept so a lookup never waits
    /// for a plugin busy running a tool).
    names: Vec<String>,
    /// The plugins' caps and counters per run, in the same order (none for
    /// an instance destroyed before the dispatcher got it).
    budgets: Vec<Option<Arc<Budget>>>,
    /// Drop counts not taken yet of plugins no longer loaded, or of a run
    /// that ended without them being taken.
    held: Vec<(String, Vec<Dropped>)>,
    pending: Vec<(String, Action)>,
    diagnostics: Vec<String>,
    /// Questions (`select`, `confirm`, `input` intents) a surface asked
    /// and nobody has answered yet: (plugin, id).
    asked: Vec<(String, String)>,
}

impl Dispatcher {
    /// Handlers in load order.
    pub fn new(plugins: Vec<WasmExtension>) -> Self {
        Self {
            names: plugins.iter().map(|p| p.name().to_owned()).collect(),
            budgets: plugins.iter().map(WasmExtension::budget).collect(),
            held: Vec::new(),
            plugins: plugins.into_iter().map(share).collect(),
            pending: Vec::new(),
            diagnostics: Vec::new(),
            asked: Vec::new(),
        }
    }

    /// The plugins, in load order, each shared with the tools it runs
    /// (lock one at a time, never while holding another).
    pub fn plugins(&self) -> &[Shared] {
        &self.plugins
    }

    /// The plugins' names, in load order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Removes the plugins whose instance was destroyed (deadline, abort
    /// grace, memory limit, trap) and returns their names; their queued
    /// actions stay queued. Each plugin still loaded receives
    /// `plugin-unloaded(NAME)` for each removed one (and a plugin destroyed
    /// while handling that is removed and announced in turn).
    pub fn drop_dead(&mut self) -> Vec<String> {
        let mut all = Vec::new();
        loop {
            let mut dead = Vec::new();
            let mut index = 0;
            while index < self.plugins.len() {
                if lock_plugin(&self.plugins[index]).is_alive() {
                    index += 1;
                } else {
                    self.plugins.remove(index);
                    let name = self.names.remove(index);
                    if let Some(budget) = self.budgets.remove(index) {
                        hold(&mut self.held, &name, &budget);
                    }
                    dead.push(name);
                }
            }
            if dead.is_empty() {
                return all;
            }
            for name in &dead {
                let event = LifecycleEvent::PluginUnloaded(name.clone());
                for index in 0..self.plugins.len() {
                    self.call(index, &event, None);
                }
            }
            all.extend(dead);
        }
    }

    /// How many actions wait for the next safe point.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Observes one runtime event: delivers its lifecycle counterpart to
    /// every handler (queuing their actions), and at a safe point applies
    /// the queued batch and returns what it released. Away from safe points
    /// nothing is applied and `None` is returned.
    pub fn observe(&mut self, event: &Event, surface: &mut dyn Surface) -> Option<Released> {
        if matches!(event, Event::AgentStart) {
            self.reset_caps();
        }
        if let Some(lifecycle) = lifecycle(event) {
            let details = details(event);
            self.deliver_with(&lifecycle, details.as_deref());
        }
        safe_point(event).map(|_| self.apply(surface))
    }

    /// Runs `command` of `plugin`; its actions are queued for the next safe
    /// point.
    ///
    /// # Errors
    ///
    /// When no such plugin is loaded or the command fails (the message
    /// names the plugin).
    pub fn run_command(
        &mut self,
        plugin: &str,
        command: &str,
        argument: &str,
    ) -> Result<usize, String> {
        let Some(index) = self.index_of(plugin) else {
            return Err(format!(
                "no extension plugin named {plugin:?} is loaded; `smith plugin list` shows them"
            ));
        };
        let mut handler = lock_plugin(&self.plugins[index]);
        let result = handler.run_command(command, argument);
        let denials = handler.take_denials();
        write_log(&mut handler);
        drop(handler);
        self.diagnostics
            .extend(denials.iter().map(ToString::to_string));
        let ran = result.map_err(|e| e.to_string()).map(|actions| {
            let count = actions.len();
            self.queue(index, actions);
            count
        });
        self.announce_vcs();
        ran
    }

    /// Delivers the user's answer to the question intent `id` of `plugin`
    /// (an `answer(ID, ANSWER)` event, to that plugin only); its actions
    /// are queued for the next safe point. A question is answered once.
    ///
    /// # Errors
    ///
    /// When `plugin` has no open question `id` (none was shown, or it was
    /// answered already), or the plugin is no longer loaded (it was stopped
    /// or left out since it asked).
    pub fn answer(&mut self, plugin: &str, id: &str, answer: &str) -> Result<(), String> {
        let Some(open) = self.asked.iter().position(|(p, q)| p == plugin && q == id) else {
            return Err(format!(
                "the answer to question {id:?} of plugin {plugin} was not delivered: the plugin has no such open question (it was never asked here, or it was answered already)"
            ));
        };
        self.asked.remove(open);
        let Some(index) = self.index_of(plugin) else {
            return Err(format!(
                "the answer to question {id:?} of plugin {plugin} was not delivered: the plugin is no longer loaded in this runtime"
            ));
        };
        self.call(
            index,
            &LifecycleEvent::Answer((id.to_owned(), answer.to_owned())),
            None,
        );
        self.announce_vcs();
        Ok(())
    }

    /// Announces the working-tree operations plugins made through `vcs`
    /// since the last announcement: every other plugin receives
    /// `vcs-operation(OP)` (`snapshot ID`, `restore ID`). Operations made
    /// while handling an announcement are not announced again, so two
    /// plugins answering each other's snapshots cannot loop.
    pub fn announce_vcs(&mut self) {
        let mut made = Vec::new();
        for plugin in &self.plugins {
            let mut plugin = lock_plugin(plugin);
            for operation in plugin.take_vcs_operations() {
                made.push((plugin.name().to_owned(), operation));
            }
        }
        if made.is_empty() {
            return;
        }
        for (by, operation) in made {
            let event = LifecycleEvent::VcsOperation(operation);
            for index in 0..self.plugins.len() {
                if self.names[index] != by {
                    self.call(index, &event, None);
                }
            }
        }
        for plugin in &self.plugins {
            lock_plugin(plugin).take_vcs_operations();
        }
    }

    /// Delivers `event` (one the runtime raises outside its event stream:
    /// `session-start`, `before-provider-request`, `resize`...) to every
    /// handler, queuing their actions for the next safe point.
    pub fn notify(&mut self, event: &LifecycleEvent) {
        self.deliver(event);
    }

    fn deliver(&mut self, event: &LifecycleEvent) {
        self.deliver_with(event, None);
    }

    /// Delivers `event`, with `details` answering `host.event-details`.
    fn deliver_with(&mut self, event: &LifecycleEvent, details: Option<&str>) {
        for index in 0..self.plugins.len() {
            self.call(index, event, details);
        }
        self.announce_vcs();
    }

    /// Delivers `event` to the plugin at `index`, queuing its actions and
    /// keeping its denials and failure as diagnostics.
    fn call(&mut self, index: usize, event: &LifecycleEvent, details: Option<&str>) {
        let mut handler = lock_plugin(&self.plugins[index]);
        let result = handler.handle_with_details(event, details);
        let denials = handler.take_denials();
        write_log(&mut handler);
        drop(handler);
        self.diagnostics
            .extend(denials.iter().map(ToString::to_string));
        match result {
            Ok(HandlerResult::Actions(actions)) => self.queue(index, actions),
            // Decisions count only at decision points (extension::decide).
            Ok(HandlerResult::None | HandlerResult::Decision(_)) => {}
            // A failing handler is no decision and no action.
            Err(err) => self.diagnostics.push(err.to_string()),
        }
    }

    /// Releases the queued batch now, as at a safe point: the caller must
    /// be at one (the runtime idle, or between its turns).
    pub fn release(&mut self, surface: &mut dyn Surface) -> Released {
        self.apply(surface)
    }

    /// Releases only the queued panels (`set-widget` intents) now, keeping
    /// every other action queued, in order, for the next safe point. For
    /// an idle runtime whose frontend shows a session's panels as soon as
    /// it opens ([`crate::hooks::Frontend::shows_panels_at_start`]).
    pub fn release_panels(&mut self, surface: &mut dyn Surface) -> Released {
        let (panels, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(_, action)| {
                matches!(
                    action,
                    Action::Ui(UiIntent {
                        kind: IntentKind::SetWidget(_),
                        ..
                    })
                )
            });
        self.pending = panels;
        let released = self.apply(surface);
        let mut rest = rest;
        rest.append(&mut self.pending);
        self.pending = rest;
        released
    }

    fn apply(&mut self, surface: &mut dyn Surface) -> Released {
        let batch = std::mem::take(&mut self.pending);
        let mut released = Released {
            diagnostics: std::mem::take(&mut self.diagnostics),
            ..Released::default()
        };

        if let Err(conflict) = check_batch(&batch) {
            released.diagnostics.push(conflict);
            return released;
        }
        let mut refusals = Vec::new();
        let mut batch = batch.into_iter().peekable();
        while let Some((plugin, action)) = batch.next() {
            let Action::Ui(first) = action else {
                released.actions.push((plugin, action));
                continue;
            };
            // The UI intents of this plugin that follow are recorded
            // together: one write for their intents, one for their
            // completions.
            let mut intents = vec![plain_intent(first)];
            while let Some((_, Action::Ui(next))) =
                batch.next_if(|(p, a)| *p == plugin && matches!(a, Action::Ui(_)))
            {
                intents.push(plain_intent(next));
            }
            let Some(index) = self.index_of(&plugin) else {
                continue;
            };
            let Some(effects) = lock_plugin(&self.plugins[index]).effects().cloned() else {
                for _ in &intents {
                    released.diagnostics.push(format!(
                        "plugin {plugin} was denied a UI intent: it needs the capability ui and runs without grants; nothing was shown"
                    ));
                }
                continue;
            };
            let native: Vec<bool> = intents.iter().map(|i| surface.can_show(&i.kind)).collect();
            let summaries: Vec<serde_json::Value> = intents
                .iter()
                .map(|intent| {
                    serde_json::json!({
                        "id": intent.id,
                        "kind": kind_name(&intent.kind),
                        "policy": policy_name(intent.policy),
                        "surface": surface.name(),
                    })
                })
                .collect();
            let mut outcomes = vec![Degraded::Shown; intents.len()];
            let asked = &mut self.asked;
            let results = effects.ui_batch(&summaries, |k| {
                let intent = &intents[k];
                if native[k] {
                    if is_question(&intent.kind) {
                        // Bounded: a plugin flooding questions nobody
                        // answers cannot grow it; the oldest is forgotten.
                        if asked.len() == OPEN_QUESTIONS {
                            asked.remove(0);
                        }
                        asked.push((plugin.clone(), intent.id.clone()));
                    }
                    surface.show(&plugin, intent);
                    return true;
                }
                match intent.policy {
                    IntentPolicy::Text => {
                        surface.show_text(&plugin, &text_fallback(&intent.kind));
                        true
                    }
                    IntentPolicy::Drop => {
                        outcomes[k] = Degraded::Dropped;
                        false
                    }
                    IntentPolicy::Refuse => {
                        outcomes[k] = Degraded::Refused;
                        false
                    }
                    IntentPolicy::Persist => {
                        outcomes[k] = Degraded::Persisted;
                        false
                    }
                }
            });
            for ((intent, result), outcome) in intents.into_iter().zip(results).zip(outcomes) {
                match result {
                    // Over the plugin's journal cap: counted, nothing shown.
                    Err(crate::effects::EffectError::Limited) => {}
                    Ok(_) => match outcome {
                        Degraded::Shown => released.shown += 1,
                        Degraded::Dropped => released.dropped += 1,
                        Degraded::Refused => {
                            refusals.push((index, format!(
                                "the {} surface cannot show the {} intent {:?} and its policy is refuse; it was not shown",
                                surface.name(),
                                kind_name(&intent.kind),
                                intent.id
                            )));
                            released.refused.push((plugin.clone(), intent));
                        }
                        Degraded::Persisted => released.persisted.push((plugin.clone(), intent)),
                    },
                    Err(err) => released.diagnostics.push(err.to_string()),
                }
            }
        }
        for (index, message) in refusals {
            let mut handler = lock_plugin(&self.plugins[index]);
            if let Err(err) = handler.handle(&LifecycleEvent::Error(message)) {
                released.diagnostics.push(err.to_string());
            }
            // Actions a handler returns to an error event wait for the next
            // safe point like any other; its log lines are written at its
            // next call.
        }
        // After the batch, which may have reached a journal cap.
        released.limited = self.take_limited();
        released
    }

    /// Queues the actions the plugin at `index` returned. A UI intent over
    /// the plugin's cap per run is dropped here: counted, nothing else.
    fn queue(&mut self, index: usize, actions: Vec<Action>) {
        let budget = self.budgets.get(index).and_then(Option::as_deref);
        let name = &self.names[index];
        for action in actions {
            if matches!(action, Action::Ui(_)) && budget.is_some_and(|b| !b.admit(Kind::Ui, 1)) {
                continue;
            }
            self.pending.push((name.clone(), action));
        }
    }

    /// A run starts (on `agent_start`, which [`Dispatcher::observe`] sees)
    /// or ends (the caller, once it took the run's drop counts): every
    /// plugin's caps count afresh. Drop counts not taken yet are kept for
    /// [`Dispatcher::take_drops`].
    pub fn reset_caps(&mut self) {
        for (name, budget) in self.names.iter().zip(&self.budgets) {
            if let Some(budget) = budget {
                hold(&mut self.held, name, budget);
                budget.reset();
            }
        }
    }

    /// Writes the log lines every plugin wrote since they were last taken
    /// to smith's log (a call into a plugin takes its own; decision points
    /// and tools call plugins without the dispatcher).
    pub fn drain_logs(&mut self) {
        for plugin in &self.plugins {
            write_log(&mut lock_plugin(plugin));
        }
    }

    /// One `plugin.rate-limited` warning for each plugin and kind whose cap
    /// was first exceeded this run and not reported yet.
    pub fn take_limited(&self) -> Vec<smith_diag::Diagnostic> {
        let mut limited = Vec::new();
        for (name, budget) in self.names.iter().zip(&self.budgets) {
            let Some(budget) = budget else { continue };
            for kind in budget.newly_exceeded() {
                limited.push(crate::rate::diagnostic(
                    name,
                    kind,
                    budget.limits().get(kind),
                ));
            }
        }
        limited
    }

    /// Takes what each plugin's caps dropped since this was last asked (at
    /// the end of a run), plugins that dropped nothing left out.
    pub fn take_drops(&mut self) -> Vec<(String, Vec<Dropped>)> {
        let mut drops = std::mem::take(&mut self.held);
        for (name, budget) in self.names.iter().zip(&self.budgets) {
            if let Some(budget) = budget {
                hold(&mut drops, name, budget);
            }
        }
        drops
    }
}

/// Moves what `budget` dropped (if anything) into `held`, under `name`.
fn hold(held: &mut Vec<(String, Vec<Dropped>)>, name: &str, budget: &Budget) {
    if !budget.has_drops() {
        return;
    }
    let drops = budget.take_drops();
    match held.iter_mut().find(|(held, _)| held == name) {
        Some((_, kept)) => {
            for drop in drops {
                match kept.iter_mut().find(|k| k.kind == drop.kind) {
                    Some(k) => k.dropped += drop.dropped,
                    None => kept.push(drop),
                }
            }
        }
        None => held.push((name.to_owned(), drops)),
    }
}

/// Writes the log lines `plugin` wrote since they were last taken to
/// smith's log (`plugin.log` notes at the line's level), when the log
/// writes that level.
fn write_log(plugin: &mut WasmExtension) {
    let (lines, _) = plugin.take_log();
    if lines.is_empty() {
        return;
    }
    let Some(log) = smith_diag::log::global() else {
        return;
    };
    for (level, line) in lines {
        let level = match level {
            crate::LogLevel::Debug => smith_diag::log::Level::Debug,
            crate::LogLevel::Info => smith_diag::log::Level::Info,
            crate::LogLevel::Warn => smith_diag::log::Level::Warn,
            crate::LogLevel::Error => smith_diag::log::Level::Error,
        };
        if log.enabled(level) {
            log.note(
                level,
                "plugin.log",
                &format!("plugin {}: {line}", plugin.name()),
            );
        }
    }
}

impl Dispatcher {
    fn index_of(&self, plugin: &str) -> Option<usize> {
        self.names.iter().position(|name| name == plugin)
    }
}

/// An extension plugin instance shared by the dispatcher (its handlers)
/// and the tools it runs for the model: each call locks it, so calls into
/// one plugin never overlap, while different plugins run side by side.
pub type Shared = Arc<Mutex<WasmExtension>>;

/// `plugin` shared.
pub fn share(plugin: WasmExtension) -> Shared {
    Arc::new(Mutex::new(plugin))
}

/// Locks a shared plugin (a panic while it was held leaves plain data
/// behind; go on).
pub fn lock_plugin(plugin: &Shared) -> MutexGuard<'_, WasmExtension> {
    plugin.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Clone, Copy)]
enum Degraded {
    Shown,
    Dropped,
    Refused,
    Persisted,
}

/// Whether `kind` is a question: an intent the user answers (`select`,
/// `confirm`, `input`), whose answer comes back as an `answer` event.
pub fn is_question(kind: &IntentKind) -> bool {
    matches!(
        kind,
        IntentKind::Select(_) | IntentKind::Confirm(_) | IntentKind::Input(_)
    )
}

/// The stable name of an intent kind.
pub fn kind_name(kind: &IntentKind) -> &'static str {
    match kind {
        IntentKind::Notify(_) => "notify",
        IntentKind::SetStatus(_) => "set-status",
        IntentKind::SetWidget(_) => "set-widget",
        IntentKind::Select(_) => "select",
        IntentKind::Confirm(_) => "confirm",
        IntentKind::Input(_) => "input",
        IntentKind::Progress(_) => "progress",
        IntentKind::OpenLink(_) => "open-link",
    }
}

fn policy_name(policy: IntentPolicy) -> &'static str {
    match policy {
        IntentPolicy::Drop => "drop",
        IntentPolicy::Text => "text",
        IntentPolicy::Refuse => "refuse",
        IntentPolicy::Persist => "persist",
    }
}

/// The one line of plain text an intent degrades to under the `text`
/// policy.
pub fn text_fallback(kind: &IntentKind) -> String {
    match kind {
        IntentKind::Notify(text) | IntentKind::Input(text) | IntentKind::OpenLink(text) => {
            text.clone()
        }
        IntentKind::SetStatus(text) => format!("status: {text}"),
        IntentKind::SetWidget((name, text)) => format!("{name}: {}", text.replace('\n', " | ")),
        IntentKind::Select((prompt, options)) => format!("{prompt} [{}]", options.join(" / ")),
        IntentKind::Confirm(prompt) => format!("{prompt} [yes / no]"),
        IntentKind::Progress((label, value)) => {
            format!("{label}: {}.{}%", value / 10, value % 10)
        }
    }
}

/// Removes control characters (escape sequences included) from text a
/// plugin asked to show.
pub fn plain(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

fn plain_intent(intent: UiIntent) -> UiIntent {
    let kind = match intent.kind {
        IntentKind::Notify(t) => IntentKind::Notify(plain(&t)),
        IntentKind::SetStatus(t) => IntentKind::SetStatus(plain(&t)),
        // A widget is a panel of lines: its line breaks stay.
        IntentKind::SetWidget((n, t)) => IntentKind::SetWidget((
            plain(&n),
            t.split('\n').map(plain).collect::<Vec<_>>().join("\n"),
        )),
        IntentKind::Select((p, o)) => {
            IntentKind::Select((plain(&p), o.iter().map(|o| plain(o)).collect()))
        }
        IntentKind::Confirm(t) => IntentKind::Confirm(plain(&t)),
        IntentKind::Input(t) => IntentKind::Input(plain(&t)),
        IntentKind::Progress((l, v)) => IntentKind::Progress((plain(&l), v.min(1000))),
        IntentKind::OpenLink(t) => IntentKind::OpenLink(plain(&t)),
    };
    UiIntent { kind, ..intent }
}
