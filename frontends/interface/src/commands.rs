//! The built-in slash commands, as one table: each row is a command's
//! name, aliases, usage, help line and the function that carries it out.
//! The interface's help and completion list the same rows
//! ([`merged`] with the plugins' commands) and [`dispatch`] runs them.
//!
//! The table is what the runtime needs to be entered, switched and
//! recovered without any plugin. Plugins' commands merge with it as
//! plugins merge with each other: a plugin's command of the same name
//! replaces the row's help in place (smith/product contributes the rows
//! with the same text; a row it does not list yet, such as `/rewind`,
//! keeps the table's), and new ones follow. A command the table carries
//! out always runs here; any other runs in the plugin that contributes
//! it.

use smith_tui::product::Command as Listed;
use smith_tui::run::{Flow, Msg};
use smith_tui::{App, Overlay, Picker};

use super::config::open_store;
use super::controller::{Controller, report};
use super::frontend::Feed;
use super::session::branch_overlay;
use super::{replay, switch};

/// What a command's function came to: the loop goes on or ends, or
/// sending to the runtime failed (shown as an error line).
pub(super) type Step = Result<Flow, smith_engine::agent::AgentError>;

/// A command's function: the controller, the interface and the argument
/// (the rest of the line, trimmed).
pub(super) type Run = fn(&mut Controller<'_>, &mut App, String) -> Step;

/// One built-in slash command.
pub(super) struct Builtin {
    /// The name typed after the slash.
    pub(super) name: &'static str,
    /// Other names that run it.
    pub(super) aliases: &'static [&'static str],
    /// The argument's shape, empty for none.
    pub(super) usage: &'static str,
    /// The line `/help` and the command popup show.
    pub(super) help: &'static str,
    /// What carries it out here; `None` when the interface
    /// ([`smith_tui::App`]) carries it out itself before it reaches the
    /// controller.
    pub(super) run: Option<Run>,
}

/// The built-in commands, in the order help lists them.
pub(super) static BUILTINS: [Builtin; 19] = [
    row("help", "", "show keys and commands", None),
    row("model", "[ID]", "choose the model", Some(model)),
    row("new", "", "start a new session", Some(switch::new)),
    row("resume", "[REF]", "open a stored session", Some(resume)),
    row(
        "continue",
        "",
        "continue the latest session",
        Some(switch::latest),
    ),
    row(
        "branch",
        "[ENTRY]",
        "choose a branch of the session",
        Some(branch),
    ),
    row(
        "compact",
        "[INSTRUCTIONS]",
        "compact the context",
        Some(compact),
    ),
    row(
        "replay",
        "[SPEED]",
        "replay the session's transcript",
        Some(replay::command),
    ),
    row(
        "undo",
        "[fx-N]",
        "undo the last change to the files",
        Some(undo),
    ),
    row("redo", "[fx-N]", "redo the last undone change", Some(redo)),
    row(
        "rewind",
        "[ENTRY]",
        "rewind files and conversation (Esc Esc)",
        Some(rewind),
    ),
    row("plugins", "", "list plugins", Some(plugins)),
    row("jobs", "", "list background jobs", Some(jobs)),
    row(
        "context",
        "",
        "show what every request carries",
        Some(context),
    ),
    row("search", "[TEXT]", "search the transcript", None),
    row(
        "search-all",
        "TEXT",
        "search every stored session",
        Some(search_all),
    ),
    row("copy", "", "copy the last answer", None),
    row(
        "thinking",
        "[LEVEL]",
        "show or set the thinking level",
        Some(thinking),
    ),
    row("quit", "", "exit smith", None),
];

const fn row(
    name: &'static str,
    usage: &'static str,
    help: &'static str,
    run: Option<Run>,
) -> Builtin {
    Builtin {
        name,
        aliases: &[],
        usage,
        help,
        run,
    }
}

/// The built-in command `name` (or one of its aliases) names.
pub(super) fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS
        .iter()
        .find(|b| b.name == name || b.aliases.contains(&name))
}

