//! Filters over generated questions: near-duplicates, the difficulty mix, and the check that a
//! question needs its document.

use super::{add_usage, parse_answer_value, Difficulty, Dropped, GenerateConfig, SplitMix};
use crate::dataset::Example;
use crate::embed::{cosine, HashingEmbedder};
use crate::error::Result;
use crate::level::Level;
use crate::llm::{ChatMessage, LlmClient, TokenUsage};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};

/// The corpus-wide filters in order: near-duplicates, then the difficulty mix.
pub(crate) fn finish<L: Level>(
    cfg: &GenerateConfig,
    examples: &mut Vec<Example<L>>,
    dropped: &mut Dropped,
) {
    if let Some(t) = cfg.dedup_threshold {
        dropped.duplicate += drop_near_duplicates(examples, t);
    }
    if let Some(mix) = &cfg.difficulty_mix {
        dropped.over_mix += enforce_mix(examples, mix, cfg.seed);
    }
}

/// Drops every question whose [`HashingEmbedder`] cosine similarity to an earlier kept
/// question is at least `threshold`; returns how many went.
pub(crate) fn drop_near_duplicates<L: Level>(
    examples: &mut Vec<Example<L>>,
    threshold: f32,
) -> usize {
    let embedder = HashingEmbedder::default();
    let mut kept: Vec<Vec<f32>> = Vec::new();
    let before = examples.len();
    examples.retain(|e| {
        let v = embedder.embed_one(&e.query);
        // A question with no words embeds as zeros, so it is compared by its text instead.
        let duplicate = if v.iter().all(|x| *x == 0.0) {
            false
        } else {
            kept.iter().any(|k| cosine(k, &v) >= threshold)
        };
        if !duplicate {
            kept.push(v);
        }
        !duplicate
    });
    before - examples.len()
}

/// Keeps the largest subset whose difficulty shares are `mix` (normalised; a difficulty left
/// out gets share 0), dropping the excess of each difficulty at random by `seed`. Examples
/// without a difficulty label are not affected. Returns how many went.
pub(crate) fn enforce_mix<L: Level>(
    examples: &mut Vec<Example<L>>,
    mix: &BTreeMap<Difficulty, f64>,
    seed: u64,
) -> usize {
    let sum: f64 = mix.values().sum();
    if sum <= 0.0 || !sum.is_finite() {
        return 0;
    }
    let share = |d: Difficulty| mix.get(&d).copied().unwrap_or(0.0) / sum;
    let mut by: BTreeMap<Difficulty, Vec<usize>> = BTreeMap::new();
    for (i, e) in examples.iter().enumerate() {
        if let Some(d) = e.difficulty().and_then(|d| d.parse::<Difficulty>().ok()) {
            by.entry(d).or_default().push(i);
        }
    }
    // The largest total N with N·share(d) ≤ count(d) for every difficulty with a share.
    let total = Difficulty::ALL
        .iter()
        .filter(|d| share(**d) > 0.0)
        .map(|d| by.get(d).map_or(0, Vec::len) as f64 / share(*d))
        .fold(f64::INFINITY, f64::min);
    let mut drop: HashSet<usize> = HashSet::new();
    for (d, idx) in &by {
        // Rounding N·share(d) cannot exceed the count: the count is an integer at least as
        // large. The small epsilon keeps exact shares such as 0.3·10 from rounding down.
        let quota = if total.is_finite() {
            ((total * share(*d)) + 1e-9).floor() as usize
        } else {
            0
        }
        .min(idx.len());
        let mut order = idx.clone();
        SplitMix::keyed(seed, &format!("mix/{d}")).shuffle(&mut order);
        drop.extend(order.into_iter().skip(quota));
    }
    let before = examples.len();
    let mut i = 0;
    examples.retain(|_| {
        i += 1;
        !drop.contains(&(i - 1))
    });
    before - examples.len()
}

