//! The fullscreen interface's controller: what `smith tui` (and `smith`
//! with no subcommand on a terminal) runs over the agent runtime.
//!
//! [`smith_tui`] draws and reads keys; this crate starts runtimes through
//! [`smith_host`] (the same way `smith eval` and `smith rpc` start theirs),
//! maps their engine events onto the interface, runs the slash commands
//! from one table, asks the plugins' questions and switches sessions. The
//! binary only turns its command-line arguments into [`Args`] and calls
//! [`run`].
//!
//! The runtime is wired as `smith eval` wires it (scripted provider,
//! session store, built-in tools); its events are forwarded into the
//! interface's bounded channel by one thread per runtime, tagged with the
//! runtime's generation so that events of a replaced runtime (after `/new`
//! or `/resume`) are dropped.
//!
//! A project whose `.smith` directory is not trusted as it is now (never
//! trusted, or changed since) is asked about first, in an overlay that owns
//! focus: trusting records it in the trust store exactly as `smith trust`
//! does and reloads configuration; "not now" keeps the project ignored.
//!
//! * [`controller`] — the state the event loop shares, and what it does
//!   with the interface's outputs;
//! * [`commands`] — the slash command table: help, completion and
//!   dispatch read it;
//! * [`events`] — engine events mapped onto the interface;
//! * [`runtime`] — starting and stopping a runtime;
//! * [`switch`] — session switching (`/new`, `/resume`, `/continue`,
//!   `/branch ENTRY`);
//! * [`session`] — a resumed history and the branch tree;
//! * [`replay`] — `/replay`;
//! * [`frontend`] — the interface as the plugins' frontend, and their
//!   questions: intents answered later, and questions a plugin waits for
//!   (`host.ask`), asked in an overlay that owns focus and answered
//!   through the runtime's question broker;
//! * [`config`] — the interface's options and the project trust question;
//! * [`history`] — the editor's input history kept across runs;
//! * [`product`] — the interface's product, built from the plugins'
//!   contributions;
//! * [`host`] — everything used from the host and the settings.

#![deny(missing_docs)]

mod commands;
mod config;
mod controller;
mod events;
mod frontend;
mod history;
mod host;
pub mod product;
mod replay;
mod runtime;
mod session;
mod switch;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;

use anyhow::Context;
use smith_config::Paths;
use smith_tui::App;
use smith_tui::run::Msg;
use smith_tui::run::{CHANNEL_CAPACITY, run_loop, spawn_input};
use smith_tui::signals;
use smith_tui::term::{TermConfig, Terminal};

use config::{load_options, open_store, process_loader, trust_question, unchecked};
use controller::Controller;
use frontend::{AgentMsg, Feed};
use runtime::{Target, start};

/// The provider, model and base URL the user chose (`--provider`,
/// `--model`, `--base-url`); unset parts are chosen as `smith eval`
/// chooses them.
#[derive(Debug, Clone, Default)]
pub struct ProviderChoice {
    /// The provider by name.
    pub provider: Option<String>,
    /// The model by name or alias.
    pub model: Option<String>,
    /// The provider's base URL.
    pub base_url: Option<String>,
    /// The thinking level (`--thinking`: `off` or a catalog level).
    pub thinking: Option<String>,
}

/// How the fullscreen interface starts.
#[derive(Debug, Clone)]
pub struct Args {
    /// The provider, model and base URL.
    pub choice: ProviderChoice,
    /// Play this script with the mock provider (see docs/mock-provider.md).
    pub mock_script: Option<PathBuf>,
    /// Resume this session (a name, an id or a unique id prefix).
    pub session: Option<String>,
    /// Continue the most recently changed session.
    pub continue_latest: bool,
    /// Work in this directory instead of the current one.
    pub cwd: Option<PathBuf>,
    /// Run without extension plugins' hooks (the interface's own product
    /// still comes from smith/product).
    pub no_plugins: bool,
    /// The approval mode (`--approval`; `None`: the configured one, else
    /// `ask`).
    pub approval: Option<String>,
}

