"""The C backend's Gram kernel (symgrad/codegen/backends/c_gram_src.py) alone against
OpenBLAS through NumPy: µs per H = Xᵀ diag(w) X, X of shape (N, d), float64, one thread.

    python bench/gram.py                      # the default sizes, about a minute
    python bench/gram.py --sizes 1000x50,2000x200 --rounds 41

Contenders, each on arrays already made:

    kernel w      symgrad's kernel, weights w of either sign (what the C backend calls for
                  (Xᵀ * w) @ X and for the logistic Hessian's σ(1 − σ)/N)
    kernel        the same with no weights (Xᵀ X)
    syrk          NumPy's Yᵀ @ Y on a Y made beforehand (OpenBLAS dsyrk): the product alone
    sqrt + syrk   Y = X * sqrt(w)[:, None], then Yᵀ @ Y: what the NumPy backend computes for
                  nonnegative w
    gemm          Xᵀ @ (X * w[:, None]) (OpenBLAS dgemm): NumPy's product for w of either sign

Every result is checked against torch in float64 first. Timing is interleaved: each round
times every contender for about --block seconds, the table gives the median per call over
the rounds and the fastest round; the process runs pinned to one core (--core, default 1),
with the C heap set up as compile("c") sets it (codegen/heap.py: large buffers are kept
between calls instead of faulted in again, for every contender).
"""
import os

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_k] = "1"

import argparse                   # noqa: E402
import statistics                 # noqa: E402
import sys                        # noqa: E402
import time                       # noqa: E402

import numpy as np                # noqa: E402

SIZES = "100x50,1000x50,1000x48,1000x8,1000x130,2000x200,1000x500"


def contenders(X, w):
    from symgrad.codegen.backends import c_gram
    gram = c_gram.kernel()
    Y = X * np.sqrt(np.abs(w))[:, None]
    return {
        "kernel w": (lambda: gram(X, w, False, False), w),
        "kernel": (lambda: gram(X, None, False, False), np.ones(len(w))),
        "syrk": (lambda: Y.T @ Y, np.abs(w)),
        "sqrt + syrk": (lambda: (lambda y: y.T @ y)(X * np.sqrt(np.abs(w))[:, None]), np.abs(w)),
        "gemm": (lambda: X.T @ (X * w[:, None]), w),
    }


def check(X, cells):
    import torch
    t = torch.tensor(X)
    for name, (call, weights) in cells.items():
        ref = (t.T @ (t * torch.tensor(weights)[:, None])).numpy()
        got = call()
        scale = np.abs(X).T @ (np.abs(weights)[:, None] * np.abs(X))
        if not np.all(np.abs(got - ref) <= 1e-12 * scale + 1e-300):
            sys.exit(f"{name}: differs from torch by {np.abs(got - ref).max():.3g}")


def timed(cells, rounds, block):
    per = {name: [] for name in cells}
    numbers = {}
    for name, (call, _) in cells.items():
        n, t = 1, 0.0
        while t < block / 4:
            n *= 2
            start = time.perf_counter()
            for _ in range(n):
                call()
            t = time.perf_counter() - start
        numbers[name] = max(1, int(n * block / t))
    names = list(cells)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call, n = cells[name][0], numbers[name]
            start = time.perf_counter()
            for _ in range(n):
                call()
            per[name].append((time.perf_counter() - start) / n * 1e6)
    return {name: (statistics.median(v), min(v)) for name, v in per.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--block", type=float, default=0.01)
    ap.add_argument("--core", type=int, default=1)
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {args.core if args.core in allowed else allowed[-1]})
    from symgrad.codegen import heap
    from symgrad.codegen.backends import c_gram
    heap.configure()             # as compile("c") does: no page faults for fresh buffers
    lib, _ = c_gram._library()
    isa = {2: "avx512", 1: "avx2", 0: "portable C"}[lib.sg_gram_isa()]
    print(f"Gram kernel ({isa}) vs OpenBLAS via NumPy {np.__version__}; µs per call, median "
          f"of {args.rounds} interleaved rounds (fastest round), one thread; load "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    rng = np.random.default_rng(0)
    head = None
    for size in args.sizes.split(","):
        n, d = (int(v) for v in size.split("x"))
        X, w = rng.standard_normal((n, d)), rng.standard_normal(n)
        cells = contenders(X, w)
        check(X, cells)
        res = timed(cells, args.rounds, args.block)
        if head is None:
            head = f"{'N x d':>10} " + " ".join(f"{k:>18}" for k in res) + "   syrk / kernel w"
            print(head + "\n" + "-" * len(head))
        cols = " ".join(f"{f'{m:,.1f} ({b:,.1f})':>18}" for m, b in res.values())
        print(f"{size:>10} {cols}   {res['syrk'][0] / res['kernel w'][0]:.2f}")


if __name__ == "__main__":
    main()
