//! The event loop: terminal input on its own thread, agent events from the
//! host, both through one bounded channel; frames drawn only when the
//! model changed.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use crossterm::event::Event;

use crate::app::{App, Output};
use crate::term::Terminal;

/// Capacity of the channel into the loop. A full channel makes producers
/// wait, so a flood of agent output cannot grow memory without bound.
pub const CHANNEL_CAPACITY: usize = 1024;

/// A message into the loop.
#[derive(Debug)]
pub enum Msg<E> {
    /// A terminal event.
    Term(Event),
    /// An event from the agent runtime.
    Agent(E),
    /// The agent runtime has stopped.
    AgentGone,
    /// An ending signal arrived (see [`crate::signals`]): the loop ends so
    /// that the host aborts what runs and exits.
    Signal(i32),
}

/// What the host wants after an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep running.
    Continue,
    /// Leave the loop.
    Exit,
}

/// Starts the input thread: it reads terminal events and sends them on;
/// it ends when the channel closes or the terminal cannot be read.
///
/// # Errors
///
/// When the thread cannot be started.
pub fn spawn_input<E: Send + 'static>(tx: SyncSender<Msg<E>>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("smith-tui-input".to_owned())
        .spawn(move || {
            while let Ok(event) = crossterm::event::read() {
                if tx.send(Msg::Term(event)).is_err() {
                    break;
                }
            }
        })
        .map(|_| ())
}

/// Runs until `on_output` says [`Flow::Exit`], a [`Msg::Signal`] arrives
/// or the channel closes.
/// Every pending message is applied before a frame is drawn, so bursts of
/// streamed text cost one frame.
///
/// # Errors
///
/// When the terminal cannot be written.
pub fn run_loop<E>(
    term: &mut Terminal,
    app: &mut App,
    rx: &Receiver<Msg<E>>,
    mut on_agent: impl FnMut(&mut App, E),
    mut on_output: impl FnMut(&mut App, &mut Terminal, Output) -> Flow,
) -> std::io::Result<()> {
    let mut drawn = u64::MAX;
    let mut ticked = Instant::now();
    loop {
        // The spinner and time-limited hints move on even while events
        // keep arriving.
        if ticked.elapsed() >= app.tick_interval() {
            app.tick();
            ticked = Instant::now();
        }
        if app.generation() != drawn {
            term.draw(app)?;
            drawn = app.generation();
        }
        let wait = app.tick_interval().saturating_sub(ticked.elapsed());
        let first = match rx.recv_timeout(wait.max(Duration::from_millis(1))) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        };
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Term(event) => {
                    if let Event::Resize(..) = event {
                        drawn = u64::MAX;
                    }
                    if let Some(out) = app.handle(&event)
                        && on_output(app, term, out) == Flow::Exit
                    {
                        return Ok(());
                    }
                }
                Msg::Agent(e) => on_agent(app, e),
                Msg::AgentGone => {
                    app.error("the agent runtime stopped; restart smith to continue");
                }
                Msg::Signal(_) => return Ok(()),
            }
            next = rx.try_recv().ok();
        }
    }
}
