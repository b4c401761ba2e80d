#!/usr/bin/env bash
# Both crates package and build from their packaged files alone, as `cargo publish` uploads
# them: the macro crate first, then rag-eval against it (its `=0.1.0` pin resolves to the
# packaged macro crate). Needs the crates.io index, as any build does.
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo keeps a verified package extracted under the registry's src folder and does not extract
# one of the same version again, so a second run would build the first run's files: remove them.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/rag-eval-*
cargo publish --dry-run --workspace
