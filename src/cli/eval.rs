//! `rag-eval eval`: retrieve every query of a dataset over a corpus and score it.

use super::output::Output;
use super::CorpusArgs;
use crate::chunker::{parse_spec, PositionAwareChunker};
use crate::dataset::{self, AnyDataset};
use crate::embed::HashingEmbedder;
use crate::eval::{ChunkLevelEvaluation, TokenLevelEvaluation};
use crate::level::TokenLevel;
use crate::metrics::SpanMode;
use crate::retrieve::{Bm25Retriever, Pipeline, Retriever};
use anyhow::{anyhow, bail, Result};
use camino::Utf8PathBuf;
use clap::Args;

#[derive(Args)]
pub(super) struct EvalArgs {
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Dataset JSONL (token- or chunk-level).
    #[arg(long)]
    dataset: Utf8PathBuf,
    /// Chunker spec; repeat to compare chunkers.
    #[arg(long = "chunker", value_name = "SPEC", required = true)]
    chunkers: Vec<String>,
    /// `bm25[:k1=1.2,b=0.75]` or `dense[:embedder=hashing]`.
    #[arg(long, default_value = "bm25")]
    retriever: String,
    /// Chunks retrieved per query.
    #[arg(short = 'k', default_value_t = 5)]
    k: usize,
    /// Span scoring mode (token level).
    #[arg(long, value_enum, default_value = "standard")]
    mode: SpanMode,
    /// Print one JSON object per chunker (JSONL) instead of a table.
    #[arg(long)]
    json: bool,
}

/// Builds the retriever a `--retriever` spec names around `chunker`.
fn build_retriever(
    spec: &str,
    chunker: Box<dyn PositionAwareChunker>,
) -> Result<Box<dyn AnyLevelRetriever>> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let mut keys = std::collections::BTreeMap::new();
    for pair in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| anyhow!("retriever spec `{spec}`: `{pair}` is not key=value"))?;
        keys.insert(k.trim(), v.trim());
    }
    let number = |key: &str, default: f32| -> Result<f32> {
        keys.get(key).map_or(Ok(default), |v| {
            v.parse().map_err(|_| {
                anyhow!("retriever spec `{spec}`: `{key}` must be a number, got `{v}`")
            })
        })
    };
    let check_keys = |allowed: &[&str]| -> Result<()> {
        match keys.keys().find(|k| !allowed.contains(k)) {
            Some(k) => bail!(
                "retriever spec `{spec}`: unknown key `{k}`; keys: {}",
                allowed.join(", ")
            ),
            None => Ok(()),
        }
    };
    let chunker: std::sync::Arc<dyn PositionAwareChunker> = chunker.into();
    match name {
        "bm25" => {
            check_keys(&["k1", "b"])?;
            Ok(Box::new(
                Bm25Retriever::from_arc(chunker)
                    .with_params(number("k1", 1.2)?, number("b", 0.75)?),
            ))
        }
        "dense" => {
            check_keys(&["embedder"])?;
            match keys.get("embedder").copied() {
                None | Some("hashing") => {}
                Some(other) => bail!("retriever spec `{spec}`: `embedder` must be `hashing` (the offline embedder), got `{other}`"),
            }
            Ok(Box::new(Pipeline::from_arc(
                chunker,
                std::sync::Arc::new(HashingEmbedder::default()),
            )))
        }
        other => bail!("unknown retriever `{other}`; known: bm25, dense"),
    }
}

/// A retriever usable at both levels, as the built-ins are.
trait AnyLevelRetriever: Retriever<TokenLevel> + Retriever<crate::level::ChunkLevel> {}
impl<T: Retriever<TokenLevel> + Retriever<crate::level::ChunkLevel>> AnyLevelRetriever for T {}

pub(super) fn run(a: EvalArgs, out: &mut Output) -> Result<()> {
    if a.k == 0 {
        bail!("-k must be at least 1");
    }
    let corpus = std::sync::Arc::new(a.corpus.load()?);
    let dataset = dataset::load(&a.dataset)?;
    let mut results = Vec::new();
    for spec in &a.chunkers {
        let chunker = parse_spec(spec)?;
        let result = match &dataset {
            AnyDataset::Token(d) => {
                // Every registered metric in the chosen mode; PrecisionΩ from the chunks the
                // retriever indexed.
                let retriever = build_retriever(&a.retriever, chunker)?;
                let evaluation =
                    TokenLevelEvaluation::new(corpus.clone(), d.clone())?.with_mode(a.mode);
                pollster::block_on(
                    evaluation.run_reported(&*retriever as &dyn Retriever<TokenLevel>, a.k),
                )?
            }
            AnyDataset::Chunk(d) => {
                if a.mode != SpanMode::Standard {
                    bail!(
                        "--mode {} scores character spans; `{}` is a chunk-level dataset",
                        a.mode,
                        a.dataset
                    );
                }
                let retriever = build_retriever(&a.retriever, chunker)?;
                let evaluation = ChunkLevelEvaluation::new(corpus.clone(), d.clone())?;
                pollster::block_on(
                    evaluation
                        .run_reported(&*retriever as &dyn Retriever<crate::level::ChunkLevel>, a.k),
                )?
            }
        };
        if a.json {
            out.json_line(&result)?;
            // Each chunker's line as soon as it exists: a comparison can take minutes.
            out.flush()?;
        }
        results.push((spec.clone(), result));
    }
    if !a.json {
        out.text(&format!(
            "retriever: {}\n{}",
            a.retriever,
            crate::eval::comparison_table(&results)
        ))?;
    }
    Ok(())
}
