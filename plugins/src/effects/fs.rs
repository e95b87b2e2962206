//! The `fs-read` and `fs-write` capabilities: `read-file`, `list-dir`,
//! `write-file` and `edit-file` inside the plugin's data folder, with every
//! path checked against the grants (symlinks included) before it is used.

use std::ffi::OsStr;
use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use sha2::{Digest as _, Sha256};
use smith_engine::journal::Outcome;
use smith_engine::tools::Mutation;

use crate::runtime::hex;

use super::{EffectError, Effects, MAX_EFFECT_BYTES};

/// The most entries `list-dir` returns.
pub const MAX_DIR_ENTRIES: usize = 4096;

/// What a folder entry is (symlinks are reported, not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else.
    Other,
}

/// A folder's entries, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirListing {
    /// Names and kinds, at most [`MAX_DIR_ENTRIES`].
    pub entries: Vec<(String, EntryKind)>,
    /// Whether the folder had more entries.
    pub truncated: bool,
}

impl Effects {
    /// `read-file`: checks the path against the `fs-read` grants, records
    /// the intent, reads, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder; failed when reading fails.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, EffectError> {
        let file = self.check_path(PathCheck {
            op: "read-file",
            path,
            capability: "fs-read",
            grant_folder: GrantFolder::Parent,
            may_be_root: false,
            nothing: "read",
        })?;
        let effect_id = self.intent(
            "plugin.read-file",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = read_bounded(&file);
        let output = match &result {
            Ok(bytes) => json!({"bytes": bytes.len()}),
            Err(message) => json!({"error": message}),
        };
        let outcome = if result.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("read-file {path:?}: {message}")))
    }

    /// Checks `check.path` lexically (relative, no `..`), against the
    /// grants of `check.capability`, and against symlinks leading out of
    /// the granted folder; returns the path to use. Runs nothing.
    fn check_path(&self, check: PathCheck<'_>) -> Result<PathBuf, EffectError> {
        let PathCheck {
            op,
            path,
            capability,
            grant_folder,
            may_be_root,
            nothing,
        } = check;
        let invalid = || {
            EffectError::Invalid(format!(
                "{op} {path:?}: the path must be relative to the plugin's data folder and stay inside it (no `..`, no absolute path); nothing was {nothing}"
            ))
        };
        let parts = match relative_parts(path) {
            Some(parts) if may_be_root || !parts.is_empty() => parts,
            _ => return Err(invalid()),
        };
        let roots = match capability {
            "fs-write" => &self.grants.fs_write,
            _ => &self.grants.fs_read,
        };
        let Some(root) = roots.iter().find_map(|root| {
            relative_parts(root).filter(|root_parts| parts.starts_with(root_parts))
        }) else {
            let shown = match grant_folder {
                GrantFolder::Parent => &parts[..parts.len().saturating_sub(1)],
                GrantFolder::Itself => &parts[..],
            };
            let folder = if shown.is_empty() {
                ".".to_owned()
            } else {
                shown
                    .iter()
                    .collect::<PathBuf>()
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(self.deny(
                capability,
                format!("{capability} {folder:?}"),
                format!("{op} {path:?}"),
            ));
        };
        if let Err(why) = resolves_inside(&self.grants.data_dir, &root, &parts) {
            let folder = if root.is_empty() {
                ".".to_owned()
            } else {
                root.iter()
                    .collect::<PathBuf>()
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(EffectError::Invalid(format!(
                "{op} {path:?}: the path resolves outside the granted folder {folder:?} ({why}); nothing was {nothing}"
            )));
        }
        Ok(self.grants.data_dir.join(parts.iter().collect::<PathBuf>()))
    }

    /// `list-dir`: checks the folder against the `fs-read` grants, records
    /// the intent, lists at most [`MAX_DIR_ENTRIES`] entries sorted by
    /// name, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the folder; invalid when the path
    /// leaves the data folder; failed when listing fails.
    pub fn list_dir(&self, path: &str) -> Result<DirListing, EffectError> {
        let dir = self.check_path(PathCheck {
            op: "list-dir",
            path,
            capability: "fs-read",
            grant_folder: GrantFolder::Itself,
            may_be_root: true,
            nothing: "listed",
        })?;
        let effect_id = self.intent(
            "plugin.list-dir",
            &json!({"plugin": self.plugin, "path": path}),
        )?;
        let result = list_bounded(&dir);
        let (outcome, output) = match &result {
            Ok(listing) => (
                Outcome::Ok,
                json!({"entries": listing.entries.len(), "truncated": listing.truncated}),
            ),
            Err(message) => (Outcome::Error, json!({"error": message})),
        };
        self.complete(effect_id, outcome, Mutation::NotApplied, &output)?;
        result.map_err(|message| EffectError::Failed(format!("list-dir {path:?}: {message}")))
    }

    /// `write-file`: checks the path against the `fs-write` grants, records
    /// the intent, creates missing parent folders inside the granted
    /// folder, writes a temporary file next to the target and renames it
    /// over the target, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder or the bytes are too many; failed when
    /// writing fails (the completion says whether anything changed).
    pub fn write_file(&self, path: &str, bytes: &[u8]) -> Result<(), EffectError> {
        self.writable(&format!("write-file {path:?}"))?;
        let file = self.check_path(PathCheck {
            op: "write-file",
            path,
            capability: "fs-write",
            grant_folder: GrantFolder::Parent,
            may_be_root: false,
            nothing: "written",
        })?;
        if bytes.len() > MAX_EFFECT_BYTES {
            return Err(EffectError::Invalid(format!(
                "write-file {path:?}: {} bytes is more than the {MAX_EFFECT_BYTES} allowed; nothing was written",
                bytes.len()
            )));
        }
        let effect_id = self.intent(
            "plugin.write-file",
            &json!({
                "plugin": self.plugin,
                "path": path,
                "bytes": bytes.len(),
                "sha256": hex(&Sha256::digest(bytes)),
            }),
        )?;
        self.finish_write(effect_id, "write-file", path, &file, bytes)
    }

    /// `edit-file`: checks the path against the `fs-write` grants, records
    /// the intent, reads the file, replaces the single occurrence of `old`
    /// with `new` and writes it back atomically, records the completion.
    ///
    /// # Errors
    ///
    /// Denied without a grant covering the path; invalid when the path
    /// leaves the data folder or `old` is empty; failed when the file cannot
    /// be read, is not UTF-8, or `old` does not occur exactly once (nothing
    /// changed), or when writing fails.
    pub fn edit_file(&self, path: &str, old: &str, new: &str) -> Result<(), EffectError> {
        self.writable(&format!("edit-file {path:?}"))?;
        let file = self.check_path(PathCheck {
            op: "edit-file",
            path,
            capability: "fs-write",
            grant_folder: GrantFolder::Parent,
            may_be_root: false,
            nothing: "edited",
        })?;
        if old.is_empty() {
            return Err(EffectError::Invalid(format!(
                "edit-file {path:?}: old-text is empty; pass the exact text to replace (it must occur exactly once); nothing was edited"
            )));
        }
        let effect_id = self.intent(
            "plugin.edit-file",
            &json!({
                "plugin": self.plugin,
                "path": path,
                "old_bytes": old.len(),
                "old_sha256": hex(&Sha256::digest(old.as_bytes())),
                "new_bytes": new.len(),
                "new_sha256": hex(&Sha256::digest(new.as_bytes())),
            }),
        )?;
        let refuse = |effect_id: String, message: String| -> Result<(), EffectError> {
            self.complete(
                effect_id,
                Outcome::Error,
                Mutation::NotApplied,
                &json!({"error": message}),
            )?;
            Err(EffectError::Failed(format!(
                "edit-file {path:?}: {message}"
            )))
        };
        let bytes = match read_bounded(&file) {
            Ok(bytes) => bytes,
            Err(message) => return refuse(effect_id, message),
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return refuse(
                effect_id,
                "the file is not UTF-8 text; use write-file to replace it whole; it was left unchanged".to_owned(),
            );
        };
        let count = text.matches(old).count();
        if count != 1 {
            let message = if count == 0 {
                "old-text was not found (0 occurrences); it must occur exactly once, including whitespace; the file was left unchanged".to_owned()
            } else {
                format!(
                    "old-text occurs {count} times; it must occur exactly once: include more of the surrounding text; the file was left unchanged"
                )
            };
            return refuse(effect_id, message);
        }
        let edited = text.replacen(old, new, 1);
        if edited.len() > MAX_EFFECT_BYTES {
            return refuse(
                effect_id,
                format!(
                    "the edited file would have {} bytes, more than the {MAX_EFFECT_BYTES} allowed; it was left unchanged",
                    edited.len()
                ),
            );
        }
        self.finish_write(effect_id, "edit-file", path, &file, edited.as_bytes())
    }

    /// Replaces `file` with `bytes` for the effect `effect_id` (`op` on
    /// `path`, for messages) and records the completion.
    pub(super) fn finish_write(
        &self,
        effect_id: String,
        op: &str,
        path: &str,
        file: &Path,
        bytes: &[u8],
    ) -> Result<(), EffectError> {
        match replace_file(file, bytes) {
            Ok(created) => {
                self.complete(
                    effect_id,
                    Outcome::Ok,
                    Mutation::Applied,
                    &json!({"bytes": bytes.len(), "created_folders": created}),
                )?;
                Ok(())
            }
            Err((message, mutation)) => {
                self.complete(
                    effect_id,
                    Outcome::Error,
                    mutation,
                    &json!({"error": message}),
                )?;
                Err(EffectError::Failed(format!("{op} {path:?}: {message}")))
            }
        }
    }
}

pub(super) fn read_bounded(file: &Path) -> Result<Vec<u8>, String> {
    let handle = std::fs::File::open(file).map_err(|e| format!("cannot open it: {e}"))?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_EFFECT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() > MAX_EFFECT_BYTES {
        return Err(format!(
            "the file is larger than the {MAX_EFFECT_BYTES} bytes read-file returns"
        ));
    }
    Ok(bytes)
}

/// Which folder a denial's missing grant names.
#[derive(Clone, Copy)]
enum GrantFolder {
    /// The folder holding the path (a file).
    Parent,
    /// The path itself (a folder).
    Itself,
}

/// One path to check before an effect.
struct PathCheck<'a> {
    /// The import (`read-file`), for messages.
    op: &'a str,
    /// The path the plugin passed.
    path: &'a str,
    /// `fs-read` or `fs-write`.
    capability: &'static str,
    grant_folder: GrantFolder,
    /// Whether the path may name the data folder itself (`.`).
    may_be_root: bool,
    /// What did not happen when refused (`read`, `written`).
    nothing: &'a str,
}

