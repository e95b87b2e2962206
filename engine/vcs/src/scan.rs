//! The scanner and its stat cache.
//!
//! The cache ([`Index`]) is the last scan's view of the project: every
//! entry in depth-first, name-sorted order, each with the `lstat` fields it
//! had (size, mtime, ctime, inode, mode), its blob or tree id, and for a
//! directory the index one past its last descendant and the stat of its
//! `.gitignore`. A scan walks the cache again:
//!
//! * a directory whose stat is unchanged (creating, removing or renaming a
//!   child changes a directory's mtime and ctime) and whose `.gitignore` is
//!   unchanged keeps its cached list of children: no `readdir`, no ignore
//!   matching; otherwise it is listed and its new children are matched
//!   against the ignore rules;
//! * a file or symlink whose stat is unchanged keeps its cached id and is
//!   not read;
//! * a directory whose children all kept their ids keeps its tree id.
//!
//! A stat is trusted only when its newest timestamp is older than the start
//! of the scan that last saw it by more than [`RACY_MARGIN_NS`], because a
//! file written in the same clock tick as it was looked at can keep its
//! mtime ("racily clean"); such entries are read again.
//!
//! Each scan writes into a second index whose buffers are reused, so a scan
//! of an unchanged tree allocates nothing in proportion to the tree.

use std::ffi::{CStr, CString, OsStr};
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;

use ignore::Match;
use ignore::gitignore::Gitignore;
use smith_codec::{Decoder, Encoder};

use crate::error::VcsError;
use crate::id::{ObjectId, ObjectKind};
use crate::objects::Objects;
use crate::tree::{EntryKind, encode_entry};

/// How much older than the last scan's start a timestamp must be for the
/// stat to be trusted (a coarse file-system clock lags the real one).
pub const RACY_MARGIN_NS: i64 = 50_000_000;

/// The `lstat` fields the cache compares.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Stat {
    pub size: u64,
    pub mtime: i64,
    pub ctime: i64,
    pub ino: u64,
    pub mode: u32,
}

// The `stat` field and `S_IF*` widths differ between platforms; these are
// the widths the cache uses.
#[allow(clippy::unnecessary_cast)]
const S_IFMT: u32 = libc::S_IFMT as u32;
#[allow(clippy::unnecessary_cast)]
const S_IFDIR: u32 = libc::S_IFDIR as u32;
#[allow(clippy::unnecessary_cast)]
const S_IFREG: u32 = libc::S_IFREG as u32;
#[allow(clippy::unnecessary_cast)]
const S_IFLNK: u32 = libc::S_IFLNK as u32;

impl Stat {
    #[allow(clippy::unnecessary_cast)] // the field widths differ between platforms
    fn from_raw(st: &libc::stat) -> Stat {
        Stat {
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(st.st_ctime_nsec as i64),
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
        }
    }

    fn format(&self) -> u32 {
        self.mode & S_IFMT
    }

    fn present(&self) -> bool {
        self.mode != 0
    }
}

/// One cached entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// Offset of the name in [`Index::names`] (the name is followed by a NUL).
    pub name: u32,
    pub name_len: u32,
    pub kind: EntryKind,
    pub stat: Stat,
    /// For a directory: the stat of its `.gitignore` (all zero when absent).
    pub gi: Stat,
    /// For a directory: the index one past its last descendant.
    pub end: u32,
    pub id: ObjectId,
}

/// The stat cache: the last scan of the project.
#[derive(Default)]
pub(crate) struct Index {
    pub entries: Vec<Entry>,
    pub names: Vec<u8>,
    /// When the scan that produced it started (ns since the epoch).
    pub scan_start: i64,
    /// The options it was made under; another fingerprint rescans all.
    pub fingerprint: ObjectId,
    /// The snapshot taken from it.
    pub snapshot: Option<ObjectId>,
}

impl Index {
    pub(crate) fn name(&self, e: &Entry) -> &[u8] {
        &self.names[e.name as usize..(e.name + e.name_len) as usize]
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.names.clear();
        self.snapshot = None;
    }

