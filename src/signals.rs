//! The servers' way of ending on a signal (`smith rpc`, `smith mcp`): the
//! ending signals ([`smith_tui::signals`]) wake a thread that ends what
//! runs through the server's own abort path, prints how to continue the
//! session, and exits with 128 plus the signal's number. Their request
//! loops block reading standard input, so the thread, not the loop, does
//! it.

use std::io::Write;
use std::thread::JoinHandle;

use smith_tui::signals;

/// Starts the thread that waits for an ending signal. `end` aborts what
/// runs, waits (at most [`signals::GRACE`]) for it to be recorded and
/// returns the session's name; `resume` is the command that continues that
/// session.
pub fn end_on_signal(
    end: impl FnOnce() -> Option<String> + Send + 'static,
    resume: impl FnOnce(&str) -> String + Send + 'static,
) -> Option<JoinHandle<()>> {
    signals::install();
    std::thread::Builder::new()
        .name("smith-signals".to_owned())
        .spawn(move || {
            let Some(signal) = signals::wait() else {
                return;
            };
            signals::detach_after_hangup(signal);
            if let Some(name) = end() {
                // Standard error may be gone (a closed pipe): the exit
                // code still says what happened.
                let _ = writeln!(
                    std::io::stderr(),
                    "{}",
                    smith_host::output::interrupted_line(&name, &resume(&name))
                );
            }
            std::process::exit(i32::from(signals::exit_code(signal)));
        })
        .ok()
}

/// After a server's loop returned: when a signal arrived meanwhile, the
/// thread of [`end_on_signal`] is ending the process; wait for it.
pub fn finish(watcher: Option<JoinHandle<()>>) {
    if signals::received().is_some()
        && let Some(watcher) = watcher
    {
        // A panicked watcher leaves the normal exit.
        let _ = watcher.join();
    }
}
