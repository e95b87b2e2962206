//! The multi-line input editor with history.
//!
//! The text is one string with a cursor at a byte offset on a character
//! boundary. History holds submitted inputs; Up on the first line and Down
//! on the last walk it, keeping the draft being written.

/// The editor's state.
#[derive(Debug, Default, Clone)]
pub struct Editor {
    text: String,
    cursor: usize,
    history: Vec<String>,
    /// Position in history while walking it; `None` when editing the draft.
    walking: Option<usize>,
    draft: String,
    /// How many history entries the host has been given
    /// ([`Editor::take_new_history`], [`Editor::set_history`]).
    handed: usize,
}

impl Editor {
    /// An empty editor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's byte offset.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text, cursor at the end.
    pub fn set(&mut self, text: &str) {
        self.text.clear();
        self.text.push_str(text);
        self.cursor = self.text.len();
    }

    /// Clears the text.
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.walking = None;
    }

    /// Inserts a character at the cursor.
    pub fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.walking = None;
    }

    /// Inserts pasted text: line endings become `\n`, other controls except
    /// tabs are dropped.
    pub fn paste(&mut self, text: &str) {
        let mut last_cr = false;
        for c in text.chars() {
            match c {
                '\r' => self.insert('\n'),
                '\n' if last_cr => {}
                '\n' | '\t' => self.insert(c),
                c if crate::sanitize::is_control(c) => {}
                c => self.insert(c),
            }
            last_cr = c == '\r';
        }
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character at the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the word before the cursor.
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        });
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Moves back to the start of the word before the cursor (a word is a
    /// run of letters and digits, as Alt+B moves in a shell).
    pub fn word_left(&mut self) {
        let before = &self.text[..self.cursor];
        let end = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_alphanumeric())
            .map_or(0, |(i, c)| i + c.len_utf8());
        self.cursor = before[..end]
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(0, |(i, c)| i + c.len_utf8());
    }

    /// Moves forward to the end of the word after the cursor (as Alt+F
    /// moves in a shell).
    pub fn word_right(&mut self) {
        let after = &self.text[self.cursor..];
        let start = after
            .char_indices()
            .find(|(_, c)| c.is_alphanumeric())
            .map_or(after.len(), |(i, _)| i);
        let end = after[start..]
            .char_indices()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(after.len(), |(i, _)| start + i);
        self.cursor += end;
    }

    /// Whether the character just before the cursor is `c`.
    pub fn before_cursor_is(&self, c: char) -> bool {
        self.text[..self.cursor].ends_with(c)
    }

    /// Deletes from the start of the line to the cursor.
    pub fn delete_to_line_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Moves left one character.
    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves right one character.
    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    /// Moves to the start of the line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// Moves to the end of the line.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Moves up a line; on the first line, recalls older history. Returns
    /// whether anything changed.
    pub fn up(&mut self) -> bool {
        let start = self.line_start();
        if start > 0 {
            let col = self.text[start..self.cursor].chars().count();
            let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            self.cursor = column_offset(&self.text, prev_start, start - 1, col);
            return true;
        }
        let next = match self.walking {
            None if !self.history.is_empty() => self.history.len() - 1,
            Some(i) if i > 0 => i - 1,
            _ => return false,
        };
        if self.walking.is_none() {
            self.draft.clone_from(&self.text);
        }
        self.walking = Some(next);
        let entry = self.history[next].clone();
        self.set(&entry);
        true
    }

    /// Moves down a line; on the last line, recalls newer history (and
    /// finally the draft). Returns whether anything changed.
    pub fn down(&mut self) -> bool {
        let end = self.line_end();
        if end < self.text.len() {
            let col = self.text[self.line_start()..self.cursor].chars().count();
            let next_end = self.text[end + 1..]
                .find('\n')
                .map_or(self.text.len(), |i| end + 1 + i);
            self.cursor = column_offset(&self.text, end + 1, next_end, col);
            return true;
        }
        match self.walking {
            Some(i) if i + 1 < self.history.len() => {
                self.walking = Some(i + 1);
                let entry = self.history[i + 1].clone();
                self.set(&entry);
                true
            }
            Some(_) => {
                self.walking = None;
                let draft = std::mem::take(&mut self.draft);
                self.set(&draft);
                true
            }
            None => false,
        }
    }

    /// Takes the text for sending: records it in history and clears.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.walking = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    /// Replaces the history with `entries` (oldest first), such as a
    /// host kept from earlier runs; none of them is new.
    pub fn set_history(&mut self, entries: Vec<String>) {
        self.history = entries;
        self.handed = self.history.len();
        self.walking = None;
    }

    /// The entries recorded since the last call (or
    /// [`Editor::set_history`]), oldest first: what a host keeping history
    /// across runs has still to write.
    pub fn take_new_history(&mut self) -> &[String] {
        let from = self.handed.min(self.history.len());
        self.handed = self.history.len();
        &self.history[from..]
    }

    /// The word under (before) the cursor, with its start offset.
    pub fn current_word(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
        (start, &self.text[start..self.cursor])
    }

    /// Replaces the word before the cursor with `with`.
    pub fn replace_word(&mut self, with: &str) {
        let (start, _) = self.current_word();
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }
}

