//! JSON-RPC 2.0 framing shared by `smith rpc` and `smith mcp`.
//!
//! Records are strictly LF-delimited: only the byte `\n` ends a record. A
//! `\r` before it is JSON whitespace, and U+2028 / U+2029 inside strings are
//! ordinary data (they are never line ends here). A record longer than
//! [`MAX_RECORD_BYTES`] is discarded up to its LF and answered with a parse
//! error; the reader then continues with the next record, so one bad record
//! never stops a server.
//!
//! [`parse`] turns one record into an [`Incoming`] message or an
//! [`RpcError`] carrying the request id when one could be read, so every
//! failure can be correlated. [`Output`] writes records: one JSON value, one
//! LF, flushed, under a lock shared by every thread that writes.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

/// The largest record accepted (64 MiB); longer records get a parse error.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The runtime is busy (a run, a model switch) and the method needs it idle.
pub const BUSY: i64 = -32001;
/// The feature exists in the protocol but this runtime cannot perform it.
pub const NOT_AVAILABLE: i64 = -32002;
/// A session-store operation failed.
pub const STORE_ERROR: i64 = -32003;
/// The runtime has stopped or could not start.
pub const RUNTIME_ERROR: i64 = -32004;
/// An extension plugin blocked the operation at a decision point.
pub const BLOCKED: i64 = -32005;

/// A JSON-RPC error object with a diagnostic.
///
/// `message` is one sentence saying what happened, why, and what to do
/// next; `data` carries the same as fields (`kind`, `what`, `why`, `next`)
/// plus anything specific (the offending value).
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// What happened, why, and what to do next.
    pub message: String,
    /// Structured diagnostic fields.
    pub data: Value,
}

impl RpcError {
    /// A new error; `kind` is a stable snake_case name.
    pub fn new(
        code: i64,
        kind: &str,
        what: impl Into<String>,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Self {
        let (what, why, next) = (what.into(), why.into(), next.into());
        RpcError {
            code,
            message: format!("{what}: {why}; {next}"),
            data: json!({"kind": kind, "what": what, "why": why, "next": next}),
        }
    }

    /// Adds a field to `data`.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Value::Object(map) = &mut self.data {
            map.insert(key.to_owned(), value.into());
        }
        self
    }

    /// The stable kind from `data`.
    pub fn kind(&self) -> &str {
        self.data.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    /// A method the server does not know.
    pub fn method_not_found(method: &str, known: &[&str]) -> Self {
        RpcError::new(
            METHOD_NOT_FOUND,
            "method_not_found",
            format!("unknown method {method:?}"),
            "this server does not implement it",
            format!("use one of: {}", known.join(", ")),
        )
        .with("method", method)
    }

    /// Parameters that do not fit the method.
    pub fn invalid_params(method: &str, problem: impl Into<String>, expected: &str) -> Self {
        RpcError::new(
            INVALID_PARAMS,
            "invalid_params",
            format!("invalid parameters for {method}"),
            problem.into(),
            format!("send {expected}"),
        )
        .with("method", method)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// One message received.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A request: answer it with its id.
    Request {
        /// The id (a number or a string), echoed in the response.
        id: Value,
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// A notification: never answered.
    Notification {
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// A response to a request the server sent (servers here send none, so
    /// these are ignored).
    Response {
        /// The id.
        id: Value,
    },
}

/// A record that could not be used, with the id to answer under (`null`
/// when none could be read).
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// The request id, or `null`.
    pub id: Value,
    /// Why (boxed: records are rejected rarely, results pass often).
    pub error: Box<RpcError>,
}

/// Reads LF-delimited records.
#[derive(Debug)]
pub struct Reader<R> {
    input: R,
    buf: Vec<u8>,
}

/// What [`Reader::next_record`] found.
#[derive(Debug, PartialEq)]
pub enum Record<'a> {
    /// One record without its LF.
    Line(&'a [u8]),
    /// A record longer than [`MAX_RECORD_BYTES`], discarded; its length.
    TooLong(usize),
}

impl<R: BufRead> Reader<R> {
    /// Reads from `input`.
    pub fn new(input: R) -> Self {
        Reader {
            input,
            buf: Vec::new(),
        }
    }

    /// The next non-empty record; `None` at the end of input. A final
    /// record without an LF still counts.
    ///
    /// # Errors
    ///
    /// Read errors of the input.
    pub fn next_record(&mut self) -> std::io::Result<Option<Record<'_>>> {
        loop {
            self.buf.clear();
            let mut discarded = 0usize;
            let mut ended = false;
            loop {
                let available = match self.input.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if available.is_empty() {
                    break;
                }
                let (take, found) = match available.iter().position(|&b| b == b'\n') {
                    Some(i) => (i, true),
                    None => (available.len(), false),
                };
                if discarded > 0 || self.buf.len() + take > MAX_RECORD_BYTES {
                    discarded += self.buf.len() + take;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(&available[..take]);
                }
                self.input.consume(take + usize::from(found));
                if found {
                    ended = true;
                    break;
                }
            }
            if discarded > 0 {
                return Ok(Some(Record::TooLong(discarded)));
            }
            if !ended && self.buf.is_empty() {
                return Ok(None);
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(Record::Line(&self.buf)));
        }
    }
}

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_))
}

