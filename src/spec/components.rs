//! Every component a spec can name, with its keys: what the parser accepts and help lists.
//! The code that builds each one is elsewhere (chunkers in [`crate::chunker`], the rest in
//! `crate::components`); a test there checks that every entry here has its builder.

use std::fmt;

/// The kinds of component a spec can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// Splits documents into chunks.
    Chunker,
    /// Turns text into vectors.
    Embedder,
    /// Holds vectors and finds the nearest.
    Store,
    /// Reorders candidates for a query.
    Reranker,
    /// From a query to ranked chunks.
    Retriever,
    /// The record/replay cache of embeddings and LLM calls.
    Cache,
    /// A whole RAG system evaluated as a black box: question in, answer and contexts out.
    Rag,
}

impl Kind {
    /// Every kind, in the order help lists them.
    pub const ALL: [Kind; 7] = [
        Kind::Rag,
        Kind::Retriever,
        Kind::Chunker,
        Kind::Embedder,
        Kind::Store,
        Kind::Reranker,
        Kind::Cache,
    ];

    /// The lowercase name used in messages, e.g. `embedder`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Chunker => "chunker",
            Kind::Embedder => "embedder",
            Kind::Store => "store",
            Kind::Reranker => "reranker",
            Kind::Retriever => "retriever",
            Kind::Cache => "cache",
            Kind::Rag => "rag",
        }
    }

    /// The registered components of this kind, whether or not their feature is compiled in.
    pub fn components(self) -> Vec<&'static Component> {
        match self {
            Kind::Chunker => CHUNKERS.iter().collect(),
            Kind::Embedder => EMBEDDERS.iter().collect(),
            Kind::Store => STORES.iter().collect(),
            Kind::Reranker => RERANKERS.iter().collect(),
            Kind::Retriever => RETRIEVERS.iter().collect(),
            Kind::Cache => CACHES.iter().collect(),
            Kind::Rag => RAGS.iter().collect(),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A registered component: its name, keys and the cargo feature it needs.
#[derive(Debug)]
pub struct Component {
    /// What kind of component it is.
    pub kind: Kind,
    /// The name a spec starts with, e.g. `openai`.
    pub name: &'static str,
    /// One line for help.
    pub about: &'static str,
    /// The cargo feature it needs, if any.
    pub feature: Option<&'static str>,
    /// Whether that feature is compiled in.
    pub enabled: bool,
    /// Its keys, in the order specs print them.
    pub keys: &'static [Key],
}

/// One key of a component.
#[derive(Debug)]
pub struct Key {
    /// The key, e.g. `base_url`.
    pub name: &'static str,
    /// The kind of component its value is, when it is one.
    pub nested: Option<Kind>,
    /// Its default or what it means, for help, e.g. `384` or `required`.
    pub about: &'static str,
}

impl Key {
    /// A key with a text value.
    pub const fn text(name: &'static str, about: &'static str) -> Key {
        Key {
            name,
            nested: None,
            about,
        }
    }

    /// A key whose value is a component of `kind`.
    pub const fn component(name: &'static str, kind: Kind, about: &'static str) -> Key {
        Key {
            name,
            nested: Some(kind),
            about,
        }
    }
}

impl Component {
    /// The key named `name`, if the component has it.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The message for a spec naming this component when its feature is not compiled in.
    pub(crate) fn missing_feature(&self) -> String {
        let feature = self.feature.unwrap_or_default();
        format!(
            "the `{}` {} needs the `{feature}` feature (build rag-eval with `--features {feature}`)",
            self.name, self.kind
        )
    }
}

/// Chunker names, in the order messages list them.
pub const CHUNKER_NAMES: &[&str] = &["recursive", "token", "markdown", "semantic"];

const SIZE: Key = Key::text("size", "required");
const OVERLAP: Key = Key::text("overlap", "0");
const CHUNKER: Key = Key::component("chunker", Kind::Chunker, "the context's, e.g. --chunker");
const PATH: Key = Key::text("path", "target/rag-eval-cache.sqlite");

/// The chunkers, one entry each.
pub(crate) static CHUNKERS: &[Component] = &[
    Component {
        kind: Kind::Chunker,
        name: "recursive",
        about: "LangChain's recursive character splitter",
        feature: None,
        enabled: true,
        keys: &[
            SIZE,
            OVERLAP,
            Key::text("length", "chars | tokens"),
            Key::text("separators", "langchain | chroma"),
        ],
    },
    Component {
        kind: Kind::Chunker,
        name: "token",
        about: "fixed windows of cl100k_base tokens",
        feature: Some("tiktoken"),
        enabled: cfg!(feature = "tiktoken"),
        keys: &[SIZE, OVERLAP],
    },
    Component {
        kind: Kind::Chunker,
        name: "markdown",
        about: "heading- and paragraph-aware Markdown splitting",
        feature: Some("markdown"),
        enabled: cfg!(feature = "markdown"),
        keys: &[SIZE, OVERLAP],
    },
    Component {
        kind: Kind::Chunker,
        name: "semantic",
        about: "sentences grouped where the embedding distance jumps",
        feature: None,
        enabled: true,
        keys: &[
            Key::text("percentile", "95"),
            Key::text("buffer", "1"),
            Key::text("max_chars", "none"),
            Key::component("embedder", Kind::Embedder, "hashing"),
        ],
    },
];

/// The embedders, one entry each.
pub(crate) static EMBEDDERS: &[Component] = &[
    Component {
        kind: Kind::Embedder,
        name: "hashing",
        about: "offline feature hashing of word n-grams (no model, no network)",
        feature: None,
        enabled: true,
        keys: &[Key::text("dim", "384"), Key::text("ngrams", "2")],
    },
    Component {
        kind: Kind::Embedder,
        name: "openai",
        about: "an OpenAI-compatible /embeddings server (OpenAI, Ollama, vLLM, TEI, llama.cpp)",
        feature: Some("openai"),
        enabled: cfg!(feature = "openai"),
        keys: &[
            Key::text("model", "required"),
            Key::text("base_url", "https://api.openai.com/v1"),
            Key::text("api_key_env", "OPENAI_API_KEY"),
            Key::text("dimensions", "the model's; sent to the server"),
            Key::text("expected_dimension", "the model's; declared, not sent"),
            Key::text("path", "/embeddings"),
        ],
    },
    Component {
        kind: Kind::Embedder,
        name: "onnx",
        about: "a sentence-transformers ONNX export run by onnxruntime",
        feature: Some("onnx"),
        enabled: cfg!(feature = "onnx"),
        keys: &[
            Key::text("dir", "required: folder with model.onnx and tokenizer.json"),
            Key::text("max_len", "the model folder's"),
            Key::text("batch_size", "32"),
        ],
    },
];

/// The vector stores, one entry each.
pub(crate) static STORES: &[Component] = &[
    Component {
        kind: Kind::Store,
        name: "memory",
        about: "exact cosine search in memory",
        feature: None,
        enabled: true,
        keys: &[],
    },
    Component {
        kind: Kind::Store,
        name: "chroma",
        about: "a collection on a Chroma server (HTTP API v2)",
        feature: Some("chroma"),
        enabled: cfg!(feature = "chroma"),
        keys: &[
            Key::text("url", "required, e.g. http://127.0.0.1:8000"),
            Key::text("collection", "required"),
            Key::text("tenant", "default_tenant"),
            Key::text("database", "default_database"),
        ],
    },
];

/// The rerankers, one entry each.
pub(crate) static RERANKERS: &[Component] = &[Component {
    kind: Kind::Reranker,
    name: "cohere",
    about: "Cohere's /v2/rerank or a compatible server (Infinity: path=/rerank)",
    feature: Some("cohere"),
    enabled: cfg!(feature = "cohere"),
    keys: &[
        Key::text("model", "required"),
        Key::text("base_url", "https://api.cohere.com"),
        Key::text("api_key_env", "COHERE_API_KEY"),
        Key::text("path", "/v2/rerank"),
    ],
}];

/// The retrievers, one entry each.
pub(crate) static RETRIEVERS: &[Component] = &[
    Component {
        kind: Kind::Retriever,
        name: "bm25",
        about: "Okapi BM25 over the chunks",
        feature: None,
        enabled: true,
        keys: &[CHUNKER, Key::text("k1", "1.2"), Key::text("b", "0.75")],
    },
    Component {
        kind: Kind::Retriever,
        name: "dense",
        about: "chunker -> embedder -> vector store -> optional reranker",
        feature: None,
        enabled: true,
        keys: &[
            CHUNKER,
            Key::component("embedder", Kind::Embedder, "hashing"),
            Key::component("store", Kind::Store, "memory"),
            Key::component("reranker", Kind::Reranker, "none"),
            Key::text("candidates", "20: store results the reranker narrows"),
        ],
    },
];

/// The RAG systems evaluated whole, one entry each.
pub(crate) static RAGS: &[Component] = &[Component {
    kind: Kind::Rag,
    name: "http",
    about: "a RAG service over HTTP: POSTs each question, reads the answer and contexts from the JSON response",
    feature: Some("service"),
    enabled: cfg!(feature = "service"),
    keys: &[
        Key::text("url", "required, e.g. http://127.0.0.1:8000/ask"),
        Key::text("body", "{\"id\":\"{id}\",\"query\":\"{query}\"}: JSON with {id} and {query} placeholders; in a conversation {session_id}, \"{messages}\" and \"{new_messages}\" too"),
        Key::text("answer", "/answer: JSON pointer to the answer text"),
        Key::text("contexts", "/contexts: JSON pointer to the list of contexts (strings or objects)"),
        Key::text("tool_calls", "/tool_calls: in a conversation, JSON pointer to the turn's tool calls"),
        Key::text("text", "text: a context object's field holding its text"),
        Key::text("doc_id", "doc_id: its document field"),
        Key::text("start", "start: its first character field"),
        Key::text("end", "end: its end (exclusive) field"),
        Key::text("score", "score: its score field"),
        Key::text("headers", "none: Header-Name:ENV_VAR pairs separated by ;, values read from the environment"),
        Key::text("concurrency", "4: requests in flight"),
        Key::text("timeout", "60: seconds one question may take in all, retries included (or --timeout, if shorter)"),
        Key::text("retries", "2: tries again after timeouts, 429 and 5xx"),
    ],
}];

/// The cache modes, as components of kind [`Kind::Cache`].
pub(crate) static CACHES: &[Component] = &[
    Component {
        kind: Kind::Cache,
        name: "rw",
        about: "answer from the cache, call the provider on a miss and record the answer",
        feature: Some("cache"),
        enabled: cfg!(feature = "cache"),
        keys: &[PATH],
    },
    Component {
        kind: Kind::Cache,
        name: "off",
        about: "no cache",
        feature: Some("cache"),
        enabled: cfg!(feature = "cache"),
        keys: &[],
    },
    Component {
        kind: Kind::Cache,
        name: "replay",
        about: "answer from the cache only; a miss is an error (offline runs)",
        feature: Some("cache"),
        enabled: cfg!(feature = "cache"),
        keys: &[PATH],
    },
];
