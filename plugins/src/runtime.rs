//! The process-wide wasm runtime: one [`wasmtime::Engine`], the epoch
//! ticker that gives hard deadlines, the linkers (built once), the compiled
//! component cache and the per-store sandbox state.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, Resource, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::bindings;
use crate::effects::{
    Denial, EffectError, Effects, EntryKind, ProcessEnd, ProcessRequest, ServerProcess,
};
use crate::error::{ErrorKind, Phase, PluginError};
use crate::wasm::Wasm;

/// How often the ticker advances the engine's epoch.
pub const TICK: Duration = Duration::from_millis(5);

/// Per-plugin limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The hard deadline of one call into the plugin.
    pub call_deadline: Duration,
    /// After an abort, how long the plugin may keep running before it is
    /// destroyed.
    pub abort_grace: Duration,
    /// The most linear memory the plugin may hold, in bytes.
    pub memory_bytes: usize,
    /// The plugin's caps per run on UI intents, log lines and journal
    /// entries ([`crate::rate`]).
    pub rate: crate::rate::RateLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            call_deadline: Duration::from_secs(2),
            abort_grace: Duration::from_millis(250),
            memory_bytes: 64 << 20,
            rate: crate::rate::RateLimits::DEFAULT,
        }
    }
}

static COMPILES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COMPILES_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many components this process has compiled (not loaded from the
/// cache). Startup with a warm cache leaves it unchanged.
pub fn compile_count() -> u64 {
    COMPILES.load(Ordering::Relaxed)
}

/// How many components the calling thread has compiled: exact even while
/// other threads compile.
pub fn compile_count_on_this_thread() -> u64 {
    COMPILES_HERE.with(std::cell::Cell::get)
}

static PRECOMPILED_LOADS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static PRECOMPILED_LOADS_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many components the calling thread has loaded from an artifact the
/// build precompiled (the built-in plugins), neither compiled nor read from
/// the cache.
pub fn precompiled_load_count_on_this_thread() -> u64 {
    PRECOMPILED_LOADS_HERE.with(std::cell::Cell::get)
}

/// How many components this process has loaded from an artifact the build
/// precompiled.
pub fn precompiled_load_count() -> u64 {
    PRECOMPILED_LOADS.load(Ordering::Relaxed)
}

pub use crate::precompiled::{PageAligned, Precompiled, PrecompiledBlob, Stored};

/// The process-wide runtime.
pub struct Runtime {
    engine: Engine,
    start: Instant,
    compat: String,
    pub(crate) provider_linker: Linker<State>,
    pub(crate) extension_linker: Linker<State>,
    /// The components loaded from in-place artifacts, by the artifact's
    /// address and length: wasmtime registers loaded code by its address,
    /// once, so each in-place artifact is deserialized once per process
    /// and every later load of it gets the same component (the refusal
    /// too, as `None`).
    in_place: std::sync::Mutex<InPlaceComponents>,
}

/// See [`Runtime::in_place`].
type InPlaceComponents =
    std::collections::HashMap<(usize, usize), Arc<OnceLock<Option<Component>>>>;

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("compat", &self.compat)
            .finish()
    }
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

