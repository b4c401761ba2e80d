//! Local sentence-transformers models exported to ONNX, run by onnxruntime.

use super::{Embedder, OnnxProfile};
use crate::error::{EmbedError, Error, Result, SettingError};
use camino::{Utf8Path, Utf8PathBuf};
use ort::session::Session;
use ort::session::SessionInputValue;
use ort::value::TensorRef;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokenizers::{
    PostProcessor, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy,
};

/// The variable naming the onnxruntime shared library, as `ort` reads it.
pub const ORT_DYLIB_PATH: &str = "ORT_DYLIB_PATH";

/// Truncation when the model folder does not say (sentence-transformers' `max_seq_length` of
/// all-MiniLM-L6-v2 and most of its relatives).
const DEFAULT_MAX_LEN: usize = 256;

/// How an [`OnnxEmbedder`] is set up; every setting has a default.
///
/// ```
/// use rag_eval::embed::OnnxConfig;
/// let config = OnnxConfig::new().batch_size(16).max_len(128).threads(2);
/// assert_eq!(config.get_batch_size(), 16);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OnnxConfig {
    batch_size: Option<usize>,
    max_len: Option<usize>,
    threads: Option<usize>,
    spinning: Option<bool>,
    runtime: Option<PathBuf>,
}

impl OnnxConfig {
    /// The defaults: batches of 32, the model folder's maximum length, all cores, the runtime
    /// from `ORT_DYLIB_PATH`.
    pub fn new() -> Self {
        OnnxConfig::default()
    }

    /// Texts per model call (default 32, at least 1). Texts of one call are sorted by length
    /// before batching, so each batch is padded only to its own longest text.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = Some(n.max(1));
        self
    }

    /// Truncates every text to `n` tokens, special tokens included. Default: `max_seq_length`
    /// from the folder's `sentence_bert_config.json` as sentence-transformers does, else 256;
    /// the fixed truncation in `tokenizer.json` (128 for all-MiniLM-L6-v2) is replaced either way.
    pub fn max_len(mut self, n: usize) -> Self {
        self.max_len = Some(n);
        self
    }

    /// onnxruntime intra-op threads (default: the available parallelism; at least 1).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n.max(1));
        self
    }

    /// Whether onnxruntime's intra-op threads spin while waiting for work (default: onnxruntime's
    /// own default, on). Spinning saves the wake-up between a batch's operators; turning it
    /// off leaves idle cores to other processes.
    pub fn intra_op_spinning(mut self, on: bool) -> Self {
        self.spinning = Some(on);
        self
    }

    /// The onnxruntime shared library to load, instead of the one `ORT_DYLIB_PATH` names.
    pub fn runtime(mut self, path: impl Into<PathBuf>) -> Self {
        self.runtime = Some(path.into());
        self
    }

    /// The batch size that will be used.
    pub fn get_batch_size(&self) -> usize {
        self.batch_size.unwrap_or(32)
    }
}