/// The command list the interface shows and completes: the table, with
/// the plugins' `commands` merged in (a plugin's command replaces the row
/// of its name in place; new ones follow, in contribution order).
pub(super) fn merged(commands: Vec<Listed>) -> Vec<Listed> {
    let mut list: Vec<Listed> = BUILTINS
        .iter()
        .map(|b| Listed {
            name: b.name.to_owned(),
            help: b.help.to_owned(),
            usage: b.usage.to_owned(),
        })
        .collect();
    for command in commands {
        match list.iter_mut().find(|c| c.name == command.name) {
            Some(old) => *old = command,
            None => list.push(command),
        }
    }
    list
}

/// Runs `/name arg`: the table's function for it, else the plugin that
/// contributes it.
pub(super) fn dispatch(ctl: &mut Controller<'_>, app: &mut App, name: &str, arg: String) -> Flow {
    let step = match find(name).and_then(|b| b.run) {
        Some(run) => run(ctl, app, arg),
        None => plugin(ctl, app, name, &arg),
    };
    match step {
        Ok(flow) => flow,
        Err(err) => report(app, Err(err)),
    }
}

/// A plugin's command: idle is a safe point, so its actions apply now;
/// while the agent works they wait for the end of the turn.
fn plugin(ctl: &mut Controller<'_>, app: &mut App, name: &str, arg: &str) -> Step {
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    match rt.commands.as_ref().filter(|c| c.owner(name).is_some()) {
        // The plugin runs on a thread of its own: a command that asks the
        // user and waits (or is slow) never stops drawing or input. Its
        // result comes back through the interface's channel.
        Some(commands) => {
            let commands = commands.clone();
            let shown = name.to_owned();
            let (name, arg) = (name.to_owned(), arg.to_owned());
            let settled = !app.status.busy;
            let (tx, tag) = (ctl.tx.clone(), ctl.generation);
            let spawned = std::thread::Builder::new()
                .name("smith-plugin-command".into())
                .spawn(move || {
                    let done = commands.run(&name, &arg, settled);
                    // The interface may be gone at exit.
                    let _ = tx.send(Msg::Agent((tag, Some(Feed::CommandDone(done)))));
                });
            if let Err(err) = spawned {
                app.error(&format!(
                    "/{} did not run: no thread could be started for it ({err}); the system may be out of threads",
                    shown
                ));
            }
        }
        None => app.notice(&format!(
            "/{name} is not available in the interface yet; use `smith session` or `smith eval` for it"
        )),
    }
    Ok(Flow::Continue)
}

/// `/model ID` switches the model (the interface opens the picker for
/// `/model` alone).
fn model(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    if arg.is_empty() {
        return plugin(ctl, app, "model", &arg);
    }
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    ctl.window = ctl
        .info
        .models
        .iter()
        .find(|m| m.id == arg)
        .and_then(|m| m.context_window);
    rt.handle
        .send(smith_engine::protocol::Command::SetModel { model: arg })?;
    Ok(Flow::Continue)
}

/// `/thinking` shows the thinking level requests ask for and the levels
/// the current model offers; `/thinking LEVEL` sets it (`off` or a catalog
/// level) for the next request on, and for every runtime started after.
/// The capability gate's warning shows when the model does not offer the
/// level; what is sent then is what the gate decides.
fn thinking(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    use super::host::thinking::{LEVEL_NAMES, level_name, parse_level};
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    let Some(dial) = rt.thinking.as_ref() else {
        app.notice(
            "thinking: the provider is mock (the offline scripted provider), which plays its script as written and takes no thinking level; start smith with a live provider (--provider) to choose one",
        );
        return Ok(Flow::Continue);
    };
    if !arg.is_empty() {
        match parse_level(&arg) {
            Ok(level) => {
                dial.set(level);
                super::runtime::remember_thinking(level);
            }
            Err(why) => {
                app.error(&format!(
                    "/thinking {arg}: {why}; nothing changed, the level stays {}",
                    level_name(dial.level())
                ));
                return Ok(Flow::Continue);
            }
        }
    }
    let offered = dial.offered();
    let levels = match offered.as_ref().map(|o| o.levels.as_deref()) {
        Some(Some([])) => "no thinking levels".to_owned(),
        Some(Some(levels)) => levels
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        Some(None) | None => "levels the catalog does not list".to_owned(),
    };
    let model = offered.map_or_else(|| "the model".to_owned(), |o| o.reference);
    let (sent, warning) = dial.effective();
    let mut status = app.status.clone();
    status.thinking = level_name(sent).to_owned();
    app.set_status(status);
    let set = if arg.is_empty() { "" } else { " set" };
    app.notice(&format!(
        "thinking {}{set} · {model} offers {levels} · /thinking LEVEL sets one of {}; Ctrl+T expands thinking",
        level_name(dial.level()),
        LEVEL_NAMES.join(", ")
    ));
    if let Some(warning) = warning {
        app.notice(&format!(
            "{} · requests carry thinking {}",
            super::runtime::thinking_warning(&warning),
            level_name(sent)
        ));
    }
    Ok(Flow::Continue)
}

