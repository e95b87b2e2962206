//! The transcript: an append-only table of entries, a per-entry height
//! cache keyed by width, the scroll anchor and search.
//!
//! Entries are fixed-size [`EntryRecord`]s. Each one's text is either
//! *local* — a range of the transcript's own text arena (output streamed
//! in this process, notices, errors, tool-call lines) — or *session-backed*:
//! a record of the session the transcript was filled from, read through an
//! [`EntryText`] (see [`crate::session`]) only when the entry is drawn,
//! measured, searched or copied, decoded into the caller's bump arena when
//! it must be. So a million entries cost a few dozen bytes each, resuming a
//! session copies none of its text, and drawing touches only the entries on
//! screen. Heights are computed lazily, only for entries that are measured
//! while scrolling or drawn, and cached until the width changes or the
//! entry grows.
//!
//! The view is either *following* the latest output or *anchored* at a
//! line of an entry. Appending never moves an anchored view; scrolling
//! down to the end (or [`Transcript::follow`]) follows again.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use bumpalo::Bump;

use crate::render::{Kind, Rendered, render};
use crate::session::EntryText;
use crate::wrap::{clip, wrap};

/// What an entry shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A user message.
    User,
    /// Assistant text.
    Assistant,
    /// Model thinking: it shows whole while it streams, then it
    /// collapses to one line (expanded with the details).
    Thinking,
    /// A tool call: name and argument summary.
    Tool,
    /// A tool's output (collapsed to a few lines by default).
    ToolOutput,
    /// An error.
    Error,
    /// A notice from the interface.
    Notice,
}

/// The state of a tool call entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Not a tool entry.
    None,
    /// Running.
    Running,
    /// Finished successfully.
    Ok,
    /// Finished with an error (or was refused or aborted).
    Failed,
}

/// Where an entry's text lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// In the transcript's own text arena.
    Local {
        /// Start of the text in the arena.
        start: u64,
        /// Length of the text in bytes.
        len: u32,
    },
    /// In the session the transcript was filled from.
    Session {
        /// The record's index in the session's records.
        record: u32,
        /// The part of the record (an assistant message's content block;
        /// 0 otherwise).
        part: u32,
    },
}

/// One entry: its kind, state and where its text lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRecord {
    /// Kind.
    pub kind: EntryKind,
    /// Tool state.
    pub tool: ToolState,
    /// Whether the details (thinking, long tool output) are expanded.
    pub expanded: bool,
    /// Lines of tool output shown while collapsed (the tool's
    /// presentation's preview lines).
    pub preview: u8,
    /// Where the text lies.
    pub source: Source,
}

/// Lines of tool output shown while collapsed when the tool has no
/// presentation.
pub const COLLAPSED_LINES: u8 = 6;
/// Cells of indentation before entry text (the gutter marker).
pub const GUTTER: u16 = 2;
const UNKNOWN: u32 = u32::MAX;

/// The top of the view: a line of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// Entry index.
    pub entry: usize,
    /// Display line within the entry.
    pub line: u32,
}

/// A search match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    /// Entry index.
    pub entry: usize,
    /// Byte offset of the match within the entry's text.
    pub offset: usize,
}

/// The transcript model.
#[derive(Debug, Default)]
pub struct Transcript {
    records: Vec<EntryRecord>,
    text: String,
    heights: Vec<u32>,
    cache_width: u16,
    /// `None` follows the latest output.
    anchor: Option<Pos>,
    /// The resolved top of the last prepared view.
    top: Pos,
    view_height: u16,
    generation: u64,
    /// The text of session-backed entries.
    session: Option<Arc<dyn EntryText>>,
    /// Scratch for measuring a session-backed entry, reset after each.
    scratch: Bump,
    /// The thinking entry streaming now: it shows its last lines until
    /// something else arrives or [`Transcript::end_live_thinking`].
    live_thinking: Option<usize>,
    /// Entries rendered (Markdown, diffs) by index: `None` for one that
    /// draws its text as it is. Filled when an entry is first measured or
    /// drawn, dropped when its text grows; emptied when it holds more
    /// than [`RENDERED_CAP`] entries (scrolling far), before a frame is
    /// laid out.
    rendered: HashMap<usize, Option<Rendered>>,
    /// The text of tool output streaming now (a running call's), by
    /// entry, kept apart from the arena until the call's result replaces
    /// it ([`Transcript::set_text`]).
    live: HashMap<usize, String>,
    /// The session entry ids of local message entries (a message sent or
    /// streamed in this process, once the journal recorded it), by entry;
    /// session-backed entries take theirs from the session.
    ids: HashMap<usize, u64>,
}