impl Runtime {
    /// The process's runtime, created on first use (with its ticker thread).
    ///
    /// # Errors
    ///
    /// When wasmtime cannot be configured on this machine (the message says
    /// why); every later call returns the same error.
    pub fn global() -> Result<&'static Runtime, PluginError> {
        RUNTIME
            .get_or_init(|| Runtime::new().map_err(|e| e.message))
            .as_ref()
            .map_err(|message| {
                PluginError::new(
                    "(runtime)",
                    Phase::Compile,
                    ErrorKind::Unsupported,
                    message.clone(),
                )
            })
    }

    fn new() -> Result<Runtime, PluginError> {
        let fail = |what: &str, err: wasmtime::Error| {
            PluginError::new(
                "(runtime)",
                Phase::Compile,
                ErrorKind::Unsupported,
                format!(
                    "the wasm runtime could not be set up: {what}: {err:#}; plugins are unavailable on this machine"
                ),
            )
        };
        let engine = crate::engine_config::engine_config(None)
            .and_then(|mut config| {
                // Not a compilation setting (artifacts do not record it):
                // how code is made executable, which lets the built-ins run
                // where they lie in the binary (`precompiled.rs`).
                config
                    .with_custom_code_memory(crate::precompiled::CodePublisher::for_this_machine());
                Engine::new(&config)
            })
            .map_err(|e| fail("engine", e))?;
        let mut provider_linker = Linker::<State>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut provider_linker)
            .map_err(|e| fail("WASI imports", e))?;
        bindings::provider::ProviderPlugin::add_to_linker::<State, HasSelf<State>>(
            &mut provider_linker,
            |s| s,
        )
        .and_then(|()| crate::capped::link_log(&mut provider_linker))
        .map_err(|e| fail("host imports", e))?;
        let mut extension_linker = Linker::<State>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut extension_linker)
            .map_err(|e| fail("WASI imports", e))?;
        bindings::extension::ExtensionPlugin::add_to_linker::<State, HasSelf<State>>(
            &mut extension_linker,
            |s| s,
        )
        .and_then(|()| crate::capped::link_log(&mut extension_linker))
        .map_err(|e| fail("host imports", e))?;
        let compat = compatibility_key(&engine);
        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("smith-plugin-epoch".to_owned())
            .spawn(move || {
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(TICK);
                }
            })
            .map_err(|err| {
                PluginError::new(
                    "(runtime)",
                    Phase::Compile,
                    ErrorKind::Unsupported,
                    format!("could not start the plugin deadline ticker thread: {err}; plugins are unavailable"),
                )
            })?;
        Ok(Runtime {
            engine,
            start: Instant::now(),
            compat,
            provider_linker,
            extension_linker,
            in_place: std::sync::Mutex::new(InPlaceComponents::new()),
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The cache key part that changes whenever wasmtime's compiled code
    /// would be incompatible (hex of a sha256 over the compatibility hash).
    pub fn compatibility_key(&self) -> &str {
        &self.compat
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Loads the component `wasm`: a built-in plugin from its artifact
    /// precompiled by the build ([`crate::builtin::PRECOMPILED`]): the
    /// ones a start loads before its first frame where they lie in the
    /// binary, on every start, never cached; the others from `cache_dir`
    /// (keyed on the compatibility key and the component's sha256) or,
    /// when they are not there, decompressed and deserialized from memory,
    /// their cache file written by a thread of its own (see
    /// `precompiled.rs`). Anything else is loaded from the cache or
    /// compiled (and written to the cache before this returns). A
    /// built-in whose embedded artifact does not fit this machine (its
    /// processor lacks a feature the artifact uses) is compiled like any
    /// other component. Precompiled artifacts passed in as bytes are
    /// refused: only the build's own and the cache's own files are
    /// deserialized.
    ///
    /// An embedded component ([`Wasm::Embedded`]) is looked up by the
    /// digest the build computed: nothing is hashed, and its bytes are
    /// decompressed only when it must be compiled.
    ///
    /// # Errors
    ///
    /// When the bytes are a precompiled artifact, do not compile, or the
    /// cache cannot be written (the error names the file).
    pub fn load_component<'a>(
        &self,
        plugin: &str,
        wasm: impl Into<Wasm<'a>>,
        cache_dir: Option<&Path>,
    ) -> Result<Component, PluginError> {
        // SAFETY: every artifact of `builtin::PRECOMPILED` was written by
        // `Engine::precompile_component` in plugins/build.rs and embedded
        // into this binary by its own build with `include_bytes!`, the
        // in-place ones page-aligned in a `static`; nothing else can reach
        // those bytes, and nothing writes them.
        unsafe { self.load_component_with(plugin, wasm, cache_dir, crate::builtin::PRECOMPILED) }
    }

    /// [`Runtime::load_component`] with `precompiled` as the table of
    /// artifacts to try before compiling: the entry whose
    /// `component_sha256` is the sha256 of `wasm`, when there is one, is
    /// deserialized (an in-place one before the cache is looked at, a
    /// compressed one after it, decompressed); when it is no zstd frame or
    /// wasmtime refuses it (another wasmtime version or engine
    /// configuration, a processor feature this machine lacks, bytes that
    /// are no artifact) the component is compiled and cached as if there
    /// were none.
    ///
    /// # Errors
    ///
    /// As [`Runtime::load_component`].
    ///
    /// # Safety
    ///
    /// Every artifact in `precompiled`, decompressed, must be the unmodified
    /// output of `Engine::precompile_component` (of any wasmtime version and
    /// engine configuration: those wasmtime checks), or bytes wasmtime
    /// rejects as no artifact at all. wasmtime cannot check that the machine code in
    /// an artifact was not altered, and runs it as it is
    /// (`Component::deserialize`). In-place artifacts must never be
    /// written: they are used where they lie (`Component::deserialize_raw`)
    /// and their code pages may be made executable for the rest of the
    /// process.
    pub unsafe fn load_component_with<'a>(
        &self,
        plugin: &str,
        wasm: impl Into<Wasm<'a>>,
        cache_dir: Option<&Path>,
        precompiled: &[Precompiled],
    ) -> Result<Component, PluginError> {
        let wasm = wasm.into();
        let err = |kind, message: String| PluginError::new(plugin, Phase::Compile, kind, message);
        // An embedded component is the build's own `.wasm`; bytes from
        // anywhere else may be an artifact in disguise.
        if let Wasm::Bytes(bytes) = wasm
            && Engine::detect_precompiled(bytes).is_some()
        {
            return Err(err(
                ErrorKind::Invalid,
                "the plugin ships a precompiled wasmtime artifact, which smith refuses (deserializing untrusted compiled code is unsafe); ship the component's .wasm instead and smith compiles it".to_owned(),
            ));
        }
        let digest = wasm.sha256();
        let entry = precompiled.iter().find(|p| p.component_sha256 == digest);
        let loaded = |component| {
            PRECOMPILED_LOADS.fetch_add(1, Ordering::Relaxed);
            PRECOMPILED_LOADS_HERE.with(|count| count.set(count.get() + 1));
            Ok(component)
        };
        // The built-ins a start loads before its first frame: from the
        // binary on every start, so a first start does what a later one
        // does (docs/plugins.md, "Precompiled built-ins").
        if let Some(entry) = entry.filter(|e| e.is_in_place())
            // SAFETY: the caller guarantees the artifact is the output of
            // `precompile_component` (or no artifact at all) and never
            // written; its sha256 entry ties it to exactly these component
            // bytes, and wasmtime refuses it unless its version, engine
            // settings and processor features fit this engine and machine.
            && let Some(component) = unsafe { self.precompiled(entry) }
        {
            return loaded(component);
        }
        let cached = cache_dir.map(|dir| self.cache_file(dir, &hex(&digest)));
        if let Some(path) = &cached
            && path.is_file()
        {
            // SAFETY: the file lives in smith's own cache directory, under a
            // name derived from this engine's compatibility hash and the
            // component's sha256, and was written by this function of this
            // same wasmtime build: `Component::serialize`'s output, or an
            // artifact of `precompiled` (see below); nothing else writes
            // there.
            if let Ok(component) = unsafe { Component::deserialize_file(&self.engine, path) } {
                return Ok(component);
            }
        }
        if let Some(entry) = entry.filter(|e| !e.is_in_place())
            && let Some(artifact) = entry.artifact()
            // SAFETY: as above.
            && let Some(component) = unsafe { self.precompiled(entry) }
        {
            // Written once into the cache, by another thread: later
            // starts map the file instead of decompressing again, and
            // this one goes on (docs/plugins.md, "Precompiled built-ins").
            if let Some(path) = cached {
                crate::precompiled::write_in_background(plugin, path, artifact);
            }
            return loaded(component);
        }
        let bytes = wasm
            .bytes()
            .map_err(|message| err(ErrorKind::Component, message))?;
        COMPILES.fetch_add(1, Ordering::Relaxed);
        COMPILES_HERE.with(|count| count.set(count.get() + 1));
        let component = Component::new(&self.engine, bytes).map_err(|e| {
            err(
                ErrorKind::Component,
                format!("the component does not compile: {e:#}; rebuild it for wasm32-wasip2 against smith:plugin@1"),
            )
        })?;
        if let Some(path) = cached {
            let serialized = component.serialize().map_err(|e| {
                err(
                    ErrorKind::Component,
                    format!("the compiled component could not be serialized: {e:#}"),
                )
            })?;
            crate::precompiled::write_atomically(&path, &serialized).map_err(|e| {
                err(
                    ErrorKind::Io,
                    format!(
                        "could not write the compiled plugin cache file {}: {e}; check that the cache directory is writable",
                        path.display()
                    ),
                )
            })?;
        }
        Ok(component)
    }

    /// The component of the precompiled artifact `entry`, deserialized
    /// (an in-place one once per process, see [`Runtime::in_place`]);
    /// `None` when wasmtime refuses it or it is no zstd frame.
    ///
    /// # Safety
    ///
    /// As [`Runtime::load_component_with`], for `entry`.
    unsafe fn precompiled(&self, entry: &Precompiled) -> Option<Component> {
        if !entry.is_in_place() {
            // SAFETY: the caller's guarantee.
            return unsafe { entry.deserialize(&self.engine) };
        }
        let artifact = entry.artifact()?;
        let slot = Arc::clone(
            self.in_place
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry((artifact.as_ptr().addr(), artifact.len()))
                .or_default(),
        );
        // SAFETY: the caller's guarantee.
        slot.get_or_init(|| unsafe { entry.deserialize(&self.engine) })
            .clone()
    }

    /// Whether the component `wasm` loads from an artifact the build
    /// precompiled ([`crate::builtin::PRECOMPILED`]) on this machine, so
    /// that it is never compiled. Deserializes the artifact to find out
    /// (wasmtime's checks of version, settings and processor).
    pub fn loads_precompiled<'a>(&self, wasm: impl Into<Wasm<'a>>) -> bool {
        let digest = wasm.into().sha256();
        crate::builtin::PRECOMPILED
            .iter()
            .find(|p| p.component_sha256 == digest)
            // SAFETY: as in `load_component`: the build's own artifacts,
            // embedded by `include_bytes!`.
            .is_some_and(|p| unsafe { self.precompiled(p) }.is_some())
    }

    /// Whether the component `wasm` loads from an artifact the build
    /// precompiled and embedded uncompressed, where it lies in the binary
    /// (on this machine; see [`Runtime::loads_precompiled`]): such a
    /// component is never read from or written to the cache.
    pub fn loads_in_place<'a>(&self, wasm: impl Into<Wasm<'a>>) -> bool {
        let digest = wasm.into().sha256();
        crate::builtin::PRECOMPILED
            .iter()
            .find(|p| p.component_sha256 == digest && p.is_in_place())
            // SAFETY: as in `load_component`: the build's own artifacts,
            // embedded by `include_bytes!`.
            .is_some_and(|p| unsafe { self.precompiled(p) }.is_some())
    }

    /// The cache file the component `wasm` is compiled into (or loaded
    /// from): [`Runtime::cache_file`] of its sha256.
    pub fn cache_file_of<'a>(&self, cache_dir: &Path, wasm: impl Into<Wasm<'a>>) -> PathBuf {
        self.cache_file(cache_dir, &hex(&wasm.into().sha256()))
    }

    /// The folder of the cache files this wasmtime build can load:
    /// `<cache dir>/plugins/<compatibility key>`. Files anywhere else under
    /// `<cache dir>/plugins` were compiled by another build and are never
    /// read again.
    pub fn cache_folder(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join("plugins").join(&self.compat)
    }

    /// The cache file of the component with sha256 `digest`.
    pub fn cache_file(&self, cache_dir: &Path, digest: &str) -> PathBuf {
        self.cache_folder(cache_dir).join(format!("{digest}.cwasm"))
    }

    pub(crate) fn new_store(
        &self,
        plugin: &str,
        limits: Limits,
        control: Arc<CallControl>,
        effects: Option<Effects>,
    ) -> Store<State> {
        let mut wasi = WasiCtxBuilder::new();
        // No preopens, no environment, no arguments, no sockets, no stdin:
        // the builder starts empty; close the network explicitly. Stdout is
        // discarded; stderr (where a guest's panic message goes) is captured
        // up to STDERR_BYTES, and writing past that traps the plugin.
        let stderr = MemoryOutputPipe::new(STDERR_BYTES);
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .stderr(stderr.clone());
        // One budget per instance: its log lines are counted here, its
        // effects' journal entries in `effects`, its UI intents by the
        // dispatcher.
        let budget = Arc::new(crate::rate::Budget::new(limits.rate));
        let effects = effects.map(|effects| effects.with_budget(Arc::clone(&budget)));
        let state = State {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                limit: limits.memory_bytes,
                current: 0,
                hit: false,
            },
            plugin: plugin.to_owned(),
            stderr,
            control,
            log: Vec::new(),
            log_dropped: 0,
            budget,
            stop: None,
            call_log_dropped: 0,
            effects,
            denials: Vec::new(),
            vcs_operations: Vec::new(),
            event_details: None,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|context| {
            let runtime = match Runtime::global() {
                Ok(runtime) => runtime,
                Err(_) => return Ok(UpdateDeadline::Interrupt),
            };
            let now = runtime.now_ms();
            let state = context.data();
            let verdict = state.control.verdict(now);
            match verdict {
                None => Ok(UpdateDeadline::Continue(1)),
                Some(stop) => {
                    let mut context = context;
                    context.data_mut().stop = Some(stop);
                    Ok(UpdateDeadline::Interrupt)
                }
            }
        });
        store
    }

    /// Arms `control` for one call under `limits`.
    pub(crate) fn arm(&self, control: &CallControl, limits: Limits) {
        // The clock counts whole milliseconds, so the current one may be
        // nearly over: one more keeps the deadline from firing before the
        // plugin had its full time.
        let now = self.now_ms();
        let deadline = now
            .saturating_add(u64::try_from(limits.call_deadline.as_millis()).unwrap_or(u64::MAX))
            .saturating_add(1);
        control.deadline_at.store(deadline, Ordering::SeqCst);
        control.grace_ms.store(
            u64::try_from(limits.abort_grace.as_millis()).unwrap_or(u64::MAX),
            Ordering::SeqCst,
        );
        control.in_call.store(true, Ordering::SeqCst);
    }

    /// Stops the deadline of the call in flight from running (while the
    /// host waits for the user) and returns the milliseconds it had left.
    pub(crate) fn pause_deadline(&self, control: &CallControl) -> u64 {
        control
            .deadline_at
            .swap(u64::MAX, Ordering::SeqCst)
            .saturating_sub(self.now_ms())
    }

    /// Lets a paused deadline run again with the `left` milliseconds it had.
    pub(crate) fn resume_deadline(&self, control: &CallControl, left: u64) {
        control
            .deadline_at
            .store(self.now_ms().saturating_add(left), Ordering::SeqCst);
    }

    pub(crate) fn disarm(&self, control: &CallControl) {
        control.in_call.store(false, Ordering::SeqCst);
        control.cancelled.store(false, Ordering::SeqCst);
        control.abort_at.store(0, Ordering::SeqCst);
    }

    /// Aborts the call in flight, if there is one; with none in flight
    /// nothing changes (the next call is not affected).
    pub(crate) fn interrupt(&self, control: &CallControl) {
        if !control.in_call.load(Ordering::SeqCst) {
            return;
        }
        self.abort(control);
        // The call may have ended between the check and the abort: then
        // the abort must not carry over to the next call.
        if !control.in_call.load(Ordering::SeqCst) {
            control.cancelled.store(false, Ordering::SeqCst);
            control.abort_at.store(0, Ordering::SeqCst);
        }
    }

    pub(crate) fn abort(&self, control: &CallControl) {
        control.cancelled.store(true, Ordering::SeqCst);
        let _ = control.abort_at.compare_exchange(
            0,
            self.now_ms().max(1),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
}

/// Why the host stopped a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    Deadline,
    AbortGrace,
    /// The call dropped this many log lines, as many as a run keeps
    /// ([`State::flood_threshold`]).
    Flood(u64),
}

