//! How many requests a client lets in flight: a window that adapts to the server, between 1
//! and the configured [`concurrency`](super::HttpConfig::concurrency), its cap.
//!
//! Additive increase, multiplicative decrease: the window widens by one request once as many
//! answers came in good time as it holds (one more per round of answers); a sign of overload
//! halves it.
//! The signs are a 429 or 503, a timeout, and an answer slower than [`SLOW`] times the median
//! of the [`RECENT`] answers before it. Requests sent before a decrease answer under the old
//! load, so their own signs do not halve the window again: one halving per round of requests.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How many past answers the median of "usual" latency is taken over.
pub(crate) const RECENT: usize = 32;

/// Answers needed before one can count as slow.
pub(crate) const WARM: usize = 8;

/// An answer slower than this many times the recent median is a sign of overload.
pub(crate) const SLOW: u32 = 4;

/// What one attempt showed of the server's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sign {
    /// An answer (of any status but an overload's) after this long.
    Answered(Duration),
    /// A 429 or 503, or no answer in time.
    Overloaded,
    /// A failure that says nothing of the load (a connection cut short, say).
    Neutral,
}

/// The additive-increase, multiplicative-decrease controller, without any waiting.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    limit: usize,
    /// Answers in good time since the limit last changed; one more request once they fill it.
    credit: usize,
    cap: usize,
    /// Bumped at each decrease; an attempt remembers the one it started in.
    epoch: u64,
    recent: VecDeque<Duration>,
}

impl Window {
    /// A window open to `cap` requests (at least 1).
    pub(crate) fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        Window {
            limit: cap,
            credit: 0,
            cap,
            epoch: 0,
            recent: VecDeque::with_capacity(RECENT),
        }
    }

    /// Requests allowed in flight now: from 1 to the cap.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The current epoch, to hand back to [`Window::learn`] with the attempt's sign.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Learns from an attempt started in `epoch`.
    pub(crate) fn learn(&mut self, epoch: u64, sign: Sign) {
        match sign {
            Sign::Answered(latency) => {
                let slow = self.recent.len() >= WARM
                    && self
                        .median()
                        .is_some_and(|median| latency > median.saturating_mul(SLOW));
                if self.recent.len() == RECENT {
                    self.recent.pop_front();
                }
                self.recent.push_back(latency);
                if slow {
                    self.halve(epoch);
                } else if self.limit < self.cap {
                    self.credit += 1;
                    if self.credit >= self.limit {
                        self.limit += 1;
                        self.credit = 0;
                    }
                }
            }
            Sign::Overloaded => self.halve(epoch),
            Sign::Neutral => {}
        }
    }

    fn halve(&mut self, epoch: u64) {
        if epoch == self.epoch {
            self.limit = (self.limit / 2).max(1);
            self.credit = 0;
            self.epoch += 1;
        }
    }

    fn median(&self) -> Option<Duration> {
        let mut sorted: Vec<Duration> = self.recent.iter().copied().collect();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    }
}

/// The window shared by a client and its clones, and the requests in flight under it.
pub(crate) struct Gate {
    state: Mutex<State>,
    freed: Notify,
}

struct State {
    window: Window,
    in_flight: usize,
}

/// A place in the window, held for one attempt; dropping it frees the place.
pub(crate) struct Slot<'a> {
    gate: &'a Gate,
    epoch: u64,
    sent: Instant,
}

impl Gate {
    /// A gate whose window is open to `cap` requests.
    pub(crate) fn new(cap: usize) -> Self {
        Gate {
            state: Mutex::new(State {
                window: Window::new(cap),
                in_flight: 0,
            }),
            freed: Notify::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Requests allowed in flight now.
    pub(crate) fn limit(&self) -> usize {
        self.state().window.limit()
    }

    /// Waits for a place in the window.
    pub(crate) async fn enter(&self) -> Slot<'_> {
        loop {
            let freed = self.freed.notified();
            let mut freed = std::pin::pin!(freed);
            // Registered before the check, so a place freed in between is not missed.
            freed.as_mut().enable();
            {
                let mut state = self.state();
                if state.in_flight < state.window.limit() {
                    state.in_flight += 1;
                    return Slot {
                        gate: self,
                        epoch: state.window.epoch(),
                        sent: Instant::now(),
                    };
                }
            }
            freed.await;
        }
    }
}

impl Slot<'_> {
    /// Time since the place was taken.
    pub(crate) fn elapsed(&self) -> Duration {
        self.sent.elapsed()
    }

