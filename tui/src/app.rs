//! The interface model: transcript, input, status and overlays, updated by
//! events and drawn by [`App::render`], which never changes it.
//!
//! A frame is two steps: [`App::prepare`] lays out the screen for its size
//! (measuring only what will be visible), then [`App::render`] draws into a
//! [`Buffer`] using a per-frame bump arena for scratch text.

use std::fmt::Write as _;

use bumpalo::Bump;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use crate::buffer::{Buffer, str_width};
use crate::editor::Editor;
use crate::layout::{Rect, split_vertical};
use crate::product::{Action, Product, Region, Theme};
use crate::style::{Attrs, Style};
use crate::transcript::{EntryKind, GUTTER, Match, ToolState, Transcript, find_all};
use crate::wrap::wrap;

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
    /// Whether the agent is working.
    pub busy: bool,
    /// Queued follow-ups.
    pub queue: usize,
    /// What the host is doing besides a turn (`compacting`, `replaying`),
    /// shown in place of "working" / "ready"; empty for nothing.
    pub activity: String,
}

/// A list to choose from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    /// Title.
    pub title: String,
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
}

impl Picker {
    fn filtered(&self) -> impl Iterator<Item = &String> {
        self.items
            .iter()
            .filter(move |i| find_all(i, &self.filter).next().is_some() || self.filter.is_empty())
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

fn normalize(key: &KeyEvent) -> (KeyCode, KeyModifiers) {
    match key.code {
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => (
            KeyCode::Char(c.to_ascii_lowercase()),
            key.modifiers - KeyModifiers::SHIFT,
        ),
        KeyCode::Char(c) => (KeyCode::Char(c), key.modifiers - KeyModifiers::SHIFT),
        code => (code, key.modifiers),
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
        }
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

    // ---- events from the agent -------------------------------------------

    /// Shows a user message.
    pub fn user_message(&mut self, text: &str) {
        self.transcript.push(EntryKind::User, text);
    }

    /// Appends streamed assistant text.
    pub fn assistant_delta(&mut self, text: &str) {
        self.transcript.append(EntryKind::Assistant, text);
    }

    /// Appends streamed thinking.
    pub fn thinking_delta(&mut self, text: &str) {
        self.transcript.append(EntryKind::Thinking, text);
    }

    /// Shows a tool call starting.
    /// The line is the tool's presentation title with `summary` (the
    /// subject argument's value) in its placeholder, or the tool's name and
    /// `summary` for a tool without a presentation.
    pub fn tool_start(&mut self, call_id: &str, name: &str, summary: &str) {
        let (line, preview) = self.tool_line(name, summary);
        let i = self.transcript.push(EntryKind::Tool, &line);
        self.running_tools.push((call_id.to_owned(), i, preview));
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
                let preview = self.end_call(&call_id, !is_error);
                if !blank {
                    let i = self
                        .transcript
                        .push_session(EntryKind::ToolOutput, record, 0);
                    self.transcript.set_preview(i, preview);
                }
            }
        }
        Ok(self.transcript.len() - before)
    }

    /// Marks a running tool call finished; returns its output's preview
    /// lines.
    fn end_call(&mut self, call_id: &str, ok: bool) -> u8 {
        let mut preview = crate::transcript::COLLAPSED_LINES;
        if let Some(at) = self
            .running_tools
            .iter()
            .position(|(id, _, _)| id == call_id)
        {
            let (_, i, lines) = self.running_tools.swap_remove(at);
            preview = lines;
            self.transcript
                .set_tool_state(i, if ok { ToolState::Ok } else { ToolState::Failed });
        }
        preview
    }

    /// Shows a tool call's result.
    pub fn tool_end(&mut self, call_id: &str, ok: bool, output: &str) {
        let preview = self.end_call(call_id, ok);
        if !output.trim().is_empty() {
            let i = self.transcript.push(EntryKind::ToolOutput, output);
            self.transcript.set_preview(i, preview);
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
        if status != self.status {
            self.status = status;
            self.touch();
        }
    }

    // ---- events from the terminal ----------------------------------------

    /// Handles one terminal event; returns what the host should do.
    pub fn handle(&mut self, event: &Event) -> Option<Output> {
        let out = match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            Event::Paste(text) => {
                match &mut self.overlay {
                    Overlay::Search { query } => query.push_str(&crate::sanitize::sanitize(text)),
                    Overlay::Prompt { text: answer, .. } => {
                        answer.push_str(&crate::sanitize::sanitize(text));
                    }
                    // The question owns focus: pasted text answers nothing.
                    Overlay::Trust { .. } | Overlay::Tree(_) | Overlay::Info { .. } => {}
                    _ => self.editor.paste(text),
                }
                None
            }
            Event::Resize(w, h) => {
                self.size = (*w, *h);
                Some(Output::Resized {
                    columns: *w,
                    rows: *h,
                })
            }
            Event::FocusGained => {
                self.focused = true;
                None
            }
            Event::FocusLost => {
                self.focused = false;
                None
            }
            Event::Mouse(mouse) if self.options.mouse => {
                let scroll = u32::from(self.options.scroll_lines);
                match mouse.kind {
                    MouseEventKind::ScrollUp => self.transcript.scroll_up(scroll),
                    MouseEventKind::ScrollDown => self.transcript.scroll_down(scroll),
                    _ => {}
                }
                None
            }
            _ => None,
        };
        if matches!(self.overlay, Overlay::None)
            && let Some(next) = self.queued.pop_front()
        {
            self.overlay = next;
        }
        self.touch();
        out
    }

