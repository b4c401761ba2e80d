//! `rag-eval score --conversations FILE`: the tool calls of each conversation against its
//! reference calls (the agent metrics of `metrics::tool_calls`), and with a corpus and a judge
//! each retrieving turn's retrieval, answer figures and judgements and the judges of the whole
//! conversation ([`Scorer`]).

use super::ScoreArgs;
use crate::cli::answering::client;
use crate::cli::judging::{JudgeArgs, Judging};
use crate::cli::output::Output;
use crate::cli::{with_cache, TimeoutArgs};
use crate::components::Context;
use crate::conversation::score::{self as conv, Scorer};
use crate::conversation::{Conversation, Format, Reader};
use crate::corpus::Corpus;
use crate::judge::{
    GoalAccuracy, JudgeSummary, KnowledgeRetention, QueryJudgement, TopicAdherence, TopicMode,
};
use crate::metrics::registry::judge_names;
use crate::metrics::{QueryResult, RunResult, SpanMode};
use crate::runs::RunRecord;
use anyhow::{bail, Result};
use camino::Utf8Path;
use futures_util::stream::{self, StreamExt};
use serde::{Serialize, Serializer};
use std::sync::Arc;

/// The judges of the whole conversation `--judges` may name, besides the turns' judges
/// (`topic_adherence` reports its precision, recall and F1).
const CONVERSATION_JUDGES: [&str; 3] = ["goal_accuracy", "topic_adherence", "knowledge_retention"];

/// What `score --conversations --json` prints: the run's [`RunResult`] (`level`
/// `conversation`, `queries`, `metrics`, `std`, `per_query` with each conversation's `turns`,
/// and `k`/`mode` when a turn's retrieval was scored), with the file's format (not when the
/// conversations were played: `eval --rag … --conversations`), per figure in report order how
/// many conversations have none, and each judge's summary.
#[derive(Serialize)]
pub(in crate::cli) struct Card<'a> {
    #[serde(flatten)]
    pub result: &'a RunResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<&'static str>,
    #[serde(serialize_with = "in_report_order")]
    pub missing: &'a [(String, usize)],
    #[serde(skip_serializing_if = "<[JudgeSummary]>::is_empty")]
    pub judges: &'a [JudgeSummary],
}

/// `missing` as a JSON object whose keys keep `metrics`' order (a map would sort them).
fn in_report_order<S: Serializer>(m: &[(String, usize)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().map(|(n, c)| (n, c)))
}

fn format_name(f: Option<Format>) -> &'static str {
    match f {
        Some(Format::RagEval) | None => "rag-eval",
        Some(Format::Ragas) => "ragas",
        Some(Format::Deepeval) => "deepeval",
    }
}

pub(super) fn run(a: &ScoreArgs, path: &Utf8Path, out: &mut Output) -> Result<()> {
    let k = match a.k.as_slice() {
        [] => 5,
        [0] => bail!("-k must be at least 1"),
        [k] => *k,
        _ => bail!("with --conversations, give one -k (got {})", a.k.len()),
    };
    // The file is read (and its mistakes reported) before any server is asked.
    let bytes = std::fs::read(path).map_err(|e| crate::Error::io("read", path, e))?;
    let mut reader = Reader::new(bytes.as_slice(), path.to_owned());
    let conversations: Vec<Conversation> = reader.by_ref().collect::<Result<_, _>>()?;
    if conversations.is_empty() {
        bail!("`{path}` holds no conversation");
    }
    let format = format_name(reader.format());
    let corpus = a
        .corpus
        .as_ref()
        .map(|c| Corpus::from_folder(c, Some(&a.glob)))
        .transpose()?;
    let context = match &a.cache {
        None => Context::new(),
        Some(text) => with_cache(Context::new(), text)?,
    }
    .with_limit(a.timeout.limit());
    let setup = Setup {
        k,
        mode: a.mode,
        corpus: corpus.as_ref(),
        judge: &a.judge,
        api_key_env: &a.api_key_env,
        embedder: a.embedder.as_deref(),
        timeout: a.timeout,
    };
    let (scorer, mut judging) = scorer(&setup, &context)?;
    let Scored {
        result,
        missing,
        summaries,
    } = score_all(&scorer, judging.as_mut(), &conversations, &setup, path)?;
    if a.json {
        out.json_line(&Card {
            result: &result,
            format: Some(format),
            missing: &missing,
            judges: &summaries,
        })?;
    } else {
        out.text(&table(&result, format, &missing))?;
    }
    if let Some(cache) = context.cache() {
        note!("{}", cache.stats());
    }
    let mut record = RunRecord::new("score", path.as_str(), result);
    record.label.clone_from(&a.label);
    // The conversations are the ground truth: their bytes identify it.
    record.dataset.hash = Some(crate::digest::short_sha256(&bytes));
    record
        .config
        .extra
        .insert("conversations".into(), path.to_string());
    if let (Some(c), Some(p)) = (&corpus, &a.corpus) {
        record = record.with_corpus(c, Some(p.as_str()));
    }
    if let Some(j) = &judging {
        j.fill(&mut record, &summaries);
    }
    crate::cli::runs::record(out, a.no_record, &[record])?;
    close(judging.as_ref())
}

