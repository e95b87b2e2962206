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
//! Neither thread waits long for the other: each claims its part in
//! chunks as it walks ([`Fence`]), and the one done first takes the end of
//! the other's part and walks it the same way (the loading thread in
//! `session::in_place_pass`, the worker in [`help`]), so that a thread
//! whose core is shared with something else does less of the file.
//!
//! The worker runs on the process's helper thread ([`crate::helper`]), or
//! on a bare POSIX thread of its own when the helper is busy: one function
//! over borrowed bytes that allocates nothing through the Rust allocator,
//! so a load makes the same allocations whichever thread runs its second
//! walk, or none (a thread's stack is mapped by the C library).

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::entry::{NONE, Record};
use crate::format::{self, FLAG_ZSTD, KIND_ENTRY, KIND_ORIGIN};
use crate::scan::Limits;
use crate::session::{LoadReport, Origin, in_place_record_into};

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

/// Whether this thread may run on two CPUs or more (its affinity mask, as
/// `taskset` sets it): with one, a second walk would only take turns with
/// the first on it, and a load walks alone. `true` where that cannot be
/// asked.
pub(crate) fn two_cpus() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data, which the call fills.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is as large as the size given and outlives the call.
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        // SAFETY: `set` was filled by the call above.
        rc != 0 || unsafe { libc::CPU_COUNT(&set) } >= 2
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}

/// Loads whose two walks met and were joined, since the process started
/// (see [`crate::parallel_load_joins`]).
pub(crate) static JOINS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Loads that joined a part the loading thread took from the end of the
/// file (see [`Fence`]), since the process started (see
/// [`crate::parallel_load_takes`]).
pub(crate) static TAKES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Loads that joined a part the worker took from the end of the loading
/// thread's part, since the process started (see
/// [`crate::parallel_load_helps`]).
pub(crate) static HELPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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

/// The unit in which each thread claims its part of the file as it walks,
/// and in which the other can take the end of it away (see [`Fence`]).
pub(crate) const CHUNK: usize = 1 << 20;

/// The chunk size in force: [`CHUNK`] unless a test set another with
/// [`crate::set_parallel_load_chunk`].
static CHUNK_NOW: AtomicUsize = AtomicUsize::new(CHUNK);

/// The chunk size in force (see [`CHUNK`]).
#[inline]
pub(crate) fn chunk() -> usize {
    CHUNK_NOW.load(Ordering::Relaxed)
}

/// 0, or the point of the worker's part, in 64ths of it, from which a test
/// has the loading thread take the end of the file before the worker
/// starts, whatever the two threads' pace; and the same for the worker
/// taking the end of the loading thread's part (see
/// [`crate::set_parallel_load_chunk`]).
static TAKE_AT: AtomicUsize = AtomicUsize::new(0);
static HELP_AT: AtomicUsize = AtomicUsize::new(0);

/// Sets the chunk size and the forced takes (see
/// [`crate::set_parallel_load_chunk`]).
pub(crate) fn set_chunk(bytes: usize, take_at_64ths: usize, help_at_64ths: usize) {
    CHUNK_NOW.store(if bytes == 0 { CHUNK } else { bytes }, Ordering::Relaxed);
    TAKE_AT.store(take_at_64ths.min(64), Ordering::Relaxed);
    HELP_AT.store(help_at_64ths.min(64), Ordering::Relaxed);
}

/// The forced takes' points (0: none), in 64ths of the worker's part and
/// of the loading thread's, if a test set either.
pub(crate) fn forced_take() -> Option<(usize, usize)> {
    match (
        TAKE_AT.load(Ordering::Relaxed),
        HELP_AT.load(Ordering::Relaxed),
    ) {
        (0, 0) => None,
        t => Some(t),
    }
}

/// Who walks which chunks of one thread's part of the file, so that the
/// other thread, done with its own part while this one is still far from
/// the end of its own (its core taken by something else), takes that end
/// for itself instead of waiting. A load has two: one for the worker's
/// part (the loading thread may take its end), one for the loading
/// thread's (the worker may take its end).
///
/// The file is cut into [`CHUNK`]s. The part's owner claims each chunk
/// before it checks a frame that starts in it; the other thread may take
/// every chunk from a given one on, but only chunks not claimed yet. Both
/// are decided by compare-and-swap on one word, so a chunk is never walked
/// by both: the owner stops at its first frame that starts in a chunk
/// taken from it (the first frame at or after that chunk's start), which is
/// where the other's walk of the rest must begin for the two to be joined.
pub(crate) struct Fence {
    /// The owner has claimed the chunks below the high half, the other
    /// thread took those from the low half on (`u32::MAX`: none).
    state: AtomicU64,
    /// Set by the worker when its walks have ended (on the fence of its
    /// own part).
    finished: AtomicBool,
}