/// A sentence-transformers model exported to ONNX (`model.onnx` + `tokenizer.json` in one
/// folder), run locally through onnxruntime: token vectors averaged over the attention mask,
/// then L2-normalised, as sentence-transformers computes them.
///
/// The model is loaded on the first call that needs inference, not when the embedder is made:
/// an embedder behind a cache that has every vector (a
/// [`CachedEmbedder`](crate::cache::CachedEmbedder) on a warm file) never loads it. Making the
/// embedder checks what it can cheaply: the folder, `model.onnx` and `tokenizer.json` are
/// there, the tokenizer and the configs parse, the runtime library's path exists; a
/// `model.onnx` that onnxruntime refuses is reported, with its path, by the first call that
/// needs it (and by every later one). The vector length comes from `hidden_size` in the
/// folder's `config.json`; a folder without it has the model loaded at once, to ask the graph.
///
/// The onnxruntime shared library (1.31 or newer) is loaded with the first model,
/// from [`OnnxConfig::runtime`] or else the `ORT_DYLIB_PATH` environment variable (for the
/// `onnxruntime` Python wheel: `site-packages/onnxruntime/capi/libonnxruntime.so.1.*`), or else
/// by name (`libonnxruntime.so`) from the system library path. Nothing is downloaded, at build
/// time or at run time. A process holds one onnxruntime: naming another library (through either
/// setting) after one is loaded is an error; naming none reuses the loaded one.
///
/// Texts are truncated to [`OnnxEmbedder::max_len`] tokens and embedded in batches, each padded
/// to its longest text; onnxruntime uses all cores (see [`OnnxConfig::threads`]). Inside a Tokio
/// runtime the work runs on Tokio's blocking pool ([`tokio::task::spawn_blocking`]), so a batch
/// of long texts does not stall the runtime's other tasks (HTTP calls of a remote store, say);
/// under any other executor (such as `pollster::block_on`) it runs on the calling thread. Calls
/// share one session and take turns: each batch already keeps every core busy.
///
/// ```no_run
/// use rag_eval::embed::{cosine, Embedder, OnnxEmbedder};
///
/// // ORT_DYLIB_PATH=/…/libonnxruntime.so.1.31.1
/// let e = OnnxEmbedder::from_dir("models/all-MiniLM-L6-v2")?;
/// assert_eq!(e.name(), "onnx(model=all-MiniLM-L6-v2,max_len=256)");
/// let v = e.embed_blocking(&["a cat sat on the mat", "a kitten rested on the rug"])?;
/// assert_eq!(v[0].len(), e.dimension());
/// assert!(cosine(&v[0], &v[1]) > 0.5);
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub struct OnnxEmbedder {
    model: Arc<Model>,
    name: String,
    dimension: usize,
}

struct Model {
    /// `None` until the first call that needs the model.
    engine: Mutex<Option<Engine>>,
    profile: Mutex<OnnxProfile>,
    tokenizer: Tokenizer,
    /// What loading the model takes.
    session: SessionSettings,
    /// The vector length the folder's `config.json` declares, which the graph must give; 0
    /// when the folder does not say (the length is then the graph's).
    expected_dimension: usize,
    max_len: usize,
    batch_size: usize,
    pad_id: i64,
    pad_type_id: i64,
    /// For error messages.
    model_path: Utf8PathBuf,
}

