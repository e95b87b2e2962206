//! The interface model: transcript, input, status and overlays, updated by
//! events and drawn by [`App::render`], which never changes it.
//!
//! A frame is two steps: [`App::prepare`] lays out the screen for its size
//! (measuring only what will be visible), then [`App::render`] draws into a
//! [`Buffer`](crate::Buffer) using a per-frame bump arena for scratch text.
//!
//! This module holds the model and what hosts call to change it; terminal
//! events (keys, overlays' keys, mouse, paste) are handled in `keys.rs`
//! and drawing is in `draw.rs`.

use bumpalo::Bump;
use crossterm::event::{KeyCode, KeyModifiers};

use crate::editor::Editor;
use crate::layout::Rect;
use crate::product::{Action, Product, Theme};
use crate::transcript::{EntryKind, Match, ToolState, Transcript, find_all};

mod draw;
mod keys;

/// What the interface asks its host to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Start a turn with this prompt (the agent was idle).
    Prompt(String),
    /// Steer the running turn with this text.
    Steer(String),
    /// Queue this text as a follow-up.
    FollowUp(String),
    /// Interrupt the running turn.
    Interrupt,
    /// Run a slash command the interface does not handle itself.
    Command {
        /// Name without the slash.
        name: String,
        /// The rest of the line.
        arg: String,
    },
    /// Copy this text to the clipboard.
    Copy(String),
    /// The terminal was resized to `columns` x `rows` (already applied to
    /// the layout; the host may tell others, such as extension plugins).
    Resized {
        /// Columns.
        columns: u16,
        /// Rows.
        rows: u16,
    },
    /// The answer to a [`Overlay::Trust`] question.
    Trust {
        /// The project root that was asked about.
        path: String,
        /// True to trust it now; false for "not now".
        trust: bool,
    },
    /// Exit.
    Quit,
}

/// The status line's content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// The model id.
    pub model: String,
    /// Cost so far in US dollars, when the price is known.
    pub cost: Option<f64>,
    /// Context tokens used and the window size, when known.
    pub context: Option<(u64, u64)>,
    /// Whether the agent is working (the status line shows a spinner and
    /// how long the work has run).
    pub busy: bool,
    /// The thinking level requests ask for (`off`, `high`); empty when
    /// the provider takes none (not shown).
    pub thinking: String,
    /// Queued follow-ups.
    pub queue: usize,
    /// What the host is doing besides a turn (`compacting`, `replaying`),
    /// shown in place of "working" / "ready"; empty for nothing.
    pub activity: String,
    /// When the provider will be asked again after a failure it asked to
    /// wait out (a rate limit's `Retry-After`, a back-off): the status line
    /// counts down to it. `None` when no retry is pending.
    pub retry_at: Option<std::time::Instant>,
}

/// A list to choose from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picker {
    /// Title.
    pub title: String,
    /// Lines shown between the title and the items: what a question is
    /// about (the exact command, a diff), as plain text. Empty for a plain
    /// list.
    pub detail: Vec<String>,
    /// The command run with the chosen item as its argument.
    pub command: String,
    /// Items.
    pub items: Vec<String>,
    /// Typed filter.
    pub filter: String,
    /// Selected row among the filtered items.
    pub selected: usize,
    /// What Esc emits (a plugin's question is answered with nothing);
    /// `None` just closes the list.
    pub cancel: Option<Output>,
    /// The argument the command gets for each item, index for index (a
    /// session's id for its descriptive row); empty: the item itself. A
    /// picker with arguments is a table, as wide as the screen allows.
    pub args: Vec<String>,
    /// What Tab emits, and the footer that says so (`Tab: every
    /// project`); `None`: no footer, and Tab does nothing.
    pub toggle: Option<(String, Output)>,
}

impl Picker {
    fn filtered(&self) -> impl Iterator<Item = &String> {
        self.filtered_indices().map(|k| &self.items[k])
    }