    fn action_for(&self, key: &KeyEvent) -> Option<Action> {
        let (code, mods) = normalize(key);
        self.bindings
            .iter()
            .find(|(c, m, _)| *c == code && *m == mods)
            .map(|(_, _, a)| *a)
    }

    fn page(&self) -> u32 {
        u32::from(self.rects[0].height.saturating_sub(2).max(1))
    }

    fn key(&mut self, key: &KeyEvent) -> Option<Output> {
        match self.overlay {
            Overlay::None => self.key_editor(key),
            Overlay::Help => {
                self.overlay = Overlay::None;
                None
            }
            Overlay::Search { .. } => self.key_search(key),
            Overlay::Picker(_) => self.key_picker(key),
            Overlay::Tree(_) => self.key_tree(key),
            Overlay::Info { .. } => {
                self.overlay = Overlay::None;
                None
            }
            Overlay::Confirm { .. } => self.key_confirm(key),
            Overlay::Prompt { .. } => self.key_prompt(key),
            Overlay::Trust { .. } => self.key_trust(key),
        }
    }

    fn command_popup_open(&self) -> bool {
        let t = self.editor.text();
        t.starts_with('/') && !t.contains(char::is_whitespace)
    }

    fn matching_commands(&self) -> impl Iterator<Item = &crate::product::Command> {
        let typed = self.editor.text().get(1..).unwrap_or("");
        self.product
            .commands
            .iter()
            .filter(move |c| c.name.starts_with(typed))
    }

