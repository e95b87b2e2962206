//! Reading input smith did not write, bounded.
//!
//! Every file smith reads on someone else's word — a mock script, an import,
//! a plugin's manifest or component, a project's file — goes through
//! [`read`] (or [`open_regular`] for a streaming reader): its size is
//! checked before anything is read, only a regular file is read unless the
//! user named a FIFO or device themselves (then it is read with the cap and
//! a deadline, never waited on forever), and a refusal is a diagnostic that
//! names the file, the limit and how to raise it.
//!
//! The limits are per input kind (a [`Bound`]); `SMITH_INPUT_LIMIT_MIB`
//! raises every one of them at once for a user who means it.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use crate::{Diagnostic, Surface};

/// The environment variable that raises every input limit (a whole number
/// of MiB; a value below an input's own limit changes nothing).
pub const LIMIT_ENV: &str = "SMITH_INPUT_LIMIT_MIB";

/// How long a named FIFO or device may take to deliver its input.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The bound on one input.
#[derive(Debug, Clone, Copy)]
pub struct Bound<'a> {
    /// What the input is, for messages (`"mock script"`).
    pub what: &'a str,
    /// Its limit in bytes.
    pub max_bytes: u64,
    /// Whether the user named this very path (on the command line): a
    /// FIFO or device is then read, with the limit and [`DEADLINE`].
    /// Anything else (a path found in a folder) must be a regular file.
    pub named: bool,
}

impl Bound<'_> {
    /// The limit in effect: the bound's own, or more when
    /// [`LIMIT_ENV`] asks for more.
    pub fn limit(&self) -> u64 {
        let raised = std::env::var(LIMIT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(0, |mib| mib.saturating_mul(1024 * 1024));
        self.max_bytes.max(raised)
    }
}

/// A byte count for messages: `16 MiB`, `1.5 KiB`, `12 bytes`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn too_large(path: &Path, bound: &Bound<'_>, why: String) -> Diagnostic {
    let limit = bound.limit();
    Diagnostic::error(
        "input.too-large",
        format!("{} {} is too large to read", bound.what, path.display()),
        format!(
            "{why}, and smith reads a {} of at most {} ({limit} bytes)",
            bound.what,
            size(limit)
        ),
        format!(
            "check that this is the file you meant; to read it anyway, raise the limit with {LIMIT_ENV} (a whole number of MiB, e.g. {LIMIT_ENV}={})",
            (limit / (1024 * 1024)).saturating_mul(4).max(1)
        ),
    )
    .with_surface(Surface::file(path))
    .with_value(path.display())
}

fn io_error(path: &Path, bound: &Bound<'_>, doing: &str, err: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        "input.io",
        format!("cannot {doing} {} {}", bound.what, path.display()),
        format!("the system said: {err}"),
        "check that the path exists and is readable",
    )
    .with_surface(Surface::file(path))
    .with_value(path.display())
}

