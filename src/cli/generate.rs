//! `rag-eval generate`: a synthetic dataset from a language model, resumable.

use super::CorpusArgs;
use crate::chunker::{parse_spec, PositionAwareChunker};
use crate::level::LevelKind;
use crate::llm::OpenAiChat;
use crate::synth::resume::{DocRecord, ResumableOutput, Resumed, RunHeader};
use crate::synth::run::{self, GenerationRun, RunEnd, StopSignal};
use crate::synth::{
    parse_mix, ChunkLevelDataGenerator, Dropped, FewShot, GenerateConfig, Prompts,
    TokenLevelDataGenerator,
};
use anyhow::{bail, Result};
use camino::{Utf8Path, Utf8PathBuf};
use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Subcommand)]
pub(super) enum GenerateCommand {
    /// Questions with the character spans that answer them (verbatim excerpts located in the
    /// document).
    Token(GenerateArgs),
    /// Questions with the ids of the chunks that answer them, for one chunker.
    Chunk(ChunkGenerateArgs),
}

#[derive(Args)]
pub(super) struct ChunkGenerateArgs {
    /// Chunker spec whose chunks the questions cite, e.g. `recursive:size=400,overlap=0`.
    #[arg(long)]
    chunker: String,
    #[command(flatten)]
    common: GenerateArgs,
}

#[derive(Args)]
pub(super) struct GenerateArgs {
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
    #[arg(long, default_value = crate::http::OPENAI_BASE_URL)]
    base_url: String,
    /// Environment variable holding the API key (local servers need none).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    api_key_env: String,
    /// Documents worked on at once, and the most requests in flight to the server (fewer
    /// while it answers 429 or 503, times out or slows down, growing back as it recovers).
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
    /// Target shares per difficulty, summing to 1, e.g.
    /// `factual=0.4,analytical=0.3,inferential=0.3`; the excess is dropped at the end.
    #[arg(long, value_name = "MIX")]
    difficulty_mix: Option<String>,
    /// Drop questions the model answers confidently without the document (one more call per
    /// question).
    #[arg(long)]
    check_answerable: bool,
    /// Keep near-duplicate questions.
    #[arg(long)]
    no_dedup: bool,
    /// Sampling temperature, from 0 to 2 (the server's default when unset).
    #[arg(long, value_parser = parse_temperature)]
    temperature: Option<f32>,
    /// Seconds without any answer from the server before a request is retried (a request
    /// queued behind others that are being answered waits, at most timeout × concurrency; a
    /// request gives up after twice that in all, retries included).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,
    /// Price per 1,000 tokens (prompt and answer alike), to show what the run costs.
    #[arg(long, value_name = "PRICE")]
    price_per_1k_tokens: Option<f64>,
    /// The most tokens the model may answer one request with (sent as `max_tokens`); once the
    /// model's context is known (--context-tokens, or a request the server refuses as too
    /// long), at most a quarter of it and half of what the prompt leaves.
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::synth::DEFAULT_MAX_TOKENS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_tokens: u32,
    /// The model's context in tokens (llama-server's `-c`), to cut documents into windows
    /// that fit from the start. Without it, the first request the server refuses as too long
    /// teaches the window size; a document that fits in no window is left out, not the run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    context_tokens: Option<u64>,
}

/// A temperature the servers accept: OpenAI's range, which the local servers share. A NaN
/// would otherwise travel as JSON `null` and leave the server's default in place unnoticed.
fn parse_temperature(s: &str) -> std::result::Result<f32, String> {
    let t: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !t.is_finite() || !(0.0..=2.0).contains(&t) {
        return Err(format!("{t} is not a temperature from 0 to 2"));
    }
    Ok(t)
}

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
const EXIT_INTERRUPTED: u8 = 130;