/// The most rendered entries kept; the view needs only the ones on screen.
pub const RENDERED_CAP: usize = 4096;

/// Bytes of streamed output kept for a running call (its last lines are
/// what shows); the call's result replaces them when it ends.
pub const LIVE_OUTPUT_BYTES: usize = 64 * 1024;

/// The last `n` lines of `text` (without a trailing line break), and how
/// many lines come before them.
fn tail_lines(text: &str, n: usize) -> (&str, usize) {
    let text = text.trim_end_matches('\n');
    let mut start = 0;
    let mut lines = 0;
    for (at, _) in text.rmatch_indices('\n') {
        lines += 1;
        if lines == n {
            start = at + 1;
            break;
        }
    }
    let before = if start == 0 {
        0
    } else {
        text[..start].matches('\n').count()
    };
    (&text[start..], before)
}

impl Transcript {
    /// An empty transcript.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Changes whenever something visible may have changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Reserves room for `entries` more entries and `bytes` more text.
    pub fn reserve(&mut self, entries: usize, bytes: usize) {
        self.records.reserve(entries);
        self.heights.reserve(entries);
        self.text.reserve(bytes);
    }

    /// The record of entry `i`.
    pub fn record(&self, i: usize) -> Option<&EntryRecord> {
        self.records.get(i)
    }

    /// Sets where session-backed entries' text is read from. Entries
    /// pushed with [`Transcript::push_session`] name records of it.
    pub fn set_session(&mut self, source: Arc<dyn EntryText>) {
        self.session = Some(source);
        self.rendered.clear();
        self.generation += 1;
    }

    /// Whether entry `i` refers to a session record (rather than holding
    /// its text).
    pub fn is_session_backed(&self, i: usize) -> bool {
        self.records
            .get(i)
            .is_some_and(|r| matches!(r.source, Source::Session { .. }))
    }

    /// Bytes of text the transcript holds itself (local entries' text).
    pub fn local_text_len(&self) -> usize {
        self.text.len()
    }

    /// The text of entry `i` (empty when out of range): a local entry's
    /// text from the arena, a session-backed entry's decoded into `bump`
    /// (or borrowed from the session's arena).
    pub fn text_in<'a>(&'a self, i: usize, bump: &'a Bump) -> &'a str {
        if !self.live.is_empty()
            && let Some(live) = self.live.get(&i)
        {
            return live;
        }
        match self.records.get(i).map(|r| r.source) {
            Some(Source::Local { start, len }) => {
                let start = start as usize;
                self.text.get(start..start + len as usize).unwrap_or("")
            }
            Some(Source::Session { record, part }) => match &self.session {
                Some(source) => source.text_in(record, part, bump),
                None => "",
            },
            None => "",
        }
    }

