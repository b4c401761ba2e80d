//! `rag-eval eval`: retrieve every query of a dataset over a corpus and score it.

use super::answering::{AnswerArgs, AnswerRun};
use super::dry_run::{DryRun, EvalPlan};
use super::output::Output;
use super::CorpusArgs;
use crate::chunker::{build_parsed_chunker, parse_spec, PositionAwareChunker};
use crate::components::{self, Context};
use crate::dataset::ToRow;
use crate::dataset::{self, AnyDataset};
use crate::eval::{ChunkLevelEvaluation, Evaluation, EvaluationResult, TokenLevelEvaluation};
use crate::judge::JudgeSummary;
use crate::level::{ChunkLevel, TokenLevel};
use crate::metrics::registry::RegisteredLevel;
use crate::metrics::SpanMode;
use crate::retrieve::Retriever;
use crate::runs::{RunRecord, Spend, Usage};
use crate::spec::{Kind, Spec};
use anyhow::{bail, Result};
use camino::Utf8PathBuf;
use clap::Args;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Args)]
#[command(group = clap::ArgGroup::new("judged").args(["answers", "rag"]))]
pub(super) struct EvalArgs {
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Dataset JSONL: each row's question with its truth as character spans (token-level) or
    /// chunk ids (chunk-level); with --rag, rows without retrieval truth score the answers alone.
    #[arg(long, required_unless_present = "conversations")]
    dataset: Option<Utf8PathBuf>,
    /// Play the conversations of FILE (JSONL, `docs/reference/conversations.md`) through the
    /// service of --rag in its conversation mode, feeding back the recorded tool results of
    /// the tools it does not run itself, and score the transcripts as `score --conversations`
    /// does (agent figures, each turn's retrieval and answer figures, and with --judge-model
    /// the turn and conversation judges).
    #[arg(long, value_name = "FILE", requires = "rag", conflicts_with_all = ["dataset", "save_answers", "labels"])]
    conversations: Option<Utf8PathBuf>,
    /// With --conversations: the most assistant turns a conversation may take; a service
    /// that needs more fails the command (default: 16 per user turn).
    #[arg(long, value_name = "N", requires = "conversations", value_parser = clap::value_parser!(u64).range(1..))]
    max_steps: Option<u64>,
    /// Chunker spec; repeat to compare chunkers. Required unless the retriever spec has a
    /// `chunker` key.
    #[arg(long = "chunker", value_name = "SPEC")]
    chunkers: Vec<String>,
    /// Retriever spec, e.g. `bm25:k1=1.2,b=0.75` or
    /// `dense:embedder=openai:model=text-embedding-3-small,store=chroma:url=http://127.0.0.1:8000,collection=docs`
    /// (every component and key is listed below).
    #[arg(long, value_name = "SPEC", default_value = "bm25")]
    retriever: String,
    /// Evaluate a whole RAG system instead of a retriever: `http:url=URL` asks a service every
    /// query and scores its answers (lexical metrics against `reference_answer`) and its
    /// contexts (placed in the corpus when given as text). Keys are listed below (`rag:`).
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["chunkers", "retriever", "answers", "langsmith_experiment"])]
    rag: Option<String>,
    /// Embedder spec for `answer_similarity` and the `answer_relevancy` judge (with --rag),
    /// e.g. `hashing` or `openai:model=text-embedding-3-small`; without it they are left out.
    #[arg(long, value_name = "SPEC", requires = "rag")]
    embedder: Option<String>,
    /// Write the service's answers and contexts (with --rag) to FILE as an answers file, which
    /// `score --answers FILE` scores again without the service.
    #[arg(long, value_name = "FILE", requires = "rag")]
    save_answers: Option<Utf8PathBuf>,
    /// Record/replay cache of every provider's answers: embeddings, the generator's and the
    /// judges' responses, the service's with --rag. `rw`, `replay` (offline: a miss is an
    /// error) or `off`, with `:path=FILE` (default `target/rag-eval-cache.sqlite`). Without it
    /// nothing is cached.
    #[arg(long, value_name = "MODE[:path=FILE]")]
    cache: Option<String>,
    /// Chunks retrieved per query.
    #[arg(short = 'k', default_value_t = 5)]
    k: usize,
    /// Span scoring mode (token level).
    #[arg(long, value_enum, default_value = "standard")]
    mode: SpanMode,
    /// People's labels of the answers (JSONL of `{"id": …, "labels": {"<metric>": value}}`,
    /// or a dataset with `outputs.labels`): kept in each run, and each judged metric with at
    /// least two labelled queries gets its judge-corrected mean beside the raw one.
    #[arg(long, value_name = "FILE")]
    labels: Option<Utf8PathBuf>,
    /// Print one JSON object per chunker (JSONL) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    langsmith: super::langsmith::ExperimentArgs,
    /// Do not record the runs in the run store (`RAG_EVAL_RUNS=off` does the same).
    #[arg(long)]
    no_record: bool,
    /// A short name for the runs in the run store, reports and comparisons (e.g. the system
    /// or the change evaluated); with several --chunker, each run's name is followed by its
    /// chunker. Without it each run is named by its chunker.
    #[arg(long)]
    label: Option<String>,
    #[command(flatten)]
    answers: AnswerArgs,
    #[command(flatten)]
    timeout: super::TimeoutArgs,
    #[command(flatten)]
    dry: super::dry_run::DryRunArgs,
}