    /// The indices of the items the filter keeps, in order.
    fn filtered_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.items.iter().enumerate().filter_map(move |(k, i)| {
            (self.filter.is_empty() || find_all(i, &self.filter).next().is_some()).then_some(k)
        })
    }

    /// The argument of the selected item, if any item is left.
    fn chosen(&self) -> Option<String> {
        let k = self.filtered_indices().nth(self.selected)?;
        Some(self.args.get(k).unwrap_or(&self.items[k]).clone())
    }
}

/// One row of a [`Tree`] overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    /// Nesting depth (0 for a root).
    pub depth: u16,
    /// What the row shows (sanitized when drawn).
    pub label: String,
    /// The argument the tree's command runs with when this row is chosen.
    pub arg: String,
    /// Whether the row is the current one (drawn with a `●`).
    pub current: bool,
}

/// A tree to choose a node from (the session's branches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Title.
    pub title: String,
    /// The command run with the chosen row's `arg`.
    pub command: String,
    /// Rows in depth-first order; a row's children follow it with a larger
    /// depth.
    pub rows: Vec<TreeRow>,
    /// The highlighted row.
    pub selected: usize,
}

impl Tree {
    /// Whether row `i` is the last of its siblings (no later row at the
    /// same depth before one at a smaller depth).
    fn last_sibling(&self, i: usize) -> bool {
        let depth = self.rows[i].depth;
        for r in &self.rows[i + 1..] {
            if r.depth < depth {
                return true;
            }
            if r.depth == depth {
                return false;
            }
        }
        true
    }

    /// Whether the ancestor of row `i` at `depth` has a later sibling, so a
    /// vertical line continues through row `i` at that depth.
    fn continues(&self, i: usize, depth: u16) -> bool {
        let Some(a) = self.rows[..i].iter().rposition(|r| r.depth == depth) else {
            return false;
        };
        !self.last_sibling(a)
    }
}

/// The overlay that owns focus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// None: the input editor has focus.
    None,
    /// Key and command help.
    Help,
    /// Transcript search.
    Search {
        /// The query.
        query: String,
    },
    /// A choice (model, session, or a plugin's select intent).
    Picker(Picker),
    /// A tree to choose from (the session's branches); Enter runs the
    /// tree's command with the highlighted row's argument.
    Tree(Tree),
    /// Lines of information (the plugin list); any key closes it.
    Info {
        /// Title.
        title: String,
        /// The lines, drawn wrapped.
        lines: Vec<String>,
    },
    /// A yes/no question; yes emits `on_yes`.
    Confirm {
        /// The question.
        message: String,
        /// What yes does.
        on_yes: Output,
        /// What no (or Esc) does; `None` just closes the question.
        on_no: Option<Output>,
    },
    /// A free-text question (a plugin's input intent); Enter runs `command`
    /// with the text.
    Prompt {
        /// The question.
        message: String,
        /// The command run with the answer.
        command: String,
        /// The answer so far.
        text: String,
        /// What Esc emits; `None` just closes the question.
        cancel: Option<Output>,
    },
    /// Whether to trust the project at `path` (its `.smith` directory).
    /// Owns focus until answered; `t` trusts, `n` or Esc is "not now",
    /// and Enter takes the highlighted choice, which starts on "not now".
    Trust {
        /// The project root.
        path: String,
        /// The project was trusted once but has changed since.
        changed: bool,
        /// Whether "trust" (rather than "not now") is highlighted.
        on_trust: bool,
    },
}

/// Options from configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Ask before exiting while work runs (`tui.confirm-exit`).
    pub confirm_exit: bool,
    /// Colors allowed (off for `NO_COLOR` or `color = never`).
    pub color: bool,
    /// Lines per scroll step (`tui.scroll-lines`).
    pub scroll_lines: u16,
    /// Mouse captured (`tui.mouse`): the wheel scrolls the transcript.
    pub mouse: bool,
    /// The theme drawn with (`tui.theme`, resolved among the product's
    /// themes); `None` draws the product's `default` theme. Drawn
    /// monochrome when colors are off.
    pub theme: Option<Theme>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            confirm_exit: true,
            color: true,
            scroll_lines: 3,
            mouse: true,
            theme: None,
        }
    }
}

