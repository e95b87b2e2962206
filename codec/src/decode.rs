//! The borrowed pull decoder.
//!
//! [`Decoder`] reads one head at a time and hands out views into the input
//! (`&str`, `&[u8]`); it never allocates. It tracks the open containers in a
//! fixed inline stack of [`MAX_DEPTH`] frames, which is what lets it enforce
//! the structural rules (item counts, breaks, indefinite-string chunks) and,
//! in strict mode, map key order: each map frame remembers the byte range of
//! its previous key, so the order check is a slice comparison with no copy.
//!
//! Every check that can fail on a length happens right after the head is
//! read and before the payload is touched: a declared string length, element
//! count or pair count larger than the bytes that remain fails immediately,
//! as does a count that would take the item total past [`Limits::max_items`].

use std::mem::MaybeUninit;

use crate::error::{DecodeError, ErrorKind};
use crate::float::{CANONICAL_NAN_F16, Shortest, f16_to_f64, shortest};

/// The compile-time bound on nesting depth. [`Limits::max_depth`] is clamped
/// to it; it sizes the decoder's inline frame stack.
pub const MAX_DEPTH: u32 = 64;

/// Which inputs a [`Decoder`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only canonical CBOR (RFC 8949 §4.2.1): shortest heads, definite
    /// lengths, sorted unique map keys, shortest floats, canonical NaN and
    /// preferred bignums. Anything else is an error naming the rule.
    Strict,
    /// Any well-formed CBOR, including indefinite lengths, wide heads,
    /// unsorted or repeated map keys.
    Lenient,
}

/// Resource bounds enforced while decoding, before anything is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting of arrays, maps and tags (clamped to [`MAX_DEPTH`]).
    /// An item at the top level is at depth 0; its children at depth 1.
    pub max_depth: u32,
    /// Maximum number of items (every head except a break counts one; a
    /// container's declared children are counted when its head is read).
    pub max_items: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: MAX_DEPTH,
            max_items: 1 << 20,
        }
    }
}

/// One decoded head (or scalar item).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Token<'a> {
    /// Major type 0.
    Unsigned(u64),
    /// Major type 1; the value is `-1 - n`.
    Negative(u64),
    /// A definite byte string (also a chunk of an indefinite one).
    Bytes(&'a [u8]),
    /// A definite text string (also a chunk of an indefinite one).
    Text(&'a str),
    /// A definite array header with its element count.
    Array(u64),
    /// A definite map header with its pair count.
    Map(u64),
    /// A tag; exactly one item (its content) follows.
    Tag(u64),
    /// `true` / `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// `undefined`.
    Undefined,
    /// Any other simple value (0..=19 or 32..=255).
    Simple(u8),
    /// A float of any width, widened exactly to `f64`.
    Float(f64),
    /// Lenient only: start of a chunked byte string.
    IndefiniteBytes,
    /// Lenient only: start of a chunked text string.
    IndefiniteText,
    /// Lenient only: start of an array closed by [`Token::Break`].
    IndefiniteArray,
    /// Lenient only: start of a map closed by [`Token::Break`].
    IndefiniteMap,
    /// Lenient only: closes the innermost indefinite-length item.
    Break,
}

impl Token<'_> {
    /// A short human name for the token's type, used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Token::Unsigned(_) => "unsigned integer",
            Token::Negative(_) => "negative integer",
            Token::Bytes(_) => "byte string",
            Token::Text(_) => "text string",
            Token::Array(_) => "array",
            Token::Map(_) => "map",
            Token::Tag(_) => "tag",
            Token::Bool(_) => "boolean",
            Token::Null => "null",
            Token::Undefined => "undefined",
            Token::Simple(_) => "simple value",
            Token::Float(_) => "float",
            Token::IndefiniteBytes => "indefinite-length byte string",
            Token::IndefiniteText => "indefinite-length text string",
            Token::IndefiniteArray => "indefinite-length array",
            Token::IndefiniteMap => "indefinite-length map",
            Token::Break => "break",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameKind {
    Array,
    Map,
    Tag,
    /// Strict mode, tag 2 or 3 whose content has not been read yet.
    Bignum,
    IndefArray,
    IndefMap,
    IndefBytes,
    IndefText,
}

/// One open container.
#[derive(Clone, Copy, Debug)]
struct Frame {
    kind: FrameKind,
    /// Definite: items (map: keys + values) still to come.
    /// Indefinite: items read so far.
    remaining: u64,
    /// Map: where the pending key starts (right after the header or the
    /// previous value, since items are contiguous).
    mark: usize,
    /// Map: byte range of the previous key; empty when there is none yet.
    prev_start: usize,
    prev_end: usize,
}

/// A borrowed pull reader over one CBOR input.
///
/// Call [`Decoder::next`] (or a typed helper) repeatedly; containers arrive as
/// a header token followed by their children. After an error the decoder's
/// state is unspecified: stop using it.
#[derive(Clone)]
pub struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    strict: bool,
    max_depth: u32,
    max_items: u64,
    items: u64,
    depth: u32,
    /// `frames[..depth]` are initialised; the rest are never read. Left
    /// uninitialised so that creating a decoder does not write the stack.
    frames: [MaybeUninit<Frame>; MAX_DEPTH as usize],
}