    /// Appends the cache file's bytes: canonical CBOR `[1, fingerprint,
    /// scan_start, snapshot or null, names, entries]` followed by the
    /// 32-byte SHA-256 of everything before it.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let mut packed = Vec::with_capacity(self.entries.len() * ENTRY_BYTES);
        for e in &self.entries {
            packed.extend_from_slice(&e.name.to_le_bytes());
            packed.extend_from_slice(&e.name_len.to_le_bytes());
            packed.push(e.kind.code() as u8);
            packed.extend_from_slice(&e.end.to_le_bytes());
            for s in [&e.stat, &e.gi] {
                packed.extend_from_slice(&s.size.to_le_bytes());
                packed.extend_from_slice(&s.mtime.to_le_bytes());
                packed.extend_from_slice(&s.ctime.to_le_bytes());
                packed.extend_from_slice(&s.ino.to_le_bytes());
                packed.extend_from_slice(&s.mode.to_le_bytes());
            }
            packed.extend_from_slice(&e.id.0);
        }
        let start = out.len();
        {
            let mut enc = Encoder::new(out);
            enc.array(6)
                .u64(1)
                .bytes(&self.fingerprint.0)
                .i64(self.scan_start);
            match &self.snapshot {
                Some(id) => enc.bytes(&id.0),
                None => enc.null(),
            };
            enc.bytes(&self.names).bytes(&packed);
        }
        let sum = ObjectId::of(ObjectKind::Blob, &out[start..]);
        out.extend_from_slice(&sum.0);
    }

    /// Reads a cache file; `None` when it is damaged or of another version
    /// (the next scan then reads every file).
    pub(crate) fn decode(bytes: &[u8]) -> Option<Index> {
        let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
        if ObjectId::of(ObjectKind::Blob, body).0 != sum {
            return None;
        }
        let mut d = Decoder::strict(body);
        if d.array().ok()? != 6 || d.u64().ok()? != 1 {
            return None;
        }
        let fingerprint = ObjectId(d.bytes().ok()?.try_into().ok()?);
        let scan_start = d.i64().ok()?;
        let snapshot = match d.peek().ok()? {
            smith_codec::Token::Null => {
                d.null().ok()?;
                None
            }
            _ => Some(ObjectId(d.bytes().ok()?.try_into().ok()?)),
        };
        let names = d.bytes().ok()?.to_vec();
        let packed = d.bytes().ok()?;
        if packed.len() % ENTRY_BYTES != 0 || !d.is_at_end() {
            return None;
        }
        let n = packed.len() / ENTRY_BYTES;
        let mut entries = Vec::with_capacity(n);
        for (i, rec) in packed.chunks_exact(ENTRY_BYTES).enumerate() {
            let mut r = Reader(rec);
            let name = r.u32();
            let name_len = r.u32();
            let kind = EntryKind::from_code(u64::from(r.u8()))?;
            let end = r.u32();
            let stat = r.stat();
            let gi = r.stat();
            let id = ObjectId(r.0.try_into().ok()?);
            let name_end = name as usize + name_len as usize;
            if name_end >= names.len() || names[name_end] != 0 {
                return None;
            }
            if (end as usize) <= i || end as usize > n {
                return None;
            }
            if kind != EntryKind::Dir && end as usize != i + 1 {
                return None;
            }
            entries.push(Entry {
                name,
                name_len,
                kind,
                stat,
                gi,
                end,
                id,
            });
        }
        if entries
            .first()
            .is_some_and(|r| r.kind != EntryKind::Dir || r.end as usize != n)
        {
            return None;
        }
        Some(Index {
            entries,
            names,
            scan_start,
            fingerprint,
            snapshot,
        })
    }
}

const ENTRY_BYTES: usize = 4 + 4 + 1 + 4 + 2 * (8 + 8 + 8 + 8 + 4) + 32;

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.0[..N]);
        self.0 = &self.0[N..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn stat(&mut self) -> Stat {
        Stat {
            size: u64::from_le_bytes(self.take()),
            mtime: i64::from_le_bytes(self.take()),
            ctime: i64::from_le_bytes(self.take()),
            ino: u64::from_le_bytes(self.take()),
            mode: u32::from_le_bytes(self.take()),
        }
    }
}

/// Why a file is not in a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// Larger than the per-file cap (the cap, in bytes).
    FileCap(u64),
    /// The snapshot's files already added up to the per-snapshot cap (the cap).
    SnapshotCap(u64),
    /// Not a regular file, directory or symlink.
    Special,
}

/// A file a snapshot records by path and size only. A restore never
/// touches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The path relative to the project root.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Why its content is not stored.
    pub reason: SkipReason,
}

