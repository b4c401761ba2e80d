//! `OnnxEmbedder` against vectors computed in Python with onnxruntime and tokenizers
//! (tests/fixtures/onnx/). The model tests need `ORT_DYLIB_PATH` and `RAG_EVAL_ONNX_MODEL_DIR`
//! (`. .ci/onnx.sh` sets both) and skip with a notice without them; the error tests need
//! neither.

use rag_eval::embed::{cosine, BatchingEmbedder, Embedder, OnnxConfig, OnnxEmbedder};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[derive(Deserialize)]
struct Reference {
    model_onnx_sha256: String,
    max_len: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    text: String,
    tokens: usize,
    tokens_untruncated: usize,
    vector: Vec<f32>,
}

fn reference() -> Reference {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/onnx/reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn case<'a>(reference: &'a Reference, name: &str) -> &'a Case {
    reference.cases.iter().find(|c| c.name == name).unwrap()
}

/// The model folder, when the runtime and the model are both configured.
fn model_dir() -> Option<PathBuf> {
    match (
        std::env::var_os("ORT_DYLIB_PATH"),
        std::env::var_os("RAG_EVAL_ONNX_MODEL_DIR"),
    ) {
        (Some(_), Some(dir)) => Some(PathBuf::from(dir)),
        _ => {
            eprintln!(
                "skipping: ORT_DYLIB_PATH and RAG_EVAL_ONNX_MODEL_DIR must both be set (`. .ci/onnx.sh` sets them)"
            );
            None
        }
    }
}

/// One embedder for the whole test binary: loading the model takes a while.
fn embedder() -> Option<&'static OnnxEmbedder> {
    static EMBEDDER: OnceLock<OnnxEmbedder> = OnceLock::new();
    let dir = model_dir()?;
    Some(EMBEDDER.get_or_init(|| OnnxEmbedder::from_dir(dir).unwrap()))
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn vectors_match_the_python_reference() {
    let Some(e) = embedder() else { return };
    let reference = reference();
    let model = model_dir().unwrap().join("model.onnx");
    let sha = rag_eval::digest::hex(&Sha256::digest(std::fs::read(&model).unwrap()));
    assert_eq!(
        sha,
        reference.model_onnx_sha256,
        "{} is not the model the reference was made with",
        model.display()
    );
    assert_eq!(e.max_len(), reference.max_len);
    assert_eq!(e.dimension(), 384);
    for c in &reference.cases {
        let got = e.embed_blocking(&[&c.text]).unwrap().remove(0);
        assert_eq!(got.len(), 384, "{}", c.name);
        let sim = cosine(&got, &c.vector);
        assert!(sim >= 0.9999, "{}: cosine {sim}", c.name);
        assert!((norm(&got) - 1.0).abs() < 1e-5, "{}", c.name);
        assert_eq!(e.token_count(&c.text).unwrap(), c.tokens, "{}", c.name);
    }
    // All four in one padded batch, through the async trait method.
    let texts: Vec<String> = reference.cases.iter().map(|c| c.text.clone()).collect();
    let batch = pollster::block_on(e.embed(&texts)).unwrap();
    for (c, got) in reference.cases.iter().zip(&batch) {
        let sim = cosine(got, &c.vector);
        assert!(sim >= 0.9999, "{} in a batch: cosine {sim}", c.name);
    }
}

#[test]
fn name_and_dimension_come_from_the_folder_and_the_model() {
    let Some(e) = embedder() else { return };
    let dir = model_dir().unwrap();
    let folder = dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(e.name(), format!("onnx(model={folder},max_len=256)"));
    assert_eq!(e.dimension(), 384);
    assert_eq!(e.batch_size(), 32);
}