pub(super) fn run(a: EvalArgs, out: &mut Output) -> Result<()> {
    if a.k == 0 {
        bail!("-k must be at least 1");
    }
    if let (Some(spec), Some(path)) = (&a.rag, &a.conversations) {
        if a.dry.dry_run {
            bail!("--conversations has no --dry-run: the turns a service is asked depend on its answers");
        }
        // Only the judges embed here (`answer_relevancy`): the turns' `answer_similarity` is
        // not measured, as in `score --conversations`.
        if a.embedder.is_some() && a.answers.judge.judge_model.is_none() {
            bail!("--embedder with --conversations is for the `answer_relevancy` judge: give --judge-model too");
        }
        // The turns' contexts given as text are placed in it, as an answers file's are.
        let corpus = Some(a.corpus.load()?);
        let run = super::eval_conversations::ConversationRun {
            spec,
            path,
            corpus,
            cache: a.cache.as_deref(),
            timeout: a.timeout,
            max_steps: a.max_steps.map(|n| n as usize),
            k: a.k,
            mode: a.mode,
            judge: &a.answers.judge,
            api_key_env: &a.answers.api_key_env,
            embedder: a.embedder.as_deref(),
            json: a.json,
            no_record: a.no_record,
            label: a.label.clone(),
        };
        return super::eval_conversations::run(run, out);
    }
    // clap asks for one of --dataset and --conversations, and --conversations needs --rag.
    let Some(dataset_path) = a.dataset.clone() else {
        bail!("--dataset is required");
    };
    if let Some(spec) = &a.rag {
        let run = super::score::RagRun {
            dataset: dataset_path,
            corpus: a.corpus.corpus.clone(),
            glob: a.corpus.glob.clone(),
            k: a.k,
            mode: a.mode,
            cache: a.cache.clone(),
            timeout: a.timeout,
            json: a.json,
            no_record: a.no_record,
            label: a.label.clone(),
            labels: a.labels.clone(),
            embedder: a.embedder.clone(),
            judge: a.answers.judge.clone(),
            judge_url: a.answers.base_url.clone(),
            api_key_env: a.answers.api_key_env.clone(),
            save_answers: a.save_answers.clone(),
            dry: a.dry,
        };
        return super::score::run_rag(run, spec, out);
    }
    // Spec errors before any corpus is read.
    let retriever_spec = Spec::parse(Kind::Retriever, &a.retriever)?;
    let chunkers: Vec<(String, Arc<dyn PositionAwareChunker>)> =
        match (retriever_spec.nested("chunker"), a.chunkers.is_empty()) {
            (Some(_), false) => bail!(
                "retriever spec `{}` names a chunker: leave out --chunker, or the `chunker` key",
                a.retriever
            ),
            (Some(c), true) => {
                let chunker: Arc<dyn PositionAwareChunker> = build_parsed_chunker(c)?.into();
                vec![(chunker.name(), chunker)]
            }
            (None, true) => {
                bail!("no chunker: give --chunker SPEC, or a `chunker` key in the retriever spec")
            }
            (None, false) => a
                .chunkers
                .iter()
                .map(|s| Ok((s.clone(), parse_spec(s)?.into())))
                .collect::<Result<_>>()?,
        };
    let context = match &a.cache {
        None => Context::new(),
        Some(text) if a.dry.dry_run => super::dry_run::cache_context(text)?,
        Some(text) => super::with_cache(Context::new(), text)?,
    }
    .with_limit(a.timeout.limit());
    let langsmith = a.langsmith.check(a.timeout)?;
    let dry = a.dry.dry_run.then(DryRun::default);
    let mut answering = if a.answers.answers {
        Some(AnswerRun::new(
            &a.answers,
            context.cache(),
            a.timeout,
            dry.as_ref().map(|d| d as &dyn super::answering::Counter),
        )?)
    } else {
        None
    };
    let corpus = Arc::new(a.corpus.load()?);
    let dataset = dataset::load(&dataset_path)?;
    if answering.is_some() {
        match &dataset {
            AnyDataset::Token(d) => distinct_questions(d)?,
            AnyDataset::Chunk(d) => distinct_questions(d)?,
        }
    }
    // The rows' reference answers, for the judges that compare with one.
    let references: HashMap<String, Vec<String>> = match &dataset {
        AnyDataset::Token(d) => reference_answers(d),
        AnyDataset::Chunk(d) => reference_answers(d),
    };
    if let Some(dry) = &dry {
        for (label, chunker) in chunkers {
            let context = match retriever_spec.nested("chunker") {
                Some(_) => context.clone(),
                None => context.clone().with_chunker(Arc::clone(&chunker)),
            };
            let p = EvalPlan {
                args: &a.dry,
                spec: &retriever_spec,
                text: &a.retriever,
                context: &context,
                chunker,
                label,
                corpus: &corpus,
                k: a.k,
                answering: answering.as_ref(),
            };
            let plan = match &dataset {
                AnyDataset::Token(d) => dry.plan_eval(d, &p)?,
                AnyDataset::Chunk(d) => dry.plan_eval(d, &p)?,
            };
            super::dry_run::print(&plan, a.json, out)?;
        }
        return Ok(());
    }
    let mut results = Vec::new();
    let mut records = Vec::new();
    let several = chunkers.len() > 1;
    for (label, chunker) in chunkers {
        let spent_before = context.cache().map(|c| c.embedding_stats());
        let generated_before = answering.as_ref().map(AnswerRun::generator_usage);
        let context = match retriever_spec.nested("chunker") {
            Some(_) => context.clone(),
            None => context.clone().with_chunker(Arc::clone(&chunker)),
        };
        let retriever =
            components::build_parsed_retriever(&retriever_spec, &a.retriever, &context)?;
        let mut judged = Vec::new();
        let result = match &dataset {
            AnyDataset::Token(d) => {
                // Every registered metric in the chosen mode; PrecisionΩ from the chunks the
                // retriever indexed.
                let evaluation =
                    TokenLevelEvaluation::new(corpus.clone(), d.clone())?.with_mode(a.mode);
                let retriever = &*retriever as &dyn Retriever<TokenLevel>;
                evaluate(
                    &label,
                    &evaluation,
                    retriever,
                    a.k,
                    &mut answering,
                    &references,
                    &mut judged,
                )?
            }
            AnyDataset::Chunk(d) => {
                if a.mode != SpanMode::Standard {
                    bail!(
                        "--mode {} scores character spans; `{}` is a chunk-level dataset",
                        a.mode,
                        dataset_path
                    );
                }
                let evaluation = ChunkLevelEvaluation::new(corpus.clone(), d.clone())?;
                let retriever = &*retriever as &dyn Retriever<ChunkLevel>;
                evaluate(
                    &label,
                    &evaluation,
                    retriever,
                    a.k,
                    &mut answering,
                    &references,
                    &mut judged,
                )?
            }
        };
        let mut result = result;
        if let Some(path) = &a.labels {
            super::labels::apply(path, &mut result.scores)?;
        }
        // JSON cannot hold NaN or an infinity: such a figure is an error, never printed or
        // recorded.
        if let Some(what) = result.scores.non_finite() {
            anyhow::bail!("evaluating `{}` with {label}: {what}", dataset_path);
        }
        let mut record = RunRecord::new("eval", dataset_path.as_str(), result.scores.clone())
            .with_corpus(&corpus, Some(a.corpus.corpus.as_str()))
            .with_timings(&result.timings);
        record.label = Some(match &a.label {
            Some(name) if several => format!("{name} {label}"),
            Some(name) => name.clone(),
            None => label.clone(),
        });
        if let Some(cache) = &a.cache {
            record.config.extra.insert("cache".into(), cache.clone());
        }
        if let (Some(before), Some(cache)) = (spent_before, context.cache()) {
            let after = cache.embedding_stats();
            record.usage = Some(Usage {
                embedding: Some(Spend::embedded(
                    after.tokens.saturating_sub(before.tokens),
                    after.cost.map(|c| c - before.cost.unwrap_or(0.0)),
                )),
                ..Usage::default()
            });
        }
        if let Some(run) = &answering {
            run.fill(&mut record, generated_before, &judged);
        }
        records.push(record);
        if a.json {
            out.json_line(&Line {
                result: &result,
                judges: &judged,
            })?;
            // Each chunker's line as soon as it exists: a comparison can take minutes.
            out.flush()?;
        }
        results.push((label, result));
    }
    if !a.json {
        out.text(&format!(
            "retriever: {}\n{}",
            a.retriever,
            crate::eval::comparison_table(&results)
        ))?;
        for (label, result) in &results {
            let corrected = crate::align::corrected_text(&result.scores);
            if !corrected.is_empty() {
                out.text(&format!("{}: {corrected}", crate::escape::terminal(label)))?;
            }
        }
    }
    if let Some(cache) = context.cache() {
        note!("{}", cache.stats());
    }
    super::runs::record(out, a.no_record, &records)?;
    if let Some(run) = &answering {
        for line in run.usage_lines().lines() {
            note!("{line}");
        }
        let failures = run.gate_failures();
        if !failures.is_empty() {
            bail!("{}", failures.join("\n"));
        }
    }
    if let Some(client) = langsmith {
        // The result is out before the upload starts: a failed upload never costs it.
        out.flush()?;
        a.langsmith.upload(&client, &results)?;
    }
    Ok(())
}

