//! The JSON bridge: JSON text to canonical CBOR and back.
//!
//! The mapping is written down in `docs/codec.md`. In short:
//!
//! * JSON → CBOR ([`to_cbor`]) is exact for the JSON data model. Integers
//!   (numbers without fraction or exponent) in `[-2^64, 2^64-1]` become major
//!   type 0/1; every other number becomes a float in its shortest exact width;
//!   objects become maps with keys sorted canonically; duplicate keys, lone
//!   surrogates and numbers beyond `f64` are errors.
//! * CBOR → JSON ([`from_cbor`]) writes JSON-native items natively and the
//!   rest as single-purpose objects: `{"$bytes": base64url}`,
//!   `{"$tag": n, "$value": v}`, `{"$undefined": true}`, `{"$simple": n}`,
//!   `{"$float": "NaN" | "Infinity" | "-Infinity"}`, and maps with any
//!   non-text key as `{"$map": [[k, v], ...]}`. [`to_cbor`] does not turn
//!   these forms back: it reads JSON as JSON.

use std::fmt;

use crate::decode::{Limits, MAX_DEPTH, Mode};
use crate::encode::Encoder;
use crate::error::DecodeError;
use crate::value::Value;

/// Why JSON text could not be converted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonErrorKind {
    /// The text ended inside a value.
    UnexpectedEnd,
    /// A byte that cannot start or continue a value here.
    UnexpectedChar {
        /// The character found.
        found: char,
        /// What the grammar allows here.
        expected: &'static str,
    },
    /// A malformed number.
    InvalidNumber,
    /// A number whose magnitude exceeds `f64` (it would become infinity).
    NumberOutOfRange,
    /// An invalid escape sequence in a string.
    InvalidEscape,
    /// A `\u` escape for a lone UTF-16 surrogate.
    LoneSurrogate,
    /// A raw control character (below U+0020) inside a string.
    ControlCharacter,
    /// An object repeats a key.
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Non-whitespace after the value.
    TrailingCharacters,
}

/// A JSON conversion failure at a byte offset of the JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    offset: usize,
    kind: JsonErrorKind,
}

impl JsonError {
    /// Byte offset in the JSON text.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// What went wrong.
    pub fn kind(&self) -> &JsonErrorKind {
        &self.kind
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON to CBOR error at byte {}: ", self.offset)?;
        match &self.kind {
            JsonErrorKind::UnexpectedEnd => write!(f, "text ends inside a value")?,
            JsonErrorKind::UnexpectedChar { found, expected } => {
                write!(f, "found {found:?}, expected {expected}")?
            }
            JsonErrorKind::InvalidNumber => write!(f, "malformed number (RFC 8259 §6 grammar)")?,
            JsonErrorKind::NumberOutOfRange => write!(
                f,
                "number is too large for a 64-bit float and is not an integer in [-2^64, 2^64-1]"
            )?,
            JsonErrorKind::InvalidEscape => write!(f, "invalid string escape (RFC 8259 §7)")?,
            JsonErrorKind::LoneSurrogate => write!(
                f,
                "\\u escape is a lone UTF-16 surrogate, which CBOR text (UTF-8) cannot hold"
            )?,
            JsonErrorKind::ControlCharacter => write!(
                f,
                "raw control character in a string (RFC 8259 §7 requires an escape)"
            )?,
            JsonErrorKind::DuplicateKey { key } => {
                write!(f, "object repeats key {key:?}; CBOR maps need unique keys")?
            }
            JsonErrorKind::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH}")?,
            JsonErrorKind::TrailingCharacters => write!(f, "characters after the value")?,
        }
        write!(f, "; fix the JSON at that offset and retry")
    }
}

impl std::error::Error for JsonError {}

