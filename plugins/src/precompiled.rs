//! The built-in plugins' artifacts compiled ahead of time by the build
//! (plugins/build.rs), and how a first start gets them without waiting.
//!
//! Each artifact is its own zstd frame, compressed with every artifact
//! before it as a prefix (a raw-content dictionary): the artifacts share
//! the Rust standard library's code, so the frames take about what one
//! frame of all of them takes (half of what they take compressed alone),
//! while a start decompresses only the frames up to the last artifact it
//! needs, each straight into its place in one buffer (docs/plugins.md,
//! "Precompiled built-ins"):
//!
//! - The first load that needs an artifact starts a thread that
//!   decompresses, front to back, the frames a start loads before its
//!   first frame (the interface's extensions, then the offline provider:
//!   the build lays the artifacts out in that order); a load waits only
//!   until its own artifact is out, and runs while the thread goes on
//!   with the next one, so on two cores the decompression and the loads
//!   overlap. A later artifact (a vendor's provider) is decompressed when
//!   it is asked for.
//! - The component is deserialized from that memory, and its cache file
//!   is written by another thread ([`write_in_background`]), atomically
//!   (a temporary file of this process, then a rename), so a concurrent
//!   first start never sees a torn artifact. The process waits for those
//!   writes when it exits ([`flush_cache_writes`]), so a short command
//!   leaves the cache filled as well.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use wasmtime::Engine;
use wasmtime::component::Component;

/// Artifacts compiled ahead of time, one after the other, in zstd frames
/// (see the module docs), decompressed at most once per process.
pub struct PrecompiledBlob {
    zstd: &'static [u8],
    /// Where each frame ends in `zstd` and, decompressed, in the buffer;
    /// `None` for one frame of `len` bytes.
    frames: Option<&'static [(usize, usize)]>,
    len: usize,
    /// How many frames, from the first, a thread decompresses ahead of
    /// the loads asking for them.
    ahead: usize,
    state: OnceLock<Unpacking>,
}

impl std::fmt::Debug for PrecompiledBlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrecompiledBlob")
            .field("zstd_bytes", &self.zstd.len())
            .field("frames", &self.frames.map_or(1, <[_]>::len))
            .field("len", &self.len)
            .field("ahead", &self.ahead)
            .finish_non_exhaustive()
    }
}

/// The decompression under way: the buffer, filled front to back one
/// frame at a time, and how far it got.
struct Unpacking {
    /// The start of the buffer of `len` bytes (leaked: it lives as long as
    /// the `'static` blob). Bytes below `progress.written` are final and
    /// only read; the frame after them is written by the one thread that
    /// holds `progress.busy`, and nothing reads it until it is published.
    out: *mut u8,
    progress: Mutex<Progress>,
    changed: Condvar,
}

// SAFETY: see `Unpacking::out`: the buffer is written only past
// `progress.written`, by one thread at a time, and read only below it;
// `progress` (behind its mutex) orders each frame's writes before its
// reads.
unsafe impl Send for Unpacking {}
// SAFETY: as above.
unsafe impl Sync for Unpacking {}

#[derive(Debug, Default)]
struct Progress {
    /// Whether the thread that decompresses ahead was started.
    started: bool,
    /// Whether a thread is decompressing the next frame.
    busy: bool,
    /// Frames decompressed.
    frames: usize,
    /// Bytes decompressed, final.
    written: usize,
    /// Whether a frame turned out to be no zstd frame of its size.
    failed: bool,
}

impl PrecompiledBlob {
    /// The artifacts of `zstd`, one zstd frame of `len` bytes.
    pub const fn new(zstd: &'static [u8], len: usize) -> Self {
        Self {
            zstd,
            frames: None,
            len,
            ahead: 1,
            state: OnceLock::new(),
        }
    }

    /// The artifacts of `zstd`, `len` bytes in all, in the zstd frames
    /// that end at `frames` (in `zstd`, and decompressed), each compressed
    /// with all the bytes before it as its prefix; the first `ahead`
    /// frames are decompressed by a thread of their own as soon as one
    /// artifact is asked for.
    pub const fn with_frames(
        zstd: &'static [u8],
        frames: &'static [(usize, usize)],
        len: usize,
        ahead: usize,
    ) -> Self {
        Self {
            zstd,
            frames: Some(frames),
            len,
            ahead,
            state: OnceLock::new(),
        }
    }

    fn frame_count(&self) -> usize {
        self.frames.map_or(1, <[_]>::len)
    }

