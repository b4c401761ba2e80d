//! `rag-eval score`: retrieval output or a RAG system's answers against a dataset, or a TREC
//! run against qrels.

mod answers;
pub(super) mod conversations;
mod from_traces;
mod ragchecker;

use super::output::Output;
use super::{render_run_table, render_table};
use crate::corpus::Corpus;
use crate::dataset::retrieved::{load_chunk_spans, ReadItem, Retrieved};
use crate::dataset::{self, AnyDataset, Dataset};
use crate::level::{ChunkLevel, Level, TokenLevel};
use crate::metrics::{self, Metric, RunResult, Scored, SpanMode};
use crate::runs::RunRecord;
use crate::trec;
use anyhow::{bail, Result};
use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;
use std::collections::HashSet;

#[derive(Args)]
#[command(group = clap::ArgGroup::new("input").required(true).args(["dataset", "qrels", "conversations", "ragchecker"]))]
#[command(group = clap::ArgGroup::new("output").args(["retrieved", "answers", "traces"]))]
#[command(group = clap::ArgGroup::new("judged").args(["answers", "conversations", "traces", "ragchecker"]))]
#[command(group = clap::ArgGroup::new("spanned").args(["dataset", "conversations"]))]
pub(super) struct ScoreArgs {
    /// Dataset JSONL: each row's question with its truth as character spans (token-level) or
    /// chunk ids (chunk-level); with --answers, rows without retrieval truth score the answers
    /// alone.
    #[arg(long, requires = "output", conflicts_with_all = ["qrels", "run", "measures"])]
    dataset: Option<Utf8PathBuf>,
    /// Retrieval output JSONL: one line per query, `{"id","retrieved":[…]}`, ranked.
    #[arg(long, requires = "dataset")]
    retrieved: Option<Utf8PathBuf>,
    /// Answers JSONL: one line per query, `{"id","answer","contexts":[…]}`; scores the answers
    /// against the rows' reference answers, and the contexts as a retrieval.
    #[arg(long, requires = "dataset")]
    answers: Option<Utf8PathBuf>,
    /// OpenTelemetry traces as OTLP JSON (one export request a line) or OTLP protobuf (`.pb`,
    /// or length-prefixed as the Collector writes it) in the OpenInference, OTel GenAI or
    /// TruLens conventions: each trace's question, answer and retrieved documents, matched
    /// with the dataset's rows and scored as --answers scores a file.
    #[arg(long, value_name = "FILE", requires = "dataset")]
    traces: Option<Utf8PathBuf>,
    /// With --traces: the span attribute holding the dataset row's id (e.g. `query.id`), read
    /// on the root span first; traces without it are matched by their question's text.
    #[arg(long, value_name = "KEY", requires = "traces")]
    join_attribute: Option<String>,
    /// With --traces: which retriever spans give a trace's documents: `last` (the last
    /// retriever or reranker before the answering LLM span) or `all` (every retriever's,
    /// de-duplicated).
    #[arg(long, value_name = "RULE", default_value = "last", requires = "traces")]
    retrievals: crate::traces::RetrievalRule,
    /// Embedder spec for `answer_similarity` and the `answer_relevancy` judge (with
    /// --answers or --traces; with --conversations the judge only), e.g. `hashing` or
    /// `openai:model=text-embedding-3-small`; without it they are left out.
    #[arg(long, value_name = "SPEC", requires = "judged")]
    embedder: Option<String>,
    #[command(flatten)]
    judge: super::judging::JudgeArgs,
    #[command(flatten)]
    timeout: super::TimeoutArgs,
    /// Environment variable holding the judge's API key (local servers need none).
    #[arg(
        long,
        value_name = "VAR",
        default_value = "OPENAI_API_KEY",
        requires = "judge_model"
    )]
    api_key_env: String,
    /// Cache of judge calls and embeddings (with --answers, --conversations, --traces or
    /// --ragchecker):
    /// `rw`, `replay` (offline: a miss is an error) or `off`, with `:path=FILE` (default
    /// `target/rag-eval-cache.sqlite`).
    #[arg(long, value_name = "MODE[:path=FILE]", requires = "judged")]
    cache: Option<String>,
    /// TREC qrels file (`qid 0 docno rel`).
    #[arg(long, requires = "run")]
    qrels: Option<Utf8PathBuf>,
    /// TREC run file (`qid Q0 docno rank score tag`).
    #[arg(long, requires = "qrels")]
    run: Option<Utf8PathBuf>,
    /// Cut-off. With a dataset one value (default 5); with qrels the cut-offs of the @k measures
    /// (repeat the flag; default trec_eval's).
    #[arg(short = 'k', value_name = "N")]
    k: Vec<usize>,
    /// Span scoring mode (token level).
    #[arg(long, value_enum, default_value = "standard")]
    mode: SpanMode,
    /// Chunk listing from `rag-eval chunk` with the same chunker; enables precision_omega.
    #[arg(long, requires = "dataset")]
    chunks: Option<Utf8PathBuf>,
    /// trec_eval measure names (`P`, `recall`, `ndcg_cut`, `ndcg`, `recip_rank`, `map`, or
    /// `P.5,10`); `ndcg` is over the whole ranking. Any other per-query trec_eval measure too
    /// (`bpref`, `infAP`, `rbp`, `success_5`), with its figures and name.
    #[arg(short = 'm', long = "measure", value_name = "MEASURE")]
    measures: Vec<String>,
    /// Score dataset queries missing from the retrieval output as empty retrievals.
    #[arg(long, requires = "dataset")]
    allow_missing: bool,
    /// Leave out dataset rows with nothing to find (empty `relevant_spans` or
    /// `relevant_chunk_ids`, or only empty spans) and say how many; without it they are an error.
    #[arg(long, requires = "dataset")]
    skip_empty_truth: bool,
    /// The corpus folder: every retrieved and truth span is checked to lie inside its document
    /// (with --conversations: the turns' contexts given as text are located in it).
    #[arg(long, requires = "spanned")]
    corpus: Option<Utf8PathBuf>,
    /// Which files of the `--corpus` folder to read.
    #[arg(long, default_value = crate::corpus::DEFAULT_GLOB, requires = "corpus")]
    glob: String,
    /// People's labels of the answers (JSONL of `{"id": …, "labels": {"<metric>": value}}`,
    /// or a dataset with `outputs.labels`): kept in the run, and each judged metric with at
    /// least two labelled queries gets its judge-corrected mean beside the raw one.
    #[arg(long, value_name = "FILE", requires = "judged")]
    labels: Option<Utf8PathBuf>,
    /// Conversations JSONL (rag-eval's format, ragas' `EvaluationDataset.to_jsonl`, or
    /// deepeval's conversational test cases): scores each one's tool calls against its
    /// reference calls, each retrieving turn's retrieval and answer (-k, --corpus, the
    /// judges), and with a judge model the judges of the whole conversation.
    #[arg(long, value_name = "FILE")]
    conversations: Option<Utf8PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Do not record the run in the run store (`RAG_EVAL_RUNS=off` does the same).
    #[arg(long)]
    no_record: bool,
    /// A short name for the run in the run store, reports and comparisons (e.g. the system
    /// or the change scored).
    #[arg(long)]
    label: Option<String>,
    #[command(flatten)]
    dry: super::dry_run::DryRunArgs,
    #[command(flatten)]
    ragchecker: ragchecker::RagcheckerArgs,
}

