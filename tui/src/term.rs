//! The terminal backend on crossterm and libc: raw mode, the alternate
//! screen, bracketed paste, focus events, synchronized output, a bounded
//! capability probe, and restoring the terminal on every way out.
//!
//! # Restoring
//!
//! Entering saves the terminal's termios and records, in statics that a
//! signal handler may read, what must be undone. [`restore`] undoes it
//! exactly once (an atomic flag), using only `write(2)` and `tcsetattr(3)`,
//! which are async-signal-safe. It runs from:
//!
//! * [`Terminal`]'s `Drop` — normal exit and errors that unwind the stack;
//! * a panic hook that runs before the previous hook, so the panic message
//!   is printed on the restored screen (only for panics on the thread that
//!   entered: a worker thread's panic does not end the interface);
//! * handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGABRT (so
//!   `abort()` too): they restore, reset the signal to its default action
//!   and raise it again, so the process still ends by that signal. A
//!   signal inherited as ignored (`nohup`) stays ignored. The interface
//!   replaces the first four with [`crate::signals`] right after entering:
//!   it then aborts the running turn, waits for it to be recorded, and
//!   leaves through `Drop` (or, when its loop is held up, restores and
//!   ends by the signal).
//!
//! # Capabilities
//!
//! Detection is conservative. After raw mode is on, one probe asks the
//! terminal for its kitty keyboard flags (`CSI ? u`), whether it knows
//! synchronized output (`DECRQM 2026`) and its primary device attributes
//! (`DA1`, which every terminal answers, so its reply ends the probe). The
//! probe waits at most [`PROBE_BUDGET`]; what did not answer by then is
//! taken as unsupported. `SMITH_TUI_CAPS` (e.g. `sync=on,keyboard=off,
//! clipboard=on,probe=off`) overrides any answer. Colors are off when
//! `NO_COLOR` is set and non-empty, or configuration says never.

use std::io::Write;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use bumpalo::Bump;

use crate::app::App;
use crate::buffer::Buffer;
use crate::diff::{DiffOptions, diff};

/// The longest the capability probe may delay startup.
pub const PROBE_BUDGET: Duration = Duration::from_millis(100);

/// What the terminal supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Colors may be used.
    pub color: bool,
    /// Synchronized output (DEC mode 2026).
    pub synchronized: bool,
    /// The kitty keyboard protocol (disambiguated Esc, Alt+Enter, Shift+Enter).
    pub keyboard: bool,
    /// Clipboard writes with OSC 52.
    pub clipboard: bool,
    /// Ask for xterm's modifyOtherKeys when the kitty keyboard protocol is
    /// not spoken (on unless `SMITH_TUI_CAPS` says `modkeys=off`): nothing
    /// answers the request, so only an override turns it off.
    pub modify_other_keys: bool,
}

impl Capabilities {
    /// Nothing beyond plain text and raw input.
    pub const PLAIN: Capabilities = Capabilities {
        color: false,
        synchronized: false,
        keyboard: false,
        clipboard: false,
        modify_other_keys: false,
    };
}

/// How to start the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermConfig {
    /// Colors allowed by configuration (`color` is not `never`); `NO_COLOR`
    /// still turns them off.
    pub color: bool,
    /// Run the probe (off: only overrides and environment decide).
    pub probe: bool,
    /// Capture the mouse (`tui.mouse`): wheel and button reports come to
    /// the interface instead of the terminal's own selection.
    pub mouse: bool,
}

impl Default for TermConfig {
    fn default() -> Self {
        Self {
            color: true,
            probe: true,
            mouse: true,
        }
    }
}

/// Turns on mouse button and wheel reports in SGR encoding.
pub const MOUSE_ON: &[u8] = b"\x1b[?1000h\x1b[?1006h";

/// What entering writes: the alternate screen, hidden cursor, bracketed
/// paste and focus reports, a cleared screen, and mouse capture only when
/// `config.mouse` is on.
pub fn enter_sequence(config: &TermConfig) -> Vec<u8> {
    let mut out = b"\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[?1004h".to_vec();
    if config.mouse {
        out.extend_from_slice(MOUSE_ON);
    }
    out.extend_from_slice(b"\x1b[2J");
    out
}

