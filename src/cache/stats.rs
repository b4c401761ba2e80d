//! What the cache saved and what the calls it could not answer cost.

use crate::llm::TokenUsage;
use std::fmt;

/// US dollars per 1,000 tokens of one provider's model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    /// Per 1,000 prompt (input) tokens.
    pub prompt_per_1k: f64,
    /// Per 1,000 completion (output) tokens.
    pub completion_per_1k: f64,
}

impl Price {
    /// One price for every token, as embedding models are priced.
    pub fn per_1k(usd: f64) -> Self {
        Price {
            prompt_per_1k: usd,
            completion_per_1k: usd,
        }
    }

    /// What `usage` costs at this price.
    pub fn cost(&self, usage: TokenUsage) -> f64 {
        (usage.prompt_tokens as f64 * self.prompt_per_1k
            + usage.completion_tokens as f64 * self.completion_per_1k)
            / 1000.0
    }
}

/// What a cache answered and what the calls it could not answer cost.
///
/// `Display` gives one line for reports: `cache: 1,980 hits, 20 misses, 12,345 tokens, $0.0016`
/// (tokens when any were reported, cost when a [`Price`] is set).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CacheStats {
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests the cache could not answer (in `off` mode, every request).
    pub misses: u64,
    /// Tokens the provider reported for the calls made on misses.
    pub tokens: u64,
    /// Tokens the hits had cost when they were recorded (where that was reported).
    pub saved_tokens: u64,
    /// What `tokens` cost, when a price is set for the models involved.
    pub cost: Option<f64>,
}

impl CacheStats {
    /// Hits as a fraction of all requests (0 when there were none).
    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

impl fmt::Display for CacheStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: u64, one: &str, many: &str| {
            format!("{} {}", grouped(n), if n == 1 { one } else { many })
        };
        write!(
            f,
            "cache: {}, {}",
            plural(self.hits, "hit", "hits"),
            plural(self.misses, "miss", "misses")
        )?;
        if self.tokens > 0 || self.cost.is_some() {
            write!(f, ", {}", plural(self.tokens, "token", "tokens"))?;
        }
        if let Some(cost) = self.cost {
            write!(f, ", ${cost:.4}")?;
        }
        Ok(())
    }
}

/// `n` with a comma every three digits.
pub(super) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One (provider, model)'s hits, misses and spending so far.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Tally {
    pub(super) hits: u64,
    pub(super) misses: u64,
    pub(super) usage: TokenUsage,
    pub(super) saved_tokens: u64,
    pub(super) price: Option<Price>,
    /// Whether the model is an embedder (its calls are vector lookups and stores).
    pub(super) embedding: bool,
}

impl Tally {
    pub(super) fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits,
            misses: self.misses,
            tokens: self.usage.total(),
            saved_tokens: self.saved_tokens,
            cost: self.price.map(|p| p.cost(self.usage)),
        }
    }
}
