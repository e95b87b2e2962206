//! Canonical CBOR for smith: an encoder, a borrowed pull decoder, resource
//! limits and a JSON bridge, written by hand against RFC 8949.
//!
//! Everything smith persists or exchanges is *canonical* CBOR in the sense of
//! RFC 8949 §4.2.1 (core deterministic encoding): every argument in its
//! shortest form, definite lengths only, map keys sorted by the bytewise order
//! of their encodings with no duplicates, and floats in the shortest of
//! binary16/32/64 that keeps the value (NaN as `f9 7e00`). Equal values
//! therefore have equal bytes, which is what makes session files, hashes and
//! replays deterministic.
//!
//! * [`Encoder`] appends items to a caller-owned `Vec<u8>`. It never sorts and
//!   never allocates when the buffer has capacity: records with fixed keys
//!   write them in canonical order themselves. Generic maps go through
//!   [`Value`], which sorts. [`Encoder::items`] writes a run of [`Item`]s
//!   (a tuple of up to 24) with one capacity check.
//! * [`Decoder`] pulls one [`Token`] at a time from a `&[u8]`, handing out
//!   `&str`/`&[u8]` views; it never allocates. [`Mode::Strict`] rejects every
//!   non-canonical input with the byte offset and the rule broken;
//!   [`Mode::Lenient`] accepts any well-formed CBOR for interchange. Both
//!   reject malformed input. [`Limits`] (depth, item count) and every
//!   declared length are checked as soon as a head is read, before its
//!   payload is touched.
//! * [`validate`] checks that a buffer is exactly one item, and
//!   [`validate_sequence`] that it is a sequence of items; in strict mode
//!   both run a dedicated walker over the bytes (no tokens) and fall back to
//!   the decoder only to report an error.
//! * [`json`] converts JSON text to canonical CBOR and back; the mapping is
//!   in `docs/codec.md`.
//!
//! ```
//! use smith_codec::{Decoder, Encoder};
//!
//! let mut buf = Vec::with_capacity(64);
//! // A record with fixed keys, written in canonical key order.
//! Encoder::new(&mut buf).map(2).str("id").u64(7).str("text").str("hi");
//!
//! let mut d = Decoder::strict(&buf);
//! assert_eq!(d.map()?, 2);
//! assert_eq!(d.str()?, "id");
//! assert_eq!(d.u64()?, 7);
//! assert_eq!(d.str()?, "text");
//! assert_eq!(d.str()?, "hi");
//! assert!(d.is_at_end());
//! # Ok::<(), smith_codec::DecodeError>(())
//! ```
#![deny(missing_docs)]

mod decode;
mod diag;
mod encode;
mod error;
mod float;
pub mod json;
mod utf8;
mod value;
mod walk;

pub use decode::{
    Decoder, Limits, MAX_DEPTH, Mode, Token, validate, validate_sequence,
    validate_sequence_tokenwise, validate_tokenwise,
};
pub use diag::DIAGNOSABLE;
pub use encode::{Encoder, Item, Run};
pub use error::{DecodeError, ErrorKind};
pub use value::{EncodeError, Value};
#[doc(hidden)]
pub use walk::strict as strict_walk;
