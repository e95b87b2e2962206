//! The fixed static table of scope slots and every counter update.
//!
//! # Why two sets of counters per slot
//!
//! A locked read-modify-write (`lock xadd` on x86) costs about as much as a
//! whole `malloc`+`free` pair of the system allocator, so a design that
//! updates shared atomic counters on every allocation costs 2.4x the system
//! allocator (measured; see docs/alloc-accounting.md). Instead each slot has
//! an *owner*: the first thread that enters the scope with a guard holds a
//! lease on the slot until that guard drops. The owner updates the slot's
//! `l_*` counters with plain relaxed loads and stores (no lock prefix); it is
//! their only writer. Every other thread touching the slot (allocating in the
//! scope without the lease, or freeing a block charged to it) updates the
//! `s_*` counters with atomic read-modify-writes. A reader adds the two sets.
//! Nothing is ever moved between the sets while the scope is open, so a
//! reader never double counts.
//!
//! Live bytes are the wrapping sum `l_live + s_live` (a remote free makes
//! `s_live` "negative"). Each writer computes the scope's live total right
//! after its own update, so peaks are exact whenever the scope's allocations
//! and frees are ordered by happens-before (every single-threaded path and
//! every hand-off through a channel, lock or join). Only truly simultaneous
//! allocations on two threads in one scope can make the recorded peak an
//! interleaving that another schedule would not show.
//!
//! # Slot life cycle
//!
//! `state` packs a generation (upper bits) and a phase (low two bits):
//! FREE → CLAIMING → OPEN (a `Scope` handle exists) → CLOSED (the handle
//! dropped, blocks charged to it are still live) → reset → FREE with the next
//! generation. When the handle drops, the live bytes are folded into `s_live`
//! together with [`CLOSED_BIT`]; from then on only atomic frees touch it, and
//! the free that brings it to exactly `CLOSED_BIT` (no live bytes left)
//! resets the slot. Readers validate the generation before and after reading
//! (a sequence lock on the reader side only; writers never wait).

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};

use crate::kind::{ScopeId, ScopeKind};
use crate::stats::{CeilingCrossing, ScopeStats};

/// Number of scope slots in the static table, the process scope included.
///
/// Scopes that are open, or closed with blocks still live, each hold one
/// slot; a scope created while all are taken charges the process scope
/// instead (see [`crate::Scope::is_fallback`]).
pub const SLOT_COUNT: usize = 4096;

/// Slot index of the process scope.
pub(crate) const PROCESS_SLOT: u32 = 0;

/// Header value of a block charged to no scope (a zero-size block).
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Thread id used when a thread's id cannot be read (its thread-local
/// storage is gone); it never holds a lease, so it always takes the atomic
/// path.
pub(crate) const NO_THREAD: u64 = u64::MAX;

/// Set in `s_live` once the scope's handle has dropped.
const CLOSED_BIT: u64 = 1 << 63;

const PHASE_MASK: u64 = 0b11;
const PHASE_FREE: u64 = 0;
const PHASE_CLAIMING: u64 = 1;
const PHASE_OPEN: u64 = 2;
const PHASE_CLOSED: u64 = 3;

/// "No ceiling".
const NO_CEILING: u64 = u64::MAX;

/// One scope's counters and metadata.
#[repr(C, align(128))]
pub(crate) struct Slot {
    // First cache line: everything the owner touches per allocation.
    /// Thread id holding the lease, 0 when none.
    owner: AtomicU64,
    l_allocs: AtomicU64,
    l_bytes: AtomicU64,
    l_live: AtomicU64,
    l_peak: AtomicU64,
    l_frees: AtomicU64,
    s_live: AtomicU64,
    ceiling: AtomicU64,
    // Shared-path counters and rarely written fields.
    s_allocs: AtomicU64,
    s_bytes: AtomicU64,
    s_frees: AtomicU64,
    s_peak: AtomicU64,
    l_reallocs: AtomicU64,
    s_reallocs: AtomicU64,
    crossings: AtomicU64,
    /// Guards currently entered on this slot (all threads).
    guards: AtomicU64,
    // Metadata.
    state: AtomicU64,
    id: AtomicU64,
    kind: AtomicU64,
    name_ptr: AtomicPtr<u8>,
    name_len: AtomicUsize,
    /// 0 none, 1 being written, 2 ready.
    first_state: AtomicU64,
    first_live: AtomicU64,
    first_request: AtomicU64,
    first_allocation: AtomicU64,
}

const PROCESS_NAME: &str = "process";