/// Converts JSON text to canonical CBOR, appending to `out`.
///
/// # Errors
///
/// [`JsonError`] with the byte offset of the first problem; `out` is then
/// restored to its original length.
pub fn to_cbor(json: &str, out: &mut Vec<u8>) -> Result<(), JsonError> {
    let start = out.len();
    let mut p = Parser {
        src: json,
        s: json.as_bytes(),
        pos: 0,
        depth: 0,
        text: String::new(),
        scratch: Vec::new(),
        ranges: Vec::new(),
    };
    let r = p.value(out).and_then(|()| {
        p.ws();
        if p.pos < p.s.len() {
            Err(p.err(JsonErrorKind::TrailingCharacters))
        } else {
            Ok(())
        }
    });
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Converts one CBOR item (any well-formed CBOR, default limits) to JSON
/// text, appending to `out`.
///
/// # Errors
///
/// Any [`DecodeError`] (malformed input, limits, trailing bytes).
pub fn from_cbor(cbor: &[u8], out: &mut String) -> Result<(), DecodeError> {
    from_cbor_with(cbor, Mode::Lenient, Limits::default(), out)
}

/// [`from_cbor`] with an explicit mode and limits.
///
/// # Errors
///
/// Any [`DecodeError`] (malformed or, in strict mode, non-canonical input,
/// limits, trailing bytes).
pub fn from_cbor_with(
    cbor: &[u8],
    mode: Mode,
    limits: Limits,
    out: &mut String,
) -> Result<(), DecodeError> {
    let v = Value::decode(cbor, mode, limits)?;
    write_value(&v, out);
    Ok(())
}

/// Writes a [`Value`] as JSON text per the mapping in the module docs.
pub fn write_value(v: &Value, out: &mut String) {
    use std::fmt::Write as _;
    match v {
        Value::Unsigned(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Negative(n) => {
            let _ = write!(out, "-{}", u128::from(*n) + 1);
        }
        Value::Float(x) => {
            if x.is_finite() {
                // Debug prints the shortest round-trip form and always keeps
                // a '.' or an exponent, so it reads back as a float.
                let _ = write!(out, "{x:?}");
            } else {
                let name = if x.is_nan() {
                    "NaN"
                } else if *x > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                let _ = write!(out, "{{\"$float\":\"{name}\"}}");
            }
        }
        Value::Text(s) => write_str(s, out),
        Value::Bytes(b) => {
            out.push_str("{\"$bytes\":\"");
            base64url(b, out);
            out.push_str("\"}");
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Map(pairs) => {
            if pairs.iter().all(|(k, _)| matches!(k, Value::Text(_))) {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_value(k, out);
                    out.push(':');
                    write_value(v, out);
                }
                out.push('}');
            } else {
                out.push_str("{\"$map\":[");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('[');
                    write_value(k, out);
                    out.push(',');
                    write_value(v, out);
                    out.push(']');
                }
                out.push_str("]}");
            }
        }
        Value::Tag(t, content) => {
            let _ = write!(out, "{{\"$tag\":{t},\"$value\":");
            write_value(content, out);
            out.push('}');
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
        Value::Undefined => out.push_str("{\"$undefined\":true}"),
        Value::Simple(n) => {
            let _ = write!(out, "{{\"$simple\":{n}}}");
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if esc.is_empty() {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// Appends the decimal digits of `n`, as JSON writes an unsigned integer.
pub fn push_json_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `s` to `out` as a JSON string, quotes included, with exactly the
/// escapes serde_json writes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and
/// `\u00xx` (lowercase hex) for the other control characters below
/// U+0020; everything else (DEL, U+2028, U+2029, all non-ASCII) as it is.
///
/// Built for throughput on long text: sixteen bytes are tested at a time
/// (SSE2 on x86_64, two eight-byte words elsewhere) for the three kinds of
/// byte that need an escape, every flagged byte of the block is escaped
/// from the one mask, and runs of clean bytes are copied whole, so clean
/// text costs about a copy.
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    let s = s.as_bytes();
    out.reserve(s.len() + 2);
    out.push(b'"');
    // `run` is where the clean bytes not yet copied start.
    let (mut run, mut i) = (0, 0);
    while let Some(block) = s.get(i..i + 16) {
        let mut hits = escape_mask(block);
        while hits != 0 {
            let at = i + hits.trailing_zeros() as usize;
            out.extend_from_slice(&s[run..at]);
            push_escape(out, s[at]);
            run = at + 1;
            hits &= hits - 1;
        }
        i += 16;
    }
    for (k, &b) in s[i..].iter().enumerate() {
        if ESCAPES[b as usize] != 0 {
            out.extend_from_slice(&s[run..i + k]);
            push_escape(out, b);
            run = i + k + 1;
        }
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

/// Bit `k` set for each byte `block[k]` (of 16) that needs an escape:
/// below 0x20, `"` or `\`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn escape_mask(block: &[u8]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    debug_assert_eq!(block.len(), 16);
    let block = &block[..16];
    // SAFETY: SSE2 is part of the x86_64 baseline, and `block` holds the
    // 16 bytes the unaligned load reads.
    unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        // Unsigned `v <= 0x1f` is `max(v, 0x1f) == 0x1f`.
        let low = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash))) as u32
    }
}

/// Bit `k` set for each byte `block[k]` (of 16) that needs an escape.
#[cfg(not(target_arch = "x86_64"))]
fn escape_mask(block: &[u8]) -> u32 {
    escape_mask_words(block)
}

/// [`escape_mask`] without SIMD: two eight-byte words, each flagged byte
/// found exactly by replacing the ones already taken (see
/// [`needs_escape`]).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn escape_mask_words(block: &[u8]) -> u32 {
    let mut mask = 0u32;
    for (half, chunk) in block.chunks_exact(8).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mut w = u64::from_le_bytes(word);
        loop {
            let hits = needs_escape(w);
            if hits == 0 {
                break;
            }
            let k = hits.trailing_zeros() / 8;
            mask |= 1 << (half as u32 * 8 + k);
            // Replace the flagged byte by a clean one; bytes above it are
            // tested again without the borrow it caused.
            w = (w & !(0xff << (8 * k))) | (u64::from(b'a') << (8 * k));
        }
    }
    mask
}

