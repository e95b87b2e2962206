//! The signals that end a mode the way Ctrl+C does, shared by every mode
//! (`smith eval`, `smith rpc`, `smith mcp` and the interface).
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT ([`ENDING_SIGNALS`]) do not end the
//! process where it stands: an async-signal-safe handler records the
//! signal, and the mode notices it — by polling [`take`] from its loop, or
//! from a thread blocked in [`wait`] — aborts what runs through the
//! runtime's own abort path, waits at most [`GRACE`] for the abort to be
//! recorded, restores the terminal, prints how to continue, and exits with
//! [`exit_code`] (128 plus the signal's number).
//!
//! A signal the process was started with ignored (`nohup` ignores SIGHUP)
//! stays ignored. A second ending signal (a process group's and the
//! process's own often arrive together) is recorded like the first: a mode
//! that polls [`take`] may stop waiting then; the others are bounded by
//! [`GRACE`] anyway, and [`end_by_default`] ends a mode whose loop is held
//! up.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// The signals that end a mode the way Ctrl+C does.
pub const ENDING_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// How long an aborted run or call may take to be recorded as ended before
/// the mode stops waiting for it.
pub const GRACE: Duration = Duration::from_secs(5);

/// The last ending signal that arrived (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Set by the handler, cleared by [`take`].
static PENDING: AtomicBool = AtomicBool::new(false);
/// The write end of the pipe [`wait`] reads (-1: none).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// The read end of that pipe (-1: none).
static PIPE_READ: AtomicI32 = AtomicI32::new(-1);
static INSTALLED: std::sync::Once = std::sync::Once::new();

extern "C" fn on_signal(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    PENDING.store(true, Ordering::SeqCst);
    let fd = PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        // The signal's number fits a byte; a full pipe already wakes the
        // reader. write(2) is async-signal-safe.
        let byte = [u8::try_from(signal).unwrap_or(u8::MAX)];
        // SAFETY: writes one byte from a valid buffer.
        let _ = unsafe { libc::write(fd, byte.as_ptr().cast(), 1) };
    }
}

/// Routes the ending signals to the handler, unless the process was
/// started with one ignored. Installing again does nothing.
pub fn install() {
    INSTALLED.call_once(|| {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 fills two descriptors on success.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0 {
            // The handler never blocks on a full pipe.
            // SAFETY: plain descriptor flag calls on the fresh write end.
            unsafe {
                let flags = libc::fcntl(fds[1], libc::F_GETFL);
                libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
            PIPE_READ.store(fds[0], Ordering::SeqCst);
            PIPE_WRITE.store(fds[1], Ordering::SeqCst);
        }
        for signal in ENDING_SIGNALS {
            crate::term::catch_unless_ignored(signal, on_signal);
        }
    });
}

/// The ending signal that arrived since the last call, if any.
pub fn take() -> Option<libc::c_int> {
    PENDING
        .swap(false, Ordering::SeqCst)
        .then(|| SIGNAL.load(Ordering::SeqCst))
}

/// The last ending signal that arrived, if any.
pub fn received() -> Option<libc::c_int> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Blocks until an ending signal arrives (after [`install`]) and returns
/// it. Meant for one thread that waits for the whole run of a mode; it
/// returns `None` when nothing can be waited for (the pipe could not be
/// made).
pub fn wait() -> Option<libc::c_int> {
    let fd = PIPE_READ.load(Ordering::SeqCst);
    if fd < 0 {
        return None;
    }
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reads one byte into a valid buffer.
        let n = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        if n == 1 {
            PENDING.store(false, Ordering::SeqCst);
            return Some(SIGNAL.load(Ordering::SeqCst));
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}

/// The exit code of a mode ended by `signal`: 128 plus its number (130
/// for SIGINT, 143 for SIGTERM, 129 for SIGHUP, 131 for SIGQUIT).
pub fn exit_code(signal: libc::c_int) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// Points standard output and error at `/dev/null`: after a hangup the
/// terminal is gone, and a write to it would fail (or, for standard
/// error's messages, panic) before the run is recorded as ended.
pub fn detach_output() {
    // SAFETY: plain descriptor calls; the descriptor opened here is closed
    // once duplicated.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, libc::STDOUT_FILENO);
            libc::dup2(null, libc::STDERR_FILENO);
            libc::close(null);
        }
    }
}

/// Detaches the output ([`detach_output`]) when `signal` is SIGHUP.
pub fn detach_after_hangup(signal: libc::c_int) {
    if signal == libc::SIGHUP {
        detach_output();
    }
}

/// Restores the terminal (when the interface changed it) and ends the
/// process by `signal`'s default action: the last resort of a mode whose
/// loop did not end in time after the signal.
pub fn end_by_default(signal: libc::c_int) -> ! {
    crate::term::restore();
    // SAFETY: resetting to the default action and raising end the process
    // by the signal.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    // A signal that does not end the process (it cannot be one of the
    // ending signals) still ends it.
    std::process::exit(i32::from(exit_code(signal)))
}
