use super::codec::{decode_vector, encode_vector};
use super::stats::grouped;
use super::store::{APPLICATION_ID, FORMAT};
use super::*;
use crate::embed::{Embedder, HashingEmbedder};
use crate::error::{Error, Result};
use crate::llm::TokenUsage;
use camino::{Utf8Path, Utf8PathBuf};
use pollster::block_on;
use proptest::prelude::*;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

fn temp_path(dir: &tempfile::TempDir, name: &str) -> Utf8PathBuf {
    Utf8PathBuf::from_path_buf(dir.path().join(name)).unwrap()
}

fn rw(path: &Utf8Path) -> Cache {
    Cache::open(path, CacheMode::ReadWrite).unwrap()
}

/// Records what it is asked; vectors are [length, first byte, +1 for documents or -1 for
/// queries].
#[derive(Default)]
struct Counting {
    calls: Mutex<Vec<Vec<String>>>,
    queries: Mutex<Vec<String>>,
    query_batches: Mutex<Vec<Vec<String>>>,
}

fn vector(text: &str, sign: f32) -> Vec<f32> {
    vec![
        text.len() as f32,
        text.bytes().next().map_or(0.0, f32::from),
        sign,
    ]
}

#[async_trait::async_trait]
impl Embedder for Counting {
    fn name(&self) -> String {
        "counting(dim=3)".into()
    }
    fn dimension(&self) -> usize {
        3
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.calls.lock().unwrap().push(texts.to_vec());
        Ok(texts.iter().map(|t| vector(t, 1.0)).collect())
    }
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.queries.lock().unwrap().push(query.to_owned());
        Ok(vector(query, -1.0))
    }
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.query_batches.lock().unwrap().push(queries.to_vec());
        Ok(queries.iter().map(|q| vector(q, -1.0)).collect())
    }
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| (*t).to_owned()).collect()
}

