//! Exact allocation counting for this test binary: a global allocator that
//! counts allocations made on the current thread while counting is on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
    static MAX: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            let _ = MAX.try_with(|m| m.set(m.get().max(size)));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; the
// bookkeeping touches only const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What a counted closure allocated on this thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocs {
    /// Allocations and reallocations.
    pub count: u64,
    /// The largest single allocation in bytes.
    pub bytes_max: usize,
}

/// Runs `f`, counting this thread's allocations.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    COUNT.with(|c| c.set(0));
    MAX.with(|m| m.set(0));
    ON.with(|o| o.set(true));
    let r = f();
    ON.with(|o| o.set(false));
    (
        r,
        Allocs {
            count: COUNT.with(Cell::get),
            bytes_max: MAX.with(Cell::get),
        },
    )
}

mod tests {
    use smith_store::{Limits, SessionFile, SessionId, bench_support};

    use super::count;

    fn write(n: u64) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.smith");
        // Build an n-entry linear session through the in-memory API.
        let entries = bench_support::representative_entries(n);
        let ext: Vec<_> = entries
            .iter()
            .enumerate()
            .map(|(i, (k, p, c))| smith_store::ExternalEntry {
                id: i as u64 + 1,
                parent: i as u64,
                timestamp_ms: i as u64,
                kind: *k,
                pairing: *p,
                content: c,
            })
            .collect();
        let s = smith_store::Session::from_external(SessionId([5; 16]), 0, &ext).expect("external");
        let mut bytes = Vec::new();
        s.encode_file(&mut bytes).expect("encode");
        std::fs::write(&path, bytes).expect("write");
        (dir, path)
    }

    /// Loading a mapped file and forking its branch each allocate the same
    /// exact number of times at 10, 1,000 and 100,000 entries.
    #[test]
    fn fork_and_load_allocate_constant_times() {
        let mut seen = Vec::new();
        for n in [10u64, 1_000, 100_000] {
            let (_d, path) = write(n);
            let file = SessionFile::open(&path).expect("open");
            let limits = Limits::default();
            let (s, load) = count(|| file.load(&limits).expect("load"));
            assert_eq!(s.records().len() as u64, n);
            assert_eq!(s.branch().len() as u64, n);
            assert!(
                s.report().compressed_entries > 0 || n < 100,
                "compressed frames are part of the load"
            );
            let (f, fork) = count(|| s.fork(SessionId([6; 16]), 1));
            assert_eq!(f.branch().len() as u64, n);
            seen.push((n, load.count, fork.count));
        }
        // Load: the file's display name for messages, record table, payload
        // arena, selected branch, and the path copy kept in the session.
        // Fork: record table, payload arena, branch.
        for (n, load, fork) in &seen {
            assert_eq!(*load, 5, "load of {n} entries: {seen:?}");
            assert_eq!(*fork, 3, "fork of {n} entries: {seen:?}");
        }
    }
}
