//! Where an [`OnnxEmbedder`](super::OnnxEmbedder)'s time goes.

use std::fmt;
use std::time::Duration;

/// Counts and times accumulated by an [`OnnxEmbedder`](super::OnnxEmbedder) since it was made,
/// split by stage. Read it with [`OnnxEmbedder::profile`](super::OnnxEmbedder::profile) before
/// and after some work and take the difference with [`OnnxProfile::since`].
///
/// The stages are timed once per model call, so keeping the profile costs a few clock reads
/// per batch. Concurrent calls take turns at the model; the time one waits for another's batch
/// is in no stage, so the stages of concurrent calls add up to no more than the wall time.
///
/// ```
/// use rag_eval::embed::OnnxProfile;
/// use std::time::Duration;
///
/// let before = OnnxProfile { texts: 2, inference: Duration::from_millis(5), ..Default::default() };
/// let after = OnnxProfile { texts: 10, inference: Duration::from_millis(25), ..Default::default() };
/// let delta = after.since(&before);
/// assert_eq!((delta.texts, delta.inference), (8, Duration::from_millis(20)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OnnxProfile {
    /// Calls to the embedder (each with any number of texts).
    pub calls: u64,
    /// Texts embedded.
    pub texts: u64,
    /// Model calls (batches).
    pub batches: u64,
    /// Tokens of the texts, special tokens included, after truncation.
    pub tokens: u64,
    /// Token slots fed to the model: each batch's rows times its longest text. The excess over
    /// `tokens` is padding.
    pub token_slots: u64,
    /// Tokenising the texts and ordering them by length.
    pub tokenize: Duration,
    /// Writing token ids, masks and type ids into the input tensors.
    pub tensors: Duration,
    /// onnxruntime running the graph (`Session::run`).
    pub inference: Duration,
    /// Mean pooling and normalisation of the output, and putting vectors back in input order.
    pub pool: Duration,
    /// Sessions made: the model is loaded by the first call that needs it, so 1 after that
    /// call and 0 for an embedder whose every vector came from elsewhere (a cache).
    pub sessions: u64,
    /// Loading the runtime library and the model into a session.
    pub load: Duration,
}

impl OnnxProfile {
    /// What happened between `earlier` (a profile read before) and `self`.
    pub fn since(&self, earlier: &OnnxProfile) -> OnnxProfile {
        OnnxProfile {
            calls: self.calls.saturating_sub(earlier.calls),
            texts: self.texts.saturating_sub(earlier.texts),
            batches: self.batches.saturating_sub(earlier.batches),
            tokens: self.tokens.saturating_sub(earlier.tokens),
            token_slots: self.token_slots.saturating_sub(earlier.token_slots),
            tokenize: self.tokenize.saturating_sub(earlier.tokenize),
            tensors: self.tensors.saturating_sub(earlier.tensors),
            inference: self.inference.saturating_sub(earlier.inference),
            pool: self.pool.saturating_sub(earlier.pool),
            sessions: self.sessions.saturating_sub(earlier.sessions),
            load: self.load.saturating_sub(earlier.load),
        }
    }

    /// The time of all stages together, loading the model included.
    pub fn total(&self) -> Duration {
        self.load + self.tokenize + self.tensors + self.inference + self.pool
    }
}

impl std::ops::AddAssign for OnnxProfile {
    fn add_assign(&mut self, other: OnnxProfile) {
        self.calls += other.calls;
        self.texts += other.texts;
        self.batches += other.batches;
        self.tokens += other.tokens;
        self.token_slots += other.token_slots;
        self.tokenize += other.tokenize;
        self.tensors += other.tensors;
        self.inference += other.inference;
        self.pool += other.pool;
        self.sessions += other.sessions;
        self.load += other.load;
    }
}

impl fmt::Display for OnnxProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |d: Duration| d.as_secs_f64();
        write!(
            f,
            "{} texts in {} batches, {} tokens in {} slots; load {:.3} s ({} sessions), tokenize {:.3} s, tensors {:.3} s, inference {:.3} s, pool {:.3} s",
            self.texts,
            self.batches,
            self.tokens,
            self.token_slots,
            s(self.load),
            self.sessions,
            s(self.tokenize),
            s(self.tensors),
            s(self.inference),
            s(self.pool)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_subtracts_every_field_and_total_adds_the_stages() {
        let ms = Duration::from_millis;
        let before = OnnxProfile {
            calls: 1,
            texts: 3,
            batches: 1,
            tokens: 30,
            token_slots: 36,
            tokenize: ms(1),
            tensors: ms(2),
            inference: ms(30),
            pool: ms(3),
            sessions: 1,
            load: ms(200),
        };
        let after = OnnxProfile {
            calls: 3,
            texts: 10,
            batches: 4,
            tokens: 100,
            token_slots: 130,
            tokenize: ms(4),
            tensors: ms(4),
            inference: ms(100),
            pool: ms(5),
            sessions: 1,
            load: ms(200),
        };
        let d = after.since(&before);
        assert_eq!(
            d,
            OnnxProfile {
                calls: 2,
                texts: 7,
                batches: 3,
                tokens: 70,
                token_slots: 94,
                tokenize: ms(3),
                tensors: ms(2),
                inference: ms(70),
                pool: ms(2),
                sessions: 0,
                load: ms(0),
            }
        );
        assert_eq!(d.total(), ms(77));
        assert_eq!(before.total(), ms(236), "loading counts");
        let mut sum = before;
        sum += d;
        assert_eq!(sum, after);
        // A profile from another embedder (or in the wrong order) floors at zero.
        assert_eq!(before.since(&after), OnnxProfile::default());
    }
}