impl OnnxEmbedder {
    /// Loads the model in `dir` with the default [`OnnxConfig`].
    ///
    /// Fails, naming the path, when the folder, `model.onnx` or `tokenizer.json` is missing or
    /// unreadable, when the onnxruntime library cannot be loaded, or when the graph is not a
    /// sentence-transformers export (inputs `input_ids` and `attention_mask`, optionally
    /// `token_type_ids`; a float output of shape batch × tokens × dimension).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        OnnxEmbedder::with_config(dir, OnnxConfig::default())
    }

    /// Loads the model in `dir` with `config`; errors as for [`OnnxEmbedder::from_dir`].
    pub fn with_config(dir: impl AsRef<Path>, config: OnnxConfig) -> Result<Self> {
        let dir = utf8(dir.as_ref())?;
        let meta = std::fs::metadata(&dir).map_err(|e| Error::io("open model folder", &dir, e))?;
        if !meta.is_dir() {
            return Err(Error::File {
                message: format!(
                    "`{dir}` is not a folder (an ONNX model folder holds model.onnx and tokenizer.json)"
                ),
                path: dir,
            });
        }
        let model_path = dir.join("model.onnx");
        let tokenizer_path = dir.join("tokenizer.json");
        for path in [&model_path, &tokenizer_path] {
            std::fs::metadata(path).map_err(|e| Error::io("find", path, e))?;
        }
        let max_len = match config.max_len {
            Some(n) => n,
            None => max_seq_length(&dir)?.unwrap_or(DEFAULT_MAX_LEN),
        };
        if let Some(limit) = max_position_embeddings(&dir)? {
            if max_len > limit {
                return Err(SettingError::new(
                    "onnx embedder",
                    "max_len",
                    max_len,
                    format!("must be at most the model's {limit} positions (`{dir}/config.json`)"),
                )
                .into());
            }
        }

        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|e| {
            Error::Embed(EmbedError::new(
                &tokenizer_path,
                format!("cannot read tokenizer `{tokenizer_path}`: {e}"),
            ))
        })?;
        let added = tokenizer
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(false));
        if max_len <= added {
            return Err(SettingError::new(
                "onnx embedder",
                "max_len",
                max_len,
                format!("must leave room for text next to the tokenizer's {added} special tokens"),
            )
            .into());
        }
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| {
                Error::Embed(EmbedError::new(
                    &tokenizer_path,
                    format!("tokenizer `{tokenizer_path}`: {e}"),
                ))
            })?;
        // Padding is done per batch here, to the batch's longest text.
        let (pad_id, pad_type_id) = match tokenizer.get_padding() {
            Some(p) => (i64::from(p.pad_id), i64::from(p.pad_type_id)),
            None => (tokenizer.token_to_id("[PAD]").map_or(0, i64::from), 0),
        };
        tokenizer.with_padding(None);

        // Cheap checks now (the library's path exists, no other runtime is loaded); the
        // library and the model are loaded by the first call that needs them.
        let runtime = requested_runtime(config.runtime.as_deref())?;
        let threads = config.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let hidden = hidden_size(&dir)?;
        // The folder's name as given; `.` and `..` have none, so theirs is looked up.
        let name_of_model = dir
            .file_name()
            .map(str::to_owned)
            .or_else(|| {
                dir.canonicalize_utf8()
                    .ok()
                    .and_then(|p| p.file_name().map(str::to_owned))
            })
            .unwrap_or_else(|| dir.to_string());
        let model = Arc::new(Model {
            engine: Mutex::new(None),
            profile: Mutex::new(OnnxProfile::default()),
            tokenizer,
            session: SessionSettings {
                runtime,
                threads,
                spinning: config.spinning,
            },
            expected_dimension: hidden.unwrap_or(0),
            max_len,
            batch_size: config.get_batch_size(),
            pad_id,
            pad_type_id,
            model_path,
        });
        let dimension = match hidden {
            Some(d) => d,
            None => {
                // Without `hidden_size` the graph is asked, so the model is loaded now.
                let mut profile = OnnxProfile::default();
                let declared = model
                    .engine(&mut profile)?
                    .as_ref()
                    .map_or(0, |e| e.declared);
                *model.profile.lock().unwrap_or_else(|e| e.into_inner()) += profile;
                // A dynamic last axis says nothing until the model has run once.
                match usize::try_from(declared) {
                    Ok(d) if d > 0 => d,
                    _ => model.embed(&[""])?.first().map_or(0, Vec::len),
                }
            }
        };
        Ok(OnnxEmbedder {
            name: format!("onnx(model={name_of_model},max_len={max_len})"),
            model,
            dimension,
        })
    }

    /// The number of tokens a text is truncated to, special tokens included.
    pub fn max_len(&self) -> usize {
        self.model.max_len
    }

    /// Texts per model call.
    pub fn batch_size(&self) -> usize {
        self.model.batch_size
    }

    /// Counts and times by stage (tokenising, input tensors, inference, pooling) accumulated
    /// since the embedder was made; see [`OnnxProfile`].
    pub fn profile(&self) -> OnnxProfile {
        *self.model.profile.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many tokens of `text` the model sees: special tokens included, after truncation.
    pub fn token_count(&self, text: &str) -> Result<usize> {
        self.model
            .tokenizer
            .encode(text, true)
            .map(|e| e.len())
            .map_err(|e| {
                Error::Embed(EmbedError::new(
                    &self.name,
                    format!("{}: cannot tokenize: {e}", self.name),
                ))
            })
    }

    /// Embeds `texts` on the calling thread, one vector per text, in order.
    pub fn embed_blocking<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        self.model.embed(&texts)
    }
}

/// The session and the input buffers it is fed from, reused from batch to batch.
struct Engine {
    session: Session,
    /// Whether the graph takes `token_type_ids` (BERT exports do, others may not).
    token_type_ids: bool,
    output: String,
    /// The last axis of the output as the graph declares it (≤ 0: dynamic).
    declared: i64,
    ids: Vec<i64>,
    mask: Vec<i64>,
    types: Vec<i64>,
}

/// How the session is made when it is first needed.
struct SessionSettings {
    runtime: Option<RuntimeRequest>,
    threads: usize,
    spinning: Option<bool>,
}

/// A text's tokens, kept apart from the rest of its `Encoding` (offsets, token strings) so that
/// a large call holds a few bytes per token.
struct Tokens {
    ids: Vec<u32>,
    types: Vec<u32>,
    mask: Vec<u32>,
}

/// Model batches per call that [`Embedder::preferred_batch_size`] asks batching wrappers for.
const CALL_BATCHES: usize = 32;

