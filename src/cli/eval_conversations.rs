//! `rag-eval eval --rag SPEC --conversations FILE`: each conversation of the file played
//! through the RAG service in its conversation mode, and the transcripts scored.

use super::output::Output;
use crate::conversation::play::{agent_result, agent_run, play};
use crate::conversation::Reader;
use crate::corpus::Corpus;
use crate::runs::RunRecord;
use crate::service::HttpRag;
use anyhow::{bail, Result};
use camino::Utf8Path;
use serde::Serialize;

/// What the command was asked.
pub(super) struct ConversationRun<'a> {
    pub spec: &'a str,
    pub path: &'a Utf8Path,
    pub corpus: Option<Corpus>,
    pub cache: Option<&'a str>,
    pub timeout: super::TimeoutArgs,
    pub max_steps: Option<usize>,
    pub json: bool,
    pub no_record: bool,
    pub label: Option<String>,
}

/// What `--json` prints: the run (level `conversation`, one `per_query` entry per
/// conversation in file order, its transcript in `turns`) and, per metric in report order,
/// how many conversations had no figure.
#[derive(Serialize)]
struct Card<'a> {
    #[serde(flatten)]
    run: &'a crate::metrics::RunResult,
    #[serde(serialize_with = "in_order")]
    missing: Vec<(String, usize)>,
}

fn in_order<S: serde::Serializer>(m: &[(String, usize)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().map(|(k, v)| (k, v)))
}

pub(super) fn run(r: ConversationRun, out: &mut Output) -> Result<()> {
    let mut rag = HttpRag::from_spec_within(r.spec, Some(r.timeout.limit()))?;
    if let Some(text) = r.cache {
        let cache = crate::components::open_cache(text)?;
        if cache.mode() != crate::cache::CacheMode::Off {
            rag = rag.with_cache(std::sync::Arc::new(cache));
        }
    }
    let file = std::fs::File::open(r.path).map_err(|e| crate::Error::io("read", r.path, e))?;
    let conversations = Reader::new(std::io::BufReader::new(file), r.path.to_owned())
        .collect::<Result<Vec<_>, _>>()?;
    if conversations.is_empty() {
        bail!("`{}` holds no conversation", r.path);
    }
    let runtime = super::runtime()?;
    let mut per = Vec::with_capacity(conversations.len());
    for c in &conversations {
        // The service's errors end the command; so does a conversation it cannot finish.
        let failure = std::cell::RefCell::new(None);
        let played = runtime.block_on(play(c, r.max_steps, |so_far| {
            let (rag, corpus, failure) = (&rag, r.corpus.as_ref(), &failure);
            async move {
                // After a failure the service is asked nothing more.
                if failure.borrow().is_some() {
                    return crate::conversation::play::AssistantTurn::answer("");
                }
                match rag.next_turn(&c.id, &so_far, corpus).await {
                    Ok(turn) => turn,
                    Err(e) => {
                        failure.borrow_mut().get_or_insert(e);
                        // An answer ends the user turn; the error is raised below.
                        crate::conversation::play::AssistantTurn::answer("")
                    }
                }
            }
        }));
        if let Some(e) = failure.into_inner() {
            return Err(e.into());
        }
        per.push(agent_result(&played?));
    }
    let result = agent_run(per);
    let missing: Vec<(String, usize)> = crate::conversation::score::AGENT_METRICS
        .iter()
        .map(|m| {
            (
                m.to_string(),
                result
                    .per_query
                    .iter()
                    .filter(|q| q.metrics.get(m).is_none())
                    .count(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    if r.json {
        out.json_line(&Card {
            run: &result,
            missing,
        })?;
    } else {
        let counts: Vec<_> = result.metrics.names().map(|n| result.coverage(n)).collect();
        let mut text = format!(
            "conversations of {} through {}, {} conversations\n",
            r.path,
            rag.spec(),
            result.per_query.len()
        );
        text.push_str(&crate::eval::metric_table_counted(
            &result.metrics,
            &result.std,
            &counts,
        ));
        for (metric, n) in &missing {
            text.push_str(&format!(
                "{metric}: no figure for {n} conversations (nothing to compare)\n"
            ));
        }
        out.text(&text)?;
    }
    let mut record = RunRecord::new("eval", r.path.as_str(), result);
    record.label = r.label;
    record.config.extra.insert("rag".into(), rag.spec());
    super::runs::record(out, r.no_record, &[record])?;
    Ok(())
}
