//! `rag-eval traces`: what OpenTelemetry trace files say, the mapping made visible.

use super::output::Output;
use crate::traces::{self, MappedTrace, Options, RetrievalRule};
use anyhow::Result;
use camino::Utf8PathBuf;
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub(super) enum TracesCommand {
    /// Print what was found in each trace of an OTLP JSON file (one export request a line) or
    /// OTLP protobuf file (`.pb`, or length-prefixed as the Collector writes it):
    /// the conventions, the question, the answer, the retrieved documents under the retrieval
    /// rule, every retriever and reranker span, the LLM messages, the tool calls and the
    /// session, in start order.
    Inspect(InspectArgs),
}

#[derive(Args)]
pub(super) struct InspectArgs {
    /// The OTLP JSON or protobuf file.
    #[arg(value_name = "FILE")]
    file: Utf8PathBuf,
    /// The span attribute holding the dataset row's id (e.g. `query.id`), shown per trace.
    #[arg(long, value_name = "KEY")]
    join_attribute: Option<String>,
    /// Which retriever spans give a trace's documents: `last` (the last retriever or reranker
    /// before the answering LLM span) or `all` (every retriever's, de-duplicated).
    #[arg(long, value_name = "RULE", default_value = "last")]
    retrievals: RetrievalRule,
    /// Print one JSON object per trace (JSONL) instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(c: TracesCommand, out: &mut Output) -> Result<()> {
    let TracesCommand::Inspect(a) = c;
    let options = Options {
        join_attribute: a.join_attribute,
        retrievals: a.retrievals,
    };
    let found = traces::read(&a.file, &options)?;
    if a.json {
        for t in &found {
            out.json_line(t)?;
        }
        return Ok(());
    }
    let mut text = String::new();
    for t in &found {
        text.push_str(&describe(t));
    }
    text.push_str(&format!(
        "{} trace{} in {}\n",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        a.file
    ));
    out.text(&text)?;
    Ok(())
}

fn clip(s: &str) -> String {
    let one_line = s.replace('\n', " ");
    let mut out: String = one_line.chars().take(100).collect();
    if out.len() < one_line.len() {
        out.push('…');
    }
    out
}

/// One trace as text, a field a line.
fn describe(t: &MappedTrace) -> String {
    let mut s = format!(
        "trace {} (line {}, {} span{}",
        t.trace_id,
        t.line,
        t.spans,
        if t.spans == 1 { "" } else { "s" }
    );
    let conventions: Vec<String> = t
        .conventions
        .iter()
        .map(|c| {
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    s.push_str(&match conventions.is_empty() {
        true => ", no known convention)\n".to_owned(),
        false => format!(", {})\n", conventions.join(", ")),
    });
    let mut field = |name: &str, v: Option<&str>| {
        if let Some(v) = v {
            s.push_str(&format!("  {name}: {}\n", clip(v)));
        }
    };
    field("root", t.root.as_deref());
    field("join", t.join_value.as_deref());
    field("session", t.session_id.as_deref());
    field("question", t.question.as_deref());
    field("answer", t.answer.as_deref());
    s.push_str(&format!("  documents: {}\n", t.documents.len()));
    for d in &t.documents {
        s.push_str(&format!(
            "    {}. {}{}{}\n",
            d.rank,
            d.id.as_deref()
                .map(|i| format!("[{i}] "))
                .unwrap_or_default(),
            d.score.map(|x| format!("({x}) ")).unwrap_or_default(),
            d.text
                .as_deref()
                .map(clip)
                .unwrap_or_else(|| "(no text)".to_owned())
        ));
    }
    for r in &t.retrievals {
        s.push_str(&format!(
            "  {} span `{}`: {} document{}{}\n",
            match r.kind {
                traces::SpanKind::Reranker => "reranker",
                _ => "retriever",
            },
            r.span,
            r.documents.len(),
            if r.documents.len() == 1 { "" } else { "s" },
            r.query
                .as_deref()
                .map(|q| format!(" for `{}`", clip(q)))
                .unwrap_or_default()
        ));
    }
    for m in &t.messages {
        s.push_str(&format!("  message {}: {}\n", m.role, clip(&m.content)));
    }
    for c in &t.tool_calls {
        s.push_str(&format!(
            "  tool call {}({}){}\n",
            c.call.name,
            clip(&serde_json::Value::Object(c.call.args.clone()).to_string()),
            c.result
                .as_deref()
                .map(|r| format!(" → {}", clip(r)))
                .unwrap_or_default()
        ));
    }
    for n in &t.notes {
        s.push_str(&format!("  note: {n}\n"));
    }
    s
}