#[test]
fn the_profile_counts_texts_tokens_and_padding_of_batches_sorted_by_length() {
    let Some(_) = embedder() else { return };
    let e =
        OnnxEmbedder::with_config(model_dir().unwrap(), OnnxConfig::new().batch_size(2)).unwrap();
    let texts = [
        "one",
        "a somewhat longer text than the others",
        "two words",
        "",
    ];
    let tokens: Vec<usize> = texts.iter().map(|t| e.token_count(t).unwrap()).collect();
    let before = e.profile();
    // Made and asked for tokens, but not yet for vectors: the model is not loaded.
    assert_eq!(before, rag_eval::embed::OnnxProfile::default());
    e.embed_blocking(&texts).unwrap();
    let p = e.profile().since(&before);
    assert_eq!((p.calls, p.texts, p.batches, p.sessions), (1, 4, 2, 1));
    assert!(p.load > std::time::Duration::ZERO);
    assert_eq!(p.tokens, tokens.iter().sum::<usize>() as u64);
    // Longest first: the two longest texts share a batch, the two shortest the other, each
    // padded to its own longest.
    let mut sorted = tokens.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(p.token_slots, (2 * sorted[0] + 2 * sorted[2]) as u64);
    assert!(p.inference > std::time::Duration::ZERO);
    assert_eq!(
        p.total(),
        p.load + p.tokenize + p.tensors + p.inference + p.pool,
        "{p}"
    );
    // Loaded once: the next call reuses the session.
    e.embed_blocking(&["one"]).unwrap();
    assert_eq!(e.profile().sessions, 1);
    // Batching wrappers send calls of 32 model batches, so that sorting has room to work.
    assert_eq!(e.preferred_batch_size(), Some(64));
    let wrapped = BatchingEmbedder::new(std::sync::Arc::new(e));
    assert_eq!(wrapped.batch_size(), 64);
}

