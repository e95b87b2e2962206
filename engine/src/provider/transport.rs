//! Carrying out exchanges and driving one response stream.
//!
//! The host owns transport: a [`Transport`] performs an [`Exchange`] and
//! hands body chunks over as they arrive, observing cancellation at every
//! chunk boundary (and inside every local delay). [`drive`] ties a
//! [`Provider`], a [`Transport`] and the stream [`Validator`] together and is
//! the single place where a response is read.

use std::time::{Duration, Instant};

use super::{
    AssistantTurn, Exchange, Provider, ProviderError, ProviderErrorKind, Request, StopReason,
    StreamEvent, Usage, Validator,
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
    /// The server refused the request (a status other than 2xx) with a
    /// JSON body, which was delivered for the provider to decode into its
    /// error. `retry_after_ms` is the wait the response's headers asked for
    /// (`Retry-After` and the vendors' reset headers); the decoded error
    /// carries it unless its body named a wait of its own.
    Refused {
        /// The response's status (4xx or 5xx).
        status: u16,
        /// The headers' wait, in milliseconds.
        retry_after_ms: Option<u64>,
    },
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

/// The local transport: plays local exchanges (scripted providers). HTTP
/// exchanges need the HTTP engine, which the engine crate does not link;
/// the binary pairs live providers with `smith-provider-host`'s transport,
/// so an HTTP exchange here fails with a [`ProviderErrorKind::Transport`]
/// error that says so.
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
                    "cannot send {} {}: this runtime was set up with the local transport, which plays only scripted exchanges; live providers need the HTTP transport (choose the provider with --provider so smith sets it up), or use --provider mock",
                    http.method, http.url
                ),
            )),
        }
    }
}

/// How one response stream ended.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEnd {
    /// A validated turn (its stop reason may be `error` with a typed error;
    /// a stream that failed after its content began is such a turn, with
    /// what arrived kept).
    Turn(AssistantTurn),
    /// Cancellation was observed: what arrived so far, open calls dropped.
    Aborted(AssistantTurn),
    /// The request could not be sent, or the exchange failed or was
    /// malformed or incomplete before any content or usage: nothing
    /// arrived, so what it used is unknown.
    Failed(ProviderError),
}

/// Sends `request` through `provider` and `transport`, validating every
/// event and handing each valid one to `on_event` as it arrives.
///
/// A response that fails before any content event was handed over is
/// offered to [`Provider::recover`]; when it asks for another attempt,
/// `drive` waits (observing cancellation) and encodes the request again.
pub fn drive(
    provider: &mut dyn Provider,
    transport: &dyn Transport,
    request: &Request,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(&StreamEvent),
) -> StreamEnd {
    drive_with(
        provider,
        transport,
        request,
        cancel,
        on_event,
        &mut |_, _| {},
    )
}

/// [`drive`], telling `on_retry` before each wait for another attempt how
/// long it waits (zero: at once, e.g. on another target) and what failed.
pub fn drive_with(
    provider: &mut dyn Provider,
    transport: &dyn Transport,
    request: &Request,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(&StreamEvent),
    on_retry: &mut dyn FnMut(Duration, &ProviderError),
) -> StreamEnd {
    // Usage that failed attempts stated before they were retried: it was
    // spent, so the response that ends the attempts carries it too.
    let mut spent: Option<Usage> = None;
    loop {
        let mut delivered = false;
        let end = drive_once(provider, transport, request, cancel, &mut |event| {
            delivered |= !matches!(
                event,
                StreamEvent::Usage(_) | StreamEvent::Stop { .. } | StreamEvent::Error(_)
            );
            on_event(event);
        });
        if delivered {
            return charge(end, spent);
        }
        let mut error = match &end {
            StreamEnd::Failed(error) => error.clone(),
            StreamEnd::Turn(turn) if turn.stop == StopReason::Error => turn
                .error
                .clone()
                .unwrap_or_else(|| ProviderError::malformed("the response failed without detail")),
            _ => return charge(end, spent),
        };
        match provider.recover(&mut error) {
            Some(wait) => {
                if let StreamEnd::Turn(turn) = &end
                    && turn.usage != Usage::default()
                {
                    spent = Some(spent.map_or(turn.usage, |s| s.add(&turn.usage)));
                }
                on_retry(wait, &error);
                if !cancellable_sleep(wait, cancel) {
                    let mut aborted = Validator::new().abort();
                    aborted.usage = spent.unwrap_or_default();
                    return StreamEnd::Aborted(aborted);
                }
            }
            None => {
                return charge(
                    match end {
                        StreamEnd::Turn(mut turn) => {
                            turn.error = Some(error);
                            StreamEnd::Turn(turn)
                        }
                        _ => StreamEnd::Failed(error),
                    },
                    spent,
                );
            }
        }
    }
}