/// What a file type is, in words.
fn kind_of(ty: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ty.is_dir() {
        "a folder"
    } else if ty.is_fifo() {
        "a FIFO (named pipe)"
    } else if ty.is_socket() {
        "a socket"
    } else if ty.is_char_device() {
        "a character device"
    } else if ty.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

fn not_a_file(path: &Path, bound: &Bound<'_>, kind: &str) -> Diagnostic {
    Diagnostic::error(
        "input.not-a-file",
        format!("{} {} is not a regular file", bound.what, path.display()),
        format!(
            "it is {kind}; smith reads a {} found on its own only from a regular file, since a FIFO waits for a writer and a device can be endless",
            bound.what
        ),
        "replace it with a regular file, or name it yourself on the command line",
    )
    .with_surface(Surface::file(path))
    .with_value(path.display())
}

/// Opens `path` for a streaming reader after checking that it is a regular
/// file within the bound: the file and its length.
///
/// # Errors
/// `input.not-a-file` for anything but a regular file (checked before
/// opening, so a FIFO is never waited on), `input.too-large` beyond the
/// bound, `input.io` when it cannot be opened.
pub fn open_regular(path: &Path, bound: &Bound<'_>) -> Result<(File, u64), Diagnostic> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, bound, "read", &e))?;
    if !meta.is_file() {
        return Err(not_a_file(path, bound, kind_of(&meta.file_type())));
    }
    if meta.len() > bound.limit() {
        return Err(too_large(
            path,
            bound,
            format!("it holds {} ({} bytes)", size(meta.len()), meta.len()),
        ));
    }
    let file = File::open(path).map_err(|e| io_error(path, bound, "open", &e))?;
    // The file may have been swapped between the check and the open.
    let opened = file
        .metadata()
        .map_err(|e| io_error(path, bound, "read", &e))?;
    if !opened.is_file() {
        return Err(not_a_file(path, bound, kind_of(&opened.file_type())));
    }
    Ok((file, opened.len()))
}

/// Reads `path` whole within `bound`.
///
/// A regular file's size is checked before reading, and the read stops one
/// byte past the limit (a file growing meanwhile is refused the same way).
/// A FIFO, socket or device is refused unopened, unless the user named it
/// ([`Bound::named`]): it is then read on a thread of its own with the
/// limit, and given up after [`DEADLINE`] (a FIFO with no writer).
///
/// # Errors
/// `input.not-a-file`, `input.too-large`, `input.timed-out`, `input.io`.
pub fn read(path: &Path, bound: &Bound<'_>) -> Result<Vec<u8>, Diagnostic> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, bound, "read", &e))?;
    let limit = bound.limit();
    if meta.is_file() {
        let (file, len) = open_regular(path, bound)?;
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(path, bound, "read", &e))?;
        if bytes.len() as u64 > limit {
            return Err(too_large(
                path,
                bound,
                "it grew past the limit while it was read".to_owned(),
            ));
        }
        return Ok(bytes);
    }
    let kind = kind_of(&meta.file_type());
    if !bound.named || meta.is_dir() {
        return Err(not_a_file(path, bound, kind));
    }
    let owned = path.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::Builder::new()
        .name("smith-input".to_owned())
        .spawn(move || {
            let result = File::open(&owned).and_then(|file| {
                let mut bytes = Vec::new();
                file.take(limit.saturating_add(1))
                    .read_to_end(&mut bytes)
                    .map(|_| bytes)
            });
            let _ = tx.send(result);
        });
    if let Err(e) = reader {
        return Err(io_error(path, bound, "start reading", &e));
    }
    match rx.recv_timeout(DEADLINE) {
        Ok(Ok(bytes)) if bytes.len() as u64 > limit => Err(too_large(
            path,
            bound,
            format!("it is {kind} that delivered more than the limit"),
        )),
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(io_error(path, bound, "read", &e)),
        // The reader stays blocked on the FIFO; it ends with the process.
        Err(_) => Err(Diagnostic::error(
            "input.timed-out",
            format!("{} {} delivered no end of input", bound.what, path.display()),
            format!(
                "it is {kind}, and it did not reach its end within {} s (a FIFO waits for a writer)",
                DEADLINE.as_secs()
            ),
            "start the program that writes to it first, or give a regular file",
        )
        .with_surface(Surface::file(path))
        .with_value(path.display())),
    }
}

/// How long a named FIFO, device or standard input may stay silent while
/// it is streamed.
pub const IDLE_DEADLINE: Duration = Duration::from_secs(30);

