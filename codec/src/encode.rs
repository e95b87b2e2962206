//! The canonical encoder: appends items to a caller-owned `Vec<u8>`.

use crate::float::{Shortest, shortest};

/// Major type numbers (RFC 8949 §3.1).
pub(crate) const MAJOR_UNSIGNED: u8 = 0;
pub(crate) const MAJOR_NEGATIVE: u8 = 1;
pub(crate) const MAJOR_BYTES: u8 = 2;
pub(crate) const MAJOR_TEXT: u8 = 3;
pub(crate) const MAJOR_ARRAY: u8 = 4;
pub(crate) const MAJOR_MAP: u8 = 5;
pub(crate) const MAJOR_TAG: u8 = 6;
pub(crate) const MAJOR_SIMPLE: u8 = 7;

/// Writes canonical CBOR items into a caller-owned buffer.
///
/// Every method appends exactly one head (plus payload for strings) with the
/// shortest argument encoding, so anything written through it is canonical as
/// long as the caller (1) writes the number of children each `array`/`map`
/// header declares and (2) writes map keys in canonical order — bytewise order
/// of their encodings. Records with fixed keys know that order statically;
/// generic maps go through [`crate::Value`], which sorts.
///
/// The encoder never allocates when the buffer has enough spare capacity.
///
/// While it is alive the encoder keeps the buffer's pointer, capacity and
/// length in its own fields and writes the vector's length back when it is
/// dropped (and before any call that lets the vector grow). A byte stored
/// through the buffer's pointer may, as far as the compiler knows, alias
/// the vector's own fields, so reading the capacity and pointer from the
/// vector reloads both after every head; held in the encoder (which the
/// writing function borrows uniquely) they stay in registers across
/// consecutive items, and a head is a compare, a store and an add.
#[derive(Debug)]
pub struct Encoder<'b> {
    buf: &'b mut Vec<u8>,
    /// `buf.as_mut_ptr()`, refreshed whenever the vector may have grown.
    ptr: *mut u8,
    /// `buf.capacity() - 8` (0 below 8 bytes), refreshed with `ptr`: a head
    /// of at most 9 bytes fits when `len < head_end`, one compare where
    /// `capacity - len >= 9` takes a subtraction too.
    head_end: usize,
    /// The written length: `buf.len() <= len <= capacity`, and every byte of
    /// `buf`'s allocation below `len` is initialized.
    len: usize,
}

impl Drop for Encoder<'_> {
    #[inline]
    fn drop(&mut self) {
        self.sync();
    }
}

