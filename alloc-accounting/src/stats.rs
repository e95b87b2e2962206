//! Snapshots of a scope's counters, and the report of every scope.

use std::fmt;

use crate::kind::{ScopeId, ScopeKind};

/// A snapshot of one scope's accounting.
///
/// Two attribution rules fill it:
///
/// - **Events follow the caller.** `allocations` and `reallocs` count the
///   calls (`alloc`, `alloc_zeroed`, `realloc`) made while this scope was
///   the innermost scope on the calling thread.
/// - **Bytes follow the block.** `allocated_bytes`, `frees`, `live_bytes`
///   and `peak_live_bytes` belong to the scope that first allocated the
///   block, for the block's whole life, whichever thread or scope grows,
///   shrinks or frees it.
///
/// So a `realloc` of a block allocated in scope A, made while scope B is
/// current, counts one allocation (and one realloc) in B and moves A's
/// bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeStats {
    /// The scope's identity.
    pub id: ScopeId,
    /// The scope's kind.
    pub kind: ScopeKind,
    /// The static name it was created with.
    pub name: &'static str,
    /// True while the scope's [`crate::Scope`] handle exists; false for a
    /// scope whose handle dropped while blocks charged to it are still live.
    pub open: bool,
    /// Allocation calls made in this scope (`alloc`, `alloc_zeroed` and
    /// `realloc`, zero-size requests included).
    pub allocations: u64,
    /// How many of `allocations` were `realloc` calls.
    pub reallocs: u64,
    /// Bytes requested by blocks charged to this scope: each new block's
    /// size plus every growth by `realloc`.
    pub allocated_bytes: u64,
    /// Blocks charged to this scope that have been freed (on any thread, in
    /// any scope).
    pub frees: u64,
    /// Bytes of blocks charged to this scope that are still allocated.
    pub live_bytes: u64,
    /// The highest `live_bytes` has been.
    pub peak_live_bytes: u64,
    /// The ceiling on `live_bytes`, if one is set.
    pub ceiling: Option<u64>,
    /// How many times `live_bytes` went from at or below the ceiling to
    /// above it.
    pub ceiling_crossings: u64,
    /// The first such crossing, if any.
    pub first_crossing: Option<CeilingCrossing>,
}

impl ScopeStats {
    /// The counters alone, without identity or ceiling: what an
    /// exact-count test compares across runs.
    pub fn counts(&self) -> Counts {
        Counts {
            allocations: self.allocations,
            reallocs: self.reallocs,
            allocated_bytes: self.allocated_bytes,
            frees: self.frees,
            live_bytes: self.live_bytes,
            peak_live_bytes: self.peak_live_bytes,
        }
    }
}

/// The counters of a [`ScopeStats`], comparable as one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Counts {
    /// See [`ScopeStats::allocations`].
    pub allocations: u64,
    /// See [`ScopeStats::reallocs`].
    pub reallocs: u64,
    /// See [`ScopeStats::allocated_bytes`].
    pub allocated_bytes: u64,
    /// See [`ScopeStats::frees`].
    pub frees: u64,
    /// See [`ScopeStats::live_bytes`].
    pub live_bytes: u64,
    /// See [`ScopeStats::peak_live_bytes`].
    pub peak_live_bytes: u64,
}

/// What the first ceiling crossing of a scope looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CeilingCrossing {
    /// Live bytes right after the crossing allocation.
    pub live_bytes: u64,
    /// Bytes that allocation (or growth) added.
    pub request_bytes: u64,
    /// The scope's `allocations` count when it happened.
    pub allocation: u64,
}

/// Every scope that holds a slot, plus the table's overflow counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One snapshot per scope, process scope first, in slot order.
    pub scopes: Vec<ScopeStats>,
    /// Scopes created while every slot was taken; they charge the process
    /// scope instead of their own.
    pub overflowed_scopes: u64,
    /// Scope handles dropped while a guard on them was still active (only
    /// possible with `mem::forget`); their slots are never reused.
    pub leaked_slots: u64,
}

impl Report {
    /// The scopes whose live bytes crossed their ceiling at least once.
    pub fn crossed(&self) -> impl Iterator<Item = &ScopeStats> {
        self.scopes.iter().filter(|s| s.ceiling_crossings > 0)
    }

    /// The scope with id `id`, if it is in the report.
    pub fn get(&self, id: ScopeId) -> Option<&ScopeStats> {
        self.scopes.iter().find(|s| s.id == id)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>8} {:<11} {:<20} {:>6} {:>10} {:>9} {:>14} {:>10} {:>12} {:>12} {:>12}",
            "id",
            "kind",
            "name",
            "state",
            "allocs",
            "reallocs",
            "alloc_bytes",
            "frees",
            "live",
            "peak",
            "ceiling"
        )?;
        for s in &self.scopes {
            let ceiling = match s.ceiling {
                Some(c) if s.ceiling_crossings > 0 => format!("{c} x{}", s.ceiling_crossings),
                Some(c) => c.to_string(),
                None => "-".to_string(),
            };
            writeln!(
                f,
                "{:>8} {:<11} {:<20} {:>6} {:>10} {:>9} {:>14} {:>10} {:>12} {:>12} {:>12}",
                s.id.to_string(),
                s.kind.as_str(),
                s.name,
                if s.open { "open" } else { "closed" },
                s.allocations,
                s.reallocs,
                s.allocated_bytes,
                s.frees,
                s.live_bytes,
                s.peak_live_bytes,
                ceiling
            )?;
        }
        for s in self.crossed() {
            if let (Some(c), Some(first)) = (s.ceiling, s.first_crossing) {
                writeln!(
                    f,
                    "ceiling crossed: {} {} \"{}\" went over {} bytes {} time(s); first at \
                     allocation {} ({} bytes requested, {} live)",
                    s.id,
                    s.kind,
                    s.name,
                    c,
                    s.ceiling_crossings,
                    first.allocation,
                    first.request_bytes,
                    first.live_bytes
                )?;
            }
        }
        if self.overflowed_scopes > 0 {
            writeln!(
                f,
                "{} scope(s) found the slot table full and charged the process scope instead",
                self.overflowed_scopes
            )?;
        }
        if self.leaked_slots > 0 {
            writeln!(
                f,
                "{} scope slot(s) leaked: their handle dropped while a guard was forgotten",
                self.leaked_slots
            )?;
        }
        Ok(())
    }
}