/// Shared between a plugin's store and its abort handles.
#[derive(Debug, Default)]
pub(crate) struct CallControl {
    cancelled: AtomicBool,
    in_call: AtomicBool,
    abort_at: AtomicU64,
    deadline_at: AtomicU64,
    grace_ms: AtomicU64,
}

impl CallControl {
    fn verdict(&self, now: u64) -> Option<Stop> {
        let abort_at = self.abort_at.load(Ordering::SeqCst);
        // Strictly after: the clock counts whole milliseconds (see `arm`).
        if abort_at != 0 && now > abort_at.saturating_add(self.grace_ms.load(Ordering::SeqCst)) {
            return Some(Stop::AbortGrace);
        }
        if now >= self.deadline_at.load(Ordering::SeqCst) {
            return Some(Stop::Deadline);
        }
        None
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// Caps a plugin's linear memory and table growth.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: usize,
    pub(crate) current: usize,
    pub(crate) hit: bool,
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let others = self.current.saturating_sub(current);
        if others.saturating_add(desired) > self.limit {
            self.hit = true;
            return Ok(false);
        }
        self.current = others + desired;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// Most stderr bytes captured per plugin instance.
pub const STDERR_BYTES: usize = 64 * 1024;

/// Most log lines kept per plugin between drains.
pub const LOG_LINES: usize = 1000;
/// Longest log line kept, in bytes.
pub const LOG_LINE_BYTES: usize = 4096;

/// A store's data: the WASI context (no authority), the limiter, the call
/// control and the plugin's log.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) plugin: String,
    pub(crate) stderr: MemoryOutputPipe,
    pub(crate) control: Arc<CallControl>,
    pub(crate) log: Vec<(bindings::provider::smith::plugin::host::LogLevel, String)>,
    pub(crate) log_dropped: u64,
    /// The instance's caps and counters for the current run.
    pub(crate) budget: Arc<crate::rate::Budget>,
    pub(crate) stop: Option<Stop>,
    /// Log lines dropped during the current call (over the cap, or over
    /// the buffer of [`LOG_LINES`]); reset when a call starts.
    pub(crate) call_log_dropped: u64,
    pub(crate) effects: Option<Effects>,
    pub(crate) denials: Vec<Denial>,
    /// The working-tree operations this plugin made through `vcs` since
    /// they were last taken (`snapshot ID`, `restore ID`), announced to the
    /// other plugins as `vcs-operation` events.
    pub(crate) vcs_operations: Vec<String>,
    /// What `event-details` answers during the handler call in flight.
    pub(crate) event_details: Option<String>,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl State {
    /// How many log lines one call may have dropped before it is stopped
    /// ([`Stop::Flood`]): as many as a run keeps, and never fewer than one
    /// call can keep ([`LOG_LINES`]).
    pub(crate) fn flood_threshold(&self) -> u64 {
        self.budget
            .limits()
            .log_lines
            .max(u64::try_from(LOG_LINES).unwrap_or(u64::MAX))
    }

    /// Counts a log line dropped over the cap in the current call: an
    /// error (which stops the call) once the call dropped
    /// [`State::flood_threshold`] lines.
    pub(crate) fn log_dropped_in_call(&mut self) -> wasmtime::Result<()> {
        self.call_log_dropped += 1;
        if self.call_log_dropped >= self.flood_threshold() {
            self.stop = Some(Stop::Flood(self.call_log_dropped));
            wasmtime::bail!("the plugin flooded the host with log lines");
        }
        Ok(())
    }

    /// Whether the buffer of log lines the current call wrote is full.
    pub(crate) fn log_full(&self) -> bool {
        self.log.len() >= LOG_LINES
    }

    /// Keeps a log line the plugin's cap admitted, in the buffer drained
    /// after each call (cut to [`LOG_LINE_BYTES`]; counted as dropped
    /// when the buffer is full).
    pub(crate) fn keep_log(
        &mut self,
        level: bindings::provider::smith::plugin::host::LogLevel,
        message: String,
    ) {
        if self.log_full() {
            self.log_dropped += 1;
            return;
        }
        let mut message = message;
        if message.len() > LOG_LINE_BYTES {
            let mut cut = LOG_LINE_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        self.log.push((level, message));
    }
}

impl bindings::provider::smith::plugin::host::Host for State {
    fn log(&mut self, level: bindings::provider::smith::plugin::host::LogLevel, message: String) {
        // Over the run's cap: counted, nothing else. (The linkers use
        // `crate::capped::link_log`, which counts before the message is
        // copied out of the plugin; this is the same rule.)
        if self.budget.admit(crate::rate::Kind::Log, 1) {
            self.keep_log(level, message);
        }
    }

    fn cancelled(&mut self) -> bool {
        self.control.cancelled()
    }

    fn read_file(&mut self, path: String) -> Result<Vec<u8>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.read_file(&path),
            None => Err(self.no_grants("fs-read", format!("read-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn list_dir(&mut self, path: String) -> Result<host::DirListing, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.list_dir(&path).map(listing_to_wit),
            None => Err(self.no_grants("fs-read", format!("list-dir {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn write_file(&mut self, path: String, bytes: Vec<u8>) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.write_file(&path, &bytes),
            None => Err(self.no_grants("fs-write", format!("write-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn edit_file(
        &mut self,
        path: String,
        old_text: String,
        new_text: String,
    ) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.edit_file(&path, &old_text, &new_text),
            None => Err(self.no_grants("fs-write", format!("edit-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn run_process(
        &mut self,
        program: String,
        args: Vec<String>,
        cwd: String,
        timeout_ms: u32,
        stdin: Vec<u8>,
    ) -> Result<host::ProcessOutput, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => {
                // The process is killed when the call is cancelled or
                // reaches its deadline: the epoch deadline fires only once
                // control returns to the guest.
                let stop = self.stop_check();
                let request = ProcessRequest {
                    program,
                    args,
                    cwd,
                    timeout_ms,
                    stdin,
                };
                effects.run_process(&request, &stop).map(process_to_wit)
            }
            None => Err(self.no_grants("process", format!("run-process {program:?}"))),
        };
        self.record_for_guest(result)
    }

    fn session_entries(
        &mut self,
        offset: u64,
        limit: u32,
    ) -> Result<Vec<host::SessionEntry>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.session_entries(offset, limit).map(|entries| {
                entries
                    .into_iter()
                    .map(|(role, text)| host::SessionEntry { role, text })
                    .collect()
            }),
            None => Err(self.no_grants(
                "session-read",
                format!("session-entries from entry {offset}"),
            )),
        };
        self.record_for_guest(result)
    }

    fn http_request(
        &mut self,
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<host::HttpResponse, host::EffectError> {
        // To an MCP server's endpoint (`mcp-net`) the wait is the server's
        // time, as a spawned server's read-line is: the deadline is paused
        // while it lasts, and a cancellation of the call ends the exchange
        // so the plugin can tell the server. An exchange begun after the
        // cancellation (that notice) runs to its end under the engine's
        // own limits. Other requests keep the plain contract: they run to
        // their end under the call's deadline.
        let mcp = self
            .effects
            .as_ref()
            .is_some_and(|effects| effects.reaches_mcp_endpoint(&url));
        let control = Arc::clone(&self.control);
        let cancelled_before = control.cancelled();
        let stop = move || !cancelled_before && control.cancelled();
        let paused = Runtime::global()
            .ok()
            .filter(|_| mcp)
            .map(|runtime| runtime.pause_deadline(&self.control));
        let result = match &self.effects {
            Some(effects) => if mcp {
                effects.http_request_until(&method, &url, &headers, body, &stop)
            } else {
                effects.http_request(&method, &url, &headers, body)
            }
            .map(|r| host::HttpResponse {
                status: r.status,
                headers: r.headers,
                body: r.body,
            }),
            None => Err(self.no_grants("net", format!("http-request {method} {url}"))),
        };
        if let (Ok(runtime), Some(remaining)) = (Runtime::global(), paused) {
            runtime.resume_deadline(&self.control, remaining);
        }
        self.record_for_guest(result)
    }

    fn web_get(
        &mut self,
        url: String,
        headers: Vec<(String, String)>,
        timeout_ms: u32,
        max_bytes: u64,
    ) -> Result<host::HttpResponse, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => {
                // The wait is the server's time, bounded by `timeout-ms`:
                // the deadline is paused while it lasts; a cancellation
                // ends it early.
                let control = Arc::clone(&self.control);
                let stop = move || control.cancelled();
                let paused = Runtime::global().map(|runtime| runtime.pause_deadline(&self.control));
                let result = effects
                    .web_get(&url, &headers, timeout_ms, max_bytes, &stop)
                    .map(|r| host::HttpResponse {
                        status: r.status,
                        headers: r.headers,
                        body: r.body,
                    });
                if let (Ok(runtime), Ok(remaining)) = (Runtime::global(), paused) {
                    runtime.resume_deadline(&self.control, remaining);
                }
                result
            }
            None => Err(self.no_grants("web", format!("web-get {url}"))),
        };
        self.record_for_guest(result)
    }

    fn secret_available(&mut self, handle: String) -> Result<bool, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.secret_available(&handle),
            None => Err(self.no_grants("secrets", format!("secret-available {handle:?}"))),
        };
        self.record_for_guest(result)
    }

    fn vcs_snapshot(&mut self, label: String) -> Result<String, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.vcs_snapshot(&label),
            None => Err(self.no_grants("vcs", format!("vcs-snapshot {label:?}"))),
        };
        if let Ok(id) = &result {
            self.note_vcs(format!("snapshot {id}"));
        }
        self.record_for_guest(result)
    }

    fn vcs_diff(&mut self, from: String, to: String) -> Result<host::DiffText, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.vcs_diff(&from, &to).map(|d| host::DiffText {
                text: d.text,
                truncated: d.truncated,
            }),
            None => Err(self.no_grants("vcs", format!("vcs-diff {from:?} {to:?}"))),
        };
        self.record_for_guest(result)
    }

    fn vcs_restore(&mut self, id: String) -> Result<String, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.vcs_restore(&id),
            None => Err(self.no_grants("vcs", format!("vcs-restore {id:?}"))),
        };
        if result.is_ok() {
            self.note_vcs(format!("restore {id}"));
        }
        self.record_for_guest(result)
    }