/// Adds the usage earlier, retried attempts stated to the response that
/// ends the attempts (field by field: unknown in either is unknown). A
/// failure without a response leaves the usage unknown anyway.
fn charge(end: StreamEnd, spent: Option<Usage>) -> StreamEnd {
    let Some(spent) = spent else {
        return end;
    };
    match end {
        StreamEnd::Turn(mut turn) => {
            turn.usage = spent.add(&turn.usage);
            StreamEnd::Turn(turn)
        }
        StreamEnd::Aborted(mut turn) => {
            turn.usage = spent.add(&turn.usage);
            StreamEnd::Aborted(turn)
        }
        failed @ StreamEnd::Failed(_) => failed,
    }
}

fn drive_once(
    provider: &mut dyn Provider,
    transport: &dyn Transport,
    request: &Request,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(&StreamEvent),
) -> StreamEnd {
    let mut refusal = None;
    let end = exchange_once(provider, transport, request, cancel, on_event, &mut refusal);
    let Some((status, hint)) = refusal else {
        return end;
    };
    let fill = |error: &mut ProviderError| {
        if error.retry_after_ms.is_none() {
            error.retry_after_ms = hint;
        }
        // A body the decoder could not classify (no type or code, e.g.
        // Ollama's `{"error": "... does not support tools"}`) is typed by
        // the status the server answered with.
        if error.kind == ProviderErrorKind::Transport
            && let Some(kind) = kind_of_status(status)
        {
            error.kind = kind;
        }
    };
    match end {
        StreamEnd::Failed(mut error) => {
            fill(&mut error);
            StreamEnd::Failed(error)
        }
        StreamEnd::Turn(mut turn) => {
            if let Some(error) = turn.error.as_mut() {
                fill(error);
            }
            StreamEnd::Turn(turn)
        }
        other => other,
    }
}

/// The error kind an HTTP status stands for, when it stands for one.
pub fn kind_of_status(status: u16) -> Option<ProviderErrorKind> {
    Some(match status {
        429 => ProviderErrorKind::RateLimit,
        401 | 403 => ProviderErrorKind::Auth,
        404 => ProviderErrorKind::ModelUnavailable,
        408 | 500..=599 => ProviderErrorKind::Overloaded,
        400..=499 => ProviderErrorKind::InvalidRequest,
        _ => return None,
    })
}

/// One exchange; `refusal` receives a refusal's status and the wait its
/// headers asked for.
fn exchange_once(
    provider: &mut dyn Provider,
    transport: &dyn Transport,
    request: &Request,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(&StreamEvent),
    refusal: &mut Option<(u16, Option<u64>)>,
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
        return cut_short(validator, error);
    }
    match outcome {
        BodyOutcome::Cancelled => return StreamEnd::Aborted(validator.abort()),
        BodyOutcome::Failed(error) => return cut_short(validator, error),
        BodyOutcome::Refused {
            status,
            retry_after_ms,
        } => *refusal = Some((status, retry_after_ms)),
        BodyOutcome::Stopped | BodyOutcome::Complete => {}
    }
    let tail = provider.finish();
    accept(tail, &mut validator, &mut failure);
    if let Some(error) = failure {
        return cut_short(validator, error);
    }
    if cancel.is_cancelled() && !validator.is_terminated() {
        return StreamEnd::Aborted(validator.abort());
    }
    if !validator.is_terminated() && (validator.has_content() || validator.has_usage()) {
        return StreamEnd::Turn(validator.fail(ProviderError::malformed(
            "the response stream ended without a stop or error event, so the response is incomplete; what arrived is kept, marked as failed — retry the request",
        )));
    }
    match validator.finish() {
        Ok(turn) => StreamEnd::Turn(turn),
        Err(error) => StreamEnd::Failed(error),
    }
}

