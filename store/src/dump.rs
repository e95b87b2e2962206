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
use serde_json::{Map, Value, json};

use crate::compress::Compressor;
use crate::entry::EntryKind;
use crate::error::{ErrorKind, Result, StoreError};
use crate::format::{self, EntryHead, KIND_ENTRY, KIND_ORIGIN, SessionId};
use crate::scan::{self, Limits, ScanReport};
use crate::session;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn content_json(content: &[u8]) -> Option<Value> {
    let mut text = String::new();
    smith_codec::json::from_cbor(content, &mut text).ok()?;
    let mut back = Vec::new();
    smith_codec::json::to_cbor(&text, &mut back).ok()?;
    if back != content {
        return None;
    }
    serde_json::from_str(&text).ok()
}

fn write_line(out: &mut impl Write, v: &Value, what: &str) -> Result<()> {
    serde_json::to_writer(&mut *out, v)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| StoreError::new(ErrorKind::Io, format!("could not write the dump of {what}: {e}; check the output path and free disk space")))
}

/// Writes the dump of a session file's bytes to `out`.
///
/// # Errors
/// Header and frame-reader errors, and write failures.
pub fn dump(bytes: &[u8], limits: &Limits, what: &str, out: &mut impl Write) -> Result<ScanReport> {
    let header = format::decode_header(bytes, what)?;
    write_line(
        out,
        &json!({"type": "header", "format": format::FORMAT_VERSION, "id": header.id.to_hex(), "created_ms": header.created_ms}),
        what,
    )?;
    let mut dctx = session::decompressor(what)?;
    let mut scratch = Vec::new();
    scan::scan(bytes, header.header_len as usize, limits, what, |v| {
        let line = if v.kind == KIND_ORIGIN && v.flags == 0 && v.link == 0 {
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
                match content_json(content) {
                    Some(j) => o.insert("content".into(), j),
                    None => o.insert("content_cbor".into(), json!(B64.encode(content))),
                };
                Value::Object(o)
            })
        } else {
            None
        };
        let line = line.unwrap_or_else(|| {
            json!({"type": "frame", "kind": v.kind, "flags": v.flags, "content_len": v.content_len, "link": v.link, "payload": B64.encode(v.payload)})
        });
        write_line(out, &line, what)
    })
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
