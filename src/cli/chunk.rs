//! `rag-eval chunk`.
//!
//! Documents are listed first, then read, chunked and written one at a time, so memory is
//! bounded by the largest document rather than the corpus (holding every chunk before writing
//! took 8.4 times the input).

use super::output::Output;
use crate::chunk::ChunkId;
use crate::chunker::parse_spec;
use crate::corpus::{list_folder, sort_files, DocumentFile};
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

/// The documents of files and folders, sorted by id as one corpus would hold them; ids must
/// not collide. Nothing is read yet.
fn list_paths(paths: &[Utf8PathBuf], glob: &str) -> Result<Vec<DocumentFile>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read `{p}`"))?;
        if meta.is_dir() {
            files.extend(list_folder(p, Some(glob))?);
        } else {
            files.push(DocumentFile::single(p));
        }
    }
    sort_files(&mut files).map_err(|e| anyhow!("{e} (two inputs give documents the same id)"))?;
    Ok(files)
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
    for file in list_paths(&a.paths, &a.glob)? {
        let doc = file.read()?;
        for c in chunker.chunk_with_positions(&doc) {
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
        // The next read may wait (a slow disk, a pipe): what is done reaches the reader first.
        out.flush()?;
    }
    Ok(())
}
