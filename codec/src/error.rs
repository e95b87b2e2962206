//! Decode errors: where, what, which rule, and what to do next.

use std::fmt;

/// Why decoding stopped. Each kind names the RFC 8949 rule it enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    // ----- malformed (rejected in every mode) -----
    /// The input ended before the item did.
    Truncated {
        /// Bytes the item still needed.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// `next` was called with no input left at the top level.
    EndOfInput,
    /// A declared string length or element count cannot fit in the remaining
    /// input (each element needs at least one byte).
    LengthExceedsInput {
        /// The length the head declared (bytes, items, or pairs).
        declared: u64,
        /// Bytes left after the head.
        available: u64,
    },
    /// Additional information 28, 29 or 30, which RFC 8949 §3 reserves.
    ReservedAdditionalInfo {
        /// The initial byte.
        initial: u8,
    },
    /// Indefinite length (additional information 31) on major type 0, 1 or 6.
    IndefiniteNotAllowedHere {
        /// The initial byte.
        initial: u8,
    },
    /// A two-byte simple value below 32 (`f8 00`..`f8 1f`); RFC 8949 §3.3.
    InvalidTwoByteSimple {
        /// The value byte.
        value: u8,
    },
    /// A break byte (`ff`) where no indefinite-length item is open.
    UnexpectedBreak,
    /// An indefinite-length map closed after a key with no value.
    MapMissingValue,
    /// A chunk of an indefinite-length string was not a definite string of
    /// the same major type (RFC 8949 §3.2.3).
    InvalidChunk {
        /// The chunk's initial byte.
        initial: u8,
    },
    /// A text string is not valid UTF-8 (RFC 8949 §3.1, major type 3).
    InvalidUtf8,
    // ----- non-canonical (rejected in strict mode only) -----
    /// An argument was not encoded in the shortest form (§4.2.1).
    NonShortestHead {
        /// The major type.
        major: u8,
        /// The argument value.
        value: u64,
    },
    /// An indefinite-length string, array or map (§4.2.1: definite only).
    IndefiniteLength {
        /// The initial byte.
        initial: u8,
    },
    /// A float written wider than the shortest exact width (§4.2.1).
    NonShortestFloat {
        /// Bytes used for the float (4 or 8).
        width: u8,
        /// Bytes the shortest exact encoding needs (2 or 4).
        shortest: u8,
    },
    /// A NaN other than `f9 7e00`.
    NonCanonicalNan,
    /// A map key not greater than the previous key in bytewise order (§4.2.1).
    UnsortedKey {
        /// Offset of the previous key.
        previous: usize,
    },
    /// A map key equal to an earlier key (§5.6: maps must not repeat keys).
    DuplicateKey {
        /// Offset of the earlier equal key.
        previous: usize,
    },
    /// A bignum (tag 2/3) whose content is not a byte string without leading
    /// zeros that is too large for major type 0/1 (§3.4.3 preferred form).
    NonCanonicalBignum,
    // ----- limits -----
    /// Nesting deeper than the configured limit.
    DepthExceeded {
        /// The limit in effect.
        limit: u32,
    },
    /// More items than the configured limit (counted before reading them).
    TooManyItems {
        /// The limit in effect.
        limit: u64,
    },
    // ----- shape -----
    /// Bytes remain after the single item `validate` expected.
    TrailingBytes {
        /// How many bytes remain.
        count: u64,
    },
    /// A typed read found a different kind of item.
    TypeMismatch {
        /// What the caller asked for.
        expected: &'static str,
        /// What the input holds.
        found: &'static str,
    },
    /// An integer does not fit the requested Rust type.
    IntegerOutOfRange {
        /// The requested type.
        expected: &'static str,
    },
}