/// Texts tokenised at a time: bounds the memory of full `Encoding`s in a large call.
const TOKENIZE_CHUNK: usize = 256;

impl Model {
    /// The engine, made first if this is the first call that needs it (the time in
    /// `profile.load`). A failed load leaves none, so the next call tries again.
    fn engine(&self, profile: &mut OnnxProfile) -> Result<MutexGuard<'_, Option<Engine>>> {
        // A failed run leaves the session as it was, and the buffers are rewritten per batch.
        let mut guard = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let loading = Instant::now();
            *guard = Some(self.load()?);
            profile.load += loading.elapsed();
            profile.sessions += 1;
        }
        Ok(guard)
    }

    /// Loads the runtime (once per process) and the model, and checks that the graph is a
    /// sentence-transformers export of the expected size.
    fn load(&self) -> Result<Engine> {
        let model_path = &self.model_path;
        let environment = runtime(self.session.runtime.as_ref())?;
        let session_error = |e: &dyn fmt::Display| {
            Error::Embed(EmbedError::new(
                model_path,
                format!("cannot load ONNX model `{model_path}`: {e}"),
            ))
        };
        let mut builder = Session::builder(&environment)
            .map_err(|e| session_error(&e))?
            .with_intra_threads(self.session.threads)
            .map_err(|e| session_error(&e))?;
        if let Some(on) = self.session.spinning {
            builder = builder
                .with_intra_op_spinning(on)
                .map_err(|e| session_error(&e))?;
        }
        let session = builder
            .commit_from_file(model_path)
            .map_err(|e| session_error(&e))?;

        let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for required in ["input_ids", "attention_mask"] {
            if !inputs.contains(&required) {
                return Err(Error::Embed(EmbedError::new(model_path, format!(
                    "`{model_path}` has no input `{required}` (inputs: {inputs:?}); expected a sentence-transformers export"
                ))));
            }
        }
        if let Some(other) = inputs
            .iter()
            .find(|n| !["input_ids", "attention_mask", "token_type_ids"].contains(n))
        {
            return Err(Error::Embed(EmbedError::new(
                model_path,
                format!("`{model_path}` takes input `{other}`, which a text embedder cannot fill"),
            )));
        }
        let token_type_ids = inputs.contains(&"token_type_ids");
        let outlet = session
            .outputs()
            .iter()
            .find(|o| matches!(o.name(), "last_hidden_state" | "token_embeddings"))
            .or_else(|| session.outputs().first())
            .ok_or_else(|| {
                Error::Embed(EmbedError::new(
                    model_path,
                    format!("`{model_path}` has no output"),
                ))
            })?;
        let output = outlet.name().to_owned();
        let shape = outlet.dtype().tensor_shape().map(|s| s.to_vec());
        let declared = match shape.as_deref() {
            Some([_, _, d]) => *d,
            _ => {
                return Err(Error::Embed(EmbedError::new(model_path, format!(
                    "output `{output}` of `{model_path}` is {:?}, not a tensor of token vectors (batch × tokens × dimension)",
                    outlet.dtype()
                ))))
            }
        };
        if let Some(d) = usize::try_from(declared).ok().filter(|&d| d > 0) {
            self.check_dimension(d)?;
        }
        Ok(Engine {
            session,
            token_type_ids,
            output,
            declared,
            ids: Vec::new(),
            mask: Vec::new(),
            types: Vec::new(),
        })
    }

    /// Vectors of length `d` must be what the folder's `config.json` promised: caches key
    /// entries by that length before the model has run.
    fn check_dimension(&self, d: usize) -> Result<()> {
        match self.expected_dimension {
            0 => Ok(()),
            want if want == d => Ok(()),
            want => Err(Error::Embed(EmbedError::new(&self.model_path, format!(
                "`{}` gives vectors of {d} dimensions, but `config.json` beside it has hidden_size {want}",
                self.model_path
            )))),
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let mut tokens: Vec<Tokens> = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(TOKENIZE_CHUNK) {
            let encodings = self
                .tokenizer
                .encode_batch_fast(chunk.to_vec(), true)
                .map_err(|e| {
                    Error::Embed(EmbedError::new(
                        &self.model_path,
                        format!("cannot tokenize for `{}`: {e}", self.model_path),
                    ))
                })?;
            tokens.extend(encodings.into_iter().map(|e| Tokens {
                ids: e.get_ids().to_vec(),
                types: e.get_type_ids().to_vec(),
                mask: e.get_attention_mask().to_vec(),
            }));
        }
        // Longest first, as sentence-transformers does, so that texts of similar length share
        // a batch and little of it is padding. The sort is stable: equal lengths keep input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(tokens[i].ids.len()));
        let mut profile = OnnxProfile {
            calls: 1,
            texts: texts.len() as u64,
            tokens: tokens.iter().map(|t| t.ids.len() as u64).sum(),
            tokenize: started.elapsed(),
            ..OnnxProfile::default()
        };
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let result = order.chunks(self.batch_size).try_for_each(|batch| {
            let rows: Vec<&Tokens> = batch.iter().map(|&i| &tokens[i]).collect();
            let pooled = self.run(&rows, &mut profile)?;
            let placing = Instant::now();
            for (&i, v) in batch.iter().zip(pooled) {
                vectors[i] = v;
            }
            profile.pool += placing.elapsed();
            Ok(())
        });
        *self.profile.lock().unwrap_or_else(|e| e.into_inner()) += profile;
        result.map(|()| vectors)
    }

    /// One model call: pads `rows` to the longest, runs the graph, pools and normalises.
    fn run(&self, rows: &[&Tokens], profile: &mut OnnxProfile) -> Result<Vec<Vec<f32>>> {
        let mut guard = self.engine(profile)?;
        let filling = Instant::now();
        let Some(engine) = guard.as_mut() else {
            unreachable!("`Model::engine` returns a loaded engine")
        };
        let width = rows.iter().map(|t| t.ids.len()).max().unwrap_or(0).max(1);
        fill(
            &mut engine.ids,
            width,
            self.pad_id,
            rows.iter().map(|t| &t.ids[..]),
        );
        fill(&mut engine.mask, width, 0, rows.iter().map(|t| &t.mask[..]));
        if engine.token_type_ids {
            fill(
                &mut engine.types,
                width,
                self.pad_type_id,
                rows.iter().map(|t| &t.types[..]),
            );
        }
        let shape = [rows.len(), width];
        let failed = |e: &dyn fmt::Display| {
            Error::Embed(EmbedError::new(
                &self.model_path,
                format!(
                    "`{}` on a batch of {} texts of up to {width} tokens: {e}",
                    self.model_path,
                    rows.len()
                ),
            ))
        };
        // Views of the reused buffers: onnxruntime reads them in place.
        let mut feeds = vec![
            (
                "input_ids",
                view(shape, &engine.ids).map_err(|e| failed(&e))?,
            ),
            (
                "attention_mask",
                view(shape, &engine.mask).map_err(|e| failed(&e))?,
            ),
        ];
        if engine.token_type_ids {
            feeds.push((
                "token_type_ids",
                view(shape, &engine.types).map_err(|e| failed(&e))?,
            ));
        }
        profile.tensors += filling.elapsed();
        let inferring = Instant::now();
        let outputs = engine.session.run(feeds).map_err(|e| failed(&e))?;
        profile.inference += inferring.elapsed();
        let pooling = Instant::now();
        let value = outputs
            .get(&engine.output)
            .ok_or_else(|| failed(&format_args!("no output `{}`", engine.output)))?;
        let (out_shape, hidden) = value.try_extract_tensor::<f32>().map_err(|e| failed(&e))?;
        let dim = match **out_shape {
            [b, t, d] if b == rows.len() as i64 && t == width as i64 && d > 0 => d as usize,
            _ => {
                return Err(failed(&format_args!(
                    "output `{}` has shape {out_shape}, expected [{}, {width}, dimension]",
                    engine.output,
                    rows.len()
                )))
            }
        };
        self.check_dimension(dim)?;
        let mask = &engine.mask;
        let vectors = (0..rows.len())
            .map(|r| {
                let tokens = &hidden[r * width * dim..(r + 1) * width * dim];
                mean_pool_normalised(tokens, &mask[r * width..(r + 1) * width], dim)
            })
            .collect();
        profile.pool += pooling.elapsed();
        profile.batches += 1;
        profile.token_slots += (rows.len() * width) as u64;
        Ok(vectors)
    }
}