    /// The text of entry `i` (empty when out of range); a session-backed
    /// entry's text is decoded and copied out.
    pub fn text(&self, i: usize) -> Cow<'_, str> {
        match self.records.get(i).map(|r| r.source) {
            Some(Source::Session { .. }) => {
                let bump = Bump::new();
                Cow::Owned(self.text_in(i, &bump).to_owned())
            }
            _ => Cow::Borrowed(self.text_in(i, &self.scratch)),
        }
    }

    fn push_record(&mut self, kind: EntryKind, source: Source) -> usize {
        self.end_live_thinking();
        self.records.push(EntryRecord {
            kind,
            tool: if kind == EntryKind::Tool {
                ToolState::Running
            } else {
                ToolState::None
            },
            expanded: false,
            preview: COLLAPSED_LINES,
            source,
        });
        self.heights.push(UNKNOWN);
        self.generation += 1;
        self.records.len() - 1
    }

    /// Appends an entry holding `text`; returns its index.
    pub fn push(&mut self, kind: EntryKind, text: &str) -> usize {
        let start = self.text.len() as u64;
        self.text.push_str(text);
        self.push_record(
            kind,
            Source::Local {
                start,
                len: text.len() as u32,
            },
        )
    }

    /// Appends an entry whose text is part `part` of record `record` of the
    /// session set with [`Transcript::set_session`]; returns its index.
    pub fn push_session(&mut self, kind: EntryKind, record: u32, part: u32) -> usize {
        self.push_record(kind, Source::Session { record, part })
    }

    /// Appends `text` to the last entry if it is of `kind`, else starts a
    /// new entry of `kind`.
    ///
    /// Thinking appended this way is *streaming*: it shows its last lines
    /// until anything else is appended or pushed, or
    /// [`Transcript::end_live_thinking`]; then it collapses.
    pub fn append(&mut self, kind: EntryKind, text: &str) -> usize {
        if kind != EntryKind::Thinking {
            self.end_live_thinking();
        }
        if let Some(last) = self.records.last_mut()
            && last.kind == kind
            && let Source::Local { start, len } = &mut last.source
            && *start + u64::from(*len) == self.text.len() as u64
        {
            self.text.push_str(text);
            *len += text.len() as u32;
            let i = self.records.len() - 1;
            self.heights[i] = UNKNOWN;
            self.rendered.remove(&i);
            self.generation += 1;
            if kind == EntryKind::Thinking {
                self.live_thinking = Some(i);
            }
            return i;
        }
        let i = self.push(kind, text);
        if kind == EntryKind::Thinking {
            self.live_thinking = Some(i);
        }
        i
    }

    /// Replaces entry `i`'s text with `text` (a call's result over its
    /// placeholder or its streamed output). The old text stays in the
    /// arena unused.
    pub fn set_text(&mut self, i: usize, text: &str) {
        if i >= self.records.len() {
            return;
        }
        let start = self.text.len() as u64;
        self.text.push_str(text);
        self.records[i].source = Source::Local {
            start,
            len: text.len() as u32,
        };
        self.live.remove(&i);
        self.changed(i);
    }

    /// Points entry `i` at part `part` of session record `record` (a
    /// resumed call's result over its placeholder).
    pub fn set_session_source(&mut self, i: usize, record: u32, part: u32) {
        if let Some(r) = self.records.get_mut(i) {
            r.source = Source::Session { record, part };
            self.live.remove(&i);
            self.changed(i);
        }
    }

    /// Appends streamed output to entry `i` (a running call's output):
    /// it shows its last lines until [`Transcript::set_text`] gives it
    /// the call's result. At most [`LIVE_OUTPUT_BYTES`] of the latest
    /// output are kept.
    pub fn stream(&mut self, i: usize, chunk: &str) {
        if i >= self.records.len() {
            return;
        }
        let live = self.live.entry(i).or_default();
        live.push_str(chunk);
        if live.len() > 2 * LIVE_OUTPUT_BYTES {
            let mut cut = live.len() - LIVE_OUTPUT_BYTES;
            while !live.is_char_boundary(cut) {
                cut += 1;
            }
            live.drain(..cut);
        }
        self.changed(i);
    }

    /// Whether entry `i` is an empty answer or call output (a message
    /// that has not streamed text yet, a call without output yet): it
    /// takes no room and is never selected.
    pub fn is_blank(&self, i: usize) -> bool {
        self.records.get(i).is_some_and(|r| {
            matches!(r.kind, EntryKind::Assistant | EntryKind::ToolOutput)
                && matches!(r.source, Source::Local { len: 0, .. })
                && !self.is_live(i)
        })
    }

    /// Entry `i` is the message the session recorded as entry `id`.
    pub fn set_entry_id(&mut self, i: usize, id: u64) {
        if i < self.records.len() {
            self.ids.insert(i, id);
            self.generation += 1;
        }
    }

    /// The session entry id of entry `i` (what `/branch ENTRY` takes):
    /// shown for user and assistant messages only, once known.
    pub fn entry_id(&self, i: usize) -> Option<u64> {
        let r = self.records.get(i)?;
        if !matches!(r.kind, EntryKind::User | EntryKind::Assistant) {
            return None;
        }
        if let Some(&id) = self.ids.get(&i) {
            return Some(id);
        }
        match r.source {
            Source::Session { record, .. } => self.session.as_ref()?.entry_id(record),
            Source::Local { .. } => None,
        }
    }

    /// Whether entry `i` is output streaming now.
    pub fn is_live(&self, i: usize) -> bool {
        self.live.contains_key(&i)
    }

    /// Entry `i` changed: its height and rendering are computed again.
    fn changed(&mut self, i: usize) {
        self.heights[i] = UNKNOWN;
        self.rendered.remove(&i);
        self.generation += 1;
    }

    /// The streaming thinking entry (if any) is complete: it collapses.
    pub fn end_live_thinking(&mut self) {
        if let Some(i) = self.live_thinking.take() {
            if let Some(h) = self.heights.get_mut(i) {
                *h = UNKNOWN;
            }
            self.generation += 1;
        }
    }

    /// Whether entry `i` is thinking shown as one collapsed line: not
    /// expanded and not streaming.
    pub fn folded_thinking(&self, i: usize) -> bool {
        self.live_thinking != Some(i)
            && self
                .records
                .get(i)
                .is_some_and(|r| r.kind == EntryKind::Thinking && !r.expanded)
    }

    /// Sets a tool entry's state.
    pub fn set_tool_state(&mut self, i: usize, state: ToolState) {
        if let Some(r) = self.records.get_mut(i) {
            r.tool = state;
            self.generation += 1;
        }
    }

    /// Sets how many lines of a tool-output entry show while collapsed.
    pub fn set_preview(&mut self, i: usize, lines: u8) {
        if let Some(r) = self.records.get_mut(i)
            && r.preview != lines
        {
            r.preview = lines;
            self.heights[i] = UNKNOWN;
            self.generation += 1;
        }
    }

    /// Expands or collapses every thinking and tool-output entry.
    pub fn toggle_details(&mut self) {
        let expand = !self
            .records
            .iter()
            .rev()
            .find(|r| matches!(r.kind, EntryKind::Thinking | EntryKind::ToolOutput))
            .is_some_and(|r| r.expanded);
        for (i, r) in self.records.iter_mut().enumerate() {
            if matches!(r.kind, EntryKind::Thinking | EntryKind::ToolOutput) && r.expanded != expand
            {
                r.expanded = expand;
                self.heights[i] = UNKNOWN;
            }
        }
        self.generation += 1;
    }

    /// How entry `i` is rendered, if it is: assistant text as Markdown,
    /// tool output holding a unified diff as a diff.
    fn render_kind(&self, i: usize) -> Option<Kind> {
        match self.records.get(i)?.kind {
            EntryKind::Assistant => Some(Kind::Markdown),
            EntryKind::ToolOutput => Some(Kind::Diff),
            _ => None,
        }
    }

    /// Renders entry `i` unless it is rendered already (once per entry,
    /// again only after its text grew).
    pub fn ensure_rendered(&mut self, i: usize) {
        if self.rendered.contains_key(&i) {
            return;
        }
        let Some(kind) = self.render_kind(i) else {
            return;
        };
        let rendered = render(kind, self.text_in(i, &self.scratch));
        self.scratch.reset();
        self.rendered.insert(i, rendered);
    }

    /// Entry `i` as rendered, when it is drawn other than as its text.
    pub fn rendered(&self, i: usize) -> Option<&Rendered> {
        self.rendered.get(&i).and_then(Option::as_ref)
    }

    /// What entry `i` draws: its rendered text when it has one (and where
    /// a collapsed view of it starts), else its text (from 0).
    pub fn display_in<'a>(&'a self, i: usize, bump: &'a Bump) -> (&'a str, usize) {
        match self.rendered(i) {
            Some(r) => (r.text.as_str(), r.focus as usize),
            None => (self.text_in(i, bump), 0),
        }
    }

    /// The most rows collapsed entry `i` takes (its preview lines).
    pub fn preview_rows(&self, i: usize) -> u32 {
        self.records.get(i).map_or(1, |r| u32::from(r.preview))
    }

    /// Whether entry `i` is collapsed tool output, which takes at most
    /// [`Transcript::preview_rows`] rows: a longer line is cut with an
    /// ellipsis at the last of them.
    pub fn clipped(&self, i: usize) -> bool {
        self.records
            .get(i)
            .is_some_and(|r| r.kind == EntryKind::ToolOutput && !r.expanded)
    }

    /// Expands or collapses entry `i` alone.
    pub fn toggle(&mut self, i: usize) {
        if let Some(r) = self.records.get_mut(i) {
            r.expanded = !r.expanded;
            self.heights[i] = UNKNOWN;
            self.generation += 1;
        }
    }

    /// The entry whose details entry `i` stands for: itself when it is
    /// thinking or tool output, a call's output for the call's title
    /// (the next tool output before another call).
    pub fn details_of(&self, i: usize) -> Option<usize> {
        let r = self.records.get(i)?;
        match r.kind {
            EntryKind::Thinking | EntryKind::ToolOutput => Some(i),
            EntryKind::Tool => self.records[i + 1..]
                .iter()
                .position(|r| r.kind != EntryKind::Notice)
                .map(|k| i + 1 + k)
                .filter(|&j| self.records[j].kind == EntryKind::ToolOutput),
            _ => None,
        }
    }

    /// The latest thinking or tool-output entry.
    pub fn latest_details(&self) -> Option<usize> {
        self.records
            .iter()
            .rposition(|r| matches!(r.kind, EntryKind::Thinking | EntryKind::ToolOutput))
    }

    /// The part of entry `i`'s text `text` (from [`Transcript::text_in`])
    /// that is shown, and how many source lines were hidden.
    pub fn shown<'t>(&self, i: usize, text: &'t str) -> (&'t str, usize) {
        self.shown_from(i, text, 0)
    }

    /// As [`Transcript::shown`] for text whose collapsed view starts at
    /// byte `focus` (a line start; from [`Transcript::display_in`]).
    pub fn shown_from<'t>(&self, i: usize, text: &'t str, focus: usize) -> (&'t str, usize) {
        let Some(r) = self.records.get(i) else {
            return ("", 0);
        };
        match r.kind {
            // Thinking shows whole while it streams.
            EntryKind::Thinking if !r.expanded && self.live_thinking == Some(i) => (text, 0),
            // A running call's output shows its latest lines.
            EntryKind::ToolOutput if !r.expanded && self.is_live(i) => {
                tail_lines(text, usize::from(r.preview))
            }
            EntryKind::Thinking if !r.expanded => (&text[..0], text.lines().count()),
            EntryKind::ToolOutput if !r.expanded => {
                let focus = if text.is_char_boundary(focus) {
                    focus
                } else {
                    0
                };
                let before = text[..focus].matches('\n').count();
                let text = &text[focus..];
                let mut cut = text.len();
                let mut n = 0;
                for (at, _) in text.match_indices('\n') {
                    n += 1;
                    if n == usize::from(r.preview) {
                        cut = at;
                        break;
                    }
                }
                let text = text.trim_end_matches('\n');
                if cut >= text.len() {
                    (text, before)
                } else {
                    (
                        &text[..cut],
                        before + text[cut..].lines().count().saturating_sub(1),
                    )
                }
            }
            EntryKind::ToolOutput => (text.trim_end_matches('\n'), 0),
            _ => (text, 0),
        }
    }

    fn measure(&self, i: usize, width: u16, bump: &Bump) -> u32 {
        // A call's output before it has any (a placeholder), or an
        // answer before its first text, takes no room.
        if self.is_blank(i) {
            return 0;
        }
        let (full, focus) = self.display_in(i, bump);
        let (shown, hidden) = self.shown_from(i, full, focus);
        let collapsed_thinking = self.folded_thinking(i);
        let width = width.saturating_sub(GUTTER).max(1);
        let (body, more) = if collapsed_thinking {
            (1, 0)
        } else if self.clipped(i) {
            clip(shown, width, self.preview_rows(i), |_, _, _| {})
        } else {
            (wrap(shown, width, |_, _| {}), 0)
        };
        // Body, the summary line when something is hidden, one blank line.
        body + u32::from(!collapsed_thinking && hidden + more > 0) + 1
    }

    /// The height of entry `i` at the cached width, computing it if needed.
    pub fn height(&mut self, i: usize) -> u32 {
        match self.heights.get(i).copied() {
            Some(UNKNOWN) => {
                self.ensure_rendered(i);
                let h = self.measure(i, self.cache_width, &self.scratch);
                self.scratch.reset();
                self.heights[i] = h;
                h
            }
            Some(h) => h,
            None => 0,
        }
    }

    /// The cached height of entry `i` (0 when unknown); for drawing after
    /// [`Transcript::prepare`].
    pub fn cached_height(&self, i: usize) -> u32 {
        match self.heights.get(i).copied() {
            Some(UNKNOWN) | None => 0,
            Some(h) => h,
        }
    }

    /// Lays the view out for a `width` × `height` area: invalidates the
    /// height cache on a width change, resolves the top line and measures
    /// every entry that will be drawn. Work is proportional to what is on
    /// screen, not to the number of entries.
    pub fn prepare(&mut self, width: u16, height: u16) {
        if self.rendered.len() > RENDERED_CAP {
            self.rendered.clear();
        }
        if width != self.cache_width {
            self.cache_width = width;
            self.heights.fill(UNKNOWN);
        }
        self.view_height = height;
        let follow = self.follow_top();
        self.top = match self.anchor {
            None => follow,
            Some(mut a) => {
                if a.entry >= self.records.len() {
                    a = follow;
                } else {
                    let h = self.height(a.entry);
                    a.line = a.line.min(h.saturating_sub(1));
                }
                if a >= follow {
                    self.anchor = None;
                    follow
                } else {
                    self.anchor = Some(a);
                    a
                }
            }
        };
        // Measure what will be drawn.
        let mut rows = u32::from(height);
        let mut i = self.top.entry;
        let mut skip = self.top.line;
        while rows > 0 && i < self.records.len() {
            // Rendered again if it was dropped while its height stayed.
            self.ensure_rendered(i);
            let h = self.height(i).saturating_sub(skip);
            rows = rows.saturating_sub(h);
            skip = 0;
            i += 1;
        }
    }

    /// The top of the view when following the latest output.
    fn follow_top(&mut self) -> Pos {
        let mut remaining = u32::from(self.view_height);
        let mut i = self.records.len();
        while i > 0 {
            i -= 1;
            let h = self.height(i);
            if h >= remaining {
                return Pos {
                    entry: i,
                    line: h - remaining,
                };
            }
            remaining -= h;
        }
        Pos::default()
    }

    /// The resolved top line of the last prepared view.
    pub fn top(&self) -> Pos {
        self.top
    }

    /// Whether the view follows the latest output.
    pub fn is_following(&self) -> bool {
        self.anchor.is_none()
    }

    /// Follows the latest output again.
    pub fn follow(&mut self) {
        self.anchor = None;
        self.generation += 1;
    }

    /// Scrolls up `lines` display lines (anchoring the view).
    pub fn scroll_up(&mut self, lines: u32) {
        let mut pos = self.anchor.unwrap_or(self.top);
        let mut n = lines;
        while n > 0 {
            if pos.line >= n {
                pos.line -= n;
                break;
            }
            n -= pos.line;
            if pos.entry == 0 {
                pos.line = 0;
                break;
            }
            pos.entry -= 1;
            pos.line = self.height(pos.entry);
        }
        self.anchor = Some(pos);
        self.generation += 1;
    }

    /// Scrolls down `lines` display lines; reaching the end follows again.
    pub fn scroll_down(&mut self, lines: u32) {
        let Some(mut pos) = self.anchor else {
            return;
        };
        let mut n = lines;
        while n > 0 && pos.entry < self.records.len() {
            let h = self.height(pos.entry);
            let left = h.saturating_sub(pos.line);
            if left > n {
                pos.line += n;
                break;
            }
            n -= left;
            pos.entry += 1;
            pos.line = 0;
        }
        let follow = self.follow_top();
        self.anchor = if pos >= follow { None } else { Some(pos) };
        self.generation += 1;
    }

    /// Jumps to the first entry.
    pub fn scroll_to_top(&mut self) {
        self.anchor = Some(Pos::default());
        self.generation += 1;
    }

    /// Anchors the view so that byte `offset` of entry `entry` is on the
    /// first line of the view, with up to two lines of context above.
    pub fn reveal(&mut self, entry: usize, offset: usize) {
        let width = self.cache_width.saturating_sub(GUTTER).max(1);
        let mut line = 0u32;
        self.ensure_rendered(entry);
        {
            let (full, focus) = self.display_in(entry, &self.scratch);
            let (shown, _) = self.shown_from(entry, full, focus);
            // Offsets are into the whole text; the shown part starts it.
            let mut n = 0u32;
            wrap(shown, width, |a, _| {
                if a <= offset {
                    line = n;
                }
                n += 1;
            });
        }
        self.scratch.reset();
        self.anchor = Some(Pos { entry, line });
        self.scroll_up(2.min(line + if entry > 0 { 2 } else { 0 }));
    }

    /// Expands entry `i` so a match inside hidden text becomes visible.
    pub fn expand(&mut self, i: usize) {
        if let Some(r) = self.records.get_mut(i)
            && !r.expanded
        {
            r.expanded = true;
            self.heights[i] = UNKNOWN;
            self.generation += 1;
        }
    }

    /// Finds `query` (ASCII case-insensitive) searching backward (toward
    /// older entries) from just before `from`, or forward from just after
    /// it; wraps around. `from = None` starts at the newest end. Every
    /// entry is searched, session-backed ones decoded one at a time into a
    /// scratch arena that is reset after each.
    pub fn find(&self, query: &str, from: Option<Match>, backward: bool) -> Option<Match> {
        if query.is_empty() || self.records.is_empty() {
            return None;
        }
        let mut bump = Bump::new();
        let n = self.records.len();
        let start = from.map_or(if backward { n - 1 } else { 0 }, |m| m.entry);
        for step in 0..=n {
            let i = if backward {
                (start + n * 2 - step) % n
            } else {
                (start + step) % n
            };
            bump.reset();
            let text = self.text_in(i, &bump);
            let mut best: Option<usize> = None;
            for at in find_all(text, query) {
                let ok = match from {
                    Some(m) if step == 0 => {
                        if backward {
                            at < m.offset
                        } else {
                            at > m.offset
                        }
                    }
                    Some(m) if step == n => {
                        if backward {
                            at >= m.offset
                        } else {
                            at <= m.offset
                        }
                    }
                    _ => true,
                };
                if ok {
                    best = Some(at);
                    if !backward {
                        break;
                    }
                }
            }
            if let Some(offset) = best {
                return Some(Match { entry: i, offset });
            }
        }
        None
    }
}