impl<'b> Encoder<'b> {
    /// Starts appending to `buf` (existing contents are kept).
    #[inline]
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        let len = buf.len();
        let ptr = buf.as_mut_ptr();
        let head_end = head_end(buf.capacity());
        Self {
            buf,
            ptr,
            head_end,
            len,
        }
    }

    /// The buffer written so far (including anything it held before).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `len <= capacity` and every byte below `len` is
        // initialized (the field's invariant); the slice borrows `self`, so
        // nothing writes to the buffer while it lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Writes the length back to the vector.
    #[inline(always)]
    fn sync(&mut self) {
        // SAFETY: `len <= capacity` and every byte below it is initialized
        // (the field's invariant).
        unsafe { self.buf.set_len(self.len) }
    }

    /// Whether `n` bytes and a head of at most 9 bytes fit in the spare
    /// capacity. (`len + n` cannot overflow: both are at most `isize::MAX`.)
    #[inline(always)]
    fn fits_with_head(&self, n: usize) -> bool {
        self.len + n < self.head_end
    }

    /// Whether a head of at most 9 bytes fits in the spare capacity.
    #[inline(always)]
    fn head_fits(&self) -> bool {
        self.len < self.head_end
    }

    /// Appends `bytes` through the vector (it may grow) and takes its new
    /// pointer, capacity and length.
    ///
    /// The work is done by [`append_slow`], which is handed the vector and
    /// the length, never the encoder: an encoder whose address is passed to
    /// a call that is not inlined counts as escaped from there on, and the
    /// compiler then reloads its fields after every byte stored.
    #[inline(always)]
    fn extend_slow(&mut self, bytes: &[u8]) {
        let (ptr, cap, len) = append_slow(self.buf, self.len, bytes);
        self.ptr = ptr;
        self.head_end = head_end(cap);
        self.len = len;
    }

    /// Appends `bytes`: plain stores when they fit, else through the vector.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        // Room for `bytes` and 8 more (`len + n <= capacity - 8`): exact
        // capacity is not needed here, as the slow path appends without
        // growing a buffer that has room.
        if self.len + bytes.len() <= self.head_end {
            // SAFETY: just checked: room for `bytes` past `len`; the copy
            // initializes them before `len` covers them.
            unsafe {
                copy_short_or_long(bytes, self.ptr.add(self.len));
            }
            self.len += bytes.len();
        } else {
            self.extend_slow(bytes);
        }
    }

    /// Writes a head: major type plus the shortest encoding of `arg`.
    ///
    /// With 9 bytes of spare capacity the head is written with plain stores
    /// (a head is written for every item, so a per-byte `push` or an
    /// `extend_from_slice` call shows up in profiles). With less, it is
    /// appended at its exact size, so a buffer sized exactly for its content
    /// never grows: "no allocation when the buffer has capacity" holds for
    /// exact capacities too, not only for generous ones.
    #[inline(always)]
    fn head(&mut self, major: u8, arg: u64) {
        if self.head_fits() {
            // SAFETY: just checked: at least 9 bytes of spare capacity.
            unsafe { self.head_unchecked(major, arg) }
        } else {
            self.head_exact(major, arg);
        }
    }

    /// Appends a head at its exact size (the path for a nearly full buffer).
    #[inline(always)]
    fn head_exact(&mut self, major: u8, arg: u64) {
        let (ptr, cap, len) = append_head_slow(self.buf, self.len, major, arg);
        self.ptr = ptr;
        self.head_end = head_end(cap);
        self.len = len;
    }

    /// Writes a head into the buffer's spare capacity.
    ///
    /// # Safety
    ///
    /// The buffer must have at least 9 bytes of spare capacity.
    #[inline(always)]
    unsafe fn head_unchecked(&mut self, major: u8, arg: u64) {
        debug_assert!(self.head_fits());
        // SAFETY: the caller guarantees 9 bytes of spare capacity at `len`.
        self.len += unsafe { write_head(self.ptr.add(self.len), major, arg) };
    }

    /// Writes a string item: head plus payload, with one capacity check.
    ///
    /// Payloads up to 32 bytes (map keys, ids, paths, names) are copied with
    /// a pair of fixed-size, possibly overlapping loads and stores instead of
    /// a `memcpy` call, which costs more than the copy itself at that size.
    /// A buffer without room for the head's 9-byte store plus the payload
    /// takes the exact-size path, so it grows only when the item does not fit.
    #[inline(always)]
    fn string(&mut self, major: u8, v: &[u8]) {
        let n = v.len();
        if self.fits_with_head(n) {
            // SAFETY: just checked: room for a head of at most 9 bytes
            // followed by `n` payload bytes.
            self.len += unsafe { write_string(self.ptr.add(self.len), major, v) };
        } else {
            self.head_exact(major, n as u64);
            self.extend_slow(v);
        }
    }

    /// An unsigned integer (major type 0).
    #[inline(always)]
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.head(MAJOR_UNSIGNED, v);
        self
    }

    /// A signed integer: major type 0 when `v >= 0`, else major type 1.
    #[inline(always)]
    pub fn i64(&mut self, v: i64) -> &mut Self {
        if v >= 0 {
            self.head(MAJOR_UNSIGNED, v as u64);
        } else {
            // -1 - v without overflow: the bitwise complement.
            self.head(MAJOR_NEGATIVE, !(v as u64));
        }
        self
    }

    /// A negative integer given by its major-type-1 argument `n`; the value is
    /// `-1 - n`, so this reaches down to `-2^64`.
    #[inline(always)]
    pub fn negative(&mut self, n: u64) -> &mut Self {
        self.head(MAJOR_NEGATIVE, n);
        self
    }

    /// A byte string (major type 2).
    #[inline(always)]
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.string(MAJOR_BYTES, v);
        self
    }

    /// A text string (major type 3).
    #[inline(always)]
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.string(MAJOR_TEXT, v.as_bytes());
        self
    }

    /// An array header of definite length `len`; the caller writes `len` items.
    #[inline(always)]
    pub fn array(&mut self, len: u64) -> &mut Self {
        self.head(MAJOR_ARRAY, len);
        self
    }

    /// A map header of `len` pairs; the caller writes the pairs with keys in
    /// canonical (bytewise encoded) order and without duplicates.
    #[inline(always)]
    pub fn map(&mut self, len: u64) -> &mut Self {
        self.head(MAJOR_MAP, len);
        self
    }

    /// A tag (major type 6); the caller writes exactly one item after it.
    #[inline(always)]
    pub fn tag(&mut self, tag: u64) -> &mut Self {
        self.head(MAJOR_TAG, tag);
        self
    }

    /// `true` (`f5`) or `false` (`f4`).
    #[inline(always)]
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.put(&[if v { 0xf5 } else { 0xf4 }]);
        self
    }

    /// `null` (`f6`).
    #[inline(always)]
    pub fn null(&mut self) -> &mut Self {
        self.put(&[0xf6]);
        self
    }

    /// `undefined` (`f7`).
    #[inline(always)]
    pub fn undefined(&mut self) -> &mut Self {
        self.put(&[0xf7]);
        self
    }

    /// A simple value (major type 7) other than a float.
    ///
    /// # Panics
    ///
    /// Panics when `v` is in `24..=31`: RFC 8949 §3.3 gives those values no
    /// encoding at all. Values decoded by [`crate::Decoder`] are never in
    /// that range.
    #[inline]
    pub fn simple(&mut self, v: u8) -> &mut Self {
        assert!(
            !(24..32).contains(&v),
            "simple value {v} has no CBOR encoding (RFC 8949 §3.3 reserves 24..=31)"
        );
        self.head(MAJOR_SIMPLE, u64::from(v));
        self
    }

    /// A float in the shortest of binary16/32/64 that keeps its value exactly;
    /// every NaN is written as the canonical `f9 7e00`.
    #[inline]
    pub fn f64(&mut self, v: f64) -> &mut Self {
        match shortest(v) {
            Shortest::Half(h) => {
                let b = h.to_be_bytes();
                self.put(&[0xf9, b[0], b[1]]);
            }
            Shortest::Single(s) => {
                let b = s.to_be_bytes();
                self.put(&[0xfa, b[0], b[1], b[2], b[3]]);
            }
            Shortest::Double(d) => {
                let mut tmp = [0xfbu8; 9];
                tmp[1..].copy_from_slice(&d.to_be_bytes());
                self.put(&tmp);
            }
        }
        self
    }

    /// Appends an already-encoded item verbatim. The caller vouches that it is
    /// exactly one canonical item (for example a slice returned by
    /// [`crate::Decoder::skip`] in strict mode).
    #[inline]
    pub fn raw(&mut self, item: &[u8]) -> &mut Self {
        self.put(item);
        self
    }

    /// Writes a run of items (a tuple of 1 to 24 [`Item`]s) one after the
    /// other, with one capacity check for the whole run.
    ///
    /// The bytes are exactly those of the matching methods called in turn
    /// (`items((Item::map(1), Item::u64(0), Item::str(s)))` writes what
    /// `map(1).u64(0).str(s)` writes); the caller's duty for canonical
    /// output is the same (children counted, keys in canonical order).
    /// What differs is the work: the room for every head (9 bytes at most)
    /// and every payload is checked once, and the items are then written
    /// with plain stores, in straight-line code (a tuple, unlike an array,
    /// is written item by item without a loop). A head whose argument is a
    /// constant below 24 is a constant byte, and neighbouring constant bytes
    /// (the fixed keys of a record) are stored together. A buffer without
    /// room for the whole run writes its items one by one through the
    /// checked methods, so a buffer with exactly the room the items need
    /// still never grows.
    #[inline(always)]
    pub fn items<R: Run>(&mut self, run: R) -> &mut Self {
        let (sum, any) = run.payloads();
        if let Some(room) = run_room(sum, any, R::LEN)
            && self.fits_with_head(room)
        {
            // SAFETY: just checked: from `len` there is room for `room + 9`
            // bytes, which `run_room` made a head of 9 bytes plus the
            // payload for each of the run's items, as `write` needs.
            self.len = unsafe { run.write(self.ptr, self.len) };
        } else {
            run.write_checked(self);
        }
        self
    }

    /// Writes one [`Item`] (as `items((item,))`).
    #[inline(always)]
    pub fn item(&mut self, item: Item<'_>) -> &mut Self {
        self.items((item,))
    }

    /// Writes one [`Item`] through the checked methods.
    #[inline(always)]
    fn item_checked(&mut self, item: Item<'_>) {
        if item.is_string() {
            self.string(item.major, item.payload);
        } else {
            self.head(item.major, item.arg);
        }
    }
}

