//! `rag-eval chunk`.

use super::output::Output;
use crate::chunk::ChunkId;
use crate::chunker::parse_spec;
use crate::corpus::{Corpus, Document};
use anyhow::{anyhow, Context, Result};
use camino::Utf8PathBuf;
use clap::Args;

#[derive(Args)]
pub(super) struct ChunkArgs {
    /// Chunker spec, e.g. `recursive:size=400,overlap=0` or `token:size=250,overlap=125`.
    #[arg(long)]
    chunker: String,
    /// Which files of a folder to read.
    #[arg(long, default_value = crate::corpus::DEFAULT_GLOB)]
    glob: String,
    /// Files or folders. Document ids are paths relative to the folder given, or the file name.
    #[arg(required = true)]
    paths: Vec<Utf8PathBuf>,
}

/// Loads files and folders into one corpus; ids must not collide.
fn load_paths(paths: &[Utf8PathBuf], glob: &str) -> Result<Corpus> {
    let mut docs: Vec<Document> = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read `{p}`"))?;
        let corpus = if meta.is_dir() {
            Corpus::from_folder(p, Some(glob))?
        } else {
            Corpus::from_file(p)?
        };
        docs.extend(corpus.documents().iter().cloned());
    }
    Corpus::new(docs).map_err(|e| anyhow!("{e} (two inputs give documents the same id)"))
}

#[derive(serde::Serialize)]
struct ChunkLine<'a> {
    doc_id: &'a str,
    start: usize,
    end: usize,
    text: &'a str,
    id: &'a str,
    chunk_id: &'a str,
}

pub(super) fn run(a: ChunkArgs, out: &mut Output) -> Result<()> {
    let chunker = parse_spec(&a.chunker)?;
    let corpus = load_paths(&a.paths, &a.glob)?;
    for doc in corpus.documents() {
        for c in chunker.chunk_with_positions(doc) {
            let content_id = ChunkId::from_content(&c.content);
            let line = ChunkLine {
                doc_id: c.doc_id().as_str(),
                start: c.start(),
                end: c.end(),
                text: &c.content,
                id: c.id.as_str(),
                chunk_id: content_id.as_str(),
            };
            out.json_line(&line)?;
        }
    }
    Ok(())
}