impl std::fmt::Debug for Decoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("len", &self.input.len())
            .field("pos", &self.pos)
            .field("strict", &self.strict)
            .field("depth", &self.depth)
            .field("items", &self.items)
            .finish()
    }
}

impl<'a> Decoder<'a> {
    /// A decoder over `input`.
    #[inline]
    pub fn new(input: &'a [u8], mode: Mode, limits: Limits) -> Self {
        Self {
            input,
            pos: 0,
            strict: mode == Mode::Strict,
            max_depth: limits.max_depth.min(MAX_DEPTH),
            max_items: limits.max_items,
            items: 0,
            depth: 0,
            frames: [const { MaybeUninit::uninit() }; MAX_DEPTH as usize],
        }
    }

    /// A strict decoder with default limits.
    #[inline]
    pub fn strict(input: &'a [u8]) -> Self {
        Self::new(input, Mode::Strict, Limits::default())
    }

    /// A lenient decoder with default limits.
    #[inline]
    pub fn lenient(input: &'a [u8]) -> Self {
        Self::new(input, Mode::Lenient, Limits::default())
    }

    /// The mode this decoder enforces.
    pub fn mode(&self) -> Mode {
        if self.strict {
            Mode::Strict
        } else {
            Mode::Lenient
        }
    }

    /// Byte offset of the next head.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True when every byte has been consumed.
    #[inline]
    pub fn is_at_end(&self) -> bool {
        self.pos >= self.input.len()
    }

    /// Number of currently open arrays, maps and tags.
    #[inline]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Items read so far (as counted against [`Limits::max_items`]).
    #[inline]
    pub fn items_read(&self) -> u64 {
        self.items
    }