/// What `eval --rag` shares with `score --answers`.
pub(super) struct RagRun {
    pub dataset: Utf8PathBuf,
    pub corpus: Utf8PathBuf,
    pub glob: String,
    pub k: usize,
    pub mode: SpanMode,
    pub cache: Option<String>,
    pub timeout: super::TimeoutArgs,
    pub json: bool,
    pub no_record: bool,
    /// The run's name in the run store (`--label`).
    pub label: Option<String>,
    pub labels: Option<Utf8PathBuf>,
    /// Embedder spec for `answer_similarity` and `answer_relevancy`.
    pub embedder: Option<String>,
    /// The judges, when a judge model is given.
    pub judge: super::judging::JudgeArgs,
    /// The judge's server when `judge` names none.
    pub judge_url: String,
    /// Environment variable holding the judge's API key.
    pub api_key_env: String,
    /// Where to write the service's answers.
    pub save_answers: Option<Utf8PathBuf>,
    /// Whether to call nothing and count the calls instead.
    pub dry: super::dry_run::DryRunArgs,
}

/// `eval --rag SPEC`: the system the spec names is asked every query of the dataset, and its
/// answers are scored as `score --answers` scores a file's.
pub(super) fn run_rag(r: RagRun, spec: &str, out: &mut Output) -> Result<()> {
    let mut judge = r.judge;
    judge.judge_url.get_or_insert(r.judge_url);
    let a = ScoreArgs {
        dataset: Some(r.dataset.clone()),
        retrieved: None,
        answers: None,
        traces: None,
        join_attribute: None,
        retrievals: Default::default(),
        embedder: r.embedder,
        judge,
        timeout: r.timeout,
        api_key_env: r.api_key_env,
        cache: r.cache,
        qrels: None,
        run: None,
        k: vec![r.k],
        mode: r.mode,
        chunks: None,
        measures: Vec::new(),
        allow_missing: false,
        skip_empty_truth: false,
        corpus: Some(r.corpus),
        glob: r.glob,
        conversations: None,
        json: r.json,
        no_record: r.no_record,
        label: r.label,
        labels: r.labels,
        dry: r.dry,
        ragchecker: Default::default(),
    };
    let source = answers::Source::Rag {
        spec,
        save: r.save_answers.as_deref(),
    };
    answers::run(&a, &r.dataset, source, r.k, out)
}

