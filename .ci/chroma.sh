# Starts a throwaway Chroma server for the `chroma` feature's tests; sourced by .ci/run.
#
# - Installs the pinned `chromadb` wheel into .ci/.venv-chroma (once: a stamp file records the
#   version, so later runs start the server without touching pip).
# - Runs `chroma run` on 127.0.0.1 at a free port with its data in a temporary folder, waits
#   (bounded) until /api/v2/heartbeat answers, and exports RAG_EVAL_CHROMA_URL.
# - Stops the server and removes its data when the sourcing shell exits; an EXIT trap set
#   before this file is sourced still runs after ours.
#
# Knobs: PYTHON (interpreter for the venv, default python3), RAG_EVAL_CHROMA_WAIT (seconds to
# wait for the server, default 90), RAG_EVAL_SKIP_CHROMA=1 (skip: the tests then skip too).
# Sourced rather than run because the export and the trap must land in the caller's shell.

CHROMA_VERSION=1.5.9

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

# A port nothing listens on right now (another process may still take it before the server
# does: chroma_start retries with a new port when the server exits early).
chroma_free_port() {
    "$1" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Exit code 0 once GET $1/api/v2/heartbeat answers 200.
chroma_heartbeat() {
    "$1" - "$2" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/api/v2/heartbeat", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

chroma_stop() {
    if [[ -n "${CHROMA_PID:-}" ]] && kill -0 "$CHROMA_PID" 2>/dev/null; then
        kill "$CHROMA_PID" 2>/dev/null || true
        local i
        for i in $(seq 50); do
            kill -0 "$CHROMA_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$CHROMA_PID" 2>/dev/null || true
    fi
    CHROMA_PID=
    if [[ -n "${CHROMA_DIR:-}" ]]; then
        rm -rf "$CHROMA_DIR"
        CHROMA_DIR=
    fi
}

chroma_start() {
    local venv=$1 wait=${RAG_EVAL_CHROMA_WAIT:-90}
    local python="$venv/bin/python" attempt port url started
    CHROMA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rag-eval-chroma.XXXXXX")
    for attempt in 1 2 3; do
        port=$(chroma_free_port "$python") || chroma_fail "no free port on 127.0.0.1" || return 1
        url="http://127.0.0.1:$port"
        # No telemetry: the tests must not depend on the network.
        ANONYMIZED_TELEMETRY=False "$venv/bin/chroma" run --host 127.0.0.1 --port "$port" \
            --path "$CHROMA_DIR/data" >"$CHROMA_DIR/server.log" 2>&1 &
        CHROMA_PID=$!
        started=$SECONDS
        while ((SECONDS - started < wait)); do
            if chroma_heartbeat "$python" "$url"; then
                export RAG_EVAL_CHROMA_URL=$url
                chroma_log "server $CHROMA_VERSION (pid $CHROMA_PID) at $url after $((SECONDS - started)) s"
                return 0
            fi
            kill -0 "$CHROMA_PID" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$CHROMA_PID" 2>/dev/null; then
            chroma_log "server log (last 30 lines):"
            tail -n 30 "$CHROMA_DIR/server.log" >&2 || true
            chroma_stop
            chroma_fail "no answer from $url/api/v2/heartbeat within $wait s (raise RAG_EVAL_CHROMA_WAIT?)"
            return 1
        fi
        chroma_log "server exited early (attempt $attempt, port $port); log (last 30 lines):"
        tail -n 30 "$CHROMA_DIR/server.log" >&2 || true
        CHROMA_PID=
    done
    chroma_stop
    chroma_fail "\`chroma run\` exited three times before answering; see the log above"
}

if [[ "${RAG_EVAL_SKIP_CHROMA:-}" == 1 ]]; then
    chroma_log "RAG_EVAL_SKIP_CHROMA=1: no server, the Chroma tests will skip"
else
    chroma_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.venv-chroma"
    chroma_install "$chroma_venv"
    # Run whatever EXIT trap the caller had, after stopping the server.
    eval "chroma_prev_trap=($(trap -p EXIT))"
    trap -- "chroma_stop; ${chroma_prev_trap[2]:-}" EXIT
    chroma_start "$chroma_venv"
fi
