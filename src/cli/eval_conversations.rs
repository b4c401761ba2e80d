//! `rag-eval eval --rag SPEC --conversations FILE`: each conversation of the file played
//! through the RAG service in its conversation mode, and the transcripts scored.

use super::judging::JudgeArgs;
use super::output::Output;
use super::score::conversations::{close, score_all, scorer, Card, Scored, Setup};
use crate::components::Context;
use crate::conversation::play::play;
use crate::conversation::Reader;
use crate::corpus::Corpus;
use crate::metrics::SpanMode;
use crate::runs::RunRecord;
use crate::service::HttpRag;
use anyhow::{bail, Result};
use camino::Utf8Path;

/// What the command was asked.
pub(super) struct ConversationRun<'a> {
    pub spec: &'a str,
    pub path: &'a Utf8Path,
    pub corpus: Option<Corpus>,
    pub cache: Option<&'a str>,
    pub timeout: super::TimeoutArgs,
    pub max_steps: Option<usize>,
    pub k: usize,
    pub mode: SpanMode,
    pub judge: &'a JudgeArgs,
    pub api_key_env: &'a str,
    pub embedder: Option<&'a str>,
    pub json: bool,
    pub no_record: bool,
    pub label: Option<String>,
}

pub(super) fn run(r: ConversationRun, out: &mut Output) -> Result<()> {
    let mut rag = HttpRag::from_spec_within(r.spec, Some(r.timeout.limit()))?;
    // One cache for the service's answers and the judges'.
    let context = match r.cache {
        None => Context::new(),
        Some(text) => super::with_cache(Context::new(), text)?,
    }
    .with_limit(r.timeout.limit());
    if let Some(cache) = context.cache() {
        rag = rag.with_cache(std::sync::Arc::clone(cache));
    }
    // The transcripts are scored as `score --conversations` scores them.
    let setup = Setup {
        k: r.k,
        mode: r.mode,
        corpus: r.corpus.as_ref(),
        judge: r.judge,
        api_key_env: r.api_key_env,
        embedder: r.embedder,
        timeout: r.timeout,
    };
    let (scorer, mut judging) = scorer(&setup, &context)?;
    let file = std::fs::File::open(r.path).map_err(|e| crate::Error::io("read", r.path, e))?;
    let conversations = Reader::new(std::io::BufReader::new(file), r.path.to_owned())
        .collect::<Result<Vec<_>, _>>()?;
    if conversations.is_empty() {
        bail!("`{}` holds no conversation", r.path);
    }
    let runtime = super::runtime()?;
    let mut played = Vec::with_capacity(conversations.len());
    for c in &conversations {
        // The service's errors end the command; so does a conversation it cannot finish.
        let failure = std::cell::RefCell::new(None);
        let transcript = runtime.block_on(play(c, r.max_steps, |so_far| {
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
        played.push(transcript?);
    }
    let Scored {
        result,
        missing,
        summaries,
    } = score_all(&scorer, judging.as_mut(), &played, &setup, r.path)?;
    if r.json {
        out.json_line(&Card {
            result: &result,
            format: None,
            missing: &missing,
            judges: &summaries,
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
    if let Some(c) = &r.corpus {
        record = record.with_corpus(c, None);
    }
    if let Some(j) = &judging {
        j.fill(&mut record, &summaries);
    }
    super::runs::record(out, r.no_record, &[record])?;
    close(judging.as_ref())
}
