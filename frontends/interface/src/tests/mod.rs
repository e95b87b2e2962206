//! The interface controller's tests, by module.

pub(super) use std::path::{Path, PathBuf};
pub(super) use std::sync::Arc;
pub(super) use std::sync::atomic::AtomicBool;
pub(super) use std::sync::mpsc::sync_channel;

pub(super) use smith_config::trust::{Project, TrustStatus, TrustStore};
pub(super) use smith_config::{ConfigError, Loader, Paths};
pub(super) use smith_engine::journal::store::{StoreJournal, resume};
pub(super) use smith_engine::protocol::{ErrorInfo, Event, StopCause, ToolStatus};
pub(super) use smith_engine::provider::{ContentBlock, Message, StopReason, ToolCall, Usage};
pub(super) use smith_engine::replay::{Pace, Recording};
pub(super) use smith_store::Store;
pub(super) use smith_tui::run::{CHANNEL_CAPACITY, Msg};
pub(super) use smith_tui::transcript::{EntryKind, ToolState};
pub(super) use smith_tui::{App, Options, Output, Overlay};

pub(super) use super::commands::plugins_overlay;
pub(super) use super::config::{answer_trust, changed_keys, load_options, trust_question};
pub(super) use super::events::{apply, apply_replayed, summarize};
pub(super) use super::frontend::{AgentMsg, Feed, TuiFrontend, answered, question_overlay};
pub(super) use super::replay::{REPLAY_TAG, replay_pace, spawn_replay};
pub(super) use super::session::{
    branch_overlay, branch_rows, select_leaf, show_history, show_kept_intents,
};

mod commands;
mod events;
mod frontend;
mod options;
mod session;
mod trust;

/// A project with a configuration that changes what the interface
/// does, and a smith home of its own.
fn project_and_home() -> (tempfile::TempDir, PathBuf, Paths) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join(".smith")).unwrap();
    std::fs::write(
        project.join(".smith/config.kdl"),
        "tui {\n    scroll-lines 7\n    confirm-exit #false\n}\n",
    )
    .unwrap();
    let paths = Paths::under(tmp.path().join("home"));
    (tmp, project, paths)
}

fn loader(paths: &Paths, cwd: &Path) -> Result<Loader, ConfigError> {
    Ok(Loader::new(paths.clone()).start_dir(cwd))
}

fn press(app: &mut App, c: char) -> Option<Output> {
    use smith_tui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    app.handle(&Event::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

fn notices(app: &App) -> Vec<String> {
    let t = &app.transcript;
    (0..t.len()).map(|i| t.text(i).into_owned()).collect()
}