/// The interface model.
#[derive(Debug)]
pub struct App {
    product: Product,
    theme: Theme,
    bindings: Vec<(KeyCode, KeyModifiers, Action)>,
    options: Options,
    /// The transcript.
    pub transcript: Transcript,
    /// The input editor.
    pub editor: Editor,
    /// The status line.
    pub status: Status,
    overlay: Overlay,
    current_match: Option<Match>,
    selected: Option<usize>,
    highlight: String,
    popup_selected: usize,
    completions: Vec<String>,
    running_tools: Vec<(String, usize, u8)>,
    focused: bool,
    size: (u16, u16),
    rects: [Rect; 3],
    cwd: std::path::PathBuf,
    models: Vec<String>,
    generation: u64,
    /// Overlays waiting for the current one to close (plugin questions
    /// asked while another overlay has focus), oldest first.
    queued: std::collections::VecDeque<Overlay>,
    /// When the interrupt key (Esc) was last pressed while idle with an
    /// empty editor: a second press within [`DOUBLE_ESC`] opens `/rewind`.
    last_esc: Option<std::time::Instant>,
    /// When the clear-or-exit key (Ctrl+C) last interrupted a turn or
    /// found an empty idle input: a second press within
    /// [`DOUBLE_CTRL_C`] exits, and the status line says so meanwhile.
    last_ctrl_c: Option<std::time::Instant>,
    /// What the status line shows while a second press would exit
    /// (`press Ctrl+C again to exit`, with the key bound to clear-or-exit).
    exit_hint: String,
    /// The first help row shown (the help overlay scrolls when it does not
    /// fit the screen).
    help_scroll: u16,
    /// The panels plugins set (`set-widget`), in the order they first
    /// appeared; drawn above the editor.
    widgets: Vec<Widget>,
    /// Where the panels are drawn this frame (empty without panels).
    panel: Rect,
    /// Since when the agent has been busy: the status line's elapsed time
    /// and spinner count from it.
    busy_since: Option<std::time::Instant>,
    /// User messages sent from this interface whose session entry id is
    /// not known yet (the journal records them after they are shown), by
    /// entry, oldest first.
    awaiting_ids: std::collections::VecDeque<usize>,
    /// The entry the assistant message streaming now started at.
    assistant_from: Option<usize>,
}

/// The spinner's frames, one per [`SPIN_INTERVAL`] while work runs.
pub const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// How often the spinner moves (and the loop ticks while work runs).
pub const SPIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// How often the loop ticks while idle (time-limited hints lapse).
pub const IDLE_TICK: std::time::Duration = std::time::Duration::from_millis(500);

/// A plugin's panel: a title and lines of plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widget {
    /// The plugin that set it.
    pub plugin: String,
    /// Its name within the plugin (its title).
    pub name: String,
    /// Its lines.
    pub lines: Vec<String>,
}

/// The most rows the panels take; the transcript keeps at least half the
/// screen's transcript area whatever the panels hold.
pub const MAX_PANEL_ROWS: u16 = 12;

/// The editing keys help lists after the bound keys: the editor's own,
/// which no binding changes.
pub(crate) const EDIT_HELP: [(&str, &str); 6] = [
    ("\\ enter", "new line in the input (as ctrl+j)"),
    ("alt+b alt+f", "move a word back / forward"),
    ("alt+bksp", "delete the word before (as ctrl+w)"),
    (
        "ctrl+a ctrl+e",
        "line start / end (ctrl+u: delete to start)",
    ),
    ("/typo  !cmd", "refused, never sent to the model"),
    ("␣ first", "a leading space sends the line as written"),
];