    /// Frame `index`: its bytes in `zstd` and its place decompressed.
    fn frame(&self, index: usize) -> Option<(&'static [u8], std::ops::Range<usize>)> {
        match self.frames {
            None => (index == 0).then_some((self.zstd, 0..self.len)),
            Some(frames) => {
                let (zstd_start, start) = match index.checked_sub(1) {
                    Some(before) => *frames.get(before)?,
                    None => (0, 0),
                };
                let (zstd_end, end) = *frames.get(index)?;
                let zstd = self.zstd.get(zstd_start..zstd_end)?;
                (start <= end && end <= self.len).then_some((zstd, start..end))
            }
        }
    }

    /// The decompressed bytes where frame `ahead - 1` ends: what the
    /// thread started by the first load decompresses.
    fn ahead_end(&self) -> usize {
        match self.frames {
            None => self.len,
            Some(frames) => self
                .ahead
                .checked_sub(1)
                .and_then(|last| frames.get(last))
                .map_or(0, |&(_, end)| end),
        }
    }

    fn unpacking(&self) -> &Unpacking {
        self.state.get_or_init(|| Unpacking {
            out: Box::leak(vec![0u8; self.len].into_boxed_slice()).as_mut_ptr(),
            progress: Mutex::new(Progress::default()),
            changed: Condvar::new(),
        })
    }

    /// The first `end` decompressed bytes, once they are out; `None` when
    /// `end` is past the end or a frame up to there is no zstd frame of
    /// its size. The first call starts the thread that decompresses ahead.
    fn bytes_until(&'static self, end: usize) -> Option<&'static [u8]> {
        if end > self.len {
            return None;
        }
        let state = self.unpacking();
        let start_ahead = {
            let mut progress = state.progress.lock().unwrap_or_else(|e| e.into_inner());
            !std::mem::replace(&mut progress.started, true)
        };
        if start_ahead {
            let ahead = self.ahead_end();
            // Without a thread, the loads decompress what they need.
            let _ = std::thread::Builder::new()
                .name("smith-plugin-unpack".to_owned())
                .spawn(move || self.unpack_until(ahead));
        }
        self.unpack_until(end)
    }

    /// Decompresses frames (or waits while another thread does) until the
    /// first `end` bytes are out, and returns them.
    fn unpack_until(&'static self, end: usize) -> Option<&'static [u8]> {
        let state = self.unpacking();
        let mut progress = state.progress.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if progress.written >= end {
                // SAFETY: the first `written` bytes of the buffer are
                // final (see `Unpacking::out`), and it lives as long as
                // `self`.
                return Some(unsafe { std::slice::from_raw_parts(state.out, end) });
            }
            if progress.failed || progress.frames >= self.frame_count() {
                return None;
            }
            if progress.busy {
                progress = state
                    .changed
                    .wait(progress)
                    .unwrap_or_else(|e| e.into_inner());
                continue;
            }
            progress.busy = true;
            let index = progress.frames;
            drop(progress);
            let done = self.unpack_frame(state, index);
            progress = state.progress.lock().unwrap_or_else(|e| e.into_inner());
            progress.busy = false;
            match done {
                Some(end) => {
                    progress.frames += 1;
                    progress.written = end;
                }
                None => progress.failed = true,
            }
            state.changed.notify_all();
        }
    }

    /// Decompresses frame `index` into its place, after the frames before
    /// it (its prefix); where it ends, or `None` when it is no zstd frame
    /// of its size. Called by the thread holding `busy`, with frame
    /// `index - 1` published.
    fn unpack_frame(&self, state: &Unpacking, index: usize) -> Option<usize> {
        let (zstd, place) = self.frame(index)?;
        // SAFETY: `..place.start` is published (final, only read) and
        // `place` is written only here, by the thread holding `busy`,
        // until it is published (see `Unpacking::out`); both lie inside
        // the leaked buffer of `len` bytes (`frame` checks `end <= len`).
        let (prefix, out): (&'static [u8], &mut [u8]) = unsafe {
            (
                std::slice::from_raw_parts(state.out, place.start),
                std::slice::from_raw_parts_mut(state.out.add(place.start), place.len()),
            )
        };
        let mut context = zstd::zstd_safe::DCtx::try_create()?;
        if !prefix.is_empty() {
            context.ref_prefix(prefix).ok()?;
        }
        let made = context.decompress(out, zstd).ok()?;
        (made == place.len()).then_some(place.end)
    }
}

/// A component compiled ahead of time: the sha256 of the component's bytes
/// and where the artifact `Engine::precompile_component` made of them lies
/// in its [`PrecompiledBlob`].
#[derive(Clone, Copy, Debug)]
pub struct Precompiled {
    /// The sha256 of the component (`.wasm`) the artifact was compiled from.
    pub component_sha256: [u8; 32],
    /// The artifacts the artifact is one of.
    pub blob: &'static PrecompiledBlob,
    /// Where the artifact (`.cwasm`) starts in the blob, decompressed.
    pub offset: usize,
    /// The artifact's size in bytes.
    pub artifact_len: usize,
}

impl Precompiled {
    /// The artifact, waiting until it is decompressed; `None` when the
    /// blob is no zstd frame or too short.
    pub fn artifact(&self) -> Option<&'static [u8]> {
        let end = self.offset.checked_add(self.artifact_len)?;
        self.blob.bytes_until(end)?.get(self.offset..end)
    }