/// `/branch` opens the session's tree; `/branch ENTRY` selects the entry.
fn branch(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    if !arg.is_empty() {
        return switch::branch(ctl, app, arg);
    }
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    app.open(rt.journal.with_session(branch_overlay));
    Ok(Flow::Continue)
}

/// `/resume` lists the current project's stored sessions (and those whose
/// project is unknown), newest first — name, date, messages, cost,
/// project, first prompt; Tab (or `/resume --all`) lists every project's;
/// `/resume REF` opens one.
fn resume(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    let all = match arg.as_str() {
        "--all" => true,
        "" | "--project" => false,
        _ => return switch::resume(ctl, app, arg),
    };
    match open_store().and_then(|s| Ok(s.list()?)) {
        Ok(mut list) => {
            use smith_store::summary::{in_project, listing_now_ms, picker_row};
            list.sort_by_key(|s| std::cmp::Reverse(s.modified_ms));
            let total = list.len();
            if !all {
                list.retain(|s| in_project(s, ctl.cwd));
            }
            let now = listing_now_ms();
            let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            let items = list
                .iter()
                .map(|s| picker_row(s, now, home.as_deref()))
                .collect();
            let args = list.iter().map(|s| s.id.to_hex()).collect();
            let (title, hint, other) = if all {
                (
                    format!("Sessions · every project ({total})"),
                    "Tab: this project only",
                    "--project",
                )
            } else {
                (
                    format!("Sessions · this project ({} of {total})", list.len()),
                    "Tab: every project",
                    "--all",
                )
            };
            app.open(Overlay::Picker(Picker {
                title,
                command: "resume".to_owned(),
                items,
                args,
                toggle: Some((
                    hint.to_owned(),
                    smith_tui::Output::Command {
                        name: "resume".to_owned(),
                        arg: other.to_owned(),
                    },
                )),
                ..Picker::default()
            }));
        }
        Err(err) => app.error(&format!("could not list sessions: {err}")),
    }
    Ok(Flow::Continue)
}

/// The most hits `/search-all` lists; the title says when there were more.
const SEARCH_ALL_SHOWN: usize = 200;

