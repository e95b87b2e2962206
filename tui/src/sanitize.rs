//! The sanitizer every drawn string goes through.
//!
//! Render descriptions, model text and tool output are untrusted: nothing
//! they contain may reach the terminal as a control sequence. [`Sanitized`]
//! walks a string and yields only printable characters: ESC and the whole
//! escape sequence it introduces (CSI, OSC, DCS, SOS, PM, APC, and
//! two-character escapes), every other C0 control, DEL, and every C1
//! control (U+0080–U+009F) are dropped; a tab becomes one space. The
//! buffer's drawing functions accept text only through this iterator, so a
//! cell can never hold a control character.

/// Whether `c` is a control character that is never drawn.
pub fn is_control(c: char) -> bool {
    let u = c as u32;
    u < 0x20 || (0x7f..=0x9f).contains(&u)
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

/// An iterator over the drawable characters of a string, with their byte
/// offsets in it. It allocates nothing.
#[derive(Debug, Clone)]
pub struct Sanitized<'a> {
    chars: std::str::CharIndices<'a>,
    state: State,
}

impl<'a> Sanitized<'a> {
    /// Starts walking `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            chars: text.char_indices(),
            state: State::Text,
        }
    }
}

impl Iterator for Sanitized<'_> {
    type Item = (usize, char);

    fn next(&mut self) -> Option<(usize, char)> {
        loop {
            let (i, c) = self.chars.next()?;
            let u = c as u32;
            match self.state {
                State::Text => match c {
                    '\u{1b}' => self.state = State::Escape,
                    '\t' => return Some((i, ' ')),
                    // A C1 CSI or string introducer starts a sequence too.
                    '\u{9b}' => self.state = State::Csi,
                    '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                        self.state = State::Str;
                    }
                    _ if is_control(c) => {}
                    _ => return Some((i, c)),
                },
                State::Escape => {
                    self.state = match c {
                        '[' => State::Csi,
                        ']' | 'P' | 'X' | '^' | '_' => State::Str,
                        // Intermediate bytes keep the escape open.
                        _ if (0x20..=0x2f).contains(&u) => State::Escape,
                        _ => State::Text,
                    };
                }
                State::Csi => {
                    if (0x40..=0x7e).contains(&u) || !(0x20..0x7f).contains(&u) {
                        self.state = State::Text;
                    }
                }
                State::Str => match c {
                    '\u{7}' | '\u{9c}' => self.state = State::Text,
                    '\u{1b}' => self.state = State::StrEscape,
                    _ => {}
                },
                State::StrEscape => {
                    self.state = if c == '\\' { State::Text } else { State::Str };
                }
            }
        }
    }
}

/// The drawable text of `s` as a new string (for tests, copies and
/// clipboard payloads; drawing uses [`Sanitized`] directly).
pub fn sanitize(s: &str) -> String {
    Sanitized::new(s).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(sanitize("x\u{1b}]52;c;aGk=\u{7}y"), "xy");
        assert_eq!(
            sanitize("x\u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "xlink"
        );
        assert_eq!(sanitize("a\u{9b}2Jb\u{85}c\u{7f}d\re\u{8}"), "abcde");
        assert_eq!(sanitize("tab\there"), "tab here");
        assert_eq!(sanitize("\u{1b}7saved\u{1b}8"), "saved");
        assert_eq!(sanitize("héllo 世界"), "héllo 世界");
    }

    #[test]
    fn offsets_point_into_the_original() {
        let s = "a\u{1b}[1mb";
        let v: Vec<(usize, char)> = Sanitized::new(s).collect();
        assert_eq!(v, vec![(0, 'a'), (5, 'b')]);
    }
}