    fn register_secret(&mut self, value: String) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.register_secret(&value),
            None => Err(self.no_grants(
                "secrets",
                format!("register-secret of a {}-byte value", value.len()),
            )),
        };
        self.record_for_guest(result)
    }

    fn ask(&mut self, question: host::Question) -> Result<host::Answer, host::EffectError> {
        let question = crate::effects::Question {
            prompt: question.prompt,
            kind: match question.kind {
                host::QuestionKind::Confirm => crate::effects::QuestionKind::Confirm,
                host::QuestionKind::Select(options) => {
                    crate::effects::QuestionKind::Select(options)
                }
                host::QuestionKind::Input => crate::effects::QuestionKind::Input,
            },
            timeout_ms: question.timeout_ms,
            default: question.default_answer,
        };
        let result = match &self.effects {
            Some(effects) => {
                // The wait is the user's time, not the plugin's: the
                // deadline is paused while it lasts; only a cancellation
                // ends it early.
                let control = Arc::clone(&self.control);
                let stop = move || control.cancelled();
                let paused = Runtime::global().map(|runtime| runtime.pause_deadline(&self.control));
                let answer = effects.ask(&question, &stop);
                if let (Ok(runtime), Ok(remaining)) = (Runtime::global(), paused) {
                    runtime.resume_deadline(&self.control, remaining);
                }
                answer.map(|answer| host::Answer {
                    text: answer.text,
                    source: match answer.source {
                        crate::effects::AnswerSource::User => host::AnswerSource::User,
                        crate::effects::AnswerSource::Timeout => host::AnswerSource::Timeout,
                        crate::effects::AnswerSource::Policy => host::AnswerSource::Policy,
                    },
                })
            }
            None => Err(self.no_grants("ui", format!("ask {:?}", question.prompt))),
        };
        self.record_for_guest(result)
    }

    fn config_get(&mut self, key: String) -> Option<String> {
        self.effects
            .as_ref()
            .and_then(|effects| effects.config_get(&key))
    }

    fn config_set(&mut self, key: String, value: String) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.config_set(&key, &value),
            None => Err(EffectError::Invalid(format!(
                "config-set {key:?}: this plugin runs without a runtime, so it has no options to change; nothing changed"
            ))),
        };
        self.record_for_guest(result)
    }

    fn event_details(&mut self) -> Option<String> {
        self.event_details.clone()
    }

    fn session_state(&mut self, key: String) -> Option<String> {
        self.effects
            .as_ref()
            .and_then(|effects| effects.session_state(&key))
    }

    fn set_session_state(&mut self, key: String, value: String) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.set_session_state(&key, &value),
            None => Err(EffectError::Failed(format!(
                "set-session-state {key:?}: this plugin runs without a runtime, so it has no session to keep state in; nothing was stored"
            ))),
        };
        self.record_for_guest(result)
    }

    fn project_list_dir(&mut self, path: String) -> Result<host::DirListing, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.project_list_dir(&path).map(listing_to_wit),
            None => Err(self.no_grants("project-read", format!("project-list-dir {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn project_read_file(&mut self, path: String) -> Result<Vec<u8>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.project_read_file(&path),
            None => Err(self.no_grants("project-read", format!("project-read-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn project_write_file(
        &mut self,
        path: String,
        bytes: Vec<u8>,
    ) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.project_write_file(&path, &bytes),
            None => Err(self.no_grants("project-write", format!("project-write-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn project_run_process(
        &mut self,
        program: String,
        args: Vec<String>,
        cwd: String,
        timeout_ms: u32,
        stdin: Vec<u8>,
    ) -> Result<host::ProcessOutput, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => {
                let stop = self.stop_check();
                let request = ProcessRequest {
                    program,
                    args,
                    cwd,
                    timeout_ms,
                    stdin,
                };
                effects
                    .project_run_process(&request, &stop)
                    .map(process_to_wit)
            }
            None => {
                Err(self.no_grants("project-write", format!("project-run-process {program:?}")))
            }
        };
        self.record_for_guest(result)
    }

    fn approval_mode(&mut self) -> Result<String, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.approval_mode().map(|m| m.as_str().to_owned()),
            None => Err(self.no_grants("permissions", "approval-mode".to_owned())),
        };
        self.record_for_guest(result)
    }

    fn set_approval_mode(&mut self, mode: String) -> Result<(), host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.set_approval_mode(&mode),
            None => Err(self.no_grants("permissions", format!("set-approval-mode {mode:?}"))),
        };
        self.record_for_guest(result)
    }

    fn tool_read_only(&mut self, name: String) -> Result<Option<bool>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.tool_read_only(&name),
            None => Err(self.no_grants("permissions", format!("tool-read-only {name:?}"))),
        };
        self.record_for_guest(result)
    }

    fn resolve_path(&mut self, path: String) -> Result<host::ResolvedPath, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects
                .resolve_path(&path)
                .map(|resolved| host::ResolvedPath {
                    absolute: resolved.absolute.to_string_lossy().into_owned(),
                    project_relative: resolved.project_relative,
                }),
            None => Err(self.no_grants("local-read", format!("resolve-path {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn peek_file(&mut self, path: String) -> Result<Option<String>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.peek_file(&path),
            None => Err(self.no_grants("local-read", format!("peek-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn attach_media(&mut self, path: String) -> Result<Option<String>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.attach_media(&path),
            None => Err(self.no_grants("local-read", format!("attach-media {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn stat_file(&mut self, path: String) -> Result<Option<host::FileStat>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.file_stat(&path).map(|stat| {
                stat.map(|stat| host::FileStat {
                    size: stat.size,
                    modified_ns: stat.modified_ns,
                    is_dir: stat.is_dir,
                })
            }),
            None => Err(self.no_grants("local-read", format!("stat-file {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn config_dir(&mut self) -> Result<Option<String>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.config_dir(),
            None => Err(self.no_grants("local-read", "config-dir".to_owned())),
        };
        self.record_for_guest(result)
    }

    fn peek_dir(&mut self, path: String) -> Result<Option<host::DirListing>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects
                .peek_dir(&path)
                .map(|listing| listing.map(listing_to_wit)),
            None => Err(self.no_grants("local-read", format!("peek-dir {path:?}"))),
        };
        self.record_for_guest(result)
    }

    fn home_dir(&mut self) -> Result<Option<String>, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.home_dir(),
            None => Err(self.no_grants("local-read", "home-dir".to_owned())),
        };
        self.record_for_guest(result)
    }

    fn mcp_servers(&mut self) -> Result<String, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.mcp_servers(),
            None => Err(self.no_grants("permissions", "mcp-servers".to_owned())),
        };
        self.record_for_guest(result)
    }

    fn permission_rules(&mut self) -> Result<String, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.permission_rules(),
            None => Err(self.no_grants("permissions", "permission-rules".to_owned())),
        };
        self.record_for_guest(result)
    }

    fn project_trusted(&mut self) -> Result<bool, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => effects.project_trusted(),
            None => Err(self.no_grants("local-read", "project-trusted".to_owned())),
        };
        self.record_for_guest(result)
    }

    fn save_permission_rule(
        &mut self,
        kind: String,
        tool: String,
        path: Option<String>,
        command: Option<String>,
        project: bool,
    ) -> Result<String, host::EffectError> {
        let rule = smith_config::permissions::PermissionRule {
            kind,
            tool,
            path,
            command,
            origin: String::new(),
        };
        let result = match &self.effects {
            Some(effects) => effects
                .save_permission_rule(&rule, project)
                .map(|file| file.display().to_string()),
            None => Err(self.no_grants(
                "permissions",
                format!("save-permission-rule `{}`", rule.to_kdl()),
            )),
        };
        self.record_for_guest(result)
    }

    fn web_search(
        &mut self,
        query: String,
        count: u32,
    ) -> Result<host::SearchAnswer, host::EffectError> {
        let result = match &self.effects {
            Some(effects) => {
                // The provider's calls run under its own deadline: the
                // caller's is paused while it answers.
                let control = Arc::clone(&self.control);
                let stop = move || control.cancelled();
                let paused = Runtime::global().map(|runtime| runtime.pause_deadline(&self.control));
                let result = effects.web_search(&query, count, &stop);
                if let (Ok(runtime), Ok(remaining)) = (Runtime::global(), paused) {
                    runtime.resume_deadline(&self.control, remaining);
                }
                result
            }
            None => Err(self.no_grants("web-search", format!("web-search {query:?}"))),
        };
        self.record_for_guest(result)
    }
}

