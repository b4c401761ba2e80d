//! A run file read in blocks of whole lines, each cut where one query's lines end and the
//! next query's begin, so that blocks of a file grouped by query can be parsed and scored
//! apart from one another.

use super::parse::{parse_error, query_cut};
use crate::error::{Error, Result};
use camino::Utf8Path;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex};

/// Bytes a block is read to before it is cut; a query longer than that makes its block longer.
pub(super) const BLOCK_BYTES: usize = 1 << 21;

/// Whole lines of a run file.
#[derive(Debug, Default)]
pub(super) struct Block {
    /// Its place among the file's blocks, from 0.
    pub(super) index: usize,
    /// Offset in the file of `bytes[0]`.
    pub(super) offset: usize,
    pub(super) bytes: Vec<u8>,
}

/// Cuts a run file into [`Block`]s.
pub(super) struct BlockReader<'p> {
    file: std::fs::File,
    path: &'p Utf8Path,
    /// The start of the next block, read with the previous one.
    carry: Vec<u8>,
    /// File offset of `carry[0]`.
    offset: usize,
    index: usize,
    at_end: bool,
    size: usize,
}

impl<'p> BlockReader<'p> {
    /// Opens the file at `path`, to be read in blocks of about `size` bytes.
    pub(super) fn open(path: &'p Utf8Path, size: usize) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
        Ok(BlockReader {
            file,
            path,
            carry: Vec::new(),
            offset: 0,
            index: 0,
            at_end: false,
            size: size.max(1),
        })
    }

    /// The next block, in `buf` (whose bytes are dropped), or `None` at the end of the file.
    pub(super) fn next(&mut self, mut buf: Vec<u8>) -> Result<Option<Block>> {
        buf.clear();
        buf.extend_from_slice(&self.carry);
        self.carry.clear();
        let mut want = self.size.max(buf.len() + 1);
        loop {
            if !self.at_end && buf.len() < want {
                // Read into the buffer's spare room: no zeroing of bytes about to be read.
                let missing = want - buf.len();
                buf.reserve(missing);
                let n = (&mut self.file)
                    .take(missing as u64)
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::io("read", self.path, e))?;
                self.at_end = n < missing;
            }
            if self.at_end {
                if buf.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.block(buf)));
            }
            match query_cut(&buf) {
                0 => want *= 2,
                cut => {
                    self.carry.extend_from_slice(&buf[cut..]);
                    buf.truncate(cut);
                    return Ok(Some(self.block(buf)));
                }
            }
        }
    }

    fn block(&mut self, bytes: Vec<u8>) -> Block {
        let block = Block {
            index: self.index,
            offset: self.offset,
            bytes,
        };
        self.index += 1;
        self.offset += block.bytes.len();
        block
    }
}

