//! The `rag-eval` command-line tool: chunk documents, score retrieval output, convert datasets.
//!
//! Errors are one clear message on stderr and exit code 1; usage errors exit with 2.

use anyhow::{anyhow, bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use clap::{Args, Parser, Subcommand, ValueEnum};
use rag_eval::chunker::{parse_spec, PositionAwareChunker};
use rag_eval::corpus::{Corpus, Document};
use rag_eval::dataset::retrieved::{load_chunk_spans, ReadItem, Retrieved};
use rag_eval::dataset::{self, AnyDataset, Dataset};
use rag_eval::embed::HashingEmbedder;
use rag_eval::eval::{ChunkLevelEvaluation, TokenLevelEvaluation};
use rag_eval::level::{Level, TokenLevel};
use rag_eval::metrics::{self, Metric, Scorecard, Scored, SpanMode};
use rag_eval::retrieve::{Bm25Retriever, Pipeline, Retriever};
use rag_eval::trec;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

// `rag-eval generate`.
use rag_eval::dataset::{Example, ToRow};
use rag_eval::generate::resume::{DocRecord, GeneratedLevel, ResumableOutput, RunHeader};
use rag_eval::generate::{
    parse_mix, ChunkLevelDataGenerator, DocumentBatch, Dropped, FewShot, GenerateConfig, Prompts,
    TokenLevelDataGenerator,
};
use rag_eval::level::ChunkLevel;
use rag_eval::llm::OpenAiChat;

#[derive(Parser)]
#[command(
    name = "rag-eval",
    version,
    about = "Chunk documents, score retrieval output, convert datasets."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Split documents into chunks and print them as JSONL (one chunk a line, char offsets).
    Chunk(ChunkArgs),
    /// Score retrieval output against a dataset, or a TREC run against qrels.
    Score(ScoreArgs),
    /// Work with datasets.
    #[command(subcommand)]
    Dataset(DatasetCommand),
    /// Retrieve every query of a dataset over a corpus and score it; several `--chunker`
    /// values compare chunkers on the same ground truth.
    Eval(EvalArgs),
    /// Write a synthetic dataset with a language model on an OpenAI-compatible server:
    /// questions about each document with their ground truth. Interrupted runs continue where
    /// they stopped when rerun with the same output.
    #[command(subcommand)]
    Generate(GenerateCommand),
}

#[derive(Subcommand)]
enum GenerateCommand {
    /// Questions with the character spans that answer them (verbatim excerpts located in the
    /// document).
    Token(GenerateArgs),
    /// Questions with the ids of the chunks that answer them, for one chunker.
    Chunk(ChunkGenerateArgs),
}

#[derive(Args)]
struct ChunkGenerateArgs {
    /// Chunker spec whose chunks the questions cite, e.g. `recursive:size=400,overlap=0`.
    #[arg(long)]
    chunker: String,
    #[command(flatten)]
    common: GenerateArgs,
}

#[derive(Args)]
struct GenerateArgs {
    #[command(flatten)]
    corpus: CorpusArgs,
    /// The dataset to write (JSONL). Rerunning with the same output continues an interrupted
    /// run; its progress is kept beside it in `OUTPUT.progress`.
    #[arg(short = 'o', long)]
    output: Utf8PathBuf,
    /// Questions asked for per document.
    #[arg(long, default_value_t = 3)]
    queries_per_doc: usize,
    /// The model, as the server names it.
    #[arg(long)]
    model: String,
    /// Base URL of an OpenAI-compatible server (llama.cpp's `llama-server`, Ollama, vLLM, …).
    #[arg(long, default_value = "https://api.openai.com/v1")]
    base_url: String,
    /// Environment variable holding the API key (local servers need none).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    api_key_env: String,
    /// Documents worked on at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Seed of every random choice (windows, partner documents, the difficulty mix).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also ask for questions that need two documents.
    #[arg(long)]
    cross_document: bool,
    /// Worked examples for the prompt: JSONL of `{"question","excerpt","difficulty"}`.
    #[arg(long, value_name = "FILE")]
    few_shot: Option<Utf8PathBuf>,
    /// Prompt overrides: a `version: N` line, then `=== token ===` / `=== chunk ===` /
    /// `=== answerable ===` sections.
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<Utf8PathBuf>,
    /// Target shares per difficulty, e.g. `factual=0.4,analytical=0.3,inferential=0.3`; the
    /// excess is dropped at the end.
    #[arg(long, value_name = "MIX")]
    difficulty_mix: Option<String>,
    /// Drop questions the model answers confidently without the document (one more call per
    /// question).
    #[arg(long)]
    check_answerable: bool,
    /// Keep near-duplicate questions.
    #[arg(long)]
    no_dedup: bool,
    /// Sampling temperature (the server's default when unset).
    #[arg(long)]
    temperature: Option<f32>,
    /// Seconds one request may take before it is retried.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,
    /// Price per 1,000 tokens (prompt and answer alike), to show what the run costs.
    #[arg(long, value_name = "PRICE")]
    price_per_1k_tokens: Option<f64>,
}