#[test]
fn modes_parse_from_their_names_and_the_environment_value() {
    for (text, mode) in [
        ("rw", CacheMode::ReadWrite),
        (" RW ", CacheMode::ReadWrite),
        ("", CacheMode::ReadWrite),
        ("off", CacheMode::Off),
        ("Replay", CacheMode::Replay),
    ] {
        assert_eq!(text.parse::<CacheMode>().unwrap(), mode, "{text:?}");
        assert_eq!(mode.to_string().parse::<CacheMode>().unwrap(), mode);
    }
    let err = "record".parse::<CacheMode>().unwrap_err().to_string();
    assert_eq!(
        err,
        "invalid configuration: unknown cache mode `record` (expected `rw`, `off` or `replay`)"
    );
    assert_eq!(CacheMode::from_var(None).unwrap(), CacheMode::ReadWrite);
    assert_eq!(
        CacheMode::from_var(Some("replay".into())).unwrap(),
        CacheMode::Replay
    );
    let err = CacheMode::from_var(Some("on".into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("RAG_EVAL_CACHE: ") && err.contains("`on`"),
        "{err}"
    );
}

#[test]
fn the_path_comes_from_the_environment_value_else_from_code() {
    let default = Utf8PathBuf::from("golden/cache.sqlite");
    let (path, mode) = Cache::settings(None, None, default.clone()).unwrap();
    assert_eq!(
        (path.as_str(), mode),
        ("golden/cache.sqlite", CacheMode::ReadWrite)
    );
    let (path, mode) = Cache::settings(
        Some("off".into()),
        Some("elsewhere/c.sqlite".into()),
        default.clone(),
    )
    .unwrap();
    assert_eq!(
        (path.as_str(), mode),
        ("elsewhere/c.sqlite", CacheMode::Off)
    );
    let (path, _) = Cache::settings(None, Some("".into()), default).unwrap();
    assert_eq!(path, "golden/cache.sqlite");
}

#[test]
fn keys_differ_when_any_part_differs_and_not_when_json_fields_are_reordered() {
    let params = json!({"dimension": 384, "normalize": true});
    let base = CacheKey::for_embedding("openai", "m", &params, "text").unwrap();
    let variants = [
        CacheKey::for_embedding("cohere", "m", &params, "text").unwrap(),
        CacheKey::for_embedding("openai", "m2", &params, "text").unwrap(),
        CacheKey::for_embedding(
            "openai",
            "m",
            &json!({"dimension": 385, "normalize": true}),
            "text",
        )
        .unwrap(),
        CacheKey::for_embedding("openai", "m", &json!({"dimension": 384}), "text").unwrap(),
        CacheKey::for_embedding("openai", "m", &params, "text ").unwrap(),
        CacheKey::for_response("openai", "m", &params, &"text").unwrap(),
        // Field boundaries are part of the key: the same bytes split differently.
        CacheKey::for_embedding("openaim", "", &params, "text").unwrap(),
        CacheKey::for_embedding("openai", "", &params, "mtext").unwrap(),
    ];
    for (i, v) in variants.iter().enumerate() {
        assert_ne!(*v, base, "variant {i}");
        for w in &variants[i + 1..] {
            assert_ne!(v, w);
        }
    }
    let reordered: serde_json::Value =
        serde_json::from_str(r#"{"normalize": true, "dimension": 384}"#).unwrap();
    assert_eq!(
        CacheKey::for_embedding("openai", "m", &reordered, "text").unwrap(),
        base
    );
    assert_eq!(base.to_string().len(), 64);
    assert!(base.to_string().bytes().all(|b| b.is_ascii_hexdigit()));
}

proptest! {
    #[test]
    fn distinct_requests_get_distinct_keys(
        a in ("[a-c]{0,3}", "[a-c]{0,3}", 0u8..3, "[a-c]{0,3}"),
        b in ("[a-c]{0,3}", "[a-c]{0,3}", 0u8..3, "[a-c]{0,3}"),
    ) {
        let key = |(p, m, t, i): &(String, String, u8, String)| {
            CacheKey::for_embedding(p, m, &json!({"t": t}), i).unwrap()
        };
        prop_assert_eq!(a == b, key(&a) == key(&b));
    }

    #[test]
    fn any_vector_survives_the_blob_bit_for_bit(bits in proptest::collection::vec(any::<u32>(), 0..64)) {
        let v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        let blob = encode_vector(&v);
        prop_assert_eq!(blob.len(), 4 * v.len());
        let back: Vec<u32> = decode_vector(&blob).unwrap().iter().map(|x| x.to_bits()).collect();
        prop_assert_eq!(back, bits);
    }
}

#[test]
fn canonical_json_sorts_keys_at_every_level_and_keeps_numbers_as_written() {
    let v: serde_json::Value =
        serde_json::from_str(r#"{"z": {"b": 1.0, "a": [{"d": "\"é\n", "c": null}]}, "a": 1}"#)
            .unwrap();
    assert_eq!(
        canonical_json(&v).unwrap(),
        r#"{"a":1,"z":{"a":[{"c":null,"d":"\"é\n"}],"b":1.0}}"#
    );
    assert_ne!(
        canonical_json(&json!({"t": 1})).unwrap(),
        canonical_json(&json!({"t": 1.0})).unwrap()
    );
    #[derive(Serialize)]
    struct Params {
        temperature: f32,
        model: &'static str,
    }
    assert_eq!(
        canonical_json(&Params {
            temperature: 0.5,
            model: "m"
        })
        .unwrap(),
        r#"{"model":"m","temperature":0.5}"#
    );
    let mut bad = HashMap::new();
    bad.insert((1, 2), 3);
    let err = canonical_json(&bad).unwrap_err().to_string();
    assert!(err.contains("not representable as JSON"), "{err}");
}

#[test]
fn special_floats_round_trip_through_the_blob_and_the_file() {
    let payload_nan = f32::from_bits(0x7fc0_1234);
    let v = vec![
        f32::NAN,
        payload_nan,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::MIN_POSITIVE / 2.0,
        f32::MAX,
        f32::MIN,
        1.5,
    ];
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&decode_vector(&encode_vector(&v)).unwrap()), bits(&v));
    assert_eq!(
        encode_vector(&[1.0]),
        [0x00, 0x00, 0x80, 0x3f],
        "little-endian"
    );
    assert!(decode_vector(&[0, 0, 0, 0, 0]).is_none());

    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "floats.sqlite");
    rw(&path)
        .put_embedding("p", "m", &json!({}), "x", &v)
        .unwrap();
    let got = rw(&path)
        .get_embedding("p", "m", &json!({}), "x")
        .unwrap()
        .unwrap();
    assert_eq!(bits(&got), bits(&v));
}