    /// Tells the window what the attempt showed, and frees the place.
    pub(crate) fn leave(self, sign: Sign) {
        let mut state = self.gate.state();
        let before = state.window.limit();
        state.window.learn(self.epoch, sign);
        let after = state.window.limit();
        if after < before {
            tracing::info!(
                before,
                after,
                "fewer requests in flight: the server shows signs of overload ({sign:?})"
            );
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.gate.state().in_flight -= 1;
        self.gate.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn it_starts_open_to_the_cap_and_halves_once_per_round_of_requests() {
        let mut w = Window::new(8);
        assert_eq!(w.limit(), 8);
        let round = w.epoch();
        w.learn(round, Sign::Overloaded);
        assert_eq!(w.limit(), 4);
        // Sent before the decrease: a second 429 of the same round changes nothing.
        w.learn(round, Sign::Overloaded);
        assert_eq!(w.limit(), 4);
        w.learn(w.epoch(), Sign::Overloaded);
        assert_eq!(w.limit(), 2);
        w.learn(w.epoch(), Sign::Overloaded);
        w.learn(w.epoch(), Sign::Overloaded);
        assert_eq!(w.limit(), 1, "never below one");
    }

    #[test]
    fn answers_in_good_time_widen_it_by_one_per_window_of_answers_up_to_the_cap() {
        let mut w = Window::new(4);
        w.learn(0, Sign::Overloaded);
        w.learn(1, Sign::Overloaded);
        assert_eq!(w.limit(), 1);
        // 1 → 2 takes one answer, 2 → 3 two, 3 → 4 three.
        let mut answers = 0;
        while w.limit() < 4 {
            w.learn(w.epoch(), Sign::Answered(10 * MS));
            answers += 1;
        }
        assert_eq!(answers, 1 + 2 + 3);
        for _ in 0..20 {
            w.learn(w.epoch(), Sign::Answered(10 * MS));
        }
        assert_eq!(w.limit(), 4, "never above the cap");
    }

    #[test]
    fn an_answer_far_slower_than_the_recent_median_halves_it() {
        let mut w = Window::new(8);
        for _ in 0..WARM {
            w.learn(w.epoch(), Sign::Answered(100 * MS));
        }
        assert_eq!(w.limit(), 8);
        w.learn(w.epoch(), Sign::Answered(399 * MS));
        assert_eq!(w.limit(), 8, "slower, but within {SLOW}× the median");
        w.learn(w.epoch(), Sign::Answered(401 * MS));
        assert_eq!(w.limit(), 4);
        // Neutral failures say nothing.
        w.learn(w.epoch(), Sign::Neutral);
        assert_eq!(w.limit(), 4);
    }

    #[test]
    fn a_slow_answer_before_enough_answers_to_compare_with_is_not_a_sign() {
        let mut w = Window::new(8);
        w.learn(0, Sign::Answered(MS));
        w.learn(0, Sign::Answered(10_000 * MS));
        assert_eq!(w.limit(), 8);
    }

    fn sign() -> impl Strategy<Value = Sign> {
        prop_oneof![
            (0u64..10_000).prop_map(|ms| Sign::Answered(Duration::from_millis(ms))),
            Just(Sign::Overloaded),
            Just(Sign::Neutral),
        ]
    }

    proptest! {
        #[test]
        fn the_limit_stays_between_one_and_the_cap(
            cap in 0usize..64,
            signs in prop::collection::vec((sign(), 0u64..3), 0..300),
        ) {
            let mut w = Window::new(cap);
            for (sign, lag) in signs {
                // Attempts started in this round or an earlier one.
                let epoch = w.epoch().saturating_sub(lag);
                w.learn(epoch, sign);
                prop_assert!(w.limit() >= 1);
                prop_assert!(w.limit() <= cap.max(1));
            }
        }
    }

    #[test]
    fn the_gate_holds_requests_beyond_the_window_until_a_place_is_freed() {
        use futures_util::FutureExt;
        let gate = Gate::new(2);
        let a = pollster::block_on(gate.enter());
        let b = pollster::block_on(gate.enter());
        let third = gate.enter();
        let mut third = std::pin::pin!(third);
        assert!(third.as_mut().now_or_never().is_none());
        a.leave(Sign::Overloaded);
        // The window is now 1 and one request (b) is still in flight.
        assert_eq!(gate.limit(), 1);
        assert!(third.as_mut().now_or_never().is_none());
        drop(b);
        let c = third.now_or_never().expect("a place once b left");
        assert_eq!(gate.state().in_flight, 1);
        drop(c);
        assert_eq!(gate.state().in_flight, 0);
    }
}
