//! `/replay`: the current session played back into the transcript through
//! the engine's replay, on its own thread, tagged so that its events never
//! pass for a runtime's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;

use anyhow::Context;
use smith_engine::replay::{Pace, Recording};
use smith_tui::App;
use smith_tui::run::{Flow, Msg};

use super::commands::Step;
use super::controller::Controller;
use super::frontend::{AgentMsg, Feed};

/// Tags of replay events have this bit set, so they never equal a runtime
/// generation.
pub(super) const REPLAY_TAG: u64 = 1 << 63;

/// How fast `/replay ARG` plays: empty is 10x, `instant` (or `0`) does not
/// wait, a number is the speed factor (1 is real time).
pub(super) fn replay_pace(arg: &str) -> Result<Pace, String> {
    match arg.trim().trim_end_matches('x') {
        "" => Ok(Pace::Scaled(10.0)),
        "instant" | "0" => Ok(Pace::Instant),
        n => match n.parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => Ok(Pace::Scaled(f)),
            _ => Err(format!(
                "/replay {arg:?}: the speed must be a positive number (1 is real time, 10 is ten times faster) or `instant`; for example `/replay 4`"
            )),
        },
    }
}

/// Plays `recording` into `tx` on its own thread, each event tagged with
/// `tag`, then `None`; stops early when `stop` is set or the interface
/// is gone.
pub(super) fn spawn_replay(
    recording: Recording,
    pace: Pace,
    tag: u64,
    stop: Arc<AtomicBool>,
    tx: SyncSender<AgentMsg>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("smith-tui-replay".to_owned())
        .spawn(move || {
            let _ = recording.play(None, pace, |event| {
                if stop.load(Ordering::Relaxed) {
                    return Err(());
                }
                tx.send(Msg::Agent((tag, Some(Feed::Event(event.clone())))))
                    .map_err(|_| ())
            });
            // The interface may be gone at exit; nothing to report then.
            let _ = tx.send(Msg::Agent((tag, None)));
        })
        .context("could not start the thread that plays the replay")?;
    Ok(())
}

/// `/replay [SPEED]`: plays the session into a cleared transcript, once
/// the runtime is idle and no other replay plays.
pub(super) fn command(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    if ctl.replay.is_some() {
        app.notice("a replay is already playing; press Esc to stop it");
        return Ok(Flow::Continue);
    }
    if app.status.busy {
        app.notice("the agent is working; /replay plays the session once the turn ends (Esc interrupts it)");
        return Ok(Flow::Continue);
    }
    let pace = match replay_pace(&arg) {
        Ok(pace) => pace,
        Err(message) => {
            app.error(&message);
            return Ok(Flow::Continue);
        }
    };
    match rt.journal.with_session(Recording::from_session) {
        Ok(recording) => {
            ctl.replays += 1;
            let tag = REPLAY_TAG | ctl.replays;
            let stop = Arc::new(AtomicBool::new(false));
            app.clear_transcript();
            ctl.summaries.clear();
            app.notice(&format!(
                "replaying session {} ({} turns) · Esc stops",
                rt.name, recording.turns
            ));
            let mut status = app.status.clone();
            status.activity = "replaying".to_owned();
            app.set_status(status);
            match spawn_replay(recording, pace, tag, stop.clone(), ctl.tx.clone()) {
                Ok(()) => ctl.replay = Some((tag, stop)),
                Err(err) => app.error(&format!("{err:#}")),
            }
        }
        Err(err) => app.error(&format!("the session cannot be replayed: {err}")),
    }
    Ok(Flow::Continue)
}

/// Stops the replay playing now, if any.
pub(super) fn stop(ctl: &mut Controller<'_>) {
    if let Some((_, stop)) = ctl.replay.take() {
        stop.store(true, Ordering::Relaxed);
    }
}