#[test]
fn read_write_mode_stores_and_finds_entries_across_handles_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "sub/dir/cache.sqlite");
    let cache = rw(&path);
    let p = json!({"k": 1});
    assert_eq!(cache.get_embedding("p", "m", &p, "a").unwrap(), None);
    cache
        .put_embeddings(
            "p",
            "m",
            &p,
            &[
                EmbeddingEntry {
                    text: "a",
                    vector: &[1.0, 2.0],
                    tokens: Some(1),
                },
                EmbeddingEntry {
                    text: "b",
                    vector: &[3.0, 4.0],
                    tokens: None,
                },
            ],
        )
        .unwrap();
    // The first writer of a key wins.
    cache.put_embedding("p", "m", &p, "a", &[9.0, 9.0]).unwrap();
    let other = rw(&path);
    assert_eq!(
        other
            .get_embeddings("p", "m", &p, &["a", "zz", "b"])
            .unwrap(),
        [Some(vec![1.0, 2.0]), None, Some(vec![3.0, 4.0])]
    );
    assert_eq!(
        other.entry_counts().unwrap(),
        EntryCounts {
            embeddings: 2,
            responses: 0
        }
    );
    let s = other.stats();
    assert_eq!((s.hits, s.misses, s.saved_tokens, s.tokens), (2, 1, 1, 0));
    assert_eq!(cache.stats().tokens, 1);
    drop((cache, other));
    let raw = Connection::open(&path).unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let app: i32 = raw
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app, APPLICATION_ID);
}

#[test]
fn off_mode_touches_no_file_and_misses_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "never.sqlite");
    let cache = Cache::open(&path, CacheMode::Off).unwrap();
    cache
        .put_embedding_with_usage("p", "m", &json!({}), "a", &[1.0], Some(7))
        .unwrap();
    assert_eq!(
        cache.get_embedding("p", "m", &json!({}), "a").unwrap(),
        None
    );
    cache
        .put_response("p", "m", &json!({}), &"q", &json!("r"), None)
        .unwrap();
    assert_eq!(
        cache.get_response("p", "m", &json!({}), &"q").unwrap(),
        None
    );
    assert!(!path.exists());
    assert_eq!(cache.entry_counts().unwrap(), EntryCounts::default());
    let s = cache.stats();
    assert_eq!(
        (s.hits, s.misses, s.tokens),
        (0, 2, 7),
        "the calls were still paid for"
    );
    assert_eq!(Cache::disabled().mode(), CacheMode::Off);
}

