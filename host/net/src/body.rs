//! Streaming response bodies.
//!
//! A reader thread owns the connection. It decodes the body framing and
//! sends each piece of body bytes, as soon as it arrives, over a bounded
//! channel; the consumer pulls them with [`Body::next_event`]. The last event
//! is always exactly one [`Outcome`], so a consumer can tell a complete body
//! from one that was truncated, cancelled or cut off.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Instant;

use crate::conn::{Pool, PoolKey, Stream, WaitError, describe_io, read_some};
use crate::error::{NetError, NetErrorKind};
use crate::http1::{ChunkedDecoder, Framing};
use crate::limits::Limits;
use smith_contract::CancelToken;

/// How a body ended. Exactly one outcome ends every body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Outcome {
    /// Every byte of the body arrived, as framed by the server.
    Complete {
        /// Total body bytes delivered.
        bytes: u64,
    },
    /// The body reached the response-body bound; the first `bound` bytes were
    /// delivered and the rest was not read.
    Truncated {
        /// The bound in bytes ([`Limits::max_response_body`]).
        bound: u64,
    },
    /// The caller cancelled; no chunk read after cancellation was delivered.
    Cancelled,
    /// The body was cut off: a timeout between chunks, a dropped connection,
    /// or broken framing.
    Failed(NetError),
}

impl Outcome {
    /// Whether the body is complete.
    pub fn is_complete(&self) -> bool {
        matches!(self, Self::Complete { .. })
    }

    /// `Ok(bytes)` for a complete body, otherwise an error saying why not.
    ///
    /// # Errors
    ///
    /// [`NetErrorKind::ResponseTooLarge`] for a truncated body,
    /// [`NetErrorKind::Cancelled`], or the failure itself.
    pub fn into_result(self, host: &str) -> Result<u64, NetError> {
        match self {
            Self::Complete { bytes } => Ok(bytes),
            Self::Truncated { bound } => Err(NetError::new(
                NetErrorKind::ResponseTooLarge,
                host,
                format!("the response body exceeded {bound} bytes and was truncated"),
                "the HTTP engine bounds every response body, and no model's answer comes near the bound",
                "check the server (or a proxy in front of it) at this address: it sent far more than an answer; what arrived before the bound is kept",
            )),
            Self::Cancelled => Err(NetError::cancelled(host)),
            Self::Failed(e) => Err(e),
        }
    }
}

/// One step of a body: bytes, or the end with its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyEvent {
    /// Body bytes, in order, as they arrived.
    Data(Vec<u8>),
    /// The end; repeated on every later call.
    End(Outcome),
}

pub(crate) enum Msg {
    Data(Vec<u8>),
    End(Outcome),
}

/// A response body delivered chunk by chunk.
///
/// Dropping a `Body` stops its reader thread and closes the connection
/// unless the body had already completed.
#[derive(Debug)]
pub struct Body {
    rx: Option<Receiver<Msg>>,
    cancel: CancelToken,
    gone: Arc<AtomicBool>,
    outcome: Option<Outcome>,
    host: String,
}

impl Body {
    pub(crate) fn finished(host: String, cancel: CancelToken, outcome: Outcome) -> Self {
        Self {
            rx: None,
            cancel,
            gone: Arc::new(AtomicBool::new(true)),
            outcome: Some(outcome),
            host,
        }
    }

    /// The next event: body bytes as they arrive, then one [`BodyEvent::End`].
    /// Blocks until the reader thread delivers something; that wait is bounded
    /// by the gap timeout and by cancellation.
    pub fn next_event(&mut self) -> BodyEvent {
        if let Some(o) = &self.outcome {
            return BodyEvent::End(o.clone());
        }
        if self.cancel.is_cancelled() {
            return self.finish(Outcome::Cancelled);
        }
        let msg = match &self.rx {
            Some(rx) => rx.recv().ok(),
            None => None,
        };
        match msg {
            // A chunk that arrives after cancellation is never delivered.
            Some(Msg::Data(_)) if self.cancel.is_cancelled() => self.finish(Outcome::Cancelled),
            Some(Msg::Data(d)) => BodyEvent::Data(d),
            Some(Msg::End(o)) => self.finish(o),
            None => self.finish(Outcome::Failed(NetError::new(
                NetErrorKind::ConnectionLost,
                self.host.as_str(),
                "the body reader stopped without an outcome",
                "its thread ended unexpectedly",
                "retry the request",
            ))),
        }
    }

