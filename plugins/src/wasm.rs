//! The bytes of a component to load ([`Wasm`]): a plugin's `.wasm` as read
//! from its folder, hashed when it is loaded, or a component the build
//! embedded in the binary ([`Embedded`]: the built-in plugins, the SDK
//! example, one test guest), whose sha256 the build computed and whose
//! bytes lie zstd-compressed in the binary, decompressed only when
//! something needs them (docs/plugins.md, "Embedded components").
//!
//! Loading a built-in needs only its digest: the digest finds its
//! precompiled artifact ([`crate::builtin::PRECOMPILED`]) and names its
//! cache file. Its bytes are needed only to compile it, when this machine
//! refuses the artifact, or to hand them on (a test writing a plugin
//! folder, `smith bench` installing the example).

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// Every component the build embedded, one after the other, compressed as
/// one zstd frame with the in-place artifacts
/// ([`crate::builtin::PRECOMPILED`]) as its prefix: the components repeat
/// each other (the Rust standard library, the SDK) and their data
/// segments lie in the artifacts too. Decompressed whole, at most once a
/// process, the first time any embedded component's bytes are needed.
pub struct ComponentFrame {
    prefix: &'static [u8],
    zstd: &'static [u8],
    len: usize,
    unpacked: OnceLock<Result<&'static [u8], String>>,
    unpacks: AtomicU64,
}

impl std::fmt::Debug for ComponentFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentFrame")
            .field("prefix_bytes", &self.prefix.len())
            .field("zstd_bytes", &self.zstd.len())
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl ComponentFrame {
    /// The `len` bytes that `zstd`, one zstd frame compressed with all of
    /// `prefix` as its prefix (none when empty), decompresses into.
    pub const fn new(prefix: &'static [u8], zstd: &'static [u8], len: usize) -> Self {
        Self {
            prefix,
            zstd,
            len,
            unpacked: OnceLock::new(),
            unpacks: AtomicU64::new(0),
        }
    }

    /// How many times this process decompressed the frame: 0 or 1.
    pub fn unpack_count(&self) -> u64 {
        self.unpacks.load(Ordering::Relaxed)
    }

    /// The frame decompressed (once a process; the bytes live as long as
    /// the process), or why it cannot be.
    fn bytes(&self) -> Result<&'static [u8], String> {
        self.unpacked
            .get_or_init(|| {
                self.unpacks.fetch_add(1, Ordering::Relaxed);
                let mut out = vec![0u8; self.len];
                let made = unpack(self.prefix, self.zstd, &mut out)?;
                if made != self.len {
                    return Err(format!(
                        "it holds {made} bytes where the build recorded {}",
                        self.len
                    ));
                }
                Ok(&*Vec::leak(out))
            })
            .clone()
    }
}

/// Decompresses the zstd frame `zstd` (compressed with `prefix` as its
/// prefix, when not empty) into `out`; how many bytes it made.
fn unpack(prefix: &[u8], zstd: &[u8], out: &mut [u8]) -> Result<usize, String> {
    let name = |code| zstd::zstd_safe::get_error_name(code).to_owned();
    let mut context = zstd::zstd_safe::DCtx::try_create()
        .ok_or_else(|| "zstd could not make a decompression context".to_owned())?;
    if !prefix.is_empty() {
        context.ref_prefix(prefix).map_err(name)?;
    }
    context.decompress(out, zstd).map_err(name)
}

thread_local! {
    static READS_HERE: Cell<u64> = const { Cell::new(0) };
    static HASHES_HERE: Cell<u64> = const { Cell::new(0) };
}

/// How many times the calling thread asked for an embedded component's
/// bytes ([`Embedded::bytes`]): exact even while other threads ask.
pub fn embedded_read_count_on_this_thread() -> u64 {
    READS_HERE.with(Cell::get)
}

/// How many times the calling thread hashed a component's bytes with
/// sha256 ([`Wasm::sha256`] of [`Wasm::Bytes`]; an embedded component's
/// digest is the build's and hashes nothing).
pub fn component_hash_count_on_this_thread() -> u64 {
    HASHES_HERE.with(Cell::get)
}

/// A component the build embedded: its file's stem, the sha256 of its
/// bytes (computed by plugins/build.rs) and where its bytes lie in the
/// [`ComponentFrame`] of all of them.
#[derive(Debug)]
pub struct Embedded {
    stem: &'static str,
    sha256: [u8; 32],
    frame: &'static ComponentFrame,
    offset: usize,
    len: usize,
}

impl PartialEq for Embedded {
    fn eq(&self, other: &Self) -> bool {
        self.stem == other.stem && self.sha256 == other.sha256
    }
}

impl Eq for Embedded {}

impl Embedded {
    /// The component `stem` (its file's name without `.wasm`), whose
    /// sha256 is `sha256`, the `len` bytes at `offset` in `frame`.
    pub const fn new(
        stem: &'static str,
        sha256: [u8; 32],
        frame: &'static ComponentFrame,
        offset: usize,
        len: usize,
    ) -> Self {
        Self {
            stem,
            sha256,
            frame,
            offset,
            len,
        }
    }