/// A terminal backend failure: what happened, why, and what to do.
#[derive(Debug)]
pub struct TermError {
    pub(crate) what: String,
    pub(crate) source: std::io::Error,
}

impl std::fmt::Display for TermError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}; smith's interface needs an interactive terminal — run it in one, or use `smith eval \"prompt\"` without a terminal",
            self.what, self.source
        )
    }
}

// The cause is part of the message (what, the OS error, what to do), so it
// is not also reported as a source.
impl std::error::Error for TermError {}

pub(crate) fn err(what: impl Into<String>, source: std::io::Error) -> TermError {
    TermError {
        what: what.into(),
        source,
    }
}

// ---- the restore state, readable from signal handlers --------------------

struct SavedTermios(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::termios>>);
// SAFETY: written once before ACTIVE is set (Release) and only read after
// ACTIVE is observed (Acquire); never written while a reader may run.
unsafe impl Sync for SavedTermios {}

static SAVED: SavedTermios =
    SavedTermios(std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()));
static ACTIVE: AtomicBool = AtomicBool::new(false);
static KEYBOARD_PUSHED: AtomicBool = AtomicBool::new(false);
static MODIFY_OTHER_KEYS_SET: AtomicBool = AtomicBool::new(false);
static TTY_FD: AtomicI32 = AtomicI32::new(-1);
static OUT_FD: AtomicI32 = AtomicI32::new(1);
static HOOKS: std::sync::Once = std::sync::Once::new();
/// The thread that entered interface mode: only its panics end the
/// interface (a panic on a worker thread does not stop the loop, so the
/// terminal must stay as the interface set it).
static UI_THREAD: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

/// What leaving writes: end any synchronized update, reset attributes,
/// disable mouse reports, bracketed paste and focus reports, show the
/// cursor, leave the alternate screen.
pub const RESTORE: &[u8] =
    b"\x1b[?2026l\x1b[0m\x1b[?1006l\x1b[?1000l\x1b[?2004l\x1b[?1004l\x1b[?25h\x1b[?1049l";
const POP_KEYBOARD: &[u8] = b"\x1b[<u";
/// Asks for xterm's modifyOtherKeys at level 1 where the kitty keyboard
/// protocol is not spoken: xterm then sends keys that are otherwise
/// ambiguous, Shift+Enter above all, as `CSI 27 ; modifiers ; code ~`, and
/// tmux with `extended-keys` on sends them as `CSI code ; modifiers u` (it
/// sends them only to an application that asked). A terminal that does not
/// know the request ignores it.
pub const MODIFY_OTHER_KEYS_ON: &[u8] = b"\x1b[>4;1m";
/// Turns modifyOtherKeys off again, on every way out.
pub const MODIFY_OTHER_KEYS_OFF: &[u8] = b"\x1b[>4;0m";

fn write_all_fd(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a valid slice; write(2) is async-signal-safe.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Restores the terminal if the interface changed it; does nothing
/// otherwise or when already restored. Async-signal-safe.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::AcqRel) {
        return;
    }
    let out = OUT_FD.load(Ordering::Relaxed);
    if KEYBOARD_PUSHED.swap(false, Ordering::Relaxed) {
        write_all_fd(out, POP_KEYBOARD);
    }
    if MODIFY_OTHER_KEYS_SET.swap(false, Ordering::Relaxed) {
        write_all_fd(out, MODIFY_OTHER_KEYS_OFF);
    }
    write_all_fd(out, RESTORE);
    let tty = TTY_FD.load(Ordering::Relaxed);
    if tty >= 0 {
        // SAFETY: SAVED was initialised before ACTIVE was set; tcsetattr
        // is async-signal-safe.
        unsafe {
            libc::tcsetattr(tty, libc::TCSANOW, (*SAVED.0.get()).as_ptr());
        }
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    restore();
    // SAFETY: resetting to the default action and re-raising are
    // async-signal-safe; the process then ends by the same signal.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// The signals whose default action ends the process and after which the
/// terminal is restored.
pub const SIGNALS: [libc::c_int; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGABRT,
];

fn install_hooks() {
    HOOKS.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if UI_THREAD.get() == Some(&std::thread::current().id()) {
                restore();
            }
            previous(info);
        }));
        for signal in SIGNALS {
            catch_unless_ignored(signal, on_signal);
        }
    });
}