/// `/search-all TEXT` searches the text of every stored session (every
/// project's, newest first, as `smith session search` does) and lists the
/// hits — session, date, kind of entry, the text around the match; choosing
/// one opens that session with the transcript search set to TEXT. The
/// picker hands its choice back as `/search-all --open ID TEXT`.
fn search_all(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    if let Some(rest) = arg.strip_prefix("--open ") {
        let (id, text) = rest.split_once(' ').unwrap_or((rest, ""));
        let step = switch::resume(ctl, app, id.to_owned())?;
        if !text.is_empty() {
            app.open(Overlay::Search {
                query: text.to_owned(),
            });
        }
        return Ok(step);
    }
    if arg.is_empty() {
        app.error("/search-all needs the text to look for: type /search-all TEXT (/search TEXT searches this session's transcript only)");
        return Ok(Flow::Continue);
    }
    let query = match smith_store::search::Query::new(&arg) {
        Ok(query) => query,
        Err(err) => {
            app.error(&format!("/search-all {arg:?}: {err}"));
            return Ok(Flow::Continue);
        }
    };
    let store = match open_store() {
        Ok(store) => store,
        Err(err) => {
            app.error(&format!(
                "/search-all could not open the session store: {err:#}"
            ));
            return Ok(Flow::Continue);
        }
    };
    let mut sessions = match store.list() {
        Ok(list) => list,
        Err(err) => {
            app.error(&format!(
                "/search-all could not list the stored sessions: {err}"
            ));
            return Ok(Flow::Continue);
        }
    };
    sessions.sort_by_key(|s| std::cmp::Reverse(s.modified_ms));
    let now = smith_store::summary::listing_now_ms();
    let started = std::time::Instant::now();
    let mut items = Vec::new();
    let mut args = Vec::new();
    let mut options = smith_store::search::SearchOptions::default();
    let mut note = None;
    match smith_host::settings::search_index_dir() {
        Ok(dir) => options.index_dir = Some(dir),
        Err(err) => {
            note = Some(format!(
                "note: /search-all reads every entry: smith's cache directory, where the search index is kept, is unknown ({err:#})"
            ));
        }
    }
    let searched = smith_store::search::search_sessions_with(
        &store,
        &sessions,
        &query,
        &options,
        |info, hit| {
            if items.len() >= SEARCH_ALL_SHOWN {
                return false;
            }
            let name = info
                .name
                .clone()
                .unwrap_or_else(|| info.id.to_hex()[..8].to_owned());
            items.push(format!(
                "{name}  #{}  {}  {}  {}",
                hit.entry,
                smith_store::summary::human_date(hit.timestamp_ms, now),
                search_kind(hit.kind),
                hit.snippet
            ));
            args.push(format!("--open {} {arg}", info.id.to_hex()));
            true
        },
    );
    let searched = match searched {
        Ok(searched) => searched,
        Err(err) => {
            app.error(&format!("/search-all stopped: {err}"));
            return Ok(Flow::Continue);
        }
    };
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Some(dir) = &options.index_dir {
        // The indexes of sessions deleted since.
        let listed: Vec<_> = sessions.iter().map(|s| s.id).collect();
        smith_store::search_index::prune(dir, &listed);
    }
    let mb = searched.within.bytes as f64 / 1e6;
    if let Some(note) = note.or(searched.note.clone()) {
        app.notice(&note);
    }
    if items.is_empty() {
        app.notice(&format!(
            "no stored session holds {arg:?} (searched {}, {mb:.1} MB in {ms:.0} ms)",
            sessions_word(searched.sessions)
        ));
        return Ok(Flow::Continue);
    }
    let shown = if items.len() >= SEARCH_ALL_SHOWN {
        format!("the first {SEARCH_ALL_SHOWN} hits")
    } else if items.len() == 1 {
        "1 hit".to_owned()
    } else {
        format!("{} hits", items.len())
    };
    app.open(Overlay::Picker(Picker {
        title: format!(
            "Search {arg:?} · {shown} in {} ({mb:.1} MB in {ms:.0} ms)",
            sessions_word(sessions.len() as u64)
        ),
        command: "search-all".to_owned(),
        items,
        args,
        ..Picker::default()
    }));
    Ok(Flow::Continue)
}

/// "1 session", "N sessions".
fn sessions_word(n: u64) -> String {
    if n == 1 {
        "1 session".to_owned()
    } else {
        format!("{n} sessions")
    }
}

/// A short word for a hit's entry kind.
fn search_kind(kind: smith_store::EntryKind) -> &'static str {
    use smith_store::EntryKind as K;
    match kind {
        K::UserMessage => "user",
        K::AssistantMessage => "assistant",
        K::ToolCall => "tool call",
        K::ToolResult => "tool result",
        K::Compaction => "summary",
        _ => "entry",
    }
}

/// `/compact [INSTRUCTIONS]` compacts the context once the runtime is idle.
fn compact(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    if app.status.busy {
        app.notice("the agent is working; /compact runs once the turn ends (Esc interrupts it)");
    } else {
        rt.handle.send(smith_engine::protocol::Command::Compact {
            instructions: (!arg.is_empty()).then_some(arg),
        })?;
    }
    Ok(Flow::Continue)
}

/// `/undo [fx-N]` undoes the newest turn that changed the project (or
/// effect fx-N) at the paths it changed, once the runtime is idle.
fn undo(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    checkpoint(ctl, app, &arg, true)
}

/// `/redo [fx-N]` redoes the most recently undone turn (or effect fx-N).
fn redo(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    checkpoint(ctl, app, &arg, false)
}