#[derive(Args)]
struct EvalArgs {
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
    mode: Mode,
    /// Print one JSON object per chunker (JSONL) instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ChunkArgs {
    /// Chunker spec, e.g. `recursive:size=400,overlap=0` or `token:size=250,overlap=125`.
    #[arg(long)]
    chunker: String,
    /// Which files of a folder to read.
    #[arg(long, default_value = rag_eval::corpus::DEFAULT_GLOB)]
    glob: String,
    /// Files or folders. Document ids are paths relative to the folder given, or the file name.
    #[arg(required = true)]
    paths: Vec<Utf8PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    /// Merged spans: every character counted once.
    Standard,
    /// chunking_evaluation's figures (unmerged precision, touching ranges meet).
    Chroma,
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("input").required(true).args(["dataset", "qrels"]))]
struct ScoreArgs {
    /// Dataset JSONL (token- or chunk-level).
    #[arg(long, requires = "retrieved", conflicts_with_all = ["qrels", "run", "measures"])]
    dataset: Option<Utf8PathBuf>,
    /// Retrieval output JSONL: one line per query, `{"id","retrieved":[…]}`, ranked.
    #[arg(long, requires = "dataset")]
    retrieved: Option<Utf8PathBuf>,
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
    mode: Mode,
    /// Chunk listing from `rag-eval chunk` with the same chunker; enables precision_omega.
    #[arg(long, requires = "dataset")]
    chunks: Option<Utf8PathBuf>,
    /// trec_eval measure names (`P`, `recall`, `ndcg_cut`, `recip_rank`, `map`, or `P.5,10`).
    #[arg(short = 'm', long = "measure", value_name = "MEASURE")]
    measures: Vec<String>,
    /// Score dataset queries missing from the retrieval output as empty retrievals.
    #[arg(long, requires = "dataset")]
    allow_missing: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum DatasetCommand {
    /// Convert another tool's dataset into rag-eval's JSONL, checking it against the corpus.
    Import(ImportArgs),
    /// Check a dataset against its corpus and summarise it.
    Validate(ValidateArgs),
    /// Place drifted spans again by finding their recorded text in the corpus.
    Reanchor(ReanchorArgs),
}

#[derive(Args)]
struct CorpusArgs {
    /// The corpus folder.
    #[arg(long)]
    corpus: Utf8PathBuf,
    /// Which files of the corpus folder to read.
    #[arg(long, default_value = rag_eval::corpus::DEFAULT_GLOB)]
    glob: String,
}

impl CorpusArgs {
    fn load(&self) -> Result<Corpus> {
        Ok(Corpus::from_folder(&self.corpus, Some(&self.glob))?)
    }
}

#[derive(Args)]
struct ValidateArgs {
    /// The dataset JSONL.
    dataset: Utf8PathBuf,
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ReanchorArgs {
    /// The dataset JSONL (token level).
    dataset: Utf8PathBuf,
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Where to write the result (default: rewrite the dataset in place, atomically).
    #[arg(short = 'o', long)]
    output: Option<Utf8PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ImportFormat {
    /// chunking_evaluation's questions CSV (question, references, corpus_id).
    ChromaCsv,
}

#[derive(Args)]
struct ImportArgs {
    /// Input format.
    #[arg(long, value_enum)]
    from: ImportFormat,
    /// The file to convert.
    input: Utf8PathBuf,
    /// The corpus folder the dataset refers to.
    #[arg(long)]
    corpus: Utf8PathBuf,
    /// Which files of the corpus folder to read.
    #[arg(long, default_value = rag_eval::corpus::DEFAULT_GLOB)]
    glob: String,
    /// Where to write the dataset (written atomically).
    #[arg(short = 'o', long)]
    output: Utf8PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Chunk(a) => chunk(a),
        Command::Score(a) => score(a),
        Command::Eval(a) => eval(a),
        Command::Dataset(DatasetCommand::Import(a)) => import(a),
        Command::Dataset(DatasetCommand::Validate(a)) => validate(a),
        Command::Dataset(DatasetCommand::Reanchor(a)) => reanchor(a),
        Command::Generate(c) => match generate(c) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Loads files and folders into one corpus; ids must not collide.
fn load_paths(paths: &[Utf8PathBuf], glob: &str) -> Result<Corpus> {
    let mut docs: Vec<Document> = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read `{p}`"))?;
        let corpus = if meta.is_dir() {
            Corpus::from_folder(p, Some(glob))?
        } else {
            Corpus::from_file(p)?
        };
        docs.extend(corpus.documents().iter().cloned());
    }
    Corpus::new(docs).map_err(|e| anyhow!("{e} (two inputs give documents the same id)"))
}

#[derive(serde::Serialize)]
struct ChunkLine<'a> {
    doc_id: &'a str,
    start: usize,
    end: usize,
    text: &'a str,
    id: &'a str,
}

fn chunk(a: ChunkArgs) -> Result<()> {
    let chunker = parse_spec(&a.chunker)?;
    let corpus = load_paths(&a.paths, &a.glob)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    for doc in corpus.documents() {
        for c in chunker.chunk_with_positions(doc) {
            let line = ChunkLine {
                doc_id: c.doc_id().as_str(),
                start: c.start(),
                end: c.end(),
                text: &c.content,
                id: c.id.as_str(),
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(())
}

fn score(a: ScoreArgs) -> Result<()> {
    if let (Some(qrels), Some(run)) = (&a.qrels, &a.run) {
        return score_trec(qrels, run, &a.k, &a.measures, a.json);
    }
    let (Some(dataset_path), Some(retrieved)) = (&a.dataset, &a.retrieved) else {
        bail!("give --dataset with --retrieved, or --qrels with --run");
    };
    let k = match a.k.as_slice() {
        [] => 5,
        [0] => bail!("-k must be at least 1"),
        [k] => *k,
        _ => bail!("with --dataset, give one -k (got {})", a.k.len()),
    };
    let card = match dataset::load(dataset_path)? {
        AnyDataset::Token(d) => {
            let mode = match a.mode {
                Mode::Standard => SpanMode::Standard,
                Mode::Chroma => SpanMode::Chroma,
            };
            let chunks = a.chunks.as_deref().map(load_chunk_spans).transpose()?;
            let index = chunks.as_deref().map(metrics::ChunkIndex::new);
            let metrics = metrics::token_level_metrics(mode, index);
            score_dataset(
                &d,
                retrieved,
                &metrics,
                k,
                mode_name(a.mode),
                a.allow_missing,
            )?
        }
        AnyDataset::Chunk(d) => {
            if matches!(a.mode, Mode::Chroma) {
                bail!("--mode chroma scores character spans; `{dataset_path}` is a chunk-level dataset");
            }
            if a.chunks.is_some() {
                bail!("--chunks (precision_omega) needs a token-level dataset; `{dataset_path}` is chunk-level");
            }
            let metrics = metrics::chunk_level_metrics();
            score_dataset(&d, retrieved, &metrics, k, "standard", a.allow_missing)?
        }
    };
    if a.json {
        println!("{}", serde_json::to_string(&card)?);
    } else {
        print!(
            "{}",
            render_table(
                &format!(
                    "{}-level, k = {}, mode = {}, {} queries",
                    card.level, card.k, card.mode, card.queries
                ),
                &card.metrics,
                &card.std
            )
        );
    }
    Ok(())
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Standard => "standard",
        Mode::Chroma => "chroma",
    }
}

fn score_dataset<L: ReadItem>(
    d: &Dataset<L>,
    retrieved_path: &Utf8Path,
    metrics: &[Box<dyn Metric<L>>],
    k: usize,
    mode: &str,
    allow_missing: bool,
) -> Result<Scorecard> {
    let retrieved = Retrieved::<L>::load(retrieved_path)?;
    if let Some((id, line)) = retrieved
        .ids()
        .into_iter()
        .find(|(id, _)| d.get(id).is_none())
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

fn score_trec(
    qrels: &Utf8Path,
    run: &Utf8Path,
    cutoffs: &[usize],
    names: &[String],
    json: bool,
) -> Result<()> {
    if cutoffs.contains(&0) {
        bail!("-k must be at least 1");
    }
    let qrels = trec::Qrels::from_file(qrels)?;
    let run = trec::Run::from_file(run)?;
    let measures = if names.is_empty() {
        trec::Measure::defaults(cutoffs)
    } else {
        let mut all = Vec::new();
        for n in names {
            all.extend(trec::Measure::parse(n, cutoffs)?);
        }
        all
    };
    let per_query = trec::evaluate(&qrels, &run, &measures);
    let order: Vec<String> = measures.iter().map(|m| m.report_name()).collect();
    let figures = |q: &std::collections::BTreeMap<String, f64>| {
        metrics::Figures(
            order
                .iter()
                .map(|n| (n.clone(), q.get(n).copied().unwrap_or(0.0)))
                .collect(),
        )
    };
    let per: Vec<metrics::QueryScores> = per_query
        .iter()
        .map(|(id, q)| metrics::QueryScores {
            id: id.clone(),
            query: None,
            difficulty: None,
            metrics: figures(q),
        })
        .collect();
    let mut means = Vec::new();
    let mut stds = Vec::new();
    for (i, n) in order.iter().enumerate() {
        let v: Vec<f64> = per.iter().map(|q| q.metrics.0[i].1).collect();
        let (m, s) = metrics::mean_std(&v);
        means.push((n.clone(), m));
        stds.push((n.clone(), s));
    }
    let (means, stds) = (metrics::Figures(means), metrics::Figures(stds));
    let mut used: Vec<usize> = measures.iter().filter_map(|m| m.cutoff()).collect();
    used.sort_unstable();
    used.dedup();
    if json {
        #[derive(serde::Serialize)]
        struct TrecCard<'a> {
            level: &'static str,
            cutoffs: &'a [usize],
            queries: usize,
            metrics: &'a metrics::Figures,
            std: &'a metrics::Figures,
            per_query: &'a [metrics::QueryScores],
        }
        let card = TrecCard {
            level: "trec",
            cutoffs: &used,
            queries: per.len(),
            metrics: &means,
            std: &stds,
            per_query: &per,
        };
        println!("{}", serde_json::to_string(&card)?);
    } else {
        print!(
            "{}",
            render_table(&format!("trec, {} queries", per.len()), &means, &stds)
        );
    }
    Ok(())
}

fn render_table(title: &str, means: &metrics::Figures, stds: &metrics::Figures) -> String {
    format!("{title}\n{}", rag_eval::eval::metric_table(means, stds))
}

fn import(a: ImportArgs) -> Result<()> {
    let corpus = Corpus::from_folder(&a.corpus, Some(&a.glob))?;
    let d = match a.from {
        ImportFormat::ChromaCsv => dataset::import::chroma_csv(&a.input, &corpus)?,
    };
    d.write(&a.output)?;
    let spans: usize = d.examples().iter().map(|e| e.truth.len()).sum();
    eprintln!(
        "imported {} {}-level queries ({spans} spans over {} documents) into {}",
        d.len(),
        TokenLevel::NAME,
        corpus.len(),
        a.output
    );
    Ok(())
}

#[derive(serde::Serialize)]
struct Summary {
    dataset: String,
    level: &'static str,
    rows: usize,
    difficulty: std::collections::BTreeMap<String, usize>,
    truth_items: usize,
    truth_per_row: Stats,
    #[serde(skip_serializing_if = "Option::is_none")]
    span_chars: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunker: Option<String>,
    problems: Vec<String>,
}

#[derive(serde::Serialize)]
struct Stats {
    min: f64,
    median: f64,
    mean: f64,
    max: f64,
}

impl Stats {
    fn of(mut v: Vec<f64>) -> Stats {
        if v.is_empty() {
            return Stats {
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
        Stats {
            min: v[0],
            median,
            mean: v.iter().sum::<f64>() / n as f64,
            max: v[n - 1],
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "min {}, median {}, mean {:.1}, max {}",
            self.min, self.median, self.mean, self.max
        )
    }
}

fn summarise<L: Level>(d: &Dataset<L>, count: impl Fn(&L::Truth) -> usize) -> Summary {
    let mut difficulty = std::collections::BTreeMap::new();
    for e in d.examples() {
        *difficulty
            .entry(e.difficulty().unwrap_or("unlabelled").to_owned())
            .or_insert(0) += 1;
    }
    let per_row: Vec<f64> = d
        .examples()
        .iter()
        .map(|e| count(&e.truth) as f64)
        .collect();
    Summary {
        dataset: d.source().to_owned(),
        level: L::NAME,
        rows: d.len(),
        difficulty,
        truth_items: per_row.iter().sum::<f64>() as usize,
        truth_per_row: Stats::of(per_row),
        span_chars: None,
        chunker: d.examples().iter().find_map(|e| {
            e.metadata
                .get("chunker")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        }),
        problems: Vec::new(),
    }
}

fn validate(a: ValidateArgs) -> Result<()> {
    let dataset = dataset::load(&a.dataset)?;
    let corpus = a.corpus.load()?;
    let summary = match &dataset {
        AnyDataset::Token(d) => {
            let mut s = summarise(d, Vec::len);
            s.span_chars = Some(Stats::of(
                d.examples()
                    .iter()
                    .flat_map(|e| e.truth.iter().map(|t| t.len() as f64))
                    .collect(),
            ));
            s.problems = d
                .check_against(&corpus)
                .iter()
                .map(ToString::to_string)
                .collect();
            s
        }
        AnyDataset::Chunk(d) => summarise(d, Vec::len),
    };
    if a.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let mut out = format!(
            "{}: {} {}-level rows over {} documents of {}\n",
            summary.dataset,
            summary.rows,
            summary.level,
            corpus.len(),
            a.corpus.corpus
        );
        let mix: Vec<String> = summary
            .difficulty
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out.push_str(&format!("difficulty: {}\n", mix.join(", ")));
        let what = if summary.level == TokenLevel::NAME {
            "spans"
        } else {
            "chunk ids"
        };
        out.push_str(&format!(
            "{what}: {} ({} per row)\n",
            summary.truth_items, summary.truth_per_row
        ));
        if let Some(c) = &summary.span_chars {
            out.push_str(&format!("span length in characters: {c}\n"));
        }
        if let Some(c) = &summary.chunker {
            out.push_str(&format!("chunker: {c}\n"));
        }
        print!("{out}");
        for p in &summary.problems {
            eprintln!("{p}");
        }
    }
    if !summary.problems.is_empty() {
        bail!(
            "{} span{} of {} disagree with the corpus (`rag-eval dataset reanchor` can place drifted ones again)",
            summary.problems.len(),
            if summary.problems.len() == 1 { "" } else { "s" },
            a.dataset
        );
    }
    Ok(())
}

fn reanchor(a: ReanchorArgs) -> Result<()> {
    let AnyDataset::Token(d) = dataset::load(&a.dataset)? else {
        bail!(
            "`{}` is chunk-level; only character spans can be re-anchored",
            a.dataset
        );
    };
    let corpus = a.corpus.load()?;
    let (fixed, report) = dataset::reanchor::reanchor(&d, &corpus);
    let output = a.output.as_ref().unwrap_or(&a.dataset);
    if !report.moved.is_empty() || a.output.is_some() {
        fixed.write(output)?;
    }
    let whitespace = report
        .moved
        .iter()
        .filter(|m| m.how == dataset::reanchor::Match::Whitespace)
        .count();
    eprintln!(
        "moved {} span{} ({} verbatim, {whitespace} ignoring whitespace){}",
        report.moved.len(),
        if report.moved.len() == 1 { "" } else { "s" },
        report.moved.len() - whitespace,
        if report.moved.is_empty() && a.output.is_none() {
            "; nothing written".to_owned()
        } else {
            format!("; wrote {output}")
        }
    );
    for m in &report.moved {
        eprintln!(
            "  {} span {}: {}..{} -> {}..{} in `{}`",
            m.example_id, m.span_index, m.from.start, m.from.end, m.to.start, m.to.end, m.to.doc
        );
    }
    if !report.unplaced.is_empty() {
        for u in &report.unplaced {
            eprintln!("{u}");
        }
        bail!(
            "{} span{} could not be placed; they are left as they were",
            report.unplaced.len(),
            if report.unplaced.len() == 1 { "" } else { "s" }
        );
    }
    Ok(())
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
trait AnyLevelRetriever: Retriever<TokenLevel> + Retriever<rag_eval::level::ChunkLevel> {}
impl<T: Retriever<TokenLevel> + Retriever<rag_eval::level::ChunkLevel>> AnyLevelRetriever for T {}

fn eval(a: EvalArgs) -> Result<()> {
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
                let mode = match a.mode {
                    Mode::Standard => SpanMode::Standard,
                    Mode::Chroma => SpanMode::Chroma,
                };
                let index = metrics::ChunkIndex::new(
                    &chunker
                        .chunk_corpus(&corpus)
                        .into_iter()
                        .map(|c| c.span)
                        .collect::<Vec<_>>(),
                );
                let metrics = metrics::token_level_metrics(mode, Some(index));
                let retriever = build_retriever(&a.retriever, chunker)?;
                let evaluation = TokenLevelEvaluation::new(corpus.clone(), d.clone())?
                    .with_mode(mode_name(a.mode));
                evaluation.run_blocking(&*retriever as &dyn Retriever<TokenLevel>, a.k, &metrics)?
            }
            AnyDataset::Chunk(d) => {
                if matches!(a.mode, Mode::Chroma) {
                    bail!(
                        "--mode chroma scores character spans; `{}` is a chunk-level dataset",
                        a.dataset
                    );
                }
                let retriever = build_retriever(&a.retriever, chunker)?;
                let evaluation = ChunkLevelEvaluation::new(corpus.clone(), d.clone())?;
                evaluation.run_blocking(
                    &*retriever as &dyn Retriever<rag_eval::level::ChunkLevel>,
                    a.k,
                    &metrics::chunk_level_metrics(),
                )?
            }
        };
        if a.json {
            println!("{}", serde_json::to_string(&result)?);
        }
        results.push((spec.clone(), result));
    }
    if !a.json {
        print!(
            "retriever: {}\n{}",
            a.retriever,
            rag_eval::eval::comparison_table(&results)
        );
    }
    Ok(())
}

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
const EXIT_INTERRUPTED: u8 = 130;

/// How a generation run ended, when it did not fail.
enum Generated {
    Complete,
    Interrupted,
}

fn generate(command: GenerateCommand) -> Result<ExitCode> {
    let (level, chunker_spec, a) = match command {
        GenerateCommand::Token(a) => (TokenLevel::NAME, None, a),
        GenerateCommand::Chunk(c) => (ChunkLevel::NAME, Some(c.chunker), c.common),
    };
    if a.queries_per_doc == 0 {
        bail!("--queries-per-doc must be at least 1");
    }
    if a.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if let Some(p) = a.price_per_1k_tokens {
        if !p.is_finite() || p < 0.0 {
            bail!("--price-per-1k-tokens must be a non-negative number, got {p}");
        }
    }
    let corpus = a.corpus.load()?;
    let prompts = match &a.prompt_file {
        Some(p) => Prompts::from_file(p)?,
        None => Prompts::builtin(),
    };
    let few_shot = match &a.few_shot {
        Some(p) => FewShot::load_jsonl(p)?,
        None => Vec::new(),
    };
    let config = GenerateConfig {
        queries_per_doc: a.queries_per_doc,
        cross_document: a.cross_document,
        dedup_threshold: if a.no_dedup {
            None
        } else {
            GenerateConfig::default().dedup_threshold
        },
        check_answerable: a.check_answerable,
        difficulty_mix: a.difficulty_mix.as_deref().map(parse_mix).transpose()?,
        few_shot,
        prompts,
        model: Some(a.model.clone()),
        temperature: a.temperature,
        seed: a.seed,
        ..GenerateConfig::default()
    };
    config.validate()?;

    // What shapes the rows; the corpus-wide filters (--difficulty-mix, --no-dedup) run over
    // all rows at the end, so a continuation may change them.
    let prompt = if level == TokenLevel::NAME {
        &config.prompts.token
    } else {
        &config.prompts.chunk
    };
    let mut header = RunHeader::new(level)
        .with("--model", a.model.as_str())
        .with("--queries-per-doc", a.queries_per_doc)
        .with("--seed", a.seed)
        .with("--cross-document", a.cross_document)
        .with("--check-answerable", a.check_answerable)
        .with(
            "--prompt-file",
            format!(
                "version {}, text {}",
                prompt.version,
                short_hash(prompt.template.as_bytes())
            ),
        )
        .with(
            "--few-shot",
            short_hash(serde_json::to_string(&config.few_shot)?.as_bytes()),
        );
    if let Some(t) = a.temperature {
        header = header.with("--temperature", f64::from(t));
    }
    if a.check_answerable {
        let p = &config.prompts.answerable;
        header = header.with(
            "--prompt-file (answerable)",
            format!(
                "version {}, text {}",
                p.version,
                short_hash(p.template.as_bytes())
            ),
        );
    }
    let chunker = match &chunker_spec {
        Some(spec) => {
            let chunker: std::sync::Arc<dyn PositionAwareChunker> = parse_spec(spec)?.into();
            // The chunker's own name, so that spellings of one spec agree.
            header = header.with("--chunker", chunker.name());
            Some(chunker)
        }
        None => None,
    };

    let key_set = std::env::var(&a.api_key_env).is_ok_and(|v| !v.trim().is_empty());
    if !key_set && a.base_url.contains("api.openai.com") {
        bail!(
            "environment variable `{}` (--api-key-env) is not set; OpenAI needs a key (local servers do not: give their --base-url)",
            a.api_key_env
        );
    }
    let timeout = std::time::Duration::from_secs(a.timeout.max(1));
    let concurrency = a.concurrency;
    let client = std::sync::Arc::new(
        OpenAiChat::builder(a.model.as_str())
            .base_url(a.base_url.as_str())
            .api_key_env(a.api_key_env.as_str())
            .http(|h| h.with_concurrency(concurrency).with_timeout(timeout))
            .build()?,
    );

    let mut out = ResumableOutput::open(a.output.clone(), header)?;
    let missing = out.missing_from(&corpus);
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(3).map(|d| d.as_str()).collect();
        bail!(
            "{} document{} done by an earlier run into `{}` {} not in the corpus any more ({}{}); use the same corpus, or another output",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            a.output,
            if missing.len() == 1 { "is" } else { "are" },
            shown.join(", "),
            if missing.len() > 3 { ", …" } else { "" }
        );
    }
    let mut todo = Vec::new();
    for doc in corpus.documents() {
        if !out.is_done(doc)? {
            todo.push(doc);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = std::time::Instant::now();
    let ctx = RunContext {
        corpus: &corpus,
        todo,
        concurrency,
        price: a.price_per_1k_tokens,
    };
    let ended = match chunker {
        None => {
            let generator = TokenLevelDataGenerator::new(client.clone(), config);
            runtime.block_on(run_generation(
                &ctx,
                &mut out,
                |doc, first| generator.generate_document(&corpus, doc, first),
                |examples, dropped| generator.finish(examples, dropped),
            ))?
        }
        Some(chunker) => {
            let generator = ChunkLevelDataGenerator::new(client.clone(), chunker, config);
            runtime.block_on(run_generation(
                &ctx,
                &mut out,
                |doc, first| generator.generate_document(&corpus, doc, first),
                |examples, dropped| generator.finish(examples, dropped),
            ))?
        }
    };
    let stats = client.http_stats();
    let t = out.totals();
    let mut summary = format!(
        "{} ({} of {} documents{}); dropped {}; {} calls, {} tokens ({} prompt, {} answer){}; {} retried requests; {:.1} s",
        match ended {
            Generated::Complete => format!("wrote {} rows to {}", t.rows, a.output),
            Generated::Interrupted => format!("interrupted: {} rows in {}", t.rows, a.output),
        },
        t.documents,
        corpus.len(),
        match out.resumed().documents {
            0 => String::new(),
            n => format!(", {n} from an earlier run"),
        },
        t.dropped,
        t.calls,
        t.usage.total(),
        t.usage.prompt_tokens,
        t.usage.completion_tokens,
        cost(a.price_per_1k_tokens, t.usage.total())
            .map(|c| format!(", {c}"))
            .unwrap_or_default(),
        stats.retries,
        started.elapsed().as_secs_f64()
    );
    match ended {
        Generated::Complete => {
            eprintln!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Generated::Interrupted => {
            summary.push_str("; run the same command again to continue");
            eprintln!("{summary}");
            Ok(ExitCode::from(EXIT_INTERRUPTED))
        }
    }
}

fn short_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn cost(price: Option<f64>, tokens: u64) -> Option<String> {
    price.map(|p| format!("${:.4}", p * tokens as f64 / 1000.0))
}

/// What a generation run works through.
struct RunContext<'a> {
    corpus: &'a Corpus,
    todo: Vec<&'a Document>,
    concurrency: usize,
    price: Option<f64>,
}

/// Generates the documents of `ctx.todo`, `concurrency` at a time, appending each one's rows
/// as it completes; on Ctrl-C stops taking new documents and waits for those in flight. When
/// every document is done, runs the corpus-wide filters and rewrites the file.
async fn run_generation<'a, L, F, Fut>(
    ctx: &RunContext<'a>,
    out: &mut ResumableOutput,
    generate: F,
    finish: impl FnOnce(&mut Vec<Example<L>>, &mut Dropped),
) -> Result<Generated>
where
    L: GeneratedLevel,
    Example<L>: ToRow,
    F: Fn(&'a Document, usize) -> Fut,
    Fut: std::future::Future<Output = rag_eval::Result<DocumentBatch<L>>>,
{
    use futures_util::StreamExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let stop = Arc::new(AtomicBool::new(false));
    let progress = Progress::new(ctx.todo.len(), out, ctx.price);
    {
        let (stop, bar) = (Arc::clone(&stop), progress.bar.clone());
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            stop.store(true, Ordering::SeqCst);
            let note = "stopping after the documents in flight; press Ctrl-C again to quit at once";
            match &bar {
                Some(bar) => bar.println(note),
                None => eprintln!("{note}"),
            }
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
        });
    }
    let mut progress = progress;
    let mut failure: Option<anyhow::Error> = None;
    let pending = ctx
        .todo
        .iter()
        .copied()
        .take_while(|_| !stop.load(Ordering::SeqCst));
    // The first id does not matter: rows are numbered when they are appended.
    let mut results = futures_util::stream::iter(pending)
        .map(|doc| {
            let fut = generate(doc, 1);
            async move { (doc, fut.await) }
        })
        .buffer_unordered(ctx.concurrency);
    while let Some((doc, result)) = results.next().await {
        match result {
            // Also after a failure: the work of documents that were in flight is paid for.
            Ok(batch) => {
                let record = out.append(doc, batch)?;
                progress.document(record);
            }
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                if failure.is_none() {
                    failure = Some(anyhow!(e).context(format!("document `{}`", doc.id())));
                }
            }
        }
    }
    progress.done();
    if let Some(e) = failure {
        let t = out.totals();
        return Err(e.context(format!(
            "generation stopped with {} of {} documents done ({} rows kept in `{}`; run the same command again to continue)",
            t.documents,
            ctx.corpus.len(),
            t.rows,
            out.path()
        )));
    }
    if stop.load(Ordering::SeqCst) && out.records().len() < ctx.corpus.len() {
        return Ok(Generated::Interrupted);
    }
    if out.finished().is_none() {
        out.finish::<L>(ctx.corpus, finish)?;
    }
    Ok(Generated::Complete)
}

/// The progress display: a bar on a terminal, else one line per document.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    done: usize,
    rows: usize,
    dropped: Dropped,
    tokens: u64,
    price: Option<f64>,
}