/// What a conversation run is scored with, from its command's flags.
pub(in crate::cli) struct Setup<'a> {
    pub k: usize,
    pub mode: SpanMode,
    /// Where the turns' contexts given as text are placed.
    pub corpus: Option<&'a Corpus>,
    pub judge: &'a JudgeArgs,
    pub api_key_env: &'a str,
    pub embedder: Option<&'a str>,
    pub timeout: TimeoutArgs,
}

/// The [`Scorer`] of `s`, with the judges of `--judges`/`--criteria` (and their [`Judging`],
/// for the summaries, the record and the gate) when a judge model is given.
pub(in crate::cli) fn scorer(s: &Setup, context: &Context) -> Result<(Scorer, Option<Judging>)> {
    let mut scorer = Scorer::new(s.k).with_mode(s.mode);
    if let Some(c) = s.corpus {
        scorer = scorer.with_corpus(Arc::new(c.clone()));
    }
    let judging = match &s.judge.judge_model {
        Some(model) => Some(judging(s, model, context)?),
        None => None,
    };
    if let Some(j) = &judging {
        for judge in j.judges() {
            // The built-in answer judges judge each turn; the conversation judges and the
            // criteria judges (never named as a built-in one) the whole transcript.
            scorer = if !judge_names().contains(&judge.name()) {
                scorer.with_conversation_judge(Arc::clone(judge))
            } else {
                scorer.with_turn_judge(Arc::clone(judge))
            };
        }
        scorer = scorer.with_judge_config(j.config().clone());
    }
    Ok((scorer, judging))
}

/// A scored conversation run.
pub(in crate::cli) struct Scored {
    /// The run, with `k` and `mode` when a turn's retrieval was scored.
    pub result: RunResult,
    /// [`conv::missing`]'s counts.
    pub missing: Vec<(String, usize)>,
    /// Each judge's summary.
    pub summaries: Vec<JudgeSummary>,
}

/// Every conversation of `path` scored.
pub(in crate::cli) fn score_all(
    scorer: &Scorer,
    judging: Option<&mut Judging>,
    conversations: &[Conversation],
    s: &Setup,
    path: &Utf8Path,
) -> Result<Scored> {
    let concurrency = scorer.judge_config().concurrency.max(1);
    let per_query: Vec<QueryResult> = crate::cli::runtime()?
        .block_on(
            stream::iter(conversations)
                .map(|c| scorer.score(c))
                .buffered(concurrency)
                .collect::<Vec<_>>(),
        )
        .into_iter()
        .collect::<Result<_, _>>()?;
    let retrieval_scored = per_query
        .iter()
        .flat_map(|q| &q.turns)
        .any(|t| t.truth.is_some() && t.contexts.is_some());
    let missing = conv::missing(&per_query);
    let mut result = conv::run_result(per_query);
    if retrieval_scored {
        result.k = Some(s.k);
        result.mode = Some(s.mode);
    }
    if let Some(what) = result.non_finite() {
        bail!("scoring `{path}`: {what}");
    }
    let summaries = match judging {
        Some(j) => summarise(j, &result),
        None => Vec::new(),
    };
    Ok(Scored {
        result,
        missing,
        summaries,
    })
}