    /// The artifact deserialized into `engine`; `None` when it is no zstd
    /// frame or wasmtime refuses it (another version or configuration, a
    /// processor feature this machine lacks, no artifact at all).
    ///
    /// # Safety
    ///
    /// As [`crate::Runtime::load_component_with`]: the decompressed bytes
    /// are the unmodified output of `Engine::precompile_component`, or
    /// bytes wasmtime rejects as no artifact.
    pub(crate) unsafe fn deserialize(&self, engine: &Engine) -> Option<Component> {
        let artifact = self.artifact()?;
        // SAFETY: the caller's guarantee.
        unsafe { Component::deserialize(engine, artifact) }.ok()
    }
}

/// A cache file to write: the plugin's name, the file, its bytes.
type Write = (String, PathBuf, &'static [u8]);

/// The cache writes handed to the writer thread and not yet done.
struct Writes {
    pending: Mutex<usize>,
    done: Condvar,
    queue: Mutex<Option<std::sync::mpsc::Sender<Write>>>,
}

static WRITES: Writes = Writes {
    pending: Mutex::new(0),
    done: Condvar::new(),
    queue: Mutex::new(None),
};

/// How long the process's exit waits for the cache writes in flight.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Writes `bytes` to the cache file `path` atomically on the writer thread
/// (started on first use; when no thread can start, here and now). A
/// failure is reported to the product log: the component is loaded
/// already, only the next start unpacks it again.
pub(crate) fn write_in_background(plugin: &str, path: PathBuf, bytes: &'static [u8]) {
    let mut queue = WRITES.queue.lock().unwrap_or_else(|e| e.into_inner());
    if queue.is_none() {
        let (send, receive) = std::sync::mpsc::channel::<Write>();
        let spawned = std::thread::Builder::new()
            .name("smith-plugin-cache".to_owned())
            .spawn(move || {
                for (plugin, path, bytes) in receive {
                    write_or_report(&plugin, &path, bytes);
                    let mut pending = WRITES.pending.lock().unwrap_or_else(|e| e.into_inner());
                    *pending = pending.saturating_sub(1);
                    drop(pending);
                    WRITES.done.notify_all();
                }
            });
        if spawned.is_ok() {
            *queue = Some(send);
            register_exit_flush();
        }
    }
    if let Some(send) = queue.as_ref() {
        *WRITES.pending.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        if send.send((plugin.to_owned(), path.clone(), bytes)).is_ok() {
            return;
        }
        let mut pending = WRITES.pending.lock().unwrap_or_else(|e| e.into_inner());
        *pending = pending.saturating_sub(1);
    }
    drop(queue);
    write_or_report(plugin, &path, bytes);
}

/// Writes the cache file, reporting a failure to the product log.
fn write_or_report(plugin: &str, path: &Path, bytes: &[u8]) {
    if let Err(err) = write_atomically(path, bytes) {
        smith_diag::log::note(
            smith_diag::log::Level::Warn,
            "plugin.cache",
            &format!(
                "plugin {plugin}: could not write its compiled-component cache file {}: {err}; it is loaded all the same, and the next start unpacks it again from the binary: check that the cache directory is writable",
                path.display()
            ),
        );
    }
}

/// Waits until every cache write handed to the writer thread is done, at
/// most `limit`; whether they all are.
pub fn flush_cache_writes(limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    let mut pending = WRITES.pending.lock().unwrap_or_else(|e| e.into_inner());
    while *pending > 0 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        pending = WRITES
            .done
            .wait_timeout(pending, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// Makes the process's exit (`exit` or a return from `main`) wait for the
/// cache writes in flight, at most [`EXIT_WAIT`].
fn register_exit_flush() {
    extern "C" fn at_exit() {
        flush_cache_writes(EXIT_WAIT);
    }
    // SAFETY: `at_exit` is a plain function that neither unwinds (it
    // waits on a mutex and condition variable, recovering from poison)
    // nor calls `exit`.
    unsafe {
        libc::atexit(at_exit);
    }
}

/// Writes `bytes` to `path` through a temporary file of this process and
/// thread in the same folder, then renames it: readers see the whole file
/// or none.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static TEMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp{}-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("cache"),
        std::process::id(),
        TEMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