/// A tensor of `shape` over `data`, without copying it.
fn view(shape: [usize; 2], data: &[i64]) -> ort::Result<SessionInputValue<'_>> {
    TensorRef::from_array_view((shape, data)).map(SessionInputValue::from)
}

/// Refills `buffer` with one row of `width` cells per text: its values widened to `i64`, then
/// `pad`.
fn fill<'a>(buffer: &mut Vec<i64>, width: usize, pad: i64, rows: impl Iterator<Item = &'a [u32]>) {
    buffer.clear();
    for values in rows {
        buffer.extend(values.iter().map(|&v| i64::from(v)));
        buffer.extend(std::iter::repeat_n(pad, width - values.len()));
    }
}

/// The mean of the token vectors whose mask is set, divided by its L2 norm; the clamps are
/// sentence-transformers' (count at least 1e-9, norm at least 1e-12), so an all-masked row
/// gives the zero vector instead of NaN.
fn mean_pool_normalised(tokens: &[f32], mask: &[i64], dim: usize) -> Vec<f32> {
    let mut sum = vec![0f32; dim];
    let mut count = 0f32;
    for (token, &m) in tokens.chunks_exact(dim).zip(mask) {
        if m != 0 {
            count += 1.0;
            sum.iter_mut().zip(token).for_each(|(s, &x)| *s += x);
        }
    }
    let count = count.max(1e-9);
    sum.iter_mut().for_each(|s| *s /= count);
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    sum.iter_mut().for_each(|s| *s /= norm);
    sum
}

