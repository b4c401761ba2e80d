//! What a dataset holds, in figures: rows per difficulty, ground truth per row, span lengths.
//!
//! ```
//! use rag_eval::dataset::{self, stats::DatasetStats};
//! let d = dataset::parse(
//!     r#"{"id":"q1","inputs":{"query":"?"},"outputs":{"relevant_chunk_ids":["a","b"]},"metadata":{"difficulty":"factual"}}"#,
//!     "inline",
//! )?;
//! let s = DatasetStats::of(&d);
//! assert_eq!((s.rows, s.truth_items), (1, 2));
//! assert_eq!(s.difficulty["factual"], 1);
//! # Ok::<(), rag_eval::Error>(())
//! ```

use super::{AnyDataset, Dataset};
use crate::level::Level;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Rows without a `difficulty` are counted under this name.
pub const UNLABELLED: &str = "unlabelled";

/// The spread of some figure over a dataset. All zero for no values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Distribution {
    /// The smallest value.
    pub min: f64,
    /// The middle value (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// The largest value.
    pub max: f64,
}

impl Distribution {
    /// The distribution of `values`.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return Distribution {
                min: 0.0,
                median: 0.0,
                mean: 0.0,
                max: 0.0,
            };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Distribution {
            min: v[0],
            median,
            mean: v.iter().sum::<f64>() / n as f64,
            max: v[n - 1],
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "min {}, median {}, mean {:.1}, max {}",
            self.min, self.median, self.mean, self.max
        )
    }
}

/// Figures describing a dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetStats {
    /// What the file holds: `chunk`, `token` or `qa` (questions with reference answers and no
    /// retrieval truth; the truth figures are then 0 and retrieval is not measured).
    pub shape: super::Shape,
    /// Rows (queries).
    pub rows: usize,
    /// Rows per `difficulty` label ([`UNLABELLED`] for rows without one).
    pub difficulty: BTreeMap<String, usize>,
    /// Ground-truth items over all rows: spans at token level, chunk ids at chunk level.
    pub truth_items: usize,
    /// Ground-truth items per row.
    pub truth_per_row: Distribution,
    /// Rows with at least one reference answer (`outputs.reference_answer`); answer metrics
    /// that compare with a reference skip the others.
    pub with_reference_answer: usize,
    /// Span lengths in characters (token level only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_chars: Option<Distribution>,
    /// The chunker a chunk-level dataset's ids come from (`metadata.chunker` of the first row
    /// that records one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunker: Option<String>,
}

impl DatasetStats {
    /// The figures of `d`.
    pub fn of(d: &AnyDataset) -> Self {
        let shape = d.shape();
        let mut s = match d {
            AnyDataset::Token(d) => {
                let mut s = of_level(d, shape, Vec::len);
                s.span_chars = Some(Distribution::of(
                    d.examples()
                        .iter()
                        .flat_map(|e| e.truth.iter().map(|t| t.len() as f64)),
                ));
                s
            }
            AnyDataset::Chunk(d) => of_level(d, shape, Vec::len),
        };
        if shape == super::Shape::Qa {
            s.span_chars = None;
        }
        s
    }
}