#[test]
fn a_batch_gives_the_vectors_of_its_texts_embedded_one_by_one() {
    let Some(e) = embedder() else { return };
    // 45 texts of very different lengths: two batches of the default size, sorted by length,
    // so every vector must find its way back to its text.
    let texts: Vec<String> = (0..45)
        .map(|i| {
            let words = ["retrieval", "chunk", "overlap", "token", "recall", "index"];
            (0..(i * 7 % 60))
                .map(|j| words[(i + j) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
                + &format!(" number {i}")
        })
        .collect();
    let together = e.embed_blocking(&texts).unwrap();
    assert_eq!(together.len(), texts.len());
    for (text, v) in texts.iter().zip(&together) {
        let alone = e.embed_blocking(&[text]).unwrap().remove(0);
        assert!(max_abs_diff(v, &alone) < 1e-4, "{text:?}");
    }
    let small =
        OnnxEmbedder::with_config(model_dir().unwrap(), OnnxConfig::new().batch_size(4)).unwrap();
    assert_eq!(small.batch_size(), 4);
    let in_fours = small.embed_blocking(&texts).unwrap();
    for (a, b) in together.iter().zip(&in_fours) {
        assert!(max_abs_diff(a, b) < 1e-4);
    }
    assert!(e.embed_blocking::<&str>(&[]).unwrap().is_empty());
    assert!(pollster::block_on(e.embed(&[])).unwrap().is_empty());
}

/// `n` distinct questions of very different lengths (4 to 61 words).
fn questions(n: usize) -> Vec<String> {
    let words = [
        "which", "chunk", "holds", "the", "answer", "about", "overlap", "recall", "tokens",
        "größe", "naïve",
    ];
    (0..n)
        .map(|i| {
            let len = 3 + (i * 13) % 58;
            let q: Vec<&str> = (0..len).map(|j| words[(i + 3 * j) % words.len()]).collect();
            format!("{} {i}?", q.join(" "))
        })
        .collect()
}

/// Queries go to the model as documents do: one call, sorted by token length and cut into
/// batches of 32, instead of one model run per query; each gets the vector it gets alone
/// (padding changes the batch's shape, not what the mask lets through, so only float noise).
#[test]
fn queries_are_embedded_in_batches_with_the_vectors_they_get_one_at_a_time() {
    let Some(dir) = model_dir() else { return };
    // An embedder of its own: the profile must see this test's calls only.
    let e = OnnxEmbedder::from_dir(dir).unwrap();
    let queries = questions(45);
    let before = e.profile();
    let together = pollster::block_on(e.embed_queries(&queries)).unwrap();
    let p = e.profile().since(&before);
    assert_eq!((p.calls, p.texts, p.batches), (1, 45, 2), "{p}");
    assert_eq!(together.len(), queries.len());
    for (q, v) in queries.iter().zip(&together) {
        let alone = pollster::block_on(e.embed_query(q)).unwrap();
        assert!(max_abs_diff(v, &alone) < 1e-4, "{q:?}");
        assert!((norm(v) - 1.0).abs() < 1e-5, "{q:?}");
    }
    // One model run per query the other way.
    let p = e.profile().since(&before);
    assert_eq!((p.calls, p.batches), (46, 47), "{p}");
    assert!(pollster::block_on(e.embed_queries(&[])).unwrap().is_empty());
}

/// A dense pipeline over the ONNX embedder hands `retrieve_many`'s queries to the model in
/// batches, and every query finds the chunks it finds alone, with the same scores up to float
/// noise.
#[test]
fn a_pipeline_sends_its_queries_to_the_model_in_batches() {
    use rag_eval::chunker::RecursiveCharacterChunker;
    use rag_eval::prelude::{Corpus, Document, Pipeline, Retriever, TokenLevel};
    use std::sync::Arc;
    let Some(dir) = model_dir() else { return };
    let corpus = Arc::new(
        Corpus::new([
            Document::new(
                "pets.md",
                "Cats purr when they are content.\n\nDogs bark at strangers near the gate.\n\nGoldfish swim in small bowls.",
            ),
            Document::new(
                "rag.md",
                "A retriever finds chunks for a question.\n\nChunk overlap repeats text at the edges.\n\nRecall counts the relevant tokens found.",
            ),
        ])
        .unwrap(),
    );
    let mut queries = questions(39);
    queries.push(queries[7].clone());
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let pipeline = |e: &Arc<OnnxEmbedder>| {
        let p = Pipeline::new(RecursiveCharacterChunker::new(45, 0), Arc::clone(e));
        pollster::block_on(Retriever::<TokenLevel>::index(&p, &corpus)).unwrap();
        p
    };
    let batched = Arc::new(OnnxEmbedder::from_dir(&dir).unwrap());
    let p = pipeline(&batched);
    let before = batched.profile();
    let together =
        pollster::block_on(Retriever::<TokenLevel>::retrieve_many(&p, &queries, 3, 4)).unwrap();
    let used = batched.profile().since(&before);
    // 39 distinct queries (one repeats), in one call of two model batches.
    assert_eq!((used.calls, used.texts, used.batches), (1, 39, 2), "{used}");

    let single = Arc::new(OnnxEmbedder::from_dir(&dir).unwrap());
    let p = pipeline(&single);
    for (q, hits) in queries.iter().zip(&together) {
        let alone = pollster::block_on(Retriever::<TokenLevel>::retrieve(&p, q, 3)).unwrap();
        let ids = |h: &[rag_eval::chunk::RetrievedChunk]| -> Vec<_> {
            h.iter().map(|c| c.chunk.id.clone()).collect()
        };
        assert_eq!(ids(hits), ids(&alone), "{q:?}");
        for (a, b) in hits.iter().zip(&alone) {
            assert!((a.score - b.score).abs() < 1e-4, "{q:?}");
        }
    }
}

#[test]
fn long_texts_are_cut_at_256_tokens_not_at_the_tokenizer_files_128() {
    let Some(e) = embedder() else { return };
    let reference = reference();
    let long = case(&reference, "long");
    assert!(long.tokens_untruncated > 256, "the fixture must be long");
    assert_eq!(e.token_count(&long.text).unwrap(), 256);
    let base = e.embed_blocking(&[&long.text]).unwrap().remove(0);
    // Whatever follows the 256th token changes nothing.
    let longer = format!(
        "{} Completely different words about astronomy follow.",
        long.text
    );
    let after = e.embed_blocking(&[&longer]).unwrap().remove(0);
    assert!(max_abs_diff(&base, &after) < 1e-6);
    // At 128 tokens the vector is another one, so 256 really is what the model saw.
    let short =
        OnnxEmbedder::with_config(model_dir().unwrap(), OnnxConfig::new().max_len(128)).unwrap();
    assert_eq!(short.token_count(&long.text).unwrap(), 128);
    assert!(short.name().ends_with(",max_len=128)"), "{}", short.name());
    let cut = short.embed_blocking(&[&long.text]).unwrap().remove(0);
    assert!(cosine(&cut, &long.vector) < 0.9999);
}

#[test]
fn empty_and_unusual_unicode_texts_embed_to_unit_vectors() {
    let Some(e) = embedder() else { return };
    let reference = reference();
    let empty = case(&reference, "empty");
    assert_eq!(e.token_count("").unwrap(), 2, "[CLS] and [SEP] only");
    let v = pollster::block_on(e.embed_query("")).unwrap();
    assert!(cosine(&v, &empty.vector) >= 0.9999);
    let texts = [
        "🚀🔥🎉",
        "\u{0}\u{200b}\u{feff}",
        "   \n\t  ",
        "مرحبا بالعالم",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",
        "e\u{301}te\u{301}",
    ];
    for (text, v) in texts.iter().zip(e.embed_blocking(&texts).unwrap()) {
        assert_eq!(v.len(), 384);
        assert!(v.iter().all(|x| x.is_finite()), "{text:?}");
        assert!((norm(&v) - 1.0).abs() < 1e-5, "{text:?}");
    }
    let unicode = case(&reference, "unicode");
    assert!(!unicode.text.is_ascii());
    let v = e.embed_blocking(&[&unicode.text]).unwrap().remove(0);
    assert!(cosine(&v, &unicode.vector) >= 0.9999);
}

#[test]
fn inside_a_tokio_runtime_the_work_moves_to_the_blocking_pool_with_the_same_vectors() {
    let Some(e) = embedder() else { return };
    let texts = vec!["a cat sat on the mat".to_owned(), "dogs bark".to_owned()];
    let direct = e.embed_blocking(&texts).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (pooled, on_a_runtime_thread) = rt.block_on(async {
        let v = e.embed(&texts).await.unwrap();
        (v, tokio::runtime::Handle::try_current().is_ok())
    });
    assert!(on_a_runtime_thread);
    assert_eq!(pooled, direct);
    let related = cosine(
        &direct[0],
        &e.embed_blocking(&["a kitten on a rug"]).unwrap()[0],
    );
    let unrelated = cosine(&direct[0], &direct[1]);
    assert!(related > unrelated, "{related} vs {unrelated}");
}

#[test]
fn a_file_that_is_no_model_and_a_second_runtime_are_refused() {
    let Some(_) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.onnx"), b"not a model").unwrap();
    std::fs::copy(
        model_dir().unwrap().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let msg = OnnxEmbedder::from_dir(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("cannot load ONNX model `"), "{msg}");
    assert!(msg.contains("model.onnx`"), "{msg}");
    // The runtime is loaded by now; another library cannot join it.
    let other = dir.path().join("libother.so");
    std::fs::write(&other, b"").unwrap();
    let msg = OnnxEmbedder::with_config(dir.path(), OnnxConfig::new().runtime(&other))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("onnxruntime is already loaded from `"),
        "{msg}"
    );
    assert!(msg.contains("libother.so"), "{msg}");
}

/// A warm cache answers every call, so an embedder behind it never loads its model; the
/// vectors are those the model gave when the cache was filled.
#[cfg(feature = "cache")]
#[test]
fn behind_a_warm_cache_the_model_is_never_loaded() {
    use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
    use std::sync::Arc;
    let Some(dir) = model_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("c.sqlite");
    let path = path.to_str().unwrap();
    let docs: Vec<String> = ["a cat sat on the mat", "stocks fell sharply"]
        .map(String::from)
        .into();
    let queries: Vec<String> = ["where is the cat", "what did stocks do", "where is the cat"]
        .map(String::from)
        .into();

    let cold = CachedEmbedder::new(
        OnnxEmbedder::from_dir(&dir).unwrap(),
        Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap()),
    );
    let doc_vectors = pollster::block_on(cold.embed(&docs)).unwrap();
    let query_vectors = pollster::block_on(cold.embed_queries(&queries)).unwrap();
    assert_eq!(cold.inner().profile().sessions, 1);
    assert_eq!(query_vectors[0], query_vectors[2]);
    drop(cold);

    let onnx = OnnxEmbedder::from_dir(&dir).unwrap();
    let warm = CachedEmbedder::new(
        onnx,
        Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap()),
    );
    assert_eq!(pollster::block_on(warm.embed(&docs)).unwrap(), doc_vectors);
    assert_eq!(
        pollster::block_on(warm.embed_queries(&queries)).unwrap(),
        query_vectors
    );
    assert_eq!(
        pollster::block_on(warm.embed_query(&queries[1])).unwrap(),
        query_vectors[1]
    );
    assert_eq!(
        warm.inner().profile(),
        rag_eval::embed::OnnxProfile::default(),
        "no session, no call"
    );
    let s = warm.stats();
    assert_eq!((s.hits, s.misses), (6, 0));
    // The first text the cache lacks loads the model.
    pollster::block_on(warm.embed_query("something new")).unwrap();
    assert_eq!(warm.inner().profile().sessions, 1);
}

