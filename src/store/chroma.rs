//! A [`VectorStore`] on a Chroma server, through its HTTP API v2.

use super::{check_embeddings, check_lengths, check_vector, normalised, VectorStore};
use crate::chunk::{rank, PositionAwareChunk, PositionAwareChunkId, RetrievedChunk};
use crate::corpus::Metadata;
use crate::error::{Error, Result, SettingError};
use crate::http::{HttpClient, HttpConfig, HttpStats};
use futures_util::lock::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::fmt;

/// Runs `$op` with `$c` bound to the collection; when the server no longer knows the
/// collection (another client deleted it, as a pipeline's `clear` does), forgets it and runs
/// `$op` once more on the collection as looked up, or created, again.
macro_rules! on_collection {
    ($store:expr, |$c:ident| $op:expr) => {{
        let $c = $store.collection_state().await?;
        match $op {
            Err(Error::Http {
                status: Some(404), ..
            }) => {
                $store.forget(&$c.id).await;
                let $c = $store.collection_state().await?;
                $op
            }
            other => other,
        }
    }};
}

/// Metadata key of the chunk's document id.
const DOC_KEY: &str = "doc_id";
/// Metadata key of the chunk's first character.
const START_KEY: &str = "start";
/// Metadata key of the chunk's end (one past the last character).
const END_KEY: &str = "end";
/// Metadata key of the chunk's own metadata, as JSON text: Chroma metadata values are flat
/// scalars and lists, the chunk's may nest.
const METADATA_KEY: &str = "chunk_metadata";
/// Records per write when the server does not say (it does in `/api/v2/pre-flight-checks`).
const DEFAULT_BATCH: usize = 1000;
/// Query embeddings per search request of [`VectorStore::search_many`] unless set: the answer
/// holds `k` records (with their text) per query, so a bounded batch keeps it small.
const DEFAULT_QUERY_BATCH: usize = 100;
/// Results asked for beyond `k`, so that chunks tied at the cut usually come back in one
/// query and can be ordered by id.
const TIE_MARGIN: usize = 4;
/// `n_results` is a 32-bit integer in the API.
const MAX_RESULTS: usize = i32::MAX as usize;

/// Chunks and their embeddings in a collection of a [Chroma](https://www.trychroma.com)
/// server, spoken to through its HTTP API v2 (Chroma 1.x).
///
/// Each chunk is one record: the position-aware chunk id as record id, the content as the
/// document, and the document id, start and end (characters) as metadata, so search results
/// are whole position-aware chunks again. The collection is created on first use (with its
/// tenant and database, when missing) in the cosine space, and a search's score is
/// `1 - distance`, the cosine similarity. Vectors are normalised (norm summed in `f64`) before
/// they are sent, as [`super::InMemoryStore`] normalises them, so both stores score alike up to
/// rounding and a zero vector scores 0 against everything.
///
/// Like [`super::InMemoryStore`]: adding a chunk whose id is stored replaces its vector
/// (records are upserted); vectors of another dimension than the collection's, or with a NaN
/// or infinite component, are rejected before anything is sent; results are best first with
/// ties broken by [`PositionAwareChunkId`] ascending (more results than `k` are asked for, and more again
/// while the last one still ties with the `k`-th, so the tie-break sees every tied chunk); and
/// [`VectorStore::clear`] deletes the collection, which is created again on next use.
/// [`VectorStore::search_many`] sends the queries in batches, one request each
/// ([`ChromaStore::with_query_batch_size`]), and answers each query as
/// [`VectorStore::search`] does.
/// Chroma's index is approximate (HNSW): on large collections a search can miss a neighbour
/// the exact search finds, the more so for sparse vectors such as
/// [`crate::embed::HashingEmbedder`]'s. [`ChromaStore::with_ef_search`] and
/// [`ChromaStore::with_ef_construction`] trade speed for recall.
///
/// Failures are [`Error::Http`] naming the endpoint, with Chroma's own message; connection
/// failures, timeouts and 5xx answers are retried as [`HttpConfig`] says.
///
/// ```no_run
/// use rag_eval::chunk::PositionAwareChunk;
/// use rag_eval::store::{ChromaStore, VectorStore};
///
/// # async fn f() -> rag_eval::Result<()> {
/// let store = ChromaStore::new("http://127.0.0.1:8000", "docs")?;
/// let chunks = [
///     PositionAwareChunk::new("a.md", 0, 4, "cats"),
///     PositionAwareChunk::new("a.md", 5, 9, "dogs"),
/// ];
/// store.add(&chunks, &[vec![1.0, 0.0], vec![0.6, 0.8]]).await?;
/// let hits = store.search(&[0.0, 2.0], 1).await?;
/// assert_eq!(hits[0].chunk.content, "dogs");
/// assert!((hits[0].score - 0.8).abs() < 1e-6);
/// # Ok(()) }
/// ```
///
/// A server that wants a token gets it through the HTTP settings, e.g.
/// `HttpConfig::new(url).with_api_key_env("CHROMA_API_KEY")` (sent as a bearer token;
/// `with_auth_header(AuthHeader::Header("x-chroma-token".into()))` for Chroma's other header)
/// passed to [`ChromaStore::with_http`].
pub struct ChromaStore {
    http: HttpClient,
    tenant: String,
    database: String,
    collection: String,
    hnsw: Map<String, Value>,
    batch_size: Option<usize>,
    query_batch_size: usize,
    state: Mutex<Option<Collection>>,
    max_batch: Mutex<Option<usize>>,
}