    /// The unread rest of the input.
    #[inline]
    pub fn remaining(&self) -> &'a [u8] {
        self.input.get(self.pos..).unwrap_or_default()
    }

    /// Decodes the next head without consuming it. Context rules (breaks,
    /// chunk types, key order, limits) are checked only by [`Decoder::next`].
    ///
    /// # Errors
    ///
    /// Any error of the head itself: malformed, truncated, or (strict)
    /// non-canonical.
    #[inline]
    pub fn peek(&self) -> Result<Token<'a>, DecodeError> {
        self.decode(self.pos).map(|(t, _)| t)
    }

    /// Reads the next token.
    ///
    /// # Errors
    ///
    /// Malformed or truncated input, a broken limit, or (strict) any
    /// non-canonical encoding; the error carries the offset and the rule.
    #[inline]
    #[allow(clippy::should_implement_trait)] // fallible, borrows from input: not an Iterator
    pub fn next(&mut self) -> Result<Token<'a>, DecodeError> {
        let start = self.pos;
        let (tok, end) = self.decode(start)?;
        self.advance(tok, start, end)?;
        Ok(tok)
    }

    /// Reads one item whose token `f` accepts; on a type mismatch nothing is
    /// consumed.
    #[inline]
    fn expect<T>(
        &mut self,
        expected: &'static str,
        f: impl FnOnce(Token<'a>) -> Option<Result<T, ErrorKind>>,
    ) -> Result<T, DecodeError> {
        let start = self.pos;
        let (tok, end) = self.decode(start)?;
        match f(tok) {
            Some(Ok(v)) => {
                self.advance(tok, start, end)?;
                Ok(v)
            }
            Some(Err(kind)) => Err(DecodeError::new(start, kind)),
            None if tok == Token::Break => Err(self.break_is_not_an_item(start, expected)),
            None => Err(DecodeError::new(
                start,
                ErrorKind::TypeMismatch {
                    expected,
                    found: tok.type_name(),
                },
            )),
        }
    }

    /// Reads an unsigned integer.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] when the next item is not major type 0
    /// (nothing is consumed), or any decoding error.
    #[inline]
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.expect("unsigned integer", |t| match t {
            Token::Unsigned(v) => Some(Ok(v)),
            _ => None,
        })
    }

    /// Reads an integer that fits `i64`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] for a non-integer,
    /// [`ErrorKind::IntegerOutOfRange`] for one outside `i64`.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.expect("integer", |t| match t {
            Token::Unsigned(v) => {
                Some(i64::try_from(v).map_err(|_| ErrorKind::IntegerOutOfRange { expected: "i64" }))
            }
            Token::Negative(n) => Some(
                i64::try_from(n)
                    .map(|n| -1 - n)
                    .map_err(|_| ErrorKind::IntegerOutOfRange { expected: "i64" }),
            ),
            _ => None,
        })
    }

    /// Reads a definite text string as a view into the input.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        self.expect("text string", |t| match t {
            Token::Text(s) => Some(Ok(s)),
            _ => None,
        })
    }

    /// Reads a definite byte string as a view into the input.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        self.expect("byte string", |t| match t {
            Token::Bytes(b) => Some(Ok(b)),
            _ => None,
        })
    }

    /// Reads a definite array header and returns its element count.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn array(&mut self) -> Result<u64, DecodeError> {
        self.expect("array", |t| match t {
            Token::Array(n) => Some(Ok(n)),
            _ => None,
        })
    }

    /// Reads a definite map header and returns its pair count.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn map(&mut self) -> Result<u64, DecodeError> {
        self.expect("map", |t| match t {
            Token::Map(n) => Some(Ok(n)),
            _ => None,
        })
    }

    /// Reads a tag number (its content is the next item).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn tag(&mut self) -> Result<u64, DecodeError> {
        self.expect("tag", |t| match t {
            Token::Tag(n) => Some(Ok(n)),
            _ => None,
        })
    }

    /// Reads `true` or `false`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        self.expect("boolean", |t| match t {
            Token::Bool(b) => Some(Ok(b)),
            _ => None,
        })
    }

    /// Reads `null`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn null(&mut self) -> Result<(), DecodeError> {
        self.expect("null", |t| match t {
            Token::Null => Some(Ok(())),
            _ => None,
        })
    }

    /// Reads a float of any width.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TypeMismatch`] or any decoding error.
    #[inline]
    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        self.expect("float", |t| match t {
            Token::Float(v) => Some(Ok(v)),
            _ => None,
        })
    }

    /// Skips one complete item (checking every rule of the mode on the way)
    /// and returns its encoded bytes.
    ///
    /// # Errors
    ///
    /// Any decoding error inside the item; [`ErrorKind::TypeMismatch`] if
    /// the next byte is a break rather than an item.
    pub fn skip(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let base = self.depth;
        let (tok, end) = self.decode(start)?;
        if tok == Token::Break {
            return Err(self.break_is_not_an_item(start, "an item"));
        }
        self.advance(tok, start, end)?;
        while self.depth > base {
            self.next()?;
        }
        Ok(&self.input[start..self.pos])
    }

    // ----- internals -----

    /// The error for a break where an item was asked for: a type mismatch
    /// where the break could legally close something, malformed elsewhere.
    fn break_is_not_an_item(&mut self, start: usize, expected: &'static str) -> DecodeError {
        let closes_something = self.depth > 0
            && matches!(
                self.top().kind,
                FrameKind::IndefArray
                    | FrameKind::IndefMap
                    | FrameKind::IndefBytes
                    | FrameKind::IndefText
            );
        let kind = if closes_something {
            ErrorKind::TypeMismatch {
                expected,
                found: "break",
            }
        } else {
            ErrorKind::UnexpectedBreak
        };
        DecodeError::new(start, kind)
    }

    #[inline]
    fn top(&mut self) -> &mut Frame {
        debug_assert!(self.depth > 0);
        let i = self.depth as usize - 1;
        // SAFETY: `frames[..depth]` are initialised: `push` writes a frame
        // before it increments `depth`, and nothing else increments it.
        unsafe { self.frames[i].assume_init_mut() }
    }

    #[inline]
    fn push(&mut self, frame: Frame) {
        // `open` checked depth < max_depth <= MAX_DEPTH.
        self.frames[self.depth as usize] = MaybeUninit::new(frame);
        self.depth += 1;
    }

    /// Reads `N` bytes of argument after the initial byte at `at`.
    #[inline(always)]
    fn arg<const N: usize>(&self, at: usize) -> Result<&'a [u8; N], DecodeError> {
        let rest = self.input.get(at + 1..).unwrap_or_default();
        rest.first_chunk::<N>().ok_or_else(|| {
            DecodeError::new(
                at,
                ErrorKind::Truncated {
                    needed: N as u64 - rest.len() as u64,
                    available: rest.len() as u64,
                },
            )
        })
    }

    /// Decodes the head (and any string payload) at `at` without touching
    /// decoder state. Returns the token and the offset just past it.
    #[inline(always)]
    fn decode(&self, at: usize) -> Result<(Token<'a>, usize), DecodeError> {
        let input = self.input;
        let Some(&initial) = input.get(at) else {
            let kind = if self.depth == 0 {
                ErrorKind::EndOfInput
            } else {
                ErrorKind::Truncated {
                    needed: 1,
                    available: 0,
                }
            };
            return Err(DecodeError::new(at, kind));
        };
        let major = initial >> 5;
        let ai = initial & 0x1f;
        let err = |kind| Err(DecodeError::new(at, kind));

        let (arg, end) = match ai {
            0..=23 => (u64::from(ai), at + 1),
            24 => (u64::from(self.arg::<1>(at)?[0]), at + 2),
            25 => (u64::from(u16::from_be_bytes(*self.arg::<2>(at)?)), at + 3),
            26 => (u64::from(u32::from_be_bytes(*self.arg::<4>(at)?)), at + 5),
            27 => (u64::from_be_bytes(*self.arg::<8>(at)?), at + 9),
            28..=30 => return err(ErrorKind::ReservedAdditionalInfo { initial }),
            _ => {
                // ai == 31
                let tok = match major {
                    2 => Token::IndefiniteBytes,
                    3 => Token::IndefiniteText,
                    4 => Token::IndefiniteArray,
                    5 => Token::IndefiniteMap,
                    7 => return Ok((Token::Break, at + 1)),
                    _ => return err(ErrorKind::IndefiniteNotAllowedHere { initial }),
                };
                if self.strict {
                    return err(ErrorKind::IndefiniteLength { initial });
                }
                return Ok((tok, at + 1));
            }
        };

        if major == 7 {
            return self.decode_simple(at, ai, arg, end);
        }
        if self.strict && ai >= 24 {
            let shortest_ok = match ai {
                24 => arg >= 24,
                25 => arg > 0xff,
                26 => arg > 0xffff,
                _ => arg > 0xffff_ffff,
            };
            if !shortest_ok {
                return err(ErrorKind::NonShortestHead { major, value: arg });
            }
        }
        let available = (input.len() - end) as u64;
        let tok = match major {
            0 => Token::Unsigned(arg),
            1 => Token::Negative(arg),
            2 | 3 => {
                if arg > available {
                    return err(ErrorKind::LengthExceedsInput {
                        declared: arg,
                        available,
                    });
                }
                let stop = end + arg as usize;
                let payload = &input[end..stop];
                let tok = if major == 2 {
                    Token::Bytes(payload)
                } else {
                    match utf8(payload) {
                        Ok(s) => Token::Text(s),
                        Err(valid_up_to) => {
                            return Err(DecodeError::new(
                                end + valid_up_to,
                                ErrorKind::InvalidUtf8,
                            ));
                        }
                    }
                };
                return Ok((tok, stop));
            }
            4 => {
                if arg > available {
                    return err(ErrorKind::LengthExceedsInput {
                        declared: arg,
                        available,
                    });
                }
                Token::Array(arg)
            }
            5 => {
                if arg > available / 2 {
                    return err(ErrorKind::LengthExceedsInput {
                        declared: arg,
                        available,
                    });
                }
                Token::Map(arg)
            }
            _ => Token::Tag(arg),
        };
        Ok((tok, end))
    }

    #[inline]
    fn decode_simple(
        &self,
        at: usize,
        ai: u8,
        arg: u64,
        end: usize,
    ) -> Result<(Token<'a>, usize), DecodeError> {
        let err = |kind| Err(DecodeError::new(at, kind));
        let tok = match ai {
            20 => Token::Bool(false),
            21 => Token::Bool(true),
            22 => Token::Null,
            23 => Token::Undefined,
            24 => {
                let v = arg as u8;
                if v < 32 {
                    return err(ErrorKind::InvalidTwoByteSimple { value: v });
                }
                Token::Simple(v)
            }
            25 => {
                let h = arg as u16;
                let v = f16_to_f64(h);
                if self.strict && v.is_nan() && h != CANONICAL_NAN_F16 {
                    return err(ErrorKind::NonCanonicalNan);
                }
                Token::Float(v)
            }
            26 => {
                let v = f64::from(f32::from_bits(arg as u32));
                if self.strict {
                    if v.is_nan() {
                        return err(ErrorKind::NonCanonicalNan);
                    }
                    if let Shortest::Half(_) = shortest(v) {
                        return err(ErrorKind::NonShortestFloat {
                            width: 4,
                            shortest: 2,
                        });
                    }
                }
                Token::Float(v)
            }
            27 => {
                let v = f64::from_bits(arg);
                if self.strict {
                    match shortest(v) {
                        _ if v.is_nan() => return err(ErrorKind::NonCanonicalNan),
                        Shortest::Half(_) => {
                            return err(ErrorKind::NonShortestFloat {
                                width: 8,
                                shortest: 2,
                            });
                        }
                        Shortest::Single(_) => {
                            return err(ErrorKind::NonShortestFloat {
                                width: 8,
                                shortest: 4,
                            });
                        }
                        Shortest::Double(_) => {}
                    }
                }
                Token::Float(v)
            }
            _ => Token::Simple(ai), // 0..=19
        };
        Ok((tok, end))
    }

    /// Applies the context rules for `tok` (read from `start..end`) and
    /// updates the frame stack.
    #[inline(always)]
    fn advance(&mut self, tok: Token<'a>, start: usize, end: usize) -> Result<(), DecodeError> {
        let err = |kind| Err(DecodeError::new(start, kind));
        if let Token::Break = tok {
            if self.depth == 0 {
                return err(ErrorKind::UnexpectedBreak);
            }
            let f = self.top();
            match f.kind {
                FrameKind::IndefArray | FrameKind::IndefBytes | FrameKind::IndefText => {}
                FrameKind::IndefMap => {
                    if !f.remaining.is_multiple_of(2) {
                        return err(ErrorKind::MapMissingValue);
                    }
                }
                _ => return err(ErrorKind::UnexpectedBreak),
            }
            self.depth -= 1;
            self.pos = end;
            return self.finish_item(end);
        }

        self.items += 1;
        if self.items > self.max_items {
            return err(ErrorKind::TooManyItems {
                limit: self.max_items,
            });
        }
        if self.depth > 0 {
            let initial = self.input[start];
            let f = self.top();
            match f.kind {
                FrameKind::IndefBytes if !matches!(tok, Token::Bytes(_)) => {
                    return err(ErrorKind::InvalidChunk { initial });
                }
                FrameKind::IndefText if !matches!(tok, Token::Text(_)) => {
                    return err(ErrorKind::InvalidChunk { initial });
                }
                FrameKind::Bignum => {
                    match tok {
                        Token::Bytes(b) if b.len() > 8 && b[0] != 0 => {}
                        _ => return err(ErrorKind::NonCanonicalBignum),
                    }
                    f.kind = FrameKind::Tag;
                }
                _ => {}
            }
        }
        match tok {
            Token::Array(n) => self.open(start, end, FrameKind::Array, n),
            // `decode` bounded n by half the remaining input, so 2n fits.
            Token::Map(n) => self.open(start, end, FrameKind::Map, n * 2),
            Token::Tag(t) => {
                let kind = if self.strict && (t == 2 || t == 3) {
                    FrameKind::Bignum
                } else {
                    FrameKind::Tag
                };
                self.open(start, end, kind, 1)
            }
            Token::IndefiniteArray => self.open(start, end, FrameKind::IndefArray, 0),
            Token::IndefiniteMap => self.open(start, end, FrameKind::IndefMap, 0),
            Token::IndefiniteBytes => self.open(start, end, FrameKind::IndefBytes, 0),
            Token::IndefiniteText => self.open(start, end, FrameKind::IndefText, 0),
            _ => {
                self.pos = end;
                self.finish_item(end)
            }
        }
    }

    /// Opens a container whose head spans `start..end` and which declares
    /// `children` items (0 for indefinite kinds).
    #[inline]
    fn open(
        &mut self,
        start: usize,
        end: usize,
        kind: FrameKind,
        children: u64,
    ) -> Result<(), DecodeError> {
        if self.depth >= self.max_depth {
            return Err(DecodeError::new(
                start,
                ErrorKind::DepthExceeded {
                    limit: self.max_depth,
                },
            ));
        }
        if self.items.saturating_add(children) > self.max_items {
            return Err(DecodeError::new(
                start,
                ErrorKind::TooManyItems {
                    limit: self.max_items,
                },
            ));
        }
        self.pos = end;
        let indefinite = matches!(
            kind,
            FrameKind::IndefArray
                | FrameKind::IndefMap
                | FrameKind::IndefBytes
                | FrameKind::IndefText
        );
        if !indefinite && children == 0 {
            return self.finish_item(end);
        }
        self.push(Frame {
            kind,
            remaining: children,
            mark: end,
            prev_start: 0,
            prev_end: 0,
        });
        Ok(())
    }

    /// Records that an item ending at `end` is complete, closing every
    /// definite container it completes in turn.
    #[inline]
    fn finish_item(&mut self, end: usize) -> Result<(), DecodeError> {
        let strict = self.strict;
        let input = self.input;
        while self.depth > 0 {
            let f = self.top();
            match f.kind {
                FrameKind::Array => {
                    f.remaining -= 1;
                    if f.remaining != 0 {
                        return Ok(());
                    }
                }
                FrameKind::Map => {
                    let was_key = f.remaining.is_multiple_of(2);
                    f.remaining -= 1;
                    if was_key {
                        if strict {
                            let key = &input[f.mark..end];
                            if f.prev_end > f.prev_start {
                                let prev = &input[f.prev_start..f.prev_end];
                                match key_order(prev, key) {
                                    std::cmp::Ordering::Less => {}
                                    std::cmp::Ordering::Equal => {
                                        return Err(DecodeError::new(
                                            f.mark,
                                            ErrorKind::DuplicateKey {
                                                previous: f.prev_start,
                                            },
                                        ));
                                    }
                                    std::cmp::Ordering::Greater => {
                                        return Err(DecodeError::new(
                                            f.mark,
                                            ErrorKind::UnsortedKey {
                                                previous: f.prev_start,
                                            },
                                        ));
                                    }
                                }
                            }
                            f.prev_start = f.mark;
                            f.prev_end = end;
                        }
                        // A value always follows a key.
                        return Ok(());
                    }
                    f.mark = end;
                    if f.remaining != 0 {
                        return Ok(());
                    }
                }
                FrameKind::Tag | FrameKind::Bignum => {}
                FrameKind::IndefArray | FrameKind::IndefMap => {
                    f.remaining += 1;
                    return Ok(());
                }
                FrameKind::IndefBytes | FrameKind::IndefText => return Ok(()),
            }
            self.depth -= 1;
        }
        Ok(())
    }
}

