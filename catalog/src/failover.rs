//! Failover: what to do after a request to one target fails.
//!
//! | Failure | Decision |
//! |---|---|
//! | rate limited | wait as the provider says (`Retry-After`, the vendors' reset headers) and retry the same target, at most `max_retries` times: when another target remains only for a wait of at most `max_delay`, else for at most `max_rate_wait`; without a hint, fail over at once, or retry after the backoff when no target is left; otherwise fail over, or give up |
//! | transient transport failure | retry the same target after an exponential backoff, at most `max_retries` times; then fail over, or give up |
//! | unavailable model | fail over; give up when no target is left |
//! | credentials rejected | fail over (another bucket may work); give up when none is left |
//! | invalid request | give up (another target would reject it too) |
//! | cancelled | give up |
//!
//! No decision ever retries without bound: retries per target are capped and
//! the target list is finite. The clock is injected ([`Sleeper`]) so the
//! policy is tested without waiting.

use std::time::Duration;

/// Why an attempt failed, as far as failover cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The provider said to slow down (HTTP 429 or equivalent).
    RateLimited,
    /// The connection failed, timed out or was cut, or the provider was
    /// briefly overloaded (5xx).
    Transient,
    /// The model does not exist or is not served to this account.
    ModelUnavailable,
    /// The credentials were refused.
    Unauthorized,
    /// The request itself is wrong; sending it again cannot help.
    InvalidRequest,
    /// The user cancelled.
    Cancelled,
}

impl Failure {
    /// Every failure kind.
    pub const ALL: [Failure; 6] = [
        Failure::RateLimited,
        Failure::Transient,
        Failure::ModelUnavailable,
        Failure::Unauthorized,
        Failure::InvalidRequest,
        Failure::Cancelled,
    ];
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait, then send to the same target again.
    Retry {
        /// How long to wait first.
        after: Duration,
    },
    /// Move on to the next target.
    FailOver,
    /// Stop and report the failure.
    GiveUp,
}

/// Bounds on retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Retries of one target after transient failures.
    pub max_retries: u32,
    /// The wait before the first retry; each retry doubles it.
    pub base_delay: Duration,
    /// The longest wait.
    pub max_delay: Duration,
    /// The longest wait a rate limit's hint is honoured for when no other
    /// target remains; a longer one gives up at once (saying when to try
    /// again).
    pub max_rate_wait: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_rate_wait: Duration::from_secs(60),
        }
    }
}

impl Policy {
    /// The wait before retry number `retry` (0 for the first).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// Decides after `failure`, given how many retries of this target were
    /// already made and whether another target remains.
    pub fn decide(&self, failure: Failure, retries_so_far: u32, next_target: bool) -> Decision {
        self.decide_with_hint(failure, retries_so_far, next_target, None)
    }

    /// [`Policy::decide`], with the provider's hint of when to try again
    /// (`Retry-After` and the like) for a rate limit.
    pub fn decide_with_hint(
        &self,
        failure: Failure,
        retries_so_far: u32,
        next_target: bool,
        hint: Option<Duration>,
    ) -> Decision {
        let fail_over = if next_target {
            Decision::FailOver
        } else {
            Decision::GiveUp
        };
        if failure == Failure::RateLimited && retries_so_far < self.max_retries {
            // Another target answers sooner than a long wait; with none
            // left, waiting (within bounds) is the only way to an answer.
            let wait = match (hint, next_target) {
                (Some(h), _) => Some(h),
                (None, true) => None,
                (None, false) => Some(self.backoff(retries_so_far)),
            };
            let bound = if next_target {
                self.max_delay
            } else {
                self.max_rate_wait
            };
            if let Some(after) = wait.filter(|w| *w <= bound) {
                return Decision::Retry { after };
            }
        }
        match failure {
            Failure::Transient if retries_so_far < self.max_retries => Decision::Retry {
                after: self.backoff(retries_so_far),
            },
            Failure::Transient
            | Failure::RateLimited
            | Failure::ModelUnavailable
            | Failure::Unauthorized => fail_over,
            Failure::InvalidRequest | Failure::Cancelled => Decision::GiveUp,
        }
    }
}

/// Waits. Tests substitute one that records instead.
pub trait Sleeper {
    /// Waits for `d`.
    fn sleep(&mut self, d: Duration);
}

/// Sleeps on the current thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// One failed attempt, for the final report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt<T> {
    /// The target tried.
    pub target: T,
    /// How it failed.
    pub failure: Failure,
}