impl Fence {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU64::new(u64::from(u32::MAX)),
            finished: AtomicBool::new(false),
        }
    }

    fn unpack(v: u64) -> (u32, u32) {
        ((v >> 32) as u32, v as u32)
    }

    /// The owner claims every chunk up to and including `chunk`; `false`
    /// when `chunk` was taken by the other thread.
    pub(crate) fn claim(&self, chunk: u32) -> bool {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let (claimed, taken) = Self::unpack(cur);
            if chunk < claimed {
                return true;
            }
            if chunk >= taken {
                return false;
            }
            let next = (u64::from(chunk + 1) << 32) | u64::from(taken);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(v) => cur = v,
            }
        }
    }

    /// How many chunks, from the file's start, the owner has claimed.
    pub(crate) fn claimed(&self) -> u32 {
        Self::unpack(self.state.load(Ordering::Acquire)).0
    }

    /// The other thread takes every chunk from `want` on, or from the
    /// first the owner has not claimed when that is later; returns the
    /// first chunk taken (what was taken before, if that is earlier).
    pub(crate) fn take_from(&self, want: u32) -> u32 {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let (claimed, taken) = Self::unpack(cur);
            let from = want.max(claimed);
            if from >= taken {
                return taken;
            }
            let next = (u64::from(claimed) << 32) | u64::from(from);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return from,
                Err(v) => cur = v,
            }
        }
    }

    /// The first chunk the other thread took (`u32::MAX`: none).
    pub(crate) fn taken(&self) -> u32 {
        Self::unpack(self.state.load(Ordering::Acquire)).1
    }

    /// Whether the worker's walks have ended.
    pub(crate) fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// The chunk that holds byte `pos`.
pub(crate) fn chunk_of(pos: usize) -> u32 {
    u32::try_from(pos / chunk()).unwrap_or(u32::MAX - 1)
}

/// How the tail walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every frame from here (where the walk found a frame to start) up to
    /// [`Part::end`] was checked and its record built.
    Met(usize),
    /// No frame start was found near the split point, or a frame failed
    /// its checks: the loading thread walks on alone (and finds the damage
    /// itself, if it is real).
    Damaged,
    /// A whole-payload compressed entry frame: the exact load handles it.
    Exact,
    /// The walk's share of the record table filled: every frame from here
    /// up to [`Part::end`] was checked and its record built, as with
    /// [`Outcome::Met`], and the rest is left to the loading thread.
    Full(usize),
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
    /// Where a walk that [`Outcome::Met`] ended: the end of the file, or
    /// its first frame that starts in a chunk the loading thread took.
    pub(crate) end: usize,
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
    /// The worker's claims (see [`Fence`]); `None` for a walk to the end
    /// that claims nothing (the loading thread's walk of the part it took).
    fence: Option<&'a Fence>,
    /// The loading thread's claims on its own part, from whose end the
    /// worker, done with its own part first, may take (see [`help`]).
    help: Option<&'a Fence>,
    /// Whether a test forced that take (see [`crate::set_parallel_load_chunk`]).
    help_forced: bool,
    /// Where the records of that part go: slots of the table between the
    /// loading thread's share and the worker's, which nothing else writes
    /// while the worker runs.
    pool: *mut Record,
    pool_len: usize,
    /// Where the walk stops: at its first frame that starts here or later.
    stop_at: usize,
    part: Part,
    /// What the worker's walk of the end of the loading thread's part
    /// found, when it took one.
    second: Option<Part>,
}

/// Storage for one job, kept by the caller while the worker runs.
pub(crate) struct JobSlot<'a>(Job<'a>);

impl<'a> JobSlot<'a> {
    /// A job checking the frames of `bytes` from the first frame start
    /// found at or after `floor` (the file's first frame starts at `start`)
    /// to the end, or with `fence` until the chunks it may claim end,
    /// writing their records from `out` up to at most `out + out_len`: the
    /// caller's record table's spare capacity, which the caller leaves alone
    /// until the walk is joined.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        bytes: &'a [u8],
        file: Option<&'a std::fs::File>,
        start: usize,
        floor: usize,
        limits: &Limits,
        out: *mut Record,
        out_len: usize,
        fence: Option<&'a Fence>,
    ) -> Self {
        Self(Job {
            bytes,
            file,
            start,
            floor,
            limits: *limits,
            out,
            out_len,
            fence,
            help: None,
            help_forced: false,
            pool: std::ptr::null_mut(),
            pool_len: 0,
            stop_at: usize::MAX,
            part: Part::empty(),
            second: None,
        })
    }

    /// The same job, whose worker, when its walk reaches the end of the
    /// file while the loading thread is still far from the split point,
    /// takes the end of the loading thread's part through `help` (at once
    /// when a test `forced` it) and walks it too (see [`help`]).
    /// Its records go to the `pool_len` slots at `pool`, which the caller
    /// leaves alone until the worker is joined.
    pub(crate) fn with_help(
        mut self,
        help: &'a Fence,
        forced: bool,
        pool: *mut Record,
        pool_len: usize,
    ) -> Self {
        self.0.help = Some(help);
        self.0.help_forced = forced;
        self.0.pool = pool;
        self.0.pool_len = pool_len;
        self
    }

    /// Runs the job on this thread and returns what it found.
    pub(crate) fn walk_here(&mut self) -> Part {
        check_tail(&mut self.0);
        self.0.part
    }
}

