//! The chunking-eval-general data set beside the crate, at `../shared/data`, which a plain clone
//! does not have. The tests that read it are marked `#[ignore = "needs ../shared/data"]`, so
//! `cargo test` reports them as ignored instead of passing them unchecked; run them with
//! `cargo test -- --ignored` (`.ci/run` does).

use std::path::PathBuf;

/// `../shared/data/chunking-eval-general`. Panics, naming the path, when it is absent: a data
/// test that was asked to run must not pass without checking anything.
pub fn chunking_eval_general() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/chunking-eval-general");
    assert!(
        dir.join("questions_df.csv").is_file() && dir.join("corpora").is_dir(),
        "this test needs the chunking-eval-general data set at {} (questions_df.csv and corpora/), \
         which is not there; it is not part of the repository",
        dir.display()
    );
    dir
}