pub(super) fn run(a: ScoreArgs, out: &mut Output) -> Result<()> {
    if let Some(path) = &a.conversations {
        if a.dry.dry_run {
            bail!("--dry-run does not apply to --conversations");
        }
        return conversations::run(&a, path, out);
    }
    if let Some(input) = &a.ragchecker.ragchecker {
        return ragchecker::run(&a, input, out);
    }
    if let (Some(qrels), Some(run)) = (&a.qrels, &a.run) {
        return score_trec(&a, qrels, run, out);
    }
    let k = match a.k.as_slice() {
        [] => 5,
        [0] => bail!("-k must be at least 1"),
        [k] => *k,
        _ => bail!("with --dataset, give one -k (got {})", a.k.len()),
    };
    if let (Some(dataset_path), Some(answers)) = (&a.dataset, &a.answers) {
        return answers::run(&a, dataset_path, answers::Source::File(answers), k, out);
    }
    if let (Some(dataset_path), Some(traces)) = (&a.dataset, &a.traces) {
        return answers::run(&a, dataset_path, answers::Source::Traces(traces), k, out);
    }
    if a.dry.dry_run {
        bail!("--dry-run counts the calls of judges and systems: give --answers FILE or --traces FILE");
    }
    let (Some(dataset_path), Some(retrieved)) = (&a.dataset, &a.retrieved) else {
        bail!("give --dataset with --retrieved, --answers or --traces, or --qrels with --run");
    };
    let corpus = a
        .corpus
        .as_ref()
        .map(|c| Corpus::from_folder(c, Some(&a.glob)))
        .transpose()?;
    let dataset_hash;
    let card = match dataset::load(dataset_path)? {
        AnyDataset::Token(d) => {
            let (d, left_out) = with_truth(d, a.skip_empty_truth)?;
            dataset_hash = d.content_hash();
            let loaded = Retrieved::<TokenLevel>::load(retrieved)?;
            if let (Some(corpus), Some(corpus_path)) = (&corpus, &a.corpus) {
                let mut problems: Vec<String> = d
                    .check_against(corpus)
                    .iter()
                    .map(|p| p.to_string())
                    .collect();
                problems.extend(loaded.check_against(corpus, retrieved));
                if !problems.is_empty() {
                    bail!(
                        "{} span{} disagree with the corpus `{}`:\n{}",
                        problems.len(),
                        if problems.len() == 1 { "" } else { "s" },
                        corpus_path,
                        problems.join("\n")
                    );
                }
            }
            let chunks = a.chunks.as_deref().map(load_chunk_spans).transpose()?;
            if let (Some(path), Some(chunks)) = (&a.chunks, &chunks) {
                check_chunk_listing(&d, chunks, path)?;
            }
            let index = chunks.as_deref().map(metrics::ChunkIndex::new);
            let metrics = metrics::token_level_metrics(a.mode, index);
            score_dataset(
                &d,
                &left_out,
                loaded,
                retrieved,
                &metrics,
                k,
                a.mode,
                a.allow_missing,
            )?
        }
        AnyDataset::Chunk(d) => {
            if a.mode != SpanMode::Standard {
                bail!(
                    "--mode {} scores character spans; `{dataset_path}` is a chunk-level dataset",
                    a.mode
                );
            }
            if a.chunks.is_some() {
                bail!("--chunks (precision_omega) needs a token-level dataset; `{dataset_path}` is chunk-level");
            }
            let (d, left_out) = with_truth(d, a.skip_empty_truth)?;
            dataset_hash = d.content_hash();
            let metrics = metrics::chunk_level_metrics();
            score_dataset(
                &d,
                &left_out,
                Retrieved::<ChunkLevel>::load(retrieved)?,
                retrieved,
                &metrics,
                k,
                SpanMode::Standard,
                a.allow_missing,
            )?
        }
    };
    // JSON cannot hold NaN or an infinity: such a figure is an error, never printed or recorded.
    if let Some(what) = card.non_finite() {
        anyhow::bail!("scoring `{dataset_path}`: {what}");
    }
    if a.json {
        out.json_line(&card)?;
    } else {
        out.text(&render_run_table(&card))?;
    }
    let record = dataset_record(
        &a,
        dataset_path,
        card,
        dataset_hash,
        ("retrieved", retrieved),
        corpus.as_ref().zip(a.corpus.as_deref()),
    );
    super::runs::record(out, a.no_record, &[record])?;
    Ok(())
}

