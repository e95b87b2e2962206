//! Exact allocation counting for this test binary: the accounting
//! allocator is the global allocator, and `count` charges a closure's
//! allocations to a fresh scope.

#[global_allocator]
static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

/// What a counted closure allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocs {
    /// Allocation calls (including reallocations).
    pub count: u64,
    /// The most bytes live at once in the scope.
    pub peak_bytes: u64,
}

/// Runs `f`, counting its allocations.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    let (r, stats) = smith_alloc::count(f);
    (
        r,
        Allocs {
            count: stats.allocations,
            peak_bytes: stats.peak_live_bytes,
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
        write_linear(
            &path,
            entries.iter().map(|(k, p, c)| (*k, *p, c.as_slice())),
        );
        (dir, path)
    }

    /// Writes a linear session of `entries` (kind, pairing, content) to
    /// `path` through the in-memory API.
    fn write_linear<'c>(
        path: &std::path::Path,
        entries: impl Iterator<Item = (smith_store::EntryKind, u64, &'c [u8])>,
    ) {
        let ext: Vec<_> = entries
            .enumerate()
            .map(|(i, (kind, pairing, content))| smith_store::ExternalEntry {
                id: i as u64 + 1,
                parent: i as u64,
                timestamp_ms: i as u64,
                kind,
                pairing,
                content,
            })
            .collect();
        let s = smith_store::Session::from_external(SessionId([5; 16]), 0, &ext).expect("external");
        let mut bytes = Vec::new();
        s.encode_file(&mut bytes).expect("encode");
        std::fs::write(path, bytes).expect("write");
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
        // Load: the file's display name for messages, record table, the
        // shared handle of the (empty) owned payload buffer, and the path
        // copy kept in the session. The payload arena is the file's mapping
        // itself, so no arena buffer is allocated (on other platforms than
        // Unix payloads are copied into one: one more), and a one-line
        // history's selected branch is its record table, so no branch is
        // allocated. Where frames are read through a buffer (see
        // `store/src/window.rs`), it is on the reading thread's stack.
        // Fork: the record table (the payload arena is shared, the branch is
        // the table).
        for (n, load, fork) in &seen {
            #[cfg(unix)]
            assert_eq!(*load, 4, "load of {n} entries: {seen:?}");
            #[cfg(not(unix))]
            assert_eq!(*load, 5, "load of {n} entries: {seen:?}");
            assert_eq!(*fork, 1, "fork of {n} entries: {seen:?}");
        }
    }

    /// A file of runs of `(count, content bytes)` entries, one linear
    /// branch; the content is incompressible (a byte string of pseudo-random
    /// bytes).
    fn shaped(runs: &[(u64, usize)]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.smith");
        let mut rng = bench_support::Rng::new(11);
        let contents: Vec<Vec<u8>> = runs
            .iter()
            .flat_map(|&(count, n)| std::iter::repeat_n(n, count as usize))
            .map(|n| {
                let mut c = Vec::with_capacity(n + 5);
                smith_codec::Encoder::new(&mut c)
                    .bytes(&(0..n).map(|_| rng.next_u64() as u8).collect::<Vec<_>>());
                c
            })
            .collect();
        write_linear(
            &path,
            contents
                .iter()
                .map(|c| (smith_store::EntryKind::ToolResult, 0, c.as_slice())),
        );
        (dir, path)
    }

    /// The record table is sized from the first MiB of frames. When the
    /// rest of the file holds many more entries per byte, the estimate runs
    /// out and the table grows once, exactly; when it holds far fewer, the
    /// table is shrunk once. Either way the load is the copying load's and
    /// makes exactly one allocation more than a file the estimate fits.
    #[test]
    fn a_wrong_table_estimate_costs_exactly_one_allocation() {
        // Files of 16 MiB or more are checked on two threads, each filling
        // its share of the table: the last two files overflow the first
        // thread's share and the second thread's share.
        let cases: [(&str, &[(u64, usize)]); 4] = [
            (
                "short: large entries, then small ones",
                &[(150, 8_000), (20_000, 40)],
            ),
            (
                "long: small entries, then large ones",
                &[(12_000, 60), (2_000, 8_000)],
            ),
            (
                "two threads, the first one's share overflows",
                &[(150, 8_000), (120_000, 40), (1_300, 8_000)],
            ),
            (
                "two threads, the second one's share overflows",
                &[(2_200, 8_000), (120_000, 40)],
            ),
        ];
        for (what, runs) in cases {
            let total: u64 = runs.iter().map(|r| r.0).sum();
            let (_d, path) = shaped(runs);
            assert!(
                std::fs::metadata(&path).expect("meta").len() >= 16 << 20
                    || !what.starts_with("two"),
                "{what}: the file must be large enough for two threads"
            );
            let file = SessionFile::open(&path).expect("open");
            let limits = Limits::default();
            let (s, load) = count(|| file.load(&limits).expect("load"));
            let bytes = std::fs::read(&path).expect("read");
            let copied = smith_store::Session::load_bytes(&bytes, &limits, "copied").expect("load");
            assert_eq!(s.report(), copied.report(), "{what}");
            assert_eq!(s.records().len() as u64, total, "{what}");
            let strip = |r: &smith_store::Record| smith_store::Record {
                payload_offset: 0,
                ..*r
            };
            assert!(
                s.records()
                    .iter()
                    .zip(copied.records())
                    .all(|(a, b)| strip(a) == strip(b)),
                "{what}"
            );
            assert_eq!(s.branch().len() as u64, total, "{what}");
            #[cfg(unix)]
            assert_eq!(load.count, 5, "{what}");
        }
    }
}