/// The high bit of each byte of `w` that is below 0x20, `"` or `\`, and
/// possibly of bytes above such a byte (a borrow carries upward), never of
/// a byte below the first one: the lowest set bit marks the first byte
/// that needs an escape, and 0 means none does.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn needs_escape(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |v: u64, n: u64| v.wrapping_sub(ONES * n) & !v & HIGH;
    below(w, 0x20)
        | below(w ^ (ONES * u64::from(b'"')), 1)
        | below(w ^ (ONES * u64::from(b'\\')), 1)
}

/// What each byte becomes inside a JSON string: 0 for itself, else the
/// letter of its two-character escape, or `u` for `\u00xx`.
const ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

fn push_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match ESCAPES[b as usize] {
        b'u' => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
        ]),
        e => out.extend_from_slice(&[b'\\', e]),
    }
}

/// RFC 4648 §5 base64url without padding.
fn base64url(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.push(char::from(ALPHABET[((n >> 18) & 63) as usize]));
            out.push(char::from(ALPHABET[((n >> 12) & 63) as usize]));
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.push(char::from(ALPHABET[((n >> 18) & 63) as usize]));
            out.push(char::from(ALPHABET[((n >> 12) & 63) as usize]));
            out.push(char::from(ALPHABET[((n >> 6) & 63) as usize]));
        }
        _ => {}
    }
}

struct Parser<'j> {
    src: &'j str,
    s: &'j [u8],
    pos: usize,
    depth: u32,
    /// Scratch for strings with escapes.
    text: String,
    /// Scratch for reordering object members.
    scratch: Vec<u8>,
    /// Member ranges (key start, key end, value end) of the open objects,
    /// relative to the object's first member.
    ranges: Vec<(usize, usize, usize)>,
}