/// Payloads of at least this many bytes send a run down the item-by-item
/// path (`run_room` gives `None`), so that the run's sum cannot overflow.
const RUN_PAYLOAD_LIMIT: usize = 1 << 48;

/// The room an [`Encoder::items`] run of `n` items (`1 <= n <= 24`) needs
/// past the written length, less the 9 bytes that
/// [`Encoder::fits_with_head`] adds: a head of 9 bytes per item plus the
/// payloads, whose lengths sum to `sum` and OR to `any`.
///
/// `None` when some payload is [`RUN_PAYLOAD_LIMIT`] bytes or longer (the
/// run then takes the checked path): below it, `sum < 24 * 2^48 < 2^53`,
/// so neither the sum (accumulated with plain additions) nor the room, nor
/// the room added to a written length (at most `isize::MAX`) overflows.
#[inline(always)]
const fn run_room(sum: usize, any: usize, n: usize) -> Option<usize> {
    if any >= RUN_PAYLOAD_LIMIT {
        None
    } else {
        Some(sum + 9 * n - 9)
    }
}

/// A run of items for [`Encoder::items`]: a tuple of 1 to 24 [`Item`]s.
/// (Sealed: implemented for those tuples only.)
pub trait Run: run::Sealed {}

mod run {
    use super::{Encoder, Item, copy_short_or_long, write_head};

    /// What [`Encoder::items`] needs of a run.
    pub trait Sealed: Copy {
        /// How many items the run holds (1 to 24).
        const LEN: usize;

        /// The sum and the bitwise OR of the payloads' lengths (the sum
        /// may wrap when some length is `2^48` or more; the OR says so).
        fn payloads(&self) -> (usize, usize);

        /// Writes every item at `ptr + len` onwards and returns the new
        /// written length.
        ///
        /// # Safety
        ///
        /// `ptr + len` must be valid for writes of 9 bytes per item plus
        /// the payloads' lengths, and must not overlap any payload.
        unsafe fn write(self, ptr: *mut u8, len: usize) -> usize;

        /// Writes every item through the encoder's checked methods.
        fn write_checked(self, enc: &mut Encoder<'_>);
    }

    macro_rules! runs {
        ($($n:literal => ($($i:tt)+)),+ $(,)?) => {$(
            impl<'a> Sealed for ($(runs!(@item $i),)+) {
                const LEN: usize = $n;

                #[inline(always)]
                fn payloads(&self) -> (usize, usize) {
                    let mut sum = 0usize;
                    let mut any = 0usize;
                    $(
                        sum = sum.wrapping_add(self.$i.payload.len());
                        any |= self.$i.payload.len();
                    )+
                    (sum, any)
                }

                #[inline(always)]
                unsafe fn write(self, ptr: *mut u8, mut len: usize) -> usize {
                    $(
                        // SAFETY: the caller's room covers, for each item in
                        // turn, a head of 9 bytes (`write_head` writes 9 and
                        // counts at most 9) and the payload (copied exactly),
                        // so every write stays inside it; payloads are
                        // borrowed and do not overlap the buffer.
                        unsafe {
                            len += write_head(ptr.add(len), self.$i.major, self.$i.arg);
                            copy_short_or_long(self.$i.payload, ptr.add(len));
                        }
                        len += self.$i.payload.len();
                    )+
                    len
                }

                #[inline(always)]
                fn write_checked(self, enc: &mut Encoder<'_>) {
                    $(enc.item_checked(self.$i);)+
                }
            }

            impl<'a> super::Run for ($(runs!(@item $i),)+) {}
        )+};
        (@item $i:tt) => { Item<'a> };
    }

