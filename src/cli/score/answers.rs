//! `rag-eval score --answers`: a RAG system's answers against a dataset's reference answers,
//! and their contexts as a retrieval.

use super::{dataset_record, with_truth, ScoreArgs};
use crate::align::{corrected_means, corrected_text, CorrectedFigure};
use crate::answers::{
    embed_answers, score_answers, AnswerEmbeddings, Answers, ContextItems, Placement,
};
use crate::cli::answering::{client, Counter};
use crate::cli::dry_run::{self, DryRun};
use crate::cli::judging::Judging;
use crate::cli::output::Output;
use crate::cli::render_run_table;
use crate::cli::runtime;
use crate::cli::with_cache;
use crate::components::Context;
use crate::corpus::Corpus;
use crate::dataset::{self, AnyDataset, Dataset};
use crate::embed::Embedder;
use crate::generator::RagAnswer;
use crate::harness::progress;
use crate::judge::{JudgeInput, JudgeSummary};
use crate::metrics::registry::{default_judge_names, REGISTRY};
use crate::metrics::{self, answer_metrics, Metric, RunResult, SpanMode};
use crate::runs::Spend;
use crate::service::PROVIDER;
use anyhow::{bail, Context as _, Result};
use camino::Utf8Path;
use std::sync::Arc;

/// What `score --answers --json` prints: the shape of `score --json`, plus the count of queries
/// the reference-needing metrics leave out and, with a judge, each judge's summary.
#[derive(serde::Serialize)]
struct Card<'a> {
    #[serde(flatten)]
    result: &'a RunResult,
    without_reference: usize,
    /// Queries whose retrieval metrics are not measured (no retrieval truth, or no context).
    retrieval_not_measured: usize,
    /// How the contexts given as text were placed in `--corpus`; absent when every context
    /// came with offsets.
    #[serde(skip_serializing_if = "Option::is_none")]
    contexts_located: Option<Placement>,
    #[serde(skip_serializing_if = "<[JudgeSummary]>::is_empty")]
    judges: &'a [JudgeSummary],
    /// With --labels: the judge-corrected means.
    #[serde(skip_serializing_if = "<[CorrectedFigure]>::is_empty")]
    corrected: &'a [CorrectedFigure],
    /// With --traces: how the traces were matched with the dataset's rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    traces: Option<&'a crate::traces::Join>,
}

/// What scoring one level gives: the figures (the judges' included) and the rows without a
/// reference answer.
struct Scored {
    result: RunResult,
    without_reference: usize,
    retrieval_not_measured: usize,
}

