//! Requests `smith acp` sends to the client (`session/request_permission`)
//! and the routing of the client's responses back to whoever waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::jsonrpc::Output;

/// The prefix of the ids of smith's requests to the client.
const PREFIX: &str = "smith-";

/// How often a wait checks whether it was stopped.
const POLL: Duration = Duration::from_millis(10);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The client's answer to one request: its `result`, or its `error`.
pub(crate) type Reply = Result<Value, Value>;

/// How a wait for a reply ended.
pub(crate) enum Waited {
    /// The client answered.
    Reply(Reply),
    /// Nothing came before the deadline.
    Timeout,
    /// The waiter was stopped (the call that asked was cancelled).
    Stopped,
}

/// The requests sent to the client that wait for a reply.
pub(crate) struct Client {
    out: Output,
    next: AtomicU64,
    questions: AtomicU64,
    pending: Mutex<HashMap<String, Sender<Reply>>>,
}

impl Client {
    pub(crate) fn new(out: Output) -> Self {
        Client {
            out,
            next: AtomicU64::new(0),
            questions: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// A fresh number for a question about no announced call.
    pub(crate) fn next_question(&self) -> u64 {
        self.questions
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1)
    }

    /// Sends a request; its reply arrives on the receiver.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Value,
    ) -> std::io::Result<(String, Receiver<Reply>)> {
        let id = format!(
            "{PREFIX}{}",
            self.next.fetch_add(1, Ordering::SeqCst).saturating_add(1)
        );
        let (tx, rx) = channel();
        lock(&self.pending).insert(id.clone(), tx);
        let sent = self.out.write(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": method,
            "params": params,
        }));
        if let Err(e) = sent {
            lock(&self.pending).remove(&id);
            return Err(e);
        }
        Ok((id, rx))
    }

    /// Waits for the reply to request `id` until `timeout` passes or
    /// `stop` turns true; the request is forgotten either way.
    pub(crate) fn wait(
        &self,
        id: &str,
        rx: &Receiver<Reply>,
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Waited {
        let deadline = Instant::now() + timeout;
        let waited = loop {
            if stop() {
                break Waited::Stopped;
            }
            let now = Instant::now();
            if now >= deadline {
                break Waited::Timeout;
            }
            match rx.recv_timeout(POLL.min(deadline - now)) {
                Ok(reply) => break Waited::Reply(reply),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break Waited::Timeout,
            }
        };
        lock(&self.pending).remove(id);
        waited
    }

    /// Hands a response record to the request it answers; false when the
    /// record is not a response to one of smith's pending requests.
    pub(crate) fn take_response(&self, record: &[u8]) -> bool {
        // Cheap check first: most records are requests and notifications.
        if !record.windows(PREFIX.len()).any(|w| w == PREFIX.as_bytes()) {
            return false;
        }
        let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(record) else {
            return false;
        };
        if obj.contains_key("method") {
            return false;
        }
        let Some(Value::String(id)) = obj.get("id").cloned() else {
            return false;
        };
        let Some(tx) = lock(&self.pending).remove(&id) else {
            // A late reply to a request nobody waits for any more.
            return id.starts_with(PREFIX);
        };
        let reply = match (obj.remove("result"), obj.remove("error")) {
            (_, Some(error)) => Err(error),
            (Some(result), None) => Ok(result),
            (None, None) => Err(json!({"message": "the response has neither result nor error"})),
        };
        // The waiter may have given up meanwhile.
        let _ = tx.send(reply);
        true
    }

    /// Forgets every pending request (their waiters see a timeout).
    pub(crate) fn clear(&self) {
        lock(&self.pending).clear();
    }
}
