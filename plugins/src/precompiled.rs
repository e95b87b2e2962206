//! The built-in plugins' artifacts compiled ahead of time by the build
//! (plugins/build.rs), and how a start loads them (docs/plugins.md,
//! "Precompiled built-ins"):
//!
//! - **In place.** The artifacts a start loads before its first frame (the
//!   interface's extensions and the offline provider) lie uncompressed in
//!   the binary, each on a page boundary. Every start, the first on a
//!   fresh `SMITH_HOME` as every later one, loads them where they lie
//!   (`Component::deserialize_raw`): wasmtime reads their headers and the
//!   code pages are made executable where they are ([`CodePublisher`]);
//!   only each module's initial memory data (8 to 300 KB) is copied, into
//!   a `memfd` that instances map, as for any artifact not mapped from a
//!   file. Nothing is decompressed or written into the cache, so a first
//!   start does exactly what a later one does.
//! - **Compressed.** The rest (the vendors' providers, the search
//!   providers) are zstd frames, each compressed with all the in-place
//!   artifacts as its prefix (they share the Rust standard library's
//!   code). The first load of one in a process decompresses its frame
//!   alone, deserializes it from that memory and hands its cache file to a
//!   writer thread ([`write_in_background`]), which writes it atomically
//!   (a temporary file of this process, then a rename), so a concurrent
//!   first start never sees a torn artifact; later starts map the cache
//!   file. The process waits for those writes when it exits
//!   ([`flush_cache_writes`]), so a short command leaves the cache filled
//!   as well.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use wasmtime::Engine;
use wasmtime::component::Component;

/// Bytes aligned to a page (4 KiB), as the in-place artifacts are embedded:
/// `PageAligned(*include_bytes!(...))`.
#[repr(C, align(4096))]
#[derive(Debug)]
pub struct PageAligned<T: ?Sized>(pub T);

/// Where a [`Precompiled`] artifact lies in its [`PrecompiledBlob`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Uncompressed, at `offset` in the blob's in-place bytes (a multiple
    /// of the page size in the build's blob), used where it lies.
    InPlace {
        /// Where the artifact starts in the in-place bytes.
        offset: usize,
    },
    /// The blob's zstd frame `index`, compressed with all the in-place
    /// bytes as its prefix.
    Frame {
        /// The frame's place in the blob's frames.
        index: usize,
    },
}

/// The artifacts compiled ahead of time: the in-place ones, uncompressed,
/// and the zstd frames of the others (see the module docs), each frame
/// decompressed at most once per process.
pub struct PrecompiledBlob {
    in_place: &'static [u8],
    zstd: &'static [u8],
    /// Where each frame ends in `zstd`.
    frame_ends: &'static [usize],
    /// Each frame decompressed (leaked: it lives as long as the `'static`
    /// blob), or `None` when it is no zstd frame of its size.
    unpacked: OnceLock<Box<[Unpacked]>>,
}

/// One frame decompressed, once: its bytes, or `None` when it is no zstd
/// frame of its size.
type Unpacked = OnceLock<Option<&'static [u8]>>;

impl std::fmt::Debug for PrecompiledBlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrecompiledBlob")
            .field("in_place_bytes", &self.in_place.len())
            .field("zstd_bytes", &self.zstd.len())
            .field("frames", &self.frame_ends.len())
            .finish_non_exhaustive()
    }
}

impl PrecompiledBlob {
    /// The artifacts of `in_place`, uncompressed, and of the zstd frames in
    /// `zstd` that end at `frame_ends`, each compressed with all of
    /// `in_place` as its prefix.
    pub const fn new(
        in_place: &'static [u8],
        zstd: &'static [u8],
        frame_ends: &'static [usize],
    ) -> Self {
        Self {
            in_place,
            zstd,
            frame_ends,
            unpacked: OnceLock::new(),
        }
    }