fn column_offset(text: &str, start: usize, end: usize, col: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(col)
        .map_or(end, |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_and_history() {
        let mut e = Editor::new();
        for c in "hello wörld".chars() {
            e.insert(c);
        }
        e.delete_word();
        assert_eq!(e.text(), "hello ");
        e.backspace();
        assert_eq!(e.take(), "hello");
        e.paste("a\r\nb\u{1b}c");
        assert_eq!(e.text(), "a\nbc");
        assert!(e.up());
        assert_eq!(e.cursor(), 1);
        assert!(e.up());
        assert_eq!(e.text(), "hello");
        assert!(e.down());
        assert_eq!(e.text(), "a\nbc");
    }

    #[test]
    fn word_moves_stop_at_word_edges() {
        let mut e = Editor::new();
        e.set("fix the-flaky  tést now");
        e.word_left();
        assert_eq!(&e.text()[e.cursor()..], "now");
        e.word_left();
        assert_eq!(&e.text()[e.cursor()..], "tést now");
        e.word_left();
        assert_eq!(&e.text()[e.cursor()..], "flaky  tést now");
        e.word_left();
        e.word_left();
        assert_eq!(e.cursor(), 0);
        e.word_left();
        assert_eq!(e.cursor(), 0);
        e.word_right();
        assert_eq!(&e.text()[..e.cursor()], "fix");
        e.word_right();
        assert_eq!(&e.text()[..e.cursor()], "fix the");
        e.word_right();
        e.word_right();
        assert_eq!(&e.text()[..e.cursor()], "fix the-flaky  tést");
        e.word_right();
        e.word_right();
        assert_eq!(e.cursor(), e.text().len());
        assert!(!e.before_cursor_is('\\'));
        e.insert('\\');
        assert!(e.before_cursor_is('\\'));
    }

    #[test]
    fn history_given_by_the_host_is_recalled_and_only_new_entries_are_handed_back() {
        let mut e = Editor::new();
        e.set_history(vec!["older".to_owned(), "old\nlines".to_owned()]);
        assert!(e.take_new_history().is_empty());
        assert!(e.up());
        assert_eq!(e.text(), "old\nlines");
        // Up from the first line of a recalled entry goes further back.
        e.home();
        assert!(e.up());
        assert!(e.up());
        assert_eq!(e.text(), "older");
        e.set("new one");
        assert_eq!(e.take(), "new one");
        e.set("new one");
        e.take();
        e.set("another");
        e.take();
        assert_eq!(e.take_new_history(), ["new one", "another"]);
        assert!(e.take_new_history().is_empty());
        assert!(e.up());
        assert_eq!(e.text(), "another");
    }
}
