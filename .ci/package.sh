#!/usr/bin/env bash
# Both crates package and build from their packaged files alone, as `cargo publish` uploads
# them: the macro crate first, then rag-eval against it (its `=0.1.0` pin resolves to the
# packaged macro crate). Needs the crates.io index, as any build does.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo publish --dry-run --workspace