    /// Frame `index` decompressed into `len` bytes, once per process;
    /// `None` when there is no such frame or it is no zstd frame of that
    /// size.
    fn frame(&'static self, index: usize, len: usize) -> Option<&'static [u8]> {
        let slots = self.unpacked.get_or_init(|| {
            std::iter::repeat_with(OnceLock::new)
                .take(self.frame_ends.len())
                .collect()
        });
        *slots.get(index)?.get_or_init(|| {
            let start = match index.checked_sub(1) {
                Some(before) => *self.frame_ends.get(before)?,
                None => 0,
            };
            let zstd = self.zstd.get(start..*self.frame_ends.get(index)?)?;
            let mut context = zstd::zstd_safe::DCtx::try_create()?;
            if !self.in_place.is_empty() {
                context.ref_prefix(self.in_place).ok()?;
            }
            let mut out = vec![0u8; len];
            let made = context.decompress(&mut out[..], zstd).ok()?;
            (made == len).then(|| &*Vec::leak(out))
        })
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
    /// Where the artifact lies in the blob.
    pub stored: Stored,
    /// The artifact's size in bytes.
    pub artifact_len: usize,
}

impl Precompiled {
    /// The artifact (decompressed first, when it is a frame); `None` when
    /// it is past the end of its blob or no zstd frame of its size.
    pub fn artifact(&self) -> Option<&'static [u8]> {
        match self.stored {
            Stored::InPlace { offset } => self
                .blob
                .in_place
                .get(offset..offset.checked_add(self.artifact_len)?),
            Stored::Frame { index } => self.blob.frame(index, self.artifact_len),
        }
    }

    /// Whether the artifact is used where it lies, never cached.
    pub fn is_in_place(&self) -> bool {
        matches!(self.stored, Stored::InPlace { .. })
    }

    /// The artifact deserialized into `engine`: an in-place artifact where
    /// it lies when this machine can run it there ([`CodePublisher`], a
    /// page-aligned artifact, pages that may be made executable), otherwise
    /// (and every compressed one) copied into memory of wasmtime's; `None`
    /// when it is no zstd frame or
    /// wasmtime refuses it (another version or configuration, a processor
    /// feature this machine lacks, no artifact at all).
    ///
    /// # Safety
    ///
    /// As [`crate::Runtime::load_component_with`]: the bytes are the
    /// unmodified output of `Engine::precompile_component`, or bytes
    /// wasmtime rejects as no artifact; in-place bytes are never written
    /// (their code pages may be made executable, and stay so).
    pub(crate) unsafe fn deserialize(&self, engine: &Engine) -> Option<Component> {
        let artifact = self.artifact()?;
        if self.is_in_place()
            && CodePublisher::can_publish_in_place(artifact)
            // SAFETY: the caller's guarantee: `artifact` is `'static`,
            // never written, and page-aligned (checked above), as
            // `deserialize_raw` and the engine's `CodePublisher` need.
            && let Ok(component) =
                unsafe { Component::deserialize_raw(engine, std::ptr::NonNull::from(artifact)) }
        {
            return Some(component);
        }
        // Compressed, or not usable in place on this machine (its pages
        // could not be made executable where they lie, say): a copy in
        // wasmtime's own memory. An artifact wasmtime refuses is refused
        // again here, when it reads the header.
        // SAFETY: the caller's guarantee.
        unsafe { Component::deserialize(engine, artifact) }.ok()
    }
}

/// How the runtime's engine makes compiled code executable
/// (`Config::with_custom_code_memory`): as wasmtime does by default
/// (`mprotect` to read and execute; x86_64 needs no instruction-cache
/// maintenance), but for memory wasmtime does not own too, which is what
/// lets an in-place artifact run where it lies in the binary. Wasmtime
/// makes its own code memory read-only before it asks, and unmaps it when
/// the code is dropped; the in-place code pages stay executable (and never
/// writable) for the process, so a component dropped while another loaded
/// from the same artifact runs cannot take its code away. Only on x86_64
/// Unix; elsewhere the engine keeps wasmtime's own way and in-place
/// artifacts are copied.
#[derive(Debug)]
pub(crate) struct CodePublisher;

impl CodePublisher {
    /// The publisher for the runtime's engine, where there is one.
    pub(crate) fn for_this_machine() -> Option<std::sync::Arc<dyn wasmtime::CustomCodeMemory>> {
        if cfg!(all(target_arch = "x86_64", unix)) && page_size() == 4096 {
            Some(std::sync::Arc::new(CodePublisher))
        } else {
            None
        }
    }

    /// Whether `artifact` can run where it lies: the publisher is in use
    /// and the artifact starts on a page.
    fn can_publish_in_place(artifact: &[u8]) -> bool {
        cfg!(all(target_arch = "x86_64", unix))
            && page_size() == 4096
            && artifact.as_ptr().addr().is_multiple_of(4096)
    }
}

/// The machine's page size in bytes (0 when it cannot be told).
fn page_size() -> usize {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0)
}

impl wasmtime::CustomCodeMemory for CodePublisher {
    fn required_alignment(&self) -> usize {
        4096
    }

    fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
        // SAFETY: wasmtime passes the text section of an artifact it
        // loaded, page-aligned at both ends (`required_alignment`): pages
        // of its own code memory, or of an in-place artifact, which are
        // never written. Neither overlaps other data.
        let rc = unsafe {
            libc::mprotect(
                ptr.cast_mut().cast(),
                len,
                libc::PROT_READ | libc::PROT_EXEC,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(wasmtime::format_err!(
                "could not make {len} bytes of plugin code at {ptr:p} executable: {}",
                std::io::Error::last_os_error()
            ))
        }
    }

    fn unpublish_executable(&self, _ptr: *const u8, _len: usize) -> wasmtime::Result<()> {
        // Called as code is dropped: wasmtime unmaps its own code memory
        // right after, and an in-place artifact's code stays executable
        // for the other components loaded from it (see the type's docs).
        Ok(())
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