/// Words of at least three letters, lower-cased: what an answer must share with the excerpt.
fn content_words(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// Asks the model to answer `question` without any document. The question is judged
/// answerable without its document (`true`, so it does not test retrieval) when the model
/// says it is highly confident **and** at least half of its answer's words (three letters or
/// more) occur in the excerpts: a confident answer that the excerpts do not support is a guess,
/// and the question is kept. An answer that is not the JSON asked for keeps the question too.
pub(crate) async fn answerable_without_document<C: LlmClient>(
    client: &C,
    cfg: &GenerateConfig,
    question: &str,
    excerpts: &[String],
    usage: &mut TokenUsage,
    calls: &mut usize,
) -> Result<bool> {
    let request = cfg
        .request(vec![
            ChatMessage::system(cfg.prompts.answerable.render::<&str>(&[])),
            ChatMessage::user(question),
        ])
        .with_json_schema(
            "closed_book_answer",
            json!({
                "type": "object",
                "properties": {
                    "answer": {"type": "string"},
                    "confidence": {"type": "string", "enum": ["high", "medium", "low"]}
                },
                "required": ["answer", "confidence"],
                "additionalProperties": false
            }),
        );
    let response = client.complete(&request).await?;
    *calls += 1;
    add_usage(usage, response.usage);
    let Ok(v) = parse_answer_value(&response.content) else {
        tracing::debug!("answerability check: unusable answer for {question:?}; keeping it");
        return Ok(false);
    };
    let confident = v
        .get("confidence")
        .and_then(|c| c.as_str())
        .is_some_and(|c| c.trim().eq_ignore_ascii_case("high"));
    let answer = v.get("answer").and_then(|a| a.as_str()).unwrap_or_default();
    let words = content_words(answer);
    if !confident || words.is_empty() {
        return Ok(false);
    }
    let support = content_words(&excerpts.join(" "));
    let shared = words.iter().filter(|w| support.contains(*w)).count();
    Ok(shared * 2 >= words.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::ChunkLevel;

    fn ex(query: &str, difficulty: Option<&str>) -> Example<ChunkLevel> {
        let mut metadata = crate::corpus::Metadata::new();
        if let Some(d) = difficulty {
            metadata.insert("difficulty".into(), d.into());
        }
        Example {
            id: query.into(),
            query: query.into(),
            truth: Vec::new(),
            span_texts: Vec::new(),
            metadata,
            reference_answers: Vec::new(),
        }
    }

    #[test]
    fn near_duplicates_keep_the_first() {
        let mut v = vec![
            ex("How do I roll back a flag?", None),
            ex("how do I roll back a flag", None),
            ex("Which port does the server listen on?", None),
            ex("?!", None),
            ex("...", None),
        ];
        assert_eq!(drop_near_duplicates(&mut v, 0.95), 1);
        let ids: Vec<_> = v.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "How do I roll back a flag?",
                "Which port does the server listen on?",
                "?!",
                "..."
            ]
        );
    }

    #[test]
    fn mix_keeps_the_largest_subset_with_the_target_shares() {
        let mut v: Vec<_> = (0..10)
            .map(|i| ex(&format!("f{i}"), Some("factual")))
            .chain((0..3).map(|i| ex(&format!("a{i}"), Some("analytical"))))
            .chain((0..4).map(|i| ex(&format!("p{i}"), Some("paraphrased"))))
            .chain([ex("none", None)])
            .collect();
        let mix = super::super::parse_mix("factual=0.5,analytical=0.5").unwrap();
        let mut again = v.clone();
        assert_eq!(enforce_mix(&mut v, &mix, 1), 7 + 4);
        let count = |p: &str| v.iter().filter(|e| e.id.starts_with(p)).count();
        assert_eq!((count("f"), count("a"), count("p")), (3, 3, 0));
        assert!(v.iter().any(|e| e.id == "none"), "unlabelled rows stay");
        enforce_mix(&mut again, &mix, 1);
        assert_eq!(again, v, "same seed, same choice");
        let mut other = (0..10)
            .map(|i| ex(&format!("f{i}"), Some("factual")))
            .chain((0..3).map(|i| ex(&format!("a{i}"), Some("analytical"))))
            .collect::<Vec<_>>();
        let kept_by_seed: Vec<Vec<String>> = (0..8)
            .map(|s| {
                let mut o = other.clone();
                enforce_mix(&mut o, &mix, s);
                o.iter().map(|e| e.id.clone()).collect()
            })
            .collect();
        assert!(
            kept_by_seed.iter().any(|k| k != &kept_by_seed[0]),
            "the seed chooses which ones go"
        );
        // Shares that are already met drop nothing.
        let even = BTreeMap::from([
            (Difficulty::Factual, 10.0 / 13.0),
            (Difficulty::Analytical, 3.0 / 13.0),
        ]);
        assert_eq!(enforce_mix(&mut other, &even, 0), 0);
    }
}