impl ErrorKind {
    /// True for errors that only strict mode raises: the input is well-formed
    /// CBOR but not in canonical form.
    pub fn is_non_canonical(&self) -> bool {
        matches!(
            self,
            ErrorKind::NonShortestHead { .. }
                | ErrorKind::IndefiniteLength { .. }
                | ErrorKind::NonShortestFloat { .. }
                | ErrorKind::NonCanonicalNan
                | ErrorKind::UnsortedKey { .. }
                | ErrorKind::DuplicateKey { .. }
                | ErrorKind::NonCanonicalBignum
        )
    }

    /// True for input that is not well-formed CBOR at all.
    pub fn is_malformed(&self) -> bool {
        matches!(
            self,
            ErrorKind::Truncated { .. }
                | ErrorKind::LengthExceedsInput { .. }
                | ErrorKind::ReservedAdditionalInfo { .. }
                | ErrorKind::IndefiniteNotAllowedHere { .. }
                | ErrorKind::InvalidTwoByteSimple { .. }
                | ErrorKind::UnexpectedBreak
                | ErrorKind::MapMissingValue
                | ErrorKind::InvalidChunk { .. }
                | ErrorKind::InvalidUtf8
        )
    }

    /// The rule that was broken, citing RFC 8949 where it applies.
    pub fn rule(&self) -> &'static str {
        match self {
            ErrorKind::Truncated { .. } => "an item must be complete (RFC 8949 §3)",
            ErrorKind::EndOfInput => "there must be an item to read",
            ErrorKind::LengthExceedsInput { .. } => {
                "a declared length must fit in the remaining input (RFC 8949 §3, checked before reading)"
            }
            ErrorKind::ReservedAdditionalInfo { .. } => {
                "additional information 28-30 is reserved (RFC 8949 §3)"
            }
            ErrorKind::IndefiniteNotAllowedHere { .. } => {
                "major types 0, 1 and 6 have no indefinite length (RFC 8949 §3.2.4)"
            }
            ErrorKind::InvalidTwoByteSimple { .. } => {
                "simple values below 32 must use the one-byte form (RFC 8949 §3.3)"
            }
            ErrorKind::UnexpectedBreak => {
                "a break may only close an open indefinite-length item (RFC 8949 §3.2.1)"
            }
            ErrorKind::MapMissingValue => "every map key needs a value (RFC 8949 §3.2.2)",
            ErrorKind::InvalidChunk { .. } => {
                "indefinite-length string chunks must be definite strings of the same type (RFC 8949 §3.2.3)"
            }
            ErrorKind::InvalidUtf8 => "text strings must be valid UTF-8 (RFC 8949 §3.1)",
            ErrorKind::NonShortestHead { .. } => {
                "arguments must use the shortest encoding (RFC 8949 §4.2.1)"
            }
            ErrorKind::IndefiniteLength { .. } => {
                "canonical CBOR uses definite lengths only (RFC 8949 §4.2.1)"
            }
            ErrorKind::NonShortestFloat { .. } => {
                "floats must use the shortest width that keeps the value (RFC 8949 §4.2.1)"
            }
            ErrorKind::NonCanonicalNan => "NaN must be encoded as f9 7e00 (RFC 8949 §4.2.2)",
            ErrorKind::UnsortedKey { .. } => {
                "map keys must be sorted by the bytewise order of their encodings (RFC 8949 §4.2.1)"
            }
            ErrorKind::DuplicateKey { .. } => "map keys must be unique (RFC 8949 §5.6)",
            ErrorKind::NonCanonicalBignum => {
                "bignums must have no leading zeros and not fit major type 0/1 (RFC 8949 §3.4.3)"
            }
            ErrorKind::DepthExceeded { .. } => {
                "nesting depth must stay within the configured limit"
            }
            ErrorKind::TooManyItems { .. } => "item count must stay within the configured limit",
            ErrorKind::TrailingBytes { .. } => "the input must hold exactly one item",
            ErrorKind::TypeMismatch { .. } => "the item must have the type the reader expects",
            ErrorKind::IntegerOutOfRange { .. } => "the integer must fit the requested type",
        }
    }

    pub(crate) fn next_action(&self) -> &'static str {
        if self.is_non_canonical() {
            "re-encode the value with smith-codec's encoder, or decode it in lenient mode"
        } else if self.is_malformed() || matches!(self, ErrorKind::EndOfInput) {
            "the bytes are corrupt or truncated; recover them from their source"
        } else if matches!(
            self,
            ErrorKind::DepthExceeded { .. } | ErrorKind::TooManyItems { .. }
        ) {
            "raise the decoder's Limits if the input is trusted, otherwise reject it"
        } else {
            "check that the reader matches the schema that wrote the bytes"
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::Truncated { needed, available } => {
                write!(
                    f,
                    "input ends inside an item ({needed} more bytes needed, {available} left)"
                )
            }
            ErrorKind::EndOfInput => write!(f, "no item left to read"),
            ErrorKind::LengthExceedsInput {
                declared,
                available,
            } => write!(
                f,
                "declared length {declared} cannot fit in the {available} bytes left"
            ),
            ErrorKind::ReservedAdditionalInfo { initial } => {
                write!(
                    f,
                    "initial byte {initial:#04x} uses reserved additional information"
                )
            }
            ErrorKind::IndefiniteNotAllowedHere { initial } => {
                write!(
                    f,
                    "initial byte {initial:#04x} asks for an indefinite length where none exists"
                )
            }
            ErrorKind::InvalidTwoByteSimple { value } => {
                write!(f, "two-byte simple value f8 {value:02x}")
            }
            ErrorKind::UnexpectedBreak => {
                write!(f, "break byte 0xff outside an indefinite-length item")
            }
            ErrorKind::MapMissingValue => write!(f, "indefinite-length map ended after a key"),
            ErrorKind::InvalidChunk { initial } => {
                write!(
                    f,
                    "indefinite-length string chunk has initial byte {initial:#04x}"
                )
            }
            ErrorKind::InvalidUtf8 => write!(f, "text string is not valid UTF-8"),
            ErrorKind::NonShortestHead { major, value } => {
                write!(
                    f,
                    "major type {major} argument {value} is not in its shortest form"
                )
            }
            ErrorKind::IndefiniteLength { initial } => {
                write!(f, "indefinite-length item (initial byte {initial:#04x})")
            }
            ErrorKind::NonShortestFloat { width, shortest } => write!(
                f,
                "{width}-byte float whose value fits exactly in {shortest} bytes"
            ),
            ErrorKind::NonCanonicalNan => write!(f, "NaN with a non-canonical encoding"),
            ErrorKind::UnsortedKey { previous } => {
                write!(
                    f,
                    "map key sorts before the previous key at byte {previous}"
                )
            }
            ErrorKind::DuplicateKey { previous } => {
                write!(f, "map key repeats the key at byte {previous}")
            }
            ErrorKind::NonCanonicalBignum => write!(f, "bignum not in preferred form"),
            ErrorKind::DepthExceeded { limit } => write!(f, "nesting deeper than {limit}"),
            ErrorKind::TooManyItems { limit } => write!(f, "more than {limit} items"),
            ErrorKind::TrailingBytes { count } => write!(f, "{count} bytes after the item"),
            ErrorKind::TypeMismatch { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ErrorKind::IntegerOutOfRange { expected } => {
                write!(f, "integer does not fit in {expected}")
            }
        }
    }
}

/// A decoding failure at a byte offset of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    offset: usize,
    kind: ErrorKind,
}

impl DecodeError {
    /// Creates an error at `offset`.
    pub fn new(offset: usize, kind: ErrorKind) -> Self {
        Self { offset, kind }
    }

    /// Byte offset in the input where the offending item (or byte) starts.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CBOR decode error at byte {}: {}; rule: {}; next: {}",
            self.offset,
            self.kind,
            self.kind.rule(),
            self.kind.next_action()
        )
    }
}

impl std::error::Error for DecodeError {}