/// A `model.onnx` that onnxruntime refuses, in a folder whose `config.json` gives the vector
/// length: the embedder is made without loading it, and each call that needs it says which file
/// it could not load. A graph whose vectors differ from that length is refused too.
#[test]
fn a_bad_model_is_reported_with_its_path_by_the_first_call_that_needs_it() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.onnx"), b"not a model").unwrap();
    for f in ["tokenizer.json", "config.json"] {
        std::fs::copy(model.join(f), dir.path().join(f)).unwrap();
    }
    let e = OnnxEmbedder::from_dir(dir.path()).unwrap();
    assert_eq!(e.dimension(), 384);
    assert!(e.token_count("no model needed").unwrap() > 2);
    for _ in 0..2 {
        let msg = e
            .embed_blocking(&["needs the model"])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("cannot load ONNX model `"), "{msg}");
        assert!(
            msg.contains(&format!("{}", dir.path().join("model.onnx").display())),
            "{msg}"
        );
    }
    assert_eq!(e.profile().sessions, 0);

    // The real graph, but a config that promises another length.
    std::fs::remove_file(dir.path().join("model.onnx")).unwrap();
    std::fs::copy(model.join("model.onnx"), dir.path().join("model.onnx")).unwrap();
    let config = std::fs::read_to_string(model.join("config.json")).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&config).unwrap();
    config["hidden_size"] = serde_json::json!(100);
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let e = OnnxEmbedder::from_dir(dir.path()).unwrap();
    assert_eq!(e.dimension(), 100);
    let msg = e.embed_blocking(&["a cat"]).unwrap_err().to_string();
    assert!(
        msg.contains("gives vectors of 384 dimensions") && msg.contains("hidden_size 100"),
        "{msg}"
    );
    assert!(msg.contains("model.onnx`"), "{msg}");
}

