//! Rectangles and the vertical split the screen layout is built from.

/// A rectangle of cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    /// Left column.
    pub x: u16,
    /// Top row.
    pub y: u16,
    /// Width in cells.
    pub width: u16,
    /// Height in cells.
    pub height: u16,
}

impl Rect {
    /// A rectangle.
    pub const fn new(x: u16, y: u16, width: u16, height: u16) -> Self {
        Self {
            x,
            y,
            width,
            height,
        }
    }

    /// One past the right column.
    pub fn right(&self) -> u16 {
        self.x.saturating_add(self.width)
    }

    /// One past the bottom row.
    pub fn bottom(&self) -> u16 {
        self.y.saturating_add(self.height)
    }

    /// Whether it has no cells.
    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// The overlap of two rectangles (empty when they do not meet).
    pub fn intersect(&self, other: Rect) -> Rect {
        let x = self.x.max(other.x);
        let y = self.y.max(other.y);
        let r = self.right().min(other.right());
        let b = self.bottom().min(other.bottom());
        Rect::new(x, y, r.saturating_sub(x), b.saturating_sub(y))
    }

    /// The rectangle shrunk by `n` cells on every side.
    pub fn inset(&self, n: u16) -> Rect {
        Rect::new(
            self.x.saturating_add(n),
            self.y.saturating_add(n),
            self.width.saturating_sub(n.saturating_mul(2)),
            self.height.saturating_sub(n.saturating_mul(2)),
        )
    }

    /// A rectangle of at most `width` × `height` centered in this one.
    pub fn centered(&self, width: u16, height: u16) -> Rect {
        let w = width.min(self.width);
        let h = height.min(self.height);
        Rect::new(
            self.x + (self.width - w) / 2,
            self.y + (self.height - h) / 2,
            w,
            h,
        )
    }
}

/// How tall a region of a vertical split wants to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Exactly this many rows (fewer if the screen is too small).
    Fixed(u16),
    /// The rows the content asks for, between `min` and `max`.
    Content {
        /// Fewest rows.
        min: u16,
        /// Most rows.
        max: u16,
    },
    /// Whatever is left (shared equally between fill regions).
    Fill,
}

/// Splits `area` top to bottom. `wanted[i]` is the content height of region
/// `i` (used by [`Size::Content`]). Fixed and content regions are served
/// from the bottom of the list upward when rows run short, so the last
/// regions (status, input) stay visible on tiny screens; fill regions get
/// the rest. Every returned rectangle lies inside `area` and they do not
/// overlap, whatever the sizes, so any terminal size gives a valid layout.
pub fn split_vertical<const N: usize>(
    area: Rect,
    sizes: &[Size; N],
    wanted: &[u16; N],
) -> [Rect; N] {
    let mut heights = [0u16; N];
    let mut left = area.height;
    for i in (0..N).rev() {
        let want = match sizes[i] {
            Size::Fixed(n) => n,
            Size::Content { min, max } => wanted[i].clamp(min, max.max(min)),
            Size::Fill => continue,
        };
        heights[i] = want.min(left);
        left -= heights[i];
    }
    let fills = sizes.iter().filter(|s| matches!(s, Size::Fill)).count() as u16;
    if let (Some(each), Some(mut extra)) = (left.checked_div(fills), left.checked_rem(fills)) {
        for (i, s) in sizes.iter().enumerate() {
            if matches!(s, Size::Fill) {
                heights[i] = each + u16::from(extra > 0);
                extra = extra.saturating_sub(1);
            }
        }
    }
    let mut out = [Rect::default(); N];
    let mut y = area.y;
    for i in 0..N {
        out[i] = Rect::new(area.x, y, area.width, heights[i]);
        y += heights[i];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bottom_regions_win_on_small_screens() {
        let sizes = [Size::Fill, Size::Fixed(1), Size::Content { min: 1, max: 5 }];
        let r = split_vertical(Rect::new(0, 0, 10, 24), &sizes, &[0, 0, 3]);
        assert_eq!(r.map(|r| r.height), [20, 1, 3]);
        let r = split_vertical(Rect::new(0, 0, 10, 2), &sizes, &[0, 0, 3]);
        assert_eq!(r.map(|r| r.height), [0, 0, 2]);
        let r = split_vertical(Rect::new(0, 0, 10, 0), &sizes, &[0, 0, 3]);
        assert_eq!(r.map(|r| r.height), [0, 0, 0]);
    }
}