impl Progress {
    fn new(total: usize, out: &ResumableOutput, price: Option<f64>) -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} documents, {elapsed} elapsed, eta {eta}\n{wide_msg}",
                )
                .expect("the template is valid"),
            );
            bar
        });
        let resumed = out.resumed();
        if resumed.documents > 0 {
            let note = format!(
                "continuing `{}`: {} documents done earlier ({} rows){}",
                out.path(),
                resumed.documents,
                resumed.rows,
                if resumed.discarded_bytes > 0 {
                    "; the rows of documents in flight when it stopped were removed"
                } else {
                    ""
                }
            );
            match &bar {
                Some(bar) => bar.println(note),
                None => eprintln!("{note}"),
            }
        }
        let mut p = Progress {
            bar,
            total,
            done: 0,
            rows: 0,
            dropped: Dropped::default(),
            tokens: 0,
            price,
        };
        p.redraw();
        p
    }

    fn document(&mut self, r: &DocRecord) {
        self.done += 1;
        self.rows += r.rows;
        self.dropped += r.dropped;
        self.tokens += r.usage.total();
        match &self.bar {
            Some(bar) => {
                let bar = bar.clone();
                self.redraw();
                bar.inc(1);
            }
            None => eprintln!(
                "[{}/{}] {}: {} row{}, dropped {}, {} call{}, {} tokens",
                self.done,
                self.total,
                r.doc_id,
                r.rows,
                if r.rows == 1 { "" } else { "s" },
                r.dropped,
                r.calls,
                if r.calls == 1 { "" } else { "s" },
                r.usage.total()
            ),
        }
    }

    fn redraw(&mut self) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{} questions: {} located, {} dropped; {} tokens{}",
                self.rows + self.dropped.total(),
                self.rows,
                self.dropped.total(),
                self.tokens,
                cost(self.price, self.tokens)
                    .map(|c| format!(", {c}"))
                    .unwrap_or_default()
            ));
        }
    }

    fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
