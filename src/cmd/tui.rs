//! `smith tui` (and `smith` with no subcommand on a terminal): the
//! fullscreen interface over the agent runtime.
//!
//! The runtime is wired as `smith eval` wires it (scripted provider,
//! session store, built-in tools); its events are forwarded into the
//! interface's bounded channel by one thread per runtime, tagged with the
//! runtime's generation so that events of a replaced runtime (after `/new`
//! or `/resume`) are dropped.
//!
//! A project whose `.smith` directory is not trusted as it is now (never
//! trusted, or changed since) is asked about first, in an overlay that owns
//! focus: trusting records it in the trust store exactly as `smith trust`
//! does and reloads configuration; "not now" keeps the project ignored.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use anyhow::Context;
use smith_config::options::{COLOR, TUI_CONFIRM_EXIT, TUI_SCROLL_LINES};
use smith_config::trust::{Project, TrustStatus, TrustStore};
use smith_config::{ConfigError, Loader, Paths};
use smith_diag::Diagnostic;
use smith_engine::agent::AgentHandle;
use smith_engine::journal::store::StoreJournal;
use smith_engine::protocol::{
    Command, CompactionOutcome, CompactionReason, Event, Role, StopCause, ToolStatus,
};
use smith_engine::provider::{Message, ProviderInfo};
use smith_engine::replay::{Pace, Recording};
use smith_store::{EntryKind, Session, Store};
use smith_tui::run::{CHANNEL_CAPACITY, Flow, Msg, run_loop, spawn_input};
use smith_tui::term::{TermConfig, Terminal};
use smith_tui::{App, Options, Output, Overlay, Picker, Product, Tree, TreeRow};

/// Start the fullscreen interface.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The provider, model and base URL.
    #[command(flatten)]
    pub choice: super::eval::ProviderChoice,
    /// Play this script with the mock provider (see docs/mock-provider.md).
    #[arg(long, value_name = "FILE")]
    pub mock_script: Option<PathBuf>,
    /// Resume this session (a name, an id or a unique id prefix).
    #[arg(long, value_name = "REF", conflicts_with = "continue_latest")]
    pub session: Option<String>,
    /// Continue the most recently changed session.
    #[arg(long = "continue", short = 'c')]
    pub continue_latest: bool,
    /// Work in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run without extension plugins' hooks (the interface's own product
    /// still comes from smith/product).
    #[arg(long)]
    pub no_plugins: bool,
}

impl Default for Args {
    /// What `smith` with no subcommand on a terminal uses: the selected
    /// provider (a live one when a credential is found, else the offline
    /// demo), a new session, the current directory.
    fn default() -> Self {
        Self {
            choice: super::eval::ProviderChoice::default(),
            mock_script: None,
            session: None,
            continue_latest: false,
            cwd: None,
            no_plugins: false,
        }
    }
}

/// An event for the interface, tagged with the runtime generation or the
/// replay that produced it; a replay ends with `None`.
type AgentMsg = Msg<(u64, Option<Feed>)>;

/// What a runtime (or a replay) sends the interface.
// Events are nearly every message: boxing them to shrink the rare plugin
// lines would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Feed {
    /// A runtime event.
    Event(Event),
    /// A line from an extension plugin (a `notify` intent, or another
    /// intent degraded to text), already prefixed with the plugin.
    Notice(String),
    /// A plugin problem: a failed handler, a conflicting batch, a denied
    /// effect, a plugin left out.
    Problem(String),
    /// A plugin's question (a `select`, `confirm` or `input` intent) to ask
    /// the user: the plugin and the intent.
    Question(String, smith_plugins::extension::UiIntent),
}

/// The command a plugin question's overlay emits, followed by
/// `\0GENERATION\0PLUGIN\0ID`; it starts with a NUL, so no typed command
/// can be taken for an answer.
const ANSWER: &str = "\0answer";

