# Start a local server, wait for its health check, stop it when the shell exits; sourced by the
# scripts that start the test servers (.ci/chroma.sh, .ci/llama.sh).
#
#   server_on_exit                       stop every server and remove every folder at exit
#                                        (an EXIT trap set before still runs after ours)
#   server_dir GROUP                     a temporary folder (SERVER_DIR), removed with the
#                                        group's servers
#   server_start GROUP NAME LOG WAIT HEALTH LAUNCH [ARG...]
#       runs `LAUNCH PORT ARG...` in the background at a free port of 127.0.0.1 (a LAUNCH
#       function must `exec` its server, so that the job's pid is the server's) until GET
#       http://127.0.0.1:PORT$HEALTH answers 200 (bounded by WAIT seconds), with its output in
#       LOG; sets SERVER_URL and SERVER_PID. A server that exits before answering is retried on
#       a new port (the free port may have been taken meanwhile), three times in all.
#   server_stop [GROUP]                  stops the group's servers (all without GROUP) and
#                                        removes its folders
#
# Messages go to stderr as `GROUP: …`. Needs PYTHON (default python3) for the port and the probe.

# Sourced by each server script into the same shell: a second source keeps the servers the
# first one recorded (resetting the lists here left Chroma running after .ci/run).
if [[ -n "${SERVER_SH_LOADED:-}" ]]; then
    return 0
fi
SERVER_SH_LOADED=1
SERVER_PIDS=()
SERVER_PID_GROUPS=()
SERVER_DIRS=()
SERVER_DIR_GROUPS=()

server_log() {
    local group=$1
    shift
    echo "$group: $*" >&2
}

# A port nothing listens on right now.
server_free_port() {
    "${PYTHON:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Exit code 0 once GET $1 answers 200 (a server still loading may answer 503).
server_probe() {
    "${PYTHON:-python3}" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

server_on_exit() {
    [[ -n "${SERVER_TRAP_SET:-}" ]] && return 0
    SERVER_TRAP_SET=1
    local prev
    eval "prev=($(trap -p EXIT))"
    trap -- "server_stop; ${prev[2]:-}" EXIT
}

# Sets SERVER_DIR rather than printing it: a command substitution's subshell would lose the
# folder from SERVER_DIRS.
server_dir() {
    SERVER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rag-eval-$1.XXXXXX") || return 1
    SERVER_DIRS+=("$SERVER_DIR")
    SERVER_DIR_GROUPS+=("$1")
}

server_stop() {
    local group=${1:-} i j pids=() keep_pids=() keep_groups=() keep_dirs=() keep_dir_groups=()
    for i in "${!SERVER_PIDS[@]}"; do
        if [[ -z "$group" || "${SERVER_PID_GROUPS[$i]}" == "$group" ]]; then
            pids+=("${SERVER_PIDS[$i]}")
        else
            keep_pids+=("${SERVER_PIDS[$i]}")
            keep_groups+=("${SERVER_PID_GROUPS[$i]}")
        fi
    done
    for i in "${pids[@]}"; do
        kill "$i" 2>/dev/null || true
    done
    # Five seconds to shut down cleanly, then no more.
    for i in "${pids[@]}"; do
        for j in $(seq 50); do
            kill -0 "$i" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$i" 2>/dev/null || true
    done
    SERVER_PIDS=("${keep_pids[@]}")
    SERVER_PID_GROUPS=("${keep_groups[@]}")
    for i in "${!SERVER_DIRS[@]}"; do
        if [[ -z "$group" || "${SERVER_DIR_GROUPS[$i]}" == "$group" ]]; then
            rm -rf "${SERVER_DIRS[$i]}"
        else
            keep_dirs+=("${SERVER_DIRS[$i]}")
            keep_dir_groups+=("${SERVER_DIR_GROUPS[$i]}")
        fi
    done
    SERVER_DIRS=("${keep_dirs[@]}")
    SERVER_DIR_GROUPS=("${keep_dir_groups[@]}")
}

# Not in a subshell, so that SERVER_PIDS keeps the pid for server_stop.
server_start() {
    local group=$1 name=$2 log=$3 wait=$4 health=$5
    shift 5
    local attempt port url started pid
    SERVER_URL=
    SERVER_PID=
    for attempt in 1 2 3; do
        port=$(server_free_port) || { server_log "$group" "error: no free port on 127.0.0.1"; return 1; }
        url="http://127.0.0.1:$port"
        "$1" "$port" "${@:2}" >"$log" 2>&1 &
        pid=$!
        SERVER_PIDS+=("$pid")
        SERVER_PID_GROUPS+=("$group")
        started=$SECONDS
        while ((SECONDS - started < wait)); do
            if server_probe "$url$health"; then
                server_log "$group" "$name (pid $pid) at $url after $((SECONDS - started)) s"
                SERVER_URL=$url
                SERVER_PID=$pid
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            server_log "$group" "$name log (last 30 lines):"
            tail -n 30 "$log" >&2 || true
            server_log "$group" "error: no answer from $url$health within $wait s"
            return 1
        fi
        server_log "$group" "$name exited early (attempt $attempt, port $port); log (last 30 lines):"
        tail -n 30 "$log" >&2 || true
    done
    server_log "$group" "error: $name exited three times before answering; see the log above"
    return 1
}
