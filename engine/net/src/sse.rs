//! An incremental `text/event-stream` parser.
//!
//! It follows the "interpreting an event stream" rules of the WHATWG HTML
//! specification: lines end in CR, LF or CRLF (a CR at the end of one chunk
//! and an LF at the start of the next are one line ending); one leading BOM
//! is skipped; lines starting with `:` are comments; a line without a colon
//! is a field name with an empty value; one space after the colon is
//! stripped; `data` lines are joined with `\n`; `event` names the event;
//! `id` sets the last event ID unless it contains NUL; `retry` sets the
//! reconnection time when it is all ASCII digits; unknown fields are
//! ignored; a blank line dispatches the event if it has data.
//!
//! The parser is fed bytes in whatever pieces they arrive in; the events it
//! yields do not depend on where the pieces were cut. At the end of the
//! stream, [`SseParser::finish`] says whether an event was left incomplete
//! (the specification discards it; a provider should treat the stream as cut
//! off). Lines and events are bounded; exceeding a bound is an error naming
//! it.

use std::fmt;

use crate::body::{Body, BodyEvent, Outcome};

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type: the last `event:` value, or `"message"`.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event ID set by an `id:` line (kept across events).
    pub last_event_id: String,
}

/// How a stream ended, from [`SseParser::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SseEnd {
    /// The stream ended on an event boundary.
    Clean,
    /// The stream ended inside an event, which was not dispatched.
    Incomplete {
        /// Bytes of a line that had no line ending.
        partial_line_bytes: usize,
        /// Whether field lines had been read since the last blank line.
        pending_fields: bool,
    },
}

/// A bound was exceeded; the parser stops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseError {
    what: &'static str,
    limit: usize,
}

impl SseError {
    /// The bound that was exceeded, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an event-stream {} exceeded the limit of {} bytes; the stream is not a well-formed event stream or needs a larger SseLimits bound",
            self.what, self.limit
        )
    }
}

impl std::error::Error for SseError {}

/// Bounds for [`SseParser`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// Longest line, without its line ending (default 4 MiB).
    pub max_line_bytes: usize,
    /// Largest `data` of one event (default 16 MiB).
    pub max_event_bytes: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: 4 * 1024 * 1024,
            max_event_bytes: 16 * 1024 * 1024,
        }
    }
}

/// The incremental parser.
#[derive(Debug, Default)]
pub struct SseParser {
    limits: SseLimits,
    line: Vec<u8>,
    /// The previous byte was a CR, so a leading LF is part of that ending.
    after_cr: bool,
    /// No line has been completed yet (a BOM may lead the first one).
    seen_line: bool,
    data: String,
    event_type: String,
    last_event_id: String,
    retry_ms: Option<u64>,
    pending_fields: bool,
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser with [`SseLimits::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser with the given bounds.
    pub fn with_limits(limits: SseLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// The reconnection time set by the last valid `retry:` line.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The last event ID buffer.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// Parses `bytes`, pushing every event completed by them onto `out`.
    ///
    /// # Errors
    ///
    /// An [`SseError`] when a line or an event exceeds its bound; the parser
    /// then returns the same error for every later call.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.feed_with(bytes, |e| out.push(e.to_owned()))
    }

    /// Parses `bytes`, calling `on_event` with a borrowed view of every event
    /// they complete. Once the parser's buffers have grown to the stream's
    /// longest line and event, this allocates nothing.
    ///
    /// # Errors
    ///
    /// As [`SseParser::feed`].
    pub fn feed_with(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(SseEventRef<'_>),
    ) -> Result<(), SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.push_line_bytes(rest)?;
                    break;
                }
                Some(end) => {
                    self.after_cr = rest[end] == b'\r';
                    if self.line.is_empty() {
                        // The whole line is in `rest`: no copy needed.
                        self.line_done(&rest[..end], &mut on_event)?;
                    } else {
                        self.push_line_bytes(&rest[..end])?;
                        let line = std::mem::take(&mut self.line);
                        let result = self.line_done(&line, &mut on_event);
                        self.line = line;
                        self.line.clear();
                        result?;
                    }
                    rest = &rest[end + 1..];
                }
            }
        }
        Ok(())
    }

    /// Ends the stream. An incomplete event is not dispatched; the result
    /// says whether there was one. The parser is reset for a new stream
    /// (keeping the last event ID and retry time, as a reconnection would).
    pub fn finish(&mut self) -> SseEnd {
        let end = if self.line.is_empty() && !self.pending_fields {
            SseEnd::Clean
        } else {
            SseEnd::Incomplete {
                partial_line_bytes: self.line.len(),
                pending_fields: self.pending_fields,
            }
        };
        self.line.clear();
        self.data.clear();
        self.event_type.clear();
        self.pending_fields = false;
        self.after_cr = false;
        self.seen_line = false;
        end
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.limits.max_line_bytes {
            return Err(self.fail("line", self.limits.max_line_bytes));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn fail(&mut self, what: &'static str, limit: usize) -> SseError {
        let e = SseError { what, limit };
        self.failed = Some(e.clone());
        e
    }

    fn line_done(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEventRef<'_>),
    ) -> Result<(), SseError> {
        if line.len() > self.limits.max_line_bytes {
            return Err(self.fail("line", self.limits.max_line_bytes));
        }
        let mut line = line;
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        self.pending_fields = true;
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&String::from_utf8_lossy(value));
            }
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limits.max_event_bytes {
                    return Err(self.fail("event's data", self.limits.max_event_bytes));
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            b"id" if !value.contains(&0) => {
                self.last_event_id.clear();
                self.last_event_id.push_str(&String::from_utf8_lossy(value));
            }
            b"retry" => {
                if !value.is_empty()
                    && value.iter().all(u8::is_ascii_digit)
                    && let Some(ms) = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse::<u64>().ok())
                {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEventRef<'_>)) {
        self.pending_fields = false;
        if !self.data.is_empty() {
            let data = self.data.strip_suffix('\n').unwrap_or(&self.data);
            let event = if self.event_type.is_empty() {
                "message"
            } else {
                &self.event_type
            };
            on_event(SseEventRef {
                event,
                data,
                last_event_id: &self.last_event_id,
            });
        }
        self.data.clear();
        self.event_type.clear();
    }
}

/// A borrowed view of one event, valid during the callback of
/// [`SseParser::feed_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    /// The event type: the last `event:` value, or `"message"`.
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
    /// The last event ID set by an `id:` line (kept across events).
    pub last_event_id: &'a str,
}

impl SseEventRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> SseEvent {
        SseEvent {
            event: self.event.to_string(),
            data: self.data.to_string(),
            last_event_id: self.last_event_id.to_string(),
        }
    }
}

