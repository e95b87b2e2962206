//! An incremental Server-Sent Events parser.
//!
//! Follows the WHATWG event-stream rules: lines end in CR, LF or CRLF (a CR
//! at the end of one chunk and an LF at the start of the next are one line
//! end); `field: value` with one optional space after the colon; lines that
//! start with `:` are comments; `data` lines of one event join with LF; a
//! blank line dispatches the event, and an event without data is not
//! dispatched; a UTF-8 byte order mark at the very start is skipped. Chunks
//! may split anywhere, including inside a multi-byte character.
//!
//! At the end of the body, [`SseParser::finish`] hands back the event that
//! was still being assembled (its last line possibly unterminated), marked
//! as unterminated. The specification discards such an event; callers decide
//! what an unterminated final event may still mean (see the adapters).

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field (empty when absent, meaning `message`).
    pub event: String,
    /// The `data` lines joined with LF.
    pub data: String,
    /// The last `id` field seen so far.
    pub id: String,
}

/// The incremental parser.
#[derive(Clone, Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: String,
}

impl SseParser {
    /// A parser at the start of a body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = chunk;
        if !self.started && !bytes.is_empty() {
            // A BOM may itself be split across chunks: buffer until decided.
            self.line.extend_from_slice(bytes);
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return out;
            }
            self.started = true;
            let pending = std::mem::take(&mut self.line);
            let rest = pending.strip_prefix(BOM).unwrap_or(&pending);
            self.scan(rest, &mut out);
            return out;
        }
        if bytes.is_empty() {
            return out;
        }
        if self.after_cr && bytes[0] == b'\n' {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        self.scan(bytes, &mut out);
        out
    }

    fn scan(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        while let Some(pos) = bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.line.extend_from_slice(&bytes[..pos]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
            if bytes[pos] == b'\r' {
                if pos + 1 < bytes.len() {
                    if bytes[pos + 1] == b'\n' {
                        bytes = &bytes[pos + 2..];
                        continue;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            bytes = &bytes[pos + 1..];
        }
        self.line.extend_from_slice(bytes);
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                    id: self.last_id.clone(),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = value.into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"id" if !value.contains('\0') => self.last_id = value.into_owned(),
            _ => {}
        }
    }

    /// Ends the body: returns the event still being assembled, if it has
    /// data (its final line may lack a line end). The specification
    /// discards such an event; it is returned so the caller can decide.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.started = true;
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            let mut ignored = Vec::new();
            self.process_line(&line, &mut ignored);
        }
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parts: &[&[u8]]) -> (Vec<SseEvent>, Option<SseEvent>) {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for part in parts {
            out.extend(parser.feed(part));
        }
        (out, parser.finish())
    }

    #[test]
    fn line_ends_of_every_kind_and_splits() {
        let lf = all(&[b"event: a\ndata: 1\n\ndata: 2\n\n"]).0;
        let cr = all(&[b"event: a\rdata: 1\r\rdata: 2\r\r"]).0;
        let crlf = all(&[b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"]).0;
        let split = all(&[b"event: a\r", b"\ndata: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n"]).0;
        assert_eq!(lf, cr);
        assert_eq!(lf, crlf);
        assert_eq!(lf, split);
        assert_eq!(lf.len(), 2);
        assert_eq!(lf[0].event, "a");
        assert_eq!(lf[0].data, "1");
        assert_eq!(lf[1].event, "");
    }

    #[test]
    fn multi_line_data_comments_ids_and_no_space() {
        let (events, rest) = all(&[
            b"\xEF\xBB",
            b"\xBF: comment\nid: 7\ndata:x\ndata:  y\nevent\n\n",
        ]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "x\n y");
        assert_eq!(events[0].id, "7");
        assert_eq!(events[0].event, "");
        assert_eq!(rest, None);
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_tails_are_returned() {
        let (events, rest) = all(&[b"event: ping\n\ndata: tail"]);
        assert!(events.is_empty());
        assert_eq!(rest.map(|e| e.data), Some("tail".to_owned()));
    }

    proptest::proptest! {
        /// Any split of any input (built from SSE-significant pieces)
        /// yields the events of the unsplit input.
        #[test]
        fn splits_never_change_events(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec!["data: x", "data:\u{e9}", "event: e", ": c", "id: 1", "\r", "\n", "\r\n", "retry: 5", "data"]),
                0..40,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..8),
        ) {
            let text: String = pieces.concat();
            let bytes = text.as_bytes();
            let whole = all(&[bytes]);
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut parts: Vec<&[u8]> = Vec::new();
            let mut from = 0;
            for point in points {
                parts.push(&bytes[from..point]);
                from = point;
            }
            parts.push(&bytes[from..]);
            proptest::prop_assert_eq!(all(&parts), whole);
        }
    }

    #[test]
    fn split_multibyte_characters_survive() {
        let text = "data: \u{2014}\n\n".as_bytes();
        let (events, _) = all(&[&text[..7], &text[7..]]);
        assert_eq!(events[0].data, "\u{2014}");
    }
}
