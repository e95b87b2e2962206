//! Shared file mechanics: binary detection, line capping, atomic replace,
//! parent creation and I/O error wording.

use std::borrow::Cow;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::context::{CancelCheck, CancelToken, Fingerprint, FingerprintHasher, ToolContext};
use super::result::{Mutation, ToolError, ToolErrorKind};

/// Bytes inspected by [`binary_reason`].
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Why `bytes` (the start of a file) is not text, or `None` when it is.
///
/// A NUL byte means binary. Otherwise the share of bytes in invalid UTF-8
/// sequences decides: above 10% is binary (a stray Latin-1 byte in a text
/// file is not). A sequence cut off at the end of the sample is not counted.
pub(crate) fn binary_reason(bytes: &[u8]) -> Option<String> {
    let sample = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(pos) = memchr_nul(sample) {
        return Some(format!("it contains a NUL byte at offset {pos}"));
    }
    let mut invalid = 0usize;
    let mut rest = sample;
    loop {
        match std::str::from_utf8(rest) {
            Ok(_) => break,
            Err(e) => match e.error_len() {
                Some(n) => {
                    invalid += n;
                    rest = &rest[e.valid_up_to() + n..];
                }
                None => break,
            },
        }
    }
    if !sample.is_empty() && invalid * 10 > sample.len() {
        return Some(format!(
            "{invalid} of its first {} bytes are not valid UTF-8",
            sample.len()
        ));
    }
    None
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == 0)
}

/// `line` cut to `max_chars` characters with a marker saying how many were
/// dropped; borrowed when it fits.
pub(crate) fn cap_line(line: &str, max_chars: usize) -> Cow<'_, str> {
    // Fast path: byte length bounds char count.
    if line.len() <= max_chars {
        return Cow::Borrowed(line);
    }
    match line.char_indices().nth(max_chars) {
        None => Cow::Borrowed(line),
        Some((cut, _)) => {
            let dropped = line[cut..].chars().count();
            Cow::Owned(format!(
                "{}… [line truncated: {dropped} more characters]",
                &line[..cut]
            ))
        }
    }
}

/// Refuses anything but a regular file (FIFOs, sockets and devices would
/// block or never end).
pub(crate) fn require_regular(
    tool: &str,
    meta: &fs::Metadata,
    shown: &str,
) -> Result<(), ToolError> {
    if meta.is_file() {
        return Ok(());
    }
    let (what, next) = if meta.is_dir() {
        (
            "a directory",
            format!("use ls with path `{shown}` to list it, or name a file inside it"),
        )
    } else {
        (
            "not a regular file (a FIFO, socket or device)",
            "inspect it with bash if you must; file tools only handle regular files".to_owned(),
        )
    };
    Err(ToolError::new(
        ToolErrorKind::WrongFileType,
        format!("{tool}: {shown} is {what}"),
        format!("{tool} works on regular files"),
        next,
    )
    .with_extra("path", serde_json::Value::from(shown)))
}