/// Where the answers come from.
pub(in crate::cli) enum Source<'a> {
    /// An answers file (`score --answers`).
    File(&'a Utf8Path),
    /// OpenTelemetry traces (`score --traces`), turned into answers once the dataset is read.
    Traces(&'a Utf8Path),
    /// A RAG system's spec, asked every query of the dataset (`eval --rag`), and where to
    /// save its answers.
    Rag {
        spec: &'a str,
        save: Option<&'a Utf8Path>,
    },
}

pub(in crate::cli) fn run(
    a: &ScoreArgs,
    dataset_path: &Utf8Path,
    source: Source<'_>,
    k: usize,
    out: &mut Output,
) -> Result<()> {
    if a.chunks.is_some() {
        bail!("--chunks (precision_omega) scores a chunker's whole output; with --answers there are only the contexts");
    }
    // A file is read (and its mistakes reported) before any server is asked.
    let from_file = match source {
        Source::File(path) => Some(Answers::load(path)?),
        Source::Traces(_) | Source::Rag { .. } => None,
    };
    let traces = match source {
        Source::Traces(path) => Some(super::from_traces::read(a, path)?),
        _ => None,
    };
    let context = match &a.cache {
        None => Context::new(),
        Some(text) if a.dry.dry_run => dry_run::cache_context(text)?,
        Some(text) => with_cache(Context::new(), text)?,
    }
    .with_limit(a.timeout.limit());
    let embedder = a
        .embedder
        .as_deref()
        .map(|spec| crate::components::build_embedder(spec, &context))
        .transpose()?;
    let dry_run = a.dry.dry_run;
    let dry = DryRun::default();
    let mut judging = match &a.judge.judge_model {
        Some(model) => {
            let url = a
                .judge
                .judge_url
                .as_deref()
                .unwrap_or(crate::http::OPENAI_BASE_URL);
            let (llm, http) = client(
                model,
                url,
                &a.api_key_env,
                context.cache(),
                a.timeout,
                a.judge.concurrency,
                !dry_run,
            )?;
            let (llm, embedder) = if dry_run {
                (
                    dry.counted(llm, "judge", model),
                    embedder.clone().map(dry_run::unembedded),
                )
            } else {
                (llm, embedder.clone())
            };
            Some(Judging::new(
                &a.judge,
                model,
                llm,
                http,
                embedder,
                &default_judge_names(),
                "give --embedder SPEC",
            )?)
        }
        None => None,
    };
    let corpus = a
        .corpus
        .as_ref()
        .map(|c| Corpus::from_folder(c, Some(&a.glob)))
        .transpose()?;
    let j = judging.as_mut();
    let e = embedder.as_ref();
    let dataset = dataset::load(dataset_path)?;
    // The traces become answers once the rows they answer are known.
    let (from_file, joined) = match (traces, &source) {
        (Some(traces), Source::Traces(path)) => {
            let (answers, joined) =
                super::from_traces::answers(&traces, a, path, &dataset, corpus.as_ref())?;
            (Some(answers), Some(joined))
        }
        _ => (from_file, None),
    };
    if dry_run {
        // The service's answers the cache holds: not asked again, and judged as they are.
        let (rag, from_service) = match &source {
            Source::Rag { spec, .. } => {
                let rag = crate::components::build_rag(spec, &context)?;
                let queries = match &dataset {
                    AnyDataset::Token(d) => id_queries(d),
                    AnyDataset::Chunk(d) => id_queries(d),
                };
                let (service, answers) = cached_answers(&rag, &queries, corpus.as_ref())?;
                (Some(service), Some(answers))
            }
            Source::File(_) | Source::Traces(_) => (None, None),
        };
        let setting = dry_run::Setting {
            judging: judging.as_ref(),
            embedder: match (&embedder, &a.embedder) {
                (Some(e), Some(spec)) => Some(dry_run::AnswerEmbedder::new(
                    e.as_ref(),
                    spec,
                    context.cache(),
                )?),
                _ => None,
            },
            rag,
            ..dry_run::Setting::new(&a.dry)
        };
        // A query the service would be asked has a one-word stand-in answer.
        let (answers, stand_in) = match (&from_file, &from_service) {
            (Some(file), _) => (Some(file), ""),
            (None, service) => (service.as_ref(), "answer"),
        };
        let plan = match &dataset {
            AnyDataset::Token(d) => dry_plan(&dry, d, answers, stand_in, &setting)?,
            AnyDataset::Chunk(d) => dry_plan(&dry, d, answers, stand_in, &setting)?,
        };
        return dry_run::print(&plan, a.json, out);
    }
    let (mut answers, origin, input) = match (from_file, source) {
        (Some(answers), Source::File(path)) => (answers, "score", ("answers", path.to_string())),
        (Some(answers), Source::Traces(path)) => (answers, "score", ("traces", path.to_string())),
        (_, Source::Rag { spec, save }) => {
            let rag = crate::components::build_rag(spec, &context)?;
            let queries = match &dataset {
                AnyDataset::Token(d) => id_queries(d),
                AnyDataset::Chunk(d) => id_queries(d),
            };
            let started = std::time::Instant::now();
            let replayed = || {
                let stats = context.cache().map(|c| c.stats_for(PROVIDER, rag.url()));
                stats.map_or(0, |s| s.hits)
            };
            let before = replayed();
            let shown = progress::show("rag-eval", "ask the system", queries.len());
            let done = || shown.iter().for_each(|s| s.task().add(1));
            // The corpus gives the text of contexts the service gave by offsets alone; the
            // contexts given as text are placed below, with their counts.
            let answers = runtime()?
                .block_on(rag.ask_answers_reporting(&queries, corpus.as_ref(), &done))
                .context("asking the system under test")?;
            drop(shown);
            let by = match rag.redirected_to() {
                Some(to) => format!(" (answered by {to} after a redirect)"),
                None => String::new(),
            };
            note!(
                "{} in {:.1} s",
                asked(
                    &format!("{}{by}", crate::redact::redact_url(rag.url())),
                    queries.len() as u64,
                    replayed() - before
                ),
                started.elapsed().as_secs_f64()
            );
            if let Some(path) = save {
                crate::fs::write_atomic(path, answers.to_jsonl().as_bytes())
                    .context("--save-answers")?;
                note!("wrote the {} answers to {path}", answers.len());
            }
            (answers, "eval", ("rag", rag.spec()))
        }
        (None, Source::File(_) | Source::Traces(_)) => unreachable!("a file is read first"),
    };
    let contexts_located = locate_contexts(&mut answers, corpus.as_ref(), &dataset)?;
    let dataset_hash;
    let scored = match dataset {
        AnyDataset::Token(d) if !d.has_retrieval_truth() => {
            dataset_hash = d.content_hash();
            let metrics = metrics::token_level_metrics(a.mode, None);
            score(a, &d, &answers, corpus.as_ref(), &metrics, k, a.mode, e, j)?
        }
        AnyDataset::Token(d) => {
            let (d, _) = with_truth(d, a.skip_empty_truth)?;
            dataset_hash = d.content_hash();
            if let Some(corpus) = &corpus {
                let problems: Vec<String> = d
                    .check_against(corpus)
                    .iter()
                    .map(|p| p.to_string())
                    .collect();
                if !problems.is_empty() {
                    bail!(
                        "{} span{} of the dataset disagree with the corpus:\n{}",
                        problems.len(),
                        if problems.len() == 1 { "" } else { "s" },
                        problems.join("\n")
                    );
                }
            }
            let metrics = metrics::token_level_metrics(a.mode, None);
            score(a, &d, &answers, corpus.as_ref(), &metrics, k, a.mode, e, j)?
        }
        AnyDataset::Chunk(d) => {
            if a.mode != SpanMode::Standard {
                bail!(
                    "--mode {} scores character spans; `{dataset_path}` is a chunk-level dataset",
                    a.mode
                );
            }
            let (d, _) = with_truth(d, a.skip_empty_truth)?;
            dataset_hash = d.content_hash();
            let metrics = metrics::chunk_level_metrics();
            score(
                a,
                &d,
                &answers,
                corpus.as_ref(),
                &metrics,
                k,
                SpanMode::Standard,
                e,
                j,
            )?
        }
    };
    let Scored {
        result: mut card,
        without_reference,
        retrieval_not_measured,
    } = scored;
    if let Some(path) = &a.labels {
        super::super::labels::apply(path, &mut card)?;
    }
    let corrected = corrected_means(&card);
    let summaries = judging
        .as_ref()
        .map(|j| j.summaries.clone())
        .unwrap_or_default();
    // JSON cannot hold NaN or an infinity: such a figure is an error, never printed or recorded.
    if let Some(what) = card.non_finite() {
        bail!("scoring `{dataset_path}`: {what}");
    }
    if a.json {
        out.json_line(&Card {
            result: &card,
            without_reference,
            retrieval_not_measured,
            contexts_located,
            judges: &summaries,
            corrected: &corrected,
            traces: joined.as_ref(),
        })?;
    } else {
        let mut text = render_run_table(&card);
        if without_reference > 0 {
            text.push_str(&format!(
                "{without_reference} of {} queries have no reference answer: the metrics that compare with one leave them out\n",
                card.queries
            ));
        }
        if retrieval_not_measured > 0 {
            text.push_str(&format!(
                "retrieval not measured for {retrieval_not_measured} of {} queries (no retrieval truth, or no context found)\n",
                card.queries
            ));
        }
        text.push_str(&by_difficulty(&card));
        text.push_str(&corrected_text(&card));
        out.text(&text)?;
    }
    if let Some(cache) = context.cache() {
        note!("{}", cache.stats());
    }
    let mut record = dataset_record(
        a,
        dataset_path,
        card,
        dataset_hash,
        (input.0, Utf8Path::new(&input.1)),
        corpus.as_ref().zip(a.corpus.as_deref()),
    );
    record.origin = origin.to_owned();
    // The spec the embedder prints (credentials left out), never the argument as typed.
    record.config.embedder = embedder.as_ref().map(|e| e.spec().to_string());
    if let Some(j) = &judging {
        j.fill(&mut record, &summaries);
    }
    if let Some(cache) = context.cache() {
        let spent = cache.embedding_stats();
        if spent.tokens > 0 || spent.cost.is_some() {
            record.usage.get_or_insert_with(Default::default).embedding =
                Some(Spend::embedded(spent.tokens, spent.cost));
        }
    }
    crate::cli::runs::record(out, a.no_record, &[record])?;
    if let Some(j) = &judging {
        for line in j.usage_lines().lines() {
            note!("{line}");
        }
        let failures = j.gate_failures();
        if !failures.is_empty() {
            bail!("{}", failures.join("\n"));
        }
    }
    Ok(())
}

/// How the `answers` of the system at `url` came, `replayed` of them from the cache.
fn asked(url: &str, answers: u64, replayed: u64) -> String {
    match (answers - replayed.min(answers), replayed) {
        (_, 0) => format!("asked {url} for {answers} answers"),
        (0, _) => format!("replayed the {answers} answers of {url} from the cache"),
        (asked, _) => format!(
            "asked {url} for {asked} of {answers} answers, {replayed} replayed from the cache"
        ),
    }
}

/// Each row's reference answers as the judges read them (`None` for a row without one).
fn reference_texts<L: crate::level::Level>(d: &Dataset<L>) -> Vec<Option<String>> {
    d.examples()
        .iter()
        .map(|e| crate::judge::reference_text(&e.reference_answers))
        .collect()
}

/// The calls of `--dry-run` over `d`'s rows with their `answers`: without a file (`eval
/// --rag`, whose answers are not known before the system is asked) a one-word stand-in, since
/// the judges ask nothing of an empty answer; an empty one for a row the file does not answer.
fn dry_plan<L: crate::level::Level>(
    dry: &DryRun,
    d: &Dataset<L>,
    answers: Option<&Answers>,
    stand_in: &str,
    setting: &dry_run::Setting<'_>,
) -> Result<dry_run::Plan> {
    let empty = RagAnswer {
        answer: stand_in.to_owned(),
        contexts: Vec::new(),
    };
    let references = reference_texts(d);
    let rows: Vec<dry_run::Row<'_>> = d
        .examples()
        .iter()
        .zip(&references)
        .map(|(e, reference)| dry_run::Row {
            input: JudgeInput {
                query_id: &e.id,
                question: &e.query,
                answer: answers.and_then(|a| a.get(&e.id)).unwrap_or(&empty),
                reference: reference.as_deref(),
            },
            references: &e.reference_answers,
            generated: None,
        })
        .collect();
    dry.plan(&rows, setting)
}

/// Scores one level, the judges' figures included when there are judges.
#[allow(clippy::too_many_arguments)]
fn score<L: ContextItems>(
    a: &ScoreArgs,
    d: &Dataset<L>,
    answers: &Answers,
    corpus: Option<&Corpus>,
    retrieval: &[Box<dyn Metric<L>>],
    k: usize,
    mode: SpanMode,
    embedder: Option<&Arc<dyn Embedder>>,
    judging: Option<&mut Judging>,
) -> Result<Scored> {
    answers.check_ids(d)?;
    if let Some(corpus) = corpus {
        check_contexts(answers, corpus)?;
    }
    if !d.has_retrieval_truth() {
        note!(
            "`{}` has reference answers and no retrieval truth: retrieval metrics are not measured",
            d.source()
        );
    }
    let missing: Vec<&str> = d
        .examples()
        .iter()
        .filter(|e| answers.get(&e.id).is_none())
        .map(|e| e.id.as_str())
        .collect();
    if !missing.is_empty() && !a.allow_missing {
        let shown: Vec<&str> = missing.iter().take(5).copied().collect();
        bail!(
            "{} of {} dataset queries have no line in `{}` ({}{}); pass --allow-missing to score them as empty answers",
            missing.len(),
            d.len(),
            answers.path(),
            shown.join(", "),
            if missing.len() > 5 { ", …" } else { "" }
        );
    }
    let with_reference = d
        .examples()
        .iter()
        .filter(|e| !e.reference_answers.is_empty())
        .count();
    let answer = if with_reference == 0 {
        note!(
            "warning: no row of `{}` has a reference answer (`outputs.reference_answer`): only the retrieval metrics of the contexts are reported",
            d.source()
        );
        Vec::new()
    } else {
        answer_metrics(a.embedder.is_some())
    };
    let embeddings: Option<Vec<AnswerEmbeddings>> = match embedder {
        Some(embedder) if with_reference > 0 => {
            let pairs: Vec<(&str, &[String])> = d
                .examples()
                .iter()
                .map(|e| {
                    let answer = answers.get(&e.id).map_or("", |x| x.answer.as_str());
                    (answer, e.reference_answers.as_slice())
                })
                .collect();
            Some(
                runtime()?
                    .block_on(embed_answers(embedder.clone(), &pairs))
                    .context("cannot embed the answers for answer_similarity")?,
            )
        }
        _ => None,
    };
    let mut s = score_answers(
        d,
        answers,
        retrieval,
        &answer,
        embeddings.as_deref(),
        k,
        mode,
    )?;
    if s.unanswered > 0 {
        note!(
            "{} of {} queries have no answer in `{}` and are scored as empty answers (--allow-missing)",
            s.unanswered,
            d.len(),
            answers.path()
        );
    }
    if let Some(judging) = judging {
        let empty = RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        };
        let references = reference_texts(d);
        let inputs: Vec<JudgeInput<'_>> = d
            .examples()
            .iter()
            .zip(&references)
            .map(|(e, reference)| JudgeInput {
                query_id: &e.id,
                question: &e.query,
                answer: answers.get(&e.id).unwrap_or(&empty),
                reference: reference.as_deref(),
            })
            .collect();
        runtime()?.block_on(judging.judge("rag-eval", &inputs, &mut s.result));
    }
    Ok(Scored {
        result: s.result,
        without_reference: s.without_reference,
        retrieval_not_measured: s.retrieval_not_measured,
    })
}

