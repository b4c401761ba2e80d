//! `synth::run::GenerationRun`, the resumable generation loop, driven as a library user
//! would: a model that quotes each document's first sentence, a stop signal given from the
//! progress callback, a failing document, and continuations of the same output. No async
//! runtime beyond `pollster`: the run needs none.

use camino::{Utf8Path, Utf8PathBuf};
use rag_eval::corpus::{Corpus, Document};
use rag_eval::dataset::{self, AnyDataset};
use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
use rag_eval::synth::resume::{DocRecord, ResumableOutput, Resumed, RunHeader};
use rag_eval::synth::run::{GenerationRun, Progress, RunEnd, StopSignal};
use rag_eval::synth::{GenerateConfig, TokenLevelDataGenerator};
use rag_eval::Error;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const DOCS: usize = 6;

fn corpus() -> Corpus {
    Corpus::new((0..DOCS).map(|i| {
        Document::new(
            format!("d{i}.md"),
            format!("Fact number {i} is that the sky has {i} colours. Nothing else is said here."),
        )
    }))
    .unwrap()
}

/// Answers every request with one question quoting the first sentence of the document it
/// shows; fails for the document named in `fail` (as a server's 500 after retries would).
struct QuotingLlm {
    corpus: Corpus,
    fail: Option<String>,
    calls: AtomicUsize,
    asked: Mutex<Vec<String>>,
}

impl QuotingLlm {
    fn new(fail: Option<&str>) -> Arc<Self> {
        Arc::new(QuotingLlm {
            corpus: corpus(),
            fail: fail.map(str::to_owned),
            calls: AtomicUsize::new(0),
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait::async_trait]
impl LlmClient for QuotingLlm {
    fn name(&self) -> String {
        "quoting".into()
    }

    async fn complete(&self, request: &ChatRequest) -> rag_eval::Result<ChatResponse> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let text = &request.messages.last().unwrap().content;
        let doc = self
            .corpus
            .documents()
            .iter()
            .find(|d| text.contains(&format!("Document `{}`", d.id())))
            .expect("every request shows a document");
        self.asked.lock().unwrap().push(doc.id().to_string());
        if self.fail.as_deref() == Some(doc.id().as_str()) {
            return Err(Error::Http {
                endpoint: "POST http://model/v1/chat/completions".into(),
                status: Some(500),
                message: "model crashed".into(),
            });
        }
        let first = doc.content().split_inclusive(". ").next().unwrap().trim();
        let content = json!({"questions": [{
            "question": format!("What is said first in {}?", doc.id()),
            "excerpts": [first],
            "difficulty": "factual"
        }]})
        .to_string();
        Ok(ChatResponse {
            usage: TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
            },
            content,
            finish_reason: Some("stop".into()),
            model: "quoting-1".into(),
            logprobs: None,
        })
    }
}

fn generator(llm: Arc<QuotingLlm>) -> TokenLevelDataGenerator<Arc<QuotingLlm>> {
    TokenLevelDataGenerator::new(
        llm,
        GenerateConfig {
            queries_per_doc: 1,
            ..GenerateConfig::default()
        },
    )
}

fn open(path: &Utf8Path) -> ResumableOutput {
    ResumableOutput::open(path.to_owned(), RunHeader::new("token").with("--seed", 0)).unwrap()
}

/// Records what the run reported, and gives the stop signal after `stop_after` documents.
#[derive(Default)]
struct Recorder {
    started: Vec<(usize, Resumed)>,
    documents: Vec<String>,
    ended: usize,
    stop_after: Option<(usize, StopSignal)>,
}

impl Progress for Recorder {
    fn started(&mut self, todo: usize, resumed: &Resumed, _output: &Utf8Path) {
        self.started.push((todo, resumed.clone()));
    }

    fn document(&mut self, record: &DocRecord) {
        self.documents.push(record.doc_id.to_string());
        if let Some((n, stop)) = &self.stop_after {
            if self.documents.len() == *n {
                stop.stop();
            }
        }
    }