/// The collection as last seen.
#[derive(Debug, Clone)]
struct Collection {
    id: String,
    dimension: Option<usize>,
}

impl fmt::Debug for ChromaStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChromaStore")
            .field("http", &self.http)
            .field("tenant", &self.tenant)
            .field("database", &self.database)
            .field("collection", &self.collection)
            .field("hnsw", &self.hnsw)
            .finish()
    }
}

impl ChromaStore {
    /// A store in collection `collection` of the server at `url` (e.g.
    /// `http://127.0.0.1:8000`), tenant `default_tenant`, database `default_database`, with the
    /// default HTTP settings. Nothing is sent before the first operation (or
    /// [`ChromaStore::connect`]).
    pub fn new(url: impl Into<String>, collection: impl Into<String>) -> Result<Self> {
        Self::with_http(HttpConfig::new(url), collection)
    }

    /// [`ChromaStore::new`] with HTTP settings of your own (timeouts, retries, a token);
    /// `config.base_url` is the server's URL (a trailing `/api/v2` is accepted too).
    pub fn with_http(mut config: HttpConfig, collection: impl Into<String>) -> Result<Self> {
        let collection = collection.into();
        check_name("collection", &collection)?;
        let base = config.base_url.trim_end_matches('/');
        config.base_url = base.strip_suffix("/api/v2").unwrap_or(base).to_owned();
        Ok(ChromaStore {
            http: HttpClient::new(config)?,
            tenant: "default_tenant".into(),
            database: "default_database".into(),
            collection,
            hnsw: Map::new(),
            batch_size: None,
            query_batch_size: DEFAULT_QUERY_BATCH,
            state: Mutex::new(None),
            max_batch: Mutex::new(None),
        })
    }

    /// Uses tenant `tenant` (created if missing).
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Result<Self> {
        let tenant = tenant.into();
        check_name("tenant", &tenant)?;
        self.tenant = tenant;
        Ok(self)
    }

    /// Uses database `database` (created if missing).
    pub fn with_database(mut self, database: impl Into<String>) -> Result<Self> {
        let database = database.into();
        check_name("database", &database)?;
        self.database = database;
        Ok(self)
    }

    /// Candidates the HNSW index examines per search when the collection is created (Chroma's
    /// default is 100): more gives better recall on large collections, slower.
    pub fn with_ef_search(mut self, ef: usize) -> Self {
        self.hnsw.insert("ef_search".into(), ef.into());
        self
    }

    /// Candidates examined while building the HNSW index (Chroma's default is 100), set when
    /// the collection is created.
    pub fn with_ef_construction(mut self, ef: usize) -> Self {
        self.hnsw.insert("ef_construction".into(), ef.into());
        self
    }