/// Tries `targets` in order under `policy`; `send` makes one attempt.
///
/// # Errors
///
/// Every failed attempt, in order, when no attempt succeeded.
pub fn run<T: Clone, R, E>(
    targets: &[T],
    policy: &Policy,
    sleeper: &mut dyn Sleeper,
    mut send: impl FnMut(&T) -> Result<R, (Failure, E)>,
) -> Result<R, (Vec<Attempt<T>>, Option<E>)> {
    let mut attempts = Vec::new();
    let mut last = None;
    'targets: for (i, target) in targets.iter().enumerate() {
        let mut retries = 0;
        loop {
            match send(target) {
                Ok(r) => return Ok(r),
                Err((failure, e)) => {
                    attempts.push(Attempt {
                        target: target.clone(),
                        failure,
                    });
                    last = Some(e);
                    match policy.decide(failure, retries, i + 1 < targets.len()) {
                        Decision::Retry { after } => {
                            sleeper.sleep(after);
                            retries += 1;
                        }
                        Decision::FailOver => continue 'targets,
                        Decision::GiveUp => break 'targets,
                    }
                }
            }
        }
    }
    Err((attempts, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder(Vec<Duration>);
    impl Sleeper for Recorder {
        fn sleep(&mut self, d: Duration) {
            self.0.push(d);
        }
    }

    fn policy() -> Policy {
        Policy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            max_rate_wait: Duration::from_millis(2000),
        }
    }

    /// Every failure kind × retries already made × whether a target remains.
    #[test]
    fn the_decision_table_is_exhaustive() {
        let p = policy();
        for failure in Failure::ALL {
            for retries in 0..=p.max_retries + 2 {
                for next in [false, true] {
                    let got = p.decide(failure, retries, next);
                    let want = match (failure, retries < p.max_retries, next) {
                        (Failure::Transient, true, _) | (Failure::RateLimited, true, false) => {
                            Decision::Retry {
                                after: p.backoff(retries),
                            }
                        }
                        (Failure::InvalidRequest | Failure::Cancelled, _, _) => Decision::GiveUp,
                        (_, _, true) => Decision::FailOver,
                        (_, _, false) => Decision::GiveUp,
                    };
                    assert_eq!(
                        got, want,
                        "{failure:?} after {retries} retries, next={next}"
                    );
                }
            }
        }
    }

    /// A rate limit's hint: honoured within `max_delay` while another
    /// target remains and within `max_rate_wait` when none does, at most
    /// `max_retries` times; past those, fail over or give up.
    #[test]
    fn rate_limit_hints_are_waited_for_within_bounds() {
        let p = policy();
        let ms = Duration::from_millis;
        let rl = Failure::RateLimited;
        assert_eq!(
            p.decide_with_hint(rl, 0, true, Some(ms(250))),
            Decision::Retry { after: ms(250) }
        );
        assert_eq!(
            p.decide_with_hint(rl, 0, true, Some(ms(301))),
            Decision::FailOver
        );
        assert_eq!(
            p.decide_with_hint(rl, 0, false, Some(ms(1500))),
            Decision::Retry { after: ms(1500) }
        );
        assert_eq!(
            p.decide_with_hint(rl, 2, false, Some(ms(2000))),
            Decision::Retry { after: ms(2000) }
        );
        assert_eq!(
            p.decide_with_hint(rl, 0, false, Some(ms(2001))),
            Decision::GiveUp
        );
        assert_eq!(
            p.decide_with_hint(rl, 3, false, Some(ms(10))),
            Decision::GiveUp
        );
        assert_eq!(
            p.decide_with_hint(rl, 3, true, Some(ms(10))),
            Decision::FailOver
        );
        // A hint changes nothing but rate limits.
        assert_eq!(
            p.decide_with_hint(Failure::Unauthorized, 0, true, Some(ms(10))),
            Decision::FailOver
        );
        assert_eq!(
            p.decide_with_hint(Failure::Transient, 0, true, Some(ms(10))),
            Decision::Retry {
                after: p.backoff(0)
            }
        );
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = policy();
        let waits: Vec<u64> = (0..6).map(|r| p.backoff(r).as_millis() as u64).collect();
        assert_eq!(waits, [100, 200, 300, 300, 300, 300]);
        assert_eq!(p.backoff(u32::MAX), Duration::from_millis(300));
    }

    #[test]
    fn rate_limits_fail_over_at_once_without_waiting() {
        let mut s = Recorder::default();
        let mut seen = Vec::new();
        let r = run(&["a", "b"], &policy(), &mut s, |t| {
            seen.push(*t);
            if *t == "a" {
                Err((Failure::RateLimited, ()))
            } else {
                Ok(7)
            }
        });
        assert_eq!(r.unwrap(), 7);
        assert_eq!(seen, ["a", "b"]);
        assert!(s.0.is_empty());
    }

    #[test]
    fn transient_failures_retry_with_backoff_then_fail_over() {
        let mut s = Recorder::default();
        let mut seen = Vec::new();
        let r = run(&["a", "b"], &policy(), &mut s, |t| {
            seen.push(*t);
            Err::<(), _>((Failure::Transient, *t))
        });
        let (attempts, last) = r.unwrap_err();
        assert_eq!(seen, ["a", "a", "a", "a", "b", "b", "b", "b"]);
        assert_eq!(attempts.len(), 8);
        assert_eq!(last, Some("b"));
        let ms: Vec<u128> = s.0.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [100, 200, 300, 100, 200, 300]);
    }

    #[test]
    fn invalid_requests_are_sent_once() {
        let mut s = Recorder::default();
        let mut n = 0;
        let r = run(&["a", "b"], &policy(), &mut s, |_| {
            n += 1;
            Err::<(), _>((Failure::InvalidRequest, ()))
        });
        assert!(r.is_err());
        assert_eq!(n, 1);
    }

    #[test]
    fn unavailable_models_try_each_target_once() {
        let mut s = Recorder::default();
        let mut n = 0;
        let r = run(&["a", "b", "c"], &policy(), &mut s, |_| {
            n += 1;
            Err::<(), _>((Failure::ModelUnavailable, ()))
        });
        assert_eq!(r.unwrap_err().0.len(), 3);
        assert_eq!(n, 3);
        assert!(s.0.is_empty());
    }
}
