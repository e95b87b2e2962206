//! The bounds every exchange runs under.

use std::time::Duration;

/// Bounds on one exchange. [`Limits::default`] gives the documented defaults;
/// every field can be changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Request bodies longer than this are rejected before anything is sent
    /// (default 16 MiB).
    pub max_request_body: u64,
    /// Response bodies stop here with [`crate::Outcome::Truncated`]
    /// (default 64 MiB).
    pub max_response_body: u64,
    /// The whole response head must arrive within this time, counted from the
    /// start of [`crate::Client::send`] (connect, proxy tunnel and TLS
    /// handshake included) (default 120 s).
    pub head_timeout: Duration,
    /// A longer wait between two arrivals of body bytes ends the body with a
    /// [`crate::NetErrorKind::TimeoutBodyGap`] failure (default 300 s).
    pub body_gap_timeout: Duration,
    /// Bound on one TCP connect attempt, within the head bound (default 30 s).
    pub connect_timeout: Duration,
    /// Largest response head (status line and headers, also chunk trailers)
    /// accepted (default 64 KiB).
    pub max_head_bytes: usize,
    /// Capacity of the bounded channel between the reader thread and the
    /// consumer, in chunks (default 8).
    pub channel_capacity: usize,
    /// Largest chunk handed to the consumer (default 16 KiB).
    pub read_chunk_bytes: usize,
    /// How often a blocked read wakes to check cancellation (default 50 ms).
    pub poll_interval: Duration,
    /// Idle keep-alive connections older than this are closed (default 60 s).
    pub idle_timeout: Duration,
    /// Idle keep-alive connections kept per host, port and TLS (default 4).
    pub max_idle_per_host: usize,
}

/// 1 MiB.
const MIB: u64 = 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_body: 16 * MIB,
            max_response_body: 64 * MIB,
            head_timeout: Duration::from_secs(120),
            body_gap_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(30),
            max_head_bytes: 64 * 1024,
            channel_capacity: 8,
            read_chunk_bytes: 16 * 1024,
            poll_interval: Duration::from_millis(50),
            idle_timeout: Duration::from_secs(60),
            max_idle_per_host: 4,
        }
    }
}