/// The answers to `queries` that `rag`'s cache holds (their contexts placed in `corpus`, as a
/// run places them), and what a dry run counts of the service: the queries it would ask.
fn cached_answers(
    rag: &crate::service::HttpRag,
    queries: &[(String, String)],
    corpus: Option<&Corpus>,
) -> Result<(dry_run::Service, Answers)> {
    let mut cached = std::collections::HashSet::new();
    let mut jsonl = String::new();
    for (id, query) in queries {
        if let Some(answer) = rag.cached(id, query)? {
            jsonl.push_str(&answer.line.to_string());
            jsonl.push('\n');
            cached.insert(id.clone());
        }
    }
    let source = format!(
        "cached responses of {}",
        crate::redact::redact_url(rag.url())
    );
    let mut answers = Answers::parse(&jsonl, source.into())?;
    if let Some(corpus) = corpus {
        answers.place_in(corpus);
    }
    let service = dry_run::Service {
        spec: rag.spec(),
        cached,
    };
    Ok((service, answers))
}

/// The `(id, query)` pairs of a dataset, in order.
fn id_queries<L: crate::level::Level>(d: &Dataset<L>) -> Vec<(String, String)> {
    d.examples()
        .iter()
        .map(|e| (e.id.clone(), e.query.clone()))
        .collect()
}

