//! The session store: a directory of session files, their names, locks and
//! every operation on them.
//!
//! Layout of a store root:
//!
//! ```text
//! <root>/<id>.smith      one session file per session (id = 32 hex digits)
//! <root>/<id>.lock       the session's writer lock (fs4 exclusive lock)
//! <root>/<id>.owner      the runtime serving the session ([`Store::claim`]):
//!                         an exclusive lock held while it runs, and its
//!                         process id and start time
//! <root>/<id>.summary    what a listing shows ([`crate::Summary`]): project,
//!                         first prompt, message count, cost
//! <root>/names/<name>    a name, holding the id it refers to
//! <root>/store.lock      serialises name changes, creation and deletion
//! <root>/.tmp-*          publications in flight (or left by a crash)
//! ```
//!
//! A reference (`ref`) is a name or an id, or a unique prefix of at least
//! four hex digits of an id; never a path.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::compress::Compressor;
use crate::entry::{EntryKind, NO_FRAME, NONE, NewEntry, RECORD_COMPRESSED, Record};
use crate::error::{ErrorKind, Result, StoreError};
use crate::file::SessionFile;
use crate::format::{self, EntryHead, KIND_ENTRY, KIND_ORIGIN, SessionId};
use crate::publish::{self, Step, TEMP_PREFIX};
use crate::scan::{self, Limits, ScanReport};
use crate::session::{self, Origin, Session};

/// The file extension of session files.
pub const EXTENSION: &str = "smith";

/// Temporary publication files younger than this are left alone by prune,
/// because another process may be about to rename them.
pub const TEMP_GRACE_MS: u64 = 10 * 60 * 1000;

/// A store of sessions under one root directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    limits: Limits,
    crash_after: Option<Step>,
    compression: Option<crate::compress::Compression>,
}

/// A session as listed: metadata only, no content read.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Creation time (ms since the Unix epoch), from the header.
    pub created_ms: u64,
    /// Last modification time of the file (ms since the Unix epoch).
    pub modified_ms: u64,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The session's summary sidecar, when it has a readable one.
    pub summary: Option<crate::Summary>,
}

/// What to prune.
#[derive(Debug, Clone, Copy)]
pub struct PruneOptions {
    /// Remove sessions that hold no entries.
    pub empty: bool,
    /// Remove sessions not modified for this many milliseconds.
    pub older_than_ms: Option<u64>,
    /// Remove temporary publication files at least this old (default
    /// [`TEMP_GRACE_MS`]; younger ones may belong to a publication in flight).
    pub temp_grace_ms: u64,
}

impl Default for PruneOptions {
    fn default() -> Self {
        Self {
            empty: false,
            older_than_ms: None,
            temp_grace_ms: TEMP_GRACE_MS,
        }
    }
}

/// What pruning removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Sessions deleted.
    pub sessions: Vec<SessionId>,
    /// Stray temporary files removed (left by interrupted publications).
    pub temp_files: u64,
    /// Names removed because their session no longer exists.
    pub dangling_names: u64,
}

/// Holds an exclusive fs4 lock until dropped.
#[derive(Debug)]
pub struct LockGuard(std::fs::File);

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = fs4::FileExt::unlock(&self.0);
    }
}

fn lock(path: &Path) -> Result<LockGuard> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::io("open lock file", path, e))?;
    fs4::FileExt::lock(&f).map_err(|e| StoreError::io("lock", path, e))?;
    Ok(LockGuard(f))
}

/// A runtime's claim on a session ([`Store::claim`]), released when the
/// last holder in the process drops it.
#[derive(Debug)]
pub struct Claim(std::fs::File);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = self.0.set_len(0);
        let _ = self.0.unlock();
    }
}

/// The claims this process holds, by claim file.
fn claims() -> &'static std::sync::Mutex<std::collections::HashMap<PathBuf, std::sync::Weak<Claim>>>
{
    static CLAIMS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<PathBuf, std::sync::Weak<Claim>>>,
    > = std::sync::OnceLock::new();
    CLAIMS.get_or_init(Default::default)
}

/// The refusal of a claim another process holds; `owner` is what its
/// claim file says (`PID START_MS`).
fn busy(session: &str, owner: &str) -> StoreError {
    let holder = holder(owner);
    StoreError::new(
        ErrorKind::Locked,
        format!(
            "session {session} is in use by {holder}: two runtimes on one session would interleave their conversations on one branch, so a second one is refused; fork it to go on in a copy (`smith session fork {session}`, then open the fork), or end the other smith first"
        ),
    )
}

/// Who holds a claim, from its claim file's text (`PID START_MS`).
fn holder(owner: &str) -> String {
    let mut words = owner.split_whitespace();
    match (
        words.next().and_then(|p| p.parse::<u32>().ok()),
        words.next().and_then(|t| t.parse::<u64>().ok()),
    ) {
        (Some(pid), Some(since)) => {
            let ago = now_ms().saturating_sub(since) / 1000;
            format!("another smith (process {pid}, running on it for {ago} s)")
        }
        _ => "another smith".to_owned(),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn mtime_ms(m: &std::fs::Metadata) -> u64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// Checks a session name: 1 to 64 characters from `A-Z a-z 0-9 . _ -`, not
/// starting with `.` or `-`, and not 32 hex digits (which would read as an id).
///
/// # Errors
/// `Invalid`, naming the offending name and the rule.
pub fn validate_name(name: &str) -> Result<()> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    let bad = name.is_empty()
        || name.len() > 64
        || !ok_chars
        || name.starts_with('.')
        || name.starts_with('-')
        || SessionId::from_hex(name).is_some();
    if bad {
        return Err(StoreError::new(
            ErrorKind::Invalid,
            format!(
                "session name {name:?} is not allowed: names are 1 to 64 characters from A-Z a-z 0-9 . _ -, do not start with '.' or '-', and are not 32 hex digits; try something like \"fix-login-bug\""
            ),
        ));
    }
    Ok(())
}

/// A session name made from `text` (a first prompt): its first words,
/// lowercased, ASCII letters and digits joined with `-`, cut at a word
/// boundary to at most 40 characters (`"Fix the lexer's off-by-one!"` →
/// `fix-the-lexer-s-off-by-one`). `None` when no letter or digit is left, or
/// the result would read as a session id.
#[must_use]
pub fn name_from_text(text: &str) -> Option<String> {
    const MAX: usize = 40;
    let mut name = String::new();
    let words = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty());
    for word in words {
        let word = word.to_ascii_lowercase();
        let extra = usize::from(!name.is_empty()) + word.len();
        if name.len() + extra > MAX {
            if name.is_empty() {
                name.push_str(&word[..MAX]);
            }
            break;
        }
        if !name.is_empty() {
            name.push('-');
        }
        name.push_str(&word);
    }
    (!name.is_empty() && validate_name(&name).is_ok()).then_some(name)
}

