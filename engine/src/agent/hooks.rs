//! Hooks: how extensions (plugins) take part in a run.
//!
//! The runtime consults [`Hooks`] at its **decision points** — a user input
//! about to be sent, a tool call about to run, a compaction about to run —
//! and nowhere else; a hook's
//! answer there is a [`Verdict`]. Every event the runtime emits is also
//! shown to [`Hooks::observe`], in order; the actions hooks ask for
//! ([`HookAction`]) are held and applied only at the **safe points**: after
//! a turn (its stream and its complete tool-result batch are done, the next
//! provider request has not started) and after a run. A hook that fails
//! must answer [`Verdict::Allow`]: a failing extension is no decision, never
//! a block.

use crate::protocol::{CompactionReason, Event};
pub use crate::provider::Interrupt;
use crate::provider::ToolCall;

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
