#!/usr/bin/env bash
# Creates benches/scripts/.venv with the Python peers the comparison benchmarks and the
# fixture scripts use. Benchmarks skip their Python side, with a notice, when it is absent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 -m venv "$here/.venv"
"$here/.venv/bin/pip" install -q -r "$here/requirements.txt"