    fn key_editor(&mut self, key: &KeyEvent) -> Option<Output> {
        let action = self.action_for(key);
        // The command popup owns Up, Down, Tab and Enter while it is open.
        if self.command_popup_open() {
            let n = self.matching_commands().count();
            match key.code {
                KeyCode::Up if n > 0 => {
                    self.popup_selected = (self.popup_selected + n - 1) % n;
                    return None;
                }
                KeyCode::Down if n > 0 => {
                    self.popup_selected = (self.popup_selected + 1) % n;
                    return None;
                }
                KeyCode::Tab | KeyCode::Enter if n > 0 => {
                    let name = self
                        .matching_commands()
                        .nth(self.popup_selected.min(n - 1))
                        .map(|c| c.name.clone())
                        .unwrap_or_default();
                    self.popup_selected = 0;
                    if key.code == KeyCode::Tab {
                        self.editor.set(&format!("/{name} "));
                        return None;
                    }
                    self.editor.take();
                    return self.command(&name, "");
                }
                KeyCode::Esc => {
                    self.editor.clear();
                    return None;
                }
                _ => {}
            }
        }
        if !self.completions.is_empty() {
            match key.code {
                KeyCode::Tab | KeyCode::Enter => {
                    let pick = self.completions
                        [self.popup_selected.min(self.completions.len() - 1)]
                    .clone();
                    self.editor.replace_word(&pick);
                    self.completions.clear();
                    self.popup_selected = 0;
                    return None;
                }
                KeyCode::Up => {
                    let n = self.completions.len();
                    self.popup_selected = (self.popup_selected + n - 1) % n;
                    return None;
                }
                KeyCode::Down => {
                    self.popup_selected = (self.popup_selected + 1) % self.completions.len();
                    return None;
                }
                KeyCode::Esc => {
                    self.completions.clear();
                    return None;
                }
                _ => self.completions.clear(),
            }
        }
        if let Some(action) = action {
            return self.act(action);
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('u') if ctrl => self.editor.delete_to_line_start(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char(c) => {
                self.editor.insert(c);
                self.popup_selected = 0;
            }
            KeyCode::Tab => self.complete_path(),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up if !self.editor.up() => {
                self.transcript
                    .scroll_up(u32::from(self.options.scroll_lines));
            }
            KeyCode::Down if !self.editor.down() => {
                self.transcript
                    .scroll_down(u32::from(self.options.scroll_lines));
            }
            _ => {}
        }
        None
    }

    /// Completes the `@path` before the cursor from the file system.
    fn complete_path(&mut self) {
        let (_, word) = self.editor.current_word();
        let Some(path) = word.strip_prefix('@') else {
            self.editor.insert('\t');
            return;
        };
        let (dir, prefix) = match path.rfind('/') {
            Some(i) => (&path[..=i], &path[i + 1..]),
            None => ("", path),
        };
        let mut found: Vec<String> = match std::fs::read_dir(self.cwd.join(dir)) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    if !name.starts_with(prefix)
                        || (name.starts_with('.') && !prefix.starts_with('.'))
                    {
                        return None;
                    }
                    let slash = if e.file_type().is_ok_and(|t| t.is_dir()) {
                        "/"
                    } else {
                        ""
                    };
                    Some(format!("@{dir}{name}{slash}"))
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        found.sort();
        match found.len() {
            0 => {}
            1 => self.editor.replace_word(&found[0]),
            _ => {
                self.completions = found;
                self.popup_selected = 0;
            }
        }
    }

    fn act(&mut self, action: Action) -> Option<Output> {
        let scroll = u32::from(self.options.scroll_lines);
        match action {
            Action::Submit => {
                if self.editor.text().trim().is_empty() {
                    return None;
                }
                if let Some(rest) = self.editor.text().strip_prefix('/') {
                    let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                    if self.product.commands.iter().any(|c| c.name == name) {
                        let (name, arg) = (name.to_owned(), arg.trim().to_owned());
                        self.editor.take();
                        return self.command(&name, &arg);
                    }
                }
                let text = self.editor.take();
                self.user_message(&text);
                self.transcript.follow();
                Some(if self.status.busy {
                    Output::Steer(text)
                } else {
                    Output::Prompt(text)
                })
            }
            Action::QueueFollowUp => {
                if self.editor.text().trim().is_empty() {
                    return None;
                }
                let text = self.editor.take();
                Some(if self.status.busy {
                    Output::FollowUp(text)
                } else {
                    self.user_message(&text);
                    Output::Prompt(text)
                })
            }
            Action::Newline => {
                self.editor.insert('\n');
                None
            }
            Action::Interrupt => {
                if self.status.busy {
                    Some(Output::Interrupt)
                } else {
                    self.current_match = None;
                    self.selected = None;
                    self.highlight.clear();
                    None
                }
            }
            Action::ClearOrExit => {
                if !self.editor.is_empty() {
                    self.editor.clear();
                    None
                } else {
                    self.exit()
                }
            }
            Action::ScrollUp => {
                self.transcript.scroll_up(scroll);
                None
            }
            Action::ScrollDown => {
                self.transcript.scroll_down(scroll);
                None
            }
            Action::PageUp => {
                self.transcript.scroll_up(self.page());
                None
            }
            Action::PageDown => {
                self.transcript.scroll_down(self.page());
                None
            }
            Action::Top => {
                self.transcript.scroll_to_top();
                None
            }
            Action::Latest => {
                self.transcript.follow();
                None
            }
            Action::Search => {
                self.overlay = Overlay::Search {
                    query: self.highlight.clone(),
                };
                None
            }
            Action::Help => {
                self.overlay = Overlay::Help;
                None
            }
            Action::ToggleDetails => {
                self.transcript.toggle_details();
                None
            }
            Action::Copy => self.copy(),
            Action::SelectPrev | Action::SelectNext => {
                let n = self.transcript.len();
                if n == 0 {
                    return None;
                }
                let last_visible = self.last_visible_entry();
                let i = match (self.selected, action) {
                    (None, _) => last_visible,
                    (Some(i), Action::SelectPrev) => i.saturating_sub(1),
                    (Some(i), _) => (i + 1).min(n - 1),
                };
                self.selected = Some(i);
                // Keep the selection on screen.
                let top = self.transcript.top().entry;
                if i < top || i > last_visible {
                    self.transcript.reveal(i, 0);
                }
                None
            }
            Action::ModelPicker => self.command("model", ""),
            Action::SessionPicker => self.command("resume", ""),
        }
    }

    fn exit(&mut self) -> Option<Output> {
        if self.options.confirm_exit && self.status.busy {
            self.overlay = Overlay::Confirm {
                message: "Work is still running. Exit anyway?".to_owned(),
                on_yes: Output::Quit,
                on_no: None,
            };
            None
        } else {
            Some(Output::Quit)
        }
    }

    /// The last entry at least partly visible in the prepared view.
    fn last_visible_entry(&self) -> usize {
        let top = self.transcript.top();
        let mut rows = u32::from(self.rects[0].height);
        let mut i = top.entry;
        let mut skip = top.line;
        while i + 1 < self.transcript.len() {
            let h = self.transcript.cached_height(i).saturating_sub(skip);
            if h >= rows {
                break;
            }
            rows -= h;
            skip = 0;
            i += 1;
        }
        i.min(self.transcript.len().saturating_sub(1))
    }

    fn copy(&mut self) -> Option<Output> {
        let entry = match (self.selected, self.current_match) {
            (Some(i), _) => Some(i),
            (None, Some(m)) => Some(m.entry),
            (None, None) => (0..self.transcript.len()).rev().find(|&i| {
                self.transcript
                    .record(i)
                    .is_some_and(|r| r.kind == EntryKind::Assistant)
            }),
        }?;
        let text = crate::sanitize::sanitize(&self.transcript.text(entry));
        self.notice("copied to the clipboard");
        Some(Output::Copy(text))
    }

    /// Runs a slash command: the interface handles its own; the rest go to
    /// the host.
    fn command(&mut self, name: &str, arg: &str) -> Option<Output> {
        match name {
            "help" => {
                self.overlay = Overlay::Help;
                None
            }
            "quit" => self.exit(),
            "search" => {
                self.overlay = Overlay::Search {
                    query: arg.to_owned(),
                };
                None
            }
            "copy" => self.copy(),
            "thinking" => {
                self.transcript.toggle_details();
                None
            }
            "model" if arg.is_empty() && !self.models.is_empty() => {
                self.overlay = Overlay::Picker(Picker {
                    title: "Model".to_owned(),
                    command: "model".to_owned(),
                    items: self.models.clone(),
                    filter: String::new(),
                    selected: 0,
                    cancel: None,
                });
                None
            }
            _ => Some(Output::Command {
                name: name.to_owned(),
                arg: arg.to_owned(),
            }),
        }
    }

    fn key_search(&mut self, key: &KeyEvent) -> Option<Output> {
        let Overlay::Search { query } = &mut self.overlay else {
            return None;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let backward = match key.code {
            KeyCode::Esc => {
                self.overlay = Overlay::None;
                return None;
            }
            KeyCode::Enter | KeyCode::Up => true,
            KeyCode::Down => false,
            KeyCode::Char('n') if ctrl => false,
            KeyCode::Char('p') if ctrl => true,
            KeyCode::Char('y') if ctrl => return self.copy(),
            KeyCode::Backspace => {
                query.pop();
                self.current_match = None;
                return None;
            }
            KeyCode::Char(c) if !ctrl => {
                query.push(c);
                self.current_match = None;
                return None;
            }
            _ => return None,
        };
        self.highlight.clone_from(query);
        let found = self
            .transcript
            .find(&self.highlight, self.current_match, backward);
        match found {
            Some(m) => {
                self.current_match = Some(m);
                self.transcript.expand(m.entry);
                self.transcript.reveal(m.entry, m.offset);
            }
            None => self.current_match = None,
        }
        None
    }

    fn key_picker(&mut self, key: &KeyEvent) -> Option<Output> {
        let Overlay::Picker(p) = &mut self.overlay else {
            return None;
        };
        let n = p.filtered().count();
        match key.code {
            KeyCode::Esc => {
                let cancel = p.cancel.take();
                self.overlay = Overlay::None;
                return cancel;
            }
            KeyCode::Up if n > 0 => p.selected = (p.selected + n - 1) % n,
            KeyCode::Down if n > 0 => p.selected = (p.selected + 1) % n,
            KeyCode::Backspace => {
                p.filter.pop();
                p.selected = 0;
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                p.filter.push(c);
                p.selected = 0;
            }
            KeyCode::Enter => {
                let choice = p.filtered().nth(p.selected).cloned();
                let command = p.command.clone();
                self.overlay = Overlay::None;
                return choice.map(|arg| Output::Command { name: command, arg });
            }
            _ => {}
        }
        None
    }

    fn key_tree(&mut self, key: &KeyEvent) -> Option<Output> {
        let Overlay::Tree(t) = &mut self.overlay else {
            return None;
        };
        let n = t.rows.len();
        match key.code {
            KeyCode::Esc => self.overlay = Overlay::None,
            KeyCode::Up if n > 0 => t.selected = (t.selected + n - 1) % n,
            KeyCode::Down if n > 0 => t.selected = (t.selected + 1) % n,
            KeyCode::Home => t.selected = 0,
            KeyCode::End => t.selected = n.saturating_sub(1),
            KeyCode::Enter => {
                let arg = t.rows.get(t.selected).map(|r| r.arg.clone());
                let command = std::mem::take(&mut t.command);
                self.overlay = Overlay::None;
                return arg.map(|arg| Output::Command { name: command, arg });
            }
            _ => {}
        }
        None
    }

    fn key_confirm(&mut self, key: &KeyEvent) -> Option<Output> {
        let Overlay::Confirm { on_yes, on_no, .. } = &self.overlay else {
            return None;
        };
        match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => {
                let out = on_yes.clone();
                self.overlay = Overlay::None;
                Some(out)
            }
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                // A second Ctrl+C while asked to confirm exit means yes.
                let out = on_yes.clone();
                self.overlay = Overlay::None;
                (out == Output::Quit).then_some(out)
            }
            KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                let out = on_no.clone();
                self.overlay = Overlay::None;
                out
            }
            _ => None,
        }
    }

    fn key_trust(&mut self, key: &KeyEvent) -> Option<Output> {
        let Overlay::Trust { path, on_trust, .. } = &mut self.overlay else {
            return None;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let answer = match key.code {
            KeyCode::Char('c') if ctrl => {
                self.overlay = Overlay::None;
                return Some(Output::Quit);
            }
            KeyCode::Char('t' | 'T') if !ctrl => true,
            KeyCode::Char('n' | 'N') | KeyCode::Esc if !ctrl => false,
            KeyCode::Enter => *on_trust,
            KeyCode::Left | KeyCode::Right | KeyCode::Tab | KeyCode::BackTab => {
                *on_trust = !*on_trust;
                return None;
            }
            _ => return None,
        };
        let path = std::mem::take(path);
        self.overlay = Overlay::None;
        Some(Output::Trust {
            path,
            trust: answer,
        })
    }

    fn key_prompt(&mut self, key: &KeyEvent) -> Option<Output> {
        let Overlay::Prompt {
            command,
            text,
            cancel,
            ..
        } = &mut self.overlay
        else {
            return None;
        };
        match key.code {
            KeyCode::Esc => {
                let cancel = cancel.take();
                self.overlay = Overlay::None;
                return cancel;
            }
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
            KeyCode::Enter => {
                let out = Output::Command {
                    name: command.clone(),
                    arg: std::mem::take(text),
                };
                self.overlay = Overlay::None;
                return Some(out);
            }
            _ => {}
        }
        None
    }

    // ---- drawing ---------------------------------------------------------

    /// Lays out a `width` × `height` screen: splits the regions and
    /// prepares the transcript view. Call before [`App::render`].
    pub fn prepare(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        let input_width = width.saturating_sub(GUTTER).max(1);
        let input_lines = wrap(self.editor.text(), input_width, |_, _| {}) as u16;
        let mut sizes = [crate::layout::Size::Fill; 3];
        let mut wanted = [0u16; 3];
        let mut order = [Region::Transcript; 3];
        for (i, (region, size)) in self.product.layout.regions.iter().enumerate() {
            sizes[i] = *size;
            order[i] = *region;
            wanted[i] = match region {
                Region::Input => input_lines + 1,
                _ => 1,
            };
        }
        let split = split_vertical(Rect::new(0, 0, width, height), &sizes, &wanted);
        for (i, region) in order.iter().enumerate() {
            let slot = match region {
                Region::Transcript => 0,
                Region::Status => 1,
                Region::Input => 2,
            };
            self.rects[slot] = split[i];
        }
        let t = self.rects[0];
        self.transcript.prepare(t.width, t.height);
    }

    /// Draws the screen. Allocation-free when nothing grows: scratch text
    /// goes to `bump`, which the caller resets between frames.
    pub fn render(&self, buf: &mut Buffer, bump: &Bump) {
        buf.clear();
        let [transcript, status, input] = self.rects;
        self.draw_transcript(buf, transcript, bump);
        match &self.overlay {
            Overlay::Search { query } => self.draw_search_bar(buf, status, query, bump),
            _ => self.draw_status(buf, status, bump),
        }
        self.draw_input(buf, input);
        if self.command_popup_open() {
            self.draw_command_popup(buf, input);
        } else if !self.completions.is_empty() {
            self.draw_list_popup(
                buf,
                input,
                self.completions.iter().map(String::as_str),
                self.popup_selected,
            );
        }
        match &self.overlay {
            Overlay::Help => self.draw_help(buf, bump),
            Overlay::Picker(p) => self.draw_picker(buf, p),
            Overlay::Tree(t) => self.draw_tree(buf, t),
            Overlay::Info { title, lines } => self.draw_info(buf, title, lines),
            Overlay::Confirm { message, .. } => {
                self.draw_dialog(buf, message, "y yes · n no");
            }
            Overlay::Prompt { message, text, .. } => self.draw_dialog(buf, message, text),
            Overlay::Trust {
                path,
                changed,
                on_trust,
            } => self.draw_trust(buf, path, *changed, *on_trust),
            Overlay::None | Overlay::Search { .. } => {}
        }
    }

    fn entry_style(&self, i: usize) -> (&'static str, Style) {
        let Some(r) = self.transcript.record(i) else {
            return ("  ", Style::PLAIN);
        };
        let t = &self.theme;
        match r.kind {
            EntryKind::User => ("› ", t.user),
            EntryKind::Assistant => ("  ", t.assistant),
            EntryKind::Thinking => ("~ ", t.thinking),
            EntryKind::Tool => match r.tool {
                ToolState::Failed => ("✗ ", t.tool_error),
                ToolState::Ok => ("✓ ", t.tool),
                _ => ("⋯ ", t.tool),
            },
            EntryKind::ToolOutput => ("│ ", t.tool_output),
            EntryKind::Error => ("! ", t.error),
            EntryKind::Notice => ("· ", t.notice),
        }
    }

    fn draw_transcript(&self, buf: &mut Buffer, area: Rect, bump: &Bump) {
        if area.is_empty() {
            return;
        }
        let top = self.transcript.top();
        let mut y = area.y;
        let mut skip = top.line;
        let text_width = area.width.saturating_sub(GUTTER).max(1);
        let mut i = top.entry;
        while y < area.bottom() && i < self.transcript.len() {
            let (marker, style) = self.entry_style(i);
            let record = self.transcript.record(i).copied();
            let collapsed_thinking =
                record.is_some_and(|r| r.kind == EntryKind::Thinking && !r.expanded);
            // A session-backed entry's text is decoded into the frame's
            // arena (or borrowed from the session's), only for what is drawn.
            let full = self.transcript.text_in(i, bump);
            let (shown, hidden) = self.transcript.shown(i, full);
            let base = (shown.as_ptr() as usize).saturating_sub(full.as_ptr() as usize);
            let mut line_no = 0u32;
            let selected = self.selected == Some(i);
            let every_line = selected || record.is_some_and(|r| r.kind == EntryKind::ToolOutput);
            // The selection shows as a reversed gutter on every line.
            let marker_style = if selected { self.theme.selected } else { style };
            let mut draw_line =
                |buf: &mut Buffer, y: &mut u16, text: &str, start: usize, first: bool| {
                    if line_no >= skip && *y < area.bottom() {
                        let x = if first || every_line {
                            let m = if first || !selected { marker } else { "  " };
                            buf.put_str(area.x, *y, m, marker_style, area.right())
                        } else {
                            area.x + GUTTER
                        };
                        let x = x.max(area.x + GUTTER.min(area.width));
                        buf.put_str(x, *y, text, style, area.right());
                        self.highlight_line(buf, *y, x, text, i, start);
                        *y += 1;
                    }
                    line_no += 1;
                };
            if collapsed_thinking {
                let mut tmp = [0u8; 64];
                let label = thinking_label(&mut tmp, hidden);
                draw_line(buf, &mut y, label, usize::MAX, true);
            } else {
                let mut first = true;
                wrap(shown, text_width, |a, b| {
                    draw_line(buf, &mut y, &shown[a..b], base + a, first);
                    first = false;
                });
                if hidden > 0 {
                    let mut tmp = [0u8; 64];
                    let label = summary_label(&mut tmp, hidden);
                    draw_line(buf, &mut y, label, usize::MAX, false);
                }
            }
            // The blank separator line.
            if line_no >= skip && y < area.bottom() {
                y += 1;
            }
            skip = 0;
            i += 1;
        }
    }

    /// Underlines every search match on a drawn line; the current match is
    /// reversed.
    fn highlight_line(
        &self,
        buf: &mut Buffer,
        y: u16,
        x: u16,
        text: &str,
        entry: usize,
        start: usize,
    ) {
        if self.highlight.is_empty() || start == usize::MAX {
            return;
        }
        for at in find_all(text, &self.highlight) {
            let col = x + str_width(&text[..at]) as u16;
            let w = str_width(&text[at..at + self.highlight.len()]) as u16;
            let current = self.current_match
                == Some(Match {
                    entry,
                    offset: start + at,
                });
            let extra = if current {
                self.theme.current_match.attrs
            } else {
                self.theme.matched.attrs
            };
            buf.restyle(Rect::new(col, y, w, 1), |s| s.attrs(extra));
        }
    }

    fn draw_status(&self, buf: &mut Buffer, area: Rect, bump: &Bump) {
        if area.is_empty() {
            return;
        }
        buf.fill(area, self.theme.status);
        let mut s = bumpalo::collections::String::new_in(bump);
        let st = &self.status;
        if !st.activity.is_empty() {
            s.push(' ');
            s.push_str(&st.activity);
        } else {
            s.push_str(if st.busy { " working" } else { " ready" });
        }
        if st.queue > 0 {
            let _ = write!(s, " · queue {}", st.queue);
        }
        if !self.transcript.is_following() {
            s.push_str(" · scrolled (ctrl+g)");
        }
        let _ = write!(
            s,
            " · {}",
            if st.model.is_empty() {
                "no model"
            } else {
                &st.model
            }
        );
        match st.cost {
            Some(c) => {
                let _ = write!(s, " · ${c:.4}");
            }
            None => s.push_str(" · $?"),
        }
        if let Some((used, window)) = st.context {
            let pct = used.saturating_mul(100).checked_div(window).unwrap_or(0);
            let _ = write!(s, " · ctx {pct}%");
        }
        buf.put_str(area.x, area.y, &s, self.theme.status, area.right());
        let hint = " F1 help ";
        let hx = area.right().saturating_sub(str_width(hint) as u16);
        if hx > area.x + str_width(&s) as u16 {
            buf.put_str(hx, area.y, hint, self.theme.status, area.right());
        }
    }

    fn draw_search_bar(&self, buf: &mut Buffer, area: Rect, query: &str, bump: &Bump) {
        if area.is_empty() {
            return;
        }
        buf.fill(area, self.theme.status);
        let mut s = bumpalo::collections::String::new_in(bump);
        let _ = write!(s, " search: {query}");
        if let Some(m) = self.current_match {
            let _ = write!(s, "  (entry {})", m.entry + 1);
        } else if !self.highlight.is_empty() && self.highlight == query {
            s.push_str("  (no match)");
        }
        s.push_str("  ·  enter/↑ older · ↓ newer · esc close");
        buf.put_str(area.x, area.y, &s, self.theme.status, area.right());
    }

    fn draw_input(&self, buf: &mut Buffer, area: Rect) {
        if area.is_empty() {
            return;
        }
        let border = Rect::new(area.x, area.y, area.width, 1);
        for x in border.x..border.right() {
            buf.put_char(x, border.y, '─', self.theme.border, border.right());
        }
        let text_width = area.width.saturating_sub(GUTTER).max(1);
        let text = self.editor.text();
        let cursor = self.editor.cursor();
        let mut y = area.y + 1;
        // Keep the cursor's line visible: skip lines above it if needed.
        let mut cursor_line = 0u32;
        let mut n = 0u32;
        wrap(text, text_width, |a, b| {
            if cursor >= a && cursor <= b {
                cursor_line = n;
            }
            n += 1;
        });
        let rows = u32::from(area.height.saturating_sub(1));
        let skip = (cursor_line + 1).saturating_sub(rows);
        let mut line_no = 0u32;
        let mut cursor_drawn = false;
        wrap(text, text_width, |a, b| {
            if line_no >= skip && y < area.bottom() {
                let marker = if line_no == 0 { "› " } else { "  " };
                buf.put_str(area.x, y, marker, self.theme.prompt, area.right());
                let x = buf.put_str(area.x + GUTTER, y, &text[a..b], Style::PLAIN, area.right());
                if !cursor_drawn && line_no == cursor_line && self.focused {
                    let cx = area.x + GUTTER + str_width(&text[a..cursor.min(b).max(a)]) as u16;
                    let cx = cx.min(x).min(area.right().saturating_sub(1));
                    buf.restyle(Rect::new(cx, y, 1, 1), |s| s.attrs(Attrs::REVERSE));
                    cursor_drawn = true;
                }
                y += 1;
            }
            line_no += 1;
        });
    }

    fn draw_list_popup<'a>(
        &self,
        buf: &mut Buffer,
        input: Rect,
        items: impl Iterator<Item = &'a str>,
        selected: usize,
    ) {
        let max_rows = input.y.min(8);
        let width = input.width.min(48);
        let mut rows = 0u16;
        for (n, item) in items.take(usize::from(max_rows)).enumerate() {
            let y = input.y - max_rows + n as u16;
            let row = Rect::new(input.x, y, width, 1);
            let style = if n == selected {
                self.theme.selected
            } else {
                self.theme.popup
            };
            buf.fill(row, style);
            buf.put_str(row.x + 1, y, item, style, row.right());
            rows += 1;
        }
        // Clear rows of the popup area not used by items.
        let _ = rows;
    }

    fn draw_command_popup(&self, buf: &mut Buffer, input: Rect) {
        let n = self.matching_commands().count() as u16;
        let rows = n.min(input.y).min(8);
        let width = input.width;
        for (k, c) in self.matching_commands().take(usize::from(rows)).enumerate() {
            let y = input.y - rows + k as u16;
            let row = Rect::new(input.x, y, width, 1);
            let style = if k == self.popup_selected {
                self.theme.selected
            } else {
                self.theme.popup
            };
            buf.fill(row, style);
            let x = buf.put_str(row.x + 1, y, "/", style, row.right());
            let x = buf.put_str(x, y, &c.name, style.attrs(Attrs::BOLD), row.right());
            buf.put_str(x.max(row.x + 14), y, &c.help, style, row.right());
        }
    }

    fn draw_box(&self, buf: &mut Buffer, area: Rect, title: &str) -> Rect {
        buf.fill(area, self.theme.popup);
        let b = self.theme.border;
        for x in area.x..area.right() {
            buf.put_char(x, area.y, '─', b, area.right());
            buf.put_char(x, area.bottom() - 1, '─', b, area.right());
        }
        for y in area.y..area.bottom() {
            buf.put_char(area.x, y, '│', b, area.right());
            buf.put_char(area.right() - 1, y, '│', b, area.right());
        }
        buf.put_char(area.x, area.y, '┌', b, area.right());
        buf.put_char(area.right() - 1, area.y, '┐', b, area.right());
        buf.put_char(area.x, area.bottom() - 1, '└', b, area.right());
        buf.put_char(area.right() - 1, area.bottom() - 1, '┘', b, area.right());
        buf.put_str(
            area.x + 2,
            area.y,
            title,
            self.theme.popup.attrs(Attrs::BOLD),
            area.right() - 1,
        );
        area.inset(1)
    }

    fn draw_help(&self, buf: &mut Buffer, bump: &Bump) {
        let rows = (self.product.keys.len() + self.product.commands.len() + 3) as u16;
        let area = buf.area().centered(60, rows + 2);
        if area.width < 4 || area.height < 3 {
            return;
        }
        let inner = self.draw_box(buf, area, " help — any key closes ");
        let mut y = inner.y;
        for k in &self.product.keys {
            if y >= inner.bottom() {
                return;
            }
            let mut s = bumpalo::collections::String::new_in(bump);
            let _ = write!(s, "{:<14}{}", k.chord, k.action.describe());
            buf.put_str(inner.x + 1, y, &s, self.theme.popup, inner.right());
            y += 1;
        }
        y += 1;
        for c in &self.product.commands {
            if y >= inner.bottom() {
                return;
            }
            let mut s = bumpalo::collections::String::new_in(bump);
            let _ = write!(s, "/{:<13}{}", c.name, c.help);
            buf.put_str(inner.x + 1, y, &s, self.theme.popup, inner.right());
            y += 1;
        }
    }

    fn draw_picker(&self, buf: &mut Buffer, p: &Picker) {
        let n = p.filtered().count() as u16;
        let area = buf.area().centered(50, n.min(12) + 4);
        if area.width < 4 || area.height < 4 {
            return;
        }
        let inner = self.draw_box(buf, area, &p.title);
        let x = buf.put_str(
            inner.x + 1,
            inner.y,
            "filter: ",
            self.theme.popup,
            inner.right(),
        );
        buf.put_str(x, inner.y, &p.filter, self.theme.popup, inner.right());
        let rows = inner.height.saturating_sub(1);
        let first = p
            .selected
            .saturating_sub(usize::from(rows.saturating_sub(1)));
        for (k, item) in p.filtered().enumerate().skip(first).take(usize::from(rows)) {
            let y = inner.y + 1 + (k - first) as u16;
            let style = if k == p.selected {
                self.theme.selected
            } else {
                self.theme.popup
            };
            buf.fill(Rect::new(inner.x, y, inner.width, 1), style);
            buf.put_str(inner.x + 1, y, item, style, inner.right());
        }
    }

    fn draw_tree(&self, buf: &mut Buffer, t: &Tree) {
        let n = t.rows.len() as u16;
        let width = buf.area().width.saturating_sub(4).min(72);
        let area = buf.area().centered(width, n.clamp(1, 14) + 4);
        if area.width < 8 || area.height < 4 {
            return;
        }
        let inner = self.draw_box(buf, area, &t.title);
        let rows = inner.height.saturating_sub(2);
        let first = t
            .selected
            .saturating_sub(usize::from(rows.saturating_sub(1)));
        if t.rows.is_empty() {
            buf.put_str(
                inner.x + 1,
                inner.y,
                "no entries yet",
                self.theme.popup,
                inner.right(),
            );
        }
        for (k, row) in t
            .rows
            .iter()
            .enumerate()
            .skip(first)
            .take(usize::from(rows))
        {
            let y = inner.y + (k - first) as u16;
            let style = if k == t.selected {
                self.theme.selected
            } else {
                self.theme.popup
            };
            buf.fill(Rect::new(inner.x, y, inner.width, 1), style);
            let mut x = inner.x + 1;
            for d in 1..row.depth {
                let line = if t.continues(k, d) { "│ " } else { "  " };
                x = buf.put_str(x, y, line, style, inner.right());
            }
            if row.depth > 0 {
                let joint = if t.last_sibling(k) {
                    "└─"
                } else {
                    "├─"
                };
                x = buf.put_str(x, y, joint, style, inner.right());
            }
            let mark = if row.current { "● " } else { "○ " };
            x = buf.put_str(x, y, mark, style, inner.right());
            buf.put_str(x, y, &row.label, style, inner.right());
        }
        let hint = "↑/↓ move · enter select · esc close";
        buf.put_str(
            inner.x + 1,
            inner.bottom() - 1,
            hint,
            self.theme.popup.attrs(Attrs::DIM),
            inner.right(),
        );
    }

    fn draw_info(&self, buf: &mut Buffer, title: &str, lines: &[String]) {
        let width = buf.area().width.saturating_sub(4).min(72);
        let text_width = width.saturating_sub(4).max(1);
        let mut rows = 0u16;
        for line in lines {
            rows = rows.saturating_add(wrap(line, text_width, |_, _| {}).max(1) as u16);
        }
        let area = buf.area().centered(width, rows + 2);
        if area.width < 8 || area.height < 3 {
            return;
        }
        let inner = self.draw_box(buf, area, title);
        let mut y = inner.y;
        for line in lines {
            if line.is_empty() {
                y += 1;
                continue;
            }
            wrap(line, text_width, |start, end| {
                if y < inner.bottom() {
                    let text = &line[start..end];
                    buf.put_str(inner.x + 1, y, text, self.theme.popup, inner.right());
                }
                y += 1;
            });
        }
    }

    fn draw_trust(&self, buf: &mut Buffer, path: &str, changed: bool, on_trust: bool) {
        let width = buf.area().width.saturating_sub(4).min(64);
        let text_width = width.saturating_sub(4).max(1);
        let lead = if changed {
            "This project's .smith directory changed since you trusted it:"
        } else {
            "This project has a .smith directory and is not trusted:"
        };
        let paragraphs: [(&str, Style); 4] = [
            (lead, self.theme.popup),
            (path, self.theme.popup.attrs(Attrs::BOLD)),
            (TRUST_ENABLES, self.theme.popup),
            (TRUST_UNTIL, self.theme.popup),
        ];
        let mut rows = 0u16;
        for (text, _) in &paragraphs {
            rows += wrap(text, text_width, |_, _| {}) as u16 + 1;
        }
        // The paragraphs, a blank line between each, then the choices.
        let area = buf.area().centered(width, rows + 1 + 2);
        if area.width < 8 || area.height < 4 {
            return;
        }
        let inner = self.draw_box(buf, area, "Trust this project?");
        let mut y = inner.y;
        for (text, style) in &paragraphs {
            wrap(text, text_width, |start, end| {
                if y < inner.bottom() {
                    buf.put_str(inner.x + 1, y, &text[start..end], *style, inner.right());
                }
                y += 1;
            });
            y += 1;
        }
        if y < inner.bottom() {
            let (yes, no) = if on_trust {
                (self.theme.selected, self.theme.popup)
            } else {
                (self.theme.popup, self.theme.selected)
            };
            let x = buf.put_str(inner.x + 1, y, " t trust ", yes, inner.right());
            let x = buf.put_str(x, y, "   ", self.theme.popup, inner.right());
            buf.put_str(x, y, " n not now ", no, inner.right());
        }
    }

    fn draw_dialog(&self, buf: &mut Buffer, message: &str, detail: &str) {
        let area = buf.area().centered(56, 5);
        if area.width < 4 || area.height < 4 {
            return;
        }
        let inner = self.draw_box(buf, area, "");
        buf.put_str(
            inner.x + 1,
            inner.y,
            message,
            self.theme.popup,
            inner.right(),
        );
        buf.put_str(
            inner.x + 1,
            inner.y + 2,
            detail,
            self.theme.popup,
            inner.right(),
        );
    }
}