/// How close two Esc presses must be to count as Esc Esc.
pub const DOUBLE_ESC: std::time::Duration = std::time::Duration::from_millis(500);

/// How soon a second Ctrl+C must follow the one that interrupted or found
/// nothing to clear to exit.
pub const DOUBLE_CTRL_C: std::time::Duration = std::time::Duration::from_secs(2);

/// A chord as help writes it: `ctrl+c` as `Ctrl+C`.
fn chord_label(chord: &str) -> String {
    chord
        .split('+')
        .map(|part| {
            let mut chars = part.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => c.to_uppercase().collect(),
                (Some(c), Some(_)) => c.to_uppercase().chain(part.chars().skip(1)).collect(),
                (None, _) => String::new(),
            }
        })
        .collect::<Vec<String>>()
        .join("+")
}

/// The theme `options` choose among `product`'s, monochrome without colors.
fn drawn_theme(product: &Product, options: &Options) -> Theme {
    let theme = options.theme.unwrap_or(product.theme);
    if options.color {
        theme
    } else {
        theme.monochrome()
    }
}

impl App {
    /// A new interface with the product's presentation.
    pub fn new(product: Product, options: Options) -> Self {
        let theme = drawn_theme(&product, &options);
        let bindings = product
            .keys
            .iter()
            .map(|b| (b.code, b.mods, b.action))
            .collect();
        let exit_key = product
            .keys
            .iter()
            .find(|b| b.action == Action::ClearOrExit)
            .map_or_else(|| "Ctrl+C".to_owned(), |b| chord_label(&b.chord));
        let exit_hint = format!("press {exit_key} again to exit");
        Self {
            product,
            theme,
            bindings,
            options,
            transcript: Transcript::new(),
            editor: Editor::new(),
            status: Status::default(),
            overlay: Overlay::None,
            current_match: None,
            selected: None,
            highlight: String::new(),
            popup_selected: 0,
            completions: Vec::new(),
            running_tools: Vec::new(),
            focused: true,
            size: (80, 24),
            rects: [Rect::default(); 3],
            cwd: std::path::PathBuf::from("."),
            models: Vec::new(),
            generation: 1,
            queued: std::collections::VecDeque::new(),
            last_esc: None,
            last_ctrl_c: None,
            exit_hint,
            help_scroll: 0,
            widgets: Vec::new(),
            panel: Rect::default(),
            busy_since: None,
            awaiting_ids: std::collections::VecDeque::new(),
            assistant_from: None,
        }
    }

    /// Sets `plugin`'s panel `name` to the lines of `text` (a
    /// `set-widget` intent); empty text removes it. Control characters are
    /// not drawn.
    pub fn set_widget(&mut self, plugin: &str, name: &str, text: &str) {
        let at = self
            .widgets
            .iter()
            .position(|w| w.plugin == plugin && w.name == name);
        if text.trim().is_empty() {
            if let Some(at) = at {
                self.widgets.remove(at);
                self.touch();
            }
            return;
        }
        let lines: Vec<String> = text
            .lines()
            .map(|line| line.chars().filter(|c| !c.is_control()).collect())
            .collect();
        match at {
            Some(at) if self.widgets[at].lines == lines => return,
            Some(at) => self.widgets[at].lines = lines,
            None => self.widgets.push(Widget {
                plugin: plugin.to_owned(),
                name: name.to_owned(),
                lines,
            }),
        }
        self.touch();
    }

    /// Removes every panel (the interface moved to another session, whose
    /// plugins set their own).
    pub fn clear_widgets(&mut self) {
        if !self.widgets.is_empty() {
            self.widgets.clear();
            self.touch();
        }
    }

    /// The panels shown, in order.
    pub fn widgets(&self) -> &[Widget] {
        &self.widgets
    }