    /// The frame its bytes lie in, with every other embedded component's.
    pub fn frame(&self) -> &'static ComponentFrame {
        self.frame
    }

    /// The name of the file the build embedded, without `.wasm`
    /// (`smith_plugin_mock`).
    pub fn stem(&self) -> &'static str {
        self.stem
    }

    /// The sha256 of the component's bytes, as the build computed it.
    pub fn sha256(&self) -> [u8; 32] {
        self.sha256
    }

    /// The size of the component in bytes (uncompressed).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the component has no bytes (never, for one the build
    /// embedded).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The component's bytes: the first call in a process decompresses
    /// every embedded component (about 4 MB, a few milliseconds), later
    /// ones return the same bytes.
    ///
    /// # Errors
    ///
    /// When the embedded frame does not decompress into what the build
    /// recorded: the binary is damaged (the message says so and what to
    /// do).
    pub fn bytes(&self) -> Result<&'static [u8], String> {
        READS_HERE.with(|reads| reads.set(reads.get() + 1));
        let damaged = |why: String| {
            format!(
                "the component {}.wasm embedded in this smith binary cannot be unpacked: {why}; the binary is damaged: reinstall smith (`smith update`, or build it again)",
                self.stem
            )
        };
        let all = self.frame.bytes().map_err(damaged)?;
        self.offset
            .checked_add(self.len)
            .and_then(|end| all.get(self.offset..end))
            .ok_or_else(|| {
                damaged(format!(
                    "bytes {}..{} lie past the end of the {} unpacked",
                    self.offset,
                    self.offset.saturating_add(self.len),
                    all.len()
                ))
            })
    }
}

/// The bytes of a component to load: its sha256 keys its compiled form
/// (the cache file, the build's precompiled artifact), and its bytes are
/// what is compiled when there is none.
#[derive(Clone, Copy, Debug)]
pub enum Wasm<'a> {
    /// A component's bytes (a user or project plugin's `.wasm`, a test's):
    /// hashed whenever its digest is needed.
    Bytes(&'a [u8]),
    /// A component the build embedded: its digest is the build's, its
    /// bytes are decompressed only when needed.
    Embedded(&'static Embedded),
}

impl<'a> Wasm<'a> {
    /// The sha256 of the component's bytes: the build's for an embedded
    /// one, computed now for bytes.
    pub fn sha256(&self) -> [u8; 32] {
        match self {
            Wasm::Bytes(bytes) => {
                HASHES_HERE.with(|hashes| hashes.set(hashes.get() + 1));
                Sha256::digest(bytes).into()
            }
            Wasm::Embedded(embedded) => embedded.sha256(),
        }
    }

    /// The component's bytes (an embedded one's decompressed, see
    /// [`Embedded::bytes`]).
    ///
    /// # Errors
    ///
    /// As [`Embedded::bytes`]; never for [`Wasm::Bytes`].
    pub fn bytes(&self) -> Result<&'a [u8], String> {
        match self {
            Wasm::Bytes(bytes) => Ok(bytes),
            Wasm::Embedded(embedded) => embedded.bytes(),
        }
    }

    /// The component's size in bytes (uncompressed).
    pub fn len(&self) -> usize {
        match self {
            Wasm::Bytes(bytes) => bytes.len(),
            Wasm::Embedded(embedded) => embedded.len(),
        }
    }

    /// Whether the component has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the build embedded it.
    pub fn is_embedded(&self) -> bool {
        matches!(self, Wasm::Embedded(_))
    }
}

impl<'a> From<&'a [u8]> for Wasm<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Wasm::Bytes(bytes)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Wasm<'a> {
    fn from(bytes: &'a [u8; N]) -> Self {
        Wasm::Bytes(bytes)
    }
}

impl<'a> From<&'a Vec<u8>> for Wasm<'a> {
    fn from(bytes: &'a Vec<u8>) -> Self {
        Wasm::Bytes(bytes)
    }
}

impl<'a> From<&'a Cow<'_, [u8]>> for Wasm<'a> {
    fn from(bytes: &'a Cow<'_, [u8]>) -> Self {
        Wasm::Bytes(bytes)
    }
}

impl From<&'static Embedded> for Wasm<'_> {
    fn from(embedded: &'static Embedded) -> Self {
        Wasm::Embedded(embedded)
    }
}

impl<'a> From<&'a OwnedWasm> for Wasm<'a> {
    fn from(wasm: &'a OwnedWasm) -> Self {
        wasm.as_wasm()
    }
}

/// A [`Wasm`] that owns its bytes: a component read from a file, or one
/// the build embedded (which the binary holds). What a loader keeps to
/// load the component later (a search provider, loaded on first use).
#[derive(Clone, Debug)]
pub enum OwnedWasm {
    /// A component's bytes, read from its file.
    Bytes(Vec<u8>),
    /// A component the build embedded.
    Embedded(&'static Embedded),
}

impl OwnedWasm {
    /// The component, borrowed.
    pub fn as_wasm(&self) -> Wasm<'_> {
        match self {
            OwnedWasm::Bytes(bytes) => Wasm::Bytes(bytes),
            OwnedWasm::Embedded(embedded) => Wasm::Embedded(embedded),
        }
    }
}

impl From<Vec<u8>> for OwnedWasm {
    fn from(bytes: Vec<u8>) -> Self {
        OwnedWasm::Bytes(bytes)
    }
}

impl From<&'static Embedded> for OwnedWasm {
    fn from(embedded: &'static Embedded) -> Self {
        OwnedWasm::Embedded(embedded)
    }
}
