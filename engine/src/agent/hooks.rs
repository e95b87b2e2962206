//! Hooks: how extensions (plugins) take part in a run.
//!
//! The runtime consults [`Hooks`] at its **decision points** — a user input
//! about to be sent, a tool call about to run, a compaction about to run,
//! the context about to be sent in a provider request — and nowhere else;
//! a hook's answer there is a [`Verdict`]. A frontend asks the same hooks,
//! through their [`SessionGate`], before it switches to another session or
//! forks one. Every event the runtime emits is also
//! shown to [`Hooks::observe`], in order; the actions hooks ask for
//! ([`HookAction`]) are held and applied only at the **safe points**: after
//! a turn (its stream and its complete tool-result batch are done, the next
//! provider request has not started) and after a run. A hook that fails
//! must answer [`Verdict::Allow`]: a failing extension is no decision, never
//! a block.

use std::sync::Arc;

use crate::protocol::{CompactionReason, Event};
pub use crate::provider::Interrupt;
use crate::provider::ToolCall;

/// A session operation a frontend asks the hooks about before doing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionOp {
    /// Switching the runtime to another session: the reference of the
    /// session to open (a name, an id or a prefix), or the new session's
    /// name (empty when unnamed).
    Switch(String),
    /// Forking a session or branching it at an entry: what is forked (a
    /// session reference, or `SESSION#ENTRY` for a branch at an entry).
    Fork(String),
}

/// Asks the hooks about a [`SessionOp`] from a frontend's thread; a
/// [`Verdict::Block`] stops the operation. A replacement has no meaning
/// for a session operation and counts as [`Verdict::Allow`].
#[derive(Clone)]
pub struct SessionGate(pub Arc<dyn Fn(&SessionOp) -> Verdict + Send + Sync>);

impl SessionGate {
    /// The hooks' verdict on `op`.
    pub fn ask(&self, op: &SessionOp) -> Verdict {
        (self.0)(op)
    }
}

impl std::fmt::Debug for SessionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionGate(..)")
    }
}

/// Delivers a user's answer to a question an extension asked (through a
/// frontend that can ask it), from the frontend's thread: the extension,
/// the question's id, the answer, and whether the runtime is idle. Idle is
/// a safe point, so the actions the extension returns come back to be
/// applied at once; while the runtime works they wait for its next safe
/// point and none come back. An error says why the answer was not
/// delivered (no such open question).
#[derive(Clone)]
pub struct Answerer(pub Arc<Answer>);

/// What an [`Answerer`] calls: plugin, question id, answer, idle.
pub type Answer = dyn Fn(&str, &str, &str, bool) -> Result<Vec<HookAction>, String> + Send + Sync;

impl Answerer {
    /// Delivers `answer` to question `id` of `plugin`.
    ///
    /// # Errors
    ///
    /// When the plugin has no such open question (the message says so).
    pub fn answer(
        &self,
        plugin: &str,
        id: &str,
        answer: &str,
        idle: bool,
    ) -> Result<Vec<HookAction>, String> {
        (self.0)(plugin, id, answer, idle)
    }
}

impl std::fmt::Debug for Answerer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Answerer(..)")
    }
}

/// The answer at a decision point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Proceed unchanged.
    Allow,
    /// Do not proceed. `by` names who blocked (a plugin), `reason` is shown
    /// to the user and, for a tool call, given to the model as the result.
    Block {
        /// Who blocked.
        by: String,
        /// Why.
        reason: String,
    },
    /// Proceed with a replacement: the input's new text, or the tool
    /// call's new arguments as JSON text. `by` names who replaced it.
    Replace {
        /// Who replaced it.
        by: String,
        /// The replacement.
        value: String,
    },
}

/// What hooks may ask the runtime to do at a safe point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookAction {
    /// Switch to this model (as the `set_model` command does).
    SetModel {
        /// Who asked.
        by: String,
        /// The model id.
        model: String,
    },
    /// Queue this text as a follow-up user message.
    FollowUp {
        /// Who asked.
        by: String,
        /// The message.
        text: String,
    },
}

/// Extensions taking part in a run; see the module documentation.
pub trait Hooks: Send {
    /// A user input is about to be sent (decision point).
    fn input(&mut self, text: &str) -> Verdict;

    /// The images and documents extensions attached to the input just
    /// decided (a mention's `attach-media`), in order; asked right after
    /// [`Hooks::input`]. The default attaches none.
    fn take_media(&mut self) -> Vec<crate::provider::Media> {
        Vec::new()
    }

    /// A validated tool call is about to run (decision point). A
    /// replacement's arguments are validated again before anything runs.
    fn tool_call(&mut self, call: &ToolCall) -> Verdict;

    /// A compaction is about to run (decision point), for `reason`. A
    /// replacement's value becomes the summary's custom instructions. The
    /// default allows it.
    fn compaction(&mut self, reason: CompactionReason) -> Verdict {
        let _ = reason;
        Verdict::Allow
    }

    /// A provider request is about to be sent with `messages` messages of
    /// context (decision point). A block stops the request: the turn ends
    /// with an `error` event of kind `blocked` and the run stops. A
    /// replacement has no meaning here (the context is the session's
    /// history) and counts as allow; hooks report it as a diagnostic. The
    /// default allows it.
    fn context(&mut self, messages: usize) -> Verdict {
        let _ = messages;
        Verdict::Allow
    }

    /// The system prompt for the requests from now on, when the hooks
    /// assemble it (extension plugins' prompt fragments): asked when a run
    /// starts and after each allowed `context` decision. `None` keeps the
    /// current one. Hooks that assemble return the same `Arc` while nothing
    /// changed, so an unchanged turn costs a pointer comparison. The
    /// default assembles nothing.
    fn system_prompt(&mut self) -> Option<Arc<str>> {
        None
    }

    /// The provider request the context decision allowed is about to be
    /// made for `model` (an event, not a decision point).
    fn before_request(&mut self, model: &str) {
        let _ = model;
    }

    /// The runtime opened its session and is about to serve (before any
    /// run). The default does nothing.
    fn session_start(&mut self) {}

    /// The runtime is shutting down (after its last run). The default does
    /// nothing.
    fn session_shutdown(&mut self) {}

    /// A gate a frontend asks before switching or forking sessions; the
    /// default has none (every operation proceeds).
    fn session_gate(&self) -> Option<SessionGate> {
        None
    }

    /// Where a frontend that asked an extension's question sends the
    /// user's answer; the default has none (no extension asks).
    fn answerer(&self) -> Option<Answerer> {
        None
    }

    /// Every event the runtime emits, in order. Returns the actions to
    /// apply now: hooks return actions only for a safe-point event
    /// (`turn_end`, `agent_end`), holding back what they gathered before.
    fn observe(&mut self, event: &Event) -> Vec<HookAction>;

    /// A function that interrupts a hook call in flight from another
    /// thread, called when the run is aborted. Hooks that run foreign code
    /// (plugins) return one; the default has none.
    fn interrupter(&self) -> Option<Interrupt> {
        None
    }
}