/// How an event stream read from a [`Body`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseOutcome {
    /// The body's own outcome; `None` when reading stopped early because the
    /// event stream exceeded a bound (then `stream` is that error).
    pub body: Option<Outcome>,
    /// How the event stream ended, or the bound it exceeded.
    pub stream: Result<SseEnd, SseError>,
}

impl SseOutcome {
    /// Whether the body completed and ended on an event boundary.
    pub fn is_complete(&self) -> bool {
        self.body.as_ref().is_some_and(Outcome::is_complete) && self.stream == Ok(SseEnd::Clean)
    }
}

/// One step of an [`SseBody`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseItem {
    /// An event.
    Event(SseEvent),
    /// The end; repeated on every later call.
    End(SseOutcome),
}

/// Events parsed from a response body as its chunks arrive.
#[derive(Debug)]
pub struct SseBody {
    body: Option<Body>,
    parser: SseParser,
    queue: std::collections::VecDeque<SseEvent>,
    scratch: Vec<SseEvent>,
    end: Option<SseOutcome>,
}

impl SseBody {
    /// Reads `body` as an event stream.
    pub fn new(body: Body, limits: SseLimits) -> Self {
        Self {
            body: Some(body),
            parser: SseParser::with_limits(limits),
            queue: std::collections::VecDeque::new(),
            scratch: Vec::new(),
            end: None,
        }
    }