fn utf8(path: &Path) -> Result<Utf8PathBuf> {
    Utf8Path::from_path(path)
        .map(Utf8Path::to_path_buf)
        .ok_or_else(|| Error::NonUtf8Path(path.display().to_string()))
}

fn read_json(path: &Utf8Path) -> Result<Option<serde_json::Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::File {
                path: path.to_owned(),
                message: format!("`{path}` is not valid JSON: {e}"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", path, e)),
    }
}

/// sentence-transformers' truncation length, when the folder carries its config.
fn max_seq_length(dir: &Utf8Path) -> Result<Option<usize>> {
    let path = dir.join("sentence_bert_config.json");
    Ok(read_json(&path)?
        .and_then(|v| v.get("max_seq_length")?.as_u64())
        .and_then(|n| usize::try_from(n).ok()))
}

/// The transformer's position count, when the folder carries its Hugging Face config.
fn max_position_embeddings(dir: &Utf8Path) -> Result<Option<usize>> {
    let path = dir.join("config.json");
    Ok(read_json(&path)?
        .and_then(|v| v.get("max_position_embeddings")?.as_u64())
        .and_then(|n| usize::try_from(n).ok()))
}

/// The vector length of the transformer, when the folder carries its Hugging Face config.
fn hidden_size(dir: &Utf8Path) -> Result<Option<usize>> {
    let path = dir.join("config.json");
    Ok(read_json(&path)?
        .and_then(|v| v.get("hidden_size")?.as_u64())
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0))
}

/// The onnxruntime library an embedder names, and where the name came from (for errors).
struct RuntimeRequest {
    library: PathBuf,
    source: String,
}

/// The library named by `requested` or else `ORT_DYLIB_PATH`, checked without loading it: a
/// path must exist, and must be the library already loaded if there is one. `None` when
/// neither names one: the loaded runtime, or else the system's, will do.
fn requested_runtime(requested: Option<&Path>) -> Result<Option<RuntimeRequest>> {
    let from_env = std::env::var_os(ORT_DYLIB_PATH).filter(|v| !v.is_empty());
    let (library, source) = match (requested, from_env) {
        (Some(path), _) => (path.to_path_buf(), "OnnxConfig::runtime".to_owned()),
        (None, Some(path)) => (PathBuf::from(path), ORT_DYLIB_PATH.to_owned()),
        (None, None) => return Ok(None),
    };
    let library = canonical_library(library, &source)?;
    let loaded = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(runtime) = loaded.as_ref() {
        if runtime.library != library {
            return Err(already_loaded(&runtime.library, &library, &source));
        }
    }
    Ok(Some(RuntimeRequest { library, source }))
}

