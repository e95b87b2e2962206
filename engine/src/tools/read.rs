//! `read {path, offset?, limit?}`: a bounded window of a text file's lines.
//!
//! The file is streamed, never loaded whole: lines before `offset` are
//! skipped, the window is kept until `limit` lines or the byte bound is
//! reached, and the rest is only counted and hashed. The content
//! fingerprint of the whole file goes to the read tracker, so a later
//! `edit` or `write` can tell whether the file changed since.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use smith_contract::media::human_size;
use smith_contract::{Media, MediaType};

use serde_json::{Value, json};

use super::CancelCheck;
use super::fsutil::{binary_reason, cap_line, io_error, require_regular};
use super::{
    Access, FingerprintHasher, Mutation, Tool, ToolContext, ToolDefinition, ToolError,
    ToolErrorKind, ToolResult, args,
};

const NAME: &str = "read";

/// The `read` tool.
#[derive(Debug)]
pub struct ReadTool {
    def: ToolDefinition,
}

impl Default for ReadTool {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadTool {
    /// The tool with its definition.
    pub fn new() -> Self {
        ReadTool {
            def: ToolDefinition {
                name: NAME.into(),
                description: "Read a text file. Returns up to 2000 lines or 50 KiB per call; \
                    when more remains, the output ends with the offset to continue from. \
                    Images (PNG, JPEG, GIF, WebP) are attached for you to see; PDFs too where \
                    the model takes them. Other binary files are reported, not shown."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1, "description": "File to read, relative to the working directory or absolute."},
                        "offset": {"type": "integer", "minimum": 1, "description": "1-based line to start at (default 1)."},
                        "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return (default and maximum 2000)."}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                access: Access::ReadOnly,
            },
        }
    }
}

impl Tool for ReadTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn execute(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        run(args, cx).unwrap_or_else(ToolError::into_result)
    }
}