impl Default for Args {
    /// What `smith` with no subcommand on a terminal uses: the selected
    /// provider (a live one when a credential is found, else the offline
    /// demo), a new session, the current directory.
    fn default() -> Self {
        Self {
            choice: ProviderChoice::default(),
            mock_script: None,
            session: None,
            continue_latest: false,
            cwd: None,
            no_plugins: false,
            approval: None,
        }
    }
}

/// Runs the interface until the user quits.
///
/// # Errors
///
/// When there is no terminal, or the provider, working directory or session
/// store cannot be set up.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .context("could not read the current directory; pass --cwd DIR")?,
    };
    // The product is built once from the plugins' contributions and cached
    // in the interface: drawing never calls into a plugin.
    let (mut product, product_warnings) = host::product::load(args.no_plugins);
    for warning in &product_warnings {
        host::extensions::warn(warning);
    }
    // The built-in commands are listed whatever the plugins contribute.
    product.commands = commands::merged(std::mem::take(&mut product.commands));
    let (options, config_failure, theme_warning) = load_options(process_loader(&cwd), &product);
    let style = host::config::style(None);
    if let Some(err) = &config_failure {
        eprint!("{}", err.diagnostic().render_terminal(style));
        smith_diag::log::report(err.diagnostic());
        eprintln!("smith: the interface starts with its default settings");
    }
    if let Some(w) = &theme_warning {
        eprint!("{}", w.render_terminal(style));
        smith_diag::log::report(w);
    }
    let mut app = App::new(product, options);
    app.set_cwd(cwd.clone());
    for warning in &product_warnings {
        // Standard error is hidden behind the interface: say it there too.
        app.error(warning);
    }
    if let Some(w) = &theme_warning {
        // Standard error is hidden behind the interface: say it there too.
        app.error(&format!("{}: {}; {}", w.what(), w.why(), w.next()));
    }
    // The terminal first: without one nothing else (a new session) is made.
    // Every later error drops it, which restores the terminal.
    let mut term = Terminal::enter(TermConfig {
        color: options.color,
        probe: true,
        mouse: options.mouse,
    })?;
    let (tx, rx) = sync_channel::<AgentMsg>(CHANNEL_CAPACITY);
    let target = if let Some(reference) = &args.session {
        Target::Existing(reference.clone())
    } else if args.continue_latest {
        let latest = open_store()?.latest()?;
        match latest {
            Some(info) => Target::Existing(info.id.to_hex()),
            None => Target::New,
        }
    } else {
        Target::New
    };
    let (runtime, info) = start(&args, &cwd, target, 1, &tx, &mut app)?;
    app.set_models(info.models.iter().map(|m| m.id.clone()).collect());
    let window = info
        .models
        .iter()
        .find(|m| m.id == app.status.model)
        .and_then(|m| m.context_window);
    app.notice(&format!("session {} · F1 help · / commands", runtime.name));
    let paths = Paths::from_process();
    match paths.as_ref().map(|p| trust_question(p, &cwd)) {
        Ok(Ok(Some(question))) => app.open(question),
        Ok(Ok(None)) => {}
        Ok(Err(err)) => unchecked(&mut app, &err),
        Err(err) => unchecked(&mut app, err),
    }

    // Up recalls what was sent in earlier runs too.
    let history = paths.as_ref().ok().map(|p| history::path(&p.state_dir));
    if let Some(file) = &history {
        match history::load(file) {
            Ok(entries) => app.editor.set_history(entries),
            Err(message) => app.error(&message),
        }
    }
    spawn_input(tx.clone())?;
    watch_signals(tx.clone());
    // Shared by the two callbacks of the loop.
    let ctl = RefCell::new(Controller {
        args: &args,
        cwd: &cwd,
        tx,
        paths,
        info,
        runtime: Some(runtime),
        summaries: events::Calls::new(&cwd),
        generation: 1,
        replay: None,
        replays: 0,
        window,
        failure: None,
        fault: std::env::var("SMITH_TUI_TEST_FAULT").unwrap_or_default(),
        deferred_resize: None,
        history,
    });
    let result = run_loop(
        &mut term,
        &mut app,
        &rx,
        |app, (tag, event)| ctl.borrow_mut().feed(app, tag, event),
        |app, term, output| ctl.borrow_mut().output(app, term, output),
    );
    let mut ctl = ctl.into_inner();
    if let Some(err) = ctl.failure.take() {
        // Returning drops the terminal, which restores it.
        return Err(err);
    }
    if let Some(signal) = signals::received() {
        return Ok(end_by_signal(signal, ctl, &mut app, term, rx));
    }
    drop(term);
    // Closing the channel first means a forwarder blocked on a full channel
    // wakes up and ends.
    drop(rx);
    if let Some(rt) = ctl.runtime.take() {
        rt.stop_discarding_empty();
    }
    result.context("the terminal could not be written")?;
    Ok(0)
}