/// Undo or redo over the checkpoints of the current session (see
/// `smith_engine::checkpoint`): a whole turn, or with `fx-N` one effect;
/// refused, changing nothing, when the paths changed outside smith since
/// (`smith checkpoint undo --force` overrides).
fn checkpoint(ctl: &mut Controller<'_>, app: &mut App, arg: &str, undo: bool) -> Step {
    use smith_engine::checkpoint::{self, Checkpoints, TurnRef, UndoOptions};
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    let name = if undo { "undo" } else { "redo" };
    if app.status.busy {
        app.notice(&format!(
            "the agent is working; run /{name} once the turn ends (Esc interrupts it)"
        ));
        return Ok(Flow::Continue);
    }
    let Some(root) = smith_host::runtime::checkpoints_root() else {
        app.error(&format!(
            "/{name}: smith cannot tell where its data directory is, so it has no checkpoints; set SMITH_HOME"
        ));
        return Ok(Flow::Continue);
    };
    let timeline = match rt
        .journal
        .with_session(smith_engine::journal::store::timeline)
    {
        Ok(timeline) => timeline,
        Err(err) => {
            app.error(&format!("/{name}: {err}"));
            return Ok(Flow::Continue);
        }
    };
    let records = checkpoint::records_of(&timeline);
    let done = Checkpoints::open(ctl.cwd, &root)
        .map_err(checkpoint::CheckpointError::from)
        .and_then(|c| {
            let options = UndoOptions::default();
            let journal = rt.journal.as_ref();
            c.with_vcs(|vcs| match (arg.is_empty(), undo) {
                (false, true) => checkpoint::undo(vcs, journal, &records, Some(arg), options),
                (false, false) => checkpoint::redo(vcs, journal, &records, Some(arg), options),
                (true, true) => {
                    checkpoint::undo_turn(vcs, journal, &timeline, TurnRef::Latest, options)
                }
                (true, false) => {
                    checkpoint::redo_turn(vcs, journal, &timeline, TurnRef::Latest, options)
                }
            })?
        });
    match done {
        Ok(done) => {
            let verb = if undo { "undid" } else { "redid" };
            let what = match (done.record.turn, &done.record.effect_id) {
                (Some(_), _) => format!("the turn's {}", done.record.effects.join(", ")),
                (None, Some(effect)) => effect.clone(),
                (None, None) => "-".to_owned(),
            };
            app.notice(&format!(
                "{verb} {what}: {}",
                done.record.changed.join(", ")
            ));
        }
        Err(err) => app.error(&format!("/{name}: {err}")),
    }
    Ok(Flow::Continue)
}

/// `/rewind` lists the turns of the session's branch, newest first, with
/// the files each changed; `/rewind ENTRY` rewinds files and conversation
/// to just before the prompt `ENTRY` (see [`switch::rewind`]).
fn rewind(ctl: &mut Controller<'_>, app: &mut App, arg: String) -> Step {
    if !arg.is_empty() {
        return switch::rewind(ctl, app, arg);
    }
    let Some(rt) = ctl.runtime.as_ref() else {
        return Ok(Flow::Exit);
    };
    let root = smith_engine::checkpoint::project_root(ctl.cwd);
    let turns = match rt
        .journal
        .with_session(smith_engine::journal::store::timeline)
    {
        Ok(timeline) => smith_engine::checkpoint::turns(&timeline, &root),
        Err(err) => {
            app.error(&format!("/rewind: {err}"));
            return Ok(Flow::Continue);
        }
    };
    if turns.is_empty() {
        app.notice("nothing to rewind: this session has no prompt yet");
        return Ok(Flow::Continue);
    }
    app.open(rewind_overlay(&turns));
    Ok(Flow::Continue)
}

