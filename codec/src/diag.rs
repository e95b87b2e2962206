//! Codec errors as [`smith_diag::Diagnostic`]s.
//!
//! The codec does not know where its bytes came from, so the diagnostics it
//! builds carry no surface; a caller that knows (a session file, an RPC
//! request) attaches one with [`Diagnostic::with_surface`]. Each diagnostic
//! names the offending value: the byte offset and the item found there.

use smith_diag::{Diagnose, Diagnostic};

use crate::error::{DecodeError, ErrorKind};
use crate::json::{JsonError, JsonErrorKind};
use crate::value::EncodeError;

impl ErrorKind {
    /// The stable kebab-case name of the kind, as used in diagnostic codes
    /// (`codec.<name>`).
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::Truncated { .. } => "truncated",
            ErrorKind::EndOfInput => "end-of-input",
            ErrorKind::LengthExceedsInput { .. } => "length-exceeds-input",
            ErrorKind::ReservedAdditionalInfo { .. } => "reserved-additional-info",
            ErrorKind::IndefiniteNotAllowedHere { .. } => "indefinite-not-allowed",
            ErrorKind::InvalidTwoByteSimple { .. } => "invalid-two-byte-simple",
            ErrorKind::UnexpectedBreak => "unexpected-break",
            ErrorKind::MapMissingValue => "map-missing-value",
            ErrorKind::InvalidChunk { .. } => "invalid-chunk",
            ErrorKind::InvalidUtf8 => "invalid-utf8",
            ErrorKind::NonShortestHead { .. } => "non-shortest-head",
            ErrorKind::IndefiniteLength { .. } => "indefinite-length",
            ErrorKind::NonShortestFloat { .. } => "non-shortest-float",
            ErrorKind::NonCanonicalNan => "non-canonical-nan",
            ErrorKind::UnsortedKey { .. } => "unsorted-key",
            ErrorKind::DuplicateKey { .. } => "duplicate-key",
            ErrorKind::NonCanonicalBignum => "non-canonical-bignum",
            ErrorKind::DepthExceeded { .. } => "depth-exceeded",
            ErrorKind::TooManyItems { .. } => "too-many-items",
            ErrorKind::TrailingBytes { .. } => "trailing-bytes",
            ErrorKind::TypeMismatch { .. } => "type-mismatch",
            ErrorKind::IntegerOutOfRange { .. } => "integer-out-of-range",
        }
    }
}

impl Diagnose for DecodeError {
    /// This error as a diagnostic: what was found at which byte, the rule it
    /// breaks, and the next action. The offending value is the byte offset
    /// with the item found there; the field is `byte N`.
    fn to_diagnostic(&self) -> Diagnostic {
        let kind = self.kind();
        let offset = self.offset();
        Diagnostic::error(
            format!("codec.{}", kind.name()),
            format!("CBOR input is rejected at byte {offset}: {kind}"),
            kind.rule(),
            kind.next_action(),
        )
        .with_value(format!("byte {offset}: {kind}"))
        .with_field(format!("byte {offset}"))
    }
}