#[test]
fn replay_answers_what_was_recorded_and_names_what_was_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "golden.sqlite");
    let err = Cache::open(&path, CacheMode::Replay)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(path.as_str()) && err.contains("no such file to replay from"),
        "{err}"
    );
    let p = json!({"dimension": 2});
    rw(&path)
        .put_embedding("openai", "small", &p, "known", &[1.0, 0.0])
        .unwrap();
    let replay = Cache::open(&path, CacheMode::Replay).unwrap();
    assert_eq!(
        replay
            .get_embedding("openai", "small", &p, "known")
            .unwrap(),
        Some(vec![1.0, 0.0])
    );
    let err = replay
        .get_embedding("openai", "small", &p, "What is a \"chunk\"?")
        .unwrap_err();
    assert!(matches!(err, Error::CacheMiss { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "cache `{path}` (replay mode) has no embedding for provider `openai`, model `small`, \
             input \"What is a \\\"chunk\\\"?\""
        )
    );
    let long = "x".repeat(100) + &"y".repeat(100);
    let err = replay
        .get_embeddings("openai", "small", &p, &["known", &long, "b", "c"])
        .unwrap_err()
        .to_string();
    let head = format!("\"{}\"…\"{}\"", "x".repeat(60), "y".repeat(60));
    assert!(
        err.ends_with(&format!("input {head} (200 chars) and 2 more")),
        "{err}"
    );
    // Writes are ignored: a replay never changes the recording.
    replay
        .put_embedding("openai", "small", &p, "new", &[0.0, 1.0])
        .unwrap();
    assert_eq!(replay.entry_counts().unwrap().embeddings, 1);
    let err = replay
        .get_response(
            "openai",
            "gpt",
            &json!({"t": 0}),
            &json!([{"role": "user", "content": "hi"}]),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has no response for provider `openai`, model `gpt`, input ")
            && err.contains(r#"{\"content\":\"hi\",\"role\":\"user\"}"#),
        "{err}"
    );
    let s = replay.stats();
    assert_eq!((s.hits, s.misses), (2, 5));
}

#[test]
fn responses_round_trip_with_their_usage_whatever_the_field_order() {
    let dir = tempfile::tempdir().unwrap();
    let cache = rw(&temp_path(&dir, "r.sqlite"));
    cache.set_price(
        "openai",
        "gpt",
        Price {
            prompt_per_1k: 1.0,
            completion_per_1k: 2.0,
        },
    );
    let params = json!({"temperature": 0, "response_format": {"type": "json_schema", "name": "x"}});
    let input = json!([{"role": "user", "content": "2+2?"}]);
    let usage = TokenUsage {
        prompt_tokens: 1000,
        completion_tokens: 500,
    };
    cache
        .put_response(
            "openai",
            "gpt",
            &params,
            &input,
            &json!({"answer": 4}),
            Some(usage),
        )
        .unwrap();
    let swapped =
        json!({"response_format": {"name": "x", "type": "json_schema"}, "temperature": 0});
    let hit = cache
        .get_response("openai", "gpt", &swapped, &input)
        .unwrap()
        .unwrap();
    assert_eq!(
        hit,
        CachedResponse {
            response: json!({"answer": 4}),
            usage: Some(usage)
        }
    );
    // Another model, another input or other parameters miss.
    assert!(cache
        .get_response("openai", "gpt-2", &params, &input)
        .unwrap()
        .is_none());
    assert!(cache
        .get_response("openai", "gpt", &json!({}), &input)
        .unwrap()
        .is_none());
    assert!(cache
        .get_response("openai", "gpt", &params, &json!([]))
        .unwrap()
        .is_none());
    cache
        .put_response("openai", "other", &params, &input, &json!(null), None)
        .unwrap();
    assert_eq!(
        cache
            .get_response("openai", "other", &params, &input)
            .unwrap()
            .unwrap()
            .usage,
        None
    );
    let s = cache.stats_for("openai", "gpt");
    assert_eq!(
        (s.hits, s.misses, s.tokens, s.saved_tokens),
        (1, 2, 1500, 1500)
    );
    assert_eq!(s.cost, Some(2.0));
    assert_eq!((cache.stats().hits, cache.stats().misses), (2, 3));
    assert_eq!(cache.entry_counts().unwrap().responses, 2);
}

#[test]
fn stats_print_as_one_line() {
    let s = CacheStats {
        hits: 1980,
        misses: 20,
        tokens: 12_345,
        saved_tokens: 0,
        cost: Some(12_345.0 * 0.13 / 1000.0 / 1000.0),
    };
    assert_eq!(
        s.to_string(),
        "cache: 1,980 hits, 20 misses, 12,345 tokens, $0.0016"
    );
    assert!((s.hit_rate() - 0.99).abs() < 1e-12);
    let one = CacheStats {
        hits: 1,
        misses: 1,
        tokens: 1,
        ..CacheStats::default()
    };
    assert_eq!(one.to_string(), "cache: 1 hit, 1 miss, 1 token");
    assert_eq!(CacheStats::default().to_string(), "cache: 0 hits, 0 misses");
    assert_eq!(CacheStats::default().hit_rate(), 0.0);
    for (n, s) in [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (1_234_567, "1,234,567"),
    ] {
        assert_eq!(grouped(n), s);
    }
}

fn set_meta(path: &Utf8Path, name: &str, value: Option<&str>) {
    let raw = Connection::open(path).unwrap();
    match value {
        Some(v) => raw
            .execute("UPDATE meta SET value = ?1 WHERE name = ?2", (v, name))
            .unwrap(),
        None => raw
            .execute("DELETE FROM meta WHERE name = ?1", [name])
            .unwrap(),
    };
}

#[test]
fn the_schema_version_is_checked_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "v.sqlite");
    drop(rw(&path));
    let open_err = |mode| Cache::open(&path, mode).unwrap_err().to_string();
    set_meta(&path, "schema_version", Some("2"));
    for mode in [CacheMode::ReadWrite, CacheMode::Replay] {
        assert_eq!(
            open_err(mode),
            format!(
                "cache `{path}`: has cache schema version 2, newer than this rag-eval's 1; \
                 upgrade rag-eval or use another file"
            )
        );
    }
    set_meta(&path, "schema_version", Some("0"));
    assert!(open_err(CacheMode::ReadWrite)
        .contains("schema version 0, which this rag-eval (version 1) cannot read"));
    set_meta(&path, "schema_version", Some("one"));
    assert!(
        open_err(CacheMode::ReadWrite).contains("unreadable cache schema version Some(\"one\")")
    );
    set_meta(&path, "schema_version", Some("1"));
    set_meta(&path, "format", Some("other-tool"));
    assert!(open_err(CacheMode::ReadWrite)
        .contains("not a rag-eval cache (its meta table has format Some(\"other-tool\"))"));
    set_meta(&path, "format", Some(FORMAT));
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE responses")
        .unwrap();
    assert!(open_err(CacheMode::ReadWrite).contains("lacks its `responses` table"));
}