/// Parses one record.
///
/// # Errors
///
/// A [`Rejected`] with a parse error (not JSON, not UTF-8) or an invalid
/// request error (not an object, batch, wrong `jsonrpc`, missing method),
/// carrying the id when the record had a usable one.
pub fn parse(record: &[u8]) -> Result<Incoming, Rejected> {
    let text = std::str::from_utf8(record).map_err(|e| Rejected {
        id: Value::Null,
        error: Box::new(RpcError::new(
            PARSE_ERROR,
            "parse_error",
            format!(
                "a record is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
            "JSON-RPC records are UTF-8 JSON",
            "send one UTF-8 JSON object per LF-terminated line; the server keeps serving",
        )),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| Rejected {
        id: Value::Null,
        error: Box::new(
            RpcError::new(
                PARSE_ERROR,
                "parse_error",
                format!("a record is not valid JSON ({e})"),
                "each LF-terminated line must hold exactly one JSON value",
                "fix the record and send it again; the server keeps serving",
            )
            .with("line", e.line())
            .with("column", e.column()),
        ),
    })?;
    let Value::Object(mut obj) = value else {
        let what = if value.is_array() {
            "a batch (JSON array) was received"
        } else {
            "a record is not a JSON object"
        };
        return Err(Rejected {
            id: Value::Null,
            error: Box::new(RpcError::new(
                INVALID_REQUEST,
                "invalid_request",
                what,
                "this server takes one request object per line (batches are not supported)",
                "send each request as its own line",
            )),
        });
    };
    let id = obj.remove("id");
    let reject = |id: Option<Value>, what: String, why: &str, next: &str| Rejected {
        id: id.filter(valid_id).unwrap_or(Value::Null),
        error: Box::new(RpcError::new(
            INVALID_REQUEST,
            "invalid_request",
            what,
            why,
            next,
        )),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let got = obj
            .get("jsonrpc")
            .map_or_else(|| "nothing".to_owned(), Value::to_string);
        return Err(reject(
            id,
            format!("the record's \"jsonrpc\" member is {got}"),
            "every JSON-RPC 2.0 message must carry \"jsonrpc\": \"2.0\"",
            "add \"jsonrpc\": \"2.0\"",
        ));
    }
    let params = obj.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Err(reject(
            id,
            format!("\"params\" is {params}"),
            "params must be an object or an array when present",
            "send params as an object",
        ));
    }
    match obj.remove("method") {
        Some(Value::String(method)) => match id {
            None => Ok(Incoming::Notification { method, params }),
            Some(id) if valid_id(&id) => Ok(Incoming::Request { id, method, params }),
            Some(id) => Err(reject(
                Some(Value::Null),
                format!("the request id {id} is not a string or a number"),
                "JSON-RPC ids are strings or numbers",
                "use a string or integer id",
            )),
        },
        Some(other) => Err(reject(
            id,
            format!("\"method\" is {other}"),
            "the method must be a string",
            "send the method name as a string",
        )),
        None if obj.contains_key("result") || obj.contains_key("error") => Ok(Incoming::Response {
            id: id.unwrap_or(Value::Null),
        }),
        None => Err(reject(
            id,
            "the record has no \"method\"".to_owned(),
            "a request or notification names its method",
            "add \"method\"",
        )),
    }
}

/// The record for a parse or framing failure of an over-long record.
pub fn too_long(len: usize) -> Rejected {
    Rejected {
        id: Value::Null,
        error: Box::new(
            RpcError::new(
                PARSE_ERROR,
                "record_too_long",
                format!("a record of {len} bytes was discarded"),
                format!("records are limited to {MAX_RECORD_BYTES} bytes"),
                "send smaller records; the server keeps serving",
            )
            .with("bytes", len),
        ),
    }
}

/// Writes records to a shared output. Cheap to clone.
#[derive(Clone)]
pub struct Output {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Output")
    }
}

impl Output {
    /// Writes to `out`.
    pub fn new(out: impl Write + Send + 'static) -> Self {
        Output {
            out: Arc::new(Mutex::new(Box::new(out))),
        }
    }

    /// Writes one record (the value, then LF) and flushes. Errors (a
    /// closed output) are returned; the caller decides whether to stop.
    ///
    /// # Errors
    ///
    /// Write and flush errors.
    pub fn write(&self, value: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(std::io::Error::from)?;
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.write_all(&line)?;
        out.flush()
    }

    /// Flushes the output and replaces it with nothing: every later
    /// record is dropped, and a record being written finishes first.
    pub fn close(&self) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = out.flush();
        *out = Box::new(std::io::sink());
    }

    /// Writes a success response.
    ///
    /// # Errors
    ///
    /// As [`Output::write`].
    pub fn result(&self, id: &Value, result: Value) -> std::io::Result<()> {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// Writes an error response.
    ///
    /// # Errors
    ///
    /// As [`Output::write`].
    pub fn error(&self, id: &Value, error: &RpcError) -> std::io::Result<()> {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}))
    }

    /// Writes a notification.
    ///
    /// # Errors
    ///
    /// As [`Output::write`].
    pub fn notify(&self, method: &str, params: Value) -> std::io::Result<()> {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }
}

