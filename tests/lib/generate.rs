//! Synthetic dataset generation against a scripted model that replays realistic answers
//! (quotes copied exactly, re-wrapped, re-cased, slightly misquoted or paraphrased; made-up
//! chunk ids; broken JSON), over the bundled example corpus.

use crate::shared_data;

use rag_eval::chunk::ChunkId;
use rag_eval::chunker::{PositionAwareChunker, RecursiveCharacterChunker};
use rag_eval::corpus::{Corpus, Document};
use rag_eval::dataset::{Example, TokenDataset};
use rag_eval::level::{ChunkLevel, TokenLevel};
use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, Role, TokenUsage};
use rag_eval::synth::{
    parse_mix, ChunkLevelDataGenerator, Dropped, FewShot, GenerateConfig, Prompts,
    TokenLevelDataGenerator,
};
use serde_json::json;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

const CORPUS: &str = "examples/data/corpus";

/// A model that answers from queues: the first rule whose key occurs in the request (any
/// message) and that still has answers gives the next one. Every request is logged.
#[derive(Default)]
struct ScriptedLlm {
    rules: Mutex<Vec<(String, VecDeque<String>)>>,
    log: Mutex<Vec<ChatRequest>>,
}

impl ScriptedLlm {
    fn new() -> Arc<Self> {
        Arc::new(ScriptedLlm::default())
    }

    fn on(self: &Arc<Self>, key: &str, answers: &[&str]) -> Arc<Self> {
        self.rules.lock().unwrap().push((
            key.to_owned(),
            answers.iter().map(|a| (*a).to_owned()).collect(),
        ));
        self.clone()
    }

    fn requests(&self) -> Vec<ChatRequest> {
        self.log.lock().unwrap().clone()
    }

    fn assert_all_used(&self) {
        for (key, left) in self.rules.lock().unwrap().iter() {
            assert!(left.is_empty(), "unused answers for {key:?}: {left:?}");
        }
    }
}

#[async_trait::async_trait]
impl LlmClient for ScriptedLlm {
    fn name(&self) -> String {
        "scripted".into()
    }

    async fn complete(&self, request: &ChatRequest) -> rag_eval::Result<ChatResponse> {
        self.log.lock().unwrap().push(request.clone());
        let text: String = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let mut rules = self.rules.lock().unwrap();
        let answer = rules
            .iter_mut()
            .find(|(key, left)| text.contains(key.as_str()) && !left.is_empty())
            .and_then(|(_, left)| left.pop_front());
        let Some(content) = answer else {
            let last = &request.messages.last().unwrap().content;
            panic!("no scripted answer for a request ending {last:?}");
        };
        Ok(ChatResponse {
            usage: TokenUsage {
                prompt_tokens: text.len() as u64 / 4,
                completion_tokens: content.len() as u64 / 4,
            },
            content,
            finish_reason: Some("stop".into()),
            model: "scripted-1".into(),
            logprobs: None,
        })
    }
}

fn corpus() -> Corpus {
    Corpus::from_folder(CORPUS, None).expect("the bundled corpus loads")
}

fn answer(questions: serde_json::Value) -> String {
    json!({ "questions": questions }).to_string()
}

fn q(question: &str, excerpts: &[&str], difficulty: &str) -> serde_json::Value {
    json!({"question": question, "excerpts": excerpts, "difficulty": difficulty})
}

fn c(question: &str, ids: &[&str], difficulty: &str) -> serde_json::Value {
    json!({"question": question, "chunk_ids": ids, "difficulty": difficulty})
}

fn meta<'a, L: rag_eval::level::Level>(e: &'a Example<L>, key: &str) -> &'a serde_json::Value {
    e.metadata
        .get(key)
        .unwrap_or_else(|| panic!("{} has no `{key}`", e.id))
}

fn assert_valid(rows: &[Example<TokenLevel>], corpus: &Corpus) {
    let dataset = TokenDataset::new(rows.to_vec()).expect("unique ids");
    let problems = dataset.check_against(corpus);
    assert!(problems.is_empty(), "{problems:#?}");
    for e in rows {
        for t in &e.span_texts {
            assert!(t.is_some(), "{}: every span records its text", e.id);
        }
    }
}

/// Runs a generator over some documents as a caller would: ids continue across documents.
async fn run_token<C: LlmClient>(
    generator: &TokenLevelDataGenerator<C>,
    corpus: &Corpus,
    docs: &[&str],
) -> (Vec<Example<TokenLevel>>, Dropped, usize) {
    let (mut rows, mut dropped, mut calls) = (Vec::new(), Dropped::default(), 0);
    for id in docs {
        let doc = corpus.get(id).unwrap();
        let batch = generator
            .generate_document(corpus, doc, rows.len() + 1)
            .await
            .unwrap();
        assert_eq!(batch.doc_id.as_str(), *id);
        dropped += batch.dropped;
        calls += batch.calls;
        rows.extend(batch.examples);
    }
    (rows, dropped, calls)
}

