//! Drawing: the frame's layout ([`App::prepare`]) and every region and
//! overlay drawn into a [`Buffer`] ([`App::render`]), which never changes
//! the model.

use std::fmt::Write as _;

use bumpalo::Bump;

use super::{App, Overlay, Picker, TRUST_ENABLES, TRUST_UNTIL, Tree};
use crate::buffer::{Buffer, str_width};
use crate::layout::{Rect, split_vertical};
use crate::product::Region;
use crate::style::{Attrs, Style};
use crate::transcript::{EntryKind, GUTTER, Match, ToolState, find_all};
use crate::wrap::{clip, wrap};

/// The match offset given for a line of rendered text, whose offsets are
/// not the entry's text's.
const RENDERED_LINE: usize = usize::MAX - 1;

impl App {
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
        // The panels take rows at the foot of the transcript, above the
        // editor and status line: a title row and the lines of each.
        let wanted: usize = self.widgets.iter().map(|w| w.lines.len() + 1).sum();
        let t = self.rects[0];
        let rows = (wanted.min(usize::from(super::MAX_PANEL_ROWS)) as u16).min(t.height / 2);
        self.panel = Rect::new(t.x, t.y + t.height - rows, t.width, rows);
        self.rects[0].height -= rows;
        let t = self.rects[0];
        self.transcript.prepare(t.width, t.height);
    }

    /// Draws the plugins' panels: each a rule with its name, then its
    /// lines; what does not fit ends in a line saying how much more there
    /// is. Allocates nothing beyond the frame's arena.
    fn draw_panel(&self, buf: &mut Buffer, area: Rect, bump: &Bump) {
        if area.is_empty() {
            return;
        }
        let total: usize = self.widgets.iter().map(|w| w.lines.len() + 1).sum();
        let fits = usize::from(area.height);
        let hidden = total.saturating_sub(fits);
        let rows = self.widgets.iter().flat_map(|w| {
            std::iter::once((true, w.name.as_str()))
                .chain(w.lines.iter().map(|l| (false, l.as_str())))
        });
        for (n, (title, text)) in rows.take(fits).enumerate() {
            let y = area.y + n as u16;
            if hidden > 0 && n + 1 == fits {
                let mut s = bumpalo::collections::String::new_in(bump);
                let _ = write!(s, "  … {} more lines", hidden + 1);
                buf.put_str(area.x, y, &s, self.theme.notice, area.right());
            } else if title {
                let mut s = bumpalo::collections::String::new_in(bump);
                s.push_str("── ");
                s.push_str(text);
                s.push(' ');
                let used = str_width(&s) as u16;
                for _ in used..area.width {
                    s.push('─');
                }
                buf.put_str(area.x, y, &s, self.theme.border, area.right());
            } else {
                let x = area.x + 2.min(area.width);
                buf.put_str(x, y, text, self.theme.notice, area.right());
            }
        }
    }

    /// Draws the screen. Allocation-free when nothing grows: scratch text
    /// goes to `bump`, which the caller resets between frames.
    pub fn render(&self, buf: &mut Buffer, bump: &Bump) {
        buf.clear();
        let [transcript, status, input] = self.rects;
        self.draw_transcript(buf, transcript, bump);
        self.draw_panel(buf, self.panel, bump);
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
        let color = self.options.color;
        let mut i = top.entry;
        while y < area.bottom() && i < self.transcript.len() {
            // An output placeholder before any output takes no room.
            if self.transcript.cached_height(i) == 0 {
                skip = 0;
                i += 1;
                continue;
            }
            let (marker, style) = self.entry_style(i);
            let record = self.transcript.record(i).copied();
            let collapsed_thinking = self.transcript.folded_thinking(i);
            // What the entry draws: its rendered text (Markdown, a diff),
            // computed when it was first laid out, or its text — a
            // session-backed entry's decoded into the frame's arena (or
            // borrowed from the session's), only for what is drawn.
            let rendered = self.transcript.rendered(i);
            let (full, focus) = self.transcript.display_in(i, bump);
            let (shown, hidden) = self.transcript.shown_from(i, full, focus);
            let base = (shown.as_ptr() as usize).saturating_sub(full.as_ptr() as usize);
            let mut line_no = 0u32;
            let selected = self.selected == Some(i);
            let every_line = selected || record.is_some_and(|r| r.kind == EntryKind::ToolOutput);
            // The selection shows as a reversed gutter on every line.
            let marker_style = if selected { self.theme.selected } else { style };
            // Where the entry's first and last drawn rows end: its entry
            // id goes at the right end of one of them.
            let mut first_row: Option<(u16, u16)> = None;
            let mut last_row: Option<(u16, u16)> = None;
            // `at`: where the line lies in `full` (`None` for a label).
            let mut draw_line = |buf: &mut Buffer,
                                 y: &mut u16,
                                 text: &str,
                                 at: Option<usize>,
                                 first: bool,
                                 cut: bool| {
                if line_no >= skip && *y < area.bottom() {
                    let x = if first || every_line {
                        let m = if first || !selected { marker } else { "  " };
                        buf.put_str(area.x, *y, m, marker_style, area.right())
                    } else {
                        area.x + GUTTER
                    };
                    let x = x.max(area.x + GUTTER.min(area.width));
                    let end = match (rendered, at) {
                        (Some(r), Some(a)) => {
                            let mut cx = x;
                            r.pieces(a, a + text.len(), |piece, look| {
                                cx = buf.put_str(
                                    cx,
                                    *y,
                                    piece,
                                    look.apply(style, color),
                                    area.right(),
                                );
                            });
                            cx
                        }
                        _ => buf.put_str(x, *y, text, style, area.right()),
                    };
                    let end = if cut {
                        buf.put_str(end, *y, "…", style.attrs(Attrs::DIM), area.right())
                    } else {
                        end
                    };
                    if first {
                        first_row = Some((*y, end));
                    }
                    last_row = Some((*y, end));
                    let start = match at {
                        None => usize::MAX,
                        Some(_) if rendered.is_some() => RENDERED_LINE,
                        Some(a) => a,
                    };
                    self.highlight_line(buf, *y, x, text, i, start);
                    *y += 1;
                }
                line_no += 1;
            };
            if collapsed_thinking {
                let mut tmp = [0u8; 64];
                let label = thinking_label(&mut tmp, hidden);
                draw_line(buf, &mut y, label, None, true, false);
            } else {
                let mut first = true;
                let mut more = 0;
                if self.transcript.clipped(i) {
                    let rows = self.transcript.preview_rows(i);
                    (_, more) = clip(shown, text_width, rows, |a, b, cut| {
                        draw_line(buf, &mut y, &shown[a..b], Some(base + a), first, cut);
                        first = false;
                    });
                } else {
                    wrap(shown, text_width, |a, b| {
                        draw_line(buf, &mut y, &shown[a..b], Some(base + a), first, false);
                        first = false;
                    });
                }
                if hidden + more > 0 {
                    let mut tmp = [0u8; 64];
                    let label = summary_label(&mut tmp, hidden + more);
                    draw_line(buf, &mut y, label, None, false, false);
                }
            }
            if let Some(id) = self.transcript.entry_id(i) {
                self.draw_entry_id(buf, area, id, first_row, last_row);
            }
            // The blank separator line.
            if line_no >= skip && y < area.bottom() {
                y += 1;
            }
            skip = 0;
            i += 1;
        }
    }

    /// A message's session entry id (`#12`, what `/branch` and `/rewind`
    /// take), dim, at the right end of its first drawn row, or of its last
    /// when the first has no room for it (a blank cell between the text
    /// and the id); nowhere when neither has.
    fn draw_entry_id(
        &self,
        buf: &mut Buffer,
        area: Rect,
        id: u64,
        first_row: Option<(u16, u16)>,
        last_row: Option<(u16, u16)>,
    ) {
        let mut tmp = [0u8; 24];
        let label = entry_id_label(&mut tmp, id);
        let x = area.right().saturating_sub(label.len() as u16);
        if x < area.x + GUTTER + 1 {
            return;
        }
        let room = [first_row, last_row]
            .into_iter()
            .flatten()
            .find(|&(_, end)| end < x);
        if let Some((y, _)) = room {
            buf.put_str(x, y, label, Style::PLAIN.attrs(Attrs::DIM), area.right());
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
        // A rendered line's offsets are not the text's: every match in the
        // current match's entry is shown as current.
        let rendered = start == RENDERED_LINE;
        for at in find_all(text, &self.highlight) {
            let col = x + str_width(&text[..at]) as u16;
            let w = str_width(&text[at..at + self.highlight.len()]) as u16;
            let current = if rendered {
                self.current_match.is_some_and(|m| m.entry == entry)
            } else {
                self.current_match
                    == Some(Match {
                        entry,
                        offset: start + at,
                    })
            };
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
        // While work runs: a spinner and how long it has run.
        let running = self.busy_since.map(|t| t.elapsed());
        if let Some(ran) = running {
            let frame = (ran.as_millis() / super::SPIN_INTERVAL.as_millis()) as usize;
            s.push(' ');
            s.push(super::SPINNER[frame % super::SPINNER.len()]);
        }
        if !st.activity.is_empty() {
            s.push(' ');
            s.push_str(&st.activity);
        } else {
            s.push_str(if st.busy { " working" } else { " ready" });
        }
        if let Some(ran) = running {
            s.push(' ');
            push_elapsed(&mut s, ran.as_secs());
        }
        if let Some(at) = st.retry_at {
            let left = at.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                s.push_str(" · retrying");
            } else {
                let _ = write!(s, " · retrying in {} s", left.as_millis().div_ceil(1000));
            }
        }
        if let Some(hint) = self.exit_hint() {
            s.push_str(" · ");
            s.push_str(hint);
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
        if !st.thinking.is_empty() {
            let _ = write!(s, " · thinking {}", st.thinking);
        }
        match st.cost {
            Some(c) => {
                let _ = write!(s, " · ${c:.4}");
            }
            None => s.push_str(" · $?"),
        }
        if let Some((used, window)) = st.context {
            let pct = used.saturating_mul(100).checked_div(window).unwrap_or(0);
            s.push_str(" · ctx ");
            push_tokens(&mut s, used);
            s.push('/');
            push_tokens(&mut s, window);
            let _ = write!(s, " {pct}%");
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
        let screen = buf.area();
        let (area, inner_rows) = self.help_area(screen.width, screen.height);
        if area.width < 4 || area.height < 3 {
            return;
        }
        let rows = self.help_rows() as u16;
        let title = if rows > inner_rows {
            " help — ↑↓ pgup pgdn scroll · other keys close "
        } else {
            " help — any key closes "
        };
        let inner = self.draw_box(buf, area, title);
        let first = usize::from(self.help_first_row());
        let keys = self.product.keys.len();
        let edits = keys + super::EDIT_HELP.len();
        for (y, row) in (inner.y..inner.bottom()).zip(first..usize::from(rows)) {
            let mut s = bumpalo::collections::String::new_in(bump);
            if row < keys {
                let k = &self.product.keys[row];
                let _ = write!(s, "{:<14}{}", k.chord, k.action.describe());
            } else if row > keys && row <= edits {
                let (chord, what) = super::EDIT_HELP[row - keys - 1];
                let _ = write!(s, "{chord:<14}{what}");
            } else if row > edits + 1 {
                let c = &self.product.commands[row - edits - 2];
                let _ = write!(s, "/{:<13}{}", c.name, c.help);
            }
            buf.put_str(inner.x + 1, y, &s, self.theme.popup, inner.right());
        }
    }

    fn draw_picker(&self, buf: &mut Buffer, p: &Picker) {
        let n = p.filtered().count() as u16;
        let screen = buf.area();
        // A question's detail (a command, a diff) gets the rows the items
        // leave, and a wider box.
        let wanted = u16::try_from(p.detail.len()).unwrap_or(u16::MAX);
        let footer = u16::from(p.toggle.is_some());
        let (width, detail_rows) = if !p.args.is_empty() && p.detail.is_empty() {
            let longest = p.items.iter().map(|i| i.chars().count()).max().unwrap_or(0);
            let longest = u16::try_from(longest).unwrap_or(u16::MAX).saturating_add(4);
            let widest = screen.width.saturating_sub(4).max(50);
            (longest.clamp(50, widest), 0)
        } else if p.detail.is_empty() {
            (50, 0)
        } else {
            let room = screen.height.saturating_sub(n.min(12) + 6);
            (
                screen.width.saturating_sub(4).clamp(50, 100),
                wanted.saturating_add(1).min(room),
            )
        };
        let area = screen.centered(width, n.min(12) + 4 + detail_rows + footer);
        if area.width < 4 || area.height < 4 {
            return;
        }
        let mut inner = self.draw_box(buf, area, &p.title);
        if let Some((hint, _)) = &p.toggle {
            inner.height = inner.height.saturating_sub(1);
            buf.put_str(
                inner.x + 1,
                inner.y + inner.height,
                hint,
                self.theme.popup,
                inner.right(),
            );
        }
        // The detail lines, then one blank row; when they do not all fit,
        // the last row shown says so.
        let shown = detail_rows.saturating_sub(1);
        for (k, line) in p.detail.iter().take(usize::from(shown)).enumerate() {
            let y = inner.y + k as u16;
            let text = if k + 1 == usize::from(shown) && wanted > shown {
                "…"
            } else {
                line.as_str()
            };
            buf.put_str(inner.x + 1, y, text, self.theme.popup, inner.right());
        }
        let top = inner.y + detail_rows;
        let x = buf.put_str(
            inner.x + 1,
            top,
            "filter: ",
            self.theme.popup,
            inner.right(),
        );
        buf.put_str(x, top, &p.filter, self.theme.popup, inner.right());
        let rows = inner.height.saturating_sub(1 + detail_rows);
        let first = p
            .selected
            .saturating_sub(usize::from(rows.saturating_sub(1)));
        for (k, item) in p.filtered().enumerate().skip(first).take(usize::from(rows)) {
            let y = top + 1 + (k - first) as u16;
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

/// `12s`, `3m05s`, `1h02m`.
fn push_elapsed(s: &mut bumpalo::collections::String<'_>, secs: u64) {
    let _ = match secs {
        0..60 => write!(s, "{secs}s"),
        60..3600 => write!(s, "{}m{:02}s", secs / 60, secs % 60),
        _ => write!(s, "{}h{:02}m", secs / 3600, secs % 3600 / 60),
    };
}

/// A token count in a few characters: `950`, `1.2k`, `12k`, `1.5M`.
fn push_tokens(s: &mut bumpalo::collections::String<'_>, n: u64) {
    let _ = match n {
        0..1000 => write!(s, "{n}"),
        1000..10_000 => write!(s, "{}.{}k", n / 1000, n % 1000 / 100),
        10_000..1_000_000 => write!(s, "{}k", n / 1000),
        _ => write!(s, "{}.{}M", n / 1_000_000, n % 1_000_000 / 100_000),
    };
}

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

/// `#ID` into a stack buffer.
fn entry_id_label(tmp: &mut [u8; 24], id: u64) -> &str {
    let mut cursor = std::io::Cursor::new(&mut tmp[..]);
    let _ = std::io::Write::write_fmt(&mut cursor, format_args!("#{id}"));
    let n = cursor.position() as usize;
    std::str::from_utf8(&tmp[..n]).unwrap_or("#")
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
