"""Python side of benches/onnx.rs: the same ONNX model driven by onnxruntime and tokenizers.

    python onnx_peer.py --model-dir DIR --texts TEXTS.json [--batch 32] [--threads 2]
                        [--max-len 256] [--spinning on|off] < commands

TEXTS.json is a JSON list of strings. A pass embeds all of them in batches of `--batch` in
input order (each padded to its longest text, truncated at `--max-len` tokens), with mean
pooling over the attention mask and L2 normalisation, as sentence-transformers does.

TEXTS.json may instead be `{"calls": [[text, ...], ...]}`: the texts of each call to the Rust
embedder, in order. A pass then forms the batches as OnnxEmbedder does: per call, texts
ordered by token length (longest first, ties in input order), cut into batches of `--batch`,
each padded to its longest; and it reports the time of each stage (tokenisation, input
tensors, inference, pooling) besides the whole pass, so that onnxruntime's own inference time
for exactly the batches of the Rust side is known, and the pass's CPU time (all threads).

After loading and one warm-up pass it prints a JSON line with the first two vectors (for the
Rust side to compare with its own); then each `pass` line read from stdin runs one timed pass
and prints `{"pass_s": seconds, "cpu_s": seconds}` (with the stage times in calls mode). At the end of stdin it prints the median and all pass times.
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
    ap.add_argument("--spinning", choices=["on", "off"])
    args = ap.parse_args()

    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    calls = texts["calls"] if isinstance(texts, dict) else None

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    if args.spinning:
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if args.spinning == "on" else "0"
        )
    session = onnxruntime.InferenceSession(
        f"{args.model_dir}/model.onnx", options, providers=["CPUExecutionProvider"]
    )
    input_names = {i.name for i in session.get_inputs()}
    tokenizer = Tokenizer.from_file(f"{args.model_dir}/tokenizer.json")
    tokenizer.enable_truncation(args.max_len)
    if calls is None:
        tokenizer.enable_padding()  # to the longest text of each batch
    else:
        # Each batch is padded by hand, after ordering by length. The model's tokenizer.json
        # pads every text to 128 tokens on its own (`Fixed`), which would feed the model
        # padding the Rust side never computes.
        tokenizer.no_padding()

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

    pad_id = tokenizer.token_to_id("[PAD]") or 0
    clock = time.perf_counter

    def embed_call(call, stages):
        """One call of the Rust side: sort by length, batch, pad, run, pool, restore order."""
        t = clock()
        encodings = tokenizer.encode_batch(call)
        order = sorted(range(len(call)), key=lambda i: -len(encodings[i].ids))
        stages["tokenize_s"] += clock() - t
        out = [None] * len(call)
        for b in range(0, len(order), args.batch):
            rows = [encodings[i] for i in order[b : b + args.batch]]
            t = clock()
            width = max(1, max(len(e.ids) for e in rows))
            ids = np.full((len(rows), width), pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            for r, e in enumerate(rows):
                n = len(e.ids)
                ids[r, :n] = e.ids
                mask[r, :n] = e.attention_mask
                types[r, :n] = e.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            feeds = {k: v for k, v in feeds.items() if k in input_names}
            stages["tensors_s"] += clock() - t
            t = clock()
            hidden = session.run(None, feeds)[0]
            stages["inference_s"] += clock() - t
            t = clock()
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for i, v in zip(order[b : b + args.batch], pooled):
                out[i] = v
            stages["pool_s"] += clock() - t
        return out

    def calls_pass():
        stages = dict.fromkeys(["tokenize_s", "tensors_s", "inference_s", "pool_s"], 0.0)
        vectors = [v for call in calls for v in embed_call(call, stages)]
        return vectors, stages

    if calls is not None:
        texts = [t for call in calls for t in call]
        vectors, _ = calls_pass()
    else:
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
        start, cpu = time.perf_counter(), time.process_time()
        if calls is None:
            full_pass()
            stages = {}
        else:
            _, stages = calls_pass()
        times.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu
        print(json.dumps({"pass_s": times[-1], "cpu_s": cpu, **stages}), flush=True)

    print(json.dumps({"median_s": statistics.median(times) if times else None, "times_s": times}))


if __name__ == "__main__":
    main()