    /// The next chunk of bytes, or `None` at the end; then read
    /// [`Body::outcome`] to learn whether the body is complete.
    pub fn next_chunk(&mut self) -> Option<Vec<u8>> {
        match self.next_event() {
            BodyEvent::Data(d) => Some(d),
            BodyEvent::End(_) => None,
        }
    }

    /// The outcome, once the end was reached; `None` while bytes may follow.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// Reads the rest of the body (bounded by the response-body bound) and
    /// returns the bytes with the outcome.
    pub fn collect(mut self) -> (Vec<u8>, Outcome) {
        let mut all = Vec::new();
        loop {
            match self.next_event() {
                BodyEvent::Data(d) => all.extend_from_slice(&d),
                BodyEvent::End(o) => return (all, o),
            }
        }
    }

    /// Reads the rest of the body; `Ok` only when it is complete.
    ///
    /// # Errors
    ///
    /// As [`Outcome::into_result`].
    pub fn read_complete(self) -> Result<Vec<u8>, NetError> {
        let host = self.host.clone();
        let (bytes, outcome) = self.collect();
        outcome.into_result(&host).map(|_| bytes)
    }

    fn finish(&mut self, outcome: Outcome) -> BodyEvent {
        self.gone.store(true, Ordering::SeqCst);
        // Dropping the receiver unblocks a reader waiting on a full channel.
        self.rx = None;
        self.outcome = Some(outcome.clone());
        BodyEvent::End(outcome)
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        self.gone.store(true, Ordering::SeqCst);
    }
}

/// The reader thread's state for one body.
pub(crate) struct Reader {
    pub(crate) stream: Option<Stream>,
    pub(crate) leftover: Vec<u8>,
    pub(crate) framing: Framing,
    pub(crate) reuse: Option<(Arc<Pool>, PoolKey)>,
    pub(crate) limits: Limits,
    pub(crate) cancel: CancelToken,
    pub(crate) host: String,
}

enum Decoder {
    Length(u64),
    Chunked(ChunkedDecoder),
    Close,
}