/// The record of a `score` run against the dataset at `dataset_path`: its label, its hash, the scored
/// file (`input`: the option's name and the path), and the corpus when one was checked.
fn dataset_record(
    a: &ScoreArgs,
    dataset_path: &Utf8Path,
    card: RunResult,
    dataset_hash: String,
    input: (&str, &Utf8Path),
    corpus: Option<(&Corpus, &Utf8Path)>,
) -> RunRecord {
    let mut record = RunRecord::new("score", dataset_path.as_str(), card);
    record.label.clone_from(&a.label);
    record.dataset.hash = Some(dataset_hash);
    record
        .config
        .extra
        .insert(input.0.into(), input.1.to_string());
    match corpus {
        Some((corpus, path)) => record.with_corpus(corpus, Some(path.as_str())),
        None => record,
    }
}

/// The dataset without rows that have nothing to find when asked to skip them (saying how
/// many), and an error naming them otherwise.
fn with_truth<L: Level>(d: Dataset<L>, skip: bool) -> Result<(Dataset<L>, HashSet<String>)> {
    if !skip {
        d.require_truth()?;
        return Ok((d, HashSet::new()));
    }
    let (kept, skipped) = d.skip_empty_truth();
    let left_out = d
        .empty_truth()
        .into_iter()
        .map(|i| d.examples()[i].id.clone())
        .collect();
    if skipped > 0 {
        note!(
            "left out {skipped} of {} rows of `{}` with nothing to find (--skip-empty-truth)",
            d.len(),
            d.source()
        );
    }
    Ok((kept, left_out))
}