/// A folder with the two files present, whatever they hold: enough to get to the runtime.
fn placeholder_model_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.onnx"), b"").unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), b"{}").unwrap();
    dir
}

#[test]
fn a_missing_model_folder_or_file_is_an_error_naming_it() {
    let msg = OnnxEmbedder::from_dir("models/none-such")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("`models/none-such`"), "{msg}");
    let dir = placeholder_model_dir();
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    let msg = OnnxEmbedder::from_dir(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("tokenizer.json`"), "{msg}");
    let dir = placeholder_model_dir();
    std::fs::remove_file(dir.path().join("model.onnx")).unwrap();
    let msg = OnnxEmbedder::from_dir(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("model.onnx`"), "{msg}");
}

#[test]
fn a_missing_runtime_library_is_an_error_naming_it_and_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    // A real tokenizer is needed to get past it; a minimal WordPiece one will do.
    write_tiny_tokenizer(dir.path());
    std::fs::write(dir.path().join("model.onnx"), b"").unwrap();
    let missing = dir.path().join("lib/libonnxruntime.so");
    let msg = OnnxEmbedder::with_config(dir.path(), OnnxConfig::new().runtime(&missing))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("lib/libonnxruntime.so`"), "{msg}");
    assert!(msg.contains("set ORT_DYLIB_PATH"), "{msg}");
}

