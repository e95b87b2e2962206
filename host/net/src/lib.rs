//! The host-owned HTTP engine: synchronous, pure Rust, rustls with bundled
//! Mozilla roots, bounded and observable exchanges.
//!
//! # Overview
//!
//! A [`Client`] sends one [`Request`] at a time per call to
//! [`Client::send`], on the calling thread, and returns a [`Response`] as
//! soon as its head has arrived. The body is read by a thread of its own and
//! handed over in chunks, as they arrive, through a bounded channel
//! ([`Body::next_event`]). Nothing is buffered to completion. Every body
//! ends with exactly one [`Outcome`]: complete, truncated at the bound,
//! cancelled, or failed — a cut-off body never looks complete.
//!
//! Every exchange is bounded by [`Limits`]: request bodies over 16 MiB are
//! rejected before anything is sent, response bodies stop at 64 MiB, the head
//! must arrive within 120 s, a 300 s gap between body bytes ends the body,
//! and the [`CancelToken`] is observed while connecting, while waiting for the
//! head, and at every chunk boundary. Non-2xx statuses are responses, not
//! errors; errors ([`NetError`]) are reserved for transport failures and say
//! what happened, why, and what to do next, without ever including header
//! values.
//!
//! TLS is rustls with the `ring` provider, validating against the bundled
//! Mozilla roots (`webpki-roots`) plus any roots added with
//! [`ClientBuilder::add_root_der`]. Connections are kept alive and reused per
//! scheme, host, port and proxy. `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
//! `NO_PROXY` are read once when the client is built ([`ProxySettings`]).
//! Redirects are not followed; HTTP/2 and content codings are not supported.
//!
//! The [`CancelToken`] is the one token of `smith-contract`, re-exported:
//! the engine's run, its tools and the exchange share the same flag.
//! Response bodies are bytes; the Server-Sent Events parser that reads
//! provider streams is `smith_providers::sse`.
//!
//! ```no_run
//! use smith_net::{BodyEvent, CancelToken, Client, Outcome, Request};
//!
//! # fn main() -> Result<(), smith_net::NetError> {
//! let client = Client::new()?;
//! let request = Request::post("https://api.example.com/v1/messages", b"{}".to_vec())?
//!     .with_header("content-type", "application/json");
//! let mut response = client.send(request, CancelToken::new())?;
//! println!("status {}", response.status());
//! loop {
//!     match response.body().next_event() {
//!         BodyEvent::Data(bytes) => println!("{} bytes", bytes.len()),
//!         BodyEvent::End(Outcome::Complete { bytes }) => break println!("complete: {bytes}"),
//!         BodyEvent::End(other) => break println!("not complete: {other:?}"),
//!     }
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod body;
mod client;
mod conn;
mod diag;
mod error;
mod http1;
mod limits;
mod policy;
mod proxy;
mod request;
mod url;

pub use body::{Body, BodyEvent, Outcome};
pub use client::{Client, ClientBuilder};
pub use diag::DIAGNOSABLE;
pub use error::{NetError, NetErrorKind};
pub use limits::Limits;
pub use policy::{AddressPolicy, METADATA_NAMES, PublicOnly, Resolve, SystemResolver, non_public};
pub use proxy::{ProxyServer, ProxySettings};
pub use request::{Headers, Method, Request, Response};
pub use smith_contract::CancelToken;
pub use url::{Scheme, Url};