#[allow(clippy::too_many_arguments)]
fn score_dataset<L: ReadItem>(
    d: &Dataset<L>,
    left_out: &HashSet<String>,
    retrieved: Retrieved<L>,
    retrieved_path: &Utf8Path,
    metrics: &[Box<dyn Metric<L>>],
    k: usize,
    mode: SpanMode,
    allow_missing: bool,
) -> Result<RunResult> {
    if let Some((id, line)) = retrieved
        .ids()
        .into_iter()
        .find(|(id, _)| d.get(id).is_none() && !left_out.contains(*id))
    {
        bail!(
            "{retrieved_path}:{line}: query `{id}` is not in the dataset `{}`",
            d.source()
        );
    }
    let missing: Vec<&str> = d
        .examples()
        .iter()
        .filter(|e| retrieved.get(&e.id).is_none())
        .map(|e| e.id.as_str())
        .collect();
    if !missing.is_empty() && !allow_missing {
        let shown: Vec<&str> = missing.iter().take(5).copied().collect();
        bail!(
            "{} of {} dataset queries have no line in `{retrieved_path}` ({}{}); pass --allow-missing to score them as empty retrievals",
            missing.len(),
            d.len(),
            shown.join(", "),
            if missing.len() > 5 { ", …" } else { "" }
        );
    }
    let queries: Vec<Scored<'_, L>> = d
        .examples()
        .iter()
        .map(|e| Scored {
            id: &e.id,
            truth: &e.truth,
            retrieved: retrieved.get(&e.id).unwrap_or(&[]),
        })
        .collect();
    Ok(metrics::scorecard(&queries, metrics, k, mode, None))
}

fn score_trec(a: &ScoreArgs, qrels: &Utf8Path, run: &Utf8Path, out: &mut Output) -> Result<()> {
    let (cutoffs, names, json) = (&a.k, &a.measures, a.json);
    if cutoffs.contains(&0) {
        bail!("-k must be at least 1");
    }
    let qrels_path = qrels;
    let run_path = run;
    // Names score's own engine does not take but trec_eval does (`bpref`, `infAP`, `rbp`,
    // `success_5`): computed by trec_eval's measures and added to each query's figures.
    const OWN: [&str; 8] = [
        "P",
        "precision",
        "recall",
        "ndcg_cut",
        "ndcg",
        "recip_rank",
        "mrr",
        "map",
    ];
    let (mut own, mut trec_args): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for n in names {
        match trec::Measure::parse(n, cutoffs) {
            // A name score's engine knows with a wrong cut-off (`ndcg.5`) keeps its error;
            // gains (`ndcg.1=3,2=9`) are trec_eval's.
            Err(_)
                if (!OWN.contains(&n.trim().split(['.', '@']).next().unwrap_or_default())
                    || n.contains('='))
                    && trec::trec_eval::measure_argument(n.trim()).is_some() =>
            {
                trec_args.extend(trec::trec_eval::measure_argument(n.trim()));
            }
            _ => own.push(n.clone()),
        }
    }
    let names = &own;
    let measures = if names.is_empty() {
        Ok(trec::Measure::defaults(cutoffs))
    } else {
        // A measure named twice (`-m P.5 -m P_5`) is reported once, where it first appears.
        let mut all: Vec<trec::Measure> = Vec::new();
        names
            .iter()
            .try_for_each(|n| {
                for m in trec::Measure::parse(n, cutoffs)? {
                    if !all.contains(&m) {
                        all.push(m);
                    }
                }
                Ok::<_, crate::Error>(())
            })
            .map(|()| all)
    };
    let qrels = trec::Qrels::from_file(qrels_path)?;
    // The run is scored while it is read, never held whole; the files' own errors come before
    // a measure's, so an unknown measure still lets the run be read (with the defaults).
    let scored = trec::score_run_file(&qrels, run_path, measures.as_deref().unwrap_or_default())?;
    check_run_matches_qrels(&qrels, &scored.query_ids, qrels_path, run_path)?;
    measures?;
    if !trec_args.is_empty() {
        return score_trec_eval_measures(
            a,
            scored.scores.to_result(),
            names.is_empty(),
            &trec_args,
            (qrels_path, run_path),
            out,
        );
    }
    // Written straight from the table: a `RunResult` repeats every measure's name in every
    // query, and is built only for the record.
    let scores = scored.scores;
    if json {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        out.write_with(|w| scores.write_json(w, threads))?;
        out.text("\n")?;
    } else {
        out.text(&render_table(
            &scores.headline(),
            scores.metrics(),
            scores.std(),
        ))?;
    }
    record_trec(a, scores.to_result(), qrels_path, run_path, out)
}

