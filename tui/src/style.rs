//! Colors and text attributes of one cell.

/// A cell color. `Reset` is the terminal's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Color {
    /// The terminal's default color.
    #[default]
    Reset,
    /// One of the 256 indexed colors (0–15 are the terminal's palette).
    Indexed(u8),
    /// A 24-bit color.
    Rgb(u8, u8, u8),
}

/// Text attributes, a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attrs(pub u8);

impl Attrs {
    /// No attributes.
    pub const NONE: Attrs = Attrs(0);
    /// Bold.
    pub const BOLD: Attrs = Attrs(1);
    /// Dim.
    pub const DIM: Attrs = Attrs(2);
    /// Italic.
    pub const ITALIC: Attrs = Attrs(4);
    /// Underline.
    pub const UNDERLINE: Attrs = Attrs(8);
    /// Reverse video (used for selection and search highlights, so they stay
    /// visible without color).
    pub const REVERSE: Attrs = Attrs(16);

    /// Whether every attribute in `other` is set.
    pub fn contains(self, other: Attrs) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of both sets.
    #[must_use]
    pub fn with(self, other: Attrs) -> Attrs {
        Attrs(self.0 | other.0)
    }
}

/// How a cell is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    /// Foreground color.
    pub fg: Color,
    /// Background color.
    pub bg: Color,
    /// Attributes.
    pub attrs: Attrs,
}

impl Style {
    /// The terminal's default look.
    pub const PLAIN: Style = Style {
        fg: Color::Reset,
        bg: Color::Reset,
        attrs: Attrs::NONE,
    };

    /// A style with only a foreground color.
    pub const fn fg(color: Color) -> Style {
        Style {
            fg: color,
            bg: Color::Reset,
            attrs: Attrs::NONE,
        }
    }

    /// This style with `attrs` added.
    #[must_use]
    pub const fn attrs(self, attrs: Attrs) -> Style {
        Style {
            fg: self.fg,
            bg: self.bg,
            attrs: Attrs(self.attrs.0 | attrs.0),
        }
    }

    /// This style without colors (for `NO_COLOR` and monochrome terminals);
    /// attributes stay, so emphasis and highlights remain visible.
    #[must_use]
    pub const fn monochrome(self) -> Style {
        Style {
            fg: Color::Reset,
            bg: Color::Reset,
            attrs: self.attrs,
        }
    }
}