/// The end of an exchange that failed: what arrived is kept as a turn that
/// failed (stop reason error) when any content had begun, since the user
/// may have seen it, or when the stream stated usage, which must count;
/// otherwise the failure alone, which may be retried.
fn cut_short(validator: Validator, error: ProviderError) -> StreamEnd {
    if validator.has_content() || validator.has_usage() {
        StreamEnd::Turn(validator.fail(error))
    } else {
        StreamEnd::Failed(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{LocalChunk, ProviderInfo, StopReason};

    /// Fails its first `failures` attempts with `kind`, then answers "ok".
    struct Flaky {
        failures: usize,
        kind: ProviderErrorKind,
        encodes: usize,
        recovered: Vec<ProviderErrorKind>,
        retry: bool,
    }

    impl Provider for Flaky {
        fn describe(&self) -> ProviderInfo {
            ProviderInfo {
                id: "flaky".into(),
                models: Vec::new(),
            }
        }
        fn encode(&mut self, _request: &Request) -> Result<Exchange, ProviderError> {
            self.encodes += 1;
            let bytes = if self.encodes <= self.failures {
                b"E".to_vec()
            } else {
                b"T".to_vec()
            };
            Ok(Exchange::Local {
                chunks: vec![LocalChunk { delay_ms: 0, bytes }],
            })
        }
        fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
            if chunk == b"E" {
                vec![StreamEvent::Error(ProviderError::new(self.kind, "busy"))]
            } else {
                vec![
                    StreamEvent::TextDelta { text: "ok".into() },
                    StreamEvent::Stop {
                        reason: StopReason::End,
                    },
                ]
            }
        }
        fn finish(&mut self) -> Vec<StreamEvent> {
            Vec::new()
        }
        fn recover(&mut self, error: &mut ProviderError) -> Option<Duration> {
            self.recovered.push(error.kind);
            if self.retry {
                Some(Duration::ZERO)
            } else {
                error.message.push_str(" (gave up)");
                None
            }
        }
    }

    /// Drives `provider` through `transport` with the test request, no
    /// cancellation and no event consumer.
    fn quietly(provider: &mut dyn Provider, transport: &dyn Transport) -> StreamEnd {
        drive(
            provider,
            transport,
            &request(),
            &CancelToken::new(),
            &mut |_| {},
        )
    }

    fn request() -> Request {
        Request {
            model: "m".into(),
            system: None,
            messages: Vec::new(),
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn a_failure_before_content_is_offered_to_recover_and_retried() {
        let mut provider = Flaky {
            failures: 2,
            kind: ProviderErrorKind::RateLimit,
            encodes: 0,
            recovered: Vec::new(),
            retry: true,
        };
        let mut seen = Vec::new();
        let end = drive(
            &mut provider,
            &HostTransport,
            &request(),
            &CancelToken::new(),
            &mut |e| seen.push(e.clone()),
        );
        let StreamEnd::Turn(turn) = end else {
            panic!("expected a turn, got {end:?}");
        };
        assert_eq!(turn.stop, StopReason::End);
        assert_eq!(provider.encodes, 3);
        assert_eq!(provider.recovered, [ProviderErrorKind::RateLimit; 2]);
        // The failed attempts' error events reached the caller, the text once.
        let texts = seen
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
            .count();
        assert_eq!(texts, 1);
    }

    /// States usage, then fails before content on its first attempt; the
    /// second answers with text and its own usage.
    struct Charged {
        encodes: usize,
    }

    impl Provider for Charged {
        fn describe(&self) -> ProviderInfo {
            ProviderInfo {
                id: "charged".into(),
                models: Vec::new(),
            }
        }
        fn encode(&mut self, _request: &Request) -> Result<Exchange, ProviderError> {
            self.encodes += 1;
            let bytes = if self.encodes == 1 { b"E" } else { b"T" };
            Ok(Exchange::Local {
                chunks: vec![LocalChunk {
                    delay_ms: 0,
                    bytes: bytes.to_vec(),
                }],
            })
        }
        fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
            let usage = |input, output| {
                StreamEvent::Usage(Usage {
                    input: Some(input),
                    output: Some(output),
                    cache_read: None,
                    cache_write: None,
                })
            };
            if chunk == b"E" {
                vec![
                    usage(7, 1),
                    StreamEvent::Error(ProviderError::new(ProviderErrorKind::Overloaded, "busy")),
                ]
            } else {
                vec![
                    StreamEvent::TextDelta { text: "ok".into() },
                    usage(20, 5),
                    StreamEvent::Stop {
                        reason: StopReason::End,
                    },
                ]
            }
        }
        fn finish(&mut self) -> Vec<StreamEvent> {
            Vec::new()
        }
        fn recover(&mut self, _error: &mut ProviderError) -> Option<Duration> {
            Some(Duration::ZERO)
        }
    }

    #[test]
    fn usage_a_retried_attempt_stated_counts_in_the_response() {
        let mut provider = Charged { encodes: 0 };
        let StreamEnd::Turn(turn) = quietly(&mut provider, &HostTransport) else {
            panic!("expected a turn");
        };
        assert_eq!(provider.encodes, 2);
        assert_eq!(turn.stop, StopReason::End);
        assert_eq!(
            turn.usage,
            Usage {
                input: Some(27),
                output: Some(6),
                cache_read: None,
                cache_write: None,
            }
        );
    }

    /// Sends "T" (text, then a stop) unless its transport cuts it short.
    struct Cutting {
        /// Chunks the transport delivers before it fails.
        deliver: Vec<&'static [u8]>,
        hint: Option<u64>,
    }

    impl Transport for Cutting {
        fn perform(
            &self,
            _exchange: Exchange,
            _cancel: &CancelToken,
            on_chunk: &mut dyn FnMut(&[u8]) -> bool,
        ) -> BodyOutcome {
            for chunk in &self.deliver {
                on_chunk(chunk);
            }
            match self.hint {
                Some(ms) => BodyOutcome::Refused {
                    status: 429,
                    retry_after_ms: Some(ms),
                },
                None => BodyOutcome::Failed(ProviderError::new(
                    ProviderErrorKind::Transport,
                    "the connection was reset",
                )),
            }
        }
    }

    struct Pieces {
        recovered: Vec<Option<u64>>,
    }

    impl Provider for Pieces {
        fn describe(&self) -> ProviderInfo {
            ProviderInfo {
                id: "pieces".into(),
                models: Vec::new(),
            }
        }
        fn encode(&mut self, _request: &Request) -> Result<Exchange, ProviderError> {
            Ok(Exchange::Local { chunks: Vec::new() })
        }
        fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
            match chunk {
                b"E" => vec![StreamEvent::Error(ProviderError::new(
                    ProviderErrorKind::RateLimit,
                    "slow down",
                ))],
                text => vec![StreamEvent::TextDelta {
                    text: String::from_utf8_lossy(text).into_owned(),
                }],
            }
        }
        fn finish(&mut self) -> Vec<StreamEvent> {
            Vec::new()
        }
        fn recover(&mut self, error: &mut ProviderError) -> Option<Duration> {
            self.recovered.push(error.retry_after_ms);
            None
        }
    }

    #[test]
    fn a_stream_cut_after_content_keeps_what_arrived_as_a_failed_turn() {
        let mut provider = Pieces {
            recovered: Vec::new(),
        };
        let transport = Cutting {
            deliver: vec![b"Hello, ", b"wor"],
            hint: None,
        };
        let end = quietly(&mut provider, &transport);
        let StreamEnd::Turn(turn) = end else {
            panic!("expected the partial turn, got {end:?}");
        };
        assert_eq!(turn.stop, StopReason::Error);
        assert_eq!(
            turn.content,
            [crate::provider::ContentBlock::Text {
                text: "Hello, wor".into()
            }]
        );
        assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Transport);
        assert_eq!(
            turn.usage,
            crate::provider::Usage::default(),
            "unknown, not 0"
        );
        assert!(
            provider.recovered.is_empty(),
            "content arrived: not retried"
        );
        // A stream that just ends without a terminal event keeps it too.
        struct Ends;
        impl Transport for Ends {
            fn perform(
                &self,
                _exchange: Exchange,
                _cancel: &CancelToken,
                on_chunk: &mut dyn FnMut(&[u8]) -> bool,
            ) -> BodyOutcome {
                on_chunk(b"half");
                BodyOutcome::Complete
            }
        }
        let end = quietly(&mut provider, &Ends);
        let StreamEnd::Turn(turn) = end else {
            panic!("expected the partial turn, got {end:?}");
        };
        assert_eq!(turn.stop, StopReason::Error);
        assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::MalformedStream);
        // Before any content, a failure is still a failure (and offered to
        // recover).
        let silent = Cutting {
            deliver: Vec::new(),
            hint: None,
        };
        let end = quietly(&mut provider, &silent);
        assert!(matches!(end, StreamEnd::Failed(_)), "{end:?}");
    }

    #[test]
    fn a_refusal_s_header_wait_fills_the_decoded_error() {
        let mut provider = Pieces {
            recovered: Vec::new(),
        };
        let refusing = Cutting {
            deliver: vec![b"E"],
            hint: Some(1500),
        };
        let end = quietly(&mut provider, &refusing);
        let StreamEnd::Turn(turn) = end else {
            panic!("expected the failed turn, got {end:?}");
        };
        assert_eq!(turn.error.unwrap().retry_after_ms, Some(1500));
        assert_eq!(provider.recovered, [Some(1500)], "recover saw the hint");
    }

    #[test]
    fn giving_up_keeps_the_amended_error() {
        let mut provider = Flaky {
            failures: 5,
            kind: ProviderErrorKind::InvalidRequest,
            encodes: 0,
            recovered: Vec::new(),
            retry: false,
        };
        let end = quietly(&mut provider, &HostTransport);
        let StreamEnd::Turn(turn) = end else {
            panic!("expected a failed turn, got {end:?}");
        };
        assert_eq!(turn.stop, StopReason::Error);
        let error = turn.error.unwrap();
        assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
        assert_eq!(error.message, "busy (gave up)");
        assert_eq!(provider.encodes, 1);
    }

    #[test]
    fn a_cancelled_wait_aborts() {
        struct Waits(usize);
        impl Provider for Waits {
            fn describe(&self) -> ProviderInfo {
                ProviderInfo {
                    id: "w".into(),
                    models: Vec::new(),
                }
            }
            fn encode(&mut self, _request: &Request) -> Result<Exchange, ProviderError> {
                self.0 += 1;
                Err(ProviderError::new(ProviderErrorKind::Overloaded, "busy"))
            }
            fn decode(&mut self, _chunk: &[u8]) -> Vec<StreamEvent> {
                Vec::new()
            }
            fn finish(&mut self) -> Vec<StreamEvent> {
                Vec::new()
            }
            fn recover(&mut self, _error: &mut ProviderError) -> Option<Duration> {
                Some(Duration::from_secs(60))
            }
        }
        let cancel = CancelToken::new();
        let canceller = cancel.clone();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            canceller.cancel();
        });
        let mut provider = Waits(0);
        let end = drive(
            &mut provider,
            &HostTransport,
            &request(),
            &cancel,
            &mut |_| {},
        );
        thread.join().unwrap();
        assert!(matches!(end, StreamEnd::Aborted(_)), "{end:?}");
        assert_eq!(provider.0, 1);
    }
}