/// Routes the ending signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) into the
/// interface's loop, which then ends ([`end_by_signal`]). When the loop
/// is held up and the interface has not ended well after the grace, the
/// terminal is restored and the process ends by the signal. Installed
/// after the terminal is entered, so these replace its restore-and-raise
/// handlers (SIGABRT keeps that one).
fn watch_signals(tx: std::sync::mpsc::SyncSender<AgentMsg>) {
    let (installed, on_installed) = std::sync::mpsc::sync_channel::<()>(1);
    let watcher = std::thread::Builder::new()
        .name("smith-tui-signals".to_owned())
        .spawn(move || {
            // Waits for the installation below; a signal that arrived
            // since is waiting in the pipe.
            if on_installed.recv().is_err() {
                return;
            }
            if let Some(signal) = signals::wait() {
                // The loop may have ended already; nothing is left to tell.
                let _ = tx.send(Msg::Signal(signal));
                drop(tx);
                std::thread::sleep(signals::GRACE * 3);
                signals::end_by_default(signal);
            }
        });
    match watcher {
        // Installed once the thread that waits exists (without it the
        // terminal's handlers stay: restore, then end by the signal), and
        // before this returns: the interface draws its first frame next,
        // and a signal sent on seeing it must find these handlers, not the
        // terminal's (which would end the process without ending the
        // runtime or printing how to continue).
        Ok(_) => {
            signals::install();
            let _ = installed.send(());
        }
        Err(err) => smith_diag::log::note(
            smith_diag::log::Level::Warn,
            "tui.signals",
            &format!(
                "no thread could watch for signals ({err}); a signal ends the interface at once"
            ),
        ),
    }
}

/// Ends the interface after `signal` the way an interrupt does: the
/// running turn is aborted through the runtime (as Esc does) and its end
/// awaited for at most [`signals::GRACE`] (its effects recorded, its
/// commands' process groups ended), the terminal restored, how to continue
/// the session printed on standard error; the exit code is 128 plus the
/// signal's number.
fn end_by_signal(
    signal: i32,
    mut ctl: Controller<'_>,
    app: &mut App,
    term: Terminal,
    rx: std::sync::mpsc::Receiver<AgentMsg>,
) -> u8 {
    use smith_engine::protocol::{Command, Event};
    let mut settled = true;
    if let Some(rt) = ctl.runtime.as_ref() {
        if let Some((_, stop)) = ctl.replay.as_ref() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if app.status.busy && ctl.replay.is_none() {
            settled = false;
            // Through the command channel too: a prompt just sent starts
            // its run first.
            let _ = rt.handle.send(Command::Abort);
            rt.handle.abort();
            let deadline = std::time::Instant::now() + signals::GRACE;
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(Msg::Agent((tag, Some(Feed::Event(Event::Settled)))))
                        if tag == ctl.generation =>
                    {
                        settled = true;
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
    }
    // Leaving the interface restores the terminal.
    drop(term);
    signals::detach_after_hangup(signal);
    drop(rx);
    let mut name = ctl.runtime.as_ref().map(|rt| rt.name.clone());
    if let Some(rt) = ctl.runtime.take()
        && settled
        && rt.stop_discarding_empty()
    {
        // Nothing was recorded: there is no session to go on with.
        name = None;
    }
    if let Some(name) = name {
        // Standard error may be gone: the exit code still says what
        // happened.
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            host::output::interrupted_line(&name, &format!("smith tui --session {name}"))
        );
    }
    signals::exit_code(signal)
}