/// Records a scored TREC run (unless `--no-record`).
fn record_trec(
    a: &ScoreArgs,
    result: RunResult,
    qrels_path: &Utf8Path,
    run_path: &Utf8Path,
    out: &mut Output,
) -> Result<()> {
    let no_record = a.no_record;
    if no_record {
        return Ok(());
    }
    let mut record = RunRecord::new("score", qrels_path.as_str(), result);
    record.label.clone_from(&a.label);
    // The qrels are the ground truth: their bytes identify it.
    record.dataset.hash = std::fs::read(qrels_path)
        .ok()
        .map(|b| crate::digest::short_sha256(&b));
    record
        .config
        .extra
        .insert("run".into(), run_path.to_string());
    super::runs::record(out, no_record, &[record])?;
    Ok(())
}

/// `score --qrels` with measures that trec_eval's functions compute (`trec_args`, as `-m`
/// takes them): their per-query figures, named as trec_eval prints them, added after those of
/// `result` (dropped when `only_trec`: the defaults scored for nothing), over the same queries.
fn score_trec_eval_measures(
    a: &ScoreArgs,
    mut result: RunResult,
    only_trec: bool,
    trec_args: &[String],
    (qrels_path, run_path): (&Utf8Path, &Utf8Path),
    out: &mut Output,
) -> Result<()> {
    let read = |p: &Utf8Path| std::fs::read(p).map_err(|e| crate::Error::io("read", p, e));
    let args: Vec<&str> = trec_args.iter().map(String::as_str).collect();
    let figures = trec::trec_eval::query_figures(&read(qrels_path)?, &read(run_path)?, &args)
        .map_err(|e| anyhow::anyhow!("-m {}: {e}", trec_args.join(" -m ")))?;
    let at: std::collections::HashMap<&str, usize> = figures
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut order: Vec<String> = if only_trec {
        Vec::new()
    } else {
        result.metrics.0.iter().map(|(n, _)| n.clone()).collect()
    };
    order.extend(figures.names.iter().cloned());
    for q in &mut result.per_query {
        if only_trec {
            q.metrics.0.clear();
        }
        if let Some(&i) = at.get(q.id.as_str()) {
            q.metrics.0.extend(
                figures
                    .names
                    .iter()
                    .cloned()
                    .zip(figures.values[i].iter().copied()),
            );
        }
    }
    let cutoffs = if only_trec {
        Some(Vec::new())
    } else {
        result.cutoffs.take()
    };
    let mut result = RunResult::from_queries(metrics::ResultLevel::Trec, order, result.per_query);
    result.cutoffs = cutoffs;
    if a.json {
        out.text(&serde_json::to_string(&result)?)?;
        out.text("\n")?;
    } else {
        out.text(&render_table(
            &result.headline(),
            &result.metrics,
            &result.std,
        ))?;
    }
    record_trec(a, result, qrels_path, run_path, out)
}

