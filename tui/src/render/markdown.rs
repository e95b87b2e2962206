//! Markdown into display text and styles: headings, emphasis and strong
//! text, inline code, links (text and address), lists, block quotes,
//! rules, tables and code fences (highlighted by [`super::highlight`]).
//!
//! The markup characters go; what they mean stays visible without color
//! as attributes (bold headings and strong text, italic emphasis,
//! underlined links, `│` before quoted lines, `•` and numbers before list
//! items), so `NO_COLOR` keeps the structure.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{Look, Rendered};
use crate::style::Attrs;

/// A heading's look (cyan, bold; a first-level one underlined too).
pub const HEADING: Look = Look::palette(6, Attrs::BOLD);
/// Inline code's look (yellow).
pub const CODE: Look = Look::palette(3, Attrs::NONE);
/// A link's text (blue, underlined).
pub const LINK: Look = Look::palette(4, Attrs::UNDERLINE);
/// What is drawn beside the text: a link's address, quote bars, list
/// markers, rules, table separators (dim).
pub const DIM: Look = Look::attrs(Attrs::DIM);

/// Whether `text` may hold markup; plain text without any of Markdown's
/// characters draws as it is.
pub fn needs(text: &str) -> bool {
    text.bytes().any(|b| {
        matches!(
            b,
            b'*' | b'_' | b'`' | b'#' | b'[' | b'>' | b'|' | b'~' | b'<' | b'&' | b'\\' | b'\n'
        )
    }) || text.starts_with(['-', '+'])
        || text.starts_with(|c: char| c.is_ascii_digit())
}

struct Writer {
    out: Rendered,
    /// The looks in force, innermost last.
    looks: Vec<Look>,
    /// Open lists: the next number of an ordered one, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Block quote depth.
    quotes: usize,
    /// Line breaks owed before the next text (2: a blank line).
    pending: u8,
    /// A code block being collected: its language and text.
    code: Option<(String, String)>,
    /// Where each open link's text starts, and its address.
    links: Vec<(usize, String)>,
    /// Cells written in the current table row.
    cells: usize,
}

impl Writer {
    fn look(&self) -> Look {
        self.looks.last().copied().unwrap_or(Look::NONE)
    }

    fn open(&mut self, look: Look) {
        let inner = self.look().within(look);
        self.looks.push(inner);
    }

    fn close(&mut self) {
        self.looks.pop();
    }

    fn owe(&mut self, breaks: u8) {
        self.pending = self.pending.max(breaks);
    }

    /// What starts every line: a bar per quote, then the list's indent.
    fn prefix(&mut self, indent: bool) {
        for _ in 0..self.quotes {
            self.out.push("│ ", DIM);
        }
        if indent {
            for _ in 0..self.lists.len() {
                self.out.push("  ", Look::NONE);
            }
        }
    }

    fn newline(&mut self) {
        self.out.push("\n", Look::NONE);
        self.prefix(true);
    }

    /// Writes the line breaks owed (none at the very start).
    fn settle(&mut self) {
        if self.out.text.is_empty() {
            self.pending = 0;
            return;
        }
        for _ in 0..self.pending {
            self.newline();
        }
        self.pending = 0;
    }