/// Wording for an I/O failure of `tool` while `action` on `shown`.
pub(crate) fn io_error(tool: &str, action: &str, shown: &str, err: &io::Error) -> ToolError {
    let (kind, next) = match err.kind() {
        io::ErrorKind::NotFound => (
            ToolErrorKind::NotFound,
            format!("check the path; use ls or find to see what exists near {shown}"),
        ),
        io::ErrorKind::PermissionDenied => (
            ToolErrorKind::Io,
            format!("{shown} is not accessible to smith's user; choose another path"),
        ),
        _ => (
            ToolErrorKind::Io,
            "check the path and the file system, then try again".to_owned(),
        ),
    };
    ToolError::new(
        kind,
        format!("{tool}: {action} {shown} failed: {err}"),
        "the operating system refused the operation",
        next,
    )
    .with_extra("path", serde_json::Value::from(shown))
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates the missing ancestors of `path`'s parent, returning those it
/// created (outermost first) so a failed write can remove them again.
pub(crate) fn create_parents(path: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    missing.reverse();
    for (i, d) in missing.iter().enumerate() {
        if let Err(e) = fs::create_dir(d)
            && !(e.kind() == io::ErrorKind::AlreadyExists && d.is_dir())
        {
            remove_created(&missing[..i]);
            return Err(e);
        }
    }
    Ok(missing)
}

/// Removes directories made by [`create_parents`], innermost first; true
/// when all are gone.
pub(crate) fn remove_created(created: &[PathBuf]) -> bool {
    created
        .iter()
        .rev()
        .all(|d| fs::remove_dir(d).is_ok() || !d.exists())
}

/// Replaces `path` with `bytes` atomically: a temp file in the same
/// directory, written and fsynced, given the existing file's permissions
/// (or the default mode for a new file), then renamed over `path`; the
/// directory is fsynced best-effort.
///
/// Any failure before the rename removes the temp file and reports
/// [`Mutation::NotApplied`]. Cancellation is checked before the temp file is
/// created and again just before the rename.
pub(crate) fn atomic_replace(
    tool: &str,
    path: &Path,
    shown: &str,
    bytes: &[u8],
    cancel: &CancelToken,
) -> Result<(), ToolError> {
    cancel.check(tool, &format!("writing {shown}"))?;
    let parent = path.parent().unwrap_or(Path::new("/"));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = fs::metadata(path).ok();
    let temp = parent.join(format!(
        ".{name}.smith-{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o666);
    }
    let mut file = options
        .open(&temp)
        .map_err(|e| io_error(tool, "creating a temporary file beside", shown, &e))?;
    let result = (|| {
        if let Some(meta) = &existing {
            fs::set_permissions(&temp, meta.permissions())
                .map_err(|e| io_error(tool, "copying permissions to the new", shown, &e))?;
        }
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error(tool, "writing", shown, &e))?;
        drop(file);
        cancel.check(tool, &format!("replacing {shown}"))?;
        fs::rename(&temp, path)
            .map_err(|e| io_error(tool, "renaming the new content over", shown, &e))
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&temp);
        return Err(e.with_mutation(Mutation::NotApplied));
    }
    // Best effort: the rename is visible already; fsyncing the directory
    // only makes it durable across power loss.
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The content fingerprint of the file at `path`, streamed.
pub(crate) fn fingerprint_file(path: &Path) -> io::Result<Fingerprint> {
    use std::io::Read;
    let mut file = File::open(path)?;
    let mut hasher = FingerprintHasher::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hasher.finish());
        }
        hasher.update(&buf[..n]);
    }
}

/// Refuses to change the existing file at `path` unless the agent has read
/// it (when the context requires that) and it is unchanged since.
///
/// `current` is the file's fingerprint when the caller has already read it;
/// otherwise the file is hashed here.
pub(crate) fn check_fresh(
    tool: &str,
    cx: &ToolContext,
    path: &Path,
    shown: &str,
    current: Option<Fingerprint>,
) -> Result<(), ToolError> {
    let seen = cx.reads().get(path);
    if seen.is_none() && !cx.require_read() {
        return Ok(());
    }
    let Some(seen) = seen else {
        return Err(ToolError::new(
            ToolErrorKind::NotRead,
            format!("{tool}: {shown} exists but has not been read in this session"),
            "changing a file the agent has not seen could destroy content it does not know about",
            format!("read {shown} first, then repeat the {tool}"),
        )
        .with_extra("path", serde_json::Value::from(shown)));
    };
    let now = match current {
        Some(fp) => fp,
        None => fingerprint_file(path).map_err(|e| io_error(tool, "reading", shown, &e))?,
    };
    if now != seen {
        return Err(ToolError::new(
            ToolErrorKind::Stale,
            format!("{tool}: {shown} changed since it was last read"),
            format!(
                "its content is now {} bytes with a different fingerprint than the {} bytes read earlier; something else modified it",
                now.len, seen.len
            ),
            format!("read {shown} again and base the {tool} on its current content"),
        )
        .with_extra("path", serde_json::Value::from(shown)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_detection() {
        assert_eq!(binary_reason(b"plain text\n"), None);
        assert_eq!(binary_reason("héllo wörld".as_bytes()), None);
        assert_eq!(
            binary_reason(b"ab\0cd").as_deref(),
            Some("it contains a NUL byte at offset 2")
        );
        // One Latin-1 byte in a long line is still text.
        let mut latin = b"caf".to_vec();
        latin.push(0xE9);
        latin.extend_from_slice(&[b'x'; 40]);
        assert_eq!(binary_reason(&latin), None);
        let noise: Vec<u8> = (0..100u8).map(|i| 0x80 | i).collect();
        assert!(binary_reason(&noise).is_some());
        // A multi-byte char cut by the sample end is not invalid.
        let mut cut = "a".repeat(SNIFF_BYTES - 1).into_bytes();
        cut.extend_from_slice("é".as_bytes());
        assert_eq!(binary_reason(&cut), None);
    }

    #[test]
    fn cap_line_marks_dropped_characters() {
        assert_eq!(cap_line("short", 10), "short");
        assert_eq!(
            cap_line("ééééé", 2),
            "éé… [line truncated: 3 more characters]"
        );
        assert!(matches!(cap_line("abc", 3), Cow::Borrowed(_)));
    }
}