/// The named parts of a relative path (`.` dropped), or `None` when it is
/// absolute or has `..`. An empty path is the root itself.
pub(super) fn relative_parts(path: &str) -> Option<Vec<&OsStr>> {
    let mut parts = Vec::new();
    for part in Path::new(path).components() {
        match part {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts)
}

/// Whether `data_dir/parts` stays inside `data_dir/root` once symlinks are
/// resolved: the deepest part that exists is resolved; up to the root's
/// depth it must be exactly the lexical path (no symlink on the way to the
/// granted folder), below it inside the granted folder. Parts that do not
/// exist yet cannot be symlinks.
pub(super) fn resolves_inside(
    data_dir: &Path,
    root: &[&OsStr],
    parts: &[&OsStr],
) -> Result<(), String> {
    let Ok(base) = data_dir.canonicalize() else {
        // No data folder yet: nothing below it exists either.
        return if data_dir.symlink_metadata().is_ok() {
            Err("the data folder is a symlink that leads nowhere".to_owned())
        } else {
            Ok(())
        };
    };
    let mut existing = 0;
    let mut at = data_dir.to_path_buf();
    for part in parts {
        at.push(part);
        if at.symlink_metadata().is_err() {
            break;
        }
        existing += 1;
    }
    let deepest = data_dir.join(parts[..existing].iter().collect::<PathBuf>());
    let resolved = deepest
        .canonicalize()
        .map_err(|_| "a symlink on the way leads nowhere".to_owned())?;
    let inside = if existing <= root.len() {
        resolved == base.join(parts[..existing].iter().collect::<PathBuf>())
    } else {
        resolved.starts_with(base.join(root.iter().collect::<PathBuf>()))
    };
    if inside {
        Ok(())
    } else {
        Err("a symlink leads out".to_owned())
    }
}

pub(super) fn list_bounded(dir: &Path) -> Result<DirListing, String> {
    let reader = std::fs::read_dir(dir).map_err(|e| format!("cannot list it: {e}"))?;
    let mut entries = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| format!("cannot list it: {e}"))?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        entries.push((entry.file_name().to_string_lossy().into_owned(), kind));
    }
    entries.sort();
    let truncated = entries.len() > MAX_DIR_ENTRIES;
    entries.truncate(MAX_DIR_ENTRIES);
    Ok(DirListing { entries, truncated })
}

