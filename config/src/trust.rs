//! Project trust.
//!
//! A *project* is a directory holding a `.smith` directory: its
//! `config.kdl`, its `plugins/` and anything else smith would run or read on
//! the project's behalf. All of it is ignored until the user trusts the
//! project with `smith trust [PATH]`. Trust records the project's canonical
//! path and a SHA-256 digest over everything under `.smith` (names, contents,
//! executable bits, symlink targets; files are hashed in chunks, so memory
//! stays flat, and a FIFO, socket or device is named by its kind, never
//! opened); when any of it changes the digest no
//! longer matches and the project is untrusted again until re-trusted. There
//! is no flag that grants trust implicitly.
//!
//! The trust store is `<data dir>/trust.json`, written atomically (temporary
//! file, fsync, rename) with mode 0600.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use smith_diag::{Diagnostic, Surface};

use crate::error::{ConfigError, ErrorKind, io_error};
use crate::sha256::{Sha256, hex};

/// A project: a directory with a `.smith` directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project root, canonicalized.
    pub root: PathBuf,
}

impl Project {
    /// Searches `start` and its ancestors for a `.smith` directory, stopping
    /// after the first directory that contains `.git` (the repository root)
    /// and before `home` (the user's own `~/.smith` is never a project).
    pub fn discover(start: &Path, home: Option<&Path>) -> Option<Project> {
        let start = fs::canonicalize(start).ok()?;
        let home = home.and_then(|h| fs::canonicalize(h).ok());
        for dir in start.ancestors() {
            if home.as_deref() == Some(dir) {
                return None;
            }
            if dir.join(".smith").is_dir() {
                return Some(Project {
                    root: dir.to_path_buf(),
                });
            }
            if dir.join(".git").exists() {
                return None;
            }
        }
        None
    }

    /// Where a new project's `.smith` belongs when starting from `start`:
    /// the repository root (the nearest ancestor containing `.git`), or
    /// `start` itself outside a repository.
    pub fn new_root(start: &Path) -> PathBuf {
        let start = fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
        start
            .ancestors()
            .find(|d| d.join(".git").exists())
            .map_or_else(|| start.clone(), Path::to_path_buf)
    }

    /// The project at exactly `dir`, which must contain `.smith`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotAProject`] when `dir` has no `.smith` directory or
    /// cannot be canonicalized.
    pub fn at(dir: &Path) -> Result<Project, ConfigError> {
        let not = |why: String| {
            ConfigError::new(
                ErrorKind::NotAProject,
                Diagnostic::error(
                    "trust.not-a-project",
                    format!("{} is not a smith project", dir.display()),
                    why,
                    "run the command in a project (a directory with a `.smith` directory), or pass its path",
                )
                .with_value(dir.display())
                .with_example("smith trust ~/code/my-project"),
            )
        };
        let root =
            fs::canonicalize(dir).map_err(|e| not(format!("the path cannot be resolved: {e}")))?;
        if !root.join(".smith").is_dir() {
            return Err(not(
                "it has no `.smith` directory, so there is nothing to trust".to_owned(),
            ));
        }
        Ok(Project { root })
    }

    /// `<root>/.smith`.
    pub fn smith_dir(&self) -> PathBuf {
        self.root.join(".smith")
    }

    /// `<root>/.smith/config.kdl`.
    pub fn config_file(&self) -> PathBuf {
        self.smith_dir().join("config.kdl")
    }

    /// `<root>/.smith/plugins`.
    pub fn plugins_dir(&self) -> PathBuf {
        self.smith_dir().join("plugins")
    }

    /// The digest of everything under `.smith`: `sha256:<hex>`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when a file under `.smith` cannot be read.
    pub fn digest(&self) -> Result<String, ConfigError> {
        let mut h = Sha256::new();
        h.update(b"smith-trust-v1\n");
        let mut budget = DIGEST_BOUND.limit();
        digest_dir(&self.smith_dir(), "", &mut h, &mut budget)?;
        Ok(format!("sha256:{}", hex(&h.finish())))
    }
}

