//! Terminal events into the model: keys (through the product's bindings),
//! the editor with its command popup and `@` path completion, and each
//! overlay's own keys; mouse, paste and focus events.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use smith_diag::suggest::distance;

use super::{App, Output, Overlay, Picker};
use crate::product::Action;
use crate::transcript::EntryKind;

impl App {
    /// Handles one terminal event; returns what the host should do.
    pub fn handle(&mut self, event: &Event) -> Option<Output> {
        let out = match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            Event::Paste(text) => {
                match &mut self.overlay {
                    Overlay::Search { query } => query.push_str(&crate::sanitize::strip(text)),
                    Overlay::Prompt { text: answer, .. } => {
                        answer.push_str(&crate::sanitize::strip(text));
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
        // Any other key disarms a pending "press again to exit".
        if self.last_ctrl_c.is_some()
            && !(matches!(self.overlay, Overlay::None)
                && self.action_for(key) == Some(Action::ClearOrExit))
        {
            self.last_ctrl_c = None;
        }
        match self.overlay {
            Overlay::None => self.key_editor(key),
            Overlay::Help => {
                self.key_help(key);
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

    /// The help scrolls with Up/Down, PageUp/PageDown, Home/End; any
    /// other key closes it.
    fn key_help(&mut self, key: &KeyEvent) {
        let first = self.help_first_row();
        let max = self.help_max_scroll();
        let (_, page) = self.help_area(self.size.0, self.size.1);
        let page = page.saturating_sub(1).max(1);
        self.help_scroll = match key.code {
            KeyCode::Up => first.saturating_sub(1),
            KeyCode::Down => (first + 1).min(max),
            KeyCode::PageUp => first.saturating_sub(page),
            KeyCode::PageDown => first.saturating_add(page).min(max),
            KeyCode::Home => 0,
            KeyCode::End => max,
            _ => {
                self.overlay = Overlay::None;
                0
            }
        };
    }

    pub(super) fn command_popup_open(&self) -> bool {
        let t = self.editor.text();
        t.starts_with('/') && !t.contains(char::is_whitespace)
    }

    pub(super) fn matching_commands(&self) -> impl Iterator<Item = &crate::product::Command> {
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
        // Alt+letter arrives as Esc then the letter without the kitty
        // protocol; it edits like a shell and never types the letter.
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('u') if ctrl => self.editor.delete_to_line_start(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            // Ctrl+H is the byte some terminals send for Backspace.
            KeyCode::Char('h') if ctrl => self.editor.backspace(),
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char('b') if alt => self.editor.word_left(),
            KeyCode::Char('f') if alt => self.editor.word_right(),
            KeyCode::Char(_) if alt => {}
            KeyCode::Left if alt || ctrl => self.editor.word_left(),
            KeyCode::Right if alt || ctrl => self.editor.word_right(),
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word(),
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

    /// Runs the editor's line when it is a command, or refuses it (the
    /// line stays to be fixed) when it is neither a command nor a prompt;
    /// `None` when it is a prompt to send.
    fn unless_prompt(&mut self) -> Option<Option<Output>> {
        match self.classify() {
            Line::Command => {
                let rest = &self.editor.text()[1..];
                let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let (name, arg) = (name.to_owned(), arg.trim().to_owned());
                self.editor.take();
                Some(self.command(&name, &arg))
            }
            Line::Refused(why) => {
                self.error(&why);
                self.transcript.follow();
                Some(None)
            }
            Line::Prompt => None,
        }
    }

    /// What Enter does with the editor's line: a known command runs; a
    /// line that starts with `/` but names no command, or with `!`, is
    /// refused with what to do instead (never sent as a prompt); anything
    /// else — including a first word with a second `/` or one that names
    /// an existing file or directory, which is a path such as `/tmp/x` —
    /// is a prompt. A line that starts with a space is
    /// always a prompt.
    fn classify(&self) -> Line {
        let text = self.editor.text();
        const NOT_SENT: &str = "Nothing was sent: edit the line and press Enter, or start it with a space to send it to the model as written.";
        if let Some(rest) = text.strip_prefix('/') {
            let name = rest.split(char::is_whitespace).next().unwrap_or("");
            // A path, not a command: `/tmp/x is broken`, `/tmp is full`.
            if name.contains('/')
                || (!name.is_empty()
                    && std::path::Path::new(text.split(char::is_whitespace).next().unwrap_or(""))
                        .exists())
            {
                return Line::Prompt;
            }
            if self.product.commands.iter().any(|c| c.name == name) {
                return Line::Command;
            }
            let known = self.product.commands.iter().map(|c| c.name.as_str());
            return Line::Refused(if name.is_empty() {
                format!(
                    "no command name after the /: type a command's name (/help lists them). {NOT_SENT}"
                )
            } else {
                match closest(name, known) {
                    Some(near) => {
                        format!("unknown command /{name} — did you mean /{near}? {NOT_SENT}")
                    }
                    None => format!(
                        "unknown command /{name}: no command has that name (/help lists them). {NOT_SENT}"
                    ),
                }
            });
        }
        if let Some(command) = text.strip_prefix('!') {
            let command = command.trim();
            return Line::Refused(format!(
                "not sent: !{command} would run a shell command, and this interface does not run commands itself. Ask the agent instead (\"run {command}\"), so it runs through the bash tool with your approval and is journaled, or run it in another terminal; start the line with a space to send it to the model as written."
            ));
        }
        Line::Prompt
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
                // `\` just before the cursor continues the prompt on a new
                // line (Enter alone cannot be told from Shift+Enter without
                // the kitty keyboard protocol).
                if self.editor.before_cursor_is('\\') {
                    self.editor.backspace();
                    self.editor.insert('\n');
                    return None;
                }
                if self.editor.text().trim().is_empty() {
                    return None;
                }
                if let Some(out) = self.unless_prompt() {
                    return out;
                }
                let text = self.editor.take();
                self.sent_message(&text);
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
                if let Some(out) = self.unless_prompt() {
                    return out;
                }
                let text = self.editor.take();
                Some(if self.status.busy {
                    Output::FollowUp(text)
                } else {
                    self.sent_message(&text);
                    Output::Prompt(text)
                })
            }
            Action::Newline => {
                self.editor.insert('\n');
                None
            }
            Action::Interrupt => {
                if self.status.busy {
                    self.last_esc = None;
                    Some(Output::Interrupt)
                } else {
                    self.current_match = None;
                    self.selected = None;
                    self.highlight.clear();
                    // Esc Esc, idle with an empty editor: the rewind picker.
                    let now = std::time::Instant::now();
                    let twice = self
                        .last_esc
                        .is_some_and(|t| now.duration_since(t) <= super::DOUBLE_ESC);
                    if twice && self.editor.is_empty() {
                        self.last_esc = None;
                        return self.command("rewind", "");
                    }
                    self.last_esc = self.editor.is_empty().then_some(now);
                    None
                }
            }
            Action::ClearOrExit => {
                // A second press soon after one that interrupted or found
                // nothing to clear exits.
                let now = std::time::Instant::now();
                if self
                    .last_ctrl_c
                    .is_some_and(|t| now.duration_since(t) <= super::DOUBLE_CTRL_C)
                {
                    self.last_ctrl_c = None;
                    return self.exit();
                }
                if self.status.busy {
                    self.last_ctrl_c = Some(now);
                    self.last_esc = None;
                    Some(Output::Interrupt)
                } else if !self.editor.is_empty() {
                    self.editor.clear();
                    None
                } else {
                    self.last_ctrl_c = Some(now);
                    None
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
                self.help_scroll = 0;
                None
            }
            Action::ToggleDetails => {
                self.transcript.toggle_details();
                None
            }
            Action::ToggleEntry => {
                // The selected entry (a call's title stands for its
                // output), else the latest thinking or tool output.
                let target = match self.selected {
                    Some(i) => self.transcript.details_of(i),
                    None => self.transcript.latest_details(),
                };
                if let Some(i) = target {
                    self.transcript.toggle(i);
                    if self.selected.is_some() {
                        self.selected = Some(i);
                    }
                }
                None
            }
            Action::Copy => self.copy(),
            Action::SelectPrev | Action::SelectNext => {
                let n = self.transcript.len();
                if n == 0 {
                    return None;
                }
                let last_visible = self.last_visible_entry();
                // Entries that take no room are stepped over.
                let t = &self.transcript;
                let i = match (self.selected, action) {
                    (None, _) => (0..=last_visible)
                        .rev()
                        .find(|&k| !t.is_blank(k))
                        .unwrap_or(last_visible),
                    (Some(i), Action::SelectPrev) => {
                        (0..i).rev().find(|&k| !t.is_blank(k)).unwrap_or(i)
                    }
                    (Some(i), _) => (i + 1..n).find(|&k| !t.is_blank(k)).unwrap_or(i),
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
        // Whether the copy reached a clipboard is known only where it is
        // written: the frontend says so.
        let text = crate::sanitize::strip(&self.transcript.text(entry));
        Some(Output::Copy(text))
    }

    /// Runs a slash command: the interface carries out its own
    /// ([`LOCAL_COMMANDS`]); the rest go to the host.
    fn command(&mut self, name: &str, arg: &str) -> Option<Output> {
        let local = LOCAL_COMMANDS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, run)| run(self, arg));
        match local {
            Some(done) => done,
            None => Some(Output::Command {
                name: name.to_owned(),
                arg: arg.to_owned(),
            }),
        }
    }

    /// `/model` alone opens the model picker when the models are known.
    fn model_picker(&mut self, arg: &str) -> Option<Option<Output>> {
        if !arg.is_empty() || self.models.is_empty() {
            return None;
        }
        self.overlay = Overlay::Picker(Picker {
            title: "Model".to_owned(),
            detail: Vec::new(),
            command: "model".to_owned(),
            items: self.models.clone(),
            filter: String::new(),
            selected: 0,
            cancel: None,
            ..Picker::default()
        });
        Some(None)
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
                let choice = p.chosen();
                let command = p.command.clone();
                self.overlay = Overlay::None;
                return choice.map(|arg| Output::Command { name: command, arg });
            }
            KeyCode::Tab if p.toggle.is_some() => {
                let out = p.toggle.take().map(|(_, out)| out);
                self.overlay = Overlay::None;
                return out;
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
}

/// What a command the interface carries out does with its argument: what
/// the host should do then, or `None` to hand the command to the host.
type LocalCommand = fn(&mut App, &str) -> Option<Option<Output>>;

/// The slash commands the interface carries out itself, by name.
const LOCAL_COMMANDS: [(&str, LocalCommand); 5] = [
    ("help", |app, _| {
        app.overlay = Overlay::Help;
        app.help_scroll = 0;
        Some(None)
    }),
    ("quit", |app, _| Some(app.exit())),
    ("search", |app, arg| {
        app.overlay = Overlay::Search {
            query: arg.to_owned(),
        };
        Some(None)
    }),
    ("copy", |app, _| Some(app.copy())),
    ("model", App::model_picker),
];

/// What Enter does with the editor's line (see [`App::classify`]).
enum Line {
    /// A known slash command.
    Command,
    /// A prompt for the model.
    Prompt,
    /// Neither: why not and what to do, shown instead of sending.
    Refused(String),
}

/// The name in `names` closest to `typed` by edit distance when it is near
/// enough to be a typo of it (at most a third of its length, at least 2),
/// or one that starts with it.
fn closest<'a>(typed: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (typed.chars().count() / 3).max(2);
    names
        .map(|n| {
            let d = if n.starts_with(typed) {
                0
            } else {
                distance(typed, n)
            };
            (d, n)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, n)| (*d, n.len()))
        .map(|(_, n)| n)
}

/// A key as the bindings name it: Shift dropped from characters (the
/// character carries it), letters with Ctrl lowercased.
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