    /// The next event, or the end with the body's and the stream's outcome.
    pub fn next_item(&mut self) -> SseItem {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return SseItem::Event(e);
            }
            if let Some(end) = &self.end {
                return SseItem::End(end.clone());
            }
            let Some(body) = self.body.as_mut() else {
                // Not reached: `end` is set whenever the body is dropped.
                let end = SseOutcome {
                    body: None,
                    stream: Ok(self.parser.finish()),
                };
                self.end = Some(end.clone());
                return SseItem::End(end);
            };
            match body.next_event() {
                BodyEvent::Data(bytes) => {
                    let fed = self.parser.feed(&bytes, &mut self.scratch);
                    self.queue.extend(self.scratch.drain(..));
                    if let Err(e) = fed {
                        // Stop reading: dropping the body ends its thread.
                        self.body = None;
                        self.end = Some(SseOutcome {
                            body: None,
                            stream: Err(e),
                        });
                    }
                }
                BodyEvent::End(outcome) => {
                    self.end = Some(SseOutcome {
                        body: Some(outcome),
                        stream: Ok(self.parser.finish()),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(input: &[u8]) -> (Vec<SseEvent>, SseEnd) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(input, &mut out).unwrap();
        (out, p.finish())
    }

    fn ev(event: &str, data: &str, id: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            last_event_id: id.into(),
        }
    }

    #[test]
    fn whatwg_examples() {
        // "data: YHOO\ndata: +2\ndata: 10\n\n"
        let (e, end) = parse(b"data: YHOO\ndata: +2\ndata: 10\n\n");
        assert_eq!(e, [ev("message", "YHOO\n+2\n10", "")]);
        assert_eq!(end, SseEnd::Clean);
        // The spec's second example: comment, ids, an empty id resetting.
        let (e, _) = parse(b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n");
        assert_eq!(
            e,
            [
                ev("message", "first event", "1"),
                ev("message", "second event", ""),
                ev("message", " third event", "")
            ]
        );
        // Two events: "data" with empty value, then "\n" from two data lines.
        let (e, end) = parse(b"data\n\ndata\ndata\n\ndata:");
        assert_eq!(e, [ev("message", "", ""), ev("message", "\n", "")]);
        assert_eq!(
            end,
            SseEnd::Incomplete {
                partial_line_bytes: 5,
                pending_fields: false
            }
        );
        // "data:test" and "data: test" are the same.
        let (e, _) = parse(b"data:test\n\ndata: test\n\n");
        assert_eq!(e, [ev("message", "test", ""), ev("message", "test", "")]);
    }

    #[test]
    fn event_names_ids_retry_and_unknown_fields() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"event: ping\nid: 7\nretry: 1500\nfoo: bar\ndata: x\n\nid: a\0b\nretry: 1x\ndata: y\n\n", &mut out).unwrap();
        assert_eq!(out, [ev("ping", "x", "7"), ev("message", "y", "7")]);
        assert_eq!(p.retry_ms(), Some(1500));
        // An event type without data is not dispatched, and resets.
        let (e, end) = parse(b"event: lonely\n\ndata: z\n\n");
        assert_eq!(e, [ev("message", "z", "")]);
        assert_eq!(end, SseEnd::Clean);
    }

    #[test]
    fn every_line_ending_and_a_bom() {
        let want = [ev("a", "1\n2", ""), ev("message", "3", "")];
        for nl in ["\n", "\r", "\r\n"] {
            let s = format!("\u{feff}event: a{nl}data: 1{nl}data: 2{nl}{nl}data: 3{nl}{nl}");
            let (e, end) = parse(s.as_bytes());
            assert_eq!(e, want, "line ending {nl:?}");
            assert_eq!(end, SseEnd::Clean);
        }
        // Mixed endings, and a CR at the end of one chunk with LF next.
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: 1\r", &mut out).unwrap();
        p.feed(b"\ndata: 2\n\r", &mut out).unwrap();
        assert_eq!(out, [ev("message", "1\n2", "")]);
        p.feed(b"\n", &mut out).unwrap();
        assert_eq!(
            out.len(),
            1,
            "the LF after CR is the same line ending, not a blank line"
        );
        p.feed(b"\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        // Only one leading BOM is stripped; a second is part of the name.
        let (e, _) = parse(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n");
        assert_eq!(e, [ev("message", "y", "")]);
    }

    #[test]
    fn incomplete_event_at_end_is_reported_not_dispatched() {
        let (e, end) = parse(b"data: a\n\ndata: b\n");
        assert_eq!(e, [ev("message", "a", "")]);
        assert_eq!(
            end,
            SseEnd::Incomplete {
                partial_line_bytes: 0,
                pending_fields: true
            }
        );
        let (_, end) = parse(b"data: a\n\n: trailing comment\n");
        assert_eq!(end, SseEnd::Clean);
    }

    #[test]
    fn bounds_name_the_limit_and_stick() {
        let mut p = SseParser::with_limits(SseLimits {
            max_line_bytes: 8,
            max_event_bytes: 100,
        });
        let mut out = Vec::new();
        p.feed(b"data: 12", &mut out).unwrap();
        let e = p.feed(b"3\n", &mut out).unwrap_err();
        assert_eq!(e.limit(), 8);
        assert!(e.to_string().contains("limit of 8 bytes"), "{e}");
        assert_eq!(p.feed(b"\n", &mut out), Err(e));
        let mut p = SseParser::with_limits(SseLimits {
            max_line_bytes: 100,
            max_event_bytes: 6,
        });
        let e = p.feed(b"data: 123\ndata: 456\n", &mut out).unwrap_err();
        assert_eq!(e.limit(), 6);
    }
}