impl bindings::provider::smith::plugin::host::HostServerProcess for State {
    fn spawn(
        &mut self,
        program: String,
        args: Vec<String>,
        cwd: String,
        env: Vec<(String, String)>,
    ) -> Result<Resource<ServerProcess>, host::EffectError> {
        let request = crate::effects::SpawnRequest {
            program,
            args,
            cwd,
            env,
        };
        let result = match &self.effects {
            Some(effects) => effects.spawn_server(&request),
            None => Err(self.no_grants(
                "spawn",
                format!("server-process.spawn {:?}", request.program),
            )),
        };
        let process = self.record_for_guest(result)?;
        self.table.push(process).map_err(|err| {
            host::EffectError::Failed(format!(
                "server-process.spawn: the plugin holds too many handles ({err}); nothing is kept running"
            ))
        })
    }

    fn id(&mut self, this: Resource<ServerProcess>) -> u32 {
        self.table.get(&this).map_or(0, ServerProcess::id)
    }

    fn write_line(
        &mut self,
        this: Resource<ServerProcess>,
        line: String,
    ) -> Result<(), host::EffectError> {
        let result = match (self.effects.clone(), self.table.get_mut(&this)) {
            (_, Err(err)) => Err(EffectError::Invalid(format!(
                "write-line: the handle is not a live server process ({err})"
            ))),
            (Some(effects), Ok(process)) => effects.server_write_line(process, &line),
            (None, Ok(process)) => process.write_line(&line),
        };
        self.record_for_guest(result)
    }