/// The most a project's `.smith` may hold, all files together, to be
/// digested for trust (raised with `SMITH_INPUT_LIMIT_MIB`).
const DIGEST_BOUND: smith_diag::input::Bound<'static> = smith_diag::input::Bound {
    what: "project's .smith",
    max_bytes: 256 * 1024 * 1024,
    named: false,
};

fn digest_dir(dir: &Path, rel: &str, h: &mut Sha256, budget: &mut u64) -> Result<(), ConfigError> {
    let next = "check the permissions of the project's .smith directory";
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)
        .map_err(|e| io_error("read the directory", dir, &e, next))?
        .collect::<Result<_, _>>()
        .map_err(|e| io_error("read the directory", dir, &e, next))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| io_error("inspect", &path, &e, next))?;
        let ty = meta.file_type();
        if ty.is_symlink() {
            let target =
                fs::read_link(&path).map_err(|e| io_error("read the link", &path, &e, next))?;
            h.update(format!("l {} {}\n", rel.len(), rel).as_bytes());
            let t = target.to_string_lossy();
            h.update(format!("{} {}\n", t.len(), t).as_bytes());
        } else if ty.is_dir() {
            h.update(format!("d {} {}\n", rel.len(), rel).as_bytes());
            digest_dir(&path, &rel, h, budget)?;
        } else if ty.is_file() {
            if meta.len() > *budget {
                return Err(too_large_to_digest(&path, meta.len()));
            }
            *budget -= meta.len();
            digest_file(&path, &rel, h)?;
        } else {
            // A FIFO, socket or device is named by its kind and never
            // opened: opening a FIFO waits for a writer, and a device can
            // be endless.
            h.update(format!("s {} {} {}\n", rel.len(), rel, special_kind(&ty)).as_bytes());
        }
    }
    Ok(())
}

/// The size of the chunks a file is hashed in: memory stays flat whatever
/// the file's size.
const DIGEST_CHUNK: usize = 64 * 1024;

/// Hashes the regular file `path` (named `rel`): its name, executable bit
/// and length, then its content, read in chunks.
fn digest_file(path: &Path, rel: &str, h: &mut Sha256) -> Result<(), ConfigError> {
    use std::io::Read as _;
    let next = "check the permissions of the project's .smith directory";
    let mut file = fs::File::open(path).map_err(|e| io_error("read", path, &e, next))?;
    let meta = file
        .metadata()
        .map_err(|e| io_error("inspect", path, &e, next))?;
    if !meta.is_file() {
        // Replaced by something else since the folder was listed.
        return Err(changed_while_read(path));
    }
    let len = meta.len();
    h.update(format!("f {} {} {} {}\n", rel.len(), rel, executable(&meta), len).as_bytes());
    let mut chunk = vec![0u8; DIGEST_CHUNK];
    let mut left = len;
    loop {
        let n = file
            .read(&mut chunk)
            .map_err(|e| io_error("read", path, &e, next))?;
        if n == 0 {
            break;
        }
        let n64 = n as u64;
        if n64 > left {
            return Err(changed_while_read(path));
        }
        h.update(&chunk[..n]);
        left -= n64;
    }
    if left != 0 {
        return Err(changed_while_read(path));
    }
    Ok(())
}

fn too_large_to_digest(path: &Path, len: u64) -> ConfigError {
    let limit = DIGEST_BOUND.limit();
    ConfigError::new(
        ErrorKind::Io,
        Diagnostic::error(
            "trust.too-large",
            format!(
                "the project's .smith is too large to digest for trust at {}",
                path.display()
            ),
            format!(
                "that file holds {}, and smith digests at most {} under a project's .smith, all files together (trust covers every byte, and hashing more would slow every command)",
                smith_diag::input::size(len),
                smith_diag::input::size(limit)
            ),
            format!(
                "move large files out of .smith (it holds configuration and plugins), or raise the limit with {} (a whole number of MiB)",
                smith_diag::input::LIMIT_ENV
            ),
        )
        .with_value(path.display()),
    )
}