    fn ended(&mut self) {
        self.ended += 1;
    }
}

fn rows(path: &Utf8Path) -> Vec<(String, String)> {
    let AnyDataset::Token(d) = dataset::load(path).unwrap() else {
        panic!("token level");
    };
    d.examples()
        .iter()
        .map(|e| (e.id.clone(), e.query.clone()))
        .collect()
}

fn temp() -> (tempfile::TempDir, Utf8PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = Utf8PathBuf::from_path_buf(dir.path().join("q.jsonl")).unwrap();
    (dir, path)
}

#[test]
fn a_whole_run_writes_every_document_and_reports_each_once() {
    let corpus = corpus();
    let (_dir, path) = temp();
    let mut out = open(&path);
    let mut progress = Recorder::default();
    let ended = pollster::block_on(
        GenerationRun::new(&generator(QuotingLlm::new(None)), &corpus)
            .concurrency(3)
            .run(&mut out, &StopSignal::new(), &mut progress),
    )
    .unwrap();
    assert_eq!(ended, RunEnd::Complete);
    assert_eq!(progress.started, vec![(DOCS, Resumed::default())]);
    let mut reported = progress.documents.clone();
    reported.sort();
    let all: Vec<String> = (0..DOCS).map(|i| format!("d{i}.md")).collect();
    assert_eq!(reported, all);
    assert_eq!(progress.ended, 1);
    assert!(out.finished().is_some(), "the corpus-wide filters ran");
    let rows = rows(&path);
    assert_eq!(rows.len(), DOCS);
    // After the filters, rows are in document order whatever the completion order was.
    let queries: Vec<String> = rows.iter().map(|r| r.1.clone()).collect();
    let expected: Vec<String> = all
        .iter()
        .map(|d| format!("What is said first in {d}?"))
        .collect();
    assert_eq!(queries, expected);
}

#[test]
fn a_stopped_run_ends_after_the_documents_in_flight_and_the_next_run_continues() {
    let corpus = corpus();
    let (_dir, path) = temp();
    let whole = {
        let (_d, p) = temp();
        let mut out = open(&p);
        pollster::block_on(
            GenerationRun::new(&generator(QuotingLlm::new(None)), &corpus).run(
                &mut out,
                &StopSignal::new(),
                &mut (),
            ),
        )
        .unwrap();
        rows(&p)
    };

    let stop = StopSignal::new();
    let mut progress = Recorder {
        stop_after: Some((2, stop.clone())),
        ..Recorder::default()
    };
    let first = QuotingLlm::new(None);
    let mut out = open(&path);
    let ended = pollster::block_on(GenerationRun::new(&generator(first.clone()), &corpus).run(
        &mut out,
        &stop,
        &mut progress,
    ))
    .unwrap();
    assert_eq!(ended, RunEnd::Interrupted);
    // One at a time: the signal given after the second document starts no third.
    assert_eq!(progress.documents, ["d0.md", "d1.md"]);
    assert_eq!(first.calls.load(Ordering::SeqCst), 2);
    assert_eq!(out.records().len(), 2);
    assert!(
        out.finished().is_none(),
        "no filters over a partial dataset"
    );
    assert_eq!(rows(&path).len(), 2);
    drop(out);

    let second = QuotingLlm::new(None);
    let mut out = open(&path);
    let mut progress = Recorder::default();
    let ended = pollster::block_on(GenerationRun::new(&generator(second.clone()), &corpus).run(
        &mut out,
        &StopSignal::new(),
        &mut progress,
    ))
    .unwrap();
    assert_eq!(ended, RunEnd::Complete);
    let (todo, resumed) = &progress.started[0];
    assert_eq!((*todo, resumed.documents, resumed.rows), (DOCS - 2, 2, 2));
    let mut asked = second.asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(
        asked,
        ["d2.md", "d3.md", "d4.md", "d5.md"],
        "done documents are not asked again"
    );
    assert_eq!(
        rows(&path),
        whole,
        "the same rows and ids as an uninterrupted run"
    );
}

#[test]
fn a_failing_document_stops_the_run_keeping_what_was_done() {
    let corpus = corpus();
    let (_dir, path) = temp();
    let mut out = open(&path);
    let llm = QuotingLlm::new(Some("d3.md"));
    let caller_stop = StopSignal::new();
    let e = pollster::block_on(GenerationRun::new(&generator(llm.clone()), &corpus).run(
        &mut out,
        &caller_stop,
        &mut (),
    ))
    .unwrap_err();
    let Error::GenerationStopped {
        ref doc,
        done,
        total,
        rows: kept,
        ref source,
        ..
    } = e
    else {
        panic!("{e}");
    };
    assert_eq!((doc.as_str(), done, total, kept), ("d3.md", 3, DOCS, 3));
    assert!(source.to_string().contains("model crashed"), "{source}");
    assert!(
        e.to_string()
            .starts_with("generation stopped with 3 of 6 documents done (3 rows kept in `"),
        "{e}"
    );
    assert!(
        !caller_stop.is_stopped(),
        "the caller's signal is left alone"
    );
    assert_eq!(rows(&path).len(), 3);
    assert_eq!(
        llm.calls.load(Ordering::SeqCst),
        4,
        "no document after the failing one"
    );
    drop(out);

    // Continuing with a model that works finishes the corpus.
    let mut out = open(&path);
    let ended = pollster::block_on(
        GenerationRun::new(&generator(QuotingLlm::new(None)), &corpus).run(
            &mut out,
            &StopSignal::new(),
            &mut (),
        ),
    )
    .unwrap();
    assert_eq!(ended, RunEnd::Complete);
    assert_eq!(rows(&path).len(), DOCS);
}

#[test]
fn an_output_from_a_larger_corpus_is_refused() {
    let (_dir, path) = temp();
    let mut out = open(&path);
    pollster::block_on(
        GenerationRun::new(&generator(QuotingLlm::new(None)), &corpus()).run(
            &mut out,
            &StopSignal::new(),
            &mut (),
        ),
    )
    .unwrap();
    drop(out);
    let smaller = Corpus::new(corpus().documents()[..2].to_vec()).unwrap();
    let mut out = open(&path);
    let e = pollster::block_on(
        GenerationRun::new(&generator(QuotingLlm::new(None)), &smaller).run(
            &mut out,
            &StopSignal::new(),
            &mut (),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("4 documents done by an earlier run into")
            && e.contains("are not in the corpus any more (d2.md, d3.md, d4.md, …)"),
        "{e}"
    );
}