    runs! {
        1 => (0),
        2 => (0 1),
        3 => (0 1 2),
        4 => (0 1 2 3),
        5 => (0 1 2 3 4),
        6 => (0 1 2 3 4 5),
        7 => (0 1 2 3 4 5 6),
        8 => (0 1 2 3 4 5 6 7),
        9 => (0 1 2 3 4 5 6 7 8),
        10 => (0 1 2 3 4 5 6 7 8 9),
        11 => (0 1 2 3 4 5 6 7 8 9 10),
        12 => (0 1 2 3 4 5 6 7 8 9 10 11),
        13 => (0 1 2 3 4 5 6 7 8 9 10 11 12),
        14 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        15 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
        16 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        17 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
        18 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
        19 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18),
        20 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19),
        21 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20),
        22 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21),
        23 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22),
        24 => (0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
    }
}

/// One item of a run written by [`Encoder::items`]: a head and, for a byte
/// or text string, its payload.
///
/// Every constructor is the method of [`Encoder`] of the same name, as a
/// value: `Item::u64(7)` is what `Encoder::u64(7)` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item<'a> {
    /// Major type.
    major: u8,
    /// The head's argument.
    arg: u64,
    /// The string's bytes; empty for every other item.
    payload: &'a [u8],
}

impl<'a> Item<'a> {
    /// Whether this is a byte or text string (written with its payload,
    /// which may be empty).
    #[inline(always)]
    const fn is_string(&self) -> bool {
        self.major == MAJOR_BYTES || self.major == MAJOR_TEXT
    }

    /// An unsigned integer (major type 0).
    #[inline(always)]
    pub const fn u64(v: u64) -> Self {
        Item {
            major: MAJOR_UNSIGNED,
            arg: v,
            payload: &[],
        }
    }

    /// A signed integer: major type 0 when `v >= 0`, else major type 1
    /// (chosen without a branch: the sign bit gives the major type, and
    /// flipping every bit of a negative `v` gives `-1 - v`).
    #[inline(always)]
    pub const fn i64(v: i64) -> Self {
        let sign = (v >> 63) as u64;
        Item {
            major: (sign & 1) as u8,
            arg: v as u64 ^ sign,
            payload: &[],
        }
    }

    /// A negative integer given by its major-type-1 argument `n` (the value
    /// `-1 - n`).
    #[inline(always)]
    pub const fn negative(n: u64) -> Self {
        Item {
            major: MAJOR_NEGATIVE,
            arg: n,
            payload: &[],
        }
    }

    /// A byte string (major type 2).
    #[inline(always)]
    pub const fn bytes(v: &'a [u8]) -> Self {
        Item {
            major: MAJOR_BYTES,
            arg: v.len() as u64,
            payload: v,
        }
    }

    /// A text string (major type 3).
    #[inline(always)]
    pub const fn str(v: &'a str) -> Self {
        Item {
            major: MAJOR_TEXT,
            arg: v.len() as u64,
            payload: v.as_bytes(),
        }
    }

    /// An array header of definite length `len`; the caller writes `len`
    /// items after it.
    #[inline(always)]
    pub const fn array(len: u64) -> Self {
        Item {
            major: MAJOR_ARRAY,
            arg: len,
            payload: &[],
        }
    }

    /// A map header of `len` pairs; the caller writes the pairs after it,
    /// keys in canonical order.
    #[inline(always)]
    pub const fn map(len: u64) -> Self {
        Item {
            major: MAJOR_MAP,
            arg: len,
            payload: &[],
        }
    }

    /// A tag (major type 6); the caller writes exactly one item after it.
    #[inline(always)]
    pub const fn tag(tag: u64) -> Self {
        Item {
            major: MAJOR_TAG,
            arg: tag,
            payload: &[],
        }
    }

    /// `true` (`f5`) or `false` (`f4`).
    #[inline(always)]
    pub const fn bool(v: bool) -> Self {
        Item {
            major: MAJOR_SIMPLE,
            arg: 20 + v as u64,
            payload: &[],
        }
    }

    /// `null` (`f6`).
    #[inline(always)]
    pub const fn null() -> Self {
        Item {
            major: MAJOR_SIMPLE,
            arg: 22,
            payload: &[],
        }
    }

    /// `undefined` (`f7`).
    #[inline(always)]
    pub const fn undefined() -> Self {
        Item {
            major: MAJOR_SIMPLE,
            arg: 23,
            payload: &[],
        }
    }
}

/// The encoder's `head_end` for a buffer of capacity `cap`.
#[inline(always)]
fn head_end(cap: usize) -> usize {
    cap.saturating_sub(8)
}

/// Writes the head of major type `major` with argument `arg` at `dst` in its
/// shortest form and returns its length. Takes the destination by value,
/// not the encoder, so that the encoder's fields can stay in registers
/// whether or not this is inlined.
///
/// # Safety
///
/// `dst` must be valid for writes of 9 bytes.
#[inline(always)]
unsafe fn write_head(dst: *mut u8, major: u8, arg: u64) -> usize {
    let m = major << 5;
    // SAFETY (every block below): the caller guarantees 9 writable bytes at
    // `dst`; at most 9 are written (one initial byte plus 8 argument bytes,
    // of which only `width` are counted).
    if arg < 24 {
        unsafe { dst.write(m | arg as u8) };
        return 1;
    }
    // The width, initial byte and shift, by the argument's highest set bit
    // (`arg >= 24`, so it has one; the mask only drops a bounds check).
    let w = WIDE[(arg.ilog2() & 63) as usize];
    // The argument's big-endian bytes, left-aligned in 8 bytes; all 8 are
    // stored (within the 9 reserved bytes), only the width's counted.
    let be = (arg << w.shift).to_be_bytes();
    unsafe {
        dst.write(m | w.info);
        std::ptr::copy_nonoverlapping(be.as_ptr(), dst.add(1), 8);
    }
    usize::from(w.len)
}

