//! The controller: the state the interface's event loop shares between
//! what reaches it from a runtime ([`Controller::feed`]) and what the
//! interface asks for ([`Controller::output`]). Slash commands go to the
//! command table ([`super::commands`]).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;

use smith_config::{ConfigError, Loader, Paths};
use smith_engine::agent::AgentError;
use smith_engine::protocol::{Command, Event};
use smith_engine::provider::{Message, ProviderInfo};
use smith_tui::run::Flow;
use smith_tui::term::Terminal;
use smith_tui::{App, Output};

use super::Args;
use super::commands;
use super::config::{answer_trust, changed_keys, process_loader, unchecked};
use super::events::{apply, apply_replayed};
use super::frontend::{
    ANSWER, AgentMsg, Feed, WAIT, answered, question_overlay, wait_command, waited, waiting_overlay,
};
use super::host::questions::Withdrawn;
use super::runtime::{Runtime, run_plugin_actions};

/// The interface's state besides the [`App`]: the runtime it drives, the
/// replay playing, and what both need to start again.
pub(super) struct Controller<'a> {
    /// The options the interface was started with.
    pub(super) args: &'a Args,
    /// The working directory.
    pub(super) cwd: &'a Path,
    /// The interface's channel, for runtimes and replays.
    pub(super) tx: SyncSender<AgentMsg>,
    /// Where the configuration and the trust store live.
    pub(super) paths: Result<Paths, ConfigError>,
    /// The provider's description (its models and their context windows).
    pub(super) info: ProviderInfo,
    /// The runtime now; `None` once it failed to start again.
    pub(super) runtime: Option<Runtime>,
    /// Tool calls announced and not answered yet.
    pub(super) summaries: super::events::Calls,
    /// The generation of the runtime now; events of others are dropped.
    pub(super) generation: u64,
    /// The replay playing now: its tag and the flag that stops it.
    pub(super) replay: Option<(u64, Arc<AtomicBool>)>,
    /// How many replays were started.
    pub(super) replays: u64,
    /// The context window of the model in use, when known.
    pub(super) window: Option<u64>,
    /// The error the interface exits with.
    pub(super) failure: Option<anyhow::Error>,
    /// The failure the terminal-restore tests ask for
    /// (`SMITH_TUI_TEST_FAULT`).
    pub(super) fault: String,
    /// A terminal size the plugins have not heard of: the terminal was
    /// resized while one of them waited for a question's answer (their
    /// instances are busy until then), so they hear of it when the run
    /// settles.
    pub(super) deferred_resize: Option<(u16, u16)>,
    /// The file the editor's history is appended to for later runs
    /// ([`super::history`]); `None` when there is none or it could not be
    /// written (said once).
    pub(super) history: Option<std::path::PathBuf>,
}

