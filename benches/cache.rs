//! What a cache hit costs: lookups of 384-dimension vectors in a warm SQLite cache of 10,000
//! entries, one at a time and in batches of 1,000 (consecutive entries, as a corpus embedded in
//! order reads them back, and entries scattered at random), next to what embedding the same
//! texts with the (cheap, local) `HashingEmbedder` costs and what storing a batch costs.
//!
//! `cargo bench --features cache --bench cache` (optional: `-- --rounds N`, default 31).
//! Texts are 400-character synthetic chunks (the key hashes the whole text), vectors seeded
//! random. Each figure is the median over rounds; a round of single lookups does 1,000 of them
//! at random and reports the mean per lookup. Every answer is checked against what was stored.
//!
//! Under `cargo test --features cache --benches` (no `--bench` flag) it runs a small
//! configuration once, unmeasured, as a smoke test.

use rag_eval::cache::{Cache, CacheMode, CachedEmbedder, EmbeddingEntry};
use rag_eval::embed::{Embedder, HashingEmbedder};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
struct Config {
    entries: usize,
    dim: usize,
    batch: usize,
    singles_per_round: usize,
    rounds: usize,
}

const FULL: Config = Config {
    entries: 10_000,
    dim: 384,
    batch: 1_000,
    singles_per_round: 1_000,
    rounds: 31,
};
const SMOKE: Config = Config {
    entries: 300,
    dim: 384,
    batch: 100,
    singles_per_round: 50,
    rounds: 1,
};
const PROVIDER: &str = "bench";
const MODEL: &str = "bench(dim=384)";

/// SplitMix64: seeded, portable, and enough for benchmark data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn vector(&mut self, dim: usize) -> Vec<f32> {
        (0..dim)
            .map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect()
    }
}