#[test]
fn foreign_and_damaged_files_are_refused_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let text = temp_path(&dir, "notes.txt");
    std::fs::write(&text, "These are my notes, not a database. ".repeat(200)).unwrap();
    for mode in [CacheMode::ReadWrite, CacheMode::Replay] {
        let err = Cache::open(&text, mode).unwrap_err();
        assert!(matches!(err, Error::Cache { .. }));
        let err = err.to_string();
        assert!(
            err.starts_with(&format!("cache `{text}`: not a SQLite database")),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&text).unwrap().len(),
        36 * 200,
        "the foreign file is left alone"
    );

    let other_db = temp_path(&dir, "app.sqlite");
    Connection::open(&other_db)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER); CREATE TABLE orders (id INTEGER);")
        .unwrap();
    let err = Cache::open(&other_db, CacheMode::ReadWrite)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "cache `{other_db}`: is a SQLite database of something else (tables: orders, \
             users), not a rag-eval cache"
        )
    );

    let empty_db = temp_path(&dir, "empty.sqlite");
    std::fs::write(&empty_db, "").unwrap();
    let err = Cache::open(&empty_db, CacheMode::Replay)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("holds no rag-eval cache (empty database)"),
        "{err}"
    );

    // A cache cut short: its header promises pages that are gone.
    let cut = temp_path(&dir, "cut.sqlite");
    {
        let cache = rw(&cut);
        for i in 0..200 {
            cache
                .put_embedding("p", "m", &json!({}), &i.to_string(), &[i as f32; 64])
                .unwrap();
        }
        cache.checkpoint().unwrap();
    }
    let bytes = std::fs::read(&cut).unwrap();
    assert!(bytes.len() > 8192);
    std::fs::write(&cut, &bytes[..4096 + 100]).unwrap();
    let err = Cache::open(&cut, CacheMode::ReadWrite)
        .and_then(|c| {
            c.get_embeddings("p", "m", &json!({}), &["1", "150"])
                .map(|_| ())
        })
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("cache `{cut}`: ")), "{err}");
    assert!(
        err.contains("corrupt") || err.contains("malformed"),
        "{err}"
    );
}

