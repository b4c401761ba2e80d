"""Python side of benches/onnx.rs: the same ONNX model driven by onnxruntime and tokenizers.

    python onnx_peer.py --model-dir DIR --texts TEXTS.json [--batch 32] [--threads 2]
                        [--max-len 256] < commands

TEXTS.json is a JSON list of strings. A pass embeds all of them in batches of `--batch` in
input order (each padded to its longest text, truncated at `--max-len` tokens), with mean
pooling over the attention mask and L2 normalisation, as sentence-transformers does.

After loading and one warm-up pass it prints a JSON line with the first two vectors (for the
Rust side to compare with its own); then each `pass` line read from stdin runs one timed pass
and prints `{"pass_s": seconds}`. At the end of stdin it prints the median and all pass times.
The caller alternates its own passes with these, so both sides see the same machine load.
By hand: `yes pass | head -n 5 | python onnx_peer.py --model-dir DIR --texts TEXTS.json`.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime
from tokenizers import Tokenizer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-len", type=int, default=256)
    args = ap.parse_args()

    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(
        f"{args.model_dir}/model.onnx", options, providers=["CPUExecutionProvider"]
    )
    input_names = {i.name for i in session.get_inputs()}
    tokenizer = Tokenizer.from_file(f"{args.model_dir}/tokenizer.json")
    tokenizer.enable_truncation(args.max_len)
    tokenizer.enable_padding()  # to the longest text of each batch

    def embed(batch):
        encodings = tokenizer.encode_batch(batch)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        feeds = {k: v for k, v in feeds.items() if k in input_names}
        hidden = session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled / norms

    def full_pass():
        return np.concatenate(
            [embed(texts[i : i + args.batch]) for i in range(0, len(texts), args.batch)]
        )

    vectors = full_pass()  # warm-up, as the Rust side does
    print(
        json.dumps(
            {
                "texts": len(texts),
                "onnxruntime": onnxruntime.__version__,
                "first_vectors": [[float(x) for x in v] for v in vectors[:2]],
            }
        ),
        flush=True,
    )
    times = []
    for line in sys.stdin:
        if line.strip() != "pass":
            continue
        start = time.perf_counter()
        full_pass()
        times.append(time.perf_counter() - start)
        print(json.dumps({"pass_s": times[-1]}), flush=True)

    print(json.dumps({"median_s": statistics.median(times) if times else None, "times_s": times}))


if __name__ == "__main__":
    main()
