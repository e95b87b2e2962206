//! Scopes, and the guards that make a scope current on a thread.

use std::marker::PhantomData;

use crate::kind::{ScopeId, ScopeKind};
use crate::stats::ScopeStats;
use crate::table::{self, PROCESS_SLOT};
use crate::thread;

/// A lifetime scope that allocations are charged to.
///
/// Creating one takes a slot in the fixed table ([`crate::SLOT_COUNT`]) and
/// never allocates. Dropping the handle closes the scope: it stays in
/// reports (with `open: false`) until every block charged to it is freed,
/// then its slot is reused. A scope may be shared between threads (`&Scope`
/// is `Send`); each thread enters it with its own guard.
#[derive(Debug)]
pub struct Scope {
    slot: u32,
    id: ScopeId,
    kind: ScopeKind,
    name: &'static str,
    fallback: bool,
}

static PROCESS: Scope = Scope {
    slot: PROCESS_SLOT,
    id: ScopeId::PROCESS,
    kind: ScopeKind::Process,
    name: "process",
    fallback: false,
};

impl Scope {
    /// Creates a scope of `kind` named `name`.
    ///
    /// When every slot is taken the scope still works but charges the
    /// process scope: [`Scope::is_fallback`] says so, its
    /// [`Scope::stats`] are the process scope's, and the overflow is
    /// counted in [`crate::Report::overflowed_scopes`].
    pub fn new(kind: ScopeKind, name: &'static str) -> Scope {
        let (slot, id) = table::claim(kind, name);
        Scope {
            slot: slot.unwrap_or(PROCESS_SLOT),
            id,
            kind,
            name,
            fallback: slot.is_none(),
        }
    }

    /// The process scope: where threads without a guard are charged.
    pub fn process() -> &'static Scope {
        &PROCESS
    }

    /// The scope's identity, unique for the life of the process.
    pub fn id(&self) -> ScopeId {
        self.id
    }

    /// The scope's kind.
    pub fn kind(&self) -> ScopeKind {
        self.kind
    }

    /// The scope's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// True when the slot table was full at creation, so this scope charges
    /// the process scope.
    pub fn is_fallback(&self) -> bool {
        self.fallback
    }

    /// Makes this scope the innermost one on the current thread until the
    /// guard drops. See [`ScopeGuard`] for nesting rules.
    pub fn enter(&self) -> ScopeGuard<'_> {
        let me = thread::id();
        let lease = table::guard_enter(self.slot, me);
        let entered = thread::push(self.slot);
        ScopeGuard {
            scope: self,
            entered,
            lease,
            _not_send: PhantomData,
        }
    }

    /// A snapshot of this scope's counters (the process scope's when
    /// [`Scope::is_fallback`]). Allocates nothing.
    pub fn stats(&self) -> ScopeStats {
        // While the handle lives the slot holds this scope, so the snapshot
        // cannot be torn by reuse; the fallback is only for safety.
        table::snapshot(self.slot).unwrap_or(ScopeStats {
            id: self.id,
            kind: self.kind,
            name: self.name,
            open: true,
            allocations: 0,
            reallocs: 0,
            allocated_bytes: 0,
            frees: 0,
            live_bytes: 0,
            peak_live_bytes: 0,
            ceiling: None,
            ceiling_crossings: 0,
            first_crossing: None,
        })
    }

    /// Sets (or with `None` clears) a ceiling on this scope's live bytes.
    ///
    /// Going over it never fails an allocation: each upward crossing is
    /// counted and the first one described in [`ScopeStats`] and the
    /// [`crate::Report`]. Ignored on a fallback scope, which must not put a
    /// ceiling on the process scope.
    pub fn set_ceiling(&self, bytes: Option<u64>) {
        if !self.fallback {
            table::set_ceiling(self.slot, bytes);
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if !self.fallback {
            table::close(self.slot);
        }
    }
}

/// Makes `scope` the innermost scope on the current thread until the
/// returned guard drops. The same as [`Scope::enter`].
pub fn enter(scope: &Scope) -> ScopeGuard<'_> {
    scope.enter()
}

/// The id of the innermost scope on the current thread
/// ([`ScopeId::PROCESS`] on a thread without a guard).
pub fn current() -> ScopeId {
    table::snapshot(thread::current())
        .map(|s| s.id)
        .unwrap_or(ScopeId::PROCESS)
}

/// Keeps a scope current on one thread; dropping it restores the scope that
/// was current when it was entered.
///
/// Guards nest. Dropped in reverse order (the normal case) each restores its
/// outer scope. Dropping a guard that is not the innermost ends it *and*
/// every guard entered inside it: the thread goes back to the scope that
/// was current before it, and the inner guards' later drops change nothing.
/// (This out-of-order detection covers the innermost 64 nested guards of a
/// thread; deeper guards restore in drop order.)
///
/// A guard cannot move to another thread (it is neither `Send` nor `Sync`).
/// Forgetting one (`mem::forget`) leaves its thread charged to the scope;
/// that scope's slot is then never reused.
#[must_use = "the scope is current only while the guard lives"]
#[derive(Debug)]
pub struct ScopeGuard<'a> {
    scope: &'a Scope,
    entered: thread::Entered,
    lease: bool,
    _not_send: PhantomData<*const ()>,
}

impl ScopeGuard<'_> {
    /// The scope this guard entered.
    pub fn scope(&self) -> &Scope {
        self.scope
    }
}

impl Drop for ScopeGuard<'_> {
    fn drop(&mut self) {
        thread::pop(&self.entered);
        table::guard_exit(self.scope.slot, self.lease);
    }
}
