# Starts a throwaway PostgreSQL cluster for the `postgres` feature's tests; sourced by .ci/run.
#
# - Installs Debian's `postgresql` package when no initdb is found under
#   /usr/lib/postgresql/*/bin (as root, or through sudo).
# - Creates a cluster in a temporary folder owned by an unprivileged user (`nobody` when run
#   as root: the server refuses to run as root), listening on 127.0.0.1 at a free port with
#   trust authentication, starts it, and exports
#   RAG_EVAL_TEST_POSTGRES=postgres://postgres@127.0.0.1:PORT/postgres.
# - Stops the server and removes the folder when the sourcing shell exits; an EXIT trap set
#   before this file is sourced still runs after ours.
#
# Knobs: RAG_EVAL_SKIP_POSTGRES=1 (no server: the PostgreSQL tests then skip with a notice).
# Sourced rather than run because the export and the trap must land in the caller's shell.

pg_log() { echo "postgres: $*" >&2; }

pg_fail() {
    pg_log "error: $*"
    return 1
}

# The newest installed server's bin folder.
pg_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [[ -n "$d" && -x "$d/initdb" ]] && echo "$d"
}

pg_install() {
    pg_bindir >/dev/null && return 0
    local sudo=
    [[ $(id -u) -eq 0 ]] || sudo=sudo
    pg_log "installing Debian's postgresql package"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q postgresql >&2 ||
        { $sudo apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q postgresql >&2; } ||
        pg_fail "apt-get install postgresql failed" || return 1
    pg_bindir >/dev/null || pg_fail "no initdb under /usr/lib/postgresql/*/bin after installing"
}

# Runs a command as the cluster's owner.
pg_as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u nobody -- "$@"
    else
        "$@"
    fi
}

pg_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

pg_stop() {
    if [[ -n "${PG_DIR:-}" ]]; then
        if [[ -n "${PG_BIN:-}" && -f "$PG_DIR/data/postmaster.pid" ]]; then
            pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" stop -m immediate -w >/dev/null 2>&1 || true
        fi
        rm -rf "$PG_DIR"
        PG_DIR=
    fi
}

pg_start() {
    local attempt port
    PG_BIN=$(pg_bindir) || pg_fail "no PostgreSQL server installed" || return 1
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rag-eval-postgres.XXXXXX")
    [[ $(id -u) -eq 0 ]] && chown nobody "$PG_DIR"
    pg_as_owner "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 \
        --no-sync >"$PG_DIR/initdb.log" 2>&1 ||
        { tail -n 20 "$PG_DIR/initdb.log" >&2; pg_stop; pg_fail "initdb failed"; return 1; }
    for attempt in 1 2 3; do
        port=$(pg_free_port) || { pg_stop; pg_fail "no free port on 127.0.0.1"; return 1; }
        # fsync off: a throwaway cluster need not survive a crash, and it is much faster.
        if pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
            -o "-h 127.0.0.1 -p $port -k $PG_DIR -c fsync=off -c max_connections=50" \
            start >/dev/null 2>&1; then
            export RAG_EVAL_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
            pg_log "server $("$PG_BIN/postgres" --version | awk '{print $3}') at 127.0.0.1:$port"
            return 0
        fi
        pg_log "server did not start (attempt $attempt, port $port); log (last 20 lines):"
        tail -n 20 "$PG_DIR/server.log" >&2 || true
    done
    pg_stop
    pg_fail "pg_ctl start failed three times; see the log above"
}

if [[ "${RAG_EVAL_SKIP_POSTGRES:-}" == 1 ]]; then
    pg_log "RAG_EVAL_SKIP_POSTGRES=1: no server, the PostgreSQL tests will skip"
else
    pg_install
    # Run whatever EXIT trap the caller had, after stopping the server.
    eval "pg_prev_trap=($(trap -p EXIT))"
    trap -- "pg_stop; ${pg_prev_trap[2]:-}" EXIT
    pg_start
fi