/// A bare file name is for the dynamic loader to search; a path is checked here so that the
/// error says plainly that the file is missing.
fn canonical_library(library: PathBuf, source: &str) -> Result<PathBuf> {
    if library.components().count() <= 1 {
        return Ok(library);
    }
    std::fs::canonicalize(&library).map_err(|e| {
        Error::Embed(EmbedError::new(library.display(), format!(
            "onnxruntime library `{}` (from {source}): {e}; set {ORT_DYLIB_PATH} to the onnxruntime 1.31+ shared library",
            library.display()
        )))
    })
}

fn already_loaded(loaded: &Path, library: &Path, source: &str) -> Error {
    Error::Embed(EmbedError::new(library.display(), format!(
        "onnxruntime is already loaded from `{}` in this process; cannot also load `{}` (from {source})",
        loaded.display(),
        library.display()
    )))
}

/// The process's onnxruntime: the library it was loaded from and the environment made on it.
struct Runtime {
    library: PathBuf,
    environment: ort::environment::Environment,
}

static RUNTIME: Mutex<Option<Runtime>> = Mutex::new(None);

/// Loads onnxruntime once per process (`ort` allows one library and one environment) and
/// returns its environment: the library `request` names, or when it names none the one loaded,
/// or else the system's.
fn runtime(request: Option<&RuntimeRequest>) -> Result<ort::environment::Environment> {
    let mut loaded = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    let (library, source) = match (request, loaded.as_ref()) {
        (Some(r), Some(runtime)) if runtime.library != r.library => {
            return Err(already_loaded(&runtime.library, &r.library, &r.source))
        }
        (_, Some(runtime)) => return Ok(runtime.environment.clone()),
        (Some(r), None) => (r.library.clone(), r.source.clone()),
        (None, None) => (
            PathBuf::from(format!(
                "{}onnxruntime{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            )),
            format!("the system library path, as {ORT_DYLIB_PATH} is not set"),
        ),
    };
    let environment = ort::init_from(&library)
        .map_err(|e| {
            Error::Embed(EmbedError::new(library.display(), format!(
                "cannot load onnxruntime (from {source}): {e}; set {ORT_DYLIB_PATH} to the onnxruntime 1.31+ shared library"
            )))
        })?
        .with_name("rag-eval")
        .with_telemetry(false)
        .build()
        .map_err(|e| Error::Embed(EmbedError::new("onnxruntime", format!("cannot start onnxruntime: {e}"))))?;
    *loaded = Some(Runtime {
        library,
        environment: environment.clone(),
    });
    Ok(environment)
}

impl fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("name", &self.name)
            .field("model", &self.model.model_path)
            .field("dimension", &self.dimension)
            .field("batch_size", &self.model.batch_size)
            .finish()
    }
}

#[async_trait::async_trait]
impl Embedder for OnnxEmbedder {
    fn name(&self) -> String {
        self.name.clone()
    }