/// Bytewise lexicographic order, as `<[u8]>::cmp`, with an inline loop for
/// the short slices map keys usually are (a `memcmp` call costs more than
/// comparing a few bytes).
#[inline]
pub(crate) fn key_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    if a.len() <= 16 && b.len() <= 16 {
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        return a.len().cmp(&b.len());
    }
    a.cmp(b)
}

/// Validates UTF-8; returns the valid prefix length on failure.
///
/// Short strings (map keys, ids, names) are usually ASCII, and checking that
/// inline is cheaper than any call. Longer text goes to `simdutf8`, which
/// validates with SIMD instructions chosen at run time (falling back to a
/// scalar validator) and, unlike an ASCII fast path, keeps its speed on text
/// with a few multi-byte characters. Only on failure is the input scanned
/// again, by the standard library, for the offset of the first bad byte.
#[inline]
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, usize> {
    if bytes.len() <= 32 && bytes.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    match simdutf8::basic::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(_) => std::str::from_utf8(bytes).map_err(|e| e.valid_up_to()),
    }
}

/// Checks that `input` holds exactly one well-formed item that obeys `mode`
/// and `limits`.
///
/// In [`Mode::Strict`] valid input is checked by a dedicated walker (one
/// loop over the bytes, no tokens) that enforces every rule the strict
/// [`Decoder`] does; anything it does not accept is re-read by the decoder,
/// so the error is exactly the decoder's.
///
/// # Errors
///
/// The first rule broken, with its offset; [`ErrorKind::TrailingBytes`] if
/// bytes follow the item.
pub fn validate(input: &[u8], mode: Mode, limits: Limits) -> Result<(), DecodeError> {
    if mode == Mode::Strict && crate::walk::strict(input, limits, false).is_some() {
        return Ok(());
    }
    validate_tokenwise(input, mode, limits)
}