/// What `eval --json` prints per chunker: the evaluation, and with judges each judge's
/// summary (as `score --answers --json` has it).
#[derive(serde::Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    result: &'a EvaluationResult,
    #[serde(skip_serializing_if = "<[JudgeSummary]>::is_empty")]
    judges: &'a [JudgeSummary],
}

/// An error naming the first row of `d` that asks a question an earlier row asks: the answers
/// `--answers` generates are matched to their queries by question, so a question asked twice
/// could not tell its two rows' answers apart.
fn distinct_questions<L: crate::level::Level>(d: &crate::dataset::Dataset<L>) -> Result<()> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, e) in d.examples().iter().enumerate() {
        if let Some(&first) = seen.get(e.query.as_str()) {
            bail!(
                "{}: query `{}` asks the same question as query `{}` ({}); --answers matches the generated answers to queries by question: ask each question once",
                d.location(i),
                e.id,
                d.examples()[first].id,
                d.location(first)
            );
        }
        seen.insert(&e.query, i);
    }
    Ok(())
}

/// The reference answers of every row of `d`, by query id.
fn reference_answers<L: crate::level::Level>(
    d: &crate::dataset::Dataset<L>,
) -> HashMap<String, Vec<String>> {
    d.examples()
        .iter()
        .map(|e| (e.id.clone(), e.reference_answers.clone()))
        .collect()
}

