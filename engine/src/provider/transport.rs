//! Carrying out exchanges and driving one response stream.
//!
//! The host owns transport: a [`Transport`] performs an [`Exchange`] and
//! hands body chunks over as they arrive, observing cancellation at every
//! chunk boundary (and inside every local delay). [`drive`] ties a
//! [`Provider`], a [`Transport`] and the stream [`Validator`] together and is
//! the single place where a response is read.

use std::time::{Duration, Instant};

use super::{
    AssistantTurn, Exchange, Provider, ProviderError, ProviderErrorKind, Request, StreamEvent,
    Validator,
};
use crate::tools::CancelToken;

/// How a response body ended.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyOutcome {
    /// Every chunk was delivered.
    Complete,
    /// Cancellation was observed; no chunk after it was delivered.
    Cancelled,
    /// The consumer asked to stop (it found the stream malformed).
    Stopped,
    /// The exchange failed.
    Failed(ProviderError),
}

/// Performs exchanges for providers.
pub trait Transport: Send + Sync {
    /// Performs `exchange`, calling `on_chunk` for each body chunk in order.
    /// `on_chunk` returns `false` to stop reading. Cancellation is checked
    /// before each chunk is delivered and during every wait.
    fn perform(
        &self,
        exchange: Exchange,
        cancel: &CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome;
}

/// The host transport: plays local exchanges; HTTP exchanges go to the HTTP
/// engine, which this build does not contain yet, so they fail with a
/// [`ProviderErrorKind::Transport`] error that says so.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostTransport;

/// How often a local delay looks at the cancellation token.
const CANCEL_POLL: Duration = Duration::from_millis(5);

/// Sleeps `total`, returning `false` as soon as `cancel` is set.
pub fn cancellable_sleep(total: Duration, cancel: &CancelToken) -> bool {
    let deadline = Instant::now() + total;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(CANCEL_POLL));
    }
}

impl Transport for HostTransport {
    fn perform(
        &self,
        exchange: Exchange,
        cancel: &CancelToken,
        on_chunk: &mut dyn FnMut(&[u8]) -> bool,
    ) -> BodyOutcome {
        match exchange {
            Exchange::Local { chunks } => {
                for chunk in chunks {
                    if chunk.delay_ms > 0
                        && !cancellable_sleep(Duration::from_millis(chunk.delay_ms), cancel)
                    {
                        return BodyOutcome::Cancelled;
                    }
                    if cancel.is_cancelled() {
                        return BodyOutcome::Cancelled;
                    }
                    if !on_chunk(&chunk.bytes) {
                        return BodyOutcome::Stopped;
                    }
                }
                BodyOutcome::Complete
            }
            Exchange::Http(http) => BodyOutcome::Failed(ProviderError::new(
                ProviderErrorKind::Transport,
                format!(
                    "cannot send {} {}: this build of smith has no HTTP engine, so only providers that need no network work; use --provider mock",
                    http.method, http.url
                ),
            )),
        }
    }
}

/// How one response stream ended.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEnd {
    /// A validated turn (its stop reason may be `error` with a typed error).
    Turn(AssistantTurn),
    /// Cancellation was observed: what arrived so far, open calls dropped.
    Aborted(AssistantTurn),
    /// The request could not be sent, the exchange failed, or the stream
    /// was malformed or incomplete; nothing from it may be used.
    Failed(ProviderError),
}

/// Sends `request` through `provider` and `transport`, validating every
/// event and handing each valid one to `on_event` as it arrives.
pub fn drive(
    provider: &mut dyn Provider,
    transport: &dyn Transport,
    request: &Request,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(&StreamEvent),
) -> StreamEnd {
    if cancel.is_cancelled() {
        return StreamEnd::Aborted(Validator::new().abort());
    }
    let exchange = match provider.encode(request) {
        Ok(exchange) => exchange,
        Err(error) => return StreamEnd::Failed(error),
    };
    let mut validator = Validator::new();
    let mut failure: Option<ProviderError> = None;
    let mut accept = |events: Vec<StreamEvent>,
                      validator: &mut Validator,
                      failure: &mut Option<ProviderError>| {
        for event in events {
            if failure.is_some() {
                return false;
            }
            match validator.push(&event) {
                Ok(()) => on_event(&event),
                Err(error) => {
                    *failure = Some(error);
                    return false;
                }
            }
        }
        true
    };
    let outcome = transport.perform(exchange, cancel, &mut |chunk| {
        let events = provider.decode(chunk);
        accept(events, &mut validator, &mut failure)
    });
    if let Some(error) = failure {
        return StreamEnd::Failed(error);
    }
    match outcome {
        BodyOutcome::Cancelled => return StreamEnd::Aborted(validator.abort()),
        BodyOutcome::Failed(error) => return StreamEnd::Failed(error),
        BodyOutcome::Stopped | BodyOutcome::Complete => {}
    }
    let tail = provider.finish();
    accept(tail, &mut validator, &mut failure);
    if let Some(error) = failure {
        return StreamEnd::Failed(error);
    }
    if cancel.is_cancelled() && !validator.is_terminated() {
        return StreamEnd::Aborted(validator.abort());
    }
    match validator.finish() {
        Ok(turn) => StreamEnd::Turn(turn),
        Err(error) => StreamEnd::Failed(error),
    }
}
