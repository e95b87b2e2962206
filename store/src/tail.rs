//! The second core's share of a full load: the frames at the end of a large
//! mapped file are checked backwards, through their trailers, while the
//! loading thread checks the frames at the start and builds every record.
//!
//! A frame's trailer repeats its body length, so the last frame of an
//! intact file is found from the file's end, the one before it from that
//! frame's start, and so on: no shared state and no frame boundary from the
//! other thread is needed. The two walks must then meet: the loading thread
//! trusts the tail's checks only when the frame where the tail walk stopped
//! is also a frame boundary of its own forward walk from the header, which
//! makes the two chains of frames the same from there to the end. Otherwise
//! (damage, or a chance match of lengths inside a payload) it checks those
//! frames itself.
//!
//! The worker also builds the tail's records, into the top of the record
//! table's spare capacity (the loading thread fills it from the bottom),
//! resolving each parent that is the entry just before it; the loading
//! thread moves them down next to its own and resolves the rest.
//!
//! The worker is a bare POSIX thread that runs one function over borrowed
//! bytes: it allocates nothing through the Rust allocator, so a load makes
//! the same allocations whether or not it uses one (its stack is mapped by
//! the C library, like every thread's).

use crate::entry::{NONE, Record};
use crate::format::{self, FLAG_ZSTD, KIND_ENTRY, KIND_ORIGIN, MIN_FRAME};
use crate::scan::Limits;
use crate::session::{LoadReport, Origin, in_place_record};

/// Files at least this long are checked on two threads; below it, starting
/// a thread (tens of microseconds) and joining the halves would cost a
/// larger part of the load. (Loads of smaller files allocate exactly as
/// many times: the thread allocates nothing.)
pub(crate) const PARALLEL_MIN: usize = 16 << 20;

/// The threshold in force: [`PARALLEL_MIN`] unless a test lowered it with
/// [`crate::set_parallel_load_min`].
static PARALLEL_MIN_NOW: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(PARALLEL_MIN);

/// Files at least this long are checked on two threads (see
/// [`PARALLEL_MIN`]).
#[inline]
pub(crate) fn parallel_min() -> usize {
    PARALLEL_MIN_NOW.load(std::sync::atomic::Ordering::Relaxed)
}

/// Loads whose two walks met and were joined, since the process started
/// (see [`crate::parallel_load_joins`]).
pub(crate) static JOINS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Sets the threshold (see [`crate::set_parallel_load_min`]).
pub(crate) fn set_parallel_min(bytes: usize) {
    PARALLEL_MIN_NOW.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The share of the file's bytes, from the end, whose frames the worker
/// checks and builds records for, in 64ths. Per byte the two walks cost
/// about the same (the backward one a little more); this share was chosen
/// by measurement on the 100 MB fixture, where both threads then reach the
/// join after about 7.3 ms of CPU time each (the loading thread then joins
/// the halves and copies the selected branch alone).
pub(crate) const WORKER_SHARE_64THS: usize = 33;

/// `parent_index` of a tail record whose parent is the entry just before it.
pub(crate) const PARENT_PREV: u32 = u32::MAX - 1;
/// `parent_index` of a tail record whose parent the loading thread resolves.
pub(crate) const PARENT_PENDING: u32 = u32::MAX - 2;

/// How far below the frame being checked the bytes are requested early.
const PREFETCH_BEHIND: usize = 16 << 10;

/// How the tail walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every frame from here to the end was checked and its record built.
    Met(usize),
    /// A frame failed its checks (the forward walk would fail too).
    Damaged,
    /// A whole-payload compressed entry frame: the exact load handles it.
    Exact,
    /// The tail's share of the record table is full.
    Full,
}

/// What the worker found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part {
    /// How the walk ended.
    pub(crate) outcome: Outcome,
    /// Records written, ending at the top of the worker's region.
    pub(crate) written: usize,
    /// Frames checked.
    pub(crate) frames: u64,
    /// The tail's counts (entries, bytes, unknown and malformed frames,
    /// orphans found so far).
    pub(crate) report: LoadReport,
    /// The first origin frame of the tail that decodes.
    pub(crate) origin: Option<Origin>,
}

/// What the worker reads and where it leaves its answer.
struct Job<'a> {
    bytes: &'a [u8],
    start: usize,
    floor: usize,
    limits: Limits,
    out: *mut Record,
    out_len: usize,
    part: Part,
}

/// Storage for one job, kept by the caller while the worker runs.
pub(crate) struct JobSlot<'a>(Job<'a>);

impl<'a> JobSlot<'a> {
    /// A job checking the frames of `bytes` that start at or after `floor`
    /// (the first frame starts at `start`), writing their records below
    /// `out + out_len`: the caller's record table's spare capacity, which
    /// the caller leaves alone until the worker is joined.
    pub(crate) fn new(
        bytes: &'a [u8],
        start: usize,
        floor: usize,
        limits: &Limits,
        out: *mut Record,
        out_len: usize,
    ) -> Self {
        Self(Job {
            bytes,
            start,
            floor,
            limits: *limits,
            out,
            out_len,
            part: Part {
                outcome: Outcome::Damaged,
                written: 0,
                frames: 0,
                report: LoadReport::default(),
                origin: None,
            },
        })
    }
}

