//! The sanitizer every drawn string goes through.
//!
//! Render descriptions, model text and tool output are untrusted: nothing
//! they contain may reach the terminal as a control sequence, and nothing
//! they contain may be hidden from the user either. [`Sanitized`] walks a
//! string and yields only printable characters, with every control shown
//! as a visible picture instead of being executed or silently dropped:
//!
//! * a C0 control becomes its Unicode control picture (ESC `␛`, BEL `␇`,
//!   CR `␍`, NUL `␀`, ...), so `ESC [ 3 1 m` is drawn as `␛[31m` and an
//!   OSC title change as `␛]0;title␇`: the user sees what the text holds,
//!   the terminal receives only printable characters;
//! * DEL becomes `␡` and a C1 control (U+0080–U+009F, such as the
//!   one-character CSI U+009B) becomes `�`;
//! * a tab becomes one space, and a CR that ends a line (before `\n` or at
//!   the end of the text: a CRLF line end) is dropped.
//!
//! Each control maps to exactly one character of width 1, so byte offsets
//! and widths stay one-to-one with what is drawn. The buffer's drawing
//! functions accept text only through this iterator, so a cell can never
//! hold a control character.
//!
//! Copies and pastes are different: what goes to the clipboard or into the
//! editor is text for another program, so [`strip`] removes whole escape
//! sequences and every other control instead of picturing them.

/// Whether `c` is a control character that is never drawn.
pub fn is_control(c: char) -> bool {
    let u = c as u32;
    u < 0x20 || (0x7f..=0x9f).contains(&u)
}

/// The visible stand-in drawn for control character `c`.
pub fn picture(c: char) -> char {
    let u = c as u32;
    match u {
        // U+2400..U+241F: SYMBOL FOR NULL .. SYMBOL FOR UNIT SEPARATOR.
        0..=0x1f => char::from_u32(0x2400 + u).unwrap_or('\u{fffd}'),
        0x7f => '\u{2421}',
        _ => '\u{fffd}',
    }
}

/// An iterator over the drawable characters of a string, with their byte
/// offsets in it. It allocates nothing.
#[derive(Debug, Clone)]
pub struct Sanitized<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl<'a> Sanitized<'a> {
    /// Starts walking `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            chars: text.char_indices().peekable(),
        }
    }
}

impl Iterator for Sanitized<'_> {
    type Item = (usize, char);

    fn next(&mut self) -> Option<(usize, char)> {
        loop {
            let (i, c) = self.chars.next()?;
            return Some(match c {
                '\t' => (i, ' '),
                '\r' if matches!(self.chars.peek(), None | Some((_, '\n'))) => continue,
                _ if is_control(c) => (i, picture(c)),
                _ => (i, c),
            });
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    /// After ESC.
    Escape,
    /// Inside a CSI sequence: parameters until a final byte 0x40–0x7E.
    Csi,
    /// Inside a string sequence (OSC, DCS, SOS, PM, APC) until BEL or ST.
    Str,
    /// ESC seen inside a string sequence (maybe the ST `ESC \`).
    StrEscape,
}

/// `s` without its escape sequences (CSI, OSC, DCS, SOS, PM, APC and
/// two-character escapes, each removed whole) and without any other C0
/// control, DEL or C1 control; a tab becomes one space. For text leaving
/// the interface (copies) or entering it from a paste.
pub fn strip(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut state = State::Text;
    for c in s.chars() {
        let u = c as u32;
        match state {
            State::Text => match c {
                '\u{1b}' => state = State::Escape,
                '\t' => out.push(' '),
                // A C1 CSI or string introducer starts a sequence too.
                '\u{9b}' => state = State::Csi,
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => state = State::Str,
                _ if is_control(c) => {}
                _ => out.push(c),
            },
            State::Escape => {
                state = match c {
                    '[' => State::Csi,
                    ']' | 'P' | 'X' | '^' | '_' => State::Str,
                    // Intermediate bytes keep the escape open.
                    _ if (0x20..=0x2f).contains(&u) => State::Escape,
                    _ => State::Text,
                };
            }
            State::Csi => {
                if (0x40..=0x7e).contains(&u) || !(0x20..0x7f).contains(&u) {
                    state = State::Text;
                }
            }
            State::Str => match c {
                '\u{7}' | '\u{9c}' => state = State::Text,
                '\u{1b}' => state = State::StrEscape,
                _ => {}
            },
            State::StrEscape => {
                state = if c == '\\' { State::Text } else { State::Str };
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(s: &str) -> String {
        Sanitized::new(s).map(|(_, c)| c).collect()
    }

    #[test]
    fn controls_are_drawn_as_visible_pictures() {
        assert_eq!(
            drawn("a\u{1b}[31mred\u{1b}[0m b"),
            "a\u{241b}[31mred\u{241b}[0m b"
        );
        assert_eq!(drawn("x\u{1b}]0;pwned\u{7}y"), "x\u{241b}]0;pwned\u{2407}y");
        assert_eq!(
            drawn("a\u{9b}2Jb\u{85}c\u{7f}d\u{0}e\u{8}"),
            "a\u{fffd}2Jb\u{fffd}c\u{2421}d\u{2400}e\u{2408}"
        );
        assert_eq!(drawn("tab\there"), "tab here");
        assert_eq!(drawn("héllo 世界"), "héllo 世界");
        // A CR that ends a line is a line end; one inside a line is shown.
        assert_eq!(drawn("one\r"), "one");
        let (i, c) = Sanitized::new("one\r\ntwo").nth(3).unwrap();
        assert_eq!(
            (i, c),
            (4, '\u{240a}'),
            "the CR before a line feed is dropped"
        );
        assert_eq!(drawn("10%\r20%"), "10%\u{240d}20%");
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let p = picture(c);
            assert!(!is_control(p), "{c:?} drawn as a control");
            assert_eq!(crate::buffer::char_width(p), 1, "{c:?} drawn as {p:?}");
        }
    }

    #[test]
    fn offsets_point_into_the_original() {
        let s = "a\u{1b}[1mb";
        let v: Vec<(usize, char)> = Sanitized::new(s).collect();
        assert_eq!(
            v,
            vec![
                (0, 'a'),
                (1, '\u{241b}'),
                (2, '['),
                (3, '1'),
                (4, 'm'),
                (5, 'b')
            ]
        );
    }

    #[test]
    fn strip_removes_sequences_whole() {
        assert_eq!(strip("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(strip("x\u{1b}]52;c;aGk=\u{7}y"), "xy");
        assert_eq!(
            strip("x\u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "xlink"
        );
        assert_eq!(strip("a\u{9b}2Jb\u{85}c\u{7f}d\re\u{8}"), "abcde");
        assert_eq!(strip("tab\there"), "tab here");
        assert_eq!(strip("\u{1b}7saved\u{1b}8"), "saved");
        assert_eq!(strip("héllo 世界"), "héllo 世界");
    }
}