fn changed_while_read(path: &Path) -> ConfigError {
    ConfigError::new(
        ErrorKind::Io,
        Diagnostic::error(
            "config.changed-while-read",
            format!("{} changed while smith read it", path.display()),
            "the project's trust digest covers every file under .smith, and this one grew, shrank or was replaced while it was being hashed",
            "run the command again once nothing is writing under .smith",
        )
        .with_value(path.display()),
    )
}

/// The kind of an entry that is no file, folder or link, as the digest
/// names it.
#[cfg(unix)]
fn special_kind(ty: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if ty.is_fifo() {
        "fifo"
    } else if ty.is_socket() {
        "socket"
    } else if ty.is_char_device() {
        "char-device"
    } else if ty.is_block_device() {
        "block-device"
    } else {
        "other"
    }
}

#[cfg(not(unix))]
fn special_kind(_ty: &fs::FileType) -> &'static str {
    "other"
}

#[cfg(unix)]
fn executable(meta: &fs::Metadata) -> u8 {
    use std::os::unix::fs::PermissionsExt as _;
    u8::from(meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn executable(_meta: &fs::Metadata) -> u8 {
    0
}

/// Whether a project may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted, and nothing changed since.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but `.smith` has changed since.
    Changed {
        /// The digest that was trusted.
        trusted: String,
        /// The digest now.
        current: String,
    },
}

/// One trust decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustEntry {
    /// The project root, canonical.
    pub path: PathBuf,
    /// The digest that was trusted.
    pub digest: String,
    /// Seconds since the Unix epoch when trust was granted.
    pub trusted_at: u64,
}

/// The trust store file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    entries: Vec<TrustEntry>,
}

