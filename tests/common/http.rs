//! A local HTTP/1.1 server standing in for a provider's endpoint: one
//! thread, one connection at a time, `Connection: close`, chunked bodies;
//! it keeps every request as received. Included by the tests that talk to
//! a local provider (`#[path = "common/http.rs"] mod http;`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request path.
    pub path: String,
    /// The headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
    /// The body's bytes exactly as received.
    pub raw: Vec<u8>,
    /// When it arrived.
    pub at: Instant,
}

impl Seen {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
pub enum Reply {
    /// 200 with an event stream sent in pieces of `chunk` bytes.
    Stream(Vec<u8>),
    /// A status with a body and content type.
    Status(u16, &'static str, Vec<u8>),
    /// 200, the first `bytes` of the stream, then the connection is closed
    /// mid-body (no last chunk): a connection cut.
    Cut(Vec<u8>, usize),
    /// A status with extra headers and a JSON body.
    Json(u16, Vec<(&'static str, String)>, Vec<u8>),
    /// 200, the first `bytes` of the stream, a signal, then the connection
    /// stays open without more data until the client goes away.
    Stall(Vec<u8>, usize, mpsc::Sender<()>),
    /// 200 with an event stream sent one event (up to its blank line) per
    /// chunk, with `gap` between chunks, as a model streaming its answer.
    Paced(Vec<u8>, Duration),
}

pub type Handler = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// A local HTTP/1.1 server: one thread, one connection at a time,
/// `Connection: close`, chunked bodies.
pub struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Listens on a free loopback port; `handler` answers each request
    /// (its index and what was seen).
    pub fn start(handler: Box<Handler>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let Some(request) = read_request(&stream) else {
                    continue;
                };
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(request.clone());
                    log.len() - 1
                };
                let reply = handler(index, &request);
                let _ = respond(stream, reply);
            }
        });
        Server { port, seen }
    }

    /// The address of `path` on the server.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: body,
        at: Instant::now(),
    })
}

fn chunk(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    write!(stream, "{:x}\r\n", bytes.len())?;
    stream.write_all(bytes)?;
    stream.write_all(b"\r\n")?;
    stream.flush()
}

fn respond(mut stream: TcpStream, reply: Reply) -> std::io::Result<()> {
    let head = |status: u16, content_type: &str| {
        format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
    };
    match reply {
        Reply::Stream(body) => {
            stream.write_all(head(200, "text/event-stream").as_bytes())?;
            for piece in body.chunks(97) {
                chunk(&mut stream, piece)?;
            }
            stream.write_all(b"0\r\n\r\n")?;
        }
        Reply::Cut(body, bytes) => {
            stream.write_all(head(200, "text/event-stream").as_bytes())?;
            chunk(&mut stream, &body[..bytes])?;
            stream.flush()?;
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return Ok(());
        }
        Reply::Json(status, headers, body) => {
            let mut head = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n");
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
            stream.write_all(head.as_bytes())?;
            if !body.is_empty() {
                chunk(&mut stream, &body)?;
            }
            stream.write_all(b"0\r\n\r\n")?;
        }
        Reply::Status(status, content_type, body) => {
            stream.write_all(head(status, content_type).as_bytes())?;
            if !body.is_empty() {
                chunk(&mut stream, &body)?;
            }
            stream.write_all(b"0\r\n\r\n")?;
        }
        Reply::Paced(body, gap) => {
            stream.write_all(head(200, "text/event-stream").as_bytes())?;
            let mut rest = &body[..];
            while !rest.is_empty() {
                let end = rest
                    .windows(2)
                    .position(|w| w == b"\n\n")
                    .map_or(rest.len(), |i| i + 2);
                chunk(&mut stream, &rest[..end])?;
                rest = &rest[end..];
                std::thread::sleep(gap);
            }
            stream.write_all(b"0\r\n\r\n")?;
        }
        Reply::Stall(body, bytes, signal) => {
            stream.write_all(head(200, "text/event-stream").as_bytes())?;
            chunk(&mut stream, &body[..bytes])?;
            let _ = signal.send(());
            // Hold the connection until the client closes it (a read of
            // 0 bytes), at most 30 s.
            stream.set_read_timeout(Some(Duration::from_secs(30)))?;
            let mut buf = [0u8; 64];
            let _ = stream.read(&mut buf);
        }
    }
    stream.flush()
}