impl From<&DecodeError> for Diagnostic {
    fn from(err: &DecodeError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<DecodeError> for Diagnostic {
    fn from(err: DecodeError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl Diagnose for EncodeError {
    /// This error as a diagnostic naming the value that cannot be encoded.
    fn to_diagnostic(&self) -> Diagnostic {
        match self {
            EncodeError::DuplicateKey { key } => {
                let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
                Diagnostic::error(
                    "codec.encode-duplicate-key",
                    format!("a map cannot be encoded: key {hex} (hex CBOR) occurs twice"),
                    "canonical CBOR maps have unique keys (RFC 8949 §5.6)",
                    "remove or merge the duplicate key before encoding",
                )
                .with_value(hex)
            }
            EncodeError::InvalidSimple { value } => Diagnostic::error(
                "codec.encode-invalid-simple",
                format!("simple value {value} cannot be encoded"),
                "RFC 8949 §3.3 gives simple values 24..=31 no encoding",
                "use a simple value in 0..=19 or 32..=255",
            )
            .with_value(value),
            EncodeError::NonCanonicalBignum { tag } => Diagnostic::error(
                "codec.encode-non-canonical-bignum",
                format!("a tag {tag} bignum cannot be encoded: its content is not a byte string"),
                "a bignum's content must be a byte string (RFC 8949 §3.4.3)",
                "put the big-endian magnitude in a Value::Bytes",
            )
            .with_value(format!("tag {tag}")),
        }
    }
}

impl From<&EncodeError> for Diagnostic {
    fn from(err: &EncodeError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<EncodeError> for Diagnostic {
    fn from(err: EncodeError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl Diagnose for JsonError {
    /// This error as a diagnostic: what was found at which byte of the JSON
    /// text, the RFC 8259 rule, and the fix.
    fn to_diagnostic(&self) -> Diagnostic {
        let offset = self.offset();
        let (name, found, why): (&str, String, &str) = match self.kind() {
            JsonErrorKind::UnexpectedEnd => (
                "unexpected-end",
                "the end of the text".to_owned(),
                "a JSON value must be complete (RFC 8259 §2)",
            ),
            JsonErrorKind::UnexpectedChar { found, expected } => (
                "unexpected-char",
                format!("{found:?} where {expected} was expected"),
                "the JSON grammar does not allow that character here (RFC 8259 §2)",
            ),
            JsonErrorKind::InvalidNumber => (
                "invalid-number",
                "a malformed number".to_owned(),
                "numbers follow the RFC 8259 §6 grammar",
            ),
            JsonErrorKind::NumberOutOfRange => (
                "number-out-of-range",
                "a number too large for a 64-bit float".to_owned(),
                "CBOR holds integers in [-2^64, 2^64-1] and finite 64-bit floats only",
            ),
            JsonErrorKind::InvalidEscape => (
                "invalid-escape",
                "an invalid string escape".to_owned(),
                "string escapes follow RFC 8259 §7",
            ),
            JsonErrorKind::LoneSurrogate => (
                "lone-surrogate",
                "a \\u escape for a lone UTF-16 surrogate".to_owned(),
                "CBOR text is UTF-8, which cannot hold a lone surrogate",
            ),
            JsonErrorKind::ControlCharacter => (
                "control-character",
                "a raw control character inside a string".to_owned(),
                "RFC 8259 §7 requires control characters to be escaped",
            ),
            JsonErrorKind::DuplicateKey { key } => (
                "duplicate-key",
                format!("the repeated key {key:?}"),
                "CBOR maps need unique keys, so an object may not repeat one",
            ),
            JsonErrorKind::TooDeep => (
                "too-deep",
                format!("nesting deeper than {}", crate::MAX_DEPTH),
                "the converter bounds nesting depth so input cannot exhaust the stack",
            ),
            JsonErrorKind::TrailingCharacters => (
                "trailing-characters",
                "characters after the value".to_owned(),
                "the text must hold exactly one JSON value",
            ),
        };
        Diagnostic::error(
            format!("codec.json-{name}"),
            format!("JSON text is rejected at byte {offset}: {found}"),
            why,
            "fix the JSON at that byte offset and retry",
        )
        .with_value(format!("byte {offset}: {found}"))
        .with_field(format!("byte {offset}"))
    }
}

impl From<&JsonError> for Diagnostic {
    fn from(err: &JsonError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<JsonError> for Diagnostic {
    fn from(err: JsonError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[
    smith_diag::finder::<DecodeError>,
    smith_diag::finder::<EncodeError>,
    smith_diag::finder::<JsonError>,
];

#[cfg(test)]
mod tests {
    use super::*;
    use smith_diag::Value as Shown;

    fn assert_complete(d: &Diagnostic, value_part: &str) {
        assert!(d.is_complete(), "{d}");
        assert!(d.code().starts_with("codec."), "{}", d.code());
        match d.value() {
            Some(Shown::Shown(v)) => assert!(v.contains(value_part), "{v} lacks {value_part}"),
            other => panic!("no offending value: {other:?}"),
        }
    }

    #[test]
    fn every_decode_kind_converts_with_all_parts_and_its_offset() {
        let kinds = [
            ErrorKind::Truncated {
                needed: 4,
                available: 1,
            },
            ErrorKind::EndOfInput,
            ErrorKind::LengthExceedsInput {
                declared: 99,
                available: 2,
            },
            ErrorKind::ReservedAdditionalInfo { initial: 0x1c },
            ErrorKind::IndefiniteNotAllowedHere { initial: 0x1f },
            ErrorKind::InvalidTwoByteSimple { value: 3 },
            ErrorKind::UnexpectedBreak,
            ErrorKind::MapMissingValue,
            ErrorKind::InvalidChunk { initial: 0x01 },
            ErrorKind::InvalidUtf8,
            ErrorKind::NonShortestHead { major: 0, value: 1 },
            ErrorKind::IndefiniteLength { initial: 0x9f },
            ErrorKind::NonShortestFloat {
                width: 8,
                shortest: 2,
            },
            ErrorKind::NonCanonicalNan,
            ErrorKind::UnsortedKey { previous: 3 },
            ErrorKind::DuplicateKey { previous: 3 },
            ErrorKind::NonCanonicalBignum,
            ErrorKind::DepthExceeded { limit: 8 },
            ErrorKind::TooManyItems { limit: 10 },
            ErrorKind::TrailingBytes { count: 2 },
            ErrorKind::TypeMismatch {
                expected: "text",
                found: "array",
            },
            ErrorKind::IntegerOutOfRange { expected: "u8" },
        ];
        let mut codes = std::collections::BTreeSet::new();
        for kind in kinds {
            let d = Diagnostic::from(DecodeError::new(17, kind));
            assert_complete(&d, "byte 17");
            assert!(d.what().contains(&kind.to_string()), "{d}");
            assert_eq!(d.why(), kind.rule());
            assert_eq!(d.field(), Some("byte 17"));
            codes.insert(d.code().to_owned());
        }
        assert_eq!(codes.len(), kinds.len(), "codes are distinct per kind");
    }

    #[test]
    fn a_real_decode_failure_names_the_offending_byte() {
        // 0x1c: major type 0 with reserved additional information 28.
        let err = crate::validate(&[0x1c], crate::Mode::Strict, crate::Limits::default())
            .expect_err("reserved additional information is rejected");
        let d = err.to_diagnostic();
        assert_eq!(d.code(), "codec.reserved-additional-info");
        assert_complete(&d, "0x1c");
        assert!(
            d.render_plain()
                .contains("value: byte 0: initial byte 0x1c")
        );
    }

    #[test]
    fn every_encode_error_converts_with_all_parts_and_its_value() {
        let cases = [
            (
                EncodeError::DuplicateKey {
                    key: vec![0x61, 0x61],
                },
                "6161",
            ),
            (EncodeError::InvalidSimple { value: 25 }, "25"),
            (EncodeError::NonCanonicalBignum { tag: 2 }, "tag 2"),
        ];
        for (err, value) in cases {
            let d = Diagnostic::from(&err);
            assert_complete(&d, value);
        }
    }

    #[test]
    fn every_json_error_converts_with_all_parts_and_its_offset() {
        let deep = "[".repeat(crate::MAX_DEPTH as usize + 2);
        let cases: [(&str, &str); 10] = [
            ("[1,", "unexpected-end"),
            ("[1;", "unexpected-char"),
            ("-", "invalid-number"),
            ("1e999", "number-out-of-range"),
            (r#""\q""#, "invalid-escape"),
            (r#""\ud800""#, "lone-surrogate"),
            ("\"a\u{1}\"", "control-character"),
            (r#"{"k":1,"k":2}"#, "duplicate-key"),
            (&deep, "too-deep"),
            ("1 2", "trailing-characters"),
        ];
        for (text, name) in cases {
            let mut out = Vec::new();
            let err = crate::json::to_cbor(text, &mut out).expect_err(text);
            let d = Diagnostic::from(err);
            assert_eq!(d.code(), format!("codec.json-{name}"), "{text}");
            assert_complete(&d, "byte ");
        }
    }
}