impl Slot {
    const fn empty() -> Slot {
        Slot {
            owner: AtomicU64::new(0),
            l_allocs: AtomicU64::new(0),
            l_bytes: AtomicU64::new(0),
            l_live: AtomicU64::new(0),
            l_peak: AtomicU64::new(0),
            l_frees: AtomicU64::new(0),
            s_live: AtomicU64::new(0),
            ceiling: AtomicU64::new(NO_CEILING),
            s_allocs: AtomicU64::new(0),
            s_bytes: AtomicU64::new(0),
            s_frees: AtomicU64::new(0),
            s_peak: AtomicU64::new(0),
            l_reallocs: AtomicU64::new(0),
            s_reallocs: AtomicU64::new(0),
            crossings: AtomicU64::new(0),
            guards: AtomicU64::new(0),
            state: AtomicU64::new(PHASE_FREE),
            id: AtomicU64::new(0),
            kind: AtomicU64::new(0),
            name_ptr: AtomicPtr::new(std::ptr::null_mut()),
            name_len: AtomicUsize::new(0),
            first_state: AtomicU64::new(0),
            first_live: AtomicU64::new(0),
            first_request: AtomicU64::new(0),
            first_allocation: AtomicU64::new(0),
        }
    }

    const fn process() -> Slot {
        let mut slot = Slot::empty();
        slot.state = AtomicU64::new(PHASE_OPEN);
        slot.id = AtomicU64::new(ScopeId::PROCESS.get());
        slot.kind = AtomicU64::new(ScopeKind::Process.to_bits());
        slot.name_ptr = AtomicPtr::new(PROCESS_NAME.as_ptr().cast_mut());
        slot.name_len = AtomicUsize::new(PROCESS_NAME.len());
        slot
    }

    /// The live bytes now, as this thread sees them.
    #[inline]
    fn live(&self) -> u64 {
        self.l_live
            .load(Ordering::Relaxed)
            .wrapping_add(self.s_live.load(Ordering::Relaxed))
            & !CLOSED_BIT
    }
}

const fn build_table() -> [Slot; SLOT_COUNT] {
    let mut table = [const { Slot::empty() }; SLOT_COUNT];
    table[PROCESS_SLOT as usize] = Slot::process();
    table
}

static TABLE: [Slot; SLOT_COUNT] = build_table();

/// Next scope id; 1 is the process scope.
static NEXT_ID: AtomicU64 = AtomicU64::new(ScopeId::PROCESS.get() + 1);
/// Where the next claim starts scanning.
static CLAIM_HINT: AtomicUsize = AtomicUsize::new(1);
/// One past the highest slot index ever claimed (bounds report scans).
static HIGH_WATER: AtomicUsize = AtomicUsize::new(1);
/// Scopes created while every slot was taken.
static OVERFLOWS: AtomicU64 = AtomicU64::new(0);
/// Scope handles dropped while a guard on them was still active (leaked).
static LEAKED: AtomicU64 = AtomicU64::new(0);

#[inline]
fn slot(index: u32) -> Option<&'static Slot> {
    TABLE.get(index as usize)
}

#[inline]
fn process_slot() -> &'static Slot {
    &TABLE[PROCESS_SLOT as usize]
}