    /// Neighbours per HNSW node (Chroma's default is 16), set when the collection is created.
    pub fn with_max_neighbors(mut self, m: usize) -> Self {
        self.hnsw.insert("max_neighbors".into(), m.into());
        self
    }

    /// Records per write request (at least 1). The default is the server's own limit, read
    /// from `/api/v2/pre-flight-checks`, or 1000 when the server does not say; a smaller value
    /// keeps request bodies small for large embeddings.
    pub fn with_batch_size(mut self, records: usize) -> Self {
        self.batch_size = Some(records.max(1));
        self
    }

    /// Queries per search request of [`VectorStore::search_many`] (at least 1; default 100).
    /// Each query's answer is the one [`VectorStore::search`] gives it; a smaller value keeps
    /// answers small for large `k`, a larger one saves round trips.
    pub fn with_query_batch_size(mut self, queries: usize) -> Self {
        self.query_batch_size = queries.max(1);
        self
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// Requests, retries and failures of the HTTP client so far.
    pub fn http_stats(&self) -> HttpStats {
        self.http.stats()
    }

    /// Creates the tenant, database and collection when missing, checks that an existing
    /// collection measures cosine distance, and returns the collection's id. Every operation
    /// does this on first use; calling it early surfaces a wrong URL or name at once.
    pub async fn connect(&self) -> Result<String> {
        Ok(self.collection_state().await?.id)
    }

    /// The dimension of the vectors stored, once the collection has any.
    pub async fn dimension(&self) -> Result<Option<usize>> {
        Ok(self.collection_state().await?.dimension)
    }

    /// Removes the records of these chunks (ids not stored are ignored).
    pub async fn delete(&self, ids: &[PositionAwareChunkId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<&str> = ids.iter().map(PositionAwareChunkId::as_str).collect();
        on_collection!(self, |c| self.delete_from(&c, &ids).await)
    }

    /// Deletes the collection on the server (a missing one is fine); the next operation
    /// creates it again, empty.
    pub async fn delete_collection(&self) -> Result<()> {
        let mut state = self.state.lock().await;
        let path = format!(
            "{}/collections/{}",
            self.database_path(),
            segment(&self.collection)
        );
        match self.http.delete(&path).await {
            Ok(())
            | Err(Error::Http {
                status: Some(404), ..
            }) => {}
            Err(e) => return Err(e),
        }
        *state = None;
        Ok(())
    }

    fn tenant_path(&self) -> String {
        format!("/api/v2/tenants/{}", segment(&self.tenant))
    }

    fn database_path(&self) -> String {
        format!(
            "{}/databases/{}",
            self.tenant_path(),
            segment(&self.database)
        )
    }

    fn records_path(&self, collection_id: &str, action: &str) -> String {
        format!(
            "{}/collections/{}/{action}",
            self.database_path(),
            segment(collection_id)
        )
    }

    async fn collection_state(&self) -> Result<Collection> {
        let mut state = self.state.lock().await;
        if let Some(c) = state.as_ref() {
            return Ok(c.clone());
        }
        self.ensure_exists(&self.tenant_path(), "/api/v2/tenants", &self.tenant)
            .await?;
        self.ensure_exists(
            &self.database_path(),
            &format!("{}/databases", self.tenant_path()),
            &self.database,
        )
        .await?;
        let mut configuration = Map::new();
        let mut hnsw = self.hnsw.clone();
        hnsw.insert("space".into(), "cosine".into());
        configuration.insert("hnsw".into(), Value::Object(hnsw));
        let path = format!("{}/collections", self.database_path());
        let answer: CollectionAnswer = self
            .http
            .post_json(
                &path,
                &json!({
                    "name": self.collection,
                    "get_or_create": true,
                    "configuration": configuration,
                }),
            )
            .await?;
        // `get_or_create` returns an existing collection as it is, whatever was asked for.
        let space = answer.space();
        if space != "cosine" {
            return Err(self.config(format!(
                "the collection measures `{space}` distance, not cosine: delete it or use another name"
            )));
        }
        let c = Collection {
            id: answer.id,
            dimension: answer.dimension,
        };
        *state = Some(c.clone());
        Ok(c)
    }

    /// Creates the tenant or database at `path` unless it exists; a 409 means another client
    /// created it meanwhile.
    async fn ensure_exists(&self, path: &str, create: &str, name: &str) -> Result<()> {
        match self.http.get_json::<Value>(path).await {
            Ok(_) => return Ok(()),
            Err(Error::Http {
                status: Some(404), ..
            }) => {}
            Err(e) => return Err(e),
        }
        match self
            .http
            .post_json::<_, Value>(create, &json!({ "name": name }))
            .await
        {
            Ok(_)
            | Err(Error::Http {
                status: Some(409), ..
            }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn batch_limit(&self) -> usize {
        if let Some(n) = self.batch_size {
            return n;
        }
        let mut max = self.max_batch.lock().await;
        if let Some(n) = *max {
            return n;
        }
        // Older servers lack the endpoint; the default is below every limit seen.
        let n = self
            .http
            .get_json::<Value>("/api/v2/pre-flight-checks")
            .await
            .ok()
            .and_then(|v| v.get("max_batch_size")?.as_u64())
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_BATCH);
        *max = Some(n);
        n
    }

    /// Sets the known dimension once a write succeeded.
    async fn record_dimension(&self, id: &str, dimension: usize) {
        let mut state = self.state.lock().await;
        if let Some(c) = state.as_mut().filter(|c| c.id == id) {
            c.dimension = Some(dimension);
        }
    }

    /// One query request for every embedding of `queries` (`n` results each): the records
    /// found, per query in the order sent, scored `1 - distance`. A record this store cannot
    /// read fails the query it answers: `Err` at its position, the message naming the record.
    async fn query(
        &self,
        collection_id: &str,
        queries: &[&[f32]],
        n: usize,
    ) -> Result<Vec<std::result::Result<Vec<RetrievedChunk>, Error>>> {
        let path = self.records_path(collection_id, "query");
        let answer: QueryAnswer = self
            .http
            .post_json(
                &path,
                &json!({
                    "query_embeddings": queries,
                    "n_results": n,
                    "include": ["distances", "metadatas", "documents"],
                }),
            )
            .await?;
        let bad = |message: String| Error::Http {
            endpoint: format!("POST {path}"),
            status: None,
            message,
        };
        let lists = queries.len();
        if answer.ids.len() != lists {
            return Err(bad(format!(
                "the answer has {} lists of ids, expected one per query ({lists})",
                answer.ids.len()
            )));
        }
        let mut distances = answer.distances.unwrap_or_default().into_iter();
        let mut documents = answer.documents.unwrap_or_default().into_iter();
        let mut metadatas = answer.metadatas.unwrap_or_default().into_iter();
        Ok(answer
            .ids
            .into_iter()
            .map(|ids| {
                // A field the server left out (or cut short) is an empty list for the query.
                let distances = distances.next().unwrap_or_default();
                let documents = documents.next().unwrap_or_default();
                let metadatas = metadatas.next().unwrap_or_default();
                if distances.len() != ids.len()
                    || documents.len() != ids.len()
                    || metadatas.len() != ids.len()
                {
                    return Err(bad(format!(
                        "the answer has {} ids but {} distances, {} documents and {} metadatas",
                        ids.len(),
                        distances.len(),
                        documents.len(),
                        metadatas.len()
                    )));
                }
                ids.into_iter()
                    .zip(distances)
                    .zip(documents.into_iter().zip(metadatas))
                    .map(|((id, distance), (document, metadata))| {
                        let distance = distance.ok_or_else(|| {
                            bad(format!("record `{id}` came back without a distance"))
                        })?;
                        let chunk = record_to_chunk(&id, document, metadata).map_err(bad)?;
                        // `+ 0.0` turns a score of -0.0 into 0.0.
                        Ok(RetrievedChunk::new(chunk, (1.0 - distance) + 0.0))
                    })
                    .collect()
            })
            .collect())
    }
}

#[async_trait::async_trait]
impl VectorStore for ChromaStore {
    fn name(&self) -> String {
        format!(
            "chroma({}/{}/{}, cosine)",
            self.tenant, self.database, self.collection
        )
    }

    /// `chroma:url=…,collection=…,tenant=…,database=…`; the HNSW settings and the batch size
    /// are not part of it.
    fn spec(&self) -> crate::spec::Value {
        crate::spec::Spec::new("chroma")
            .with("url", crate::http::redact_url(&self.http.config().base_url))
            .with("collection", self.collection.as_str())
            .with("tenant", self.tenant.as_str())
            .with("database", self.database.as_str())
            .into()
    }

    async fn add(&self, chunks: &[PositionAwareChunk], embeddings: &[Vec<f32>]) -> Result<()> {
        check_lengths(chunks, embeddings).map_err(|e| self.config(e))?;
        if chunks.is_empty() {
            return Ok(());
        }
        on_collection!(self, |c| self.upsert_into(&c, chunks, embeddings).await)
    }

    async fn search(&self, embedding: &[f32], k: usize) -> Result<Vec<RetrievedChunk>> {
        on_collection!(self, |c| self.search_in(&c, embedding, k).await)
    }

    /// One query request per batch of up to [`ChromaStore::with_query_batch_size`] queries
    /// (again only for queries whose cut may hide a tie, as [`VectorStore::search`] does).
    /// Every query is checked before the first request; a failure names the collection and
    /// the query, or the queries of the batch that failed together.
    async fn search_many(
        &self,
        embeddings: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>> {
        if embeddings.is_empty() {
            return Ok(Vec::new());
        }
        let c = self.collection_state().await?;
        self.check_queries(&c, embeddings)?;
        let queries: Vec<Vec<f32>> = embeddings.iter().map(|e| normalised(e)).collect();
        let mut hits = Vec::with_capacity(queries.len());
        let mut start = 0;
        while start < queries.len() {
            // A collection that knows no dimension yet lets queries of several through; each
            // request holds one dimension, so each query meets the answer it meets alone.
            let dimension = queries[start].len();
            let end = (start + 1..queries.len())
                .find(|&i| queries[i].len() != dimension || i - start == self.query_batch_size)
                .unwrap_or(queries.len());
            hits.extend(self.search_run(&queries, start..end, k).await?);
            start = end;
        }
        Ok(hits)
    }

    async fn clear(&self) -> Result<()> {
        self.delete_collection().await
    }

    async fn len(&self) -> Result<usize> {
        on_collection!(self, |c| {
            let path = format!(
                "{}/collections/{}/count",
                self.database_path(),
                segment(&c.id)
            );
            self.http.get_json(&path).await
        })
    }
}

impl ChromaStore {
    async fn delete_from(&self, c: &Collection, ids: &[&str]) -> Result<()> {
        for batch in ids.chunks(self.batch_limit().await) {
            let _: Value = self
                .http
                .post_json(
                    &self.records_path(&c.id, "delete"),
                    &json!({ "ids": batch }),
                )
                .await?;
        }
        Ok(())
    }

    /// Forgets the collection `id` (deleted by another client), so the next operation looks
    /// it up, or creates it, again.
    async fn forget(&self, id: &str) {
        let mut state = self.state.lock().await;
        if state.as_ref().is_some_and(|c| c.id == id) {
            *state = None;
        }
    }

    async fn upsert_into(
        &self,
        c: &Collection,
        chunks: &[PositionAwareChunk],
        embeddings: &[Vec<f32>],
    ) -> Result<()> {
        let expected =
            check_embeddings(chunks, embeddings, c.dimension).map_err(|e| self.config(e))?;
        // One record per id, the last vector winning as a later add would; Chroma rejects a
        // write that names an id twice.
        let mut last: HashMap<&PositionAwareChunkId, usize> = HashMap::with_capacity(chunks.len());
        for (i, chunk) in chunks.iter().enumerate() {
            last.insert(&chunk.id, i);
        }
        let keep: Vec<usize> = (0..chunks.len())
            .filter(|&i| last[&chunks[i].id] == i)
            .collect();
        let path = self.records_path(&c.id, "upsert");
        for batch in keep.chunks(self.batch_limit().await) {
            let body = UpsertBody {
                ids: batch.iter().map(|&i| chunks[i].id.as_str()).collect(),
                embeddings: batch.iter().map(|&i| normalised(&embeddings[i])).collect(),
                documents: batch.iter().map(|&i| chunks[i].content.as_str()).collect(),
                metadatas: batch
                    .iter()
                    .map(|&i| chunk_metadata(&chunks[i]))
                    .collect::<Result<_>>()?,
            };
            let _: Value = self.http.post_json(&path, &body).await?;
            if let Some(d) = expected {
                self.record_dimension(&c.id, d).await;
            }
        }
        Ok(())
    }

    async fn search_in(
        &self,
        c: &Collection,
        embedding: &[f32],
        k: usize,
    ) -> Result<Vec<RetrievedChunk>> {
        check_vector(embedding, c.dimension.unwrap_or(embedding.len()), || {
            "query".to_owned()
        })
        .map_err(|e| self.config(e))?;
        self.search_batch(c, &[normalised(embedding)], k)
            .await?
            .pop()
            .unwrap_or_else(|| Ok(Vec::new()))
    }

    /// The `k` best of each of `queries` (normalised, of one dimension), all in one request,
    /// then once more for those whose cut may hide a tie, with more results, until each is
    /// complete. `result[i]` answers `queries[i]`: a query's results do not depend on the
    /// others asked with it, so each gets what a search of it alone gets. The outer `Err` is
    /// a failed request; an inner one a query whose answer could not be read.
    async fn search_batch(
        &self,
        c: &Collection,
        queries: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<std::result::Result<Vec<RetrievedChunk>, Error>>> {
        let mut found: Vec<std::result::Result<Vec<RetrievedChunk>, Error>> =
            (0..queries.len()).map(|_| Ok(Vec::new())).collect();
        if k == 0 {
            return Ok(found);
        }
        let mut pending: Vec<usize> = (0..queries.len()).collect();
        let mut n = k.saturating_add(TIE_MARGIN).min(MAX_RESULTS);
        while !pending.is_empty() {
            let asked: Vec<&[f32]> = pending.iter().map(|&i| queries[i].as_slice()).collect();
            let answers = self.query(&c.id, &asked, n).await?;
            let mut again = Vec::new();
            for (i, answer) in pending.into_iter().zip(answers) {
                let hits = match answer {
                    Ok(hits) => rank(hits, usize::MAX),
                    Err(e) => {
                        found[i] = Err(e);
                        continue;
                    }
                };
                // Fewer than asked: that was everything. Otherwise a chunk not returned could
                // tie with the k-th and win on id, unless the last returned already scores
                // lower.
                let complete = hits.len() < n
                    || hits.len() <= k
                    || n == MAX_RESULTS
                    || hits[hits.len() - 1].score < hits[k - 1].score;
                if complete {
                    found[i] = Ok(rank(hits, k));
                } else {
                    again.push(i);
                }
            }
            pending = again;
            n = n.saturating_mul(2).min(MAX_RESULTS);
        }
        Ok(found)
    }

    /// [`VectorStore::search_many`] for the queries at `at` (checked, normalised, of one
    /// dimension): one request (more for ties), errors naming the collection and the queries.
    async fn search_run(
        &self,
        queries: &[Vec<f32>],
        at: std::ops::Range<usize>,
        k: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>> {
        let batch = &queries[at.clone()];
        let answers =
            on_collection!(self, |c| self.search_batch(&c, batch, k).await).map_err(|e| {
                let what = if at.len() == 1 {
                    format!("query {}", at.start)
                } else {
                    format!("queries {}..{} (searched together)", at.start, at.end)
                };
                self.about(e, &what)
            })?;
        answers
            .into_iter()
            .zip(at)
            .map(|(hits, i)| hits.map_err(|e| self.about(e, &format!("query {i}"))))
            .collect()
    }

    /// Refuses a query of another dimension than the collection's, or with a NaN or infinite
    /// component, naming it by position.
    fn check_queries(&self, c: &Collection, queries: &[Vec<f32>]) -> Result<()> {
        for (i, q) in queries.iter().enumerate() {
            check_vector(q, c.dimension.unwrap_or(q.len()), || format!("query {i}"))
                .map_err(|e| self.config(e))?;
        }
        Ok(())
    }

    /// `e` with the collection and `what` (the queries it concerns) in front of its message.
    fn about(&self, e: Error, what: &str) -> Error {
        match e {
            Error::Http {
                endpoint,
                status,
                message,
            } => Error::Http {
                endpoint,
                status,
                message: format!(
                    "chroma collection `{}` ({}/{}), {what}: {message}",
                    self.collection, self.tenant, self.database
                ),
            },
            other => other,
        }
    }

    fn config(&self, message: String) -> Error {
        Error::Store {
            store: format!(
                "chroma store `{}` ({}/{})",
                self.collection, self.tenant, self.database
            ),
            message,
        }
    }
}

/// Chroma's rule for tenant, database and collection names, checked here so that a bad name
/// fails before any request.
fn check_name(what: &str, name: &str) -> Result<()> {
    let chars = name.chars().count();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let ok = (3..=512).contains(&chars)
        && name.chars().all(allowed)
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(SettingError::new(
            "chroma store",
            format!("{what} name"),
            format!("`{name}`"),
            "must have 3 to 512 characters from [a-zA-Z0-9._-], starting and ending with a letter or digit",
        )
        .into())
    }
}

/// A path segment with every byte outside RFC 3986's unreserved set percent-encoded.
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn chunk_metadata(chunk: &PositionAwareChunk) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    m.insert(DOC_KEY.into(), chunk.doc_id().as_str().into());
    m.insert(START_KEY.into(), chunk.start().into());
    m.insert(END_KEY.into(), chunk.end().into());
    if !chunk.metadata.is_empty() {
        let text = serde_json::to_string(&chunk.metadata).map_err(|source| Error::Json {
            what: format!("the metadata of chunk `{}`", chunk.id),
            source,
        })?;
        m.insert(METADATA_KEY.into(), text.into());
    }
    Ok(m)
}

/// The chunk a query result describes; the message says what is missing or inconsistent.
fn record_to_chunk(
    id: &str,
    document: Option<String>,
    metadata: Option<Map<String, Value>>,
) -> std::result::Result<PositionAwareChunk, String> {
    let foreign = "the collection holds records not written by ChromaStore";
    let metadata = metadata.ok_or_else(|| format!("record `{id}` has no metadata ({foreign})"))?;
    let content = document.ok_or_else(|| format!("record `{id}` has no document ({foreign})"))?;
    let doc = metadata
        .get(DOC_KEY)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("record `{id}` has no text `{DOC_KEY}` metadata ({foreign})"))?;
    let offset = |key: &str| {
        metadata
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                format!("record `{id}` has no whole-number `{key}` metadata ({foreign})")
            })
    };
    let mut chunk = PositionAwareChunk::new(doc, offset(START_KEY)?, offset(END_KEY)?, content);
    if chunk.id.as_str() != id {
        return Err(format!(
            "record `{id}` holds `{}` {}..{} whose id is `{}` ({foreign})",
            chunk.doc_id(),
            chunk.start(),
            chunk.end(),
            chunk.id
        ));
    }
    if let Some(text) = metadata.get(METADATA_KEY).and_then(Value::as_str) {
        chunk.metadata = serde_json::from_str::<Metadata>(text)
            .map_err(|e| format!("record `{id}` has unreadable `{METADATA_KEY}`: {e}"))?;
    }
    Ok(chunk)
}

#[derive(Serialize)]
struct UpsertBody<'a> {
    ids: Vec<&'a str>,
    embeddings: Vec<Vec<f32>>,
    documents: Vec<&'a str>,
    metadatas: Vec<Map<String, Value>>,
}

/// The fields of a collection this store reads.
#[derive(Deserialize)]
struct CollectionAnswer {
    id: String,
    #[serde(default)]
    dimension: Option<usize>,
    #[serde(default)]
    configuration_json: Value,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl CollectionAnswer {
    /// The distance function: the v2 configuration's, else the legacy `hnsw:space` metadata
    /// of collections made by older clients, else Chroma's default, `l2`.
    fn space(&self) -> String {
        ["hnsw", "spann"]
            .iter()
            .find_map(|index| self.configuration_json.get(index)?.get("space")?.as_str())
            .or_else(|| self.metadata.as_ref()?.get("hnsw:space")?.as_str())
            .unwrap_or("l2")
            .to_owned()
    }
}

/// A record's metadata as Chroma stores it.
type RecordMetadata = Map<String, Value>;

#[derive(Deserialize)]
struct QueryAnswer {
    ids: Vec<Vec<String>>,
    #[serde(default)]
    distances: Option<Vec<Vec<Option<f32>>>>,
    #[serde(default)]
    documents: Option<Vec<Vec<Option<String>>>>,
    #[serde(default)]
    metadatas: Option<Vec<Vec<Option<RecordMetadata>>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_chromas_rule() {
        for good in ["abc", "rag-eval_1.x", "A0b"] {
            check_name("collection", good).unwrap();
        }
        for bad in ["ab", "-abc", "abc.", "a b c", "ünï", &"a".repeat(513)] {
            let err = check_name("collection", bad).unwrap_err().to_string();
            assert!(err.contains("collection name"), "{err}");
        }
        assert!(ChromaStore::new("http://127.0.0.1:1", "x").is_err());
        let err = ChromaStore::new("http://127.0.0.1:1", "abc")
            .unwrap()
            .with_database("d")
            .unwrap_err();
        assert!(err.to_string().contains("database name must have 3 to 512 characters from [a-zA-Z0-9._-], starting and ending with a letter or digit, got `d`"), "{err}");
    }