/// Routes `signal` to `handler`, which must be async-signal-safe, unless
/// the process was started with it ignored (`nohup` ignores SIGHUP, a
/// background job SIGINT and SIGQUIT): that choice of the parent stands.
pub fn catch_unless_ignored(signal: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: sigaction is queried into and set from zeroed structs with
    // an empty mask and a valid handler.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
        {
            return;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

fn tty_fd() -> Result<RawFd, TermError> {
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(0) } == 1 {
        return Ok(0);
    }
    let path = c"/dev/tty";
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(err(
            "standard input is not a terminal and /dev/tty cannot be opened",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(fd)
}

/// Parses overrides like `sync=on,keyboard=off,clipboard=on,color=off`.
pub fn apply_overrides(caps: &mut Capabilities, probe: &mut bool, spec: &str) {
    for part in spec.split(',') {
        let Some((key, value)) = part.split_once('=') else {
            continue;
        };
        let on = matches!(value.trim(), "on" | "1" | "true" | "yes");
        match key.trim() {
            "sync" | "synchronized" => caps.synchronized = on,
            "keyboard" | "kitty" => caps.keyboard = on,
            "clipboard" | "osc52" => caps.clipboard = on,
            "modkeys" | "modify-other-keys" => caps.modify_other_keys = on,
            "color" => caps.color = on,
            "probe" => *probe = on,
            _ => {}
        }
    }
}

/// What the probe learned from the terminal's replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProbeReply {
    /// The terminal answered the kitty keyboard query.
    pub keyboard: bool,
    /// The terminal reported mode 2026 as known (set or reset).
    pub synchronized: bool,
    /// The terminal answered DA1 (so everything before it was answered).
    pub complete: bool,
}

/// Reads what `bytes` (the terminal's replies) say.
pub fn parse_probe(bytes: &[u8]) -> ProbeReply {
    let mut reply = ProbeReply::default();
    let mut i = 0;
    while i + 2 < bytes.len() {
        if bytes[i] == 0x1b && bytes[i + 1] == b'[' && bytes[i + 2] == b'?' {
            let rest = &bytes[i + 3..];
            let end = rest
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b';' || *b == b'$'))
                .unwrap_or(rest.len());
            let body = &rest[..end];
            match rest.get(end) {
                Some(b'u') => reply.keyboard = true,
                Some(b'y') if body.starts_with(b"2026;") => {
                    reply.synchronized = matches!(body.get(5), Some(b'1' | b'2'));
                }
                Some(b'c') => reply.complete = true,
                _ => {}
            }
            i += 3 + end;
        } else {
            i += 1;
        }
    }
    reply
}

fn probe(tty: RawFd, out: RawFd, budget: Duration) -> ProbeReply {
    write_all_fd(out, b"\x1b[?u\x1b[?2026$p\x1b[c");
    let deadline = Instant::now() + budget;
    let mut got = [0u8; 256];
    let mut len = 0usize;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || len == got.len() {
            break;
        }
        let mut pfd = libc::pollfd {
            fd: tty,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as libc::c_int) };
        if ready <= 0 {
            break;
        }
        // SAFETY: reads into the unused tail of `got`.
        let n = unsafe { libc::read(tty, got[len..].as_mut_ptr().cast(), got.len() - len) };
        if n <= 0 {
            break;
        }
        len += n as usize;
        if parse_probe(&got[..len]).complete {
            break;
        }
    }
    parse_probe(&got[..len])
}