/// [`validate`] through the token decoder only: one [`Decoder::skip`] and a
/// check for trailing bytes. The reference the fast strict walker is tested
/// (and benchmarked) against.
///
/// # Errors
///
/// As [`validate`].
#[doc(hidden)]
pub fn validate_tokenwise(input: &[u8], mode: Mode, limits: Limits) -> Result<(), DecodeError> {
    let mut d = Decoder::new(input, mode, limits);
    d.skip()?;
    if !d.is_at_end() {
        return Err(DecodeError::new(
            d.position(),
            ErrorKind::TrailingBytes {
                count: (input.len() - d.position()) as u64,
            },
        ));
    }
    Ok(())
}

/// Checks that `input` is a CBOR sequence (RFC 8742: zero or more items one
/// after another) whose items obey `mode`, and returns how many top-level
/// items it holds. `limits` apply to the whole input, as they do for one
/// [`Decoder`] reading it to the end (the item count is cumulative).
///
/// # Errors
///
/// The first rule broken, with its offset, exactly as a [`Decoder`] reading
/// the input item by item reports it.
pub fn validate_sequence(input: &[u8], mode: Mode, limits: Limits) -> Result<u64, DecodeError> {
    if mode == Mode::Strict
        && let Some(n) = crate::walk::strict(input, limits, true)
    {
        return Ok(n);
    }
    validate_sequence_tokenwise(input, mode, limits)
}