/// How a head with an argument of 24 or more is written, by the argument's
/// highest set bit ([`WIDE`]).
#[derive(Clone, Copy)]
struct Wide {
    /// The initial byte's additional information: 24, 25, 26 or 27 for an
    /// argument of 1, 2, 4 or 8 bytes.
    info: u8,
    /// The head's length: one initial byte and the argument's bytes.
    len: u8,
    /// The left shift that puts the argument's bytes at the top of a word.
    shift: u8,
}

/// [`Wide`] for every highest set bit 0..64: one load instead of three
/// comparisons and the width's arithmetic (a tenth of the instructions of
/// encoding the gate's entries went to choosing widths).
const WIDE: [Wide; 64] = {
    let mut t = [Wide {
        info: 0,
        len: 0,
        shift: 0,
    }; 64];
    let mut bit = 0;
    while bit < 64 {
        let class = if bit < 8 {
            0
        } else if bit < 16 {
            1
        } else if bit < 32 {
            2
        } else {
            3
        };
        let width = 1u8 << class;
        t[bit] = Wide {
            info: 24 + class,
            len: 1 + width,
            shift: 64 - 8 * width,
        };
        bit += 1;
    }
    t
};

/// Writes a string item (head and payload) at `dst` and returns its length.
///
/// # Safety
///
/// `dst` must be valid for writes of `v.len() + 9` bytes and must not
/// overlap `v`.
#[inline]
unsafe fn write_string(dst: *mut u8, major: u8, v: &[u8]) -> usize {
    // SAFETY: the caller's room covers a head of at most 9 bytes followed by
    // `v.len()` payload bytes.
    unsafe {
        let head = write_head(dst, major, v.len() as u64);
        copy_short_or_long(v, dst.add(head));
        head + v.len()
    }
}

/// Sets `buf`'s length to `len` (the encoder's written length), appends
/// `bytes` through the vector (which may grow) and returns its pointer,
/// capacity and length afterwards.
#[cold]
#[inline(never)]
fn append_slow(buf: &mut Vec<u8>, len: usize, bytes: &[u8]) -> (*mut u8, usize, usize) {
    // SAFETY: the encoder's invariant: `len <= capacity` and every byte
    // below it is initialized.
    unsafe { buf.set_len(len) };
    buf.extend_from_slice(bytes);
    (buf.as_mut_ptr(), buf.capacity(), buf.len())
}

/// [`append_slow`] of the head of major type `major` with argument `arg`,
/// at its exact size.
#[cold]
#[inline(never)]
fn append_head_slow(buf: &mut Vec<u8>, len: usize, major: u8, arg: u64) -> (*mut u8, usize, usize) {
    let m = major << 5;
    let mut tmp = [0u8; 9];
    let used = if arg < 24 {
        tmp[0] = m | arg as u8;
        1
    } else {
        let class =
            usize::from(arg > 0xff) + usize::from(arg > 0xffff) + usize::from(arg > 0xffff_ffff);
        let width = 1usize << class;
        tmp[0] = m | (24 + class as u8);
        tmp[1..1 + width].copy_from_slice(&arg.to_be_bytes()[8 - width..]);
        1 + width
    };
    append_slow(buf, len, &tmp[..used])
}