    fn read_line(
        &mut self,
        this: Resource<ServerProcess>,
        timeout_ms: u32,
    ) -> Result<Option<String>, host::EffectError> {
        let timeout =
            Duration::from_millis(u64::from(timeout_ms)).min(crate::effects::MAX_READ_WAIT);
        // The wait is the program's time, not the plugin's: the deadline
        // is paused while it lasts; only a cancellation ends it early.
        let control = Arc::clone(&self.control);
        let stop = move || control.cancelled();
        let paused = Runtime::global().map(|runtime| runtime.pause_deadline(&self.control));
        let result = match self.table.get_mut(&this) {
            Ok(process) => process.read_line(timeout, &stop),
            Err(err) => Err(EffectError::Invalid(format!(
                "read-line: the handle is not a live server process ({err})"
            ))),
        };
        if let (Ok(runtime), Ok(remaining)) = (Runtime::global(), paused) {
            runtime.resume_deadline(&self.control, remaining);
        }
        self.record_for_guest(result)
    }

    fn ended(&mut self, this: Resource<ServerProcess>) -> Option<String> {
        self.table
            .get_mut(&this)
            .ok()
            .and_then(ServerProcess::ended)
    }

    fn stderr_tail(&mut self, this: Resource<ServerProcess>) -> String {
        self.table
            .get(&this)
            .map(ServerProcess::stderr_tail)
            .unwrap_or_default()
    }