/// Places the contexts given as text in the corpus and says how it went; without a corpus,
/// an error when the dataset scores character spans (the contexts would score nothing).
fn locate_contexts(
    answers: &mut Answers,
    corpus: Option<&Corpus>,
    dataset: &AnyDataset,
) -> Result<Option<Placement>> {
    let given = answers.text_contexts();
    if given == 0 {
        return Ok(None);
    }
    let Some(corpus) = corpus else {
        if let AnyDataset::Token(d) = dataset {
            if d.has_retrieval_truth() {
                bail!(
                    "{given} context{} of `{}` {} given as text without offsets: give --corpus to find {} in the documents",
                    if given == 1 { "" } else { "s" },
                    answers.path(),
                    if given == 1 { "is" } else { "are" },
                    if given == 1 { "it" } else { "them" },
                );
            }
        }
        return Ok(None);
    };
    let placed = answers.place_in(corpus);
    note!("{placed}");
    Ok(Some(placed))
}

/// Every context that is not a range of `corpus` or whose text is not the document's there.
fn check_contexts(answers: &Answers, corpus: &Corpus) -> Result<()> {
    let mut problems = Vec::new();
    for (id, line) in answers.ids() {
        let Some(answer) = answers.get(id) else {
            continue;
        };
        for (i, c) in answer.contexts.iter().enumerate() {
            if answers.given_as_text(id, i) {
                continue;
            }
            let at = format!("{}:{line}: query `{id}`, `contexts[{i}]`", answers.path());
            match corpus.get(c.chunk.span.doc.as_str()) {
                None => problems.push(format!(
                    "{at}: document `{}` is not in the corpus",
                    c.chunk.span.doc
                )),
                Some(doc) => {
                    if let Err(m) = c.check_text(Some(doc)) {
                        problems.push(format!("{at}: {m}"));
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "{} context{} of `{}` disagree with the corpus:\n{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            answers.path(),
            problems.join("\n")
        );
    }
    Ok(())
}

/// Means per difficulty label of the headline answer metrics present (and of the first
/// retrieval metric), in percent.
fn by_difficulty(card: &RunResult) -> String {
    let Some(groups) = &card.by_difficulty else {
        return String::new();
    };
    let answer_cols = [
        "bleu",
        "rouge_l",
        "token_f1",
        "exact_match",
        "answer_similarity",
    ];
    // The first retrieval metric, when retrieval is measured.
    let mut cols: Vec<&str> = card
        .metrics
        .names()
        .take(1)
        .filter(|n| !answer_cols.contains(n))
        .collect();
    cols.extend(
        answer_cols
            .into_iter()
            .chain(REGISTRY.iter().filter(|m| m.is_judged()).map(|m| m.name))
            .filter(|n| card.metrics.get(n).is_some()),
    );
    let label_w = groups.keys().map(String::len).max().unwrap_or(10).max(10);
    let col_w = cols.iter().map(|c| c.len()).max().unwrap_or(8).max(8);
    let mut s = format!(
        "\nby difficulty (mean, %)\n{:<label_w$}  {:>7}",
        "difficulty", "queries"
    );
    for c in &cols {
        s.push_str(&format!("  {c:>col_w$}"));
    }
    s.push('\n');
    for (label, g) in groups {
        s.push_str(&format!("{label:<label_w$}  {:>7}", g.queries));
        for c in &cols {
            s.push_str(&format!(
                "  {:>col_w$.1}",
                g.metrics.get(c).unwrap_or(0.0) * 100.0
            ));
        }
        s.push('\n');
    }
    s
}
