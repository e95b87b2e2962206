//! The JSONL dump: one JSON object per line, for inspection and interchange.
//! It is not the persistence format; [`import`] turns a dump back into the
//! exact bytes of the file it came from (for files written by this build).
//!
//! Lines, in file order:
//!
//! ```text
//! {"type":"header","format":1,"id":"<32 hex>","created_ms":N}
//! {"type":"origin","session":"<32 hex>","leaf":N}
//! {"type":"entry","id":N,"parent":N,"timestamp_ms":N,"kind":"user_message","pairing":N,"content":<JSON>}
//! {"type":"entry",...,"kind":99,...,"content_cbor":"<base64>"}
//! {"type":"frame","kind":N,"flags":N,"content_len":N,"link":N,"payload":"<base64>"}
//! ```
//!
//! An entry's content appears as JSON (`content`) when converting it to JSON
//! and back gives the same CBOR bytes, otherwise as standard base64 of its
//! CBOR (`content_cbor`); unknown entry kinds appear by code. Frames of
//! unknown kinds, and entry frames that are not canonical entries, appear
//! whole as `frame` lines with their stored payload in base64. Corrupt
//! frames and a torn tail are not part of a dump; the returned report counts
//! them.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::compress::Compressor;
use crate::entry::EntryKind;
use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{self, EntryHead, KIND_ENTRY, KIND_ORIGIN, SessionId};
use crate::scan::{Limits, ScanReport};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The dump's output buffer: lines are written into it and handed to the
/// writer in blocks of at least [`FLUSH_AT`] bytes, so the writer sees a few
/// large writes whatever the number of lines. An entry written as JSON that
/// turns out not to round-trip is cut back from it before anything reaches
/// the writer.
struct Lines<'w, W: Write> {
    buf: Vec<u8>,
    out: &'w mut W,
    what: &'w str,
}

/// Block size handed to the writer.
const FLUSH_AT: usize = 256 * 1024;

impl<W: Write> Lines<'_, W> {
    /// Ends a line and passes full blocks on. A buffer that one very large
    /// entry grew past four blocks is let go, so one entry never pins its
    /// size for the rest of the dump.
    fn end_line(&mut self) -> Result<()> {
        self.buf.push(b'\n');
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
            if self.buf.capacity() > 4 * FLUSH_AT {
                self.buf = Vec::with_capacity(2 * FLUSH_AT);
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let r = self.out.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|e| StoreError::new(ErrorKind::Io, format!("could not write the dump of {}: {e}; check the output path and free disk space", self.what)))
    }
}

/// Appends `s` as a JSON string: runs of clean bytes are copied whole
/// (see [`smith_codec::json::push_json_string`]), with serde_json's escapes.
fn push_str(out: &mut Vec<u8>, s: &str) {
    smith_codec::json::push_json_string(out, s);
}

/// Appends `bytes` as a JSON string of standard base64.
fn push_b64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let at = out.len();
    let n = base64::encoded_len(bytes.len(), true).unwrap_or(0);
    out.resize(at + n, 0);
    let written = B64.encode_slice(bytes, &mut out[at..]).unwrap_or(0);
    out.truncate(at + written);
    out.push(b'"');
}

/// Appends a finite float exactly as serde_json writes it (shortest
/// round-trip digits).
fn push_f64(out: &mut Vec<u8>, x: f64) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &x);
}

/// One open container while an entry's content is written.
#[derive(Clone, Copy)]
struct Open {
    /// Items (for a map: keys and values) still to come.
    remaining: u64,
    map: bool,
    /// Items written so far, for the separators.
    written: u64,
}

/// Appends an entry's canonical CBOR `content` as JSON text, when reading
/// that JSON back gives the same bytes (the dump's `content` form): returns
/// `false`, with `out` as it was, for content that does not round-trip
/// (non-canonical CBOR, byte strings, tags, undefined, simple values, NaN
/// and infinities, non-text map keys, nesting or item counts past the
/// codec's limits). The text is what serde_json writes for the same value:
/// integers below -2^63 and floats as its shortest round-trip floats.
///
/// One pass over the CBOR with the strict decoder, which enforces
/// canonical form (shortest heads and floats, definite lengths, sorted
/// unique keys); nothing is allocated beyond `out`'s growth.
fn push_content(out: &mut Vec<u8>, stack: &mut Vec<Open>, content: &[u8]) -> bool {
    let start = out.len();
    stack.clear();
    if write_content(out, stack, content).is_none() {
        out.truncate(start);
        return false;
    }
    true
}

