//! Atomic publication: a new, forked, cloned, repaired or imported session
//! becomes visible whole or not at all.
//!
//! The bytes go to a uniquely named temporary file in the same directory,
//! which is flushed to disk (`fsync`), renamed over the final name (atomic on
//! every supported platform), and then the directory itself is flushed so the
//! rename survives power loss. A crash before the rename leaves the old file
//! (or none) plus a stray temporary that `prune` removes; a crash after it
//! leaves the new file.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{ErrorKind, Result, StoreError};

/// A step of publication after which a simulated crash can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The temporary file exists and is empty.
    CreatedTemp,
    /// Half of the bytes are written.
    WroteHalf,
    /// All bytes are written but not flushed.
    Wrote,
    /// The temporary file is flushed to disk.
    Synced,
    /// The temporary file has been renamed over the final name.
    Renamed,
}

/// Every step, in order.
pub const STEPS: [Step; 5] = [
    Step::CreatedTemp,
    Step::WroteHalf,
    Step::Wrote,
    Step::Synced,
    Step::Renamed,
];

/// The prefix of temporary publication files.
pub const TEMP_PREFIX: &str = ".tmp-";

fn crash(step: Step, path: &Path) -> StoreError {
    StoreError::new(
        ErrorKind::Io,
        format!(
            "publication of {} stopped by an injected crash after step {step:?}; this only happens under test",
            path.display()
        ),
    )
}

/// Publishes `bytes` as `path`. With `crash_after`, stops dead after that
/// step, leaving the file system exactly as a crash would.
///
/// # Errors
/// `Io` for any failing file-system call, or the injected crash.
pub fn publish(path: &Path, bytes: &[u8], crash_after: Option<Step>) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("session");
    let tmp = dir.join(format!(
        "{TEMP_PREFIX}{file_name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let stop = |s: Step| crash_after == Some(s);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| StoreError::io("create temporary file", &tmp, e))?;
    if stop(Step::CreatedTemp) {
        return Err(crash(Step::CreatedTemp, path));
    }
    let half = bytes.len() / 2;
    f.write_all(&bytes[..half])
        .map_err(|e| StoreError::io("write temporary file", &tmp, e))?;
    if stop(Step::WroteHalf) {
        return Err(crash(Step::WroteHalf, path));
    }
    f.write_all(&bytes[half..])
        .map_err(|e| StoreError::io("write temporary file", &tmp, e))?;
    if stop(Step::Wrote) {
        return Err(crash(Step::Wrote, path));
    }
    f.sync_all()
        .map_err(|e| StoreError::io("flush temporary file", &tmp, e))?;
    drop(f);
    if stop(Step::Synced) {
        return Err(crash(Step::Synced, path));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        StoreError::io("rename temporary file over", path, e)
    })?;
    if stop(Step::Renamed) {
        return Err(crash(Step::Renamed, path));
    }
    sync_dir(dir)
}

/// Flushes a directory so renames and creations in it are durable.
///
/// # Errors
/// `Io` when the directory cannot be opened or flushed.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d = std::fs::File::open(dir).map_err(|e| StoreError::io("open directory", dir, e))?;
        d.sync_all()
            .map_err(|e| StoreError::io("flush directory", dir, e))?;
    }
    #[cfg(not(unix))]
    {
        // Windows makes a completed rename durable with the file system's
        // journal; directories cannot be opened for flushing there.
        let _ = dir;
    }
    Ok(())
}
