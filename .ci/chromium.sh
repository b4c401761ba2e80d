# Headless Chromium for the HTML report's browser test, and xmllint for the JUnit schema test;
# sourced by .ci/run.
#
# - Installs Debian's `chromium` and `libxml2-utils` packages when missing (apt-get, as root or
#   through sudo).
# - Exports RAG_EVAL_CHROMIUM, the browser's path, which tests/cli/reports.rs needs; without it
#   the browser test skips with a notice.
#
# Knobs: RAG_EVAL_SKIP_CHROMIUM=1 (skip: the browser test then skips too).
# Sourced rather than run because the export must land in the caller's shell.

chromium_log() { echo "chromium: $*" >&2; }

chromium_apt() {
    local runner=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null || { chromium_log "not root and no sudo: cannot install $*"; return 1; }
        runner=(sudo)
    fi
    "${runner[@]}" apt-get install -y --no-install-recommends "$@" >/dev/null ||
        { "${runner[@]}" apt-get update >/dev/null && "${runner[@]}" apt-get install -y --no-install-recommends "$@" >/dev/null; }
}

chromium_setup() {
    if [[ "${RAG_EVAL_SKIP_CHROMIUM:-}" == 1 ]]; then
        chromium_log "RAG_EVAL_SKIP_CHROMIUM=1: the browser test skips"
        return 0
    fi
    local missing=()
    command -v chromium >/dev/null || missing+=(chromium)
    command -v xmllint >/dev/null || missing+=(libxml2-utils)
    if ((${#missing[@]})); then
        chromium_log "installing ${missing[*]}"
        chromium_apt "${missing[@]}" || chromium_log "could not install ${missing[*]}; the tests that need them skip"
    fi
    if command -v chromium >/dev/null; then
        RAG_EVAL_CHROMIUM=$(command -v chromium)
        export RAG_EVAL_CHROMIUM
        chromium_log "using $RAG_EVAL_CHROMIUM"
    fi
}

chromium_setup