    fn text(&mut self, text: &str, look: Look) {
        self.settle();
        let mut first = true;
        for line in text.split('\n') {
            if !first {
                self.newline();
            }
            first = false;
            self.out.push(line, look);
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        self.settle();
        let code = code.strip_suffix('\n').unwrap_or(code);
        let looks = super::highlight::highlight(lang, code);
        let mut k = 0;
        let mut first = true;
        let mut at = 0;
        for line in code.split('\n') {
            if !first {
                self.newline();
            }
            first = false;
            self.out.push("  ", Look::NONE);
            let end = at + line.len();
            // The line's pieces in the highlighter's looks.
            let mut pos = at;
            while pos < end {
                while k < looks.len() && looks[k].1 <= pos {
                    k += 1;
                }
                let (next, look) = match looks.get(k) {
                    Some(&(s, e, l)) if s <= pos => (e.min(end), l),
                    Some(&(s, _, _)) => (s.min(end), Look::NONE),
                    None => (end, Look::NONE),
                };
                self.out.push(&code[pos..next], look);
                pos = next;
            }
            at = end + 1;
        }
        self.owe(2);
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(t) => {
                    code.push_str(&t);
                    return;
                }
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, code)) = self.code.take() {
                        self.code_block(&lang, &code);
                    }
                    return;
                }
                _ => {}
            }
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                let look = self.look();
                self.text(&t, look);
            }
            Event::Code(t) => {
                let look = self.look().within(CODE);
                self.text(&t, look);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let look = self.look().within(CODE);
                self.text(&t, look);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let look = self.look();
                self.text(t.trim_end_matches('\n'), look);
            }
            Event::FootnoteReference(name) => {
                self.text("[^", DIM);
                self.text(&name, DIM);
                self.text("]", DIM);
            }
            Event::SoftBreak => {
                let look = self.look();
                self.text(" ", look);
            }
            Event::HardBreak => {
                self.settle();
                self.newline();
            }
            Event::Rule => {
                self.settle();
                self.out.push("────────────────────────", DIM);
                self.owe(2);
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }, DIM),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => {}
            Tag::Heading { level, .. } => {
                self.owe(2);
                self.settle();
                let look = if level == HeadingLevel::H1 {
                    HEADING.within(Look::attrs(Attrs::UNDERLINE))
                } else {
                    HEADING
                };
                self.open(look);
            }
            Tag::BlockQuote(_) => {
                self.owe(2);
                self.settle();
                self.quotes += 1;
                self.prefix(false);
                self.open(Look::attrs(Attrs::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.owe(2);
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',', '{']).next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.owe(if self.lists.is_empty() { 2 } else { 1 });
                self.lists.push(start);
            }
            Tag::Item => {
                self.owe(1);
                if self.out.text.is_empty() {
                    self.pending = 0;
                } else {
                    for _ in 0..self.pending {
                        self.out.push("\n", Look::NONE);
                        self.prefix(false);
                    }
                    self.pending = 0;
                }
                for _ in 1..self.lists.len() {
                    self.out.push("  ", Look::NONE);
                }
                match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        self.out.push(&marker, DIM);
                    }
                    _ => self.out.push("• ", DIM),
                }
            }
            Tag::Table(_) => {
                self.owe(2);
            }
            Tag::TableHead => {
                self.owe(1);
                self.cells = 0;
                self.open(Look::attrs(Attrs::BOLD));
            }
            Tag::TableRow => {
                self.owe(1);
                self.cells = 0;
            }
            Tag::TableCell => {
                if self.cells > 0 {
                    self.text(" │ ", DIM);
                }
                self.cells += 1;
            }
            Tag::Emphasis => self.open(Look::attrs(Attrs::ITALIC)),
            Tag::Strong => self.open(Look::attrs(Attrs::BOLD)),
            Tag::Strikethrough => self.open(Look::attrs(Attrs::DIM)),
            Tag::Superscript | Tag::Subscript => self.open(Look::NONE),
            Tag::Link { dest_url, .. } => {
                self.settle();
                self.links
                    .push((self.out.text.len(), dest_url.into_string()));
                self.open(LINK);
            }
            Tag::Image { dest_url, .. } => {
                self.text("[image: ", DIM);
                self.links.push((usize::MAX, dest_url.into_string()));
                self.open(Look::attrs(Attrs::ITALIC));
            }
            Tag::FootnoteDefinition(name) => {
                self.owe(2);
                self.text("[^", DIM);
                self.text(&name, DIM);
                self.text("]: ", DIM);
            }
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.owe(1);
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => self.owe(2),
            TagEnd::Heading(_) => {
                self.close();
                self.owe(2);
            }
            TagEnd::BlockQuote(_) => {
                self.close();
                self.quotes = self.quotes.saturating_sub(1);
                self.owe(2);
            }
            TagEnd::CodeBlock | TagEnd::MetadataBlock(_) => self.owe(2),
            TagEnd::List(_) => {
                self.lists.pop();
                self.owe(if self.lists.is_empty() { 2 } else { 1 });
            }
            TagEnd::Item => self.owe(1),
            TagEnd::Table => self.owe(2),
            TagEnd::TableHead => {
                self.close();
                self.owe(1);
            }
            TagEnd::TableRow => self.owe(1),
            TagEnd::TableCell => {}
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => self.close(),
            TagEnd::Link => {
                self.close();
                if let Some((start, url)) = self.links.pop() {
                    let shown = self.out.text.get(start..).unwrap_or("");
                    let same = shown == url || url.strip_prefix("mailto:") == Some(shown);
                    if !same && !url.is_empty() {
                        self.text(" (", DIM);
                        self.text(&url, DIM);
                        self.text(")", DIM);
                    }
                }
            }
            TagEnd::Image => {
                self.close();
                if let Some((_, url)) = self.links.pop() {
                    self.text("] ", DIM);
                    self.text(&url, DIM);
                }
            }
            TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => self.owe(1),
        }
    }
}