#[test]
fn cached_embedder_embeds_only_misses_in_one_call_and_keeps_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "e.sqlite");
    let cache = Arc::new(rw(&path));
    let e = CachedEmbedder::new(Counting::default(), Arc::clone(&cache));
    assert_eq!(
        (e.provider(), e.name(), e.dimension()),
        ("counting", "counting(dim=3)".into(), 3)
    );
    let got = block_on(e.embed(&strings(&["aa", "b", "aa", "ccc"]))).unwrap();
    assert_eq!(
        got,
        [
            vector("aa", 1.0),
            vector("b", 1.0),
            vector("aa", 1.0),
            vector("ccc", 1.0)
        ]
    );
    let got = block_on(e.embed(&strings(&["ccc", "dddd", "b", "e", "dddd"]))).unwrap();
    assert_eq!(got[1], vector("dddd", 1.0));
    assert_eq!(got[4], vector("dddd", 1.0));
    assert_eq!(got[3], vector("e", 1.0));
    assert_eq!(
        *e.inner().calls.lock().unwrap(),
        [strings(&["aa", "b", "ccc"]), strings(&["dddd", "e"])]
    );
    assert!(block_on(e.embed(&strings(&["b", "aa"]))).is_ok());
    assert!(block_on(e.embed(&[])).unwrap().is_empty());
    assert_eq!(
        e.inner().calls.lock().unwrap().len(),
        2,
        "all hits: no call"
    );
    let s = e.stats();
    assert_eq!((s.hits, s.misses), (4, 7), "counted per text asked for");

    // Queries are stored apart from documents and use the inner query encoding.
    assert_eq!(block_on(e.embed_query("aa")).unwrap(), vector("aa", -1.0));
    assert_eq!(block_on(e.embed_query("aa")).unwrap(), vector("aa", -1.0));
    assert_eq!(*e.inner().queries.lock().unwrap(), ["aa"]);

    // A fresh wrapper over the same file answers without the inner embedder.
    let again = CachedEmbedder::new(Counting::default(), Arc::new(rw(&path)));
    block_on(again.embed(&strings(&["e", "aa", "b"]))).unwrap();
    block_on(again.embed_query("aa")).unwrap();
    assert!(again.inner().calls.lock().unwrap().is_empty());
    assert!(again.inner().queries.lock().unwrap().is_empty());

    // The low-level API sees the same entries under the documented parameters.
    assert_eq!(
        cache
            .get_embedding(
                "counting",
                "counting(dim=3)",
                &json!({"dimension": 3, "input": "document"}),
                "e"
            )
            .unwrap(),
        Some(vector("e", 1.0))
    );
}

#[test]
fn cached_embedder_embeds_the_queries_it_lacks_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "c.sqlite");
    let e = CachedEmbedder::new(Counting::default(), Arc::new(rw(&path)));
    // "aa" is cached as a query, "b" only as a document: a query must not find it.
    block_on(e.embed_query("aa")).unwrap();
    block_on(e.embed(&strings(&["b"]))).unwrap();
    let asked = strings(&["b", "aa", "ccc", "b", "dddd"]);
    let got = block_on(e.embed_queries(&asked)).unwrap();
    let one_by_one: Vec<Vec<f32>> = asked.iter().map(|q| vector(q, -1.0)).collect();
    assert_eq!(got, one_by_one);
    // The misses, each once and in order of first appearance, in one call; "aa" from the cache.
    assert_eq!(
        *e.inner().query_batches.lock().unwrap(),
        [strings(&["b", "ccc", "dddd"])]
    );
    assert_eq!(*e.inner().queries.lock().unwrap(), ["aa"]);
    let s = e.stats();
    // Before: 1 query miss, 1 document miss. Then 1 hit and 4 misses, counted per text.
    assert_eq!((s.hits, s.misses), (1, 6));

    // All hits now: no call at all, the same vectors as asking one query at a time.
    let again = block_on(e.embed_queries(&asked)).unwrap();
    assert_eq!(again, one_by_one);
    for q in &asked {
        assert_eq!(block_on(e.embed_query(q)).unwrap(), vector(q, -1.0));
    }
    assert_eq!(e.inner().query_batches.lock().unwrap().len(), 1);
    assert_eq!(e.inner().queries.lock().unwrap().len(), 1);
    let s = e.stats();
    assert_eq!((s.hits, s.misses), (1 + 5 + 5, 6));
    assert!(block_on(e.embed_queries(&[])).unwrap().is_empty());

    // A fresh wrapper over the same file, in replay: the batch is answered from the file, and
    // a batch with one query never recorded names it and calls nothing.
    let replay = CachedEmbedder::new(
        Counting::default(),
        Arc::new(Cache::open(&path, CacheMode::Replay).unwrap()),
    );
    assert_eq!(block_on(replay.embed_queries(&asked)).unwrap(), one_by_one);
    let err = block_on(replay.embed_queries(&strings(&["aa", "zz"])))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no query embedding") && err.contains("\"zz\""),
        "{err}"
    );
    assert!(replay.inner().query_batches.lock().unwrap().is_empty());
    assert!(replay.inner().queries.lock().unwrap().is_empty());
}