/// The picker `/rewind` opens: the turns, newest first, each `#ENTRY`,
/// its number, the prompt and how many files it changed; the details list
/// the files.
pub(super) fn rewind_overlay(turns: &[smith_engine::checkpoint::Turn]) -> Overlay {
    let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
    let items = turns
        .iter()
        .rev()
        .map(|t| {
            format!(
                "#{} turn {}: {} · {}",
                t.entry,
                t.number,
                t.preview(),
                files(t.changed.len())
            )
        })
        .collect();
    let mut detail = vec![
        "Files and conversation go back to just before the chosen prompt; the session goes on in a new branch (the old one stays).".to_owned(),
    ];
    detail.extend(
        turns
            .iter()
            .rev()
            .filter(|t| !t.changed.is_empty())
            .map(|t| {
                let undone = if t.undone { " (undone)" } else { "" };
                format!("turn {}{undone}: {}", t.number, t.changed.join(", "))
            }),
    );
    Overlay::Picker(Picker {
        title: "Rewind to before a turn".to_owned(),
        detail,
        command: "rewind".to_owned(),
        items,
        filter: String::new(),
        selected: 0,
        cancel: None,
        ..Picker::default()
    })
}

/// `/plugins` lists the plugins the binary carries.
fn plugins(_: &mut Controller<'_>, app: &mut App, _: String) -> Step {
    app.open(plugins_overlay());
    Ok(Flow::Continue)
}

fn jobs(ctl: &mut Controller<'_>, app: &mut App, _: String) -> Step {
    let list = ctl
        .runtime
        .as_ref()
        .map(|rt| rt.jobs.list())
        .unwrap_or_default();
    app.open(jobs_overlay(&list));
    Ok(Flow::Continue)
}

/// The overlay `/jobs` opens: one line per job of the runtime (id, state,
/// elapsed time, output size, command).
pub(super) fn jobs_overlay(jobs: &[smith_engine::tools::jobs::JobInfo]) -> Overlay {
    let mut lines: Vec<String> = jobs
        .iter()
        .map(|j| {
            let state = match (j.state.as_str(), j.exit_code, j.signal) {
                ("running", _, _) => "running".to_owned(),
                (state, Some(code), _) => format!("{state} (code {code})"),
                (state, None, Some(sig)) => format!("{state} (signal {sig})"),
                (state, None, None) => state.to_owned(),
            };
            format!(
                "{}  {state}  {:.1} s  {} bytes  {}",
                j.id,
                j.elapsed_ms as f64 / 1000.0,
                j.output_bytes,
                j.command.lines().next().unwrap_or_default()
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push("No background jobs in this session's runtime.".to_owned());
    }
    lines.push(String::new());
    lines.push(
        "The model starts jobs with bash (background: true, or a command that outruns its \
         timeout) and follows them with bash_output and bash_kill; they end with the runtime."
            .to_owned(),
    );
    Overlay::Info {
        title: " jobs · any key closes ".to_owned(),
        lines,
    }
}

fn context(ctl: &mut Controller<'_>, app: &mut App, _: String) -> Step {
    app.open(context_overlay(ctl.cwd));
    Ok(Flow::Continue)
}

/// The overlay `/context` opens: what `smith context` prints for `cwd`
/// (the enabled extensions loaded afresh, their prompt fragments and the
/// tool definitions measured).
pub(super) fn context_overlay(cwd: &std::path::Path) -> Overlay {
    let journal: std::sync::Arc<dyn smith_engine::journal::EffectJournal> =
        std::sync::Arc::new(smith_engine::journal::MemoryJournal::new());
    let ids = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
    let (mut plugins, warnings) = smith_host::extensions::load_into(&journal, &ids, None);
    let mut report = smith_host::context::Report::new(cwd, &mut plugins);
    report.warnings.splice(0..0, warnings);
    let mut lines: Vec<String> = report.text().lines().map(str::to_owned).collect();
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    Overlay::Info {
        title: " context · any key closes ".to_owned(),
        lines,
    }
}

/// The overlay `/plugins` opens.
pub(super) fn plugins_overlay() -> Overlay {
    let mut lines: Vec<String> = smith_plugins::builtin::BUILTINS
        .iter()
        .map(|b| format!("{} ({}, built in): {}", b.name, b.world, b.description))
        .collect();
    lines.push(String::new());
    lines.push(
        "The layout, theme, keys, commands and tool presentation come from smith/product \
         and the enabled extension plugins, read once when the interface starts."
            .to_owned(),
    );
    Overlay::Info {
        title: " plugins · any key closes ".to_owned(),
        lines,
    }
}