/// Requests the bytes just below `end` (a hint: never faults).
#[inline]
fn prefetch_down(bytes: &[u8], low: &mut usize, end: usize, start: usize) {
    let target = end.saturating_sub(PREFETCH_BEHIND).max(start);
    while *low > target {
        *low = low.saturating_sub(64);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint that never faults; `low` is inside
        // `bytes`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                bytes.as_ptr().add(*low).cast::<i8>(),
            );
        }
    }
}

/// The worker's walk: from the end of the file down to the first frame
/// that starts below `floor`, checking each frame (both length copies
/// agree and are within the limits, the checksum matches) and building its
/// record.
fn check_tail(job: &mut Job<'_>) {
    let bytes = job.bytes;
    let (start, floor, limits) = (job.start, job.floor, job.limits);
    let part = &mut job.part;
    let mut end = bytes.len();
    let mut low = bytes.len();
    // The record written last (just above in file order) and the frame
    // offset and id of its parent, while that may be the next entry down.
    let mut above: Option<(usize, u64, u64)> = None;
    part.outcome = loop {
        if end <= start {
            break Outcome::Met(end);
        }
        prefetch_down(bytes, &mut low, end, start);
        if end - start < MIN_FRAME {
            break Outcome::Damaged;
        }
        let body_len = format::read_u32(bytes, end - 4);
        if (body_len as usize) < format::BODY_FIXED || body_len > limits.max_frame_len {
            break Outcome::Damaged;
        }
        let total = body_len as usize + 12;
        if total > end - start {
            break Outcome::Damaged;
        }
        let pos = end - total;
        if pos < floor {
            break Outcome::Met(end);
        }
        if format::read_u32(bytes, pos) != body_len {
            break Outcome::Damaged;
        }
        let v = format::frame_at_unchecked(bytes, pos);
        if v.content_len > limits.max_content_len || !format::checksum_ok(&v) {
            break Outcome::Damaged;
        }
        part.frames += 1;
        end = pos;
        if v.kind == KIND_ORIGIN {
            if let Some((session, leaf)) = format::decode_origin(v.payload) {
                part.origin = Some(Origin { session, leaf });
            }
            continue;
        }
        if v.kind != KIND_ENTRY {
            part.report.unknown_frames += 1;
            continue;
        }
        if v.flags == FLAG_ZSTD {
            break Outcome::Exact;
        }
        let Some(mut r) = in_place_record(&v, &mut part.report) else {
            continue;
        };
        if part.written == job.out_len {
            break Outcome::Full;
        }
        let slot = job.out_len - 1 - part.written;
        if let Some((above_slot, target, parent)) = above.take()
            && target == v.offset
            && parent == r.id
        {
            // SAFETY: `above_slot` < `out_len` was written by this walk.
            unsafe { (*job.out.add(above_slot)).parent_index = PARENT_PREV };
        }
        if r.parent == 0 || v.link == 0 || v.link > v.offset {
            r.parent_index = NONE;
            if r.parent != 0 {
                part.report.orphans += 1;
            }
        } else {
            r.parent_index = PARENT_PENDING;
            above = Some((slot, v.offset - v.link, r.parent));
        }
        // SAFETY: `slot` < `out_len`: inside the region of spare capacity
        // this job was given, which nothing else touches until the join.
        unsafe { job.out.add(slot).write(r) };
        part.written += 1;
    };
}

/// A running tail check; joined when dropped, so the borrowed bytes, the
/// record table and the job outlive the thread on every path (an unwinding
/// caller included).
pub(crate) struct Tail<'j, 'a> {
    #[cfg(unix)]
    thread: libc::pthread_t,
    job: &'j mut JobSlot<'a>,
    joined: bool,
}

#[cfg(unix)]
extern "C" fn run(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `Job` of a `Tail`, which keeps it borrowed
    // mutably and alive, and touches it only after joining this thread.
    let job = unsafe { &mut *arg.cast::<Job<'_>>() };
    check_tail(job);
    std::ptr::null_mut()
}

impl<'j, 'a> Tail<'j, 'a> {
    /// Starts the worker on `slot`'s job; `None` when no thread can be
    /// started (the caller then does the whole walk itself).
    pub(crate) fn spawn(slot: &'j mut JobSlot<'a>) -> Option<Self> {
        #[cfg(unix)]
        {
            // SAFETY: pthread_t is plain data, written by pthread_create.
            let mut thread: libc::pthread_t = unsafe { std::mem::zeroed() };
            let arg = std::ptr::from_mut(&mut slot.0).cast::<libc::c_void>();
            // SAFETY: `run` has the start routine's signature and reads
            // `arg` only as the `Job` it is; the returned `Tail` joins the
            // thread before the job or anything it borrows can go away.
            let rc = unsafe { libc::pthread_create(&mut thread, std::ptr::null(), run, arg) };
            if rc != 0 {
                return None;
            }
            Some(Self {
                thread,
                job: slot,
                joined: false,
            })
        }
        #[cfg(not(unix))]
        {
            let _ = slot;
            None
        }
    }

    fn wait(&mut self) {
        if !self.joined {
            self.joined = true;
            #[cfg(unix)]
            // SAFETY: the thread was created by `spawn` and is joined once.
            unsafe {
                libc::pthread_join(self.thread, std::ptr::null_mut());
            }
        }
    }

    /// Waits for the worker and returns what it found.
    pub(crate) fn join(mut self) -> Part {
        self.wait();
        self.job.0.part
    }
}

impl Drop for Tail<'_, '_> {
    fn drop(&mut self) {
        self.wait();
    }
}