fn write_content(out: &mut Vec<u8>, stack: &mut Vec<Open>, content: &[u8]) -> Option<()> {
    use smith_codec::{Decoder, Token};
    let mut d = Decoder::strict(content);
    loop {
        // Separators and the key/value colon before the next item.
        let mut is_key = false;
        if let Some(top) = stack.last_mut() {
            if top.map {
                if top.written.is_multiple_of(2) {
                    is_key = true;
                    if top.written > 0 {
                        out.push(b',');
                    }
                } else {
                    out.push(b':');
                }
            } else if top.written > 0 {
                out.push(b',');
            }
            top.written += 1;
        }
        let tok = d.next().ok()?;
        if is_key && !matches!(tok, Token::Text(_)) {
            return None;
        }
        let mut opened = false;
        match tok {
            Token::Unsigned(n) => smith_codec::json::push_json_u64(out, n),
            Token::Negative(n) => match i64::try_from(n) {
                Ok(_) => {
                    out.push(b'-');
                    smith_codec::json::push_json_u64(out, n + 1);
                }
                // Below -2^63 serde_json reads the number as a float.
                Err(_) => push_f64(out, -((u128::from(n) + 1) as f64)),
            },
            Token::Float(x) if x.is_finite() => push_f64(out, x),
            Token::Text(s) => push_str(out, s),
            Token::Array(n) => {
                out.push(b'[');
                if n == 0 {
                    out.push(b']');
                } else {
                    stack.push(Open {
                        remaining: n,
                        map: false,
                        written: 0,
                    });
                    opened = true;
                }
            }
            Token::Map(n) => {
                out.push(b'{');
                if n == 0 {
                    out.push(b'}');
                } else {
                    stack.push(Open {
                        remaining: n * 2,
                        map: true,
                        written: 0,
                    });
                    opened = true;
                }
            }
            Token::Bool(true) => out.extend_from_slice(b"true"),
            Token::Bool(false) => out.extend_from_slice(b"false"),
            Token::Null => out.extend_from_slice(b"null"),
            _ => return None,
        }
        if !opened {
            // Close every container this item completes.
            loop {
                let Some(top) = stack.last_mut() else {
                    // The top-level item is complete: nothing may follow.
                    return d.is_at_end().then_some(());
                };
                top.remaining -= 1;
                if top.remaining > 0 {
                    break;
                }
                out.push(if top.map { b'}' } else { b']' });
                stack.pop();
            }
        }
    }
}