/// Reads the file at `path` in blocks of about `block_bytes` bytes and hands each to `work`
/// on one of `threads` threads (each with a state of its own, made by `state`), then the
/// results to `take` in file order, until `take` returns `false` (and so does this) or an
/// error. Reading ahead is bounded: a few blocks per thread are in memory at a time.
pub(super) fn in_parallel<S, R: Send>(
    path: &Utf8Path,
    threads: usize,
    block_bytes: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &Block) -> R + Sync,
    mut take: impl FnMut(R) -> Result<bool>,
) -> Result<bool> {
    let mut reader = BlockReader::open(path, block_bytes)?;
    let threads = threads.max(1);
    let stop = AtomicBool::new(false);
    let (send_work, queue) = mpsc::sync_channel::<Block>(threads * 2);
    let queue = Arc::new(Mutex::new(queue));
    let (done, results) = mpsc::channel::<(usize, Result<R>)>();
    let (spare, spares) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let (stop, state, work) = (&stop, &state, &work);
        let reader_done = done.clone();
        scope.spawn(move || {
            let mut index = 0;
            // Enough buffers for every block that can be in flight (queued, being worked on,
            // being read); past that, one comes back whenever a worker is done with its block.
            // Reusing them spares the kernel handing out and zeroing fresh pages for each.
            let mut unused = 3 * threads + 1;
            while !stop.load(Relaxed) {
                let buf = match spares.try_recv() {
                    Ok(buf) => buf,
                    Err(_) if unused > 0 => {
                        unused -= 1;
                        Vec::new()
                    }
                    Err(_) => match spares.recv() {
                        Ok(buf) => buf,
                        // Every worker stopped.
                        Err(_) => break,
                    },
                };
                match reader.next(buf) {
                    Ok(Some(block)) => {
                        index = block.index + 1;
                        if send_work.send(block).is_err() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = reader_done.send((index, Err(e)));
                        break;
                    }
                }
            }
        });
        for _ in 0..threads {
            let (queue, done, spare) = (Arc::clone(&queue), done.clone(), spare.clone());
            scope.spawn(move || {
                let mut state = state();
                loop {
                    let next = queue.lock().map(|q| q.recv());
                    let Ok(Ok(block)) = next else { break };
                    if stop.load(Relaxed) {
                        break;
                    }
                    let result = work(&mut state, &block);
                    let _ = spare.send(block.bytes);
                    if done.send((block.index, Ok(result))).is_err() {
                        break;
                    }
                }
            });
        }
        // Only the workers hold the queue and the way back for buffers now: once they stop,
        // the reader's sending and waiting fail.
        drop(queue);
        drop(spare);
        drop(done);
        let mut waiting: BTreeMap<usize, Result<R>> = BTreeMap::new();
        let mut next = 0;
        let outcome = (|| {
            for (index, result) in results.iter() {
                waiting.insert(index, result);
                while let Some(result) = waiting.remove(&next) {
                    next += 1;
                    if !take(result?)? {
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        })();
        stop.store(true, Relaxed);
        drop(results);
        outcome
    })
}

/// Calls `f(number, line)` for every line of `block` that is not blank, with its one-based
/// number within the block, as `str::lines` splits it (after a byte order mark when the block
/// starts the file), until `f` returns `false`. Returns the number of lines of the block
/// (blank ones included), or `None` when `f` stopped. Text that is not UTF-8 is an error at
/// its offset in the file, raised when its line is reached.
pub(super) fn each_line<'b, E: From<Error>>(
    block: &'b Block,
    path: &Utf8Path,
    mut f: impl FnMut(usize, &'b str) -> std::result::Result<bool, E>,
) -> std::result::Result<Option<usize>, E> {
    let bytes = &block.bytes[..];
    // One check for the whole block; lines past the first bad byte are checked one by one,
    // so the error comes in its line's turn.
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) => e.valid_up_to(),
    };
    let text = std::str::from_utf8(&bytes[..valid]).expect("checked");
    let mut pos = 0;
    let mut number = 0;
    while pos < bytes.len() {
        let line_end = find_newline(&bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        number += 1;
        let line = if line_end <= valid {
            &text[pos..line_end]
        } else {
            std::str::from_utf8(&bytes[pos..line_end]).map_err(|e| Error::NotUtf8 {
                path: path.to_owned(),
                offset: block.offset + pos + e.valid_up_to(),
            })?
        };
        let mut line = line.strip_suffix('\r').unwrap_or(line);
        if number == 1 && block.offset == 0 {
            line = crate::fs::strip_bom(line);
        }
        pos = line_end + 1;
        // Most lines start with a query id: only the others need `trim`'s Unicode look.
        let blank = match line.as_bytes().first() {
            Some(b) if b.is_ascii_graphic() => false,
            _ => line.trim().is_empty(),
        };
        if !blank && !f(number, line)? {
            return Ok(None);
        }
    }
    Ok(Some(number))
}