    #[test]
    fn the_url_may_name_the_api_root() {
        for url in ["http://h:8000", "http://h:8000/", "http://h:8000/api/v2/"] {
            let store = ChromaStore::new(url, "abc").unwrap();
            assert_eq!(store.http.config().base_url, "http://h:8000", "{url}");
        }
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(segment("default_tenant"), "default_tenant");
        assert_eq!(segment("a b/c?é"), "a%20b%2Fc%3F%C3%A9");
    }

    #[test]
    fn records_round_trip_through_metadata() {
        let mut chunk = PositionAwareChunk::new("a.md", 3, 7, "cats");
        chunk
            .metadata
            .insert("section".into(), json!({"title": "Pets", "level": 2}));
        let m = chunk_metadata(&chunk).unwrap();
        assert_eq!(m[DOC_KEY], "a.md");
        assert_eq!(m[START_KEY], 3);
        assert_eq!(m[END_KEY], 7);
        let back =
            record_to_chunk(chunk.id.as_str(), Some("cats".into()), Some(m.clone())).unwrap();
        assert_eq!(back, chunk);

        let err = record_to_chunk("other-id", Some("cats".into()), Some(m.clone())).unwrap_err();
        assert!(err.contains("not written by ChromaStore"), "{err}");
        let err = record_to_chunk(chunk.id.as_str(), None, Some(m.clone())).unwrap_err();
        assert!(err.contains("no document"), "{err}");
        let mut no_start = m;
        no_start.remove(START_KEY);
        let err =
            record_to_chunk(chunk.id.as_str(), Some("cats".into()), Some(no_start)).unwrap_err();
        assert!(err.contains("`start`"), "{err}");
    }

    #[test]
    fn the_space_comes_from_the_configuration_then_the_legacy_metadata() {
        let answer = |configuration: Value, metadata: Value| CollectionAnswer {
            id: "x".into(),
            dimension: None,
            configuration_json: configuration,
            metadata: serde_json::from_value(metadata).unwrap(),
        };
        let hnsw = json!({"hnsw": {"space": "cosine"}, "spann": null});
        assert_eq!(answer(hnsw, Value::Null).space(), "cosine");
        let spann = json!({"hnsw": null, "spann": {"space": "ip"}});
        assert_eq!(answer(spann, Value::Null).space(), "ip");
        let legacy = json!({"hnsw:space": "cosine"});
        assert_eq!(answer(json!({"hnsw": null}), legacy).space(), "cosine");
        assert_eq!(answer(Value::Null, Value::Null).space(), "l2");
    }
}
