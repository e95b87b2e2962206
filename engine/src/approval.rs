//! The approval mode: how much a runtime's tools may do without asking.
//!
//! One [`ApprovalCell`] is shared by a runtime, its tools (the sandbox
//! reads it on every call) and the permission policy (which asks, allows
//! or refuses each call), so `/approval` changes all of them at once.
//!
//! | mode | mutating calls | sandbox |
//! |---|---|---|
//! | `read-only` | none runs | on |
//! | `ask` | asked unless a rule allows them | on |
//! | `workspace` | inside the project root run; others are refused | on |
//! | `full` | run without asking (`--yes`) | off |
//!
//! Deny rules hold in every mode; `docs/security.md` describes the model.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// How much a runtime's tools may do without asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Approval {
    /// No mutating tool runs.
    ReadOnly,
    /// Every mutating call a rule does not allow asks the user.
    Ask,
    /// Mutations inside the project root run, commands run in the
    /// sandbox, anything else is refused (the default where nobody can be
    /// asked).
    Workspace,
    /// Nothing asks and nothing is confined; deny rules still hold.
    Full,
}

impl Approval {
    /// Every mode, in order from the most to the least restrictive.
    pub const ALL: [Approval; 4] = [
        Approval::ReadOnly,
        Approval::Ask,
        Approval::Workspace,
        Approval::Full,
    ];

    /// The mode's name as the command line and configuration spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::ReadOnly => "read-only",
            Approval::Ask => "ask",
            Approval::Workspace => "workspace",
            Approval::Full => "full",
        }
    }

    /// The mode named `name` (as [`Approval::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Approval> {
        Approval::ALL.into_iter().find(|mode| mode.as_str() == name)
    }

    /// Whether child processes and the file tools run confined by the
    /// sandbox in this mode.
    pub fn sandboxed(self) -> bool {
        self != Approval::Full
    }

    fn from_u8(raw: u8) -> Approval {
        match raw {
            0 => Approval::ReadOnly,
            1 => Approval::Ask,
            2 => Approval::Workspace,
            _ => Approval::Full,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Approval::ReadOnly => 0,
            Approval::Ask => 1,
            Approval::Workspace => 2,
            Approval::Full => 3,
        }
    }
}

impl std::fmt::Display for Approval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A runtime's current approval mode, shared by everything that reads or
/// changes it (clones share one value).
#[derive(Clone, Debug)]
pub struct ApprovalCell(Arc<AtomicU8>);

impl ApprovalCell {
    /// A cell holding `mode`.
    pub fn new(mode: Approval) -> Self {
        ApprovalCell(Arc::new(AtomicU8::new(mode.to_u8())))
    }

    /// The current mode.
    pub fn get(&self) -> Approval {
        Approval::from_u8(self.0.load(Ordering::Acquire))
    }

    /// Changes the mode for every holder of the cell.
    pub fn set(&self, mode: Approval) {
        self.0.store(mode.to_u8(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_name_and_the_cell() {
        for mode in Approval::ALL {
            assert_eq!(Approval::parse(mode.as_str()), Some(mode));
            let cell = ApprovalCell::new(Approval::Full);
            let shared = cell.clone();
            shared.set(mode);
            assert_eq!(cell.get(), mode);
        }
        assert_eq!(Approval::parse("yolo"), None);
        assert!(!Approval::Full.sandboxed());
        assert!(Approval::Workspace.sandboxed());
    }
}