/// A stream over input smith did not write, for readers that must not
/// hold it whole (an import): a regular file within the bound, or — when
/// the user named it ([`Bound::named`]) — a FIFO, device or standard input
/// read on a thread of its own, given up after [`IDLE_DEADLINE`] without
/// data and refused past the bound's limit. Errors it returns while
/// reading carry the message of the diagnostic they stand for.
///
/// `path` `None` is standard input.
///
/// # Errors
/// As [`open_regular`] for a path; `input.not-a-file` for a FIFO or device
/// the user did not name.
pub fn stream(path: Option<&Path>, bound: &Bound<'_>) -> Result<Box<dyn Read + Send>, Diagnostic> {
    let limit = bound.limit();
    let (source, what): (Opener, String) = match path {
        Some(path) => {
            let meta = std::fs::metadata(path).map_err(|e| io_error(path, bound, "read", &e))?;
            if meta.is_file() {
                let (file, _) = open_regular(path, bound)?;
                return Ok(Box::new(Capped {
                    inner: file,
                    left: limit.saturating_add(1),
                    what: format!("{} {}", bound.what, path.display()),
                    limit,
                }));
            }
            if !bound.named || meta.is_dir() {
                return Err(not_a_file(path, bound, kind_of(&meta.file_type())));
            }
            let owned = path.to_owned();
            (
                Box::new(move || File::open(owned).map(|f| Box::new(f) as Box<dyn Read + Send>)),
                format!("{} {}", bound.what, path.display()),
            )
        }
        None => (
            Box::new(|| Ok(Box::new(std::io::stdin()) as Box<dyn Read + Send>)),
            format!("{} on standard input", bound.what),
        ),
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(4);
    std::thread::Builder::new()
        .name("smith-input".to_owned())
        .spawn(move || {
            let mut reader = match source() {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            loop {
                let mut chunk = vec![0u8; 64 * 1024];
                match reader.read(&mut chunk) {
                    Ok(0) => {
                        let _ = tx.send(Ok(Vec::new()));
                        return;
                    }
                    Ok(n) => {
                        chunk.truncate(n);
                        if tx.send(Ok(chunk)).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        })
        .map_err(|e| {
            Diagnostic::error(
                "input.io",
                format!("cannot start reading the {what}"),
                format!("the system said: {e}"),
                "retry; if it persists, give a regular file",
            )
        })?;
    Ok(Box::new(Capped {
        inner: Threaded {
            rx,
            chunk: Vec::new(),
            at: 0,
            done: false,
            what: what.clone(),
        },
        left: limit.saturating_add(1),
        what,
        limit,
    }))
}

/// Opens a stream on the reading thread (a FIFO's open waits for a writer).
type Opener = Box<dyn FnOnce() -> std::io::Result<Box<dyn Read + Send>> + Send>;

/// A reader refused past `limit` bytes.
struct Capped<R> {
    inner: R,
    left: u64,
    what: String,
    limit: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other(format!(
                "the {} holds more than the limit of {} ({} bytes); raise it with {LIMIT_ENV} (a whole number of MiB) if that is meant",
                self.what,
                size(self.limit),
                self.limit
            )));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        if self.left == 0 {
            return self.read(&mut []);
        }
        Ok(n)
    }
}

/// The reading end of a stream read on its own thread.
struct Threaded {
    rx: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    at: usize,
    done: bool,
    what: String,
}

impl Read for Threaded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            match self.rx.recv_timeout(IDLE_DEADLINE) {
                Ok(Ok(chunk)) if chunk.is_empty() => self.done = true,
                Ok(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "the {} delivered nothing for {} s (a FIFO waits for a writer); start the program that writes to it first, or give a regular file",
                            self.what,
                            IDLE_DEADLINE.as_secs()
                        ),
                    ));
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// [`read`], as UTF-8 text.
///
/// # Errors
/// As [`read`], and `input.not-utf8` for bytes that are not UTF-8.
pub fn read_text(path: &Path, bound: &Bound<'_>) -> Result<String, Diagnostic> {
    let bytes = read(path, bound)?;
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            "input.not-utf8",
            format!("{} {} is not UTF-8 text", bound.what, path.display()),
            format!(
                "byte {} starts a sequence that is not UTF-8",
                e.utf8_error().valid_up_to()
            ),
            "save the file as UTF-8",
        )
        .with_surface(Surface::file(path))
        .with_value(path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bound<'static> = Bound {
        what: "test input",
        max_bytes: 1024,
        named: false,
    };

    #[test]
    fn a_regular_file_within_the_bound_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_text(&p, &SMALL).unwrap(), "hello");
    }

    #[test]
    fn a_sparse_file_is_refused_by_its_size_unread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sparse");
        let f = File::create(&p).unwrap();
        f.set_len(4 << 30).unwrap();
        let err = read(&p, &SMALL).unwrap_err();
        assert_eq!(err.code(), "input.too-large");
        assert!(
            err.why().contains("4 GiB (4294967296 bytes)"),
            "{}",
            err.why()
        );
        assert!(
            err.why().contains("at most 1 KiB (1024 bytes)"),
            "{}",
            err.why()
        );
        assert!(err.next().contains(LIMIT_ENV), "{}", err.next());
        assert!(err.what().contains(&p.display().to_string()));
    }

    #[test]
    fn a_fifo_found_on_its_own_is_refused_unopened() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        let c = std::ffi::CString::new(p.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read(&p, &SMALL).unwrap_err();
        assert_eq!(err.code(), "input.not-a-file");
        assert!(err.why().contains("a FIFO (named pipe)"), "{}", err.why());
    }

    #[test]
    fn a_named_endless_device_is_read_up_to_the_limit() {
        let named = Bound {
            named: true,
            ..SMALL
        };
        let err = read(Path::new("/dev/zero"), &named).unwrap_err();
        assert_eq!(err.code(), "input.too-large");
        assert!(err.why().contains("a character device"), "{}", err.why());
        // Refused when not named.
        let err = read(Path::new("/dev/zero"), &SMALL).unwrap_err();
        assert_eq!(err.code(), "input.not-a-file");
    }

    #[test]
    fn a_named_fifo_with_a_writer_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        let c = std::ffi::CString::new(p.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { mkfifo(c.as_ptr(), 0o600) }, 0);
        let writer = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::write(p, "from a pipe").unwrap())
        };
        let named = Bound {
            named: true,
            ..SMALL
        };
        assert_eq!(read_text(&p, &named).unwrap(), "from a pipe");
        writer.join().unwrap();
    }

    #[test]
    fn a_stream_is_refused_past_its_limit() {
        let named = Bound {
            named: true,
            ..SMALL
        };
        let mut sink = Vec::new();
        let err = stream(Some(Path::new("/dev/zero")), &named)
            .unwrap()
            .read_to_end(&mut sink)
            .unwrap_err();
        assert!(
            err.to_string().contains("more than the limit of 1 KiB"),
            "{err}"
        );
        assert_eq!(sink.len(), 1024);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "x".repeat(2000)).unwrap();
        assert_eq!(
            stream(Some(&p), &SMALL).err().unwrap().code(),
            "input.too-large"
        );
        std::fs::write(&p, "small").unwrap();
        let mut text = String::new();
        stream(Some(&p), &SMALL)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "small");
    }

    #[test]
    fn sizes_read_as_units() {
        assert_eq!(size(12), "12 bytes");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(21 * 1024 * 1024 + 1024 * 512), "21.5 MiB");
    }

    unsafe extern "C" {
        fn mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
}
