//! HTTP/1.1 wire pieces: the request head, response-head parsing, body
//! framing, and an incremental chunked-transfer decoder.

use crate::proxy::ProxyServer;
use crate::request::{Headers, Method, Request};

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (HEAD, 1xx, 204, 304).
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Read until the server closes the connection.
    Close,
}

/// A parsed response head.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) reason: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub(crate) minor_version: u8,
    pub(crate) headers: Headers,
    /// Length of the head in the buffer it was parsed from.
    pub(crate) len: usize,
}

/// The result of trying to parse a head from the bytes received so far.
pub(crate) enum HeadParse {
    Complete(Head),
    Partial,
    Invalid(String),
}

pub(crate) fn parse_head(buf: &[u8]) -> HeadParse {
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut resp = httparse::Response::new(&mut fields);
    match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let mut headers = Headers::new();
            for h in resp.headers.iter() {
                headers.append(h.name, String::from_utf8_lossy(h.value).into_owned());
            }
            HeadParse::Complete(Head {
                status: resp.code.unwrap_or(0),
                reason: resp.reason.unwrap_or("").to_string(),
                minor_version: resp.version.unwrap_or(0),
                headers,
                len,
            })
        }
        Ok(httparse::Status::Partial) => HeadParse::Partial,
        Err(e) => HeadParse::Invalid(e.to_string()),
    }
}

/// Chooses the body framing (RFC 9112 section 6.3). `Err` names the problem.
pub(crate) fn framing(method: Method, head: &Head) -> Result<Framing, String> {
    if method == Method::Head
        || (100..200).contains(&head.status)
        || head.status == 204
        || head.status == 304
    {
        return Ok(Framing::Empty);
    }
    let codings: Vec<String> = head
        .headers
        .get_all("transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    if !codings.is_empty() {
        return Ok(if codings.last().map(String::as_str) == Some("chunked") {
            Framing::Chunked
        } else {
            Framing::Close
        });
    }
    let mut length: Option<u64> = None;
    for value in head
        .headers
        .get_all("content-length")
        .flat_map(|v| v.split(','))
    {
        let value = value.trim();
        let n = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            value
                .parse::<u64>()
                .map_err(|_| format!("Content-Length {value:?} is too large"))?
        } else {
            return Err(format!("Content-Length {value:?} is not a number"));
        };
        if length.is_some_and(|l| l != n) {
            return Err("the response has conflicting Content-Length values".to_string());
        }
        length = Some(n);
    }
    Ok(match length {
        Some(n) => Framing::Length(n),
        None => Framing::Close,
    })
}

/// Whether the connection may carry another exchange after this response.
pub(crate) fn reusable(request: &Request, head: &Head, framing: Framing) -> bool {
    head.minor_version == 1
        && framing != Framing::Close
        && !head.headers.has_token("connection", "close")
        && !request.headers.has_token("connection", "close")
}