fn of_level<L: Level>(
    d: &Dataset<L>,
    shape: super::Shape,
    count: impl Fn(&L::Truth) -> usize,
) -> DatasetStats {
    let mut difficulty = BTreeMap::new();
    for e in d.examples() {
        *difficulty
            .entry(e.difficulty().unwrap_or(UNLABELLED).to_owned())
            .or_insert(0) += 1;
    }
    let per_row: Vec<usize> = d.examples().iter().map(|e| count(&e.truth)).collect();
    DatasetStats {
        shape,
        rows: d.len(),
        difficulty,
        truth_items: per_row.iter().sum(),
        truth_per_row: Distribution::of(per_row.iter().map(|&n| n as f64)),
        with_reference_answer: d
            .examples()
            .iter()
            .filter(|e| !e.reference_answers.is_empty())
            .count(),
        span_chars: None,
        chunker: d.examples().iter().find_map(|e| {
            e.metadata
                .get("chunker")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset;

    fn d(text: &str) -> AnyDataset {
        dataset::parse(text, "t.jsonl").unwrap()
    }

    #[test]
    fn distributions_by_hand() {
        assert_eq!(
            Distribution::of([3.0, 1.0, 2.0]),
            Distribution {
                min: 1.0,
                median: 2.0,
                mean: 2.0,
                max: 3.0
            }
        );
        let even = Distribution::of([4.0, 1.0, 10.0, 2.0]);
        assert_eq!((even.median, even.mean), (3.0, 4.25));
        assert_eq!(
            Distribution::of([]),
            Distribution {
                min: 0.0,
                median: 0.0,
                mean: 0.0,
                max: 0.0
            }
        );
        assert_eq!(
            Distribution::of([1.0, 2.0, 2.0, 7.0]).to_string(),
            "min 1, median 2, mean 3.0, max 7"
        );
    }

    #[test]
    fn token_level_stats_count_spans_and_their_lengths() {
        let s = DatasetStats::of(&d(concat!(
            r#"{"id":"a","inputs":{"query":"?"},"outputs":{"relevant_spans":[{"doc_id":"x","start":0,"end":10},{"doc_id":"x","start":20,"end":24}]},"metadata":{"difficulty":"factual"}}"#,
            "\n",
            r#"{"id":"b","inputs":{"query":"?"},"outputs":{"relevant_spans":[{"doc_id":"y","start":5,"end":11}],"reference_answer":["x","y"]},"metadata":{}}"#,
            "\n",
            r#"{"id":"c","inputs":{"query":"?"},"outputs":{"relevant_spans":[{"doc_id":"y","start":0,"end":1}]},"metadata":{"difficulty":"factual"}}"#,
        )));
        assert_eq!((s.shape, s.rows), (super::super::Shape::Token, 3));
        assert_eq!(
            s.difficulty,
            BTreeMap::from([("factual".to_owned(), 2), (UNLABELLED.to_owned(), 1)])
        );
        assert_eq!(s.truth_items, 4);
        assert_eq!(s.with_reference_answer, 1);
        assert_eq!(
            s.truth_per_row,
            Distribution {
                min: 1.0,
                median: 1.0,
                mean: 4.0 / 3.0,
                max: 2.0
            }
        );
        // Lengths 10, 4, 6, 1.
        assert_eq!(
            s.span_chars,
            Some(Distribution {
                min: 1.0,
                median: 5.0,
                mean: 5.25,
                max: 10.0
            })
        );
        assert_eq!(s.chunker, None);
    }

    #[test]
    fn question_answer_files_say_their_shape_and_have_no_truth() {
        let s = DatasetStats::of(&d(concat!(
            r#"{"id":"a","inputs":{"query":"?"},"outputs":{"reference_answer":"x"}}"#,
            "\n",
            r#"{"id":"b","inputs":{"query":"?"},"outputs":{"reference_answer":["y","z"]}}"#,
        )));
        assert_eq!(s.shape, super::super::Shape::Qa);
        assert_eq!((s.rows, s.truth_items, s.with_reference_answer), (2, 0, 2));
        assert_eq!(s.span_chars, None);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["shape"], "qa");
    }

    #[test]
    fn chunk_level_stats_name_the_chunker_and_have_no_span_lengths() {
        let s = DatasetStats::of(&d(concat!(
            r#"{"id":"a","inputs":{"query":"?"},"outputs":{"relevant_chunk_ids":["c1"]},"metadata":{}}"#,
            "\n",
            r#"{"id":"b","inputs":{"query":"?"},"outputs":{"relevant_chunk_ids":["c1","c2","c3"]},"metadata":{"chunker":"recursive:size=400,overlap=0"}}"#,
        )));
        assert_eq!((s.rows, s.truth_items), (2, 4));
        assert_eq!(s.truth_per_row.median, 2.0);
        assert_eq!(s.span_chars, None);
        assert_eq!(s.chunker.as_deref(), Some("recursive:size=400,overlap=0"));
        assert_eq!(s.with_reference_answer, 0);
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("span_chars").is_none(), "{json}");
    }
}