    /// Lets time-limited state lapse: a pending "press again to exit"
    /// ends [`DOUBLE_CTRL_C`] after the press. Hosts call it when no event
    /// arrived for a while.
    pub fn tick(&mut self) {
        // A pending retry's countdown, the spinner and the elapsed time
        // move on; an idle screen is not drawn again.
        if self.status.retry_at.is_some() || self.busy_since.is_some() {
            self.touch();
        }
        if self
            .last_ctrl_c
            .is_some_and(|t| t.elapsed() > DOUBLE_CTRL_C)
        {
            self.last_ctrl_c = None;
            self.touch();
        }
    }

    /// The help overlay's rows: bound keys, a blank, the editing keys, a
    /// blank, the commands.
    pub(crate) fn help_rows(&self) -> usize {
        self.product.keys.len() + EDIT_HELP.len() + self.product.commands.len() + 2
    }

    /// The help box for a `width` × `height` screen and the rows inside it.
    pub(crate) fn help_area(&self, width: u16, height: u16) -> (Rect, u16) {
        let rows = self.help_rows() as u16;
        let area = Rect {
            x: 0,
            y: 0,
            width,
            height,
        }
        .centered(60, rows.saturating_add(2));
        (area, area.height.saturating_sub(2))
    }

    /// The last first row the help can scroll to at the current size.
    fn help_max_scroll(&self) -> u16 {
        let (_, inner) = self.help_area(self.size.0, self.size.1);
        (self.help_rows() as u16).saturating_sub(inner)
    }

    /// The first help row shown, kept within what the size allows.
    pub(crate) fn help_first_row(&self) -> u16 {
        self.help_scroll.min(self.help_max_scroll())
    }

    /// How long the host's loop waits for an event before it calls
    /// [`App::tick`]: the spinner's interval while work runs, else
    /// [`IDLE_TICK`].
    pub fn tick_interval(&self) -> std::time::Duration {
        if self.busy_since.is_some() {
            SPIN_INTERVAL
        } else {
            IDLE_TICK
        }
    }

    /// Since when the agent has been busy, while it is.
    pub fn busy_since(&self) -> Option<std::time::Instant> {
        self.busy_since
    }

    /// The hint the status line shows while a second Ctrl+C would exit.
    pub fn exit_hint(&self) -> Option<&str> {
        self.last_ctrl_c
            .is_some_and(|t| t.elapsed() <= DOUBLE_CTRL_C)
            .then_some(self.exit_hint.as_str())
    }

    /// Replaces the options (after configuration is reloaded).
    pub fn set_options(&mut self, options: Options) {
        self.theme = drawn_theme(&self.product, &options);
        self.options = options;
        self.touch();
    }

    /// The product the interface draws with.
    pub fn product(&self) -> &Product {
        &self.product
    }

    /// The options in force.
    pub fn options(&self) -> Options {
        self.options
    }

    /// Sets the directory `@` completes paths in.
    pub fn set_cwd(&mut self, cwd: std::path::PathBuf) {
        self.cwd = cwd;
    }

    /// Sets the models the picker offers.
    pub fn set_models(&mut self, models: Vec<String>) {
        self.models = models;
    }

    /// The overlay that has focus.
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Opens an overlay (for host commands and plugin intents).
    pub fn open(&mut self, overlay: Overlay) {
        self.overlay = overlay;
        self.touch();
    }

    /// Opens `overlay` now when nothing else has focus, else once the
    /// overlays open and queued before it have closed (a plugin's question
    /// never takes focus from one the user is answering).
    pub fn ask(&mut self, overlay: Overlay) {
        if matches!(self.overlay, Overlay::None) {
            self.open(overlay);
        } else {
            self.queued.push_back(overlay);
        }
    }