/// Runs `evaluation` over `retriever`, shown as `case` on the progress line; with
/// `answering`, each query is also answered over its chunks and the answers are judged against
/// `references`, the judges' summaries in `judged`.
fn evaluate<L: RegisteredLevel>(
    case: &str,
    evaluation: &Evaluation<L>,
    retriever: &dyn Retriever<L>,
    k: usize,
    answering: &mut Option<AnswerRun>,
    references: &HashMap<String, Vec<String>>,
    judged: &mut Vec<JudgeSummary>,
) -> Result<EvaluationResult>
where
    crate::dataset::Example<L>: ToRow,
{
    use crate::harness::progress::{self, Count, Counted, Counting};
    let queries = evaluation.dataset().examples().len();
    let shown = progress::show(case, "index", queries);
    // A retriever's queries are counted when its batch returns; answers as each is kept.
    let counting = |stage, count| {
        let task = shown.as_ref()?.task().clone();
        Some(Counting::new(task, stage, queries, count))
    };
    let Some(run) = answering else {
        let counting = counting("retrieve", Count::Batch);
        let counted = Counted {
            inner: retriever,
            counting: counting.as_ref(),
        };
        return Ok(pollster::block_on(evaluation.run_reported(&counted, k))?);
    };
    let wrapped = run.wrap(retriever);
    let counting = counting("generate", Count::EachQuery);
    let counted = Counted {
        inner: &wrapped,
        counting: counting.as_ref(),
    };
    let mut result = super::runtime()?.block_on(evaluation.run_reported(&counted, k))?;
    drop(shown);
    let (answers, generating) = wrapped.finish();
    // Each query retrieved then generated, queries side by side: the wall-clock time is
    // shared out by the time each step took.
    let t = &mut result.timings;
    t.generate_ms = Some(t.retrieve_ms * generating);
    t.retrieve_ms *= 1.0 - generating;
    let started = std::time::Instant::now();
    *judged = super::runtime()?.block_on(run.score(case, answers, references, &mut result.scores));
    if run.judging.is_some() {
        result.timings.judge_ms = Some(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(result)
}