    fn kill(&mut self, this: Resource<ServerProcess>) {
        if let Ok(process) = self.table.get_mut(&this) {
            process.kill();
        }
    }

    fn drop(&mut self, this: Resource<ServerProcess>) -> wasmtime::Result<()> {
        // Dropping the process kills its group.
        self.table.delete(this)?;
        Ok(())
    }
}

/// A listing as the guest receives it.
fn listing_to_wit(listing: crate::effects::DirListing) -> host::DirListing {
    host::DirListing {
        entries: listing
            .entries
            .into_iter()
            .map(|(name, kind)| host::DirEntry {
                name,
                kind: match kind {
                    EntryKind::File => host::EntryKind::File,
                    EntryKind::Dir => host::EntryKind::Dir,
                    EntryKind::Symlink => host::EntryKind::Symlink,
                    EntryKind::Other => host::EntryKind::Other,
                },
            })
            .collect(),
        truncated: listing.truncated,
    }
}

/// A process's output as the guest receives it.
fn process_to_wit(out: crate::effects::ProcessOutput) -> host::ProcessOutput {
    host::ProcessOutput {
        end: match out.end {
            ProcessEnd::Exited(code) => host::ProcessEnd::Exited(code),
            ProcessEnd::Signalled(signal) => host::ProcessEnd::Signalled(signal),
            ProcessEnd::TimedOut => host::ProcessEnd::TimedOut,
            ProcessEnd::Cancelled => host::ProcessEnd::Cancelled,
        },
        stdout: out.stdout,
        stdout_truncated: out.stdout_truncated,
        stderr: out.stderr,
        stderr_truncated: out.stderr_truncated,
    }
}