/// What one scan found.
pub(crate) struct Outcome {
    pub tree: ObjectId,
    /// Whether the tree differs from the cached one.
    pub changed: bool,
    /// Whether any stat differs from the cached one.
    pub stats_changed: bool,
    pub files: u64,
    pub bytes: u64,
    pub read: u64,
    /// Folders listed (`readdir`).
    pub listed: u64,
    pub skipped: Vec<Skipped>,
}

struct Frame {
    rel_len: usize,
    has_gitignore: bool,
    loaded: bool,
    gitignore: Option<Gitignore>,
}

/// The scanner's settings and reusable buffers.
pub(crate) struct Scanner {
    pub root: PathBuf,
    root_c: CString,
    extra: Gitignore,
    /// Folders (relative to the root) never scanned: the snapshot store.
    exclude: Vec<Vec<u8>>,
    pub max_file: u64,
    pub max_total: u64,
    pub fingerprint: ObjectId,
    rel: Vec<u8>,
    frames: Vec<Frame>,
    tree_buf: Vec<u8>,
    read_buf: Vec<u8>,
    // Per scan.
    prev_start: i64,
    total: u64,
    files: u64,
    read: u64,
    listed: u64,
    stats_changed: bool,
    skipped: Vec<Skipped>,
}

/// The prefix of restore staging folders at the root; never scanned.
pub(crate) const STAGING_PREFIX: &[u8] = b".smith-restore-";

impl Scanner {
    pub(crate) fn new(
        root: PathBuf,
        extra: Gitignore,
        exclude: Vec<Vec<u8>>,
        max_file: u64,
        max_total: u64,
        fingerprint: ObjectId,
    ) -> Result<Scanner, VcsError> {
        let root_c = CString::new(root.as_os_str().as_bytes()).map_err(|_| {
            VcsError::new(
                crate::ErrorKind::InvalidOptions,
                format!("the project root {} contains a NUL byte", root.display()),
                "paths passed to the operating system cannot contain NUL",
                "open the project by a path without NUL bytes",
            )
        })?;
        Ok(Scanner {
            root,
            root_c,
            extra,
            exclude,
            max_file,
            max_total,
            fingerprint,
            rel: Vec::with_capacity(4096),
            frames: Vec::with_capacity(64),
            tree_buf: Vec::with_capacity(1 << 16),
            read_buf: Vec::new(),
            prev_start: i64::MIN,
            total: 0,
            files: 0,
            read: 0,
            listed: 0,
            stats_changed: false,
            skipped: Vec::new(),
        })
    }

    fn racy(&self, st: &Stat) -> bool {
        st.mtime.max(st.ctime) >= self.prev_start.saturating_sub(RACY_MARGIN_NS)
    }

