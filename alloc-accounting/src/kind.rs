//! Scope kinds and scope identities.

use std::fmt;

/// The lifetime a scope stands for.
///
/// The kinds are the lifetimes the accounting model names; they carry no
/// behaviour of their own beyond labelling reports, so nesting them in any
/// order is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ScopeKind {
    /// The whole process: where every thread without a guard is charged.
    Process = 0,
    /// One agent session.
    Session = 1,
    /// One turn of a session.
    Turn = 2,
    /// One call into the kernel (a tool call, a plugin call, a command).
    KernelCall = 3,
    /// One rendered frame.
    Frame = 4,
    /// One I/O request (a provider request, a file read).
    IoRequest = 5,
}

impl ScopeKind {
    /// Every kind, in declaration order.
    pub const ALL: [ScopeKind; 6] = [
        ScopeKind::Process,
        ScopeKind::Session,
        ScopeKind::Turn,
        ScopeKind::KernelCall,
        ScopeKind::Frame,
        ScopeKind::IoRequest,
    ];

    /// The kind's stable lowercase name, as reports print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Process => "process",
            ScopeKind::Session => "session",
            ScopeKind::Turn => "turn",
            ScopeKind::KernelCall => "kernel_call",
            ScopeKind::Frame => "frame",
            ScopeKind::IoRequest => "io_request",
        }
    }

    pub(crate) const fn to_bits(self) -> u64 {
        self as u64
    }

    pub(crate) const fn from_bits(bits: u64) -> ScopeKind {
        match bits {
            1 => ScopeKind::Session,
            2 => ScopeKind::Turn,
            3 => ScopeKind::KernelCall,
            4 => ScopeKind::Frame,
            5 => ScopeKind::IoRequest,
            _ => ScopeKind::Process,
        }
    }
}

impl fmt::Display for ScopeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A scope's identity: unique for the life of the process, never reused.
///
/// The process scope is always [`ScopeId::PROCESS`]; every other scope gets
/// the next number from a process-wide counter when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(u64);

impl ScopeId {
    /// The process scope's id.
    pub const PROCESS: ScopeId = ScopeId(1);

    /// The id as a number (1 for the process scope).
    pub const fn get(self) -> u64 {
        self.0
    }

    pub(crate) const fn from_raw(raw: u64) -> ScopeId {
        ScopeId(raw)
    }
}

impl fmt::Display for ScopeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_bits_round_trip_for_every_kind() {
        for kind in ScopeKind::ALL {
            assert_eq!(ScopeKind::from_bits(kind.to_bits()), kind);
        }
        let names: Vec<&str> = ScopeKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "process",
                "session",
                "turn",
                "kernel_call",
                "frame",
                "io_request"
            ]
        );
    }
}