#[test]
fn cached_embedder_in_replay_never_calls_the_inner_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "golden.sqlite");
    let recorder = CachedEmbedder::new(HashingEmbedder::default(), Arc::new(rw(&path)));
    let docs = strings(&["the cat sat", "on the mat"]);
    let recorded = block_on(recorder.embed(&docs)).unwrap();
    let q = block_on(recorder.embed_query("where is the cat")).unwrap();
    drop(recorder);

    let replay = Arc::new(Cache::open(&path, CacheMode::Replay).unwrap());
    let e = CachedEmbedder::new(Counting::default(), Arc::clone(&replay));
    // A different inner embedder: nothing matches, and nothing is embedded.
    let err = block_on(e.embed(&docs)).unwrap_err().to_string();
    assert!(
        err.contains("has no embedding for provider `counting`, model `counting(dim=3)`, input \"the cat sat\" and 1 more"),
        "{err}"
    );
    assert!(e.inner().calls.lock().unwrap().is_empty());

    let e = CachedEmbedder::new(HashingEmbedder::default(), replay);
    assert_eq!(block_on(e.embed(&docs)).unwrap(), recorded);
    assert_eq!(block_on(e.embed_query("where is the cat")).unwrap(), q);
    let err = block_on(e.embed_query("where is the dog"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "cache `{path}` (replay mode) has no query embedding for provider `hashing`, model \
             `hashing(dim=384,ngrams=2)`, input \"where is the dog\""
        )
    );
    let err = block_on(e.embed(&strings(&["on the mat", "new"]))).unwrap_err();
    assert!(matches!(err, Error::CacheMiss { .. }), "{err}");
}

#[test]
fn cached_embedder_off_mode_always_calls_the_inner_embedder() {
    let e = CachedEmbedder::new(Counting::default(), Arc::new(Cache::disabled()));
    for _ in 0..2 {
        assert_eq!(
            block_on(e.embed(&strings(&["a", "a"]))).unwrap(),
            [vector("a", 1.0), vector("a", 1.0)]
        );
    }
    assert_eq!(
        *e.inner().calls.lock().unwrap(),
        [strings(&["a"]), strings(&["a"])]
    );
    assert_eq!(e.stats().misses, 4);
}

#[test]
fn tokens_are_stored_per_entry_counted_when_spent_and_saved_on_hits() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "t.sqlite");
    let words = |t: &str| t.split_whitespace().count() as u64;
    let e = CachedEmbedder::new(HashingEmbedder::default(), Arc::new(rw(&path)))
        .with_token_counter(words)
        .with_price_per_1k_tokens(0.5);
    block_on(e.embed(&strings(&["one two three", "four", "one two three"]))).unwrap();
    let s = e.stats();
    assert_eq!(
        (s.misses, s.tokens, s.saved_tokens),
        (3, 4, 0),
        "a repeated text is embedded once"
    );
    assert_eq!(s.cost, Some(0.002));
    // A later run hits and saves what the first spent.
    let later = CachedEmbedder::new(HashingEmbedder::default(), Arc::new(rw(&path)))
        .with_price_per_1k_tokens(0.5);
    block_on(later.embed(&strings(&["four", "one two three", "five six"]))).unwrap();
    let s = later.stats();
    assert_eq!((s.hits, s.misses, s.tokens, s.saved_tokens), (2, 1, 0, 4));
    assert_eq!(s.cost, Some(0.0));
    assert_eq!(s.to_string(), "cache: 2 hits, 1 miss, 0 tokens, $0.0000");
}

struct Wrong {
    vectors: usize,
    dimension: usize,
}