impl TrustStore {
    /// Opens the store at `path`; a missing file is an empty store.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Trust`] when the file exists but cannot be read or is not
    /// a trust store.
    pub fn open(path: &Path) -> Result<TrustStore, ConfigError> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TrustStore {
                    path: path.to_path_buf(),
                    entries: Vec::new(),
                });
            }
            Err(e) => {
                return Err(io_error(
                    "read the trust store",
                    path,
                    &e,
                    "check the file's permissions; it should be readable by you alone (mode 0600)",
                ));
            }
        };
        let corrupt = |why: &str| {
            ConfigError::new(
                ErrorKind::Trust,
                Diagnostic::error(
                    "trust.store-corrupt",
                    format!("the trust store {} cannot be read", path.display()),
                    format!("{why}, so no project is treated as trusted"),
                    "delete the file to forget every trust decision, then run `smith trust` again in the projects you trust",
                )
                .with_surface(Surface::file(path)),
            )
        };
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| corrupt(&format!("it is not valid JSON ({e})")))?;
        if json["version"] != 1 {
            return Err(corrupt("it has an unknown version"));
        }
        let mut entries = Vec::new();
        for p in json["projects"]
            .as_array()
            .ok_or_else(|| corrupt("it has no `projects` list"))?
        {
            let (Some(path), Some(digest), Some(at)) = (
                p["path"].as_str(),
                p["digest"].as_str(),
                p["trusted_at"].as_u64(),
            ) else {
                return Err(corrupt(
                    "a project record lacks `path`, `digest` or `trusted_at`",
                ));
            };
            entries.push(TrustEntry {
                path: PathBuf::from(path),
                digest: digest.to_owned(),
                trusted_at: at,
            });
        }
        Ok(TrustStore {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// The recorded decisions.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }

    /// The status of `project` given its current `digest`.
    pub fn status_with_digest(&self, project: &Project, digest: &str) -> TrustStatus {
        match self.entries.iter().find(|e| e.path == project.root) {
            None => TrustStatus::Untrusted,
            Some(e) if e.digest == digest => TrustStatus::Trusted,
            Some(e) => TrustStatus::Changed {
                trusted: e.digest.clone(),
                current: digest.to_owned(),
            },
        }
    }

    /// The status of `project`, digesting it now.
    ///
    /// # Errors
    ///
    /// As for [`Project::digest`].
    pub fn status(&self, project: &Project) -> Result<TrustStatus, ConfigError> {
        // A project never trusted is not digested: a cloned repository's
        // `.smith` costs nothing to look at, whatever it holds.
        if !self.entries.iter().any(|e| e.path == project.root) {
            return Ok(TrustStatus::Untrusted);
        }
        Ok(self.status_with_digest(project, &project.digest()?))
    }

    /// Trusts `project` as it is now and saves the store. Returns the digest.
    ///
    /// # Errors
    ///
    /// When the project cannot be digested or the store cannot be written.
    pub fn trust(&mut self, project: &Project) -> Result<String, ConfigError> {
        let digest = project.digest()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.entries.retain(|e| e.path != project.root);
        self.entries.push(TrustEntry {
            path: project.root.clone(),
            digest: digest.clone(),
            trusted_at: now,
        });
        self.entries.sort_by(|a, b| a.path.cmp(&b.path));
        self.save()?;
        Ok(digest)
    }

    /// Forgets `project`. Returns whether it was recorded.
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    pub fn revoke(&mut self, project: &Project) -> Result<bool, ConfigError> {
        let before = self.entries.len();
        self.entries.retain(|e| e.path != project.root);
        if self.entries.len() == before {
            return Ok(false);
        }
        self.save()?;
        Ok(true)
    }

    fn save(&self) -> Result<(), ConfigError> {
        let projects: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "path": e.path.display().to_string(),
                    "digest": e.digest,
                    "trusted_at": e.trusted_at,
                })
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&serde_json::json!({
            "version": 1,
            "projects": projects,
        }))
        .unwrap_or_default();
        text.push('\n');
        write_private_atomic(&self.path, text.as_bytes())
    }
}

/// Writes `data` to `path` atomically with mode 0600 (owner only).
pub(crate) fn write_private_atomic(path: &Path, data: &[u8]) -> Result<(), ConfigError> {
    write_atomic(path, data, true)
}

/// Writes `data` to `path` atomically: a temporary file in the same
/// directory, fsync, rename, fsync of the directory.
pub(crate) fn write_atomic(path: &Path, data: &[u8], private: bool) -> Result<(), ConfigError> {
    let next = "check that the directory exists and is writable by you";
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| io_error("create the directory", dir, &e, next))?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mode = if private {
            0o600
        } else {
            fs::metadata(path).map_or(0o644, |m| {
                use std::os::unix::fs::PermissionsExt as _;
                m.permissions().mode() & 0o777
            })
        };
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = private;
    let result = (|| {
        let mut f = opts.open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok::<(), std::io::Error>(())
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_error("write", path, &e, next)
    })
}

/// The warning shown when a project's configuration is ignored.
pub(crate) fn untrusted_warning(project: &Project, status: &TrustStatus) -> Diagnostic {
    let (what, why) = match status {
        TrustStatus::Changed { .. } => (
            format!(
                "the project configuration in {} changed since you trusted it and is ignored",
                project.smith_dir().display()
            ),
            "a project's .smith directory can run code and change what smith does; any change to it needs your approval again",
        ),
        _ => (
            format!(
                "the project configuration in {} is ignored because the project is not trusted",
                project.smith_dir().display()
            ),
            "a project's .smith directory can run code and change what smith does, so it needs your approval first",
        ),
    };
    Diagnostic::warning(
        "trust.untrusted-project",
        what,
        why,
        format!(
            "review {} and, if you trust it, run `smith trust {}`",
            project.smith_dir().display(),
            project.root.display()
        ),
    )
    .with_surface(Surface::file(project.config_file()))
}
