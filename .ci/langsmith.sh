# Sourced by .ci/run (and by hand: `. .ci/langsmith.sh`): the official LangSmith Python SDK for
# the interoperability tests of tests/cli/langsmith.rs, which run it against the fake LangSmith
# server they start on 127.0.0.1 (handed over in LANGSMITH_ENDPOINT).
#
# - a venv at ~/.cache/rag-eval-ci/venv-langsmith with the `langsmith` package;
# - exports RAG_EVAL_LANGSMITH_PYTHON, the venv's python; the SDK tests skip with a
#   `skipped:` notice when it is unset.
#
# Idempotent: a stamp in the venv records the pinned version; when it matches, nothing is
# installed. A failed setup (no network, no venv module) is reported and leaves the variable
# unset, so the SDK tests skip instead of failing the whole run.

langsmith_setup() {
    local venv py stamp want
    venv="${HOME}/.cache/rag-eval-ci/venv-langsmith"
    py="$venv/bin/python"
    stamp="$venv/.rag-eval-langsmith"
    # The version the fake server's endpoints and payloads were checked against.
    want="langsmith==0.15.0"

    if [[ ! -x "$py" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
        echo "langsmith: creating $venv"
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")" || return 1
        python3 -m venv "$venv" || return 1
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$want" || return 1
        echo "$want" >"$stamp"
    fi
    "$py" -c 'import langsmith' || return 1
    export RAG_EVAL_LANGSMITH_PYTHON="$py"
    echo "langsmith: RAG_EVAL_LANGSMITH_PYTHON=$RAG_EVAL_LANGSMITH_PYTHON"
}

if ! langsmith_setup; then
    unset RAG_EVAL_LANGSMITH_PYTHON
    echo "langsmith: setup failed; the LangSmith SDK interoperability tests will be skipped" >&2
fi
