//! A runtime the interface drives: starting one on a new or stored session
//! ([`start`]), asking its extension plugins before a session switch,
//! carrying out what a plugin command released, and stopping it.
//!
//! The runtime is wired as `smith eval` wires it (the chosen provider,
//! session store, built-in tools); its events are forwarded into the
//! interface's bounded channel by one thread per runtime, tagged with the
//! runtime's generation so that events of a replaced runtime (after `/new`
//! or `/resume`) are dropped.

use std::sync::Arc;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;

use anyhow::Context;
use smith_engine::agent::AgentHandle;
use smith_engine::journal::store::StoreJournal;
use smith_engine::protocol::Command;
use smith_engine::provider::ProviderInfo;
use smith_store::Session;
use smith_tui::App;
use smith_tui::run::Msg;

use super::Args;
use super::frontend::{AgentMsg, Feed, Overlays, TuiFrontend};
use super::host;
use super::session::{show_history, show_kept_intents};

/// A started runtime: its handle, its session and what its extension
/// plugins provide.
pub(super) struct Runtime {
    /// The runtime's handle.
    pub(super) handle: Arc<AgentHandle>,
    /// The session it records into.
    pub(super) journal: Arc<StoreJournal>,
    forwarder: Option<JoinHandle<()>>,
    /// The session's name (its id when it has none).
    pub(super) name: String,
    /// Whether the session still has the name it was created with
    /// (`tui-<time>`) and takes one from its first prompt.
    pub(super) titled: bool,
    /// The commands the runtime's extension plugins provide.
    pub(super) commands: Option<smith_plugins::hooks::Commands>,
    /// What the runtime's extension plugins say before a session switch or
    /// fork.
    pub(super) gate: Option<smith_engine::agent::SessionGate>,
    /// The questions its extension plugins wait for.
    pub(super) questions: host::questions::Broker,
    /// The thinking level its live provider's requests ask for; `None` for
    /// the scripted provider.
    pub(super) thinking: Option<host::thinking::ThinkingDial>,
    /// Its background jobs (`/jobs` lists them).
    pub(super) jobs: Arc<smith_engine::tools::jobs::Jobs>,
    /// The last message entry whose id the transcript was given (the
    /// selected leaf when the runtime started): the next recorded message
    /// is the first after it ([`super::session::next_message_id`]).
    pub(super) message_cursor: Option<u64>,
}

/// The thinking level chosen with `/thinking` in this process, if any: it
/// holds for every runtime started after (`/new`, `/resume`, a branch
/// switch), over `--thinking` and the `thinking` option.
static THINKING: std::sync::Mutex<Option<Option<host::thinking::ThinkingLevel>>> =
    std::sync::Mutex::new(None);

/// The line the interface shows for the capability gate's `gate.thinking`
/// warning.
pub(super) fn thinking_warning(warning: &smith_diag::Diagnostic) -> String {
    format!(
        "warning: {}: {}; {}",
        warning.what(),
        warning.why(),
        warning.next()
    )
}

/// Remembers `level` as chosen with `/thinking` ([`THINKING`]).
pub(super) fn remember_thinking(level: Option<host::thinking::ThinkingLevel>) {
    if let Ok(mut chosen) = THINKING.lock() {
        *chosen = Some(level);
    }
}

impl Runtime {
    /// Asks the runtime's extension plugins about `op`; the error line to
    /// show when one blocks it.
    pub(super) fn ask(
        &self,
        op: &smith_engine::agent::SessionOp,
        what: &str,
    ) -> Result<(), String> {
        match self.gate.as_ref().map(|gate| gate.ask(op)) {
            Some(smith_engine::agent::Verdict::Block { by, reason }) => Err(format!(
                "the extension {by} blocked {what}: {reason}; the session stays {} (`smith plugin disable {by}` lets it through)",
                self.name
            )),
            _ => Ok(()),
        }
    }

    /// Stops the runtime: shuts it down and waits for its forwarder.
    pub(super) fn stop(self) {
        drop(self.halt());
    }

    /// Stops the runtime ([`Runtime::stop`]) and deletes its session when
    /// it holds nothing of a conversation — no entry, or only the model
    /// change recorded as it opened (the interface opened and left, or
    /// switched away from, before any prompt; see
    /// `Store::discard_if_empty`) — so that no empty session is stored;
    /// returns whether it was deleted.
    pub(super) fn stop_discarding_empty(self) -> bool {
        let journal = self.halt();
        let id = journal.session_id();
        drop(journal);
        // A store that cannot be read here leaves the empty session in
        // place, which `smith session prune --empty` removes; nothing is
        // lost either way.
        super::config::open_store()
            .ok()
            .and_then(|store| store.discard_if_empty(id).ok())
            .unwrap_or(false)
    }

