//! What reaches the interface from a runtime besides its own input: the
//! [`Feed`] of events, plugin lines and plugin questions, tagged with the
//! runtime's generation; the interface as the extension plugins' frontend
//! ([`TuiFrontend`]); and the overlays that ask plugins' questions, both
//! the intents answered later and the questions a plugin waits for
//! ([`Overlays`]).

use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use smith_engine::journal::store::StoreJournal;
use smith_engine::protocol::Event;
use smith_tui::run::Msg;
use smith_tui::{Output, Overlay, Picker};

use super::host;

/// An event for the interface, tagged with the runtime generation or the
/// replay that produced it; a replay ends with `None`.
pub(super) type AgentMsg = Msg<(u64, Option<Feed>)>;

/// What a runtime (or a replay) sends the interface.
// Events are nearly every message: boxing them to shrink the rare plugin
// lines would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(super) enum Feed {
    /// A runtime event.
    Event(Event),
    /// A line from an extension plugin (a `notify` intent, or another
    /// intent degraded to text), already prefixed with the plugin.
    Notice(String),
    /// A plugin problem: a failed handler, a conflicting batch, a denied
    /// effect, a plugin left out.
    Problem(String),
    /// A plugin's panel (a `set-widget` intent): the plugin, the panel's
    /// name and its text (empty removes it).
    Widget(String, String, String),
    /// A plugin's question (a `select`, `confirm` or `input` intent) to ask
    /// the user: the plugin and the intent.
    Question(String, smith_plugins::extension::UiIntent),
    /// A question a plugin waits for, to ask the user; the answer goes to
    /// the runtime's question broker.
    Waiting(host::questions::Waiting),
    /// The question with this id no longer waits (it timed out or the
    /// plugin's call was cancelled), and why.
    Withdrawn(String, host::questions::Withdrawn),
    /// A plugin's command finished (it runs off the interface's thread, so
    /// a command that asks a question never stops drawing or input): the
    /// actions it returned for the runtime, or its error.
    CommandDone(Result<Vec<smith_engine::agent::HookAction>, String>),
    /// The runtime's event stream ended: it stopped. Expected of a runtime
    /// the interface replaced (`/new`, `/resume`, `/continue`, a branch),
    /// whose generation is then no longer current; a fault of the current
    /// one.
    Stopped,
}

pub(super) const ANSWER: &str = "\0answer";

/// The command prefix of the answers to questions that wait.
pub(super) const WAIT: &str = "\0wait";

/// The command the overlay of question `id` of the runtime of
/// `generation` answers with.
pub(super) fn wait_command(generation: u64, id: &str) -> String {
    format!("{WAIT}\0{generation}\0{id}")
}

/// The generation and question id a [`WAIT`] command names.
pub(super) fn waited(name: &str) -> Option<(u64, &str)> {
    let (generation, id) = name
        .strip_prefix(WAIT)?
        .strip_prefix('\0')?
        .split_once('\0')?;
    Some((generation.parse().ok()?, id))
}

/// The overlay that asks a question a plugin waits for, owning focus
/// until it is answered: a confirmation takes `y`/Enter (yes) or `n`/Esc
/// (no), a selection arrows and Enter, input a line of text and Enter.
/// Esc on a selection or input answers the question's default.
pub(super) fn waiting_overlay(generation: u64, waiting: &host::questions::Waiting) -> Overlay {
    use smith_plugins::effects::QuestionKind;
    let command = wait_command(generation, &waiting.id);
    let answer = |text: &str| Output::Command {
        name: command.clone(),
        arg: text.to_owned(),
    };
    let question = &waiting.question;
    // A prompt's first line is the title; the lines after it (the exact
    // command, a diff) are shown under it.
    let (first, rest) = question
        .prompt
        .split_once('\n')
        .unwrap_or((question.prompt.as_str(), ""));
    let detail: Vec<String> = rest.lines().map(str::to_owned).collect();
    let title = if question.default.is_empty() {
        format!("[{}] {first}", waiting.plugin)
    } else {
        format!("[{}] {first} (Esc: {})", waiting.plugin, question.default)
    };
    match &question.kind {
        QuestionKind::Confirm => Overlay::Confirm {
            message: format!("[{}] {}", waiting.plugin, question.prompt),
            on_yes: answer("yes"),
            on_no: Some(answer("no")),
        },
        QuestionKind::Select(options) => Overlay::Picker(Picker {
            title,
            detail,
            command: command.clone(),
            items: options.clone(),
            filter: String::new(),
            selected: options
                .iter()
                .position(|o| *o == question.default)
                .unwrap_or(0),
            cancel: Some(answer(&question.default)),
            ..Picker::default()
        }),
        QuestionKind::Input => Overlay::Prompt {
            message: title,
            command: command.clone(),
            text: String::new(),
            cancel: Some(answer(&question.default)),
        },
    }
}

/// Shows the questions a runtime's plugins wait for as overlays, through
/// the interface's channel tagged with the runtime's generation.
pub(super) struct Overlays {
    pub(super) tx: SyncSender<AgentMsg>,
    pub(super) generation: u64,
}