/// Whether the environment names a terminal known to accept clipboard
/// writes with OSC 52 (`TERM` or `TERM_PROGRAM`: kitty, WezTerm, foot,
/// Alacritty, Ghostty, iTerm2): what the interface starts from, before
/// `SMITH_TUI_CAPS`, since no terminal answers a query for it.
pub fn env_clipboard() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    let program = std::env::var("TERM_PROGRAM").unwrap_or_default();
    ["kitty", "wezterm", "foot", "alacritty", "ghostty"]
        .iter()
        .any(|t| term.contains(t) || program.to_ascii_lowercase().contains(t))
        || program == "iTerm.app"
}

/// Whether `NO_COLOR` asks for no color (set and non-empty).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The terminal in interface mode. Dropping it restores the terminal.
#[derive(Debug)]
pub struct Terminal {
    caps: Capabilities,
    previous: Buffer,
    screen: Buffer,
    bump: Bump,
    bytes: Vec<u8>,
    first: bool,
    opts: DiffOptions,
    /// Bytes written by the last frame.
    pub last_frame_bytes: usize,
}

/// The terminal's size in cells.
pub fn size() -> (u16, u16) {
    crossterm::terminal::size().unwrap_or((80, 24))
}

impl Terminal {
    /// Enters interface mode: raw mode, alternate screen, hidden cursor,
    /// bracketed paste, focus reports, and the kitty keyboard protocol when
    /// the probe found it, xterm's modifyOtherKeys otherwise.
    ///
    /// # Errors
    ///
    /// When there is no terminal or its mode cannot be read or set; the
    /// terminal is left as it was.
    pub fn enter(config: TermConfig) -> Result<Terminal, TermError> {
        let tty = tty_fd()?;
        let mut saved = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills the termios on success.
        if unsafe { libc::tcgetattr(tty, saved.as_mut_ptr()) } != 0 {
            return Err(err(
                "cannot read the terminal's mode",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: initialised by the successful tcgetattr above.
        let saved = unsafe { saved.assume_init() };
        if ACTIVE.load(Ordering::Acquire) {
            return Err(err(
                "the interface is already active in this process",
                std::io::Error::other("a second Terminal::enter"),
            ));
        }
        // SAFETY: not ACTIVE, so no handler reads SAVED now.
        unsafe {
            (*SAVED.0.get()).write(saved);
        }
        TTY_FD.store(tty, Ordering::Relaxed);
        OUT_FD.store(1, Ordering::Relaxed);
        let _ = UI_THREAD.set(std::thread::current().id());
        install_hooks();
        // crossterm's input parser reads byte 0x0A as Enter unless it knows
        // raw mode is on; with its own raw-mode flag set, 0x0A is Ctrl+J (a
        // new line in the input), distinct from Enter (0x0D). Entered first,
        // it keeps the same original mode as `SAVED`, so leaving it (in
        // `Drop`, even after a panic already restored) writes that mode.
        if let Err(source) = crossterm::terminal::enable_raw_mode() {
            return Err(err("cannot put the terminal in raw mode", source));
        }
        let mut raw = saved;
        // SAFETY: cfmakeraw edits the struct in place.
        unsafe { libc::cfmakeraw(&mut raw) };
        // SAFETY: a valid termios for this descriptor.
        if unsafe { libc::tcsetattr(tty, libc::TCSANOW, &raw) } != 0 {
            let _ = crossterm::terminal::disable_raw_mode();
            return Err(err(
                "cannot put the terminal in raw mode",
                std::io::Error::last_os_error(),
            ));
        }
        ACTIVE.store(true, Ordering::Release);
        write_all_fd(1, &enter_sequence(&config));

        let mut caps = Capabilities {
            color: config.color && !no_color(),
            synchronized: false,
            keyboard: false,
            clipboard: env_clipboard(),
            modify_other_keys: true,
        };
        let mut run_probe = config.probe;
        let overrides = std::env::var("SMITH_TUI_CAPS").unwrap_or_default();
        let mut scratch = Capabilities::PLAIN;
        apply_overrides(&mut scratch, &mut run_probe, &overrides);
        if run_probe {
            let reply = probe(tty, 1, PROBE_BUDGET);
            caps.keyboard = reply.keyboard;
            caps.synchronized = reply.synchronized;
        }
        apply_overrides(&mut caps, &mut run_probe, &overrides);
        if caps.keyboard {
            // Disambiguate escape codes: Esc, Alt+Enter and Shift+Enter arrive
            // as distinct keys.
            write_all_fd(1, b"\x1b[>1u");
            KEYBOARD_PUSHED.store(true, Ordering::Relaxed);
        } else if caps.modify_other_keys {
            // Without it, modifyOtherKeys tells Shift+Enter from Enter in
            // xterm and in tmux with `extended-keys` on.
            MODIFY_OTHER_KEYS_SET.store(true, Ordering::Relaxed);
            write_all_fd(1, MODIFY_OTHER_KEYS_ON);
        }
        let (w, h) = size();
        Ok(Terminal {
            caps,
            previous: Buffer::new(w, h),
            screen: Buffer::new(w, h),
            bump: Bump::with_capacity(64 * 1024),
            bytes: Vec::with_capacity(64 * 1024),
            first: true,
            opts: DiffOptions {
                color: caps.color,
                synchronized: caps.synchronized,
            },
            last_frame_bytes: 0,
        })
    }

    /// What the terminal supports.
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// Draws a frame of `app` at the terminal's current size, writing only
    /// changed cells.
    ///
    /// # Errors
    ///
    /// When the terminal cannot be written.
    pub fn draw(&mut self, app: &mut App) -> std::io::Result<()> {
        let (w, h) = size();
        self.bump.reset();
        app.prepare(w, h);
        std::mem::swap(&mut self.previous, &mut self.screen);
        if self.screen.width() != w || self.screen.height() != h {
            self.screen.resize(w, h);
        }
        app.render(&mut self.screen, &self.bump);
        self.bytes.clear();
        let prev = if self.first {
            None
        } else {
            Some(&self.previous)
        };
        diff(prev, &self.screen, &self.opts, &mut self.bytes);
        self.first = false;
        self.last_frame_bytes = self.bytes.len();
        let mut out = std::io::stdout().lock();
        out.write_all(&self.bytes)?;
        out.flush()
    }

    /// Copies `text` to the clipboard with OSC 52 where it can reach it
    /// (see [`clipboard_route`]); says what happened, in words for the
    /// user.
    ///
    /// # Errors
    ///
    /// When the terminal cannot be written.
    pub fn copy(&mut self, text: &str) -> std::io::Result<Copied> {
        let tmux = std::env::var("TMUX")
            .ok()
            .filter(|v| !v.is_empty())
            .map(|socket| tmux_clipboard_options(&socket));
        let route = clipboard_route(&ClipboardSetting {
            known: self.caps.clipboard,
            tmux,
            term: std::env::var("TERM").unwrap_or_default(),
            ssh: std::env::var_os("SSH_TTY").is_some()
                || std::env::var_os("SSH_CONNECTION").is_some(),
        });
        let (passthrough, said) = match route {
            ClipboardRoute::Osc52(said) => (false, said),
            ClipboardRoute::TmuxPassthrough(said) => (true, said),
            ClipboardRoute::NotSent(why) => return Ok(Copied::NotSent(why)),
        };
        let mut out = std::io::stdout().lock();
        out.write_all(&osc52(text, passthrough))?;
        out.flush()?;
        Ok(Copied::Sent(said))
    }
}

/// What [`Terminal::copy`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Copied {
    /// The clipboard write went out; the words say where to.
    Sent(&'static str),
    /// Nothing was sent; the words say why and what to do.
    NotSent(String),
}

/// What decides where a clipboard write can go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClipboardSetting {
    /// The terminal is known to accept OSC 52, or `SMITH_TUI_CAPS` says so.
    pub known: bool,
    /// Inside tmux (`TMUX` set): its clipboard options, or why they could
    /// not be read.
    pub tmux: Option<Result<TmuxClipboard, String>>,
    /// `TERM`, for the message.
    pub term: String,
    /// Running over SSH (`SSH_TTY` or `SSH_CONNECTION` set).
    pub ssh: bool,
}

/// tmux's options that decide what it does with a program's OSC 52.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxClipboard {
    /// `set-clipboard`: `on` takes a program's write into tmux's buffer
    /// and passes it to the outer terminal; `external` (the default) and
    /// `off` drop it.
    pub set_clipboard: String,
    /// `allow-passthrough` (tmux 3.3 and later): `on` or `all` lets a
    /// program's DCS passthrough reach the outer terminal.
    pub allow_passthrough: String,
}

/// Where a clipboard write goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClipboardRoute {
    /// A plain OSC 52 (to the terminal, or to tmux, which takes it).
    Osc52(&'static str),
    /// An OSC 52 wrapped in tmux's DCS passthrough, to the outer terminal.
    TmuxPassthrough(&'static str),
    /// Nothing can carry it: why, and what to do.
    NotSent(String),
}

/// The route for a clipboard write. Inside tmux tmux decides, whatever the
/// terminal is: with `set-clipboard on` it takes a plain OSC 52 (into its
/// paste buffer, and on to the outer terminal when that accepts it); with
/// `allow-passthrough` on the write is wrapped to pass through; otherwise
/// tmux would drop it, and the user is told the one command that changes
/// that. Outside tmux a plain OSC 52 goes to a terminal known to accept it
/// (or declared to with `SMITH_TUI_CAPS=clipboard=on`); for any other the
/// user is told why nothing was sent and how to say the terminal accepts
/// it — over SSH the terminal that decides is the local one.
pub fn clipboard_route(setting: &ClipboardSetting) -> ClipboardRoute {
    match &setting.tmux {
        Some(Ok(tmux)) if tmux.set_clipboard == "on" => ClipboardRoute::Osc52(
            "copied: tmux keeps it in its paste buffer and passes it to the outer terminal's clipboard",
        ),
        Some(Ok(tmux)) if matches!(tmux.allow_passthrough.as_str(), "on" | "all") => {
            ClipboardRoute::TmuxPassthrough(
                "copied through tmux's passthrough to the outer terminal's clipboard",
            )
        }
        Some(Ok(tmux)) => ClipboardRoute::NotSent(format!(
            "not copied: tmux drops clipboard writes from programs (its set-clipboard is \"{}\" and allow-passthrough is \"{}\"); run `tmux set -g set-clipboard on` and copy again",
            tmux.set_clipboard, tmux.allow_passthrough
        )),
        Some(Err(why)) => ClipboardRoute::NotSent(format!(
            "not copied: inside tmux, but its clipboard options could not be read ({why}); run `tmux set -g set-clipboard on` and copy again"
        )),
        None if setting.known => ClipboardRoute::Osc52("copied to the clipboard"),
        None => {
            let term = if setting.term.is_empty() {
                "TERM unset".to_owned()
            } else {
                format!("TERM={}", setting.term)
            };
            let over_ssh = if setting.ssh {
                " (over SSH the local terminal is the one that must accept it)"
            } else {
                ""
            };
            ClipboardRoute::NotSent(format!(
                "not copied: this terminal ({term}) is not known to accept OSC 52 clipboard writes{over_ssh}; if it does, set SMITH_TUI_CAPS=clipboard=on"
            ))
        }
    }
}

/// Reads tmux's clipboard options from the server `TMUX` names (the value
/// of that variable).
pub fn tmux_clipboard_options(tmux_env: &str) -> Result<TmuxClipboard, String> {
    let read = |option: &str| -> Result<String, String> {
        let out = std::process::Command::new("tmux")
            .args(["show-options", "-gqv", option])
            .env("TMUX", tmux_env)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output()
            .map_err(|err| format!("`tmux show-options` could not run: {err}"))?;
        if !out.status.success() {
            return Err(format!(
                "`tmux show-options -gqv {option}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    Ok(TmuxClipboard {
        set_clipboard: read("set-clipboard")?,
        // Older tmux has no such option: empty, which counts as off.
        allow_passthrough: read("allow-passthrough").unwrap_or_default(),
    })
}

/// The OSC 52 write of `text` to the clipboard; wrapped in tmux's DCS
/// passthrough (`ESC P tmux; ... ESC \`, every ESC inside doubled) when
/// `passthrough`.
pub fn osc52(text: &str, passthrough: bool) -> Vec<u8> {
    let body = base64(text.as_bytes());
    let mut out = Vec::with_capacity(body.len() + 16);
    if passthrough {
        out.extend_from_slice(b"\x1bPtmux;\x1b\x1b]52;c;");
        out.extend_from_slice(body.as_bytes());
        out.extend_from_slice(b"\x07\x1b\\");
    } else {
        out.extend_from_slice(b"\x1b]52;c;");
        out.extend_from_slice(body.as_bytes());
        out.extend_from_slice(b"\x07");
    }
    out
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // Clears crossterm's raw-mode flag (so a later `enter` sets it
        // again), writing the original mode, which `restore` writes too.
        let _ = crossterm::terminal::disable_raw_mode();
        restore();
    }
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                s.push(char::from(T[(n >> (18 - 6 * k)) as usize & 63]));
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn mouse_capture_is_enabled_only_when_configured() {
        let on = enter_sequence(&TermConfig::default());
        assert!(on.windows(MOUSE_ON.len()).any(|w| w == MOUSE_ON));
        let off = enter_sequence(&TermConfig {
            mouse: false,
            ..TermConfig::default()
        });
        assert!(!off.windows(MOUSE_ON.len()).any(|w| w == MOUSE_ON));
        assert!(
            !off.windows(8)
                .any(|w| w == b"\x1b[?1000h" || w == b"\x1b[?1006h"),
            "{off:?}"
        );
        assert!(off.starts_with(b"\x1b[?1049h") && on.starts_with(b"\x1b[?1049h"));
        // Leaving always turns reports off, whatever entering did.
        assert!(RESTORE.windows(8).any(|w| w == b"\x1b[?1000l"));
        assert!(RESTORE.windows(8).any(|w| w == b"\x1b[?1006l"));
    }

    use super::*;

    fn setting(known: bool, tmux: Option<(&str, &str)>) -> ClipboardSetting {
        ClipboardSetting {
            known,
            tmux: tmux.map(|(set, pass)| {
                Ok(TmuxClipboard {
                    set_clipboard: set.to_owned(),
                    allow_passthrough: pass.to_owned(),
                })
            }),
            term: "xterm-256color".to_owned(),
            ssh: false,
        }
    }

    #[test]
    fn tmux_decides_the_clipboard_route_whatever_the_terminal() {
        // set-clipboard on: tmux takes a plain OSC 52.
        for known in [false, true] {
            assert!(matches!(
                clipboard_route(&setting(known, Some(("on", "off")))),
                ClipboardRoute::Osc52(said) if said.contains("tmux")
            ));
        }
        // The default (external) drops programs' writes: passthrough if
        // allowed, else an honest refusal naming the command.
        for pass in ["on", "all"] {
            assert!(matches!(
                clipboard_route(&setting(false, Some(("external", pass)))),
                ClipboardRoute::TmuxPassthrough(_)
            ));
        }
        let ClipboardRoute::NotSent(why) =
            clipboard_route(&setting(true, Some(("external", "off"))))
        else {
            panic!("tmux with external and no passthrough cannot carry the write");
        };
        assert!(why.contains("set-clipboard is \"external\""), "{why}");
        assert!(why.contains("tmux set -g set-clipboard on"), "{why}");
        let mut unreadable = setting(true, None);
        unreadable.tmux = Some(Err(
            "`tmux show-options` could not run: not found".to_owned()
        ));
        assert!(matches!(
            clipboard_route(&unreadable),
            ClipboardRoute::NotSent(why) if why.contains("could not run")
        ));
    }

    #[test]
    fn outside_tmux_only_a_terminal_known_to_accept_osc52_is_written() {
        assert_eq!(
            clipboard_route(&setting(true, None)),
            ClipboardRoute::Osc52("copied to the clipboard")
        );
        let ClipboardRoute::NotSent(why) = clipboard_route(&setting(false, None)) else {
            panic!("an unknown terminal is not written to");
        };
        assert!(why.contains("TERM=xterm-256color"), "{why}");
        assert!(why.contains("SMITH_TUI_CAPS=clipboard=on"), "{why}");
        assert!(!why.contains("SSH"), "{why}");
        let mut ssh = setting(false, None);
        ssh.ssh = true;
        let ClipboardRoute::NotSent(why) = clipboard_route(&ssh) else {
            panic!("an unknown terminal is not written to");
        };
        assert!(why.contains("over SSH the local terminal"), "{why}");
    }

    #[test]
    fn osc52_is_wrapped_for_tmux_passthrough_with_its_escapes_doubled() {
        assert_eq!(osc52("hi", false), b"\x1b]52;c;aGk=\x07");
        assert_eq!(osc52("hi", true), b"\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\");
    }

    #[test]
    fn tmux_options_are_read_from_the_server_tmux_names() {
        // A private tmux server (its own socket, no configuration).
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock");
        let tmux = |args: &[&str]| {
            let status = std::process::Command::new("tmux")
                .arg("-S")
                .arg(&socket)
                .args(["-f", "/dev/null"])
                .args(args)
                .env_remove("TMUX")
                .status()
                .expect("tmux runs (scripts/setup installs it)");
            assert!(status.success(), "tmux {args:?}");
        };
        tmux(&["new-session", "-d", "-s", "t", "sleep 30"]);
        let env = format!("{},0,0", socket.display());
        let read = tmux_clipboard_options(&env);
        tmux(&["set", "-g", "set-clipboard", "on"]);
        let on = tmux_clipboard_options(&env);
        tmux(&["set", "-g", "set-clipboard", "external"]);
        tmux(&["set", "-g", "allow-passthrough", "on"]);
        let pass = tmux_clipboard_options(&env);
        tmux(&["kill-server"]);
        assert_eq!(read.unwrap().set_clipboard, "external", "tmux's default");
        assert_eq!(on.unwrap().set_clipboard, "on");
        let pass = pass.unwrap();
        assert_eq!(
            (pass.set_clipboard.as_str(), pass.allow_passthrough.as_str()),
            ("external", "on")
        );
        // A server that is not there is a reason, not a guess.
        assert!(tmux_clipboard_options(&env).is_err());
    }

    #[test]
    fn probe_replies_are_parsed() {
        let r = parse_probe(b"\x1b[?1u\x1b[?2026;2$y\x1b[?62;22c");
        assert_eq!(
            r,
            ProbeReply {
                keyboard: true,
                synchronized: true,
                complete: true
            }
        );
        let r = parse_probe(b"\x1b[?2026;0$y\x1b[?1;2c");
        assert_eq!(
            r,
            ProbeReply {
                keyboard: false,
                synchronized: false,
                complete: true
            }
        );
        assert_eq!(parse_probe(b"\x1b[?1"), ProbeReply::default());
    }

    #[test]
    fn overrides_win() {
        let mut caps = Capabilities::PLAIN;
        let mut probe = true;
        apply_overrides(
            &mut caps,
            &mut probe,
            "sync=on, clipboard=1,probe=off,bogus",
        );
        assert!(caps.synchronized && caps.clipboard && !caps.keyboard && !probe);
        caps.modify_other_keys = true;
        apply_overrides(&mut caps, &mut probe, "modkeys=off");
        assert!(!caps.modify_other_keys);
        apply_overrides(&mut caps, &mut probe, "modify-other-keys=on");
        assert!(caps.modify_other_keys);
    }

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