    /// `onnx:dir=…,max_len=…,batch_size=…`.
    fn spec(&self) -> crate::spec::Value {
        let dir = self.model.model_path.parent().map_or("", |d| d.as_str());
        crate::spec::Spec::new("onnx")
            .with("dir", dir)
            .with("max_len", self.model.max_len.to_string())
            .with("batch_size", self.model.batch_size.to_string())
            .into()
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// [`OnnxEmbedder::batch_size`] × 32: each call is sorted by token length before it is cut
    /// into model batches, so the more texts a call holds, the less of each batch is padding.
    fn preferred_batch_size(&self) -> Option<usize> {
        Some(self.model.batch_size.saturating_mul(CALL_BATCHES))
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let model = Arc::clone(&self.model);
                let texts = texts.to_vec();
                handle
                    .spawn_blocking(move || {
                        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                        model.embed(&texts)
                    })
                    .await
                    .map_err(|e| {
                        Error::Embed(EmbedError::new(
                            &self.name,
                            format!("{}: embedding task failed: {e}", self.name),
                        ))
                    })?
            }
            Err(_) => self.embed_blocking(texts),
        }
    }

    /// A query is embedded as a document is (sentence-transformers models of this kind have
    /// no query encoding of their own), so the queries go through [`Embedder::embed`] in one
    /// call: sorted by token length and cut into model batches, instead of one model run each.
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed(queries).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pooling_averages_the_unmasked_tokens_and_normalises() {
        // Two tokens of dimension 2 and a padded third that must not count.
        let tokens = [3.0, 0.0, 1.0, 4.0, 100.0, 100.0];
        let v = mean_pool_normalised(&tokens, &[1, 1, 0], 2);
        // Mean (2, 2), norm 2√2.
        let want = 1.0 / 2f32.sqrt();
        assert!(
            (v[0] - want).abs() < 1e-6 && (v[1] - want).abs() < 1e-6,
            "{v:?}"
        );
        assert_eq!(mean_pool_normalised(&tokens, &[0, 0, 0], 2), [0.0, 0.0]);
    }

    proptest! {
        #[test]
        fn pooled_vectors_have_unit_norm_and_ignore_padding(
            dim in 1usize..6,
            rows in proptest::collection::vec(proptest::collection::vec(-10f32..10.0, 6), 1..5),
            padding in proptest::collection::vec(-10f32..10.0, 6),
        ) {
            let dim = dim.min(6);
            let tokens: Vec<f32> = rows.iter().flat_map(|r| r[..dim].to_vec()).collect();
            let mask = vec![1i64; rows.len()];
            let v = mean_pool_normalised(&tokens, &mask, dim);
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let mean_is_zero = (0..dim).all(|c| rows.iter().map(|r| r[c]).sum::<f32>().abs() < 1e-6);
            prop_assert!(mean_is_zero || (norm - 1.0).abs() < 1e-4, "norm {}", norm);
            let mut padded = tokens.clone();
            padded.extend_from_slice(&padding[..dim]);
            let mut padded_mask = mask.clone();
            padded_mask.push(0);
            prop_assert_eq!(mean_pool_normalised(&padded, &padded_mask, dim), v);
        }
    }

    #[test]
    fn config_defaults_and_clamps() {
        assert_eq!(OnnxConfig::new().get_batch_size(), 32);
        assert_eq!(OnnxConfig::new().batch_size(0).get_batch_size(), 1);
        assert_eq!(OnnxConfig::new().threads(0).threads, Some(1));
    }

    #[test]
    fn a_missing_folder_or_file_is_an_error_naming_it() {
        let err = OnnxEmbedder::from_dir("no/such/model/folder").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("open model folder `no/such/model/folder`"),
            "{msg}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), "{}").unwrap();
        let msg = OnnxEmbedder::from_dir(dir.path()).unwrap_err().to_string();
        assert!(
            msg.starts_with("find `") && msg.contains("model.onnx`"),
            "{msg}"
        );
        let file = dir.path().join("tokenizer.json");
        let msg = OnnxEmbedder::from_dir(&file).unwrap_err().to_string();
        assert!(msg.contains("is not a folder"), "{msg}");
    }

    #[test]
    fn model_folder_settings_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let d = Utf8Path::from_path(dir.path()).unwrap();
        assert_eq!(max_seq_length(d).unwrap(), None);
        std::fs::write(
            d.join("sentence_bert_config.json"),
            r#"{"max_seq_length": 200}"#,
        )
        .unwrap();
        assert_eq!(hidden_size(d).unwrap(), None);
        std::fs::write(
            d.join("config.json"),
            r#"{"max_position_embeddings": 512, "hidden_size": 384}"#,
        )
        .unwrap();
        assert_eq!(max_seq_length(d).unwrap(), Some(200));
        assert_eq!(max_position_embeddings(d).unwrap(), Some(512));
        assert_eq!(hidden_size(d).unwrap(), Some(384));
        std::fs::write(d.join("config.json"), "{").unwrap();
        let msg = max_position_embeddings(d).unwrap_err().to_string();
        assert!(msg.contains("config.json` is not valid JSON"), "{msg}");

        // Too long for the positions: refused before anything is loaded.
        std::fs::write(d.join("config.json"), r#"{"max_position_embeddings": 512}"#).unwrap();
        std::fs::write(d.join("model.onnx"), "").unwrap();
        std::fs::write(d.join("tokenizer.json"), "{}").unwrap();
        let msg = OnnxEmbedder::with_config(dir.path(), OnnxConfig::new().max_len(1000))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("max_len must be at most the model's 512 positions")
                && msg.contains("got 1000"),
            "{msg}"
        );
        let msg = OnnxEmbedder::from_dir(dir.path()).unwrap_err().to_string();
        assert!(msg.contains("cannot read tokenizer `"), "{msg}");
    }
}