/// Replaces `file` with `bytes` atomically: creates the missing parent
/// folders, writes a temporary file beside it and renames it over it.
/// Returns how many folders it created; on failure the message and what
/// changed: not-applied when everything was undone, unknown when the
/// rename's outcome or the undoing is uncertain.
pub(super) fn replace_file(file: &Path, bytes: &[u8]) -> Result<usize, (String, Mutation)> {
    static TEMPS: AtomicU64 = AtomicU64::new(0);
    let parent = file.parent().unwrap_or(Path::new("."));
    let mut missing = Vec::new();
    let mut dir = parent;
    while dir.symlink_metadata().is_err() {
        missing.push(dir.to_path_buf());
        match dir.parent() {
            Some(up) if !up.as_os_str().is_empty() => dir = up,
            _ => break,
        }
    }
    let mut created: Vec<PathBuf> = Vec::new();
    // Undoes the folders created here; tells what is left changed.
    let undo = |created: &[PathBuf], message: String| {
        let clean = created
            .iter()
            .rev()
            .all(|dir| std::fs::remove_dir(dir).is_ok());
        if clean {
            (message, Mutation::NotApplied)
        } else {
            (
                format!("{message} (folders it created could not all be removed)"),
                Mutation::Unknown,
            )
        }
    };
    for dir in missing.iter().rev() {
        match std::fs::create_dir(dir) {
            Ok(()) => created.push(dir.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(undo(
                    &created,
                    format!("cannot create the folder {}: {e}", dir.display()),
                ));
            }
        }
    }
    let name = file
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let temp = parent.join(format!(
        ".{name}.{}-{}.smith-tmp",
        std::process::id(),
        TEMPS.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| -> std::io::Result<()> {
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Ok(meta) = std::fs::metadata(file) {
            out.set_permissions(meta.permissions())?;
        }
        out.write_all(bytes)?;
        out.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(undo(
            &created,
            format!("cannot write the temporary file {}: {e}", temp.display()),
        ));
    }
    match std::fs::rename(&temp, file) {
        Ok(()) => Ok(created.len()),
        Err(e) if temp.symlink_metadata().is_ok() => {
            let _ = std::fs::remove_file(&temp);
            Err(undo(
                &created,
                format!("cannot rename the temporary file over it: {e}"),
            ))
        }
        Err(e) => Err((
            format!(
                "renaming the temporary file over it reported {e} and the temporary file is gone; whether the file was replaced is unknown"
            ),
            Mutation::Unknown,
        )),
    }
}