use bindings::provider::smith::plugin::host;

impl State {
    /// A denial for an instance created without effects (no grants).
    /// Whether a host effect of the current call should stop: the call
    /// was cancelled or reached its deadline (the epoch deadline fires
    /// only once control returns to the guest).
    fn stop_check(&self) -> impl Fn() -> bool + use<> {
        let control = Arc::clone(&self.control);
        move || {
            control.cancelled()
                || Runtime::global()
                    .is_ok_and(|runtime| control.verdict(runtime.now_ms()).is_some())
        }
    }

    fn no_grants(&self, capability: &'static str, request: String) -> EffectError {
        EffectError::Denied(Denial {
            plugin: self.plugin.clone(),
            capability,
            missing_grant: match capability {
                "process" | "session-read" | "ui" | "vcs" | "project-read" | "project-write"
                | "permissions" | "local-read" | "spawn" | "web" | "web-search" => {
                    capability.to_owned()
                }
                "secrets" => "secrets \"PROVIDER.SLOT\"".to_owned(),
                _ => format!("{capability} ..."),
            },
            request,
        })
    }

    /// Keeps a working-tree operation for the `vcs-operation` announcement
    /// (bounded like the log: a plugin looping on snapshots cannot grow it).
    fn note_vcs(&mut self, operation: String) {
        if self.vcs_operations.len() < LOG_LINES {
            self.vcs_operations.push(operation);
        }
    }

    /// Keeps the denial's diagnostic and converts the error for the guest.
    fn record_for_guest<T>(
        &mut self,
        result: Result<T, EffectError>,
    ) -> Result<T, host::EffectError> {
        result.map_err(|err| {
            let text = err.to_string();
            match err {
                EffectError::Denied(denial) => {
                    if self.denials.len() < LOG_LINES {
                        self.denials.push(denial);
                    }
                    host::EffectError::Denied(text)
                }
                EffectError::Invalid(_) => host::EffectError::Invalid(text),
                EffectError::Failed(_) | EffectError::Limited => host::EffectError::Failed(text),
            }
        })
    }
}

/// Turns a failed call into a [`PluginError`] naming the plugin, the phase
/// and the cause (deadline, abort grace, memory or trap).
pub(crate) fn call_error(
    state: &State,
    phase: Phase,
    limits: Limits,
    err: &wasmtime::Error,
) -> PluginError {
    let plugin = state.plugin.clone();
    match state.stop {
        Some(Stop::Deadline) => PluginError::new(
            plugin,
            phase,
            ErrorKind::Deadline,
            format!(
                "the plugin ran past its {} ms deadline and was destroyed; report it to the plugin's author, or raise its deadline if the work is legitimately long",
                limits.call_deadline.as_millis()
            ),
        ),
        Some(Stop::Flood(dropped)) => PluginError::new(
            plugin,
            phase,
            ErrorKind::Flood,
            format!(
                "the plugin went on writing log lines after {dropped} in one call had been dropped (a call keeps at most {LOG_LINES}, a run {}: `plugins.max-log-lines`), so the call was stopped and the plugin destroyed",
                limits.rate.log_lines
            ),
        ),
        Some(Stop::AbortGrace) => PluginError::new(
            plugin,
            phase,
            ErrorKind::AbortGrace,
            format!(
                "the plugin kept running {} ms after it was asked to stop and was destroyed; it should poll `cancelled`",
                limits.abort_grace.as_millis()
            ),
        ),
        None if state.limiter.hit => PluginError::new(
            plugin,
            phase,
            ErrorKind::Memory,
            format!(
                "the plugin reached its memory limit of {} MiB and was destroyed; {}",
                limits.memory_bytes >> 20,
                crate::diag::memory_advice(&state.plugin)
            ),
        ),
        None => {
            let captured = state.stderr.contents();
            let tail = stderr_summary(&String::from_utf8_lossy(&captured));
            let said = if tail.is_empty() {
                String::new()
            } else {
                format!(" (its stderr ends with: {tail})")
            };
            PluginError::new(
                plugin,
                phase,
                ErrorKind::Trap,
                format!(
                    "the plugin trapped and was destroyed: {err:#}{said}; reload it to start a fresh instance"
                ),
            )
        }
    }
}

/// What a trap's diagnostic quotes from the plugin's captured stderr: the
/// message of a Rust panic (the lines after `panicked at ...:`, without
/// std's trailing `note: run with RUST_BACKTRACE=1 ...` hint), otherwise the
/// last line that is not such a hint; at most 300 characters.
fn stderr_summary(text: &str) -> String {
    let is_hint = |line: &str| line.trim_start().starts_with("note: ");
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let quoted = match lines
        .iter()
        .rposition(|line| line.contains(" panicked at "))
    {
        Some(at) => lines[at + 1..]
            .iter()
            .copied()
            .take_while(|line| !is_hint(line))
            .filter(|line| !line.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        None => lines
            .iter()
            .rev()
            .copied()
            .find(|line| !line.trim().is_empty() && !is_hint(line))
            .unwrap_or("")
            .trim()
            .to_owned(),
    };
    quoted.chars().take(300).collect()
}

fn compatibility_key(engine: &Engine) -> String {
    use std::hash::Hash;
    let mut hasher = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let digest = hasher.0.finalize();
    hex(&digest[..16])
}

struct ShaHasher(Sha256);

impl std::hash::Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::stderr_summary;

    #[test]
    fn a_panic_is_quoted_by_its_message_not_the_backtrace_hint() {
        let stderr = "starting\nthread '<unnamed>' panicked at src/lib.rs:76:24:\nthe hostile plugin panics on purpose\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            stderr_summary(stderr),
            "the hostile plugin panics on purpose"
        );
        let multi = "thread 'main' panicked at a.rs:1:1:\nfirst\nsecond\n";
        assert_eq!(stderr_summary(multi), "first second");
    }

    #[test]
    fn other_output_is_quoted_by_its_last_line() {
        assert_eq!(
            stderr_summary("a\nmemory allocation of 1048576 bytes failed\n\n"),
            "memory allocation of 1048576 bytes failed"
        );
        assert_eq!(stderr_summary(""), "");
        assert_eq!(stderr_summary(&"x".repeat(1000)).len(), 300);
    }
}