impl Controller<'_> {
    /// Shows what the runtime (or replay) tagged `tag` sent, when it is
    /// the current one.
    pub(super) fn feed(&mut self, app: &mut App, tag: u64, event: Option<Feed>) {
        if tag == self.generation {
            match event {
                Some(Feed::Event(event)) => {
                    let settled = matches!(event, Event::Settled);
                    // A message the journal has recorded: its entry id
                    // shows beside it once it is applied.
                    let recorded = match &event {
                        Event::MessageEnd {
                            message: Message::User { text, .. },
                            ..
                        } => Some((true, text.clone())),
                        Event::MessageEnd {
                            message: Message::Assistant { .. },
                            ..
                        } => Some((false, String::new())),
                        _ => None,
                    };
                    apply(app, event, &mut self.summaries, self.window);
                    if let (Some((user, text)), Some(rt)) = (recorded, self.runtime.as_mut()) {
                        let after = rt.message_cursor;
                        let id = rt
                            .journal
                            .with_opened(|s| super::session::next_message_id(s, after, user));
                        if let Some(id) = id {
                            rt.message_cursor = Some(id);
                            app.message_recorded(user, &text, id);
                        }
                    }
                    if settled
                        && let Some((columns, rows)) = self.deferred_resize.take()
                        && let Some(rt) = self.runtime.as_ref()
                    {
                        report(app, resized(rt, app, columns, rows));
                    }
                }
                Some(Feed::Notice(text)) => app.notice(&text),
                Some(Feed::Problem(text)) => app.error(&text),
                Some(Feed::Widget(plugin, name, text)) => app.set_widget(&plugin, &name, &text),
                Some(Feed::Question(plugin, intent)) => {
                    if let Some(overlay) = question_overlay(tag, &plugin, &intent) {
                        app.ask(overlay);
                    }
                }
                Some(Feed::Waiting(waiting)) => app.ask(waiting_overlay(tag, &waiting)),
                Some(Feed::Withdrawn(id, why)) if app.withdraw(&wait_command(tag, &id)) => {
                    app.notice(&match why {
                        Withdrawn::Timeout => format!(
                            "question {id} was not answered in time: the plugin took its default"
                        ),
                        Withdrawn::Cancelled => format!(
                            "question {id} no longer waits: the plugin's call was cancelled"
                        ),
                    });
                }
                // Answered already: nothing was open for it.
                Some(Feed::Withdrawn(..)) => {}
                Some(Feed::CommandDone(Ok(actions))) => {
                    if let Some(rt) = self.runtime.as_ref() {
                        report(app, crate::runtime::run_plugin_actions(&rt.handle, actions));
                    }
                }
                Some(Feed::CommandDone(Err(message))) => app.error(&message),
                Some(Feed::Stopped) => {
                    let again = self.runtime.as_ref().map_or_else(
                        || "smith tui --continue".to_owned(),
                        |rt| format!("smith tui --session {}", rt.name),
                    );
                    app.error(&format!(
                        "the agent runtime stopped, so nothing more can be sent in this session; restart smith ({again}) to go on"
                    ));
                }
                None => {}
            }
            return;
        }
        let playing = self.replay.as_ref().map(|(t, _)| *t);
        if playing != Some(tag) {
            return;
        }
        match event {
            Some(Feed::Event(event)) => {
                apply_replayed(app, event, &mut self.summaries, self.window);
            }
            // A replay sends events only.
            Some(
                Feed::Notice(_)
                | Feed::Problem(_)
                | Feed::Widget(..)
                | Feed::Question(..)
                | Feed::Waiting(_)
                | Feed::Withdrawn(..)
                | Feed::CommandDone(_)
                | Feed::Stopped,
            ) => {}
            None => {
                self.replay.take();
                let mut status = app.status.clone();
                status.activity.clear();
                status.busy = false;
                app.set_status(status);
                app.notice("replay finished");
            }
        }
    }

    /// Appends what the editor recorded since the last output to the
    /// history file, for later runs; a failure is said once and nothing
    /// more is written this run.
    fn save_history(&mut self, app: &mut App) {
        let new = app.editor.take_new_history().to_vec();
        if new.is_empty() {
            return;
        }
        let Some(file) = &self.history else {
            return;
        };
        if let Err(message) = super::history::append(file, &new) {
            self.history = None;
            app.error(&message);
        }
    }

    /// Carries out what the interface asks for.
    pub(super) fn output(&mut self, app: &mut App, term: &mut Terminal, output: Output) -> Flow {
        self.save_history(app);
        // Test hook for the terminal-restore tests: fail in a chosen way
        // while the interface owns the terminal.
        match self.fault.as_str() {
            "panic" => {
                panic!("SMITH_TUI_TEST_FAULT=panic: a deliberate panic inside the interface")
            }
            "abort" => std::process::abort(),
            "error" => {
                self.failure = Some(anyhow::anyhow!(
                    "SMITH_TUI_TEST_FAULT=error: a deliberate error inside the interface"
                ));
                return Flow::Exit;
            }
            _ => {}
        }
        if let (Output::Prompt(text), None, Some(rt)) =
            (&output, &self.replay, self.runtime.as_mut())
        {
            name_after_first_prompt(rt, app, text);
        }
        let Some(rt) = self.runtime.as_ref() else {
            return Flow::Exit;
        };
        let sent = match output {
            Output::Quit => return Flow::Exit,
            Output::Trust { path, trust } => self.trust(rt, app, &path, trust),
            Output::Prompt(_) | Output::Steer(_) | Output::FollowUp(_) if self.replay.is_some() => {
                app.notice("not sent: a replay is playing; press Esc to stop it, then send again");
                Ok(())
            }
            Output::Prompt(text) => rt.handle.send(Command::Prompt { text }),
            Output::Steer(text) => rt.handle.send(Command::Steer { text }),
            Output::FollowUp(text) => rt.handle.send(Command::FollowUp { text }),
            Output::Interrupt => {
                if let Some((_, stop)) = self.replay.as_ref() {
                    stop.store(true, Ordering::Relaxed);
                } else {
                    rt.handle.abort();
                }
                Ok(())
            }
            Output::Copy(text) => {
                match term.copy(&text) {
                    Ok(smith_tui::term::Copied::Sent(said)) => app.notice(said),
                    Ok(smith_tui::term::Copied::NotSent(why)) => app.notice(&why),
                    Err(err) => app.error(&format!("could not write to the terminal: {err}")),
                }
                Ok(())
            }
            // A plugin waits for the user's answer, holding the plugins
            // until then: raising the resize now would block the interface
            // that is to take the answer.
            Output::Resized { columns, rows } if rt.questions.waiting() > 0 => {
                self.deferred_resize = Some((columns, rows));
                Ok(())
            }
            Output::Resized { columns, rows } => {
                self.deferred_resize = None;
                resized(rt, app, columns, rows)
            }
            Output::Command { name, arg } if name.starts_with(ANSWER) => {
                self.answer(rt, app, &name, &arg)
            }
            Output::Command { name, arg } if name.starts_with(WAIT) => {
                match waited(&name) {
                    Some((asked, id)) if asked == self.generation => {
                        if let Err(refused) = rt.questions.answer(id, &arg) {
                            app.error(&refused.to_string());
                        }
                    }
                    Some((_, id)) => app.notice(&format!(
                        "the answer to question {id} was not delivered: it was asked in a session this interface has since left"
                    )),
                    None => {}
                }
                Ok(())
            }
            Output::Command { name, arg } => return commands::dispatch(self, app, &name, arg),
        };
        report(app, sent)
    }

    /// The answer to the trust question about `path`; plugins hear of each
    /// option whose value changed.
    fn trust(&self, rt: &Runtime, app: &mut App, path: &str, trust: bool) -> Sent {
        let before = process_loader(self.cwd).and_then(Loader::load).ok();
        match &self.paths {
            Ok(paths) => answer_trust(app, paths, path, trust, || process_loader(self.cwd)),
            Err(err) => unchecked(app, err),
        }
        // The project's configuration may apply now: plugins hear of each
        // option whose value changed.
        let after = process_loader(self.cwd).and_then(Loader::load).ok();
        match (&rt.commands, before, after) {
            (Some(commands), Some(before), Some(after)) => {
                let mut actions = Vec::new();
                for key in changed_keys(&before, &after) {
                    actions.extend(commands.raise(
                        &smith_plugins::extension::LifecycleEvent::ConfigChanged(key.to_owned()),
                        !app.status.busy,
                    ));
                }
                run_plugin_actions(&rt.handle, actions)
            }
            _ => Ok(()),
        }
    }

    /// Delivers the answer to a plugin's question (an [`ANSWER`] command)
    /// when it was asked by the runtime now.
    fn answer(&self, rt: &Runtime, app: &mut App, name: &str, arg: &str) -> Sent {
        match (answered(name), &rt.commands) {
            (Some((asked, plugin, id)), Some(commands)) if asked == self.generation => {
                match commands.answer(plugin, id, arg, !app.status.busy) {
                    Ok(actions) => run_plugin_actions(&rt.handle, actions),
                    Err(message) => {
                        app.error(&message);
                        Ok(())
                    }
                }
            }
            (Some((_, plugin, id)), _) => {
                app.notice(&format!(
                    "the answer to question {id:?} of plugin {plugin} was not delivered: it was asked in a session this interface has since left"
                ));
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }
}

/// Tells the runtime's plugins the terminal's size.
fn resized(rt: &Runtime, app: &App, columns: u16, rows: u16) -> Sent {
    match &rt.commands {
        // Idle is a safe point: what handlers return applies now.
        Some(commands) => run_plugin_actions(
            &rt.handle,
            commands.raise(
                &smith_plugins::extension::LifecycleEvent::Resize((
                    u32::from(columns),
                    u32::from(rows),
                )),
                !app.status.busy,
            ),
        ),
        None => Ok(()),
    }
}

/// What sending to the runtime came to.
pub(super) type Sent = Result<(), AgentError>;

/// Shows a failed send as an error line; the interface goes on.
pub(super) fn report(app: &mut App, sent: Sent) -> Flow {
    if let Err(err) = sent {
        app.error(&err.to_string());
    }
    Flow::Continue
}

/// A new session's first prompt names it (`tui-<time>` becomes
/// `fix-the-login-bug`, numbered when taken); a prompt with no usable words
/// keeps the name it has. A failed rename is said, and the prompt still
/// goes.
fn name_after_first_prompt(rt: &mut Runtime, app: &mut App, text: &str) {
    if !std::mem::take(&mut rt.titled) {
        return;
    }
    let Some(base) = smith_store::name_from_text(text) else {
        return;
    };
    match rt.journal.rename_titled(&base) {
        Ok(name) => {
            // The opening line named the session by its time; say the name
            // it has now, the one `/resume` and `smith session` list.
            app.notice(&format!("session {name}"));
            rt.name = name;
        }
        Err(err) => app.notice(&format!(
            "the session keeps the name {}: it could not be renamed to {base:?} ({err}); rename it with `smith session rename {} NAME`",
            rt.name, rt.name
        )),
    }
}