/// Writes the dump of a session file's bytes to `out`, streaming: lines go
/// out in blocks as the frames are read, and memory stays that of one
/// entry whatever the file's size.
///
/// # Errors
/// Header and frame-reader errors, and write failures.
pub fn dump(bytes: &[u8], limits: &Limits, what: &str, out: &mut impl Write) -> Result<ScanReport> {
    let header = format::decode_header(bytes, what)?;
    let mut lines = Lines {
        buf: Vec::with_capacity(2 * FLUSH_AT),
        out,
        what,
    };
    let b = &mut lines.buf;
    b.extend_from_slice(b"{\"type\":\"header\",\"format\":");
    smith_codec::json::push_json_u64(b, u64::from(format::FORMAT_VERSION));
    b.extend_from_slice(b",\"id\":");
    push_str(b, &header.id.to_hex());
    b.extend_from_slice(b",\"created_ms\":");
    smith_codec::json::push_json_u64(b, header.created_ms);
    b.push(b'}');
    lines.end_line()?;
    // Open containers of the entry being written; the decoder bounds the
    // depth, so this never grows past it.
    let mut stack = Vec::with_capacity(smith_codec::MAX_DEPTH as usize + 1);
    // The frames are checked and the entries decompressed on a second
    // thread, ahead of the lines written here.
    let start = header.header_len as usize;
    let report = crate::ahead::scan_entries(bytes, start, limits, what, |v, entry| {
        let b = &mut lines.buf;
        let mut done = false;
        if v.kind == KIND_ORIGIN && v.flags == 0 && v.link == 0 {
            if let Some((s, leaf)) = format::decode_origin(v.payload) {
                b.extend_from_slice(b"{\"type\":\"origin\",\"session\":");
                push_str(b, &s.to_hex());
                b.extend_from_slice(b",\"leaf\":");
                smith_codec::json::push_json_u64(b, leaf);
                b.push(b'}');
                done = true;
            }
        } else if let Some((h, content)) = entry {
            b.extend_from_slice(b"{\"type\":\"entry\",\"id\":");
            smith_codec::json::push_json_u64(b, h.id);
            b.extend_from_slice(b",\"parent\":");
            smith_codec::json::push_json_u64(b, h.parent);
            b.extend_from_slice(b",\"timestamp_ms\":");
            smith_codec::json::push_json_u64(b, h.timestamp_ms);
            b.extend_from_slice(b",\"kind\":");
            match EntryKind::from_code(h.kind).name() {
                Some(n) => push_str(b, n),
                None => smith_codec::json::push_json_u64(b, u64::from(h.kind)),
            }
            b.extend_from_slice(b",\"pairing\":");
            smith_codec::json::push_json_u64(b, h.pairing);
            b.extend_from_slice(b",\"content\":");
            if !push_content(b, &mut stack, content) {
                b.truncate(b.len() - b"\"content\":".len());
                b.extend_from_slice(b"\"content_cbor\":");
                push_b64(b, content);
            }
            b.push(b'}');
            done = true;
        }
        if !done {
            b.extend_from_slice(b"{\"type\":\"frame\",\"kind\":");
            smith_codec::json::push_json_u64(b, u64::from(v.kind));
            b.extend_from_slice(b",\"flags\":");
            smith_codec::json::push_json_u64(b, u64::from(v.flags));
            b.extend_from_slice(b",\"content_len\":");
            smith_codec::json::push_json_u64(b, u64::from(v.content_len));
            b.extend_from_slice(b",\"link\":");
            smith_codec::json::push_json_u64(b, v.link);
            b.extend_from_slice(b",\"payload\":");
            push_b64(b, v.payload);
            b.push(b'}');
        }
        lines.end_line()
    })?;
    lines.flush()?;
    Ok(report)
}

fn bad(line_no: usize, why: impl std::fmt::Display) -> StoreError {
    StoreError::new(
        ErrorKind::Invalid,
        format!(
            "dump line {line_no}: {why}; a dump holds one JSON object per line as written by `smith session dump` (see docs/session-format.md)"
        ),
    )
}

fn field_u64(o: &Map<String, Value>, k: &str, line_no: usize) -> Result<u64> {
    o.get(k).and_then(Value::as_u64).ok_or_else(|| {
        bad(
            line_no,
            format!("field {k:?} is missing or not a non-negative integer"),
        )
    })
}

fn field_str<'a>(o: &'a Map<String, Value>, k: &str, line_no: usize) -> Result<&'a str> {
    o.get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(line_no, format!("field {k:?} is missing or not a string")))
}

fn field_b64(o: &Map<String, Value>, k: &str, line_no: usize) -> Result<Vec<u8>> {
    B64.decode(field_str(o, k, line_no)?)
        .map_err(|e| bad(line_no, format!("field {k:?} is not standard base64: {e}")))
}

/// Rebuilds session file bytes from a dump. Entry frames are re-encoded with
/// this build's writer, so a dump of a file this build wrote imports to the
/// same bytes.
///
/// # Errors
/// `Invalid` naming the line for any malformed line.
pub fn import(input: impl BufRead) -> Result<Vec<u8>> {
    import_bounded(input, MAX_LINE)
}

/// The longest dump line [`import`] reads: room for an entry of the
/// largest content a session holds (64 MiB) written as JSON.
pub const MAX_LINE: usize = 128 * 1024 * 1024;