    /// Shuts the runtime down, waits for its forwarder and hands back its
    /// journal.
    fn halt(mut self) -> Arc<StoreJournal> {
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
        self.journal
    }
}

/// The provider `args` choose.
fn provider(args: &Args) -> anyhow::Result<host::eval::Chosen> {
    // A script only makes sense for the scripted provider, so it chooses it.
    let explicit = match &args.choice.provider {
        None if args.mock_script.is_some() => Some("mock"),
        other => other.as_deref(),
    };
    host::eval::choose_provider(
        explicit,
        args.choice.model.as_deref(),
        args.choice.base_url.as_deref(),
        args.choice.thinking.as_deref(),
        || host::mock::provider(args.mock_script.as_deref(), None),
    )
}

/// Sends the runtime what a plugin command released: a model switch, a
/// queued follow-up message.
pub(super) fn run_plugin_actions(
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
pub(super) enum Target {
    /// A new session.
    New,
    /// The stored session with this reference.
    Existing(String),
}

/// Starts the runtime of `generation` on `target`, showing a resumed
/// session's history in `app`.
/// The interface's approval mode: one cell for the whole process, so a
/// mode chosen with `/approval` holds across `/new`, `/resume` and branch
/// switches. Starts as `--approval`, else the configured `approval`, else
/// `ask`.
fn approval(args: &Args) -> anyhow::Result<smith_engine::approval::ApprovalCell> {
    static CELL: std::sync::OnceLock<smith_engine::approval::ApprovalCell> =
        std::sync::OnceLock::new();
    if let Some(cell) = CELL.get() {
        return Ok(cell.clone());
    }
    let mode = smith_host::settings::approval_mode(
        smith_host::settings::config()?,
        args.approval.as_deref(),
        smith_engine::approval::Approval::Ask,
    );
    Ok(CELL
        .get_or_init(|| smith_engine::approval::ApprovalCell::new(mode))
        .clone())
}

pub(super) fn start(
    args: &Args,
    cwd: &std::path::Path,
    target: Target,
    generation: u64,
    tx: &SyncSender<AgentMsg>,
    app: &mut App,
) -> anyhow::Result<(Runtime, ProviderInfo)> {
    let chosen = provider(args)?;
    if let (Some(dial), Ok(Some(level))) = (&chosen.thinking, THINKING.lock().map(|c| *c)) {
        dial.set(level);
    }
    let thinking = chosen.thinking.clone();
    if let Some(warning) = thinking.as_ref().and_then(|dial| dial.effective().1) {
        app.notice(&thinking_warning(&warning));
    }
    let frontend_tx = tx.clone();
    let questions = host::questions::Broker::new();
    questions.set_presenter(Arc::new(Overlays {
        tx: tx.clone(),
        generation,
    }));
    let options = smith_host::RuntimeOptions {
        approval: approval(args)?,
        model: args.choice.model.clone(),
        questions: (!args.no_plugins).then(|| questions.asking()),
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
            host::settings::session_root()?,
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
        damage,
        jobs,
        ..
    } = options.start(&choice).map_err(|e| e.into_cli(""))?;
    if resumed {
        let session = journal.with_session(Session::clone);
        show_history(app, &session, compaction_summary.as_deref());
        show_kept_intents(app, &session);
    }
    if let Some(damage) = damage {
        app.error(&damage.render_plain());
    }
    let message_cursor = journal.with_opened(|s| s.leaf().map(|r| r.id));
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
            // Tagged, so that only the end of the current runtime is
            // reported (a replaced one ends on purpose). The receiver may
            // be gone at exit; nothing to report then.
            let _ = tx.send(Msg::Agent((generation, Some(Feed::Stopped))));
        })
        .context("could not start the thread that forwards agent events")?;
    let mut status = app.status.clone();
    status.model = model;
    status.busy = false;
    status.queue = 0;
    // The level requests carry (none shown for a provider that takes none).
    status.thinking = thinking.as_ref().map_or_else(String::new, |dial| {
        host::thinking::level_name(dial.effective().0).to_owned()
    });
    app.set_status(status);
    Ok((
        Runtime {
            handle,
            journal,
            forwarder: Some(forwarder),
            name,
            titled: !resumed,
            commands,
            gate,
            questions,
            thinking,
            jobs,
            message_cursor,
        },
        info,
    ))
}