/// [`validate_sequence`] through the token decoder only.
///
/// # Errors
///
/// As [`validate_sequence`].
#[doc(hidden)]
pub fn validate_sequence_tokenwise(
    input: &[u8],
    mode: Mode,
    limits: Limits,
) -> Result<u64, DecodeError> {
    let mut d = Decoder::new(input, mode, limits);
    let mut n = 0u64;
    while !d.is_at_end() {
        d.skip()?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_fast_path_agrees_with_std_around_block_edges() {
        for len in [0usize, 1, 63, 64, 65, 127, 128, 200] {
            let ascii = "a".repeat(len);
            assert_eq!(utf8(ascii.as_bytes()), Ok(ascii.as_str()));
            for at in [0, len.saturating_sub(1), len] {
                // A multi-byte char placed across a block edge.
                let mut s = ascii.clone();
                s.insert_str(at.min(s.len()), "é€😀");
                assert_eq!(utf8(s.as_bytes()), Ok(s.as_str()));
                // An invalid byte at `at`.
                let mut b = ascii.clone().into_bytes();
                b.insert(at.min(b.len()), 0xff);
                let std_says = std::str::from_utf8(&b).map_err(|e| e.valid_up_to());
                assert_eq!(
                    utf8(&b).map(str::len),
                    std_says.map(str::len),
                    "len {len} at {at}"
                );
                // A truncated sequence at the end.
                let mut t = ascii.clone().into_bytes();
                t.extend_from_slice(&[0xe2, 0x82]);
                assert_eq!(utf8(&t), Err(len));
            }
        }
    }

    #[test]
    fn typed_reads_distinguish_a_stray_break_from_a_closing_one() {
        let mut d = Decoder::lenient(&[0xff]);
        assert_eq!(
            d.u64(),
            Err(DecodeError::new(0, ErrorKind::UnexpectedBreak))
        );
        let mut d = Decoder::lenient(&[0x9f, 0xff]);
        d.next().unwrap();
        assert_eq!(
            d.u64(),
            Err(DecodeError::new(
                1,
                ErrorKind::TypeMismatch {
                    expected: "unsigned integer",
                    found: "break"
                }
            ))
        );
        assert_eq!(d.position(), 1, "nothing consumed");
        assert_eq!(d.next(), Ok(Token::Break));
    }

    #[test]
    fn key_order_matches_slice_order() {
        let keys: &[&[u8]] = &[
            b"",
            b"a",
            b"ab",
            b"b",
            b"\x00",
            b"\xff",
            b"0123456789abcdef",
            b"0123456789abcdeg",
            b"0123456789abcdef0",
            b"0123456789abcdef",
            b"x0123456789abcdefghij",
            b"x0123456789abcdefghik",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(key_order(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn a_fresh_decoder_reports_its_limits_clamped() {
        let d = Decoder::new(
            &[],
            Mode::Strict,
            Limits {
                max_depth: 1000,
                max_items: 5,
            },
        );
        assert_eq!(d.max_depth, MAX_DEPTH);
        assert_eq!(d.max_items, 5);
        assert!(d.is_at_end());
        assert_eq!(d.depth(), 0);
        assert_eq!(d.mode(), Mode::Strict);
        // docs/codec.md states the size; keep it honest.
        assert!(
            std::mem::size_of::<Decoder<'_>>() <= 2700,
            "{}",
            std::mem::size_of::<Decoder<'_>>()
        );
    }
}