/// A run none of whose queries is judged scores nothing, and trec_eval's rule (only judged
/// queries count) would print an empty or all-zero result that looks like a bad run: that is an
/// error. Some queries without judgements is ordinary, but the figures leave them out, so say
/// how many.
fn check_run_matches_qrels(
    qrels: &trec::Qrels,
    run_queries: &[String],
    qrels_path: &Utf8Path,
    run_path: &Utf8Path,
) -> Result<()> {
    let ids: Vec<&str> = run_queries.iter().map(String::as_str).collect();
    let unjudged: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|q| qrels.num_relevant(q).is_none())
        .collect();
    if ids.is_empty() {
        bail!("the run `{run_path}` holds no lines");
    }
    if unjudged.len() == ids.len() {
        let judged: Vec<&str> = qrels.query_ids().take(3).collect();
        bail!(
            "no query of the run `{run_path}` is in the qrels `{qrels_path}`: the run's query ids ({}{}) never match the judged ones ({}{})",
            quoted(&ids[..ids.len().min(3)]),
            if ids.len() > 3 { ", …" } else { "" },
            quoted(&judged),
            if qrels.len() > 3 { ", …" } else { "" }
        );
    }
    if !unjudged.is_empty() {
        note!(
            "warning: {} of {} queries of the run `{run_path}` are not in the qrels `{qrels_path}` and are left out of the figures ({}{})",
            unjudged.len(),
            ids.len(),
            quoted(&unjudged[..unjudged.len().min(3)]),
            if unjudged.len() > 3 { ", …" } else { "" }
        );
    }
    Ok(())
}

fn quoted(ids: &[&str]) -> String {
    ids.iter()
        .map(|q| format!("`{q}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A chunk listing made over another corpus (or another copy of it, chunked from another
/// folder so that document ids differ) gives PrecisionΩ 0 without any other sign: every
/// document the truth cites must have chunks in the listing, and every truth span must overlap
/// one of them.
fn check_chunk_listing(
    d: &Dataset<crate::level::TokenLevel>,
    chunks: &[crate::span::CharSpan],
    path: &Utf8Path,
) -> Result<()> {
    use std::collections::BTreeMap;
    let mut by_doc: BTreeMap<&str, usize> = BTreeMap::new();
    for c in chunks {
        *by_doc.entry(c.doc.as_str()).or_default() += 1;
    }
    let mut cited: Vec<&str> = d
        .examples()
        .iter()
        .flat_map(|e| e.truth.iter().map(|s| s.doc.as_str()))
        .collect();
    cited.sort_unstable();
    cited.dedup();
    let missing: Vec<&str> = cited
        .iter()
        .copied()
        .filter(|doc| !by_doc.contains_key(doc))
        .collect();
    if !missing.is_empty() {
        let listed: Vec<&str> = by_doc.keys().copied().take(3).collect();
        bail!(
            "the chunk listing `{path}` does not come from the dataset's corpus: it has no chunk of {} of the {} documents `{}` cites ({}{}); it lists {}{}",
            missing.len(),
            cited.len(),
            d.source(),
            quoted(&missing[..missing.len().min(3)]),
            if missing.len() > 3 { ", …" } else { "" },
            if listed.is_empty() { "nothing".to_owned() } else { quoted(&listed) },
            if by_doc.len() > 3 { ", …" } else { "" }
        );
    }
    let covered = crate::span::SpanSet::from_spans(chunks);
    for e in d.examples() {
        for t in &e.truth {
            if !t.is_empty() && !covered.overlaps(t) {
                bail!(
                    "the chunk listing `{path}` does not come from the dataset's corpus: no chunk of `{}` overlaps characters {}..{}, the answer of query `{}`",
                    t.doc,
                    t.start,
                    t.end,
                    e.id
                );
            }
        }
    }
    Ok(())
}