fn run(args: &Value, cx: &ToolContext) -> Result<ToolResult, ToolError> {
    let raw = args::string(NAME, args, "path")?;
    let offset = args::opt_usize(NAME, args, "offset")?.unwrap_or(1).max(1);
    let limits = cx.limits();
    let max_lines = args::opt_usize(NAME, args, "limit")?
        .unwrap_or(limits.read_max_lines)
        .clamp(1, limits.read_max_lines);
    let path = cx.resolve_read(NAME, "path", raw)?;
    let shown = cx.display(&path);
    cx.cancel().check(NAME, &format!("opening {shown}"))?;

    // The text's owner (an editor with unsaved buffers) serves the
    // read: the whole text, so the fingerprint guards a later edit.
    if let Some(files) = cx.file_reads() {
        let text = files.read_text(NAME, &path, &shown, cx)?;
        let size = text.len() as u64;
        let mut reader = std::io::Cursor::new(text.into_bytes());
        return window(&mut reader, size, &path, shown, offset, max_lines, cx);
    }
    let meta = std::fs::metadata(&path).map_err(|e| io_error(NAME, "opening", &shown, &e))?;
    require_regular(NAME, &meta, &shown)?;
    let file = File::open(&path).map_err(|e| io_error(NAME, "opening", &shown, &e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|e| io_error(NAME, "reading", &shown, &e))?;
    if let Some(media_type) = MediaType::sniff(head) {
        return media(&mut reader, media_type, meta.len(), shown, cx);
    }
    window(&mut reader, meta.len(), &path, shown, offset, max_lines, cx)
}

/// An image or PDF (recognized by its magic bytes): one media part for the
/// model after a line naming it, or a refusal saying why and what to do.
fn media(
    reader: &mut impl Read,
    media_type: MediaType,
    size: u64,
    shown: String,
    cx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    let support = cx.media();
    let kind = if media_type.is_image() {
        "image"
    } else {
        "document"
    };
    let label = media_type.label();
    let refuse = |why: String, next: String| {
        ToolError::new(
            ToolErrorKind::Binary,
            format!("read: {shown} is a {label} {kind} ({})", human_size(size)),
            why,
            next,
        )
        .with_extra("path", Value::from(shown.clone()))
        .with_extra("bytes", Value::from(size))
        .with_extra("media_type", Value::from(media_type.mime()))
    };
    if let Some(why) = support.refusal(media_type) {
        let declare = if support.encoder && support.images.is_none() {
            "if it does take images, declare `input \"text\" \"image\"` for it in models.kdl; else "
        } else {
            ""
        };
        return Err(refuse(
            format!("{why}; read hands images and documents to the model only where it takes them"),
            format!(
                "{declare}switch to a model that takes images (`/model`), or describe what you need from the file in text"
            ),
        ));
    }
    if media_type == MediaType::Pdf && !support.pdf {
        let model = if support.model.is_empty() {
            "the active model".to_owned()
        } else {
            support.model.clone()
        };
        return Err(refuse(
            format!("the provider does not send PDFs to {model} as documents"),
            format!(
                "extract the text with a tool, e.g. bash `pdftotext {shown} -` (poppler-utils), then read that"
            ),
        ));
    }
    let cap = media_type.max_bytes();
    if size > cap {
        return Err(refuse(
            format!(
                "it is {} ({size} bytes), over the cap of {} per {kind}; images are never scaled down silently",
                human_size(size),
                human_size(cap)
            ),
            if media_type.is_image() {
                "make a smaller copy (e.g. bash `convert IN -resize 50% OUT.png`) and read that"
                    .into()
            } else {
                format!(
                    "extract the text with a tool, e.g. bash `pdftotext {shown} -`, or split the PDF"
                )
            },
        ));
    }
    cx.cancel().check(NAME, &format!("reading {shown}"))?;
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    reader
        .take(cap + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_error(NAME, "reading", &shown, &e))?;
    if data.len() as u64 > cap {
        return Err(refuse(
            format!(
                "it grew past the cap of {} per {kind} while it was read",
                human_size(cap)
            ),
            "read it again once it stops changing".into(),
        ));
    }
    let part = Media::new(media_type, data).named(shown.clone());
    let dims = part.dimensions();
    let mut text = format!("{shown}: {label} {kind}");
    if let Some((w, h)) = dims {
        text.push_str(&format!(", {w}×{h}"));
    }
    text.push_str(&format!(
        ", {}, attached.",
        human_size(part.bytes().len() as u64)
    ));
    let mut details = json!({
        "path": shown,
        "media_type": media_type.mime(),
        "bytes": part.bytes().len(),
        "summary": part.summary(),
    });
    if let Some((w, h)) = dims {
        details["width"] = Value::from(w);
        details["height"] = Value::from(h);
    }
    let mut result = ToolResult::ok(text, details, Mutation::NotApplied);
    result.media.push(part);
    Ok(result)
}

/// The window of `offset` and `max_lines` lines of the text `reader`
/// yields (`size` bytes in all), with the fingerprint of the whole text
/// recorded for `path`.
fn window(
    reader: &mut impl BufRead,
    size: u64,
    path: &std::path::Path,
    shown: String,
    offset: usize,
    max_lines: usize,
    cx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    let limits = cx.limits();
    let head = reader
        .fill_buf()
        .map_err(|e| io_error(NAME, "reading", &shown, &e))?;
    if let Some(reason) = binary_reason(head) {
        return Err(ToolError::new(
            ToolErrorKind::Binary,
            format!("read: {shown} is a binary file ({size} bytes)"),
            format!("{reason}; read shows text only"),
            "inspect it with bash (e.g. `file`, `xxd | head`) if its bytes matter",
        )
        .with_extra("path", Value::from(shown))
        .with_extra("bytes", Value::from(size)));
    }

    let mut hasher = FingerprintHasher::default();
    let mut line = Vec::new();
    let mut out = String::new();
    let mut line_no = 0usize;
    let mut shown_lines = 0usize;
    let mut window_full = false;
    let mut byte_bound_hit = false;
    let mut capped_lines = 0usize;
    // A line is held only up to what its capped form can show (4 bytes a
    // character at most, and the line end): a file of one 1 GiB line costs
    // this much memory, not 1 GiB. The rest is hashed and counted, then
    // dropped.
    let keep = limits.read_line_chars.saturating_mul(4).saturating_add(2);
    loop {
        line.clear();
        let (n, dropped_chars) = next_line(reader, &mut line, keep, &mut hasher)
            .map_err(|e| io_error(NAME, "reading", &shown, &e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no.is_multiple_of(4096) {
            cx.cancel().check(NAME, &format!("finishing {shown}"))?;
        }
        if line_no < offset || window_full {
            continue;
        }
        let mut text = &line[..];
        if let Some(rest) = text.strip_suffix(b"\n") {
            text = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        let decoded = String::from_utf8_lossy(text);
        let capped = if dropped_chars == 0 {
            cap_line(&decoded, limits.read_line_chars)
        } else {
            // Part of the line was never held: `keep` bytes hold more than
            // the cap's characters, so the cut falls inside what was kept.
            let shown_part = decoded
                .char_indices()
                .nth(limits.read_line_chars)
                .map_or(&decoded[..], |(cut, _)| &decoded[..cut]);
            let more = decoded[shown_part.len()..].chars().count() + dropped_chars;
            std::borrow::Cow::Owned(format!(
                "{shown_part}… [line truncated: {more} more characters]"
            ))
        };
        if capped.len() != decoded.len() || dropped_chars > 0 {
            capped_lines += 1;
        }
        let needed = capped.len() + usize::from(shown_lines > 0);
        if shown_lines > 0 && out.len() + needed > limits.read_max_bytes {
            window_full = true;
            byte_bound_hit = true;
            continue;
        }
        if shown_lines > 0 {
            out.push('\n');
        }
        out.push_str(&capped);
        shown_lines += 1;
        if shown_lines == max_lines {
            window_full = true;
        }
    }
    let total = line_no;
    let fingerprint = hasher.finish();
    cx.reads().record(path, fingerprint);

    if offset > total.max(1) {
        return Err(ToolError::new(
            ToolErrorKind::OffsetOutOfRange,
            format!("read: offset {offset} is past the end of {shown}, which has {total} lines"),
            "the window must start at an existing line",
            format!("use an offset between 1 and {}", total.max(1)),
        )
        .with_extra("path", Value::from(shown))
        .with_extra("total_lines", Value::from(total)));
    }
    let end = if shown_lines == 0 {
        offset - 1
    } else {
        offset + shown_lines - 1
    };
    let truncated = end < total;
    if total == 0 {
        out.push_str("[empty file]");
    } else if truncated {
        let why = if byte_bound_hit {
            format!(" ({} KiB limit)", limits.read_max_bytes / 1024)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\n\n[Showing lines {offset}-{end} of {total}{why}. Use offset={} to continue.]",
            end + 1
        ));
    }
    if capped_lines > 0 {
        out.push_str(&format!(
            "\n[{capped_lines} line(s) longer than {} characters were truncated.]",
            limits.read_line_chars
        ));
    }
    Ok(ToolResult::ok(
        out,
        json!({
            "path": shown,
            "start_line": offset,
            "end_line": end,
            "total_lines": total,
            "truncated": truncated,
            "bytes": fingerprint.len,
        }),
        Mutation::NotApplied,
    ))
}

/// Reads one line (through its `\n`, or to the end of the file) from
/// `reader`, hashing every byte into `hasher` and appending at most `keep`
/// bytes of it to `line`: the bytes read, and the characters (UTF-8 lead
/// bytes) of the part that was not kept.
fn next_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    keep: usize,
    hasher: &mut FingerprintHasher,
) -> std::io::Result<(usize, usize)> {
    let mut read = 0usize;
    let mut dropped_chars = 0usize;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((read, dropped_chars));
        }
        let (chunk, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        hasher.update(chunk);
        let room = keep.saturating_sub(line.len()).min(chunk.len());
        line.extend_from_slice(&chunk[..room]);
        dropped_chars += chunk[room..]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80 && b != b'\n' && b != b'\r')
            .count();
        let n = chunk.len();
        reader.consume(n);
        read += n;
        if ends {
            return Ok((read, dropped_chars));
        }
    }
}
