//! The second core's share of a full load: the frames of the second part
//! of a large mapped file are checked, forwards, while the loading thread
//! checks the frames of the first part and then joins the two.
//!
//! The worker finds where a frame starts near the split point without
//! help: the first position whose two length copies agree, within the
//! limits, and whose frame's checksum matches. From there it walks the
//! frames to the end of the file, in the order the hardware streams them
//! in (a walk backwards through the trailers would read against that order
//! and stall on memory). A chance match inside a payload is possible, so
//! the loading thread trusts the worker's walk only when its own walk from
//! the header lands exactly where the worker started: the two chains of
//! frames are then the same from there to the end. Otherwise (damage, or a
//! chance match) it checks those frames itself.
//!
//! The worker also builds the second part's records, in file order, into
//! the record table's spare capacity above the loading thread's share,
//! resolving each parent that is the entry just before it; the loading
//! thread moves them down next to its own and resolves the rest.
//!
//! The worker runs on the process's helper thread ([`crate::helper`]), or
//! on a bare POSIX thread of its own when the helper is busy: one function
//! over borrowed bytes that allocates nothing through the Rust allocator,
//! so a load makes the same allocations whichever thread runs its second
//! walk, or none (a thread's stack is mapped by the C library).

use crate::entry::{NONE, Record};
use crate::format::{self, FLAG_ZSTD, KIND_ENTRY, KIND_ORIGIN};
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
/// the same; the loading thread also joins the halves after the walk, so
/// the worker takes a little more than half.
pub(crate) const WORKER_SHARE_64THS: usize = 33;

/// [`WORKER_SHARE_64THS`] when both threads read the file through its
/// mapping: the worker, which starts later and builds its records
/// further from the table's start, then takes less than half.
pub(crate) const WORKER_SHARE_MAPPED_64THS: usize = 30;

/// How far past the split point the worker looks for the start of a frame
/// (see [`find_frame_start`]): a frame longer than this that spans the split
/// point leaves the whole walk to the loading thread.
const SEARCH_WINDOW: usize = 1 << 20;

/// `parent_index` of a worker's record whose parent lies before the
/// worker's part: the loading thread resolves it. Any other `parent_index`
/// the worker writes is [`NONE`] or the index of the parent among the
/// worker's own records, which the loading thread shifts by its count.
pub(crate) const PARENT_PENDING: u32 = u32::MAX - 2;

/// How the tail walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every frame from here (where the worker found a frame to start) to
    /// the end was checked and its record built.
    Met(usize),
    /// No frame start was found near the split point, or a frame failed
    /// its checks: the loading thread walks on alone (and finds the damage
    /// itself, if it is real).
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
    /// Records written, from the bottom of the worker's region up.
    pub(crate) written: usize,
    /// Frames checked.
    pub(crate) frames: u64,
    /// The worker's counts (entries, bytes, unknown and malformed frames,
    /// orphans found so far).
    pub(crate) report: LoadReport,
    /// The first origin frame of the worker's part that decodes.
    pub(crate) origin: Option<Origin>,
}

