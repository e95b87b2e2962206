//! Rendering an entry's text into what is drawn: Markdown for assistant
//! text ([`markdown`]), unified diffs with line numbers for tool output
//! that holds one ([`diff`]), code fences highlighted ([`highlight`]).
//!
//! A [`Rendered`] entry is display text (markup removed, line numbers
//! added) with styled [`Span`]s over byte ranges of it. It is computed once
//! per entry — when the entry is first measured or drawn, and again only
//! when its text grows — and cached by the transcript, so a frame only
//! reads it: the draw path wraps the display text like any other and
//! looks the style of each piece up in the spans.

pub mod diff;
pub mod highlight;
pub mod markdown;

use crate::style::{Attrs, Color, Style};

/// How a span of display text is drawn, over the entry's own style: a
/// foreground color (`Color::Reset` keeps the entry's) and attributes
/// added to the entry's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Look {
    /// Foreground color; `Color::Reset` keeps the entry's.
    pub fg: Color,
    /// Attributes added.
    pub attrs: Attrs,
}

impl Look {
    /// No change from the entry's style.
    pub const NONE: Look = Look {
        fg: Color::Reset,
        attrs: Attrs::NONE,
    };

    /// A look with only attributes.
    pub const fn attrs(attrs: Attrs) -> Look {
        Look {
            fg: Color::Reset,
            attrs,
        }
    }

    /// A look with a palette color (0–15) and attributes.
    pub const fn palette(index: u8, attrs: Attrs) -> Look {
        Look {
            fg: Color::Indexed(index),
            attrs,
        }
    }

    /// `inner` drawn inside this look: its color wins when it has one,
    /// attributes add up.
    #[must_use]
    pub fn within(self, inner: Look) -> Look {
        Look {
            fg: if inner.fg == Color::Reset {
                self.fg
            } else {
                inner.fg
            },
            attrs: self.attrs.with(inner.attrs),
        }
    }

    /// `base` with this look applied; without `color` only the attributes
    /// apply (`NO_COLOR`).
    pub fn apply(self, base: Style, color: bool) -> Style {
        let mut s = base.attrs(self.attrs);
        if color && self.fg != Color::Reset {
            s.fg = self.fg;
        }
        s
    }
}

/// A styled byte range of display text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start (inclusive), a byte offset into [`Rendered::text`].
    pub start: u32,
    /// End (exclusive).
    pub end: u32,
    /// How it is drawn.
    pub look: Look,
}

/// An entry's text as drawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The display text.
    pub text: String,
    /// Styled ranges, ascending and not overlapping; text outside them is
    /// drawn in the entry's style.
    pub spans: Vec<Span>,
    /// Where a collapsed view starts (a line start in `text`): the first
    /// changed lines of a diff; 0 for the start.
    pub focus: u32,
}

impl Rendered {
    /// Appends `text` drawn with `look`.
    pub fn push(&mut self, text: &str, look: Look) {
        if text.is_empty() {
            return;
        }
        let start = self.text.len() as u32;
        self.text.push_str(text);
        if look == Look::NONE {
            return;
        }
        let end = self.text.len() as u32;
        match self.spans.last_mut() {
            Some(last) if last.end == start && last.look == look => last.end = end,
            _ => self.spans.push(Span { start, end, look }),
        }
    }

    /// The index of the first span that ends after byte `at`.
    pub fn first_span(&self, at: usize) -> usize {
        self.spans.partition_point(|s| (s.end as usize) <= at)
    }

    /// Calls `piece` with each piece of `text[a..b]` and its look, in
    /// order (unstyled pieces with [`Look::NONE`]). Allocates nothing.
    pub fn pieces(&self, a: usize, b: usize, mut piece: impl FnMut(&str, Look)) {
        let mut at = a;
        let mut k = self.first_span(a);
        while at < b {
            let (end, look) = match self.spans.get(k) {
                Some(s) if (s.start as usize) <= at => ((s.end as usize).min(b), s.look),
                Some(s) => ((s.start as usize).min(b), Look::NONE),
                None => (b, Look::NONE),
            };
            if let Some(text) = self.text.get(at..end) {
                piece(text, look);
            }
            if end as u32 >= self.spans.get(k).map_or(u32::MAX, |s| s.end) {
                k += 1;
            }
            if end <= at {
                break;
            }
            at = end;
        }
    }
}

/// How an entry's text is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Markdown (assistant text).
    Markdown,
    /// A unified diff, with the text around it as is (tool output).
    Diff,
}

/// Renders `text` as `kind`; `None` when the text draws as it is (plain
/// text without markup, output without a diff), which needs no copy.
pub fn render(kind: Kind, text: &str) -> Option<Rendered> {
    match kind {
        Kind::Markdown => markdown::needs(text).then(|| markdown::render(text)),
        Kind::Diff => diff::find(text).then(|| diff::render(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_with_their_looks() {
        let mut r = Rendered::default();
        let bold = Look::attrs(Attrs::BOLD);
        r.push("ab", Look::NONE);
        r.push("cd", bold);
        r.push("ef", bold);
        r.push("gh", Look::NONE);
        assert_eq!(r.spans.len(), 1);
        let mut got = Vec::new();
        r.pieces(1, 7, |t, l| got.push((t.to_owned(), l == bold)));
        assert_eq!(
            got,
            vec![
                ("b".to_owned(), false),
                ("cdef".to_owned(), true),
                ("g".to_owned(), false)
            ]
        );
        let mut got = Vec::new();
        r.pieces(3, 5, |t, l| got.push((t.to_owned(), l == bold)));
        assert_eq!(got, vec![("de".to_owned(), true)]);
    }
}
