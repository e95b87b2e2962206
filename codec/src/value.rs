//! An owned CBOR value for generic data (JSON bridge, tests, tools).
//!
//! Hot paths should use [`crate::Encoder`] and [`crate::Decoder`] directly;
//! `Value` is for data whose shape is not known at compile time. Encoding a
//! `Value` is always canonical: map keys are sorted by the bytewise order of
//! their encodings whatever order they were inserted in.

use std::fmt;

use crate::decode::{Decoder, Limits, Mode, Token};
use crate::encode::Encoder;
use crate::error::{DecodeError, ErrorKind};

/// An owned CBOR data item.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Major type 0.
    Unsigned(u64),
    /// Major type 1; the value is `-1 - n`.
    Negative(u64),
    /// A byte string.
    Bytes(Vec<u8>),
    /// A text string.
    Text(String),
    /// An array.
    Array(Vec<Value>),
    /// A map as (key, value) pairs in any order; encoding sorts them.
    Map(Vec<(Value, Value)>),
    /// A tag and its content.
    Tag(u64, Box<Value>),
    /// `true` / `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// `undefined`.
    Undefined,
    /// A simple value (0..=19 or 32..=255).
    Simple(u8),
    /// A float (written in its shortest exact width).
    Float(f64),
}

/// Why a [`Value`] could not be encoded canonically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// Two keys of one map encode to the same bytes.
    DuplicateKey {
        /// The key's canonical encoding.
        key: Vec<u8>,
    },
    /// A simple value in 24..=31, which has no encoding.
    InvalidSimple {
        /// The value.
        value: u8,
    },
    /// A bignum (tag 2 or 3) whose content is not a byte string.
    NonCanonicalBignum {
        /// The tag (2 or 3).
        tag: u64,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::DuplicateKey { key } => {
                write!(f, "cannot encode map: key ")?;
                for b in key {
                    write!(f, "{b:02x}")?;
                }
                write!(
                    f,
                    " (hex CBOR) occurs twice; canonical CBOR maps have unique keys (RFC 8949 §5.6); \
                     remove or merge the duplicate before encoding"
                )
            }
            EncodeError::InvalidSimple { value } => write!(
                f,
                "cannot encode simple value {value}: RFC 8949 §3.3 gives 24..=31 no encoding; \
                 use a value in 0..=19 or 32..=255"
            ),
            EncodeError::NonCanonicalBignum { tag } => write!(
                f,
                "cannot encode tag {tag} bignum: its content must be a byte string (RFC 8949 §3.4.3); \
                 put the big-endian magnitude in a Value::Bytes"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

impl Value {
    /// A text value.
    pub fn text(s: impl Into<String>) -> Self {
        Value::Text(s.into())
    }

    /// An integer value from `i64`.
    pub fn int(v: i64) -> Self {
        if v >= 0 {
            Value::Unsigned(v as u64)
        } else {
            Value::Negative(!(v as u64))
        }
    }

    /// Appends the canonical encoding of `self` to `out`.
    ///
    /// # Errors
    ///
    /// [`EncodeError::DuplicateKey`] when a map has two keys with equal
    /// encodings; [`EncodeError::InvalidSimple`] for simple values 24..=31;
    /// [`EncodeError::NonCanonicalBignum`] for a tag 2/3 whose content is not
    /// a byte string. Bignums are written in preferred form (leading zeros
    /// dropped; values that fit 64 bits as plain integers), so whatever
    /// `encode` writes, strict decoding accepts.
    /// On error `out` may hold a partial item.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Value::Unsigned(v) => {
                Encoder::new(out).u64(*v);
            }
            Value::Negative(n) => {
                Encoder::new(out).negative(*n);
            }
            Value::Bytes(b) => {
                Encoder::new(out).bytes(b);
            }
            Value::Text(s) => {
                Encoder::new(out).str(s);
            }
            Value::Array(items) => {
                Encoder::new(out).array(items.len() as u64);
                for item in items {
                    item.encode(out)?;
                }
            }
            Value::Map(pairs) => {
                let mut keyed = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let mut kb = Vec::new();
                    k.encode(&mut kb)?;
                    keyed.push((kb, v));
                }
                keyed.sort_by(|a, b| a.0.cmp(&b.0));
                if let Some(w) = keyed.windows(2).find(|w| w[0].0 == w[1].0) {
                    return Err(EncodeError::DuplicateKey {
                        key: w[0].0.clone(),
                    });
                }
                Encoder::new(out).map(keyed.len() as u64);
                for (kb, v) in keyed {
                    out.extend_from_slice(&kb);
                    v.encode(out)?;
                }
            }
            Value::Tag(t @ (2 | 3), content) => {
                // Bignums take their preferred serialization (RFC 8949
                // §3.4.3): no leading zero bytes, and values that fit 64 bits
                // as plain major type 0/1 integers.
                let Value::Bytes(b) = &**content else {
                    return Err(EncodeError::NonCanonicalBignum { tag: *t });
                };
                let digits = &b[b.iter().take_while(|&&d| d == 0).count()..];
                if digits.len() <= 8 {
                    let n = digits
                        .iter()
                        .fold(0u64, |acc, &d| (acc << 8) | u64::from(d));
                    if *t == 2 {
                        Encoder::new(out).u64(n);
                    } else {
                        Encoder::new(out).negative(n);
                    }
                } else {
                    Encoder::new(out).tag(*t).bytes(digits);
                }
            }
            Value::Tag(t, content) => {
                Encoder::new(out).tag(*t);
                content.encode(out)?;
            }
            Value::Bool(b) => {
                Encoder::new(out).bool(*b);
            }
            Value::Null => {
                Encoder::new(out).null();
            }
            Value::Undefined => {
                Encoder::new(out).undefined();
            }
            Value::Simple(v) => {
                if (24..32).contains(v) {
                    return Err(EncodeError::InvalidSimple { value: *v });
                }
                Encoder::new(out).simple(*v);
            }
            Value::Float(v) => {
                Encoder::new(out).f64(*v);
            }
        }
        Ok(())
    }

    /// The canonical encoding of `self` in a new buffer.
    ///
    /// # Errors
    ///
    /// As [`Value::encode`].
    pub fn to_cbor(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// Decodes exactly one item from `input`.
    ///
    /// Indefinite-length strings are joined; in lenient mode map pairs are
    /// kept in input order, duplicates included.
    ///
    /// # Errors
    ///
    /// Any [`DecodeError`]; [`ErrorKind::TrailingBytes`] if bytes follow.
    pub fn decode(input: &[u8], mode: Mode, limits: Limits) -> Result<Value, DecodeError> {
        let mut d = Decoder::new(input, mode, limits);
        let v = Value::read(&mut d)?;
        if !d.is_at_end() {
            return Err(DecodeError::new(
                d.position(),
                ErrorKind::TrailingBytes {
                    count: (input.len() - d.position()) as u64,
                },
            ));
        }
        Ok(v)
    }

    /// Reads one item from a decoder positioned at its head.
    ///
    /// Recursion is bounded by the decoder's depth limit
    /// ([`crate::MAX_DEPTH`] at most).
    ///
    /// # Errors
    ///
    /// Any [`DecodeError`] from the item.
    pub fn read(d: &mut Decoder<'_>) -> Result<Value, DecodeError> {
        // Cap pre-allocation: a declared count is bounded by the input
        // length, but each Value is larger than one input byte.
        const PREALLOC_CAP: u64 = 1024;
        let pos = d.position();
        Ok(match d.next()? {
            Token::Unsigned(v) => Value::Unsigned(v),
            Token::Negative(n) => Value::Negative(n),
            Token::Bytes(b) => Value::Bytes(b.to_vec()),
            Token::Text(s) => Value::Text(s.to_owned()),
            Token::Array(n) => {
                let mut items = Vec::with_capacity(n.min(PREALLOC_CAP) as usize);
                for _ in 0..n {
                    items.push(Value::read(d)?);
                }
                Value::Array(items)
            }
            Token::Map(n) => {
                let mut pairs = Vec::with_capacity(n.min(PREALLOC_CAP) as usize);
                for _ in 0..n {
                    let k = Value::read(d)?;
                    let v = Value::read(d)?;
                    pairs.push((k, v));
                }
                Value::Map(pairs)
            }
            Token::Tag(t) => Value::Tag(t, Box::new(Value::read(d)?)),
            Token::Bool(b) => Value::Bool(b),
            Token::Null => Value::Null,
            Token::Undefined => Value::Undefined,
            Token::Simple(v) => Value::Simple(v),
            Token::Float(v) => Value::Float(v),
            Token::IndefiniteBytes => {
                let mut out = Vec::new();
                // The decoder admits only chunks and a break here.
                while let Token::Bytes(b) = d.next()? {
                    out.extend_from_slice(b);
                }
                Value::Bytes(out)
            }
            Token::IndefiniteText => {
                let mut out = String::new();
                while let Token::Text(s) = d.next()? {
                    out.push_str(s);
                }
                Value::Text(out)
            }
            Token::IndefiniteArray => {
                let mut items = Vec::new();
                while d.peek()? != Token::Break {
                    items.push(Value::read(d)?);
                }
                d.next()?;
                Value::Array(items)
            }
            Token::IndefiniteMap => {
                let mut pairs = Vec::new();
                while d.peek()? != Token::Break {
                    let k = Value::read(d)?;
                    let v = Value::read(d)?;
                    pairs.push((k, v));
                }
                d.next()?;
                Value::Map(pairs)
            }
            Token::Break => {
                // `next` rejects a break that closes nothing, and the loops
                // above consume the breaks they expect.
                return Err(DecodeError::new(
                    pos,
                    ErrorKind::TypeMismatch {
                        expected: "an item",
                        found: "break",
                    },
                ));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_sort_by_encoded_key_whatever_the_insertion_order() {
        let a = Value::Map(vec![
            (Value::text("aa"), Value::Unsigned(1)),
            (Value::text("b"), Value::Unsigned(2)),
            (Value::Unsigned(10), Value::Unsigned(3)),
            (Value::int(-1), Value::Unsigned(4)),
        ]);
        let mut pairs = match a.clone() {
            Value::Map(p) => p,
            _ => unreachable!(),
        };
        pairs.reverse();
        let b = Value::Map(pairs);
        let ea = a.to_cbor().unwrap();
        assert_eq!(ea, b.to_cbor().unwrap());
        // 10 (0a) < -1 (20) < "b" (61 62) < "aa" (62 61 61)
        assert_eq!(
            ea,
            vec![
                0xa4, 0x0a, 0x03, 0x20, 0x04, 0x61, 0x62, 0x02, 0x62, 0x61, 0x61, 0x01
            ]
        );
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let v = Value::Map(vec![
            (Value::text("a"), Value::Null),
            (Value::text("a"), Value::Null),
        ]);
        assert_eq!(
            v.to_cbor(),
            Err(EncodeError::DuplicateKey {
                key: vec![0x61, 0x61]
            })
        );
        assert!(v.to_cbor().unwrap_err().to_string().contains("6161"));
    }

    #[test]
    fn bignums_take_their_preferred_form() {
        let small = Value::Tag(2, Box::new(Value::Bytes(vec![0, 0, 1, 0])));
        assert_eq!(small.to_cbor().unwrap(), vec![0x19, 0x01, 0x00]);
        let small_neg = Value::Tag(3, Box::new(Value::Bytes(vec![0xff; 8])));
        assert_eq!(
            small_neg.to_cbor().unwrap(),
            vec![0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        let big = Value::Tag(3, Box::new(Value::Bytes([vec![0], vec![1; 9]].concat())));
        assert_eq!(big.to_cbor().unwrap()[..3], [0xc3, 0x49, 0x01]);
        let bad = Value::Tag(2, Box::new(Value::Unsigned(1)));
        assert_eq!(
            bad.to_cbor(),
            Err(EncodeError::NonCanonicalBignum { tag: 2 })
        );
    }

    #[test]
    fn invalid_simple_is_refused() {
        assert_eq!(
            Value::Simple(31).to_cbor(),
            Err(EncodeError::InvalidSimple { value: 31 })
        );
    }

    #[test]
    fn lenient_decode_joins_chunks_and_canonicalises() {
        let input = [0x5f, 0x42, 0x01, 0x02, 0x43, 0x03, 0x04, 0x05, 0xff];
        let v = Value::decode(&input, Mode::Lenient, Limits::default()).unwrap();
        assert_eq!(v, Value::Bytes(vec![1, 2, 3, 4, 5]));
        assert_eq!(v.to_cbor().unwrap(), vec![0x45, 1, 2, 3, 4, 5]);
    }
}