#[test]
fn token_level_rows_are_located_in_the_corpus_and_every_drop_is_counted() {
    let corpus = corpus();
    let llm = ScriptedLlm::new()
        .on(
            "Document `overview.md`",
            &[&answer(json!([
                // Copied exactly.
                q("Which Larkspur version is the current release?",
                  &["The current release is Larkspur 3.4.1."], "factual"),
                // The document breaks the line after "ship"; the model joined it.
                q("What can teams do with a self-hosted feature flag service?",
                  &["Teams use it to ship code that is switched off, to turn a feature on for a small share of users first, and to change runtime settings without a redeploy"],
                  "analytical"),
                // Upper-cased and re-wrapped.
                q("Why does checking a flag keep working while the server is briefly unreachable?",
                  &["EVERY FLAG CHECK IS THEN ANSWERED FROM MEMORY INSIDE THE APPLICATION PROCESS"],
                  "inferential"),
                // A paraphrase, not a quote.
                q("How do SDKs make flag checks fast?",
                  &["SDKs keep a local copy of all rules so that checks never need the network."],
                  "paraphrased"),
                // Too short to be a useful ground truth.
                q("What is the current version?", &["Larkspur 3.4.1"], "factual"),
            ]))],
        )
        .on(
            "Document `architecture.md`",
            &[
                "Here are three questions about the architecture:\n1. On which port does the web console listen?",
                &answer(json!([
                    q("On which port does the web console listen?",
                      &["serves the REST API under `/api/v2` and the web console on port 7420"],
                      "factual"),
                    // Backticks dropped and the dash simplified: a fuzzy match.
                    q("How do the other replicas learn that a new rule set exists?",
                      &["Every replica learns about the new revision - through PostgreSQL LISTEN/NOTIFY, or directly in a single-node SQLite setup"],
                      "analytical"),
                    q("What happens to running applications if every Larkspur server goes down?",
                      &["a complete Larkspur outage does not stop applications: they keep evaluating with the last rule set they received"],
                      "inferential"),
                ])),
            ],
        )
        .on(
            "Document `changelog.md`",
            &[
                // Cut off by the token limit, then a refusal.
                r###"{"questions": [{"question": "When was 3.4.1 released?", "excerpts": ["## 3.4.1 — 2025-"###,
                "I'm sorry, but I can't produce that format.",
            ],
        )
        .on("Document `glossary.md`", &["", r#"{"questions": []}"#])
        .on(
            "Document `troubleshooting.md`",
            &[&format!(
                "```json\n{}\n```",
                answer(json!([
                    q("What should I do when SQLite reports \"database is locked\"?",
                      &["Either run a single replica or move to PostgreSQL."], "factual"),
                    q("What should I do when SQLite reports 'database is locked'?",
                      &["Running two server replicas on the same SQLite file is not supported and produces exactly this error."],
                      "factual"),
                    q("", &["The server logs to standard output in JSON."], "factual"),
                    q("Where are the logs?", &[], "factual"),
                    q("What is the yearly price of the commercial support plan?",
                      &["Larkspur Assist is a yearly support contract at €1,150 for ≤ 5 server nodes"],
                      "paraphrased"),
                ]))
            )],
        );
    let config = GenerateConfig::default();
    let generator = TokenLevelDataGenerator::new(llm.clone(), config.clone());
    let docs = [
        "overview.md",
        "architecture.md",
        "changelog.md",
        "glossary.md",
        "troubleshooting.md",
    ];
    let (mut rows, mut dropped, calls) = pollster::block_on(run_token(&generator, &corpus, &docs));
    llm.assert_all_used();
    assert_eq!(calls, 1 + 2 + 2 + 2 + 1, "one retry per unusable answer");
    assert_eq!(calls, llm.requests().len());
    assert_eq!(
        dropped,
        Dropped {
            unlocated: 1,
            too_short: 1,
            invalid_json: 1,
            empty: 3,
            ..Dropped::default()
        }
    );
    let ids: Vec<&str> = rows.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        ["q0001", "q0002", "q0003", "q0004", "q0005", "q0006", "q0007", "q0008", "q0009"]
    );
    assert_valid(&rows, &corpus);

    let by_query = |rows: &[Example<TokenLevel>], text: &str| -> Example<TokenLevel> {
        rows.iter()
            .find(|e| e.query.starts_with(text))
            .unwrap_or_else(|| panic!("no row for {text:?}"))
            .clone()
    };
    let overview = corpus.get("overview.md").unwrap();
    let release = by_query(&rows, "Which Larkspur version");
    let byte = overview
        .content()
        .find("The current release is Larkspur 3.4.1.")
        .unwrap();
    // The title line holds an em dash: char and byte offsets differ from there on.
    assert_eq!(byte - release.truth[0].start, 2);
    assert_eq!(release.truth[0].start, overview.byte_to_char(byte).unwrap());
    assert_eq!(meta(&release, "excerpt_match"), &json!(["exact"]));
    assert_eq!(meta(&release, "difficulty"), "factual");
    assert_eq!(meta(&release, "source_docs"), &json!(["overview.md"]));
    assert_eq!(meta(&release, "generation_model"), "scripted");
    assert_eq!(meta(&release, "prompt_version"), "2");

    let rewrapped = by_query(&rows, "What can teams do");
    assert_eq!(meta(&rewrapped, "excerpt_match"), &json!(["normalized"]));
    let text = rewrapped.span_texts[0].as_deref().unwrap();
    assert!(
        text.contains("ship\ncode"),
        "the recorded text is the corpus's own: {text:?}"
    );
    let recased = by_query(&rows, "Why does checking");
    assert_eq!(
        recased.span_texts[0].as_deref(),
        Some("Every flag check is then answered from memory inside the\napplication process")
    );
    let fuzzy = by_query(&rows, "How do the other replicas");
    assert_eq!(meta(&fuzzy, "excerpt_match"), &json!(["fuzzy"]));
    assert_eq!(
        fuzzy.span_texts[0].as_deref(),
        Some("Every replica learns about the new revision — through PostgreSQL `LISTEN/NOTIFY`, or directly in\n   a single-node SQLite setup")
    );
    // Multi-byte text before and inside the span: offsets are characters.
    let assist = by_query(&rows, "What is the yearly price");
    let doc = corpus.get("troubleshooting.md").unwrap();
    let byte = doc.content().find("Larkspur Assist is a yearly").unwrap();
    assert_eq!(assist.truth[0].start, doc.byte_to_char(byte).unwrap());
    assert_eq!(
        assist.span_texts[0].as_deref(),
        Some("Larkspur Assist is a yearly support contract at €1,150 for ≤ 5 server nodes")
    );

    // The corpus-wide filters: the second "database is locked" question is a near-duplicate.
    let mut mixed = rows.clone();
    let mut mixed_dropped = dropped;
    generator.finish(&mut rows, &mut dropped);
    assert_eq!(dropped.duplicate, 1);
    assert_eq!(rows.len(), 8);
    assert!(!rows
        .iter()
        .any(|e| e.query.contains("'database is locked'")));

    // A difficulty mix keeps the largest subset with those shares, chosen by the seed.
    let with_mix = TokenLevelDataGenerator::new(
        ScriptedLlm::new(),
        GenerateConfig {
            difficulty_mix: Some(parse_mix("factual=0.5,inferential=0.5").unwrap()),
            seed: 3,
            ..config
        },
    );
    with_mix.finish(&mut mixed, &mut mixed_dropped);
    assert_eq!((mixed_dropped.duplicate, mixed_dropped.over_mix), (1, 4));
    let count = |d: &str| mixed.iter().filter(|e| e.difficulty() == Some(d)).count();
    assert_eq!((count("factual"), count("inferential")), (2, 2));
    assert_eq!(mixed.len(), 4);
    assert_valid(&mixed, &corpus);
    assert_eq!(
        mixed_dropped.to_string(),
        "1 unlocated, 1 too short, 1 duplicate, 1 invalid JSON, 4 over mix, 3 empty"
    );
}

#[test]
fn requests_carry_the_prompts_schema_model_and_few_shot_examples() {
    let dir = tempfile::tempdir().unwrap();
    let prompt_path = dir.path().join("prompts.md");
    std::fs::write(
        &prompt_path,
        "version: 9\n=== token ===\nWrite {{questions}} questions; excerpts of {{min_chars}} to {{max_chars}} characters.\n{{examples}}\n",
    )
    .unwrap();
    let shots_path = dir.path().join("shots.jsonl");
    std::fs::write(
        &shots_path,
        r#"{"question":"Which port does the admin UI use?","excerpt":"The admin UI listens on port 9000.","difficulty":"factual"}"#,
    )
    .unwrap();
    let prompts = Prompts::from_file(prompt_path.to_str().unwrap()).unwrap();
    let few_shot = FewShot::load_jsonl(shots_path.to_str().unwrap()).unwrap();
    let llm = ScriptedLlm::new().on(
        "Document `guides/installation.md`",
        &[&answer(json!([q(
            "Which Linux kernel does Larkspur need at least?",
            &["A 64-bit Linux host (x86_64 or arm64) with kernel 4.18 or later."],
            "factual"
        )]))],
    );
    let corpus = corpus();
    let generator = TokenLevelDataGenerator::new(
        llm.clone(),
        GenerateConfig {
            queries_per_doc: 2,
            prompts,
            few_shot,
            model: Some("test-model".into()),
            temperature: Some(0.2),
            ..GenerateConfig::default()
        },
    );
    let (rows, dropped, _) =
        pollster::block_on(run_token(&generator, &corpus, &["guides/installation.md"]));
    llm.assert_all_used();
    assert_eq!(dropped, Dropped::default());
    assert_eq!(meta(&rows[0], "prompt_version"), "9");
    assert_eq!(meta(&rows[0], "generation_model"), "test-model");
    assert_valid(&rows, &corpus);

    let request = &llm.requests()[0];
    assert_eq!(request.model.as_deref(), Some("test-model"));
    assert_eq!(request.temperature, Some(0.2));
    let schema = request.json_schema.as_ref().expect("a JSON schema");
    assert_eq!(
        schema.schema["properties"]["questions"]["items"]["properties"]["difficulty"]["enum"],
        json!(["factual", "analytical", "inferential", "paraphrased"])
    );
    assert_eq!(request.messages[0].role, Role::System);
    assert_eq!(
        request.messages[0].content,
        "Write 2 questions; excerpts of 20 to 1000 characters.\n\
         Question: Which port does the admin UI use?\n\
         Excerpt: \"The admin UI listens on port 9000.\"\n\
         Difficulty: factual\n\n"
    );
    let user = &request.messages[1].content;
    let doc = corpus.get("guides/installation.md").unwrap();
    assert!(user.contains(doc.content()), "the whole document is shown");
    assert!(user.ends_with("Write 2 questions about this document."));

    // The built-in prompt explains the four difficulties and shows built-in examples.
    let builtin = Prompts::builtin().token.render::<&str>(&[]);
    for label in [
        "\"factual\"",
        "\"analytical\"",
        "\"inferential\"",
        "\"paraphrased\"",
    ] {
        assert!(builtin.contains(label), "{label}");
    }
}

#[test]
fn long_documents_are_read_in_windows_and_spans_map_back_to_the_document() {
    let base = corpus();
    let text: String = [
        "overview.md",
        "architecture.md",
        "troubleshooting.md",
        "changelog.md",
    ]
    .iter()
    .map(|id| base.get(id).unwrap().content())
    .collect::<Vec<_>>()
    .join("\n");
    let corpus = Corpus::new([Document::new("handbook.md", text)]).unwrap();
    let early = "The current release is Larkspur 3.4.1.";
    let middle = "It bypasses the API, so it works without any token.";
    let late = "Support for PostgreSQL 12. PostgreSQL 13 is now the oldest supported version.";
    let llm = ScriptedLlm::new()
        .on(
            early,
            &[&answer(json!([q(
                "Which release of Larkspur is current?",
                &[early],
                "factual"
            )]))],
        )
        .on(
            middle,
            &[&answer(json!([q(
                "Why does the local admin token command work without a token?",
                &[middle],
                "inferential"
            )]))],
        )
        .on(
            late,
            &[&answer(json!([q(
                "Which PostgreSQL version stopped being supported in 3.3.0?",
                &[late],
                "factual"
            )]))],
        );
    let generator = TokenLevelDataGenerator::new(
        llm.clone(),
        GenerateConfig {
            queries_per_doc: 3,
            ..GenerateConfig::default()
        },
    );
    let (rows, dropped, calls) =
        pollster::block_on(run_token(&generator, &corpus, &["handbook.md"]));
    llm.assert_all_used();
    assert_eq!((calls, dropped), (3, Dropped::default()));
    let doc = corpus.get("handbook.md").unwrap();
    for (row, quote) in rows.iter().zip([early, middle, late]) {
        let at = doc.byte_to_char(doc.content().find(quote).unwrap());
        assert_eq!(Some(row.truth[0].start), at, "{}", row.id);
        assert_eq!(row.span_texts[0].as_deref(), Some(quote));
    }
    assert!(rows[2].truth[0].start > 6000, "found in a later window");
    for r in llm.requests() {
        let heading = r.messages[1].content.lines().next().unwrap().to_owned();
        assert!(
            heading.starts_with("Document `handbook.md` (characters "),
            "{heading}"
        );
        let shown = r_len(&r);
        assert!(
            shown <= 6000,
            "a window holds at most window_chars: {shown}"
        );
    }
    assert_valid(&rows, &corpus);
}

/// Characters of the document shown in a request's user message.
fn r_len(r: &ChatRequest) -> usize {
    let u = &r.messages[1].content;
    let start = u.find("<document>\n").unwrap() + "<document>\n".len();
    let end = u.find("\n</document>").unwrap();
    u[start..end].chars().count()
}

#[test]
fn cross_document_questions_have_spans_in_both_documents() {
    let base = corpus();
    let corpus =
        Corpus::new(["overview.md", "changelog.md"].map(|id| base.get(id).unwrap().clone()))
            .unwrap();
    let llm = ScriptedLlm::new()
        .on(
            "about this document",
            &[&answer(json!([q(
                "On which port does the streaming protocol listen?",
                &["on port 7421 for the\nstreaming protocol that SDKs and relays use"],
                "factual"
            )]))],
        )
        .on(
            "need both documents",
            &[&answer(json!([q(
                "Which PostgreSQL versions can a highly available deployment of the current release use, and since when is 12 unsupported?",
                &[
                    "| Highly available | PostgreSQL 13 or newer | 2 or more |",
                    "Support for PostgreSQL 12. PostgreSQL 13 is now the oldest supported version.",
                ],
                "analytical"
            )]))],
        );
    let generator = TokenLevelDataGenerator::new(
        llm.clone(),
        GenerateConfig {
            queries_per_doc: 1,
            cross_document: true,
            seed: 11,
            ..GenerateConfig::default()
        },
    );
    let (rows, dropped, calls) =
        pollster::block_on(run_token(&generator, &corpus, &["overview.md"]));
    llm.assert_all_used();
    assert_eq!((calls, dropped, rows.len()), (2, Dropped::default(), 2));
    assert!(!rows[0].metadata.contains_key("cross_document"));
    let cross = &rows[1];
    assert_eq!(meta(cross, "cross_document"), &json!(true));
    assert_eq!(
        meta(cross, "source_docs"),
        &json!(["changelog.md", "overview.md"])
    );
    let docs: Vec<&str> = cross.truth.iter().map(|s| s.doc.as_str()).collect();
    assert_eq!(docs, ["changelog.md", "overview.md"], "sorted by document");
    let cross_request = &llm.requests()[1].messages[1].content;
    assert!(cross_request.contains("Document `overview.md`:"));
    assert!(cross_request.contains("Document `changelog.md`:"));
    assert_valid(&rows, &corpus);
}

#[test]
fn questions_the_model_answers_from_memory_are_dropped() {
    let corpus = corpus();
    let llm = ScriptedLlm::new()
        .on(
            "Document `overview.md`",
            &[&answer(json!([
                q("Under which licence is Larkspur published?",
                  &["Larkspur is open source under the Apache License 2.0"], "factual"),
                q("On which port do SDKs open their streams?",
                  &["on port 7421 for the\nstreaming protocol that SDKs and relays use"], "factual"),
                q("Which release of Larkspur is current?",
                  &["The current release is Larkspur 3.4.1."], "factual"),
            ]))],
        )
        // Confident and right: the question does not need the document.
        .on(
            "Under which licence is Larkspur published?",
            &[r#"{"answer": "Larkspur is open source under the Apache License 2.0.", "confidence": "high"}"#],
        )
        // Confident but a guess the excerpt does not support: kept.
        .on(
            "On which port do SDKs open their streams?",
            &[r#"{"answer": "Port 443, like most HTTPS services.", "confidence": "high"}"#],
        )
        .on(
            "Which release of Larkspur is current?",
            &[r#"{"answer": "unknown", "confidence": "low"}"#],
        );
    let generator = TokenLevelDataGenerator::new(
        llm.clone(),
        GenerateConfig {
            check_answerable: true,
            ..GenerateConfig::default()
        },
    );
    let (rows, dropped, calls) =
        pollster::block_on(run_token(&generator, &corpus, &["overview.md"]));
    llm.assert_all_used();
    assert_eq!(calls, 4);
    assert_eq!(
        dropped,
        Dropped {
            unanswerable: 1,
            ..Dropped::default()
        }
    );
    let ids: Vec<&str> = rows.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["q0001", "q0002"], "ids stay consecutive");
    assert!(rows[0].query.starts_with("On which port"));
    assert_eq!(meta(&rows[0], "answerable_prompt_version"), "1");
    let check = &llm.requests()[1];
    assert_eq!(
        check.messages[1].content,
        "Under which licence is Larkspur published?"
    );
    assert!(check.json_schema.is_some());
    assert_valid(&rows, &corpus);
}

/// The id of the chunk of `doc` that contains `phrase`.
fn chunk_with(chunker: &dyn PositionAwareChunker, doc: &Document, phrase: &str) -> String {
    chunker
        .chunk_with_positions(doc)
        .iter()
        .find(|c| c.content.contains(phrase))
        .map(|c| ChunkId::from_content(&c.content).to_string())
        .unwrap_or_else(|| panic!("no chunk of {} contains {phrase:?}", doc.id()))
}

#[test]
fn chunk_level_rows_cite_only_chunks_the_chunker_made() {
    let corpus = corpus();
    let chunker: Arc<dyn PositionAwareChunker> = Arc::new(RecursiveCharacterChunker::new(400, 0));
    let overview = corpus.get("overview.md").unwrap();
    let architecture = corpus.get("architecture.md").unwrap();
    let release = chunk_with(
        chunker.as_ref(),
        overview,
        "The current release is Larkspur 3.4.1.",
    );
    let ports = chunk_with(chunker.as_ref(), overview, "on port 7421 for the");
    let platforms = chunk_with(chunker.as_ref(), overview, "The server runs on Linux");
    assert_ne!(ports, platforms, "two different chunks");
    let leader = chunk_with(chunker.as_ref(), architecture, "advisory lock");
    let sizing = chunk_with(chunker.as_ref(), architecture, "12 KB per flag");
    let llm = ScriptedLlm::new()
        .on(
            "Chunks of document `overview.md`",
            &[&answer(json!([
                c(
                    "Which Larkspur version is the current release?",
                    &[&release],
                    "factual"
                ),
                // Brackets copied along with the id.
                c(
                    "Which ports does the server use, and on which systems does it run?",
                    &[&format!("[{ports}]"), &platforms],
                    "analytical"
                ),
                // One real id, one made up: the made-up one goes.
                c(
                    "What is the newest Larkspur release?",
                    &[&release, "chunk_deadbeef0000"],
                    "paraphrased"
                ),
                // Only made-up ids: the question goes.
                c(
                    "How many nodes does the free tier allow?",
                    &["chunk_0123456789ab"],
                    "factual"
                ),
                c("What is Larkspur?", &[], "factual"),
            ]))],
        )
        .on(
            "Chunks of document `architecture.md`",
            &[&format!(
                "```json\n{}\n```",
                answer(json!([
                    c("How is the scheduler leader chosen?", &[&leader], "factual"),
                    // The bare hexadecimal part of the id.
                    c(
                        "How much memory does a server need for 1,000 flags in 3 environments?",
                        &[sizing.strip_prefix("chunk_").unwrap()],
                        "inferential"
                    ),
                ]))
            )],
        )
        .on(
            "Chunks of document `glossary.md`",
            &["{\"questions\": [", "not json either"],
        );
    let generator =
        ChunkLevelDataGenerator::new(llm.clone(), chunker.clone(), GenerateConfig::default());
    let mut rows: Vec<Example<ChunkLevel>> = Vec::new();
    let mut dropped = Dropped::default();
    let mut calls = 0;
    for id in ["overview.md", "architecture.md", "glossary.md"] {
        let batch = pollster::block_on(generator.generate_document(
            &corpus,
            corpus.get(id).unwrap(),
            rows.len() + 1,
        ))
        .unwrap();
        dropped += batch.dropped;
        calls += batch.calls;
        rows.extend(batch.examples);
    }
    llm.assert_all_used();
    assert_eq!(calls, 1 + 1 + 2);
    assert_eq!(
        dropped,
        Dropped {
            unlocated: 1,
            invalid_json: 1,
            unknown_chunk_ids: 2,
            empty: 1,
            ..Dropped::default()
        }
    );
    assert_eq!(rows.len(), 5);
    let made: HashSet<ChunkId> = chunker
        .chunk_corpus(&corpus)
        .iter()
        .map(|c| ChunkId::from_content(&c.content))
        .collect();
    for e in &rows {
        assert!(!e.truth.is_empty());
        for id in &e.truth {
            assert!(made.contains(id), "{}: {id} is not a chunk", e.id);
        }
        assert_eq!(meta(e, "chunker"), &json!(chunker.name()));
        assert_eq!(meta(e, "prompt_version"), "2");
    }
    let truth = |i: usize| -> Vec<&str> { rows[i].truth.iter().map(ChunkId::as_str).collect() };
    assert_eq!(truth(0), [release.as_str()]);
    assert_eq!(truth(1), [ports.as_str(), platforms.as_str()]);
    assert_eq!(truth(2), [release.as_str()]);
    assert_eq!(truth(4), [sizing.as_str()]);
    assert_eq!(meta(&rows[3], "source_docs"), &json!(["architecture.md"]));

    // Every chunk of the document was shown with its id.
    let first = &llm.requests()[0].messages[1].content;
    for chunk in chunker.chunk_with_positions(overview) {
        let id = ChunkId::from_content(&chunk.content);
        assert!(first.contains(&format!("[{id}]\n{}", chunk.content)));
    }

    // Rows serialise as chunk-level dataset lines that load back.
    let text: String = rows
        .iter()
        .map(|e| rag_eval::dataset::ToRow::to_row(e) + "\n")
        .collect();
    let rag_eval::dataset::AnyDataset::Chunk(back) =
        rag_eval::dataset::parse(&text, "gen.jsonl").unwrap()
    else {
        panic!("chunk level")
    };
    assert_eq!(back.examples(), rows.as_slice());
}

/// The references of the chunking-eval-general benchmark are excerpts a model quoted from five
/// real corpora (chat logs, finance filings, PubMed abstracts, a speech, Wikipedia): each is
/// found verbatim at its recorded offset or at an earlier identical copy; re-cased and re-wrapped
/// with straight quotes it is found at the same span; with a few characters changed it is found
/// fuzzily around the same span; with its words in reverse order it is not found at all. The
/// time the searches took is printed.
#[test]
#[ignore = "needs ../shared/data"]
fn benchmark_references_are_located_at_their_recorded_offsets() {
    use rag_eval::locate::{normalize, Locator, MatchKind};
    use std::collections::HashMap;
    let dir = shared_data::chunking_eval_general();
    let docs: HashMap<&str, Document> = [
        "chatlogs",
        "finance",
        "pubmed",
        "state_of_the_union",
        "wikitexts",
    ]
    .into_iter()
    .map(|c| {
        let text = std::fs::read_to_string(dir.join(format!("corpora/{c}.md"))).unwrap();
        (c, Document::new(c, text))
    })
    .collect();
    let locators: HashMap<&str, Locator<'_>> = docs
        .iter()
        .map(|(c, d)| (*c, Locator::new(d.content())))
        .collect();
    #[derive(serde::Deserialize)]
    struct Reference {
        content: String,
        start_index: usize,
        end_index: usize,
    }
    let mut reader = csv::Reader::from_path(dir.join("questions_df.csv")).unwrap();
    let (mut spent, mut calls) = (std::time::Duration::ZERO, 0);
    let (mut references, mut fuzzy_checked, mut reworded) = (0, 0, 0);
    let (mut questions, mut taken_for_quotes) = (0, 0);
    for row in reader.records() {
        let row = row.unwrap();
        let (question, refs, corpus) = (&row[0], &row[1], &row[2]);
        let doc = &docs[corpus];
        let slice = |a: usize, b: usize| doc.slice(a, b).unwrap().to_owned();
        let mut find = |s: &str| {
            let t = std::time::Instant::now();
            let hit = locators[corpus].locate(s, 0.9);
            spent += t.elapsed();
            calls += 1;
            hit
        };
        questions += 1;
        if let Some(hit) = find(question) {
            // The finance corpus quotes the questions of its source dataset, some in nearly
            // the same words ("what is the ratio …" for "what was the ratio …"); no other
            // corpus holds questions like these.
            let found = slice(hit.start, hit.end);
            assert_eq!(corpus, "finance", "{question:?} matched {found:?}");
            taken_for_quotes += 1;
        }
        let refs: Vec<Reference> = serde_json::from_str(refs).unwrap();
        for r in refs {
            references += 1;
            assert_eq!(r.end_index - r.start_index, r.content.chars().count());
            let want = r.content.trim();
            let lead = r.content.chars().take_while(|c| c.is_whitespace()).count();
            let expected = (
                r.start_index + lead,
                r.start_index + lead + want.chars().count(),
            );
            let hit = find(&r.content).unwrap();
            assert_eq!(hit.kind, MatchKind::Exact);
            assert!(hit.start <= expected.0, "{hit:?} after {expected:?}");
            assert_eq!(slice(hit.start, hit.end), want);

            // As a model re-typing it: straight quotes, lower case, one line.
            let retyped: String = want
                .replace(['\u{2019}', '\u{2018}'], "'")
                .replace(['\u{201c}', '\u{201d}'], "\"")
                .to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let hit = find(&retyped).unwrap();
            assert_ne!(hit.kind, MatchKind::Fuzzy);
            assert_eq!(
                normalize(&slice(hit.start, hit.end)).0,
                normalize(&retyped).0
            );
            assert!(hit.start < expected.0 || (hit.start, hit.end) == expected);

            // The same words in reverse order: a rewording, not a quote.
            let words: Vec<&str> = want.split_whitespace().collect();
            if words.len() >= 8 {
                reworded += 1;
                let reversed: Vec<&str> = words.iter().rev().copied().collect();
                let hit = find(&reversed.join(" "));
                assert_eq!(hit, None, "{want:?}");
            }

            // A few characters changed (one in 40).
            if want.chars().count() >= 40 {
                fuzzy_checked += 1;
                let misquoted: String = want
                    .chars()
                    .enumerate()
                    .map(|(i, c)| if i % 40 == 17 { '#' } else { c })
                    .collect();
                let hit = find(&misquoted).unwrap_or_else(|| panic!("{misquoted:?} not found"));
                let overlap = hit
                    .end
                    .min(expected.1)
                    .saturating_sub(hit.start.max(expected.0));
                let len = expected.1 - expected.0;
                assert!(overlap * 10 >= len * 9, "{hit:?} vs {expected:?}");
            }
        }
    }
    assert_eq!((questions, references), (472, 790));
    assert!(
        fuzzy_checked > 700 && reworded > 700,
        "{fuzzy_checked} {reworded}"
    );
    eprintln!(
        "{references} references located; {fuzzy_checked} misquoted ones located fuzzily; \
         {reworded} reworded ones not located; {taken_for_quotes} of {questions} questions \
         occur in their corpus; {calls} searches in {spent:.2?}"
    );
}

/// The generators are shared between tasks of a multi-threaded runtime (the command-line tool
/// works on several documents at once): the rows do not depend on the order the documents
/// finish in.
#[test]
fn documents_can_be_generated_concurrently() {
    let corpus = Arc::new(corpus());
    let docs = ["overview.md", "architecture.md", "glossary.md"];
    let quotes = [
        "The current release is Larkspur 3.4.1.",
        "All replicas run all five parts.",
        "Terms used throughout the Larkspur documentation, in alphabetical order.",
    ];
    let script = || {
        let llm = ScriptedLlm::new();
        for (doc, quote) in docs.iter().zip(quotes) {
            llm.on(
                &format!("Document `{doc}`"),
                &[&answer(json!([q(
                    &format!("What does {doc} say first?"),
                    &[quote],
                    "factual"
                )]))],
            );
            llm.on(
                &format!("Chunks of document `{doc}`"),
                &[&answer(json!([c(
                    &format!("What does {doc} say first?"),
                    &[],
                    "factual"
                )]))],
            );
        }
        llm
    };
    let sequential = {
        let generator = TokenLevelDataGenerator::new(script(), GenerateConfig::default());
        pollster::block_on(run_token(&generator, &corpus, &docs)).0
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let token = Arc::new(TokenLevelDataGenerator::new(
        script(),
        GenerateConfig::default(),
    ));
    let chunker: Arc<dyn PositionAwareChunker> = Arc::new(RecursiveCharacterChunker::new(400, 0));
    let chunk = Arc::new(ChunkLevelDataGenerator::new(
        script(),
        chunker,
        GenerateConfig::default(),
    ));
    let mut concurrent: Vec<Example<TokenLevel>> = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, id) in docs.iter().enumerate() {
            let (token, chunk, corpus) = (token.clone(), chunk.clone(), corpus.clone());
            let id = id.to_string();
            tasks.spawn(async move {
                let doc = corpus.get(&id).unwrap();
                let rows = token.generate_document(&corpus, doc, i + 1).await.unwrap();
                let chunks = chunk.generate_document(&corpus, doc, i + 1).await.unwrap();
                assert_eq!(chunks.dropped.empty, 1, "{id}");
                rows.examples
            });
        }
        let mut all = Vec::new();
        while let Some(rows) = tasks.join_next().await {
            all.extend(rows.unwrap());
        }
        all
    });
    concurrent.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(concurrent.len(), 3);
    assert_eq!(concurrent, sequential);
}

#[test]
fn blank_documents_cost_no_call() {
    let corpus = Corpus::new([
        Document::new("blank.md", " \n\n "),
        Document::new("x.md", ""),
    ])
    .unwrap();
    let llm = ScriptedLlm::new();
    let chunker: Arc<dyn PositionAwareChunker> = Arc::new(RecursiveCharacterChunker::new(400, 0));
    let config = GenerateConfig {
        cross_document: true,
        ..GenerateConfig::default()
    };
    let token = TokenLevelDataGenerator::new(llm.clone(), config.clone());
    let chunk = ChunkLevelDataGenerator::new(llm.clone(), chunker, config);
    for doc in corpus.documents() {
        let t = pollster::block_on(token.generate_document(&corpus, doc, 1)).unwrap();
        let c = pollster::block_on(chunk.generate_document(&corpus, doc, 1)).unwrap();
        assert_eq!(
            (t.calls, t.examples.len(), c.calls, c.examples.len()),
            (0, 0, 0, 0)
        );
    }
    assert!(llm.requests().is_empty());
}

#[test]
fn short_answers_become_reference_answers_and_rows_without_one_are_kept() {
    let excerpt = "A 64-bit Linux host (x86_64 or arm64) with kernel 4.18 or later.";
    let with = |question: &str, answer: serde_json::Value| {
        let mut v = q(question, &[excerpt], "factual");
        if !answer.is_null() {
            v["answer"] = answer;
        }
        v
    };
    let llm = ScriptedLlm::new().on(
        "Document `guides/installation.md`",
        &[&answer(json!([
            with(
                "Which kernel does Larkspur need?",
                json!("  Kernel 4.18 or later. ")
            ),
            with("Which host does Larkspur run on?", json!("")),
            with("What does Larkspur run on?", serde_json::Value::Null),
            with("Which Linux version is the minimum?", json!(42)),
        ]))],
    );
    let corpus = corpus();
    let generator = TokenLevelDataGenerator::new(
        llm.clone(),
        GenerateConfig {
            dedup_threshold: None,
            ..GenerateConfig::default()
        },
    );
    let (rows, dropped, _) =
        pollster::block_on(run_token(&generator, &corpus, &["guides/installation.md"]));
    llm.assert_all_used();
    assert_eq!(
        dropped,
        Dropped::default(),
        "no question is dropped for its answer"
    );
    let refs: Vec<Option<&str>> = rows.iter().map(|e| e.reference_answer()).collect();
    assert_eq!(refs, [Some("Kernel 4.18 or later."), None, None, None]);
    assert_valid(&rows, &corpus);
    // The schema asks for the answer, and the written row carries it under `outputs`.
    let schema = llm.requests()[0].json_schema.clone().unwrap().schema;
    let item = &schema["properties"]["questions"]["items"];
    assert_eq!(item["properties"]["answer"]["type"], "string");
    assert!(item["required"]
        .as_array()
        .unwrap()
        .contains(&json!("answer")));
    use rag_eval::dataset::ToRow;
    let row: serde_json::Value = serde_json::from_str(&rows[0].to_row()).unwrap();
    assert_eq!(row["outputs"]["reference_answer"], "Kernel 4.18 or later.");
    let row: serde_json::Value = serde_json::from_str(&rows[1].to_row()).unwrap();
    assert!(row["outputs"].get("reference_answer").is_none());
    // The built-in prompt and examples show the answer field.
    let builtin = Prompts::builtin();
    assert!(builtin.token.template.contains("\"answer\""));
    assert!(builtin.chunk.template.contains("\"answer\""));
    assert!(builtin
        .token
        .render(&[("examples", String::new())])
        .contains("- \"answer\""));
}