/// [`each_line`] with each line split into its `N` fields, as
/// [`split_lines`](super::parse::split_lines) splits them: a block that is UTF-8 throughout
/// (the usual case) in one pass, any other line by line, so that the error comes in its
/// line's turn.
pub(super) fn each_line_fields<'b, const N: usize, E: From<Error>>(
    block: &'b Block,
    path: &Utf8Path,
    layout: &str,
    mut f: impl FnMut(usize, [&'b str; N]) -> std::result::Result<bool, E>,
) -> std::result::Result<Option<usize>, E> {
    match std::str::from_utf8(&block.bytes) {
        Ok(text) => super::parse::split_lines(text, (0, block.offset == 0), path, layout, f),
        Err(_) => each_line(block, path, |number, line| {
            f(number, super::parse::fields(line, path, number, layout)?)
        }),
    }
}

/// `error` raised for line `number` of a block, renumbered as line `number + before` of the
/// file.
pub(super) fn renumber(error: Error, before: usize) -> Error {
    match error {
        Error::Parse {
            path,
            line,
            message,
        } => parse_error(&path, line + before, message),
        other => other,
    }
}

/// Position of the first `\n` in `bytes`, eight bytes at a time.
#[inline]
pub(super) fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("eight bytes")) ^ NEWLINES;
        // A zero byte of `word` is a newline; this sets the high bit of the first one.
        let zeros = word.wrapping_sub(ONES) & !word & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`each_line_fields`] gives, or its error, as text.
    fn split<const N: usize>(block: &Block, one_pass: bool) -> Vec<String> {
        let path = Utf8Path::new("run.txt");
        let mut out = Vec::new();
        let mut take = |number: usize, fields: [&str; N]| {
            out.push(format!("{number}: {fields:?}"));
            Ok::<_, Error>(number < 40)
        };
        let read = if one_pass {
            each_line_fields(block, path, "a b c", take)
        } else {
            // The model: line by line, each split as `fields` splits it.
            each_line(block, path, |number, line| {
                take(
                    number,
                    super::super::parse::fields(line, path, number, "a b c")?,
                )
            })
        };
        out.push(format!("{read:?}"));
        out
    }

    proptest! {
        /// Splitting a block in one pass gives the lines and fields, the blank lines skipped,
        /// the count of lines and the errors that splitting it line by line gives.
        #[test]
        fn one_pass_splits_as_line_by_line(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "q1", "Q0", "d\u{3000}x", "0.5", " ", "  ", "\t", "\r", "\x0c", "\x0b",
                    "\x01", "\u{a0}", "é", "\n", "\n", "\r\n", "\u{feff}",
                ]),
                0..60,
            ),
            at_start in any::<bool>(),
            stop_early in any::<bool>(),
        ) {
            let text: String = parts.concat();
            let block = Block { index: 0, offset: if at_start { 0 } else { 17 }, bytes: text.into_bytes() };
            if stop_early {
                prop_assert_eq!(split::<1>(&block, true), split::<1>(&block, false));
            } else {
                prop_assert_eq!(split::<3>(&block, true), split::<3>(&block, false));
            }
        }
    }

    #[test]
    fn blocks_cover_the_file_and_keep_queries_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join("run.txt");
        let mut text = String::new();
        for q in 0..40 {
            for d in 0..(q % 7 + 1) {
                text += &format!("q{q} Q0 d{d} 1 1 t\n");
            }
            if q % 5 == 0 {
                text += "\n";
            }
        }
        text += "q99 Q0 last 1 1 t"; // no final newline
        std::fs::write(&path, &text).unwrap();
        for size in [1, 7, 30, 64, 1000] {
            let mut reader = BlockReader::open(&path, size).unwrap();
            let mut all: Vec<u8> = Vec::new();
            let mut last_query: Option<String> = None;
            let mut lines = 0;
            while let Some(block) = reader.next(Vec::new()).unwrap() {
                assert_eq!(block.offset, all.len());
                let mut first: Option<String> = None;
                let mut last = None;
                lines += each_line(&block, &path, |_, line| {
                    let q = line.split(' ').next().unwrap().to_owned();
                    first.get_or_insert_with(|| q.clone());
                    last = Some(q);
                    Ok::<_, Error>(true)
                })
                .unwrap()
                .unwrap();
                assert!(first.is_none() || first != last_query, "size {size}");
                last_query = last.or(last_query);
                all.extend_from_slice(&block.bytes);
            }
            assert_eq!(all, text.as_bytes(), "size {size}");
            assert_eq!(lines, text.lines().count(), "size {size}");
        }
    }
}