pub(super) fn run(command: GenerateCommand) -> Result<ExitCode> {
    let (level, chunker_spec, a) = match command {
        GenerateCommand::Token(a) => (LevelKind::Token, None, a),
        GenerateCommand::Chunk(c) => (LevelKind::Chunk, Some(c.chunker), c.common),
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
        max_tokens: Some(a.max_tokens),
        context_tokens: a
            .context_tokens
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        ..GenerateConfig::default()
    };
    config.validate()?;

    // What shapes the rows; the corpus-wide filters (--difficulty-mix, --no-dedup) run over
    // all rows at the end, so a continuation may change them.
    let prompt = if level == LevelKind::Token {
        &config.prompts.token
    } else {
        &config.prompts.chunk
    };
    let mut header = RunHeader::new(level.name())
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
                crate::digest::short_sha256(prompt.template.as_bytes())
            ),
        )
        .with(
            "--few-shot",
            crate::digest::short_sha256(serde_json::to_string(&config.few_shot)?.as_bytes()),
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
                crate::digest::short_sha256(p.template.as_bytes())
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
            .http(|h| {
                // Room for one attempt that waits its longest and a retry.
                let deadline =
                    timeout.saturating_mul(u32::try_from(concurrency).unwrap_or(u32::MAX));
                h.with_concurrency(concurrency)
                    .with_timeout(timeout)
                    .with_deadline(Some(deadline.saturating_mul(2)))
            })
            .build()?,
    );

    let mut out = ResumableOutput::open(a.output.clone(), header)?;
    let runtime = super::runtime()?;
    let started = std::time::Instant::now();
    let stop = StopSignal::new();
    let mut progress = Progress::new(a.price_per_1k_tokens);
    let ended = runtime.block_on(async {
        watch_ctrl_c(stop.clone(), progress.bar.clone());
        match chunker {
            None => {
                let generator = TokenLevelDataGenerator::new(client.clone(), config);
                GenerationRun::new(&generator, &corpus)
                    .concurrency(concurrency)
                    .run(&mut out, &stop, &mut progress)
                    .await
            }
            Some(chunker) => {
                let generator = ChunkLevelDataGenerator::new(client.clone(), chunker, config);
                GenerationRun::new(&generator, &corpus)
                    .concurrency(concurrency)
                    .run(&mut out, &stop, &mut progress)
                    .await
            }
        }
    })?;
    let stats = client.http_stats();
    let t = out.totals();
    let mut summary = format!(
        "{} ({} of {} documents{}); dropped {}{}; {} calls, {} tokens ({} prompt, {} answer){}; {} retried requests; {:.1} s",
        match ended {
            RunEnd::Interrupted => format!("interrupted: {} rows in {}", t.rows, a.output),
            _ => format!("wrote {} rows to {}", t.rows, a.output),
        },
        t.documents,
        corpus.len(),
        match out.resumed().documents {
            0 => String::new(),
            n => format!(", {n} from an earlier run"),
        },
        t.dropped,
        match t.without_answer {
            0 => String::new(),
            n => format!("; {n} without a reference answer"),
        },
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
        RunEnd::Interrupted => {
            summary.push_str("; run the same command again to continue");
            note!("{summary}");
            Ok(ExitCode::from(EXIT_INTERRUPTED))
        }
        _ => {
            note!("{summary}");
            if t.rows == 0 {
                // A dataset without rows scores nothing; a script must not take it for one.
                bail!(
                    "no rows were generated: {}",
                    if !progress.left_out.is_empty() || t.dropped.documents > 0 {
                        let n = t.dropped.documents.max(progress.left_out.len());
                        let left = left_out(&progress.left_out, n, corpus.len());
                        match corpus.len().saturating_sub(n) {
                            0 => left,
                            others if t.calls == 0 => {
                                format!("{left}; the other {others} are blank")
                            }
                            others => format!(
                                "{left}; every question of the other {others} was dropped ({})",
                                t.dropped
                            ),
                        }
                    } else if t.calls == 0 {
                        "the documents are blank, so no question was asked".to_owned()
                    } else {
                        format!("every question was dropped ({})", t.dropped)
                    }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Which documents were left out whole and why (the first few), of `left_out` in all and
/// `total` documents.
fn left_out(reasons: &[(String, String)], left_out: usize, total: usize) -> String {
    const SHOWN: usize = 3;
    let mut text = format!("{left_out} of {total} documents were left out");
    for (doc, reason) in reasons.iter().take(SHOWN) {
        text.push_str(&format!(
            "; `{}`: {}",
            crate::escape::terminal(doc),
            crate::escape::terminal(reason)
        ));
    }
    if reasons.len() > SHOWN {
        text.push_str(&format!(
            "; and {} more (named above)",
            reasons.len() - SHOWN
        ));
    }
    text
}

/// On Ctrl-C, asks the run to stop after the documents in flight; on a second, quits at once.
fn watch_ctrl_c(stop: StopSignal, bar: Option<indicatif::ProgressBar>) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        stop.stop();
        let note = "stopping after the documents in flight; press Ctrl-C again to quit at once";
        match &bar {
            Some(bar) => bar.println(note),
            None => note!("{note}"),
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
}

fn cost(price: Option<f64>, tokens: u64) -> Option<String> {
    price.map(|p| format!("${:.4}", p * tokens as f64 / 1000.0))
}

/// The progress display: a bar on a terminal, else the progress line at its bounded rate.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    line: Option<crate::harness::progress::Shown>,
    rows: usize,
    dropped: Dropped,
    tokens: u64,
    price: Option<f64>,
    /// The documents left out whole, with the reason.
    left_out: Vec<(String, String)>,
}

impl Progress {
    fn new(price: Option<f64>) -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
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
        let line = match bar {
            Some(_) => None,
            None => crate::harness::progress::show("rag-eval", "generate", 0),
        };
        Progress {
            bar,
            line,
            rows: 0,
            dropped: Dropped::default(),
            tokens: 0,
            price,
            left_out: Vec::new(),
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
}

impl run::Progress for Progress {
    fn started(&mut self, todo: usize, resumed: &Resumed, output: &Utf8Path) {
        if let Some(bar) = &self.bar {
            bar.set_length(todo as u64);
        }
        if let Some(line) = &self.line {
            line.task().stage_of("generate", todo, "documents");
        }
        if resumed.documents > 0 {
            let note = format!(
                "continuing `{output}`: {} documents done earlier ({} rows){}",
                resumed.documents,
                resumed.rows,
                if resumed.discarded_bytes > 0 {
                    "; the rows of documents in flight when it stopped were removed"
                } else {
                    ""
                }
            );
            match &self.bar {
                Some(bar) => bar.println(note),
                None => note!("{note}"),
            }
        }
        self.redraw();
    }

    fn document(&mut self, r: &DocRecord) {
        self.rows += r.rows;
        self.dropped += r.dropped;
        self.tokens = crate::llm::add_tokens(self.tokens, r.usage.total());
        if let Some(reason) = &r.dropped_reason {
            self.left_out
                .push((r.doc_id.as_str().to_owned(), reason.clone()));
            let note = format!(
                "document `{}` left out: {}",
                crate::escape::terminal(r.doc_id.as_str()),
                crate::escape::terminal(reason)
            );
            match &self.bar {
                Some(bar) => bar.println(note),
                None => note!("{note}"),
            }
        }
        if let Some(bar) = self.bar.clone() {
            self.redraw();
            bar.inc(1);
        }
        if let Some(line) = &self.line {
            line.task().add(1);
        }
    }

    fn ended(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.line = None;
    }
}