/// Serializes the request head; the body is written after it.
pub(crate) fn request_head(request: &Request, http_proxy: Option<&ProxyServer>) -> Vec<u8> {
    let url = &request.url;
    let target = match http_proxy {
        Some(_) => url.absolute(),
        None => url.target().to_string(),
    };
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(request.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(url.host_header().as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in request.headers.iter() {
        if matches!(
            name,
            "host" | "content-length" | "transfer-encoding" | "proxy-authorization"
        ) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let body_expected = matches!(request.method, Method::Post | Method::Put | Method::Patch);
    if !request.body.is_empty() || body_expected {
        out.extend_from_slice(format!("content-length: {}\r\n", request.body.len()).as_bytes());
    }
    if let Some(auth) = http_proxy.and_then(|p| p.authorization.as_ref()) {
        out.extend_from_slice(b"proxy-authorization: ");
        out.extend_from_slice(auth.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Incremental `Transfer-Encoding: chunked` decoder.
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
    /// The current size or trailer line.
    line: Vec<u8>,
    trailer_bytes: usize,
    max_line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size,
    Data(u64),
    DataCr,
    DataLf,
    Trailer,
    Done,
}

/// The result of one [`ChunkedDecoder::decode`] call.
pub(crate) struct Decoded {
    /// Input bytes used; the rest (if `done`) belongs to the next response.
    pub(crate) consumed: usize,
    pub(crate) done: bool,
}

impl ChunkedDecoder {
    pub(crate) fn new(max_line: usize) -> Self {
        Self {
            state: ChunkState::Size,
            line: Vec::new(),
            trailer_bytes: 0,
            max_line,
        }
    }

    /// Decodes `input`, appending body bytes to `out`.
    pub(crate) fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, String> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                ChunkState::Size | ChunkState::Trailer => {
                    let Some(nl) = input[i..].iter().position(|&b| b == b'\n') else {
                        self.line.extend_from_slice(&input[i..]);
                        self.check_line()?;
                        i = input.len();
                        break;
                    };
                    self.line.extend_from_slice(&input[i..i + nl]);
                    self.check_line()?;
                    i += nl + 1;
                    if self.line.last() == Some(&b'\r') {
                        self.line.pop();
                    }
                    if self.state == ChunkState::Size {
                        let size = parse_chunk_size(&self.line)?;
                        self.line.clear();
                        self.state = if size == 0 {
                            ChunkState::Trailer
                        } else {
                            ChunkState::Data(size)
                        };
                    } else {
                        let blank = self.line.is_empty();
                        self.trailer_bytes += self.line.len() + 2;
                        self.line.clear();
                        if blank {
                            self.state = ChunkState::Done;
                            return Ok(Decoded {
                                consumed: i,
                                done: true,
                            });
                        }
                        if self.trailer_bytes > self.max_line {
                            return Err(format!(
                                "the chunked trailers exceed {} bytes",
                                self.max_line
                            ));
                        }
                    }
                }
                ChunkState::Data(remaining) => {
                    let take = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - i);
                    out.extend_from_slice(&input[i..i + take]);
                    i += take;
                    let left = remaining - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataCr
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::DataCr => {
                    match input[i] {
                        b'\r' => self.state = ChunkState::DataLf,
                        b'\n' => self.state = ChunkState::Size,
                        b => {
                            return Err(format!(
                                "expected CRLF after chunk data, found byte 0x{b:02x}"
                            ));
                        }
                    }
                    i += 1;
                }
                ChunkState::DataLf => {
                    if input[i] != b'\n' {
                        return Err(format!(
                            "expected LF after chunk data, found byte 0x{:02x}",
                            input[i]
                        ));
                    }
                    self.state = ChunkState::Size;
                    i += 1;
                }
                ChunkState::Done => {
                    return Ok(Decoded {
                        consumed: i,
                        done: true,
                    });
                }
            }
        }
        Ok(Decoded {
            consumed: i,
            done: self.state == ChunkState::Done,
        })
    }

    fn check_line(&self) -> Result<(), String> {
        if self.line.len() > self.max_line {
            Err(format!(
                "a chunk-size or trailer line exceeds {} bytes",
                self.max_line
            ))
        } else {
            Ok(())
        }
    }
}

fn parse_chunk_size(line: &[u8]) -> Result<u64, String> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = trim_ascii(digits);
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(format!(
            "invalid chunk size line {:?}",
            String::from_utf8_lossy(&line[..line.len().min(40)])
        ));
    }
    let text = std::str::from_utf8(digits).map_err(|e| e.to_string())?;
    u64::from_str_radix(text, 16).map_err(|e| e.to_string())
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_split(input: &[u8], split: usize) -> (Vec<u8>, usize, bool) {
        let mut d = ChunkedDecoder::new(1024);
        let mut out = Vec::new();
        let a = d.decode(&input[..split], &mut out).unwrap();
        if a.done {
            return (out, a.consumed, true);
        }
        let b = d.decode(&input[split..], &mut out).unwrap();
        (out, split + b.consumed, b.done)
    }

    #[test]
    fn chunked_decodes_identically_at_every_split() {
        let wire = b"5;ext=1\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        for split in 0..=wire.len() {
            let (out, consumed, done) = decode_split(wire, split);
            assert_eq!(out, b"hello world!", "split {split}");
            assert!(done);
            assert_eq!(&wire[consumed..], b"NEXT", "split {split}");
        }
    }

    proptest::proptest! {
        #[test]
        fn chunked_decoder_never_panics_and_ignores_where_input_is_cut(
            input in proptest::collection::vec(proptest::sample::select(b"0123456789abcdefAF;\r\n x".to_vec()), 0..200),
            cut in 0usize..200,
        ) {
            let cut = cut.min(input.len());
            let mut whole_out = Vec::new();
            let whole = ChunkedDecoder::new(64).decode(&input, &mut whole_out).map(|d| (d.consumed, d.done));
            let mut d = ChunkedDecoder::new(64);
            let mut out = Vec::new();
            let split = d.decode(&input[..cut], &mut out).and_then(|a| {
                if a.done {
                    Ok((a.consumed, true))
                } else {
                    d.decode(&input[cut..], &mut out).map(|b| (cut + b.consumed, b.done))
                }
            });
            match (whole, split) {
                (Ok(w), Ok(s)) => {
                    proptest::prop_assert_eq!(w, s);
                    proptest::prop_assert_eq!(whole_out, out);
                }
                (Err(_), Err(_)) => {}
                (w, s) => proptest::prop_assert!(false, "whole {:?} vs split {:?}", w, s),
            }
        }
    }

    #[test]
    fn chunked_rejects_bad_framing() {
        let mut out = Vec::new();
        assert!(ChunkedDecoder::new(64).decode(b"zz\r\n", &mut out).is_err());
        assert!(
            ChunkedDecoder::new(64)
                .decode(b"2\r\nabX", &mut out)
                .is_err()
        );
        assert!(
            ChunkedDecoder::new(8)
                .decode(b"000000000001", &mut out)
                .is_err()
        );
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let head = |raw: &str| match parse_head(raw.as_bytes()) {
            HeadParse::Complete(h) => h,
            _ => panic!("incomplete head"),
        };
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n");
        assert_eq!(framing(Method::Get, &h), Ok(Framing::Length(5)));
        assert_eq!(framing(Method::Head, &h), Ok(Framing::Empty));
        let h = head(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\ncontent-length: 5\r\n\r\n",
        );
        assert_eq!(framing(Method::Get, &h), Ok(Framing::Chunked));
        let h = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(framing(Method::Get, &h), Ok(Framing::Close));
        let h = head("HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!(framing(Method::Get, &h), Ok(Framing::Empty));
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n");
        assert!(framing(Method::Get, &h).is_err());
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\n");
        assert_eq!(framing(Method::Get, &h), Ok(Framing::Length(5)));
    }
}
