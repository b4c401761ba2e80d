"""Exact top-k cosine search by NumPy brute force: the peer of benches/vector_search.rs.

Reads the stored vectors and the queries as raw little-endian float32 files (row-major, `dim`
columns), normalises the stored vectors once (as the store does when vectors are added), then,
timed: normalises the queries and, a block of queries at a time, computes the scores `Q @ X.T`
and takes each row's top k with `argpartition`, sorted best first. Prints JSON on stdout:
the median seconds per full pass, every pass's time, the settings, and the ranked rows and
scores of a sample of queries for the caller to compare with its own.

The BLAS thread count is set before NumPy is imported (`--threads`), so that both sides of the
comparison use the same number of cores. OpenBLAS does not recognise every AVX-512 processor
and may fall back to its AVX2 ("Haswell") kernels, and an environment may pin them through
OPENBLAS_CORETYPE; with `--coretype auto` (the default) the script asks for the AVX-512
("SkylakeX") kernels whenever the CPU reports avx512f, so that the peer uses the same
instruction set as our side. `--coretype native` leaves the choice to OpenBLAS and the
environment. The kernel family used is reported.

    python numpy_search.py VECTORS QUERIES --dim 384 --k 10 --threads 2 --reps 3

With `--serve` it runs one pass per line of standard input instead, printing each pass's time
as a JSON line, and the summary when standard input closes.
"""

import argparse
import json
import os
import sys
import time


def has_avx512f() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(
                line.startswith("flags") and "avx512f" in line.split() for line in f
            )
    except OSError:
        return False


def blas_core(np) -> str:
    """The kernel family OpenBLAS chose, when NumPy bundles a recognisable OpenBLAS."""
    import ctypes
    import glob

    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libs, "*openblas*.so*")):
        lib = ctypes.CDLL(path)
        for name in (
            "scipy_openblas_get_corename64_",
            "scipy_openblas_get_corename",
            "openblas_get_corename",
        ):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vectors", help="stored vectors, raw float32")
    parser.add_argument("queries", help="queries, raw float32")
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--block", type=int, default=256, help="queries per matrix product")
    parser.add_argument(
        "--sample", type=int, default=100, help="report the results of every N-th query"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="after loading, run one timed pass per line read from stdin (ignoring --reps)",
    )
    parser.add_argument(
        "--coretype",
        default="auto",
        help="OpenBLAS kernel family: auto (AVX-512 when available), native (OpenBLAS's own "
        "choice), or a name such as Haswell or SkylakeX",
    )
    args = parser.parse_args()

    threads = str(args.threads)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = threads
    if args.coretype == "auto":
        if has_avx512f():
            os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif args.coretype != "native":
        os.environ["OPENBLAS_CORETYPE"] = args.coretype
    import numpy as np  # noqa: E402  (after the settings above, which OpenBLAS reads at load)

    x = np.fromfile(args.vectors, dtype="<f4").reshape(-1, args.dim)
    q_raw = np.fromfile(args.queries, dtype="<f4").reshape(-1, args.dim)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    n, k = x.shape[0], min(args.k, x.shape[0])

    def search():
        norms = np.linalg.norm(q_raw, axis=1, keepdims=True)
        q = np.divide(q_raw, norms, out=np.zeros_like(q_raw), where=norms > 0)
        ids = np.empty((q.shape[0], k), dtype=np.int64)
        scores = np.empty((q.shape[0], k), dtype=np.float32)
        for start in range(0, q.shape[0], args.block):
            s = q[start : start + args.block] @ x.T
            top = np.argpartition(s, n - k, axis=1)[:, n - k :]
            top_scores = np.take_along_axis(s, top, axis=1)
            order = np.argsort(-top_scores, axis=1, kind="stable")
            ids[start : start + args.block] = np.take_along_axis(top, order, axis=1)
            scores[start : start + args.block] = np.take_along_axis(top_scores, order, axis=1)
        return ids, scores

    def timed_pass():
        started = time.perf_counter()
        result = search()
        return time.perf_counter() - started, result

    times = []
    if args.serve:
        # One pass per line read, its time printed at once: the caller alternates its own
        # passes with these, so both sides see the same moments of a noisy machine.
        print(json.dumps({"ready": True}), flush=True)
        for _ in sys.stdin:
            elapsed, (ids, scores) = timed_pass()
            times.append(elapsed)
            print(json.dumps({"pass_s": elapsed}), flush=True)
        if not times:
            return
    else:
        for _ in range(args.reps):
            elapsed, (ids, scores) = timed_pass()
            times.append(elapsed)

    sample = range(0, ids.shape[0], max(args.sample, 1))
    json.dump(
        {
            "median_s": sorted(times)[len(times) // 2],
            "times_s": times,
            "reps": len(times),
            "threads": args.threads,
            "block": args.block,
            "numpy": np.__version__,
            "blas_core": blas_core(np),
            "sample": {
                str(i): {"rows": ids[i].tolist(), "scores": scores[i].tolist()} for i in sample
            },
        },
        sys.stdout,
    )
    print()


if __name__ == "__main__":
    main()