/// [`import`] with lines of at most `max_line` bytes: a longer line (input
/// that is not a dump, such as `/dev/zero`) is refused once that many bytes
/// are read, never held whole. Entry ids must be unique and a parent must
/// come before its children, as in every dump smith writes.
///
/// # Errors
/// As [`import`].
pub fn import_bounded(mut input: impl BufRead, max_line: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut comp = Compressor::new()?;
    let mut offsets: HashMap<u64, (u64, usize)> = HashMap::new();
    let mut seen_header = false;
    let mut map = Vec::new();
    let mut raw = Vec::new();
    let mut line_no = 0usize;
    loop {
        line_no += 1;
        raw.clear();
        if !read_line(&mut input, &mut raw, max_line, line_no)? {
            break;
        }
        let line =
            std::str::from_utf8(&raw).map_err(|e| bad(line_no, format!("not UTF-8 text ({e})")))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad(line_no, format!("not JSON ({e})")))?;
        let o = v
            .as_object()
            .ok_or_else(|| bad(line_no, "not a JSON object"))?;
        let ty = field_str(o, "type", line_no)?;
        if !seen_header {
            if ty != "header" {
                return Err(bad(line_no, "the first line must be the header line"));
            }
            let fmt = field_u64(o, "format", line_no)?;
            if fmt != u64::from(format::FORMAT_VERSION) {
                return Err(bad(
                    line_no,
                    format!(
                        "format {fmt} is not supported (this smith writes format {})",
                        format::FORMAT_VERSION
                    ),
                ));
            }
            let id = SessionId::from_hex(field_str(o, "id", line_no)?)
                .ok_or_else(|| bad(line_no, "field \"id\" is not 32 hex digits"))?;
            out.extend_from_slice(&format::encode_header(
                id,
                field_u64(o, "created_ms", line_no)?,
            ));
            seen_header = true;
            continue;
        }
        match ty {
            "origin" => {
                let s = SessionId::from_hex(field_str(o, "session", line_no)?)
                    .ok_or_else(|| bad(line_no, "field \"session\" is not 32 hex digits"))?;
                let mut p = Vec::new();
                format::encode_origin(&mut p, s, field_u64(o, "leaf", line_no)?);
                format::encode_frame(&mut out, KIND_ORIGIN, 0, p.len() as u32, 0, &p);
            }
            "entry" => {
                let kind = match o.get("kind") {
                    Some(Value::String(n)) => EntryKind::from_name(n)
                        .ok_or_else(|| bad(line_no, format!("unknown entry kind name {n:?}")))?
                        .code(),
                    Some(Value::Number(n)) => n
                        .as_u64()
                        .and_then(|c| u32::try_from(c).ok())
                        .ok_or_else(|| bad(line_no, "entry kind code out of range"))?,
                    _ => return Err(bad(line_no, "field \"kind\" is missing")),
                };
                let head = EntryHead {
                    id: field_u64(o, "id", line_no)?,
                    parent: field_u64(o, "parent", line_no)?,
                    timestamp_ms: field_u64(o, "timestamp_ms", line_no)?,
                    kind,
                    pairing: field_u64(o, "pairing", line_no)?,
                };
                let content = if let Some(j) = o.get("content") {
                    let mut c = Vec::new();
                    smith_codec::json::to_cbor(&j.to_string(), &mut c).map_err(|e| {
                        bad(line_no, format!("content cannot be converted to CBOR: {e}"))
                    })?;
                    c
                } else {
                    field_b64(o, "content_cbor", line_no)?
                };
                map.clear();
                format::encode_entry(&mut map, &head, &content);
                let here = out.len() as u64;
                if head.id == 0 {
                    return Err(bad(line_no, "entry id 0 is reserved for \"no parent\""));
                }
                if let Some((_, first)) = offsets.get(&head.id) {
                    return Err(bad(
                        line_no,
                        format!(
                            "entry id {} appears a second time (first on line {first}); every entry of a session has its own id",
                            head.id
                        ),
                    ));
                }
                let link = if head.parent == 0 {
                    0
                } else {
                    match offsets.get(&head.parent) {
                        Some((p, _)) => here - p,
                        None => {
                            return Err(bad(
                                line_no,
                                format!(
                                    "entry {} names parent {}, which no earlier line holds; a parent comes before its children",
                                    head.id, head.parent
                                ),
                            ));
                        }
                    }
                };
                comp.frame(&mut out, KIND_ENTRY, link, &map);
                offsets.insert(head.id, (here, line_no));
            }
            "frame" => {
                let kind = u8::try_from(field_u64(o, "kind", line_no)?)
                    .map_err(|_| bad(line_no, "frame kind over 255"))?;
                let flags = u8::try_from(field_u64(o, "flags", line_no)?)
                    .map_err(|_| bad(line_no, "frame flags over 255"))?;
                let content_len = u32::try_from(field_u64(o, "content_len", line_no)?)
                    .map_err(|_| bad(line_no, "content_len over 2^32"))?;
                let payload = field_b64(o, "payload", line_no)?;
                format::encode_frame(
                    &mut out,
                    kind,
                    flags,
                    content_len,
                    field_u64(o, "link", line_no)?,
                    &payload,
                );
            }
            other => return Err(bad(line_no, format!("unknown line type {other:?}"))),
        }
    }
    if !seen_header {
        return Err(bad(0, "the dump is empty"));
    }
    Ok(out)
}

