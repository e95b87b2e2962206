//! The loads' second core: one thread kept for the process, so that a
//! large load (and the release of its mapping) starts its second walk
//! without creating a thread each time. Creating one costs its stack's
//! mapping and a first scheduling on the other core, about a tenth of a
//! millisecond, a few percent of a 100 MB load; waking a parked thread
//! costs a few microseconds.
//!
//! One task runs at a time: a caller claims the helper, hands it a task,
//! and waits for it. A caller that finds the helper claimed by another
//! (two loads at once) starts a thread of its own instead, as does one in
//! a process where the helper cannot be started. The helper is a bare
//! POSIX thread and its state is a futex-based mutex and condition
//! variables: nothing here allocates through the Rust allocator, so a load
//! allocates exactly as often whichever thread runs its second walk.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// A task: a function and its argument, which the caller keeps alive and
/// untouched until the task is done.
#[derive(Clone, Copy)]
struct Task {
    run: unsafe fn(*mut libc::c_void),
    arg: *mut libc::c_void,
}

// SAFETY: a task's argument is only used by the helper while the caller
// waits for it (see `Claim::start`).
unsafe impl Send for Task {}

struct State {
    task: Option<Task>,
    done: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    task: None,
    done: true,
});
/// Signalled when a task is handed over.
static WORK: Condvar = Condvar::new();
/// Signalled when the task is done.
static DONE: Condvar = Condvar::new();
/// Held by the one caller using the helper.
static CLAIMED: AtomicBool = AtomicBool::new(false);
/// The process whose helper is running (0: none yet). A child made by
/// `fork` has no helper thread, whatever its memory says.
static RUNNING_IN: AtomicI32 = AtomicI32::new(0);

fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(unix)]
extern "C" fn serve(_: *mut libc::c_void) -> *mut libc::c_void {
    loop {
        let mut s = lock();
        let task = loop {
            if let Some(t) = s.task.take() {
                break t;
            }
            s = WORK.wait(s).unwrap_or_else(PoisonError::into_inner);
        };
        drop(s);
        // SAFETY: the caller that handed over the task keeps its argument
        // alive and untouched until `done` is set (`Claim::wait`).
        unsafe { (task.run)(task.arg) };
        lock().done = true;
        DONE.notify_all();
    }
}

/// The helper, held for one task at a time.
pub(crate) struct Claim {
    _private: (),
}

/// Claims the helper, starting it first if this process has none; `None`
/// when another caller holds it or no thread can be started.
pub(crate) fn claim() -> Option<Claim> {
    if CLAIMED
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return None;
    }
    let claim = Claim { _private: () };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    if RUNNING_IN.load(Ordering::Relaxed) != pid {
        // No helper in this process (first use, or a child made by fork
        // whose memory still says its parent's was running).
        *lock() = State {
            task: None,
            done: true,
        };
        if !start() {
            return None;
        }
        RUNNING_IN.store(pid, Ordering::Relaxed);
    }
    Some(claim)
}

#[cfg(unix)]
fn start() -> bool {
    // SAFETY: pthread_t and pthread_attr_t are plain data, written by the
    // calls below before they are read.
    unsafe {
        let mut thread: libc::pthread_t = std::mem::zeroed();
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_attr_init(&mut attr) != 0 {
            return false;
        }
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        let rc = libc::pthread_create(&mut thread, &attr, serve, std::ptr::null_mut());
        libc::pthread_attr_destroy(&mut attr);
        rc == 0
    }
}

#[cfg(not(unix))]
fn start() -> bool {
    false
}

impl Claim {
    /// Hands `run(arg)` to the helper.
    ///
    /// # Safety
    /// `arg` must stay valid, and be touched by nothing else, until
    /// [`Claim::wait`] returns; the caller must call it (dropping the claim
    /// does).
    pub(crate) unsafe fn start(&self, run: unsafe fn(*mut libc::c_void), arg: *mut libc::c_void) {
        let mut s = lock();
        s.task = Some(Task { run, arg });
        s.done = false;
        drop(s);
        WORK.notify_one();
    }

    /// Waits until the task handed over is done (at once when there is
    /// none).
    pub(crate) fn wait(&self) {
        let mut s = lock();
        while !s.done {
            s = DONE.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.wait();
        CLAIMED.store(false, Ordering::Release);
    }
}

/// A read-only mapping of a session file. A large one that a full load
/// read through is released on two threads: its page tables are torn down
/// by the helper for the upper half while the dropping thread tears down
/// the lower half's, before the mapping is unmapped. A loaded 100 MB
/// session read through its mapping holds some 25,000 page-table entries,
/// whose teardown would otherwise run on one core.
#[derive(Debug)]
pub(crate) struct Mapping {
    map: memmap2::Mmap,
    /// Whether a full load read the file through this mapping, so that
    /// its pages are mapped; otherwise few are, and unmapping them is
    /// cheaper than waking the helper.
    read_through: AtomicBool,
}

impl Mapping {
    pub(crate) fn new(map: memmap2::Mmap) -> Self {
        Self {
            map,
            read_through: AtomicBool::new(false),
        }
    }

    /// Notes that a full load reads the file through this mapping.
    pub(crate) fn read_through(&self) {
        self.read_through.store(true, Ordering::Relaxed);
    }
}

impl std::ops::Deref for Mapping {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if *self.read_through.get_mut() {
            release_in_halves(&self.map);
        }
    }
}

/// Tears down the page tables of `map` (nothing is read or written) on two
/// threads when it is as large as a load checked on two threads and the
/// helper is free; otherwise leaves it all to the unmapping.
#[cfg(target_os = "linux")]
fn release_in_halves(map: &[u8]) {
    use crate::window::REGION as HUGE;
    let (base, len) = (map.as_ptr() as usize, map.len());
    if len < crate::tail::parallel_min().max(2 * HUGE) || !crate::tail::two_cpus() {
        return;
    }
    // Split at a huge-page boundary, so neither half splits one.
    let half = (base + len / 2).next_multiple_of(HUGE) - base;
    if half >= len {
        return;
    }
    let Some(claim) = claim() else {
        return;
    };
    let mut upper = (base + half, len - half);
    // SAFETY: `upper` outlives the task (the claim is waited for below),
    // and names pages of this mapping, which nothing reads any more: it is
    // being dropped, and its pages are only released, not changed (a file
    // mapping's pages are read again from the page cache).
    unsafe { claim.start(release, std::ptr::from_mut(&mut upper).cast()) };
    // SAFETY: as above, for the lower half.
    unsafe { libc::madvise(base as *mut libc::c_void, half, libc::MADV_DONTNEED) };
    claim.wait();
    RELEASES.fetch_add(1, Ordering::Relaxed);
}

/// Mappings released in halves since the process started (for tests).
pub(crate) static RELEASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Releases the pages of the `(address, length)` range at `arg`.
///
/// # Safety
/// `arg` points to such a pair, naming pages of a mapping nothing uses.
#[cfg(target_os = "linux")]
unsafe fn release(arg: *mut libc::c_void) {
    // SAFETY: see above.
    let (at, len) = unsafe { *arg.cast::<(usize, usize)>() };
    // SAFETY: see above.
    unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTNEED) };
}