#[async_trait::async_trait]
impl Embedder for Wrong {
    fn name(&self) -> String {
        "wrong".into()
    }
    fn dimension(&self) -> usize {
        3
    }
    async fn embed(&self, _texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(vec![vec![0.0; self.dimension]; self.vectors])
    }
}

#[test]
fn wrong_answers_and_wrong_entries_are_errors_and_are_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(rw(&temp_path(&dir, "w.sqlite")));
    let texts = strings(&["a", "b"]);
    let e = CachedEmbedder::new(
        Wrong {
            vectors: 1,
            dimension: 3,
        },
        Arc::clone(&cache),
    );
    let err = block_on(e.embed(&texts)).unwrap_err().to_string();
    assert_eq!(
        err,
        "embedding failed: wrong: 2 texts missing from the cache returned 1 vectors"
    );
    let e = CachedEmbedder::new(
        Wrong {
            vectors: 2,
            dimension: 4,
        },
        Arc::clone(&cache),
    );
    let err = block_on(e.embed(&texts)).unwrap_err().to_string();
    assert!(
        err.ends_with("vector 0 has dimension 4, expected 3"),
        "{err}"
    );
    assert_eq!(cache.entry_counts().unwrap().embeddings, 0);

    // An entry of the wrong length under the wrapper's key (written through the low-level
    // API) is reported, not returned.
    cache
        .put_embedding(
            "wrong",
            "wrong",
            &json!({"input": "document", "dimension": 3}),
            "a",
            &[1.0, 2.0],
        )
        .unwrap();
    let e = CachedEmbedder::new(
        Wrong {
            vectors: 2,
            dimension: 3,
        },
        Arc::clone(&cache),
    );
    let err = block_on(e.embed(&texts)).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("cache `{}`: entry ", cache.path()))
            && err.ends_with("of `wrong` has 2 dimensions, expected 3; the file is damaged"),
        "{err}"
    );
}

#[test]
fn a_batch_of_writes_is_stored_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_path(&dir, "atomic.sqlite");
    let cache = rw(&path);
    // A failure injected at the third row of the batch.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER fail BEFORE INSERT ON embeddings WHEN NEW.tokens = 13 \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let entry = |text, tokens| EmbeddingEntry {
        text,
        vector: &[1.0],
        tokens,
    };
    let err = cache
        .put_embeddings(
            "p",
            "m",
            &json!({}),
            &[entry("a", None), entry("b", None), entry("c", Some(13))],
        )
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!("cache `{path}`: store embeddings: injected failure")
    );
    assert_eq!(cache.entry_counts().unwrap().embeddings, 0);
    assert_eq!(
        cache.get_embedding("p", "m", &json!({}), "a").unwrap(),
        None
    );
    // The connection is usable afterwards.
    cache
        .put_embeddings(
            "p",
            "m",
            &json!({}),
            &[entry("a", None), entry("b", Some(2))],
        )
        .unwrap();
    assert_eq!(cache.entry_counts().unwrap().embeddings, 2);
}

#[test]
fn the_model_identity_leaves_out_only_the_server() {
    use crate::cache::model_identity;
    for (name, identity) in [
        (
            "openai(model=m,base=http://127.0.0.1:8080/v1)",
            "openai(model=m)",
        ),
        ("openai(base=http://h:1/v1,model=m)", "openai(model=m)"),
        // A comma inside the URL is part of it, not a new parameter.
        (
            "openai(model=m,base=http://h:1/a,b/v1,dimensions=8)",
            "openai(model=m,dimensions=8)",
        ),
        ("x(model=m,base_url=http://h:2)", "x(model=m)"),
        // Names that only look alike are kept whole.
        ("openai(model=m,database=d)", "openai(model=m,database=d)"),
        ("openai(model=base=x)", "openai(model=base=x)"),
        (
            "broken(model=m,base=http://h",
            "broken(model=m,base=http://h",
        ),
        ("plain", "plain"),
    ] {
        assert_eq!(model_identity(name), identity, "{name}");
    }
    assert_ne!(
        model_identity("openai(model=a,base=http://h:1)"),
        model_identity("openai(model=b,base=http://h:1)")
    );
}