    /// Closes the question overlay (open or queued) whose answer runs
    /// `command` — a question that no longer waits (it timed out or its
    /// asker gave up); the next queued overlay takes focus. Returns whether
    /// one was closed.
    pub fn withdraw(&mut self, command: &str) -> bool {
        fn runs(overlay: &Overlay, command: &str) -> bool {
            match overlay {
                Overlay::Picker(picker) => picker.command == command,
                Overlay::Prompt { command: c, .. } => c == command,
                Overlay::Confirm {
                    on_yes: Output::Command { name, .. },
                    ..
                } => name == command,
                _ => false,
            }
        }
        let queued = self.queued.len();
        self.queued.retain(|overlay| !runs(overlay, command));
        let mut closed = queued != self.queued.len();
        if runs(&self.overlay, command) {
            self.overlay = self.queued.pop_front().unwrap_or(Overlay::None);
            closed = true;
        }
        if closed {
            self.touch();
        }
        closed
    }

    /// Whether the terminal has focus.
    pub fn focused(&self) -> bool {
        self.focused
    }

    /// Changes whenever the screen may need redrawing.
    pub fn generation(&self) -> u64 {
        self.generation + self.transcript.generation()
    }

    fn touch(&mut self) {
        self.generation += 1;
    }

    /// Empties the transcript: another session, or a replay, is shown
    /// next. Calls still running in the old transcript are forgotten, so
    /// a call of the next one with the same id is never taken for one of
    /// them (its result would go to an entry of the old transcript and
    /// its own title would stay running); the selection and the search
    /// match, which point into the old transcript, go too.
    pub fn clear_transcript(&mut self) {
        // The new transcript counts its generation from 0: the sum keeps
        // growing, so the next frame is drawn.
        self.generation += self.transcript.generation() + 1;
        self.transcript = Transcript::new();
        self.running_tools.clear();
        self.selected = None;
        self.current_match = None;
        self.awaiting_ids.clear();
        self.assistant_from = None;
    }

    // ---- events from the agent -------------------------------------------

    /// Shows a user message.
    pub fn user_message(&mut self, text: &str) {
        self.transcript.push(EntryKind::User, text);
    }

    /// Shows a message sent from this interface (a prompt, a steer, a
    /// follow-up as it is delivered): its session entry id shows once the
    /// journal has recorded it ([`App::message_recorded`]).
    pub fn sent_message(&mut self, text: &str) {
        let i = self.transcript.push(EntryKind::User, text);
        self.awaiting_ids.push_back(i);
    }

    /// Appends streamed assistant text.
    pub fn assistant_delta(&mut self, text: &str) {
        self.transcript.append(EntryKind::Assistant, text);
    }

    /// An assistant message starts streaming: its text goes to a new
    /// entry (never onto the text of the message before it), which takes no
    /// room until text arrives.
    pub fn assistant_start(&mut self) {
        let i = self.transcript.push(EntryKind::Assistant, "");
        self.assistant_from = Some(i);
    }

    /// The session recorded a message as entry `id`: a user message with
    /// `text`, or (`user` false) the assistant message that streamed last.
    /// The id goes to the user message sent with that text (the oldest
    /// such, else the oldest whose text the recorded one contains, as a
    /// hook may add to it; the ones sent before it that were never
    /// recorded, refused by a hook, stop waiting), or to each text entry of
    /// the assistant message (as a resumed session shows it: its text
    /// blocks around its tool calls are entries of their own). A message
    /// the interface did not show (a notice the runtime adds) takes none.
    pub fn message_recorded(&mut self, user: bool, text: &str, id: u64) {
        if user {
            // The text as sent, else as a hook extended it.
            let sent = |exact: bool| {
                self.awaiting_ids.iter().position(|&i| {
                    let shown = self.transcript.text(i);
                    if exact {
                        shown == text
                    } else {
                        !shown.is_empty() && text.contains(shown.as_ref())
                    }
                })
            };
            let at = sent(true).or_else(|| sent(false));
            if let Some(at) = at {
                let i = self.awaiting_ids[at];
                self.awaiting_ids.drain(..=at);
                self.transcript.set_entry_id(i, id);
            }
            return;
        }
        let Some(from) = self.assistant_from.take() else {
            return;
        };
        for i in from..self.transcript.len() {
            if self
                .transcript
                .record(i)
                .is_some_and(|r| r.kind == EntryKind::Assistant)
                && !self.transcript.is_blank(i)
            {
                self.transcript.set_entry_id(i, id);
            }
        }
    }