impl Store {
    /// Opens (creating if needed) the store rooted at `root`.
    ///
    /// # Errors
    /// `Io` when the directories cannot be created.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let names = root.join("names");
        std::fs::create_dir_all(&names)
            .map_err(|e| StoreError::io("create session store directory", &names, e))?;
        Ok(Self {
            root,
            limits: Limits::default(),
            crash_after: None,
            compression: None,
        })
    }

    /// How this store's appends compress entries: the setting given to
    /// [`Store::set_compression`], else the process's
    /// ([`crate::compress::process_compression`]).
    pub fn compression(&self) -> crate::compress::Compression {
        self.compression
            .unwrap_or_else(crate::compress::process_compression)
    }

    /// Makes this store's appends compress with `c` whatever the process's
    /// setting.
    pub fn set_compression(&mut self, c: crate::compress::Compression) {
        self.compression = Some(c);
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The limits used when reading sessions.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Replaces the reading limits.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Test hook: make every publication stop dead after `step`, as a crash would.
    pub fn set_crash_after(&mut self, step: Option<Step>) {
        self.crash_after = step;
    }

    /// The path of session `id`'s file.
    pub fn path_of(&self, id: SessionId) -> PathBuf {
        self.root.join(format!("{id}.{EXTENSION}"))
    }

    fn lock_path(&self, id: SessionId) -> PathBuf {
        self.root.join(format!("{id}.lock"))
    }

    fn owner_path(&self, id: SessionId) -> PathBuf {
        self.root.join(format!("{id}.owner"))
    }

    fn summary_path(&self, id: SessionId) -> PathBuf {
        self.root.join(format!("{id}.summary"))
    }

    /// Session `id`'s summary sidecar, when it has a readable one.
    pub fn summary(&self, id: SessionId) -> Option<crate::Summary> {
        crate::summary::read(&self.summary_path(id))
    }

    /// Replaces session `id`'s summary sidecar (a temporary file renamed
    /// over it, so a reader sees the old or the new one whole). Not
    /// flushed: the sidecar is a cache of the session's entries.
    ///
    /// # Errors
    /// `Io` when the sidecar cannot be written.
    pub fn write_summary(&self, id: SessionId, summary: &crate::Summary) -> Result<()> {
        let path = self.summary_path(id);
        let tmp = self
            .root
            .join(format!("{TEMP_PREFIX}{id}.summary.{}", std::process::id()));
        std::fs::write(&tmp, summary.to_json())
            .map_err(|e| StoreError::io("write the session's summary", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            StoreError::io("replace the session's summary", &path, e)
        })
    }

    /// Claims session `id` for the runtime that serves it: at most one
    /// process at a time holds a session's claim, so two runtimes never
    /// interleave their conversations on one branch. The claim is an
    /// exclusive lock on `<id>.owner` (released by the kernel when the
    /// process ends, however it ends), which also says which process holds
    /// it. Claims in one process are shared: a process may open its own
    /// session again (the interface switching back to it).
    ///
    /// # Errors
    /// `Locked` when another process holds the claim (its process id and
    /// start time named); `Io` when the claim file cannot be opened.
    pub fn claim(&self, id: SessionId) -> Result<std::sync::Arc<Claim>> {
        let path = self.owner_path(id);
        let mut held = claims()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        held.retain(|_, claim| claim.strong_count() > 0);
        if let Some(claim) = held.get(&path).and_then(std::sync::Weak::upgrade) {
            return Ok(claim);
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io("open the session's claim file", &path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut owner = String::new();
                let _ = std::io::Read::read_to_string(&mut file, &mut owner);
                let shown = self.name_of(id).unwrap_or_else(|| id.to_hex());
                return Err(busy(&shown, &owner));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(StoreError::io("lock the session's claim file", &path, e));
            }
        }
        // Who holds it, for the next one refused.
        let owner = format!("{} {}\n", std::process::id(), now_ms());
        let written = file
            .set_len(0)
            .and_then(|()| std::io::Write::write_all(&mut &file, owner.as_bytes()));
        written.map_err(|e| StoreError::io("write the session's claim file", &path, e))?;
        let claim = std::sync::Arc::new(Claim(file));
        held.insert(path, std::sync::Arc::downgrade(&claim));
        Ok(claim)
    }

    fn name_path(&self, name: &str) -> PathBuf {
        self.root.join("names").join(name)
    }

    /// Takes session `id`'s writer lock, waiting for other writers.
    ///
    /// # Errors
    /// `Io` when the lock file cannot be opened or locked.
    pub fn lock_session(&self, id: SessionId) -> Result<LockGuard> {
        lock(&self.lock_path(id))
    }

    fn lock_store(&self) -> Result<LockGuard> {
        lock(&self.root.join("store.lock"))
    }

    /// Resolves a reference (a name, an id or a unique id prefix).
    ///
    /// # Errors
    /// `Invalid` for a path-like reference, `NotFound`, or `Ambiguous`.
    pub fn resolve(&self, r: &str) -> Result<SessionId> {
        if r.is_empty() || r.contains(['/', '\\']) || r.starts_with('.') {
            return Err(StoreError::new(
                ErrorKind::Invalid,
                format!(
                    "{r:?} is not a session reference: a reference is a session name or id (or a unique id prefix), never a path; run `smith session list` to see them"
                ),
            ));
        }
        if let Ok(text) = std::fs::read_to_string(self.name_path(r))
            && let Some(id) = SessionId::from_hex(text.trim())
        {
            return Ok(id);
        }
        let lower = r.to_ascii_lowercase();
        if lower.len() >= 4 && lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut found = Vec::new();
            for id in self.ids()? {
                if id.to_hex().starts_with(&lower) {
                    found.push(id);
                }
            }
            match found.len() {
                1 => return Ok(found[0]),
                0 => {}
                n => {
                    return Err(StoreError::new(
                        ErrorKind::Ambiguous,
                        format!(
                            "session id prefix {r:?} matches {n} sessions; type more digits of the id (see `smith session list`)"
                        ),
                    ));
                }
            }
        }
        Err(StoreError::new(
            ErrorKind::NotFound,
            format!(
                "no session is named {r:?} or has an id starting with it in {}; run `smith session list` to see the sessions",
                self.root.display()
            ),
        ))
    }

    fn ids(&self) -> Result<Vec<SessionId>> {
        let mut out = Vec::new();
        let rd = std::fs::read_dir(&self.root)
            .map_err(|e| StoreError::io("read session store directory", &self.root, e))?;
        for ent in rd.flatten() {
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(stem) = name.strip_suffix(".smith")
                && let Some(id) = SessionId::from_hex(stem)
            {
                out.push(id);
            }
        }
        out.sort();
        Ok(out)
    }

    fn names(&self) -> HashMap<SessionId, String> {
        let mut out = HashMap::new();
        if let Ok(rd) = std::fs::read_dir(self.root.join("names")) {
            for ent in rd.flatten() {
                let (Some(name), Ok(text)) = (
                    ent.file_name().to_str().map(str::to_owned),
                    std::fs::read_to_string(ent.path()),
                ) else {
                    continue;
                };
                if name.starts_with('.') {
                    continue;
                }
                if let Some(id) = SessionId::from_hex(text.trim()) {
                    out.insert(id, name);
                }
            }
        }
        out
    }

    /// The name of session `id`, if any.
    pub fn name_of(&self, id: SessionId) -> Option<String> {
        self.names().remove(&id)
    }

    /// Lists every session from headers and file metadata only, newest
    /// modification first.
    ///
    /// # Errors
    /// `Io` when the store directory cannot be read.
    pub fn list(&self) -> Result<Vec<SessionInfo>> {
        let names = self.names();
        let mut out = Vec::new();
        for id in self.ids()? {
            let path = self.path_of(id);
            let Ok(mut f) = std::fs::File::open(&path) else {
                continue;
            };
            let mut h = [0u8; format::HEADER_LEN];
            let Ok(meta) = f.metadata() else { continue };
            if std::io::Read::read_exact(&mut f, &mut h).is_err() {
                continue;
            }
            let Ok(header) = format::decode_header(&h, &path.display().to_string()) else {
                continue;
            };
            out.push(SessionInfo {
                id,
                name: names.get(&id).cloned(),
                created_ms: header.created_ms,
                modified_ms: mtime_ms(&meta),
                bytes: meta.len(),
                summary: crate::summary::read(&self.summary_path(id)),
            });
        }
        out.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(b.id.cmp(&a.id)));
        Ok(out)
    }

    /// The most recently modified session ("continue latest").
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn latest(&self) -> Result<Option<SessionInfo>> {
        Ok(self.list()?.into_iter().next())
    }

    /// Creates and publishes an empty session, optionally named.
    ///
    /// # Errors
    /// `AlreadyExists` for a taken name, `Invalid` for a bad one, `Io`.
    pub fn create(&self, name: Option<&str>) -> Result<Session> {
        self.create_with(SessionId::generate(), now_ms(), name)
    }

    /// Creates a session with a given id and creation time.
    ///
    /// # Errors
    /// As [`Store::create`]; `AlreadyExists` when the id is taken.
    pub fn create_with(
        &self,
        id: SessionId,
        created_ms: u64,
        name: Option<&str>,
    ) -> Result<Session> {
        let mut s = Session::in_memory(id, created_ms);
        let mut bytes = Vec::new();
        s.encode_file(&mut bytes)?;
        self.publish_new(&mut s, &bytes, name)?;
        Ok(s)
    }

    /// Creates and publishes an empty session named `base`, or `base-2`,
    /// `base-3`… when that name is taken (the first free one, chosen under
    /// the store's lock): for names made from a prompt
    /// ([`name_from_text`]). Returns the session and the name it got.
    ///
    /// # Errors
    /// `Invalid` for a bad `base`, `AlreadyExists` when `base` and its
    /// first 9,999 numbered variants are all taken, `Io`.
    pub fn create_titled(&self, base: &str) -> Result<(Session, String)> {
        validate_name(base)?;
        let mut s = Session::in_memory(SessionId::generate(), now_ms());
        let mut bytes = Vec::new();
        s.encode_file(&mut bytes)?;
        let _g = self.lock_store()?;
        let name = self.free_titled_name(base)?;
        self.publish_locked(&mut s, &bytes, Some(&name))?;
        Ok((s, name))
    }

    /// Renames session `r` after a prompt: to `base`, or the first free of
    /// `base-2`, `base-3`… (chosen under the store's lock, as in
    /// [`Store::create_titled`]). Returns the name it got.
    ///
    /// # Errors
    /// As [`Store::rename`] and [`Store::create_titled`].
    pub fn rename_titled(&self, r: &str, base: &str) -> Result<String> {
        validate_name(base)?;
        let id = self.resolve(r)?;
        let _g = self.lock_store()?;
        let old = self.name_of(id);
        let name = self.free_titled_name(base)?;
        self.write_name(&name, id)?;
        if let Some(o) = old {
            let p = self.name_path(&o);
            std::fs::remove_file(&p).map_err(|e| StoreError::io("remove old name", &p, e))?;
        }
        Ok(name)
    }

    /// The first of `base`, `base-2`, `base-3`… no session holds; the
    /// caller holds the store's lock.
    fn free_titled_name(&self, base: &str) -> Result<String> {
        (1..10_000u32)
            .map(|n| {
                if n == 1 {
                    base.to_owned()
                } else {
                    // Cut so that the suffix fits the 64-character limit.
                    let suffix = format!("-{n}");
                    let keep = base.len().min(64 - suffix.len());
                    format!("{}{suffix}", base[..keep].trim_end_matches('-'))
                }
            })
            .find(|candidate| !self.name_path(candidate).exists())
            .ok_or_else(|| {
                StoreError::new(
                    ErrorKind::AlreadyExists,
                    format!(
                        "the session name {base:?} and its numbered variants up to {base}-9999 are all taken; name the session yourself (--name) or delete old sessions with `smith session prune`"
                    ),
                )
            })
    }

    fn publish_new(&self, s: &mut Session, bytes: &[u8], name: Option<&str>) -> Result<()> {
        if let Some(n) = name {
            validate_name(n)?;
        }
        let _g = self.lock_store()?;
        self.publish_locked(s, bytes, name)
    }

    /// [`Store::publish_new`] with the store's lock held by the caller.
    fn publish_locked(&self, s: &mut Session, bytes: &[u8], name: Option<&str>) -> Result<()> {
        let path = self.path_of(s.id());
        if path.exists() {
            return Err(StoreError::new(
                ErrorKind::AlreadyExists,
                format!(
                    "a session with id {} already exists at {}; delete it first or import under another store root",
                    s.id(),
                    path.display()
                ),
            ));
        }
        if let Some(n) = name {
            self.check_name_free(n)?;
        }
        publish::publish(&path, bytes, self.crash_after)?;
        s.known_len = bytes.len() as u64;
        s.path = Some(path);
        if let Some(n) = name {
            self.write_name(n, s.id())?;
        }
        Ok(())
    }

    fn check_name_free(&self, name: &str) -> Result<()> {
        if self.name_path(name).exists() {
            return Err(StoreError::new(
                ErrorKind::AlreadyExists,
                format!(
                    "the session name {name:?} is already taken; choose another name or rename that session first"
                ),
            ));
        }
        Ok(())
    }

    fn write_name(&self, name: &str, id: SessionId) -> Result<()> {
        let dir = self.root.join("names");
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let mut f =
            std::fs::File::create(&tmp).map_err(|e| StoreError::io("create name file", &tmp, e))?;
        writeln!(f, "{id}").map_err(|e| StoreError::io("write name file", &tmp, e))?;
        f.sync_all()
            .map_err(|e| StoreError::io("flush name file", &tmp, e))?;
        drop(f);
        // A hard link fails if the name exists, so a name can never be taken twice.
        let r = std::fs::hard_link(&tmp, self.name_path(name));
        let _ = std::fs::remove_file(&tmp);
        match r {
            Ok(()) => publish::sync_dir(&dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.check_name_free(name),
            Err(e) => Err(StoreError::io("create name", &self.name_path(name), e)),
        }
    }

    /// Names or renames the session `r` to `new_name` (names are unique).
    ///
    /// # Errors
    /// `AlreadyExists`, `Invalid`, `NotFound`, `Io`.
    pub fn rename(&self, r: &str, new_name: &str) -> Result<SessionId> {
        validate_name(new_name)?;
        let id = self.resolve(r)?;
        let _g = self.lock_store()?;
        let old = self.name_of(id);
        if old.as_deref() == Some(new_name) {
            return Ok(id);
        }
        self.check_name_free(new_name)?;
        self.write_name(new_name, id)?;
        if let Some(o) = old {
            let p = self.name_path(&o);
            std::fs::remove_file(&p).map_err(|e| StoreError::io("remove old name", &p, e))?;
        }
        Ok(id)
    }

    /// Maps session `r`'s file.
    ///
    /// # Errors
    /// Resolution errors and [`SessionFile::open`]'s.
    pub fn open_file(&self, r: &str) -> Result<SessionFile> {
        let id = self.resolve(r)?;
        SessionFile::open(&self.path_of(id))
    }

    /// Loads session `r` fully.
    ///
    /// # Errors
    /// Resolution and loading errors.
    pub fn load(&self, r: &str) -> Result<Session> {
        self.open_file(r)?.load(&self.limits)
    }

    /// Appends entries to a loaded session, durably: under the session lock,
    /// after taking in anything other writers appended since, as one write
    /// followed by a data flush. Returns the new entries' ids.
    ///
    /// The new entries are then read from the file itself, as a load would
    /// read them: when the session's arena maps that very file (or nothing
    /// yet), the file is mapped again at its new length, so the appended
    /// bytes live once, in the page cache the write filled, and nothing is
    /// copied or first touched in private memory. Otherwise (a fork's arena
    /// maps its origin, or bytes are owned) the stored payloads are copied
    /// into the session's owned buffer.
    ///
    /// # Errors
    /// `Invalid` for an unknown parent or non-canonical content, `Io`.
    pub fn append(&self, s: &mut Session, entries: &[NewEntry<'_>]) -> Result<Vec<u64>> {
        let path = self.path_of(s.id());
        let _g = self.lock_session(s.id())?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| StoreError::io("open session file for appending", &path, e))?;
        let meta = file
            .metadata()
            .map_err(|e| StoreError::io("inspect session file", &path, e))?;
        if meta.len() != s.known_len {
            self.catch_up(s, &path, &file, meta.len())?;
        }
        let base = s.known_len;
        let rec_mark = s.records.len();
        let (entries_mark, max_mark) = (s.report.entries, s.max_id);
        // The frame buffer, entry-map scratch and compressor of the last
        // append: the batch is assembled in memory already held.
        let mut writer = std::mem::take(&mut s.writer);
        let content: usize = entries.iter().map(|e| e.content.len()).sum();
        writer.buf.clear();
        writer
            .buf
            .reserve(content + entries.len() * (format::ENTRY_HEAD_MAX + format::MIN_FRAME));
        s.records.reserve(entries.len());
        let mut ids = Vec::with_capacity(entries.len());
        let mut leaf = s.leaf().map_or(0, |l| l.id);
        let result = (|| -> Result<()> {
            let want = self.compression();
            let comp = match &mut writer.comp {
                Some(c) if c.is(want) => c,
                _ => writer.comp.insert(Compressor::with(want)?),
            };
            let (buf, map) = (&mut writer.buf, &mut writer.map);
            for e in entries {
                check_content(e.content)?;
                let head = EntryHead {
                    id: s.max_id + 1,
                    parent: e.parent.unwrap_or(leaf),
                    timestamp_ms: e.timestamp_ms.unwrap_or_else(now_ms),
                    kind: e.kind.code(),
                    pairing: e.pairing,
                };
                let parent_index = s.new_entry_parent(&head)?;
                let at = buf.len();
                let offset = base + at as u64;
                let link = if parent_index == NONE {
                    0
                } else {
                    let p = s.records[parent_index as usize].frame_offset;
                    if p == NO_FRAME { 0 } else { offset - p }
                };
                map.clear();
                format::encode_entry(map, &head, e.content);
                let head_len = map.len() - e.content.len();
                comp.frame(buf, KIND_ENTRY, link, map);
                let compressed = buf[at + 5] == format::FLAG_ZSTD_CONTENT;
                let stored = buf.len() - at - format::MIN_FRAME;
                // The payload's place in the file; `place_appended` moves it
                // to the owned buffer when the file is not mapped.
                s.push_record(Record {
                    id: head.id,
                    parent: head.parent,
                    timestamp_ms: head.timestamp_ms,
                    pairing: head.pairing,
                    frame_offset: offset,
                    payload_offset: offset + (format::FRAME_PREFIX + head_len) as u64,
                    payload_len: (stored - head_len) as u32,
                    kind: head.kind,
                    parent_index,
                    head_len: head_len as u16,
                    flags: if compressed { RECORD_COMPRESSED } else { 0 },
                });
                ids.push(head.id);
                leaf = head.id;
            }
            file.write_all(buf)
                .map_err(|e| StoreError::io("append to session file", &path, e))?;
            file.sync_data()
                .map_err(|e| StoreError::io("flush session file", &path, e))?;
            Ok(())
        })();
        if let Err(e) = result {
            s.records.truncate(rec_mark);
            s.report.entries = entries_mark;
            s.max_id = max_mark;
            writer.trim();
            s.writer = writer;
            return Err(e);
        }
        place_appended(s, &file, &meta, rec_mark, base, &writer.buf);
        s.known_len = base + writer.buf.len() as u64;
        s.report.file_len = s.known_len;
        s.extend_branch(rec_mark);
        writer.trim();
        s.writer = writer;
        Ok(ids)
    }

    /// Takes in frames other writers appended; discards a torn tail (an
    /// incomplete final frame, never a complete one) left by a crashed writer.
    fn catch_up(&self, s: &mut Session, path: &Path, file: &std::fs::File, len: u64) -> Result<()> {
        let what = path.display().to_string();
        if len < s.known_len {
            return Err(StoreError::new(
                ErrorKind::Invalid,
                format!(
                    "{what} is shorter ({len} bytes) than when it was loaded ({} bytes): it was repaired or replaced meanwhile; load the session again",
                    s.known_len
                ),
            ));
        }
        // SAFETY: see `SessionFile::open`; we hold the session lock, so no
        // writer changes the file while it is mapped here.
        let map = unsafe { memmap2::Mmap::map(file) }
            .map_err(|e| StoreError::io("map session file", path, e))?;
        let start = if s.known_len == 0 {
            format::decode_header(&map, &what)?.header_len as usize
        } else {
            s.known_len as usize
        };
        let mut dctx = None;
        let mut origin = s.origin;
        let mut layout = format::HeadLayout::default();
        // The new frames are read from a temporary mapping, so their
        // payloads are copied into the session's owned buffer.
        let base_len = s.payload.base_len();
        let (records, owned, report) = (&mut s.records, s.payload.owned_mut(), &mut s.report);
        let mut sink = session::Sink {
            owned,
            base_len,
            in_place: false,
            layout: &mut layout,
        };
        let r = scan::scan(&map, start, &self.limits, &what, |v| {
            session::ingest(records, &mut sink, report, &mut origin, &mut dctx, &v);
            Ok(())
        })?;
        s.origin = origin;
        add_scan(&mut s.report.scan, &r);
        s.max_id = s.records.iter().map(|x| x.id).max().unwrap_or(0);
        if r.torn_tail_at.is_some() {
            file.set_len(r.valid_end)
                .map_err(|e| StoreError::io("discard the torn tail of", path, e))?;
            file.sync_all()
                .map_err(|e| StoreError::io("flush session file", path, e))?;
        }
        s.known_len = r.valid_end;
        s.rebuild_branch();
        if s.from_leaf && !s.linear {
            // Opened at its leaf, the session holds only the newest part of
            // its branch; entries that do not continue it cannot be placed.
            return Err(StoreError::new(
                ErrorKind::Invalid,
                format!(
                    "{what}: another writer appended entries that do not continue the selected leaf this session was opened at, so the opened part cannot take them; load the session again (its whole record table) and retry"
                ),
            ));
        }
        Ok(())
    }

    /// Selects `target` as the leaf by appending a leaf-switch entry under it,
    /// stamped `timestamp_ms` (now when `None`). Its content is the
    /// previously selected leaf's id.
    ///
    /// # Errors
    /// `Invalid` when `target` is not an entry of the session, `Io`.
    pub fn select_leaf(
        &self,
        s: &mut Session,
        target: u64,
        timestamp_ms: Option<u64>,
    ) -> Result<u64> {
        if s.find(target).is_none() {
            return Err(StoreError::new(
                ErrorKind::Invalid,
                format!(
                    "entry {target} is not part of session {}; pick an entry id shown by `smith session info`",
                    s.id()
                ),
            ));
        }
        let mut content = Vec::new();
        format::cbor_head(&mut content, 0, s.leaf().map_or(0, |l| l.id));
        let e = NewEntry {
            kind: EntryKind::LeafSwitch,
            parent: Some(target),
            timestamp_ms,
            pairing: 0,
            content: &content,
        };
        Ok(self.append(s, &[e])?[0])
    }

    /// Forks a loaded session's selected branch into a new published session
    /// that records its origin.
    ///
    /// # Errors
    /// Naming and publication errors.
    pub fn fork(&self, s: &Session, name: Option<&str>) -> Result<Session> {
        let mut f = s.fork(SessionId::generate(), now_ms());
        let mut bytes = Vec::new();
        let offsets = f.encode_file(&mut bytes)?;
        // The fork's branch is its whole record table (one line), so the
        // offsets reach the branch too.
        for (r, o) in f.records.iter_mut().zip(&offsets) {
            r.frame_offset = *o;
        }
        self.publish_new(&mut f, &bytes, name)?;
        f.report.file_len = bytes.len() as u64;
        Ok(f)
    }

    /// Clones session `r` whole (every complete frame, unknown ones byte for
    /// byte) into a new published session recording its origin.
    ///
    /// # Errors
    /// Resolution, reading, naming and publication errors.
    pub fn clone_session(&self, r: &str, name: Option<&str>) -> Result<Session> {
        let src = self.open_file(r)?;
        let leaf = src.load(&self.limits)?.leaf().map_or(0, |l| l.id);
        let origin = Origin {
            session: src.header().id,
            leaf,
        };
        let (bytes, _) = rewrite(
            src.bytes(),
            &self.limits,
            &src.path().display().to_string(),
            SessionId::generate(),
            now_ms(),
            Some(origin),
        )?;
        let mut s = Session::load_bytes(&bytes, &self.limits, "cloned session")?;
        self.publish_new(&mut s, &bytes, name)?;
        Ok(s)
    }

    /// Repairs session `r`: rewrites every complete frame (unknown frames
    /// byte for byte), dropping corrupt frames and a torn tail, and publishes
    /// the result atomically over the old file. With `resync`, framing
    /// ambiguities are skipped over to the next complete frame.
    ///
    /// # Errors
    /// Resolution, reading and publication errors.
    pub fn repair(&self, r: &str, resync: bool) -> Result<ScanReport> {
        let id = self.resolve(r)?;
        let _g = self.lock_session(id)?;
        let src = SessionFile::open(&self.path_of(id))?;
        let h = *src.header();
        let mut limits = self.limits;
        limits.resync = resync;
        limits.max_corrupt_frames = if resync {
            u64::MAX
        } else {
            limits.max_corrupt_frames
        };
        let (bytes, report) = rewrite(
            src.bytes(),
            &limits,
            &src.path().display().to_string(),
            h.id,
            h.created_ms,
            None,
        )?;
        drop(src);
        publish::publish(&self.path_of(id), &bytes, self.crash_after)?;
        Ok(report)
    }

    /// Packs session `r`: rewrites every entry with compression `c`
    /// (decompressing what is stored compressed and compressing it again),
    /// other frames byte for byte, and publishes the result atomically over
    /// the old file (a temporary file, flushed, renamed). The session is
    /// claimed first, so a runtime serving it in another process refuses
    /// the pack, and no runtime starts on it meanwhile; its lock is held
    /// too, so no append lands between the read and the rename.
    ///
    /// # Errors
    /// Resolution errors; `Locked` while another process serves the
    /// session; `TooManyCorruptFrames` when the file holds a damaged frame
    /// (the pack would drop it: `smith session repair` decides that); read,
    /// compression and publication errors.
    pub fn pack(&self, r: &str, c: crate::compress::Compression) -> Result<Packed> {
        let id = self.resolve(r)?;
        let shown = self.name_of(id).unwrap_or_else(|| id.to_hex());
        let _claim = self.claim(id).map_err(|e| {
            if e.kind() != ErrorKind::Locked {
                return e;
            }
            let owner = std::fs::read_to_string(self.owner_path(id)).unwrap_or_default();
            StoreError::new(
                ErrorKind::Locked,
                format!(
                    "session {shown} is in use by {}: packing replaces the file that smith appends to, so it is refused while the session is open for writing; end the other smith first, then run `smith session pack {shown}` again",
                    holder(&owner)
                ),
            )
        })?;
        let _g = self.lock_session(id)?;
        let path = self.path_of(id);
        let src = SessionFile::open(&path)?;
        let h = *src.header();
        let before = src.bytes().len() as u64;
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let mut comp = Compressor::with(c)?;
        let (bytes, report, counts) = repack(
            src.bytes(),
            &self.limits,
            &path.display().to_string(),
            h.id,
            h.created_ms,
            &mut comp,
        )?;
        if report.corrupt_skipped > 0 {
            return Err(StoreError::new(
                ErrorKind::TooManyCorruptFrames,
                format!(
                    "session {shown} ({}) holds {} damaged frame(s) ({} bytes): packing would drop them without a word, so it is refused; run `smith session repair {shown}` first, which reports what it drops, then pack",
                    path.display(),
                    report.corrupt_skipped,
                    report.corrupt_bytes
                ),
            ));
        }
        drop(src);
        publish::publish(&path, &bytes, self.crash_after)?;
        // The conversation did not change: the file keeps its modification
        // time, so listings keep their order and `--continue` does not take
        // a packed old session for the latest. Best effort: a file system
        // that refuses leaves the time of the pack, which is all it costs.
        if let Some(t) = modified {
            let _ = std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(t));
        }
        Ok(Packed {
            id,
            before,
            after: bytes.len() as u64,
            entries: counts.0,
            compressed: counts.1,
            torn_tail_bytes: report.torn_tail_bytes,
        })
    }

    /// Publishes already-encoded session bytes as a new session (used by import).
    ///
    /// # Errors
    /// `AlreadyExists` when the id is taken, naming and publication errors.
    pub fn publish_bytes(&self, bytes: &[u8], name: Option<&str>) -> Result<Session> {
        let mut s = Session::load_bytes(bytes, &self.limits, "imported session")?;
        self.publish_new(&mut s, bytes, name)?;
        Ok(s)
    }

    /// Deletes session `r`: its file, lock and name.
    ///
    /// # Errors
    /// Resolution errors, `Io`.
    pub fn delete(&self, r: &str) -> Result<SessionId> {
        let id = self.resolve(r)?;
        self.delete_id(id)?;
        Ok(id)
    }

    fn delete_id(&self, id: SessionId) -> Result<()> {
        // A session another smith serves is not deleted under it.
        let _claim = self.claim(id)?;
        let _s = self.lock_store()?;
        {
            let _g = self.lock_session(id)?;
            let path = self.path_of(id);
            std::fs::remove_file(&path)
                .map_err(|e| StoreError::io("delete session file", &path, e))?;
        }
        if let Some(n) = self.name_of(id) {
            let _ = std::fs::remove_file(self.name_path(&n));
        }
        let _ = std::fs::remove_file(self.lock_path(id));
        let _ = std::fs::remove_file(self.owner_path(id));
        let _ = std::fs::remove_file(self.summary_path(id));
        publish::sync_dir(&self.root)
    }

    /// Deletes the session `id` when it holds nothing of a conversation:
    /// no entry at all, or only model changes (the model a frontend chose
    /// as it opened), as a session opened and left without a prompt or a
    /// call is. A session with any other entry is kept. Returns whether it
    /// was deleted. Another process's session is never touched: its claim
    /// is refused and the result is `Ok(false)`.
    ///
    /// # Errors
    /// `Io` when the file cannot be read or removed; `Corrupt` when it
    /// cannot be loaded (it is kept then).
    pub fn discard_if_empty(&self, id: SessionId) -> Result<bool> {
        /// A file longer than this holds more than a few model changes.
        const SMALL: u64 = 64 << 10;
        let Ok(_claim) = self.claim(id) else {
            return Ok(false);
        };
        let path = self.path_of(id);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() <= SMALL => {}
            _ => return Ok(false),
        }
        let session = self.load(&id.to_hex())?;
        let empty = session
            .records()
            .iter()
            .all(|r| r.entry_kind() == EntryKind::ModelChange);
        drop(session);
        if !empty {
            return Ok(false);
        }
        self.delete_id(id)?;
        Ok(true)
    }

    /// Prunes: empty or old sessions as asked, plus stray temporary files
    /// older than [`TEMP_GRACE_MS`] and names of vanished sessions.
    ///
    /// # Errors
    /// `Io` when the store cannot be read or a file cannot be removed.
    pub fn prune(&self, opts: PruneOptions) -> Result<PruneReport> {
        let mut rep = PruneReport::default();
        let now = now_ms();
        let rd = std::fs::read_dir(&self.root)
            .map_err(|e| StoreError::io("read session store directory", &self.root, e))?;
        for ent in rd.flatten() {
            let name = ent.file_name();
            if name.to_str().is_some_and(|n| n.starts_with(TEMP_PREFIX)) {
                let old = ent
                    .metadata()
                    .map(|m| now.saturating_sub(mtime_ms(&m)) >= opts.temp_grace_ms)
                    .unwrap_or(false);
                if old && std::fs::remove_file(ent.path()).is_ok() {
                    rep.temp_files += 1;
                }
            }
        }
        for info in self.list()? {
            let old = opts
                .older_than_ms
                .is_some_and(|ms| now.saturating_sub(info.modified_ms) >= ms);
            let empty = opts.empty && self.entry_count(info.id)? == 0;
            if old || empty {
                match self.delete_id(info.id) {
                    Ok(()) => rep.sessions.push(info.id),
                    // In use by another smith: kept.
                    Err(e) if e.kind() == ErrorKind::Locked => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let ids = self.ids()?;
        if let Ok(rd) = std::fs::read_dir(self.root.join("names")) {
            for ent in rd.flatten() {
                let dangling = std::fs::read_to_string(ent.path())
                    .ok()
                    .and_then(|t| SessionId::from_hex(t.trim()))
                    .is_none_or(|id| !ids.contains(&id));
                if dangling && std::fs::remove_file(ent.path()).is_ok() {
                    rep.dangling_names += 1;
                }
            }
        }
        Ok(rep)
    }

    /// Counts a session's entry frames, reading frame headers only.
    fn entry_count(&self, id: SessionId) -> Result<u64> {
        let f = SessionFile::open(&self.path_of(id))?;
        let mut n = 0;
        let start = f.header().header_len as usize;
        scan::scan(
            f.bytes(),
            start,
            &self.limits,
            &f.path().display().to_string(),
            |v| {
                n += u64::from(v.kind == KIND_ENTRY);
                Ok(())
            },
        )?;
        Ok(n)
    }
}

fn add_scan(acc: &mut ScanReport, r: &ScanReport) {
    acc.frames += r.frames;
    acc.corrupt_skipped += r.corrupt_skipped;
    acc.corrupt_bytes += r.corrupt_bytes;
    acc.resynced_bytes += r.resynced_bytes;
    acc.torn_tail_at = r.torn_tail_at;
    acc.torn_tail_bytes = r.torn_tail_bytes;
    acc.valid_end = r.valid_end;
}

/// Makes the payloads of the records from `from` on, just written as the
/// frames `buf` at file offset `base`, readable from the session's arena:
/// by mapping the whole file again when the arena may extend over it (see
/// `Arena::can_extend_over`), the records already addressing the file;
/// otherwise, or when mapping fails, by copying each stored payload (head
/// and stored content, exactly as in the frame) into the owned buffer.
fn place_appended(
    s: &mut Session,
    file: &std::fs::File,
    meta: &std::fs::Metadata,
    from: usize,
    base: u64,
    buf: &[u8],
) {
    if let Some(id) = session::file_id(meta)
        && s.payload.can_extend_over(id)
    {
        // SAFETY: see `SessionFile::open`; we hold the session lock, and
        // the file is only ever appended to or replaced by rename.
        if let Ok(map) = unsafe { memmap2::Mmap::map(file) }
            && map.len() as u64 >= base + buf.len() as u64
        {
            s.payload.extend_over(map, id);
            return;
        }
    }
    let stored: usize = s.records[from..]
        .iter()
        .map(|r| r.head_len as usize + r.payload_len as usize)
        .sum();
    s.payload.owned_mut().reserve(stored);
    for i in from..s.records.len() {
        let r = s.records[i];
        let at = (r.frame_offset - base) as usize + format::FRAME_PREFIX;
        let len = r.head_len as usize + r.payload_len as usize;
        let start = s.payload.len();
        s.payload.owned_mut().extend_from_slice(&buf[at..at + len]);
        s.records[i].payload_offset = (start + r.head_len as usize) as u64;
    }
}

/// Checks that entry content is exactly one canonical CBOR item.
fn check_content(content: &[u8]) -> Result<()> {
    smith_codec::validate(content, smith_codec::Mode::Strict, smith_codec::Limits::default()).map_err(|e| {
        StoreError::new(
            ErrorKind::Invalid,
            format!("entry content ({} bytes) is not one canonical CBOR item: {e}; encode content with smith_codec::Encoder", content.len()),
        )
    })
}

/// The link of an entry frame `v` whose parent is `parent`, written again at
/// `here` by a copy that wrote each earlier entry frame at a new offset
/// (`moved`: old offset, new offset and id of each, in file order): the
/// distance back to where its parent frame now lies, or 0 when it had no
/// parent frame or its parent was not copied.
fn moved_link(moved: &[(u64, u64, u64)], v: &format::FrameView<'_>, parent: u64, here: u64) -> u64 {
    if parent == 0 || v.link == 0 || v.link > v.offset {
        return 0;
    }
    let target = v.offset - v.link;
    match moved.binary_search_by_key(&target, |m| m.0) {
        Ok(i) if moved[i].2 == parent => here - moved[i].1,
        _ => 0,
    }
}

/// Rewrites a file's complete frames under a new header: unknown frames byte
/// for byte, entry frames with their links recomputed (so frames dropped in
/// between do not break the chain). Returns the new bytes and what the walk
/// found.
///
/// # Errors
/// Header and frame-reader errors.
pub fn rewrite(
    bytes: &[u8],
    limits: &Limits,
    what: &str,
    id: SessionId,
    created_ms: u64,
    origin: Option<Origin>,
) -> Result<(Vec<u8>, ScanReport)> {
    let header = format::decode_header(bytes, what)?;
    let mut out = Vec::with_capacity(bytes.len() + 64);
    out.extend_from_slice(&format::encode_header(id, created_ms));
    if let Some(o) = origin {
        let mut p = Vec::new();
        format::encode_origin(&mut p, o.session, o.leaf);
        format::encode_frame(&mut out, KIND_ORIGIN, 0, p.len() as u32, 0, &p);
    }
    // (old offset, new offset, id) of every entry frame written.
    let mut moved: Vec<(u64, u64, u64)> = Vec::new();
    let mut dctx = session::decompressor(what)?;
    let mut scratch = Vec::new();
    let report = scan::scan(bytes, header.header_len as usize, limits, what, |v| {
        let here = out.len() as u64;
        let head = crate::compress::read_entry(&v, &mut dctx, &mut scratch).map(|(h, _)| h);
        match head {
            Some(h) => {
                let link = moved_link(&moved, &v, h.parent, here);
                format::encode_frame(&mut out, v.kind, v.flags, v.content_len, link, v.payload);
                moved.push((v.offset, here, h.id));
            }
            None => out.extend_from_slice(v.raw),
        }
        Ok(())
    })?;
    Ok((out, report))
}

/// What [`Store::pack`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packed {
    /// The session packed.
    pub id: SessionId,
    /// The file's size before.
    pub before: u64,
    /// The file's size after.
    pub after: u64,
    /// Entries written.
    pub entries: u64,
    /// Of them, entries stored compressed.
    pub compressed: u64,
    /// Bytes of an incomplete last frame (left by a writer that crashed)
    /// that were dropped, as the next append would have.
    pub torn_tail_bytes: u64,
}

/// Rewrites session bytes under the header `id`, `created_ms`: every entry
/// written again through `comp` (its content decompressed when stored
/// compressed, then compressed or not as `comp` decides), links recomputed,
/// every other good frame byte for byte (as [`rewrite`] does, an entry
/// frame whose content does not decompress too); corrupt frames and a torn
/// tail are dropped and counted in the report. Returns the bytes, the
/// scan's report and (entries written, entries stored compressed).
///
/// # Errors
/// As [`rewrite`].
pub fn repack(
    bytes: &[u8],
    limits: &Limits,
    what: &str,
    id: SessionId,
    created_ms: u64,
    comp: &mut Compressor,
) -> Result<(Vec<u8>, ScanReport, (u64, u64))> {
    let header = format::decode_header(bytes, what)?;
    let mut out = Vec::with_capacity(bytes.len() + 64);
    out.extend_from_slice(&format::encode_header(id, created_ms));
    // (old offset, new offset, id) of every entry frame written.
    let mut moved: Vec<(u64, u64, u64)> = Vec::new();
    let mut dctx = session::decompressor(what)?;
    let (mut scratch, mut map) = (Vec::new(), Vec::new());
    let (mut entries, mut compressed) = (0u64, 0u64);
    let report = scan::scan(bytes, header.header_len as usize, limits, what, |v| {
        let here = out.len() as u64;
        match crate::compress::read_entry(&v, &mut dctx, &mut scratch) {
            Some((h, content)) => {
                let link = moved_link(&moved, &v, h.parent, here);
                map.clear();
                format::encode_entry(&mut map, &h, content);
                comp.frame(&mut out, KIND_ENTRY, link, &map);
                entries += 1;
                compressed += u64::from(out[here as usize + 5] != 0);
                moved.push((v.offset, here, h.id));
            }
            None => out.extend_from_slice(v.raw),
        }
        Ok(())
    })?;
    Ok((out, report, (entries, compressed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_item(len: usize) -> Vec<u8> {
        let mut v = Vec::new();
        smith_codec::Encoder::new(&mut v).bytes(&vec![7u8; len]);
        v
    }

    #[test]
    fn names_from_prompts_are_their_first_words() {
        assert_eq!(
            name_from_text("Fix the lexer's off-by-one!").as_deref(),
            Some("fix-the-lexer-s-off-by-one")
        );
        assert_eq!(
            name_from_text("  explain   src/main.rs\nplease ").as_deref(),
            Some("explain-src-main-rs-please")
        );
        // Cut at a word boundary, at most 40 characters.
        let long = name_from_text(
            "refactor the session store so that every name is derived from the prompt",
        )
        .unwrap();
        assert_eq!(long, "refactor-the-session-store-so-that-every");
        assert!(long.len() <= 40);
        // One word longer than the limit is cut inside the word.
        assert_eq!(name_from_text(&"a".repeat(50)).unwrap().len(), 40);
        // Nothing usable, or what would read as an id.
        assert_eq!(name_from_text("¿¡ — …"), None);
        assert_eq!(name_from_text(""), None);
        assert_eq!(name_from_text(&"ab".repeat(16)), None);
        assert_eq!(name_from_text("Café crème").as_deref(), Some("caf-cr-me"));
    }

    #[test]
    fn titled_sessions_take_the_first_free_numbered_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, name_a) = store.create_titled("fix-the-bug").unwrap();
        let (b, name_b) = store.create_titled("fix-the-bug").unwrap();
        let (c, name_c) = store.create_titled("fix-the-bug").unwrap();
        assert_eq!(
            [name_a.as_str(), &name_b, &name_c],
            ["fix-the-bug", "fix-the-bug-2", "fix-the-bug-3"]
        );
        assert_eq!(store.resolve("fix-the-bug-2").unwrap(), b.id());
        assert_ne!(a.id(), c.id());
        // A renamed session frees its name for the next one.
        store.rename("fix-the-bug", "first").unwrap();
        assert_eq!(store.create_titled("fix-the-bug").unwrap().1, "fix-the-bug");
        // A base of the full 64 characters is cut to fit its suffix.
        let base = "x".repeat(64);
        store.create_titled(&base).unwrap();
        let (_, second) = store.create_titled(&base).unwrap();
        assert_eq!(second, format!("{}-2", "x".repeat(62)));
        assert!(store.create_titled("-bad").is_err());
        // A session renamed after a prompt gets the first free name too,
        // and its old name is gone.
        let (d, _) = store.create_titled("tui-1").unwrap();
        assert_eq!(
            store.rename_titled("tui-1", "fix-the-bug").unwrap(),
            "fix-the-bug-4"
        );
        assert_eq!(store.resolve("fix-the-bug-4").unwrap(), d.id());
        assert!(store.resolve("tui-1").is_err());
    }

    fn one(content: &[u8]) -> [NewEntry<'_>; 1] {
        [NewEntry {
            kind: EntryKind::ToolResult,
            parent: None,
            timestamp_ms: Some(1),
            pairing: 0,
            content,
        }]
    }

    /// A session left with its header only, or with model changes only,
    /// is deleted (file, name, summary); one with any other entry is kept,
    /// whatever its name.
    #[test]
    fn only_sessions_without_entries_are_discarded() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().join("sessions")).expect("store");
        let (empty, _) = store.create_titled("tui-1").expect("create");
        let (mut kept, _) = store.create_titled("tui-2").expect("create");
        store
            .append(&mut kept, &one(&bytes_item(10)))
            .expect("append");
        // The model a frontend chose as it opened is not a conversation.
        let (mut chose, _) = store.create_titled("tui-3").expect("create");
        let model = bytes_item(4);
        store
            .append(
                &mut chose,
                &[NewEntry {
                    kind: EntryKind::ModelChange,
                    parent: None,
                    timestamp_ms: Some(1),
                    pairing: 0,
                    content: &model,
                }],
            )
            .expect("append");
        assert!(store.discard_if_empty(chose.id()).expect("discard"));
        assert!(store.discard_if_empty(empty.id()).expect("discard"));
        assert!(!store.path_of(empty.id()).exists());
        assert!(store.resolve("tui-1").is_err());
        assert!(!store.discard_if_empty(kept.id()).expect("keep"));
        assert_eq!(store.resolve("tui-2").expect("still there"), kept.id());
        // Gone already: nothing to do.
        assert!(!store.discard_if_empty(empty.id()).expect("again"));
        assert_eq!(store.list().expect("list").len(), 1);
    }

    /// The frame buffer and the zstd context stay with the session between
    /// appends; a buffer one large append grew past `Writer::KEEP` is let
    /// go, and what that append wrote still reads back.
    #[test]
    fn an_append_keeps_its_buffers_but_not_oversized_ones() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().join("sessions")).expect("store");
        let mut s = store.create(None).expect("create");
        let small = bytes_item(100);
        store.append(&mut s, &one(&small)).expect("small append");
        assert!(s.writer.buf.capacity() >= small.len());
        assert!(s.writer.comp.is_some());
        let large = bytes_item(session::Writer::KEEP + 1);
        store.append(&mut s, &one(&large)).expect("large append");
        assert_eq!(
            (s.writer.buf.capacity(), s.writer.map.capacity()),
            (0, 0),
            "buffers over the limit are let go"
        );
        assert!(s.writer.comp.is_some());
        let leaf = *s.leaf().expect("leaf");
        assert_eq!(s.content(&leaf).expect("content").as_ref(), &large[..]);
        store.append(&mut s, &one(&small)).expect("append after");
        assert!(s.writer.buf.capacity() >= small.len());
    }

    /// A store's appends follow its compression setting, also on a session
    /// whose writer an earlier append set up; a file holding both kinds of
    /// frames reads whole; a pack rewrites every entry as `small`, refuses
    /// a file with a damaged frame and leaves it as it was, and drops a
    /// torn tail.
    #[test]
    fn appends_follow_the_store_s_compression_and_a_pack_rewrites_with_small() {
        use crate::compress::{Compression, SMALL_THRESHOLD, THRESHOLD};
        let dir = tempfile::tempdir().expect("temp dir");
        // Nothing in this crate's tests sets the process's setting.
        let mut store = Store::open(dir.path().join("sessions")).expect("store");
        assert_eq!(store.compression(), Compression::Fast);
        let item = bytes_item(1000);
        assert!((SMALL_THRESHOLD..THRESHOLD).contains(&item.len()));
        let mut s = store.create(Some("mix")).expect("create");
        store.append(&mut s, &one(&item)).expect("fast append");
        store.set_compression(Compression::Small);
        assert_eq!(store.compression(), Compression::Small);
        store.append(&mut s, &one(&item)).expect("small append");
        let load = |store: &Store| {
            store
                .open_file("mix")
                .expect("open")
                .load(&Limits::default())
                .expect("load")
        };
        let mixed = load(&store);
        let stored: Vec<(bool, Vec<u8>)> = mixed
            .records()
            .iter()
            .map(|r| {
                (
                    r.is_compressed(),
                    mixed.content(r).expect("content").into_owned(),
                )
            })
            .collect();
        assert_eq!(stored, [(false, item.clone()), (true, item.clone())]);

        let path = store.path_of(s.id());
        let before = std::fs::read(&path).expect("read");
        let then =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(then))
            .expect("set the time");
        let p = store.pack("mix", Compression::Small).expect("pack");
        assert_eq!(
            std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .expect("time"),
            then,
            "the conversation did not change"
        );
        assert_eq!((p.id, p.entries, p.compressed), (s.id(), 2, 2));
        assert_eq!((p.before, p.torn_tail_bytes), (before.len() as u64, 0));
        let packed = std::fs::read(&path).expect("read");
        assert_eq!(p.after, packed.len() as u64);
        assert!(p.after < p.before);
        assert_eq!(&packed[..format::HEADER_LEN], &before[..format::HEADER_LEN]);
        let again = load(&store);
        assert!(again.records().iter().all(|r| r.is_compressed()));
        assert_eq!(again.records().len(), 2);
        for r in again.records() {
            assert_eq!(again.content(r).expect("content").as_ref(), &item[..]);
        }
        assert_eq!(again.records()[1].parent, again.records()[0].id);

        // A damaged frame: refused, the file left as it was.
        let mut damaged = packed.clone();
        damaged[format::HEADER_LEN + format::FRAME_PREFIX + 3] ^= 0x40;
        std::fs::write(&path, &damaged).expect("write");
        let e = store.pack("mix", Compression::Small).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::TooManyCorruptFrames);
        assert!(
            e.to_string().contains("holds 1 damaged frame(s)")
                && e.to_string()
                    .contains("run `smith session repair mix` first"),
            "{e}"
        );
        assert_eq!(std::fs::read(&path).expect("read"), damaged);

        // A torn tail (the first bytes of a frame a crashed writer left) is
        // dropped, as the next append would.
        let mut torn = packed.clone();
        torn.extend_from_slice(&packed[format::HEADER_LEN..format::HEADER_LEN + 12]);
        std::fs::write(&path, &torn).expect("write");
        let p = store.pack("mix", Compression::Small).expect("pack");
        assert_eq!(p.torn_tail_bytes, 12);
        assert_eq!(std::fs::read(&path).expect("read"), packed);
    }
}
