//! A scripted HTTP/1.1 test server on 127.0.0.1, plain or TLS with a
//! test-only CA, plus a tiny CONNECT proxy.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Whether the server speaks TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Tls,
}

pub const BOTH: [Mode; 2] = [Mode::Plain, Mode::Tls];

/// The test CA and a server certificate for 127.0.0.1 and localhost.
pub struct TestPki {
    pub ca_der: Vec<u8>,
    pub server: Arc<rustls::ServerConfig>,
}

pub fn pki() -> &'static TestPki {
    static PKI: OnceLock<TestPki> = OnceLock::new();
    PKI.get_or_init(|| {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "smith-net test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf_params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
        TestPki {
            ca_der: ca.der().to_vec(),
            server: Arc::new(server),
        }
    })
}

/// What the server observed.
#[derive(Default)]
pub struct Stats {
    pub connections: AtomicUsize,
    pub bytes_read: AtomicUsize,
    pub requests: Mutex<Vec<Req>>,
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Which connection (1-based) carried it.
    pub connection: usize,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

trait Io: Read + Write + Send {
    fn close_notify(&mut self) {}
}
impl Io for TcpStream {}
impl Io for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn close_notify(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
    }
}

/// One accepted connection, handed to the handler.
pub struct Conn {
    io: Box<dyn Io>,
    buf: Vec<u8>,
    stats: Arc<Stats>,
    pub index: usize,
}

impl Conn {
    /// Reads the next request; `None` at EOF or on error.
    pub fn read_request(&mut self) -> Option<Req> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut req = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(len)) = req.parse(&self.buf) {
                let headers: Vec<(String, String)> = req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                let method = req.method.unwrap_or("").to_string();
                let target = req.path.unwrap_or("").to_string();
                let body_len: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                while self.buf.len() < len + body_len {
                    if !self.fill() {
                        return None;
                    }
                }
                let body = self.buf[len..len + body_len].to_vec();
                self.buf.drain(..len + body_len);
                let req = Req {
                    method,
                    target,
                    headers,
                    body,
                    connection: self.index,
                };
                self.stats.requests.lock().unwrap().push(req.clone());
                return Some(req);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 65536];
        match self.io.read(&mut tmp) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.stats.bytes_read.fetch_add(n, Ordering::SeqCst);
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// Writes and flushes; returns false when the peer is gone.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        self.io.write_all(bytes).is_ok() && self.io.flush().is_ok()
    }

    /// A complete response with Content-Length.
    pub fn respond(&mut self, status: u16, body: &[u8]) -> bool {
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        self.send(&[head.as_bytes(), body].concat())
    }

    /// Sends a TLS close_notify (no-op on plain connections).
    pub fn close_notify(&mut self) {
        self.io.close_notify();
    }
}

pub struct Server {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    pub mode: Mode,
}

impl Server {
    /// Starts a server; `handler` runs on its own thread per connection.
    pub fn start(mode: Mode, handler: impl Fn(&mut Conn) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(Stats::default());
        let handler = Arc::new(handler);
        let st = Arc::clone(&stats);
        std::thread::spawn(move || {
            for tcp in listener.incoming() {
                let Ok(tcp) = tcp else { return };
                let index = st.connections.fetch_add(1, Ordering::SeqCst) + 1;
                let io: Box<dyn Io> = match mode {
                    Mode::Plain => Box::new(tcp),
                    Mode::Tls => {
                        let conn =
                            rustls::ServerConnection::new(Arc::clone(&pki().server)).unwrap();
                        Box::new(rustls::StreamOwned::new(conn, tcp))
                    }
                };
                let mut conn = Conn {
                    io,
                    buf: Vec::new(),
                    stats: Arc::clone(&st),
                    index,
                };
                let handler = Arc::clone(&handler);
                std::thread::spawn(move || handler(&mut conn));
            }
        });
        Self { addr, stats, mode }
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = match self.mode {
            Mode::Plain => "http",
            Mode::Tls => "https",
        };
        format!("{scheme}://{}{path}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.stats.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Req> {
        self.stats.requests.lock().unwrap().clone()
    }
}

/// A client trusting the test CA, with the given limits and no proxy.
pub fn client(limits: smith_net::Limits) -> smith_net::Client {
    smith_net::Client::builder()
        .limits(limits)
        .proxy(smith_net::ProxySettings::none())
        .add_root_der(pki().ca_der.clone())
        .build()
        .unwrap()
}

/// What the tiny proxy saw: request lines, and Proxy-Authorization values.
#[derive(Default)]
pub struct ProxyLog {
    pub lines: Mutex<Vec<String>>,
    pub auth: Mutex<Vec<Option<String>>>,
}

/// A CONNECT proxy (it also answers absolute-form requests itself with
/// "via proxy"). With `require_auth`, requests without that exact
/// Proxy-Authorization value get 407.
pub fn start_proxy(require_auth: Option<String>) -> (SocketAddr, Arc<ProxyLog>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(ProxyLog::default());
    let lg = Arc::clone(&log);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let log = Arc::clone(&lg);
            let require_auth = require_auth.clone();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                let (line, auth) = loop {
                    let n = client.read(&mut tmp).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    let mut headers = [httparse::EMPTY_HEADER; 32];
                    let mut req = httparse::Request::new(&mut headers);
                    if let Ok(httparse::Status::Complete(_)) = req.parse(&buf) {
                        let auth = req
                            .headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case("proxy-authorization"))
                            .map(|h| String::from_utf8_lossy(h.value).into_owned());
                        break (
                            format!("{} {}", req.method.unwrap(), req.path.unwrap()),
                            auth,
                        );
                    }
                };
                log.lines.lock().unwrap().push(line.clone());
                log.auth.lock().unwrap().push(auth.clone());
                if require_auth.is_some() && auth != require_auth {
                    let _ = client.write_all(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n",
                    );
                    return;
                }
                let Some(target) = line.strip_prefix("CONNECT ") else {
                    let _ = client.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\nconnection: close\r\n\r\nvia proxy");
                    return;
                };
                let Ok(upstream) = TcpStream::connect(target) else {
                    let _ =
                        client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
                    return;
                };
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .unwrap();
                let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let (mut c1, mut u1) = (client, upstream);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut u2);
                    let _ = u2.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut u1, &mut c1);
                let _ = c1.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (addr, log)
}
