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