impl Part {
    pub(crate) fn empty() -> Self {
        Self {
            outcome: Outcome::Damaged,
            written: 0,
            frames: 0,
            report: LoadReport::default(),
            origin: None,
            end: 0,
        }
    }
}

/// The worker's help, its own walk done (to the end of the file) while the
/// loading thread is still walking its part: it takes the end of that part
/// from a chunk boundary on (only chunks the loading thread has not
/// claimed: see [`Fence`]), as much as it would walk in the time the
/// loading thread needs for the rest at the pace each kept so far, and
/// walks it from the first frame start found there up to where its own
/// walk began, writing the records after its own. The loading thread stops
/// at its first frame in a chunk taken, and joins the three parts when its
/// walk ended where this one began and this one ended where the worker's
/// own began; otherwise it walks on alone.
fn help(job: &mut Job<'_>) {
    let (Some(help), Some(own)) = (job.help, job.fence) else {
        return;
    };
    let Outcome::Met(first) = job.part.outcome else {
        return;
    };
    // Its walk reached the end of the file; claiming every chunk to the end
    // (those where no frame starts included) tells whether the loading
    // thread took any: then it walks the end of the file itself, its
    // records in the slots this walk would use, and this one must not.
    if job.part.end != job.bytes.len() || !own.claim(chunk_of(job.bytes.len().saturating_sub(1))) {
        return;
    }
    let from = if job.help_forced {
        (help.taken() as usize).saturating_mul(chunk())
    } else {
        let at = (help.claimed() as usize)
            .saturating_mul(chunk())
            .clamp(job.start, first);
        let rest = (first - at) as u128;
        let (mine, theirs) = ((job.bytes.len() - first) as u128, (at - job.start) as u128);
        let even = rest * mine / (mine + theirs).max(1);
        let fits = job.pool_len as u128 * mine * 8 / (9 * job.part.written.max(1) as u128);
        let take = usize::try_from(even.min(fits)).unwrap_or(0);
        if take < 2 * chunk() {
            return;
        }
        let want = chunk_of(first - take) + 1;
        (help.take_from(want) as usize).saturating_mul(chunk())
    };
    if from >= first || from <= job.start {
        return;
    }
    let mut second = Job {
        bytes: job.bytes,
        file: job.file,
        start: job.start,
        floor: from,
        limits: job.limits,
        out: job.pool,
        out_len: job.pool_len,
        fence: None,
        help: None,
        help_forced: false,
        pool: std::ptr::null_mut(),
        pool_len: 0,
        stop_at: first,
        part: Part::empty(),
        second: None,
    };
    check_tail(&mut second);
    job.second = Some(second.part);
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
    // The end of the chunks this walk has claimed (with no fence: all).
    let mut claimed_end = if job.fence.is_some() { 0 } else { usize::MAX };
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
    let stop_at = job.stop_at;
    part.outcome = loop {
        if pos == bytes.len() || pos >= stop_at {
            part.end = pos;
            break Outcome::Met(first);
        }
        if pos >= claimed_end
            && let Some(fence) = job.fence
        {
            let chunk = chunk_of(pos);
            if !fence.claim(chunk) {
                // The rest is the loading thread's, from this frame on.
                part.end = pos;
                break Outcome::Met(first);
            }
            claimed_end = (chunk as usize + 1).saturating_mul(self::chunk());
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
        if part.written == job.out_len {
            // This frame is not taken: the walk covers the frames before it.
            part.frames -= 1;
            part.end = v.offset as usize;
            break Outcome::Full(first);
        }
        // SAFETY: `written` < `out_len`: inside the region of spare
        // capacity this job was given, which nothing else touches until the
        // join.
        let slot = unsafe { &mut *job.out.add(part.written).cast::<MaybeUninit<Record>>() };
        if !in_place_record_into(&v, &mut part.report, &mut layout, slot) {
            continue;
        }
        // SAFETY: written just now.
        let r = unsafe { slot.assume_init_mut() };
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
    help(job);
    if let Some(fence) = job.fence {
        fence.finished.store(true, Ordering::Release);
    }
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
    /// Waits for the worker and returns what it found: its own walk, and
    /// its walk of the end of the loading thread's part if it took one.
    pub(crate) fn join(mut self) -> (Part, Option<Part>) {
        self.wait();
        (self.job.0.part, self.job.0.second)
    }
}

impl Drop for Tail<'_, '_> {
    fn drop(&mut self) {
        self.wait();
    }
}