    /// Appends streamed thinking: it shows whole while it streams, then
    /// collapses to one line.
    pub fn thinking_delta(&mut self, text: &str) {
        self.transcript.append(EntryKind::Thinking, text);
    }

    /// The message that was streaming ended: its thinking collapses.
    pub fn message_done(&mut self) {
        self.transcript.end_live_thinking();
    }

    /// Shows a tool call starting.
    /// The line is the tool's presentation title with `summary` (the
    /// subject argument's value) in its placeholder, or the tool's name and
    /// `summary` for a tool without a presentation.
    ///
    /// An empty output entry follows the title at once (it takes no room
    /// until output arrives), so each call's output shows directly under
    /// its own title even when calls run in parallel.
    pub fn tool_start(&mut self, call_id: &str, name: &str, summary: &str) {
        let (line, preview) = self.tool_line(name, summary);
        let i = self.transcript.push(EntryKind::Tool, &line);
        let out = self.transcript.push(EntryKind::ToolOutput, "");
        self.transcript.set_preview(out, preview);
        self.running_tools.push((call_id.to_owned(), i, preview));
    }

    /// Whether call `call_id` was started ([`App::tool_start`]) and has
    /// not ended.
    pub fn tool_running(&self, call_id: &str) -> bool {
        self.running_tools.iter().any(|(id, _, _)| id == call_id)
    }

    /// Shows output a running call streams (a command's output as it
    /// runs): its latest lines show under the call's title until the
    /// result replaces them.
    pub fn tool_update(&mut self, call_id: &str, output: &str) {
        if let Some(&(_, i, _)) = self.running_tools.iter().find(|(id, _, _)| id == call_id) {
            self.transcript.stream(i + 1, output);
        }
    }

    /// A tool call's line and its output's preview lines.
    fn tool_line(&self, name: &str, summary: &str) -> (String, u8) {
        match self.product.tool(name) {
            Some(p) => (p.title_line(summary), p.preview_lines),
            None => {
                let mut line = String::with_capacity(name.len() + summary.len() + 1);
                line.push_str(name);
                if !summary.is_empty() {
                    line.push(' ');
                    line.push_str(summary);
                }
                (line, crate::transcript::COLLAPSED_LINES)
            }
        }
    }