impl host::questions::Presenter for Overlays {
    fn present(&self, waiting: &host::questions::Waiting) {
        // The interface may be gone at exit; the question then times out.
        let _ = self.tx.send(Msg::Agent((
            self.generation,
            Some(Feed::Waiting(waiting.clone())),
        )));
    }
    fn withdraw(&self, id: &str, why: host::questions::Withdrawn) {
        let _ = self.tx.send(Msg::Agent((
            self.generation,
            Some(Feed::Withdrawn(id.to_owned(), why)),
        )));
    }
}

/// The overlay that asks `plugin`'s question `intent` for the runtime of
/// `generation`: its answer (the chosen option, `yes`/`no`, or the text;
/// empty when dismissed with Esc) comes back as an [`ANSWER`] command.
pub(super) fn question_overlay(
    generation: u64,
    plugin: &str,
    intent: &smith_plugins::extension::UiIntent,
) -> Option<Overlay> {
    use smith_plugins::extension::IntentKind;
    let command = format!("{ANSWER}\0{generation}\0{plugin}\0{}", intent.id);
    let answer = |text: &str| Output::Command {
        name: command.clone(),
        arg: text.to_owned(),
    };
    Some(match &intent.kind {
        IntentKind::Select((prompt, options)) => Overlay::Picker(Picker {
            title: format!("[{plugin}] {prompt}"),
            detail: Vec::new(),
            command: command.clone(),
            items: options.clone(),
            filter: String::new(),
            selected: 0,
            cancel: Some(answer("")),
            ..Picker::default()
        }),
        IntentKind::Confirm(prompt) => Overlay::Confirm {
            message: format!("[{plugin}] {prompt}"),
            on_yes: answer("yes"),
            on_no: Some(answer("no")),
        },
        IntentKind::Input(prompt) => Overlay::Prompt {
            message: format!("[{plugin}] {prompt}"),
            command: command.clone(),
            text: String::new(),
            cancel: Some(answer("")),
        },
        _ => return None,
    })
}

/// The generation, plugin and question id an [`ANSWER`] command names.
pub(super) fn answered(name: &str) -> Option<(u64, &str, &str)> {
    let mut parts = name
        .strip_prefix(ANSWER)?
        .strip_prefix('\0')?
        .splitn(3, '\0');
    let generation = parts.next()?.parse().ok()?;
    Some((generation, parts.next()?, parts.next()?))
}

/// The interface as the extension plugins' frontend: what they show
/// arrives in the transcript through the interface's own channel, tagged
/// with the runtime's generation (a stale runtime's lines are dropped).
pub(super) struct TuiFrontend {
    pub(super) tx: SyncSender<AgentMsg>,
    pub(super) generation: u64,
    /// The runtime's session, where intents this interface cannot show
    /// and whose policy is `persist` are kept.
    pub(super) journal: Option<Arc<StoreJournal>>,
}

impl TuiFrontend {
    fn send(&self, feed: Feed) {
        // The interface may be gone at exit; nothing to show then.
        let _ = self.tx.send(Msg::Agent((self.generation, Some(feed))));
    }
}

impl smith_plugins::dispatch::Surface for TuiFrontend {
    fn name(&self) -> &str {
        "tui"
    }
    fn can_show(&self, kind: &smith_plugins::extension::IntentKind) -> bool {
        use smith_plugins::extension::IntentKind;
        matches!(
            kind,
            IntentKind::Notify(_) | IntentKind::SetStatus(_) | IntentKind::SetWidget(_)
        ) || smith_plugins::dispatch::is_question(kind)
    }
    fn show(&mut self, plugin: &str, intent: &smith_plugins::extension::UiIntent) {
        if smith_plugins::dispatch::is_question(&intent.kind) {
            self.send(Feed::Question(plugin.to_owned(), intent.clone()));
            return;
        }
        if let smith_plugins::extension::IntentKind::SetWidget((name, text)) = &intent.kind {
            self.send(Feed::Widget(plugin.to_owned(), name.clone(), text.clone()));
            return;
        }
        let text = smith_plugins::dispatch::text_fallback(&intent.kind);
        self.send(Feed::Notice(format!("[{plugin}] {text}")));
    }
    fn show_text(&mut self, plugin: &str, text: &str) {
        self.send(Feed::Notice(format!("[{plugin}] {text}")));
    }
}

impl smith_plugins::hooks::Frontend for TuiFrontend {
    fn persist(&mut self, plugin: &str, intent: &smith_plugins::extension::UiIntent) {
        let kind = smith_plugins::dispatch::kind_name(&intent.kind);
        let kept = match &self.journal {
            Some(journal) => host::extensions::keep_intent(journal, "tui", plugin, intent),
            None => Err(format!(
                "plugin {plugin} asked to keep its {kind} intent {:?} for a frontend that can show it; this interface has no session to keep it in, so it is lost",
                intent.id
            )),
        };
        match kept {
            Ok(()) => self.send(Feed::Notice(format!(
                "[{plugin}] {} (this interface cannot ask it; kept in the session)",
                smith_plugins::dispatch::text_fallback(&intent.kind)
            ))),
            Err(message) => self.send(Feed::Problem(message)),
        }
    }
    fn diagnostic(&mut self, message: &str) {
        smith_diag::log::note(smith_diag::log::Level::Warn, "plugin.warning", message);
        self.send(Feed::Problem(message.to_owned()));
    }
    /// The user watches the session open: the panels plugins set for it
    /// (a todo list it keeps) show at once.
    fn shows_panels_at_start(&self) -> bool {
        true
    }
}
