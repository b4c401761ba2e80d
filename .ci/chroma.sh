# Starts a throwaway Chroma server for the `chroma` feature's tests; sourced by .ci/run.
#
# - Installs the pinned `chromadb` wheel into .ci/.venv-chroma (once: a stamp file records the
#   version, so later runs start the server without touching pip).
# - Runs `chroma run` on 127.0.0.1 at a free port with its data in a temporary folder, waits
#   (bounded) until /api/v2/heartbeat answers, and exports RAG_EVAL_CHROMA_URL.
# - Stops the server and removes its data when the sourcing shell exits; an EXIT trap set
#   before this file is sourced still runs after ours (both through .ci/server.sh).
#
# Knobs: PYTHON (interpreter for the venv, default python3), RAG_EVAL_CHROMA_WAIT (seconds to
# wait for the server, default 90), RAG_EVAL_SKIP_CHROMA=1 (skip: the tests then skip too).
# Sourced rather than run because the export and the trap must land in the caller's shell.

CHROMA_VERSION=1.5.9

# shellcheck source=server.sh
. "$(dirname "${BASH_SOURCE[0]}")/server.sh"

chroma_log() { echo "chroma: $*" >&2; }

chroma_fail() {
    chroma_log "error: $*"
    return 1
}

# The venv with the pinned chromadb, reused when its stamp matches.
chroma_install() {
    local venv=$1 python=${PYTHON:-python3}
    local stamp="$venv/.rag-eval-chromadb-$CHROMA_VERSION"
    if [[ -f "$stamp" && -x "$venv/bin/chroma" ]]; then
        return 0
    fi
    command -v "$python" >/dev/null ||
        chroma_fail "no \`$python\` to create $venv with (set PYTHON to a Python 3.9+ interpreter)" || return 1
    chroma_log "installing chromadb $CHROMA_VERSION into $venv"
    if [[ ! -x "$venv/bin/python" ]]; then
        "$python" -m venv "$venv" ||
            chroma_fail "\`$python -m venv $venv\` failed (on Debian/Ubuntu install python3-venv)" || return 1
        # Keep the venv out of version control without touching the repository's .gitignore.
        echo '*' >"$venv/.gitignore"
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "chromadb==$CHROMA_VERSION" ||
        chroma_fail "pip could not install chromadb==$CHROMA_VERSION into $venv" || return 1
    rm -f "$venv"/.rag-eval-chromadb-*
    touch "$stamp"
}

# `chroma run` at port $1. No telemetry: the tests must not depend on the network.
# `exec`: the server takes the background job's process, so server_stop's kill reaches it.
chroma_launch() {
    exec env ANONYMIZED_TELEMETRY=False "$CHROMA_VENV/bin/chroma" run --host 127.0.0.1 --port "$1" \
        --path "$CHROMA_DIR/data"
}

chroma_start() {
    CHROMA_VENV=$1
    server_dir chroma || return 1
    CHROMA_DIR=$SERVER_DIR
    if ! server_start chroma "server $CHROMA_VERSION" "$CHROMA_DIR/server.log" \
        "${RAG_EVAL_CHROMA_WAIT:-90}" /api/v2/heartbeat chroma_launch; then
        server_stop chroma
        chroma_fail "no Chroma server (a slow start? raise RAG_EVAL_CHROMA_WAIT)"
        return 1
    fi
    export RAG_EVAL_CHROMA_URL=$SERVER_URL
}

if [[ "${RAG_EVAL_SKIP_CHROMA:-}" == 1 ]]; then
    chroma_log "RAG_EVAL_SKIP_CHROMA=1: no server, the Chroma tests will skip"
else
    chroma_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.venv-chroma"
    chroma_install "$chroma_venv"
    server_on_exit
    chroma_start "$chroma_venv"
fi
