//! Switching sessions: `/new`, `/resume REF`, `/continue`,
//! `/branch ENTRY` and `/rewind ENTRY` each ask the runtime's extension
//! plugins, stop the runtime (and any replay) and start a new one of the
//! next generation on the session they name, in a cleared transcript.

use smith_engine::agent::SessionOp;
use smith_store::Store;
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

/// `/rewind ENTRY` (`#ENTRY`, or the picker's line): once the runtime and
/// any replay are idle, rewinds the files smith changed since the prompt
/// `ENTRY` and the conversation to just before it (a new branch of the
/// session; the old one stays), resumes the session there and puts the
/// prompt back in the editor. A refusal (files changed outside smith)
/// changes nothing and names the paths.
pub(super) fn rewind(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    use smith_engine::checkpoint::{RewindOptions, rewind_project};
    use smith_engine::journal::store::StoreJournal;
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    let word = arg.split_whitespace().next().unwrap_or("");
    let Ok(entry) = word.trim_start_matches('#').parse::<u64>() else {
        app.error(&format!(
            "/rewind {arg:?}: expected the entry id of a prompt such as `/rewind 12`; run /rewind without an argument (or press Esc twice) to pick a turn"
        ));
        return Ok(Flow::Continue);
    };
    if app.status.busy || ctl.replay.is_some() {
        app.notice("the agent or a replay is running; press Esc to stop it, then /rewind again");
        return Ok(Flow::Continue);
    }
    let id = rt.journal.session_id().to_hex();
    let checkpoints = smith_host::runtime::checkpoints_root();
    let open = || -> anyhow::Result<StoreJournal> {
        let store = Store::open(host::settings::session_root()?)?;
        let session = store.load(&id)?;
        Ok(StoreJournal::new(store, session))
    };
    // A dry run first, on the session as stored: a refusal changes nothing
    // and keeps the runtime as it is.
    let dry = open().map_err(|e| format!("{e:#}")).and_then(|journal| {
        let options = RewindOptions {
            force: false,
            dry_run: true,
        };
        rewind_project(ctl.cwd, checkpoints.as_deref(), &journal, entry, options)
            .map_err(|e| e.to_string())
    });
    let leaf = match dry {
        Ok(dry) => dry.leaf,
        Err(message) => {
            app.error(&format!("/rewind: {message}"));
            return Ok(Flow::Continue);
        }
    };
    let op = SessionOp::Fork(format!("{}#{leaf}", rt.name));
    if let Err(message) = rt.ask(&op, &format!("/rewind {entry}")) {
        app.error(&message);
        return Ok(Flow::Continue);
    }
    if let Some(old) = ctl.runtime.take() {
        old.stop();
    }
    let done = open().map_err(|e| format!("{e:#}")).and_then(|journal| {
        rewind_project(
            ctl.cwd,
            checkpoints.as_deref(),
            &journal,
            entry,
            RewindOptions::default(),
        )
        .map_err(|e| e.to_string())
    });
    let step = restart(ctl, app, Target::Existing(id));
    match done {
        Ok(done) => {
            let files = match &done.files {
                Some(files) => format!(
                    "{} file{} restored ({})",
                    files.record.changed.len(),
                    if files.record.changed.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    files.record.changed.join(", ")
                ),
                None => "the conversation only (no checkpoints of this project)".to_owned(),
            };
            app.notice(&format!(
                "rewound to before prompt #{entry}: {files}; the session goes on from entry {} in a new branch (/branch shows the old one)",
                done.leaf
            ));
            app.editor.set(&done.prompt);
        }
        Err(message) => app.error(&format!("/rewind: {message}")),
    }
    step
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
        // Switching away from a session that holds nothing deletes it;
        // reopening the same one keeps it.
        let same = match &target {
            Target::New => false,
            Target::Existing(reference) => open_store()
                .and_then(|store| Ok(store.resolve(reference)?))
                .is_ok_and(|id| id == old.journal.session_id()),
        };
        if same {
            old.stop();
        } else {
            old.stop_discarding_empty();
        }
    }
    replay::stop(ctl);
    ctl.generation += 1;
    app.clear_transcript();
    // The next runtime's plugins set their own panels.
    app.clear_widgets();
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