/// Takes a free slot for a new scope, or `None` when all are taken (the
/// overflow is counted). Returns the slot index and the new scope's id.
pub(crate) fn claim(kind: ScopeKind, name: &'static str) -> (Option<u32>, ScopeId) {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let usable = SLOT_COUNT - 1;
    let start = CLAIM_HINT.load(Ordering::Relaxed);
    for step in 0..usable {
        let index = 1 + (start - 1 + step) % usable;
        let s = &TABLE[index];
        let state = s.state.load(Ordering::Relaxed);
        if state & PHASE_MASK != PHASE_FREE {
            continue;
        }
        let claiming = (state & !PHASE_MASK) | PHASE_CLAIMING;
        if s.state
            .compare_exchange(state, claiming, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        // Counters are zero: a slot is reset before it becomes FREE.
        s.id.store(id, Ordering::Relaxed);
        s.kind.store(kind.to_bits(), Ordering::Relaxed);
        s.name_ptr
            .store(name.as_ptr().cast_mut(), Ordering::Relaxed);
        s.name_len.store(name.len(), Ordering::Relaxed);
        s.state
            .store((state & !PHASE_MASK) | PHASE_OPEN, Ordering::Release);
        CLAIM_HINT.store(1 + index % usable, Ordering::Relaxed);
        HIGH_WATER.fetch_max(index + 1, Ordering::Relaxed);
        let index = u32::try_from(index).unwrap_or(PROCESS_SLOT);
        return (Some(index), ScopeId::from_raw(id));
    }
    OVERFLOWS.fetch_add(1, Ordering::Relaxed);
    (None, ScopeId::from_raw(id))
}

/// The scope's handle dropped: close the slot, and reset it now if nothing
/// charged to it is live.
pub(crate) fn close(index: u32) {
    if index == PROCESS_SLOT {
        return;
    }
    let Some(s) = slot(index) else { return };
    if s.guards.load(Ordering::Acquire) != 0 {
        // A guard was forgotten (`mem::forget`): its thread may still write
        // the owner counters, so the slot can never be safely reused.
        LEAKED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let state = s.state.load(Ordering::Relaxed);
    s.state
        .store((state & !PHASE_MASK) | PHASE_CLOSED, Ordering::Relaxed);
    // No guard exists, so no owner writes `l_*` any more; fold the owner's
    // live bytes into the atomic word that decides the reset.
    let local = s.l_live.load(Ordering::Relaxed);
    s.l_live.store(0, Ordering::Relaxed);
    let add = local.wrapping_add(CLOSED_BIT);
    let now = s.s_live.fetch_add(add, Ordering::AcqRel).wrapping_add(add);
    if now == CLOSED_BIT {
        reset(s);
    }
}

/// Zeroes a closed slot with no live bytes and makes it FREE again with the
/// next generation.
#[cold]
fn reset(s: &Slot) {
    let state = s.state.load(Ordering::Relaxed);
    let next_gen = (state & !PHASE_MASK).wrapping_add(PHASE_MASK + 1);
    s.state.store(next_gen | PHASE_CLAIMING, Ordering::Relaxed);
    fence(Ordering::Release);
    for counter in [
        &s.owner,
        &s.l_allocs,
        &s.l_bytes,
        &s.l_live,
        &s.l_peak,
        &s.l_frees,
        &s.s_live,
        &s.s_allocs,
        &s.s_bytes,
        &s.s_frees,
        &s.s_peak,
        &s.l_reallocs,
        &s.s_reallocs,
        &s.crossings,
        &s.guards,
        &s.id,
        &s.kind,
        &s.first_state,
        &s.first_live,
        &s.first_request,
        &s.first_allocation,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    s.ceiling.store(NO_CEILING, Ordering::Relaxed);
    s.name_ptr.store(std::ptr::null_mut(), Ordering::Relaxed);
    s.name_len.store(0, Ordering::Relaxed);
    s.state.store(next_gen | PHASE_FREE, Ordering::Release);
}

/// Records that a guard entered `index` on thread `me`; returns whether this
/// guard took the slot's lease (and must give it back).
pub(crate) fn guard_enter(index: u32, me: u64) -> bool {
    let Some(s) = slot(index) else { return false };
    s.guards.fetch_add(1, Ordering::Relaxed);
    let owner = s.owner.load(Ordering::Relaxed);
    if owner == me || owner != 0 || me == 0 || me == NO_THREAD {
        return false;
    }
    s.owner
        .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// Undoes [`guard_enter`].
pub(crate) fn guard_exit(index: u32, lease: bool) {
    let Some(s) = slot(index) else { return };
    if lease {
        s.owner.store(0, Ordering::Release);
    }
    s.guards.fetch_sub(1, Ordering::Release);
}

/// Gives the process scope's lease to `me` if nobody holds it yet.
#[cold]
pub(crate) fn offer_process_lease(me: u64) {
    if me == 0 || me == NO_THREAD {
        return;
    }
    let p = process_slot();
    if p.owner.load(Ordering::Relaxed) == 0 {
        let _ = p
            .owner
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed);
    }
}

/// Adds `n` to an owner-only counter: a plain load and store, no lock.
#[inline(always)]
fn bump(counter: &AtomicU64, n: u64) -> u64 {
    let v = counter.load(Ordering::Relaxed).wrapping_add(n);
    counter.store(v, Ordering::Relaxed);
    v
}

/// Charges one allocation *event* (alloc, alloc_zeroed or realloc) to the
/// caller's current scope `index`.
#[inline(always)]
pub(crate) fn charge_event(index: u32, me: u64, realloc: bool) {
    let Some(s) = slot(index) else { return };
    if s.owner.load(Ordering::Relaxed) == me {
        bump(&s.l_allocs, 1);
        if realloc {
            bump(&s.l_reallocs, 1);
        }
    } else {
        s.s_allocs.fetch_add(1, Ordering::Relaxed);
        if realloc {
            s.s_reallocs.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Charges a new block of `bytes` (non-zero) bytes: one allocation event
/// and the block's bytes, both to the current scope `index`. The same as
/// [`charge_event`] then [`charge_growth`], with one owner check.
#[inline(always)]
pub(crate) fn charge_new(index: u32, me: u64, bytes: u64) {
    let Some(s) = slot(index) else { return };
    let live;
    if s.owner.load(Ordering::Relaxed) == me {
        bump(&s.l_allocs, 1);
        bump(&s.l_bytes, bytes);
        let local = bump(&s.l_live, bytes);
        live = local.wrapping_add(s.s_live.load(Ordering::Relaxed)) & !CLOSED_BIT;
        if live > s.l_peak.load(Ordering::Relaxed) {
            s.l_peak.store(live, Ordering::Relaxed);
        }
    } else {
        s.s_allocs.fetch_add(1, Ordering::Relaxed);
        s.s_bytes.fetch_add(bytes, Ordering::Relaxed);
        let shared = s
            .s_live
            .fetch_add(bytes, Ordering::Relaxed)
            .wrapping_add(bytes);
        live = shared.wrapping_add(s.l_live.load(Ordering::Relaxed)) & !CLOSED_BIT;
        if live > s.s_peak.load(Ordering::Relaxed) {
            s.s_peak.fetch_max(live, Ordering::Relaxed);
        }
    }
    if live > s.ceiling.load(Ordering::Relaxed) {
        crossed(s, live, bytes);
    }
}

/// Charges `bytes` more live bytes (a new block or a grown one) to the
/// block's scope `index`.
#[inline(always)]
pub(crate) fn charge_growth(index: u32, me: u64, bytes: u64) {
    let Some(s) = slot(index) else { return };
    let live;
    if s.owner.load(Ordering::Relaxed) == me {
        bump(&s.l_bytes, bytes);
        let local = bump(&s.l_live, bytes);
        live = local.wrapping_add(s.s_live.load(Ordering::Relaxed)) & !CLOSED_BIT;
        if live > s.l_peak.load(Ordering::Relaxed) {
            s.l_peak.store(live, Ordering::Relaxed);
        }
    } else {
        s.s_bytes.fetch_add(bytes, Ordering::Relaxed);
        let shared = s
            .s_live
            .fetch_add(bytes, Ordering::Relaxed)
            .wrapping_add(bytes);
        live = shared.wrapping_add(s.l_live.load(Ordering::Relaxed)) & !CLOSED_BIT;
        if live > s.s_peak.load(Ordering::Relaxed) {
            s.s_peak.fetch_max(live, Ordering::Relaxed);
        }
    }
    if live > s.ceiling.load(Ordering::Relaxed) {
        crossed(s, live, bytes);
    }
}

/// Records a ceiling crossing if this growth took live bytes over it.
#[cold]
fn crossed(s: &Slot, live: u64, bytes: u64) {
    let ceiling = s.ceiling.load(Ordering::Relaxed);
    if live.wrapping_sub(bytes) > ceiling {
        return; // already above: not a crossing
    }
    s.crossings.fetch_add(1, Ordering::Relaxed);
    if s.first_state
        .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        let allocations = s
            .l_allocs
            .load(Ordering::Relaxed)
            .wrapping_add(s.s_allocs.load(Ordering::Relaxed));
        s.first_live.store(live, Ordering::Relaxed);
        s.first_request.store(bytes, Ordering::Relaxed);
        s.first_allocation.store(allocations, Ordering::Relaxed);
        s.first_state.store(2, Ordering::Release);
    }
}

/// Takes `bytes` live bytes off the block's scope `index`; `freed` says the
/// block is gone (a free, rather than a shrinking realloc).
#[inline(always)]
pub(crate) fn release(index: u32, me: u64, bytes: u64, freed: bool) {
    let Some(s) = slot(index) else { return };
    if s.owner.load(Ordering::Relaxed) == me {
        bump(&s.l_live, bytes.wrapping_neg());
        if freed {
            bump(&s.l_frees, 1);
        }
    } else {
        if freed {
            s.s_frees.fetch_add(1, Ordering::Relaxed);
        }
        let now = s
            .s_live
            .fetch_sub(bytes, Ordering::AcqRel)
            .wrapping_sub(bytes);
        if now == CLOSED_BIT && freed {
            reset(s);
        }
    }
}

/// Sets or clears a slot's ceiling.
pub(crate) fn set_ceiling(index: u32, ceiling: Option<u64>) {
    if let Some(s) = slot(index) {
        s.ceiling
            .store(ceiling.unwrap_or(NO_CEILING), Ordering::Relaxed);
    }
}

/// Reads a consistent snapshot of slot `index`, or `None` when it holds no
/// scope (free, being claimed or reset, or reused while being read).
pub(crate) fn snapshot(index: u32) -> Option<ScopeStats> {
    let s = slot(index)?;
    let before = s.state.load(Ordering::Acquire);
    let phase = before & PHASE_MASK;
    if phase != PHASE_OPEN && phase != PHASE_CLOSED {
        return None;
    }
    let id = s.id.load(Ordering::Relaxed);
    let kind = s.kind.load(Ordering::Relaxed);
    let name_ptr = s.name_ptr.load(Ordering::Relaxed);
    let name_len = s.name_len.load(Ordering::Relaxed);
    let allocations = s
        .l_allocs
        .load(Ordering::Relaxed)
        .wrapping_add(s.s_allocs.load(Ordering::Relaxed));
    let reallocs = s
        .l_reallocs
        .load(Ordering::Relaxed)
        .wrapping_add(s.s_reallocs.load(Ordering::Relaxed));
    let allocated_bytes = s
        .l_bytes
        .load(Ordering::Relaxed)
        .wrapping_add(s.s_bytes.load(Ordering::Relaxed));
    let frees = s
        .l_frees
        .load(Ordering::Relaxed)
        .wrapping_add(s.s_frees.load(Ordering::Relaxed));
    let live_bytes = s.live();
    let peak_live_bytes = s
        .l_peak
        .load(Ordering::Relaxed)
        .max(s.s_peak.load(Ordering::Relaxed));
    let ceiling = s.ceiling.load(Ordering::Relaxed);
    let ceiling_crossings = s.crossings.load(Ordering::Relaxed);
    let first_crossing = if s.first_state.load(Ordering::Acquire) == 2 {
        Some(CeilingCrossing {
            live_bytes: s.first_live.load(Ordering::Relaxed),
            request_bytes: s.first_request.load(Ordering::Relaxed),
            allocation: s.first_allocation.load(Ordering::Relaxed),
        })
    } else {
        None
    };
    fence(Ordering::Acquire);
    let after = s.state.load(Ordering::Relaxed);
    // A phase change OPEN -> CLOSED keeps the generation; anything that
    // reused the slot changed it.
    if after & !PHASE_MASK != before & !PHASE_MASK {
        return None;
    }
    let after_phase = after & PHASE_MASK;
    if after_phase != PHASE_OPEN && after_phase != PHASE_CLOSED {
        return None;
    }
    let name: &'static str = if name_ptr.is_null() {
        ""
    } else {
        // SAFETY: the generation did not change between reading the state
        // and re-checking it, and a slot's name fields are written only
        // while it is CLAIMING (before OPEN is published with Release and
        // observed above with Acquire), from a `&'static str` whose pointer
        // and length were stored together; so `name_ptr`/`name_len` are the
        // parts of that same `&'static str`.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(name_ptr, name_len)) }
    };
    Some(ScopeStats {
        id: ScopeId::from_raw(id),
        kind: ScopeKind::from_bits(kind),
        name,
        open: phase == PHASE_OPEN && after_phase == PHASE_OPEN,
        allocations,
        reallocs,
        allocated_bytes,
        frees,
        live_bytes,
        peak_live_bytes,
        ceiling: (ceiling != NO_CEILING).then_some(ceiling),
        ceiling_crossings,
        first_crossing,
    })
}

/// Calls `f` with a snapshot of every slot that holds a scope, process
/// scope first, in slot order. Allocates nothing itself.
pub(crate) fn for_each(mut f: impl FnMut(&ScopeStats)) {
    let end = HIGH_WATER.load(Ordering::Relaxed).min(SLOT_COUNT);
    for index in 0..end {
        let Ok(index) = u32::try_from(index) else {
            break;
        };
        if let Some(stats) = snapshot(index) {
            f(&stats);
        }
    }
}

/// Scopes created while every slot was taken.
pub(crate) fn overflows() -> u64 {
    OVERFLOWS.load(Ordering::Relaxed)
}

/// Scope handles dropped while one of their guards was still active.
pub(crate) fn leaked() -> u64 {
    LEAKED.load(Ordering::Relaxed)
}