/// What the worker reads and where it leaves its answer.
struct Job<'a> {
    bytes: &'a [u8],
    /// The file, whose frames the worker reads through a buffer on its
    /// stack (see [`crate::window`]); without, through the mapping.
    file: Option<&'a std::fs::File>,
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
    /// A job checking the frames of `bytes` from the first frame start
    /// found at or after `floor` (the file's first frame starts at `start`)
    /// to the end, writing their records from `out` up to at most
    /// `out + out_len`: the caller's record table's spare capacity, which
    /// the caller leaves alone until the worker is joined.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        bytes: &'a [u8],
        file: Option<&'a std::fs::File>,
        start: usize,
        floor: usize,
        limits: &Limits,
        out: *mut Record,
        out_len: usize,
    ) -> Self {
        Self(Job {
            bytes,
            file,
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

/// The first position in `floor .. floor + SEARCH_WINDOW` where a frame
/// could start: its two length copies agree and are within `limits`, and
/// its checksum matches. A chance match inside a payload is possible; the
/// loading thread only trusts a walk from here once its own walk lands on
/// the same position.
fn find_frame_start(bytes: &[u8], floor: usize, limits: &Limits) -> Option<usize> {
    let stop = floor.saturating_add(SEARCH_WINDOW).min(bytes.len());
    let mut p = floor;
    while p < stop {
        // The trailer is compared before the checksum is computed: at most
        // positions the declared length is noise and the comparison fails.
        if crate::session::frame_len_at(bytes, p, limits).is_some() {
            let v = format::frame_at_unchecked(bytes, p);
            if v.content_len <= limits.max_content_len && format::checksum_ok(&v) {
                return Some(p);
            }
        }
        p += 1;
    }
    None
}

/// The worker's walk: from the first frame start found at or after
/// `floor` to the end of the file, checking each frame (both length copies
/// agree and are within the limits, the checksum matches) and building its
/// record.
fn check_tail(job: &mut Job<'_>) {
    let bytes = job.bytes;
    let (floor, limits) = (job.floor, job.limits);
    let part = &mut job.part;
    let Some(first) = find_frame_start(bytes, floor.max(job.start), &limits) else {
        part.outcome = Outcome::Damaged;
        return;
    };
    let mut pos = first;
    let mut layout = crate::format::HeadLayout::default();
    let mut buf;
    let mut window = match job.file {
        Some(file) => {
            buf = [0u8; crate::window::BUFFER];
            let each = crate::window::BUFFER.min(bytes.len());
            Some(crate::window::Window::new(file, bytes, &mut buf[..each]))
        }
        None => None,
    };
    part.outcome = loop {
        if pos == bytes.len() {
            break Outcome::Met(first);
        }
        let v = match &mut window {
            Some(w) => w.intact_frame(pos, &limits),
            None => crate::session::intact_frame_at(bytes, pos, &limits),
        };
        let Some(v) = v else {
            break Outcome::Damaged;
        };
        let total = v.raw.len();
        part.frames += 1;
        pos += total;
        if v.kind == KIND_ORIGIN {
            if part.origin.is_none()
                && let Some((session, leaf)) = format::decode_origin(v.payload)
            {
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
        let Some(mut r) = in_place_record(&v, &mut part.report, &mut layout) else {
            continue;
        };
        if part.written == job.out_len {
            break Outcome::Full;
        }
        r.parent_index = if r.parent == 0 || v.link == 0 || v.link > v.offset {
            if r.parent != 0 {
                part.report.orphans += 1;
            }
            NONE
        } else if v.offset - v.link < first as u64 {
            PARENT_PENDING
        } else {
            // SAFETY: the worker wrote `written` records from `out` up.
            let mine = unsafe { std::slice::from_raw_parts(job.out, part.written) };
            let p = crate::session::resolve_parent_id(mine, r.parent, v.offset, v.link);
            if p == NONE {
                part.report.orphans += 1;
            }
            p
        };
        // SAFETY: `written` < `out_len`: inside the region of spare
        // capacity this job was given, which nothing else touches until the
        // join.
        unsafe { job.out.add(part.written).write(r) };
        part.written += 1;
    };
}

/// A running tail check; joined when dropped, so the borrowed bytes, the
/// record table and the job outlive the thread on every path (an unwinding
/// caller included).
pub(crate) struct Tail<'j, 'a> {
    runner: Runner,
    job: &'j mut JobSlot<'a>,
    joined: bool,
}

/// Where the worker runs: on the process's helper thread, or on a thread
/// of its own when the helper is busy with another load.
enum Runner {
    Helper(crate::helper::Claim),
    #[cfg(unix)]
    Thread(libc::pthread_t),
}

/// The job at `arg`, checked.
///
/// # Safety
/// `arg` is the `Job` of a `Tail`, which keeps it borrowed mutably and
/// alive, and touches it only after the check is done.
unsafe fn check(arg: *mut libc::c_void) {
    // SAFETY: see above.
    let job = unsafe { &mut *arg.cast::<Job<'_>>() };
    check_tail(job);
}

#[cfg(unix)]
extern "C" fn run(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `Job` of a `Tail` (see `check`).
    unsafe { check(arg) };
    std::ptr::null_mut()
}

impl<'j, 'a> Tail<'j, 'a> {
    /// Starts the worker on `slot`'s job; `None` when no thread can run it
    /// (the caller then does the whole walk itself).
    pub(crate) fn spawn(slot: &'j mut JobSlot<'a>) -> Option<Self> {
        let arg = std::ptr::from_mut(&mut slot.0).cast::<libc::c_void>();
        if let Some(claim) = crate::helper::claim() {
            // SAFETY: the returned `Tail` waits for the task (in `wait`,
            // also on drop) before the job or anything it borrows can go
            // away, and nothing touches the job meanwhile.
            unsafe { claim.start(check, arg) };
            return Some(Self {
                runner: Runner::Helper(claim),
                job: slot,
                joined: false,
            });
        }
        #[cfg(unix)]
        {
            // SAFETY: pthread_t is plain data, written by pthread_create.
            let mut thread: libc::pthread_t = unsafe { std::mem::zeroed() };
            // SAFETY: `run` has the start routine's signature and reads
            // `arg` only as the `Job` it is; the returned `Tail` joins the
            // thread before the job or anything it borrows can go away.
            let rc = unsafe { libc::pthread_create(&mut thread, std::ptr::null(), run, arg) };
            if rc != 0 {
                return None;
            }
            Some(Self {
                runner: Runner::Thread(thread),
                job: slot,
                joined: false,
            })
        }
        #[cfg(not(unix))]
        {
            None
        }
    }

    fn wait(&mut self) {
        if !self.joined {
            self.joined = true;
            match &self.runner {
                Runner::Helper(claim) => claim.wait(),
                #[cfg(unix)]
                // SAFETY: the thread was created by `spawn` and is joined
                // once.
                Runner::Thread(thread) => unsafe {
                    libc::pthread_join(*thread, std::ptr::null_mut());
                },
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