/// The judges' closing lines, and the gate on their invalid shares.
pub(in crate::cli) fn close(judging: Option<&Judging>) -> Result<()> {
    if let Some(j) = judging {
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

/// The judges `--judges` and `--criteria` ask for: the turns' judges through the same
/// options as `score --answers`, and the conversation judges (`goal_accuracy`,
/// `topic_adherence`, `knowledge_retention`) beside them.
/// Without `--judges`, every turn judge and every conversation judge.
fn judging(a: &Setup, model: &str, context: &Context) -> Result<Judging> {
    let url = a
        .judge
        .judge_url
        .as_deref()
        .unwrap_or(crate::http::OPENAI_BASE_URL);
    let (llm, http) = client(
        model,
        url,
        a.api_key_env,
        context.cache(),
        a.timeout,
        a.judge.concurrency,
        true,
    )?;
    let embedder = a
        .embedder
        .map(|spec| crate::components::build_embedder(spec, context))
        .transpose()?;
    let named: Vec<&str> = a.judge.judges.iter().map(|n| n.trim()).collect();
    let whole: Vec<&str> = if named.is_empty() && a.judge.criteria.is_empty() {
        CONVERSATION_JUDGES.to_vec()
    } else {
        named
            .iter()
            .copied()
            .filter(|n| CONVERSATION_JUDGES.contains(n))
            .collect()
    };
    let mut turn_args = a.judge.clone();
    turn_args.judges = named
        .iter()
        .filter(|n| !CONVERSATION_JUDGES.contains(n))
        .map(|n| (*n).to_owned())
        .collect();
    // Only conversation judges named: no turn judge (an empty list would mean every one).
    let default = if named.is_empty() {
        crate::metrics::registry::default_judge_names()
    } else {
        Vec::new()
    };
    let mut j = Judging::new(
        &turn_args,
        model,
        Arc::clone(&llm),
        http,
        embedder,
        &default,
        "give --embedder SPEC",
    )
    .map_err(|e| {
        if e.to_string().starts_with("--judges: unknown judge") {
            anyhow::anyhow!("{e}, {}", CONVERSATION_JUDGES.join(", "))
        } else {
            e
        }
    })?;
    for name in whole {
        match name {
            "goal_accuracy" => j.push(Arc::new(GoalAccuracy::new(Arc::clone(&llm)))),
            "knowledge_retention" => j.push(Arc::new(KnowledgeRetention::new(Arc::clone(&llm)))),
            "topic_adherence" => {
                for mode in TopicMode::ALL {
                    j.push(Arc::new(TopicAdherence::new(Arc::clone(&llm), mode)));
                }
            }
            other => unreachable!("`{other}` is not a conversation judge"),
        }
    }
    Ok(j)
}

/// One summary per judge over every judgement it made in `result` (of turns and of whole
/// conversations), kept in `j` for the gate, the record and the closing lines.
fn summarise(j: &mut Judging, result: &RunResult) -> Vec<JudgeSummary> {
    let share = j.config().max_invalid_share;
    let names: Vec<String> = j.judges().iter().map(|j| j.name().to_owned()).collect();
    let mut summaries = Vec::new();
    for name in names {
        let judgements: Vec<QueryJudgement> = result
            .per_query
            .iter()
            .flat_map(|q| {
                q.judges
                    .iter()
                    .chain(q.turns.iter().flat_map(|t| &t.judges))
            })
            .filter(|judgement| judgement.metric == name)
            .cloned()
            .collect();
        summaries.push(JudgeSummary::new(&name, &judgements, share));
    }
    // The judges ran side by side: the run's HTTP retries are told once, on the first.
    if let Some(first) = summaries.first_mut() {
        first.retries = j.retries();
    }
    j.summaries.extend(summaries.iter().cloned());
    summaries
}

/// score's table with the number of conversations each mean is over and the number without
/// a figure: the agent metrics, then the turns' and the judges' figures.
fn table(result: &RunResult, format: &str, missing: &[(String, usize)]) -> String {
    let mut names: Vec<&str> = conv::AGENT_METRICS.to_vec();
    names.extend(
        result
            .metrics
            .names()
            .filter(|n| !conv::AGENT_METRICS.contains(n)),
    );
    let width = names.iter().map(|n| n.len()).max().unwrap_or(6);
    let n = result.queries;
    let mut s = format!(
        "conversations ({format}), {n} conversations\n{:<width$}  {:>8}  {:>8}  {:>5}  {:>7}\n",
        "metric", "mean", "std", "n", "missing"
    );
    for name in names {
        let without = missing
            .iter()
            .find(|(m, _)| m == name)
            .map_or(0, |(_, c)| *c);
        match (result.metrics.get(name), result.std.get(name)) {
            (Some(m), Some(sd)) => s.push_str(&format!(
                "{name:<width$}  {m:>8.4}  {sd:>8.4}  {:>5}  {without:>7}\n",
                n - without
            )),
            _ => s.push_str(&format!(
                "{name:<width$}  {:>8}  {:>8}  {:>5}  {without:>7}\n",
                "-", "-", 0
            )),
        }
    }
    s
}