    fn abs(&self, rel: &[u8]) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(OsStr::from_bytes(rel))
        }
    }

    /// Scans the project into `new`, reusing what `old` knows.
    pub(crate) fn scan(
        &mut self,
        old: &Index,
        new: &mut Index,
        objects: &mut Objects,
    ) -> Result<Outcome, VcsError> {
        let start = now_ns();
        new.clear();
        let force = old.entries.is_empty() || old.fingerprint != self.fingerprint;
        self.prev_start = if force { i64::MAX } else { old.scan_start };
        self.total = 0;
        self.files = 0;
        self.read = 0;
        self.listed = 0;
        self.stats_changed = force;
        self.skipped = Vec::new();
        self.rel.clear();
        self.frames.clear();

        // SAFETY: `root_c` is a NUL-terminated path.
        let fd = unsafe {
            libc::open(
                self.root_c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(VcsError::io(
                "opening the project root",
                &self.root,
                &std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: `fd` was just opened and is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = fstat(fd.as_raw_fd()).map_err(|e| VcsError::io("reading", &self.root, &e))?;
        new.names.push(0);
        new.entries.push(Entry {
            name: 0,
            name_len: 0,
            kind: EntryKind::Dir,
            stat: st,
            gi: Stat::default(),
            end: 1,
            id: ObjectId::default(),
        });
        let old_root = (!force).then_some(0);
        let changed = self.scan_dir(fd.as_raw_fd(), 0, old_root, force, old, new, objects)?;
        let n = new.entries.len() as u32;
        new.entries[0].end = n;
        new.scan_start = start;
        new.fingerprint = self.fingerprint;
        Ok(Outcome {
            tree: new.entries[0].id,
            changed: changed || force,
            stats_changed: self.stats_changed,
            files: self.files,
            bytes: self.total,
            read: self.read,
            listed: self.listed,
            skipped: std::mem::take(&mut self.skipped),
        })
    }

    #[allow(clippy::too_many_arguments)] // one recursive step of one walk
    fn scan_dir(
        &mut self,
        fd: RawFd,
        ni: usize,
        oi: Option<usize>,
        force: bool,
        old: &Index,
        new: &mut Index,
        objects: &mut Objects,
    ) -> Result<bool, VcsError> {
        let dir_stat = new.entries[ni].stat;
        let old_dir = oi.map(|o| old.entries[o]);
        let mut reuse =
            !force && old_dir.is_some_and(|o| o.stat == dir_stat && !self.racy(&dir_stat));
        if self.racy(&dir_stat) {
            self.stats_changed = true;
        }
        let old_gi = old_dir.map(|o| o.gi).unwrap_or_default();
        let gi = if reuse && !old_gi.present() {
            Stat::default()
        } else {
            stat_at(fd, c".gitignore").unwrap_or_default()
        };
        let mut force = force;
        if gi != old_gi || (gi.present() && self.racy(&gi)) {
            reuse = false;
            force = true;
        }
        new.entries[ni].gi = gi;
        self.frames.push(Frame {
            rel_len: self.rel.len(),
            has_gitignore: gi.format() == S_IFREG,
            loaded: false,
            gitignore: None,
        });
        let mut changed = false;
        if let (true, Some(o)) = (reuse, oi) {
            let end = old.entries[o].end as usize;
            let mut c = o + 1;
            while c < end {
                let oc = old.entries[c];
                changed |=
                    self.child(fd, old.name(&oc), Some(c), None, force, old, new, objects)?;
                c = if oc.kind == EntryKind::Dir {
                    oc.end as usize
                } else {
                    c + 1
                };
            }
        } else {
            changed = true;
            self.stats_changed = true;
            self.listed += 1;
            let dir = self.abs(&self.rel);
            let mut names: Vec<Vec<u8>> = Vec::new();
            let listing = std::fs::read_dir(&dir)
                .map_err(|e| VcsError::io("listing the folder", &dir, &e))?;
            for item in listing {
                let item = item.map_err(|e| VcsError::io("listing the folder", &dir, &e))?;
                names.push(item.file_name().as_bytes().to_vec());
            }
            names.sort_unstable();
            self.load_ignores();
            let mut old_children: Vec<(&[u8], usize)> = Vec::new();
            if let Some(o) = oi {
                let end = old.entries[o].end as usize;
                let mut c = o + 1;
                while c < end {
                    let oc = &old.entries[c];
                    old_children.push((old.name(oc), c));
                    c = if oc.kind == EntryKind::Dir {
                        oc.end as usize
                    } else {
                        c + 1
                    };
                }
            }
            for name in &names {
                if name.as_slice() == b".git"
                    || (self.rel.is_empty() && name.starts_with(STAGING_PREFIX))
                {
                    continue;
                }
                let rel_len = self.rel.len();
                if rel_len > 0 {
                    self.rel.push(b'/');
                }
                self.rel.extend_from_slice(name);
                let excluded = self.exclude.contains(&self.rel);
                let cname = CString::new(name.as_slice()).unwrap_or_default();
                let st = match stat_at(fd, &cname) {
                    Ok(st) => Some(st),
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
                    Err(e) => {
                        let path = self.abs(&self.rel);
                        return Err(VcsError::io("reading", &path, &e));
                    }
                };
                let ignored = match st {
                    Some(st) if !excluded => self.ignored(st.format() == S_IFDIR),
                    _ => true,
                };
                self.rel.truncate(rel_len);
                if ignored {
                    continue;
                }
                let old_child = old_children
                    .binary_search_by(|(n, _)| (*n).cmp(name.as_slice()))
                    .ok()
                    .map(|i| old_children[i].1);
                self.child(fd, name, old_child, st, force, old, new, objects)?;
            }
        }
        self.frames.pop();

        if let (false, Some(o)) = (changed, old_dir) {
            new.entries[ni].id = o.id;
            return Ok(false);
        }
        self.tree_buf.clear();
        let mut n = 0u64;
        let mut c = ni + 1;
        while c < new.entries.len() {
            n += 1;
            let e = &new.entries[c];
            c = if e.kind == EntryKind::Dir {
                e.end as usize
            } else {
                c + 1
            };
        }
        {
            let mut enc = Encoder::new(&mut self.tree_buf);
            enc.array(n);
            let mut c = ni + 1;
            while c < new.entries.len() {
                let e = &new.entries[c];
                let size = if e.kind == EntryKind::Dir {
                    0
                } else {
                    e.stat.size
                };
                encode_entry(&mut enc, new.name(e), e.kind, &e.id, size);
                c = if e.kind == EntryKind::Dir {
                    e.end as usize
                } else {
                    c + 1
                };
            }
        }
        let id = objects.put(ObjectKind::Tree, &self.tree_buf)?;
        new.entries[ni].id = id;
        Ok(old_dir.is_none_or(|o| o.id != id))
    }

    /// Loads the `.gitignore` files of the folders on the current path
    /// that have one and are not loaded yet.
    fn load_ignores(&mut self) {
        for i in 0..self.frames.len() {
            let f = &self.frames[i];
            if f.loaded || !f.has_gitignore {
                continue;
            }
            let mut path = self.abs(&self.rel[..f.rel_len]);
            path.push(".gitignore");
            let (gi, _partial_error) = Gitignore::new(&path);
            let f = &mut self.frames[i];
            f.gitignore = Some(gi);
            f.loaded = true;
        }
    }

    /// Whether the path in `self.rel` is ignored: the extra list first,
    /// then the `.gitignore` files from the nearest folder up.
    fn ignored(&self, is_dir: bool) -> bool {
        let abs = self.abs(&self.rel);
        match self.extra.matched(&abs, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
        for f in self.frames.iter().rev() {
            if let Some(gi) = &f.gitignore {
                match gi.matched(&abs, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
        }
        false
    }

    /// Scans one child of the folder open as `fd`; returns whether it
    /// differs from the cached one (or is new, or vanished).
    #[allow(clippy::too_many_arguments)] // one recursive step of one walk
    fn child(
        &mut self,
        fd: RawFd,
        name: &[u8],
        oc: Option<usize>,
        pre: Option<Stat>,
        force: bool,
        old: &Index,
        new: &mut Index,
        objects: &mut Objects,
    ) -> Result<bool, VcsError> {
        let name_off = new.names.len();
        new.names.extend_from_slice(name);
        new.names.push(0);
        let rel_len = self.rel.len();
        if rel_len > 0 {
            self.rel.push(b'/');
        }
        self.rel.extend_from_slice(name);
        let r = self.child_inner(fd, name_off, oc, pre, force, old, new, objects);
        self.rel.truncate(rel_len);
        match r {
            Ok(Some(changed)) => Ok(changed),
            Ok(None) => {
                new.names.truncate(name_off);
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// `None` when the child vanished.
    #[allow(clippy::too_many_arguments)] // one recursive step of one walk
    fn child_inner(
        &mut self,
        fd: RawFd,
        name_off: usize,
        oc: Option<usize>,
        pre: Option<Stat>,
        force: bool,
        old: &Index,
        new: &mut Index,
        objects: &mut Objects,
    ) -> Result<Option<bool>, VcsError> {
        let cname = CStr::from_bytes_until_nul(&new.names[name_off..]).unwrap_or_default();
        let name_len = cname.to_bytes().len() as u32;
        let st = match pre {
            Some(st) => st,
            None => match stat_at(fd, cname) {
                Ok(st) => st,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
                Err(e) => return Err(VcsError::io("reading", &self.abs(&self.rel), &e)),
            },
        };
        let old_entry = oc.map(|c| old.entries[c]);
        let same = old_entry.is_some_and(|o| o.stat == st && !self.racy(&st));
        if !same {
            self.stats_changed = true;
        }
        let idx = new.entries.len();
        let mut entry = Entry {
            name: name_off as u32,
            name_len,
            kind: EntryKind::SkippedSpecial,
            stat: st,
            gi: Stat::default(),
            end: idx as u32 + 1,
            id: ObjectId::default(),
        };
        let format = st.format();
        if format == S_IFDIR {
            entry.kind = EntryKind::Dir;
            new.entries.push(entry);
            // SAFETY: `cname` is NUL-terminated; the flags do not follow a
            // symlink put in place of the folder since it was looked at.
            let sub = unsafe {
                libc::openat(
                    fd,
                    cname.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            if sub < 0 {
                let e = std::io::Error::last_os_error();
                new.entries.pop();
                return match e.raw_os_error() {
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP) => Ok(None),
                    _ => Err(VcsError::io("opening the folder", &self.abs(&self.rel), &e)),
                };
            }
            // SAFETY: `sub` was just opened and is owned here.
            let sub = unsafe { OwnedFd::from_raw_fd(sub) };
            let old_dir = oc.filter(|_| old_entry.is_some_and(|o| o.kind == EntryKind::Dir));
            let changed = self.scan_dir(sub.as_raw_fd(), idx, old_dir, force, old, new, objects)?;
            let end = new.entries.len() as u32;
            new.entries[idx].end = end;
            return Ok(Some(changed || old_dir.is_none()));
        }
        if format == S_IFLNK {
            entry.kind = EntryKind::Symlink;
            match old_entry {
                Some(o) if same && o.kind == EntryKind::Symlink => entry.id = o.id,
                _ => {
                    self.read_buf.clear();
                    self.read_buf.resize(libc::PATH_MAX as usize + 1, 0);
                    // SAFETY: the buffer has the length passed.
                    let n = unsafe {
                        libc::readlinkat(
                            fd,
                            cname.as_ptr(),
                            self.read_buf.as_mut_ptr().cast(),
                            self.read_buf.len(),
                        )
                    };
                    if n < 0 {
                        let e = std::io::Error::last_os_error();
                        return match e.raw_os_error() {
                            Some(libc::ENOENT | libc::EINVAL) => Ok(None),
                            _ => Err(VcsError::io("reading the link", &self.abs(&self.rel), &e)),
                        };
                    }
                    self.read_buf.truncate(n as usize);
                    entry.stat.size = n as u64;
                    entry.id = objects.put(ObjectKind::Blob, &self.read_buf)?;
                    self.read += 1;
                }
            }
        } else if format == S_IFREG {
            if st.size > self.max_file {
                entry.kind = EntryKind::SkippedFileCap;
                self.skip(st.size, crate::SkipReason::FileCap(self.max_file));
            } else if self.total + st.size > self.max_total {
                entry.kind = EntryKind::SkippedSnapshotCap;
                self.skip(st.size, crate::SkipReason::SnapshotCap(self.max_total));
            } else {
                entry.kind = if st.mode & 0o100 != 0 {
                    EntryKind::Executable
                } else {
                    EntryKind::File
                };
                match old_entry {
                    Some(o)
                        if same && matches!(o.kind, EntryKind::File | EntryKind::Executable) =>
                    {
                        entry.id = o.id;
                    }
                    _ => {
                        // SAFETY: `cname` is NUL-terminated; a symlink put
                        // in place of the file is not followed.
                        let f = unsafe {
                            libc::openat(
                                fd,
                                cname.as_ptr(),
                                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                            )
                        };
                        if f < 0 {
                            let e = std::io::Error::last_os_error();
                            return match e.raw_os_error() {
                                Some(libc::ENOENT | libc::ELOOP) => Ok(None),
                                _ => Err(VcsError::io("opening", &self.abs(&self.rel), &e)),
                            };
                        }
                        // SAFETY: `f` was just opened and is owned here.
                        let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(f) });
                        self.read_buf.clear();
                        file.read_to_end(&mut self.read_buf)
                            .map_err(|e| VcsError::io("reading", &self.abs(&self.rel), &e))?;
                        entry.stat.size = self.read_buf.len() as u64;
                        entry.id = objects.put(ObjectKind::Blob, &self.read_buf)?;
                        self.read += 1;
                    }
                }
                self.total += entry.stat.size;
                self.files += 1;
            }
        } else {
            self.skip(st.size, crate::SkipReason::Special);
        }
        new.entries.push(entry);
        Ok(Some(old_entry.is_none_or(|o| {
            o.kind != entry.kind
                || o.id != entry.id
                || (entry.kind.is_skipped() && o.stat.size != entry.stat.size)
        })))
    }

    fn skip(&mut self, size: u64, reason: crate::SkipReason) {
        self.skipped.push(Skipped {
            path: PathBuf::from(OsStr::from_bytes(&self.rel)),
            size,
            reason,
        });
    }
}

fn fstat(fd: RawFd) -> std::io::Result<Stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is a valid out-pointer for one `stat`.
    let r = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fstat` succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(Stat::from_raw(&st))
}

/// `lstat` of `name` in the folder open as `fd`.
pub(crate) fn stat_at(fd: RawFd, name: &CStr) -> std::io::Result<Stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated and `st` a valid out-pointer.
    let r = unsafe {
        libc::fstatat(
            fd,
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fstatat` succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(Stat::from_raw(&st))
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