/// Reads one line (without its end) into `line`: `false` at the end of the
/// input. A line over `max` bytes is refused once `max` bytes are read.
fn read_line(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
    line_no: usize,
) -> Result<bool> {
    let io = |e: std::io::Error| {
        StoreError::new(
            ErrorKind::Io,
            format!("could not read dump line {line_no}: {e}"),
        )
    };
    let mut any = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let (part, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        if line.len() + part.len() > max {
            return Err(bad(
                line_no,
                format!(
                    "the line is longer than {} MiB, more than any entry a dump holds (this is not a dump)",
                    max / (1024 * 1024)
                ),
            ));
        }
        line.extend_from_slice(part);
        let used = part.len() + usize::from(ends);
        input.consume(used);
        if ends {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_support;
    use crate::format::{FLAG_ZSTD, SessionId};
    use crate::{scan, session};
    use serde_json::json;
    use smith_codec::Encoder;

    /// The dump as it was written through serde_json values, kept as the
    /// reference the streaming writer must match byte for byte.
    fn reference_content_json(content: &[u8]) -> Option<Value> {
        let mut text = String::new();
        smith_codec::json::from_cbor(content, &mut text).ok()?;
        let mut back = Vec::new();
        smith_codec::json::to_cbor(&text, &mut back).ok()?;
        if back != content {
            return None;
        }
        serde_json::from_str(&text).ok()
    }

    fn reference_dump(bytes: &[u8], limits: &Limits) -> Vec<u8> {
        let mut out = Vec::new();
        let mut line = |v: &Value| {
            serde_json::to_writer(&mut out, v).expect("write");
            out.push(b'\n');
        };
        let header = format::decode_header(bytes, "t").expect("header");
        line(
            &json!({"type": "header", "format": format::FORMAT_VERSION, "id": header.id.to_hex(), "created_ms": header.created_ms}),
        );
        let mut dctx = session::decompressor("t").expect("zstd");
        let mut scratch = Vec::new();
        scan::scan(bytes, header.header_len as usize, limits, "t", |v| {
            let l = if v.kind == KIND_ORIGIN && v.flags == 0 && v.link == 0 {
                format::decode_origin(v.payload)
                    .map(|(s, leaf)| json!({"type": "origin", "session": s.to_hex(), "leaf": leaf}))
            } else if v.kind == KIND_ENTRY {
                crate::compress::read_entry(&v, &mut dctx, &mut scratch).map(|(h, content)| {
                    let mut o = Map::new();
                    o.insert("type".into(), json!("entry"));
                    o.insert("id".into(), json!(h.id));
                    o.insert("parent".into(), json!(h.parent));
                    o.insert("timestamp_ms".into(), json!(h.timestamp_ms));
                    let kind = EntryKind::from_code(h.kind);
                    o.insert(
                        "kind".into(),
                        kind.name().map_or(json!(h.kind), |n| json!(n)),
                    );
                    o.insert("pairing".into(), json!(h.pairing));
                    match reference_content_json(content) {
                        Some(j) => o.insert("content".into(), j),
                        None => o.insert("content_cbor".into(), json!(B64.encode(content))),
                    };
                    Value::Object(o)
                })
            } else {
                None
            };
            line(&l.unwrap_or_else(|| {
                json!({"type": "frame", "kind": v.kind, "flags": v.flags, "content_len": v.content_len, "link": v.link, "payload": B64.encode(v.payload)})
            }));
            Ok(())
        })
        .expect("scan");
        out
    }

    fn enc(f: impl FnOnce(&mut Encoder<'_>)) -> Vec<u8> {
        let mut c = Vec::new();
        f(&mut Encoder::new(&mut c));
        c
    }

    /// Nested arrays `depth` deep around a 1.
    fn nested(depth: usize) -> Vec<u8> {
        let mut c = vec![0x81; depth];
        c.push(0x01);
        c
    }

    /// Contents covering every path of the JSON writer and every reason to
    /// fall back to base64.
    fn contents() -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        // Floats: every width, integral, tiny, huge, subnormal, negative zero,
        // and the non-finite ones (base64).
        for x in [
            0.5,
            -0.0,
            0.0,
            1.0,
            1e16,
            1e15,
            1.5e-7,
            1e-5,
            1e-4,
            123_456.789,
            0.300_000_000_000_000_04,
            f64::from(1.1f32),
            65504.0,
            5.960_464_477_539_063e-8,
            1e300,
            -2.5e-300,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            123_456_789_012_345_680.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            all.push(enc(|e| {
                e.array(1).f64(x);
            }));
        }
        // Integers at the edges of u64 and i64 (serde_json reads those below
        // -2^63 as floats).
        for n in [
            0,
            23,
            24,
            255,
            256,
            65_535,
            65_536,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            all.push(enc(|e| {
                e.u64(n);
            }));
            all.push(enc(|e| {
                e.negative(n);
            }));
        }
        for n in [i64::MAX as u64 - 1, i64::MAX as u64, i64::MAX as u64 + 1] {
            all.push(enc(|e| {
                e.negative(n);
            }));
        }
        // Strings: every escape, every control character, DEL, quotes,
        // non-ASCII, empty.
        let controls: String = (0u8..0x20).map(char::from).collect();
        for s in [
            "",
            "plain",
            "quote \" backslash \\ slash / del \u{7f}",
            "tab\tnewline\ncarriage\rback\u{8}form\u{c}",
            controls.as_str(),
            "ünïcödé — 日本語 😀",
            "\u{2028}\u{2029}",
        ] {
            all.push(enc(|e| {
                e.map(1).str(s).str(s);
            }));
        }
        // Text longer than the dump's output block, with escapes and
        // multibyte characters at every offset of the escaper's 8-byte
        // words, so runs of clean bytes, escapes and UTF-8 sequences
        // straddle word and block boundaries.
        let pieces = [
            "word ",
            "\n",
            "\"q\"",
            "\\",
            "\u{1}",
            "\u{1f}",
            "ü",
            "日本",
            "😀",
            "\u{2028}",
            "abcdefghi",
        ];
        let mut long = String::new();
        let mut x: u32 = 7;
        while long.len() < FLUSH_AT + 4096 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            long.push_str(pieces[(x >> 16) as usize % pieces.len()]);
        }
        all.push(enc(|e| {
            e.map(1).str("content").str(&long);
        }));
        // Containers: empty, nested maps and arrays, canonical key order
        // (shorter keys first), the literals.
        all.push(enc(|e| {
            e.map(0);
        }));
        all.push(enc(|e| {
            e.array(0);
        }));
        all.push(enc(|e| {
            e.map(4)
                .str("a")
                .array(3)
                .bool(true)
                .bool(false)
                .null()
                .str("b")
                .map(1)
                .str("x")
                .array(0)
                .str("aa")
                .map(0)
                .str("ab")
                .array(2)
                .map(0)
                .array(1)
                .u64(7);
        }));
        for depth in [1, 60, 62, 63, 64, 65, 66, 70, 130] {
            all.push(nested(depth));
        }
        // Not JSON-native, or not canonical: base64.
        all.push(enc(|e| {
            e.bytes(b"raw");
        }));
        all.push(enc(|e| {
            e.tag(1).u64(5);
        }));
        all.push(enc(|e| {
            e.undefined();
        }));
        all.push(enc(|e| {
            e.simple(16);
        }));
        all.push(enc(|e| {
            e.map(1).u64(1).u64(2);
        }));
        all.push(vec![0xa2, 0x61, b'b', 0x01, 0x61, b'a', 0x02]); // unsorted keys
        all.push(vec![0xa2, 0x61, b'a', 0x01, 0x61, b'a', 0x02]); // repeated key
        all.push(vec![0x18, 0x05]); // wide head
        all.push(vec![0x9f, 0x01, 0xff]); // indefinite array
        all.push(vec![0x7f, 0x61, b'a', 0xff]); // indefinite text
        all.push(vec![0xfa, 0x3f, 0x80, 0x00, 0x00]); // 1.0 as f32
        all.push(vec![0x62, 0xff, 0xfe]); // invalid UTF-8
        all.push(vec![0x01, 0x02]); // trailing item
        all.push(vec![0x82, 0x01]); // truncated
        all.push(Vec::new()); // empty
        // Many items: past the codec's item limit (base64) and just under.
        for n in [(1u64 << 20) - 1, 1 << 20] {
            let mut c = enc(|e| {
                e.array(n);
            });
            c.resize(c.len() + n as usize, 0x00);
            all.push(c);
        }
        all
    }

    /// A file of every content above as entries (small ones plain, large
    /// ones compressed), representative entries, an origin, unknown frame
    /// and entry kinds, entry frames that are not canonical entries, and a
    /// whole-payload compressed entry.
    fn fixture() -> Vec<u8> {
        let mut file = format::encode_header(SessionId([7; 16]), 1_700_000_000_123).to_vec();
        let mut p = Vec::new();
        format::encode_origin(&mut p, SessionId([9; 16]), 42);
        format::encode_frame(&mut file, KIND_ORIGIN, 0, p.len() as u32, 0, &p);
        let mut comp = Compressor::new().expect("zstd");
        let mut map = Vec::new();
        let mut id = 0u64;
        let mut push = |file: &mut Vec<u8>, kind: u32, content: &[u8]| {
            id += 1;
            let head = EntryHead {
                id,
                parent: id - 1,
                timestamp_ms: 1_700_000_000_000 + id,
                kind,
                pairing: id % 5,
            };
            map.clear();
            format::encode_entry(&mut map, &head, content);
            comp.frame(file, KIND_ENTRY, 0, &map);
        };
        for c in contents() {
            push(&mut file, EntryKind::Metadata.code(), &c);
        }
        for (kind, _, c) in bench_support::representative_entries(64) {
            push(&mut file, kind.code(), &c);
        }
        push(
            &mut file,
            4242,
            &enc(|e| {
                e.str("unknown kind");
            }),
        );
        // Large enough to be stored compressed, with escapes throughout.
        let big = "line\twith \"quotes\"\n".repeat(2000);
        push(
            &mut file,
            EntryKind::ToolResult.code(),
            &enc(|e| {
                e.map(1).str("content").str(&big);
            }),
        );
        format::encode_frame(&mut file, 200, 3, 5, 17, b"hello");
        format::encode_frame(&mut file, KIND_ENTRY, 0, 3, 0, b"\x01\x02\x03");
        let m = {
            let head = EntryHead {
                id: 10_000,
                parent: 0,
                timestamp_ms: 9,
                kind: EntryKind::UserMessage.code(),
                pairing: 0,
            };
            let mut m = Vec::new();
            format::encode_entry(
                &mut m,
                &head,
                &enc(|e| {
                    e.str(&big);
                }),
            );
            m
        };
        let z = zstd::bulk::compress(&m, 3).expect("compress");
        format::encode_frame(&mut file, KIND_ENTRY, FLAG_ZSTD, m.len() as u32, 0, &z);
        file
    }

    #[test]
    fn the_streaming_dump_writes_what_the_serde_json_dump_wrote() {
        let file = fixture();
        let limits = Limits::default();
        let want = reference_dump(&file, &limits);
        let mut got = Vec::new();
        dump(&file, &limits, "t", &mut got).expect("dump");
        let (want, got) = (
            String::from_utf8(want).expect("utf8"),
            String::from_utf8(got).expect("utf8"),
        );
        assert_eq!(want.lines().count(), got.lines().count());
        for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
            assert_eq!(g, w, "line {}", i + 1);
        }
        assert_eq!(got, want);
        // Both forms occur, and the dump imports to the same bytes for the
        // entries this build wrote.
        assert!(got.contains("\"content\":[0.5]"), "{got}");
        assert!(got.contains("\"content_cbor\":"));
        assert!(got.contains("\"type\":\"frame\""));
        assert!(got.contains("\"type\":\"origin\""));
    }

    #[test]
    fn the_streaming_dump_matches_on_representative_sessions_and_imports_back() {
        let dir = std::env::temp_dir().join(format!("smith-dump-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("s.smith");
        bench_support::write_session_fast(&path, 2_000_000).expect("write");
        let file = std::fs::read(&path).expect("read");
        let _ = std::fs::remove_dir_all(&dir);
        let mut got = Vec::new();
        dump(&file, &Limits::default(), "t", &mut got).expect("dump");
        assert_eq!(got, reference_dump(&file, &Limits::default()));
        assert_eq!(import(&got[..]).expect("import"), file);
    }

    #[test]
    fn a_failing_writer_is_reported_with_the_file_it_was_dumping() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("no space left"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let err = dump(&fixture(), &Limits::default(), "session x", &mut Full).expect_err("fails");
        let text = err.to_string();
        assert!(
            text.contains("could not write the dump of session x: no space left"),
            "{text}"
        );
        assert!(text.contains("free disk space"), "{text}");
    }
}