/// Loading a file that is no shared library must fail before anything else has loaded
/// onnxruntime in the process, so it runs in a process of its own: the test binary again,
/// with only [`child_loads_the_library_named_by_ort_dylib_path`] selected.
#[test]
fn a_runtime_that_is_no_library_is_reported_with_where_its_path_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libonnxruntime.so.1.31.1");
    std::fs::write(&fake, b"not a shared library").unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "onnx::child_loads_the_library_named_by_ort_dylib_path",
            "--include-ignored",
            "--nocapture",
        ])
        .env("ORT_DYLIB_PATH", &fake)
        .env("RAG_EVAL_ONNX_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
#[ignore = "run in a process of its own by a_runtime_that_is_no_library_is_reported_with_where_its_path_came_from"]
fn child_loads_the_library_named_by_ort_dylib_path() {
    assert_eq!(std::env::var("RAG_EVAL_ONNX_CHILD").as_deref(), Ok("1"));
    let fake = PathBuf::from(std::env::var_os("ORT_DYLIB_PATH").unwrap());
    let dir = tempfile::tempdir().unwrap();
    write_tiny_tokenizer(dir.path());
    std::fs::write(dir.path().join("model.onnx"), b"").unwrap();
    let msg = OnnxEmbedder::from_dir(dir.path()).unwrap_err().to_string();
    assert!(
        msg.contains("cannot load onnxruntime (from ORT_DYLIB_PATH)"),
        "{msg}"
    );
    assert!(
        msg.contains(fake.file_name().unwrap().to_str().unwrap()),
        "{msg}"
    );
}

/// A WordPiece tokenizer with a four-word vocabulary, in tokenizer.json form.
fn write_tiny_tokenizer(dir: &Path) {
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                        "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "cat": 4}}
    });
    std::fs::write(dir.join("tokenizer.json"), json.to_string()).unwrap();
}

/// After a runtime is loaded, an embedder that names none (no `ORT_DYLIB_PATH`, no
/// `OnnxConfig::runtime`) uses it. The variable is removed in a process of its own:
/// [`child_reuses_the_loaded_runtime_when_none_is_named`].
#[test]
fn an_embedder_that_names_no_runtime_uses_the_loaded_one() {
    let Some(_) = model_dir() else { return };
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "onnx::child_reuses_the_loaded_runtime_when_none_is_named",
            "--include-ignored",
            "--nocapture",
        ])
        .env("RAG_EVAL_ONNX_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
#[ignore = "run in a process of its own by an_embedder_that_names_no_runtime_uses_the_loaded_one"]
fn child_reuses_the_loaded_runtime_when_none_is_named() {
    assert_eq!(std::env::var("RAG_EVAL_ONNX_CHILD").as_deref(), Ok("1"));
    let dir = model_dir().unwrap();
    let first = OnnxEmbedder::from_dir(&dir).unwrap();
    // Only this test runs in this process, so no other thread reads the environment.
    std::env::remove_var("ORT_DYLIB_PATH");
    let second = OnnxEmbedder::from_dir(&dir).unwrap();
    assert_eq!(
        first.embed_blocking(&["same runtime"]).unwrap(),
        second.embed_blocking(&["same runtime"]).unwrap()
    );
}