/// What trusting a project enables, as the trust question says it.
pub const TRUST_ENABLES: &str = "Trusting it enables its project configuration, its project plugins and any other project-local executable behavior.";

/// What happens until it is trusted.
pub const TRUST_UNTIL: &str =
    "Nothing from it is used until you trust it. Not now: continue with it ignored.";

/// "thinking (N lines)" into a stack buffer.
fn thinking_label(tmp: &mut [u8; 64], lines: usize) -> &str {
    let mut cursor = std::io::Cursor::new(&mut tmp[..]);
    let _ = std::io::Write::write_fmt(
        &mut cursor,
        format_args!(
            "thinking ({lines} line{}, ctrl+t)",
            if lines == 1 { "" } else { "s" }
        ),
    );
    let n = cursor.position() as usize;
    std::str::from_utf8(&tmp[..n]).unwrap_or("thinking")
}

/// "… N more lines" into a stack buffer.
fn summary_label(tmp: &mut [u8; 64], hidden: usize) -> &str {
    let mut cursor = std::io::Cursor::new(&mut tmp[..]);
    let _ = std::io::Write::write_fmt(
        &mut cursor,
        format_args!(
            "… {hidden} more line{} (ctrl+t)",
            if hidden == 1 { "" } else { "s" }
        ),
    );
    let n = cursor.position() as usize;
    std::str::from_utf8(&tmp[..n]).unwrap_or("…")
}