/// Renders Markdown `text`.
pub fn render(text: &str) -> Rendered {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut w = Writer {
        out: Rendered {
            text: String::with_capacity(text.len()),
            ..Rendered::default()
        },
        looks: Vec::new(),
        lists: Vec::new(),
        quotes: 0,
        pending: 0,
        code: None,
        links: Vec::new(),
        cells: 0,
    };
    for event in Parser::new_ext(text, options) {
        w.event(event);
    }
    // A fence still open (the answer is streaming) shows what it has.
    if let Some((lang, code)) = w.code.take() {
        w.code_block(&lang, &code);
    }
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The display text with each styled piece in brackets and its look's
    /// attributes.
    fn shown(r: &Rendered) -> Vec<(String, Look)> {
        r.spans
            .iter()
            .map(|s| (r.text[s.start as usize..s.end as usize].to_owned(), s.look))
            .collect()
    }

    #[test]
    fn plain_text_needs_no_rendering() {
        assert!(!needs("I will run the tests and read the failure output."));
        assert!(needs("**bold**"));
        assert!(needs("- item"));
        assert!(needs("two\nlines"));
    }

    #[test]
    fn headings_emphasis_code_and_links_lose_their_markup() {
        let r = render(
            "# Title\n\nSome *soft* and **strong** text with `code` and [docs](https://example.org/d).\n\n## Next",
        );
        assert_eq!(
            r.text,
            "Title\n\nSome soft and strong text with code and docs (https://example.org/d).\n\nNext"
        );
        let spans = shown(&r);
        assert_eq!(
            spans[0],
            (
                "Title".to_owned(),
                HEADING.within(Look::attrs(Attrs::UNDERLINE))
            )
        );
        assert!(spans.contains(&("soft".to_owned(), Look::attrs(Attrs::ITALIC))));
        assert!(spans.contains(&("strong".to_owned(), Look::attrs(Attrs::BOLD))));
        assert!(spans.contains(&("code".to_owned(), CODE)));
        assert!(spans.contains(&("docs".to_owned(), LINK)));
        assert!(spans.contains(&(" (https://example.org/d)".to_owned(), DIM)));
        assert_eq!(spans.last(), Some(&("Next".to_owned(), HEADING)));
    }

    #[test]
    fn lists_quotes_and_tables_keep_their_shape() {
        let r = render(
            "- one\n- two\n  1. inner\n  2. more\n\n> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert_eq!(
            r.text,
            "• one\n• two\n  1. inner\n  2. more\n\n│ quoted\n\na │ b\n1 │ 2"
        );
        let spans = shown(&r);
        assert!(spans.contains(&("quoted".to_owned(), Look::attrs(Attrs::ITALIC))));
        assert!(spans.contains(&("a".to_owned(), Look::attrs(Attrs::BOLD))));
    }

    #[test]
    fn code_fences_are_indented_and_an_open_fence_shows_what_it_has() {
        let r = render("Run:\n\n```sh\ncargo test\n```\nthen");
        assert_eq!(r.text, "Run:\n\n  cargo test\n\nthen");
        let r = render("```\nlet a = 1;\nlet b");
        assert_eq!(r.text, "  let a = 1;\n  let b");
    }
}
