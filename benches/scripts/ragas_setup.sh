#!/usr/bin/env bash
# Creates benches/scripts/.venv-ragas with ragas 0.4.3, the peer of the judges benchmark.
# Separate from .venv: ragas pulls LangChain, OpenAI's client and their dependencies.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 -m venv "$here/.venv-ragas"
# A current pip: the one venv ships resolves ragas' unpinned LangChain dependencies slowly.
"$here/.venv-ragas/bin/pip" install -q --disable-pip-version-check -U pip
"$here/.venv-ragas/bin/pip" install -q --disable-pip-version-check -r "$here/ragas_requirements.txt"