/// Byte offsets of every ASCII case-insensitive occurrence of `needle` in
/// `hay`. Allocates nothing.
pub fn find_all<'a>(hay: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    let last = if n.is_empty() || h.len() < n.len() {
        0
    } else {
        h.len() - n.len() + 1
    };
    (0..last).filter(move |&i| hay.is_char_boundary(i) && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(n: usize) -> Transcript {
        let mut t = Transcript::new();
        for i in 0..n {
            t.push(EntryKind::Assistant, &format!("entry {i}"));
        }
        t
    }

    #[test]
    fn only_messages_show_an_entry_id() {
        let mut t = Transcript::new();
        let user = t.push(EntryKind::User, "a prompt");
        let answer = t.push(EntryKind::Assistant, "an answer");
        let notice = t.push(EntryKind::Notice, "a notice");
        assert_eq!(t.entry_id(user), None, "unknown until recorded");
        let before = t.generation();
        t.set_entry_id(user, 12);
        t.set_entry_id(answer, 13);
        t.set_entry_id(notice, 14);
        t.set_entry_id(99, 15);
        assert!(t.generation() > before, "a recorded id redraws");
        assert_eq!(
            [t.entry_id(user), t.entry_id(answer), t.entry_id(notice)],
            [Some(12), Some(13), None]
        );
        assert_eq!(t.entry_id(99), None);
    }

    #[test]
    fn following_shows_the_end_and_anchored_views_stay_put() {
        let mut t = filled(100);
        t.prepare(40, 10);
        assert!(t.is_following());
        assert_eq!(t.top(), Pos { entry: 95, line: 0 });
        t.scroll_up(4);
        t.prepare(40, 10);
        assert_eq!(t.top(), Pos { entry: 93, line: 0 });
        t.push(EntryKind::Assistant, "new");
        t.append(EntryKind::Assistant, " more");
        t.prepare(40, 10);
        assert_eq!(t.top(), Pos { entry: 93, line: 0 });
        t.scroll_down(100);
        t.prepare(40, 10);
        assert!(t.is_following());
        assert_eq!(t.top(), Pos { entry: 96, line: 0 });
    }

    #[test]
    fn search_walks_backward_and_wraps() {
        let mut t = filled(5);
        t.push(EntryKind::User, "Entry again, entry");
        let m = t.find("entry", None, true).unwrap();
        assert_eq!(
            m,
            Match {
                entry: 5,
                offset: 13
            }
        );
        let m = t.find("entry", Some(m), true).unwrap();
        assert_eq!(
            m,
            Match {
                entry: 5,
                offset: 0
            }
        );
        let m = t.find("entry", Some(m), true).unwrap();
        assert_eq!(m.entry, 4);
        let m = t.find("ENTRY 0", Some(m), true).unwrap();
        assert_eq!(
            m,
            Match {
                entry: 0,
                offset: 0
            }
        );
        assert_eq!(t.find("absent", None, true), None);
    }

    #[test]
    fn streamed_output_shows_its_last_lines_until_the_result_replaces_it() {
        let mut t = Transcript::new();
        t.push(EntryKind::Tool, "bash make");
        // A placeholder takes no room until output arrives.
        let o = t.push(EntryKind::ToolOutput, "");
        t.set_preview(o, 3);
        t.push(EntryKind::Tool, "bash other");
        t.prepare(40, 20);
        assert_eq!(t.cached_height(o), 0);
        t.stream(o, "a\nb\n");
        t.stream(o, "c\nd\ne\n");
        assert!(t.is_live(o));
        assert_eq!(t.text(o), "a\nb\nc\nd\ne\n");
        let bump = Bump::new();
        let (full, _) = t.display_in(o, &bump);
        assert_eq!(t.shown_from(o, full, 0), ("c\nd\ne", 2));
        t.prepare(40, 20);
        // Three lines, the summary line and the blank line.
        assert_eq!(t.cached_height(o), 5);
        // Far more output than is kept: the latest stays.
        let big = "x".repeat(LIVE_OUTPUT_BYTES);
        for _ in 0..3 {
            t.stream(o, &big);
        }
        t.stream(o, "\nlast\n");
        assert!(t.text(o).len() <= 2 * LIVE_OUTPUT_BYTES);
        assert!(t.text(o).ends_with("\nlast\n"));
        t.set_text(o, "result\n");
        assert!(!t.is_live(o));
        assert_eq!(t.text(o), "result\n");
        t.prepare(40, 20);
        assert_eq!(t.cached_height(o), 2);
    }

    #[test]
    fn heights_follow_width_and_collapse() {
        let mut t = Transcript::new();
        t.push(EntryKind::Assistant, "aaaa bbbb cccc");
        let long: String = (0..20).map(|i| format!("line {i}\n")).collect();
        t.push(EntryKind::ToolOutput, &long);
        t.push(EntryKind::Thinking, "thought\nmore");
        t.prepare(16, 40);
        assert_eq!(t.cached_height(0), 2);
        assert_eq!(t.cached_height(1), COLLAPSED_LINES as u32 + 2);
        assert_eq!(t.cached_height(2), 2);
        t.prepare(8, 40);
        assert_eq!(t.cached_height(0), 4);
        t.toggle_details();
        t.prepare(16, 40);
        assert_eq!(t.cached_height(1), 21);
        assert_eq!(t.cached_height(2), 3);
    }

    #[test]
    fn streaming_thinking_shows_whole_then_collapses() {
        let mut t = Transcript::new();
        let i = t.append(EntryKind::Thinking, "one\ntwo\n");
        t.append(EntryKind::Thinking, "three\nfour");
        assert!(!t.folded_thinking(i));
        assert_eq!(
            t.shown(i, "one\ntwo\nthree\nfour"),
            ("one\ntwo\nthree\nfour", 0)
        );
        t.prepare(40, 20);
        // Every line and the blank line after them.
        assert_eq!(t.cached_height(i), 5);
        // The answer starts: the thinking collapses to its one line.
        t.append(EntryKind::Assistant, "answer");
        assert!(t.folded_thinking(i));
        t.prepare(40, 20);
        assert_eq!(t.cached_height(i), 2);
        assert_eq!(t.shown(i, "one\ntwo\nthree\nfour"), ("", 4));
        // Thinking that ends with its message collapses as well.
        let j = t.append(EntryKind::Thinking, "alone");
        assert!(!t.folded_thinking(j));
        t.end_live_thinking();
        assert!(t.folded_thinking(j));
    }
}