/// Copies `src` to `dst`: inline fixed-size moves for up to 32 bytes,
/// [`copy_long`]'s loop above that (no call either way).
///
/// # Safety
///
/// `dst` must be valid for writes of `src.len()` bytes and must not overlap
/// `src`.
#[inline(always)]
unsafe fn copy_short_or_long(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY (every block below): each load reads inside `src` (offsets
    // `0..k` and `n - k..n` with `k <= n`), each store writes inside
    // `dst[..n]` (valid by the caller's contract); two overlapping chunks
    // of `k` bytes cover all `n` bytes when `k <= n <= 2k`, and bytes 0,
    // `n / 2` and `n - 1` cover them when `1 <= n <= 3`. Unaligned loads
    // and stores are used throughout.
    unsafe {
        if n > 32 {
            copy_long(s, dst, n);
        } else if n >= 16 {
            let a = s.cast::<u128>().read_unaligned();
            let b = s.add(n - 16).cast::<u128>().read_unaligned();
            dst.cast::<u128>().write_unaligned(a);
            dst.add(n - 16).cast::<u128>().write_unaligned(b);
        } else if n >= 8 {
            let a = s.cast::<u64>().read_unaligned();
            let b = s.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let a = s.cast::<u32>().read_unaligned();
            let b = s.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else {
            for i in 0..n {
                dst.add(i).write(s.add(i).read());
            }
        }
    }
}

/// Copies `n > 32` bytes from `s` to `dst` in a loop of 64-byte steps of
/// unaligned 16-byte moves (SSE2, part of every x86_64 target; plain
/// 16-byte integer moves elsewhere), the last step overlapping the one
/// before it; 33 to 63 bytes are two overlapping 32-byte moves.
///
/// This replaced a call to the C library's `memcpy` for the long strings
/// (messages, tool output): measured on `codec.encode_1000` (AMD EPYC,
/// Zen 5) the encode went from 2.7 to 2.9x its memcpy floor to 2.4 to 2.5x.
/// The call paid for the dispatch on size (which for strings of every
/// length between 33 bytes and a few KiB mispredicts) and, above about
/// 2 KiB, for `rep movsb`'s start-up; the loop costs one predicted branch
/// per 64 bytes and one misprediction at its end. Its speed on text that
/// has to come from L2 or L3 is the cache's, not the width of the moves:
/// 32-byte AVX2 moves (behind a run-time check) measured the same.
///
/// # Safety
///
/// `n > 32`; `s` must be valid for reads and `dst` for writes of `n` bytes,
/// and the two must not overlap.
#[inline(always)]
unsafe fn copy_long(s: *const u8, dst: *mut u8, n: usize) {
    debug_assert!(n > 32);
    type Block = [u128; 4];
    type Half = [u128; 2];
    // SAFETY (every block below): every load reads inside `s[..n]` and
    // every store writes inside `dst[..n]` (offsets `0..n` only: the last
    // step starts at `n - 64 >= 0`, the short case's second move at
    // `n - 32 > 0`); all moves are unaligned.
    unsafe {
        if n < 64 {
            let a = s.cast::<Half>().read_unaligned();
            let b = s.add(n - 32).cast::<Half>().read_unaligned();
            dst.cast::<Half>().write_unaligned(a);
            dst.add(n - 32).cast::<Half>().write_unaligned(b);
            return;
        }
        let mut i = 0;
        while i + 64 < n {
            let c = s.add(i).cast::<Block>().read_unaligned();
            dst.add(i).cast::<Block>().write_unaligned(c);
            i += 64;
        }
        let c = s.add(n - 64).cast::<Block>().read_unaligned();
        dst.add(n - 64).cast::<Block>().write_unaligned(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of every major type at both sides of every width boundary
    /// and at every power of two (and one below and above it) is the
    /// shortest form, byte for byte, and `write_head` counts exactly its
    /// bytes.
    #[test]
    fn heads_of_every_width_from_the_table() {
        let mut args = vec![0u64, 1, 23, 24, 25, u64::MAX];
        for bit in 0..64 {
            let p = 1u64 << bit;
            args.extend([p - 1, p, p.wrapping_add(1)]);
        }
        for b in [0xffu64, 0xffff, 0xffff_ffff] {
            args.extend([b - 1, b, b + 1]);
        }
        for major in 0..8u8 {
            for &arg in &args {
                let m = major << 5;
                let expected: Vec<u8> = if arg < 24 {
                    vec![m | arg as u8]
                } else if arg <= 0xff {
                    vec![m | 24, arg as u8]
                } else if arg <= 0xffff {
                    let mut v = vec![m | 25];
                    v.extend_from_slice(&(arg as u16).to_be_bytes());
                    v
                } else if arg <= 0xffff_ffff {
                    let mut v = vec![m | 26];
                    v.extend_from_slice(&(arg as u32).to_be_bytes());
                    v
                } else {
                    let mut v = vec![m | 27];
                    v.extend_from_slice(&arg.to_be_bytes());
                    v
                };
                let mut dst = [0xaau8; 9];
                // SAFETY: `dst` holds the 9 bytes `write_head` may write.
                let n = unsafe { write_head(dst.as_mut_ptr(), major, arg) };
                assert_eq!(&dst[..n], &expected[..], "major {major}, argument {arg:#x}");
            }
        }
    }

    #[test]
    fn run_room_counts_a_head_per_item_and_sends_huge_payloads_down_the_checked_path() {
        // Room for a head of 9 bytes per item and the payloads, less the 9
        // bytes that `fits_with_head` adds.
        assert_eq!(run_room(0, 0, 1), Some(0));
        assert_eq!(run_room(3, 3, 1), Some(3));
        assert_eq!(run_room(10, 10, 3), Some(10 + 18));
        let below = RUN_PAYLOAD_LIMIT - 1;
        assert_eq!(run_room(below, below, 24), Some(below + 9 * 23));
        // A payload at the limit or above, whatever the (possibly wrapped)
        // sum says, sends the run item by item.
        assert_eq!(run_room(0, RUN_PAYLOAD_LIMIT, 2), None);
        assert_eq!(run_room(5, usize::MAX, 2), None);
        assert_eq!(run_room(RUN_PAYLOAD_LIMIT, RUN_PAYLOAD_LIMIT, 1), None);
        // The largest room a run can ask for on the fast path, added to the
        // largest written length, does not overflow.
        let worst = run_room(24 * below, below, 24).expect("below the limit");
        assert!(worst.checked_add(isize::MAX as usize + 9).is_some());
    }

    #[test]
    fn the_length_is_written_back_and_visible_through_as_bytes() {
        // Start with prior contents and no spare room, so the first items
        // take the growing path and later ones the in-place path.
        let mut buf = vec![0xaa];
        buf.shrink_to_fit();
        {
            let mut e = Encoder::new(&mut buf);
            e.u64(1).str("abc");
            assert_eq!(e.as_bytes(), &[0xaa, 0x01, 0x63, b'a', b'b', b'c']);
            e.bool(true).null().f64(1.5).raw(&[0x80]);
            assert_eq!(e.as_bytes().len(), 12);
        }
        assert_eq!(
            buf,
            [
                0xaa, 0x01, 0x63, b'a', b'b', b'c', 0xf5, 0xf6, 0xf9, 0x3e, 0x00, 0x80
            ]
        );
        // A temporary encoder per statement appends after what is there.
        Encoder::new(&mut buf).u64(500);
        assert_eq!(&buf[12..], &[0x19, 0x01, 0xf4]);
    }

    #[test]
    fn an_exactly_sized_buffer_never_grows() {
        // Every head width and string size, written into a buffer whose
        // capacity is exactly the encoded size: the capacity never changes
        // (a grown buffer would have reallocated) and the bytes match a
        // generously sized encoding.
        let args = [
            0u64,
            23,
            24,
            255,
            256,
            65_535,
            65_536,
            u32::MAX as u64,
            u64::MAX,
        ];
        for &arg in &args {
            let mut roomy = Vec::with_capacity(64);
            Encoder::new(&mut roomy).u64(arg);
            let mut exact = Vec::with_capacity(roomy.len());
            let cap = exact.capacity();
            Encoder::new(&mut exact).u64(arg);
            assert_eq!(exact, roomy, "head for {arg}");
            assert_eq!(exact.capacity(), cap, "head for {arg} grew the buffer");
        }
        for n in 0..70usize {
            let text = "x".repeat(n);
            let mut roomy = Vec::with_capacity(256);
            Encoder::new(&mut roomy).str(&text).bytes(text.as_bytes());
            let mut exact = Vec::with_capacity(roomy.len());
            let cap = exact.capacity();
            Encoder::new(&mut exact).str(&text).bytes(text.as_bytes());
            assert_eq!(exact, roomy, "strings of {n} bytes");
            assert_eq!(
                exact.capacity(),
                cap,
                "strings of {n} bytes grew the buffer"
            );
        }
    }

    #[test]
    fn every_item_at_every_fill_around_the_room_check() {
        // Each kind of item written after 0 to 20 bytes already in the
        // buffer, with capacity for exactly the prefix and the item, and one
        // byte less: the room checks (`len < capacity - 8` for a head,
        // `len + n < capacity - 8` for a string) take the in-place path or
        // the exact one at every distance from the end, including
        // capacities below 9 bytes. An exact fit never grows the buffer; the
        // bytes always match a roomy encoding.
        const LONG: &str = "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy";
        type Write = Box<dyn Fn(&mut Encoder<'_>)>;
        let items: Vec<(&str, Write)> = vec![
            (
                "u64 0",
                Box::new(|e| {
                    e.u64(0);
                }),
            ),
            (
                "u64 500",
                Box::new(|e| {
                    e.u64(500);
                }),
            ),
            (
                "u64 max",
                Box::new(|e| {
                    e.u64(u64::MAX);
                }),
            ),
            (
                "i64 min",
                Box::new(|e| {
                    e.i64(i64::MIN);
                }),
            ),
            (
                "empty text",
                Box::new(|e| {
                    e.str("");
                }),
            ),
            (
                "text 3",
                Box::new(|e| {
                    e.str("abc");
                }),
            ),
            (
                "text 24",
                Box::new(|e| {
                    e.str("abcdefghijklmnopqrstuvwx");
                }),
            ),
            (
                "text 40",
                Box::new(|e| {
                    e.str(LONG);
                }),
            ),
            (
                "bytes 9",
                Box::new(|e| {
                    e.bytes(&[7; 9]);
                }),
            ),
            (
                "bool",
                Box::new(|e| {
                    e.bool(true);
                }),
            ),
            (
                "null",
                Box::new(|e| {
                    e.null();
                }),
            ),
            (
                "f64 half",
                Box::new(|e| {
                    e.f64(1.5);
                }),
            ),
            (
                "f64 double",
                Box::new(|e| {
                    e.f64(1.1);
                }),
            ),
            (
                "raw 12",
                Box::new(|e| {
                    e.raw(&[0x4b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
                }),
            ),
            (
                "map and pair",
                Box::new(|e| {
                    e.map(1).u64(0).str("v");
                }),
            ),
        ];
        for (name, write) in &items {
            let mut roomy = Vec::with_capacity(128);
            write(&mut Encoder::new(&mut roomy));
            for prefix in 0..=20usize {
                for short in [0usize, 1] {
                    let cap = prefix + roomy.len() - short;
                    let mut buf = Vec::with_capacity(cap);
                    buf.extend(std::iter::repeat_n(0xaa, prefix));
                    let before = buf.capacity();
                    write(&mut Encoder::new(&mut buf));
                    assert_eq!(
                        &buf[..prefix],
                        &vec![0xaa; prefix][..],
                        "{name} after {prefix}"
                    );
                    assert_eq!(
                        &buf[prefix..],
                        &roomy[..],
                        "{name} after {prefix}, short {short}"
                    );
                    if short == 0 {
                        assert_eq!(
                            buf.capacity(),
                            before,
                            "{name} after {prefix} grew an exact buffer"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn strings_copy_exactly_in_place_at_every_length_and_offset() {
        // A warm buffer with room, so every string takes the in-place copy
        // (the short moves, the 33..=63 pair and the 64-byte loop with its
        // overlapping last step), at every destination offset modulo 16 and
        // from every source offset modulo 16, ending at the end of its
        // allocation (an over-read would read past it).
        let lengths = (0..=300).chain([511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4097]);
        for n in lengths {
            for shift in [0usize, 1, 7, 15] {
                let source: Vec<u8> = (0..n + shift).map(|i| (i * 131 + 7) as u8).collect();
                let payload = &source[shift..];
                let mut buf = Vec::with_capacity(8192);
                buf.extend(std::iter::repeat_n(0xaa, shift));
                let before = buf.as_ptr();
                Encoder::new(&mut buf).bytes(payload).u64(1);
                assert_eq!(buf.as_ptr(), before, "length {n}: the buffer grew");
                let head_len = match n {
                    0..24 => 1,
                    24..256 => 2,
                    _ => 3,
                };
                assert_eq!(buf.len(), shift + head_len + n + 1, "length {n}");
                assert!(buf[..shift].iter().all(|&b| b == 0xaa), "length {n}");
                assert_eq!(
                    &buf[shift + head_len..shift + head_len + n],
                    payload,
                    "length {n}"
                );
                assert_eq!(buf[buf.len() - 1], 0x01, "length {n}");
            }
        }
    }

    #[test]
    fn strings_of_every_short_length_copy_exactly() {
        // Covers each branch of the short-copy path and its edges, after a
        // non-empty prefix so the destination is not at the buffer start.
        let source: Vec<u8> = (0u8..=80).map(|i| i.wrapping_mul(37) | 1).collect();
        for n in 0..=70 {
            let payload = &source[3..3 + n];
            let mut buf = vec![0xaa];
            Encoder::new(&mut buf).bytes(payload).u64(1);
            let head_len = if n < 24 { 1 } else { 2 };
            assert_eq!(buf.len(), 1 + head_len + n + 1, "length {n}");
            assert_eq!(&buf[1 + head_len..1 + head_len + n], payload, "length {n}");
            assert_eq!(buf[0], 0xaa);
            assert_eq!(buf[buf.len() - 1], 0x01);
        }
    }

    fn hex(f: impl FnOnce(&mut Encoder<'_>)) -> String {
        let mut buf = Vec::new();
        f(&mut Encoder::new(&mut buf));
        buf.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn heads_use_the_shortest_argument_at_every_boundary() {
        let cases: &[(u64, &str)] = &[
            (0, "00"),
            (23, "17"),
            (24, "1818"),
            (255, "18ff"),
            (256, "190100"),
            (65535, "19ffff"),
            (65536, "1a00010000"),
            (u32::MAX as u64, "1affffffff"),
            (u32::MAX as u64 + 1, "1b0000000100000000"),
            (u64::MAX, "1bffffffffffffffff"),
        ];
        for &(v, want) in cases {
            assert_eq!(
                hex(|e| {
                    e.u64(v);
                }),
                want,
                "u64 {v}"
            );
        }
    }

    #[test]
    fn signed_integers_pick_major_zero_or_one() {
        assert_eq!(
            hex(|e| {
                e.i64(-1);
            }),
            "20"
        );
        assert_eq!(
            hex(|e| {
                e.i64(-24);
            }),
            "37"
        );
        assert_eq!(
            hex(|e| {
                e.i64(-25);
            }),
            "3818"
        );
        assert_eq!(
            hex(|e| {
                e.i64(i64::MIN);
            }),
            "3b7fffffffffffffff"
        );
        assert_eq!(
            hex(|e| {
                e.i64(i64::MAX);
            }),
            "1b7fffffffffffffff"
        );
        assert_eq!(
            hex(|e| {
                e.negative(u64::MAX);
            }),
            "3bffffffffffffffff"
        );
    }

    #[test]
    fn strings_containers_and_simples() {
        assert_eq!(
            hex(|e| {
                e.str("IETF");
            }),
            "6449455446"
        );
        assert_eq!(
            hex(|e| {
                e.bytes(&[1, 2, 3, 4]);
            }),
            "4401020304"
        );
        assert_eq!(
            hex(|e| {
                e.array(3).u64(1).u64(2).u64(3);
            }),
            "83010203"
        );
        assert_eq!(
            hex(|e| {
                e.map(1).str("a").bool(true);
            }),
            "a16161f5"
        );
        assert_eq!(
            hex(|e| {
                e.tag(1).u64(1363896240);
            }),
            "c11a514b67b0"
        );
        assert_eq!(
            hex(|e| {
                e.null().undefined().bool(false);
            }),
            "f6f7f4"
        );
        assert_eq!(
            hex(|e| {
                e.simple(16).simple(255);
            }),
            "f0f8ff"
        );
        assert_eq!(
            hex(|e| {
                e.raw(&[0x82, 0x01, 0x02]);
            }),
            "820102"
        );
    }

    #[test]
    fn floats_are_shortest_and_nan_is_canonical() {
        assert_eq!(
            hex(|e| {
                e.f64(0.0);
            }),
            "f90000"
        );
        assert_eq!(
            hex(|e| {
                e.f64(-0.0);
            }),
            "f98000"
        );
        assert_eq!(
            hex(|e| {
                e.f64(1.5);
            }),
            "f93e00"
        );
        assert_eq!(
            hex(|e| {
                e.f64(100000.0);
            }),
            "fa47c35000"
        );
        assert_eq!(
            hex(|e| {
                e.f64(1.1);
            }),
            "fb3ff199999999999a"
        );
        assert_eq!(
            hex(|e| {
                e.f64(f64::NAN);
            }),
            "f97e00"
        );
        assert_eq!(
            hex(|e| {
                e.f64(-f64::NAN);
            }),
            "f97e00"
        );
        assert_eq!(
            hex(|e| {
                e.f64(f64::NEG_INFINITY);
            }),
            "f9fc00"
        );
    }

    #[test]
    #[should_panic(expected = "simple value 24 has no CBOR encoding")]
    fn simple_24_has_no_encoding() {
        let mut buf = Vec::new();
        Encoder::new(&mut buf).simple(24);
    }
}