impl Reader {
    /// Starts the reader thread and returns the consumer's end.
    pub(crate) fn spawn(self) -> Result<Body, NetError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(self.limits.channel_capacity.max(1));
        let gone = Arc::new(AtomicBool::new(false));
        let body = Body {
            rx: Some(rx),
            cancel: self.cancel.clone(),
            gone: Arc::clone(&gone),
            outcome: None,
            host: self.host.clone(),
        };
        let host = self.host.clone();
        std::thread::Builder::new()
            .name("smith-net-body".to_string())
            .spawn(move || self.run(&tx, &gone))
            .map_err(|e| {
                NetError::new(
                    NetErrorKind::ConnectionLost,
                    host,
                    "could not start the body reader thread",
                    e.to_string(),
                    "the system is out of threads or memory; retry later",
                )
            })?;
        Ok(body)
    }

    fn run(mut self, tx: &SyncSender<Msg>, gone: &AtomicBool) {
        let outcome = self.pump(tx, gone);
        let _ = tx.send(Msg::End(outcome));
    }

    fn failed(&self, kind: NetErrorKind, what: String, why: String, next: &str) -> Outcome {
        Outcome::Failed(NetError::new(kind, self.host.as_str(), what, why, next))
    }

    fn pump(&mut self, tx: &SyncSender<Msg>, gone: &AtomicBool) -> Outcome {
        let max = self.limits.max_response_body;
        let mut delivered: u64 = 0;
        let mut decoder = match self.framing {
            Framing::Length(n) => Decoder::Length(n),
            Framing::Chunked => Decoder::Chunked(ChunkedDecoder::new(self.limits.max_head_bytes)),
            Framing::Close | Framing::Empty => Decoder::Close,
        };
        let mut buf = vec![0u8; self.limits.read_chunk_bytes.max(1)];
        let mut input = std::mem::take(&mut self.leftover);
        let cancel = self.cancel.clone();
        let stop = || cancel.is_cancelled() || gone.load(Ordering::SeqCst);
        loop {
            if !input.is_empty() || matches!(decoder, Decoder::Length(0)) {
                let mut out = Vec::new();
                let (done, extra) = match &mut decoder {
                    Decoder::Length(remaining) => {
                        let take = usize::try_from(*remaining)
                            .unwrap_or(usize::MAX)
                            .min(input.len());
                        out.extend_from_slice(&input[..take]);
                        *remaining -= take as u64;
                        (*remaining == 0, input.len() - take)
                    }
                    Decoder::Chunked(d) => match d.decode(&input, &mut out) {
                        Ok(r) => (r.done, input.len() - r.consumed),
                        Err(why) => {
                            return self.failed(
                                NetErrorKind::Protocol,
                                "the chunked response body is malformed".to_string(),
                                why,
                                "the server or an intermediary broke the framing; retry the request",
                            );
                        }
                    },
                    Decoder::Close => {
                        out.extend_from_slice(&input);
                        (false, 0)
                    }
                };
                input.clear();
                if !out.is_empty() {
                    if stop() {
                        return Outcome::Cancelled;
                    }
                    let room = max - delivered;
                    if out.len() as u64 > room {
                        out.truncate(usize::try_from(room).unwrap_or(usize::MAX));
                        if !out.is_empty() && tx.send(Msg::Data(out)).is_err() {
                            return Outcome::Cancelled;
                        }
                        return Outcome::Truncated { bound: max };
                    }
                    delivered += out.len() as u64;
                    if tx.send(Msg::Data(out)).is_err() {
                        return Outcome::Cancelled;
                    }
                }
                if done {
                    if let Some((pool, key)) = self.reuse.take() {
                        // Bytes beyond this response mean the connection is
                        // out of step; never reuse it then.
                        if extra == 0
                            && let Some(stream) = self.stream.take()
                        {
                            pool.put(key, stream);
                        }
                    }
                    return Outcome::Complete { bytes: delivered };
                }
            }
            let deadline = Instant::now() + self.limits.body_gap_timeout;
            let Some(stream) = self.stream.as_mut() else {
                return Outcome::Complete { bytes: delivered };
            };
            let is_tls = stream.is_tls();
            match read_some(stream, &mut buf, deadline, self.limits.poll_interval, &stop) {
                Ok(0) => {
                    return match decoder {
                        Decoder::Close => Outcome::Complete { bytes: delivered },
                        Decoder::Length(remaining) => self.failed(
                            NetErrorKind::Protocol,
                            format!("the connection closed after {delivered} body bytes, {remaining} short of Content-Length"),
                            "the server or network dropped the connection mid-body".to_string(),
                            "retry the request",
                        ),
                        Decoder::Chunked(_) => self.failed(
                            NetErrorKind::Protocol,
                            format!("the connection closed after {delivered} body bytes, before the last chunk"),
                            "the server or network dropped the connection mid-body".to_string(),
                            "retry the request",
                        ),
                    };
                }
                Ok(n) => input.extend_from_slice(&buf[..n]),
                Err(WaitError::Deadline) => {
                    return self.failed(
                        NetErrorKind::TimeoutBodyGap,
                        format!(
                            "no body bytes for {:?} after {delivered} bytes; the body was ended",
                            self.limits.body_gap_timeout
                        ),
                        "the server stalled mid-body".to_string(),
                        "retry the request, or raise the body gap timeout (`net.body-gap-timeout-s`)",
                    );
                }
                Err(WaitError::Cancelled) => return Outcome::Cancelled,
                Err(WaitError::Io(e)) => {
                    let (tls_error, why) = describe_io(&e);
                    let why = if e.kind() == std::io::ErrorKind::UnexpectedEof && is_tls {
                        "the server closed the TLS connection without close_notify, so the body may be cut off".to_string()
                    } else {
                        why
                    };
                    let kind = if tls_error {
                        NetErrorKind::Tls
                    } else {
                        NetErrorKind::ConnectionLost
                    };
                    return self.failed(
                        kind,
                        format!("the connection failed after {delivered} body bytes"),
                        why,
                        "retry the request",
                    );
                }
            }
        }
    }
}