/// The overlay that asks `plugin`'s question `intent` for the runtime of
/// `generation`: its answer (the chosen option, `yes`/`no`, or the text;
/// empty when dismissed with Esc) comes back as an [`ANSWER`] command.
fn question_overlay(
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
            command: command.clone(),
            items: options.clone(),
            filter: String::new(),
            selected: 0,
            cancel: Some(answer("")),
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
fn answered(name: &str) -> Option<(u64, &str, &str)> {
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
struct TuiFrontend {
    tx: SyncSender<AgentMsg>,
    generation: u64,
    /// The runtime's session, where intents this interface cannot show
    /// and whose policy is `persist` are kept.
    journal: Option<Arc<StoreJournal>>,
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
        matches!(kind, IntentKind::Notify(_) | IntentKind::SetStatus(_))
            || smith_plugins::dispatch::is_question(kind)
    }
    fn show(&mut self, plugin: &str, intent: &smith_plugins::extension::UiIntent) {
        if smith_plugins::dispatch::is_question(&intent.kind) {
            self.send(Feed::Question(plugin.to_owned(), intent.clone()));
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
            Some(journal) => smith_host::extensions::keep_intent(journal, "tui", plugin, intent),
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
}

/// Tags of replay events have this bit set, so they never equal a runtime
/// generation.
const REPLAY_TAG: u64 = 1 << 63;

struct Runtime {
    handle: Arc<AgentHandle>,
    journal: Arc<StoreJournal>,
    forwarder: Option<JoinHandle<()>>,
    name: String,
    /// The commands the runtime's extension plugins provide.
    commands: Option<smith_plugins::hooks::Commands>,
    /// What the runtime's extension plugins say before a session switch or
    /// fork.
    gate: Option<smith_engine::agent::SessionGate>,
}

impl Runtime {
    /// Asks the runtime's extension plugins about `op`; the error line to
    /// show when one blocks it.
    fn ask(&self, op: &smith_engine::agent::SessionOp, what: &str) -> Result<(), String> {
        match self.gate.as_ref().map(|gate| gate.ask(op)) {
            Some(smith_engine::agent::Verdict::Block { by, reason }) => Err(format!(
                "the extension {by} blocked {what}: {reason}; the session stays {} (`smith plugin disable {by}` lets it through)",
                self.name
            )),
            _ => Ok(()),
        }
    }
}

/// Shows the plugin intents kept in `session` (policy `persist`, from a
/// frontend that could not show them) as notice lines, oldest first.
fn show_kept_intents(app: &mut App, session: &Session) {
    match smith_host::extensions::kept_intents(session) {
        Ok(lines) => {
            for line in lines {
                app.notice(&line);
            }
        }
        Err(message) => app.error(&message),
    }
}

impl Runtime {
    fn stop(mut self) {
        // Ignoring the result: a runtime that already stopped needs nothing.
        let _ = self.handle.send(Command::Shutdown);
        self.handle.abort();
        if let Some(thread) = self.forwarder.take() {
            // A panicked forwarder has nothing left to clean up.
            let _ = thread.join();
        }
        if let Ok(handle) = Arc::try_unwrap(self.handle) {
            handle.shutdown();
        }
    }
}

fn provider(args: &Args) -> anyhow::Result<smith_host::Chosen> {
    // A script only makes sense for the scripted provider, so it chooses it.
    let explicit = match &args.choice.provider {
        None if args.mock_script.is_some() => Some("mock"),
        other => other.as_deref(),
    };
    smith_host::choose_provider(
        explicit,
        args.choice.model.as_deref(),
        args.choice.base_url.as_deref(),
        || smith_host::mock::provider(args.mock_script.as_deref(), None),
    )
}

/// Sends the runtime what a plugin command released: a model switch, a
/// queued follow-up message.
fn run_plugin_actions(
    handle: &AgentHandle,
    actions: Vec<smith_engine::agent::HookAction>,
) -> Result<(), smith_engine::agent::AgentError> {
    for action in actions {
        match action {
            smith_engine::agent::HookAction::SetModel { model, .. } => {
                handle.send(Command::SetModel { model })?;
            }
            smith_engine::agent::HookAction::FollowUp { text, .. } => {
                handle.send(Command::FollowUp { text })?;
            }
        }
    }
    Ok(())
}

/// Which session a runtime records into.
enum Target {
    New,
    Existing(String),
}

fn start(
    args: &Args,
    cwd: &std::path::Path,
    target: Target,
    generation: u64,
    tx: &SyncSender<AgentMsg>,
    app: &mut App,
) -> anyhow::Result<(Runtime, ProviderInfo)> {
    let chosen = provider(args)?;
    let frontend_tx = tx.clone();
    let options = smith_host::RuntimeOptions {
        model: args.choice.model.clone(),
        extensions: (!args.no_plugins).then(|| {
            smith_host::Extensions(Arc::new(move |journal: &Arc<StoreJournal>| {
                Box::new(TuiFrontend {
                    tx: frontend_tx.clone(),
                    generation,
                    journal: Some(Arc::clone(journal)),
                }) as Box<dyn smith_plugins::hooks::Frontend>
            }))
        }),
        notices_on_stderr: false,
        ..smith_host::RuntimeOptions::new(
            smith_host::LiveProviders::once(chosen.live),
            cwd.to_owned(),
            crate::settings::session_root()?,
        )
    };
    let choice = match target {
        Target::Existing(reference) => smith_host::SessionChoice::Open(reference),
        Target::New => {
            smith_host::SessionChoice::New(Some(format!("tui-{}", smith_store::now_ms())))
        }
    };
    let smith_host::Runtime {
        handle,
        journal,
        name,
        model,
        provider: info,
        gate,
        commands,
        resumed,
        compaction_summary,
        ..
    } = options.start(&choice).map_err(|e| e.into_cli(""))?;
    if resumed {
        let session = journal.with_session(Session::clone);
        show_history(app, &session, compaction_summary.as_deref());
        show_kept_intents(app, &session);
    }
    let handle = Arc::new(handle);
    let reader = Arc::clone(&handle);
    let tx = tx.clone();
    let forwarder = std::thread::Builder::new()
        .name("smith-tui-agent".to_owned())
        .spawn(move || {
            while let Some(event) = reader.recv() {
                if tx
                    .send(Msg::Agent((generation, Some(Feed::Event(event)))))
                    .is_err()
                {
                    return;
                }
            }
            // The receiver may be gone at exit; nothing to report then.
            let _ = tx.send(Msg::AgentGone);
        })
        .context("could not start the thread that forwards agent events")?;
    let mut status = app.status.clone();
    status.model = model;
    status.busy = false;
    status.queue = 0;
    app.set_status(status);
    Ok((
        Runtime {
            handle,
            journal,
            forwarder: Some(forwarder),
            name,
            commands,
            gate,
        },
        info,
    ))
}

/// Fills the transcript from a resumed session without copying its text:
/// the selected branch from the compaction boundary on becomes
/// session-backed entries over a snapshot of the session (its records; the
/// payload arena is shared, not copied), preceded by the compaction's
/// summary when there is one.
fn show_history(app: &mut App, session: &Session, summary: Option<&str>) {
    let entries = Arc::new(smith_tui::session::SessionEntries::new(session.clone()));
    if let Err(err) = app.show_session(entries, session.compaction_boundary(), summary) {
        app.error(&format!(
            "the session's history could not be shown past this point: {err}"
        ));
    }
}

/// One line describing a tool call's arguments: the `subject` argument the
/// tool's presentation names, else the first of command, path, pattern and
/// url.
fn summarize(arguments: &serde_json::Value, subject: Option<&str>) -> String {
    let text = match arguments {
        serde_json::Value::Object(map) => subject
            .iter()
            .chain(&["command", "path", "pattern", "url"])
            .find_map(|k| map.get(*k).and_then(serde_json::Value::as_str))
            .map_or_else(|| arguments.to_string(), str::to_owned),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 {
        let mut cut: String = flat.chars().take(79).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// The user text nearest before record `index` on its path to the root
/// (its own text when it is a user message), cut to `max` characters;
/// empty when there is none or it cannot be read.
fn user_text_before(session: &Session, index: usize, max: usize) -> String {
    let Some(record) = session
        .ancestors(index)
        .find(|r| r.entry_kind() == EntryKind::UserMessage)
    else {
        return String::new();
    };
    let Ok(content) = session.content(record) else {
        return String::new();
    };
    let mut json = String::new();
    if smith_codec::json::from_cbor(&content, &mut json).is_err() {
        return String::new();
    }
    let text = serde_json::from_str::<serde_json::Value>(&json)
        .ok()
        .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_default();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// The session's tree for the branch overlay: one row per leaf and per
/// fork point (an entry with more than one child), depth-first in append
/// order, each nested under the fork point it grows from. Chains of
/// single children are folded into the row they lead to, so a session
/// of a million entries on one branch is one row. Reads records only,
/// except for the one user message each row quotes.
fn branch_rows(session: &Session) -> Vec<TreeRow> {
    use smith_store::NONE;
    let records = session.records();
    let n = records.len();
    let mut first_child = vec![NONE; n];
    let mut next_sibling = vec![NONE; n];
    let mut children = vec![0u32; n];
    let mut roots = Vec::new();
    // Backwards, so each child list comes out in append order.
    for i in (0..n).rev() {
        let p = records[i].parent_index;
        if p == NONE || p as usize >= n {
            roots.push(i);
        } else {
            next_sibling[i] = first_child[p as usize];
            first_child[p as usize] = i as u32;
            children[p as usize] += 1;
        }
    }
    let current = session.leaf().map(|l| l.id);
    let on_branch: std::collections::HashSet<u64> = session.branch().iter().map(|r| r.id).collect();
    let mut rows = Vec::new();
    // Depth-first without recursion (a branch can be a million deep).
    let mut stack: Vec<(usize, u16)> = roots.into_iter().map(|r| (r, 0)).collect();
    while let Some((start, depth)) = stack.pop() {
        let mut i = start;
        while children[i] == 1 {
            i = first_child[i] as usize;
        }
        let r = &records[i];
        let quote = user_text_before(session, i, 40);
        let what = if children[i] == 0 {
            let depth_entries = session.ancestors(i).count();
            format!("{depth_entries} entries")
        } else {
            format!("fork, {} branches", children[i])
        };
        let mut label = format!("entry {} · {what}", r.id);
        if !quote.is_empty() {
            label.push_str(&format!(" · “{quote}”"));
        }
        if on_branch.contains(&r.id) && Some(r.id) != current {
            label.push_str(" · on the selected branch");
        }
        rows.push(TreeRow {
            depth,
            label,
            arg: r.id.to_string(),
            current: Some(r.id) == current,
        });
        let mut kids = Vec::with_capacity(children[i] as usize);
        let mut c = first_child[i];
        while c != NONE {
            kids.push(c as usize);
            c = next_sibling[c as usize];
        }
        for k in kids.into_iter().rev() {
            stack.push((k, depth + 1));
        }
    }
    rows
}

/// The overlay `/branch` opens for `session`.
fn branch_overlay(session: &Session) -> Overlay {
    let rows = branch_rows(session);
    let selected = rows.iter().position(|r| r.current).unwrap_or(0);
    Overlay::Tree(Tree {
        title: " branches · enter selects ".to_owned(),
        command: "branch".to_owned(),
        rows,
        selected,
    })
}

/// The overlay `/plugins` opens.
fn plugins_overlay() -> Overlay {
    let mut lines: Vec<String> = smith_plugins::builtin::BUILTINS
        .iter()
        .map(|b| format!("{} ({}, built in): {}", b.name, b.world, b.description))
        .collect();
    lines.push(String::new());
    lines.push(
        "The layout, theme, keys, commands and tool presentation come from smith/product \
         and the enabled extension plugins, read once when the interface starts."
            .to_owned(),
    );
    Overlay::Info {
        title: " plugins · any key closes ".to_owned(),
        lines,
    }
}

/// How fast `/replay ARG` plays: empty is 10x, `instant` (or `0`) does not
/// wait, a number is the speed factor (1 is real time).
fn replay_pace(arg: &str) -> Result<Pace, String> {
    match arg.trim().trim_end_matches('x') {
        "" => Ok(Pace::Scaled(10.0)),
        "instant" | "0" => Ok(Pace::Instant),
        n => match n.parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => Ok(Pace::Scaled(f)),
            _ => Err(format!(
                "/replay {arg:?}: the speed must be a positive number (1 is real time, 10 is ten times faster) or `instant`; for example `/replay 4`"
            )),
        },
    }
}

/// Plays `recording` into `tx` on its own thread, each event tagged with
/// `tag`, then `None`; stops early when `stop` is set or the interface
/// is gone.
fn spawn_replay(
    recording: Recording,
    pace: Pace,
    tag: u64,
    stop: Arc<AtomicBool>,
    tx: SyncSender<AgentMsg>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("smith-tui-replay".to_owned())
        .spawn(move || {
            let _ = recording.play(None, pace, |event| {
                if stop.load(Ordering::Relaxed) {
                    return Err(());
                }
                tx.send(Msg::Agent((tag, Some(Feed::Event(event.clone())))))
                    .map_err(|_| ())
            });
            // The interface may be gone at exit; nothing to report then.
            let _ = tx.send(Msg::Agent((tag, None)));
        })
        .context("could not start the thread that plays the replay")?;
    Ok(())
}

/// Applies one replayed event: as a live one, plus the user messages a
/// live session shows from the editor.
fn apply_replayed(
    app: &mut App,
    event: Event,
    summaries: &mut Vec<(String, String)>,
    window: Option<u64>,
) {
    if let Event::MessageEnd {
        message: Message::User { text },
        ..
    } = &event
    {
        app.user_message(text);
    }
    apply(app, event, summaries, window);
}

/// Selects entry `entry` of session `id` as its leaf through the store (a
/// leaf-switch entry under it), so the next runtime resumes that branch.
fn select_leaf(root: &Path, id: &str, entry: u64) -> anyhow::Result<()> {
    let store = Store::open(root)?;
    let mut session = store
        .load(id)
        .with_context(|| format!("could not open session {id} to switch its branch"))?;
    store
        .select_leaf(&mut session, entry, None)
        .with_context(|| format!("could not select entry {entry} as the leaf of session {id}"))?;
    Ok(())
}

/// How the interface names a compaction's reason.
fn compaction_reason(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Manual => "asked for",
        CompactionReason::Threshold => "the context is nearly full",
        CompactionReason::Overflow => "the provider found the context too large",
    }
}

/// Applies one agent event to the interface.
fn apply(app: &mut App, event: Event, summaries: &mut Vec<(String, String)>, window: Option<u64>) {
    let mut status = app.status.clone();
    match event {
        Event::AgentStart => status.busy = true,
        Event::AgentEnd { stop, cost, .. } => {
            status.busy = false;
            if let Some(c) = cost {
                status.cost = Some(status.cost.unwrap_or(0.0) + c);
            }
            match stop {
                StopCause::Aborted => app.notice("interrupted"),
                StopCause::Budget => app.notice("stopped: budget reached"),
                StopCause::TurnLimit => app.notice("stopped: turn limit reached"),
                StopCause::Done | StopCause::Error => {}
            }
        }
        Event::MessageDelta { text } => app.assistant_delta(&text),
        Event::ThinkingDelta { text } => app.thinking_delta(&text),
        Event::MessageStart {
            role: Role::Assistant,
        } => app.assistant_delta(""),
        Event::MessageEnd { usage: Some(u), .. } => {
            let used = u.input.unwrap_or(0)
                + u.cache_read.unwrap_or(0)
                + u.cache_write.unwrap_or(0)
                + u.output.unwrap_or(0);
            status.context = window.map(|w| (used, w));
        }
        Event::ToolCall { call } => {
            let subject = app
                .product()
                .tool(&call.name)
                .and_then(|t| t.subject.as_deref());
            summaries.push((call.id.clone(), summarize(&call.arguments, subject)));
        }
        Event::ToolExecutionStart { call_id, name, .. } => {
            let summary = summaries
                .iter()
                .position(|(id, _)| *id == call_id)
                .map(|i| summaries.swap_remove(i).1)
                .unwrap_or_default();
            app.tool_start(&call_id, &name, &summary);
        }
        Event::ToolExecutionEnd {
            call_id,
            status: tool_status,
            content,
            ..
        } => app.tool_end(&call_id, tool_status == ToolStatus::Ok, &content),
        Event::CompactionStart {
            reason,
            tokens_before,
        } => {
            status.activity = "compacting".to_owned();
            // Busy, so that Esc interrupts it.
            status.busy = true;
            app.notice(&format!(
                "compacting ({}) · context about {tokens_before} tokens",
                compaction_reason(reason)
            ));
        }
        Event::CompactionEnd {
            reason,
            outcome,
            tokens_before,
            tokens_after,
            summarized_messages,
            kept_messages,
            error,
            ..
        } => {
            status.activity.clear();
            // A compaction inside a run leaves the run busy.
            if reason == CompactionReason::Manual {
                status.busy = false;
            }
            match outcome {
                CompactionOutcome::Compacted => app.notice(&format!(
                    "compacted: {} messages summarized, {} kept · context about {tokens_before} → {} tokens",
                    summarized_messages.unwrap_or(0),
                    kept_messages.unwrap_or(0),
                    tokens_after.map_or_else(|| "?".to_owned(), |t| t.to_string()),
                )),
                CompactionOutcome::Skipped => app.notice(&format!(
                    "not compacted: {}",
                    error.map_or_else(|| "there is nothing to summarize yet".to_owned(), |e| e.message)
                )),
                CompactionOutcome::Aborted => app.notice("compaction interrupted; the context is unchanged"),
                CompactionOutcome::Failed => app.error(&format!(
                    "compaction failed, the context is unchanged: {}",
                    error.map_or_else(|| "no reason was given".to_owned(), |e| e.message)
                )),
            }
        }
        Event::QueueChanged { items } => status.queue = items.len(),
        Event::ModelChanged { model, .. } => status.model = model,
        Event::Error(info) => {
            smith_diag::log::report(&info.to_diagnostic());
            app.error(&format!("{}: {}", info.kind, info.message));
        }
        _ => {}
    }
    app.set_status(status);
}

/// The session store at `session.dir` (else `<data dir>/sessions`).
fn open_store() -> anyhow::Result<Store> {
    Ok(Store::open(crate::settings::session_root()?)?)
}

/// The interface options `loader` resolves, or the defaults and the error;
/// a warning when `tui.theme` names no theme (the default theme is used).
fn load_options(
    loader: Result<Loader, ConfigError>,
    product: &Product,
) -> (Options, Option<ConfigError>, Option<Diagnostic>) {
    let mut options = Options::default();
    let mut failure = None;
    let mut warning = None;
    match loader.and_then(Loader::load) {
        Ok(config) => {
            options.mouse = crate::settings::tui_mouse(&config);
            let (theme, unknown) = crate::settings::tui_theme(&config, product);
            options.theme = Some(theme);
            warning = unknown;
            if let Some(confirm) = config.bool(&TUI_CONFIRM_EXIT) {
                options.confirm_exit = confirm;
            }
            if let Some(lines) = config.int(&TUI_SCROLL_LINES) {
                options.scroll_lines = u16::try_from(lines.clamp(1, 100)).unwrap_or(3);
            }
            options.color = config.str(&COLOR) != Some("never");
        }
        Err(err) => failure = Some(err),
    }
    options.color &= !smith_tui::term::no_color();
    (options, failure, warning)
}

/// The options whose value in effect differs between `before` and `after`
/// (set, unset or changed), in key order.
fn changed_keys(before: &smith_config::Config, after: &smith_config::Config) -> Vec<&'static str> {
    let value = |config: &smith_config::Config, key: &str| {
        config.entry(key).and_then(|e| e.value()).cloned()
    };
    let mut keys: Vec<&'static str> = before
        .entries()
        .iter()
        .chain(after.entries())
        .map(|e| e.decl.key)
        .filter(|key| value(before, key) != value(after, key))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The loader for the process, searching for the project from `cwd`.
fn process_loader(cwd: &Path) -> Result<Loader, ConfigError> {
    Loader::from_process().map(|l| l.start_dir(cwd))
}

/// The trust question for the project containing `cwd`, when it has a
/// `.smith` directory that is not trusted as it is now.
///
/// # Errors
///
/// When the trust store cannot be read or the project cannot be digested.
fn trust_question(paths: &Paths, cwd: &Path) -> Result<Option<Overlay>, ConfigError> {
    let Some(project) = Project::discover(cwd, paths.home.as_deref()) else {
        return Ok(None);
    };
    let changed = match TrustStore::open(&paths.trust_file())?.status(&project)? {
        TrustStatus::Trusted => return Ok(None),
        TrustStatus::Untrusted => false,
        TrustStatus::Changed { .. } => true,
    };
    Ok(Some(Overlay::Trust {
        path: project.root.display().to_string(),
        changed,
        on_trust: false,
    }))
}

/// Carries out the answer to the trust question about `path`: trusting
/// records it in the trust store and reloads the options from `loader`
/// (so the project's configuration applies); "not now" leaves the project
/// ignored and says how to trust it later.
fn answer_trust(
    app: &mut App,
    paths: &Paths,
    path: &str,
    trust: bool,
    loader: impl FnOnce() -> Result<Loader, ConfigError>,
) {
    if !trust {
        app.notice(&format!(
            "not trusted: {path}; its .smith directory (configuration, plugins) is ignored. \
             Review it, then run `smith trust {path}` to use it."
        ));
        return;
    }
    let recorded = Project::at(Path::new(path)).and_then(|project| {
        TrustStore::open(&paths.trust_file())?.trust(&project)?;
        Ok(project)
    });
    match recorded {
        Ok(project) => {
            let (options, failure, warning) = load_options(loader(), app.product());
            app.set_options(options);
            if let Some(w) = warning {
                smith_diag::log::report(&w);
                app.error(&format!("{}: {}; {}", w.what(), w.why(), w.next()));
            }
            app.notice(&format!(
                "trusted: {path}; its configuration now applies. Any change under {} asks again.",
                project.smith_dir().display()
            ));
            if let Some(err) = failure {
                app.error(&format!(
                    "the project's configuration could not be applied: {err}"
                ));
            }
        }
        Err(err) => app.error(&format!(
            "could not trust {path}: {err}; it stays ignored. Run `smith trust {path}` to retry."
        )),
    }
}

/// Runs the interface until the user quits.
///
/// # Errors
///
/// When there is no terminal, or the provider, working directory or session
/// store cannot be set up.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    // The product is built once from the plugins' contributions and cached
    // in the interface: drawing never calls into a plugin.
    let (product, product_warnings) = super::product::load(args.no_plugins);
    for warning in &product_warnings {
        smith_host::extensions::warn(warning);
    }
    let (options, config_failure, theme_warning) = load_options(process_loader(&cwd), &product);
    let style = super::config::style(None);
    if let Some(err) = &config_failure {
        eprint!("{}", err.diagnostic().render_terminal(style));
        smith_diag::log::report(err.diagnostic());
        eprintln!("smith: the interface starts with its default settings");
    }
    if let Some(w) = &theme_warning {
        eprint!("{}", w.render_terminal(style));
        smith_diag::log::report(w);
    }
    let mut app = App::new(product, options);
    app.set_cwd(cwd.clone());
    for warning in &product_warnings {
        // Standard error is hidden behind the interface: say it there too.
        app.error(warning);
    }
    if let Some(w) = &theme_warning {
        // Standard error is hidden behind the interface: say it there too.
        app.error(&format!("{}: {}; {}", w.what(), w.why(), w.next()));
    }
    // The terminal first: without one nothing else (a new session) is made.
    // Every later error drops it, which restores the terminal.
    let mut term = Terminal::enter(TermConfig {
        color: options.color,
        probe: true,
        mouse: options.mouse,
    })?;
    let (tx, rx) = sync_channel::<AgentMsg>(CHANNEL_CAPACITY);
    let target = if let Some(reference) = &args.session {
        Target::Existing(reference.clone())
    } else if args.continue_latest {
        let latest = open_store()?.latest()?;
        match latest {
            Some(info) => Target::Existing(info.id.to_hex()),
            None => Target::New,
        }
    } else {
        Target::New
    };
    let (runtime, info) = start(&args, &cwd, target, 1, &tx, &mut app)?;
    app.set_models(info.models.iter().map(|m| m.id.clone()).collect());
    // Shared by the two callbacks of the loop.
    let window = Cell::new(
        info.models
            .iter()
            .find(|m| m.id == app.status.model)
            .and_then(|m| m.context_window),
    );
    app.notice(&format!("session {} · F1 help · / commands", runtime.name));
    let paths = Paths::from_process();
    let unchecked = |app: &mut App, err: &ConfigError| {
        app.error(&format!(
            "the project's trust could not be checked, so it is ignored: {err}"
        ));
    };
    match paths.as_ref().map(|p| trust_question(p, &cwd)) {
        Ok(Ok(Some(question))) => app.open(question),
        Ok(Ok(None)) => {}
        Ok(Err(err)) => unchecked(&mut app, &err),
        Err(err) => unchecked(&mut app, err),
    }

    spawn_input(tx.clone())?;
    let fault = std::env::var("SMITH_TUI_TEST_FAULT").unwrap_or_default();
    let mut runtime = Some(runtime);
    let summaries: RefCell<Vec<(String, String)>> = RefCell::new(Vec::new());
    let generation = Cell::new(1u64);
    // The replay playing now: its tag and the flag that stops it.
    let replay: RefCell<Option<(u64, Arc<AtomicBool>)>> = RefCell::new(None);
    let replays = Cell::new(0u64);
    let mut failure: Option<anyhow::Error> = None;
    let result = run_loop(
        &mut term,
        &mut app,
        &rx,
        |app, (tag, event)| {
            if tag == generation.get() {
                match event {
                    Some(Feed::Event(event)) => {
                        apply(app, event, &mut summaries.borrow_mut(), window.get());
                    }
                    Some(Feed::Notice(text)) => app.notice(&text),
                    Some(Feed::Problem(text)) => app.error(&text),
                    Some(Feed::Question(plugin, intent)) => {
                        if let Some(overlay) = question_overlay(tag, &plugin, &intent) {
                            app.ask(overlay);
                        }
                    }
                    None => {}
                }
                return;
            }
            let playing = replay.borrow().as_ref().map(|(t, _)| *t);
            if playing != Some(tag) {
                return;
            }
            match event {
                Some(Feed::Event(event)) => {
                    apply_replayed(app, event, &mut summaries.borrow_mut(), window.get());
                }
                // A replay sends events only.
                Some(Feed::Notice(_) | Feed::Problem(_) | Feed::Question(..)) => {}
                None => {
                    replay.borrow_mut().take();
                    let mut status = app.status.clone();
                    status.activity.clear();
                    status.busy = false;
                    app.set_status(status);
                    app.notice("replay finished");
                }
            }
        },
        |app, term, output| {
            // Test hook for the terminal-restore tests: fail in a chosen
            // way while the interface owns the terminal.
            match fault.as_str() {
                "panic" => {
                    panic!("SMITH_TUI_TEST_FAULT=panic: a deliberate panic inside the interface")
                }
                "abort" => std::process::abort(),
                "error" => {
                    failure = Some(anyhow::anyhow!(
                        "SMITH_TUI_TEST_FAULT=error: a deliberate error inside the interface"
                    ));
                    return Flow::Exit;
                }
                _ => {}
            }
            let Some(rt) = runtime.as_ref() else {
                return Flow::Exit;
            };
            let sent = match output {
                Output::Quit => return Flow::Exit,
                Output::Trust { path, trust } => {
                    let before = process_loader(&cwd).and_then(Loader::load).ok();
                    match &paths {
                        Ok(paths) => {
                            answer_trust(app, paths, &path, trust, || process_loader(&cwd));
                        }
                        Err(err) => unchecked(app, err),
                    }
                    // The project's configuration may apply now: plugins
                    // hear of each option whose value changed.
                    let after = process_loader(&cwd).and_then(Loader::load).ok();
                    match (&rt.commands, before, after) {
                        (Some(commands), Some(before), Some(after)) => {
                            let mut actions = Vec::new();
                            for key in changed_keys(&before, &after) {
                                actions.extend(commands.raise(
                                    &smith_plugins::extension::LifecycleEvent::ConfigChanged(
                                        key.to_owned(),
                                    ),
                                    !app.status.busy,
                                ));
                            }
                            run_plugin_actions(&rt.handle, actions)
                        }
                        _ => Ok(()),
                    }
                }
                Output::Prompt(_) | Output::Steer(_) | Output::FollowUp(_)
                    if replay.borrow().is_some() =>
                {
                    app.notice(
                        "not sent: a replay is playing; press Esc to stop it, then send again",
                    );
                    Ok(())
                }
                Output::Prompt(text) => rt.handle.send(Command::Prompt { text }),
                Output::Steer(text) => rt.handle.send(Command::Steer { text }),
                Output::FollowUp(text) => rt.handle.send(Command::FollowUp { text }),
                Output::Interrupt => {
                    if let Some((_, stop)) = replay.borrow().as_ref() {
                        stop.store(true, Ordering::Relaxed);
                    } else {
                        rt.handle.abort();
                    }
                    Ok(())
                }
                Output::Copy(text) => {
                    match term.copy(&text) {
                        Ok(true) => {}
                        Ok(false) => app.notice(
                            "this terminal's clipboard support is unknown; set SMITH_TUI_CAPS=clipboard=on to send OSC 52 anyway",
                        ),
                        Err(err) => app.error(&format!("could not write to the terminal: {err}")),
                    }
                    Ok(())
                }
                Output::Resized { columns, rows } => match &rt.commands {
                    // Idle is a safe point: what handlers return applies now.
                    Some(commands) => run_plugin_actions(
                        &rt.handle,
                        commands.raise(
                            &smith_plugins::extension::LifecycleEvent::Resize((
                                u32::from(columns),
                                u32::from(rows),
                            )),
                            !app.status.busy,
                        ),
                    ),
                    None => Ok(()),
                },
                Output::Command { name, arg } if name.starts_with(ANSWER) => {
                    match (answered(&name), &rt.commands) {
                        (Some((asked, plugin, id)), Some(commands))
                            if asked == generation.get() =>
                        {
                            match commands.answer(plugin, id, &arg, !app.status.busy) {
                                Ok(actions) => run_plugin_actions(&rt.handle, actions),
                                Err(message) => {
                                    app.error(&message);
                                    Ok(())
                                }
                            }
                        }
                        (Some((_, plugin, id)), _) => {
                            app.notice(&format!(
                                "the answer to question {id:?} of plugin {plugin} was not delivered: it was asked in a session this interface has since left"
                            ));
                            Ok(())
                        }
                        (None, _) => Ok(()),
                    }
                }
                Output::Command { name, arg } => match name.as_str() {
                    "model" if !arg.is_empty() => {
                        window.set(
                            info.models
                                .iter()
                                .find(|m| m.id == arg)
                                .and_then(|m| m.context_window),
                        );
                        rt.handle.send(Command::SetModel { model: arg })
                    }
                    "branch" if arg.is_empty() => {
                        let overlay = rt.journal.with_session(branch_overlay);
                        app.open(overlay);
                        Ok(())
                    }
                    "plugins" => {
                        app.open(plugins_overlay());
                        Ok(())
                    }
                    "compact" => {
                        if app.status.busy {
                            app.notice(
                                "the agent is working; /compact runs once the turn ends (Esc interrupts it)",
                            );
                            Ok(())
                        } else {
                            rt.handle.send(Command::Compact {
                                instructions: (!arg.is_empty()).then_some(arg),
                            })
                        }
                    }
                    "replay" => {
                        if replay.borrow().is_some() {
                            app.notice("a replay is already playing; press Esc to stop it");
                            return Flow::Continue;
                        }
                        if app.status.busy {
                            app.notice("the agent is working; /replay plays the session once the turn ends (Esc interrupts it)");
                            return Flow::Continue;
                        }
                        let pace = match replay_pace(&arg) {
                            Ok(pace) => pace,
                            Err(message) => {
                                app.error(&message);
                                return Flow::Continue;
                            }
                        };
                        match rt.journal.with_session(Recording::from_session) {
                            Ok(recording) => {
                                replays.set(replays.get() + 1);
                                let tag = REPLAY_TAG | replays.get();
                                let stop = Arc::new(AtomicBool::new(false));
                                app.transcript = smith_tui::Transcript::new();
                                summaries.borrow_mut().clear();
                                app.notice(&format!(
                                    "replaying session {} ({} turns) · Esc stops",
                                    rt.name, recording.turns
                                ));
                                let mut status = app.status.clone();
                                status.activity = "replaying".to_owned();
                                app.set_status(status);
                                match spawn_replay(recording, pace, tag, stop.clone(), tx.clone()) {
                                    Ok(()) => *replay.borrow_mut() = Some((tag, stop)),
                                    Err(err) => app.error(&format!("{err:#}")),
                                }
                            }
                            Err(err) => {
                                app.error(&format!("the session cannot be replayed: {err}"))
                            }
                        }
                        Ok(())
                    }
                    "new" | "resume" | "continue" | "branch"
                        if !(name == "resume" && arg.is_empty()) =>
                    {
                        let target = match name.as_str() {
                            "new" => Target::New,
                            "branch" => {
                                let Ok(entry) = arg.trim().trim_start_matches('#').parse::<u64>()
                                else {
                                    app.error(&format!(
                                        "/branch {arg:?}: expected an entry id such as `/branch 12`; run /branch without an argument to pick one from the tree"
                                    ));
                                    return Flow::Continue;
                                };
                                if app.status.busy || replay.borrow().is_some() {
                                    app.notice(
                                        "the agent or a replay is running; press Esc to stop it, then /branch again",
                                    );
                                    return Flow::Continue;
                                }
                                let id = rt.journal.session_id().to_hex();
                                let op = smith_engine::agent::SessionOp::Fork(format!(
                                    "{}#{entry}",
                                    rt.name
                                ));
                                if let Err(message) = rt.ask(&op, &format!("/branch {entry}")) {
                                    app.error(&message);
                                    return Flow::Continue;
                                }
                                if let Some(old) = runtime.take() {
                                    old.stop();
                                }
                                let selected = crate::settings::session_root()
                                    .and_then(|root| select_leaf(&root, &id, entry));
                                match selected {
                                    Ok(()) => Target::Existing(id),
                                    Err(err) => {
                                        app.error(&format!("{err:#}"));
                                        Target::Existing(id)
                                    }
                                }
                            }
                            "continue" => match open_store().and_then(|s| Ok(s.latest()?)) {
                                Ok(Some(latest)) => Target::Existing(latest.id.to_hex()),
                                Ok(None) => Target::New,
                                Err(err) => {
                                    app.error(&format!("could not read the session store: {err}"));
                                    return Flow::Continue;
                                }
                            },
                            _ => Target::Existing(arg),
                        };
                        if name != "branch" {
                            let to = match &target {
                                Target::New => String::new(),
                                Target::Existing(reference) => reference.clone(),
                            };
                            let op = smith_engine::agent::SessionOp::Switch(to);
                            // A fresh borrow: /branch has stopped the
                            // runtime by now, so `rt` is not used past it.
                            let asked = match runtime.as_ref() {
                                Some(current) => current.ask(&op, &format!("/{name}")),
                                None => Ok(()),
                            };
                            if let Err(message) = asked {
                                app.error(&message);
                                return Flow::Continue;
                            }
                        }
                        if let Some(old) = runtime.take() {
                            old.stop();
                        }
                        if let Some((_, stop)) = replay.borrow_mut().take() {
                            stop.store(true, Ordering::Relaxed);
                        }
                        generation.set(generation.get() + 1);
                        app.transcript = smith_tui::Transcript::new();
                        summaries.borrow_mut().clear();
                        match start(&args, &cwd, target, generation.get(), &tx, app) {
                            Ok((rt, _)) => {
                                app.notice(&format!("session {}", rt.name));
                                runtime = Some(rt);
                            }
                            Err(err) => {
                                failure = Some(err);
                                return Flow::Exit;
                            }
                        }
                        Ok(())
                    }
                    "resume" => {
                        match open_store().and_then(|s| Ok(s.list()?)) {
                            Ok(mut list) => {
                                list.sort_by_key(|s| std::cmp::Reverse(s.modified_ms));
                                let items = list
                                    .iter()
                                    .map(|s| s.name.clone().unwrap_or_else(|| s.id.to_hex()))
                                    .collect();
                                app.open(Overlay::Picker(Picker {
                                    title: "Sessions".to_owned(),
                                    command: "resume".to_owned(),
                                    items,
                                    filter: String::new(),
                                    selected: 0,
                                    cancel: None,
                                }));
                            }
                            Err(err) => app.error(&format!("could not list sessions: {err}")),
                        }
                        Ok(())
                    }
                    other => match rt.commands.as_ref().filter(|c| c.owner(other).is_some()) {
                        // A plugin's command: idle is a safe point, so its
                        // actions apply now; while the agent works they
                        // wait for the end of the turn.
                        Some(commands) => match commands.run(other, &arg, !app.status.busy) {
                            Ok(actions) => run_plugin_actions(&rt.handle, actions),
                            Err(message) => {
                                app.error(&message);
                                Ok(())
                            }
                        },
                        None => {
                            app.notice(&format!(
                                "/{other} is not available in the interface yet; use `smith session` or `smith eval` for it"
                            ));
                            Ok(())
                        }
                    },
                },
            };
            if let Err(err) = sent {
                app.error(&err.to_string());
            }
            Flow::Continue
        },
    );
    if let Some(err) = failure {
        // Returning drops the terminal, which restores it.
        return Err(err);
    }
    drop(term);
    // Closing the channel first means a forwarder blocked on a full channel
    // wakes up and ends.
    drop(rx);
    if let Some(rt) = runtime.take() {
        rt.stop();
    }
    result.context("the terminal could not be written")?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use smith_engine::protocol::ErrorInfo;
    use smith_engine::provider::{ContentBlock, StopReason, ToolCall, Usage};
    use smith_tui::transcript::{EntryKind, ToolState};

    use super::*;

    #[test]
    fn plugin_lines_reach_the_interface_tagged_with_their_runtime() {
        use smith_plugins::dispatch::Surface as _;
        use smith_plugins::extension::{IntentKind, IntentPolicy, UiIntent};
        use smith_plugins::hooks::Frontend as _;
        let (tx, rx) = sync_channel::<AgentMsg>(8);
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let session = store.create(Some("kept")).unwrap();
        let journal = Arc::new(StoreJournal::new(store, session));
        let mut frontend = TuiFrontend {
            tx,
            generation: 3,
            journal: Some(Arc::clone(&journal)),
        };
        let notify = IntentKind::Notify("build passed".to_owned());
        let confirm = IntentKind::Confirm("Deploy?".to_owned());
        let progress = IntentKind::Progress(("indexing".to_owned(), 425));
        assert!(frontend.can_show(&notify));
        assert!(frontend.can_show(&confirm));
        assert!(!frontend.can_show(&progress));
        frontend.show(
            "example/ci",
            &UiIntent {
                id: "n1".to_owned(),
                kind: notify,
                policy: IntentPolicy::Drop,
            },
        );
        frontend.show(
            "example/ci",
            &UiIntent {
                id: "q0".to_owned(),
                kind: confirm,
                policy: IntentPolicy::Drop,
            },
        );
        frontend.show_text("example/ci", "Deploy? [yes / no]");
        frontend.diagnostic("plugin example/ci (call handle): it trapped");
        frontend.persist(
            "example/ci",
            &UiIntent {
                id: "q1".to_owned(),
                kind: progress,
                policy: IntentPolicy::Persist,
            },
        );
        let got: Vec<String> = rx
            .try_iter()
            .map(|msg| match msg {
                Msg::Agent((3, Some(Feed::Notice(text)))) => format!("notice {text}"),
                Msg::Agent((3, Some(Feed::Problem(text)))) => format!("problem {text}"),
                Msg::Agent((3, Some(Feed::Question(plugin, intent)))) => {
                    format!("question {plugin} {}", intent.id)
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                "notice [example/ci] build passed",
                "question example/ci q0",
                "notice [example/ci] Deploy? [yes / no]",
                "problem plugin example/ci (call handle): it trapped",
                "notice [example/ci] indexing: 42.5% (this interface cannot ask it; kept in the session)",
            ]
        );
        // Kept in the session: an interface that opens it shows it.
        let mut app = App::new(smith_tui::fixture::product(), Options::default());
        journal.with_session(|session| show_kept_intents(&mut app, session));
        assert_eq!(
            notices(&app),
            ["[example/ci] indexing: 42.5% (kept from tui)"]
        );
    }

    #[test]
    fn changed_keys_are_the_options_whose_value_in_effect_differs() {
        let home = tempfile::tempdir().unwrap();
        let load = |vars: &[(&str, &str)]| {
            Loader::new(smith_config::Paths::under(home.path()))
                .env(vars.iter().copied())
                .load()
                .unwrap()
        };
        let before = load(&[("SMITH_MODEL", "a"), ("SMITH_COLOR", "never")]);
        let after = load(&[
            ("SMITH_MODEL", "b"),
            ("SMITH_COLOR", "never"),
            ("SMITH_LOG_LEVEL", "debug"),
        ]);
        assert_eq!(changed_keys(&before, &after), ["log.level", "model"]);
        assert!(changed_keys(&after, &after).is_empty());
    }

    #[test]
    fn a_question_overlay_answers_its_runtime_plugin_and_id() {
        use smith_plugins::extension::{IntentKind, IntentPolicy, UiIntent};
        let intent = UiIntent {
            id: "deploy-1".to_owned(),
            kind: IntentKind::Select(("Target?".to_owned(), vec!["a".to_owned(), "b".to_owned()])),
            policy: IntentPolicy::Refuse,
        };
        let Some(Overlay::Picker(picker)) = question_overlay(7, "example/ci", &intent) else {
            panic!("a select intent is asked as a list");
        };
        assert_eq!(picker.title, "[example/ci] Target?");
        assert_eq!(
            answered(&picker.command),
            Some((7, "example/ci", "deploy-1"))
        );
        // A typed command is never taken for an answer.
        assert_eq!(answered("answer"), None);
        let notify = UiIntent {
            kind: IntentKind::Notify("hi".to_owned()),
            ..intent
        };
        assert!(question_overlay(7, "example/ci", &notify).is_none());
    }

    /// A project with a configuration that changes what the interface
    /// does, and a smith home of its own.
    fn project_and_home() -> (tempfile::TempDir, PathBuf, Paths) {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(project.join(".smith")).unwrap();
        std::fs::write(
            project.join(".smith/config.kdl"),
            "tui {\n    scroll-lines 7\n    confirm-exit #false\n}\n",
        )
        .unwrap();
        let paths = Paths::under(tmp.path().join("home"));
        (tmp, project, paths)
    }

    fn loader(paths: &Paths, cwd: &Path) -> Result<Loader, ConfigError> {
        Ok(Loader::new(paths.clone()).start_dir(cwd))
    }

    fn press(app: &mut App, c: char) -> Option<Output> {
        use smith_tui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
        app.handle(&Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }

    fn notices(app: &App) -> Vec<String> {
        let t = &app.transcript;
        (0..t.len()).map(|i| t.text(i).into_owned()).collect()
    }

    #[test]
    fn trusting_in_the_interface_records_it_and_applies_the_project_configuration() {
        let (_tmp, dir, paths) = project_and_home();
        let root = std::fs::canonicalize(&dir).unwrap();
        let (before, failure, _) =
            load_options(loader(&paths, &dir), &smith_tui::fixture::product());
        assert!(failure.is_none());
        assert_eq!(before.scroll_lines, 3, "an untrusted project is ignored");
        assert!(before.confirm_exit);

        let question = trust_question(&paths, &dir).unwrap().unwrap();
        assert_eq!(
            question,
            Overlay::Trust {
                path: root.display().to_string(),
                changed: false,
                on_trust: false,
            }
        );
        let mut app = App::new(smith_tui::fixture::product(), before);
        app.open(question);
        let Some(Output::Trust { path, trust }) = press(&mut app, 't') else {
            panic!("t did not answer the trust question");
        };
        assert!(trust);
        answer_trust(&mut app, &paths, &path, trust, || loader(&paths, &dir));

        // Recorded in the same store `smith trust` uses.
        let store = TrustStore::open(&paths.trust_file()).unwrap();
        let project = Project::at(&root).unwrap();
        assert_eq!(store.status(&project).unwrap(), TrustStatus::Trusted);
        assert_eq!(store.entries().len(), 1);
        assert_eq!(store.entries()[0].path, root);
        // Configuration reloaded: the project's values apply now.
        assert_eq!(app.options().scroll_lines, 7);
        assert!(!app.options().confirm_exit);
        assert!(
            notices(&app)
                .iter()
                .any(|n| n.starts_with(&format!("trusted: {}", root.display())))
        );
        // Trusted and unchanged: nothing is asked at the next start.
        assert_eq!(trust_question(&paths, &dir).unwrap(), None);

        // A change to .smith asks again, saying it changed.
        std::fs::write(
            dir.join(".smith/config.kdl"),
            "tui {\n    scroll-lines 9\n}\n",
        )
        .unwrap();
        assert!(matches!(
            trust_question(&paths, &dir).unwrap(),
            Some(Overlay::Trust { changed: true, .. })
        ));
        let (changed, _, _) = load_options(loader(&paths, &dir), &smith_tui::fixture::product());
        assert_eq!(
            changed.scroll_lines, 3,
            "a changed project is ignored again"
        );
    }

    #[test]
    fn not_now_leaves_the_project_untrusted_and_says_how_to_trust_it() {
        let (_tmp, dir, paths) = project_and_home();
        let root = std::fs::canonicalize(&dir).unwrap().display().to_string();
        let (before, _, _) = load_options(loader(&paths, &dir), &smith_tui::fixture::product());
        let mut app = App::new(smith_tui::fixture::product(), before);
        app.open(trust_question(&paths, &dir).unwrap().unwrap());
        let Some(Output::Trust { path, trust }) = press(&mut app, 'n') else {
            panic!("n did not answer the trust question");
        };
        assert!(!trust);
        answer_trust(&mut app, &paths, &path, trust, || {
            panic!("not now must not reload configuration")
        });
        assert_eq!(app.overlay(), &Overlay::None);
        assert!(!paths.trust_file().exists(), "nothing was recorded");
        assert_eq!(app.options(), before);
        assert_eq!(app.options().scroll_lines, 3);
        let shown = notices(&app);
        assert!(
            shown
                .iter()
                .any(|n| n.contains(&format!("`smith trust {root}`"))),
            "{shown:?}"
        );
        // Still untrusted: the next start asks again.
        assert!(matches!(
            trust_question(&paths, &dir).unwrap(),
            Some(Overlay::Trust { changed: false, .. })
        ));
    }

    #[test]
    fn a_directory_without_a_project_asks_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = Paths::under(tmp.path().join("home"));
        let dir = tmp.path().join("plain");
        std::fs::create_dir_all(&dir).unwrap();
        // A repository root stops the search before anything above it.
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        assert_eq!(trust_question(&paths, &dir).unwrap(), None);
    }

    #[test]
    fn tool_arguments_are_summarized_on_one_line() {
        assert_eq!(
            summarize(&serde_json::json!({"command": "ls  -la\n  src"}), None),
            "ls -la src"
        );
        assert_eq!(
            summarize(&serde_json::json!({"path": "README.md"}), None),
            "README.md"
        );
        let long = "x ".repeat(100);
        assert_eq!(
            summarize(&serde_json::json!({ "command": long }), None)
                .chars()
                .count(),
            80
        );
        // The subject argument of the tool's presentation comes first.
        let grep = serde_json::json!({"path": "src", "pattern": "fn main"});
        assert_eq!(summarize(&grep, None), "src");
        assert_eq!(summarize(&grep, Some("pattern")), "fn main");
    }

    #[test]
    fn a_resumed_history_is_shown_as_it_was_recorded() {
        let mut app = App::new(smith_tui::fixture::product(), Options::default());
        let history = vec![
            Message::User {
                text: "read it".into(),
            },
            Message::Assistant {
                content: vec![
                    ContentBlock::Thinking {
                        text: "plan".into(),
                        signature: None,
                    },
                    ContentBlock::Text {
                        text: "Reading.".into(),
                    },
                    ContentBlock::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": "a.txt"}),
                    }),
                ],
                stop: StopReason::ToolUse,
            },
            Message::ToolResult {
                call_id: "c1".into(),
                name: "read".into(),
                content: "hello".into(),
                is_error: false,
            },
        ];
        // Recorded by the journal exactly as a run records it, then loaded
        // from the file and resumed.
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let session = store.create(Some("resumed")).unwrap();
        let journal = StoreJournal::new(store, session);
        for message in history {
            use smith_engine::journal::SessionSink;
            journal
                .record(&smith_engine::journal::SessionEvent::Message {
                    message,
                    meta: smith_engine::journal::MessageMeta::default(),
                })
                .unwrap();
        }
        drop(journal);
        let resumed = smith_host::session::open(
            tmp.path(),
            &smith_host::SessionChoice::Open("resumed".into()),
        )
        .unwrap();
        let session = resumed.journal.with_session(Session::clone);
        show_history(&mut app, &session, resumed.compaction_summary.as_deref());
        let t = &app.transcript;
        let entries: Vec<(EntryKind, String, bool)> = (0..t.len())
            .map(|i| {
                (
                    t.record(i).unwrap().kind,
                    t.text(i).into_owned(),
                    t.is_session_backed(i),
                )
            })
            .collect();
        let expected = [
            (EntryKind::User, "read it", true),
            (EntryKind::Thinking, "plan", true),
            (EntryKind::Assistant, "Reading.", true),
            (EntryKind::Tool, "read a.txt", false),
            (EntryKind::ToolOutput, "hello", true),
        ];
        assert_eq!(
            entries,
            expected.map(|(k, t, b)| (k, t.to_owned(), b)).to_vec()
        );
        assert_eq!(t.record(3).unwrap().tool, ToolState::Ok);
        // Only the tool call's line was copied into the transcript.
        assert_eq!(t.local_text_len(), "read a.txt".len());
    }

    #[test]
    fn agent_events_become_transcript_entries_and_status() {
        let mut app = App::new(smith_tui::fixture::product(), Options::default());
        let mut summaries = Vec::new();
        let events = [
            Event::AgentStart,
            Event::MessageDelta {
                text: "Looking ".into(),
            },
            Event::MessageDelta {
                text: "around.".into(),
            },
            Event::ToolCall {
                call: ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": "ls"}),
                },
            },
            Event::ToolExecutionStart {
                call_id: "c1".into(),
                name: "bash".into(),
                effect_id: "fx-1".into(),
            },
            Event::ToolExecutionEnd {
                call_id: "c1".into(),
                name: "bash".into(),
                status: ToolStatus::Error,
                content: "boom".into(),
                details: serde_json::json!({}),
                mutation: None,
                effect_id: None,
            },
            Event::Error(ErrorInfo {
                kind: "rate_limit".into(),
                message: "slow down".into(),
                mutation: None,
                effect_id: None,
                retry_after_ms: None,
            }),
        ];
        for event in events {
            apply(&mut app, event, &mut summaries, Some(1000));
        }
        assert!(app.status.busy);
        let t = &app.transcript;
        let kinds: Vec<EntryKind> = (0..t.len()).map(|i| t.record(i).unwrap().kind).collect();
        assert_eq!(
            kinds,
            [
                EntryKind::Assistant,
                EntryKind::Tool,
                EntryKind::ToolOutput,
                EntryKind::Error
            ]
        );
        assert_eq!(t.text(0), "Looking around.");
        assert_eq!(t.text(1), "bash ls");
        assert_eq!(t.record(1).unwrap().tool, ToolState::Failed);
        assert_eq!(t.text(3), "rate_limit: slow down");
        apply(
            &mut app,
            Event::AgentEnd {
                stop: StopCause::Aborted,
                usage: Usage::default(),
                cost: Some(0.5),
                text: String::new(),
            },
            &mut summaries,
            Some(1000),
        );
        assert!(!app.status.busy);
        assert_eq!(app.status.cost, Some(0.5));
        assert_eq!(app.transcript.text(4), "interrupted");
    }

    mod session_commands {
        use smith_engine::journal::{MessageMeta, SessionEvent, SessionSink};
        use smith_engine::provider::{ContentBlock, StopReason};
        use smith_tui::transcript::EntryKind as Shown;

        use super::super::*;

        fn user(text: &str) -> SessionEvent {
            SessionEvent::Message {
                message: Message::User { text: text.into() },
                meta: MessageMeta::default(),
            }
        }

        fn answer(text: &str) -> SessionEvent {
            SessionEvent::Message {
                message: Message::Assistant {
                    content: vec![ContentBlock::Text { text: text.into() }],
                    stop: StopReason::End,
                },
                meta: MessageMeta::default(),
            }
        }

        /// A stored session: "first question", "answer one", "second
        /// question"; then the leaf moved back to "answer one" and "another
        /// way" asked there. Returns the store root, the session id and the
        /// ids of the five entries in append order.
        fn forked_session() -> (tempfile::TempDir, String, Vec<u64>) {
            let tmp = tempfile::tempdir().unwrap();
            let store = Store::open(tmp.path()).unwrap();
            let session = store.create(Some("forked")).unwrap();
            let id = session.id().to_hex();
            let journal = StoreJournal::new(store, session);
            for event in [
                user("first question"),
                answer("answer one"),
                user("second question"),
            ] {
                journal.record(&event).unwrap();
            }
            let ids: Vec<u64> =
                journal.with_session(|s| s.records().iter().map(|r| r.id).collect());
            drop(journal);
            select_leaf(tmp.path(), &id, ids[1]).unwrap();
            let store = Store::open(tmp.path()).unwrap();
            let session = store.load(&id).unwrap();
            let journal = StoreJournal::new(store, session);
            journal.record(&user("another way")).unwrap();
            let ids = journal.with_session(|s| s.records().iter().map(|r| r.id).collect());
            (tmp, id, ids)
        }

        #[test]
        fn selecting_a_leaf_switches_the_stored_branch() {
            let (tmp, id, ids) = forked_session();
            assert_eq!(ids.len(), 5, "three messages, a leaf switch, one message");
            let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
            let resumed = smith_engine::journal::store::resume(&session).unwrap();
            let texts: Vec<String> = resumed
                .history
                .iter()
                .map(|m| match m {
                    Message::User { text } => text.clone(),
                    other => other.text(),
                })
                .collect();
            assert_eq!(texts, ["first question", "answer one", "another way"]);
            // An id that is not in the session is refused, naming it.
            let err = select_leaf(tmp.path(), &id, 999_999).unwrap_err();
            assert!(format!("{err:#}").contains("999999"), "{err:#}");
        }

        #[test]
        fn the_branch_tree_folds_chains_and_nests_branches_under_their_fork() {
            let (tmp, id, ids) = forked_session();
            let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
            let rows = branch_rows(&session);
            let shown: Vec<(u16, &str, &str, bool)> = rows
                .iter()
                .map(|r| (r.depth, r.label.as_str(), r.arg.as_str(), r.current))
                .collect();
            let fork = format!(
                "entry {} · fork, 2 branches · “first question” · on the selected branch",
                ids[1]
            );
            let old = format!("entry {} · 3 entries · “second question”", ids[2]);
            let new = format!("entry {} · 4 entries · “another way”", ids[4]);
            let (a1, a2, a4) = (ids[1].to_string(), ids[2].to_string(), ids[4].to_string());
            assert_eq!(
                shown,
                [
                    (0, fork.as_str(), a1.as_str(), false),
                    (1, old.as_str(), a2.as_str(), false),
                    (1, new.as_str(), a4.as_str(), true),
                ]
            );
            let Overlay::Tree(tree) = branch_overlay(&session) else {
                panic!("/branch opens a tree");
            };
            assert_eq!(tree.selected, 2, "the current leaf is highlighted");
            assert_eq!(tree.command, "branch");
        }

        #[test]
        fn a_long_single_branch_is_one_row() {
            let tmp = tempfile::tempdir().unwrap();
            let store = Store::open(tmp.path()).unwrap();
            let session = store.create(None).unwrap();
            let journal = StoreJournal::new(store, session);
            for i in 0..200 {
                journal.record(&user(&format!("question {i}"))).unwrap();
            }
            let rows = journal.with_session(branch_rows);
            assert_eq!(rows.len(), 1);
            assert!(rows[0].current);
            assert!(
                rows[0].label.ends_with("· 200 entries · “question 199”"),
                "{}",
                rows[0].label
            );
        }

        #[test]
        fn replay_plays_the_session_into_the_transcript_and_ends() {
            let (tmp, id, _) = forked_session();
            let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
            let recording = Recording::from_session(&session).unwrap();
            let (tx, rx) = sync_channel::<AgentMsg>(CHANNEL_CAPACITY);
            let tag = REPLAY_TAG | 1;
            spawn_replay(
                recording,
                Pace::Instant,
                tag,
                Arc::new(AtomicBool::new(false)),
                tx,
            )
            .unwrap();
            let mut app = App::new(smith_tui::fixture::product(), Options::default());
            let mut summaries = Vec::new();
            let mut ended = false;
            while let Ok(msg) = rx.recv() {
                let Msg::Agent((t, event)) = msg else {
                    panic!("a replay sends agent events only");
                };
                assert_eq!(t, tag);
                match event {
                    Some(Feed::Event(event)) => {
                        apply_replayed(&mut app, event, &mut summaries, None);
                    }
                    Some(other) => panic!("a replay sends events only, not {other:?}"),
                    None => ended = true,
                }
            }
            assert!(ended, "the replay says when it is done");
            let t = &app.transcript;
            let owned: Vec<(Shown, String)> = (0..t.len())
                .map(|i| (t.record(i).unwrap().kind, t.text(i).into_owned()))
                .collect();
            let entries: Vec<(Shown, &str)> = owned.iter().map(|(k, s)| (*k, s.as_str())).collect();
            // The fixture records messages without run records, so replay
            // reports the run as interrupted, as it would for a process
            // that stopped mid-run.
            assert_eq!(entries.len(), 5, "{entries:?}");
            assert_eq!(
                entries[..3],
                [
                    (Shown::User, "first question"),
                    (Shown::Assistant, "answer one"),
                    (Shown::User, "another way"),
                ]
            );
            assert_eq!(entries[3].0, Shown::Error);
            assert!(
                entries[3]
                    .1
                    .starts_with("interrupted: the recording of this run ends")
            );
            assert_eq!(entries[4], (Shown::Notice, "interrupted"));
        }

        #[test]
        fn a_stopped_replay_still_ends() {
            let (tmp, id, _) = forked_session();
            let session = Store::open(tmp.path()).unwrap().load(&id).unwrap();
            let recording = Recording::from_session(&session).unwrap();
            let (tx, rx) = sync_channel::<AgentMsg>(CHANNEL_CAPACITY);
            spawn_replay(
                recording,
                Pace::Instant,
                7,
                Arc::new(AtomicBool::new(true)),
                tx,
            )
            .unwrap();
            let got: Vec<bool> = rx
                .iter()
                .map(|m| matches!(m, Msg::Agent((7, Some(_)))))
                .collect();
            assert_eq!(got, [false], "no event after the stop, then the end");
        }

        #[test]
        fn compaction_shows_in_the_status_line_and_the_transcript() {
            use smith_engine::protocol::{CompactionOutcome, CompactionReason};
            let mut app = App::new(smith_tui::fixture::product(), Options::default());
            let mut summaries = Vec::new();
            apply(
                &mut app,
                Event::CompactionStart {
                    reason: CompactionReason::Manual,
                    tokens_before: 9000,
                },
                &mut summaries,
                None,
            );
            assert_eq!(app.status.activity, "compacting");
            assert!(app.status.busy, "Esc interrupts a running compaction");
            let end =
                |outcome, error: Option<smith_engine::protocol::ErrorInfo>| Event::CompactionEnd {
                    reason: CompactionReason::Manual,
                    outcome,
                    tokens_before: 9000,
                    tokens_after: (outcome == CompactionOutcome::Compacted).then_some(1200),
                    summary: None,
                    summarized_messages: (outcome == CompactionOutcome::Compacted).then_some(8),
                    kept_messages: (outcome == CompactionOutcome::Compacted).then_some(2),
                    usage: None,
                    error,
                };
            apply(
                &mut app,
                end(CompactionOutcome::Compacted, None),
                &mut summaries,
                None,
            );
            assert_eq!(app.status.activity, "");
            assert!(!app.status.busy);
            let failed = smith_engine::protocol::ErrorInfo {
                kind: "summary_empty".into(),
                message: "the model returned an empty summary".into(),
                mutation: None,
                effect_id: None,
                retry_after_ms: None,
            };
            apply(
                &mut app,
                end(CompactionOutcome::Failed, Some(failed)),
                &mut summaries,
                None,
            );
            let t = &app.transcript;
            let owned: Vec<(Shown, String)> = (0..t.len())
                .map(|i| (t.record(i).unwrap().kind, t.text(i).into_owned()))
                .collect();
            let texts: Vec<(Shown, &str)> = owned.iter().map(|(k, s)| (*k, s.as_str())).collect();
            assert_eq!(
                texts,
                [
                    (
                        Shown::Notice,
                        "compacting (asked for) · context about 9000 tokens"
                    ),
                    (
                        Shown::Notice,
                        "compacted: 8 messages summarized, 2 kept · context about 9000 → 1200 tokens"
                    ),
                    (
                        Shown::Error,
                        "compaction failed, the context is unchanged: the model returned an empty summary"
                    ),
                ]
            );
        }

        #[test]
        fn replay_speed_arguments() {
            assert!(matches!(replay_pace(""), Ok(Pace::Scaled(f)) if f == 10.0));
            assert!(matches!(replay_pace("4"), Ok(Pace::Scaled(f)) if f == 4.0));
            assert!(matches!(replay_pace("2.5x"), Ok(Pace::Scaled(f)) if f == 2.5));
            assert!(matches!(replay_pace("instant"), Ok(Pace::Instant)));
            assert!(matches!(replay_pace("0"), Ok(Pace::Instant)));
            let err = replay_pace("fast").unwrap_err();
            assert!(
                err.contains("\"fast\"") && err.contains("/replay 4"),
                "{err}"
            );
            assert!(replay_pace("-1").is_err());
        }

        #[test]
        fn the_plugin_list_shows_every_built_in_plugin() {
            let Overlay::Info { lines, .. } = plugins_overlay() else {
                panic!("/plugins opens an information overlay");
            };
            for name in [
                "smith/mock",
                "smith/product",
                "smith/anthropic",
                "smith/openai",
                "smith/google",
                "smith/openai-compatible",
            ] {
                assert!(
                    lines.iter().any(|l| l.starts_with(&format!("{name} ("))),
                    "{name} missing: {lines:#?}"
                );
            }
            assert!(lines[0].starts_with("smith/mock (provider, built in)"));
            assert!(lines.last().unwrap().starts_with(
                "The layout, theme, keys, commands and tool presentation come from smith/product"
            ));
        }
    }
}
