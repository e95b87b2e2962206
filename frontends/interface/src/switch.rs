//! Switching sessions: `/new`, `/resume REF`, `/continue` and
//! `/branch ENTRY` each ask the runtime's extension plugins, stop the
//! runtime (and any replay) and start a new one of the next generation on
//! the session they name, in a cleared transcript.

use smith_engine::agent::SessionOp;
use smith_tui::App;
use smith_tui::run::Flow;

use super::commands::Step;
use super::config::open_store;
use super::controller::Controller;
use super::host;
use super::replay;
use super::runtime::{Target, start};
use super::session::select_leaf;

/// `/new`: a new session.
pub(super) fn new(ctl: &mut Controller<'_>, app: &mut App, _: String) -> Step {
    switch(ctl, app, "new", Target::New)
}

/// `/resume REF`: the stored session `reference`.
pub(super) fn resume(ctl: &mut Controller<'_>, app: &mut App, reference: String) -> Step {
    switch(ctl, app, "resume", Target::Existing(reference))
}

/// `/continue`: the most recently changed session (a new one when there
/// is none).
pub(super) fn latest(ctl: &mut Controller<'_>, app: &mut App, _: String) -> Step {
    let target = match open_store().and_then(|s| Ok(s.latest()?)) {
        Ok(Some(latest)) => Target::Existing(latest.id.to_hex()),
        Ok(None) => Target::New,
        Err(err) => {
            app.error(&format!("could not read the session store: {err}"));
            return Ok(Flow::Continue);
        }
    };
    switch(ctl, app, "continue", target)
}

/// `/branch ENTRY`: selects the entry as the session's leaf, once the
/// runtime and any replay are idle, and resumes the session there.
pub(super) fn branch(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    let Ok(entry) = arg.trim().trim_start_matches('#').parse::<u64>() else {
        app.error(&format!(
            "/branch {arg:?}: expected an entry id such as `/branch 12`; run /branch without an argument to pick one from the tree"
        ));
        return Ok(Flow::Continue);
    };
    if app.status.busy || ctl.replay.is_some() {
        app.notice("the agent or a replay is running; press Esc to stop it, then /branch again");
        return Ok(Flow::Continue);
    }
    let id = rt.journal.session_id().to_hex();
    let op = SessionOp::Fork(format!("{}#{entry}", rt.name));
    if let Err(message) = rt.ask(&op, &format!("/branch {entry}")) {
        app.error(&message);
        return Ok(Flow::Continue);
    }
    if let Some(old) = ctl.runtime.take() {
        old.stop();
    }
    let selected = host::settings::session_root().and_then(|root| select_leaf(&root, &id, entry));
    if let Err(err) = selected {
        app.error(&format!("{err:#}"));
    }
    restart(ctl, app, Target::Existing(id))
}

/// `/name` switches to `target` unless an extension plugin blocks it.
fn switch(ctl: &mut Controller<'_>, app: &mut App, name: &str, target: Target) -> Step {
    let to = match &target {
        Target::New => String::new(),
        Target::Existing(reference) => reference.clone(),
    };
    let asked = match ctl.runtime.as_ref() {
        Some(current) => current.ask(&SessionOp::Switch(to), &format!("/{name}")),
        None => Ok(()),
    };
    if let Err(message) = asked {
        app.error(&message);
        return Ok(Flow::Continue);
    }
    restart(ctl, app, target)
}

/// Stops the runtime and any replay and starts the next generation's
/// runtime on `target`; the interface exits when it cannot start.
fn restart(ctl: &mut Controller<'_>, app: &mut App, target: Target) -> Step {
    if let Some(old) = ctl.runtime.take() {
        old.stop();
    }
    replay::stop(ctl);
    ctl.generation += 1;
    app.transcript = smith_tui::Transcript::new();
    ctl.summaries.clear();
    match start(ctl.args, ctl.cwd, target, ctl.generation, &ctl.tx, app) {
        Ok((rt, _)) => {
            app.notice(&format!("session {}", rt.name));
            ctl.runtime = Some(rt);
            Ok(Flow::Continue)
        }
        Err(err) => {
            ctl.failure = Some(err);
            Ok(Flow::Exit)
        }
    }
}