/// A 400-character chunk-like text, distinct for each `i`.
fn text(i: usize, rng: &mut Rng) -> String {
    const WORDS: [&str; 12] = [
        "retrieval",
        "chunk",
        "the",
        "of",
        "embedding",
        "query",
        "and",
        "model",
        "vector",
        "document",
        "a",
        "score",
    ];
    let mut t = format!("chunk {i}:");
    while t.len() < 400 {
        t.push(' ');
        t.push_str(WORDS[rng.below(WORDS.len())]);
    }
    t.truncate(400);
    t
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn fmt(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{:.3} ms", ns / 1e6)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let measuring = args.iter().any(|a| a == "--bench");
    let mut cfg = if measuring { FULL } else { SMOKE };
    if let Some(n) = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
    {
        cfg.rounds = n;
    }

    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("bench.sqlite");
    let path = path.to_str().expect("UTF-8 temporary path");
    let cache = Arc::new(Cache::open(path, CacheMode::ReadWrite).expect("open the cache"));
    let params = json!({"dimension": cfg.dim, "input": "document"});

    let mut rng = Rng(0x5eed);
    let texts: Vec<String> = (0..cfg.entries).map(|i| text(i, &mut rng)).collect();
    let vectors: Vec<Vec<f32>> = (0..cfg.entries).map(|_| rng.vector(cfg.dim)).collect();
    for (ts, vs) in texts.chunks(1000).zip(vectors.chunks(1000)) {
        let entries: Vec<EmbeddingEntry<'_>> = ts
            .iter()
            .zip(vs)
            .map(|(t, v)| EmbeddingEntry {
                text: t,
                vector: v,
                tokens: Some(100),
            })
            .collect();
        cache
            .put_embeddings(PROVIDER, MODEL, &params, &entries)
            .expect("fill the cache");
    }
    // Warm: every page read once.
    let all = cache
        .get_embeddings(PROVIDER, MODEL, &params, &texts)
        .expect("read back");
    assert!(all.iter().zip(&vectors).all(|(a, b)| a.as_ref() == Some(b)));

    // Each round measures every read path on keys of its own, in an order rotated from round
    // to round, so that none always runs right after another (what the one before left in
    // SQLite's and the CPU's caches shifts the figures on this machine).
    let embedder = CachedEmbedder::new(Fixed(cfg.dim), Arc::clone(&cache));
    let hashing = HashingEmbedder::new(cfg.dim, 2);
    // Stores go to a file of their own, so the read figures keep seeing 10,000 entries.
    let store_path = dir.path().join("store.sqlite");
    let store = Cache::open(
        store_path.to_str().expect("UTF-8 temporary path"),
        CacheMode::ReadWrite,
    )
    .expect("open the second cache");
    let mut times: [Vec<Duration>; 6] = Default::default();
    for round in 0..cfg.rounds {
        for step in 0..5 {
            let kind = (step + round) % 5;
            let start = rng.below(cfg.entries - cfg.batch);
            let block = &texts[start..start + cfg.batch];
            let picks: Vec<usize> = (0..cfg.batch).map(|_| rng.below(cfg.entries)).collect();
            let t = Instant::now();
            match kind {
                // One `get_embedding` at a time, keys scattered.
                0 => {
                    let picks = &picks[..cfg.singles_per_round];
                    let mut found = Vec::with_capacity(picks.len());
                    for &i in picks {
                        found.push(
                            cache
                                .get_embedding(PROVIDER, MODEL, &params, &texts[i])
                                .expect("lookup"),
                        );
                    }
                    times[0].push(t.elapsed() / cfg.singles_per_round as u32);
                    for (i, v) in picks.iter().zip(found) {
                        assert_eq!(v.as_ref(), Some(&vectors[*i]));
                    }
                }
                // A batch of consecutive entries, as a corpus embedded in order is read back.
                1 => {
                    let got = cache
                        .get_embeddings(PROVIDER, MODEL, &params, block)
                        .expect("batch lookup");
                    times[1].push(t.elapsed());
                    assert!(got
                        .iter()
                        .zip(&vectors[start..])
                        .all(|(a, b)| a.as_ref() == Some(b)));
                }
                // A batch of keys scattered over the whole cache.
                2 => {
                    let scattered: Vec<&str> = picks.iter().map(|&i| texts[i].as_str()).collect();
                    let t = Instant::now();
                    let got = cache
                        .get_embeddings(PROVIDER, MODEL, &params, &scattered)
                        .expect("scattered lookup");
                    times[2].push(t.elapsed());
                    assert!(picks
                        .iter()
                        .zip(&got)
                        .all(|(&i, v)| v.as_ref() == Some(&vectors[i])));
                }
                // The whole `Embedder` path, consecutive entries.
                3 => {
                    let got = pollster::block_on(embedder.embed(block)).expect("cached embed");
                    times[3].push(t.elapsed());
                    assert_eq!(got, vectors[start..start + cfg.batch]);
                }
                // What a hit spares, at the least: a local embedder.
                _ => {
                    let v = pollster::block_on(hashing.embed(block)).expect("hashing embed");
                    times[4].push(t.elapsed());
                    assert_eq!(v.len(), cfg.batch);
                }
            }
        }
        // New entries each round: one write transaction per batch.
        let start = rng.below(cfg.entries - cfg.batch);
        let fresh: Vec<String> = (0..cfg.batch)
            .map(|i| format!("round {round} {}", texts[start + i]))
            .collect();
        let entries: Vec<EmbeddingEntry<'_>> = fresh
            .iter()
            .zip(&vectors[start..])
            .map(|(t, v)| EmbeddingEntry {
                text: t,
                vector: v,
                tokens: None,
            })
            .collect();
        let t = Instant::now();
        store
            .put_embeddings(PROVIDER, MODEL, &params, &entries)
            .expect("batch store");
        times[5].push(t.elapsed());
    }
    let s = embedder.stats();
    assert_eq!(s.misses, 0, "the wrapper must answer from the cache alone");

    if !measuring {
        println!(
            "cache: smoke run ({} entries, {} rounds); use `cargo bench --features cache --bench \
             cache` to measure. {}",
            cfg.entries,
            cfg.rounds,
            cache.stats()
        );
        return;
    }
    let per = |d: Duration| fmt(d / cfg.batch as u32);
    println!(
        "cache: {} entries of {} dimensions, batches of {}, {} rounds (medians)",
        cfg.entries, cfg.dim, cfg.batch, cfg.rounds
    );
    let [single, row, scattered, wrapped, hashed, stored] = times.map(median);
    println!(
        "  {:<35} {:>10} per hit",
        "Cache::get_embedding, one at a time",
        fmt(single)
    );
    let lines = [
        ("Cache::get_embeddings, consecutive", row, "hit"),
        ("Cache::get_embeddings, scattered", scattered, "hit"),
        ("CachedEmbedder::embed, consecutive", wrapped, "hit"),
        ("HashingEmbedder::embed", hashed, "text"),
        ("Cache::put_embeddings (2nd file)", stored, "entry"),
    ];
    for (what, d, unit) in lines {
        println!(
            "  {what:<35} {:>10} per {} ({} per {unit})",
            fmt(d),
            cfg.batch,
            per(d)
        );
    }
    cache.checkpoint().expect("checkpoint");
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "  file: {:.1} MB for {} entries ({:.0} bytes each)",
        size as f64 / 1e6,
        cfg.entries,
        size as f64 / cfg.entries as f64
    );
}

/// An embedder that must never be called: the wrapper's entries are all in the cache already
/// (stored under this name and dimension by the fill above).
struct Fixed(usize);

#[async_trait::async_trait]
impl Embedder for Fixed {
    fn name(&self) -> String {
        MODEL.into()
    }
    fn dimension(&self) -> usize {
        self.0
    }
    async fn embed(&self, _texts: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        Err(rag_eval::EmbedError::new(MODEL, "the benchmark expects only hits").into())
    }
}