/// Reads an optional string parameter.
///
/// # Errors
///
/// When present but not a string.
pub fn opt_str<'a>(
    method: &str,
    params: &'a Value,
    key: &str,
) -> Result<Option<&'a str>, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(RpcError::invalid_params(
            method,
            format!("\"{key}\" is {other}, not a string"),
            &format!("\"{key}\" as a string"),
        )),
    }
}

/// Reads a required string parameter.
///
/// # Errors
///
/// When missing or not a string.
pub fn req_str<'a>(method: &str, params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    opt_str(method, params, key)?.ok_or_else(|| {
        RpcError::invalid_params(
            method,
            format!("\"{key}\" is missing"),
            &format!("\"{key}\" as a string"),
        )
    })
}

/// Reads an optional non-negative integer parameter.
///
/// # Errors
///
/// When present but not a non-negative integer.
pub fn opt_u64(method: &str, params: &Value, key: &str) -> Result<Option<u64>, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            RpcError::invalid_params(
                method,
                format!("\"{key}\" is {v}, not a non-negative integer"),
                &format!("\"{key}\" as a non-negative integer"),
            )
        }),
    }
}

/// An empty JSON object.
pub fn empty() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(input: &[u8]) -> Vec<Result<Vec<u8>, usize>> {
        let mut reader = Reader::new(input);
        let mut out = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            out.push(match r {
                Record::Line(l) => Ok(l.to_vec()),
                Record::TooLong(n) => Err(n),
            });
        }
        out
    }

    #[test]
    fn only_lf_ends_a_record() {
        let input = "{\"a\":\"x\u{2028}y\u{2029}z\"}\r\n\n  \n{\"b\":1}".as_bytes();
        let got = records(input);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].as_ref().unwrap(),
            "{\"a\":\"x\u{2028}y\u{2029}z\"}\r".as_bytes()
        );
        assert_eq!(got[1].as_ref().unwrap(), b"{\"b\":1}");
        let parsed = parse(got[0].as_ref().unwrap());
        assert!(matches!(parsed, Err(Rejected { ref error, .. }) if error.code == INVALID_REQUEST));
    }

    #[test]
    fn a_request_keeps_its_id_and_params() {
        let m = parse(br#"{"jsonrpc":"2.0","id":"a1","method":"state","params":{"x":1}}"#).unwrap();
        assert_eq!(
            m,
            Incoming::Request {
                id: json!("a1"),
                method: "state".into(),
                params: json!({"x": 1})
            }
        );
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert_eq!(
            n,
            Incoming::Notification {
                method: "notifications/initialized".into(),
                params: Value::Null
            }
        );
        let r = parse(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap();
        assert_eq!(r, Incoming::Response { id: json!(3) });
    }

    #[test]
    fn malformed_records_are_rejected_with_the_id_when_known() {
        let bad = parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,").unwrap_err();
        assert_eq!((bad.id.clone(), bad.error.code), (Value::Null, PARSE_ERROR));
        assert!(
            bad.error.message.contains("not valid JSON"),
            "{}",
            bad.error.message
        );
        let no_version = parse(br#"{"id":7,"method":"x"}"#).unwrap_err();
        assert_eq!(
            (no_version.id, no_version.error.code),
            (json!(7), INVALID_REQUEST)
        );
        let batch = parse(br#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#).unwrap_err();
        assert_eq!(batch.error.code, INVALID_REQUEST);
        assert!(batch.error.message.contains("batch"));
        let bad_id = parse(br#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#).unwrap_err();
        assert_eq!(
            (bad_id.id, bad_id.error.code),
            (Value::Null, INVALID_REQUEST)
        );
        let utf8 = parse(b"{\"a\":\"\xff\"}").unwrap_err();
        assert_eq!(utf8.error.code, PARSE_ERROR);
        assert_eq!(utf8.error.kind(), "parse_error");
    }

    #[test]
    fn an_over_long_record_is_discarded_and_reading_continues() {
        let mut input = vec![b'x'; MAX_RECORD_BYTES + 10];
        input.extend_from_slice(b"\n{\"ok\":true}\n");
        let got = records(&input);
        assert_eq!(
            got,
            vec![Err(MAX_RECORD_BYTES + 10), Ok(b"{\"ok\":true}".to_vec())]
        );
    }

    #[test]
    fn errors_carry_what_why_next() {
        let e = RpcError::method_not_found("nope", &["state"]);
        assert_eq!(e.code, METHOD_NOT_FOUND);
        assert_eq!(
            e.message,
            "unknown method \"nope\": this server does not implement it; use one of: state"
        );
        assert_eq!(e.data["method"], "nope");
        assert_eq!(e.kind(), "method_not_found");
    }
}