    /// Shows a session's selected branch, from `from` (an index into the
    /// branch: the compaction boundary) on, as session-backed entries:
    /// user messages, assistant text and thinking, and tool output refer
    /// to the session's records and are read from its arena when drawn;
    /// only each tool call's one-line title is formatted here. `summary`,
    /// when given (a compacted session's summary), is shown first.
    /// Returns the number of entries added.
    ///
    /// # Errors
    ///
    /// A message whose content cannot be decoded: the error names the
    /// entry. Entries before it stay shown.
    pub fn show_session(
        &mut self,
        entries: std::sync::Arc<crate::session::SessionEntries>,
        from: usize,
        summary: Option<&str>,
    ) -> Result<usize, String> {
        use crate::session::Part;
        let before = self.transcript.len();
        self.transcript.set_session(entries.clone());
        if let Some(summary) = summary {
            self.user_message(summary);
        }
        let indexes = entries.branch_indexes();
        let mut bump = Bump::new();
        let mut calls: Vec<(String, String, String)> = Vec::new();
        let mut shown: Vec<(EntryKind, u32)> = Vec::new();
        for &record in indexes.iter().skip(from) {
            bump.reset();
            calls.clear();
            shown.clear();
            let mut result = None;
            entries.parts(record, &bump, |part| match part {
                Part::User => shown.push((EntryKind::User, 0)),
                Part::Text { part } => shown.push((EntryKind::Assistant, part)),
                Part::Thinking { part } => shown.push((EntryKind::Thinking, part)),
                Part::Call {
                    id,
                    name,
                    arguments,
                } => {
                    let subject = self.product.tool(name).and_then(|t| t.subject.as_deref());
                    let summary = crate::session::summarize(arguments, subject);
                    // Placed after the text blocks before it, in order.
                    shown.push((EntryKind::Tool, calls.len() as u32));
                    calls.push((id.to_owned(), name.to_owned(), summary));
                }
                Part::Result {
                    call_id,
                    is_error,
                    blank,
                } => result = Some((call_id.to_owned(), is_error, blank)),
            })?;
            for &(kind, part) in &shown {
                if kind == EntryKind::Tool {
                    let (id, name, summary) = &calls[part as usize];
                    self.tool_start(id, name, summary);
                } else {
                    self.transcript.push_session(kind, record, part);
                }
            }
            if let Some((call_id, is_error, blank)) = result {
                // Into the output entry under the call's title.
                match self.end_call(&call_id, !is_error) {
                    Some(out) if !blank => self.transcript.set_session_source(out, record, 0),
                    Some(_) => {}
                    None if !blank => {
                        let i = self
                            .transcript
                            .push_session(EntryKind::ToolOutput, record, 0);
                        self.transcript
                            .set_preview(i, crate::transcript::COLLAPSED_LINES);
                    }
                    None => {}
                }
            }
        }
        Ok(self.transcript.len() - before)
    }

    /// Marks a running tool call finished; returns its output entry (the
    /// one under its title).
    fn end_call(&mut self, call_id: &str, ok: bool) -> Option<usize> {
        let at = self
            .running_tools
            .iter()
            .position(|(id, _, _)| id == call_id)?;
        let (_, i, _) = self.running_tools.swap_remove(at);
        self.transcript
            .set_tool_state(i, if ok { ToolState::Ok } else { ToolState::Failed });
        Some(i + 1)
    }

    /// Shows a tool call's result under its title (replacing what it
    /// streamed). A call that never started ([`App::tool_start`]) shows
    /// its result after the last entry.
    pub fn tool_end(&mut self, call_id: &str, ok: bool, output: &str) {
        let out = self.end_call(call_id, ok);
        let output = if output.trim().is_empty() { "" } else { output };
        match out {
            Some(i) if !output.is_empty() || self.transcript.is_live(i) => {
                self.transcript.set_text(i, output);
            }
            Some(_) => {}
            None if !output.is_empty() => {
                let i = self.transcript.push(EntryKind::ToolOutput, output);
                self.transcript
                    .set_preview(i, crate::transcript::COLLAPSED_LINES);
            }
            None => {}
        }
    }

    /// Shows an error.
    pub fn error(&mut self, text: &str) {
        self.transcript.push(EntryKind::Error, text);
    }

    /// Shows a notice from the interface.
    pub fn notice(&mut self, text: &str) {
        self.transcript.push(EntryKind::Notice, text);
    }

    /// Updates the status line.
    pub fn set_status(&mut self, status: Status) {
        match (status.busy, self.busy_since) {
            (true, None) => self.busy_since = Some(std::time::Instant::now()),
            (false, Some(_)) => self.busy_since = None,
            _ => {}
        }
        if status != self.status {
            self.status = status;
            self.touch();
        }
    }
}

/// What trusting a project enables, as the trust question says it.
pub const TRUST_ENABLES: &str = "Trusting it enables its project configuration, its project plugins and any other project-local executable behavior.";

/// What happens until it is trusted.
pub const TRUST_UNTIL: &str =
    "Nothing from it is used until you trust it. Not now: continue with it ignored.";