impl Parser<'_> {
    fn err(&self, kind: JsonErrorKind) -> JsonError {
        JsonError {
            offset: self.pos,
            kind,
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn unexpected(&self, expected: &'static str) -> JsonError {
        match self.src.get(self.pos..).and_then(|r| r.chars().next()) {
            Some(found) => self.err(JsonErrorKind::UnexpectedChar { found, expected }),
            // `s` came from a &str, so a non-boundary position cannot occur;
            // the end of input is the only other case.
            None => self.err(JsonErrorKind::UnexpectedEnd),
        }
    }

    fn value(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        self.ws();
        match self.s.get(self.pos) {
            Some(b'{') => self.object(out),
            Some(b'[') => self.array(out),
            Some(b'"') => self.string(out),
            Some(b't') => self.literal("true", 0xf5, out),
            Some(b'f') => self.literal("false", 0xf4, out),
            Some(b'n') => self.literal("null", 0xf6, out),
            Some(b'-' | b'0'..=b'9') => self.number(out),
            Some(_) => Err(self.unexpected("a JSON value")),
            None => Err(self.err(JsonErrorKind::UnexpectedEnd)),
        }
    }

    fn literal(
        &mut self,
        word: &'static str,
        byte: u8,
        out: &mut Vec<u8>,
    ) -> Result<(), JsonError> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            out.push(byte);
            Ok(())
        } else {
            Err(self.unexpected("true, false or null"))
        }
    }

    fn enter(&mut self) -> Result<(), JsonError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(JsonErrorKind::TooDeep));
        }
        self.depth += 1;
        Ok(())
    }

    /// Moves the head written at the end of `out` to `start`.
    fn prepend_head(out: &mut [u8], start: usize, head_len: usize) {
        out[start..].rotate_right(head_len);
    }

    fn array(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        self.enter()?;
        self.pos += 1; // '['
        let start = out.len();
        let mut count = 0u64;
        self.ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.pos += 1;
        } else {
            loop {
                self.value(out)?;
                count += 1;
                self.ws();
                match self.s.get(self.pos) {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    Some(_) => return Err(self.unexpected("',' or ']'")),
                    None => return Err(self.err(JsonErrorKind::UnexpectedEnd)),
                }
            }
        }
        let before = out.len();
        Encoder::new(out).array(count);
        let head_len = out.len() - before;
        Self::prepend_head(out, start, head_len);
        self.depth -= 1;
        Ok(())
    }

    fn object(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        self.enter()?;
        self.pos += 1; // '{'
        let start = out.len();
        let base = self.ranges.len();
        self.ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.pos += 1;
        } else {
            loop {
                self.ws();
                if self.s.get(self.pos) != Some(&b'"') {
                    return Err(self.unexpected("a string key"));
                }
                let ks = out.len() - start;
                self.string(out)?;
                let ke = out.len() - start;
                self.ws();
                if self.s.get(self.pos) != Some(&b':') {
                    return Err(self.unexpected("':'"));
                }
                self.pos += 1;
                self.value(out)?;
                self.ranges.push((ks, ke, out.len() - start));
                self.ws();
                match self.s.get(self.pos) {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    Some(_) => return Err(self.unexpected("',' or '}'")),
                    None => return Err(self.err(JsonErrorKind::UnexpectedEnd)),
                }
            }
        }
        let body_end = self.pos;
        let members = &mut self.ranges[base..];
        let body = &out[start..];
        let key = |r: &(usize, usize, usize)| &body[r.0..r.1];
        let sorted = members.windows(2).all(|w| key(&w[0]) < key(&w[1]));
        let count = members.len() as u64;
        if !sorted {
            members.sort_by(|a, b| key(a).cmp(key(b)));
            if let Some(w) = members.windows(2).find(|w| key(&w[0]) == key(&w[1])) {
                let mut d = crate::Decoder::strict(key(&w[0]));
                let name = d.str().map(str::to_owned).unwrap_or_default();
                self.pos = body_end - 1;
                return Err(self.err(JsonErrorKind::DuplicateKey { key: name }));
            }
            self.scratch.clear();
            for r in members.iter() {
                self.scratch.extend_from_slice(&body[r.0..r.2]);
            }
            out.truncate(start);
            out.extend_from_slice(&self.scratch);
        }
        self.ranges.truncate(base);
        let before = out.len();
        Encoder::new(out).map(count);
        let head_len = out.len() - before;
        Self::prepend_head(out, start, head_len);
        self.depth -= 1;
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .s
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.err(JsonErrorKind::InvalidEscape))?;
        let mut v = 0u32;
        for &d in digits {
            let n = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.err(JsonErrorKind::InvalidEscape))?;
            v = v * 16 + n;
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        self.pos += 1; // opening quote
        let begin = self.pos;
        // Fast path: no escapes.
        loop {
            match self.s.get(self.pos) {
                Some(b'"') => {
                    // Cut at ASCII quotes, so both ends are char boundaries.
                    let raw = &self.src[begin..self.pos];
                    self.pos += 1;
                    Encoder::new(out).str(raw);
                    return Ok(());
                }
                Some(b'\\') => break,
                Some(0..=0x1f) => return Err(self.err(JsonErrorKind::ControlCharacter)),
                Some(_) => self.pos += 1,
                None => return Err(self.err(JsonErrorKind::UnexpectedEnd)),
            }
        }
        // Slow path: unescape into scratch.
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let r = self.unescape(begin, &mut text);
        if r.is_ok() {
            Encoder::new(out).str(&text);
        }
        self.text = text;
        r
    }

    fn unescape(&mut self, begin: usize, text: &mut String) -> Result<(), JsonError> {
        let mut run = begin;
        loop {
            match self.s.get(self.pos) {
                Some(b'"') => {
                    text.push_str(&self.src[run..self.pos]);
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    text.push_str(&self.src[run..self.pos]);
                    let esc_at = self.pos;
                    self.pos += 1;
                    let c = match self.s.get(self.pos) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let hi = self.hex4()?;
                            let cp = if (0xd800..0xdc00).contains(&hi) {
                                if self.s.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    self.pos = esc_at;
                                    return Err(self.err(JsonErrorKind::LoneSurrogate));
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    self.pos = esc_at;
                                    return Err(self.err(JsonErrorKind::LoneSurrogate));
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            let Some(c) = char::from_u32(cp) else {
                                self.pos = esc_at;
                                return Err(self.err(JsonErrorKind::LoneSurrogate));
                            };
                            text.push(c);
                            run = self.pos;
                            continue;
                        }
                        _ => {
                            self.pos = esc_at;
                            return Err(self.err(JsonErrorKind::InvalidEscape));
                        }
                    };
                    text.push(c);
                    self.pos += 1;
                    run = self.pos;
                }
                Some(0..=0x1f) => return Err(self.err(JsonErrorKind::ControlCharacter)),
                Some(_) => self.pos += 1,
                None => return Err(self.err(JsonErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn number(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        let start = self.pos;
        let s = self.s;
        let neg = s.get(self.pos) == Some(&b'-');
        if neg {
            self.pos += 1;
        }
        let int_start = self.pos;
        match s.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = s.get(self.pos) {
                    self.pos += 1;
                }
            }
            _ => return Err(self.err(JsonErrorKind::InvalidNumber)),
        }
        let int_end = self.pos;
        let mut is_float = false;
        if s.get(self.pos) == Some(&b'.') {
            is_float = true;
            self.pos += 1;
            if !matches!(s.get(self.pos), Some(b'0'..=b'9')) {
                return Err(self.err(JsonErrorKind::InvalidNumber));
            }
            while let Some(b'0'..=b'9') = s.get(self.pos) {
                self.pos += 1;
            }
        }
        if let Some(b'e' | b'E') = s.get(self.pos) {
            is_float = true;
            self.pos += 1;
            if let Some(b'+' | b'-') = s.get(self.pos) {
                self.pos += 1;
            }
            if !matches!(s.get(self.pos), Some(b'0'..=b'9')) {
                return Err(self.err(JsonErrorKind::InvalidNumber));
            }
            while let Some(b'0'..=b'9') = s.get(self.pos) {
                self.pos += 1;
            }
        }
        if !is_float {
            // Magnitude as u128 (at most 2^64 matters; stop early beyond).
            let mut mag: u128 = 0;
            let mut fits = true;
            for &d in &s[int_start..int_end] {
                mag = mag * 10 + u128::from(d - b'0');
                if mag > 1u128 << 64 {
                    fits = false;
                    break;
                }
            }
            if fits {
                let mut e = Encoder::new(out);
                if !neg {
                    if let Ok(v) = u64::try_from(mag) {
                        e.u64(v);
                        return Ok(());
                    }
                } else if mag == 0 {
                    e.u64(0);
                    return Ok(());
                } else {
                    // 1 <= mag <= 2^64, so mag - 1 fits u64.
                    e.negative((mag - 1) as u64);
                    return Ok(());
                }
            }
        }
        let v: f64 = self.src[start..self.pos]
            .parse()
            .map_err(|_| self.err(JsonErrorKind::InvalidNumber))?;
        if !v.is_finite() {
            self.pos = start;
            return Err(self.err(JsonErrorKind::NumberOutOfRange));
        }
        Encoder::new(out).f64(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_json's string, the reference [`push_json_string`] matches.
    fn serde_string(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    fn pushed(s: &str) -> String {
        let mut out = b"prefix".to_vec();
        push_json_string(&mut out, s);
        String::from_utf8(out)
            .unwrap()
            .strip_prefix("prefix")
            .unwrap()
            .to_owned()
    }

    #[test]
    fn json_strings_are_escaped_exactly_as_serde_json_escapes_them() {
        let controls: String = (0u8..0x20).map(char::from).collect();
        for s in [
            "",
            "a",
            "plain text longer than one word of eight bytes",
            "\"",
            "\\",
            "quote \" backslash \\ slash / del \u{7f}",
            "tab\tnewline\ncarriage\rback\u{8}form\u{c}",
            controls.as_str(),
            "ünïcödé — 日本語 😀",
            // Not escaped by serde_json, so not here either.
            "\u{2028}\u{2029}",
            "\u{7f}\u{80}\u{ff}\u{100}",
            "\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"",
            "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
        ] {
            assert_eq!(pushed(s), serde_string(s), "{s:?}");
        }
    }

    #[test]
    fn every_escape_at_every_offset_of_an_eight_byte_word_matches_serde_json() {
        // Each byte that needs an escape (and the bytes next to the
        // thresholds that do not), at every offset across two words, in
        // clean ASCII and beside multibyte characters whose bytes straddle
        // the word boundary.
        let mut special: Vec<char> = (0u8..0x20).map(char::from).collect();
        special.extend(['"', '\\', ' ', '!', '#', '[', ']', '\u{7f}', 'é', '€', '😀']);
        for fill in ["abcdefghijklmnopqrstuvwx", "é€😀ab€é😀xyzé€😀"] {
            for c in &special {
                for at in 0..=fill.chars().count() {
                    let s: String = fill
                        .chars()
                        .take(at)
                        .chain(std::iter::once(*c))
                        .chain(fill.chars().skip(at))
                        .collect();
                    assert_eq!(pushed(&s), serde_string(&s), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn the_escape_mask_flags_exactly_the_bytes_that_need_an_escape() {
        // Every byte value at every position of a 16-byte block, alone and
        // beside flagged neighbours (borrows in the word test must not
        // flag clean bytes above a flagged one).
        for fill in [b'a', b'"', 0x1f, 0x80, 0xff] {
            for at in 0..16 {
                for b in 0u8..=255 {
                    let mut block = [fill; 16];
                    block[at] = b;
                    let want: u32 = block
                        .iter()
                        .enumerate()
                        .filter(|&(_, &c)| ESCAPES[c as usize] != 0)
                        .map(|(k, _)| 1 << k)
                        .sum();
                    assert_eq!(escape_mask(&block), want, "{block:?}");
                    assert_eq!(escape_mask_words(&block), want, "{block:?}");
                }
            }
        }
    }

    #[test]
    fn long_generated_text_is_escaped_exactly_as_serde_json_escapes_it() {
        // A deterministic mix of clean runs, escapes and multibyte text.
        let pieces = [
            "word ",
            "\n",
            "\t",
            "\"q\"",
            "\\",
            "\u{1}",
            "ü",
            "日本",
            "😀",
            "\u{2028}",
            "abcdefghijk",
        ];
        let mut s = String::new();
        let mut x: u32 = 12_345;
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            s.push_str(pieces[(x >> 16) as usize % pieces.len()]);
        }
        assert_eq!(pushed(&s), serde_string(&s));
    }

    fn hex(json: &str) -> String {
        let mut out = Vec::new();
        to_cbor(json, &mut out).unwrap();
        out.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn integers_are_exact_at_the_edges() {
        assert_eq!(hex("0"), "00");
        assert_eq!(hex("-0"), "00");
        assert_eq!(hex("18446744073709551615"), "1bffffffffffffffff");
        assert_eq!(hex("-18446744073709551616"), "3bffffffffffffffff");
        assert_eq!(hex("-1"), "20");
        // Beyond the integer range: nearest float.
        assert_eq!(hex("18446744073709551616"), "fa5f800000");
        assert_eq!(hex("1.0"), "f93c00");
        assert_eq!(hex("1e2"), "f95640");
    }

    #[test]
    fn objects_sort_keys_and_reject_duplicates() {
        assert_eq!(
            hex(r#"{"b":1,"a":2,"aa":3}"#),
            "a3616102616201626161".to_owned() + "03"
        );
        let mut out = vec![0xaa];
        let e = to_cbor(r#"{"a":1,"a":2}"#, &mut out).unwrap_err();
        assert_eq!(e.kind(), &JsonErrorKind::DuplicateKey { key: "a".into() });
        assert_eq!(out, vec![0xaa], "output restored on error");
    }

    #[test]
    fn strings_unescape_and_reject_lone_surrogates() {
        assert_eq!(
            hex(r#""a\n\u00e9\ud83d\ude00""#),
            "6861".to_owned() + "0ac3a9f09f9880"
        );
        let mut out = Vec::new();
        let e = to_cbor(r#""\ud800x""#, &mut out).unwrap_err();
        assert_eq!(e.kind(), &JsonErrorKind::LoneSurrogate);
        assert_eq!(e.offset(), 1);
    }

    #[test]
    fn malformed_json_is_rejected_with_offsets() {
        for (json, offset) in [
            ("[1,]", 3),
            ("01", 1),
            ("1.", 2),
            ("{\"a\" 1}", 5),
            ("[1] x", 4),
            ("1e999", 0),
            ("\"\u{1}\"", 1),
        ] {
            let mut out = Vec::new();
            let e = to_cbor(json, &mut out).unwrap_err();
            assert_eq!(e.offset(), offset, "{json}: {e}");
        }
    }

    #[test]
    fn cbor_to_json_uses_documented_forms() {
        let cases: &[(&[u8], &str)] = &[
            (&[0x44, 1, 2, 3, 0xff], r#"{"$bytes":"AQID_w"}"#),
            (&[0xc1, 0x01], r#"{"$tag":1,"$value":1}"#),
            (&[0xf7], r#"{"$undefined":true}"#),
            (&[0xf0], r#"{"$simple":16}"#),
            (&[0xf9, 0x7e, 0x00], r#"{"$float":"NaN"}"#),
            (&[0xf9, 0xfc, 0x00], r#"{"$float":"-Infinity"}"#),
            (&[0xa1, 0x01, 0x02], r#"{"$map":[[1,2]]}"#),
            (
                &[0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                "-18446744073709551616",
            ),
            (&[0xf9, 0x3c, 0x00], "1.0"),
            (&[0x62, 0x22, 0x01], r#""\"\u0001""#),
        ];
        for (cbor, want) in cases {
            let mut s = String::new();
            from_cbor(cbor, &mut s).unwrap();
            assert_eq!(&s, want);
        }
    }
}
